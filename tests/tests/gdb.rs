//! The gdb remote stubs of `vmm machine` and `vmm run` (`--gdb`, `docs/gdb.md`), driven by
//! `gdb-multiarch` in batch mode and by a raw protocol client: breakpoints on symbols,
//! registers and CSRs, single steps (the same with and without block translation), `monitor
//! ctr`, detaching and running on to the guest's normal end, attaching later to a running
//! guest, Ctrl-C, and clients that send garbage; for `vmm run`: vCPUs as threads, hardware
//! breakpoints and watchpoints, memory through the guest's page tables, `monitor exits` and
//! `monitor snapshot`.
//!
//! Every process runs with a time limit. Without `gdb-multiarch` the tests fail naming the
//! Debian package (`GDB` selects another gdb with RISC-V support).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use vmm_tests::{guest, vmm_command};

/// Every process is killed after this long.
const LIMIT: Duration = Duration::from_secs(120);

/// The gdb to use: `GDB` or `gdb-multiarch`, checked to run.
fn gdb() -> String {
    let gdb = std::env::var("GDB").unwrap_or_else(|_| "gdb-multiarch".into());
    let ok = Command::new(&gdb)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{gdb} is missing: the gdb stub tests need it (Debian package gdb-multiarch: \
         apt-get install gdb-multiarch; or set GDB to a gdb with RISC-V support)"
    );
    gdb
}

/// A `vmm machine` process; its stderr is collected line by line.
struct Vmm {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: String,
}

impl Vmm {
    fn start(elf: &Path, args: &[&str]) -> Vmm {
        let mut all = vec!["machine"];
        all.extend_from_slice(args);
        all.push(elf.to_str().expect("a UTF-8 path"));
        Vmm::spawn(&all)
    }

    /// `vmm run --kernel ELF ARGS` (a VS-mode guest).
    fn start_run(elf: &Path, args: &[&str]) -> Vmm {
        let mut all = vec!["run", "--kernel", elf.to_str().expect("a UTF-8 path")];
        all.extend_from_slice(args);
        Vmm::spawn(&all)
    }

    fn spawn(args: &[&str]) -> Vmm {
        let mut child = vmm_command()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("vmm starts");
        let (tx, lines) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Vmm {
            child,
            lines,
            stderr: String::new(),
        }
    }

    /// Waits for a stderr line containing `what` (10 s) and returns it.
    fn wait_line(&mut self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.stderr += &line;
                    self.stderr.push('\n');
                    if line.contains(what) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        panic!("vmm never said {what:?}; stderr:\n{}", self.stderr)
    }

    /// The TCP port of `--gdb tcp:127.0.0.1:0`, from the stub's first line.
    fn tcp_port(&mut self) -> u16 {
        let line = self.wait_line("gdb stub listening on");
        line.split("tcp:127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"))
    }

    /// Waits for the process to end (killing it after [`LIMIT`]): exit status, stdout,
    /// stderr.
    fn finish(mut self) -> (Option<i32>, String, String) {
        let deadline = Instant::now() + LIMIT;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut out = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.stderr += &line;
            self.stderr.push('\n');
        }
        (status, out, std::mem::take(&mut self.stderr))
    }
}

impl Drop for Vmm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A socket path for `--gdb unix:PATH`.
fn socket(name: &str) -> PathBuf {
    let p = test_support::temp_path("vmm-gdb-test", name);
    let _ = std::fs::remove_file(&p);
    p
}

/// Runs gdb in batch mode on `elf` against `target` with `commands`; its whole output.
fn run_gdb(elf: &Path, target: &str, commands: &[&str]) -> String {
    let mut cmd = Command::new(gdb());
    cmd.args(["-batch", "-nx", "-ex", "set architecture riscv:rv64"])
        .args(["-ex", "set confirm off"])
        .args(["-ex", &format!("target remote {target}")]);
    for c in commands {
        cmd.args(["-ex", c]);
    }
    let mut child = cmd
        .arg(elf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gdb starts");
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + LIMIT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("gdb did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    out_t.join().unwrap() + &err_t.join().unwrap()
}

/// Waits for the UNIX socket at `path` to appear (10 s).
fn wait_socket(vmm: &mut Vmm, path: &Path) {
    vmm.wait_line("gdb stub listening on");
    assert!(path.exists(), "no socket at {}", path.display());
}

/// The address of symbol `name` in `elf`.
fn symbol(elf: &Path, name: &str) -> u64 {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(elf).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .map(|s| s.address())
        .unwrap_or_else(|| panic!("no symbol {name} in {}", elf.display()))
}

/// The guest's output and exit status without a debugger.
fn plain_run(elf: &Path) -> (Option<i32>, String) {
    let (status, out, _) = Vmm::start(elf, &[]).finish();
    (status, out)
}

#[test]
fn breakpoint_registers_csrs_step_ctr_then_the_guest_runs_to_its_end() {
    let elf = guest("bench_ctr_on");
    let fib = symbol(&elf, "fib");
    let sock = socket("bp");
    let mut vmm = Vmm::start(
        &elf,
        &["--gdb", &format!("unix:{}", sock.display()), "--gdb-wait"],
    );
    wait_socket(&mut vmm, &sock);
    let out = run_gdb(
        &elf,
        &sock.display().to_string(),
        &[
            "break fib",
            "continue",
            "info registers pc",
            "info registers mstatus",
            "p/x $mctrctl",
            "p/x $sctrctl",
            "p/x $sctrdepth",
            "info registers priv",
            "p $virt",
            "p/x $mhartid",
            // A stop changes nothing the guest sees: its counters and time stand still.
            "p/x $mcycle",
            "p/x $minstret",
            "p/x $time",
            "shell sleep 0.5",
            "p/x $mcycle",
            "p/x $minstret",
            "p/x $time",
            "stepi",
            "info registers pc",
            "monitor ctr",
            "monitor help",
            "delete",
            "continue",
        ],
    );
    let (status, stdout, stderr) = vmm.finish();
    assert!(out.contains("Breakpoint 1, fib"), "{out}");
    assert!(out.contains(&format!("pc             {fib:#x}")), "{out}");
    assert!(out.contains("mstatus        0x"), "{out}");
    // mctrctl.M (bit 2), as the guest set it; sctrctl reads its S-mode view (0 here).
    assert!(out.contains("$1 = 0x4\n"), "{out}");
    assert!(out.contains("$2 = 0x0\n"), "{out}");
    assert!(out.contains("$3 = 0x0\n"), "{out}");
    assert!(out.contains("prv:3 [Machine]"), "{out}");
    assert!(out.contains("$4 = 0\n"), "{out}");
    assert!(out.contains("$5 = 0x0\n"), "{out}");
    for (before, after) in [(6, 9), (7, 10), (8, 11)] {
        assert_eq!(gdb_value(&out, before), gdb_value(&out, after), "{out}");
    }
    assert_ne!(gdb_value(&out, 7), "0x0", "{out}");
    // One instruction further (fib's first is compressed or not: either way past fib).
    let after = out
        .lines()
        .filter(|l| l.starts_with("pc  "))
        .nth(1)
        .unwrap_or_else(|| panic!("{out}"));
    assert!(after.contains("<fib+"), "{after}\n{out}");
    // The call into fib is CTR's youngest (the only) record since mctrctl was written,
    // named with the program's own symbols (no --symbols: its symbol table).
    assert!(out.contains("CTR: depth 16, WRPTR 1"), "{out}");
    assert!(out.contains("-> fib ") && out.contains("call"), "{out}");
    assert!(out.contains("monitor ctr"), "{out}");
    assert!(out.contains("exited normally"), "{out}");
    // The guest printed exactly what it prints without a debugger.
    let (plain_status, plain_out) = plain_run(&elf);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(plain_status, Some(0));
    assert_eq!(stdout, plain_out, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// What gdb shows after 300 single steps from `fib`'s first call.
fn steps_from_fib(jit: &str) -> String {
    let elf = guest("bench_ctr_on");
    let sock = socket(&format!("step-{jit}"));
    let mut vmm = Vmm::start(
        &elf,
        &[
            "--jit",
            jit,
            "--gdb",
            &format!("unix:{}", sock.display()),
            "--gdb-wait",
        ],
    );
    wait_socket(&mut vmm, &sock);
    let out = run_gdb(
        &elf,
        &sock.display().to_string(),
        &[
            "break fib",
            "continue",
            "delete",
            "stepi 300",
            "info registers pc ra sp a0 a1 s0 s1",
            "p/x $minstret",
            "p/x $mcycle",
            "p/x $time",
            "monitor ctr",
            "monitor insns",
            "kill",
        ],
    );
    let (status, _, stderr) = vmm.finish();
    assert_eq!(status, Some(1), "kill ends the run as an error: {stderr}");
    assert!(stderr.contains("the debugger killed the guest"), "{stderr}");
    // From the first register line on: the states to compare.
    let start = out.find("pc  ").unwrap_or_else(|| panic!("{out}"));
    out[start..].to_string()
}

#[test]
fn single_steps_are_the_same_with_and_without_block_translation() {
    let on = steps_from_fib("on");
    let off = steps_from_fib("off");
    assert_eq!(on, off);
    assert!(on.contains("$1 = 0x"), "{on}");
    assert!(
        on.lines().filter(|l| l.contains(" -> ")).count() > 10,
        "{on}"
    );
}

#[test]
fn a_debugger_attaches_to_a_running_guest_and_detaches() {
    let elf = guest("spin");
    let sock = socket("attach");
    let mut vmm = Vmm::start(
        &elf,
        &[
            "--timeout",
            "60",
            "--gdb",
            &format!("unix:{}", sock.display()),
        ],
    );
    wait_socket(&mut vmm, &sock);
    // Running before anyone attaches.
    std::thread::sleep(Duration::from_millis(300));
    let out = run_gdb(
        &elf,
        &sock.display().to_string(),
        &["monitor insns", "info registers priv", "detach"],
    );
    assert!(out.contains("prv:3 [Machine]"), "{out}");
    let insns: u64 = out
        .lines()
        .find_map(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(insns > 1_000_000, "{out}");
    // Still running after the detach; a second debugger may come.
    std::thread::sleep(Duration::from_millis(200));
    assert!(vmm.child.try_wait().unwrap().is_none());
    let out = run_gdb(&elf, &sock.display().to_string(), &["kill"]);
    let (status, stdout, stderr) = vmm.finish();
    assert_eq!(status, Some(1), "{out}\n{stderr}");
    assert!(stdout.contains("spin: looping forever"), "{stdout}");
    assert_eq!(stderr.matches("debugger attached").count(), 2, "{stderr}");
}

/// A raw remote-protocol client.
struct Raw {
    s: TcpStream,
}

impl Raw {
    fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw { s }
    }

    fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.s.write_all(bytes)
    }

    fn packet(body: &str) -> Vec<u8> {
        let sum = body.bytes().fold(0u8, |a, b| a.wrapping_add(b));
        format!("${body}#{sum:02x}").into_bytes()
    }

    /// Sends `body` and returns the reply packet's body (acks skipped and answered), or
    /// `None` when the stub closed the connection.
    fn ask(&mut self, body: &str) -> Option<String> {
        self.send_raw(&Self::packet(body)).ok()?;
        self.try_reply()
    }

    /// Whether the stub closes the connection (within 10 s), whatever it sends first.
    fn closed(&mut self) -> bool {
        let mut buf = [0u8; 256];
        loop {
            match self.s.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }

    /// The next reply packet, console output packets (`O` and hex, from `qRcmd`) skipped.
    fn try_reply(&mut self) -> Option<String> {
        loop {
            let p = self.try_packet()?;
            // Console output is hex, run-length encoded like any reply: never "OK".
            let console = p.starts_with('O') && p != "OK";
            if !console {
                return Some(p);
            }
        }
    }

    fn try_packet(&mut self) -> Option<String> {
        let mut byte = [0u8];
        loop {
            self.s.read_exact(&mut byte).ok()?;
            if byte[0] == b'$' {
                break;
            }
        }
        let mut body: Vec<u8> = Vec::new();
        loop {
            self.s.read_exact(&mut byte).ok()?;
            match byte[0] {
                b'#' => break,
                // Run-length encoding: the previous character n - 29 more times.
                b'*' => {
                    self.s.read_exact(&mut byte).ok()?;
                    let prev = *body.last()?;
                    let n = usize::from(byte[0].checked_sub(29)?);
                    body.extend(std::iter::repeat_n(prev, n));
                }
                b => body.push(b),
            }
        }
        let mut sum = [0u8; 2];
        self.s.read_exact(&mut sum).ok()?;
        let _ = self.send_raw(b"+");
        Some(String::from_utf8_lossy(&body).into_owned())
    }

    fn reply(&mut self) -> String {
        self.try_reply().expect("a reply")
    }
}

#[test]
fn hostile_clients_get_errors_and_the_guest_runs_on() {
    let elf = guest("spin");
    let vmm = Vmm::start(
        &elf,
        &["--timeout", "60", "--gdb", "tcp:127.0.0.1:0", "--gdb-wait"],
    );
    hostile_clients(vmm, "spin: looping forever");
}

/// The same for `vmm run` with two vCPUs.
#[test]
fn hostile_clients_of_a_run_stub_get_errors_and_the_guest_runs_on() {
    let elf = guest("sbi_ctr_spin");
    let vmm = Vmm::start_run(
        &elf,
        &[
            "--vcpus",
            "2",
            "--timeout",
            "60",
            "--gdb",
            "tcp:127.0.0.1:0",
            "--gdb-wait",
        ],
    );
    hostile_clients(vmm, "sbi_ctr_spin: recording");
}

/// Hostile clients of the stub `vmm` serves; the guest prints `stdout_has` meanwhile.
fn hostile_clients(mut vmm: Vmm, stdout_has: &str) {
    let port = vmm.tcp_port();

    // Garbage that is not a packet and a packet with a bad checksum end the session (the
    // client is disconnected); the guest runs on and the stub takes the next client.
    let mut c = Raw::connect(port);
    let mut junk: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 13) as u8).collect();
    junk.retain(|&b| b != b'$' && b != 0x03);
    let _ = c.send_raw(&junk);
    assert!(c.closed(), "garbage did not end the session");
    let mut c = Raw::connect(port);
    let _ = c.send_raw(b"$g#00");
    assert!(c.closed(), "a bad checksum did not end the session");

    // Well-formed packets with bad values: an error or an empty (unsupported) reply, or,
    // for what the protocol layer cannot parse, the end of the session.
    let mut c = Raw::connect(port);
    let why = c.ask("?").unwrap();
    assert!(why.starts_with('S') || why.starts_with('T'), "{why:?}");
    for bad in [
        "p99999999999999999999999",
        "pffffffff",
        "p1043",
        "Pffffffff=0000000000000000",
        "P20=00",
        "P1042=0300000000000000",
        "m0,ffffffffffffffff",
        "mffffffffffffffff,8",
        "m80000000,ffffffff",
        "m80000000,10000",
        "m0,8",
        "M80000000,4:zz",
        "M80000000,ffffffff:00",
        "Z0,zz,4",
        "z9,80000000,4",
        "Z2,80000000,4",
        "qXfer:features:read:other.xml:0,fff",
        "qXfer:features:read:target.xml:ffffffffffffffff,fff",
        "qRcmd,zz",
        "qRcmd,",
        "vNotAThing",
    ] {
        if c.ask(bad).is_none() {
            std::thread::sleep(Duration::from_millis(100));
            c = Raw::connect(port);
        }
    }
    // Still answering: pc reads, memory at the entry point reads, a CSR reads, a memory
    // read past the cap and outside RAM are errors, priv cannot be written.
    let ask = |c: &mut Raw, q: &str| c.ask(q).unwrap_or_else(|| panic!("no answer to {q}"));
    assert_eq!(ask(&mut c, "p20").len(), 16);
    assert_eq!(ask(&mut c, "m80000000,4").len(), 8);
    assert!(ask(&mut c, "m0,8").starts_with('E'));
    assert!(ask(&mut c, "m80000000,ffffffff").starts_with('E'));
    assert_eq!(ask(&mut c, &format!("p{:x}", 65 + 0x300)).len(), 16);
    assert!(ask(&mut c, "P1041=0000000000000000").starts_with('E'));
    assert_eq!(ask(&mut c, "p1043"), "");

    // Continue, then Ctrl-C stops the guest.
    c.send_raw(&Raw::packet("c")).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    c.send_raw(&[0x03]).unwrap();
    let stop = c.reply();
    assert!(
        stop.starts_with("T02") || stop.starts_with("S02"),
        "{stop:?}"
    );

    // A packet larger than the stub takes ends the session; the guest runs on.
    let big = "X80000000,10000:".to_string() + &"a".repeat(0x20000);
    let _ = c.send_raw(&Raw::packet(&big));
    drop(c);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        vmm.child.try_wait().unwrap().is_none(),
        "the VMM ended: {}",
        vmm.stderr
    );

    // Another client connects and finds a working stub.
    let mut c = Raw::connect(port);
    let pc = c.ask("p20").unwrap();
    assert_eq!(pc.len(), 16, "{pc:?}");
    let _ = c.send_raw(&Raw::packet("k"));
    drop(c);
    let (status, stdout, stderr) = vmm.finish();
    assert_eq!(status, Some(1), "{stderr}");
    assert!(stdout.contains(stdout_has), "{stdout}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `vmm run --kernel ELF ARGS` with a stub at a fresh UNIX socket named `name`, holding the
/// guest before its first instruction (`--gdb-wait`), and a 60 s limit; the socket.
fn start_run_stub(elf: &Path, name: &str, args: &[&str]) -> (Vmm, PathBuf) {
    let sock = socket(name);
    let gdb = format!("unix:{}", sock.display());
    let mut all = args.to_vec();
    all.extend(["--timeout", "60", "--gdb", &gdb, "--gdb-wait"]);
    let mut vmm = Vmm::start_run(elf, &all);
    wait_socket(&mut vmm, &sock);
    (vmm, sock)
}

/// The address of the instruction in the guest's disassembly (`ELF.dis`) at or after `from`
/// whose line contains `what`, or of the one after it (`next`).
fn dis_addr(elf: &Path, from: &str, what: &str, next: bool) -> u64 {
    let dis = std::fs::read_to_string(elf.with_extension("dis")).unwrap();
    let body = &dis[dis.find(from).unwrap_or_else(|| panic!("no {from}"))..];
    let mut lines = body.lines().skip_while(|l| !l.contains(what));
    if next {
        lines.next().unwrap_or_else(|| panic!("no {what}"));
    }
    lines
        .next()
        .and_then(|l| u64::from_str_radix(l.trim().split(':').next()?, 16).ok())
        .unwrap_or_else(|| panic!("no instruction at {what} in {from}"))
}

/// The value gdb printed as `$n` in `out`.
fn gdb_value(out: &str, n: u32) -> String {
    let tag = format!("${n} = ");
    out.lines()
        .find_map(|l| l.strip_prefix(&tag))
        .unwrap_or_else(|| panic!("no {tag}: {out}"))
        .to_string()
}

/// `vmm run` with two vCPUs: each is a gdb thread; a breakpoint stops the vCPU that reaches
/// it (and the other), VS-mode and the CTR CSRs read by name, a write watchpoint stops
/// the writer before its store with the old and new values, a read watchpoint and a
/// hardware breakpoint stop the reader, `monitor ctr`, `monitor exits` and `monitor
/// snapshot` answer, and after the debugger detaches the guest ends as it does without one
/// (and so does its snapshot, restored).
#[test]
fn run_vcpus_are_threads_with_breakpoints_watchpoints_and_snapshots() {
    let elf = guest("sbi_ctr_smp");
    let snap = test_support::temp_path("vmm-gdb-test", "run-smp.snap");
    let _ = std::fs::remove_file(&snap);
    let (vmm, sock) = start_run_stub(&elf, "run-smp", &["--vcpus", "2"]);
    let snapshot_cmd = format!("monitor snapshot {}", snap.display());
    let out = run_gdb(
        &elf,
        &sock.display().to_string(),
        &[
            "info threads",
            "break secondary_main",
            "continue",
            "info threads",
            "info registers priv",
            "p $virt",
            "p $a0",
            "p/x $vsctrctl",
            "p/x $hstatus",
            "delete",
            "watch done1",
            "continue",
            "p done1",
            "delete",
            "rwatch done1",
            "continue",
            "delete",
            "hbreak check",
            "continue",
            "monitor ctr 1",
            "monitor exits",
            "monitor insns",
            &snapshot_cmd,
            "delete",
            "detach",
        ],
    );
    let (status, stdout, stderr) = vmm.finish();
    // Two threads, the second waiting (HSM STOPPED) at pc 0.
    assert!(
        out.contains("Thread 1.1") && out.contains("Thread 1.2"),
        "{out}"
    );
    assert!(
        out.contains("Thread 2 hit Breakpoint 1, secondary_main (hartid=1)"),
        "{out}"
    );
    // VS-mode: priv S, virt 1, a0 the hart id.
    assert!(out.contains("prv:1 [Supervisor]"), "{out}");
    assert!(out.contains("$1 = 1\n"), "{out}");
    assert!(out.contains("$2 = 1\n"), "{out}");
    assert!(out.contains("$3 = 0x"), "{out}");
    assert!(out.contains("$4 = 0x"), "{out}");
    assert!(
        out.contains("Thread 2 hit Hardware watchpoint 2: done1"),
        "{out}"
    );
    assert!(out.contains("Old value = 0\nNew value = 1"), "{out}");
    assert!(out.contains("$5 = 1\n"), "{out}");
    assert!(
        out.contains("Thread 1 hit Hardware read watchpoint 3: done1"),
        "{out}"
    );
    assert!(out.contains("hit Breakpoint 4, check ("), "{out}");
    assert!(out.contains("vCPU 1:\nCTR: depth"), "{out}");
    // Named with the kernel ELF's own symbols (no --symbols given).
    assert!(out.contains("record+0x"), "{out}");
    assert!(out.contains("sbi HSM"), "{out}");
    assert!(
        out.contains("vCPU 0: ") && out.contains("vCPU 1: "),
        "{out}"
    );
    assert!(out.contains("snapshot written to"), "{out}");
    assert!(stdout.contains("sbi_ctr_smp: PASS"), "{stdout}\n{stderr}");
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("debugger detached"), "{stderr}");
    // The snapshot taken at the hardware breakpoint runs on to the same end.
    let restored = vmm_command()
        .args(["restore", "--timeout", "60", "--snapshot"])
        .arg(&snap)
        .output()
        .unwrap();
    let restored_out = String::from_utf8_lossy(&restored.stdout);
    assert!(restored.status.success(), "{restored_out}");
    assert!(restored_out.contains("sbi_ctr_smp: PASS"), "{restored_out}");
    let _ = std::fs::remove_file(&snap);
}

/// Memory through the vCPU's own page tables: the guest maps VA 0x4000_0000 onto a page of
/// its (Sv39 in VS-mode, `vsatp`); stopped right after it turns translation on, gdb reads
/// that page's value there, and with `monitor phys on` the same address is physical (no
/// RAM). `kill` ends the run with status 1.
#[test]
fn run_memory_follows_the_guests_page_tables() {
    let elf = guest("sbi_console");
    // The instruction after the first `csrw satp` (rfence_self_check's, inlined in main).
    let after = dis_addr(&elf, "<main>:", "csrw\tsatp", true);
    let (vmm, sock) = start_run_stub(&elf, "run-vm", &[]);
    let out = run_gdb(
        &elf,
        &sock.display().to_string(),
        &[
            &format!("break *{after:#x}"),
            "continue",
            "p/x (unsigned long)$vsatp >> 60",
            "x/gx 0x40000000",
            "p/x *(unsigned long *)&page_a",
            "monitor phys on",
            "x/gx 0x40000000",
            "monitor phys off",
            "kill",
        ],
    );
    let (status, _, stderr) = vmm.finish();
    assert!(out.contains("$1 = 0x8\n"), "{out}");
    assert!(out.contains("0x40000000:\t0x000000000000aaaa"), "{out}");
    assert!(out.contains("$2 = 0xaaaa"), "{out}");
    assert!(
        out.contains("Cannot access memory at address 0x40000000"),
        "{out}"
    );
    assert_eq!(status, Some(1), "{stderr}");
    assert!(stderr.contains("the debugger killed the guest"), "{stderr}");
}

/// Exact single steps cross privilege modes: `monitor stepi` from VS-mode through
/// `run_in_vu`'s `sret` into VU-mode (priv U, virt 1, at the guest's `vsepc`), and on
/// through VU-mode's ECALL back into VS-mode. (gdb's own `stepi` on RISC-V puts a breakpoint after the instruction and runs to
/// it, so it cannot follow an `sret`.)
#[test]
fn run_steps_from_vs_into_vu_mode() {
    let elf = guest("sbi_ctr");
    let sret = dis_addr(&elf, "<run_in_vu>:", "\tsret", false);
    let (vmm, sock) = start_run_stub(&elf, "run-vu", &[]);
    let out = run_gdb(
        &elf,
        &sock.display().to_string(),
        &[
            &format!("break *{sret:#x}"),
            "continue",
            "info registers priv",
            "p $virt",
            "p/x $vsepc",
            "delete",
            "monitor stepi",
            "maintenance flush register-cache",
            "info registers priv",
            "p $virt",
            "p/x $pc",
            "monitor stepi 2",
            "maintenance flush register-cache",
            "info registers priv",
            "monitor stepi 0",
            "detach",
        ],
    );
    let (status, stdout, stderr) = vmm.finish();
    let privs: Vec<&str> = out.lines().filter(|l| l.starts_with("priv ")).collect();
    assert_eq!(privs.len(), 3, "{out}");
    assert!(privs[0].contains("prv:1 [Supervisor]"), "{out}");
    assert!(privs[1].contains("prv:0 [User/Application]"), "{out}");
    // Two more: the VU function's instruction and its trap (ECALL) back into VS-mode.
    assert!(privs[2].contains("prv:1 [Supervisor]"), "{out}");
    assert!(
        out.contains("$1 = 1\n") && out.contains("$3 = 1\n"),
        "{out}"
    );
    assert!(
        out.contains("vCPU 0: pc=0x") && out.contains(" VU\n"),
        "{out}"
    );
    assert!(out.contains(" VS\n"), "{out}");
    assert!(out.contains("monitor stepi N: N is 1 to"), "{out}");
    // The step lands where vsepc said.
    assert_eq!(gdb_value(&out, 2), gdb_value(&out, 4), "{out}");
    assert_eq!(status, Some(0), "{stdout}\n{stderr}");
}

/// The lines of `out` that are a bare number (what `monitor insns` prints on `vmm machine`).
fn numbers(out: &str) -> Vec<u64> {
    out.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Where `vmm machine --jit off --max-insns N` (no debugger) stops: its pc.
fn pc_after(elf: &Path, insns: u64) -> String {
    let max = insns.to_string();
    let (_, _, stderr) = Vmm::start(elf, &["--jit", "off", "--max-insns", &max]).finish();
    let tail = stderr
        .split("exhausted at pc=")
        .nth(1)
        .unwrap_or_else(|| panic!("no budget end: {stderr}"));
    tail.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A `continue` to a read watchpoint millions of instructions away (its third hit, about
/// 11 million in) and then to a breakpoint about 160 million in, both on the hart's
/// debugger triggers: each stop is where the guest is after exactly as many instructions
/// without a debugger and without block translation (the pc `--max-insns` stops at), and
/// the guest then ends as it does without one.
#[test]
fn continue_to_distant_points_arrives_where_the_guest_is_without_a_debugger() {
    let elf = guest("bench");
    // The last byte of the CRC buffer: written once, read at the end of each CRC pass.
    let watched = symbol(&elf, "crc_buf") + 65535;
    let sock = socket("distant");
    let mut vmm = Vmm::start(
        &elf,
        &[
            "--gdb",
            &format!("unix:{}", sock.display()),
            "--gdb-wait",
            "--max-insns",
            "2000000000",
        ],
    );
    wait_socket(&mut vmm, &sock);
    let out = run_gdb(
        &elf,
        &sock.display().to_string(),
        &[
            &format!("rwatch *(unsigned char *){watched:#x}"),
            "ignore 1 2",
            "continue",
            "p/x $pc",
            "monitor insns",
            "delete",
            "break rt_print_hex",
            "continue",
            "p/x $pc",
            "monitor insns",
            "delete",
            "continue",
        ],
    );
    let (status, stdout, stderr) = vmm.finish();
    assert!(out.contains("atchpoint 1: *(unsigned char *)"), "{out}");
    assert!(out.contains("Breakpoint 2, "), "{out}");
    assert!(out.contains("exited normally"), "{out}");
    let insns = numbers(&out);
    assert_eq!(insns.len(), 2, "{out}");
    assert!(
        insns[0] > 5_000_000 && insns[1] > insns[0],
        "{insns:?}\n{out}"
    );
    assert_eq!(pc_after(&elf, insns[0]), gdb_value(&out, 1), "{out}");
    assert_eq!(pc_after(&elf, insns[1]), gdb_value(&out, 2), "{out}");
    assert_eq!(
        gdb_value(&out, 2),
        format!("{:#x}", symbol(&elf, "rt_print_hex")),
        "{out}"
    );
    let (plain_status, plain_out) = plain_run(&elf);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(plain_status, Some(0));
    assert_eq!(stdout, plain_out, "{stderr}");
}
