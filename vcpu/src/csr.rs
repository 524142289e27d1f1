//! Control and status registers: one declarative table of every CSR the hart implements,
//! with its number, name, access rule, and read/write behaviour (WARL masks in the write
//! functions). Accesses to numbers not in the table raise illegal-instruction.
//!
//! Generic rules (privileged spec 2.1): bits 11:10 = 3 means read-only; bits 9:8 give the
//! lowest privilege that may access the CSR.
//!
//! The base table is here; each later extension keeps its CSRs (and its own table) in a file
//! of its own. Extensions that are CSRs only live under `csr/`: [`stateen`]
//! (Smstateen/Ssstateen), [`indirect`] (Smcsrind/Sscsrind and the table of indirectly
//! accessed registers), [`sstc`] (Sstc) [`aia`] (Smaia/Ssaia) and [`imsic`] (the IMSIC's CSRs and interrupt files).
//! Extensions with behaviour beyond their CSRs keep the table in their own folder:
//! [`crate::hypervisor::csr`] (the H extension), [`crate::ctr::csr`] (Smctr/Ssctr),
//! [`crate::pmu::csr`] (Zihpm, Sscofpmf, Smcntrpmf, Smcdeleg, Sspesa, Smpdis),
//! `crate::pmp::csr` (PMP; entries 16-63 are the read-only-zero ranges here),
//! `crate::trigger::csr` (Sdtrig). `TABLES`
//! below lists every table. The shared building blocks (`CsrDesc`, `CsrFault`) are in
//! `desc.rs` and the stored state (`CsrFile`) in `file.rs`: leaves the tables and the hart
//! import without importing the tables.

use crate::hart::{Hart, PrivilegeMode};
use crate::trap::irq;
use vcpu_api::csr as num;

pub(crate) mod desc;
pub(crate) mod file;
pub(crate) use desc::{ok, tvec_legalize, SSTATUS_MASK, S_INTERRUPTS};
pub use desc::{
    CsrDesc, CsrFault, ENVCFG_FIOM, MENVCFG_STCE, MSTATUS_MPP_SHIFT, MSTATUS_SXL_64, MSTATUS_UXL_64,
};
pub use file::CsrFile;

pub use vcpu_api::csr::{name, ALL as NAMES};

// mstatus fields (privileged spec 3.1.6), defined in `vcpu_api::csr`.
pub use vcpu_api::csr::{
    MSTATUS_FS, MSTATUS_MIE, MSTATUS_MPIE, MSTATUS_MPP, MSTATUS_MPRV, MSTATUS_MXR, MSTATUS_SD,
    MSTATUS_SIE, MSTATUS_SPIE, MSTATUS_SPP, MSTATUS_SUM, MSTATUS_TSR, MSTATUS_TVM, MSTATUS_TW,
};

const MSTATUS_WRITABLE: u64 = MSTATUS_SIE
    | MSTATUS_MIE
    | MSTATUS_SPIE
    | MSTATUS_MPIE
    | MSTATUS_SPP
    | MSTATUS_MPP
    | MSTATUS_FS
    | MSTATUS_MPRV
    | MSTATUS_SUM
    | MSTATUS_MXR
    | MSTATUS_TVM
    | MSTATUS_TW
    | MSTATUS_TSR
    | crate::hypervisor::MSTATUS_GVA
    | crate::hypervisor::MSTATUS_MPV;

/// `misa`: RV64 with A, C, D, F, H, I, M, S, U (read-only: writes are ignored, which WARL allows).
pub const MISA: u64 = (2 << 62)
    | (1 << 0)   // A
    | (1 << 2)   // C
    | (1 << 3)   // D
    | (1 << 5)   // F
    | (1 << 7)   // H
    | (1 << 8)   // I
    | (1 << 12)  // M
    | (1 << 18)  // S
    | (1 << 20); // U

/// Writable `menvcfg` bits: FIOM, STCE (Sstc) and CDE (Smcdeleg 2
/// "Counter Delegation Enable (`menvcfg.CDE`)"). PDISS (Smpdis
/// "Machine Environment Configuration Register (`menvcfg`)") is read-only 0: there is no
/// PDIS memory buffer.
const MENVCFG_WRITABLE: u64 = ENVCFG_FIOM | MENVCFG_STCE | crate::pmu::MENVCFG_CDE;

/// Interrupts that exist (`mie` writable bits).
const ALL_INTERRUPTS: u64 = S_INTERRUPTS
    | (1 << irq::MSI)
    | (1 << irq::MTI)
    | (1 << irq::MEI)
    | crate::hypervisor::VS_INTERRUPTS;
/// `medeleg`: every implemented exception except ECALL from M (bit 11, read-only 0).
/// With H: also ECALL from VS (10), guest-page faults (20, 21, 23), virtual instruction (22).
const MEDELEG_WRITABLE: u64 = (0xb7ff | (0xf << 20)) & !(1 << 11);

/// FP CSRs need `mstatus.FS != Off` (unprivileged spec 11.2 / privileged 3.1.6.6).
fn fp_on(h: &Hart, _: bool) -> Result<(), CsrFault> {
    // With V=1 both FS fields are in effect, and Off is always illegal-instruction.
    if h.csr.mstatus & MSTATUS_FS == 0 || (h.virt && h.csr.h.vsstatus & MSTATUS_FS == 0) {
        Err(CsrFault::Illegal)
    } else {
        Ok(())
    }
}

/// `satp` from HS-mode traps when `mstatus.TVM` = 1 (privileged spec 3.1.6.5), and from
/// VS-mode (where it is `vsatp`) when `hstatus.VTVM` = 1.
fn satp_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.prv != PrivilegeMode::Supervisor {
        Ok(())
    } else if h.virt {
        if h.csr.h.hstatus & crate::hypervisor::HSTATUS_VTVM != 0 {
            Err(CsrFault::Virtual)
        } else {
            Ok(())
        }
    } else if h.csr.mstatus & MSTATUS_TVM != 0 {
        Err(CsrFault::Illegal)
    } else {
        Ok(())
    }
}

/// Unprivileged counters: `mcounteren` gates S and U, `scounteren` also gates U
/// (privileged spec 3.1.11 and 4.1.5).
/// With V=1, `hcounteren` also gates VS and VU, raising virtual-instruction where
/// `mcounteren` allows the access (H extension, "Hypervisor Counter-Enable Register").
fn counter_check(h: &Hart, num: u16) -> Result<(), CsrFault> {
    let bit = 1u64 << (num & 31);
    if h.prv == PrivilegeMode::Machine {
        return Ok(());
    }
    if h.csr.mcounteren & bit == 0 {
        return Err(CsrFault::Illegal);
    }
    let s_ok = h.prv == PrivilegeMode::Supervisor || h.csr.scounteren & bit != 0;
    if h.virt {
        if h.csr.h.hcounteren & bit == 0 || !s_ok {
            return Err(CsrFault::Virtual);
        }
        return Ok(());
    }
    if s_ok {
        Ok(())
    } else {
        Err(CsrFault::Illegal)
    }
}

impl Hart {
    /// Set `mstatus.FS` = Dirty (and so SD); with V=1 also `vsstatus.FS`.
    #[inline]
    pub(crate) fn mark_fs_dirty(&mut self) {
        self.csr.mstatus |= MSTATUS_FS;
        if self.virt {
            self.csr.h.vsstatus |= MSTATUS_FS;
        }
    }

    fn read_mstatus(&self) -> u64 {
        let s = self.csr.mstatus | MSTATUS_UXL_64 | MSTATUS_SXL_64;
        if s & MSTATUS_FS == MSTATUS_FS {
            s | MSTATUS_SD
        } else {
            s
        }
    }

    fn write_mstatus(&mut self, v: u64) {
        let mut v = v & MSTATUS_WRITABLE;
        // MPP is WARL: the reserved value 2 is not kept.
        if (v & MSTATUS_MPP) >> MSTATUS_MPP_SHIFT == 2 {
            v = (v & !MSTATUS_MPP) | (self.csr.mstatus & MSTATUS_MPP);
        }
        self.csr.mstatus = v;
        self.update_translation_context();
    }

    fn fcsr(&self) -> u64 {
        ((self.csr.frm as u64) << 5) | self.csr.fflags as u64
    }
}

fn satp_write(h: &mut Hart, v: u64) {
    // MODE is WARL: an unsupported mode makes the whole write have no effect
    // (privileged spec 4.1.11). ASID bits are writable (ASIDLEN = 16) but the TLB is flushed
    // on every satp write instead of being tagged.
    match v >> 60 {
        0 | 8 | 9 | 10 => {
            h.csr.satp = if v >> 60 == 0 { 0 } else { v };
            h.flush_tlb();
        }
        _ => {}
    }
}

pub mod aia;
pub mod imsic;
pub mod indirect;
pub mod sstc;
pub mod stateen;

/// The CSR table, sorted by number.
static TABLE: &[CsrDesc] = &[
    // Unprivileged floating-point CSRs.
    csr!(
        num::FFLAGS,
        fp_on,
        |h| h.csr.fflags as u64,
        Some(|h, v| {
            h.csr.fflags = v as u8 & 0x1f;
            h.mark_fs_dirty();
        })
    ),
    csr!(
        num::FRM,
        fp_on,
        |h| h.csr.frm as u64,
        Some(|h, v| {
            h.csr.frm = v as u8 & 7;
            h.mark_fs_dirty();
        })
    ),
    csr!(
        num::FCSR,
        fp_on,
        |h| h.fcsr(),
        Some(|h, v| {
            h.csr.fflags = v as u8 & 0x1f;
            h.csr.frm = (v >> 5) as u8 & 7;
            h.mark_fs_dirty();
        })
    ),
    // Supervisor trap setup.
    csr!(
        num::SSTATUS,
        ok,
        |h| {
            let s = h.read_mstatus();
            (s & (SSTATUS_MASK | MSTATUS_UXL_64)) | (s & MSTATUS_SD)
        },
        Some(|h, v| {
            let m = (h.csr.mstatus & !SSTATUS_MASK) | (v & SSTATUS_MASK);
            h.write_mstatus(m);
        })
    ),
    csr!(
        num::SIE,
        aia::vti_check,
        |h| h.sie(),
        Some(|h, v| h.write_sie(v))
    ),
    csr!(
        num::STVEC,
        ok,
        |h| h.csr.stvec,
        Some(|h, v| h.csr.stvec = tvec_legalize(v))
    ),
    csr!(
        num::SCOUNTEREN,
        ok,
        |h| h.csr.scounteren,
        Some(|h, v| h.csr.scounteren = v & 0xffff_ffff)
    ),
    csr!(
        num::SENVCFG,
        stateen::envcfg_check,
        |h| h.csr.senvcfg,
        Some(|h, v| h.csr.senvcfg = v & 1)
    ),
    // Supervisor trap handling.
    csr!(
        num::SSCRATCH,
        ok,
        |h| h.csr.sscratch,
        Some(|h, v| h.csr.sscratch = v)
    ),
    csr!(
        num::SEPC,
        ok,
        |h| h.csr.sepc,
        Some(|h, v| h.csr.sepc = v & !1)
    ),
    csr!(
        num::SCAUSE,
        ok,
        |h| h.csr.scause,
        Some(|h, v| h.csr.scause = v)
    ),
    csr!(
        num::STVAL,
        ok,
        |h| h.csr.stval,
        Some(|h, v| h.csr.stval = v)
    ),
    csr!(
        num::SIP,
        aia::vti_check,
        |h| h.sip(),
        Some(|h, v| h.write_sip(v))
    ),
    // Supervisor protection and translation.
    csr!(num::SATP, satp_check, |h| h.csr.satp, Some(satp_write)),
    // Machine trap setup.
    csr!(
        num::MSTATUS,
        ok,
        |h| h.read_mstatus(),
        Some(|h, v| h.write_mstatus(v))
    ),
    csr!(num::MISA, ok, |_| MISA, Some(|_, _| {})),
    csr!(
        num::MEDELEG,
        ok,
        |h| h.csr.medeleg,
        Some(|h, v| h.csr.medeleg = v & MEDELEG_WRITABLE)
    ),
    csr!(
        num::MIDELEG,
        ok,
        // VS-level interrupts are always delegated (read-only 1, H extension).
        // So is SGEI when GEILEN > 0.
        |h| h.csr.mideleg | crate::hypervisor::VS_INTERRUPTS | h.sgei_bit(),
        Some(|h, v| h.csr.mideleg = v & S_INTERRUPTS)
    ),
    csr!(
        num::MIE,
        ok,
        |h| h.csr.mie,
        Some(|h, v| h.csr.mie = v & (ALL_INTERRUPTS | h.sgei_bit()))
    ),
    csr!(
        num::MTVEC,
        ok,
        |h| h.csr.mtvec,
        Some(|h, v| h.csr.mtvec = tvec_legalize(v))
    ),
    csr!(
        num::MCOUNTEREN,
        ok,
        |h| h.csr.mcounteren,
        Some(|h, v| h.csr.mcounteren = v & 0xffff_ffff)
    ),
    csr!(
        num::MENVCFG,
        ok,
        |h| h.csr.menvcfg,
        Some(|h, v| h.csr.menvcfg = v & MENVCFG_WRITABLE)
    ),
    csr!(
        num::MCOUNTINHIBIT,
        ok,
        |h| h.pmu.state.mcountinhibit,
        Some(|h, v| h.write_mcountinhibit(0, v))
    ),
    // Machine trap handling.
    csr!(
        num::MSCRATCH,
        ok,
        |h| h.csr.mscratch,
        Some(|h, v| h.csr.mscratch = v)
    ),
    csr!(
        num::MEPC,
        ok,
        |h| h.csr.mepc,
        Some(|h, v| h.csr.mepc = v & !1)
    ),
    csr!(
        num::MCAUSE,
        ok,
        |h| h.csr.mcause,
        Some(|h, v| h.csr.mcause = v)
    ),
    csr!(
        num::MTVAL,
        ok,
        |h| h.csr.mtval,
        Some(|h, v| h.csr.mtval = v)
    ),
    csr!(
        num::MIP,
        ok,
        |h| h.mip(),
        Some(|h, v| {
            let m = h.mip_writable();
            h.csr.mip = (h.csr.mip & !m) | (v & m);
            // mip.VSSIP is an alias of hvip.VSSIP.
            let vssip = 1 << irq::VSSI;
            h.csr.h.hvip = (h.csr.h.hvip & !vssip) | (v & vssip);
        })
    ),
    // Machine counters.
    csr!(
        num::MCYCLE,
        ok,
        |h| h.counter(crate::pmu::CY),
        Some(|h, v| h.write_counter(crate::pmu::CY, v))
    ),
    csr!(
        num::MINSTRET,
        ok,
        |h| h.counter(crate::pmu::IR),
        Some(|h, v| h.write_counter(crate::pmu::IR, v))
    ),
    // Unprivileged counters (Zicntr).
    csr!(num::CYCLE, ok, |h| h.counter(crate::pmu::CY), None),
    csr!(
        num::TIME,
        ok,
        // VS/VU see time + htimedelta (H extension, "Hypervisor Time Delta Register").
        |h| if h.virt {
            h.mtime().wrapping_add(h.csr.h.htimedelta)
        } else {
            h.mtime()
        },
        None
    ),
    csr!(num::INSTRET, ok, |h| h.counter(crate::pmu::IR), None),
    // Machine information registers.
    csr!(num::MVENDORID, ok, |_| 0, None),
    csr!(num::MARCHID, ok, |_| 0, None),
    csr!(num::MIMPID, ok, |_| 0, None),
    csr!(num::MHARTID, ok, |h| h.hart_id(), None),
    csr!(num::MCONFIGPTR, ok, |_| 0, None),
];

/// Read-only-zero CSRs that exist as ranges: the PMP's entries 16-63 (the hart has at most
/// 16, `crate::pmp`; privileged spec 3.7.1: the lowest-numbered entries are implemented
/// first, the others are read-only zero).
static ZERO_RANGES: &[(u16, u16)] = &[
    (num::PMPCFG4, num::PMPCFG14 + 1),
    (num::PMPADDR16, num::PMPADDR63),
];

static ZERO_RO: CsrDesc = csr!(0, ok, |_| 0, Some(|_, _| {}));

/// Every CSR table: the base one and one per extension, each sorted by number.
static TABLES: &[&[CsrDesc]] = &[
    TABLE,
    stateen::TABLE,
    indirect::TABLE,
    sstc::TABLE,
    aia::TABLE,
    imsic::TABLE,
    crate::hypervisor::csr::TABLE,
    crate::ctr::csr::TABLE,
    crate::pmu::csr::TABLE,
    crate::pmp::csr::TABLE,
    crate::trigger::csr::TABLE,
];

/// Where each of the 4096 CSR numbers is described in [`TABLES`]: 0 for none, else the
/// table's position plus one in the top 5 bits and the entry's in the low 11 (the first
/// table that has the number, as a search in table order finds it). Built at compile time.
static INDEX: [u16; 4096] = {
    let mut index = [0u16; 4096];
    let mut t = 0;
    while t < TABLES.len() {
        let table = TABLES[t];
        assert!(table.len() <= 1 << 11 && TABLES.len() < 1 << 5);
        let mut i = 0;
        while i < table.len() {
            let n = table[i].num as usize;
            if index[n] == 0 {
                index[n] = ((t as u16 + 1) << 11) | i as u16;
            }
            i += 1;
        }
        t += 1;
    }
    index
};

/// Find a CSR by number.
#[inline]
pub fn lookup(num: u16) -> Option<&'static CsrDesc> {
    match INDEX.get(num as usize) {
        Some(&e) if e != 0 => Some(&TABLES[(e >> 11) as usize - 1][(e & 0x7ff) as usize]),
        _ => lookup_zero(num),
    }
}

/// [`lookup`] for the numbers no table has: the read-only-zero ranges.
fn lookup_zero(num: u16) -> Option<&'static CsrDesc> {
    for &(lo, hi) in ZERO_RANGES {
        if (lo..=hi).contains(&num) {
            // RV64: odd pmpcfg numbers do not exist.
            if lo == num::PMPCFG4 && num & 1 == 1 {
                return None;
            }
            return Some(&ZERO_RO);
        }
    }
    None
}

impl Hart {
    /// Read a CSR as M-mode would, without side effects; `None` if it does not exist.
    pub fn csr(&self, num: u16) -> Option<u64> {
        lookup(self.csr_canonical(num)?).map(|d| (d.read)(self))
    }

    /// The number the CSR tables know CSR `num` by: the draft extensions' CSRs may be
    /// configured at other numbers (`pmu::DraftNumbers`); `None` for a provisional number the
    /// configuration moved away.
    pub(crate) fn csr_canonical(&self, num: u16) -> Option<u16> {
        if self.csr_alias.is_empty() {
            return Some(num);
        }
        if let Some(&(_, p)) = self.csr_alias.iter().find(|&&(n, _)| n == num) {
            return Some(p);
        }
        if self.csr_alias.iter().any(|&(_, p)| p == num) {
            return None;
        }
        Some(num)
    }

    /// Check an access to CSR `num` (generic privilege/read-only rules, then the CSR's own).
    /// `write` is whether the instruction writes it.
    pub(crate) fn csr_access(&self, num: u16, write: bool) -> Result<&'static CsrDesc, CsrFault> {
        let num = self.csr_canonical(num).ok_or(CsrFault::Illegal)?;
        let d = lookup(num).ok_or(CsrFault::Illegal)?;
        if write && (num >> 10) & 3 == 3 {
            return Err(CsrFault::Illegal);
        }
        let min_prv = ((num >> 8) & 3) as u8;
        if !self.virt {
            // HS-mode may access the hypervisor-level (2) CSRs.
            let level = match self.prv {
                PrivilegeMode::Machine => 3,
                PrivilegeMode::Supervisor => 2,
                PrivilegeMode::User => 0,
            };
            if level < min_prv {
                return Err(CsrFault::Illegal);
            }
        } else {
            // VS/VU (H extension, "Trap Cause Codes"): M-level CSRs are illegal; CSRs above
            // the current level that HS-mode could access raise virtual-instruction.
            let level = if self.prv == PrivilegeMode::Supervisor {
                1
            } else {
                0
            };
            if min_prv == 3 {
                return Err(CsrFault::Illegal);
            }
            if min_prv > level {
                return Err(if self.hs_could_access(num) {
                    CsrFault::Virtual
                } else {
                    CsrFault::Illegal
                });
            }
        }
        if (0xc00..=0xc1f).contains(&num) {
            counter_check(self, num)?;
        }
        (d.check)(self, write)?;
        if write && d.write.is_none() {
            return Err(CsrFault::Illegal);
        }
        if self.virt {
            if let Some(vs) = crate::hypervisor::csr::vs_counterpart(num) {
                return lookup(vs).ok_or(CsrFault::Illegal);
            }
        }
        Ok(d)
    }

    /// Whether HS-mode could make this access (with `mstatus.TVM` = 0): decides between
    /// virtual- and illegal-instruction for VS/VU accesses to higher-level CSRs. HS-mode is
    /// stopped by `mcounteren` (counters), the `mstateen` bits (Smstateen), and for
    /// `stimecmp`/`vstimecmp` by `menvcfg.STCE` and `mcounteren.TM` (Sstc).
    fn hs_could_access(&self, num: u16) -> bool {
        use stateen::*;
        match num {
            0xc00..=0xc1f => self.csr.mcounteren & (1 << (num & 31)) != 0,
            0x10a | 0x60a => hs_allowed(self, 0, STATEEN0_ENVCFG),
            0x10c..=0x10f => hs_allowed(self, (num - 0x10c) as usize, STATEEN_SE0),
            0x60c..=0x60f => hs_allowed(self, (num - 0x60c) as usize, STATEEN_SE0),
            // Sscsrind with Smstateen: while mstateen0.CSRIND = 1, VS/VU accesses to
            // vsiselect/vsireg* and VU accesses to siselect/sireg* raise virtual-instruction
            // "regardless of any other mstateen bits" (and of the select value).
            0x150..=0x157 | 0x250..=0x257 => hs_allowed(self, 0, STATEEN0_CSRIND),
            0x15c | 0x25c => imsic::hs_could_access(self),
            0xdb0 | 0xeb0 | 0x608 | 0x609 | 0x646 | 0x647 => hs_allowed(self, 0, STATEEN0_AIA),
            0x14d | 0x24d => self.sstc_allowed_below_m(),
            0x14e | 0x14f | 0x15f | 0x24e => crate::ctr::csr::hs_could_access(self),
            _ => crate::pmu::csr::hs_could_access(self, num).unwrap_or(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compile-time index finds what a search of the tables in order finds, for every
    /// number a `u16` holds.
    #[test]
    fn the_index_finds_what_a_search_finds() {
        for num in 0..=u16::MAX {
            let searched = TABLES
                .iter()
                .find_map(|t| t.binary_search_by_key(&num, |d| d.num).ok().map(|i| &t[i]))
                .or_else(|| lookup_zero(num));
            assert!(
                std::ptr::eq(
                    lookup(num).map_or(std::ptr::null(), |d| d),
                    searched.map_or(std::ptr::null(), |d| d)
                ),
                "CSR {num:#x}"
            );
        }
    }

    #[test]
    fn tables_are_sorted_and_disjoint() {
        let mut all: Vec<u16> = Vec::new();
        for table in TABLES {
            assert!(
                table.windows(2).all(|w| w[0].num < w[1].num),
                "a CSR table is not sorted"
            );
            all.extend(table.iter().map(|d| d.num));
        }
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a CSR number is in two tables");
        for &(lo, hi) in ZERO_RANGES {
            assert!(all.iter().all(|&c| c < lo || c > hi));
        }
    }
}

#[cfg(test)]
mod naming_tests {
    use super::*;

    /// The hart implements exactly the CSRs `vcpu_api::csr` names: every table entry has a
    /// name there, and every named number is found by [`lookup`].
    #[test]
    fn every_csr_is_named_once_in_vcpu_api() {
        for table in TABLES {
            for d in table.iter() {
                assert!(name(d.num).is_some(), "CSR {:#05x} has no name", d.num);
            }
        }
        for &(n, spec) in NAMES {
            assert!(
                lookup(n).is_some(),
                "{spec} ({n:#05x}) is named but not implemented"
            );
        }
    }
}
