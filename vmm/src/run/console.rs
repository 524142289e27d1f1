//! Console input for `vmm run`: host stdin is read on an `event-manager` event loop thread
//! into an [`InputQueue`], from which the UART's receive FIFO and SBI DBCN `console_read`
//! take bytes. Each byte reaches the guest once, through whichever interface reads it first.
//!
//! When stdin is a terminal it is put in raw mode (no line editing, no echo, no signals:
//! Ctrl-C goes to the guest) for the run; [`RawTerminal`] restores the saved settings when it
//! is dropped, on every exit path including a panic, and [`restore_terminal`] does on a
//! termination signal (`super::signals`). Ctrl-A then `x` kills the VM ([`RunExit::Quit`],
//! exit status 130), Ctrl-A then `h` prints the escape keys ([`ESCAPE_HELP`]). A terminal of
//! another process group ([`StdinKind::BackgroundTerminal`]) is left alone: reading it or
//! changing its mode would stop the process. When stdin is not a terminal (a pipe, a file)
//! it is just read until its end.
//!
//! [`RunExit::Quit`]: super::RunExit::Quit

use std::collections::VecDeque;
use std::io::{IsTerminal, Read};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use event_manager::{EventManager, EventOps, EventSet, Events, MutEventSubscriber, SubscriberOps};
use vmm_sys_util::epoll::{ControlOperation, Epoll, EpollEvent};
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};
use vmm_sys_util::terminal::Terminal;

use crate::error::Error;

pub use super::error::ConsoleError;

impl ConsoleError {
    /// `what` failed with `source`.
    pub fn new<E: std::error::Error + Send + Sync + 'static>(
        what: &'static str,
        source: E,
    ) -> Self {
        ConsoleError {
            what,
            source: Box::new(source),
        }
    }
}

/// Where `vmm run` takes console input from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ConsoleInput {
    /// No input.
    #[default]
    None,
    /// These bytes, available from the start (tests).
    Bytes(Vec<u8>),
    /// The host's standard input.
    Stdin,
}

/// Console input waiting for the guest; clones share the queue.
#[derive(Debug, Clone, Default)]
pub struct InputQueue {
    bytes: Arc<Mutex<VecDeque<u8>>>,
    /// Whether more input may still be pushed (stdin not at its end; see
    /// [`InputQueue::set_open`]).
    open: Arc<AtomicBool>,
    /// Set when the user asked to end the run (Ctrl-A x on a terminal).
    quit: Arc<AtomicBool>,
    /// How the control socket ended the run, when it did (set before `quit`).
    ended_by_socket: Arc<Mutex<Option<SocketEnd>>>,
}

/// How the control socket ended a run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SocketEnd {
    /// A migration handed the VM to `unix:PATH` or `tcp:HOST:PORT`.
    Moved(String),
    /// A `quit` request stopped it (after writing this snapshot, if any).
    Stopped(Option<std::path::PathBuf>),
    /// A debugger killed it.
    Killed,
}

impl InputQueue {
    /// Appends input.
    pub fn push(&self, data: &[u8]) {
        self.lock().extend(data);
    }

    /// Takes up to `buf.len()` bytes; returns how many.
    pub fn pop_into(&self, buf: &mut [u8]) -> usize {
        let mut q = self.lock();
        let n = buf.len().min(q.len());
        for (dst, src) in buf.iter_mut().zip(q.drain(..n)) {
            *dst = src;
        }
        n
    }

    /// The input waiting, without taking it (for snapshots).
    pub fn peek_all(&self) -> Vec<u8> {
        self.lock().iter().copied().collect()
    }

    /// Whether no input is waiting.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Says whether more input may still be pushed: `vmm run` with stdin holds the queue
    /// open until stdin ends; a library user that pushes input while the VM runs opens it
    /// (a queue is closed when made). While it is open, a guest with AIA waiting in WFI for
    /// its UART's received-data interrupt, with nothing else to wake it, waits for input
    /// instead of ending the run as waiting forever.
    pub fn set_open(&self, open: bool) {
        self.open.store(open, Ordering::Release);
    }

    /// Whether input is waiting or may still come ([`InputQueue::set_open`]).
    pub fn may_have_more(&self) -> bool {
        self.open.load(Ordering::Acquire) || !self.is_empty()
    }

    /// Whether the run must end: the user asked (Ctrl-A x) or the VM moved elsewhere.
    pub fn quit_requested(&self) -> bool {
        self.quit.load(Ordering::Acquire)
    }

    /// Ends the run because the VM now runs at `to` (a migration succeeded): every vCPU
    /// thread ends at its next check, as for Ctrl-A x, with [`super::RunExit::Migrated`].
    pub(crate) fn moved(&self, to: String) {
        self.end_by_socket(SocketEnd::Moved(to));
    }

    /// Ends the run because the control socket's `quit` asked (having written `snapshot`,
    /// if any): [`super::RunExit::Stopped`].
    pub(crate) fn stopped(&self, snapshot: Option<std::path::PathBuf>) {
        self.end_by_socket(SocketEnd::Stopped(snapshot));
    }

    /// Ends the run because a debugger killed the VM: [`super::RunExit::Killed`].
    pub(crate) fn killed(&self) {
        self.end_by_socket(SocketEnd::Killed);
    }

    fn end_by_socket(&self, end: SocketEnd) {
        *self
            .ended_by_socket
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(end);
        self.quit.store(true, Ordering::Release);
    }

    /// How a run ended by [`InputQueue::quit_requested`] ends.
    pub(crate) fn quit_exit(&self) -> super::RunExit {
        match &*self
            .ended_by_socket
            .lock()
            .unwrap_or_else(|e| e.into_inner())
        {
            Some(SocketEnd::Moved(to)) => super::RunExit::Migrated { to: to.clone() },
            Some(SocketEnd::Stopped(snapshot)) => super::RunExit::Stopped {
                snapshot: snapshot.clone(),
            },
            Some(SocketEnd::Killed) => super::RunExit::Killed,
            None => super::RunExit::Quit,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<u8>> {
        self.bytes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The terminal settings of stdin before [`RawTerminal::enable`] changed them, for
/// [`restore_terminal`].
static SAVED_TERMIOS: Mutex<Option<libc::termios>> = Mutex::new(None);

/// How stdin can be used for the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinKind {
    /// A terminal this process may read and configure (the foreground process group's).
    Terminal,
    /// The controlling terminal, but this process is in a background process group (e.g.
    /// under `timeout` without `--foreground`): reading it or changing its mode would stop
    /// the process (SIGTTIN, SIGTTOU), so it is left alone.
    BackgroundTerminal,
    /// A pipe, a file or a device: read as a stream of bytes.
    Other,
}

/// What stdin is.
pub fn stdin_kind() -> StdinKind {
    if !std::io::stdin().is_terminal() {
        return StdinKind::Other;
    }
    // SAFETY: both calls take no pointers; tcgetpgrp fails (-1) on a terminal that is not
    // this process's controlling terminal, which job control does not apply to.
    let (foreground, own) = unsafe { (libc::tcgetpgrp(libc::STDIN_FILENO), libc::getpgrp()) };
    if foreground >= 0 && foreground != own {
        StdinKind::BackgroundTerminal
    } else {
        StdinKind::Terminal
    }
}

/// Puts the terminal on stdin in raw mode while it lives.
pub struct RawTerminal {
    _private: (),
}

impl std::fmt::Debug for RawTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTerminal").finish_non_exhaustive()
    }
}

impl RawTerminal {
    /// Raw mode if stdin is a terminal of the foreground process group; `None` otherwise
    /// (with a message on stderr when it is a terminal this process does not own).
    pub fn enable() -> Result<Option<RawTerminal>, Error> {
        match stdin_kind() {
            StdinKind::Other => return Ok(None),
            StdinKind::BackgroundTerminal => {
                eprintln!(
                    "vmm: not in the terminal's foreground process group (run in the \
                     background, or under `timeout` without --foreground): the console \
                     input is not read and the terminal is left as it is"
                );
                return Ok(None);
            }
            StdinKind::Terminal => {}
        }
        // SAFETY: termios is plain data, filled in by tcgetattr before it is used.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: a valid fd and a pointer to a live termios.
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(ConsoleError::new("cannot read the terminal's settings", e).into());
        }
        // Held while the mode changes, so that a termination signal's restore_terminal
        // comes after it.
        let mut slot = SAVED_TERMIOS.lock().unwrap_or_else(|e| e.into_inner());
        *slot = Some(saved);
        std::io::stdin()
            .lock()
            .set_raw_mode()
            .map_err(|e| ConsoleError::new("cannot put the terminal in raw mode", e))?;
        Ok(Some(RawTerminal { _private: () }))
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        if let Err(e) = restore_terminal() {
            eprintln!("vmm: cannot restore the terminal: {e}");
        }
    }
}

/// Puts the terminal on stdin back as it was before [`RawTerminal::enable`], if that
/// changed it (once; later calls do nothing). Safe to call from any thread, e.g. on a
/// termination signal while a [`RawTerminal`] lives.
pub fn restore_terminal() -> std::io::Result<()> {
    let saved = SAVED_TERMIOS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let Some(saved) = saved else {
        return Ok(());
    };
    // SAFETY: a valid fd and a pointer to a live termios.
    if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &saved) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Ctrl-A, the escape byte on a terminal.
const ESCAPE: u8 = 0x01;

/// What `Ctrl-A h` prints (the terminal is in raw mode: lines end with CR LF).
pub const ESCAPE_HELP: &str = "\r\nvmm: console escapes, Ctrl-A then:\r\n\
    \x20 x       kill the VM and exit (status 130)\r\n\
    \x20 h       this help\r\n\
    \x20 Ctrl-A  send Ctrl-A to the guest\r\n";

/// Reads stdin into the queue from the event loop.
struct StdinSubscriber {
    queue: InputQueue,
    exit: EventFd,
    done: Arc<AtomicBool>,
    stop: vcpu_api::StopHandle,
    /// Whether the escape sequence is recognized (stdin is a terminal).
    escapes: bool,
    after_escape: bool,
    /// Where `Ctrl-A h` prints the escape keys (stderr).
    notices: Box<dyn std::io::Write + Send>,
}

impl StdinSubscriber {
    fn forward(&mut self, data: &[u8]) {
        if !self.escapes {
            self.queue.push(data);
            return;
        }
        for &b in data {
            if self.after_escape {
                self.after_escape = false;
                match b {
                    b'x' | b'X' => {
                        self.queue.quit.store(true, Ordering::Release);
                        self.stop.stop();
                        continue;
                    }
                    b'h' | b'H' | b'?' => {
                        let _ = self.notices.write_all(ESCAPE_HELP.as_bytes());
                        let _ = self.notices.flush();
                        continue;
                    }
                    ESCAPE => {}
                    _ => self.queue.push(&[ESCAPE]),
                }
                self.queue.push(&[b]);
            } else if b == ESCAPE {
                self.after_escape = true;
            } else {
                self.queue.push(&[b]);
            }
        }
    }
}

impl MutEventSubscriber for StdinSubscriber {
    fn init(&mut self, ops: &mut EventOps) {
        if let Err(e) = ops.add(Events::new_raw(libc::STDIN_FILENO, EventSet::IN)) {
            log::warn!("console: cannot watch stdin: {e}");
            self.queue.set_open(false);
        }
        if let Err(e) = ops.add(Events::new(&self.exit, EventSet::IN)) {
            log::warn!("console: cannot watch the exit event: {e}");
        }
    }

    fn process(&mut self, events: Events, ops: &mut EventOps) {
        if events.fd() == self.exit.as_raw_fd() {
            let _ = self.exit.read();
            self.done.store(true, Ordering::Release);
            return;
        }
        let mut buf = [0u8; 4096];
        // SAFETY: reads into a live local buffer of the given length.
        let n = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            self.forward(&buf[..n as usize]);
        } else {
            let err = std::io::Error::last_os_error();
            if n < 0 && err.kind() == std::io::ErrorKind::Interrupted {
                return;
            }
            // End of input (or an error): stop watching stdin.
            self.queue.set_open(false);
            let _ = ops.remove(Events::new_raw(
                libc::STDIN_FILENO,
                events.event_set() | EventSet::IN,
            ));
            let _ = ops.remove(Events::new_raw(libc::STDIN_FILENO, EventSet::IN));
        }
    }
}

/// The thread that reads stdin; dropping it ends the event loop.
pub struct StdinReader {
    exit: Option<EventFd>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for StdinReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdinReader").finish_non_exhaustive()
    }
}

impl StdinReader {
    /// Starts reading stdin into `queue`. `stop` is used for the Ctrl-A x escape.
    pub fn spawn(queue: InputQueue, stop: vcpu_api::StopHandle) -> Result<StdinReader, Error> {
        let console_err = ConsoleError::new::<std::io::Error>;
        if stdin_kind() == StdinKind::BackgroundTerminal {
            // Reading would stop the process (SIGTTIN); `RawTerminal::enable` said so.
            return Ok(StdinReader {
                exit: None,
                thread: None,
            });
        }
        queue.set_open(true);
        if !epoll_accepts_stdin() {
            // A regular file or /dev/null cannot be polled: read it to its end directly.
            let thread = std::thread::Builder::new()
                .name("stdin".into())
                .spawn(move || {
                    let mut data = Vec::new();
                    let _ = std::io::stdin().lock().read_to_end(&mut data);
                    queue.push(&data);
                    queue.set_open(false);
                })
                .map_err(|e| console_err("cannot start the stdin thread", e))?;
            drop(thread); // detached: it ends at the end of the file
            return Ok(StdinReader {
                exit: None,
                thread: None,
            });
        }
        let exit = EventFd::new(EFD_NONBLOCK).map_err(|e| console_err("eventfd", e))?;
        let subscriber = StdinSubscriber {
            queue,
            exit: exit.try_clone().map_err(|e| console_err("eventfd", e))?,
            done: Arc::new(AtomicBool::new(false)),
            stop,
            escapes: stdin_kind() == StdinKind::Terminal,
            after_escape: false,
            notices: Box::new(std::io::stderr()),
        };
        let done = subscriber.done.clone();
        let mut manager: EventManager<Box<dyn MutEventSubscriber + Send>> = EventManager::new()
            .map_err(|e| ConsoleError::new("cannot create the event loop", e))?;
        manager.add_subscriber(Box::new(subscriber));
        let thread = std::thread::Builder::new()
            .name("console-events".into())
            .spawn(move || {
                while !done.load(Ordering::Acquire) {
                    if let Err(e) = manager.run() {
                        log::warn!("console: event loop failed: {e}");
                        break;
                    }
                }
            })
            .map_err(|e| console_err("cannot start the event loop thread", e))?;
        Ok(StdinReader {
            exit: Some(exit),
            thread: Some(thread),
        })
    }
}

impl Drop for StdinReader {
    fn drop(&mut self) {
        if let Some(exit) = &self.exit {
            let _ = exit.write(1);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Whether stdin can be watched with epoll (pipes, terminals and sockets can; regular files
/// and some character devices cannot).
fn epoll_accepts_stdin() -> bool {
    let Ok(epoll) = Epoll::new() else {
        return false;
    };
    epoll
        .ctl(
            ControlOperation::Add,
            libc::STDIN_FILENO,
            EpollEvent::new(EventSet::IN, 0),
        )
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_pops_in_order() {
        let q = InputQueue::default();
        q.push(b"abc");
        let mut buf = [0u8; 2];
        assert_eq!(q.pop_into(&mut buf), 2);
        assert_eq!(&buf, b"ab");
        assert_eq!(q.pop_into(&mut buf), 1);
        assert_eq!(buf[0], b'c');
        assert!(q.is_empty());
    }

    #[test]
    fn escape_sequence() {
        let q = InputQueue::default();
        let stop = vcpu_api::StopHandle::default();
        let mut s = StdinSubscriber {
            queue: q.clone(),
            exit: EventFd::new(EFD_NONBLOCK).unwrap(),
            done: Arc::default(),
            stop,
            escapes: true,
            after_escape: false,
            notices: Box::new(std::io::sink()),
        };
        s.forward(b"a\x01\x01b\x01c");
        assert!(!q.quit_requested());
        s.forward(b"\x01x");
        assert!(q.quit_requested());
        let mut buf = [0u8; 16];
        let n = q.pop_into(&mut buf);
        assert_eq!(&buf[..n], b"a\x01b\x01c");
    }

    /// `Ctrl-A h` prints the escape keys and sends nothing to the guest.
    #[test]
    fn escape_help() {
        let q = InputQueue::default();
        let out = crate::testutil::SharedBuf::default();
        let mut s = StdinSubscriber {
            queue: q.clone(),
            exit: EventFd::new(EFD_NONBLOCK).unwrap(),
            done: Arc::default(),
            stop: vcpu_api::StopHandle::default(),
            escapes: true,
            after_escape: false,
            notices: Box::new(out.clone()),
        };
        s.forward(b"a\x01hb");
        let mut buf = [0u8; 16];
        let n = q.pop_into(&mut buf);
        assert_eq!(&buf[..n], b"ab");
        assert!(!q.quit_requested());
        let help = String::from_utf8(out.contents()).unwrap();
        assert_eq!(help, ESCAPE_HELP);
        assert!(help.contains("x       kill the VM"), "{help}");
    }
}
