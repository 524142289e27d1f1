//! Where the hart's triggers fire: the checks on instruction fetches, loads and stores, and
//! the breakpoint exception they raise (action 0); the debugger's points (`debugger.rs`)
//! are checked here first. Only called while some trigger is
//! [`armed`](super::Triggers::armed): the hart then runs no translated code, checks the
//! execute triggers before each fetch (`interp.rs`), and keeps no load or store TLB
//! entries, so that every load and store reaches a slow path that calls these
//! (`mmu/mod.rs`, `execute/atomic.rs`, `execute/hypervisor.rs`).
//!
//! Timing: every trigger fires *before* its instruction (`hit` = 1): an execute trigger
//! before the fetch (the instruction address breakpoint has the highest priority of an
//! instruction's own exceptions, privileged spec table "Synchronous exception priority",
//! debug spec 5.3), a load or store trigger before the access is translated (above
//! address-misaligned, page and access faults; illegal-instruction has been decided
//! already), so the access does not happen. `xepc` is the instruction's address, `xtval`
//! the compare value that matched (5.7 `mcontrol6`).
//!
//! Privilege: a trigger is enabled by the filter bit (`m`, `s`, `u`, `vs`, `vu`) of the mode
//! the hart executes in, also for the accesses of MPRV and of HLV/HSV (the hart's mode,
//! not the access's effective one).
//!
//! Reentrancy (5.4, "Native Triggers", the first of its two solutions; there is no
//! `tcontrol`): a trigger with action 0 does not match in M-mode while `mstatus.MIE` = 0,
//! in S-mode while `medeleg[3]` = 1 and `sstatus.SIE` = 0, and in VS-mode while
//! `medeleg[3]` = 1, `hedeleg[3]` = 1 and `vsstatus.SIE` = 0: a handler that runs with its
//! interrupts off is not re-entered by the breakpoints it would take itself.

use super::debugger::STOP_CAUSE;
use super::{mode_bit, EXECUTE, LOAD, STORE};
use crate::csr::{MSTATUS_MIE, MSTATUS_SIE};
use crate::hart::{Hart, PrivilegeMode};
use crate::trap::{cause, Exception};

const BREAKPOINT_BIT: u64 = 1 << cause::BREAKPOINT;

impl Hart {
    /// The `mcontrol6` filter bit of the current mode, or `None` while triggers with
    /// action 0 may not match (5.4).
    fn trigger_mode(&self) -> Option<u64> {
        let medeleg = self.csr.medeleg & BREAKPOINT_BIT != 0;
        let quiet = match (self.prv, self.virt) {
            (PrivilegeMode::Machine, _) => self.csr.mstatus & MSTATUS_MIE == 0,
            (PrivilegeMode::Supervisor, false) => medeleg && self.csr.mstatus & MSTATUS_SIE == 0,
            (PrivilegeMode::Supervisor, true) => {
                medeleg
                    && self.csr.h.hedeleg & BREAKPOINT_BIT != 0
                    && self.csr.h.vsstatus & MSTATUS_SIE == 0
            }
            (PrivilegeMode::User, _) => false,
        };
        (!quiet).then(|| mode_bit(self.prv, self.virt))
    }

    /// The breakpoint of the triggers matching an access of `kind` (a set of [`EXECUTE`],
    /// [`LOAD`], [`STORE`]: an AMO is both a load and a store) of `len` bytes at `addr`,
    /// with their `hit` bits set; `None` when none matches.
    /// A debugger point (`debugger.rs`) that matches comes first, in any mode: it stops
    /// the hart with the internal [`STOP_CAUSE`] exception, which is never taken.
    fn trigger_fire(&mut self, kind: u64, addr: u64, len: u64) -> Option<Exception> {
        if !self.trig.bank.is_empty() {
            if let Some(hit) = self.trig.bank.matching(kind, addr, len, self.pc) {
                self.trig.bank.hit = Some(hit);
                return Some(Exception::new(STOP_CAUSE, addr));
            }
        }
        if !self.trig.guest_armed {
            return None;
        }
        let mode = self.trigger_mode()?;
        let mut hits = 0u32;
        let mut tval = 0;
        for k in [EXECUTE, LOAD, STORE] {
            if kind & k != 0 {
                let (h, t) = self.trig.matching(k, mode, addr, len);
                if h != 0 && (hits == 0 || h.trailing_zeros() < hits.trailing_zeros()) {
                    tval = t;
                }
                hits |= h;
            }
        }
        if hits == 0 {
            return None;
        }
        self.trig.fired(hits);
        Some(Exception::new(cause::BREAKPOINT, tval))
    }

    /// Before fetching the instruction at `pc` (triggers armed): its execute address
    /// breakpoint, if a trigger matches.
    #[inline]
    pub(crate) fn trigger_fetch(&mut self) -> Result<(), Exception> {
        // The usual case under a debugger: no guest trigger, no execute point here.
        if !self.trig.guest_armed && !self.trig.bank.may_execute(self.pc) {
            return Ok(());
        }
        match self.trigger_fire(EXECUTE, self.pc, 1) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Before a load (`store` false) or store of `len` bytes at virtual address `va`
    /// (triggers armed): its address breakpoint, if a trigger matches.
    #[cold]
    pub(crate) fn trigger_data(&mut self, va: u64, len: u64, store: bool) -> Result<(), Exception> {
        let kind = if store { STORE } else { LOAD };
        match self.trigger_fire(kind, va, len) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Before an LR (a load), SC (a store) or AMO (a load and a store: 5.5.1 "A
    /// Extension") of `len` bytes at `va` (triggers armed).
    #[cold]
    pub(crate) fn trigger_atomic(&mut self, va: u64, len: u64, kind: u64) -> Result<(), Exception> {
        match self.trigger_fire(kind, va, len) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
