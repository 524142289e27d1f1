//! The bare-machine platform: one hart, RAM and a few devices at the addresses QEMU's `virt`
//! board uses, so that a program built for `qemu-system-riscv64 -M virt -bios none -kernel`
//! runs unchanged.
//!
//! | address       | size      | device                                          |
//! |---------------|-----------|-------------------------------------------------|
//! | `0x0010_0000` | `0x1000`  | SiFive test finisher ([`crate::devices::finisher`])   |
//! | `0x0200_0000` | `0x10000` | CLINT ([`crate::devices::clint`])                     |
//! | `0x0c00_0000` | `0x600000`| PLIC ([`crate::devices::plic`])                       |
//! | `0x1000_0000` | `0x100`   | ns16550a UART ([`crate::devices::uart`])              |
//! | `0x2400_0000` | `0x1000`  | IMSIC machine-level file (`--aia imsic`, [`crate::devices::imsic`]) |
//! | `0x2800_0000` | `0x8000`  | IMSIC supervisor-level file and guest files 1-7 (`--aia imsic`) |
//! | `0x8000_0000` | `--memory`| RAM                                             |
//! | `tohost`/`fromhost` | 8 + 8 | HTIF ([`crate::devices::htif`]), if the ELF defines `tohost` |
//!
//! Everything else raises an access fault in the hart. The CLINT drives the timer and
//! software interrupts; the PLIC the external ones: the UART's interrupt is its source 10,
//! its context 0 drives `mip.MEIP` and context 1 `mip.SEIP`. The levels are brought up to
//! date after every device access and when console input arrives
//! ([`Machine::enqueue_input`]; [`MachineConfig::input`], standard input for `vmm machine`,
//! is moved into the UART between chunks, and a WFI that only console input can end waits
//! for it while more may come). With `--aia imsic` ([`Aia::Imsic`]) the hart also has an
//! IMSIC (255 identities, GEILEN = 7) whose pages are mapped where QEMU's `virt` board with
//! `aia=aplic-imsic,aia-guests=7` puts them, so a program can send itself MSIs; there is no
//! APLIC. The hart starts in M-mode at the ELF entry point with `a0` = hart id (0) and
//! `a1` = the address of a device tree describing all of this ([`fdt`]), at the end of
//! RAM as QEMU puts it. Time is virtual or the host's
//! ([`MachineConfig::clock`]; see [`crate::devices::clint`]).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::backend::{Hart, HartConfig};
use vcpu_api::{MmioAccess, VcpuExit};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

pub use crate::layout::*;
pub use input::MachineInput;

use crate::devices::bus::{mask_read, MmioBus};
use crate::devices::clint::Clint;
use crate::devices::finisher::{Finisher, FinisherCommand};
use crate::devices::htif::{Htif, HtifOutcome};
use crate::devices::plic::{Plic, UART_SOURCE};
use crate::devices::uart::Uart;
use crate::devices::Console;
use crate::error::Error;
use crate::loader::ElfImage;

/// How to run a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineConfig {
    /// RAM size in MiB (1..=[`MAX_MEMORY_MIB`]).
    pub memory_mib: u64,
    /// Stop after this many instructions; `None` runs until the guest ends the run.
    pub max_insns: Option<u64>,
    /// Stop after this much wall-clock time (`--timeout`); `None`: no limit.
    pub timeout: Option<Duration>,
    /// Log every instruction at trace level.
    pub trace: bool,
    /// `--trace-insns`/`--trace-pcs`: which instructions `trace` prints.
    pub trace_range: vcpu_api::TraceRange,
    /// Block translation in the hart (`--jit`).
    pub jit: bool,
    /// `--perf-map`: name translated blocks in `/tmp/perf-PID.map` for a host `perf`.
    pub perf_map: bool,
    /// `--symbols`: the program's symbols for gdb's `monitor ctr`; `None`: with a debugger
    /// stub, the program's own symbol table, if it has one.
    pub symbols: Option<std::sync::Arc<crate::symbols::Symbols>>,
    /// Console input for the UART (`vmm machine`: standard input); `None`: none.
    pub input: Option<MachineInput>,
    /// `--aia`: the interrupt controller of the hart.
    pub aia: Aia,
    /// `--clock`: where `mtime` comes from. With [`vcpu_api::ClockMode::Virtual`] (the
    /// library's default, what the tests use) time follows the instructions and a WFI
    /// skips to the next timer at once; with [`vcpu_api::ClockMode::Host`] (the command
    /// line's default) it follows the host's monotonic clock and a WFI sleeps on the host
    /// until the timer, console input, a stop or the time limit.
    pub clock: vcpu_api::ClockMode,
}

/// `vmm machine --aia`: which AIA interrupt controller the board has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Aia {
    /// None (the AIA CSRs without an IMSIC).
    #[default]
    None,
    /// An IMSIC in the hart, its pages mapped ([`crate::devices::imsic`]).
    Imsic,
}

/// Writes the device tree ([`fdt`]) where QEMU's `virt` board puts it and returns its
/// address; 0 (no device tree) when that spot is not free: RAM too small, or the program
/// loaded there.
fn place_fdt(
    mem: &GuestMemoryMmap,
    ram_size: u64,
    image: &ElfImage,
    aia: Aia,
) -> Result<u64, Error> {
    use crate::run::error::BootDataError;
    let blob = fdt::build(ram_size, aia).map_err(BootDataError::Build)?;
    let size = blob.len() as u64;
    let Some(at) = fdt::fdt_address(ram_size, size) else {
        return Ok(0);
    };
    let overlaps = image
        .segments
        .iter()
        .any(|s| s.paddr < at + size && at < s.paddr.saturating_add(s.memsz));
    if overlaps {
        log::warn!("the program is loaded where the device tree goes ({at:#x}): a1 = 0");
        return Ok(0);
    }
    mem.write_slice(&blob, GuestAddress(at))
        .map_err(BootDataError::WriteFdt)?;
    Ok(at)
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine")
            .field("pc", &self.hart.pc())
            .field("executed", &self.executed)
            .finish_non_exhaustive()
    }
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            memory_mib: 128,
            max_insns: None,
            timeout: None,
            trace: false,
            trace_range: vcpu_api::TraceRange::default(),
            jit: true,
            perf_map: false,
            symbols: None,
            input: None,
            aia: Aia::None,
            clock: vcpu_api::ClockMode::Virtual,
        }
    }
}

/// How a run ended, when the guest did not make an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MachineExit {
    /// The guest reported its exit status (finisher or HTIF); 0 is a pass.
    Finished {
        /// The exit status.
        code: u32,
    },
    /// The instruction budget ([`MachineConfig::max_insns`]) ran out.
    BudgetExhausted {
        /// Instructions executed.
        insns: u64,
        /// Where the hart was.
        pc: u64,
    },
    /// The wall-clock limit ([`MachineConfig::timeout`]) was reached.
    TimedOut {
        /// The limit.
        limit: Duration,
        /// Instructions executed.
        insns: u64,
        /// Where the hart was.
        pc: u64,
    },
}

/// Statistics of one run.
#[derive(Debug, Clone)]
pub struct RunStats {
    /// Instructions retired.
    pub instret: u64,
    /// Host time spent running the hart (loading excluded).
    pub wall: Duration,
    /// Blocks the hart translated to host code (`--jit`).
    pub translated_blocks: u64,
}

impl RunStats {
    /// Millions of guest instructions per host second.
    pub fn mips(&self) -> f64 {
        let secs = self.wall.as_secs_f64();
        if secs > 0.0 {
            self.instret as f64 / secs / 1e6
        } else {
            0.0
        }
    }
}

/// Loads the ELF executable at `path` and runs it to completion on a fresh machine. Console
/// output (UART and HTIF) goes to `console`.
pub fn run_elf(
    path: &Path,
    config: &MachineConfig,
    console: Console,
) -> Result<(MachineExit, RunStats), Error> {
    run_elf_debug(path, config, console, None)
}

/// [`run_elf`] with a gdb remote stub when `gdb` is given (`--gdb`, [`gdb`]).
pub fn run_elf_debug(
    path: &Path,
    config: &MachineConfig,
    console: Console,
    gdb: Option<&crate::gdb::listen::GdbOptions>,
) -> Result<(MachineExit, RunStats), Error> {
    // A regular file no larger than the machine's RAM, checked before it is read.
    let max = config.memory_mib.saturating_mul(1 << 20);
    let data = crate::run::builder::read_input(path, "program", max)
        .map_err(|e| e.into_error(|path, source| Error::ReadProgram { path, source }))?;
    let mut machine = Machine::new(&data, config, console).map_err(|e| e.with_path(path))?;
    if gdb.is_some() && machine.symbols.is_none() {
        // The program's own symbols, when it has any (no error when it has none).
        machine.symbols = crate::symbols::Symbols::from_elf(&data, path)
            .ok()
            .map(std::sync::Arc::new);
    }
    let start = Instant::now();
    let exit = match gdb {
        Some(options) => gdb::run(&mut machine, options)?,
        None => machine.run()?,
    };
    let stats = RunStats {
        instret: machine.hart().instret(),
        wall: start.elapsed(),
        translated_blocks: machine.hart().translated_blocks(),
    };
    Ok((exit, stats))
}

/// Instructions per call to [`Hart::run`] when there is no budget to respect.
const RUN_CHUNK: u64 = 1 << 20;

/// The assembled board.
pub struct Machine {
    hart: Hart,
    mem: GuestMemoryMmap,
    uart: Uart,
    finisher: Finisher,
    clint: Clint,
    plic: Plic,
    htif: Option<Htif>,
    /// Where each device's window is.
    bus: MmioBus<Device>,
    max_insns: Option<u64>,
    timeout: Option<Duration>,
    /// Instructions executed so far.
    executed: u64,
    /// The program's symbols, for gdb's `monitor ctr`.
    symbols: Option<std::sync::Arc<crate::symbols::Symbols>>,
    /// Console input, moved into the UART between chunks.
    input: Option<MachineInput>,
    /// The debugger point the hart last stopped at (`--gdb`: `gdb.rs` takes it).
    debug_hit: Option<vcpu_api::DebugHit>,
}

impl Machine {
    /// Builds a machine for `config` and loads the ELF executable `elf` into it. Errors in
    /// the file are reported as [`Error::Load`] with an empty path.
    pub fn new(elf: &[u8], config: &MachineConfig, console: Console) -> Result<Machine, Error> {
        // The options and the ELF are checked before RAM is allocated.
        let ram_size = ram_bytes(config.memory_mib)?;
        let image =
            ElfImage::parse(elf, RAM_BASE..RAM_BASE + ram_size).map_err(Error::from_load)?;
        let mem = crate::ram::allocate(ram_size).map_err(|source| Error::GuestMemory {
            mib: config.memory_mib,
            source,
        })?;
        image.load(elf, &mem).map_err(Error::from_load)?;

        let mut bus = MmioBus::new();
        let htif = image.tohost.map(|tohost| {
            let mut htif = Htif::new(tohost, image.fromhost);
            // The image may hold initial values; RAM outside the image reads as 0.
            let word = |addr: Option<u64>| {
                addr.and_then(|a| mem.read_obj::<u64>(GuestAddress(a)).ok())
                    .unwrap_or(0)
            };
            htif.set_initial(word(image.tohost), word(image.fromhost));
            log::debug!(
                "htif: tohost at {tohost:#x}, fromhost at {:#x?}",
                image.fromhost
            );
            htif
        });
        // HTIF first: its words take precedence.
        for r in htif.iter().flat_map(Htif::ranges) {
            bus.insert(r.base, r.size, Device::Htif)?;
        }
        bus.insert(FINISHER_BASE, FINISHER_SIZE, Device::Finisher)?;
        bus.insert(CLINT_BASE, CLINT_SIZE, Device::Clint)?;
        bus.insert(PLIC_BASE, PLIC_SIZE, Device::Plic)?;
        bus.insert(UART_BASE, UART_SIZE, Device::Uart)?;
        let imsic = (config.aia == Aia::Imsic).then(|| {
            use crate::devices::imsic::*;
            crate::backend::ImsicConfig {
                ids: IMSIC_IDS,
                geilen: IMSIC_GEILEN,
            }
        });
        if imsic.is_some() {
            use crate::devices::imsic::*;
            bus.insert(IMSIC_M_BASE, PAGE, Device::Imsic(Region::Machine))?;
            bus.insert(
                IMSIC_S_BASE,
                IMSIC_S_STRIDE,
                Device::Imsic(Region::Supervisor),
            )?;
        }

        let hart_config = HartConfig {
            hart_id: HART_ID,
            mmio: bus.ranges(),
            jit: config.jit,
            jit_perf_map: config.perf_map,
            jit_threshold: crate::backend::JIT_THRESHOLD,
            // 16 entries, as QEMU's `virt` board: firmware sets an entry before it runs S-
            // or U-mode code (the test guests' runtime does, `tests/guests/rt`).
            pmp_entries: crate::backend::PMP_ENTRIES,
            imsic,
            host_clock: (config.clock == vcpu_api::ClockMode::Host)
                .then(|| vcpu_api::HostClock::starting_at(0)),
            ..HartConfig::default()
        };
        let mut hart = Hart::new(hart_config, mem.clone())?;
        hart.set_pc(image.entry);
        hart.set_xreg(10, HART_ID); // a0
        hart.set_xreg(11, place_fdt(&mem, ram_size, &image, config.aia)?); // a1
        hart.set_trace(config.trace);
        hart.set_trace_range(config.trace_range.clone());

        Ok(Machine {
            hart,
            mem,
            uart: Uart::new(console),
            finisher: Finisher,
            clint: Clint::default(),
            plic: Plic::default(),
            htif,
            bus,
            max_insns: config.max_insns,
            timeout: config.timeout,
            executed: 0,
            symbols: config.symbols.clone(),
            input: config.input.clone(),
            debug_hit: None,
        })
    }

    /// The hart, for inspection.
    pub fn hart(&self) -> &Hart {
        &self.hart
    }

    /// Guest RAM.
    pub fn memory(&self) -> &GuestMemoryMmap {
        &self.mem
    }

    /// Console input: puts bytes in the UART's receive buffer, as many as fit, and returns
    /// how many. With the UART's received-data interrupt enabled, this raises PLIC source
    /// 10, which wakes a hart waiting in WFI when the PLIC routes it to the hart: the next
    /// [`Machine::run`] takes the interrupt (after a run that ended in
    /// [`Error::WaitForever`], it resumes after the WFI).
    pub fn enqueue_input(&mut self, bytes: &[u8]) -> usize {
        let n = self.uart.enqueue_input(bytes);
        self.update_interrupts();
        n
    }

    /// Moves console input waiting in [`MachineConfig::input`] into the UART, as much as
    /// fits; returns how many bytes.
    fn feed_input(&mut self) -> usize {
        let Some(input) = &self.input else {
            return 0;
        };
        let mut buf = [0u8; 64];
        let room = self.uart.input_room().min(buf.len());
        let n = input.pop_into(&mut buf[..room]);
        if n > 0 {
            self.enqueue_input(&buf[..n]);
        }
        n
    }

    /// After a WFI that nothing else can end: waits for console input when the UART's
    /// received-data interrupt is enabled and input may still come. Returns `None` when the
    /// hart should run again (input arrived, or a stop was requested, which the next run
    /// reports; the hart resumes after the WFI), the time limit's end when it passed, and `Some(Err)` when nothing can wake
    /// the hart.
    fn wait_for_input(
        &mut self,
        deadline: Option<(Duration, Instant)>,
    ) -> Option<Result<MachineExit, Error>> {
        const POLL: Duration = Duration::from_millis(5);
        // The WFI has retired: it is the instruction before pc (WFI has no compressed form).
        let forever = Err(Error::WaitForever {
            hart: HART_ID,
            pc: self.hart.pc().wrapping_sub(4),
        });
        let stop = self.hart.stop_handle();
        loop {
            let waiting = self.input.as_ref().is_some_and(MachineInput::may_have_more);
            if !waiting || !self.uart.receive_interrupt_enabled() {
                return Some(forever);
            }
            if self.feed_input() > 0 || stop.is_requested() {
                return None;
            }
            if let Some((limit, at)) = deadline {
                if Instant::now() >= at {
                    return Some(Ok(MachineExit::TimedOut {
                        limit,
                        insns: self.executed,
                        pc: self.hart.pc(),
                    }));
                }
            }
            std::thread::sleep(POLL);
        }
    }

    /// With host time, after a WFI that a timer can end: sleeps on the host until the
    /// timer's deadline, an enabled interrupt, console input, a stop request (the next run
    /// reports it) or the time limit, whose end it returns. `None`: run the hart again.
    fn sleep_until_wakeup(&mut self, deadline: Option<(Duration, Instant)>) -> Option<MachineExit> {
        /// Console input and stop requests are looked for this often.
        const POLL: Duration = Duration::from_millis(5);
        let stop = self.hart.stop_handle();
        loop {
            let now = self.hart.mtime_now();
            if self.hart.wakeup_pending() || stop.is_requested() || self.feed_input() > 0 {
                return None;
            }
            let timer = self.hart.timer_deadline_mtime()?;
            if timer <= now {
                return None;
            }
            if let Some((limit, at)) = deadline {
                if Instant::now() >= at {
                    return Some(MachineExit::TimedOut {
                        limit,
                        insns: self.executed,
                        pc: self.hart.pc(),
                    });
                }
            }
            std::thread::sleep(vcpu_api::HostClock::duration_of(timer - now).min(POLL));
        }
    }

    /// Brings the interrupt lines up to date: the UART's level into the PLIC, the PLIC's
    /// contexts into the hart's external interrupt lines.
    fn update_interrupts(&mut self) {
        self.plic
            .set_level(UART_SOURCE, self.uart.interrupt_level());
        self.hart.set_meip(self.plic.notification(0));
        self.hart.set_seip(self.plic.notification(1));
    }

    /// A handle that stops [`Machine::run`] from another thread (it then returns
    /// [`Error::Stopped`]).
    pub fn stop_handle(&self) -> vcpu_api::StopHandle {
        self.hart.stop_handle()
    }

    /// Instructions executed so far, retired or trapped: what [`MachineConfig::max_insns`]
    /// counts.
    pub fn instructions(&self) -> u64 {
        self.executed
    }

    /// Runs until the guest ends the run, the budget or the time limit runs out or an error
    /// occurs. The time limit counts from this call.
    pub fn run(&mut self) -> Result<MachineExit, Error> {
        let deadline = self.deadline();
        loop {
            if let Some(end) = self.run_chunk(RUN_CHUNK, deadline)? {
                return Ok(end);
            }
        }
    }

    /// The wall-clock limit counted from now, and when it passes.
    fn deadline(&self) -> Option<(Duration, Instant)> {
        self.timeout.map(|t| (t, Instant::now() + t))
    }

    /// Runs at most `max` instructions (fewer when the budget ends sooner or the hart exits
    /// earlier) and acts on the exit; returns the run's end if it ended. The whole run is a
    /// loop of these; the debugger runs it one instruction at a time where it must.
    fn run_chunk(
        &mut self,
        max: u64,
        deadline: Option<(Duration, Instant)>,
    ) -> Result<Option<MachineExit>, Error> {
        if let Some((limit, at)) = deadline {
            if Instant::now() >= at {
                return Ok(Some(MachineExit::TimedOut {
                    limit,
                    insns: self.executed,
                    pc: self.hart.pc(),
                }));
            }
        }
        let chunk = match self.max_insns {
            Some(max_insns) => {
                let left = max_insns.saturating_sub(self.executed);
                if left == 0 {
                    return Ok(Some(MachineExit::BudgetExhausted {
                        insns: self.executed,
                        pc: self.hart.pc(),
                    }));
                }
                left.min(max)
            }
            None => max,
        };
        self.feed_input();
        let exit = self.hart.run(chunk);
        // Handle the exit first: a device load is executed when it is completed.
        let outcome = self.handle_exit(exit, deadline);
        self.executed = self.hart.executed();
        outcome
    }

    /// Acts on one exit of [`Hart::run`]; returns the run's end if this exit is one.
    fn handle_exit(
        &mut self,
        exit: VcpuExit,
        deadline: Option<(Duration, Instant)>,
    ) -> Result<Option<MachineExit>, Error> {
        match exit {
            VcpuExit::Mmio(access) => self.mmio(access),
            VcpuExit::Wfi => {
                if self.hart.skip_to_timer() {
                    if self.hart.host_clock().is_some() {
                        return Ok(self.sleep_until_wakeup(deadline));
                    }
                    Ok(None)
                } else {
                    self.wait_for_input(deadline).transpose()
                }
            }
            VcpuExit::BudgetExhausted => Ok(None),
            VcpuExit::StopRequested => Err(Error::Stopped {
                hart: HART_ID,
                pc: self.hart.pc(),
            }),
            // Only a hosted-mode hart (`vmm run`) reports guest traps; the bare machine's
            // hart takes every trap itself.
            VcpuExit::GuestTrap(trap) => Err(Error::UnexpectedGuestTrap {
                cause: trap.cause,
                pc: trap.pc,
            }),
            VcpuExit::HostInterrupt(irq) => Err(Error::UnexpectedInterrupt { hart: HART_ID, irq }),
            // Only under a debugger (`gdb.rs`), which takes the stop.
            VcpuExit::DebugPoint(hit) => {
                self.debug_hit = Some(hit);
                Ok(None)
            }
        }
    }

    /// Routes one MMIO access to its device. Returns the run's end if the device asks for it.
    fn mmio(&mut self, access: MmioAccess) -> Result<Option<MachineExit>, Error> {
        let MmioAccess { addr, size, write } = access;
        let mut exit = None;
        // HTIF takes any access starting in its words; the others only those that fit.
        let hit = self
            .bus
            .find(addr, u64::from(size))
            .filter(|h| h.fits || h.device == Device::Htif);
        let read_value = match (hit.map(|h| (h.device, h.offset)), write) {
            (Some((Device::Htif, _)), Some(value)) => {
                if let Some(htif) = self.htif.as_mut() {
                    if let HtifOutcome::Exit { code } =
                        htif.write(addr, size, value, &self.mem, self.uart.console())?
                    {
                        exit = Some(MachineExit::Finished { code });
                    }
                }
                0
            }
            (Some((Device::Htif, _)), None) => self.htif.as_ref().map_or(0, |h| h.read(addr, size)),
            (Some((Device::Uart, off)), Some(value)) => {
                self.uart.write(off, size, value);
                0
            }
            (Some((Device::Uart, off)), None) => self.uart.read(off, size),
            (Some((Device::Plic, off)), Some(value)) => {
                self.plic.write(off, size, value);
                0
            }
            (Some((Device::Plic, off)), None) => self.plic.read(off, size),
            (Some((Device::Clint, off)), Some(value)) => {
                self.clint.write(off, size, value, &mut self.hart);
                0
            }
            (Some((Device::Clint, off)), None) => {
                // With host time, `mtime` as of this access (not the chunk's start).
                self.hart.mtime_now();
                self.clint.read(off, size, &self.hart)
            }
            (Some((Device::Finisher, off)), Some(value)) => {
                exit = match self.finisher.write(off, size, value) {
                    Some(FinisherCommand::Pass) => Some(MachineExit::Finished { code: 0 }),
                    Some(FinisherCommand::Fail { code }) => Some(MachineExit::Finished { code }),
                    Some(FinisherCommand::Reset) => return Err(Error::ResetRequested),
                    Some(FinisherCommand::Unknown(_)) | None => None,
                };
                0
            }
            (Some((Device::Finisher, off)), None) => self.finisher.read(off, size),
            (Some((Device::Imsic(region), off)), Some(value)) => {
                if let Some((file, id)) =
                    crate::devices::imsic::msi_of_write(region, off, size, value)
                {
                    // The page exists, so the file does: this cannot fail.
                    let _ = self.hart.imsic_send_msi(file, id);
                }
                0
            }
            (Some((Device::Imsic(_), _)), None) => 0,
            (None, _) => {
                log::warn!("{size}-byte access at {addr:#x} straddles a device window; ignored");
                0
            }
        };
        if write.is_none() {
            self.hart.complete_mmio_read(mask_read(read_value, size));
        }
        self.update_interrupts();
        Ok(exit)
    }
}

/// The devices on the bare machine's bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Device {
    Htif,
    Uart,
    Clint,
    Plic,
    Finisher,
    Imsic(crate::devices::imsic::Region),
}

/// RAM size in bytes for `mib`, or the error for a size out of range.
fn ram_bytes(mib: u64) -> Result<u64, Error> {
    if mib == 0 || mib > MAX_MEMORY_MIB {
        return Err(Error::InvalidMemorySize {
            mib,
            max: MAX_MEMORY_MIB,
        });
    }
    Ok(mib << 20)
}

pub mod fdt;
pub mod gdb;
mod input;

#[cfg(test)]
mod tests;
