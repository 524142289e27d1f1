//! The event catalog: what `mhpmevent3-31` can select (bits 55:0), and how each decoded
//! operation contributes to it.
//!
//! Where the SBI PMU extension defines an encoding (hardware general events 0x1-0x6, hardware
//! cache events `0x10000 | cache_id << 3 | op_id << 1 | result_id`), the selector value is the
//! SBI `event_idx`, so a hypervisor can program an SBI event straight into `mhpmevent`. The
//! hart's own events (raw events in SBI terms) sit at 0x100-0x11F. The list, with the model
//! behind each event, is in `docs/pmu.md`.
//!
//! A selector value outside the catalog is WARL-legalized to 0 (no event), so software can
//! probe which events exist by writing and reading back.

use crate::decode::Op;

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
    /// PDIS `PDIS.SAMPLES`: qualified samples recorded.
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
        /// Every event the hart counts, by selector value.
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

/// What a decoded operation is, for the event counts and PDIS's `SEL`/`TYPE` (bit set).
pub mod class {
    /// Performs an explicit load.
    pub const LOAD: u8 = 1;
    /// Performs an explicit store.
    pub const STORE: u8 = 2;
    /// Performs an explicit load or store.
    pub const MEMORY: u8 = LOAD | STORE;
    /// A conditional branch.
    pub const BRANCH: u8 = 4;
    /// JAL or JALR.
    pub const JUMP: u8 = 8;
    /// MRET or SRET (a control transfer for PDIS, not a branch or jump).
    pub const XRET: u8 = 16;
    /// Integer multiply (cost model).
    pub const MUL: u8 = 32;
    /// Integer divide or remainder (cost model).
    pub const DIV: u8 = 64;
}

/// The [`class`] bits of an operation.
pub const fn op_class(op: Op) -> u8 {
    use class::*;
    use Op::*;
    match op {
        Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu | Flw | Fld | Lr | HlvB | HlvBu | HlvH | HlvHu
        | HlvxHu | HlvW | HlvWu | HlvxWu | HlvD => LOAD,
        Sb | Sh | Sw | Sd | Fsw | Fsd | Sc | HsvB | HsvH | HsvW | HsvD => STORE,
        AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu | AmoMaxu => {
            LOAD | STORE
        }
        Beq | Bne | Blt | Bge | Bltu | Bgeu => BRANCH,
        Jal | Jalr => JUMP,
        Mret | Sret => XRET,
        Mul | Mulh | Mulhsu | Mulhu | Mulw => MUL,
        Div | Divu | Rem | Remu | Divw | Divuw | Remw | Remuw => DIV,
        _ => 0,
    }
}

/// Operations numbered below this one are the ones with a [`class`] (the decoder's `Op` lists
/// them first), so the interpreter's monitoring variant tells them apart with one comparison.
pub const FIRST_QUIET: u8 = Op::Lui as u8;

/// [`op_class`] for every operation, indexed by `Op as u8`.
pub static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i <= Op::Sctrclr as usize {
        // SAFETY: `Op` is `repr(u8)` with consecutive discriminants 0..=Sctrclr.
        t[i] = op_class(unsafe { std::mem::transmute::<u8, Op>(i as u8) });
        i += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_consistent() {
        assert_eq!(CATALOG.len(), NUM_EVENTS);
        for (i, a) in CATALOG.iter().enumerate() {
            assert!(a.selector != 0 && a.selector >> 56 == 0, "{}", a.name);
            for b in &CATALOG[i + 1..] {
                assert_ne!(a.selector, b.selector);
                assert_ne!(a.event, b.event);
            }
            assert_eq!(from_selector(a.selector), Some(a.event));
            assert_eq!(selector(a.event), a.selector);
        }
        assert_eq!(from_selector(0), None);
        assert_eq!(from_selector(0x7), None);
        assert_eq!(CLASS[Op::Ld as usize], class::LOAD);
        assert_eq!(CLASS[Op::AmoAdd as usize], class::LOAD | class::STORE);
        assert_eq!(CLASS[Op::Jalr as usize], class::JUMP);
        assert_eq!(CLASS[Op::Sctrclr as usize], 0);
        for (i, &c) in CLASS
            .iter()
            .enumerate()
            .take(Op::Sctrclr as usize + 1)
            .skip(1)
        {
            assert_eq!(c != 0, i < FIRST_QUIET as usize, "op {i}");
        }
    }
}
