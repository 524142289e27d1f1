//! Timer extension (EID 0x54494D45 "TIME", SBI v2.0 chapter 6).

use super::{FwEvent, SbiCall, SbiEnv, SbiOutcome, SbiRet, SBI_ERR_NOT_SUPPORTED};

/// Handles a TIME call: `sbi_set_timer(stime_value)` programs the next timer event (in
/// `time` units) and clears the pending timer interrupt. `u64::MAX` effectively turns the
/// timer off.
pub fn handle(call: &SbiCall, env: &mut dyn SbiEnv) -> SbiOutcome {
    match call.fid {
        0 => {
            env.set_timer(call.args[0]);
            let hart = env.current_hart();
            env.firmware_event(hart, FwEvent::SetTimer);
            SbiRet::ok(0).into()
        }
        _ => SbiRet::err(SBI_ERR_NOT_SUPPORTED).into(),
    }
}
