//! Multiprocessor support: a virtual clock shared by several harts and a per-hart mailbox
//! through which other threads post interrupts and remote fences.
//!
//! Each hart keeps its own virtual clock (instruction slots). Harts that share a
//! [`SharedClock`] publish `max(global, local)` at every chunk boundary (at most 4096
//! instructions apart) and adopt the global value when it is ahead, so time never goes
//! backward on a hart and the skew between harts is bounded by one chunk.
//!
//! A [`HartMailbox`] is merged by its hart at every chunk boundary and on entry to
//! the backend's [`crate::Vcpu::run`]: posted `hvip` bits are ORed into `hvip`, posted MSIs
//! set their pending bits in the guest interrupt file `hstatus.VGEIN` selects, and a flush request
//! flushes the TLB and is then acknowledged (the decode cache never needs a flush).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A virtual clock (in instruction slots) shared by the harts of one machine.
#[derive(Debug, Default)]
pub struct SharedClock {
    slots: AtomicU64,
}

impl SharedClock {
    /// A clock at 0.
    pub fn new() -> SharedClock {
        SharedClock::default()
    }
    /// The global time in instruction slots.
    pub fn now(&self) -> u64 {
        self.slots.load(Ordering::SeqCst)
    }
    /// Moves the global time forward to `slots` (never backward); returns the new global time.
    pub fn advance_to(&self, slots: u64) -> u64 {
        self.slots.fetch_max(slots, Ordering::SeqCst).max(slots)
    }
}

/// Requests other threads post to a hart (see the module documentation).
#[derive(Debug, Default)]
pub struct HartMailbox {
    /// `hvip` bits to OR in.
    hvip: AtomicU64,
    /// Flush requests issued (a ticket counter).
    flush_requested: AtomicU64,
    /// Flush requests completed.
    flush_done: AtomicU64,
    /// Whether the hart is inside `run`.
    running: AtomicBool,
    /// MSIs posted for the vCPU's guest interrupt file: bit `i` of word `i / 64` is
    /// identity `i` (identities 1..[`MAILBOX_MSI_IDS`]).
    msis: [AtomicU64; MAILBOX_MSI_IDS / 64],
}

/// The identities [`HartMailbox::post_msi`] can carry (0 is never an interrupt; larger
/// identities are dropped, as an interrupt file of fewer identities ignores them).
pub const MAILBOX_MSI_IDS: usize = 256;

impl HartMailbox {
    /// Makes the VS-level interrupts `bits` (`hvip` bits) pending at the hart's next check.
    pub fn post_interrupts(&self, bits: u64) {
        self.hvip.fetch_or(bits, Ordering::SeqCst);
    }
    /// Whether interrupts were posted and not yet taken in by the hart.
    pub fn has_pending(&self) -> bool {
        self.hvip.load(Ordering::SeqCst) != 0
    }
    /// Posts an MSI of identity `id` for the vCPU's guest interrupt file (the one
    /// `hstatus.VGEIN` selects): the hart sets its pending bit at its next check, as a write
    /// to the file's `seteipnum_le` would (AIA "Memory region for an interrupt file").
    /// Identities outside 1..[`MAILBOX_MSI_IDS`] are ignored.
    pub fn post_msi(&self, id: u32) {
        let id = id as usize;
        if id != 0 && id < MAILBOX_MSI_IDS {
            self.msis[id / 64].fetch_or(1 << (id % 64), Ordering::SeqCst);
        }
    }
    /// Whether MSIs were posted and not yet taken in by the hart.
    pub fn has_msi(&self) -> bool {
        self.msis.iter().any(|w| w.load(Ordering::SeqCst) != 0)
    }
    /// Whether anything that can wake the hart was posted: interrupts or MSIs.
    pub fn has_posted(&self) -> bool {
        self.has_pending() || self.has_msi()
    }
    /// The posted MSIs not yet taken in, left posted (for a snapshot of a paused vCPU).
    pub fn peek_msis(&self) -> [u64; MAILBOX_MSI_IDS / 64] {
        std::array::from_fn(|i| self.msis[i].load(Ordering::SeqCst))
    }
    /// Backend side: the posted MSIs (bit `i` of word `i / 64` is identity `i`), cleared.
    #[inline]
    pub fn take_msis(&self) -> Option<[u64; MAILBOX_MSI_IDS / 64]> {
        if self.msis.iter().all(|w| w.load(Ordering::Relaxed) == 0) {
            return None;
        }
        Some(std::array::from_fn(|i| {
            self.msis[i].swap(0, Ordering::SeqCst)
        }))
    }
    /// Asks the hart to flush its TLB before its next instruction chunk;
    /// returns a ticket for [`HartMailbox::flush_complete`].
    pub fn request_flush(&self) -> u64 {
        self.flush_requested.fetch_add(1, Ordering::SeqCst) + 1
    }
    /// Whether the flush of `ticket` is done, or will be done before the hart executes
    /// another instruction (it is not inside `run`).
    pub fn flush_complete(&self, ticket: u64) -> bool {
        self.flush_done.load(Ordering::SeqCst) >= ticket || !self.running.load(Ordering::SeqCst)
    }

    /// Backend side: the hart enters (`true`) or leaves `run`.
    pub fn set_running(&self, on: bool) {
        self.running.store(on, Ordering::SeqCst);
    }
    /// Backend side: the posted `hvip` bits, cleared.
    pub fn take_interrupts(&self) -> u64 {
        if self.hvip.load(Ordering::Relaxed) == 0 {
            0
        } else {
            self.hvip.swap(0, Ordering::SeqCst)
        }
    }
    /// Backend side: the flush ticket to acknowledge, if a flush is outstanding.
    pub fn flush_wanted(&self) -> Option<u64> {
        let req = self.flush_requested.load(Ordering::SeqCst);
        (req > self.flush_done.load(Ordering::Relaxed)).then_some(req)
    }
    /// Backend side: the flush of `ticket` (and every earlier one) is done.
    pub fn ack_flush(&self, ticket: u64) {
        self.flush_done.fetch_max(ticket, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod msi_tests {
    use super::*;

    /// Posted MSIs are kept (identity 0 and those past the bitmap dropped), wake the hart
    /// (`has_posted`) without counting as posted `hvip` bits, and are taken once.
    #[test]
    fn msis_are_posted_peeked_and_taken_once() {
        let m = HartMailbox::default();
        assert!(m.take_msis().is_none() && !m.has_posted());
        for id in [0, 1, 64, 255, 256, u32::MAX] {
            m.post_msi(id);
        }
        assert!(m.has_msi() && m.has_posted() && !m.has_pending());
        let want = [1 << 1, 1, 0, 1 << 63];
        assert_eq!(m.peek_msis(), want);
        assert_eq!(m.take_msis(), Some(want));
        assert!(m.take_msis().is_none() && !m.has_posted());
    }
}
