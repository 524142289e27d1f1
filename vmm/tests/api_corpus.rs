//! The control socket's corpus (issue 18, item 7): each request in `tests/api-corpus/`
//! (raw bytes, one line each: well-formed requests, targeted hostile ones and random
//! mutations of the well-formed ones kept a few per answer) is sent, in the order of
//! `EXPECTED`, on a connection of its own to the socket of a paused two-vCPU VM (restored
//! from `tests/snapshot-state-corpus/seed.state`), and must get the answer `EXPECTED`
//! records: `ok` or `error: <the error text>` (`$DIR` stands for a scratch directory).
//! The VM stays paused throughout (no request resumes it, so every answer is
//! deterministic); afterwards it resumes and ends at its budget. Deterministic and fast; regenerate
//! with `REGENERATE_CORPUS=1 cargo test --release -p vmm --test api_corpus`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use test_support::XorShift;
use vmm::run::snapshot::RestoreConfig;
use vmm::run::{GuestVm, RunExit};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api-corpus")
}

fn scratch(name: &str) -> PathBuf {
    test_support::temp_path("vmm-api-corpus", name)
}

/// A snapshot file around the seed state of the snapshot state corpus (1 MiB of RAM).
fn seed_snapshot(tag: &str) -> PathBuf {
    let body = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshot-state-corpus/seed.state"),
    )
    .unwrap();
    let mut f = Vec::new();
    f.extend_from_slice(&vmm::snapshot::MAGIC);
    f.extend_from_slice(&vmm::snapshot::VERSION.to_le_bytes());
    f.extend_from_slice(&(body.len() as u64).to_le_bytes());
    f.extend_from_slice(&body);
    f.extend_from_slice(&(1u64 << 20).to_le_bytes());
    // No page record (1 MiB of zero RAM), and their count.
    f.extend_from_slice(&0u64.to_le_bytes());
    let crc = crc32fast::hash(&f);
    f.extend_from_slice(&crc.to_le_bytes());
    let path = scratch(&format!("{tag}.seed.snap"));
    std::fs::write(&path, f).unwrap();
    path
}

/// A paused VM with a control socket, running on a thread of its own.
struct Vm {
    sock: PathBuf,
    dir: PathBuf,
    runner: std::thread::JoinHandle<Result<RunExit, vmm::Error>>,
}

fn start_vm(tag: &str) -> Vm {
    let snap = seed_snapshot(tag);
    let sock = scratch(&format!("{tag}.sock"));
    let dir = scratch(&format!("{tag}.dir"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let s = vmm::snapshot::read(&snap).unwrap();
    let _ = std::fs::remove_file(&snap);
    let options = RestoreConfig {
        api_sock: Some(sock.clone()),
        paused: true,
        max_insns: Some(20_000),
        timeout: Some(std::time::Duration::from_secs(30)),
        ..RestoreConfig::default()
    };
    let mut vm = GuestVm::from_snapshot(s, &options, Box::new(std::io::sink())).unwrap();
    let runner = std::thread::spawn(move || vm.run());
    Vm { sock, dir, runner }
}

/// Sends `request` on a new connection; the answer with `$DIR` for the scratch directory.
fn ask(vm: &Vm, request: &[u8]) -> String {
    let text = String::from_utf8_lossy(request);
    let request = if text.contains("$DIR") {
        text.replace("$DIR", vm.dir.to_str().unwrap()).into_bytes()
    } else {
        request.to_vec()
    };
    let mut conn = None;
    for _ in 0..500 {
        if let Ok(c) = UnixStream::connect(&vm.sock) {
            conn = Some(c);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut conn = conn.expect("the control socket comes up");
    conn.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    conn.write_all(&request).unwrap();
    let mut answer = String::new();
    BufReader::new(&conn).read_line(&mut answer).unwrap();
    let v: serde_json::Value = serde_json::from_str(&answer)
        .unwrap_or_else(|e| panic!("answer {answer:?} is not JSON: {e}"));
    match v["ok"].as_bool() {
        Some(true) => "ok".to_string(),
        Some(false) => {
            let e = v["error"].as_str().expect("an error says what went wrong");
            assert!(!e.trim().is_empty());
            format!("error: {}", e.replace(vm.dir.to_str().unwrap(), "$DIR"))
        }
        None => panic!("answer without ok: {answer}"),
    }
}

/// Resumes the VM (if paused) and checks it ends at its budget.
fn finish(vm: Vm) {
    let _ = ask(&vm, b"{\"cmd\":\"resume\"}\n");
    let exit = vm.runner.join().unwrap().unwrap();
    assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");
    let _ = std::fs::remove_dir_all(&vm.dir);
}

#[test]
fn api_corpus_gets_the_recorded_answers() {
    let expected = std::fs::read_to_string(corpus().join("EXPECTED")).unwrap();
    let vm = start_vm("replay");
    let mut n = 0;
    let mut errors = 0;
    for line in expected.lines().filter(|l| !l.trim().is_empty()) {
        let (name, want) = line.split_once(' ').expect("NAME ANSWER");
        let request = std::fs::read(corpus().join(name)).unwrap();
        let got = ask(&vm, &request);
        assert_eq!(got, want, "{name}: {:?}", String::from_utf8_lossy(&request));
        errors += usize::from(got.starts_with("error"));
        n += 1;
    }
    finish(vm);
    assert!(
        n >= 20 && errors >= 10 && n - errors >= 4,
        "{n} requests, {errors} errors"
    );
}

/// The committed corpus is exactly what [`write_corpus`] writes (see
/// `common::check_generated`; `REGENERATE_CORPUS=1` rewrites it).
#[test]
fn corpus_is_what_its_generator_writes() {
    common::check_generated(&corpus(), write_corpus);
}

fn write_corpus(d: &Path) {
    let _ = std::fs::remove_dir_all(d);
    std::fs::create_dir_all(d).unwrap();
    let valid: Vec<(&str, &[u8])> = vec![
        ("stats", b"{\"cmd\":\"stats\"}\n"),
        ("ctr-dump-0", b"{\"cmd\":\"ctr-dump\",\"vcpu\":0}\n"),
        ("ctr-dump-1", b"{\"cmd\":\"ctr-dump\",\"vcpu\":1}\n"),
        (
            "snapshot",
            b"{\"cmd\":\"snapshot\",\"path\":\"$DIR/a.snap\"}\n",
        ),
        ("pause-paused", b"{\"cmd\":\"pause\"}\n"),
        ("trace-exits-ask", b"{\"cmd\":\"trace-exits\"}\n"),
        (
            "trace-exits-on",
            b"{\"cmd\":\"trace-exits\",\"on\":true,\"filter\":\"vinsn\"}\n",
        ),
        (
            "inject-ssi",
            b"{\"cmd\":\"inject\",\"vcpu\":1,\"irq\":\"ssi\"}\n",
        ),
        (
            "inject-exception-paused",
            b"{\"cmd\":\"inject\",\"exception\":13,\"tval\":4096}\n",
        ),
    ];
    let hostile: Vec<(&str, Vec<u8>)> = vec![
        ("migrate-no-to", b"{\"cmd\":\"migrate\"}\n".to_vec()),
        (
            "migrate-ftp",
            b"{\"cmd\":\"migrate\",\"to\":\"ftp:host:1\"}\n".to_vec(),
        ),
        (
            "migrate-no-port",
            b"{\"cmd\":\"migrate\",\"to\":\"tcp:localhost\"}\n".to_vec(),
        ),
        (
            "ctr-dump-2",
            b"{\"cmd\":\"ctr-dump\",\"vcpu\":2}\n".to_vec(),
        ),
        (
            "ctr-dump-neg",
            b"{\"cmd\":\"ctr-dump\",\"vcpu\":-1}\n".to_vec(),
        ),
        (
            "ctr-dump-huge",
            b"{\"cmd\":\"ctr-dump\",\"vcpu\":18446744073709551616}\n".to_vec(),
        ),
        (
            "ctr-dump-string",
            b"{\"cmd\":\"ctr-dump\",\"vcpu\":\"0\"}\n".to_vec(),
        ),
        ("snapshot-no-path", b"{\"cmd\":\"snapshot\"}\n".to_vec()),
        (
            "snapshot-path-number",
            b"{\"cmd\":\"snapshot\",\"path\":7}\n".to_vec(),
        ),
        (
            "snapshot-into-missing-dir",
            b"{\"cmd\":\"snapshot\",\"path\":\"$DIR/no/such/dir/x\"}\n".to_vec(),
        ),
        (
            "snapshot-onto-dir",
            b"{\"cmd\":\"snapshot\",\"path\":\"$DIR\"}\n".to_vec(),
        ),
        (
            "snapshot-empty-path",
            b"{\"cmd\":\"snapshot\",\"path\":\"\"}\n".to_vec(),
        ),
        (
            "trace-exits-bad-filter",
            b"{\"cmd\":\"trace-exits\",\"on\":true,\"filter\":\"sbi,,\"}\n".to_vec(),
        ),
        (
            "trace-exits-on-string",
            b"{\"cmd\":\"trace-exits\",\"on\":\"yes\"}\n".to_vec(),
        ),
        (
            "inject-vcpu-2",
            b"{\"cmd\":\"inject\",\"vcpu\":2,\"irq\":\"sei\"}\n".to_vec(),
        ),
        (
            "inject-guest-page-fault",
            b"{\"cmd\":\"inject\",\"exception\":21}\n".to_vec(),
        ),
        (
            "inject-both",
            b"{\"cmd\":\"inject\",\"irq\":1,\"exception\":2}\n".to_vec(),
        ),
        (
            "inject-irq-huge",
            b"{\"cmd\":\"inject\",\"irq\":18446744073709551616}\n".to_vec(),
        ),
        ("unknown-cmd", b"{\"cmd\":\"reboot\"}\n".to_vec()),
        ("no-cmd", b"{}\n".to_vec()),
        ("cmd-number", b"{\"cmd\":1}\n".to_vec()),
        ("array", b"[\"pause\"]\n".to_vec()),
        ("not-json", b"pause\n".to_vec()),
        ("empty-line", b"\n".to_vec()),
        ("not-utf8", b"{\"cmd\":\"\xff\xfe\"}\n".to_vec()),
        ("nul", b"{\"cmd\":\"stats\"}\0\n".to_vec()),
        (
            "deep-nesting",
            [b"[".repeat(10_000), b"\n".to_vec()].concat(),
        ),
        (
            "over-long",
            [
                b"{\"cmd\":\"stats\",\"x\":\"".to_vec(),
                b"a".repeat(70_000),
                b"\"}\n".to_vec(),
            ]
            .concat(),
        ),
        (
            "two-requests-one-line",
            b"{\"cmd\":\"stats\"}{\"cmd\":\"pause\"}\n".to_vec(),
        ),
    ];
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, r) in &valid {
        inputs.push((format!("{:03}-{name}.req", inputs.len()), r.to_vec()));
    }
    for (name, r) in hostile {
        inputs.push((format!("{:03}-{name}.req", inputs.len()), r));
    }
    let mut rng = XorShift(0xa91c_0de5);
    let mut next = move || rng.next();
    let vm = start_vm("regenerate");
    let mut lines = Vec::new();
    let mut per = std::collections::BTreeMap::<String, usize>::new();
    for (name, r) in &inputs {
        let got = ask(&vm, r);
        std::fs::write(d.join(name), r).unwrap();
        lines.push(format!("{name} {got}"));
        *per.entry(got).or_default() += 1;
    }
    // Random mutations of the well-formed requests that keep one line; at most two per
    // answer (errors grouped by their first words before any quoted part).
    // (`snapshot` is not mutated: a mutant could name a file anywhere.)
    let bases: Vec<&[u8]> = valid
        .iter()
        .filter(|(n, _)| *n != "snapshot")
        .map(|(_, r)| *r)
        .collect();
    for i in 0..600 {
        let base = bases[(next() % bases.len() as u64) as usize];
        let mut r = base[..base.len() - 1].to_vec();
        for _ in 0..1 + next() % 3 {
            let at = (next() % r.len() as u64) as usize;
            match next() % 3 {
                0 => r[at] ^= 1 << (next() % 7),
                1 => {
                    r.insert(at, b"{}[]\":,0-9e\\ "[(next() % 13) as usize]);
                }
                _ => {
                    r.remove(at);
                }
            }
        }
        r.retain(|&b| b != b'\n');
        r.push(b'\n');
        let got = ask(&vm, &r);
        let before_quote = got.split('"').next().unwrap_or("");
        let class: String = before_quote
            .split_whitespace()
            .take(4)
            .collect::<Vec<_>>()
            .join(" ");
        let n = per.entry(class).or_default();
        if *n >= 2 {
            continue;
        }
        *n += 1;
        let name = format!("{:03}-mutant-{i}.req", lines.len());
        std::fs::write(d.join(&name), &r).unwrap();
        lines.push(format!("{name} {got}"));
    }
    finish(vm);
    lines.push(String::new());
    std::fs::write(d.join("EXPECTED"), lines.join("\n")).unwrap();
    eprintln!("{} requests: {per:?}", lines.len() - 1);
}
