//! Console input for `vmm machine`: bytes pushed by another thread (the host's standard
//! input, read until its end, for the command line) that the board moves into the UART's
//! receive buffer between chunks of guest instructions. A hart waiting in WFI with the UART's
//! received-data interrupt enabled waits for input while more can come, instead of ending
//! the run as waiting forever.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
struct Shared {
    bytes: Mutex<VecDeque<u8>>,
    /// No more input will come.
    closed: AtomicBool,
}

/// A console input queue; clones share it.
#[derive(Debug, Clone, Default)]
pub struct MachineInput {
    shared: Arc<Shared>,
}

impl PartialEq for MachineInput {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl Eq for MachineInput {}

impl MachineInput {
    /// An open queue with nothing in it yet.
    pub fn new() -> Self {
        MachineInput::default()
    }

    /// The host's standard input, read on a thread of its own until its end (or an error).
    pub fn stdin() -> Self {
        let input = MachineInput::new();
        let feed = input.clone();
        let spawned = std::thread::Builder::new()
            .name("vmm-stdin".into())
            .spawn(move || {
                let mut stdin = std::io::stdin().lock();
                let mut buf = [0u8; 256];
                loop {
                    match stdin.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => feed.push(&buf[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            log::warn!("console input: reading stdin failed: {e}");
                            break;
                        }
                    }
                }
                feed.close();
            });
        if let Err(e) = spawned {
            log::warn!("console input: cannot start the stdin thread: {e}");
            input.close();
        }
        input
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<u8>> {
        self.shared.bytes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends input.
    pub fn push(&self, bytes: &[u8]) {
        self.lock().extend(bytes);
    }

    /// Says that no more input will come.
    pub fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
    }

    /// Whether more input may come (pushed bytes not yet taken, or the queue still open).
    pub fn may_have_more(&self) -> bool {
        !self.shared.closed.load(Ordering::Acquire) || !self.lock().is_empty()
    }

    /// Takes up to `buf.len()` bytes; returns how many.
    pub(crate) fn pop_into(&self, buf: &mut [u8]) -> usize {
        let mut q = self.lock();
        let n = buf.len().min(q.len());
        for (dst, src) in buf.iter_mut().zip(q.drain(..n)) {
            *dst = src;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_out_once_in_order() {
        let input = MachineInput::new();
        let other = input.clone();
        assert_eq!(input, other);
        assert_ne!(input, MachineInput::new());
        other.push(b"abc");
        let mut buf = [0u8; 2];
        assert_eq!(input.pop_into(&mut buf), 2);
        assert_eq!(&buf, b"ab");
        other.close();
        assert!(input.may_have_more(), "c is still there");
        assert_eq!(input.pop_into(&mut buf), 1);
        assert_eq!(buf[0], b'c');
        assert!(!input.may_have_more());
        assert_eq!(input.pop_into(&mut buf), 0);
    }
}
