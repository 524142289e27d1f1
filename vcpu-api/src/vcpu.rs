//! The backend-neutral vCPU interface.
//!
//! A VMM drives a guest through [`Vcpu`], shaped like KVM's vCPU interface so that a
//! hardware-backed vCPU could implement it too: run until an exit, read and write the
//! guest's registers, complete MMIO loads, redirect traps into the guest, drive its VS-level
//! interrupts and timer, and reach the hypervisor-level CSRs (HS-mode's view) that a
//! hypervisor needs to virtualize CTR and the counters. [`VcpuState`] saves and restores the
//! whole architectural state (snapshots, migration, several vCPUs on one hart).
//!
//! The software hart (`vcpu::Hart` in *hosted mode*) implements both; [`crate::fake::FakeVcpu`]
//! implements [`Vcpu`] for unit tests of code above the boundary.

use std::sync::Arc;

use crate::ctr::{CtrConfig, CtrEntry};
use crate::exit::{StopHandle, VcpuExit};
use crate::smp::HartMailbox;

/// Privilege levels (privileged spec 1.2, "Privilege Levels").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum PrivilegeMode {
    /// U-mode.
    User = 0,
    /// S-mode.
    Supervisor = 1,
    /// M-mode.
    Machine = 3,
}

impl PrivilegeMode {
    /// Decode a 2-bit privilege field; the reserved value 2 reads as U (MPP is WARL and never
    /// holds 2).
    pub fn from_bits(v: u64) -> PrivilegeMode {
        match v & 3 {
            3 => PrivilegeMode::Machine,
            1 => PrivilegeMode::Supervisor,
            _ => PrivilegeMode::User,
        }
    }
}

/// Why a hypervisor-level CSR access through [`Vcpu::host_csr`] or [`Vcpu::set_host_csr`]
/// failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CsrError {
    /// The vCPU does not implement the CSR.
    #[error("CSR {0:#05x} is not implemented")]
    NotImplemented(u16),
    /// The CSR is read-only (number bits 11:10 = 3, or no write behaviour).
    #[error("CSR {0:#05x} is read-only")]
    ReadOnly(u16),
}

/// Guest instructions a VMM can ask to trap (`hstatus` bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuestTraps {
    /// WFI in VS-mode (`hstatus.VTW`).
    pub wfi: bool,
    /// SRET in VS-mode (`hstatus.VTSR`).
    pub sret: bool,
    /// SFENCE.VMA and `satp` accesses in VS-mode (`hstatus.VTVM`).
    pub vm: bool,
}

/// Why a saved state cannot be restored onto a vCPU.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum StateError {
    /// A field is malformed.
    #[error("bad hart state: {0}")]
    Malformed(String),
    /// The vCPU cannot hold the state (its configuration lacks something the state uses).
    #[error("this hart cannot hold the saved state: {0}")]
    Unsupported(String),
}

/// Which instructions `--trace` prints: those whose number (counted as an instruction budget
/// counts them, from 1) is in `insns` and whose pc is in `pcs`, both half-open ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRange {
    /// Instruction numbers.
    pub insns: std::ops::Range<u64>,
    /// Addresses.
    pub pcs: std::ops::Range<u64>,
}

impl Default for TraceRange {
    fn default() -> Self {
        TraceRange {
            insns: 0..u64::MAX,
            pcs: 0..u64::MAX,
        }
    }
}

impl TraceRange {
    /// Whether `v` is in `range` (a range ending at `u64::MAX` includes it).
    pub fn contains(range: &std::ops::Range<u64>, v: u64) -> bool {
        range.contains(&v) || (range.end == u64::MAX && v == u64::MAX)
    }
}

/// The kind of access [`Vcpu::debug_translate`] translates for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DebugAccess {
    /// An instruction fetch (the hart's current privilege and virtualization mode).
    Fetch,
    /// A load (with `mstatus.MPRV`/`MPV` applied as the hart's own loads apply them).
    Load,
    /// A store (with `mstatus.MPRV`/`MPV` applied as the hart's own stores apply them).
    Store,
}

/// Why [`Vcpu::debug_translate`] found no mapping: the analogue of the fault the access
/// would raise (without the permission checks the debugger bypasses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DebugTranslateError {
    /// The address is not canonical, or the first-stage (`satp`/`vsatp`) walk found an
    /// invalid or malformed page-table entry: a page fault.
    #[error("no valid page-table mapping for virtual address {vaddr:#x} (page fault)")]
    PageFault {
        /// The virtual address translated.
        vaddr: u64,
    },
    /// The G-stage (`hgatp`) has no valid mapping for guest physical address `gpa`: either
    /// the translated address or one of the VS-stage page-table entries read on the way (a
    /// guest-page fault).
    #[error(
        "no valid G-stage mapping for guest physical address {gpa:#x} \
         (translating {vaddr:#x}; guest-page fault)"
    )]
    GuestPageFault {
        /// The virtual address translated.
        vaddr: u64,
        /// The guest physical address the G-stage could not translate.
        gpa: u64,
    },
    /// A page-table entry on the walk lies outside the hart's RAM (an access fault).
    #[error("a page-table entry for virtual address {vaddr:#x} is outside RAM (access fault)")]
    AccessFault {
        /// The virtual address translated.
        vaddr: u64,
    },
}

/// A virtual CPU as a VMM sees it (see the module documentation).
pub trait Vcpu {
    /// Run the guest until an exit; at most `budget` instructions. Guest RAM may have been
    /// written since the last run by others than the guest (a loader, a debugger, a
    /// device): the guest's instruction fetches see what is there now.
    fn run(&mut self, budget: u64) -> VcpuExit;
    /// [`Vcpu::run`] for a VMM that has let nothing but the guest write guest RAM since the
    /// last run returned (after a [`VcpuExit::BudgetExhausted`] it went straight on): an
    /// implementation that keeps translated code need not look for code changed behind the
    /// guest's back. Writes by other harts still reach this one's fetches as the guest
    /// orders them (FENCE.I, remote fences).
    fn run_on(&mut self, budget: u64) -> VcpuExit {
        self.run(budget)
    }
    /// How far the next runs may go past their budget, for a VMM whose budget is only a
    /// time slice (not `--max-insns`): up to `slack` instructions more, where that lets
    /// translated code finish the block it is in instead of interpreting the block's tail
    /// one instruction at a time. 0 (the default): a run never executes more than its
    /// budget. Timer deadlines stay exact either way.
    fn set_budget_slack(&mut self, slack: u64) {
        let _ = slack;
    }
    /// The guest's program counter.
    fn pc(&self) -> u64;
    /// Set the guest's program counter (e.g. past an emulated instruction).
    fn set_pc(&mut self, pc: u64);
    /// Integer register `i`.
    fn xreg(&self, i: usize) -> u64;
    /// Set integer register `i` (x0 is ignored).
    fn set_xreg(&mut self, i: usize, v: u64);
    /// Complete the MMIO load of the last [`VcpuExit::Mmio`] exit.
    fn complete_mmio_read(&mut self, data: u64);
    /// Redirect a trap into the guest: VS-mode trap entry with `vscause` = `cause`,
    /// `vstval` = `tval`, `vsepc` = the current pc. Done as a hypervisor does it (writes to
    /// the VS CSRs and a return into the handler), so the hart's CTR records nothing; a
    /// hypervisor that virtualizes CTR synthesizes the record (`ctr-virt`).
    fn inject_exception(&mut self, cause: u64, tval: u64);
    /// The guest's privilege mode (Supervisor: VS-mode, User: VU-mode).
    fn guest_privilege(&self) -> PrivilegeMode;
    /// Resume the guest in `mode` (Supervisor: VS-mode, User: VU-mode; other modes are
    /// ignored): what a hypervisor's own SRET with `hstatus.SPV` = 1 and `sstatus.SPP` =
    /// `mode` does, for emulating a guest's trap return (`hstatus.VTSR`).
    fn set_guest_privilege(&mut self, mode: PrivilegeMode);
    /// Set the VS-level interrupt lines of `hvip` (VSSIP bit 2, VSTIP 6, VSEIP 10); its other
    /// bits (the AIA's virtual interrupts 13-63, e.g. an LCOFI passed on to the guest) are
    /// left as they are.
    fn set_virtual_interrupts(&mut self, hvip: u64);
    /// Current `hvip`.
    fn virtual_interrupts(&self) -> u64;
    /// Program the guest timer: a VS-level timer interrupt is pending while the guest's time
    /// is at or past `deadline` (`u64::MAX`: off).
    fn set_guest_timer(&mut self, deadline: u64);
    /// The `time` CSR as the guest reads it.
    fn guest_time(&self) -> u64;
    /// After a [`VcpuExit::Wfi`]: advance virtual time to the next deadline; `false` when
    /// nothing can ever wake the guest.
    fn skip_to_timer(&mut self) -> bool;
    /// Whether an enabled interrupt is pending at any level (what ends a WFI), counting
    /// interrupts posted to the mailbox.
    fn wakeup_pending(&self) -> bool;
    /// The virtual clock (instruction slots) at which the earliest enabled timer fires;
    /// `None` when no timer is armed. Comparable with [`crate::SharedClock::now`].
    fn timer_deadline_slots(&self) -> Option<u64>;
    /// Instructions executed so far.
    fn executed(&self) -> u64;
    /// A handle that stops [`Vcpu::run`] from another thread.
    fn stop_handle(&self) -> StopHandle;
    /// The mailbox other threads post interrupts and fence requests to.
    fn mailbox(&self) -> Arc<HartMailbox>;
    /// Replace the mailbox (outside [`Vcpu::run`]): a VMM that multiplexes several vCPUs on
    /// one hart gives each vCPU a mailbox of its own and installs it with the vCPU's state.
    fn set_mailbox(&mut self, mailbox: Arc<HartMailbox>);
    /// SBI HSM `hart_start`: the guest (re)starts in VS-mode at `pc` with `a0`/`a1` set,
    /// `vsatp` Bare and `vsstatus.SIE` clear; other state is kept.
    fn guest_start(&mut self, pc: u64, a0: u64, a1: u64);
    /// Which VS-mode instructions exit to the VMM as virtual-instruction traps
    /// (`hstatus.VTW`, `VTSR`, `VTVM`).
    fn set_guest_traps(&mut self, traps: GuestTraps);
    /// The counters the guest may read directly (`hcounteren`, within what the hart allows);
    /// reads of the others exit as virtual-instruction traps.
    fn set_guest_counteren(&mut self, mask: u64);
    /// The guest's own `scounteren` (whether its U-mode may read a counter).
    fn guest_scounteren(&self) -> u64;
    /// Read CSR `num` as HS/M-mode software would (no access check, no VS substitution:
    /// `vsctrctl`, `vsiselect`/`vsireg*`, `hstateen0`, `sctrstatus` ...). What a hypervisor
    /// needs to switch and emulate guest state.
    fn host_csr(&self, num: u16) -> Result<u64, CsrError>;
    /// Write CSR `num` as HS/M-mode software would (the CSR's WARL rules apply).
    fn set_host_csr(&mut self, num: u16, value: u64) -> Result<(), CsrError>;
    /// [`Vcpu::set_host_csr`] of a CSR the caller knows the vCPU has: one of its own
    /// extension's registers after checking the vCPU implements the extension (e.g.
    /// `vsctrctl` where [`Vcpu::ctr_config`] is `Some`), or a write-back of a value just read.
    /// A refusal is a backend bug, not a guest's doing: debug builds stop on it.
    fn set_known_csr(&mut self, num: u16, value: u64) {
        let r = self.set_host_csr(num, value);
        debug_assert!(r.is_ok(), "{r:?}");
    }
    /// The hart's Control Transfer Records hardware (`None`: no Smctr/Ssctr).
    fn ctr_config(&self) -> Option<CtrConfig>;
    /// SCTRCLR executed by the hypervisor: zero every CTR entry (at every depth) and the
    /// cycle counter.
    fn ctr_clear(&mut self);
    /// CTR logical entry `x` (`ctrsource`, `ctrtarget`, `ctrdata`: what `vsireg`, `vsireg2`,
    /// `vsireg3` read with `vsiselect` = 0x200 + `x`; zeros at or beyond the depth), without
    /// touching `vsiselect`.
    fn ctr_entry(&self, x: u64) -> CtrEntry;
    /// Blocks translated to host code so far (0 for a backend without translation).
    fn translated_blocks(&self) -> u64 {
        0
    }
    /// Per-instruction tracing on or off, where the backend has it.
    fn set_trace(&mut self, _on: bool) {}
    /// Limit tracing to these instructions ([`TraceRange`]).
    fn set_trace_range(&mut self, _range: TraceRange) {}
    /// Translates `vaddr` as an access of `kind` by the hart's current mode would, for a
    /// debugger: `satp` when V=0, the VS-stage (`vsatp`, its page tables read through the
    /// G-stage) then the G-stage (`hgatp`) when V=1; loads and stores apply `mstatus.MPRV`
    /// and `MPV` as the hart's own loads and stores do. M-mode and Bare translate to
    /// `vaddr` itself.
    ///
    /// The result is an address in the hart's physical memory (for V=1 after the G-stage);
    /// whether anything is there is the caller's to check.
    ///
    /// Without side effects: no A/D bit updates, no TLB fill, no counters or events, no trap.
    /// A debugger may look where the mode may not: a valid leaf mapping is enough, its R, W,
    /// X and U permission bits (of either stage) are ignored; validity (V, the reserved
    /// W-without-R encoding, reserved bits, superpage alignment, canonical addresses) is
    /// checked as the hardware walk checks it. `Err` names the fault the access would raise.
    fn debug_translate(&self, vaddr: u64, kind: DebugAccess) -> Result<u64, DebugTranslateError>;

    /// Adds a debugger point (`crate::debug`): from the next [`Vcpu::run`] on, the hart
    /// stops before an instruction it matches ([`VcpuExit::DebugPoint`]).
    /// The guest cannot see the points; they are no part of the saved state.
    fn add_debug_point(&mut self, _point: crate::DebugPoint) -> Result<(), crate::DebugPointError> {
        Err(crate::DebugPointError::Unsupported)
    }
    /// Removes one debugger point equal to `point`; whether there was one.
    fn remove_debug_point(&mut self, _point: crate::DebugPoint) -> bool {
        false
    }
    /// Removes every debugger point.
    fn clear_debug_points(&mut self) {}
    /// The next [`Vcpu::run`] executes the instruction at the current pc even if a debugger
    /// point matches it (once: a debugger resuming from a stop, or stepping).
    fn skip_debug_points_once(&mut self) {}
}

/// Saving and restoring a vCPU's whole architectural state: registers, CSRs, counters and
/// timers, the CTR buffer and its cycle counter, sampling state. What snapshots, migration
/// and a scheduler of several vCPUs on one hart move.
pub trait VcpuState {
    /// The saved state (serialized into snapshot files as it is).
    type State: Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned;
    /// The vCPU's state.
    fn save_state(&self) -> Self::State;
    /// Load `state`. Given untrusted data: checks everything before it changes anything, and
    /// refuses, naming what does not fit, state this vCPU cannot hold.
    fn restore_state(&mut self, state: &Self::State) -> Result<(), StateError>;
    /// [`VcpuState::restore_state`] for a scheduler that switches vCPUs on this hart: since
    /// this hart's last run, nothing but guests has written guest RAM (as for
    /// [`Vcpu::run_on`]), so an implementation that keeps translated code may keep what it
    /// knows of it. The next run may then be a [`Vcpu::run_on`]. The vCPU being loaded still
    /// sees other harts' code writes as the guest orders them (FENCE.I, remote fences).
    fn switch_state(&mut self, state: &Self::State) -> Result<(), StateError> {
        self.restore_state(state)
    }
}
