//! `vmm run --vcpus N`: the state the vCPU threads share (see `docs/hypervisor.md`,
//! "Multiprocessor guests").
//!
//! - **Time.** The harts share a [`SharedClock`]; each publishes and adopts it at its chunk
//!   boundaries. A hart that idles (WFI) does not move global time by itself: it waits until
//!   an interrupt is posted to it, the global clock reaches its own timer deadline, or every
//!   started hart is idle, in which case the last one to idle moves global time to the
//!   earliest deadline among them. With host time (`--clock host`) every hart reads the
//!   host's clock instead ([`HostClock`]): deadlines are host-clock ticks, an idle hart
//!   sleeps on the host until its deadline (or a wake-up), and nobody moves time.
//! - **HSM.** Hart 0 starts at the kernel entry; the others start STOPPED and their threads
//!   wait until `hart_start`. `hart_stop` returns the calling hart to STOPPED.
//! - **IPIs and remote fences** go through the targets' [`HartMailbox`]es.
//! - **Start.** Every vCPU thread is created and waits at a start gate
//!   ([`Smp::arrive_at_gate`]) until all have arrived ([`Smp::open_gate`]); only then does
//!   any vCPU execute, so that (after a restore in particular) no vCPU runs ahead while
//!   another's thread is still being created.
//! - **Polling another hart.** A vCPU that reads the HSM state of another vCPU that is
//!   started (or starting) and not idle is waiting for it; with a hart instance per vCPU
//!   the caller yields its host CPU until that vCPU has completed a run (at most
//!   [`POLL_WAIT`]) before the answer is returned ([`Smp::yield_to`]). Without it, a
//!   guest polling `hart_get_status` could spend whole host time slices (millions of
//!   instructions, and its `--max-insns` budget) while the vCPU it waits for waits for a
//!   host CPU. This is the SBI counterpart of a pause-loop exit with a directed yield.
//! - **The end.** SRST, an error or a quit on any hart ends the whole VM: the first end
//!   recorded wins, every hart is stopped and every waiting thread woken.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::backend::Hart;
use vcpu_api::{HartMailbox, HostClock, SharedClock, StopHandle};

/// A vCPU's part of the shared state, as a snapshot saves it (`VcpuState`'s `hsm`, `start`,
/// `idle` and `ipi_posted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VcpuSmpState {
    /// SBI HSM state.
    pub hsm: u64,
    /// `(start_addr, opaque)` of a pending `hart_start`.
    pub start: (u64, u64),
    /// The WFI wait's deadline, while waiting.
    pub idle: Option<u64>,
    /// Whether an IPI waits in its mailbox.
    pub ipi_posted: bool,
}

impl VcpuSmpState {
    /// The state of a VM's only vCPU (started, not waiting, no IPI).
    pub(crate) const ALONE: VcpuSmpState = VcpuSmpState {
        hsm: crate::sbi::hsm::STATE_STARTED,
        start: (0, 0),
        idle: None,
        ipi_posted: false,
    };
}

/// How [`Smp::wait_for_start`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartWait {
    /// Started: `(start_addr, opaque)`.
    Start((u64, u64)),
    /// The VM ended.
    Ended,
    /// The VM is being paused; the hart is still STOPPED.
    Paused,
}

/// How [`Smp::idle`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdleEnd {
    /// The hart can go on (or the VM ended).
    Woke,
    /// The VM is being paused; the hart still waits.
    Paused,
}

/// A vCPU a hart may load: its id, and `(start_addr, opaque)` when it is starting (HSM
/// `hart_start`, now STARTED).
pub(crate) type Pick = (u64, Option<(u64, u64)>);

use super::RunExit;
use crate::error::Error;
use crate::sbi::hsm::{STATE_STARTED, STATE_START_PENDING, STATE_STOPPED};
use crate::sbi::{SbiRet, SBI_ERR_ALREADY_AVAILABLE};

/// How long an idle hart sleeps before it looks at the global clock again (a safety net:
/// running harts wake idle harts whose deadline has passed).
const IDLE_POLL: Duration = Duration::from_millis(2);

/// With host time: the longest an idle hart sleeps before it looks again (its deadline,
/// IPIs, pauses and the end wake it earlier; this bounds the latency of a user's quit).
pub(crate) const HOST_IDLE_POLL: Duration = Duration::from_millis(20);

/// The longest a vCPU polling another's HSM state waits for it to make progress
/// ([`Smp::yield_to`]).
pub(crate) const POLL_WAIT: Duration = Duration::from_millis(1);

/// One hart as the others see it.
#[derive(Debug, Clone, Copy)]
struct HartSlot {
    /// HSM state.
    status: u64,
    /// `(start_addr, opaque)` of a pending `hart_start`.
    start: (u64, u64),
    /// While idle: the global clock value at which its timer fires (`u64::MAX`: none).
    idle: Option<u64>,
}

/// What the threads share under the lock.
struct State {
    harts: Vec<HartSlot>,
    end: Option<Result<RunExit, Error>>,
    /// vCPU threads waiting at the start gate.
    arrived: usize,
    /// The start gate is open: every thread has arrived.
    open: bool,
}

/// A vCPU's count of completed runs ([`Smp::note_progress`]), alone in its cache line
/// (64 bytes on x86-64, and the granule of most other hosts): next to another vCPU's, each
/// thread's write after every run would take the line from the other's core (a run is
/// 16 384 instructions on virtual time, so a 2-vCPU Linux boot makes about 120 000 of them).
#[derive(Default)]
#[repr(align(64))]
struct RunCount(AtomicU64);

/// The shared part of a multiprocessor VM.
pub(crate) struct Smp {
    pub(crate) clock: Arc<SharedClock>,
    /// Host time: the clock every hart follows (`None`: virtual time, `clock`).
    host: Option<HostClock>,
    /// One per vCPU (a vCPU keeps its mailbox when it moves on or off a hart).
    mailboxes: Vec<Arc<HartMailbox>>,
    /// One per hart instance (`--pcpus`).
    stops: Vec<StopHandle>,
    state: Mutex<State>,
    cv: Condvar,
    ended: AtomicBool,
    /// The earliest idle deadline (global clock), for running harts to wake idle ones.
    earliest_idle: AtomicU64,
    /// Per vCPU: runs of its hart completed (bumped after each, [`Smp::note_progress`]),
    /// each on its own cache line: every vCPU thread writes its own after every run.
    progress: Vec<RunCount>,
}

impl Smp {
    /// State for vCPUs with these mailboxes (vCPU `i` has `mailboxes[i]`) on harts with these
    /// stop handles; vCPU 0 is started, the others stopped.
    /// With `host`, time is the host's (see the module documentation).
    pub(crate) fn new(
        clock: Arc<SharedClock>,
        host: Option<HostClock>,
        mailboxes: Vec<Arc<HartMailbox>>,
        stops: Vec<StopHandle>,
    ) -> Smp {
        let n = mailboxes.len();
        Smp {
            clock,
            host,
            mailboxes,
            stops,
            state: Mutex::new(State {
                harts: (0..n)
                    .map(|i| HartSlot {
                        status: if i == 0 { STATE_STARTED } else { STATE_STOPPED },
                        start: (0, 0),
                        idle: None,
                    })
                    .collect(),
                end: None,
                arrived: 0,
                open: false,
            }),
            cv: Condvar::new(),
            ended: AtomicBool::new(false),
            earliest_idle: AtomicU64::new(u64::MAX),
            progress: (0..n).map(|_| RunCount::default()).collect(),
        }
    }

    /// The time idle deadlines are compared with: the shared virtual clock (instruction
    /// slots), or with host time the host clock's ticks (see `Hart::wake_deadline`).
    pub(crate) fn now(&self) -> u64 {
        match &self.host {
            Some(h) => h.ticks(),
            None => self.clock.now(),
        }
    }

    /// How long an idle wait sleeps before looking again: [`IDLE_POLL`] with virtual time;
    /// with host time until `deadline` (a value of [`Smp::now`]), at most
    /// [`HOST_IDLE_POLL`].
    fn idle_sleep(&self, deadline: u64) -> Duration {
        match &self.host {
            None => IDLE_POLL,
            Some(h) => {
                let left = deadline.saturating_sub(h.ticks());
                HostClock::duration_of(left).min(HOST_IDLE_POLL)
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of harts.
    pub(crate) fn hart_count(&self) -> u64 {
        self.mailboxes.len() as u64
    }

    /// Every vCPU's mailbox, by vCPU id.
    pub(crate) fn mailboxes(&self) -> Vec<Arc<HartMailbox>> {
        self.mailboxes.clone()
    }

    /// Whether the VM has ended.
    pub(crate) fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Ends the VM with `result` (unless it has ended already): stops and wakes every hart.
    pub(crate) fn finish(&self, result: Result<RunExit, Error>) {
        let mut st = self.lock();
        if st.end.is_none() {
            st.end = Some(result);
        }
        self.ended.store(true, Ordering::SeqCst);
        for s in &self.stops {
            s.stop();
        }
        self.cv.notify_all();
    }

    /// A vCPU thread (not the first hart instance's) is ready: waits until the gate opens
    /// or the VM ends.
    pub(crate) fn arrive_at_gate(&self) {
        let mut st = self.lock();
        st.arrived += 1;
        self.cv.notify_all();
        while !st.open && !self.ended() {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The first hart instance, after creating the other threads: waits until `threads`
    /// of them have arrived at the gate (or the VM ended), then lets every thread run.
    pub(crate) fn open_gate(&self, threads: usize) {
        let mut st = self.lock();
        while st.arrived < threads && !self.ended() {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.open = true;
        self.cv.notify_all();
    }

    /// vCPU `id` completed a run of its hart.
    pub(crate) fn note_progress(&self, id: u64) {
        if let Some(p) = self.progress.get(id as usize) {
            p.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// vCPU `caller` reads the HSM state of vCPU `target` (see the module documentation):
    /// when `target` is another vCPU, started or starting and not idle, the caller gives up
    /// its host CPU until `target` completes a run of its hart, the VM ends, or
    /// [`POLL_WAIT`] passes. With fewer hart instances than vCPUs (`--pcpus`) `target` may
    /// be waiting for the caller's own hart instance: the caller only yields once.
    pub(crate) fn yield_to(&self, caller: u64, target: u64) {
        if caller == target || target >= self.hart_count() {
            return;
        }
        if self.stops.len() != self.mailboxes.len() {
            std::thread::yield_now();
            return;
        }
        {
            let st = self.lock();
            let slot = &st.harts[target as usize];
            let running = slot.status == STATE_STARTED || slot.status == STATE_START_PENDING;
            if !running || slot.idle.is_some() {
                return;
            }
        }
        let progress = &self.progress[target as usize].0;
        let seen = progress.load(Ordering::Relaxed);
        let until = Instant::now() + POLL_WAIT;
        std::thread::yield_now();
        while progress.load(Ordering::Relaxed) == seen && !self.ended() && Instant::now() < until {
            std::thread::sleep(Duration::from_micros(20));
        }
    }

    /// How the VM ended (after every thread has returned).
    pub(crate) fn take_end(&self) -> Result<RunExit, Error> {
        self.lock()
            .end
            .take()
            .unwrap_or(Err(Error::AllHartsStopped { hart: 0 }))
    }

    /// HSM `hart_start`.
    pub(crate) fn hart_start(&self, hart: u64, start_addr: u64, opaque: u64) -> SbiRet {
        let mut st = self.lock();
        let slot = &mut st.harts[hart as usize];
        if slot.status != STATE_STOPPED {
            return SbiRet::err(SBI_ERR_ALREADY_AVAILABLE);
        }
        slot.status = STATE_START_PENDING;
        slot.start = (start_addr, opaque);
        self.cv.notify_all();
        SbiRet::ok(0)
    }

    /// HSM `hart_get_status`.
    pub(crate) fn hart_status(&self, hart: u64) -> u64 {
        self.lock().harts[hart as usize].status
    }

    /// HSM `hart_stop` by `hart` itself: it becomes STOPPED. Ends the VM when no hart is left
    /// running.
    pub(crate) fn hart_stopped(&self, hart: u64) {
        let mut st = self.lock();
        let slot = &mut st.harts[hart as usize];
        slot.status = STATE_STOPPED;
        slot.idle = None;
        let all_stopped = st.harts.iter().all(|h| h.status == STATE_STOPPED);
        self.update_earliest(&st);
        self.cv.notify_all();
        drop(st);
        if all_stopped {
            self.finish(Err(Error::AllHartsStopped { hart }));
        }
    }

    /// Blocks a STOPPED hart until a `hart_start` names it ([`StartWait::Start`]), the VM
    /// ends, or `pause` says the control socket pauses the VM (the hart stays STOPPED).
    pub(crate) fn wait_for_start(&self, hart: u64, pause: &dyn Fn() -> bool) -> StartWait {
        let mut st = self.lock();
        loop {
            if self.ended() {
                return StartWait::Ended;
            }
            if pause() {
                return StartWait::Paused;
            }
            let slot = &mut st.harts[hart as usize];
            if slot.status == STATE_START_PENDING {
                slot.status = STATE_STARTED;
                return StartWait::Start(slot.start);
            }
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Wakes every thread waiting here (to see a pause request).
    pub(crate) fn wake_all(&self) {
        let _st = self.lock();
        self.cv.notify_all();
    }

    /// Posts a supervisor software interrupt (VSSIP) to `hart` and wakes it if it idles.
    pub(crate) fn send_ipi(&self, hart: u64, vssip: u64) {
        self.mailboxes[hart as usize].post_interrupts(vssip);
        let _st = self.lock();
        self.cv.notify_all();
    }

    /// Wakes the vCPUs waiting here to look at their mailboxes (after an MSI was posted to
    /// one, `run/aia.rs`).
    pub(crate) fn notify(&self) {
        let _st = self.lock();
        self.cv.notify_all();
    }

    /// Remote fence: every hart of `harts` but `caller` flushes its TLB
    /// before this returns, or before it runs another instruction.
    pub(crate) fn remote_fence(&self, caller: u64, harts: &[u64]) {
        let tickets: Vec<(usize, u64)> = harts
            .iter()
            .filter(|&&h| h != caller)
            .map(|&h| (h as usize, self.mailboxes[h as usize].request_flush()))
            .collect();
        for (h, ticket) in tickets {
            while !self.mailboxes[h].flush_complete(ticket) && !self.ended() {
                std::thread::yield_now();
            }
        }
    }

    /// Called by running harts between runs: wakes idle harts whose deadline has passed.
    pub(crate) fn wake_due(&self) {
        if self.earliest_idle.load(Ordering::SeqCst) <= self.now() {
            let _st = self.lock();
            self.cv.notify_all();
        }
    }

    fn update_earliest(&self, st: &State) {
        let min = st.harts.iter().filter_map(|h| h.idle).min();
        self.earliest_idle
            .store(min.unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// A started hart executed WFI with nothing pending: wait until something can wake it
    /// (an interrupt posted to it, its timer deadline on the global clock, the end of the VM).
    /// `Err(())` when every started hart idles and none has a timer, unless `input_may_come`
    /// (console input that would interrupt a vCPU may still arrive: then it waits on).
    /// `quit` is polled too: a user's quit request must not wait for the guest to wake.
    /// `Ok(IdleEnd::Paused)` when `pause` says the control socket pauses the VM: the hart
    /// is still waiting (a snapshot records it so) and calls this again after the pause.
    pub(crate) fn idle(
        &self,
        id: u64,
        hart: &Hart,
        quit: &dyn Fn() -> bool,
        input_may_come: &dyn Fn() -> bool,
        pause: &dyn Fn() -> bool,
    ) -> Result<IdleEnd, ()> {
        let i = id as usize;
        let mut st = self.lock();
        let result = loop {
            if self.ended() {
                // Still waiting: a snapshot taken at the end records it.
                return Ok(IdleEnd::Woke);
            }
            if hart.wakeup_pending() || quit() {
                break Ok(IdleEnd::Woke);
            }
            let deadline = hart.wake_deadline().unwrap_or(u64::MAX);
            if deadline <= self.now() {
                break Ok(IdleEnd::Woke);
            }
            st.harts[i].idle = Some(deadline);
            self.update_earliest(&st);
            if pause() {
                // Still waiting, as at the end.
                return Ok(IdleEnd::Paused);
            }
            let all_idle = self.all_waiting(&st);
            if all_idle {
                let min = st.harts.iter().filter_map(|h| h.idle).min();
                match min {
                    // Host time moves by itself: every hart sleeps until its deadline.
                    Some(t) if t != u64::MAX && self.host.is_some() => {}
                    Some(t) if t != u64::MAX => {
                        self.cv.notify_all();
                        if t > self.clock.now() {
                            self.clock.advance_to(t);
                            continue;
                        }
                        // Another hart's deadline has passed: it is waking up.
                    }
                    // Console input may still come and interrupt a vCPU.
                    _ if input_may_come() => {}
                    _ => break Err(()),
                }
            }
            let sleep = self.idle_sleep(deadline);
            st = self
                .cv
                .wait_timeout(st, sleep)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        st.harts[i].idle = None;
        self.update_earliest(&st);
        result
    }

    /// Whether every vCPU is stopped or waits in WFI with nothing posted to it (an IPI
    /// posted to a waiting vCPU is about to wake it: it is not waiting any more).
    fn all_waiting(&self, st: &State) -> bool {
        st.harts.iter().zip(&self.mailboxes).all(|(h, mailbox)| {
            h.status == STATE_STOPPED
                || (h.status == STATE_STARTED && h.idle.is_some() && !mailbox.has_posted())
        })
    }

    /// Whether vCPU `id` can run now (for a hart that multiplexes vCPUs): START_PENDING,
    /// STARTED and not waiting in WFI, or waiting with an interrupt posted to its mailbox or
    /// its timer deadline reached on the global clock.
    fn can_run(&self, st: &State, id: usize) -> bool {
        let h = &st.harts[id];
        match h.status {
            STATE_START_PENDING => true,
            STATE_STARTED => match h.idle {
                None => true,
                Some(deadline) => self.mailboxes[id].has_posted() || deadline <= self.now(),
            },
            _ => false,
        }
    }

    /// Takes the first vCPU of `order` that can run: a START_PENDING one becomes STARTED (its
    /// start is returned), a waiting one stops waiting.
    fn take_runnable(&self, st: &mut State, order: &[u64]) -> Option<Pick> {
        let id = *order.iter().find(|&&id| self.can_run(st, id as usize))?;
        let slot = &mut st.harts[id as usize];
        let start = (slot.status == STATE_START_PENDING).then(|| {
            slot.status = STATE_STARTED;
            slot.start
        });
        slot.idle = None;
        self.update_earliest(st);
        Some((id, start))
    }

    /// [`Smp::take_runnable`] without waiting: `None` when none of `order` can run now.
    pub(crate) fn pick(&self, order: &[u64]) -> Option<Pick> {
        let mut st = self.lock();
        self.take_runnable(&mut st, order)
    }

    /// vCPU `id` waits in WFI (on a hart or off it) until the global clock reaches
    /// `deadline` (`u64::MAX`: no timer) or an interrupt is posted to it.
    pub(crate) fn set_idle(&self, id: u64, deadline: u64) {
        let mut st = self.lock();
        st.harts[id as usize].idle = Some(deadline);
        self.update_earliest(&st);
        // This may make every started vCPU idle: a hart waiting in `wait_pick` moves time.
        self.cv.notify_all();
    }

    /// Blocks a hart until one of its vCPUs (`order`, in the order to prefer) can run, and
    /// takes it as [`Smp::pick`] does. When every started vCPU of the VM waits in WFI, moves
    /// global time to the earliest deadline among them (as [`Smp::idle`]). `Ok(None)` when the
    /// VM ends or `quit` says so first (the user's quit, or a pause of the control socket);
    /// `Err(())` when every started vCPU waits with no timer and `input_may_come` says no
    /// console input can still end a wait.
    pub(crate) fn wait_pick(
        &self,
        order: &[u64],
        quit: &dyn Fn() -> bool,
        input_may_come: &dyn Fn() -> bool,
    ) -> Result<Option<Pick>, ()> {
        let mut st = self.lock();
        loop {
            if self.ended() || quit() {
                return Ok(None);
            }
            if let Some(pick) = self.take_runnable(&mut st, order) {
                return Ok(Some(pick));
            }
            let all_idle = self.all_waiting(&st);
            if all_idle {
                match st.harts.iter().filter_map(|h| h.idle).min() {
                    Some(t) if t != u64::MAX && self.host.is_some() => {}
                    Some(t) if t != u64::MAX => {
                        self.cv.notify_all();
                        if t > self.clock.now() {
                            self.clock.advance_to(t);
                            continue;
                        }
                    }
                    _ if input_may_come() => {}
                    _ => return Err(()),
                }
            }
            let earliest = st.harts.iter().filter_map(|h| h.idle).min();
            let sleep = self.idle_sleep(earliest.unwrap_or(u64::MAX));
            st = self
                .cv
                .wait_timeout(st, sleep)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// What a snapshot keeps of vCPU `id` here (the VMM's other saved parts are
    /// [`crate::persist::Persist`]; this one is indexed by vCPU).
    pub(crate) fn save_vcpu(&self, id: u64) -> VcpuSmpState {
        let st = self.lock();
        let h = st.harts[id as usize];
        VcpuSmpState {
            hsm: h.status,
            start: h.start,
            idle: h.idle,
            ipi_posted: self.mailboxes[id as usize].has_pending(),
        }
    }

    /// vCPU `id` as a snapshot has it (before any thread runs): see [`Smp::save_vcpu`].
    pub(crate) fn restore_vcpu(&self, id: u64, saved: &VcpuSmpState) {
        let mut st = self.lock();
        st.harts[id as usize] = HartSlot {
            status: saved.hsm,
            start: saved.start,
            idle: saved.idle,
        };
        self.update_earliest(&st);
        if saved.ipi_posted {
            self.mailboxes[id as usize].post_interrupts(super::VSSIP);
        }
    }

    /// Whether vCPU `id` waits in WFI.
    pub(crate) fn is_idle(&self, id: u64) -> bool {
        self.lock().harts[id as usize].idle.is_some()
    }
}
