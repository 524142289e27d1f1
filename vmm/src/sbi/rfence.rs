//! RFENCE extension (EID 0x52464E43 "RFNC", SBI v2.0 chapter 8).
//!
//! `remote_fence_i` (FID 0), `remote_sfence_vma` (1) and `remote_sfence_vma_asid` (2) are
//! provided. Every selected hart flushes its whole TLB (address ranges and ASIDs are not
//! tracked) before the call returns, or before it executes another instruction
//! ([`SbiEnv::remote_fence`]). No decode cache needs a flush: every hit re-checks the
//! instruction bits, so `remote_fence_i` only waits for the targets. The calling hart is
//! fenced too when the mask selects it (before its next instruction): Linux leaves its own
//! flush to the SBI when the mask also holds other harts. Each selected hart counts as one request sent by the
//! caller and one received by that hart (the PMU's firmware events). The hypervisor fences (FIDs 3-6) are not
//! supported: the guest has no H extension.

use super::{selected_harts, FwEvent, SbiCall, SbiEnv, SbiOutcome, SbiRet};
use super::{SBI_ERR_INVALID_PARAM, SBI_ERR_NOT_SUPPORTED};

/// Handles an RFENCE call.
pub fn handle(call: &SbiCall, env: &mut dyn SbiEnv) -> SbiOutcome {
    match call.fid {
        0..=2 => match selected_harts(call.args[0], call.args[1], env.hart_count()) {
            Some(harts) => {
                env.remote_fence(&harts);
                let (sent, received) = match call.fid {
                    0 => (FwEvent::FenceISent, FwEvent::FenceIReceived),
                    1 => (FwEvent::SfenceVmaSent, FwEvent::SfenceVmaReceived),
                    _ => (FwEvent::SfenceVmaAsidSent, FwEvent::SfenceVmaAsidReceived),
                };
                let me = env.current_hart();
                for hart in harts {
                    env.firmware_event(me, sent);
                    env.firmware_event(hart, received);
                }
                SbiRet::ok(0).into()
            }
            None => SbiRet::err(SBI_ERR_INVALID_PARAM).into(),
        },
        _ => SbiRet::err(SBI_ERR_NOT_SUPPORTED).into(),
    }
}
