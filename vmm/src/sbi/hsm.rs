//! Hart state management extension (EID 0x48534D "HSM", SBI v2.0 chapter 9).
//!
//! The hart states live in the platform ([`SbiEnv::hart_start`], [`SbiEnv::hart_status`]):
//! - `hart_start` (FID 0): of a stopped hart, `SBI_SUCCESS` (it starts at `start_addr` in
//!   VS-mode with `a0` = hart id, `a1` = `opaque`, `vsatp` Bare); of a started one,
//!   `SBI_ERR_ALREADY_AVAILABLE`; of a hart id that does not exist, `SBI_ERR_INVALID_PARAM`.
//! - `hart_stop` (FID 1): [`SbiOutcome::HartStopped`]: the platform returns the calling hart
//!   to STOPPED. With one hart nothing can start it again and `vmm run` ends with an error.
//! - `hart_get_status` (FID 2): the hart's state (`STARTED` 0, `STOPPED` 1,
//!   `START_PENDING` 2, ...), `SBI_ERR_INVALID_PARAM` for a hart id that does not exist.
//! - `hart_suspend` (FID 3): the default retentive suspend (type 0) returns success at once,
//!   like a `WFI` that wakes immediately (the ISA allows WFI to be a no-op; the guest's idle
//!   loop then waits with `WFI`, which the VMM implements). Non-retentive suspend types
//!   (`0x80000000`, platform-specific ones) are valid but not supported
//!   (`SBI_ERR_NOT_SUPPORTED`); reserved types are `SBI_ERR_INVALID_PARAM`.

use super::{SbiCall, SbiEnv, SbiOutcome, SbiRet};
use super::{SBI_ERR_INVALID_PARAM, SBI_ERR_NOT_SUPPORTED};

/// `hart_get_status`: the hart is running.
pub const STATE_STARTED: u64 = 0;
/// `hart_get_status`: the hart is stopped.
pub const STATE_STOPPED: u64 = 1;
/// `hart_get_status`: a `hart_start` is in progress.
pub const STATE_START_PENDING: u64 = 2;

/// Handles an HSM call.
pub fn handle(call: &SbiCall, env: &mut dyn SbiEnv) -> SbiOutcome {
    let exists = |hart: u64| hart < env.hart_count();
    match call.fid {
        0 => {
            let hart = call.args[0];
            if exists(hart) {
                env.hart_start(hart, call.args[1], call.args[2]).into()
            } else {
                SbiRet::err(SBI_ERR_INVALID_PARAM).into()
            }
        }
        1 => SbiOutcome::HartStopped,
        2 => {
            if exists(call.args[0]) {
                SbiRet::ok(env.hart_status(call.args[0])).into()
            } else {
                SbiRet::err(SBI_ERR_INVALID_PARAM).into()
            }
        }
        3 => {
            let suspend_type = call.args[0];
            match suspend_type {
                0 => SbiRet::ok(0).into(),
                0x8000_0000 | 0x1000_0000..=0x7fff_ffff | 0x9000_0000..=0xffff_ffff => {
                    SbiRet::err(SBI_ERR_NOT_SUPPORTED).into()
                }
                _ => SbiRet::err(SBI_ERR_INVALID_PARAM).into(),
            }
        }
        _ => SbiRet::err(SBI_ERR_NOT_SUPPORTED).into(),
    }
}
