//! The exit interface: why [`crate::Hart::run`] returned.
//!
//! It is shaped like KVM's `kvm_run` exits so that a hardware backend could present the same
//! interface: no interpreter details leak through it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One MMIO access the hart could not complete by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmioAccess {
    /// Physical address.
    pub addr: u64,
    /// Access size in bytes: 1, 2, 4 or 8.
    pub size: u8,
    /// `Some(data)` for a store (already retired when the exit is reported); `None` for a
    /// load, which the caller completes with [`crate::Hart::complete_mmio_read`] before the next
    /// [`crate::Hart::run`].
    pub write: Option<u64>,
}

/// Why [`crate::Hart::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VcpuExit {
    /// The hart touched a device.
    Mmio(MmioAccess),
    /// The hart executed WFI and no enabled interrupt is pending. The WFI has retired; the
    /// caller may advance time (see [`crate::Hart::skip_to_timer`]) and run again.
    Wfi,
    /// The instruction budget given to `run` is used up.
    BudgetExhausted,
    /// Another thread called [`StopHandle::stop`].
    StopRequested,
}

/// Lets another thread ask a running hart to return [`VcpuExit::StopRequested`].
#[derive(Debug, Clone, Default)]
pub struct StopHandle(pub(crate) Arc<AtomicBool>);

impl StopHandle {
    /// Ask the hart to stop at the next instruction boundary it checks (within a few thousand
    /// instructions).
    pub fn stop(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub(crate) fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
}
