//! `vmm run` killed by a termination signal: the control socket (`--api-sock`) is removed,
//! a terminal on stdin is put back out of raw mode, and the exit status is 128 + the
//! signal's number. On a terminal of another process group (a background job, `timeout`
//! without `--foreground`) the VMM leaves the terminal alone instead of being stopped.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::elf;

/// A kernel that spins forever (`j .`), written to a file named after `tag`.
fn spin_kernel(tag: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("vmm-{tag}-{}.elf", std::process::id()));
    std::fs::write(&path, elf(&[0x0000_006f])).unwrap();
    path
}

/// `vmm run` of `kernel` with a wall-clock limit, so a failing test still ends.
fn vmm_run(kernel: &Path, timeout: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vmm"));
    // Virtual time, as every test (`common::vmm`).
    cmd.env("VMM_CLOCK", "virtual");
    cmd.args(["run", "--memory", "16", "--timeout", timeout, "--kernel"])
        .arg(kernel)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// Waits until `cond` holds, for at most 20 s.
fn wait_for(mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Waits for `child` (at most 20 s, then kills it): its exit code and stderr.
fn finish(mut child: Child) -> (Option<i32>, String) {
    let mut status = None;
    wait_for(|| {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait for vmm");
    (
        status.and_then(|s| s.code()),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sigterm(child: &Child) {
    // SAFETY: sends a signal to our own child process.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
}

#[test]
fn sigterm_removes_the_api_socket() {
    let kernel = spin_kernel("sigterm");
    let sock = std::env::temp_dir().join(format!("vmm-sigterm-{}.sock", std::process::id()));
    let mut cmd = vmm_run(&kernel, "60");
    cmd.arg("--api-sock").arg(&sock).stdin(Stdio::null());
    let child = cmd.spawn().expect("start vmm");
    let listening = wait_for(|| sock.exists());
    sigterm(&child);
    let (code, err) = finish(child);
    let _ = std::fs::remove_file(&kernel);
    assert!(listening, "no socket at {}: {err}", sock.display());
    let left = sock.exists();
    let _ = std::fs::remove_file(&sock);
    assert_eq!(code, Some(143), "{err}");
    assert!(
        err.contains("vmm: killed by SIGTERM (exit status 143)"),
        "{err}"
    );
    assert!(!left, "the socket file was left behind");
}

/// A new pseudo-terminal: (master, slave).
fn pty() -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: pointers to live ints; no name, default settings and size.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here only.
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

fn local_flags(fd: &OwnedFd) -> libc::tcflag_t {
    // SAFETY: termios is plain data, filled in by tcgetattr.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a pointer to a live termios.
    assert_eq!(unsafe { libc::tcgetattr(fd.as_raw_fd(), &mut t) }, 0);
    t.c_lflag
}

/// Makes the child a session leader with the terminal on its stdin as its controlling
/// terminal, so that it is the terminal's foreground process group.
fn controlling_terminal(cmd: &mut Command) {
    // SAFETY: setsid and ioctl are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn sigterm_restores_the_terminal() {
    let kernel = spin_kernel("sigterm-tty");
    let (_master, slave) = pty();
    let canonical = libc::ICANON | libc::ECHO;
    assert_eq!(local_flags(&slave) & canonical, canonical);
    let mut cmd = vmm_run(&kernel, "60");
    cmd.stdin(Stdio::from(slave.try_clone().unwrap()));
    controlling_terminal(&mut cmd);
    let child = cmd.spawn().expect("start vmm");
    let raw = wait_for(|| local_flags(&slave) & canonical == 0);
    sigterm(&child);
    let (code, err) = finish(child);
    let _ = std::fs::remove_file(&kernel);
    assert!(raw, "the terminal was not put in raw mode: {err}");
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains("killed by SIGTERM"), "{err}");
    assert_eq!(
        local_flags(&slave) & canonical,
        canonical,
        "the terminal was left raw"
    );
}

/// Makes the child a session leader with the terminal on its stdin as its controlling
/// terminal, which then runs the command in a process group of its own: a background job
/// of that terminal. The leader waits for it (at most 30 s) and exits with its status.
fn background_job(cmd: &mut Command) {
    // SAFETY: only async-signal-safe calls (setsid, ioctl, fork, close, alarm, waitpid,
    // setpgid, _exit) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let pid = libc::fork();
            if pid < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if pid > 0 {
                // The leader: let the parent's spawn see the exec (its pipe closes).
                for fd in 3..1024 {
                    libc::close(fd);
                }
                libc::alarm(30);
                let mut status = 0;
                if libc::waitpid(pid, &mut status, 0) == pid && libc::WIFEXITED(status) {
                    libc::_exit(libc::WEXITSTATUS(status));
                }
                libc::_exit(100);
            }
            if libc::setpgid(0, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// As under `timeout` without `--foreground`: the VMM is not stopped (SIGTTOU, SIGTTIN),
/// leaves the terminal as it is, says so, and its own time limit ends the run.
#[test]
fn background_job_leaves_the_terminal_alone() {
    let kernel = spin_kernel("background");
    let (_master, slave) = pty();
    let canonical = libc::ICANON | libc::ECHO;
    let mut cmd = vmm_run(&kernel, "0.5");
    cmd.stdin(Stdio::from(slave.try_clone().unwrap()));
    background_job(&mut cmd);
    let child = cmd.spawn().expect("start vmm");
    let (code, err) = finish(child);
    let _ = std::fs::remove_file(&kernel);
    assert_eq!(code, Some(124), "{err}");
    assert!(
        err.contains("not in the terminal's foreground process group"),
        "{err}"
    );
    assert_eq!(err.matches("foreground process group").count(), 1, "{err}");
    assert_eq!(local_flags(&slave) & canonical, canonical);
}
