//! Device models of the bare-machine platform.
//!
//! Each device is a plain struct with `read`/`write` methods that take an offset inside the
//! device's window (or a physical address for HTIF, whose words are found by symbol), so it
//! can be tested without a hart. The board in [`crate::machine`] and `vmm run`'s VMs
//! ([`crate::run`]) route MMIO exits to them through a [`bus::MmioBus`].
//!
//! Bad accesses (wrong size, misaligned, unmapped offset) never fail: reads return 0, writes
//! are dropped, and a warning is logged.

pub mod aplic;
pub mod bus;
pub mod clint;
pub mod fdt;
pub mod finisher;
pub mod htif;
pub mod imsic;
pub mod plic;
pub mod uart;

/// The console output stream shared by the UART and HTIF.
pub type Console = Box<dyn std::io::Write + Send>;

/// Locates an access of `size` bytes at `offset` inside a 64-bit register: returns the bit
/// shift and mask of the part it covers. Only the whole register and its naturally aligned
/// 32-bit halves are accepted.
pub(crate) fn reg64_part(offset: u64, size: u8) -> Option<(u32, u64)> {
    match (offset, size) {
        (0, 8) => Some((0, u64::MAX)),
        (0, 4) => Some((0, 0xffff_ffff)),
        (4, 4) => Some((32, 0xffff_ffff)),
        _ => None,
    }
}

/// Reads the part of `reg` selected by [`reg64_part`].
pub(crate) fn reg64_read(reg: u64, offset: u64, size: u8) -> Option<u64> {
    reg64_part(offset, size).map(|(shift, mask)| (reg >> shift) & mask)
}

/// Returns `reg` with the part selected by [`reg64_part`] replaced by `value`.
pub(crate) fn reg64_write(reg: u64, offset: u64, size: u8, value: u64) -> Option<u64> {
    reg64_part(offset, size)
        .map(|(shift, mask)| (reg & !(mask << shift)) | ((value & mask) << shift))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reg64_parts() {
        let r = 0x1122_3344_5566_7788;
        assert_eq!(reg64_read(r, 0, 8), Some(r));
        assert_eq!(reg64_read(r, 0, 4), Some(0x5566_7788));
        assert_eq!(reg64_read(r, 4, 4), Some(0x1122_3344));
        assert_eq!(reg64_read(r, 2, 4), None);
        assert_eq!(reg64_read(r, 0, 2), None);
        assert_eq!(reg64_read(r, 4, 8), None);
        assert_eq!(
            reg64_write(r, 0, 4, 0xdead_beef_aaaa_bbbb),
            Some(0x1122_3344_aaaa_bbbb)
        );
        assert_eq!(
            reg64_write(r, 4, 4, 0xcccc_dddd),
            Some(0xcccc_dddd_5566_7788)
        );
        assert_eq!(reg64_write(r, 0, 8, 5), Some(5));
        assert_eq!(reg64_write(r, 1, 1, 5), None);
    }
}
