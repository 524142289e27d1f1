//! Migration between vmm instances (`vmm receive`, the control socket's `migrate`): a guest
//! recording CTR at depth 64 hops three times (UNIX, TCP, UNIX; once while paused) and the
//! consoles together print exactly what an undisturbed run prints, with its CTR identical
//! before and after a hop; a destination that cannot hold the VM, an unreachable or broken
//! destination leave the source running undisturbed; a destination refuses corrupted
//! streams and runs nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use vmm::run::migrate::{self, Endpoint, Receiver};
use vmm::run::snapshot::RestoreConfig;
use vmm::run::{run_kernel, ConsoleInput, GuestVm, RunConfig, RunExit};
use vmm_tests::{guest, vmm_command, without_cycles, SharedBuf};

/// The guest needs about 340 M instructions (0.3 s: long enough that a hop made while it
/// runs finds it running also on a loaded host).
const BUDGET: u64 = 1_500_000_000;

fn temp(name: &str) -> PathBuf {
    test_support::temp_path("vmm-migrate-test", name)
}

fn config(api: Option<PathBuf>) -> RunConfig {
    let mut c = RunConfig::new(guest("sbi_ctr_migrate"));
    c.memory_mib = 32;
    c.max_insns = Some(BUDGET);
    c.api_sock = api;
    c
}

/// What an undisturbed run prints.
fn undisturbed() -> String {
    let out = SharedBuf::default();
    let (exit, _) = run_kernel(&config(None), Box::new(out.clone()), ConsoleInput::None)
        .unwrap_or_else(|e| panic!("vmm: {e}\n{}", out.text()));
    assert!(exit.is_clean_shutdown(), "{exit:?}\n{}", out.text());
    assert!(out.text().ends_with("sbi_ctr_migrate: PASS\n"));
    out.text()
}

type Client = vmm_tests::ApiClient;

/// `migrate` on a control socket.
trait Migrate {
    fn migrate(&mut self, to: &Endpoint) -> Value;
}

impl Migrate for Client {
    fn migrate(&mut self, to: &Endpoint) -> Value {
        self.send(&format!("{{\"cmd\":\"migrate\",\"to\":\"{to}\"}}"))
    }
}

type Run = JoinHandle<Result<RunExit, vmm::Error>>;

/// A source VM running on a thread of its own, with a control socket.
fn source(api: &Path, out: &SharedBuf) -> Run {
    let vm = GuestVm::new(&config(Some(api.to_path_buf())), Box::new(out.clone())).unwrap();
    std::thread::spawn(move || {
        let mut vm = vm;
        vm.run()
    })
}

/// A destination listening at `at` (bound before this returns), receiving on a thread of
/// its own and running what it receives.
fn destination(at: &Endpoint, options: RestoreConfig, out: &SharedBuf) -> (Endpoint, Run) {
    let receiver = Receiver::bind(at).unwrap();
    let endpoint = receiver.endpoint();
    let out = out.clone();
    let run = std::thread::spawn(move || {
        let mut vm = receiver.accept(&options, Box::new(out))?;
        drop(receiver);
        vm.run()
    });
    (endpoint, run)
}

fn dest_options(api: &Path, paused: bool) -> RestoreConfig {
    RestoreConfig {
        api_sock: Some(api.to_path_buf()),
        paused,
        max_insns: Some(BUDGET),
        ..RestoreConfig::default()
    }
}

fn moved(run: Run, to: &Endpoint) {
    match run.join().unwrap() {
        Ok(RunExit::Migrated { to: went }) => assert_eq!(went, to.to_string()),
        other => panic!("the source did not end as migrated: {other:?}"),
    }
}

fn ok(answer: &Value) {
    assert_eq!(answer["ok"], true, "{answer}");
}

#[test]
fn a_ctr_guest_hops_three_times_and_prints_what_an_undisturbed_run_prints() {
    let expected = undisturbed();
    let outs: Vec<SharedBuf> = (0..4).map(|_| SharedBuf::default()).collect();
    let apis: Vec<PathBuf> = (0..4).map(|i| temp(&format!("api{i}"))).collect();

    // A, running, moves to B over a UNIX socket.
    let a = source(&apis[0], &outs[0]);
    let (to_b, b) = destination(
        &Endpoint::Unix(temp("b.sock")),
        dest_options(&apis[1], false),
        &outs[1],
    );
    let mut api_a = Client::connect(&apis[0]);
    std::thread::sleep(Duration::from_millis(20));
    // No downtime budget: pre-copy rounds go on while the guest runs and writes, until no
    // page is dirty or the round limit (30 here, as a rule); every page it wrote in between
    // must arrive (its memory hashes say so).
    let hop = api_a.send(&format!(
        "{{\"cmd\":\"migrate\",\"to\":\"{to_b}\",\"max_downtime_ms\":0}}"
    ));
    ok(&hop);
    eprintln!("first hop: {hop}");
    match migrate::precopy_supported() {
        Ok(()) => {
            assert_eq!(hop["precopy"], true, "{hop}");
            assert!(hop["rounds"].as_u64().unwrap() >= 2, "{hop}");
        }
        Err(e) => {
            eprintln!("NOTE: this host cannot track writes ({e}): the hop was a stop-and-copy");
            assert_eq!(hop["precopy"], false, "{hop}");
            assert_eq!(hop["rounds"], 1, "{hop}");
        }
    }
    assert!(hop["bytes"].as_u64().unwrap() > 4096, "{hop}");
    assert!(hop["downtime_ms"].as_f64().unwrap() <= hop["total_ms"].as_f64().unwrap());
    moved(a, &to_b);

    // B, paused, moves to C over TCP; C starts paused with B's CTR bit for bit.
    let mut api_b = Client::connect(&apis[1]);
    ok(&api_b.send("{\"cmd\":\"pause\"}"));
    let before = api_b.send("{\"cmd\":\"ctr-dump\"}");
    ok(&before);
    assert_eq!(before["depth"], 64, "{before}");
    let (to_c, c) = destination(
        &Endpoint::Tcp("127.0.0.1:0".into()),
        dest_options(&apis[2], true),
        &outs[2],
    );
    ok(&api_b.migrate(&to_c));
    moved(b, &to_c);
    let mut api_c = Client::connect(&apis[2]);
    let after = api_c.send("{\"cmd\":\"ctr-dump\"}");
    assert_eq!(before, after, "CTR changed in the hop");

    // C, running again, moves to D over a UNIX socket; D runs the guest to its end. D
    // listens before C runs again, so that the hop follows the resume at once.
    let (to_d, d) = destination(
        &Endpoint::Unix(temp("d.sock")),
        dest_options(&apis[3], false),
        &outs[3],
    );
    ok(&api_c.send("{\"cmd\":\"resume\"}"));
    ok(&api_c.migrate(&to_d));
    moved(c, &to_d);
    let end = d.join().unwrap().unwrap();
    assert!(end.is_clean_shutdown(), "{end:?}");

    let together: String = outs.iter().map(SharedBuf::text).collect();
    assert_eq!(
        together, expected,
        "the consoles differ from an undisturbed run"
    );
}

/// Runs a source, lets `hop` try to move it (and fail), then lets it finish: it must
/// print what an undisturbed run prints and end cleanly. Returns the failure's message.
fn failed_hop(name: &str, hop: impl FnOnce(&mut Client) -> Value) -> String {
    let api = temp(&format!("{name}.api"));
    let out = SharedBuf::default();
    let run = source(&api, &out);
    let mut client = Client::connect(&api);
    let answer = hop(&mut client);
    assert_eq!(answer["ok"], false, "{name}: {answer}");
    let message = answer["error"].as_str().unwrap().to_string();
    assert!(
        message.contains("the VM goes on here") || message.contains("not a migration address"),
        "{name}: {message}"
    );
    // Not left paused: the guest runs to its end.
    let end = run.join().unwrap().unwrap();
    assert!(end.is_clean_shutdown(), "{name}: {end:?}\n{}", out.text());
    assert_eq!(out.text(), undisturbed(), "{name}: the guest's run changed");
    message
}

#[test]
fn a_destination_without_the_guests_depth_refuses_and_the_source_goes_on() {
    let out = SharedBuf::default();
    let (to, dest) = destination(
        &Endpoint::Unix(temp("shallow.sock")),
        RestoreConfig {
            host_ctr_depths: ctr_virt::DepthSet::parse("16,32").unwrap(),
            ..RestoreConfig::default()
        },
        &out,
    );
    let message = failed_hop("shallow", |c| {
        std::thread::sleep(Duration::from_millis(20));
        c.migrate(&to)
    });
    assert!(message.contains("refused"), "{message}");
    assert!(message.contains("64"), "names the depth: {message}");
    let e = dest.join().unwrap().unwrap_err();
    assert!(e.to_string().contains("64"), "{e}");
    assert!(out.text().is_empty(), "the destination ran something");
}

/// A destination whose hart has none of the depths the VM's guests may use is refused by
/// the source from its HELLO, before anything is paused or sent.
#[test]
fn a_destination_with_no_usable_depth_is_refused_before_the_pause() {
    let out = SharedBuf::default();
    let (to, dest) = destination(
        &Endpoint::Unix(temp("deep.sock")),
        RestoreConfig {
            host_ctr_depths: ctr_virt::DepthSet::parse("128,256").unwrap(),
            ..RestoreConfig::default()
        },
        &out,
    );
    let message = failed_hop("deep", |c| {
        std::thread::sleep(Duration::from_millis(20));
        c.migrate(&to)
    });
    assert!(message.contains("none in common"), "{message}");
    assert!(message.contains("[16, 32, 64]"), "{message}");
    // The destination saw the source hang up after HELLO.
    let e = dest.join().unwrap().unwrap_err().to_string();
    assert!(e.contains("BEGIN") || e.contains("stream failed"), "{e}");
    assert!(out.text().is_empty());
}

#[test]
fn unreachable_broken_and_bad_destinations_leave_the_source_running() {
    let m = failed_hop("nobody", |c| {
        c.migrate(&Endpoint::Unix(temp("nobody-listens.sock")))
    });
    assert!(m.contains("cannot connect"), "{m}");

    let m = failed_hop("address", |c| {
        c.send("{\"cmd\":\"migrate\",\"to\":\"ftp:somewhere\"}")
    });
    assert!(m.contains("not a migration address"), "{m}");

    // A destination that says hello, takes part of the VM and hangs up.
    let path = temp("breaks.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let breaker = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let hello = br#"{"protocol":"vmm-migrate","version":7,"host_ctr_depths":[16,32,64,128,256],"max_memory_mib":65536,"max_vcpus":64}"#;
        conn.write_all(&[1]).unwrap();
        conn.write_all(&(hello.len() as u64).to_le_bytes()).unwrap();
        conn.write_all(hello).unwrap();
        let mut some = [0u8; 4096];
        let _ = conn.read_exact(&mut some);
    });
    let m = failed_hop("broken", |c| {
        std::thread::sleep(Duration::from_millis(20));
        c.migrate(&Endpoint::Unix(path.clone()))
    });
    assert!(m.contains("stream failed"), "{m}");
    breaker.join().unwrap();
    let _ = std::fs::remove_file(&path);

    // A destination speaking another protocol version.
    let path = temp("future.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let future = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let hello = br#"{"protocol":"vmm-migrate","version":9,"host_ctr_depths":[],"max_memory_mib":1,"max_vcpus":1}"#;
        conn.write_all(&[1]).unwrap();
        conn.write_all(&(hello.len() as u64).to_le_bytes()).unwrap();
        conn.write_all(hello).unwrap();
        let mut rest = Vec::new();
        let _ = conn.read_to_end(&mut rest);
        rest.len()
    });
    let m = failed_hop("future", |c| c.migrate(&Endpoint::Unix(path.clone())));
    assert!(m.contains("version 9"), "{m}");
    assert_eq!(future.join().unwrap(), 0, "the source sent the VM anyway");
    let _ = std::fs::remove_file(&path);
}

/// A frame: kind, length, payload.
fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![kind];
    f.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

/// A fake source: connects to a destination, reads its HELLO, sends `frames` (raw bytes)
/// and stops sending; returns the destination's error and its answer (kind, text).
fn bad_stream(name: &str, frames: &[Vec<u8>]) -> (String, Option<(u8, String)>) {
    let out = SharedBuf::default();
    let (to, dest) = destination(
        &Endpoint::Unix(temp(&format!("{name}.sock"))),
        RestoreConfig::default(),
        &out,
    );
    let Endpoint::Unix(path) = to else {
        unreachable!()
    };
    let mut conn = UnixStream::connect(path).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = [0u8; 9];
    conn.read_exact(&mut head).unwrap();
    assert_eq!(head[0], 1, "HELLO first");
    let mut hello = vec![0u8; u64::from_le_bytes(head[1..].try_into().unwrap()) as usize];
    conn.read_exact(&mut hello).unwrap();
    for f in frames {
        let _ = conn.write_all(f);
    }
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let error = dest.join().unwrap().unwrap_err().to_string();
    let mut answer = None;
    if conn.read_exact(&mut head).is_ok() {
        let mut text = vec![0u8; u64::from_le_bytes(head[1..].try_into().unwrap()) as usize];
        conn.read_exact(&mut text).unwrap();
        answer = Some((head[0], String::from_utf8_lossy(&text).into_owned()));
    }
    assert!(
        out.text().is_empty(),
        "{name}: the destination ran something"
    );
    (error, answer)
}

/// The state of a real VM, encoded as the stream carries it.
fn real_state() -> Vec<u8> {
    let vm = GuestVm::new(&config(None), Box::new(SharedBuf::default())).unwrap();
    let state = vm.snapshot_state();
    vmm::snapshot::encode_state(&state).unwrap()
}

#[test]
fn the_destination_refuses_corrupted_streams_and_runs_nothing() {
    const REFUSE: u8 = 6;
    let mib = config(None).memory_mib;
    let begin = frame(8, &mib.to_le_bytes());
    let (e, _) = bad_stream("no-begin", &[frame(2, &[0xA5; 100])]);
    assert!(
        e.contains("unexpected frame kind 2 while waiting for BEGIN"),
        "{e}"
    );
    let (e, _) = bad_stream("zero-mib", &[frame(8, &0u64.to_le_bytes())]);
    assert!(e.contains("announces 0 MiB"), "{e}");
    let (e, _) = bad_stream("short-begin", &[frame(8, &[1, 2])]);
    assert!(e.contains("BEGIN frame of the wrong size"), "{e}");

    let (e, answer) = bad_stream("garbage", &[begin.clone(), frame(2, &[0xA5; 100])]);
    assert!(e.contains("the state"), "{e}");
    assert_eq!(answer.map(|a| a.0), Some(REFUSE));

    // A length past the limit is refused before anything is allocated.
    let mut huge = vec![2u8];
    huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
    let (e, _) = bad_stream("huge", &[begin.clone(), huge]);
    assert!(e.contains("frame kind 2 of 1099511627776 bytes"), "{e}");

    let (e, _) = bad_stream("kind", &[begin.clone(), frame(9, &[1, 2, 3])]);
    assert!(e.contains("unexpected frame kind 9"), "{e}");

    let state = real_state();
    let mut page = 1_000_000u64.to_le_bytes().to_vec();
    page.extend_from_slice(&[7; 4096]);
    let (e, answer) = bad_stream("beyond", &[begin.clone(), frame(3, &page)]);
    assert!(e.contains("beyond guest RAM"), "{e}");
    let (kind, text) = answer.unwrap();
    assert_eq!(kind, REFUSE);
    assert!(text.contains("beyond guest RAM"), "{text}");

    let (e, _) = bad_stream("partial", &[begin.clone(), frame(3, &[1; 100])]);
    assert!(e.contains("not whole pages"), "{e}");

    let other = frame(8, &(mib * 2).to_le_bytes());
    let (e, _) = bad_stream("other-mib", &[other, frame(2, &state)]);
    assert!(e.contains(&format!("BEGIN announced {}", mib * 2)), "{e}");

    let (e, _) = bad_stream(
        "two-states",
        &[begin.clone(), frame(2, &state), frame(2, &state)],
    );
    assert!(e.contains("a second STATE frame"), "{e}");

    let end = |pages: u64, crc: u32| {
        let mut end = pages.to_le_bytes().to_vec();
        end.extend_from_slice(&crc.to_le_bytes());
        frame(4, &end)
    };
    let (e, _) = bad_stream("no-state", &[begin.clone(), end(0, 0)]);
    assert!(e.contains("ended without the VM's state"), "{e}");

    let (e, _) = bad_stream(
        "checksum",
        &[begin.clone(), frame(2, &state), end(0, 0xdead_beef)],
    );
    assert!(e.contains("checksum mismatch"), "{e}");

    let (e, _) = bad_stream("count", &[begin.clone(), frame(2, &state), end(5, 0)]);
    assert!(e.contains("the source sent 5 pages, 0 arrived"), "{e}");

    // A source that hangs up, before BEGIN and in the middle.
    let (e, _) = bad_stream("hangs-up", &[]);
    assert!(e.contains("stream failed"), "{e}");
    let mut page3 = 3u64.to_le_bytes().to_vec();
    page3.extend_from_slice(&[7; 4096]);
    let mut cut = frame(3, &page3);
    cut.truncate(100);
    let (e, _) = bad_stream("hangs-up-later", &[begin, frame(3, &page3), cut]);
    assert!(e.contains("stream failed"), "{e}");
}

/// Pauses the VM, and resumes and pauses it again until `ready`; returns the stats found.
/// Fails (instead of hanging) when the VM is not ready after 3000 tries, 10 ms apart.
fn pause_when(api: &mut Client, ready: impl Fn(&Value) -> bool) -> Value {
    for tries in 0.. {
        ok(&api.send("{\"cmd\":\"pause\"}"));
        let stats = api.send("{\"cmd\":\"stats\"}");
        ok(&stats);
        if ready(&stats) {
            return stats;
        }
        assert!(tries < 3000, "the VM never became ready to move: {stats}");
        ok(&api.send("{\"cmd\":\"resume\"}"));
        std::thread::sleep(Duration::from_millis(10));
    }
    unreachable!()
}

/// A two-vCPU guest (`sbi_ctr_pause`: each vCPU records its own CTR history, at depth 16
/// and 32) moves while vCPU 1 waits in WFI with no timer and vCPU 0 polls for input, from a
/// hart instance per vCPU to both on one (`--pcpus 1`), with console input still pending:
/// both CTR dumps are the same after the hop and the run ends as a run straight through.
#[test]
fn two_vcpus_move_to_one_hart_instance_with_their_ctr_and_pending_input() {
    two_vcpus_hop(None, Some(1));
}

/// The same, the other way: from both vCPUs on one hart instance (`--pcpus 1`, vCPU 1 off
/// its hart while it waits) to a hart instance each.
#[test]
fn two_vcpus_move_from_one_hart_instance_to_one_each() {
    two_vcpus_hop(Some(1), None);
}

fn two_vcpus_hop(source_pcpus: Option<u64>, destination_pcpus: Option<u64>) {
    let config = |api: Option<PathBuf>| {
        let mut c = RunConfig::new(guest("sbi_ctr_pause"));
        c.memory_mib = 32;
        c.vcpus = 2;
        c.pcpus = source_pcpus;
        c.max_insns = Some(2_000_000_000);
        c.api_sock = api;
        c
    };
    let straight = SharedBuf::default();
    let (exit, _) = run_kernel(
        &config(None),
        Box::new(straight.clone()),
        ConsoleInput::Bytes(b"123".to_vec()),
    )
    .unwrap();
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{}", straight.text());

    let tag = format!("{source_pcpus:?}-{destination_pcpus:?}");
    let (api_a, api_b) = (temp(&format!("smp-a-{tag}")), temp(&format!("smp-b-{tag}")));
    let (out_a, out_b) = (SharedBuf::default(), SharedBuf::default());
    let vm = GuestVm::new(&config(Some(api_a.clone())), Box::new(out_a.clone())).unwrap();
    let input = vm.input().clone();
    input.push(b"1");
    let a = std::thread::spawn(move || {
        let mut vm = vm;
        vm.run()
    });
    let mut client_a = Client::connect(&api_a);
    pause_when(&mut client_a, |s| {
        out_a.text().contains("waiting for input 2") && s["vcpus"][1]["wfi"] == true
    });
    let dumps: Vec<Value> = (0..2)
        .map(|v| client_a.send(&format!("{{\"cmd\":\"ctr-dump\",\"vcpu\":{v}}}")))
        .collect();
    assert_eq!(dumps[1]["depth"], 32, "{}", dumps[1]);
    // Input typed while paused travels with the VM.
    input.push(b"23");
    let options = RestoreConfig {
        pcpus: destination_pcpus,
        ..dest_options(&api_b, true)
    };
    let tag = format!("{source_pcpus:?}-{destination_pcpus:?}");
    let (to_b, b) = destination(
        &Endpoint::Unix(temp(&format!("smp-b-{tag}.sock"))),
        options,
        &out_b,
    );
    ok(&client_a.migrate(&to_b));
    moved(a, &to_b);
    let mut client_b = Client::connect(&api_b);
    for (v, before) in dumps.iter().enumerate() {
        let after = client_b.send(&format!("{{\"cmd\":\"ctr-dump\",\"vcpu\":{v}}}"));
        assert_eq!(*before, after, "vCPU {v}'s CTR changed in the hop");
    }
    let stats = client_b.send("{\"cmd\":\"stats\"}");
    assert_eq!(stats["vcpus"][1]["wfi"], true, "{stats}");
    ok(&client_b.send("{\"cmd\":\"resume\"}"));
    let end = b.join().unwrap().unwrap();
    assert_eq!(end.exit_code(), 0, "{end:?}\n{}", out_b.text());
    let together = out_a.text() + &out_b.text();
    assert_eq!(
        without_cycles(&together),
        without_cycles(&straight.text()),
        "the consoles differ from a run straight through"
    );
}

/// `vmm ctl` (the binary) drives the same requests: readable text, `--json`, exit status 1
/// with the VMM's reason for a refused request, and a migration.
#[test]
fn vmm_ctl_pauses_dumps_and_migrates() {
    let ctl = |api: &Path, args: &[&str]| {
        let out = vmm_command()
            .arg("ctl")
            .arg("--api-sock")
            .arg(api)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (api_a, api_b) = (temp("ctl-a"), temp("ctl-b"));
    let (out_a, out_b) = (SharedBuf::default(), SharedBuf::default());
    let a = source(&api_a, &out_a);
    Client::connect(&api_a);
    // Once the guest has selected depth 64 (it says so).
    while !out_a.text().contains("64 entries") {
        std::thread::sleep(Duration::from_millis(2));
    }
    let (code, text, _) = ctl(&api_a, &["pause"]);
    assert_eq!((code, text.as_str()), (Some(0), "paused\n"));
    let (code, text, _) = ctl(&api_a, &["stats"]);
    assert_eq!(code, Some(0));
    assert!(text.contains(", paused\nvCPU 0: "), "{text}");
    let (code, text, _) = ctl(&api_a, &["ctr-dump"]);
    assert_eq!(code, Some(0));
    assert!(text.starts_with("vCPU 0: depth 64, WRPTR "), "{text}");
    let (code, text, err) = ctl(&api_a, &["ctr-dump", "5"]);
    assert_eq!((code, text.as_str()), (Some(1), ""));
    assert!(err.contains("no vCPU 5: this VM has 1"), "{err}");
    let (code, text, _) = ctl(&api_a, &["--json", "stats"]);
    assert_eq!(code, Some(0));
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["paused"], true, "{json}");

    let (to_b, b) = destination(
        &Endpoint::Unix(temp("ctl-b.sock")),
        dest_options(&api_b, false),
        &out_b,
    );
    let (code, text, err) = ctl(&api_a, &["migrate", &to_b.to_string()]);
    assert_eq!(code, Some(0), "{err}");
    // Progress, round by round, on stderr.
    assert!(err.contains("vmm ctl: round 1: "), "{err}");
    assert!(
        err.contains("every vCPU stopped, the last pages sent"),
        "{err}"
    );
    assert!(
        text.starts_with(&format!("the VM moved to {to_b}: ")),
        "{text}"
    );
    moved(a, &to_b);
    let end = b.join().unwrap().unwrap();
    assert!(end.is_clean_shutdown(), "{end:?}");
    assert_eq!(out_a.text() + &out_b.text(), undisturbed());

    let (code, _, err) = ctl(&temp("nobody.api"), &["stats"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("cannot connect to the control socket"),
        "{err}"
    );
}

/// A guest that rewrites every page of 16 MiB pass after pass (`sbi_dirty`, CTR recording
/// on) moves live with the default downtime budget: the pages it dirties during the copy
/// rounds all arrive (its memory hashes after the hop are those of an undisturbed run), and
/// its pause is shorter than the copy.
#[test]
fn a_guest_rewriting_16_mib_moves_live_and_hashes_as_an_undisturbed_run() {
    let config = |api: Option<PathBuf>, budget: u64| {
        let mut c = RunConfig::new(guest("sbi_dirty"));
        c.memory_mib = 64;
        c.max_insns = Some(budget);
        c.api_sock = api;
        c
    };
    let lines = |s: &str| s.lines().map(str::to_owned).collect::<Vec<_>>();
    let straight = SharedBuf::default();
    let (exit, _) = run_kernel(
        &config(None, 400_000_000),
        Box::new(straight.clone()),
        ConsoleInput::None,
    )
    .unwrap();
    assert!(!exit.is_clean_shutdown(), "{exit:?}");
    let straight = lines(&straight.text());
    assert!(straight.len() > 10, "{straight:?}");

    let (api, out_a, out_b) = (temp("dirty-a"), SharedBuf::default(), SharedBuf::default());
    let vm = GuestVm::new(
        &config(Some(api.clone()), 4_000_000_000),
        Box::new(out_a.clone()),
    )
    .unwrap();
    let a = std::thread::spawn(move || {
        let mut vm = vm;
        vm.run()
    });
    let mut client = Client::connect(&api);
    // Mid-run: some hashes printed here, more to come on the destination.
    while lines(&out_a.text()).len() < 4 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let options = RestoreConfig {
        max_insns: Some(200_000_000),
        ..RestoreConfig::default()
    };
    let (to, b) = destination(&Endpoint::Unix(temp("dirty-b.sock")), options, &out_b);
    let hop = client.migrate(&to);
    ok(&hop);
    eprintln!("sbi_dirty hop: {hop}");
    moved(a, &to);
    let _ = b.join().unwrap();
    let before = lines(&out_a.text());
    let after = lines(&out_b.text());
    assert!(after.len() >= 2, "the destination printed {after:?}");
    let together: Vec<String> = before.iter().chain(&after).cloned().collect();
    let n = together.len().min(straight.len());
    assert_eq!(
        together[..n],
        straight[..n],
        "the moved guest's hashes differ from an undisturbed run's ({} before the hop)",
        before.len()
    );
    if migrate::precopy_supported().is_ok() {
        assert_eq!(hop["precopy"], true, "{hop}");
        assert!(hop["rounds"].as_u64().unwrap() >= 2, "{hop}");
        assert!(
            hop["bytes"].as_u64().unwrap() > 16 << 20,
            "RAM the guest wrote must be sent: {hop}"
        );
    }
}

/// A guest that never touched CTR (`sbi_bench_off`: its reset depth is 16) moves mid-run to
/// a host whose hart has only depth 64: it is not refused for a depth it never used, and
/// prints what an undisturbed run prints.
#[test]
fn a_guest_that_never_touched_ctr_moves_to_a_host_without_its_reset_depth() {
    let config = |api: Option<PathBuf>| {
        let mut c = RunConfig::new(guest("sbi_bench_off"));
        c.memory_mib = 32;
        c.max_insns = Some(2_000_000_000);
        c.api_sock = api;
        c
    };
    let straight = SharedBuf::default();
    let (exit, _) = run_kernel(
        &config(None),
        Box::new(straight.clone()),
        ConsoleInput::None,
    )
    .unwrap();
    assert!(exit.is_clean_shutdown(), "{exit:?}");

    let (api, out_a, out_b) = (
        temp("untouched"),
        SharedBuf::default(),
        SharedBuf::default(),
    );
    let vm = GuestVm::new(&config(Some(api.clone())), Box::new(out_a.clone())).unwrap();
    let a = std::thread::spawn(move || {
        let mut vm = vm;
        vm.run()
    });
    let mut client = Client::connect(&api);
    let options = RestoreConfig {
        host_ctr_depths: ctr_virt::DepthSet::parse("64").unwrap(),
        max_insns: Some(2_000_000_000),
        ..RestoreConfig::default()
    };
    let (to, b) = destination(&Endpoint::Unix(temp("untouched.sock")), options, &out_b);
    std::thread::sleep(Duration::from_millis(30));
    ok(&client.migrate(&to));
    moved(a, &to);
    let end = b.join().unwrap().unwrap();
    assert!(end.is_clean_shutdown(), "{end:?}");
    assert_eq!(out_a.text() + &out_b.text(), straight.text());
}

/// Four vCPUs (`sbi_ctr_smp`: two of them record CTR at once, IPIs, remote fences, HSM;
/// vCPUs 2 and 3 never started) taking turns on one hart instance move, paused exactly a
/// third of the way through, to a hart instance each: the consoles together print what a run straight
/// through prints.
#[test]
fn four_vcpus_on_one_hart_instance_move_to_one_each() {
    let config = |api: Option<PathBuf>| {
        let mut c = RunConfig::new(guest("sbi_ctr_smp"));
        c.memory_mib = 32;
        c.vcpus = 4;
        c.pcpus = Some(1);
        c.slice_insns = 500;
        c.max_insns = Some(BUDGET);
        c.api_sock = api;
        c
    };
    let straight = SharedBuf::default();
    let (exit, stats) = run_kernel(
        &config(None),
        Box::new(straight.clone()),
        ConsoleInput::None,
    )
    .unwrap();
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{}", straight.text());
    let third = stats.instructions / 3;

    // The guest runs for a few milliseconds: the source is cut at exactly a third of the
    // way (its instruction budget), then held paused on its control socket, and moves.
    let (api_a, api_b) = (temp("four-a"), temp("four-b"));
    let (out_a, out_b) = (SharedBuf::default(), SharedBuf::default());
    let mut cut = config(None);
    cut.max_insns = Some(third);
    let mut first = GuestVm::new(&cut, Box::new(out_a.clone())).unwrap();
    let exit = first.run().unwrap();
    assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");
    // The cut VM's state and RAM (it never runs again).
    let (state, memory) = (first.snapshot_state(), first.memory().clone());
    let source_options = RestoreConfig {
        pcpus: Some(1),
        slice_insns: 500,
        ..dest_options(&api_a, true)
    };
    let vm = GuestVm::from_snapshot(
        vmm::snapshot::Snapshot { state, memory },
        &source_options,
        Box::new(out_a.clone()),
    )
    .unwrap();
    let a = std::thread::spawn(move || {
        let mut vm = vm;
        vm.run()
    });
    let mut client_a = Client::connect(&api_a);
    let stats = client_a.send("{\"cmd\":\"stats\"}");
    assert_eq!(stats["paused"], true, "{stats}");
    assert!(stats["vcpus"].as_array().unwrap().len() == 4, "{stats}");
    let (to_b, b) = destination(
        &Endpoint::Unix(temp("four-b.sock")),
        dest_options(&api_b, false),
        &out_b,
    );
    ok(&client_a.migrate(&to_b));
    moved(a, &to_b);
    let end = b.join().unwrap().unwrap();
    assert_eq!(end.exit_code(), 0, "{end:?}\n{}", out_b.text());
    assert!(
        !out_b.text().is_empty(),
        "the hop came after the guest's last line"
    );
    assert_eq!(
        without_cycles(&(out_a.text() + &out_b.text())),
        without_cycles(&straight.text()),
        "the consoles differ from a run straight through"
    );
}

/// Three `vmm` processes: a `vmm run` moves over TCP to a `vmm receive --paused` (port 0:
/// it says which port), which moves over a UNIX socket to another `vmm receive`, all driven
/// by `vmm ctl`; the three standard outputs together are what an undisturbed run prints,
/// the first two processes end with status 0 saying where the VM went, the last with the
/// guest's own end.
#[test]
fn three_vmm_processes_pass_the_vm_on_over_tcp_and_unix() {
    use std::process::{Child, Stdio};
    let expected = undisturbed();
    let spawn = |args: &[&str]| -> Child {
        vmm_command()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let ctl = |api: &Path, args: &[&str]| {
        let out = vmm_command()
            .arg("ctl")
            .arg("--api-sock")
            .arg(api)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "vmm ctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // Ends a process (killed after 60 s): its status, stdout and stderr.
    let finish = |mut p: Child| -> (Option<i32>, String, String) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while p.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = p.kill();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let out = p.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (api1, api2) = (temp("proc-1.api"), temp("proc-2.api"));
    let sock3 = temp("proc-3.sock");
    let kernel = guest("sbi_ctr_migrate");
    let budget = BUDGET.to_string();
    let p1 = spawn(&[
        "run",
        "--memory",
        "32",
        "--max-insns",
        &budget,
        "--kernel",
        kernel.to_str().unwrap(),
        "--api-sock",
        api1.to_str().unwrap(),
    ]);
    let mut p2 = spawn(&[
        "receive",
        "--listen",
        "tcp:127.0.0.1:0",
        "--paused",
        "--api-sock",
        api2.to_str().unwrap(),
        "--max-insns",
        &budget,
    ]);
    // "vmm: waiting for a VM on tcp:127.0.0.1:PORT"
    let mut said = String::new();
    let mut p2_err = BufReader::new(p2.stderr.take().unwrap());
    p2_err.read_line(&mut said).unwrap();
    let to2 = said
        .trim()
        .strip_prefix("vmm: waiting for a VM on ")
        .unwrap_or_else(|| panic!("{said:?}"))
        .to_string();
    assert!(
        to2.starts_with("tcp:127.0.0.1:") && !to2.ends_with(":0"),
        "{to2}"
    );
    drop(Client::connect(&api1));
    std::thread::sleep(Duration::from_millis(20));
    ctl(&api1, &["migrate", &to2]);
    let (code1, out1, err1) = finish(p1);
    assert_eq!(code1, Some(0), "{err1}");
    assert!(err1.contains(&format!("the VM moved to {to2}")), "{err1}");

    let p3 = spawn(&[
        "receive",
        "--listen",
        &format!("unix:{}", sock3.display()),
        "--max-insns",
        &budget,
    ]);
    let to3 = format!("unix:{}", sock3.display());
    for _ in 0..500 {
        if sock3.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(Client::connect(&api2));
    ctl(&api2, &["migrate", &to3]);
    let (code2, out2, _) = finish(p2);
    let mut err2 = String::new();
    p2_err.read_to_string(&mut err2).unwrap();
    assert_eq!(code2, Some(0), "{err2}");
    assert!(err2.contains(&format!("the VM moved to {to3}")), "{err2}");
    let (code3, out3, err3) = finish(p3);
    assert_eq!(code3, Some(0), "{err3}");
    assert_eq!(out1 + &out2 + &out3, expected);
}

/// A real migration stream (recorded by a fake destination that then refuses, so the
/// source goes on), replayed into a real destination: as recorded it is accepted (READY);
/// with bytes flipped, frames cut short, dropped or repeated, every one of 120 variants is
/// refused with a message (a frame repeated after the whole VM arrived: as a missing GO),
/// nothing panics and nothing runs.
#[test]
fn mutated_real_streams_are_refused_without_a_panic() {
    // Record.
    let path = temp("recorder.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let recorder = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let hello = br#"{"protocol":"vmm-migrate","version":7,"host_ctr_depths":[16,32,64,128,256],"max_memory_mib":65536,"max_vcpus":64}"#;
        conn.write_all(&frame(1, hello)).unwrap();
        let mut frames = Vec::new();
        loop {
            let mut head = [0u8; 9];
            conn.read_exact(&mut head).unwrap();
            let mut body = vec![0u8; u64::from_le_bytes(head[1..].try_into().unwrap()) as usize];
            conn.read_exact(&mut body).unwrap();
            frames.push(frame(head[0], &body));
            if head[0] == 4 {
                break;
            }
        }
        conn.write_all(&frame(6, b"recorded")).unwrap();
        frames
    });
    let message = failed_hop("recorded", |c| {
        std::thread::sleep(Duration::from_millis(20));
        c.migrate(&Endpoint::Unix(path.clone()))
    });
    assert!(message.contains("recorded"), "{message}");
    let frames = recorder.join().unwrap();
    assert!(frames.len() >= 4, "BEGIN, pages, STATE, END");

    let (e, answer) = bad_stream("replay", &frames);
    assert_eq!(
        answer.map(|a| a.0),
        Some(5),
        "the recorded stream is accepted: {e}"
    );

    let mut rng = test_support::XorShift::from_seed(20);
    for case in 0..120 {
        let mut stream = frames.clone();
        let what = match case % 3 {
            0 => {
                // Flip a few bytes anywhere.
                for _ in 0..1 + rng.below(4) {
                    let f = rng.below(stream.len() as u64) as usize;
                    let i = rng.below(stream[f].len() as u64) as usize;
                    stream[f][i] ^= 1 << rng.below(8);
                }
                "flipped"
            }
            1 => {
                // Cut a frame short (the source then stops sending).
                let f = rng.below(stream.len() as u64) as usize;
                let keep = rng.below(stream[f].len() as u64) as usize;
                stream[f].truncate(keep);
                stream.truncate(f + 1);
                "cut"
            }
            _ => {
                // Drop or repeat a frame.
                let f = rng.below(stream.len() as u64) as usize;
                if rng.below(2) == 0 {
                    stream.remove(f);
                    "dropped"
                } else {
                    let again = stream[f].clone();
                    stream.insert(f, again);
                    "repeated"
                }
            }
        };
        if stream == frames {
            continue;
        }
        let (e, answer) = bad_stream(&format!("mutant-{case}"), &stream);
        assert!(!e.is_empty(), "case {case} ({what})");
        if answer.as_ref().map(|a| a.0) == Some(5) {
            // Only a stream whose VM arrived whole may be accepted (a frame repeated after
            // END); what follows instead of GO is then refused.
            assert!(
                stream.starts_with(&frames),
                "case {case} ({what}) was accepted: {e}"
            );
            assert!(e.contains("no GO"), "case {case} ({what}): {e}");
        }
    }
}

/// A destination that says hello and then neither reads nor answers: the source gives up
/// after its stream timeout ([`migrate::IO_TIMEOUT`], 30 s), and its guest runs on as if
/// nothing had happened.
#[test]
fn a_destination_that_stalls_times_out_and_the_source_goes_on() {
    let path = temp("stalls.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let (done, wait_done) = std::sync::mpsc::channel::<()>();
    let staller = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let hello = br#"{"protocol":"vmm-migrate","version":7,"host_ctr_depths":[16,32,64,128,256],"max_memory_mib":65536,"max_vcpus":64}"#;
        conn.write_all(&frame(1, hello)).unwrap();
        // Hold the connection open, reading nothing, until the source has given up.
        let _ = wait_done.recv_timeout(Duration::from_secs(120));
    });
    let start = std::time::Instant::now();
    let m = failed_hop("stalls", |c| {
        std::thread::sleep(Duration::from_millis(20));
        c.migrate(&Endpoint::Unix(path.clone()))
    });
    let _ = done.send(());
    staller.join().unwrap();
    assert!(
        m.contains("stream failed") && m.contains("timed out"),
        "{m}"
    );
    assert!(
        start.elapsed() >= migrate::IO_TIMEOUT,
        "{:?}",
        start.elapsed()
    );
}

/// A guest with AIA (`--aia aplic-imsic`: `sbi_aia_input` has programmed its interrupt
/// file, the APLIC's domain, source 10's mode and target, and the UART's IER, and waits in
/// WFI for console input, with nothing else to wake it) moves while it waits: the
/// destination's APLIC and interrupt file are the source's, so the input typed there
/// reaches the guest as the same MSI and the guest ends as a run straight through does.
#[test]
fn a_guest_waiting_for_an_aplic_interrupt_moves_and_takes_it_on_the_destination() {
    let config = |api: Option<PathBuf>| {
        let mut c = RunConfig::new(guest("sbi_aia_input"));
        c.memory_mib = 32;
        c.max_insns = Some(200_000_000);
        c.aia = vmm::run::aia::AiaMode::AplicImsic;
        c.api_sock = api;
        c
    };
    let straight = SharedBuf::default();
    let (exit, _) = run_kernel(
        &config(None),
        Box::new(straight.clone()),
        ConsoleInput::Bytes(b"hi\n".to_vec()),
    )
    .unwrap();
    assert!(exit.is_clean_shutdown(), "{exit:?}\n{}", straight.text());
    assert!(
        straight.text().ends_with("sbi_aia_input: PASS\n"),
        "{}",
        straight.text()
    );

    let (api_a, api_b) = (temp("aia-a"), temp("aia-b"));
    let (out_a, out_b) = (SharedBuf::default(), SharedBuf::default());
    let vm = GuestVm::new(&config(Some(api_a.clone())), Box::new(out_a.clone())).unwrap();
    vm.input().set_open(true);
    let a = std::thread::spawn(move || {
        let mut vm = vm;
        vm.run()
    });
    let mut client_a = Client::connect(&api_a);
    // Paused in its wait: `stats` reports the only vCPU's WFI (it did not, once: a VM of
    // one vCPU has no SMP state, which is where the flag came from).
    pause_when(&mut client_a, |s| {
        out_a.text().contains("waiting for input") && s["vcpus"][0]["wfi"] == true
    });

    // The destination starts paused; its input queue comes back here.
    let receiver = Receiver::bind(&Endpoint::Unix(temp("aia-b.sock"))).unwrap();
    let to_b = receiver.endpoint();
    let (tx, rx) = std::sync::mpsc::channel();
    let options = dest_options(&api_b, true);
    let dest_out = out_b.clone();
    let b = std::thread::spawn(move || {
        let mut vm = receiver.accept(&options, Box::new(dest_out))?;
        drop(receiver);
        vm.input().set_open(true);
        tx.send(vm.input().clone()).unwrap();
        vm.run()
    });
    ok(&client_a.migrate(&to_b));
    moved(a, &to_b);
    let input = rx.recv().unwrap();
    // Paused before its first run there: it goes on after the WFI it retired on the source
    // (its loop's check, then WFI again).
    let mut client_b = Client::connect(&api_b);
    ok(&client_b.send("{\"cmd\":\"resume\"}"));
    // Let the guest idle in its WFI on the destination, then type.
    std::thread::sleep(Duration::from_millis(50));
    input.push(b"hi\n");
    input.set_open(false);
    let end = b.join().unwrap().unwrap();
    assert!(end.is_clean_shutdown(), "{end:?}\n{}", out_b.text());
    // The interrupt count after "got" depends on how the bytes met the UART: not compared.
    let upto = |s: &str| s[..s.find(" in ").unwrap_or(s.len())].to_string();
    assert_eq!(
        upto(&(out_a.text() + &out_b.text())),
        upto(&straight.text())
    );
    assert!(out_b.text().contains("got \"hi\""), "{}", out_b.text());
    assert!(
        out_b.text().ends_with("sbi_aia_input: PASS\n"),
        "{}",
        out_b.text()
    );
}
