//! Smctr/Ssctr CSRs (chapter 2 "CSRs": 2.1 `mctrctl`, 2.2 `sctrctl`, 2.3 `vsctrctl`, 2.4
//! `sctrdepth`, 2.5 `sctrstatus`, 2.6 CSR Listing), the entry registers behind
//! `sireg*`/`vsireg*` at select values 0x200-0x2FF (chapter 3 "Entry Registers": 3.1
//! `ctrsource`, 3.2 `ctrtarget`, 3.3 `ctrdata`), and chapter 5 "State Enable Access Control".
//!
//! Access rules:
//! - Below M-mode, `mstateen0.CTR` = 0 makes `sctrctl`, `vsctrctl`, `sctrdepth`, `sctrstatus`
//!   and the entry registers illegal; with V = 1, `hstateen0.CTR` = 0 makes them
//!   virtual-instruction (except `sctrdepth`, which is virtual-instruction from VS/VU
//!   whatever `hstateen0.CTR` says).
//! - With V = 1, `sctrctl` is `vsctrctl`; `sctrstatus` and the entries have no VS copy.
//! - A hart without Smctr has none of these CSRs (illegal-instruction).
//! - Entry registers of logical entries at or beyond the depth read 0 and ignore writes;
//!   `sireg4`-`sireg6` read 0 and ignore writes (read-only zero).

use crate::csr::desc::{CsrDesc, CsrFault};
use crate::csr::stateen::{gate, STATEEN0_CTR};
use crate::ctr::{CTRCTL_M_ONLY, SCTRSTATUS_FROZEN};
use crate::hart::{Hart, PrivilegeMode};
use vcpu_api::csr as num;

/// `sctrctl`, `sctrstatus` and the entry registers: Smctr present and the stateen gates.
fn ctr_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if !h.ctr.implemented() {
        return Err(CsrFault::Illegal);
    }
    gate(h, 0, STATEEN0_CTR)
}

/// `mctrctl`: M-mode only (the number's privilege), Smctr present.
fn mctrctl_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.ctr.implemented() {
        Ok(())
    } else {
        Err(CsrFault::Illegal)
    }
}

/// `sctrdepth`: virtual-instruction from VS/VU unless `mstateen0.CTR` = 0 (section 2.4 and
/// chapter 5).
fn sctrdepth_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if !h.ctr.implemented() {
        return Err(CsrFault::Illegal);
    }
    if h.prv != PrivilegeMode::Machine && h.csr.mstateen[0] & STATEEN0_CTR == 0 {
        return Err(CsrFault::Illegal);
    }
    if h.virt {
        return Err(CsrFault::Virtual);
    }
    Ok(())
}

/// Whether HS-mode could access CTR state (for the virtual/illegal decision of VS/VU).
pub(crate) fn hs_could_access(h: &Hart) -> bool {
    h.ctr.implemented() && h.csr.mstateen[0] & STATEEN0_CTR != 0
}

impl Hart {
    fn mctrctl_mask(&self) -> u64 {
        self.ctr.config.as_ref().map_or(0, |c| c.mctrctl_mask())
    }

    /// Writes to any xctrctl reset the cycle counter (section 6.3).
    fn write_ctrctl(&mut self, virtual_supervisor: bool, keep: u64, v: u64) {
        let mask = self.mctrctl_mask() & !keep;
        let now = self.vclock;
        let r = if virtual_supervisor {
            &mut self.ctr.vsctrctl
        } else {
            &mut self.ctr.mctrctl
        };
        *r = (*r & !mask) | (v & mask);
        self.ctr.reset_cycle_counter(now);
        self.ctr_refresh();
    }

    fn write_sctrstatus(&mut self, v: u64) {
        self.ctr.set_wrptr(v);
        self.ctr.frozen = v & SCTRSTATUS_FROZEN != 0;
        self.ctr_refresh();
    }

    fn write_sctrdepth(&mut self, v: u64) {
        let d = (v & 7) as u8;
        let supported = self
            .ctr
            .config
            .as_ref()
            .is_some_and(|c| d < 5 && c.depths & (1 << d) != 0);
        if supported {
            self.ctr.set_depth(d);
        }
    }
}

/// The CTR CSRs, sorted by number.
pub(crate) static TABLE: &[CsrDesc] = &[
    csr!(
        num::SCTRCTL,
        ctr_check,
        |h| h.ctr.mctrctl & !CTRCTL_M_ONLY,
        Some(|h, v| h.write_ctrctl(false, CTRCTL_M_ONLY, v))
    ),
    csr!(
        num::SCTRSTATUS,
        ctr_check,
        |h| h.ctr.sctrstatus(),
        Some(|h, v| h.write_sctrstatus(v))
    ),
    csr!(
        num::SCTRDEPTH,
        sctrdepth_check,
        |h| h.ctr.depth as u64,
        Some(|h, v| h.write_sctrdepth(v))
    ),
    csr!(
        num::VSCTRCTL,
        ctr_check,
        |h| h.ctr.vsctrctl,
        Some(|h, v| h.write_ctrctl(true, CTRCTL_M_ONLY, v))
    ),
    csr!(
        num::MCTRCTL,
        mctrctl_check,
        |h| h.ctr.mctrctl,
        Some(|h, v| h.write_ctrctl(false, 0, v))
    ),
];

/// Entry registers: access check (the select value is in 0x200-0x2FF).
pub(crate) fn entry_check(h: &Hart, _sel: u64, write: bool) -> Result<(), CsrFault> {
    ctr_check(h, write)
}

/// The physical entry of the logical entry `sel` selects, if it is below the depth (and the
/// hart has CTR: `Hart::csr` reads without the access check).
fn logical(h: &Hart, sel: u64) -> Option<usize> {
    let x = sel.checked_sub(0x200)?;
    (h.ctr.implemented() && x < h.ctr.depth_entries()).then(|| h.ctr.physical(x))
}

/// `ctrsource` (through `sireg`/`vsireg`).
pub(crate) fn source_read(h: &Hart, sel: u64) -> u64 {
    logical(h, sel).map_or(0, |p| h.ctr.entries[p].source)
}
/// `ctrtarget` (through `sireg2`/`vsireg2`).
pub(crate) fn target_read(h: &Hart, sel: u64) -> u64 {
    logical(h, sel).map_or(0, |p| h.ctr.entries[p].target)
}
/// `ctrdata` (through `sireg3`/`vsireg3`).
pub(crate) fn data_read(h: &Hart, sel: u64) -> u64 {
    logical(h, sel).map_or(0, |p| h.ctr.entries[p].data)
}
pub(crate) fn source_write(h: &mut Hart, sel: u64, v: u64) {
    if let Some(p) = logical(h, sel) {
        h.ctr.entries[p].source = v;
    }
}
/// MISP (bit 0) is read-only 0.
pub(crate) fn target_write(h: &mut Hart, sel: u64, v: u64) {
    if let Some(p) = logical(h, sel) {
        h.ctr.entries[p].target = v & !1;
    }
}
pub(crate) fn data_write(h: &mut Hart, sel: u64, v: u64) {
    let mask = h.ctr.config.as_ref().map_or(0, |c| c.ctrdata_mask());
    if let Some(p) = logical(h, sel) {
        h.ctr.entries[p].data = v & mask;
    }
}
/// `sireg4`-`sireg6` at the CTR select values: read-only 0.
pub(crate) fn zero_read(_: &Hart, _: u64) -> u64 {
    0
}
pub(crate) fn ignore_write(_: &mut Hart, _: u64, _: u64) {}
