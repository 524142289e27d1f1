//! An APLIC interrupt domain in MSI delivery mode (AIA chapter 4, "Advanced Platform-Level
//! Interrupt Controller (APLIC)"): the supervisor-level domain a `vmm run` guest owns. Its
//! interrupts are forwarded as MSIs to the guest's IMSIC (one guest interrupt file per
//! vCPU, `run/aia.rs`); the VMM, not the guest, knows where each hart's file is, so the MSI
//! address configuration registers of the root domain ("Machine MSI address configuration",
//! "Supervisor MSI address configuration") are not part of this domain: they read 0 and
//! ignore writes, and an MSI goes to the hart the target's Hart Index names.
//!
//! Choices (all allowed by the spec):
//! - [`NUM_SOURCES`] sources (1..=96, as QEMU `virt`'s `riscv,num-sources`); `sourcecfg`
//!   of the others is read-only zero ("Source configurations").
//! - The domain is a leaf: a `sourcecfg` write with D (bit 10) set makes the register 0
//!   ("Source configurations"); SM 2 and 3 (reserved) are stored as 0, inactive.
//! - `domaincfg`: DM is read-only 1 (MSI delivery only), BE read-only 0 (little-endian),
//!   IE writable ("Domain configuration (`domaincfg`)").
//! - `target`: Hart Index 14 bits as written (an index with no hart sends nowhere: the MSI
//!   is dropped), Guest Index read-only 0 (the guest's harts have no H extension), EIID all
//!   11 bits ("Interrupt targets", "Active source, MSI delivery mode").
//! - `genmsi` sends at once, so Busy always reads 0 ("Generate MSI (`genmsi`)").
//! - `setipnum_be` is not implemented (read-only zero: BE is hardwired to 0).
//! - Pending bits follow "Precise effects on interrupt-pending bits" for MSI delivery mode:
//!   edge sources on a rising edge of the rectified input or a `setip*` write; level
//!   sources on a low-to-high transition, or a `setip*` write while the rectified input is
//!   high; cleared when forwarded, by `in_clrip`/`clripnum`, and (level) whenever the
//!   rectified input is low.
//!
//! Only naturally aligned 32-bit accesses reach a register; every other access reads 0 and
//! is ignored, as are reserved offsets ("Memory-mapped control region for an interrupt
//! domain"). Nothing here allocates or can fail; MSIs leave through a caller's sink.

use serde::{Deserialize, Serialize};

/// Interrupt sources of the domain (1..=NUM_SOURCES).
pub const NUM_SOURCES: u32 = 96;
/// Bytes of the domain's control region (no IDC structures: MSI delivery mode only).
pub const APLIC_SIZE: u64 = 0x4000;

const DOMAINCFG: u64 = 0x0000;
const SOURCECFG: u64 = 0x0004;
const SOURCECFG_END: u64 = 0x1000;
const SETIP: u64 = 0x1c00;
const SETIPNUM: u64 = 0x1cdc;
const IN_CLRIP: u64 = 0x1d00;
const CLRIPNUM: u64 = 0x1ddc;
const SETIE: u64 = 0x1e00;
const SETIENUM: u64 = 0x1edc;
const CLRIE: u64 = 0x1f00;
const CLRIENUM: u64 = 0x1fdc;
const SETIPNUM_LE: u64 = 0x2000;
const GENMSI: u64 = 0x3000;
const TARGET: u64 = 0x3004;
const TARGET_END: u64 = 0x4000;

/// `domaincfg` bits.
const DOMAINCFG_HIGH: u32 = 0x80 << 24;
const DOMAINCFG_IE: u32 = 1 << 8;
const DOMAINCFG_DM: u32 = 1 << 2;

/// `sourcecfg` fields.
const SOURCECFG_D: u32 = 1 << 10;
const SM_INACTIVE: u32 = 0;
const SM_DETACHED: u32 = 1;
const SM_EDGE1: u32 = 4;
const SM_EDGE0: u32 = 5;
const SM_LEVEL1: u32 = 6;
const SM_LEVEL0: u32 = 7;

/// `target` in MSI delivery mode: Hart Index (31:18) and EIID (10:0); Guest Index read-only 0.
const TARGET_HART: u32 = 0x3fff << 18;
const TARGET_EIID: u32 = 0x7ff;
/// `genmsi`: Hart Index and EIID (Busy reads 0).
const GENMSI_MASK: u32 = TARGET_HART | TARGET_EIID;

/// The domain's state (also what a snapshot would keep).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aplic {
    /// `domaincfg.IE`.
    ie: bool,
    /// `sourcecfg[i]` (index 0 unused).
    sourcecfg: Vec<u32>,
    /// `target[i]` (index 0 unused).
    target: Vec<u32>,
    /// Interrupt-pending bits, bit i = source i.
    pending: u128,
    /// Interrupt-enable bits.
    enabled: u128,
    /// The incoming wire values.
    wires: u128,
}

impl Default for Aplic {
    fn default() -> Self {
        Aplic::new()
    }
}

/// The source bits that exist (1..=NUM_SOURCES).
const SOURCES: u128 = ((1u128 << NUM_SOURCES) - 1) << 1;

impl Aplic {
    /// The domain at reset: `domaincfg.IE` = 0, every source inactive.
    pub fn new() -> Aplic {
        Aplic {
            ie: false,
            sourcecfg: vec![0; NUM_SOURCES as usize + 1],
            target: vec![0; NUM_SOURCES as usize + 1],
            pending: 0,
            enabled: 0,
            wires: 0,
        }
    }

    /// Whether a restored state is one this domain can hold (it is untrusted input): the
    /// register arrays of its size, every `sourcecfg` and `target` a value a write leaves,
    /// pending and enable bits only for active sources.
    pub fn check(&self) -> Result<(), String> {
        let n = NUM_SOURCES as usize + 1;
        if self.sourcecfg.len() != n || self.target.len() != n {
            return Err(format!(
                "{} sourcecfg and {} target registers, not {n}",
                self.sourcecfg.len(),
                self.target.len()
            ));
        }
        for i in 1..n {
            let (cfg, target) = (self.sourcecfg[i], self.target[i]);
            if cfg > 7 || cfg == 2 || cfg == 3 {
                return Err(format!("sourcecfg[{i}] = {cfg:#x}"));
            }
            if target & !(TARGET_HART | TARGET_EIID) != 0 || (cfg == 0 && target != 0) {
                return Err(format!("target[{i}] = {target:#x}"));
            }
        }
        let active = self.active();
        if (self.pending | self.enabled) & !active != 0 {
            return Err("pending or enable bits of inactive sources".into());
        }
        if self.wires & !SOURCES != 0 {
            return Err(format!(
                "input wires {:#x} outside sources 1 to {NUM_SOURCES}",
                self.wires
            ));
        }
        Ok(())
    }

    fn sm(&self, i: u32) -> u32 {
        self.sourcecfg.get(i as usize).copied().unwrap_or(0) & 7
    }

    /// Bit mask of the active sources.
    fn active(&self) -> u128 {
        (1..=NUM_SOURCES)
            .filter(|&i| self.sm(i) != SM_INACTIVE)
            .fold(0, |m, i| m | 1 << i)
    }

    /// The rectified input of source `i` ("Source configurations").
    fn rectified(&self, i: u32) -> bool {
        let wire = self.wires >> i & 1 != 0;
        match self.sm(i) {
            SM_EDGE1 | SM_LEVEL1 => wire,
            SM_EDGE0 | SM_LEVEL0 => !wire,
            _ => false,
        }
    }

    fn is_level(&self, i: u32) -> bool {
        matches!(self.sm(i), SM_LEVEL1 | SM_LEVEL0)
    }

    /// Sets source `i`'s pending bit by a `setip*` write, if possible ("Precise effects on
    /// interrupt-pending bits": a level source only while its rectified input is high).
    fn set_pending_by_write(&mut self, i: u32) {
        if self.sm(i) == SM_INACTIVE || (self.is_level(i) && !self.rectified(i)) {
            return;
        }
        self.pending |= 1 << i;
    }

    /// Drives source `i`'s incoming wire to `level` (sources that do not exist are
    /// ignored) and forwards what becomes pending.
    pub fn set_wire(&mut self, i: u32, level: bool, msi: &mut dyn FnMut(u32, u32)) {
        if i == 0 || i > NUM_SOURCES {
            return;
        }
        let before = self.rectified(i);
        if level {
            self.wires |= 1 << i;
        } else {
            self.wires &= !(1 << i);
        }
        let after = self.rectified(i);
        match self.sm(i) {
            SM_EDGE1 | SM_EDGE0 | SM_LEVEL1 | SM_LEVEL0 if !before && after => {
                self.pending |= 1 << i;
            }
            SM_LEVEL1 | SM_LEVEL0 if !after => self.pending &= !(1 << i),
            _ => {}
        }
        self.forward(msi);
    }

    /// Sends an MSI for every pending and enabled source while IE = 1, clearing its pending
    /// bit ("Interrupt forwarding by MSIs"): `msi(hart index, EIID)`.
    fn forward(&mut self, msi: &mut dyn FnMut(u32, u32)) {
        if !self.ie {
            return;
        }
        let mut ready = self.pending & self.enabled & SOURCES;
        while ready != 0 {
            let i = ready.trailing_zeros();
            ready &= ready - 1;
            self.pending &= !(1 << i);
            let t = self.target[i as usize];
            msi(t >> 18, t & TARGET_EIID);
        }
    }

    /// A read of `size` bytes at `offset`.
    pub fn read(&self, offset: u64, size: u8) -> u64 {
        if size != 4 || !offset.is_multiple_of(4) {
            return 0;
        }
        let word = |bits: u128, k: u64| bits.checked_shr(32 * k as u32).unwrap_or(0) as u32;
        let v = match offset {
            DOMAINCFG => DOMAINCFG_HIGH | DOMAINCFG_DM | if self.ie { DOMAINCFG_IE } else { 0 },
            SOURCECFG..SOURCECFG_END => {
                let i = ((offset - SOURCECFG) / 4 + 1) as usize;
                self.sourcecfg.get(i).copied().unwrap_or(0)
            }
            SETIP..0x1c80 => word(self.pending & SOURCES, (offset - SETIP) / 4),
            IN_CLRIP..0x1d80 => {
                let k = (offset - IN_CLRIP) / 4;
                let rect = (1..=NUM_SOURCES)
                    .filter(|&i| self.rectified(i))
                    .fold(0u128, |m, i| m | 1 << i);
                word(rect, k)
            }
            SETIE..0x1e80 => word(self.enabled & SOURCES, (offset - SETIE) / 4),
            TARGET..TARGET_END => {
                let i = ((offset - TARGET) / 4 + 1) as usize;
                self.target.get(i).copied().unwrap_or(0)
            }
            // genmsi: Busy is never set (MSIs leave at once); the fields read as written
            // would be, but nothing is kept: reads 0. setipnum, clripnum, setienum,
            // clrienum, setipnum_le, clrie and the MSI address registers read 0.
            _ => 0,
        };
        u64::from(v)
    }

    /// A write of `size` bytes at `offset`; MSIs it causes leave through `msi`.
    pub fn write(&mut self, offset: u64, size: u8, value: u64, msi: &mut dyn FnMut(u32, u32)) {
        if size != 4 || !offset.is_multiple_of(4) {
            return;
        }
        let v = value as u32;
        let bits = |k: u64| u128::from(v).checked_shl(32 * k as u32).unwrap_or(0) & SOURCES;
        let by_num = |n: u32| (1..=NUM_SOURCES).contains(&n).then_some(n);
        match offset {
            DOMAINCFG => self.ie = v & DOMAINCFG_IE != 0,
            SOURCECFG..SOURCECFG_END => {
                let i = (offset - SOURCECFG) / 4 + 1;
                if i <= u64::from(NUM_SOURCES) {
                    self.write_sourcecfg(i as u32, v);
                }
            }
            SETIP..0x1c80 => self.set_pending_bits(bits((offset - SETIP) / 4)),
            SETIPNUM | SETIPNUM_LE => {
                if let Some(i) = by_num(v) {
                    self.set_pending_by_write(i);
                }
            }
            IN_CLRIP..0x1d80 => self.pending &= !bits((offset - IN_CLRIP) / 4),
            CLRIPNUM => {
                if let Some(i) = by_num(v) {
                    self.pending &= !(1 << i);
                }
            }
            SETIE..0x1e80 => self.enabled |= bits((offset - SETIE) / 4) & self.active(),
            SETIENUM => {
                if let Some(i) = by_num(v).filter(|&i| self.sm(i) != SM_INACTIVE) {
                    self.enabled |= 1 << i;
                }
            }
            CLRIE..0x1f80 => self.enabled &= !bits((offset - CLRIE) / 4),
            CLRIENUM => {
                if let Some(i) = by_num(v) {
                    self.enabled &= !(1 << i);
                }
            }
            GENMSI => {
                // Extempore MSIs ignore IE ("Generate MSI (`genmsi`)").
                let g = v & GENMSI_MASK;
                msi(g >> 18, g & TARGET_EIID);
            }
            TARGET..TARGET_END => {
                let i = ((offset - TARGET) / 4 + 1) as usize;
                if i <= NUM_SOURCES as usize && self.sm(i as u32) != SM_INACTIVE {
                    self.target[i] = v & (TARGET_HART | TARGET_EIID);
                }
            }
            _ => {}
        }
        self.forward(msi);
    }

    fn set_pending_bits(&mut self, bits: u128) {
        let mut b = bits;
        while b != 0 {
            let i = b.trailing_zeros();
            b &= b - 1;
            self.set_pending_by_write(i);
        }
    }

    /// `sourcecfg[i]` ("Source configurations"): a leaf domain makes a write with D = 1
    /// zero; reserved SM values are stored as inactive. An inactive source's pending and
    /// enable bits and target are zero; a level source whose rectified input is high becomes
    /// pending (the spec allows it), one whose input is low stops being pending.
    fn write_sourcecfg(&mut self, i: u32, v: u32) {
        let sm = match v & 7 {
            _ if v & SOURCECFG_D != 0 => SM_INACTIVE,
            2 | 3 => SM_INACTIVE,
            sm => sm,
        };
        self.sourcecfg[i as usize] = sm;
        let bit = 1u128 << i;
        match sm {
            SM_INACTIVE => {
                self.pending &= !bit;
                self.enabled &= !bit;
                self.target[i as usize] = 0;
            }
            SM_DETACHED => {}
            _ if self.is_level(i) => {
                if self.rectified(i) {
                    self.pending |= bit;
                } else {
                    self.pending &= !bit;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collects MSIs.
    fn run(a: &mut Aplic, f: impl FnOnce(&mut Aplic, &mut dyn FnMut(u32, u32))) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        f(a, &mut |h, e| out.push((h, e)));
        out
    }

    fn w(a: &mut Aplic, off: u64, v: u32) -> Vec<(u32, u32)> {
        run(a, |a, m| a.write(off, 4, u64::from(v), m))
    }

    /// A restored state is untrusted: `check` accepts what writes leave and refuses each
    /// thing no write can leave, naming it.
    #[test]
    fn restore_check_refuses_what_no_write_leaves() {
        let mut good = Aplic::new();
        w(&mut good, DOMAINCFG, DOMAINCFG_IE);
        // Source 10 level-high to hart 3, EIID 0x7ff; source 5 edge, pending and enabled.
        w(&mut good, SOURCECFG + 4 * 9, SM_LEVEL1);
        w(&mut good, TARGET + 4 * 9, (3 << 18) | 0x7ff);
        w(&mut good, SOURCECFG + 4 * 4, SM_EDGE1);
        w(&mut good, SETIENUM, 5);
        w(&mut good, SETIPNUM, 5);
        run(&mut good, |a, m| a.set_wire(10, true, m));
        assert_eq!(good.check(), Ok(()));
        assert_eq!(Aplic::new().check(), Ok(()));
        type Mutant = (&'static str, fn(&mut Aplic));
        let mutants: [Mutant; 9] = [
            ("96 sourcecfg", |a| {
                a.sourcecfg.pop();
            }),
            ("98 target registers", |a| a.target.push(0)),
            ("sourcecfg[3] = 0x2", |a| a.sourcecfg[3] = 2),
            ("sourcecfg[3] = 0x8", |a| a.sourcecfg[3] = 8),
            ("sourcecfg[3] = 0x400", |a| a.sourcecfg[3] = SOURCECFG_D),
            ("target[10] = 0xc37ff", |a| a.target[10] |= 0x3000),
            ("target[7] = 0x5", |a| a.target[7] = 5),
            ("pending or enable bits", |a| a.pending |= 1 << 20),
            ("input wires", |a| a.wires |= 1 << 97),
        ];
        for (what, mutate) in mutants {
            let mut a = good.clone();
            mutate(&mut a);
            let e = a.check().expect_err(what);
            assert!(e.contains(what), "{what}: {e}");
        }
        let mut a = good.clone();
        a.enabled |= 1;
        assert!(a.check().is_err(), "source 0's enable bit");
    }

    #[test]
    fn domaincfg_has_dm_read_only_one_and_ie_writable() {
        let mut a = Aplic::new();
        assert_eq!(a.read(0, 4), 0x8000_0004);
        w(&mut a, 0, 0xffff_ffff);
        assert_eq!(a.read(0, 4), 0x8000_0104);
        w(&mut a, 0, 0);
        assert_eq!(a.read(0, 4), 0x8000_0004);
    }

    /// A level-high source forwards one MSI per low-to-high edge; `setipnum_le` re-arms it
    /// only while the input is still high (the retrigger of "Special consideration for
    /// level-sensitive interrupt sources").
    #[test]
    fn level_source_forwards_on_rising_edge_and_setipnum_retriggers() {
        let mut a = Aplic::new();
        w(&mut a, SOURCECFG + 4 * 9, SM_LEVEL1); // source 10
        w(&mut a, TARGET + 4 * 9, (2 << 18) | (3 << 12) | 0x25);
        assert_eq!(a.read(TARGET + 4 * 9, 4), (2 << 18) | 0x25);
        w(&mut a, SETIENUM, 10);
        assert_eq!(a.read(SETIE, 4), 1 << 10);
        w(&mut a, 0, DOMAINCFG_IE);
        assert!(run(&mut a, |a, m| a.set_wire(10, true, m)) == vec![(2, 0x25)]);
        assert_eq!(a.read(SETIP, 4), 0);
        assert_eq!(a.read(IN_CLRIP, 4), 1 << 10);
        // Still high: no new MSI until the retrigger.
        assert!(run(&mut a, |a, m| a.set_wire(10, true, m)).is_empty());
        assert_eq!(w(&mut a, SETIPNUM_LE, 10), vec![(2, 0x25)]);
        assert!(run(&mut a, |a, m| a.set_wire(10, false, m)).is_empty());
        // Low: a setipnum write cannot make it pending.
        assert!(w(&mut a, SETIPNUM_LE, 10).is_empty());
        assert_eq!(a.read(SETIP, 4), 0);
    }

    #[test]
    fn disabled_or_ie_off_keeps_pending_until_enabled() {
        let mut a = Aplic::new();
        w(&mut a, SOURCECFG, SM_EDGE1); // source 1
        w(&mut a, TARGET, 7);
        assert!(run(&mut a, |a, m| a.set_wire(1, true, m)).is_empty());
        assert_eq!(a.read(SETIP, 4), 2);
        w(&mut a, SETIE, 0xffff_ffff);
        assert_eq!(a.read(SETIE, 4), 2, "only active sources get enabled");
        assert_eq!(w(&mut a, 0, DOMAINCFG_IE), vec![(0, 7)]);
        // Detached: only setip writes.
        w(&mut a, SOURCECFG + 4, SM_DETACHED); // source 2
        w(&mut a, TARGET + 4, (1 << 18) | 9);
        w(&mut a, SETIENUM, 2);
        assert_eq!(w(&mut a, SETIP, 4), vec![(1, 9)]);
        w(&mut a, CLRIENUM, 2);
        assert!(w(&mut a, SETIPNUM, 2).is_empty());
        w(&mut a, IN_CLRIP, 4);
        assert_eq!(a.read(SETIP, 4), 0);
        // Inactive again: everything read-only zero.
        w(&mut a, SOURCECFG + 4, SM_INACTIVE);
        assert_eq!(a.read(TARGET + 4, 4), 0);
        w(&mut a, SETIENUM, 2);
        assert_eq!(a.read(SETIE, 4), 2);
    }

    #[test]
    fn genmsi_ignores_ie_and_d_bit_zeroes_sourcecfg() {
        let mut a = Aplic::new();
        assert_eq!(w(&mut a, GENMSI, (3 << 18) | 0x1005), vec![(3, 5)]);
        assert_eq!(a.read(GENMSI, 4), 0);
        w(&mut a, SOURCECFG, SOURCECFG_D | SM_LEVEL1);
        assert_eq!(a.read(SOURCECFG, 4), 0);
        w(&mut a, SOURCECFG, 2);
        assert_eq!(a.read(SOURCECFG, 4), 0);
    }

    /// Every access of every width at every offset of the region (and beyond) is safe; no
    /// source beyond NUM_SOURCES appears.
    #[test]
    fn any_access_is_safe() {
        let mut a = Aplic::new();
        for off in (0..APLIC_SIZE + 0x100).step_by(1) {
            for size in [1u8, 2, 4, 8] {
                let _ = a.read(off, size);
                let _ = run(&mut a, |a, m| a.write(off, size, u64::MAX, m));
            }
        }
        for i in [0, NUM_SOURCES + 1, u32::MAX] {
            let _ = run(&mut a, |a, m| a.set_wire(i, true, m));
        }
        assert_eq!(a.read(SETIP + 12, 4), 0);
        assert_eq!(a.read(SETIE + 12, 4), 0);
        assert_eq!(a.read(SOURCECFG + 4 * u64::from(NUM_SOURCES), 4), 0);
    }
}
