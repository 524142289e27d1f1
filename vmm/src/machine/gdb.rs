//! `vmm machine --gdb`: the bare machine under a gdb remote stub (`docs/gdb.md`).
//!
//! Without `--gdb-wait` the machine runs as usual and checks the stub's socket for a
//! debugger between chunks of [`super::RUN_CHUNK`] instructions (one non-blocking `accept`
//! per chunk, nothing on the hart's paths); with it, the guest waits before its first
//! instruction until a debugger attaches. Attaching stops the guest. A detach (or a
//! debugger that goes away, or sends something the protocol does not allow) lets it run on
//! as without a debugger, and another debugger may attach later.
//!
//! Breakpoints and watchpoints are never written into guest memory: they are the hart's
//! debugger triggers (`crate::gdb::points`), loaded into it whenever gdb changes them. A
//! `continue` runs chunks of [`POLL_INSNS`] instructions and checks the connection for
//! Ctrl-C between them; while points are set the hart interprets and checks every fetch,
//! load and store, and stops before the instruction a point matches (the guest executes
//! exactly what it would with `--jit off` or without a debugger: same instruction counts,
//! timer and trap points). A single step runs one instruction (budget 1). After a resume
//! or for a step the first instruction runs even where a point matches (gdb steps off a
//! breakpoint's address itself).
//!
//! Stopping changes nothing the guest can see: its time, counters and CTR cycle counts are
//! virtual (they advance with its instructions only).

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use gdbstub::common::Signal;
use gdbstub::outputln;
use gdbstub::stub::run_blocking::{BlockingEventLoop, Event, WaitForStopReasonError};
use gdbstub::stub::{DisconnectReason, GdbStub, SingleThreadStopReason};
use gdbstub::target::ext::base::single_register_access::{
    SingleRegisterAccess, SingleRegisterAccessOps,
};
use gdbstub::target::ext::base::singlethread::{
    SingleThreadBase, SingleThreadResume, SingleThreadResumeOps, SingleThreadSingleStep,
    SingleThreadSingleStepOps,
};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::breakpoints::BreakpointsOps;
use gdbstub::target::ext::monitor_cmd::{ConsoleOutput, MonitorCmd, MonitorCmdOps};
use gdbstub::target::ext::target_description_xml_override::{
    TargetDescriptionXmlOverride, TargetDescriptionXmlOverrideOps,
};
use gdbstub::target::{Target, TargetError, TargetResult};
use vcpu_api::{DebugAccess, Vcpu};

use super::{Machine, MachineExit};
use crate::backend::Hart;
use crate::error::Error;
use crate::gdb::listen::{incoming, Connection, GdbListener, GdbOptions};
use crate::gdb::points::{self, DebugPoints, HasDebugPoints, Hit};
use crate::gdb::{self, CoreRegs, GdbError, Reg, Rv64Vmm, MAX_MEMORY_XFER, PACKET_SIZE};

/// Instructions between two looks at the connection during a `continue` without
/// breakpoints (about 0.1 ms of translated code).
const POLL_INSNS: u64 = 1 << 16;

/// errno EFAULT: what gdb is told for memory the stub cannot or will not reach.
const EFAULT: u8 = 14;

/// Runs `machine` until the guest ends the run, with a debugger stub at `options`.
pub(super) fn run(machine: &mut Machine, options: &GdbOptions) -> Result<MachineExit, Error> {
    let listener = GdbListener::bind(&options.endpoint)?;
    let deadline = machine.deadline();
    if options.wait {
        eprintln!("vmm: waiting for a debugger before the first instruction (--gdb-wait)");
        let conn = loop {
            if let Some(c) = listener.accept(true)? {
                break c;
            }
        };
        if let Some(end) = session(machine, conn, deadline)? {
            return Ok(end);
        }
    }
    loop {
        if let Some(conn) = listener.accept(false)? {
            if let Some(end) = session(machine, conn, deadline)? {
                return Ok(end);
            }
        }
        if let Some(end) = machine.run_chunk(super::RUN_CHUNK, deadline)? {
            return Ok(end);
        }
    }
}

/// One debugger session, the guest stopped at its start. Returns the run's end if it ended
/// during the session; `None` when the debugger detached or went away.
fn session(
    machine: &mut Machine,
    conn: Connection,
    deadline: Option<(Duration, Instant)>,
) -> Result<Option<MachineExit>, Error> {
    eprintln!("vmm: debugger attached at pc={:#x}", machine.hart.pc());
    machine.debug_hit = None;
    let mut target = MachineTarget {
        machine,
        deadline,
        points: DebugPoints::default(),
        resume: Resume::Stopped,
        phys: false,
        end: None,
        xml: gdb::target_xml(),
    };
    let stub = match GdbStub::<MachineTarget<'_>, Connection>::builder(conn)
        .packet_buffer_size(PACKET_SIZE)
        .build()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("vmm: gdb stub: {e}");
            return Ok(None);
        }
    };
    let result = stub.run_blocking::<EventLoop<'_>>(&mut target);
    let end = target.end.take();
    // The debugger's points go with it.
    Vcpu::clear_debug_points(&mut target.machine.hart);
    target.machine.debug_hit = None;
    match result {
        Ok(DisconnectReason::Kill) => return Err(GdbError::Killed.into()),
        Ok(DisconnectReason::Disconnect) => eprintln!("vmm: debugger detached"),
        Ok(DisconnectReason::TargetExited(_) | DisconnectReason::TargetTerminated(_)) => {}
        Err(e) => eprintln!("vmm: debugger session ended: {e}"),
    }
    end.transpose()
}

/// What the guest does between two stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    Stopped,
    Continue,
    Step,
}

/// The machine as the stub sees it.
struct MachineTarget<'a> {
    machine: &'a mut Machine,
    deadline: Option<(Duration, Instant)>,
    /// Breakpoints and watchpoints (`gdb/points.rs`), as the hart holds them.
    points: DebugPoints,
    resume: Resume,
    /// `monitor phys on`: memory is physical whatever the hart's translation.
    phys: bool,
    /// How the run ended, once it has.
    end: Option<Result<MachineExit, Error>>,
    /// The target description.
    xml: String,
}

impl MachineTarget<'_> {
    /// Runs at most `n` instructions; the stop reason if the run ended (the end is kept
    /// for the caller of the session).
    fn exec(&mut self, n: u64) -> Option<SingleThreadStopReason<u64>> {
        let end = match self.machine.run_chunk(n, self.deadline) {
            Ok(None) => return None,
            Ok(Some(end)) => Ok(end),
            Err(e) => Err(e),
        };
        let reason = match &end {
            Ok(MachineExit::Finished { code }) => {
                SingleThreadStopReason::Exited(u8::try_from(*code).unwrap_or(u8::MAX))
            }
            Ok(_) => SingleThreadStopReason::Terminated(Signal::SIGXCPU),
            Err(_) => SingleThreadStopReason::Terminated(Signal::SIGABRT),
        };
        self.end = Some(end);
        Some(reason)
    }

    /// Runs the guest until the next stop or for a while; `None`: still running.
    fn advance(&mut self) -> Option<SingleThreadStopReason<u64>> {
        match self.resume {
            Resume::Stopped => Some(SingleThreadStopReason::Signal(Signal::SIGTRAP)),
            Resume::Step => {
                self.resume = Resume::Stopped;
                Some(self.step_one().unwrap_or(SingleThreadStopReason::DoneStep))
            }
            Resume::Continue => {
                if let Some(stop) = self.exec(POLL_INSNS) {
                    return Some(stop);
                }
                let hit = self.machine.debug_hit.take()?;
                self.resume = Resume::Stopped;
                Some(match self.points.classify(&hit) {
                    Hit::Sw => SingleThreadStopReason::SwBreak(()),
                    Hit::Hw => SingleThreadStopReason::HwBreak(()),
                    Hit::Watch { kind, addr } => SingleThreadStopReason::Watch {
                        tid: (),
                        kind,
                        addr,
                    },
                })
            }
        }
    }

    /// Executes exactly one instruction, whatever point matches it (a step, `monitor
    /// stepi`); the stop reason if the run ended.
    fn step_one(&mut self) -> Option<SingleThreadStopReason<u64>> {
        Vcpu::skip_debug_points_once(&mut self.machine.hart);
        let end = self.exec(1);
        // An interrupt taken first may bring the hart to a point (the step ends there).
        self.machine.debug_hit = None;
        end
    }

    fn hart(&self) -> &Hart {
        &self.machine.hart
    }

    /// The guest-physical pieces of `len` bytes at `start` as the hart sees them now.
    fn pieces(&self, start: u64, len: usize, kind: DebugAccess) -> Vec<(u64, usize)> {
        points::translate_range(self.hart(), start, len, kind, self.phys)
    }
}

impl Target for MachineTarget<'_> {
    type Arch = Rv64Vmm;
    type Error = GdbError;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::SingleThread(self)
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

impl SingleThreadBase for MachineTarget<'_> {
    fn read_registers(&mut self, regs: &mut CoreRegs) -> TargetResult<(), Self> {
        *regs = gdb::core_regs(self.hart());
        Ok(())
    }

    fn write_registers(&mut self, regs: &CoreRegs) -> TargetResult<(), Self> {
        gdb::set_core_regs(&mut self.machine.hart, regs);
        Ok(())
    }

    fn support_single_register_access(&mut self) -> Option<SingleRegisterAccessOps<'_, (), Self>> {
        Some(self)
    }

    fn read_addrs(&mut self, start: u64, data: &mut [u8]) -> TargetResult<usize, Self> {
        if data.len() > MAX_MEMORY_XFER {
            return Err(TargetError::Errno(EFAULT));
        }
        let pieces = self.pieces(start, data.len(), DebugAccess::Load);
        match points::read_pieces(&self.machine.mem, &pieces, data) {
            0 if !data.is_empty() => Err(TargetError::Errno(EFAULT)),
            n => Ok(n),
        }
    }

    fn write_addrs(&mut self, start: u64, data: &[u8]) -> TargetResult<(), Self> {
        // What one packet carries (binary `X` data may fill it).
        if data.len() > PACKET_SIZE {
            return Err(TargetError::Errno(EFAULT));
        }
        // All or nothing: the whole range must translate and be RAM. Translated blocks and
        // the decode cache check guest code against RAM, so a write to code needs no
        // invalidation.
        let pieces = self.pieces(start, data.len(), DebugAccess::Store);
        if points::write_pieces(&self.machine.mem, &pieces, data) {
            Ok(())
        } else {
            Err(TargetError::Errno(EFAULT))
        }
    }

    fn support_resume(&mut self) -> Option<SingleThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl SingleRegisterAccess<()> for MachineTarget<'_> {
    fn read_register(&mut self, _tid: (), reg: Reg, buf: &mut [u8]) -> TargetResult<usize, Self> {
        match gdb::read_reg(self.hart(), reg) {
            Some(v) => {
                let bytes = v.to_le_bytes();
                let dst = buf.get_mut(..8).ok_or(TargetError::NonFatal)?;
                dst.copy_from_slice(&bytes);
                Ok(8)
            }
            // Unavailable: gdb shows it so.
            None => Ok(0),
        }
    }

    fn write_register(&mut self, _tid: (), reg: Reg, val: &[u8]) -> TargetResult<(), Self> {
        gdb::write_reg(&mut self.machine.hart, reg, val).map_err(|_| TargetError::NonFatal)
    }
}

impl SingleThreadResume for MachineTarget<'_> {
    fn resume(&mut self, _signal: Option<Signal>) -> Result<(), Self::Error> {
        // A bare machine has no signals to deliver; gdb's signal is dropped.
        self.resume = Resume::Continue;
        // The first instruction runs even at a breakpoint (gdb steps off a breakpoint's
        // address itself; this keeps a resume from stopping where it starts).
        Vcpu::skip_debug_points_once(&mut self.machine.hart);
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<SingleThreadSingleStepOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadSingleStep for MachineTarget<'_> {
    fn step(&mut self, _signal: Option<Signal>) -> Result<(), Self::Error> {
        self.resume = Resume::Step;
        Ok(())
    }
}

impl HasDebugPoints for MachineTarget<'_> {
    fn with_points<R>(&mut self, f: impl FnOnce(&mut DebugPoints) -> R) -> R {
        let r = f(&mut self.points);
        self.points.load_into(&mut self.machine.hart);
        r
    }
}

crate::debug_point_ops!(MachineTarget<'_>);

impl TargetDescriptionXmlOverride for MachineTarget<'_> {
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
        Ok(gdb::xfer(&self.xml, offset, length, buf))
    }
}

/// `monitor help` lists these.
const MONITOR_HELP: &str = "\
monitor help          this list
monitor ctr           the hart's CTR records, oldest first: SRC -> DST TYPE cycles
monitor phys on|off   addresses are physical (default off: the hart's current
                      translation, satp or vsatp and hgatp)
monitor insns         instructions executed so far
monitor stepi [N]     execute N instructions (default 1) exactly as the hart does, through
                      traps, sret and mret (gdb's own stepi on RISC-V puts a breakpoint
                      after the instruction and cannot follow them)";

impl MonitorCmd for MachineTarget<'_> {
    fn handle_monitor_cmd(
        &mut self,
        cmd: &[u8],
        mut out: ConsoleOutput<'_>,
    ) -> Result<(), Self::Error> {
        let cmd = String::from_utf8_lossy(cmd);
        let words: Vec<&str> = cmd.split_whitespace().collect();
        match words.as_slice() {
            [] | ["help"] => outputln!(out, "{MONITOR_HELP}"),
            ["ctr"] => {
                for line in gdb::ctr_listing(self.hart(), self.machine.symbols.as_deref()).lines() {
                    outputln!(out, "{line}");
                }
            }
            ["phys", "on"] => {
                self.phys = true;
                outputln!(out, "memory access is physical");
            }
            ["phys", "off"] => {
                self.phys = false;
                outputln!(out, "addresses follow the hart's translation");
            }
            ["phys"] => outputln!(out, "phys is {}", if self.phys { "on" } else { "off" }),
            ["insns"] => outputln!(out, "{}", self.machine.executed),
            ["stepi"] | ["stepi", _] => match gdb::monitor_steps(words.get(1).copied()) {
                Err(e) => outputln!(out, "{e}"),
                Ok(n) => {
                    let mut ended = false;
                    for _ in 0..n {
                        if self.step_one().is_some() {
                            ended = true;
                            break;
                        }
                    }
                    if ended {
                        outputln!(out, "the run ended; continue to see how");
                    } else {
                        outputln!(out, "{}", gdb::position(self.hart()));
                        outputln!(out, "{}", gdb::MONITOR_STEPI_NOTE);
                    }
                }
            },
            _ => outputln!(
                out,
                "unknown monitor command {cmd:?}; monitor help lists them"
            ),
        }
        Ok(())
    }
}

/// The stub's event loop: runs the guest, watching the connection for Ctrl-C and packets.
struct EventLoop<'a>(PhantomData<&'a ()>);

impl<'a> BlockingEventLoop for EventLoop<'a> {
    type Target = MachineTarget<'a>;
    type Connection = Connection;
    type StopReason = SingleThreadStopReason<u64>;

    fn wait_for_stop_reason(
        target: &mut MachineTarget<'a>,
        conn: &mut Connection,
    ) -> Result<Event<Self::StopReason>, WaitForStopReasonError<GdbError, std::io::Error>> {
        loop {
            if let Some(byte) = incoming(conn).map_err(WaitForStopReasonError::Connection)? {
                return Ok(Event::IncomingData(byte));
            }
            if let Some(stop) = target.advance() {
                return Ok(Event::TargetStopped(stop));
            }
        }
    }

    fn on_interrupt(target: &mut MachineTarget<'a>) -> Result<Option<Self::StopReason>, GdbError> {
        target.resume = Resume::Stopped;
        Ok(Some(SingleThreadStopReason::Signal(Signal::SIGINT)))
    }
}
