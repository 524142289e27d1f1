//! Translations shared by the harts of a VM.
//!
//! Each hart translates into its own code region and table (`super::table::Jit`), and a
//! block's code holds a few values of its hart: its epoch slot (`super::guard`), its hart's
//! block table and protected-page bits, and its own address where a link slot's stub is
//! ([`Reloc`]). The harts of a VM run the same kernel, so without sharing every vCPU
//! translates again the blocks another already has: a 2-vCPU Linux boot made 74 000
//! translations where a 1-vCPU boot makes 45 000, and a guest that is mostly serial while it
//! boots waits for them.
//!
//! A hart of a VM with a [`SharedBlocks`] (`HartConfig::jit_share`) publishes each block it
//! assembles here, with where the code holds those values. A hart about to assemble a block
//! looks for one of the same key ([`Key`]: pc, RAM offset and kind, and the choices its
//! layout made) translated from the same guest bytes; it copies that code into its own
//! region and changes those values (`Entry::place`) instead of assembling it.
//!
//! An entry is used only when the bytes it was translated from (the block's every byte:
//! `Plan::check`), its end and its length are those of the hart's own plan. A plan is
//! decoded from those bytes alone, so the code is the one the hart would assemble. A
//! block's inline CTR records name their sites by numbers in its hart's CTR log
//! (`ctr::log::CtrLog::site`): a copy has them numbered in its own hart's. Entries are never changed, only replaced; once [`MAX_BYTES`] of code are held no more
//! are added, so a guest writing code without end cannot grow the host's memory without
//! bound.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Mutex, MutexGuard};

use super::table::Plan;

/// The most code bytes a [`SharedBlocks`] holds (see the module documentation).
pub(crate) const MAX_BYTES: usize = 64 << 20;

/// A value a block's code holds that is not the same for every hart of a VM or every
/// place the code may be copied to: what a copy for another hart changes. Everything else
/// a block holds is the same for the harts of a VM: displacements in the hart (rdi), guest
/// values, the helpers' addresses, and guest RAM's host address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reloc {
    /// A 64-bit immediate: an address in the block (a link slot's stub), which moves
    /// with it.
    Here,
    /// A 64-bit immediate: the block's epoch slot (`super::guard`), in the write view.
    Slot,
    /// A 32-bit displacement from the end of the field to the epoch slot in the execute
    /// view (`cmp [rip + disp32], rbp`).
    SlotRip,
    /// A 64-bit immediate: the hart's block table (plus a constant).
    Table,
    /// A 64-bit immediate: the hart's protected-page bits (`super::guard::CodeGuard::bits`).
    GuardBits,
}

/// Where a block's code is placed and the values of its hart ([`Reloc`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The block's address (execute view).
    pub(crate) base: u64,
    /// Its epoch slot in the write and the execute view (0: none, a mixed page).
    pub(crate) slot: u64,
    pub(crate) slot_exec: u64,
    /// The hart's block table and protected-page bits.
    pub(crate) table: u64,
    pub(crate) guard_bits: u64,
}

/// What makes two harts assemble the same code from the same bytes.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) struct Key {
    /// The block's pc.
    pub(crate) va: u64,
    /// Its table key: the RAM offset with the kind's bits (`super::table::Jit::kind`).
    pub(crate) off: u64,
    /// The CTR pair it was translated for (the kind holds only the pair's index in its
    /// hart's list: `super::table::Jit::ctr_pair`).
    pub(crate) ctr_pair: u32,
    /// The layout's other choices ([`Key::GUARDED`] and the rest).
    pub(crate) flags: u8,
}

impl Key {
    /// The block has an epoch slot (its page is not mixed).
    pub(crate) const GUARDED: u8 = 1;
    /// A monitored block that checks its cycles (`super::table::Jit::cycle_room`).
    pub(crate) const CYCLES_CHECKED: u8 = 2;
    /// PAUSE calls the pause-loop helper (`HartConfig::pause_yields`).
    pub(crate) const PAUSE_YIELDS: u8 = 4;
    /// The host has FMA (`super::table::Layout::fma`).
    pub(crate) const FMA: u8 = 8;
}

/// A published block: where its parts are in the [`Arena`], and what it was made from.
struct Entry {
    code: Range<usize>,
    relocs: Range<usize>,
    /// Its CTR record sites.
    ctr_sites: Range<usize>,
    /// The plan it was assembled from: its bytes, end and length.
    check: Range<usize>,
    end_pc: u64,
    insns: usize,
    /// Guest RAM's host address then.
    ram_host: u64,
    /// Where it was placed, for which hart.
    from: Placement,
}

/// The parts of every entry, one after the other: publishing a block allocates nothing
/// but where these grow.
#[derive(Default)]
struct Arena {
    code: Vec<u8>,
    relocs: Vec<(u32, Reloc)>,
    /// (offset of the 32-bit site number, source, info): `ctr::log::CtrLog::site`.
    ctr_sites: Vec<(usize, u64, u64)>,
    check: Vec<(u32, u8, u64)>,
}

/// Append `items` to `to`; where they are.
fn append<T: Copy>(to: &mut Vec<T>, items: &[T]) -> Range<usize> {
    let start = to.len();
    to.extend_from_slice(items);
    start..to.len()
}

/// A block as the assembler left it (`super::x64::Assembled`).
pub(crate) struct Code<'a> {
    pub(crate) code: &'a [u8],
    pub(crate) relocs: &'a [(u32, Reloc)],
    pub(crate) ctr_sites: &'a [(usize, u64, u64)],
}

impl Entry {
    /// Whether this is the code a hart would assemble from `plan` with guest RAM at
    /// `ram_host`.
    fn fits(&self, a: &Arena, plan: &Plan, ram_host: u64) -> bool {
        self.ram_host == ram_host
            && self.end_pc == plan.end_pc
            && self.insns == plan.insns.len()
            && a.check[self.check.clone()] == *plan.check
    }

    /// The code in `out`, for placement `to`, its CTR sites numbered by `site`; false (and
    /// `out` of no use) if a field does not reach (a displacement to the epoch slot out of
    /// 32-bit range).
    fn place(
        &self,
        a: &Arena,
        to: &Placement,
        out: &mut Vec<u8>,
        mut site: impl FnMut(u64, u64) -> u32,
    ) -> bool {
        out.clear();
        out.extend_from_slice(&a.code[self.code.clone()]);
        let from = &self.from;
        for &(at, r) in &a.relocs[self.relocs.clone()] {
            let at = at as usize;
            if r == Reloc::SlotRip {
                // From the field's end, at `base + at + 4`, to the slot.
                let end = to.base.wrapping_add(at as u64 + 4);
                let Ok(disp) = i32::try_from(to.slot_exec.wrapping_sub(end) as i64) else {
                    return false;
                };
                let Some(field) = out.get_mut(at..at + 4) else {
                    return false;
                };
                field.copy_from_slice(&disp.to_le_bytes());
                continue;
            }
            let delta = match r {
                Reloc::Here => to.base.wrapping_sub(from.base),
                Reloc::Slot => to.slot.wrapping_sub(from.slot),
                Reloc::Table => to.table.wrapping_sub(from.table),
                _ => to.guard_bits.wrapping_sub(from.guard_bits),
            };
            let Some(field) = out.get_mut(at..at + 8) else {
                return false;
            };
            let mut v = [0; 8];
            v.copy_from_slice(field);
            field.copy_from_slice(&u64::from_le_bytes(v).wrapping_add(delta).to_le_bytes());
        }
        for &(at, source, info) in &a.ctr_sites[self.ctr_sites.clone()] {
            let Some(field) = out.get_mut(at..at + 4) else {
                return false;
            };
            field.copy_from_slice(&site(source, info).to_le_bytes());
        }
        true
    }
}

/// The blocks the harts of one VM translated (see the module documentation). Give every
/// hart of the VM the same one (`HartConfig::jit_share`).
#[derive(Default)]
pub struct SharedBlocks {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<Key, Entry>,
    arena: Arena,
}

impl std::fmt::Debug for SharedBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.lock();
        f.debug_struct("SharedBlocks")
            .field("blocks", &e.map.len())
            .field("bytes", &e.arena.code.len())
            .finish()
    }
}

impl SharedBlocks {
    /// None yet.
    pub fn new() -> SharedBlocks {
        SharedBlocks::default()
    }

    /// A hart that panicked while holding the lock left the entries whole (each is added
    /// in one call, after its parts), so they are used on.
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// If the entry of `key` is the code a hart would assemble from `plan` (with guest RAM
    /// at `ram_host`), that code in `out` for placement `to`, with its CTR sites numbered
    /// by `site` (`ctr::log::CtrLog::site` of the copying hart); false otherwise.
    pub(crate) fn copy(
        &self,
        key: &Key,
        plan: &Plan,
        ram_host: u64,
        to: &Placement,
        out: &mut Vec<u8>,
        site: impl FnMut(u64, u64) -> u32,
    ) -> bool {
        let e = self.lock();
        e.map
            .get(key)
            .is_some_and(|b| b.fits(&e.arena, plan, ram_host) && b.place(&e.arena, to, out, site))
    }

    /// Publish `code`, assembled from `plan` for placement `from` with guest RAM at
    /// `ram_host`, under `key` (replacing the entry there), unless [`MAX_BYTES`] are held.
    pub(crate) fn publish(
        &self,
        key: Key,
        code: Code<'_>,
        plan: &Plan,
        ram_host: u64,
        from: Placement,
    ) {
        let mut e = self.lock();
        if e.arena.code.len() + code.code.len() > MAX_BYTES {
            return;
        }
        let a = &mut e.arena;
        let entry = Entry {
            code: append(&mut a.code, code.code),
            relocs: append(&mut a.relocs, code.relocs),
            ctr_sites: append(&mut a.ctr_sites, code.ctr_sites),
            check: append(&mut a.check, &plan.check),
            end_pc: plan.end_pc,
            insns: plan.insns.len(),
            ram_host,
            from,
        };
        e.map.insert(key, entry);
    }

    /// Blocks held.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether none are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u64_at(code: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(code[at..at + 8].try_into().unwrap())
    }

    /// A block placed for one hart and copied for another: each field takes the other
    /// hart's value, and the displacement reaches the other slot from the field's new place.
    #[test]
    fn a_copy_holds_the_values_of_its_hart_and_place() {
        let from = Placement {
            base: 0x7000_1000,
            slot: 0x5000_0040,
            slot_exec: 0x7000_0040,
            table: 0x1_0000_0000,
            guard_bits: 0x2_0000_0000,
        };
        let to = Placement {
            base: 0x9100_2200,
            slot: 0x6000_0080,
            slot_exec: 0x9100_0080,
            table: 0x3_0000_0000,
            guard_bits: 0x4_0000_0000,
        };
        let mut code = vec![0x90u8; 64];
        let put = |code: &mut Vec<u8>, at: usize, v: u64| {
            code[at..at + 8].copy_from_slice(&v.to_le_bytes())
        };
        // cmp [rip + disp], rbp: the field at 3, its end at 7.
        let disp = (from.slot_exec as i64 - (from.base as i64 + 7)) as i32;
        code[3..7].copy_from_slice(&disp.to_le_bytes());
        put(&mut code, 8, from.base + 0x30); // a stub
        put(&mut code, 16, from.slot);
        put(&mut code, 24, from.table + 32 * 4096); // a kind's start
        put(&mut code, 32, from.guard_bits);
        // A CTR site number at 40.
        code[40..44].copy_from_slice(&7u32.to_le_bytes());
        let mut a = Arena::default();
        let entry = Entry {
            code: append(&mut a.code, &code),
            relocs: append(
                &mut a.relocs,
                &[
                    (3, Reloc::SlotRip),
                    (8, Reloc::Here),
                    (16, Reloc::Slot),
                    (24, Reloc::Table),
                    (32, Reloc::GuardBits),
                ],
            ),
            ctr_sites: append(&mut a.ctr_sites, &[(40, 0x8000_0010, 3)]),
            check: 0..0,
            end_pc: 0,
            insns: 1,
            ram_host: 0,
            from,
        };
        let mut out = Vec::new();
        let site = |source, info| {
            assert_eq!((source, info), (0x8000_0010, 3));
            9
        };
        assert!(entry.place(&a, &to, &mut out, site));
        let disp = i32::from_le_bytes(out[3..7].try_into().unwrap());
        assert_eq!(to.base as i64 + 7 + disp as i64, to.slot_exec as i64);
        assert_eq!(u64_at(&out, 8), to.base + 0x30);
        assert_eq!(u64_at(&out, 16), to.slot);
        assert_eq!(u64_at(&out, 24), to.table + 32 * 4096);
        assert_eq!(u64_at(&out, 32), to.guard_bits);
        assert_eq!(u32::from_le_bytes(out[40..44].try_into().unwrap()), 9);
        assert_eq!(
            out[44..],
            code[44..],
            "bytes without a value of the hart changed"
        );
        // Placed again where it was, the site numbered as before: the same bytes.
        assert!(entry.place(&a, &from, &mut out, |_, _| 7));
        assert_eq!(out, code);
        // A slot out of a 32-bit displacement's reach: no copy.
        let far = Placement {
            slot_exec: to.base + (4 << 30),
            ..to
        };
        assert!(!entry.place(&a, &far, &mut out, site));
    }
}
