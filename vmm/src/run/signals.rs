//! Termination signals (SIGHUP, SIGINT, SIGTERM, e.g. from `timeout` or `kill`): the VMM
//! restores the terminal (raw mode off, see [`super::console::restore_terminal`]), removes
//! its control socket (`--api-sock`) and exits with status 128 + the signal's number (129,
//! 130, 143), saying which signal killed it. The signals are blocked in every thread and
//! taken by a thread of their own with `sigwait`, so the cleanup runs as ordinary code.

use std::io::Write;
use std::path::PathBuf;

use super::console::ConsoleError;
use crate::error::Error;

/// The signals [`watch_termination_signals`] handles.
pub const TERMINATION_SIGNALS: [libc::c_int; 3] = [libc::SIGHUP, libc::SIGINT, libc::SIGTERM];

/// The exit status for termination by `signal`: 128 + its number, as shells report it.
pub fn exit_status(signal: libc::c_int) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

/// The name of a termination signal, for the message.
pub fn signal_name(signal: libc::c_int) -> String {
    match signal {
        libc::SIGHUP => "SIGHUP".to_string(),
        libc::SIGINT => "SIGINT".to_string(),
        libc::SIGTERM => "SIGTERM".to_string(),
        other => format!("signal {other}"),
    }
}

/// Removes the control socket at `path` if it is a socket (never another kind of file).
pub fn remove_socket(path: &std::path::Path) {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_socket() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Blocks the termination signals in the calling thread (and so in every thread it starts
/// afterwards: call this before starting any) and starts the thread that waits for them.
/// On one, that thread restores the terminal, removes `api_sock` and ends the process with
/// [`exit_status`].
pub fn watch_termination_signals(api_sock: Option<PathBuf>) -> Result<(), Error> {
    let set = vmm_sys_util::signal::create_sigset(&TERMINATION_SIGNALS)
        .map_err(|e| ConsoleError::new("cannot build the signal set", e))?;
    // SAFETY: a valid signal set; the old mask is not wanted.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(ConsoleError::new(
            "cannot block the termination signals",
            std::io::Error::from_raw_os_error(rc),
        )
        .into());
    }
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut signal: libc::c_int = 0;
            // SAFETY: a valid signal set and a pointer to a live int.
            while unsafe { libc::sigwait(&set, &mut signal) } != 0 {}
            // Restoring the terminal from a background process group would stop the process
            // with SIGTTOU unless this thread blocks it.
            let _ = vmm_sys_util::signal::block_signal(libc::SIGTTOU);
            let _ = super::console::restore_terminal();
            if let Some(path) = &api_sock {
                remove_socket(path);
            }
            let status = exit_status(signal);
            // Not eprintln: a failing write must not keep the process from ending.
            let _ = writeln!(
                std::io::stderr(),
                "vmm: killed by {} (exit status {status})",
                signal_name(signal)
            );
            // Flushes stdout (if no other thread holds it) and ends every thread.
            std::process::exit(i32::from(status));
        })
        .map_err(|e| ConsoleError::new("cannot start the signal thread", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_names() {
        assert_eq!(exit_status(libc::SIGHUP), 129);
        assert_eq!(exit_status(libc::SIGINT), 130);
        assert_eq!(exit_status(libc::SIGTERM), 143);
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
    }

    #[test]
    fn only_sockets_are_removed() {
        let path =
            std::env::temp_dir().join(format!("vmm-signals-not-a-socket-{}", std::process::id()));
        std::fs::write(&path, b"keep").unwrap();
        remove_socket(&path);
        assert!(path.exists());
        let _ = std::fs::remove_file(&path);
        let sock = std::env::temp_dir().join(format!("vmm-signals-sock-{}", std::process::id()));
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        remove_socket(&sock);
        assert!(!sock.exists());
        drop(listener);
    }
}
