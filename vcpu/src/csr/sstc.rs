//! Sstc: the supervisor timer compare registers `stimecmp` and, with the H extension,
//! `vstimecmp` (privileged spec, "Sstc" chapter and the `menvcfg.STCE`, `henvcfg.STCE`,
//! `mcounteren.TM`, `hcounteren.TM` and `stimecmp`/`vstimecmp` sections).
//!
//! - `menvcfg.STCE` = 1: `mip.STIP` is `time >= stimecmp` (unsigned) and read-only in `mip`
//!   (and so in `mvip`, where bit 5 reads 0); the software-written STIP bit is kept but
//!   ignored, and takes effect again when STCE returns to 0.
//! - `menvcfg.STCE` = 0: `stimecmp` and `vstimecmp` are illegal below M-mode; STIP is
//!   software-writable as in the base privileged architecture; `henvcfg.STCE` reads 0.
//! - `mcounteren.TM` = 0: `stimecmp` and `vstimecmp` are illegal below M-mode.
//! - With V = 1, `stimecmp` is `vstimecmp`; `henvcfg.STCE` = 0 or `hcounteren.TM` = 0 makes
//!   the access raise virtual-instruction (when the two rules above allow it); so does a
//!   write while `hvictl.VTI` = 1 (AIA: a `vstimecmp` write can clear `vsip.STIP`).
//! - `henvcfg.STCE` = 1 (writable only while `menvcfg.STCE` = 1): `hip.VSTIP` (and
//!   `mip.VSTIP`) is `hvip.VSTIP` OR `time + htimedelta >= vstimecmp`.
//! - M-mode can always access both registers; HS-mode `vstimecmp` under the first two rules.

use super::desc::{CsrDesc, CsrFault, ENVCFG_FIOM, MENVCFG_STCE};
use crate::hart::{Hart, PrivilegeMode};
use vcpu_api::csr as num;

/// `mcounteren.TM` (and `hcounteren.TM`).
const COUNTEREN_TM: u64 = 1 << 1;
/// `henvcfg.STCE`.
pub const HENVCFG_STCE: u64 = 1 << 63;

impl Hart {
    /// Whether Sstc's `stimecmp` drives STIP (`menvcfg.STCE`).
    #[inline]
    pub(crate) fn stce(&self) -> bool {
        self.csr.menvcfg & MENVCFG_STCE != 0
    }

    /// Whether `vstimecmp` drives VSTIP (`henvcfg.STCE`, which reads 0 while
    /// `menvcfg.STCE` = 0).
    #[inline]
    pub(crate) fn vstce(&self) -> bool {
        self.stce() && self.csr.h.henvcfg & HENVCFG_STCE != 0
    }

    /// The S-level timer signal from `stimecmp`: `time >= stimecmp`.
    #[inline]
    pub(crate) fn stimecmp_signal(&self) -> bool {
        self.mtime() >= self.csr.stimecmp
    }

    /// The VS-level timer signal from `vstimecmp`: `time + htimedelta >= vstimecmp`.
    #[inline]
    pub(crate) fn vstimecmp_signal(&self) -> bool {
        self.vstce() && self.mtime().wrapping_add(self.csr.h.htimedelta) >= self.csr.vstimecmp
    }

    /// Writable `henvcfg` bits: FIOM, and STCE while `menvcfg.STCE` = 1. PDISV (Smpdis
    /// "Hypervisor Environment Configuration Register (`henvcfg`)") is read-only 0: there is
    /// no PDIS memory buffer.
    pub(crate) fn henvcfg_writable(&self) -> u64 {
        ENVCFG_FIOM | (self.csr.menvcfg & MENVCFG_STCE)
    }

    /// `stimecmp`/`vstimecmp` may be accessed below M-mode (`menvcfg.STCE` and
    /// `mcounteren.TM`).
    pub(crate) fn sstc_allowed_below_m(&self) -> bool {
        self.stce() && self.csr.mcounteren & COUNTEREN_TM != 0
    }
}

fn stimecmp_check(h: &Hart, write: bool) -> Result<(), CsrFault> {
    if h.prv == PrivilegeMode::Machine {
        return Ok(());
    }
    if !h.sstc_allowed_below_m() {
        return Err(CsrFault::Illegal);
    }
    if h.virt
        && (!h.vstce()
            || h.csr.h.hcounteren & COUNTEREN_TM == 0
            || (write && h.csr.hvictl & super::aia::HVICTL_VTI != 0))
    {
        return Err(CsrFault::Virtual);
    }
    Ok(())
}

/// `vstimecmp` directly (HS-mode or M-mode; VS/VU never get here).
fn vstimecmp_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.prv == PrivilegeMode::Machine || h.sstc_allowed_below_m() {
        Ok(())
    } else {
        Err(CsrFault::Illegal)
    }
}

/// The Sstc CSRs, sorted by number.
pub(super) static TABLE: &[CsrDesc] = &[
    csr!(
        num::STIMECMP,
        stimecmp_check,
        |h| h.csr.stimecmp,
        Some(|h, v| h.csr.stimecmp = v)
    ),
    csr!(
        num::VSTIMECMP,
        vstimecmp_check,
        |h| h.csr.vstimecmp,
        Some(|h, v| h.csr.vstimecmp = v)
    ),
];
