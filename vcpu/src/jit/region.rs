//! The memory translated blocks live in, filled front to back and emptied as a whole when
//! full. W^X: no page is writable and executable at once. One shared memory object
//! (`memfd_create`) is mapped twice: a read-execute view, where blocks run and every address
//! handed out lies, and a read-write view at another address, through which blocks are
//! copied in and their link slots patched ([`Region::push`], [`Region::patch_u64`]). Both
//! views are the same physical pages, which x86-64 keeps coherent for instruction fetch.

use std::ptr::NonNull;

/// An executable code region of fixed size.
pub(super) struct Region {
    /// The read-execute view.
    exec: NonNull<u8>,
    /// The read-write view of the same pages.
    write: NonNull<u8>,
    size: usize,
    used: usize,
}

// SAFETY: the region is owned by one hart and only touched through `&mut self` (writes) or
// by calls into code the owner placed there.
unsafe impl Send for Region {}

/// Maps `size` bytes of `fd` shared with protection `prot`; `None` if the host refuses.
fn map(fd: libc::c_int, size: usize, prot: libc::c_int) -> Option<NonNull<u8>> {
    // SAFETY: a fresh shared mapping of a descriptor this module owns; the result is
    // checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            prot,
            libc::MAP_SHARED | libc::MAP_NORESERVE,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    NonNull::new(p as *mut u8)
}

impl Region {
    /// Map `size` bytes (reserved lazily by the host kernel) twice; `None` if the host
    /// refuses (no memfd, or no executable mapping): the hart then interprets.
    pub fn new(size: usize) -> Option<Region> {
        // SAFETY: the name is a NUL-terminated string; the result is checked.
        let fd = unsafe { libc::memfd_create(c"vcpu-jit".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let views = (|| {
            // SAFETY: `fd` is the memory object created above.
            if unsafe { libc::ftruncate(fd, size as libc::off_t) } != 0 {
                return None;
            }
            let write = map(fd, size, libc::PROT_READ | libc::PROT_WRITE)?;
            match map(fd, size, libc::PROT_READ | libc::PROT_EXEC) {
                Some(exec) => Some((exec, write)),
                None => {
                    // SAFETY: the mapping made just above, not handed out.
                    unsafe { libc::munmap(write.as_ptr() as *mut libc::c_void, size) };
                    None
                }
            }
        })();
        // SAFETY: the mappings (if any) keep the memory object alive; the descriptor is
        // no longer needed.
        unsafe { libc::close(fd) };
        let (exec, write) = views?;
        Some(Region {
            exec,
            write,
            size,
            used: 0,
        })
    }

    /// The address the next block will be placed at, if `len` more bytes fit.
    pub fn next(&self, len: usize) -> Option<usize> {
        (self.used + len <= self.size).then(|| self.exec.as_ptr() as usize + self.used)
    }

    /// Copy `code` (assembled for address [`Region::next`]) in; returns its address.
    pub fn push(&mut self, code: &[u8]) -> usize {
        assert!(self.used + code.len() <= self.size, "JIT region overflow");
        let at = self.exec.as_ptr() as usize + self.used;
        // SAFETY: in bounds of the write view (asserted); no code in the written range has
        // been handed out.
        unsafe {
            std::ptr::copy_nonoverlapping(
                code.as_ptr(),
                self.write.as_ptr().add(self.used),
                code.len(),
            )
        };
        // Keep blocks 16-byte aligned.
        self.used = (self.used + code.len() + 15) & !15;
        at
    }

    /// Writes `value` to the 8 bytes at `addr`, an address of the execute view inside code
    /// already placed (a block's link slot). `false` (nothing written) if `addr` is not
    /// inside the placed code.
    pub fn patch_u64(&mut self, addr: usize, value: u64) -> bool {
        let Some(offset) = addr.checked_sub(self.exec.as_ptr() as usize) else {
            return false;
        };
        if offset.checked_add(8).is_none_or(|end| end > self.used) {
            return false;
        }
        // SAFETY: the 8 bytes lie in the placed part of the write view (checked above).
        unsafe {
            (self.write.as_ptr().add(offset) as *mut u64).write_unaligned(value);
        }
        true
    }

    /// Forget every block (the caller drops all references to them first).
    pub fn clear(&mut self) {
        self.used = 0;
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mappings made in `new`, each unmapped once.
        unsafe {
            libc::munmap(self.exec.as_ptr() as *mut libc::c_void, self.size);
            libc::munmap(self.write.as_ptr() as *mut libc::c_void, self.size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No page of the region is writable and executable at once; code placed through the
    /// write view runs from the execute view, and a patched slot reads back there.
    #[test]
    fn the_region_is_never_writable_and_executable() {
        let mut r = Region::new(1 << 20).expect("a JIT region");
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let perms = |base: usize| {
            maps.lines()
                .find(|l| {
                    let (range, _) = l.split_once(' ').unwrap();
                    let (lo, hi) = range.split_once('-').unwrap();
                    let (lo, hi) = (
                        usize::from_str_radix(lo, 16).unwrap(),
                        usize::from_str_radix(hi, 16).unwrap(),
                    );
                    (lo..hi).contains(&base)
                })
                .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
                .unwrap()
        };
        assert_eq!(perms(r.exec.as_ptr() as usize), "r-xs");
        assert_eq!(perms(r.write.as_ptr() as usize), "rw-s");
        // mov eax, 42; ret; then an 8-byte slot.
        let mut code = vec![0xb8, 42, 0, 0, 0, 0xc3, 0x90, 0x90];
        code.extend_from_slice(&0u64.to_le_bytes());
        let at = r.push(&code);
        // SAFETY: `at` holds the complete function above, in executable memory.
        let f: extern "C" fn() -> u32 = unsafe { std::mem::transmute(at) };
        assert_eq!(f(), 42);
        assert!(r.patch_u64(at + 8, 0x1122_3344_5566_7788));
        assert_eq!(
            // SAFETY: inside the placed code, readable in the execute view.
            unsafe { ((at + 8) as *const u64).read_unaligned() },
            0x1122_3344_5566_7788
        );
        assert!(!r.patch_u64(at + 12, 1), "past the placed code");
        assert!(!r.patch_u64(0, 1));
    }
}
