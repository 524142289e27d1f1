//! A hart's architectural state, for snapshots and migration: everything software can
//! observe (registers, CSRs, counters and timers, the CTR buffer and its hidden cycle
//! counter, the LR reservation, the TLB's translations), and nothing the model derives or
//! caches unobservably (decode cache, translated blocks, CTR's per-mode recording mask).
//!
//! [`Hart::restore_state`] is given untrusted data: it checks everything before it changes
//! anything, and refuses, naming what does not fit, state this hart cannot hold (a CTR depth
//! or an `xctrctl` field its configuration lacks, a privilege mode that does not exist).

use serde::{Deserialize, Serialize};

use crate::csr::CsrFile;
use crate::hart::{Hart, PrivilegeMode};

/// Everything architectural about a hart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HartState {
    /// `mhartid`.
    pub hart_id: u64,
    /// x0-x31.
    pub x: Vec<u64>,
    /// f0-f31.
    pub f: Vec<u64>,
    /// The program counter.
    pub pc: u64,
    /// The privilege mode (0 U, 1 S, 3 M).
    pub prv: u8,
    /// The virtualization mode V.
    pub virt: bool,
    /// Every CSR that is state of its own.
    pub csr: CsrFile,
    /// Instructions retired.
    pub retired: u64,
    /// The virtual clock (instruction slots).
    pub vclock: u64,
    /// Idle slots skipped.
    pub skipped: u64,
    /// `mtime` offset.
    pub time_offset: u64,
    /// `mtimecmp`.
    pub mtimecmp: u64,
    /// Platform interrupt lines.
    pub ext_lines: u64,
    /// Hosted mode: the VMM's guest timer.
    pub guest_timer: u64,
    /// Hosted mode.
    pub hosted: bool,
    /// Control Transfer Records.
    pub ctr: CtrState,
    /// Performance monitoring: counters, event selectors, models, PDIS.
    pub pmu: crate::pmu::PmuState,
    /// Physical Memory Protection: `pmpcfg0`/`pmpcfg2` and `pmpaddr0-15` (all zero on a
    /// hart without PMP).
    pub pmp: crate::pmp::PmpState,
    /// The IMSIC: its interrupt files and `hgeie` (empty on a hart without an IMSIC).
    pub imsic: crate::csr::imsic::ImsicState,
    /// Sdtrig: `tselect` and each trigger's `tdata1`/`tdata2` (VMM snapshot format 12,
    /// migration protocol 6; format 11 states read as [`HartStateNoTriggers`]).
    pub triggers: crate::trigger::TriggerState,
    /// The LR reservation: the RAM offset LR reserved and the value it read (see
    /// `execute::atomic`), so that an SC after a snapshot, a migration or a vCPU switch
    /// succeeds or fails as it would have without one (format 12 and protocol 6; older
    /// states have none, as after a trap). Only ever compared with an offset an SC
    /// translated, so any value is harmless.
    pub reservation: Option<(u64, u64)>,
    /// The TLB's translations (VMM snapshot format 13, migration protocol 7; older states
    /// read as [`HartStateNoTlb`], with an empty TLB). Software can tell them from an empty
    /// TLB (see [`TlbState`]), so a restored hart holds them, to go on exactly as the saved
    /// one would have.
    pub tlb: TlbState,
}

// The older hart states nest: each is the one before it plus the fields its format added.
// bincode encodes a struct as its fields in order, with nothing around a nested struct, so a
// nested state decodes the same bytes as the flat list of fields the format wrote.

/// [`HartState`] as it was before the TLB's translations (VMM snapshot format 12, migration
/// protocol 6): the fields of [`HartStateNoTriggers`], then `triggers` and `reservation`.
/// [`HartStateNoTlb::without_tlb`] gives an empty TLB (those restores started with one).
#[derive(Clone, Debug, Deserialize)]
pub struct HartStateNoTlb {
    before: HartStateNoTriggers,
    triggers: crate::trigger::TriggerState,
    reservation: Option<(u64, u64)>,
}

impl HartStateNoTlb {
    /// The state, with an empty TLB.
    pub fn without_tlb(self) -> HartState {
        HartState {
            triggers: self.triggers,
            reservation: self.reservation,
            ..self.before.without_triggers()
        }
    }
}

/// [`HartState`] as it was before the debug triggers and the LR reservation (VMM snapshot
/// format 11, migration protocol 5): the fields of [`HartStateNoImsic`], then `imsic`. Those
/// harts had no triggers, so [`HartStateNoTriggers::without_triggers`] gives every trigger
/// disabled (their reset state) and no reservation (as after a trap).
#[derive(Clone, Debug, Deserialize)]
pub struct HartStateNoTriggers {
    before: HartStateNoImsic,
    imsic: crate::csr::imsic::ImsicState,
}

impl HartStateNoTriggers {
    /// The state, with every trigger disabled.
    pub fn without_triggers(self) -> HartState {
        let HartStateNoImsic { before, pmp } = self.before;
        before.upgrade(pmp, self.imsic)
    }
}

/// [`HartState`] as it was before the IMSIC (VMM snapshot formats 9 and 10, migration
/// protocol 4): the fields of [`HartStateNoPmp`], then `pmp`. Those harts had no IMSIC, so
/// [`HartStateNoImsic::without_imsic`] gives an empty one (a hart with an IMSIC restores it
/// at reset).
#[derive(Clone, Debug, Deserialize)]
pub struct HartStateNoImsic {
    before: HartStateNoPmp,
    pmp: crate::pmp::PmpState,
}

impl HartStateNoImsic {
    /// The state, with no IMSIC.
    pub fn without_imsic(self) -> HartState {
        self.before.upgrade(self.pmp, Default::default())
    }
}

/// [`HartState`] as it was before the PMP was implemented (VMM snapshot formats up to 8,
/// migration protocol 2): the same fields without `pmp` and what came after it. Its reader
/// chooses the PMP the hart had then ([`HartStateNoPmp::with_pmp`]).
#[derive(Clone, Debug, Deserialize)]
pub struct HartStateNoPmp {
    hart_id: u64,
    x: Vec<u64>,
    f: Vec<u64>,
    pc: u64,
    prv: u8,
    virt: bool,
    csr: CsrFile,
    retired: u64,
    vclock: u64,
    skipped: u64,
    time_offset: u64,
    mtimecmp: u64,
    ext_lines: u64,
    guest_timer: u64,
    hosted: bool,
    ctr: CtrState,
    pmu: crate::pmu::PmuState,
}

impl HartStateNoPmp {
    /// The state with `pmp` as its PMP.
    pub fn with_pmp(self, pmp: crate::pmp::PmpState) -> HartState {
        self.upgrade(pmp, Default::default())
    }

    /// Today's state from this one, `pmp` and `imsic`, with the fields no older format had
    /// at their reset values: every trigger disabled, no LR reservation.
    fn upgrade(self, pmp: crate::pmp::PmpState, imsic: crate::csr::imsic::ImsicState) -> HartState {
        HartState {
            hart_id: self.hart_id,
            x: self.x,
            f: self.f,
            pc: self.pc,
            prv: self.prv,
            virt: self.virt,
            csr: self.csr,
            retired: self.retired,
            vclock: self.vclock,
            skipped: self.skipped,
            time_offset: self.time_offset,
            mtimecmp: self.mtimecmp,
            ext_lines: self.ext_lines,
            guest_timer: self.guest_timer,
            hosted: self.hosted,
            ctr: self.ctr,
            pmu: self.pmu,
            pmp,
            imsic,
            triggers: Default::default(),
            reservation: None,
            tlb: TlbState::default(),
        }
    }
}

pub use crate::ctr::state::CtrState;
pub use crate::mmu::tlb::{TlbEntry, TlbState};
pub use vcpu_api::StateError;

impl HartState {
    /// The state as a TLB flush leaves it: no translations, no LR reservation. A state
    /// saved while a remote fence was still to be taken (`HartMailbox::request_flush`)
    /// holds that fence this way, as no snapshot holds the request.
    pub fn fenced(self) -> HartState {
        HartState {
            tlb: TlbState::default(),
            reservation: None,
            ..self
        }
    }
}

impl Hart {
    /// The hart's architectural state (after the remote fence its mailbox holds, if any:
    /// [`HartState::fenced`]).
    pub fn save_state(&self) -> HartState {
        let state = self.saved_state();
        match self.mailbox.flush_wanted() {
            Some(_) => state.fenced(),
            None => state,
        }
    }

    fn saved_state(&self) -> HartState {
        HartState {
            hart_id: self.hart_id(),
            x: self.x[..32].to_vec(),
            f: self.f.to_vec(),
            pc: self.pc,
            prv: self.prv as u8,
            virt: self.virt,
            csr: self.csr.clone(),
            retired: self.retired,
            vclock: self.vclock,
            skipped: self.skipped_slots(),
            time_offset: self.time_offset_ticks(),
            mtimecmp: self.mtimecmp,
            ext_lines: self.ext_lines,
            guest_timer: self.guest_timer,
            hosted: self.hosted,
            ctr: self.ctr.save_state(self.vclock),
            pmu: self.pmu.state.clone(),
            pmp: self.pmp.state().clone(),
            imsic: self.imsic.clone(),
            triggers: self.trig.state().clone(),
            reservation: self.reservation.get(),
            tlb: self.tlb.save(),
        }
    }

    /// Restore `s` (checked first: on an error nothing has changed). The hart keeps its own
    /// configuration (memory map, CTR capabilities); the TLB holds the state's translations
    /// (none while a debug trigger is armed: armed triggers keep it empty) and the decode
    /// cache needs no flush (its entries are checked against the fetched bits).
    pub fn restore_state(&mut self, s: &HartState) -> Result<(), StateError> {
        self.load_state(s)?;
        // Guest RAM may have changed under the translated code (a snapshot's or a migration
        // stream's RAM): every block compares its code bytes again (`jit::guard`).
        self.jit_code_sync();
        Ok(())
    }

    /// [`Hart::restore_state`] when guest RAM holds what it held when this hart last ran,
    /// but for guests' writes (`VcpuState::switch_state`: a vCPU switch on this hart):
    /// translated blocks keep their code checks. Writes by the vCPU now leaving were seen by
    /// the code guard (its stores to protected pages took the slow path); writes by other
    /// harts reach the vCPU being loaded through its fences, as with `Hart::run_on`: a remote
    /// fence posted to it while it was off the hart waits in its mailbox, which the first
    /// chunk takes in (`Hart::sync_shared`).
    pub fn switch_state(&mut self, s: &HartState) -> Result<(), StateError> {
        self.load_state(s)
    }

    /// Everything of [`Hart::restore_state`] but the code epoch.
    fn load_state(&mut self, s: &HartState) -> Result<(), StateError> {
        let bad = |m: String| Err(StateError::Malformed(m));
        if s.x.len() != 32 || s.f.len() != 32 {
            return bad(format!(
                "{} integer and {} FP registers (32 each)",
                s.x.len(),
                s.f.len()
            ));
        }
        if !matches!(s.prv, 0 | 1 | 3) {
            return bad(format!("privilege mode {} does not exist", s.prv));
        }
        if s.prv == 3 && s.virt {
            return bad("V = 1 in M-mode".into());
        }
        if s.skipped > s.vclock {
            return bad(format!(
                "skipped = {} idle slots is more than vclock = {} (skipped slots are part of \
                 the virtual clock)",
                s.skipped, s.vclock
            ));
        }
        self.ctr.check_state(&s.ctr)?;
        if let Some(why) = s.pmp.check(self.pmp.entries()) {
            return Err(StateError::Unsupported(why));
        }
        if s.imsic.present() {
            if let Some(why) = self.imsic.check_shape(&s.imsic) {
                return Err(StateError::Unsupported(why));
            }
        }
        if let Some(why) = s.triggers.check() {
            return bad(why);
        }
        if let Some(why) = s.tlb.check(self.ram.size) {
            return bad(why);
        }
        if s.hosted != self.hosted {
            return Err(StateError::Unsupported(format!(
                "the state is of a {} hart, this one is {}",
                if s.hosted { "hosted" } else { "bare" },
                if self.hosted { "hosted" } else { "bare" }
            )));
        }
        self.x[..32].copy_from_slice(&s.x);
        self.x[0] = 0;
        self.f.copy_from_slice(&s.f);
        self.pc = s.pc;
        self.prv = PrivilegeMode::from_bits(s.prv as u64);
        self.virt = s.virt;
        self.csr = s.csr.clone();
        self.retired = s.retired;
        self.vclock = s.vclock;
        self.set_skipped_slots(s.skipped);
        self.set_time_offset_ticks(s.time_offset);
        self.mtimecmp = s.mtimecmp;
        self.ext_lines = s.ext_lines;
        self.guest_timer = s.guest_timer;
        self.reservation.set(s.reservation);
        self.ctr.restore_state(&s.ctr, s.vclock);
        self.ctr_refresh_fast();
        self.pmu_restore(&s.pmu);
        self.pmp.set_state(&s.pmp);
        self.trig.set_state(&s.triggers);
        // A state without an IMSIC (saved by a hart without one, or before the IMSIC
        // existed) leaves this hart's IMSIC at reset.
        self.imsic = if s.imsic.present() {
            s.imsic.clone()
        } else {
            self.imsic.reset()
        };
        self.imsic_refresh();
        // The TLB models came with the monitor's state: only the TLB itself is loaded.
        // Armed triggers (the guest's or a debugger's) allow fetch entries only (the
        // interpreter checks execute triggers before each fetch; loads and stores must
        // take the checked slow path: `mmu/mod.rs`).
        // Pages holding translated code stay protected: no store entry for them
        // (`jit::guard`, as `Hart::access_page` fills the TLB).
        use crate::mmu::tlb::Access;
        let armed = self.trig.armed;
        let guarded = |off: u64| {
            self.jit
                .as_deref()
                .is_some_and(|j| j.guard.protected(off >> 12))
        };
        self.tlb.load_where(&s.tlb, |e| match e.kind {
            k if k == Access::Fetch as u8 => true,
            _ if armed => false,
            k => k != Access::Store as u8 || !guarded(e.off),
        });
        self.mode_changed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctr::{CtrConfig, CtrEntry};
    use crate::HartConfig;
    use vm_memory::{GuestAddress, GuestMemoryMmap};

    fn hart(ctr: Option<CtrConfig>) -> Hart {
        let mem =
            GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0x8000_0000), 1 << 16)]).unwrap();
        Hart::new(
            HartConfig {
                ctr,
                ..HartConfig::default()
            },
            mem,
        )
        .unwrap()
    }

    /// An LR before a snapshot and its SC after the restore: the SC succeeds (the
    /// reservation is part of the state), and stores; without the reservation in the
    /// state (as in formats before 12) the same SC fails and stores nothing.
    #[test]
    fn an_lr_reservation_survives_save_and_restore() {
        use vm_memory::Bytes;
        const LR_D_A0_A1: u32 = 0x1005_b52f; // lr.d a0, (a1)
        const SC_D_A2_A3_A1: u32 = 0x18d5_b62f; // sc.d a2, a3, (a1)
        const DATA: u64 = 0x8000_0100;
        let mem =
            GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0x8000_0000), 1 << 16)]).unwrap();
        let new_hart = || Hart::new(HartConfig::default(), mem.clone()).unwrap();
        let mut a = new_hart();
        mem.write_obj(LR_D_A0_A1, GuestAddress(0x8000_0000))
            .unwrap();
        mem.write_obj(SC_D_A2_A3_A1, GuestAddress(0x8000_0004))
            .unwrap();
        mem.write_obj(7u64, GuestAddress(DATA)).unwrap();
        a.pc = 0x8000_0000;
        a.x[11] = DATA;
        a.x[13] = 99;
        a.run(1);
        assert_eq!((a.pc, a.x[10]), (0x8000_0004, 7), "the LR ran");
        let s = a.save_state();
        assert!(s.reservation.is_some());
        for (reservation, sc_result, memory) in [(s.reservation, 0, 99), (None, 1, 7)] {
            mem.write_obj(7u64, GuestAddress(DATA)).unwrap();
            let mut b = new_hart();
            b.restore_state(&HartState {
                reservation,
                ..s.clone()
            })
            .unwrap();
            b.x[12] = 12345;
            b.run(1);
            assert_eq!(b.pc, 0x8000_0008, "the SC ran");
            assert_eq!(
                b.x[12], sc_result,
                "SC's result with reservation {reservation:?}"
            );
            assert_eq!(mem.read_obj::<u64>(GuestAddress(DATA)).unwrap(), memory);
        }
    }

    #[test]
    fn save_restore_round_trip_and_refusals() {
        let mut a = hart(Some(CtrConfig::full()));
        a.x[5] = 55;
        a.pc = 0x8000_1234;
        a.ctr.mctrctl = 0x0000_0200_0000_0b07;
        a.ctr.set_depth(3);
        a.ctr.wrptr = 100;
        a.ctr.entries[99] = CtrEntry {
            source: 0x8000_0001,
            target: 0x8000_0100,
            data: 0xffff_8009,
        };
        let s = a.save_state();
        let mut b = hart(Some(CtrConfig::full()));
        b.restore_state(&s).unwrap();
        assert_eq!(b.save_state(), s);
        // A host without depth 128.
        let mut c = hart(Some(CtrConfig {
            depths: 0b111,
            ..CtrConfig::full()
        }));
        let e = c.restore_state(&s).unwrap_err().to_string();
        assert!(e.contains("CTR depth 128"), "{e}");
        assert_eq!(c.ctr.depth, 0, "nothing changed");
        // A host without cycle counting cannot hold CC bits.
        let mut d = hart(Some(CtrConfig {
            cce_bits: None,
            ..CtrConfig::full()
        }));
        let e = d.restore_state(&s).unwrap_err().to_string();
        assert!(e.contains("physical entry 99"), "{e}");
        // No CTR at all.
        let e = hart(None).restore_state(&s).unwrap_err().to_string();
        assert!(e.contains("lacks"), "{e}");
        // Malformed.
        let mut m = s.clone();
        m.prv = 2;
        assert!(b.restore_state(&m).is_err());
        let mut m = s.clone();
        m.ctr.wrptr = 128;
        assert!(b.restore_state(&m).is_err());
    }

    /// More skipped idle slots than the clock has counted, and reserved CTR depth
    /// encodings, are refused naming the field, and nothing changes.
    #[test]
    fn skipped_beyond_vclock_and_reserved_depth_are_refused() {
        let mut a = hart(Some(CtrConfig::full()));
        a.vclock = 1000;
        let s = a.save_state();
        let mut b = hart(Some(CtrConfig::full()));
        let before = b.save_state();
        let mut m = s.clone();
        m.skipped = 9_614_793;
        let e = b.restore_state(&m).unwrap_err().to_string();
        assert!(
            e.contains("skipped = 9614793") && e.contains("vclock = 1000"),
            "{e}"
        );
        assert_eq!(b.save_state(), before, "nothing changed");
        for depth in [5u8, 7, 255] {
            let mut m = s.clone();
            m.ctr.depth = depth;
            let e = b.restore_state(&m).unwrap_err().to_string();
            assert!(
                e.contains(&format!("ctr.depth = {depth} is a reserved")),
                "{e}"
            );
            assert_eq!(b.save_state(), before, "nothing changed");
        }
        let mut m = s.clone();
        m.skipped = m.vclock;
        b.restore_state(&m).unwrap();
    }
}
