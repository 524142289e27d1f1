//! Control Transfer Records (Smctr/Ssctr v1.0): the CTR buffer, its configuration per hart,
//! and the recording rules of the spec's chapter 6. The CSRs and entry registers (chapters 2,
//! 3 and 5) are in `csr::ctr`; SCTRCLR (chapter 4) is [`Hart::sctrclr`].
//!
//! Recording is split in two:
//! - Jumps and branches (types 4, 5, 8-15) never change the privilege mode. Whether one is
//!   recorded depends only on the current mode's enable, FROZEN, RASEMU and the filter bits,
//!   which change only on CSR writes and mode changes; [`Hart::ctr_refresh`] folds them into
//!   one bit mask per transfer type (`Hart::ctr_mask`), so the interpreter's check is one
//!   load, shift and predictable branch, and 0 when CTR is off.
//! - Traps and trap returns (types 1-3) go through [`Hart::ctr_trap`] and
//!   [`Hart::ctr_trap_return`], which apply tables 7 and 8 and section 6.1.1.
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
pub mod state;

use crate::hart::{Hart, PrivilegeMode};
use crate::trap::TrapTarget;

pub use vcpu_api::ctr::*;

/// The CTR state of a hart.
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
    pub(crate) entries: Box<[CtrEntry; 256]>,
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
    /// The CCV bit of the next record: 0 after xctrctl writes and SCTRCLR, else CCV.
    next_ccv: u64,
    /// RASEMU of the register in effect in the current mode (set by `ctr_refresh`).
    rasemu: bool,
}

/// Byte offsets of the fields the block translator's inline record uses (from the `Ctr`).
#[cfg(target_arch = "x86_64")]
pub(crate) struct CtrLayout {
    pub(crate) wrptr: usize,
    pub(crate) entries: usize,
    pub(crate) depth_mask: usize,
    pub(crate) cc_origin: usize,
    pub(crate) next_ccv: usize,
}

impl Ctr {
    /// Where the inline record of translated code finds the state [`Hart::ctr_transfer`]'s
    /// fast path uses (see `jit::x64`).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn layout() -> CtrLayout {
        use std::mem::offset_of;
        CtrLayout {
            wrptr: offset_of!(Ctr, wrptr),
            entries: offset_of!(Ctr, entries),
            depth_mask: offset_of!(Ctr, depth_mask),
            cc_origin: offset_of!(Ctr, cc_origin),
            next_ccv: offset_of!(Ctr, next_ccv),
        }
    }

    /// The `ctrdata.TYPE` bits a record can set (0xf, or 0 without the TYPE field): fixed by
    /// the configuration.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn type_bits(&self) -> u64 {
        self.type_mask
    }

    /// Whether records count cycles (`ctrdata.CC`): fixed by the configuration.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn counts_cycles(&self) -> bool {
        self.cce_bits.is_some()
    }

    pub(crate) fn new(config: Option<CtrConfig>) -> Ctr {
        let entries = Box::new([CtrEntry::default(); 256]);
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

    /// Select DEPTH `d` (supported); WRPTR stays legal (section 2.5).
    pub(crate) fn set_depth(&mut self, d: u8) {
        self.depth = d;
        self.depth_mask = (16 << d) - 1;
        self.wrptr &= self.depth_mask;
    }

    /// Set WRPTR (bits above depth - 1 are read-only 0).
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

    /// Start or stop the CtrCycleCounter, keeping its value.
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

    /// Physical entry of logical entry `x` (< depth): (WRPTR - x - 1) % depth (section 2.5).
    pub(crate) fn physical(&self, x: u64) -> usize {
        (self.wrptr.wrapping_sub(x).wrapping_sub(1) & self.depth_mask) as usize
    }

    /// `sctrstatus`.
    pub(crate) fn sctrstatus(&self) -> u64 {
        self.wrptr | if self.frozen { SCTRSTATUS_FROZEN } else { 0 }
    }

    /// Reset the cycle counter (xctrctl writes and SCTRCLR; section 6.3).
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

    /// The `ctrdata` of a new record of type `t`: TYPE, and CCV/CC from the cycle counter,
    /// which restarts.
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

    /// Record a transfer at WRPTR and advance WRPTR (chapter 6).
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

    /// `push` for a jump or branch in the current mode, which is active (the caller's mask
    /// says so), so the cycle counter is running and RASEMU is off. Jump and branch targets
    /// are even, so `ctrtarget.MISP` needs no masking.
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

/// A privilege mode with the virtualization mode, as CTR sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mode {
    prv: PrivilegeMode,
    virt: bool,
}

impl Hart {
    /// Whether `mode` is enabled for recording: `mctrctl.{M,S,U}` with V = 0,
    /// `vsctrctl.{S,U}` with V = 1 (section 6.1.1).
    fn ctr_enabled(&self, m: Mode) -> bool {
        let (ctl, bit) = match (m.prv, m.virt) {
            (PrivilegeMode::Machine, _) => (self.ctr.mctrctl, CTRCTL_M),
            (PrivilegeMode::Supervisor, false) => (self.ctr.mctrctl, CTRCTL_S),
            (PrivilegeMode::User, false) => (self.ctr.mctrctl, CTRCTL_U),
            (PrivilegeMode::Supervisor, true) => (self.ctr.vsctrctl, CTRCTL_S),
            (PrivilegeMode::User, true) => (self.ctr.vsctrctl, CTRCTL_U),
        };
        ctl & bit != 0
    }

    fn ctr_now(&self) -> u64 {
        self.vclock
    }

    /// Recompute what the interpreter records in the current mode (`ctr_mask`) and whether
    /// the cycle counter runs. Called after every change of mode, `xctrctl` or FROZEN.
    #[inline(never)]
    pub(crate) fn ctr_refresh(&mut self) {
        if !self.ctr.implemented() {
            return;
        }
        let mode = Mode {
            prv: self.prv,
            virt: self.virt,
        };
        let active = self.ctr_enabled(mode) && !self.ctr.frozen;
        let now = self.ctr_now();
        self.ctr.set_counting(active, now);
        let ctl = if self.virt {
            self.ctr.vsctrctl
        } else {
            self.ctr.mctrctl
        };
        self.ctr.rasemu = ctl & CTRCTL_RASEMU != 0;
        self.ctr_mask = if !active {
            0
        } else {
            if self.ctr.rasemu {
                // Section 6.4: calls, returns and co-routine swaps only; filters ignored.
                (1 << ty::INDIRECT_CALL)
                    | (1 << ty::DIRECT_CALL)
                    | (1 << ty::CO_ROUTINE_SWAP)
                    | (1 << ty::FUNCTION_RETURN)
            } else {
                let inh = (ctl >> 32) as u16;
                let mut m = !inh & 0xff20; // types 5 and 8-15 unless inhibited
                if ctl & CTRCTL_NTBREN != 0 {
                    m |= 1 << ty::NOT_TAKEN_BRANCH;
                }
                m
            }
        };
        self.ctr_fast_mask = if self.ctr.rasemu { 0 } else { self.ctr_mask };
    }

    /// A qualified JAL/JALR has retired (the caller checked `ctr_mask`): `pc` is its target
    /// and its link register `rd` (the x0 sink included) holds its pc + `len`; `t` is its
    /// transfer type. Scalars, not the `Insn`, so the interpreter keeps it in registers.
    #[cold]
    #[inline(never)]
    pub(crate) fn ctr_jump(&mut self, rd: u8, len: u8, t: u8) {
        let from = self.x[rd as usize & 63].wrapping_sub(len as u64);
        if self.ctr.rasemu {
            return self.ctr_ras(from, t);
        }
        self.ctr_push_fast(from, t);
    }

    /// A qualified taken branch has retired; `pc` is its target, `offset` its offset.
    /// (Branches are never recorded with RASEMU: the mask excludes them.)
    #[cold]
    #[inline(never)]
    pub(crate) fn ctr_taken_branch(&mut self, offset: u64) {
        self.ctr_push_fast(self.pc.wrapping_sub(offset), ty::TAKEN_BRANCH);
    }

    /// A qualified not-taken branch of length `len` has retired; `pc` is past it.
    #[cold]
    #[inline(never)]
    pub(crate) fn ctr_not_taken_branch(&mut self, len: u64) {
        self.ctr_push_fast(self.pc.wrapping_sub(len), ty::NOT_TAKEN_BRANCH);
    }

    /// A qualified jump or branch of type `t` from `from` has retired and `pc` is its
    /// target (the block translator's record, with the clock already at the transfer).
    #[inline(never)]
    pub(crate) fn ctr_transfer(&mut self, from: u64, t: u8) {
        if self.ctr.rasemu {
            return self.ctr_ras(from, t);
        }
        self.ctr_push_fast(from, t);
    }

    /// Record a jump or branch from `from` to `pc` in the current (active) mode. The common
    /// case, a cycle count below 4096, is a leaf with no stack frame; anything else is a tail
    /// call to [`Hart::ctr_push_general`].
    #[inline(always)]
    fn ctr_push_fast(&mut self, from: u64, t: u8) {
        let now = self.ctr_now();
        let c = &mut self.ctr;
        let count = now.wrapping_sub(c.cc_origin);
        if count >= c.fast_cc_limit {
            return self.ctr_push_general(from, t);
        }
        let data = (t as u64 & c.type_mask) | (count << 16) | c.next_ccv;
        c.cc_origin = now;
        c.next_ccv = CTRDATA_CCV;
        c.entries[c.wrptr as u8 as usize] = CtrEntry {
            source: from | CTRSOURCE_V,
            target: self.pc,
            data,
        };
        c.wrptr = (c.wrptr + 1) & c.depth_mask;
    }

    #[inline(never)]
    fn ctr_push_general(&mut self, from: u64, t: u8) {
        let now = self.ctr_now();
        self.ctr.push_active(from, self.pc, t, now);
    }

    /// A qualified jump of type `t` from `from` to `pc` with RASEMU = 1: calls push, returns
    /// pop, co-routine swaps overwrite (section 6.4).
    #[inline(never)]
    fn ctr_ras(&mut self, from: u64, t: u8) {
        let (to, now) = (self.pc, self.ctr_now());
        let c = &mut self.ctr;
        match t {
            ty::FUNCTION_RETURN => {
                // Decrement WRPTR, then invalidate that entry.
                c.wrptr = c.wrptr.wrapping_sub(1) & c.depth_mask;
                c.entries[c.wrptr as u8 as usize].source &= !CTRSOURCE_V;
                c.data(t, now, true);
            }
            ty::CO_ROUTINE_SWAP => {
                // Overwrite logical entry 0; WRPTR unchanged.
                c.wrptr = c.wrptr.wrapping_sub(1) & c.depth_mask;
                c.push(from, to, t, now, true);
            }
            _ => c.push(from, to, t, now, true),
        }
    }

    /// A trap is about to be taken from the current mode into `target`, at the handler
    /// address `handler`: freeze (section 6.5) or record it (tables 7 and 8, section 6.1.1).
    #[cold]
    #[inline(never)]
    pub(crate) fn ctr_trap(
        &mut self,
        code: u64,
        interrupt: bool,
        target: TrapTarget,
        handler: u64,
    ) {
        use crate::trap::{cause, irq};
        let from = Mode {
            prv: self.prv,
            virt: self.virt,
        };
        let to = match target {
            TrapTarget::M => Mode {
                prv: PrivilegeMode::Machine,
                virt: false,
            },
            TrapTarget::Hs => Mode {
                prv: PrivilegeMode::Supervisor,
                virt: false,
            },
            TrapTarget::Vs => Mode {
                prv: PrivilegeMode::Supervisor,
                virt: true,
            },
        };
        // Freeze: BPFRZ/LCOFIFRZ of the register of the target mode (vsctrctl for VS).
        let frz = if to.virt {
            self.ctr.vsctrctl
        } else {
            self.ctr.mctrctl
        };
        let freeze = if interrupt {
            code == irq::LCOFI && frz & CTRCTL_LCOFIFRZ != 0
        } else {
            code == cause::BREAKPOINT && frz & CTRCTL_BPFRZ != 0
        };
        if freeze {
            self.ctr.frozen = true;
            return;
        }
        if self.ctr.frozen {
            return;
        }
        let ctl = self.ctr_transition_ctl(from, to);
        if ctl & CTRCTL_RASEMU != 0 {
            return;
        }
        let t = if interrupt {
            ty::INTERRUPT
        } else {
            ty::EXCEPTION
        };
        let inhibited = (ctl >> (32 + t)) & 1 != 0;
        let now = self.ctr_now();
        match (self.ctr_enabled(from), self.ctr_enabled(to)) {
            (true, true) if !inhibited => self.ctr.push(self.pc, handler, t, now, false),
            (false, true) if !inhibited => self.ctr.push(0, handler, t, now, false),
            // External trap (section 6.1.2): the enables of the target and every
            // intervening mode; EXCINH/INTRINH do not apply.
            (true, false) if self.ctr_external_enabled(from, to) => {
                self.ctr.push(self.pc, 0, t, now, false)
            }
            _ => {}
        }
    }

    /// A trap return from `from` at `pc` has moved the hart to the current mode and `self.pc`
    /// (table 7).
    #[cold]
    #[inline(never)]
    pub(crate) fn ctr_trap_return(&mut self, from_prv: PrivilegeMode, from_virt: bool, pc: u64) {
        if !self.ctr.implemented() || self.ctr.frozen {
            return;
        }
        let from = Mode {
            prv: from_prv,
            virt: from_virt,
        };
        let to = Mode {
            prv: self.prv,
            virt: self.virt,
        };
        let ctl = self.ctr_transition_ctl(from, to);
        if ctl & CTRCTL_RASEMU != 0 || (ctl >> (32 + ty::TRAP_RETURN)) & 1 != 0 {
            return;
        }
        if self.ctr_enabled(from) {
            let target = if self.ctr_enabled(to) { self.pc } else { 0 };
            let now = self.ctr_now();
            self.ctr.push(pc, target, ty::TRAP_RETURN, now, false);
        }
    }

    /// The register whose filter and RASEMU fields apply to a transfer between two modes:
    /// `vsctrctl` if either side has V = 1 (section 6.1.1), otherwise `mctrctl`.
    fn ctr_transition_ctl(&self, from: Mode, to: Mode) -> u64 {
        if from.virt || to.virt {
            self.ctr.vsctrctl
        } else {
            self.ctr.mctrctl
        }
    }

    /// Table 8: the external trap enables required for a trap from `from` into `to`.
    fn ctr_external_enabled(&self, from: Mode, to: Mode) -> bool {
        let m = self.ctr.mctrctl;
        let vs = self.ctr.vsctrctl;
        let mte = m & CTRCTL_MTE != 0;
        let ste = m & CTRCTL_STE != 0;
        let vste = vs & CTRCTL_STE != 0;
        let from_vu = from.virt && from.prv == PrivilegeMode::User;
        match (to.prv, to.virt) {
            (PrivilegeMode::Machine, _) => {
                mte && (from.prv == PrivilegeMode::Supervisor && !from.virt || ste)
                    && (!from_vu || vste)
            }
            (_, false) => ste && (!from_vu || vste),
            (_, true) => vste,
        }
    }

    /// SCTRCLR (chapter 4): zero every entry register, for all depths, and the cycle counter
    /// with CCV.
    #[cold]
    #[inline(never)]
    pub(crate) fn sctrclr(&mut self) {
        let now = self.ctr_now();
        self.ctr.entries.fill(CtrEntry::default());
        self.ctr.reset_cycle_counter(now);
    }

    /// The CTR buffer in logical order (entry 0 = youngest) at the current depth.
    pub fn ctr_records(&self) -> Vec<CtrEntry> {
        if !self.ctr.implemented() {
            return Vec::new();
        }
        (0..self.ctr.depth_entries())
            .map(|x| self.ctr.entries[self.ctr.physical(x)])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jump_types_follow_table_10() {
        // JAL
        assert_eq!(jump_type(false, 1, 0), ty::DIRECT_CALL);
        assert_eq!(jump_type(false, 5, 0), ty::DIRECT_CALL);
        assert_eq!(jump_type(false, 0, 0), ty::DIRECT_JUMP);
        assert_eq!(jump_type(false, 7, 0), ty::OTHER_DIRECT_JUMP);
        // JALR
        assert_eq!(jump_type(true, 1, 10), ty::INDIRECT_CALL);
        assert_eq!(jump_type(true, 1, 1), ty::INDIRECT_CALL);
        assert_eq!(jump_type(true, 5, 5), ty::INDIRECT_CALL);
        assert_eq!(jump_type(true, 1, 5), ty::CO_ROUTINE_SWAP);
        assert_eq!(jump_type(true, 5, 1), ty::CO_ROUTINE_SWAP);
        assert_eq!(jump_type(true, 0, 1), ty::FUNCTION_RETURN);
        assert_eq!(jump_type(true, 7, 5), ty::FUNCTION_RETURN);
        assert_eq!(jump_type(true, 0, 6), ty::INDIRECT_JUMP);
        assert_eq!(jump_type(true, 7, 6), ty::OTHER_INDIRECT_JUMP);
    }

    #[test]
    fn cc_encoding_edges() {
        assert_eq!(encode_cc(0, 4), 0);
        assert_eq!(encode_cc(4095, 4), 0x0fff);
        assert_eq!(encode_cc(4096, 4), 0x1000);
        assert_eq!(decode_cc(0x1000), 4096);
        assert_eq!(encode_cc(8191, 4), 0x1fff);
        assert_eq!(encode_cc(8192, 4), 0x2000);
        assert_eq!(decode_cc(0x2000), 8192);
        // Saturation for each exponent width (table 11).
        assert_eq!(encode_cc(4096, 0), 0x0fff);
        assert_eq!(decode_cc(encode_cc(u64::MAX, 1)), 8191);
        assert_eq!(decode_cc(encode_cc(u64::MAX, 2)), 32764);
        assert_eq!(decode_cc(encode_cc(u64::MAX, 3)), 524224);
        assert_eq!(decode_cc(encode_cc(u64::MAX, 4)), 134201344);
        assert_eq!(encode_cc(134201344, 4), 0xffff);
        // Granularity: with CCE = 3 the two low bits are dropped.
        assert_eq!(decode_cc(encode_cc(16384 + 3, 4)), 16384);
    }

    fn hart() -> Hart {
        use vm_memory::{GuestAddress, GuestMemoryMmap};
        let mem =
            GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0x8000_0000), 1 << 16)]).unwrap();
        Hart::new(crate::HartConfig::default(), mem).unwrap()
    }

    /// Section 6.5: an LCOFI (interrupt 13) trapping to M or S with LCOFIFRZ, or to VS with
    /// vsctrctl.LCOFIFRZ, sets FROZEN and is not recorded. No LCOFI can be raised until
    /// Sscofpmf exists, so the trap is taken directly here.
    #[test]
    fn lcofi_freezes_by_the_target_modes_register() {
        use crate::trap::irq::LCOFI;
        for (target, m, vs, frozen) in [
            (TrapTarget::M, CTRCTL_LCOFIFRZ, 0, true),
            (TrapTarget::Hs, CTRCTL_LCOFIFRZ, 0, true),
            (TrapTarget::Vs, CTRCTL_LCOFIFRZ, 0, false),
            (TrapTarget::Vs, 0, CTRCTL_LCOFIFRZ, true),
            (TrapTarget::Hs, 0, CTRCTL_LCOFIFRZ, false),
        ] {
            let mut h = hart();
            h.prv = PrivilegeMode::Supervisor;
            h.virt = true;
            h.ctr.mctrctl = CTRCTL_M | CTRCTL_S | m;
            h.ctr.vsctrctl = CTRCTL_S | vs;
            h.ctr_refresh();
            h.take_interrupt(LCOFI, target);
            assert_eq!(h.ctr.frozen, frozen, "{target:?} m={m:#x} vs={vs:#x}");
            // Frozen: nothing recorded; otherwise the interrupt is (type 2).
            let recorded = h.ctr_records().iter().filter(|e| e.source & 1 != 0).count();
            assert_eq!(recorded, usize::from(!frozen), "{target:?}");
            if !frozen {
                assert_eq!(h.ctr_records()[0].data & 0xf, ty::INTERRUPT as u64);
            }
        }
    }

    #[test]
    fn filter_bits_sit_at_32_plus_type() {
        assert_eq!(CTRCTL_FILTERS >> 32, 0xff3e);
        assert_eq!(CTRCTL_NTBREN, 1 << (32 + ty::NOT_TAKEN_BRANCH));
    }
}
