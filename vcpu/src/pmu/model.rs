//! The microarchitecture models behind the counters: a deterministic cycle cost model, an L1
//! data cache, data and instruction TLBs, and a branch predictor. They exist only to give the
//! events of the catalog well-defined, reproducible values (`docs/pmu.md`); they do not change
//! what the hart computes.
//!
//! They run while the performance monitor is *active* (some `mhpmcounter3-31` counts an event
//! in some mode, or PDIS is enabled). While it is not, nothing observes them, and a cycle is
//! one instruction slot.

/// Cycles of the cost model: every instruction slot costs [`Cost::BASE`], plus the penalties.
#[derive(Debug)]
pub struct Cost;

impl Cost {
    /// Every instruction (and every idle slot skipped by WFI).
    pub const BASE: u64 = 1;
    /// MUL, MULH*, MULW.
    pub const MUL: u64 = 2;
    /// DIV*, REM*.
    pub const DIV: u64 = 19;
    /// An L1 data cache miss.
    pub const L1D_MISS: u64 = 20;
    /// A data TLB miss.
    pub const DTLB_MISS: u64 = 10;
    /// An instruction TLB miss.
    pub const ITLB_MISS: u64 = 10;
    /// A mispredicted branch or indirect jump.
    pub const MISPREDICT: u64 = 6;
    /// Trap entry (exception or interrupt).
    pub const TRAP: u64 = 10;
    /// The most cycles one instruction can add beyond its slot (a divide never accesses
    /// memory; a memory access can miss the cache, the DTLB and the ITLB).
    pub const MAX_PENALTY: u64 = Self::L1D_MISS + Self::DTLB_MISS + Self::ITLB_MISS + Self::TRAP;

    /// The most cycles an instruction of class `c` (`events::CLASS`) that retires can add,
    /// its fetch aside: its slot and the penalties of its class (each access missing the
    /// cache and the DTLB, a mispredicted transfer, a multiply's or divide's extra cycles).
    pub(crate) const fn most(c: u8) -> u64 {
        use super::events::class;
        let mut n = Self::BASE;
        if c & class::LOAD != 0 {
            n += Self::L1D_MISS + Self::DTLB_MISS;
        }
        if c & class::STORE != 0 {
            n += Self::L1D_MISS + Self::DTLB_MISS;
        }
        if c & (class::BRANCH | class::JUMP) != 0 {
            n += Self::MISPREDICT;
        }
        if c & class::MUL != 0 {
            n += Self::MUL;
        }
        if c & class::DIV != 0 {
            n += Self::DIV;
        }
        n
    }
}

/// Lines of the L1 data cache model: 32 KiB of 64-byte lines, direct-mapped.
pub const L1D_LINES: usize = 512;
/// Entries of each TLB model: direct-mapped by virtual page number.
pub const TLB_ENTRIES: usize = 64;
/// Two-bit counters of the conditional branch predictor (bimodal, indexed by pc).
pub const BHT_ENTRIES: usize = 4096;
/// Entries of the indirect-jump target buffer (direct-mapped by pc).
pub const BTB_ENTRIES: usize = 512;

/// No tag: an empty line or TLB entry.
const EMPTY: u64 = u64::MAX;

/// The state of the models (carried in snapshots, so that a restored hart counts the same).
/// The arrays are held in the hart itself, so that monitored blocks reach every entry at a
/// fixed displacement from it (`jit::x64`, "monitored blocks").
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Models {
    /// L1D: the line address (address / 64) held by each line.
    #[serde(with = "entries")]
    pub l1d: [u64; L1D_LINES],
    /// DTLB: the virtual page number (with the context in the top bits) of each entry.
    #[serde(with = "entries")]
    pub dtlb: [u64; TLB_ENTRIES],
    /// ITLB: the same for fetches.
    #[serde(with = "entries")]
    pub itlb: [u64; TLB_ENTRIES],
    /// The page of the last fetch that went through the ITLB model.
    pub last_fetch_page: u64,
    /// Two-bit saturating counters (0-1 predict not taken, 2-3 taken).
    #[serde(with = "entries")]
    pub bht: [u8; BHT_ENTRIES],
    /// Indirect jump targets.
    #[serde(with = "entries")]
    pub btb: [u64; BTB_ENTRIES],
}

/// A model's entries in a snapshot: a sequence, as when they were held in `Vec`s (so that
/// the format is unchanged), read back only when it has the model's size.
mod entries {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize, const N: usize>(
        a: &[T; N],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(a.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize>(
        d: D,
    ) -> Result<[T; N], D::Error> {
        let v = Vec::<T>::deserialize(d)?;
        let n = v.len();
        v.try_into()
            .map_err(|_| D::Error::invalid_length(n, &format!("{N} model entries").as_str()))
    }
}

impl Default for Models {
    fn default() -> Self {
        Models {
            l1d: [EMPTY; L1D_LINES],
            dtlb: [EMPTY; TLB_ENTRIES],
            itlb: [EMPTY; TLB_ENTRIES],
            last_fetch_page: EMPTY,
            bht: [1; BHT_ENTRIES],
            btb: [0; BTB_ENTRIES],
        }
    }
}

impl Models {
    /// An access to the L1D: `true` on a miss (the line is then filled).
    #[inline]
    pub fn l1d_miss(&mut self, addr: u64) -> bool {
        let line = addr >> 6;
        let slot = &mut self.l1d[line as usize & (L1D_LINES - 1)];
        let miss = *slot != line;
        *slot = line;
        miss
    }

    /// A data translation of page `vpn` (tagged with the context): `true` on a miss.
    #[inline]
    pub fn dtlb_miss(&mut self, tag: u64) -> bool {
        let slot = &mut self.dtlb[tag as usize & (TLB_ENTRIES - 1)];
        let miss = *slot != tag;
        *slot = tag;
        miss
    }

    /// A fetch from page `tag`: `true` on an ITLB miss. Consecutive fetches from one page
    /// look the TLB up once.
    #[inline]
    pub fn itlb_miss(&mut self, tag: u64) -> bool {
        if tag == self.last_fetch_page {
            return false;
        }
        self.last_fetch_page = tag;
        let slot = &mut self.itlb[tag as usize & (TLB_ENTRIES - 1)];
        let miss = *slot != tag;
        *slot = tag;
        miss
    }

    /// A conditional branch at `pc` resolved `taken`: `true` if the predictor was wrong.
    #[inline]
    pub fn branch_mispredicted(&mut self, pc: u64, taken: bool) -> bool {
        let c = &mut self.bht[(pc >> 1) as usize & (BHT_ENTRIES - 1)];
        let predicted = *c >= 2;
        *c = if taken {
            (*c + 1).min(3)
        } else {
            c.saturating_sub(1)
        };
        predicted != taken
    }

    /// An indirect jump at `pc` to `target`: `true` if the target buffer predicted another.
    #[inline]
    pub fn indirect_mispredicted(&mut self, pc: u64, target: u64) -> bool {
        let slot = &mut self.btb[(pc >> 1) as usize & (BTB_ENTRIES - 1)];
        let miss = *slot != target;
        *slot = target;
        miss
    }

    /// The TLB models follow the hart's TLB: flushed by SFENCE.VMA, HFENCE and `satp` writes.
    pub fn flush_tlbs(&mut self) {
        self.dtlb.fill(EMPTY);
        self.itlb.fill(EMPTY);
        self.last_fetch_page = EMPTY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot's model arrays are read back only at their sizes (hostile input).
    #[test]
    fn entries_of_another_size_are_refused() {
        use serde::de::value::{Error, SeqDeserializer};
        let seq = |n: u64| SeqDeserializer::<_, Error>::new(1..=n);
        let e = entries::deserialize::<_, u64, 4>(seq(3)).unwrap_err();
        assert!(e.to_string().contains("4 model entries"), "{e}");
        assert!(entries::deserialize::<_, u64, 4>(seq(5)).is_err());
        assert_eq!(
            entries::deserialize::<_, u64, 4>(seq(4)).unwrap(),
            [1, 2, 3, 4]
        );
    }

    #[test]
    fn cache_and_predictor_behave() {
        let mut m = Models::default();
        assert!(m.l1d_miss(0x8000_0000));
        assert!(!m.l1d_miss(0x8000_003f));
        assert!(m.l1d_miss(0x8000_0040));
        // Same index, other tag: conflict miss.
        assert!(m.l1d_miss(0x8000_0000 + 64 * L1D_LINES as u64));
        assert!(m.l1d_miss(0x8000_0000));
        // Bimodal: starts weakly not-taken.
        assert!(m.branch_mispredicted(0x100, true));
        assert!(!m.branch_mispredicted(0x100, true));
        // Strongly taken now: one not-taken outcome mispredicts but does not flip it.
        assert!(m.branch_mispredicted(0x100, false));
        assert!(!m.branch_mispredicted(0x100, true));
        assert!(m.indirect_mispredicted(0x200, 0x1000));
        assert!(!m.indirect_mispredicted(0x200, 0x1000));
        assert!(m.itlb_miss(5));
        assert!(!m.itlb_miss(5));
        m.flush_tlbs();
        assert!(m.itlb_miss(5));
    }
}
