//! Performance monitoring unit extension (EID 0x504D55 "PMU", SBI v2.0 chapter 11).
//!
//! Available when the VM has a PMU (`vmm run --pmu on`, the default; `sbi_probe_extension`
//! reports it then). The functions are `pmu-virt`'s ([`pmu_virt::GuestPmu::sbi_call`]):
//! `num_counters` (0), `counter_get_info` (1), `counter_config_matching` (2),
//! `counter_start` (3), `counter_stop` (4), `counter_fw_read` (5), `counter_fw_read_hi` (6)
//! and `snapshot_set_shmem` (7, only with `--pmu-snapshot on`); `event_get_info` (8,
//! SBI v3.0) and unknown FIDs return `SBI_ERR_NOT_SUPPORTED`. Without a PMU every call returns `SBI_ERR_NOT_SUPPORTED`.

use super::{SbiCall, SbiEnv, SbiOutcome, SbiRet, SBI_ERR_NOT_SUPPORTED};

/// Handles a PMU call.
pub fn handle(call: &SbiCall, env: &mut dyn SbiEnv) -> SbiOutcome {
    if !env.has_pmu() {
        return SbiRet::err(SBI_ERR_NOT_SUPPORTED).into();
    }
    env.pmu_call(call.fid, call.args).into()
}
