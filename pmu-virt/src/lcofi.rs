//! How a guest's counter-overflow interrupts reach it (Sscofpmf's LCOFI, interrupt 13): the
//! two options of Smcdeleg 6 "Virtualizing Local Counter Overflow Interrupts".
//!
//! Two delivery modes, chosen per VM ([`LcofiDelivery`]):
//! - **Direct**: `hideleg` bit 13 = 1. The LCOFI the hart raises (`mip.LCOFI`, set when a
//!   counter's `mhpmevent.OF` goes from 0 to 1) is a VS-level interrupt: the guest sees it in
//!   `sip` (really `vsip`, an alias of `sip` bit 13 where `hideleg` delegates) and takes it
//!   without the VMM.
//! - **Selective**: `hideleg` bit 13 = 0 and `sie.LCOFIE` = 1 at HS level. The LCOFI is an
//!   HS-level interrupt, always enabled while V=1, so it leaves the guest to the VMM
//!   ([`vcpu_api::VcpuExit::HostInterrupt`]). The VMM decides whom it belongs to (here: to the
//!   guest when an overflowed counter is one of the guest's) and, if it is the guest's,
//!   clears `sip.LCOFI` and sets `hvip` bit 13 with `hvien` bit 13 = 1 (AIA, "Interrupt
//!   filtering and virtual interrupts for VS level": with `hideleg[13]` = 0 and
//!   `hvien[13]` = 1, `vsip[13]` is an alias of `hvip[13]` and `vsie[13]` is a separate
//!   writable bit). The guest acknowledges by clearing `sip.LCOFI`, which in VS-mode clears
//!   `hvip[13]`. This is the mode a hypervisor uses when the host itself also counts with
//!   overflow interrupts, and it is the one that lets the VMM see every guest overflow.
//!
//! Either way the guest takes interrupt 13 in VS-mode, so `vsctrctl.LCOFIFRZ` freezes its
//! CTR history on it.

use serde::{Deserialize, Serialize};
use vcpu_api::Vcpu;

/// `sip`/`hideleg`/`hvien`/`hvip` bit 13.
pub const LCOFIP: u64 = vcpu_api::csr::MIP_LCOFIP;

mod csr {
    pub use vcpu_api::csr::{HIDELEG, HVIEN, HVIP, SIE, SIP};
    /// `mhpmevent3` - 3: add the counter index (3-31).
    pub const MHPMEVENT: u16 = vcpu_api::csr::MHPMEVENT3 - 3;
}

/// Where a guest's LCOFI goes (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LcofiDelivery {
    /// `hideleg.LCOFI` = 1: straight to the guest.
    #[default]
    Direct,
    /// `hideleg.LCOFI` = 0: to the VMM, which passes it on through `hvien`/`hvip`.
    Selective,
}

impl std::str::FromStr for LcofiDelivery {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "direct" => Ok(LcofiDelivery::Direct),
            "selective" => Ok(LcofiDelivery::Selective),
            _ => Err(format!(
                "unknown LCOFI delivery mode {s:?} (expected direct or selective)"
            )),
        }
    }
}

/// What the VMM did with an LCOFI that reached it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LcofiOutcome {
    /// One of the guest's counters overflowed: `hvip.LCOFI` set for the guest.
    Injected,
    /// No counter of the guest has OF set: the interrupt was cleared and dropped.
    Spurious,
}

/// Programs the hart for `delivery` (with Sscofpmf; Smcdeleg 6
/// "Virtualizing Local Counter Overflow Interrupts": `hideleg`, or `hvien`/`hvip` bit 13).
pub(crate) fn prepare(vcpu: &mut dyn Vcpu, delivery: LcofiDelivery) {
    let hideleg = vcpu.host_csr(csr::HIDELEG).unwrap_or(0);
    let hvien = vcpu.host_csr(csr::HVIEN).unwrap_or(0);
    let sie = vcpu.host_csr(csr::SIE).unwrap_or(0);
    match delivery {
        LcofiDelivery::Direct => {
            vcpu.set_known_csr(csr::HIDELEG, hideleg | LCOFIP);
            vcpu.set_known_csr(csr::HVIEN, hvien & !LCOFIP);
            vcpu.set_known_csr(csr::SIE, sie & !LCOFIP);
        }
        LcofiDelivery::Selective => {
            vcpu.set_known_csr(csr::HIDELEG, hideleg & !LCOFIP);
            vcpu.set_known_csr(csr::HVIEN, hvien | LCOFIP);
            vcpu.set_known_csr(csr::SIE, sie | LCOFIP);
        }
    }
}

/// Whether the guest's virtual LCOFI (`hvip[13]`) is pending.
pub(crate) fn virtual_pending(vcpu: &dyn Vcpu) -> bool {
    vcpu.host_csr(csr::HVIP).unwrap_or(0) & LCOFIP != 0
}

/// The HS-level LCOFI of selective delivery (Smcdeleg 6
/// "Virtualizing Local Counter Overflow Interrupts": `hvien`/`hvip` bit 13): whether a
/// counter in `guest_counters` (bit i: hart counter i) has `mhpmevent.OF` set decides
/// whether it is the guest's. Either way `sip.LCOFI` is cleared (Sscofpmf makes it
/// software-writable), so the hart does not exit again for the same overflow.
/// `pdis_overflowed`: the guest's PDIS sample counter overflowed (its PDIS context is on
/// the hart and `mpdisctl.OF` is set), which also raises LCOFI.
pub(crate) fn take(
    vcpu: &mut dyn Vcpu,
    guest_counters: u32,
    pdis_overflowed: bool,
) -> LcofiOutcome {
    let sip = vcpu.host_csr(csr::SIP).unwrap_or(0);
    vcpu.set_known_csr(csr::SIP, sip & !LCOFIP);
    let overflowed = pdis_overflowed
        || (3..32u16)
            .filter(|&i| guest_counters >> i & 1 != 0)
            .any(|i| {
                vcpu.host_csr(csr::MHPMEVENT + i).unwrap_or(0) & vcpu_api::csr::MHPMEVENT_OF != 0
            });
    if !overflowed {
        return LcofiOutcome::Spurious;
    }
    let hvip = vcpu.host_csr(csr::HVIP).unwrap_or(0);
    vcpu.set_known_csr(csr::HVIP, hvip | LCOFIP);
    LcofiOutcome::Injected
}
