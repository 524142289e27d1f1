//! What the stub keeps for gdb's `Z` packets — software and hardware breakpoints and
//! watchpoints, none of them written into guest memory — and guest memory as the selected
//! hart sees it (its current translation, `Vcpu::debug_translate`).
//!
//! The points themselves are the hart's: every vCPU's hart holds gdb's breakpoints and
//! watchpoints in its debugger bank of triggers ([`Vcpu::add_debug_point`], the hart's
//! `trigger/debugger.rs`), which stops it before the instruction at a breakpoint's address
//! or whose load or store touches a watched range (any byte of the access; LR/SC, AMOs,
//! HLV/HSV and compressed forms included), and reports the stop. This file keeps gdb's
//! view of them ([`DebugPoints`]: which breakpoints came from `Z0` and which from `Z1`, the
//! watchpoints' kinds), gives the harts their points ([`DebugPoints::hart_points`]) and
//! turns a hart's stop back into gdb's terms ([`DebugPoints::classify`]). The stop is
//! reported before the access, as a RISC-V trigger with `timing` = before reports it;
//! gdb then steps over the instruction and compares the value itself. Cache-block
//! operations are not watched (the hart's triggers do not check them).

use std::collections::BTreeSet;

use gdbstub::target::ext::breakpoints::WatchKind;
use vcpu_api::{DebugAccess, DebugHit, DebugPoint, Vcpu};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use crate::backend::Hart;

/// One watchpoint: `len` bytes at virtual address `addr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watchpoint {
    /// The first byte watched.
    pub addr: u64,
    /// How many bytes.
    pub len: u64,
    /// Which accesses it stops at.
    pub kind: WatchKind,
}

/// Why the hart stops before its next instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    /// A software breakpoint at the pc.
    Sw,
    /// A hardware breakpoint at the pc.
    Hw,
    /// The instruction at the pc accesses a watched range.
    Watch {
        /// The watchpoint's kind.
        kind: WatchKind,
        /// The first watched byte the access touches.
        addr: u64,
    },
}

/// A stub target that keeps [`DebugPoints`]: [`debug_point_ops!`](crate::debug_point_ops)
/// gives it gdb's breakpoint and watchpoint packets.
pub trait HasDebugPoints {
    /// Changes the breakpoints and watchpoints with `f`, its result.
    fn with_points<R>(&mut self, f: impl FnOnce(&mut DebugPoints) -> R) -> R;
}

/// Implements `gdbstub`'s `Breakpoints`, `SwBreakpoint`, `HwBreakpoint` and `HwWatchpoint`
/// for a target that is [`HasDebugPoints`] (`Arch` [`super::Rv64Vmm`]).
#[macro_export]
macro_rules! debug_point_ops {
    ($target:ty) => {
        impl gdbstub::target::ext::breakpoints::Breakpoints for $target {
            fn support_sw_breakpoint(
                &mut self,
            ) -> Option<gdbstub::target::ext::breakpoints::SwBreakpointOps<'_, Self>> {
                Some(self)
            }

            fn support_hw_breakpoint(
                &mut self,
            ) -> Option<gdbstub::target::ext::breakpoints::HwBreakpointOps<'_, Self>> {
                Some(self)
            }

            fn support_hw_watchpoint(
                &mut self,
            ) -> Option<gdbstub::target::ext::breakpoints::HwWatchpointOps<'_, Self>> {
                Some(self)
            }
        }

        impl gdbstub::target::ext::breakpoints::SwBreakpoint for $target {
            fn add_sw_breakpoint(
                &mut self,
                addr: u64,
                _kind: usize,
            ) -> gdbstub::target::TargetResult<bool, Self> {
                use $crate::gdb::points::HasDebugPoints;
                Ok(self.with_points(|p| p.set_breakpoint(addr, false, true)))
            }

            fn remove_sw_breakpoint(
                &mut self,
                addr: u64,
                _kind: usize,
            ) -> gdbstub::target::TargetResult<bool, Self> {
                use $crate::gdb::points::HasDebugPoints;
                Ok(self.with_points(|p| p.set_breakpoint(addr, false, false)))
            }
        }

        impl gdbstub::target::ext::breakpoints::HwBreakpoint for $target {
            fn add_hw_breakpoint(
                &mut self,
                addr: u64,
                _kind: usize,
            ) -> gdbstub::target::TargetResult<bool, Self> {
                use $crate::gdb::points::HasDebugPoints;
                Ok(self.with_points(|p| p.set_breakpoint(addr, true, true)))
            }

            fn remove_hw_breakpoint(
                &mut self,
                addr: u64,
                _kind: usize,
            ) -> gdbstub::target::TargetResult<bool, Self> {
                use $crate::gdb::points::HasDebugPoints;
                Ok(self.with_points(|p| p.set_breakpoint(addr, true, false)))
            }
        }

        impl gdbstub::target::ext::breakpoints::HwWatchpoint for $target {
            fn add_hw_watchpoint(
                &mut self,
                addr: u64,
                len: u64,
                kind: gdbstub::target::ext::breakpoints::WatchKind,
            ) -> gdbstub::target::TargetResult<bool, Self> {
                use $crate::gdb::points::HasDebugPoints;
                let w = $crate::gdb::points::Watchpoint { addr, len, kind };
                Ok(self.with_points(|p| p.set_watchpoint(w, true)))
            }

            fn remove_hw_watchpoint(
                &mut self,
                addr: u64,
                len: u64,
                kind: gdbstub::target::ext::breakpoints::WatchKind,
            ) -> gdbstub::target::TargetResult<bool, Self> {
                use $crate::gdb::points::HasDebugPoints;
                let w = $crate::gdb::points::Watchpoint { addr, len, kind };
                Ok(self.with_points(|p| p.set_watchpoint(w, false)))
            }
        }
    };
}

/// The most breakpoint addresses and watchpoints together: what a hart's debugger bank
/// holds (gdb is refused beyond; for watchpoints it then watches by single-stepping).
pub const MAX_POINTS: usize = vcpu::trigger::debugger::MAX;

/// Breakpoints and watchpoints.
#[derive(Clone, Debug, Default)]
pub struct DebugPoints {
    sw: BTreeSet<u64>,
    hw: BTreeSet<u64>,
    watch: Vec<Watchpoint>,
}

impl DebugPoints {
    /// Whether none is set.
    pub fn is_empty(&self) -> bool {
        self.sw.is_empty() && self.hw.is_empty() && self.watch.is_empty()
    }

    /// How many points a hart holds for these.
    fn count(&self) -> usize {
        self.sw.union(&self.hw).count() + self.watch.len()
    }

    /// Adds (`on`) or removes a breakpoint at `pc`; whether the set changed (`false` when
    /// adding would exceed [`MAX_POINTS`]).
    pub fn set_breakpoint(&mut self, pc: u64, hw: bool, on: bool) -> bool {
        let full = self.count() >= MAX_POINTS && !self.sw.contains(&pc) && !self.hw.contains(&pc);
        let set = if hw { &mut self.hw } else { &mut self.sw };
        if on {
            !full && set.insert(pc)
        } else {
            set.remove(&pc)
        }
    }

    /// Adds (`on`) or removes a watchpoint; `false` when it cannot be added (zero length,
    /// a range that wraps, or too many) or was not there.
    pub fn set_watchpoint(&mut self, w: Watchpoint, on: bool) -> bool {
        if on {
            if w.len == 0 || w.addr.checked_add(w.len).is_none() {
                return false;
            }
            if self.count() >= MAX_POINTS {
                return false;
            }
            self.watch.push(w);
            true
        } else {
            match self.watch.iter().position(|x| *x == w) {
                Some(i) => {
                    self.watch.remove(i);
                    true
                }
                None => false,
            }
        }
    }

    /// Removes every one.
    pub fn clear(&mut self) {
        *self = DebugPoints::default();
    }

    /// The hart's points for these (one execute point per breakpoint address, whether
    /// `Z0`, `Z1` or both set it), in the order [`Self::classify`] expects.
    pub fn hart_points(&self) -> impl Iterator<Item = DebugPoint> + '_ {
        let breaks = self.sw.union(&self.hw).map(|&a| DebugPoint::Execute(a));
        let watches = self.watch.iter().map(|w| DebugPoint::Watch {
            addr: w.addr,
            len: w.len,
            kind: match w.kind {
                WatchKind::Write => vcpu_api::WatchKind::Store,
                WatchKind::Read => vcpu_api::WatchKind::Load,
                WatchKind::ReadWrite => vcpu_api::WatchKind::Access,
            },
        });
        breaks.chain(watches)
    }

    /// Gives `hart` exactly these points (every one fits: the set is bounded by
    /// [`MAX_POINTS`], the bank's size).
    pub fn load_into(&self, hart: &mut Hart) {
        Vcpu::clear_debug_points(hart);
        for p in self.hart_points() {
            if let Err(e) = Vcpu::add_debug_point(hart, p) {
                eprintln!("vmm: gdb stub: {e}");
            }
        }
    }

    /// gdb's name for a hart's stop at `hit`: a software breakpoint where `Z0` set one at
    /// the address (gdb asked for both: the software one), a hardware one otherwise, or the
    /// watchpoint's kind and the first watched byte the access touches.
    pub fn classify(&self, hit: &DebugHit) -> Hit {
        match hit.point {
            DebugPoint::Execute(a) if self.sw.contains(&a) => Hit::Sw,
            DebugPoint::Execute(_) => Hit::Hw,
            DebugPoint::Watch { kind, .. } => Hit::Watch {
                kind: match kind {
                    vcpu_api::WatchKind::Store => WatchKind::Write,
                    vcpu_api::WatchKind::Load => WatchKind::Read,
                    vcpu_api::WatchKind::Access => WatchKind::ReadWrite,
                },
                addr: hit.addr,
            },
        }
    }
}

/// Where `len` bytes at `start` are in guest-physical memory for `hart` now: the pieces,
/// page by page, up to the first address that does not translate (`phys`: the addresses
/// are physical already). Reads use the load translation, writes the store translation
/// (`kind`); permissions are not checked (a debugger reads what the mode could not).
pub fn translate_range(
    hart: &Hart,
    start: u64,
    len: usize,
    kind: DebugAccess,
    phys: bool,
) -> Vec<(u64, usize)> {
    if phys {
        return vec![(start, len)];
    }
    let mut pieces = Vec::new();
    let mut va = start;
    let mut left = len;
    while left > 0 {
        let in_page = (0x1000 - (va & 0xfff)) as usize;
        let n = in_page.min(left);
        let Ok(pa) = hart.debug_translate(va, kind) else {
            break;
        };
        pieces.push((pa, n));
        left -= n;
        va = va.wrapping_add(n as u64);
    }
    pieces
}

/// Reads `data.len()` bytes at the guest-physical `pieces` (from [`translate_range`]):
/// the number read before the first that is not RAM.
pub fn read_pieces(mem: &GuestMemoryMmap, pieces: &[(u64, usize)], data: &mut [u8]) -> usize {
    let mut done = 0;
    for &(pa, n) in pieces {
        let Some(dst) = data.get_mut(done..done + n) else {
            break;
        };
        if mem.read_slice(dst, GuestAddress(pa)).is_err() {
            break;
        }
        done += n;
    }
    done
}

/// Writes `data` at the guest-physical `pieces`, all or nothing: `false` (nothing written)
/// unless they cover it all and are all RAM.
pub fn write_pieces(mem: &GuestMemoryMmap, pieces: &[(u64, usize)], data: &[u8]) -> bool {
    use vm_memory::GuestMemoryBackend;
    let covered: usize = pieces.iter().map(|p| p.1).sum();
    if covered != data.len() {
        return false;
    }
    let all_ram = pieces
        .iter()
        .all(|&(pa, n)| mem.check_range(GuestAddress(pa), n));
    if !all_ram {
        return false;
    }
    let mut done = 0;
    for &(pa, n) in pieces {
        if mem
            .write_slice(&data[done..done + n], GuestAddress(pa))
            .is_err()
        {
            return false;
        }
        done += n;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchpoints_refuse_empty_wrapping_and_too_many() {
        let mut p = DebugPoints::default();
        let w = |addr, len| Watchpoint {
            addr,
            len,
            kind: WatchKind::Write,
        };
        assert!(!p.set_watchpoint(w(0x1000, 0), true));
        assert!(!p.set_watchpoint(w(u64::MAX, 2), true));
        assert!(p.set_breakpoint(0x100, false, true));
        assert!(p.set_breakpoint(0x100, true, true));
        for i in 1..MAX_POINTS as u64 {
            assert!(p.set_watchpoint(w(0x1000 + i * 8, 8), true));
        }
        assert!(!p.set_watchpoint(w(0x9000, 8), true));
        assert!(!p.set_breakpoint(0x200, true, true));
        assert_eq!(p.hart_points().count(), MAX_POINTS);
        assert!(p.set_watchpoint(w(0x1008, 8), false));
        assert!(!p.set_watchpoint(w(0x1008, 8), false));
        assert!(p.set_breakpoint(0x200, true, true));
        p.clear();
        assert!(p.is_empty());
    }
}
