//! A debugger's breakpoints and watchpoints on the hart: the debugger-owned triggers.
//!
//! A hart may hold, besides the triggers its guest programs (Sdtrig), a bank of triggers
//! only an external debugger programs: as if the hart had extra triggers with `dmode` = 1
//! and `action` = 1 ("enter Debug Mode", RISC-V Debug Specification 1.0, 5.7 "Trigger
//! Module Registers", `mcontrol6`), which the guest can neither see nor change. A point that
//! matches stops the hart *before* the instruction (`timing` before): the instruction has no
//! effect at all, and [`crate::Vcpu::run`] returns [`crate::VcpuExit::DebugPoint`] with the
//! pc at the instruction. Matching uses the virtual address the guest's own triggers
//! compare (the instruction's address; the effective address of a load or store, any of its
//! bytes), in every privilege mode, with no reentrancy rule: a debugger stops everywhere.

/// Which accesses a watchpoint stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WatchKind {
    /// Loads (and the load half of an AMO, LR).
    Load,
    /// Stores (and the store half of an AMO, SC).
    Store,
    /// Both.
    Access,
}

/// One debugger point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DebugPoint {
    /// Stop before executing the instruction at this virtual address.
    Execute(u64),
    /// Stop before a data access of `kind` with any byte in `addr..addr + len`.
    Watch {
        /// The first byte watched.
        addr: u64,
        /// How many bytes (1 or more; the range may not wrap past the top of the address
        /// space).
        len: u64,
        /// Which accesses.
        kind: WatchKind,
    },
}

/// What the access that hit a watchpoint was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HitAccess {
    /// An instruction fetch (an execute point).
    Execute,
    /// A load (LR included).
    Load,
    /// A store (SC included).
    Store,
    /// An AMO: a load and a store.
    LoadStore,
}

/// A debugger point that stopped the hart ([`crate::VcpuExit::DebugPoint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DebugHit {
    /// The point (the lowest-numbered one, in the order they were added, when several
    /// match).
    pub point: DebugPoint,
    /// The access: fetch, load, store or both.
    pub access: HitAccess,
    /// The address that matched: the instruction's for an execute point, otherwise the
    /// first byte of the access inside the watched range.
    pub addr: u64,
}

/// Why a debugger point could not be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DebugPointError {
    /// The bank is full.
    #[error("the hart holds at most {max} debugger breakpoints and watchpoints")]
    Full {
        /// The bank's size.
        max: usize,
    },
    /// A watchpoint of no bytes, or one whose range wraps past the top of the address space.
    #[error("cannot watch {len} bytes at {addr:#x}")]
    BadRange {
        /// The first byte.
        addr: u64,
        /// The length.
        len: u64,
    },
    /// The vCPU has no debugger points.
    #[error("this vCPU has no debugger breakpoints or watchpoints")]
    Unsupported,
}
