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
//! | 4 | format version ([`VERSION`]) |
//! | 8 | length S of the state |
//! | S | the state: [`VmState`], serde with bincode's compact encoding |
//! | 8 | length M of guest RAM |
//! | M | guest RAM, byte for byte |
//! | 4 | CRC-32 (IEEE) of every byte before it |
//!
//! Snapshot files are untrusted input: [`decode`] checks the magic, the version, every
//! length against the file's size and the limits, and the checksum before it decodes
//! anything, and decodes the state with a size limit, so no file can make it panic or
//! allocate more than the file's own size. Writing goes to a temporary file renamed into
//! place, so an existing file is never left half-written.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::devices::uart::UartState;

/// The file's first bytes.
pub const MAGIC: [u8; 8] = *b"RVCTRSNP";
/// The format version this VMM writes and reads.
pub const VERSION: u32 = 5;
/// The largest encoded state accepted (the state is a few KiB per vCPU).
pub const MAX_STATE_BYTES: u64 = 16 << 20;

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
    /// The VMM's trap policy: WFI (`hstatus.VTW`) and `time` (`hcounteren.TM`).
    pub trap_wfi: bool,
    /// See `trap_wfi`.
    pub trap_time: bool,
    /// The vCPUs.
    pub vcpus: Vec<VcpuState>,
    /// The virtual clock the vCPUs share (instruction slots; with one vCPU, its own).
    pub clock: u64,
    /// The UART.
    pub uart: UartState,
    /// Console input not yet given to the guest.
    pub input: Vec<u8>,
}

/// A decoded snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The state.
    pub state: VmState,
    /// Guest RAM.
    pub memory: Vec<u8>,
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
    /// Not a snapshot of this VMM.
    #[error("not a vmm snapshot (no RVCTRSNP magic at the start)")]
    NotASnapshot,
    /// Written by another version of the format.
    #[error("snapshot format version {found} is not supported (this vmm reads version {VERSION})")]
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
        at: usize,
        /// The file's length.
        len: usize,
    },
    /// Bytes follow the checksum.
    #[error("{0} bytes after the checksum")]
    Trailing(usize),
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
    /// The state does not decode.
    #[error("cannot decode the state: {0}")]
    Decode(#[source] bincode::Error),
    /// The state has no vCPU.
    #[error("no vCPU")]
    NoVcpu,
}

/// Whether `bytes` are all zero (what restores and migrations skip), fast: 64 bytes at a
/// time OR-ed together, which the compiler turns into vector instructions.
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
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(body.len() as u64)
        .deserialize(body)
        .map_err(|e| SnapshotError::Invalid(InvalidContent::Decode(e)))
}

/// Encode a snapshot into `out`.
pub fn encode_into(state: &VmState, memory: &[u8], out: &mut impl Write) -> std::io::Result<()> {
    let body = encode_state(state)?;
    let mut crc = crc32fast::Hasher::new();
    let mut put = |bytes: &[u8], out: &mut dyn Write| -> std::io::Result<()> {
        crc.update(bytes);
        out.write_all(bytes)
    };
    put(&MAGIC, out)?;
    put(&VERSION.to_le_bytes(), out)?;
    put(&(body.len() as u64).to_le_bytes(), out)?;
    put(&body, out)?;
    put(&(memory.len() as u64).to_le_bytes(), out)?;
    put(memory, out)?;
    out.write_all(&crc.finalize().to_le_bytes())
}

/// Write a snapshot to `path` (through a temporary file renamed into place).
pub fn write(path: &Path, state: &VmState, memory: &[u8]) -> Result<(), SnapshotError> {
    let io = |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let result = (|| {
        let f = std::fs::File::create(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        encode_into(state, memory, &mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    std::fs::rename(&tmp, path).map_err(io)
}

/// Read and check a snapshot file.
pub fn read(path: &Path) -> Result<Snapshot, SnapshotError> {
    let bytes = std::fs::read(path).map_err(|source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    decode(&bytes)
}

/// Take `n` bytes at `*at`, or say what was expected.
fn take<'a>(
    bytes: &'a [u8],
    at: &mut usize,
    n: u64,
    what: &'static str,
) -> Result<&'a [u8], SnapshotError> {
    let start = *at;
    let end = usize::try_from(n)
        .ok()
        .and_then(|n| start.checked_add(n))
        .filter(|&e| e <= bytes.len())
        .ok_or(SnapshotError::Truncated(Truncation::Short {
            what,
            needs: n,
            at: start,
            len: bytes.len(),
        }))?;
    *at = end;
    Ok(&bytes[start..end])
}

fn u64_at(bytes: &[u8], at: &mut usize, what: &'static str) -> Result<u64, SnapshotError> {
    let b = take(bytes, at, 8, what)?;
    Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// Check and decode a snapshot.
pub fn decode(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
    if bytes.len() < 8 || bytes[..8] != MAGIC {
        return Err(SnapshotError::NotASnapshot);
    }
    let mut at = 8;
    let version = u32::from_le_bytes(take(bytes, &mut at, 4, "the version")?.try_into().unwrap());
    if version != VERSION {
        return Err(SnapshotError::UnknownVersion { found: version });
    }
    let state_len = u64_at(bytes, &mut at, "the state length")?;
    if state_len > MAX_STATE_BYTES {
        return Err(SnapshotError::Invalid(InvalidContent::StateTooLarge(
            state_len,
        )));
    }
    let body = take(bytes, &mut at, state_len, "the state")?;
    let mem_len = u64_at(bytes, &mut at, "the memory length")?;
    let max_mem = crate::layout::MAX_MEMORY_MIB << 20;
    if mem_len > max_mem {
        return Err(SnapshotError::Invalid(InvalidContent::RamTooLarge {
            len: mem_len,
            max: max_mem,
        }));
    }
    let memory = take(bytes, &mut at, mem_len, "guest RAM")?;
    let content_end = at;
    let stored = u32::from_le_bytes(take(bytes, &mut at, 4, "the checksum")?.try_into().unwrap());
    if at != bytes.len() {
        return Err(SnapshotError::Truncated(Truncation::Trailing(
            bytes.len() - at,
        )));
    }
    let computed = crc32fast::hash(&bytes[..content_end]);
    if stored != computed {
        return Err(SnapshotError::Checksum { stored, computed });
    }
    let state = decode_state(body)?;
    let announced = state.memory_mib.checked_mul(1 << 20);
    if state.memory_mib == 0 || announced != Some(mem_len) {
        return Err(SnapshotError::BadField {
            field: "memory_mib".into(),
            reason: format!(
                "{} MiB of RAM announced, {mem_len} bytes stored",
                state.memory_mib
            ),
        });
    }
    if state.vcpus.is_empty() {
        return Err(SnapshotError::Invalid(InvalidContent::NoVcpu));
    }
    Ok(Snapshot {
        state,
        memory: memory.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (VmState, Vec<u8>) {
        use vm_memory::{GuestAddress, GuestMemoryMmap};
        let mem =
            GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0x8000_0000), 1 << 16)]).unwrap();
        let hart =
            crate::backend::Hart::new_guest(crate::backend::HartConfig::default(), mem).unwrap();
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
            vcpus: vec![VcpuState {
                hart: hart.save_state(),
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
        };
        let memory: Vec<u8> = (0..1 << 20).map(|i| (i * 7) as u8).collect();
        (state, memory)
    }

    fn encoded() -> (Vec<u8>, VmState, Vec<u8>) {
        let (s, m) = sample();
        let mut out = Vec::new();
        encode_into(&s, &m, &mut out).unwrap();
        (out, s, m)
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
        let snap = decode(&bytes).unwrap();
        assert_eq!(snap.state, s);
        assert_eq!(snap.memory, m);
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        let (bytes, _, _) = encoded();
        let msg = |b: &[u8]| decode(b).unwrap_err().to_string();
        assert!(msg(b"hello").contains("not a vmm snapshot"));
        let mut v = bytes.clone();
        v[8] = 9;
        assert!(
            msg(&v).contains("version 9 is not supported"),
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
        for _ in 0..300 {
            let mut v = bytes.clone();
            match rnd() % 3 {
                0 => {
                    let i = (rnd() as usize) % v.len();
                    v[i] = rnd() as u8;
                }
                1 => v.truncate((rnd() as usize) % v.len()),
                _ => {
                    // Corrupt the state and fix the checksum, so the decoder sees it.
                    let i = 20 + (rnd() as usize) % 200;
                    v[i] = rnd() as u8;
                    let end = v.len() - 4;
                    let crc = crc32fast::hash(&v[..end]).to_le_bytes();
                    v[end..].copy_from_slice(&crc);
                }
            }
            let _ = decode(&v);
        }
    }
}
