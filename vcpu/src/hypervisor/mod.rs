//! The H extension (privileged spec, "H" Extension for Hypervisor Support, Version 1.0):
//! the hypervisor and virtual-supervisor CSR state and the constants of their fields.
//!
//! Where the rest lives: the CSR table in [`csr`] (this folder), two-stage translation in
//! `mmu/mod.rs`, trap routing through HS and VS in `trap/entry.rs`, HLV/HSV/HFENCE in `execute/hypervisor.rs`,
//! and the transformed instructions for `htinst`/`mtinst` in [`tinst`].
//!
//! Implementation parameters: GEILEN = the IMSIC's guest interrupt files
//! (`HartConfig::imsic`, `crate::csr::imsic`; 0 without an IMSIC: `hgeip`/`hgeie`
//! read-only 0, `hstatus.VGEIN` read-only 0), VMIDLEN = 14, VSXL = UXL = 64 (read-only),
//! VSBE = 0 (read-only), `hgatp` modes Bare, Sv39x4, Sv48x4 and Sv57x4.

pub mod csr;
pub mod tinst;

pub use vcpu_api::csr::{
    HSTATUS_GVA, HSTATUS_HU, HSTATUS_SPV, HSTATUS_SPVP, HSTATUS_VTSR, HSTATUS_VTVM, HSTATUS_VTW,
    MSTATUS_GVA, MSTATUS_MPV,
};
/// `hstatus.VSXL` = 2 (64-bit), read-only.
pub const HSTATUS_VSXL_64: u64 = vcpu_api::csr::XL_64 << 32;
pub use vcpu_api::trap::VS_INTERRUPTS;

/// Writable `hstatus` bits.
pub const HSTATUS_WRITABLE: u64 = HSTATUS_GVA
    | HSTATUS_SPV
    | HSTATUS_SPVP
    | HSTATUS_HU
    | HSTATUS_VTVM
    | HSTATUS_VTW
    | HSTATUS_VTSR;

/// `hedeleg` bits that are writable (privileged spec table "Bits of hedeleg that must be
/// writable or must be read-only zero"); 9, 10, 11 and 20-23 are read-only 0.
pub const HEDELEG_WRITABLE: u64 = 0x1ff | (1 << 12) | (1 << 13) | (1 << 15);

/// `hgatp.MODE` values.
pub const HGATP_MODE_BARE: u64 = 0;
/// Sv39x4
pub const HGATP_MODE_SV39X4: u64 = 8;
/// Sv48x4
pub const HGATP_MODE_SV48X4: u64 = 9;
/// Sv57x4
pub const HGATP_MODE_SV57X4: u64 = 10;
/// VMID bits 57:44 (VMIDLEN = 14).
pub const HGATP_VMID: u64 = 0x3fff << 44;
/// PPN bits 43:0; PPN[1:0] read as 0 (the root table is 16 KiB aligned).
pub const HGATP_PPN: u64 = ((1 << 44) - 1) & !3;

/// The hypervisor and virtual-supervisor CSRs that hold state of their own. `hie`, `hip`,
/// `vsie` and `vsip` are views of `mie`/`mip`; `hgeie`/`hgeip` are read-only 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HypervisorCsrs {
    /// `hstatus`
    pub hstatus: u64,
    /// `hedeleg`
    pub hedeleg: u64,
    /// `hideleg`
    pub hideleg: u64,
    /// `hvip` (VSSIP, VSTIP, VSEIP)
    pub hvip: u64,
    /// `hcounteren`
    pub hcounteren: u64,
    /// `htimedelta`
    pub htimedelta: u64,
    /// `htval`
    pub htval: u64,
    /// `htinst`
    pub htinst: u64,
    /// `hgatp`
    pub hgatp: u64,
    /// `henvcfg`
    pub henvcfg: u64,
    /// `vsstatus`
    pub vsstatus: u64,
    /// `vstvec`
    pub vstvec: u64,
    /// `vsscratch`
    pub vsscratch: u64,
    /// `vsepc`
    pub vsepc: u64,
    /// `vscause`
    pub vscause: u64,
    /// `vstval`
    pub vstval: u64,
    /// `vsatp`
    pub vsatp: u64,
    /// `mtval2`
    pub mtval2: u64,
    /// `mtinst`
    pub mtinst: u64,
}
