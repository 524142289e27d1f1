//! A real Linux kernel uses the guest's CTR: Debian's riscv64 kernel (the kit's suite) on
//! `vmm run` loads the `ctr_rec` module (guest/linux/ctr, built out of tree against the
//! kit's kernel by `scripts/linux-guest.sh`), and `ctrrec` records the user-mode control
//! transfers of `ctrtest`, a static program whose `main` calls `work` N times and `work`
//! calls `leaf` (its symbols, from `nm` at kit build time, are in the image as
//! /usr/share/ctrtest.syms).
//!
//! The kernel and the CTR initramfs come from `scripts/linux-guest.sh -q` (its `KERNEL=` and
//! `INITRD_CTR=` lines); if the script fails (e.g. gcc-riscv64-linux-gnu missing: it names
//! the package) the tests fail with its message, they are never skipped. Each boot runs
//! 1.3 (one vCPU) to 5.1 billion (two, with load) guest instructions in 3 to 12 s;
//! [`BUDGET`] and [`TIMEOUT`] end a hung guest with its console output.

use std::time::Duration;

use ctr_virt::DepthSet;
use vmm::run::snapshot::{restore_and_run, RestoreConfig};
use vmm::run::{ConsoleInput, GuestVm, RunConfig, RunExit};
use vmm_tests::linux_kit::{self, assert_workload_passed, linux_guest, section};
use vmm_tests::SharedBuf;

/// Instruction budget of one boot.
const BUDGET: u64 = 12_000_000_000;

/// Wall-clock limit of one boot.
const TIMEOUT: Duration = Duration::from_secs(900);

/// Guest RAM in MiB (Linux 7.2 needs 256, see scripts/linux-guest.sh).
const MEMORY_MIB: u64 = 256;

/// `loglevel=4`: the module's refusals at load (KERN_ERR) show on the console, its
/// warnings (a refused depth, which `ctrrec` prints itself) do not.
/// `nosoftlockup`: the 2-vCPU boots run beside other tests' vCPU threads on a 2-core host,
/// where a vCPU's thread can go unscheduled while the other advances the shared virtual
/// clock by seconds; the soft-lockup watchdog then reports "BUG: soft lockup" for a CPU that
/// only had no host CPU (seen in CI runs, also on an otherwise idle host).
const BASE_CMDLINE: &str = "console=ttyS0 earlycon=sbi panic=-1 loglevel=4 nosoftlockup";

/// Standard base64 (the guest's script travels as `vmmcmd="echo B64 | base64 -d | sh"`: no
/// quoting problems on the kernel command line).
fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Boots the CTR guest with `script` (a shell script run by /init) on a VM that `tweak`
/// configures; returns the console output (`\r\n` as `\n`) after asserting a clean
/// power-off with the script's status 0.
fn boot(script: &str, tweak: impl FnOnce(&mut RunConfig)) -> String {
    let guest = linux_guest();
    let mut config = RunConfig::new(&guest.kernel);
    config.initrd = Some(guest.initrd_ctr.clone());
    config.cmdline = format!(
        "{BASE_CMDLINE} vmmcmd=\"echo {} | base64 -d | sh\"",
        base64(script.as_bytes())
    );
    assert!(
        config.cmdline.len() < 1000,
        "the guest script is too long for the kernel command line (1024 bytes)"
    );
    config.memory_mib = MEMORY_MIB;
    config.max_insns = Some(BUDGET);
    config.timeout = Some(TIMEOUT);
    tweak(&mut config);
    let (exit, stats, text) = linux_kit::boot(&config);
    eprintln!(
        "CTR boot ({} vCPUs): {exit:?}, {} instructions in {:.1} s",
        config.vcpus,
        stats.instructions,
        stats.wall.as_secs_f64()
    );
    for bad in ["Oops", "Kernel panic", "Call Trace", "BUG:", "WARNING:"] {
        assert!(!text.contains(bad), "the kernel said {bad:?}:\n{text}");
    }
    assert_workload_passed(&exit, &text, "the guest script");
    text
}

/// A function of ctrtest: its address range.
#[derive(Clone, Copy, Debug)]
struct Func {
    start: u64,
    end: u64,
}

impl Func {
    fn contains(self, a: u64) -> bool {
        (self.start..self.end).contains(&a)
    }
}

/// main, work and leaf from /usr/share/ctrtest.syms (`ADDRESS SIZE NAME`, hex).
fn symbols(out: &str) -> [Func; 3] {
    let text = section(out, "syms");
    let get = |name: &str| {
        let l = text
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(name))
            .unwrap_or_else(|| panic!("no {name} in ctrtest.syms:\n{text}"));
        let mut w = l.split_whitespace();
        let start = u64::from_str_radix(w.next().unwrap(), 16).unwrap();
        let size = u64::from_str_radix(w.next().unwrap(), 16).unwrap();
        Func {
            start,
            end: start + size,
        }
    };
    [get("main"), get("work"), get("leaf")]
}

/// A record line `SRC -> DST TYPE CYCLES`.
#[derive(Debug)]
struct Record {
    src: u64,
    dst: u64,
    kind: String,
}

/// The records and the `records N depth D` line of a ctrrec output.
fn records(text: &str) -> (Vec<Record>, u64, u64) {
    let mut recs = Vec::new();
    let mut summary = None;
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("records ") {
            let w: Vec<&str> = rest.split_whitespace().collect();
            assert!(w.len() == 3 && w[1] == "depth", "bad summary line {l:?}");
            summary = Some((w[0].parse().unwrap(), w[2].parse().unwrap()));
            continue;
        }
        let Some((src, rest)) = l.split_once(" -> ") else {
            continue;
        };
        let (dst, rest) = rest.split_once(' ').expect(l);
        let (kind, cycles) = rest.rsplit_once(' ').expect(l);
        assert!(
            cycles == "-" || cycles.parse::<u64>().is_ok(),
            "bad cycle count in {l:?}"
        );
        recs.push(Record {
            src: u64::from_str_radix(src, 16).expect(l),
            dst: u64::from_str_radix(dst, 16).expect(l),
            kind: kind.to_string(),
        });
    }
    let (n, depth) = summary.unwrap_or_else(|| panic!("no 'records N depth D' line:\n{text}"));
    assert_eq!(n, recs.len() as u64, "{text}");
    (recs, n, depth)
}

/// Checks that the records (oldest first) are ctrtest's loop and nothing else: every
/// transfer lies in main, work or leaf; main calls work at its first instruction, work calls
/// leaf at its first; each return goes to the instruction after its call (4-byte `jal`);
/// calls and returns come in the order call work, call leaf, return to work, return to main,
/// followed by main's loop branches, the same in every iteration (a lost record, or one of
/// another task, breaks the pattern). Returns the number of complete iterations.
fn check_loop(text: &str, syms: [Func; 3]) -> usize {
    let (recs, _, _) = records(text);
    let [main, work, leaf] = syms;
    #[derive(PartialEq, Clone, Copy, Debug)]
    enum K {
        CallWork,
        CallLeaf,
        RetLeaf,
        RetWork,
        Branch,
    }
    let kinds: Vec<K> = recs
        .iter()
        .map(|r| match r.kind.as_str() {
            "direct call" if main.contains(r.src) && r.dst == work.start => K::CallWork,
            "direct call" if work.contains(r.src) && r.dst == leaf.start => K::CallLeaf,
            "function return" if leaf.contains(r.src) && work.contains(r.dst) => K::RetLeaf,
            "function return" if work.contains(r.src) && main.contains(r.dst) => K::RetWork,
            "taken branch" if main.contains(r.src) && main.contains(r.dst) => K::Branch,
            _ => panic!(
                "record {:x} -> {:x} {} is not one of ctrtest's loop (main {main:x?}, \
                 work {work:x?}, leaf {leaf:x?}):\n{text}",
                r.src, r.dst, r.kind
            ),
        })
        .collect();
    let first = kinds
        .iter()
        .position(|&k| k == K::CallWork)
        .unwrap_or_else(|| panic!("no call of work:\n{text}"));
    let mut iterations = 0;
    let mut branches_per_iteration = None;
    let mut i = first;
    while i + 4 <= kinds.len() {
        assert_eq!(
            &kinds[i..i + 4],
            &[K::CallWork, K::CallLeaf, K::RetLeaf, K::RetWork],
            "record {i} on: not call work, call leaf, return, return:\n{text}"
        );
        assert_eq!(
            recs[i + 2].dst,
            recs[i + 1].src + 4,
            "leaf's return:\n{text}"
        );
        assert_eq!(recs[i + 3].dst, recs[i].src + 4, "work's return:\n{text}");
        let mut j = i + 4;
        while j < kinds.len() && kinds[j] == K::Branch {
            j += 1;
        }
        if j == kinds.len() {
            break;
        }
        assert_eq!(kinds[j], K::CallWork, "record {j}:\n{text}");
        let b = j - i - 4;
        assert_eq!(
            *branches_per_iteration.get_or_insert(b),
            b,
            "iterations with different numbers of loop branches (a lost record?):\n{text}"
        );
        iterations += 1;
        i = j;
    }
    iterations
}

/// `ctrrec` of ctrtest at the default depth (the smallest the VM has, 16) and at 64: the
/// buffer is full of the loop's calls and returns at the right addresses; with `-t` only
/// the types asked for; then the module unloads.
#[test]
fn ctrrec_records_ctrtest_calls_and_returns() {
    let out = boot(
        "echo '=== syms'\ncat /usr/share/ctrtest.syms\n\
         echo '=== d16'\nctrrec -- ctrtest 100\n\
         echo '=== d64'\nctrrec -d 64 -- ctrtest 100\n\
         echo '=== call'\nctrrec -t call -- ctrtest 100\n\
         echo '=== ret'\nctrrec -t return,ntbranch -- ctrtest 100\n\
         echo '=== bad'\nctrrec -t bogus -- ctrtest 1 2>&1\n\
         echo '=== rmmod'\nrmmod ctr_rec && echo unloaded\necho '=== end'\n",
        |_| {},
    );
    assert!(out.contains("VMM-MODULE-LOADED ctr_rec.ko"), "{out}");
    assert!(section(&out, "rmmod").contains("unloaded"), "{out}");
    let syms = symbols(&out);
    for (name, depth) in [("d16", 16), ("d64", 64)] {
        let text = section(&out, name);
        let (_, n, d) = records(text);
        assert_eq!((n, d), (depth, depth), "{text}");
        let iterations = check_loop(text, syms);
        // 6 records per iteration (2 loop branches: the loop and the `hop` test).
        assert!(iterations as u64 >= depth / 6 - 2, "{iterations}:\n{text}");
    }
    // Type filters (sctrctl inhibits and NTBREN): only calls; only returns, and the one
    // not-taken branch (the loop's exit; its target is the next instruction).
    let [main, work, leaf] = syms;
    let text = section(&out, "call");
    let (recs, n, _) = records(text);
    assert_eq!(n, 16, "{text}");
    assert!(
        recs.iter().all(|r| r.kind == "direct call"
            && (r.dst == work.start && main.contains(r.src)
                || r.dst == leaf.start && work.contains(r.src))),
        "{text}"
    );
    let text = section(&out, "ret");
    let (recs, n, _) = records(text);
    assert_eq!(n, 16, "{text}");
    let (last, rets) = recs.split_last().unwrap();
    assert!(
        rets.iter().all(|r| r.kind == "function return"
            && (leaf.contains(r.src) && work.contains(r.dst)
                || work.contains(r.src) && main.contains(r.dst))),
        "{text}"
    );
    assert!(
        last.kind == "not-taken branch" && main.contains(last.src) && last.dst == last.src + 4,
        "{text}"
    );
    assert!(
        section(&out, "bad").contains("ctrrec: transfer types 'bogus' refused"),
        "{out}"
    );
}

/// Two vCPUs: ctrtest moves itself to the other CPU in every iteration
/// (sched_setaffinity; its status is 0 only if every move succeeded) while another task
/// hashes busybox in a loop on both: the records are saved and restored on every switch, so
/// none is lost and none of the other task shows. Then `ctrrec --kernel` records S-mode on
/// CPU 1 for 50 ms.
#[test]
fn ctrrec_follows_the_task_across_cpus() {
    let out = boot(
        "echo '=== syms'\ncat /usr/share/ctrtest.syms\necho '=== cpus'\nnproc\n\
         (while :; do md5sum /bin/busybox >/dev/null; done) &\nb=$!\n\
         echo '=== hop'\nctrrec -d 64 -- ctrtest 1000 hop\necho status $?\n\
         echo '=== kernel'\nctrrec -d 32 --kernel -c 1 -m 50\nkill $b\necho '=== end'\n",
        |c| c.vcpus = 2,
    );
    assert_eq!(section(&out, "cpus").trim(), "2", "{out}");
    let syms = symbols(&out);
    let text = section(&out, "hop");
    assert!(
        text.contains("\nstatus 0"),
        "ctrtest could not move between CPUs:\n{text}"
    );
    let (_, n, d) = records(text);
    assert_eq!((n, d), (64, 64), "{text}");
    let iterations = check_loop(text, syms);
    assert!(iterations >= 64 / 6 - 2, "{iterations}:\n{text}");
    // S-mode on CPU 1 for 50 ms: a full buffer of kernel transfers (kernel and module
    // addresses have the top bit set), calls and returns among them.
    let text = section(&out, "kernel");
    let (recs, n, d) = records(text);
    assert_eq!((n, d), (32, 32), "{text}");
    assert!(
        recs.iter().all(|r| r.src >> 63 == 1 && r.dst >> 63 == 1),
        "a record outside the kernel:\n{text}"
    );
    for kind in ["function return", "call"] {
        assert!(
            recs.iter().any(|r| r.kind.ends_with(kind)),
            "no {kind}:\n{text}"
        );
    }
}

/// A host hart with depth 16 only (`--host-ctr-depths 16`): the VM's depth set is {16};
/// the module finds that through sctrdepth, refuses depth 32 and records 16. Also
/// LCOFIFRZ (`ctrrec -f`).
#[test]
fn host_with_depth_16_gives_depth_16() {
    let out = boot(
        "echo '=== syms'\ncat /usr/share/ctrtest.syms\n\
         echo '=== d32'\nctrrec -d 32 -- ctrtest 100 2>&1\necho status $?\n\
         echo '=== dmesg'\ndmesg | grep ctr_rec\n\
         echo '=== d16'\nctrrec -d 16 -- ctrtest 100\n\
         echo '=== frz'\nctrrec -f -- ctrtest 1000000 lcofi\necho status $?\n\
         echo '=== nofrz'\nctrrec -- ctrtest 1000000 lcofi\necho status $?\necho '=== end'\n",
        |c| c.host_ctr_depths = DepthSet::from_bits(1),
    );
    let d32 = section(&out, "d32");
    assert!(
        d32.contains("ctrrec: depth 32 refused") && d32.contains("\nstatus 1"),
        "{d32}"
    );
    assert!(
        section(&out, "dmesg").contains("ctr_rec: loaded: depths 0x1 "),
        "{out}"
    );
    let text = section(&out, "d16");
    let (_, n, d) = records(text);
    assert_eq!((n, d), (16, 16), "{text}");
    check_loop(text, symbols(&out));
    // ctrtest with a perf event sampling its instructions (counter-overflow interrupts,
    // LCOFI): with -f (LCOFIFRZ) the first one freezes the records in the loop, without it
    // they run on to the loop's end.
    for (name, frozen) in [("frz", true), ("nofrz", false)] {
        let text = section(&out, name);
        assert!(text.contains("\nstatus 0"), "{text}");
        assert_eq!(text.contains("\nfrozen\n"), frozen, "{text}");
        let (_, n, _) = records(text);
        assert_eq!(n, 16, "{text}");
        check_loop(text, symbols(&out));
    }
}

/// `--ctr off`: the device tree lists no ssctr, the module refuses to load with one kernel
/// line, ctrrec says the module is missing, the guest goes on and powers off cleanly.
#[test]
fn ctr_off_module_refuses_to_load() {
    let out = boot(
        "echo '=== rec'\nctrrec -- ctrtest 10 2>&1\necho status $?\n\
         echo '=== after'\nmd5sum /bin/busybox >/dev/null && echo guest goes on\necho '=== end'\n",
        |c| c.ctr = false,
    );
    // One line per load attempt, and nothing else from the module; busybox insmod makes
    // two attempts (finit_module, then init_module when that fails).
    let refusal = "] ctr_rec: not loaded: /cpus/cpu@0 riscv,isa-extensions lacks ssctr or \
                   sscsrind (no CTR)";
    let refusals = out.lines().filter(|l| l.ends_with(refusal)).count();
    let lines = out
        .lines()
        .filter(|l| l.starts_with('[') && l.contains("] ctr_rec: "))
        .count();
    assert!(
        (1..=2).contains(&refusals) && refusals == lines,
        "expected only the module's refusal line:\n{out}"
    );
    assert!(out.contains("VMM-MODULE-REFUSED ctr_rec.ko"), "{out}");
    let rec = section(&out, "rec");
    assert!(
        rec.contains("ctrrec: /proc/ctr_rec missing") && rec.contains("\nstatus 1"),
        "{rec}"
    );
    assert!(section(&out, "after").contains("guest goes on"), "{out}");
}

/// The CTR guest's configuration for the snapshot test (one vCPU).
fn snapshot_config(script: &str) -> RunConfig {
    let guest = linux_guest();
    let mut config = RunConfig::new(&guest.kernel);
    config.initrd = Some(guest.initrd_ctr.clone());
    config.cmdline = format!(
        "{BASE_CMDLINE} vmmcmd=\"echo {} | base64 -d | sh\"",
        base64(script.as_bytes())
    );
    config.memory_mib = MEMORY_MIB;
    config.timeout = Some(TIMEOUT);
    config
}

/// Snapshot of the Linux guest in the middle of a recording, restored on a host model with
/// depths 16, 32 and 64 only: the records read after the restore are exactly those of a run
/// straight through (the ones made before the snapshot plus what ran since, cycle counts
/// included: the runs are deterministic).
#[test]
fn recording_survives_snapshot_and_restore() {
    // ctrtest 30 000 000: about 330 million instructions of loop, near the end of the run.
    let script = "echo '=== rec'\nctrrec -- ctrtest 30000000\necho '=== end'\n";
    let mut config = snapshot_config(script);
    config.max_insns = Some(BUDGET);
    let (exit, stats, want) = linux_kit::boot(&config);
    assert!(exit.is_clean_shutdown(), "{exit:?}\n{want}");
    let want_rec = section(&want, "rec").to_string();
    records(&want_rec);
    // Cut 200 million instructions before the end: inside ctrtest's loop.
    let cut = stats.instructions - 200_000_000;
    let path = std::env::temp_dir().join(format!("vmm-linux-ctr-{}.snap", std::process::id()));
    let before = SharedBuf::default();
    let mut config = snapshot_config(script);
    config.max_insns = Some(cut);
    let mut vm = GuestVm::new(&config, Box::new(before.clone())).expect("vmm");
    let exit = vm.run().expect("vmm");
    assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");
    vm.write_snapshot(&path).expect("snapshot");
    let before = before.text().replace("\r\n", "\n");
    assert!(
        before.contains("\n=== rec\n") && !before.contains("records "),
        "the snapshot is not in the middle of the recording:\n{before}"
    );
    let after = SharedBuf::default();
    let options = RestoreConfig {
        host_ctr_depths: DepthSet::parse("16,32,64").unwrap(),
        max_insns: Some(BUDGET),
        timeout: Some(TIMEOUT),
        ..RestoreConfig::default()
    };
    let r = restore_and_run(&path, &options, Box::new(after.clone()), ConsoleInput::None);
    let _ = std::fs::remove_file(&path);
    let after = after.text().replace("\r\n", "\n");
    let (exit, _) = r.unwrap_or_else(|e| panic!("restore: {e}\n{after}"));
    assert!(exit.is_clean_shutdown(), "{exit:?}\n{after}");
    let all = format!("{before}{after}");
    assert_eq!(
        section(&all, "rec"),
        want_rec,
        "records after the restore differ"
    );
}
