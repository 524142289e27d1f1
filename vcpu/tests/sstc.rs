//! Sstc: `stimecmp`, `menvcfg.STCE`, `mcounteren.TM`, STIP driven by `time >= stimecmp`, and
//! timely delivery by the chunked run loop and `skip_to_timer` (privileged spec, "Sstc" and
//! the `menvcfg`, `mcounteren` and `stimecmp` sections).

mod common;

use common::*;
use vcpu::PrivilegeMode::{Supervisor, User};
use vcpu::VcpuExit;

const INTERRUPT: u64 = 1 << 63;
const STI: u64 = 5;
const STIP: u64 = 1 << STI;
const TM: u64 = 1 << 1;

#[test]
fn menvcfg_writable_bits() {
    let mut vm = Vm::new();
    vm.set_x(5, u64::MAX);
    vm.exec(&[csrw(MENVCFG, 5), csrr(10, MENVCFG)]);
    assert_eq!(
        vm.x(10),
        STCE | (1 << 60) | 1,
        "STCE, CDE (Smcdeleg) and FIOM"
    );
}

#[test]
fn m_mode_always_reaches_stimecmp() {
    let mut vm = Vm::new();
    assert_eq!(vm.csr(STIMECMP), u64::MAX, "reset value");
    vm.set_x(5, 12345);
    vm.exec(&[csrw(STIMECMP, 5), csrr(10, STIMECMP)]);
    assert_eq!(vm.x(10), 12345);
    assert_eq!(vm.csr(MENVCFG) & STCE, 0);
}

/// S-mode access to stimecmp with the given STCE and TM.
fn s_access(stce: bool, tm: bool, op: u32) -> Outcome {
    let mut vm = Vm::new();
    vm.set_x(5, if stce { STCE } else { 0 });
    vm.set_x(6, if tm { TM } else { 0 });
    vm.set_x(7, 77);
    vm.run_in_mode(&[csrw(MENVCFG, 5), csrw(MCOUNTEREN, 6)], Supervisor, &[op])
}

#[test]
fn stimecmp_from_s_needs_stce_and_tm() {
    for op in [csrr(10, STIMECMP), csrw(STIMECMP, 7)] {
        let illegal = Outcome::MTrap(Trap {
            cause: 2,
            epc: LOW_CODE,
            tval: op as u64,
        });
        assert_eq!(s_access(false, true, op), illegal, "STCE = 0");
        assert_eq!(s_access(true, false, op), illegal, "TM = 0");
        assert_eq!(s_access(false, false, op), illegal);
        assert_eq!(s_access(true, true, op), Outcome::Clean);
    }
}

#[test]
fn stimecmp_from_u_is_illegal() {
    let mut vm = Vm::new();
    vm.set_x(5, STCE);
    vm.set_x(6, u64::MAX);
    vm.expect_illegal(
        &[csrw(MENVCFG, 5), csrw(MCOUNTEREN, 6), csrw(SCOUNTEREN, 6)],
        User,
        &[csrr(10, STIMECMP)],
        0,
    );
}

#[test]
fn stip_follows_stimecmp_when_stce_is_set() {
    let mut vm = Vm::new();
    vm.set_x(5, STCE);
    vm.set_x(6, STIP);
    vm.set_x(7, u64::MAX);
    vm.exec(&[
        csrw(STIMECMP, 7),
        csrs(MENVCFG, 5),
        csrr(10, MIP), // stimecmp = MAX: not pending
        csrs(MIP, 6),  // STIP is read-only in mip now
        csrr(11, MIP),
        csrw(STIMECMP, 0), // time >= 0: pending
        csrr(12, MIP),
        csrc(MIP, 6), // still read-only
        csrr(13, MIP),
        csrw(MIDELEG, 6),
        csrr(14, SIP), // and visible in sip
    ]);
    assert_eq!(vm.x(10) & STIP, 0);
    assert_eq!(vm.x(11) & STIP, 0);
    assert_eq!(vm.x(12) & STIP, STIP);
    assert_eq!(vm.x(13) & STIP, STIP);
    assert_eq!(vm.x(14) & STIP, STIP);
}

#[test]
fn stip_is_software_writable_when_stce_is_clear() {
    let mut vm = Vm::new();
    vm.set_x(5, STCE);
    vm.set_x(6, STIP);
    vm.set_x(7, u64::MAX);
    vm.exec(&[
        csrw(STIMECMP, 0), // would be pending, but STCE = 0
        csrr(10, MIP),
        csrs(MIP, 6),
        csrr(11, MIP),
        csrw(STIMECMP, 7),
        csrs(MENVCFG, 5), // the written bit is hidden while STCE = 1
        csrr(12, MIP),
        csrc(MENVCFG, 5), // and comes back
        csrr(13, MIP),
    ]);
    assert_eq!(vm.x(10) & STIP, 0);
    assert_eq!(vm.x(11) & STIP, STIP);
    assert_eq!(vm.x(12) & STIP, 0);
    assert_eq!(vm.x(13) & STIP, STIP);
}

#[test]
fn supervisor_timer_interrupt_arrives_exactly_at_stimecmp() {
    // Undelegated: to M. The handler reads time first thing.
    for deadline in [500u64, 4321, 10_000] {
        let mut vm = Vm::new();
        vm.put32(TRAP, &[csrr(10, TIME), csrw(MIE, 0), wfi()]);
        vm.set_x(5, STCE);
        vm.set_x(6, deadline);
        vm.set_x(7, STIP);
        vm.set_x(8, MS_MIE);
        vm.code(&[
            csrs(MENVCFG, 5),
            csrw(STIMECMP, 6),
            csrs(MIE, 7),
            csrs(MSTATUS, 8),
            jal(0, 0),
        ]);
        vm.run_to_wfi();
        assert_eq!(vm.hart.pc(), TRAP + 12);
        assert_eq!(vm.csr(MCAUSE), INTERRUPT | STI);
        assert_eq!(vm.csr(MEPC), CODE + 16);
        assert_eq!(vm.x(10), deadline, "interrupt taken late or early");
        assert_eq!(vm.csr(MTOPI), 0, "the handler disabled it");
    }
}

#[test]
fn delegated_supervisor_timer_interrupt_to_s_mode() {
    let mut vm = Vm::new();
    let stvec = RAM_BASE + 0x600;
    vm.put32(stvec, &[csrr(10, TIME), csrw(SIE, 0), wfi()]);
    vm.set_x(5, STCE);
    vm.set_x(6, 3000);
    vm.set_x(7, STIP);
    vm.set_x(8, MS_SIE);
    vm.set_x(9, stvec);
    vm.set_x(11, u64::MAX);
    let setup = [
        csrs(MENVCFG, 5),
        csrw(MCOUNTEREN, 11),
        csrw(MIDELEG, 7),
        csrs(MIE, 7),
        csrs(MSTATUS, 8),
        csrw(STVEC, 9),
    ];
    let mut m = setup.to_vec();
    m.extend(vm.enter_mode(Supervisor, LOW_CODE));
    vm.put32(CODE, &m);
    // S sets its own deadline and spins.
    vm.put32(LOW_CODE, &[csrw(STIMECMP, 6), jal(0, 0)]);
    vm.run_to_wfi();
    assert_eq!(vm.hart.privilege(), Supervisor);
    assert_eq!(vm.hart.pc(), stvec + 12);
    assert_eq!(
        vm.strap(),
        Trap {
            cause: INTERRUPT | STI,
            epc: LOW_CODE + 4,
            tval: 0
        }
    );
    assert_eq!(vm.x(10), 3000);
    assert_eq!(vm.csr(MCAUSE), 0);
    // Still pending, but the handler disabled it in sie.
    assert_eq!(vm.csr(SIP) & STIP, STIP);
    assert_eq!(vm.csr(STOPI), 0);
}

#[test]
fn wfi_skips_to_stimecmp() {
    let mut vm = Vm::new();
    vm.set_x(5, STCE);
    vm.set_x(6, 50_000);
    vm.set_x(7, STIP);
    let end = vm.code(&[
        csrs(MENVCFG, 5),
        csrw(STIMECMP, 6),
        csrs(MIE, 7),
        wfi(),
        addi(10, 0, 1),
    ]);
    assert_eq!(vm.hart.run(1000), VcpuExit::Wfi);
    assert_eq!(vm.hart.pc(), end - 4);
    assert!(vm.hart.skip_to_timer());
    assert_eq!(vm.hart.mtime(), 50_000);
    // STIP is pending (mstatus.MIE = 0: no trap); the program goes on to its final wfi, which
    // does not stop since an interrupt is pending: give it a small budget.
    assert_eq!(vm.hart.run(2), VcpuExit::BudgetExhausted);
    assert_eq!(vm.x(10), 1);
    assert_eq!(vm.csr(MIP) & STIP, STIP);
}

#[test]
fn skip_to_timer_ignores_stimecmp_without_stie_or_stce() {
    for (stce, stie) in [(true, false), (false, true)] {
        let mut vm = Vm::new();
        vm.set_x(5, if stce { STCE } else { 0 });
        vm.set_x(6, 50_000);
        vm.set_x(7, if stie { STIP } else { 0 });
        vm.code(&[csrs(MENVCFG, 5), csrw(STIMECMP, 6), csrs(MIE, 7), wfi()]);
        assert_eq!(vm.hart.run(1000), VcpuExit::Wfi);
        assert!(!vm.hart.skip_to_timer(), "nothing can wake the hart");
    }
    // The earlier of mtimecmp and stimecmp wins.
    let mut vm = Vm::new();
    vm.set_x(5, STCE);
    vm.set_x(6, 50_000);
    vm.set_x(7, STIP | (1 << 7));
    vm.code(&[csrs(MENVCFG, 5), csrw(STIMECMP, 6), csrs(MIE, 7), wfi()]);
    vm.hart.set_mtimecmp(20_000);
    assert_eq!(vm.hart.run(1000), VcpuExit::Wfi);
    assert!(vm.hart.skip_to_timer());
    assert_eq!(vm.hart.mtime(), 20_000);
}
