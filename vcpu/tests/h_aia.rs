//! Ssaia with the H extension, without an IMSIC: `hvien`, `hvip` bits 13-63, `hvictl`,
//! `hviprio1/2`, `vstopi`, `vsip`/`vsie` bits 13-63 and the interrupts VS-mode takes (AIA,
//! "Interrupts for Virtual Machines (VS Level)").

mod common;

use common::*;
use vcpu::PrivilegeMode::{Supervisor, User};
use vcpu::VcpuExit;

const INTERRUPT: u64 = 1 << 63;
const VSSIP: u64 = 1 << 2;
const VSEIP: u64 = 1 << 10;
const VTI: u64 = 1 << 30;
const DPR: u64 = 1 << 9;
const IPRIOM: u64 = 1 << 8;
const WRITABLE: u64 = (1 << 13) | (0xff << 16) | (0xffff << 32);
const ALL_ST: u64 = SE0 | ST_ENVCFG | ST_CSRIND | ST_AIA;

fn iid(i: u64) -> u64 {
    i << 16
}

/// Run M-mode code (MIE = 0, V = 0: nothing is taken) ending in a spin loop.
fn m_spin(vm: &mut Vm, body: &[u32]) {
    let mut code = body.to_vec();
    code.push(jal(0, 0));
    vm.put32(CODE, &code);
    assert_eq!(vm.hart.run(2_000), VcpuExit::BudgetExhausted);
    assert_eq!(vm.hart.pc(), CODE + 4 * body.len() as u64, "trapped?");
}

/// `vstopi` after writing `pairs` in M-mode.
fn vstopi_with(pairs: &[(u32, u64)]) -> u64 {
    let mut vm = Vm::new();
    let mut body = set_csrs(&mut vm, pairs);
    body.push(csrr(4, VSTOPI));
    m_spin(&mut vm, &body);
    vm.x(4)
}

#[test]
fn hvien_hvip_hvictl_hviprio_writable_bits() {
    let mut vm = Vm::new();
    let mut body = set_csrs(
        &mut vm,
        &[(HVIEN, u64::MAX), (HVIP, u64::MAX), (HVICTL, u64::MAX)],
    );
    vm.set_x(30, u64::MAX);
    body.extend([
        csrr(10, HVIEN),
        csrr(11, HVIP),
        csrr(12, HVICTL),
        csrw(HVIPRIO1, 30),
        csrw(HVIPRIO2, 30),
        csrr(13, HVIPRIO1),
        csrr(14, HVIPRIO2),
        csrr(15, MIP),
        csrr(16, HIP),
    ]);
    m_spin(&mut vm, &body);
    assert_eq!(
        vm.x(10),
        WRITABLE,
        "13 (LCOFI, Smcdeleg chapter 6), 16-23, 32-47; 14 read-only 0"
    );
    assert_ne!(vm.x(10) & (1 << vcpu::csr::aia::LCOFI), 0);
    assert_eq!(vm.x(11), WRITABLE | VSSIP | (1 << 6) | VSEIP);
    assert_eq!(vm.x(12), VTI | (0x3f << 16) | DPR | IPRIOM | 0xff);
    assert_eq!((vm.x(13), vm.x(14)), (0, 0), "hviprio1/2 read-only 0");
    assert_eq!(vm.x(15) & WRITABLE, 0, "hvip bits 13-63 are not in mip");
    assert_eq!(vm.x(16) & WRITABLE, 0, "nor in hip");
}

#[test]
fn vsip_and_vsie_bits_13_63_follow_hvien() {
    let mut vm = Vm::new();
    let b20 = 1 << 20;
    let mut body = set_csrs(&mut vm, &[(HVIP, b20 | (1 << 33)), (VSIE, u64::MAX)]);
    body.extend([
        csrr(10, VSIP),
        csrr(11, VSIE),
        csrw(HVIEN, 5), // x5 = hvip value: enables 20 and 33
        csrr(12, VSIP),
        csrw(VSIE, 6), // x6 = all ones
        csrr(13, VSIE),
        csrw(VSIP, 0), // clears hvip 20 and 33 through vsip
        csrr(14, HVIP),
        csrw(HVIEN, 0),
        csrr(15, VSIE),
        csrw(HVIEN, 5),
        csrr(16, VSIE),
    ]);
    m_spin(&mut vm, &body);
    assert_eq!(vm.x(10), 0, "hvien = 0: read-only 0");
    assert_eq!(vm.x(11), 0);
    assert_eq!(vm.x(12), b20 | (1 << 33));
    assert_eq!(vm.x(13), b20 | (1 << 33));
    assert_eq!(vm.x(14), 0);
    assert_eq!(vm.x(15), 0);
    assert_eq!(vm.x(16), b20 | (1 << 33), "the separate vsie bits are kept");
}

#[test]
fn vstopi_from_vsip_and_vsie() {
    assert_eq!(vstopi_with(&[]), 0);
    // VSSI delegated, enabled, pending: SSI (1) at VS level.
    let ssi = [(HIDELEG, VSSIP), (HIE, VSSIP), (HVIP, VSSIP)];
    assert_eq!(vstopi_with(&ssi), iid(1) | 1);
    // Not delegated: not a VS-level interrupt.
    assert_eq!(vstopi_with(&[(HIE, VSSIP), (HVIP, VSSIP)]), 0);
    // SEI outranks SSI; interrupt 20 (default above SEI) outranks SEI; 16 does not.
    let both = [
        (HIDELEG, VSSIP | VSEIP),
        (HIE, VSSIP | VSEIP),
        (HVIP, VSSIP | VSEIP),
    ];
    assert_eq!(vstopi_with(&both), iid(9) | 1);
    let mut v = both.to_vec();
    v.extend([
        (HVIEN, 1 << 20),
        (HVIP, VSSIP | VSEIP | 1 << 20),
        (VSIE, 1 << 20),
    ]);
    assert_eq!(vstopi_with(&v), iid(20) | 1);
    let mut v = both.to_vec();
    v.extend([
        (HVIEN, 1 << 16),
        (HVIP, VSSIP | VSEIP | 1 << 16),
        (VSIE, 1 << 16 | 1 << 9 | 1 << 1),
    ]);
    assert_eq!(vstopi_with(&v), iid(9) | 1);
    // Interrupt 16 alone.
    let v = [(HVIEN, 1 << 16), (HVIP, 1 << 16), (VSIE, 1 << 16)];
    assert_eq!(vstopi_with(&v), iid(16) | 1);
    // Pending but not enabled in vsie.
    assert_eq!(vstopi_with(&[(HVIEN, 1 << 16), (HVIP, 1 << 16)]), 0);
}

#[test]
fn vstopi_iprio_with_ipriom() {
    let sei = [(HIDELEG, VSEIP), (HIE, VSEIP), (HVIP, VSEIP)];
    // IPRIOM = 0: IPRIO is 1.
    assert_eq!(vstopi_with(&sei), iid(9) | 1);
    // IPRIOM = 1: SEI has priority number 256 -> 255; with hvictl IID = 9 and IPRIO = 3, 3.
    let mut v = sei.to_vec();
    v.push((HVICTL, IPRIOM));
    assert_eq!(vstopi_with(&v), iid(9) | 255);
    let mut v = sei.to_vec();
    v.push((HVICTL, IPRIOM | iid(9) | 3));
    assert_eq!(vstopi_with(&v), iid(9) | 3);
    // IPRIO = 3 without IPRIOM: still 1.
    let mut v = sei.to_vec();
    v.push((HVICTL, iid(9) | 3));
    assert_eq!(vstopi_with(&v), iid(9) | 1);
    // Priority number 0: 0 above SEI (interrupt 20), 255 below (SSI).
    let v = [
        (HVIEN, 1 << 20),
        (HVIP, 1 << 20),
        (VSIE, 1 << 20),
        (HVICTL, IPRIOM),
    ];
    assert_eq!(vstopi_with(&v), iid(20));
    let v = [
        (HIDELEG, VSSIP),
        (HIE, VSSIP),
        (HVIP, VSSIP),
        (HVICTL, IPRIOM),
    ];
    assert_eq!(vstopi_with(&v), iid(1) | 255);
}

#[test]
fn vstopi_with_hvictl_vti() {
    // VTI = 1, IID != 9: the hvictl interrupt, whatever vsip holds.
    assert_eq!(vstopi_with(&[(HVICTL, VTI | iid(30))]), iid(30) | 1);
    assert_eq!(
        vstopi_with(&[(HVICTL, VTI | iid(30) | IPRIOM | 7)]),
        iid(30) | 7
    );
    // VTI = 1 hides the vsip candidates other than SEI.
    let ssi = [(HIDELEG, VSSIP), (HIE, VSSIP), (HVIP, VSSIP)];
    let mut v = ssi.to_vec();
    v.push((HVICTL, VTI | iid(9)));
    assert_eq!(vstopi_with(&v), 0, "IID = 9: no hvictl interrupt");
    let mut v = ssi.to_vec();
    v.push((HVICTL, VTI | iid(5)));
    assert_eq!(vstopi_with(&v), iid(5) | 1);
    // Against SEI (priority 256): IPRIO = 0 with DPR = 0 wins, with DPR = 1 loses; a nonzero
    // IPRIO wins.
    let sei = [(HIDELEG, VSEIP), (HIE, VSEIP), (HVIP, VSEIP)];
    for (ctl, want) in [
        (VTI | iid(30), iid(30) | 1),
        (VTI | iid(30) | DPR, iid(9) | 1),
        (VTI | iid(30) | DPR | 200, iid(30) | 1),
        (VTI | iid(30) | DPR | IPRIOM | 200, iid(30) | 200),
        (VTI | iid(30) | IPRIOM, iid(30)),
    ] {
        let mut v = sei.to_vec();
        v.push((HVICTL, ctl));
        assert_eq!(vstopi_with(&v), want, "hvictl {ctl:#x}");
    }
    // VTI = 0: IID != 9 injects nothing (the spec's candidate list).
    assert_eq!(vstopi_with(&[(HVICTL, iid(30) | 5)]), 0);
}

/// Enter VS-mode with vsstatus.SIE = `sie`, hstateen/mstateen open, after `pairs`; the VS
/// body is `body` then a spin; the VS handler at VS_TRAP (and each vectored entry) spins.
fn vs_run(pairs: &[(u32, u64)], sie: bool, body: &[u32]) -> Vm {
    vs_run_in(Supervisor, pairs, sie, body)
}

/// As [`vs_run`], in VS-mode or VU-mode.
fn vs_run_in(mode: vcpu::PrivilegeMode, pairs: &[(u32, u64)], sie: bool, body: &[u32]) -> Vm {
    let mut vm = Vm::new();
    let mut all = vec![
        (MSTATEEN0, ALL_ST),
        (HSTATEEN0, ALL_ST),
        (VSTVEC, VS_TRAP),
        (VSSTATUS, if sie { MS_SIE } else { 0 }),
    ];
    all.extend_from_slice(pairs);
    let mut m = set_csrs(&mut vm, &all);
    vm.set_x(27, MS_MPV);
    m.push(csrrs(0, MSTATUS, 27));
    m.extend(vm.enter_mode(mode, LOW_CODE));
    vm.put32(CODE, &m);
    let mut b = body.to_vec();
    b.push(jal(0, 0));
    vm.put32(LOW_CODE, &b);
    // A spin at every vectored entry too.
    vm.put32(VS_TRAP, &[jal(0, 0); 64]);
    assert_eq!(vm.hart.run(5_000), VcpuExit::BudgetExhausted);
    assert_eq!(
        vm.csr(MCAUSE),
        0,
        "no M-mode trap (mepc {:#x})",
        vm.csr(MEPC)
    );
    vm
}

#[test]
fn vs_takes_the_hvictl_interrupt_with_cause_iid() {
    let vm = vs_run(&[(HVICTL, VTI | iid(30))], true, &[]);
    assert_eq!(vm.hart.pc(), VS_TRAP);
    assert_eq!(vm.csr(VSCAUSE), INTERRUPT | 30);
    assert_eq!(vm.csr(MCAUSE), 0);
    // Vectored vstvec: BASE + 4 * 30.
    let vm = vs_run(&[(HVICTL, VTI | iid(30)), (VSTVEC, VS_TRAP | 1)], true, &[]);
    assert_eq!(vm.hart.pc(), VS_TRAP + 4 * 30);
    // Masked by vsstatus.SIE = 0; WFI still resumes (vstopi != 0).
    let vm = vs_run(&[(HVICTL, VTI | iid(30))], false, &[wfi()]);
    assert_eq!(vm.hart.pc(), LOW_CODE + 4);
    // VTI = 0 with IID != 9: nothing.
    let vm = vs_run(&[(HVICTL, iid(30))], true, &[]);
    assert_eq!(vm.hart.pc(), LOW_CODE);
}

#[test]
fn vs_takes_hvien_virtual_interrupts_and_vs_level_ones() {
    let vm = vs_run(
        &[(HVIEN, 1 << 33), (HVIP, 1 << 33), (VSIE, 1 << 33)],
        true,
        &[],
    );
    assert_eq!(vm.csr(VSCAUSE), INTERRUPT | 33);
    // VSSI still arrives as SSI (1).
    let vm = vs_run(&[(HIDELEG, VSSIP), (HIE, VSSIP), (HVIP, VSSIP)], true, &[]);
    assert_eq!(vm.csr(VSCAUSE), INTERRUPT | 1);
    // From VU, whatever vsstatus.SIE.
    let vm = vs_run_in(User, &[(HVICTL, VTI | iid(40))], false, &[]);
    assert_eq!(vm.hart.pc(), VS_TRAP);
    assert_eq!(vm.csr(VSCAUSE), INTERRUPT | 40);
    assert_eq!(vm.hart.privilege(), Supervisor);
}

#[test]
fn stopi_from_vs_is_vstopi() {
    let vm = vs_run(
        &[(HVICTL, VTI | iid(30) | IPRIOM | 42)],
        false,
        &[csrr(10, STOPI)],
    );
    assert_eq!(vm.x(10), iid(30) | 42);
}

#[test]
fn hvictl_vti_makes_sip_and_sie_virtual_from_vs() {
    for csr in [SIP, SIE] {
        for body in [[csrr(10, csr)], [csrw(csr, 0)]] {
            let mut vm = Vm::new();
            let s = set_csrs(&mut vm, &[(HVICTL, VTI | iid(9))]);
            vm.expect_fault(&s, Supervisor, true, &body, 0, VIRTUAL);
            // VTI = 0: fine.
            let mut vm = Vm::new();
            assert_eq!(vm.run_in_vmode(&[], Supervisor, &body), Outcome::Clean);
            // HS is not affected.
            let mut vm = Vm::new();
            let s = set_csrs(&mut vm, &[(HVICTL, VTI | iid(9))]);
            assert_eq!(vm.run_in_mode(&s, Supervisor, &body), Outcome::Clean);
        }
    }
}

#[test]
fn h_level_aia_csrs_from_vs_and_vu() {
    for csr in [HVIEN, HVICTL, HVIPRIO1, HVIPRIO2, VSTOPI] {
        for mode in [Supervisor, User] {
            let mut vm = Vm::new();
            let s = set_csrs(&mut vm, &[(MSTATEEN0, ALL_ST)]);
            vm.expect_fault(&s, mode, true, &[csrr(10, csr)], 0, VIRTUAL);
        }
    }
}
