//! Pausing a whole VM for the control socket (`--api-sock`): every hart instance (host
//! thread) stops at an instruction boundary and parks, handing over a copy of its vCPUs'
//! states; the socket's thread then answers from those copies and resumes them.
//!
//! - **Where a thread parks.** At the top of its run loop (between two runs of the hart),
//!   and inside every wait a vCPU thread can be in, so that a pause never waits for the
//!   guest: a 1:1 vCPU idling in WFI parks with its WFI wait still registered (a snapshot
//!   records it waiting, as `--snapshot-on-stop` does), an HSM-stopped one parks while it
//!   waits for `hart_start`, and a hart instance with nothing to run (`--pcpus`) parks
//!   instead of waiting for a vCPU. A vCPU waiting for a remote fence needs nothing: a
//!   parked target is outside `run`, which completes the fence, and the caller then parks
//!   at the top of its loop.
//! - **How the request reaches it.** [`PauseCtl::pause`] sets a flag, stops every hart
//!   through its stop handle (a run returns within a chunk) and wakes the threads waiting in
//!   `Smp`; each checks the flag at those points. It returns when every instance has
//!   parked, or with an error when the VM has ended meanwhile (nothing is left paused).
//! - **What a parked instance hands over.** For each vCPU on it (the one on the hart and
//!   those parked by its scheduler): its `HartState`, its `ctr-virt` state and its
//!   instruction count; and the instance's exit counts. The thread keeps its own state and
//!   goes on from exactly where it was on [`PauseCtl::resume`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::backend::HartState;
use vcpu_api::StopHandle;

use super::smp::Smp;
use super::{ExitStats, GuestVm};

/// How long [`PauseCtl::pause`] waits for every instance to park before it gives up (a
/// safety net: a thread parks within one run chunk).
const PAUSE_LIMIT: Duration = Duration::from_secs(30);
/// How often a parked thread looks at the user's quit request (Ctrl-A x).
const PARK_POLL: Duration = Duration::from_millis(50);

/// One vCPU as a parked hart instance hands it over.
#[derive(Debug, Clone)]
pub(crate) struct VcpuView {
    /// Its hart id.
    pub(crate) id: u64,
    /// Its architectural state (`hart_id` = `id`).
    pub(crate) state: HartState,
    /// Its CTR as `ctr-virt` manages it.
    pub(crate) ctr: ctr_virt::GuestCtr,
    /// Its PMU as `pmu-virt` manages it.
    pub(crate) pmu: pmu_virt::GuestPmuState,
    /// Instructions it has executed.
    pub(crate) executed: u64,
    /// Whether it is the one on its instance's hart (else parked by `--pcpus`).
    pub(crate) on_hart: bool,
    /// Whether it waits in WFI, as far as the instance knows (the only vCPU of a VM; with
    /// several the SMP state knows).
    pub(crate) wfi: bool,
}

/// What a parked hart instance hands over.
#[derive(Debug, Clone)]
pub(crate) struct InstanceView {
    /// The instance's vCPUs.
    pub(crate) vcpus: Vec<VcpuView>,
    /// Its exit counts.
    pub(crate) stats: ExitStats,
}

#[derive(Debug)]
enum Slot {
    Running,
    Parked(InstanceView),
    /// Its thread has returned: the VM has ended.
    Exited,
}

struct State {
    /// A pause is wanted (until `resume`).
    want: bool,
    /// One per hart instance.
    slots: Vec<Slot>,
    /// Per hart instance: work for its thread to do on its vCPU while parked (the
    /// debugger's register and memory accesses, `run/gdb.rs`).
    jobs: Vec<Vec<Job>>,
    /// Per hart instance: it may leave its park to run one instruction (a debugger's
    /// single step), then parks again.
    step: Vec<bool>,
    /// Per hart instance: it runs although the VM is paused (a debugger's `continue` with
    /// scheduler locking: only some vCPUs run), until the next pause request.
    free: Vec<bool>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("want", &self.want)
            .field("slots", &self.slots)
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

/// Work for a parked hart instance's thread to do on its vCPU.
pub(crate) type Job = Box<dyn FnOnce(&mut GuestVm) + Send>;

/// What parks: a hart instance's thread, giving its view, doing the jobs it gets.
pub(crate) trait Parked {
    /// Copies of its vCPUs and exit counts.
    fn view(&self) -> InstanceView;
    /// Whether the run must end (Ctrl-A x, the VM moved).
    fn quit(&self) -> bool;
    /// Does `job` on its vCPU.
    fn run_job(&mut self, job: Job);
}

/// Why a park ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParkEnd {
    /// No pause was wanted: the instance did not park.
    NotParked,
    /// The pause ended (or the VM did).
    Resumed,
    /// The VM stays paused, but this instance runs one instruction first (a debugger's
    /// single step) and then parks again.
    Step,
}

impl State {
    fn ended(&self) -> bool {
        self.slots.iter().any(|s| matches!(s, Slot::Exited))
    }
}

/// The pause state of a VM, shared by its hart instances and the control socket's thread.
pub(crate) struct PauseCtl {
    /// `State::want`, for the run loops to check without the lock.
    requested: AtomicBool,
    state: Mutex<State>,
    cv: Condvar,
    /// One per hart instance.
    stops: Vec<StopHandle>,
    /// Woken on a pause request (threads waiting there check [`PauseCtl::requested`]).
    smp: Option<Arc<Smp>>,
}

impl PauseCtl {
    /// The pause state of instances with these stop handles; `paused`: every instance parks
    /// before its first instruction (`vmm restore --paused`).
    pub(crate) fn new(stops: Vec<StopHandle>, smp: Option<Arc<Smp>>, paused: bool) -> PauseCtl {
        PauseCtl {
            requested: AtomicBool::new(paused),
            state: Mutex::new(State {
                want: paused,
                slots: stops.iter().map(|_| Slot::Running).collect(),
                jobs: stops.iter().map(|_| Vec::new()).collect(),
                step: vec![false; stops.len()],
                free: vec![false; stops.len()],
            }),
            cv: Condvar::new(),
            stops,
            smp,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a pause is wanted: a hart instance parks at its next pause point.
    pub(crate) fn requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Whether the VM is paused (or being paused).
    pub(crate) fn is_paused(&self) -> bool {
        self.lock().want
    }

    /// Pauses every hart instance: returns once each has parked. `Err` (and nothing left
    /// paused) when the VM ends first or an instance does not park within [`PAUSE_LIMIT`].
    pub(crate) fn pause(&self) -> Result<(), String> {
        self.request_pause()?;
        self.wait_parked(true)
    }

    /// Asks every hart instance to park, without waiting for them (a vCPU thread that hit a
    /// debugger's breakpoint asks so). `Err` when the VM has ended.
    pub(crate) fn request_pause(&self) -> Result<(), String> {
        {
            let mut st = self.lock();
            if st.ended() {
                return Err("the VM has ended".into());
            }
            st.want = true;
            st.free.iter_mut().for_each(|f| *f = false);
            self.requested.store(true, Ordering::SeqCst);
        }
        for s in &self.stops {
            s.stop();
        }
        if let Some(smp) = &self.smp {
            smp.wake_all();
        }
        Ok(())
    }

    /// Whether a hart instance's thread has returned (the VM has ended).
    pub(crate) fn ended(&self) -> bool {
        self.lock().ended()
    }

    /// Whether a pause is wanted and every hart instance has parked.
    pub(crate) fn all_parked(&self) -> bool {
        let st = self.lock();
        st.want && st.slots.iter().all(|s| matches!(s, Slot::Parked(_)))
    }

    /// The number of hart instances.
    pub(crate) fn instances(&self) -> usize {
        self.stops.len()
    }

    /// While paused: has parked `instance` do `job` on its vCPU (it runs on that instance's
    /// thread; the caller waits for its result however `job` sends it). `Err` when the
    /// instance is not parked.
    pub(crate) fn run_on(&self, instance: usize, job: Job) -> Result<(), String> {
        let mut st = self.lock();
        match st.slots.get(instance) {
            Some(Slot::Parked(_)) if st.want => {}
            Some(Slot::Exited) => return Err("the VM has ended".into()),
            Some(_) => return Err(format!("hart instance {instance} is not paused")),
            None => return Err(format!("no hart instance {instance}")),
        }
        st.jobs[instance].push(job);
        self.cv.notify_all();
        Ok(())
    }

    /// While paused: lets the parked `instances` run on (the others stay parked) until the
    /// next pause request ([`PauseCtl::request_pause`]).
    pub(crate) fn resume_only(&self, instances: &[usize]) -> Result<(), String> {
        let mut st = self.lock();
        for &i in instances {
            if !st.want || !matches!(st.slots.get(i), Some(Slot::Parked(_))) {
                return Err(format!("hart instance {i} is not paused"));
            }
        }
        for &i in instances {
            st.free[i] = true;
            st.slots[i] = Slot::Running;
        }
        self.cv.notify_all();
        Ok(())
    }

    /// Whether hart instance `instance` should park now: a pause is wanted and it has not
    /// been let run on ([`PauseCtl::resume_only`]).
    pub(crate) fn requested_for(&self, instance: usize) -> bool {
        self.requested() && !self.lock().free.get(instance).copied().unwrap_or(false)
    }

    /// While paused: lets parked `instance` run one instruction, after which it parks again
    /// ([`PauseCtl::wait_parked`] waits for that).
    pub(crate) fn step(&self, instance: usize) -> Result<(), String> {
        let mut st = self.lock();
        if !st.want || !matches!(st.slots.get(instance), Some(Slot::Parked(_))) {
            return Err(format!("hart instance {instance} is not paused"));
        }
        st.step[instance] = true;
        st.slots[instance] = Slot::Running;
        self.cv.notify_all();
        Ok(())
    }

    /// While paused: waits until every instance has parked (they may still be on their way,
    /// e.g. just after `vmm restore --paused`). `Err` when the VM ends first or an instance
    /// does not park within [`PAUSE_LIMIT`]; then the pause ends too if `release`.
    pub(crate) fn wait_parked(&self, release: bool) -> Result<(), String> {
        let limit = Instant::now() + PAUSE_LIMIT;
        let mut st = self.lock();
        loop {
            let error = if st.ended() {
                "the VM has ended".to_string()
            } else if st.slots.iter().all(|s| matches!(s, Slot::Parked(_))) {
                return Ok(());
            } else if Instant::now() >= limit {
                format!(
                    "the VM did not pause within {} s (is it running?)",
                    PAUSE_LIMIT.as_secs()
                )
            } else {
                st = self
                    .cv
                    .wait_timeout(st, limit.saturating_duration_since(Instant::now()))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                continue;
            };
            if release || st.ended() {
                self.release(&mut st);
            }
            return Err(error);
        }
    }

    /// The VM has been handed over (its input queue says where): every parked instance
    /// leaves its park and ends its run without running the guest (the pause is never
    /// released). Threads in a wait or a run notice through their stop handles.
    pub(crate) fn end_parked(&self) {
        let _st = self.lock();
        for s in &self.stops {
            s.stop();
        }
        if let Some(smp) = &self.smp {
            smp.wake_all();
        }
        self.cv.notify_all();
    }

    /// Lets every parked instance go on.
    pub(crate) fn resume(&self) {
        let mut st = self.lock();
        self.release(&mut st);
    }

    fn release(&self, st: &mut State) {
        st.want = false;
        st.free.iter_mut().for_each(|f| *f = false);
        self.requested.store(false, Ordering::SeqCst);
        self.cv.notify_all();
    }

    /// With every instance parked: `f` of what they handed over (instance by instance).
    /// `None` when they are not all parked.
    pub(crate) fn with_views<R>(&self, f: impl FnOnce(&[&InstanceView]) -> R) -> Option<R> {
        let st = self.lock();
        let views: Option<Vec<&InstanceView>> = st
            .slots
            .iter()
            .map(|s| match s {
                Slot::Parked(v) => Some(v),
                _ => None,
            })
            .collect();
        views.map(|v| f(&v))
    }

    /// Hart instance `instance` parks, handing over its view, until the pause ends, the VM
    /// ends, `vm` says to quit, or it may run one instruction ([`PauseCtl::step`]).
    /// Meanwhile it does the jobs it gets, handing over a new view after each.
    pub(crate) fn park(&self, instance: usize, vm: &mut dyn Parked) -> ParkEnd {
        let mut st = self.lock();
        st.slots[instance] = Slot::Parked(vm.view());
        self.cv.notify_all();
        loop {
            if std::mem::take(&mut st.step[instance]) {
                st.slots[instance] = Slot::Running;
                return ParkEnd::Step;
            }
            if st.free[instance] {
                st.slots[instance] = Slot::Running;
                return ParkEnd::Resumed;
            }
            if !st.jobs[instance].is_empty() {
                let jobs = std::mem::take(&mut st.jobs[instance]);
                drop(st);
                for job in jobs {
                    vm.run_job(job);
                }
                let view = vm.view();
                st = self.lock();
                st.slots[instance] = Slot::Parked(view);
                self.cv.notify_all();
                continue;
            }
            if !st.want || st.ended() || vm.quit() {
                break;
            }
            st = self
                .cv
                .wait_timeout(st, PARK_POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        st.slots[instance] = Slot::Running;
        ParkEnd::Resumed
    }

    /// Hart instance `instance`'s thread has returned (the VM has ended).
    pub(crate) fn exited(&self, instance: usize) {
        let mut st = self.lock();
        st.slots[instance] = Slot::Exited;
        self.cv.notify_all();
    }
}

/// A hart instance's link to its VM's [`PauseCtl`].
#[derive(Clone)]
pub(crate) struct PauseLink {
    pub(crate) ctl: Arc<PauseCtl>,
    /// The instance's index (vCPU `v` runs on instance `v % pcpus`).
    pub(crate) instance: usize,
}

impl GuestVm {
    /// Whether a pause is wanted of this instance (the waits in `Smp` check it).
    pub(crate) fn pause_requested(&self) -> bool {
        self.pause
            .as_ref()
            .is_some_and(|p| p.ctl.requested_for(p.instance))
    }

    /// A pause point: when a pause is wanted, park (handing over this instance's vCPUs)
    /// until it ends. The hart is between two runs. [`ParkEnd::Step`]: a debugger lets the
    /// vCPU run one instruction before it parks again.
    pub(crate) fn pause_point(&mut self) -> ParkEnd {
        let Some(link) = &self.pause else {
            return ParkEnd::NotParked;
        };
        if !link.ctl.requested_for(link.instance) {
            return ParkEnd::NotParked;
        }
        let link = link.clone();
        let end = link.ctl.park(link.instance, self);
        // The stop that asked this instance to park is spent: the next run (a debugger's
        // single step above all) runs.
        self.hart.stop_handle().take();
        end
    }

    /// This instance's thread has returned.
    pub(crate) fn pause_exited(&self) {
        if let Some(link) = &self.pause {
            link.ctl.exited(link.instance);
        }
    }

    /// Copies of this instance's vCPUs and exit counts.
    pub(crate) fn instance_view(&self) -> InstanceView {
        let mut state = self.hart.save_state();
        state.hart_id = self.hart_id;
        let mut vcpus = vec![VcpuView {
            id: self.hart_id,
            state,
            ctr: self.ctr.clone(),
            pmu: self.pmu.snapshot(),
            executed: self.hart.executed(),
            on_hart: true,
            wfi: self.waiting_in_wfi,
        }];
        if let Some(sched) = &self.sched {
            vcpus.extend(sched.parked.iter().map(|p| VcpuView {
                id: p.id,
                state: p.saved_state(),
                ctr: p.ctr.clone(),
                pmu: p.pmu.snapshot(),
                executed: p.state.vclock.saturating_sub(p.state.skipped),
                on_hart: false,
                wfi: false,
            }));
        }
        InstanceView {
            vcpus,
            stats: self.stats.clone(),
        }
    }
}

impl Parked for GuestVm {
    fn view(&self) -> InstanceView {
        self.instance_view()
    }

    fn quit(&self) -> bool {
        self.input.quit_requested()
    }

    fn run_job(&mut self, job: Job) {
        job(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in hart instance: no vCPUs, no quitting, jobs refused.
    struct Empty;

    impl Parked for Empty {
        fn view(&self) -> InstanceView {
            empty_view()
        }
        fn quit(&self) -> bool {
            false
        }
        fn run_job(&mut self, _job: Job) {}
    }
    use crate::sbi::hsm::STATE_STOPPED;
    use std::sync::atomic::AtomicBool;
    use vcpu_api::{HartMailbox, SharedClock};

    fn empty_view() -> InstanceView {
        InstanceView {
            vcpus: Vec::new(),
            stats: ExitStats::default(),
        }
    }

    /// Two stand-in hart threads that park at their pause points: `pause` returns once both
    /// have parked, `resume` lets them go, and once they have ended a pause is refused and
    /// leaves nothing paused.
    #[test]
    fn pause_waits_for_every_instance_and_refuses_an_ended_vm() {
        let stops = vec![StopHandle::default(), StopHandle::default()];
        let ctl = Arc::new(PauseCtl::new(stops, None, false));
        let done = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..2)
            .map(|i| {
                let (ctl, done) = (ctl.clone(), done.clone());
                std::thread::spawn(move || {
                    while !done.load(Ordering::SeqCst) {
                        if ctl.requested() {
                            ctl.park(i, &mut Empty);
                        }
                        std::thread::yield_now();
                    }
                    ctl.exited(i);
                })
            })
            .collect();
        for _ in 0..3 {
            ctl.pause().unwrap();
            assert!(ctl.is_paused());
            assert_eq!(ctl.with_views(|v| v.len()), Some(2));
            ctl.resume();
            assert!(!ctl.is_paused());
        }
        done.store(true, Ordering::SeqCst);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(ctl.pause(), Err("the VM has ended".to_string()));
        assert!(!ctl.is_paused());
        assert!(ctl.with_views(|v| v.len()).is_none());
    }

    /// An HSM-stopped vCPU's wait for `hart_start` gives way to a pause and leaves it
    /// STOPPED.
    #[test]
    fn a_stopped_vcpu_waiting_for_start_parks() {
        let mailboxes = (0..2).map(|_| Arc::new(HartMailbox::default())).collect();
        let smp = Smp::new(Arc::new(SharedClock::new()), None, mailboxes, Vec::new());
        assert_eq!(
            smp.wait_for_start(1, &|| true),
            super::super::smp::StartWait::Paused
        );
        assert_eq!(smp.hart_status(1), STATE_STOPPED);
    }
}
