//! Smcsrind/Sscsrind: `miselect`/`mireg*` and `siselect`/`sireg*`, with the AIA `iprio`
//! arrays (read-only zero) as the only registered select values (privileged spec,
//! "Smcsrind/Sscsrind"; AIA "CSRs" and "Configuring priorities of major interrupts").

mod common;

use common::*;
use vcpu::csr::indirect::{lookup_ireg, Window};
use vcpu::PrivilegeMode::{Supervisor, User};

/// M-mode: select `sel` in `iselect`, then run `op`; returns whether it trapped.
fn m_access(iselect: u32, sel: u64, op: u32) -> Option<Trap> {
    let mut vm = Vm::new();
    vm.set_x(5, sel);
    vm.set_x(6, u64::MAX);
    let end = vm.code(&[csrw(iselect, 5), op]);
    vm.run_to_wfi();
    if vm.hart.pc() == end + 4 {
        None
    } else {
        assert_eq!(vm.hart.pc(), TRAP + 4);
        Some(vm.mtrap())
    }
}

#[test]
fn iselect_is_warl_0_to_0xfff() {
    for (sel, reg) in [(MISELECT, 10), (SISELECT, 11)] {
        let mut vm = Vm::new();
        vm.set_x(5, u64::MAX);
        vm.set_x(6, 0xabc);
        vm.exec(&[
            csrw(sel, 5),
            csrr(reg, sel),
            csrw(sel, 6),
            csrr(12, sel),
            csrw(sel, 0),
            csrr(13, sel),
        ]);
        assert_eq!(vm.x(reg as usize), 0xfff);
        assert_eq!(vm.x(12), 0xabc);
        assert_eq!(vm.x(13), 0);
    }
}

#[test]
fn iprio_array_is_read_only_zero_at_even_selects() {
    for (iselect, ireg) in [(MISELECT, MIREG), (SISELECT, SIREG)] {
        for sel in (0x30..=0x3e).step_by(2) {
            let mut vm = Vm::new();
            vm.set_x(5, sel);
            vm.set_x(6, u64::MAX);
            vm.set_x(10, 0xdead);
            vm.exec(&[
                csrw(iselect, 5),
                csrw(ireg, 6),
                csrr(10, ireg),
                csrrs(11, ireg, 6),
            ]);
            assert_eq!((vm.x(10), vm.x(11)), (0, 0), "select {sel:#x}");
        }
    }
}

#[test]
fn unimplemented_select_values_raise_illegal_instruction() {
    // Odd iprio numbers do not exist on RV64; reserved ranges; IMSIC range without an IMSIC;
    // beyond 0xFF.
    for (iselect, ireg) in [(MISELECT, MIREG), (SISELECT, SIREG)] {
        for sel in [
            0x0, 0x2f, 0x31, 0x33, 0x3f, 0x40, 0x6f, 0x70, 0xff, 0x100, 0xfff,
        ] {
            for op in [csrr(10, ireg), csrw(ireg, 6), csrrs(10, ireg, 0)] {
                assert_eq!(
                    m_access(iselect, sel, op),
                    Some(Trap {
                        cause: 2,
                        epc: CODE + 4,
                        tval: op as u64
                    }),
                    "select {sel:#x} op {op:08x}"
                );
            }
        }
    }
}

#[test]
fn ireg2_to_ireg6_are_illegal_for_the_iprio_array() {
    for (iselect, regs) in [(MISELECT, MIREGS), (SISELECT, SIREGS)] {
        for &r in &regs[1..] {
            for sel in [0x30, 0x32, 0x3e] {
                let op = csrr(10, r);
                assert_eq!(
                    m_access(iselect, sel, op),
                    Some(Trap {
                        cause: 2,
                        epc: CODE + 4,
                        tval: op as u64
                    }),
                    "{r:#x} at {sel:#x}"
                );
            }
        }
    }
}

#[test]
fn window_csrs_from_lower_modes() {
    // mi* from S: privilege. si* from U: privilege, even with mstateen0.CSRIND set.
    for r in [MISELECT, MIREG, 0x357] {
        let mut vm = Vm::new();
        vm.expect_illegal(&[], Supervisor, &[csrr(10, r)], 0);
    }
    for r in [SISELECT, SIREG, 0x157] {
        let mut vm = Vm::new();
        vm.set_x(5, u64::MAX);
        vm.expect_illegal(&[csrw(MSTATEEN0, 5)], User, &[csrr(10, r)], 0);
    }
}

#[test]
fn s_mode_sireg_follows_siselect() {
    let mut vm = Vm::new();
    vm.set_x(5, u64::MAX);
    vm.set_x(7, 0x3c);
    vm.set_x(8, 0x3d);
    vm.set_x(10, 1);
    let setup = [csrw(MSTATEEN0, 5)];
    // Even: reads 0, writes ignored.
    let out = vm.run_in_mode(
        &setup,
        Supervisor,
        &[csrw(SISELECT, 7), csrw(SIREG, 5), csrr(10, SIREG)],
    );
    assert_eq!(out, Outcome::Clean);
    assert_eq!(vm.x(10), 0);
    // Odd: illegal; mireg and siselect are independent.
    let mut vm = Vm::new();
    vm.set_x(5, u64::MAX);
    vm.set_x(8, 0x3d);
    vm.expect_illegal(
        &[csrw(MSTATEEN0, 5), csrw(MISELECT, 0)],
        Supervisor,
        &[csrw(SISELECT, 8), csrr(10, SIREG)],
        1,
    );
    assert_eq!(vm.csr(SISELECT), 0x3d);
    assert_eq!(vm.csr(MISELECT), 0);
}

#[test]
fn indirect_register_table() {
    // The table knows iprio through xireg only, at both levels.
    for w in [Window::Machine, Window::Supervisor] {
        assert_eq!(lookup_ireg(w, 0x30, 1).map(|d| d.name), Some("iprio"));
        assert_eq!(lookup_ireg(w, 0x3f, 1).map(|d| d.name), Some("iprio"));
        assert!(lookup_ireg(w, 0x2f, 1).is_none());
        for i in 2..=6 {
            assert!(lookup_ireg(w, 0x30, i).is_none());
        }
    }
    // Counter delegation (0x40-0x5F) and the PDIS record (0x60/0x61) are S-level only.
    assert!(lookup_ireg(Window::Machine, 0x40, 1).is_none());
    assert_eq!(
        lookup_ireg(Window::Supervisor, 0x5f, 2).map(|d| d.name),
        Some("delegated event selector")
    );
    assert_eq!(
        lookup_ireg(Window::VirtualSupervisor, 0x61, 6).map(|d| d.name),
        Some("pdisadr2")
    );
    assert!(lookup_ireg(Window::Supervisor, 0x62, 1).is_none());
}
