//! The `vmm` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use log::LevelFilter;
use vmm::gdb::listen::GdbOptions;
use vmm::machine::{self, MachineConfig, MachineExit};
use vmm::run::{self as runner, ConsoleInput, RunConfig, RunExit};

/// Exit status when the instruction budget or the time limit runs out (like `timeout(1)`).
const EXIT_BUDGET: u8 = 124;
/// Exit status for VMM errors.
const EXIT_ERROR: u8 = 1;

#[derive(Parser, Debug)]
#[command(
    name = "vmm",
    version,
    about = "A minimal VMM for the vcpu RISC-V hart model"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a bare-metal RV64 ELF executable on a machine laid out like QEMU's `virt`
    ///
    /// The same file runs under `qemu-system-riscv64 -M virt -bios none -kernel PROGRAM`.
    /// The exit status is the guest's (SiFive test finisher or HTIF), 124 when the
    /// instruction budget or the --timeout runs out, and 1 on errors.
    Machine(MachineArgs),

    /// Boot a guest kernel (RV64 ELF or Linux riscv64 Image) in VS-mode, with SBI v2.0
    ///
    /// RAM at 0x8000_0000, an ns16550a UART at 0x1000_0000 (polled), a device tree in a1.
    /// Console: the UART and SBI DBCN on stdout; stdin feeds both (raw mode on a terminal:
    /// Ctrl-A x kills the VM, Ctrl-A h lists the escapes). Exit status: 0 when the guest
    /// shuts down (SBI SRST) with no reason, 1 for a shutdown with a failure reason and for
    /// errors, 3 when the guest asks for a reboot (a Linux panic with panic=-1 does), 124
    /// when the instruction budget or the timeout runs out, 130 for Ctrl-A x, 128 + the
    /// signal's number when SIGHUP, SIGINT or SIGTERM kills the VMM (129, 130, 143; the
    /// terminal is restored and the --api-sock file removed).
    Run(RunArgs),

    /// Restore a VM from a snapshot (taken through `--api-sock`) and run it on
    /// this host: the host hart model is given by --host-ctr-depths; a snapshot this host
    /// cannot hold (a CTR depth it lacks, a corrupted or truncated file, another format
    /// version) is refused before the guest runs. Exit status as for `run`.
    Restore(RestoreArgs),

    /// Wait for one VM moved here by another vmm (its control socket's `migrate`) and run it
    ///
    /// Listens on --listen (unix:PATH or tcp:HOST:PORT), tells the source what this host's
    /// hart can hold (--host-ctr-depths), receives the VM, checks it as `vmm restore` checks
    /// a snapshot, and only then lets the source go; the guest's console continues here. A
    /// bad stream or a VM this host cannot hold is refused (the source's guest goes on
    /// there) and nothing runs: exit status 1. Otherwise the exit status is as for `run`.
    Receive(ReceiveArgs),

    /// Send one request to a VM's control socket (--api-sock) and print the answer
    ///
    /// Readable text by default, the JSON answer with --json. Exit status 0 when the VM
    /// carried the request out, 1 when it refused it (the reason on stderr) or could not be
    /// reached.
    Ctl(CtlArgs),
}

/// `vmm ctl`'s flags and request.
#[derive(Args, Debug)]
struct CtlArgs {
    /// The VM's control socket
    #[arg(long, value_name = "PATH")]
    api_sock: PathBuf,

    /// Print the JSON answer instead of text
    #[arg(long)]
    json: bool,

    #[command(subcommand)]
    request: CtlCommand,
}

/// A request of `vmm ctl`.
#[derive(Subcommand, Debug)]
enum CtlCommand {
    /// Stop every vCPU between two instructions
    Pause,
    /// Let them run again
    Resume,
    /// Instructions, per-vCPU state and the exit counts
    Stats,
    /// Write a snapshot of the whole VM to FILE (for `vmm restore`)
    Snapshot {
        /// The file
        file: String,
    },
    /// A vCPU's CTR records, youngest first
    CtrDump {
        /// The vCPU (default 0)
        #[arg(default_value_t = 0)]
        vcpu: u64,
        /// Name the records' addresses `function+0xoff` with the guest's symbols, an ELF
        /// file or a System.map (with --json: `source_symbol` and `target_symbol` fields)
        #[arg(long, value_name = "FILE")]
        symbols: Option<PathBuf>,
    },
    /// Move the VM to the `vmm receive` at ADDR (unix:PATH or tcp:HOST:PORT)
    Migrate {
        /// Where the destination listens
        to: String,
        /// The guest's pause budget in milliseconds (default 30; 0: copy until nothing is
        /// dirty or the round limit)
        #[arg(long, value_name = "MS")]
        max_downtime_ms: Option<u64>,
    },
    /// Stop the VM (the vmm process ends with status 0), writing a snapshot first if asked
    Quit {
        /// Write a snapshot of the VM to FILE first (for `vmm restore`)
        #[arg(long, value_name = "FILE")]
        snapshot: Option<String>,
    },
    /// Switch exit tracing (`--trace-exits`, on the VMM's stderr) on or off
    TraceExits {
        /// on or off
        #[arg(value_name = "on|off", value_parser = parse_on_off, action = clap::ArgAction::Set)]
        on: bool,
        /// The classes: all, or some of sbi,vinsn,mmio,wfi,irq,fault
        #[arg(long, value_name = "FILTER")]
        filter: Option<String>,
    },
    /// Make an interrupt pending (or clear it) for a vCPU, or make it take an exception
    Inject {
        /// The vCPU
        #[arg(long, default_value_t = 0)]
        vcpu: u64,
        /// The guest's supervisor software (ssi) or external (sei) interrupt
        #[arg(
            long,
            value_name = "ssi|sei",
            conflicts_with = "exception",
            required_unless_present = "exception"
        )]
        irq: Option<String>,
        /// Clear the interrupt instead
        #[arg(long, requires = "irq")]
        clear: bool,
        /// An exception code (0-7, 12, 13, 15), taken at the vCPU's current pc
        #[arg(long, value_name = "CAUSE")]
        exception: Option<u64>,
        /// The exception's stval
        #[arg(long, value_name = "V", default_value_t = 0, requires = "exception", value_parser = parse_u64)]
        tval: u64,
    },
}

/// A number, decimal or 0x-hex.
fn parse_u64(s: &str) -> Result<u64, String> {
    let parsed = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|_| format!("not a number: {s}"))
}

/// `vmm receive`'s flags: where to listen, `--paused`, and the flags of `vmm restore`.
#[derive(Args, Debug)]
#[command(
    mut_arg("host_ctr_depths", |a| a
        .help("The CTR depths this host's hart supports")
        .display_order(1)),
    mut_arg("max_insns", |a| a
        .help("Stop after N more instructions (exit status 124)")
        .display_order(2)),
    mut_arg("timeout", |a| a
        .help("Stop after SECS seconds of wall-clock time once the VM runs (exit status 124)")
        .display_order(3)),
    mut_arg("api_sock", |a| a.help("A control socket, as for `run`").display_order(4)),
    mut_arg("snapshot_on_stop", |a| a
        .help("As for `run`: a snapshot when --max-insns or --timeout ends the run")
        .display_order(5)),
    mut_arg("pcpus", |a| a
        .help("Hart instances for the VM's vCPUs, 1 to their number (default: one per vCPU)")
        .display_order(7)),
    mut_arg("slice_insns", |a| a.display_order(8)),
    mut_arg("jit", |a| a.help("Block translation, as for `run`").display_order(9)),
    mut_arg("perf_map", |a| a.display_order(10)),
    mut_arg("stats", |a| a
        .help("Print instructions, wall time, MIPS and the exit table on stderr")
        .display_order(11)),
    mut_arg("trace", |a| a.display_order(12)),
    mut_arg("trace_exits", |a| a.display_order(13)),
    mut_arg("gdb", |a| a.display_order(14)),
    mut_arg("gdb_wait", |a| a.display_order(15)),
    mut_arg("symbols", |a| a
        .help("The guest's symbols (an ELF file or a System.map) for the pcs of --trace-exits, as for `run`")
        .display_order(100)),
)]
struct ReceiveArgs {
    /// Where to wait for the VM: unix:PATH or tcp:HOST:PORT (port 0: any, printed on stderr)
    #[arg(long, value_name = "ADDR", display_order = 0, value_parser = parse_endpoint)]
    listen: runner::migrate::Endpoint,

    /// Start the received VM paused, until a `resume` request on the control socket
    /// (--api-sock).
    #[arg(long, display_order = 6)]
    paused: bool,

    #[command(flatten)]
    vm: VmArgs,
}

fn parse_gdb_endpoint(s: &str) -> Result<runner::migrate::Endpoint, String> {
    s.parse().map_err(|_: runner::migrate::MigrateError| {
        format!("{s:?} is not an address to listen on: tcp:HOST:PORT or unix:PATH")
    })
}

fn parse_endpoint(s: &str) -> Result<runner::migrate::Endpoint, String> {
    s.parse()
        .map_err(|e: runner::migrate::MigrateError| e.to_string())
}

/// `vmm restore`'s flags: the snapshot, `--paused`, and those it shares with `vmm run`
/// ([`VmArgs`]), some with help of its own.
#[derive(Args, Debug)]
#[command(
    mut_arg("host_ctr_depths", |a| a
        .help("The CTR depths this host's hart supports")
        .display_order(1)),
    mut_arg("max_insns", |a| a
        .help("Stop after N more instructions (exit status 124)")
        .display_order(2)),
    mut_arg("timeout", |a| a
        .help("Stop after SECS seconds of wall-clock time (exit status 124)")
        .display_order(3)),
    mut_arg("api_sock", |a| a.help("A control socket, as for `run`").display_order(4)),
    mut_arg("snapshot_on_stop", |a| a
        .help("As for `run`: a snapshot when --max-insns or --timeout ends the run")
        .display_order(5)),
    mut_arg("pcpus", |a| a
        .help("Hart instances for the snapshot's vCPUs, 1 to their number (default: one per vCPU)")
        .display_order(7)),
    mut_arg("slice_insns", |a| a.display_order(8)),
    mut_arg("jit", |a| a.help("Block translation, as for `run`").display_order(9)),
    mut_arg("perf_map", |a| a.display_order(10)),
    mut_arg("stats", |a| a
        .help("Print instructions, wall time, MIPS and the exit table on stderr")
        .display_order(11)),
    mut_arg("trace", |a| a.display_order(12)),
    mut_arg("trace_exits", |a| a.display_order(13)),
    mut_arg("gdb", |a| a.display_order(14)),
    mut_arg("gdb_wait", |a| a.display_order(15)),
    mut_arg("symbols", |a| a
        .help("The guest's symbols (an ELF file or a System.map) for the pcs of --trace-exits, as for `run`")
        .display_order(100)),
)]
struct RestoreArgs {
    /// The snapshot file.
    #[arg(long, value_name = "FILE", display_order = 0)]
    snapshot: PathBuf,

    /// Start paused, before the guest's first instruction, until a `resume` request on the
    /// control socket (--api-sock).
    #[arg(long, display_order = 6)]
    paused: bool,

    #[command(flatten)]
    vm: VmArgs,
}

/// `vmm run`'s flags: its own and those it shares with `vmm restore` ([`VmArgs`]), in the
/// order `--help` lists them.
#[derive(Args, Debug)]
#[command(
    mut_arg("max_insns", |a| a.display_order(4)),
    mut_arg("timeout", |a| a.display_order(5)),
    mut_arg("host_ctr_depths", |a| a.display_order(15)),
    mut_arg("api_sock", |a| a.display_order(16)),
    mut_arg("snapshot_on_stop", |a| a.display_order(17)),
    mut_arg("pcpus", |a| a.display_order(19)),
    mut_arg("slice_insns", |a| a.display_order(20)),
    mut_arg("jit", |a| a.display_order(21)),
    mut_arg("perf_map", |a| a.display_order(22)),
    mut_arg("stats", |a| a.display_order(23)),
    mut_arg("trace", |a| a.display_order(24)),
    mut_arg("trace_exits", |a| a.display_order(25)),
    mut_arg("gdb", |a| a.display_order(26)),
    mut_arg("gdb_wait", |a| a.display_order(27)),
    mut_arg("symbols", |a| a.display_order(100)),
)]
struct RunArgs {
    /// The kernel: an RV64 ELF executable or a Linux riscv64 Image. Without it, the
    /// built-in CTR self-test guest runs and prints the transfers it recorded.
    #[arg(long, display_order = 0, value_name = "PATH")]
    kernel: Option<PathBuf>,

    /// An initial RAM disk, placed high in RAM and named in the device tree.
    #[arg(long, display_order = 1, value_name = "PATH")]
    initrd: Option<PathBuf>,

    /// The kernel command line (/chosen/bootargs).
    #[arg(long, display_order = 2, value_name = "STR", default_value = "")]
    cmdline: String,

    /// Guest instructions the VMM traps and emulates, any of: wfi (hstatus.VTW), time
    /// (hcounteren.TM = 0), sret (hstatus.VTSR), vm (hstatus.VTVM: SFENCE.VMA, SINVAL.VMA,
    /// satp), or none, so that every virtual-instruction path can be exercised with any
    /// guest (the exit trace of class vinsn shows them).
    #[arg(long, display_order = 3, value_name = "LIST", default_value = "none", value_parser = parse_trap)]
    trap: runner::GuestPolicy,

    /// RAM size in MiB, mapped at 0x8000_0000.
    #[arg(long, display_order = 3, value_name = "MiB", default_value_t = runner::DEFAULT_MEMORY_MIB, allow_negative_numbers = true, value_parser = parse_memory)]
    memory: u64,

    /// Control Transfer Records for the guest: `on` (ssctr in the device tree, the guest's
    /// CTR context loaded on its first access) or `off` (every CTR access gets
    /// illegal-instruction, as on a machine without CTR).
    #[arg(long, display_order = 6, value_name = "on|off", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    ctr: bool,

    /// Performance monitoring for the guest: `on` (the SBI PMU extension, the hart's
    /// counters and Sscofpmf overflow interrupts; sscofpmf and zihpm in the device tree) or
    /// `off` (no PMU extension).
    #[arg(long, display_order = 7, value_name = "on|off", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pmu: bool,

    /// How the guest's counter-overflow interrupts (LCOFI) reach it: `direct` (hideleg bit
    /// 13 = 1, straight to the guest) or `selective` (hideleg bit 13 = 0: the LCOFI exits to
    /// the VMM, which passes it on through hvien/hvip bit 13).
    #[arg(
        long,
        display_order = 8,
        value_name = "direct|selective",
        default_value = "direct"
    )]
    lcofi_delivery: pmu_virt::LcofiDelivery,

    /// How many of the hart's 29 hpm counters (mhpmcounter3 upwards) the guest gets, 0-29,
    /// besides cycle and instret: fewer models a host that keeps counters for itself (the
    /// guest's perf then multiplexes its events).
    #[arg(long, display_order = 9, value_name = "N", default_value_t = 29, allow_negative_numbers = true, value_parser = parse_pmu_counters)]
    pmu_counters: u32,

    /// Counter delegation (Ssccfg) for the guest: `on` (ssccfg, sscsrind and smcntrpmf in
    /// the device tree; its `sireg*`, `scountinhibit` and `scountovf` accesses are emulated
    /// on virtual counters backed by other hart counters) or `off` (those accesses are
    /// illegal-instruction, as without the extension). Needs `--pmu on`.
    #[arg(long, display_order = 10, value_name = "on|off", default_value = "off", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pmu_deleg: bool,

    /// Sspesa/Ssplcofi for the guest (with `--pmu on`): `on` (the sample registers
    /// shpmspc/shpmsdata emulated from its counters' overflows; sspesa and ssplcofi in the
    /// device tree; menvcfg.CDE is set, so scountovf reads exit and are emulated) or `off`
    /// (illegal-instruction).
    #[arg(long, display_order = 11, value_name = "on|off", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    sspesa: bool,

    /// PDIS (Sspdis, precise decoded instruction sampling) for the guest (with `--pmu on`):
    /// `on` (its PDIS state loaded on its first access through hstateen0.PDIS; sspdis in the
    /// device tree) or `off` (illegal-instruction).
    #[arg(long, display_order = 12, value_name = "on|off", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pdis: bool,

    /// With `--pmu on`: `on` offers the SBI PMU snapshot shared memory
    /// (`sbi_pmu_snapshot_set_shmem`), `off` (the default) answers it with
    /// SBI_ERR_NOT_SUPPORTED (an optional function), so the guest reads `scountovf` and
    /// starts counters one by one (Linux 6.12 restarts overflowed counters with an invalid
    /// counter set when it has the snapshot, and `perf record` loses samples).
    #[arg(long, display_order = 13, value_name = "on|off", default_value = "off", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pmu_snapshot: bool,

    /// Sstc for the guest: `on` (its stimecmp is the hart's vstimecmp, compared with
    /// time + htimedelta: timer interrupts without an exit; sstc in the device tree) or
    /// `off` (stimecmp accesses are illegal-instruction; the guest uses the SBI TIME
    /// extension, which it keeps either way). Not offered with `--trap time`.
    #[arg(long, display_order = 13, value_name = "on|off", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    sstc: bool,

    /// The guest's interrupt controllers: `aplic-imsic` (the default: an IMSIC guest
    /// interrupt file per vCPU at 0x2800_0000, one page each, and an APLIC domain in MSI
    /// mode at 0x0d00_0000 with the UART as source 10: an interrupt-driven console and IPIs
    /// by MSI; ssaia in the device tree) or `none` (no interrupt controller: a polled UART,
    /// SBI IPIs). Kept in snapshots and migration.
    #[arg(long, display_order = 13, value_name = "aplic-imsic|none", default_value = "aplic-imsic", value_parser = parse_run_aia)]
    aia: vmm::run::aia::AiaMode,

    /// The CTR depths the guest may select, e.g. `16,64` (default: the migration-safe
    /// 16,32,64), intersected with the host's; refused when nothing is left.
    #[arg(long, display_order = 14, value_name = "LIST", value_parser = parse_depths)]
    ctr_depths: Option<ctr_virt::DepthSet>,

    /// Number of vCPUs (1-64).
    #[arg(long, display_order = 18, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = parse_vcpus)]
    vcpus: u64,

    #[command(flatten)]
    vm: VmArgs,
}

/// The flags `vmm run` and `vmm restore` share (`vmm restore` words some of their help
/// differently, see [`RestoreArgs`]).
#[derive(Args, Debug)]
struct VmArgs {
    /// Stop after N instructions (exit status 124). With several vCPUs: when one vCPU
    /// has executed N.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_max_insns)]
    max_insns: Option<u64>,

    /// Stop after SECS seconds of wall-clock time (exit status 124), e.g. for a guest that
    /// hangs; the console output up to then has been printed.
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = parse_timeout)]
    timeout: Option<std::time::Duration>,

    /// The CTR depths the host hart model supports (default all: 16,32,64,128,256), to model
    /// another host.
    #[arg(long, value_name = "LIST", value_parser = parse_depths, default_value = "16,32,64,128,256")]
    host_ctr_depths: ctr_virt::DepthSet,

    /// A control socket: line-delimited JSON requests pause, resume, snapshot (of the whole
    /// VM, to a file for `vmm restore`), stats and ctr-dump (of any vCPU).
    #[arg(long, value_name = "PATH")]
    api_sock: Option<PathBuf>,

    /// When --max-insns or --timeout ends the run, write a snapshot to FILE (for
    /// `vmm restore`), of every vCPU.
    #[arg(long, value_name = "FILE")]
    snapshot_on_stop: Option<PathBuf>,

    /// Number of hart instances (host threads) the vCPUs run on, 1 to --vcpus (default: one
    /// per vCPU). With fewer, each hart runs its vCPUs in turn, saving and loading the whole
    /// guest state (CTR included) on every switch.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_pcpus)]
    pcpus: Option<u64>,

    /// The time slice of a vCPU on a shared hart (--pcpus), in instructions.
    #[arg(long, value_name = "N", default_value_t = runner::DEFAULT_SLICE_INSNS, allow_negative_numbers = true, value_parser = parse_slice_insns)]
    slice_insns: u64,

    /// Block translation: `on` runs straight-line blocks of guest instructions as x86-64
    /// code (integer, M, F/D, CSR and atomic instructions; the blocks write CTR records and
    /// report the performance monitor's events; only --trace and PDIS counting keep every
    /// instruction in the interpreter); `off` interprets every instruction. Guest-visible
    /// behaviour is the same (instruction counts, traps, timer and budget points included).
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    jit: bool,

    /// Where guest time comes from: `host` (time follows the host's monotonic clock at the
    /// device tree's 10 MHz timebase, and an idle vCPU sleeps on the host until its next
    /// timer or a wake-up) or `virtual` (deterministic: time counts instructions, 100 MIPS,
    /// and idle waits skip to the next timer at once). The VMM_CLOCK environment variable
    /// sets the default. A restored or received guest's time continues from its value in
    /// the snapshot either way.
    #[arg(long, value_name = "host|virtual", env = "VMM_CLOCK", default_value = "host", value_parser = parse_clock)]
    clock: vcpu_api::ClockMode,

    /// Name translated blocks in /tmp/perf-PID.map (start, size, guest pc), so that a host
    /// `perf record`/`perf report` of this process shows guest pcs instead of [JIT].
    #[arg(long)]
    perf_map: bool,

    /// Print instructions, wall time, MIPS and a table of exits by reason on stderr
    /// (summed over all vCPUs).
    #[arg(long)]
    stats: bool,

    #[command(flatten)]
    trace: TraceArgs,

    /// Print a line on stderr for every exit of the guest to the VMM: vCPU, pc, VS or VU,
    /// the reason (SBI extension and function, virtual instruction disassembled, MMIO
    /// device and offset, trap cause) and what the VMM did. FILTER: `all` (the default) or
    /// classes separated by commas: sbi, vinsn, mmio, wfi, irq, fault. The control socket's
    /// `trace-exits` request switches it on and off while the guest runs.
    #[arg(long, value_name = "FILTER", num_args = 0..=1, require_equals = true, default_missing_value = "all", value_parser = parse_trace_exits)]
    trace_exits: Option<u32>,

    #[command(flatten)]
    gdb: GdbArgs,

    /// The guest's symbols, an ELF file or a System.map: the pc of each --trace-exits line
    /// is followed by `<function+0xoff>` when a function covers it. Not taken from the
    /// kernel by default (a Linux Image has none).
    #[arg(long, value_name = "FILE")]
    symbols: Option<PathBuf>,
}

/// `--gdb` and `--gdb-wait` (`vmm machine`, `run`, `restore`, `receive`).
#[derive(Args, Debug)]
struct GdbArgs {
    /// A gdb remote stub on tcp:HOST:PORT or unix:PATH (port 0: any, printed on stderr);
    /// the guest runs and a debugger may attach at any time; every vCPU is a gdb thread
    /// (docs/gdb.md).
    #[arg(long, value_name = "tcp:HOST:PORT|unix:PATH", value_parser = parse_gdb_endpoint)]
    gdb: Option<runner::migrate::Endpoint>,

    /// With --gdb: hold the guest before its first instruction until a debugger attaches.
    #[arg(long, requires = "gdb")]
    gdb_wait: bool,
}

impl GdbArgs {
    fn options(&self) -> Option<GdbOptions> {
        self.gdb.clone().map(|endpoint| GdbOptions {
            endpoint,
            wait: self.gdb_wait,
        })
    }
}

#[derive(Args, Debug)]
struct MachineArgs {
    /// RAM size in MiB, mapped at 0x8000_0000.
    #[arg(long, value_name = "MiB", default_value_t = 128, allow_negative_numbers = true, value_parser = parse_memory)]
    memory: u64,

    /// Stop after N instructions (exit status 124).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_max_insns)]
    max_insns: Option<u64>,

    /// Stop after SECS seconds of wall-clock time (exit status 124), e.g. for a program
    /// that hangs; the console output up to then has been printed.
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = parse_timeout)]
    timeout: Option<std::time::Duration>,

    /// Block translation: `on` runs straight-line blocks of guest instructions as x86-64
    /// code (integer, M, F/D, CSR and atomic instructions; the blocks write CTR records and
    /// report the performance monitor's events; only --trace and PDIS counting keep every
    /// instruction in the interpreter); `off` interprets every instruction. Guest-visible
    /// behaviour is the same (instruction counts, traps, timer and budget points included).
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    jit: bool,

    /// Name translated blocks in /tmp/perf-PID.map (start, size, guest pc), so that a host
    /// `perf record`/`perf report` of this process shows guest pcs instead of [JIT].
    #[arg(long)]
    perf_map: bool,

    /// Print instructions retired, wall time and MIPS on stderr.
    #[arg(long)]
    stats: bool,

    /// The AIA interrupt controller: `none`, or `imsic` (an IMSIC in the hart, 255
    /// identities and 7 guest interrupt files, its pages at 0x2400_0000 (M) and 0x2800_0000
    /// (S and guests) as QEMU's `virt,aia=aplic-imsic,aia-guests=7`; no APLIC).
    #[arg(long, value_name = "none|imsic", default_value = "none", value_parser = parse_aia)]
    aia: machine::Aia,

    /// Where time comes from: `host` (`mtime` follows the host's monotonic clock at the
    /// 10 MHz timebase, and a WFI sleeps on the host until the timer or console input) or
    /// `virtual` (deterministic: time counts instructions, 100 MIPS, and a WFI skips to the
    /// next timer at once). The VMM_CLOCK environment variable sets it
    /// when the flag is absent.
    #[arg(long, value_name = "host|virtual", env = "VMM_CLOCK", default_value = "host", value_parser = parse_clock)]
    clock: vcpu_api::ClockMode,

    #[command(flatten)]
    trace: TraceArgs,

    #[command(flatten)]
    gdb: GdbArgs,

    /// Symbols for gdb's `monitor ctr`, an ELF file or a System.map (default: the
    /// program's own symbol table, if it has one)
    #[arg(long, value_name = "FILE")]
    symbols: Option<PathBuf>,

    /// The ELF executable to run.
    #[arg(value_name = "PROGRAM.elf")]
    program: PathBuf,
}

/// `--ctr`: `on` or `off`.
fn parse_clock(s: &str) -> Result<vcpu_api::ClockMode, String> {
    s.parse()
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{s:?}: expected on or off")),
    }
}

/// A list of CTR depths (`16,64`).
fn parse_depths(s: &str) -> Result<ctr_virt::DepthSet, String> {
    ctr_virt::DepthSet::parse(s).map_err(|e| e.to_string())
}

/// `--trace` and the range it prints.
#[derive(Args, Debug)]
struct TraceArgs {
    /// Log every executed instruction on stderr (interpreted, not translated): its number,
    /// mode, pc, bits, operation and the registers it changed with their new values, or the
    /// exception or device access it made
    #[arg(long)]
    trace: bool,

    /// Trace only instructions A to B (numbers as --max-insns counts them, from 1, for
    /// `vmm restore` from the guest's boot; `A-` for no end); the guest runs at full speed
    /// before A and after B. Implies --trace
    #[arg(long, value_name = "A-B", value_parser = parse_inclusive_range)]
    trace_insns: Option<std::ops::Range<u64>>,

    /// Trace only instructions whose pc is LO to HI (e.g. 0x80200000-0x80200fff); implies
    /// --trace
    #[arg(long, value_name = "LO-HI", value_parser = parse_inclusive_range)]
    trace_pcs: Option<std::ops::Range<u64>>,
}

impl TraceArgs {
    /// Whether any instruction is traced.
    fn on(&self) -> bool {
        self.trace || self.trace_insns.is_some() || self.trace_pcs.is_some()
    }

    /// Which instructions are.
    fn range(&self) -> vcpu_api::TraceRange {
        let all = vcpu_api::TraceRange::default();
        vcpu_api::TraceRange {
            insns: self.trace_insns.clone().unwrap_or(all.insns),
            pcs: self.trace_pcs.clone().unwrap_or(all.pcs),
        }
    }
}

/// `A-B` (inclusive; `A-`: to the end), numbers decimal or 0x-hex, as a half-open range.
fn parse_inclusive_range(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("expected A-B (or A- for no end), got {s}"))?;
    let a = parse_u64(a.trim())?;
    let end = match b.trim() {
        "" => u64::MAX,
        b => parse_u64(b)?.saturating_add(1),
    };
    if end <= a {
        return Err(format!("{s}: the range is empty (B must not be below A)"));
    }
    Ok(a..end)
}

/// `--trap`: the VMM's trap policy.
fn parse_trap(s: &str) -> Result<runner::GuestPolicy, String> {
    runner::GuestPolicy::parse(s)
}

/// `--symbols FILE`, loaded (an error names the file and what is wrong with it).
fn load_symbols(
    path: Option<&std::path::Path>,
) -> Result<Option<std::sync::Arc<vmm::symbols::Symbols>>, ExitCode> {
    match path.map(vmm::symbols::Symbols::load).transpose() {
        Ok(symbols) => Ok(symbols.map(std::sync::Arc::new)),
        Err(e) => {
            eprintln!("vmm: {e}");
            Err(ExitCode::from(EXIT_ERROR))
        }
    }
}

/// `--trace-exits`: a filter of exit classes.
fn parse_trace_exits(s: &str) -> Result<u32, String> {
    runner::trace::parse_filter(s).map_err(|e| e.to_string())
}

/// `--timeout`: seconds, a positive finite number (fractions allowed).
fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= 1e9 => {
            Ok(std::time::Duration::from_secs_f64(secs))
        }
        _ => Err(format!(
            "--timeout takes a number of seconds more than 0 and at most 1e9 (fractions \
             allowed), got {s}"
        )),
    }
}

/// A whole number for `flag` from `min` to `max`; the message says what the flag takes.
fn parse_in_range(s: &str, flag: &str, what: &str, min: u64, max: u64) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("{flag} takes {what} from {min} to {max}, got {s}")),
    }
}

/// `--memory`: MiB, 1 to [`machine::MAX_MEMORY_MIB`].
fn parse_memory(s: &str) -> Result<u64, String> {
    parse_in_range(s, "--memory", "a size in MiB", 1, machine::MAX_MEMORY_MIB)
}

/// `--max-insns`: any number of instructions (0 stops before the first).
fn parse_max_insns(s: &str) -> Result<u64, String> {
    parse_in_range(s, "--max-insns", "a number of instructions", 0, u64::MAX)
}

/// `--vcpus`: 1 to [`runner::MAX_VCPUS`].
fn parse_vcpus(s: &str) -> Result<u64, String> {
    parse_in_range(s, "--vcpus", "a number of vCPUs", 1, runner::MAX_VCPUS)
}

/// `--pcpus`: 1 to [`runner::MAX_VCPUS`] (at most the vCPUs, checked with them).
fn parse_pcpus(s: &str) -> Result<u64, String> {
    parse_in_range(
        s,
        "--pcpus",
        "a number of hart instances",
        1,
        runner::MAX_VCPUS,
    )
}

/// `--slice-insns`: at least one instruction.
fn parse_slice_insns(s: &str) -> Result<u64, String> {
    parse_in_range(s, "--slice-insns", "a number of instructions", 1, u64::MAX)
}

/// `--aia`: `none` or `imsic`.
fn parse_aia(s: &str) -> Result<machine::Aia, String> {
    match s {
        "none" => Ok(machine::Aia::None),
        "imsic" => Ok(machine::Aia::Imsic),
        _ => Err(format!("--aia: `{s}` is neither `none` nor `imsic`")),
    }
}

/// `vmm run --aia`.
fn parse_run_aia(s: &str) -> Result<vmm::run::aia::AiaMode, String> {
    match s {
        "none" => Ok(vmm::run::aia::AiaMode::None),
        "aplic-imsic" => Ok(vmm::run::aia::AiaMode::AplicImsic),
        _ => Err(format!("--aia: `{s}` is neither `aplic-imsic` nor `none`")),
    }
}

/// `--pmu-counters`: 0 to 29.
fn parse_pmu_counters(s: &str) -> Result<u32, String> {
    let n = parse_in_range(s, "--pmu-counters", "a number of hpm counters", 0, 29)?;
    u32::try_from(n).map_err(|_| format!("--pmu-counters: {n} is too large"))
}

fn init_logging(trace: bool) {
    let mut builder =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"));
    builder.format_timestamp(None);
    if trace {
        builder.filter_module("vcpu", LevelFilter::Trace);
    }
    builder.init();
}

fn run_machine(args: MachineArgs) -> ExitCode {
    let symbols = match load_symbols(args.symbols.as_deref()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let config = MachineConfig {
        symbols,
        memory_mib: args.memory,
        max_insns: args.max_insns,
        timeout: args.timeout,
        trace: args.trace.on(),
        trace_range: args.trace.range(),
        jit: args.jit,
        perf_map: args.perf_map,
        input: Some(machine::MachineInput::stdin()),
        aia: args.aia,
        clock: args.clock,
    };
    let console = Box::new(std::io::stdout());
    let gdb = args.gdb.options();
    match machine::run_elf_debug(&args.program, &config, console, gdb.as_ref()) {
        Ok((exit, stats)) => {
            if args.stats {
                eprintln!(
                    "vmm: {} instructions retired in {:.3} s ({:.2} MIPS), {} blocks translated",
                    stats.instret,
                    stats.wall.as_secs_f64(),
                    stats.mips(),
                    stats.translated_blocks
                );
            }
            match exit {
                MachineExit::Finished { code } => {
                    ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX))
                }
                MachineExit::BudgetExhausted { insns, pc } => {
                    eprintln!("vmm: instruction budget of {insns} exhausted at pc={pc:#x}");
                    ExitCode::from(EXIT_BUDGET)
                }
                MachineExit::TimedOut { limit, insns, pc } => {
                    eprintln!(
                        "vmm: wall-clock timeout of {:.1} s reached after {insns} instructions, \
                         at pc={pc:#x}",
                        limit.as_secs_f64()
                    );
                    ExitCode::from(EXIT_BUDGET)
                }
            }
        }
        Err(e) => {
            eprintln!("vmm: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn run_kernel(args: RunArgs) -> ExitCode {
    let symbols = match load_symbols(args.vm.symbols.as_deref()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let base = match &args.kernel {
        Some(path) => RunConfig::new(path),
        None => RunConfig::ctr_demo(),
    };
    let config = RunConfig {
        initrd: args.initrd,
        cmdline: args.cmdline,
        memory_mib: args.memory,
        max_insns: args.vm.max_insns,
        timeout: args.vm.timeout,
        trace: args.vm.trace.on(),
        trace_range: args.vm.trace.range(),
        trace_exits: args.vm.trace_exits.unwrap_or(0),
        symbols,
        vcpus: args.vcpus,
        pcpus: args.vm.pcpus,
        slice_insns: args.vm.slice_insns,
        ctr: args.ctr,
        pmu: args.pmu,
        lcofi_delivery: args.lcofi_delivery,
        pmu_counters: args.pmu_counters,
        pmu_deleg: args.pmu_deleg,
        sspesa: args.sspesa,
        pdis: args.pdis,
        pmu_snapshot: args.pmu_snapshot,
        sstc: args.sstc,
        aia: args.aia,
        clock: args.vm.clock,
        jit: args.vm.jit,
        perf_map: args.vm.perf_map,
        ctr_depths: args.ctr_depths,
        host_ctr_depths: args.vm.host_ctr_depths,
        api_sock: args.vm.api_sock,
        snapshot_on_stop: args.vm.snapshot_on_stop,
        gdb: args.vm.gdb.options(),
        ..base
    };
    let console = Box::new(std::io::stdout());
    report(
        runner::run_kernel_with_policy(&config, args.trap, console, ConsoleInput::Stdin),
        args.vm.stats,
    )
}

/// The end of a `run` or `restore`: message, statistics, exit status.
fn report(result: Result<(RunExit, runner::RunStats), vmm::Error>, stats_wanted: bool) -> ExitCode {
    match result {
        Ok((exit, stats)) => {
            if let Some(message) = exit.failure_message() {
                eprintln!("vmm: {message}");
            }
            match &exit {
                RunExit::Migrated { to } => {
                    eprintln!("vmm: the VM moved to {to}; it goes on there")
                }
                RunExit::Stopped { snapshot: None } => {
                    eprintln!("vmm: the VM was stopped through the control socket")
                }
                RunExit::Stopped {
                    snapshot: Some(path),
                } => eprintln!(
                    "vmm: the VM was stopped through the control socket after writing a \
                     snapshot to {} (vmm restore --snapshot {} continues it)",
                    path.display(),
                    path.display()
                ),
                _ => {}
            }
            if let Some(path) = &stats.snapshot_written {
                eprintln!(
                    "vmm: snapshot written to {} (vmm restore --snapshot {} continues it)",
                    path.display(),
                    path.display()
                );
            }
            if stats_wanted {
                eprintln!(
                    "vmm: {} instructions in {:.3} s ({:.2} MIPS)",
                    stats.instructions,
                    stats.wall.as_secs_f64(),
                    stats.mips()
                );
                if stats.instructions_before > 0 {
                    eprintln!(
                        "vmm: {} instructions since the guest booted ({} before the snapshot)",
                        stats.instructions + stats.instructions_before,
                        stats.instructions_before
                    );
                }
                eprintln!("vmm: {} blocks translated", stats.translated_blocks);
                eprint!("{}", stats.exits.table());
                if stats.per_vcpu.len() > 1 {
                    let per_vcpu: Vec<String> = (0..)
                        .zip(&stats.per_vcpu)
                        .map(|(v, n)| format!("vCPU {v}: {n}"))
                        .collect();
                    eprintln!("vmm: instructions per vCPU: {}", per_vcpu.join(", "));
                }
                if !stats.switches.is_empty() {
                    let per_hart: Vec<String> = (0..)
                        .zip(&stats.switches)
                        .map(|(h, n)| format!("hart {h}: {n}"))
                        .collect();
                    eprintln!("vmm: vCPU switches per hart: {}", per_hart.join(", "));
                }
            }
            ExitCode::from(exit.exit_code())
        }
        Err(e) => {
            eprintln!("vmm: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// What `vmm restore` and `vmm receive` run a VM with.
fn restore_config(
    vm: &VmArgs,
    paused: bool,
    symbols: Option<std::sync::Arc<vmm::symbols::Symbols>>,
) -> runner::snapshot::RestoreConfig {
    runner::snapshot::RestoreConfig {
        symbols,
        host_ctr_depths: vm.host_ctr_depths,
        max_insns: vm.max_insns,
        timeout: vm.timeout,
        trace: vm.trace.on(),
        trace_range: vm.trace.range(),
        trace_exits: vm.trace_exits.unwrap_or(0),
        api_sock: vm.api_sock.clone(),
        snapshot_on_stop: vm.snapshot_on_stop.clone(),
        paused,
        pcpus: vm.pcpus,
        slice_insns: vm.slice_insns,
        jit: vm.jit,
        perf_map: vm.perf_map,
        gdb: vm.gdb.options(),
        clock: vm.clock,
    }
}

fn restore(args: RestoreArgs) -> ExitCode {
    let symbols = match load_symbols(args.vm.symbols.as_deref()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let options = restore_config(&args.vm, args.paused, symbols);
    let console = Box::new(std::io::stdout());
    report(
        runner::snapshot::restore_and_run(&args.snapshot, &options, console, ConsoleInput::Stdin),
        args.vm.stats,
    )
}

fn receive(args: ReceiveArgs) -> ExitCode {
    let symbols = match load_symbols(args.vm.symbols.as_deref()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let options = restore_config(&args.vm, args.paused, symbols);
    let console = Box::new(std::io::stdout());
    report(
        runner::migrate::receive_and_run(
            &args.listen,
            &options,
            console,
            ConsoleInput::Stdin,
            |at| eprintln!("vmm: waiting for a VM on {at}"),
        ),
        args.vm.stats,
    )
}

fn ctl(args: CtlArgs) -> ExitCode {
    use vmm::ctl::CtlRequest;
    let symbols = match &args.request {
        CtlCommand::CtrDump {
            symbols: Some(path),
            ..
        } => match vmm::symbols::Symbols::load(path) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("vmm ctl: {e}");
                return ExitCode::from(EXIT_ERROR);
            }
        },
        _ => None,
    };
    let request = match args.request {
        CtlCommand::Pause => CtlRequest::Pause,
        CtlCommand::Resume => CtlRequest::Resume,
        CtlCommand::Stats => CtlRequest::Stats,
        CtlCommand::Snapshot { file } => CtlRequest::Snapshot(file),
        CtlCommand::CtrDump { vcpu, .. } => CtlRequest::CtrDump(vcpu),
        CtlCommand::Migrate {
            to,
            max_downtime_ms,
        } => CtlRequest::Migrate {
            to,
            max_downtime_ms,
        },
        CtlCommand::Quit { snapshot } => CtlRequest::Quit { snapshot },
        CtlCommand::TraceExits { on, filter } => CtlRequest::TraceExits { on, filter },
        CtlCommand::Inject {
            vcpu,
            irq,
            clear,
            exception,
            tval,
        } => CtlRequest::Inject {
            vcpu,
            irq: irq.map(|i| (i, !clear)),
            exception: exception.map(|c| (c, tval)),
        },
    };
    if let CtlRequest::Migrate { to, .. } = &request {
        eprintln!("vmm ctl: moving the VM to {to} ...");
    }
    let mut progress = |p: &serde_json::Value| {
        eprintln!("vmm ctl: {}", vmm::ctl::render_progress(p));
    };
    let mut answer = match vmm::ctl::send(&args.api_sock, &request, &mut progress) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("vmm ctl: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let ok = answer["ok"] == true;
    if args.json {
        if let Some(symbols) = &symbols {
            vmm::ctl::symbolize_ctr_dump(&mut answer, symbols);
        }
        println!("{answer}");
    } else {
        match vmm::ctl::render(&request, &answer, symbols.as_ref()) {
            Ok(text) => print!("{text}"),
            Err(e) => eprintln!("vmm ctl: {e}"),
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_ERROR)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A client only: no signal handling, no logging.
    let cli = match cli.command {
        Command::Ctl(args) => return ctl(args),
        command => Cli { command },
    };
    // Before any other thread starts: they all inherit the blocked termination signals.
    let api_sock = match &cli.command {
        Command::Machine(_) => None,
        Command::Run(args) => args.vm.api_sock.clone(),
        Command::Restore(args) => args.vm.api_sock.clone(),
        Command::Receive(args) => args.vm.api_sock.clone(),
        Command::Ctl(_) => None,
    };
    if let Err(e) = runner::signals::watch_termination_signals(api_sock) {
        eprintln!("vmm: {e}");
        return ExitCode::from(EXIT_ERROR);
    }
    match cli.command {
        Command::Machine(args) => {
            init_logging(args.trace.on());
            run_machine(args)
        }
        Command::Run(args) => {
            init_logging(args.vm.trace.on());
            run_kernel(args)
        }
        Command::Restore(args) => {
            init_logging(args.vm.trace.on());
            restore(args)
        }
        Command::Receive(args) => {
            init_logging(args.vm.trace.on());
            receive(args)
        }
        Command::Ctl(args) => ctl(args),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_timeout;

    #[test]
    fn timeout_values_are_checked() {
        assert_eq!(
            parse_timeout("1.5").unwrap(),
            std::time::Duration::from_millis(1500)
        );
        for bad in ["0", "-3", "abc", "inf", "NaN", "1e12"] {
            let e = parse_timeout(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }

    /// `vmm run` and `vmm restore` share their flags' definitions; `vmm restore` keeps its
    /// own help for some.
    #[test]
    fn run_and_restore_share_flags() {
        use clap::{CommandFactory, Parser};
        let cli = super::Cli::command();
        let help = |sub: &str, flag: &str| {
            let cmd = cli.find_subcommand(sub).unwrap();
            let arg = cmd.get_arguments().find(|a| a.get_id() == flag).unwrap();
            arg.get_help().unwrap().to_string()
        };
        assert_eq!(
            help("restore", "max_insns"),
            "Stop after N more instructions (exit status 124)"
        );
        assert!(help("run", "max_insns").contains("when one vCPU has executed N"));
        assert_eq!(help("run", "slice_insns"), help("restore", "slice_insns"));
        assert_eq!(help("restore", "jit"), "Block translation, as for `run`");
        // `--help` lists the flags in the order they had before they were shared.
        let order = |sub: &str, flags: &[&str]| {
            let text = super::Cli::command()
                .find_subcommand_mut(sub)
                .unwrap()
                .render_help()
                .to_string();
            let text = &text[text.find("Options:").unwrap()..];
            let at: Vec<usize> = flags.iter().map(|f| text.find(f).unwrap()).collect();
            assert!(
                at.windows(2).all(|w| w[0] < w[1]),
                "{sub}: {flags:?}\n{text}"
            );
        };
        order(
            "restore",
            &[
                "--snapshot ",
                "--host-ctr-depths",
                "--max-insns",
                "--paused",
                "--pcpus",
                "--trace",
            ],
        );
        order(
            "run",
            &[
                "--memory",
                "--max-insns",
                "--timeout",
                "--ctr ",
                "--host-ctr-depths",
                "--vcpus",
                "--pcpus",
                "--trace",
            ],
        );
        let argv = [
            "vmm",
            "restore",
            "--snapshot",
            "s",
            "--pcpus",
            "2",
            "--jit",
            "off",
        ];
        match super::Cli::try_parse_from(argv).unwrap().command {
            super::Command::Restore(args) => {
                assert_eq!(args.vm.pcpus, Some(2));
                assert!(!args.vm.jit);
            }
            other => panic!("{other:?}"),
        }
    }

    /// `--pmu-snapshot` is off unless asked for, as in `RunConfig::new` (Linux 6.12's
    /// driver loses `perf record` samples with the snapshot shared memory).
    #[test]
    fn pmu_snapshot_is_off_by_default() {
        use clap::Parser;
        let snapshot = |extra: &[&str]| {
            let argv = ["vmm", "run"].into_iter().chain(extra.iter().copied());
            match super::Cli::try_parse_from(argv).unwrap().command {
                super::Command::Run(args) => args.pmu_snapshot,
                other => panic!("{other:?}"),
            }
        };
        assert!(!snapshot(&[]));
        assert!(snapshot(&["--pmu-snapshot", "on"]));
        assert!(!snapshot(&["--pmu-snapshot", "off"]));
        assert!(!super::RunConfig::new("kernel").pmu_snapshot);
        assert!(!super::RunConfig::ctr_demo().pmu_snapshot);
    }
}
