//! The memory translated blocks live in: one anonymous mapping, readable, writable and
//! executable, filled front to back and emptied as a whole when full.

use std::ptr::NonNull;

/// An executable code region of fixed size.
pub(super) struct Region {
    base: NonNull<u8>,
    size: usize,
    used: usize,
}

// SAFETY: the region is owned by one hart and only touched through `&mut self` (writes) or
// by calls into code the owner placed there.
unsafe impl Send for Region {}

impl Region {
    /// Map `size` bytes (reserved lazily by the host kernel); `None` if the host refuses an
    /// executable mapping.
    pub fn new(size: usize) -> Option<Region> {
        // SAFETY: an anonymous private mapping; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        Some(Region {
            base: NonNull::new(p as *mut u8)?,
            size,
            used: 0,
        })
    }

    /// The address the next block will be placed at, if `len` more bytes fit.
    pub fn next(&self, len: usize) -> Option<usize> {
        (self.used + len <= self.size).then(|| self.base.as_ptr() as usize + self.used)
    }

    /// Copy `code` (assembled for address [`Region::next`]) in; returns its address.
    pub fn push(&mut self, code: &[u8]) -> usize {
        assert!(self.used + code.len() <= self.size, "JIT region overflow");
        let at = self.base.as_ptr() as usize + self.used;
        // SAFETY: in bounds (asserted); no code in the written range has been handed out.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), at as *mut u8, code.len()) };
        // Keep blocks 16-byte aligned.
        self.used = (self.used + code.len() + 15) & !15;
        at
    }

    /// Forget every block (the caller drops all references to them first).
    pub fn clear(&mut self) {
        self.used = 0;
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.base.as_ptr() as *mut libc::c_void, self.size) };
    }
}
