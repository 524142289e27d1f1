//! Exit accounting for `vmm run --stats`: how often the guest left the hart, and why,
//! printed as a table like `kvm_stat`'s.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// Counts of exits by reason. Keys are short descriptions such as `sbi DBCN`,
/// `virtual-insn csr sctrdepth (0x15f)`, `mmio uart read`, `wfi`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExitStats {
    counts: BTreeMap<String, u64>,
    /// The first [`MAX_VIRTUAL_INSN_RECORDS`] virtual-instruction exits, in order.
    virtual_insn: Vec<VirtualInsnExit>,
    /// Virtual-instruction exits past the log's capacity (counted, not recorded).
    virtual_insn_dropped: u64,
}

/// How many virtual-instruction exits [`ExitStats`] keeps in its log.
pub const MAX_VIRTUAL_INSN_RECORDS: usize = 4096;

/// What the VMM did about a virtual-instruction exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VirtualInsnAction {
    /// A VS-mode WFI trapped by `hstatus.VTW`: the VMM idled the guest until its next
    /// timer deadline (or until a pending interrupt) and resumed it after the WFI.
    EmulatedWfi,
    /// A read of `time` trapped by `hcounteren.TM` = 0: the VMM wrote the guest's time to
    /// `rd` and resumed the guest after the instruction.
    EmulatedTime,
    /// A VS-mode access to `sctrdepth` (always trapped): emulated by `ctr-virt` (the guest's
    /// depth read, a write legalized to the VM's depths), resumed after it.
    EmulatedCtrDepth,
    /// The vCPU's first access to CTR state (`hstateen0.CTR` = 0): `ctr-virt` loaded its CTR
    /// context, set `hstateen0.CTR`, and resumed the guest at the same instruction.
    CtrLoaded,
    /// A VS-mode access to delegated counter state (Ssccfg: `sireg*` at `vsiselect`
    /// 0x40-0x5F, `scountinhibit`, `scountovf`, or a direct read of a counter that moved):
    /// emulated by `pmu-virt` on the guest's virtual counters, resumed after it.
    EmulatedPmuDeleg,
    /// A VS-mode access to `shpmspc`/`shpmsdata` (Sspesa; they trap while `menvcfg.CDE` =
    /// 1): emulated from the hart's sample of the guest's counters, resumed after it.
    EmulatedSspesa,
    /// A VS-mode read of `scountovf` (it traps while `menvcfg.CDE` = 1): the OF bits of the
    /// guest's counters and PDIS written to `rd`, resumed after it.
    EmulatedScountovf,
    /// The vCPU's first access to PDIS state (`hstateen0.PDIS` = 0): its PDIS context was
    /// loaded, `hstateen0.PDIS` set, and the guest resumed at the same instruction.
    PdisLoaded,
    /// Anything else: an illegal-instruction exception (`stval` = the instruction bits) was
    /// injected into the guest.
    InjectedIllegal,
}

impl VirtualInsnAction {
    /// Short name for tables and logs.
    pub fn name(self) -> &'static str {
        match self {
            VirtualInsnAction::EmulatedWfi => "emulated-wfi",
            VirtualInsnAction::EmulatedTime => "emulated-time",
            VirtualInsnAction::EmulatedCtrDepth => "emulated-ctr-depth",
            VirtualInsnAction::CtrLoaded => "ctr-loaded",
            VirtualInsnAction::EmulatedPmuDeleg => "emulated-pmu-deleg",
            VirtualInsnAction::EmulatedSspesa => "emulated-sspesa",
            VirtualInsnAction::EmulatedScountovf => "emulated-scountovf",
            VirtualInsnAction::PdisLoaded => "pdis-loaded",
            VirtualInsnAction::InjectedIllegal => "injected-illegal",
        }
    }
}

/// One virtual-instruction exit (cause 22) as the VMM saw and handled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VirtualInsnExit {
    /// Exception code reported by the hart (22).
    pub cause: u64,
    /// `stval` as HS-mode would see it (the instruction bits).
    pub tval: u64,
    /// `htval` (0 for a virtual-instruction exception).
    pub htval: u64,
    /// `htinst` (0 for a virtual-instruction exception).
    pub htinst: u64,
    /// The trapping instruction's bits.
    pub insn: u32,
    /// Address of the trapping instruction.
    pub pc: u64,
    /// The guest was in VU-mode, not VS-mode.
    pub from_vu: bool,
    /// What the VMM did.
    pub action: VirtualInsnAction,
}

impl ExitStats {
    /// Counts one exit for `reason`.
    pub fn count(&mut self, reason: impl Into<String>) {
        *self.counts.entry(reason.into()).or_insert(0) += 1;
    }

    /// Adds `other`'s counts and log (another vCPU's exits) to these.
    pub fn merge(&mut self, other: &ExitStats) {
        for (k, v) in &other.counts {
            *self.counts.entry(k.clone()).or_default() += v;
        }
        for e in &other.virtual_insn {
            self.record_virtual_insn(*e);
        }
        self.virtual_insn_dropped += other.virtual_insn_dropped;
    }

    /// The count for `reason` (0 if never seen).
    pub fn get(&self, reason: &str) -> u64 {
        self.counts.get(reason).copied().unwrap_or(0)
    }

    /// Every reason and its count, sorted by reason.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counts.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Appends a virtual-instruction exit to the log (dropped, but counted, once the log
    /// holds [`MAX_VIRTUAL_INSN_RECORDS`]).
    pub fn record_virtual_insn(&mut self, exit: VirtualInsnExit) {
        if self.virtual_insn.len() < MAX_VIRTUAL_INSN_RECORDS {
            self.virtual_insn.push(exit);
        } else {
            self.virtual_insn_dropped += 1;
        }
    }

    /// The virtual-instruction exits recorded, in the order they happened.
    pub fn virtual_insn_exits(&self) -> &[VirtualInsnExit] {
        &self.virtual_insn
    }

    /// Virtual-instruction exits not recorded because the log was full.
    pub fn virtual_insn_dropped(&self) -> u64 {
        self.virtual_insn_dropped
    }

    /// Total number of exits.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// A `kvm_stat`-like table: one line per reason, largest count first, with its share
    /// of all exits, then the total.
    pub fn table(&self) -> String {
        let mut rows: Vec<(&str, u64)> = self.iter().collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(5);
        let total = self.total();
        let mut out = String::new();
        let _ = writeln!(out, "{:<width$} {:>12} {:>7}", "Event", "Total", "%Total");
        for (reason, n) in rows {
            let pct = if total > 0 {
                n as f64 * 100.0 / total as f64
            } else {
                0.0
            };
            let _ = writeln!(out, "{reason:<width$} {n:>12} {pct:>6.1}%");
        }
        let _ = writeln!(out, "{:<width$} {total:>12}", "Total");
        out
    }
}

/// What the hart did during one run.
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    /// Instructions the vCPUs executed in this run, summed (after `vmm restore`: since the
    /// restore).
    pub instructions: u64,
    /// Instructions the vCPUs had executed before this run, summed: those in the snapshot
    /// for `vmm restore`, 0 for `vmm run`.
    pub instructions_before: u64,
    /// Host time spent running (loading excluded).
    pub wall: Duration,
    /// Exits by reason.
    pub exits: ExitStats,
    /// vCPU switches per hart instance (`--pcpus`), hart 0 first; empty with one vCPU.
    pub switches: Vec<u64>,
    /// Blocks translated to host code by all harts (`--jit`).
    pub translated_blocks: u64,
}

impl RunStats {
    /// Millions of guest instructions per host second (of this run's instructions).
    pub fn mips(&self) -> f64 {
        let secs = self.wall.as_secs_f64();
        if secs > 0.0 {
            self.instructions as f64 / secs / 1e6
        } else {
            0.0
        }
    }
}

/// The key for a virtual-instruction exit of `insn`: for a SYSTEM-opcode instruction with
/// a CSR number (bits 31:20) the CSR, else the instruction word.
pub fn virtual_insn_reason(insn: u32) -> String {
    let opcode = insn & 0x7f;
    let funct3 = (insn >> 12) & 7;
    if opcode == 0x73 && funct3 != 0 && funct3 != 4 {
        let csr = (insn >> 20) as u16;
        match vcpu::csr::name(csr) {
            Some(name) => format!("virtual-insn csr {name} ({csr:#x})"),
            None => format!("virtual-insn csr {csr:#x}"),
        }
    } else if opcode == 0x73 {
        let name = match insn {
            0x1050_0073 => "wfi",
            0x1020_0073 => "sret",
            _ if insn >> 25 == 0x09 => "sfence.vma",
            _ if insn >> 25 == 0x0b => "sinval.vma",
            _ => return format!("virtual-insn {insn:#010x}"),
        };
        format!("virtual-insn {name}")
    } else {
        format!("virtual-insn {insn:#010x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_sorts_by_count() {
        let mut s = ExitStats::default();
        s.count("wfi");
        s.count("sbi DBCN");
        s.count("sbi DBCN");
        assert_eq!(s.total(), 3);
        assert_eq!(s.get("sbi DBCN"), 2);
        let t = s.table();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("Event"));
        assert!(lines[1].starts_with("sbi DBCN") && lines[1].contains("66.7%"));
        assert!(lines[2].starts_with("wfi"));
        assert!(lines[3].starts_with("Total") && lines[3].ends_with('3'));
    }

    #[test]
    fn virtual_insn_reasons() {
        // csrr a0, satp (0x180)
        assert_eq!(
            virtual_insn_reason(0x1800_2573),
            "virtual-insn csr satp (0x180)"
        );
        assert_eq!(virtual_insn_reason(0x1050_0073), "virtual-insn wfi");
        assert_eq!(virtual_insn_reason(0x1200_0073), "virtual-insn sfence.vma");
        assert_eq!(virtual_insn_reason(0x0000_0013), "virtual-insn 0x00000013");
    }

    #[test]
    fn virtual_insn_log_is_bounded() {
        let mut s = ExitStats::default();
        let rec = VirtualInsnExit {
            cause: 22,
            tval: 0x1050_0073,
            htval: 0,
            htinst: 0,
            insn: 0x1050_0073,
            pc: 0x8020_0000,
            from_vu: false,
            action: VirtualInsnAction::EmulatedWfi,
        };
        for _ in 0..MAX_VIRTUAL_INSN_RECORDS + 3 {
            s.record_virtual_insn(rec);
        }
        assert_eq!(s.virtual_insn_exits().len(), MAX_VIRTUAL_INSN_RECORDS);
        assert_eq!(s.virtual_insn_exits()[0], rec);
        assert_eq!(s.virtual_insn_dropped(), 3);
        assert_eq!(s.total(), 0, "the log does not count exits by itself");
        assert_eq!(VirtualInsnAction::EmulatedTime.name(), "emulated-time");
    }
}
