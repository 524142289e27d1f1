//! `vmm ctl`: a client of the control socket (`--api-sock`), the role `ch-remote` plays for
//! Cloud Hypervisor. It sends one request and prints the answer as readable text, or the
//! raw JSON line with `--json`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::symbols::Symbols;

/// How long the client waits for an answer (a migration of a large VM takes a while).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// A request `vmm ctl` can send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CtlRequest {
    /// `pause`
    Pause,
    /// `resume`
    Resume,
    /// `stats`
    Stats,
    /// `snapshot FILE`
    Snapshot(String),
    /// `ctr-dump [N]`
    CtrDump(u64),
    /// `migrate ADDR [--max-downtime-ms MS]`
    Migrate {
        /// Where the destination listens.
        to: String,
        /// The guest's pause budget (the VMM's default when `None`).
        max_downtime_ms: Option<u64>,
    },
    /// `quit [--snapshot FILE]`
    Quit {
        /// The snapshot to write first.
        snapshot: Option<String>,
    },
    /// `trace-exits on|off [--filter F]`
    TraceExits {
        /// On or off.
        on: bool,
        /// The classes (the VMM's default, all, when `None`).
        filter: Option<String>,
    },
    /// `inject [--vcpu N] --irq ssi|sei [--clear]` or `inject [--vcpu N] --exception C
    /// [--tval V]`
    Inject {
        /// The vCPU.
        vcpu: u64,
        /// The interrupt (`ssi`, `sei`) and whether it becomes pending (else cleared).
        irq: Option<(String, bool)>,
        /// The exception code and `stval`.
        exception: Option<(u64, u64)>,
    },
}

/// Why `vmm ctl` failed.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    /// The socket could not be reached.
    #[error("cannot connect to the control socket {path}: {source}")]
    Connect {
        /// The socket's path.
        path: String,
        /// The host's error.
        #[source]
        source: std::io::Error,
    },
    /// Sending or receiving failed.
    #[error("the control socket failed: {0}")]
    Io(#[from] std::io::Error),
    /// The answer is not JSON.
    #[error("the VMM answered something that is not JSON: {0:?}")]
    NotJson(String),
    /// The VM has gone (the connection closed without an answer).
    #[error("the VMM closed the connection without answering (has the VM ended?)")]
    NoAnswer,
}

impl CtlRequest {
    /// The request line's JSON.
    pub fn body(&self) -> Value {
        match self {
            CtlRequest::Pause => json!({"cmd": "pause"}),
            CtlRequest::Resume => json!({"cmd": "resume"}),
            CtlRequest::Stats => json!({"cmd": "stats"}),
            CtlRequest::Snapshot(path) => json!({"cmd": "snapshot", "path": path}),
            CtlRequest::CtrDump(vcpu) => json!({"cmd": "ctr-dump", "vcpu": vcpu}),
            CtlRequest::Migrate {
                to,
                max_downtime_ms: None,
            } => json!({"cmd": "migrate", "to": to, "progress": true}),
            CtlRequest::Migrate {
                to,
                max_downtime_ms: Some(ms),
            } => json!({"cmd": "migrate", "to": to, "max_downtime_ms": ms, "progress": true}),
            CtlRequest::Quit { snapshot: None } => json!({"cmd": "quit"}),
            CtlRequest::Quit {
                snapshot: Some(path),
            } => json!({"cmd": "quit", "snapshot": path}),
            CtlRequest::TraceExits { on, filter: None } => json!({"cmd": "trace-exits", "on": on}),
            CtlRequest::TraceExits {
                on,
                filter: Some(f),
            } => json!({"cmd": "trace-exits", "on": on, "filter": f}),
            CtlRequest::Inject {
                vcpu,
                irq,
                exception,
            } => {
                let mut body = json!({"cmd": "inject", "vcpu": vcpu});
                if let Some((name, pending)) = irq {
                    body["irq"] = json!(name);
                    body["pending"] = json!(pending);
                }
                if let Some((cause, tval)) = exception {
                    body["exception"] = json!(cause);
                    body["tval"] = json!(tval);
                }
                body
            }
        }
    }
}

/// Sends `request` on the control socket at `path` and returns the answer; progress lines
/// the VMM sends before it (a migration's rounds) go to `on_progress`.
pub fn send(
    path: &Path,
    request: &CtlRequest,
    on_progress: &mut dyn FnMut(&Value),
) -> Result<Value, CtlError> {
    let conn = UnixStream::connect(path).map_err(|source| CtlError::Connect {
        path: path.display().to_string(),
        source,
    })?;
    conn.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    let mut writer = conn.try_clone()?;
    writeln!(writer, "{}", request.body())?;
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        if line.is_empty() {
            return Err(CtlError::NoAnswer);
        }
        let value: Value = serde_json::from_str(line.trim())
            .map_err(|_| CtlError::NotJson(line.trim().to_string()))?;
        if value.get("progress").is_some() {
            on_progress(&value);
        } else {
            return Ok(value);
        }
    }
}

/// A progress line as text for a person.
pub fn render_progress(p: &Value) -> String {
    let u = |v: &Value| v.as_u64().unwrap_or(0);
    if p["paused"] == true {
        format!(
            "round {}: every vCPU stopped, the last pages sent ({} pages, {:.1} MB in all)",
            u(&p["round"]),
            u(&p["pages"]),
            u(&p["bytes"]) as f64 / 1e6
        )
    } else {
        format!(
            "round {}: {} pages ({:.1} MB) sent, {} dirty since",
            u(&p["round"]),
            u(&p["pages"]),
            u(&p["bytes"]) as f64 / 1e6,
            u(&p["dirty"])
        )
    }
}

/// Adds `source_symbol` and `target_symbol` (`function+0xoff`, or the address in hex when
/// no symbol covers it) to each record of a `ctr-dump` answer.
pub fn symbolize_ctr_dump(answer: &mut Value, symbols: &Symbols) {
    let Some(records) = answer.get_mut("records").and_then(Value::as_array_mut) else {
        return;
    };
    for r in records {
        for (field, named) in [("source", "source_symbol"), ("target", "target_symbol")] {
            if let Some(addr) = r[field].as_str().and_then(parse_hex) {
                r[named] = Value::String(symbols.format(addr));
            }
        }
    }
}

/// An address as the answers write it (`0x80000000`).
fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.strip_prefix("0x")?, 16).ok()
}

/// The answer as text for a person: `Err` with the VMM's error for `ok:false`. With
/// `symbols`, `ctr-dump` names the addresses of its records `function+0xoff`.
pub fn render(
    request: &CtlRequest,
    answer: &Value,
    symbols: Option<&Symbols>,
) -> Result<String, String> {
    if answer["ok"] != true {
        return Err(answer["error"]
            .as_str()
            .unwrap_or("the request failed")
            .to_string());
    }
    let u = |v: &Value| v.as_u64().unwrap_or(0);
    let text = match request {
        CtlRequest::Pause => "paused\n".to_string(),
        CtlRequest::Resume => "resumed\n".to_string(),
        CtlRequest::Snapshot(path) => {
            format!(
                "snapshot written to {path} ({} bytes)\n",
                u(&answer["bytes"])
            )
        }
        CtlRequest::Quit { snapshot: None } => "the VM stopped\n".to_string(),
        CtlRequest::Quit {
            snapshot: Some(path),
        } => format!(
            "the VM stopped after writing a snapshot to {path} ({} bytes)\n",
            u(&answer["bytes"])
        ),
        CtlRequest::TraceExits { .. } => {
            let classes: Vec<&str> = answer["classes"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if classes.is_empty() {
                "exit tracing off\n".to_string()
            } else {
                format!("tracing exits: {}\n", classes.join(","))
            }
        }
        CtlRequest::Inject { vcpu, .. } => match (&answer["pc"], &answer["why"]) {
            (Value::String(pc), _) => format!("vCPU {vcpu} took it at pc {pc}\n"),
            (_, Value::String(why)) => format!("queued: {why}\n"),
            _ if answer["queued"] == true => {
                format!("queued: vCPU {vcpu} takes it when the VM resumes\n")
            }
            _ => format!("vCPU {vcpu}: done\n"),
        },
        CtlRequest::Migrate { to, .. } => format!(
            "the VM moved to {to}: {:.1} ms in all, the guest paused for {:.1} ms, {} bytes in \
             {} round(s){}\n",
            answer["total_ms"].as_f64().unwrap_or(0.0),
            answer["downtime_ms"].as_f64().unwrap_or(0.0),
            u(&answer["bytes"]),
            u(&answer["rounds"]),
            if answer["precopy"] == false {
                " (stop-and-copy: this host cannot track the guest's writes)"
            } else {
                ""
            }
        ),
        CtlRequest::Stats => {
            let mut t = format!(
                "{} instructions{}\n",
                u(&answer["instructions"]),
                if answer["paused"] == true {
                    ", paused"
                } else {
                    ""
                }
            );
            for v in answer["vcpus"].as_array().into_iter().flatten() {
                t += &format!(
                    "vCPU {}: {} instructions, pc {}, {}{}{}\n",
                    u(&v["vcpu"]),
                    u(&v["instructions"]),
                    v["pc"].as_str().unwrap_or("?"),
                    v["hsm"].as_str().unwrap_or("?"),
                    if v["wfi"] == true {
                        ", waiting in WFI"
                    } else {
                        ""
                    },
                    if v["on_hart"] == false {
                        ", off its hart"
                    } else {
                        ""
                    }
                );
            }
            if let Some(exits) = answer["exits"].as_object() {
                let mut exits: Vec<(&String, u64)> = exits.iter().map(|(k, v)| (k, u(v))).collect();
                exits.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
                for (reason, n) in exits {
                    t += &format!("{n:>12}  {reason}\n");
                }
            }
            t
        }
        CtlRequest::CtrDump(_) => {
            let mut t = format!(
                "vCPU {}: depth {}, WRPTR {}, {}, {}\n",
                u(&answer["vcpu"]),
                u(&answer["depth"]),
                u(&answer["wrptr"]),
                if answer["frozen"] == true {
                    "frozen"
                } else {
                    "not frozen"
                },
                if answer["loaded"] == true {
                    "on the hart"
                } else {
                    "saved by the VMM"
                }
            );
            let addr = |v: &Value| {
                let text = v.as_str().unwrap_or("?");
                match (symbols, parse_hex(text)) {
                    (Some(s), Some(a)) => s.format(a),
                    _ => text.to_string(),
                }
            };
            for r in answer["records"].as_array().into_iter().flatten() {
                let cycles = match r["cycles"].as_u64() {
                    Some(c) => format!("{c} cycles"),
                    None => "cycles unknown".to_string(),
                };
                t += &format!(
                    "{} -> {}  {}  {cycles}\n",
                    addr(&r["source"]),
                    addr(&r["target"]),
                    r["type"].as_str().unwrap_or("?"),
                );
            }
            t
        }
    };
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctr_dump_with_symbols() {
        let answer = json!({
            "ok": true, "vcpu": 0, "depth": 16, "wrptr": 2, "frozen": false, "loaded": true,
            "records": [
                {"source": "0x80000014", "target": "0x80000100", "type": "direct call", "cycles": 3},
                {"source": "0x90000000", "target": "bogus", "type": "taken branch", "cycles": null},
            ],
        });
        let plain = render(&CtlRequest::CtrDump(0), &answer, None).unwrap();
        assert_eq!(
            plain,
            "vCPU 0: depth 16, WRPTR 2, not frozen, on the hart\n\
             0x80000014 -> 0x80000100  direct call  3 cycles\n\
             0x90000000 -> bogus  taken branch  cycles unknown\n"
        );
        let map = b"80000000 T main\n80000100 T helper\n80000200 D data\n";
        let symbols = Symbols::parse(map, Path::new("System.map")).unwrap();
        let named = render(&CtlRequest::CtrDump(0), &answer, Some(&symbols)).unwrap();
        assert_eq!(
            named,
            "vCPU 0: depth 16, WRPTR 2, not frozen, on the hart\n\
             main+0x14 -> helper  direct call  3 cycles\n\
             0x90000000 -> bogus  taken branch  cycles unknown\n"
        );
        let mut answer = answer;
        symbolize_ctr_dump(&mut answer, &symbols);
        assert_eq!(answer["records"][0]["source_symbol"], "main+0x14");
        assert_eq!(answer["records"][0]["target_symbol"], "helper");
        assert_eq!(answer["records"][1]["source_symbol"], "0x90000000");
        assert!(answer["records"][1].get("target_symbol").is_none());
        // Answers without records are left alone.
        let mut other = json!({"ok": true});
        symbolize_ctr_dump(&mut other, &symbols);
        assert_eq!(other, json!({"ok": true}));
    }
}
