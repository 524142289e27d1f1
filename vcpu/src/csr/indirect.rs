//! Smcsrind/Sscsrind: indirect CSR access through `miselect`/`mireg*` and `siselect`/`sireg*`
//! (privileged spec, "Smcsrind/Sscsrind" chapter), and the one table of every register
//! reachable that way, keyed by (window, select value, alias CSR).
//!
//! Rules implemented:
//! - `miselect` and `siselect` are WARL and hold any value 0-0xFFF (the minimum the spec
//!   requires of `siselect`); higher bits, including the custom-use MSB, are not kept.
//! - An access to `mireg*`/`sireg*` while the select value has no register behind that alias
//!   CSR raises illegal-instruction (the spec leaves this UNSPECIFIED and recommends the
//!   exception; the AIA requires it for `*ireg2-6` with the `iprio` array's select values).
//! - `siselect` and `sireg*` from S-mode need `mstateen0.CSRIND` (Smstateen).
//!
//! Registered today: the AIA major-interrupt priority arrays `iprio0-15` (select values
//! 0x30-0x3F through `mireg`/`sireg` only; odd numbers do not exist on RV64), the IMSIC
//! interrupt files (0x70-0xFF through `mireg`, `sireg` and `vsireg`; they raise
//! illegal-instruction on a hart without an IMSIC, see `imsic`) and the CTR
//! entry registers (0x200-0x2FF through `sireg*` and `vsireg*`, see `ctr::csr`), the
//! delegated counters (0x40-0x5F, Smcdeleg) and the PDIS sample record (0x60/0x61, Smpdis;
//! see `pmu::csr`).
//!
//! The H extension's third window, `vsiselect`/`vsireg*` (0x250-0x257), which `siselect`/
//! `sireg*` become with V = 1, holds the CTR entries, the PDIS record and, at 0x40-0x5F,
//! registers that always trap (the hypervisor emulates delegated counters). Its rules (Sscsrind "Virtual
//! Supervisor-level CSRs", AIA "Hypervisor and VS CSRs"):
//! - `vsiselect` holds 0-0xFFF, like `siselect`.
//! - Select values 0x30-0x3F are *inaccessible* at VS level (no VS-level `iprio` array), and
//!   so are 0x70-0xFF unless `hstatus.VGEIN` names a guest interrupt file of the IMSIC
//!   (`vsireg` then reaches that file, see `imsic`; `vsireg2-6` stay inaccessible):
//!   `vsireg*` from M/HS raises illegal-instruction, `sireg*` from VS-mode
//!   virtual-instruction.
//! - Every other value is reserved: illegal-instruction from M, HS and VS alike (the spec's
//!   recommendation for the UNSPECIFIED case).
//! - Smstateen first: `mstateen0.CSRIND` = 0 makes every access below M illegal;
//!   `hstateen0.CSRIND` = 0 makes every VS/VU access virtual-instruction, whatever the
//!   select value. VU-mode accesses are caught earlier by the privilege rule
//!   (virtual-instruction while `mstateen0.CSRIND` = 1).

use super::desc::{CsrDesc, CsrFault};
use super::stateen::csrind_check;
use crate::hart::Hart;
use vcpu_api::csr as num;

/// The select values `miselect`/`siselect` can hold.
pub const ISELECT_MASK: u64 = 0xfff;

/// An indirect window: a select CSR plus its six alias CSRs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// `miselect`, `mireg`-`mireg6`.
    Machine,
    /// `siselect`, `sireg`-`sireg6`.
    Supervisor,
    /// `vsiselect`, `vsireg`-`vsireg6` (also `siselect`/`sireg*` with V = 1).
    VirtualSupervisor,
}

/// A register (or an array of them) reachable through an indirect window.
#[derive(Debug)]
pub struct IregDesc {
    /// The window.
    pub window: Window,
    /// First select value.
    pub first: u64,
    /// Last select value (inclusive).
    pub last: u64,
    /// Alias CSR: 1 for `xireg`, 2-6 for `xireg2`-`xireg6`.
    pub ireg: u8,
    /// Name in the spec.
    pub name: &'static str,
    /// Access predicate, given the select value and whether the access writes.
    pub check: fn(&Hart, u64, bool) -> Result<(), CsrFault>,
    /// Read, given the select value.
    pub read: fn(&Hart, u64) -> u64,
    /// Write (WARL legalization included), given the select value; `None` if read-only
    /// (a write then raises illegal-instruction).
    pub write: Option<fn(&mut Hart, u64, u64)>,
}

/// A CTR entry register (Smctr chapter 3 "Entry Registers"): logical entries 0-255 at
/// select 0x200-0x2FF,
/// the same state through `sireg*` and `vsireg*`.
macro_rules! ctr_entry {
    ($w:expr, $i:expr, $name:expr, $read:ident, $write:ident) => {
        IregDesc {
            window: $w,
            first: 0x200,
            last: 0x2ff,
            ireg: $i,
            name: $name,
            check: crate::ctr::csr::entry_check,
            read: crate::ctr::csr::$read,
            write: Some(crate::ctr::csr::$write),
        }
    };
}

/// Counter delegation (Smcdeleg chapter 3): select 0x40-0x5F through the S window.
macro_rules! deleg {
    ($i:expr, $name:expr, $check:path, $read:path, $write:expr) => {
        IregDesc {
            window: Window::Supervisor,
            first: 0x40,
            last: 0x5f,
            ireg: $i,
            name: $name,
            check: $check,
            read: $read,
            write: $write,
        }
    };
}

/// `vsiselect` 0x40-0x5F: every alias traps (virtual-instruction from VS with CDE = 1).
macro_rules! vs_deleg {
    ($i:expr) => {
        IregDesc {
            window: Window::VirtualSupervisor,
            first: 0x40,
            last: 0x5f,
            ireg: $i,
            name: "delegated counter (VS)",
            check: crate::pmu::csr::vs_deleg_check,
            read: |_, _| 0,
            write: Some(|_, _, _| {}),
        }
    };
}

/// PDIS sample record (Smpdis, draft): select 0x60/0x61 through the S and VS windows.
macro_rules! pdis_record {
    ($w:expr, $i:expr, $field:expr, $name:expr) => {
        IregDesc {
            window: $w,
            first: 0x60,
            last: 0x61,
            ireg: $i,
            name: $name,
            check: crate::pmu::csr::record_check,
            read: |h, sel| crate::pmu::csr::record_read(h, sel, $field),
            write: Some(|h, sel, v| crate::pmu::csr::record_write(h, sel, $field, v)),
        }
    };
}

/// An IMSIC interrupt file (AIA "Indirectly accessed interrupt-file registers"): select
/// 0x70-0xFF through `*ireg` only (`*ireg2-6` there have no register).
macro_rules! imsic_file {
    ($w:expr, $name:expr, $check:ident, $read:ident, $write:ident) => {
        IregDesc {
            window: $w,
            first: 0x70,
            last: 0xff,
            ireg: 1,
            name: $name,
            check: super::imsic::$check,
            read: super::imsic::$read,
            write: Some(super::imsic::$write),
        }
    };
}

/// Every indirectly accessed register.
pub static IREGS: &[IregDesc] = &[
    deleg!(
        1,
        "delegated counter",
        crate::pmu::csr::deleg_check,
        crate::pmu::csr::deleg_counter_read,
        Some(crate::pmu::csr::deleg_counter_write)
    ),
    deleg!(
        2,
        "delegated event selector",
        crate::pmu::csr::deleg_check,
        crate::pmu::csr::deleg_event_read,
        Some(crate::pmu::csr::deleg_event_write)
    ),
    deleg!(3, "sireg3 (0x40-0x5F)", crate::pmu::csr::never, zero, None),
    deleg!(4, "sireg4 (0x40-0x5F)", crate::pmu::csr::never, zero, None),
    deleg!(5, "sireg5 (0x40-0x5F)", crate::pmu::csr::never, zero, None),
    deleg!(6, "sireg6 (0x40-0x5F)", crate::pmu::csr::never, zero, None),
    vs_deleg!(1),
    vs_deleg!(2),
    vs_deleg!(3),
    vs_deleg!(4),
    vs_deleg!(5),
    vs_deleg!(6),
    pdis_record!(Window::Supervisor, 1, 0, "pdishdrev"),
    pdis_record!(Window::Supervisor, 2, 1, "pdispc"),
    pdis_record!(Window::Supervisor, 3, 2, "pdistime"),
    pdis_record!(Window::Supervisor, 4, 3, "pdislat"),
    pdis_record!(Window::Supervisor, 5, 4, "pdisadr1"),
    pdis_record!(Window::Supervisor, 6, 5, "pdisadr2"),
    pdis_record!(Window::VirtualSupervisor, 1, 0, "pdishdrev"),
    pdis_record!(Window::VirtualSupervisor, 2, 1, "pdispc"),
    pdis_record!(Window::VirtualSupervisor, 3, 2, "pdistime"),
    pdis_record!(Window::VirtualSupervisor, 4, 3, "pdislat"),
    pdis_record!(Window::VirtualSupervisor, 5, 4, "pdisadr1"),
    pdis_record!(Window::VirtualSupervisor, 6, 5, "pdisadr2"),
    IregDesc {
        window: Window::Machine,
        first: 0x30,
        last: 0x3f,
        ireg: 1,
        name: "iprio",
        check: super::aia::iprio_check_m,
        read: super::aia::iprio_read,
        write: Some(super::aia::iprio_write),
    },
    IregDesc {
        window: Window::Supervisor,
        first: 0x30,
        last: 0x3f,
        ireg: 1,
        name: "iprio",
        check: super::aia::iprio_check_s,
        read: super::aia::iprio_read,
        write: Some(super::aia::iprio_write),
    },
    imsic_file!(
        Window::Machine,
        "IMSIC machine-level file",
        check_m,
        read_m,
        write_m
    ),
    imsic_file!(
        Window::Supervisor,
        "IMSIC supervisor-level file",
        check_s,
        read_s,
        write_s
    ),
    imsic_file!(
        Window::VirtualSupervisor,
        "IMSIC guest file VGEIN",
        check_vs,
        read_vs,
        write_vs
    ),
    ctr_entry!(
        Window::Supervisor,
        1,
        "ctrsource",
        source_read,
        source_write
    ),
    ctr_entry!(
        Window::Supervisor,
        2,
        "ctrtarget",
        target_read,
        target_write
    ),
    ctr_entry!(Window::Supervisor, 3, "ctrdata", data_read, data_write),
    ctr_entry!(
        Window::Supervisor,
        4,
        "ctr sireg4 (read-only 0)",
        zero_read,
        ignore_write
    ),
    ctr_entry!(
        Window::Supervisor,
        5,
        "ctr sireg5 (read-only 0)",
        zero_read,
        ignore_write
    ),
    ctr_entry!(
        Window::Supervisor,
        6,
        "ctr sireg6 (read-only 0)",
        zero_read,
        ignore_write
    ),
    ctr_entry!(
        Window::VirtualSupervisor,
        1,
        "ctrsource",
        source_read,
        source_write
    ),
    ctr_entry!(
        Window::VirtualSupervisor,
        2,
        "ctrtarget",
        target_read,
        target_write
    ),
    ctr_entry!(
        Window::VirtualSupervisor,
        3,
        "ctrdata",
        data_read,
        data_write
    ),
    ctr_entry!(
        Window::VirtualSupervisor,
        4,
        "ctr sireg4 (read-only 0)",
        zero_read,
        ignore_write
    ),
    ctr_entry!(
        Window::VirtualSupervisor,
        5,
        "ctr sireg5 (read-only 0)",
        zero_read,
        ignore_write
    ),
    ctr_entry!(
        Window::VirtualSupervisor,
        6,
        "ctr sireg6 (read-only 0)",
        zero_read,
        ignore_write
    ),
];

fn zero(_: &Hart, _: u64) -> u64 {
    0
}

/// The register behind alias CSR `ireg` of `window` at `select`, if any.
pub fn lookup_ireg(window: Window, select: u64, ireg: u8) -> Option<&'static IregDesc> {
    IREGS
        .iter()
        .find(|d| d.window == window && d.ireg == ireg && (d.first..=d.last).contains(&select))
}

/// Select values that are *inaccessible* at VS level (AIA) when no register answers: the
/// `iprio` range and the IMSIC range (`vsireg2-6`, or `vsireg` without a guest file).
pub fn vs_inaccessible(select: u64) -> bool {
    matches!(select, 0x30..=0x3f | 0x70..=0xff)
}

impl Hart {
    fn iselect(&self, w: Window) -> u64 {
        match w {
            Window::Machine => self.csr.miselect,
            Window::Supervisor => self.csr.siselect,
            Window::VirtualSupervisor => self.csr.vsiselect,
        }
    }
}

fn window_check(h: &Hart, w: Window, write: bool) -> Result<(), CsrFault> {
    if w != Window::Machine {
        // With V = 1 this also applies hstateen0.CSRIND.
        csrind_check(h, write)?;
    }
    Ok(())
}

fn ireg_check(h: &Hart, w: Window, ireg: u8, write: bool) -> Result<(), CsrFault> {
    window_check(h, w, write)?;
    // With V = 1, sireg* is vsireg*.
    let w = if h.virt && w == Window::Supervisor {
        Window::VirtualSupervisor
    } else {
        w
    };
    let sel = h.iselect(w);
    let Some(d) = lookup_ireg(w, sel, ireg) else {
        return Err(
            if w == Window::VirtualSupervisor && h.virt && vs_inaccessible(sel) {
                CsrFault::Virtual
            } else {
                CsrFault::Illegal
            },
        );
    };
    (d.check)(h, sel, write)?;
    if write && d.write.is_none() {
        return Err(CsrFault::Illegal);
    }
    Ok(())
}

fn ireg_read(h: &Hart, w: Window, ireg: u8) -> u64 {
    let sel = h.iselect(w);
    lookup_ireg(w, sel, ireg).map_or(0, |d| (d.read)(h, sel))
}

fn ireg_write(h: &mut Hart, w: Window, ireg: u8, v: u64) {
    let sel = h.iselect(w);
    if let Some(f) = lookup_ireg(w, sel, ireg).and_then(|d| d.write) {
        f(h, sel, v);
    }
}

macro_rules! ireg {
    ($w:expr, $i:expr, $num:expr) => {
        csr!(
            $num,
            |h, wr| ireg_check(h, $w, $i, wr),
            |h| ireg_read(h, $w, $i),
            Some(|h, v| ireg_write(h, $w, $i, v))
        )
    };
}

const M: Window = Window::Machine;
const S: Window = Window::Supervisor;
const VS: Window = Window::VirtualSupervisor;

/// The window CSRs, sorted by number.
pub(super) static TABLE: &[CsrDesc] = &[
    csr!(
        num::SISELECT,
        |h, w| window_check(h, S, w),
        |h| h.csr.siselect,
        Some(|h, v| h.csr.siselect = v & ISELECT_MASK)
    ),
    ireg!(S, 1, num::SIREG),
    ireg!(S, 2, num::SIREG2),
    ireg!(S, 3, num::SIREG3),
    ireg!(S, 4, num::SIREG4),
    ireg!(S, 5, num::SIREG5),
    ireg!(S, 6, num::SIREG6),
    csr!(
        num::VSISELECT,
        |h, w| window_check(h, VS, w),
        |h| h.csr.vsiselect,
        Some(|h, v| h.csr.vsiselect = v & ISELECT_MASK)
    ),
    ireg!(VS, 1, num::VSIREG),
    ireg!(VS, 2, num::VSIREG2),
    ireg!(VS, 3, num::VSIREG3),
    ireg!(VS, 4, num::VSIREG4),
    ireg!(VS, 5, num::VSIREG5),
    ireg!(VS, 6, num::VSIREG6),
    csr!(
        num::MISELECT,
        super::desc::ok,
        |h| h.csr.miselect,
        Some(|h, v| h.csr.miselect = v & ISELECT_MASK)
    ),
    ireg!(M, 1, num::MIREG),
    ireg!(M, 2, num::MIREG2),
    ireg!(M, 3, num::MIREG3),
    ireg!(M, 4, num::MIREG4),
    ireg!(M, 5, num::MIREG5),
    ireg!(M, 6, num::MIREG6),
];
