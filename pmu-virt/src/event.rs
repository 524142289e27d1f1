//! SBI PMU events: decoding `event_idx` and `event_data` (SBI v2.0 chapter 11, "Event"
//! sections) into what a counter must be programmed with.
//!
//! `event_idx[19:16]` is the type, `event_idx[15:0]` the code:
//! - type 0, hardware general events: codes 1-10 are defined; the hart counts 1-6.
//! - type 1, hardware cache events: code = `cache_id << 3 | op_id << 1 | result_id`, with
//!   `cache_id` 0-6 and `op_id` 0-2 defined; the hart counts the L1D, DTLB and ITLB events of
//!   its catalog.
//! - type 2, hardware raw events: code 0, `event_data[47:0]` is the `mhpmevent` selector.
//! - type 15, firmware events ([`FwEvent`]).
//!
//! The hart's `mhpmevent` selectors are the SBI `event_idx` values for types 0 and 1
//! (`vcpu_api::pmu::events`), so a general or cache event is programmed as its `event_idx`.
//! Non-zero `event_data` where the spec reserves it, codes the spec does not define and
//! other types are `SBI_ERR_INVALID_PARAM`; defined events the hart (or this VMM) does not
//! count are `SBI_ERR_NOT_SUPPORTED`.

use serde::{Deserialize, Serialize};

use crate::fw::FwEvent;
use crate::PmuError;

/// `event_idx.type` of hardware general events.
pub const TYPE_HW_GENERAL: u64 = 0;
/// `event_idx.type` of hardware cache events.
pub const TYPE_HW_CACHE: u64 = 1;
/// `event_idx.type` of hardware raw events.
pub const TYPE_HW_RAW: u64 = 2;
/// `event_idx.type` of firmware events.
pub const TYPE_FIRMWARE: u64 = 15;

/// What a counter counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventTarget {
    /// A hart event: the `mhpmevent` selector (bits 55:0).
    Hardware(u64),
    /// A firmware event, counted by the VMM.
    Firmware(FwEvent),
}

impl EventTarget {
    /// The selector of `cycles` (`SBI_PMU_HW_CPU_CYCLES`), the only event of counter 0.
    pub const CYCLES: EventTarget = EventTarget::Hardware(0x1);
    /// The selector of `instructions` (`SBI_PMU_HW_INSTRUCTIONS`), the only event of
    /// counter 2.
    pub const INSTRUCTIONS: EventTarget = EventTarget::Hardware(0x2);
}

/// Decodes an `event_idx` with its `event_data`.
///
/// ```
/// use pmu_virt::event::{decode, EventTarget};
/// assert_eq!(decode(0x2, 0), Ok(EventTarget::Hardware(0x2)));
/// assert!(decode(0x0, 0).is_err()); // event_idx cannot be 0
/// ```
pub fn decode(event_idx: u64, event_data: u64) -> Result<EventTarget, PmuError> {
    if event_idx >> 20 != 0 {
        return Err(PmuError::InvalidEvent(event_idx));
    }
    let ty = event_idx >> 16;
    let code = event_idx & 0xffff;
    let no_data = || {
        if event_data != 0 {
            Err(PmuError::InvalidEventData {
                event_idx,
                event_data,
            })
        } else {
            Ok(())
        }
    };
    let hart_event = |selector: u64| {
        if vcpu_api::pmu::from_selector(selector).is_some() {
            Ok(EventTarget::Hardware(selector))
        } else {
            Err(PmuError::EventNotSupported(event_idx))
        }
    };
    match ty {
        TYPE_HW_GENERAL => {
            if code == 0 || code > 10 {
                return Err(PmuError::InvalidEvent(event_idx));
            }
            no_data()?;
            hart_event(event_idx)
        }
        TYPE_HW_CACHE => {
            let cache_id = code >> 3;
            let op_id = (code >> 1) & 3;
            if cache_id > 6 || op_id > 2 {
                return Err(PmuError::InvalidEvent(event_idx));
            }
            no_data()?;
            hart_event(event_idx)
        }
        TYPE_HW_RAW => {
            if code != 0 {
                return Err(PmuError::InvalidEvent(event_idx));
            }
            // The SBI implementation owns mhpmevent[63:48].
            if event_data >> 48 != 0 {
                return Err(PmuError::InvalidEventData {
                    event_idx,
                    event_data,
                });
            }
            hart_event(event_data)
        }
        TYPE_FIRMWARE => {
            let code = code as u16;
            match FwEvent::from_code(code) {
                Some(ev) => {
                    no_data()?;
                    Ok(EventTarget::Firmware(ev))
                }
                // Reserved codes.
                None if (22..=255).contains(&code) => Err(PmuError::InvalidEvent(event_idx)),
                // HFENCE events (the guest has no H extension), other implementation-specific
                // codes and SBI_PMU_FW_PLATFORM (0xffff, whose encoding is in event_data).
                None => {
                    if code != 0xffff {
                        no_data()?;
                    }
                    Err(PmuError::EventNotSupported(event_idx))
                }
            }
        }
        _ => Err(PmuError::InvalidEvent(event_idx)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_events() {
        for code in 1..=6 {
            assert_eq!(decode(code, 0), Ok(EventTarget::Hardware(code)));
        }
        for code in 7..=10 {
            assert_eq!(decode(code, 0), Err(PmuError::EventNotSupported(code)));
        }
        assert_eq!(decode(0, 0), Err(PmuError::InvalidEvent(0)));
        assert_eq!(decode(11, 0), Err(PmuError::InvalidEvent(11)));
        assert!(matches!(
            decode(1, 5),
            Err(PmuError::InvalidEventData { .. })
        ));
    }

    #[test]
    fn cache_events() {
        // L1D read access/miss, write access/miss.
        for idx in 0x10000..=0x10003 {
            assert_eq!(decode(idx, 0), Ok(EventTarget::Hardware(idx)));
        }
        // DTLB read miss, ITLB read miss.
        assert_eq!(decode(0x10019, 0), Ok(EventTarget::Hardware(0x10019)));
        assert_eq!(decode(0x10021, 0), Ok(EventTarget::Hardware(0x10021)));
        // L1I read access: defined, not counted.
        assert_eq!(
            decode(0x10008, 0),
            Err(PmuError::EventNotSupported(0x10008))
        );
        // cache_id 7, op_id 3: not defined.
        assert_eq!(decode(0x10038, 0), Err(PmuError::InvalidEvent(0x10038)));
        assert_eq!(decode(0x10006, 0), Err(PmuError::InvalidEvent(0x10006)));
    }

    #[test]
    fn raw_events() {
        assert_eq!(decode(0x20000, 0x100), Ok(EventTarget::Hardware(0x100)));
        assert_eq!(
            decode(0x20000, 0x1ff),
            Err(PmuError::EventNotSupported(0x20000))
        );
        assert_eq!(decode(0x20001, 0x100), Err(PmuError::InvalidEvent(0x20001)));
        assert!(matches!(
            decode(0x20000, 1 << 48 | 0x100),
            Err(PmuError::InvalidEventData { .. })
        ));
    }

    #[test]
    fn firmware_events() {
        assert_eq!(
            decode(0xf0005, 0),
            Ok(EventTarget::Firmware(FwEvent::SetTimer))
        );
        assert_eq!(
            decode(0xf0100, 0),
            Ok(EventTarget::Firmware(FwEvent::SbiCalls))
        );
        assert_eq!(decode(0xf0016, 0), Err(PmuError::InvalidEvent(0xf0016)));
        assert_eq!(
            decode(0xf000e, 0),
            Err(PmuError::EventNotSupported(0xf000e))
        );
        assert_eq!(
            decode(0xfffff, 7),
            Err(PmuError::EventNotSupported(0xfffff))
        );
        assert!(matches!(
            decode(0xf0005, 1),
            Err(PmuError::InvalidEventData { .. })
        ));
        // Undefined types, bits above 19.
        assert_eq!(decode(0x30000, 0), Err(PmuError::InvalidEvent(0x30000)));
        assert_eq!(decode(0x100001, 0), Err(PmuError::InvalidEvent(0x100001)));
    }
}
