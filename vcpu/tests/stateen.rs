//! Smstateen/Ssstateen: `mstateen0-3`, `sstateen0-3`, and the accesses each `mstateen0` bit
//! gates below M-mode (privileged spec, "Smstateen/Ssstateen" chapter; AIA "Access control by
//! the state-enable CSRs"; "Smcsrind/Sscsrind").

mod common;

use common::*;
use vcpu::PrivilegeMode::{Supervisor, User};

const MSTATEEN: [u32; 4] = [0x30C, 0x30D, 0x30E, 0x30F];
const SSTATEEN: [u32; 4] = [0x10C, 0x10D, 0x10E, 0x10F];

/// M-mode code that writes x5 to mstateen0 (and x6 to mstateen1-3).
fn set_stateen(vm: &mut Vm, m0: u64, m123: u64) -> Vec<u32> {
    vm.set_x(5, m0);
    vm.set_x(6, m123);
    vec![
        csrw(MSTATEEN[0], 5),
        csrw(MSTATEEN[1], 6),
        csrw(MSTATEEN[2], 6),
        csrw(MSTATEEN[3], 6),
    ]
}

#[test]
fn mstateen_writable_bits() {
    let mut vm = Vm::new();
    vm.set_x(5, u64::MAX);
    let mut body = vec![];
    for (i, &m) in MSTATEEN.iter().enumerate() {
        body.push(csrw(m, 5));
        body.push(csrr(10 + i as u32, m));
    }
    vm.exec(&body);
    // SE0, ENVCFG, CSRIND, AIA, CTR (the default hart has Smctr), PDIS (Smpdis, provisional
    // bit 53); IMSIC, CONTEXT, P1P13, P1P14, JVT, FCSR, C read 0.
    assert_eq!(
        vm.x(10),
        SE0 | ST_ENVCFG | ST_CSRIND | ST_AIA | (1 << 54) | (1 << 53)
    );
    for i in 11..14 {
        assert_eq!(vm.x(i), SE0, "mstateen{}", i - 10);
    }
    // And back to zero.
    let mut vm = Vm::new();
    vm.set_x(5, u64::MAX);
    vm.exec(&[
        csrw(MSTATEEN[0], 5),
        csrw(MSTATEEN[3], 5),
        csrw(MSTATEEN[0], 0),
        csrr(10, MSTATEEN[0]),
        csrw(MSTATEEN[3], 0),
        csrr(11, MSTATEEN[3]),
    ]);
    assert_eq!((vm.x(10), vm.x(11)), (0, 0));
}

#[test]
fn sstateen_is_read_only_zero_with_every_mstateen_bit_set() {
    // Every sstateen bit controls U-mode state (C, FCSR, JVT), all of which are read-only zero
    // in mstateen0, so no sstateen bit can be set.
    let mut vm = Vm::new();
    let mut setup = set_stateen(&mut vm, u64::MAX, u64::MAX);
    vm.set_x(7, u64::MAX);
    for (i, &s) in SSTATEEN.iter().enumerate() {
        setup.push(csrw(s, 7));
        setup.push(csrr(10 + i as u32, s));
    }
    vm.exec(&setup);
    for i in 10..14 {
        assert_eq!(vm.x(i), 0);
    }
    // From S too.
    let mut vm = Vm::new();
    let setup = set_stateen(&mut vm, u64::MAX, u64::MAX);
    vm.set_x(7, u64::MAX);
    let body: Vec<u32> = SSTATEEN
        .iter()
        .enumerate()
        .flat_map(|(i, &s)| [csrw(s, 7), csrr(10 + i as u32, s)])
        .collect();
    assert_eq!(vm.run_in_mode(&setup, Supervisor, &body), Outcome::Clean);
    for i in 10..14 {
        assert_eq!(vm.x(i), 0);
    }
}

#[test]
fn sstateen_access_from_s_needs_se0_of_the_matching_mstateen() {
    for n in 0..4 {
        for op in [csrr(10, SSTATEEN[n]), csrw(SSTATEEN[n], 0)] {
            // SE0 clear in mstateen{n} only: illegal.
            let mut vm = Vm::new();
            let mut setup = set_stateen(&mut vm, u64::MAX, SE0);
            vm.set_x(8, 0);
            setup.push(csrw(MSTATEEN[n], 8));
            vm.expect_illegal(&setup, Supervisor, &[nop(), op], 1);

            // SE0 set in mstateen{n} only: allowed.
            let mut vm = Vm::new();
            let mut setup = set_stateen(&mut vm, 0, 0);
            vm.set_x(8, SE0);
            setup.push(csrw(MSTATEEN[n], 8));
            assert_eq!(
                vm.run_in_mode(&setup, Supervisor, &[op]),
                Outcome::Clean,
                "sstateen{n}"
            );
        }
    }
}

#[test]
fn stateen_csrs_from_lower_modes() {
    // mstateen* from S: illegal by privilege. sstateen* from U: illegal even with SE0 set.
    let mut vm = Vm::new();
    let setup = set_stateen(&mut vm, u64::MAX, u64::MAX);
    vm.expect_illegal(&setup, Supervisor, &[csrr(10, MSTATEEN[0])], 0);
    let mut vm = Vm::new();
    let setup = set_stateen(&mut vm, u64::MAX, u64::MAX);
    vm.expect_illegal(&setup, User, &[csrr(10, SSTATEEN[0])], 0);
}

#[test]
fn mstateen_does_not_gate_m_mode() {
    // Reset: mstateen all zero; M-mode still reaches everything they gate.
    let mut vm = Vm::new();
    vm.set_x(5, 1);
    vm.exec(&[
        csrr(10, SSTATEEN[0]),
        csrw(SENVCFG, 5),
        csrr(11, SENVCFG),
        csrw(SISELECT, 0),
        csrr(12, STOPI),
        csrr(13, SSTATEEN[3]),
    ]);
    assert_eq!(vm.x(11), 1);
    assert_eq!(vm.csr(MSTATEEN0), 0);
}

#[test]
fn envcfg_bit_gates_senvcfg() {
    for op in [csrr(10, SENVCFG), csrw(SENVCFG, 0), csrrsi(10, SENVCFG, 1)] {
        let mut vm = Vm::new();
        let setup = set_stateen(&mut vm, !ST_ENVCFG, u64::MAX);
        vm.expect_illegal(&setup, Supervisor, &[op], 0);
    }
    let mut vm = Vm::new();
    let setup = set_stateen(&mut vm, ST_ENVCFG, 0);
    vm.set_x(7, u64::MAX);
    let out = vm.run_in_mode(&setup, Supervisor, &[csrw(SENVCFG, 7), csrr(10, SENVCFG)]);
    assert_eq!(out, Outcome::Clean);
    assert_eq!(vm.x(10), 1, "senvcfg: FIOM only");
}

#[test]
fn csrind_bit_gates_siselect_and_every_sireg() {
    let mut regs = vec![SISELECT];
    regs.extend(SIREGS);
    for r in regs {
        let mut vm = Vm::new();
        let setup = set_stateen(&mut vm, !ST_CSRIND, u64::MAX);
        vm.expect_illegal(&setup, Supervisor, &[csrr(10, r)], 0);
    }
    let mut vm = Vm::new();
    let setup = set_stateen(&mut vm, ST_CSRIND, 0);
    vm.set_x(7, 0x123);
    let out = vm.run_in_mode(&setup, Supervisor, &[csrw(SISELECT, 7), csrr(10, SISELECT)]);
    assert_eq!(out, Outcome::Clean);
    assert_eq!(vm.x(10), 0x123);
}

#[test]
fn aia_bit_gates_stopi_and_the_s_level_iprio_array() {
    // stopi.
    let mut vm = Vm::new();
    let setup = set_stateen(&mut vm, !ST_AIA, u64::MAX);
    vm.expect_illegal(&setup, Supervisor, &[csrr(10, STOPI)], 0);
    let mut vm = Vm::new();
    let setup = set_stateen(&mut vm, ST_AIA, 0);
    assert_eq!(
        vm.run_in_mode(&setup, Supervisor, &[csrr(10, STOPI)]),
        Outcome::Clean
    );

    // sireg with siselect = iprio0 (0x30): needs CSRIND and AIA.
    let mut vm = Vm::new();
    let setup = set_stateen(&mut vm, ST_CSRIND, 0);
    vm.set_x(7, 0x30);
    vm.expect_illegal(&setup, Supervisor, &[csrw(SISELECT, 7), csrr(10, SIREG)], 1);
    let mut vm = Vm::new();
    let setup = set_stateen(&mut vm, ST_CSRIND | ST_AIA, 0);
    vm.set_x(7, 0x30);
    vm.set_x(10, 0xdead);
    let out = vm.run_in_mode(&setup, Supervisor, &[csrw(SISELECT, 7), csrr(10, SIREG)]);
    assert_eq!(out, Outcome::Clean);
    assert_eq!(vm.x(10), 0);

    // The AIA bit alone does not open siselect.
    let mut vm = Vm::new();
    let setup = set_stateen(&mut vm, ST_AIA, 0);
    vm.expect_illegal(&setup, Supervisor, &[csrr(10, SISELECT)], 0);
}

#[test]
fn sstateen_reads_through_the_mstateen_mask_constants() {
    // The library's constants agree with the spec's bit positions.
    use vcpu::csr::stateen::*;
    assert_eq!(STATEEN_SE0, 1 << 63);
    assert_eq!(STATEEN0_ENVCFG, 1 << 62);
    assert_eq!(STATEEN0_CSRIND, 1 << 60);
    assert_eq!(STATEEN0_AIA, 1 << 59);
    assert_eq!(STATEEN0_IMSIC, 1 << 58);
    assert_eq!(STATEEN0_CONTEXT, 1 << 57);
    assert_eq!(STATEEN0_CTR, 1 << 54);
    assert_eq!(STATEEN0_FCSR, 1 << 1);
    assert_eq!(STATEEN0_C, 1);
    let ro = STATEEN0_IMSIC
        | STATEEN0_CONTEXT
        | STATEEN0_P1P13
        | STATEEN0_P1P14
        | STATEEN0_JVT
        | STATEEN0_FCSR
        | STATEEN0_C;
    assert_eq!(MSTATEEN_WRITABLE[0] & ro, 0);
    assert!(SSTATEEN_IMPLEMENTED.iter().all(|&m| m >> 32 == 0));
}
