//! The CSR state that is not derived from elsewhere ([`CsrFile`]): a leaf, so that the hart
//! can hold it without depending on the CSR tables.

/// CSR state that is not derived from elsewhere.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CsrFile {
    /// `mstatus` (sstatus is a view of it).
    pub mstatus: u64,
    /// `medeleg`
    pub medeleg: u64,
    /// `mideleg`
    pub mideleg: u64,
    /// `mie` (sie is a view of it)
    pub mie: u64,
    /// Software-writable bits of `mip` (SSIP, STIP, SEIP).
    pub mip: u64,
    /// `mtvec`
    pub mtvec: u64,
    /// `mscratch`
    pub mscratch: u64,
    /// `mepc`
    pub mepc: u64,
    /// `mcause`
    pub mcause: u64,
    /// `mtval`
    pub mtval: u64,
    /// `mcounteren`
    pub mcounteren: u64,
    /// `menvcfg`
    pub menvcfg: u64,
    /// `stvec`
    pub stvec: u64,
    /// `sscratch`
    pub sscratch: u64,
    /// `sepc`
    pub sepc: u64,
    /// `scause`
    pub scause: u64,
    /// `stval`
    pub stval: u64,
    /// `satp`
    pub satp: u64,
    /// `scounteren`
    pub scounteren: u64,
    /// `senvcfg`
    pub senvcfg: u64,
    /// `frm`
    pub frm: u8,
    /// `fflags`
    pub fflags: u8,
    /// The H extension's CSRs.
    pub h: crate::hypervisor::HypervisorCsrs,
    /// `mstateen0-3` (Smstateen).
    pub mstateen: [u64; 4],
    /// Stored bits of `sstateen0-3` (read through the matching `mstateen` mask).
    pub sstateen: [u64; 4],
    /// `miselect` (Smcsrind).
    pub miselect: u64,
    /// `siselect` (Sscsrind).
    pub siselect: u64,
    /// `stimecmp` (Sstc).
    pub stimecmp: u64,
    /// `mvien` (Smaia).
    pub mvien: u64,
    /// The bits of `mvip` that are separate from `mip` (SSIP while `mvien.SSIP` = 1).
    pub mvip: u64,
    /// The bits of `sie` that are independent of `mie` (`mideleg[n]` = 0, `mvien[n]` = 1).
    pub sie_virt: u64,
    /// Stored bits of `hstateen0-3` (read through the matching `mstateen` mask).
    pub hstateen: [u64; 4],
    /// `vsiselect` (Sscsrind with H).
    pub vsiselect: u64,
    /// `vstimecmp` (Sstc with H).
    pub vstimecmp: u64,
    /// `hvien` (Ssaia with H).
    pub hvien: u64,
    /// `hvictl` (Ssaia with H).
    pub hvictl: u64,
    /// The bits 13-63 of `vsie` that are independent (`hideleg[n]` = 0, `hvien[n]` = 1).
    pub vsie_virt: u64,
}
