//! Sstc with the H extension: `vstimecmp`, `henvcfg.STCE`, `hcounteren.TM` (privileged spec,
//! "Sstc"), and the VS timer interrupt it raises, on time.

mod common;

use common::*;
use vcpu::PrivilegeMode::{Supervisor, User};
use vcpu::VcpuExit;

const TM: u64 = 1 << 1;
const VSTIP: u64 = 1 << 6;
const INTERRUPT: u64 = 1 << 63;

/// Everything enabled: menvcfg.STCE, henvcfg.STCE, mcounteren.TM, hcounteren.TM.
fn enabled(vm: &mut Vm, extra: &[(u32, u64)]) -> Vec<u32> {
    let mut pairs = vec![
        (MENVCFG, STCE),
        (HENVCFG, STCE),
        (MCOUNTEREN, TM),
        (HCOUNTEREN, TM),
    ];
    pairs.extend_from_slice(extra);
    set_csrs(vm, &pairs)
}

#[test]
fn henvcfg_stce_is_writable_only_while_menvcfg_stce_is_set() {
    let mut vm = Vm::new();
    vm.set_x(5, u64::MAX);
    vm.set_x(6, STCE);
    vm.exec(&[
        csrw(HENVCFG, 5),
        csrr(10, HENVCFG),
        csrw(MENVCFG, 6),
        csrw(HENVCFG, 5),
        csrr(11, HENVCFG),
        csrw(MENVCFG, 0),
        csrr(12, HENVCFG),
    ]);
    assert_eq!(vm.x(10), 1, "FIOM only");
    assert_eq!(vm.x(11), STCE | 1);
    assert_eq!(vm.x(12), 1, "STCE reads 0 while menvcfg.STCE = 0");
}

#[test]
fn vstimecmp_from_hs() {
    let body = [csrr(10, VSTIMECMP)];
    let mut vm = Vm::new();
    let s = set_csrs(&mut vm, &[(MCOUNTEREN, TM)]);
    vm.expect_fault(&s, Supervisor, false, &body, 0, ILLEGAL);
    let mut vm = Vm::new();
    let s = set_csrs(&mut vm, &[(MENVCFG, STCE)]);
    vm.expect_fault(&s, Supervisor, false, &body, 0, ILLEGAL);
    // henvcfg.STCE and hcounteren.TM do not matter to HS.
    let mut vm = Vm::new();
    let s = set_csrs(
        &mut vm,
        &[(MENVCFG, STCE), (MCOUNTEREN, TM), (VSTIMECMP, 77)],
    );
    assert_eq!(vm.run_in_mode(&s, Supervisor, &body), Outcome::Clean);
    assert_eq!(vm.x(10), 77);
    // From VS: a hypervisor-level CSR.
    let mut vm = Vm::new();
    let s = enabled(&mut vm, &[]);
    vm.expect_fault(&s, Supervisor, true, &body, 0, VIRTUAL);
    let mut vm = Vm::new();
    let s = set_csrs(&mut vm, &[(MCOUNTEREN, TM)]);
    vm.expect_fault(&s, Supervisor, true, &body, 0, ILLEGAL);
}

#[test]
fn stimecmp_from_vs_is_vstimecmp() {
    let mut vm = Vm::new();
    let s = enabled(&mut vm, &[(VSTIMECMP, 1234), (STIMECMP, 99)]);
    vm.set_x(20, 4321);
    let out = vm.run_in_vmode(&s, Supervisor, &[csrr(10, STIMECMP), csrw(STIMECMP, 20)]);
    assert_eq!(out, Outcome::Clean);
    assert_eq!(vm.x(10), 1234);
    assert_eq!(vm.csr(VSTIMECMP), 4321);
    assert_eq!(vm.csr(STIMECMP), 99);
}

#[test]
fn stimecmp_from_vs_and_vu_faults() {
    let body = [csrr(10, STIMECMP)];
    let cases: [(&[(u32, u64)], u64); 4] = [
        (&[(MENVCFG, 0)], ILLEGAL),
        (&[(MCOUNTEREN, 0)], ILLEGAL),
        (&[(HENVCFG, 0)], VIRTUAL),
        (&[(HCOUNTEREN, 0)], VIRTUAL),
    ];
    for (extra, cause) in cases {
        for mode in [Supervisor, User] {
            let mut vm = Vm::new();
            let s = enabled(&mut vm, extra);
            vm.expect_fault(&s, mode, true, &body, 0, cause);
        }
    }
    // VU with everything enabled: an S-level CSR from VU.
    let mut vm = Vm::new();
    let s = enabled(&mut vm, &[]);
    vm.expect_fault(&s, User, true, &body, 0, VIRTUAL);
}

#[test]
fn stimecmp_write_from_vs_with_hvictl_vti() {
    let vti = 1 << 30 | 9 << 16;
    let mut vm = Vm::new();
    let s = enabled(&mut vm, &[(HVICTL, vti)]);
    vm.expect_fault(&s, Supervisor, true, &[csrw(STIMECMP, 0)], 0, VIRTUAL);
    let mut vm = Vm::new();
    let s = enabled(&mut vm, &[(HVICTL, vti)]);
    assert_eq!(
        vm.run_in_vmode(&s, Supervisor, &[csrr(10, STIMECMP)]),
        Outcome::Clean,
        "reads are allowed"
    );
}

#[test]
fn vstip_follows_vstimecmp_and_htimedelta() {
    // time starts near 0: vstimecmp = 1000 is in the future until htimedelta moves guest time.
    let mut vm = Vm::new();
    let mut body = enabled(&mut vm, &[(VSTIMECMP, 1000)]);
    vm.set_x(20, 1000);
    vm.set_x(21, VSTIP);
    body.extend([
        csrr(10, HIP),
        csrw(HTIMEDELTA, 20),
        csrr(11, HIP),
        csrr(12, MIP),
        // henvcfg.STCE = 0: VSTIP is hvip.VSTIP alone.
        csrw(HENVCFG, 0),
        csrr(13, HIP),
        csrw(HVIP, 21),
        csrr(14, HIP),
        // STCE again: OR of hvip.VSTIP and the signal.
        csrw(HTIMEDELTA, 0),
        csrr(15, HIP),
    ]);
    vm.exec(&body);
    assert_eq!(vm.x(10) & VSTIP, 0);
    assert_eq!(vm.x(11) & VSTIP, VSTIP);
    assert_eq!(vm.x(12) & VSTIP, VSTIP);
    assert_eq!(vm.x(13) & VSTIP, 0);
    assert_eq!(vm.x(14) & VSTIP, VSTIP);
    assert_eq!(vm.x(15) & VSTIP, VSTIP);
}

/// M-mode setup that enters VS-mode at LOW_CODE (a spin loop) with the VS timer interrupt
/// delegated and enabled, guest time = time + `delta`, `vstimecmp` = `cmp`; the VS trap
/// handler reads `time` into x10 and spins.
fn vs_timer(vm: &mut Vm, delta: u64, cmp: u64, body: &[u32]) {
    let mut m = enabled(
        vm,
        &[
            (HIDELEG, VSTIP),
            (HIE, VSTIP),
            (VSTVEC, VS_TRAP),
            (VSSTATUS, MS_SIE),
            (HTIMEDELTA, delta),
            (VSTIMECMP, cmp),
        ],
    );
    vm.set_x(27, MS_MPV);
    m.push(csrrs(0, MSTATUS, 27));
    m.extend(vm.enter_mode(Supervisor, LOW_CODE));
    vm.put32(CODE, &m);
    let mut b = body.to_vec();
    b.push(jal(0, 0));
    vm.put32(LOW_CODE, &b);
    vm.put32(VS_TRAP, &[csrr(10, TIME), jal(0, 0)]);
}

#[test]
fn vs_timer_interrupt_arrives_on_time() {
    let mut vm = Vm::new();
    let (delta, cmp) = (1_000_000, 1_000_500);
    vs_timer(&mut vm, delta, cmp, &[]);
    assert_eq!(vm.hart.run(20_000), VcpuExit::BudgetExhausted);
    assert_eq!(vm.hart.pc(), VS_TRAP + 4, "in the VS handler");
    assert_eq!(vm.csr(VSCAUSE), INTERRUPT | 5, "VSTI arrives as STI");
    assert_eq!(vm.csr(MCAUSE), 0, "no M trap");
    let t = vm.x(10);
    assert!(
        t >= cmp && t <= cmp + 1,
        "taken at guest time {t}, deadline {cmp}"
    );
}

#[test]
fn skip_to_timer_includes_vstimecmp() {
    let mut vm = Vm::new();
    let (delta, cmp) = (5, 1_000_000);
    vs_timer(&mut vm, delta, cmp, &[wfi()]);
    assert_eq!(vm.hart.run(1_000), VcpuExit::Wfi);
    assert!(vm.hart.skip_to_timer());
    assert_eq!(vm.hart.mtime(), cmp - delta);
    assert_eq!(vm.hart.run(1_000), VcpuExit::BudgetExhausted);
    assert_eq!(vm.hart.pc(), VS_TRAP + 4);
    assert_eq!(vm.csr(VSCAUSE), INTERRUPT | 5);
    assert_eq!(vm.x(10), cmp);
}

#[test]
fn no_vs_timer_interrupt_without_henvcfg_stce() {
    let mut vm = Vm::new();
    vs_timer(&mut vm, 0, 0, &[]);
    // Clear henvcfg.STCE right before entering VS (the setup's enabled() set it).
    let mut vm2 = Vm::new();
    let mut m = set_csrs(
        &mut vm2,
        &[
            (MENVCFG, STCE),
            (MCOUNTEREN, TM),
            (HIDELEG, VSTIP),
            (HIE, VSTIP),
            (VSTVEC, VS_TRAP),
            (VSSTATUS, MS_SIE),
            (VSTIMECMP, 0),
        ],
    );
    vm2.set_x(27, MS_MPV);
    m.push(csrrs(0, MSTATUS, 27));
    m.extend(vm2.enter_mode(Supervisor, LOW_CODE));
    vm2.put32(CODE, &m);
    vm2.put32(LOW_CODE, &[jal(0, 0)]);
    assert_eq!(vm2.hart.run(5_000), VcpuExit::BudgetExhausted);
    assert_eq!(vm2.hart.pc(), LOW_CODE, "no interrupt");
    // And with it, at once.
    assert_eq!(vm.hart.run(5_000), VcpuExit::BudgetExhausted);
    assert_eq!(vm.hart.pc(), VS_TRAP + 4);
}
