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

pub use vcpu_api::pmu::{from_selector, selector, CatalogEntry, Event, CATALOG, NUM_EVENTS};

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
