//! Smstateen/Ssstateen: `mstateen0-3` and `sstateen0-3` (privileged spec, "Smstateen/Ssstateen"
//! chapter).
//!
//! Each `mstateen` bit gates access from S- and U-mode to some state; M-mode is never
//! affected. Bit 63 (SE0) of `mstateen{n}` gates `sstateen{n}` itself. An `sstateen` bit can be
//! set only where the matching `mstateen` bit is one; `sstateen` bits only control U-mode
//! state (bits 31:0; the upper half is reserved).
//!
//! Implemented `mstateen0` bits: SE0, ENVCFG (`senvcfg`), CSRIND (`siselect`/`sireg*`), AIA
//! (`stopi` and the S-level `iprio` array), CTR (Smctr chapter 5
//! "State Enable Access Control"; read-only zero on a hart configured without Smctr), PDIS
//! (Smpdis, draft: bit 53 provisionally, see `pmu::DraftNumbers`), IMSIC (only on a hart
//! with an IMSIC: `stopei`, `vstopei` and select 0x70-0xFF, see `imsic`; in `hstateen0` too,
//! for the guest file's `vstopei`/`vsireg`). Read-only zero: CONTEXT (no Sdtrig), P1P13 (RV32 + H only), P1P14 (no Ssqosid), JVT (no
//! Zcmt), FCSR (F is implemented, so the spec requires 0), C (no custom state).
//! `mstateen1-3`: only SE0. Since every `mstateen` bit with a U-level meaning (C, FCSR,
//! JVT) is read-only zero, every `sstateen` register currently reads zero;
//! [`SSTATEEN_IMPLEMENTED`] lists the bits that will become writable as extensions with
//! U-level state arrive.
//!
//! With the hypervisor extension, `hstateen0-3` (0x60C-0x60F) slot in between. An `hstateen`
//! bit exists (is writable) only where the `mstateen` bit is one and the hart implements the
//! state ([`HSTATEEN_IMPLEMENTED`]); elsewhere it reads zero. Accesses from VS/VU to state
//! whose `mstateen` bit is zero raise illegal-instruction; to state whose `mstateen` bit is
//! one but `hstateen` bit zero, virtual-instruction. `hstateen{n}.SE0` gates `sstateen{n}` from
//! VS; `hstateen0.ENVCFG` gates `senvcfg`, `CSRIND` `siselect`/`sireg*` (really `vsiselect`/
//! `vsireg*`), `AIA` `stopi` (really `vstopi`). `mstateen0.ENVCFG` also gates `henvcfg`,
//! `CSRIND` `vsiselect`/`vsireg*`, `AIA` `hvien`, `hvictl`, `hviprio1/2` and `vstopi`, and
//! `mstateen{n}.SE0` `hstateen{n}`, from HS-mode.

use super::desc::{CsrDesc, CsrFault};
use crate::hart::{Hart, PrivilegeMode};
use vcpu_api::csr as num;

pub use vcpu_api::csr::{
    STATEEN0_AIA, STATEEN0_C, STATEEN0_CONTEXT, STATEEN0_CSRIND, STATEEN0_CTR, STATEEN0_ENVCFG,
    STATEEN0_FCSR, STATEEN0_IMSIC, STATEEN0_JVT, STATEEN0_P1P13, STATEEN0_P1P14, STATEEN_SE0,
};

/// Writable bits of `mstateen0-3`.
pub const MSTATEEN_WRITABLE: [u64; 4] = [
    STATEEN_SE0 | STATEEN0_ENVCFG | STATEEN0_CSRIND | STATEEN0_AIA | STATEEN0_CTR,
    STATEEN_SE0,
    STATEEN_SE0,
    STATEEN_SE0,
];

/// Bits of `sstateen0-3` that exist (then writable when the `mstateen` bit is one). Only bits
/// 31:0 can ever be used; none is implemented yet (C, FCSR and JVT are read-only zero).
pub const SSTATEEN_IMPLEMENTED: [u64; 4] = [0; 4];

/// Bits of `hstateen0-3` that exist (then writable when the `mstateen` bit is one). IMSIC
/// exists only on a hart with an IMSIC (added by `hstateen_implemented`); CONTEXT, JVT, FCSR and C are read-only zero as in `mstateen0` (P1P13 and P1P14 do not
/// exist in `hstateen0`); CTR exists when the hart has Smctr.
pub const HSTATEEN_IMPLEMENTED: [u64; 4] = [
    STATEEN_SE0 | STATEEN0_ENVCFG | STATEEN0_CSRIND | STATEEN0_AIA | STATEEN0_CTR,
    STATEEN_SE0,
    STATEEN_SE0,
    STATEEN_SE0,
];

/// Whether HS-mode could access state gated by `mstateen{n}` bit `bit` (decides between
/// virtual- and illegal-instruction for VS/VU accesses to higher-level CSRs).
pub(crate) fn hs_allowed(h: &Hart, n: usize, bit: u64) -> bool {
    h.csr.mstateen[n] & bit != 0
}

/// The `stateen` gate for access below M-mode (M-mode is never affected): illegal when the `mstateen` bit is 0 (below M); virtual-instruction
/// when V = 1 and the `hstateen` bit is 0.
pub(crate) fn gate(h: &Hart, n: usize, bit: u64) -> Result<(), CsrFault> {
    if h.prv == PrivilegeMode::Machine {
        Ok(())
    } else if h.csr.mstateen[n] & bit == 0 {
        Err(CsrFault::Illegal)
    } else if h.virt && h.read_hstateen(n) & bit == 0 {
        Err(CsrFault::Virtual)
    } else {
        Ok(())
    }
}

/// `henvcfg` from HS-mode: `mstateen0.ENVCFG` (VS-mode never reaches this check).
pub(crate) fn henvcfg_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    gate(h, 0, STATEEN0_ENVCFG)
}

/// `senvcfg`: `mstateen0.ENVCFG`.
pub(super) fn envcfg_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    gate(h, 0, STATEEN0_ENVCFG)
}

/// `siselect`, `sireg*`: `mstateen0.CSRIND`.
///
/// (The IMSIC's own rules, `mstateen0.IMSIC` and `hstateen0.IMSIC`, are in `imsic`.)
pub(super) fn csrind_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    gate(h, 0, STATEEN0_CSRIND)
}

/// `stopi` and the S-level `iprio` array: `mstateen0.AIA`.
pub(super) fn aia_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    gate(h, 0, STATEEN0_AIA)
}

impl Hart {
    /// The `sstateen{n}` bits that exist now: those set in `mstateen{n}` and, from VS-mode,
    /// in `hstateen{n}`.
    fn sstateen_mask(&self, n: usize) -> u64 {
        let mut m = self.csr.mstateen[n] & SSTATEEN_IMPLEMENTED[n];
        if self.virt {
            m &= self.read_hstateen(n);
        }
        m
    }

    fn read_sstateen(&self, n: usize) -> u64 {
        self.csr.sstateen[n] & self.sstateen_mask(n)
    }

    fn write_sstateen(&mut self, n: usize, v: u64) {
        // Bits whose mstateen bit is zero are read-only zero: they keep their stored value
        // (invisible) rather than being written.
        let m = self.sstateen_mask(n);
        self.csr.sstateen[n] = (self.csr.sstateen[n] & !m) | (v & m);
    }

    /// `hstateen{n}`: bits read zero where `mstateen{n}` is zero.
    pub(crate) fn read_hstateen(&self, n: usize) -> u64 {
        self.csr.hstateen[n] & self.csr.mstateen[n] & self.hstateen_implemented(n)
    }

    /// Writable `mstateen{n}` bits on this hart: CTR only with Smctr; PDIS (Smpdis) at its
    /// configured bit.
    fn mstateen_writable(&self, n: usize) -> u64 {
        let mut m = MSTATEEN_WRITABLE[n];
        if !self.ctr.implemented() {
            m &= !STATEEN0_CTR;
        }
        if n == 0 && self.imsic.present() {
            m |= STATEEN0_IMSIC;
        }
        if n == 0 {
            m |= self.pmu.stateen_bit();
        }
        m
    }

    /// `hstateen{n}` bits that exist on this hart.
    fn hstateen_implemented(&self, n: usize) -> u64 {
        if n == 0 {
            let imsic = if self.imsic.present() {
                STATEEN0_IMSIC
            } else {
                0
            };
            HSTATEEN_IMPLEMENTED[0] | self.pmu.stateen_bit() | imsic
        } else {
            HSTATEEN_IMPLEMENTED[n]
        }
    }

    fn write_hstateen(&mut self, n: usize, v: u64) {
        let m = self.csr.mstateen[n] & self.hstateen_implemented(n);
        self.csr.hstateen[n] = (self.csr.hstateen[n] & !m) | (v & m);
    }
}

macro_rules! stateen_set {
    ($n:expr, $mnum:expr, $hnum:expr, $snum:expr) => {
        (
            csr!(
                $snum,
                |h, _| gate(h, $n, STATEEN_SE0),
                |h| h.read_sstateen($n),
                Some(|h, v| h.write_sstateen($n, v))
            ),
            csr!(
                $mnum,
                super::desc::ok,
                |h| h.csr.mstateen[$n],
                Some(|h, v| h.csr.mstateen[$n] = v & h.mstateen_writable($n))
            ),
            csr!(
                $hnum,
                |h, _| gate(h, $n, STATEEN_SE0),
                |h| h.read_hstateen($n),
                Some(|h, v| h.write_hstateen($n, v))
            ),
        )
    };
}

type Set = (CsrDesc, CsrDesc, CsrDesc);
const P0: Set = stateen_set!(0, num::MSTATEEN0, num::HSTATEEN0, num::SSTATEEN0);
const P1: Set = stateen_set!(1, num::MSTATEEN1, num::HSTATEEN1, num::SSTATEEN1);
const P2: Set = stateen_set!(2, num::MSTATEEN2, num::HSTATEEN2, num::SSTATEEN2);
const P3: Set = stateen_set!(3, num::MSTATEEN3, num::HSTATEEN3, num::SSTATEEN3);

/// The stateen CSRs, sorted by number.
pub(super) static TABLE: &[CsrDesc] = &[
    P0.0, P1.0, P2.0, P3.0, P0.1, P1.1, P2.1, P3.1, P0.2, P1.2, P2.2, P3.2,
];
