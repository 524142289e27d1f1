//! The building blocks every CSR table shares (the base table in `csr.rs` and the tables
//! of the extensions' folders): the descriptor, the fault, and the `mstatus`/`menvcfg`/
//! interrupt constants more than one table uses. A leaf: it imports no table.

use crate::hart::Hart;
use vcpu_api::csr::{MSTATUS_FS, MSTATUS_MXR, MSTATUS_SIE, MSTATUS_SPIE, MSTATUS_SPP, MSTATUS_SUM};
use vcpu_api::trap::irq;

/// `mstatus.UXL` = 2 (64-bit), read-only.
pub const MSTATUS_UXL_64: u64 = vcpu_api::csr::XL_64 << 32;
/// `mstatus.SXL` = 2 (64-bit), read-only.
pub const MSTATUS_SXL_64: u64 = vcpu_api::csr::XL_64 << 34;
/// `mstatus.MPP` shift
pub const MSTATUS_MPP_SHIFT: u64 = 11;
/// The subset of `mstatus` visible and writable through `sstatus` (privileged spec 4.1.1).
pub(crate) const SSTATUS_MASK: u64 =
    MSTATUS_SIE | MSTATUS_SPIE | MSTATUS_SPP | MSTATUS_FS | MSTATUS_SUM | MSTATUS_MXR;

/// `menvcfg.FIOM` (and `senvcfg.FIOM`).
pub const ENVCFG_FIOM: u64 = 1 << 0;
/// `menvcfg.STCE` (Sstc: enables `stimecmp`).
pub const MENVCFG_STCE: u64 = 1 << 63;

/// Interrupts delegable through `mideleg` and software-writable in `mip` from M-mode: SSI,
/// STI, SEI and LCOFI (Sscofpmf).
pub(crate) const S_INTERRUPTS: u64 =
    (1 << irq::SSI) | (1 << irq::STI) | (1 << irq::SEI) | (1 << irq::LCOFI);

/// Why a CSR access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsrFault {
    /// Raise illegal-instruction.
    Illegal,
    /// Raise virtual-instruction (H extension: the access is HS-qualified but V=1).
    Virtual,
}

/// One CSR: how to access it.
#[derive(Debug)]
pub struct CsrDesc {
    /// CSR number (its name: [`vcpu_api::csr::name`]).
    pub num: u16,
    /// Extra access predicate beyond the number's privilege and read-only bits.
    pub check: fn(&Hart, bool) -> Result<(), CsrFault>,
    /// Read the current value.
    pub read: fn(&Hart) -> u64,
    /// Write a new value (the WARL legalization happens here). `None` for read-only CSRs.
    pub write: Option<fn(&mut Hart, u64)>,
}

/// The check of a CSR that has no access rule beyond its number's.
pub(crate) fn ok(_: &Hart, _: bool) -> Result<(), CsrFault> {
    Ok(())
}

/// `xtvec` WARL: MODE 0 (direct) and 1 (vectored) are kept.
pub(crate) fn tvec_legalize(v: u64) -> u64 {
    // MODE 0 (direct) and 1 (vectored); modes >= 2 are reserved: keep direct.
    if v & 3 >= 2 {
        v & !3
    } else {
        v & !2
    }
}
