//! HTIF (the Berkeley host-target interface) through the `tohost`/`fromhost` words, as used
//! by riscv-tests and similar bare-metal programs.
//!
//! It is enabled when the program defines the symbol `tohost`. The two 8-byte words (each
//! where its symbol says, usually in RAM) become MMIO windows, so the device sees every
//! access. A value `v` written to `tohost` is a command `device = v[63:56]`,
//! `command = v[55:48]`, `payload = v[47:0]`:
//!
//! - device 0, command 0, odd payload: end of test. `v == 1` passes (exit status 0); any
//!   other odd value fails with exit status `v >> 1`.
//! - device 0, command 0, even non-zero payload: a system call. The payload points to
//!   `magic_mem`, an array of 8 u64 in guest RAM: `[number, arg0, arg1, ...]`. Supported:
//!   - `write` (64): `fd` 1 or 2 write `len` bytes from `buf` to the console; the result
//!     (byte count, or `-EBADF` for another fd, `-EFAULT` if the buffer is not in RAM) is
//!     stored in `magic_mem[0]`;
//!   - `exit` (93): ends the run with exit status `arg0`.
//!
//!   Any other number ends the run with an error. The reply is `fromhost = 1`.
//! - device 1 (console), command 1: putchar of the payload's low byte; the reply is
//!   `fromhost = 1 << 56 | 1 << 48` (device and command echoed, payload 0).
//! - Anything else ends the run with an error.
//!
//! After a command is handled, `tohost` reads as 0 again (the host took it). Writing 0 to
//! `tohost`, or anything to `fromhost`, just stores the value. Reads return the current
//! values. 32-bit halves are accepted too: a write to the upper half of `tohost` (the second
//! store of a 32-bit guest) triggers the command.

use std::io::Write;

use crate::backend::MmioRange;
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use super::{reg64_read, reg64_write};

/// `SYS_write` in the RISC-V Linux / newlib numbering.
pub const SYS_WRITE: u64 = 64;
/// `SYS_exit`.
pub const SYS_EXIT: u64 = 93;

const EBADF: u64 = 9;
const EFAULT: u64 = 14;
const PAYLOAD_MASK: u64 = (1 << 48) - 1;

/// A decoded `tohost` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HtifCommand {
    /// `tohost = 1`.
    Pass,
    /// `tohost = code << 1 | 1`, `code != 0`.
    Fail {
        /// The test's failure code.
        code: u64,
    },
    /// A system call block at this guest-physical address.
    Syscall {
        /// Address of `magic_mem`.
        magic_mem: u64,
    },
    /// Console output of one byte.
    Putchar(u8),
    /// Any other device or command.
    Unsupported {
        /// Bits 63:56.
        device: u8,
        /// Bits 55:48.
        command: u8,
    },
}

/// Decodes a non-zero value written to `tohost`.
pub fn decode(value: u64) -> HtifCommand {
    let device = (value >> 56) as u8;
    let command = (value >> 48) as u8;
    let payload = value & PAYLOAD_MASK;
    match (device, command) {
        (0, 0) if value == 1 => HtifCommand::Pass,
        (0, 0) if value & 1 == 1 => HtifCommand::Fail { code: value >> 1 },
        (0, 0) => HtifCommand::Syscall { magic_mem: payload },
        (1, 1) => HtifCommand::Putchar(payload as u8),
        _ => HtifCommand::Unsupported { device, command },
    }
}

/// What the run loop should do after an HTIF access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HtifOutcome {
    /// Keep running.
    Continue,
    /// The guest ended the run with this exit status.
    Exit {
        /// 0 is a pass.
        code: u32,
    },
}

/// A guest's HTIF request this machine cannot serve (it ends the run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HtifError {
    /// The guest made an HTIF system call this machine does not implement.
    #[error("HTIF: unsupported syscall {number} (only write (64) and exit (93) are implemented)")]
    UnsupportedSyscall {
        /// The system call number (`magic_mem[0]`).
        number: u64,
    },
    /// The guest sent an HTIF command to a device or command this machine does not implement.
    #[error("HTIF: unsupported command {command} for device {device} (tohost={tohost:#x})")]
    UnsupportedCommand {
        /// Bits 63:56 of `tohost`.
        device: u8,
        /// Bits 55:48 of `tohost`.
        command: u8,
        /// The whole value written.
        tohost: u64,
    },
    /// An HTIF system call block does not lie in guest RAM.
    #[error("HTIF: syscall block at {addr:#x} is not in guest RAM")]
    BadSyscallBlock {
        /// Guest-physical address of the `magic_mem` array.
        addr: u64,
    },
}

/// The HTIF device.
#[derive(Debug)]
pub struct Htif {
    tohost_addr: u64,
    fromhost_addr: Option<u64>,
    tohost: u64,
    fromhost: u64,
}

/// Converts a guest-provided exit value to an exit status, saturating values that do not fit.
fn exit_code(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

impl Htif {
    /// An HTIF with `tohost` at `tohost_addr` and optionally `fromhost` at `fromhost_addr`,
    /// both holding 0.
    pub fn new(tohost_addr: u64, fromhost_addr: Option<u64>) -> Self {
        Htif {
            tohost_addr,
            fromhost_addr,
            tohost: 0,
            fromhost: 0,
        }
    }

    /// Sets the initial values of the words (what the program image holds).
    pub fn set_initial(&mut self, tohost: u64, fromhost: u64) {
        self.tohost = tohost;
        self.fromhost = fromhost;
    }

    /// The MMIO windows to give the hart: one 8-byte range per word.
    pub fn ranges(&self) -> Vec<MmioRange> {
        let mut ranges = vec![MmioRange {
            base: self.tohost_addr,
            size: 8,
        }];
        if let Some(addr) = self.fromhost_addr {
            ranges.push(MmioRange {
                base: addr,
                size: 8,
            });
        }
        ranges
    }

    /// Whether the access at `addr` falls in one of the windows.
    pub fn contains(&self, addr: u64) -> bool {
        self.ranges().iter().any(|r| r.contains(addr, 1))
    }

    /// Current value of `tohost`.
    pub fn tohost(&self) -> u64 {
        self.tohost
    }

    /// Current value of `fromhost`.
    pub fn fromhost(&self) -> u64 {
        self.fromhost
    }

    fn word(&self, addr: u64) -> Option<(bool, u64)> {
        if addr.wrapping_sub(self.tohost_addr) < 8 {
            Some((true, addr - self.tohost_addr))
        } else {
            self.fromhost_addr
                .filter(|base| addr.wrapping_sub(*base) < 8)
                .map(|base| (false, addr - base))
        }
    }

    /// A load of `size` bytes at physical address `addr`.
    pub fn read(&self, addr: u64, size: u8) -> u64 {
        let value = self.word(addr).and_then(|(is_tohost, off)| {
            let reg = if is_tohost {
                self.tohost
            } else {
                self.fromhost
            };
            reg64_read(reg, off, size)
        });
        value.unwrap_or_else(|| {
            log::warn!("htif: {size}-byte read at {addr:#x} ignored (misaligned or wrong size)");
            0
        })
    }

    /// A store of `size` bytes at physical address `addr`. System calls read and write guest
    /// memory `mem`; output goes to `console`.
    pub fn write(
        &mut self,
        addr: u64,
        size: u8,
        value: u64,
        mem: &GuestMemoryMmap,
        console: &mut dyn Write,
    ) -> Result<HtifOutcome, HtifError> {
        let Some((is_tohost, off)) = self.word(addr) else {
            log::warn!("htif: write at {addr:#x} is outside tohost/fromhost");
            return Ok(HtifOutcome::Continue);
        };
        let reg = if is_tohost {
            self.tohost
        } else {
            self.fromhost
        };
        let Some(new) = reg64_write(reg, off, size, value) else {
            log::warn!("htif: {size}-byte write of {value:#x} at {addr:#x} ignored (misaligned or wrong size)");
            return Ok(HtifOutcome::Continue);
        };
        if !is_tohost {
            self.fromhost = new;
            return Ok(HtifOutcome::Continue);
        }
        self.tohost = new;
        // A 32-bit guest stores the low half first; the command is complete with the high half.
        if new == 0 || (size == 4 && off == 0) {
            return Ok(HtifOutcome::Continue);
        }
        self.tohost = 0;
        self.command(new, mem, console)
    }

    fn command(
        &mut self,
        value: u64,
        mem: &GuestMemoryMmap,
        console: &mut dyn Write,
    ) -> Result<HtifOutcome, HtifError> {
        match decode(value) {
            HtifCommand::Pass => Ok(HtifOutcome::Exit { code: 0 }),
            HtifCommand::Fail { code } => {
                log::info!("htif: test failed with code {code}");
                Ok(HtifOutcome::Exit {
                    code: exit_code(code),
                })
            }
            HtifCommand::Putchar(byte) => {
                if let Err(e) = console.write_all(&[byte]).and_then(|_| console.flush()) {
                    log::warn!("htif: console output failed: {e}");
                }
                self.fromhost = (1 << 56) | (1 << 48);
                Ok(HtifOutcome::Continue)
            }
            HtifCommand::Syscall { magic_mem } => self.syscall(magic_mem, mem, console),
            HtifCommand::Unsupported { device, command } => Err(HtifError::UnsupportedCommand {
                device,
                command,
                tohost: value,
            }),
        }
    }

    fn syscall(
        &mut self,
        magic_mem: u64,
        mem: &GuestMemoryMmap,
        console: &mut dyn Write,
    ) -> Result<HtifOutcome, HtifError> {
        let mut raw = [0u8; 64];
        mem.read_slice(&mut raw, GuestAddress(magic_mem))
            .map_err(|_| HtifError::BadSyscallBlock { addr: magic_mem })?;
        let arg = |i: usize| u64::from_le_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap());
        let ret = match arg(0) {
            SYS_WRITE => sys_write(arg(1), arg(2), arg(3), mem, console),
            SYS_EXIT => {
                return Ok(HtifOutcome::Exit {
                    code: exit_code(arg(1)),
                })
            }
            number => return Err(HtifError::UnsupportedSyscall { number }),
        };
        mem.write_obj(ret, GuestAddress(magic_mem))
            .map_err(|_| HtifError::BadSyscallBlock { addr: magic_mem })?;
        self.fromhost = 1;
        Ok(HtifOutcome::Continue)
    }
}

/// `write(fd, buf, len)`: returns the byte count or a negated errno.
fn sys_write(fd: u64, buf: u64, len: u64, mem: &GuestMemoryMmap, console: &mut dyn Write) -> u64 {
    if fd != 1 && fd != 2 {
        return EBADF.wrapping_neg();
    }
    let mut chunk = [0u8; 4096];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(chunk.len() as u64) as usize;
        let Some(addr) = buf.checked_add(done) else {
            return EFAULT.wrapping_neg();
        };
        if mem.read_slice(&mut chunk[..n], GuestAddress(addr)).is_err() {
            return EFAULT.wrapping_neg();
        }
        if let Err(e) = console.write_all(&chunk[..n]) {
            log::warn!("htif: console output failed: {e}");
        }
        done += n as u64;
    }
    if let Err(e) = console.flush() {
        log::warn!("htif: console output failed: {e}");
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOHOST: u64 = 0x8000_1000;
    const FROMHOST: u64 = 0x8000_1040;
    const MAGIC: u64 = 0x8000_2000;

    fn setup() -> (Htif, GuestMemoryMmap, Vec<u8>) {
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(0x8000_0000), 0x10000)]).unwrap();
        (Htif::new(TOHOST, Some(FROMHOST)), mem, Vec::new())
    }

    fn put_block(mem: &GuestMemoryMmap, args: &[u64]) {
        for (i, a) in args.iter().enumerate() {
            mem.write_obj(*a, GuestAddress(MAGIC + 8 * i as u64))
                .unwrap();
        }
    }

    #[test]
    fn decodes_commands() {
        assert_eq!(decode(1), HtifCommand::Pass);
        assert_eq!(decode(3), HtifCommand::Fail { code: 1 });
        assert_eq!(decode((42 << 1) | 1), HtifCommand::Fail { code: 42 });
        assert_eq!(
            decode(0x8000_2000),
            HtifCommand::Syscall {
                magic_mem: 0x8000_2000
            }
        );
        assert_eq!(
            decode((1 << 56) | (1 << 48) | 0x41),
            HtifCommand::Putchar(b'A')
        );
        assert_eq!(
            decode((1 << 56) | (1 << 48) | 0x141),
            HtifCommand::Putchar(b'A')
        );
        assert_eq!(
            decode(1 << 56),
            HtifCommand::Unsupported {
                device: 1,
                command: 0
            }
        );
        assert_eq!(
            decode((2 << 56) | 1),
            HtifCommand::Unsupported {
                device: 2,
                command: 0
            }
        );
        assert_eq!(
            decode((1 << 48) | 1),
            HtifCommand::Unsupported {
                device: 0,
                command: 1
            }
        );
    }

    #[test]
    fn ranges_cover_both_words() {
        let (htif, _, _) = setup();
        assert_eq!(
            htif.ranges(),
            vec![
                MmioRange {
                    base: TOHOST,
                    size: 8
                },
                MmioRange {
                    base: FROMHOST,
                    size: 8
                }
            ]
        );
        assert!(htif.contains(TOHOST) && htif.contains(TOHOST + 7) && htif.contains(FROMHOST + 4));
        assert!(!htif.contains(TOHOST + 8) && !htif.contains(TOHOST - 1));
        assert_eq!(Htif::new(TOHOST, None).ranges().len(), 1);
    }

    #[test]
    fn pass_and_fail() {
        let (mut htif, mem, mut out) = setup();
        assert_eq!(
            htif.write(TOHOST, 8, 1, &mem, &mut out).unwrap(),
            HtifOutcome::Exit { code: 0 }
        );
        assert_eq!(
            htif.write(TOHOST, 8, 7, &mem, &mut out).unwrap(),
            HtifOutcome::Exit { code: 3 }
        );
        assert_eq!(
            htif.write(TOHOST, 8, u64::MAX >> 16, &mem, &mut out)
                .unwrap(),
            HtifOutcome::Exit { code: u32::MAX }
        );
        assert_eq!(htif.tohost(), 0);
    }

    #[test]
    fn writing_zero_and_fromhost_just_stores() {
        let (mut htif, mem, mut out) = setup();
        assert_eq!(
            htif.write(TOHOST, 8, 0, &mem, &mut out).unwrap(),
            HtifOutcome::Continue
        );
        assert_eq!(
            htif.write(FROMHOST, 8, 5, &mem, &mut out).unwrap(),
            HtifOutcome::Continue
        );
        assert_eq!(htif.read(FROMHOST, 8), 5);
        assert_eq!(htif.read(FROMHOST, 4), 5);
        assert_eq!(htif.read(FROMHOST + 4, 4), 0);
        htif.write(FROMHOST, 8, 0, &mem, &mut out).unwrap();
        assert_eq!(htif.fromhost(), 0);
    }

    #[test]
    fn putchar() {
        let (mut htif, mem, mut out) = setup();
        let v = (1 << 56) | (1 << 48) | u64::from(b'x');
        assert_eq!(
            htif.write(TOHOST, 8, v, &mem, &mut out).unwrap(),
            HtifOutcome::Continue
        );
        assert_eq!(out, b"x");
        assert_eq!(htif.read(FROMHOST, 8), (1 << 56) | (1 << 48));
        assert_eq!(htif.read(TOHOST, 8), 0);
    }

    #[test]
    fn syscall_write() {
        let (mut htif, mem, mut out) = setup();
        mem.write_slice(b"hello\n", GuestAddress(0x8000_3000))
            .unwrap();
        put_block(&mem, &[SYS_WRITE, 1, 0x8000_3000, 6]);
        assert_eq!(
            htif.write(TOHOST, 8, MAGIC, &mem, &mut out).unwrap(),
            HtifOutcome::Continue
        );
        assert_eq!(out, b"hello\n");
        assert_eq!(mem.read_obj::<u64>(GuestAddress(MAGIC)).unwrap(), 6);
        assert_eq!(htif.fromhost(), 1);
        assert_eq!(htif.tohost(), 0);

        // stderr works too; other fds get -EBADF; bad buffers -EFAULT.
        put_block(&mem, &[SYS_WRITE, 2, 0x8000_3000, 2]);
        htif.write(TOHOST, 8, MAGIC, &mem, &mut out).unwrap();
        assert_eq!(out, b"hello\nhe");
        put_block(&mem, &[SYS_WRITE, 3, 0x8000_3000, 2]);
        htif.write(TOHOST, 8, MAGIC, &mem, &mut out).unwrap();
        assert_eq!(
            mem.read_obj::<u64>(GuestAddress(MAGIC)).unwrap(),
            (-9i64) as u64
        );
        put_block(&mem, &[SYS_WRITE, 1, 0x8000_f000, 0x2000]);
        htif.write(TOHOST, 8, MAGIC, &mem, &mut out).unwrap();
        assert_eq!(
            mem.read_obj::<u64>(GuestAddress(MAGIC)).unwrap(),
            (-14i64) as u64
        );
        put_block(&mem, &[SYS_WRITE, 1, u64::MAX - 1, 0x10]);
        htif.write(TOHOST, 8, MAGIC, &mem, &mut out).unwrap();
        assert_eq!(
            mem.read_obj::<u64>(GuestAddress(MAGIC)).unwrap(),
            (-14i64) as u64
        );
    }

    #[test]
    fn syscall_exit_and_unsupported() {
        let (mut htif, mem, mut out) = setup();
        put_block(&mem, &[SYS_EXIT, 5]);
        assert_eq!(
            htif.write(TOHOST, 8, MAGIC, &mem, &mut out).unwrap(),
            HtifOutcome::Exit { code: 5 }
        );
        put_block(&mem, &[57, 1]);
        let err = htif.write(TOHOST, 8, MAGIC, &mem, &mut out).unwrap_err();
        assert!(matches!(err, HtifError::UnsupportedSyscall { number: 57 }));
        assert!(err.to_string().contains("syscall 57"), "{err}");
        // magic_mem outside RAM.
        let err = htif.write(TOHOST, 8, 0x1000, &mem, &mut out).unwrap_err();
        assert!(
            matches!(err, HtifError::BadSyscallBlock { addr: 0x1000 }),
            "{err}"
        );
        // Unknown device.
        let err = htif.write(TOHOST, 8, 3 << 56, &mem, &mut out).unwrap_err();
        assert!(
            matches!(
                err,
                HtifError::UnsupportedCommand {
                    device: 3,
                    command: 0,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn split_32_bit_writes() {
        let (mut htif, mem, mut out) = setup();
        let v = (1u64 << 56) | (1 << 48) | u64::from(b'z');
        assert_eq!(
            htif.write(TOHOST, 4, v & 0xffff_ffff, &mem, &mut out)
                .unwrap(),
            HtifOutcome::Continue
        );
        assert!(out.is_empty());
        assert_eq!(htif.read(TOHOST, 4), u64::from(b'z'));
        assert_eq!(
            htif.write(TOHOST + 4, 4, v >> 32, &mem, &mut out).unwrap(),
            HtifOutcome::Continue
        );
        assert_eq!(out, b"z");
        assert_eq!(htif.tohost(), 0);
    }

    #[test]
    fn bad_accesses_are_ignored() {
        let (mut htif, mem, mut out) = setup();
        assert_eq!(
            htif.write(TOHOST, 1, 1, &mem, &mut out).unwrap(),
            HtifOutcome::Continue
        );
        assert_eq!(
            htif.write(TOHOST + 2, 4, 1, &mem, &mut out).unwrap(),
            HtifOutcome::Continue
        );
        assert_eq!(
            htif.write(0x9000_0000, 8, 1, &mem, &mut out).unwrap(),
            HtifOutcome::Continue
        );
        assert_eq!(htif.tohost(), 0);
        assert_eq!(htif.read(TOHOST + 1, 2), 0);
        assert_eq!(htif.read(0x9000_0000, 8), 0);
    }
}
