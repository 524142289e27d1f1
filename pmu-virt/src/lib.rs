//! `pmu-virt`: the hypervisor side of performance monitoring.
//!
//! What a KVM-class hypervisor does so that a guest kernel can count hardware and firmware
//! events on its vCPUs through the SBI PMU extension (SBI v2.0 chapter 11):
//! - [`PmuPolicy`]: whether a VM has a PMU, which hart counters it is given, and whether it
//!   gets counter-overflow interrupts (Sscofpmf).
//! - [`GuestPmu`]: per vCPU, the virtual counters (event, started or stopped, filter flags,
//!   firmware counter values), the PMU snapshot shared memory, and the SBI PMU functions
//!   ([`GuestPmu::sbi_call`]), which program the hart's counters through the backend-neutral
//!   [`vcpu_api::Vcpu`] interface (`host_csr`/`set_host_csr`), as HS/M-mode software would.
//! - [`fw`]: the firmware events the VMM counts (SBI calls, timers, IPIs, remote fences,
//!   traps it redirects), with per-vCPU tallies shared by the VM's vCPU threads.
//! - [`event`]: decoding `event_idx`/`event_data`.
//! - [`sample`]: sampling for guests (draft Sspesa/Ssplcofi and Sspdis): `shpmspc`/
//!   `shpmsdata` and `scountovf` emulated from the hart's sample of the guest's counters, and
//!   the guest's PDIS state loaded on its first access through `hstateen0.PDIS`
//!   ([`GuestSampling`], one per vCPU inside [`GuestPmu`]).
//!
//! # Counters and their mapping
//! Logical counter `i` < 32 is hart counter `i` (`mcycle` 0, `minstret` 2, `mhpmcounter3-31`),
//! read by the guest directly through its CSR `0xC00 + i`: counter_get_info reports that CSR
//! and width 64 (field value 63), and configuring a counter sets its `mcounteren` and
//! `hcounteren` bits, so `hpmcounterN` reads do not exit. The mapping has to be the identity
//! for that: the CSR a guest reads *is* the hart counter. With several vCPUs on one hart
//! (`--pcpus`) the whole counter state is switched with the vCPU, so every vCPU has all of
//! them. Index 1 (`time`) is not a performance counter (`counter_get_info` is
//! `SBI_ERR_INVALID_PARAM`). Logical counters 32-47 ([`FW_COUNTERS`]) are firmware counters.
//!
//! # Counter sets
//! `counter_config_matching`, `counter_start` and `counter_stop` take a set of counters,
//! `counter_idx_base` and `counter_idx_mask` (SBI v2.0 sections 11.7-11.9), which is
//! `SBI_ERR_INVALID_PARAM` ("at least one invalid counter") when the mask is empty or
//! `base + highest set bit` is not below `num_counters` (48), also when that sum wraps. Every
//! index below 48 is a valid index, and those with no counter behind them (1, hpm counters
//! `--pmu-counters` withholds) are holes: matching finds no counter there, start and stop
//! skip them. So "every counter", `base` 0 and `mask` `(1 << 48) - 1`, is a valid set, as
//! KVM and OpenSBI accept it (both check only `base + highest bit < num_counters`); a set
//! of holes only (`base` 0, `mask` `0b10`) is valid, and matching over it is
//! `SBI_ERR_NOT_SUPPORTED` ("none of the counters can monitor the specified event").
//!
//! With counter delegation ([`PmuPolicy::deleg`], [`deleg`]) the hpm counters are handed out
//! from the top instead (the guest's 3 is the hart's 31): the SBI functions and the trapped
//! Ssccfg accesses share that mapping, every counter is readable by the guest all along, and
//! `hcounteren` lets only identity-mapped counters be read directly; the VMM emulates reads
//! of the others.
//!
//! The fixed counters are not moved to hpm counters: counter 0 counts cycles and counter 2
//! instructions in `mcycle`/`minstret` themselves, mode-filtered by Smcntrpmf
//! (`mcyclecfg`/`minstretcfg`), started and stopped with `mcountinhibit`; they can count
//! nothing else. Counters 3-31 count any event of the hart's catalog.
//!
//! # Mode filtering
//! Every counter the guest uses has `MINH`, `SINH` and `UINH` set, so the hart counts only
//! while the guest runs (VS and VU). In hosted mode the VMM never executes on the hart,
//! but a hardware hypervisor would, and the filter keeps it out. The guest's
//! `SBI_PMU_CFG_FLAG_SET_SINH` and `SET_UINH` (its own S and U modes) become `VSINH` and
//! `VUINH`; `SET_MINH`, `SET_VSINH` and `SET_VUINH` name modes the guest does not have (no M
//! access, no H extension) and are ignored, as the spec allows for these hints.
//!
//! # Matching
//! `counter_config_matching` picks the lowest counter of the set that can count the event
//! and is *free*: stopped, and not configured since its last `counter_stop` with
//! `SBI_PMU_STOP_FLAG_RESET` (the fixed counters are free whenever stopped). A configured
//! but stopped counter keeps its event until the guest resets it, so configuring several
//! events before starting them gives each its own counter. `SKIP_MATCH` takes the first
//! counter of the set whatever its state, if it can count the event. With Sscofpmf, cycles
//! and instructions go to a free hpm counter of the set before `mcycle`/`minstret`: only
//! `mhpmevent` has the OF bit, so only an hpm counter can raise the overflow interrupt a
//! sampling guest needs (the call does not say whether the guest samples).
//!
//! # Start and stop
//! Counters 0 and 2 start out running (so `rdcycle`/`rdinstret` behave as before the guest
//! touches the PMU) and counters 3-31 stopped, with no event. `counter_start` and
//! `counter_stop` act on every counter of the set that is in use (configured for an event,
//! which 0 and 2 always are, or running) and report
//! `SBI_ERR_ALREADY_STARTED`/`SBI_ERR_ALREADY_STOPPED` when at least one of those was already
//! in that state (a kernel stopping "all counters" at boot stops, and with RESET resets, them
//! all). Holes and counters with no event (never configured, or reset) are skipped, neither
//! acted on nor an error, as KVM and OpenSBI skip counters not in use: starting a full set
//! starts the configured counters and leaves the others free for matching.
//! Starting a hardware counter clears its `mhpmevent.OF`, so it can overflow again.

pub mod deleg;
pub mod event;
pub mod fw;
mod guest;
pub mod lcofi;
pub mod sample;

pub use deleg::DelegOutcome;
pub use event::EventTarget;
pub use fw::{FwEvent, FwTallies, NUM_FW_EVENTS};
pub use guest::{CounterState, GuestPmu, GuestPmuState};
pub use lcofi::{LcofiDelivery, LcofiOutcome};
pub use sample::{GuestSampling, GuestSamplingState, SampleOutcome, SamplingPolicy};

use thiserror::Error;

/// SBI PMU extension numbers (SBI v2.0 chapter 11) and error codes.
pub mod sbi {
    /// Extension ID ("PMU").
    pub const EID: u64 = 0x50_4D55;
    /// `sbi_pmu_num_counters`.
    pub const NUM_COUNTERS: u64 = 0;
    /// `sbi_pmu_counter_get_info`.
    pub const COUNTER_GET_INFO: u64 = 1;
    /// `sbi_pmu_counter_config_matching`.
    pub const COUNTER_CONFIG_MATCHING: u64 = 2;
    /// `sbi_pmu_counter_start`.
    pub const COUNTER_START: u64 = 3;
    /// `sbi_pmu_counter_stop`.
    pub const COUNTER_STOP: u64 = 4;
    /// `sbi_pmu_counter_fw_read`.
    pub const COUNTER_FW_READ: u64 = 5;
    /// `sbi_pmu_counter_fw_read_hi`.
    pub const COUNTER_FW_READ_HI: u64 = 6;
    /// `sbi_pmu_snapshot_set_shmem`.
    pub const SNAPSHOT_SET_SHMEM: u64 = 7;

    /// `SBI_PMU_CFG_FLAG_SKIP_MATCH`.
    pub const CFG_SKIP_MATCH: u64 = 1 << 0;
    /// `SBI_PMU_CFG_FLAG_CLEAR_VALUE`.
    pub const CFG_CLEAR_VALUE: u64 = 1 << 1;
    /// `SBI_PMU_CFG_FLAG_AUTO_START`.
    pub const CFG_AUTO_START: u64 = 1 << 2;
    /// `SBI_PMU_CFG_FLAG_SET_VUINH`.
    pub const CFG_SET_VUINH: u64 = 1 << 3;
    /// `SBI_PMU_CFG_FLAG_SET_VSINH`.
    pub const CFG_SET_VSINH: u64 = 1 << 4;
    /// `SBI_PMU_CFG_FLAG_SET_UINH`.
    pub const CFG_SET_UINH: u64 = 1 << 5;
    /// `SBI_PMU_CFG_FLAG_SET_SINH`.
    pub const CFG_SET_SINH: u64 = 1 << 6;
    /// `SBI_PMU_CFG_FLAG_SET_MINH`.
    pub const CFG_SET_MINH: u64 = 1 << 7;
    /// `SBI_PMU_START_SET_INIT_VALUE`.
    pub const START_SET_INIT_VALUE: u64 = 1 << 0;
    /// `SBI_PMU_START_FLAG_INIT_SNAPSHOT`.
    pub const START_INIT_SNAPSHOT: u64 = 1 << 1;
    /// `SBI_PMU_STOP_FLAG_RESET`.
    pub const STOP_RESET: u64 = 1 << 0;
    /// `SBI_PMU_STOP_FLAG_TAKE_SNAPSHOT`.
    pub const STOP_TAKE_SNAPSHOT: u64 = 1 << 1;
    /// `counter_info[XLEN-1]`: firmware counter.
    pub const INFO_FIRMWARE: u64 = 1 << 63;
    /// Size of the snapshot shared memory.
    pub const SHMEM_SIZE: u64 = 4096;

    /// `SBI_ERR_FAILED`.
    pub const ERR_FAILED: i64 = -1;
    /// `SBI_ERR_NOT_SUPPORTED`.
    pub const ERR_NOT_SUPPORTED: i64 = -2;
    /// `SBI_ERR_INVALID_PARAM`.
    pub const ERR_INVALID_PARAM: i64 = -3;
    /// `SBI_ERR_INVALID_ADDRESS`.
    pub const ERR_INVALID_ADDRESS: i64 = -5;
    /// `SBI_ERR_ALREADY_STARTED`.
    pub const ERR_ALREADY_STARTED: i64 = -7;
    /// `SBI_ERR_ALREADY_STOPPED`.
    pub const ERR_ALREADY_STOPPED: i64 = -8;
    /// `SBI_ERR_NO_SHMEM`.
    pub const ERR_NO_SHMEM: i64 = -9;
}

/// Number of hardware logical counters (indexes 0-31; 1 is not one).
pub const HW_COUNTERS: usize = 32;
/// Number of firmware counters (logical indexes 32-47).
pub const FW_COUNTERS: usize = 16;
/// Number of logical counters (`sbi_pmu_num_counters`).
pub const NUM_COUNTERS: usize = HW_COUNTERS + FW_COUNTERS;

/// Hart counter index of `mcycle`.
pub const CY: usize = 0;
/// Hart counter index of `minstret`.
pub const IR: usize = 2;
/// The hart's programmable counters (`mhpmcounter3-31`).
pub const HPM_COUNTERS: u32 = 29;

/// What a VM gets of performance monitoring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PmuPolicy {
    /// Whether the VM has the SBI PMU extension at all.
    pub enabled: bool,
    /// Hart counters given to the guest (bit i: counter i; bits 1 and 32-63 are ignored).
    pub hw_counters: u32,
    /// Counter-overflow interrupts (Sscofpmf): LCOFI delegated to the guest (`hideleg`
    /// bit 13), `scountovf` readable, `sscofpmf` in the device tree.
    pub sscofpmf: bool,
    /// How the guest's LCOFIs reach it (with `sscofpmf`; [`lcofi`]).
    pub lcofi: LcofiDelivery,
    /// Counter delegation for the guest (Ssccfg, `--pmu-deleg on`): `menvcfg.CDE` = 1, the
    /// guest's `sireg*` accesses at `vsiselect` 0x40-0x5F, `scountinhibit` and `scountovf`
    /// trap and are emulated on its virtual counters ([`deleg`]), which are backed by other
    /// hart counters ([`deleg::deleg_map`]); `ssccfg`, `sscsrind` and `smcntrpmf` in the
    /// device tree. Needs `enabled`.
    pub deleg: bool,
    /// Sampling (Sspesa, PDIS; [`sample`]): only with `enabled` and `sscofpmf`.
    pub sampling: SamplingPolicy,
    /// The optional snapshot shared memory (`sbi_pmu_snapshot_set_shmem`, SBI v2.0
    /// section 11.12): without it the function returns `SBI_ERR_NOT_SUPPORTED`.
    pub snapshot: bool,
}

impl PmuPolicy {
    /// The default PMU: every hart counter, with overflow interrupts.
    pub fn on() -> PmuPolicy {
        PmuPolicy {
            enabled: true,
            hw_counters: !0b10,
            sscofpmf: true,
            lcofi: LcofiDelivery::Direct,
            deleg: false,
            sampling: SamplingPolicy::on(),
            snapshot: true,
        }
    }

    /// No PMU: the extension is not offered and the hart's counters are left alone.
    pub fn off() -> PmuPolicy {
        PmuPolicy {
            enabled: false,
            hw_counters: 0,
            sscofpmf: false,
            lcofi: LcofiDelivery::Direct,
            deleg: false,
            sampling: SamplingPolicy::off(),
            snapshot: false,
        }
    }

    /// The sampling the guest really gets: none without a PMU with overflow interrupts.
    pub fn effective_sampling(&self) -> SamplingPolicy {
        if self.enabled && self.sscofpmf {
            self.sampling
        } else {
            SamplingPolicy {
                sspesa: false,
                pdis: false,
                ..self.sampling
            }
        }
    }

    /// The default PMU with only `n` hpm counters (3 to 2 + `n`) besides `cycle` and
    /// `instret`, as a host that keeps the others for itself would give; `None` if `n` is
    /// more than [`HPM_COUNTERS`].
    pub fn with_hpm_counters(n: u32) -> Option<PmuPolicy> {
        (n <= HPM_COUNTERS).then(|| PmuPolicy {
            hw_counters: (1 << CY | 1 << IR | ((1u64 << n) - 1) << 3) as u32,
            ..PmuPolicy::on()
        })
    }

    /// This policy with counter delegation for the guest on or off (on only with a PMU).
    pub fn with_deleg(self, deleg: bool) -> PmuPolicy {
        PmuPolicy {
            deleg: deleg && self.enabled,
            ..self
        }
    }

    /// Whether the guest has counter delegation (Ssccfg).
    pub fn deleg_on(&self) -> bool {
        self.enabled && self.deleg
    }

    /// The hart counters given to the guest.
    pub fn hw_mask(&self) -> u32 {
        if self.enabled {
            self.hw_counters & !0b10
        } else {
            0
        }
    }
}

/// Why an SBI PMU call failed; [`PmuError::sbi_error`] is the SBI error code.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum PmuError {
    /// No such SBI PMU function (or a v3.0 one).
    #[error("SBI PMU function {0} is not supported")]
    UnknownFunction(u64),
    /// A single counter index names no counter (or a hardware counter where a firmware one
    /// is needed).
    #[error("counter {0} is not a valid counter here")]
    InvalidCounter(u64),
    /// A counter set is empty or reaches past the last logical counter.
    #[error("counter set (base {base}, mask {mask:#x}) is empty or reaches past the last counter")]
    InvalidCounterSet {
        /// `counter_idx_base`.
        base: u64,
        /// `counter_idx_mask`.
        mask: u64,
    },
    /// Reserved or contradictory flag bits.
    #[error("flags {0:#x} are reserved or contradictory")]
    InvalidFlags(u64),
    /// An `event_idx` the spec does not define.
    #[error("event_idx {0:#x} is not a valid encoding")]
    InvalidEvent(u64),
    /// `event_data` where the spec reserves it, or too wide.
    #[error("event_data {event_data:#x} is invalid for event_idx {event_idx:#x}")]
    InvalidEventData {
        /// The event.
        event_idx: u64,
        /// The data.
        event_data: u64,
    },
    /// A valid event nothing here counts.
    #[error("event_idx {0:#x} is not counted by this hart or VMM")]
    EventNotSupported(u64),
    /// No counter of the set is stopped and able to count the event.
    #[error("no free counter of the set can count event_idx {0:#x}")]
    NoMatchingCounter(u64),
    /// A counter of the set was already started.
    #[error("a counter of the set was already started")]
    AlreadyStarted,
    /// A counter of the set was already stopped.
    #[error("a counter of the set was already stopped")]
    AlreadyStopped,
    /// Snapshot flags without snapshot shared memory.
    #[error("no PMU snapshot shared memory is set")]
    NoShmem,
    /// The shared memory address is not page aligned.
    #[error("shared memory address {0:#x} is not 4096-byte aligned")]
    ShmemMisaligned(u64),
    /// The shared memory is not (entirely) in guest RAM.
    #[error("shared memory at {lo:#x} (high {hi:#x}) is not 4 KiB of guest RAM")]
    ShmemAddress {
        /// `shmem_phys_lo`.
        lo: u64,
        /// `shmem_phys_hi`.
        hi: u64,
    },
    /// The VM is configured without the snapshot shared memory.
    #[error("the PMU snapshot shared memory is not offered to this VM")]
    SnapshotUnsupported,
    /// Guest memory could not be accessed.
    #[error("guest memory access at {0:#x} failed")]
    Memory(u64),
}

impl PmuError {
    /// The SBI error code the spec names for this failure.
    pub fn sbi_error(&self) -> i64 {
        use sbi::*;
        match self {
            PmuError::UnknownFunction(_)
            | PmuError::EventNotSupported(_)
            | PmuError::NoMatchingCounter(_)
            | PmuError::SnapshotUnsupported => ERR_NOT_SUPPORTED,
            PmuError::InvalidCounter(_)
            | PmuError::InvalidCounterSet { .. }
            | PmuError::InvalidFlags(_)
            | PmuError::InvalidEvent(_)
            | PmuError::InvalidEventData { .. }
            | PmuError::ShmemMisaligned(_) => ERR_INVALID_PARAM,
            PmuError::AlreadyStarted => ERR_ALREADY_STARTED,
            PmuError::AlreadyStopped => ERR_ALREADY_STOPPED,
            PmuError::NoShmem => ERR_NO_SHMEM,
            PmuError::ShmemAddress { .. } => ERR_INVALID_ADDRESS,
            PmuError::Memory(_) => ERR_FAILED,
        }
    }
}
