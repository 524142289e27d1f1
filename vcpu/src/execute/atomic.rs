//! The A extension (unprivileged spec "A" chapter). LR/SC and AMOs are performed with host
//! atomics on guest RAM, so they are atomic across harts on different threads.
//!
//! SC succeeds when the reservation is still held by this hart for the same address and the
//! memory still holds the value LR read (a compare-and-swap). A store from another hart that
//! writes the same value back is therefore not detected; the spec's forward-progress
//! guarantee still holds. Traps clear the reservation.
//!
//! Translated code performs LR, SC and AMOs inline where the TLB has the page
//! (`jit::x64::emit_lr`, `emit_sc`, `emit_amo`), on the same [`Reservation`].

use std::sync::atomic::Ordering::SeqCst;

use crate::decode::{Insn, Op};
use crate::hart::{Ctl, Hart};

/// The LR reservation: the RAM offset LR reserved and the value it read (zero-extended for
/// LR.W), while `held` is 1. Plain fields at fixed places, because translated code takes
/// and sets it too (`jit::x64::emit_lr`, `emit_sc`).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(crate) struct Reservation {
    pub(crate) held: u64,
    pub(crate) off: u64,
    pub(crate) value: u64,
}

impl Reservation {
    /// (RAM offset, value), if held.
    pub(crate) fn get(&self) -> Option<(u64, u64)> {
        (self.held != 0).then_some((self.off, self.value))
    }

    pub(crate) fn set(&mut self, r: Option<(u64, u64)>) {
        let (off, value) = r.unwrap_or_default();
        *self = Reservation {
            held: r.is_some() as u64,
            off,
            value,
        };
    }

    /// [`Reservation::get`], and the reservation is gone (as SC leaves it).
    pub(crate) fn take(&mut self) -> Option<(u64, u64)> {
        let r = self.get();
        self.held = 0;
        r
    }

    pub(crate) fn clear(&mut self) {
        self.held = 0;
    }
}

fn amo64(op: Op, old: u64, src: u64) -> u64 {
    match op {
        Op::AmoSwap => src,
        Op::AmoAdd => old.wrapping_add(src),
        Op::AmoXor => old ^ src,
        Op::AmoAnd => old & src,
        Op::AmoOr => old | src,
        Op::AmoMin => (old as i64).min(src as i64) as u64,
        Op::AmoMax => (old as i64).max(src as i64) as u64,
        Op::AmoMinu => old.min(src),
        _ => old.max(src), // AmoMaxu
    }
}

fn amo32(op: Op, old: u32, src: u32) -> u32 {
    match op {
        Op::AmoMin => (old as i32).min(src as i32) as u32,
        Op::AmoMax => (old as i32).max(src as i32) as u32,
        _ => amo64(op, old as u64, src as u64) as u32,
    }
}

impl Hart {
    pub(crate) fn exec_atomic(&mut self, i: &Insn) -> Result<(), Ctl> {
        let word = i.fmt == 2;
        let size = if word { 4 } else { 8 };
        let va = self.rs1(i);
        let src = self.rs2(i);
        if self.trig.armed {
            use crate::trigger::{LOAD, STORE};
            let kind = match i.op {
                Op::Lr => LOAD,
                // A failing SC matches too (5.5.1 leaves it UNSPECIFIED): it is checked
                // before the reservation is.
                Op::Sc => STORE,
                _ => LOAD | STORE,
            };
            self.trigger_atomic(va, size as u64, kind)?;
        }
        let result = match i.op {
            Op::Lr => {
                let off = self.atomic_address(va, size, false)?;
                let v = if word {
                    self.ram.atomic32(off).load(SeqCst) as u64
                } else {
                    self.ram.atomic64(off).load(SeqCst)
                };
                self.reservation.set(Some((off, v)));
                v
            }
            Op::Sc => {
                let off = self.atomic_address(va, size, true)?;
                let ok = match self.reservation.take() {
                    Some((r, old)) if r == off => {
                        if word {
                            self.ram
                                .atomic32(off)
                                .compare_exchange(old as u32, src as u32, SeqCst, SeqCst)
                                .is_ok()
                        } else {
                            self.ram
                                .atomic64(off)
                                .compare_exchange(old, src, SeqCst, SeqCst)
                                .is_ok()
                        }
                    }
                    _ => false,
                };
                !ok as u64
            }
            op => {
                let off = self.atomic_address(va, size, true)?;
                if word {
                    let cell = self.ram.atomic32(off);
                    let mut old = cell.load(SeqCst);
                    loop {
                        match cell.compare_exchange_weak(
                            old,
                            amo32(op, old, src as u32),
                            SeqCst,
                            SeqCst,
                        ) {
                            Ok(_) => break old as u64,
                            Err(cur) => old = cur,
                        }
                    }
                } else {
                    let cell = self.ram.atomic64(off);
                    let mut old = cell.load(SeqCst);
                    loop {
                        match cell.compare_exchange_weak(old, amo64(op, old, src), SeqCst, SeqCst) {
                            Ok(_) => break old,
                            Err(cur) => old = cur,
                        }
                    }
                }
            }
        };
        let v = if word {
            result as u32 as i32 as i64 as u64
        } else {
            result
        };
        self.set_rd(i, v);
        Ok(())
    }
}
