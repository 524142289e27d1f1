//! The run loop of `vmm run` VMs: [`GuestVm::run`] starts a thread per other hart
//! instance, and each runs its vCPU (or its vCPUs in turn, `run/sched.rs`) chunk by chunk
//! until the guest ends the run, the budget or the time limit runs out, or an error occurs;
//! the exits between chunks go to `run/exits.rs`.

use std::time::Instant;

use vcpu_api::{Vcpu, VcpuExit};

use super::inject::Injection;
use super::pause::ParkEnd;
use super::sched::Leave;
use super::smp::{IdleEnd, Smp, StartWait};
use super::{ExitStats, GuestVm, RunExit};
use crate::error::Error;
use crate::sbi;

pub use super::error::VcpuThreadError;

/// Instructions per call to [`Vcpu::run`] when there is no budget to respect (short enough
/// for console input to arrive promptly).
const RUN_CHUNK: u64 = 1 << 18;
/// [`RUN_CHUNK`] with more than one vCPU on virtual time: a running hart moves the global
/// clock, and wakes idle harts whose timer deadline has passed, between runs. With host
/// time an idle hart sleeps until its own deadline ([`Smp::idle`]) and the runs are
/// [`RUN_CHUNK`] long: what other threads post (IPIs, fences, stop requests) a hart takes
/// at its chunk boundaries inside a run (every `vcpu::interp::CHUNK` instructions) either
/// way, and each run boundary costs the VMM's checks (pauses, injections, console input,
/// the end): a 2-vCPU Linux boot takes 2-4% less time with runs of [`RUN_CHUNK`].
const SMP_RUN_CHUNK: u64 = 1 << 14;

/// How far a run of [`SMP_RUN_CHUNK`] may go past it to finish a translated block (the
/// longest block: `vcpu`'s 64 instructions).
const SLICE_SLACK: u64 = 64;

impl GuestVm {
    /// Runs until the guest ends the run, the budget runs out or an error occurs. With more
    /// than one vCPU, every other hart runs on a thread of its own meanwhile.
    pub fn run(&mut self) -> Result<RunExit, Error> {
        let Some(smp) = self.smp.clone() else {
            let end = self.run_hart();
            self.pause_exited();
            return end;
        };
        let mut threads = Vec::new();
        for mut vm in std::mem::take(&mut self.secondaries) {
            let gate = smp.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("vcpu{}", vm.hart_id))
                .spawn(move || {
                    gate.arrive_at_gate();
                    vm.run_smp_hart();
                    vm.pause_exited();
                    vm
                });
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => smp.finish(Err(VcpuThreadError::Spawn(e).into())),
            }
        }
        // No vCPU runs before every thread is ready (module documentation of `run/smp.rs`).
        smp.open_gate(threads.len());
        self.run_smp_hart();
        self.pause_exited();
        let mut switches = vec![self.switches()];
        for t in threads {
            match t.join() {
                Ok(mut vm) => {
                    self.stats.merge(&vm.stats);
                    vm.stats = ExitStats::default();
                    switches.push(vm.switches());
                    // Kept for `executed` and snapshots.
                    self.secondaries.push(vm);
                }
                Err(_) => smp.finish(Err(VcpuThreadError::Panicked.into())),
            }
        }
        self.switch_counts = switches;
        smp.take_end()
    }

    /// One vCPU thread of a multiprocessor VM: waits for `hart_start` (all but hart 0), runs,
    /// and records how the VM ended.
    fn run_smp_hart(&mut self) {
        let Some(smp) = self.smp.clone() else {
            return;
        };
        if let Some(sched) = self.sched.as_mut() {
            // The hart's scheduler takes the first of its vCPUs that can run.
            sched.leave = Some(Leave::Stopped);
        } else if smp.hart_status(self.hart_id) != sbi::hsm::STATE_STARTED {
            if !self.wait_for_start(&smp) {
                return;
            }
        } else if smp.is_idle(self.hart_id) && !self.idle() {
            // Restored while waiting in WFI.
            smp.finish(Err(Error::WaitForever {
                hart: self.hart_id,
                pc: Vcpu::pc(&self.hart),
            }));
            return;
        }
        let result = self.run_hart();
        smp.finish(result);
    }

    /// A stopped hart waits until it is started (parking meanwhile when the VM is paused);
    /// `false` when the VM ends first.
    pub(super) fn wait_for_start(&mut self, smp: &Smp) -> bool {
        loop {
            match smp.wait_for_start(self.hart_id, &|| self.pause_requested()) {
                StartWait::Start((pc, opaque)) => {
                    self.hart.guest_start(pc, self.hart_id, opaque);
                    return true;
                }
                StartWait::Ended => return false,
                StartWait::Paused => {
                    // A debugger's step has nothing to run here: it parks again.
                    self.pause_point();
                }
            }
        }
    }

    /// The run loop of one hart.
    fn run_hart(&mut self) -> Result<RunExit, Error> {
        let run_chunk = if self.smp.is_some() && self.hart.host_clock().is_none() {
            SMP_RUN_CHUNK
        } else {
            RUN_CHUNK
        };
        let deadline = self.timeout.map(|t| (t, Instant::now() + t));
        self.run_deadline = deadline.map(|(_, at)| at);
        // The last run ran out of budget, and nothing has written guest RAM since (below).
        let mut quiet = false;
        loop {
            let park = self.pause_point();
            quiet &= park == ParkEnd::NotParked;
            if self.input.quit_requested() {
                return Ok(self.input.quit_exit());
            }
            if let Some((limit, at)) = deadline {
                if Instant::now() >= at {
                    return Ok(RunExit::TimedOut {
                        limit,
                        insns: self.run_insns(),
                        pc: Vcpu::pc(&self.hart),
                    });
                }
            }
            if let Some(smp) = &self.smp {
                // Ctrl-A x reaches hart 0's stop handle only; every hart checks for it here.
                if self.input.quit_requested() {
                    return Ok(self.input.quit_exit());
                }
                if smp.ended() {
                    // Whoever ended the VM recorded how.
                    return Err(Error::Stopped {
                        hart: self.hart_id,
                        pc: Vcpu::pc(&self.hart),
                    });
                }
            }
            // A vCPU switch keeps `quiet`: it writes no guest RAM (`Vcpu::switch_state`).
            let run = self.reschedule()?;
            if !run {
                continue;
            }
            let chunk = match self.max_insns {
                Some(max) => {
                    let executed = self.run_insns();
                    let left = max.saturating_sub(executed);
                    if left == 0 {
                        return Ok(RunExit::BudgetExhausted {
                            insns: executed,
                            pc: Vcpu::pc(&self.hart),
                        });
                    }
                    left.min(run_chunk)
                }
                None => run_chunk,
            };
            let chunk = match &self.sched {
                Some(s) => chunk.min(s.slice_left),
                None => chunk,
            };
            let chunk = self.debug_chunk(park, chunk);
            // With several vCPUs a run is a short time slice: it may finish the translated
            // block it ends in (`Vcpu::set_budget_slack`) rather than interpret the block's
            // tail, where `--max-insns` is not within reach.
            let slice = self.smp.is_some()
                && chunk == run_chunk
                && self
                    .max_insns
                    .is_none_or(|max| max.saturating_sub(self.run_insns()) >= chunk + SLICE_SLACK);
            Vcpu::set_budget_slack(&mut self.hart, if slice { SLICE_SLACK } else { 0 });
            self.apply_injections();
            self.feed_uart();
            let before = self.hart.executed();
            // After a run that only ran out of budget, with no park (a debugger's or the
            // control socket's, which may write guest RAM) in between, nothing but guests
            // have written guest RAM since (a vCPU switch writes none): the hart keeps its
            // code checks (`Vcpu::run_on`; with several vCPUs, runs are short).
            let exit = if quiet {
                Vcpu::run_on(&mut self.hart, chunk)
            } else {
                Vcpu::run(&mut self.hart, chunk)
            };
            quiet = exit == VcpuExit::BudgetExhausted;
            if let Some(smp) = &self.smp {
                smp.note_progress(self.hart_id);
                smp.wake_due();
            }
            if let Some(s) = self.sched.as_mut() {
                let ran = self.hart.executed().saturating_sub(before);
                s.slice_left = s.slice_left.saturating_sub(ran);
            }
            if let Some(end) = self.handle_exit(exit)? {
                return Ok(end);
            }
        }
    }

    /// Instructions the vCPU now on this hart instance has executed in this run (since the
    /// restore, for `vmm restore`): what `--max-insns` limits.
    fn run_insns(&self) -> u64 {
        let base = self.insns_base.get(self.hart_id as usize).copied();
        self.hart.executed().saturating_sub(base.unwrap_or(0))
    }

    /// Applies what the control socket queued for the vCPU on this hart (`run/inject.rs`)
    /// and says where.
    fn apply_injections(&mut self) {
        let Some(injections) = &self.injections else {
            return;
        };
        for (injection, done) in injections.take(self.hart_id) {
            let pc = Vcpu::pc(&self.hart);
            match injection {
                Injection::ClearIrq(irq) => {
                    let hvip = Vcpu::virtual_interrupts(&self.hart);
                    Vcpu::set_virtual_interrupts(&mut self.hart, hvip & !irq.hvip_bit());
                }
                Injection::Exception { cause, tval } => self.vcpu_ctx().inject(cause, tval),
            }
            let _ = done.try_send(pc);
        }
    }

    /// Moves pending console input into the UART's receive FIFO, as much as fits.
    pub(super) fn feed_uart(&mut self) {
        if self.input.is_empty() {
            return;
        }
        let mut buf = [0u8; 64];
        let mut uart = self.uart.lock().unwrap_or_else(|e| e.into_inner());
        let room = uart.input_room().min(buf.len());
        let n = self.input.pop_into(&mut buf[..room]);
        uart.enqueue_input(&buf[..n]);
        if let Some(aia) = &self.aia {
            aia.uart_level(uart.interrupt_level());
        }
    }

    /// After a WFI: waits until the hart can wake (in virtual time, or sleeping on the host
    /// with `--clock host`); `false` when nothing can ever wake it (with several vCPUs: when
    /// every started hart idles without a timer). Console input that can still come is
    /// something that can wake it ([`ConsoleWake`]).
    pub(super) fn idle(&mut self) -> bool {
        match self.smp.clone() {
            None if self.hart.host_clock().is_some() => self.sleep_until_wakeup(),
            // Without a timer, only console input can end the wait: it is waited for on
            // the host (virtual time has nothing to skip to).
            None => self.hart.skip_to_timer() || self.sleep_until_wakeup(),
            Some(smp) if self.sched.is_some() => {
                // Off the hart until something wakes it (`reschedule`), unless something
                // already has.
                if self.hart.wakeup_pending() {
                    return true;
                }
                let deadline = self.hart.wake_deadline().unwrap_or(u64::MAX);
                if deadline <= smp.now() {
                    return true;
                }
                smp.set_idle(self.hart_id, deadline);
                if let Some(s) = self.sched.as_mut() {
                    s.leave = Some(Leave::Idle);
                }
                true
            }
            Some(smp) => loop {
                let input = &self.input;
                // With AIA the UART interrupts: console input wakes a vCPU, which moves it
                // into the UART (`feed_uart`), whose interrupt goes to its target vCPU.
                let wake = self.console_wake();
                let end = smp.idle(
                    self.hart_id,
                    &self.hart,
                    &|| input.quit_requested() || wake.ready(),
                    &|| wake.may_come(),
                    &|| self.pause_requested(),
                );
                match end {
                    Ok(IdleEnd::Woke) => return true,
                    // Parks (still waiting), then waits on.
                    Ok(IdleEnd::Paused) => {
                        self.pause_point();
                    }
                    Err(()) => return false,
                }
            },
        }
    }

    /// What console input can do for this VM's idle vCPUs ([`ConsoleWake`]).
    pub(super) fn console_wake(&self) -> ConsoleWake {
        ConsoleWake {
            input: self.input.clone(),
            uart: self.aia.as_ref().map(|_| self.uart.clone()),
        }
    }

    /// The only vCPU after a WFI, with host time (or on virtual time with no timer to skip
    /// to): sleeps on the host until its timer deadline or a wake-up: an interrupt posted
    /// to it (the control socket's `inject`), an exception queued for it, console input for
    /// its UART's interrupt, the user's quit or the run's `--timeout` (then the run loop
    /// ends the run), a pause (parks here, still waiting). `false` when nothing can ever
    /// wake it: no interrupt pending, no timer armed, and no console input that could
    /// interrupt it still to come ([`ConsoleWake::may_come`]).
    fn sleep_until_wakeup(&mut self) -> bool {
        let end = self.run_deadline;
        let wake = self.console_wake();
        loop {
            let now = self.hart.mtime_now();
            if self.hart.wakeup_pending() || wake.ready() {
                return true;
            }
            let deadline = self.hart.timer_deadline_mtime();
            if deadline.is_none() && !wake.may_come() {
                return false;
            }
            if deadline.is_some_and(|d| d <= now)
                || self.input.quit_requested()
                || self.injections.as_ref().is_some_and(|i| i.any_queued())
                || end.is_some_and(|e| Instant::now() >= e)
            {
                return true;
            }
            if self.pause_requested() {
                // Parked still waiting (a snapshot records the wait), then waits on.
                self.waiting_in_wfi = true;
                self.pause_point();
                self.waiting_in_wfi = false;
                continue;
            }
            let left = deadline.map_or(super::smp::HOST_IDLE_POLL, |d| {
                vcpu_api::HostClock::duration_of(d - now)
            });
            std::thread::sleep(left.min(super::smp::HOST_IDLE_POLL));
        }
    }
}

/// With AIA, console input reaches the guest as the UART's received-data interrupt
/// (APLIC source 10, an MSI to its target vCPU): input waiting is a reason for an idle
/// vCPU, or a hart instance whose vCPUs all idle (`--pcpus`), to go and move it into the
/// UART, and input that may still come is something a guest waiting for nothing else can
/// wait for (as `vmm machine` does). Its checks may run under the SMP state's lock: they
/// only try the UART's lock (whose holder is busy, not idle), never wait for it.
#[derive(Clone)]
pub(super) struct ConsoleWake {
    input: super::console::InputQueue,
    /// The UART, with AIA (without, its input interrupts nobody).
    uart: Option<std::sync::Arc<std::sync::Mutex<crate::devices::uart::Uart>>>,
}

impl ConsoleWake {
    /// Input is waiting and the UART has room for some of it.
    pub(super) fn ready(&self) -> bool {
        let Some(uart) = &self.uart else {
            return false;
        };
        !self.input.is_empty() && uart.try_lock().is_ok_and(|u| u.input_room() > 0)
    }

    /// Input may still come ([`super::console::InputQueue::may_have_more`]) and would
    /// interrupt the guest (the UART's received-data interrupt enabled). A UART busy in
    /// another thread counts as may: that thread's vCPU is not idle.
    pub(super) fn may_come(&self) -> bool {
        let Some(uart) = &self.uart else {
            return false;
        };
        self.input.may_have_more()
            && match uart.try_lock() {
                Ok(u) => u.receive_interrupt_enabled(),
                Err(std::sync::TryLockError::Poisoned(e)) => {
                    e.into_inner().receive_interrupt_enabled()
                }
                Err(std::sync::TryLockError::WouldBlock) => true,
            }
    }
}
