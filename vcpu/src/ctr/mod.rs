//! Control Transfer Records (Smctr/Ssctr v1.0): the CTR buffer, its configuration per hart,
//! and (in the files of this folder) everything else of the extension. Where each section of
//! the spec (`/work/shared/specs/smctr-ssctr-v1.0.txt`) is implemented:
//!
//! | section | where |
//! | --- | --- |
//! | 1 Introduction | informative; the buffer it describes is [`Ctr`] (`physical`: logical entries) |
//! | 2 CSRs | [`csr`]: the CSR table; the optional fields: `CtrConfig` |
//! | 2.1 Machine Control Transfer Records Control Register (mctrctl) | [`csr`] (`mctrctl_check`, `Hart::write_ctrctl`), `CtrConfig::mctrctl_mask` |
//! | 2.2 Supervisor Control Transfer Records Control Register (sctrctl) | [`csr`] (`sctrctl`: `mctrctl` without `CTRCTL_M_ONLY`) |
//! | 2.3 Virtual Supervisor Control Transfer Records Control Register (vsctrctl) | [`csr`], `hypervisor::csr::vs_counterpart` |
//! | 2.4 Supervisor Control Transfer Records Depth Register (sctrdepth) | `Ctr::set_depth`, [`csr`] (`sctrdepth_check`, `Hart::write_sctrdepth`) |
//! | 2.5 Supervisor Control Transfer Records Status Register (sctrstatus) | `Ctr::sctrstatus`, `Ctr::set_wrptr`, `Ctr::physical`, [`csr`] (`Hart::write_sctrstatus`) |
//! | 2.6 CSR Listing | [`csr`] (`TABLE`); the numbers are `vcpu_api::csr` |
//! | 3 Entry Registers | [`csr`] (`entry_check`, behind `sireg*`: `csr::indirect`) |
//! | 3.1 Control Transfer Record Source Register (ctrsource) | [`csr`] (`source_read`, `source_write`) |
//! | 3.2 Control Transfer Record Target Register (ctrtarget) | [`csr`] (`target_read`, `target_write`) |
//! | 3.3 Control Transfer Record Metadata Register (ctrdata) | [`csr`] (`data_read`, `data_write`); a record's: `Ctr::data` |
//! | 4 Instructions, 4.1 Supervisor CTR Clear Instruction | `record.rs` (`Hart::sctrclr`), `execute::system` (`Hart::exec_sctrclr`) |
//! | 5 State Enable Access Control | [`csr`] (`ctr_check`, `sctrdepth_check`, `entry_check`), `Hart::exec_sctrclr` |
//! | 6 Behavior | `record.rs`; `Ctr::push` here; the records of translated code: `log.rs`, drained by `record.rs` (`Hart::ctr_drain`) |
//! | 6.1 Privilege Mode Transitions | `record.rs` (`Hart::ctr_trap`, `Hart::ctr_trap_return`) |
//! | 6.1.1 Virtualization Mode Transitions | `record.rs` (`ctr_enabled`, `ctr_transition_ctl`) |
//! | 6.1.2 External Traps | `record.rs` (`ctr_external_enabled`) |
//! | 6.2 Transfer Type Filtering | `record.rs` (`Hart::ctr_refresh`); types: `vcpu_api::ctr::jump_type` |
//! | 6.3 Cycle Counting | this file: the CtrCycleCounter of [`Ctr`] (`data`, `set_counting`, `skip_active`) |
//! | 6.4 RAS (Return Address Stack) Emulation Mode | `record.rs` (`ctr_ras`) |
//! | 6.5 Freeze | `record.rs` (`Hart::ctr_trap`), [`csr`] (`sctrstatus.FROZEN`) |
//! | 7 Custom Extensions | not implemented: the Custom[3:0] bits are not in `CTRCTL_OPTIONAL`, so they read 0 |
//!
//! The same map with the tests is in `docs/ctr.md` ("Spec map"). Snapshots of this state are
//! in [`state`].
//!
//! Recording is split in two:
//! - Jumps and branches (types 4, 5, 8-15) never change the privilege mode. Whether one is
//!   recorded depends only on the current mode's enable, FROZEN, RASEMU and the filter bits,
//!   which change only on CSR writes and mode changes; `Hart::ctr_refresh` folds them into
//!   one bit mask per transfer type (`Hart::ctr_mask`), so the interpreter's check is one
//!   load, shift and predictable branch, and 0 when CTR is off.
//! - Traps and trap returns (types 1-3) go through `Hart::ctr_trap` and
//!   `Hart::ctr_trap_return`, which apply tables 7 and 8 and section 6.1.1.
//!
//! Choices the spec leaves to the implementation:
//! - The CTR cycle counter counts the hart's clock (the `mcycle` rate, not affected by
//!   `mcountinhibit`) while CTR is active.
//! - With RASEMU = 1 every record has CCV = 0 (section 6.4 allows this); the counter still
//!   restarts at each record.
//! - `ctrtarget.MISP` is read-only 0: the hart models no branch predictor here.
//! - `ctrsource`/`ctrtarget` keep all 64 bits written (every value is a valid or convertible
//!   address, which WARL allows).
//! - A write of an unsupported `sctrdepth.DEPTH` keeps the old depth; on a depth change
//!   WRPTR keeps its low bits (a legal value), and entries keep their contents.

pub mod csr;
pub(crate) mod log;
mod record;
pub mod state;

pub use vcpu_api::ctr::*;

/// The CTR state of a hart: the circular buffer Smctr 1 "Introduction" describes, and the
/// registers of chapter 2 "CSRs".
#[derive(Clone, Debug)]
pub struct Ctr {
    /// What the hart implements (`None`: no Smctr/Ssctr).
    pub(crate) config: Option<CtrConfig>,
    /// `mctrctl` (`sctrctl` is a view of it).
    pub(crate) mctrctl: u64,
    /// `vsctrctl`.
    pub(crate) vsctrctl: u64,
    /// `sctrdepth.DEPTH`.
    pub(crate) depth: u8,
    /// `sctrstatus.WRPTR`.
    pub(crate) wrptr: u64,
    /// `sctrstatus.FROZEN`.
    pub(crate) frozen: bool,
    /// The physical buffer. Always 256 entries, so that a `u8` index needs no bounds check;
    /// only the first `max_depth` are ever selected by a supported depth.
    pub(crate) entries: [CtrEntry; 256],
    /// Depth - 1 (kept with `depth`), so recording masks WRPTR without a shift.
    depth_mask: u64,
    /// `ctrdata` bits a record can set, from the configuration: TYPE (0xf or 0).
    type_mask: u64,
    /// Cycle counting's CCE width, from the configuration.
    cce_bits: Option<u8>,
    /// Cycle counts below this are recorded by the fast path: 4096 (CCE = 0, no encoding)
    /// with cycle counting, 0 (never) without.
    fast_cc_limit: u64,
    /// Whether the CtrCycleCounter runs (CTR active in the current mode).
    cc_active: bool,
    /// While active: the clock value at which the counter was 0; while inactive: the count.
    cc_origin: u64,
    /// The CCV bit of the next record: 0 after xctrctl writes and SCTRCLR, else CCV. While it
    /// is 0, `Hart::ctr_fast_mask` is 0 (`Hart::ctr_refresh_fast`): the records translated
    /// code logs (`log`) have CCV = 1.
    next_ccv: u64,
    /// RASEMU of the register in effect in the current mode (set by `ctr_refresh`).
    rasemu: bool,
}

impl Ctr {
    pub(crate) fn new(config: Option<CtrConfig>) -> Ctr {
        let entries = [CtrEntry::default(); 256];
        // Reset DEPTH: the smallest supported depth.
        let depth = config
            .as_ref()
            .map_or(0, |c| c.depths.trailing_zeros() as u8);
        let type_mask = if config.as_ref().is_some_and(|c| c.type_field) {
            0xf
        } else {
            0
        };
        let cce_bits = config.as_ref().and_then(|c| c.cce_bits);
        Ctr {
            config,
            mctrctl: 0,
            vsctrctl: 0,
            depth,
            wrptr: 0,
            frozen: false,
            entries,
            depth_mask: (16 << depth) - 1,
            type_mask,
            cce_bits,
            fast_cc_limit: if cce_bits.is_some() { 4096 } else { 0 },
            cc_active: false,
            cc_origin: 0,
            next_ccv: 0,
            rasemu: false,
        }
    }

    /// Select DEPTH `d` (supported; Smctr 2.4
    /// "Supervisor Control Transfer Records Depth Register (sctrdepth)"); WRPTR stays legal
    /// (2.5 "Supervisor Control Transfer Records Status Register (sctrstatus)").
    pub(crate) fn set_depth(&mut self, d: u8) {
        self.depth = d;
        self.depth_mask = (16 << d) - 1;
        self.wrptr &= self.depth_mask;
    }

    /// Set WRPTR (bits above depth - 1 are read-only 0; Smctr 2.5
    /// "Supervisor Control Transfer Records Status Register (sctrstatus)").
    pub(crate) fn set_wrptr(&mut self, v: u64) {
        self.wrptr = v & self.depth_mask;
    }

    /// The CtrCycleCounter's value at clock `now`.
    #[inline]
    fn cycle_count(&self, now: u64) -> u64 {
        if self.cc_active {
            now.wrapping_sub(self.cc_origin)
        } else {
            self.cc_origin
        }
    }

    /// The CtrCycleCounter's value at clock `now` (for snapshots).
    pub(crate) fn saved_cycle_count(&self, now: u64) -> u64 {
        self.cycle_count(now)
    }

    /// Whether the next record has CCV = 1 (for snapshots).
    pub(crate) fn saved_next_ccv(&self) -> bool {
        self.next_ccv != 0
    }

    /// Restore the CtrCycleCounter (stopped; `ctr_refresh` restarts it if CTR is active).
    pub(crate) fn restore_cycle_counter(&mut self, count: u64, next_ccv: bool, _now: u64) {
        self.cc_active = false;
        self.cc_origin = count;
        self.next_ccv = if next_ccv { CTRDATA_CCV } else { 0 };
    }

    /// Start or stop the CtrCycleCounter, keeping its value (Smctr 6.3 "Cycle Counting": it
    /// counts only while CTR is active).
    fn set_counting(&mut self, active: bool, now: u64) {
        let c = self.cycle_count(now);
        self.cc_active = active;
        self.cc_origin = if active { now.wrapping_sub(c) } else { c };
    }

    /// Whether the hart implements Smctr/Ssctr.
    #[inline]
    pub(crate) fn implemented(&self) -> bool {
        self.config.is_some()
    }

    /// The selected depth (entries).
    #[inline]
    pub(crate) fn depth_entries(&self) -> u64 {
        16 << self.depth
    }

    /// Physical entry of logical entry `x` (< depth): (WRPTR - x - 1) % depth (Smctr 2.5
    /// "Supervisor Control Transfer Records Status Register (sctrstatus)").
    pub(crate) fn physical(&self, x: u64) -> usize {
        (self.wrptr.wrapping_sub(x).wrapping_sub(1) & self.depth_mask) as usize
    }

    /// `sctrstatus`: WRPTR and FROZEN (Smctr 2.5
    /// "Supervisor Control Transfer Records Status Register (sctrstatus)").
    pub(crate) fn sctrstatus(&self) -> u64 {
        self.wrptr | if self.frozen { SCTRSTATUS_FROZEN } else { 0 }
    }

    /// Reset the cycle counter (xctrctl writes and SCTRCLR; Smctr 6.3 "Cycle Counting").
    pub(crate) fn reset_cycle_counter(&mut self, now: u64) {
        self.cc_origin = if self.cc_active { now } else { 0 };
        self.next_ccv = 0;
    }

    /// Whether anything can make a trap matter to CTR (recording or freezing).
    #[inline]
    pub(crate) fn watching(&self) -> bool {
        const ANY: u64 = CTRCTL_U | CTRCTL_S | CTRCTL_M | CTRCTL_BPFRZ | CTRCTL_LCOFIFRZ;
        (self.mctrctl | self.vsctrctl) & ANY != 0
    }

    /// The `ctrdata` of a new record of type `t` (Smctr 3.3
    /// "Control Transfer Record Metadata Register (ctrdata)"): TYPE, and CCV/CC from the
    /// cycle counter, which restarts (6.3 "Cycle Counting").
    #[inline]
    fn data(&mut self, t: u8, now: u64, rasemu: bool) -> u64 {
        let mut d = t as u64 & self.type_mask;
        if let Some(cce) = self.cce_bits {
            d |= (encode_cc(self.cycle_count(now), cce) as u64) << 16;
            if !rasemu {
                d |= self.next_ccv;
            }
        }
        self.cc_origin = if self.cc_active { now } else { 0 };
        self.next_ccv = CTRDATA_CCV;
        d
    }

    /// Record a transfer at WRPTR and advance WRPTR (Smctr chapter 6 "Behavior").
    #[inline]
    fn push(&mut self, source: u64, target: u64, t: u8, now: u64, rasemu: bool) {
        let data = self.data(t, now, rasemu);
        self.write_entry(source, target, data);
    }

    #[inline(always)]
    fn write_entry(&mut self, source: u64, target: u64, data: u64) {
        self.entries[self.wrptr as u8 as usize] = CtrEntry {
            source: source | CTRSOURCE_V,
            target: target & !1,
            data,
        };
        self.wrptr = (self.wrptr + 1) & self.depth_mask;
    }

    /// `n` records of the common kind (those `push_active` writes), the last at clock `now`,
    /// that later records of the same drain overwrite (`crate::Hart::ctr_drain`): WRPTR moves
    /// on and the cycle counter restarts at the last, as pushing them would leave them.
    fn skip_active(&mut self, n: u64, now: u64) {
        self.wrptr = (self.wrptr + n) & self.depth_mask;
        if self.cce_bits.is_some() {
            self.cc_origin = now;
            self.next_ccv = CTRDATA_CCV;
        }
    }

    /// `push` for a jump or branch in the current mode, which is active (the caller's mask
    /// says so), so the cycle counter is running and RASEMU is off (CC encoded as Smctr 6.3
    /// "Cycle Counting" says). Jump and branch targets are even, so `ctrtarget.MISP` needs
    /// no masking.
    #[inline(always)]
    fn push_active(&mut self, source: u64, target: u64, t: u8, now: u64) {
        let mut data = t as u64 & self.type_mask;
        if let Some(cce) = self.cce_bits {
            let c = now.wrapping_sub(self.cc_origin);
            let cc = if c < 4096 {
                c
            } else {
                encode_cc_slow(c, cce) as u64
            };
            data |= (cc << 16) | self.next_ccv;
            self.cc_origin = now;
            self.next_ccv = CTRDATA_CCV;
        }
        self.entries[self.wrptr as u8 as usize] = CtrEntry {
            source: source | CTRSOURCE_V,
            target,
            data,
        };
        self.wrptr = (self.wrptr + 1) & self.depth_mask;
    }
}
