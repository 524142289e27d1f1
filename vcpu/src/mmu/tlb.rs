//! The software TLB in front of the page walker (direct-mapped, one array per access kind,
//! tagged with the translation context, flushed by generation), and the kind of an access.
//! A leaf: the hart holds a [`Tlb`] without depending on the walker.

use serde::{Deserialize, Serialize};

use crate::trap::{cause, Exception};
use vcpu_api::PrivilegeMode;

/// Entries per TLB array (a power of two).
pub(crate) const TLB_SIZE: usize = 1024;
const INVALID: u64 = u64::MAX;

#[derive(Clone, Copy)]
#[repr(C)]
pub(super) struct Entry {
    /// `vaddr >> 12 | context`
    tag: u64,
    /// RAM offset of the page less the page's virtual address (wrapping): the RAM offset of
    /// an address `va` in the page is `off + va`, one addition (also in translated code).
    off: u64,
}

/// The virtual address of the page of a tag (its page number: bits 51:0).
fn page_va(tag: u64) -> u64 {
    (tag & ((1 << GENERATION_SHIFT) - 1)) << 12
}

/// Software TLB: direct-mapped, separate arrays for fetch, load and store permission.
pub(crate) struct Tlb {
    fetch: [Entry; TLB_SIZE],
    pub(super) load: [Entry; TLB_SIZE],
    pub(super) store: [Entry; TLB_SIZE],
    /// Context bits for fetches (effective privilege = current privilege).
    fetch_ctx: u64,
    /// Context bits for loads and stores (MPRV-adjusted privilege, SUM, MXR).
    pub(super) data_ctx: u64,
    /// The fetch page: a copy of the fetch entry of the page the hart is executing from,
    /// so that sequential fetches need one comparison. A fetch at `va` hits when
    /// `va - cur_va < cur_lim`: `cur_lim` is 0xffd (a whole 4-byte window in the page) or 0
    /// (no page: every fetch misses). Cleared with the TLB and on every context change.
    cur_va: u64,
    pub(super) cur_lim: u64,
    /// RAM offset of the fetch page.
    cur_off: u64,
    /// Flush generation, in tag bits 52-55 of both contexts (above any virtual page number):
    /// a flush moves to the next generation, so that old entries no longer match, and clears
    /// the arrays only when the generation wraps.
    generation: u64,
    /// Per entry of `fetch`, `load` and `store`: the size of the leaf it was cached from, as
    /// log2 of its 4 KiB pages (0: a page; 9, 18, 27: superpages), for [`Tlb::flush_page`].
    span: [[u8; TLB_SIZE]; 3],
    /// Where entries cached from superpages may lie since the last flush, so that a fence
    /// of an address outside them has only the address's own entries to drop.
    superpages: Superpages,
    /// Moves on (from 1) whenever a fetch translation may have changed: at every flush,
    /// every fence of a page and every change of the fetch context. What translated code's
    /// jump cache was filled under is void once it has moved (`jit::jumps`).
    fetch_epoch: u64,
}

/// The virtual regions of the superpages a [`Tlb`] holds entries of: hashed bitmaps of
/// their 2 MiB and 1 GiB regions ([`Superpages::mega_bit`], [`Superpages::giga_bit`]), and
/// whether any 512 GiB page is held. May say "yes" wrongly (hash collisions), never "no".
/// The hashes put the upper half of the address space (a kernel's) in the upper half of
/// the bits: a kernel's linear map starts at a 1 GiB-aligned address, whose low index bits
/// are those of user addresses near 0, and every fence of such a user page scanned the
/// whole TLB (about 4 000 times a Linux boot).
#[derive(Clone, Copy)]
struct Superpages {
    mega: [u64; 64],
    giga: u64,
    tera: bool,
}

impl Default for Superpages {
    fn default() -> Self {
        Superpages {
            mega: [0; 64],
            giga: 0,
            tera: false,
        }
    }
}

impl Superpages {
    /// The bit of the 2 MiB region holding `va` (the same for every address in it).
    fn mega_bit(va: u64) -> usize {
        ((va >> 21) ^ ((va >> 63) << 11)) as usize % 4096
    }

    /// The bit of the 1 GiB region holding `va` (the same for every address in it).
    fn giga_bit(va: u64) -> u32 {
        ((va >> 30) ^ ((va >> 63) << 5)) as u32 % 64
    }

    fn add(&mut self, va: u64, span: u8) {
        match span {
            0 => {}
            9 => {
                let b = Self::mega_bit(va);
                self.mega[b / 64] |= 1 << (b % 64);
            }
            18 => self.giga |= 1 << Self::giga_bit(va),
            _ => self.tera = true,
        }
    }

    fn may_hold(&self, va: u64) -> bool {
        let b = Self::mega_bit(va);
        self.tera
            || self.giga & (1 << Self::giga_bit(va)) != 0
            || self.mega[b / 64] & (1 << (b % 64)) != 0
    }
}

/// Tag bits of the flush generation.
const GENERATION_SHIFT: u32 = 52;
const GENERATIONS: u64 = 16;

const EMPTY: Entry = Entry {
    tag: INVALID,
    off: 0,
};

/// The translations a [`Tlb`] holds, for snapshots and migration (`HartState::tlb`).
///
/// Software can tell a TLB's content from an empty one: a translation cached before the
/// guest changed its PTE without an SFENCE.VMA may still be used (privileged spec 4.2.1,
/// "Supervisor Memory-Management Fence Instruction"), and a hit sets no A or D bit where a
/// walk would (Linux clears A bits without a fence to age its pages). A restored hart holds
/// the same translations, so that it goes on exactly as the saved one would have.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlbState {
    /// The valid entries.
    pub entries: Vec<TlbEntry>,
}

/// One cached translation of a 4 KiB page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlbEntry {
    /// The access it permits: 0 fetch, 1 load, 2 store.
    pub kind: u8,
    /// The virtual page number (bits 51:0) and the translation context it was cached in
    /// (bits 63:56: privilege, virtualization mode, SUM and MXR; bits 55:52 are zero).
    pub tag: u64,
    /// The RAM offset of the physical page (a multiple of 4 KiB inside guest RAM).
    pub off: u64,
    /// The size of the leaf PTE it came from, as log2 of its 4 KiB pages (0, 9, 18, 27).
    pub span: u8,
}

impl TlbState {
    /// Why `self` cannot be loaded into a TLB over `ram_size` bytes of RAM, if it cannot.
    pub(crate) fn check(&self, ram_size: u64) -> Option<String> {
        let mut seen = [[false; TLB_SIZE]; 3];
        for (i, e) in self.entries.iter().enumerate() {
            let why = if e.kind > 2 {
                format!("kind {} (0 fetch, 1 load, 2 store)", e.kind)
            } else if !matches!(e.span, 0 | 9 | 18 | 27) {
                format!("leaf size 2^{} pages (0, 9, 18 or 27)", e.span)
            } else if e.tag == INVALID || e.tag & GENERATION_MASK != 0 {
                format!("tag {:#x} (bits 55:52 must be zero)", e.tag)
            } else if e.off % 4096 != 0 || e.off >= ram_size {
                format!(
                    "RAM offset {:#x} (a 4 KiB page of the {ram_size:#x} bytes of RAM)",
                    e.off
                )
            } else if std::mem::replace(&mut seen[e.kind as usize][slot(e.tag)], true) {
                format!("a second entry of kind {} in slot {}", e.kind, slot(e.tag))
            } else {
                continue;
            };
            return Some(format!("TLB entry {i}: {why}"));
        }
        None
    }
}

/// The slot of the TLB arrays that holds the page of virtual page number `vpn` (or of a
/// tag: its context bits lie above the slot's).
fn slot(vpn: u64) -> usize {
    vpn as usize % TLB_SIZE
}

/// The generation's bits of a tag or context.
const GENERATION_MASK: u64 = (GENERATIONS - 1) << GENERATION_SHIFT;

impl Tlb {
    pub fn new() -> Tlb {
        Tlb {
            fetch: [EMPTY; TLB_SIZE],
            load: [EMPTY; TLB_SIZE],
            store: [EMPTY; TLB_SIZE],
            fetch_ctx: (PrivilegeMode::Machine as u64) << 56,
            data_ctx: (PrivilegeMode::Machine as u64) << 56,
            cur_va: 0,
            cur_lim: 0,
            cur_off: 0,
            generation: 0,
            span: [[0; TLB_SIZE]; 3],
            superpages: Superpages::default(),
            fetch_epoch: 1,
        }
    }

    /// Byte offsets of the load and store entry arrays and of the data context (for the
    /// block translator, which looks up loads and stores inline; entries are `{tag, off}`,
    /// 16 bytes).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn layout() -> (usize, usize, usize) {
        use std::mem::offset_of;
        (
            offset_of!(Tlb, load),
            offset_of!(Tlb, store),
            offset_of!(Tlb, data_ctx),
        )
    }

    /// Byte offsets of the fetch entry array and of the fetch context (see [`Tlb::layout`]).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn fetch_layout() -> (usize, usize) {
        use std::mem::offset_of;
        (offset_of!(Tlb, fetch), offset_of!(Tlb, fetch_ctx))
    }

    pub fn flush(&mut self) {
        self.cur_lim = 0;
        self.fetch_epoch += 1;
        self.superpages = Superpages::default();
        self.generation = (self.generation + 1) % GENERATIONS;
        if self.generation == 0 {
            self.fetch.fill(EMPTY);
            self.load.fill(EMPTY);
            self.store.fill(EMPTY);
        }
        let mask = (GENERATIONS - 1) << GENERATION_SHIFT;
        let g = self.generation << GENERATION_SHIFT;
        self.fetch_ctx = (self.fetch_ctx & !mask) | g;
        self.data_ctx = (self.data_ctx & !mask) | g;
    }

    /// Drop every entry cached from the leaf that maps `va`, in every context: the entries
    /// of `va`'s page, and when `va` may lie in a cached superpage, every entry of that
    /// superpage. Entries that merely share a slot with `va` go too (harmless).
    pub fn flush_page(&mut self, va: u64) {
        self.cur_lim = 0;
        self.fetch_epoch += 1;
        let vpn = va >> 12;
        let slot = vpn as usize % TLB_SIZE;
        for arr in [&mut self.fetch, &mut self.load, &mut self.store] {
            arr[slot] = EMPTY;
        }
        if !self.superpages.may_hold(va) {
            return;
        }
        const VPN_BITS: u64 = (1 << GENERATION_SHIFT) - 1;
        for (arr, span) in [&mut self.fetch, &mut self.load, &mut self.store]
            .into_iter()
            .zip(&self.span)
        {
            for (e, &span) in arr.iter_mut().zip(span) {
                if span != 0 && ((e.tag ^ vpn) & VPN_BITS) >> span == 0 {
                    *e = EMPTY;
                }
            }
        }
    }

    /// The valid entries ([`TlbState`]).
    pub(crate) fn save(&self) -> TlbState {
        let g = self.generation_bits();
        // Room for every entry: one allocation (a vCPU switch saves the TLB each time).
        let mut entries = Vec::with_capacity(3 * TLB_SIZE);
        for (kind, arr) in [&self.fetch, &self.load, &self.store]
            .into_iter()
            .enumerate()
        {
            for (i, e) in arr.iter().enumerate() {
                if e.tag != INVALID && e.tag & GENERATION_MASK == g {
                    entries.push(TlbEntry {
                        kind: kind as u8,
                        tag: e.tag & !GENERATION_MASK,
                        off: e.off.wrapping_add(page_va(e.tag)),
                        span: self.span[kind][i],
                    });
                }
            }
        }
        TlbState { entries }
    }

    /// Empties the TLB and loads the entries of `state` (checked with [`TlbState::check`])
    /// that `keep` accepts.
    pub(crate) fn load_where(&mut self, state: &TlbState, keep: impl Fn(&TlbEntry) -> bool) {
        self.flush();
        let g = self.generation_bits();
        for e in state.entries.iter().filter(|e| keep(e)) {
            self.put(e.kind as usize, e.tag | g, e.off, e.span);
        }
    }

    /// The context bits of fetches from now on (privilege, virtualization mode and the
    /// flush generation's bits): a change moves [`Tlb::fetch_epoch`] on.
    pub(super) fn set_fetch_ctx(&mut self, ctx: u64) {
        if ctx != self.fetch_ctx {
            self.fetch_ctx = ctx;
            self.fetch_epoch += 1;
        }
    }

    /// See [`Tlb::fetch_epoch`]: never 0, and never the same again once it has moved.
    #[inline]
    pub(crate) fn fetch_epoch(&self) -> u64 {
        self.fetch_epoch
    }

    /// The flush generation's tag bits (part of every context).
    pub(super) fn generation_bits(&self) -> u64 {
        self.generation << GENERATION_SHIFT
    }

    /// The RAM offset of the 4 bytes at `va` when they lie in the fetch page.
    #[inline(always)]
    pub fn lookup_fetch_page(&self, va: u64) -> Option<u64> {
        let d = va.wrapping_sub(self.cur_va);
        (d < self.cur_lim).then(|| self.cur_off + d)
    }

    /// The RAM offset of the 4 bytes at `va` through the fetch entries, when they lie in one
    /// page the TLB holds; that page becomes the fetch page.
    #[inline]
    pub fn lookup_fetch(&mut self, va: u64) -> Option<u64> {
        let tag = (va >> 12) | self.fetch_ctx;
        let e = self.fetch[(va >> 12) as usize % TLB_SIZE];
        if e.tag != tag || va & 0xfff > 0xffc {
            return None;
        }
        self.cur_va = va & !0xfff;
        self.cur_lim = 0xffd;
        self.cur_off = e.off.wrapping_add(va & !0xfff);
        Some(e.off.wrapping_add(va))
    }

    /// The RAM offset of the halfword at `va` (even) through the fetch entries; the fetch
    /// page stays. For the fetches [`Tlb::lookup_fetch`] leaves to the walker: the last
    /// halfword of a page (a compressed instruction there, or the first half of one that
    /// crosses into the next page) and the second half of a crossing instruction.
    #[inline]
    pub fn lookup_fetch_half(&self, va: u64) -> Option<u64> {
        let tag = (va >> 12) | self.fetch_ctx;
        let e = &self.fetch[(va >> 12) as usize % TLB_SIZE];
        (e.tag == tag).then(|| e.off.wrapping_add(va))
    }

    #[inline(always)]
    pub(super) fn lookup(&self, arr: &[Entry; TLB_SIZE], va: u64) -> Option<u64> {
        let tag = (va >> 12) | self.data_ctx;
        let e = &arr[(va >> 12) as usize % TLB_SIZE];
        (e.tag == tag).then(|| e.off.wrapping_add(va))
    }

    /// Cache the translation of `va`'s page to the RAM page at `page_off`, from a leaf of
    /// `span` (log2 of its 4 KiB pages).
    /// Drop every store entry for the RAM page at offset `page_off` (it now holds
    /// translated code: `jit::guard`), under any virtual address or context.
    pub(crate) fn drop_store_page(&mut self, page_off: u64) {
        for e in self.store.iter_mut() {
            if e.tag != INVALID && e.off.wrapping_add(page_va(e.tag)) == page_off {
                e.tag = INVALID;
            }
        }
    }

    pub(super) fn fill(&mut self, kind: Access, va: u64, page_off: u64, span: u8) {
        let ctx = match kind {
            Access::Fetch => self.fetch_ctx,
            Access::Load | Access::Store => self.data_ctx,
        };
        self.put(kind as usize, (va >> 12) | ctx, page_off, span);
    }

    /// Puts the entry `tag` (virtual page number and context) → `off` into array `kind`
    /// ([`Access`] as an index), cached from a leaf of `span`.
    #[inline]
    fn put(&mut self, kind: usize, tag: u64, off: u64, span: u8) {
        let i = slot(tag);
        self.span[kind][i] = span;
        self.superpages.add(tag << 12, span);
        let arr = match kind {
            0 => &mut self.fetch,
            1 => &mut self.load,
            _ => &mut self.store,
        };
        arr[i] = Entry {
            tag,
            off: off.wrapping_sub(page_va(tag)),
        };
    }
}

/// The kind of memory access being translated (also the index of its [`Tlb`] array).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Fetch = 0,
    Load = 1,
    Store = 2,
}

impl Access {
    pub(crate) fn page_fault(self, va: u64) -> Exception {
        let cause = match self {
            Access::Fetch => cause::INSN_PAGE_FAULT,
            Access::Load => cause::LOAD_PAGE_FAULT,
            Access::Store => cause::STORE_PAGE_FAULT,
        };
        Exception::new(cause, va)
    }
    /// The `pmpcfg` permission bit this kind of access needs.
    pub(crate) fn pmp_perm(self) -> u8 {
        match self {
            Access::Fetch => crate::pmp::X,
            Access::Load => crate::pmp::R,
            Access::Store => crate::pmp::W,
        }
    }
    pub(crate) fn access_fault(self, va: u64) -> Exception {
        let cause = match self {
            Access::Fetch => cause::INSN_ACCESS,
            Access::Load => cause::LOAD_ACCESS,
            Access::Store => cause::STORE_ACCESS,
        };
        Exception::new(cause, va)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A superpage's whole region is covered; the user pages a Linux boot fences are not
    /// taken for its linear map's or its image's 2 MiB pages.
    #[test]
    fn superpages_cover_their_regions_and_keep_user_pages_apart_from_a_kernels() {
        let mut s = Superpages::default();
        let linear = 0xffff_ffd8_0000_0000u64;
        let image = 0xffff_ffff_8000_0000u64;
        let giga = 0xffff_ffc0_0000_0000u64;
        for k in 0..128 {
            s.add(linear + (k << 21), 9);
        }
        for k in 0..16 {
            s.add(image + (k << 21), 9);
        }
        s.add(giga, 18);
        for va in [
            linear,
            linear + (127 << 21) + 0x1f_ffff,
            image + 0x1234,
            giga + 0x3fff_ffff,
        ] {
            assert!(s.may_hold(va), "{va:#x}");
        }
        for user in [
            0,
            0x1_0000,
            0xe_4000,
            0x17_6000,
            0x2aaa_aaaa_a000,
            0x3f_ffff_f000,
        ] {
            assert!(!s.may_hold(user), "{user:#x}");
        }
    }
}
