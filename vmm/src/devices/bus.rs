//! The MMIO bus of `vmm machine` and `vmm run`: guest-physical windows mapped to devices.
//!
//! A [`MmioBus`] maps disjoint address windows to device ids of the caller's choice (an
//! enum); [`MmioBus::find`] gives the device and the offset of an access, and the caller
//! dispatches on the id with whatever context the device needs (the hart for the CLINT, RAM
//! for HTIF). The bus also lists its windows for the hart ([`MmioBus::ranges`]), so the
//! hart exits on exactly the addresses the bus routes.
//!
//! rust-vmm's `vm-device` bus was considered: it is also a map from ranges to devices, but
//! it matches single addresses, not accesses that must fit in a window, and it would be a
//! dependency for a handful of windows; a lookup here is a scan of at most six entries.

use crate::backend::MmioRange;

/// Why a window cannot be added to the bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BusError {
    /// The window is empty or runs past the end of the address space.
    #[error("invalid MMIO window of {size:#x} bytes at {base:#x}")]
    InvalidWindow {
        /// Its base.
        base: u64,
        /// Its size.
        size: u64,
    },
    /// The window overlaps one already on the bus.
    #[error("MMIO window at {base:#x} overlaps the window at {other:#x}")]
    Overlap {
        /// Its base.
        base: u64,
        /// The base of the window it overlaps.
        other: u64,
    },
}

/// Where an access landed on the bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusHit<D> {
    /// The device whose window holds the access's first byte.
    pub device: D,
    /// The window's base.
    pub base: u64,
    /// The access's offset in the window.
    pub offset: u64,
    /// Whether the whole access lies in the window.
    pub fits: bool,
}

/// Disjoint guest-physical windows, each with the id of its device.
#[derive(Debug, Clone, Default)]
pub struct MmioBus<D> {
    windows: Vec<(MmioRange, D)>,
}

impl<D: Copy> MmioBus<D> {
    /// An empty bus.
    pub fn new() -> Self {
        MmioBus {
            windows: Vec::new(),
        }
    }

    /// Adds the window `[base, base + size)` for `device`.
    pub fn insert(&mut self, base: u64, size: u64, device: D) -> Result<(), BusError> {
        if size == 0 || base.checked_add(size).is_none() {
            return Err(BusError::InvalidWindow { base, size });
        }
        if let Some((other, _)) = self.windows.iter().find(|(r, _)| r.overlaps(base, size)) {
            return Err(BusError::Overlap {
                base,
                other: other.base,
            });
        }
        self.windows.push((MmioRange { base, size }, device));
        Ok(())
    }

    /// The device of the window holding byte `addr`, with the offset of an access of `len`
    /// bytes there and whether it fits in the window; `None` outside every window.
    pub fn find(&self, addr: u64, len: u64) -> Option<BusHit<D>> {
        self.windows
            .iter()
            .find(|(r, _)| r.contains(addr, 1))
            .map(|(r, device)| BusHit {
                device: *device,
                base: r.base,
                offset: addr - r.base,
                fits: r.contains(addr, len),
            })
    }

    /// The windows, in the order they were added (for the hart's MMIO ranges).
    pub fn ranges(&self) -> Vec<MmioRange> {
        self.windows.iter().map(|(r, _)| *r).collect()
    }
}

/// `value` cut to an access of `size` bytes (what an MMIO read returns to the hart).
pub fn mask_read(value: u64, size: u8) -> u64 {
    if size >= 8 {
        value
    } else {
        value & ((1u64 << (8 * u32::from(size))) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_find_their_window() {
        let mut bus = MmioBus::new();
        bus.insert(0x1000, 0x100, 'a').unwrap();
        bus.insert(0x2000, 8, 'b').unwrap();
        assert_eq!(
            bus.find(0x1010, 4),
            Some(BusHit {
                device: 'a',
                base: 0x1000,
                offset: 0x10,
                fits: true
            })
        );
        let straddling = bus.find(0x10fe, 4).unwrap();
        assert_eq!((straddling.device, straddling.fits), ('a', false));
        assert_eq!(bus.find(0x2007, 1).map(|h| h.device), Some('b'));
        assert_eq!(bus.find(0x2008, 1), None);
        assert_eq!(bus.find(0xfff, 1), None);
        assert_eq!(
            bus.ranges(),
            [
                MmioRange {
                    base: 0x1000,
                    size: 0x100
                },
                MmioRange {
                    base: 0x2000,
                    size: 8
                }
            ]
        );
    }

    #[test]
    fn overlapping_and_empty_windows_are_refused() {
        let mut bus = MmioBus::new();
        bus.insert(0x1000, 0x100, 0).unwrap();
        assert_eq!(
            bus.insert(0x10ff, 2, 1),
            Err(BusError::Overlap {
                base: 0x10ff,
                other: 0x1000
            })
        );
        assert!(bus.insert(0xf00, 0x101, 1).is_err());
        assert!(matches!(
            bus.insert(0x3000, 0, 1),
            Err(BusError::InvalidWindow { .. })
        ));
        assert!(bus.insert(u64::MAX, 2, 1).is_err());
        bus.insert(0x1100, 0x100, 1).unwrap();
    }

    #[test]
    fn reads_are_cut_to_the_access_size() {
        assert_eq!(mask_read(0x1122_3344_5566_7788, 1), 0x88);
        assert_eq!(mask_read(0x1122_3344_5566_7788, 2), 0x7788);
        assert_eq!(mask_read(0x1122_3344_5566_7788, 4), 0x5566_7788);
        assert_eq!(mask_read(0x1122_3344_5566_7788, 8), 0x1122_3344_5566_7788);
    }
}
