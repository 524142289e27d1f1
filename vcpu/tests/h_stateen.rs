//! Smstateen with the H extension: `hstateen0-3` and the VS/VU access rules (privileged spec,
//! "Smstateen/Ssstateen"; Sscsrind and AIA "Access control by the state-enable CSRs"):
//! a zero `mstateen` bit means illegal-instruction, a one in `mstateen` with a zero in
//! `hstateen` virtual-instruction.

mod common;

use common::*;
use vcpu::PrivilegeMode::{Supervisor, User};

const ALL: u64 = SE0 | ST_ENVCFG | ST_CSRIND | ST_AIA | CTR | PDIS;
const CTR: u64 = 1 << 54;
/// Smpdis (draft): the provisional bit.
const PDIS: u64 = 1 << 53;

/// Run `body` in `mode` with V = `virt` after setting `mstateen0` = `m0`, `hstateen0` = `h0`
/// (and `mstateen1-3`/`hstateen1-3` = the SE0 bit of `m0`/`h0`); `None` expects a clean finish, `Some(c)` a trap
/// with cause `c` at the body's last instruction.
fn check(
    m0: u64,
    h0: u64,
    mode: vcpu::PrivilegeMode,
    virt: bool,
    body: &[u32],
    expect: Option<u64>,
) {
    let mut vm = Vm::new();
    let setup = set_csrs(
        &mut vm,
        &[
            (MSTATEEN0, m0),
            (0x30D, m0 & SE0),
            (0x30E, m0 & SE0),
            (0x30F, m0 & SE0),
            (HSTATEEN0, h0),
            (0x60D, h0 & SE0),
            (0x60E, h0 & SE0),
            (0x60F, h0 & SE0),
            (MENVCFG, STCE),
            (MCOUNTEREN, 2),
        ],
    );
    match expect {
        None => {
            let out = if virt {
                vm.run_in_vmode(&setup, mode, body)
            } else {
                vm.run_in_mode(&setup, mode, body)
            };
            assert_eq!(out, Outcome::Clean, "{mode:?} V={virt} {body:08x?}");
        }
        Some(cause) => vm.expect_fault(&setup, mode, virt, body, body.len() - 1, cause),
    }
}

#[test]
fn hstateen_bits_exist_where_mstateen_bits_are_one() {
    let mut vm = Vm::new();
    let mut body = set_csrs(
        &mut vm,
        &[
            (MSTATEEN0, u64::MAX),
            (0x30D, u64::MAX),
            (0x30E, u64::MAX),
            (0x30F, u64::MAX),
        ],
    );
    vm.set_x(20, u64::MAX);
    for (i, &h) in HSTATEEN.iter().enumerate() {
        body.push(csrw(h, 20));
        body.push(csrr(10 + i as u32, h));
    }
    // mstateen0.ENVCFG cleared: hstateen0.ENVCFG reads 0, and comes back (kept) when set.
    vm.set_x(21, ST_ENVCFG);
    body.extend([
        csrrc(0, MSTATEEN0, 21),
        csrr(14, HSTATEEN0),
        csrrs(0, MSTATEEN0, 21),
        csrr(15, HSTATEEN0),
        // And a write while mstateen0.ENVCFG = 0 does not change the hidden bit.
        csrrc(0, MSTATEEN0, 21),
        csrw(HSTATEEN0, 0),
        csrrs(0, MSTATEEN0, 21),
        csrr(16, HSTATEEN0),
    ]);
    vm.exec(&body);
    assert_eq!(
        vm.x(10),
        ALL,
        "SE0, ENVCFG, CSRIND, AIA, CTR (54), PDIS (53, provisional); the rest read 0"
    );
    for i in 11..14 {
        assert_eq!(vm.x(i), SE0, "hstateen{}", i - 10);
    }
    assert_eq!(vm.x(14), ALL & !ST_ENVCFG);
    assert_eq!(vm.x(15), ALL);
    assert_eq!(vm.x(16), ST_ENVCFG);

    // With mstateen0 = 0, hstateen0 reads 0.
    let mut vm = Vm::new();
    vm.set_x(5, u64::MAX);
    vm.exec(&[csrw(HSTATEEN0, 5), csrr(10, HSTATEEN0)]);
    assert_eq!(vm.x(10), 0);
}

#[test]
fn hstateen_from_hs_needs_mstateen_se0() {
    for h in HSTATEEN {
        let body = [csrr(10, h)];
        check(0, 0, Supervisor, false, &body, Some(ILLEGAL));
        check(ALL, 0, Supervisor, false, &body, None);
    }
    // From VS: a hypervisor CSR, so virtual-instruction while HS could access it.
    check(
        ALL,
        ALL,
        Supervisor,
        true,
        &[csrr(10, HSTATEEN0)],
        Some(VIRTUAL),
    );
    check(
        ALL & !SE0,
        ALL,
        Supervisor,
        true,
        &[csrr(10, HSTATEEN0)],
        Some(ILLEGAL),
    );
}

#[test]
fn sstateen_from_vs_and_vu() {
    let body = [csrr(10, SSTATEEN0)];
    check(0, 0, Supervisor, true, &body, Some(ILLEGAL));
    check(ALL, ALL & !SE0, Supervisor, true, &body, Some(VIRTUAL));
    check(ALL, ALL, Supervisor, true, &body, None);
    // Still read-only zero from VS.
    check(ALL, ALL, Supervisor, true, &[csrw(SSTATEEN0, 5)], None);
    // VU: an S-level CSR, virtual-instruction while HS could access it.
    check(ALL, ALL, User, true, &body, Some(VIRTUAL));
    check(ALL & !SE0, ALL, User, true, &body, Some(ILLEGAL));
    // HS is not affected by hstateen.
    check(ALL, 0, Supervisor, false, &body, None);
}

#[test]
fn senvcfg_from_vs_and_henvcfg_from_hs() {
    let senv = [csrr(10, SENVCFG)];
    check(
        ALL & !ST_ENVCFG,
        ALL,
        Supervisor,
        true,
        &senv,
        Some(ILLEGAL),
    );
    check(
        ALL,
        ALL & !ST_ENVCFG,
        Supervisor,
        true,
        &senv,
        Some(VIRTUAL),
    );
    check(ALL, ALL, Supervisor, true, &senv, None);
    check(ALL, ALL, User, true, &senv, Some(VIRTUAL));
    check(ALL & !ST_ENVCFG, ALL, User, true, &senv, Some(ILLEGAL));
    let henv = [csrr(10, HENVCFG)];
    check(
        ALL & !ST_ENVCFG,
        ALL,
        Supervisor,
        false,
        &henv,
        Some(ILLEGAL),
    );
    check(ALL, 0, Supervisor, false, &henv, None);
    check(ALL, ALL, Supervisor, true, &henv, Some(VIRTUAL));
    check(
        ALL & !ST_ENVCFG,
        ALL,
        Supervisor,
        true,
        &henv,
        Some(ILLEGAL),
    );
}

#[test]
fn csrind_from_vs_and_vu() {
    for csr in [SISELECT, SIREG, SIREGS[1], SIREGS[5]] {
        let body = [csrr(10, csr)];
        check(
            ALL & !ST_CSRIND,
            ALL,
            Supervisor,
            true,
            &body,
            Some(ILLEGAL),
        );
        // Whatever vsiselect holds (0 is reserved and would be illegal otherwise).
        check(
            ALL,
            ALL & !ST_CSRIND,
            Supervisor,
            true,
            &body,
            Some(VIRTUAL),
        );
        check(ALL, ALL & !ST_CSRIND, User, true, &body, Some(VIRTUAL));
        check(ALL & !ST_CSRIND, ALL, User, true, &body, Some(ILLEGAL));
    }
    check(ALL, ALL, Supervisor, true, &[csrr(10, SISELECT)], None);
    // vsiselect/vsireg from HS.
    check(
        ALL & !ST_CSRIND,
        0,
        Supervisor,
        false,
        &[csrr(10, VSISELECT)],
        Some(ILLEGAL),
    );
    check(ALL, 0, Supervisor, false, &[csrr(10, VSISELECT)], None);
}

#[test]
fn aia_from_vs_and_hs() {
    let stopi = [csrr(10, STOPI)];
    check(ALL & !ST_AIA, ALL, Supervisor, true, &stopi, Some(ILLEGAL));
    check(ALL, ALL & !ST_AIA, Supervisor, true, &stopi, Some(VIRTUAL));
    check(ALL, ALL, Supervisor, true, &stopi, None);
    check(ALL, ALL, User, true, &stopi, Some(VIRTUAL));
    check(ALL & !ST_AIA, ALL, User, true, &stopi, Some(ILLEGAL));
    for csr in [HVIEN, HVICTL, HVIPRIO1, HVIPRIO2, VSTOPI] {
        let body = [csrr(10, csr)];
        check(ALL & !ST_AIA, 0, Supervisor, false, &body, Some(ILLEGAL));
        check(ALL, 0, Supervisor, false, &body, None);
        check(ALL, ALL, Supervisor, true, &body, Some(VIRTUAL));
        check(ALL & !ST_AIA, ALL, Supervisor, true, &body, Some(ILLEGAL));
    }
    // hstateen0.AIA does not gate the hypervisor's own CSRs.
    check(ALL, 0, Supervisor, false, &[csrr(10, HVICTL)], None);
}

#[test]
fn m_mode_is_never_affected() {
    check(
        0,
        0,
        vcpu::PrivilegeMode::Machine,
        false,
        &[
            csrr(10, HSTATEEN0),
            csrr(10, HVICTL),
            csrr(10, VSTOPI),
            csrr(10, VSISELECT),
            csrr(10, HENVCFG),
        ],
        None,
    );
}
