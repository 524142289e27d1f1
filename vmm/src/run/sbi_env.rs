//! The SBI adapter of `vmm run`: [`PlatformEnv`], the platform (hart, vCPUs, RAM, console,
//! PMU) as the SBI implementation ([`crate::sbi`]) sees it during one call.

use std::io::Write;
use std::sync::{Mutex, MutexGuard};

use crate::backend::Hart;
use vcpu_api::Vcpu;
use vm_memory::{GuestAddress, GuestMemoryBackend as _, GuestMemoryMmap};

use super::smp::Smp;
use super::{InputQueue, VSSIP, VSTIP};
use crate::devices::uart::Uart;
use crate::sbi::{self, SbiEnv, SbiRet};

/// The platform as the SBI implementation sees it.
pub(super) struct PlatformEnv<'a> {
    pub hart: &'a mut Hart,
    pub hart_id: u64,
    pub smp: Option<&'a Smp>,
    pub mem: &'a GuestMemoryMmap,
    pub uart: &'a Mutex<Uart>,
    pub input: &'a InputQueue,
    pub pmu: &'a mut pmu_virt::GuestPmu,
    pub fw: &'a pmu_virt::FwTallies,
}

impl PlatformEnv<'_> {
    fn uart(&self) -> MutexGuard<'_, Uart> {
        self.uart.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SbiEnv for PlatformEnv<'_> {
    fn hart_count(&self) -> u64 {
        self.smp.map_or(1, Smp::hart_count)
    }

    fn current_hart(&self) -> u64 {
        self.hart_id
    }

    fn hart_start(&mut self, hart: u64, start_addr: u64, opaque: u64) -> SbiRet {
        match self.smp {
            Some(_) if !self.mem.address_in_range(GuestAddress(start_addr)) => {
                SbiRet::err(sbi::SBI_ERR_INVALID_ADDRESS)
            }
            Some(smp) => smp.hart_start(hart, start_addr, opaque),
            None => SbiRet::err(sbi::SBI_ERR_ALREADY_AVAILABLE),
        }
    }

    fn hart_status(&self, hart: u64) -> u64 {
        match self.smp {
            Some(smp) => {
                // A poll of another vCPU's state: let it run first (`run/smp.rs`).
                smp.yield_to(self.hart_id, hart);
                smp.hart_status(hart)
            }
            None => sbi::hsm::STATE_STARTED,
        }
    }

    fn remote_fence(&mut self, harts: &[u64]) {
        // Every hart in the mask is fenced, the caller included (SBI v2.0 chapter 8): Linux
        // relies on it when its mask holds the local hart and others. The caller's request
        // is taken before its next instruction (`Hart::run` starts with its mailbox).
        if harts.contains(&self.hart_id) {
            self.hart.mailbox().request_flush();
        }
        if let Some(smp) = self.smp {
            smp.remote_fence(self.hart_id, harts);
        }
    }

    fn set_timer(&mut self, deadline: u64) {
        Vcpu::set_guest_timer(self.hart, deadline);
        let hvip = Vcpu::virtual_interrupts(self.hart);
        Vcpu::set_virtual_interrupts(self.hart, hvip & !VSTIP);
    }

    fn send_ipi(&mut self, hart: u64) {
        match self.smp {
            Some(smp) if hart != self.hart_id => smp.send_ipi(hart, VSSIP),
            _ => {
                let hvip = Vcpu::virtual_interrupts(self.hart);
                Vcpu::set_virtual_interrupts(self.hart, hvip | VSSIP);
            }
        }
    }

    fn memory(&self) -> &GuestMemoryMmap {
        self.mem
    }

    fn console_write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut uart = self.uart();
        let out = uart.console();
        out.write_all(bytes)?;
        out.flush()?;
        Ok(bytes.len())
    }

    fn console_read(&mut self, buf: &mut [u8]) -> usize {
        // Bytes already in the UART's FIFO are older than those in the queue.
        let n = self.uart().take_input(buf);
        n + self.input.pop_into(&mut buf[n..])
    }

    fn has_pmu(&self) -> bool {
        self.pmu.policy().enabled
    }

    fn pmu_call(&mut self, fid: u64, args: [u64; 6]) -> SbiRet {
        match self.pmu.sbi_call(self.hart, self.mem, fid, args) {
            Ok(value) => SbiRet::ok(value),
            Err(e) => {
                log::debug!("sbi: PMU fid {fid} {args:#x?}: {e}");
                SbiRet::err(e.sbi_error())
            }
        }
    }

    fn firmware_event(&mut self, hart: u64, event: pmu_virt::FwEvent) {
        self.fw.record(hart, event);
    }
}
