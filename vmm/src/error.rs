//! The VMM's error type.

use std::path::{Path, PathBuf};

use crate::loader::LoadError;

/// Everything that can stop the VMM other than the guest finishing normally or running out
/// of its instruction budget.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The gdb stub could not be set up, or the debugger ended the run.
    #[error("{0}")]
    Gdb(#[from] crate::gdb::GdbError),

    /// The control socket could not be set up.
    #[error("control socket: {0}")]
    Api(#[from] crate::run::error::ApiError),

    /// A snapshot could not be written or read.
    #[error("{0}")]
    Snapshot(#[from] crate::snapshot::SnapshotError),

    /// A snapshot cannot be restored here (the state does not fit this host or together).
    #[error("cannot restore the snapshot: {0}")]
    Restore(#[from] crate::run::error::RestoreFailure),

    /// A snapshot's field is out of range or disagrees with what the VMM configures.
    #[error("cannot restore the snapshot: {0}")]
    RestoreField(#[from] crate::run::error::RestoreError),

    /// The devices' MMIO windows do not fit together (an ELF's HTIF words on a device).
    #[error("{0}")]
    Bus(#[from] crate::devices::bus::BusError),

    /// The VM's CTR options cannot be met (`--ctr`, `--ctr-depths`, `--host-ctr-depths`).
    #[error("{0}")]
    Ctr(#[from] ctr_virt::CtrVirtError),

    /// `--memory` is 0 or larger than the supported maximum.
    #[error("invalid memory size {mib} MiB: must be between 1 and {max} MiB")]
    InvalidMemorySize {
        /// The requested size.
        mib: u64,
        /// The largest accepted size.
        max: u64,
    },

    /// The host could not provide guest RAM.
    #[error("cannot allocate {mib} MiB of guest RAM: {source}")]
    GuestMemory {
        /// The requested size.
        mib: u64,
        /// What vm-memory reported.
        #[source]
        source: vm_memory::mmap::FromRangesError,
    },

    /// The program file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    ReadProgram {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// The program file is not a loadable RISC-V ELF executable for this machine.
    #[error("{}: {source}", display_program(path))]
    Load {
        /// The file (empty for an image given as bytes).
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: LoadError,
    },

    /// The hart model refused the configuration.
    #[error("cannot create the hart: {0}")]
    Hart(#[from] crate::backend::HartError),

    /// The hart executed WFI with nothing that could ever wake it up.
    #[error("hart {hart} is waiting for an interrupt (WFI at pc={pc:#x}) that can never arrive")]
    WaitForever {
        /// The hart's id.
        hart: u64,
        /// Address of the WFI instruction.
        pc: u64,
    },

    /// `--pmu-counters` asks for more hpm counters than the hart has.
    #[error("--pmu-counters {0}: the hart has 29 hpm counters (mhpmcounter3-31)")]
    PmuCounters(u32),

    /// The hart reported an HS-level interrupt the VMM never enables (only the LCOFI of
    /// selective delivery is expected).
    #[error("hart {hart}: unexpected HS-level interrupt {irq} while running the guest")]
    UnexpectedInterrupt {
        /// The hart's id.
        hart: u64,
        /// The interrupt code.
        irq: u64,
    },

    /// The guest asked the SiFive test device for a reset.
    #[error("guest requested reset, unsupported in machine mode")]
    ResetRequested,

    /// The guest made an HTIF request this machine does not serve.
    #[error(transparent)]
    Htif(#[from] crate::devices::htif::HtifError),

    /// A bare-machine hart reported a hosted-mode guest trap (a bug in the hart model).
    #[error("unexpected guest trap (cause {cause}) at pc={pc:#x} on a bare-machine hart")]
    UnexpectedGuestTrap {
        /// Exception code.
        cause: u64,
        /// Address of the trapping instruction.
        pc: u64,
    },

    /// `vmm run`: the kernel file is neither a RISC-V ELF executable nor a Linux `Image`, or
    /// it does not fit in guest RAM.
    #[error("{}: {source}", path.display())]
    Kernel {
        /// The kernel file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: crate::run::kernel::KernelError,
    },

    /// `vmm run`: the initrd file could not be read.
    #[error("cannot read initrd {}: {source}", path.display())]
    ReadInitrd {
        /// The initrd file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// `vmm run`: the initrd does not fit between the kernel and the device tree.
    #[error(
        "initrd {} ({size} bytes) does not fit in guest RAM: {room} bytes free between the \
         kernel's end and the device tree (use a larger --memory)", path.display()
    )]
    InitrdTooBig {
        /// The initrd file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// Bytes available for it.
        room: u64,
    },

    /// A kernel, initrd or program file refused before it is read (`run::builder::read_input`).
    #[error("cannot use {what} {}: {reason}", path.display())]
    BadInput {
        /// "kernel", "initrd" or "program" (`vmm machine`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: InputRefusal,
    },

    /// `vmm run`: building the device tree failed.
    #[error("cannot build the device tree: {0}")]
    Fdt(#[from] crate::run::error::BootDataError),

    /// `vmm run`: the number of vCPUs is out of range.
    #[error("invalid number of vCPUs {vcpus}: must be 1..={max}")]
    InvalidVcpus {
        /// The requested number.
        vcpus: u64,
        /// The largest accepted number.
        max: u64,
    },

    /// `vmm run --pcpus`: the number of harts is out of range.
    #[error(
        "invalid number of harts (--pcpus) {pcpus}: must be 1..={vcpus} (the number of vCPUs)"
    )]
    InvalidPcpus {
        /// The requested number.
        pcpus: u64,
        /// The number of vCPUs.
        vcpus: u64,
    },

    /// `vmm run --pmu-deleg on` without a PMU.
    #[error("counter delegation (--pmu-deleg on) needs a PMU (--pmu on)")]
    PmuDelegWithoutPmu,

    /// `vmm run --slice-insns`: a time slice of 0 instructions.
    #[error("invalid time slice (--slice-insns) 0: must be at least 1 instruction")]
    InvalidSlice,

    /// `vmm run --vcpus`: a vCPU thread could not be started or panicked.
    #[error("vCPU thread: {0}")]
    VcpuThread(#[from] crate::run::error::VcpuThreadError),

    /// `vmm run`: the console could not be set up.
    #[error("console: {0}")]
    Console(#[from] crate::run::error::ConsoleError),

    /// `vmm receive` or the control socket's `migrate`: the move failed.
    #[error("migration: {0}")]
    Migrate(#[from] crate::run::error::MigrateError),

    /// `vmm run`: the only hart stopped itself (SBI HSM `hart_stop`), so nothing can ever
    /// run again.
    #[error("hart {hart} stopped itself (SBI hart_stop) and no other hart can start it again")]
    AllHartsStopped {
        /// The hart's id.
        hart: u64,
    },

    /// Someone called [`vcpu_api::StopHandle::stop`] on the hart.
    #[error("hart {hart} was stopped at pc={pc:#x}")]
    Stopped {
        /// The hart's id.
        hart: u64,
        /// Where it stopped.
        pc: u64,
    },
}

fn display_program(path: &Path) -> String {
    if path.as_os_str().is_empty() {
        "ELF image".to_string()
    } else {
        path.display().to_string()
    }
}

impl Error {
    /// A load error for an image that has no file name (yet).
    pub(crate) fn from_load(source: LoadError) -> Self {
        Error::Load {
            path: PathBuf::new(),
            source,
        }
    }

    /// Names the file in a load error.
    pub(crate) fn with_path(self, path: &Path) -> Self {
        match self {
            Error::Load { source, .. } => Error::Load {
                path: path.to_path_buf(),
                source,
            },
            other => other,
        }
    }
}

/// Why a kernel or initrd file is refused before it is read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputRefusal {
    /// Not a regular file (a FIFO would block, a device like `/dev/zero` never ends).
    #[error("it is {0}, not a regular file")]
    NotAFile(&'static str),
    /// Larger than the guest RAM it must fit in.
    #[error("it has {size} bytes, more than the {max} bytes of guest RAM it must fit in (use a larger --memory)")]
    TooLarge {
        /// The file's size.
        size: u64,
        /// The room for it.
        max: u64,
    },
}
