//! IPI extension (EID 0x735049 "sPI", SBI v2.0 chapter 7).

use super::{selected_harts, FwEvent, SbiCall, SbiEnv, SbiOutcome, SbiRet};
use super::{SBI_ERR_INVALID_PARAM, SBI_ERR_NOT_SUPPORTED};

/// Handles an IPI call: `sbi_send_ipi(hart_mask, hart_mask_base)` makes a supervisor
/// software interrupt pending on every selected hart. A selection naming a hart that does
/// not exist fails with `SBI_ERR_INVALID_PARAM` and sends nothing. Each IPI counts as
/// `SBI_PMU_FW_IPI_SENT` on the caller and `SBI_PMU_FW_IPI_RECEIVED` on its target.
pub fn handle(call: &SbiCall, env: &mut dyn SbiEnv) -> SbiOutcome {
    match call.fid {
        0 => match selected_harts(call.args[0], call.args[1], env.hart_count()) {
            Some(harts) => {
                let me = env.current_hart();
                for hart in harts {
                    env.send_ipi(hart);
                    env.firmware_event(me, FwEvent::IpiSent);
                    env.firmware_event(hart, FwEvent::IpiReceived);
                }
                SbiRet::ok(0).into()
            }
            None => SbiRet::err(SBI_ERR_INVALID_PARAM).into(),
        },
        _ => SbiRet::err(SBI_ERR_NOT_SUPPORTED).into(),
    }
}
