//! Counter delegation for guests (Smcdeleg/Ssccfg v1.0, "trap and emulate": the note
//! "Hypervisor Configuration" in chapter 6
//! "Virtualizing Local Counter Overflow Interrupts").
//!
//! With [`PmuPolicy::deleg`](crate::PmuPolicy::deleg) the VMM, as the guest's M-mode
//! firmware and its hypervisor, sets `menvcfg.CDE` = 1 and delegates every counter of the
//! VM to the guest. The hart then raises virtual-instruction for the guest's
//!
//! - `sireg*` (really `vsireg*`) accesses while `vsiselect` is in 0x40-0x5F (chapter 3
//!   "Counter Delegation"),
//! - `scountinhibit` accesses (chapter 4
//!   "Supervisor Counter Inhibit Register (`scountinhibit`)"),
//! - `scountovf` accesses (chapter 5 "Virtualizing `scountovf`"),
//!
//! and [`GuestPmu::on_virtual_insn`] emulates them on the guest's *virtual* counters, so that
//! the guest sees the machine the spec describes for an S-mode OS whose firmware delegated
//! all counters (every `mcounteren` bit but `TM`):
//!
//! | `vsiselect` | `sireg` | `sireg2` | `sireg3`, `sireg6` | `sireg4`, `sireg5` |
//! | --- | --- | --- | --- | --- |
//! | 0x40 | `cycle` | `cyclecfg` | illegal | illegal (RV64) |
//! | 0x41 | illegal (`time` is no counter) | illegal | illegal | illegal |
//! | 0x42 | `instret` | `instretcfg` | illegal | illegal |
//! | 0x43-0x5F | `hpmcounterN` | `hpmeventN` | illegal | illegal |
//!
//! - `sireg2` is the subset of the event selector (or of `mcyclecfg`/`minstretcfg`, Smcntrpmf)
//!   an S-mode OS sees: MINH is read-only 0 (chapter 3, last paragraph); VSINH and VUINH are
//!   read-only 0 too, since the guest has no H extension (Smcntrpmf: "if the associated
//!   privilege mode is not implemented, the bit is read-only zero"; Sscofpmf the same). The
//!   guest's SINH and UINH filter its own modes, VS and VU: they become the hart's VSINH and
//!   VUINH, as the SBI path does, and the hart counter keeps MINH, SINH and UINH set so the
//!   hypervisor is never counted. OF (bit 63, hpm counters only) is the backing counter's.
//! - `scountinhibit` shows and sets the `mcountinhibit` bits of the backing counters at the
//!   guest's counter positions; bit 1 is read-only 0.
//! - `scountovf` (read-only) shows the backing counters' OF bits at the guest's positions.
//! - An access from VU-mode gets illegal-instruction, as U-mode would on the machine the guest
//!   believes in (these are S-level CSRs).
//!
//! # The mapping
//! Virtual counter `i` is hart counter [`GuestPmu::hart_counter`]`(i)`: with delegation the
//! VM's hpm counters are handed out from the top ([`deleg_map`]: the lowest virtual hpm
//! counter gets the highest hart counter), so the guest's counter 3 is the hart's 31;
//! `cycle` and `instret` stay themselves (`mcyclecfg`/`minstretcfg` belong to them). The SBI
//! PMU path (`guest.rs`) uses the same mapping: both are views of the same virtual counters.
//! Because the CSR number a guest reads names a *hart* counter, direct reads of
//! `hpmcounterN` cannot be left to the hart for a counter that moved: `hcounteren` bit N is
//! set only where the mapping is the identity (0, 2, and the middle counter 17), every
//! other `hpmcounterN` read exits (virtual-instruction: `mcounteren` bit 1, `hcounteren` bit
//! 0) and is emulated here (from VU-mode only when the guest's `scounteren` bit N is set,
//! else illegal-instruction, as the guest's own rule says).
//!
//! # Set-up ([`prepare`])
//! `menvcfg.CDE` = 1; `hstateen0.CSRIND` = 1 (the guest writes `vsiselect` through
//! `siselect` directly; Sscsrind, on which Ssccfg depends); `mcounteren` has every counter
//! of the VM; `hcounteren` the identity-mapped ones.

use vcpu_api::csr::{
    MENVCFG_CDE, MHPMEVENT_EVENT as EVENT_SELECT, MHPMEVENT_OF as OF, MHPMEVENT_SINH as SINH,
    MHPMEVENT_UINH as UINH, MHPMEVENT_VSINH as VSINH, MHPMEVENT_VUINH as VUINH,
};
use vcpu_api::Vcpu;

pub mod map;

use crate::event::EventTarget;
use crate::guest::{csr, HOST_INH};
use crate::{GuestPmu, CY, HW_COUNTERS, IR};

/// CSR numbers of the trapped accesses (from `vcpu_api::csr`).
pub mod num {
    pub use vcpu_api::csr::{
        CYCLE, HPMCOUNTER31, SCOUNTINHIBIT, SCOUNTOVF, SIREG, SIREG2, SIREG3, SIREG4, SIREG5,
        SIREG6, VSISELECT,
    };
}

pub use vcpu_api::csr::STATEEN0_CSRIND;
/// The first `siselect` value of the delegated counters.
pub const SELECT_BASE: u64 = 0x40;
/// The last one.
pub const SELECT_LAST: u64 = 0x5f;

pub use map::{deleg_map, identity_map, valid_map};

/// Sets the hart up for a guest with counter delegation (see the module documentation):
/// Smcdeleg 2 "Counter Delegation Enable (`menvcfg.CDE`)" on, every counter delegated
/// (chapter 3 "Counter Delegation").
impl GuestPmu {
    pub(crate) fn prepare_deleg(&self, vcpu: &mut dyn Vcpu) {
        let pmu = self;
        let set = |vcpu: &mut dyn Vcpu, num: u16, f: &dyn Fn(u64) -> u64| {
            let v = vcpu.host_csr(num).unwrap_or(0);
            vcpu.set_known_csr(num, f(v));
        };
        let mask = u64::from(pmu.policy.hw_mask());
        let direct = (0..HW_COUNTERS)
            .filter(|&i| mask >> i & 1 != 0 && pmu.phys(i) == i)
            .fold(0u64, |m, i| m | 1 << i);
        set(vcpu, csr::MENVCFG, &|v| v | MENVCFG_CDE);
        set(vcpu, csr::HSTATEEN0, &|v| v | STATEEN0_CSRIND);
        set(vcpu, csr::MCOUNTEREN, &|v| v | mask);
        set(vcpu, csr::HCOUNTEREN, &|v| (v & !mask) | direct);
    }
}

pub use vcpu_api::zicsr::{CsrInsn, CsrOp};

/// Which delegated state an emulated access reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelegAccess {
    /// `sireg` at 0x40 + i: the counter value.
    Counter,
    /// `sireg2` at 0x40 + i: the event selector or `cyclecfg`/`instretcfg`.
    Event,
    /// `scountinhibit`.
    Inhibit,
    /// `scountovf`.
    Overflow,
    /// A direct read of `cycle`/`instret`/`hpmcounterN` whose counter moved.
    CounterRead,
}

impl DelegAccess {
    /// Short name for statistics.
    pub fn name(self) -> &'static str {
        match self {
            DelegAccess::Counter => "sireg",
            DelegAccess::Event => "sireg2",
            DelegAccess::Inhibit => "scountinhibit",
            DelegAccess::Overflow => "scountovf",
            DelegAccess::CounterRead => "hpmcounter read",
        }
    }
}

/// What the VMM must do after [`GuestPmu::on_virtual_insn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelegOutcome {
    /// Not a delegated-counter access (or no counter delegation): someone else's exit.
    NotDeleg,
    /// Emulated; the pc is past the instruction. `counter` is (virtual counter, hart
    /// counter) when one counter was accessed.
    Emulated {
        /// What was accessed.
        access: DelegAccess,
        /// Whether the access wrote.
        write: bool,
        /// The virtual counter and the hart counter behind it.
        counter: Option<(usize, usize)>,
    },
    /// Inject illegal-instruction (`xtval` = the instruction bits).
    InjectIllegal,
}

/// The state a trapped access names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// `sireg*` (alias 1-6) with `vsiselect` = 0x40 + counter.
    Ireg {
        alias: u8,
        counter: usize,
    },
    Inhibit,
    Overflow,
    /// `cycle`/`hpmcounterN` read directly.
    Direct(usize),
}

/// Not emulable: the guest gets illegal-instruction.
struct Illegal;

impl GuestPmu {
    /// A virtual-instruction exit of the guest running on `vcpu` for instruction `insn`
    /// (from VU-mode if `from_vu`): emulates it if it is a delegated-counter access (see
    /// the module documentation: Smcdeleg 3 "Counter Delegation", 4
    /// "Supervisor Counter Inhibit Register (`scountinhibit`)", 5
    /// "Virtualizing `scountovf`"). Never panics, whatever the instruction.
    pub fn on_virtual_insn(
        &mut self,
        vcpu: &mut dyn Vcpu,
        insn: u32,
        from_vu: bool,
    ) -> DelegOutcome {
        if !self.policy.deleg_on() {
            return DelegOutcome::NotDeleg;
        }
        let Some(ci) = CsrInsn::decode(insn) else {
            return DelegOutcome::NotDeleg;
        };
        let target = match ci.csr {
            num::SIREG..=num::SIREG6 if ci.csr != 0x154 => {
                let sel = vcpu.host_csr(num::VSISELECT).unwrap_or(0);
                if !(SELECT_BASE..=SELECT_LAST).contains(&sel) {
                    return DelegOutcome::NotDeleg;
                }
                let alias = match ci.csr {
                    num::SIREG => 1,
                    num::SIREG2 => 2,
                    num::SIREG3 => 3,
                    num::SIREG4 => 4,
                    num::SIREG5 => 5,
                    _ => 6,
                };
                Target::Ireg {
                    alias,
                    counter: (sel - SELECT_BASE) as usize,
                }
            }
            num::SCOUNTINHIBIT => Target::Inhibit,
            num::SCOUNTOVF => Target::Overflow,
            c @ num::CYCLE..=num::HPMCOUNTER31 if c != num::CYCLE + 1 => {
                Target::Direct(usize::from(c - num::CYCLE))
            }
            _ => return DelegOutcome::NotDeleg,
        };
        if from_vu {
            // S-level CSRs from U-mode are illegal; a counter read is the guest's
            // scounteren's to allow.
            let allowed = matches!(target, Target::Direct(i)
                if !ci.writes() && vcpu.guest_scounteren() >> i & 1 != 0);
            if !allowed {
                return DelegOutcome::InjectIllegal;
            }
        }
        match self.emulate(vcpu, &ci, target) {
            Ok(outcome) => {
                vcpu.set_pc(vcpu.pc().wrapping_add(4));
                outcome
            }
            Err(Illegal) => DelegOutcome::InjectIllegal,
        }
    }

    /// Whether virtual counter `i` is the guest's (delegated to it).
    fn delegated(&self, i: usize) -> bool {
        i < HW_COUNTERS && i != 1 && self.policy.hw_mask() >> i & 1 != 0
    }

    fn emulate(
        &mut self,
        vcpu: &mut dyn Vcpu,
        ci: &CsrInsn,
        target: Target,
    ) -> Result<DelegOutcome, Illegal> {
        let operand = ci.operand(vcpu);
        let write = ci.writes();
        let (access, counter, old) = match target {
            Target::Ireg { alias, counter: i } => {
                // Smcdeleg chapter 3: sireg3/sireg6 always, sireg4/sireg5 on RV64, 0x41
                // and counters not delegated raise illegal-instruction.
                if !matches!(alias, 1 | 2) || !self.delegated(i) {
                    return Err(Illegal);
                }
                if alias == 1 {
                    let old = self.value(vcpu, i);
                    if write {
                        self.set_value(vcpu, i, ci.apply(old, operand));
                    }
                    (DelegAccess::Counter, Some(i), old)
                } else {
                    let old = self.guest_event(vcpu, i);
                    if write {
                        self.set_guest_event(vcpu, i, ci.apply(old, operand));
                    }
                    (DelegAccess::Event, Some(i), old)
                }
            }
            Target::Inhibit => {
                let old = self.guest_inhibit(vcpu);
                if write {
                    self.set_guest_inhibit(vcpu, ci.apply(old, operand));
                }
                (DelegAccess::Inhibit, None, old)
            }
            Target::Overflow => {
                // Read-only; it exists only with Sscofpmf.
                if write || !self.policy.sscofpmf {
                    return Err(Illegal);
                }
                (DelegAccess::Overflow, None, self.guest_overflow(vcpu))
            }
            Target::Direct(i) => {
                if write || !self.delegated(i) {
                    return Err(Illegal);
                }
                (DelegAccess::CounterRead, Some(i), self.value(vcpu, i))
            }
        };
        if ci.rd != 0 {
            vcpu.set_xreg(ci.rd, old);
        }
        Ok(DelegOutcome::Emulated {
            access,
            write,
            counter: counter.map(|i| (i, self.phys(i))),
        })
    }

    /// The hart register holding virtual counter `i`'s event or configuration.
    fn event_csr(&self, i: usize) -> u16 {
        match i {
            CY => csr::MCYCLECFG,
            IR => csr::MINSTRETCFG,
            _ => csr::MHPMEVENT + self.phys(i) as u16,
        }
    }

    /// `sireg2` as the guest reads it (see the module documentation; Smcdeleg 3
    /// "Counter Delegation").
    pub fn guest_event(&self, vcpu: &dyn Vcpu, i: usize) -> u64 {
        let hw = vcpu.host_csr(self.event_csr(i)).unwrap_or(0);
        let mut v = 0;
        if hw & VSINH != 0 {
            v |= SINH;
        }
        if hw & VUINH != 0 {
            v |= UINH;
        }
        if i != CY && i != IR {
            v |= hw & (OF | EVENT_SELECT);
        }
        v
    }

    /// A guest write of `sireg2`: the guest's filter becomes the hart's VSINH/VUINH, the
    /// hypervisor's modes stay inhibited; MINH, VSINH and VUINH are read-only 0.
    fn set_guest_event(&mut self, vcpu: &mut dyn Vcpu, i: usize, v: u64) {
        let mut inhibit = 0;
        if v & SINH != 0 {
            inhibit |= VSINH;
        }
        if v & UINH != 0 {
            inhibit |= VUINH;
        }
        let hw = match i {
            CY | IR => HOST_INH | inhibit,
            _ => HOST_INH | inhibit | (v & (EVENT_SELECT | OF)),
        };
        self.counters[i].inhibit = inhibit;
        let num = self.event_csr(i);
        vcpu.set_known_csr(num, hw);
        if i != CY && i != IR {
            // The selector as the hart kept it (WARL), for the SBI view of the counter.
            let sel = vcpu.host_csr(num).unwrap_or(0) & EVENT_SELECT;
            self.counters[i].event = (sel != 0).then_some(EventTarget::Hardware(sel));
        }
    }

    /// `scountinhibit` as the guest reads it (Smcdeleg 4
    /// "Supervisor Counter Inhibit Register (`scountinhibit`)").
    pub fn guest_inhibit(&self, vcpu: &dyn Vcpu) -> u64 {
        let hw = vcpu.host_csr(csr::MCOUNTINHIBIT).unwrap_or(0);
        (0..HW_COUNTERS)
            .filter(|&i| self.delegated(i) && hw >> self.phys(i) & 1 != 0)
            .fold(0, |v, i| v | 1 << i)
    }

    /// A guest write of `scountinhibit` (Smcdeleg 4
    /// "Supervisor Counter Inhibit Register (`scountinhibit`)"): the backing counters'
    /// `mcountinhibit` bits.
    fn set_guest_inhibit(&mut self, vcpu: &mut dyn Vcpu, v: u64) {
        for i in 0..HW_COUNTERS {
            if !self.delegated(i) {
                continue;
            }
            let inhibit = v >> i & 1 != 0;
            self.set_inhibit(vcpu, i, inhibit);
            self.counters[i].started = !inhibit;
        }
    }

    /// `scountovf` as the guest reads it: OF of its hpm counters, and bit 1 for PDIS
    /// (Smcdeleg 5 "Virtualizing `scountovf`").
    pub fn guest_overflow(&self, vcpu: &dyn Vcpu) -> u64 {
        // Bit 1: the guest's PDIS sample counter (Smpdis/Sspdis, once its context is loaded).
        let pdis = u64::from(self.sampling.pdis_overflowed(vcpu)) << 1;
        (3..HW_COUNTERS)
            .filter(|&i| self.delegated(i))
            .filter(|&i| vcpu.host_csr(self.event_csr(i)).unwrap_or(0) & OF != 0)
            .fold(pdis, |v, i| v | 1 << i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_every_form() {
        // csrrw a0, sireg, a1
        let i = CsrInsn::decode(0x1515_9573).unwrap();
        assert_eq!(
            (i.csr, i.rd, i.rs1, i.imm, i.op),
            (0x151, 10, 11, false, CsrOp::Write)
        );
        assert!(i.writes());
        // csrr a0, sireg2 = csrrs a0, sireg2, x0: a read
        let i = CsrInsn::decode(0x1520_2573).unwrap();
        assert_eq!((i.csr, i.op), (0x152, CsrOp::Set));
        assert!(!i.writes());
        // csrrc x0, scountinhibit, t0
        let i = CsrInsn::decode(0x1202_b073).unwrap();
        assert_eq!((i.csr, i.rd, i.rs1, i.op), (0x120, 0, 5, CsrOp::Clear));
        assert!(i.writes());
        // csrrwi x0, sireg, 0 writes; csrrsi a0, scountovf, 0 does not; csrrci a0, x, 3
        let i = CsrInsn::decode(0x1510_5073).unwrap();
        assert!(i.imm && i.writes());
        let i = CsrInsn::decode(0xda00_6573).unwrap();
        assert!(i.imm && !i.writes() && i.csr == 0xda0);
        let i = CsrInsn::decode(0x1201_f573).unwrap();
        assert_eq!((i.imm, i.rs1, i.op), (true, 3, CsrOp::Clear));
        assert_eq!(i.apply(0xff, 3), 0xfc);
        // Not CSR instructions: ecall, wfi, a load, funct3 4.
        for insn in [0x73, 0x1050_0073, 0x0005_3503, 0x1510_4073] {
            assert_eq!(CsrInsn::decode(insn), None, "{insn:#x}");
        }
    }

    #[test]
    fn apply_follows_zicsr() {
        let w = CsrInsn::decode(0x1515_9573).unwrap();
        assert_eq!(w.apply(5, 9), 9);
        let s = CsrInsn::decode(0x1515_a573).unwrap();
        assert_eq!(s.op, CsrOp::Set);
        assert_eq!(s.apply(5, 8), 13);
    }

    #[test]
    fn deleg_map_hands_out_from_the_top() {
        let m = deleg_map(!0b10);
        assert_eq!(
            (m[0], m[1], m[2], m[3], m[4], m[17], m[31]),
            (0, 1, 2, 31, 30, 17, 3)
        );
        assert!(valid_map(&m, !0b10));
        assert!(valid_map(&identity_map(), !0b10));
        // A subset: counters 3, 5 and 9 → 9, 5, 3.
        let mask = 1 << 3 | 1 << 5 | 1 << 9 | 1;
        let m = deleg_map(mask);
        assert_eq!((m[3], m[5], m[9], m[4]), (9, 5, 3, 4));
        assert!(valid_map(&m, mask));
        // Not a permutation, outside the mask, moving cycle: refused.
        let mut bad = deleg_map(!0b10);
        bad[4] = 31;
        assert!(!valid_map(&bad, !0b10));
        assert!(!valid_map(&deleg_map(!0b10), mask));
        let mut bad = identity_map();
        bad.swap(0, 3);
        assert!(!valid_map(&bad, !0b10));
        let mut bad = identity_map();
        bad[5] = 200;
        assert!(!valid_map(&bad, !0b10));
    }
}
