//! Helpers the workspace's tests share, so that each exists once: a fixed-seed xorshift
//! generator ([`XorShift`]), RV64 instruction encoders ([`rv64`]), an ELF64 writer
//! ([`elf::ElfBuilder`]), a console that can be read after being boxed ([`SharedBuf`]) and
//! per-process temporary paths ([`temp_path`]).
//!
//! Pure helpers: this crate depends on neither `vcpu` nor `vmm` (as a dev-dependency of
//! theirs it would otherwise give their tests a second copy of their types).

pub mod elf;
pub mod rv64;

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Marsaglia's xorshift64 (shifts 13, 7, 17): a deterministic pseudo-random generator for
/// fuzz-style tests and corpus generators. The state is the public field; it must not be 0.
///
/// Committed corpora and differential tests depend on the exact streams, so each way of
/// seeding the tests use is kept:
/// - `XorShift(state)` (or [`XorShift::from_state`]): the state as given;
/// - [`XorShift::from_seed`]: any seed, multiplied by 2^64 / φ and made odd;
/// - [`XorShift::skip`]: the same with the first numbers thrown away.
#[derive(Clone, Debug)]
pub struct XorShift(pub u64);

impl XorShift {
    /// The generator in state `state` (not 0).
    pub const fn from_state(state: u64) -> XorShift {
        XorShift(state)
    }

    /// A generator for any `seed` (0 included): state `seed * 0x9e37_79b9_7f4a_7c15 | 1`.
    pub const fn from_seed(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// This generator with its next `n` numbers thrown away.
    pub fn skip(mut self, n: usize) -> XorShift {
        for _ in 0..n {
            self.next();
        }
        self
    }

    /// The next number (the new state).
    // Not an `Iterator`: the stream never ends, and `rng.next()` reads better as a `u64`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number below `n` (`next() % n`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// One of `items` (`items[below(len)]`).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    /// True `percent` times in 100 (`below(100) < percent`).
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A register number, 0 to 31 (`below(32)`).
    pub fn reg(&mut self) -> u32 {
        self.below(32) as u32
    }
}

/// A console that collects everything written to it; clones share the buffer, so it can
/// be read after one clone was boxed and handed over.
#[derive(Debug, Clone, Default)]
pub struct SharedBuf(pub Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    /// Everything written so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// [`SharedBuf::bytes`] (the name `vmm`'s unit tests use).
    pub fn contents(&self) -> Vec<u8> {
        self.bytes()
    }

    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A path in the system's temporary directory for file `name` of the tests tagged `tag`,
/// unique to this test process: `TMP/tag-PID-name`.
pub fn temp_path(tag: &str, name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{tag}-{}-{name}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seedings_give_the_streams_the_tests_were_written_with() {
        // Reference values of the xorshift64 (13, 7, 17) step, computed by hand from the
        // definition for state 1: 1 ^ 1 << 13 = 0x2001; ^ >> 7 = 0x2041; ^ << 17.
        let mut r = XorShift(1);
        assert_eq!(r.next(), 0x4082_2041);
        let seeded = XorShift::from_seed(5);
        assert_eq!(seeded.0, 5u64.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut a = XorShift::from_seed(5);
        a.next();
        assert_eq!(a.0, XorShift::from_seed(5).skip(1).0);
        assert_eq!(XorShift::from_state(7).0, 7);
    }

    #[test]
    fn helpers_draw_one_number_each() {
        let mut a = XorShift(0x1234);
        let mut b = a.clone();
        assert_eq!(a.below(10), b.next() % 10);
        assert_eq!(a.pick(&[1, 2, 3]), [1, 2, 3][(b.next() % 3) as usize]);
        assert_eq!(a.chance(30), b.next() % 100 < 30);
        assert_eq!(a.reg(), (b.next() % 32) as u32);
    }

    #[test]
    fn temp_paths_are_per_process() {
        let p = temp_path("vmm-x", "a.elf");
        assert_eq!(p.parent(), Some(std::env::temp_dir().as_path()));
        let want = format!("vmm-x-{}-a.elf", std::process::id());
        assert_eq!(p.file_name().unwrap().to_str(), Some(want.as_str()));
    }

    #[test]
    fn shared_buf_clones_share_the_buffer() {
        let buf = SharedBuf::default();
        let mut boxed: Box<dyn Write> = Box::new(buf.clone());
        write!(boxed, "hi\r\n").unwrap();
        assert_eq!(buf.bytes(), b"hi\r\n");
        assert_eq!(buf.contents(), buf.bytes());
        assert_eq!(buf.text(), "hi\r\n");
    }
}
