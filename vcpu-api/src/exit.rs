//! The exit interface: why [`crate::Vcpu::run`] returned.
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
    /// load, which the caller completes with [`crate::Vcpu::complete_mmio_read`] before the next
    /// [`crate::Vcpu::run`].
    pub write: Option<u64>,
}

/// Why [`crate::Vcpu::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VcpuExit {
    /// The hart touched a device.
    Mmio(MmioAccess),
    /// The hart executed WFI and no enabled interrupt is pending. The WFI has retired; the
    /// caller may advance time (see [`crate::Vcpu::skip_to_timer`]) and run again.
    Wfi,
    /// The instruction budget given to `run` is used up.
    BudgetExhausted,
    /// Another thread called [`StopHandle::stop`].
    StopRequested,
    /// Hosted mode: the guest took a trap that would go to HS-mode or M-mode, where the VMM
    /// is. The hart is left at the trapping instruction with the guest's state unchanged;
    /// the VMM emulates and resumes past it, or redirects the trap into the guest with
    /// [`crate::Vcpu::inject_exception`].
    GuestTrap(GuestTrap),
    /// Hosted mode: an HS-level interrupt is pending and enabled (in `sip` and `sie`, not
    /// delegated by `hideleg`), with the interrupt code. While V=1, HS-level interrupts are
    /// always enabled (privileged spec, H extension, "Trap Entry"), so the hart leaves the
    /// guest before its next instruction; the guest's state is unchanged. The only such
    /// interrupt the hart raises by itself is the local counter-overflow interrupt (13,
    /// Sscofpmf) when the VMM keeps it (`hideleg` bit 13 = 0, "selective delivery"): the VMM
    /// clears `sip.LCOFI` and may pass it on through `hvien`/`hvip` (AIA).
    HostInterrupt(u64),
    /// A debugger point ([`crate::Vcpu::add_debug_point`]) matched: the hart stopped before
    /// the instruction at its pc, which has had no effect (no trap, no access, not
    /// retired). [`crate::Vcpu::skip_debug_points_once`] lets the next run execute it.
    DebugPoint(crate::DebugHit),
}

/// A guest trap reported to the VMM (hosted mode), with what HS-mode would have been told
/// in `scause`, `stval`, `htval`, `htinst` and `hstatus.GVA`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestTrap {
    /// Exception code (interrupts do not exit: VS-level interrupts go to the guest).
    pub cause: u64,
    /// `stval`.
    pub tval: u64,
    /// `htval`: guest physical address >> 2 for guest-page faults, else 0.
    pub htval: u64,
    /// `htinst`: transformed instruction, pseudoinstruction, or 0.
    pub htinst: u64,
    /// `hstatus.GVA`: `tval` is a guest virtual address.
    pub gva: bool,
    /// Address of the trapping instruction (`sepc`).
    pub pc: u64,
    /// The trapping instruction's bits (16 significant bits if compressed; 0 when the trap
    /// happened before an instruction was fetched).
    pub insn: u32,
    /// The guest was in VU-mode (`hstatus.SPVP` = 0), not VS-mode.
    pub from_vu: bool,
}

/// Lets another thread ask a running hart to return [`VcpuExit::StopRequested`].
#[derive(Debug, Clone, Default)]
pub struct StopHandle(Arc<AtomicBool>);

impl StopHandle {
    /// Ask the hart to stop at the next instruction boundary it checks (within a few thousand
    /// instructions).
    pub fn stop(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Backend side: whether a stop is requested (without clearing it).
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Backend side: whether a stop was requested since the last call (and clear it).
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
}
