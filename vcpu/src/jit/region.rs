//! The memory translated blocks live in, filled front to back and emptied as a whole when
//! full. W^X: no page is writable and executable at once. One shared anonymous mapping is
//! mapped twice: a read-execute view, where blocks run and every address handed out lies,
//! and a read-write view at another address, through which blocks are copied in and their
//! link slots patched ([`Region::push`], [`Region::patch_u64`]). Both views are the same
//! physical pages: what is written through one is read through the other at once.
//!
//! Instruction fetch needs more. Code written through one linear address and fetched
//! through another is what the Intel SDM (Vol. 3A, "Self-Modifying Code", in the chapter on
//! memory cache control) leaves to software: the processor checks a write against the
//! instructions it has already fetched by linear address, so a write through the write view
//! can leave stale bytes in flight for the execute view (here: the zeros of lines past the
//! newest block, fetched ahead while it ran), and a serializing instruction must come
//! between the write and the run. [`Region::push`] marks the region, and
//! [`Region::sync_fetch`], right before translated code is entered, serializes once after
//! new code. Without it, Linux boots crashed now and then at the first instruction of a
//! new 64-byte line of a block, executing zeros (`add [rax], al` and the like).
//!
//! The second view is made with `mremap(old_size = 0)`, which duplicates a shared mapping,
//! rather than from a `memfd` (the fallback where that is refused): the host kernel names
//! shared anonymous memory `/dev/zero (deleted)`, which host `perf` treats as anonymous and
//! so symbolises from `/tmp/perf-PID.map` (`--perf-map`); a `memfd:` mapping it would look
//! up as a file.

use std::ptr::NonNull;

/// An executable code region of fixed size.
pub(super) struct Region {
    /// The read-execute view.
    exec: NonNull<u8>,
    /// The read-write view of the same pages.
    write: NonNull<u8>,
    size: usize,
    used: usize,
    /// Bytes from the start already given host pages in both views ([`POPULATE`] steps).
    populated: usize,
    /// The address ranges of execute views given up by [`Region::renew`], kept mapped
    /// without access or memory so that no later mapping (no later block) takes them.
    retired: Vec<(NonNull<u8>, usize)>,
    /// Code was written through the write view since the last [`Region::sync_fetch`].
    unsynced: bool,
    /// How this host serializes instruction fetch ([`Serialize`]).
    serialize: Serialize,
}

/// A serializing instruction that user code may execute and that a hypervisor does not trap
/// (CPUID would be one, but it leaves a virtual machine for the hypervisor every time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Serialize {
    /// SERIALIZE (CPUID.(EAX=07H, ECX=0):EDX[14]).
    Instruction,
    /// IRETQ to the next instruction, at the same privilege level, with the same stack,
    /// flags and selectors: only its serialization has an effect (IRET is serializing on
    /// every x86-64 processor).
    Iret,
}

impl Serialize {
    /// The one this processor has.
    fn detect() -> Serialize {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__cpuid, __cpuid_count};
            if __cpuid(0).eax >= 7 && __cpuid_count(7, 0).edx >> 14 & 1 != 0 {
                return Serialize::Instruction;
            }
        }
        Serialize::Iret
    }

    /// Serialize: every instruction fetched after this one is fetched anew.
    #[cold]
    #[inline(never)]
    fn run(self) {
        #[cfg(not(target_arch = "x86_64"))]
        let _ = self;
        #[cfg(target_arch = "x86_64")]
        match self {
            // SAFETY: SERIALIZE (0f 01 e8) has no operands and changes no state.
            Serialize::Instruction => unsafe { std::arch::asm!(".byte 0x0f, 0x01, 0xe8") },
            // SAFETY: the frame pushed is the current one (SS, the stack pointer before the
            // pushes, RFLAGS, CS, the next instruction), which IRETQ pops whole: execution
            // goes on at the label with every register as it was but `tmp`. The asm uses the
            // stack (no `nostack`), so the compiler keeps nothing below the stack pointer.
            Serialize::Iret => unsafe {
                std::arch::asm!(
                    "mov {tmp}, ss",
                    "push {tmp}",
                    "lea {tmp}, [rsp + 8]",
                    "push {tmp}",
                    "pushfq",
                    "mov {tmp}, cs",
                    "push {tmp}",
                    "lea {tmp}, [rip + 2f]",
                    "push {tmp}",
                    "iretq",
                    "2:",
                    tmp = out(reg) _,
                )
            },
        }
    }
}

/// The most times [`Region::renew`] moves the region (each keeps the old execute view's
/// address space reserved, the region's size, and a host mapping).
pub(super) const MAX_RENEWALS: usize = 1024;

/// Bytes before each block: its word ([`Region::word`]) in the last 8, and blocks stay
/// 16-byte aligned.
const HEADER: usize = 16;

/// The step in which the region's pages are given host memory ahead of use. Left to page
/// faults, every 4 KiB page of code costs two (one per view), about a tenth of a Linux
/// boot's host time; populating a step at a time costs one system call per view.
const POPULATE: usize = 2 << 20;

// SAFETY: the region is owned by one hart and only touched through `&mut self` (writes) or
// by calls into code the owner placed there.
unsafe impl Send for Region {}

impl Region {
    /// Map `size` bytes (reserved lazily by the host kernel) twice; `None` if the host
    /// refuses (no shared anonymous memory, or no executable mapping): the hart then interprets.
    pub fn new(size: usize) -> Option<Region> {
        let (exec, write) = Self::anonymous_views(size).or_else(|| Self::memfd_views(size))?;
        Some(Region {
            exec,
            write,
            size,
            used: 0,
            populated: 0,
            retired: Vec::new(),
            unsynced: false,
            serialize: Serialize::detect(),
        })
    }

    /// Moves the (emptied) region to new addresses, so that blocks placed from now on never
    /// lie where an earlier block did (a host profiler's map of translated code,
    /// `--perf-map`, names each address once). The old views' pages are given back to the
    /// host, and the old execute view's addresses stay reserved (no access) until the
    /// region is dropped. `false` (the region stays where it is) after [`MAX_RENEWALS`]
    /// moves, or if the host refuses a new mapping.
    pub fn renew(&mut self) -> bool {
        if self.retired.len() >= MAX_RENEWALS {
            return false;
        }
        let Some((exec, write)) =
            Self::anonymous_views(self.size).or_else(|| Self::memfd_views(self.size))
        else {
            return false;
        };
        // SAFETY: the old write view, of `size` bytes, is no longer used (its addresses
        // were never handed out: any later mapping may take them).
        unsafe { libc::munmap(self.write.as_ptr() as *mut libc::c_void, self.size) };
        // SAFETY: replaces the old execute view, of `size` bytes, with a private mapping
        // without access or memory; nothing runs there any more (the region was emptied,
        // and every address is checked against the current views before use). The shared
        // pages go with their last view.
        let reserved = unsafe {
            libc::mmap(
                self.exec.as_ptr() as *mut libc::c_void,
                self.size,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if reserved == libc::MAP_FAILED {
            // Not reserved: given back (a later mapping may take the range).
            // SAFETY: as above.
            unsafe { libc::munmap(self.exec.as_ptr() as *mut libc::c_void, self.size) };
        } else {
            self.retired.push((self.exec, self.size));
        }
        self.exec = exec;
        self.write = write;
        self.used = 0;
        self.populated = 0;
        true
    }

    /// The two views of one shared anonymous mapping (see the module doc).
    fn anonymous_views(size: usize) -> Option<(NonNull<u8>, NonNull<u8>)> {
        // SAFETY: a fresh shared anonymous mapping; the result is checked.
        let write = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if write == libc::MAP_FAILED {
            return None;
        }
        let unmap = |p: *mut libc::c_void| {
            // SAFETY: a mapping of `size` bytes made here and not handed out.
            unsafe { libc::munmap(p, size) };
        };
        // SAFETY: `write` is the shared mapping above; with `old_size` 0 the kernel maps the
        // same pages again at a new address (shared mappings only). The result is checked.
        let exec = unsafe { libc::mremap(write, 0, size, libc::MREMAP_MAYMOVE) };
        if exec == libc::MAP_FAILED {
            unmap(write);
            return None;
        }
        // SAFETY: `exec` is the second view made above, nothing placed in it yet.
        if unsafe { libc::mprotect(exec, size, libc::PROT_READ | libc::PROT_EXEC) } != 0 {
            unmap(exec);
            unmap(write);
            return None;
        }
        Some((
            NonNull::new(exec as *mut u8)?,
            NonNull::new(write as *mut u8)?,
        ))
    }

    /// The two views from a `memfd`, where `mremap` cannot duplicate a mapping (valgrind,
    /// for one, refuses it, and the benchmarks' `--callgrind` runs need translated code).
    /// Host `perf` does not read `--perf-map` names for these.
    fn memfd_views(size: usize) -> Option<(NonNull<u8>, NonNull<u8>)> {
        // SAFETY: the name is a NUL-terminated string; the result is checked.
        let fd = unsafe { libc::memfd_create(c"vcpu-jit".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let map = |prot| {
            // SAFETY: a fresh shared mapping of the memory object above; checked.
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
            (p != libc::MAP_FAILED).then_some(p)
        };
        let views = (|| {
            // SAFETY: `fd` is the memory object created above.
            if unsafe { libc::ftruncate(fd, size as libc::off_t) } != 0 {
                return None;
            }
            let write = map(libc::PROT_READ | libc::PROT_WRITE)?;
            let Some(exec) = map(libc::PROT_READ | libc::PROT_EXEC) else {
                // SAFETY: the mapping made just above, not handed out.
                unsafe { libc::munmap(write, size) };
                return None;
            };
            Some((
                NonNull::new(exec as *mut u8)?,
                NonNull::new(write as *mut u8)?,
            ))
        })();
        // SAFETY: the mappings (if any) keep the memory object alive; the descriptor is
        // no longer needed.
        unsafe { libc::close(fd) };
        views
    }

    /// Gives host pages to both views up to at least `end` (a step past it), so that
    /// copying code in and running it takes no page faults. Best effort: on a host without
    /// `MADV_POPULATE_*` (Linux before 5.14) the pages come by faults as before.
    fn populate(&mut self, end: usize) {
        while self.populated < end.min(self.size) {
            let len = POPULATE.min(self.size - self.populated);
            // SAFETY: both ranges lie inside this region's mappings; populating only
            // allocates (zeroed, never-used) pages and maps them with the views' protections.
            unsafe {
                let w = self.write.as_ptr().add(self.populated) as *mut libc::c_void;
                let x = self.exec.as_ptr().add(self.populated) as *mut libc::c_void;
                libc::madvise(w, len, libc::MADV_POPULATE_WRITE);
                libc::madvise(x, len, libc::MADV_POPULATE_READ);
            }
            self.populated += len;
        }
    }

    /// The address the next block will be placed at, if `len` more bytes fit.
    pub fn next(&self, len: usize) -> Option<usize> {
        (self.used + HEADER + len <= self.size)
            .then(|| self.exec.as_ptr() as usize + self.used + HEADER)
    }

    /// Copy `code` (assembled for address [`Region::next`]) in, after a header whose word
    /// ([`Region::word`]) is 0; returns its address.
    pub fn push(&mut self, code: &[u8]) -> usize {
        let start = self.used + HEADER;
        assert!(start + code.len() <= self.size, "JIT region overflow");
        self.populate(start + code.len());
        // SAFETY: in bounds of the write view (asserted); no code in the written range has
        // been handed out.
        unsafe {
            let to = self.write.as_ptr().add(start);
            (to.sub(8) as *mut u64).write_unaligned(0);
            std::ptr::copy_nonoverlapping(code.as_ptr(), to, code.len())
        };
        self.unsynced = true;
        // Keep blocks 16-byte aligned.
        self.used = (start + code.len() + 15) & !15;
        self.exec.as_ptr() as usize + start
    }

    /// Makes instruction fetch see the code placed since the last call (see the module
    /// documentation): to be called right before translated code runs, on the thread that
    /// runs it. Link slots and block words are data (read by loads), which need nothing.
    /// A thread moved to another processor between this and the run gets there through an
    /// interrupt and its return, which serializes that processor too.
    #[inline]
    pub fn sync_fetch(&mut self) {
        if self.unsynced {
            self.unsynced = false;
            self.serialize.run();
        }
    }

    /// The word kept for the block placed at `code` (by [`Region::push`]), in the 8 bytes
    /// before it, which its code never reads; `None` if no block can be there.
    pub fn word(&self, code: usize) -> Option<u64> {
        self.read_u64(code.checked_sub(8)?)
    }

    /// Set the word of the block at `code` ([`Region::word`]); `false` if no block can be
    /// there.
    pub fn set_word(&mut self, code: usize, value: u64) -> bool {
        code.checked_sub(8)
            .is_some_and(|at| self.patch_u64(at, value))
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

    /// The 8 bytes at `addr` (as for [`Region::patch_u64`]), or `None` if `addr` is not
    /// inside the placed code.
    pub fn read_u64(&self, addr: usize) -> Option<u64> {
        let offset = addr.checked_sub(self.exec.as_ptr() as usize)?;
        if offset.checked_add(8).is_none_or(|end| end > self.used) {
            return None;
        }
        // SAFETY: the 8 bytes lie in the placed part of the write view (checked above).
        Some(unsafe { (self.write.as_ptr().add(offset) as *const u64).read_unaligned() })
    }

    /// Forget every block (the caller drops all references to them first).
    pub fn clear(&mut self) {
        self.used = 0;
    }

    /// Takes the next whole page of the region for data that blocks read where they run
    /// (their epoch slots: `super::guard`): a page without code, so that writing it
    /// never touches a page the processor fetches instructions from. Its addresses in the
    /// execute view (within the region's size of every block: RIP-relative) and in the
    /// write view; `None` when it does not fit. Its contents are left as they were.
    pub fn take_page(&mut self) -> Option<(usize, usize)> {
        const PAGE: usize = 4096;
        let start = self.used.next_multiple_of(PAGE);
        if start + PAGE > self.size {
            return None;
        }
        self.populate(start + PAGE);
        self.used = start + PAGE;
        Some((
            self.exec.as_ptr() as usize + start,
            self.write.as_ptr() as usize + start,
        ))
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mappings made in `new` or `renew`, and the reservations of the
        // execute views `renew` gave up, each unmapped once.
        unsafe {
            libc::munmap(self.exec.as_ptr() as *mut libc::c_void, self.size);
            libc::munmap(self.write.as_ptr() as *mut libc::c_void, self.size);
            for &(p, len) in &self.retired {
                libc::munmap(p.as_ptr() as *mut libc::c_void, len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No page of the region is writable and executable at once; code placed through the
    /// write view runs from the execute view, and a patched slot reads back there.
    /// The execute view carries the name host `perf` treats as anonymous memory, so that
    /// its samples are symbolised from `/tmp/perf-PID.map` (perf's `is_anon_memory`
    /// accepts `//anon`, `/dev/zero*` and `/anon_hugepage*`; a `/memfd:` view is not).
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
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    (
                        f[1].to_string(),
                        f.get(5).copied().unwrap_or("").to_string(),
                    )
                })
                .unwrap()
        };
        let (exec, exec_name) = perms(r.exec.as_ptr() as usize);
        assert_eq!(exec, "r-xs");
        assert!(
            exec_name.starts_with("/dev/zero"),
            "the execute view is named {exec_name:?}: host perf would not read the perf map"
        );
        assert_eq!(perms(r.write.as_ptr() as usize).0, "rw-s");
        // mov eax, 42; ret; then an 8-byte slot.
        let mut code = vec![0xb8, 42, 0, 0, 0, 0xc3, 0x90, 0x90];
        code.extend_from_slice(&0u64.to_le_bytes());
        let at = r.push(&code);
        r.sync_fetch();
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

    /// `renew` moves the region: code placed after it lies at new addresses and runs, and
    /// the old execute view stays reserved without access (so nothing else is mapped there)
    /// until the region is dropped.
    #[test]
    fn a_renewed_region_never_reuses_an_address() {
        let mut r = Region::new(1 << 20).expect("a JIT region");
        let first = r.push(&[0xb8, 1, 0, 0, 0, 0xc3]); // mov eax, 1; ret
        let old = r.exec.as_ptr() as usize;
        assert!(r.renew());
        let second = r.push(&[0xb8, 2, 0, 0, 0, 0xc3]); // mov eax, 2; ret
        r.sync_fetch();
        assert!(!(old..old + (1 << 20)).contains(&second));
        // SAFETY: `second` holds the complete function above, in executable memory.
        let f: extern "C" fn() -> u32 = unsafe { std::mem::transmute(second) };
        assert_eq!(f(), 2);
        assert_eq!(
            r.read_u64(first),
            None,
            "the old view is not the region's any more"
        );
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let old_perms = maps.lines().find_map(|l| {
            let (range, rest) = l.split_once(' ').unwrap();
            let (lo, hi) = range.split_once('-').unwrap();
            let (lo, hi) = (
                usize::from_str_radix(lo, 16).unwrap(),
                usize::from_str_radix(hi, 16).unwrap(),
            );
            (lo..hi).contains(&old).then(|| rest[..4].to_string())
        });
        assert_eq!(
            old_perms.as_deref(),
            Some("---p"),
            "the old range is not reserved"
        );
    }

    /// Both ways to serialize return to the next instruction with the registers, the stack
    /// and the flags as they were (a wrong IRETQ frame would crash the test).
    #[test]
    fn serializing_returns_to_the_next_instruction() {
        let (a, b) = (
            std::hint::black_box(0x1234_u64),
            std::hint::black_box(7_u64),
        );
        Serialize::Iret.run();
        if Serialize::detect() == Serialize::Instruction {
            Serialize::Instruction.run();
        }
        assert_eq!(
            std::hint::black_box(a) * std::hint::black_box(b),
            0x1234 * 7
        );
    }

    /// The `memfd` fallback also gives a read-execute and a read-write view of the same
    /// pages.
    #[test]
    fn the_memfd_fallback_runs_placed_code() {
        let (exec, write) = Region::memfd_views(1 << 20).expect("memfd views");
        let mut r = Region {
            exec,
            write,
            size: 1 << 20,
            used: 0,
            populated: 0,
            retired: Vec::new(),
            unsynced: false,
            serialize: Serialize::detect(),
        };
        let at = r.push(&[0xb8, 7, 0, 0, 0, 0xc3]); // mov eax, 7; ret
        r.sync_fetch();
        // SAFETY: `at` holds the complete function above, in executable memory.
        let f: extern "C" fn() -> u32 = unsafe { std::mem::transmute(at) };
        assert_eq!(f(), 7);
    }
}
