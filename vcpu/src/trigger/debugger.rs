//! The debugger's bank of triggers (`vcpu_api::DebugPoint`): breakpoints and watchpoints
//! only the host programs, as if the hart had [`MAX`] more triggers with `dmode` = 1 and
//! `action` = 1 (RISC-V Debug Specification 1.0, 5.7 "Trigger Module Registers",
//! `mcontrol6`: "enter Debug Mode"), outside `tselect`'s range: the guest's `tselect`,
//! `tdata1`, `tdata2` and `tinfo` never reach them.
//!
//! A match stops the hart before the instruction (`timing` before, `hit` = 1 in the
//! spec's terms): it has no effect at all, not even the trap a guest trigger raises, and
//! the hart returns [`vcpu_api::VcpuExit::DebugPoint`] (`check.rs`, `interp.rs`). The
//! compare values are the guest triggers' (5.5.5 "Address Matches"): the instruction's
//! address for an execute point, each byte of a load or store. Debugger points match in
//! every mode and ignore the reentrancy rule the guest's triggers follow (5.4 "Native
//! Triggers" concerns action 0 only). A debugger point outranks the guest's triggers on the
//! same instruction: the guest's breakpoint is raised when the debugger lets the
//! instruction run.
//!
//! The bank is no part of the saved state (`HartState`): it belongs to the debugger
//! attached to this hart object, and stays through a `restore_state` of the same hart.

use vcpu_api::{DebugHit, DebugPoint, DebugPointError, HitAccess, WatchKind};

use super::{EXECUTE, LOAD, STORE};

/// The most points the bank holds.
pub const MAX: usize = 64;

/// The `cause` of the internal exception a debugger point raises: never taken as a trap
/// (not a valid cause), it unwinds the instruction to the interpreter loop, which returns
/// [`vcpu_api::VcpuExit::DebugPoint`].
pub(crate) const STOP_CAUSE: u64 = u64::MAX;

/// The debugger's points and what they did.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bank {
    points: Vec<DebugPoint>,
    /// The execute points' addresses (what every fetch compares, kept apart to be quick).
    exec: Vec<u64>,
    /// The pc whose instruction the next run executes whatever point matches it
    /// (`Vcpu::skip_debug_points_once`).
    pub(crate) skip: Option<u64>,
    /// The stop being reported, between the check and the interpreter loop's exit.
    pub(crate) hit: Option<DebugHit>,
}

impl Bank {
    pub(crate) fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    pub(crate) fn add(&mut self, p: DebugPoint) -> Result<(), DebugPointError> {
        if let DebugPoint::Watch { addr, len, .. } = p {
            if len == 0 || addr.checked_add(len - 1).is_none() {
                return Err(DebugPointError::BadRange { addr, len });
            }
        }
        if self.points.len() >= MAX {
            return Err(DebugPointError::Full { max: MAX });
        }
        self.points.push(p);
        self.refresh();
        Ok(())
    }

    fn refresh(&mut self) {
        self.exec.clear();
        for p in &self.points {
            if let DebugPoint::Execute(a) = p {
                self.exec.push(*a);
            }
        }
    }

    /// Whether an execute point may match the instruction at `pc` (the quick test before
    /// [`Self::matching`]).
    #[inline]
    pub(crate) fn may_execute(&self, pc: u64) -> bool {
        self.exec.contains(&pc)
    }

    pub(crate) fn remove(&mut self, p: DebugPoint) -> bool {
        match self.points.iter().position(|x| *x == p) {
            Some(i) => {
                self.points.remove(i);
                self.refresh();
                true
            }
            None => false,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.points.clear();
        self.exec.clear();
        self.hit = None;
    }

    /// The first point an access of `kind` (a set of [`EXECUTE`], [`LOAD`], [`STORE`]) of
    /// `len` bytes at `addr` matches, made by the instruction at `pc`.
    pub(crate) fn matching(&self, kind: u64, addr: u64, len: u64, pc: u64) -> Option<DebugHit> {
        if self.skip == Some(pc) {
            return None;
        }
        let access = match kind {
            EXECUTE => HitAccess::Execute,
            LOAD => HitAccess::Load,
            STORE => HitAccess::Store,
            _ => HitAccess::LoadStore,
        };
        self.points.iter().find_map(|&point| match point {
            DebugPoint::Execute(a) => (kind == EXECUTE && a == addr).then_some(DebugHit {
                point,
                access,
                addr,
            }),
            DebugPoint::Watch {
                addr: w,
                len: wlen,
                kind: wk,
            } => {
                let wanted = match wk {
                    WatchKind::Load => kind & LOAD != 0,
                    WatchKind::Store => kind & STORE != 0,
                    WatchKind::Access => kind & (LOAD | STORE) != 0,
                };
                // Inclusive ends: neither range wraps (checked on add; an access at the top
                // of the address space wraps to 0 byte by byte, as the guest's triggers
                // compare it).
                let last = w + (wlen - 1);
                let hit = (0..len)
                    .map(|b| addr.wrapping_add(b))
                    .find(|&x| w <= x && x <= last);
                match hit {
                    Some(x) if wanted => Some(DebugHit {
                        point,
                        access,
                        addr: x,
                    }),
                    _ => None,
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bank_bounds_and_matches() {
        let mut b = Bank::default();
        assert_eq!(
            b.add(DebugPoint::Watch {
                addr: 0x10,
                len: 0,
                kind: WatchKind::Load
            }),
            Err(DebugPointError::BadRange { addr: 0x10, len: 0 })
        );
        assert!(b
            .add(DebugPoint::Watch {
                addr: u64::MAX,
                len: 2,
                kind: WatchKind::Load
            })
            .is_err());
        assert!(b
            .add(DebugPoint::Watch {
                addr: u64::MAX,
                len: 1,
                kind: WatchKind::Load
            })
            .is_ok());
        for i in 1..MAX as u64 {
            b.add(DebugPoint::Execute(0x1000 + 4 * i)).unwrap();
        }
        assert_eq!(
            b.add(DebugPoint::Execute(0)),
            Err(DebugPointError::Full { max: MAX })
        );
        assert!(b.remove(DebugPoint::Execute(0x1004)));
        assert!(!b.remove(DebugPoint::Execute(0x1004)));
        let w = DebugPoint::Watch {
            addr: 0x2003,
            len: 2,
            kind: WatchKind::Store,
        };
        b.add(w).unwrap();
        // A misaligned 8-byte store at 0x1fff: its bytes 4 and 5 are watched.
        let hit = b.matching(STORE, 0x1fff, 8, 0x1008).unwrap();
        assert_eq!(
            (hit.point, hit.addr, hit.access),
            (w, 0x2003, HitAccess::Store)
        );
        assert!(b.matching(LOAD, 0x1fff, 8, 0x1008).is_none());
        assert_eq!(
            b.matching(LOAD | STORE, 0x2004, 4, 0).map(|h| h.access),
            Some(HitAccess::LoadStore)
        );
        assert!(b.matching(STORE, 0x2005, 4, 0).is_none());
        assert!(b.matching(EXECUTE, 0x1008, 1, 0x1008).is_some());
        b.skip = Some(0x1008);
        assert!(b.matching(EXECUTE, 0x1008, 1, 0x1008).is_none());
        b.clear();
        assert!(b.is_empty());
    }
}
