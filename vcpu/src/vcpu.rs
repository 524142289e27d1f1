//! The backend-neutral vCPU interface and hosted mode.
//!
//! A VMM drives a guest through [`Vcpu`], shaped like KVM's vCPU interface so that a
//! hardware-backed vCPU could implement it too: run until an exit, read and write the
//! guest's registers, complete MMIO loads, redirect traps into the guest, and drive its
//! VS-level interrupts and timer. [`Hart`] implements it in *hosted mode* ([`Hart::new_guest`]):
//! the hart runs the guest with V=1 and every trap that would be taken into HS-mode or M-mode
//! becomes a [`VcpuExit::GuestTrap`] instead, since HS-mode is the VMM itself.
//!
//! In hosted mode the G-stage is the identity (`hgatp` Bare, a memslot model): guest
//! physical addresses are the hart's physical addresses, guest RAM is the hart's RAM, device
//! ranges exit as MMIO and every other address raises an access fault that exits to the VMM.

use vm_memory::GuestMemoryMmap;

use crate::config::HartConfig;
use crate::csr::stateen::{STATEEN0_AIA, STATEEN0_CSRIND, STATEEN0_ENVCFG, STATEEN_SE0};
use crate::exit::{StopHandle, VcpuExit};
use crate::hart::{Hart, HartError, PrivilegeMode};
use crate::hypervisor::VS_INTERRUPTS;
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

/// A virtual CPU as a VMM sees it (see the module documentation).
pub trait Vcpu {
    /// Run the guest until an exit; at most `budget` instructions.
    fn run(&mut self, budget: u64) -> VcpuExit;
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
    /// Instructions executed so far.
    fn executed(&self) -> u64;
    /// A handle that stops [`Vcpu::run`] from another thread.
    fn stop_handle(&self) -> StopHandle;
    /// Which VS-mode instructions exit to the VMM as virtual-instruction traps
    /// (`hstatus.VTW`, `VTSR`, `VTVM`).
    fn set_guest_traps(&mut self, traps: GuestTraps);
    /// The counters the guest may read directly (`hcounteren`, within what the hart allows);
    /// reads of the others exit as virtual-instruction traps.
    fn set_guest_counteren(&mut self, mask: u64);
    /// The guest's own `scounteren` (whether its U-mode may read a counter).
    fn guest_scounteren(&self) -> u64;
    /// Read CSR `num` as HS/M-mode software would (no access check, no VS substitution:
    /// `vsctrctl`, `vsiselect`/`vsireg*`, `hstateen0`, `sctrstatus` ...); `None` if the hart
    /// does not implement it. What a hypervisor needs to switch and emulate guest state.
    fn host_csr(&self, num: u16) -> Option<u64>;
    /// Write CSR `num` as HS/M-mode software would (the CSR's WARL rules apply); `false` if
    /// the hart does not implement it or it is read-only.
    fn set_host_csr(&mut self, num: u16, value: u64) -> bool;
    /// The hart's Control Transfer Records hardware (`None`: no Smctr/Ssctr).
    fn ctr_config(&self) -> Option<crate::ctr::CtrConfig>;
    /// SCTRCLR executed by the hypervisor: zero every CTR entry (at every depth) and the
    /// cycle counter.
    fn ctr_clear(&mut self);
    /// CTR logical entry `x` as (`ctrsource`, `ctrtarget`, `ctrdata`), what `vsireg`,
    /// `vsireg2`, `vsireg3` read with `vsiselect` = 0x200 + `x` (zeros at or beyond the
    /// depth), without touching `vsiselect`.
    fn ctr_entry(&self, x: u64) -> (u64, u64, u64);
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
        h.mode_changed();
        Ok(h)
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
    fn run(&mut self, budget: u64) -> VcpuExit {
        Hart::run(self, budget)
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
    fn host_csr(&self, num: u16) -> Option<u64> {
        self.csr(num)
    }
    fn set_host_csr(&mut self, num: u16, value: u64) -> bool {
        match crate::csr::lookup(num).and_then(|d| d.write) {
            Some(write) if (num >> 10) & 3 != 3 => {
                // No instruction of the hart retires with this write (counters of instret).
                self.pmu.host_write = true;
                write(self, value);
                self.pmu.host_write = false;
                true
            }
            _ => false,
        }
    }
    fn ctr_config(&self) -> Option<crate::ctr::CtrConfig> {
        self.ctr.config.clone()
    }
    fn ctr_clear(&mut self) {
        self.sctrclr();
    }
    fn ctr_entry(&self, x: u64) -> (u64, u64, u64) {
        if !self.ctr.implemented() || x >= self.ctr.depth_entries() {
            return (0, 0, 0);
        }
        let e = self.ctr.entries[self.ctr.physical(x)];
        (e.source, e.target, e.data)
    }
}
