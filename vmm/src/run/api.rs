//! The control socket (`--api-sock PATH`): line-delimited JSON on a Unix stream socket.
//!
//! Each request is one line, a JSON object with a `cmd` field; each answer is one line, a
//! JSON object with `"ok": true` and the command's results, or `"ok": false` and an `error`
//! naming what was wrong (malformed JSON, an unknown command, a missing or bad argument, a
//! vCPU out of range, a command in the wrong state, a VM that has ended): a refused command
//! changes nothing.
//!
//! | request | answer |
//! | --- | --- |
//! | `{"cmd":"pause"}` | every vCPU stops between two instructions (refused when paused) |
//! | `{"cmd":"resume"}` | they run again (refused when not paused) |
//! | `{"cmd":"snapshot","path":"FILE"}` | a snapshot of the whole VM written to FILE (`vmm restore --snapshot FILE`); `bytes`: its size |
//! | `{"cmd":"stats"}` | `instructions` executed by all vCPUs, the exit counts summed over them (`exits`), and per vCPU (`vcpus`): `instructions`, `pc`, `hsm` (`started`, `stopped`, `start-pending`), `wfi` (waits in WFI), `on_hart` (`false`: parked by `--pcpus`) |
//! | `{"cmd":"migrate","to":"unix:PATH"}` (or `"tcp:HOST:PORT"`; optional `"max_downtime_ms"`, default 30; optional `"progress":true`: a line `{"progress":"migrate","round","pages","bytes","dirty","paused"}` after each round, before the answer) | the VM moves to the `vmm receive` listening there (`run/migrate.rs`); answered once the destination holds it: `to`, `total_ms`, `downtime_ms`, `rounds`, `precopy`, `bytes`; then this VMM's run ends (exit status 0). On failure `ok:false` names the cause and the VM goes on here as if nothing had happened |
//! | `{"cmd":"quit"}` (optional `"snapshot":"PATH"`) | every vCPU stops between two instructions, the snapshot (if asked) is written, and the run ends (exit status 0; `vmm` says so, and where the snapshot is); answered `{"ok":true}` (with `snapshot` and `bytes`). If the snapshot cannot be written the VM goes on and `ok:false` says why |
//! | `{"cmd":"ctr-dump","vcpu":N}` | vCPU N's CTR (default 0, wherever it is): `depth`, `wrptr`, `frozen`, `loaded`, and `records` youngest first (`source`, `target`, `type`, `cycles` or null) |
//! | `{"cmd":"inject","vcpu":N,"irq":"ssi"}` (or `"sei"`; `"pending":false` clears it) | the guest's supervisor software or external interrupt made pending (`hvip.VSSIP`/`VSEIP`, through the vCPU's mailbox like an IPI: it wakes the vCPU from WFI) or cleared (`run/inject.rs`) |
//! | `{"cmd":"inject","vcpu":N,"exception":CAUSE,"tval":V}` | vCPU N takes exception CAUSE (0-7, 12, 13, 15) at its current pc, as if its instruction there raised it (with the CTR record a delegated trap makes); answered with that `pc`, or `queued` (and why) when the vCPU does not run within 2 s; with the VM paused, `queued`: it is taken on `resume` |
//! | `{"cmd":"trace-exits","on":true}` (optional `"filter":"sbi,vinsn"`, default `all`; `"on":false` stops; without `on`, only asks) | every vCPU traces its exits on the VMM's stderr from its next exit on, as `--trace-exits` (`run/trace.rs`); answered with the classes traced now (`classes`) |
//!
//! Connections are served concurrently, a thread each, at most [`MAX_CONNECTIONS`] at once
//! (one more is answered `{"ok":false,...}` and closed). A client has [`REQUEST_TIMEOUT`]
//! (10 s) to send each complete request line, counted from connecting or from its previous
//! answer; an idle or half-sent request past that is answered `{"ok":false,...}` and the
//! connection closed. A line longer than [`MAX_LINE`] bytes (64 KiB, before its newline) is
//! answered `{"ok":false,...}` naming the limit, and the connection closed; a line that is
//! not UTF-8 is refused like malformed JSON (the connection stays open). Requests against the
//! VM run one at a time (a lock taken after the whole line has been read, released before the
//! answer is written), so an idle or slow client delays nobody: another client waits at most
//! for the request being executed. Right before a request runs (holding the lock), its
//! connection is polled without waiting: when the client has closed it (or shut down both
//! directions), the request is dropped unexecuted and the connection closed. A client that
//! closes after that check still has its request executed; one that only shuts down its
//! writing side still gets its answers.
//!
//! `pause` parks every hart instance
//! (host thread) at an instruction boundary, each handing over copies of its vCPUs' states
//! (`run/pause.rs`); `snapshot`, `stats` and `ctr-dump` are answered from those copies, on a
//! running VM by pausing it for the request and resuming it after (a snapshot of a running
//! VM is consistent: every vCPU stopped first).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::Shutdown;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::backend::{Hart, HartConfig};
use serde_json::{json, Value};

use super::inject::{GuestIrq, Injection, Injections, INJECTABLE_EXCEPTIONS};
use super::migrate::{self, Endpoint};
use super::pause::{InstanceView, PauseCtl, VcpuView};
use super::snapshot::{VcpuSaved, VmCommon};
use super::ExitStats;
use crate::error::Error;
use crate::sbi::hsm::{STATE_STARTED, STATE_START_PENDING, STATE_STOPPED};

pub use super::error::ApiError;

/// The time a client has to send a complete request line, from connecting or from its
/// previous answer (also the limit for writing an answer to a client that does not read).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest `max_downtime_ms` a `migrate` request may name.
const MAX_DOWNTIME_MS: u64 = 60_000;

/// The longest request line, in bytes before its newline.
pub const MAX_LINE: usize = 64 * 1024;

/// The number of connections served at once.
pub const MAX_CONNECTIONS: usize = 16;

/// The control socket's limits (tests shorten them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// [`REQUEST_TIMEOUT`].
    pub(crate) request_timeout: Duration,
    /// [`MAX_LINE`].
    pub(crate) max_line: usize,
    /// [`MAX_CONNECTIONS`].
    pub(crate) max_connections: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            request_timeout: REQUEST_TIMEOUT,
            max_line: MAX_LINE,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

/// What executes a request against the VM (called with the VM's lock held).
/// Executes a request; may report progress lines (each written to the client before the
/// answer) through its second argument.
type Execute = Box<dyn FnMut(&Value, &mut dyn FnMut(&Value)) -> Value + Send>;

/// Why no request line was read.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    /// No complete line within the request timeout.
    #[error("no complete request within {0:?}: closing the connection")]
    Timeout(Duration),
    /// A line longer than the limit.
    #[error("request longer than the limit of {0} bytes: closing the connection")]
    TooLong(usize),
    /// The connection failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The control socket of a VM: its threads serve until the VM is dropped.
pub struct VmApi {
    path: PathBuf,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for VmApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VmApi")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Drop for VmApi {
    fn drop(&mut self) {
        {
            let conns = self.shared.conns();
            self.shared.closed.store(true, Ordering::SeqCst);
            // Every connection's thread sees the end of its input and ends (after writing the
            // answer it may be executing: `resume` lets a VM end before that is written).
            for c in conns.values() {
                let _ = c.shutdown(Shutdown::Read);
            }
        }
        // Wake the listening thread from `accept`; it sees `closed` and ends.
        let _ = UnixStream::connect(&self.path);
        let _ = std::fs::remove_file(&self.path);
        // A request that ended the VM (`migrate`) is still writing its answer: the process
        // must not end before the client has it (bounded by the write timeout).
        let limit = Instant::now() + self.shared.limits.request_timeout;
        while self.shared.answering.load(Ordering::SeqCst) > 0 && Instant::now() < limit {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl VmApi {
    /// Listen on `path` (which must not exist, or be a stale socket) in a thread of its own,
    /// for a VM of `vcpus` vCPUs paused through `ctl`.
    pub(crate) fn spawn(
        path: &Path,
        ctl: Arc<PauseCtl>,
        common: VmCommon,
        vcpus: u64,
        injections: Arc<Injections>,
    ) -> Result<VmApi, Error> {
        let server = Server {
            ctl,
            common,
            vcpus,
            injections,
        };
        VmApi::listen(
            path,
            Limits::default(),
            Box::new(move |body, progress| server.answer(body, progress)),
        )
    }

    /// Listen on `path` with these limits, executing requests with `execute`.
    fn listen(path: &Path, limits: Limits, execute: Execute) -> Result<VmApi, Error> {
        use std::os::unix::fs::FileTypeExt;
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if meta.file_type().is_socket() {
                let _ = std::fs::remove_file(path);
            } else {
                return Err(ApiError::NotASocket(path.to_path_buf()).into());
            }
        }
        let listener = UnixListener::bind(path).map_err(|source| ApiError::Listen {
            path: path.to_path_buf(),
            source,
        })?;
        let shared = Arc::new(Shared {
            vm: Mutex::new(execute),
            limits,
            closed: AtomicBool::new(false),
            conns: Mutex::new(HashMap::new()),
            waiting: AtomicUsize::new(0),
            answering: AtomicUsize::new(0),
        });
        let accepting = shared.clone();
        std::thread::Builder::new()
            .name("api-sock".into())
            .spawn(move || accepting.accept(listener))
            .map_err(ApiError::Thread)?;
        Ok(VmApi {
            path: path.to_path_buf(),
            shared,
        })
    }
}

/// What the listening thread and the connections' threads share.
struct Shared {
    /// The VM: one request at a time.
    vm: Mutex<Execute>,
    limits: Limits,
    /// Set when the VM is dropped: every thread ends.
    closed: AtomicBool,
    /// The connections being served (a clone of each, to shut them down with the VM).
    conns: Mutex<HashMap<u64, UnixStream>>,
    /// Requests waiting for their turn against the VM (for tests).
    waiting: AtomicUsize,
    /// Requests being executed or answered.
    answering: AtomicUsize,
}

impl Shared {
    fn conns(&self) -> MutexGuard<'_, HashMap<u64, UnixStream>> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The listening thread: a thread per connection, at most `max_connections` at once.
    fn accept(self: Arc<Self>, listener: UnixListener) {
        for (id, conn) in (0u64..).zip(listener.incoming()) {
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            let Ok(conn) = conn else { continue };
            let Ok(clone) = conn.try_clone() else {
                continue;
            };
            {
                let mut conns = self.conns();
                if self.closed.load(Ordering::SeqCst) {
                    return;
                }
                if conns.len() >= self.limits.max_connections {
                    drop(conns);
                    let mut conn = conn;
                    let _ = conn.set_write_timeout(Some(self.limits.request_timeout));
                    let _ = writeln!(
                        conn,
                        "{}",
                        error(format!(
                            "too many connections: at most {} at once",
                            self.limits.max_connections
                        ))
                    );
                    continue;
                }
                conns.insert(id, clone);
            }
            let shared = self.clone();
            let spawned = std::thread::Builder::new()
                .name("api-conn".into())
                .spawn(move || {
                    let _ = shared.serve(conn);
                    shared.conns().remove(&id);
                });
            if spawned.is_err() {
                self.conns().remove(&id);
            }
        }
    }

    /// One connection, until the client closes it, breaks a limit or the VM is dropped.
    fn serve(&self, conn: UnixStream) -> std::io::Result<()> {
        conn.set_write_timeout(Some(self.limits.request_timeout))?;
        let mut out = conn.try_clone()?;
        let mut reader = BufReader::new(conn);
        loop {
            let line = match read_request(&mut reader, &self.limits) {
                Ok(Some(line)) => line,
                Ok(None) => return Ok(()),
                Err(ReadError::Io(e)) => return Err(e),
                Err(e) => {
                    if !self.closed.load(Ordering::SeqCst) {
                        writeln!(out, "{}", error(e.to_string()))?;
                    }
                    return Ok(());
                }
            };
            if self.closed.load(Ordering::SeqCst) {
                return Ok(());
            }
            self.answering.fetch_add(1, Ordering::SeqCst);
            let written = match self.request(&line, &out) {
                Some(answer) => writeln!(out, "{answer}").map(|_| true),
                // The client has gone.
                None => Ok(false),
            };
            self.answering.fetch_sub(1, Ordering::SeqCst);
            if !written? {
                return Ok(());
            }
        }
    }

    /// The answer to one request line; `None` (nothing executed) when the client of `conn`
    /// has gone by the request's turn.
    fn request(&self, line: &[u8], conn: &UnixStream) -> Option<Value> {
        let text = match std::str::from_utf8(line) {
            Ok(text) => text,
            Err(e) => {
                return Some(error(format!(
                    "malformed request: not UTF-8 (invalid byte at offset {})",
                    e.valid_up_to()
                )))
            }
        };
        let body = match serde_json::from_str::<Value>(text.trim()) {
            Ok(body) if body.get("cmd").and_then(Value::as_str).is_some() => body,
            Ok(_) => return Some(error("a request is a JSON object with a \"cmd\" string")),
            Err(e) => return Some(error(format!("malformed JSON: {e}"))),
        };
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let mut vm = self.vm.lock().unwrap_or_else(|e| e.into_inner());
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        if peer_gone(conn) {
            return None;
        }
        // Progress lines go out as they come (a client that has gone does not stop the
        // request: its answer is dropped as any other's).
        let mut progress = |line: &Value| {
            let _ = writeln!(&*conn, "{line}");
        };
        Some(vm(&body, &mut progress))
    }
}

/// Reads one request line (without its newline) within `limits`: `None` at the end of the
/// input. A last line without a newline counts.
fn read_request(
    reader: &mut BufReader<UnixStream>,
    limits: &Limits,
) -> Result<Option<Vec<u8>>, ReadError> {
    let deadline = Instant::now() + limits.request_timeout;
    let mut line = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReadError::Timeout(limits.request_timeout));
        }
        reader.get_ref().set_read_timeout(Some(left))?;
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(ReadError::Timeout(limits.request_timeout))
            }
            Err(e) => return Err(e.into()),
        };
        if buf.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        let room = limits.max_line - line.len();
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) if i <= room => {
                line.extend_from_slice(&buf[..i]);
                reader.consume(i + 1);
                return Ok(Some(line));
            }
            _ if buf.len() > room => return Err(ReadError::TooLong(limits.max_line)),
            _ => {
                let n = buf.len();
                line.extend_from_slice(buf);
                reader.consume(n);
            }
        }
    }
}

/// Whether the client of `conn` has closed the connection (or shut down both directions),
/// checked without waiting. A client that has only shut down its writing side is still there.
pub(crate) fn peer_gone(conn: &UnixStream) -> bool {
    let mut fd = libc::pollfd {
        fd: conn.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `fd` is one valid `pollfd` for the duration of the call, which does not wait.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n > 0 && fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

/// An error answer.
pub fn error(msg: impl Into<String>) -> Value {
    json!({ "ok": false, "error": msg.into() })
}

/// The requests against the VM.
struct Server {
    ctl: Arc<PauseCtl>,
    common: VmCommon,
    vcpus: u64,
    injections: Arc<Injections>,
}

impl Server {
    /// The answer to one request (arguments are checked before anything is paused).
    fn answer(&self, body: &Value, progress: &mut dyn FnMut(&Value)) -> Value {
        let cmd = body.get("cmd").and_then(Value::as_str).unwrap_or("");
        let paused = self.ctl.is_paused();
        match cmd {
            "pause" if paused => error("already paused"),
            "pause" => match self.ctl.pause() {
                Ok(()) => json!({ "ok": true }),
                Err(e) => error(e),
            },
            "resume" if !paused => error("not paused"),
            "resume" => {
                self.ctl.resume();
                json!({ "ok": true })
            }
            "snapshot" => {
                let Some(path) = body.get("path").and_then(Value::as_str) else {
                    return error("snapshot needs a \"path\" string");
                };
                // A target that cannot be written is refused before the VM is paused.
                if let Err(e) = crate::snapshot::check_target(Path::new(path)) {
                    return error(e.to_string());
                }
                self.while_paused(|views| {
                    match self.common.write_snapshot(Path::new(path), saved_vcpus(views)) {
                        Ok(bytes) => json!({ "ok": true, "path": path, "bytes": bytes }),
                        Err(e) => error(e.to_string()),
                    }
                })
            }
            "migrate" => {
                let Some(to) = body.get("to").and_then(Value::as_str) else {
                    return error("migrate needs a \"to\" string (unix:PATH or tcp:HOST:PORT)");
                };
                let to: Endpoint = match to.parse() {
                    Ok(to) => to,
                    Err(e) => return error(format!("{e}")),
                };
                let max_downtime = match body.get("max_downtime_ms") {
                    None => migrate::DEFAULT_MAX_DOWNTIME,
                    Some(v) => match v.as_u64() {
                        Some(ms) if ms <= MAX_DOWNTIME_MS => Duration::from_millis(ms),
                        _ => {
                            return error(format!(
                                "\"max_downtime_ms\" must be a whole number of milliseconds \
                                 (0 to {MAX_DOWNTIME_MS}), not {v}"
                            ))
                        }
                    },
                };
                let report = body.get("progress") == Some(&Value::Bool(true));
                let mut none = |_: &Value| {};
                self.migrate(
                    &to,
                    paused,
                    max_downtime,
                    if report { progress } else { &mut none },
                )
            }
            "quit" => {
                let snapshot = match body.get("snapshot") {
                    None => None,
                    Some(Value::String(p)) if !p.is_empty() => Some(PathBuf::from(p)),
                    Some(v) => {
                        return error(format!(
                            "\"snapshot\" must be the path of the file to write, not {v}"
                        ))
                    }
                };
                self.quit(snapshot, paused)
            }
            "stats" => self.while_paused(|views| self.stats(views, paused)),
            "ctr-dump" => {
                let vcpu = match body.get("vcpu") {
                    None => 0,
                    Some(v) => match v.as_u64() {
                        Some(v) => v,
                        None => {
                            return error(format!(
                                "\"vcpu\" must be a vCPU index (0 to {}), not {v}",
                                self.vcpus - 1
                            ))
                        }
                    },
                };
                if vcpu >= self.vcpus {
                    return error(format!(
                        "no vCPU {vcpu}: this VM has {} (0 to {})",
                        self.vcpus,
                        self.vcpus - 1
                    ));
                }
                self.while_paused(|views| match all_vcpus(views).find(|v| v.id == vcpu) {
                    Some(v) => self.ctr_dump(v),
                    None => error(format!("vCPU {vcpu} was not found on any hart instance")),
                })
            }
            "trace-exits" => self.trace_exits(body),
            "inject" => self.inject(body, paused),
            "" => error("a request is a JSON object with a \"cmd\" string"),
            other => error(format!(
                "unknown command {other:?} (pause, resume, snapshot, stats, ctr-dump, migrate, quit, trace-exits, inject)"
            )),
        }
    }

    /// `inject`: an interrupt made pending (or cleared) or an exception taken by a vCPU
    /// (`run/inject.rs`).
    fn inject(&self, body: &Value, paused: bool) -> Value {
        let vcpu = match body.get("vcpu") {
            None => 0,
            Some(v) => match v.as_u64() {
                Some(n) if n < self.vcpus => n,
                _ => {
                    return error(format!(
                        "\"vcpu\" must be a vCPU number below {}, got {v}",
                        self.vcpus
                    ))
                }
            },
        };
        let injection = match (body.get("irq"), body.get("exception")) {
            (Some(irq), None) => {
                let irq = match GuestIrq::parse(irq) {
                    Ok(irq) => irq,
                    Err(e) => return error(e),
                };
                match body.get("pending") {
                    None | Some(Value::Bool(true)) => {
                        self.injections.raise(vcpu, irq);
                        return json!({ "ok": true, "vcpu": vcpu, "irq": irq.name(), "pending": true });
                    }
                    Some(Value::Bool(false)) => Injection::ClearIrq(irq),
                    Some(v) => return error(format!("\"pending\" must be true or false, got {v}")),
                }
            }
            (None, Some(c)) => {
                let cause = match c.as_u64() {
                    Some(c) if INJECTABLE_EXCEPTIONS.contains(&c) => c,
                    _ => {
                        return error(format!(
                            "\"exception\" must be one that a guest's instruction raises into VS-mode ({INJECTABLE_EXCEPTIONS:?}), got {c}"
                        ))
                    }
                };
                let tval = match body.get("tval") {
                    None => 0,
                    Some(v) => match v.as_u64() {
                        Some(t) => t,
                        None => return error(format!("\"tval\" must be a number, got {v}")),
                    },
                };
                Injection::Exception { cause, tval }
            }
            _ => return error("inject takes \"irq\" or \"exception\" (one of them)"),
        };
        let done = self.injections.push(vcpu, injection);
        if paused {
            return json!({ "ok": true, "vcpu": vcpu, "queued": true });
        }
        // Through a pause point: every vCPU on its hart takes what is queued for it.
        if let Err(e) = self.ctl.pause() {
            return error(e);
        }
        self.ctl.resume();
        match done.recv_timeout(Duration::from_secs(2)) {
            Ok(pc) => json!({ "ok": true, "vcpu": vcpu, "pc": format!("{pc:#x}") }),
            Err(_) => json!({
                "ok": true,
                "vcpu": vcpu,
                "queued": true,
                "why": format!("vCPU {vcpu} is not running now (stopped, waiting in WFI or off its hart): it takes the injection when it runs again"),
            }),
        }
    }

    /// `trace-exits`: switches exit tracing on (with a filter) or off, or only reports it.
    fn trace_exits(&self, body: &Value) -> Value {
        let trace = &self.common.trace;
        let filter = match body.get("filter") {
            None => Ok(super::trace::class::ALL),
            Some(Value::String(f)) => super::trace::parse_filter(f).map_err(|e| e.to_string()),
            Some(v) => Err(format!(
                "\"filter\" must be a string like \"sbi,vinsn\", got {v}"
            )),
        };
        match (body.get("on"), filter) {
            (_, Err(e)) => return error(e),
            (None, _) => {}
            (Some(Value::Bool(true)), Ok(classes)) => trace.set(classes),
            (Some(Value::Bool(false)), _) => trace.set(0),
            (Some(v), _) => return error(format!("\"on\" must be true or false, got {v}")),
        }
        json!({ "ok": true, "classes": super::trace::class_names(trace.classes()) })
    }

    /// `migrate`: moves the VM to `to` (`run/migrate.rs`). On success every vCPU thread ends
    /// without running another instruction and the run ends with
    /// [`super::RunExit::Migrated`]; on failure the VM goes on as before (paused if it was).
    fn migrate(
        &self,
        to: &Endpoint,
        was_paused: bool,
        max_downtime: Duration,
        progress: &mut dyn FnMut(&Value),
    ) -> Value {
        let mut pause = || -> Result<Vec<VcpuSaved>, String> {
            self.stop_every_vcpu(was_paused)?;
            self.ctl
                .with_views(saved_vcpus)
                .ok_or_else(|| "the VM has ended".to_string())
        };
        match migrate::send(
            to,
            &self.common,
            self.vcpus,
            max_downtime,
            &mut pause,
            &mut |p: migrate::Progress| {
                progress(&json!({
                    "progress": "migrate",
                    "round": p.round,
                    "pages": p.pages,
                    "bytes": p.bytes,
                    "dirty": p.dirty,
                    "paused": p.paused,
                }))
            },
        ) {
            Ok((report, _)) => {
                self.common.input.moved(to.to_string());
                self.ctl.end_parked();
                json!({
                    "ok": true,
                    "to": to.to_string(),
                    "total_ms": report.total.as_secs_f64() * 1e3,
                    "downtime_ms": report.downtime.as_secs_f64() * 1e3,
                    "rounds": report.rounds,
                    "precopy": report.precopy,
                    "bytes": report.bytes,
                })
            }
            Err(e) => {
                if !was_paused && self.ctl.is_paused() {
                    self.ctl.resume();
                }
                error(format!(
                    "migration to {to} failed: {e}; the VM goes on here"
                ))
            }
        }
    }

    /// `quit`: stops every vCPU between two instructions, writes `snapshot` if asked, and
    /// ends the run ([`super::RunExit::Stopped`], exit status 0). If the snapshot cannot be
    /// written the VM goes on as before (paused if it was) and the answer says why.
    fn quit(&self, snapshot: Option<PathBuf>, was_paused: bool) -> Value {
        // A target that cannot be written is refused before the VM is paused.
        if let Some(path) = &snapshot {
            if let Err(e) = crate::snapshot::check_target(path) {
                return error(format!("quit: {e}; the VM goes on"));
            }
        }
        if let Err(e) = self.stop_every_vcpu(was_paused) {
            return error(e);
        }
        let mut answer = json!({ "ok": true });
        if let Some(path) = &snapshot {
            let written = self.ctl.with_views(|views| {
                let vcpus = saved_vcpus(views);
                self.common.write_snapshot(path, vcpus)
            });
            match written {
                Some(Ok(bytes)) => {
                    answer["snapshot"] = json!(path);
                    answer["bytes"] = json!(bytes);
                }
                failed => {
                    if !was_paused {
                        self.ctl.resume();
                    }
                    let why = match failed {
                        Some(Err(e)) => e.to_string(),
                        _ => "the VM has ended".to_string(),
                    };
                    return error(format!("quit: the snapshot failed: {why}; the VM goes on"));
                }
            }
        }
        self.common.input.stopped(snapshot);
        self.ctl.end_parked();
        answer
    }

    /// Every hart instance parked: a paused VM's are waited for, a running VM is paused.
    fn stop_every_vcpu(&self, was_paused: bool) -> Result<(), String> {
        if was_paused {
            self.ctl.wait_parked(false)
        } else {
            self.ctl.pause()
        }
    }

    /// `f` of every hart instance's vCPUs, pausing a running VM for it (and resuming it
    /// after).
    fn while_paused(&self, f: impl FnOnce(&[&InstanceView]) -> Value) -> Value {
        let was_paused = self.ctl.is_paused();
        if let Err(e) = self.stop_every_vcpu(was_paused) {
            return error(e);
        }
        let answer = self
            .ctl
            .with_views(f)
            .unwrap_or_else(|| error("the VM has ended"));
        if !was_paused {
            self.ctl.resume();
        }
        answer
    }

    fn stats(&self, views: &[&InstanceView], paused: bool) -> Value {
        let mut stats = ExitStats::default();
        for v in views {
            stats.merge(&v.stats);
        }
        let exits: serde_json::Map<String, Value> = stats
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let mut vcpus: Vec<&VcpuView> = all_vcpus(views).collect();
        vcpus.sort_by_key(|v| v.id);
        let per_vcpu: Vec<Value> = vcpus
            .iter()
            .map(|v| {
                let (hsm, wfi) = match &self.common.smp {
                    Some(smp) => {
                        let saved = smp.save_vcpu(v.id);
                        (saved.hsm, saved.idle.is_some())
                    }
                    None => (STATE_STARTED, v.wfi),
                };
                let hsm = match hsm {
                    STATE_STARTED => "started",
                    STATE_STOPPED => "stopped",
                    STATE_START_PENDING => "start-pending",
                    _ => "unknown",
                };
                json!({
                    "vcpu": v.id,
                    "instructions": v.executed,
                    "pc": format!("{:#x}", v.state.pc),
                    "hsm": hsm,
                    "wfi": wfi,
                    "on_hart": v.on_hart,
                })
            })
            .collect();
        json!({
            "ok": true,
            "paused": paused,
            "instructions": vcpus.iter().map(|v| v.executed).sum::<u64>(),
            "exits": exits,
            "vcpus": per_vcpu,
        })
    }

    /// A vCPU's CTR, decoded (youngest record first): its state is put on a scratch hart of
    /// the VM's host model, wherever the vCPU was (on its hart or parked by `--pcpus`), and
    /// read as the hypervisor reads a guest's CTR.
    fn ctr_dump(&self, v: &VcpuView) -> Value {
        let config = HartConfig {
            hart_id: v.id,
            ctr: self.common.host_ctr.clone(),
            // A scratch hart that never runs.
            jit: false,
            pmp_entries: crate::backend::PMP_ENTRIES,
            // The vCPU's state holds its interrupt files with AIA.
            imsic: self.common.aia.as_ref().map(|_| super::aia::imsic_config()),
            ..HartConfig::default()
        };
        let scratch = Hart::new_guest(config, self.common.mem.clone())
            .map_err(|e| e.to_string())
            .and_then(|mut h| {
                h.restore_state(&v.state)
                    .map(|()| h)
                    .map_err(|e| e.to_string())
            });
        let hart = match scratch {
            Ok(h) => h,
            Err(e) => return error(format!("cannot read vCPU {}'s CTR: {e}", v.id)),
        };
        let ctx = v.ctr.context(&hart);
        let records: Vec<Value> = ctx
            .records()
            .map(|r| {
                json!({
                    "source": format!("{:#x}", r.source),
                    "target": format!("{:#x}", r.target),
                    "type": r.kind,
                    "cycles": r.cycles,
                })
            })
            .collect();
        json!({
            "ok": true,
            "vcpu": v.id,
            "enabled": v.ctr.policy().enabled,
            "loaded": v.ctr.is_loaded(),
            "depth": 16u64 << ctx.depth,
            "wrptr": ctx.sctrstatus & 0xff,
            "frozen": ctx.sctrstatus >> 31 & 1 == 1,
            "vsctrctl": format!("{:#x}", ctx.vsctrctl),
            "records": records,
        })
    }
}

/// Every vCPU the parked hart instances handed over.
fn all_vcpus<'a>(views: &'a [&'a InstanceView]) -> impl Iterator<Item = &'a VcpuView> {
    views.iter().flat_map(|v| v.vcpus.iter())
}

/// What a snapshot or a migration takes of every vCPU.
pub(crate) fn saved_vcpus(views: &[&InstanceView]) -> Vec<VcpuSaved> {
    all_vcpus(views)
        .map(|v| (v.state.clone(), v.ctr.snapshot(), v.pmu.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Generous bound for anything the tests wait for.
    const BOUND: Duration = Duration::from_secs(10);

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("vmm-api-unit-{}-{name}", std::process::id()))
    }

    /// A control socket whose "VM" records the commands it executes and answers `ok`.
    fn recording(name: &str, limits: Limits) -> (VmApi, PathBuf, Arc<Mutex<Vec<String>>>) {
        let path = temp(name);
        let done = Arc::new(Mutex::new(Vec::new()));
        let log = done.clone();
        let api = VmApi::listen(
            &path,
            limits,
            Box::new(move |body, _| {
                let cmd = body["cmd"].as_str().unwrap_or("").to_string();
                log.lock().unwrap().push(cmd);
                json!({ "ok": true })
            }),
        )
        .unwrap();
        (api, path, done)
    }

    fn connect(path: &Path) -> UnixStream {
        let s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(BOUND)).unwrap();
        s
    }

    /// One answer line.
    fn answer(s: &UnixStream) -> Value {
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    /// Waits (within [`BOUND`]) until `f` holds.
    fn until(what: &str, f: impl Fn() -> bool) {
        let end = Instant::now() + BOUND;
        while !f() {
            assert!(Instant::now() < end, "{what}: not within {BOUND:?}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn peer_gone_only_once_the_client_has_closed() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        assert!(!peer_gone(&ours));
        (&theirs).write_all(b"{\"cmd\":\"pause\"}\n").unwrap();
        assert!(!peer_gone(&ours), "unread input is not a hang-up");
        theirs.shutdown(Shutdown::Write).unwrap();
        assert!(
            !peer_gone(&ours),
            "a half-closed client still reads answers"
        );
        drop(theirs);
        assert!(peer_gone(&ours));
    }

    /// A `pause` waiting for its turn (the VM's lock held here) whose client closes the
    /// connection is dropped unexecuted; one whose client stays is executed.
    #[test]
    fn a_request_whose_client_has_gone_is_not_executed() {
        let (api, path, done) = recording("gone", Limits::default());
        for stay in [false, true] {
            let turn = api.shared.vm.lock().unwrap();
            let mut c = connect(&path);
            c.write_all(b"{\"cmd\":\"pause\"}\n").unwrap();
            until("the request waits for its turn", || {
                api.shared.waiting.load(Ordering::SeqCst) == 1
            });
            if stay {
                drop(turn);
                assert_eq!(answer(&c)["ok"], true);
            } else {
                drop(c);
                drop(turn);
                until("the connection ends", || api.shared.conns().is_empty());
            }
        }
        assert_eq!(*done.lock().unwrap(), ["pause"]);
    }

    /// An idle client and a half-sent line delay no other client.
    #[test]
    fn idle_and_partial_clients_block_nobody() {
        let (_api, path, done) = recording("idle", Limits::default());
        let _idle = connect(&path);
        let mut partial = connect(&path);
        partial.write_all(b"{\"cmd\":\"pa").unwrap();
        let mut c = connect(&path);
        for cmd in ["stats", "pause", "resume"] {
            writeln!(c, "{{\"cmd\":\"{cmd}\"}}").unwrap();
            assert_eq!(answer(&c)["ok"], true);
        }
        assert_eq!(*done.lock().unwrap(), ["stats", "pause", "resume"]);
    }

    /// Idle connections and half-sent lines are answered and closed after the timeout.
    #[test]
    fn idle_and_partial_requests_time_out() {
        let limits = Limits {
            request_timeout: Duration::from_millis(100),
            ..Limits::default()
        };
        let (_api, path, done) = recording("timeout", limits);
        for sent in [&b""[..], b"{\"cmd\":\"pause\"", b"{\"cmd\":\"stats\"}\n{"] {
            let mut c = connect(&path);
            c.write_all(sent).unwrap();
            let mut rest = String::new();
            (&c).read_to_string(&mut rest).unwrap();
            let last = rest.lines().last().unwrap();
            let e: Value = serde_json::from_str(last).unwrap();
            assert_eq!(e["ok"], false);
            assert!(
                e["error"]
                    .as_str()
                    .unwrap()
                    .contains("no complete request within 100ms"),
                "{e}"
            );
        }
        assert_eq!(*done.lock().unwrap(), ["stats"]);
    }

    /// Connections end with the VM, idle ones included (not after the request timeout).
    #[test]
    fn connections_end_with_the_vm() {
        let (api, path, _) = recording("drop", Limits::default());
        let idle = connect(&path);
        idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        until("the connection is served", || api.shared.conns().len() == 1);
        drop(api);
        let mut rest = Vec::new();
        (&idle).read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        assert!(UnixStream::connect(&path).is_err());
    }

    /// A request that lets the VM end (`resume` with a budget nearly spent) is still
    /// answered when the VM (and its control socket) are dropped while it executes.
    #[test]
    fn the_answer_to_a_request_the_vm_ended_during_is_written() {
        let path = temp("end");
        let (entered, wait_entered) = std::sync::mpsc::channel();
        let (go, wait_go) = std::sync::mpsc::channel::<()>();
        let wait_go = Mutex::new(wait_go);
        let api = VmApi::listen(
            &path,
            Limits::default(),
            Box::new(move |_, _| {
                let _ = entered.send(());
                let _ = wait_go.lock().unwrap().recv_timeout(BOUND);
                json!({ "ok": true })
            }),
        )
        .unwrap();
        let mut c = connect(&path);
        writeln!(c, "{{\"cmd\":\"resume\"}}").unwrap();
        wait_entered.recv_timeout(BOUND).unwrap();
        // The request finishes while the API is being dropped: the drop waits for its answer.
        let finish = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let _ = go.send(());
        });
        drop(api);
        finish.join().unwrap();
        let mut rest = String::new();
        (&c).read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "{\"ok\":true}\n");
    }

    #[test]
    fn long_lines_non_utf8_and_too_many_connections_are_refused() {
        let limits = Limits {
            max_line: 100,
            max_connections: 2,
            ..Limits::default()
        };
        let (api, path, done) = recording("limits", limits);
        let mut c = connect(&path);
        c.write_all(b"{\"cmd\":\"st\xffats\"}\n").unwrap();
        let e = answer(&c);
        assert_eq!(e["ok"], false);
        assert!(e["error"].as_str().unwrap().contains("not UTF-8"), "{e}");
        // Still served; a line of exactly the limit is accepted.
        let exact = format!("{{\"cmd\":\"stats\"}}{}\n", " ".repeat(100 - 15));
        c.write_all(exact.as_bytes()).unwrap();
        assert_eq!(answer(&c)["ok"], true);
        let c2 = connect(&path);
        let c3 = connect(&path);
        let e = answer(&c3);
        assert_eq!(e["error"], "too many connections: at most 2 at once");
        drop(c2);
        until("the connection ends", || api.shared.conns().len() == 1);
        let mut c4 = connect(&path);
        writeln!(c4, "{{\"cmd\":\"resume\"}}").unwrap();
        assert_eq!(answer(&c4)["ok"], true);
        c.write_all(format!("{}\n", " ".repeat(101)).as_bytes())
            .unwrap();
        let mut rest = String::new();
        (&c).read_to_string(&mut rest).unwrap();
        let e: Value = serde_json::from_str(rest.trim()).unwrap();
        assert_eq!(
            e["error"],
            "request longer than the limit of 100 bytes: closing the connection"
        );
        assert_eq!(*done.lock().unwrap(), ["stats", "resume"]);
    }
}
