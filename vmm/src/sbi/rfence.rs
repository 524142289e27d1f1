//! RFENCE extension (EID 0x52464E43 "RFNC", SBI v2.0 chapter 8).
//!
//! `remote_fence_i` (FID 0), `remote_sfence_vma` (1) and `remote_sfence_vma_asid` (2) are
//! provided. With a single hart the only possible target is the caller, and the hart model
//! needs no fence for it: its decode cache re-checks instruction bits on every hit, and the
//! guest's own `SFENCE.VMA` (which a kernel executes locally anyway) flushes its TLB. So a
//! valid request succeeds with no further action. The hypervisor fences (FIDs 3-6) are not
//! supported: the guest has no H extension.

use super::{selected_harts, SbiCall, SbiEnv, SbiOutcome, SbiRet};
use super::{SBI_ERR_INVALID_PARAM, SBI_ERR_NOT_SUPPORTED};

/// Handles an RFENCE call.
pub fn handle(call: &SbiCall, env: &mut dyn SbiEnv) -> SbiOutcome {
    match call.fid {
        0..=2 => match selected_harts(call.args[0], call.args[1], env.hart_count()) {
            Some(_) => SbiRet::ok(0).into(),
            None => SbiRet::err(SBI_ERR_INVALID_PARAM).into(),
        },
        _ => SbiRet::err(SBI_ERR_NOT_SUPPORTED).into(),
    }
}
