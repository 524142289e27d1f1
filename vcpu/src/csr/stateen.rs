//! Smstateen/Ssstateen: `mstateen0-3` and `sstateen0-3` (privileged spec, "Smstateen/Ssstateen"
//! chapter).
//!
//! Each `mstateen` bit gates access from S- and U-mode to some state; M-mode is never
//! affected. Bit 63 (SE0) of `mstateen{n}` gates `sstateen{n}` itself. An `sstateen` bit can be
//! set only where the matching `mstateen` bit is one; `sstateen` bits only control U-mode
//! state (bits 31:0; the upper half is reserved).
//!
//! Implemented `mstateen0` bits: SE0, ENVCFG (`senvcfg`), CSRIND (`siselect`/`sireg*`), AIA
//! (`stopi` and the S-level `iprio` array). Read-only zero: IMSIC (no IMSIC), CONTEXT (no
//! Sdtrig), P1P13 (RV32 + H only), P1P14 (no Ssqosid), CTR (arrives with Smctr), JVT (no Zcmt),
//! FCSR (F is implemented, so the spec requires 0), C (no custom state). `mstateen1-3`: only
//! SE0. Since every `mstateen` bit with a U-level meaning (C, FCSR, JVT) is read-only zero,
//! every `sstateen` register currently reads zero; [`SSTATEEN_IMPLEMENTED`] lists the bits that
//! will become writable as extensions with U-level state arrive.
//!
//! With the hypervisor extension, `hstateen0-3` slot in between: the checks below take the
//! `mstateen` bit and will also consult `hstateen` when V = 1.

use super::{CsrDesc, CsrFault};
use crate::hart::{Hart, PrivilegeMode};

/// Bit 63 of every `mstateen{n}`: access to `sstateen{n}` (and later `hstateen{n}`).
pub const STATEEN_SE0: u64 = 1 << 63;
/// `mstateen0.ENVCFG`: `senvcfg` (and later `henvcfg`).
pub const STATEEN0_ENVCFG: u64 = 1 << 62;
/// `mstateen0.CSRIND`: `siselect`, `sireg*` (and later `vsiselect`, `vsireg*`).
pub const STATEEN0_CSRIND: u64 = 1 << 60;
/// `mstateen0.AIA`: AIA state not covered by CSRIND or IMSIC (`stopi`, the S-level `iprio`
/// array; later the hypervisor's AIA CSRs).
pub const STATEEN0_AIA: u64 = 1 << 59;
/// `mstateen0.IMSIC`: read-only zero (no IMSIC).
pub const STATEEN0_IMSIC: u64 = 1 << 58;
/// `mstateen0.CONTEXT`: read-only zero (no Sdtrig `scontext`/`hcontext`).
pub const STATEEN0_CONTEXT: u64 = 1 << 57;
/// `mstateen0.P1P13`: read-only zero (`hedelegh` exists only for RV32 with H).
pub const STATEEN0_P1P13: u64 = 1 << 56;
/// `mstateen0.P1P14`: read-only zero (no Ssqosid `srmcfg`).
pub const STATEEN0_P1P14: u64 = 1 << 55;
/// `mstateen0.CTR`: read-only zero until Smctr/Ssctr is implemented.
pub const STATEEN0_CTR: u64 = 1 << 54;
/// `mstateen0.JVT`: read-only zero (no Zcmt).
pub const STATEEN0_JVT: u64 = 1 << 2;
/// `mstateen0.FCSR`: read-only zero because `misa.F` = 1.
pub const STATEEN0_FCSR: u64 = 1 << 1;
/// `mstateen0.C`: read-only zero (no custom state).
pub const STATEEN0_C: u64 = 1 << 0;

/// Writable bits of `mstateen0-3`.
pub const MSTATEEN_WRITABLE: [u64; 4] = [
    STATEEN_SE0 | STATEEN0_ENVCFG | STATEEN0_CSRIND | STATEEN0_AIA,
    STATEEN_SE0,
    STATEEN_SE0,
    STATEEN_SE0,
];

/// Bits of `sstateen0-3` that exist (then writable when the `mstateen` bit is one). Only bits
/// 31:0 can ever be used; none is implemented yet (C, FCSR and JVT are read-only zero).
pub const SSTATEEN_IMPLEMENTED: [u64; 4] = [0; 4];

/// Access below M-mode to state gated by bit `bit` of `mstateen{n}`.
pub(crate) fn stateen_allows(h: &Hart, n: usize, bit: u64) -> bool {
    h.prv == PrivilegeMode::Machine || h.csr.mstateen[n] & bit != 0
}

fn gate(h: &Hart, n: usize, bit: u64) -> Result<(), CsrFault> {
    if stateen_allows(h, n, bit) {
        Ok(())
    } else {
        Err(CsrFault::Illegal)
    }
}

/// `senvcfg`: `mstateen0.ENVCFG`.
pub(super) fn envcfg_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    gate(h, 0, STATEEN0_ENVCFG)
}

/// `siselect`, `sireg*`: `mstateen0.CSRIND`.
pub(super) fn csrind_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    gate(h, 0, STATEEN0_CSRIND)
}

/// `stopi` and the S-level `iprio` array: `mstateen0.AIA`.
pub(super) fn aia_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    gate(h, 0, STATEEN0_AIA)
}

impl Hart {
    fn read_sstateen(&self, n: usize) -> u64 {
        self.csr.sstateen[n] & self.csr.mstateen[n] & SSTATEEN_IMPLEMENTED[n]
    }

    fn write_sstateen(&mut self, n: usize, v: u64) {
        // Bits whose mstateen bit is zero are read-only zero: they keep their stored value
        // (invisible) rather than being written.
        let m = self.csr.mstateen[n] & SSTATEEN_IMPLEMENTED[n];
        self.csr.sstateen[n] = (self.csr.sstateen[n] & !m) | (v & m);
    }
}

macro_rules! stateen_pair {
    ($n:expr, $mnum:expr, $mname:expr, $snum:expr, $sname:expr) => {
        (
            csr!(
                $snum,
                $sname,
                |h, _| gate(h, $n, STATEEN_SE0),
                |h| h.read_sstateen($n),
                Some(|h, v| h.write_sstateen($n, v))
            ),
            csr!(
                $mnum,
                $mname,
                super::ok,
                |h| h.csr.mstateen[$n],
                Some(|h, v| h.csr.mstateen[$n] = v & MSTATEEN_WRITABLE[$n])
            ),
        )
    };
}

const P0: (CsrDesc, CsrDesc) = stateen_pair!(0, 0x30c, "mstateen0", 0x10c, "sstateen0");
const P1: (CsrDesc, CsrDesc) = stateen_pair!(1, 0x30d, "mstateen1", 0x10d, "sstateen1");
const P2: (CsrDesc, CsrDesc) = stateen_pair!(2, 0x30e, "mstateen2", 0x10e, "sstateen2");
const P3: (CsrDesc, CsrDesc) = stateen_pair!(3, 0x30f, "mstateen3", 0x10f, "sstateen3");

/// The stateen CSRs, sorted by number.
pub(super) static TABLE: &[CsrDesc] = &[P0.0, P1.0, P2.0, P3.0, P0.1, P1.1, P2.1, P3.1];
