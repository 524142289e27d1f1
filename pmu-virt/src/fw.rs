//! Firmware events: what the VMM, as the guest's SBI implementation, counts for firmware
//! counters (SBI v2.0 chapter 11, "Event: Firmware events (Type #15)").
//!
//! Each vCPU has a tally per event ([`FwTallies`], shared by every vCPU thread of a VM, so
//! that a hart sending an IPI or a remote fence can count its *receipt* on the target
//! hart). A firmware counter holds its value at the last stop plus, while started, the
//! growth of its event's tally since it started.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The firmware events this VMM counts, with their SBI event codes.
///
/// The HFENCE events (codes 14-21) are not counted (the guest has no H extension:
/// `SBI_ERR_NOT_SUPPORTED`); code 256, the first implementation-specific code, counts SBI
/// calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum FwEvent {
    /// `SBI_PMU_FW_MISALIGNED_LOAD` (0): misaligned-load traps the VMM redirected.
    MisalignedLoad = 0,
    /// `SBI_PMU_FW_MISALIGNED_STORE` (1): misaligned-store traps the VMM redirected.
    MisalignedStore,
    /// `SBI_PMU_FW_ACCESS_LOAD` (2): load access faults the VMM redirected.
    AccessLoad,
    /// `SBI_PMU_FW_ACCESS_STORE` (3): store access faults the VMM redirected.
    AccessStore,
    /// `SBI_PMU_FW_ILLEGAL_INSN` (4): illegal-instruction exceptions the VMM injected (for
    /// virtual-instruction exits it does not emulate).
    IllegalInsn,
    /// `SBI_PMU_FW_SET_TIMER` (5): SBI `set_timer` calls.
    SetTimer,
    /// `SBI_PMU_FW_IPI_SENT` (6): IPIs sent through SBI `send_ipi`, one per target hart.
    IpiSent,
    /// `SBI_PMU_FW_IPI_RECEIVED` (7): IPIs received from SBI `send_ipi`.
    IpiReceived,
    /// `SBI_PMU_FW_FENCE_I_SENT` (8): `remote_fence_i` requests, one per target hart.
    FenceISent,
    /// `SBI_PMU_FW_FENCE_I_RECEIVED` (9).
    FenceIReceived,
    /// `SBI_PMU_FW_SFENCE_VMA_SENT` (10): `remote_sfence_vma` requests, one per target hart.
    SfenceVmaSent,
    /// `SBI_PMU_FW_SFENCE_VMA_RECEIVED` (11).
    SfenceVmaReceived,
    /// `SBI_PMU_FW_SFENCE_VMA_ASID_SENT` (12): `remote_sfence_vma_asid` requests.
    SfenceVmaAsidSent,
    /// `SBI_PMU_FW_SFENCE_VMA_ASID_RECEIVED` (13).
    SfenceVmaAsidReceived,
    /// Implementation-specific code 256: SBI calls (ECALLs from VS-mode) the VMM handled.
    SbiCalls,
}

/// Number of [`FwEvent`]s.
pub const NUM_FW_EVENTS: usize = FwEvent::SbiCalls as usize + 1;

/// Event code of [`FwEvent::SbiCalls`].
pub const FW_SBI_CALLS_CODE: u16 = 256;

const ALL: [FwEvent; NUM_FW_EVENTS] = [
    FwEvent::MisalignedLoad,
    FwEvent::MisalignedStore,
    FwEvent::AccessLoad,
    FwEvent::AccessStore,
    FwEvent::IllegalInsn,
    FwEvent::SetTimer,
    FwEvent::IpiSent,
    FwEvent::IpiReceived,
    FwEvent::FenceISent,
    FwEvent::FenceIReceived,
    FwEvent::SfenceVmaSent,
    FwEvent::SfenceVmaReceived,
    FwEvent::SfenceVmaAsidSent,
    FwEvent::SfenceVmaAsidReceived,
    FwEvent::SbiCalls,
];

impl FwEvent {
    /// The SBI event code (`event_idx[15:0]`).
    pub fn code(self) -> u16 {
        match self {
            FwEvent::SbiCalls => FW_SBI_CALLS_CODE,
            e => e as u16,
        }
    }

    /// The event of an SBI event code, if this VMM counts it.
    pub fn from_code(code: u16) -> Option<FwEvent> {
        ALL.iter().copied().find(|e| e.code() == code)
    }

    /// Every event.
    pub fn all() -> &'static [FwEvent] {
        &ALL
    }
}

/// The firmware-event tallies of every vCPU of a VM (cheap to clone: one shared table).
#[derive(Clone, Debug)]
pub struct FwTallies(Arc<Vec<[AtomicU64; NUM_FW_EVENTS]>>);

impl FwTallies {
    /// Zero tallies for `vcpus` vCPUs.
    pub fn new(vcpus: usize) -> FwTallies {
        FwTallies(Arc::new(
            (0..vcpus)
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
        ))
    }

    /// Number of vCPUs.
    pub fn vcpus(&self) -> usize {
        self.0.len()
    }

    /// Counts one `event` on vCPU `vcpu` (ignored for a vCPU that does not exist).
    pub fn record(&self, vcpu: u64, event: FwEvent) {
        if let Some(row) = usize::try_from(vcpu).ok().and_then(|v| self.0.get(v)) {
            row[event as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The tally of `event` on `vcpu` (0 for a vCPU that does not exist).
    pub fn get(&self, vcpu: usize, event: FwEvent) -> u64 {
        self.0
            .get(vcpu)
            .map_or(0, |row| row[event as usize].load(Ordering::Relaxed))
    }

    /// Every tally of `vcpu` (for snapshots), in [`FwEvent`] order.
    pub fn row(&self, vcpu: usize) -> Vec<u64> {
        FwEvent::all().iter().map(|&e| self.get(vcpu, e)).collect()
    }

    /// Sets the tallies of `vcpu` (from a snapshot; missing values are 0).
    pub fn set_row(&self, vcpu: usize, values: &[u64]) {
        if let Some(row) = self.0.get(vcpu) {
            for (i, t) in row.iter().enumerate() {
                t.store(values.get(i).copied().unwrap_or(0), Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for &e in FwEvent::all() {
            assert_eq!(FwEvent::from_code(e.code()), Some(e));
        }
        assert_eq!(FwEvent::from_code(14), None);
        assert_eq!(FwEvent::from_code(22), None);
        assert_eq!(FwEvent::SbiCalls.code(), 256);
    }

    #[test]
    fn tallies_are_per_vcpu() {
        let t = FwTallies::new(2);
        t.record(0, FwEvent::IpiSent);
        t.record(1, FwEvent::IpiReceived);
        t.record(1, FwEvent::IpiReceived);
        t.record(7, FwEvent::IpiReceived);
        assert_eq!(t.get(0, FwEvent::IpiSent), 1);
        assert_eq!(t.get(1, FwEvent::IpiReceived), 2);
        assert_eq!(t.get(0, FwEvent::IpiReceived), 0);
        let row = t.row(1);
        let u = FwTallies::new(2);
        u.set_row(1, &row);
        assert_eq!(u.get(1, FwEvent::IpiReceived), 2);
    }
}
