//! A fake vCPU for unit tests of code above the boundary (`ctr-virt`, `pmu-virt`, a VMM's
//! exit handlers): registers and a map of hypervisor-level CSRs, with no WARL rules and no
//! execution. [`Vcpu::run`] returns the exits queued with [`FakeVcpu::push_exit`], then
//! [`VcpuExit::BudgetExhausted`]. It has no MMU: [`Vcpu::debug_translate`] is the identity.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use crate::ctr::{CtrConfig, CtrEntry};
use crate::exit::{StopHandle, VcpuExit};
use crate::smp::HartMailbox;
use crate::vcpu::{CsrError, DebugAccess, DebugTranslateError, GuestTraps, PrivilegeMode, Vcpu};

/// See the module documentation.
#[derive(Debug, Default)]
pub struct FakeVcpu {
    /// The program counter.
    pub pc: u64,
    /// x0-x31 (x0 stays 0).
    pub x: [u64; 32],
    /// The CSRs that exist, by number (every other number is [`CsrError::NotImplemented`]).
    pub csrs: BTreeMap<u16, u64>,
    /// The guest's privilege mode.
    pub privilege: Option<PrivilegeMode>,
    /// The CTR configuration [`Vcpu::ctr_config`] reports.
    pub ctr: Option<CtrConfig>,
    /// CTR logical entries, newest first (entry 0 is the newest).
    pub ctr_entries: Vec<CtrEntry>,
    /// Exceptions injected so far: (cause, tval).
    pub injected: Vec<(u64, u64)>,
    /// `hvip`.
    pub hvip: u64,
    /// The guest timer deadline.
    pub timer: u64,
    /// Traps the VMM asked for.
    pub traps: GuestTraps,
    /// `hcounteren` as the VMM set it.
    pub counteren: u64,
    /// Instructions "executed".
    pub executed: u64,
    exits: VecDeque<VcpuExit>,
    stop: StopHandle,
    mailbox: Arc<HartMailbox>,
}

impl FakeVcpu {
    /// A fake vCPU in VS-mode whose CSRs are `csrs` (number, value).
    pub fn with_csrs(csrs: &[(u16, u64)]) -> FakeVcpu {
        FakeVcpu {
            csrs: csrs.iter().copied().collect(),
            privilege: Some(PrivilegeMode::Supervisor),
            ..FakeVcpu::default()
        }
    }

    /// Queue an exit for [`Vcpu::run`] to return.
    pub fn push_exit(&mut self, exit: VcpuExit) {
        self.exits.push_back(exit);
    }
}

impl Vcpu for FakeVcpu {
    fn run(&mut self, _budget: u64) -> VcpuExit {
        if self.stop.take() {
            return VcpuExit::StopRequested;
        }
        self.exits.pop_front().unwrap_or(VcpuExit::BudgetExhausted)
    }
    fn pc(&self) -> u64 {
        self.pc
    }
    fn set_pc(&mut self, pc: u64) {
        self.pc = pc;
    }
    fn xreg(&self, i: usize) -> u64 {
        self.x[i & 31]
    }
    fn set_xreg(&mut self, i: usize, v: u64) {
        if i & 31 != 0 {
            self.x[i & 31] = v;
        }
    }
    fn complete_mmio_read(&mut self, _data: u64) {}
    fn inject_exception(&mut self, cause: u64, tval: u64) {
        self.injected.push((cause, tval));
    }
    fn guest_privilege(&self) -> PrivilegeMode {
        self.privilege.unwrap_or(PrivilegeMode::Supervisor)
    }
    fn set_guest_privilege(&mut self, mode: PrivilegeMode) {
        if matches!(mode, PrivilegeMode::Supervisor | PrivilegeMode::User) {
            self.privilege = Some(mode);
        }
    }
    fn set_virtual_interrupts(&mut self, hvip: u64) {
        let vs = crate::trap::VS_INTERRUPTS;
        self.hvip = (self.hvip & !vs) | (hvip & vs);
    }
    fn virtual_interrupts(&self) -> u64 {
        self.hvip
    }
    fn set_guest_timer(&mut self, deadline: u64) {
        self.timer = deadline;
    }
    fn guest_time(&self) -> u64 {
        self.executed / crate::INSNS_PER_TICK
    }
    fn skip_to_timer(&mut self) -> bool {
        false
    }
    fn wakeup_pending(&self) -> bool {
        self.mailbox.has_pending()
    }
    fn timer_deadline_slots(&self) -> Option<u64> {
        None
    }
    fn executed(&self) -> u64 {
        self.executed
    }
    fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }
    fn mailbox(&self) -> Arc<HartMailbox> {
        self.mailbox.clone()
    }
    fn set_mailbox(&mut self, mailbox: Arc<HartMailbox>) {
        self.mailbox = mailbox;
    }
    fn guest_start(&mut self, pc: u64, a0: u64, a1: u64) {
        self.pc = pc;
        self.x[10] = a0;
        self.x[11] = a1;
        self.privilege = Some(PrivilegeMode::Supervisor);
    }
    fn set_guest_traps(&mut self, traps: GuestTraps) {
        self.traps = traps;
    }
    fn set_guest_counteren(&mut self, mask: u64) {
        self.counteren = mask;
    }
    fn guest_scounteren(&self) -> u64 {
        self.csrs.get(&crate::csr::SCOUNTEREN).copied().unwrap_or(0)
    }
    fn host_csr(&self, num: u16) -> Result<u64, CsrError> {
        self.csrs
            .get(&num)
            .copied()
            .ok_or(CsrError::NotImplemented(num))
    }
    fn set_host_csr(&mut self, num: u16, value: u64) -> Result<(), CsrError> {
        if (num >> 10) & 3 == 3 {
            return Err(CsrError::ReadOnly(num));
        }
        match self.csrs.get_mut(&num) {
            Some(v) => {
                *v = value;
                Ok(())
            }
            None => Err(CsrError::NotImplemented(num)),
        }
    }
    fn ctr_config(&self) -> Option<CtrConfig> {
        self.ctr.clone()
    }
    fn ctr_clear(&mut self) {
        self.ctr_entries
            .iter_mut()
            .for_each(|e| *e = CtrEntry::default());
    }
    fn ctr_entry(&self, x: u64) -> CtrEntry {
        self.ctr_entries
            .get(x as usize)
            .copied()
            .unwrap_or_default()
    }
    /// The fake vCPU has no MMU: every address translates to itself, for every kind.
    fn debug_translate(&self, vaddr: u64, _kind: DebugAccess) -> Result<u64, DebugTranslateError> {
        Ok(vaddr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csr;
    use crate::zicsr::CsrInsn;

    #[test]
    fn csr_errors_name_the_csr_and_the_reason() {
        let mut v = FakeVcpu::with_csrs(&[(csr::VSISELECT, 0x200)]);
        assert_eq!(v.host_csr(csr::VSISELECT), Ok(0x200));
        assert_eq!(v.host_csr(0x7ff), Err(CsrError::NotImplemented(0x7ff)));
        assert_eq!(
            v.set_host_csr(csr::CYCLE, 1).unwrap_err().to_string(),
            "CSR 0xc00 is read-only"
        );
        assert_eq!(v.set_host_csr(csr::VSISELECT, 0x201), Ok(()));
        assert_eq!(v.host_csr(csr::VSISELECT), Ok(0x201));
    }

    #[test]
    fn debug_translate_is_the_identity() {
        let v = FakeVcpu::default();
        for kind in [DebugAccess::Fetch, DebugAccess::Load, DebugAccess::Store] {
            assert_eq!(
                v.debug_translate(0xffff_ffc0_1234_5678, kind),
                Ok(0xffff_ffc0_1234_5678)
            );
        }
    }

    #[test]
    fn debug_translate_errors_name_the_addresses() {
        let e = DebugTranslateError::GuestPageFault {
            vaddr: 0x1000,
            gpa: 0x8020_0000,
        };
        assert_eq!(
            e.to_string(),
            "no valid G-stage mapping for guest physical address 0x80200000 \
             (translating 0x1000; guest-page fault)"
        );
        let e = DebugTranslateError::PageFault { vaddr: 0x4000 };
        assert!(e.to_string().contains("0x4000"));
    }

    #[test]
    fn zicsr_emulation_reads_into_rd_and_returns_the_new_value() {
        let mut v = FakeVcpu::default();
        v.x[6] = 0b1010;
        // csrrs x5, sctrdepth, x6
        let insn = (u32::from(csr::SCTRDEPTH) << 20) | (6 << 15) | (2 << 12) | (5 << 7) | 0x73;
        let c = CsrInsn::decode(insn).unwrap();
        assert_eq!(c.emulate(&mut v, 0b0101), Some(0b1111));
        assert_eq!(v.x[5], 0b0101);
        // csrrs x5, sctrdepth, x0 reads without writing.
        let c = CsrInsn::decode(insn & !(0x1f << 15)).unwrap();
        assert_eq!(c.emulate(&mut v, 3), None);
        assert_eq!(v.x[5], 3);
    }
}
