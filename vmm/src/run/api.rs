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
//! | `{"cmd":"ctr-dump","vcpu":N}` | vCPU N's CTR (default 0, wherever it is): `depth`, `wrptr`, `frozen`, `loaded`, and `records` youngest first (`source`, `target`, `type`, `cycles` or null) |
//!
//! The socket's thread serves one connection at a time. `pause` parks every hart instance
//! (host thread) at an instruction boundary, each handing over copies of its vCPUs' states
//! (`run/pause.rs`); `snapshot`, `stats` and `ctr-dump` are answered from those copies, on a
//! running VM by pausing it for the request and resuming it after (a snapshot of a running
//! VM is consistent: every vCPU stopped first).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use vcpu::{Hart, HartConfig};

use super::pause::{InstanceView, PauseCtl, VcpuView};
use super::snapshot::VmCommon;
use super::ExitStats;
use crate::error::Error;
use crate::sbi::hsm::{STATE_STARTED, STATE_START_PENDING, STATE_STOPPED};

/// The control socket of a VM: its thread serves until the VM is dropped.
pub struct VmApi {
    path: PathBuf,
    /// Set when the VM is dropped: the thread stops listening.
    closed: Arc<AtomicBool>,
}

impl Drop for VmApi {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        // Wake the thread from `accept`; it sees `closed` and ends.
        let _ = UnixStream::connect(&self.path);
        let _ = std::fs::remove_file(&self.path);
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
    ) -> Result<VmApi, Error> {
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
        let closed = Arc::new(AtomicBool::new(false));
        let server = Server {
            ctl,
            common,
            vcpus,
            closed: closed.clone(),
        };
        std::thread::Builder::new()
            .name("api-sock".into())
            .spawn(move || server.serve(listener))
            .map_err(|e| Error::Api(format!("cannot start the control socket thread: {e}")))?;
        Ok(VmApi {
            path: path.to_path_buf(),
            closed,
        })
    }
}

/// An error answer.
pub fn error(msg: impl Into<String>) -> Value {
    json!({ "ok": false, "error": msg.into() })
}

/// The socket's thread.
struct Server {
    ctl: Arc<PauseCtl>,
    common: VmCommon,
    vcpus: u64,
    closed: Arc<AtomicBool>,
}

impl Server {
    fn serve(self, listener: UnixListener) {
        for conn in listener.incoming() {
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            let Ok(conn) = conn else { continue };
            if self.handle_connection(conn).is_err() {
                continue;
            }
        }
    }

    fn handle_connection(&self, conn: UnixStream) -> std::io::Result<()> {
        let mut out = conn.try_clone()?;
        // A line longer than this is refused (and the connection closed).
        const MAX_LINE: u64 = 64 * 1024;
        let mut reader = BufReader::new(conn);
        loop {
            let mut line = String::new();
            let n = std::io::Read::take(&mut reader, MAX_LINE).read_line(&mut line)?;
            if n == 0 || self.closed.load(Ordering::SeqCst) {
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
                Ok(body) if body.get("cmd").and_then(Value::as_str).is_some() => self.answer(&body),
                Ok(_) => error("a request is a JSON object with a \"cmd\" string"),
                Err(e) => error(format!("malformed JSON: {e}")),
            };
            writeln!(out, "{answer}")?;
        }
    }

    /// The answer to one request (arguments are checked before anything is paused).
    fn answer(&self, body: &Value) -> Value {
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
                self.while_paused(|views| {
                    let vcpus = all_vcpus(views)
                        .map(|v| (v.state.clone(), v.ctr.snapshot(), v.pmu.clone()))
                        .collect();
                    match self.common.write_snapshot(Path::new(path), vcpus) {
                        Ok(()) => {
                            let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                            json!({ "ok": true, "path": path, "bytes": bytes })
                        }
                        Err(e) => error(e.to_string()),
                    }
                })
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
            "" => error("a request is a JSON object with a \"cmd\" string"),
            other => error(format!(
                "unknown command {other:?} (pause, resume, snapshot, stats, ctr-dump)"
            )),
        }
    }

    /// `f` of every hart instance's vCPUs, pausing a running VM for it (and resuming it
    /// after).
    fn while_paused(&self, f: impl FnOnce(&[&InstanceView]) -> Value) -> Value {
        let was_paused = self.ctl.is_paused();
        let parked = if was_paused {
            self.ctl.wait_parked(false)
        } else {
            self.ctl.pause()
        };
        if let Err(e) = parked {
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
                        let (hsm, _, idle, _) = smp.vcpu_state(v.id);
                        (hsm, idle.is_some())
                    }
                    None => (STATE_STARTED, false),
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
        let config = HartConfig {
            hart_id: v.id,
            ctr: self.common.host_ctr.clone(),
            // A scratch hart that never runs.
            jit: false,
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
