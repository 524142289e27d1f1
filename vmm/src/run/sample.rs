//! Virtual-instruction exits of guest sampling (`pmu_virt::sample`; Smpdis
//! "State Enable Access Control"): Sspesa's `shpmspc`/`shpmsdata` and `scountovf` emulated,
//! PDIS state loaded on the guest's first access (`hstateen0.PDIS`, then the instruction
//! runs again). See "Sampling" in `docs/pmu-virt.md`.

use vcpu_api::GuestTrap;

use super::exits::VcpuCtx;
use super::{ExitReason, VirtualInsnAction};

impl VcpuCtx<'_> {
    /// Handles `trap` if it is a sampling access (Sspesa
    /// "Hardware Performance Monitor Sample PC Register (`shpmspc`)", Smpdis
    /// "State Enable Access Control"); `None` leaves it to the other handlers.
    pub(super) fn sampling_virtual_insn(&mut self, trap: &GuestTrap) -> Option<VirtualInsnAction> {
        let outcome = self
            .pmu
            .sampling_virtual_insn(self.hart, trap.insn, trap.from_vu);
        let action = match outcome {
            pmu_virt::SampleOutcome::NotSampling => return None,
            pmu_virt::SampleOutcome::EmulatedSspesa => {
                self.stats.count(ExitReason::SspesaEmulated);
                VirtualInsnAction::EmulatedSspesa
            }
            pmu_virt::SampleOutcome::EmulatedScountovf => {
                self.stats.count(ExitReason::ScountovfEmulated);
                VirtualInsnAction::EmulatedScountovf
            }
            pmu_virt::SampleOutcome::PdisLoaded => {
                self.stats.count(ExitReason::PdisLazyLoad);
                VirtualInsnAction::PdisLoaded
            }
            pmu_virt::SampleOutcome::InjectIllegal => {
                self.inject_illegal(trap);
                VirtualInsnAction::InjectedIllegal
            }
        };
        Some(action)
    }
}
