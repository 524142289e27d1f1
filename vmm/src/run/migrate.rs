//! Moving a `vmm run` VM to another vmm process: the destination (`vmm receive --listen`)
//! and the source's half (the control socket's `migrate` request).
//!
//! The move is a pre-copy: with the guest running, the source sends all of guest RAM, then
//! the pages written since, round after round, until what is left fits the downtime budget
//! (`max_downtime_ms`, measured against the link's speed in the first round) or
//! [`MAX_ROUNDS`] is reached; then it pauses every vCPU, sends the last dirty pages and the
//! whole VM state, and waits for the destination to say that it holds the complete VM; only
//! then does the source end and the destination run it. Writes are tracked by
//! [`super::dirty::DirtyLog`] (every writer: interpreter, translated code, VMM, devices).
//! Where the host cannot track writes (no userfaultfd write protection), the move is a
//! stop-and-copy: one round with the guest paused.
//!
//! The stream (integers little-endian) is a sequence of frames: a kind byte, a `u64`
//! payload length, the payload.
//!
//! | frame | from | payload |
//! | --- | --- | --- |
//! | `HELLO` (1) | destination, on connect | JSON [`Capabilities`]: protocol version, the CTR depths its hart supports, its RAM and vCPU limits |
//! | `BEGIN` (8) | source, after checking `HELLO` | `u64` guest RAM in MiB: the destination maps it |
//! | `PAGES` (3) | source | up to [`PAGES_PER_FRAME`] pages, each a `u64` page index then 4096 bytes; pages never sent are zero, a page sent again replaces the earlier copy |
//! | `STATE` (2) | source, once, after the pause | the VM's state ([`crate::snapshot::VmState`], as in a snapshot file) |
//! | `END` (4) | source | `u64` page records sent, `u32` CRC-32 of every `STATE` and `PAGES` payload in stream order |
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
use super::dirty::DirtyLog;
use super::snapshot::{RestoreConfig, VmCommon};
use super::{run_vm, ConsoleInput, GuestVm, RunExit, RunStats, MAX_VCPUS};
use crate::devices::Console;
use crate::error::Error;
use crate::layout::{MAX_MEMORY_MIB, RAM_BASE};
use crate::snapshot::{VmState, MAX_STATE_BYTES};
use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend, GuestMemoryMmap};

/// The protocol version this VMM speaks (7: each hart's state carries its TLB's
/// translations, snapshot format 13; 6: each hart's state carries its debug triggers
/// and LR reservation, and the state the AIA devices, snapshot format 12; 5: each hart's
/// state carries its IMSIC, snapshot format 11; 4: the state carries `host_clock`, snapshot
/// format 10; 3: each hart's state carries its PMP, format 9; 2: `sstc`, format 8).
pub const PROTOCOL_VERSION: u32 = 7;
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
const BEGIN: u8 = 8;

/// Pre-copy rounds at most (the last, with the guest stopped, included).
pub const MAX_ROUNDS: u32 = 30;
/// The stop-and-copy round may always carry this many pages.
const MIN_LAST_PAGES: usize = 64;
/// The guest's pause budget when the request names none. A budget of zero: pre-copy rounds
/// go on until no page is dirty or [`MAX_ROUNDS`].
pub const DEFAULT_MAX_DOWNTIME: Duration = Duration::from_millis(30);

pub use super::error::MigrateError;

/// Whether this host can track a running guest's writes (live pre-copy); `Err` says why
/// not (a move is then a stop-and-copy).
pub fn precopy_supported() -> std::io::Result<()> {
    DirtyLog::probe()
}

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
    /// Copy rounds, the last (with the guest paused) included.
    pub rounds: u32,
    /// Whether the guest ran during the copy (pre-copy); `false`: the host cannot track
    /// writes, the move was a stop-and-copy.
    pub precopy: bool,
    /// Bytes sent.
    pub bytes: u64,
}

/// How far a move is, after each copy round (the control socket's `"progress":true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The round just sent (1: all of RAM).
    pub round: u32,
    /// Page records sent so far.
    pub pages: u64,
    /// Bytes sent so far.
    pub bytes: u64,
    /// Pages found dirty after the round (to be sent next).
    pub dirty: u64,
    /// Whether the guest is paused now (the last round follows).
    pub paused: bool,
}

/// The source's half: connects to `to`, checks the destination's limits, then (pausing the
/// VM through `pause`, which returns the vCPUs' saved states) sends it. `Ok` once the
/// destination has the complete VM and `GO` was sent: the caller then ends the source VM.
/// On `Err` nothing was handed over; the caller resumes the VM.
pub(crate) fn send(
    to: &Endpoint,
    common: &VmCommon,
    vcpus: u64,
    max_downtime: Duration,
    pause: &mut dyn FnMut() -> Result<Vec<super::snapshot::VcpuSaved>, String>,
    progress: &mut dyn FnMut(Progress),
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
    // A guest with CTR must find at least one depth it may use there (which one each vCPU
    // is at is known only once paused: the destination checks that, and refuses).
    let host_depths = caps
        .host_ctr_depths
        .iter()
        .filter(|d| d.is_power_of_two() && (16..=256).contains(*d))
        .fold(0u8, |bits, d| bits | (1 << (d.trailing_zeros() - 4)));
    let usable = common
        .ctr_policy
        .guest_depths
        .intersect(ctr_virt::DepthSet::from_bits(host_depths));
    if common.ctr_policy.enabled && usable.is_empty() {
        return Err(MigrateError::Refused(format!(
            "the guest may use CTR depths {:?}, the destination's hart has {:?}: none in common",
            common.ctr_policy.guest_depths.entries().collect::<Vec<_>>(),
            caps.host_ctr_depths
        )));
    }
    // Everything checked that can be without the guest's state.
    let mut out = Sender {
        conn,
        crc: crc32fast::Hasher::new(),
        bytes: 0,
        pages: 0,
        frame: Vec::with_capacity(PAGES_PER_FRAME * (8 + PAGE)),
    };
    out.frame(BEGIN, &common.memory_mib.to_le_bytes(), "starting")?;
    let ram_pages = (common.memory_mib << 20) / PAGE as u64;
    let host = common
        .mem
        .get_host_address(GuestAddress(RAM_BASE))
        .map_err(|e| MigrateError::Protocol(format!("cannot find guest RAM: {e}")))?;
    // Pre-copy while the guest runs, where the host can track its writes.
    let log = DirtyLog::start(host as u64, common.memory_mib << 20).ok();
    let mut rounds = 1;
    let mut left = Vec::new();
    if let Some(log) = &log {
        let round = Instant::now();
        out.pages(common, 0..ram_pages, true)?;
        // What the link carries in the guest's downtime budget.
        let per_ms = out.bytes as f64 / (round.elapsed().as_secs_f64() * 1e3).max(0.001);
        // With no budget at all, rounds go on until nothing is dirty (or the limit).
        let fits = match max_downtime.is_zero() {
            true => 0,
            false => (((per_ms * max_downtime.as_secs_f64() * 1e3) / (PAGE + 8) as f64) as usize)
                .max(MIN_LAST_PAGES),
        };
        loop {
            let taken = log.take();
            progress(Progress {
                round: rounds,
                pages: out.pages,
                bytes: out.bytes,
                dirty: taken.as_ref().map_or(ram_pages, |d| d.len() as u64),
                paused: false,
            });
            match taken {
                Ok(dirty) if dirty.len() <= fits || rounds + 1 >= MAX_ROUNDS => {
                    left = dirty;
                    break;
                }
                Ok(dirty) => {
                    rounds += 1;
                    out.pages(common, dirty.into_iter(), false)?;
                }
                // The log cannot be trusted: everything again, stopped.
                Err(_) => {
                    left = (0..ram_pages).collect();
                    break;
                }
            }
        }
        rounds += 1;
    }
    let saved = pause().map_err(MigrateError::Protocol)?;
    let paused_at = Instant::now();
    match &log {
        Some(log) => {
            match log.take() {
                Ok(dirty) => left.extend(dirty),
                Err(_) => left = (0..ram_pages).collect(),
            }
            left.sort_unstable();
            left.dedup();
            out.pages(common, left.into_iter(), false)?;
        }
        None => out.pages(common, 0..ram_pages, true)?,
    }
    progress(Progress {
        round: rounds,
        pages: out.pages,
        bytes: out.bytes,
        dirty: 0,
        paused: true,
    });
    let precopy = log.is_some();
    let state = common.state(saved);
    let body = crate::snapshot::encode_state(&state).map_err(|source| MigrateError::Io {
        while_: "encoding the state",
        source,
    })?;
    out.frame(STATE, &body, "sending the state")?;
    let mut end = out.pages.to_le_bytes().to_vec();
    end.extend_from_slice(&out.crc.clone().finalize().to_le_bytes());
    out.frame(END, &end, "sending the end")?;
    let (bytes, mut conn) = (out.bytes, out.conn);
    let io = |while_| move |source| MigrateError::Io { while_, source };
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
    let downtime = paused_at.elapsed();
    // Lifting the write protection of all of RAM takes a while (45 ms for 1 GiB): only now,
    // outside the guest's pause.
    drop(log);
    Ok((
        MoveReport {
            total: start.elapsed(),
            downtime,
            rounds,
            precopy,
            bytes,
        },
        paused_at,
    ))
}

/// The source's side of the stream: frames, the running checksum of `STATE` and `PAGES`
/// payloads, the counts.
struct Sender {
    conn: Conn,
    crc: crc32fast::Hasher,
    bytes: u64,
    /// Page records sent (a page sent in two rounds counts twice).
    pages: u64,
    /// The `PAGES` frame being filled.
    frame: Vec<u8>,
}

impl Sender {
    fn frame(
        &mut self,
        kind: u8,
        payload: &[u8],
        while_: &'static str,
    ) -> Result<(), MigrateError> {
        if kind == STATE || kind == PAGES {
            self.crc.update(payload);
        }
        write_frame(&mut self.conn, kind, payload)
            .map_err(|source| MigrateError::Io { while_, source })?;
        self.bytes += 9 + payload.len() as u64;
        Ok(())
    }

    /// Sends guest RAM's `pages` (indices), read in place a page at a time; with
    /// `skip_zero`, pages that are all zero are left out (the destination's RAM starts
    /// zero; a page dirtied to zero in a later round must be sent).
    fn pages(
        &mut self,
        common: &VmCommon,
        pages: impl Iterator<Item = u64>,
        skip_zero: bool,
    ) -> Result<(), MigrateError> {
        let mut page = [0u8; PAGE];
        for i in pages {
            common
                .mem
                .read_slice(&mut page, GuestAddress(RAM_BASE + i * PAGE as u64))
                .map_err(|e| MigrateError::Protocol(format!("cannot read guest RAM: {e}")))?;
            if skip_zero && crate::snapshot::is_zero(&page) {
                continue;
            }
            self.frame.extend_from_slice(&i.to_le_bytes());
            self.frame.extend_from_slice(&page);
            self.pages += 1;
            if self.frame.len() == PAGES_PER_FRAME * (8 + PAGE) {
                self.flush()?;
            }
        }
        self.flush()
    }

    fn flush(&mut self) -> Result<(), MigrateError> {
        if self.frame.is_empty() {
            return Ok(());
        }
        let frame = std::mem::take(&mut self.frame);
        self.frame(PAGES, &frame, "sending RAM")?;
        self.frame = frame;
        self.frame.clear();
        Ok(())
    }
}

/// A destination waiting for one VM: `vmm receive --listen`.
#[derive(Debug)]
pub struct Receiver {
    listener: Listener,
}

/// A listening UNIX or TCP socket at an [`Endpoint`]: `vmm receive --listen` and
/// `--gdb` (the debugger's connection). A stale UNIX socket at the path is replaced when
/// binding (any other file is not), and the socket file is removed when it is dropped.
#[derive(Debug)]
pub struct Listener {
    socket: ListenSocket,
    endpoint: Endpoint,
}

#[derive(Debug)]
enum ListenSocket {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

/// A connection accepted by a [`Listener`].
#[derive(Debug)]
pub enum Stream {
    /// On a UNIX socket.
    Unix(UnixStream),
    /// On a TCP socket.
    Tcp(TcpStream),
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let ListenSocket::Unix(_, path) = &self.socket {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Listener {
    /// Listens on `at` (a stale UNIX socket there is replaced; any other file is not).
    pub fn bind(at: &Endpoint) -> Result<Listener, MigrateError> {
        let err = |source| MigrateError::Connect {
            what: "listen on",
            addr: at.to_string(),
            source,
        };
        let socket = match at {
            Endpoint::Unix(path) => {
                use std::os::unix::fs::FileTypeExt;
                if let Ok(meta) = std::fs::symlink_metadata(path) {
                    if meta.file_type().is_socket() {
                        let _ = std::fs::remove_file(path);
                    } else {
                        return Err(MigrateError::NotASocket(path.clone()));
                    }
                }
                ListenSocket::Unix(UnixListener::bind(path).map_err(err)?, path.clone())
            }
            Endpoint::Tcp(addr) => ListenSocket::Tcp(TcpListener::bind(addr).map_err(err)?),
        };
        Ok(Listener {
            socket,
            endpoint: at.clone(),
        })
    }

    /// Where it listens (with the port the system chose for `tcp:HOST:0`).
    pub fn endpoint(&self) -> Endpoint {
        match &self.socket {
            ListenSocket::Tcp(l) => match l.local_addr() {
                Ok(a) => Endpoint::Tcp(a.to_string()),
                Err(_) => self.endpoint.clone(),
            },
            ListenSocket::Unix(..) => self.endpoint.clone(),
        }
    }

    /// Whether [`Listener::accept`] waits for a connection (`false`: it fails with
    /// `WouldBlock` when none is there).
    pub fn set_blocking(&self, blocking: bool) -> std::io::Result<()> {
        match &self.socket {
            ListenSocket::Unix(l, _) => l.set_nonblocking(!blocking),
            ListenSocket::Tcp(l) => l.set_nonblocking(!blocking),
        }
    }

    /// Accepts one connection (a blocking stream, whatever the listener's mode).
    pub fn accept(&self) -> std::io::Result<Stream> {
        Ok(match &self.socket {
            ListenSocket::Unix(l, _) => {
                let s = l.accept()?.0;
                s.set_nonblocking(false)?;
                Stream::Unix(s)
            }
            ListenSocket::Tcp(l) => {
                let s = l.accept()?.0;
                s.set_nonblocking(false)?;
                Stream::Tcp(s)
            }
        })
    }
}

impl Receiver {
    /// Listens on `at` (a stale UNIX socket there is replaced; any other file is not).
    pub fn bind(at: &Endpoint) -> Result<Receiver, MigrateError> {
        Ok(Receiver {
            listener: Listener::bind(at)?,
        })
    }

    /// Where it listens (with the port the system chose for `tcp:HOST:0`).
    pub fn endpoint(&self) -> Endpoint {
        self.listener.endpoint()
    }

    /// Waits for one incoming VM, checks it as `vmm restore` checks a snapshot (on the
    /// destination `options` describe) and builds it, console output going to `console`.
    /// Refuses a bad stream or a VM it cannot hold with a message to the source and an
    /// error here, running nothing.
    pub fn accept(&self, options: &RestoreConfig, console: Console) -> Result<GuestVm, Error> {
        let err = |source| MigrateError::Connect {
            what: "accept a VM on",
            addr: self.listener.endpoint.to_string(),
            source,
        };
        let mut conn = match self.listener.accept().map_err(err)? {
            Stream::Unix(s) => Conn::Unix(s),
            Stream::Tcp(s) => Conn::Tcp(s),
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
        let vm = match GuestVm::from_state(&state, ram, options, console) {
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

/// Reads `BEGIN`, then `PAGES` and one `STATE` in any order, then `END`: the state, and
/// guest RAM with the pages written into it (a page sent again overwrites the earlier copy),
/// checking every length before it allocates, and the count and checksum at the end.
fn read_vm(conn: &mut Conn) -> Result<(VmState, GuestMemoryMmap), Error> {
    let proto = |m: String| -> Error { MigrateError::Protocol(m).into() };
    let max_pages = (PAGES_PER_FRAME * (8 + PAGE)) as u64;
    let (_, begin) = read_frame(conn, "waiting for BEGIN", |k| (k == BEGIN).then_some(8))?;
    let memory_mib = begin
        .try_into()
        .map(u64::from_le_bytes)
        .map_err(|_| proto("a BEGIN frame of the wrong size".into()))?;
    if memory_mib == 0 || memory_mib > MAX_MEMORY_MIB {
        return Err(proto(format!(
            "the source announces {memory_mib} MiB of RAM (1 to {MAX_MEMORY_MIB})"
        )));
    }
    // Guest RAM is mapped lazily: pages not sent cost nothing.
    let memory = allocate_ram(memory_mib)?;
    let pages = (memory_mib << 20) / PAGE as u64;
    let mut crc = crc32fast::Hasher::new();
    let mut state: Option<VmState> = None;
    let mut received = 0u64;
    loop {
        let (kind, payload) = read_frame(conn, "receiving the VM", |k| match k {
            PAGES => Some(max_pages),
            STATE => Some(MAX_STATE_BYTES),
            END => Some(12),
            _ => None,
        })?;
        match kind {
            END => {
                let Some(state) = state else {
                    return Err(proto("the stream ended without the VM's state".into()));
                };
                if payload.len() != 12 {
                    return Err(proto("an END frame of the wrong size".into()));
                }
                let sent = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
                let stored = u32::from_le_bytes(payload[8..].try_into().expect("4 bytes"));
                if sent != received {
                    return Err(proto(format!(
                        "the source sent {sent} pages, {received} arrived"
                    )));
                }
                let computed = crc.finalize();
                if stored != computed {
                    return Err(proto(format!(
                        "checksum mismatch (stream {stored:#010x}, computed {computed:#010x})"
                    )));
                }
                return Ok((state, memory));
            }
            STATE => {
                if state.is_some() {
                    return Err(proto("a second STATE frame".into()));
                }
                crc.update(&payload);
                let s: VmState = crate::snapshot::decode_state(&payload)
                    .map_err(|e| proto(format!("the state: {e}")))?;
                if s.memory_mib != memory_mib {
                    return Err(proto(format!(
                        "the state has {} MiB of RAM, BEGIN announced {memory_mib}",
                        s.memory_mib
                    )));
                }
                state = Some(s);
            }
            _ => {
                crc.update(&payload);
                if payload.len() % (8 + PAGE) != 0 {
                    return Err(proto(format!(
                        "a PAGES frame of {} bytes is not whole pages",
                        payload.len()
                    )));
                }
                for rec in payload.chunks(8 + PAGE) {
                    let index = u64::from_le_bytes(rec[..8].try_into().expect("8 bytes"));
                    if index >= pages {
                        return Err(proto(format!(
                            "page {index} is beyond guest RAM ({pages} pages)"
                        )));
                    }
                    memory
                        .write_slice(&rec[8..], GuestAddress(RAM_BASE + index * PAGE as u64))
                        .map_err(|e| proto(format!("cannot write guest RAM: {e}")))?;
                    received += 1;
                }
            }
        }
    }
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
    // The target of `--snapshot-on-stop` is checked before anything is listened for.
    if let Some(target) = &options.snapshot_on_stop {
        crate::snapshot::check_target(target)?;
    }
    let receiver = Receiver::bind(at)?;
    ready(&receiver.endpoint());
    let vm = receiver.accept(options, console)?;
    drop(receiver);
    run_vm(vm, input)
}
