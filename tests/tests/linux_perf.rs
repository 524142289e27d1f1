//! Debian's `perf` (linux-perf) in Debian's riscv64 Linux guest (the kit's suite: trixie's
//! 6.12 or a newer kernel) on `vmm run`: `perf stat`
//! counts cycles, instructions and branches through the riscv_pmu_sbi driver and the SBI
//! PMU extension (`pmu-virt`), and `perf record` gets samples from counter-overflow
//! interrupts (Sscofpmf LCOFI).
//!
//! The kernel and the perf initramfs (busybox, /usr/bin/perf and the closure of its shared
//! libraries) come from `scripts/linux-guest.sh -q` (its `KERNEL=` and `INITRD_PERF=`
//! lines); if the script fails the tests fail with its message, they are never skipped.
//! The boots run 3.7 and 4.6 billion guest instructions with trixie's 6.12, 4.5 and 5.5
//! billion with sid's 7.2 (the uncompressed initramfs, 43 MB and 39 MB, adds about 0.3
//! billion to a plain boot); [`PERF_BUDGET`] and [`PERF_TIMEOUT`] end a hung
//! guest with its console output.
//!
//! Workloads: `busybox md5sum` of /usr/bin/perf (3.4 MB) and of /bin/busybox (1.6 MB):
//! deterministic, about 18 instructions per byte hashed.

use std::time::Duration;

use pmu_virt::LcofiDelivery;
use vmm::run::aia::AiaMode;
use vmm::run::{RunConfig, RunStats};
use vmm_tests::linux_kit::{self, assert_workload_passed, linux_guest, section};

/// Instruction budget of one boot (a boot with these workloads needs up to 4.6e9 with
/// Linux 6.12, 5.5e9 with 7.2).
const PERF_BUDGET: u64 = 12_000_000_000;

/// Wall-clock limit of one boot (about 20-40 s on a 2-core machine).
const PERF_TIMEOUT: Duration = Duration::from_secs(900);

/// The kernel command line before `vmmcmd=`: `loglevel=4` keeps the kernel's informational
/// messages (such as perf lowering its sample rate) out of the workload's output.
const BASE_CMDLINE: &str = "console=ttyS0 earlycon=sbi panic=-1 loglevel=4";

/// Guest RAM in MiB. The initramfs is unpacked into RAM: with Linux 7.2 (Debian's config
/// reserves 128 MiB for CMA) unpacking its 39 MB fails ("Initramfs unpacking failed: write
/// error", and perf then misses libraries) with 288 MiB and works from 320; 384 leaves a
/// margin. Linux 6.12 needed 256.
const PERF_MEMORY_MIB: u64 = 384;

/// The period of `perf record -c`, in instructions.
const PERIOD: u64 = 100_000;

/// Boots the perf guest with `vmmcmd` (with or without the PMU snapshot shared memory, its
/// LCOFIs delivered as `lcofi` says, with the AIA devices or without as `aia` says); returns the console output (`\r\n` as `\n`) and the
/// run's statistics after asserting a clean power-off with workload status 0.
fn boot(
    vmmcmd: &str,
    pmu_snapshot: bool,
    lcofi: LcofiDelivery,
    aia: AiaMode,
) -> (String, RunStats) {
    boot_with(vmmcmd, |config| {
        config.pmu_snapshot = pmu_snapshot;
        config.lcofi_delivery = lcofi;
        config.aia = aia;
    })
}

/// [`boot`] with the configuration as `set` leaves it (the defaults of `vmm run` otherwise).
fn boot_with(vmmcmd: &str, set: impl FnOnce(&mut RunConfig)) -> (String, RunStats) {
    let guest = linux_guest();
    let mut config = RunConfig::new(&guest.kernel);
    config.initrd = Some(guest.initrd_perf.clone());
    config.cmdline = format!("{BASE_CMDLINE} vmmcmd=\"{vmmcmd}\"");
    config.memory_mib = PERF_MEMORY_MIB;
    config.max_insns = Some(PERF_BUDGET);
    config.timeout = Some(PERF_TIMEOUT);
    set(&mut config);
    let (exit, stats, text) = linux_kit::boot(&config);
    eprintln!(
        "perf boot (snapshot {}, jit {}): {exit:?}, {} instructions in {:.1} s ({:.0} MIPS)",
        config.pmu_snapshot,
        config.jit,
        stats.instructions,
        stats.wall.as_secs_f64(),
        stats.mips()
    );
    assert_workload_passed(&exit, &text, "the workload");
    (text, stats)
}

/// The count `perf stat` printed for `event` (`   1234567      event   ...`).
fn stat_count(stat: &str, event: &str) -> u64 {
    assert!(
        !stat.contains("<not supported>") && !stat.contains("<not counted>"),
        "perf stat could not count everything:\n{stat}"
    );
    stat.lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            let n = words.next()?.replace(',', "").parse().ok()?;
            (words.next()? == event).then_some(n)
        })
        .unwrap_or_else(|| panic!("no {event} count in:\n{stat}"))
}

/// The `N` of perf record's `[ perf record: Captured and wrote ... (N samples) ]`.
fn record_samples(rec: &str) -> u64 {
    let line = rec
        .lines()
        .find(|l| l.contains("perf record: Captured and wrote"))
        .unwrap_or_else(|| panic!("no 'Captured and wrote' line:\n{rec}"));
    line.rsplit_once('(')
        .and_then(|(_, s)| s.strip_suffix(" samples) ]"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no sample count in {line:?}"))
}

/// The size `wc -c` printed for `path`.
fn file_size(out: &str, path: &str) -> u64 {
    out.lines()
        .find_map(|l| {
            let (n, p) = l.trim().split_once(' ')?;
            (p.trim() == path).then(|| n.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no size of {path}:\n{out}"))
}

const STAT_EVENTS: &str = "cycles,instructions,branches";

/// `perf stat` of three workloads of known relative size; `perf record` with the snapshot
/// shared memory (`--pmu-snapshot on`, off by default).
#[test]
fn perf_stat_counts_and_perf_record_samples() {
    let stat = |name: &str, cmd: &str| {
        format!("echo '=== {name}'; perf stat -o /tmp/{name} -e {STAT_EVENTS} {cmd} >/dev/null; cat /tmp/{name}")
    };
    let cmd = [
        "cd /tmp".to_string(),
        "echo '=== sizes'".to_string(),
        "wc -c /usr/bin/perf /bin/busybox".to_string(),
        stat("true", "busybox true"),
        stat("md5-busybox", "busybox md5sum /bin/busybox"),
        stat("md5-perf", "busybox md5sum /usr/bin/perf"),
        "echo '=== record'".to_string(),
        format!("perf record -o /tmp/i.data -e instructions -c {PERIOD} busybox md5sum /usr/bin/perf 2>&1 >/dev/null"),
        "echo '=== report'".to_string(),
        "perf report -i /tmp/i.data --stdio --sort comm 2>/dev/null | cat".to_string(),
        "echo '=== end'".to_string(),
    ]
    .join("; ");
    let (out, stats) = boot(&cmd, true, LcofiDelivery::Direct, AiaMode::None);
    assert_eq!(stats.exits.get("interrupt LCOFI to guest (hvip)"), 0);

    let sizes = section(&out, "sizes");
    let perf_size = file_size(sizes, "/usr/bin/perf");
    let busybox_size = file_size(sizes, "/bin/busybox");
    let mut instructions = Vec::new();
    for name in ["true", "md5-busybox", "md5-perf"] {
        let s = section(&out, name);
        eprintln!("perf stat {name}:\n{s}");
        let (cy, ir, br) = (
            stat_count(s, "cycles"),
            stat_count(s, "instructions"),
            stat_count(s, "branches"),
        );
        // docs/pmu.md: every instruction slot costs at least one cycle, and cycles and
        // instructions are filtered to the same modes (the task's, in VS and VU).
        assert!(cy >= ir, "{name}: cycles {cy} < instructions {ir}\n{s}");
        assert!(
            cy <= 4 * ir,
            "{name}: cycles {cy} > 4 x instructions {ir}\n{s}"
        );
        assert!(
            br < ir / 4 && br > ir / 100,
            "{name}: branches {br} for {ir} instructions\n{s}"
        );
        instructions.push(ir);
    }
    let [base, md5_busybox, md5_perf] = instructions[..] else {
        unreachable!()
    };
    // exec and exit of busybox: about a million instructions.
    assert!((100_000..5_000_000).contains(&base), "busybox true: {base}");
    // md5sum hashes at about 18 instructions a byte (8 to 40 is sane) ...
    let per_byte = (md5_perf - base) as f64 / perf_size as f64;
    assert!(
        (8.0..40.0).contains(&per_byte),
        "{per_byte} instructions per byte"
    );
    // ... and the work above the fixed cost follows the size hashed.
    let ratio = (md5_perf - base) as f64 / (md5_busybox - base) as f64;
    let want = perf_size as f64 / busybox_size as f64;
    assert!(
        (ratio / want - 1.0).abs() < 0.1,
        "instructions ratio {ratio:.3}, size ratio {want:.3}"
    );

    // perf record: samples from counter-overflow interrupts. With the snapshot shared
    // memory, Linux 6.12 restarts the counters after an overflow with counter_idx_base
    // 4096 (a driver bug: 64 x BITS_PER_LONG), which SBI v2.0 answers with
    // SBI_ERR_INVALID_PARAM, so a counter only runs again when the task is scheduled
    // back in: fewer samples than count / period, but never more.
    let rec = section(&out, "record");
    let samples = record_samples(rec);
    eprintln!(
        "perf record with snapshot: {samples} samples, {md5_perf} instructions / {PERIOD} = {}",
        md5_perf / PERIOD
    );
    assert!(samples > 0, "{rec}");
    assert!(
        samples <= md5_perf * 11 / 10 / PERIOD,
        "{samples} samples for {md5_perf} instructions\n{rec}"
    );
    let report = section(&out, "report");
    assert!(
        report.contains(&format!("# Samples: {samples}  of event 'instructions'")),
        "{report}"
    );
    assert!(report.contains("busybox"), "{report}");
}

/// Without the snapshot shared memory the driver reads `scountovf` and restarts each
/// overflowed counter with its new initial value: one sample per period. This run delivers
/// the LCOFIs selectively (`--lcofi-delivery selective`: each exits to the VMM, which passes
/// it on through `hvip`); the other test's run delivers them directly. This run has the AIA
/// devices (`--aia aplic-imsic`, `vmm run`'s default), the other none.
#[test]
fn perf_record_samples_every_period_without_snapshot() {
    let cmd = [
        "cd /tmp".to_string(),
        "echo '=== stat'".to_string(),
        "perf stat -o /tmp/s -e instructions busybox md5sum /usr/bin/perf >/dev/null; cat /tmp/s".to_string(),
        "echo '=== record'".to_string(),
        format!("perf record -o /tmp/i.data -e instructions -c {PERIOD} busybox md5sum /usr/bin/perf 2>&1 >/dev/null"),
        "echo '=== report'".to_string(),
        "perf report -i /tmp/i.data --stdio --sort comm,dso 2>/dev/null | cat".to_string(),
        "echo '=== cycles'".to_string(),
        "perf record -o /tmp/c.data busybox md5sum /usr/bin/perf 2>&1 >/dev/null".to_string(),
        "perf report -i /tmp/c.data --stdio --sort dso 2>/dev/null | cat".to_string(),
        "echo '=== end'".to_string(),
    ]
    .join("; ");
    let (out, stats) = boot(&cmd, false, LcofiDelivery::Selective, AiaMode::AplicImsic);
    // The run had the AIA devices of `vmm run`'s default (the console through the APLIC).
    assert!(stats.exits.get("mmio aplic") > 0, "{}", stats.exits.table());

    let instructions = stat_count(section(&out, "stat"), "instructions");
    let rec = section(&out, "record");
    let samples = record_samples(rec);
    let expected = instructions / PERIOD;
    eprintln!(
        "perf record: {samples} samples, {instructions} instructions / {PERIOD} = {expected}"
    );
    assert!(
        samples * 100 >= expected * 90 && samples * 100 <= expected * 110,
        "{samples} samples, expected about {expected}\n{rec}"
    );
    let report = section(&out, "report");
    assert!(
        report.contains(&format!("# Samples: {samples}  of event 'instructions'")),
        "{report}"
    );
    // Most samples are in busybox itself (md5 in user mode), some in the kernel.
    let share = |dso: &str| {
        report
            .lines()
            .find(|l| l.trim_end().ends_with(dso) && l.contains('%'))
            .and_then(|l| {
                l.split_whitespace()
                    .next()?
                    .trim_end_matches('%')
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or_else(|| panic!("no {dso} line:\n{report}"))
    };
    assert!(share(" busybox") > 80.0, "{report}");
    assert!(share("[kernel.kallsyms]") > 0.0, "{report}");

    // The default event (cycles, at perf's default frequency) samples too.
    let cycles = section(&out, "cycles");
    let cycle_samples = record_samples(cycles);
    assert!(cycle_samples > 100, "{cycles}");
    // perf 6.12 names the default event `cycles` (`cycles:P` with modifiers), perf 7.x
    // `cpu/cycles/P` (PMU / event / modifiers): the event itself is cycles either way.
    let event = cycles
        .lines()
        .find_map(|l| l.strip_prefix("# Samples: "))
        .and_then(|l| l.split_once(" of event '"))
        .and_then(|(_, e)| e.strip_suffix('\''))
        .unwrap_or_else(|| panic!("no '# Samples: ... of event' line:\n{cycles}"));
    let name = match event.split('/').collect::<Vec<_>>()[..] {
        [_pmu, name, _modifiers] => name,
        _ => event.split(':').next().unwrap_or(event),
    };
    assert_eq!(name, "cycles", "event {event:?}\n{cycles}");
    // Every sample's LCOFI went through the VMM (perf stat counts no overflow).
    let passed_on = stats.exits.get("interrupt LCOFI to guest (hvip)");
    assert!(
        passed_on >= samples + cycle_samples,
        "{passed_on} LCOFIs passed on, {} samples\n{}",
        samples + cycle_samples,
        stats.exits.table()
    );
    assert_eq!(stats.exits.get("interrupt LCOFI spurious"), 0);
}

/// Block translation changes nothing a profiler sees: `perf record -e cycles -c 100000` of
/// md5sum, with `--jit on` and with `--jit off`, takes the same samples (the guest's own
/// `perf report`, symbol by symbol), and the boots execute the same instructions. With
/// translation the monitored blocks run up to the cycles left before the sampled counter
/// of cycles can wrap, where the interpreter takes over (`docs/architecture.md`,
/// "Counters of cycles").
#[test]
fn perf_record_samples_the_same_with_and_without_block_translation() {
    let cmd = [
        "cd /tmp".to_string(),
        "echo '=== record'".to_string(),
        format!("perf record -o /tmp/c.data -e cycles -c {PERIOD} busybox md5sum /usr/bin/perf 2>&1 >/dev/null"),
        "echo '=== report'".to_string(),
        "perf report -i /tmp/c.data --stdio --sort sym -F overhead,sample,sym 2>/dev/null | grep -v '^#'".to_string(),
        "echo '=== end'".to_string(),
    ]
    .join("; ");
    let (on, on_stats) = boot_with(&cmd, |c| c.jit = true);
    let (off, off_stats) = boot_with(&cmd, |c| c.jit = false);
    let samples = record_samples(section(&on, "record"));
    assert!(samples > 300, "{samples} samples\n{on}");
    assert_eq!(samples, record_samples(section(&off, "record")));
    let report = section(&on, "report");
    // Samples in busybox (stripped: its md5 code shows as addresses) and in the kernel.
    assert!(
        report.contains("[.] ") && report.contains("[k] "),
        "no user or no kernel samples:\n{report}"
    );
    assert_eq!(report, section(&off, "report"), "the reports differ");
    assert_eq!(on_stats.instructions, off_stats.instructions);
}

/// The Debian guest moves live to another VMM (in this process, over a UNIX socket) while
/// `perf record` samples `md5sum` (counters counting, LCOFIs arriving): the job finishes on
/// the destination with its samples, and since time is virtual the consoles together print
/// exactly what an undisturbed boot prints, sample count and report included.
#[test]
fn perf_record_goes_on_across_a_live_migration() {
    use std::io::{BufRead, BufReader, Write};
    use vmm::run::migrate::{Endpoint, Receiver};
    use vmm::run::snapshot::RestoreConfig;
    use vmm::run::GuestVm;
    use vmm_tests::SharedBuf;

    let cmd = [
        "cd /tmp".to_string(),
        "echo '=== record'".to_string(),
        format!(
            "perf record -o /tmp/i.data -e instructions -c {PERIOD} sh -c 'for i in 1 2 3; do \
             busybox md5sum /usr/bin/perf; done' 2>&1 >/dev/null"
        ),
        "echo '=== report'".to_string(),
        "perf report -i /tmp/i.data --stdio --sort comm 2>/dev/null | cat".to_string(),
        "echo '=== end'".to_string(),
    ]
    .join("; ");
    let guest = linux_guest();
    let config = |api: Option<std::path::PathBuf>| {
        let mut c = RunConfig::new(&guest.kernel);
        c.initrd = Some(guest.initrd_perf.clone());
        c.cmdline = format!("{BASE_CMDLINE} vmmcmd=\"{cmd}\"");
        c.memory_mib = PERF_MEMORY_MIB;
        c.max_insns = Some(PERF_BUDGET);
        c.timeout = Some(PERF_TIMEOUT);
        c.api_sock = api;
        c
    };
    let (exit, _, straight) = linux_kit::boot(&config(None));
    assert_workload_passed(&exit, &straight, "the undisturbed run");
    assert!(record_samples(section(&straight, "record")) > 0);

    let api = test_support::temp_path("vmm-linux-migrate", "api");
    let (out_a, out_b) = (SharedBuf::default(), SharedBuf::default());
    let vm = GuestVm::new(&config(Some(api.clone())), Box::new(out_a.clone())).unwrap();
    let source = std::thread::spawn(move || {
        let mut vm = vm;
        vm.run()
    });
    let receiver = Receiver::bind(&Endpoint::Unix(test_support::temp_path(
        "vmm-linux-migrate",
        "dest.sock",
    )))
    .unwrap();
    let to = receiver.endpoint();
    let options = RestoreConfig {
        max_insns: Some(PERF_BUDGET),
        timeout: Some(PERF_TIMEOUT),
        ..RestoreConfig::default()
    };
    let dest_out = out_b.clone();
    let destination = std::thread::spawn(move || {
        let mut vm = receiver.accept(&options, Box::new(dest_out))?;
        vm.run()
    });
    // Once perf record runs (its first line is out), the VM moves.
    let start = std::time::Instant::now();
    while !out_a.text().contains("\n=== record") {
        assert!(
            start.elapsed() < PERF_TIMEOUT && !source.is_finished(),
            "the guest never reached perf record:\n{}",
            out_a.text()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let conn = std::os::unix::net::UnixStream::connect(&api).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(600)))
        .unwrap();
    writeln!(&conn, "{{\"cmd\":\"migrate\",\"to\":\"{to}\"}}").unwrap();
    let mut answer = String::new();
    BufReader::new(&conn).read_line(&mut answer).unwrap();
    eprintln!("Linux hop during perf record: {answer}");
    assert!(answer.contains("\"ok\":true"), "{answer}");
    let left = source.join().unwrap().unwrap();
    assert!(
        matches!(left, vmm::run::RunExit::Migrated { .. }),
        "{left:?}"
    );
    let end = destination.join().unwrap().unwrap();
    let before = out_a.text().replace("\r\n", "\n");
    let after = out_b.text().replace("\r\n", "\n");
    let together = format!("{before}{after}");
    assert_workload_passed(&end, &together, "the migrated run");
    assert!(
        !after.contains("=== record") && after.contains("=== report"),
        "the hop was not during perf record:\n--- before\n{before}\n--- after\n{after}"
    );
    let samples = record_samples(section(&together, "record"));
    // 3 x md5sum of 3.4 MB at about 18 instructions a byte: well over a thousand samples.
    assert!(samples > 1000, "{together}");
    assert!(
        section(&together, "report")
            .contains(&format!("# Event count (approx.): {}", samples * PERIOD)),
        "{together}"
    );
    assert_eq!(
        together, straight,
        "the migrated boot printed something else"
    );
}
