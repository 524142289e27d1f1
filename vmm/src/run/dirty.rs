//! Dirty-page tracking of guest RAM for live migration, with the host kernel's userfaultfd
//! in write-protect mode: every write to a tracked page, whoever makes it (the interpreter,
//! translated code, the VMM, a device), faults once; a handler thread records the page and
//! lets the write go on. Nothing on the vCPUs' hot paths changes, and nothing is tracked
//! while no migration runs.
//!
//! It needs Linux 6.4 or later (`UFFD_FEATURE_WP_UNPOPULATED`, so that a first write to a
//! page the guest never touched is seen too). Where the host lacks it, [`DirtyLog::start`]
//! fails and the migration copies the VM while it is stopped (one round).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

const PAGE: u64 = 4096;

// <linux/userfaultfd.h>
const UFFD_API: u64 = 0xaa;
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
const UFFD_FEATURE_PAGEFAULT_FLAG_WP: u64 = 1 << 0;
const UFFD_FEATURE_WP_UNPOPULATED: u64 = 1 << 13;
const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;
const UFFDIO_WRITEPROTECT_MODE_WP: u64 = 1 << 0;
const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
const UFFD_PAGEFAULT_FLAG_WP: u64 = 1 << 1;
// _IOWR(0xAA, 0x3F, struct uffdio_api), _IOWR(0xAA, 0x00, struct uffdio_register),
// _IOR(0xAA, 0x01, struct uffdio_range), _IOWR(0xAA, 0x06, struct uffdio_writeprotect).
const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;
const UFFDIO_REGISTER: libc::c_ulong = 0xc020_aa00;
const UFFDIO_UNREGISTER: libc::c_ulong = 0x8010_aa01;
const UFFDIO_WRITEPROTECT: libc::c_ulong = 0xc018_aa06;

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct UffdioRange {
    start: u64,
    len: u64,
}

#[repr(C)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioWriteprotect {
    range: UffdioRange,
    mode: u64,
}

/// `struct uffd_msg` (32 bytes): the event, then for a page fault its flags and address.
#[repr(C)]
struct UffdMsg {
    event: u8,
    _reserved: [u8; 7],
    flags: u64,
    address: u64,
    _feat: u64,
}

/// A fresh private anonymous read-write mapping of `len` bytes (the caller unmaps it).
fn map_anonymous(len: usize) -> std::io::Result<*mut libc::c_void> {
    // SAFETY: a new mapping at an address the host picks; the result is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p)
}

/// Sets or clears write protection on `range` (clearing also wakes the writers waiting).
fn write_protect(uffd: libc::c_int, range: UffdioRange, protect: bool) -> std::io::Result<()> {
    let mut wp = UffdioWriteprotect {
        range,
        mode: if protect {
            UFFDIO_WRITEPROTECT_MODE_WP
        } else {
            0
        },
    };
    // SAFETY: `wp` is a valid `struct uffdio_writeprotect` that lives across the call; the
    // kernel reads it and writes nothing back.
    let r = unsafe { libc::ioctl(uffd, UFFDIO_WRITEPROTECT, &mut wp) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// What the handler thread and the log share.
struct Shared {
    uffd: OwnedFd,
    base: u64,
    len: u64,
    /// One bit per page: written since the last [`DirtyLog::take`].
    bits: Vec<AtomicU64>,
    stop: AtomicBool,
    /// Set if the handler met an error it could not recover from (the log is then
    /// untrustworthy: the migration falls back to stopping the VM for a full copy).
    failed: AtomicBool,
    /// Held by the handler from recording a page to lifting its protection, and by
    /// [`DirtyLog::take`] from collecting the pages to protecting them again: a handler's
    /// late unprotect can then never undo a `take`'s protection of a page whose write has
    /// not happened yet (that write would be lost to every later round).
    order: Mutex<()>,
}

/// Write tracking of one range of host memory (a VM's guest RAM).
pub(crate) struct DirtyLog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for DirtyLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirtyLog")
            .field("base", &self.shared.base)
            .field("len", &self.shared.len)
            .finish_non_exhaustive()
    }
}

impl DirtyLog {
    /// Starts tracking writes to `len` bytes at host address `base` (page-aligned, mapped
    /// anonymous memory that stays mapped while the log lives). Nothing counts as written
    /// yet: the caller copies the whole range once after this returns. `Err` when the host cannot (no userfaultfd, or a kernel without
    /// write-protection of unpopulated pages).
    pub(crate) fn start(base: u64, len: u64) -> std::io::Result<DirtyLog> {
        if !base.is_multiple_of(PAGE) || !len.is_multiple_of(PAGE) || len == 0 {
            return Err(std::io::Error::other("unaligned range"));
        }
        // SAFETY: the userfaultfd system call takes flags and returns a new descriptor or -1.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_userfaultfd,
                libc::O_CLOEXEC | libc::O_NONBLOCK | UFFD_USER_MODE_ONLY,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a descriptor this process has just been given and owns alone.
        let uffd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        let raw = uffd.as_raw_fd();
        let mut api = UffdioApi {
            api: UFFD_API,
            features: UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_WP_UNPOPULATED,
            ioctls: 0,
        };
        // SAFETY: `api` is a valid `struct uffdio_api` the kernel reads and fills in.
        if unsafe { libc::ioctl(raw, UFFDIO_API, &mut api) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let range = UffdioRange { start: base, len };
        let mut reg = UffdioRegister {
            range,
            mode: UFFDIO_REGISTER_MODE_WP,
            ioctls: 0,
        };
        // SAFETY: `reg` is a valid `struct uffdio_register` for a range the caller keeps
        // mapped; the kernel fills in `ioctls`.
        if unsafe { libc::ioctl(raw, UFFDIO_REGISTER, &mut reg) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let pages = len / PAGE;
        let shared = Arc::new(Shared {
            uffd,
            base,
            len,
            bits: (0..pages.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            stop: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            order: Mutex::new(()),
        });
        let handler = shared.clone();
        let thread = std::thread::Builder::new()
            .name("dirty-log".into())
            .spawn(move || handler.serve());
        let thread = match thread {
            Ok(t) => t,
            Err(e) => {
                shared.unregister();
                return Err(e);
            }
        };
        let log = DirtyLog {
            shared,
            thread: Some(thread),
        };
        write_protect(raw, range, true)?;
        Ok(log)
    }

    /// Whether this host can track writes: starts and ends a log over one page.
    pub(crate) fn probe() -> std::io::Result<()> {
        let len = PAGE as usize;
        let p = map_anonymous(len)?;
        let log = DirtyLog::start(p as u64, PAGE).map(drop);
        // SAFETY: the mapping made above; the log over it has ended.
        unsafe { libc::munmap(p, len) };
        log
    }

    /// The pages written since the last call (or since the start), as page indices; they
    /// are protected again first, so a write that races with this call is either in the
    /// page when the caller reads it next or in the next call's pages. `Err` when the
    /// handler failed (the caller then copies everything with the VM stopped).
    pub(crate) fn take(&self) -> std::io::Result<Vec<u64>> {
        let s = &self.shared;
        if s.failed.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("the dirty-page handler failed"));
        }
        let _order = s.order.lock().unwrap_or_else(|e| e.into_inner());
        let mut pages = Vec::new();
        for (w, word) in s.bits.iter().enumerate() {
            let mut bits = word.swap(0, Ordering::SeqCst);
            while bits != 0 {
                let b = bits.trailing_zeros() as u64;
                bits &= bits - 1;
                pages.push(w as u64 * 64 + b);
            }
        }
        // Protect again, a run of consecutive pages per call.
        let mut i = 0;
        while i < pages.len() {
            let mut j = i + 1;
            while j < pages.len() && pages[j] == pages[j - 1] + 1 {
                j += 1;
            }
            let range = UffdioRange {
                start: s.base + pages[i] * PAGE,
                len: (j - i) as u64 * PAGE,
            };
            write_protect(s.uffd.as_raw_fd(), range, true)?;
            i = j;
        }
        Ok(pages)
    }
}

impl Shared {
    /// The handler thread: records each write fault's page and lets the writer go on.
    fn serve(&self) {
        let fd = self.uffd.as_raw_fd();
        let mut msg = std::mem::MaybeUninit::<UffdMsg>::uninit();
        while !self.stop.load(Ordering::SeqCst) {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, polled for at most 20 ms.
            let n = unsafe { libc::poll(&mut pfd, 1, 20) };
            if n <= 0 {
                continue;
            }
            loop {
                // SAFETY: reads at most one `struct uffd_msg` into `msg`'s storage.
                let got = unsafe {
                    libc::read(fd, msg.as_mut_ptr().cast(), std::mem::size_of::<UffdMsg>())
                };
                if got != std::mem::size_of::<UffdMsg>() as isize {
                    break;
                }
                // SAFETY: the kernel wrote a whole message.
                let m = unsafe { msg.assume_init_ref() };
                if m.event != UFFD_EVENT_PAGEFAULT || m.flags & UFFD_PAGEFAULT_FLAG_WP == 0 {
                    continue;
                }
                let _order = self.order.lock().unwrap_or_else(|e| e.into_inner());
                let page = (m.address.wrapping_sub(self.base)) / PAGE;
                if page < self.len / PAGE {
                    self.bits[(page / 64) as usize].fetch_or(1 << (page % 64), Ordering::SeqCst);
                }
                let range = UffdioRange {
                    start: m.address & !(PAGE - 1),
                    len: PAGE,
                };
                if write_protect(fd, range, false).is_err() {
                    self.failed.store(true, Ordering::SeqCst);
                }
            }
        }
    }

    /// Lifts every protection (waking any writer) and stops tracking.
    fn unregister(&self) {
        let fd = self.uffd.as_raw_fd();
        let mut range = UffdioRange {
            start: self.base,
            len: self.len,
        };
        let _ = write_protect(fd, range, false);
        // SAFETY: `range` is a valid `struct uffdio_range` of the registered range.
        unsafe { libc::ioctl(fd, UFFDIO_UNREGISTER, &mut range) };
    }
}

impl Drop for DirtyLog {
    fn drop(&mut self) {
        self.shared.unregister();
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes to a tracked mapping are seen once per `take`, wherever they land; the
    /// memory keeps what was written.
    #[test]
    fn writes_are_tracked_page_by_page() {
        let len = 64 * PAGE as usize;
        let p = map_anonymous(len).unwrap();
        let base = p as u64;
        // SAFETY: inside the mapping.
        unsafe { *(p as *mut u8).add(5 * PAGE as usize) = 1 };
        let log = match DirtyLog::start(base, len as u64) {
            Ok(log) => log,
            Err(e) => {
                // Not a skip: what the migration does then (a stop-and-copy) is what
                // tests/tests/migrate.rs checks on such a host.
                assert!(DirtyLog::probe().is_err());
                eprintln!(
                    "NOTE: userfaultfd write protection is not available on this host ({e}); \
                     live pre-copy needs Linux 6.4 or later and userfaultfd allowed \
                     (root, CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1)"
                );
                // SAFETY: the mapping made above, no longer used.
                unsafe { libc::munmap(p, len) };
                return;
            }
        };
        assert_eq!(log.take().unwrap(), Vec::<u64>::new());
        let write = |page: usize, v: u8| {
            // SAFETY: inside the mapping.
            unsafe { *(p as *mut u8).add(page * PAGE as usize + 7) = v };
        };
        // A populated page, never-touched pages, twice the same page, from another thread.
        write(5, 2);
        write(9, 3);
        write(9, 4);
        write(63, 5);
        let addr = p as usize;
        std::thread::spawn(move || {
            // SAFETY: inside the mapping, which outlives the thread (joined).
            unsafe { *(addr as *mut u8).add(20 * PAGE as usize + 7) = 6 };
        })
        .join()
        .unwrap();
        assert_eq!(log.take().unwrap(), vec![5, 9, 20, 63]);
        assert_eq!(log.take().unwrap(), Vec::<u64>::new());
        write(9, 7);
        assert_eq!(log.take().unwrap(), vec![9]);
        drop(log);
        write(30, 8);
        // SAFETY: inside the mapping.
        let read = |page: usize| unsafe { *(p as *const u8).add(page * PAGE as usize + 7) };
        assert_eq!(
            [read(5), read(9), read(20), read(30), read(63)],
            [2, 7, 6, 8, 5]
        );
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(p, len) };
    }
}

#[cfg(test)]
mod thp_tests {
    use super::*;

    /// Guest RAM may be backed by transparent huge pages: a write fault inside one must
    /// still lift the protection of its 4 KiB page only.
    #[test]
    fn huge_pages_are_tracked_4k_at_a_time() {
        let len = 8 << 20;
        let p = map_anonymous(len).unwrap();
        // SAFETY: advice on the mapping made above.
        unsafe { libc::madvise(p, len, libc::MADV_HUGEPAGE) };
        let write = |page: usize, v: u8| {
            // SAFETY: inside the mapping.
            unsafe { *(p as *mut u8).add(page * PAGE as usize + 7) = v };
        };
        for page in 0..len / PAGE as usize {
            write(page, 1);
        }
        let Ok(log) = DirtyLog::start(p as u64, len as u64) else {
            // SAFETY: the mapping made above, no longer used.
            unsafe { libc::munmap(p, len) };
            return;
        };
        write(600, 2);
        write(1100, 2);
        assert_eq!(log.take().unwrap(), vec![600, 1100]);
        write(601, 3);
        write(599, 3);
        write(1100, 3);
        assert_eq!(log.take().unwrap(), vec![599, 601, 1100]);
        write(602, 4);
        assert_eq!(log.take().unwrap(), vec![602]);
        drop(log);
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(p, len) };
    }
}
