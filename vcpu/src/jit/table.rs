//! What the translator keeps and compiles against, apart from the hart: the block table and
//! the code space ([`Jit`]), the plan of a block, the hart [`Layout`] the code generator
//! addresses, and the monitor's model view. A leaf: the hart holds a [`Jit`] and a
//! [`MonitorView`] without depending on the translator's code.

#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused_imports, unused_mut, unused_variables)
)]

use super::region;
use crate::decode::Insn;

/// Instructions per block at most.
pub(crate) const MAX_INSNS: usize = 64;
/// Slots a kind of block hashes its RAM offsets to (a power of two); each kind's slots
/// start elsewhere in the table ([`Jit::slot`]).
pub(crate) const TABLE: usize = 1 << 18;
/// How far apart the slots of consecutive CTR keys start ([`Jit::slot`]).
const CTR_SLOT_STEP: usize = 2048;
/// Slots in the lookup table: [`TABLE`] from the start of the furthest kind's.
const SLOTS: usize = TABLE + TABLE / 2 + (CTR_KEYS - 1) * CTR_SLOT_STEP;
/// What monitored blocks read beside the models themselves (set by the monitor whenever
/// it changes: see `Hart::pmu_view_refresh`).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct MonitorView {
    /// The data and fetch translation tags, `u64::MAX` when that side is not translated.
    pub(crate) data_tag: u64,
    pub(crate) fetch_tag: u64,
    /// The line (address / 64) of the last data access a monitored block ran the models
    /// for, or `u64::MAX`: while it is set, that line is in the L1D model and its page in
    /// the DTLB model, so another access to it would hit both and change nothing, and the
    /// block skips them. Anything else that touches those models (the interpreter's
    /// accesses, a flush, a restore, a new translation tag) resets it.
    pub(crate) last_line: u64,
    /// The page, as `pc as i64 >> 12` (a sign-extended immediate for the pages of both
    /// halves of the address space), whose fetch a monitored block need not report, or
    /// [`NO_PAGE`]: with translation, the ITLB model's last page (`Models::last_fetch_page`)
    /// under the current fetch tag, so that a report would change nothing; without, the
    /// page the last block reported, which did nothing either. Set on the way into
    /// translated code (`Hart::pmu_fetch_page`), where nothing else moves the model's last
    /// page until the run returns; blocks keep it while they run.
    pub(crate) fetch_page: u64,
    /// The cycles of the cost model blocks may still add before a counter of cycles can
    /// wrap (`Hart::pmu_cycle_room`), set on the way into translated code: where blocks
    /// check their cycles ([`Jit::cycle_room`]), each takes its [`Block::cycles`] from it
    /// on entry and leaves for the dispatcher instead when they do not fit.
    pub(crate) cycle_room: u64,
}

/// No page: `pc as i64 >> 12` is below 2^51.
pub(crate) const NO_PAGE: u64 = i64::MAX as u64;

impl Default for MonitorView {
    /// No translation, and nothing seen last (`u64::MAX`).
    fn default() -> Self {
        MonitorView {
            data_tag: u64::MAX,
            fetch_tag: u64::MAX,
            last_line: u64::MAX,
            fetch_page: NO_PAGE,
            cycle_room: u64::MAX,
        }
    }
}

/// Marks the table key (`Block::off`) of a monitored block: one translated to report the
/// performance monitor's events (see `x64`), for runs with the monitor active. A RAM offset
/// never has this bit, so the two kinds of a block never match each other's lookups.
pub(crate) const MONITORED: u64 = 1 << 62;
/// Room one block may need at most (the assembler's output is checked against it).
pub(crate) const MAX_BLOCK_BYTES: usize = 64 * 1024;

/// Where the code generator finds hart state: displacements from the hart pointer.
pub(crate) struct Layout {
    pub(super) x: i32,
    pub(super) pc: i32,
    /// `Hart::jit_break`.
    pub(super) jit_break: i32,
    pub(super) budget: i32,
    pub(super) last_exit: i32,
    pub(super) load: i32,
    pub(super) store: i32,
    pub(super) data_ctx: i32,
    pub(super) fetch: i32,
    pub(super) fetch_ctx: i32,
    pub(super) fault: i32,
    pub(super) load_helper: usize,
    pub(super) store_helper: usize,
    /// The CTR record helper.
    pub(super) ctr_helper: usize,
    /// The block's CTR key ([`Jit::ctr_pair`]): the transfer types recorded
    /// (`Hart::ctr_mask`) and of those the ones logged inline (`Hart::ctr_fast_mask`) while
    /// blocks of its kind run.
    pub(super) ctr_mask_now: u16,
    pub(super) ctr_fast_now: u16,
    /// The block's kind ([`Jit::kind`]): what its table key has besides the RAM offset.
    pub(super) kind: u64,
    /// Monitored blocks check their cycles on entry (`Jit::cycle_room`).
    pub(super) cycles_checked: bool,
    /// Monitored blocks: `Hart::jit_addr`, the event tallies (`PmuState::tally`), the
    /// models (`PmuState::models`: their arrays and the ITLB model's last page) and the
    /// model view (`Hart::jit_view`).
    pub(super) addr: i32,
    pub(super) tally: i32,
    pub(super) models: i32,
    pub(super) view: i32,
    /// Floating point: `Hart::f`, `mstatus`, `vsstatus`, `Hart::virt`
    /// and the helper that executes an F/D instruction with the interpreter's code.
    pub(super) f: i32,
    pub(super) mstatus: i32,
    pub(super) vsstatus: i32,
    pub(super) virt: i32,
    pub(super) float_helper: usize,
    /// PAUSE's helper on a hart with `HartConfig::pause_yields` (pause-loop detection), or
    /// 0: then PAUSE is a FENCE, a no-op.
    pub(super) pause_helper: usize,
    /// `fflags` and `frm` (bytes), and whether the host has FMA3 (fused multiply-adds).
    pub(super) fflags: i32,
    pub(super) frm: i32,
    pub(super) fma: bool,
    /// The helpers that execute a CSR instruction and an LR, SC or AMO with the
    /// interpreter's code (for a monitored block, the variants that report the monitor's
    /// events).
    pub(super) csr_helper: usize,
    pub(super) atomic_helper: usize,

    /// `Hart::jit_code_epoch` and `super::jit_code_checked` (`super::guard`).
    pub(super) code_epoch: i32,
    pub(super) checked_helper: usize,
    /// The address of the protected pages' bits (`super::guard::CodeGuard::bits`).
    pub(super) guard_bits: u64,
    pub(super) ram_host: u64,
    /// Address of the block table (entries `{va, off, code, insns}`, 32 bytes).
    pub(super) table: u64,
    /// `Hart::jit_jumps`: its key and its entries (`super::jumps`).
    pub(super) jump_key: i32,
    pub(super) jumps: i32,
}

/// Where a table key (`Block::off`) has the block's CTR key ([`Jit::ctr_pair`]), as an
/// index into [`Jit::ctr_pairs`] (0 for recording nothing); a RAM offset never reaches these
/// bits.
pub(crate) const CTR_KEY_SHIFT: u32 = 56;
/// CTR keys a region holds at once (0 and 31 others); one more empties it.
pub(crate) const CTR_KEYS: usize = 32;
const _: () = assert!(MONITORED >> CTR_KEY_SHIFT >= CTR_KEYS as u64);

/// A block to assemble.
pub(crate) struct Plan {
    /// (pc, decoded instruction), in order.
    pub(super) insns: Vec<(u64, Insn)>,
    /// pc after the last instruction (when it does not jump).
    pub(super) end_pc: u64,
    /// Host address of the block's first code byte.
    pub(super) code_host: usize,
    /// Code bytes to compare at entry when the block's epoch slot is behind the hart's code
    /// epoch (`super::guard`): (byte offset, size 2/4/8, value).
    pub(super) check: Vec<(u32, u8, u64)>,
    /// The block's epoch slot (`super::guard::CodeGuard::slot`): its address in the code
    /// region's write view, or 0 (none: a mixed page), and in its execute view.
    pub(super) epoch_slot: usize,
    pub(super) epoch_slot_exec: usize,
    /// Report the performance monitor's events (a monitored block), and its most cycles
    /// (`super::most_cycles`).
    pub(super) monitored: bool,
    pub(super) cycles: u32,
}

/// A translated block: entry point, or 0 when the instruction at `va` is not translated.
/// An entry with no code and `insns` > 0 is a block planned but not translated because it
/// did not fit in what was left of a chunk, or its `cycles` in the room left before a
/// counter of cycles can wrap (`Hart::jit_translate`): it is translated when a dispatch
/// has room for it, and until then costs one lookup, not a new plan. An entry with no code
/// and `seen` > 0 is a block not translated yet because the dispatcher has reached it only
/// `seen` times, fewer than [`Jit::threshold`] ([`Jit::cold`]).
#[derive(Clone, Copy)]
#[repr(C)]
pub(super) struct Block {
    pub(super) va: u64,
    pub(super) off: u64,
    pub(super) code: usize,
    /// Instructions (at most [`MAX_INSNS`]).
    pub(super) insns: u16,
    /// Dispatches to a block not translated yet (see above); 0 in every other entry.
    pub(super) seen: u16,
    /// A monitored block's most cycles of the cost model (`pmu::model::Cost`): each
    /// instruction's slot and the most penalties it can take.
    pub(super) cycles: u32,
}

/// An empty table entry: all zeros (the table is allocated zeroed, so untouched parts cost
/// no memory). It matches pc 0 at RAM offset 0 as "not translated", which only means the
/// interpreter runs that one instruction.
pub(super) const NO_BLOCK: Block = Block {
    va: 0,
    off: 0,
    code: 0,
    insns: 0,
    seen: 0,
    cycles: 0,
};

/// A hart's translated blocks.
pub(crate) struct Jit {
    /// A block is translated at the `threshold`-th dispatch to it (`HartConfig::jit_threshold`,
    /// at least 1; [`Jit::cold`]).
    pub(super) threshold: u16,
    pub(super) region: region::Region,
    pub(super) table: Box<[Block]>,
    /// Blocks translated, and runs that ended in a block found stale (statistics).
    pub(crate) translated: u64,
    pub(crate) stale_exits: u64,
    /// Incremented when the region is emptied (every block and link is gone).
    pub(crate) generation: u64,
    /// Moves on (from 1) whenever a block the jump cache may name can no longer be entered
    /// as it was (`super::jumps`): the region emptied, a block found stale, another
    /// [`Jit::kind`] to run, monitored blocks without their cycles check forgotten.
    pub(super) jump_epoch: u64,
    /// What the table keys of the blocks running now have besides the RAM offset:
    /// [`MONITORED`] while the monitor is active, and the CTR key ([`Jit::ctr_pair`]).
    pub(super) kind: u64,
    /// CTR (Smctr chapter 6, "Behavior"): the current mode's recorded transfer types and
    /// of those the ones logged inline (`Hart::ctr_mask << 16 | Hart::ctr_fast_mask`), as
    /// [`Jit::kind`] has them. A block is translated for one such pair and has no test of
    /// either mask: nothing for a type not recorded, the log's record for a type logged
    /// inline, a helper call for the others. Its key has the pair's index in
    /// [`Jit::ctr_pairs`], so blocks of several pairs live side by side (a kernel recording
    /// some tasks and not others). While blocks run the pair cannot change but by one
    /// record through the helper, which may only add types to the inline ones (the first
    /// record after an `xctrctl` write: `Hart::ctr_refresh_fast`), so a block of the old
    /// pair still records right; a CSR write, a trap or a mode change leaves translated
    /// code, and the dispatcher looks up blocks of the new pair.
    pub(super) ctr_pair: u32,
    /// The pairs blocks were translated for since the region was last emptied for want of
    /// a key ([`CTR_KEYS`]); index 0 is recording nothing.
    ctr_pairs: Vec<u32>,
    /// The key of [`Jit::ctr_pair`], shifted into place for [`Jit::kind`].
    pub(super) ctr_kind: u64,
    /// The host profiler's map of translated code (`HartConfig::jit_perf_map`).
    pub(super) perf_map: Option<std::fs::File>,
    /// The region stopped moving when emptied: the perf map names some addresses twice.
    perf_map_reused: bool,
    /// Monitored blocks check their cycles against `MonitorView::cycle_room` (a counter of
    /// cycles came close to wrapping: `Hart::jit_check_at`), and whether they started to
    /// since the monitored blocks were last forgotten (then they are, before the next block
    /// runs: until then blocks without the check may be there).
    cycles_checked: bool,
    cycles_checked_since: bool,
    /// The protected code pages and the blocks' epoch slots.
    pub(crate) guard: super::guard::CodeGuard,
    /// The linked exits: each block's word in the region (`region::Region::word`) heads
    /// the list of the exits linked to it (an index into this, plus 1; 0: none). A block
    /// found stale has them pointed back at their stubs ([`Jit::unlink_stale`]), so that
    /// they link to its new translation at their next use instead of entering the stale
    /// block, and the dispatcher, every time.
    pub(super) links: Vec<Link>,
    /// The assembler and buffers translation reuses, and the last plan's buffers
    /// ([`Jit::recycle`]).
    #[cfg(target_arch = "x86_64")]
    pub(super) scratch: super::x64::Scratch,
    pub(super) plan_insns: Vec<(u64, Insn)>,
    pub(super) plan_check: Vec<(u32, u8, u64)>,
    /// Translated blocks whose table slot another block took, by `(va, off)`: their code is
    /// still in the region, so a lookup that misses finds them here instead of translating
    /// them again ([`Jit::reinstate`]). Two hot blocks that share a slot would otherwise be
    /// translated again each time the other had run (a Linux boot translated 81 300 blocks
    /// for 74 500 addresses, one of them 143 times; 74 800 now). Hashed with `rustc-hash`'s
    /// hasher rather than SipHash, which was most of the map's cost (58 000 reinstated blocks
    /// in a boot's first 300 M instructions): a guest that chose its addresses to collide
    /// would slow only its own translation, as it could by rewriting its code.
    pub(super) evicted: rustc_hash::FxHashMap<(u64, u64), Block>,
}

/// Asks the host for transparent huge pages where `table` covers whole 2 MiB pages, as
/// guest RAM does (`vmm::ram`): the dispatcher's lookups land anywhere in its 14 MiB, and
/// on 4 KiB pages each would also miss the host's TLB (a Linux boot touches nearly every
/// page of it). Advice only: a host without them keeps 4 KiB pages.
fn advise_huge_pages(table: &[Block]) {
    const HUGE: usize = 2 << 20;
    let start = table.as_ptr() as usize;
    let end = start + std::mem::size_of_val(table);
    let (lo, hi) = ((start + HUGE - 1) & !(HUGE - 1), end & !(HUGE - 1));
    if hi > lo {
        // SAFETY: advice on whole pages inside the table's own allocation; it changes how
        // the host backs them, never their contents.
        unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
    }
}

/// An exit linked to a block ([`Jit::links`]).
#[derive(Clone, Copy)]
pub(super) struct Link {
    /// The address of the exit's link slot and of the stub it pointed to before.
    slot: usize,
    stub: u64,
    /// The next exit linked to the same block ([`Jit::links`] index plus 1, or 0).
    next: u64,
}

impl Jit {
    /// A translator for this host, or `None` where there is none (not x86-64, or no
    /// executable memory).
    pub(crate) fn new(
        code_bytes: usize,
        perf_map: bool,
        threshold: u16,
        resident: bool,
    ) -> Option<Box<Jit>> {
        if !cfg!(target_arch = "x86_64") {
            return None;
        }
        let perf_map = perf_map.then(Self::open_perf_map).flatten();
        // SAFETY: `Block` is plain integers, for which all zeros is a valid value.
        let mut table = unsafe { Box::<[Block]>::new_zeroed_slice(SLOTS).assume_init() };
        advise_huge_pages(&table);
        if resident {
            // Written once (`HartConfig::jit_table_resident`): every page gets its memory.
            table.fill(NO_BLOCK);
        }
        Some(Box::new(Jit {
            region: region::Region::new(code_bytes)?,
            table,
            translated: 0,
            stale_exits: 0,
            generation: 0,
            jump_epoch: 1,
            kind: 0,
            perf_map,
            perf_map_reused: false,
            ctr_pair: 0,
            ctr_pairs: vec![0],
            ctr_kind: 0,
            cycles_checked: false,
            cycles_checked_since: false,
            guard: super::guard::CodeGuard::default(),
            links: Vec::new(),
            #[cfg(target_arch = "x86_64")]
            scratch: Default::default(),
            plan_insns: Vec::with_capacity(MAX_INSNS),
            plan_check: Vec::with_capacity(MAX_INSNS),
            evicted: rustc_hash::FxHashMap::default(),
            threshold: threshold.max(1),
        }))
    }

    /// Forget every block: the region is emptied, the table and every link with it. With a
    /// perf map the region moves to new addresses ([`region::Region::renew`]), so that the
    /// map's earlier lines still name the only code that was ever at their addresses.
    pub(super) fn clear(&mut self) {
        if self.perf_map.is_some() && !self.region.renew() && !self.perf_map_reused {
            self.perf_map_reused = true;
            log::warn!(
                "perf map: the translated code no longer moves to new addresses when emptied \
                 (it moves at most {} times, or the host refused a mapping); perf may give \
                 blocks translated from now on the names of older blocks at their addresses",
                region::MAX_RENEWALS
            );
        }
        self.region.clear();
        self.table.fill(NO_BLOCK);
        self.generation += 1;
        self.jump_epoch += 1;
        self.cycles_checked_since = false;
        self.guard.reset_slots();
        self.links.clear();
        self.evicted.clear();
    }

    /// From now on monitored blocks check their cycles (those translated without the check
    /// are forgotten before the next block runs: [`Jit::forget_monitored_unchecked`]).
    pub(crate) fn check_cycle_room(&mut self) {
        if !self.cycles_checked {
            self.cycles_checked = true;
            self.cycles_checked_since = true;
        }
    }

    /// Every monitored block checks its cycles against `MonitorView::cycle_room`.
    pub(crate) fn cycle_room(&self) -> bool {
        self.cycles_checked && !self.cycles_checked_since
    }

    /// Whether blocks translated now check their cycles.
    pub(super) fn cycles_checked(&self) -> bool {
        self.cycles_checked
    }

    /// Forget the monitored blocks translated before their cycles check, if any: their
    /// table entries go, and with them every way into them (monitored blocks link only to
    /// monitored blocks, and a block that is not in the table is entered only through
    /// links). Their code stays in the region, unused, until it is emptied.
    #[inline]
    pub(super) fn forget_monitored_unchecked(&mut self) {
        if self.cycles_checked_since {
            self.forget_monitored();
        }
    }

    #[cold]
    fn forget_monitored(&mut self) {
        self.cycles_checked_since = false;
        self.jump_epoch += 1;
        for b in self.table.iter_mut() {
            if b.off & MONITORED != 0 {
                *b = NO_BLOCK;
            }
        }
        self.evicted.retain(|&(_, key), _| key & MONITORED == 0);
    }

    /// Enter `block` in its table slot; a translated block there before it is kept aside
    /// ([`Jit::evicted`]), and an older one for the same address kept aside is dropped.
    pub(super) fn install(&mut self, block: Block) {
        if !self.evicted.is_empty() {
            self.evicted.remove(&(block.va, block.off));
        }
        let slot = &mut self.table[Self::slot(block.off)];
        let old = std::mem::replace(slot, block);
        if old.code != 0 && (old.va, old.off) != (block.va, block.off) {
            self.evicted.insert((old.va, old.off), old);
        }
    }

    /// A dispatch to the block at `va` (table key `key`) whose slot, `slot`, holds no
    /// translation of it (`hit`: the entry is the block's, without code): whether the
    /// interpreter is to run the block this time, as it does until the dispatch that makes
    /// [`Jit::threshold`] (counted in the entry's `seen`). A block met for the first time
    /// gets an entry with `seen` 1 (another block in the slot is kept aside, as by
    /// [`Jit::install`]); an entry planned earlier (`seen` 0) and a block kept aside are
    /// past counting.
    pub(super) fn cold(&mut self, slot: usize, hit: bool, va: u64, key: u64) -> bool {
        if self.threshold <= 1 {
            return false;
        }
        if hit {
            let b = &mut self.table[slot];
            if b.seen == 0 || b.seen + 1 >= self.threshold {
                return false;
            }
            b.seen += 1;
            return true;
        }
        if !self.evicted.is_empty() && self.evicted.contains_key(&(va, key)) {
            return false;
        }
        self.install(Block {
            va,
            off: key,
            code: 0,
            insns: 0,
            seen: 1,
            cycles: 0,
        });
        true
    }

    /// The translated block for `va` at table key `key` that another block took the slot
    /// of, entered in its slot again.
    pub(super) fn reinstate(&mut self, va: u64, key: u64) -> Option<Block> {
        let b = self.evicted.remove(&(va, key))?;
        self.install(b);
        Some(b)
    }

    /// The block at `code` (for `va` at key `key`) is stale: not to be reinstated.
    pub(super) fn forget_evicted(&mut self, va: u64, key: u64, code: usize) {
        if self.evicted.get(&(va, key)).is_some_and(|b| b.code == code) {
            self.evicted.remove(&(va, key));
        }
    }

    /// Keep a plan's buffers for the next one.
    pub(super) fn recycle(&mut self, plan: Plan) {
        self.plan_insns = plan.insns;
        self.plan_check = plan.check;
    }

    /// Link the exit whose slot is at `slot` (in a live block) to the block at `code`,
    /// remembering the stub the slot pointed to (see [`Jit::links`]).
    pub(super) fn link(&mut self, slot: usize, code: usize) {
        let (Some(stub), Some(next)) = (self.region.read_u64(slot), self.region.word(code)) else {
            return;
        };
        if self.region.patch_u64(slot, code as u64) {
            self.links.push(Link { slot, stub, next });
            self.region.set_word(code, self.links.len() as u64);
        }
    }

    /// The block at `code` is stale (its code bytes changed): no exit may enter it through
    /// a link any more. Each linked exit goes back to its stub, which reports it to the
    /// dispatcher at its next use, to be linked to the block translated for what is there
    /// now.
    pub(super) fn unlink_stale(&mut self, code: usize) {
        self.jump_epoch += 1;
        let mut at = self.region.word(code).unwrap_or(0);
        self.region.set_word(code, 0);
        while let Some(&Link { slot, stub, next }) =
            at.checked_sub(1).and_then(|k| self.links.get(k as usize))
        {
            self.region.patch_u64(slot, stub);
            at = next;
        }
    }

    /// The CTR pair of the blocks to run from now on ([`Jit::ctr_pair`]): [`Jit::kind`]
    /// takes its key, a new one if need be. With every key taken the region is emptied and
    /// the keys with it (only here: a block in the region may have any key but a new one).
    #[cold]
    pub(super) fn set_ctr_pair(&mut self, pair: u32) {
        let index = match self.ctr_pairs.iter().position(|&p| p == pair) {
            Some(i) => i,
            None => {
                if self.ctr_pairs.len() == CTR_KEYS {
                    self.clear();
                    self.ctr_pairs.truncate(1);
                }
                self.ctr_pairs.push(pair);
                self.ctr_pairs.len() - 1
            }
        };
        self.ctr_pair = pair;
        self.ctr_kind = (index as u64) << CTR_KEY_SHIFT;
    }

    /// `/tmp/perf-PID.map`, the file `perf report` reads symbols for anonymous executable
    /// memory from (one `START SIZE NAME` line per symbol, hexadecimal), opened for
    /// appending: every hart of the process adds its blocks. A failure is logged and the map
    /// left out.
    pub(super) fn open_perf_map() -> Option<std::fs::File> {
        let path = format!("/tmp/perf-{}.map", std::process::id());
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            Ok(f) => Some(f),
            Err(e) => {
                log::warn!("cannot write the perf map {path}: {e}; translated code stays unnamed");
                None
            }
        }
    }

    /// Name the block at host address `code` (`len` bytes) for guest pc `pc`: one line,
    /// written whole (`O_APPEND`), so harts writing at once never interleave.
    pub(super) fn name_block(&mut self, code: usize, len: usize, pc: u64) {
        use std::io::Write;
        if let Some(f) = self.perf_map.as_mut() {
            let kind = if self.kind & MONITORED != 0 {
                " monitored"
            } else {
                ""
            };
            let line = format!("{code:x} {len:x} guest {pc:#x}{kind}\n");
            if let Err(e) = f.write_all(line.as_bytes()) {
                log::warn!("perf map: {e}; no more blocks are named");
                self.perf_map = None;
            }
        }
    }

    /// The table slot of a block key (RAM offset, with [`MONITORED`] for a monitored
    /// block, and its CTR key): one of [`TABLE`] slots by the offset's halfwords, from
    /// where the key's kind starts ([`Jit::kind_slots`]), so that a guest whose monitor goes
    /// on and off (a profiled task switched in and out), or that records in some tasks and
    /// not others, keeps the blocks of both kinds. Blocks of a kind a multiple of 512 KiB
    /// apart share a slot ([`Jit::evicted`]). (Folding the offset's higher bits in cost
    /// more than it saved: +0.8% host instructions over a Linux boot's first 300 M guest
    /// instructions.)
    #[inline(always)]
    pub(super) fn slot(key: u64) -> usize {
        ((key >> 1) as usize & (TABLE - 1)) + Self::kind_slots(key)
    }

    /// Where the slots of a key's kind start: half a table on for a monitored block, and
    /// [`CTR_SLOT_STEP`] on for each CTR key. An addition, so that translated code adds it
    /// to the table's address, a constant of the block (`x64::jump_indirect`).
    #[inline(always)]
    pub(super) fn kind_slots(key: u64) -> usize {
        let monitored = ((key >> 62) as usize & 1) * (TABLE / 2);
        let ctr = ((key >> CTR_KEY_SHIFT) as usize & (CTR_KEYS - 1)) * CTR_SLOT_STEP;
        monitored + ctr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(va: u64, off: u64, code: usize) -> Block {
        Block {
            va,
            off,
            code,
            insns: 1,
            seen: 0,
            cycles: 1,
        }
    }

    /// Offsets 512 KiB apart (the table's span of halfword indexes) share a slot;
    /// monitored blocks use slots half a table on, and each CTR key its own start; the
    /// furthest slot of the furthest kind is still in the table.
    #[test]
    fn slots_by_halfword_from_where_each_kind_starts() {
        let span = 2 * TABLE as u64;
        assert_eq!(Jit::slot(0x1000), 0x800);
        assert_eq!(Jit::slot(0x1000), Jit::slot(0x1000 + 3 * span));
        assert_ne!(Jit::slot(0x1000), Jit::slot(0x1002));
        assert_eq!(
            Jit::slot(0x1000 | MONITORED),
            Jit::slot(0x1000) + TABLE / 2,
            "monitored blocks: half a table on"
        );
        let keyed = |k: u64| 0x1000 | k << CTR_KEY_SHIFT;
        let slots: std::collections::HashSet<usize> =
            (0..CTR_KEYS as u64).map(|k| Jit::slot(keyed(k))).collect();
        assert_eq!(
            slots.len(),
            CTR_KEYS,
            "a CTR key's blocks in another's slots"
        );
        for k in 0..CTR_KEYS as u64 {
            assert_eq!(
                Jit::slot(keyed(k) | MONITORED),
                Jit::slot(keyed(k)) + TABLE / 2
            );
        }
        let last = (span - 2) | MONITORED | ((CTR_KEYS as u64 - 1) << CTR_KEY_SHIFT);
        assert_eq!(Jit::slot(last), SLOTS - 1);
    }

    /// A block whose slot another takes is kept aside and comes back on its next lookup,
    /// taking the slot back; a stale one does not come back.
    #[test]
    fn evicted_blocks_are_reinstated_unless_stale() {
        let Some(mut jit) = Jit::new(1 << 20, false, 1, false) else {
            panic!("no translator on this host");
        };
        let (a, b) = (0x1000, 0x1000 + 2 * TABLE as u64);
        assert_eq!(Jit::slot(a), Jit::slot(b));
        jit.install(block(0x8000_1000, a, 0x100));
        jit.install(block(0x8000_2000, b, 0x200));
        assert_eq!(jit.table[Jit::slot(a)].code, 0x200);
        assert!(
            jit.reinstate(0x8000_1000, b).is_none(),
            "key and va must match"
        );
        let back = jit.reinstate(0x8000_1000, a).expect("kept aside");
        assert_eq!(back.code, 0x100);
        assert_eq!(jit.table[Jit::slot(a)].code, 0x100);
        assert!(
            jit.reinstate(0x8000_1000, a).is_none(),
            "in its slot, not aside"
        );
        // b is aside now; found stale there, it is dropped.
        jit.forget_evicted(0x8000_2000, b, 0x999);
        assert!(
            jit.evicted.contains_key(&(0x8000_2000, b)),
            "another block's code"
        );
        jit.forget_evicted(0x8000_2000, b, 0x200);
        assert!(jit.reinstate(0x8000_2000, b).is_none());
        // Planned blocks without code are not kept; emptying the region drops the rest.
        jit.install(block(0x8000_2000, b, 0));
        jit.install(block(0x8000_1000, a, 0x100));
        assert!(jit.evicted.is_empty());
        jit.install(block(0x8000_2000, b, 0x300));
        jit.clear();
        assert!(jit.reinstate(0x8000_1000, a).is_none());
    }

    /// When monitored blocks start to check their cycles, those translated before (in
    /// their slots or kept aside) are forgotten, once; the other blocks stay.
    #[test]
    fn monitored_blocks_without_the_cycles_check_are_forgotten_once() {
        let Some(mut jit) = Jit::new(1 << 20, false, 1, false) else {
            panic!("no translator on this host");
        };
        let (a, b) = (0x1000, 0x1000 + 2 * TABLE as u64);
        let m = |k: u64| k | MONITORED;
        jit.install(block(0x8000_1000, a, 0x100));
        jit.install(block(0x8000_1000, m(a), 0x200));
        jit.install(block(0x8000_2000, m(b), 0x300));
        // An unmonitored block in the slots of the monitored ones half a table on.
        let c = a ^ TABLE as u64;
        assert_eq!(Jit::slot(c), Jit::slot(m(a)));
        jit.install(block(0x8000_3000, c, 0x400));
        assert!(jit.evicted.contains_key(&(0x8000_2000, m(b))));
        assert!(!jit.cycle_room() && !jit.cycles_checked());
        jit.forget_monitored_unchecked();
        assert_eq!(
            jit.table[Jit::slot(m(b))].code,
            0x400,
            "nothing to forget yet"
        );
        jit.check_cycle_room();
        assert!(jit.cycles_checked(), "blocks translated now check");
        assert!(!jit.cycle_room(), "older monitored blocks are still there");
        jit.forget_monitored_unchecked();
        assert!(jit.cycle_room());
        assert_eq!(jit.table[Jit::slot(a)].code, 0x100);
        assert_eq!(jit.table[Jit::slot(c)].code, 0x400);
        assert!(jit.reinstate(0x8000_1000, m(a)).is_none());
        assert!(jit.reinstate(0x8000_2000, m(b)).is_none());
        // Monitored blocks translated from now on stay; a second start changes nothing.
        jit.install(block(0x8000_2000, m(b), 0x500));
        jit.check_cycle_room();
        jit.forget_monitored_unchecked();
        assert_eq!(jit.table[Jit::slot(m(b))].code, 0x500);
        assert!(jit.cycle_room());
    }
}
