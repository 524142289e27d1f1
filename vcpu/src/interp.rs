//! The interpreter loop: chunks of instructions between checks of interrupts, timer
//! deadlines, stop requests and the SMP mailbox; per instruction, fetch through the fetch
//! page and the decode cache, execute, and the loop variants by CTR recording and
//! performance monitoring (const generics, so a variant without them has no per-instruction
//! cost); translated blocks run where nothing is observed per instruction (`jit`).

use crate::decode::{self, Insn, Op};
use crate::hart::{Ctl, Hart};
use crate::pmu::{PMU_FULL, PMU_OFF};
use crate::trap::{Exception, TrapTarget};
use crate::INSNS_PER_TICK;
use vcpu_api::{PrivilegeMode, TraceRange, VcpuExit};

/// Instructions executed between checks of interrupts, time and stop requests, where
/// other harts move with those checks: the harts of a VM publish and adopt their shared
/// clock and take each other's interrupts and fences there. With host time, the most a
/// timer interrupt can be late (the host clock is read at each boundary).
pub(crate) const CHUNK: u64 = 4096;
/// The chunk of a hart alone. On virtual time its timer deadlines, budget and counter
/// checks end chunks exactly wherever they fall, so what is left at a boundary is what
/// other threads post (stop requests, a mailbox of one hart) and has no instruction to
/// land on. A longer chunk only makes those later (65 536 instructions: well under a
/// millisecond even interpreted), and translated code returns to the dispatcher at a
/// chunk's end 16 times less often: a Linux boot executes the same instructions with
/// either and takes about 5% less host time with this one. With host time a chunk also
/// ends before the next timer deadline at the guest's pace ([`HostPace`]), and `time`
/// reads the host clock again once [`CHUNK`] instructions have run since it was read
/// (`Hart::read_time`), so that neither comes later than with chunks of [`CHUNK`].
const LONG_CHUNK: u64 = 4096 * 16;

/// Host time, for a hart alone: the guest's pace, in instruction slots per tick of the
/// timebase, measured between chunk boundaries at least [`HostPace::WINDOW`] ticks apart.
/// A chunk that starts `d` ticks before a timer deadline runs at most half of what that
/// pace would execute in `d` ticks (at least [`CHUNK`], at most [`LONG_CHUNK`]), so that it
/// ends before the deadline unless the guest slows to less than half its pace; near the
/// deadline chunks are [`CHUNK`] long, as they always were with host time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostPace {
    /// Where the measure started, host ticks and `vclock` (`None` before the first boundary).
    since: Option<(u64, u64)>,
    /// Slots per tick, as last measured.
    per_tick: u64,
}

impl Default for HostPace {
    /// No measure yet: 10 MIPS (one slot a tick), so that the first chunks stay short.
    fn default() -> Self {
        HostPace {
            since: None,
            per_tick: 1,
        }
    }
}

impl HostPace {
    /// The least host time a measure spans (10 µs).
    const WINDOW: u64 = 100;

    /// A chunk boundary at host tick `now` and virtual clock `slots`: a measure ends once it
    /// spans [`HostPace::WINDOW`]; one whose clocks went back (a restore) starts again.
    fn measure(&mut self, now: u64, slots: u64) {
        if let Some((t0, s0)) = self.since.filter(|&(t0, s0)| now >= t0 && slots >= s0) {
            let ticks = now - t0;
            if ticks < Self::WINDOW {
                return;
            }
            self.per_tick = (slots - s0) / ticks;
        }
        self.since = Some((now, slots));
    }

    /// The longest chunk that starts `ticks` before a timer deadline.
    fn chunk_before(&self, ticks: u64) -> u64 {
        (ticks.saturating_mul(self.per_tick) / 2).clamp(CHUNK, LONG_CHUNK)
    }
}

impl Hart {
    /// Chunk boundary work for SMP: merge the mailbox and synchronise with the shared clock.
    #[inline]
    fn sync_shared(&mut self) {
        let bits = self.mailbox.take_interrupts();
        if bits != 0 {
            self.csr.h.hvip |= bits & crate::hypervisor::VS_INTERRUPTS;
        }
        if let Some(msis) = self.mailbox.take_msis() {
            self.take_posted_msis(&msis);
        }
        if let Some(ticket) = self.mailbox.flush_wanted() {
            // A remote FENCE.I or SFENCE.VMA (the SBI's RFENCE): both flush.
            self.flush_tlb();
            self.jit_code_sync();
            self.reservation.clear();
            self.mailbox.ack_flush(ticket);
        }
        self.refresh_host_time();
        // With host time the harts' clocks are the host's: nothing to share.
        if let (Some(clock), None) = (&self.shared_clock, &self.host_clock) {
            let global = clock.advance_to(self.vclock);
            if global > self.vclock {
                self.skipped += global - self.vclock;
                self.vclock = global;
            }
        }
    }

    /// The chunk length: [`LONG_CHUNK`] for a hart alone, [`CHUNK`] with other harts.
    #[inline]
    fn chunk(&self) -> u64 {
        if self.shared_clock.is_none() {
            LONG_CHUNK
        } else {
            CHUNK
        }
    }

    /// Runs up to `budget` instructions, or past it by up to `slack` to finish a translated
    /// block ([`Hart::run`]).
    pub(crate) fn run_loop<const TRACE: bool>(&mut self, budget: u64, slack: u64) -> VcpuExit {
        let mut left = budget;
        let chunk = self.chunk();
        loop {
            self.sync_shared();
            if self.stop.take() {
                return VcpuExit::StopRequested;
            }
            // Cycles skipped while idle may have wrapped a counter.
            if self.pmu.active && self.vclock >= self.pmu.check_at {
                self.pmu_check(self.pc);
            }
            if let Some((i, to_s)) = self.pending_interrupt() {
                if self.hosted && to_s != TrapTarget::Vs {
                    return VcpuExit::HostInterrupt(i);
                }
                self.take_interrupt(i, to_s);
            }
            if left == 0 {
                return VcpuExit::BudgetExhausted;
            }
            let mut n = left.min(chunk);
            // Where the chunk may end at the latest: the budget (and the slack the VMM
            // allows past it: `Vcpu::set_budget_slack`), the timer deadline.
            let mut firm = left.saturating_add(slack);
            // Stop exactly when the next timer deadline is reached (virtual time; with host
            // time a deadline is seen at the next chunk boundary after the host reaches it, or
            // at a read of `time`, and a hart alone ends its chunk before it: `HostPace`).
            let now = self.mtime();
            let alone = chunk == LONG_CHUNK;
            if alone && self.host_clock.is_some() {
                self.host_pace.measure(self.host_now, self.vclock);
            }
            if let Some(t) = self.timer_deadline().filter(|&t| t > now) {
                if self.host_clock.is_none() {
                    let until =
                        (t - now).saturating_mul(INSNS_PER_TICK) - self.vclock % INSNS_PER_TICK;
                    n = n.min(until.max(1));
                    firm = firm.min(until.max(1));
                } else if alone {
                    n = n.min(self.host_pace.chunk_before(t - now));
                }
            }
            // CTR: a chunk runs the loop instantiated with or without the recording checks
            // for jumps and branches, by whether the current mode records any (the mask
            // changes only on mode changes and CSR writes, which end the chunk).
            // The performance monitor likewise: its variant tallies events and runs the models.
            // No counter can wrap before `check_at` (`pmu_recount`), where the chunk stops
            // for a check; a chunk of one instruction is the one that may wrap a counter,
            // and an overflow found at its end is attributed to it.
            // `hard`: where the chunk must end (budget, timer); `n` may end sooner, at the
            // overflow check, which `run_chunk` moves on when a block does not fit before it.
            let hard = n;
            // A chunk that ends only because of its length may run on a little, so that the
            // translated block in progress there runs whole (`run_chunk`): no deadline,
            // budget or counter check lies in that slack.
            // With the performance monitor active, the slack also stays before the overflow
            // check (`pmu.check_at`): no counter can wrap in it.
            // Translated code needs only its own countdown (`Hart::jit_check_at`); the
            // interpreter stops at the whole one (`run_chunk`).
            let mut slack = (firm - hard).min(crate::jit::MAX_INSNS as u64);
            if self.pmu.active {
                let check_at = self.jit_check_at();
                slack = if self.pmu.may_wrap() {
                    0
                } else {
                    slack.min(check_at.saturating_sub(self.vclock + hard))
                };
                n = n.min(check_at.saturating_sub(self.vclock).max(1));
            }
            use crate::pmu::{PMU_ARMS, PMU_FULL, PMU_OFF};
            let (done, exit) = match (self.ctr_mask != 0, self.pmu_variant()) {
                (false, PMU_OFF) => self.run_chunk::<TRACE, false, PMU_OFF>(n, hard, slack),
                (true, PMU_OFF) => self.run_chunk::<TRACE, true, PMU_OFF>(n, hard, slack),
                (false, PMU_ARMS) => self.run_chunk::<TRACE, false, PMU_ARMS>(n, hard, slack),
                (true, PMU_ARMS) => self.run_chunk::<TRACE, true, PMU_ARMS>(n, hard, slack),
                (false, _) => self.run_chunk::<TRACE, false, PMU_FULL>(n, hard, slack),
                (true, _) => self.run_chunk::<TRACE, true, PMU_FULL>(n, hard, slack),
            };
            // A run may have gone past its budget by its slack.
            left = left.saturating_sub(done);
            if let Some(e) = exit {
                return e;
            }
        }
    }

    /// Execute up to `n` instructions; returns how many were executed and an exit, if any.
    /// With the performance monitor active, `n` may end at the overflow check before `hard`:
    /// where no counter can have wrapped, the countdown is recomputed there (or sooner, when
    /// the next block does not fit before it) and the chunk goes on, up to `hard`; the
    /// instruction that may wrap a counter runs alone in the next chunk.
    ///
    /// A chunk whose end is only its length has `slack` (with the performance monitor
    /// active, only up to its overflow check, where no counter can wrap): a
    /// translated block that starts before the end runs whole even when it ends after it,
    /// by up to `slack` instructions, so that the interpreter does not step through the
    /// block's tail and the next chunk does not start inside a block. No deadline, budget or
    /// counter check is at that end: only what other threads post (interrupts, stop
    /// requests) is looked at there, which has no fixed instruction to land on anyway.
    fn run_chunk<const TRACE: bool, const CTR: bool, const PMU: u8>(
        &mut self,
        n: u64,
        hard: u64,
        slack: u64,
    ) -> (u64, Option<VcpuExit>) {
        let start = self.vclock;
        let mut end = start + n;
        let hard_end = start + hard;
        // PMU: an overflow found at the end of a one-instruction chunk is that instruction's.
        let first_pc = self.pc;
        loop {
            if self.vclock >= end {
                // At the overflow check before the chunk's hard end, where no counter can
                // have wrapped: count down again and go on, in the same chunk.
                if PMU != PMU_OFF
                    && end < hard_end
                    && self.vclock == self.jit_check_at()
                    && !self.pmu.may_wrap()
                {
                    // The next instruction may wrap a counter: alone, in a chunk of its
                    // own, so that an overflow is attributed to it.
                    if self.pmu_check(self.pc) || self.pmu.may_wrap() {
                        break;
                    }
                    end = hard_end.min(self.jit_check_at());
                    continue;
                }
                break;
            }
            // Nothing to observe per instruction but CTR transfers (which blocks record
            // where they end) and the monitor's events other than PDIS (which monitored
            // blocks report: `jit::x64`): run a translated block if one fits.
            // Armed debug triggers check every fetch, load and store: interpreted.
            if !TRACE && (PMU == PMU_OFF || self.pmu_translatable()) && !self.trig.armed {
                let soft = PMU != PMU_OFF && end < hard_end;
                // The slack never reaches past the overflow check.
                let lim = if PMU != PMU_OFF {
                    (end + slack).min(self.jit_check_at().max(end))
                } else {
                    end + slack
                };
                let done = self.jit_step(lim - self.vclock, PMU != PMU_OFF);
                if done != 0 {
                    self.vclock += done;
                    self.retired += done;
                    if self.jit_break {
                        self.jit_break = false;
                        break;
                    }
                    continue;
                }
                let need = std::mem::take(&mut self.jit_short);
                if need != 0 && soft {
                    // The block does not fit before the check: the countdown assumed every
                    // instruction moves the counters as far as one can. Count again from
                    // here (nothing can wrap yet) where that can make room for the block:
                    // a new countdown cannot reach past the old one.
                    if self.vclock != self.pmu.counted_at && end - self.pmu.counted_at >= need {
                        if self.pmu_check(self.pc) || self.pmu.may_wrap() {
                            break;
                        }
                        end = hard_end.min(self.jit_check_at());
                        continue;
                    }
                }
            }
            // Translated code may have gone past the whole countdown (`Hart::jit_check_at`),
            // which an interpreted instruction needs: count down again here (nothing can
            // have wrapped yet), and if the next instruction may wrap a counter, the chunk
            // ends so that it runs alone.
            if PMU != PMU_OFF
                && self.vclock >= self.pmu.check_at
                && self.vclock > start
                && (self.pmu_check(self.pc) || self.pmu.may_wrap())
            {
                break;
            }
            self.vclock += 1;
            // A fetch fault has already been taken (in the cold path) when this is None.
            // Armed triggers: the execute check comes before the fetch (it outranks the
            // fetch's own faults, `trigger/check.rs`). The one flag test on this path.
            if self.trig.armed && !self.fetch_triggers() {
                if let Some(exit) = self.guest_exit.take() {
                    return (self.vclock - start, Some(VcpuExit::GuestTrap(exit)));
                }
                // A debugger's execute point: stopped before the instruction, unclocked.
                if let Some(hit) = self.trig.bank.hit.take() {
                    self.vclock -= 1;
                    return (self.vclock - start, Some(VcpuExit::DebugPoint(hit)));
                }
                if CTR != (self.ctr_mask != 0) {
                    break;
                }
                continue;
            }
            let Some(idx) = self.fetch() else {
                if let Some(exit) = self.guest_exit.take() {
                    return (self.vclock - start, Some(VcpuExit::GuestTrap(exit)));
                }
                if CTR != (self.ctr_mask != 0) {
                    break;
                }
                continue;
            };
            // SAFETY: `fetch` returns an index masked to the cache length.
            let insn = unsafe { *self.dcache.get_unchecked(idx) };
            // --trace: the registers before, to print those the instruction changes.
            let before = if TRACE {
                Some(TraceBefore {
                    pc: self.pc,
                    mode: self.mode_name(),
                    x: self.x,
                    f: self.f,
                })
            } else {
                None
            };
            // The monitor needs the instruction's address and data address (computed before
            // execution, which may overwrite rs1).
            // PMU_FULL: the instruction's address and data address (before execution, which
            // may overwrite rs1).
            let (pc, addr) = if PMU == PMU_FULL {
                let base = self.x[insn.rs1 as usize & 63];
                (self.pc, base.wrapping_add(insn.imm as i64 as u64))
            } else {
                (0, 0)
            };
            let result = self.execute::<CTR, PMU>(insn);
            if let Some(before) = &before {
                self.trace_insn(before, &insn, &result);
            }
            match result {
                Ok(()) => {
                    self.retired += 1;
                    if PMU == PMU_FULL && self.pmu_events(&insn, pc, addr) {
                        self.pmu_check(pc);
                        break;
                    }
                }
                Err(Ctl::Exception(e)) => {
                    if e.cause == crate::trigger::debugger::STOP_CAUSE {
                        // A debugger's watchpoint, before the access: the instruction has
                        // had no effect and is not clocked.
                        if let Some(hit) = self.trig.bank.hit.take() {
                            self.vclock -= 1;
                            return (self.vclock - start, Some(VcpuExit::DebugPoint(hit)));
                        }
                    }
                    self.take_exception(self.with_tinst(e, &insn));
                    if let Some(mut exit) = self.guest_exit.take() {
                        exit.insn = insn.bits();
                        return (self.vclock - start, Some(VcpuExit::GuestTrap(exit)));
                    }
                    if PMU != PMU_OFF && self.pmu_trapped(&insn, pc) {
                        break;
                    }
                    // The trap may have switched CTR recording on or off.
                    if CTR != (self.ctr_mask != 0) {
                        break;
                    }
                }
                Err(Ctl::Break) => {
                    self.retired += 1;
                    if PMU == PMU_FULL {
                        self.pmu_events(&insn, pc, addr);
                    }
                    break;
                }
                Err(Ctl::Wfi) => {
                    self.retired += 1;
                    if PMU == PMU_FULL {
                        self.pmu_events(&insn, pc, addr);
                    }
                    return (self.vclock - start, Some(VcpuExit::Wfi));
                }
                Err(Ctl::Mmio(acc)) => {
                    // The clock already counts this instruction (it moved on before the
                    // fetch), read or write, so it takes its one place in the budget now.
                    // A write is done and stays clocked; a read is taken off the clock
                    // below and clocked when the caller completes it.
                    let done = self.vclock - start;
                    if acc.write.is_some() {
                        self.pc = self.pc.wrapping_add(insn.len as u64);
                        self.retired += 1;
                        if PMU != PMU_OFF {
                            self.pmu_device_access(false);
                        }
                    } else {
                        // Retired (and clocked) when the caller completes it.
                        self.vclock -= 1;
                        self.pending_load = Some(insn);
                    }
                    return (done, Some(VcpuExit::Mmio(acc)));
                }
            }
        }
        if PMU != PMU_OFF && self.vclock >= self.pmu.check_at {
            let pc = if self.vclock - start == 1 {
                first_pc
            } else {
                self.pc
            };
            self.pmu_check(pc);
        }
        (self.vclock - start, None)
    }

    /// Fill in the transformed instruction for `mtinst`/`htinst` of a memory-access fault
    /// (H extension, "Transformed Instruction or Pseudoinstruction"). The operands have not
    /// changed since the access, so the original address can be recomputed.
    #[cold]
    fn with_tinst(&self, mut e: Exception, insn: &Insn) -> Exception {
        use crate::trap::cause::*;
        let memory_fault = matches!(
            e.cause,
            LOAD_MISALIGNED
                | LOAD_ACCESS
                | STORE_MISALIGNED
                | STORE_ACCESS
                | LOAD_PAGE_FAULT
                | STORE_PAGE_FAULT
                | LOAD_GUEST_PAGE_FAULT
                | STORE_GUEST_PAGE_FAULT
        );
        if memory_fault && e.tinst == 0 {
            let base = self.x[insn.rs1 as usize & 63];
            let addr = match insn.op {
                Op::Lb
                | Op::Lh
                | Op::Lw
                | Op::Ld
                | Op::Lbu
                | Op::Lhu
                | Op::Lwu
                | Op::Flw
                | Op::Fld => base.wrapping_add(insn.imm as i64 as u64),
                Op::Sb | Op::Sh | Op::Sw | Op::Sd | Op::Fsw | Op::Fsd => {
                    base.wrapping_add(insn.imm as i64 as u64)
                }
                _ => base,
            };
            e.tinst = crate::hypervisor::tinst::transform(insn, e.tval.wrapping_sub(addr));
        }
        e
    }

    /// Fetch and decode the instruction at `pc`, through the fetch page and the decode cache;
    /// returns the index of the decode-cache slot that holds it.
    /// On a fetch fault the trap is taken here and `None` returned: the hot path then moves
    /// only an `Option<usize>`, not a `Result` as large as an [`Exception`].
    #[inline(always)]
    fn fetch(&mut self) -> Option<usize> {
        let pc = self.pc;
        let bits = match self.tlb.lookup_fetch_page(pc) {
            Some(off) => self.ram.fetch32(off),
            None => self.fetch_other_page()?,
        };
        let idx = (pc >> 1) as usize & self.dcache_mask;
        // SAFETY: idx is masked to the cache length.
        let slot = unsafe { self.dcache.get_unchecked_mut(idx) };
        // Empty slots hold the decoding of 0xffff_ffff, so they need no validity flag.
        // A slot is valid exactly for the bits it holds in `raw` (the decoding is a function
        // of them alone), so a store to code, by any hart or the VMM, needs no invalidation,
        // and neither FENCE.I nor a remote fence flushes the cache.
        if slot.raw != bits {
            *slot = decode::decode(bits);
            slot.raw = bits;
        }
        Some(idx)
    }

    /// Fetch from outside the fetch page: through the TLB (the page becomes the fetch page),
    /// else the slow path.
    #[inline(never)]
    fn fetch_other_page(&mut self) -> Option<u32> {
        match self.tlb.lookup_fetch(self.pc) {
            Some(off) => Some(self.ram.fetch32(off)),
            None => self.fetch_slow(),
        }
    }

    /// Fetch through a page walk, or across a page boundary, or from a page the TLB does not
    /// hold. Returns the instruction bits (the upper half is 0 for a compressed instruction).
    /// A fault is taken here (`None`).
    #[cold]
    fn fetch_slow(&mut self) -> Option<u32> {
        match self.fetch_bits_slow() {
            Ok(bits) => Some(bits),
            Err(e) => {
                self.take_exception(e);
                None
            }
        }
    }

    /// Triggers armed, before the fetch of the instruction at the pc: `false` when an
    /// execute trigger matched, its breakpoint taken, or a debugger point's stop recorded
    /// (`trig.bank.hit`, reported by the loop; never taken).
    #[cold]
    fn fetch_triggers(&mut self) -> bool {
        match self.trigger_fetch() {
            Ok(()) => true,
            Err(e) => {
                if e.cause != crate::trigger::debugger::STOP_CAUSE {
                    self.take_exception(e);
                }
                false
            }
        }
    }

    fn fetch_bits_slow(&mut self) -> Result<u32, Exception> {
        let pc = self.pc;
        let lo = self.fetch_half(pc)?;
        if decode::insn_len(lo) == 2 {
            return Ok(lo as u32);
        }
        let hi = self.fetch_half(pc.wrapping_add(2))?;
        Ok(lo as u32 | (hi as u32) << 16)
    }
}

/// What `--trace` keeps of the hart before an instruction runs.
struct TraceBefore {
    pc: u64,
    mode: &'static str,
    x: [u64; 64],
    f: [u64; 32],
}

impl Hart {
    /// The privilege and virtualization mode as `--trace` prints it (M, HS, S, U, VS, VU).
    fn mode_name(&self) -> &'static str {
        match (self.virt, self.prv) {
            (false, PrivilegeMode::Machine) => "M",
            // misa.H is always set: S-mode is HS-mode.
            (false, PrivilegeMode::Supervisor) => "HS",
            (false, _) => "U",
            (true, PrivilegeMode::Supervisor) => "VS",
            (true, _) => "VU",
        }
    }

    /// One `--trace` line for an instruction just executed (inside the pc range of
    /// `HartConfig::trace_range`): the instruction count, mode, pc, bits and operation, then
    /// every integer and floating-point register it changed with its new value, or the trap
    /// it raised, or the device access it made.
    #[cold]
    fn trace_insn(&self, before: &TraceBefore, insn: &Insn, result: &Result<(), Ctl>) {
        use std::fmt::Write;
        if !TraceRange::contains(&self.trace_range.pcs, before.pc) {
            return;
        }
        let mut line = format!(
            "#{} {} pc={:016x} {:08x} {:?}",
            self.executed(),
            before.mode,
            before.pc,
            insn.bits(),
            insn.op
        );
        match result {
            Ok(()) | Err(Ctl::Break) | Err(Ctl::Wfi) => {
                for i in 1..32 {
                    if self.x[i] != before.x[i] {
                        let _ = write!(line, " x{i}={:#x}", self.x[i]);
                    }
                }
                for i in 0..32 {
                    if self.f[i] != before.f[i] {
                        let _ = write!(line, " f{i}={:#x}", self.f[i]);
                    }
                }
                if matches!(result, Err(Ctl::Wfi)) {
                    line.push_str(" (waits for an interrupt)");
                }
            }
            Err(Ctl::Exception(e)) if e.cause == crate::trigger::debugger::STOP_CAUSE => {
                line.push_str(" -> stopped before it at a debugger point");
            }
            Err(Ctl::Exception(e)) => {
                let _ = write!(line, " -> exception {} tval {:#x}", e.cause, e.tval);
            }
            Err(Ctl::Mmio(access)) => match access.write {
                Some(v) => {
                    let _ = write!(line, " -> device write {:#x} = {v:#x}", access.addr);
                }
                None => {
                    let _ = write!(line, " -> device read {:#x}", access.addr);
                }
            },
        }
        log::trace!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk before a deadline runs half of what the measured pace executes until it, at
    /// least a short chunk and at most a long one; the pace is measured over at least
    /// [`HostPace::WINDOW`] ticks, and starts at one slot a tick.
    #[test]
    fn host_pace_ends_chunks_halfway_to_the_deadline() {
        let mut p = HostPace::default();
        assert_eq!(p.chunk_before(20_000), 10_000);
        assert_eq!(p.chunk_before(100), CHUNK);
        assert_eq!(p.chunk_before(u64::MAX), LONG_CHUNK);
        p.measure(1_000, 0);
        // 50 ticks: too short a window to measure.
        p.measure(1_050, 5_000);
        assert_eq!(p.chunk_before(20_000), 10_000);
        // 200 ticks for 20 000 slots: 100 a tick.
        p.measure(1_200, 20_000);
        assert_eq!(p.chunk_before(1_000), 50_000);
        assert_eq!(p.chunk_before(50), CHUNK);
        // Idle in between (a WFI slept 1 000 ticks): the pace drops, and chunks shorten.
        p.measure(2_200, 21_000);
        assert_eq!(p.chunk_before(20_000), 10_000);
        // A clock that went back (a restored guest) starts a new measure, keeping the pace.
        p.measure(500, 0);
        assert_eq!(p.chunk_before(20_000), 10_000);
        p.measure(700, 60_000);
        assert_eq!(p.chunk_before(1_000), LONG_CHUNK);
    }
}
