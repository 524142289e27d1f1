//! Smaia/Ssaia without an IMSIC: `mtopi`, `stopi`, `mvien`, `mvip`, the `iprio` arrays, and
//! `sie`/`sip` with interrupt filtering and virtual interrupts (AIA spec, chapter "Interrupts
//! for Machine and Supervisor Levels", and chapter "CSRs" for `*iselect` and Smstateen).
//!
//! Choices (all allowed by the AIA):
//! - Both `iprio` arrays (select 0x30-0x3F, even numbers only on RV64) are read-only zero, so
//!   interrupts are always taken in the default priority order, and `mtopi`/`stopi` use the
//!   simplified IPRIO: 1 whenever the register is not zero.
//! - `mvien`: bits 1 (SSI) and 9 (SEI) are writable, all others read-only zero; interrupt 13
//!   ([`LCOFI`]) and 14-63 are not implemented.
//! - `mvip`: bit 1 aliases `mip.SSIP` while `mvien.SSIP` = 0 and is a separate bit while it
//!   is 1 (the separate bit keeps its old value when `mvien.SSIP` is set, one of the values the
//!   spec's UNSPECIFIED allows); bit 5 aliases `mip.STIP` while STIP is writable there
//!   (`menvcfg.STCE` = 0), else reads 0; bit 9 is always the software-writable SEIP bit, which
//!   is ORed into `mip.SEIP` only while `mvien.SEIP` = 0.
//! - No IMSIC: no `mtopei`/`stopei`, no select values 0x70-0xFF, `mstateen0.IMSIC` = 0.
//!
//! H-level parts (`hvien`, `hvictl`, `hvip`, `hviprio1/2`, `vstopi`) come with the H
//! extension: the VS level will add a third pending set next to [`Hart::m_pending`] and
//! [`Hart::s_pending`].

use super::stateen::aia_check;
use super::{CsrDesc, CsrFault, S_INTERRUPTS};
use crate::hart::Hart;
use crate::trap::{highest_priority, irq};

/// Local counter-overflow interrupt (Sscofpmf). Not implemented yet: when it arrives, bit 13
/// becomes writable in `mie`, `mip`, `mideleg`, `mvien` and `mvip`, and it takes its place
/// after STI in the default priority order (`trap::PRIORITY`).
pub const LCOFI: u64 = 13;

const SSIP: u64 = 1 << irq::SSI;
const STIP: u64 = 1 << irq::STI;
const SEIP: u64 = 1 << irq::SEI;

/// Writable bits of `mvien`: SSI and SEI (the only ones allowed among 0-12).
pub const MVIEN_WRITABLE: u64 = SSIP | SEIP;

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
        ssip | stip | (self.csr.mip & SEIP)
    }

    fn write_mvip(&mut self, v: u64) {
        if self.csr.mvien & SSIP != 0 {
            self.csr.mvip = (self.csr.mvip & !SSIP) | (v & SSIP);
        } else {
            self.csr.mip = (self.csr.mip & !SSIP) | (v & SSIP);
        }
        let m = if self.stce() { SEIP } else { SEIP | STIP };
        self.csr.mip = (self.csr.mip & !m) | (v & m);
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
        let virt_pending = (self.csr.mvip & SSIP) | (self.csr.mip & SEIP);
        (mip & self.csr.mideleg) | (virt_pending & self.virt_s())
    }

    /// `sip`.
    pub(crate) fn sip(&self) -> u64 {
        self.sip_from(self.mip())
    }

    /// Only SSIP is writable through `sip` (privileged spec 4.1.3), in `mip` or in `mvip`.
    pub(crate) fn write_sip(&mut self, v: u64) {
        if self.csr.mideleg & SSIP != 0 {
            self.csr.mip = (self.csr.mip & !SSIP) | (v & SSIP);
        } else if self.virt_s() & SSIP != 0 {
            self.csr.mvip = (self.csr.mvip & !SSIP) | (v & SSIP);
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
        mip & self.csr.mie & !(self.csr.mideleg | crate::hypervisor::VS_INTERRUPTS)
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

    /// An interrupt is pending at some privilege level (`mtopi` or `stopi` is not zero):
    /// what makes WFI resume (AIA, "WFI").
    pub(crate) fn interrupt_pending_any_level(&self) -> bool {
        let mip = self.mip();
        let vs = mip & self.csr.mie & crate::hypervisor::VS_INTERRUPTS;
        self.m_pending_from(mip) | self.s_pending_from(mip) | vs != 0
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
        0x308,
        "mvien",
        super::ok,
        |h| h.csr.mvien,
        Some(|h, v| h.csr.mvien = v & MVIEN_WRITABLE)
    ),
    csr!(
        0x309,
        "mvip",
        super::ok,
        |h| h.read_mvip(),
        Some(|h, v| h.write_mvip(v))
    ),
    csr!(0xdb0, "stopi", aia_check, |h| topi(h.s_pending()), None),
    csr!(0xfb0, "mtopi", super::ok, |h| topi(h.m_pending()), None),
];
