//! System reset extension (EID 0x53525354 "SRST", SBI v2.0 chapter 10).
//!
//! `sbi_system_reset(reset_type, reset_reason)` ends the run: the VMM does not reboot
//! guests. Shutdown, cold reboot and warm reboot are accepted; the VMM's exit status is 0
//! for reason "no reason" (0) and 1 for "system failure" (1) and for the SBI-implementation
//! and vendor-specific reasons (0xE0000000 and up). Vendor-specific reset types
//! (0xF0000000 and up) are `SBI_ERR_NOT_SUPPORTED`; reserved types and reasons are
//! `SBI_ERR_INVALID_PARAM`.

use super::{SbiCall, SbiEnv, SbiOutcome, SbiRet};
use super::{SBI_ERR_INVALID_PARAM, SBI_ERR_NOT_SUPPORTED};

/// The reset types of SBI v2.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetType {
    /// 0: shutdown.
    Shutdown,
    /// 1: cold reboot.
    ColdReboot,
    /// 2: warm reboot.
    WarmReboot,
}

impl ResetType {
    /// What to call it in messages.
    pub fn name(self) -> &'static str {
        match self {
            ResetType::Shutdown => "shutdown",
            ResetType::ColdReboot => "cold reboot",
            ResetType::WarmReboot => "warm reboot",
        }
    }
}

/// A valid `system_reset` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResetRequest {
    /// The reset type.
    pub kind: ResetType,
    /// The reset reason (0 no reason, 1 system failure, or an implementation/vendor value).
    pub reason: u32,
}

impl ResetRequest {
    /// The VMM's exit status for this request: 0 for "no reason", else 1.
    pub fn exit_code(&self) -> u32 {
        u32::from(self.reason != 0)
    }

    /// The reason in words.
    pub fn reason_name(&self) -> String {
        match self.reason {
            0 => "no reason".to_string(),
            1 => "system failure".to_string(),
            r => format!("reason {r:#x}"),
        }
    }
}

/// Handles an SRST call.
pub fn handle(call: &SbiCall, _env: &mut dyn SbiEnv) -> SbiOutcome {
    if call.fid != 0 {
        return SbiRet::err(SBI_ERR_NOT_SUPPORTED).into();
    }
    // Both parameters are `uint32_t`.
    let reset_type = call.args[0] as u32;
    let reason = call.args[1] as u32;
    let kind = match reset_type {
        0 => ResetType::Shutdown,
        1 => ResetType::ColdReboot,
        2 => ResetType::WarmReboot,
        0xf000_0000..=0xffff_ffff => return SbiRet::err(SBI_ERR_NOT_SUPPORTED).into(),
        _ => return SbiRet::err(SBI_ERR_INVALID_PARAM).into(),
    };
    if (2..0xe000_0000).contains(&reason) {
        return SbiRet::err(SBI_ERR_INVALID_PARAM).into();
    }
    SbiOutcome::Reset(ResetRequest { kind, reason })
}
