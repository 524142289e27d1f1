//! `vmm run`: boot a guest kernel in VS-mode on a hosted-mode hart, with the SBI
//! ([`crate::sbi`]) provided by the VMM.
//!
//! | guest-physical | what |
//! | --- | --- |
//! | `0x1000_0000` | ns16550a UART (the same [`Uart`] as `vmm machine`), polled: no interrupt controller |
//! | `0x8000_0000` | RAM (`--memory` MiB) |
//! | RAM base + 2 MiB | a Linux `Image` (its `text_offset`); an ELF goes where its `p_paddr` says |
//! | below the FDT | the initrd, page-aligned, as high as it fits |
//! | RAM end - 2 MiB | the device tree (RAM end - 64 KiB when RAM is under 8 MiB) |
//!
//! The guest starts at the kernel entry in VS-mode with `a0` = hart id (0) and `a1` = the
//! device tree's address. With [`RunConfig::vcpus`] > 1 every other hart runs on a thread
//! of its own and starts stopped, for the guest to start with SBI HSM (see `run/smp.rs` and
//! "Multiprocessor guests" in `docs/hypervisor.md`). Its traps to the VMM ([`vcpu::VcpuExit::GuestTrap`]):
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

pub mod api;
pub mod console;
pub mod fdt;
pub mod kernel;
mod pause;
mod pmu_deleg;
mod sample;
mod sched;
pub mod signals;
mod smp;
pub mod snapshot;
pub mod stats;
pub mod vinsn;

use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use vcpu::{GuestTrap, Hart, HartConfig, MmioAccess, MmioRange, SharedClock, Vcpu, VcpuExit};
use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend as _, GuestMemoryMmap};

use crate::devices::uart::Uart;
use crate::devices::Console;
use crate::error::Error;
use crate::machine::{HART_ID, MAX_MEMORY_MIB, RAM_BASE, UART_BASE, UART_SIZE};
use crate::sbi::{self, srst::ResetRequest, SbiCall, SbiEnv, SbiOutcome, SbiRet};
use pause::{PauseCtl, PauseLink};
use sched::{Leave, ParkedVcpu, Sched};
use smp::{IdleEnd, Smp, StartWait};

pub use sched::DEFAULT_SLICE_INSNS;

pub use crate::sbi::srst::EXIT_REBOOT;

pub use console::{ConsoleInput, InputQueue};
pub use stats::{ExitStats, RunStats, VirtualInsnAction, VirtualInsnExit};
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

/// Largest device tree accepted.
const FDT_MAX: u64 = 64 << 10;

/// Exception codes the VMM handles.
mod cause {
    pub const FETCH_ACCESS: u64 = 1;
    pub const ILLEGAL_INSN: u64 = 2;
    pub const LOAD_ACCESS: u64 = 5;
    pub const STORE_ACCESS: u64 = 7;
    pub const ECALL_VS: u64 = 10;
    pub const FETCH_PAGE_FAULT: u64 = 12;
    pub const LOAD_PAGE_FAULT: u64 = 13;
    pub const STORE_PAGE_FAULT: u64 = 15;
    pub const FETCH_GUEST_PAGE_FAULT: u64 = 20;
    pub const LOAD_GUEST_PAGE_FAULT: u64 = 21;
    pub const VIRTUAL_INSN: u64 = 22;
    pub const STORE_GUEST_PAGE_FAULT: u64 = 23;
}

/// How to run a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunConfig {
    /// The kernel: an RV64 ELF executable or a Linux riscv64 `Image`.
    pub kernel: PathBuf,
    /// The kernel's bytes, when they are built in (then `kernel` only names it): the CTR
    /// self-test guest, [`CTR_DEMO_GUEST`].
    pub kernel_image: Option<&'static [u8]>,
    /// An initial RAM disk to place in RAM and name in the device tree.
    pub initrd: Option<PathBuf>,
    /// The kernel command line (`/chosen/bootargs`).
    pub cmdline: String,
    /// RAM size in MiB (1..=[`MAX_MEMORY_MIB`]).
    pub memory_mib: u64,
    /// Stop after this many instructions; `None` runs until the guest ends the run.
    pub max_insns: Option<u64>,
    /// Stop after this much wall-clock time; `None`: no limit.
    pub timeout: Option<std::time::Duration>,
    /// Log every instruction at trace level.
    pub trace: bool,
    /// Number of vCPUs (1..=[`MAX_VCPUS`]).
    pub vcpus: u64,
    /// `--pcpus`: the number of hart instances (host threads) the vCPUs run on,
    /// 1..=`vcpus`; `None`: one per vCPU. With fewer harts than vCPUs each hart runs its
    /// vCPUs in turn, `slice_insns` instructions at a time (see `run/sched.rs`).
    pub pcpus: Option<u64>,
    /// `--slice-insns`: the time slice of a vCPU on a shared hart, in instructions
    /// (default [`DEFAULT_SLICE_INSNS`]).
    pub slice_insns: u64,
    /// `--ctr on|off`: whether the guest has Control Transfer Records.
    pub ctr: bool,
    /// `--ctr-depths`: the CTR depths the guest may select (`None`: the migration-safe
    /// default, [`ctr_virt::DEFAULT_GUEST_DEPTHS`]), within what the host hart supports.
    pub ctr_depths: Option<ctr_virt::DepthSet>,
    /// `--host-ctr-depths`: the depths the host hart model supports (default all).
    pub host_ctr_depths: ctr_virt::DepthSet,
    /// `--pmu on|off`: whether the guest has a PMU (the SBI PMU extension, the hart's
    /// counters through `pmu-virt`, Sscofpmf overflow interrupts).
    pub pmu: bool,
    /// `--lcofi-delivery direct|selective`: how the guest's counter-overflow interrupts
    /// reach it ([`pmu_virt::lcofi`]).
    pub lcofi_delivery: pmu_virt::LcofiDelivery,
    /// `--pmu-counters N`: the guest gets `cycle`, `instret` and the hpm counters 3 to
    /// 2 + N (N <= 29; more is refused before the guest starts).
    pub pmu_counters: u32,
    /// `--pmu-deleg on|off`: counter delegation for the guest (Ssccfg: `ssccfg` in the device
    /// tree, `menvcfg.CDE` = 1, the guest's delegated-counter accesses emulated by
    /// `pmu-virt` on virtual counters backed by other hart counters). Needs `pmu`.
    pub pmu_deleg: bool,
    /// `--sspesa on|off`: whether the guest has Sspesa/Ssplcofi (`shpmspc`/`shpmsdata`
    /// emulated from its counters' samples; needs `pmu`).
    pub sspesa: bool,
    /// `--pdis on|off`: whether the guest has Sspdis (PDIS state loaded on its first
    /// access; needs `pmu`).
    pub pdis: bool,
    /// `--pmu-snapshot on|off`: whether the PMU offers the optional snapshot shared memory
    /// (`sbi_pmu_snapshot_set_shmem`; `off`, the default: `SBI_ERR_NOT_SUPPORTED`). Off by
    /// default because Linux 6.12's driver, given the snapshot, restarts overflowed
    /// counters with `counter_idx_base` 4096 (`SBI_ERR_INVALID_PARAM`), so `perf record`
    /// loses most samples (`docs/pmu-virt.md`, "Linux perf").
    pub pmu_snapshot: bool,
    /// `--jit on|off`: block translation in the harts (see `vcpu`'s `jit` module).
    pub jit: bool,
    /// `--perf-map`: name translated blocks in `/tmp/perf-PID.map` for a host `perf`.
    pub perf_map: bool,
    /// `--api-sock`: the control socket's path (`run/api.rs`).
    pub api_sock: Option<PathBuf>,
    /// `--snapshot-on-stop`: when the instruction budget or the timeout ends the run, write a
    /// snapshot here (for `vmm restore`).
    pub snapshot_on_stop: Option<PathBuf>,
}

/// The CTR self-test guest kernel `vmm run` boots without `--kernel`: built from
/// `tests/guests/sbi_ctr_demo.c` and kept in the repository so that building `vmm` needs no
/// RISC-V compiler (`tests/tests/demo.rs` checks it is that source's build).
pub const CTR_DEMO_GUEST: &[u8] = include_bytes!("../../guest/ctr-demo.elf");

impl RunConfig {
    /// The configuration for the built-in CTR self-test guest ([`CTR_DEMO_GUEST`]).
    pub fn ctr_demo() -> RunConfig {
        RunConfig {
            kernel_image: Some(CTR_DEMO_GUEST),
            ..RunConfig::new("<built-in CTR self-test guest>")
        }
    }

    /// A configuration for `kernel` with the defaults: 256 MiB, no initrd, empty command
    /// line, no budget.
    pub fn new(kernel: impl Into<PathBuf>) -> RunConfig {
        RunConfig {
            kernel: kernel.into(),
            kernel_image: None,
            initrd: None,
            cmdline: String::new(),
            memory_mib: DEFAULT_MEMORY_MIB,
            max_insns: None,
            timeout: None,
            trace: false,
            vcpus: 1,
            pcpus: None,
            slice_insns: DEFAULT_SLICE_INSNS,
            ctr: true,
            ctr_depths: None,
            host_ctr_depths: ctr_virt::DepthSet::ALL,
            pmu: true,
            lcofi_delivery: pmu_virt::LcofiDelivery::Direct,
            pmu_counters: pmu_virt::HPM_COUNTERS,
            pmu_deleg: false,
            sspesa: true,
            pdis: true,
            pmu_snapshot: false,
            jit: true,
            perf_map: false,
            api_sock: None,
            snapshot_on_stop: None,
        }
    }
}

/// How a run ended, when the VMM did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    if let (Some(path), Ok(RunExit::BudgetExhausted { .. } | RunExit::TimedOut { .. })) =
        (&vm.snapshot_on_stop, &exit)
    {
        vm.write_snapshot(path)?;
        log::info!("snapshot written to {}", path.display());
    }
    let stats = RunStats {
        instructions: vm.executed().saturating_sub(before),
        instructions_before: before,
        wall: start.elapsed(),
        exits: vm.stats.clone(),
        switches: vm.switch_counts.clone(),
        translated_blocks: vm.translated_blocks(),
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
    input: InputQueue,
    layout: BootLayout,
    max_insns: Option<u64>,
    /// Per vCPU (by id): the instructions it had executed when this run began (those in
    /// the snapshot for `vmm restore`; empty, all 0, for `vmm run`). The budget and the
    /// statistics count from there.
    insns_base: Arc<[u64]>,
    timeout: Option<std::time::Duration>,
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
    host_ctr: Option<vcpu::ctr::CtrConfig>,
    /// Where to write a snapshot when the budget or the timeout ends the run.
    snapshot_on_stop: Option<PathBuf>,
    stats: ExitStats,
    /// With more than one vCPU: the shared state, and (on hart 0 until `run`) the other
    /// harts' VMs.
    smp: Option<Arc<Smp>>,
    secondaries: Vec<GuestVm>,
    /// With more vCPUs than harts on this hart (`--pcpus`): the others and the time slice.
    sched: Option<Sched>,
    /// vCPU switches per hart (after `run`, on hart 0; empty with one vCPU).
    switch_counts: Vec<u64>,
}

/// Instructions per call to [`Vcpu::run`] when there is no budget to respect (short enough
/// for console input to arrive promptly).
const RUN_CHUNK: u64 = 1 << 18;
/// [`RUN_CHUNK`] with more than one vCPU: a running hart wakes idle harts whose timer
/// deadline has passed between runs.
const SMP_RUN_CHUNK: u64 = 1 << 14;

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
        if config.memory_mib == 0 || config.memory_mib > MAX_MEMORY_MIB {
            return Err(Error::InvalidMemorySize {
                mib: config.memory_mib,
                max: MAX_MEMORY_MIB,
            });
        }
        let ram_size = config.memory_mib << 20;
        let ram = RAM_BASE..RAM_BASE + ram_size;
        let kernel_data = match config.kernel_image {
            Some(bytes) => bytes.to_vec(),
            None => std::fs::read(&config.kernel).map_err(|source| Error::ReadProgram {
                path: config.kernel.clone(),
                source,
            })?,
        };
        let initrd_data = match &config.initrd {
            Some(path) => Some(std::fs::read(path).map_err(|source| Error::ReadInitrd {
                path: path.clone(),
                source,
            })?),
            None => None,
        };
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM_BASE), ram_size as usize)])
            .map_err(|source| Error::GuestMemory {
                mib: config.memory_mib,
                source,
            })?;

        let kernel_err = |source| Error::Kernel {
            path: config.kernel.clone(),
            source,
        };
        let fdt_addr = if ram_size >= 4 * FDT_FROM_END {
            ram.end - FDT_FROM_END
        } else {
            ram.end - FDT_MAX
        };
        // The kernel may use RAM up to the device tree (or the initrd below it).
        let kernel =
            kernel::load_kernel(&kernel_data, &mem, ram.start..fdt_addr).map_err(kernel_err)?;

        let initrd = match (&config.initrd, &initrd_data) {
            (Some(path), Some(data)) => {
                let size = data.len() as u64;
                let room = fdt_addr.saturating_sub(kernel.span.end);
                let start = fdt_addr.checked_sub(size).map(|a| a & !(PAGE - 1));
                match start {
                    Some(start) if start >= kernel.span.end => {
                        mem.write_slice(data, GuestAddress(start)).map_err(|e| {
                            Error::Fdt(format!("cannot write the initrd to guest RAM: {e}"))
                        })?;
                        Some(start..start + size)
                    }
                    _ => {
                        return Err(Error::InitrdTooBig {
                            path: path.clone(),
                            size,
                            room,
                        })
                    }
                }
            }
            _ => None,
        };

        if config.vcpus == 0 || config.vcpus > MAX_VCPUS {
            return Err(Error::InvalidVcpus {
                vcpus: config.vcpus,
                max: MAX_VCPUS,
            });
        }
        // The host hart model's CTR, and what the guest may use of it (refused here, before
        // the guest starts, if nothing fits).
        let host_ctr = (!config.host_ctr_depths.is_empty()).then(|| vcpu::ctr::CtrConfig {
            depths: config.host_ctr_depths.bits(),
            ..vcpu::ctr::CtrConfig::full()
        });
        let ctr_policy = if config.ctr {
            ctr_virt::CtrPolicy::on(config.ctr_depths, host_ctr.as_ref())?
        } else {
            ctr_virt::CtrPolicy::off()
        };
        let pmu_policy = match (config.pmu, config.pmu_deleg) {
            (true, deleg) => {
                let mut p = pmu_virt::PmuPolicy {
                    lcofi: config.lcofi_delivery,
                    snapshot: config.pmu_snapshot,
                    ..pmu_virt::PmuPolicy::with_hpm_counters(config.pmu_counters)
                        .ok_or(Error::PmuCounters(config.pmu_counters))?
                }
                .with_deleg(deleg);
                p.sampling.sspesa = config.sspesa;
                p.sampling.pdis = config.pdis;
                p
            }
            (false, false) => pmu_virt::PmuPolicy::off(),
            (false, true) => return Err(Error::PmuDelegWithoutPmu),
        };
        let fw = pmu_virt::FwTallies::new(config.vcpus as usize);
        let blob = fdt::build(&fdt::FdtConfig {
            cpus: config.vcpus,
            ram_base: RAM_BASE,
            ram_size,
            cmdline: config.cmdline.clone(),
            initrd: initrd.as_ref().map(|r| (r.start, r.end)),
            ctr: ctr_policy.enabled,
            pmu: pmu_policy,
        })
        .map_err(|e| Error::Fdt(e.to_string()))?;
        if blob.len() as u64 > FDT_MAX {
            return Err(Error::Fdt(format!(
                "the device tree is {} bytes, more than the {FDT_MAX} reserved for it \
                 (is the command line very long?)",
                blob.len()
            )));
        }
        mem.write_slice(&blob, GuestAddress(fdt_addr))
            .map_err(|e| Error::Fdt(format!("cannot write the device tree to RAM: {e}")))?;

        let clock = (config.vcpus > 1).then(|| Arc::new(SharedClock::new()));
        let new_hart = |hart_id: u64| -> Result<Hart, Error> {
            let hart_config = HartConfig {
                hart_id,
                mmio: vec![MmioRange {
                    base: UART_BASE,
                    size: UART_SIZE,
                }],
                shared_clock: clock.clone(),
                ctr: host_ctr.clone(),
                jit: config.jit,
                jit_perf_map: config.perf_map,
                ..HartConfig::default()
            };
            let mut hart = Hart::new_guest(hart_config, mem.clone())?;
            hart.set_trace(config.trace);
            vinsn::apply(&mut hart, &policy);
            Ok(hart)
        };
        let mut harts = (0..config.vcpus)
            .map(new_hart)
            .collect::<Result<Vec<_>, _>>()?;
        let hart = &mut harts[0];
        Vcpu::set_pc(hart, kernel.entry);
        Vcpu::set_xreg(hart, 10, HART_ID);
        Vcpu::set_xreg(hart, 11, fdt_addr);
        log::debug!(
            "run: {:?} kernel at {:#x?}, entry {:#x}, initrd {:#x?}, fdt at {fdt_addr:#x}",
            kernel.format,
            kernel.span,
            kernel.entry,
            initrd
        );

        let layout = BootLayout {
            entry: kernel.entry,
            kernel: kernel.span,
            initrd,
            fdt: fdt_addr,
        };
        // vCPU v runs on hart instance v % pcpus; the first pcpus harts are the instances.
        let pcpus = config.pcpus.unwrap_or(config.vcpus);
        if pcpus == 0 || pcpus > config.vcpus {
            return Err(Error::InvalidPcpus {
                pcpus,
                vcpus: config.vcpus,
            });
        }
        if config.slice_insns == 0 {
            return Err(Error::InvalidSlice);
        }
        let smp = clock.map(|clock| {
            let mailboxes = harts.iter().map(|h| h.mailbox()).collect();
            let stops = harts[..pcpus as usize]
                .iter()
                .map(|h| h.stop_handle())
                .collect();
            Arc::new(Smp::new(clock, mailboxes, stops))
        });
        let uart = Arc::new(Mutex::new(Uart::new(console)));
        let input = InputQueue::default();
        let vm = |hart: Hart, hart_id: u64, (ctr, pmu): VcpuVirt| GuestVm {
            hart,
            memory_mib: config.memory_mib,
            hart_id,
            mem: mem.clone(),
            uart: uart.clone(),
            input: input.clone(),
            layout: layout.clone(),
            max_insns: config.max_insns,
            insns_base: Arc::from(Vec::new()),
            timeout: config.timeout,
            policy,
            ctr,
            pmu,
            fw: fw.clone(),
            api: None,
            pause: None,
            host_ctr: host_ctr.clone(),
            snapshot_on_stop: config.snapshot_on_stop.clone(),
            stats: ExitStats::default(),
            smp: smp.clone(),
            secondaries: Vec::new(),
            sched: None,
            switch_counts: Vec::new(),
        };
        let vcpus = (0..)
            .zip(harts)
            .map(|(id, mut hart)| {
                let ctr = ctr_virt::GuestCtr::new(ctr_policy);
                ctr.prepare(&mut hart);
                let pmu = pmu_virt::GuestPmu::new(pmu_policy, id as usize, fw.clone());
                pmu.prepare(&mut hart);
                (id, hart, (ctr, pmu))
            })
            .collect();
        let mut instances = place_vcpus(vcpus, pcpus, config.slice_insns, |_| true, vm).into_iter();
        let Some(mut boot) = instances.next() else {
            return Err(Error::InvalidVcpus {
                vcpus: config.vcpus,
                max: MAX_VCPUS,
            });
        };
        boot.secondaries = instances.collect();
        if let Some(path) = &config.api_sock {
            boot.attach_api(path, false)?;
        }
        Ok(boot)
    }

    /// Opens the control socket at `path` for this VM (the first hart instance, with the
    /// others in `secondaries`): every instance gets its link to the pause state.
    /// `paused`: every instance parks before its first instruction.
    pub(crate) fn attach_api(&mut self, path: &std::path::Path, paused: bool) -> Result<(), Error> {
        let instances = std::iter::once(&*self).chain(&self.secondaries);
        let stops = instances.map(|vm| vm.hart.stop_handle()).collect();
        let ctl = Arc::new(PauseCtl::new(stops, self.smp.clone(), paused));
        let vcpus = self.smp.as_ref().map_or(1, |s| s.hart_count());
        let api = api::VmApi::spawn(path, ctl.clone(), self.common(), vcpus)?;
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
        self.api = Some(api);
        Ok(())
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
                Err(e) => smp.finish(Err(Error::VcpuThread(format!("cannot start it: {e}")))),
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
                Err(_) => smp.finish(Err(Error::VcpuThread("it panicked".into()))),
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
    fn wait_for_start(&mut self, smp: &Smp) -> bool {
        loop {
            match smp.wait_for_start(self.hart_id, &|| self.pause_requested()) {
                StartWait::Start((pc, opaque)) => {
                    self.hart.guest_start(pc, self.hart_id, opaque);
                    return true;
                }
                StartWait::Ended => return false,
                StartWait::Paused => self.pause_point(),
            }
        }
    }

    /// The run loop of one hart.
    fn run_hart(&mut self) -> Result<RunExit, Error> {
        let run_chunk = if self.smp.is_some() {
            SMP_RUN_CHUNK
        } else {
            RUN_CHUNK
        };
        let deadline = self.timeout.map(|t| (t, Instant::now() + t));
        loop {
            self.pause_point();
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
                    return Ok(RunExit::Quit);
                }
                if smp.ended() {
                    // Whoever ended the VM recorded how.
                    return Err(Error::Stopped {
                        hart: self.hart_id,
                        pc: Vcpu::pc(&self.hart),
                    });
                }
            }
            if !self.reschedule()? {
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
            self.feed_uart();
            let before = self.hart.executed();
            let exit = Vcpu::run(&mut self.hart, chunk);
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

    /// Moves pending console input into the UART's receive FIFO, as much as fits.
    fn feed_uart(&mut self) {
        if self.input.is_empty() {
            return;
        }
        let mut buf = [0u8; 64];
        let mut uart = self.uart.lock().unwrap_or_else(|e| e.into_inner());
        let room = uart.input_room().min(buf.len());
        let n = self.input.pop_into(&mut buf[..room]);
        uart.enqueue_input(&buf[..n]);
    }

    /// Acts on one exit; returns the run's end if this exit is one.
    fn handle_exit(&mut self, exit: VcpuExit) -> Result<Option<RunExit>, Error> {
        match exit {
            VcpuExit::Mmio(access) => {
                self.mmio(access);
                Ok(None)
            }
            VcpuExit::Wfi => {
                self.stats.count("wfi");
                if self.idle() {
                    Ok(None)
                } else {
                    let pc = Vcpu::pc(&self.hart).wrapping_sub(4);
                    Err(Error::WaitForever {
                        hart: self.hart_id,
                        pc,
                    })
                }
            }
            VcpuExit::BudgetExhausted => Ok(None),
            VcpuExit::StopRequested => {
                if self.input.quit_requested() {
                    Ok(Some(RunExit::Quit))
                } else if self.smp.is_some() || self.pause.is_some() {
                    // Another hart ended the VM (the loop sees it), a pause of the control
                    // socket (the loop parks at its top), or a stale request.
                    Ok(None)
                } else {
                    Err(Error::Stopped {
                        hart: HART_ID,
                        pc: Vcpu::pc(&self.hart),
                    })
                }
            }
            VcpuExit::GuestTrap(trap) => self.guest_trap(trap),
            VcpuExit::HostInterrupt(irq) => self.host_interrupt(irq),
        }
    }

    /// An HS-level interrupt left the guest. The only one the hart raises in hosted mode is
    /// the LCOFI of selective delivery ([`pmu_virt::lcofi`]): passed on to the guest
    /// through `hvip` when one of its counters overflowed.
    fn host_interrupt(&mut self, irq: u64) -> Result<Option<RunExit>, Error> {
        if irq != pmu_virt::lcofi::LCOFIP.trailing_zeros() as u64 {
            return Err(Error::UnexpectedInterrupt {
                hart: self.hart_id,
                irq,
            });
        }
        match self.pmu.take_lcofi(&mut self.hart) {
            pmu_virt::LcofiOutcome::Injected => self.stats.count("interrupt LCOFI to guest (hvip)"),
            pmu_virt::LcofiOutcome::Spurious => self.stats.count("interrupt LCOFI spurious"),
        }
        Ok(None)
    }

    /// After a WFI: waits (in virtual time) until the hart can wake; `false` when nothing can
    /// ever wake it (with several vCPUs: when every started hart idles without a timer).
    fn idle(&mut self) -> bool {
        match &self.smp {
            None => self.hart.skip_to_timer(),
            Some(smp) if self.sched.is_some() => {
                // Off the hart until something wakes it (`reschedule`), unless something
                // already has.
                if self.hart.wakeup_pending() {
                    return true;
                }
                let deadline = self.hart.timer_deadline_slots().unwrap_or(u64::MAX);
                if deadline <= smp.clock.now() {
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
                let end = smp.idle(
                    self.hart_id,
                    &self.hart,
                    &|| input.quit_requested(),
                    &|| self.pause_requested(),
                );
                match end {
                    Ok(IdleEnd::Woke) => return true,
                    // Parks (still waiting), then waits on.
                    Ok(IdleEnd::Paused) => self.pause_point(),
                    Err(()) => return false,
                }
            },
        }
    }

    /// Routes an MMIO access (the UART is the only device).
    fn mmio(&mut self, access: MmioAccess) {
        let MmioAccess { addr, size, write } = access;
        let in_uart = MmioRange {
            base: UART_BASE,
            size: UART_SIZE,
        }
        .contains(addr, u64::from(size));
        let value = match (in_uart, write) {
            (true, Some(v)) => {
                self.stats.count("mmio uart write");
                self.uart().write(addr - UART_BASE, size, v);
                0
            }
            (true, None) => {
                self.stats.count("mmio uart read");
                self.uart().read(addr - UART_BASE, size)
            }
            (false, _) => {
                self.stats.count("mmio other");
                log::warn!("{size}-byte access at {addr:#x} outside any device; ignored");
                0
            }
        };
        if write.is_none() {
            let mask = if size >= 8 {
                u64::MAX
            } else {
                (1u64 << (8 * size)) - 1
            };
            Vcpu::complete_mmio_read(&mut self.hart, value & mask);
        }
    }

    /// Handles a trap the guest could not take itself.
    fn guest_trap(&mut self, trap: GuestTrap) -> Result<Option<RunExit>, Error> {
        match trap.cause {
            cause::ECALL_VS => return self.sbi_call(trap),
            cause::VIRTUAL_INSN => {
                self.stats.count(stats::virtual_insn_reason(trap.insn));
                return self.virtual_insn(trap);
            }
            cause::FETCH_ACCESS | cause::LOAD_ACCESS | cause::STORE_ACCESS => {
                if let Some(ev) = firmware_event_of(trap.cause) {
                    self.fw.record(self.hart_id, ev);
                }
                self.stats.count(format!("access-fault {}", trap.cause));
                self.inject(trap.cause, trap.tval);
            }
            cause::FETCH_GUEST_PAGE_FAULT
            | cause::LOAD_GUEST_PAGE_FAULT
            | cause::STORE_GUEST_PAGE_FAULT => {
                self.stats.count(format!("guest-page-fault {}", trap.cause));
                let page_fault = match trap.cause {
                    cause::FETCH_GUEST_PAGE_FAULT => cause::FETCH_PAGE_FAULT,
                    cause::LOAD_GUEST_PAGE_FAULT => cause::LOAD_PAGE_FAULT,
                    _ => cause::STORE_PAGE_FAULT,
                };
                self.inject(page_fault, trap.tval);
            }
            other => {
                self.stats.count(format!("trap {other}"));
                if let Some(ev) = firmware_event_of(other) {
                    self.fw.record(self.hart_id, ev);
                }
                log::warn!(
                    "guest trap {other} at pc={:#x} (tval {:#x}, insn {:#x}) injected into the guest",
                    trap.pc,
                    trap.tval,
                    trap.insn
                );
                self.inject(other, trap.tval);
            }
        }
        Ok(None)
    }

    /// A virtual-instruction exit: emulates what the policy traps, injects an
    /// illegal-instruction exception for the rest, and records the exit.
    fn virtual_insn(&mut self, trap: GuestTrap) -> Result<Option<RunExit>, Error> {
        let next = trap.pc.wrapping_add(4);
        let ctr = match self
            .ctr
            .on_virtual_insn(&mut self.hart, trap.insn, trap.from_vu)
        {
            ctr_virt::Outcome::NotCtr => None,
            ctr_virt::Outcome::Emulated => {
                self.stats.count("ctr sctrdepth emulated");
                Some(VirtualInsnAction::EmulatedCtrDepth)
            }
            ctr_virt::Outcome::Retry => {
                self.stats.count("ctr lazy load");
                Some(VirtualInsnAction::CtrLoaded)
            }
            ctr_virt::Outcome::InjectIllegal => {
                self.fw.record(self.hart_id, pmu_virt::FwEvent::IllegalInsn);
                self.inject(cause::ILLEGAL_INSN, u64::from(trap.insn));
                Some(VirtualInsnAction::InjectedIllegal)
            }
        };
        // Counter delegation first: with it, `scountovf` is the delegated counters' view.
        if let Some(action) = ctr
            .or_else(|| self.pmu_deleg(&trap))
            .or_else(|| self.sampling_virtual_insn(&trap))
        {
            self.record_virtual_insn(&trap, action);
            return Ok(None);
        }
        let time_rd = vinsn::time_read_rd(trap.insn)
            .filter(|_| !trap.from_vu || vinsn::vu_may_read_time(&self.hart));
        let (action, result) = if self.policy.trap_wfi && !trap.from_vu && trap.insn == vinsn::WFI {
            let result = if self.idle() {
                Vcpu::set_pc(&mut self.hart, next);
                Ok(None)
            } else {
                Err(Error::WaitForever {
                    hart: self.hart_id,
                    pc: trap.pc,
                })
            };
            (VirtualInsnAction::EmulatedWfi, result)
        } else if let (true, Some(rd)) = (self.policy.trap_time, time_rd) {
            let now = Vcpu::guest_time(&self.hart);
            Vcpu::set_xreg(&mut self.hart, rd, now);
            Vcpu::set_pc(&mut self.hart, next);
            (VirtualInsnAction::EmulatedTime, Ok(None))
        } else {
            self.fw.record(self.hart_id, pmu_virt::FwEvent::IllegalInsn);
            self.inject(cause::ILLEGAL_INSN, u64::from(trap.insn));
            (VirtualInsnAction::InjectedIllegal, Ok(None))
        };
        self.record_virtual_insn(&trap, action);
        result
    }

    fn record_virtual_insn(&mut self, trap: &GuestTrap, action: VirtualInsnAction) {
        self.stats.record_virtual_insn(VirtualInsnExit {
            cause: trap.cause,
            tval: trap.tval,
            htval: trap.htval,
            htinst: trap.htinst,
            insn: trap.insn,
            pc: trap.pc,
            from_vu: trap.from_vu,
            action,
        });
    }

    /// Redirect an exception into the guest, with the CTR record the guest would see had
    /// the trap been delegated to it (ctr-virt).
    fn inject(&mut self, cause: u64, tval: u64) {
        let from_vu = Vcpu::guest_privilege(&self.hart) == vcpu::PrivilegeMode::User;
        let epc = Vcpu::pc(&self.hart);
        Vcpu::inject_exception(&mut self.hart, cause, tval);
        // Exceptions go to vstvec's base whatever its MODE.
        let handler = Vcpu::pc(&self.hart);
        let before = self.ctr.stats.synthesized;
        self.ctr
            .synthesize_trap(&mut self.hart, cause, false, from_vu, epc, handler);
        if self.ctr.stats.synthesized != before {
            self.stats.count("ctr record synthesized");
        }
    }

    /// An SBI call (`ECALL` from VS-mode).
    fn sbi_call(&mut self, trap: GuestTrap) -> Result<Option<RunExit>, Error> {
        let call = SbiCall::from_regs(|i| Vcpu::xreg(&self.hart, i));
        self.stats
            .count(format!("sbi {}", sbi::extension_name(call.eid)));
        let outcome = {
            let mut env = PlatformEnv {
                hart: &mut self.hart,
                hart_id: self.hart_id,
                smp: self.smp.as_deref(),
                mem: &self.mem,
                uart: &self.uart,
                input: &self.input,
                pmu: &mut self.pmu,
                fw: &self.fw,
            };
            sbi::handle(&call, &mut env)
        };
        match outcome {
            SbiOutcome::Return(ret) => {
                Vcpu::set_xreg(&mut self.hart, 10, ret.error as u64);
                Vcpu::set_xreg(&mut self.hart, 11, ret.value);
                Vcpu::set_pc(&mut self.hart, trap.pc.wrapping_add(4));
                Ok(None)
            }
            SbiOutcome::Reset(request) => {
                let _ = self.uart().console().flush();
                // The caller reports a failing reset (`RunExit::failure_message`).
                match request.failure_message() {
                    Some(message) => log::debug!("{message}"),
                    None => log::info!(
                        "guest requested {} ({})",
                        request.kind.name(),
                        request.reason_name()
                    ),
                }
                Ok(Some(RunExit::Reset(request)))
            }
            SbiOutcome::HartStopped => match self.smp.clone() {
                None => Err(Error::AllHartsStopped { hart: HART_ID }),
                Some(smp) => {
                    smp.hart_stopped(self.hart_id);
                    match self.sched.as_mut() {
                        // The hart's scheduler runs another vCPU meanwhile.
                        Some(sched) => sched.leave = Some(Leave::Stopped),
                        // The loop notices the end if the VM ends meanwhile.
                        None => {
                            self.wait_for_start(&smp);
                        }
                    }
                    Ok(None)
                }
            },
        }
    }
}

/// The platform as the SBI implementation sees it.
struct PlatformEnv<'a> {
    hart: &'a mut Hart,
    hart_id: u64,
    smp: Option<&'a Smp>,
    mem: &'a GuestMemoryMmap,
    uart: &'a Mutex<Uart>,
    input: &'a InputQueue,
    pmu: &'a mut pmu_virt::GuestPmu,
    fw: &'a pmu_virt::FwTallies,
}

impl PlatformEnv<'_> {
    fn uart(&self) -> MutexGuard<'_, Uart> {
        self.uart.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SbiEnv for PlatformEnv<'_> {
    fn hart_count(&self) -> u64 {
        self.smp.map_or(1, Smp::hart_count)
    }

    fn current_hart(&self) -> u64 {
        self.hart_id
    }

    fn hart_start(&mut self, hart: u64, start_addr: u64, opaque: u64) -> SbiRet {
        match self.smp {
            Some(_) if !self.mem.address_in_range(GuestAddress(start_addr)) => {
                SbiRet::err(sbi::SBI_ERR_INVALID_ADDRESS)
            }
            Some(smp) => smp.hart_start(hart, start_addr, opaque),
            None => SbiRet::err(sbi::SBI_ERR_ALREADY_AVAILABLE),
        }
    }

    fn hart_status(&self, hart: u64) -> u64 {
        match self.smp {
            Some(smp) => {
                // A poll of another vCPU's state: let it run first (`run/smp.rs`).
                smp.yield_to(self.hart_id, hart);
                smp.hart_status(hart)
            }
            None => sbi::hsm::STATE_STARTED,
        }
    }

    fn remote_fence(&mut self, harts: &[u64]) {
        // Every hart in the mask is fenced, the caller included (SBI v2.0 chapter 8): Linux
        // relies on it when its mask holds the local hart and others. The caller's request
        // is taken before its next instruction (`Hart::run` starts with its mailbox).
        if harts.contains(&self.hart_id) {
            self.hart.mailbox().request_flush();
        }
        if let Some(smp) = self.smp {
            smp.remote_fence(self.hart_id, harts);
        }
    }

    fn set_timer(&mut self, deadline: u64) {
        Vcpu::set_guest_timer(self.hart, deadline);
        let hvip = Vcpu::virtual_interrupts(self.hart);
        Vcpu::set_virtual_interrupts(self.hart, hvip & !VSTIP);
    }

    fn send_ipi(&mut self, hart: u64) {
        match self.smp {
            Some(smp) if hart != self.hart_id => smp.send_ipi(hart, VSSIP),
            _ => {
                let hvip = Vcpu::virtual_interrupts(self.hart);
                Vcpu::set_virtual_interrupts(self.hart, hvip | VSSIP);
            }
        }
    }

    fn memory(&self) -> &GuestMemoryMmap {
        self.mem
    }

    fn console_write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut uart = self.uart();
        let out = uart.console();
        out.write_all(bytes)?;
        out.flush()?;
        Ok(bytes.len())
    }

    fn console_read(&mut self, buf: &mut [u8]) -> usize {
        // Bytes already in the UART's FIFO are older than those in the queue.
        let n = self.uart().take_input(buf);
        n + self.input.pop_into(&mut buf[n..])
    }

    fn has_pmu(&self) -> bool {
        self.pmu.policy().enabled
    }

    fn pmu_call(&mut self, fid: u64, args: [u64; 6]) -> SbiRet {
        match self.pmu.sbi_call(self.hart, self.mem, fid, args) {
            Ok(value) => SbiRet::ok(value),
            Err(e) => {
                log::debug!("sbi: PMU fid {fid} {args:#x?}: {e}");
                SbiRet::err(e.sbi_error())
            }
        }
    }

    fn firmware_event(&mut self, hart: u64, event: pmu_virt::FwEvent) {
        self.fw.record(hart, event);
    }
}

/// The firmware event of a trap the VMM redirects into the guest (SBI PMU firmware events
/// 0-3: misaligned and access-fault loads and stores).
fn firmware_event_of(cause: u64) -> Option<pmu_virt::FwEvent> {
    match cause {
        4 => Some(pmu_virt::FwEvent::MisalignedLoad),
        6 => Some(pmu_virt::FwEvent::MisalignedStore),
        cause::LOAD_ACCESS => Some(pmu_virt::FwEvent::AccessLoad),
        cause::STORE_ACCESS => Some(pmu_virt::FwEvent::AccessStore),
        _ => None,
    }
}

/// A vCPU's hypervisor-side state besides its hart: its CTR and its PMU.
pub(crate) type VcpuVirt = (ctr_virt::GuestCtr, pmu_virt::GuestPmu);

#[cfg(test)]
mod tests;

/// Puts vCPUs (`(id, hart, (ctr, pmu))`, by id) on `pcpus` hart instances: vCPU `v` runs on
/// instance `v % pcpus`, whose hart is vCPU `v % pcpus`'s; the others' states are parked
/// there (`preempted(id)`: whether the vCPU could run when parked). `make` builds an
/// instance from a hart, the id of the vCPU on it and its CTR.
fn place_vcpus(
    vcpus: Vec<(u64, Hart, VcpuVirt)>,
    pcpus: u64,
    slice: u64,
    preempted: impl Fn(u64) -> bool,
    make: impl Fn(Hart, u64, VcpuVirt) -> GuestVm,
) -> Vec<GuestVm> {
    let mut instances: Vec<GuestVm> = Vec::new();
    for (id, hart, (ctr, pmu)) in vcpus {
        if id < pcpus {
            instances.push(make(hart, id, (ctr, pmu)));
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
