//! Sscsrind with the H extension: `vsiselect`/`vsireg*`, which `siselect`/`sireg*` become with
//! V = 1 (privileged spec, "Smcsrind/Sscsrind", "Virtual Supervisor-level CSRs"; AIA
//! "Hypervisor and VS CSRs": 0x30-0x3F and, without an IMSIC, 0x70-0xFF are inaccessible at
//! VS level).

mod common;

use common::*;
use vcpu::PrivilegeMode::{Supervisor, User};

const ALL: u64 = SE0 | ST_ENVCFG | ST_CSRIND | ST_AIA;

fn setup(vm: &mut Vm, vsiselect: u64) -> Vec<u32> {
    set_csrs(
        vm,
        &[
            (MSTATEEN0, ALL),
            (HSTATEEN0, ALL),
            (VSISELECT, vsiselect),
            (SISELECT, 0x30),
        ],
    )
}

#[test]
fn vsiselect_holds_0_to_0xfff() {
    let mut vm = Vm::new();
    vm.set_x(5, u64::MAX);
    vm.set_x(6, 0x1ff);
    vm.exec(&[
        csrw(VSISELECT, 5),
        csrr(10, VSISELECT),
        csrw(VSISELECT, 6),
        csrr(11, VSISELECT),
    ]);
    assert_eq!((vm.x(10), vm.x(11)), (0xfff, 0x1ff));
}

#[test]
fn siselect_is_vsiselect_with_v1() {
    let mut vm = Vm::new();
    let s = setup(&mut vm, 0x40);
    vm.set_x(20, 0x123);
    let out = vm.run_in_vmode(&s, Supervisor, &[csrr(10, SISELECT), csrw(SISELECT, 20)]);
    assert_eq!(out, Outcome::Clean);
    assert_eq!(vm.x(10), 0x40, "VS reads vsiselect");
    assert_eq!(vm.csr(VSISELECT), 0x123);
    assert_eq!(vm.csr(SISELECT), 0x30, "siselect untouched");
    // HS still sees siselect.
    let mut vm = Vm::new();
    let s = setup(&mut vm, 0x40);
    assert_eq!(
        vm.run_in_mode(&s, Supervisor, &[csrr(10, SISELECT)]),
        Outcome::Clean
    );
    assert_eq!(vm.x(10), 0x30);
}

#[test]
fn sireg_from_vs_inaccessible_selects_raise_virtual_instruction() {
    for sel in [0x30, 0x31, 0x3e, 0x3f, 0x70, 0x80, 0xff] {
        for &csr in &SIREGS {
            for body in [[csrr(10, csr)], [csrw(csr, 0)]] {
                let mut vm = Vm::new();
                let s = setup(&mut vm, sel);
                vm.expect_fault(&s, Supervisor, true, &body, 0, VIRTUAL);
            }
        }
    }
}

#[test]
fn sireg_from_vs_reserved_selects_raise_illegal_instruction() {
    for sel in [0x0, 0x2f, 0x40, 0x6f, 0x100, 0x1ff, 0xfff] {
        for &csr in &SIREGS {
            let mut vm = Vm::new();
            let s = setup(&mut vm, sel);
            vm.expect_fault(&s, Supervisor, true, &[csrr(10, csr)], 0, ILLEGAL);
        }
    }
}

#[test]
fn vsireg_from_m_and_hs_is_illegal_for_every_select() {
    for sel in [0x0, 0x30, 0x3f, 0x70, 0xff, 0x100] {
        for &csr in &VSIREGS {
            let mut vm = Vm::new();
            let s = setup(&mut vm, sel);
            vm.expect_fault(&s, Supervisor, false, &[csrr(10, csr)], 0, ILLEGAL);
            let mut vm = Vm::new();
            let mut s = setup(&mut vm, sel);
            s.push(csrr(10, csr));
            let end = vm.code(&s);
            vm.run_to_wfi();
            assert_ne!(vm.hart.pc(), end + 4, "M-mode vsireg at {sel:#x} must trap");
            assert_eq!(vm.mtrap().cause, ILLEGAL);
        }
    }
}

#[test]
fn direct_vs_csrs_from_vs_and_vu() {
    for csr in [VSISELECT, VSIREG, VSIREGS[5]] {
        for mode in [Supervisor, User] {
            let mut vm = Vm::new();
            let s = setup(&mut vm, 0x30);
            vm.expect_fault(&s, mode, true, &[csrr(10, csr)], 0, VIRTUAL);
            // mstateen0.CSRIND = 0: illegal.
            let mut vm = Vm::new();
            let s = set_csrs(&mut vm, &[(MSTATEEN0, ALL & !ST_CSRIND)]);
            vm.expect_fault(&s, mode, true, &[csrr(10, csr)], 0, ILLEGAL);
        }
    }
}

#[test]
fn sireg_from_vu_is_virtual_whatever_the_select() {
    for sel in [0x0, 0x30, 0x100] {
        for csr in [SISELECT, SIREG, SIREGS[3]] {
            let mut vm = Vm::new();
            let s = setup(&mut vm, sel);
            vm.expect_fault(&s, User, true, &[csrr(10, csr)], 0, VIRTUAL);
        }
    }
}

#[test]
fn hs_siselect_window_unchanged() {
    // HS at siselect 0x30 reaches the S-level iprio array (read-only 0).
    let mut vm = Vm::new();
    let s = setup(&mut vm, 0x0);
    assert_eq!(
        vm.run_in_mode(&s, Supervisor, &[csrr(10, SIREG)]),
        Outcome::Clean
    );
}
