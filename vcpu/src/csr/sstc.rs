//! Sstc: the supervisor timer compare register `stimecmp` (privileged spec, "Sstc" chapter
//! and the `menvcfg.STCE`, `mcounteren.TM` and `stimecmp` sections).
//!
//! - `menvcfg.STCE` = 1: `mip.STIP` is `time >= stimecmp` (unsigned) and read-only in `mip`
//!   (and so in `mvip`, where bit 5 reads 0); the software-written STIP bit is kept but
//!   ignored, and takes effect again when STCE returns to 0.
//! - `menvcfg.STCE` = 0: `stimecmp` is illegal below M-mode; STIP is software-writable as in
//!   the base privileged architecture.
//! - `mcounteren.TM` = 0: `stimecmp` is illegal below M-mode.
//! - M-mode can always access `stimecmp`.
//!
//! `vstimecmp` (with `henvcfg.STCE` and `hcounteren.TM`) comes with the H extension.

use super::{CsrDesc, CsrFault, MENVCFG_STCE};
use crate::hart::{Hart, PrivilegeMode};

/// `mcounteren.TM`.
const COUNTEREN_TM: u64 = 1 << 1;

impl Hart {
    /// Whether Sstc's `stimecmp` drives STIP (`menvcfg.STCE`).
    #[inline]
    pub(crate) fn stce(&self) -> bool {
        self.csr.menvcfg & MENVCFG_STCE != 0
    }

    /// The S-level timer signal from `stimecmp`: `time >= stimecmp`.
    #[inline]
    pub(crate) fn stimecmp_signal(&self) -> bool {
        self.mtime() >= self.csr.stimecmp
    }
}

fn stimecmp_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.prv == PrivilegeMode::Machine || (h.stce() && h.csr.mcounteren & COUNTEREN_TM != 0) {
        Ok(())
    } else {
        Err(CsrFault::Illegal)
    }
}

/// The Sstc CSRs, sorted by number.
pub(super) static TABLE: &[CsrDesc] = &[csr!(
    0x14d,
    "stimecmp",
    stimecmp_check,
    |h| h.csr.stimecmp,
    Some(|h, v| h.csr.stimecmp = v)
)];
