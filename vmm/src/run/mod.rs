//! `vmm run`: boot a guest kernel in VS-mode on a hosted-mode hart, with the SBI
//! ([`crate::sbi`]) provided by the VMM.
//!
//! | guest-physical | what |
//! | --- | --- |
//! | `0x0d00_0000` | the guest's APLIC domain (`--aia aplic-imsic`, the default; `run/aia.rs`) |
//! | `0x1000_0000` | ns16550a UART (the same [`Uart`] as `vmm machine`): APLIC source 10, polled with `--aia none` |
//! | `0x2800_0000` | the guest's IMSIC, one interrupt file page per vCPU (`--aia aplic-imsic`) |
//! | `0x8000_0000` | RAM (`--memory` MiB) |
//! | RAM base + 2 MiB | a Linux `Image` (its `text_offset`); an ELF goes where its `p_paddr` says |
//! | below the FDT | the initrd, page-aligned, as high as it fits |
//! | RAM end - 2 MiB | the device tree (RAM end - 64 KiB when RAM is under 8 MiB) |
//!
//! The guest starts at the kernel entry in VS-mode with `a0` = hart id (0) and `a1` = the
//! device tree's address. With [`RunConfig::vcpus`] > 1 every other hart runs on a thread
//! of its own and starts stopped, for the guest to start with SBI HSM (see `run/smp.rs` and
//! "Multiprocessor guests" in `docs/hypervisor.md`). Its traps to the VMM ([`vcpu_api::VcpuExit::GuestTrap`]):
//! - `ECALL` from VS-mode (cause 10): an SBI call, answered in `a0`/`a1`, resumed at pc + 4;
//! - virtual instruction (22): with the [`GuestPolicy`] that asks for them, a VS-mode WFI
//!   trapped by `hstatus.VTW` is emulated as idling until the next timer deadline, and a read
//!   of `time` trapped by `hcounteren.TM` = 0 gets the guest's time (see [`vinsn`]); CTR
//!   accesses go to `ctr-virt` and sampling accesses (Sspesa, `scountovf`, the lazy PDIS
//!   load) to `pmu_virt::sample` (`run/sample.rs`); any other
//!   is injected into the guest as an illegal instruction (cause 2, `stval` = the instruction
//!   bits). Each is recorded in [`ExitStats::virtual_insn_exits`];
//! - access faults (1, 5, 7): injected as they are;
//! - guest-page faults (20, 21, 23; not expected with the identity G-stage): injected as the
//!   corresponding page fault (12, 13, 15);
//! - anything else: logged and injected as it is.
//!
//! The run ends when the guest calls SBI SRST `system_reset` ([`RunExit::Reset`]), when the
//! instruction budget runs out ([`RunExit::BudgetExhausted`]), when the user types Ctrl-A x
//! on a terminal ([`RunExit::Quit`]), or with an [`Error`].
//!
//! Exit status ([`RunExit::exit_code`]): 0 only for an SRST shutdown with reason "no
//! reason"; 1 for a shutdown with any other reason; [`EXIT_REBOOT`] (3) for an SRST cold or
//! warm reboot, whatever its reason: the VMM does not reboot guests, and a reboot is how
//! Linux booted with `panic=-1` ends after a panic, so it must not pass for a clean
//! power-off. The run logs (warning level) "guest requested a reboot (reason N): ...
//! treated as failure" ([`ResetRequest::failure_message`]); 124 when the budget runs out;
//! [`EXIT_QUIT`] (130) when the user kills the VM with Ctrl-A x.
//!
//! This file holds the VM ([`GuestVm`]), how a run ends ([`RunExit`]) and the entry points.
//! The options are in `config.rs` ([`RunConfig`]); `builder.rs` ([`VmBuilder`]) checks them
//! all, then builds the VM step by step; `run_loop.rs` runs it; `exits.rs` handles its exits,
//! with the SBI adapter in `sbi_env.rs`; `stats.rs` counts the exits; `snapshot.rs` saves
//! and restores VMs.

pub mod aia;
pub mod api;
pub mod builder;
mod config;
pub mod console;
mod dirty;
pub mod error;
mod exits;
pub mod fdt;
mod gdb;
pub mod inject;
pub mod kernel;
pub mod migrate;
mod pause;
mod pmu_deleg;
mod run_loop;
mod sample;
mod sbi_env;
mod sched;
pub mod signals;
mod smp;
pub mod snapshot;
pub mod stats;
pub mod trace;
pub mod vinsn;

use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::backend::Hart;
use vm_memory::GuestMemoryMmap;

use crate::devices::bus::MmioBus;
use crate::devices::uart::Uart;
use crate::devices::Console;
use crate::error::Error;
use crate::machine::{UART_BASE, UART_SIZE};
use crate::sbi::srst::ResetRequest;
use pause::{PauseCtl, PauseLink};
use sched::{ParkedVcpu, Sched};
use smp::Smp;

pub use sched::DEFAULT_SLICE_INSNS;

pub use crate::sbi::srst::EXIT_REBOOT;

pub use builder::VmBuilder;
pub use config::{RunConfig, CTR_DEMO_GUEST};
pub use console::{ConsoleInput, InputQueue};
pub use run_loop::VcpuThreadError;
pub use stats::{ExitReason, ExitStats, RunStats, VirtualInsnAction, VirtualInsnExit};
pub use vinsn::GuestPolicy;

/// `hvip` bit of the VS-level software interrupt.
const VSSIP: u64 = 1 << 2;
/// `hvip` bit of the VS-level timer interrupt.
const VSTIP: u64 = 1 << 6;

/// Page size used to align the initrd.
const PAGE: u64 = 4096;
/// Default RAM size of `vmm run`, in MiB.
pub const DEFAULT_MEMORY_MIB: u64 = 256;
/// Distance of the device tree from the end of RAM (when RAM is at least 8 MiB).
pub const FDT_FROM_END: u64 = 2 << 20;
/// Most vCPUs `vmm run --vcpus` accepts (the SBI hart masks of one call cover 64 harts).
pub const MAX_VCPUS: u64 = 64;

/// The exit status when the user kills the VM with Ctrl-A x: 128 + SIGINT, as for a shell
/// command ended with Ctrl-C (the run did not end cleanly).
pub const EXIT_QUIT: u8 = 130;

use crate::layout::FDT_MAX;

/// The devices of a `vmm run` VM on its MMIO bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Device {
    /// The UART at [`UART_BASE`].
    Uart,
    /// The guest's APLIC domain ([`aia::APLIC_BASE`]).
    Aplic,
    /// The guest's IMSIC pages ([`aia::IMSIC_BASE`]).
    Imsic,
}

impl Device {
    /// Its name in exit traces.
    fn name(self) -> &'static str {
        match self {
            Device::Uart => "uart",
            Device::Aplic => "aplic",
            Device::Imsic => "imsic",
        }
    }
}

/// The MMIO bus of `vmm run` VMs: the UART, and with AIA for `aia_vcpus` vCPUs the APLIC
/// and the IMSIC pages.
fn mmio_bus(aia_vcpus: Option<u64>) -> MmioBus<Device> {
    let mut bus = MmioBus::new();
    // The windows do not overlap, so every insert is accepted.
    let _ = bus.insert(UART_BASE, UART_SIZE, Device::Uart);
    if let Some(vcpus) = aia_vcpus {
        let _ = bus.insert(aia::APLIC_BASE, aia::APLIC_SIZE, Device::Aplic);
        let _ = bus.insert(aia::IMSIC_BASE, aia::imsic_window(vcpus), Device::Imsic);
    }
    bus
}

/// How a run ended, when the VMM did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunExit {
    /// The guest called SBI `system_reset`.
    Reset(ResetRequest),
    /// The instruction budget ran out.
    BudgetExhausted {
        /// Instructions executed.
        insns: u64,
        /// Where the guest was.
        pc: u64,
    },
    /// The wall-clock limit (`--timeout`) was reached.
    TimedOut {
        /// The limit.
        limit: std::time::Duration,
        /// Instructions executed (by the vCPU that noticed).
        insns: u64,
        /// Where that vCPU was.
        pc: u64,
    },
    /// The user killed the VM from the terminal (Ctrl-A x): exit status [`EXIT_QUIT`].
    Quit,
    /// The VM moved to another vmm process (the control socket's `migrate`): exit status 0.
    Migrated {
        /// Where it went (`unix:PATH` or `tcp:HOST:PORT`).
        to: String,
    },
    /// The control socket's `quit` stopped the VM: exit status 0.
    Stopped {
        /// The snapshot written first, if the request asked for one.
        snapshot: Option<PathBuf>,
    },
    /// A debugger attached with `--gdb` killed the VM (`kill`): exit status 1.
    Killed,
}

impl RunExit {
    /// The `vmm` exit status for this end: the reset's status (0 for a shutdown with no
    /// reason, 1 for a shutdown with another reason, [`EXIT_REBOOT`] for a cold or warm
    /// reboot), 124 for the budget and the time limit, [`EXIT_QUIT`] for Ctrl-A x.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunExit::Reset(r) => r.exit_code() as u8,
            RunExit::BudgetExhausted { .. } | RunExit::TimedOut { .. } => 124,
            RunExit::Quit => EXIT_QUIT,
            RunExit::Killed => 1,
            RunExit::Migrated { .. } | RunExit::Stopped { .. } => 0,
        }
    }

    /// Whether the guest powered off cleanly (SRST shutdown, reason "no reason").
    pub fn is_clean_shutdown(&self) -> bool {
        matches!(self, RunExit::Reset(r) if r.is_clean_shutdown())
    }

    /// Why this end counts as a failure, in words; `None` when the exit status is 0.
    pub fn failure_message(&self) -> Option<String> {
        match self {
            RunExit::Reset(r) => r.failure_message(),
            RunExit::BudgetExhausted { insns, pc } => Some(format!(
                "instruction budget of {insns} exhausted at pc={pc:#x}"
            )),
            RunExit::TimedOut { limit, insns, pc } => Some(format!(
                "wall-clock timeout of {:.1} s reached after {insns} instructions, at \
                 pc={pc:#x} (the guest hangs or is too slow; the console output above is \
                 complete)",
                limit.as_secs_f64()
            )),
            RunExit::Quit => Some("the VM was killed by the user (Ctrl-A x)".to_string()),
            RunExit::Killed => Some("the debugger killed the guest".to_string()),
            RunExit::Migrated { .. } | RunExit::Stopped { .. } => None,
        }
    }
}

/// Where things were put in guest RAM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootLayout {
    /// Kernel entry point.
    pub entry: u64,
    /// Memory the kernel occupies.
    pub kernel: Range<u64>,
    /// The initrd, if any.
    pub initrd: Option<Range<u64>>,
    /// Address of the device tree (`a1`).
    pub fdt: u64,
}

/// Loads the kernel (and initrd) of `config` and runs it to the end. Console output (UART
/// and SBI DBCN) goes to `console`; input comes from `input`.
pub fn run_kernel(
    config: &RunConfig,
    console: Console,
    input: ConsoleInput,
) -> Result<(RunExit, RunStats), Error> {
    run_kernel_with_policy(config, GuestPolicy::default(), console, input)
}

/// [`run_kernel`] with the VMM trapping the guest instructions `policy` names.
pub fn run_kernel_with_policy(
    config: &RunConfig,
    policy: GuestPolicy,
    console: Console,
    input: ConsoleInput,
) -> Result<(RunExit, RunStats), Error> {
    run_vm(GuestVm::with_policy(config, policy, console)?, input)
}

/// Runs a built (or restored) VM to its end, with console input from `input`.
pub(crate) fn run_vm(mut vm: GuestVm, input: ConsoleInput) -> Result<(RunExit, RunStats), Error> {
    let _raw;
    let _reader;
    match input {
        ConsoleInput::None => {}
        ConsoleInput::Bytes(b) => vm.input.push(&b),
        ConsoleInput::Stdin => {
            _raw = console::RawTerminal::enable()?;
            _reader = console::StdinReader::spawn(vm.input.clone(), vm.hart.stop_handle())?;
        }
    }
    let before = vm.insns_base.iter().sum::<u64>();
    let start = Instant::now();
    let exit = vm.run();
    let _ = vm.uart().console().flush();
    if let Some(gdb) = vm.gdb.as_mut() {
        gdb.finish(exit.as_ref().ok().map(RunExit::exit_code));
    }
    let mut snapshot_written = None;
    if let (Some(path), Ok(RunExit::BudgetExhausted { .. } | RunExit::TimedOut { .. })) =
        (&vm.snapshot_on_stop, &exit)
    {
        vm.write_snapshot(path)?;
        snapshot_written = Some(path.clone());
    }
    let stats = RunStats {
        instructions: vm.executed().saturating_sub(before),
        instructions_before: before,
        wall: start.elapsed(),
        exits: vm.stats.clone(),
        switches: vm.switch_counts.clone(),
        per_vcpu: vm
            .executed_per_vcpu()
            .iter()
            .enumerate()
            .map(|(i, n)| n.saturating_sub(vm.insns_base.get(i).copied().unwrap_or(0)))
            .collect(),
        translated_blocks: vm.translated_blocks(),
        snapshot_written,
    };
    Ok((exit?, stats))
}

/// A guest kernel on a hosted-mode hart, with its RAM, UART and SBI.
pub struct GuestVm {
    hart: Hart,
    /// Guest RAM size in MiB.
    memory_mib: u64,
    /// This vCPU's hart id.
    hart_id: u64,
    mem: GuestMemoryMmap,
    uart: Arc<Mutex<Uart>>,
    /// The AIA devices (`--aia aplic-imsic`).
    aia: Option<Arc<aia::Aia>>,
    /// Where the devices are.
    bus: MmioBus<Device>,
    input: InputQueue,
    layout: BootLayout,
    max_insns: Option<u64>,
    /// Per vCPU (by id): the instructions it had executed when this run began (those in
    /// the snapshot for `vmm restore`; empty, all 0, for `vmm run`). The budget and the
    /// statistics count from there.
    insns_base: Arc<[u64]>,
    timeout: Option<std::time::Duration>,
    /// When `timeout` ends the run (set as the run loop starts).
    run_deadline: Option<std::time::Instant>,
    /// The only vCPU is parked while it waits in WFI (`RunLoop::sleep_until_wakeup`): the
    /// control socket's `stats` says so (with several vCPUs the SMP state knows).
    waiting_in_wfi: bool,
    policy: GuestPolicy,
    /// This vCPU's CTR as the hypervisor manages it (lazy loading, `sctrdepth`).
    ctr: ctr_virt::GuestCtr,
    /// This vCPU's virtual PMU (`pmu-virt`).
    pmu: pmu_virt::GuestPmu,
    /// The VM's firmware-event tallies (every vCPU's).
    fw: pmu_virt::FwTallies,
    /// The control socket (`--api-sock`; on the first hart instance).
    api: Option<api::VmApi>,
    /// With a control socket: how this hart instance parks when the VM is paused.
    pause: Option<PauseLink>,
    /// The host hart model's CTR (for the control socket's `ctr-dump`).
    host_ctr: Option<vcpu_api::ctr::CtrConfig>,
    /// Where to write a snapshot when the budget or the timeout ends the run.
    snapshot_on_stop: Option<PathBuf>,
    stats: ExitStats,
    /// Which exits to trace (`--trace-exits`; shared by the VM's vCPUs and its control
    /// socket).
    trace: Arc<trace::ExitTrace>,
    /// With a control socket: the injections it queued (`run/inject.rs`).
    injections: Option<Arc<inject::Injections>>,
    /// With more than one vCPU: the shared state, and (on hart 0 until `run`) the other
    /// harts' VMs.
    smp: Option<Arc<Smp>>,
    secondaries: Vec<GuestVm>,
    /// With more vCPUs than harts on this hart (`--pcpus`): the others and the time slice.
    sched: Option<Sched>,
    /// vCPU switches per hart (after `run`, on hart 0; empty with one vCPU).
    switch_counts: Vec<u64>,
    /// Under a debugger (`--gdb`): this vCPU's part (`run/gdb.rs`).
    debug: Option<gdb::VcpuDebug>,
    /// Under a debugger: the stub's thread (on the first hart instance).
    gdb: Option<gdb::GdbThread>,
}

impl std::fmt::Debug for GuestVm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestVm")
            .field("hart_id", &self.hart_id)
            .field("memory_mib", &self.memory_mib)
            .field("pc", &self.hart.pc())
            .finish_non_exhaustive()
    }
}

impl GuestVm {
    /// Builds the VM: RAM, kernel, initrd, device tree, hart.
    pub fn new(config: &RunConfig, console: Console) -> Result<GuestVm, Error> {
        GuestVm::with_policy(config, GuestPolicy::default(), console)
    }

    /// [`GuestVm::new`] with the VMM trapping the guest instructions `policy` names.
    pub fn with_policy(
        config: &RunConfig,
        policy: GuestPolicy,
        console: Console,
    ) -> Result<GuestVm, Error> {
        builder::VmBuilder::new(config, policy)?.build(console)
    }

    /// Opens the control socket at `path` for this VM (the first hart instance, with the
    /// others in `secondaries`): every instance gets its link to the pause state.
    /// `paused`: every instance parks before its first instruction.
    pub(crate) fn attach_api(&mut self, path: &std::path::Path, paused: bool) -> Result<(), Error> {
        let ctl = self.pause_ctl(paused);
        let vcpus = self.smp.as_ref().map_or(1, |s| s.hart_count());
        let mailboxes = match &self.smp {
            Some(smp) => smp.mailboxes(),
            None => vec![self.hart.mailbox()],
        };
        let injections = Arc::new(inject::Injections::new(mailboxes));
        let api = api::VmApi::spawn(path, ctl, self.common(), vcpus, injections.clone())?;
        self.injections = Some(injections.clone());
        for vm in &mut self.secondaries {
            vm.injections = Some(injections.clone());
        }
        self.api = Some(api);
        Ok(())
    }

    /// The VM's pause state (shared by the control socket and the debugger), made and
    /// linked to every hart instance the first time; `paused` (the first time only): every
    /// instance parks before its first instruction.
    pub(crate) fn pause_ctl(&mut self, paused: bool) -> Arc<PauseCtl> {
        if let Some(link) = &self.pause {
            if paused {
                let _ = link.ctl.request_pause();
            }
            return link.ctl.clone();
        }
        let instances = std::iter::once(&*self).chain(&self.secondaries);
        let stops = instances.map(|vm| vm.hart.stop_handle()).collect();
        let ctl = Arc::new(PauseCtl::new(stops, self.smp.clone(), paused));
        self.pause = Some(PauseLink {
            ctl: ctl.clone(),
            instance: 0,
        });
        for (instance, vm) in (1..).zip(&mut self.secondaries) {
            vm.pause = Some(PauseLink {
                ctl: ctl.clone(),
                instance,
            });
        }
        ctl
    }

    /// The UART (shared by all vCPUs).
    fn uart(&self) -> MutexGuard<'_, Uart> {
        self.uart.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Instructions executed by all vCPUs.
    pub fn executed(&self) -> u64 {
        self.hart.executed()
            + self.parked_executed()
            + self.secondaries.iter().map(GuestVm::executed).sum::<u64>()
    }

    /// Instructions each vCPU has executed, by vCPU id (since the guest booted), on this
    /// hart instance and the others.
    pub fn executed_per_vcpu(&self) -> Vec<u64> {
        let n = self.smp.as_ref().map_or(1, |s| s.hart_count()) as usize;
        let mut per = vec![0; n];
        self.add_executed(&mut per);
        per
    }

    fn add_executed(&self, per: &mut [u64]) {
        if let Some(n) = per.get_mut(self.hart_id as usize) {
            *n += self.hart.executed();
        }
        for (id, n) in self.parked_executed_per_vcpu() {
            if let Some(v) = per.get_mut(id as usize) {
                *v += n;
            }
        }
        for s in &self.secondaries {
            s.add_executed(per);
        }
    }

    /// Blocks translated to host code by every hart (`--jit`).
    pub fn translated_blocks(&self) -> u64 {
        self.hart.translated_blocks()
            + self
                .secondaries
                .iter()
                .map(GuestVm::translated_blocks)
                .sum::<u64>()
    }

    /// Where the kernel, initrd and device tree were put.
    pub fn layout(&self) -> &BootLayout {
        &self.layout
    }

    /// Guest RAM.
    pub fn memory(&self) -> &GuestMemoryMmap {
        &self.mem
    }

    /// The console input queue (what the UART and DBCN read from).
    pub fn input(&self) -> &InputQueue {
        &self.input
    }

    /// Exit counts so far.
    pub fn stats(&self) -> &ExitStats {
        &self.stats
    }
}

/// A vCPU's hypervisor-side state besides its hart: its CTR and its PMU.
pub(crate) type VcpuVirt = (ctr_virt::GuestCtr, pmu_virt::GuestPmu);

#[cfg(test)]
mod tests;

/// What every hart instance of a VM shares, from the builder or the restore.
pub(crate) struct VmShared {
    memory_mib: u64,
    mem: GuestMemoryMmap,
    uart: Arc<Mutex<Uart>>,
    aia: Option<Arc<aia::Aia>>,
    input: InputQueue,
    layout: BootLayout,
    max_insns: Option<u64>,
    insns_base: Arc<[u64]>,
    timeout: Option<std::time::Duration>,
    policy: GuestPolicy,
    fw: pmu_virt::FwTallies,
    host_ctr: Option<vcpu_api::ctr::CtrConfig>,
    snapshot_on_stop: Option<PathBuf>,
    smp: Option<Arc<Smp>>,
    trace: Arc<trace::ExitTrace>,
}

impl VmShared {
    /// A hart instance running vCPU `hart_id` on `hart`, with its CTR and PMU.
    fn instance(&self, hart: Hart, hart_id: u64, (ctr, pmu): VcpuVirt) -> GuestVm {
        GuestVm {
            hart,
            memory_mib: self.memory_mib,
            hart_id,
            mem: self.mem.clone(),
            uart: self.uart.clone(),
            bus: mmio_bus(self.aia.as_ref().map(|a| a.vcpus())),
            aia: self.aia.clone(),
            input: self.input.clone(),
            layout: self.layout.clone(),
            max_insns: self.max_insns,
            insns_base: self.insns_base.clone(),
            timeout: self.timeout,
            run_deadline: None,
            waiting_in_wfi: false,
            policy: self.policy,
            ctr,
            pmu,
            fw: self.fw.clone(),
            api: None,
            pause: None,
            host_ctr: self.host_ctr.clone(),
            snapshot_on_stop: self.snapshot_on_stop.clone(),
            stats: ExitStats::default(),
            trace: self.trace.clone(),
            injections: None,
            smp: self.smp.clone(),
            secondaries: Vec::new(),
            sched: None,
            switch_counts: Vec::new(),
            debug: None,
            gdb: None,
        }
    }
}

/// Puts vCPUs (`(id, hart, (ctr, pmu))`, by id) on `pcpus` hart instances: vCPU `v` runs on
/// instance `v % pcpus`, whose hart is vCPU `v % pcpus`'s; the others' states are parked
/// there (`preempted(id)`: whether the vCPU could run when parked). The instances share
/// `shared`.
fn place_vcpus(
    vcpus: Vec<(u64, Hart, VcpuVirt)>,
    pcpus: u64,
    slice: u64,
    preempted: impl Fn(u64) -> bool,
    shared: &VmShared,
) -> Vec<GuestVm> {
    let mut instances: Vec<GuestVm> = Vec::new();
    for (id, hart, (ctr, pmu)) in vcpus {
        if id < pcpus {
            instances.push(shared.instance(hart, id, (ctr, pmu)));
            continue;
        }
        let mut state = hart.save_state();
        state.hart_id = id;
        let instance = &mut instances[(id % pcpus) as usize];
        let sched = instance.sched.get_or_insert_with(|| Sched::new(slice));
        sched.parked.push_back(ParkedVcpu {
            id,
            state,
            ctr,
            pmu,
            mailbox: hart.mailbox(),
            preempted: preempted(id),
        });
    }
    instances
}
