//! The hart: architectural state, construction, accessors and the public run interface.
//! The interpreter loop is in `interp.rs`, instruction semantics in `execute/`.

use vm_memory::GuestMemoryMmap;

use crate::config::{HartConfig, MmioRange};
use crate::csr::file::CsrFile;
use crate::decode::{self, Insn, Op};
use crate::memory::Ram;
use crate::mmu::tlb::Tlb;
use crate::trap::Exception;
use crate::{INSNS_PER_TICK, TIMEBASE_HZ};
use std::sync::Arc;
use vcpu_api::{HartMailbox, SharedClock};
use vcpu_api::{MmioAccess, StopHandle, VcpuExit};

pub use vcpu_api::PrivilegeMode;

/// Errors creating a hart.
#[derive(Debug, thiserror::Error)]
pub enum HartError {
    /// Guest RAM is not usable by the hart.
    #[error("unsupported guest RAM layout: {0}")]
    RamLayout(String),
    /// A configuration value is out of range.
    #[error("invalid hart configuration: {0}")]
    Config(String),
    /// The CTR configuration is not one a hart can have.
    #[error("invalid hart configuration: {0}")]
    Ctr(#[from] vcpu_api::ctr::CtrConfigError),
    /// The performance-monitoring configuration is not one a hart can have.
    #[error("invalid hart configuration: {0}")]
    Pmu(#[from] vcpu_api::pmu::PmuConfigError),
    /// The IMSIC configuration is not one a hart can have.
    #[error("invalid hart configuration: {0}")]
    Imsic(#[from] crate::csr::imsic::ImsicConfigError),
}

/// Control flow out of an instruction other than normal completion.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ctl {
    /// Take this exception.
    Exception(Exception),
    /// The instruction completed (pc already updated) and changed state that may make an
    /// interrupt pending or a deadline move: leave the chunk and re-check.
    Break,
    /// A load from a device (instruction not completed) or a store to one (completed by
    /// the caller of `execute`, which advances pc).
    Mmio(MmioAccess),
    /// WFI with nothing pending (pc already advanced past it).
    Wfi,
}

impl From<crate::memory::RamError> for HartError {
    fn from(e: crate::memory::RamError) -> HartError {
        HartError::RamLayout(e.to_string())
    }
}

impl From<Exception> for Ctl {
    fn from(e: Exception) -> Ctl {
        Ctl::Exception(e)
    }
}

/// The raw bits an empty decode-cache slot claims to hold (with their true decoding).
const EMPTY_SLOT: u32 = 0xffff_ffff;

/// PAUSEs at most this many instruction slots apart belong to one spin loop
/// ([`Hart::pause_loop`]).
const PAUSE_GAP: u64 = 1024;
/// How long a spin loop runs, in instruction slots, before the hart yields its host CPU
/// ([`Hart::pause_loop`]): a few hundred passes through Linux's `cpu_relax` loops, tens of
/// microseconds.
const PAUSE_WINDOW: u64 = 4096;

/// A software RISC-V hart (see the crate documentation).
#[allow(missing_debug_implementations)] // Its state is large; `save_state` gives a Debug view.
pub struct Hart {
    /// x0-x31 plus the write sink at index 32 (see [`decode::X0_SINK`]); 64 slots so that
    /// a masked index needs no bounds check.
    pub(crate) x: [u64; 64],
    /// f0-f31 as 64-bit registers (single precision values are NaN-boxed).
    pub(crate) f: [u64; 32],
    pub(crate) pc: u64,
    pub(crate) prv: PrivilegeMode,
    /// The virtualization mode V (H extension): 1 in VS-mode and VU-mode.
    pub(crate) virt: bool,
    pub(crate) csr: CsrFile,
    pub(crate) ram: Ram,
    pub(crate) mmio: Vec<MmioRange>,
    pub(crate) tlb: Tlb,
    pub(crate) dcache: Vec<Insn>,
    pub(crate) dcache_mask: usize,
    /// Translated blocks (`None`: interpret only).
    pub(crate) jit: Option<Box<crate::jit::table::Jit>>,
    /// Translated code: instructions it may still run in this call (see `jit::x64`).
    pub(crate) jit_budget: u64,
    /// Translated code: the guest address of the last load or store (monitored blocks).
    pub(crate) jit_addr: u64,
    /// Translated code: the monitor's model state as monitored blocks use it.
    pub(crate) jit_view: crate::jit::table::MonitorView,
    /// Translated code: `vclock + jit_budget` when the call began (the clock inside a block
    /// run is `jit_clock - jit_budget`).
    pub(crate) jit_clock: u64,
    /// Translated code: the address of the exit slot a block left through unlinked, or 0.
    pub(crate) jit_last_exit: u64,
    /// While the interpreter runs a block not translated yet (`Jit::cold`), or one too long
    /// for the rest of the chunk: the pc of the instruction it runs;
    /// [`NOT_COLD`](crate::jit::NOT_COLD) otherwise (`Hart::jit_step`).
    pub(crate) jit_cold: u64,
    /// How many more instructions the interpreter runs on from `jit_cold` without a dispatch:
    /// the rest of a block too long for the chunk, or `u64::MAX` (a block not translated yet:
    /// up to the next jump, taken branch or page end).
    pub(crate) jit_cold_left: u64,
    /// Translated code: set by a load/store slow path that met a fault or a device.
    pub(crate) jit_fault: bool,
    /// Translated code: the blocks recent JALRs reached (`jit::jumps`).
    pub(crate) jit_jumps: crate::jit::jumps::JumpCache,
    /// Translated code: the code epoch (`jit::guard`): a block whose slot holds another
    /// value checks its code bytes at entry.
    pub(crate) jit_code_epoch: u64,
    /// `HartConfig::pause_yields`.
    pub(crate) pause_yields: bool,
    /// Pause-loop detection ([`Hart::pause_loop`]): where the current spin loop started
    /// and its last PAUSE, on the virtual clock.
    pause_spin: (u64, u64),
    /// How far a run may go past its budget to finish a translated block
    /// (`Vcpu::set_budget_slack`); 0: never.
    pub(crate) budget_slack: u64,
    /// Translated code: a CSR write ended the block run, which ends the chunk too (as
    /// `Ctl::Break` does in the interpreter).
    pub(crate) jit_break: bool,
    /// Translated code: the block at pc is longer than the instructions left in the chunk
    /// (`jit_step` ran nothing): the instructions it needs, or 0.
    pub(crate) jit_short: u64,
    /// LR reservation: RAM offset and the value loaded.
    pub(crate) reservation: crate::execute::Reservation,
    /// A device load waiting for [`Hart::complete_mmio_read`].
    pub(crate) pending_load: Option<Insn>,
    /// Instructions retired.
    pub(crate) retired: u64,
    /// Virtual clock in instruction slots (retired + trapped + skipped idle time).
    pub(crate) vclock: u64,
    /// Clock slots added by [`Hart::skip_to_timer`] (idle time, not instructions).
    pub(crate) skipped: u64,
    /// Virtual time: `mtime = vclock / INSNS_PER_TICK + time_offset`; host time
    /// (`host_clock`): `mtime = host_now + time_offset`.
    time_offset: u64,
    /// Host time: the clock `mtime` follows (`None`: virtual time).
    pub(crate) host_clock: Option<vcpu_api::HostClock>,
    /// Host time: `host_clock` as last read (at the start of each chunk, and by a read of
    /// `time` a chunk's worth of instructions later: [`Hart::read_time`]).
    pub(crate) host_now: u64,
    /// Host time: `vclock` when `host_now` was read.
    pub(crate) host_read_at: u64,
    /// Host time: the guest's pace, by which a hart alone ends its chunks before its next
    /// timer deadline (`interp`).
    pub(crate) host_pace: crate::interp::HostPace,
    pub(crate) mtimecmp: u64,
    /// Interrupt lines driven by the platform (MSIP, MEIP, SEIP).
    pub(crate) ext_lines: u64,
    pub(crate) stop: StopHandle,
    trace: bool,
    /// Which instructions `trace` prints.
    pub(crate) trace_range: vcpu_api::TraceRange,
    /// Hosted mode: the hart runs a guest (V=1) and traps to HS/M exit to the caller.
    pub(crate) hosted: bool,
    /// The trap that ends the current `run` in hosted mode.
    pub(crate) guest_exit: Option<vcpu_api::GuestTrap>,
    /// The VMM's timer for the guest: VSTIP while guest time >= this (hosted mode).
    pub(crate) guest_timer: u64,
    hart_id: u64,
    /// SMP: the clock shared with the other harts.
    pub(crate) shared_clock: Option<Arc<SharedClock>>,
    /// Interrupts and fences posted by other threads.
    pub(crate) mailbox: Arc<HartMailbox>,
    /// Control Transfer Records: state and configuration.
    pub(crate) ctr: crate::ctr::Ctr,
    /// CTR: bit t set when a jump or branch of transfer type t is recorded in the current
    /// mode (0 while CTR is inactive); see `ctr::Hart::ctr_refresh`.
    pub(crate) ctr_mask: u16,
    /// CTR: `ctr_mask` when the record of a jump or branch takes the common path (RASEMU
    /// off, and the next record has CCV = 1), else 0: translated code logs those records
    /// inline (`jit::x64`, `ctr_log`); see `ctr::Hart::ctr_refresh_fast`.
    pub(crate) ctr_fast_mask: u16,
    /// CTR: the records translated code logged, until `Hart::ctr_drain` moves them into
    /// the buffer (`ctr/log.rs`).
    pub(crate) ctr_log: crate::ctr::log::CtrLog,
    /// Whether trap entry reports to CTR (off while the VMM injects a trap: a hypervisor's
    /// emulated trap entry is CSR writes, which CTR does not see).
    pub(crate) ctr_trap_hook: bool,
    /// Performance monitoring: counters, models, PDIS.
    pub(crate) pmu: crate::pmu::Pmu,
    /// Draft CSRs configured away from their provisional numbers: (number, provisional).
    pub(crate) csr_alias: Vec<(u16, u16)>,
    /// Physical Memory Protection.
    pub(crate) pmp: crate::pmp::Pmp,
    /// Sdtrig debug triggers.
    pub(crate) trig: crate::trigger::Triggers,
    /// The IMSIC's interrupt files and `hgeie` (empty without an IMSIC).
    pub(crate) imsic: crate::csr::imsic::ImsicState,
    /// The IMSIC's MEIP and SEIP signals (derived from `imsic`, see `imsic_refresh`).
    pub(crate) imsic_mip: u64,
    /// `hgeip`: the guest interrupt files' signals (derived from `imsic`).
    pub(crate) hgeip: u64,
}

impl Hart {
    /// Create a hart in its reset state (M-mode, pc 0) over guest RAM `mem`, which must be a
    /// single region.
    pub fn new(config: HartConfig, mem: GuestMemoryMmap) -> Result<Hart, HartError> {
        let n = config.decode_cache_entries;
        if !n.is_power_of_two() || !(16..=1 << 22).contains(&n) {
            return Err(HartError::Config(format!(
                "decode cache size {n} must be a power of two in 16..=4194304"
            )));
        }
        if let Some(c) = &config.ctr {
            c.validate()?;
        }
        if config.jit && config.jit_code_bytes < 1 << 20 {
            return Err(HartError::Config(format!(
                "translated-code space of {} bytes is below the minimum of 1 MiB",
                config.jit_code_bytes
            )));
        }
        config.pmu.validate()?;
        if let Some(c) = &config.imsic {
            c.validate()?;
        }
        if !matches!(config.pmp_entries, 0 | crate::pmp::ENTRIES) {
            return Err(HartError::Config(format!(
                "{} PMP entries: the hart implements 0 or {}",
                config.pmp_entries,
                crate::pmp::ENTRIES
            )));
        }
        let csr_alias = config
            .pmu
            .numbers
            .pairs()
            .into_iter()
            .filter(|&(n, p)| n != p)
            .collect();
        let mut hart = Hart {
            x: [0; 64],
            f: [0; 32],
            pc: 0,
            prv: PrivilegeMode::Machine,
            virt: false,
            csr: CsrFile {
                // Reset value UNSPECIFIED (Sstc); "never" avoids a spurious STIP/VSTIP.
                stimecmp: u64::MAX,
                vstimecmp: u64::MAX,
                ..CsrFile::default()
            },
            ram: Ram::new(mem)?,
            mmio: config.mmio,
            tlb: Tlb::new(),
            dcache: vec![decode::decode(EMPTY_SLOT); n],
            dcache_mask: n - 1,
            jit: if config.jit {
                let jit = crate::jit::table::Jit::new(
                    config.jit_code_bytes,
                    config.jit_perf_map,
                    config.jit_threshold,
                    config.jit_table_resident,
                );
                if jit.is_none() && cfg!(target_arch = "x86_64") {
                    log::warn!(
                        "hart {}: no executable memory for block translation; interpreting",
                        config.hart_id
                    );
                }
                jit
            } else {
                None
            },
            jit_budget: 0,
            jit_clock: 0,
            jit_addr: 0,
            jit_view: crate::jit::table::MonitorView::default(),
            jit_last_exit: 0,
            jit_cold: crate::jit::NOT_COLD,
            jit_cold_left: 0,
            jit_fault: false,
            jit_jumps: Default::default(),
            jit_code_epoch: 0,
            pause_yields: config.pause_yields,
            pause_spin: (0, 0),
            budget_slack: 0,
            jit_break: false,
            jit_short: 0,
            reservation: Default::default(),
            pending_load: None,
            retired: 0,
            vclock: 0,
            skipped: 0,
            time_offset: 0,
            host_clock: config.host_clock,
            host_now: config.host_clock.map_or(0, |c| c.ticks()),
            host_read_at: 0,
            host_pace: Default::default(),
            mtimecmp: u64::MAX,
            ext_lines: 0,
            stop: StopHandle::default(),
            trace: false,
            trace_range: vcpu_api::TraceRange::default(),
            hosted: false,
            guest_exit: None,
            guest_timer: u64::MAX,
            hart_id: config.hart_id,
            shared_clock: config.shared_clock,
            mailbox: Arc::new(HartMailbox::default()),
            ctr: crate::ctr::Ctr::new(config.ctr),
            ctr_mask: 0,
            ctr_fast_mask: 0,
            ctr_log: Default::default(),
            ctr_trap_hook: true,
            pmu: crate::pmu::Pmu::new(config.pmu),
            csr_alias,
            pmp: crate::pmp::Pmp::new(config.pmp_entries),
            trig: crate::trigger::Triggers::default(),
            imsic: crate::csr::imsic::ImsicState::new(config.imsic),
            imsic_mip: 0,
            hgeip: 0,
        };
        hart.pmu_refresh();
        hart.pmu_translation_tags();
        Ok(hart)
    }

    /// Program counter.
    pub fn pc(&self) -> u64 {
        self.pc
    }
    /// Set the program counter.
    pub fn set_pc(&mut self, pc: u64) {
        self.pc = pc;
    }
    /// Integer register `i` (0-31).
    pub fn xreg(&self, i: usize) -> u64 {
        if i == 0 || i > 31 {
            0
        } else {
            self.x[i]
        }
    }
    /// Set integer register `i` (writes to x0 and out-of-range indices are ignored).
    pub fn set_xreg(&mut self, i: usize, v: u64) {
        if (1..32).contains(&i) {
            self.x[i] = v;
        }
    }
    /// Floating-point register `i` as raw bits.
    pub fn freg(&self, i: usize) -> u64 {
        self.f[i & 31]
    }
    /// Set floating-point register `i` (0-31) to raw bits, as a debugger does: `mstatus.FS`
    /// is left as it is.
    pub fn set_freg(&mut self, i: usize, v: u64) {
        self.f[i & 31] = v;
    }
    /// Current privilege mode.
    pub fn privilege(&self) -> PrivilegeMode {
        self.prv
    }
    /// The virtualization mode V (VS- or VU-mode when set).
    pub fn virt(&self) -> bool {
        self.virt
    }
    /// `mhartid`.
    pub fn hart_id(&self) -> u64 {
        self.hart_id
    }
    /// Instructions retired so far (independent of `minstret` writes and inhibits).
    pub fn instret(&self) -> u64 {
        self.retired
    }
    /// Instructions executed so far, retired or trapped (what an instruction budget counts).
    pub fn executed(&self) -> u64 {
        self.vclock - self.skipped
    }
    /// Blocks translated to host code so far (0 with translation off; see `HartConfig::jit`).
    pub fn translated_blocks(&self) -> u64 {
        self.jit.as_deref().map_or(0, |j| j.translated)
    }
    /// Runs of translated code that ended in a block whose code bytes had changed since it
    /// was translated (the block is then forgotten, and so are the links to it).
    pub fn stale_block_exits(&self) -> u64 {
        self.jit.as_deref().map_or(0, |j| j.stale_exits)
    }
    /// RAM pages found to hold both translated code and data the guest writes (their
    /// blocks compare their code at every entry; `jit::guard`).
    pub fn mixed_code_pages(&self) -> u64 {
        self.jit.as_deref().map_or(0, |j| j.guard.mixed_pages())
    }
    /// How many times the translated-code space filled up and was emptied.
    pub fn translated_code_resets(&self) -> u64 {
        self.jit.as_deref().map_or(0, |j| j.generation)
    }
    /// A handle another thread can use to stop [`Hart::run`].
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }
    /// Enable per-instruction tracing at `log` trace level. When off (or when the trace level
    /// is disabled) the interpreter loop contains no tracing code at all.
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on;
    }

    /// Limit `set_trace`'s tracing to these instruction numbers and pcs.
    pub fn set_trace_range(&mut self, range: vcpu_api::TraceRange) {
        self.trace_range = range;
    }

    /// The platform's MSIP line (CLINT `msip`).
    pub fn set_msip(&mut self, level: bool) {
        self.set_line(crate::trap::irq::MSI, level);
    }
    /// The platform's M-level external interrupt line.
    pub fn set_meip(&mut self, level: bool) {
        self.set_line(crate::trap::irq::MEI, level);
    }
    /// The platform's S-level external interrupt line (ORed with the software-writable bit).
    pub fn set_seip(&mut self, level: bool) {
        self.set_line(crate::trap::irq::SEI, level);
    }
    fn set_line(&mut self, irq: u64, level: bool) {
        if level {
            self.ext_lines |= 1 << irq;
        } else {
            self.ext_lines &= !(1 << irq);
        }
    }

    /// `mtime` in ticks of [`TIMEBASE_HZ`].
    #[inline]
    pub fn mtime(&self) -> u64 {
        self.time_base().wrapping_add(self.time_offset)
    }
    /// What `time_offset` is added to: the virtual clock in ticks, or the host clock as
    /// last read.
    #[inline]
    fn time_base(&self) -> u64 {
        if self.host_clock.is_some() {
            self.host_now
        } else {
            self.vclock / INSNS_PER_TICK
        }
    }
    /// Set `mtime`.
    pub fn set_mtime(&mut self, v: u64) {
        self.time_offset = v.wrapping_sub(self.time_base());
    }
    /// Host time: reads the host clock into `mtime` (at chunk boundaries: never per
    /// instruction). Nothing with virtual time.
    #[inline]
    pub(crate) fn refresh_host_time(&mut self) {
        if let Some(c) = &self.host_clock {
            self.host_now = c.ticks();
            self.host_read_at = self.vclock;
        }
    }
    /// Host time: before the guest reads `time`, the host clock is read again if a chunk's
    /// worth of instructions ([`crate::interp::CHUNK`]) ran since it was, so that `time` is
    /// never older than with chunks of that length, whatever the chunk (a hart alone runs
    /// longer ones). True if that read reached a timer deadline: the chunk ends after the
    /// read, as at a chunk boundary, where the interrupt is taken. Nothing with virtual time.
    #[inline]
    pub(crate) fn read_time(&mut self) -> bool {
        if self.host_clock.is_none()
            || self.vclock.wrapping_sub(self.host_read_at) < crate::interp::CHUNK
        {
            return false;
        }
        self.refresh_host_time();
        let now = self.mtime();
        self.timer_deadline().is_some_and(|t| t <= now)
    }
    /// The hart's time source: `Some` makes `mtime` follow that host clock from now on,
    /// starting at the clock's value (the offset is reset: `mtime` = `clock.ticks()`);
    /// `None` returns to virtual time, continuing from the current `mtime`.
    pub fn set_host_clock(&mut self, clock: Option<vcpu_api::HostClock>) {
        match clock {
            Some(c) => {
                self.host_clock = Some(c);
                self.host_now = c.ticks();
                self.time_offset = 0;
            }
            None => {
                let now = self.mtime();
                self.host_clock = None;
                self.set_mtime(now);
            }
        }
    }
    /// The host clock `mtime` follows, if any (see [`Hart::set_host_clock`]).
    pub fn host_clock(&self) -> Option<vcpu_api::HostClock> {
        self.host_clock
    }
    /// `mtime` now: with host time, read from the host clock first.
    pub fn mtime_now(&mut self) -> u64 {
        self.refresh_host_time();
        self.mtime()
    }
    /// `mtimecmp`.
    pub fn mtimecmp(&self) -> u64 {
        self.mtimecmp
    }
    /// Set `mtimecmp`; `mip.MTIP` follows `mtime >= mtimecmp`.
    pub fn set_mtimecmp(&mut self, v: u64) {
        self.mtimecmp = v;
    }
    /// Seconds of virtual time elapsed.
    pub fn virtual_seconds(&self) -> f64 {
        self.mtime() as f64 / TIMEBASE_HZ as f64
    }

    /// The earliest `mtime` at which a timer enabled in `mie` fires: `mtimecmp` (MTIE), and
    /// with Sstc `stimecmp` (STIE and `menvcfg.STCE`) and `vstimecmp` (VSTIE and
    /// `henvcfg.STCE`, in guest time), and in hosted mode the VMM's guest timer.
    pub(crate) fn timer_deadline(&self) -> Option<u64> {
        use crate::trap::irq;
        let mie = self.csr.mie;
        let m = (mie & (1 << irq::MTI) != 0).then_some(self.mtimecmp);
        let s = (mie & (1 << irq::STI) != 0 && self.stce()).then_some(self.csr.stimecmp);
        let vs_on = mie & (1 << irq::VSTI) != 0;
        let delta = self.csr.h.htimedelta;
        let vs =
            (vs_on && self.guest_timer != u64::MAX).then(|| self.guest_timer.wrapping_sub(delta));
        let vst = (vs_on && self.vstce() && self.csr.vstimecmp != u64::MAX)
            .then(|| self.csr.vstimecmp.wrapping_sub(delta));
        [m, s, vs, vst].into_iter().flatten().min()
    }

    /// After a [`VcpuExit::Wfi`]: advance time to the next timer deadline (`mtimecmp`, or with
    /// Sstc `stimecmp` and `vstimecmp`) when a timer is the interrupt that would wake the hart. Returns
    /// `false` when no interrupt can ever wake it (nothing pending, and every timer is
    /// disabled in `mie` or has the deadline `u64::MAX`), `true` when the hart should simply
    /// be run again.
    /// With host time nothing is skipped (the caller sleeps on the host instead).
    pub fn skip_to_timer(&mut self) -> bool {
        if self.interrupt_pending_any_level() {
            return true;
        }
        let deadline = match self.timer_deadline() {
            Some(t) if t != u64::MAX => t,
            _ => return false,
        };
        let now = self.mtime();
        if deadline > now && self.host_clock.is_none() {
            let slots = (deadline - now).saturating_mul(INSNS_PER_TICK);
            self.vclock = self.vclock.saturating_add(slots);
            self.skipped = self.skipped.saturating_add(slots);
        }
        true
    }

    /// `mip` as software sees it: software-writable bits, platform lines, and MTIP; with
    /// Sstc (`menvcfg.STCE` = 1) STIP is the `stimecmp` signal instead of the written bit,
    /// and with `mvien.SEIP` = 1 SEIP is the platform line alone (AIA 5.3).
    #[inline]
    pub(crate) fn mip(&self) -> u64 {
        use crate::trap::irq;
        let mtip = if self.mtime() >= self.mtimecmp {
            1 << irq::MTI
        } else {
            0
        };
        let mut sw = self.csr.mip;
        if self.stce() {
            sw &= !(1 << irq::STI);
            if self.stimecmp_signal() {
                sw |= 1 << irq::STI;
            }
        }
        if self.csr.mvien & (1 << irq::SEI) != 0 {
            sw &= !(1 << irq::SEI);
        }
        // VS-level interrupts come from hvip, Sstc's vstimecmp (henvcfg.STCE), in hosted
        // mode the VMM's guest timer, and the IMSIC's guest file VGEIN (VSEIP); the IMSIC
        // also drives MEIP, SEIP and SGEIP (`imsic_lines`). hvip bits 13-63 reach VS level
        // only through vsip (AIA), not mip.
        let vstip = if self.guest_time() >= self.guest_timer || self.vstimecmp_signal() {
            1 << irq::VSTI
        } else {
            0
        };
        let hvip = self.csr.h.hvip & crate::hypervisor::VS_INTERRUPTS;
        sw | self.ext_lines | mtip | hvip | vstip | self.imsic_lines()
    }

    /// Complete the device load reported by the last [`VcpuExit::Mmio`] exit with the
    /// value the device returned (zero-extended; the hart applies sign extension).
    pub fn complete_mmio_read(&mut self, data: u64) {
        let Some(insn) = self.pending_load.take() else {
            log::warn!("complete_mmio_read without a pending device load; ignored");
            return;
        };
        self.pmu_device_access(true);
        let v = match insn.op {
            Op::Lb | Op::HlvB => data as i8 as u64,
            Op::Lh | Op::HlvH => data as i16 as u64,
            Op::Lw | Op::HlvW => data as i32 as u64,
            Op::Lbu => data as u8 as u64,
            Op::Lhu => data as u16 as u64,
            Op::Lwu => data as u32 as u64,
            Op::Flw => {
                self.f[insn.rd as usize] = crate::fpu::box_s(data as u32);
                self.mark_fs_dirty();
                self.pc = self.pc.wrapping_add(insn.len as u64);
                self.retired += 1;
                self.vclock += 1;
                return;
            }
            Op::Fld => {
                self.f[insn.rd as usize] = data;
                self.mark_fs_dirty();
                self.pc = self.pc.wrapping_add(insn.len as u64);
                self.retired += 1;
                self.vclock += 1;
                return;
            }
            _ => data,
        };
        self.x[insn.rd as usize] = v;
        self.pc = self.pc.wrapping_add(insn.len as u64);
        self.retired += 1;
        self.vclock += 1;
    }

    /// A PAUSE on a hart with `HartConfig::pause_yields`: pause-loop detection, as hardware
    /// virtualization's pause-loop exiting does it. PAUSEs fewer than [`PAUSE_GAP`]
    /// instruction slots apart are one spin loop; once it has spun [`PAUSE_WINDOW`] slots
    /// the hart gives its host CPU away (`sched_yield`), and again after each further
    /// window. A short wait for a vCPU that is running (an IPI answered, a lock released
    /// within microseconds) costs no system call; a long one, whose holder's thread may be
    /// waiting for a host CPU, lets it run. Returns whether it yielded.
    pub(crate) fn pause_loop(&mut self) -> bool {
        let (start, last) = self.pause_spin;
        let now = self.vclock;
        let start = if now.wrapping_sub(last) > PAUSE_GAP {
            now
        } else {
            start
        };
        if now.saturating_sub(start) >= PAUSE_WINDOW {
            std::thread::yield_now();
            self.pause_spin = (now, now);
            true
        } else {
            self.pause_spin = (start, now);
            false
        }
    }

    /// Run until an exit; at most `budget` instructions are executed (plus the slack of
    /// `Vcpu::set_budget_slack`, to finish a translated block).
    pub fn run(&mut self, budget: u64) -> VcpuExit {
        // The VMM may have written guest RAM since the last run (`jit::guard`).
        self.jit_code_sync();
        self.run_on(budget)
    }

    /// [`Hart::run`] when nothing but the guest has written guest RAM since the last run
    /// (`Vcpu::run_on`): translated blocks keep the code checks they made.
    pub fn run_on(&mut self, budget: u64) -> VcpuExit {
        if self.pending_load.is_some() {
            log::warn!("run() called with a device load still pending; completing it with 0");
            self.complete_mmio_read(0);
        }
        self.mailbox.set_running(true);
        let exit = match self.trig.bank.skip {
            Some(pc) if pc == self.pc && budget != 0 => self.run_stepping_over(budget),
            Some(_) => {
                // The pc has moved since (a register write, a completed device load).
                self.trig.bank.skip = None;
                self.run_budget(budget, self.budget_slack)
            }
            None => self.run_budget(budget, self.budget_slack),
        };
        self.mailbox.set_running(false);
        exit
    }

    /// [`Hart::run`] after `Vcpu::skip_debug_points_once` at the pc: the first instruction
    /// runs alone, the debugger's points ignored at its pc, then the rest of the budget.
    #[cold]
    fn run_stepping_over(&mut self, budget: u64) -> VcpuExit {
        let (pc, executed) = (self.pc, self.executed());
        let exit = self.run_budget(1, 0);
        // Over once an instruction has executed or trapped (a stop request or an interrupt
        // taken first leave it for the next run).
        if self.executed() != executed || self.pc != pc {
            self.trig.bank.skip = None;
        }
        if budget == 1 || !matches!(exit, VcpuExit::BudgetExhausted) {
            return exit;
        }
        self.run_budget(budget - 1, self.budget_slack)
    }

    /// [`Hart::run`]'s loop, traced or not, going past `budget` by up to `slack`
    /// instructions to finish a translated block (`Vcpu::set_budget_slack`; not where the
    /// budget is cut at a traced range's bounds).
    fn run_budget(&mut self, budget: u64, slack: u64) -> VcpuExit {
        if self.trace && log::log_enabled!(log::Level::Trace) {
            // Interpreted and printed inside the instruction range only: up to its start and
            // after its end the hart runs at full speed (a budget boundary changes nothing
            // the guest sees).
            let next = self.executed() + 1;
            let insns = &self.trace_range.insns;
            if next < insns.start {
                self.run_loop::<false>(budget.min(insns.start - next), 0)
            } else if vcpu_api::TraceRange::contains(insns, next) {
                self.run_loop::<true>(budget.min(insns.end.saturating_sub(next).max(1)), 0)
            } else {
                self.run_loop::<false>(budget, slack)
            }
        } else {
            self.run_loop::<false>(budget, slack)
        }
    }

    /// The mailbox other threads post interrupts and fence requests to (see [`HartMailbox`]).
    pub fn mailbox(&self) -> Arc<HartMailbox> {
        self.mailbox.clone()
    }

    /// Replace the mailbox (outside [`Hart::run`]): a VMM that multiplexes several vCPUs on
    /// this hart gives each vCPU a mailbox of its own and installs it with the vCPU's state,
    /// so interrupts and fences posted to a vCPU that is not on a hart wait in its mailbox
    /// until it is loaded again.
    pub fn set_mailbox(&mut self, mailbox: Arc<HartMailbox>) {
        self.mailbox = mailbox;
    }

    /// Whether an enabled interrupt is pending at any level (what ends a WFI), counting
    /// interrupts posted to the mailbox.
    pub fn wakeup_pending(&self) -> bool {
        self.mailbox.has_posted() || self.interrupt_pending_any_level()
    }

    /// The `mtime` at which the earliest enabled timer fires; `None` when no timer is armed.
    pub fn timer_deadline_mtime(&self) -> Option<u64> {
        self.timer_deadline().filter(|&t| t != u64::MAX)
    }

    /// When the earliest enabled timer fires on the clock idle waits are measured with:
    /// with virtual time, the instruction slot ([`Hart::timer_deadline_slots`], comparable
    /// with [`SharedClock::now`]); with host time, the host clock's tick (comparable with
    /// [`vcpu_api::HostClock::ticks`]). `None` when no timer is armed.
    pub fn wake_deadline(&self) -> Option<u64> {
        if self.host_clock.is_some() {
            let t = self.timer_deadline_mtime()?;
            Some(t.wrapping_sub(self.time_offset))
        } else {
            self.timer_deadline_slots()
        }
    }

    /// The virtual clock (instruction slots) at which the earliest enabled timer fires;
    /// `None` when no timer is armed. Comparable with [`SharedClock::now`].
    pub fn timer_deadline_slots(&self) -> Option<u64> {
        let t = self.timer_deadline().filter(|&t| t != u64::MAX)?;
        Some(
            t.wrapping_sub(self.time_offset)
                .saturating_mul(INSNS_PER_TICK),
        )
    }

    /// Hosted mode, SBI HSM `hart_start`: the guest (re)starts in VS-mode at `pc` with
    /// `a0`/`a1` set, `vsatp` Bare and `vsstatus.SIE` clear; other state is kept.
    pub fn guest_start(&mut self, pc: u64, a0: u64, a1: u64) {
        self.pending_load = None;
        self.reservation.clear();
        self.guest_exit = None;
        self.virt = true;
        self.prv = PrivilegeMode::Supervisor;
        self.csr.h.vsatp = 0;
        self.csr.h.vsstatus &= !(1 << 1);
        self.pc = pc;
        self.x[10] = a0;
        self.x[11] = a1;
        self.flush_tlb();
        self.mode_changed();
    }

    /// The hart's virtual clock in instruction slots.
    pub fn clock_slots(&self) -> u64 {
        self.vclock
    }

    pub(crate) fn skipped_slots(&self) -> u64 {
        self.skipped
    }
    pub(crate) fn set_skipped_slots(&mut self, v: u64) {
        self.skipped = v;
    }
    pub(crate) fn time_offset_ticks(&self) -> u64 {
        self.time_offset
    }
    pub(crate) fn set_time_offset_ticks(&mut self, v: u64) {
        self.time_offset = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_memory::{GuestAddress, GuestMemoryMmap};

    /// Pause-loop detection: PAUSEs a few instructions apart yield once the loop has spun
    /// `PAUSE_WINDOW` slots, and again a window later; a gap longer than `PAUSE_GAP`
    /// starts a new loop, and a short wait never yields.
    #[test]
    fn a_spin_loop_yields_once_per_window() {
        let mem =
            GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0x8000_0000), 1 << 16)]).unwrap();
        let mut h = Hart::new(HartConfig::default(), mem).unwrap();
        let spin = |h: &mut Hart, slots: u64, every: u64| {
            let mut yields = Vec::new();
            for _ in 0..slots / every {
                h.vclock += every;
                if h.pause_loop() {
                    yields.push(h.vclock);
                }
            }
            yields
        };
        h.vclock = 1_000_000;
        // A wait shorter than a window: no system call.
        assert_eq!(spin(&mut h, PAUSE_WINDOW - 100, 10), Vec::<u64>::new());
        // Going on past the window (the loop still counts from its start): one yield per
        // window.
        let yields = spin(&mut h, 3 * PAUSE_WINDOW, 10);
        assert_eq!(yields.len(), 3, "{yields:?}");
        assert!(yields
            .windows(2)
            .all(|w| (PAUSE_WINDOW..PAUSE_WINDOW + 10).contains(&(w[1] - w[0]))));
        // After a gap the count starts again.
        h.vclock += PAUSE_GAP + 1;
        assert_eq!(spin(&mut h, PAUSE_WINDOW - 100, 10), Vec::<u64>::new());
        // PAUSEs further apart than the gap are not a loop.
        assert_eq!(
            spin(&mut h, 10 * PAUSE_WINDOW, PAUSE_GAP + 1),
            Vec::<u64>::new()
        );
    }
}
