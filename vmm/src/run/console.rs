//! Console input for `vmm run`: host stdin is read on an `event-manager` event loop thread
//! into an [`InputQueue`], from which the UART's receive FIFO and SBI DBCN `console_read`
//! take bytes. Each byte reaches the guest once, through whichever interface reads it first.
//!
//! When stdin is a terminal it is put in raw mode (no line editing, no echo, no signals:
//! Ctrl-C goes to the guest) for the run; [`RawTerminal`] restores canonical mode when it is
//! dropped, on every exit path including a panic. Press Ctrl-A then `x` to end the run from
//! a terminal. When stdin is not a terminal (a pipe, a file) it is just read until its end.

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
    /// Set when the user asked to end the run (Ctrl-A x on a terminal).
    quit: Arc<AtomicBool>,
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

    /// Whether the user asked to end the run.
    pub fn quit_requested(&self) -> bool {
        self.quit.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<u8>> {
        self.bytes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Puts the terminal on stdin in raw mode while it lives.
pub struct RawTerminal {
    _private: (),
}

impl RawTerminal {
    /// Raw mode if stdin is a terminal; `None` otherwise.
    pub fn enable() -> Result<Option<RawTerminal>, Error> {
        if !std::io::stdin().is_terminal() {
            return Ok(None);
        }
        std::io::stdin()
            .lock()
            .set_raw_mode()
            .map_err(|e| Error::Console(format!("cannot put the terminal in raw mode: {e}")))?;
        Ok(Some(RawTerminal { _private: () }))
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        if let Err(e) = std::io::stdin().lock().set_canon_mode() {
            eprintln!("vmm: cannot restore the terminal: {e}");
        }
    }
}

/// Ctrl-A, the escape byte on a terminal.
const ESCAPE: u8 = 0x01;

/// Reads stdin into the queue from the event loop.
struct StdinSubscriber {
    queue: InputQueue,
    exit: EventFd,
    done: Arc<AtomicBool>,
    stop: vcpu::StopHandle,
    /// Whether the escape sequence is recognized (stdin is a terminal).
    escapes: bool,
    after_escape: bool,
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

impl StdinReader {
    /// Starts reading stdin into `queue`. `stop` is used for the Ctrl-A x escape.
    pub fn spawn(queue: InputQueue, stop: vcpu::StopHandle) -> Result<StdinReader, Error> {
        let console_err = |what: &str, e: std::io::Error| Error::Console(format!("{what}: {e}"));
        if !epoll_accepts_stdin() {
            // A regular file or /dev/null cannot be polled: read it to its end directly.
            let thread = std::thread::Builder::new()
                .name("stdin".into())
                .spawn(move || {
                    let mut data = Vec::new();
                    let _ = std::io::stdin().lock().read_to_end(&mut data);
                    queue.push(&data);
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
            escapes: std::io::stdin().is_terminal(),
            after_escape: false,
        };
        let done = subscriber.done.clone();
        let mut manager: EventManager<Box<dyn MutEventSubscriber + Send>> = EventManager::new()
            .map_err(|e| Error::Console(format!("cannot create the event loop: {e}")))?;
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
        let stop = vcpu::StopHandle::default();
        let mut s = StdinSubscriber {
            queue: q.clone(),
            exit: EventFd::new(EFD_NONBLOCK).unwrap(),
            done: Arc::default(),
            stop,
            escapes: true,
            after_escape: false,
        };
        s.forward(b"a\x01\x01b\x01c");
        assert!(!q.quit_requested());
        s.forward(b"\x01x");
        assert!(q.quit_requested());
        let mut buf = [0u8; 16];
        let n = q.pop_into(&mut buf);
        assert_eq!(&buf[..n], b"a\x01b\x01c");
    }
}
