//! Counter delegation (Ssccfg; Smcdeleg 3 "Counter Delegation", 4
//! "Supervisor Counter Inhibit Register (`scountinhibit`)", 5 "Virtualizing `scountovf`")
//! for `vmm run` guests: the virtual-instruction exits of the guest's delegated-counter
//! accesses go to `pmu-virt` (`pmu_virt::deleg`), which emulates them on the vCPU's virtual
//! counters or asks for an illegal-instruction exception.
//!
//! Each emulated access is counted in the exit statistics as `pmu-deleg <access>` (with
//! ` write` for writes), and each one that names a counter also as
//! `pmu-deleg counter <virtual> on hart counter <hart>`: that is where the mapping shows
//! (the guest cannot see it).

use vcpu_api::GuestTrap;

use super::exits::VcpuCtx;
use super::{ExitReason, VirtualInsnAction};

impl VcpuCtx<'_> {
    /// Handles `trap` if it is a delegated-counter access (Smcdeleg 3 "Counter Delegation",
    /// 4, 5); `None` if it is not one.
    pub(super) fn pmu_deleg(&mut self, trap: &GuestTrap) -> Option<VirtualInsnAction> {
        match self.pmu.on_virtual_insn(self.hart, trap.insn, trap.from_vu) {
            pmu_virt::DelegOutcome::NotDeleg => None,
            pmu_virt::DelegOutcome::Emulated {
                access,
                write,
                counter,
            } => {
                self.stats.count(ExitReason::PmuDeleg { access, write });
                if let Some((virt, hart)) = counter {
                    self.stats.count(ExitReason::PmuDelegCounter { virt, hart });
                }
                Some(VirtualInsnAction::EmulatedPmuDeleg)
            }
            pmu_virt::DelegOutcome::InjectIllegal => {
                self.stats.count(ExitReason::PmuDelegInjectedIllegal);
                self.inject_illegal(trap);
                Some(VirtualInsnAction::InjectedIllegal)
            }
        }
    }
}
