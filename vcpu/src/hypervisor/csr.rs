//! The H extension's CSRs (privileged spec, "Hypervisor and Virtual Supervisor CSRs" and
//! "Machine-Level CSRs"). `hie`/`hip` and `vsie`/`vsip` are views of `mie`/`mip`
//! (`vsie`/`vsip` shifted down by one, only where `hideleg` delegates; bits 13-63 follow
//! `hvien`, see `aia.rs`); `hgeie`/`hgeip` are read-only 0 (GEILEN = 0). The H-level CSRs of
//! Smstateen, Sscsrind, Sstc and Ssaia live in those extensions' files.
//!
//! Accesses from VS-mode and VU-mode are checked in [`Hart::csr_access`], which also
//! substitutes the VS CSRs for the supervisor CSRs when V=1 (see [`vs_counterpart`]).

use super::*;
use crate::csr::desc::{tvec_legalize, CsrDesc, CsrFault, MSTATUS_UXL_64, SSTATUS_MASK};
use crate::hart::{Hart, PrivilegeMode};
use crate::trap::irq;
use vcpu_api::csr as num;
use vcpu_api::csr::{MSTATUS_FS, MSTATUS_SD, MSTATUS_TVM};

fn ok(_: &Hart, _: bool) -> Result<(), CsrFault> {
    Ok(())
}

/// `hgatp` from HS-mode traps when `mstatus.TVM` = 1.
fn hgatp_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.prv == PrivilegeMode::Supervisor && !h.virt && h.csr.mstatus & MSTATUS_TVM != 0 {
        Err(CsrFault::Illegal)
    } else {
        Ok(())
    }
}

/// `hgatp.MODE` is WARL: an unsupported mode keeps the current one.
fn write_hgatp(h: &mut Hart, v: u64) {
    let mode = match v >> 60 {
        m @ (HGATP_MODE_BARE | HGATP_MODE_SV39X4 | HGATP_MODE_SV48X4 | HGATP_MODE_SV57X4) => m,
        _ => h.csr.h.hgatp >> 60,
    };
    h.csr.h.hgatp = (mode << 60) | (v & (HGATP_VMID | HGATP_PPN));
    h.flush_tlb();
}

/// `vsatp` is WARL like `satp`: a write with an unsupported MODE has no effect (which the
/// spec requires when V=1 and allows when V=0).
fn write_vsatp(h: &mut Hart, v: u64) {
    if matches!(v >> 60, 0 | 8 | 9 | 10) {
        h.csr.h.vsatp = if v >> 60 == 0 { 0 } else { v };
        h.flush_tlb();
    }
}

fn read_vsstatus(h: &Hart) -> u64 {
    let s = h.csr.h.vsstatus | MSTATUS_UXL_64;
    if s & MSTATUS_FS == MSTATUS_FS {
        s | MSTATUS_SD
    } else {
        s
    }
}

const VSSIP: u64 = 1 << irq::VSSI;

/// Hypervisor CSRs and VS CSRs, sorted by number.
pub(crate) static TABLE: &[CsrDesc] = &[
    csr!(
        num::VSSTATUS,
        ok,
        read_vsstatus,
        Some(|h, v| {
            h.csr.h.vsstatus = v & SSTATUS_MASK;
            h.update_translation_context();
        })
    ),
    csr!(num::VSIE, ok, |h| h.vsie(), Some(|h, v| h.write_vsie(v))),
    csr!(
        num::VSTVEC,
        ok,
        |h| h.csr.h.vstvec,
        Some(|h, v| h.csr.h.vstvec = tvec_legalize(v))
    ),
    csr!(
        num::VSSCRATCH,
        ok,
        |h| h.csr.h.vsscratch,
        Some(|h, v| h.csr.h.vsscratch = v)
    ),
    csr!(
        num::VSEPC,
        ok,
        |h| h.csr.h.vsepc,
        Some(|h, v| h.csr.h.vsepc = v & !1)
    ),
    csr!(
        num::VSCAUSE,
        ok,
        |h| h.csr.h.vscause,
        Some(|h, v| h.csr.h.vscause = v)
    ),
    csr!(
        num::VSTVAL,
        ok,
        |h| h.csr.h.vstval,
        Some(|h, v| h.csr.h.vstval = v)
    ),
    csr!(
        num::VSIP,
        ok,
        |h| h.vsip_from(h.mip()),
        Some(|h, v| h.write_vsip(v))
    ),
    csr!(num::VSATP, ok, |h| h.csr.h.vsatp, Some(write_vsatp)),
    csr!(
        num::MTINST,
        ok,
        |h| h.csr.h.mtinst,
        Some(|h, v| h.csr.h.mtinst = v)
    ),
    csr!(
        num::MTVAL2,
        ok,
        |h| h.csr.h.mtval2,
        Some(|h, v| h.csr.h.mtval2 = v)
    ),
    csr!(
        num::HSTATUS,
        ok,
        |h| h.csr.h.hstatus | HSTATUS_VSXL_64,
        Some(|h, v| h.csr.h.hstatus = v & (HSTATUS_WRITABLE | h.hstatus_vgein_writable()))
    ),
    csr!(
        num::HEDELEG,
        ok,
        |h| h.csr.h.hedeleg,
        Some(|h, v| h.csr.h.hedeleg = v & HEDELEG_WRITABLE)
    ),
    csr!(
        num::HIDELEG,
        ok,
        |h| h.csr.h.hideleg,
        // LCOFI is delegable (optional in Smcdeleg 6 "Virtualizing Local Counter Overflow
        // Interrupts").
        Some(|h, v| h.csr.h.hideleg = v & (VS_INTERRUPTS | (1 << crate::trap::irq::LCOFI)))
    ),
    csr!(
        num::HIE,
        ok,
        |h| h.csr.mie & (VS_INTERRUPTS | h.sgei_bit()),
        Some(|h, v| {
            let m = VS_INTERRUPTS | h.sgei_bit();
            h.csr.mie = (h.csr.mie & !m) | (v & m)
        })
    ),
    csr!(
        num::HTIMEDELTA,
        ok,
        |h| h.csr.h.htimedelta,
        Some(|h, v| h.csr.h.htimedelta = v)
    ),
    csr!(
        num::HCOUNTEREN,
        ok,
        |h| h.csr.h.hcounteren,
        Some(|h, v| h.csr.h.hcounteren = v & 0xffff_ffff)
    ),
    csr!(
        num::HGEIE,
        ok,
        crate::csr::imsic::read_hgeie,
        Some(crate::csr::imsic::write_hgeie)
    ),
    csr!(
        num::HENVCFG,
        crate::csr::stateen::henvcfg_check,
        |h| h.csr.h.henvcfg & h.henvcfg_writable(),
        Some(|h, v| h.csr.h.henvcfg = v & h.henvcfg_writable())
    ),
    csr!(
        num::HTVAL,
        ok,
        |h| h.csr.h.htval,
        Some(|h, v| h.csr.h.htval = v)
    ),
    csr!(
        num::HIP,
        ok,
        |h| h.mip() & (VS_INTERRUPTS | h.sgei_bit()),
        Some(|h, v| h.csr.h.hvip = (h.csr.h.hvip & !VSSIP) | (v & VSSIP))
    ),
    csr!(
        num::HVIP,
        ok,
        |h| h.csr.h.hvip,
        // Bits 13-63: those hvien can enable (AIA).
        Some(|h, v| h.csr.h.hvip = v & (VS_INTERRUPTS | crate::csr::aia::HVIEN_WRITABLE))
    ),
    csr!(
        num::HTINST,
        ok,
        |h| h.csr.h.htinst,
        Some(|h, v| h.csr.h.htinst = v)
    ),
    csr!(
        num::HGATP,
        hgatp_check,
        |h| h.csr.h.hgatp,
        Some(write_hgatp)
    ),
    csr!(num::HGEIP, ok, |h| h.hgeip(), None),
];

/// The VS CSR that replaces supervisor CSR `num` when V=1, if there is one. The supervisor
/// CSR's own access check runs first (with V=1 it applies the VS-mode rules: `hstateen`,
/// `henvcfg.STCE`, `hcounteren.TM`, `hvictl.VTI`, `vsiselect`).
pub(crate) fn vs_counterpart(num: u16) -> Option<u16> {
    match num {
        // sstatus, sie, stvec, sscratch, sepc, scause, stval, sip, stimecmp, siselect,
        // sireg*, satp
        0x100 | 0x104 | 0x105 | 0x140 | 0x141 | 0x142 | 0x143 | 0x144 | 0x14d | 0x150 | 0x151
        | 0x152 | 0x153 | 0x155 | 0x156 | 0x157 | 0x180 => Some(num + 0x100),
        // stopi
        0xdb0 => Some(0xeb0),
        // stopei
        0x15c => Some(0x25c),
        // sctrctl (Smctr 2.3 "Virtual Supervisor Control Transfer Records Control Register
        // (vsctrctl)")
        0x14e => Some(0x24e),
        // spdisctl (Smpdis, provisional numbers)
        0x5c2 => Some(0x6c0),
        _ => None,
    }
}
