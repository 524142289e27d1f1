//! Exit accounting for `vmm run --stats`: how often the guest left the hart, and why,
//! printed as a table like `kvm_stat`'s.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use crate::sbi;

/// Why the guest left the hart (or what the VMM did about it), as `--stats` counts it. Each
/// reason has a counter of its own ([`ExitStats::count`] is an array index for all but
/// unusual ones: exception codes above 63, virtual instructions that are neither CSR
/// accesses nor named, delegated counters above 31); its name in the table is
/// [`ExitReason::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// `wfi`: a WFI the hart left to the VMM.
    Wfi,
    /// `mmio uart read`.
    MmioUartRead,
    /// `mmio uart write`.
    MmioUartWrite,
    /// `mmio other`: an access outside any device.
    MmioOther,
    /// `interrupt LCOFI to guest (hvip)`: a counter overflow passed on to the guest.
    LcofiInjected,
    /// `mmio aplic`: an access to the guest's APLIC (`--aia aplic-imsic`).
    MmioAplic,
    /// `mmio imsic msi`: a store to the guest's IMSIC pages (an MSI, e.g. an IPI).
    MmioImsic,
    /// `interrupt LCOFI spurious`.
    LcofiSpurious,
    /// `ctr sctrdepth emulated`.
    CtrDepthEmulated,
    /// `ctr lazy load`.
    CtrLazyLoad,
    /// `ctr record synthesized`: a CTR record for a trap the VMM injected.
    CtrRecordSynthesized,
    /// `sspesa emulated`.
    SspesaEmulated,
    /// `scountovf emulated`.
    ScountovfEmulated,
    /// `pdis lazy load`.
    PdisLazyLoad,
    /// `pmu-deleg injected illegal`.
    PmuDelegInjectedIllegal,
    /// `sbi NAME`: an SBI call of extension ID `eid` ([`sbi::extension_name`]).
    Sbi(u64),
    /// `access-fault CAUSE`: injected into the guest.
    AccessFault(u64),
    /// `guest-page-fault CAUSE`: injected as the corresponding page fault.
    GuestPageFault(u64),
    /// `trap CAUSE`: any other trap, injected.
    Trap(u64),
    /// `virtual-insn ...`: a virtual-instruction exit of this instruction
    /// ([`virtual_insn_reason`]).
    VirtualInsn(u32),
    /// `pmu-deleg ACCESS[ write]`: an emulated delegated-counter access.
    PmuDeleg {
        /// What was accessed.
        access: pmu_virt::deleg::DelegAccess,
        /// Whether it wrote.
        write: bool,
    },
    /// `pmu-deleg counter V on hart counter H`.
    PmuDelegCounter {
        /// The guest's virtual counter.
        virt: usize,
        /// The hart counter behind it.
        hart: usize,
    },
}

/// The reasons without a parameter, in slot order (`ExitReason::slot` gives their index;
/// the `slots_and_names_match` test checks the two agree).
const FIXED: [ExitReason; 15] = [
    ExitReason::Wfi,
    ExitReason::MmioUartRead,
    ExitReason::MmioUartWrite,
    ExitReason::MmioOther,
    ExitReason::LcofiInjected,
    ExitReason::LcofiSpurious,
    ExitReason::CtrDepthEmulated,
    ExitReason::CtrLazyLoad,
    ExitReason::CtrRecordSynthesized,
    ExitReason::SspesaEmulated,
    ExitReason::ScountovfEmulated,
    ExitReason::PdisLazyLoad,
    ExitReason::PmuDelegInjectedIllegal,
    ExitReason::MmioAplic,
    ExitReason::MmioImsic,
];
/// Delegated-counter accesses, in slot order.
const DELEG_ACCESSES: [pmu_virt::deleg::DelegAccess; 5] = [
    pmu_virt::deleg::DelegAccess::Counter,
    pmu_virt::deleg::DelegAccess::Event,
    pmu_virt::deleg::DelegAccess::Inhibit,
    pmu_virt::deleg::DelegAccess::Overflow,
    pmu_virt::deleg::DelegAccess::CounterRead,
];
/// Exception codes with a counter per trap kind.
const CAUSES: usize = 64;
/// Counters per kind of [`ExitReason::PmuDelegCounter`] index.
const COUNTERS: usize = 32;
/// Virtual instructions with a name of their own (SYSTEM opcode, no CSR).
const NAMED_VINSNS: [&str; 4] = ["wfi", "sret", "sfence.vma", "sinval.vma"];

/// First slot of each kind of reason.
const SLOT_SBI: usize = FIXED.len();
const SLOT_ACCESS_FAULT: usize = SLOT_SBI + sbi::EXTENSION_NAMES.len();
const SLOT_GUEST_PAGE_FAULT: usize = SLOT_ACCESS_FAULT + CAUSES;
const SLOT_TRAP: usize = SLOT_GUEST_PAGE_FAULT + CAUSES;
const SLOT_VINSN_CSR: usize = SLOT_TRAP + CAUSES;
const SLOT_VINSN_NAMED: usize = SLOT_VINSN_CSR + 4096;
const SLOT_DELEG: usize = SLOT_VINSN_NAMED + NAMED_VINSNS.len();
const SLOT_DELEG_COUNTER: usize = SLOT_DELEG + 2 * DELEG_ACCESSES.len();
/// Number of counters.
const SLOTS: usize = SLOT_DELEG_COUNTER + COUNTERS * COUNTERS;

/// A virtual instruction as `--stats` tells them apart.
enum VinsnKind {
    /// A CSR access (SYSTEM opcode with a CSR number in bits 31:20).
    Csr(u16),
    /// One of [`NAMED_VINSNS`].
    Named(usize),
    /// Anything else, by its bits.
    Word(u32),
}

impl VinsnKind {
    fn of(insn: u32) -> VinsnKind {
        let opcode = insn & 0x7f;
        let funct3 = (insn >> 12) & 7;
        if opcode == 0x73 && funct3 != 0 && funct3 != 4 {
            VinsnKind::Csr((insn >> 20) as u16)
        } else if opcode == 0x73 {
            match insn {
                0x1050_0073 => VinsnKind::Named(0),
                0x1020_0073 => VinsnKind::Named(1),
                _ if insn >> 25 == 0x09 => VinsnKind::Named(2),
                _ if insn >> 25 == 0x0b => VinsnKind::Named(3),
                _ => VinsnKind::Word(insn),
            }
        } else {
            VinsnKind::Word(insn)
        }
    }
}

/// The key of a reason without a slot (rare: see [`ExitReason`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Unusual {
    AccessFault(u64),
    GuestPageFault(u64),
    Trap(u64),
    VirtualInsn(u32),
    DelegCounter(usize, usize),
}

impl Unusual {
    fn name(self) -> String {
        match self {
            Unusual::AccessFault(c) => ExitReason::AccessFault(c).name(),
            Unusual::GuestPageFault(c) => ExitReason::GuestPageFault(c).name(),
            Unusual::Trap(c) => ExitReason::Trap(c).name(),
            Unusual::VirtualInsn(i) => ExitReason::VirtualInsn(i).name(),
            Unusual::DelegCounter(virt, hart) => ExitReason::PmuDelegCounter { virt, hart }.name(),
        }
    }
}

impl ExitReason {
    /// The reason's counter, or its key among the unusual ones.
    fn slot(self) -> Result<usize, Unusual> {
        let cause = |base: usize, c: u64, unusual: fn(u64) -> Unusual| {
            if c < CAUSES as u64 {
                Ok(base + c as usize)
            } else {
                Err(unusual(c))
            }
        };
        match self {
            ExitReason::Sbi(eid) => Ok(SLOT_SBI + sbi::extension_index(eid)),
            ExitReason::AccessFault(c) => cause(SLOT_ACCESS_FAULT, c, Unusual::AccessFault),
            ExitReason::GuestPageFault(c) => {
                cause(SLOT_GUEST_PAGE_FAULT, c, Unusual::GuestPageFault)
            }
            ExitReason::Trap(c) => cause(SLOT_TRAP, c, Unusual::Trap),
            ExitReason::VirtualInsn(insn) => match VinsnKind::of(insn) {
                VinsnKind::Csr(csr) => Ok(SLOT_VINSN_CSR + usize::from(csr)),
                VinsnKind::Named(i) => Ok(SLOT_VINSN_NAMED + i),
                VinsnKind::Word(w) => Err(Unusual::VirtualInsn(w)),
            },
            ExitReason::PmuDeleg { access, write } => {
                let a = DELEG_ACCESSES
                    .iter()
                    .position(|x| *x == access)
                    .unwrap_or(0);
                Ok(SLOT_DELEG + 2 * a + usize::from(write))
            }
            ExitReason::PmuDelegCounter { virt, hart } if virt < COUNTERS && hart < COUNTERS => {
                Ok(SLOT_DELEG_COUNTER + virt * COUNTERS + hart)
            }
            ExitReason::PmuDelegCounter { virt, hart } => Err(Unusual::DelegCounter(virt, hart)),
            ExitReason::Wfi => Ok(0),
            ExitReason::MmioUartRead => Ok(1),
            ExitReason::MmioUartWrite => Ok(2),
            ExitReason::MmioOther => Ok(3),
            ExitReason::LcofiInjected => Ok(4),
            ExitReason::LcofiSpurious => Ok(5),
            ExitReason::CtrDepthEmulated => Ok(6),
            ExitReason::CtrLazyLoad => Ok(7),
            ExitReason::CtrRecordSynthesized => Ok(8),
            ExitReason::SspesaEmulated => Ok(9),
            ExitReason::ScountovfEmulated => Ok(10),
            ExitReason::PdisLazyLoad => Ok(11),
            ExitReason::PmuDelegInjectedIllegal => Ok(12),
            ExitReason::MmioAplic => Ok(13),
            ExitReason::MmioImsic => Ok(14),
        }
    }

    /// The reason of counter `slot`.
    fn of_slot(slot: usize) -> ExitReason {
        match slot {
            s if s < SLOT_SBI => FIXED[s],
            s if s < SLOT_ACCESS_FAULT => ExitReason::Sbi(sbi_eid_of_index(s - SLOT_SBI)),
            s if s < SLOT_GUEST_PAGE_FAULT => {
                ExitReason::AccessFault((s - SLOT_ACCESS_FAULT) as u64)
            }
            s if s < SLOT_TRAP => ExitReason::GuestPageFault((s - SLOT_GUEST_PAGE_FAULT) as u64),
            s if s < SLOT_VINSN_CSR => ExitReason::Trap((s - SLOT_TRAP) as u64),
            s if s < SLOT_VINSN_NAMED => {
                // csrrs x0, CSR, x0: any CSR access names the same counter.
                ExitReason::VirtualInsn((((s - SLOT_VINSN_CSR) as u32) << 20) | 0x2073)
            }
            s if s < SLOT_DELEG => ExitReason::VirtualInsn(
                [0x1050_0073, 0x1020_0073, 0x1200_0073, 0x1600_0073][s - SLOT_VINSN_NAMED],
            ),
            s if s < SLOT_DELEG_COUNTER => ExitReason::PmuDeleg {
                access: DELEG_ACCESSES[(s - SLOT_DELEG) / 2],
                write: (s - SLOT_DELEG) % 2 == 1,
            },
            s => ExitReason::PmuDelegCounter {
                virt: (s - SLOT_DELEG_COUNTER) / COUNTERS,
                hart: (s - SLOT_DELEG_COUNTER) % COUNTERS,
            },
        }
    }

    /// The reason's name in the `--stats` table, e.g. `sbi DBCN`, `wfi`,
    /// `virtual-insn csr sctrdepth (0x15f)`.
    pub fn name(self) -> String {
        match self {
            ExitReason::Wfi => "wfi".into(),
            ExitReason::MmioUartRead => "mmio uart read".into(),
            ExitReason::MmioUartWrite => "mmio uart write".into(),
            ExitReason::MmioOther => "mmio other".into(),
            ExitReason::LcofiInjected => "interrupt LCOFI to guest (hvip)".into(),
            ExitReason::LcofiSpurious => "interrupt LCOFI spurious".into(),
            ExitReason::CtrDepthEmulated => "ctr sctrdepth emulated".into(),
            ExitReason::CtrLazyLoad => "ctr lazy load".into(),
            ExitReason::CtrRecordSynthesized => "ctr record synthesized".into(),
            ExitReason::SspesaEmulated => "sspesa emulated".into(),
            ExitReason::ScountovfEmulated => "scountovf emulated".into(),
            ExitReason::PdisLazyLoad => "pdis lazy load".into(),
            ExitReason::PmuDelegInjectedIllegal => "pmu-deleg injected illegal".into(),
            ExitReason::MmioAplic => "mmio aplic".into(),
            ExitReason::MmioImsic => "mmio imsic msi".into(),
            ExitReason::Sbi(eid) => format!("sbi {}", sbi::extension_name(eid)),
            ExitReason::AccessFault(c) => format!("access-fault {c}"),
            ExitReason::GuestPageFault(c) => format!("guest-page-fault {c}"),
            ExitReason::Trap(c) => format!("trap {c}"),
            ExitReason::VirtualInsn(insn) => match VinsnKind::of(insn) {
                VinsnKind::Csr(csr) => match vcpu_api::csr::name(csr) {
                    Some(name) => format!("virtual-insn csr {name} ({csr:#x})"),
                    None => format!("virtual-insn csr {csr:#x}"),
                },
                VinsnKind::Named(i) => format!("virtual-insn {}", NAMED_VINSNS[i]),
                VinsnKind::Word(w) => format!("virtual-insn {}", super::vinsn::disassemble(w)),
            },
            ExitReason::PmuDeleg { access, write } => {
                let rw = if write { " write" } else { "" };
                format!("pmu-deleg {}{rw}", access.name())
            }
            ExitReason::PmuDelegCounter { virt, hart } => {
                format!("pmu-deleg counter {virt} on hart counter {hart}")
            }
        }
    }
}

/// An extension ID whose name has index `i` in [`sbi::EXTENSION_NAMES`].
fn sbi_eid_of_index(i: usize) -> u64 {
    use sbi::eid;
    [
        eid::BASE,
        eid::TIME,
        eid::IPI,
        eid::RFENCE,
        eid::HSM,
        eid::SRST,
        eid::DBCN,
        eid::PMU,
        0,
        u64::MAX,
    ][i]
}

/// Counts of exits by [`ExitReason`], and a log of the first virtual-instruction exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitStats {
    /// One counter per slot ([`ExitReason`]'s `slot`).
    counts: Box<[u64]>,
    /// The reasons without a slot.
    unusual: BTreeMap<Unusual, u64>,
    /// The first [`MAX_VIRTUAL_INSN_RECORDS`] virtual-instruction exits, in order.
    virtual_insn: Vec<VirtualInsnExit>,
    /// Virtual-instruction exits past the log's capacity (counted, not recorded).
    virtual_insn_dropped: u64,
    /// The reason counted last and the action of the last virtual-instruction exit (what
    /// an exit trace says the VMM did; `run/trace.rs`).
    last: (Option<ExitReason>, Option<VirtualInsnAction>),
}

impl Default for ExitStats {
    fn default() -> Self {
        ExitStats {
            counts: vec![0; SLOTS].into_boxed_slice(),
            unusual: BTreeMap::new(),
            virtual_insn: Vec::new(),
            virtual_insn_dropped: 0,
            last: (None, None),
        }
    }
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
    /// A VS-mode SRET trapped by `hstatus.VTSR`: the VMM did the trap return on `vsstatus`
    /// and `vsepc` (with its CTR record) and resumed the guest at `vsepc`.
    EmulatedSret,
    /// A VS-mode access to `satp` trapped by `hstatus.VTVM`: done on `vsatp` (a write
    /// flushes the guest's translations), resumed after it.
    EmulatedSatp,
    /// A VS-mode SFENCE.VMA or SINVAL.VMA trapped by `hstatus.VTVM`: the guest's
    /// translations flushed, resumed after it.
    EmulatedSfence,
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
            VirtualInsnAction::EmulatedSret => "emulated-sret",
            VirtualInsnAction::EmulatedSatp => "emulated-satp",
            VirtualInsnAction::EmulatedSfence => "emulated-sfence",
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
    /// Counts one exit for `reason` (no allocation unless the reason is unusual and new).
    pub fn count(&mut self, reason: ExitReason) {
        self.last.0 = Some(reason);
        match reason.slot() {
            Ok(slot) => self.counts[slot] += 1,
            Err(key) => *self.unusual.entry(key).or_insert(0) += 1,
        }
    }

    /// Adds `other`'s counts and log (another vCPU's exits) to these.
    pub fn merge(&mut self, other: &ExitStats) {
        for (n, m) in self.counts.iter_mut().zip(other.counts.iter()) {
            *n += m;
        }
        for (k, v) in &other.unusual {
            *self.unusual.entry(*k).or_default() += v;
        }
        for e in &other.virtual_insn {
            self.record_virtual_insn(*e);
        }
        self.virtual_insn_dropped += other.virtual_insn_dropped;
    }

    /// The count for the reason named `reason` (0 if never seen).
    pub fn get(&self, reason: &str) -> u64 {
        self.iter()
            .find(|(name, _)| name == reason)
            .map_or(0, |(_, n)| n)
    }

    /// Every reason seen and its count, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (String, u64)> {
        let slots = (0..SLOTS)
            .filter(|&s| self.counts[s] > 0)
            .map(|s| (ExitReason::of_slot(s).name(), self.counts[s]));
        let unusual = self.unusual.iter().map(|(k, n)| (k.name(), *n));
        let mut rows: Vec<(String, u64)> = slots.chain(unusual).collect();
        rows.sort();
        rows.into_iter()
    }

    /// Appends a virtual-instruction exit to the log (dropped, but counted, once the log
    /// holds [`MAX_VIRTUAL_INSN_RECORDS`]).
    pub fn record_virtual_insn(&mut self, exit: VirtualInsnExit) {
        self.last.1 = Some(exit.action);
        if self.virtual_insn.len() < MAX_VIRTUAL_INSN_RECORDS {
            self.virtual_insn.push(exit);
        } else {
            self.virtual_insn_dropped += 1;
        }
    }

    /// Forgets the last reason and action ([`ExitStats::last`]), before an exit is handled.
    pub fn clear_last(&mut self) {
        self.last = (None, None);
    }

    /// The reason counted last and the action of the last virtual-instruction exit since
    /// [`ExitStats::clear_last`].
    pub fn last(&self) -> (Option<ExitReason>, Option<VirtualInsnAction>) {
        self.last
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
        self.counts.iter().sum::<u64>() + self.unusual.values().sum::<u64>()
    }

    /// A `kvm_stat`-like table: one line per reason, largest count first, with its share
    /// of all exits, then the total.
    pub fn table(&self) -> String {
        let mut rows: Vec<(String, u64)> = self.iter().collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
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
    /// The instructions of `instructions`, per vCPU, vCPU 0 first.
    pub per_vcpu: Vec<u64>,
    /// Blocks translated to host code by all harts (`--jit`).
    pub translated_blocks: u64,
    /// Where `--snapshot-on-stop` wrote the VM when the run stopped, if it did.
    pub snapshot_written: Option<std::path::PathBuf>,
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
    ExitReason::VirtualInsn(insn).name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_sorts_by_count() {
        let mut s = ExitStats::default();
        s.count(ExitReason::Wfi);
        s.count(ExitReason::Sbi(sbi::eid::DBCN));
        s.count(ExitReason::Sbi(sbi::eid::DBCN));
        assert_eq!(s.total(), 3);
        assert_eq!(s.get("sbi DBCN"), 2);
        let t = s.table();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("Event"));
        assert!(lines[1].starts_with("sbi DBCN") && lines[1].contains("66.7%"));
        assert!(lines[2].starts_with("wfi"));
        assert!(lines[3].starts_with("Total") && lines[3].ends_with('3'));
    }

    /// Every counter is the counter of the reason it is named after, and no two counters
    /// share a name.
    #[test]
    fn slots_and_names_match() {
        let mut names = std::collections::BTreeSet::new();
        for slot in 0..SLOTS {
            let reason = ExitReason::of_slot(slot);
            assert_eq!(reason.slot(), Ok(slot), "{reason:?}");
            assert!(names.insert(reason.name()), "{}", reason.name());
        }
        let mut s = ExitStats::default();
        s.count(ExitReason::Trap(70));
        s.count(ExitReason::Trap(70));
        s.count(ExitReason::VirtualInsn(0x0000_0013));
        s.count(ExitReason::Sbi(3));
        s.count(ExitReason::PmuDeleg {
            access: pmu_virt::deleg::DelegAccess::Inhibit,
            write: true,
        });
        assert_eq!(s.get("trap 70"), 2);
        assert_eq!(s.get("virtual-insn insn 0x00000013"), 1);
        assert_eq!(s.get("sbi legacy"), 1);
        assert_eq!(s.get("pmu-deleg scountinhibit write"), 1);
        assert_eq!(s.total(), 5);
        let mut merged = ExitStats::default();
        merged.merge(&s);
        merged.merge(&s);
        assert_eq!(merged.get("trap 70"), 4);
        assert_eq!(merged.total(), 10);
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
        assert_eq!(
            virtual_insn_reason(0x0000_0013),
            "virtual-insn insn 0x00000013"
        );
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
