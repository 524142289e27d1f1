//! The control socket (`--api-sock`): pause, resume, stats, ctr-dump and snapshot on a
//! running guest, refused requests, and a snapshot taken through it restored bit for bit.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde_json::Value;
use vmm::run::snapshot::RestoreConfig;
use vmm::run::{GuestVm, RunConfig, RunExit};
use vmm_tests::{guest, SharedBuf};

struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Client {
    fn connect(path: &std::path::Path) -> Client {
        for _ in 0..200 {
            if let Ok(s) = UnixStream::connect(path) {
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                return Client {
                    reader: BufReader::new(s.try_clone().unwrap()),
                    writer: s,
                };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("cannot connect to {}", path.display());
    }

    fn send(&mut self, line: &str) -> Value {
        writeln!(self.writer, "{line}").unwrap();
        let mut answer = String::new();
        self.reader.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{answer:?}: {e}"))
    }
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("vmm-api-test-{}-{name}", std::process::id()))
}

#[test]
fn pause_dump_snapshot_resume_and_restore() {
    let sock = temp("sock");
    let snap = temp("snap");
    let mut c = RunConfig::new(guest("sbi_ctr_spin"));
    c.memory_mib = 16;
    c.max_insns = Some(200_000_000);
    c.api_sock = Some(sock.clone());
    let vm = GuestVm::new(&c, Box::new(SharedBuf::default())).unwrap();
    let runner = std::thread::spawn(move || {
        let mut vm = vm;
        vm.run()
    });
    let mut api = Client::connect(&sock);
    // Refusals change nothing.
    let bad = api.send("{\"cmd\":\"resume\"}");
    assert_eq!(bad["ok"], false);
    assert_eq!(bad["error"], "not paused");
    assert!(api.send("not json")["error"]
        .as_str()
        .unwrap()
        .starts_with("malformed JSON"));
    assert!(api.send("{\"cmd\":\"fly\"}")["error"]
        .as_str()
        .unwrap()
        .contains("unknown command"));
    assert!(api.send("{\"cmd\":\"snapshot\"}")["error"]
        .as_str()
        .unwrap()
        .contains("path"));
    // Let it record, then pause.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(api.send("{\"cmd\":\"pause\"}")["ok"], true);
    assert_eq!(api.send("{\"cmd\":\"pause\"}")["error"], "already paused");
    let s1 = api.send("{\"cmd\":\"stats\"}");
    std::thread::sleep(Duration::from_millis(20));
    let s2 = api.send("{\"cmd\":\"stats\"}");
    assert_eq!(
        s1["instructions"], s2["instructions"],
        "paused means no progress"
    );
    assert!(s1["instructions"].as_u64().unwrap() > 0);
    let dump = api.send("{\"cmd\":\"ctr-dump\",\"vcpu\":0}");
    assert_eq!(dump["ok"], true, "{dump}");
    assert_eq!(dump["loaded"], true);
    assert_eq!(dump["depth"], 64);
    let records = dump["records"].as_array().unwrap();
    assert_eq!(records.len(), 64, "{dump}");
    assert!(records
        .iter()
        .any(|r| r["type"] == "direct call" && r["cycles"].is_u64()));
    assert_eq!(api.send("{\"cmd\":\"ctr-dump\",\"vcpu\":3}")["ok"], false);
    let taken = api.send(&format!(
        "{{\"cmd\":\"snapshot\",\"path\":\"{}\"}}",
        snap.display()
    ));
    assert_eq!(taken["ok"], true, "{taken}");
    assert!(taken["bytes"].as_u64().unwrap() > 16 << 20);
    assert_eq!(api.send("{\"cmd\":\"resume\"}")["ok"], true);
    let exit = runner.join().unwrap().unwrap();
    assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");

    // Restored elsewhere, before it runs, the guest's CTR is what the dump showed.
    let snapshot = vmm::snapshot::read(&snap).unwrap();
    let restored = GuestVm::from_snapshot(
        &snapshot,
        &RestoreConfig {
            host_ctr_depths: ctr_virt::DepthSet::parse("64").unwrap(),
            api_sock: Some(temp("sock2")),
            max_insns: Some(100_000),
            paused: true,
            ..RestoreConfig::default()
        },
        Box::new(SharedBuf::default()),
    )
    .unwrap();
    // Restored with `paused`: nothing runs until `resume`.
    let runner = std::thread::spawn(move || {
        let mut vm = restored;
        vm.run()
    });
    let mut api2 = Client::connect(&temp("sock2"));
    assert_eq!(api2.send("{\"cmd\":\"pause\"}")["error"], "already paused");
    let dump2 = api2.send("{\"cmd\":\"ctr-dump\"}");
    let strip = |d: &Value| {
        let mut d = d.clone();
        d.as_object_mut().unwrap().remove("ok");
        d
    };
    assert_eq!(strip(&dump2), strip(&dump));
    assert_eq!(
        api2.send("{\"cmd\":\"stats\"}")["instructions"],
        s1["instructions"]
    );
    assert_eq!(api2.send("{\"cmd\":\"resume\"}")["ok"], true);
    let exit = runner.join().unwrap().unwrap();
    assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");
    let _ = std::fs::remove_file(&snap);
}
