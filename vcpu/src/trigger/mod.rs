//! Sdtrig debug triggers (RISC-V Debug Specification 1.0, chapter 5 "Sdtrig (ISA
//! Extension)", the Trigger Module): [`COUNT`] triggers, each an `mcontrol6` address match
//! trigger (type 6) or disabled (type 15). This file is the leaf the hart holds
//! ([`Triggers`]: the registers, their WARL rules and the matching rules); the CSR table is
//! in `csr.rs` and the checks the hart makes on fetches, loads and stores are in
//! `check.rs`.
//!
//! What is implemented, and the choices the spec leaves to the implementation:
//! - `tselect` selects trigger 0 to [`COUNT`] - 1; a write of a larger value is ignored
//!   (`tselect` WARL: the enumeration of 5.1 reads back a different value and stops).
//! - `tdata1` holds type 6 (`mcontrol6`) or 15 (disabled); a write of any other type, 0
//!   included, disables the trigger (type 15, every other bit 0). `tinfo` says so: version
//!   1 (the ratified 1.0 layout), info = bits 6 and 15.
//! - There is no Debug Mode (Sdext): `tdata1.dmode` is read-only 0, and `action` is WARL 0
//!   (raise a breakpoint exception), the only action without Debug Mode or a trace encoder.
//! - `mcontrol6`: `execute`, `store`, `load`; the privilege filters `m`, `s`, `u`, `vs`,
//!   `vu`; `match` 0 (equal), 1 (NAPOT, maskmax6 = 63), 2 (>=), 3 (<), 4 and 5 (mask low,
//!   mask high) and their negations 8, 9, 12, 13; `hit1:hit0` set to 1 ("before") when the
//!   trigger fires, writable by software. Read-only 0: `select` (address compare values
//!   only, no data triggers), `size` (0: accesses of any size), `chain` (no chains),
//!   `uncertain` and `uncertainen` (every access is fully observed).
//! - Compare values (`select` = 0): a load or store compares the address of each of its
//!   bytes (the spec's recommendation); an instruction fetch compares the instruction's
//!   address only, since the execute address breakpoint outranks every fetch fault
//!   (5.3, "Priority") and is decided before the instruction's length is known.
//! - `tdata3` (`textra64`) has every field WARL 0 (no context or `mhselect`/`sselect`
//!   conditions): it reads 0 and ignores writes. `tcontrol`, `scontext`, `hcontext`,
//!   `mcontext` and `mscontext` are not implemented (illegal instruction): the reentrancy
//!   problem of 5.4 ("Native Triggers") is solved with its first option instead (see
//!   `check.rs`).
//! - No `icount`, `itrigger`, `etrigger` or `tmexttrigger`.
//! - Besides these, a bank of debugger-owned triggers the guest cannot reach
//!   (`debugger.rs`): a host debugger's breakpoints and watchpoints.

use serde::{Deserialize, Serialize};

pub(crate) mod check;
pub(crate) mod csr;
pub mod debugger;

use vcpu_api::csr::{
    MCONTROL6_ACTION, MCONTROL6_EXECUTE, MCONTROL6_HIT0, MCONTROL6_HIT1, MCONTROL6_LOAD,
    MCONTROL6_M, MCONTROL6_MATCH, MCONTROL6_S, MCONTROL6_STORE, MCONTROL6_U, MCONTROL6_VS,
    MCONTROL6_VU, TDATA1_TYPE, TDATA1_TYPE_DISABLED, TDATA1_TYPE_MCONTROL6,
};

/// The number of triggers.
pub const COUNT: usize = 4;

/// `tinfo` of every trigger: version 1, types 6 (`mcontrol6`) and 15 (disabled).
pub const TINFO: u64 = (1 << 24) | (1 << 6) | (1 << 15);

/// The `mcontrol6` bits this hart keeps (every other bit is read-only 0, type aside).
const MCONTROL6_KEPT: u64 = MCONTROL6_HIT1
    | MCONTROL6_VS
    | MCONTROL6_VU
    | MCONTROL6_HIT0
    | MCONTROL6_MATCH
    | MCONTROL6_M
    | MCONTROL6_S
    | MCONTROL6_U
    | MCONTROL6_EXECUTE
    | MCONTROL6_STORE
    | MCONTROL6_LOAD;

/// The mode filter bits of `mcontrol6`.
const MODES: u64 = MCONTROL6_M | MCONTROL6_S | MCONTROL6_U | MCONTROL6_VS | MCONTROL6_VU;

/// The access kinds of `mcontrol6` (bit values of its `execute`, `store` and `load`).
pub(crate) const EXECUTE: u64 = MCONTROL6_EXECUTE;
/// See [`EXECUTE`].
pub(crate) const STORE: u64 = MCONTROL6_STORE;
/// See [`EXECUTE`].
pub(crate) const LOAD: u64 = MCONTROL6_LOAD;

const MATCH_SHIFT: u32 = 7;

/// What the hart saves of its triggers ([`crate::state::HartState::triggers`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerState {
    /// `tselect`.
    pub tselect: u64,
    /// `tdata1` of each trigger.
    pub tdata1: [u64; COUNT],
    /// `tdata2` of each trigger.
    pub tdata2: [u64; COUNT],
}

impl Default for TriggerState {
    /// The reset state: every trigger disabled (type 15; 5.7: writing 0 to `tdata1` gives
    /// a disabled trigger, which a trigger that supports several types shows as type 15).
    fn default() -> TriggerState {
        TriggerState {
            tselect: 0,
            tdata1: [TDATA1_TYPE_DISABLED; COUNT],
            tdata2: [0; COUNT],
        }
    }
}

impl TriggerState {
    /// Why this state cannot be held by the hart, or `None`.
    pub fn check(&self) -> Option<String> {
        if self.tselect >= COUNT as u64 {
            return Some(format!(
                "tselect = {} selects no trigger (the hart has {COUNT})",
                self.tselect
            ));
        }
        for (i, &t) in self.tdata1.iter().enumerate() {
            if legalize_tdata1(t) != t {
                return Some(format!(
                    "tdata1 of trigger {i} = {t:#x} is not a legal value"
                ));
            }
        }
        None
    }
}

/// The legal value of `tdata1` written as `v` (see the module documentation).
pub fn legalize_tdata1(v: u64) -> u64 {
    if v & TDATA1_TYPE != TDATA1_TYPE_MCONTROL6 {
        return TDATA1_TYPE_DISABLED;
    }
    let mut t = TDATA1_TYPE_MCONTROL6 | (v & MCONTROL6_KEPT);
    // match: the reserved values 6, 7, 10, 11, 14, 15 are not kept.
    if !matches!(
        (t & MCONTROL6_MATCH) >> MATCH_SHIFT,
        0..=5 | 8 | 9 | 12 | 13
    ) {
        t &= !MCONTROL6_MATCH;
    }
    debug_assert_eq!(t & MCONTROL6_ACTION, 0);
    t
}

/// The legal value of `tdata2` written as `v` while `tdata1` is `t1`: with NAPOT matching
/// (`match` 1 or 9) bits 62:0 may not all be set (maskmax6 = 63: "if bits maskmax6-1:0 are
/// written with all ones then bit maskmax6-1 will be set to 0"); otherwise any value (an
/// address of any translation mode, 5.5.5 "Address Matches").
pub fn legalize_tdata2(t1: u64, v: u64) -> u64 {
    let napot = t1 & TDATA1_TYPE == TDATA1_TYPE_MCONTROL6
        && matches!((t1 & MCONTROL6_MATCH) >> MATCH_SHIFT, 1 | 9);
    if napot && v & (u64::MAX >> 1) == u64::MAX >> 1 {
        v & !(1 << 62)
    } else {
        v
    }
}

/// Whether compare value `x` matches `tdata2` = `t2` under `match` = `m` (the `match` field
/// of `mcontrol6`, XLEN = 64).
fn compare(m: u64, t2: u64, x: u64) -> bool {
    let hit = match m & 7 {
        0 => x == t2,
        1 => {
            // The top M bits, M = 63 - (index of the lowest 0 bit of tdata2): the low
            // (trailing ones + 1) bits are ignored. A tdata2 with no 0 below bit 63 (only
            // written before the match mode was set) ignores bits 62:0.
            let ignored = (t2.trailing_ones() + 1).min(63);
            let mask = !((1u64 << ignored) - 1);
            x & mask == t2 & mask
        }
        2 => x >= t2,
        3 => x < t2,
        4 => (x as u32 & (t2 >> 32) as u32) == t2 as u32,
        _ => ((x >> 32) as u32 & (t2 >> 32) as u32) == t2 as u32,
    };
    // 8, 9, 12, 13: the negations of 0, 1, 4, 5.
    hit != (m & 8 != 0)
}

/// The triggers of one hart.
#[derive(Clone, Debug, Default)]
pub struct Triggers {
    state: TriggerState,
    /// Some guest trigger is enabled for some access kind in some mode.
    pub(crate) guest_armed: bool,
    /// The debugger's points (not saved: `debugger.rs`).
    pub(crate) bank: debugger::Bank,
    /// Some guest trigger is armed or the debugger has a point: the hart then checks
    /// every fetch, load and store (it fills no load or store TLB entries and runs no
    /// translated code).
    /// `false` keeps every fast path free of trigger checks.
    pub(crate) armed: bool,
}

impl Triggers {
    pub(crate) fn state(&self) -> &TriggerState {
        &self.state
    }

    /// Takes `s` (checked with [`TriggerState::check`] first).
    pub(crate) fn set_state(&mut self, s: &TriggerState) {
        self.state = s.clone();
        self.refresh();
    }

    pub(crate) fn refresh(&mut self) {
        self.guest_armed = self
            .state
            .tdata1
            .iter()
            .any(|&t| t & TDATA1_TYPE == TDATA1_TYPE_MCONTROL6 && t & MODES != 0 && t & 7 != 0);
        self.armed = self.guest_armed || !self.bank.is_empty();
    }

    fn selected(&self) -> usize {
        // tselect < COUNT always (writes of other values are ignored, restores checked).
        self.state.tselect as usize % COUNT
    }

    pub(crate) fn tselect(&self) -> u64 {
        self.state.tselect
    }

    pub(crate) fn write_tselect(&mut self, v: u64) {
        if v < COUNT as u64 {
            self.state.tselect = v;
        }
    }

    pub(crate) fn tdata1(&self) -> u64 {
        self.state.tdata1[self.selected()]
    }

    /// Writes `tdata1` of the selected trigger; returns whether `armed` changed.
    pub(crate) fn write_tdata1(&mut self, v: u64) -> bool {
        let i = self.selected();
        self.state.tdata1[i] = legalize_tdata1(v);
        let was = self.armed;
        self.refresh();
        was != self.armed
    }

    pub(crate) fn tdata2(&self) -> u64 {
        self.state.tdata2[self.selected()]
    }

    pub(crate) fn write_tdata2(&mut self, v: u64) {
        let i = self.selected();
        self.state.tdata2[i] = legalize_tdata2(self.state.tdata1[i], v);
    }

    /// The triggers an access of kind `kind` ([`EXECUTE`], [`LOAD`] or [`STORE`]) of `len`
    /// bytes at virtual address `addr` matches in a mode whose `mcontrol6` filter bit is
    /// `mode` (one of `m`, `s`, `u`, `vs`, `vu`): a bit per trigger, and the compare value
    /// that matched for the lowest-numbered one (the `tval` of the breakpoint, 5.7
    /// `mcontrol6`: "the address being accessed and which caused that trigger to fire").
    pub(crate) fn matching(&self, kind: u64, mode: u64, addr: u64, len: u64) -> (u32, u64) {
        let mut hits = 0;
        let mut tval = 0;
        for i in (0..COUNT).rev() {
            let t = self.state.tdata1[i];
            if t & TDATA1_TYPE != TDATA1_TYPE_MCONTROL6 || t & kind == 0 || t & mode == 0 {
                continue;
            }
            let m = (t & MCONTROL6_MATCH) >> MATCH_SHIFT;
            let t2 = self.state.tdata2[i];
            if let Some(x) = (0..len)
                .map(|b| addr.wrapping_add(b))
                .find(|&x| compare(m, t2, x))
            {
                hits |= 1 << i;
                tval = x;
            }
        }
        (hits, tval)
    }

    /// Records that the triggers in `hits` fired: `hit1:hit0` = 1 ("before": the
    /// instruction that matched has not retired, `xepc` is its address).
    pub(crate) fn fired(&mut self, hits: u32) {
        for i in 0..COUNT {
            if hits & (1 << i) != 0 {
                let t = &mut self.state.tdata1[i];
                *t = (*t & !MCONTROL6_HIT1) | MCONTROL6_HIT0;
            }
        }
    }
}

/// The `mcontrol6` filter bit of a mode.
pub(crate) fn mode_bit(prv: vcpu_api::PrivilegeMode, virt: bool) -> u64 {
    use vcpu_api::PrivilegeMode::*;
    match (prv, virt) {
        (Machine, _) => MCONTROL6_M,
        (Supervisor, false) => MCONTROL6_S,
        (User, false) => MCONTROL6_U,
        (Supervisor, true) => MCONTROL6_VS,
        (User, true) => MCONTROL6_VU,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T6: u64 = TDATA1_TYPE_MCONTROL6;

    fn with(t1: u64, t2: u64) -> Triggers {
        let mut t = Triggers::default();
        t.write_tdata1(0);
        t.write_tdata2(t2);
        t.write_tdata1(t1);
        t
    }

    #[test]
    fn warl_values() {
        assert_eq!(legalize_tdata1(0), TDATA1_TYPE_DISABLED);
        assert_eq!(legalize_tdata1(2 << 60 | 0x7f), TDATA1_TYPE_DISABLED); // mcontrol
        assert_eq!(legalize_tdata1(3 << 60 | 0x7f), TDATA1_TYPE_DISABLED); // icount
        assert_eq!(legalize_tdata1(u64::MAX), TDATA1_TYPE_DISABLED);
        // dmode, uncertain, select, size, action, chain, uncertainen: read-only 0.
        let all = T6 | (u64::MAX >> 4);
        assert_eq!(
            legalize_tdata1(all),
            T6 | MCONTROL6_KEPT & !MCONTROL6_MATCH // match 15 is reserved
        );
        for m in 0..16u64 {
            let kept = (legalize_tdata1(T6 | m << 7) & MCONTROL6_MATCH) >> 7;
            assert_eq!(
                kept,
                if [6, 7, 10, 11, 14, 15].contains(&m) {
                    0
                } else {
                    m
                }
            );
        }
        assert_eq!(legalize_tdata2(T6 | 1 << 7, u64::MAX), !(1 << 62));
        assert_eq!(legalize_tdata2(T6 | 1 << 7, 0x8000_0fff), 0x8000_0fff);
        assert_eq!(legalize_tdata2(T6, u64::MAX), u64::MAX);
        assert_eq!(legalize_tdata2(TDATA1_TYPE_DISABLED, u64::MAX), u64::MAX);
        let mut t = Triggers::default();
        t.write_tselect(3);
        t.write_tselect(4);
        assert_eq!(t.tselect(), 3);
        assert!(TriggerState::default().check().is_none());
        let mut s = TriggerState::default();
        s.tdata1[1] = T6 | MCONTROL6_ACTION;
        assert!(s.check().is_some());
        s.tdata1[1] = T6;
        s.tselect = 4;
        assert!(s.check().is_some());
    }

    #[test]
    fn match_modes() {
        let a = 0x8000_1000;
        let ex = |m: u64, t2: u64, x: u64, len: u64| {
            with(T6 | m << 7 | MCONTROL6_S | LOAD, t2).matching(LOAD, MCONTROL6_S, x, len)
        };
        assert_eq!(ex(0, a, a, 8), (1, a));
        assert_eq!(ex(0, a + 3, a, 8), (1, a + 3)); // any byte of the access
        assert_eq!(ex(0, a + 8, a, 8).0, 0);
        assert_eq!(ex(0, a, a - 1, 1).0, 0);
        // NAPOT: 0x...1000 | 0x7ff: 4 KiB at a.
        assert_eq!(ex(1, a | 0x7ff, a + 0xff8, 8), (1, a + 0xff8));
        assert_eq!(ex(1, a | 0x7ff, a + 0xffc, 8), (1, a + 0xffc)); // straddles the end
        assert_eq!(ex(1, a | 0x7ff, a + 0x1000, 8).0, 0);
        assert_eq!(ex(1, a | 0x7ff, a - 4, 4).0, 0);
        assert_eq!(ex(1, a, a + 1, 1), (1, a + 1)); // tdata2 ...0: 2 bytes
        assert_eq!(ex(1, a, a + 2, 1).0, 0);
        assert_eq!(ex(2, a, a - 4, 8), (1, a)); // >=: its upper half
        assert_eq!(ex(2, a, a - 8, 8).0, 0);
        assert_eq!(ex(3, a, a - 1, 8), (1, a - 1));
        assert_eq!(ex(3, a, a, 8).0, 0);
        // mask low: bits 31:0 of the value ANDed with tdata2[63:32] equal tdata2[31:0].
        assert_eq!(ex(4, 0xffff_0000_1234_0000, 0x9_1234_5678, 1).0, 1);
        assert_eq!(ex(4, 0xffff_0000_1234_0000, 0x9_1235_5678, 1).0, 0);
        assert_eq!(ex(5, 0xffff_ffff_0000_0009, 0x9_1235_5678, 1).0, 1);
        assert_eq!(ex(8, a, a, 1).0, 0);
        assert_eq!(ex(8, a, a, 2), (1, a + 1)); // not equal: the access's other byte
        assert_eq!(ex(9, a | 0x7ff, a + 0x1000, 4), (1, a + 0x1000));
        assert_eq!(ex(12, 0xffff_0000_1234_0000, 0x9_1234_5678, 1).0, 0);
        assert_eq!(ex(13, 0xffff_ffff_0000_0009, 0x9_1235_5678, 1).0, 0);
    }

    #[test]
    fn kinds_modes_and_hits() {
        let a = 0x8000_2000;
        let mut t = Triggers::default();
        assert!(!t.armed);
        t.write_tselect(2);
        t.write_tdata2(a);
        assert!(t.write_tdata1(T6 | EXECUTE | MCONTROL6_VU));
        assert!(t.armed);
        assert_eq!(t.matching(EXECUTE, MCONTROL6_VU, a, 1), (1 << 2, a));
        assert_eq!(t.matching(EXECUTE, MCONTROL6_VS, a, 1).0, 0);
        assert_eq!(t.matching(LOAD, MCONTROL6_VU, a, 1).0, 0);
        t.write_tselect(0);
        t.write_tdata2(a);
        t.write_tdata1(T6 | EXECUTE | STORE | MCONTROL6_VU | MCONTROL6_M);
        // Both match: the lowest-numbered gives tval.
        assert_eq!(t.matching(EXECUTE, MCONTROL6_VU, a, 1), (0b101, a));
        t.fired(0b101);
        assert_eq!(
            t.tdata1() & (MCONTROL6_HIT0 | MCONTROL6_HIT1),
            MCONTROL6_HIT0
        );
        // Without a mode or a kind the trigger cannot fire: not armed.
        t.write_tdata1(T6 | MCONTROL6_M);
        t.write_tselect(2);
        assert!(t.write_tdata1(T6 | EXECUTE));
        assert!(!t.armed);
        assert_eq!(
            mode_bit(vcpu_api::PrivilegeMode::Supervisor, true),
            MCONTROL6_VS
        );
    }
}
