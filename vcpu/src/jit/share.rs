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
//! region and changes those values ([`Entry::place`]) instead of assembling it.
//!
//! An entry is used only when the bytes it was translated from (the block's every byte:
//! `Plan::check`), its end and its length are those of the hart's own plan. A plan is
//! decoded from those bytes alone, so the code is the one the hart would assemble. A
//! block's inline CTR records name their sites by numbers in its hart's CTR log
//! (`ctr::log::CtrLog::site`): a copy has them numbered in its own hart's. Entries are never changed, only replaced; once [`MAX_BYTES`] of code are held no more
//! are added, so a guest writing code without end cannot grow the host's memory without
//! bound.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

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

/// A published block.
pub(crate) struct Entry {
    code: Box<[u8]>,
    relocs: Box<[(u32, Reloc)]>,
    /// Its CTR record sites: (offset of the 32-bit site number, source, info).
    pub(crate) ctr_sites: Box<[(usize, u64, u64)]>,
    /// The plan it was assembled from: its bytes, end and length.
    check: Box<[(u32, u8, u64)]>,
    end_pc: u64,
    insns: usize,
    /// Guest RAM's host address then.
    ram_host: u64,
    /// Where it was placed, for which hart.
    from: Placement,
}

impl Entry {
    /// The code of `plan`, assembled for `from` with guest RAM at `ram_host`, holding the
    /// values `relocs` lists.
    pub(crate) fn new(
        code: &[u8],
        relocs: &[(u32, Reloc)],
        ctr_sites: &[(usize, u64, u64)],
        plan: &Plan,
        ram_host: u64,
        from: Placement,
    ) -> Entry {
        Entry {
            code: code.into(),
            relocs: relocs.into(),
            ctr_sites: ctr_sites.into(),
            check: plan.check.as_slice().into(),
            end_pc: plan.end_pc,
            insns: plan.insns.len(),
            ram_host,
            from,
        }
    }

    /// Whether this is the code a hart would assemble from `plan` with guest RAM at
    /// `ram_host`.
    fn fits(&self, plan: &Plan, ram_host: u64) -> bool {
        self.ram_host == ram_host
            && self.end_pc == plan.end_pc
            && self.insns == plan.insns.len()
            && *self.check == *plan.check
    }

    /// The code in `out`, for placement `to` (with the CTR site numbers still those of
    /// the hart that assembled it: [`Entry::ctr_sites`]); false (and `out` of no use) if a field does
    /// not reach (a displacement to the epoch slot out of 32-bit range).
    pub(crate) fn place(&self, to: &Placement, out: &mut Vec<u8>) -> bool {
        out.clear();
        out.extend_from_slice(&self.code);
        let from = &self.from;
        for &(at, r) in self.relocs.iter() {
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
    map: HashMap<Key, Arc<Entry>>,
    /// Code bytes held.
    bytes: usize,
}

impl std::fmt::Debug for SharedBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.lock();
        f.debug_struct("SharedBlocks")
            .field("blocks", &e.map.len())
            .field("bytes", &e.bytes)
            .finish()
    }
}

impl SharedBlocks {
    /// None yet.
    pub fn new() -> SharedBlocks {
        SharedBlocks::default()
    }

    /// A hart that panicked while holding the lock left the map whole (it is changed in
    /// one call), so it is used on.
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The entry of `key` that is the code a hart would assemble from `plan` (with guest
    /// RAM at `ram_host`), if there is one.
    pub(crate) fn find(&self, key: &Key, plan: &Plan, ram_host: u64) -> Option<Arc<Entry>> {
        let e = self.lock().map.get(key).cloned()?;
        e.fits(plan, ram_host).then_some(e)
    }

    /// Publish `entry` under `key` (replacing the one there), unless [`MAX_BYTES`] are held.
    pub(crate) fn publish(&self, key: Key, entry: Entry) {
        let mut e = self.lock();
        let len = entry.code.len();
        if e.bytes + len > MAX_BYTES {
            return;
        }
        e.bytes += len;
        if let Some(old) = e.map.insert(key, Arc::new(entry)) {
            e.bytes -= old.code.len();
        }
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
        let entry = Entry {
            code: code.clone().into(),
            relocs: [
                (3, Reloc::SlotRip),
                (8, Reloc::Here),
                (16, Reloc::Slot),
                (24, Reloc::Table),
                (32, Reloc::GuardBits),
            ]
            .into(),
            ctr_sites: [].into(),
            check: [].into(),
            end_pc: 0,
            insns: 1,
            ram_host: 0,
            from,
        };
        let mut out = Vec::new();
        assert!(entry.place(&to, &mut out));
        let disp = i32::from_le_bytes(out[3..7].try_into().unwrap());
        assert_eq!(to.base as i64 + 7 + disp as i64, to.slot_exec as i64);
        assert_eq!(u64_at(&out, 8), to.base + 0x30);
        assert_eq!(u64_at(&out, 16), to.slot);
        assert_eq!(u64_at(&out, 24), to.table + 32 * 4096);
        assert_eq!(u64_at(&out, 32), to.guard_bits);
        assert_eq!(
            out[40..],
            code[40..],
            "bytes without a value of the hart changed"
        );
        // Placed again where it was: the same bytes.
        assert!(entry.place(&from, &mut out));
        assert_eq!(out, code);
        // A slot out of a 32-bit displacement's reach: no copy.
        let far = Placement {
            slot_exec: to.base + (4 << 30),
            ..to
        };
        assert!(!entry.place(&far, &mut out));
    }
}
