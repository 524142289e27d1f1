//! Hosted mode: the hart as a [`Vcpu`] (the backend-neutral interface of `vcpu-api`).
//!
//! [`Hart`] implements [`Vcpu`] and [`VcpuState`] in *hosted mode* ([`Hart::new_guest`]):
//! the hart runs the guest with V=1 and every trap that would be taken into HS-mode or M-mode
//! becomes a [`VcpuExit::GuestTrap`] instead, since HS-mode is the VMM itself.
//!
//! In hosted mode the G-stage is the identity (`hgatp` Bare, a memslot model): guest
//! physical addresses are the hart's physical addresses, guest RAM is the hart's RAM, device
//! ranges exit as MMIO and every other address raises an access fault that exits to the VMM.

use vm_memory::GuestMemoryMmap;

use crate::config::HartConfig;
use crate::csr::stateen::{STATEEN0_AIA, STATEEN0_CSRIND, STATEEN0_ENVCFG, STATEEN_SE0};

use std::sync::Arc;

use vcpu_api::ctr::{CtrConfig, CtrEntry};
use vcpu_api::{
    CsrError, DebugAccess, DebugPoint, DebugPointError, DebugTranslateError, GuestTraps,
    HartMailbox, StateError, StopHandle, Vcpu, VcpuExit, VcpuState,
};

use crate::hart::{Hart, HartError, PrivilegeMode};
use crate::hypervisor::VS_INTERRUPTS;
use crate::state::HartState;
use crate::trap::{cause, Exception, TrapTarget};

/// Exceptions the guest handles itself (`hedeleg` in hosted mode): instruction address
/// misaligned, illegal instruction, breakpoint, ECALL from VU, and page faults. Everything
/// else (ECALL from VS for the SBI, virtual instruction, access and guest-page faults, ...)
/// exits to the VMM.
pub const GUEST_HEDELEG: u64 = (1 << cause::INSN_MISALIGNED)
    | (1 << cause::ILLEGAL_INSN)
    | (1 << cause::BREAKPOINT)
    | (1 << cause::ECALL_U)
    | (1 << cause::INSN_PAGE_FAULT)
    | (1 << cause::LOAD_PAGE_FAULT)
    | (1 << cause::STORE_PAGE_FAULT);

impl Hart {
    /// A hart in hosted mode, ready to run a guest in VS-mode (pc 0: set the entry point and
    /// the boot registers before the first run). The guest may use F/D, the counters `cycle`,
    /// `time` and `instret`, and the stateen-controlled CSRs; its VS-level interrupts are all
    /// delegated to it.
    pub fn new_guest(config: HartConfig, mem: GuestMemoryMmap) -> Result<Hart, HartError> {
        let mut h = Hart::new(config, mem)?;
        h.hosted = true;
        h.virt = true;
        h.prv = PrivilegeMode::Supervisor;
        h.csr.mstatus |= 1 << 13; // mstatus.FS = Initial: the guest may use F and D
        h.csr.mcounteren = 0x7;
        h.csr.h.hcounteren = 0x7;
        // Everything is delegated past M (the VMM is HS and M alike); hedeleg picks what the
        // guest handles itself.
        for (num, value) in [(0x302u16, u64::MAX), (0x303, u64::MAX)] {
            if let Some(write) = crate::csr::lookup(num).and_then(|d| d.write) {
                write(&mut h, value);
            }
        }
        h.csr.h.hedeleg = GUEST_HEDELEG;
        h.csr.h.hideleg = VS_INTERRUPTS;
        h.csr.mstateen[0] = STATEEN_SE0 | STATEEN0_ENVCFG | STATEEN0_CSRIND | STATEEN0_AIA;
        // CTR is the hypervisor's to give: M-level access on, hstateen0.CTR off until the
        // VMM loads the guest's CTR context (lazily, on its first access).
        if h.ctr.implemented() {
            h.csr.mstateen[0] |= crate::csr::stateen::STATEEN0_CTR;
        }
        // The VMM is the guest's M-mode firmware: with PMP, one entry gives S and U all of
        // memory (privileged spec 3.7.1.2: with entries implemented, an S/U access no entry
        // matches fails). The guest cannot see M-mode's PMP.
        if h.pmp.entries() != 0 {
            h.pmp.set_state(&crate::pmp::PmpState::allow_all());
        }
        h.mode_changed();
        Ok(h)
    }

    /// The debugger's points changed (`trigger/debugger.rs`): while any is set the TLB
    /// holds nothing, so that every fetch, load and store reaches the checks (as for armed
    /// guest triggers). Only the TLB itself is emptied: the performance monitor's TLB
    /// models, which the guest observes, are left as they are.
    fn debug_points_changed(&mut self) {
        let was = self.trig.armed;
        self.trig.refresh();
        if self.trig.armed && !was {
            self.tlb.flush();
        }
    }

    /// Whether the hart runs in hosted mode.
    pub fn is_hosted(&self) -> bool {
        self.hosted
    }

    /// The `time` CSR as a guest (V=1) reads it: `mtime + htimedelta`.
    pub fn guest_time(&self) -> u64 {
        self.mtime().wrapping_add(self.csr.h.htimedelta)
    }
}

impl Vcpu for Hart {
    fn debug_translate(&self, vaddr: u64, kind: DebugAccess) -> Result<u64, DebugTranslateError> {
        self.debug_translate_va(vaddr, kind)
    }
    fn add_debug_point(&mut self, point: DebugPoint) -> Result<(), DebugPointError> {
        self.trig.bank.add(point)?;
        self.debug_points_changed();
        Ok(())
    }
    fn remove_debug_point(&mut self, point: DebugPoint) -> bool {
        let removed = self.trig.bank.remove(point);
        self.debug_points_changed();
        removed
    }
    fn clear_debug_points(&mut self) {
        self.trig.bank.clear();
        self.debug_points_changed();
    }
    fn skip_debug_points_once(&mut self) {
        self.trig.bank.skip = Some(self.pc);
    }
    fn run(&mut self, budget: u64) -> VcpuExit {
        Hart::run(self, budget)
    }
    fn run_on(&mut self, budget: u64) -> VcpuExit {
        Hart::run_on(self, budget)
    }
    fn set_budget_slack(&mut self, slack: u64) {
        self.budget_slack = slack;
    }
    fn pc(&self) -> u64 {
        Hart::pc(self)
    }
    fn set_pc(&mut self, pc: u64) {
        Hart::set_pc(self, pc)
    }
    fn xreg(&self, i: usize) -> u64 {
        Hart::xreg(self, i)
    }
    fn set_xreg(&mut self, i: usize, v: u64) {
        Hart::set_xreg(self, i, v)
    }
    fn complete_mmio_read(&mut self, data: u64) {
        Hart::complete_mmio_read(self, data)
    }
    fn inject_exception(&mut self, cause: u64, tval: u64) {
        let ctr = std::mem::replace(&mut self.ctr_trap_hook, false);
        self.enter_trap(cause, Exception::new(cause, tval), false, TrapTarget::Vs);
        self.ctr_trap_hook = ctr;
    }
    fn guest_privilege(&self) -> PrivilegeMode {
        self.prv
    }
    fn set_guest_privilege(&mut self, mode: PrivilegeMode) {
        if self.virt && matches!(mode, PrivilegeMode::Supervisor | PrivilegeMode::User) {
            self.prv = mode;
            self.mode_changed();
        }
    }
    fn set_virtual_interrupts(&mut self, hvip: u64) {
        self.csr.h.hvip = (self.csr.h.hvip & !VS_INTERRUPTS) | (hvip & VS_INTERRUPTS);
    }
    fn virtual_interrupts(&self) -> u64 {
        self.csr.h.hvip
    }
    fn set_guest_timer(&mut self, deadline: u64) {
        self.guest_timer = deadline;
    }
    fn guest_time(&self) -> u64 {
        Hart::guest_time(self)
    }
    fn skip_to_timer(&mut self) -> bool {
        Hart::skip_to_timer(self)
    }
    fn executed(&self) -> u64 {
        Hart::executed(self)
    }
    fn stop_handle(&self) -> StopHandle {
        Hart::stop_handle(self)
    }
    fn set_guest_traps(&mut self, traps: GuestTraps) {
        use crate::hypervisor::{HSTATUS_VTSR, HSTATUS_VTVM, HSTATUS_VTW};
        let mut hs = self.csr.h.hstatus & !(HSTATUS_VTW | HSTATUS_VTSR | HSTATUS_VTVM);
        for (on, bit) in [
            (traps.wfi, HSTATUS_VTW),
            (traps.sret, HSTATUS_VTSR),
            (traps.vm, HSTATUS_VTVM),
        ] {
            if on {
                hs |= bit;
            }
        }
        self.csr.h.hstatus = hs;
    }
    fn set_guest_counteren(&mut self, mask: u64) {
        self.csr.h.hcounteren = mask & 0xffff_ffff;
    }
    fn guest_scounteren(&self) -> u64 {
        self.csr.scounteren
    }
    fn host_csr(&self, num: u16) -> Result<u64, CsrError> {
        self.csr(num).ok_or(CsrError::NotImplemented(num))
    }
    fn set_host_csr(&mut self, num: u16, value: u64) -> Result<(), CsrError> {
        let desc = crate::csr::lookup(num).ok_or(CsrError::NotImplemented(num))?;
        match desc.write {
            Some(write) if (num >> 10) & 3 != 3 => {
                // No instruction of the hart retires with this write (counters of instret).
                self.pmu.host_write = true;
                write(self, value);
                self.pmu.host_write = false;
                Ok(())
            }
            _ => Err(CsrError::ReadOnly(num)),
        }
    }
    fn ctr_config(&self) -> Option<CtrConfig> {
        self.ctr.config.clone()
    }
    fn ctr_clear(&mut self) {
        self.sctrclr();
    }
    fn ctr_entry(&self, x: u64) -> CtrEntry {
        if !self.ctr.implemented() || x >= self.ctr.depth_entries() {
            return CtrEntry::default();
        }
        self.ctr.entries[self.ctr.physical(x)]
    }
    fn wakeup_pending(&self) -> bool {
        Hart::wakeup_pending(self)
    }
    fn timer_deadline_slots(&self) -> Option<u64> {
        Hart::timer_deadline_slots(self)
    }
    fn mailbox(&self) -> Arc<HartMailbox> {
        Hart::mailbox(self)
    }
    fn set_mailbox(&mut self, mailbox: Arc<HartMailbox>) {
        Hart::set_mailbox(self, mailbox)
    }
    fn guest_start(&mut self, pc: u64, a0: u64, a1: u64) {
        Hart::guest_start(self, pc, a0, a1)
    }
    fn translated_blocks(&self) -> u64 {
        Hart::translated_blocks(self)
    }
    fn set_trace(&mut self, on: bool) {
        Hart::set_trace(self, on)
    }
    fn set_trace_range(&mut self, range: vcpu_api::TraceRange) {
        Hart::set_trace_range(self, range)
    }
}

impl VcpuState for Hart {
    type State = HartState;
    fn save_state(&self) -> HartState {
        Hart::save_state(self)
    }
    fn restore_state(&mut self, state: &HartState) -> Result<(), StateError> {
        Hart::restore_state(self, state)
    }
    fn switch_state(&mut self, state: &HartState) -> Result<(), StateError> {
        Hart::switch_state(self, state)
    }
}
