//! Code pages: the guard that lets a block skip comparing its code bytes at entry.
//!
//! A block used to compare every code byte it was translated from at each entry (3 host
//! instructions per 8 bytes). Now the RAM pages holding a hart's translated code are
//! *protected*: the store TLB keeps no entry for them (`Hart::access_page`), so every store
//! of this hart to such a page takes the slow path, which unprotects the page and moves the
//! hart's code epoch on (`Hart::jit_code_write`). Each block keeps the epoch at which its
//! code was last found intact in a slot of its own; at entry it compares the slot with the
//! hart's epoch (one compare), and only when they differ compares its bytes, protects its
//! pages again and updates the slot (`jit_code_checked`).
//!
//! Writers other than this hart's stores (another hart, a device, the VMM) are not seen
//! by the TLB. The epoch also moves where Zifencei requires this hart's fetches to see
//! them: FENCE.I, a remote fence from the SBI (`Hart::sync_shared`), and every entry into
//! `Hart::run` (the VMM writes guest RAM between runs: loaders, debuggers, tests), but not
//! into `Hart::run_on`, which the VMM uses when nothing else has written it since. A
//! restore loads no store entry for a protected page (`Hart::restore_state`,
//! `Hart::switch_state`).
//!
//! A page that keeps data the guest writes beside its code (small guests, literal pools,
//! trampolines) would thrash: each store unprotects it and moves the epoch, and every block
//! then compares its bytes again. A page unprotected [`MIXED_AFTER`] times is *mixed*: it
//! is never protected again, and its blocks are translated to compare their code bytes at
//! every entry, and with an inline check on each store that may rewrite the block itself
//! (`x64::assemble`, a block without an epoch slot). A block translated with a slot on a page
//! that has since turned mixed finds at its next check that the page cannot be protected
//! (`super::jit_code_checked`) and leaves as stale, to be translated again.

/// Unprotections after which a page is mixed (see the module documentation).
pub(crate) const MIXED_AFTER: u8 = 4;

/// Bit `i % 64` of word `i / 64` (false past the end).
#[inline]
fn bit(words: &[u64], i: u64) -> bool {
    words
        .get((i / 64) as usize)
        .is_some_and(|w| w >> (i % 64) & 1 != 0)
}

/// Epoch slots per page of the code region (`super::region::Region::take_page`).
const SLOTS: usize = 4096 / 8;

/// A block's epoch slot: its addresses in the code region's execute view (where the block
/// reads it, RIP-relative) and write view (where it and `super::jit_code_checked` write it).
#[derive(Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) exec: usize,
    pub(crate) write: usize,
}

/// The protected pages and the blocks' epoch slots of one hart.
#[derive(Default)]
pub(crate) struct CodeGuard {
    /// One bit per 4 KiB page of RAM (by RAM offset): protected.
    pages: Vec<u64>,
    /// One bit per page: mixed (never protected again).
    mixed: Vec<u64>,
    /// How often each page was unprotected, up to [`MIXED_AFTER`] (a byte per page: 0.025%
    /// of the RAM's size, allocated zeroed and so taken from the host only where written).
    unprotected: Vec<u8>,
    /// The page of the code region the next slots come from (its execute and write
    /// addresses), and how many of its slots are given out. Slots never move: they go
    /// with the blocks, when the region is emptied.
    page: Option<(usize, usize)>,
    taken: usize,
}

impl CodeGuard {
    /// Whether RAM page `page` (RAM offset / 4096) is protected.
    #[inline]
    pub(crate) fn protected(&self, page: u64) -> bool {
        bit(&self.pages, page)
    }

    /// Whether RAM page `page` is mixed: code and data the guest writes.
    #[inline]
    pub(crate) fn mixed(&self, page: u64) -> bool {
        bit(&self.mixed, page)
    }

    /// How many pages are mixed.
    pub(crate) fn mixed_pages(&self) -> u64 {
        self.mixed.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Size the page bits for `ram_bytes` of RAM, once: blocks then hold their address
    /// ([`CodeGuard::bits`]), which never moves.
    pub(crate) fn reserve(&mut self, ram_bytes: u64) {
        if self.pages.is_empty() {
            self.pages = vec![0; (ram_bytes.div_ceil(0x1000)).div_ceil(64).max(1) as usize];
            self.mixed = vec![0; self.pages.len()];
            self.unprotected = vec![0; self.pages.len() * 64];
        }
    }

    /// The address of the page bits (bit `page % 64` of word `page / 64`).
    pub(crate) fn bits(&self) -> u64 {
        self.pages.as_ptr() as u64
    }

    /// Protect `page`; whether it was not protected before. A mixed page stays unprotected.
    pub(crate) fn protect(&mut self, page: u64) -> bool {
        let w = (page / 64) as usize;
        if w >= self.pages.len() || self.mixed(page) {
            return false; // not RAM ([`CodeGuard::reserve`] covers all of it), or mixed
        }
        let bit = 1u64 << (page % 64);
        let new = self.pages[w] & bit == 0;
        self.pages[w] |= bit;
        new
    }

    /// Unprotect `page`; whether it was protected. The [`MIXED_AFTER`]th time makes it mixed.
    #[inline]
    pub(crate) fn unprotect(&mut self, page: u64) -> bool {
        match self.pages.get_mut((page / 64) as usize) {
            Some(w) if *w >> (page % 64) & 1 != 0 => {
                *w &= !(1u64 << (page % 64));
                self.count_unprotect(page);
                true
            }
            _ => false,
        }
    }

    #[cold]
    fn count_unprotect(&mut self, page: u64) {
        let Some(n) = self.unprotected.get_mut(page as usize) else {
            return;
        };
        *n = n.saturating_add(1);
        if *n >= MIXED_AFTER {
            self.mixed[(page / 64) as usize] |= 1u64 << (page % 64);
        }
    }

    /// A new block's epoch slot, holding `epoch`, in a page of `region` (stable until
    /// [`CodeGuard::reset_slots`]); `None` when the region has no page left.
    pub(super) fn slot(&mut self, epoch: u64, region: &mut super::region::Region) -> Option<Slot> {
        if self.page.is_none() || self.taken == SLOTS {
            self.page = Some(region.take_page()?);
            self.taken = 0;
        }
        let (exec, write) = self.page?;
        let slot = Slot {
            exec: exec + 8 * self.taken,
            write: write + 8 * self.taken,
        };
        self.taken += 1;
        // SAFETY: a slot of a page the region gave this guard (`take_page`), in its write
        // view, aligned, which no block holds yet.
        unsafe { (slot.write as *mut u64).write(epoch) };
        Some(slot)
    }

    /// Every block is gone (the region was emptied): their slots may be given out again.
    pub(crate) fn reset_slots(&mut self) {
        self.page = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_unprotected_often_turns_mixed_and_stays_unprotected() {
        let mut g = CodeGuard::default();
        g.reserve(1 << 20); // 256 pages
        assert!(!g.protect(256), "past the RAM: never protected");
        for k in 0..MIXED_AFTER {
            assert!(!g.mixed(7));
            assert!(g.protect(7), "protected again after unprotection {k}");
            assert!(!g.protect(7), "already protected");
            assert!(g.protected(7));
            assert!(g.unprotect(7));
            assert!(!g.unprotect(7), "already unprotected");
        }
        assert!(g.mixed(7) && !g.mixed(6) && !g.mixed(8));
        assert!(!g.protect(7), "a mixed page is never protected");
        assert!(!g.protected(7));
        assert_eq!(g.mixed_pages(), 1);
    }
}
