//! VM snapshots: the file format and its checks.
//!
//! A snapshot holds everything a `vmm run` VM needs to continue elsewhere: guest RAM, each
//! vCPU's architectural state (registers, CSRs, counters and timers, the CTR buffer and its
//! cycle counter: [`crate::backend::HartState`]) with its `ctr-virt` state, the UART's
//! registers and receive FIFO, pending console input, the boot layout and the VMM's trap
//! policy.
//!
//! File layout (integers little-endian):
//!
//! | bytes | content |
//! | --- | --- |
//! | 8 | magic `RVCTRSNP` |
//! | 4 | format version ([`VERSION`]; [`OLDEST_VERSION`] and later are read) |
//! | 8 | length S of the state |
//! | S | the state: [`VmState`], serde with bincode's compact encoding |
//! | 8 | size M of guest RAM in bytes (a whole number of MiB, `memory_mib` of the state) |
//! | N × 4104 | the pages of guest RAM that are not zero, by increasing index: each an 8-byte page index i (guest address `RAM_BASE` + i × 4096), then its 4096 bytes |
//! | 8 | the number N of page records |
//! | 4 | CRC-32 (IEEE) of every byte before it |
//!
//! A page missing from the list is zero. Writing streams guest RAM a page at a time
//! ([`encode_guest_into`]): there is never a copy of RAM, zero pages (never touched or
//! cleared) take no room, and a guest that touched 32 MiB of 256 makes a file of about
//! 32 MiB.
//!
//! Snapshot files are untrusted input: [`read`] takes regular files only (a FIFO, a device,
//! a directory are refused from their metadata, without reading, and the file is opened
//! non-blocking), and checks the magic, the version, the state's length, the RAM size and
//! the number of page records the file's size leaves room for, against the file's size
//! and the limits ([`MAX_STATE_BYTES`], [`crate::layout::MAX_MEMORY_MIB`]), before it
//! allocates anything. Guest RAM is then allocated (mapped lazily, an allocation failure is
//! an error) and the records are read straight into it, while the checksum is computed; a
//! record out of order or past the end of RAM, a wrong count or checksum refuse the file
//! (a wrong checksum is reported first). Only then is the state decoded, with a size limit.
//! So no file can make it panic, block, or allocate more than its own size plus the guest
//! RAM its header announces (which stays unbacked but for the pages the file holds).
//!
//! Writing ([`write`]) checks the target first ([`check_target`]: not a directory, in a
//! directory that exists and can be written), writes a temporary file in the target's own
//! directory (`.NAME.tmp.PID`), fsyncs it, renames it into place and fsyncs the directory;
//! on any failure the temporary file is removed and an existing target is left as it was.
//! Where the filesystem has unnamed files (`O_TMPFILE`), the file is written unnamed and
//! gets its temporary name only once complete, so a VMM killed mid-write leaves nothing.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use crate::backend::HartState;
use crate::devices::uart::UartState;
use crate::machine::RAM_BASE;

/// The file's first bytes.
pub const MAGIC: [u8; 8] = *b"RVCTRSNP";
/// The format version this VMM writes and reads.
pub const VERSION: u32 = 13;
/// The oldest format version this VMM reads: 7, without [`VmState::sstc`] (read as
/// `false`: those VMs ran without Sstc). Formats 7 and 8 have no PMP in the harts' states
/// (their harts had none): read with the allow-all entry the VMM gives a new VM's harts.
/// Formats 7 to 9 have no [`VmState::host_clock`] (read as `false`: virtual time was the
/// only clock). Formats 9 and 10 have no IMSIC in the harts' states (their harts had none:
/// read as an empty one). Format 11 has no debug triggers and no LR reservation in the
/// harts' states (read with every trigger disabled and no reservation). Formats 7 to 11
/// have no [`VmState::aia`] (read as `None`: no VM had AIA devices). Formats 7 to 12 have no
/// TLB in the harts' states (read as an empty TLB, as those restores began). History: 13
/// added each hart's TLB translations ([`crate::backend::HartState::tlb`]), 12 added each
/// hart's debug triggers and LR reservation ([`crate::backend::HartState::triggers`],
/// [`crate::backend::HartState::reservation`]) and the AIA devices (`vmm run --aia
/// aplic-imsic`: the APLIC and the MSIs posted to each vCPU), 11 added each hart's IMSIC
/// ([`crate::backend::HartState::imsic`]), 10 `host_clock`, 9 each hart's PMP registers
/// ([`crate::backend::HartState::pmp`]), 8 `sstc`, 7 the trap policy of `--trap` sret and
/// vm.
pub const OLDEST_VERSION: u32 = 7;
/// The largest encoded state accepted (the state is a few KiB per vCPU).
pub const MAX_STATE_BYTES: u64 = 16 << 20;
/// Bytes of a page of guest RAM, the unit of the page list.
pub const PAGE_BYTES: u64 = 4096;
/// Bytes of one page record: its index, then its content.
pub const RECORD_BYTES: u64 = 8 + PAGE_BYTES;
/// Bytes of a file besides the state and the page records: magic, version, state length,
/// RAM size, page count, checksum.
const FIXED_BYTES: u64 = 8 + 4 + 8 + 8 + 8 + 4;
/// Buffer of the file reader and writer.
const IO_BUFFER: usize = 1 << 20;

/// Where the kernel, initrd and device tree were put (`run::BootLayout`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutState {
    /// Kernel entry point.
    pub entry: u64,
    /// Kernel start and end.
    pub kernel: (u64, u64),
    /// Initrd start and end.
    pub initrd: Option<(u64, u64)>,
    /// Device tree address.
    pub fdt: u64,
}

/// One vCPU (vCPU `i` is `VmState::vcpus[i]`, with hart id `i`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VcpuState {
    /// The hart's architectural state.
    pub hart: crate::backend::HartState,
    /// The VMM's CTR management of this vCPU.
    pub ctr: ctr_virt::GuestCtrState,
    /// Its virtual PMU (`pmu-virt`: counter events, started state, firmware counters and
    /// tallies, snapshot shared memory; the hardware counters are in `hart`).
    pub pmu: pmu_virt::GuestPmuState,
    /// Its SBI HSM state: 0 STARTED, 1 STOPPED, 2 START_PENDING.
    pub hsm: u64,
    /// `(start_addr, opaque)` of a pending `hart_start`.
    pub start: (u64, u64),
    /// Waiting in WFI until the global clock reaches this deadline (`u64::MAX`: no timer)
    /// or an interrupt arrives.
    pub idle: Option<u64>,
    /// An IPI posted to its mailbox and not yet taken in (the only interrupt the VMM posts).
    pub ipi_posted: bool,
}

/// Everything but guest RAM.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmState {
    /// Guest RAM size in MiB.
    pub memory_mib: u64,
    /// The boot layout.
    pub layout: LayoutState,
    /// The VMM's trap policy (`--trap`): WFI (`hstatus.VTW`), `time` (`hcounteren.TM`),
    /// SRET (`hstatus.VTSR`), SFENCE.VMA and `satp` (`hstatus.VTVM`).
    pub trap_wfi: bool,
    /// See `trap_wfi`.
    pub trap_time: bool,
    /// See `trap_wfi` (format 7).
    pub trap_sret: bool,
    /// See `trap_wfi` (format 7).
    pub trap_vm: bool,
    /// `vmm run --sstc`: Sstc asked for the guest (offered unless `trap_time`:
    /// `menvcfg.STCE` and `henvcfg.STCE` set; format 8, `false` in format 7).
    pub sstc: bool,
    /// The vCPUs.
    pub vcpus: Vec<VcpuState>,
    /// The virtual clock the vCPUs share (instruction slots; with one vCPU, its own).
    pub clock: u64,
    /// The UART.
    pub uart: UartState,
    /// Console input not yet given to the guest.
    pub input: Vec<u8>,
    /// The VM ran with host time (`--clock host`; format 10, `false` before). Either way
    /// each vCPU's `hart.time_offset` is as virtual time has it (`mtime` =
    /// `vclock / INSNS_PER_TICK + time_offset`), so a restore in either mode continues
    /// guest time from the value it had; the WFI deadlines (`idle`) are instruction slots
    /// with virtual time, host-clock ticks (`mtime`) with host time.
    pub host_clock: bool,
    /// The AIA devices (`vmm run --aia aplic-imsic`; format 12, `None` before and without
    /// AIA). The guest interrupt files are in each hart's state ([`HartState::imsic`]).
    pub aia: Option<AiaState>,
}

/// The AIA devices of a VM (`run/aia.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AiaState {
    /// The guest's APLIC domain.
    pub aplic: crate::devices::aplic::Aplic,
    /// Per vCPU: MSIs posted to its mailbox and not yet taken in by its hart (bit `i` of
    /// word `i / 64` is identity `i`; [`vcpu_api::MAILBOX_MSI_IDS`] bits).
    pub msis: Vec<Vec<u64>>,
}

/// A hart state of an older format, and how it becomes today's [`HartState`].
trait OldHartState {
    fn upgrade(self) -> HartState;
}

/// Format 12: harts without their TLB's translations (restores began with an empty TLB).
impl OldHartState for crate::backend::HartStateNoTlb {
    fn upgrade(self) -> HartState {
        self.without_tlb()
    }
}

/// Format 11: harts without debug triggers (they had none: every trigger reads disabled).
impl OldHartState for crate::backend::HartStateNoTriggers {
    fn upgrade(self) -> HartState {
        self.without_triggers()
    }
}

/// Formats 9 and 10: harts without the IMSIC (they had none; a hart with one restores it at
/// reset).
impl OldHartState for crate::backend::HartStateNoImsic {
    fn upgrade(self) -> HartState {
        self.without_imsic()
    }
}

/// Formats 7 and 8: harts without the PMP. The guest saw all of memory, as it does through
/// the allow-all entry the VMM sets now (`Hart::new_guest`).
impl OldHartState for crate::backend::HartStateNoPmp {
    fn upgrade(self) -> HartState {
        self.with_pmp(crate::backend::PmpState::allow_all())
    }
}

/// A field an older format did not have: `()`, which bincode encodes as nothing, or the
/// field's type.
trait OldField<T> {
    fn or(self, absent: T) -> T;
}

impl<T> OldField<T> for () {
    fn or(self, absent: T) -> T {
        absent
    }
}

impl OldField<bool> for bool {
    fn or(self, _: bool) -> bool {
        self
    }
}

impl<T> OldField<Option<T>> for Option<T> {
    fn or(self, _: Option<T>) -> Option<T> {
        self
    }
}

/// [`VcpuState`] as formats 7 to 12 encoded it, with hart state `H` ([`OldHartState`]).
#[derive(Deserialize)]
struct OldVcpuState<H> {
    hart: H,
    ctr: ctr_virt::GuestCtrState,
    pmu: pmu_virt::GuestPmuState,
    hsm: u64,
    start: (u64, u64),
    idle: Option<u64>,
    ipi_posted: bool,
}

/// [`VmState`] as formats 7 to 12 encoded it: vCPUs with hart state `H`, and `sstc` (`S`),
/// `host_clock` (`C`) and `aia` (`A`) where the format had them ([`OldField`]).
#[derive(Deserialize)]
struct OldVmState<H, S, C, A> {
    memory_mib: u64,
    layout: LayoutState,
    trap_wfi: bool,
    trap_time: bool,
    trap_sret: bool,
    trap_vm: bool,
    sstc: S,
    vcpus: Vec<OldVcpuState<H>>,
    clock: u64,
    uart: UartState,
    input: Vec<u8>,
    host_clock: C,
    aia: A,
}

impl<H, S, C, A> From<OldVmState<H, S, C, A>> for VmState
where
    H: OldHartState,
    S: OldField<bool>,
    C: OldField<bool>,
    A: OldField<Option<AiaState>>,
{
    fn from(v: OldVmState<H, S, C, A>) -> VmState {
        let vcpu = |c: OldVcpuState<H>| VcpuState {
            hart: c.hart.upgrade(),
            ctr: c.ctr,
            pmu: c.pmu,
            hsm: c.hsm,
            start: c.start,
            idle: c.idle,
            ipi_posted: c.ipi_posted,
        };
        VmState {
            memory_mib: v.memory_mib,
            layout: v.layout,
            trap_wfi: v.trap_wfi,
            trap_time: v.trap_time,
            trap_sret: v.trap_sret,
            trap_vm: v.trap_vm,
            sstc: v.sstc.or(false),
            vcpus: v.vcpus.into_iter().map(vcpu).collect(),
            clock: v.clock,
            uart: v.uart,
            input: v.input,
            host_clock: v.host_clock.or(false),
            aia: v.aia.or(None),
        }
    }
}

/// Format 12: harts without their TLB.
type VmStateV12 = OldVmState<crate::backend::HartStateNoTlb, bool, bool, Option<AiaState>>;
/// Format 11: without `aia`, harts without debug triggers.
type VmStateV11 = OldVmState<crate::backend::HartStateNoTriggers, bool, bool, ()>;
/// Format 10: without `aia`, harts without the IMSIC.
type VmStateV10 = OldVmState<crate::backend::HartStateNoImsic, bool, bool, ()>;
/// Format 9: without `host_clock` and `aia`, harts without the IMSIC.
type VmStateV9 = OldVmState<crate::backend::HartStateNoImsic, bool, (), ()>;
/// Format 8: without `host_clock` and `aia`, harts without the PMP.
type VmStateV8 = OldVmState<crate::backend::HartStateNoPmp, bool, (), ()>;
/// Format 7: without `sstc`, `host_clock` and `aia`, harts without the PMP.
type VmStateV7 = OldVmState<crate::backend::HartStateNoPmp, (), (), ()>;

/// A decoded snapshot.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The state.
    pub state: VmState,
    /// Guest RAM (at `RAM_BASE`, `state.memory_mib` MiB), freshly allocated and filled with
    /// the file's pages: the restored VM takes it over ([`crate::run::GuestVm::from_snapshot`]).
    pub memory: GuestMemoryMmap,
}

/// What is wrong with a snapshot file (or with writing one).
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file could not be read or written.
    #[error("snapshot {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file to read is not a regular file.
    #[error("snapshot {}: is {kind}, not a regular file", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What it is ("a directory", "a FIFO", ...).
        kind: &'static str,
    },
    /// A snapshot cannot be written there (checked before anything is paused or run).
    #[error("cannot write a snapshot to {}: {reason}", path.display())]
    Target {
        /// The target.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Not a snapshot of this VMM.
    #[error("not a vmm snapshot (no RVCTRSNP magic at the start)")]
    NotASnapshot,
    /// The VM has devices whose state a snapshot cannot hold yet (refused before anything
    /// is written, never dropped silently).
    #[error(
        "snapshots are unsupported with {0}: its interrupt controllers' state is not saved yet"
    )]
    Unsupported(&'static str),
    /// Written by another version of the format.
    #[error("snapshot format version {found} is not supported (this vmm reads versions {OLDEST_VERSION} to {VERSION})")]
    UnknownVersion {
        /// The version in the file.
        found: u32,
    },
    /// The file ends early, or has bytes after the checksum.
    #[error("snapshot file is truncated or has trailing bytes: {0}")]
    Truncated(Truncation),
    /// The checksum does not match.
    #[error("snapshot checksum mismatch (stored {stored:#010x}, computed {computed:#010x}): the file is corrupted")]
    Checksum {
        /// The stored CRC.
        stored: u32,
        /// The CRC of the content.
        computed: u32,
    },
    /// The content is malformed or inconsistent.
    #[error("snapshot content is invalid: {0}")]
    Invalid(InvalidContent),
    /// One field of the state is out of range or inconsistent with the rest.
    #[error("snapshot field `{field}` is invalid: {reason}")]
    BadField {
        /// The field, as named in [`VmState`] (`vcpus[i].…` for a vCPU's).
        field: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// Guest RAM for the restore could not be allocated.
    #[error("cannot allocate {mib} MiB of guest RAM for the snapshot: {source}")]
    Allocate {
        /// The RAM size.
        mib: u64,
        /// What vm-memory reported.
        #[source]
        source: vm_memory::mmap::FromRangesError,
    },
    /// Guest RAM could not be read for a snapshot.
    #[error("cannot snapshot this VM: cannot read guest RAM: {0}")]
    ReadRam(#[source] vm_memory::GuestMemoryError),
}

/// How a snapshot file's length disagrees with its content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Truncation {
    /// A part runs past the end of the file.
    #[error("{what} needs {needs} bytes at offset {at}, the file has {len}")]
    Short {
        /// The part.
        what: &'static str,
        /// Its length.
        needs: u64,
        /// Where it starts.
        at: u64,
        /// The file's length.
        len: u64,
    },
    /// What follows the RAM size is not a whole number of page records and the trailer.
    #[error(
        "the {0} bytes after the RAM size are not whole page records ({RECORD_BYTES} bytes \
         each) followed by the page count and the checksum (12 bytes)"
    )]
    Records(u64),
    /// Bytes follow the checksum.
    #[error("{0} bytes after the checksum")]
    Trailing(u64),
}

/// What is malformed in a snapshot's content.
#[derive(Debug, thiserror::Error)]
pub enum InvalidContent {
    /// The state is longer than [`MAX_STATE_BYTES`].
    #[error("state of {0} bytes (at most {MAX_STATE_BYTES})")]
    StateTooLarge(u64),
    /// Guest RAM is larger than the largest RAM a VM can have.
    #[error("guest RAM of {len} bytes (at most {max})")]
    RamTooLarge {
        /// The stored length.
        len: u64,
        /// The largest accepted.
        max: u64,
    },
    /// The RAM size is not a whole, non-zero number of MiB.
    #[error("guest RAM of {0} bytes (a VM has a whole, non-zero number of MiB)")]
    RamSize(u64),
    /// The file's size leaves room for more page records than guest RAM has pages.
    #[error("{records} page records for {pages} pages of guest RAM")]
    TooManyPages {
        /// Records the file's size makes room for.
        records: u64,
        /// Pages of guest RAM.
        pages: u64,
    },
    /// A page record is out of order or past the end of guest RAM.
    #[error(
        "page record {record}: page {index} is not after the previous record's or is past \
         the end of guest RAM ({pages} pages)"
    )]
    PageIndex {
        /// The record's position in the list.
        record: u64,
        /// Its page index.
        index: u64,
        /// Pages of guest RAM.
        pages: u64,
    },
    /// The stored page count is not the number of records.
    #[error("the page count says {stored} records, the file holds {records}")]
    PageCount {
        /// The count in the file.
        stored: u64,
        /// The records the file holds.
        records: u64,
    },
    /// The state does not decode.
    #[error("cannot decode the state: {0}")]
    Decode(#[source] bincode::Error),
    /// The state has no vCPU.
    #[error("no vCPU")]
    NoVcpu,
}

/// Whether `bytes` are all zero (what snapshots, restores and migrations skip), fast: 64
/// bytes at a time OR-ed together, which the compiler turns into vector instructions.
pub fn is_zero(bytes: &[u8]) -> bool {
    let mut chunks = bytes.chunks_exact(64);
    chunks.all(|c| c.iter().fold(0u8, |a, &b| a | b) == 0)
        && chunks.remainder().iter().all(|&b| b == 0)
}

/// The state's encoding (bincode), as a snapshot file and a migration stream hold it.
pub fn encode_state(state: &VmState) -> std::io::Result<Vec<u8>> {
    bincode::serialize(state).map_err(std::io::Error::other)
}

/// Decodes a state encoded by [`encode_state`], allocating at most its own size.
pub fn decode_state(body: &[u8]) -> Result<VmState, SnapshotError> {
    decode_body(body)
}

/// Decodes a state of format `version` ([`OLDEST_VERSION`]..=[`VERSION`]).
fn decode_versioned(body: &[u8], version: u32) -> Result<VmState, SnapshotError> {
    if version == 7 {
        decode_body::<VmStateV7>(body).map(VmState::from)
    } else if version == 8 {
        decode_body::<VmStateV8>(body).map(VmState::from)
    } else if version == 9 {
        decode_body::<VmStateV9>(body).map(VmState::from)
    } else if version == 10 {
        decode_body::<VmStateV10>(body).map(VmState::from)
    } else if version == 11 {
        decode_body::<VmStateV11>(body).map(VmState::from)
    } else if version == 12 {
        decode_body::<VmStateV12>(body).map(VmState::from)
    } else {
        decode_body(body)
    }
}

/// Decodes `body` as a `T`, allocating at most its own size.
fn decode_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, SnapshotError> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(body.len() as u64)
        .deserialize(body)
        .map_err(|e| SnapshotError::Invalid(InvalidContent::Decode(e)))
}

/// A writer that keeps the CRC-32 of what went through it.
struct CrcWriter<'a, W: Write> {
    out: &'a mut W,
    crc: crc32fast::Hasher,
}

impl<W: Write> CrcWriter<'_, W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.crc.update(bytes);
        self.out.write_all(bytes)
    }
}

/// Encodes a snapshot of `ram_len` bytes of RAM whose page `i` `read_page` puts in its
/// buffer; returns the number of page records.
fn encode_pages(
    state: &VmState,
    ram_len: u64,
    mut read_page: impl FnMut(u64, &mut [u8; PAGE_BYTES as usize]) -> std::io::Result<()>,
    out: &mut impl Write,
) -> std::io::Result<u64> {
    let body = encode_state(state)?;
    let mut w = CrcWriter {
        out,
        crc: crc32fast::Hasher::new(),
    };
    w.put(&MAGIC)?;
    w.put(&VERSION.to_le_bytes())?;
    w.put(&(body.len() as u64).to_le_bytes())?;
    w.put(&body)?;
    w.put(&ram_len.to_le_bytes())?;
    let mut page = [0u8; PAGE_BYTES as usize];
    let mut records = 0u64;
    for i in 0..ram_len.div_ceil(PAGE_BYTES) {
        read_page(i, &mut page)?;
        if !is_zero(&page) {
            w.put(&i.to_le_bytes())?;
            w.put(&page)?;
            records += 1;
        }
    }
    w.put(&records.to_le_bytes())?;
    let crc = w.crc.finalize();
    w.out.write_all(&crc.to_le_bytes())?;
    Ok(records)
}

/// Encodes a snapshot of `state` with guest RAM `memory` (its bytes; a last partial page is
/// padded with zeros) into `out`. Tests and fuzzers use it; a VM's snapshot is
/// [`encode_guest_into`].
pub fn encode_into(state: &VmState, memory: &[u8], out: &mut impl Write) -> std::io::Result<()> {
    encode_pages(
        state,
        memory.len() as u64,
        |i, page| {
            let from = (i * PAGE_BYTES) as usize;
            let src = &memory[from..memory.len().min(from + PAGE_BYTES as usize)];
            page[..src.len()].copy_from_slice(src);
            page[src.len()..].fill(0);
            Ok(())
        },
        out,
    )
    .map(|_| ())
}

/// Encodes a snapshot of `state` with the guest RAM `mem` (at `RAM_BASE`, `memory_mib` of
/// the state) into `out`, streamed a page at a time: the non-zero pages go straight from
/// guest memory to `out`; returns the number of page records.
pub fn encode_guest_into(
    state: &VmState,
    mem: &GuestMemoryMmap,
    out: &mut impl Write,
) -> std::io::Result<u64> {
    let ram_len = state
        .memory_mib
        .checked_mul(1 << 20)
        .ok_or_else(|| std::io::Error::other("the state's memory_mib overflows"))?;
    encode_pages(
        state,
        ram_len,
        |i, page| {
            mem.read_slice(page, GuestAddress(RAM_BASE + i * PAGE_BYTES))
                .map_err(|e| std::io::Error::other(SnapshotError::ReadRam(e)))
        },
        out,
    )
}

/// What a path is when it is not a regular file.
pub(crate) fn file_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

/// The directory a snapshot at `path` goes in, and its file name.
fn split_target(path: &Path) -> Result<(PathBuf, &std::ffi::OsStr), SnapshotError> {
    let target = |reason: &str| SnapshotError::Target {
        path: path.to_path_buf(),
        reason: reason.into(),
    };
    if path.as_os_str().is_empty() {
        return Err(target("the path is empty"));
    }
    let name = path
        .file_name()
        .ok_or_else(|| target("the path names no file (it ends in `/`, `.` or `..`)"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name))
}

/// Whether a snapshot can be written to `path`: it names a file (an existing regular file is
/// replaced; a directory, a FIFO or a device is refused) in a directory that exists and this
/// process can write. `vmm run`/`restore`/`receive` check `--snapshot-on-stop` with it
/// before the guest runs, the control socket a `snapshot` request before it pauses the VM.
pub fn check_target(path: &Path) -> Result<(), SnapshotError> {
    let target = |reason: String| SnapshotError::Target {
        path: path.to_path_buf(),
        reason,
    };
    let (dir, _) = split_target(path)?;
    match std::fs::metadata(path) {
        Ok(meta) => {
            if let Some(kind) = file_kind(&meta) {
                return Err(target(format!(
                    "it is {kind} (a snapshot replaces a regular file only)"
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(target(e.to_string())),
    }
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(target(format!("{} is not a directory", dir.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(target(format!(
                "its directory {} does not exist",
                dir.display()
            )))
        }
        Err(e) => return Err(target(format!("its directory {}: {e}", dir.display()))),
    }
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| target("the path holds a NUL byte".into()))?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call; access(2) only reads it.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(target(format!(
            "its directory {} is not writable ({e})",
            dir.display()
        )));
    }
    Ok(())
}

/// An unnamed regular file in `dir` (`O_TMPFILE`), or `None` where the filesystem or the
/// kernel has none (the caller then creates the temporary file by name).
fn open_unnamed(dir: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o666)
        .open(dir)
        .ok()
}

/// Gives the unnamed file `f` the name `tmp` (a stale file of that name, from a process of
/// the same id, is replaced).
fn link_unnamed(f: &std::fs::File, tmp: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    let _ = std::fs::remove_file(tmp);
    let from = std::ffi::CString::new(format!("/proc/self/fd/{}", f.as_raw_fd()))
        .map_err(std::io::Error::other)?;
    let to = std::ffi::CString::new(tmp.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: both paths are NUL-terminated strings that outlive the call, which only reads
    // them; the descriptor behind `from` is open (`f` is borrowed).
    let r = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Write a snapshot of `state` and guest RAM `mem` to `path`: see the module's doc.
pub fn write(path: &Path, state: &VmState, mem: &GuestMemoryMmap) -> Result<u64, SnapshotError> {
    check_target(path)?;
    let io = |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (dir, name) = split_target(path)?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        // An unnamed file where the filesystem has them (O_TMPFILE): a VMM killed while it
        // writes leaves nothing behind; it gets the temporary name once it is complete.
        let (f, unnamed) = match open_unnamed(&dir) {
            Some(f) => (f, true),
            None => (std::fs::File::create(&tmp)?, false),
        };
        let mut w = BufWriter::with_capacity(IO_BUFFER, f);
        encode_guest_into(state, mem, &mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        let len = f.metadata()?.len();
        if unnamed {
            link_unnamed(&f, &tmp)?;
        }
        std::fs::rename(&tmp, path)?;
        Ok(len)
    })();
    let len = match result {
        Ok(len) => len,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(e));
        }
    };
    // The rename is durable once the directory is.
    std::fs::File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(io)?;
    Ok(len)
}

/// Read and check the snapshot file at `path` (regular files only): see the module's doc.
pub fn read(path: &Path) -> Result<Snapshot, SnapshotError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let not_a_file = |meta: &std::fs::Metadata| match file_kind(meta) {
        Some(kind) => Err(SnapshotError::NotAFile {
            path: path.to_path_buf(),
            kind,
        }),
        None => Ok(()),
    };
    not_a_file(&std::fs::metadata(path).map_err(io)?)?;
    // Non-blocking: should a FIFO replace the file between the check and the open, the
    // open does not wait for a writer (and the check below refuses it).
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    not_a_file(&meta)?;
    parse(BufReader::with_capacity(IO_BUFFER, f), meta.len(), path)
}

/// Check and decode a snapshot held in memory (what [`read`] does with a file's content).
pub fn decode(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
    parse(bytes, bytes.len() as u64, Path::new("(in memory)"))
}

/// A reader that keeps the CRC-32 of what it read.
struct CrcReader<R: Read> {
    inner: R,
    crc: crc32fast::Hasher,
}

impl<R: Read> CrcReader<R> {
    fn exact(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_exact(buf)?;
        self.crc.update(buf);
        Ok(())
    }

    fn u64(&mut self) -> std::io::Result<u64> {
        let mut b = [0u8; 8];
        self.exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
}

/// Reads a snapshot of `len` bytes from `r` (named `path` in errors).
fn parse(r: impl Read, len: u64, path: &Path) -> Result<Snapshot, SnapshotError> {
    let io = |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let short = |what, needs, at| {
        SnapshotError::Truncated(Truncation::Short {
            what,
            needs,
            at,
            len,
        })
    };
    let mut r = CrcReader {
        inner: r,
        crc: crc32fast::Hasher::new(),
    };
    let mut magic = [0u8; 8];
    if len < 8 {
        return Err(SnapshotError::NotASnapshot);
    }
    r.exact(&mut magic).map_err(io)?;
    if magic != MAGIC {
        return Err(SnapshotError::NotASnapshot);
    }
    if len < 12 {
        return Err(short("the version", 4, 8));
    }
    let mut version = [0u8; 4];
    r.exact(&mut version).map_err(io)?;
    let version = u32::from_le_bytes(version);
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(SnapshotError::UnknownVersion { found: version });
    }
    if len < 20 {
        return Err(short("the state length", 8, 12));
    }
    let state_len = r.u64().map_err(io)?;
    if state_len > MAX_STATE_BYTES {
        return Err(SnapshotError::Invalid(InvalidContent::StateTooLarge(
            state_len,
        )));
    }
    // Everything but the records: the file must hold at least that.
    let fixed = FIXED_BYTES + state_len;
    if len < fixed {
        return Err(short(
            "the state, the RAM size, the page count and the checksum",
            fixed - 20,
            20,
        ));
    }
    let after_ram_size = len - (20 + state_len + 8);
    let records_len = after_ram_size - 12;
    if !records_len.is_multiple_of(RECORD_BYTES) {
        return Err(SnapshotError::Truncated(Truncation::Records(
            after_ram_size,
        )));
    }
    let records = records_len / RECORD_BYTES;
    let mut body = Vec::new();
    body.try_reserve_exact(state_len as usize)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::OutOfMemory, e)))?;
    body.resize(state_len as usize, 0);
    r.exact(&mut body).map_err(io)?;
    let ram_len = r.u64().map_err(io)?;
    let max_ram = crate::layout::MAX_MEMORY_MIB << 20;
    if ram_len > max_ram {
        return Err(SnapshotError::Invalid(InvalidContent::RamTooLarge {
            len: ram_len,
            max: max_ram,
        }));
    }
    if ram_len == 0 || !ram_len.is_multiple_of(1 << 20) {
        return Err(SnapshotError::Invalid(InvalidContent::RamSize(ram_len)));
    }
    let pages = ram_len / PAGE_BYTES;
    if records > pages {
        return Err(SnapshotError::Invalid(InvalidContent::TooManyPages {
            records,
            pages,
        }));
    }
    // Every size is checked: now the RAM, mapped lazily (only the pages written below get
    // host memory).
    let mib = ram_len >> 20;
    let mem =
        crate::ram::allocate(ram_len).map_err(|source| SnapshotError::Allocate { mib, source })?;
    // A bad record is reported after the checksum (a corrupted file is reported as such).
    let mut bad_record = None;
    let mut next = 0u64;
    let mut page = [0u8; PAGE_BYTES as usize];
    for record in 0..records {
        let index = r.u64().map_err(io)?;
        r.exact(&mut page).map_err(io)?;
        if index < next || index >= pages {
            bad_record.get_or_insert(InvalidContent::PageIndex {
                record,
                index,
                pages,
            });
            continue;
        }
        next = index + 1;
        if !is_zero(&page) {
            mem.write_slice(&page, GuestAddress(RAM_BASE + index * PAGE_BYTES))
                .map_err(|e| io(std::io::Error::other(e)))?;
        }
    }
    let stored_count = r.u64().map_err(io)?;
    let computed = r.crc.clone().finalize();
    let mut crc = [0u8; 4];
    r.inner.read_exact(&mut crc).map_err(io)?;
    let stored = u32::from_le_bytes(crc);
    // The file may have grown since its size was taken.
    let mut more = [0u8; 1];
    if r.inner.read(&mut more).map_err(io)? != 0 {
        return Err(SnapshotError::Truncated(Truncation::Trailing(1)));
    }
    if stored != computed {
        return Err(SnapshotError::Checksum { stored, computed });
    }
    if let Some(bad) = bad_record {
        return Err(SnapshotError::Invalid(bad));
    }
    if stored_count != records {
        return Err(SnapshotError::Invalid(InvalidContent::PageCount {
            stored: stored_count,
            records,
        }));
    }
    let state = decode_versioned(&body, version)?;
    let announced = state.memory_mib.checked_mul(1 << 20);
    if state.memory_mib == 0 || announced != Some(ram_len) {
        return Err(SnapshotError::BadField {
            field: "memory_mib".into(),
            reason: format!(
                "{} MiB of RAM announced, {ram_len} bytes stored",
                state.memory_mib
            ),
        });
    }
    if state.vcpus.is_empty() {
        return Err(SnapshotError::Invalid(InvalidContent::NoVcpu));
    }
    Ok(Snapshot { state, memory: mem })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (VmState, Vec<u8>) {
        use vm_memory::{GuestAddress, GuestMemoryMmap};
        let mem =
            GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0x8000_0000), 1 << 16)]).unwrap();
        let config = crate::backend::HartConfig {
            pmp_entries: crate::backend::PMP_ENTRIES,
            ..crate::backend::HartConfig::default()
        };
        let hart = crate::backend::Hart::new_guest(config, mem).unwrap();
        assert_eq!(hart.save_state().pmp, crate::backend::PmpState::allow_all());
        let policy =
            ctr_virt::CtrPolicy::on(None, Some(&vcpu_api::ctr::CtrConfig::full())).unwrap();
        let state = VmState {
            memory_mib: 1,
            layout: LayoutState {
                entry: 0x8020_0000,
                kernel: (0x8020_0000, 0x8021_0000),
                initrd: None,
                fdt: 0x8010_0000,
            },
            trap_wfi: false,
            trap_time: true,
            trap_sret: false,
            trap_vm: false,
            sstc: true,
            vcpus: vec![VcpuState {
                hart: {
                    // A trigger set, an LR reservation and a TLB entry, so that formats
                    // without them read differently.
                    let mut h = hart.save_state();
                    h.reservation = Some((0x100, 7));
                    h.tlb.entries.push(crate::backend::TlbEntry {
                        kind: 1,
                        tag: 0x8_0201 | 1 << 56,
                        off: 0x1000,
                        span: 0,
                    });
                    h.triggers.tselect = 1;
                    h.triggers.tdata1[1] = vcpu_api::csr::TDATA1_TYPE_MCONTROL6
                        | vcpu_api::csr::MCONTROL6_VS
                        | vcpu_api::csr::MCONTROL6_LOAD;
                    h.triggers.tdata2[1] = 0x8020_1000;
                    h
                },
                ctr: ctr_virt::GuestCtr::new(policy).snapshot(),
                pmu: pmu_virt::GuestPmu::new(
                    pmu_virt::PmuPolicy::on(),
                    0,
                    pmu_virt::FwTallies::new(1),
                )
                .snapshot(),
                hsm: 0,
                start: (0, 0),
                idle: None,
                ipi_posted: false,
            }],
            clock: 0,
            uart: UartState {
                registers: [1, 0, 0, 1, 3, 0x60, 8, 0, 0],
                in_buffer: b"hi".to_vec(),
            },
            input: b"more".to_vec(),
            host_clock: true,
            aia: None,
        };
        // Pages 3, 4 and 200 hold bytes (page 4 only its last one), the rest is zero.
        let mut memory = vec![0u8; 1 << 20];
        for (i, b) in memory.iter_mut().enumerate().take(4 * 4096).skip(3 * 4096) {
            *b = (i * 7) as u8 | 1;
        }
        memory[5 * 4096 - 1] = 0x5a;
        memory[200 * 4096..201 * 4096].fill(0xee);
        (state, memory)
    }

    fn encoded() -> (Vec<u8>, VmState, Vec<u8>) {
        let (s, m) = sample();
        let mut out = Vec::new();
        encode_into(&s, &m, &mut out).unwrap();
        (out, s, m)
    }

    /// Guest RAM's bytes.
    fn ram_bytes(mem: &GuestMemoryMmap) -> Vec<u8> {
        use vm_memory::{GuestMemoryBackend, GuestMemoryRegion};
        let len: u64 = mem.iter().map(|r| r.len()).sum();
        let mut v = vec![0u8; len as usize];
        mem.read_slice(&mut v, GuestAddress(RAM_BASE)).unwrap();
        v
    }

    /// Where the page records start in `encoded()`'s file.
    fn records_at(bytes: &[u8]) -> usize {
        20 + u64::from_le_bytes(bytes[12..20].try_into().unwrap()) as usize + 8
    }

    /// `bytes` with its checksum recomputed.
    fn with_crc(mut v: Vec<u8>) -> Vec<u8> {
        let end = v.len() - 4;
        let crc = crc32fast::hash(&v[..end]).to_le_bytes();
        v[end..].copy_from_slice(&crc);
        v
    }

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("vmm-snapfile-{}-{name}", std::process::id()))
    }

    #[test]
    fn is_zero_sees_every_byte() {
        for len in [0usize, 1, 63, 64, 65, 4096, 4100] {
            let mut b = vec![0u8; len];
            assert!(is_zero(&b), "{len}");
            for at in 0..len {
                b[at] = 1;
                assert!(!is_zero(&b), "{len} {at}");
                b[at] = 0;
            }
        }
    }

    #[test]
    fn round_trip() {
        let (bytes, s, m) = encoded();
        // Three page records (3, 4, 200), in order; nothing of the zero pages.
        let at = records_at(&bytes);
        assert_eq!(bytes.len(), at + 3 * RECORD_BYTES as usize + 12);
        let index = |r: usize| {
            let o = at + r * RECORD_BYTES as usize;
            u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap())
        };
        assert_eq!([index(0), index(1), index(2)], [3, 4, 200]);
        let n = bytes.len();
        assert_eq!(
            u64::from_le_bytes(bytes[n - 12..n - 4].try_into().unwrap()),
            3
        );
        let snap = decode(&bytes).unwrap();
        assert_eq!(snap.state, s);
        assert_eq!(ram_bytes(&snap.memory), m);
    }

    /// A VM's RAM streamed from guest memory makes the same file as its bytes, and a file
    /// written with [`write`] reads back.
    #[test]
    fn guest_memory_streams_to_the_same_file() {
        let (bytes, s, m) = encoded();
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM_BASE), 1 << 20)]).unwrap();
        mem.write_slice(&m, GuestAddress(RAM_BASE)).unwrap();
        let mut out = Vec::new();
        assert_eq!(encode_guest_into(&s, &mem, &mut out).unwrap(), 3);
        assert_eq!(out, bytes);
        let path = scratch("written");
        assert_eq!(write(&path, &s, &mem).unwrap(), bytes.len() as u64);
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let snap = read(&path).unwrap();
        assert_eq!(snap.state, s);
        assert_eq!(ram_bytes(&snap.memory), m);
        std::fs::remove_file(&path).unwrap();
    }

    /// FIFOs, devices and directories are refused from their metadata: nothing blocks on
    /// a FIFO without a writer, nothing reads `/dev/zero`.
    #[test]
    fn only_regular_files_are_read() {
        let fifo = scratch("fifo");
        let _ = std::fs::remove_file(&fifo);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read(&fifo).unwrap_err().to_string();
        assert!(e.contains("is a FIFO, not a regular file"), "{e}");
        std::fs::remove_file(&fifo).unwrap();
        let e = read(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(
            e.contains("/dev/zero: is a character device, not a regular file"),
            "{e}"
        );
        let e = read(&std::env::temp_dir()).unwrap_err().to_string();
        assert!(e.contains("is a directory, not a regular file"), "{e}");
        let e = read(&scratch("missing")).unwrap_err().to_string();
        assert!(e.contains("No such file"), "{e}");
    }

    /// Bad targets are refused with the path and the reason; a failed write leaves no
    /// temporary file and the existing target as it was.
    #[test]
    fn bad_targets_are_refused_and_failures_leave_nothing_behind() {
        let (_, s, m) = encoded();
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM_BASE), 1 << 20)]).unwrap();
        mem.write_slice(&m, GuestAddress(RAM_BASE)).unwrap();
        let dir = scratch("dir");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let msg = |p: &Path| write(p, &s, &mem).unwrap_err().to_string();
        let sub = dir.join("sub");
        let e = msg(&sub);
        assert!(
            e.contains(&format!("cannot write a snapshot to {}", sub.display()))
                && e.contains("it is a directory"),
            "{e}"
        );
        let missing = dir.join("nope/s.snap");
        let e = msg(&missing);
        assert!(
            e.contains(&format!(
                "its directory {} does not exist",
                dir.join("nope").display()
            )),
            "{e}"
        );
        assert_eq!(check_target(&missing).unwrap_err().to_string(), e);
        let e = msg(Path::new("/dev/null"));
        assert!(e.contains("it is a character device"), "{e}");
        let e = msg(&dir.join(".."));
        assert!(e.contains("names no file"), "{e}");
        // A target that exists is kept as it was when the write fails mid-way (here: the
        // state announces 2 MiB of RAM and guest memory has 1, so reading page 256 fails
        // after the first MiB went to the temporary file).
        let target = dir.join("keep.snap");
        std::fs::write(&target, b"old content").unwrap();
        let mut big = s.clone();
        big.memory_mib = 2;
        let e = write(&target, &big, &mem).unwrap_err().to_string();
        assert!(e.contains("cannot read guest RAM"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"old content");
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().contains(".tmp."))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `s.vcpus` as formats 7 to 12 encoded them: each hart state without its TLB (the last
    /// field of the hart state, before the vCPU's), before format 12 without its triggers
    /// and LR reservation (the fields before), before format 11 without its IMSIC (the field
    /// before those), and before format 9 without its PMP (the one before that).
    fn vcpus_of_format(s: &VmState, version: u32) -> Vec<u8> {
        let mut out = bincode::serialize(&(s.vcpus.len() as u64)).unwrap();
        for v in &s.vcpus {
            let all = bincode::serialize(v).unwrap();
            let hart = bincode::serialize(&v.hart).unwrap().len();
            let mut cut = bincode::serialize(&v.hart.tlb).unwrap().len();
            if version < 12 {
                cut += bincode::serialize(&(&v.hart.triggers, &v.hart.reservation))
                    .unwrap()
                    .len();
            }
            if version < 11 {
                cut += bincode::serialize(&v.hart.imsic).unwrap().len();
            }
            if version < 9 {
                cut += bincode::serialize(&v.hart.pmp).unwrap().len();
            }
            out.extend_from_slice(&all[..hart - cut]);
            out.extend_from_slice(&all[hart..]);
        }
        out
    }

    /// A file of format `version` with `body` as its state and `bytes`' pages.
    fn with_body(bytes: &[u8], version: u32, body: &[u8]) -> Vec<u8> {
        let old_len = u64::from_le_bytes(bytes[12..20].try_into().unwrap()) as usize;
        let mut v = Vec::new();
        v.extend_from_slice(&MAGIC);
        v.extend_from_slice(&version.to_le_bytes());
        v.extend_from_slice(&(body.len() as u64).to_le_bytes());
        v.extend_from_slice(body);
        v.extend_from_slice(&bytes[20 + old_len..]);
        v
    }

    /// The state `s` as format `version` (7 to 12) encoded it: without `sstc` before 8,
    /// harts without their PMP before 9, without `host_clock` before 10, harts without
    /// their IMSIC before 11, without their triggers and reservation (and no `aia`) before
    /// 12, harts without their TLB before 13.
    fn body_of_format(s: &VmState, version: u32) -> Vec<u8> {
        let traps = (s.trap_wfi, s.trap_time, s.trap_sret, s.trap_vm);
        let mut body = bincode::serialize(&(s.memory_mib, &s.layout, traps)).unwrap();
        if version >= 8 {
            body.extend(bincode::serialize(&s.sstc).unwrap());
        }
        if version >= 13 {
            body.extend(bincode::serialize(&s.vcpus).unwrap());
        } else {
            body.extend(vcpus_of_format(s, version));
        }
        body.extend(bincode::serialize(&(s.clock, &s.uart, &s.input)).unwrap());
        if version >= 10 {
            body.extend(bincode::serialize(&s.host_clock).unwrap());
        }
        if version >= 12 {
            body.extend(bincode::serialize(&s.aia).unwrap());
        }
        body
    }

    /// `s` encoded as format `old` decodes to `expected` with RAM `m`, and the same body
    /// announced as format `newer` is refused as undecodable (it lacks fields).
    fn assert_old_format_reads(s: &VmState, m: &[u8], old: u32, newer: u32, expected: &VmState) {
        let (bytes, _, _) = encoded();
        let mut file = with_body(&bytes, old, &body_of_format(s, old));
        let snap = decode(&with_crc(file.clone())).unwrap();
        assert_eq!(&snap.state, expected);
        assert_eq!(ram_bytes(&snap.memory), m);
        file[8..12].copy_from_slice(&newer.to_le_bytes());
        assert!(matches!(
            decode(&with_crc(file)),
            Err(SnapshotError::Invalid(InvalidContent::Decode(_)))
        ));
    }

    /// `s` with every hart's TLB empty: as a format without TLBs (7 to 12) reads it.
    fn without_tlb(s: &VmState) -> VmState {
        let mut s = s.clone();
        for v in &mut s.vcpus {
            assert_ne!(v.hart.tlb, Default::default());
            v.hart.tlb = Default::default();
        }
        s
    }

    /// `s` with every trigger of every hart disabled, no LR reservation and an empty TLB: as
    /// a format without them (7 to 11) reads it.
    fn without_triggers(s: &VmState) -> VmState {
        let mut s = without_tlb(s);
        for v in &mut s.vcpus {
            assert_ne!(v.hart.triggers, Default::default());
            assert!(v.hart.reservation.is_some());
            v.hart.triggers = Default::default();
            v.hart.reservation = None;
        }
        s
    }

    /// A format 7 file (its state without `sstc`, harts without PMP) reads, as a VM
    /// without Sstc whose harts have the allow-all PMP entry.
    #[test]
    fn format_7_reads_without_sstc() {
        let (bytes, s, m) = encoded();
        let expected = VmState {
            sstc: false,
            host_clock: false,
            ..without_triggers(&s)
        };
        assert_old_format_reads(&s, &m, 7, VERSION, &expected);
        // Format 6 and 14 are refused.
        for version in [6u32, 14] {
            let mut v = bytes.clone();
            v[8..12].copy_from_slice(&version.to_le_bytes());
            assert!(matches!(
                decode(&with_crc(v)),
                Err(SnapshotError::UnknownVersion { found }) if found == version
            ));
        }
    }

    /// A format 8 file (harts without PMP) reads, with the allow-all PMP entry the VMM
    /// gives a new VM's harts.
    #[test]
    fn format_8_reads_with_the_allow_all_pmp() {
        let (_, s, m) = encoded();
        assert_eq!(s.vcpus[0].hart.pmp, crate::backend::PmpState::allow_all());
        let expected = VmState {
            host_clock: false,
            ..without_triggers(&s)
        };
        // Announced as format 9 it lacks the PMP.
        assert_old_format_reads(&s, &m, 8, 9, &expected);
    }

    /// A format 9 file (its state without `host_clock`) reads, as a VM on virtual time.
    #[test]
    fn format_9_reads_as_virtual_time() {
        let (_, s, m) = encoded();
        assert!(s.host_clock);
        let expected = VmState {
            host_clock: false,
            ..without_triggers(&s)
        };
        assert_old_format_reads(&s, &m, 9, VERSION, &expected);
    }

    /// A format 10 file (harts without the IMSIC) reads, with harts without an IMSIC.
    #[test]
    fn format_10_reads_without_an_imsic() {
        let (_, s, m) = encoded();
        assert!(!s.vcpus[0].hart.imsic.present());
        assert_old_format_reads(&s, &m, 10, 11, &without_triggers(&s));
    }

    /// A format 11 file (harts without debug triggers or LR reservation, no AIA devices)
    /// reads, with every trigger disabled, no reservation and no AIA devices.
    #[test]
    fn format_11_reads_with_the_triggers_disabled() {
        let (_, s, m) = encoded();
        assert!(s.aia.is_none());
        assert_old_format_reads(&s, &m, 11, VERSION, &without_triggers(&s));
    }

    /// A format 12 file (harts without their TLB) reads, with every TLB empty.
    #[test]
    fn format_12_reads_with_an_empty_tlb() {
        let (_, s, m) = encoded();
        assert_old_format_reads(&s, &m, 12, VERSION, &without_tlb(&s));
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        let (bytes, _, _) = encoded();
        let msg = |b: &[u8]| decode(b).unwrap_err().to_string();
        assert!(msg(b"hello").contains("not a vmm snapshot"));
        let mut v = bytes.clone();
        v[8] = 14;
        assert!(
            msg(&v).contains("version 14 is not supported"),
            "{}",
            msg(&v)
        );
        for cut in [12, 20, 100, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                msg(&bytes[..cut]).contains("truncated"),
                "cut {cut}: {}",
                msg(&bytes[..cut])
            );
        }
        let mut v = bytes.clone();
        v.push(0);
        assert!(msg(&v).contains("trailing"));
        let mut v = bytes.clone();
        let mid = v.len() / 2;
        v[mid] ^= 1;
        assert!(msg(&v).contains("checksum mismatch"));
        // A huge announced length is refused without allocating it.
        let mut v = bytes.clone();
        v[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(msg(&v).contains("at most"));
        // A state longer than the file: refused from the sizes, before anything is read.
        let mut v = bytes.clone();
        v[12..20].copy_from_slice(&(10u64 << 20).to_le_bytes());
        assert!(
            msg(&v).contains("needs 10485780 bytes at offset 20, the file has"),
            "{}",
            msg(&v)
        );
        let at = records_at(&bytes);
        let ram = at - 8..at;
        // More RAM than a VM can have, and RAM that is not whole MiB.
        let mut v = bytes.clone();
        v[ram.clone()].copy_from_slice(&((crate::layout::MAX_MEMORY_MIB + 1) << 20).to_le_bytes());
        assert!(
            msg(&v).contains("guest RAM of 68720525312 bytes (at most"),
            "{}",
            msg(&v)
        );
        let mut v = bytes.clone();
        v[ram.clone()].copy_from_slice(&12288u64.to_le_bytes());
        assert!(
            msg(&v).contains("whole, non-zero number of MiB"),
            "{}",
            msg(&v)
        );
        // More records than pages: the file's size says so before any RAM is allocated.
        let mut v = bytes.clone();
        v[ram.clone()].copy_from_slice(&0u64.to_le_bytes());
        assert!(
            msg(&v).contains("whole, non-zero number of MiB"),
            "{}",
            msg(&v)
        );
        // Records out of order, past the end of RAM, a wrong count: refused (with a correct
        // checksum), and a wrong checksum is reported before them.
        let index = |r: usize| at + r * RECORD_BYTES as usize;
        let mut v = bytes.clone();
        v[index(1)..index(1) + 8].copy_from_slice(&3u64.to_le_bytes());
        let v = with_crc(v);
        assert!(
            msg(&v).contains("page record 1: page 3 is not after the previous"),
            "{}",
            msg(&v)
        );
        let mut v = bytes.clone();
        v[index(2)..index(2) + 8].copy_from_slice(&256u64.to_le_bytes());
        let mut corrupt = v.clone();
        let v = with_crc(v);
        assert!(msg(&v).contains("page 256 is not after") && msg(&v).contains("(256 pages)"));
        corrupt[index(0) + 100] ^= 1;
        assert!(msg(&corrupt).contains("checksum mismatch"));
        let mut v = bytes.clone();
        let n = v.len();
        v[n - 12..n - 4].copy_from_slice(&7u64.to_le_bytes());
        let v = with_crc(v);
        assert!(
            msg(&v).contains("the page count says 7 records, the file holds 3"),
            "{}",
            msg(&v)
        );
    }

    /// A sparse file announcing the largest RAM a VM can have and holding one page reads
    /// back without the RAM costing host memory (it is mapped lazily); the same header with
    /// more records than pages is refused from the file's size.
    #[test]
    fn large_sparse_ram_is_cheap_and_too_many_records_are_refused() {
        let (mut s, _) = sample();
        s.memory_mib = crate::layout::MAX_MEMORY_MIB;
        let mut bytes = Vec::new();
        encode_into(&s, &[1u8], &mut bytes).unwrap();
        let at = records_at(&bytes);
        bytes[at - 8..at].copy_from_slice(&(crate::layout::MAX_MEMORY_MIB << 20).to_le_bytes());
        let bytes = with_crc(bytes);
        let snap = decode(&bytes).unwrap();
        let mut b = [0u8; 2];
        snap.memory
            .read_slice(&mut b, GuestAddress(RAM_BASE))
            .unwrap();
        assert_eq!(b, [1, 0]);
        // 1 MiB of RAM (256 pages) and 257 records.
        let (s, _) = sample();
        let mem: Vec<u8> = vec![1u8; 1 << 20];
        let mut bytes = Vec::new();
        encode_into(&s, &mem, &mut bytes).unwrap();
        let n = bytes.len();
        let tail = bytes.split_off(n - 12);
        bytes.extend_from_within(n - 12 - RECORD_BYTES as usize..n - 12);
        bytes.extend_from_slice(&tail);
        let e = decode(&bytes).unwrap_err().to_string();
        assert!(e.contains("257 page records for 256 pages"), "{e}");
    }

    /// A `memory_mib` whose size in bytes overflows 64 bits is refused as a snapshot field,
    /// not as a `--memory` size (2^44 + 4 MiB is 4 MiB modulo 2^64 bytes).
    #[test]
    fn memory_mib_overflow_names_the_field() {
        let (mut s, _) = sample();
        s.memory_mib = (1 << 44) + 4;
        let memory = vec![0u8; 4 << 20];
        let mut bytes = Vec::new();
        encode_into(&s, &memory, &mut bytes).unwrap();
        let e = decode(&bytes).unwrap_err();
        assert!(
            matches!(e, SnapshotError::BadField { ref field, .. } if field == "memory_mib"),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("`memory_mib`") && msg.contains("17592186044420 MiB"),
            "{msg}"
        );
    }

    /// Random corruptions never panic and never pass as valid unless unchanged.
    #[test]
    fn fuzzed_files_never_panic() {
        let (bytes, _, _) = encoded();
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..600 {
            let mut v = bytes.clone();
            match rnd() % 4 {
                0 => {
                    let i = (rnd() as usize) % v.len();
                    v[i] = rnd() as u8;
                }
                1 => v.truncate((rnd() as usize) % v.len()),
                2 => {
                    // Corrupt the state and fix the checksum, so the decoder sees it.
                    let i = 20 + (rnd() as usize) % 200;
                    v[i] = rnd() as u8;
                    v = with_crc(v);
                }
                _ => {
                    // Corrupt the RAM size, a page index or the count, and fix the checksum.
                    let at = records_at(&v);
                    let i = match rnd() % 3 {
                        0 => at - 8 + (rnd() as usize) % 8,
                        1 => {
                            at + (rnd() as usize % 3) * RECORD_BYTES as usize + (rnd() as usize) % 8
                        }
                        _ => v.len() - 12 + (rnd() as usize) % 8,
                    };
                    v[i] = rnd() as u8;
                    v = with_crc(v);
                }
            }
            // Without a recomputed checksum, a change never passes.
            let fixed_crc = v.len() == bytes.len() && v[v.len() - 4..] != bytes[bytes.len() - 4..];
            if decode(&v).is_ok() && !fixed_crc {
                assert_eq!(v, bytes, "a changed file decodes");
            }
        }
    }
}
