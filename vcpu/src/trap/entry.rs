//! Trap entry and return (privileged spec, "Machine Trap Delegation Registers",
//! "Trap-Return Instructions"; H extension, "Trap Entry" and "Trap Return"; AIA
//! "Interrupts at machine level" and "at supervisor level"): which interrupt is taken,
//! delegation to HS and VS, the CSR updates of trap entry, MRET and SRET.

use super::{highest_priority, Exception, TrapTarget};
use crate::hart::{Hart, PrivilegeMode};
use vcpu_api::trap::INTERRUPT_BIT;

impl Hart {
    /// The interrupt the hart must take now, if any, and whether it goes to S-mode
    /// (privileged spec 3.1.9; AIA "Interrupts at machine level" and "at supervisor level":
    /// an S-level interrupt is pending in `sip` and enabled in `sie`, which includes the
    /// virtual interrupts enabled by `mvien`).
    pub(crate) fn pending_interrupt(&self) -> Option<(u64, TrapTarget)> {
        use crate::hypervisor::VS_INTERRUPTS;
        let mip = self.mip();
        if self.hosted {
            // Hosted mode: the VMM owns HS and M. An HS-level interrupt (always enabled while
            // V=1) is reported to it ([`crate::VcpuExit::HostInterrupt`]); VS-level ones go
            // to the guest.
            let hideleg = self.csr.h.hideleg;
            let hs = (self.s_pending_from(mip) & !(hideleg & !0x1fff))
                | (mip & self.csr.mie & ((VS_INTERRUPTS & !hideleg) | self.sgei_bit()));
            if let Some(i) = highest_priority(hs) {
                return Some((i, TrapTarget::Hs));
            }
            let enabled = self.prv == PrivilegeMode::User
                || self.csr.h.vsstatus & crate::csr::MSTATUS_SIE != 0;
            return if enabled { self.vs_interrupt() } else { None };
        }
        let m_enabled =
            self.prv < PrivilegeMode::Machine || self.csr.mstatus & crate::csr::MSTATUS_MIE != 0;
        if m_enabled {
            if let Some(i) = highest_priority(self.m_pending_from(mip)) {
                return Some((i, TrapTarget::M));
            }
        }
        // M-level interrupts outrank HS-level ones, which outrank VS-level ones. HS-level
        // interrupts are always enabled while V=1; VS-level interrupts that hideleg does not
        // delegate are HS-level (H extension, "Hypervisor Interrupt Registers").
        let vs_pending = mip & self.csr.mie & VS_INTERRUPTS;
        // SGEI is always an HS-level interrupt (mideleg bit 12 read-only one, hideleg bit 12
        // read-only zero).
        let sgei = mip & self.csr.mie & self.sgei_bit();
        let hideleg = self.csr.h.hideleg;
        let hs_enabled = self.virt
            || self.prv == PrivilegeMode::User
            || (self.prv == PrivilegeMode::Supervisor
                && self.csr.mstatus & crate::csr::MSTATUS_SIE != 0);
        if hs_enabled {
            // Interrupts 13-63 that hideleg delegates are VS-level (only LCOFI can be).
            let hs = self.s_pending_from(mip) & !(hideleg & !0x1fff);
            if let Some(i) = highest_priority(hs | sgei | (vs_pending & !hideleg)) {
                return Some((i, TrapTarget::Hs));
            }
        }
        let vs_enabled = self.virt
            && (self.prv == PrivilegeMode::User
                || self.csr.h.vsstatus & crate::csr::MSTATUS_SIE != 0);
        if vs_enabled {
            return self.vs_interrupt();
        }
        None
    }

    /// The interrupt pending at VS level: with the AIA, the one `vstopi` names, if `vstopi`
    /// is not zero (AIA, "Interrupt traps to VS-mode"). Its code is already the VS-level one:
    /// the VS-level interrupts 2, 6, 10 arrive as 1, 5, 9 (H extension), an `hvictl`
    /// interrupt as its IID.
    fn vs_interrupt(&self) -> Option<(u64, TrapTarget)> {
        let t = self.vstopi();
        (t != 0).then_some(((t >> 16) & 0xfff, TrapTarget::Vs))
    }

    /// Take interrupt `code` (as numbered at the target's level) into `target`.
    pub(crate) fn take_interrupt(&mut self, code: u64, target: TrapTarget) {
        self.enter_trap(code, Exception::new(code, 0), true, target);
    }

    /// Take a synchronous exception where delegation sends it (H extension, "Trap Entry").
    pub(crate) fn take_exception(&mut self, e: Exception) {
        let code = e.cause;
        let target = if self.prv == PrivilegeMode::Machine || (self.csr.medeleg >> code) & 1 == 0 {
            TrapTarget::M
        } else if self.virt && (self.csr.h.hedeleg >> code) & 1 != 0 {
            TrapTarget::Vs
        } else {
            TrapTarget::Hs
        };
        // GVA: the trap writes a guest virtual address (faults of accesses made with V=1,
        // and breakpoints in VS/VU).
        let gva = e.gva || (self.virt && writes_address(code) && e.tval != 0);
        self.enter_trap(code, Exception { gva, ..e }, false, target);
    }

    pub(crate) fn enter_trap(
        &mut self,
        code: u64,
        e: Exception,
        interrupt: bool,
        target: TrapTarget,
    ) {
        use crate::csr::*;
        use crate::hypervisor::*;
        self.pmu_trap(interrupt);
        if !(self.hosted && target != TrapTarget::Vs) {
            self.pmu_before_mode_change(false);
        }
        if self.ctr_trap_hook && self.ctr.watching() {
            let tvec = match target {
                TrapTarget::M => self.csr.mtvec,
                TrapTarget::Hs => self.csr.stvec,
                TrapTarget::Vs => self.csr.h.vstvec,
            };
            self.ctr_trap(code, interrupt, target, tvec_target(tvec, code, interrupt));
        }
        if self.hosted && target != TrapTarget::Vs {
            // Hosted mode: HS and M are the VMM. Report the trap and change nothing.
            self.guest_exit = Some(vcpu_api::GuestTrap {
                cause: code,
                tval: e.tval,
                htval: e.tval2,
                htinst: e.tinst,
                gva: e.gva,
                pc: self.pc,
                insn: 0,
                from_vu: self.prv == PrivilegeMode::User,
            });
            return;
        }
        self.reservation.clear();
        let xcause = code | if interrupt { INTERRUPT_BIT } else { 0 };
        let from_s = self.prv == PrivilegeMode::Supervisor;
        match target {
            TrapTarget::Vs => {
                let h = &mut self.csr.h;
                h.vsepc = self.pc;
                h.vscause = xcause;
                h.vstval = e.tval;
                let vs = h.vsstatus;
                let mut n = set_bit(vs, MSTATUS_SPIE, vs & MSTATUS_SIE != 0);
                n &= !MSTATUS_SIE;
                n = set_bit(n, MSTATUS_SPP, from_s);
                h.vsstatus = n;
                self.pc = tvec_target(h.vstvec, code, interrupt);
                self.prv = PrivilegeMode::Supervisor;
            }
            TrapTarget::Hs => {
                self.csr.sepc = self.pc;
                self.csr.scause = xcause;
                self.csr.stval = e.tval;
                let h = &mut self.csr.h;
                h.htval = e.tval2;
                h.htinst = e.tinst;
                let mut hs = set_bit(h.hstatus, HSTATUS_SPV, self.virt);
                if self.virt {
                    hs = set_bit(hs, HSTATUS_SPVP, from_s);
                }
                h.hstatus = set_bit(hs, HSTATUS_GVA, e.gva);
                let s = self.csr.mstatus;
                let mut n = set_bit(s, MSTATUS_SPIE, s & MSTATUS_SIE != 0);
                n &= !MSTATUS_SIE;
                n = set_bit(n, MSTATUS_SPP, from_s);
                self.csr.mstatus = n;
                self.pc = tvec_target(self.csr.stvec, code, interrupt);
                self.prv = PrivilegeMode::Supervisor;
                self.virt = false;
            }
            TrapTarget::M => {
                self.csr.mepc = self.pc;
                self.csr.mcause = xcause;
                self.csr.mtval = e.tval;
                self.csr.h.mtval2 = e.tval2;
                self.csr.h.mtinst = e.tinst;
                let s = self.csr.mstatus;
                let mut n = set_bit(s, MSTATUS_MPIE, s & MSTATUS_MIE != 0);
                n &= !MSTATUS_MIE;
                n = (n & !MSTATUS_MPP) | ((self.prv as u64) << MSTATUS_MPP_SHIFT);
                n = set_bit(n, MSTATUS_MPV, self.virt);
                n = set_bit(n, MSTATUS_GVA, e.gva);
                self.csr.mstatus = n;
                self.pc = tvec_target(self.csr.mtvec, code, interrupt);
                self.prv = PrivilegeMode::Machine;
                self.virt = false;
            }
        }
        self.mode_changed();
    }

    /// MRET (privileged spec 3.3.2; H extension "Trap Return": V = MPV unless MPP = M).
    pub(crate) fn do_mret(&mut self) {
        use crate::csr::*;
        use crate::hypervisor::MSTATUS_MPV;
        let s = self.csr.mstatus;
        let mpp = PrivilegeMode::from_bits((s & MSTATUS_MPP) >> MSTATUS_MPP_SHIFT);
        let mut n = set_bit(s, MSTATUS_MIE, s & MSTATUS_MPIE != 0);
        n |= MSTATUS_MPIE;
        n &= !MSTATUS_MPP; // least-privileged supported mode: U
        if mpp != PrivilegeMode::Machine {
            n &= !MSTATUS_MPRV;
        }
        n &= !MSTATUS_MPV;
        self.pmu_before_mode_change(true);
        self.csr.mstatus = n;
        let (from_prv, from_virt, from_pc) = (self.prv, self.virt, self.pc);
        self.virt = mpp != PrivilegeMode::Machine && s & MSTATUS_MPV != 0;
        self.prv = mpp;
        self.pc = self.csr.mepc;
        if self.ctr.watching() {
            self.ctr_trap_return(from_prv, from_virt, from_pc);
        }
        self.mode_changed();
    }

    /// SRET (privileged spec 3.3.2 and 4.1.1; H extension "Trap Return"): with V=0 it
    /// returns to the mode in `sstatus.SPP` and `hstatus.SPV`; with V=1 it returns within
    /// the guest, through `vsstatus` and `vsepc`.
    pub(crate) fn do_sret(&mut self) {
        use crate::csr::*;
        use crate::hypervisor::HSTATUS_SPV;
        let spp_of = |s: u64| {
            if s & MSTATUS_SPP != 0 {
                PrivilegeMode::Supervisor
            } else {
                PrivilegeMode::User
            }
        };
        let pop =
            |s: u64| (set_bit(s, MSTATUS_SIE, s & MSTATUS_SPIE != 0) | MSTATUS_SPIE) & !MSTATUS_SPP;
        let (from_prv, from_virt, from_pc) = (self.prv, self.virt, self.pc);
        self.pmu_before_mode_change(true);
        if self.virt {
            let vs = self.csr.h.vsstatus;
            self.csr.h.vsstatus = pop(vs);
            self.prv = spp_of(vs);
            self.pc = self.csr.h.vsepc;
        } else {
            let s = self.csr.mstatus;
            self.csr.mstatus = pop(s) & !MSTATUS_MPRV; // the new mode is never M
            self.virt = self.csr.h.hstatus & HSTATUS_SPV != 0;
            self.csr.h.hstatus &= !HSTATUS_SPV;
            self.prv = spp_of(s);
            self.pc = self.csr.sepc;
        }
        if self.ctr.watching() {
            self.ctr_trap_return(from_prv, from_virt, from_pc);
        }
        self.mode_changed();
    }
}

/// Exceptions whose `xtval` is a (possibly guest) virtual address.
fn writes_address(code: u64) -> bool {
    matches!(
        code,
        0 | 1 | 3 | 4 | 5 | 6 | 7 | 12 | 13 | 15 | 20 | 21 | 23
    )
}

fn set_bit(v: u64, mask: u64, on: bool) -> u64 {
    if on {
        v | mask
    } else {
        v & !mask
    }
}

/// `xtvec` target: vectored mode sends interrupts to BASE + 4 * cause.
fn tvec_target(tvec: u64, code: u64, interrupt: bool) -> u64 {
    let base = tvec & !3;
    if interrupt && tvec & 3 == 1 {
        base.wrapping_add(4 * code)
    } else {
        base
    }
}
