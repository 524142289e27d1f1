//! Moving a `vmm run` VM to another vmm process: the destination (`vmm receive --listen`)
//! and the source's half (the control socket's `migrate` request).
//!
//! This version moves the VM with a stop-and-copy: the source pauses every vCPU, sends the
//! whole VM (the snapshot state and every non-zero page of RAM) and waits for the
//! destination to say that it holds the complete VM; only then does the source end, and the
//! destination run it. Pre-copy rounds while the guest runs (dirty-page tracking) are not
//! implemented yet: the guest is paused for the whole copy (`downtime_ms` in the answer).
//!
//! The stream (integers little-endian) is a sequence of frames: a kind byte, a `u64`
//! payload length, the payload.
//!
//! | frame | from | payload |
//! | --- | --- | --- |
//! | `HELLO` (1) | destination, on connect | JSON [`Capabilities`]: protocol version, the CTR depths its hart supports, its RAM and vCPU limits |
//! | `STATE` (2) | source | the VM's state ([`crate::snapshot::VmState`], as in a snapshot file) |
//! | `PAGES` (3) | source | up to [`PAGES_PER_FRAME`] pages, each a `u64` page index then 4096 bytes; pages not sent are zero |
//! | `END` (4) | source | `u64` pages sent, `u32` CRC-32 of every `STATE` and `PAGES` payload |
//! | `READY` (5) | destination | empty: the VM is complete, checked and built (as `vmm restore` checks a snapshot) |
//! | `REFUSE` (6) | destination | why, in UTF-8; the destination then ends without running anything |
//! | `GO` (7) | source | empty: the source has let go; the destination runs the VM |
//!
//! The source checks the destination's limits before it pauses anything; the destination
//! checks every length before it allocates, the checksum, and the whole VM (the same checks
//! as `vmm restore`) before it answers `READY`. Any failure before `GO` leaves the source
//! running as if nothing had happened (the pause is invisible to the guest: time is
//! virtual) and the destination running nothing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::builder::allocate_ram;
use super::snapshot::{GuestRam, RestoreConfig, VmCommon};
use super::{run_vm, ConsoleInput, GuestVm, RunExit, RunStats, MAX_VCPUS};
use crate::devices::Console;
use crate::error::Error;
use crate::layout::{MAX_MEMORY_MIB, RAM_BASE};
use crate::snapshot::{VmState, MAX_STATE_BYTES};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

/// The protocol version this VMM speaks.
pub const PROTOCOL_VERSION: u32 = 1;
/// Pages per `PAGES` frame.
pub const PAGES_PER_FRAME: usize = 256;
/// Bytes of one page.
const PAGE: usize = 4096;
/// The longest `HELLO` or `REFUSE` accepted.
const MAX_MESSAGE: u64 = 64 << 10;
/// How long each read or write of the stream may take before the move fails.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the source waits to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

const HELLO: u8 = 1;
const STATE: u8 = 2;
const PAGES: u8 = 3;
const END: u8 = 4;
const READY: u8 = 5;
const REFUSE: u8 = 6;
const GO: u8 = 7;

pub use super::error::MigrateError;

/// Where a VM goes: `unix:PATH` or `tcp:HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A UNIX stream socket.
    Unix(PathBuf),
    /// A TCP address.
    Tcp(String),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
            Endpoint::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

impl std::str::FromStr for Endpoint {
    type Err = MigrateError;

    fn from_str(s: &str) -> Result<Endpoint, MigrateError> {
        let bad = || MigrateError::BadAddress(s.to_string());
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() || path.contains('\0') {
                return Err(bad());
            }
            Ok(Endpoint::Unix(PathBuf::from(path)))
        } else if let Some(addr) = s.strip_prefix("tcp:") {
            let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(bad());
            }
            Ok(Endpoint::Tcp(addr.to_string()))
        } else {
            Err(bad())
        }
    }
}

/// One end of a migration stream.
#[derive(Debug)]
enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Conn {
    fn set_timeouts(&self, t: Duration) -> std::io::Result<()> {
        match self {
            Conn::Unix(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
            Conn::Tcp(s) => {
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(buf),
            Conn::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Unix(s) => s.write(buf),
            Conn::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Unix(s) => s.flush(),
            Conn::Tcp(s) => s.flush(),
        }
    }
}

impl Endpoint {
    fn connect(&self) -> Result<Conn, MigrateError> {
        let err = |source| MigrateError::Connect {
            what: "connect to",
            addr: self.to_string(),
            source,
        };
        let conn = match self {
            Endpoint::Unix(p) => Conn::Unix(UnixStream::connect(p).map_err(err)?),
            Endpoint::Tcp(a) => {
                let mut last = None;
                let mut found = None;
                for addr in a.to_socket_addrs().map_err(err)? {
                    match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                        Ok(s) => {
                            found = Some(s);
                            break;
                        }
                        Err(e) => last = Some(e),
                    }
                }
                match found {
                    Some(s) => Conn::Tcp(s),
                    None => {
                        return Err(err(last.unwrap_or_else(|| {
                            std::io::Error::other("the name resolves to no address")
                        })))
                    }
                }
            }
        };
        conn.set_timeouts(IO_TIMEOUT).map_err(err)?;
        Ok(conn)
    }
}

/// What the destination can hold, sent in `HELLO`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// `"vmm-migrate"`.
    pub protocol: String,
    /// [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The CTR depths the destination's hart supports, in entries (`--host-ctr-depths`).
    pub host_ctr_depths: Vec<u64>,
    /// The largest guest RAM it accepts, in MiB.
    pub max_memory_mib: u64,
    /// The most vCPUs it accepts.
    pub max_vcpus: u64,
}

fn write_frame(conn: &mut Conn, kind: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut head = [0u8; 9];
    head[0] = kind;
    head[1..].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    conn.write_all(&head)?;
    conn.write_all(payload)
}

/// Reads a frame's header, checks its length against `max(kind)`, then its payload.
fn read_frame(
    conn: &mut Conn,
    while_: &'static str,
    max: impl Fn(u8) -> Option<u64>,
) -> Result<(u8, Vec<u8>), MigrateError> {
    let io = |source| MigrateError::Io { while_, source };
    let mut head = [0u8; 9];
    conn.read_exact(&mut head).map_err(io)?;
    let kind = head[0];
    let len = u64::from_le_bytes(head[1..].try_into().expect("8 bytes"));
    let Some(limit) = max(kind) else {
        return Err(MigrateError::Protocol(format!(
            "unexpected frame kind {kind} while {while_}"
        )));
    };
    if len > limit {
        return Err(MigrateError::Protocol(format!(
            "frame kind {kind} of {len} bytes (at most {limit}) while {while_}"
        )));
    }
    let mut payload = vec![0u8; len as usize];
    conn.read_exact(&mut payload).map_err(io)?;
    Ok((kind, payload))
}

/// What the source reports of a successful move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveReport {
    /// From the request to the destination's `READY`.
    pub total: Duration,
    /// How long the guest was paused.
    pub downtime: Duration,
    /// Copy rounds (1: stop-and-copy).
    pub rounds: u32,
    /// Bytes sent.
    pub bytes: u64,
}

/// The source's half: connects to `to`, checks the destination's limits, then (pausing the
/// VM through `pause`, which returns the vCPUs' saved states) sends it. `Ok` once the
/// destination has the complete VM and `GO` was sent: the caller then ends the source VM.
/// On `Err` nothing was handed over; the caller resumes the VM.
pub(crate) fn send(
    to: &Endpoint,
    common: &VmCommon,
    vcpus: u64,
    pause: &mut dyn FnMut() -> Result<Vec<super::snapshot::VcpuSaved>, String>,
) -> Result<(MoveReport, Instant), MigrateError> {
    let start = Instant::now();
    let mut conn = to.connect()?;
    let (kind, hello) = read_frame(&mut conn, "waiting for the destination's HELLO", |k| {
        (k == HELLO).then_some(MAX_MESSAGE)
    })?;
    debug_assert_eq!(kind, HELLO);
    let caps: Capabilities = serde_json::from_slice(&hello)
        .map_err(|e| MigrateError::Protocol(format!("the destination's HELLO: {e}")))?;
    if caps.protocol != "vmm-migrate" || caps.version != PROTOCOL_VERSION {
        return Err(MigrateError::Refused(format!(
            "it speaks {} version {}, this VMM {PROTOCOL_VERSION}",
            caps.protocol, caps.version
        )));
    }
    if common.memory_mib > caps.max_memory_mib {
        return Err(MigrateError::Refused(format!(
            "the VM has {} MiB of RAM, the destination takes at most {}",
            common.memory_mib, caps.max_memory_mib
        )));
    }
    if vcpus > caps.max_vcpus {
        return Err(MigrateError::Refused(format!(
            "the VM has {vcpus} vCPUs, the destination takes at most {}",
            caps.max_vcpus
        )));
    }
    // Everything checked that can be without the guest's state: stop it.
    let saved = pause().map_err(MigrateError::Protocol)?;
    let paused_at = Instant::now();
    let state = common.state(saved);
    let io = |while_| move |source| MigrateError::Io { while_, source };
    let body = crate::snapshot::encode_state(&state).map_err(io("encoding the state"))?;
    let mut crc = crc32fast::Hasher::new();
    let mut bytes = 0u64;
    crc.update(&body);
    write_frame(&mut conn, STATE, &body).map_err(io("sending the state"))?;
    bytes += 9 + body.len() as u64;
    let mut frame = Vec::with_capacity(PAGES_PER_FRAME * (8 + PAGE));
    let mut sent = 0u64;
    let mut in_frame = 0;
    let mut page = [0u8; PAGE];
    for i in 0..(common.memory_mib << 20) / PAGE as u64 {
        // Read in place, a page at a time: no copy of the whole RAM.
        common
            .mem
            .read_slice(&mut page, GuestAddress(RAM_BASE + i * PAGE as u64))
            .map_err(|e| MigrateError::Protocol(format!("cannot read guest RAM: {e}")))?;
        if crate::snapshot::is_zero(&page) {
            continue;
        }
        frame.extend_from_slice(&i.to_le_bytes());
        frame.extend_from_slice(&page);
        in_frame += 1;
        sent += 1;
        if in_frame == PAGES_PER_FRAME {
            crc.update(&frame);
            write_frame(&mut conn, PAGES, &frame).map_err(io("sending RAM"))?;
            bytes += 9 + frame.len() as u64;
            frame.clear();
            in_frame = 0;
        }
    }
    if in_frame > 0 {
        crc.update(&frame);
        write_frame(&mut conn, PAGES, &frame).map_err(io("sending RAM"))?;
        bytes += 9 + frame.len() as u64;
    }
    let mut end = sent.to_le_bytes().to_vec();
    end.extend_from_slice(&crc.finalize().to_le_bytes());
    write_frame(&mut conn, END, &end).map_err(io("sending the end"))?;
    bytes += 9 + end.len() as u64;
    let (kind, why) = read_frame(
        &mut conn,
        "waiting for the destination's READY",
        |k| match k {
            READY => Some(0),
            REFUSE => Some(MAX_MESSAGE),
            _ => None,
        },
    )?;
    if kind == REFUSE {
        return Err(MigrateError::Refused(
            String::from_utf8_lossy(&why).into_owned(),
        ));
    }
    write_frame(&mut conn, GO, &[]).map_err(io("sending GO"))?;
    Ok((
        MoveReport {
            total: start.elapsed(),
            downtime: paused_at.elapsed(),
            rounds: 1,
            bytes,
        },
        paused_at,
    ))
}

/// A destination waiting for one VM: `vmm receive --listen`.
#[derive(Debug)]
pub struct Receiver {
    listener: Listener,
    endpoint: Endpoint,
}

#[derive(Debug)]
enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = &self.listener {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Receiver {
    /// Listens on `at` (a stale UNIX socket there is replaced; any other file is not).
    pub fn bind(at: &Endpoint) -> Result<Receiver, MigrateError> {
        let err = |source| MigrateError::Connect {
            what: "listen on",
            addr: at.to_string(),
            source,
        };
        let listener = match at {
            Endpoint::Unix(path) => {
                use std::os::unix::fs::FileTypeExt;
                if let Ok(meta) = std::fs::symlink_metadata(path) {
                    if meta.file_type().is_socket() {
                        let _ = std::fs::remove_file(path);
                    } else {
                        return Err(MigrateError::NotASocket(path.clone()));
                    }
                }
                Listener::Unix(UnixListener::bind(path).map_err(err)?, path.clone())
            }
            Endpoint::Tcp(addr) => Listener::Tcp(TcpListener::bind(addr).map_err(err)?),
        };
        Ok(Receiver {
            listener,
            endpoint: at.clone(),
        })
    }

    /// Where it listens (with the port the system chose for `tcp:HOST:0`).
    pub fn endpoint(&self) -> Endpoint {
        match &self.listener {
            Listener::Tcp(l) => match l.local_addr() {
                Ok(a) => Endpoint::Tcp(a.to_string()),
                Err(_) => self.endpoint.clone(),
            },
            Listener::Unix(..) => self.endpoint.clone(),
        }
    }

    /// Waits for one incoming VM, checks it as `vmm restore` checks a snapshot (on the
    /// destination `options` describe) and builds it, console output going to `console`.
    /// Refuses a bad stream or a VM it cannot hold with a message to the source and an
    /// error here, running nothing.
    pub fn accept(&self, options: &RestoreConfig, console: Console) -> Result<GuestVm, Error> {
        let err = |source| MigrateError::Connect {
            what: "accept a VM on",
            addr: self.endpoint.to_string(),
            source,
        };
        let mut conn = match &self.listener {
            Listener::Unix(l, _) => Conn::Unix(l.accept().map_err(err)?.0),
            Listener::Tcp(l) => Conn::Tcp(l.accept().map_err(err)?.0),
        };
        conn.set_timeouts(IO_TIMEOUT).map_err(err)?;
        let caps = Capabilities {
            protocol: "vmm-migrate".into(),
            version: PROTOCOL_VERSION,
            host_ctr_depths: options.host_ctr_depths.entries().collect(),
            max_memory_mib: MAX_MEMORY_MIB,
            max_vcpus: MAX_VCPUS,
        };
        let hello = serde_json::to_vec(&caps).expect("capabilities encode");
        write_frame(&mut conn, HELLO, &hello).map_err(|source| MigrateError::Io {
            while_: "sending HELLO",
            source,
        })?;
        let refuse = |conn: &mut Conn, e: Error| -> Error {
            let _ = write_frame(conn, REFUSE, e.to_string().as_bytes());
            e
        };
        let (state, ram) = match read_vm(&mut conn) {
            Ok(vm) => vm,
            Err(e) => return Err(refuse(&mut conn, e)),
        };
        let vm = match GuestVm::from_state(&state, GuestRam::Filled(ram), options, console) {
            Ok(vm) => vm,
            Err(e) => return Err(refuse(&mut conn, e)),
        };
        write_frame(&mut conn, READY, &[]).map_err(|source| MigrateError::Io {
            while_: "sending READY",
            source,
        })?;
        match read_frame(&mut conn, "waiting for GO", |k| (k == GO).then_some(0)) {
            Ok(_) => Ok(vm),
            Err(e) => Err(MigrateError::NoGo(e.to_string()).into()),
        }
    }
}

/// Reads `STATE`, `PAGES` and `END`: the state, and guest RAM with the pages written into
/// it, checking every length before it allocates and the checksum at the end.
fn read_vm(conn: &mut Conn) -> Result<(VmState, GuestMemoryMmap), Error> {
    let max_pages = (PAGES_PER_FRAME * (8 + PAGE)) as u64;
    let (_, body) = read_frame(conn, "receiving the state", |k| {
        (k == STATE).then_some(MAX_STATE_BYTES)
    })?;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&body);
    let state: VmState = crate::snapshot::decode_state(&body)
        .map_err(|e| MigrateError::Protocol(format!("the state: {e}")))?;
    if state.memory_mib == 0 || state.memory_mib > MAX_MEMORY_MIB {
        return Err(MigrateError::Protocol(format!(
            "the state announces {} MiB of RAM (1 to {MAX_MEMORY_MIB})",
            state.memory_mib
        ))
        .into());
    }
    // Guest RAM is mapped lazily: pages not sent cost nothing.
    let memory = allocate_ram(state.memory_mib)?;
    let pages = (state.memory_mib << 20) / PAGE as u64;
    let mut received = 0u64;
    loop {
        let (kind, payload) = read_frame(conn, "receiving RAM", |k| match k {
            PAGES => Some(max_pages),
            END => Some(12),
            _ => None,
        })?;
        if kind == END {
            if payload.len() != 12 {
                return Err(MigrateError::Protocol("an END frame of the wrong size".into()).into());
            }
            let sent = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
            let stored = u32::from_le_bytes(payload[8..].try_into().expect("4 bytes"));
            if sent != received {
                return Err(MigrateError::Protocol(format!(
                    "the source sent {sent} pages, {received} arrived"
                ))
                .into());
            }
            let computed = crc.finalize();
            if stored != computed {
                return Err(MigrateError::Protocol(format!(
                    "checksum mismatch (stream {stored:#010x}, computed {computed:#010x})"
                ))
                .into());
            }
            break;
        }
        crc.update(&payload);
        if payload.len() % (8 + PAGE) != 0 {
            return Err(MigrateError::Protocol(format!(
                "a PAGES frame of {} bytes is not whole pages",
                payload.len()
            ))
            .into());
        }
        for rec in payload.chunks(8 + PAGE) {
            let index = u64::from_le_bytes(rec[..8].try_into().expect("8 bytes"));
            if index >= pages {
                return Err(MigrateError::Protocol(format!(
                    "page {index} is beyond guest RAM ({pages} pages)"
                ))
                .into());
            }
            memory
                .write_slice(&rec[8..], GuestAddress(RAM_BASE + index * PAGE as u64))
                .map_err(|e| MigrateError::Protocol(format!("cannot write guest RAM: {e}")))?;
            received += 1;
        }
    }
    Ok((state, memory))
}

/// `vmm receive`: waits on `at` for one VM and runs it to its end, like `vmm restore`.
/// `ready` is told where it listens, once it does.
pub fn receive_and_run(
    at: &Endpoint,
    options: &RestoreConfig,
    console: Console,
    input: ConsoleInput,
    ready: impl FnOnce(&Endpoint),
) -> Result<(RunExit, RunStats), Error> {
    let receiver = Receiver::bind(at)?;
    ready(&receiver.endpoint());
    let vm = receiver.accept(options, console)?;
    drop(receiver);
    run_vm(vm, input)
}
