//! The CLINT (core-local interruptor) for one hart, laid out like SiFive's and QEMU `virt`'s:
//!
//! | offset   | register          | accesses                     |
//! |----------|-------------------|------------------------------|
//! | `0x0000` | `msip` (hart 0)   | 32-bit; bit 0 drives mip.MSIP |
//! | `0x4000` | `mtimecmp` (hart 0) | 64-bit or 32-bit halves    |
//! | `0xbff8` | `mtime`           | 64-bit or 32-bit halves      |
//!
//! The timer registers live in the hart (which raises mip.MTIP itself when
//! `mtime >= mtimecmp`); this device only decodes accesses to them. Time runs at
//! [`vcpu_api::TIMEBASE_HZ`] (10 MHz) in the hart's clock mode (`vcpu_api::ClockMode`): on
//! the host's monotonic clock (`--clock host`, where a WFI sleeps on the host until the
//! deadline), or virtual, one tick per [`vcpu_api::INSNS_PER_TICK`] retired instructions
//! independently of the host's speed, a WFI skipping ahead to the next timer deadline.
//!
//! Registers of other harts read as 0 and ignore writes.

use super::{reg64_read, reg64_write};

/// Offset of hart 0's `msip`.
pub const MSIP: u64 = 0x0;
/// Offset of hart 0's `mtimecmp`.
pub const MTIMECMP: u64 = 0x4000;
/// Offset of `mtime`.
pub const MTIME: u64 = 0xbff8;

/// What the CLINT needs from the hart.
pub trait ClintHart {
    /// Current `mtime`.
    fn mtime(&self) -> u64;
    /// Sets `mtime`.
    fn set_mtime(&mut self, value: u64);
    /// Current `mtimecmp`.
    fn mtimecmp(&self) -> u64;
    /// Sets `mtimecmp`.
    fn set_mtimecmp(&mut self, value: u64);
    /// Drives the hart's machine software interrupt line.
    fn set_msip(&mut self, level: bool);
}

impl ClintHart for crate::backend::Hart {
    fn mtime(&self) -> u64 {
        crate::backend::Hart::mtime(self)
    }
    fn set_mtime(&mut self, value: u64) {
        crate::backend::Hart::set_mtime(self, value)
    }
    fn mtimecmp(&self) -> u64 {
        crate::backend::Hart::mtimecmp(self)
    }
    fn set_mtimecmp(&mut self, value: u64) {
        crate::backend::Hart::set_mtimecmp(self, value)
    }
    fn set_msip(&mut self, level: bool) {
        crate::backend::Hart::set_msip(self, level)
    }
}

/// The CLINT device. It keeps the `msip` bit (the hart has no getter for it).
#[derive(Debug, Default)]
pub struct Clint {
    msip: bool,
}

/// The register an access falls in, with the offset inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reg {
    Msip,
    Mtimecmp(u64),
    Mtime(u64),
    /// Another hart's register or a hole.
    Other,
}

fn locate(offset: u64) -> Reg {
    match offset {
        MSIP..=0x3 => Reg::Msip,
        MTIMECMP..=0x4007 => Reg::Mtimecmp(offset - MTIMECMP),
        MTIME..=0xbfff => Reg::Mtime(offset - MTIME),
        _ => Reg::Other,
    }
}

fn bad_access(kind: &str, offset: u64, size: u8) {
    log::warn!(
        "clint: {size}-byte {kind} at offset {offset:#x} ignored (misaligned or wrong size)"
    );
}

impl Clint {
    /// A load of `size` bytes at `offset` in the window.
    pub fn read(&self, offset: u64, size: u8, hart: &dyn ClintHart) -> u64 {
        let value = match locate(offset) {
            Reg::Msip if offset == MSIP && size == 4 => Some(u64::from(self.msip)),
            Reg::Msip => None,
            Reg::Mtimecmp(off) => reg64_read(hart.mtimecmp(), off, size),
            Reg::Mtime(off) => reg64_read(hart.mtime(), off, size),
            Reg::Other => Some(0),
        };
        value.unwrap_or_else(|| {
            bad_access("read", offset, size);
            0
        })
    }

    /// A store of `size` bytes at `offset` in the window.
    pub fn write(&mut self, offset: u64, size: u8, value: u64, hart: &mut dyn ClintHart) {
        match locate(offset) {
            Reg::Msip if offset == MSIP && size == 4 => {
                self.msip = value & 1 != 0;
                hart.set_msip(self.msip);
            }
            Reg::Mtimecmp(off) => match reg64_write(hart.mtimecmp(), off, size, value) {
                Some(v) => hart.set_mtimecmp(v),
                None => bad_access("write", offset, size),
            },
            Reg::Mtime(off) => match reg64_write(hart.mtime(), off, size, value) {
                Some(v) => hart.set_mtime(v),
                None => bad_access("write", offset, size),
            },
            Reg::Msip => bad_access("write", offset, size),
            Reg::Other => log::debug!("clint: write to unimplemented offset {offset:#x} ignored"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct FakeHart {
        mtime: u64,
        mtimecmp: u64,
        msip: bool,
    }

    impl ClintHart for FakeHart {
        fn mtime(&self) -> u64 {
            self.mtime
        }
        fn set_mtime(&mut self, value: u64) {
            self.mtime = value
        }
        fn mtimecmp(&self) -> u64 {
            self.mtimecmp
        }
        fn set_mtimecmp(&mut self, value: u64) {
            self.mtimecmp = value
        }
        fn set_msip(&mut self, level: bool) {
            self.msip = level
        }
    }

    #[test]
    fn msip() {
        let mut hart = FakeHart::default();
        let mut clint = Clint::default();
        clint.write(0, 4, 1, &mut hart);
        assert!(hart.msip);
        assert_eq!(clint.read(0, 4, &hart), 1);
        clint.write(0, 4, 0xffff_fffe, &mut hart);
        assert!(!hart.msip);
        assert_eq!(clint.read(0, 4, &hart), 0);
        // Wrong size or offset: ignored.
        clint.write(0, 8, 1, &mut hart);
        clint.write(0, 1, 1, &mut hart);
        clint.write(2, 4, 1, &mut hart);
        assert!(!hart.msip);
        // Hart 1's msip does not exist.
        clint.write(4, 4, 1, &mut hart);
        assert!(!hart.msip);
        assert_eq!(clint.read(4, 4, &hart), 0);
    }

    #[test]
    fn mtimecmp() {
        let mut hart = FakeHart::default();
        let mut clint = Clint::default();
        clint.write(0x4000, 8, 0x1122_3344_5566_7788, &mut hart);
        assert_eq!(hart.mtimecmp, 0x1122_3344_5566_7788);
        assert_eq!(clint.read(0x4000, 8, &hart), 0x1122_3344_5566_7788);
        assert_eq!(clint.read(0x4000, 4, &hart), 0x5566_7788);
        assert_eq!(clint.read(0x4004, 4, &hart), 0x1122_3344);
        clint.write(0x4004, 4, 0xffff_ffff, &mut hart);
        assert_eq!(hart.mtimecmp, 0xffff_ffff_5566_7788);
        clint.write(0x4000, 4, 0x10, &mut hart);
        assert_eq!(hart.mtimecmp, 0xffff_ffff_0000_0010);
        // Misaligned / wrong size.
        clint.write(0x4002, 4, 0, &mut hart);
        clint.write(0x4000, 2, 0, &mut hart);
        clint.write(0x4004, 8, 0, &mut hart);
        assert_eq!(hart.mtimecmp, 0xffff_ffff_0000_0010);
        assert_eq!(clint.read(0x4001, 1, &hart), 0);
        // Hart 1's mtimecmp does not exist.
        clint.write(0x4008, 8, 5, &mut hart);
        assert_eq!(clint.read(0x4008, 8, &hart), 0);
        assert_eq!(hart.mtimecmp, 0xffff_ffff_0000_0010);
    }

    #[test]
    fn mtime() {
        let mut hart = FakeHart {
            mtime: 0xaaaa_bbbb_cccc_dddd,
            ..Default::default()
        };
        let mut clint = Clint::default();
        assert_eq!(clint.read(0xbff8, 8, &hart), 0xaaaa_bbbb_cccc_dddd);
        assert_eq!(clint.read(0xbff8, 4, &hart), 0xcccc_dddd);
        assert_eq!(clint.read(0xbffc, 4, &hart), 0xaaaa_bbbb);
        clint.write(0xbff8, 8, 42, &mut hart);
        assert_eq!(hart.mtime, 42);
        clint.write(0xbffc, 4, 1, &mut hart);
        assert_eq!(hart.mtime, (1 << 32) | 42);
        clint.write(0xbffa, 2, 7, &mut hart);
        assert_eq!(hart.mtime, (1 << 32) | 42);
        assert_eq!(clint.read(0xbff9, 8, &hart), 0);
    }

    #[test]
    fn holes_read_zero() {
        let mut hart = FakeHart {
            mtime: 5,
            mtimecmp: 6,
            ..Default::default()
        };
        let mut clint = Clint::default();
        for off in [0x8, 0x3ff8, 0x5000, 0xbff0, 0xfff8] {
            assert_eq!(clint.read(off, 8, &hart), 0, "{off:#x}");
            clint.write(off, 8, 0xff, &mut hart);
        }
        assert_eq!((hart.mtime, hart.mtimecmp, hart.msip), (5, 6, false));
    }
}
