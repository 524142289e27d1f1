//! The performance-monitoring CSRs (see `crate::pmu` for the counting): Zihpm
//! (`mhpmcounter3-31`, `mhpmevent3-31`, `hpmcounter3-31`), Sscofpmf (`scountovf`),
//! Smcntrpmf ("2.1 Machine Counter Configuration Registers (mcyclecfg, minstretcfg)"),
//! Smcdeleg/Ssccfg ("2 Counter Delegation Enable (`menvcfg.CDE`)", "3 Counter Delegation":
//! the delegated counters behind `siselect` 0x40-0x5F, "4
//! Supervisor Counter Inhibit Register (`scountinhibit`)", "5 Virtualizing `scountovf`"),
//! Sspesa (`shpmspc`, `shpmsdata`) and Smpdis/Sspdis (`mpdisctl`, `spdisctl`, `vspdisctl`,
//! `spdiscounter`, `spdisevmask`, `spdisevmatch`, `spdisfilter`, and the sample record
//! behind `siselect` 0x60/0x61).
//!
//! The draft extensions have no CSR numbers; this table uses the provisional ones of
//! [`crate::pmu::DraftNumbers::PROVISIONAL`], and a hart configured with others maps them
//! here (`Hart::csr_canonical`).
//!
//! Access rules:
//! - `scountinhibit`: illegal-instruction while `menvcfg.CDE` = 0 (from every mode: the
//!   extension then appears not implemented); from VS/VU virtual-instruction (Smcdeleg
//!   chapter 4). Reads show the `mcountinhibit` bits of delegated counters (`mcounteren`), and
//!   bit 1 (PDIS) when `mstateen0.PDIS` = 1.
//! - `scountovf`: from VS/VU virtual-instruction while CDE = 1 (chapter 5); bit X reads OF of
//!   `mhpmeventX` when the `mcounteren` (and in VS-mode `hcounteren`) bit X is set, always in
//!   M-mode (Sscofpmf); bit 1 is `mpdisctl.OF` where PDIS state is accessible.
//! - `shpmspc`/`shpmsdata`: from S-mode illegal while CDE = 0; from VS-mode virtual-instruction
//!   while CDE = 1, else illegal (Sspesa).
//! - PDIS CSRs: `mstateen0.PDIS` = 0 makes them illegal below M; with V = 1, `hstateen0.PDIS`
//!   = 0 makes them virtual-instruction. `spdisctl` is `vspdisctl` while V = 1.
//! - Delegated counters (`siselect` 0x40-0x5F, Smcdeleg chapter 3): from M and S,
//!   illegal-instruction while CDE = 0, for 0x41, for a counter with `mcounteren` bit 0, and
//!   for `sireg3-6` (RV64: `sireg4`/`sireg5` do not exist either). `sireg` is the counter,
//!   `sireg2` its event selector or `xcyclecfg`/`xinstretcfg` with MINH read-only 0.
//!   `vsiselect` 0x40-0x5F: `vsireg*` from M/HS illegal; `sireg*` from VS illegal while CDE = 0,
//!   virtual-instruction while CDE = 1 (the hypervisor emulates).

use crate::csr::desc::{CsrDesc, CsrFault};
use crate::csr::stateen::gate;
use crate::hart::{Hart, PrivilegeMode};
use crate::pmu::{pdis, INH, MENVCFG_CDE, MINH, OF};
use vcpu_api::csr as num;

/// `menvcfg.CDE` (Smcdeleg 2 "Counter Delegation Enable (`menvcfg.CDE`)"): with CDE = 0 the
/// extension appears not implemented.
fn cde(h: &Hart) -> bool {
    h.csr.menvcfg & MENVCFG_CDE != 0
}

/// `scountinhibit`: CDE, then virtual-instruction from VS (Smcdeleg 4
/// "Supervisor Counter Inhibit Register (`scountinhibit`)").
fn scountinhibit_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if !cde(h) {
        Err(CsrFault::Illegal)
    } else if h.virt {
        Err(CsrFault::Virtual)
    } else {
        Ok(())
    }
}

/// `scountovf`: virtual-instruction from VS while CDE = 1 (Smcdeleg 5
/// "Virtualizing `scountovf`").
fn scountovf_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.virt && cde(h) {
        Err(CsrFault::Virtual)
    } else {
        Ok(())
    }
}

/// `shpmspc`/`shpmsdata`: the access rules of Sspesa's
/// "Hardware Performance Monitor Sample PC Register (`shpmspc`)" and
/// "Hardware Performance Monitor Sample Metadata (`shpmsdata`)".
fn sspesa_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    match (h.prv, h.virt, cde(h)) {
        (PrivilegeMode::Machine, _, _) => Ok(()),
        (_, true, true) => Err(CsrFault::Virtual),
        (_, _, false) => Err(CsrFault::Illegal),
        _ => Ok(()),
    }
}

/// PDIS state: `mstateen0.PDIS`, `hstateen0.PDIS` (Smpdis "State Enable Access Control").
pub(crate) fn pdis_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    gate(h, 0, h.pmu.stateen_bit())
}

/// Whether HS-mode could access the CSR (virtual- vs illegal-instruction from VS/VU; for the
/// PDIS CSRs Smpdis "State Enable Access Control").
pub(crate) fn hs_could_access(h: &Hart, num: u16) -> Option<bool> {
    let p = crate::pmu::DraftNumbers::PROVISIONAL;
    Some(match num {
        num::SCOUNTINHIBIT => cde(h),
        n if n == p.shpmspc || n == p.shpmsdata => cde(h),
        n if (p.spdisctl..=p.spdisfilter).contains(&n) || n == p.vspdisctl => {
            h.csr.mstateen[0] & h.pmu.stateen_bit() != 0
        }
        _ => return None,
    })
}

impl Hart {
    /// The `scountinhibit` bits that exist now: delegated counters (Smcdeleg 4
    /// "Supervisor Counter Inhibit Register (`scountinhibit`)"), and PDIS (bit 1) when
    /// `mstateen0.PDIS` = 1 (Smpdis "Supervisor Count Inhibit Register (`scountinhibit`)").
    fn scountinhibit_mask(&self) -> u64 {
        let mut m = self.csr.mcounteren & !2;
        if self.csr.mstateen[0] & self.pmu.stateen_bit() != 0 {
            m |= crate::pmu::INHIBIT_PDIS;
        }
        m
    }

    /// Write `mcountinhibit`, or through `scountinhibit` (`keep`: the bits it cannot change;
    /// Smcdeleg 4 "Supervisor Counter Inhibit Register (`scountinhibit`)"); bit 1 is PDIS's
    /// (Smpdis "Machine Count Inhibit Register (`mcountinhibit`)").
    pub(crate) fn write_mcountinhibit(&mut self, keep: u64, v: u64) {
        let m = crate::pmu::MCOUNTINHIBIT_MASK & !keep;
        self.pmu_reconfigure(|s| s.mcountinhibit = (s.mcountinhibit & !m) | (v & m));
    }

    /// `scountovf` as the current mode reads it: Sscofpmf's OF bits, masked as Smcdeleg 5
    /// "Virtualizing `scountovf`" and `hcounteren` say, and bit 1 (Smpdis
    /// "Supervisor Counter Overflow Register (`scountovf`)").
    fn scountovf(&self) -> u64 {
        let mut v = 0;
        for i in 3..32 {
            v |= (self.pmu.state.mhpmevent[i] >> 63) << i;
        }
        let pdis_of = (self.pmu.state.pdis.mpdisctl & pdis::OF != 0) as u64;
        let bit = self.pmu.stateen_bit();
        match self.prv {
            PrivilegeMode::Machine => v | pdis_of << 1,
            _ => {
                let mut m = self.csr.mcounteren;
                let mut pdis_ok = self.csr.mstateen[0] & bit != 0;
                if self.virt {
                    m &= self.csr.h.hcounteren;
                    pdis_ok &= self.read_hstateen(0) & bit != 0;
                }
                (v & m & !7) | ((pdis_of & pdis_ok as u64) << 1)
            }
        }
    }

    /// Write `mcyclecfg` or `minstretcfg` (Smcntrpmf 2.1
    /// "Machine Counter Configuration Registers (mcyclecfg, minstretcfg)"): the five xINH
    /// bits; bit 63 is read-only 0.
    fn write_cfg(&mut self, instret: bool, v: u64) {
        let v = v & INH;
        self.pmu_reconfigure(|s| {
            if instret {
                s.minstretcfg = v
            } else {
                s.mcyclecfg = v
            }
        });
    }
}

macro_rules! pmu_table {
    ($($i:literal)*) => {
        /// The performance-monitoring CSRs, sorted by number (Zihpm, Sscofpmf; Smcntrpmf 2
        /// "CSRs"; Smcdeleg 4; Sspesa and Smpdis "CSRs").
        pub(crate) static TABLE: &[CsrDesc] = &[
            csr!(
                num::SCOUNTINHIBIT,
                scountinhibit_check,
                |h| h.pmu.state.mcountinhibit & h.scountinhibit_mask(),
                Some(|h, v| h.write_mcountinhibit(!h.scountinhibit_mask(), v))
            ),
            csr!(
                num::MCYCLECFG,
                crate::csr::desc::ok,
                |h| h.pmu.state.mcyclecfg,
                Some(|h, v| h.write_cfg(false, v))
            ),
            csr!(
                num::MINSTRETCFG,
                crate::csr::desc::ok,
                |h| h.pmu.state.minstretcfg,
                Some(|h, v| h.write_cfg(true, v))
            ),
            $(csr!(
                num::MHPMEVENT3 - 3 + $i,
                crate::csr::desc::ok,
                |h| h.pmu.state.mhpmevent[$i],
                Some(|h, v| h.write_mhpmevent($i, v))
            ),)*
            csr!(
                num::SHPMSPC,
                sspesa_check,
                |h| h.pmu.state.shpmspc,
                Some(|h, v| h.pmu.state.shpmspc = v)
            ),
            csr!(
                num::SHPMSDATA,
                sspesa_check,
                |h| h.pmu.state.shpmsdata,
                Some(|h, v| h.pmu.state.shpmsdata = v & 0x1f)
            ),
            csr!(
                num::SPDISCTL,
                pdis_check,
                |h| h.pmu.state.pdis.mpdisctl & !pdis::M,
                Some(|h, v| h.write_pdisctl(pdis::M, v))
            ),
            csr!(
                num::SPDISCOUNTER,
                pdis_check,
                |h| h.pmu.state.pdis.counter,
                Some(|h, v| h.write_spdiscounter(v))
            ),
            csr!(
                num::SPDISEVMASK,
                pdis_check,
                |h| h.pmu.state.pdis.evmask,
                Some(|h, v| h.pmu.state.pdis.evmask = v & pdis::EVMASK)
            ),
            csr!(
                num::SPDISEVMATCH,
                pdis_check,
                |h| h.pmu.state.pdis.evmatch,
                Some(|h, v| h.pmu.state.pdis.evmatch = v & pdis::EVMASK)
            ),
            csr!(
                num::SPDISFILTER,
                pdis_check,
                |h| h.pmu.state.pdis.filter,
                Some(|h, v| h.write_spdisfilter(v))
            ),
            csr!(
                num::VSPDISCTL,
                pdis_check,
                |h| h.read_vspdisctl(),
                Some(|h, v| h.write_vspdisctl(v))
            ),
            csr!(
                num::MPDISCTL,
                crate::csr::desc::ok,
                |h| h.pmu.state.pdis.mpdisctl,
                Some(|h, v| h.write_pdisctl(0, v))
            ),
            $(csr!(
                num::MCYCLE + $i,
                crate::csr::desc::ok,
                |h| h.counter($i),
                Some(|h, v| h.write_counter($i, v))
            ),)*
            $(csr!(
                num::CYCLE + $i,
                crate::csr::desc::ok,
                |h| h.counter($i),
                None
            ),)*
            csr!(num::SCOUNTOVF, scountovf_check, |h| h.scountovf(), None),
        ];
    };
}

pmu_table!(3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);

/// Delegated counter state through `sireg`/`sireg2` (select 0x40 + i), from M or S
/// (Smcdeleg 3 "Counter Delegation").
pub(crate) fn deleg_check(h: &Hart, sel: u64, _: bool) -> Result<(), CsrFault> {
    let i = sel - 0x40;
    if !cde(h) || i == 1 || h.csr.mcounteren >> i & 1 == 0 {
        Err(CsrFault::Illegal)
    } else {
        Ok(())
    }
}

/// `sireg3`-`sireg6` at 0x40-0x5F: illegal-instruction (Smcdeleg 3 "Counter Delegation").
pub(crate) fn never(_: &Hart, _: u64, _: bool) -> Result<(), CsrFault> {
    Err(CsrFault::Illegal)
}

/// `vsiselect` 0x40-0x5F: from VS, virtual-instruction while CDE = 1 (the hypervisor
/// emulates the guest's counters), else illegal; `vsireg*` from M/HS: illegal (Smcdeleg 3
/// "Counter Delegation").
pub(crate) fn vs_deleg_check(h: &Hart, _: u64, _: bool) -> Result<(), CsrFault> {
    if h.virt && cde(h) {
        Err(CsrFault::Virtual)
    } else {
        Err(CsrFault::Illegal)
    }
}

/// `sireg` at 0x40 + i: counter i (Smcdeleg 3 "Counter Delegation", table 1).
pub(crate) fn deleg_counter_read(h: &Hart, sel: u64) -> u64 {
    h.counter((sel - 0x40) as usize & 31)
}
/// Write counter i through `sireg` at 0x40 + i (Smcdeleg 3 "Counter Delegation").
pub(crate) fn deleg_counter_write(h: &mut Hart, sel: u64, v: u64) {
    h.write_counter((sel - 0x40) as usize & 31, v);
}

/// `sireg2`: `hpmevent` or `cyclecfg`/`instretcfg`, a subset: MINH is read-only 0 (Smcdeleg
/// 3 "Counter Delegation").
pub(crate) fn deleg_event_read(h: &Hart, sel: u64) -> u64 {
    let s = &h.pmu.state;
    let v = match (sel - 0x40) as usize & 31 {
        0 => s.mcyclecfg,
        2 => s.minstretcfg,
        i => s.mhpmevent[i],
    };
    v & !MINH
}
/// Write `sireg2` at 0x40 + i; MINH keeps its value (Smcdeleg 3 "Counter Delegation").
pub(crate) fn deleg_event_write(h: &mut Hart, sel: u64, v: u64) {
    let i = (sel - 0x40) as usize & 31;
    let s = &h.pmu.state;
    let old = match i {
        0 => s.mcyclecfg,
        2 => s.minstretcfg,
        i => s.mhpmevent[i],
    };
    let v = (v & !MINH) | (old & MINH);
    match i {
        0 => h.write_cfg(false, v),
        2 => h.write_cfg(true, v),
        i => h.write_mhpmevent(i, v & (OF | INH | crate::pmu::EVENT_SELECT)),
    }
}

/// The PDIS sample record through `sireg`-`sireg6` at 0x60; 0x61 holds WPRI and zeros
/// (Smpdis "Supervisor PDIS Sample Data Register Access").
pub(crate) fn record_read(h: &Hart, sel: u64, field: usize) -> u64 {
    if sel == 0x60 {
        h.pmu.state.pdis.record[field]
    } else {
        0
    }
}
/// Write a field of the PDIS sample record (Smpdis
/// "Supervisor PDIS Sample Data Register Access").
pub(crate) fn record_write(h: &mut Hart, sel: u64, field: usize, v: u64) {
    if sel == 0x60 {
        h.pmu.state.pdis.record[field] = v;
    }
}
/// The sample record's access check: the PDIS state gate (Smpdis
/// "State Enable Access Control").
pub(crate) fn record_check(h: &Hart, _: u64, w: bool) -> Result<(), CsrFault> {
    pdis_check(h, w)
}
