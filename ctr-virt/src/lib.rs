//! `ctr-virt`: the hypervisor side of Control Transfer Records (Smctr/Ssctr).
//!
//! What a KVM-class hypervisor does so that a guest kernel sees complete CTR hardware and
//! nobody else's history:
//! - [`DepthSet`] and [`CtrPolicy`]: the depths a VM may select (a migration-safe set,
//!   intersected with what the host hart supports) and whether the VM has CTR at all.
//! - [`CtrContext`]: a vCPU's guest CTR state (`vsctrctl`, `sctrstatus`, its depth and every
//!   entry in logical order), saved from and loaded onto a hart in the order the spec
//!   advises (depth, then `sctrstatus`, then the entries; section 2.5).
//! - [`GuestCtr`]: per vCPU, the lazy switch through `hstateen0.CTR` (the context is loaded
//!   on the guest's first CTR access, a virtual-instruction exit, and `hstateen0.CTR` stays
//!   set from then on) and the emulation of `sctrdepth`, which always traps from VS-mode
//!   (section 2.4): reads return the guest's depth, writes are legalized to the VM's set and
//!   the hart's depth follows while the guest runs.
//!
//! - [`GuestCtr::synthesize_trap`]: when the VMM redirects a trap into VS-mode, the hardware
//!   saw an HS trap and a return, not a VS trap; where the guest's `vsctrctl` would have
//!   recorded that trap, the record is synthesized (WRPTR increment and a write of logical
//!   entry 0, as the spec's note in section 2.5 describes), or FROZEN set for BPFRZ/LCOFIFRZ.
//!
//! It depends only on the backend-neutral [`vcpu_api::Vcpu`] interface, not on the interpreter.
//! Not implemented yet (later parts of the ctr-virt issue): multiplexing vCPUs on fewer
//! harts, and snapshots.

mod context;
mod depth;
mod emulate;

pub use context::{CtrContext, CtrEntryState};
pub use depth::{DepthSet, DEFAULT_GUEST_DEPTHS};
pub use emulate::{classify, CtrAccess, CtrStats, GuestCtr, GuestCtrState, Outcome};

use thiserror::Error;

/// CSR numbers and fields (Smctr chapter 2, Sscsrind, Smstateen), from `vcpu_api::csr`.
pub mod csr {
    pub use vcpu_api::csr::{
        HSTATEEN0, SCTRCTL, SCTRDEPTH, SCTRSTATUS, SIREG, SIREG6, STATEEN0_CSRIND, STATEEN0_CTR,
        VSCTRCTL, VSIREG, VSIREG2, VSIREG3, VSISELECT, VSTVEC,
    };
    /// The SCTRCLR instruction.
    pub const SCTRCLR: u32 = 0x1040_0073;
    /// The select values of the CTR entries.
    pub const CTR_SELECT: std::ops::RangeInclusive<u64> = 0x200..=0x2ff;
}

/// Errors of CTR policy and context handling.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CtrVirtError {
    /// A depth list could not be parsed.
    #[error("bad CTR depth list {list:?}: {why}")]
    BadDepthList {
        /// The text given.
        list: String,
        /// What is wrong with it.
        why: String,
    },
    /// The VM's depths and the host's have nothing in common.
    #[error(
        "no CTR depth the VM may use ({guest}) is supported by the host hart ({host}); \
         choose --ctr-depths among the host's, or --ctr off"
    )]
    NoCommonDepth {
        /// The depths asked for the VM.
        guest: DepthSet,
        /// The host hart's depths.
        host: DepthSet,
    },
    /// CTR was asked for but the host hart has none.
    #[error("the host hart has no CTR (Smctr/Ssctr); use --ctr off")]
    NoHostCtr,
    /// A saved context is malformed.
    #[error("bad saved CTR context: {0}")]
    BadContext(String),
    /// A saved `sctrdepth.DEPTH` is not one of the encodings Smctr defines (section 2.4,
    /// table 3: 0-4 select 16-256 entries; the others are reserved).
    #[error(
        "saved {field} = {encoding} is a reserved sctrdepth.DEPTH encoding (Smctr 2.4: 0-4 \
         select 16, 32, 64, 128, 256 entries)"
    )]
    ReservedDepth {
        /// Which saved field holds it.
        field: &'static str,
        /// The encoding.
        encoding: u8,
    },
    /// A saved `sctrstatus` has a `WRPTR` beyond its depth or bits Smctr does not define
    /// (section 2.5: WRPTR bits above depth-1 are read-only 0, undefined bits read-only 0).
    #[error("saved {field} = {value:#x} is not a legal sctrstatus at depth {depth} (Smctr 2.5)")]
    BadStatus {
        /// Which saved field holds it.
        field: &'static str,
        /// Its value.
        value: u64,
        /// The depth in entries.
        depth: u64,
    },
    /// A context does not fit the hart it is loaded onto.
    #[error(
        "the guest uses CTR depth {depth}, which this host does not support (host depths: \
         {host}); restore on a host with that depth (--host-ctr-depths)"
    )]
    DepthUnsupported {
        /// The guest's depth in entries.
        depth: u64,
        /// The hart's depths.
        host: DepthSet,
    },
}

/// Whether a VM has CTR, and which depths its guests may select.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CtrPolicy {
    /// `--ctr on`: the guest sees CTR (`ssctr` in the device tree, accesses work).
    pub enabled: bool,
    /// The depths the guest may select (never empty when enabled).
    pub guest_depths: DepthSet,
}

impl CtrPolicy {
    /// CTR off: every guest CTR access gets illegal-instruction.
    pub fn off() -> CtrPolicy {
        CtrPolicy {
            enabled: false,
            guest_depths: DepthSet::EMPTY,
        }
    }

    /// CTR on with the depths `requested` (default [`DEFAULT_GUEST_DEPTHS`]) that the host
    /// hart `host` supports; an empty intersection or a host without CTR is refused.
    pub fn on(
        requested: Option<DepthSet>,
        host: Option<&vcpu_api::ctr::CtrConfig>,
    ) -> Result<CtrPolicy, CtrVirtError> {
        let host = host.ok_or(CtrVirtError::NoHostCtr)?;
        let host_depths = DepthSet::from_bits(host.depths);
        let guest = requested.unwrap_or(DEFAULT_GUEST_DEPTHS);
        let common = guest.intersect(host_depths);
        if common.is_empty() {
            return Err(CtrVirtError::NoCommonDepth {
                guest,
                host: host_depths,
            });
        }
        Ok(CtrPolicy {
            enabled: true,
            guest_depths: common,
        })
    }
}
