//! Smpdis/Sspdis, Precise Decoded Instruction Sampling (draft): `mpdisctl`, `spdisctl`,
//! `vspdisctl`, `spdiscounter`, the event and latency filters, and sample records in the
//! registers behind `siselect` 0x60/0x61 (`mpdisctl.MEM` is hardwired to 0, which the draft
//! allows, so there is no memory buffer and `menvcfg.PDISS`/`henvcfg.PDISV` are 0: the
//! draft's "Machine Environment Configuration Register (`menvcfg`)" and
//! "Hypervisor Environment Configuration Register (`henvcfg`)" add nothing here).
//!
//! The draft's (unnumbered) sections: "CSRs" and "State Enable Access Control" are in
//! `pmu::csr` with the register fields here; "Instruction Selection", "Sample Record"
//! (pdishdrev, pdispc, pdislat, pdistime, pdisadr1, pdisadr2), "Sample Filtering"
//! ("Event Filtering", "Latency Filtering") and "Sampling Modes" are in `sample.rs`;
//! "Memory Buffer" is not implemented (`mpdisctl.MEM` = 0, so
//! "Supervisor PDIS AMB Control and Status (`spdisambcs`)" and
//! "Supervisor PDIS AMB Address (`spdisambaddr`)" do not exist); "Performance Events" are
//! in the event catalog (`vcpu_api::pmu`, 0x110-0x11B); "Custom Extensions": none (the
//! custom bits of `mpdisctl` are read-only 0).
//!
//! The hart's model of the draft's pipeline terms (documented in `docs/pmu.md`):
//! - An instruction is *decoded* when it executes (retires or traps); the PDIS counter counts
//!   decoded instructions of the `SEL` type in the enabled modes.
//! - When the counter wraps (COUNT goes from 0xFFFF_FFFF to 0; it is reloaded with INITVAL)
//!   the instruction that made it wrap is the sampled one: no skid. With ACC = 1, after a
//!   discarded sample the next decoded instruction of the `SEL` type is sampled.
//! - A sample completes with its instruction, so no sample is ever active when the counter
//!   wraps again: PDIS.COLLISIONS stays 0.
//! - A qualified sample while OF = 1 is dropped (the registers hold a record software has not
//!   collected: backpressure), counted by PDIS.DROPPED.
//! - Latencies come from the cycle cost model: TOTAL is the instruction's cycles, EXECUTION
//!   its penalty cycles (EXECV = 1); the other latencies are not implemented (0).

mod sample;

pub use vcpu_api::csr::{
    PDISCTL_ACC as ACC, PDISCTL_EPT as EPT, PDISCTL_HPM as HPM, PDISCTL_M as M, PDISCTL_MEM as MEM,
    PDISCTL_OF as OF, PDISCTL_PA as PA, PDISCTL_S as S, PDISCTL_SEL as SEL, PDISCTL_TS as TS,
    PDISCTL_U as U,
};

/// Writable `mpdisctl` bits (Smpdis "Machine PDIS Control Register (`mpdisctl`)"; MEM and
/// the custom bits are hardwired 0).
pub const MPDISCTL_WRITABLE: u64 = SEL | HPM | ACC | TS | PA | EPT | U | S | M | OF;
/// The fields `vspdisctl` holds itself (S and U: VS and VU counting; PA: guest physical
/// addresses of VS/VU samples; Smpdis
/// "Virtual Supervisor PDIS Control Register (`vspdisctl`)").
pub const VS_OWN: u64 = S | U | PA;
/// Writable bits of `vspdisctl`'s own fields (all of them: the hart can give the guest
/// physical address of an access, its VS-stage translation).
pub const VS_OWN_WRITABLE: u64 = S | U | PA;

/// `spdisevmask`/`spdisevmatch`: bits 55:0 (Smpdis
/// "Supervisor PDIS Event Filter Mask Register (`spdisevmask`)",
/// "Supervisor PDIS Event Filter Match Register (`spdisevmatch`)").
pub const EVMASK: u64 = (1 << 56) - 1;
/// `spdisfilter.THRESH` (Smpdis "Supervisor PDIS Filter Register (`spdisfilter`)").
pub const THRESH: u64 = 0xfff;
/// `spdisfilter.INV` (Smpdis "Latency Filtering").
pub const INV: u64 = 1 << 12;
/// `spdisfilter.LATSEL` (bits 15:13): 0 (total) and 3 (execution) are implemented (Smpdis
/// "Latency Filtering").
pub const LATSEL: u64 = 7 << 13;

/// `pdishdrev.TYPE` values (Smpdis "PDIS Header and Events (pdishdrev)").
pub mod ty {
    #![allow(missing_docs)]
    pub const OTHER: u64 = 0;
    pub const LOAD: u64 = 1;
    pub const STORE: u64 = 2;
    pub const LOAD_STORE: u64 = 3;
    pub const CONTROL: u64 = 4;
}
/// `pdishdrev.ITMISS` (Smpdis "PDIS Header and Events (pdishdrev)", as the `HDR_*` below).
pub const HDR_ITMISS: u64 = 1 << 37;
/// `pdishdrev.L1MISS` (loads and stores).
pub const HDR_L1MISS: u64 = 1 << 39;
/// `pdishdrev.L1TLBMISS`.
pub const HDR_L1TLBMISS: u64 = 1 << 45;
/// `pdishdrev.LLTLBMISS` (the TLB model has one level).
pub const HDR_LLTLBMISS: u64 = 1 << 46;
/// `pdishdrev.MISPRED` (control transfers).
pub const HDR_MISPRED: u64 = 1 << 52;
/// Bit of a control transfer type in `pdishdrev`: TRET (type 3) is bit 39 ... DIRLJMP (type
/// 15) bit 51, the Smctr transfer type plus 36.
pub const HDR_CTR_TYPE_SHIFT: u64 = 36;

/// `pdislat.EXECV` (Smpdis "PDIS Latencies (pdislat)").
pub const LAT_EXECV: u64 = 1 << 62;

/// PDIS state (Smpdis/Sspdis, "Precise Decoded Instruction Sampling (Smpdis/Sspdis)"): the
/// registers of its "CSRs" and the "Sample Record".
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PdisState {
    /// `mpdisctl`.
    pub mpdisctl: u64,
    /// `vspdisctl`'s own fields ([`VS_OWN`]).
    pub vs_own: u64,
    /// `spdiscounter` (COUNT in 31:0, INITVAL in 63:32).
    pub counter: u64,
    /// `spdisevmask`.
    pub evmask: u64,
    /// `spdisevmatch`.
    pub evmatch: u64,
    /// `spdisfilter`.
    pub filter: u64,
    /// The sample record: pdishdrev, pdispc, pdistime, pdislat, pdisadr1, pdisadr2.
    pub record: [u64; 6],
    /// Target of the last control transfer (in a mode PDIS counts).
    pub last_target: u64,
    /// Target of the one before it (EPT).
    pub prior_target: u64,
    /// ACC: sample the next selected instruction.
    pub select_next: bool,
}
