//! The performance-monitoring hardware as a VMM sees it: the event catalog (what
//! `mhpmevent3-31` can select, Zihpm; the SBI PMU extension's encodings where it has them),
//! and the configuration of the draft extensions (Sspesa, Smpdis/Sspdis), whose CSRs have no
//! assigned numbers yet. The CSR fields (`mhpmevent.OF`, `MINH`, ..., `xpdisctl`) are in
//! [`crate::csr`].
//!
//! Where the SBI PMU extension defines an encoding (hardware general events 0x1-0x6, hardware
//! cache events `0x10000 | cache_id << 3 | op_id << 1 | result_id`), the selector value is the
//! SBI `event_idx`, so a hypervisor can program an SBI event straight into `mhpmevent`. The
//! hart's own events (raw events in SBI terms) sit at 0x100-0x11F. The list, with the model
//! behind each event, is in `docs/pmu.md`.

/// An event of the catalog, as a dense index into the hart's event tallies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Event {
    /// Cycles of the cost model (`model::Cost`).
    Cycles = 0,
    /// Instructions retired.
    Instret,
    /// L1 data cache accesses (reads and writes).
    L1dAccess,
    /// L1 data cache misses.
    L1dMiss,
    /// Conditional branches retired.
    Branches,
    /// Mispredicted control transfers (conditional branches and indirect jumps).
    BranchMisses,
    /// L1 data cache read accesses.
    L1dReadAccess,
    /// L1 data cache read misses.
    L1dReadMiss,
    /// L1 data cache write accesses.
    L1dWriteAccess,
    /// L1 data cache write misses.
    L1dWriteMiss,
    /// Data TLB misses of loads.
    DtlbReadMiss,
    /// Data TLB misses of stores.
    DtlbWriteMiss,
    /// Instruction TLB misses.
    ItlbMiss,
    /// Taken conditional branches.
    TakenBranches,
    /// Instructions retired that load (loads, LR, AMOs, HLV).
    Loads,
    /// Instructions retired that store (stores, SC, AMOs, HSV).
    Stores,
    /// Exceptions taken (any privilege level).
    Exceptions,
    /// Interrupts taken (any privilege level).
    Interrupts,
    /// JAL and JALR retired.
    Jumps,
    /// PDIS `INST.DEC.SPEC`: instructions decoded.
    InstDec,
    /// PDIS `INST.DEC.BRJMP.SPEC`: control transfer instructions decoded.
    InstDecBrjmp,
    /// PDIS `INST.DEC.LOAD.SPEC`: load instructions decoded.
    InstDecLoad,
    /// PDIS `INST.DEC.STORE.SPEC`: store instructions decoded.
    InstDecStore,
    /// PDIS `INST.DEC.LDST.SPEC`: load and/or store instructions decoded.
    InstDecLdst,
    /// PDIS `PDIS.SAMPLES`: qualified samples recorded (this and the `INST.DEC.*` events:
    /// Smpdis "Performance Events").
    PdisSamples,
    /// PDIS `PDIS.COLLISIONS`: PDIS counter overflows while a sample is active.
    PdisCollisions,
    /// PDIS `PDIS.FILTERED`: samples filtered out.
    PdisFiltered,
    /// PDIS `PDIS.DROPPED`: samples dropped (backpressure).
    PdisDropped,
}

/// Number of events in the catalog.
pub const NUM_EVENTS: usize = Event::PdisDropped as usize + 1;

/// One catalog row: selector value, event, name, and what it counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogEntry {
    /// `mhpmevent[55:0]` value.
    pub selector: u64,
    /// The event.
    pub event: Event,
    /// Name (SBI name, or the PDIS draft's name).
    pub name: &'static str,
}

macro_rules! catalog {
    ($($sel:expr => $ev:ident, $name:expr;)*) => {
        /// Every event the hart counts, by selector value (with the Smpdis draft's
        /// "Performance Events", 0x110-0x11B).
        pub static CATALOG: &[CatalogEntry] = &[
            $(CatalogEntry { selector: $sel, event: Event::$ev, name: $name },)*
        ];
    };
}

catalog! {
    0x1 => Cycles, "CPU_CYCLES";
    0x2 => Instret, "INSTRUCTIONS";
    0x3 => L1dAccess, "CACHE_REFERENCES";
    0x4 => L1dMiss, "CACHE_MISSES";
    0x5 => Branches, "BRANCH_INSTRUCTIONS";
    0x6 => BranchMisses, "BRANCH_MISSES";
    0x100 => TakenBranches, "BRANCH_TAKEN";
    0x101 => Loads, "LOADS";
    0x102 => Stores, "STORES";
    0x103 => Exceptions, "EXCEPTIONS";
    0x104 => Interrupts, "INTERRUPTS";
    0x105 => Jumps, "JUMPS";
    0x110 => InstDec, "INST.DEC.SPEC";
    0x111 => InstDecBrjmp, "INST.DEC.BRJMP.SPEC";
    0x112 => InstDecLoad, "INST.DEC.LOAD.SPEC";
    0x113 => InstDecStore, "INST.DEC.STORE.SPEC";
    0x114 => InstDecLdst, "INST.DEC.LDST.SPEC";
    0x118 => PdisSamples, "PDIS.SAMPLES";
    0x119 => PdisCollisions, "PDIS.COLLISIONS";
    0x11a => PdisFiltered, "PDIS.FILTERED";
    0x11b => PdisDropped, "PDIS.DROPPED";
    0x10000 => L1dReadAccess, "L1D_READ_ACCESS";
    0x10001 => L1dReadMiss, "L1D_READ_MISS";
    0x10002 => L1dWriteAccess, "L1D_WRITE_ACCESS";
    0x10003 => L1dWriteMiss, "L1D_WRITE_MISS";
    0x10019 => DtlbReadMiss, "DTLB_READ_MISS";
    0x1001b => DtlbWriteMiss, "DTLB_WRITE_MISS";
    0x10021 => ItlbMiss, "ITLB_READ_MISS";
}

/// The event a selector value (`mhpmevent[55:0]`) names, if it is in the catalog.
pub fn from_selector(sel: u64) -> Option<Event> {
    CATALOG.iter().find(|e| e.selector == sel).map(|e| e.event)
}

/// The selector value of an event.
pub fn selector(ev: Event) -> u64 {
    CATALOG
        .iter()
        .find(|e| e.event == ev)
        .map_or(0, |e| e.selector)
}

/// The provisional numbers of the draft extensions' CSRs and `mstateen0` bit (Sspesa, Smpdis:
/// the draft assigns none). One table, overridable per hart ([`PmuConfig::numbers`]); see
/// `docs/csr-map.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DraftNumbers {
    /// `shpmspc` (Sspesa).
    pub shpmspc: u16,
    /// `shpmsdata` (Sspesa).
    pub shpmsdata: u16,
    /// `spdisctl`.
    pub spdisctl: u16,
    /// `spdiscounter`.
    pub spdiscounter: u16,
    /// `spdisevmask`.
    pub spdisevmask: u16,
    /// `spdisevmatch`.
    pub spdisevmatch: u16,
    /// `spdisfilter`.
    pub spdisfilter: u16,
    /// `vspdisctl`.
    pub vspdisctl: u16,
    /// `mpdisctl`.
    pub mpdisctl: u16,
    /// The `mstateen0`/`hstateen0` bit of PDIS state.
    pub stateen_pdis_bit: u8,
}

impl DraftNumbers {
    /// The project's provisional numbers: the custom read/write ranges of each level
    /// (S 0x5C0-, HS 0x6C0-, M 0x7C0-) and `mstateen0` bit 53.
    pub const PROVISIONAL: DraftNumbers = DraftNumbers {
        shpmspc: crate::csr::SHPMSPC,
        shpmsdata: crate::csr::SHPMSDATA,
        spdisctl: crate::csr::SPDISCTL,
        spdiscounter: crate::csr::SPDISCOUNTER,
        spdisevmask: crate::csr::SPDISEVMASK,
        spdisevmatch: crate::csr::SPDISEVMATCH,
        spdisfilter: crate::csr::SPDISFILTER,
        vspdisctl: crate::csr::VSPDISCTL,
        mpdisctl: crate::csr::MPDISCTL,
        stateen_pdis_bit: 53,
    };

    /// (configured number, provisional number) of every CSR.
    pub fn pairs(&self) -> [(u16, u16); 9] {
        let p = Self::PROVISIONAL;
        [
            (self.shpmspc, p.shpmspc),
            (self.shpmsdata, p.shpmsdata),
            (self.spdisctl, p.spdisctl),
            (self.spdiscounter, p.spdiscounter),
            (self.spdisevmask, p.spdisevmask),
            (self.spdisevmatch, p.spdisevmatch),
            (self.spdisfilter, p.spdisfilter),
            (self.vspdisctl, p.vspdisctl),
            (self.mpdisctl, p.mpdisctl),
        ]
    }
}

impl Default for DraftNumbers {
    fn default() -> Self {
        Self::PROVISIONAL
    }
}

/// What a hart implements of the performance-monitoring extensions beyond the ratified
/// ones (which are always present).
#[derive(Clone, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct PmuConfig {
    /// CSR numbers and the stateen bit of the draft extensions.
    pub numbers: DraftNumbers,
}

impl PmuConfig {
    /// Reject numbers that collide or change privilege class.
    pub fn validate(&self) -> Result<(), PmuConfigError> {
        let pairs = self.numbers.pairs();
        for (i, &(n, p)) in pairs.iter().enumerate() {
            if n > 0xfff || n >> 8 != p >> 8 || (n >> 10) & 3 == 3 {
                return Err(PmuConfigError::Class {
                    number: n,
                    provisional: p,
                });
            }
            if crate::csr::name(n).is_some() && !pairs.iter().any(|&(_, q)| q == n) {
                return Err(PmuConfigError::Taken(n));
            }
            if pairs[i + 1..].iter().any(|&(m, _)| m == n) {
                return Err(PmuConfigError::Twice(n));
            }
        }
        let b = self.numbers.stateen_pdis_bit;
        if !(3..=53).contains(&b) {
            return Err(PmuConfigError::StateenBit(b));
        }
        Ok(())
    }
}

/// Why a [`PmuConfig`] is not one a hart can have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PmuConfigError {
    /// A draft CSR number outside its provisional number's class.
    #[error(
        "draft CSR number {number:#x} must be a read/write CSR with the privilege class of \
         {provisional:#x} (bits 11:8 = {:#x})",
        provisional >> 8
    )]
    Class {
        /// The configured number.
        number: u16,
        /// The provisional number it replaces.
        provisional: u16,
    },
    /// A draft CSR number another CSR has.
    #[error("draft CSR number {0:#x} is taken by another CSR")]
    Taken(u16),
    /// A number given to two draft CSRs.
    #[error("draft CSR number {0:#x} is given twice")]
    Twice(u16),
    /// The PDIS `mstateen0` bit is not a free one.
    #[error("mstateen0 bit {0} for PDIS: choose a free bit in 3..=53")]
    StateenBit(u8),
}
