//! Exit handling of `vmm run`: what the VMM does when the hart leaves the guest (see the
//! module documentation of `run/mod.rs`). [`GuestVm::handle_exit`] dispatches by kind; each
//! kind has its handler: MMIO, WFI, HS-level interrupts, guest traps (SBI calls, virtual
//! instructions, faults to inject).

use std::io::Write;
use std::sync::Mutex;

use crate::backend::Hart;
use vcpu_api::{GuestTrap, MmioAccess, Vcpu, VcpuExit};

use super::aia::Aia;
use super::sbi_env::PlatformEnv;
use super::sched::Leave;
use super::vinsn;
use super::{Device, ExitReason, ExitStats, GuestVm, RunExit, VirtualInsnAction, VirtualInsnExit};
use crate::devices::bus::{mask_read, MmioBus};
use crate::devices::uart::Uart;
use crate::error::Error;
use crate::machine::HART_ID;
use crate::sbi::{self, SbiCall, SbiOutcome};

// The exception codes the VMM handles, by the spec's names.
use vcpu_api::trap::cause;

impl GuestVm {
    /// Acts on one exit; returns the run's end if this exit is one. Exits of the classes
    /// `--trace-exits` selects are traced (`run/trace.rs`).
    pub(super) fn handle_exit(&mut self, exit: VcpuExit) -> Result<Option<RunExit>, Error> {
        match trace_class(&exit) {
            Some(class) if self.trace.wants(class) => self.traced_exit(exit),
            _ => self.dispatch_exit(exit),
        }
    }

    /// [`GuestVm::handle_exit`], printing a line that says where the guest left, why, and
    /// what the VMM did.
    fn traced_exit(&mut self, exit: VcpuExit) -> Result<Option<RunExit>, Error> {
        let (pc, from_vu) = match &exit {
            VcpuExit::GuestTrap(trap) => (trap.pc, trap.from_vu),
            _ => (
                Vcpu::pc(&self.hart),
                Vcpu::guest_privilege(&self.hart) == vcpu_api::PrivilegeMode::User,
            ),
        };
        let what = self.describe_exit(&exit);
        self.stats.clear_last();
        let (result, outcome) = match exit {
            VcpuExit::Mmio(access) => {
                let value = self.mmio_exit(access);
                let outcome = match access.write {
                    Some(_) => "written".to_string(),
                    None => format!("{value:#x}"),
                };
                (Ok(None), outcome)
            }
            VcpuExit::GuestTrap(trap) if trap.cause == cause::ECALL_VS => {
                let result = self.sbi_call(trap);
                let returned = Vcpu::pc(&self.hart) == trap.pc.wrapping_add(4);
                let outcome = match &result {
                    Ok(None) if returned => {
                        let error = Vcpu::xreg(&self.hart, 10) as i64;
                        let value = Vcpu::xreg(&self.hart, 11);
                        match sbi::error_name(error) {
                            Some(name) => format!("{name} {value:#x}"),
                            None => format!("error {error} {value:#x}"),
                        }
                    }
                    Ok(None) => "hart stopped".to_string(),
                    other => outcome_of(other, self.stats.last()),
                };
                (result, outcome)
            }
            other => {
                let result = self.dispatch_exit(other);
                let outcome = outcome_of(&result, self.stats.last());
                (result, outcome)
            }
        };
        let mode = if from_vu { "VU" } else { "VS" };
        self.trace.emit(&format!(
            "exit vcpu {} pc {} {mode} {what} -> {outcome}",
            self.hart_id,
            self.trace.pc(pc)
        ));
        result
    }

    /// What a traced exit is: `sbi TIME set_timer(...)`, `virtual-insn sret`,
    /// `mmio uart+0x5 read 1`, ...
    fn describe_exit(&self, exit: &VcpuExit) -> String {
        match exit {
            VcpuExit::Mmio(access) => {
                let size = u64::from(access.size);
                let target = match self.bus.find(access.addr, size) {
                    Some(hit) => format!("{}+{:#x}", hit.device.name(), hit.offset),
                    None => format!("{:#x} (no device)", access.addr),
                };
                match access.write {
                    Some(v) => format!("mmio {target} write {size} {v:#x}"),
                    None => format!("mmio {target} read {size}"),
                }
            }
            VcpuExit::Wfi => "wfi".to_string(),
            VcpuExit::HostInterrupt(irq) if *irq == vcpu_api::trap::irq::LCOFI => {
                format!("interrupt {irq} (LCOFI)")
            }
            VcpuExit::HostInterrupt(irq) => format!("interrupt {irq}"),
            VcpuExit::GuestTrap(trap) if trap.cause == cause::ECALL_VS => {
                let call = SbiCall::from_regs(|i| Vcpu::xreg(&self.hart, i));
                let [a0, a1, a2, ..] = call.args;
                let function = match sbi::function_name(call.eid, call.fid) {
                    Some(name) => name.to_string(),
                    None => format!("function {}", call.fid),
                };
                format!(
                    "sbi {} {function}({a0:#x}, {a1:#x}, {a2:#x})",
                    sbi::extension_name(call.eid)
                )
            }
            VcpuExit::GuestTrap(trap) if trap.cause == cause::VIRTUAL_INSN => {
                format!("virtual-insn {}", vinsn::disassemble(trap.insn))
            }
            VcpuExit::GuestTrap(trap) => {
                let name = vcpu_api::trap::exception_name(trap.cause).unwrap_or("reserved");
                format!("trap {} ({name}) tval {:#x}", trap.cause, trap.tval)
            }
            VcpuExit::BudgetExhausted => "budget exhausted".to_string(),
            VcpuExit::StopRequested => "stop requested".to_string(),
            VcpuExit::DebugPoint(hit) => {
                format!("debugger point {:?} at {:#x}", hit.point, hit.addr)
            }
        }
    }

    /// Acts on one exit (not traced).
    fn dispatch_exit(&mut self, exit: VcpuExit) -> Result<Option<RunExit>, Error> {
        match exit {
            VcpuExit::Mmio(access) => {
                self.mmio_exit(access);
                Ok(None)
            }
            VcpuExit::Wfi => {
                self.stats.count(ExitReason::Wfi);
                if self.idle() {
                    Ok(None)
                } else {
                    let pc = Vcpu::pc(&self.hart).wrapping_sub(4);
                    Err(Error::WaitForever {
                        hart: self.hart_id,
                        pc,
                    })
                }
            }
            VcpuExit::BudgetExhausted => Ok(None),
            VcpuExit::StopRequested => {
                if self.input.quit_requested() {
                    Ok(Some(self.input.quit_exit()))
                } else if self.smp.is_some() || self.pause.is_some() {
                    // Another hart ended the VM (the loop sees it), a pause of the control
                    // socket (the loop parks at its top), or a stale request.
                    Ok(None)
                } else {
                    Err(Error::Stopped {
                        hart: HART_ID,
                        pc: Vcpu::pc(&self.hart),
                    })
                }
            }
            VcpuExit::GuestTrap(trap) => self.guest_trap(trap),
            VcpuExit::HostInterrupt(irq) => self.vcpu_ctx().host_interrupt(irq).map(|()| None),
            // gdb's breakpoint or watchpoint: the vCPU parks at the loop's top.
            VcpuExit::DebugPoint(hit) => {
                self.debug_hit(&hit);
                Ok(None)
            }
        }
    }

    /// Handles a trap the guest could not take itself.
    fn guest_trap(&mut self, trap: GuestTrap) -> Result<Option<RunExit>, Error> {
        match trap.cause {
            cause::ECALL_VS => return self.sbi_call(trap),
            cause::VIRTUAL_INSN => {
                self.stats.count(ExitReason::VirtualInsn(trap.insn));
                return self.virtual_insn(trap);
            }
            _ => self.vcpu_ctx().fault(&trap),
        }
        Ok(None)
    }

    /// A virtual-instruction exit: emulates what the policy traps, injects an
    /// illegal-instruction exception for the rest, and records the exit.
    fn virtual_insn(&mut self, trap: GuestTrap) -> Result<Option<RunExit>, Error> {
        let next = trap.pc.wrapping_add(4);
        let mut v = self.vcpu_ctx();
        // Counter delegation before sampling: with it, `scountovf` is the delegated
        // counters' view.
        if let Some(action) = v
            .ctr_virtual_insn(&trap)
            .or_else(|| v.pmu_deleg(&trap))
            .or_else(|| v.sampling_virtual_insn(&trap))
        {
            v.record_virtual_insn(&trap, action);
            return Ok(None);
        }
        let time_rd = vinsn::time_read_rd(trap.insn)
            .filter(|_| !trap.from_vu || vinsn::vu_may_read_time(&self.hart));
        let vm_action = if self.policy.trap_vm && !trap.from_vu {
            vinsn::emulate_vm(&mut self.hart, trap.insn, trap.pc)
        } else {
            None
        };
        let (action, result) = if let Some(action) = vm_action {
            (action, Ok(None))
        } else if self.policy.trap_sret && !trap.from_vu && trap.insn == vinsn::SRET {
            let (to_vu, target) = vinsn::emulate_sret(&mut self.hart);
            self.ctr
                .synthesize_trap_return(&mut self.hart, to_vu, trap.pc, target);
            (VirtualInsnAction::EmulatedSret, Ok(None))
        } else if self.policy.trap_wfi && !trap.from_vu && trap.insn == vinsn::WFI {
            let result = if self.idle() {
                Vcpu::set_pc(&mut self.hart, next);
                Ok(None)
            } else {
                Err(Error::WaitForever {
                    hart: self.hart_id,
                    pc: trap.pc,
                })
            };
            (VirtualInsnAction::EmulatedWfi, result)
        } else if let (true, Some(rd)) = (self.policy.trap_time, time_rd) {
            let now = Vcpu::guest_time(&self.hart);
            Vcpu::set_xreg(&mut self.hart, rd, now);
            Vcpu::set_pc(&mut self.hart, next);
            (VirtualInsnAction::EmulatedTime, Ok(None))
        } else {
            self.vcpu_ctx().inject_illegal(&trap);
            (VirtualInsnAction::InjectedIllegal, Ok(None))
        };
        self.vcpu_ctx().record_virtual_insn(&trap, action);
        result
    }

    /// An SBI call (`ECALL` from VS-mode).
    fn sbi_call(&mut self, trap: GuestTrap) -> Result<Option<RunExit>, Error> {
        let call = SbiCall::from_regs(|i| Vcpu::xreg(&self.hart, i));
        self.stats.count(ExitReason::Sbi(call.eid));
        let outcome = {
            let mut env = PlatformEnv {
                hart: &mut self.hart,
                hart_id: self.hart_id,
                smp: self.smp.as_deref(),
                mem: &self.mem,
                uart: &self.uart,
                input: &self.input,
                pmu: &mut self.pmu,
                fw: &self.fw,
            };
            sbi::handle(&call, &mut env)
        };
        match outcome {
            SbiOutcome::Return(ret) => {
                Vcpu::set_xreg(&mut self.hart, 10, ret.error as u64);
                Vcpu::set_xreg(&mut self.hart, 11, ret.value);
                Vcpu::set_pc(&mut self.hart, trap.pc.wrapping_add(4));
                Ok(None)
            }
            SbiOutcome::Reset(request) => {
                let _ = self.uart().console().flush();
                // The caller reports a failing reset (`RunExit::failure_message`).
                match request.failure_message() {
                    Some(message) => log::debug!("{message}"),
                    None => log::info!(
                        "guest requested {} ({})",
                        request.kind.name(),
                        request.reason_name()
                    ),
                }
                Ok(Some(RunExit::Reset(request)))
            }
            SbiOutcome::HartStopped => match self.smp.clone() {
                None => Err(Error::AllHartsStopped { hart: HART_ID }),
                Some(smp) => {
                    smp.hart_stopped(self.hart_id);
                    match self.sched.as_mut() {
                        // The hart's scheduler runs another vCPU meanwhile.
                        Some(sched) => sched.leave = Some(Leave::Stopped),
                        // The loop notices the end if the VM ends meanwhile.
                        None => {
                            self.wait_for_start(&smp);
                        }
                    }
                    Ok(None)
                }
            },
        }
    }
}

impl GuestVm {
    /// An MMIO exit through the VM's bus; returns the value a read got.
    fn mmio_exit(&mut self, access: MmioAccess) -> u64 {
        mmio(
            &mut self.hart,
            &self.bus,
            &self.uart,
            self.aia.as_deref(),
            &mut self.stats,
            access,
        )
    }

    /// The narrow context of the handlers that only touch this vCPU.
    pub(super) fn vcpu_ctx(&mut self) -> VcpuCtx<'_> {
        VcpuCtx {
            hart: &mut self.hart,
            hart_id: self.hart_id,
            ctr: &mut self.ctr,
            pmu: &mut self.pmu,
            fw: &self.fw,
            stats: &mut self.stats,
        }
    }
}

/// What the exit handlers that act on one vCPU alone need (faults to inject, CTR, counter
/// delegation and sampling accesses, the PMU's interrupt): its hart, CTR, PMU, the VM's
/// firmware-event tallies and this hart's exit counters. Not the VM's threads, scheduler,
/// console or SBI: WFI, SBI calls and stops are [`GuestVm`]'s.
pub(super) struct VcpuCtx<'a> {
    pub hart: &'a mut Hart,
    pub hart_id: u64,
    pub ctr: &'a mut ctr_virt::GuestCtr,
    pub pmu: &'a mut pmu_virt::GuestPmu,
    pub fw: &'a pmu_virt::FwTallies,
    pub stats: &'a mut ExitStats,
}

impl VcpuCtx<'_> {
    /// An HS-level interrupt left the guest. The only one the hart raises in hosted mode is
    /// the LCOFI of selective delivery ([`pmu_virt::lcofi`]): passed on to the guest
    /// through `hvip` when one of its counters overflowed.
    fn host_interrupt(&mut self, irq: u64) -> Result<(), Error> {
        if irq != pmu_virt::lcofi::LCOFIP.trailing_zeros() as u64 {
            return Err(Error::UnexpectedInterrupt {
                hart: self.hart_id,
                irq,
            });
        }
        match self.pmu.take_lcofi(self.hart) {
            pmu_virt::LcofiOutcome::Injected => self.stats.count(ExitReason::LcofiInjected),
            pmu_virt::LcofiOutcome::Spurious => self.stats.count(ExitReason::LcofiSpurious),
        }
        Ok(())
    }

    /// A fault the guest could not take itself, injected into it: access faults as they
    /// are, guest-page faults as the corresponding page fault, anything else as it is
    /// (logged).
    fn fault(&mut self, trap: &GuestTrap) {
        match trap.cause {
            cause::INSN_ACCESS | cause::LOAD_ACCESS | cause::STORE_ACCESS => {
                if let Some(ev) = firmware_event_of(trap.cause) {
                    self.fw.record(self.hart_id, ev);
                }
                self.stats.count(ExitReason::AccessFault(trap.cause));
                self.inject(trap.cause, trap.tval);
            }
            cause::INSN_GUEST_PAGE_FAULT
            | cause::LOAD_GUEST_PAGE_FAULT
            | cause::STORE_GUEST_PAGE_FAULT => {
                self.stats.count(ExitReason::GuestPageFault(trap.cause));
                let page_fault = match trap.cause {
                    cause::INSN_GUEST_PAGE_FAULT => cause::INSN_PAGE_FAULT,
                    cause::LOAD_GUEST_PAGE_FAULT => cause::LOAD_PAGE_FAULT,
                    _ => cause::STORE_PAGE_FAULT,
                };
                self.inject(page_fault, trap.tval);
            }
            other => {
                self.stats.count(ExitReason::Trap(other));
                if let Some(ev) = firmware_event_of(other) {
                    self.fw.record(self.hart_id, ev);
                }
                log::warn!(
                    "guest trap {other} at pc={:#x} (tval {:#x}, insn {:#x}) injected into the guest",
                    trap.pc,
                    trap.tval,
                    trap.insn
                );
                self.inject(other, trap.tval);
            }
        }
    }

    /// A CTR access (`ctr-virt`; Smctr 5 "State Enable Access Control" and 2.4
    /// "Supervisor Control Transfer Records Depth Register (sctrdepth)"); `None` if `trap`
    /// is not one.
    fn ctr_virtual_insn(&mut self, trap: &GuestTrap) -> Option<VirtualInsnAction> {
        match self.ctr.on_virtual_insn(self.hart, trap.insn, trap.from_vu) {
            ctr_virt::Outcome::NotCtr => None,
            ctr_virt::Outcome::Emulated => {
                self.stats.count(ExitReason::CtrDepthEmulated);
                Some(VirtualInsnAction::EmulatedCtrDepth)
            }
            ctr_virt::Outcome::Retry => {
                self.stats.count(ExitReason::CtrLazyLoad);
                Some(VirtualInsnAction::CtrLoaded)
            }
            ctr_virt::Outcome::InjectIllegal => {
                self.inject_illegal(trap);
                Some(VirtualInsnAction::InjectedIllegal)
            }
        }
    }

    /// Injects an illegal-instruction exception for `trap`'s instruction (`stval` = its
    /// bits) and counts the firmware event.
    pub(super) fn inject_illegal(&mut self, trap: &GuestTrap) {
        self.fw.record(self.hart_id, pmu_virt::FwEvent::IllegalInsn);
        self.inject(cause::ILLEGAL_INSN, u64::from(trap.insn));
    }

    /// Logs a virtual-instruction exit and what was done about it.
    fn record_virtual_insn(&mut self, trap: &GuestTrap, action: VirtualInsnAction) {
        self.stats.record_virtual_insn(VirtualInsnExit {
            cause: trap.cause,
            tval: trap.tval,
            htval: trap.htval,
            htinst: trap.htinst,
            insn: trap.insn,
            pc: trap.pc,
            from_vu: trap.from_vu,
            action,
        });
    }

    /// Redirect an exception into the guest, with the CTR record the guest would see had
    /// the trap been delegated to it (ctr-virt: Smctr 6.1 "Privilege Mode Transitions").
    pub(super) fn inject(&mut self, cause: u64, tval: u64) {
        let from_vu = Vcpu::guest_privilege(self.hart) == vcpu_api::PrivilegeMode::User;
        let epc = Vcpu::pc(self.hart);
        Vcpu::inject_exception(self.hart, cause, tval);
        // Exceptions go to vstvec's base whatever its MODE.
        let handler = Vcpu::pc(self.hart);
        let before = self.ctr.stats.synthesized;
        self.ctr
            .synthesize_trap(self.hart, cause, false, from_vu, epc, handler);
        if self.ctr.stats.synthesized != before {
            self.stats.count(ExitReason::CtrRecordSynthesized);
        }
    }
}

/// Routes an MMIO access through the VM's bus (the UART is the only device); returns the
/// value a read got (0 for a write).
fn mmio(
    hart: &mut Hart,
    bus: &MmioBus<Device>,
    uart: &Mutex<Uart>,
    aia: Option<&Aia>,
    stats: &mut ExitStats,
    access: MmioAccess,
) -> u64 {
    let MmioAccess { addr, size, write } = access;
    let hit = bus.find(addr, u64::from(size)).filter(|h| h.fits);
    let uart_access = |f: &mut dyn FnMut(&mut Uart) -> u64| {
        let mut uart = uart.lock().unwrap_or_else(|e| e.into_inner());
        let v = f(&mut uart);
        // The access may have raised or lowered the UART's interrupt.
        if let Some(aia) = aia {
            aia.uart_level(uart.interrupt_level());
        }
        v
    };
    let value = match (hit.map(|h| (h.device, h.offset)), write, aia) {
        (Some((Device::Uart, off)), Some(v), _) => {
            stats.count(ExitReason::MmioUartWrite);
            uart_access(&mut |u| {
                u.write(off, size, v);
                0
            })
        }
        (Some((Device::Uart, off)), None, _) => {
            stats.count(ExitReason::MmioUartRead);
            uart_access(&mut |u| u.read(off, size))
        }
        (Some((Device::Aplic, off)), Some(v), Some(aia)) => {
            stats.count(ExitReason::MmioAplic);
            aia.aplic_write(off, size, v);
            0
        }
        (Some((Device::Aplic, off)), None, Some(aia)) => {
            stats.count(ExitReason::MmioAplic);
            aia.aplic_read(off, size)
        }
        (Some((Device::Imsic, off)), Some(v), Some(aia)) => {
            stats.count(ExitReason::MmioImsic);
            aia.imsic_write(off, size, v);
            0
        }
        // The IMSIC pages read 0 (`seteipnum_*` and reserved bytes alike).
        (Some((Device::Imsic, _)), None, _) => 0,
        (Some((Device::Aplic | Device::Imsic, _)), _, None) => 0,
        (None, _, _) => {
            stats.count(ExitReason::MmioOther);
            log::warn!("{size}-byte access at {addr:#x} outside any device; ignored");
            0
        }
    };
    if write.is_none() {
        let value = mask_read(value, size);
        Vcpu::complete_mmio_read(hart, value);
        return value;
    }
    0
}

/// The trace class of an exit (`None`: never traced).
fn trace_class(exit: &VcpuExit) -> Option<u32> {
    use super::trace::class;
    match exit {
        VcpuExit::Mmio(_) => Some(class::MMIO),
        VcpuExit::Wfi => Some(class::WFI),
        VcpuExit::HostInterrupt(_) => Some(class::IRQ),
        VcpuExit::GuestTrap(t) if t.cause == cause::ECALL_VS => Some(class::SBI),
        VcpuExit::GuestTrap(t) if t.cause == cause::VIRTUAL_INSN => Some(class::VINSN),
        VcpuExit::GuestTrap(_) => Some(class::FAULT),
        VcpuExit::BudgetExhausted | VcpuExit::StopRequested | VcpuExit::DebugPoint(_) => None,
    }
}

/// What the VMM did about a traced exit, from its result and the reason and action it
/// counted last.
fn outcome_of(
    result: &Result<Option<RunExit>, Error>,
    (reason, action): (Option<ExitReason>, Option<VirtualInsnAction>),
) -> String {
    match result {
        Err(e) => format!("error: {e}"),
        Ok(Some(RunExit::Reset(request))) => {
            format!("{} ({})", request.kind.name(), request.reason_name())
        }
        Ok(Some(_)) => "the run ends".to_string(),
        Ok(None) => match (reason, action) {
            (_, Some(action)) => action.name().to_string(),
            (Some(ExitReason::GuestPageFault(c)), _) => {
                // Guest-page faults go to the guest as page faults (codes 20, 21, 23 -> 12, 13, 15).
                let injected = c.wrapping_sub(8);
                let name = vcpu_api::trap::exception_name(injected).unwrap_or("reserved");
                format!("injected {injected} ({name})")
            }
            (Some(ExitReason::AccessFault(c) | ExitReason::Trap(c)), _) => {
                let name = vcpu_api::trap::exception_name(c).unwrap_or("reserved");
                format!("injected {c} ({name})")
            }
            (Some(ExitReason::Wfi), _) => "idled until a wake-up".to_string(),
            (Some(reason), _) => reason.name(),
            (None, _) => "resumed".to_string(),
        },
    }
}

/// The firmware event of a trap the VMM redirects into the guest (SBI PMU firmware events
/// 0-3: misaligned and access-fault loads and stores).
fn firmware_event_of(cause: u64) -> Option<pmu_virt::FwEvent> {
    match cause {
        4 => Some(pmu_virt::FwEvent::MisalignedLoad),
        6 => Some(pmu_virt::FwEvent::MisalignedStore),
        cause::LOAD_ACCESS => Some(pmu_virt::FwEvent::AccessLoad),
        cause::STORE_ACCESS => Some(pmu_virt::FwEvent::AccessStore),
        _ => None,
    }
}
