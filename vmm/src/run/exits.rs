//! Exit handling of `vmm run`: what the VMM does when the hart leaves the guest (see the
//! module documentation of `run/mod.rs`). [`GuestVm::handle_exit`] dispatches by kind; each
//! kind has its handler: MMIO, WFI, HS-level interrupts, guest traps (SBI calls, virtual
//! instructions, faults to inject).

use std::io::Write;

use vcpu::{GuestTrap, MmioAccess, Vcpu, VcpuExit};

use super::sbi_env::PlatformEnv;
use super::sched::Leave;
use super::vinsn;
use super::{Device, ExitReason, GuestVm, RunExit, VirtualInsnAction, VirtualInsnExit};
use crate::devices::bus::mask_read;
use crate::error::Error;
use crate::machine::HART_ID;
use crate::sbi::{self, SbiCall, SbiOutcome};

/// Exception codes the VMM handles.
pub(super) mod cause {
    pub const FETCH_ACCESS: u64 = 1;
    pub const ILLEGAL_INSN: u64 = 2;
    pub const LOAD_ACCESS: u64 = 5;
    pub const STORE_ACCESS: u64 = 7;
    pub const ECALL_VS: u64 = 10;
    pub const FETCH_PAGE_FAULT: u64 = 12;
    pub const LOAD_PAGE_FAULT: u64 = 13;
    pub const STORE_PAGE_FAULT: u64 = 15;
    pub const FETCH_GUEST_PAGE_FAULT: u64 = 20;
    pub const LOAD_GUEST_PAGE_FAULT: u64 = 21;
    pub const VIRTUAL_INSN: u64 = 22;
    pub const STORE_GUEST_PAGE_FAULT: u64 = 23;
}

impl GuestVm {
    /// Acts on one exit; returns the run's end if this exit is one.
    pub(super) fn handle_exit(&mut self, exit: VcpuExit) -> Result<Option<RunExit>, Error> {
        match exit {
            VcpuExit::Mmio(access) => {
                self.mmio(access);
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
                    Ok(Some(RunExit::Quit))
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
            VcpuExit::HostInterrupt(irq) => self.host_interrupt(irq),
        }
    }

    /// An HS-level interrupt left the guest. The only one the hart raises in hosted mode is
    /// the LCOFI of selective delivery ([`pmu_virt::lcofi`]): passed on to the guest
    /// through `hvip` when one of its counters overflowed.
    fn host_interrupt(&mut self, irq: u64) -> Result<Option<RunExit>, Error> {
        if irq != pmu_virt::lcofi::LCOFIP.trailing_zeros() as u64 {
            return Err(Error::UnexpectedInterrupt {
                hart: self.hart_id,
                irq,
            });
        }
        match self.pmu.take_lcofi(&mut self.hart) {
            pmu_virt::LcofiOutcome::Injected => self.stats.count(ExitReason::LcofiInjected),
            pmu_virt::LcofiOutcome::Spurious => self.stats.count(ExitReason::LcofiSpurious),
        }
        Ok(None)
    }

    /// After a WFI: waits (in virtual time) until the hart can wake; `false` when nothing can
    /// Routes an MMIO access through the VM's bus (the UART is the only device).
    fn mmio(&mut self, access: MmioAccess) {
        let MmioAccess { addr, size, write } = access;
        let hit = self.bus.find(addr, u64::from(size)).filter(|h| h.fits);
        let value = match (hit.map(|h| (h.device, h.offset)), write) {
            (Some((Device::Uart, off)), Some(v)) => {
                self.stats.count(ExitReason::MmioUartWrite);
                self.uart().write(off, size, v);
                0
            }
            (Some((Device::Uart, off)), None) => {
                self.stats.count(ExitReason::MmioUartRead);
                self.uart().read(off, size)
            }
            (None, _) => {
                self.stats.count(ExitReason::MmioOther);
                log::warn!("{size}-byte access at {addr:#x} outside any device; ignored");
                0
            }
        };
        if write.is_none() {
            Vcpu::complete_mmio_read(&mut self.hart, mask_read(value, size));
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
            cause::FETCH_ACCESS | cause::LOAD_ACCESS | cause::STORE_ACCESS => {
                if let Some(ev) = firmware_event_of(trap.cause) {
                    self.fw.record(self.hart_id, ev);
                }
                self.stats.count(ExitReason::AccessFault(trap.cause));
                self.inject(trap.cause, trap.tval);
            }
            cause::FETCH_GUEST_PAGE_FAULT
            | cause::LOAD_GUEST_PAGE_FAULT
            | cause::STORE_GUEST_PAGE_FAULT => {
                self.stats.count(ExitReason::GuestPageFault(trap.cause));
                let page_fault = match trap.cause {
                    cause::FETCH_GUEST_PAGE_FAULT => cause::FETCH_PAGE_FAULT,
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
        Ok(None)
    }

    /// A virtual-instruction exit: emulates what the policy traps, injects an
    /// illegal-instruction exception for the rest, and records the exit.
    fn virtual_insn(&mut self, trap: GuestTrap) -> Result<Option<RunExit>, Error> {
        let next = trap.pc.wrapping_add(4);
        let ctr = match self
            .ctr
            .on_virtual_insn(&mut self.hart, trap.insn, trap.from_vu)
        {
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
                self.fw.record(self.hart_id, pmu_virt::FwEvent::IllegalInsn);
                self.inject(cause::ILLEGAL_INSN, u64::from(trap.insn));
                Some(VirtualInsnAction::InjectedIllegal)
            }
        };
        // Counter delegation first: with it, `scountovf` is the delegated counters' view.
        if let Some(action) = ctr
            .or_else(|| self.pmu_deleg(&trap))
            .or_else(|| self.sampling_virtual_insn(&trap))
        {
            self.record_virtual_insn(&trap, action);
            return Ok(None);
        }
        let time_rd = vinsn::time_read_rd(trap.insn)
            .filter(|_| !trap.from_vu || vinsn::vu_may_read_time(&self.hart));
        let (action, result) = if self.policy.trap_wfi && !trap.from_vu && trap.insn == vinsn::WFI {
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
            self.fw.record(self.hart_id, pmu_virt::FwEvent::IllegalInsn);
            self.inject(cause::ILLEGAL_INSN, u64::from(trap.insn));
            (VirtualInsnAction::InjectedIllegal, Ok(None))
        };
        self.record_virtual_insn(&trap, action);
        result
    }

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
    /// the trap been delegated to it (ctr-virt).
    pub(super) fn inject(&mut self, cause: u64, tval: u64) {
        let from_vu = Vcpu::guest_privilege(&self.hart) == vcpu::PrivilegeMode::User;
        let epc = Vcpu::pc(&self.hart);
        Vcpu::inject_exception(&mut self.hart, cause, tval);
        // Exceptions go to vstvec's base whatever its MODE.
        let handler = Vcpu::pc(&self.hart);
        let before = self.ctr.stats.synthesized;
        self.ctr
            .synthesize_trap(&mut self.hart, cause, false, from_vu, epc, handler);
        if self.ctr.stats.synthesized != before {
            self.stats.count(ExitReason::CtrRecordSynthesized);
        }
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
