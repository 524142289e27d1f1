//! System reset extension (EID 0x53525354 "SRST", SBI v2.0 chapter 10).
//!
//! `sbi_system_reset(reset_type, reset_reason)` ends the run: the VMM does not reboot
//! guests. Shutdown, cold reboot and warm reboot are accepted; the VMM's exit status
//! ([`ResetRequest::exit_code`]) is
//!
//! | request | status |
//! | --- | --- |
//! | shutdown, reason "no reason" (0) | 0 |
//! | shutdown, reason "system failure" (1) or an SBI-implementation or vendor-specific reason (0xE0000000 and up) | 1 |
//! | cold or warm reboot, any reason | [`EXIT_REBOOT`] (3) |
//!
//! A reboot is treated as a failure because the VMM cannot carry it out and because that is
//! how a guest in trouble ends: Linux with `panic=-1` (or `reboot=` after an oops) reboots
//! after a panic with a cold reboot and reason 0, which must not look like a clean
//! power-off. [`ResetRequest::failure_message`] says so in words ("guest requested a reboot
//! (reason N): ... treated as failure").
//!
//! Vendor-specific reset types (0xF0000000 and up) are `SBI_ERR_NOT_SUPPORTED`; reserved
//! types and reasons are `SBI_ERR_INVALID_PARAM`.

use super::{SbiCall, SbiEnv, SbiOutcome, SbiRet};
use super::{SBI_ERR_INVALID_PARAM, SBI_ERR_NOT_SUPPORTED};

/// The VMM's exit status when the guest asks for a cold or warm reboot.
pub const EXIT_REBOOT: u32 = 3;

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
    /// The VMM's exit status for this request: [`EXIT_REBOOT`] for a reboot; for a
    /// shutdown 0 with "no reason", else 1.
    pub fn exit_code(&self) -> u32 {
        match self.kind {
            ResetType::ColdReboot | ResetType::WarmReboot => EXIT_REBOOT,
            ResetType::Shutdown => u32::from(self.reason != 0),
        }
    }

    /// Whether the run ended well: a shutdown with "no reason".
    pub fn is_clean_shutdown(&self) -> bool {
        self.exit_code() == 0
    }

    /// Why the request ends the run with a non-zero status, in words; `None` for a clean
    /// shutdown.
    pub fn failure_message(&self) -> Option<String> {
        match self.kind {
            ResetType::Shutdown if self.reason == 0 => None,
            ResetType::Shutdown => Some(format!(
                "guest shut down with reason {} ({}): treated as failure (exit status {})",
                self.reason,
                self.reason_name(),
                self.exit_code()
            )),
            ResetType::ColdReboot | ResetType::WarmReboot => Some(format!(
                "guest requested a reboot (reason {}): {} with {}; the VMM does not reboot \
                 guests (a Linux guest booted with panic=-1 reboots after a panic), so it is \
                 treated as failure (exit status {})",
                self.reason,
                self.kind.name(),
                self.reason_name(),
                self.exit_code()
            )),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn req(kind: ResetType, reason: u32) -> ResetRequest {
        ResetRequest { kind, reason }
    }

    #[test]
    fn exit_codes() {
        assert_eq!(req(ResetType::Shutdown, 0).exit_code(), 0);
        assert_eq!(req(ResetType::Shutdown, 1).exit_code(), 1);
        assert_eq!(req(ResetType::Shutdown, 0xe000_0000).exit_code(), 1);
        for kind in [ResetType::ColdReboot, ResetType::WarmReboot] {
            for reason in [0, 1, 0xe000_0000, 0xf000_0001] {
                assert_eq!(
                    req(kind, reason).exit_code(),
                    EXIT_REBOOT,
                    "{kind:?} {reason}"
                );
                assert!(!req(kind, reason).is_clean_shutdown());
            }
        }
        assert!(req(ResetType::Shutdown, 0).is_clean_shutdown());
        assert!(!req(ResetType::Shutdown, 1).is_clean_shutdown());
    }

    #[test]
    fn failure_messages() {
        assert_eq!(req(ResetType::Shutdown, 0).failure_message(), None);
        let m = req(ResetType::Shutdown, 1).failure_message().unwrap();
        assert!(m.contains("reason 1 (system failure)"), "{m}");
        assert!(m.contains("treated as failure (exit status 1)"), "{m}");
        let m = req(ResetType::ColdReboot, 0).failure_message().unwrap();
        assert!(
            m.starts_with("guest requested a reboot (reason 0): cold reboot with no reason"),
            "{m}"
        );
        assert!(m.ends_with("treated as failure (exit status 3)"), "{m}");
        let m = req(ResetType::WarmReboot, 1).failure_message().unwrap();
        assert!(
            m.starts_with("guest requested a reboot (reason 1): warm reboot with system failure"),
            "{m}"
        );
    }
}
