//! `--clock`: host time (the guest's `time` follows the host's monotonic clock and an idle
//! vCPU sleeps on the host) and virtual time (deterministic), with the `sbi_clock` guest,
//! which waits ten times in WFI for a timer 0.1 s of guest time ahead and checks that `time`
//! never goes backward. Bounds are generous: lower bounds on wall time, and an upper bound on
//! the share of CPU time (the process sleeps), never a tight bound on how long a run takes.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use vmm_tests::{guest, vmm_command};

/// A finished `vmm` run: its exit status, wall time, CPU time (user + system, of the
/// process and its threads) and output.
#[derive(Debug)]
struct Finished {
    status: i32,
    wall: Duration,
    cpu: Duration,
    out: String,
    err: String,
}

/// Runs `vmm` with `args` (virtual time unless they say `--clock host`) and measures it.
fn run_measured(args: &[&str]) -> Finished {
    let start = Instant::now();
    // Reaped by `wait4` below, which also gives its CPU time.
    #[allow(clippy::zombie_processes)]
    let mut child = vmm_command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn vmm");
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: all-zero is a valid `rusage` (plain integers).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for (`child` is never waited on); the
    // pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let wall = start.elapsed();
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Finished {
        status: code,
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        out: out.join().expect("stdout reader"),
        err: err.join().expect("stderr reader"),
    }
}

/// The `time` values `sbi_clock` printed after its waits, in order.
fn step_times(out: &str) -> Vec<u64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("sbi_clock: step "))
        .map(|l| {
            let t = l.split(" time ").nth(1).expect("step line");
            t.trim().parse().expect("decimal time")
        })
        .collect()
}

/// The guest's ten waits of 1_000_000 ticks (0.1 s at 10 MHz, each checked by the guest)
/// took at least 1 s of wall time (less a margin), and the process slept through them: its
/// CPU time is well below its wall time.
fn assert_waited_asleep(run: &Finished) {
    assert!(run.wall >= Duration::from_millis(950), "{run:?}");
    let share = run.cpu.as_secs_f64() / run.wall.as_secs_f64();
    assert!(
        share < 0.5,
        "CPU time {:?} of {:?} wall time: the idle hart did not sleep",
        run.cpu,
        run.wall
    );
}

fn sbi_clock() -> String {
    guest("sbi_clock").to_str().expect("UTF-8 path").to_string()
}

/// With host time, the guest's ten waits of 0.1 s of guest time take at least 1 s of wall
/// time, and the process sleeps through them: its CPU time is well below its wall time.
#[test]
fn host_clock_waits_take_wall_time_asleep() {
    let kernel = sbi_clock();
    for sstc in ["on", "off"] {
        let run = run_measured(&[
            "run",
            "--clock",
            "host",
            "--sstc",
            sstc,
            "--memory",
            "16",
            "--max-insns",
            "100000000",
            "--timeout",
            "120",
            "--kernel",
            &kernel,
        ]);
        assert_eq!(run.status, 0, "{run:?}");
        assert!(run.out.ends_with("sbi_clock: PASS\n"), "{run:?}");
        let times = step_times(&run.out);
        assert_eq!(times.len(), 10, "{run:?}");
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
        assert_waited_asleep(&run);
    }
}

/// `vmm machine --clock host`: the `machine_clock` program's ten WFI waits of 0.1 s of
/// `mtime` (CLINT timer, `mstatus.MIE` clear) take at least 1 s of wall time with the
/// process asleep; with virtual time (the tests' default) they are skipped, and the run
/// prints the same.
#[test]
fn machine_host_clock_waits_asleep_and_virtual_skips() {
    let program = guest("machine_clock");
    let program = program.to_str().expect("UTF-8 path");
    let args = |clock: &'static str| {
        vec![
            "machine",
            "--clock",
            clock,
            "--max-insns",
            "100000000",
            "--timeout",
            "120",
            program,
        ]
    };
    let host = run_measured(&args("host"));
    assert_eq!(host.status, 0, "{host:?}");
    assert!(host.out.ends_with("machine_clock: PASS\n"), "{host:?}");
    assert_waited_asleep(&host);
    let virt = run_measured(&args("virtual"));
    assert_eq!(virt.status, 0, "{virt:?}");
    assert_eq!(
        virt.out, host.out,
        "the clock mode changed what the program printed"
    );
}

/// With virtual time (the tests' default, and `--clock virtual`) the same waits are
/// skipped: the run is deterministic, the same guest times every time.
#[test]
fn virtual_clock_is_deterministic() {
    let kernel = sbi_clock();
    let args = |clock: Option<&'static str>| {
        let mut a = vec!["run", "--memory", "16", "--max-insns", "100000000"];
        a.extend(["--timeout", "120"]);
        if let Some(c) = clock {
            a.extend(["--clock", c]);
        }
        a
    };
    let mut outs = Vec::new();
    for clock in [None, Some("virtual")] {
        let mut a = args(clock);
        a.extend(["--kernel", &kernel]);
        let run = run_measured(&a);
        assert_eq!(run.status, 0, "{run:?}");
        assert!(run.out.ends_with("sbi_clock: PASS\n"), "{run:?}");
        assert_eq!(step_times(&run.out).len(), 10, "{run:?}");
        outs.push(run.out);
    }
    assert_eq!(outs[0], outs[1]);
}

/// A host-time VM snapshotted in the middle of its waits and restored (with host time, and
/// with virtual time) goes on from the snapshot's `time`: the guest sees it never go
/// backward (it checks every read against the last, kept in RAM), and its steps after the
/// restore are later than those before.
#[test]
fn host_clock_snapshot_restore_keeps_time_monotonic() {
    let kernel = sbi_clock();
    let snap = test_support::temp_path("vmm-clock", "host.snap");
    let first = run_measured(&[
        "run",
        "--clock",
        "host",
        "--memory",
        "16",
        "--timeout",
        "0.45",
        "--snapshot-on-stop",
        snap.to_str().unwrap(),
        "--kernel",
        &kernel,
    ]);
    assert_eq!(first.status, 124, "{first:?}");
    let before = step_times(&first.out);
    assert!(before.len() < 10, "{first:?}");
    for clock in ["host", "virtual"] {
        let restored = run_measured(&[
            "restore",
            "--clock",
            clock,
            "--snapshot",
            snap.to_str().unwrap(),
            "--max-insns",
            "100000000",
            "--timeout",
            "120",
        ]);
        assert_eq!(restored.status, 0, "{clock}: {restored:?}");
        assert!(restored.out.ends_with("sbi_clock: PASS\n"), "{restored:?}");
        let after = step_times(&restored.out);
        assert_eq!(before.len() + after.len(), 10, "{before:?} {after:?}");
        let all: Vec<u64> = before.iter().chain(&after).copied().collect();
        assert!(all.windows(2).all(|w| w[0] < w[1]), "{clock}: {all:?}");
        if clock == "host" {
            // The steps left took host time (the first was under way at the snapshot).
            let left = Duration::from_millis(100 * (after.len() as u64 - 1));
            assert!(restored.wall >= left.mul_f64(0.95), "{restored:?}");
        }
    }
    let _ = std::fs::remove_file(&snap);
}

/// A bad `--clock` (or `VMM_CLOCK`) value is refused before anything runs, naming both
/// accepted values.
#[test]
fn a_bad_clock_is_refused() {
    let kernel = sbi_clock();
    let run = run_measured(&["run", "--clock", "wall", "--kernel", &kernel]);
    assert_eq!(run.status, 2, "{run:?}");
    assert!(run.err.contains("host or virtual"), "{run:?}");
    let out = vmm_command()
        .env("VMM_CLOCK", "fast")
        .args(["restore", "--snapshot", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("host or virtual"));
}

/// Host time on several vCPUs: the SMP guest (IPIs, remote fences, HSM start and stop, WFI
/// waits for another vCPU) passes with a hart instance each and with both vCPUs on one
/// (`--pcpus 1`), its idle vCPUs sleeping on the host until woken.
#[test]
fn host_clock_smp_guest_passes_on_any_number_of_harts() {
    use vmm::run::{run_kernel, ConsoleInput, RunConfig};
    for pcpus in [None, Some(1)] {
        let mut c = RunConfig::new(guest("sbi_ctr_smp"));
        c.memory_mib = 32;
        c.max_insns = Some(vmm_tests::BUDGET);
        c.timeout = Some(Duration::from_secs(120));
        c.vcpus = 2;
        c.pcpus = pcpus;
        c.clock = vcpu::ClockMode::Host;
        let out = vmm_tests::SharedBuf::default();
        let (exit, _) = run_kernel(&c, Box::new(out.clone()), ConsoleInput::None)
            .unwrap_or_else(|e| panic!("pcpus {pcpus:?}: {e}"));
        let text = out.text();
        assert_eq!(exit.exit_code(), 0, "pcpus {pcpus:?}: {exit:?}\n{text}");
        assert!(text.contains("sbi_ctr_smp: PASS"), "{text}");
    }
}
