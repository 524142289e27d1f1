//! Smctr/Ssctr CSRs (chapter 2 "CSRs"), the entry registers behind `sireg*`/`vsireg*` at
//! select values 0x200-0x2FF (chapter 3 "Entry Registers"), and chapter 5
//! "State Enable Access Control". By section:
//! - 2.1 "Machine Control Transfer Records Control Register (mctrctl)": `mctrctl_check`,
//!   `Hart::write_ctrctl` (the writable fields: `CtrConfig::mctrctl_mask`).
//! - 2.2 "Supervisor Control Transfer Records Control Register (sctrctl)": the `SCTRCTL`
//!   entry of `TABLE` (`mctrctl` without M and MTE).
//! - 2.3 "Virtual Supervisor Control Transfer Records Control Register (vsctrctl)": the
//!   `VSCTRCTL` entry (and `sctrctl` is `vsctrctl` with V = 1: `hypervisor::csr`).
//! - 2.4 "Supervisor Control Transfer Records Depth Register (sctrdepth)": `sctrdepth_check`,
//!   `Hart::write_sctrdepth`.
//! - 2.5 "Supervisor Control Transfer Records Status Register (sctrstatus)":
//!   `Hart::write_sctrstatus`.
//! - 2.6 "CSR Listing": `TABLE`.
//! - 3.1 "Control Transfer Record Source Register (ctrsource)": `source_read`,
//!   `source_write`; 3.2 "Control Transfer Record Target Register (ctrtarget)":
//!   `target_read`, `target_write`; 3.3
//!   "Control Transfer Record Metadata Register (ctrdata)": `data_read`, `data_write`; all
//!   behind `entry_check`.
//! - 5 "State Enable Access Control": `ctr_check`, `sctrdepth_check`, `entry_check`
//!   (SCTRCLR's: `Hart::exec_sctrclr`).
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

/// `sctrctl`, `sctrstatus` and the entry registers: Smctr present and the stateen gates
/// (Smctr 5 "State Enable Access Control").
fn ctr_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if !h.ctr.implemented() {
        return Err(CsrFault::Illegal);
    }
    gate(h, 0, STATEEN0_CTR)
}

/// `mctrctl`: M-mode only (the number's privilege), Smctr present (Smctr 2.1
/// "Machine Control Transfer Records Control Register (mctrctl)").
fn mctrctl_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.ctr.implemented() {
        Ok(())
    } else {
        Err(CsrFault::Illegal)
    }
}

/// `sctrdepth`: virtual-instruction from VS/VU unless `mstateen0.CTR` = 0 (Smctr 2.4
/// "Supervisor Control Transfer Records Depth Register (sctrdepth)" and 5
/// "State Enable Access Control").
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

    /// A write to `mctrctl`, `sctrctl` or `vsctrctl` (Smctr 2.1
    /// "Machine Control Transfer Records Control Register (mctrctl)", 2.2, 2.3): only the
    /// implemented fields change; writes to any xctrctl reset the cycle counter (6.3
    /// "Cycle Counting").
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

    /// A write to `sctrstatus` (Smctr 2.5
    /// "Supervisor Control Transfer Records Status Register (sctrstatus)"): WRPTR within
    /// the depth, FROZEN (6.5 "Freeze").
    fn write_sctrstatus(&mut self, v: u64) {
        self.ctr.set_wrptr(v);
        self.ctr.frozen = v & SCTRSTATUS_FROZEN != 0;
        self.ctr_refresh();
    }

    /// A write to `sctrdepth` (Smctr 2.4
    /// "Supervisor Control Transfer Records Depth Register (sctrdepth)"): DEPTH is WARL; an
    /// unsupported value keeps the current depth.
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

/// The CTR CSRs, sorted by number (Smctr 2.6 "CSR Listing", table 5).
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

/// Entry registers: access check (the select value is in 0x200-0x2FF; Smctr 3
/// "Entry Registers" and 5 "State Enable Access Control").
pub(crate) fn entry_check(h: &Hart, _sel: u64, write: bool) -> Result<(), CsrFault> {
    ctr_check(h, write)
}

/// The physical entry of the logical entry `sel` selects, if it is below the depth (and the
/// hart has CTR: `Hart::csr` reads without the access check).
fn logical(h: &Hart, sel: u64) -> Option<usize> {
    let x = sel.checked_sub(0x200)?;
    (h.ctr.implemented() && x < h.ctr.depth_entries()).then(|| h.ctr.physical(x))
}

/// `ctrsource` (through `sireg`/`vsireg`; Smctr 3.1
/// "Control Transfer Record Source Register (ctrsource)").
pub(crate) fn source_read(h: &Hart, sel: u64) -> u64 {
    logical(h, sel).map_or(0, |p| h.ctr.entries[p].source)
}
/// `ctrtarget` (through `sireg2`/`vsireg2`; Smctr 3.2
/// "Control Transfer Record Target Register (ctrtarget)").
pub(crate) fn target_read(h: &Hart, sel: u64) -> u64 {
    logical(h, sel).map_or(0, |p| h.ctr.entries[p].target)
}
/// `ctrdata` (through `sireg3`/`vsireg3`; Smctr 3.3
/// "Control Transfer Record Metadata Register (ctrdata)").
pub(crate) fn data_read(h: &Hart, sel: u64) -> u64 {
    logical(h, sel).map_or(0, |p| h.ctr.entries[p].data)
}
/// Write `ctrsource` (Smctr 3.1 "Control Transfer Record Source Register (ctrsource)"): all
/// 64 bits are kept.
pub(crate) fn source_write(h: &mut Hart, sel: u64, v: u64) {
    if let Some(p) = logical(h, sel) {
        h.ctr.entries[p].source = v;
    }
}
/// Write `ctrtarget` (Smctr 3.2 "Control Transfer Record Target Register (ctrtarget)"): MISP
/// (bit 0) is read-only 0.
pub(crate) fn target_write(h: &mut Hart, sel: u64, v: u64) {
    if let Some(p) = logical(h, sel) {
        h.ctr.entries[p].target = v & !1;
    }
}
/// Write `ctrdata` (Smctr 3.3 "Control Transfer Record Metadata Register (ctrdata)"): only
/// the implemented fields (`CtrConfig::ctrdata_mask`).
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
