//! The counting, as `impl Hart`: settling counters, the overflow countdown and LCOFI
//! (Sscofpmf; "Precise Local Counter Overflow Interrupt ISA Extension (Ssplcofi)"; the sample
//! PC of Sspesa's "Hardware Performance Monitor Sample PC Register (`shpmspc`)"), mode
//! filtering (Sscofpmf; Smcntrpmf "3 Counter Behavior"), the event tallies of the
//! interpreter's monitoring variant and the models they drive (see the module docs of
//! `pmu` for the scheme).

use super::events::{class, Event, CLASS};
use super::model::Cost;
use super::*;
use crate::hart::{Hart, PrivilegeMode};

/// How far one instruction can move a counter of `ev` (bounds the overflow countdown that
/// makes the LCOFI precise: Sspesa/Ssplcofi draft,
/// "Precise Local Counter Overflow Interrupt ISA Extension (Ssplcofi)").
fn max_rate(ev: Event) -> u64 {
    match ev {
        Event::Cycles => Cost::BASE + Cost::MAX_PENALTY,
        // One instruction retires at most once (an xRET's retirement at its mode change is
        // settled there, and the countdown recomputed).
        Event::Instret => 1,
        // An AMO is one read and one write access.
        _ => 2,
    }
}

/// Events a countdown computed in the middle of an instruction (a counter or monitor CSR
/// write, an xRET's mode change) does not see yet: the instruction's retirement, which the
/// settling already took out of the counters of instret (`Hart::pmu_settle`'s
/// `instret_extra`), and one more event of the instruction.
const PENDING: u64 = 2;

/// A counter of cycles closer than this to wrapping makes monitored blocks check their
/// cycles (`Hart::jit_check_at`).
const CYCLE_ROOM_FROM: u64 = 1 << 32;

/// The inhibit bit of a mode (Sscofpmf's xINH bits in `mhpmevent`, and Smcntrpmf 2.1
/// "Machine Counter Configuration Registers (mcyclecfg, minstretcfg)").
fn inh_bit(prv: PrivilegeMode, virt: bool) -> u64 {
    match (prv, virt) {
        (PrivilegeMode::Machine, _) => MINH,
        (PrivilegeMode::Supervisor, false) => SINH,
        (PrivilegeMode::User, false) => UINH,
        (PrivilegeMode::Supervisor, true) => VSINH,
        (PrivilegeMode::User, true) => VUINH,
    }
}

impl Hart {
    /// The tally of `ev` now.
    #[inline]
    fn tally(&self, ev: Event) -> u64 {
        let t = &self.pmu.state.tally;
        let x = &self.pmu.state.extra;
        match ev {
            Event::Cycles => self.vclock.wrapping_add(t[Event::Cycles as usize]),
            Event::Instret => self.retired,
            Event::L1dReadAccess => t[Event::Loads as usize] - x[tally::DEVICE_LOADS],
            Event::L1dWriteAccess => t[Event::Stores as usize] - x[tally::DEVICE_STORES],
            Event::L1dAccess => {
                self.tally(Event::L1dReadAccess) + self.tally(Event::L1dWriteAccess)
            }
            Event::L1dMiss => t[Event::L1dReadMiss as usize] + t[Event::L1dWriteMiss as usize],
            Event::InstDec => self.vclock.wrapping_sub(self.skipped_slots()),
            Event::InstDecLoad => t[Event::Loads as usize] + x[tally::TRAPPED_LOADS],
            Event::InstDecStore => t[Event::Stores as usize] + x[tally::TRAPPED_STORES],
            Event::InstDecLdst => {
                self.tally(Event::InstDecLoad) + self.tally(Event::InstDecStore)
                    - x[tally::AMOS]
                    - x[tally::TRAPPED_AMOS]
            }
            Event::InstDecBrjmp => {
                t[Event::Branches as usize]
                    + t[Event::Jumps as usize]
                    + x[tally::XRETS]
                    + x[tally::TRAPPED_BRJMP]
            }
            e => t[e as usize],
        }
    }

    /// Counter `i` (0 `mcycle`, 2 `minstret`, 3-31 `mhpmcounter`) now.
    pub(crate) fn counter(&self, i: usize) -> u64 {
        let p = &self.pmu;
        let v = p.state.value[i];
        match p.event[i] {
            Some(ev) if p.counting >> i & 1 != 0 => {
                v.wrapping_add(self.tally(ev).wrapping_sub(p.state.snap[i]))
            }
            _ => v,
        }
    }

    /// Fold the growth of every counting counter into its value, detecting overflows of the
    /// programmable ones (Sscofpmf). `instret_extra`: 1 when the instruction being executed
    /// retires in the current mode after this (an xRET, Smcntrpmf 3 "Counter Behavior").
    /// `pc`: the instruction an overflow is attributed to.
    pub(crate) fn pmu_settle(&mut self, instret_extra: u64, pc: u64) {
        let mut with_event = self.pmu.with_event;
        while with_event != 0 {
            let i = with_event.trailing_zeros() as usize;
            with_event &= with_event - 1;
            let Some(ev) = self.pmu.event[i] else {
                continue;
            };
            let mut t = self.tally(ev);
            if ev == Event::Instret {
                t = t.wrapping_add(instret_extra);
            }
            let st = &mut self.pmu.state;
            if self.pmu.counting >> i & 1 != 0 {
                let delta = t.wrapping_sub(st.snap[i]);
                let (v, wrapped) = st.value[i].overflowing_add(delta);
                st.value[i] = v;
                if wrapped && i >= 3 {
                    self.counter_overflow(i, pc);
                }
            }
            self.pmu.state.snap[i] = t;
        }
    }

    /// Sscofpmf: counter `i` wrapped. With OF clear, OF is set and an LCOFI requested; the
    /// first request that makes LCOFIP pending captures the sample (Sspesa,
    /// "Hardware Performance Monitor Sample PC Register (`shpmspc`)").
    fn counter_overflow(&mut self, i: usize, pc: u64) {
        let ev = &mut self.pmu.state.mhpmevent[i];
        if *ev & OF != 0 {
            return;
        }
        *ev |= OF;
        // Sspesa: with counter delegation enabled only delegated counters capture.
        let delegated = self.csr.mcounteren >> i & 1 != 0;
        let captures = self.csr.menvcfg & MENVCFG_CDE == 0 || delegated;
        self.lcofi_request(captures.then_some((pc, i as u64)));
    }

    /// Set LCOFIP (and end the chunk). `sample`: the pc and CNTRID Sspesa captures if LCOFIP
    /// goes from 0 to 1 ("Hardware Performance Monitor Sample PC Register (`shpmspc`)",
    /// "Hardware Performance Monitor Sample Metadata (`shpmsdata`)"; with CDE = 1 only
    /// delegated counters capture).
    pub(crate) fn lcofi_request(&mut self, sample: Option<(u64, u64)>) {
        if self.csr.mip & LCOFIP == 0 {
            if let Some((pc, id)) = sample {
                self.pmu.state.shpmspc = pc;
                self.pmu.state.shpmsdata = id & 0x1f;
            }
        }
        self.csr.mip |= LCOFIP;
        self.pmu.brk = true;
    }

    /// Recompute what counts in the current mode (mode filtering: Sscofpmf, and Smcntrpmf 3
    /// "Counter Behavior"), whether the monitor is active, and the overflow countdown. Call
    /// after settling.
    pub(crate) fn pmu_refresh(&mut self) {
        self.pmu_translation_tags();
        let pdis_here = self.pdis_counts_here();
        let pdis_anywhere = self.pdis_enabled_anywhere();
        let p = &mut self.pmu;
        p.derive_events();
        let inh = inh_bit(self.prv, self.virt);
        let mut counting = 0u32;
        let mut active = false;
        let mut filtering = false;
        for i in 0..32 {
            if p.event[i].is_none() || p.state.mcountinhibit >> i & 1 != 0 {
                continue;
            }
            let f = p.filter(i) & INH;
            if i >= 3 && f != INH {
                active = true;
            }
            if f != 0 {
                filtering = true;
            }
            if f & inh == 0 {
                counting |= 1 << i;
            }
        }
        p.counting = counting;
        p.filtering = filtering;
        p.pdis_here = pdis_here;
        p.every_insn = pdis_here || p.fetch_tag.is_some();
        p.active = active || pdis_anywhere;
        self.pmu_recount();
    }

    /// The overflow countdown from the current values: `check_at` is the end of the
    /// instructions none of which can wrap a counter (a counter `left` events short of
    /// wrapping survives `(left - 1) / max_rate` instructions; [`PENDING`] events fewer are
    /// assumed, for a countdown computed in the middle of an instruction), or, when the very next
    /// instruction may wrap one, the end of that instruction alone, so that an overflow
    /// found there is attributed to it (the precise LCOFI of
    /// "Precise Local Counter Overflow Interrupt ISA Extension (Ssplcofi)").
    fn pmu_recount(&mut self) {
        let mut safe = u64::MAX;
        let mut safe_but_cycles = u64::MAX;
        let mut cycles_left = u64::MAX;
        let mut counting = self.pmu.counting & !0b111;
        while counting != 0 {
            let i = counting.trailing_zeros() as usize;
            counting &= counting - 1;
            let Some(ev) = self.pmu.event[i] else {
                continue;
            };
            let left = self.counter(i).wrapping_neg();
            let left = if left == 0 { u64::MAX } else { left };
            let s = left.saturating_sub(1 + PENDING) / max_rate(ev);
            safe = safe.min(s);
            if ev == Event::Cycles {
                cycles_left = cycles_left.min(left.saturating_sub(1 + PENDING));
            } else {
                safe_but_cycles = safe_but_cycles.min(s);
            }
        }
        self.pmu.may_wrap = safe == 0;
        self.pmu.check_at = self.vclock.saturating_add(safe.max(1));
        self.pmu.counted_at = self.vclock;
        self.pmu.check_at_but_cycles = self.vclock.saturating_add(safe_but_cycles.max(1));
        self.pmu.cycle_limit = self.tally(Event::Cycles).saturating_add(cycles_left);
        // A counter of cycles that will wrap soon (a sampling profiler's): from now on
        // monitored blocks check their cycles (`jit::Jit::cycle_room`).
        if cycles_left < CYCLE_ROOM_FROM {
            if let Some(jit) = self.jit.as_deref_mut() {
                jit.check_cycle_room();
            }
        }
    }

    /// The end of the overflow countdown for translated code: `check_at`, or, where
    /// monitored blocks check that their cycles fit before `cycle_limit` (each adds at most
    /// its `jit::Block::cycles`), the countdown of the other counters. Counters of cycles
    /// can move by 51 in one instruction (`max_rate`), so a sampling profiler's counter
    /// would otherwise end translated code every few dozen instructions near its overflow.
    #[inline]
    pub(crate) fn jit_check_at(&self) -> u64 {
        if !self.pmu.may_wrap && self.jit.as_deref().is_some_and(|j| j.cycle_room()) {
            self.pmu.check_at_but_cycles
        } else {
            self.pmu.check_at
        }
    }

    /// How many more cycles translated code may add before a counter of cycles can wrap
    /// (`MonitorView::cycle_room`).
    #[inline]
    pub(crate) fn pmu_cycle_room(&self) -> u64 {
        self.pmu
            .cycle_limit
            .saturating_sub(self.tally(Event::Cycles))
    }

    /// Settle, detect overflows and recompute the countdown; returns whether an LCOFI was
    /// requested (the chunk must end, so the LCOFI is taken right after the causal
    /// instruction: "Precise Local Counter Overflow Interrupt ISA Extension (Ssplcofi)").
    #[cold]
    #[inline(never)]
    pub(crate) fn pmu_check(&mut self, pc: u64) -> bool {
        // Up to `check_at` no counter can have wrapped unless the countdown said the
        // instruction ending there may: only then must the counters be settled to find out
        // (they are read as value + growth since the last settling either way).
        if self.pmu.may_wrap || self.vclock > self.pmu.check_at {
            self.pmu_settle(0, pc);
        }
        self.pmu_recount();
        std::mem::take(&mut self.pmu.brk)
    }

    /// Before a privilege or virtualization mode change: counters are settled under the
    /// old mode. `retiring`: the instruction causing it retires (an xRET, counted in the
    /// mode it was executed in: Smcntrpmf 3 "Counter Behavior").
    #[inline]
    pub(crate) fn pmu_before_mode_change(&mut self, retiring: bool) {
        if self.pmu.filtering || self.pmu.active {
            self.pmu_settle(retiring as u64, self.pc);
        }
    }

    /// After a mode change (from `mode_changed`).
    #[inline]
    pub(crate) fn pmu_after_mode_change(&mut self) {
        if self.pmu.filtering || self.pmu.active {
            self.pmu_refresh();
        }
    }

    /// Which translations are active for the TLB models (tags carry the mode so that S, U,
    /// VS and VU pages do not alias). Called at mode changes and translation changes.
    pub(crate) fn pmu_translation_tags(&mut self) {
        let data = self.data_mode();
        let fetch = self.fetch_mode();
        let on = |prv: PrivilegeMode, virt: bool| {
            prv != PrivilegeMode::Machine && (virt || self.csr.satp >> 60 != 0)
        };
        let tag = |prv: PrivilegeMode, virt: bool| ((prv as u64) << 60) | ((virt as u64) << 62);
        self.pmu.fetch_tag = on(fetch.prv, fetch.virt).then(|| tag(fetch.prv, fetch.virt));
        self.pmu.data_tag = on(data.prv, data.virt).then(|| tag(data.prv, data.virt));
        self.pmu.every_insn = self.pmu.pdis_here || self.pmu.fetch_tag.is_some();
        self.pmu_view_refresh();
    }

    /// A trap is being taken (from `enter_trap`, before the mode changes): count it.
    pub(crate) fn pmu_trap(&mut self, interrupt: bool) {
        if !self.pmu.active {
            return;
        }
        let t = &mut self.pmu.state.tally;
        t[if interrupt {
            Event::Interrupts
        } else {
            Event::Exceptions
        } as usize] += 1;
        t[Event::Cycles as usize] += Cost::TRAP;
    }

    // The hooks of the monitoring variants of the interpreter. With `PMU_ARMS` the execute
    // arms of loads, stores, branches, jumps, multiplies and divides call them directly (so
    // other instructions pay nothing); with `PMU_FULL` (the ITLB model or PDIS needs every
    // instruction) the loop calls `pmu_events`, which dispatches on the operation's class.
    // Each returns the events it saw as a bit set (for PDIS's record).

    /// A load from RAM at `addr` completed.
    #[inline(always)]
    pub(crate) fn pmu_load(&mut self, addr: u64) -> u32 {
        self.pmu_access::<false>(addr)
    }

    /// A store to RAM at `addr` completed.
    #[inline(always)]
    pub(crate) fn pmu_store(&mut self, addr: u64) -> u32 {
        self.pmu_access::<true>(addr)
    }

    /// A data access to RAM: the L1D and DTLB models, and the load or store events.
    #[inline(always)]
    fn pmu_access<const STORE: bool>(&mut self, addr: u64) -> u32 {
        let (count, miss, tlb_miss) = if STORE {
            (Event::Stores, Event::L1dWriteMiss, Event::DtlbWriteMiss)
        } else {
            (Event::Loads, Event::L1dReadMiss, Event::DtlbReadMiss)
        };
        self.jit_view.last_line = u64::MAX;
        let p = &mut self.pmu;
        let t = &mut p.state.tally;
        t[count as usize] += 1;
        let mut inc = 1 << count as u32;
        if p.state.models.l1d_miss(addr) {
            t[miss as usize] += 1;
            t[Event::Cycles as usize] += Cost::L1D_MISS;
            inc |= 1 << miss as u32;
        }
        if let Some(tag) = p.data_tag {
            if p.state.models.dtlb_miss(tag | (addr >> 12)) {
                t[tlb_miss as usize] += 1;
                t[Event::Cycles as usize] += Cost::DTLB_MISS;
                inc |= 1 << tlb_miss as u32;
            }
        }
        inc
    }

    /// An AMO at `addr` completed: one read and one write access of the same line.
    #[inline(always)]
    pub(crate) fn pmu_amo(&mut self, addr: u64) -> u32 {
        self.pmu.state.extra[tally::AMOS] += 1;
        self.pmu_load(addr) | self.pmu_store(addr)
    }

    /// A conditional branch at `pc` retired (`taken`: the pc moved by its offset).
    #[inline(always)]
    pub(crate) fn pmu_branch(&mut self, pc: u64, taken: bool) -> u32 {
        let p = &mut self.pmu;
        let t = &mut p.state.tally;
        t[Event::Branches as usize] += 1;
        t[Event::TakenBranches as usize] += taken as u64;
        let mut inc =
            (1 << Event::Branches as u32) | ((taken as u32) << Event::TakenBranches as u32);
        if p.state.models.branch_mispredicted(pc, taken) {
            t[Event::BranchMisses as usize] += 1;
            t[Event::Cycles as usize] += Cost::MISPREDICT;
            inc |= 1 << Event::BranchMisses as u32;
        }
        inc
    }

    /// A JAL (`indirect` false) or JALR at `pc` retired; the pc is its target now.
    #[inline(always)]
    pub(crate) fn pmu_jump(&mut self, pc: u64, indirect: bool) -> u32 {
        let target = self.pc;
        let p = &mut self.pmu;
        let t = &mut p.state.tally;
        t[Event::Jumps as usize] += 1;
        let mut inc = 1 << Event::Jumps as u32;
        if indirect && p.state.models.indirect_mispredicted(pc, target) {
            t[Event::BranchMisses as usize] += 1;
            t[Event::Cycles as usize] += Cost::MISPREDICT;
            inc |= 1 << Event::BranchMisses as u32;
        }
        inc
    }

    /// Extra cycles of a long-latency operation (multiply, divide).
    #[inline(always)]
    pub(crate) fn pmu_cycles(&mut self, n: u64) {
        self.pmu.state.tally[Event::Cycles as usize] += n;
    }

    /// An MRET or SRET retired.
    #[inline(always)]
    pub(crate) fn pmu_xret(&mut self) {
        self.pmu.state.extra[tally::XRETS] += 1;
    }

    /// An instruction fetched from `pc` retired: the ITLB model, when fetches are
    /// translated (consecutive fetches from one page look it up once).
    #[inline(always)]
    pub(crate) fn pmu_fetch(&mut self, pc: u64) -> u32 {
        if let Some(tag) = self.pmu.fetch_tag {
            if self.pmu.state.models.itlb_miss(tag | (pc >> 12)) {
                let t = &mut self.pmu.state.tally;
                t[Event::ItlbMiss as usize] += 1;
                t[Event::Cycles as usize] += Cost::ITLB_MISS;
                return 1 << Event::ItlbMiss as u32;
            }
        }
        0
    }

    /// Set what monitored blocks read beside the models (`Hart::jit_view`, `jit::x64`): the
    /// translation tags (`u64::MAX`: no translation), with the shortcuts that depend on
    /// them reset. Called whenever the tags are recomputed, which the monitor's
    /// construction and restore do too.
    fn pmu_view_refresh(&mut self) {
        self.jit_view = crate::jit::MonitorView {
            data_tag: self.pmu.data_tag.unwrap_or(u64::MAX),
            fetch_tag: self.pmu.fetch_tag.unwrap_or(u64::MAX),
            last_line: u64::MAX,
            fetch_page: crate::jit::NO_PAGE,
            cycle_room: u64::MAX,
        };
    }

    /// The page monitored blocks may take as reported (`MonitorView::fetch_page`): the ITLB
    /// model's last page when its tag is the current fetch tag.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(crate) fn pmu_fetch_page(&self) -> u64 {
        const PAGE: u64 = (1 << 52) - 1;
        let last = self.pmu.state.models.last_fetch_page;
        match self.pmu.fetch_tag {
            Some(tag) if last != u64::MAX && last & !PAGE == tag => {
                (((last & PAGE) << 12) as i64 >> 12) as u64
            }
            _ => crate::jit::NO_PAGE,
        }
    }

    /// Byte offsets (from the hart's `Pmu`) of the event tallies and of the models, for
    /// monitored blocks.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn pmu_jit_offsets() -> (usize, usize) {
        use std::mem::offset_of;
        let state = offset_of!(Pmu, state);
        (
            state + offset_of!(PmuState, tally),
            state + offset_of!(PmuState, models),
        )
    }

    /// Whether translated blocks may run under the monitor: everything it observes per
    /// instruction but PDIS is reported by the blocks (`jit::x64`, "monitored blocks").
    #[inline]
    pub(crate) fn pmu_translatable(&self) -> bool {
        !self.pmu.pdis_here
    }

    /// `PMU_FULL`: an instruction retired; tally its events by class, run the ITLB model and
    /// step PDIS. `pc`: its address; `addr`: its data address. Returns whether the chunk must
    /// end (an LCOFI was requested).
    #[inline(never)]
    pub(crate) fn pmu_events(&mut self, insn: &crate::decode::Insn, pc: u64, addr: u64) -> bool {
        use crate::decode::Op;
        let c = CLASS[insn.op as usize];
        let before = self.pmu.state.tally[Event::Cycles as usize];
        let mut inc = self.pmu_fetch(pc);
        // Only RAM accesses reach here (a device access leaves the chunk as an exit).
        inc |= match c {
            0 => 0,
            class::LOAD => self.pmu_load(addr),
            class::STORE => self.pmu_store(addr),
            class::MEMORY => self.pmu_amo(addr),
            // Taken by its condition (the registers are unchanged): a branch whose offset
            // is its own length is taken though it lands where it would fall through.
            class::BRANCH => self.pmu_branch(pc, self.branch_condition(insn)),
            class::JUMP => self.pmu_jump(pc, insn.op == Op::Jalr),
            class::XRET => {
                self.pmu_xret();
                0
            }
            class::MUL => {
                self.pmu_cycles(Cost::MUL);
                0
            }
            _ => {
                self.pmu_cycles(Cost::DIV);
                0
            }
        };
        if self.pmu.pdis_here {
            let pen = self.pmu.state.tally[Event::Cycles as usize] - before;
            self.pdis_step(insn, c, pc, addr, pen, inc, false);
        }
        self.pmu.brk
    }

    /// An instruction trapped (monitoring variant): PDIS still saw it decoded.
    #[cold]
    pub(crate) fn pmu_trapped(&mut self, insn: &crate::decode::Insn, pc: u64) -> bool {
        let c = CLASS[insn.op as usize];
        let t = &mut self.pmu.state.extra;
        if c & class::LOAD != 0 {
            t[tally::TRAPPED_LOADS] += 1;
        }
        if c & class::STORE != 0 {
            t[tally::TRAPPED_STORES] += 1;
        }
        if c & class::MEMORY == class::MEMORY {
            t[tally::TRAPPED_AMOS] += 1;
        }
        if c & (class::BRANCH | class::JUMP | class::XRET) != 0 {
            t[tally::TRAPPED_BRJMP] += 1;
        }
        if self.pmu.pdis_here {
            self.pdis_step(insn, c, pc, 0, 0, 0, true);
        }
        if self.pmu.brk {
            return self.pmu_check(pc);
        }
        false
    }

    /// A device load or store retired (no cache or TLB model: devices are uncached).
    pub(crate) fn pmu_device_access(&mut self, load: bool) {
        if !self.pmu.active {
            return;
        }
        let st = &mut self.pmu.state;
        if load {
            st.tally[Event::Loads as usize] += 1;
            st.extra[tally::DEVICE_LOADS] += 1;
        } else {
            st.tally[Event::Stores as usize] += 1;
            st.extra[tally::DEVICE_STORES] += 1;
        }
    }

    /// Write counter `i`: the write replaces the increment of the writing instruction.
    pub(crate) fn write_counter(&mut self, i: usize, v: u64) {
        // Settling with the writing instruction's retirement included makes the counters
        // of instret skip it (Zicsr: "the write is done instead of the increment").
        self.pmu_settle(self.writer_retires(), self.pc);
        self.pmu.state.value[i] = v;
        self.pmu_refresh();
    }

    /// 1 when a CSR instruction of the hart writes the monitor (it retires under the old
    /// setting), 0 for a write by the hypervisor (`Vcpu::set_host_csr`), which retires
    /// nothing: counting it would make a stopped counter start one instruction behind and
    /// a running one gain one per write.
    fn writer_retires(&self) -> u64 {
        u64::from(!self.pmu.host_write)
    }

    /// Change monitor configuration through `f` (settle before, refresh after).
    /// The writing instruction itself retires under the old setting.
    pub(crate) fn pmu_reconfigure(&mut self, f: impl FnOnce(&mut PmuState)) {
        self.pmu_settle(self.writer_retires(), self.pc);
        f(&mut self.pmu.state);
        self.pmu_refresh();
    }

    /// Write `mhpmevent{i}`: WARL, an event outside the catalog becomes 0; xINH bits of
    /// modes the hart lacks do not exist (all five exist here).
    pub(crate) fn write_mhpmevent(&mut self, i: usize, v: u64) {
        let sel = v & EVENT_SELECT;
        let sel = if events::from_selector(sel).is_some() {
            sel
        } else {
            0
        };
        self.pmu_reconfigure(|s| s.mhpmevent[i] = (v & (OF | INH)) | sel);
    }

    /// Which interpreter variant the monitor needs: [`PMU_OFF`], [`PMU_ARMS`] or [`PMU_FULL`].
    #[inline]
    pub(crate) fn pmu_variant(&self) -> u8 {
        match (self.pmu.active, self.pmu.every_insn) {
            (false, _) => PMU_OFF,
            (true, false) => PMU_ARMS,
            (true, true) => PMU_FULL,
        }
    }

    /// Restore monitor state (from a snapshot) and derive the rest.
    pub(crate) fn pmu_restore(&mut self, s: &PmuState) {
        self.pmu.state = s.clone();
        self.pmu.brk = false;
        self.pmu.pdis_skip = false;
        self.pmu_refresh();
        self.pmu_translation_tags();
    }
}
