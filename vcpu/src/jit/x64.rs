//! x86-64 code generation for a planned block (see [`super::Plan`]).
//!
//! A block is a leaf function `extern "sysv64" fn(hart: *mut Hart) -> u64` that keeps every
//! guest register in the hart (`[rdi + x]`; the values a run of integer instructions
//! computes are held in r8-r11, r14 and r15 and written there before anything that can read
//! the hart or leave: `super::emit`) and uses only caller-saved host registers, r14 and r15
//! (which the trampoline keeps for its caller), rbx, which holds the
//! host address of guest RAM, r12, which holds the run's budget (`Hart::jit_budget`,
//! stored there before a helper that reads the clock), and r13, which holds the CTR log's
//! pointer (`ctr::log::CtrLog::at`, stored there before a helper that may drain the log);
//! `super::vcpu_jit_enter` sets all three. It returns with rdi as it was entered (helper
//! calls save and restore it), which the trampoline stores r12 and r13 through.
//! See [`assemble`] for its protocol with the dispatcher.
//!
//! Loads and stores translate through the hart's software TLB inline. Whatever the inline
//! path cannot do (a TLB miss, a page-crossing access, a device) ends the block *before*
//! that instruction, so the interpreter executes it with the full rules (page walk, faults,
//! MMIO exits).
//!
//! Divisions are inline, F/D loads and stores take the same path as integer ones (and in
//! monitored blocks report the same events), and the other F/D instructions, CSR accesses
//! and atomics call the interpreter's code (`super::jit_float`, `super::jit_csr`, `super::jit_atomic`), F/D
//! arithmetic first trying the host's SSE2/FMA3 where it is exact ([`emit_float_host`]),
//! and LR, SC and AMOs of blocks that are not monitored first inline where the TLB has
//! their page ([`emit_lr`], [`emit_sc`], [`emit_amo`]).

use dynasmrt::{dynasm, DynamicLabel, DynasmApi, DynasmLabelApi};

use super::table::{Layout, Plan};
use crate::decode::{Insn, Op, X0_SINK};

type Asm = super::emit::Emitter;
use super::emit::{Pending, NOT_READ};

/// What translation reuses from one block to the next (a hart's, allocated once): the
/// assembler, the buffer a block's code is finished into, and the lists a block's assembly
/// collects ([`Lists`]).
pub(crate) struct Scratch {
    pub(super) asm: Asm,
    pub(super) code: Vec<u8>,
    /// The last block's CTR record sites ([`Assembled`]).
    pub(super) ctr_sites: Vec<(usize, u64, u64)>,
    lists: Lists,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            // Room for the largest blocks, and the labels of a block of the most
            // instructions (exits and slow paths).
            asm: Asm::new(4096, 8 * super::MAX_INSNS),
            code: Vec::with_capacity(4096),
            ctr_sites: Vec::new(),
            lists: Lists::default(),
        }
    }
}

/// The lists [`assemble_carrying`] fills while it emits a block's straight-line code and
/// empties when it emits the out-of-line parts, kept from one block to the next: allocated
/// and grown anew for every block, they were about 0.8% of the host instructions of a
/// Linux boot's first 300 M guest instructions.
#[derive(Default)]
struct Lists {
    /// [`Exits::slots`].
    slots: Vec<(usize, usize)>,
    /// [`Exits::carried`].
    carried: Carried,
    /// [`Exits::ctr_sites`].
    sites: Vec<(usize, u64, u64)>,
    /// Ways out before an instruction that did not execute: its label, pc, the
    /// instructions not done, and what is still to be written.
    bails: Vec<(DynamicLabel, u64, u32, Pending)>,
    /// Ways out after a store that may have rewritten the block (as `bails`, and whether
    /// it is the block's first instruction).
    rewrites: Vec<(DynamicLabel, u64, u32, bool, Pending)>,
    slows: Vec<SlowPath>,
    misses: Vec<ChainMiss>,
    /// Side exits ([`side_exit`]): the label the taken branch jumps to, the branch's pc,
    /// its target, the instructions after it (not done), and what is still to be written.
    sides: Vec<(DynamicLabel, u64, u64, u32, Pending)>,
}

/// Displacement of integer register `r` from the hart pointer.
fn xd(l: &Layout, r: u8) -> i32 {
    l.x + 8 * (r as i32 & 63)
}

/// Host register numbers for [`get`] (x86-64 encoding order).
const RAX: u8 = 0;
const RCX: u8 = 1;
const RDX: u8 = 2;
const RBX: u8 = 3;
const RSI: u8 = 6;

/// Host register `host` = x[r] (x0 reads as 0), from the host register caching it when one
/// does (`super::emit`).
// dynasm's dynamic registers expand to `host.into()`.
#[allow(clippy::useless_conversion)]
fn get(a: &mut Asm, l: &Layout, host: u8, r: u8) {
    if r == 0 {
        dynasm!(a ; .arch x64 ; xor Rd(host), Rd(host));
    } else if let Some(c) = a.cache.find(r) {
        dynasm!(a ; .arch x64 ; mov Rq(host), Rq(c));
    } else {
        let d = xd(l, r);
        dynasm!(a ; .arch x64 ; mov Rq(host), QWORD [rdi + d]);
    }
}

/// x[rd] = host register `host`, kept in a caching host register as well (`super::emit`).
#[allow(clippy::useless_conversion)]
fn put(a: &mut Asm, l: &Layout, host: u8, rd: u8) {
    let d = xd(l, rd);
    dynasm!(a ; .arch x64 ; mov QWORD [rdi + d], Rq(host));
    if rd != 0 && rd < 32 {
        let c = a.assign(rd);
        dynasm!(a ; .arch x64 ; mov Rq(c), Rq(host));
        a.set_dirty(c, false);
    }
}

/// x[rd] = host register `host`, in a caching host register only, until `Emitter::flush`
/// writes it to the hart (as [`emit_alu`] leaves its results). Only where no jump follows
/// before that flush (the cache's rule: `super::emit`).
#[allow(clippy::useless_conversion)]
fn put_unwritten(a: &mut Asm, host: u8, rd: u8) {
    debug_assert!(rd != 0 && rd < 32, "x0 has no cached value");
    let c = a.assign(rd);
    dynasm!(a ; .arch x64 ; mov Rq(c), Rq(host));
    a.set_dirty(c, true);
}

fn get_rax(a: &mut Asm, l: &Layout, r: u8) {
    get(a, l, RAX, r);
}

fn get_rcx(a: &mut Asm, l: &Layout, r: u8) {
    get(a, l, RCX, r);
}

fn get_rsi(a: &mut Asm, l: &Layout, r: u8) {
    get(a, l, RSI, r);
}

/// x[rd] = rax
fn put_rax(a: &mut Asm, l: &Layout, rd: u8) {
    put(a, l, RAX, rd);
}

/// How a block exit to a fixed address goes on.
#[derive(Clone, Copy, PartialEq)]
enum Next {
    /// The target is in the block's own page, so its translation holds whenever this block
    /// runs: the exit jumps through a slot that first points at a stub reporting the slot
    /// to the dispatcher (`Hart::jit_last_exit`), which then links it straight to the
    /// target's block (see `super::Hart::jit_step`).
    Link,
    /// The target is in another page, whose translation may differ from one run of this
    /// block to the next: look it up through the fetch TLB and the block table, as the
    /// dispatcher would (`jump_indirect`); a loop that straddles a page boundary then
    /// stays in translated code.
    Lookup,
    /// Back to the dispatcher (a block left early: the interpreter takes over).
    Dispatcher,
}

impl Next {
    /// How to reach `target` from a block in page `page`.
    fn to(target: u64, page: u64) -> Next {
        if target >> 12 == page {
            Next::Link
        } else {
            Next::Lookup
        }
    }
}

/// The exits of the block being assembled: the link slots to fill in (`(slot, stub)`: the
/// offsets of a slot and of the stub it first points to), and the block's loop head.
struct Exits {
    slots: Vec<(usize, usize)>,
    /// A block whose closing jump or branch may go back to its own first instruction (a
    /// loop in one block): that pc and the label after the code check at entry. The jump
    /// back goes straight there: nothing but the block itself ran since its code was
    /// checked, and every store it makes that overlaps its own code leaves it (see
    /// `assemble`). Another hart's store (or a device's) is seen at the next entry
    /// through the dispatcher, at the latest when the run's budget ends, as FENCE.I
    /// requires no sooner (Zifencei).
    head: Option<(u64, DynamicLabel)>,
    /// A loop's registers carried from one iteration to the next in host registers
    /// (`(host, guest)`): loaded on the way in, and where the jump back finds them elsewhere
    /// (see [`assemble`]).
    carried: Carried,
    /// What the cache held at the jump back (filled in by [`exit_recording`]).
    back: Option<Carried>,
    /// The sites of the block's inline CTR records (`ctr::log::CtrLog::site`: a source and
    /// an `info`), and where their 32-bit immediates are ([`ctr_record`]), each emitted as
    /// 0 and filled in with the site's number once the block is assembled
    /// (`Scratch::ctr_sites`).
    ctr_sites: Vec<(usize, u64, u64)>,
}

/// A block exit to the fixed address `pc`, going on as `next` says.
fn exit_to(a: &mut Asm, l: &Layout, pc: u64, next: Next, links: &mut Exits) {
    exit_recording(a, l, pc, next, Transfer::default(), links);
}

/// What a block's closing jump or branch reports once the pc holds its target: its CTR
/// record (`(from, type)`, see [`ctr_record`]) and, in a monitored block, the monitor's
/// event (`(helper, pc, argument)`: the branch predictor's or the jump's).
#[derive(Default)]
struct Transfer {
    ctr: Option<(u64, u8)>,
    pmu: Option<Event>,
}

/// An event a monitored block reports inline, as the interpreter's `pmu_*` hooks do.
#[derive(Clone, Copy)]
enum Event {
    /// The conditional branch at `pc` retired, `taken` or not.
    Branch { pc: u64, taken: bool },
    /// The jump at `pc` retired (JALR: `indirect`), the pc already holding its target.
    Jump { pc: u64, indirect: bool },
}

/// Call the helper at `f` with the hart in rdi and the arguments already in rsi, rdx, rcx,
/// keeping the stack aligned (a block runs with rsp = 8 mod 16, as on entry to a
/// function). Every caller-saved register but rdi is clobbered. The helper must not look
/// at CTR state (see [`call_draining`]).
fn call(a: &mut Asm, f: usize) {
    let f = f as i64;
    // The helper may have moved the code epoch (a store to a protected page), which blocks
    // hold in rbp (`super::vcpu_jit_enter`).
    let epoch = super::JIT_CODE_EPOCH;
    dynasm!(a ; .arch x64
        ; push rdi
        ; mov rax, QWORD f
        ; call rax
        ; pop rdi
        ; mov rbp, QWORD [rdi + epoch]
    );
    // r8-r11 are caller-saved, and the helper may have written guest registers (r14 and
    // r15 it keeps, but what they held may be stale).
    a.cache.clear();
}

/// [`call`] for a helper that may drain the CTR log (`Hart::ctr_drain`: a CTR record or a
/// CSR instruction): the log's pointer, which blocks hold in r13, is stored in the hart
/// first. (No helper moves it: r13 holds it still after the call.)
fn call_draining(a: &mut Asm, f: usize) {
    let at = super::CTR_LOG_AT;
    dynasm!(a ; .arch x64 ; mov QWORD [rdi + at], r13);
    call(a, f);
}

/// [`call`] from a load's or store's slow path, keeping r8-r11 (pushed and popped around
/// it, which keeps the stack's alignment; the helper keeps r14 and r15), so that the
/// registers they cache are still there where the fast path resumes (`super::emit::Emitter::join`).
fn call_keeping_cache(a: &mut Asm, f: usize) {
    dynasm!(a ; .arch x64 ; push r8 ; push r9 ; push r10 ; push r11);
    call(a, f);
    dynasm!(a ; .arch x64 ; pop r11 ; pop r10 ; pop r9 ; pop r8);
}

/// `Hart::jit_budget` = the budget blocks count down in r12 (`super::vcpu_jit_enter`), for a
/// helper that reads the clock (`Hart::jit_clock` less the budget).
fn store_budget(a: &mut Asm, l: &Layout) {
    let budget = l.budget;
    dynasm!(a ; .arch x64 ; mov QWORD [rdi + budget], r12);
}

/// `Hart::pc` = `pc`.
fn store_pc(a: &mut Asm, l: &Layout, pc: u64) {
    let p = l.pc;
    match i32::try_from(pc as i64) {
        Ok(v) => dynasm!(a ; .arch x64 ; mov QWORD [rdi + p], v),
        Err(_) => dynasm!(a ; .arch x64
            ; mov rax, QWORD pc as i64
            ; mov QWORD [rdi + p], rax
        ),
    }
}

/// The target of a transfer CTR records ([`ctr_record`]): known to the block (and stored
/// in `Hart::pc` or not yet), or computed (JALR): in `Hart::pc` and in rax.
#[derive(Clone, Copy)]
enum Target {
    Known { pc: u64, stored: bool },
    Rax,
}

/// [`exit_to`] after the block's closing jump or branch, which CTR records when `ctr`
/// (`(from, type)`) qualifies in the current mode (see [`ctr_record`]).
fn exit_recording(
    a: &mut Asm,
    l: &Layout,
    pc: u64,
    next: Next,
    transfer: Transfer,
    links: &mut Exits,
) {
    // A linked exit leaves the pc unstored: the block it goes to runs from a known pc, and
    // stores it itself wherever it returns to the dispatcher (`assemble`); so does the
    // stub of a slot not yet linked, and a CTR helper's call.
    let stored = next != Next::Link;
    if stored {
        store_pc(a, l, pc);
    }
    if let Some(e) = transfer.pmu {
        monitor_event(a, l, e);
    }
    if let Some((from, t)) = transfer.ctr {
        ctr_record(a, l, from, t, Target::Known { pc, stored }, links);
    }
    match next {
        Next::Dispatcher => {
            dynasm!(a ; .arch x64 ; xor eax, eax ; ret);
            return;
        }
        Next::Lookup => {
            dynasm!(a ; .arch x64 ; mov rax, QWORD pc as i64);
            jump_indirect(a, l);
            return;
        }
        Next::Link => {}
    }
    if let Some((head, again)) = links.head {
        if pc == head {
            links.back = Some(a.cache.clean());
            a.carry(&links.carried);
            dynasm!(a ; .arch x64 ; jmp =>again);
            return;
        }
    }
    let slot = a.new_dynamic_label();
    let last = l.last_exit;
    dynasm!(a ; .arch x64 ; jmp QWORD [=>slot]);
    let stub = a.offset().0;
    store_pc(a, l, pc);
    dynasm!(a ; .arch x64
        ; lea rax, [=>slot]
        ; mov QWORD [rdi + last], rax
        ; xor eax, eax
        ; ret
        ; =>slot
    );
    let at = a.offset().0;
    dynasm!(a ; .arch x64 ; .u64 0);
    links.slots.push((at, stub));
}

// ---------------------------------------------------------------------------------------------
// Monitored blocks: the performance monitor's models and tallies, inline (`pmu::model`,
// `Hart::pmu_load` and friends: the same state changes in the same order).
// ---------------------------------------------------------------------------------------------

/// Displacement of event `e`'s tally.
fn tally(l: &Layout, e: crate::pmu::events::Event) -> i32 {
    l.tally + 8 * e as i32
}

/// Displacements from the hart of what monitored blocks read and write besides the tallies:
/// the models' arrays and the ITLB model's last page (`PmuState::models`), and the view's
/// fields (`Hart::jit_view`).
struct Models {
    l1d: i32,
    dtlb: i32,
    itlb: i32,
    bht: i32,
    btb: i32,
    last_fetch_page: i32,
    data_tag: i32,
    fetch_tag: i32,
    last_line: i32,
    fetch_page: i32,
    cycle_room: i32,
}

fn models(l: &Layout) -> Models {
    use super::MonitorView as V;
    use crate::pmu::model::Models as M;
    use std::mem::offset_of;
    let m = |o: usize| l.models + o as i32;
    let v = |o: usize| l.view + o as i32;
    Models {
        l1d: m(offset_of!(M, l1d)),
        dtlb: m(offset_of!(M, dtlb)),
        itlb: m(offset_of!(M, itlb)),
        bht: m(offset_of!(M, bht)),
        btb: m(offset_of!(M, btb)),
        last_fetch_page: m(offset_of!(M, last_fetch_page)),
        data_tag: v(offset_of!(V, data_tag)),
        fetch_tag: v(offset_of!(V, fetch_tag)),
        last_line: v(offset_of!(V, last_line)),
        fetch_page: v(offset_of!(V, fetch_page)),
        cycle_room: v(offset_of!(V, cycle_room)),
    }
}

/// A direct-mapped model (`pmu::model`: L1D, DTLB, ITLB) looks up the tag in host register
/// `tag`: the entry at `tag & mask` of the `u64` array at `array` (a displacement from the
/// hart); on a miss the entry takes the tag, the miss tally at `t_miss` counts one and the
/// cycles `cost`. Clobbers rcx.
// dynasm's dynamic registers expand to `.into()` conversions.
#[allow(clippy::useless_conversion)]
fn model_probe(a: &mut Asm, l: &Layout, array: i32, mask: i32, t_miss: i32, cost: i32, tag: u8) {
    let cycles = tally(l, crate::pmu::events::Event::Cycles);
    let hit = a.new_dynamic_label();
    dynasm!(a ; .arch x64
        ; mov ecx, Rd(tag)
        ; and ecx, mask
        ; cmp QWORD [rdi + rcx * 8 + array], Rq(tag)
        ; je =>hit
        ; mov QWORD [rdi + rcx * 8 + array], Rq(tag)
        ; inc QWORD [rdi + t_miss]
        ; add QWORD [rdi + cycles], cost
    );
    a.join(hit);
}

/// A load or store retired at the guest address in rsi: its count, the L1D model and, with
/// data translation, the DTLB model (`Hart::pmu_access`). The last line the models saw is
/// skipped (`MonitorView::last_line`): it would hit both and change nothing. A hit in each
/// model is one compare. Clobbers rcx and rdx; keeps rax (a chained access's RAM offset:
/// [`Chain`]) and rsi.
fn monitor_access(a: &mut Asm, l: &Layout, store: bool) {
    use crate::pmu::events::Event::*;
    use crate::pmu::model::{Cost, L1D_LINES, TLB_ENTRIES};
    let (count, miss, tlb_miss) = if store {
        (Stores, L1dWriteMiss, DtlbWriteMiss)
    } else {
        (Loads, L1dReadMiss, DtlbReadMiss)
    };
    let (t_count, t_miss, t_tlb) = (tally(l, count), tally(l, miss), tally(l, tlb_miss));
    let m = models(l);
    let done = a.new_dynamic_label();
    let (lines, entries) = (L1D_LINES as i32 - 1, TLB_ENTRIES as i32 - 1);
    let (l1d_cost, tlb_cost) = (Cost::L1D_MISS as i32, Cost::DTLB_MISS as i32);
    // L1D: the line address in rdx.
    let last_line = m.last_line;
    dynasm!(a ; .arch x64
        ; inc QWORD [rdi + t_count]
        ; mov rdx, rsi
        ; shr rdx, 6
        ; cmp rdx, QWORD [rdi + last_line]
        ; je =>done
        ; mov QWORD [rdi + last_line], rdx
    );
    model_probe(a, l, m.l1d, lines, t_miss, l1d_cost, RDX);
    // DTLB, with data translation (the tag is all ones without): the tag and the page
    // number in rdx.
    let data_tag = m.data_tag;
    dynasm!(a ; .arch x64
        ; cmp QWORD [rdi + data_tag], -1
        ; je =>done
        ; mov rdx, rsi
        ; shr rdx, 12
        ; or rdx, QWORD [rdi + data_tag]
    );
    model_probe(a, l, m.dtlb, entries, t_tlb, tlb_cost, RDX);
    a.join(done);
}

/// A branch or jump retired (`Hart::pmu_branch`, `Hart::pmu_jump`): its counts, and the
/// predictor's two-bit counter or the target buffer's entry (both at indices known here).
fn monitor_event(a: &mut Asm, l: &Layout, e: Event) {
    use crate::pmu::events::Event::*;
    use crate::pmu::model::{Cost, BHT_ENTRIES, BTB_ENTRIES};
    let m = models(l);
    let (misses, cycles) = (tally(l, BranchMisses), tally(l, Cycles));
    let cost = Cost::MISPREDICT as i32;
    let (ok, done) = (a.new_dynamic_label(), a.new_dynamic_label());
    match e {
        Event::Branch { pc, taken } => {
            let (branches, taken_branches) = (tally(l, Branches), tally(l, TakenBranches));
            let counter = m.bht + ((pc >> 1) as usize & (BHT_ENTRIES - 1)) as i32;
            dynasm!(a ; .arch x64 ; inc QWORD [rdi + branches]);
            if taken {
                dynasm!(a ; .arch x64 ; inc QWORD [rdi + taken_branches]);
            }
            // A saturated counter that agrees (3 taken, 0 not taken) predicts right and
            // stays: one compare.
            let saturated = if taken { 3 } else { 0 };
            dynasm!(a ; .arch x64
                ; cmp BYTE [rdi + counter], saturated
                ; je =>done
                ; movzx ecx, BYTE [rdi + counter]
                ; cmp ecx, 2
            );
            // Predicted taken when the counter is 2 or 3.
            if taken {
                dynasm!(a ; .arch x64 ; jae =>ok);
            } else {
                dynasm!(a ; .arch x64 ; jb =>ok);
            }
            dynasm!(a ; .arch x64
                ; inc QWORD [rdi + misses]
                ; add QWORD [rdi + cycles], cost
            );
            a.join(ok);
            if taken {
                dynasm!(a ; .arch x64
                    ; cmp ecx, 3
                    ; je =>done
                    ; inc BYTE [rdi + counter]
                );
            } else {
                dynasm!(a ; .arch x64
                    ; test ecx, ecx
                    ; jz =>done
                    ; dec BYTE [rdi + counter]
                );
            }
            a.join(done);
        }
        Event::Jump { pc, indirect } => {
            let jumps = tally(l, Jumps);
            dynasm!(a ; .arch x64 ; inc QWORD [rdi + jumps]);
            if indirect {
                let entry = m.btb + 8 * ((pc >> 1) as usize & (BTB_ENTRIES - 1)) as i32;
                let p = l.pc;
                dynasm!(a ; .arch x64
                    ; mov rax, QWORD [rdi + p]
                    ; cmp QWORD [rdi + entry], rax
                    ; je =>ok
                    ; mov QWORD [rdi + entry], rax
                    ; inc QWORD [rdi + misses]
                    ; add QWORD [rdi + cycles], cost
                );
                a.join(ok);
            }
            a.join(done);
        }
    }
}

/// The fetch of the block's page (`pc`: its first instruction's) for the ITLB model, when
/// fetches are translated (`Hart::pmu_fetch`; consecutive fetches from one page look it up
/// once). Nothing to do while the page is `MonitorView::fetch_page`, which is the common
/// case: one compare.
fn monitor_fetch(a: &mut Asm, l: &Layout, pc: u64) {
    use crate::pmu::events::Event::ItlbMiss;
    use crate::pmu::model::{Cost, TLB_ENTRIES};
    let m = models(l);
    let (fetch_tag, seen) = (m.fetch_tag, m.fetch_page);
    let (t_miss, last) = (tally(l, ItlbMiss), m.last_fetch_page);
    let (entries, cost) = (TLB_ENTRIES as i32 - 1, Cost::ITLB_MISS as i32);
    let done = a.new_dynamic_label();
    let (key, page) = (((pc as i64) >> 12), pc >> 12);
    match i32::try_from(key) {
        Ok(k) => dynasm!(a ; .arch x64
            ; cmp QWORD [rdi + seen], k
            ; je =>done
            ; mov QWORD [rdi + seen], k
        ),
        Err(_) => dynasm!(a ; .arch x64
            ; mov rax, QWORD key
            ; cmp QWORD [rdi + seen], rax
            ; je =>done
            ; mov QWORD [rdi + seen], rax
        ),
    }
    // tag | page, all ones without translation (then nothing to do either way).
    dynasm!(a ; .arch x64
        ; mov rdx, QWORD [rdi + fetch_tag]
        ; cmp rdx, -1
        ; je =>done
    );
    match i32::try_from(page) {
        Ok(p) => dynasm!(a ; .arch x64 ; or rdx, p),
        Err(_) => dynasm!(a ; .arch x64 ; mov rax, QWORD page as i64 ; or rdx, rax),
    }
    dynasm!(a ; .arch x64
        ; cmp rdx, QWORD [rdi + last]
        ; je =>done
        ; mov QWORD [rdi + last], rdx
    );
    model_probe(a, l, m.itlb, entries, t_miss, cost, RDX);
    a.join(done);
}

/// CTR (chapter 6 of the Smctr/Ssctr spec, "Behavior"): record the transfer of type `t` from
/// `from` to the pc already stored (`target` when the block knows it) as the pair the block
/// is translated for says (`super::Jit::ctr_pair`: `Hart::ctr_mask`, which folds in the
/// mode's `xctrctl` enable and filter bits, RASEMU and `sctrstatus.FROZEN`, and
/// `Hart::ctr_fast_mask`): nothing when the type is not recorded, no test either way.
///
/// The common record, with RASEMU off and CCV = 1 (`Hart::ctr_fast_mask`), is logged
/// inline (`ctr/log.rs`): `Hart::ctr_drain` later writes it into the buffer as
/// `Hart::ctr_transfer` would have (chapter 3, "Entry Registers", and section 6.3, "Cycle
/// Counting"), at the clock of the transfer; any other record calls the helper.
fn ctr_record(a: &mut Asm, l: &Layout, from: u64, t: u8, to: Target, links: &mut Exits) {
    let bit = 1u16 << t;
    if l.ctr_mask_now & bit == 0 {
        return;
    }
    if l.ctr_fast_now & bit == 0 {
        // The helper reads the target from `Hart::pc`.
        if let Target::Known { pc, stored: false } = to {
            store_pc(a, l, pc);
        }
        store_budget(a, l);
        dynasm!(a ; .arch x64
            ; mov rsi, QWORD from as i64
            ; mov edx, t as i32
        );
        call_draining(a, l.ctr_helper);
        if let Target::Rax = to {
            let p = l.pc;
            dynasm!(a ; .arch x64 ; mov rax, QWORD [rdi + p]);
        }
        return;
    }
    use crate::ctr::log::{LogRecord, RawRecord, LOG_STEP};
    // The record goes to the log at r13 (`ctr/log.rs`): the number of its site (the source,
    // and the type with the target's offset from the source or, for a JALR, the mark of a
    // target given apart: `CtrLog::site`); the budget left, which gives the clock of the
    // transfer; a JALR's target, from rax.
    // The pointer wraps around the ring (a 16-bit add). It keeps the caching registers and
    // rax.
    let info = match to {
        Target::Known { pc, .. } => {
            // A JAL's or a branch's offset.
            debug_assert!(i32::try_from(pc.wrapping_sub(from) as i64).is_ok());
            LogRecord::direct(from, pc, t)
        }
        Target::Rax => LogRecord::indirect(t),
    };
    // The site's number, a sign-extended 32-bit immediate: 0 here, filled in once the
    // block is assembled (`Exits::ctr_sites`); it is the instruction's last 4 bytes.
    dynasm!(a ; .arch x64 ; mov QWORD [r13], DWORD 0);
    links.ctr_sites.push((a.offset().0 - 4, from, info));
    dynasm!(a ; .arch x64 ; mov QWORD [r13 + 8], r12);
    if let Target::Rax = to {
        dynasm!(a ; .arch x64 ; mov QWORD [r13 + 16], rax);
    }
    dynasm!(a ; .arch x64 ; add r13w, BYTE LOG_STEP as i8);
    const _: () = {
        assert!(std::mem::size_of::<RawRecord>() == 32);
        assert!(std::mem::offset_of!(RawRecord, site) == 0);
        assert!(std::mem::offset_of!(RawRecord, budget) == 8);
        assert!(std::mem::offset_of!(RawRecord, indirect) == 16);
    };
}

/// The software TLB lookup (`mmu::Tlb`, entries `{tag, off}` of 16 bytes, `off` + address =
/// RAM offset) of the guest
/// address in host register `va` (kept) in the entry array at `array` with the context at
/// `ctx` (displacements from the hart): `out` = the RAM offset of the address, `idx` is
/// clobbered; jumps to `miss` when the entry does not match.
// dynasm's dynamic registers expand to `.into()` conversions.
#[allow(clippy::useless_conversion)]
fn tlb_lookup(a: &mut Asm, [va, out, idx]: [u8; 3], ctx: i32, array: i32, miss: DynamicLabel) {
    // Entries are 16 bytes: slot * 16 = (va >> 8) & mask (as in `data_lookup`).
    let mask = ((crate::mmu::TLB_SIZE - 1) << 4) as i32;
    let off = array + 8;
    if std::arch::is_x86_feature_detected!("bmi2") {
        dynasm!(a ; .arch x64 ; rorx Rd(idx), Rd(va), 8);
    } else {
        dynasm!(a ; .arch x64 ; mov Rd(idx), Rd(va) ; shr Rd(idx), 8);
    }
    dynasm!(a ; .arch x64
        ; and Rd(idx), mask
        ; mov Rq(out), Rq(va)
        ; shr Rq(out), 12
        ; or Rq(out), QWORD [rdi + ctx]
        ; cmp Rq(out), QWORD [rdi + Rq(idx) + array]
        ; jne =>miss
        ; mov Rq(out), QWORD [rdi + Rq(idx) + off]
        ; add Rq(out), Rq(va)
    );
}

/// rax = the RAM offset of the `size`-byte data access at the guest address in rsi, through
/// the TLB array at `array` (context at `ctx`); a miss, or an access whose last byte lies in
/// another page than its first, jumps to `miss` with rsi kept. The entry is the first
/// byte's, and its tag is compared with the last byte's page: one comparison finds both.
fn data_lookup(a: &mut Asm, ctx: i32, array: i32, size: i32, miss: DynamicLabel) {
    // Entries are 16 bytes (as in `tlb_lookup`): slot * 16 = (va >> 8) & mask.
    let mask = ((crate::mmu::TLB_SIZE - 1) << 4) as i32;
    let (last, off) = (size - 1, array + 8);
    // With BMI2 one RORX copies and shifts (the bits it rotates in at the top are masked).
    if std::arch::is_x86_feature_detected!("bmi2") {
        dynasm!(a ; .arch x64 ; rorx edx, esi, 8);
    } else {
        dynasm!(a ; .arch x64 ; mov edx, esi ; shr edx, 8);
    }
    dynasm!(a ; .arch x64
        ; and edx, mask
        ; lea rax, [rsi + last]
        ; shr rax, 12
        ; or rax, QWORD [rdi + ctx]
        ; cmp rax, QWORD [rdi + rdx + array]
        ; jne =>miss
        ; mov rax, QWORD [rdi + rdx + off]
        ; add rax, rsi
    );
}

/// Continue at the guest address in rax (already stored as pc): find its block through the
/// fetch TLB and the block table, as the dispatcher would, and jump to it; return to the
/// dispatcher when either misses. The target block checks its code and the budget itself.
/// A block looks for a block of its own kind (`super::Jit::kind` in the key: monitored or
/// not, and the CTR key), in the slot that kind gives (`super::Jit::slot`).
///
/// First the jump cache (`super::jumps`): the entry of the target's bits 1 and up (32
/// bytes each: the pc's bits times 16) names its block when it has the target and the
/// cache's key. A block found through the table goes into that entry.
fn jump_indirect(a: &mut Asm, l: &Layout) {
    let (fetch, fctx) = (l.fetch, l.fetch_ctx);
    let table = l.table as i64;
    let mask = (super::TABLE - 1) as i32;
    let miss = a.new_dynamic_label();
    let (key, jumps) = (l.jump_key, l.jumps);
    let (jva, jkey, jcode) = (jumps, jumps + 8, jumps + 16);
    let jmask = ((super::jumps::JUMPS - 1) << 1) as i32;
    let lookup = a.new_dynamic_label();
    dynasm!(a ; .arch x64
        ; mov edx, eax
        ; and edx, jmask
        ; shl edx, 4
        ; cmp rax, QWORD [rdi + rdx + jva]
        ; jne =>lookup
        ; mov rcx, QWORD [rdi + key]
        ; cmp rcx, QWORD [rdi + rdx + jkey]
        ; jne =>lookup
        ; jmp QWORD [rdi + rdx + jcode]
        ; =>lookup
    );
    tlb_lookup(a, [RAX, RSI, RCX], fctx, fetch, miss);
    // The slot (`super::Jit::slot`): where the block's kind starts is part of the constant.
    // Entries are 32 bytes: slot * 32 = (offset << 4) & (mask << 5), in 32 bits (the
    // offset's bits 1-18 are those the mask keeps).
    let start = table + 32 * super::Jit::kind_slots(l.kind) as i64;
    let mask = mask << 5;
    dynasm!(a ; .arch x64
        ; mov edx, esi
        ; shl edx, 4
        ; and edx, mask
        ; mov rcx, QWORD start
        ; cmp rax, QWORD [rcx + rdx]
        ; jne =>miss
    );
    // The key: the RAM offset with the kind's bits (one or two, as a rule) set.
    let mut bits = l.kind;
    while bits != 0 {
        let b = bits.trailing_zeros() as i8;
        dynasm!(a ; .arch x64 ; bts rsi, BYTE b);
        bits &= bits - 1;
    }
    dynasm!(a ; .arch x64
        ; cmp rsi, QWORD [rcx + rdx + 8]
        ; jne =>miss
        ; mov rcx, QWORD [rcx + rdx + 16]
        ; test rcx, rcx
        ; jz =>miss
        ; mov edx, eax
        ; and edx, jmask
        ; shl edx, 4
        ; mov QWORD [rdi + rdx + jva], rax
        ; mov rsi, QWORD [rdi + key]
        ; mov QWORD [rdi + rdx + jkey], rsi
        ; mov QWORD [rdi + rdx + jcode], rcx
        ; jmp rcx
        ; =>miss
        ; xor eax, eax
        ; ret
    );
}

/// Whether the code generator handles `op` in the middle of a block.
pub(super) fn straight(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        Lui | Auipc
            | Addi
            | Slti
            | Sltiu
            | Xori
            | Ori
            | Andi
            | Slli
            | Srli
            | Srai
            | Addiw
            | Slliw
            | Srliw
            | Sraiw
            | Add
            | Sub
            | Sll
            | Slt
            | Sltu
            | Xor
            | Srl
            | Sra
            | Or
            | And
            | Addw
            | Subw
            | Sllw
            | Srlw
            | Sraw
            | Mul
            | Mulh
            | Mulhu
            | Mulw
            | Lb
            | Lh
            | Lw
            | Ld
            | Lbu
            | Lhu
            | Lwu
            | Sb
            | Sh
            | Sw
            | Sd
            | Fence
    )
}

/// Whether `op` is an integer load or store.
fn is_memory(op: Op) -> bool {
    use Op::*;
    matches!(op, Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu | Sb | Sh | Sw | Sd)
}

/// Bytes an integer or F/D load or store accesses.
fn access_size(op: Op) -> i32 {
    use Op::*;
    match op {
        Lb | Lbu | Sb => 1,
        Lh | Lhu | Sh => 2,
        Lw | Lwu | Sw | Flw | Fsw => 4,
        _ => 8,
    }
}

/// A load or store that follows another of the same kind (both integer loads or both
/// integer stores) with the same base register, which the first left alone: when the first
/// went through the TLB inline, its address is in rsi and its RAM offset in rax, and the
/// second needs no TLB lookup if it lies in the same page (the same permissions, the same
/// translation context: nothing between them can change either). `Chain { d, k }`: the
/// second's address is the first's plus `d`; `k` is the offset of the byte to compare pages
/// with (its last byte when `d` > 0, else its first, which then is at or below the first's
/// address). The first's slow path leaves a RAM offset in rax that fails the check
/// ([`Chain::spoiler`]).
#[derive(Clone, Copy)]
struct Chain {
    d: i32,
    k: i32,
}

/// Whether instruction `i`, between two accesses through base register `base`, keeps their
/// chain: an instruction [`emit_alu`] translates (it computes in the caching registers
/// only, leaving rax and rsi, the first access's RAM offset and address, as they are) that
/// does not write the base.
fn keeps_chain(i: &Insn, base: u8) -> bool {
    (alu_reg_reg(i.op) || alu_reg_imm(i.op) || matches!(i.op, Op::Lui | Op::Auipc))
        && i.rd != base
        && (i.rd == X0_SINK || (1..32).contains(&i.rd))
}

/// The register-register operations [`emit_alu`] translates.
fn alu_reg_reg(op: Op) -> bool {
    use Op::*;
    matches!(op, Add | Sub | Xor | Or | And | Addw | Subw | Mul | Mulw)
}

/// The register-immediate operations [`emit_alu`] translates.
fn alu_reg_imm(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        Addi | Xori | Ori | Andi | Slli | Srli | Srai | Addiw | Slliw | Srliw | Sraiw
    )
}

impl Chain {
    /// The chain from `first` to `second` (the next access of the block, with only
    /// instructions that keep it between them: [`keeps_chain`]), if any.
    fn between(first: &Insn, second: &Insn) -> Option<Chain> {
        if !is_memory(first.op)
            || !is_memory(second.op)
            || is_store(first.op) != is_store(second.op)
            || first.rs1 != second.rs1
            || (!is_store(first.op) && first.rd == first.rs1)
        {
            return None;
        }
        let d = second.imm.wrapping_sub(first.imm);
        let k = if d > 0 {
            d + access_size(second.op) - 1
        } else if d + access_size(second.op) - 1 <= 0 {
            d
        } else {
            return None; // straddles the first's address
        };
        // A check that always passes (k = 0) or always fails (|k| >= 4096) is no chain.
        (k != 0 && k.abs() < 0x1000).then_some(Chain { d, k })
    }

    /// A RAM offset whose page check fails: the page after (k > 0) or before (k < 0).
    fn spoiler(self) -> i32 {
        if self.k > 0 {
            0x1000 - self.k
        } else {
            0
        }
    }
}

/// The TLB lookup a chained access ([`Chain`]) skips on its fast path, emitted out of line
/// for when the page check fails: the address from the base register (the host register
/// caching it where the access is, which may hold a value the hart does not have yet, or
/// the hart's copy), then the lookup as usual (its miss goes to the access's slow path),
/// then back.
struct ChainMiss {
    full: DynamicLabel,
    done: DynamicLabel,
    slow: DynamicLabel,
    rs1: u8,
    /// The host register caching x\[rs1\] where the access is, if one does (it may hold a
    /// value the hart does not have yet).
    rs1_host: Option<u8>,
    imm: i32,
    size: i32,
    store: bool,
}

/// Whether the code generator handles `i` beyond [`straight`] and [`muldiv`], in both kinds
/// of block: the F and D instructions, CSR accesses (most writes end the block:
/// [`csr_ends_block`]), LR, SC and AMOs (helpers, in blocks that are not monitored first inline: [`emit_lr`],
/// [`emit_sc`], [`emit_amo`]; SC and AMOs end the block). A monitored block reports their events as
/// the interpreter does: F/D loads and stores inline like integer ones (other F/D
/// instructions have none), atomics and CSR writes in their helpers (`super::jit_atomic_monitored`,
/// `super::jit_csr_monitored`).
pub(super) fn extended(i: &Insn) -> bool {
    float_memory(i.op) || float_op(i.op) || csr(i.op) || atomic(i.op)
}

fn atomic(op: Op) -> bool {
    op == Op::Lr || atomic_write(op)
}

/// Whether `op` is SC or an AMO: it ends a block, after it (it may have
/// written the block's own code; the next block checks its bytes at entry).
pub(super) fn atomic_write(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        Sc | AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu | AmoMaxu
    )
}

/// The address of an atomic inline (`Hart::atomic_address`): x[rs1] aligned to the access
/// (`Insn::fmt` 2: a word) and its page in the load TLB and, for SC and AMOs (`store`),
/// the store TLB too, else a jump to `slow`; leaves the RAM offset in rax.
fn atomic_address(a: &mut Asm, l: &Layout, i: &Insn, store: bool, slow: DynamicLabel) {
    let size = if i.fmt == 2 { 4 } else { 8 };
    get_rsi(a, l, i.rs1);
    dynasm!(a ; .arch x64
        ; test esi, size - 1
        ; jnz =>slow
    );
    data_lookup(a, l.data_ctx, l.load, size, slow);
    if store {
        data_lookup(a, l.data_ctx, l.store, size, slow);
    }
}

/// An AMO inline, for a block that is not monitored: it is performed on guest RAM
/// with the host's locked read-modify-write (XCHG, LOCK XADD, or a LOCK CMPXCHG loop), as
/// the interpreter performs it with a compare-and-swap loop (`Hart::exec_atomic`), when the
/// address is aligned and both the load and the store TLB have its page (an AMO needs read
/// and write permission, `Hart::atomic_address`); otherwise it jumps to `slow` with nothing
/// done. It writes x[rd] to the hart and jumps to `done`. The register cache is flushed
/// (the instruction is not [`straight`]) and left as it was: the caller empties it at
/// `done`.
fn emit_amo(a: &mut Asm, l: &Layout, i: &Insn, slow: DynamicLabel, done: DynamicLabel) {
    use Op::*;
    // `Insn::fmt` 2: the word form (`Hart::exec_atomic`).
    let word = i.fmt == 2;
    atomic_address(a, l, i, true, slow);
    get_rcx(a, l, i.rs2);
    dynasm!(a ; .arch x64 ; lea rsi, [rbx + rax]);
    // rcx = the old value (the new one computed in rdx, CMPXCHG comparing with rax).
    match (i.op, word) {
        (AmoSwap, false) => dynasm!(a ; .arch x64 ; xchg QWORD [rsi], rcx),
        (AmoSwap, true) => dynasm!(a ; .arch x64 ; xchg DWORD [rsi], ecx),
        (AmoAdd, false) => dynasm!(a ; .arch x64 ; lock xadd QWORD [rsi], rcx),
        (AmoAdd, true) => dynasm!(a ; .arch x64 ; lock xadd DWORD [rsi], ecx),
        // A LOCK CMPXCHG loop, in the width's registers.
        (op, word) => {
            macro_rules! cmpxchg_loop {
                ($size:ident, $old:ident, $new:ident, $src:ident) => {{
                    let again = a.new_dynamic_label();
                    dynasm!(a ; .arch x64
                        ; mov $old, $size [rsi]
                        ; =>again
                        ; mov $new, $old
                    );
                    match op {
                        AmoXor => dynasm!(a ; .arch x64 ; xor $new, $src),
                        AmoAnd => dynasm!(a ; .arch x64 ; and $new, $src),
                        AmoOr => dynasm!(a ; .arch x64 ; or $new, $src),
                        AmoMin => dynasm!(a ; .arch x64 ; cmp $new, $src ; cmovg $new, $src),
                        AmoMax => dynasm!(a ; .arch x64 ; cmp $new, $src ; cmovl $new, $src),
                        AmoMinu => dynasm!(a ; .arch x64 ; cmp $new, $src ; cmova $new, $src),
                        _ => dynasm!(a ; .arch x64 ; cmp $new, $src ; cmovb $new, $src),
                    }
                    dynasm!(a ; .arch x64
                        ; lock cmpxchg $size [rsi], $new
                        ; jne =>again
                        ; mov $src, $old
                    );
                }};
            }
            if word {
                cmpxchg_loop!(DWORD, eax, edx, ecx);
            } else {
                cmpxchg_loop!(QWORD, rax, rdx, rcx);
            }
        }
    }
    atomic_result(a, l, i, done);
}

/// The end of an atomic inline: x[rd] = rcx, sign-extended from its low word for the W
/// forms (`Insn::fmt` 2: the A extension's LR.W and AMO*.W return the word sign-extended,
/// SC.W's 0 or 1 is the same either way), written to the hart; then to `done`.
fn atomic_result(a: &mut Asm, l: &Layout, i: &Insn, done: DynamicLabel) {
    if i.fmt == 2 {
        dynasm!(a ; .arch x64 ; movsxd rcx, ecx);
    }
    let d = xd(l, i.rd);
    dynasm!(a ; .arch x64
        ; mov QWORD [rdi + d], rcx
        ; jmp =>done
    );
}

/// Displacements from the hart of the LR reservation's fields (`execute::Reservation`).
const RESERVATION: usize = std::mem::offset_of!(crate::hart::Hart, reservation);
const RESERVATION_HELD: i32 =
    (RESERVATION + std::mem::offset_of!(crate::execute::Reservation, held)) as i32;
const RESERVATION_OFF: i32 =
    (RESERVATION + std::mem::offset_of!(crate::execute::Reservation, off)) as i32;
const RESERVATION_VALUE: i32 =
    (RESERVATION + std::mem::offset_of!(crate::execute::Reservation, value)) as i32;

/// LR inline, for a block that is not monitored, as `Hart::exec_atomic` performs it: when
/// the address is aligned and the load TLB has its page (LR needs read permission only,
/// `Hart::atomic_address`), it loads the value, takes the reservation (the RAM offset and
/// the value, zero-extended for LR.W) and writes x[rd] (LR.W sign-extends); otherwise it
/// jumps to `slow` with nothing done. A plain load: on x86-64 it is a sequentially
/// consistent one. Registers as for [`emit_amo`].
fn emit_lr(a: &mut Asm, l: &Layout, i: &Insn, slow: DynamicLabel, done: DynamicLabel) {
    let word = i.fmt == 2;
    atomic_address(a, l, i, false, slow);
    if word {
        dynasm!(a ; .arch x64 ; mov ecx, DWORD [rbx + rax]);
    } else {
        dynasm!(a ; .arch x64 ; mov rcx, QWORD [rbx + rax]);
    }
    dynasm!(a ; .arch x64
        ; mov QWORD [rdi + RESERVATION_OFF], rax
        ; mov QWORD [rdi + RESERVATION_VALUE], rcx
        ; mov QWORD [rdi + RESERVATION_HELD], 1
    );
    atomic_result(a, l, i, done);
}

/// SC inline, for a block that is not monitored, as `Hart::exec_atomic` performs it: when
/// the address is aligned and both the load and the store TLB have its page (SC needs write
/// permission, `Hart::atomic_address`, which is checked before the reservation), the
/// reservation goes, and if it was held for this RAM offset a LOCK CMPXCHG of the value LR
/// read with x[rs2] decides; x[rd] gets 0 when it stored, 1 when not. Otherwise it jumps to
/// `slow` with nothing done. Registers as for [`emit_amo`].
fn emit_sc(a: &mut Asm, l: &Layout, i: &Insn, slow: DynamicLabel, done: DynamicLabel) {
    let word = i.fmt == 2;
    atomic_address(a, l, i, true, slow);
    let (fail, result) = (a.new_dynamic_label(), a.new_dynamic_label());
    dynasm!(a ; .arch x64
        ; mov rdx, QWORD [rdi + RESERVATION_HELD]
        ; mov QWORD [rdi + RESERVATION_HELD], 0
        ; test rdx, rdx
        ; jz =>fail
        ; cmp rax, QWORD [rdi + RESERVATION_OFF]
        ; jne =>fail
    );
    get_rcx(a, l, i.rs2);
    dynasm!(a ; .arch x64
        ; lea rsi, [rbx + rax]
        ; mov rax, QWORD [rdi + RESERVATION_VALUE]
    );
    if word {
        dynasm!(a ; .arch x64 ; lock cmpxchg DWORD [rsi], ecx);
    } else {
        dynasm!(a ; .arch x64 ; lock cmpxchg QWORD [rsi], rcx);
    }
    dynasm!(a ; .arch x64
        ; jne =>fail
        ; xor ecx, ecx
        ; jmp =>result
        ; =>fail
        ; mov ecx, 1
        ; =>result
    );
    atomic_result(a, l, i, done);
}

fn csr(op: Op) -> bool {
    use Op::*;
    matches!(op, Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci)
}

/// Whether `i` is a CSR instruction that writes the CSR (Zicsr: all but CSRRS/CSRRC with
/// `rs1` = x0 and CSRRSI/CSRRCI with `uimm` = 0).
pub(super) fn csr_write(i: &Insn) -> bool {
    csr(i.op) && (matches!(i.op, Op::Csrrw | Op::Csrrwi) || i.rs1 != 0)
}

/// Whether the CSR instruction `i` ends its block, after it: a write, unless it is a write
/// of `sstatus` (with V=1 `vsstatus`) in a block that is not monitored. Such a write
/// changes nothing a block depends on (`Hart::csr_write_ends_chunk`: SUM and MXR reach the
/// TLB context, which each translated access reads, at once; each translated F/D
/// instruction checks FS itself), so the block goes on after it unless the write ended the
/// chunk (an interrupt now pending and enabled, or one posted by another hart):
/// [`emit_csr`]. Linux's interrupt masking and unmasking (`csrci`/`csrrci`/`csrs` of
/// SIE) is most of a boot's CSR writes. A monitored block still ends there, as the
/// interpreter's monitoring variants see the write's new translation tags at the next fetch.
pub(super) fn csr_ends_block(i: &Insn, monitored: bool) -> bool {
    csr_write(i) && (monitored || csr_number(i) != vcpu_api::csr::SSTATUS)
}

/// The CSR number of the CSR instruction `i`.
fn csr_number(i: &Insn) -> u16 {
    (i.imm as u32 & 0xfff) as u16
}

/// Whether `op` ends a block (it sets pc itself).
pub(super) fn terminal(op: Op) -> bool {
    use Op::*;
    matches!(op, Jal | Jalr | Beq | Bne | Blt | Bge | Bltu | Bgeu)
}

/// A conditional branch that may be a block's *side exit*: it leaves the block when taken
/// and lets the block go on when not (`super::Hart::jit_plan` decides). Only forward
/// branches: a backward one usually closes a loop, which is taken, and which ending its
/// block keeps a loop in one block ([`assemble`]).
pub(super) fn side_exit(i: &Insn) -> bool {
    use Op::*;
    matches!(i.op, Beq | Bne | Blt | Bge | Bltu | Bgeu) && i.imm > 0
}

/// Jump to `taken` if the flags of [`compare`] say that the conditional branch `op` is taken.
fn jump_if_taken(a: &mut Asm, op: Op, taken: DynamicLabel) {
    use Op::*;
    match op {
        Beq => dynasm!(a ; .arch x64 ; je =>taken),
        Bne => dynasm!(a ; .arch x64 ; jne =>taken),
        Blt => dynasm!(a ; .arch x64 ; jl =>taken),
        Bge => dynasm!(a ; .arch x64 ; jge =>taken),
        Bltu => dynasm!(a ; .arch x64 ; jb =>taken),
        _ => dynasm!(a ; .arch x64 ; jae =>taken),
    }
}

/// Assemble `plan` for execution at address `base`.
///
/// Protocol (see the module documentation): the block first checks its code bytes (else it
/// returns its own address: stale), then takes its instruction count from the budget in r12
/// (else it returns 0 with nothing done), runs, stores the pc to continue
/// at and returns 0, or continues in a linked block without storing it (`Hart::pc` is only
/// up to date where a block returns: every return stores it). An instruction left to the
/// interpreter midway gives back the budget of the instructions not done.
///
/// A loop in one block carries the registers its iteration leaves in the register cache
/// (`super::emit`) to the next one in their host registers: they are loaded on the way in,
/// and the jump back goes to the budget check after that, reloading only what is not where
/// the head expects it. The values still go to the hart as always; what the next iteration
/// no longer does is wait for a store of one to be read back from memory. Which registers
/// those are is learnt from a first assembly of the block.
///
/// The code is left in `s.code`; `None` if the assembler refused it.
pub(super) fn assemble<'s>(
    s: &'s mut Scratch,
    base: usize,
    plan: &Plan,
    l: &Layout,
) -> Option<Assembled<'s>> {
    let back = assemble_carrying(s, base, plan, l, &[])?;
    if let Some(carried) = back.filter(|c| !c.is_empty()) {
        if assemble_carrying(s, base, plan, l, &carried).is_none() {
            assemble_carrying(s, base, plan, l, &[])?;
        }
    }
    Some(Assembled {
        code: &mut s.code,
        ctr_sites: &s.ctr_sites,
    })
}

/// A block's code as [`assemble`] leaves it: the numbers of its CTR record sites still to
/// be filled in (`(offset of the 32-bit immediate, source, info)`: `ctr::log::CtrLog::site`).
pub(super) struct Assembled<'s> {
    pub(super) code: &'s mut [u8],
    pub(super) ctr_sites: &'s [(usize, u64, u64)],
}

/// Registers a loop carries from one iteration to the next: `(host, guest)`.
type Carried = Vec<(u8, u8)>;

/// [`assemble`] with a loop carrying `carried` (`(host, guest)` registers); also returns
/// what the register cache held clean at the jump back, if the block loops.
fn assemble_carrying(
    s: &mut Scratch,
    base: usize,
    plan: &Plan,
    l: &Layout,
    carried: &[(u8, u8)],
) -> Option<Option<Carried>> {
    let a = &mut s.asm;
    let lists = &mut s.lists;
    a.begin(l.x);
    let entry = a.new_dynamic_label();
    let invalid = a.new_dynamic_label();
    let out = a.new_dynamic_label();
    // A loop in one block: its closing JAL or branch goes back to its first instruction.
    let loops = plan.insns.last().is_some_and(|&(pc, ref i)| {
        i.op != Op::Jalr && terminal(i.op) && pc.wrapping_add(i.imm as i64 as u64) == start_pc(plan)
    });
    let (checked, again) = (a.new_dynamic_label(), a.new_dynamic_label());
    let mut links = Exits {
        slots: std::mem::take(&mut lists.slots),
        head: loops.then(|| (start_pc(plan), again)),
        carried: std::mem::take(&mut lists.carried),
        back: None,
        ctr_sites: std::mem::take(&mut lists.sites),
    };
    links.slots.clear();
    links.carried.clear();
    links.carried.extend_from_slice(carried);
    links.ctr_sites.clear();
    // The block's code: RAM offset.
    let code_off = (plan.code_host as u64).wrapping_sub(l.ram_host);
    dynasm!(a ; .arch x64 ; =>entry);
    // The block's code is known intact while its epoch slot holds the hart's code epoch
    // (`super::guard`); otherwise it is compared at `recheck`. A block on a mixed page (no
    // slot) compares it here, at every entry.
    // The epoch is in rbp (`super::vcpu_jit_enter`, and after each helper call: [`call`]).
    let (epoch, slot) = (l.code_epoch, plan.epoch_slot as i64);
    let guarded = slot != 0;
    let recheck = a.new_dynamic_label();
    if guarded {
        // The slot is in a page of the code region: `cmp [rip + disp32], rbp` (REX.W 39 /r,
        // ModRM 00 101 101: 7 bytes) where it is in reach, as in a region of up to 2 GiB.
        let after = base as i64 + a.offset().0 as i64 + 7;
        match i32::try_from((plan.epoch_slot_exec as i64).wrapping_sub(after)) {
            Ok(disp) if plan.epoch_slot_exec != 0 => {
                a.extend([0x48, 0x39, 0x2d]);
                a.extend(disp.to_le_bytes());
            }
            _ => dynasm!(a ; .arch x64
                ; mov rdx, QWORD slot
                ; cmp QWORD [rdx], rbp
            ),
        }
        dynasm!(a ; .arch x64 ; jne =>recheck);
    } else {
        emit_code_check(a, plan, code_off, invalid);
    }
    let n = plan.insns.len() as u32;
    let nn = n as i32;
    // Take the block's instructions from the budget (in r12: `super::vcpu_jit_enter`); a
    // borrow (fewer left) undoes it at `out`.
    dynasm!(a ; .arch x64 ; =>checked);
    a.carry(carried);
    a.join(again);
    dynasm!(a ; .arch x64
        ; sub r12, nn
        ; jb =>out
    );
    // A monitored block whose cycles must fit before a counter of cycles can wrap takes
    // the most it can add from the room left (`MonitorView::cycle_room`); if they do not
    // fit, it leaves for the dispatcher, as when the budget runs out.
    let cycles_out = a.new_dynamic_label();
    let cycles = plan.cycles as i32;
    let check_cycles = plan.monitored && l.cycles_checked;
    if check_cycles {
        let room = models(l).cycle_room;
        dynasm!(a ; .arch x64
            ; sub QWORD [rdi + room], cycles
            ; jb =>cycles_out
        );
    }
    let page = start_pc(plan) >> 12;
    // The block's code: first pc and length in bytes.
    let start = plan.insns[0].0;
    let bytes = plan.end_pc.wrapping_sub(start);
    let mut bails = std::mem::take(&mut lists.bails);
    let mut rewrites = std::mem::take(&mut lists.rewrites);
    let mut slows = std::mem::take(&mut lists.slows);
    let mut sides = std::mem::take(&mut lists.sides);
    bails.clear();
    rewrites.clear();
    slows.clear();
    sides.clear();
    // Monitored blocks report the fetch of their page (the ITLB model) once an instruction
    // has retired: after the first one, or before it when it is the closing jump or branch
    // (which cannot trap), or on the way out of a first store that rewrites the block.
    let monitored = plan.monitored;
    let fetch = |a: &mut Asm| monitor_fetch(a, l, start_pc(plan));
    let mut fp = FloatState::default();
    // Chains (`Chain`) from each access to the next, across instructions that keep them
    // ([`keeps_chain`]); in a monitored block not from the first instruction, whose fetch
    // report comes between. `chains[k]`: the chain from access k, and the access it leads
    // to.
    let mut chains: [Option<(Chain, usize)>; super::MAX_INSNS] = [None; super::MAX_INSNS];
    for (j, (_, first)) in plan.insns.iter().enumerate() {
        if !is_memory(first.op) || (monitored && j == 0) {
            continue;
        }
        for (m, (_, next)) in plan.insns.iter().enumerate().skip(j + 1) {
            if is_memory(next.op) {
                chains[j] = Chain::between(first, next).map(|c| (c, m));
                break;
            }
            if !keeps_chain(next, first.rs1) {
                break;
            }
        }
    }
    let mut chained_from: [Option<Chain>; super::MAX_INSNS] = [None; super::MAX_INSNS];
    for &(c, m) in chains.iter().flatten() {
        chained_from[m] = Some(c);
    }
    let mut misses = std::mem::take(&mut lists.misses);
    misses.clear();
    // Where each guest register is read next, from each instruction on (the register
    // cache's choice of register to reuse: `super::emit::RegCache::victim`).
    let mut next_read = [[NOT_READ; 32]; super::MAX_INSNS];
    let mut next = [NOT_READ; 32];
    for (k, (_, i)) in plan.insns.iter().enumerate().rev() {
        for r in [i.rs1, i.rs2] {
            next[r as usize & 31] = k as u8;
        }
        if let Some(row) = next_read.get_mut(k) {
            *row = next;
        }
    }
    for (k, &(pc, ref i)) in plan.insns.iter().enumerate() {
        if let Some(row) = next_read.get(k) {
            a.cache.set_ahead(row);
        }
        // Only the straight-line integer instructions (`emit_straight`) and the integer
        // loads and stores (whose ways out write what is pending) work with results not
        // yet in the hart; everything else may read the hart, call, jump or leave.
        let lazy = is_memory(i.op);
        // A side exit (`side_exit`) leaves them unwritten too: its way out writes them.
        let side = terminal(i.op) && k + 1 < plan.insns.len();
        if !straight(i.op) && !side {
            a.flush();
        }
        // What a way out before this instruction retires must write (only loads and
        // stores leave anything unwritten).
        let pending = if lazy {
            a.cache.pending()
        } else {
            Pending::default()
        };
        if side {
            // A side exit (`side_exit`): the taken branch leaves at its label (below), which
            // writes the values still unwritten here; the block goes on with them cached.
            debug_assert!(side_exit(i) && !monitored);
            compare(a, l, i.rs1, i.rs2);
            let pending = a.cache.pending();
            let taken = a.new_dynamic_label();
            a.side_exits(true);
            jump_if_taken(a, i.op, taken);
            a.side_exits(false);
            let target = pc.wrapping_add(i.imm as i64 as u64);
            sides.push((taken, pc, target, n - k as u32 - 1, pending));
            continue;
        } else if terminal(i.op) {
            if monitored && k == 0 {
                fetch(a);
            }
            emit_terminal(a, l, pc, i, page, monitored, &mut links);
            continue;
        } else if is_memory(i.op) || float_memory(i.op) {
            let bail = a.new_dynamic_label();
            bails.push((bail, pc, n - k as u32, pending));
            if float_memory(i.op) {
                fp.check(a, l, bail);
            }
            // A store into this block's code leaves the block after it, so that the next
            // instruction is fetched again (as the interpreter does). A guarded block's page
            // is protected while it runs (`super::guard`): such a store misses the store
            // TLB, and a store that takes the slow path leaves the block whatever it wrote,
            // when code follows it (or in a loop, whose jump back skips the check at entry).
            // On a mixed page the store compares its RAM offset with the rest of the block
            // (in a loop: with all of it).
            let next = pc.wrapping_add(i.len as u64);
            let rest = bytes - next.wrapping_sub(start);
            let store = is_store(i.op);
            let rewrite = (store && (rest > 0 || loops)).then(|| {
                let label = a.new_dynamic_label();
                rewrites.push((label, next, n - k as u32 - 1, k == 0, pending));
                let range = if guarded {
                    None
                } else if loops {
                    Some((code_off, bytes))
                } else {
                    Some((code_off + (next - start), rest))
                };
                (range, label)
            });
            let chain = (chained_from[k], chains[k].map(|(c, _)| c));
            a.side_exits(lazy);
            emit_memory(
                a,
                l,
                i,
                bail,
                rewrite,
                monitored,
                &mut slows,
                chain,
                &mut misses,
            );
            a.side_exits(false);
            if matches!(i.op, Op::Flw | Op::Fld) {
                fp.dirty(a, l);
            }
        } else if float_op(i.op) {
            let bail = a.new_dynamic_label();
            bails.push((bail, pc, n - k as u32, pending));
            emit_float(a, l, i, bail, &mut fp);
        } else if muldiv(i.op) {
            emit_muldiv(a, l, i);
            if monitored {
                // The cost model's extra cycles (`Hart::pmu_cycles`, as the interpreter's
                // monitoring variants add them).
                use crate::pmu::model::Cost;
                let cycles = tally(l, crate::pmu::events::Event::Cycles);
                let cost = if i.op == Op::Mulhsu {
                    Cost::MUL
                } else {
                    Cost::DIV
                } as i32;
                dynasm!(a ; .arch x64 ; add QWORD [rdi + cycles], cost);
            }
        } else if atomic(i.op) {
            let bail = a.new_dynamic_label();
            bails.push((bail, pc, n - k as u32, pending));
            // In a block that is not monitored, inline where the TLB has the page
            // (`emit_lr`, `emit_sc`, `emit_amo`); the helper does the rest, and the
            // atomics of monitored blocks.
            let done = (!monitored).then(|| {
                let (slow, done) = (a.new_dynamic_label(), a.new_dynamic_label());
                match i.op {
                    Op::Lr => emit_lr(a, l, i, slow, done),
                    Op::Sc => emit_sc(a, l, i, slow, done),
                    _ => emit_amo(a, l, i, slow, done),
                }
                dynasm!(a ; .arch x64 ; =>slow);
                done
            });
            let (lo, hi) = pack(i);
            dynasm!(a ; .arch x64
                ; mov rsi, QWORD lo as i64
                ; mov rdx, QWORD hi as i64
            );
            call(a, l.atomic_helper);
            dynasm!(a ; .arch x64 ; test eax, eax ; jnz =>bail);
            if let Some(done) = done {
                // The helper's call emptied the register cache: so does the inline path,
                // which wrote x[rd] to the hart (a cached copy of it would be stale).
                dynasm!(a ; .arch x64 ; =>done);
            }
            if atomic_write(i.op) {
                // It retired: the block's fetch report comes before the exit.
                if monitored && k == 0 {
                    fetch(a);
                }
                let next = pc.wrapping_add(i.len as u64);
                exit_to(a, l, next, Next::to(next, page), &mut links);
            }
        } else if csr(i.op) {
            let bail = a.new_dynamic_label();
            bails.push((bail, pc, n - k as u32, pending));
            let first = (monitored && k == 0).then(|| start_pc(plan));
            emit_csr(
                a,
                l,
                pc,
                i,
                bail,
                n - k as u32,
                first,
                monitored,
                &mut links,
            );
        } else if l.pause_helper != 0 && i.op == Op::Fence && i.raw == crate::decode::PAUSE {
            // Pause-loop detection in the interpreter's code (`super::jit_pause`).
            a.flush();
            let undone = (n - k as u32) as i32;
            dynasm!(a ; .arch x64 ; mov esi, undone);
            store_budget(a, l);
            call(a, l.pause_helper);
        } else {
            emit_straight(a, l, pc, i);
            if monitored && matches!(i.op, Op::Mul | Op::Mulh | Op::Mulhu | Op::Mulw) {
                let cycles = tally(l, crate::pmu::events::Event::Cycles);
                let cost = crate::pmu::model::Cost::MUL as i32;
                dynasm!(a ; .arch x64 ; add QWORD [rdi + cycles], cost);
            }
        }
        if monitored && k == 0 {
            // The fetch report's code has labels: nothing may be left unwritten.
            a.flush();
            fetch(a);
        }
    }
    a.flush();
    if !plan.insns.last().is_some_and(|(_, i)| terminal(i.op)) {
        exit_to(a, l, plan.end_pc, Next::to(plan.end_pc, page), &mut links);
    }
    // Side exits: the values the branch found unwritten go to the hart, and the
    // instructions after the branch give their budget back before the
    // branch's CTR record (whose clock is the budget left) and the exit. A side exit to the
    // block's own start is an ordinary linked exit, not a loop's jump back: the
    // registers a loop carries are those of its closing branch.
    let head = links.head.take();
    for &(label, pc, target, undone, pending) in &sides {
        dynasm!(a ; .arch x64 ; =>label);
        a.write_back(&pending);
        if undone != 0 {
            dynasm!(a ; .arch x64 ; add r12, undone as i32);
        }
        let taken = Transfer {
            ctr: Some((pc, crate::ctr::ty::TAKEN_BRANCH)),
            pmu: None,
        };
        exit_recording(a, l, target, Next::to(target, page), taken, &mut links);
    }
    links.head = head;
    for slow in &slows {
        emit_slow_path(a, l, slow);
    }
    for miss in &misses {
        emit_chain_miss(a, l, miss);
    }
    // A rewriting store has retired (the monitor hears of it here); a bail has not. Both
    // write the values their load or store found unwritten.
    let ways_out = bails
        .iter()
        .map(|&(label, pc, undone, pending)| (label, pc, undone, None, pending));
    let after_rewrites = rewrites
        .iter()
        .map(|&(label, pc, undone, first, pending)| (label, pc, undone, Some(first), pending));
    for (label, pc, undone, rewrote, pending) in ways_out.chain(after_rewrites) {
        let undone = undone as i32;
        dynasm!(a ; .arch x64 ; =>label);
        a.write_back(&pending);
        if monitored {
            if let Some(first) = rewrote {
                monitor_access(a, l, true);
                if first {
                    fetch(a);
                }
            }
        }
        dynasm!(a ; .arch x64 ; add r12, undone);
        exit_to(a, l, pc, Next::Dispatcher, &mut links);
    }
    if guarded {
        // The code bytes the block was translated from must still be there; then its page
        // is protected again and its slot takes the epoch (`super::jit_code_checked`).
        dynasm!(a ; .arch x64 ; =>recheck);
        emit_code_check(a, plan, code_off, invalid);
        // A block lies in one page: while it is still protected, the slot takes the epoch
        // here; otherwise the helper protects it again (or finds it mixed: stale).
        let page = code_off >> 12;
        let protect = a.new_dynamic_label();
        let (word, bit) = ((8 * (page / 64)) as i32, (page % 64) as i8);
        dynasm!(a ; .arch x64
            ; mov rdx, QWORD l.guard_bits as i64
            ; bt QWORD [rdx + word], bit
            ; jnc =>protect
            ; mov rax, QWORD [rdi + epoch]
            ; mov rdx, QWORD slot
            ; mov QWORD [rdx], rax
            ; jmp =>checked
            ; =>protect
            ; mov rsi, QWORD slot
            ; mov rdx, QWORD page as i64
        );
        call(a, l.checked_helper);
        dynasm!(a ; .arch x64
            ; test eax, eax
            ; jnz =>invalid
            ; jmp =>checked
        );
    }
    // Both return to the dispatcher before the block's first instruction; a block linked
    // to this one did not store its pc (`exit_recording`).
    if check_cycles {
        let room = models(l).cycle_room;
        dynasm!(a ; .arch x64
            ; =>cycles_out
            ; add QWORD [rdi + room], cycles
        );
    }
    dynasm!(a ; .arch x64
        ; =>out
        ; add r12, nn
    );
    store_pc(a, l, start_pc(plan));
    dynasm!(a ; .arch x64
        ; xor eax, eax
        ; ret
        ; =>invalid
    );
    store_pc(a, l, start_pc(plan));
    dynasm!(a ; .arch x64
        ; lea rax, [=>entry]
        ; ret
    );
    *lists = Lists {
        slots: Vec::new(),
        carried: std::mem::take(&mut links.carried),
        sites: Vec::new(),
        bails,
        rewrites,
        slows,
        misses,
        sides,
    };
    if a.finish(&mut s.code).is_err() {
        s.asm = Scratch::default().asm;
        return None;
    }
    for &(at, stub) in &links.slots {
        s.code[at..at + 8].copy_from_slice(&((base + stub) as u64).to_le_bytes());
    }
    s.ctr_sites.clear();
    s.ctr_sites.extend_from_slice(&links.ctr_sites);
    s.lists.slots = links.slots;
    s.lists.sites = links.ctr_sites;
    Some(links.back)
}

/// The block's code bytes must still be what it was translated from; else `invalid`.
/// `code_off`: the RAM offset of the block's first byte, reached from rbx (the RAM's host
/// address) when it fits in a displacement.
// dynasm's dynamic registers expand to `.into()` conversions.
#[allow(clippy::useless_conversion)]
fn emit_code_check(a: &mut Asm, plan: &Plan, code_off: u64, invalid: DynamicLabel) {
    let last = code_off + plan.check.last().map_or(0, |c| u64::from(c.0));
    let (reg, base) = if i32::try_from(last + 8).is_ok() {
        (RBX, code_off as i32)
    } else {
        let host = plan.code_host as i64;
        dynasm!(a ; .arch x64 ; mov rdx, QWORD host);
        (RDX, 0)
    };
    for &(o, size, v) in &plan.check {
        let o = base + o as i32;
        match size {
            8 => dynasm!(a ; .arch x64
                ; mov rax, QWORD v as i64
                ; cmp QWORD [Rq(reg) + o], rax
                ; jne =>invalid
            ),
            4 => dynasm!(a ; .arch x64
                ; cmp DWORD [Rq(reg) + o], v as u32 as i32
                ; jne =>invalid
            ),
            _ => dynasm!(a ; .arch x64
                ; cmp WORD [Rq(reg) + o], v as u16 as i16
                ; jne =>invalid
            ),
        }
    }
}

/// The guest address of the block's first instruction.
fn start_pc(plan: &Plan) -> u64 {
    plan.insns[0].0
}

fn emit_straight(a: &mut Asm, l: &Layout, pc: u64, i: &Insn) {
    use Op::*;
    if i.rd == X0_SINK || i.op == Fence {
        return; // no architectural effect (a hint or FENCE, a no-op on this hart)
    }
    if emit_alu(a, l, pc, i) || emit_compare_or_high(a, l, i) {
        return;
    }
    let imm = i.imm;
    match i.op {
        Lui => {
            let v = imm as i64;
            dynasm!(a ; .arch x64 ; mov rax, QWORD v);
        }
        Auipc => {
            let v = pc.wrapping_add(imm as i64 as u64) as i64;
            dynasm!(a ; .arch x64 ; mov rax, QWORD v);
        }
        Addi | Xori | Ori | Andi | Slli | Srli | Srai | Addiw | Slliw | Srliw | Sraiw => {
            get_rax(a, l, i.rs1);
            let sh = (imm & 63) as i8;
            let shw = (imm & 31) as i8;
            match i.op {
                Addi => dynasm!(a ; .arch x64 ; add rax, imm),
                Xori => dynasm!(a ; .arch x64 ; xor rax, imm),
                Ori => dynasm!(a ; .arch x64 ; or rax, imm),
                Andi => dynasm!(a ; .arch x64 ; and rax, imm),
                Slli => dynasm!(a ; .arch x64 ; shl rax, sh),
                Srli => dynasm!(a ; .arch x64 ; shr rax, sh),
                Srai => dynasm!(a ; .arch x64 ; sar rax, sh),
                Addiw => dynasm!(a ; .arch x64 ; add eax, imm ; movsxd rax, eax),
                Slliw => dynasm!(a ; .arch x64 ; shl eax, shw ; movsxd rax, eax),
                Srliw => dynasm!(a ; .arch x64 ; shr eax, shw ; movsxd rax, eax),
                _ => dynasm!(a ; .arch x64 ; sar eax, shw ; movsxd rax, eax),
            }
        }
        Slti | Sltiu => {
            get_rax(a, l, i.rs1);
            dynasm!(a ; .arch x64 ; xor edx, edx ; cmp rax, imm);
            if i.op == Slti {
                dynasm!(a ; .arch x64 ; setl dl);
            } else {
                dynasm!(a ; .arch x64 ; setb dl);
            }
            dynasm!(a ; .arch x64 ; mov rax, rdx);
        }
        _ => {
            get_rax(a, l, i.rs1);
            get_rcx(a, l, i.rs2);
            match i.op {
                Add => dynasm!(a ; .arch x64 ; add rax, rcx),
                Sub => dynasm!(a ; .arch x64 ; sub rax, rcx),
                Xor => dynasm!(a ; .arch x64 ; xor rax, rcx),
                Or => dynasm!(a ; .arch x64 ; or rax, rcx),
                And => dynasm!(a ; .arch x64 ; and rax, rcx),
                Sll => dynasm!(a ; .arch x64 ; shl rax, cl),
                Srl => dynasm!(a ; .arch x64 ; shr rax, cl),
                Sra => dynasm!(a ; .arch x64 ; sar rax, cl),
                Slt => {
                    dynasm!(a ; .arch x64 ; xor edx, edx ; cmp rax, rcx ; setl dl ; mov rax, rdx)
                }
                Sltu => {
                    dynasm!(a ; .arch x64 ; xor edx, edx ; cmp rax, rcx ; setb dl ; mov rax, rdx)
                }
                Addw => dynasm!(a ; .arch x64 ; add eax, ecx ; movsxd rax, eax),
                Subw => dynasm!(a ; .arch x64 ; sub eax, ecx ; movsxd rax, eax),
                Sllw => dynasm!(a ; .arch x64 ; shl eax, cl ; movsxd rax, eax),
                Srlw => dynasm!(a ; .arch x64 ; shr eax, cl ; movsxd rax, eax),
                Sraw => dynasm!(a ; .arch x64 ; sar eax, cl ; movsxd rax, eax),
                Mul => dynasm!(a ; .arch x64 ; imul rax, rcx),
                Mulw => dynasm!(a ; .arch x64 ; imul eax, ecx ; movsxd rax, eax),
                Mulh => dynasm!(a ; .arch x64 ; imul rcx ; mov rax, rdx),
                Mulhu => dynasm!(a ; .arch x64 ; mul rcx ; mov rax, rdx),
                op => unreachable!("{op:?} is not a straight-line op"),
            }
        }
    }
    if i.rd < 32 {
        put_unwritten(a, RAX, i.rd);
    }
}

/// Where an instruction finds a guest register's value.
#[derive(Clone, Copy, PartialEq)]
enum Src {
    /// x0.
    Zero,
    /// A host register caching it (`super::emit`).
    Host(u8),
    /// Only in the hart, at this displacement.
    Mem(i32),
}

fn src(a: &Asm, l: &Layout, r: u8) -> Src {
    if r == 0 {
        Src::Zero
    } else if let Some(h) = a.cache.find(r) {
        Src::Host(h)
    } else {
        Src::Mem(xd(l, r))
    }
}

/// Set the host flags as `cmp x[rs1], x[rs2]` does, reading cached registers in place.
// dynasm's dynamic registers expand to `.into()` conversions.
#[allow(clippy::useless_conversion)]
fn compare(a: &mut Asm, l: &Layout, rs1: u8, rs2: u8) {
    let first = match src(a, l, rs1) {
        Src::Host(x) => x,
        _ => {
            get_rax(a, l, rs1);
            RAX
        }
    };
    match src(a, l, rs2) {
        Src::Zero => dynasm!(a ; .arch x64 ; cmp Rq(first), 0),
        Src::Host(y) => dynasm!(a ; .arch x64 ; cmp Rq(first), Rq(y)),
        Src::Mem(d) => dynasm!(a ; .arch x64 ; cmp Rq(first), QWORD [rdi + d]),
    }
}

/// The common integer instructions computed straight into the host register that caches
/// their destination (`super::emit`), which then holds x[rd] until `Emitter::flush` writes
/// it to the hart, with no copies through rax and rcx. Returns false (nothing emitted) for
/// the others, and where the destination's host register holds the second operand of an
/// operation other than ADD, SUB, XOR, OR, AND, MUL and their word forms, which computing
/// into it would overwrite first.
// dynasm's dynamic registers expand to `.into()` conversions.
#[allow(clippy::useless_conversion)]
fn emit_alu(a: &mut Asm, l: &Layout, pc: u64, i: &Insn) -> bool {
    use Op::*;
    let (reg_reg, reg_imm) = (alu_reg_reg(i.op), alu_reg_imm(i.op));
    if !(reg_reg || reg_imm || matches!(i.op, Lui | Auipc)) || i.rd == 0 || i.rd >= 32 {
        return false;
    }
    let h = a.cache.peek(i.rd);
    let s2 = if reg_reg { src(a, l, i.rs2) } else { Src::Zero };
    // The destination's host register holds the second operand: the operands swapped where
    // the operation commutes, and SUB as the negated second operand plus the first.
    let swapped = s2 == Src::Host(h) && i.rs1 != i.rs2;
    if swapped && !matches!(i.op, Add | Xor | Or | And | Mul | Addw | Mulw | Sub | Subw) {
        return false;
    }
    let (s1, s2) = if swapped {
        (s2, src(a, l, i.rs1))
    } else {
        (src(a, l, i.rs1), s2)
    };
    let h = a.assign(i.rd);
    let imm = i.imm;
    // An immediate form on x0 (LI, and the like) is a constant: 0 op imm.
    if reg_imm && s1 == Src::Zero {
        let v = match i.op {
            Addi | Xori | Ori | Addiw => imm,
            _ => 0, // ANDI and the shifts of 0
        };
        if v == 0 {
            dynasm!(a ; .arch x64 ; xor Rd(h), Rd(h));
        } else {
            dynasm!(a ; .arch x64 ; mov Rq(h), v);
        }
        a.set_dirty(h, true);
        return true;
    }
    match i.op {
        Lui | Auipc => {
            let v = if i.op == Lui {
                imm as i64
            } else {
                pc.wrapping_add(imm as i64 as u64) as i64
            };
            dynasm!(a ; .arch x64 ; mov Rq(h), QWORD v);
        }
        _ => match s1 {
            Src::Zero => dynasm!(a ; .arch x64 ; xor Rd(h), Rd(h)),
            Src::Host(x) if x == h => {}
            Src::Host(x) => dynasm!(a ; .arch x64 ; mov Rq(h), Rq(x)),
            Src::Mem(d) => dynasm!(a ; .arch x64 ; mov Rq(h), QWORD [rdi + d]),
        },
    }
    let (sh, shw) = ((imm & 63) as i8, (imm & 31) as i8);
    // h = -x[rs2]: then x[rs1] is added.
    let op = match i.op {
        Sub if swapped => {
            dynasm!(a ; .arch x64 ; neg Rq(h));
            Add
        }
        Subw if swapped => {
            dynasm!(a ; .arch x64 ; neg Rd(h));
            Addw
        }
        op => op,
    };
    match (op, s2) {
        (Lui | Auipc, _) => {}
        (Addi, _) => dynasm!(a ; .arch x64 ; add Rq(h), imm),
        (Xori, _) => dynasm!(a ; .arch x64 ; xor Rq(h), imm),
        (Ori, _) => dynasm!(a ; .arch x64 ; or Rq(h), imm),
        (Andi, _) => dynasm!(a ; .arch x64 ; and Rq(h), imm),
        (Slli, _) => dynasm!(a ; .arch x64 ; shl Rq(h), sh),
        (Srli, _) => dynasm!(a ; .arch x64 ; shr Rq(h), sh),
        (Srai, _) => dynasm!(a ; .arch x64 ; sar Rq(h), sh),
        (Addiw, _) => dynasm!(a ; .arch x64 ; add Rd(h), imm),
        (Slliw, _) => dynasm!(a ; .arch x64 ; shl Rd(h), shw),
        (Srliw, _) => dynasm!(a ; .arch x64 ; shr Rd(h), shw),
        (Sraiw, _) => dynasm!(a ; .arch x64 ; sar Rd(h), shw),
        // x op 0 is x for these, and 0 for AND and MUL.
        (Add | Sub | Xor | Or | Addw | Subw, Src::Zero) => {}
        (And | Mul | Mulw, Src::Zero) => dynasm!(a ; .arch x64 ; xor Rd(h), Rd(h)),
        (Add, Src::Host(x)) => dynasm!(a ; .arch x64 ; add Rq(h), Rq(x)),
        (Sub, Src::Host(x)) => dynasm!(a ; .arch x64 ; sub Rq(h), Rq(x)),
        (Xor, Src::Host(x)) => dynasm!(a ; .arch x64 ; xor Rq(h), Rq(x)),
        (Or, Src::Host(x)) => dynasm!(a ; .arch x64 ; or Rq(h), Rq(x)),
        (And, Src::Host(x)) => dynasm!(a ; .arch x64 ; and Rq(h), Rq(x)),
        (Mul, Src::Host(x)) => dynasm!(a ; .arch x64 ; imul Rq(h), Rq(x)),
        (Addw, Src::Host(x)) => dynasm!(a ; .arch x64 ; add Rd(h), Rd(x)),
        (Subw, Src::Host(x)) => dynasm!(a ; .arch x64 ; sub Rd(h), Rd(x)),
        (Mulw, Src::Host(x)) => dynasm!(a ; .arch x64 ; imul Rd(h), Rd(x)),
        (Add, Src::Mem(d)) => dynasm!(a ; .arch x64 ; add Rq(h), QWORD [rdi + d]),
        (Sub, Src::Mem(d)) => dynasm!(a ; .arch x64 ; sub Rq(h), QWORD [rdi + d]),
        (Xor, Src::Mem(d)) => dynasm!(a ; .arch x64 ; xor Rq(h), QWORD [rdi + d]),
        (Or, Src::Mem(d)) => dynasm!(a ; .arch x64 ; or Rq(h), QWORD [rdi + d]),
        (And, Src::Mem(d)) => dynasm!(a ; .arch x64 ; and Rq(h), QWORD [rdi + d]),
        (Mul, Src::Mem(d)) => dynasm!(a ; .arch x64 ; imul Rq(h), QWORD [rdi + d]),
        (Addw, Src::Mem(d)) => dynasm!(a ; .arch x64 ; add Rd(h), DWORD [rdi + d]),
        (Subw, Src::Mem(d)) => dynasm!(a ; .arch x64 ; sub Rd(h), DWORD [rdi + d]),
        (Mulw, Src::Mem(d)) => dynasm!(a ; .arch x64 ; imul Rd(h), DWORD [rdi + d]),
        (op, _) => unreachable!("{op:?} is not one of emit_alu's"),
    }
    if matches!(i.op, Addiw | Slliw | Srliw | Sraiw | Addw | Subw | Mulw) {
        dynasm!(a ; .arch x64 ; movsxd Rq(h), Rd(h));
    }
    // Written to the hart by `Emitter::flush`, or when h is reused. (In monitored blocks
    // too: their reports between instructions read no guest register, and the one with
    // labels, the fetch report, comes after a flush.)
    a.set_dirty(h, true);
    true
}

/// SLT, SLTU, SLTI, SLTIU, MULH and MULHU with no x0 operand, their result put straight
/// into the host register that caches the destination (as [`emit_alu`] does): the flags
/// or rdx:rax first, from the operands where they are, then the destination. Returns false
/// (nothing emitted) for the others.
// dynasm's dynamic registers expand to `.into()` conversions.
#[allow(clippy::useless_conversion)]
fn emit_compare_or_high(a: &mut Asm, l: &Layout, i: &Insn) -> bool {
    use Op::*;
    let imm_form = matches!(i.op, Slti | Sltiu);
    if !matches!(i.op, Slt | Sltu | Slti | Sltiu | Mulh | Mulhu)
        || i.rd == 0
        || i.rd >= 32
        || i.rs1 == 0
        || (!imm_form && i.rs2 == 0)
    {
        return false;
    }
    let s1 = src(a, l, i.rs1);
    let imm = i.imm;
    match i.op {
        Mulh | Mulhu => {
            get_rax(a, l, i.rs1);
            match (i.op, src(a, l, i.rs2)) {
                (Mulh, Src::Host(y)) => dynasm!(a ; .arch x64 ; imul Rq(y)),
                (Mulh, Src::Mem(d)) => dynasm!(a ; .arch x64 ; imul QWORD [rdi + d]),
                (_, Src::Host(y)) => dynasm!(a ; .arch x64 ; mul Rq(y)),
                (_, Src::Mem(d)) => dynasm!(a ; .arch x64 ; mul QWORD [rdi + d]),
                (_, Src::Zero) => unreachable!("x0 operands are left to emit_straight"),
            }
            let h = a.assign(i.rd);
            dynasm!(a ; .arch x64 ; mov Rq(h), rdx);
            a.set_dirty(h, true);
            return true;
        }
        _ if imm_form => match s1 {
            Src::Host(x) => dynasm!(a ; .arch x64 ; cmp Rq(x), imm),
            Src::Mem(d) => dynasm!(a ; .arch x64 ; cmp QWORD [rdi + d], imm),
            Src::Zero => unreachable!("x0 operands are left to emit_straight"),
        },
        _ => match (s1, src(a, l, i.rs2)) {
            (Src::Host(x), Src::Host(y)) => dynasm!(a ; .arch x64 ; cmp Rq(x), Rq(y)),
            (Src::Host(x), Src::Mem(e)) => dynasm!(a ; .arch x64 ; cmp Rq(x), QWORD [rdi + e]),
            (Src::Mem(d), Src::Host(y)) => dynasm!(a ; .arch x64 ; cmp QWORD [rdi + d], Rq(y)),
            (Src::Mem(d), Src::Mem(e)) => dynasm!(a ; .arch x64
                ; mov rax, QWORD [rdi + d]
                ; cmp rax, QWORD [rdi + e]
            ),
            _ => unreachable!("x0 operands are left to emit_straight"),
        },
    }
    // `assign` may write the register's old value to the hart: a move, which keeps the
    // flags.
    let h = a.assign(i.rd);
    if matches!(i.op, Slt | Slti) {
        dynasm!(a ; .arch x64 ; setl Rb(h));
    } else {
        dynasm!(a ; .arch x64 ; setb Rb(h));
    }
    dynasm!(a ; .arch x64 ; movzx Rd(h), Rb(h));
    a.set_dirty(h, true);
    true
}

/// The out-of-line part of a load or store: the call to the dispatcher's slow path.
pub(super) struct SlowPath {
    slow: DynamicLabel,
    resume: DynamicLabel,
    bail: DynamicLabel,
    op: Op,
    rs2: u8,
    /// The host register caching x\[rs2\] where the access is (a store's value), if one
    /// does: it may hold a value the hart does not have yet.
    rs2_host: Option<u8>,
    /// The host register a load's value goes to (its destination's caching register), when
    /// not rcx.
    dst: Option<u8>,
    size: i32,
    /// For a store that may rewrite the rest of the block: where to go once it is done
    /// (the slow path does not know the RAM offset written, so it always leaves).
    after: Option<DynamicLabel>,
    /// In a monitored block: the address is wanted in rsi afterwards (`monitor_access`),
    /// so the call keeps it in `Hart::jit_addr` meanwhile.
    monitored: bool,
    /// A chained access follows ([`Chain`]): the RAM offset left in rax to fail its check.
    spoiler: Option<i32>,
}

/// A load or store through the TLB inline; a miss or an access that crosses its page takes
/// the slow path (`SlowPath`): a call to `jit_load`/`jit_store`, which walk the page tables
/// like the interpreter; when that faults or meets a device it jumps to `bail`, which
/// leaves the block with this instruction not executed (the interpreter then takes the trap
/// or makes the device exit).
///
/// With `rewrite`, a store that takes the slow path (every store into a protected page,
/// such as a guarded block's own: `super::guard`) jumps to its label once done; with its
/// range too (`(off, len)`: RAM bytes of a block on a mixed page), so does an inline store
/// that overlaps the range.
// dynasm's dynamic registers expand to `.into()` conversions.
#[allow(clippy::useless_conversion)]
#[allow(clippy::too_many_arguments)]
fn emit_memory(
    a: &mut Asm,
    l: &Layout,
    i: &Insn,
    bail: DynamicLabel,
    rewrite: Option<(Option<(u64, u64)>, DynamicLabel)>,
    monitored: bool,
    slows: &mut Vec<SlowPath>,
    chain: (Option<Chain>, Option<Chain>),
    misses: &mut Vec<ChainMiss>,
) {
    use Op::*;
    let size = access_size(i.op);
    let store = is_store(i.op);
    let (slow, resume) = (a.new_dynamic_label(), a.new_dynamic_label());
    let (from, to) = chain;
    // An integer load loads straight into the register that caches its destination, given
    // once the address is formed and before the first jump, so that both paths find the
    // cache as it is (a register it takes from another guest register is written to the
    // hart there; until the load that one still holds its old value, which a way out
    // writes back: `RegCache::pending`). The base's register is looked up before that (the
    // destination may be the base).
    let to_register = !store && !float_memory(i.op) && i.rd != X0_SINK;
    let rs1_host = a.cache.find(i.rs1);
    let mut dst = None;
    slows.push(SlowPath {
        slow,
        resume,
        bail,
        op: i.op,
        rs2: i.rs2,
        rs2_host: a.cache.find(i.rs2),
        dst: None,
        size,
        after: rewrite.map(|r| r.1),
        monitored,
        spoiler: to.map(Chain::spoiler),
    });
    let imm = i.imm;
    let array = if store { l.store } else { l.load };
    if let Some(c) = from {
        // Chained (`Chain`): the page of the previous access's RAM offset (rax) and of
        // this one's byte at k must be the same.
        let (full, done) = (a.new_dynamic_label(), a.new_dynamic_label());
        if to_register {
            dst = Some(a.assign(i.rd));
        }
        dynasm!(a ; .arch x64
            ; lea rdx, [rax + c.k]
            ; xor rdx, rax
            ; shr rdx, 12
            ; jnz =>full
        );
        // Only a monitored block's model probes read the address in rsi after a chained
        // access (a chain's miss forms it again from the base).
        if c.d != 0 {
            dynasm!(a ; .arch x64 ; add rax, c.d);
            if monitored {
                dynasm!(a ; .arch x64 ; add rsi, c.d);
            }
        }
        a.join(done);
        misses.push(ChainMiss {
            full,
            done,
            slow,
            rs1: i.rs1,
            rs1_host,
            imm,
            size,
            store,
        });
    } else {
        match src(a, l, i.rs1) {
            Src::Host(x) => dynasm!(a ; .arch x64 ; lea rsi, [Rq(x) + imm]),
            _ => {
                get_rsi(a, l, i.rs1);
                if imm != 0 {
                    dynasm!(a ; .arch x64 ; add rsi, imm);
                }
            }
        }
        if to_register {
            dst = Some(a.assign(i.rd));
        }
        data_lookup(a, l.data_ctx, array, size, slow);
    }
    if store {
        // The value: an F register, or an X register (straight from the host register
        // caching it, if one does).
        let value = if float_memory(i.op) {
            let d = fd(l, i.rs2);
            dynasm!(a ; .arch x64 ; mov rcx, QWORD [rdi + d]);
            RCX
        } else if let Src::Host(x) = src(a, l, i.rs2) {
            x
        } else {
            get_rcx(a, l, i.rs2);
            RCX
        };
        match size {
            1 => dynasm!(a ; .arch x64 ; mov BYTE [rbx + rax], Rb(value)),
            2 => dynasm!(a ; .arch x64 ; mov WORD [rbx + rax], Rw(value)),
            4 => dynasm!(a ; .arch x64 ; mov DWORD [rbx + rax], Rd(value)),
            _ => dynasm!(a ; .arch x64 ; mov QWORD [rbx + rax], Rq(value)),
        }
        if let Some((Some((off, len)), label)) = rewrite {
            // [rax, rax + size) overlaps [off, off + len): rax - (off - size + 1) < len + size - 1.
            let lo = (off as i64) - (size as i64 - 1);
            let span = (len + size as u64 - 1) as i32;
            match i32::try_from(lo.wrapping_neg()) {
                Ok(d) => dynasm!(a ; .arch x64 ; lea rdx, [rax + d]),
                Err(_) => dynasm!(a ; .arch x64
                    ; mov rdx, QWORD lo.wrapping_neg()
                    ; add rdx, rax
                ),
            }
            dynasm!(a ; .arch x64
                ; cmp rdx, span
                ; jb =>label
            );
        }
        a.join(resume);
        if monitored {
            monitor_access(a, l, true);
        }
        return;
    }
    if let Some(s) = slows.last_mut() {
        s.dst = dst;
    }
    let d = dst.unwrap_or(RCX);
    match i.op {
        Lb => dynasm!(a ; .arch x64 ; movsx Rq(d), BYTE [rbx + rax]),
        Lbu => dynasm!(a ; .arch x64 ; movzx Rd(d), BYTE [rbx + rax]),
        Lh => dynasm!(a ; .arch x64 ; movsx Rq(d), WORD [rbx + rax]),
        Lhu => dynasm!(a ; .arch x64 ; movzx Rd(d), WORD [rbx + rax]),
        Lw => dynasm!(a ; .arch x64 ; movsxd Rq(d), DWORD [rbx + rax]),
        Lwu | Flw => dynasm!(a ; .arch x64 ; mov Rd(d), DWORD [rbx + rax]),
        _ => dynasm!(a ; .arch x64 ; mov Rq(d), QWORD [rbx + rax]),
    }
    a.join(resume);
    if let Some(h) = dst {
        a.set_dirty(h, true);
    } else if float_memory(i.op) {
        // FLW NaN-boxes the single in the 64-bit register.
        if i.op == Flw {
            dynasm!(a ; .arch x64 ; mov rax, QWORD BOX ; or rcx, rax);
        }
        let d = fd(l, i.rd);
        dynasm!(a ; .arch x64 ; mov QWORD [rdi + d], rcx);
    } else if i.rd != X0_SINK {
        put_unwritten(a, RCX, i.rd);
    }
    // The monitor's model code keeps the caching registers and jumps only to its own joins
    // (`Emitter::join`): what the cache holds, written or not, holds after it.
    if monitored {
        monitor_access(a, l, false);
    }
}

/// The out-of-line part of a chained access ([`ChainMiss`]).
// dynasm's dynamic registers expand to `.into()` conversions.
#[allow(clippy::useless_conversion)]
fn emit_chain_miss(a: &mut Asm, l: &Layout, m: &ChainMiss) {
    dynasm!(a ; .arch x64 ; =>m.full);
    let d = xd(l, m.rs1);
    if let Some(h) = m.rs1_host {
        dynasm!(a ; .arch x64 ; mov rsi, Rq(h));
    } else if m.rs1 == 0 {
        dynasm!(a ; .arch x64 ; xor esi, esi);
    } else {
        dynasm!(a ; .arch x64 ; mov rsi, QWORD [rdi + d]);
    }
    if m.imm != 0 {
        dynasm!(a ; .arch x64 ; add rsi, m.imm);
    }
    let array = if m.store { l.store } else { l.load };
    data_lookup(a, l.data_ctx, array, m.size, m.slow);
    dynasm!(a ; .arch x64 ; jmp =>m.done);
}

/// The slow path of a load or store (rsi holds the address): call the helper with the
/// stack aligned (a block runs with rsp = 8 mod 16, as on entry to a function), then
/// resume, or bail when the helper reports a fault or device.
// dynasm's dynamic registers expand to `.into()` conversions.
#[allow(clippy::useless_conversion)]
fn emit_slow_path(a: &mut Asm, l: &Layout, s: &SlowPath) {
    let store = is_store(s.op);
    let size = s.size;
    let fault = l.fault;
    let (slow, resume, bail) = (s.slow, s.resume, s.bail);
    dynasm!(a ; .arch x64 ; =>slow);
    let addr = l.addr;
    if s.monitored {
        dynasm!(a ; .arch x64 ; mov QWORD [rdi + addr], rsi);
    }
    if float_memory(s.op) && store {
        let d = fd(l, s.rs2);
        dynasm!(a ; .arch x64 ; mov rdx, QWORD [rdi + d]);
        dynasm!(a ; .arch x64 ; mov ecx, size);
        call_keeping_cache(a, l.store_helper);
    } else if let (true, Some(h)) = (store, s.rs2_host) {
        dynasm!(a ; .arch x64 ; mov rdx, Rq(h));
        dynasm!(a ; .arch x64 ; mov ecx, size);
        call_keeping_cache(a, l.store_helper);
    } else if store {
        get(a, l, RDX, s.rs2);
        dynasm!(a ; .arch x64 ; mov ecx, size);
        call_keeping_cache(a, l.store_helper);
    } else {
        dynasm!(a ; .arch x64 ; mov edx, size);
        call_keeping_cache(a, l.load_helper);
    }
    dynasm!(a ; .arch x64
        ; cmp BYTE [rdi + fault], 0
        ; jne =>bail
    );
    match s.op {
        Op::Lb => dynasm!(a ; .arch x64 ; movsx rcx, al),
        Op::Lh => dynasm!(a ; .arch x64 ; movsx rcx, ax),
        Op::Lw => dynasm!(a ; .arch x64 ; movsxd rcx, eax),
        Op::Lbu | Op::Lhu | Op::Lwu | Op::Ld | Op::Fld => dynasm!(a ; .arch x64 ; mov rcx, rax),
        Op::Flw => dynasm!(a ; .arch x64 ; mov ecx, eax),
        _ => {}
    }
    if let Some(h) = s.dst {
        dynasm!(a ; .arch x64 ; mov Rq(h), rcx);
    }
    if s.monitored {
        dynasm!(a ; .arch x64 ; mov rsi, QWORD [rdi + addr]);
    }
    if let Some(v) = s.spoiler {
        dynasm!(a ; .arch x64 ; mov eax, v);
    }
    let next = s.after.unwrap_or(resume);
    dynasm!(a ; .arch x64 ; jmp =>next);
}

/// The jump or branch that ends a block (`page`: the block's page number, for linking).
fn emit_terminal(
    a: &mut Asm,
    l: &Layout,
    pc: u64,
    i: &Insn,
    page: u64,
    monitored: bool,
    links: &mut Exits,
) {
    use Op::*;
    let link = pc.wrapping_add(i.len as u64);
    let target = pc.wrapping_add(i.imm as i64 as u64);
    let p = l.pc;
    use crate::ctr::ty::{NOT_TAKEN_BRANCH, TAKEN_BRANCH};
    match i.op {
        Jal => {
            if i.rd != X0_SINK {
                dynasm!(a ; .arch x64 ; mov rax, QWORD link as i64);
                put_rax(a, l, i.rd);
            }
            // `fmt` holds the transfer type (table 10).
            let transfer = Transfer {
                ctr: Some((pc, i.fmt)),
                pmu: monitored.then_some(Event::Jump {
                    pc,
                    indirect: false,
                }),
            };
            exit_recording(a, l, target, Next::to(target, page), transfer, links);
        }
        Jalr => {
            get_rax(a, l, i.rs1);
            let imm = i.imm;
            if imm != 0 {
                dynasm!(a ; .arch x64 ; add rax, imm);
            }
            dynasm!(a ; .arch x64 ; and rax, -2);
            if i.rd != X0_SINK {
                dynasm!(a ; .arch x64 ; mov rcx, QWORD link as i64);
                put(a, l, RCX, i.rd);
            }
            dynasm!(a ; .arch x64 ; mov QWORD [rdi + p], rax);
            if monitored {
                monitor_event(a, l, Event::Jump { pc, indirect: true });
            }
            // The target stays in rax (the monitor's report keeps it there too).
            ctr_record(a, l, pc, i.fmt, Target::Rax, links);
            jump_indirect(a, l);
        }
        _ => {
            compare(a, l, i.rs1, i.rs2);
            let at_branch = a.cache.clone();
            let taken = a.new_dynamic_label();
            jump_if_taken(a, i.op, taken);
            let not_taken = Transfer {
                ctr: Some((pc, NOT_TAKEN_BRANCH)),
                pmu: monitored.then_some(Event::Branch { pc, taken: false }),
            };
            exit_recording(a, l, link, Next::to(link, page), not_taken, links);
            // The taken path starts where the not-taken one did, with what the cache knew.
            a.join(taken);
            a.cache = at_branch;
            let taken = Transfer {
                ctr: Some((pc, TAKEN_BRANCH)),
                pmu: monitored.then_some(Event::Branch { pc, taken: true }),
            };
            exit_recording(a, l, target, Next::to(target, page), taken, links);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Both kinds of block: division and MULHSU inline; F and D loads, stores and moves inline, the
// rest through the interpreter's code (`Hart::exec_float`).
// ---------------------------------------------------------------------------------------------

/// The upper half of a NaN-boxed single (unprivileged spec, "NaN Boxing of Narrower Values").
const BOX: i64 = !0xffff_ffffu64 as i64;

/// The M extension's instructions beyond `straight`'s multiplies (in monitored blocks too:
/// their cycles are reported inline).
pub(super) fn muldiv(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        Mulhsu | Div | Divu | Rem | Remu | Divw | Divuw | Remw | Remuw
    )
}

fn float_memory(op: Op) -> bool {
    matches!(op, Op::Flw | Op::Fld | Op::Fsw | Op::Fsd)
}

fn is_store(op: Op) -> bool {
    matches!(op, Op::Sb | Op::Sh | Op::Sw | Op::Sd | Op::Fsw | Op::Fsd)
}

/// The F and D instructions other than loads and stores.
fn float_op(op: Op) -> bool {
    crate::decode::float_compute(op)
}

/// Displacement of floating-point register `r` from the hart pointer.
fn fd(l: &Layout, r: u8) -> i32 {
    l.f + 8 * (r as i32 & 31)
}

/// An instruction for `super::jit_float`, in two registers.
fn pack(i: &Insn) -> (u64, u64) {
    let lo = u64::from_le_bytes([i.op as u8, i.rd, i.rs1, i.rs2, i.rs3, i.rm, i.len, i.fmt]);
    (lo, i.imm as u32 as u64 | (i.raw as u64) << 32)
}

/// The instruction [`pack`] packed.
pub(super) fn unpack(lo: u64, hi: u64) -> Insn {
    let b = lo.to_le_bytes();
    // SAFETY: `b[0]` is the discriminant of an `Op` (a `repr(u8)` enum) taken by `pack`.
    let op = unsafe { std::mem::transmute::<u8, Op>(b[0]) };
    Insn {
        op,
        rd: b[1],
        rs1: b[2],
        rs2: b[3],
        rs3: b[4],
        rm: b[5],
        len: b[6],
        fmt: b[7],
        imm: hi as u32 as i32,
        raw: (hi >> 32) as u32,
    }
}

/// What the block has established about `mstatus.FS` so far. Within a block it can only go
/// from Off to nothing else (no CSR write or trap runs inside a block) and from clean to
/// Dirty by the block's own writes, so one check and one marking suffice on the straight
/// path, before the first instruction that needs them.
#[derive(Default)]
struct FloatState {
    /// FS (and with V=1 `vsstatus.FS`) is known not to be Off.
    checked: bool,
    /// FS is known to be Dirty.
    dirty: bool,
}

impl FloatState {
    /// With FS (or with V=1 `vsstatus.FS`) Off an F/D instruction is illegal: leave through
    /// `bail` so that the interpreter takes the trap.
    fn check(&mut self, a: &mut Asm, l: &Layout, bail: DynamicLabel) {
        if std::mem::replace(&mut self.checked, true) {
            return;
        }
        let (ms, vs, virt) = (l.mstatus, l.vsstatus, l.virt);
        let fs_bits = crate::csr::MSTATUS_FS as i16; // bits 14:13
        let ok = a.new_dynamic_label();
        dynasm!(a ; .arch x64
            ; test WORD [rdi + ms], fs_bits
            ; jz =>bail
            ; cmp BYTE [rdi + virt], 0
            ; je =>ok
            ; test WORD [rdi + vs], fs_bits
            ; jz =>bail
            ; =>ok
        );
    }

    /// An F/D register was written: FS becomes Dirty (`Hart::mark_fs_dirty`).
    fn dirty(&mut self, a: &mut Asm, l: &Layout) {
        if std::mem::replace(&mut self.dirty, true) {
            return;
        }
        let (ms, vs, virt) = (l.mstatus, l.vsstatus, l.virt);
        let fs_bits = crate::csr::MSTATUS_FS as i16; // bits 14:13
        let done = a.new_dynamic_label();
        dynasm!(a ; .arch x64
            ; or WORD [rdi + ms], fs_bits
            ; cmp BYTE [rdi + virt], 0
            ; je =>done
            ; or WORD [rdi + vs], fs_bits
            ; =>done
        );
    }
}

/// An F or D instruction other than a load or store. Moves between register files and the
/// double-precision sign injections (no rounding, no flags, no NaN boxing) are inline; the
/// rest calls the interpreter's code, which leaves everything unchanged when the instruction
/// raises an exception: the block then leaves through `bail`, before it.
fn emit_float(a: &mut Asm, l: &Layout, i: &Insn, bail: DynamicLabel, fp: &mut FloatState) {
    use crate::decode::FMT_S;
    use Op::*;
    let single = i.fmt == FMT_S;
    match i.op {
        FmvXF => {
            fp.check(a, l, bail);
            if i.rd != X0_SINK {
                let (s, d) = (fd(l, i.rs1), xd(l, i.rd));
                if single {
                    dynasm!(a ; .arch x64 ; movsxd rax, DWORD [rdi + s]);
                } else {
                    dynasm!(a ; .arch x64 ; mov rax, QWORD [rdi + s]);
                }
                dynasm!(a ; .arch x64 ; mov QWORD [rdi + d], rax);
                a.cache.forget(i.rd);
            }
        }
        FmvFX => {
            fp.check(a, l, bail);
            get_rax(a, l, i.rs1);
            if single {
                dynasm!(a ; .arch x64 ; mov eax, eax ; mov rcx, QWORD BOX ; or rax, rcx);
            }
            let d = fd(l, i.rd);
            dynasm!(a ; .arch x64 ; mov QWORD [rdi + d], rax);
            fp.dirty(a, l);
        }
        Fsgnj | Fsgnjn | Fsgnjx if !single => {
            fp.check(a, l, bail);
            let (s1, s2, d) = (fd(l, i.rs1), fd(l, i.rs2), fd(l, i.rd));
            dynasm!(a ; .arch x64
                ; mov rax, QWORD [rdi + s1]
                ; mov rcx, QWORD [rdi + s2]
                ; btr rax, 63
            );
            match i.op {
                Fsgnj => {}
                Fsgnjn => dynasm!(a ; .arch x64 ; not rcx),
                _ => dynasm!(a ; .arch x64 ; xor rcx, QWORD [rdi + s1]),
            }
            dynasm!(a ; .arch x64
                ; shr rcx, 63
                ; shl rcx, 63
                ; or rax, rcx
                ; mov QWORD [rdi + d], rax
            );
            fp.dirty(a, l);
        }
        Fadd | Fsub | Fmul | Fdiv | Fsqrt if matches!(i.rm, 0 | 7) => {
            emit_float_host(a, l, i, bail, fp);
        }
        Fmadd | Fmsub | Fnmsub | Fnmadd if matches!(i.rm, 0 | 7) && l.fma => {
            emit_float_host(a, l, i, bail, fp);
        }
        _ => emit_float_helper(a, l, i, bail, fp),
    }
}

/// The call of `super::jit_float` for `i` (see [`emit_float`]).
fn emit_float_helper(a: &mut Asm, l: &Layout, i: &Insn, bail: DynamicLabel, fp: &mut FloatState) {
    use Op::*;
    let (lo, hi) = pack(i);
    dynasm!(a ; .arch x64
        ; mov rsi, QWORD lo as i64
        ; mov rdx, QWORD hi as i64
    );
    call(a, l.float_helper);
    dynasm!(a ; .arch x64 ; test eax, eax ; jnz =>bail);
    // It passed the FS check; it marked FS Dirty when it wrote an F register.
    fp.checked = true;
    if !matches!(i.op, Feq | Flt | Fle | Fclass | FcvtIF) {
        fp.dirty = true;
    }
}

/// FADD, FSUB, FMUL, FDIV, FSQRT and (with host FMA3) the fused multiply-adds, in double
/// precision, and in single precision on NaN-boxed operands, in round-to-nearest-even (static, or dynamic with `frm` = RNE), on the
/// host's SSE2/FMA3 unit where that gives the result and flags of the interpreter's code,
/// under the conditions of `Hart::exec_float_host`: `fflags.NX` already set, and a result
/// that is finite and above the smallest normal number in magnitude. (Non-finite operands
/// give non-finite or zero results, and so do the invalid operations and division by zero,
/// so the operands need no test.) The host's exceptions are masked (the MXCSR default), so
/// the operation is tried first and its result kept only when it qualifies; otherwise the
/// helper runs (`emit_float_helper`).
fn emit_float_host(a: &mut Asm, l: &Layout, i: &Insn, bail: DynamicLabel, fp: &mut FloatState) {
    use Op::*;
    fp.check(a, l, bail);
    let (slow, done) = (a.new_dynamic_label(), a.new_dynamic_label());
    let (fflags, frm) = (l.fflags, l.frm);
    dynasm!(a ; .arch x64
        ; test BYTE [rdi + fflags], 1
        ; jz =>slow
    );
    if i.rm == 7 {
        dynasm!(a ; .arch x64
            ; cmp BYTE [rdi + frm], 0
            ; jne =>slow
        );
    }
    let (s1, s2, s3, d) = (fd(l, i.rs1), fd(l, i.rs2), fd(l, i.rs3), fd(l, i.rd));
    if i.fmt == crate::decode::FMT_S {
        // Singles: every operand NaN-boxed (else it reads as the canonical NaN).
        let operands: &[i32] = match i.op {
            Fsqrt => &[s1],
            Fadd | Fsub | Fmul | Fdiv => &[s1, s2],
            _ => &[s1, s2, s3],
        };
        for &r in operands {
            let upper = r + 4;
            dynasm!(a ; .arch x64
                ; cmp DWORD [rdi + upper], -1
                ; jne =>slow
            );
        }
        dynasm!(a ; .arch x64 ; movss xmm0, DWORD [rdi + s1]);
        match i.op {
            Fadd => dynasm!(a ; .arch x64 ; addss xmm0, DWORD [rdi + s2]),
            Fsub => dynasm!(a ; .arch x64 ; subss xmm0, DWORD [rdi + s2]),
            Fmul => dynasm!(a ; .arch x64 ; mulss xmm0, DWORD [rdi + s2]),
            Fdiv => dynasm!(a ; .arch x64 ; divss xmm0, DWORD [rdi + s2]),
            Fsqrt => dynasm!(a ; .arch x64 ; sqrtss xmm0, xmm0),
            _ => {
                dynasm!(a ; .arch x64
                    ; movss xmm1, DWORD [rdi + s2]
                    ; movss xmm2, DWORD [rdi + s3]
                );
                match i.op {
                    Fmadd => dynasm!(a ; .arch x64 ; vfmadd231ss xmm2, xmm0, xmm1),
                    Fmsub => dynasm!(a ; .arch x64 ; vfmsub231ss xmm2, xmm0, xmm1),
                    Fnmsub => dynasm!(a ; .arch x64 ; vfnmadd231ss xmm2, xmm0, xmm1),
                    _ => dynasm!(a ; .arch x64 ; vfnmsub231ss xmm2, xmm0, xmm1),
                }
                dynasm!(a ; .arch x64 ; movaps xmm0, xmm2);
            }
        }
        const MIN_NORMAL_S: i32 = 0x0080_0000;
        const INFINITY_S: i32 = 0x7f80_0000;
        dynasm!(a ; .arch x64
            ; movd eax, xmm0
            ; mov ecx, eax
            ; and ecx, 0x7fff_ffff
            ; cmp ecx, MIN_NORMAL_S
            ; jbe =>slow
            ; cmp ecx, INFINITY_S
            ; jae =>slow
            ; mov rcx, QWORD BOX
            ; or rax, rcx
            ; mov QWORD [rdi + d], rax
        );
        fp.dirty(a, l);
        dynasm!(a ; .arch x64 ; jmp =>done ; =>slow);
        emit_float_helper(a, l, i, bail, fp);
        dynasm!(a ; .arch x64 ; =>done);
        return;
    }
    dynasm!(a ; .arch x64 ; movsd xmm0, QWORD [rdi + s1]);
    match i.op {
        Fadd => dynasm!(a ; .arch x64 ; addsd xmm0, QWORD [rdi + s2]),
        Fsub => dynasm!(a ; .arch x64 ; subsd xmm0, QWORD [rdi + s2]),
        Fmul => dynasm!(a ; .arch x64 ; mulsd xmm0, QWORD [rdi + s2]),
        Fdiv => dynasm!(a ; .arch x64 ; divsd xmm0, QWORD [rdi + s2]),
        Fsqrt => dynasm!(a ; .arch x64 ; sqrtsd xmm0, xmm0),
        _ => {
            // xmm2 = ±(xmm0 * xmm1) ± xmm2. x86's FNMADD is -(a * b) + c, RISC-V's FNMSUB.
            dynasm!(a ; .arch x64
                ; movsd xmm1, QWORD [rdi + s2]
                ; movsd xmm2, QWORD [rdi + s3]
            );
            match i.op {
                Fmadd => dynasm!(a ; .arch x64 ; vfmadd231sd xmm2, xmm0, xmm1),
                Fmsub => dynasm!(a ; .arch x64 ; vfmsub231sd xmm2, xmm0, xmm1),
                Fnmsub => dynasm!(a ; .arch x64 ; vfnmadd231sd xmm2, xmm0, xmm1),
                _ => dynasm!(a ; .arch x64 ; vfnmsub231sd xmm2, xmm0, xmm1),
            }
            dynasm!(a ; .arch x64 ; movapd xmm0, xmm2);
        }
    }
    const MIN_NORMAL: i64 = 0x0010_0000_0000_0000;
    const INFINITY: i64 = 0x7ff0_0000_0000_0000;
    dynasm!(a ; .arch x64
        ; movq rax, xmm0
        ; mov rcx, rax
        ; btr rcx, 63
        ; mov rdx, QWORD MIN_NORMAL
        ; cmp rcx, rdx
        ; jbe =>slow
        ; mov rdx, QWORD INFINITY
        ; cmp rcx, rdx
        ; jae =>slow
        ; mov QWORD [rdi + d], rax
    );
    fp.dirty(a, l);
    dynasm!(a ; .arch x64 ; jmp =>done ; =>slow);
    emit_float_helper(a, l, i, bail, fp);
    dynasm!(a ; .arch x64 ; =>done);
}

/// A CSR instruction at `pc`, `undone` instructions before the end of the block: a call of
/// `super::jit_csr`, which leaves everything unchanged on an exception (the block then
/// leaves through `bail`, before it). After a write that ends the block ([`csr_ends_block`])
/// the block returns to the dispatcher (unlinked), which ends the chunk: the write may have
/// enabled an interrupt, changed the address translation, the privilege rules, CTR or the
/// monitor. After another write (of `sstatus`), and after a read of `time`, it returns there
/// only when the instruction ended the chunk (`Ctl::Break` in the interpreter: an interrupt
/// the write enabled, a timer deadline the read of host time reached: `Hart::read_time`),
/// and goes on otherwise; `first` is the block's pc when the instruction is the first of a
/// monitored block, whose fetch report then comes before it leaves.
#[allow(clippy::too_many_arguments)]
fn emit_csr(
    a: &mut Asm,
    l: &Layout,
    pc: u64,
    i: &Insn,
    bail: DynamicLabel,
    undone: u32,
    first: Option<u64>,
    monitored: bool,
    links: &mut Exits,
) {
    let (lo, hi) = pack(i);
    // The instruction's pc, as the interpreter has it while it executes the instruction (a
    // counter write attributes an overflow to it).
    let p = l.pc;
    dynasm!(a ; .arch x64
        ; mov rax, QWORD pc as i64
        ; mov QWORD [rdi + p], rax
        ; mov rsi, QWORD lo as i64
        ; mov rdx, QWORD hi as i64
        ; mov ecx, undone as i32
    );
    store_budget(a, l);
    call_draining(a, l.csr_helper);
    dynasm!(a ; .arch x64 ; test eax, eax ; jnz =>bail);
    let next = pc.wrapping_add(i.len as u64);
    let ends = csr_ends_block(i, monitored);
    let may_break = if csr_write(i) {
        !ends
    } else {
        csr_number(i) == vcpu_api::csr::TIME
    };
    if may_break {
        // A read of `time` that reached a timer deadline (host time: `Hart::read_time`), or
        // a write of `sstatus` that enabled a pending interrupt, ends the chunk, as
        // `Ctl::Break` does in the interpreter: leave after it.
        let (brk, on) = (l.jit_break, a.new_dynamic_label());
        dynasm!(a ; .arch x64
            ; cmp BYTE [rdi + brk], 0
            ; je =>on
        );
        if let Some(start) = first {
            monitor_fetch(a, l, start);
        }
        let after = undone as i32 - 1;
        dynasm!(a ; .arch x64 ; add r12, after);
        exit_to(a, l, next, Next::Dispatcher, links);
        dynasm!(a ; .arch x64 ; =>on);
    }
    if ends {
        // Back to the dispatcher: the write may change what blocks depend on.
        exit_to(a, l, next, Next::Dispatcher, links);
    }
}

/// DIV, DIVU, REM, REMU, their W forms and MULHSU, with the M extension's results for
/// division by zero (quotient all ones, remainder the dividend) and signed overflow
/// (quotient the dividend, remainder 0), which the host's divide would trap on: a divisor
/// of -1 is negation (or a zero remainder) without dividing.
fn emit_muldiv(a: &mut Asm, l: &Layout, i: &Insn) {
    use Op::*;
    if i.rd == X0_SINK {
        return; // no architectural effect: no trap, no flags
    }
    get_rax(a, l, i.rs1);
    get_rcx(a, l, i.rs2);
    let (zero, minus, done) = (
        a.new_dynamic_label(),
        a.new_dynamic_label(),
        a.new_dynamic_label(),
    );
    match i.op {
        Mulhsu => {
            // The unsigned high half, less the multiplier when the multiplicand is negative.
            dynasm!(a ; .arch x64
                ; mov rsi, rax
                ; mul rcx
                ; sar rsi, 63
                ; and rsi, rcx
                ; sub rdx, rsi
                ; mov rax, rdx
            );
        }
        Div | Rem => {
            dynasm!(a ; .arch x64
                ; test rcx, rcx
                ; jz =>zero
                ; cmp rcx, -1
                ; je =>minus
                ; cqo
                ; idiv rcx
            );
            if i.op == Rem {
                dynasm!(a ; .arch x64 ; mov rax, rdx);
            }
            dynasm!(a ; .arch x64 ; jmp =>done ; =>zero);
            if i.op == Div {
                dynasm!(a ; .arch x64 ; mov rax, -1);
            }
            dynasm!(a ; .arch x64 ; jmp =>done ; =>minus);
            if i.op == Div {
                dynasm!(a ; .arch x64 ; neg rax);
            } else {
                dynasm!(a ; .arch x64 ; xor eax, eax);
            }
        }
        Divu | Remu => {
            dynasm!(a ; .arch x64
                ; test rcx, rcx
                ; jz =>zero
                ; xor edx, edx
                ; div rcx
            );
            if i.op == Remu {
                dynasm!(a ; .arch x64 ; mov rax, rdx);
            }
            dynasm!(a ; .arch x64 ; jmp =>done ; =>zero);
            if i.op == Divu {
                dynasm!(a ; .arch x64 ; mov rax, -1);
            }
        }
        Divw | Remw => {
            dynasm!(a ; .arch x64
                ; test ecx, ecx
                ; jz =>zero
                ; cmp ecx, -1
                ; je =>minus
                ; cdq
                ; idiv ecx
            );
            if i.op == Remw {
                dynasm!(a ; .arch x64 ; mov eax, edx);
            }
            dynasm!(a ; .arch x64 ; movsxd rax, eax ; jmp =>done ; =>zero);
            if i.op == Divw {
                dynasm!(a ; .arch x64 ; mov rax, -1);
            } else {
                dynasm!(a ; .arch x64 ; movsxd rax, eax);
            }
            dynasm!(a ; .arch x64 ; jmp =>done ; =>minus);
            if i.op == Divw {
                dynasm!(a ; .arch x64 ; neg eax ; movsxd rax, eax);
            } else {
                dynasm!(a ; .arch x64 ; xor eax, eax);
            }
        }
        _ => {
            // Divuw, Remuw
            dynasm!(a ; .arch x64
                ; test ecx, ecx
                ; jz =>zero
                ; xor edx, edx
                ; div ecx
            );
            if i.op == Remuw {
                dynasm!(a ; .arch x64 ; mov eax, edx);
            }
            dynasm!(a ; .arch x64 ; movsxd rax, eax ; jmp =>done ; =>zero);
            if i.op == Divuw {
                dynasm!(a ; .arch x64 ; mov rax, -1);
            } else {
                dynasm!(a ; .arch x64 ; movsxd rax, eax);
            }
        }
    }
    dynasm!(a ; .arch x64 ; =>done);
    put_rax(a, l, i.rd);
}
