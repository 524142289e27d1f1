//! The memory-mapped side of the hart's IMSIC (AIA, "Memory region for an interrupt file"):
//! one 4 KiB page per interrupt file, whose `seteipnum_le` register (offset 0) takes MSIs.
//! The interrupt files themselves live in the hart (`vcpu::csr::imsic`); this module only
//! decodes an access to the pages into the MSI it delivers.
//!
//! Layout, as QEMU's `virt` board with `aia=aplic-imsic` (checked against its device tree:
//! `imsics@24000000`, and `imsics@28000000` with `riscv,guest-index-bits`):
//! - machine-level files at [`IMSIC_M_BASE`], one page per hart;
//! - supervisor-level files at [`IMSIC_S_BASE`], [`IMSIC_S_STRIDE`] bytes per hart: the
//!   S-level page, then guest interrupt files 1..=GEILEN in the pages that follow
//!   (guest-index-bits = 3 for GEILEN = 7, so 8 pages).
//!
//! Only naturally aligned 32-bit writes to `seteipnum_le` deliver an MSI. Writes to
//! `seteipnum_be` are ignored (the spec allows it on little-endian-only systems), and so is
//! every other write; every read returns 0 (`seteipnum_*` read 0, the rest of the page is
//! read-only zero). Nothing here can fail.

pub use crate::backend::InterruptFileId;

/// Machine-level interrupt files (one page per hart).
pub const IMSIC_M_BASE: u64 = 0x2400_0000;
/// Supervisor-level and guest interrupt files.
pub const IMSIC_S_BASE: u64 = 0x2800_0000;
/// Guest interrupt files of each hart (GEILEN).
pub const IMSIC_GEILEN: u32 = 7;
/// Bytes of a hart's S-level region: its S page and GEILEN guest pages, rounded up to a
/// power of two pages (QEMU's `riscv,guest-index-bits`).
pub const IMSIC_S_STRIDE: u64 = ((IMSIC_GEILEN as u64) + 1).next_power_of_two() << 12;
/// Interrupt identities per file (QEMU's `riscv,num-ids`).
pub const IMSIC_IDS: u32 = 255;
/// Bytes of an interrupt file's page.
pub const PAGE: u64 = 0x1000;

/// Which group of pages an access is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// The machine-level pages.
    Machine,
    /// The supervisor-level and guest pages.
    Supervisor,
}

/// The MSI a write at `offset` of `region` (for one hart) delivers, if any: the interrupt
/// file and the identity written.
pub fn msi_of_write(
    region: Region,
    offset: u64,
    size: u8,
    value: u64,
) -> Option<(InterruptFileId, u64)> {
    if !offset.is_multiple_of(PAGE) || size != 4 {
        return None;
    }
    let page = offset / PAGE;
    let file = match (region, page) {
        (Region::Machine, 0) => InterruptFileId::Machine,
        (Region::Supervisor, 0) => InterruptFileId::Supervisor,
        (Region::Supervisor, g) if g <= u64::from(IMSIC_GEILEN) => InterruptFileId::Guest(g as u32),
        _ => return None,
    };
    Some((file, value & 0xffff_ffff))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_aligned_word_writes_to_seteipnum_le_deliver() {
        let m = Region::Machine;
        let s = Region::Supervisor;
        assert_eq!(
            msi_of_write(m, 0, 4, 5),
            Some((InterruptFileId::Machine, 5))
        );
        assert_eq!(
            msi_of_write(s, 0, 4, 0x1_0000_0007),
            Some((InterruptFileId::Supervisor, 7))
        );
        assert_eq!(
            msi_of_write(s, 3 * PAGE, 4, 9),
            Some((InterruptFileId::Guest(3), 9))
        );
        assert_eq!(IMSIC_S_STRIDE, 0x8000);
        for (r, off, size) in [
            (m, 4, 4), // seteipnum_be
            (m, 0, 8), // wrong size
            (m, 0, 1),
            (m, 2, 4),    // misaligned
            (m, PAGE, 4), // no second M page (one hart)
            (s, 8 * PAGE, 4),
            (s, PAGE + 0x10, 4),
        ] {
            assert_eq!(msi_of_write(r, off, size, 1), None, "{r:?} {off:#x} {size}");
        }
    }
}
