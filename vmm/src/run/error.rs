//! The errors of `vmm run`'s parts (the control socket, the boot data, the console, the
//! vCPU threads, restores), in one leaf module so that the crate's [`crate::error::Error`]
//! can wrap them without an import cycle; each part re-exports its own.

use crate::layout::FDT_MAX;
use std::path::PathBuf;

use crate::persist::FieldError;

/// Why the control socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Something other than a socket is at the path.
    #[error("{} exists and is not a socket: not replacing it", .0.display())]
    NotASocket(std::path::PathBuf),
    /// The socket could not be bound.
    #[error("cannot listen on {}: {source}", path.display())]
    Listen {
        /// The socket's path.
        path: std::path::PathBuf,
        /// The host's error.
        #[source]
        source: std::io::Error,
    },
    /// The thread serving it could not be started.
    #[error("cannot start the control socket thread: {0}")]
    Thread(#[source] std::io::Error),
    /// `vmm restore --paused` without a socket to resume the guest from.
    #[error("--paused needs --api-sock (to resume the guest)")]
    PausedWithoutSocket,
}

/// Why the device tree (or the initrd next to it) could not be put in guest RAM.
#[derive(Debug, thiserror::Error)]
pub enum BootDataError {
    /// `vm-fdt` refused to build the tree.
    #[error("{0}")]
    Build(#[source] vm_fdt::Error),
    /// The tree does not fit in the room reserved for it.
    #[error(
        "the device tree is {size} bytes, more than the {FDT_MAX} reserved for it (is the \
         command line very long?)"
    )]
    TooBig {
        /// The tree's size in bytes.
        size: usize,
    },
    /// Writing the tree to RAM failed.
    #[error("cannot write the device tree to RAM: {0}")]
    WriteFdt(#[source] vm_memory::GuestMemoryError),
}

/// A host facility the console (or the termination-signal watcher) could not set up.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct ConsoleError {
    /// What failed.
    pub what: &'static str,
    /// The host's error.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// Why a vCPU thread failed.
#[derive(Debug, thiserror::Error)]
pub enum VcpuThreadError {
    /// The host could not start it.
    #[error("cannot start it: {0}")]
    Spawn(#[source] std::io::Error),
    /// It panicked.
    #[error("it panicked")]
    Panicked,
}

/// A snapshot `vmm restore` cannot restore for a reason other than one vCPU field out of
/// range ([`RestoreError`]): vCPU states that do not fit together or this host, or a part
/// of the VM that refuses its saved state.
#[derive(Debug, thiserror::Error)]
pub enum RestoreFailure {
    /// The AIA devices' state (`--aia aplic-imsic`) is not one they can hold.
    #[error("{0}")]
    Aia(super::aia::AiaRestoreError),
    /// A vCPU's hart id is not its index.
    #[error("vCPU {vcpu} has hart id {found} (expected {vcpu})")]
    HartId {
        /// The vCPU.
        vcpu: u64,
        /// The hart id saved for it.
        found: u64,
    },
    /// A vCPU's SBI HSM state and WFI wait are not a state such a VM can be in.
    #[error(
        "vCPU {vcpu}: HSM state {hsm} with WFI wait {idle:?} is not a state a VM of {vcpus} \
         vCPUs can be in"
    )]
    HsmState {
        /// The vCPU.
        vcpu: u64,
        /// Its saved HSM state.
        hsm: u64,
        /// Its saved WFI wait.
        idle: Option<u64>,
        /// The VM's vCPUs.
        vcpus: u64,
    },
    /// `pmu-virt` refused a vCPU's virtual PMU state.
    #[error("vCPU {vcpu}: the virtual PMU state is invalid")]
    PmuState {
        /// The vCPU.
        vcpu: u64,
    },
    /// The hart model refused a vCPU's state (`vcpu` is `None` in a VM of one vCPU).
    #[error("{}{source}", vcpu.map(|v| format!("vCPU {v}: ")).unwrap_or_default())]
    Hart {
        /// The vCPU, with more than one.
        vcpu: Option<u64>,
        /// What the hart reported.
        #[source]
        source: vcpu_api::StateError,
    },
    /// A parked vCPU's state could not be loaded onto its hart instance (`--pcpus`).
    #[error("vCPU {vcpu} onto its hart: {source}")]
    Switch {
        /// The vCPU.
        vcpu: u64,
        /// What the hart reported.
        #[source]
        source: vcpu_api::StateError,
    },
    /// The UART state cannot be restored.
    #[error("the UART state is invalid: {0}")]
    Uart(#[source] FieldError),
    /// Another part of the VM's state cannot be restored.
    #[error("{0}")]
    Field(#[from] FieldError),
}

/// A snapshot field `vmm restore` refuses: out of range, inconsistent with the rest of the
/// state, or different from what this VMM configures itself.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// A field of one vCPU.
    #[error("vCPU {vcpu}: field `{field}` = {value:#x} {reason}")]
    VcpuField {
        /// The vCPU.
        vcpu: u64,
        /// The field, as named in the snapshot state (`hart.…`, `pmu.…`) or the CSR.
        field: &'static str,
        /// Its value.
        value: u64,
        /// What is wrong with it.
        reason: String,
    },
}

/// Why a move failed.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The address is not `unix:PATH` or `tcp:HOST:PORT`.
    #[error("{0:?} is not a migration address (unix:PATH or tcp:HOST:PORT)")]
    BadAddress(String),
    /// Connecting, listening or accepting failed.
    #[error("cannot {what} {addr}: {source}")]
    Connect {
        /// What was tried.
        what: &'static str,
        /// The address.
        addr: String,
        /// The host's error.
        #[source]
        source: std::io::Error,
    },
    /// Something other than a socket is at the UNIX path.
    #[error("{0} exists and is not a socket: not replacing it")]
    NotASocket(PathBuf),
    /// The stream broke or timed out.
    #[error("the migration stream failed while {while_}: {}", io_text(.source))]
    Io {
        /// What the side was doing.
        while_: &'static str,
        /// The host's error.
        #[source]
        source: std::io::Error,
    },
    /// The peer sent something this protocol does not allow.
    #[error("bad migration stream: {0}")]
    Protocol(String),
    /// The destination cannot hold this VM (it said why, or the source found out from its
    /// limits).
    #[error("the destination refused the VM: {0}")]
    Refused(String),
    /// The source went away before letting go of the VM.
    #[error("the source did not hand the VM over (no GO): {0}")]
    NoGo(String),
    /// Guest RAM could not be allocated on the destination.
    #[error("cannot allocate {0} MiB of guest RAM for the incoming VM")]
    Allocate(u64),
}

/// A stream error in words: a timeout says so (the host says "Resource temporarily
/// unavailable" for a socket timeout).
fn io_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            "timed out (the other side sent or took nothing within the stream timeout)".into()
        }
        _ => e.to_string(),
    }
}
