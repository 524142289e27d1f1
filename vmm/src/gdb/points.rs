//! What the stub keeps for gdb's `Z` packets — software and hardware breakpoints and
//! watchpoints, none of them written into guest memory — and guest memory as the selected
//! hart sees it (its current translation, `Vcpu::debug_translate`).
//!
//! **Breakpoints** (`Z0`, `Z1`) stop the hart before the instruction at their address.
//! **Watchpoints** (`Z2` write, `Z3` read, `Z4` access) stop it before an instruction whose
//! access overlaps the watched range: the instruction at the pc is fetched and decoded
//! ([`vcpu_api::insn::memory_access`]: loads, stores, LR/SC, AMOs, their compressed forms,
//! HLV/HSV), its address computed from its base register, and compared with the watched
//! virtual addresses. The stop is reported before the access, as a RISC-V trigger with
//! `timing` = before reports it (Sdtrig); gdb then steps over the instruction and compares
//! the value itself. Cache-block operations and vector accesses are not watched.

use std::collections::BTreeSet;

use gdbstub::target::ext::breakpoints::WatchKind;
use vcpu_api::insn::{memory_access, MemAccessKind};
use vcpu_api::{DebugAccess, Vcpu};
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
                self.with_points(|p| p.set_breakpoint(addr, false, true));
                Ok(true)
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
                self.with_points(|p| p.set_breakpoint(addr, true, true));
                Ok(true)
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

/// The most watchpoints (gdb is refused beyond: it then watches by single-stepping).
pub const MAX_WATCHPOINTS: usize = 64;

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

    /// Adds (`on`) or removes a breakpoint at `pc`; whether the set changed.
    pub fn set_breakpoint(&mut self, pc: u64, hw: bool, on: bool) -> bool {
        let set = if hw { &mut self.hw } else { &mut self.sw };
        if on {
            set.insert(pc)
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
            if self.watch.len() >= MAX_WATCHPOINTS {
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

    /// What stops `hart` before its next instruction, if anything (`mem`: its RAM).
    pub fn check(&self, hart: &Hart, mem: &GuestMemoryMmap) -> Option<Hit> {
        let pc = hart.pc();
        if self.sw.contains(&pc) {
            return Some(Hit::Sw);
        }
        if self.hw.contains(&pc) {
            return Some(Hit::Hw);
        }
        if self.watch.is_empty() {
            return None;
        }
        let insn = fetch(hart, mem, pc)?;
        let access = memory_access(insn)?;
        let start = access.address(Hart::xreg(hart, usize::from(access.base)));
        let end = start.saturating_add(u64::from(access.size));
        self.watch.iter().find_map(|w| {
            let wanted = match access.kind {
                MemAccessKind::Load => w.kind != WatchKind::Write,
                MemAccessKind::Store => w.kind != WatchKind::Read,
                MemAccessKind::Amo => true,
            };
            let overlaps = start < w.addr.saturating_add(w.len) && w.addr < end;
            (wanted && overlaps).then_some(Hit::Watch {
                kind: w.kind,
                addr: start.max(w.addr),
            })
        })
    }
}

/// The instruction at `pc` as `hart` would fetch it (16 or 32 bits), if it is in RAM.
fn fetch(hart: &Hart, mem: &GuestMemoryMmap, pc: u64) -> Option<u32> {
    let half = |va: u64| -> Option<u16> {
        let pa = hart.debug_translate(va, DebugAccess::Fetch).ok()?;
        mem.read_obj::<u16>(GuestAddress(pa)).ok()
    };
    let lo = half(pc)?;
    if lo & 3 != 3 {
        return Some(u32::from(lo));
    }
    let hi = half(pc.wrapping_add(2))?;
    Some(u32::from(lo) | u32::from(hi) << 16)
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
        for i in 0..MAX_WATCHPOINTS as u64 {
            assert!(p.set_watchpoint(w(0x1000 + i * 8, 8), true));
        }
        assert!(!p.set_watchpoint(w(0x9000, 8), true));
        assert!(p.set_watchpoint(w(0x1000, 8), false));
        assert!(!p.set_watchpoint(w(0x1000, 8), false));
        p.clear();
        assert!(p.is_empty());
    }
}
