//! The jump cache: for each of a few recent JALR targets, the block translated code reached
//! there, so that the next JALR to the same pc goes straight to it (`x64::jump_indirect`).
//!
//! Without it a JALR of translated code finds its target's block as the dispatcher does:
//! the fetch TLB gives the target's RAM offset, and the block table the block at that
//! offset (about 20 host instructions, and the table's 8 MiB are seldom in cache). A Linux
//! boot runs about 19 million JALRs (function returns, mostly), one every 73 instructions.
//! An entry holds the target pc, the block's code and the [`JumpCache::key`] it was filled
//! under; it is used only while the key is the same, which it stays only while both
//! of these hold:
//!
//! - **The fetch translations are those it was filled under**: the key moves on with the
//!   fetch TLB's epoch (`mmu::Tlb::fetch_epoch`: any flush, any fence of a page, any change
//!   of privilege or virtualization mode). Between those the pc's translation is the one
//!   the fetch TLB gave at the fill, as the privileged spec allows (4.2.1, "Supervisor
//!   Memory-Management Fence Instruction": without SFENCE.VMA a hart may go on using old
//!   translations).
//! - **The block may be entered in the same way as from the block table**: the key moves on
//!   with [`Jit::jump_epoch`](super::table::Jit): when the region is emptied (the code is
//!   gone), a block is found stale, the kind of block to run changes (monitored or not,
//!   the CTR key) or monitored blocks without their cycles check are forgotten.
//!
//! The key is computed from the two epochs by the dispatcher before it enters translated
//! code (`Hart::jit_step`); while translated code runs neither can move (a CSR write, the
//! only helper that could change a translation, leaves for the dispatcher). A block
//! entered through the cache checks its code and its budget itself, as one entered through
//! the table does.

/// Entries of a [`JumpCache`] (a power of two), indexed by the target's bits 1 and up.
pub(crate) const JUMPS: usize = 1024;

/// One cached JALR target (32 bytes: `x64::jump_indirect` indexes by the pc shifted left).
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub(crate) struct JumpEntry {
    va: u64,
    key: u64,
    code: u64,
    _pad: u64,
}

/// A hart's jump cache (see the module documentation). Entries start with key 0, which
/// the cache's key never is.
#[repr(C)]
pub(crate) struct JumpCache {
    /// The key entries filled from now on get, and that those used must have.
    key: u64,
    entries: [JumpEntry; JUMPS],
}

impl Default for JumpCache {
    fn default() -> Self {
        JumpCache {
            key: 1,
            entries: [JumpEntry::default(); JUMPS],
        }
    }
}

impl JumpCache {
    /// The key from the fetch TLB's epoch and the JIT's (both at least 1, and only growing:
    /// their sum never comes back to a value it had).
    #[inline]
    pub(crate) fn set_key(&mut self, fetch_epoch: u64, jump_epoch: u64) {
        self.key = fetch_epoch.wrapping_add(jump_epoch);
    }

    /// Byte offsets in the cache of its key and of its entries' array (for translated code:
    /// an entry's pc, key and code are at 0, 8 and 16 in it).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn layout() -> (usize, usize) {
        use std::mem::offset_of;
        (offset_of!(JumpCache, key), offset_of!(JumpCache, entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_32_bytes_and_empty_ones_never_match() {
        assert_eq!(std::mem::size_of::<JumpEntry>(), 32);
        let c = JumpCache::default();
        assert!(c.key != 0 && c.entries.iter().all(|e| e.key == 0 && e.code == 0));
    }
}
