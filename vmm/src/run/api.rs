//! The control socket (`--api-sock PATH`): line-delimited JSON on a Unix stream socket.
//!
//! Each request is one line, a JSON object with a `cmd` field; each answer is one line, a
//! JSON object with `"ok": true` and the command's results, or `"ok": false` and an `error`
//! naming what was wrong (malformed JSON, an unknown command, a missing argument, a command
//! in the wrong state): a refused command changes nothing.
//!
//! | request | answer |
//! | --- | --- |
//! | `{"cmd":"pause"}` | the vCPU stops between two instructions (refused when paused) |
//! | `{"cmd":"resume"}` | it runs again (refused when not paused) |
//! | `{"cmd":"snapshot","path":"FILE"}` | a snapshot written to FILE (`vmm restore --snapshot FILE`); `bytes`: its size |
//! | `{"cmd":"stats"}` | `instructions` executed and the exit counts (`exits`) |
//! | `{"cmd":"ctr-dump","vcpu":0}` | the vCPU's CTR: `depth`, `wrptr`, `frozen`, `loaded`, and `records` youngest first (`source`, `target`, `type`, `cycles` or null) |
//!
//! The socket's thread hands each request to the vCPU's thread, which answers between two
//! runs of the hart (a request interrupts a run through the hart's stop handle).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use serde_json::{json, Value};
use vcpu::StopHandle;

use crate::error::Error;

/// A request handed to the vCPU thread, with where to send the answer.
pub struct ApiRequest {
    /// The parsed request.
    pub body: Value,
    /// The answer goes here.
    pub reply: Sender<Value>,
}

/// The vCPU side: requests arrive here.
pub struct VmApi {
    requests: Receiver<ApiRequest>,
    /// Whether the guest is paused.
    pub paused: bool,
    path: PathBuf,
}

impl Drop for VmApi {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl VmApi {
    /// Listen on `path` (which must not exist, or be a stale socket) in a thread of its own;
    /// requests interrupt the hart through `stop`.
    pub fn spawn(path: &Path, stop: StopHandle) -> Result<VmApi, Error> {
        use std::os::unix::fs::FileTypeExt;
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if meta.file_type().is_socket() {
                let _ = std::fs::remove_file(path);
            } else {
                return Err(Error::Api(format!(
                    "{} exists and is not a socket: not replacing it",
                    path.display()
                )));
            }
        }
        let listener = UnixListener::bind(path)
            .map_err(|e| Error::Api(format!("cannot listen on {}: {e}", path.display())))?;
        let (tx, rx) = channel();
        std::thread::Builder::new()
            .name("api-sock".into())
            .spawn(move || serve(listener, tx, stop))
            .map_err(|e| Error::Api(format!("cannot start the control socket thread: {e}")))?;
        Ok(VmApi {
            requests: rx,
            paused: false,
            path: path.to_path_buf(),
        })
    }

    /// The next request: waiting for one while paused, else only if one is there.
    pub fn next(&self) -> Option<ApiRequest> {
        if self.paused {
            self.requests.recv().ok()
        } else {
            self.requests.try_recv().ok()
        }
    }
}

/// An error answer.
pub fn error(msg: impl Into<String>) -> Value {
    json!({ "ok": false, "error": msg.into() })
}

fn serve(listener: UnixListener, tx: Sender<ApiRequest>, stop: StopHandle) {
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        if handle_connection(conn, &tx, &stop).is_err() {
            continue;
        }
    }
}

fn handle_connection(
    conn: UnixStream,
    tx: &Sender<ApiRequest>,
    stop: &StopHandle,
) -> std::io::Result<()> {
    let mut out = conn.try_clone()?;
    // A line longer than this is refused (and the connection closed).
    const MAX_LINE: u64 = 64 * 1024;
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        let n = std::io::Read::take(&mut reader, MAX_LINE).read_line(&mut line)?;
        if n == 0 {
            return Ok(());
        }
        if !line.ends_with('\n') && n as u64 == MAX_LINE {
            writeln!(
                out,
                "{}",
                error(format!("request longer than {MAX_LINE} bytes"))
            )?;
            return Ok(());
        }
        let answer = match serde_json::from_str::<Value>(line.trim()) {
            Ok(body) if body.get("cmd").and_then(Value::as_str).is_some() => {
                let (reply_tx, reply_rx) = channel();
                if tx
                    .send(ApiRequest {
                        body,
                        reply: reply_tx,
                    })
                    .is_err()
                {
                    error("the VM has ended")
                } else {
                    stop.stop();
                    reply_rx
                        .recv_timeout(Duration::from_secs(30))
                        .unwrap_or_else(|_| error("the VM did not answer"))
                }
            }
            Ok(_) => error("a request is a JSON object with a \"cmd\" string"),
            Err(e) => error(format!("malformed JSON: {e}")),
        };
        writeln!(out, "{answer}")?;
    }
}

impl super::GuestVm {
    /// Answer every control-socket request waiting (all of them, until `resume`, while
    /// paused).
    pub(crate) fn serve_api(&mut self) {
        while let Some(req) = self.api.as_ref().and_then(VmApi::next) {
            let answer = self.api_answer(&req.body);
            let _ = req.reply.send(answer);
        }
    }

    fn api_answer(&mut self, body: &Value) -> Value {
        let cmd = body.get("cmd").and_then(Value::as_str).unwrap_or("");
        let paused = self.api.as_ref().is_some_and(|a| a.paused);
        let set_paused = |vm: &mut Self, p: bool| {
            if let Some(a) = vm.api.as_mut() {
                a.paused = p;
            }
        };
        match cmd {
            "pause" if paused => error("already paused"),
            "pause" => {
                set_paused(self, true);
                json!({ "ok": true })
            }
            "resume" if !paused => error("not paused"),
            "resume" => {
                set_paused(self, false);
                json!({ "ok": true })
            }
            "snapshot" => {
                let Some(path) = body.get("path").and_then(Value::as_str) else {
                    return error("snapshot needs a \"path\" string");
                };
                match self.write_snapshot(Path::new(path)) {
                    Ok(()) => {
                        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                        json!({ "ok": true, "path": path, "bytes": bytes })
                    }
                    Err(e) => error(e.to_string()),
                }
            }
            "stats" => {
                let exits: serde_json::Map<String, Value> = self
                    .stats
                    .iter()
                    .map(|(k, v)| (k.to_string(), json!(v)))
                    .collect();
                json!({ "ok": true, "paused": paused, "instructions": self.executed(), "exits": exits })
            }
            "ctr-dump" => {
                let vcpu = body.get("vcpu").and_then(Value::as_u64).unwrap_or(0);
                if vcpu != 0 {
                    return error(format!("no vCPU {vcpu} (this VM has 1)"));
                }
                self.ctr_dump()
            }
            "" => error("a request is a JSON object with a \"cmd\" string"),
            other => error(format!(
                "unknown command {other:?} (pause, resume, snapshot, stats, ctr-dump)"
            )),
        }
    }

    /// The vCPU's CTR, decoded (youngest record first).
    fn ctr_dump(&self) -> Value {
        const TYPES: [&str; 16] = [
            "none",
            "exception",
            "interrupt",
            "trap return",
            "not-taken branch",
            "taken branch",
            "reserved",
            "reserved",
            "indirect call",
            "direct call",
            "indirect jump",
            "direct jump",
            "co-routine swap",
            "function return",
            "other indirect jump",
            "other direct jump",
        ];
        let ctx = self.ctr.context(&self.hart);
        let records: Vec<Value> = ctx
            .entries
            .iter()
            .take_while(|e| e.source & 1 != 0)
            .map(|e| {
                let cycles =
                    (e.data & (1 << 15) != 0).then(|| vcpu::ctr::decode_cc((e.data >> 16) as u16));
                json!({
                    "source": format!("{:#x}", e.source & !1),
                    "target": format!("{:#x}", e.target & !1),
                    "type": TYPES[(e.data & 0xf) as usize],
                    "cycles": cycles,
                })
            })
            .collect();
        json!({
            "ok": true,
            "enabled": self.ctr.policy().enabled,
            "loaded": self.ctr.is_loaded(),
            "depth": 16u64 << ctx.depth,
            "wrptr": ctx.sctrstatus & 0xff,
            "frozen": ctx.sctrstatus >> 31 & 1 == 1,
            "vsctrctl": format!("{:#x}", ctx.vsctrctl),
            "records": records,
        })
    }
}
