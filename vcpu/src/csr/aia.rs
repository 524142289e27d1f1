//! Smaia/Ssaia: `mtopi`, `stopi`, `mvien`, `mvip`, the `iprio` arrays, and
//! `sie`/`sip` with interrupt filtering and virtual interrupts (AIA spec, chapter "Interrupts
//! for Machine and Supervisor Levels", and chapter "CSRs" for `*iselect` and Smstateen).
//!
//! Choices (all allowed by the AIA):
//! - Both `iprio` arrays (select 0x30-0x3F, even numbers only on RV64) are read-only zero, so
//!   interrupts are always taken in the default priority order, and `mtopi`/`stopi` use the
//!   simplified IPRIO: 1 whenever the register is not zero.
//! - `mvien`: bits 1 (SSI), 9 (SEI) and 13 (LCOFI, Smcdeleg 6
//!   "Virtualizing Local Counter Overflow Interrupts") are writable, all others read-only
//!   zero; interrupts 14-63 are not implemented.
//! - `mvip` bit 13 is a separate writable bit; it is `sip.LCOFIP` while `mideleg.LCOFI` = 0
//!   and `mvien.LCOFI` = 1 (then `sie.LCOFIE` is separate too).
//! - `mvip`: bit 1 aliases `mip.SSIP` while `mvien.SSIP` = 0 and is a separate bit while it
//!   is 1 (the separate bit keeps its old value when `mvien.SSIP` is set, one of the values the
//!   spec's UNSPECIFIED allows); bit 5 aliases `mip.STIP` while STIP is writable there
//!   (`menvcfg.STCE` = 0), else reads 0; bit 9 is always the software-writable SEIP bit, which
//!   is ORed into `mip.SEIP` only while `mvien.SEIP` = 0.
//! - The IMSIC is optional (`HartConfig::imsic`) and lives in [`super::imsic`] (AIA chapter
//!   "Incoming MSI Controller (IMSIC)"): `mtopei`/`stopei`/`vstopei`, select values
//!   0x70-0xFF, `mstateen0.IMSIC`/`hstateen0.IMSIC`, `hgeie`/`hgeip`, SGEI and VGEIN. Without
//!   it (the default) none of those exist: select 0x70-0xFF raises illegal-instruction,
//!   `mstateen0.IMSIC` = 0, GEILEN = 0.
//!
//! H level (AIA, "Interrupts for Virtual Machines (VS Level)"); GEILEN and `hstatus.VGEIN`
//! come from the IMSIC (0 without one):
//! - `hvien` and `hvip` bits 13-63: writable for 16-23 and 32-47 ([`HVIEN_WRITABLE`]), the
//!   standard local interrupts whose default priority the AIA plans; these exist only as
//!   virtual interrupts for VS level, and 13 ([`LCOFI`], Smcdeleg chapter 6; also writable
//!   in `hideleg`). Read-only zero: 14 (the
//!   asynchronous memory buffer interrupt, whose extension is not implemented either: bits
//!   15:0 of `hvip` stay VSSIP, VSTIP, VSEIP as without the AIA), 15 (reserved) and the custom
//!   24-31 and 48-63. Bits 0-12 of `hvien` are read-only zero (the spec requires it).
//! - `vsip`/`vsie` bits 13-63: where `hideleg` = 1 (only bit 13 can be) an alias of `sip`/`sie`;
//!   else an alias of `hvip` (`vsip`, writable) or a separate writable bit (`vsie`) where
//!   `hvien` = 1; else read-only zero. A separate `vsie` bit keeps its value when `hvien` changes (one of the
//!   values the spec's UNSPECIFIED allows).
//! - `hvictl`: VTI, IID (6 bits implemented: 0-63), DPR, IPRIOM, IPRIO. VTI = 1 makes VS
//!   accesses to `sip`/`sie`, and VS writes to `stimecmp`, raise virtual-instruction.
//! - `hviprio1`/`hviprio2`: read-only zero (the minimal implementation the AIA allows), so
//!   every candidate from `vsip` has priority number 0.
//! - `vstopi`: the candidate list of the AIA's `vstopi` section, and an interrupt traps to
//!   VS-mode exactly when `vstopi` is not zero, with the cause `vstopi.IID` (see
//!   `trap::pending_interrupt`).

use super::desc::{CsrDesc, CsrFault, S_INTERRUPTS};
use super::stateen::aia_check;
use crate::hart::Hart;
use crate::trap::{default_above_sei, highest_priority, irq};
use vcpu_api::csr as num;

/// Local counter-overflow interrupt (Sscofpmf): writable in `mie`, `mip`, `mideleg`,
/// `mvien`, `mvip`, `hideleg`, `hvien` and `hvip` (Smcdeleg 6
/// "Virtualizing Local Counter Overflow Interrupts"); after STI in the default priority
/// order (`trap::PRIORITY`).
pub const LCOFI: u64 = 13;
const LCOFIP: u64 = 1 << LCOFI;

const SSIP: u64 = 1 << irq::SSI;
const STIP: u64 = 1 << irq::STI;
const SEIP: u64 = 1 << irq::SEI;

/// Writable bits of `mvien`: SSI and SEI (the only ones allowed among 0-12), and LCOFI
/// (Smcdeleg 6 "Virtualizing Local Counter Overflow Interrupts").
pub const MVIEN_WRITABLE: u64 = SSIP | SEIP | LCOFIP;

/// Writable bits of `hvien` (and bits 13-63 of `hvip`): interrupts 16-23 and 32-47, and
/// LCOFI (13; Smcdeleg 6 "Virtualizing Local Counter Overflow Interrupts").
pub const HVIEN_WRITABLE: u64 = LCOFIP | (0xff << 16) | (0xffff << 32);
/// Interrupts 13-63 in `vsip`/`vsie` numbering (they are not shifted).
const VS_HIGH: u64 = !0x1fff;

/// `hvictl.VTI`
pub const HVICTL_VTI: u64 = 1 << 30;
/// `hvictl.IID` (bits 27:16), 6 bits implemented.
pub const HVICTL_IID: u64 = 0x3f << 16;
/// `hvictl.DPR`
pub const HVICTL_DPR: u64 = 1 << 9;
/// `hvictl.IPRIOM`
pub const HVICTL_IPRIOM: u64 = 1 << 8;
/// `hvictl.IPRIO`
pub const HVICTL_IPRIO: u64 = 0xff;
const HVICTL_WRITABLE: u64 = HVICTL_VTI | HVICTL_IID | HVICTL_DPR | HVICTL_IPRIOM | HVICTL_IPRIO;

/// `xtopi` for the highest-priority interrupt in `set` (IID in 27:16, IPRIO in 7:0).
fn topi(set: u64) -> u64 {
    match highest_priority(set) {
        Some(i) => (i << 16) | 1,
        None => 0,
    }
}

impl Hart {
    /// Bits of `mip` software can write now: SSIP always, STIP unless Sstc drives it, SEIP
    /// unless `mvien.SEIP` = 1.
    pub(crate) fn mip_writable(&self) -> u64 {
        let mut m = S_INTERRUPTS;
        if self.stce() {
            m &= !STIP;
        }
        if self.csr.mvien & SEIP != 0 {
            m &= !SEIP;
        }
        m
    }

    fn read_mvip(&self) -> u64 {
        let ssip = if self.csr.mvien & SSIP != 0 {
            self.csr.mvip
        } else {
            self.csr.mip
        } & SSIP;
        let stip = if self.stce() { 0 } else { self.csr.mip & STIP };
        ssip | stip | (self.csr.mip & SEIP) | (self.csr.mvip & LCOFIP)
    }

    fn write_mvip(&mut self, v: u64) {
        if self.csr.mvien & SSIP != 0 {
            self.csr.mvip = (self.csr.mvip & !SSIP) | (v & SSIP);
        } else {
            self.csr.mip = (self.csr.mip & !SSIP) | (v & SSIP);
        }
        let m = if self.stce() { SEIP } else { SEIP | STIP };
        self.csr.mip = (self.csr.mip & !m) | (v & m);
        self.csr.mvip = (self.csr.mvip & !LCOFIP) | (v & LCOFIP);
    }

    /// Interrupts S-level sees through `mvien` rather than `mideleg`.
    #[inline]
    fn virt_s(&self) -> u64 {
        self.csr.mvien & !self.csr.mideleg
    }

    /// `sip` given the current `mip` value: delegated bits alias `mip`, `mvien` bits alias
    /// `mvip`, the rest read 0.
    #[inline]
    fn sip_from(&self, mip: u64) -> u64 {
        let virt_pending = (self.csr.mvip & (SSIP | LCOFIP)) | (self.csr.mip & SEIP);
        (mip & self.csr.mideleg) | (virt_pending & self.virt_s())
    }

    /// `sip`.
    pub(crate) fn sip(&self) -> u64 {
        self.sip_from(self.mip())
    }

    /// SSIP (privileged spec 4.1.3) and LCOFIP (Sscofpmf) are writable through `sip`, in `mip`
    /// or in `mvip`.
    pub(crate) fn write_sip(&mut self, v: u64) {
        for bit in [SSIP, LCOFIP] {
            if self.csr.mideleg & bit != 0 {
                self.csr.mip = (self.csr.mip & !bit) | (v & bit);
            } else if self.virt_s() & bit != 0 {
                self.csr.mvip = (self.csr.mvip & !bit) | (v & bit);
            }
        }
    }

    /// `sie`: delegated bits alias `mie`, `mvien` bits are separate, the rest read 0.
    pub(crate) fn sie(&self) -> u64 {
        (self.csr.mie & self.csr.mideleg) | (self.csr.sie_virt & self.virt_s())
    }

    pub(crate) fn write_sie(&mut self, v: u64) {
        let d = self.csr.mideleg;
        let virt = self.virt_s();
        self.csr.mie = (self.csr.mie & !d) | (v & d);
        self.csr.sie_virt = (self.csr.sie_virt & !virt) | (v & virt);
    }

    /// Interrupts pending and enabled for M-level (what `mtopi` reports), given `mip`.
    #[inline]
    pub(crate) fn m_pending_from(&self, mip: u64) -> u64 {
        // VS-level interrupts are always delegated (mideleg bits read-only 1, H extension).
        // So is SGEI when GEILEN > 0.
        mip & self.csr.mie
            & !(self.csr.mideleg | crate::hypervisor::VS_INTERRUPTS | self.sgei_bit())
    }

    /// Interrupts pending and enabled for S-level (what `stopi` reports), given `mip`.
    #[inline]
    pub(crate) fn s_pending_from(&self, mip: u64) -> u64 {
        self.sip_from(mip) & self.sie()
    }

    /// Interrupts pending and enabled for M-level.
    pub(crate) fn m_pending(&self) -> u64 {
        self.m_pending_from(self.mip())
    }

    /// Interrupts pending and enabled for S-level.
    pub(crate) fn s_pending(&self) -> u64 {
        self.s_pending_from(self.mip())
    }

    /// An interrupt is pending at some privilege level (`mtopi`, `stopi` or `vstopi` is not
    /// zero, or a VS-level interrupt is pending for HS): what makes WFI resume (AIA, "WFI").
    pub(crate) fn interrupt_pending_any_level(&self) -> bool {
        let mip = self.mip();
        let vs = mip & self.csr.mie & (crate::hypervisor::VS_INTERRUPTS | self.sgei_bit());
        self.m_pending_from(mip) | self.s_pending_from(mip) | vs != 0 || self.vstopi() != 0
    }

    /// `vsip` (VS numbering): bits 1, 5, 9 are `hip` bits 2, 6, 10 where `hideleg`
    /// delegates; bits 13-63 alias `sip` where `hideleg` delegates, else `hvip` where
    /// `hvien` = 1.
    pub(crate) fn vsip_from(&self, mip: u64) -> u64 {
        use crate::hypervisor::VS_INTERRUPTS;
        let hideleg = self.csr.h.hideleg;
        ((mip & hideleg & VS_INTERRUPTS) >> 1)
            | (self.sip_from(mip) & hideleg & VS_HIGH)
            | (self.csr.h.hvip & self.csr.hvien & !hideleg & VS_HIGH)
    }

    /// `vsie`: bits 1, 5, 9 alias `hie` where delegated; bits 13-63 are separate where
    /// `hvien` = 1.
    pub(crate) fn vsie(&self) -> u64 {
        use crate::hypervisor::VS_INTERRUPTS;
        let hideleg = self.csr.h.hideleg;
        ((self.csr.mie & hideleg & VS_INTERRUPTS) >> 1)
            | (self.sie() & hideleg & VS_HIGH)
            | (self.csr.vsie_virt & self.csr.hvien & !hideleg)
    }

    pub(crate) fn write_vsie(&mut self, v: u64) {
        use crate::hypervisor::VS_INTERRUPTS;
        let hideleg = self.csr.h.hideleg;
        let m = hideleg & VS_INTERRUPTS;
        self.csr.mie = (self.csr.mie & !m) | ((v << 1) & m);
        let high = hideleg & VS_HIGH;
        if high != 0 {
            self.write_sie((self.sie() & !high) | (v & high));
        }
        let virt = self.csr.hvien & !hideleg;
        self.csr.vsie_virt = (self.csr.vsie_virt & !virt) | (v & virt);
    }

    /// `vsip` writes: SSIP (an alias of `hvip.VSSIP`) when delegated, and the `hvip` bits
    /// 13-63 that `hvien` makes visible.
    pub(crate) fn write_vsip(&mut self, v: u64) {
        let vssip = 1 << irq::VSSI;
        if self.csr.h.hideleg & vssip != 0 {
            self.csr.h.hvip = (self.csr.h.hvip & !vssip) | ((v << 1) & vssip);
        }
        let high = self.csr.h.hideleg & VS_HIGH;
        if high != 0 {
            self.write_sip((self.sip() & !high) | (v & high));
        }
        let virt = self.csr.hvien & !self.csr.h.hideleg;
        self.csr.h.hvip = (self.csr.h.hvip & !virt) | (v & virt);
    }

    /// `vstopi` (AIA, "Virtual supervisor top interrupt CSR"), with `hviprio1/2` read-only
    /// zero. Candidates: a pending-and-enabled SEI (priority `vstopei`'s when VGEIN names a
    /// guest file and `vstopei` != 0, else `hvictl.IPRIO` when VGEIN = 0, IID = 9 and
    /// IPRIO != 0, else 256); with VTI = 0 the highest other
    /// interrupt in `vsip` & `vsie` (priority number 0); with VTI = 1 and IID != 9 the
    /// `hvictl` interrupt (priority IPRIO, default order against SEI from DPR).
    pub(crate) fn vstopi(&self) -> u64 {
        let ctl = self.csr.hvictl;
        let pend = self.vsip_from(self.mip()) & self.vsie();
        if pend == 0 && ctl & HVICTL_VTI == 0 {
            return 0;
        }
        let iid = (ctl & HVICTL_IID) >> 16;
        let iprio = ctl & HVICTL_IPRIO;
        // (IID, priority number, default priority above SEI)
        let vgein = (self.csr.h.hstatus & vcpu_api::csr::HSTATUS_VGEIN) >> 12;
        let vstopei = self.vstopei();
        let sei = (pend & SEIP != 0).then_some((
            irq::SEI,
            if vstopei != 0 {
                // The guest file's top identity is the priority number.
                vstopei & 0x7ff
            } else if vgein == 0 && iid == irq::SEI && iprio != 0 {
                iprio
            } else {
                256
            },
            false,
        ));
        let other = if ctl & HVICTL_VTI == 0 {
            highest_priority(pend & !SEIP).map(|i| (i, 0, default_above_sei(i)))
        } else if iid != irq::SEI {
            Some((iid, iprio, ctl & HVICTL_DPR == 0))
        } else {
            None
        };
        // Nominal order: priority number 0 is above everything (default above SEI) or below
        // everything (default below SEI); ties go by default order against SEI.
        let rank = |(_, p, above): (u64, u64, bool)| match (p, above) {
            (0, true) => 0,
            (0, false) => 257,
            (p, _) => p,
        };
        let (iid, p, above) = match (sei, other) {
            (None, None) => return 0,
            (Some(s), None) => s,
            (None, Some(o)) => o,
            (Some(s), Some(o)) => {
                if rank(o) < rank(s) || (rank(o) == rank(s) && o.2) {
                    o
                } else {
                    s
                }
            }
        };
        let field = if ctl & HVICTL_IPRIOM == 0 {
            1
        } else {
            match p {
                1..=255 => p,
                0 if above => 0,
                _ => 255,
            }
        };
        (iid << 16) | field
    }
}

/// `sip`/`sie` from VS-mode (really `vsip`/`vsie`) raise virtual-instruction while
/// `hvictl.VTI` = 1.
pub(super) fn vti_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.virt && h.csr.hvictl & HVICTL_VTI != 0 {
        Err(CsrFault::Virtual)
    } else {
        Ok(())
    }
}

/// `iprio` array at M-level: even select values only (RV64).
pub(super) fn iprio_check_m(_: &Hart, sel: u64, _: bool) -> Result<(), CsrFault> {
    if sel & 1 != 0 {
        Err(CsrFault::Illegal)
    } else {
        Ok(())
    }
}

/// `iprio` array at S-level: even select values only, and `mstateen0.AIA` from S-mode.
pub(super) fn iprio_check_s(h: &Hart, sel: u64, w: bool) -> Result<(), CsrFault> {
    aia_check(h, w)?;
    iprio_check_m(h, sel, w)
}

/// Every priority number is read-only zero.
pub(super) fn iprio_read(_: &Hart, _: u64) -> u64 {
    0
}

/// Writes are ignored (every byte is read-only zero).
pub(super) fn iprio_write(_: &mut Hart, _: u64, _: u64) {}

/// The AIA CSRs, sorted by number.
pub(super) static TABLE: &[CsrDesc] = &[
    csr!(
        num::MVIEN,
        super::desc::ok,
        |h| h.csr.mvien,
        Some(|h, v| h.csr.mvien = v & MVIEN_WRITABLE)
    ),
    csr!(
        num::MVIP,
        super::desc::ok,
        |h| h.read_mvip(),
        Some(|h, v| h.write_mvip(v))
    ),
    csr!(
        num::HVIEN,
        aia_check,
        |h| h.csr.hvien,
        Some(|h, v| h.csr.hvien = v & HVIEN_WRITABLE)
    ),
    csr!(
        num::HVICTL,
        aia_check,
        |h| h.csr.hvictl,
        Some(|h, v| h.csr.hvictl = v & HVICTL_WRITABLE)
    ),
    csr!(num::HVIPRIO1, aia_check, |_| 0, Some(|_, _| {})),
    csr!(num::HVIPRIO2, aia_check, |_| 0, Some(|_, _| {})),
    // With V = 1 the check (mstateen0.AIA, then hstateen0.AIA) runs and vstopi is read.
    csr!(num::STOPI, aia_check, |h| topi(h.s_pending()), None),
    csr!(num::VSTOPI, aia_check, |h| h.vstopi(), None),
    csr!(num::MTOPI, super::desc::ok, |h| topi(h.m_pending()), None),
];
