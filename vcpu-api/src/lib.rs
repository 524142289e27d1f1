//! `vcpu-api`: the boundary between a RISC-V vCPU backend and a VMM.
//!
//! What a VMM needs from a vCPU, and nothing of how the vCPU is made:
//! - [`Vcpu`] and [`VcpuState`]: the vCPU interface (shaped like KVM's) and state
//!   save/restore, with the exits ([`VcpuExit`]) and typed errors ([`CsrError`],
//!   [`StateError`]).
//! - [`csr`]: every CSR number and the fields the project uses, defined once (the C guests
//!   get the same through the generated `guest/sdk/include/csr.h`).
//! - [`trap`]: exception and interrupt causes.
//! - [`ctr`]: Control Transfer Records configuration, entries, transfer types, cycle counts.
//! - [`pmu`]: the event catalog and the draft extensions' CSR numbers.
//! - [`zicsr`]: decoding and emulating a trapped CSR instruction.
//! - [`DebugPoint`]: a debugger's breakpoints and watchpoints on the hart.
//! - [`SharedClock`], [`HartMailbox`]: cross-thread plumbing of a multi-vCPU machine.
//! - [`ClockMode`], [`HostClock`]: virtual time or the host's monotonic clock.
//! - [`fake`]: a fake vCPU for unit tests.
//!
//! The software hart (crate `vcpu`) implements the traits; `ctr-virt` and `pmu-virt` use only
//! this crate.

mod clock;
pub mod csr;
pub mod ctr;
mod debug;
mod exit;
pub mod fake;
pub mod pmu;
mod smp;
pub mod trap;
mod vcpu;
pub mod zicsr;

pub use clock::{ClockMode, HostClock};
pub use debug::{DebugHit, DebugPoint, DebugPointError, HitAccess, WatchKind};
pub use exit::{GuestTrap, MmioAccess, StopHandle, VcpuExit};
pub use smp::{HartMailbox, SharedClock, MAILBOX_MSI_IDS};
pub use vcpu::{
    CsrError, DebugAccess, DebugTranslateError, GuestTraps, PrivilegeMode, StateError, TraceRange,
    Vcpu, VcpuState,
};

/// Frequency of `mtime`/`time` in Hz (the same timebase as QEMU's `virt` board).
pub const TIMEBASE_HZ: u64 = 10_000_000;

/// Retired-instruction slots per `mtime` tick: the hart's nominal speed is 100 MIPS of
/// virtual time, so time is deterministic and independent of the host's speed.
pub const INSNS_PER_TICK: u64 = 10;
