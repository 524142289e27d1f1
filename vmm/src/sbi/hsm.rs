//! Hart state management extension (EID 0x48534D "HSM", SBI v2.0 chapter 9).
//!
//! `vmm run` has one hart, which is always started:
//! - `hart_start` (FID 0): of that hart, `SBI_ERR_ALREADY_AVAILABLE`; of any other hart id,
//!   `SBI_ERR_INVALID_PARAM`.
//! - `hart_stop` (FID 1): the hart stops for good; since no other hart can start it again,
//!   the VMM ends the run with an error ([`SbiOutcome::HartStopped`]).
//! - `hart_get_status` (FID 2): `STARTED` (0) for the hart, `SBI_ERR_INVALID_PARAM` otherwise.
//! - `hart_suspend` (FID 3): the default retentive suspend (type 0) returns success at once,
//!   like a `WFI` that wakes immediately (the ISA allows WFI to be a no-op; the guest's idle
//!   loop then waits with `WFI`, which the VMM implements). Non-retentive suspend types
//!   (`0x80000000`, platform-specific ones) are valid but not supported
//!   (`SBI_ERR_NOT_SUPPORTED`); reserved types are `SBI_ERR_INVALID_PARAM`.

use super::{SbiCall, SbiEnv, SbiOutcome, SbiRet};
use super::{SBI_ERR_ALREADY_AVAILABLE, SBI_ERR_INVALID_PARAM, SBI_ERR_NOT_SUPPORTED};

/// `hart_get_status`: the hart is running.
pub const STATE_STARTED: u64 = 0;

/// Handles an HSM call.
pub fn handle(call: &SbiCall, env: &mut dyn SbiEnv) -> SbiOutcome {
    let exists = |hart: u64| hart < env.hart_count();
    match call.fid {
        0 => {
            let hart = call.args[0];
            if exists(hart) {
                SbiRet::err(SBI_ERR_ALREADY_AVAILABLE).into()
            } else {
                SbiRet::err(SBI_ERR_INVALID_PARAM).into()
            }
        }
        1 => SbiOutcome::HartStopped,
        2 => {
            if exists(call.args[0]) {
                SbiRet::ok(STATE_STARTED).into()
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
