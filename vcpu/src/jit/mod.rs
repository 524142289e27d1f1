//! Block translation: straight-line runs of guest instructions compiled to host code, for
//! the loop variant with nothing to observe per instruction (no tracing, no CTR recording,
//! no active performance monitor).
//!
//! A block starts at a guest pc, lies within one page, and ends at the first jump or branch
//! (included) but a forward conditional branch, which leaves it only when taken (a *side
//! exit*: `x64::side_exit`; in blocks that are not monitored and where CTR does not record
//! branches not taken), at the first CSR write other than one of `sstatus` in a block that is not
//! monitored (`x64::csr_ends_block`), SC or AMO (included: see `x64::emit_csr`), at the
//! first instruction the code generator leaves to the interpreter (excluded: system
//! instructions other than CSR accesses),
//! at the page end, or after [`MAX_INSNS`]. Blocks are found through a direct-mapped table
//! keyed by the pc *and* the RAM offset it translates to (so another address space's code
//! at the same pc never matches), and every block starts by comparing its code bytes in guest RAM
//! with the ones it was translated from: a store to code (by any hart or the VMM) is seen at
//! the next block entry, with no invalidation protocol and independent of FENCE.I, exactly
//! as the interpreter's decode cache behaves. A block's own store into its later
//! instructions ends the block after the store, so that the next instruction is fetched
//! anew there too.
//!
//! A block is translated at the `HartConfig::jit_threshold`-th dispatch to its address
//! ([`table::Jit::cold`]); before that the interpreter runs it, and goes on without a
//! dispatch while the pc moves on to the next instruction in the same page (`Hart::jit_step`),
//! so that code that runs once or twice costs no translation.
//!
//! Blocks run only while a whole block fits in the remaining instruction budget of the
//! chunk, so interrupts, timer deadlines and budgets land on the same instruction as in the
//! interpreter. A block counts its instructions as retired and clocked like the interpreter
//! does, one slot each.

// On other hosts the translator compiles (so that the hart's code is the same everywhere)
// but `Jit::new` returns `None`: the hart interprets, and the x86-64 parts are left out.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused_imports, unused_mut, unused_variables)
)]

#[cfg(target_arch = "x86_64")]
mod emit;
mod guard;
pub(crate) mod jumps;
mod region;
pub(crate) mod table;
#[cfg(target_arch = "x86_64")]
mod x64;

use crate::decode;
use crate::hart::Hart;
use table::{Block, Layout, Plan, NO_BLOCK};
pub(crate) use table::{Jit, MonitorView, MAX_BLOCK_BYTES, MAX_INSNS, MONITORED, NO_PAGE, TABLE};

/// `Hart::jit_cold` outside a block not translated yet.
pub(crate) const NOT_COLD: u64 = u64::MAX;

// The way into translated code: `vcpu_jit_enter(hart, code, ram)` keeps rbx, rbp and
// r12-r15 (callee-saved; blocks cache guest registers in r14 and r15: `emit`), loads rbp
// with the code epoch (`Hart::jit_code_epoch`, at [`JIT_CODE_EPOCH`], which each block
// compares its epoch slot with at entry: `guard`; helper calls load it again), rbx with
// `ram` (the host address of guest RAM, which every block's loads and stores add to a RAM
// offset: `x64::emit_memory`), r12 with the budget
// (`Hart::jit_budget`, at [`JIT_BUDGET`] in the hart, which blocks count down in r12: no
// memory round trip from one block to the next) and r13 with the CTR log's pointer
// (`ctr::log::CtrLog::at`, at [`CTR_LOG_AT`], which blocks move on in r13), calls the
// block at `code` with the hart in rdi and rsp = 8 mod 16 as at any function entry (six
// pushes and 8 bytes), stores r12 and r13 back in the hart (blocks leave rdi as they found it) and
// returns the block's value.
#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".globl vcpu_jit_enter",
    ".p2align 4",
    "vcpu_jit_enter:",
    "push rbx",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "push rbp",
    "sub rsp, 8",
    "mov rbx, rdx",
    "mov rbp, [rdi + {epoch}]",
    "mov r12, [rdi + {budget}]",
    "mov r13, [rdi + {at}]",
    "call rsi",
    "mov [rdi + {budget}], r12",
    "mov [rdi + {at}], r13",
    "add rsp, 8",
    "pop rbp",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "ret",
    budget = const JIT_BUDGET,
    at = const CTR_LOG_AT,
    epoch = const JIT_CODE_EPOCH,
);

#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" {
    /// See the `global_asm!` above.
    fn vcpu_jit_enter(hart: *mut std::ffi::c_void, code: usize, ram: usize) -> u64;
}

/// Never called: no block is translated on other hosts.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn vcpu_jit_enter(_hart: *mut std::ffi::c_void, _code: usize, _ram: usize) -> u64 {
    unreachable!("no translated code on this host")
}

/// Displacement from the hart of the CTR log's pointer (`ctr::log::CtrLog::at`), which
/// blocks hold in r13 and store there before calling a helper that may drain the log
/// (`jit_ctr`, `jit_csr`, `jit_csr_monitored`: `x64::call_draining`).
pub(super) const CTR_LOG_AT: i32 = (std::mem::offset_of!(Hart, ctr_log)
    + std::mem::offset_of!(crate::ctr::log::CtrLog, at)) as i32;

/// Displacement from the hart of `Hart::jit_budget`, which blocks hold in r12.
const JIT_BUDGET: i32 = std::mem::offset_of!(Hart, jit_budget) as i32;

/// Displacement from the hart of `Hart::jit_code_epoch`, which blocks hold in rbp (loaded
/// again after every helper call, which may move it: `x64::call`).
pub(super) const JIT_CODE_EPOCH: i32 = std::mem::offset_of!(Hart, jit_code_epoch) as i32;

/// The most cycles of the cost model a monitored block of `insns` can add when it runs
/// whole (`Block::cycles`): its page's fetch and each instruction's most
/// (`pmu::model::Cost::most`), and for a CSR instruction the fetch that `jit_csr_monitored`
/// reports again after a write (which may have flushed the ITLB model).
pub(super) fn most_cycles(insns: &[(u64, crate::decode::Insn)]) -> u32 {
    use crate::decode::Op::*;
    use crate::pmu::{events::CLASS, model::Cost};
    let most: u64 = insns
        .iter()
        .map(|(_, i)| {
            let refetch = matches!(i.op, Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci);
            Cost::most(CLASS[i.op as usize]) + refetch as u64 * Cost::ITLB_MISS
        })
        .sum();
    (Cost::ITLB_MISS + most) as u32
}

/// The slow path of a translated load: the interpreter's, through a page walk. On a fault
/// or a device access it sets `Hart::jit_fault` (the block then leaves before the load, and
/// the interpreter executes it again, taking the trap or making the exit).
///
/// # Safety
/// `hart` is the hart running the block (the dispatcher holds it mutably for the call).
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" fn jit_load(hart: *mut Hart, va: u64, size: u64) -> u64 {
    // SAFETY: see above; no other reference to the hart is used during the call.
    let h = unsafe { &mut *hart };
    match h.load_slow(va, size as u32) {
        Ok(v) => v,
        Err(_) => {
            h.jit_fault = true;
            0
        }
    }
}

/// The slow path of a translated store (see [`jit_load`]); nothing is written on a fault.
///
/// # Safety
/// As for [`jit_load`].
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" fn jit_store(hart: *mut Hart, va: u64, val: u64, size: u64) {
    // SAFETY: as for `jit_load`.
    let h = unsafe { &mut *hart };
    if h.store_slow(va, size as u32, val).is_err() {
        h.jit_fault = true;
    }
}

/// A block whose epoch slot was behind the hart's code epoch found its code bytes intact
/// (`guard`) but its RAM page unprotected: the page is protected again and the slot at
/// `slot` takes the epoch; returns 0. Returns 1 when the page has turned mixed since the
/// block was translated: it cannot be protected, and the block leaves as stale (to be
/// translated again as a block that compares its bytes at every entry).
///
/// # Safety
/// As for [`jit_load`]; `slot` is the block's epoch slot (`guard::CodeGuard::slot`).
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" fn jit_code_checked(hart: *mut Hart, slot: u64, page: u64) -> u64 {
    // SAFETY: as for `jit_load`.
    let h = unsafe { &mut *hart };
    if h.jit.as_deref().is_some_and(|j| j.guard.mixed(page)) {
        return 1;
    }
    h.jit_protect(page);
    // SAFETY: slots live as long as the blocks holding them (until the region is emptied,
    // which no block run overlaps).
    unsafe { *(slot as *mut u64) = h.jit_code_epoch };
    0
}

/// An F or D instruction other than a load or store, packed by `x64::pack` into `lo` and
/// `hi`: executed by the interpreter's code (`Hart::exec_float`: `mstatus.FS`, the rounding
/// mode, NaN boxing, `fflags`), or for common double-precision arithmetic by the host's
/// where that gives the same result and flags (`Hart::exec_float_host`). Returns 1 when it raises an exception (FS off, a reserved
/// rounding mode), with nothing changed: the block then leaves before the instruction and
/// the interpreter executes it again, taking the trap.
///
/// # Safety
/// As for [`jit_load`].
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" fn jit_float(hart: *mut Hart, lo: u64, hi: u64) -> u64 {
    // SAFETY: as for `jit_load`.
    let h = unsafe { &mut *hart };
    let i = x64::unpack(lo, hi);
    if h.exec_float_host(&i) {
        return 0;
    }
    h.exec_float(&i).is_err() as u64
}

/// A PAUSE, `undone` instructions before the end of the block (itself included), on a hart
/// with `HartConfig::pause_yields`: the interpreter's pause-loop detection
/// (`Hart::pause_loop`, which may give the host CPU away) at the clock the interpreter has
/// at it. PAUSE is otherwise a no-op, so the block goes on: a vCPU spinning on a lock no
/// longer leaves translated code at every PAUSE (a 2-vCPU Linux boot runs about 2 million).
///
/// # Safety
/// As for [`jit_load`].
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" fn jit_pause(hart: *mut Hart, undone: u64) {
    // SAFETY: as for `jit_load`.
    let h = unsafe { &mut *hart };
    let before = h.jit_clock - h.vclock - h.jit_budget - undone;
    h.vclock += before;
    h.pause_loop();
    h.vclock -= before;
}

/// A CSR instruction, packed by `x64::pack` into `lo` and `hi`, `undone` instructions before
/// the end of the block (itself included): executed by the interpreter's code
/// (`Hart::exec_csr`), with the clock and the retired count of that instruction, as the
/// interpreter has them while it executes it (counters read exactly). Returns 1 when it
/// raises an exception, with nothing changed (the block leaves before it and the
/// interpreter takes the trap). A write ends the block after it and the chunk as well
/// (`Hart::jit_break`), as `Ctl::Break` does in the interpreter.
///
/// # Safety
/// As for [`jit_load`].
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" fn jit_csr(hart: *mut Hart, lo: u64, hi: u64, undone: u64) -> u64 {
    // SAFETY: as for `jit_load`.
    let h = unsafe { &mut *hart };
    let i = x64::unpack(lo, hi);
    csr_in_block(h, &i, undone, |_, _| {})
}

/// Executes the CSR instruction `i` of a block, `undone` instructions before its end, with
/// the clock and retired count the interpreter has at it; `report` runs right after, with
/// the same counts. What [`jit_csr`] returns.
#[cfg(target_arch = "x86_64")]
fn csr_in_block(
    h: &mut Hart,
    i: &decode::Insn,
    undone: u64,
    report: impl FnOnce(&mut Hart, &Result<(), crate::hart::Ctl>),
) -> u64 {
    // The CSR may be CTR's (or read or change what it records): the log first.
    h.ctr_drain();
    let before = h.jit_clock - h.vclock - h.jit_budget - undone;
    h.vclock += before + 1;
    h.retired += before;
    let r = h.exec_csr(i);
    report(h, &r);
    h.vclock -= before + 1;
    h.retired -= before;
    match r {
        Ok(()) => 0,
        Err(crate::hart::Ctl::Break) => {
            h.jit_break = true;
            0
        }
        Err(_) => 1,
    }
}

/// [`jit_csr`] in a monitored block: the monitor hears of the instruction as the
/// interpreter's monitoring variant reports it. A write (which may change the translation
/// tags, flush the models or switch PDIS on) is reported through `Hart::pmu_events` when the
/// chunk runs the variant that reports every instruction (`PMU_FULL`: its fetch, with the
/// tag as the write left it); a read reports nothing beyond the block's own fetch report.
/// The block stored the instruction's pc in `Hart::pc` (an overflow found by a counter
/// write is attributed to it).
///
/// # Safety
/// As for [`jit_load`].
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" fn jit_csr_monitored(hart: *mut Hart, lo: u64, hi: u64, undone: u64) -> u64 {
    // SAFETY: as for `jit_load`.
    let h = unsafe { &mut *hart };
    let i = x64::unpack(lo, hi);
    let full = h.pmu_variant() == crate::pmu::PMU_FULL;
    let (pc, addr) = (
        h.pc,
        h.x[i.rs1 as usize & 63].wrapping_add(i.imm as i64 as u64),
    );
    csr_in_block(h, &i, undone, |h, r| {
        if full && matches!(r, Err(crate::hart::Ctl::Break)) {
            h.retired += 1;
            h.pmu_events(&i, pc, addr);
            h.retired -= 1;
        }
    })
}

/// [`jit_atomic`] in a monitored block: once it completes, the monitor's events, as the
/// interpreter reports them (LR a load, SC a store whether or not it succeeds, an AMO a
/// load and a store: `Hart::pmu_amo`), at the address in rs1 before the instruction.
///
/// # Safety
/// As for [`jit_load`].
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" fn jit_atomic_monitored(hart: *mut Hart, lo: u64, hi: u64) -> u64 {
    // SAFETY: as for `jit_load`.
    let h = unsafe { &mut *hart };
    let i = x64::unpack(lo, hi);
    let addr = h.x[i.rs1 as usize & 63];
    if h.exec_atomic(&i).is_err() {
        return 1;
    }
    match i.op {
        crate::decode::Op::Lr => h.pmu_load(addr),
        crate::decode::Op::Sc => h.pmu_store(addr),
        _ => h.pmu_amo(addr),
    };
    0
}

/// LR, SC or an AMO, packed by `x64::pack` into `lo` and `hi`: executed by the interpreter's
/// code (`Hart::exec_atomic`: the same reservation, compare-and-swap and read-modify-write
/// on guest RAM, so harts interact exactly as when interpreting). Returns 1 when it raises
/// an exception or meets a device, with nothing changed (the block leaves before it).
///
/// # Safety
/// As for [`jit_load`].
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" fn jit_atomic(hart: *mut Hart, lo: u64, hi: u64) -> u64 {
    // SAFETY: as for `jit_load`.
    let h = unsafe { &mut *hart };
    let i = x64::unpack(lo, hi);
    h.exec_atomic(&i).is_err() as u64
}

/// CTR: the block's closing jump or branch of type `t` from `from` qualifies for recording
/// (the block checked `Hart::ctr_mask`) and `Hart::pc` holds its target: record it as the
/// interpreter does, at the clock of that instruction.
///
/// # Safety
/// As for [`jit_load`].
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" fn jit_ctr(hart: *mut Hart, from: u64, t: u64) {
    // SAFETY: as for `jit_load`.
    let h = unsafe { &mut *hart };
    h.ctr_drain();
    let clock = h.vclock;
    h.vclock = h.jit_clock - h.jit_budget;
    h.ctr_transfer(from, t as u8);
    // The first record after an `xctrctl` write or SCTRCLR came here: the next can be inline.
    h.ctr_refresh_fast();
    h.vclock = clock;
}

impl Hart {
    /// Whether the RAM page at offset `page_off` holds translated code (`guard`).
    #[inline]
    pub(crate) fn jit_guards(&self, page_off: u64) -> bool {
        self.jit
            .as_deref()
            .is_some_and(|j| j.guard.protected(page_off >> 12))
    }

    /// Protect RAM page `page`, which holds translated code (`guard`; a block lies in one
    /// page): the store TLB drops its entries for it.
    pub(crate) fn jit_protect(&mut self, page: u64) {
        let Some(jit) = self.jit.as_deref_mut() else {
            return;
        };
        if jit.guard.protect(page) {
            self.tlb.drop_store_page(page << 12);
        }
    }

    /// This hart wrote `len` bytes of RAM at offset `off` (not through the store TLB): a
    /// protected page among them is unprotected, and the code epoch moves on, so that every
    /// block checks its code at its next entry (`guard`).
    #[inline]
    pub(crate) fn jit_code_write(&mut self, off: u64, len: u64) {
        let Some(jit) = self.jit.as_deref_mut() else {
            return;
        };
        let (first, last) = (off >> 12, (off + len.max(1) - 1) >> 12);
        let mut hit = jit.guard.unprotect(first);
        if last != first {
            hit |= jit.guard.unprotect(last);
        }
        if hit {
            self.jit_code_epoch += 1;
        }
    }

    /// Blocks must check their code at their next entry: something this hart's store TLB
    /// did not see may have written it (FENCE.I, a remote fence, the VMM between runs).
    #[inline]
    pub(crate) fn jit_code_sync(&mut self) {
        self.jit_code_epoch += 1;
    }

    /// Run the block at pc (and the blocks linked to it) within `left` instructions; returns
    /// the instructions completed (0: nothing ran, the interpreter executes the next one).
    /// A block longer than `left` does not run (`Hart::jit_short` says how long it is).
    #[inline(always)]
    pub(crate) fn jit_step(&mut self, left: u64, monitored: bool) -> u64 {
        if self.jit.is_none() {
            return 0; // `--jit off`: the interpreter pays one test per instruction
        }
        let pc = self.pc;
        // In a block not translated yet (`Jit::cold`), the interpreter goes on while the pc
        // moves on to the next instruction in the same page: the block, and the blocks after
        // branches not taken, run without a dispatch (not counted: only dispatches at
        // other addresses count, those that reach a block by a jump or a taken branch). So
        // it does to the end of a block too long for the chunk (`Hart::jit_short_of`).
        if self.jit_cold != NOT_COLD {
            let step = pc.wrapping_sub(self.jit_cold);
            if (step == 2 || step == 4)
                && (pc ^ self.jit_cold) >> 12 == 0
                && self.jit_cold_left != 0
            {
                self.jit_cold = pc;
                self.jit_cold_left -= 1;
                return 0;
            }
            self.jit_cold = NOT_COLD;
        }
        let off = match self.tlb.lookup_fetch_page(pc) {
            Some(off) => off,
            None => match self.tlb.lookup_fetch(pc) {
                Some(off) => off,
                None => return 0,
            },
        };
        let Some(jit) = self.jit.as_deref_mut() else {
            return 0;
        };
        // CTR: blocks of the current mode's recording (`Jit::ctr_pair`).
        let pair = u32::from(self.ctr_mask) << 16 | u32::from(self.ctr_fast_mask);
        if pair != jit.ctr_pair {
            jit.set_ctr_pair(pair);
        }
        let kind = if monitored { MONITORED } else { 0 } | jit.ctr_kind;
        if kind != jit.kind {
            jit.kind = kind;
            jit.jump_epoch += 1;
        }
        jit.forget_monitored_unchecked();
        let checks = monitored && jit.cycle_room();
        let key = off | jit.kind;
        let slot = Jit::slot(key);
        let b = jit.table[slot];
        let hit = b.va == pc && b.off == key;
        // Not translated yet (`Jit::cold`): the interpreter runs the block this time.
        if (b.code == 0 || !hit) && jit.cold(slot, hit, pc, key) {
            self.jit_cold = pc;
            self.jit_cold_left = u64::MAX;
            return 0;
        }
        // Where monitored blocks check their cycles (`Jit::cycle_room`), the next one must
        // fit in the room left; otherwise the interpreter goes on, one instruction at a
        // time, with the whole overflow countdown (`Hart::jit_check_at`).
        let room = if checks {
            self.pmu_cycle_room()
        } else {
            u64::MAX
        };
        // A hit on a block planned earlier that did not fit then (no code, `insns` > 0,
        // its most cycles): translated once it fits, until then left to the interpreter
        // without a new plan.
        if hit && b.code == 0 && (u64::from(b.insns) > left || u64::from(b.cycles) > room) {
            if u64::from(b.insns) > left {
                self.jit_short_of(pc, b.insns);
            }
            return 0;
        }
        let b = if hit && (b.code != 0 || (b.insns == 0 && b.seen == 0)) {
            b
        } else {
            self.jit_translate(pc, off, left, room)
        };
        if b.code == 0 {
            return 0;
        }
        if u64::from(b.insns) > left {
            self.jit_short_of(pc, b.insns);
            return 0;
        }
        if monitored {
            if u64::from(b.cycles) > room {
                return 0;
            }
            self.jit_view.cycle_room = room;
            self.jit_view.fetch_page = self.pmu_fetch_page();
        }
        // Code placed since the last run is fetched anew (`region`: cross-modifying code).
        // The jump cache's entries hold while both epochs stay as they are (`jumps`).
        if let Some(jit) = self.jit.as_deref_mut() {
            jit.region.sync_fetch();
            self.jit_jumps
                .set_key(self.tlb.fetch_epoch(), jit.jump_epoch);
        }
        self.jit_budget = left;
        self.jit_clock = self.vclock + left;
        self.jit_fault = false;
        let ram = self.ram.host_addr(0);
        let hart = self as *mut Hart;
        // SAFETY: `code` is a block assembled for this hart's layout by `jit_translate`, in a
        // region the hart owns; it and the blocks linked to it touch only the hart's
        // registers, pc, budget and TLB, and guest RAM (from `ram`, its host address) at
        // offsets the TLB vouches for.
        let stale = unsafe { vcpu_jit_enter(hart as *mut _, b.code, ram) };
        let done = left - self.jit_budget;
        self.ctr_drain();
        if stale != 0 || self.jit_last_exit != 0 {
            self.jit_after(stale as usize);
        }
        done
    }

    /// The block of `insns` instructions at `pc` does not fit in what is left of the chunk
    /// (`Hart::jit_short` says how long it is): the interpreter runs it, and goes on to its
    /// later instructions without a dispatch while the pc moves on to the next instruction,
    /// as in a block not translated yet (`Hart::jit_cold`), also into the next run, up to
    /// the block's end. Dispatches there would count towards translating a block at each of
    /// the block's later instructions where budgets end (a Linux boot on virtual time:
    /// 45 768 blocks translated before, 45 131 now; most of the rest that start inside
    /// another block start where an interrupt's handler returned to).
    #[inline]
    fn jit_short_of(&mut self, pc: u64, insns: u16) {
        self.jit_short = insns.into();
        self.jit_cold = pc;
        self.jit_cold_left = u64::from(insns).saturating_sub(1);
    }

    /// After a block run that ended in a stale block (its code bytes changed: forget it and
    /// unlink the exits linked to it) or in an exit not yet linked (link it to the block at
    /// pc, which is in the exit's page).
    #[cold]
    #[inline(never)]
    fn jit_after(&mut self, stale: usize) {
        let slot_addr = std::mem::take(&mut self.jit_last_exit) as usize;
        let pc = self.pc;
        if stale != 0 {
            if let Some(jit) = self.jit.as_deref_mut() {
                jit.stale_exits += 1;
                jit.unlink_stale(stale);
            }
        }
        let Some(off) = self.tlb.lookup_fetch(pc) else {
            return;
        };
        let Some(jit) = self.jit.as_deref_mut() else {
            return;
        };
        let key = off | jit.kind;
        let slot = Jit::slot(key);
        if stale != 0 {
            if jit.table[slot].code == stale {
                jit.table[slot] = NO_BLOCK;
            }
            jit.forget_evicted(pc, key, stale);
            return;
        }
        let generation = jit.generation;
        let b = jit.table[slot];
        // A block that did not fit earlier (no code, `insns` > 0) is translated now.
        let b = if b.va == pc && b.off == key && (b.code != 0 || (b.insns == 0 && b.seen == 0)) {
            b
        } else {
            self.jit_translate(pc, off, u64::MAX, u64::MAX)
        };
        let Some(jit) = self.jit.as_deref_mut() else {
            return;
        };
        if b.code != 0 && jit.generation == generation {
            // The slot is the 8-byte jump target of a live block's exit (same generation),
            // and no block is running; it is written through the region's write view.
            jit.link(slot_addr, b.code);
        }
    }

    /// Translate the block at `pc` (RAM offset `off`, in the fetch page) and enter it in the
    /// table.
    ///
    /// A block longer than `left` is not translated (`Hart::jit_short`), nor a monitored
    /// one whose most cycles (`Block::cycles`) exceed `room` (`MonitorView::cycle_room`):
    /// near the end of a chunk or an overflow of a counter of cycles the interpreter runs
    /// the rest, and translating the tails of blocks one instruction shorter each time
    /// would be wasted.
    #[cold]
    #[inline(never)]
    fn jit_translate(&mut self, pc: u64, off: u64, left: u64, room: u64) -> Block {
        // A block that another took the table slot of is still there: back in its slot.
        if let Some(b) = self
            .jit
            .as_deref_mut()
            .and_then(|j| j.reinstate(pc, off | j.kind))
        {
            return b;
        }
        let mut plan = self.jit_plan(pc, off);
        let block = self.jit_translate_plan(&mut plan, pc, off, left, room);
        if let Some(jit) = self.jit.as_deref_mut() {
            jit.recycle(plan);
        }
        block
    }

    /// [`Hart::jit_translate`] once the block is planned.
    fn jit_translate_plan(
        &mut self,
        plan: &mut Plan,
        pc: u64,
        off: u64,
        left: u64,
        room: u64,
    ) -> Block {
        let kind = self.jit.as_deref().map_or(0, |j| j.kind);
        if plan.monitored {
            plan.cycles = most_cycles(&plan.insns);
        }
        let mut block = Block {
            va: pc,
            off: off | kind,
            code: 0,
            insns: plan.insns.len() as u16,
            seen: 0,
            cycles: plan.cycles,
        };
        let long = plan.insns.len() as u64 > left;
        if long || u64::from(plan.cycles) > room {
            // Remembered (no code, its length and cycles), so that the dispatches that meet
            // it again near the end of every chunk, or near an overflow of a counter of
            // cycles, do not plan it again (`Block`), nor translate the tails of blocks.
            if long {
                self.jit_short = plan.insns.len() as u64;
            }
            if let Some(jit) = self.jit.as_deref_mut() {
                jit.install(block);
            }
            return NO_BLOCK;
        }
        #[cfg(target_arch = "x86_64")]
        if !plan.insns.is_empty() {
            let ram = self.ram.size;
            if let Some(jit) = self.jit.as_deref_mut() {
                jit.guard.reserve(ram);
            }
            let layout = self.jit_layout();
            if layout.ctr_fast_now != 0 {
                self.ctr_log.ensure();
            }
            let jit = self.jit.as_deref_mut().expect("translating without a JIT");
            // Room for the block and a page of epoch slots (`guard`), which comes first.
            if jit.region.next(MAX_BLOCK_BYTES + 2 * 4096).is_none() {
                jit.clear();
            }
            // The code was read just now: intact at the current epoch (`guard`). A block
            // on a mixed page has no slot: it compares its bytes at every entry.
            let slot = if jit.guard.mixed(off >> 12) {
                None
            } else {
                jit.guard.slot(self.jit_code_epoch, &mut jit.region)
            };
            plan.epoch_slot = slot.map_or(0, |s| s.write);
            plan.epoch_slot_exec = slot.map_or(0, |s| s.exec);
            let at = jit
                .region
                .next(MAX_BLOCK_BYTES)
                .expect("empty JIT region too small");
            if let Some(x64::Assembled { code, ctr_sites }) =
                x64::assemble(&mut jit.scratch, at, plan, &layout)
            {
                for &(at, source, info) in ctr_sites {
                    let site = self.ctr_log.site(source, info);
                    code[at..at + 4].copy_from_slice(&site.to_le_bytes());
                }
                let len = code.len();
                if len <= MAX_BLOCK_BYTES {
                    block.code = jit.region.push(code);
                    jit.translated += 1;
                    jit.name_block(block.code, len, pc);
                }
            }
            if block.code != 0 {
                let bytes = plan.end_pc.wrapping_sub(plan.insns[0].0);
                debug_assert_eq!(off >> 12, (off + bytes - 1) >> 12, "a block in two pages");
                self.jit_protect(off >> 12);
            }
        }
        if block.code == 0 {
            block.insns = 0;
        }
        if let Some(jit) = self.jit.as_deref_mut() {
            jit.install(block);
        }
        block
    }

    /// Decode the run of translatable instructions at `pc`.
    fn jit_plan(&mut self, pc: u64, off: u64) -> Plan {
        let page_end = (off | 0xfff) + 1;
        // The buffers of the last plan (`Jit::recycle`).
        let (mut insns, mut check) = self
            .jit
            .as_deref_mut()
            .map(|j| {
                (
                    std::mem::take(&mut j.plan_insns),
                    std::mem::take(&mut j.plan_check),
                )
            })
            .unwrap_or_default();
        insns.clear();
        check.clear();
        let (mut va, mut o) = (pc, off);
        let monitored = self.jit.as_deref().is_some_and(|j| j.kind & MONITORED != 0);
        // A forward conditional branch leaves the block only when taken (`x64::side_exit`),
        // but in a monitored block (whose branches report to the predictor model) and where
        // CTR records not-taken branches.
        let side_exits = !monitored
            && self
                .jit
                .as_deref()
                .is_some_and(|j| (j.ctr_pair >> 16) & (1 << crate::ctr::ty::NOT_TAKEN_BRANCH) == 0);
        #[cfg(target_arch = "x86_64")]
        while insns.len() < MAX_INSNS && o + 2 <= page_end {
            let lo = self.ram.load(o, 2) as u32;
            let len = decode::insn_len(lo as u16) as u64;
            if o + len > page_end {
                break;
            }
            let bits = if len == 4 {
                lo | (self.ram.load(o + 2, 2) as u32) << 16
            } else {
                lo
            };
            let i = decode::decode(bits);
            // A block also ends after a CSR write (but one of `sstatus`: `x64::csr_ends_block`),
            // an SC or an AMO (included).
            let side = side_exits && x64::side_exit(&i);
            let terminal = (x64::terminal(i.op) && !side)
                || x64::csr_ends_block(&i, monitored)
                || x64::atomic_write(i.op);
            let translated = side || x64::straight(i.op) || x64::muldiv(i.op) || x64::extended(&i);
            if !terminal && !translated {
                break;
            }
            insns.push((va, i));
            va = va.wrapping_add(len);
            o += len;
            if terminal {
                break;
            }
        }
        // Compare the whole byte range at entry: 8-byte words, the last one overlapping.
        let bytes = (o - off) as u32;
        let mut word =
            |at: u32, size: u8| check.push((at, size, self.ram.load(off + at as u64, size as u32)));
        if bytes >= 8 {
            let mut at = 0;
            while at + 8 < bytes {
                word(at, 8);
                at += 8;
            }
            word(bytes - 8, 8);
        } else if bytes >= 4 {
            word(0, 4);
            word(bytes - 4, 4);
        } else if bytes == 2 {
            word(0, 2);
        }
        Plan {
            insns,
            end_pc: va,
            code_host: self.ram.host_addr(off),
            check,
            epoch_slot: 0,
            epoch_slot_exec: 0,
            monitored,
            cycles: 0,
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn jit_layout(&self) -> Layout {
        use std::mem::offset_of;
        let tlb = offset_of!(Hart, tlb);
        let (load, store, data_ctx) = crate::mmu::Tlb::layout();
        let (fetch, fetch_ctx) = crate::mmu::Tlb::fetch_layout();
        let (tally, models) = Hart::pmu_jit_offsets();
        let (jump_key, jumps) = jumps::JumpCache::layout();
        let (kind, ctr_pair) = self.jit.as_deref().map_or((0, 0), |j| (j.kind, j.ctr_pair));
        let monitored = kind & MONITORED != 0;
        Layout {
            x: offset_of!(Hart, x) as i32,
            pc: offset_of!(Hart, pc) as i32,
            jit_break: offset_of!(Hart, jit_break) as i32,
            budget: offset_of!(Hart, jit_budget) as i32,
            last_exit: offset_of!(Hart, jit_last_exit) as i32,
            load: (tlb + load) as i32,
            store: (tlb + store) as i32,
            data_ctx: (tlb + data_ctx) as i32,
            fetch: (tlb + fetch) as i32,
            fault: offset_of!(Hart, jit_fault) as i32,
            load_helper: jit_load as *const () as usize,
            store_helper: jit_store as *const () as usize,
            ctr_helper: jit_ctr as *const () as usize,
            ctr_mask_now: (ctr_pair >> 16) as u16,
            ctr_fast_now: ctr_pair as u16,
            kind,
            cycles_checked: self.jit.as_deref().is_some_and(|j| j.cycles_checked()),
            addr: offset_of!(Hart, jit_addr) as i32,
            tally: (offset_of!(Hart, pmu) + tally) as i32,
            models: (offset_of!(Hart, pmu) + models) as i32,
            view: offset_of!(Hart, jit_view) as i32,
            f: offset_of!(Hart, f) as i32,
            mstatus: (offset_of!(Hart, csr) + offset_of!(crate::csr::CsrFile, mstatus)) as i32,
            vsstatus: (offset_of!(Hart, csr)
                + offset_of!(crate::csr::CsrFile, h)
                + offset_of!(crate::hypervisor::HypervisorCsrs, vsstatus))
                as i32,
            virt: offset_of!(Hart, virt) as i32,
            float_helper: jit_float as *const () as usize,
            pause_helper: if self.pause_yields {
                jit_pause as *const () as usize
            } else {
                0
            },
            fflags: (offset_of!(Hart, csr) + offset_of!(crate::csr::CsrFile, fflags)) as i32,
            frm: (offset_of!(Hart, csr) + offset_of!(crate::csr::CsrFile, frm)) as i32,
            fma: std::is_x86_feature_detected!("fma"),
            // The helpers of the kind of block being translated.
            csr_helper: if monitored {
                jit_csr_monitored as *const () as usize
            } else {
                jit_csr as *const () as usize
            },
            atomic_helper: if monitored {
                jit_atomic_monitored as *const () as usize
            } else {
                jit_atomic as *const () as usize
            },

            fetch_ctx: (tlb + fetch_ctx) as i32,
            code_epoch: offset_of!(Hart, jit_code_epoch) as i32,
            checked_helper: jit_code_checked as *const () as usize,
            guard_bits: self.jit.as_deref().map_or(0, |j| j.guard.bits()),
            ram_host: self.ram.host_addr(0) as u64,
            table: self.jit.as_deref().map_or(0, |j| j.table.as_ptr() as u64),
            jump_key: (offset_of!(Hart, jit_jumps) + jump_key) as i32,
            jumps: (offset_of!(Hart, jit_jumps) + jumps) as i32,
        }
    }
}
