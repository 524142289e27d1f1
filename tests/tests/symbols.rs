//! `--symbols FILE`: `vmm ctl ctr-dump --symbols` names the records' addresses
//! `function+0xoff`, `--trace-exits` with `--symbols` follows each pc with
//! `<function+0xoff>`, and bad symbol files are refused naming the file.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use vmm_tests::{guest, vmm_command};

fn temp(name: &str) -> std::path::PathBuf {
    test_support::temp_path("vmm-symbols-test", name)
}

/// `vmm ctl --api-sock SOCK ARGS...`: its status and stdout.
fn ctl(sock: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = vmm_command()
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
    let mut run = vmm_command()
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
        let mut cmd = vmm_command();
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

/// gdb (`GDB` or `gdb-multiarch`) in batch mode against `vmm machine --gdb-wait ARGS
/// bench_ctr_on`: a breakpoint on `fib`, then `monitor ctr`; gdb's output.
fn monitor_ctr_at_fib(tag: &str, args: &[&str]) -> String {
    let gdb = std::env::var("GDB").unwrap_or_else(|_| "gdb-multiarch".into());
    let elf = guest("bench_ctr_on");
    let sock = temp(&format!("{tag}.gdb"));
    let _ = std::fs::remove_file(&sock);
    let mut vmm = vmm_command()
        .args(["machine", "--timeout", "60", "--gdb"])
        .arg(format!("unix:{}", sock.display()))
        .arg("--gdb-wait")
        .args(args)
        .arg(&elf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sock.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut child = Command::new(&gdb)
        .args(["-batch", "-nx", "-ex", "set architecture riscv:rv64"])
        .args(["-ex", "set confirm off"])
        .args(["-ex", &format!("target remote {}", sock.display())])
        .args(["-ex", "break fib", "-ex", "continue", "-ex", "monitor ctr"])
        .args(["-ex", "kill"])
        .arg(&elf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            let _ = vmm.kill();
            panic!("{gdb} does not start ({e}): apt-get install gdb-multiarch, or set GDB")
        });
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let _ = vmm.kill();
    let _ = vmm.wait();
    let _ = std::fs::remove_file(&sock);
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn monitor_ctr_names_functions_from_the_program_or_symbols_file() {
    // By default, the program's own symbol table.
    let own = monitor_ctr_at_fib("own", &[]);
    assert!(own.contains("CTR: depth 16, WRPTR 1"), "{own}");
    assert!(
        own.contains("main+0x") && own.contains(" -> fib indirect call"),
        "{own}"
    );
    // --symbols wins: a System.map made from the program, fib renamed.
    use object::{Object, ObjectSymbol, SymbolKind};
    let data = std::fs::read(guest("bench_ctr_on")).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let mut map = String::new();
    for s in file.symbols().filter(|s| s.kind() == SymbolKind::Text) {
        let name = match s.name().unwrap() {
            "fib" => "fib_from_the_map",
            n => n,
        };
        map += &format!("{:016x} T {name}\n", s.address());
    }
    let path = temp("bench_ctr_on.map");
    std::fs::write(&path, map).unwrap();
    let named = monitor_ctr_at_fib("map", &["--symbols", path.to_str().unwrap()]);
    assert!(
        named.contains(" -> fib_from_the_map indirect call"),
        "{named}"
    );
    let _ = std::fs::remove_file(&path);
}
