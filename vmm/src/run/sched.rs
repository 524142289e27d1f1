//! `vmm run --pcpus N`: more vCPUs than hart instances. Each hart instance (a host thread)
//! runs the vCPUs given to it (vCPU `v` on hart `v % N`) in turn:
//!
//! - **When it switches.** Between two runs of the hart: when the current vCPU has used up
//!   its time slice (`--slice-insns` instructions) and another of the hart's vCPUs can run,
//!   when it waits in WFI with nothing pending, or when it stops itself (HSM `hart_stop`).
//!   A vCPU can run when it is started and not waiting, or when it waits and an interrupt was
//!   posted to it or the global clock reached its timer deadline, or when a `hart_start`
//!   names it; the hart takes the first such vCPU after the current one (round robin). When
//!   none can run, the hart thread sleeps as a 1:1 vCPU thread does (`Smp::wait_pick`).
//! - **What it saves.** The outgoing vCPU's whole architectural state
//!   ([`crate::backend::HartState`]: registers, CSRs, counters and timers, the whole CTR buffer
//!   and its cycle counter), its `ctr-virt` state ([`ctr_virt::GuestCtr`]: lazy loading,
//!   the guest's depth) and its mailbox (posted interrupts and fence requests wait there
//!   while it is off the hart). The incoming vCPU's are loaded: `Vcpu::switch_state`
//!   replaces everything the outgoing vCPU left, CTR entries past the incoming guest's depth,
//!   the TLB and the LR reservation included.
//! - **Translated code.** The hart instance keeps its translated blocks across a switch, and
//!   after a switch at the end of a slice the blocks keep their code checks too (the next run
//!   is a `Vcpu::run_on`): a switch writes no guest RAM, and the loaded TLB maps no page of
//!   translated code writable (`Hart::switch_state`).
//! - **Time.** A vCPU off its hart does not run; the global clock goes on. When a
//!   preempted vCPU (one that could have run on) is loaded again its clock adopts the global
//!   time as idle time, the way a 1:1 vCPU adopts the time of a faster one, but its CTR cycle
//!   counter does not count the wait: on a hart of its own it would have been executing, so
//!   its records' cycle counts are exactly those of a run alone. A vCPU that waited in WFI
//!   counts the idle time as a 1:1 vCPU does.
//! - **Fences and IPIs.** A fence for a vCPU off its hart completes at once (its mailbox
//!   is not inside `run`); it flushes before its next instruction anyway: the request
//!   waits in its mailbox, which the first chunk of its next run takes in (TLB and code
//!   checks, as on a hart of its own). An IPI waits in its mailbox and is merged
//!   when the vCPU next runs, and wakes it if it waits in WFI.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::backend::HartState;
use vcpu_api::{HartMailbox, Vcpu};

use super::smp::Pick;
use super::GuestVm;
use crate::error::Error;

/// The default time slice of a vCPU on a shared hart, in instructions (`--slice-insns`):
/// 1 ms of the guest's virtual time at the nominal 100 MIPS. A switch costs 4-10 µs
/// (README, performance), about 1% of a slice run at 200 MIPS.
pub const DEFAULT_SLICE_INSNS: u64 = 100_000;

/// A vCPU off its hart.
#[derive(Debug)]
pub(crate) struct ParkedVcpu {
    /// The vCPU's hart id.
    pub(crate) id: u64,
    /// Its architectural state.
    pub(crate) state: HartState,
    /// Its CTR as `ctr-virt` manages it.
    pub(crate) ctr: ctr_virt::GuestCtr,
    /// Its virtual PMU (the counters themselves are in `state`).
    pub(crate) pmu: pmu_virt::GuestPmu,
    /// Its mailbox.
    pub(crate) mailbox: Arc<HartMailbox>,
    /// It left the hart while it could have run on (end of its slice, or never started):
    /// the wait is hidden from its CTR cycle counter when it is loaded again.
    pub(crate) preempted: bool,
}

impl ParkedVcpu {
    /// Its state for a snapshot or a pause: after the remote fence posted to its mailbox
    /// while it was parked, if any ([`HartState::fenced`]).
    pub(crate) fn saved_state(&self) -> HartState {
        match self.mailbox.flush_wanted() {
            Some(_) => self.state.clone().fenced(),
            None => self.state.clone(),
        }
    }
}

/// Why the current vCPU leaves its hart before the end of its slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leave {
    /// It waits in WFI (registered with `Smp::set_idle`).
    Idle,
    /// It stopped itself (HSM `hart_stop`), or has not been started.
    Stopped,
}

/// A hart instance's scheduler: the vCPUs it multiplexes besides the current one.
#[derive(Debug)]
pub(crate) struct Sched {
    /// The other vCPUs, next to run first.
    pub(crate) parked: VecDeque<ParkedVcpu>,
    /// The time slice in instructions.
    pub(crate) slice: u64,
    /// What is left of the current vCPU's slice.
    pub(crate) slice_left: u64,
    /// vCPU switches so far.
    pub(crate) switches: u64,
    /// Set by the exit handlers when the current vCPU leaves the hart.
    pub(crate) leave: Option<Leave>,
}

impl Sched {
    /// A scheduler with slices of `slice` instructions and no other vCPU yet.
    pub(crate) fn new(slice: u64) -> Sched {
        Sched {
            parked: VecDeque::new(),
            slice,
            slice_left: slice,
            switches: 0,
            leave: None,
        }
    }
}

impl GuestVm {
    /// Between two runs: give the hart to another vCPU when the current one has left it or
    /// used up its slice (see the module documentation). `false` when the hart has nothing
    /// to run because the VM ended or the user quit (the run loop then sees why).
    pub(crate) fn reschedule(&mut self) -> Result<bool, Error> {
        let (Some(sched), Some(smp)) = (self.sched.as_mut(), self.smp.clone()) else {
            return Ok(true);
        };
        let mut order: Vec<u64> = sched.parked.iter().map(|p| p.id).collect();
        match sched.leave.take() {
            None if sched.slice_left > 0 => Ok(true),
            None => {
                sched.slice_left = sched.slice;
                if let Some(pick) = smp.pick(&order) {
                    self.switch_to(pick, true)?;
                }
                Ok(true)
            }
            Some(leave) => {
                order.push(self.hart_id);
                let input = self.input.clone();
                let pause = self.pause.clone();
                let wake = self.console_wake();
                // A pause of the control socket: the run loop parks at its top, then comes
                // back here. Console input for the UART (with AIA) is moved into it from
                // here, since no vCPU runs to do it: its interrupt then wakes its target.
                let stop = || {
                    input.quit_requested()
                        || pause.as_ref().is_some_and(|p| p.ctl.requested())
                        || wake.ready()
                };
                let picked = loop {
                    let picked = smp.wait_pick(&order, &stop, &|| wake.may_come());
                    let to_feed = matches!(picked, Ok(None))
                        && !smp.ended()
                        && !input.quit_requested()
                        && !pause.as_ref().is_some_and(|p| p.ctl.requested())
                        && wake.ready();
                    if !to_feed {
                        break picked;
                    }
                    self.feed_uart();
                };
                match picked {
                    Ok(Some(pick)) => {
                        self.switch_to(pick, false)?;
                        if let Some(s) = self.sched.as_mut() {
                            s.slice_left = s.slice;
                        }
                        Ok(true)
                    }
                    Ok(None) => {
                        // Keep the reason: if the run goes on (a quit is a stop request
                        // that the loop handles), the vCPU still cannot run.
                        if let Some(s) = self.sched.as_mut() {
                            s.leave = Some(leave);
                        }
                        Ok(false)
                    }
                    Err(()) => Err(Error::WaitForever {
                        hart: self.hart_id,
                        pc: Vcpu::pc(&self.hart),
                    }),
                }
            }
        }
    }

    /// Load the vCPU `pick` names (starting it if it is starting); the current one is
    /// parked (`preempted`: it could have run on) unless it is the one picked.
    fn switch_to(&mut self, (id, start): Pick, preempted: bool) -> Result<(), Error> {
        if id != self.hart_id {
            let Some(sched) = self.sched.as_mut() else {
                return Ok(());
            };
            let Some(i) = sched.parked.iter().position(|p| p.id == id) else {
                return Ok(());
            };
            let Some(mut next) = sched.parked.remove(i) else {
                return Ok(());
            };
            if next.preempted {
                // The wait is idle time, uncounted by its CTR cycle counter (the counter
                // keeps its value across a restore; see the module documentation).
                if let Some(smp) = &self.smp {
                    let now = smp.clock.now();
                    if now > next.state.vclock {
                        next.state.skipped += now - next.state.vclock;
                        next.state.vclock = now;
                    }
                }
            }
            let mut state = self.hart.save_state();
            state.hart_id = self.hart_id;
            self.hart
                .switch_state(&next.state)
                .map_err(|source| super::snapshot::RestoreFailure::Switch { vcpu: id, source })?;
            let out = ParkedVcpu {
                id: self.hart_id,
                state,
                ctr: std::mem::replace(&mut self.ctr, next.ctr),
                pmu: std::mem::replace(&mut self.pmu, next.pmu),
                mailbox: self.hart.mailbox(),
                preempted,
            };
            self.hart.set_mailbox(next.mailbox);
            self.hart_id = id;
            sched.parked.push_back(out);
            sched.switches += 1;
        }
        if let Some((pc, opaque)) = start {
            self.hart.guest_start(pc, id, opaque);
        }
        Ok(())
    }

    /// Instructions executed by the vCPUs parked on this hart.
    pub(crate) fn parked_executed(&self) -> u64 {
        self.parked_executed_per_vcpu()
            .iter()
            .map(|&(_, n)| n)
            .sum()
    }

    /// Instructions executed by each vCPU parked on this hart, with its id.
    pub(crate) fn parked_executed_per_vcpu(&self) -> Vec<(u64, u64)> {
        self.sched.as_ref().map_or(Vec::new(), |s| {
            s.parked
                .iter()
                .map(|p| (p.id, p.state.vclock.saturating_sub(p.state.skipped)))
                .collect()
        })
    }

    /// vCPU switches on this hart so far.
    pub(crate) fn switches(&self) -> u64 {
        self.sched.as_ref().map_or(0, |s| s.switches)
    }
}
