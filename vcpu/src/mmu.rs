//! Virtual-memory translation: Sv39, Sv48 and Sv57 (privileged spec 4.3-4.6), the software
//! TLB in front of the page walker, and the load/store paths built on them.
//!
//! - A and D bits are updated by hardware, atomically, during the walk (the behaviour the
//!   privileged spec permits when Svade is not implemented).
//! - Misaligned loads and stores are supported in hardware, also across page boundaries (each
//!   page is translated and checked before any byte is accessed). LR/SC and AMOs must be
//!   naturally aligned: otherwise they raise address-misaligned.
//! - Device (MMIO) accesses must be naturally aligned; misaligned ones raise access faults.
//!
//! TLB entries are tagged with the virtual page number and a translation context (effective
//! privilege, SUM, MXR), so privilege changes need no flush; `satp` writes and SFENCE.VMA
//! flush everything.

use crate::csr::{MSTATUS_MPP, MSTATUS_MPP_SHIFT, MSTATUS_MPRV, MSTATUS_MXR, MSTATUS_SUM};
use crate::exit::MmioAccess;
use crate::hart::{Ctl, Hart, PrivilegeMode};
use crate::trap::{cause, Exception};

const TLB_SIZE: usize = 256;
const INVALID: u64 = u64::MAX;

#[derive(Clone, Copy)]
struct Entry {
    /// `vaddr >> 12 | context`
    tag: u64,
    /// RAM offset of the page.
    off: u64,
}

/// Software TLB: direct-mapped, separate arrays for fetch, load and store permission.
pub(crate) struct Tlb {
    fetch: [Entry; TLB_SIZE],
    load: [Entry; TLB_SIZE],
    store: [Entry; TLB_SIZE],
    /// Context bits for fetches (effective privilege = current privilege).
    fetch_ctx: u64,
    /// Context bits for loads and stores (MPRV-adjusted privilege, SUM, MXR).
    data_ctx: u64,
}

const EMPTY: Entry = Entry {
    tag: INVALID,
    off: 0,
};

impl Tlb {
    pub fn new() -> Tlb {
        Tlb {
            fetch: [EMPTY; TLB_SIZE],
            load: [EMPTY; TLB_SIZE],
            store: [EMPTY; TLB_SIZE],
            fetch_ctx: (PrivilegeMode::Machine as u64) << 56,
            data_ctx: (PrivilegeMode::Machine as u64) << 56,
        }
    }

    pub fn flush(&mut self) {
        self.fetch.fill(EMPTY);
        self.load.fill(EMPTY);
        self.store.fill(EMPTY);
    }

    #[inline(always)]
    pub fn lookup_fetch(&self, va: u64) -> Option<u64> {
        let tag = (va >> 12) | self.fetch_ctx;
        let e = &self.fetch[(va >> 12) as usize % TLB_SIZE];
        (e.tag == tag).then(|| e.off + (va & 0xfff))
    }

    #[inline(always)]
    fn lookup(&self, arr: &[Entry; TLB_SIZE], va: u64) -> Option<u64> {
        let tag = (va >> 12) | self.data_ctx;
        let e = &arr[(va >> 12) as usize % TLB_SIZE];
        (e.tag == tag).then(|| e.off + (va & 0xfff))
    }

    fn fill(&mut self, kind: Access, va: u64, page_off: u64) {
        let (arr, ctx) = match kind {
            Access::Fetch => (&mut self.fetch, self.fetch_ctx),
            Access::Load => (&mut self.load, self.data_ctx),
            Access::Store => (&mut self.store, self.data_ctx),
        };
        arr[(va >> 12) as usize % TLB_SIZE] = Entry {
            tag: (va >> 12) | ctx,
            off: page_off,
        };
    }
}

/// The kind of memory access being translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Fetch,
    Load,
    Store,
}

impl Access {
    fn page_fault(self, va: u64) -> Exception {
        let cause = match self {
            Access::Fetch => cause::INSN_PAGE_FAULT,
            Access::Load => cause::LOAD_PAGE_FAULT,
            Access::Store => cause::STORE_PAGE_FAULT,
        };
        Exception { cause, tval: va }
    }
    fn access_fault(self, va: u64) -> Exception {
        let cause = match self {
            Access::Fetch => cause::INSN_ACCESS,
            Access::Load => cause::LOAD_ACCESS,
            Access::Store => cause::STORE_ACCESS,
        };
        Exception { cause, tval: va }
    }
}

// PTE bits (privileged spec 4.3.1).
const PTE_V: u64 = 1 << 0;
const PTE_R: u64 = 1 << 1;
const PTE_W: u64 = 1 << 2;
const PTE_X: u64 = 1 << 3;
const PTE_U: u64 = 1 << 4;
const PTE_A: u64 = 1 << 6;
const PTE_D: u64 = 1 << 7;
/// Bits 63:54: PBMT, N and reserved bits; none of Svpbmt/Svnapot is implemented, so any of
/// them set makes the PTE invalid (privileged spec 4.4.1).
const PTE_HIGH_RESERVED: u64 = 0x3ff << 54;
const PPN_MASK: u64 = (1 << 44) - 1;

/// Where a physical address lands.
pub(crate) enum Phys {
    Ram(u64),
    Device,
    Nothing,
}

impl Hart {
    /// Recompute the TLB context after a change of privilege, `mstatus` or `satp`.
    pub(crate) fn update_translation_context(&mut self) {
        let s = self.csr.mstatus;
        let data_prv = if self.prv == PrivilegeMode::Machine && s & MSTATUS_MPRV != 0 {
            (s & MSTATUS_MPP) >> MSTATUS_MPP_SHIFT
        } else {
            self.prv as u64
        };
        let sum = (s & MSTATUS_SUM != 0) as u64;
        let mxr = (s & MSTATUS_MXR != 0) as u64;
        self.tlb.fetch_ctx = (self.prv as u64) << 56;
        self.tlb.data_ctx = (data_prv << 56) | (sum << 58) | (mxr << 59);
    }

    /// Classify `[pa, pa+len)` (within one page).
    pub(crate) fn classify(&self, pa: u64, len: u64) -> Phys {
        if self.mmio.iter().any(|r| r.overlaps(pa, len)) {
            return Phys::Device;
        }
        match self.ram.offset(pa, len) {
            Some(off) => Phys::Ram(off),
            None => Phys::Nothing,
        }
    }

    fn effective_privilege(&self, kind: Access) -> PrivilegeMode {
        let s = self.csr.mstatus;
        if kind != Access::Fetch && self.prv == PrivilegeMode::Machine && s & MSTATUS_MPRV != 0 {
            PrivilegeMode::from_bits((s & MSTATUS_MPP) >> MSTATUS_MPP_SHIFT)
        } else {
            self.prv
        }
    }

    /// Translate `va` for `kind` (privileged spec 4.3.2 "Virtual Address Translation
    /// Process"), updating A/D bits. Returns the physical address.
    pub(crate) fn translate(&mut self, va: u64, kind: Access) -> Result<u64, Exception> {
        let prv = self.effective_privilege(kind);
        let satp = self.csr.satp;
        let levels = match satp >> 60 {
            8 => 3,
            9 => 4,
            10 => 5,
            _ => 0,
        };
        if prv == PrivilegeMode::Machine || levels == 0 {
            return Ok(va);
        }
        // The VA must be sign-extended from bit 12 + 9*levels - 1.
        let va_bits = 12 + 9 * levels;
        let top = (va as i64) >> (va_bits - 1);
        if top != 0 && top != -1 {
            return Err(kind.page_fault(va));
        }
        let s = self.csr.mstatus;
        let sum = s & MSTATUS_SUM != 0;
        let mxr = s & MSTATUS_MXR != 0;
        'walk: loop {
            let mut a = (satp & PPN_MASK) << 12;
            let mut level = levels - 1;
            loop {
                let vpn = (va >> (12 + 9 * level)) & 0x1ff;
                let pte_addr = a + vpn * 8;
                let Some(pte_off) = self.ram.offset(pte_addr, 8) else {
                    return Err(kind.access_fault(va));
                };
                let pte = self.ram.load(pte_off, 8);
                if pte & PTE_V == 0
                    || (pte & PTE_R == 0 && pte & PTE_W != 0)
                    || pte & PTE_HIGH_RESERVED != 0
                {
                    return Err(kind.page_fault(va));
                }
                let ppn = (pte >> 10) & PPN_MASK;
                if pte & (PTE_R | PTE_X) == 0 {
                    // Pointer to the next level.
                    if level == 0 {
                        return Err(kind.page_fault(va));
                    }
                    level -= 1;
                    a = ppn << 12;
                    continue;
                }
                // Leaf: permission checks.
                let user_page = pte & PTE_U != 0;
                let allowed = match prv {
                    PrivilegeMode::User => user_page,
                    _ => !user_page || (sum && kind != Access::Fetch),
                } && match kind {
                    Access::Fetch => pte & PTE_X != 0,
                    Access::Load => pte & PTE_R != 0 || (mxr && pte & PTE_X != 0),
                    Access::Store => pte & PTE_W != 0,
                };
                if !allowed {
                    return Err(kind.page_fault(va));
                }
                // Superpages must be aligned.
                if level > 0 && ppn & ((1 << (9 * level)) - 1) != 0 {
                    return Err(kind.page_fault(va));
                }
                // Hardware A/D update, atomically with respect to other harts.
                let want = PTE_A | if kind == Access::Store { PTE_D } else { 0 };
                if pte & want != want {
                    if pte_off & 7 != 0 {
                        return Err(kind.access_fault(va));
                    }
                    let cell = self.ram.atomic64(pte_off);
                    if cell
                        .compare_exchange(
                            pte,
                            pte | want,
                            std::sync::atomic::Ordering::AcqRel,
                            std::sync::atomic::Ordering::Relaxed,
                        )
                        .is_err()
                    {
                        continue 'walk; // the PTE changed under us: walk again
                    }
                }
                let page_mask = (1u64 << (12 + 9 * level)) - 1;
                let pa = ((ppn << 12) & !page_mask) | (va & page_mask);
                return Ok(pa & ((1 << 56) - 1));
            }
        }
    }

    /// Translate one page worth of access and fill the TLB when the page is plain RAM.
    /// `len` bytes starting at `va` must lie within one page.
    fn access_page(&mut self, va: u64, len: u64, kind: Access) -> Result<(u64, Phys), Exception> {
        let pa = self.translate(va, kind)?;
        let page = pa & !0xfff;
        if let Phys::Ram(page_off) = self.classify(page, 0x1000) {
            self.tlb.fill(kind, va, page_off);
        }
        Ok((pa, self.classify(pa, len)))
    }

    /// Fetch the halfword at `va` (instruction fetch; faults report `va`).
    pub(crate) fn fetch_half(&mut self, va: u64) -> Result<u16, Exception> {
        match self.access_page(va, 2, Access::Fetch)? {
            (_, Phys::Ram(off)) => Ok(self.ram.load(off, 2) as u16),
            _ => Err(Access::Fetch.access_fault(va)),
        }
    }

    /// Load `size` bytes at `va`, zero-extended.
    #[inline(always)]
    pub(crate) fn load(&mut self, va: u64, size: u32) -> Result<u64, Ctl> {
        if (va & 0xfff) + size as u64 <= 0x1000 {
            if let Some(off) = self.tlb.lookup(&self.tlb.load, va) {
                return Ok(self.ram.load(off, size));
            }
        }
        self.load_slow(va, size)
    }

    #[cold]
    fn load_slow(&mut self, va: u64, size: u32) -> Result<u64, Ctl> {
        let len = size as u64;
        if (va & 0xfff) + len > 0x1000 {
            // Misaligned across a page boundary: check both pages first, then byte by byte.
            let first = 0x1000 - (va & 0xfff);
            let (pa0, p0) = self.access_page(va, first, Access::Load)?;
            let va1 = va.wrapping_add(first);
            let (pa1, p1) = self.access_page(va1, len - first, Access::Load)?;
            let (Phys::Ram(o0), Phys::Ram(o1)) = (p0, p1) else {
                let bad = if matches!(self.classify(pa0, first), Phys::Ram(_)) {
                    va1
                } else {
                    va
                };
                let _ = pa1;
                return Err(Access::Load.access_fault(bad).into());
            };
            let mut v = 0;
            for i in 0..len {
                let off = if i < first { o0 + i } else { o1 + (i - first) };
                v |= self.ram.load(off, 1) << (8 * i);
            }
            return Ok(v);
        }
        match self.access_page(va, len, Access::Load)? {
            (_, Phys::Ram(off)) => Ok(self.ram.load(off, size)),
            (pa, Phys::Device) if pa & (len - 1) == 0 => Err(Ctl::Mmio(MmioAccess {
                addr: pa,
                size: size as u8,
                write: None,
            })),
            _ => Err(Access::Load.access_fault(va).into()),
        }
    }

    /// Store the low `size` bytes of `val` at `va`.
    #[inline(always)]
    pub(crate) fn store(&mut self, va: u64, size: u32, val: u64) -> Result<(), Ctl> {
        if (va & 0xfff) + size as u64 <= 0x1000 {
            if let Some(off) = self.tlb.lookup(&self.tlb.store, va) {
                self.ram.store(off, size, val);
                return Ok(());
            }
        }
        self.store_slow(va, size, val)
    }

    #[cold]
    fn store_slow(&mut self, va: u64, size: u32, val: u64) -> Result<(), Ctl> {
        let len = size as u64;
        if (va & 0xfff) + len > 0x1000 {
            let first = 0x1000 - (va & 0xfff);
            let (_, p0) = self.access_page(va, first, Access::Store)?;
            let va1 = va.wrapping_add(first);
            let (_, p1) = self.access_page(va1, len - first, Access::Store)?;
            let (o0, o1) = match (p0, p1) {
                (Phys::Ram(o0), Phys::Ram(o1)) => (o0, o1),
                (Phys::Ram(_), _) => return Err(Access::Store.access_fault(va1).into()),
                _ => return Err(Access::Store.access_fault(va).into()),
            };
            for i in 0..len {
                let off = if i < first { o0 + i } else { o1 + (i - first) };
                self.ram.store(off, 1, val >> (8 * i));
            }
            return Ok(());
        }
        match self.access_page(va, len, Access::Store)? {
            (_, Phys::Ram(off)) => {
                self.ram.store(off, size, val);
                Ok(())
            }
            (pa, Phys::Device) if pa & (len - 1) == 0 => {
                let mask = if size == 8 {
                    u64::MAX
                } else {
                    (1u64 << (8 * size)) - 1
                };
                Err(Ctl::Mmio(MmioAccess {
                    addr: pa,
                    size: size as u8,
                    write: Some(val & mask),
                }))
            }
            _ => Err(Access::Store.access_fault(va).into()),
        }
    }

    /// Translate an LR/SC/AMO address: must be aligned and in RAM. `store` selects the
    /// exception kind (LR reports load faults, SC and AMOs store/AMO faults).
    pub(crate) fn atomic_address(&mut self, va: u64, size: u32, store: bool) -> Result<u64, Ctl> {
        let kind = if store { Access::Store } else { Access::Load };
        if va & (size as u64 - 1) != 0 {
            let cause = if store {
                cause::STORE_MISALIGNED
            } else {
                cause::LOAD_MISALIGNED
            };
            return Err(Exception { cause, tval: va }.into());
        }
        // AMOs need both read and write permission; the store check implies the walk's D update.
        if store {
            self.translate(va, Access::Load).map_err(|e| {
                let cause = if e.cause == cause::LOAD_ACCESS {
                    cause::STORE_ACCESS
                } else {
                    cause::STORE_PAGE_FAULT
                };
                Exception { cause, ..e }
            })?;
        }
        let pa = self.translate(va, kind)?;
        match self.classify(pa, size as u64) {
            Phys::Ram(off) => Ok(off),
            _ => Err(kind.access_fault(va).into()),
        }
    }

    /// SFENCE.VMA and `satp` writes.
    pub(crate) fn flush_tlb(&mut self) {
        self.tlb.flush();
    }
}
