//! `--symbols FILE`: `vmm ctl ctr-dump --symbols` names the records' addresses
//! `function+0xoff`, `--trace-exits` with `--symbols` follows each pc with
//! `<function+0xoff>`, and bad symbol files are refused naming the file.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use vmm_tests::{guest, vmm_binary};

fn temp(name: &str) -> std::path::PathBuf {
    test_support::temp_path("vmm-symbols-test", name)
}

/// `vmm ctl --api-sock SOCK ARGS...`: its status and stdout.
fn ctl(sock: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(vmm_binary())
        .args(["ctl", "--api-sock"])
        .arg(sock)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ctr_dump_and_exit_trace_name_guest_functions() {
    let sock = temp("sock");
    let elf = guest("sbi_ctr_spin");
    let elf_arg = elf.to_str().unwrap();
    let mut run = Command::new(vmm_binary())
        .args([
            "run",
            "--memory",
            "16",
            "--max-insns",
            "4000000000",
            "--timeout",
            "60",
            "--trace-exits",
            "--symbols",
            elf_arg,
            "--kernel",
            elf_arg,
            "--api-sock",
        ])
        .arg(&sock)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the guest to start recording.
    let mut stdout = BufReader::new(run.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("sbi_ctr_spin: recording") {
        line.clear();
        if stdout.read_line(&mut line).unwrap() == 0 {
            let _ = run.kill();
            panic!("the guest ended before recording");
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    let (ok, said, err) = ctl(&sock, &["pause"]);
    assert!(ok, "{said} {err}");

    // Without --symbols: addresses in hex, as ever.
    let (ok, plain, err) = ctl(&sock, &["ctr-dump"]);
    assert!(ok, "{err}");
    assert!(plain.contains(" -> 0x"), "{plain}");
    assert!(!plain.contains("spin_forever"), "{plain}");
    // With them: the records' calls and returns are in spin_forever (an assembly label,
    // STT_NOTYPE in .text), named with their offsets.
    let (ok, named, err) = ctl(&sock, &["ctr-dump", "--symbols", elf_arg]);
    assert!(ok, "{err}");
    assert_eq!(
        named.lines().next(),
        plain.lines().next(),
        "the same header"
    );
    let records: Vec<&str> = named.lines().skip(1).collect();
    assert!(!records.is_empty(), "{named}");
    assert!(
        named.contains("spin_forever+0x14 -> spin_forever+0x4"),
        "{named}"
    );
    for r in &records {
        assert!(r.starts_with("spin_forever"), "{r}\n{named}");
        assert!(r.contains(" -> spin_forever"), "{r}\n{named}");
    }
    // --json keeps the addresses and adds the names.
    let (ok, json, err) = ctl(&sock, &["--json", "ctr-dump", "--symbols", elf_arg]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let r0 = &v["records"][0];
    assert!(r0["source"].as_str().unwrap().starts_with("0x"), "{v}");
    assert!(
        r0["source_symbol"]
            .as_str()
            .unwrap()
            .starts_with("spin_forever"),
        "{v}"
    );
    // A bad symbol file: nothing is sent, the file is named.
    let bad = temp("bad.map");
    std::fs::write(&bad, "this is no symbol file\n").unwrap();
    let (ok, _, err) = ctl(&sock, &["ctr-dump", "--symbols", bad.to_str().unwrap()]);
    assert!(!ok, "{err}");
    assert!(
        err.contains(&format!("symbol file {}", bad.display())) && err.contains("no text symbol"),
        "{err}"
    );
    let (ok, said, err) = ctl(&sock, &["quit"]);
    assert!(ok, "{said} {err}");

    // The exit trace: the guest's CTR CSR writes in main, named.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = run.try_wait().unwrap() {
            break s.code();
        }
        if Instant::now() > deadline {
            let _ = run.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut trace = String::new();
    run.stderr
        .take()
        .unwrap()
        .read_to_string(&mut trace)
        .unwrap();
    assert_eq!(status, Some(0), "{trace}");
    let exits: Vec<&str> = trace.lines().filter(|l| l.starts_with("exit ")).collect();
    assert!(
        exits
            .iter()
            .any(|l| l.contains(" <main+0x") && l.contains("virtual-insn")),
        "{trace}"
    );
    for l in &exits {
        // `pc 0x... <name+0xoff> VS ...` or, where no symbol covers the pc, `pc 0x... VS`.
        let after = &l[l.find(" pc 0x").unwrap() + 6..];
        let rest = after.split_once(' ').unwrap().1;
        assert!(
            rest.starts_with('<') || rest.starts_with("VS") || rest.starts_with("VU"),
            "{l}"
        );
    }
    let _ = std::fs::remove_file(&bad);
}

#[test]
fn bad_symbol_files_are_refused_before_the_guest_runs() {
    let missing = temp("missing.map");
    let garbage = temp("garbage.elf");
    let mut bytes = b"\x7fELF\x02\x01\x01".to_vec();
    bytes.resize(200, 0xff);
    std::fs::write(&garbage, &bytes).unwrap();
    for (sub, file, says) in [
        ("run", &missing, "No such file"),
        ("run", &garbage, "a bad ELF file"),
        ("machine", &garbage, "a bad ELF file"),
    ] {
        let mut cmd = Command::new(vmm_binary());
        cmd.args([sub, "--max-insns", "1000", "--symbols"])
            .arg(file);
        if sub == "machine" {
            cmd.arg(guest("hello"));
        }
        let out = cmd.stdin(Stdio::null()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{sub}: {err}");
        assert!(
            err.contains(&format!("symbol file {}: ", file.display())) && err.contains(says),
            "{sub}: {err}"
        );
        assert!(out.stdout.is_empty(), "{sub}: the guest ran");
    }
    let _ = std::fs::remove_file(&garbage);
}
