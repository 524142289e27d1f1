//! The recording rules of Smctr chapter 6 "Behavior", as `impl Hart`: "6.1
//! Privilege Mode Transitions" (traps and trap returns: [`Hart::ctr_trap`],
//! [`Hart::ctr_trap_return`]), "6.1.1 Virtualization Mode Transitions" (`ctr_enabled`,
//! `ctr_transition_ctl`), "6.1.2 External Traps" (`ctr_external_enabled`), "6.2
//! Transfer Type Filtering" (folded into one mask per mode by [`Hart::ctr_refresh`]), "6.4
//! RAS (Return Address Stack) Emulation Mode" (`ctr_ras`) and "6.5 Freeze" (in `ctr_trap`);
//! and SCTRCLR, "4.1 Supervisor CTR Clear Instruction" ([`Hart::sctrclr`]). "6.3
//! Cycle Counting" is the buffer's (`mod.rs`).

use super::*;
use crate::hart::{Hart, PrivilegeMode};
use crate::trap::TrapTarget;

/// A privilege mode with the virtualization mode, as CTR sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mode {
    prv: PrivilegeMode,
    virt: bool,
}

impl Hart {
    /// Whether `mode` is enabled for recording: `mctrctl.{M,S,U}` with V = 0,
    /// `vsctrctl.{S,U}` with V = 1 (Smctr 6.1 "Privilege Mode Transitions", 6.1.1
    /// "Virtualization Mode Transitions").
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

    /// Recompute what the interpreter records in the current mode (`ctr_mask`: Smctr 6.2
    /// "Transfer Type Filtering", and 6.4 "RAS (Return Address Stack) Emulation Mode") and
    /// whether the cycle counter runs (6.3 "Cycle Counting"). Called after every change of
    /// mode, `xctrctl` or FROZEN.
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
        self.ctr_refresh_fast();
    }

    /// Recompute `ctr_fast_mask`: `ctr_mask` while records take the common path (RASEMU off)
    /// and the next record has CCV = 1 (Smctr 6.3 "Cycle Counting": not the first after an
    /// `xctrctl` write or SCTRCLR), else 0. Called wherever either changes.
    #[inline]
    pub(crate) fn ctr_refresh_fast(&mut self) {
        self.ctr_fast_mask = if self.ctr.rasemu || !self.ctr.saved_next_ccv() {
            0
        } else {
            self.ctr_mask
        };
    }

    /// Smctr chapter 6 "Behavior" for jumps (types 8-15 of 6.2 "Transfer Type Filtering").
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

    /// Smctr chapter 6 "Behavior" for taken branches (type 5). A qualified taken branch has
    /// retired; `pc` is its target, `offset` its offset.
    /// (Branches are never recorded with RASEMU: the mask excludes them.)
    #[cold]
    #[inline(never)]
    pub(crate) fn ctr_taken_branch(&mut self, offset: u64) {
        self.ctr_push_fast(self.pc.wrapping_sub(offset), ty::TAKEN_BRANCH);
    }

    /// Smctr chapter 6 "Behavior" for not-taken branches (type 4, NTBREN). A qualified
    /// not-taken branch of length `len` has retired; `pc` is past it.
    #[cold]
    #[inline(never)]
    pub(crate) fn ctr_not_taken_branch(&mut self, len: u64) {
        self.ctr_push_fast(self.pc.wrapping_sub(len), ty::NOT_TAKEN_BRANCH);
    }

    /// A qualified jump or branch of type `t` from `from` has retired and `pc` is its
    /// target (the block translator's record, with the clock already at the transfer;
    /// Smctr chapter 6 "Behavior").
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

    /// Move the records translated code logged since it was entered (`log`) into the
    /// buffer, in order, each at the clock of its transfer: what [`Hart::ctr_transfer`]'s
    /// common path would have written, record by record. Only the last DEPTH are written;
    /// the earlier ones move WRPTR and the cycle counter on (the same drain would overwrite
    /// them). Called whenever translated code returns, and by the helpers that may touch
    /// CTR state, before they do (translated code calls those through
    /// `jit::x64::call_draining`, which puts the log's pointer in the hart first); a no-op
    /// when the log is empty.
    #[inline]
    pub(crate) fn ctr_drain(&mut self) {
        if !self.ctr_log.is_empty() {
            self.ctr_drain_log();
        }
    }

    #[cold]
    #[inline(never)]
    fn ctr_drain_log(&mut self) {
        let clock = self.jit_clock;
        let records = self.ctr_log.take();
        let c = &mut self.ctr;
        let skip = records.len().saturating_sub(c.depth_entries() as usize);
        if let Some(last) = skip.checked_sub(1).map(|i| records.get(i)) {
            c.skip_active(skip as u64, clock - last.budget);
        }
        for i in skip..records.len() {
            let r = records.get(i);
            c.push_active(r.source | CTRSOURCE_V, r.target(), r.t(), clock - r.budget);
        }
    }

    #[inline(never)]
    fn ctr_push_general(&mut self, from: u64, t: u8) {
        let now = self.ctr_now();
        self.ctr.push_active(from, self.pc, t, now);
    }

    /// A qualified jump of type `t` from `from` to `pc` with RASEMU = 1: calls push,
    /// returns pop, co-routine swaps overwrite (Smctr 6.4
    /// "RAS (Return Address Stack) Emulation Mode").
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
    /// address `handler`: freeze (6.5 Freeze) or record it (6.1 Privilege Mode Transitions,
    /// tables 7 and 8; 6.1.1 Virtualization Mode Transitions; 6.1.2 External Traps).
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
    /// (Smctr 6.1 "Privilege Mode Transitions", table 7; filter and RASEMU per 6.1.1
    /// "Virtualization Mode Transitions").
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
    /// `vsctrctl` if either side has V = 1 (Smctr 6.1.1 "Virtualization Mode Transitions"),
    /// otherwise `mctrctl`.
    fn ctr_transition_ctl(&self, from: Mode, to: Mode) -> u64 {
        if from.virt || to.virt {
            self.ctr.vsctrctl
        } else {
            self.ctr.mctrctl
        }
    }

    /// Smctr 6.1.2 "External Traps", table 8 "External Trap Enable Requirements": the
    /// external trap enables required for a trap from `from` into `to`.
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

    /// SCTRCLR (Smctr 4.1 "Supervisor CTR Clear Instruction"): zero every entry register,
    /// for all depths, and the cycle counter with CCV (the access rules of chapter 5 are
    /// `Hart::exec_sctrclr`'s).
    #[cold]
    #[inline(never)]
    pub(crate) fn sctrclr(&mut self) {
        let now = self.ctr_now();
        self.ctr.entries.fill(CtrEntry::default());
        self.ctr.reset_cycle_counter(now);
        self.ctr_refresh_fast();
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
