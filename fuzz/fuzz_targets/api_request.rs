//! One request line to the control socket of a paused two-vCPU VM (started once, from
//! `vmm/tests/snapshot-state-corpus/seed.state`): every input gets one JSON answer with an
//! `ok` field. Inputs that name `resume` or `snapshot` are skipped (the first would let the
//! VM run out its budget, the second writes a file wherever the input says). Seed it with
//! `vmm/tests/api-corpus/`.
#![no_main]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use vmm::run::snapshot::RestoreConfig;
use vmm::run::GuestVm;

fn socket() -> &'static PathBuf {
    static SOCK: OnceLock<PathBuf> = OnceLock::new();
    SOCK.get_or_init(|| {
        let seed = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../vmm/tests/snapshot-state-corpus/seed.state"
        );
        let body = std::fs::read(seed).expect("the state corpus's seed");
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
        let snap = vmm::snapshot::decode(&f).expect("the seed decodes");
        let sock = std::env::temp_dir().join(format!("vmm-fuzz-api-{}.sock", std::process::id()));
        let options = RestoreConfig {
            api_sock: Some(sock.clone()),
            paused: true,
            max_insns: Some(1_000_000),
            ..RestoreConfig::default()
        };
        let mut vm = GuestVm::from_snapshot(snap, &options, Box::new(std::io::sink()))
            .expect("the seed restores");
        std::thread::spawn(move || vm.run());
        sock
    })
}

fuzz_target!(|data: &[u8]| {
    let line: Vec<u8> = data.iter().copied().filter(|&b| b != b'\n').collect();
    let text = String::from_utf8_lossy(&line);
    if text.contains("resume") || text.contains("snapshot") || line.len() > 70_000 {
        return;
    }
    let sock = socket();
    let mut conn = loop {
        if let Ok(c) = UnixStream::connect(sock) {
            break c;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    conn.write_all(&line).expect("send");
    conn.write_all(b"\n").expect("send");
    let mut answer = String::new();
    BufReader::new(&conn)
        .read_line(&mut answer)
        .expect("an answer");
    let v: serde_json::Value = serde_json::from_str(&answer).expect("the answer is JSON");
    assert!(v["ok"].is_boolean(), "{answer}");
});
