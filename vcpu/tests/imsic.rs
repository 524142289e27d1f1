//! The IMSIC (AIA, "Incoming MSI Controller (IMSIC)"): the machine-level, supervisor-level
//! and guest interrupt files through `*iselect`/`*ireg` (select 0x70-0xFF), the `*topei`
//! CSRs and their claims, `eidelivery`, `eithreshold`, the interrupt signals in `mip`,
//! `hgeip`/`hgeie`, SGEI and VSEIP, `hstatus.VGEIN`, and the illegal-/virtual-instruction
//! rules for `vsireg`/`vstopei` (AIA "Hypervisor and VS CSRs", "Access control by the
//! state-enable CSRs").

mod common;

use common::*;
use vcpu::csr::imsic::{ImsicConfig, InterruptFileId, MsiError};
use vcpu::PrivilegeMode::Supervisor;
use vcpu::{HartConfig, VcpuExit};

const STOPEI: u32 = 0x15C;
const VSTOPEI: u32 = 0x25C;
const MTOPEI: u32 = 0x35C;
const HGEIE: u32 = 0x607;
const HGEIP: u32 = 0xE12;
const ST_IMSIC: u64 = 1 << 58;
const MEIP: u64 = 1 << 11;
const SEIP: u64 = 1 << 9;
const VSEIP: u64 = 1 << 10;
const SGEIP: u64 = 1 << 12;
const INTERRUPT: u64 = 1 << 63;
const ALL_ST: u64 = SE0 | ST_CSRIND | ST_AIA | ST_IMSIC;

fn vgein(g: u64) -> u64 {
    g << 12
}

/// `*topei` value of identity `i`.
fn top(i: u64) -> u64 {
    (i << 16) | i
}

fn imsic_vm() -> Vm {
    Vm::with_config(HartConfig {
        imsic: Some(ImsicConfig::default()),
        ..HartConfig::default()
    })
}

/// One step of M-mode code: write a CSR, read one, or swap (`csrrw rd, csr, x0`).
#[derive(Clone, Copy)]
enum Op {
    Wr(u32, u64),
    Rd(u32),
    Swap(u32),
}
use Op::*;

/// Runs `ops` in M-mode (MIE = 0: nothing is taken) and returns the values read, in order.
fn m_ops(vm: &mut Vm, ops: &[Op]) -> Vec<u64> {
    assert!(ops.len() <= 22);
    let mut code = Vec::new();
    let mut reads = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let r = 5 + i as u32;
        match *op {
            Wr(csr, v) => {
                vm.set_x(r as usize, v);
                code.push(csrw(csr, r));
            }
            Rd(csr) => {
                code.push(csrr(r, csr));
                reads.push(r);
            }
            Swap(csr) => {
                code.push(csrrw(r, csr, 0));
                reads.push(r);
            }
        }
    }
    let end = vm.code(&code);
    restart(vm);
    vm.run_clean(end);
    reads.iter().map(|&r| vm.x(r as usize)).collect()
}

/// Back to M-mode (V = 0) at the boot stub, which sets `mtvec` and jumps to [`CODE`]; the
/// rest of the state (the IMSIC's included) is kept.
fn restart(vm: &mut Vm) {
    let mut s = vm.hart.save_state();
    s.prv = 3;
    s.virt = false;
    s.pc = BOOT;
    vm.hart.restore_state(&s).unwrap();
}

/// M-mode accesses to the machine-level file (through `miselect`/`mireg`).
fn mfile(sel: u64, v: u64) -> [Op; 2] {
    [Wr(MISELECT, sel), Wr(MIREG, v)]
}

fn msi(vm: &mut Vm, file: InterruptFileId, ids: &[u64]) {
    for &i in ids {
        vm.hart.imsic_send_msi(file, i).unwrap();
    }
}

#[test]
fn without_an_imsic_nothing_changes() {
    let mut vm = Vm::new();
    for csr in [MTOPEI, STOPEI, VSTOPEI] {
        restart(&mut vm);
        let t = vm.exec_trap(&[csrr(5, csr)]);
        assert_eq!(t.cause, ILLEGAL, "{csr:#x}");
    }
    let r = m_ops(
        &mut vm,
        &[
            Wr(HGEIE, u64::MAX),
            Rd(HGEIE),
            Wr(HSTATUS, vgein(1)),
            Rd(HSTATUS),
        ],
    );
    assert_eq!(r[0], 0, "GEILEN = 0");
    assert_eq!(r[1] & vgein(0x3f), 0, "VGEIN read-only 0");
    assert_eq!(
        vm.hart.imsic_send_msi(InterruptFileId::Machine, 1),
        Err(MsiError::NoImsic)
    );
}

#[test]
fn machine_file_registers_and_topei_claims() {
    let mut vm = imsic_vm();
    let mut ops = vec![];
    ops.extend(mfile(0x70, u64::MAX)); // eidelivery: 1
    ops.extend(mfile(0xc0, u64::MAX)); // eie0: identities 1-63
    ops.extend(mfile(0xc2, 1)); // eie2: identity 64
    ops.extend([
        Wr(MISELECT, 0x70),
        Rd(MIREG),
        Wr(MISELECT, 0xc0),
        Rd(MIREG),
        Rd(MTOPEI),
        Rd(MIP),
    ]);
    let r = m_ops(&mut vm, &ops);
    assert_eq!(r[0], 1, "eidelivery holds 0 and 1");
    assert_eq!(r[1], !1, "identity 0 does not exist");
    assert_eq!((r[2], r[3] & MEIP), (0, 0));

    msi(&mut vm, InterruptFileId::Machine, &[64, 7, 3, 0, 256, 1000]);
    let r = m_ops(
        &mut vm,
        &[
            Rd(MTOPEI),
            Rd(MIP),
            Wr(MISELECT, 0x80),
            Rd(MIREG),
            Wr(MISELECT, 0x82),
            Rd(MIREG),
            Swap(MTOPEI), // claims 3
            Rd(MTOPEI),
            Swap(MTOPEI), // claims 7
            Swap(MTOPEI), // claims 64
            Rd(MTOPEI),
            Rd(MIP),
        ],
    );
    assert_eq!(r[0], top(3), "the lowest identity has the highest priority");
    assert_ne!(r[1] & MEIP, 0);
    assert_eq!(
        r[2],
        (1 << 3) | (1 << 7),
        "0, 256 and 1000 are not implemented"
    );
    assert_eq!(r[3], 1);
    assert_eq!((r[4], r[5], r[6], r[7]), (top(3), top(7), top(7), top(64)));
    assert_eq!((r[8], r[9] & MEIP), (0, 0));
}

#[test]
fn eithreshold_and_eidelivery() {
    let mut vm = imsic_vm();
    let mut ops = vec![];
    ops.extend(mfile(0x70, 1));
    ops.extend(mfile(0xc0, u64::MAX));
    m_ops(&mut vm, &ops);
    msi(&mut vm, InterruptFileId::Machine, &[5, 9]);
    let r = m_ops(
        &mut vm,
        &[
            Wr(MISELECT, 0x72),
            Wr(MIREG, 5), // identities 5 and above do not signal
            Rd(MIREG),
            Rd(MTOPEI),
            Rd(MIP),
            Wr(MIREG, 6),
            Rd(MTOPEI),
            Rd(MIP),
            Wr(MIREG, 0xfff), // WLRL: 8 bits kept for N = 255
            Rd(MIREG),
            Wr(MIREG, 0),
            Wr(MISELECT, 0x70),
            Wr(MIREG, 0), // delivery off: no MEIP, *topei unchanged
            Rd(MTOPEI),
            Rd(MIP),
            Wr(MIREG, 0x4000_0000), // not supported: reads 0
            Rd(MIREG),
        ],
    );
    assert_eq!((r[0], r[1], r[2] & MEIP), (5, 0, 0));
    assert_eq!((r[3], r[4] & MEIP), (top(5), MEIP));
    assert_eq!(r[5], 0xff);
    assert_eq!((r[6], r[7] & MEIP), (top(5), 0));
    assert_eq!(r[8], 0);
}

#[test]
fn reserved_and_odd_select_values() {
    let mut vm = imsic_vm();
    // 0x71 and 0x73-0x7F: read 0, writes ignored.
    let r = m_ops(
        &mut vm,
        &[
            Wr(MISELECT, 0x71),
            Wr(MIREG, 5),
            Rd(MIREG),
            Wr(MISELECT, 0x7f),
            Rd(MIREG),
            Wr(MISELECT, 0x88), // eip8: identities 256-319, none implemented
            Wr(MIREG, u64::MAX),
            Rd(MIREG),
        ],
    );
    assert_eq!(r, [0, 0, 0]);
    // Odd eip/eie numbers do not exist on RV64; mireg2-6 have nothing at 0x70-0xFF.
    for (sel, csr) in [
        (0x81, MIREG),
        (0xc1, MIREG),
        (0xff, MIREG),
        (0x70, MIREGS[1]),
    ] {
        vm.set_x(5, sel);
        restart(&mut vm);
        let t = vm.exec_trap(&[csrw(MISELECT, 5), csrr(6, csr)]);
        assert_eq!(t.cause, ILLEGAL, "select {sel:#x} csr {csr:#x}");
    }
}

#[test]
fn machine_external_interrupt_is_taken() {
    let mut vm = imsic_vm();
    let mut ops = vec![];
    ops.extend(mfile(0x70, 1));
    ops.extend(mfile(0xc0, 1 << 10));
    ops.push(Wr(MIE, MEIP));
    m_ops(&mut vm, &ops);
    msi(&mut vm, InterruptFileId::Machine, &[10]);
    // A handler that disables MEIE before its WFI (WFI waits only while nothing is pending).
    let handler = CODE + 0x1400;
    vm.put32(handler, &[csrw(MIE, 0), wfi()]);
    vm.set_x(31, handler);
    vm.set_x(5, MS_MIE);
    restart(&mut vm);
    vm.put32(CODE, &[csrs(MSTATUS, 5), nop(), nop()]);
    assert_eq!(vm.hart.run(1_000), VcpuExit::Wfi);
    assert_eq!(vm.hart.pc(), handler + 8);
    let t = vm.mtrap();
    assert_eq!((t.cause, t.epc), (INTERRUPT | 11, CODE + 4));
    assert_eq!(vm.csr(MTOPEI), top(10));
}

#[test]
fn supervisor_file_stopei_and_stateen() {
    let mut vm = imsic_vm();
    vm.set_x(10, 0x70);
    vm.set_x(11, 1);
    vm.set_x(12, 0xc0);
    vm.set_x(13, u64::MAX);
    let setup = set_csrs(&mut vm, &[(MSTATEEN0, ALL_ST)]);
    let body = [
        csrw(SISELECT, 10),
        csrw(SIREG, 11),
        csrw(SISELECT, 12),
        csrw(SIREG, 13),
    ];
    assert_eq!(vm.run_in_mode(&setup, Supervisor, &body), Outcome::Clean);
    msi(&mut vm, InterruptFileId::Supervisor, &[40, 33]);
    // M-level file untouched; S file signals SEIP.
    assert_eq!(vm.csr(MTOPEI), 0);
    assert_eq!(vm.csr(MIP) & (SEIP | MEIP), SEIP);
    let body = [csrrw(14, STOPEI, 0), csrr(15, STOPEI), csrr(16, SIP)];
    restart(&mut vm);
    assert_eq!(vm.run_in_mode(&setup, Supervisor, &body), Outcome::Clean);
    assert_eq!((vm.x(14), vm.x(15)), (top(33), top(40)));
    // mideleg.SEI = 0: sip.SEIP reads 0 at S level.
    assert_eq!(vm.x(16) & SEIP, 0);
    // mstateen0.IMSIC = 0: stopei and sireg at 0x70-0xFF are illegal from S-mode.
    let setup = set_csrs(&mut vm, &[(MSTATEEN0, ALL_ST & !ST_IMSIC)]);
    restart(&mut vm);
    vm.expect_illegal(&setup, Supervisor, &[csrr(14, STOPEI)], 0);
    restart(&mut vm);
    vm.expect_illegal(
        &setup,
        Supervisor,
        &[csrw(SISELECT, 10), csrr(14, SIREG)],
        1,
    );
}

fn guest_vm() -> Vm {
    let mut vm = imsic_vm();
    // Every guest file: delivery on, all identities enabled.
    let mut ops = vec![];
    for g in 1..=7 {
        ops.extend([
            Wr(HSTATUS, vgein(g)),
            Wr(VSISELECT, 0x70),
            Wr(VSIREG, 1),
            Wr(VSISELECT, 0xc0),
            Wr(VSIREG, u64::MAX),
        ]);
        if g == 4 {
            m_ops(&mut vm, &ops);
            ops.clear();
        }
    }
    m_ops(&mut vm, &ops);
    vm
}

#[test]
fn guest_files_vgein_hgeip_hgeie() {
    let mut vm = guest_vm();
    assert_eq!(
        vm.hart.imsic_send_msi(InterruptFileId::Guest(8), 1),
        Err(MsiError::NoFile(8))
    );
    assert_eq!(
        vm.hart.imsic_send_msi(InterruptFileId::Guest(0), 1),
        Err(MsiError::NoFile(0))
    );
    msi(&mut vm, InterruptFileId::Guest(3), &[9, 12]);
    msi(&mut vm, InterruptFileId::Guest(5), &[2]);
    let r = m_ops(
        &mut vm,
        &[
            Rd(HGEIP),
            Wr(HGEIE, u64::MAX),
            Rd(HGEIE),
            Rd(MIP),
            Rd(MIDELEG),
            Wr(HGEIE, 1 << 2),
            Rd(MIP),
            Wr(HSTATUS, vgein(3)),
            Rd(HIP),
            Rd(VSTOPEI),
            Wr(HSTATUS, vgein(5)),
            Rd(VSTOPEI),
            Swap(VSTOPEI),
            Rd(HGEIP),
            Wr(HSTATUS, vgein(2)),
            Rd(HIP),
            Rd(VSTOPEI),
            Wr(HSTATUS, vgein(0x3f)),
            Rd(HSTATUS),
        ],
    );
    assert_eq!(r[0], (1 << 3) | (1 << 5));
    assert_eq!(r[1], 0xfe, "hgeie bits 1..=GEILEN");
    assert_ne!(r[2] & SGEIP, 0);
    assert_ne!(r[3] & SGEIP, 0, "mideleg.SGEI read-only 1");
    assert_eq!(r[4] & SGEIP, 0, "hgeie selects no pending file");
    assert_eq!(r[5] & VSEIP, VSEIP, "VSEIP from guest file 3");
    assert_eq!(r[6], top(9));
    assert_eq!((r[7], r[8]), (top(2), top(2)));
    assert_eq!(r[9], 1 << 3, "claimed: file 5 no longer signals");
    assert_eq!((r[10] & VSEIP, r[11]), (0, 0));
    assert_eq!(
        r[12] & vgein(0x3f),
        vgein(0x3f),
        "VGEIN holds 6 bits (WLRL)"
    );
}

#[test]
fn vstopei_and_vsireg_need_a_valid_vgein() {
    for g in [0, 8, 0x3f] {
        let mut vm = guest_vm();
        vm.set_x(10, 0x70);
        let setup = set_csrs(
            &mut vm,
            &[
                (HSTATUS, vgein(g)),
                (MSTATEEN0, ALL_ST),
                (HSTATEEN0, ALL_ST),
            ],
        );
        // From M and HS: illegal-instruction.
        restart(&mut vm);
        let mut code = setup.clone();
        code.push(csrr(14, VSTOPEI));
        assert_eq!(vm.exec_trap(&code).cause, ILLEGAL, "VGEIN {g}");
        restart(&mut vm);
        vm.expect_illegal(&setup, Supervisor, &[csrr(14, VSTOPEI)], 0);
        restart(&mut vm);
        vm.expect_illegal(
            &setup,
            Supervisor,
            &[csrw(VSISELECT, 10), csrr(14, VSIREG)],
            1,
        );
        // From VS: virtual-instruction.
        restart(&mut vm);
        vm.expect_fault(&setup, Supervisor, true, &[csrr(14, STOPEI)], 0, VIRTUAL);
        restart(&mut vm);
        vm.expect_fault(
            &setup,
            Supervisor,
            true,
            &[csrw(SISELECT, 10), csrr(14, SIREG)],
            1,
            VIRTUAL,
        );
    }
}

#[test]
fn vs_mode_reaches_its_guest_file() {
    let mut vm = guest_vm();
    msi(&mut vm, InterruptFileId::Guest(2), &[17, 30]);
    vm.set_x(10, 0x80);
    vm.set_x(11, 0x81);
    let st = ALL_ST;
    let setup = set_csrs(
        &mut vm,
        &[(HSTATUS, vgein(2)), (MSTATEEN0, st), (HSTATEEN0, st)],
    );
    let body = [csrrw(14, STOPEI, 0), csrw(SISELECT, 10), csrr(15, SIREG)];
    restart(&mut vm);
    assert_eq!(vm.run_in_vmode(&setup, Supervisor, &body), Outcome::Clean);
    assert_eq!((vm.x(14), vm.x(15)), (top(17), 1 << 30));
    // Odd eip number from VS: virtual-instruction.
    restart(&mut vm);
    vm.expect_fault(
        &setup,
        Supervisor,
        true,
        &[csrw(SISELECT, 11), csrr(15, SIREG)],
        1,
        VIRTUAL,
    );
    // hstateen0.IMSIC = 0: virtual-instruction; mstateen0.IMSIC = 0: illegal.
    let setup = set_csrs(
        &mut vm,
        &[
            (HSTATUS, vgein(2)),
            (MSTATEEN0, st),
            (HSTATEEN0, st & !ST_IMSIC),
        ],
    );
    restart(&mut vm);
    vm.expect_fault(&setup, Supervisor, true, &[csrr(14, STOPEI)], 0, VIRTUAL);
    let setup = set_csrs(
        &mut vm,
        &[
            (HSTATUS, vgein(2)),
            (MSTATEEN0, st & !ST_IMSIC),
            (HSTATEEN0, st),
        ],
    );
    restart(&mut vm);
    vm.expect_fault(&setup, Supervisor, true, &[csrr(14, STOPEI)], 0, ILLEGAL);
    restart(&mut vm);
    vm.expect_fault(
        &setup,
        Supervisor,
        true,
        &[csrw(SISELECT, 10), csrr(15, SIREG)],
        1,
        ILLEGAL,
    );
}

#[test]
fn vstopi_reports_the_guest_file() {
    let mut vm = guest_vm();
    msi(&mut vm, InterruptFileId::Guest(1), &[50]);
    let r = m_ops(
        &mut vm,
        &[
            Wr(HSTATUS, vgein(1)),
            Wr(HIDELEG, VSEIP),
            Wr(HIE, VSEIP),
            Rd(VSTOPI),
            Wr(HVICTL, 1 << 8), // IPRIOM: the priority number is the identity
            Rd(VSTOPI),
            Wr(HSTATUS, vgein(4)),
            Rd(VSTOPI),
        ],
    );
    assert_eq!(r[0], (9 << 16) | 1);
    assert_eq!(r[1], (9 << 16) | 50);
    assert_eq!(r[2], 0, "file 4 has nothing pending");
}

#[test]
fn sgei_is_taken_in_hs_mode() {
    let mut vm = guest_vm();
    msi(&mut vm, InterruptFileId::Guest(6), &[1]);
    let handler = CODE + 0x1400;
    vm.put32(handler, &[csrw(HIE, 0), wfi()]);
    let setup = set_csrs(
        &mut vm,
        &[
            (HGEIE, 1 << 6),
            (MIE, SGEIP),
            (STVEC, handler),
            (MSTATUS, MS_SIE),
        ],
    );
    restart(&mut vm);
    let mut m = setup.clone();
    m.extend(vm.enter_mode(Supervisor, LOW_CODE));
    vm.put32(CODE, &m);
    vm.code_at(LOW_CODE, &[nop(), nop()]);
    assert_eq!(vm.hart.run(1_000), VcpuExit::Wfi);
    assert_eq!(vm.hart.pc(), handler + 8);
    assert_eq!(vm.csr(0x142), INTERRUPT | 12, "scause: SGEI");
    // M-mode never takes SGEI (always delegated); the hart spins at the end of the code.
    let mut vm2 = guest_vm();
    msi(&mut vm2, InterruptFileId::Guest(6), &[1]);
    restart(&mut vm2);
    vm2.set_x(5, 1 << 6);
    vm2.set_x(6, SGEIP);
    vm2.set_x(7, MS_MIE);
    let code = [
        csrw(HGEIE, 5),
        csrw(MIE, 6),
        csrs(MSTATUS, 7),
        nop(),
        jal(0, 0),
    ];
    vm2.put32(CODE, &code);
    assert_eq!(vm2.hart.run(1_000), VcpuExit::BudgetExhausted);
    assert_eq!(vm2.hart.pc(), CODE + 16);
    assert_ne!(vm2.csr(MIP) & SGEIP, 0);
}

#[test]
fn state_round_trip_keeps_the_files() {
    let mut vm = guest_vm();
    msi(&mut vm, InterruptFileId::Guest(2), &[5]);
    msi(&mut vm, InterruptFileId::Supervisor, &[6]);
    let s = vm.hart.save_state();
    let mut other = imsic_vm();
    other.hart.restore_state(&s).unwrap();
    assert_eq!(other.hart.imsic_state(), vm.hart.imsic_state());
    assert_eq!(other.hart.hgeip(), 1 << 2);
    // A hart without an IMSIC refuses it; so does this one, given identity 0 pending.
    let mut plain = Vm::new();
    assert!(plain.hart.restore_state(&s).is_err());
    let mut bad = s.clone();
    bad.imsic.files[0].eip[0] |= 1;
    assert!(other.hart.restore_state(&bad).is_err());
    // A state without an IMSIC (an older snapshot's) leaves this hart's at reset.
    let mut old = s.clone();
    old.imsic = Default::default();
    other.hart.restore_state(&old).unwrap();
    assert_eq!(
        other.hart.imsic_state(),
        &imsic_vm().hart.imsic_state().clone()
    );
    assert_eq!(other.hart.hgeip(), 0);
}
