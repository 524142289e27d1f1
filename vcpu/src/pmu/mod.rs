//! Performance monitoring: the Zihpm counters with Sscofpmf (overflow and mode filtering),
//! Smcntrpmf (`mcyclecfg`/`minstretcfg`), Smcdeleg/Ssccfg (counter delegation), Sspesa/Ssplcofi
//! (sample PC, precise LCOFI) and Smpdis/Sspdis ([`pdis`]).
//!
//! This file holds the monitor's state ([`PmuState`], the hart's `Pmu`) and constants; the
//! counting is `impl Hart` in `count.rs`, the CSRs in [`csr`], the event catalog in
//! [`events`], the cost/cache/TLB/predictor models in [`model`]. Where the specs' sections
//! (`/work/shared/specs`) are implemented:
//!
//! | spec, section | where |
//! | --- | --- |
//! | Smcntrpmf 1 Introduction | informative |
//! | Smcntrpmf 2 CSRs, 2.1 Machine Counter Configuration Registers (mcyclecfg, minstretcfg) | [`csr`] (`Hart::write_cfg`) |
//! | Smcntrpmf 3 Counter Behavior | `count.rs` (mode filtering, settling: `pmu_refresh`, `pmu_settle`, `pmu_before_mode_change`), below |
//! | Smcdeleg 1 Introduction, 1.1 Motivation | informative |
//! | Smcdeleg 2 Counter Delegation Enable (`menvcfg.CDE`) | [`csr`] (`cde`), [`MENVCFG_CDE`] |
//! | Smcdeleg 3 Counter Delegation | [`csr`] (`deleg_check`, `deleg_counter_read`, `deleg_event_read`, ...; `siselect` 0x40-0x5F) |
//! | Smcdeleg 4 Supervisor Counter Inhibit Register (`scountinhibit`) | [`csr`] (`scountinhibit_check`, `Hart::scountinhibit_mask`) |
//! | Smcdeleg 5 Virtualizing `scountovf` | [`csr`] (`scountovf_check`) |
//! | Smcdeleg 6 Virtualizing Local Counter Overflow Interrupts | `csr::aia` (`mvien`/`hvien` bit 13), `hypervisor::csr` (`hideleg`) |
//! | Precise Event Sample Attribution ISA Extension (Sspesa) | the rows below |
//! | Sspesa: Sspesa Profile Types and Sources of Error | informative |
//! | Sspesa: Hardware Performance Monitor Sample PC Register (`shpmspc`), Hardware Performance Monitor Sample Metadata (`shpmsdata`) | `count.rs` (`lcofi_request`), [`csr`] (`sspesa_check`) |
//! | Precise Local Counter Overflow Interrupt ISA Extension (Ssplcofi) | `count.rs` (`pmu_check`), "Overflow" below |
//! | Precise Decoded Instruction Sampling (Smpdis/Sspdis) | [`pdis`] (its module docs map the subsections) |
//!
//! (The draft's sections are unnumbered; they are cited by title.) The same map with the
//! tests is in `docs/pmu.md` ("Spec map").
//!
//! # Counting
//! Counters are kept lazily. The hart tallies every event of the [`events`] catalog while
//! the monitor is *active*; a counter holds its value at the last *settle* plus the growth
//! of its event's tally since then, while it counts in the current mode. Settling happens
//! before anything changes which counters count: a trap, an xRET, a CSR write to the
//! monitor. Mode changes are rare next to instructions, so the interpreter's only per
//! instruction cost is the tallying (in a loop variant of its own: a hart whose monitor is
//! inactive runs the loop without any of it).
//!
//! # Overflow (Sscofpmf, Ssplcofi)
//! A countdown of instructions guarantees that no counter can wrap before the next check: it
//! is the smallest `remaining / max_rate` over the counters counting now, at least 1. So the
//! check runs after the very instruction that wraps a counter, which sets OF, requests the
//! LCOFI and ends the interpreter chunk: the interrupt (when enabled) is taken before the next
//! instruction, with `shpmspc` holding the overflowing instruction's pc. Every event is
//! precise in this sense except cycles skipped by WFI, which are checked when the hart
//! resumes.
//!
//! # Smcntrpmf instret rules (chapter 3, "Counter Behavior")
//! A trapping instruction does not retire, so it adds nothing; an xRET is counted by the
//! mode it was executed in (the settle before the mode change includes it).

mod count;
pub mod csr;
pub mod events;
pub mod model;
pub mod pdis;

use crate::trap::irq;
use events::{Event, NUM_EVENTS};
use model::Models;

pub use vcpu_api::csr::{
    MENVCFG_CDE, MHPMEVENT_EVENT as EVENT_SELECT, MHPMEVENT_MINH as MINH, MHPMEVENT_OF as OF,
    MHPMEVENT_SINH as SINH, MHPMEVENT_UINH as UINH, MHPMEVENT_VSINH as VSINH,
    MHPMEVENT_VUINH as VUINH,
};

/// All five mode inhibit bits.
pub const INH: u64 = MINH | SINH | UINH | VSINH | VUINH;
/// `mcountinhibit` bits that exist: CY, bit 1 (PDIS, Smpdis
/// "Machine Count Inhibit Register (`mcountinhibit`)"), IR, HPM3-31.
pub const MCOUNTINHIBIT_MASK: u64 = 0xffff_fffb | 4;
/// `mcountinhibit` bit 1: the PDIS counter (Smpdis
/// "Machine Count Inhibit Register (`mcountinhibit`)").
pub const INHIBIT_PDIS: u64 = 1 << 1;
/// The LCOFI pending/enable bit (interrupt 13) in `mip`/`mie`/`sip`/`sie`.
pub const LCOFIP: u64 = 1 << irq::LCOFI;

/// Tallies kept beside the catalog's events (from which other events are derived), indices
/// into `PmuState::extra`.
pub mod tally {
    /// AMOs retired (counted as both a load and a store).
    pub const AMOS: usize = 0;
    /// MRET/SRET retired.
    pub const XRETS: usize = 1;
    /// Loads from devices (not L1D accesses).
    pub const DEVICE_LOADS: usize = 2;
    /// Stores to devices.
    pub const DEVICE_STORES: usize = 3;
    /// Loads (AMOs included) that trapped: decoded, not retired.
    pub const TRAPPED_LOADS: usize = 4;
    /// Stores (AMOs included) that trapped.
    pub const TRAPPED_STORES: usize = 5;
    /// AMOs that trapped.
    pub const TRAPPED_AMOS: usize = 6;
    /// Control transfers that trapped.
    pub const TRAPPED_BRJMP: usize = 7;
    /// Length of the tally array.
    pub const LEN: usize = 8;
}

/// Interpreter variant: the monitor is inactive, nothing is observed.
pub const PMU_OFF: u8 = 0;
/// Interpreter variant: the execute arms of loads, stores, control transfers, multiplies and
/// divides report to the monitor.
pub const PMU_ARMS: u8 = 1;
/// Interpreter variant: every instruction is reported (ITLB model, PDIS).
pub const PMU_FULL: u8 = 2;

/// Counter index of `cycle`.
pub const CY: usize = 0;
/// Counter index of `instret`.
pub const IR: usize = 2;

pub use vcpu_api::pmu::{DraftNumbers, PmuConfig};

/// Architectural and model state of the monitor (what a snapshot carries).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PmuState {
    /// `mhpmevent3-31` (indices 0-2 unused).
    pub mhpmevent: [u64; 32],
    /// `mcyclecfg` (Smcntrpmf 2.1
    /// "Machine Counter Configuration Registers (mcyclecfg, minstretcfg)").
    pub mcyclecfg: u64,
    /// `minstretcfg` (Smcntrpmf).
    pub minstretcfg: u64,
    /// `mcountinhibit`.
    pub mcountinhibit: u64,
    /// Counter values at the last settle (0 `mcycle`, 2 `minstret`, 3-31 `mhpmcounter`).
    pub value: [u64; 32],
    /// The tally of each counter's event at the last settle.
    pub snap: [u64; 32],
    /// Event tallies since reset, indexed by [`Event`] (cycles: the model's penalties only;
    /// the events derived from others are unused).
    pub tally: [u64; NUM_EVENTS],
    /// The other tallies, indexed by [`tally`].
    pub extra: [u64; tally::LEN],
    /// `shpmspc` (Sspesa).
    pub shpmspc: u64,
    /// `shpmsdata` (Sspesa): CNTRID in bits 4:0, the rest hardwired 0.
    pub shpmsdata: u64,
    /// The cache, TLB and predictor models.
    pub models: Models,
    /// Smpdis/Sspdis.
    pub pdis: pdis::PdisState,
}

impl Default for PmuState {
    fn default() -> Self {
        PmuState {
            mhpmevent: [0; 32],
            mcyclecfg: 0,
            minstretcfg: 0,
            mcountinhibit: 0,
            value: [0; 32],
            snap: [0; 32],
            tally: [0; NUM_EVENTS],
            extra: [0; tally::LEN],
            shpmspc: 0,
            shpmsdata: 0,
            models: Models::default(),
            pdis: pdis::PdisState::default(),
        }
    }
}

/// The monitor: state plus what is derived from it.
#[derive(Clone, Debug)]
pub(crate) struct Pmu {
    pub(crate) state: PmuState,
    pub(crate) config: PmuConfig,
    /// Event of each counter (`None`: it counts nothing).
    event: [Option<Event>; 32],
    /// The counters whose `event` is not `None`, as a bit set.
    with_event: u32,
    /// Counters counting in the current mode (bit i).
    counting: u32,
    /// Whether some programmable counter counts in some mode, or PDIS counts: the models
    /// run and the interpreter uses its monitoring variant.
    pub(crate) active: bool,
    /// Whether some counter's counting depends on the mode (settle on mode changes).
    filtering: bool,
    /// The virtual clock (instruction slots) at which to check for overflow next: no
    /// counter can wrap in fewer instructions.
    pub(crate) check_at: u64,
    /// The virtual clock when `check_at` was computed.
    pub(crate) counted_at: u64,
    /// The instruction ending at `check_at` may wrap a counter (else none before it can).
    may_wrap: bool,
    /// The countdown of the counters of other events than cycles (`check_at`'s, without
    /// them), and the value of the cycles tally up to which no counter of cycles can wrap
    /// (`u64::MAX`: none counts): translated blocks that check their cycles against it
    /// (`Hart::jit_check_at`) need only the first countdown.
    pub(crate) check_at_but_cycles: u64,
    pub(crate) cycle_limit: u64,
    /// Work is due on every instruction, not only on loads, stores and control transfers
    /// (the ITLB model while fetches are translated, or PDIS counting in this mode).
    every_insn: bool,
    /// An overflow or a PDIS sample requested an LCOFI: the chunk ends.
    pub(crate) brk: bool,
    /// The fetch and data translation of the current mode are active (TLB models), with the
    /// mode as tag bits.
    pub(crate) fetch_tag: Option<u64>,
    pub(crate) data_tag: Option<u64>,
    /// PDIS counts in the current mode.
    pub(crate) pdis_here: bool,
    /// The instruction being executed wrote `spdiscounter`: it does not also count.
    pub(crate) pdis_skip: bool,
    /// A CSR write by the hypervisor (`Vcpu::set_host_csr`) is in progress: no instruction
    /// of the hart retires with it.
    pub(crate) host_write: bool,
}

impl Pmu {
    pub(crate) fn new(config: PmuConfig) -> Pmu {
        let mut p = Pmu {
            state: PmuState::default(),
            config,
            event: [None; 32],
            with_event: 0,
            counting: 0,
            active: false,
            filtering: false,
            check_at: u64::MAX,
            counted_at: 0,
            may_wrap: false,
            check_at_but_cycles: u64::MAX,
            cycle_limit: u64::MAX,
            every_insn: false,
            brk: false,
            fetch_tag: None,
            data_tag: None,
            pdis_here: false,
            pdis_skip: false,
            host_write: false,
        };
        p.derive_events();
        p
    }

    fn derive_events(&mut self) {
        for i in 0..32 {
            self.event[i] = match i {
                CY => Some(Event::Cycles),
                1 => None,
                IR => Some(Event::Instret),
                _ => events::from_selector(self.state.mhpmevent[i] & EVENT_SELECT),
            };
        }
        self.with_event = (0..32)
            .filter(|&i| self.event[i].is_some())
            .fold(0, |m, i| m | 1 << i);
    }

    /// The mode-filter register of counter `i`.
    fn filter(&self, i: usize) -> u64 {
        match i {
            CY => self.state.mcyclecfg,
            IR => self.state.minstretcfg,
            _ => self.state.mhpmevent[i],
        }
    }

    /// The instruction ending at `check_at` may wrap a counter.
    pub(crate) fn may_wrap(&self) -> bool {
        self.may_wrap
    }

    /// The `mstateen0` bit of PDIS.
    pub(crate) fn stateen_bit(&self) -> u64 {
        1 << self.config.numbers.stateen_pdis_bit
    }
}
