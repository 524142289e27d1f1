//! Guest RAM as the hart sees it: one contiguous `vm-memory` region accessed through relaxed
//! atomics, so several harts on several threads may share it without data races.

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};
use vm_memory::{GuestAddress, GuestMemoryBackend, GuestMemoryMmap, GuestMemoryRegion};

/// Why guest RAM is not usable by the hart (a [`crate::HartError::RamLayout`] to the caller).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RamError {
    /// More than one region.
    #[error("guest memory must be one contiguous region, not {0}")]
    Regions(usize),
    /// No region at all.
    #[error("guest memory has no region")]
    NoRegion,
    /// The region has no host mapping.
    #[error("cannot map guest RAM: {0}")]
    Map(String),
}

/// Guest RAM: a single region `[base, base + size)`.
pub(crate) struct Ram {
    /// Keeps the mapping alive for as long as `host` is used.
    _mem: GuestMemoryMmap,
    host: *mut u8,
    pub base: u64,
    pub size: u64,
}

// SAFETY: `host` points into the mapping owned by `_mem`, which lives as long as `Ram`; every
// access goes through atomics and is bounds-checked by the caller against `size`.
unsafe impl Send for Ram {}

impl Ram {
    pub fn new(mem: GuestMemoryMmap) -> Result<Ram, RamError> {
        if mem.num_regions() != 1 {
            return Err(RamError::Regions(mem.num_regions()));
        }
        let (base, size) = match mem.iter().next() {
            Some(region) => (region.start_addr().0, region.len()),
            None => return Err(RamError::NoRegion),
        };
        let host = mem
            .get_host_address(GuestAddress(base))
            .map_err(|e| RamError::Map(e.to_string()))?;
        Ok(Ram {
            _mem: mem,
            host,
            base,
            size,
        })
    }

    /// The RAM offset of `[paddr, paddr + len)` if it lies entirely in RAM.
    #[inline]
    pub fn offset(&self, paddr: u64, len: u64) -> Option<u64> {
        let off = paddr.wrapping_sub(self.base);
        if off < self.size && len <= self.size - off {
            Some(off)
        } else {
            None
        }
    }

    /// Load `size` bytes (1, 2, 4, 8) at RAM offset `off`, zero-extended. `off + size` must be
    /// within RAM (checked by the caller via [`Ram::offset`] or the TLB).
    #[inline(always)]
    pub fn load(&self, off: u64, size: u32) -> u64 {
        debug_assert!(off + size as u64 <= self.size);
        // SAFETY: in bounds (caller contract); atomics make concurrent access well-defined.
        unsafe {
            let p = self.host.add(off as usize);
            if (p as usize) & (size as usize - 1) == 0 {
                match size {
                    1 => (*(p as *const AtomicU8)).load(Ordering::Relaxed) as u64,
                    2 => (*(p as *const AtomicU16)).load(Ordering::Relaxed) as u64,
                    4 => (*(p as *const AtomicU32)).load(Ordering::Relaxed) as u64,
                    _ => (*(p as *const AtomicU64)).load(Ordering::Relaxed),
                }
            } else {
                let mut v = 0u64;
                for i in 0..size as usize {
                    v |= ((*(p.add(i) as *const AtomicU8)).load(Ordering::Relaxed) as u64)
                        << (8 * i);
                }
                v
            }
        }
    }

    /// Store the low `size` bytes of `val` at RAM offset `off` (caller checks bounds).
    #[inline(always)]
    pub fn store(&self, off: u64, size: u32, val: u64) {
        debug_assert!(off + size as u64 <= self.size);
        // SAFETY: as for `load`.
        unsafe {
            let p = self.host.add(off as usize);
            if (p as usize) & (size as usize - 1) == 0 {
                match size {
                    1 => (*(p as *const AtomicU8)).store(val as u8, Ordering::Relaxed),
                    2 => (*(p as *const AtomicU16)).store(val as u16, Ordering::Relaxed),
                    4 => (*(p as *const AtomicU32)).store(val as u32, Ordering::Relaxed),
                    _ => (*(p as *const AtomicU64)).store(val, Ordering::Relaxed),
                }
            } else {
                for i in 0..size as usize {
                    (*(p.add(i) as *const AtomicU8))
                        .store((val >> (8 * i)) as u8, Ordering::Relaxed);
                }
            }
        }
    }

    /// The 32-bit word at a 4-byte-aligned... or 2-byte-aligned offset, for instruction fetch.
    /// Reads two halfwords so that it never needs 4-byte alignment.
    #[inline(always)]
    pub fn fetch32(&self, off: u64) -> u32 {
        debug_assert!(off + 4 <= self.size && off & 1 == 0);
        // SAFETY: in bounds (caller contract), halfword aligned.
        unsafe {
            let p = self.host.add(off as usize);
            let lo = (*(p as *const AtomicU16)).load(Ordering::Relaxed) as u32;
            let hi = (*(p.add(2) as *const AtomicU16)).load(Ordering::Relaxed) as u32;
            lo | (hi << 16)
        }
    }

    /// The host address of RAM offset `off` (for translated code, which accesses RAM
    /// directly at offsets the TLB vouches for).
    pub fn host_addr(&self, off: u64) -> usize {
        self.host as usize + off as usize
    }

    /// An aligned 32- or 64-bit atomic cell at `off` for LR/SC/AMOs (`off` aligned, in bounds).
    #[inline]
    pub fn atomic32(&self, off: u64) -> &AtomicU32 {
        debug_assert!(off & 3 == 0 && off + 4 <= self.size);
        // SAFETY: aligned and in bounds (caller contract); lives as long as `self`.
        unsafe { &*(self.host.add(off as usize) as *const AtomicU32) }
    }

    /// See [`Ram::atomic32`].
    #[inline]
    pub fn atomic64(&self, off: u64) -> &AtomicU64 {
        debug_assert!(off & 7 == 0 && off + 8 <= self.size);
        // SAFETY: as for `atomic32`.
        unsafe { &*(self.host.add(off as usize) as *const AtomicU64) }
    }
}
