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

#[derive(Debug)]
struct State {
    /// A pause is wanted (until `resume`).
    want: bool,
    /// One per hart instance.
    slots: Vec<Slot>,
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
        {
            let mut st = self.lock();
            if st.ended() {
                return Err("the VM has ended".into());
            }
            st.want = true;
            self.requested.store(true, Ordering::SeqCst);
        }
        for s in &self.stops {
            s.stop();
        }
        if let Some(smp) = &self.smp {
            smp.wake_all();
        }
        self.wait_parked(true)
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

    /// Hart instance `instance` parks, handing over `view`, until the pause ends, the VM
    /// ends or `quit` says so.
    pub(crate) fn park(&self, instance: usize, view: InstanceView, quit: &dyn Fn() -> bool) {
        let mut st = self.lock();
        st.slots[instance] = Slot::Parked(view);
        self.cv.notify_all();
        while st.want && !st.ended() && !quit() {
            st = self
                .cv
                .wait_timeout(st, PARK_POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        st.slots[instance] = Slot::Running;
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
    /// Whether a pause is wanted (the waits in `Smp` check it).
    pub(crate) fn pause_requested(&self) -> bool {
        self.pause.as_ref().is_some_and(|p| p.ctl.requested())
    }

    /// A pause point: when a pause is wanted, park (handing over this instance's vCPUs)
    /// until it ends. The hart is between two runs.
    pub(crate) fn pause_point(&self) {
        let Some(link) = &self.pause else {
            return;
        };
        if !link.ctl.requested() {
            return;
        }
        let link = link.clone();
        let view = self.instance_view();
        let input = self.input.clone();
        link.ctl
            .park(link.instance, view, &|| input.quit_requested());
    }

    /// This instance's thread has returned.
    pub(crate) fn pause_exited(&self) {
        if let Some(link) = &self.pause {
            link.ctl.exited(link.instance);
        }
    }

    /// Copies of this instance's vCPUs and exit counts.
    fn instance_view(&self) -> InstanceView {
        let mut state = self.hart.save_state();
        state.hart_id = self.hart_id;
        let mut vcpus = vec![VcpuView {
            id: self.hart_id,
            state,
            ctr: self.ctr.clone(),
            pmu: self.pmu.snapshot(),
            executed: self.hart.executed(),
            on_hart: true,
        }];
        if let Some(sched) = &self.sched {
            vcpus.extend(sched.parked.iter().map(|p| VcpuView {
                id: p.id,
                state: p.state.clone(),
                ctr: p.ctr.clone(),
                pmu: p.pmu.snapshot(),
                executed: p.state.vclock.saturating_sub(p.state.skipped),
                on_hart: false,
            }));
        }
        InstanceView {
            vcpus,
            stats: self.stats.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
                            ctl.park(i, empty_view(), &|| false);
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
        let smp = Smp::new(Arc::new(SharedClock::new()), mailboxes, Vec::new());
        assert_eq!(
            smp.wait_for_start(1, &|| true),
            super::super::smp::StartWait::Paused
        );
        assert_eq!(smp.hart_status(1), STATE_STOPPED);
    }
}
