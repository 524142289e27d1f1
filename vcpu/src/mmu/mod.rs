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
//! Every access is checked by the PMP (`crate::pmp`) after translation: explicit ones in
//! their effective privilege, the page-table walk's own accesses as S-mode's. A page enters
//! the TLB only when the PMP allows all of it for that kind of access in that mode.
//!
//! TLB entries are tagged with the virtual page number and a translation context (effective
//! privilege, virtualization mode, SUM and MXR of both levels), so privilege changes need no
//! flush; `satp`, `vsatp`, `hgatp` and PMP writes, SFENCE.VMA and HFENCE flush everything.
//!
//! A debugger translates with `Hart::debug_translate` (`Vcpu::debug_translate`): the same
//! walk without A/D updates, permission checks or TLB fills.

use std::sync::atomic::Ordering;

use crate::csr::{MSTATUS_MPP, MSTATUS_MPP_SHIFT, MSTATUS_MPRV, MSTATUS_MXR, MSTATUS_SUM};
use crate::hart::{Ctl, Hart, PrivilegeMode};
use crate::hypervisor::{
    tinst, HGATP_MODE_SV39X4, HGATP_MODE_SV48X4, HGATP_MODE_SV57X4, HGATP_PPN, MSTATUS_MPV,
};
use crate::pmp;
use crate::trap::{cause, Exception};
use vcpu_api::{DebugAccess, DebugTranslateError, MmioAccess};

pub(crate) mod tlb;
pub(crate) use tlb::{Access, Tlb, TLB_SIZE};

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

/// Who makes an access: effective privilege and virtualization mode (after MPRV, or as
/// HLV/HSV define it), and whether it is an HLVX read (execute permission instead of read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AccessMode {
    pub prv: PrivilegeMode,
    pub virt: bool,
    pub hlvx: bool,
}

/// Parameters of one translation stage.
#[derive(Clone, Copy)]
struct Stage {
    /// Address of the root table (physical, or guest physical for the VS-stage).
    root: u64,
    levels: u32,
    /// Extra index bits of the root table: 2 for the G-stage "x4" modes.
    root_extra_bits: u32,
    /// Privilege the U bit is checked against (the G-stage always checks as U).
    prv: PrivilegeMode,
    sum: bool,
    mxr: bool,
    hlvx: bool,
}

impl Stage {
    /// The stage selected by a `satp`/`vsatp` value, or `None` for Bare.
    fn from_atp(atp: u64, prv: PrivilegeMode, sum: bool, mxr: bool, hlvx: bool) -> Option<Stage> {
        let levels = match atp >> 60 {
            8 => 3,
            9 => 4,
            10 => 5,
            _ => return None,
        };
        Some(Stage {
            root: (atp & PPN_MASK) << 12,
            levels,
            root_extra_bits: 0,
            prv,
            sum,
            mxr,
            hlvx,
        })
    }

    /// A virtual address must be sign-extended from its top translated bit.
    fn canonical(&self, va: u64) -> bool {
        let top = (va as i64) >> (12 + 9 * self.levels - 1);
        top == 0 || top == -1
    }

    /// Leaf permission check (privileged spec 4.3.2 step 5; HLVX needs X instead of R).
    fn permits(&self, pte: u64, kind: Access) -> bool {
        let user_page = pte & PTE_U != 0;
        let mode_ok = match self.prv {
            PrivilegeMode::User => user_page,
            _ => !user_page || (self.sum && kind != Access::Fetch),
        };
        mode_ok
            && match kind {
                Access::Fetch => pte & PTE_X != 0,
                Access::Load if self.hlvx => pte & PTE_X != 0,
                Access::Load => pte & PTE_R != 0 || (self.mxr && pte & PTE_X != 0),
                Access::Store => pte & PTE_W != 0,
            }
    }
}

/// A failed walk, before it becomes an exception of the original access type.
#[derive(Clone, Copy, Debug)]
enum Fault {
    Page,
    Access,
    /// G-stage failure: the guest physical address and the `htinst` value it requires.
    GuestPage {
        gpa: u64,
        tinst: u64,
    },
}

impl Fault {
    fn exception(self, kind: Access, va: u64, virt: bool) -> Exception {
        let e = match self {
            Fault::Page => kind.page_fault(va),
            Fault::Access => kind.access_fault(va),
            Fault::GuestPage { gpa, tinst } => {
                let cause = match kind {
                    Access::Fetch => cause::INSN_GUEST_PAGE_FAULT,
                    Access::Load => cause::LOAD_GUEST_PAGE_FAULT,
                    Access::Store => cause::STORE_GUEST_PAGE_FAULT,
                };
                Exception {
                    cause,
                    tval: va,
                    tval2: gpa >> 2,
                    tinst,
                    gva: true,
                }
            }
        };
        if virt {
            e.with_gva()
        } else {
            e
        }
    }
}

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
        let vs = self.csr.h.vsstatus;
        let data = self.data_mode();
        let bit = |v: bool| v as u64;
        let g = self.tlb.generation_bits();
        self.tlb
            .set_fetch_ctx(((self.prv as u64) << 56) | (bit(self.virt) << 60) | g);
        self.tlb.cur_lim = 0;
        self.tlb.data_ctx = ((data.prv as u64) << 56)
            | (bit(s & MSTATUS_SUM != 0) << 58)
            | (bit(s & MSTATUS_MXR != 0) << 59)
            | (bit(data.virt) << 60)
            | (bit(vs & MSTATUS_SUM != 0) << 61)
            | (bit(vs & MSTATUS_MXR != 0) << 62)
            | g;
        if self.pmu.active {
            self.pmu_translation_tags();
        }
    }

    /// After a change of privilege or virtualization mode: the translation context and
    /// CTR's per-mode recording mask follow. (An `mstatus`/`vsstatus` write changes only the
    /// former: it calls `update_translation_context` alone.)
    pub(crate) fn mode_changed(&mut self) {
        self.update_translation_context();
        self.ctr_refresh();
        self.pmu_after_mode_change();
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

    /// The mode explicit loads and stores are made in: MPRV applies the privilege (and, with
    /// the H extension, the virtualization mode) in `mstatus.MPP`/`MPV` (H: table "Effect
    /// of MPRV on the translation and protection of explicit memory accesses").
    pub(crate) fn data_mode(&self) -> AccessMode {
        let s = self.csr.mstatus;
        if self.prv == PrivilegeMode::Machine && s & MSTATUS_MPRV != 0 {
            let prv = PrivilegeMode::from_bits((s & MSTATUS_MPP) >> MSTATUS_MPP_SHIFT);
            let virt = prv != PrivilegeMode::Machine && s & MSTATUS_MPV != 0;
            AccessMode {
                prv,
                virt,
                hlvx: false,
            }
        } else {
            AccessMode {
                prv: self.prv,
                virt: self.virt,
                hlvx: false,
            }
        }
    }

    /// The mode instruction fetches are made in.
    pub(crate) fn fetch_mode(&self) -> AccessMode {
        AccessMode {
            prv: self.prv,
            virt: self.virt,
            hlvx: false,
        }
    }

    /// Translate `va` for `kind` in `mode`, updating A/D bits; returns the physical address.
    /// With V=1 this is two-stage translation: VS-stage (`vsatp`) to a guest physical
    /// address, then G-stage (`hgatp`); the VS-level page tables are themselves reached
    /// through the G-stage (H extension, "Two-Stage Address Translation").
    pub(crate) fn translate(
        &mut self,
        va: u64,
        kind: Access,
        mode: AccessMode,
    ) -> Result<u64, Exception> {
        self.translate_leaf(va, kind, mode).map(|(pa, _)| pa)
    }

    /// [`Hart::translate`], also giving the size of the first stage's leaf (`satp`'s, or
    /// `vsatp`'s with V=1) as log2 of its 4 KiB pages: 0, 9 (megapage), 18, 27; 0 without
    /// translation. SFENCE.VMA of an address reaches every page of that leaf.
    fn translate_leaf(
        &mut self,
        va: u64,
        kind: Access,
        mode: AccessMode,
    ) -> Result<(u64, u8), Exception> {
        if mode.prv == PrivilegeMode::Machine {
            return Ok((va, 0));
        }
        let s = self.csr.mstatus;
        if !mode.virt {
            let Some(stage) = Stage::from_atp(
                self.csr.satp,
                mode.prv,
                s & MSTATUS_SUM != 0,
                s & MSTATUS_MXR != 0,
                false,
            ) else {
                return Ok((va, 0));
            };
            if !stage.canonical(va) {
                return Err(kind.page_fault(va));
            }
            return self
                .walk::<false>(stage, va, kind, false)
                .map_err(|f| f.exception(kind, va, false));
        }
        let (gpa, span) = self.vs_stage_leaf(va, kind, mode)?;
        let pa = self
            .g_stage::<false>(gpa, kind, None, mode.hlvx)
            .map_err(|f| f.exception(kind, va, true))?;
        Ok((pa, span))
    }

    /// A debugger's translation of `va` (see `Vcpu::debug_translate`): as `translate` in the
    /// mode the hart's own access of `kind` would use, minus the leaf permission checks, the
    /// PMP checks, the A/D updates and the TLB fill; nothing in the hart or its memory changes. PTEs with
    /// PBMT or N set (bits 62:61, 63) are invalid here as in the hardware walk: the hart
    /// implements neither Svpbmt nor Svnapot.
    pub(crate) fn debug_translate_va(
        &self,
        va: u64,
        kind: DebugAccess,
    ) -> Result<u64, DebugTranslateError> {
        let (access, mode) = match kind {
            DebugAccess::Fetch => (Access::Fetch, self.fetch_mode()),
            DebugAccess::Load => (Access::Load, self.data_mode()),
            DebugAccess::Store => (Access::Store, self.data_mode()),
        };
        if mode.prv == PrivilegeMode::Machine {
            return Ok(va);
        }
        let error = |f: Fault| match f {
            Fault::Page => DebugTranslateError::PageFault { vaddr: va },
            Fault::Access => DebugTranslateError::AccessFault { vaddr: va },
            Fault::GuestPage { gpa, .. } => DebugTranslateError::GuestPageFault { vaddr: va, gpa },
        };
        // The first stage: satp (V=0) or vsatp (V=1). Permissions are not checked, so the
        // privilege, SUM and MXR given here do not matter.
        let atp = if mode.virt {
            self.csr.h.vsatp
        } else {
            self.csr.satp
        };
        let pa = match Stage::from_atp(atp, mode.prv, false, false, false) {
            None => va,
            Some(stage) => {
                if !stage.canonical(va) {
                    return Err(DebugTranslateError::PageFault { vaddr: va });
                }
                self.walk::<true>(stage, va, access, mode.virt)
                    .map_err(error)?
                    .0
            }
        };
        if !mode.virt {
            return Ok(pa);
        }
        self.g_stage::<true>(pa, access, None, false).map_err(error)
    }

    /// The VS-stage of a V=1 translation: `va` to its guest physical address (`vsatp`; the
    /// VS-level page tables are reached through the G-stage). `mode.virt` must be set.
    pub(crate) fn vs_stage(
        &mut self,
        va: u64,
        kind: Access,
        mode: AccessMode,
    ) -> Result<u64, Exception> {
        self.vs_stage_leaf(va, kind, mode).map(|(gpa, _)| gpa)
    }

    /// [`Hart::vs_stage`] with the size of its leaf (see [`Hart::translate_leaf`]).
    fn vs_stage_leaf(
        &mut self,
        va: u64,
        kind: Access,
        mode: AccessMode,
    ) -> Result<(u64, u8), Exception> {
        let vs = self.csr.h.vsstatus;
        let mxr = self.csr.mstatus & MSTATUS_MXR != 0;
        match Stage::from_atp(
            self.csr.h.vsatp,
            mode.prv,
            vs & MSTATUS_SUM != 0,
            vs & MSTATUS_MXR != 0 || mxr,
            mode.hlvx,
        ) {
            None => Ok((va, 0)),
            Some(stage) => {
                if !stage.canonical(va) {
                    return Err(kind.page_fault(va).with_gva());
                }
                self.walk::<false>(stage, va, kind, true)
                    .map_err(|f| f.exception(kind, va, true))
            }
        }
    }

    /// G-stage translation of `gpa` (H extension, "Guest Physical Address Translation").
    /// `implicit` is `Some(write)` for the accesses VS-stage translation makes to its page
    /// tables: they are checked as implicit loads/stores and report pseudoinstructions.
    /// `DEBUG`: a debugger's walk (see `walk`).
    fn g_stage<const DEBUG: bool>(
        &self,
        gpa: u64,
        kind: Access,
        implicit: Option<bool>,
        hlvx: bool,
    ) -> Result<u64, Fault> {
        let hgatp = self.csr.h.hgatp;
        let (levels, width) = match hgatp >> 60 {
            HGATP_MODE_SV39X4 => (3, 41),
            HGATP_MODE_SV48X4 => (4, 50),
            HGATP_MODE_SV57X4 => (5, 59),
            _ => return Ok(gpa),
        };
        let tinst = match implicit {
            Some(false) => tinst::PSEUDO_VS_READ,
            Some(true) => tinst::PSEUDO_VS_WRITE,
            None => 0,
        };
        let guest_page = Fault::GuestPage { gpa, tinst };
        if gpa >> width != 0 {
            return Err(guest_page);
        }
        // All G-stage accesses are user-level; implicit ones are plain loads or stores.
        let (perm, mxr) = match implicit {
            Some(write) => (if write { Access::Store } else { Access::Load }, false),
            None => (kind, self.csr.mstatus & MSTATUS_MXR != 0),
        };
        let stage = Stage {
            root: (hgatp & HGATP_PPN) << 12,
            levels,
            root_extra_bits: 2,
            prv: PrivilegeMode::User,
            sum: false,
            mxr,
            hlvx: hlvx && implicit.is_none(),
        };
        self.walk::<DEBUG>(stage, gpa, perm, false)
            .map(|(pa, _)| pa)
            .map_err(|f| match f {
                Fault::Page => guest_page,
                other => other,
            })
    }

    /// One page-table walk (privileged spec 4.3.2). `vs_stage` means the table addresses are
    /// guest physical and go through the G-stage first.
    ///
    /// `DEBUG` makes it a debugger's walk, without side effects: the leaf's permission bits
    /// (R/W/X/U, SUM, MXR) and the PMP are not checked and A/D bits are not updated
    /// (validity still is).
    /// A const parameter, so that the hardware walk compiles as if the flag did not exist.
    fn walk<const DEBUG: bool>(
        &self,
        stage: Stage,
        addr: u64,
        kind: Access,
        vs_stage: bool,
    ) -> Result<(u64, u8), Fault> {
        'walk: loop {
            let mut a = stage.root;
            let mut level = stage.levels - 1;
            loop {
                let bits = 9 + if level == stage.levels - 1 {
                    stage.root_extra_bits
                } else {
                    0
                };
                let vpn = (addr >> (12 + 9 * level)) & ((1 << bits) - 1);
                let pte_gpa = a + vpn * 8;
                let pte_pa = if vs_stage {
                    self.g_stage::<DEBUG>(pte_gpa, kind, Some(false), false)?
                } else {
                    pte_gpa
                };
                // The walk's own accesses are checked by the PMP with privilege S
                // (privileged spec 3.7.1.2), whatever the access that needs the walk.
                if !DEBUG
                    && !self
                        .pmp
                        .allows(pte_pa, 8, PrivilegeMode::Supervisor, pmp::R)
                {
                    return Err(Fault::Access);
                }
                let Some(pte_off) = self.ram.offset(pte_pa, 8) else {
                    return Err(Fault::Access);
                };
                let pte = self.ram.load(pte_off, 8);
                if pte & PTE_V == 0
                    || (pte & PTE_R == 0 && pte & PTE_W != 0)
                    || pte & PTE_HIGH_RESERVED != 0
                {
                    return Err(Fault::Page);
                }
                let ppn = (pte >> 10) & PPN_MASK;
                if pte & (PTE_R | PTE_X) == 0 {
                    // Pointer to the next level.
                    if level == 0 {
                        return Err(Fault::Page);
                    }
                    level -= 1;
                    a = ppn << 12;
                    continue;
                }
                if !DEBUG && !stage.permits(pte, kind) {
                    return Err(Fault::Page);
                }
                // Superpages must be aligned.
                if level > 0 && ppn & ((1 << (9 * level)) - 1) != 0 {
                    return Err(Fault::Page);
                }
                // Hardware A/D update, atomically with respect to other harts. For the VS
                // stage the update is an implicit store, checked by the G-stage as such.
                let want = PTE_A | if kind == Access::Store { PTE_D } else { 0 };
                if !DEBUG && pte & want != want {
                    if vs_stage {
                        self.g_stage::<false>(pte_gpa, kind, Some(true), false)?;
                    }
                    if !self
                        .pmp
                        .allows(pte_pa, 8, PrivilegeMode::Supervisor, pmp::W)
                    {
                        return Err(Fault::Access);
                    }
                    let cell = self.ram.atomic64(pte_off);
                    if cell
                        .compare_exchange(pte, pte | want, Ordering::AcqRel, Ordering::Relaxed)
                        .is_err()
                    {
                        continue 'walk; // the PTE changed under us: walk again
                    }
                }
                let page_mask = (1u64 << (12 + 9 * level)) - 1;
                let pa = ((ppn << 12) & !page_mask) | (addr & page_mask);
                return Ok((pa & ((1 << 56) - 1), 9 * level as u8));
            }
        }
    }

    /// Translate one page worth of access and fill the TLB when the page is plain RAM.
    /// `len` bytes starting at `va` must lie within one page.
    fn access_page(&mut self, va: u64, len: u64, kind: Access) -> Result<(u64, Phys), Exception> {
        let mode = if kind == Access::Fetch {
            self.fetch_mode()
        } else {
            self.data_mode()
        };
        let (pa, span) = self.translate_leaf(va, kind, mode)?;
        let perm = kind.pmp_perm();
        let page = pa & !0xfff;
        // The PMP verdict for the whole page decides the access too when it allows: the
        // entry deciding for the page covers all of it, so it is also the lowest-numbered
        // entry matching the access's bytes (which lie in the page). Otherwise the access
        // is checked on its own.
        let whole_page = self.pmp.allows(page, 0x1000, mode.prv, perm);
        if !whole_page && !self.pmp.allows(pa, len, mode.prv, perm) {
            return Err(Fault::Access.exception(kind, va, mode.virt));
        }
        if let Phys::Ram(page_off) = self.classify(page, 0x1000) {
            // The TLB (and the translated code entered through its fetch entries) keeps a
            // page only when the PMP allows the whole of it in this mode: every access the
            // entry then serves would pass the check. PMP CSR writes flush the TLB.
            // While debug triggers are armed it keeps no load or store entries, so that
            // every load and store takes a slow path that checks them (`trigger/check.rs`;
            // arming flushes the TLB); fetches are checked before the fetch by the
            // interpreter loop, which runs no translated code then (`interp.rs`).
            // Nor does it keep store entries for pages holding translated code, so that
            // stores to them take the slow path, which sees them (`jit::guard`).
            if whole_page
                && (kind == Access::Fetch || !self.trig.armed)
                && !(kind == Access::Store && self.jit_guards(page_off))
            {
                self.tlb.fill(kind, va, page_off, span);
            }
        }
        Ok((pa, self.classify(pa, len)))
    }

    /// The PMP check of an access of `len` bytes at physical address `pa` (the
    /// translation of `va`) in `mode`: an access fault of the access's own type when
    /// denied (privileged spec 3.7.1: PMP violations are always trapped precisely, as
    /// access faults).
    pub(crate) fn pmp_check(
        &self,
        va: u64,
        pa: u64,
        len: u64,
        kind: Access,
        mode: AccessMode,
    ) -> Result<(), Exception> {
        if self.pmp.allows(pa, len, mode.prv, kind.pmp_perm()) {
            Ok(())
        } else {
            Err(Fault::Access.exception(kind, va, mode.virt))
        }
    }

    /// Fetch the halfword at `va` (instruction fetch; faults report `va`): through the
    /// fetch TLB when it holds the page (an instruction in the last halfword of a page, or
    /// crossing into the next, walked the tables at every execution before), else through
    /// the walker, which fills it.
    pub(crate) fn fetch_half(&mut self, va: u64) -> Result<u16, Exception> {
        if let Some(off) = self.tlb.lookup_fetch_half(va) {
            return Ok(self.ram.load(off, 2) as u16);
        }
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
    pub(crate) fn load_slow(&mut self, va: u64, size: u32) -> Result<u64, Ctl> {
        let len = size as u64;
        if self.trig.armed {
            self.trigger_data(va, len, false)?;
        }
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
    pub(crate) fn store_slow(&mut self, va: u64, size: u32, val: u64) -> Result<(), Ctl> {
        let len = size as u64;
        if self.trig.armed {
            self.trigger_data(va, len, true)?;
        }
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
            self.jit_code_write(o0, first);
            self.jit_code_write(o1, len - first);
            return Ok(());
        }
        match self.access_page(va, len, Access::Store)? {
            (_, Phys::Ram(off)) => {
                self.ram.store(off, size, val);
                self.jit_code_write(off, len);
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
            return Err(Exception::new(cause, va).into());
        }
        // The TLB: a load entry grants reading, a store entry writing (and D set), both
        // for a RAM page.
        if let Some(off) = self.tlb.lookup(&self.tlb.load, va) {
            if !store || self.tlb.lookup(&self.tlb.store, va).is_some() {
                return Ok(off);
            }
        }
        // AMOs need both read and write permission; faults are reported as store/AMO faults.
        if store {
            self.access_page(va, size as u64, Access::Load)
                .map_err(|e| {
                    let cause = match e.cause {
                        cause::LOAD_ACCESS => cause::STORE_ACCESS,
                        cause::LOAD_GUEST_PAGE_FAULT => cause::STORE_GUEST_PAGE_FAULT,
                        _ => cause::STORE_PAGE_FAULT,
                    };
                    Exception { cause, ..e }
                })?;
        }
        match self.access_page(va, size as u64, kind)? {
            (_, Phys::Ram(off)) => {
                // SC and AMOs write there (a page with translated code has no store entry).
                if store {
                    self.jit_code_write(off, size as u64);
                }
                Ok(off)
            }
            _ => Err(kind.access_fault(va).into()),
        }
    }

    /// SFENCE.VMA of one address (`rs1` not x0, any `rs2`): the translations cached from
    /// the leaf PTE of `va` in every address space (privileged spec 4.2.1,
    /// "Supervisor Memory-Management Fence Instruction"), which for a superpage are all
    /// its pages. The TLB models of the performance monitor are flushed whole, as for
    /// [`Hart::flush_tlb`].
    pub(crate) fn flush_tlb_page(&mut self, va: u64) {
        self.tlb.flush_page(va);
        if self.pmu.active {
            self.pmu.state.models.flush_tlbs();
            self.pmu_translation_tags();
        }
    }

    /// SFENCE.VMA of every address, HFENCE.*, and `satp` writes.
    pub(crate) fn flush_tlb(&mut self) {
        self.tlb.flush();
        // The TLB models follow only while someone can observe them.
        if self.pmu.active {
            self.pmu.state.models.flush_tlbs();
            self.pmu_translation_tags();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HartConfig;
    use crate::csr::MSTATUS_MPP_SHIFT;
    use vcpu_api::DebugAccess::{Fetch, Load, Store};
    use vcpu_api::DebugTranslateError as E;
    use vm_memory::{GuestAddress, GuestMemoryMmap};

    const RAM: u64 = 0x8000_0000;
    const RAM_SIZE: u64 = 4 << 20;
    // Sv39 tables (V=0).
    const ROOT: u64 = RAM + 0x12_0000;
    const L1: u64 = RAM + 0x12_1000;
    const L0: u64 = RAM + 0x12_2000;
    const SATP: u64 = (8 << 60) | (ROOT >> 12);
    // Two-stage: the G-stage root (16 KiB, Sv39x4) and the VS-stage tables at guest physical
    // addresses; the G-stage maps guest physical [0, 1 GiB) to RAM with one gigapage.
    const G_ROOT: u64 = RAM + 0x10_0000;
    const VS_ROOT: u64 = 0x11_0000;
    const VS_L1: u64 = 0x11_1000;
    const VS_L0: u64 = 0x11_2000;
    const HGATP: u64 = (HGATP_MODE_SV39X4 << 60) | (G_ROOT >> 12);
    const VSATP: u64 = (8 << 60) | (VS_ROOT >> 12);

    fn pte(pa: u64, flags: u64) -> u64 {
        ((pa >> 12) << 10) | flags
    }

    fn hart() -> Hart {
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM), RAM_SIZE as usize)])
            .expect("guest memory");
        let mut h = Hart::new(
            HartConfig {
                jit: false,
                decode_cache_entries: 16,
                ..HartConfig::default()
            },
            mem,
        )
        .expect("hart");
        // Sv39: VA 0x4000_0000 + i * 4 KiB is L0[i]; VA 0x4020_0000 a 2 MiB page at
        // 0x8020_0000; VA 0x8000_0000 a gigapage onto itself.
        h.w64(ROOT + 8, pte(L1, PTE_V));
        h.w64(
            ROOT + 8 * 2,
            pte(RAM, PTE_V | PTE_R | PTE_W | PTE_X | PTE_A | PTE_D),
        );
        h.w64(ROOT + 8 * 3, pte(0x1000_0000, PTE_V)); // a table outside RAM
        h.w64(L1, pte(L0, PTE_V));
        h.w64(L1 + 8, pte(RAM + 0x20_0000, PTE_V | PTE_R | PTE_W)); // 2 MiB, A = D = 0
        h.w64(L1 + 8 * 2, pte(RAM + 0x1000, PTE_V | PTE_R)); // misaligned megapage
        h.w64(L0, pte(RAM + 0x3_0000, PTE_V | PTE_R | PTE_W)); // A = D = 0
        h.w64(L0 + 8, pte(RAM + 0x3_1000, PTE_V | PTE_X | PTE_A)); // execute-only
        h.w64(L0 + 8 * 2, pte(RAM + 0x3_2000, PTE_V | PTE_R | PTE_U)); // user page
        h.w64(L0 + 8 * 3, pte(RAM + 0x3_3000, PTE_R | PTE_W | PTE_A)); // V = 0
        h.w64(L0 + 8 * 4, pte(RAM + 0x3_4000, PTE_V | PTE_W | PTE_A)); // W without R
        h.w64(L0 + 8 * 5, pte(RAM + 0x3_5000, PTE_V | PTE_R | (1 << 62))); // PBMT set
        h.w64(L0 + 8 * 6, pte(RAM + 0x3_6000, PTE_V)); // a pointer at level 0
                                                       // G-stage: guest physical [0, 1 GiB) onto RAM, A = D = 0 (root entries 0-2047).
        h.w64(G_ROOT, pte(RAM, PTE_V | PTE_R | PTE_W | PTE_X | PTE_U));
        // VS-stage (guest physical; +RAM in host physical): VA i * 4 KiB is VS_L0[i].
        h.w64(RAM + VS_ROOT, pte(VS_L1, PTE_V));
        h.w64(RAM + VS_ROOT + 8, pte(0x4000_0000, PTE_V)); // table beyond the G-stage
        h.w64(RAM + VS_L1, pte(VS_L0, PTE_V));
        h.w64(RAM + VS_L0 + 8 * 4, pte(0x3_4000, PTE_V | PTE_R | PTE_W)); // A = D = 0
        h.w64(RAM + VS_L0 + 8 * 5, pte(0x3_0000, PTE_V | PTE_R | PTE_U)); // A = 0
        h.w64(RAM + VS_L0 + 8 * 6, pte(0x4000_0000, PTE_V | PTE_R | PTE_A)); // no G-stage
        h.w64(RAM + VS_L0 + 8 * 7, 0);
        h
    }

    impl Hart {
        fn w64(&mut self, pa: u64, v: u64) {
            let off = self.ram.offset(pa, 8).expect("in RAM");
            self.ram.store(off, 8, v);
        }
        fn r64(&self, pa: u64) -> u64 {
            let off = self.ram.offset(pa, 8).expect("in RAM");
            self.ram.load(off, 8)
        }
        fn ram_image(&self) -> Vec<u64> {
            (0..RAM_SIZE / 8).map(|i| self.ram.load(i * 8, 8)).collect()
        }
        fn enter(&mut self, prv: PrivilegeMode, virt: bool) {
            self.prv = prv;
            self.virt = virt;
            self.csr.satp = SATP;
            self.csr.h.vsatp = VSATP;
            self.csr.h.hgatp = HGATP;
            self.flush_tlb();
            self.mode_changed();
        }
    }

    #[test]
    fn machine_mode_and_bare_are_the_identity() {
        let mut h = hart();
        h.enter(PrivilegeMode::Machine, false);
        for kind in [Fetch, Load, Store] {
            assert_eq!(h.debug_translate_va(0x4000_0000, kind), Ok(0x4000_0000));
        }
        h.enter(PrivilegeMode::Supervisor, false);
        h.csr.satp = 0;
        assert_eq!(h.debug_translate_va(0x4000_0123, Load), Ok(0x4000_0123));
        assert_eq!(h.debug_translate_va(u64::MAX, Fetch), Ok(u64::MAX));
    }

    #[test]
    fn sv39_4k_2m_and_1g_leaves() {
        let mut h = hart();
        h.enter(PrivilegeMode::Supervisor, false);
        for kind in [Fetch, Load, Store] {
            assert_eq!(h.debug_translate_va(0x4000_0abc, kind), Ok(RAM + 0x3_0abc));
            assert_eq!(h.debug_translate_va(0x4021_2345, kind), Ok(RAM + 0x21_2345));
            assert_eq!(h.debug_translate_va(0x8012_3456, kind), Ok(0x8012_3456));
        }
        // Through the vCPU interface.
        let v: &dyn vcpu_api::Vcpu = &h;
        assert_eq!(v.debug_translate(0x4000_0abc, Load), Ok(RAM + 0x3_0abc));
        // The hardware walk agrees.
        assert_eq!(
            h.translate(0x4000_0abc, Access::Load, h.data_mode()),
            Ok(RAM + 0x3_0abc)
        );
        assert_eq!(
            h.translate(0x4021_2345, Access::Store, h.data_mode()),
            Ok(RAM + 0x21_2345)
        );
    }

    #[test]
    fn permission_bits_are_ignored() {
        let mut h = hart();
        h.enter(PrivilegeMode::Supervisor, false);
        // A U page from S with SUM = 0, written and fetched; an execute-only page read.
        for kind in [Fetch, Load, Store] {
            assert_eq!(h.debug_translate_va(0x4000_2010, kind), Ok(RAM + 0x3_2010));
            assert_eq!(h.debug_translate_va(0x4000_1010, kind), Ok(RAM + 0x3_1010));
        }
        assert!(h
            .translate(0x4000_2010, Access::Load, h.data_mode())
            .is_err());
        // And an S page from U.
        h.enter(PrivilegeMode::User, false);
        assert_eq!(h.debug_translate_va(0x4000_0010, Store), Ok(RAM + 0x3_0010));
    }

    #[test]
    fn invalid_mappings_are_errors() {
        let mut h = hart();
        h.enter(PrivilegeMode::Supervisor, false);
        for va in [
            0x4000_3000u64,   // V = 0
            0x4000_4008,      // W without R
            0x4000_5000,      // PBMT: no Svpbmt
            0x4000_6000,      // a pointer at the last level
            0x4000_7000,      // an empty PTE
            0x4040_0000,      // a misaligned superpage
            0x0000_1000,      // root entry 0 is empty
            0x0040_0000_0000, // not canonical (bit 38 set, 63:39 clear)
        ] {
            assert_eq!(
                h.debug_translate_va(va, Load),
                Err(E::PageFault { vaddr: va }),
                "{va:#x}"
            );
        }
        assert_eq!(
            h.debug_translate_va(0xc000_0000, Load),
            Err(E::AccessFault { vaddr: 0xc000_0000 })
        );
        // A canonical address at the top of the space: root entry 511 is empty.
        assert_eq!(
            h.debug_translate_va(0xffff_ffc0_0000_0000, Fetch),
            Err(E::PageFault {
                vaddr: 0xffff_ffc0_0000_0000
            })
        );
    }

    #[test]
    fn mprv_applies_to_loads_and_stores_only() {
        let mut h = hart();
        h.enter(PrivilegeMode::Machine, false);
        h.csr.mstatus |= MSTATUS_MPRV | (1 << MSTATUS_MPP_SHIFT); // MPP = S
        h.update_translation_context();
        assert_eq!(h.debug_translate_va(0x4000_0008, Load), Ok(RAM + 0x3_0008));
        assert_eq!(h.debug_translate_va(0x4000_0008, Store), Ok(RAM + 0x3_0008));
        assert_eq!(h.debug_translate_va(0x4000_0008, Fetch), Ok(0x4000_0008));
        // MPV = 1: the loads are VS-mode's, two-stage.
        h.csr.mstatus |= MSTATUS_MPV;
        h.update_translation_context();
        assert_eq!(h.debug_translate_va(0x5008, Load), Ok(RAM + 0x3_0008));
        assert_eq!(h.debug_translate_va(0x5008, Fetch), Ok(0x5008));
    }

    #[test]
    fn two_stage_translation_reads_the_vs_tables_through_the_g_stage() {
        let mut h = hart();
        h.enter(PrivilegeMode::Supervisor, true);
        for kind in [Fetch, Load, Store] {
            assert_eq!(h.debug_translate_va(0x5678, kind), Ok(RAM + 0x3_0678));
        }
        // VU-mode too (the leaf is a U page; permissions are ignored anyway).
        h.enter(PrivilegeMode::User, true);
        assert_eq!(h.debug_translate_va(0x5678, Load), Ok(RAM + 0x3_0678));
        // vsatp Bare: guest virtual = guest physical, still through the G-stage.
        h.enter(PrivilegeMode::Supervisor, true);
        h.csr.h.vsatp = 0;
        assert_eq!(h.debug_translate_va(0x1234, Load), Ok(RAM + 0x1234));
        assert_eq!(
            h.debug_translate_va(0x4000_1234, Load),
            Err(E::GuestPageFault {
                vaddr: 0x4000_1234,
                gpa: 0x4000_1234
            })
        );
        // hgatp Bare too: the identity.
        h.csr.h.hgatp = 0;
        assert_eq!(h.debug_translate_va(0x4000_1234, Load), Ok(0x4000_1234));
    }

    #[test]
    fn two_stage_faults_name_the_guest_physical_address() {
        let mut h = hart();
        h.enter(PrivilegeMode::Supervisor, true);
        // The leaf's guest physical address has no G-stage mapping.
        assert_eq!(
            h.debug_translate_va(0x6010, Load),
            Err(E::GuestPageFault {
                vaddr: 0x6010,
                gpa: 0x4000_0010
            })
        );
        // A VS-stage table has none: the PTE's own address is reported.
        let va = 0x4000_0000 + 0x3000;
        assert_eq!(
            h.debug_translate_va(va, Store),
            Err(E::GuestPageFault {
                vaddr: va,
                gpa: 0x4000_0000
            })
        );
        // Invalid VS-stage PTE: a page fault.
        assert_eq!(
            h.debug_translate_va(0x7000, Fetch),
            Err(E::PageFault { vaddr: 0x7000 })
        );
        // A guest physical address beyond Sv39x4's 41 bits.
        h.csr.h.vsatp = 0;
        assert_eq!(
            h.debug_translate_va(1 << 41, Load),
            Err(E::GuestPageFault {
                vaddr: 1 << 41,
                gpa: 1 << 41
            })
        );
    }

    #[test]
    fn debug_translation_changes_nothing() {
        for (prv, virt, va) in [
            (PrivilegeMode::Supervisor, false, 0x4000_0010u64),
            (PrivilegeMode::Supervisor, false, 0x4020_0010),
            (PrivilegeMode::Supervisor, true, 0x4010),
        ] {
            let mut h = hart();
            h.enter(prv, virt);
            let before = h.ram_image();
            for kind in [Fetch, Load, Store] {
                assert!(h.debug_translate_va(va, kind).is_ok());
                assert!(h.debug_translate_va(0x7000, kind).is_err());
            }
            // No A/D update (in either stage), nothing else written, no TLB entry.
            assert!(h.ram_image() == before, "memory changed ({va:#x})");
            assert_eq!(h.tlb.lookup(&h.tlb.load, va), None);
            assert_eq!(h.tlb.lookup(&h.tlb.store, va), None);
            assert_eq!(h.tlb.lookup_fetch(va), None);
            // The hardware path through the same entries sets A and D and fills the TLB:
            // the entries checked above are the ones the walk uses.
            let pa = h.debug_translate_va(va, Store).expect("mapped");
            h.store(va, 8, 0x1122).expect("store");
            assert!(h.tlb.lookup(&h.tlb.store, va).is_some());
            assert_eq!(h.r64(pa), 0x1122);
            let changed = h
                .ram_image()
                .iter()
                .zip(&before)
                .filter(|(a, b)| a != b)
                .count();
            // The stored word, the leaf's A/D and (two-stage) the G-stage leaf's A/D.
            assert_eq!(changed, if virt { 3 } else { 2 }, "{va:#x}");
        }
        // The PTE without A stays so; the hardware walk sets A and D.
        let mut h = hart();
        h.enter(PrivilegeMode::Supervisor, true);
        let leaf = RAM + VS_L0 + 8 * 5;
        assert_eq!(h.debug_translate_va(0x5000, Store), Ok(RAM + 0x3_0000));
        assert_eq!(h.r64(leaf) & (PTE_A | PTE_D), 0);
        assert_eq!(h.r64(G_ROOT) & (PTE_A | PTE_D), 0);
        h.enter(PrivilegeMode::User, true); // the leaf is a U page
        assert!(h.translate(0x5000, Access::Load, h.data_mode()).is_ok());
        assert_eq!(h.r64(leaf) & (PTE_A | PTE_D), PTE_A);
        assert_ne!(h.r64(G_ROOT) & PTE_A, 0);
    }

    /// SFENCE.VMA of an address drops that address's translation, and for a superpage
    /// every page of it, and keeps the other pages' translations (privileged spec 4.2.1:
    /// without a fence they may stay stale, as here).
    #[test]
    fn a_fence_of_an_address_drops_its_leaf_only() {
        let mut h = hart();
        h.enter(PrivilegeMode::Supervisor, false);
        let rwad = PTE_V | PTE_R | PTE_W | PTE_A | PTE_D;
        for k in 0..4u64 {
            h.w64(RAM + 0x3_8000 + k * 0x1000, 0x1000 + k);
        }
        h.w64(L0 + 8 * 8, pte(RAM + 0x3_8000, rwad));
        h.w64(L0 + 8 * 9, pte(RAM + 0x3_9000, rwad));
        assert_eq!(h.load(0x4000_8000, 8).ok(), Some(0x1000));
        assert_eq!(h.load(0x4000_9000, 8).ok(), Some(0x1001));
        // Both PTEs change; only the first page is fenced.
        h.w64(L0 + 8 * 8, pte(RAM + 0x3_a000, rwad));
        h.w64(L0 + 8 * 9, pte(RAM + 0x3_b000, rwad));
        h.flush_tlb_page(0x4000_8abc);
        assert_eq!(h.load(0x4000_8000, 8).ok(), Some(0x1002));
        assert_eq!(h.load(0x4000_9000, 8).ok(), Some(0x1001), "kept");
        // The 2 MiB page at VA 0x4020_0000: two of its pages cached, the leaf moved to the
        // start of RAM, one fenced: both see the new leaf.
        h.w64(RAM + 0x1000, 0x2001);
        h.w64(RAM + 0x5_5000, 0x2055);
        h.w64(RAM + 0x20_1000, 0x3001);
        h.w64(RAM + 0x25_5000, 0x3055);
        assert_eq!(h.load(0x4020_1000, 8).ok(), Some(0x3001));
        assert_eq!(h.load(0x4025_5000, 8).ok(), Some(0x3055));
        h.w64(L1 + 8, pte(RAM, rwad));
        h.flush_tlb_page(0x4020_1000);
        assert_eq!(
            h.load(0x4025_5000, 8).ok(),
            Some(0x2055),
            "the superpage's other page"
        );
        assert_eq!(h.load(0x4020_1000, 8).ok(), Some(0x2001));
        // A full fence drops the kept page too.
        h.flush_tlb();
        assert_eq!(h.load(0x4000_9000, 8).ok(), Some(0x1003));
    }

    /// The TLB's translations are part of the hart's state: one cached before its PTE
    /// changed without a fence is still used after a restore, as it would have been without
    /// one, and the walk it spares sets no A bit. A state without them (snapshot format 12)
    /// walks again; a TLB entry outside RAM, of no kind or in a taken slot is refused, and
    /// the hart is left as it was. A state saved with a remote fence pending holds no
    /// translations.
    #[test]
    fn the_tlb_is_saved_and_restored() {
        use crate::state::TlbEntry;
        let mut h = hart();
        h.enter(PrivilegeMode::Supervisor, false);
        h.w64(
            L0 + 8 * 8,
            pte(RAM + 0x3_8000, PTE_V | PTE_R | PTE_W | PTE_A | PTE_D),
        );
        h.w64(RAM + 0x3_8000, 0x1000);
        h.w64(RAM + 0x3_a000, 0x1002);
        assert_eq!(h.load(0x4000_8000, 8).ok(), Some(0x1000));
        // The PTE moves to another frame, A = 0, without a fence.
        h.w64(L0 + 8 * 8, pte(RAM + 0x3_a000, PTE_V | PTE_R | PTE_W));
        let state = h.save_state();
        assert!(state
            .tlb
            .entries
            .iter()
            .any(|e| e.kind == 1 && e.off == 0x3_8000));
        for bad in [
            TlbEntry {
                kind: 1,
                tag: 0x4_0009,
                off: RAM_SIZE,
                span: 0,
            },
            TlbEntry {
                kind: 1,
                tag: 0x4_0009,
                off: 0x123,
                span: 0,
            },
            TlbEntry {
                kind: 3,
                tag: 0x4_0009,
                off: 0,
                span: 0,
            },
            TlbEntry {
                kind: 1,
                tag: 0x4_0009,
                off: 0,
                span: 5,
            },
            TlbEntry {
                kind: 1,
                tag: 0x4_0009 | 1 << 52,
                off: 0,
                span: 0,
            },
            TlbEntry {
                kind: 1,
                tag: 0x4_0008 | 1 << 56,
                off: 0,
                span: 0,
            },
        ] {
            let mut s = state.clone();
            s.tlb.entries.push(bad);
            s.pc = 0x1234;
            let e = h.restore_state(&s).unwrap_err().to_string();
            assert!(e.contains("TLB entry"), "{bad:?}: {e}");
            assert_ne!(h.pc, 0x1234, "{bad:?}: nothing restored");
        }
        h.restore_state(&state).unwrap();
        assert_eq!(
            h.load(0x4000_8000, 8).ok(),
            Some(0x1000),
            "the cached translation"
        );
        assert_eq!(h.r64(L0 + 8 * 8) & PTE_A, 0, "no walk");
        assert_eq!(h.save_state(), state);
        let mut old = state.clone();
        old.tlb = Default::default();
        h.restore_state(&old).unwrap();
        assert_eq!(h.load(0x4000_8000, 8).ok(), Some(0x1002), "walked");
        assert_ne!(h.r64(L0 + 8 * 8) & PTE_A, 0, "A set by the walk");
        // A remote fence not yet taken when the state is saved: saved as taken.
        assert!(!h.save_state().tlb.entries.is_empty());
        h.mailbox().request_flush();
        assert_eq!(h.save_state().tlb, Default::default());
    }

    /// PMP (16 entries): explicit accesses and the walk's own reads checked after
    /// translation, access faults (not page faults), no TLB fill for a page with more than
    /// one verdict, and a PMP write dropping what the TLB holds.
    #[test]
    fn pmp_checks_accesses_walks_and_tlb_fills() {
        use crate::pmp::{self, A_NA4, A_NAPOT, R, W, X};
        let mut h = hart();
        h.pmp = pmp::Pmp::new(pmp::ENTRIES);
        let write = |h: &mut Hart, num: u16, v: u64| {
            (crate::csr::lookup(num)
                .and_then(|d| d.write)
                .expect("PMP CSR"))(h, v)
        };
        // Entry 0: NA4, no permission, 16 bytes into the frame of VA 0x4000_0000. Entry 1:
        // NAPOT, no permission, over the L0 table page. Entry 15: everything, RWX.
        write(&mut h, 0x3b0, (RAM + 0x3_0010) >> 2);
        write(&mut h, 0x3b1, (L0 >> 2) | 0x1ff);
        write(&mut h, 0x3bf, u64::MAX);
        write(&mut h, 0x3a0, (A_NA4 as u64) | ((A_NAPOT as u64) << 8));
        write(&mut h, 0x3a2, ((A_NAPOT | R | W | X) as u64) << 56);
        h.enter(PrivilegeMode::Supervisor, false);
        let fault = |r: Result<u64, Ctl>| match r {
            Err(Ctl::Exception(e)) => Some((e.cause, e.tval)),
            _ => None,
        };
        // The 2 MiB page and the gigapage: one verdict, cached.
        assert!(h.load(0x4020_0000, 8).is_ok());
        assert!(h.tlb.lookup(&h.tlb.load, 0x4020_0000).is_some());
        // The walk reads the L0 table: denied to S, an access fault.
        assert_eq!(
            fault(h.load(0x4000_2000, 8)),
            Some((cause::LOAD_ACCESS, 0x4000_2000))
        );
        // The table readable (entry 1 R): the walk succeeds, the page is not cached (entry 0
        // is in it), and the NA4 word faults every time.
        write(
            &mut h,
            0x3a0,
            (A_NA4 as u64) | (((A_NAPOT | R) as u64) << 8),
        );
        assert!(h.tlb.lookup(&h.tlb.load, 0x4020_0000).is_none(), "flushed");
        // Its leaf has A = D = 0: the hardware update is a store to the table, which
        // the PMP denies (the A/D update of a walk is checked like its reads).
        assert_eq!(
            fault(h.store(0x4000_0008, 8, 1).map(|()| 0)),
            Some((cause::STORE_ACCESS, 0x4000_0008))
        );
        write(
            &mut h,
            0x3a0,
            (A_NA4 as u64) | (((A_NAPOT | R | W) as u64) << 8),
        );
        assert!(h.store(0x4000_0008, 8, 1).is_ok());
        assert!(h.tlb.lookup(&h.tlb.store, 0x4000_0008).is_none());
        for _ in 0..2 {
            assert_eq!(
                fault(h.load(0x4000_0010, 4)),
                Some((cause::LOAD_ACCESS, 0x4000_0010))
            );
        }
        // A partial match fails; the next word is not matched by entry 0.
        assert_eq!(
            fault(h.load(0x4000_000c, 8)),
            Some((cause::LOAD_ACCESS, 0x4000_000c))
        );
        assert!(h.load(0x4000_0014, 4).is_ok());
        // M-mode passes the unlocked entry.
        h.enter(PrivilegeMode::Machine, false);
        assert!(h.load(RAM + 0x3_0010, 4).is_ok());
        // Locked, it binds M-mode too, and ignores writes.
        write(
            &mut h,
            0x3a0,
            ((pmp::L | A_NA4) as u64) | (((A_NAPOT | R | W) as u64) << 8),
        );
        assert_eq!(
            fault(h.load(RAM + 0x3_0010, 4)),
            Some((cause::LOAD_ACCESS, RAM + 0x3_0010))
        );
        write(&mut h, 0x3a0, 0);
        write(&mut h, 0x3b0, 0);
        assert_eq!(h.csr(0x3a0), Some((pmp::L | A_NA4) as u64));
        assert_eq!(h.csr(0x3b0), Some((RAM + 0x3_0010) >> 2));
    }
}
