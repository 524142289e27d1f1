//! Sets of CTR depths (`sctrdepth.DEPTH` encodings 0-4: 16, 32, 64, 128, 256 entries).

use std::fmt;

use crate::CtrVirtError;

/// A set of CTR depths: bit n stands for 2^(n+4) entries (the `sctrdepth.DEPTH` encoding n
/// of Smctr 2.4 "Supervisor Control Transfer Records Depth Register (sctrdepth)").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct DepthSet(u8);

/// The depths a VM may select unless told otherwise: 16, 32 and 64. A hypervisor that wants
/// its guests to migrate restricts them to depths every host it may move to supports (Smctr
/// 2.4 "Supervisor Control Transfer Records Depth Register (sctrdepth)"); 16-64 are the
/// depths of this project's smaller host models, so a guest started
/// with the default can be restored on any of them.
pub const DEFAULT_GUEST_DEPTHS: DepthSet = DepthSet(0b00111);

impl DepthSet {
    /// No depth.
    pub const EMPTY: DepthSet = DepthSet(0);
    /// Every depth, 16-256.
    pub const ALL: DepthSet = DepthSet(0x1f);

    /// The set with these encoding bits (bits above 4 are dropped).
    pub fn from_bits(bits: u8) -> DepthSet {
        DepthSet(bits & 0x1f)
    }

    /// The encoding bits.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// Whether DEPTH encoding `enc` is in the set.
    pub fn contains_encoding(self, enc: u64) -> bool {
        enc < 5 && self.0 & (1 << enc) != 0
    }

    /// The smallest depth's encoding.
    pub fn smallest(self) -> Option<u8> {
        (self.0 != 0).then(|| self.0.trailing_zeros() as u8)
    }

    /// Both sets' depths.
    pub fn intersect(self, other: DepthSet) -> DepthSet {
        DepthSet(self.0 & other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The depths in entries, smallest first.
    pub fn entries(self) -> impl Iterator<Item = u64> {
        (0..5u8)
            .filter(move |n| self.0 & (1 << n) != 0)
            .map(|n| 16u64 << n)
    }

    /// Parse a comma-separated list of depths in entries, e.g. `16,64`.
    pub fn parse(list: &str) -> Result<DepthSet, CtrVirtError> {
        let bad = |why: String| CtrVirtError::BadDepthList {
            list: list.to_string(),
            why,
        };
        let mut bits = 0u8;
        for item in list.split(',') {
            let item = item.trim();
            let n: u64 = item
                .parse()
                .map_err(|_| bad(format!("{item:?} is not a number")))?;
            let enc = match n {
                16 => 0,
                32 => 1,
                64 => 2,
                128 => 3,
                256 => 4,
                _ => {
                    return Err(bad(format!(
                        "{n} is not a CTR depth (16, 32, 64, 128, 256)"
                    )))
                }
            };
            bits |= 1 << enc;
        }
        Ok(DepthSet(bits))
    }
}

impl fmt::Display for DepthSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return write!(f, "none");
        }
        let v: Vec<String> = self.entries().map(|n| n.to_string()).collect();
        write!(f, "{}", v.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        let s = DepthSet::parse("64, 16").unwrap();
        assert_eq!(s.bits(), 0b101);
        assert_eq!(s.to_string(), "16,64");
        assert_eq!(s.smallest(), Some(0));
        assert!(s.contains_encoding(2) && !s.contains_encoding(1) && !s.contains_encoding(7));
        for bad in ["", "12", "16,x", "512", "-16"] {
            let e = DepthSet::parse(bad).unwrap_err().to_string();
            assert!(e.contains("bad CTR depth list"), "{e}");
        }
        assert_eq!(DEFAULT_GUEST_DEPTHS.to_string(), "16,32,64");
        assert_eq!(DepthSet::EMPTY.to_string(), "none");
    }
}
