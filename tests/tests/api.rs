//! The control socket (`--api-sock`): pause, resume, stats, ctr-dump and snapshot on a
//! running guest, refused requests, and a snapshot taken through it restored bit for bit;
//! with two vCPUs (a hart instance each, or both on one), paused while a vCPU is
//! HSM-stopped, waits in WFI or is sent remote fences, and restored in a `vmm restore`
//! process.

use std::io::{BufRead, Write};
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use vmm::run::snapshot::RestoreConfig;
use vmm::run::{run_kernel, ConsoleInput, GuestVm, RunConfig, RunExit};
use vmm_tests::{guest, vmm_command, without_cycles, SharedBuf};

type Client = vmm_tests::ApiClient;

fn temp(name: &str) -> std::path::PathBuf {
    test_support::temp_path("vmm-api-test", name)
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
    // The answer's size is the file's: the state and the guest's non-zero pages.
    let bytes = taken["bytes"].as_u64().unwrap();
    assert_eq!(bytes, std::fs::metadata(&snap).unwrap().len());
    assert!(bytes > 4 * 4104, "{bytes}");
    assert_eq!(api.send("{\"cmd\":\"resume\"}")["ok"], true);
    let exit = runner.join().unwrap().unwrap();
    assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");

    // Restored elsewhere, before it runs, the guest's CTR is what the dump showed.
    let snapshot = vmm::snapshot::read(&snap).unwrap();
    let restored = GuestVm::from_snapshot(
        snapshot,
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

/// Instructions the `sbi_ctr_pause` runs may execute: the guest polls for input between the
/// test's requests, and needs well under a million instructions otherwise.
const PAUSE_BUDGET: u64 = 2_000_000_000;

fn pause_guest(pcpus: Option<u64>) -> RunConfig {
    let mut c = RunConfig::new(guest("sbi_ctr_pause"));
    c.memory_mib = 32;
    c.vcpus = 2;
    c.pcpus = pcpus;
    c.max_insns = Some(PAUSE_BUDGET);
    c
}

/// The answer without `ok`.
fn strip(d: &Value) -> Value {
    let mut d = d.clone();
    d.as_object_mut().unwrap().remove("ok");
    d
}

/// Pauses the VM, and resumes and pauses it again until `ready` (the socket's own
/// synchronization: no waiting for time); returns the stats of the state found.
fn pause_when(api: &mut Client, ready: impl Fn(&Value) -> bool) -> Value {
    loop {
        assert_eq!(api.send("{\"cmd\":\"pause\"}")["ok"], true);
        let stats = api.send("{\"cmd\":\"stats\"}");
        assert_eq!(stats["ok"], true, "{stats}");
        if ready(&stats) {
            return stats;
        }
        assert_eq!(api.send("{\"cmd\":\"resume\"}")["ok"], true);
    }
}

/// A two-vCPU CTR guest (`sbi_ctr_pause`) on `pcpus` hart instances, driven through its
/// control socket: paused while vCPU 1 is HSM-stopped, while it waits in WFI (both CTR
/// histories recorded: dumped and snapshotted), and while vCPU 0 sends it remote fences;
/// resumed each time, it ends as a run straight through does. The snapshot, restored paused
/// in a `vmm restore` process (on `restore_pcpus` instances), shows each vCPU's CTR as the
/// source's dump did and goes on to the same output.
fn two_vcpus_paused_snapshotted_and_restored(
    pcpus: Option<u64>,
    restore_pcpus: Option<u64>,
    tag: &str,
) {
    // On one host thread (every vCPU on one hart instance) the output is reproducible
    // cycle counts included; with a thread each, without them.
    let exact = pcpus == Some(1) && restore_pcpus == Some(1);
    let same = |a: &str, b: &str| {
        if exact {
            assert_eq!(a, b, "{tag}");
        } else {
            assert_eq!(without_cycles(a), without_cycles(b), "{tag}");
        }
    };
    let straight = SharedBuf::default();
    let (exit, _) = run_kernel(
        &pause_guest(pcpus),
        Box::new(straight.clone()),
        ConsoleInput::Bytes(b"123".to_vec()),
    )
    .unwrap();
    let want = straight.text();
    assert_eq!(exit.exit_code(), 0, "{tag}: {exit:?}\n{want}");
    assert!(want.contains("sbi_ctr_pause: PASS"), "{want}");

    let sock = temp(&format!("{tag}-sock"));
    let snap = temp(&format!("{tag}-snap"));
    let out = SharedBuf::default();
    let mut c = pause_guest(pcpus);
    c.api_sock = Some(sock.clone());
    let vm = GuestVm::new(&c, Box::new(out.clone())).unwrap();
    let input = vm.input().clone();
    let runner = std::thread::spawn(move || {
        let mut vm = vm;
        vm.run()
    });
    let mut api = Client::connect(&sock);

    // 1. Before any input: vCPU 1 has not been started (its thread waits for hart_start,
    // or it is parked by the scheduler).
    let s1 = pause_when(&mut api, |_| true);
    assert_eq!(s1["paused"], true);
    let v = &s1["vcpus"];
    assert_eq!(v.as_array().unwrap().len(), 2, "{s1}");
    assert_eq!(v[1]["hsm"], "stopped", "{s1}");
    assert_eq!(v[1]["instructions"], 0, "{s1}");
    assert_eq!(v[1]["on_hart"], pcpus.is_none(), "{s1}");
    // Refusals change nothing.
    let e = api.send("{\"cmd\":\"ctr-dump\",\"vcpu\":2}");
    assert_eq!(e["ok"], false);
    assert_eq!(e["error"], "no vCPU 2: this VM has 2 (0 to 1)");
    let e = api.send("{\"cmd\":\"ctr-dump\",\"vcpu\":-1}");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("must be a vCPU index"),
        "{e}"
    );
    assert_eq!(api.send("{\"cmd\":\"pause\"}")["error"], "already paused");
    assert!(api.send("{\"cmd\":\"snapshot\",\"path\":7}")["error"]
        .as_str()
        .unwrap()
        .contains("path"));
    assert!(api.send("[1,2]")["error"].as_str().unwrap().contains("cmd"));
    assert_eq!(strip(&api.send("{\"cmd\":\"stats\"}")), strip(&s1));
    let d1 = api.send("{\"cmd\":\"ctr-dump\",\"vcpu\":1}");
    assert_eq!(d1["ok"], true, "{d1}");
    assert_eq!(d1["loaded"], false, "{d1}");
    assert_eq!(d1["records"].as_array().unwrap().len(), 0, "{d1}");
    input.push(b"1");
    assert_eq!(api.send("{\"cmd\":\"resume\"}")["ok"], true);
    assert_eq!(api.send("{\"cmd\":\"resume\"}")["error"], "not paused");

    // 2. Both histories recorded and frozen, vCPU 1 waiting in WFI with no timer (off the
    // hart with --pcpus 1), vCPU 0 polling for input.
    let s2 = pause_when(&mut api, |s| {
        out.text().contains("waiting for input 2") && s["vcpus"][1]["wfi"] == true
    });
    assert_eq!(s2["vcpus"][0]["hsm"], "started");
    assert_eq!(s2["vcpus"][1]["hsm"], "started");
    if pcpus == Some(1) {
        assert_eq!(s2["vcpus"][1]["on_hart"], false, "{s2}");
    }
    let dumps: Vec<Value> = (0..2)
        .map(|v| {
            let d = api.send(&format!("{{\"cmd\":\"ctr-dump\",\"vcpu\":{v}}}"));
            assert_eq!(d["ok"], true, "{d}");
            assert_eq!(d["vcpu"], v);
            assert_eq!(d["loaded"], true, "{d}");
            assert_eq!(d["frozen"], true, "{d}");
            assert_eq!(d["depth"], 16 << v, "{d}");
            let records = d["records"].as_array().unwrap();
            assert_eq!(records.len(), 16 << v, "{d}");
            assert!(records.iter().any(|r| r["type"] == "direct call"), "{d}");
            d
        })
        .collect();
    assert_ne!(dumps[0]["records"], dumps[1]["records"]);
    let taken = api.send(&format!(
        "{{\"cmd\":\"snapshot\",\"path\":\"{}\"}}",
        snap.display()
    ));
    assert_eq!(taken["ok"], true, "{taken}");
    let before = out.text();
    assert!(before.ends_with("waiting for input 2\n"), "{before}");
    assert_eq!(strip(&api.send("{\"cmd\":\"stats\"}")), strip(&s2));
    let snapshot = vmm::snapshot::read(&snap).unwrap();
    assert_eq!(snapshot.state.vcpus.len(), 2);
    assert!(
        snapshot.state.vcpus[1].idle.is_some(),
        "vCPU 1 waits in WFI"
    );
    input.push(b"2");
    assert_eq!(api.send("{\"cmd\":\"resume\"}")["ok"], true);

    // 3. vCPU 0 sends remote fences to vCPU 1, which spins: pauses find vCPU 0 waiting for
    // a fence (most of its time) and must not deadlock.
    pause_when(&mut api, |_| out.text().contains("waiting for input 3"));
    for _ in 0..20 {
        assert_eq!(api.send("{\"cmd\":\"resume\"}")["ok"], true);
        let s = api.send("{\"cmd\":\"stats\"}");
        assert_eq!(s["paused"], false, "{s}");
        assert_eq!(api.send("{\"cmd\":\"pause\"}")["ok"], true);
    }
    let s3 = api.send("{\"cmd\":\"stats\"}");
    assert!(s3["exits"]["sbi RFENCE"].as_u64().unwrap() > 0, "{s3}");
    input.push(b"3");
    assert_eq!(api.send("{\"cmd\":\"resume\"}")["ok"], true);
    let exit = runner.join().unwrap().unwrap();
    assert_eq!(exit.exit_code(), 0, "{tag}: {exit:?}\n{}", out.text());
    same(&out.text(), &want);
    // The socket is gone with the VM.
    assert!(UnixStream::connect(&sock).is_err());

    // Restored, paused, in another process.
    let sock2 = temp(&format!("{tag}-sock2"));
    let mut cmd = vmm_command();
    cmd.arg("restore")
        .arg("--snapshot")
        .arg(&snap)
        .arg("--api-sock")
        .arg(&sock2)
        .arg("--paused")
        .args(["--max-insns", &PAUSE_BUDGET.to_string()]);
    if let Some(p) = restore_pcpus {
        cmd.args(["--pcpus", &p.to_string()]);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut api2 = Client::connect(&sock2);
    assert_eq!(api2.send("{\"cmd\":\"pause\"}")["error"], "already paused");
    for (v, d) in dumps.iter().enumerate() {
        let d2 = api2.send(&format!("{{\"cmd\":\"ctr-dump\",\"vcpu\":{v}}}"));
        assert_eq!(strip(&d2), strip(d), "{tag}: vCPU {v}");
    }
    let r2 = api2.send("{\"cmd\":\"stats\"}");
    assert_eq!(r2["instructions"], s2["instructions"], "{r2}");
    for v in 0..2 {
        for k in ["instructions", "pc", "hsm", "wfi"] {
            assert_eq!(r2["vcpus"][v][k], s2["vcpus"][v][k], "vCPU {v} {k}: {r2}");
        }
    }
    child.stdin.take().unwrap().write_all(b"23").unwrap();
    assert_eq!(api2.send("{\"cmd\":\"resume\"}")["ok"], true);
    let done = child.wait_with_output().unwrap();
    let restored = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success(),
        "{tag}: {}\n{restored}\n{}",
        done.status,
        String::from_utf8_lossy(&done.stderr)
    );
    same(&format!("{before}{restored}"), &want);
    let _ = std::fs::remove_file(&snap);
}

#[test]
fn two_vcpus_a_hart_each_paused_snapshotted_and_restored_in_another_process() {
    two_vcpus_paused_snapshotted_and_restored(None, None, "1to1");
}

#[test]
fn two_vcpus_on_one_hart_paused_snapshotted_and_restored_in_another_process() {
    two_vcpus_paused_snapshotted_and_restored(Some(1), Some(1), "shared");
}

#[test]
fn two_vcpus_snapshot_of_a_hart_each_restored_on_one_hart() {
    two_vcpus_paused_snapshotted_and_restored(None, Some(1), "1to1-shared");
}

/// An idle client connected first and a client that sent half a line block nobody: while
/// they stay connected, another client's `stats`, `pause` and `resume` are each answered
/// within 5 s. A line that is not UTF-8 is refused and the connection goes on; a line longer
/// than 64 KiB is refused naming the limit and the connection closed.
#[test]
fn idle_and_partial_clients_block_nobody_and_bad_lines_are_refused() {
    let sock = temp("idle-sock");
    let out = SharedBuf::default();
    let mut c = pause_guest(None);
    c.api_sock = Some(sock.clone());
    let vm = GuestVm::new(&c, Box::new(out.clone())).unwrap();
    let input = vm.input().clone();
    let runner = std::thread::spawn(move || {
        let mut vm = vm;
        vm.run()
    });
    let idle = Client::connect(&sock);
    let mut partial = Client::connect(&sock);
    partial.writer.write_all(b"{\"cmd\":\"pau").unwrap();
    let mut api = Client::connect(&sock);
    api.writer
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let s = api.send("{\"cmd\":\"stats\"}");
    assert_eq!(s["ok"], true, "{s}");
    assert_eq!(s["paused"], false, "{s}");
    assert_eq!(api.send("{\"cmd\":\"pause\"}")["ok"], true);
    assert_eq!(api.send("{\"cmd\":\"stats\"}")["paused"], true);
    assert_eq!(api.send("{\"cmd\":\"resume\"}")["ok"], true);

    api.writer.write_all(b"{\"cmd\":\"st\xffats\"}\n").unwrap();
    let e = api.recv();
    assert_eq!(e["ok"], false, "{e}");
    assert!(e["error"].as_str().unwrap().contains("not UTF-8"), "{e}");
    assert_eq!(api.send("{\"cmd\":\"stats\"}")["ok"], true);

    let mut long = vec![b' '; 70 << 10];
    long.push(b'\n');
    // The server may close before it has read everything.
    let _ = api.writer.write_all(&long);
    let e = api.recv();
    assert_eq!(e["ok"], false, "{e}");
    assert!(e["error"].as_str().unwrap().contains("65536 bytes"), "{e}");
    let mut rest = String::new();
    assert_eq!(
        api.reader.read_line(&mut rest).unwrap(),
        0,
        "closed: {rest}"
    );

    drop((idle, partial));
    input.push(b"123");
    let exit = runner.join().unwrap().unwrap();
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{}", out.text());
}

/// `quit`: a snapshot to a path that cannot be written is refused and the VM goes on; with a
/// good path the VM stops after writing it (the run ends `Stopped`, exit status 0) and the
/// snapshot restores with the CTR the VM had; without one it just stops.
#[test]
fn quit_stops_the_vm_after_an_optional_snapshot() {
    let sock = temp("quit-sock");
    let snap = temp("quit-snap");
    let start = |sock: &std::path::Path| {
        let mut c = RunConfig::new(guest("sbi_ctr_spin"));
        c.memory_mib = 16;
        c.max_insns = Some(4_000_000_000);
        c.api_sock = Some(sock.to_path_buf());
        let vm = GuestVm::new(&c, Box::new(SharedBuf::default())).unwrap();
        std::thread::spawn(move || {
            let mut vm = vm;
            vm.run()
        })
    };
    let runner = start(&sock);
    let mut api = Client::connect(&sock);
    std::thread::sleep(Duration::from_millis(30));
    let bad = api.send("{\"cmd\":\"quit\",\"snapshot\":\"/nonexistent-dir/x.snap\"}");
    assert_eq!(bad["ok"], false, "{bad}");
    assert!(
        bad["error"].as_str().unwrap().contains("the VM goes on"),
        "{bad}"
    );
    let bad = api.send("{\"cmd\":\"quit\",\"snapshot\":7}");
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .contains("\"snapshot\" must be"),
        "{bad}"
    );
    // Still running.
    let s1 = api.send("{\"cmd\":\"stats\"}")["instructions"]
        .as_u64()
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let s2 = api.send("{\"cmd\":\"stats\"}")["instructions"]
        .as_u64()
        .unwrap();
    assert!(s2 > s1, "the VM must go on after a failed quit");

    assert_eq!(api.send("{\"cmd\":\"pause\"}")["ok"], true);
    let dump = api.send("{\"cmd\":\"ctr-dump\"}");
    let done = api.send(&format!(
        "{{\"cmd\":\"quit\",\"snapshot\":\"{}\"}}",
        snap.display()
    ));
    assert_eq!(done["ok"], true, "{done}");
    assert!(done["bytes"].as_u64().unwrap() > 0, "{done}");
    let exit = runner.join().unwrap().unwrap();
    assert_eq!(
        exit,
        RunExit::Stopped {
            snapshot: Some(snap.clone())
        }
    );
    assert_eq!(exit.exit_code(), 0);

    let snapshot = vmm::snapshot::read(&snap).unwrap();
    let sock2 = temp("quit-sock2");
    let restored = GuestVm::from_snapshot(
        snapshot,
        &RestoreConfig {
            api_sock: Some(sock2.clone()),
            max_insns: Some(100_000),
            paused: true,
            ..RestoreConfig::default()
        },
        Box::new(SharedBuf::default()),
    )
    .unwrap();
    let runner = std::thread::spawn(move || {
        let mut vm = restored;
        vm.run()
    });
    let mut api2 = Client::connect(&sock2);
    let mut dump2 = api2.send("{\"cmd\":\"ctr-dump\"}");
    assert_eq!(
        dump2.as_object_mut().unwrap().remove("ok"),
        Some(Value::Bool(true))
    );
    let mut dump = dump;
    dump.as_object_mut().unwrap().remove("ok");
    assert_eq!(dump2, dump);
    // Paused, without a snapshot: it stops without running another instruction.
    assert_eq!(api2.send("{\"cmd\":\"quit\"}")["ok"], true);
    let exit = runner.join().unwrap().unwrap();
    assert_eq!(exit, RunExit::Stopped { snapshot: None });
    let _ = std::fs::remove_file(&snap);
}

/// `vmm ctl quit --snapshot FILE` on a `vmm run`: the process ends with status 0 and says
/// where the snapshot is.
#[test]
fn vmm_ctl_quit_ends_the_process_and_says_where_the_snapshot_is() {
    let sock = temp("ctl-quit-sock");
    let snap = temp("ctl-quit-snap");
    let mut run = vmm_command()
        .args([
            "run",
            "--memory",
            "16",
            "--max-insns",
            "4000000000",
            "--kernel",
        ])
        .arg(guest("sbi_ctr_spin"))
        .arg("--api-sock")
        .arg(&sock)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(Client::connect(&sock));
    let ctl = vmm_command()
        .args(["ctl", "--api-sock"])
        .arg(&sock)
        .args(["quit", "--snapshot"])
        .arg(&snap)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ctl.stdout);
    assert!(
        ctl.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&ctl.stderr)
    );
    assert!(
        said.contains("the VM stopped after writing a snapshot to"),
        "{said}"
    );
    let out = run.wait_with_output_timeout();
    assert_eq!(out.0, Some(0), "{}", out.1);
    assert!(
        out.1.contains("stopped through the control socket"),
        "{}",
        out.1
    );
    assert!(out.1.contains(&snap.display().to_string()), "{}", out.1);
    assert!(vmm::snapshot::read(&snap).is_ok());
    let _ = std::fs::remove_file(&snap);
}

/// A line of `lines` (the guest's console) that starts with `prefix`, waiting at most 60 s;
/// every line read goes to `seen`.
fn console_line(
    lines: &std::sync::mpsc::Receiver<String>,
    seen: &mut Vec<String>,
    prefix: &str,
) -> String {
    loop {
        match lines.recv_timeout(Duration::from_secs(60)) {
            Ok(l) => {
                seen.push(l.clone());
                if l.starts_with(prefix) {
                    return l;
                }
            }
            Err(e) => panic!(
                "no console line {prefix:?} ({e}) after:\n{}",
                seen.join("\n")
            ),
        }
    }
}

#[test]
fn injected_interrupts_and_exceptions_reach_the_guest_handler() {
    let sock = temp("inject-sock");
    let mut run = vmm_command()
        .args(["run", "--memory", "16", "--timeout", "60", "--kernel"])
        .arg(guest("sbi_inject"))
        .arg("--api-sock")
        .arg(&sock)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = run.stdout.take().unwrap();
    let stderr = run.stderr.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    // The VMM's own messages join the console lines (they explain an early end).
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx2.send(format!("[vmm stderr] {l}")).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    console_line(&lines, &mut seen, "sbi_inject: ready");
    let mut api = Client::connect(&sock);
    // Refused before anything happens, each naming what was wrong.
    for (request, says) in [
        (
            r#"{"cmd":"inject","vcpu":1,"irq":"ssi"}"#,
            "vCPU number below 1",
        ),
        (r#"{"cmd":"inject","irq":"sti"}"#, "set_timer"),
        (r#"{"cmd":"inject","exception":22}"#, "raises into VS-mode"),
        (
            r#"{"cmd":"inject","exception":2,"tval":"x"}"#,
            "\"tval\" must be a number",
        ),
        (
            r#"{"cmd":"inject","irq":"ssi","exception":2}"#,
            "one of them",
        ),
        (
            r#"{"cmd":"inject","irq":"sei","pending":1}"#,
            "true or false",
        ),
    ] {
        let a = api.send(request);
        assert_eq!(a["ok"], false, "{request}: {a}");
        assert!(
            a["error"].as_str().unwrap().contains(says),
            "{request}: {a}"
        );
    }
    let a = api.send(r#"{"cmd":"inject","irq":"ssi"}"#);
    assert_eq!(a["ok"], true, "{a}");
    console_line(&lines, &mut seen, "sbi_inject: ssi");
    let a = api.send(r#"{"cmd":"inject","vcpu":0,"exception":2,"tval":4660}"#);
    assert_eq!(a["ok"], true, "{a}");
    let pc = a["pc"].as_str().unwrap_or_else(|| panic!("{a}"));
    let pc = u64::from_str_radix(pc.trim_start_matches("0x"), 16).unwrap();
    // Taken where the VMM said, with the stval asked for.
    let line = console_line(&lines, &mut seen, "sbi_inject: exception");
    assert_eq!(
        line,
        format!("sbi_inject: exception 2 stval 0x1234 sepc {pc:#x}")
    );
    let a = api.send(r#"{"cmd":"inject","irq":"sei"}"#);
    assert_eq!(a["ok"], true, "{a}");
    console_line(&lines, &mut seen, "sbi_inject: sei");
    // Exit tracing switched on and off, and the external interrupt, pending until cleared
    // (the guest waits for that, then ends), through `vmm ctl`.
    let ctl = |args: &[&str]| {
        let out = vmm_command()
            .args(["ctl", "--api-sock"])
            .arg(&sock)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let a = api.send(r#"{"cmd":"trace-exits"}"#);
    assert_eq!(a["classes"], serde_json::json!([]), "{a}");
    assert_eq!(
        ctl(&["trace-exits", "on", "--filter", "sbi,vinsn"]),
        "tracing exits: sbi,vinsn\n"
    );
    let a = api.send(r#"{"cmd":"trace-exits","on":true,"filter":"tlb"}"#);
    assert!(
        a["error"]
            .as_str()
            .unwrap()
            .contains("unknown exit class `tlb`"),
        "{a}"
    );
    assert_eq!(ctl(&["trace-exits", "off"]), "exit tracing off\n");
    let said = ctl(&["inject", "--irq", "sei", "--clear"]);
    assert!(said.starts_with("vCPU 0 took it at pc 0x"), "{said}");
    console_line(&lines, &mut seen, "sbi_inject: sei cleared");
    drop(api);
    let out = run.wait_with_output_timeout();
    assert_eq!(out.0, Some(0), "{}", seen.join("\n"));
}

trait WaitBounded {
    /// The exit status and stderr, killing the process after 60 s.
    fn wait_with_output_timeout(&mut self) -> (Option<i32>, String);
}

impl WaitBounded for std::process::Child {
    fn wait_with_output_timeout(&mut self) -> (Option<i32>, String) {
        use std::io::Read;
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = self.try_wait().unwrap() {
                break s.code();
            }
            if std::time::Instant::now() > deadline {
                let _ = self.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut err = String::new();
        if let Some(mut e) = self.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        (status, err)
    }
}
