//! The options of `vmm run` ([`RunConfig`], one field per command-line option) and the
//! built-in CTR self-test guest ([`CTR_DEMO_GUEST`]). [`super::builder`] checks them.

use std::path::PathBuf;

use super::{DEFAULT_MEMORY_MIB, DEFAULT_SLICE_INSNS};

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
    /// RAM size in MiB (1..=[`MAX_MEMORY_MIB`](crate::machine::MAX_MEMORY_MIB)).
    pub memory_mib: u64,
    /// Stop after this many instructions; `None` runs until the guest ends the run.
    pub max_insns: Option<u64>,
    /// Stop after this much wall-clock time; `None`: no limit.
    pub timeout: Option<std::time::Duration>,
    /// Log every instruction at trace level.
    pub trace: bool,
    /// `--trace-insns`/`--trace-pcs`: which instructions `trace` prints.
    pub trace_range: vcpu_api::TraceRange,
    /// `--trace-exits`: the classes of exits to trace (`run/trace.rs`; 0: none).
    pub trace_exits: u32,
    /// `--symbols`: the guest's symbols, for the pcs of the exit trace (never taken from
    /// the kernel by default: a Linux `Image` has none).
    pub symbols: Option<std::sync::Arc<crate::symbols::Symbols>>,
    /// Number of vCPUs (1..=[`MAX_VCPUS`](super::MAX_VCPUS)).
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
    /// `--sstc on|off`: whether the guest has Sstc (its `stimecmp` is the hart's
    /// `vstimecmp`, `sstc` in the device tree), unless `--trap time` traps its `time` reads
    /// ([`super::GuestPolicy::sstc_offered`]). Either way the SBI TIME extension stays.
    pub sstc: bool,
    /// `--clock host|virtual`: where guest time comes from (`vmm run`'s command line
    /// defaults to host time; this default, virtual time, keeps library users and tests
    /// deterministic).
    pub clock: vcpu_api::ClockMode,
    /// `--jit on|off`: block translation in the harts (see `vcpu`'s `jit` module).
    pub jit: bool,
    /// `--perf-map`: name translated blocks in `/tmp/perf-PID.map` for a host `perf`.
    pub perf_map: bool,
    /// `--api-sock`: the control socket's path (`run/api.rs`).
    pub api_sock: Option<PathBuf>,
    /// `--snapshot-on-stop`: when the instruction budget or the timeout ends the run, write a
    /// snapshot here (for `vmm restore`).
    pub snapshot_on_stop: Option<PathBuf>,
    /// `--gdb`/`--gdb-wait`: a gdb remote stub, every vCPU a gdb thread (`run/gdb.rs`).
    pub gdb: Option<crate::gdb::listen::GdbOptions>,
    /// `--aia aplic-imsic|none`: the guest's interrupt controllers (`run/aia.rs`; `vmm
    /// run`'s command line defaults to `aplic-imsic`; this default, none, keeps library
    /// users and the tests written before AIA as they were).
    pub aia: super::aia::AiaMode,
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
            trace_range: vcpu_api::TraceRange::default(),
            trace_exits: 0,
            symbols: None,
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
            sstc: true,
            clock: vcpu_api::ClockMode::Virtual,
            jit: true,
            perf_map: false,
            api_sock: None,
            snapshot_on_stop: None,
            gdb: None,
            aia: super::aia::AiaMode::None,
        }
    }
}
