//! `vmm run|restore|receive --gdb`: a gdb remote stub for VS-mode guests, every vCPU a gdb
//! thread (`docs/gdb.md`).
//!
//! The stub runs on a thread of its own and stops the guest with the VM's pause state
//! (`run/pause.rs`), the one the control socket uses: every hart instance (one per vCPU:
//! `--gdb` needs as many as vCPUs) parks at an instruction boundary. gdb's model is
//! all-stop: a stop of one vCPU (a breakpoint, Ctrl-C, a step) stops them all.
//!
//! - **Registers and memory.** A parked instance does jobs for the stub on its own thread
//!   ([`PauseCtl::run_on`]): register and CSR reads and writes go through the hart's rules
//!   as on `vmm machine` (`crate::gdb`). Memory addresses are translated as the selected
//!   vCPU's next load or store would translate them (`vsatp` and `hgatp`, without side
//!   effects: `crate::gdb::points`), then read and written in guest RAM; `monitor phys on`
//!   takes them as guest-physical.
//! - **Single step** ([`PauseCtl::step`]): the stepped vCPU runs one instruction (its exits
//!   handled as in any run: a step onto an `ecall` completes the SBI call) while the others
//!   stay parked, then parks again. A vCPU parked in a wait (WFI idle on a multiprocessor
//!   VM, or an HSM-stopped vCPU waiting for `hart_start`) has no instruction to run: its
//!   step ends where it is.
//! - **Breakpoints and watchpoints** (software, hardware, read, write, access) are never
//!   written into guest memory: they are the harts' debugger triggers (`crate::gdb::points`).
//!   gdb's points are global: before each run of its hart, a vCPU whose points are out of
//!   date loads the current set into its hart ([`GuestVm::debug_chunk`]), which then
//!   interprets with every fetch, load and store checked, at full chunks. The first vCPU
//!   whose hart stops at one ([`GuestVm::debug_hit`]) records the stop and asks every
//!   instance to park. After a `continue` or a step, each vCPU executes its first
//!   instruction even at a breakpoint (gdb steps the reporting vCPU off it itself).
//! - **Scheduler locking.** RISC-V gdb steps a thread with a breakpoint after the
//!   instruction and a `continue` of that thread alone (`vCont;c:N`): the other vCPUs stay
//!   parked meanwhile ([`PauseCtl::resume_only`]).
//! - **The run's end.** When the guest ends the run while a debugger is attached, gdb is
//!   told the exit status; a `kill` ends the run with [`super::RunExit::Killed`].
//!
//! Stopping changes nothing the guest can see: time, counters and CTR cycle counts are
//! virtual and advance with its instructions only.

use std::marker::PhantomData;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use gdbstub::common::{Signal, Tid};
use gdbstub::outputln;
use gdbstub::stub::run_blocking::{BlockingEventLoop, Event, WaitForStopReasonError};
use gdbstub::stub::{DisconnectReason, GdbStub, MultiThreadStopReason};
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::base::single_register_access::{
    SingleRegisterAccess, SingleRegisterAccessOps,
};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::breakpoints::BreakpointsOps;
use gdbstub::target::ext::monitor_cmd::{ConsoleOutput, MonitorCmd, MonitorCmdOps};
use gdbstub::target::ext::target_description_xml_override::{
    TargetDescriptionXmlOverride, TargetDescriptionXmlOverrideOps,
};
use gdbstub::target::{Target, TargetError, TargetResult};
use vcpu_api::{DebugAccess, Vcpu};
use vm_memory::GuestMemoryMmap;

use super::pause::{InstanceView, ParkEnd, PauseCtl};
use super::snapshot::VmCommon;
use super::{ExitStats, GuestVm};
use crate::error::Error;
use crate::gdb::listen::{incoming, Connection, GdbListener, GdbOptions};
use crate::gdb::points::{self, DebugPoints, HasDebugPoints, Hit};
use crate::gdb::{self, CoreRegs, GdbError, Reg, Rv64Vmm, MAX_MEMORY_XFER, PACKET_SIZE};

/// errno EFAULT: what gdb is told for memory the stub cannot or will not reach.
const EFAULT: u8 = 14;
/// How long the stub waits for a parked vCPU to do a job, or for every vCPU to park.
const JOB_LIMIT: Duration = Duration::from_secs(30);
/// How often the stub looks at the connection and the VM while the guest runs.
const POLL: Duration = Duration::from_millis(1);
/// How often the stub looks for a debugger while none is attached.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// Why the guest stopped on its own (not at the debugger's request): vCPU `.0` reached a
/// breakpoint or watchpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StopEvent(u64, Hit);

/// What the stub and the vCPU threads share.
#[derive(Debug, Default)]
pub(crate) struct GdbShared {
    /// Bumped (under the `points` lock) whenever the points change: a vCPU whose hart holds
    /// an older set loads the new one before its next run.
    generation: AtomicU64,
    points: Mutex<DebugPoints>,
    /// The first stop since the last resume.
    stop: Mutex<Option<StopEvent>>,
    /// The run's exit status once it has ended (`Some(None)`: it ended with an error).
    finished: Mutex<Option<Option<u8>>>,
    finished_cv: Condvar,
}

impl GdbShared {
    fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the breakpoints and watchpoints with `f`, its result.
    fn with_points<R>(&self, f: impl FnOnce(&mut DebugPoints) -> R) -> R {
        let mut p = Self::lock(&self.points);
        let r = f(&mut p);
        self.generation.fetch_add(1, Ordering::SeqCst);
        r
    }

    fn clear_breakpoints(&self) {
        self.with_points(DebugPoints::clear);
    }

    /// Records `event` unless a stop is already recorded.
    fn record_stop(&self, event: StopEvent) {
        Self::lock(&self.stop).get_or_insert(event);
    }

    fn take_stop(&self) -> Option<StopEvent> {
        Self::lock(&self.stop).take()
    }

    /// The run has ended with exit status `code` (`None`: an error).
    pub(crate) fn finish(&self, code: Option<u8>) {
        *Self::lock(&self.finished) = Some(code);
        self.finished_cv.notify_all();
    }

    fn finished(&self) -> Option<Option<u8>> {
        *Self::lock(&self.finished)
    }

    /// Waits up to `limit` for the run's exit status.
    fn wait_finished(&self, limit: Duration) -> Option<Option<u8>> {
        let st = Self::lock(&self.finished);
        let (st, _) = self
            .finished_cv
            .wait_timeout_while(st, limit, |f| f.is_none())
            .unwrap_or_else(|e| e.into_inner());
        *st
    }
}

/// A vCPU thread's part of the debugger.
#[derive(Debug)]
pub(crate) struct VcpuDebug {
    shared: Arc<GdbShared>,
    /// The [`GdbShared::generation`] of the points the vCPU's hart holds.
    loaded: u64,
}

/// The stub's thread, kept by the first hart instance until the run ends.
#[derive(Debug)]
pub(crate) struct GdbThread {
    shared: Arc<GdbShared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl GdbThread {
    /// The run has ended with `code`: the stub tells an attached debugger and ends (it is
    /// given a moment to; a debugger that holds the guest stopped is not waited for).
    pub(crate) fn finish(&mut self, code: Option<u8>) {
        self.shared.finish(code);
        if let Some(t) = self.thread.take() {
            for _ in 0..100 {
                if t.is_finished() {
                    let _ = t.join();
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

impl GuestVm {
    /// Puts the VM under a gdb stub listening at `options.endpoint` (`--gdb`; `symbols` for
    /// `monitor ctr`); with
    /// `options.wait` every vCPU parks before its first instruction until a debugger
    /// attaches. Needs one hart instance per vCPU (no `--pcpus` below `--vcpus`).
    pub(crate) fn attach_gdb(
        &mut self,
        options: &GdbOptions,
        symbols: Option<Arc<crate::symbols::Symbols>>,
    ) -> Result<(), Error> {
        if self.sched.is_some() || self.secondaries.iter().any(|s| s.sched.is_some()) {
            return Err(Error::Gdb(GdbError::Vm(
                "--gdb needs a hart instance per vCPU: drop --pcpus (or make it --vcpus)".into(),
            )));
        }
        let listener = GdbListener::bind(&options.endpoint)?;
        let ctl = self.pause_ctl(false);
        let shared = Arc::new(GdbShared::default());
        self.debug = Some(VcpuDebug {
            shared: shared.clone(),
            loaded: 0,
        });
        for vm in &mut self.secondaries {
            vm.debug = Some(VcpuDebug {
                shared: shared.clone(),
                loaded: 0,
            });
        }
        if options.wait {
            eprintln!("vmm: waiting for a debugger before the first instruction (--gdb-wait)");
            ctl.request_pause()
                .map_err(|e| Error::Gdb(GdbError::Vm(e)))?;
        }
        let stub = Stub {
            ctl,
            shared: shared.clone(),
            mem: self.mem.clone(),
            common: self.common(),
            symbols,
            xml: gdb::target_xml(),
        };
        let thread = std::thread::Builder::new()
            .name("gdb".into())
            .spawn(move || stub.serve(&listener))
            .map_err(|e| {
                Error::Gdb(GdbError::Vm(format!("cannot start the stub's thread: {e}")))
            })?;
        self.gdb = Some(GdbThread {
            shared,
            thread: Some(thread),
        });
        Ok(())
    }

    /// Before a run of the hart: how many instructions it may run under a debugger (`chunk`
    /// without one; 1 for a step). Loads gdb's current points into the hart if they have
    /// changed; after a resume or for a step, the hart executes its first instruction even
    /// where a point matches (`Vcpu::skip_debug_points_once`). `park`: how its last pause
    /// point ended.
    pub(super) fn debug_chunk(&mut self, park: ParkEnd, chunk: u64) -> u64 {
        let Some(debug) = self.debug.as_mut() else {
            return chunk;
        };
        if debug.shared.generation.load(Ordering::SeqCst) != debug.loaded {
            let points = GdbShared::lock(&debug.shared.points);
            points.load_into(&mut self.hart);
            debug.loaded = debug.shared.generation.load(Ordering::SeqCst);
        }
        match park {
            ParkEnd::Step => {
                Vcpu::skip_debug_points_once(&mut self.hart);
                1
            }
            ParkEnd::Resumed => {
                Vcpu::skip_debug_points_once(&mut self.hart);
                chunk
            }
            ParkEnd::NotParked => chunk,
        }
    }

    /// The hart stopped before an instruction at one of gdb's points
    /// ([`vcpu_api::VcpuExit::DebugPoint`]): records the stop (unless another vCPU's came
    /// first) and asks every instance to park. A stop at a point gdb has removed since
    /// (the hart's set is out of date) is dropped: the next run loads the current set and
    /// stops again if the instruction still matches.
    pub(super) fn debug_hit(&mut self, hit: &vcpu_api::DebugHit) {
        let Some(debug) = self.debug.as_ref() else {
            return;
        };
        // Under the lock: a debugger that detaches (clearing the points) either sees this
        // stop and discards it, or makes it stale here.
        let points = GdbShared::lock(&debug.shared.points);
        if debug.shared.generation.load(Ordering::SeqCst) != debug.loaded {
            return;
        }
        debug
            .shared
            .record_stop(StopEvent(self.hart_id, points.classify(hit)));
        if let Some(link) = &self.pause {
            let _ = link.ctl.request_pause();
        }
    }
}

/// The stub's side: what it needs of the VM while its vCPUs run on their threads.
struct Stub {
    ctl: Arc<PauseCtl>,
    shared: Arc<GdbShared>,
    mem: GuestMemoryMmap,
    common: VmCommon,
    /// `--symbols`, for `monitor ctr`.
    symbols: Option<Arc<crate::symbols::Symbols>>,
    xml: String,
}

impl Stub {
    /// Waits for debuggers, one session at a time, until the run ends.
    fn serve(self, listener: &GdbListener) {
        let mut stub = self;
        loop {
            if stub.shared.finished().is_some() {
                return;
            }
            match listener.accept(false) {
                Ok(Some(conn)) => {
                    if stub.session(conn) {
                        return;
                    }
                }
                Ok(None) => std::thread::sleep(ACCEPT_POLL),
                Err(e) => {
                    eprintln!("vmm: {e}; the stub stops listening");
                    return;
                }
            }
        }
    }

    /// One debugger session: stops the guest, serves the debugger, and lets the guest go
    /// on when it detaches. `true` when the run has ended.
    fn session(&mut self, conn: Connection) -> bool {
        let stopped = if self.ctl.is_paused() {
            self.ctl.wait_parked(false)
        } else {
            self.ctl.pause()
        };
        if let Err(e) = stopped {
            eprintln!("vmm: debugger not attached: {e}");
            return self.ctl.ended();
        }
        eprintln!("vmm: debugger attached");
        let mut target = RunTarget {
            stub: self,
            step: None,
            continues: Vec::new(),
            locked: false,
            running: Running::Stopped,
            phys: false,
            selected: 0,
        };
        let gdb = match GdbStub::<RunTarget<'_>, Connection>::builder(conn)
            .packet_buffer_size(PACKET_SIZE)
            .build()
        {
            Ok(s) => s,
            Err(e) => {
                eprintln!("vmm: gdb stub: {e}");
                self.release();
                return false;
            }
        };
        let result = gdb.run_blocking::<EventLoop<'_>>(&mut target);
        let ended = match result {
            Ok(DisconnectReason::Kill) => {
                self.kill();
                return true;
            }
            Ok(DisconnectReason::Disconnect) => {
                eprintln!("vmm: debugger detached");
                false
            }
            Ok(DisconnectReason::TargetExited(_) | DisconnectReason::TargetTerminated(_)) => true,
            Err(e) => {
                eprintln!("vmm: debugger session ended: {e}");
                false
            }
        };
        if !ended {
            self.release();
        }
        ended || self.ctl.ended()
    }

    /// The debugger has gone: breakpoints go, and the guest runs on.
    fn release(&self) {
        self.shared.clear_breakpoints();
        self.shared.take_stop();
        if !self.ctl.ended() {
            self.ctl.resume();
        }
    }

    /// The debugger killed the guest: the run ends ([`super::RunExit::Killed`]).
    fn kill(&self) {
        self.shared.clear_breakpoints();
        self.common.input.killed();
        self.ctl.end_parked();
    }

    /// `f` done on vCPU `vcpu`'s thread (it is parked), its result.
    fn on_vcpu<R: Send + 'static>(
        &self,
        vcpu: usize,
        f: impl FnOnce(&mut GuestVm) -> R + Send + 'static,
    ) -> Result<R, String> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.ctl.run_on(
            vcpu,
            Box::new(move |vm: &mut GuestVm| {
                let _ = tx.send(f(vm));
            }),
        )?;
        rx.recv_timeout(JOB_LIMIT).map_err(|_| {
            format!(
                "vCPU {vcpu} did not answer within {} s",
                JOB_LIMIT.as_secs()
            )
        })
    }

    /// vCPU `vcpu` executes `n` instructions, one at a time, the others parked.
    fn step_exactly(&self, vcpu: usize, n: u64) -> Result<(), String> {
        for _ in 0..n {
            self.ctl.step(vcpu)?;
            let limit = std::time::Instant::now() + JOB_LIMIT;
            while !self.ctl.all_parked() {
                if self.ctl.ended() {
                    return Err("the run ended; continue to see how".into());
                }
                if std::time::Instant::now() > limit {
                    return Err(format!("vCPU {vcpu} did not stop after its step"));
                }
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    /// `f` of what every parked instance handed over.
    fn with_views<R>(&self, f: impl FnOnce(&[&InstanceView]) -> R) -> Option<R> {
        self.ctl.with_views(f)
    }
}

/// What the guest does between two stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Running {
    Stopped,
    Continue,
    /// vCPU `.0` runs one instruction.
    Step(usize),
}

/// The VM as `gdbstub` sees it during a session.
struct RunTarget<'a> {
    stub: &'a mut Stub,
    /// The vCPU the next resume steps (`vCont;s:N`), if any.
    step: Option<usize>,
    /// The vCPUs the next resume continues (`vCont;c:N`; `None`: all).
    continues: Vec<usize>,
    /// Scheduler locking: the next resume runs only the vCPUs it names.
    locked: bool,
    running: Running,
    /// `monitor phys on`.
    phys: bool,
    /// The vCPU gdb last named (for `monitor ctr`).
    selected: usize,
}

/// gdb thread ids are vCPU ids + 1 (0 is not a thread id).
fn tid(vcpu: usize) -> Tid {
    NonZeroUsize::new(vcpu + 1).unwrap_or(NonZeroUsize::MIN)
}

fn vcpu_of(tid: Tid) -> usize {
    tid.get() - 1
}

impl RunTarget<'_> {
    fn on_vcpu<R: Send + 'static>(
        &mut self,
        tid: Tid,
        f: impl FnOnce(&mut GuestVm) -> R + Send + 'static,
    ) -> Result<R, TargetError<GdbError>> {
        let vcpu = vcpu_of(tid);
        self.selected = vcpu;
        self.stub.on_vcpu(vcpu, f).map_err(|e| {
            eprintln!("vmm: gdb stub: {e}");
            TargetError::NonFatal
        })
    }

    /// The guest-physical pieces of `len` bytes at `start` as vCPU `tid` sees them now
    /// (`gdb/points.rs`).
    fn pieces(
        &mut self,
        tid: Tid,
        start: u64,
        len: usize,
        kind: DebugAccess,
    ) -> Result<Vec<(u64, usize)>, TargetError<GdbError>> {
        let phys = self.phys;
        self.on_vcpu(tid, move |vm| {
            points::translate_range(&vm.hart, start, len, kind, phys)
        })
    }

    /// Whether every instance has parked again after a step or a stop request.
    fn all_parked(&self) -> bool {
        self.stub.ctl.all_parked()
    }

    /// The end of the run as gdb's stop reason, once the run's status is known.
    fn end_reason(&self) -> MultiThreadStopReason<u64> {
        match self.stub.shared.wait_finished(JOB_LIMIT) {
            Some(Some(code)) => MultiThreadStopReason::Exited(code),
            _ => MultiThreadStopReason::Terminated(Signal::SIGABRT),
        }
    }

    /// Runs nothing itself: looks whether the guest has stopped. `None`: still running.
    fn poll(&mut self) -> Option<MultiThreadStopReason<u64>> {
        if self.stub.ctl.ended() {
            self.running = Running::Stopped;
            return Some(self.end_reason());
        }
        match self.running {
            Running::Stopped => Some(MultiThreadStopReason::Signal(Signal::SIGTRAP)),
            Running::Step(vcpu) => {
                if !self.all_parked() {
                    return None;
                }
                self.running = Running::Stopped;
                Some(MultiThreadStopReason::SignalWithThread {
                    tid: tid(vcpu),
                    signal: Signal::SIGTRAP,
                })
            }
            Running::Continue => {
                let event = self.stub.shared.take_stop()?;
                if let Err(e) = self.stub.ctl.wait_parked(false) {
                    eprintln!("vmm: gdb stub: {e}");
                    self.running = Running::Stopped;
                    return Some(self.end_reason());
                }
                self.running = Running::Stopped;
                let StopEvent(vcpu, hit) = event;
                let vcpu = vcpu as usize;
                self.selected = vcpu;
                let tid = tid(vcpu);
                Some(match hit {
                    Hit::Sw => MultiThreadStopReason::SwBreak(tid),
                    Hit::Hw => MultiThreadStopReason::HwBreak(tid),
                    Hit::Watch { kind, addr } => MultiThreadStopReason::Watch { tid, kind, addr },
                })
            }
        }
    }
}

impl Target for RunTarget<'_> {
    type Arch = Rv64Vmm;
    type Error = GdbError;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::MultiThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_monitor_cmd(&mut self) -> Option<MonitorCmdOps<'_, Self>> {
        Some(self)
    }

    fn support_target_description_xml_override(
        &mut self,
    ) -> Option<TargetDescriptionXmlOverrideOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadBase for RunTarget<'_> {
    fn read_registers(&mut self, regs: &mut CoreRegs, tid: Tid) -> TargetResult<(), Self> {
        *regs = self.on_vcpu(tid, |vm| gdb::core_regs(&vm.hart))?;
        Ok(())
    }

    fn write_registers(&mut self, regs: &CoreRegs, tid: Tid) -> TargetResult<(), Self> {
        let regs = regs.clone();
        self.on_vcpu(tid, move |vm| gdb::set_core_regs(&mut vm.hart, &regs))
    }

    fn support_single_register_access(&mut self) -> Option<SingleRegisterAccessOps<'_, Tid, Self>> {
        Some(self)
    }

    fn read_addrs(&mut self, start: u64, data: &mut [u8], tid: Tid) -> TargetResult<usize, Self> {
        if data.len() > MAX_MEMORY_XFER {
            return Err(TargetError::Errno(EFAULT));
        }
        let pieces = self.pieces(tid, start, data.len(), DebugAccess::Load)?;
        match points::read_pieces(&self.stub.mem, &pieces, data) {
            0 if !data.is_empty() => Err(TargetError::Errno(EFAULT)),
            n => Ok(n),
        }
    }

    fn write_addrs(&mut self, start: u64, data: &[u8], tid: Tid) -> TargetResult<(), Self> {
        if data.len() > PACKET_SIZE {
            return Err(TargetError::Errno(EFAULT));
        }
        // All or nothing: the whole range must translate and be RAM. Translated blocks and
        // the decode caches check guest code against RAM, so a write to code needs no
        // invalidation.
        let pieces = self.pieces(tid, start, data.len(), DebugAccess::Store)?;
        if points::write_pieces(&self.stub.mem, &pieces, data) {
            Ok(())
        } else {
            Err(TargetError::Errno(EFAULT))
        }
    }

    fn list_active_threads(
        &mut self,
        thread_is_active: &mut dyn FnMut(Tid),
    ) -> Result<(), Self::Error> {
        for vcpu in 0..self.stub.ctl.instances() {
            thread_is_active(tid(vcpu));
        }
        Ok(())
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl SingleRegisterAccess<Tid> for RunTarget<'_> {
    fn read_register(&mut self, tid: Tid, reg: Reg, buf: &mut [u8]) -> TargetResult<usize, Self> {
        match self.on_vcpu(tid, move |vm| gdb::read_reg(&vm.hart, reg))? {
            Some(v) => {
                let dst = buf.get_mut(..8).ok_or(TargetError::NonFatal)?;
                dst.copy_from_slice(&v.to_le_bytes());
                Ok(8)
            }
            // Unavailable: gdb shows it so.
            None => Ok(0),
        }
    }

    fn write_register(&mut self, tid: Tid, reg: Reg, val: &[u8]) -> TargetResult<(), Self> {
        let val = val.to_vec();
        self.on_vcpu(tid, move |vm| gdb::write_reg(&mut vm.hart, reg, &val))?
            .map_err(|_| TargetError::NonFatal)
    }
}

impl MultiThreadResume for RunTarget<'_> {
    fn resume(&mut self) -> Result<(), Self::Error> {
        self.stub.shared.take_stop();
        let locked = std::mem::take(&mut self.locked);
        let continues = std::mem::take(&mut self.continues);
        match self.step.take() {
            // The other vCPUs stay parked while one steps (as with gdb's `set
            // scheduler-locking step`).
            Some(vcpu) => {
                self.stub.ctl.step(vcpu).map_err(GdbError::Vm)?;
                self.running = Running::Step(vcpu);
            }
            // Scheduler locking (gdb steps a RISC-V thread with a breakpoint after the
            // instruction and a `continue` of that thread alone): the others stay parked.
            None if locked => {
                self.stub
                    .ctl
                    .resume_only(&continues)
                    .map_err(GdbError::Vm)?;
                self.running = Running::Continue;
            }
            None => {
                self.stub.ctl.resume();
                self.running = Running::Continue;
            }
        }
        Ok(())
    }

    fn clear_resume_actions(&mut self) -> Result<(), Self::Error> {
        self.step = None;
        self.continues.clear();
        self.locked = false;
        Ok(())
    }

    fn set_resume_action_continue(
        &mut self,
        tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), Self::Error> {
        // Signals are dropped (a VM has none).
        let vcpu = vcpu_of(tid);
        if vcpu < self.stub.ctl.instances() && !self.continues.contains(&vcpu) {
            self.continues.push(vcpu);
        }
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }

    fn support_scheduler_locking(&mut self) -> Option<MultiThreadSchedulerLockingOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadSchedulerLocking for RunTarget<'_> {
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), Self::Error> {
        self.locked = true;
        Ok(())
    }
}

impl MultiThreadSingleStep for RunTarget<'_> {
    fn set_resume_action_step(
        &mut self,
        tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), Self::Error> {
        self.step = Some(vcpu_of(tid));
        Ok(())
    }
}

impl HasDebugPoints for RunTarget<'_> {
    fn with_points<R>(&mut self, f: impl FnOnce(&mut DebugPoints) -> R) -> R {
        self.stub.shared.with_points(f)
    }
}

crate::debug_point_ops!(RunTarget<'_>);

impl TargetDescriptionXmlOverride for RunTarget<'_> {
    fn target_description_xml(
        &self,
        annex: &[u8],
        offset: u64,
        length: usize,
        buf: &mut [u8],
    ) -> TargetResult<usize, Self> {
        if annex != b"target.xml" {
            return Err(TargetError::NonFatal);
        }
        Ok(gdb::xfer(&self.stub.xml, offset, length, buf))
    }
}

/// `monitor help` lists these.
const MONITOR_HELP: &str = "\
monitor help            this list
monitor ctr [N]         vCPU N's CTR records (default: the thread gdb last named), oldest
                        first: SRC -> DST TYPE cycles
monitor exits           the exits to the VMM so far (the --stats table)
monitor snapshot FILE   write a snapshot of the stopped VM to FILE (for vmm restore)
monitor phys on|off     addresses are guest-physical (default off: the vCPU's current
                        translation, satp or vsatp and hgatp)
monitor insns           instructions executed so far, per vCPU
monitor stepi [N]       the vCPU gdb last named executes N instructions (default 1) exactly
                        as the hart does, through traps, sret and exits to the VMM, while
                        the others stay stopped (gdb's own stepi on RISC-V puts a breakpoint
                        after the instruction and cannot follow them)";

impl MonitorCmd for RunTarget<'_> {
    fn handle_monitor_cmd(
        &mut self,
        cmd: &[u8],
        mut out: ConsoleOutput<'_>,
    ) -> Result<(), Self::Error> {
        let cmd = String::from_utf8_lossy(cmd);
        let words: Vec<&str> = cmd.split_whitespace().collect();
        match words.as_slice() {
            [] | ["help"] => outputln!(out, "{MONITOR_HELP}"),
            ["ctr"] | ["ctr", _] => {
                let vcpu = match words.get(1).map(|w| w.parse::<usize>()) {
                    None => self.selected,
                    Some(Ok(n)) if n < self.stub.ctl.instances() => n,
                    Some(_) => {
                        outputln!(out, "no vCPU {}", words[1]);
                        return Ok(());
                    }
                };
                let symbols = self.stub.symbols.clone();
                match self.stub.on_vcpu(vcpu, move |vm| {
                    let ctx = vm.ctr.context(&vm.hart);
                    gdb::ctr_context_listing(&ctx, vm.ctr.is_loaded(), symbols.as_deref())
                }) {
                    Ok(listing) => {
                        outputln!(out, "vCPU {vcpu}:");
                        for line in listing.lines() {
                            outputln!(out, "{line}");
                        }
                    }
                    Err(e) => outputln!(out, "{e}"),
                }
            }
            ["exits"] => {
                let table = self.stub.with_views(|views| {
                    let mut all = ExitStats::default();
                    for v in views {
                        all.merge(&v.stats);
                    }
                    all.table()
                });
                for line in table.unwrap_or_default().lines() {
                    outputln!(out, "{line}");
                }
            }
            ["snapshot", path] => {
                let path = std::path::PathBuf::from(path);
                let written = match crate::snapshot::check_target(&path) {
                    Err(e) => Err(e.to_string()),
                    Ok(()) => self
                        .stub
                        .with_views(|views| {
                            let vcpus = super::api::saved_vcpus(views);
                            self.stub.common.write_snapshot(&path, vcpus)
                        })
                        .ok_or_else(|| "the VM has ended".to_string())
                        .and_then(|r| r.map_err(|e| e.to_string())),
                };
                match written {
                    Ok(bytes) => outputln!(
                        out,
                        "snapshot written to {} ({bytes} bytes)",
                        path.display()
                    ),
                    Err(e) => outputln!(out, "snapshot failed: {e}"),
                }
            }
            ["snapshot"] => outputln!(out, "monitor snapshot FILE"),
            ["phys", "on"] => {
                self.phys = true;
                outputln!(out, "memory access is physical");
            }
            ["phys", "off"] => {
                self.phys = false;
                outputln!(out, "addresses follow the vCPU's translation");
            }
            ["phys"] => outputln!(out, "phys is {}", if self.phys { "on" } else { "off" }),
            ["stepi"] | ["stepi", _] => match gdb::monitor_steps(words.get(1).copied()) {
                Err(e) => outputln!(out, "{e}"),
                Ok(n) => match self.stub.step_exactly(self.selected, n) {
                    Err(e) => outputln!(out, "{e}"),
                    Ok(()) => {
                        let at = self
                            .stub
                            .on_vcpu(self.selected, |vm| gdb::position(&vm.hart));
                        match at {
                            Ok(at) => outputln!(out, "vCPU {}: {at}", self.selected),
                            Err(e) => outputln!(out, "{e}"),
                        }
                        outputln!(out, "{}", gdb::MONITOR_STEPI_NOTE);
                    }
                },
            },
            ["insns"] => {
                let counts = self.stub.with_views(|views| {
                    views
                        .iter()
                        .flat_map(|v| v.vcpus.iter())
                        .map(|v| (v.id, v.executed))
                        .collect::<Vec<_>>()
                });
                for (id, n) in counts.unwrap_or_default() {
                    outputln!(out, "vCPU {id}: {n}");
                }
            }
            _ => outputln!(
                out,
                "unknown monitor command {cmd:?}; monitor help lists them"
            ),
        }
        Ok(())
    }
}

/// The stub's event loop: the guest runs on its own threads; this one watches the
/// connection and the VM.
struct EventLoop<'a>(PhantomData<&'a ()>);

impl<'a> BlockingEventLoop for EventLoop<'a> {
    type Target = RunTarget<'a>;
    type Connection = Connection;
    type StopReason = MultiThreadStopReason<u64>;

    fn wait_for_stop_reason(
        target: &mut RunTarget<'a>,
        conn: &mut Connection,
    ) -> Result<Event<Self::StopReason>, WaitForStopReasonError<GdbError, std::io::Error>> {
        loop {
            if let Some(byte) = incoming(conn).map_err(WaitForStopReasonError::Connection)? {
                return Ok(Event::IncomingData(byte));
            }
            if let Some(stop) = target.poll() {
                return Ok(Event::TargetStopped(stop));
            }
            std::thread::sleep(POLL);
        }
    }

    fn on_interrupt(target: &mut RunTarget<'a>) -> Result<Option<Self::StopReason>, GdbError> {
        if let Err(e) = target.stub.ctl.pause() {
            eprintln!("vmm: gdb stub: {e}");
            return Ok(Some(target.end_reason()));
        }
        target.running = Running::Stopped;
        Ok(Some(MultiThreadStopReason::SignalWithThread {
            tid: tid(target.selected),
            signal: Signal::SIGINT,
        }))
    }
}
