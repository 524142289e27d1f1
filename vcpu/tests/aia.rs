//! Smaia/Ssaia without an IMSIC: `mvien`, `mvip`, `mtopi`, `stopi`, and `sie`/`sip` with
//! interrupt filtering and virtual supervisor interrupts (AIA, chapter "Interrupts for Machine
//! and Supervisor Levels").

mod common;

use common::*;
use vcpu::PrivilegeMode::{Supervisor, User};
use vcpu::VcpuExit;

const INTERRUPT: u64 = 1 << 63;
const SSI: u64 = 1;
const MSI: u64 = 3;
const STI: u64 = 5;
const MTI: u64 = 7;
const SEI: u64 = 9;
const MEI: u64 = 11;
const SSIP: u64 = 1 << SSI;
const STIP: u64 = 1 << STI;
const SEIP: u64 = 1 << SEI;

fn topi(i: u64) -> u64 {
    (i << 16) | 1
}

/// Run M-mode code (mstatus.MIE = 0, so no interrupt is taken) with registers preset, up to
/// a final spin loop (a final `wfi` would not stop with interrupts pending and enabled).
fn m_run(regs: &[(usize, u64)], body: &[u32]) -> Vm {
    let mut vm = Vm::new();
    for &(r, v) in regs {
        vm.set_x(r, v);
    }
    spin(&mut vm, body);
    vm
}

/// Run `body` at CODE followed by a spin loop; check it got there without a trap.
fn spin(vm: &mut Vm, body: &[u32]) {
    let mut code = body.to_vec();
    code.push(jal(0, 0));
    vm.put32(CODE, &code);
    assert_eq!(vm.hart.run(1000), VcpuExit::BudgetExhausted);
    assert_eq!(vm.hart.pc(), CODE + 4 * body.len() as u64, "trapped?");
}

#[test]
fn mvien_writable_bits() {
    let vm = m_run(&[(5, u64::MAX)], &[csrw(MVIEN, 5), csrr(10, MVIEN)]);
    assert_eq!(
        vm.x(10),
        SSIP | SEIP | (1 << 13),
        "SSI, SEI and LCOFI (Smcdeleg chapter 6)"
    );
    assert_eq!(vcpu::csr::aia::LCOFI, 13);
}

#[test]
fn mvip_aliases_mip_while_mvien_is_clear() {
    let vm = m_run(
        &[(5, u64::MAX)],
        &[
            csrw(MVIP, 5),
            csrr(10, MVIP),
            csrr(11, MIP),
            csrw(MIP, 0),
            csrr(12, MVIP),
        ],
    );
    // mvip.LCOFI is a separate bit (not mip.LCOFIP).
    assert_eq!(vm.x(10), SSIP | STIP | SEIP | (1 << 13));
    assert_eq!(vm.x(11), SSIP | STIP | SEIP);
    assert_eq!(vm.x(12), 1 << 13);
}

#[test]
fn mvip_ssip_is_separate_while_mvien_ssip_is_set() {
    let vm = m_run(
        &[(5, SSIP)],
        &[
            csrw(MVIEN, 5),
            csrw(MVIP, 5), // the separate bit
            csrr(10, MIP),
            csrr(11, MVIP),
            csrw(MIP, 5), // mip.SSIP, not mvip
            csrw(MVIP, 0),
            csrr(12, MIP),
            csrr(13, MVIP),
        ],
    );
    assert_eq!(vm.x(10) & SSIP, 0);
    assert_eq!(vm.x(11) & SSIP, SSIP);
    assert_eq!(vm.x(12) & SSIP, SSIP);
    assert_eq!(vm.x(13) & SSIP, 0);
}

#[test]
fn mvip_seip_and_mvien_seip() {
    let mut vm = Vm::new();
    vm.set_x(5, SEIP);
    vm.exec(&[
        csrw(MVIP, 5), // software SEIP = 1, ORed into mip while mvien.SEIP = 0
        csrr(10, MIP),
        csrw(MVIEN, 5), // now mip.SEIP is the platform line only
        csrr(11, MIP),
        csrr(12, MVIP), // mvip.SEIP keeps its value across the mvien change
        csrc(MIP, 5),   // read-only in mip
        csrr(13, MVIP),
        csrw(MVIEN, 0),
        csrr(14, MIP),
    ]);
    assert_eq!(vm.x(10) & SEIP, SEIP);
    assert_eq!(vm.x(11) & SEIP, 0);
    assert_eq!(vm.x(12) & SEIP, SEIP);
    assert_eq!(vm.x(13) & SEIP, SEIP);
    assert_eq!(vm.x(14) & SEIP, SEIP);

    // With mvien.SEIP = 1 the platform line alone drives mip.SEIP.
    let mut vm = Vm::new();
    vm.set_x(5, SEIP);
    vm.exec(&[csrw(MVIEN, 5), csrr(10, MIP)]);
    assert_eq!(vm.x(10) & SEIP, 0);
    vm.hart.set_seip(true);
    assert_eq!(vm.csr(MIP) & SEIP, SEIP);
    assert_eq!(vm.csr(MVIP) & SEIP, 0);
}

#[test]
fn mvip_stip_is_read_only_zero_while_stce_is_set() {
    let vm = m_run(
        &[(5, STCE), (6, STIP), (7, u64::MAX)],
        &[
            csrw(STIMECMP, 7),
            csrw(MIP, 6), // software STIP = 1
            csrw(MENVCFG, 5),
            csrr(10, MVIP),
            csrw(MVIP, 0), // ignored for bit 5
            csrw(MENVCFG, 0),
            csrr(11, MVIP),
        ],
    );
    assert_eq!(vm.x(10) & STIP, 0);
    assert_eq!(vm.x(11) & STIP, STIP);
}

#[test]
fn sie_and_sip_follow_mideleg_and_mvien() {
    // mideleg = 0, mvien = 0: read-only zero.
    let vm = m_run(
        &[(5, u64::MAX)],
        &[
            csrw(MVIP, 5),
            csrw(SIE, 5),
            csrr(10, SIE),
            csrr(11, SIP),
            csrr(12, MIE),
        ],
    );
    assert_eq!((vm.x(10), vm.x(11), vm.x(12)), (0, 0, 0));

    // mideleg = 0, mvien = SSI|SEI: sie bits independent of mie, sip aliases mvip.
    let vm = m_run(
        &[(5, u64::MAX), (6, SSIP | SEIP)],
        &[
            csrw(MVIEN, 6),
            csrw(SIE, 5),
            csrr(10, SIE),
            csrr(11, MIE),
            csrw(MVIP, 6),
            csrr(12, SIP),
            csrr(13, MIP),
            csrw(SIP, 0), // clears mvip.SSIP (SEIP is read-only in sip)
            csrr(14, MVIP),
            csrr(15, SIP),
        ],
    );
    assert_eq!(vm.x(10), SSIP | SEIP);
    assert_eq!(vm.x(11), 0, "mie untouched");
    assert_eq!(vm.x(12), SSIP | SEIP);
    assert_eq!(
        vm.x(13),
        0,
        "mvip.SSIP is separate; mvip.SEIP hidden from mip"
    );
    assert_eq!(vm.x(14), SEIP);
    assert_eq!(vm.x(15), SEIP);

    // mideleg = SSI (mvien = SSI too): aliases of mie/mip win.
    let vm = m_run(
        &[(5, u64::MAX), (6, SSIP)],
        &[
            csrw(MVIEN, 6),
            csrw(MIDELEG, 6),
            csrw(SIE, 5),
            csrr(10, MIE),
            csrw(SIP, 5),
            csrr(11, MIP),
            csrr(12, MVIP),
        ],
    );
    assert_eq!(vm.x(10), SSIP);
    assert_eq!(vm.x(11), SSIP);
    assert_eq!(vm.x(12), 0);
}

#[test]
fn mtopi_reports_the_highest_priority_m_level_interrupt() {
    let vm = m_run(&[(5, u64::MAX)], &[csrw(MIE, 5), csrr(10, MTOPI)]);
    assert_eq!(vm.x(10), 0);
    // Default priority order: MEI, MSI, MTI, SEI, SSI, STI. mstatus.MIE (0) does not matter.
    let mut vm = Vm::new();
    vm.set_x(5, u64::MAX);
    vm.set_x(6, SSIP | STIP);
    vm.set_x(7, SEIP);
    spin(
        &mut vm,
        &[
            csrw(MIE, 5),
            csrw(MIP, 6),
            csrr(10, MTOPI),
            csrs(MIP, 7),
            csrr(11, MTOPI),
        ],
    );
    assert_eq!(vm.x(10), topi(SSI));
    assert_eq!(vm.x(11), topi(SEI));
    vm.hart.set_mtimecmp(0);
    assert_eq!(vm.csr(MTOPI), topi(MTI));
    vm.hart.set_msip(true);
    assert_eq!(vm.csr(MTOPI), topi(MSI));
    vm.hart.set_meip(true);
    assert_eq!(vm.csr(MTOPI), topi(MEI));
    // Delegated interrupts are not M-level.
    let vm = m_run(
        &[(5, u64::MAX), (6, SSIP | STIP | SEIP)],
        &[
            csrw(MIE, 5),
            csrw(MIP, 6),
            csrw(MIDELEG, 6),
            csrr(10, MTOPI),
        ],
    );
    assert_eq!(vm.x(10), 0);
    assert_eq!(vm.csr(STOPI), topi(SEI));
}

#[test]
fn stopi_reports_the_highest_priority_s_level_interrupt() {
    // Delegated SSI and STI pending and enabled: SSI first. Not enabled: nothing.
    let mut vm = Vm::new();
    vm.set_x(5, SSIP | STIP);
    vm.set_x(6, u64::MAX);
    let mut m = vec![csrw(MIDELEG, 5), csrw(MIP, 5), csrw(MSTATEEN0, 6)];
    m.extend(vm.enter_mode(Supervisor, LOW_CODE));
    vm.put32(CODE, &m);
    vm.put32(
        LOW_CODE,
        &[csrr(10, STOPI), csrw(SIE, 5), csrr(11, STOPI), jal(0, 0)],
    );
    assert_eq!(vm.hart.run(1000), VcpuExit::BudgetExhausted);
    assert_eq!(vm.hart.pc(), LOW_CODE + 12);
    assert_eq!(vm.hart.privilege(), Supervisor);
    assert_eq!(vm.x(10), 0);
    // sstatus.SIE = 0 in S: the interrupt is not taken, but stopi reports it.
    assert_eq!(vm.x(11), topi(SSI));

    // A virtual SEI (mvien) shows in stopi, not in mtopi.
    let vm = m_run(
        &[(5, SEIP), (6, u64::MAX)],
        &[
            csrw(MIE, 6),
            csrw(MVIEN, 5),
            csrw(MVIP, 5),
            csrw(SIE, 5),
            csrr(10, STOPI),
            csrr(11, MTOPI),
        ],
    );
    assert_eq!(vm.x(10), topi(SEI));
    assert_eq!(vm.x(11), 0);
}

#[test]
fn topi_csrs_are_read_only_and_privileged() {
    for r in [MTOPI, STOPI] {
        let mut vm = Vm::new();
        let t = vm.exec_trap(&[csrw(r, 0)]);
        assert_eq!(t.cause, 2);
        assert_eq!(t.tval, csrw(r, 0) as u64);
    }
    let mut vm = Vm::new();
    vm.expect_illegal(&[], Supervisor, &[csrr(10, MTOPI)], 0);
    let mut vm = Vm::new();
    vm.set_x(5, u64::MAX);
    vm.expect_illegal(&[csrw(MSTATEEN0, 5)], User, &[csrr(10, STOPI)], 0);
    for r in [MVIEN, MVIP] {
        let mut vm = Vm::new();
        vm.expect_illegal(&[], Supervisor, &[csrr(10, r)], 0);
    }
}

#[test]
fn virtual_ssi_traps_to_s_without_mideleg() {
    let mut vm = Vm::new();
    let stvec = RAM_BASE + 0x600;
    vm.put32(stvec, &[csrr(10, STOPI), csrw(SIE, 0), wfi()]);
    vm.set_x(5, SSIP);
    vm.set_x(6, stvec);
    vm.set_x(7, MS_SIE);
    vm.set_x(8, u64::MAX);
    vm.set_x(9, !SSIP);
    let setup = [
        csrw(MSTATEEN0, 8),
        csrw(MVIEN, 5),
        csrw(MVIP, 5),
        csrw(STVEC, 6),
        csrs(MSTATUS, 7),
        csrw(MIE, 9), // everything but SSI: sie.SSIE below is independent of mie
    ];
    let mut m = setup.to_vec();
    m.extend(vm.enter_mode(Supervisor, LOW_CODE));
    vm.put32(CODE, &m);
    // S enables its (independent) sie.SSIE.
    vm.put32(LOW_CODE, &[nop(), csrw(SIE, 5), nop(), wfi()]);
    vm.run_to_wfi();
    assert_eq!(vm.hart.privilege(), Supervisor);
    assert_eq!(vm.hart.pc(), stvec + 12);
    assert_eq!(
        vm.strap(),
        Trap {
            cause: INTERRUPT | SSI,
            epc: LOW_CODE + 8,
            tval: 0
        }
    );
    assert_eq!(vm.x(10), topi(SSI));
    assert_eq!(vm.csr(MCAUSE), 0, "no M-mode trap");
    assert_eq!(vm.csr(MIE) & SSIP, 0, "the sie write did not reach mie");
}

#[test]
fn interrupt_filtering_sei_trapped_in_m_then_injected_into_s() {
    // The platform's SEI goes to M (mideleg.SEI = 0); M forwards it through mvip.SEIP.
    let mut vm = Vm::new();
    let stvec = RAM_BASE + 0x600;
    vm.put32(stvec, &[csrr(10, SCAUSE), csrw(SIE, 0), wfi()]);
    // M handler: disable M-level SEI, inject the virtual one, return.
    vm.set_x(5, SEIP);
    vm.set_x(6, stvec);
    vm.set_x(7, MS_SIE);
    vm.set_x(8, u64::MAX);
    vm.put32(
        TRAP,
        &[csrr(20, MCAUSE), csrc(MIE, 5), csrw(MVIP, 5), mret()],
    );
    let setup = [
        csrw(MSTATEEN0, 8),
        csrw(MVIEN, 5),
        csrw(STVEC, 6),
        csrs(MSTATUS, 7),
        csrw(MIE, 5),
        csrw(SIE, 5), // the independent sie.SEIE
    ];
    let mut m = setup.to_vec();
    m.extend(vm.enter_mode(Supervisor, LOW_CODE));
    vm.put32(CODE, &m);
    vm.put32(LOW_CODE, &[nop(), nop(), jal(0, 0)]);
    assert_eq!(vm.hart.run(100), VcpuExit::BudgetExhausted);
    assert_eq!(vm.hart.pc(), LOW_CODE + 8, "S spinning, nothing pending");
    vm.hart.set_seip(true);
    vm.run_to_wfi();
    assert_eq!(vm.x(20), INTERRUPT | SEI, "M took the real SEI");
    assert_eq!(vm.hart.privilege(), Supervisor);
    assert_eq!(vm.hart.pc(), stvec + 12);
    assert_eq!(vm.x(10), INTERRUPT | SEI, "S took the virtual SEI");
    assert_eq!(vm.csr(SIP) & SEIP, SEIP);
    assert_eq!(vm.csr(MTOPI), 0);
}

#[test]
fn wfi_resumes_for_a_virtual_interrupt() {
    // Pending at S-level only through mvien/mvip: WFI must not stop (AIA "WFI").
    let mut vm = Vm::new();
    vm.set_x(5, SSIP);
    vm.code(&[
        csrw(MVIEN, 5),
        csrw(MVIP, 5),
        csrw(SIE, 5),
        wfi(),
        jal(0, 0),
    ]);
    assert_eq!(vm.hart.run(100), VcpuExit::BudgetExhausted);
    assert_eq!(vm.hart.pc(), CODE + 16);
    assert!(vm.hart.skip_to_timer(), "an interrupt is pending");

    // Same without the sie bit: WFI stops.
    let mut vm = Vm::new();
    vm.set_x(5, SSIP);
    vm.code(&[csrw(MVIEN, 5), csrw(MVIP, 5), wfi(), jal(0, 0)]);
    assert_eq!(vm.hart.run(100), VcpuExit::Wfi);
    assert!(!vm.hart.skip_to_timer());
}
