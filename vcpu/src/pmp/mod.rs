//! Physical Memory Protection (privileged spec 3.7, "Physical Memory Protection"): 16
//! entries (`pmpcfg0`/`pmpcfg2` hold their configuration bytes on RV64, `pmpaddr0-15` their
//! addresses) or none ([`crate::HartConfig::pmp_entries`]). This file is the leaf the hart
//! holds ([`Pmp`]: the registers and the matching rules); the CSR table is in `csr.rs`, and
//! the checks are made by the MMU (`mmu/mod.rs`: explicit accesses, fetches and the
//! implicit accesses of page-table walks).
//!
//! Implementation choices (the spec leaves them to the implementation):
//! - Granularity G = 0: regions of 4 bytes and up; every `pmpaddr` bit is kept and reads
//!   back as written (the G >= 1/G >= 2 read rules of 3.7.1 never apply).
//! - `pmpaddr` holds bits 55:2 of a 56-bit physical address: bits 63:54 are read-only 0.
//! - The reserved R=0, W=1 combination (3.7.1) is made legal by clearing W: the byte
//!   keeps X, A and L, and reads back with R = W = 0.
//! - With the entries implemented, S- and U-mode accesses that no entry matches fail
//!   (3.7.1.2, "If no PMP entry matches an S-mode or U-mode access, but at least one PMP
//!   entry is implemented, the access fails"): firmware (the runtime of the test guests,
//!   the VMM for `vmm run`) sets an allow-all entry before it drops to S or U.

use serde::{Deserialize, Serialize};
use vcpu_api::PrivilegeMode;

pub(crate) mod csr;

/// The number of entries a hart with PMP implements.
pub const ENTRIES: usize = 16;

/// `pmpcfg` byte: read permission.
pub const R: u8 = 1 << 0;
/// `pmpcfg` byte: write permission.
pub const W: u8 = 1 << 1;
/// `pmpcfg` byte: execute permission.
pub const X: u8 = 1 << 2;
/// `pmpcfg` byte: the address-matching mode A (bits 4:3).
pub const A_MASK: u8 = 3 << 3;
/// A = OFF: the entry is disabled.
pub const A_OFF: u8 = 0;
/// A = TOR: top of range (`pmpaddr[i-1] <= y < pmpaddr[i]`, with 0 below entry 0).
pub const A_TOR: u8 = 1 << 3;
/// A = NA4: the naturally aligned four-byte region at `pmpaddr << 2`.
pub const A_NA4: u8 = 2 << 3;
/// A = NAPOT: a naturally aligned power-of-two region of 8 bytes or more.
pub const A_NAPOT: u8 = 3 << 3;
/// `pmpcfg` byte: the entry is locked (and enforced in M-mode too).
pub const L: u8 = 1 << 7;
/// The bits of a `pmpcfg` byte that exist (bits 6:5 are WARL 0).
const CFG_BITS: u8 = R | W | X | A_MASK | L;
/// The writable bits of `pmpaddr` (bits 55:2 of the address).
pub const ADDR_MASK: u64 = (1 << 54) - 1;

/// What the hart stores of its PMP: saved and restored with the hart
/// ([`crate::state::HartState::pmp`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmpState {
    /// The configuration byte of each entry (`pmpNcfg`).
    pub cfg: [u8; ENTRIES],
    /// `pmpaddr0-15`.
    pub addr: [u64; ENTRIES],
}

impl PmpState {
    /// One NAPOT entry 0 over the whole physical address space with R, W and X: what
    /// firmware sets before it runs S- and U-mode software (and what the hart in hosted
    /// mode starts with: the VMM plays M-mode firmware there).
    pub fn allow_all() -> PmpState {
        let mut s = PmpState::default();
        s.cfg[0] = A_NAPOT | R | W | X;
        s.addr[0] = ADDR_MASK;
        s
    }

    /// Why this state cannot be held by a hart with `entries` entries, or `None`.
    pub fn check(&self, entries: usize) -> Option<String> {
        if entries == 0 && *self != PmpState::default() {
            return Some("PMP entries are set but this hart has no PMP".into());
        }
        for i in 0..ENTRIES {
            let c = self.cfg[i];
            if c & !CFG_BITS != 0 || c & (R | W) == W {
                return Some(format!("pmp{i}cfg = {c:#x} is not a legal value"));
            }
            if self.addr[i] & !ADDR_MASK != 0 {
                return Some(format!(
                    "pmpaddr{i} = {:#x} has bits above 53 set",
                    self.addr[i]
                ));
            }
        }
        None
    }
}

/// The legal value of a `pmpcfg` byte written as `v` (see the module documentation).
pub fn legalize_cfg(v: u8) -> u8 {
    let v = v & CFG_BITS;
    if v & (R | W) == W {
        v & !W
    } else {
        v
    }
}

/// The PMP of one hart: its registers and the rules that decide an access.
#[derive(Clone, Debug, Default)]
pub struct Pmp {
    /// 0 (every PMP CSR read-only zero) or [`ENTRIES`].
    entries: usize,
    state: PmpState,
    /// Some entry has A != OFF (else only the default rule applies).
    active: bool,
    /// The entries that match some address, lowest-numbered first: their byte range
    /// `[lo, hi)` and configuration, decoded from `state` whenever it changes (`refresh`),
    /// so that a check (every TLB fill, every page-table access of a walk) does not decode
    /// them again.
    decoded: [(u128, u128, u8); ENTRIES],
    /// How many of `decoded` are in use.
    in_use: usize,
}

/// An entry's address range, `[lo, hi)`, in bytes (u128: NAPOT's largest region ends at
/// 2^56 and TOR ranges may be empty).
fn range(state: &PmpState, i: usize) -> Option<(u128, u128)> {
    let a = state.addr[i] as u128;
    match state.cfg[i] & A_MASK {
        A_TOR => {
            let lo = if i == 0 {
                0
            } else {
                (state.addr[i - 1] as u128) << 2
            };
            // pmpaddr[i-1] >= pmpaddr[i]: the entry matches nothing (3.7.1.1).
            Some((lo, (a << 2).max(lo)))
        }
        A_NA4 => Some((a << 2, (a << 2) + 4)),
        A_NAPOT => {
            // The trailing ones give the size: yyy...y0 is 8 bytes, yyy...01 16 bytes, ...
            // (3.7.1.1, table "NAPOT range encoding in PMP address and configuration
            // registers"); all 54 bits set: 2^57 bytes, the whole address space.
            let ones = (state.addr[i].trailing_ones()).min(54);
            let size = 8u128 << ones;
            let lo = (a << 2) & !(size - 1);
            Some((lo, lo + size))
        }
        _ => None,
    }
}

impl Pmp {
    /// A PMP with `entries` entries (0 or [`ENTRIES`]; other counts are made 0 by the
    /// configuration check), all OFF and unlocked (their reset state, 3.7.1: "A and L
    /// fields zero").
    pub(crate) fn new(entries: usize) -> Pmp {
        Pmp {
            entries,
            ..Pmp::default()
        }
    }

    /// The number of entries.
    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    pub(crate) fn state(&self) -> &PmpState {
        &self.state
    }

    /// Takes `s` (checked with [`PmpState::check`] first).
    pub(crate) fn set_state(&mut self, s: &PmpState) {
        self.state = s.clone();
        self.refresh();
    }

    fn refresh(&mut self) {
        self.active = self.state.cfg.iter().any(|c| c & A_MASK != A_OFF);
        self.in_use = 0;
        for i in 0..ENTRIES {
            if let Some((lo, hi)) = range(&self.state, i) {
                self.decoded[self.in_use] = (lo, hi, self.state.cfg[i]);
                self.in_use += 1;
            }
        }
    }

    /// `pmpcfg0` (`which` = 0) or `pmpcfg2` (`which` = 1): eight configuration bytes.
    pub(crate) fn read_cfg(&self, which: usize) -> u64 {
        if self.entries == 0 {
            return 0;
        }
        (0..8).fold(0, |v, b| {
            v | (self.state.cfg[which * 8 + b] as u64) << (8 * b)
        })
    }

    /// Writes `pmpcfg0`/`pmpcfg2`: each byte legalized, locked bytes kept (3.7.1.3:
    /// "writes to the configuration register ... are ignored" while L = 1).
    pub(crate) fn write_cfg(&mut self, which: usize, v: u64) {
        if self.entries == 0 {
            return;
        }
        for b in 0..8 {
            let i = which * 8 + b;
            if self.state.cfg[i] & L == 0 {
                self.state.cfg[i] = legalize_cfg((v >> (8 * b)) as u8);
            }
        }
        self.refresh();
    }

    /// `pmpaddr{i}` (G = 0: as stored).
    pub(crate) fn read_addr(&self, i: usize) -> u64 {
        if self.entries == 0 {
            0
        } else {
            self.state.addr[i]
        }
    }

    /// Writes `pmpaddr{i}`: ignored while entry i is locked, or while entry i+1 is a locked
    /// TOR entry (whose bottom it is, 3.7.1.3).
    pub(crate) fn write_addr(&mut self, i: usize, v: u64) {
        if self.entries == 0 || self.state.cfg[i] & L != 0 {
            return;
        }
        if let Some(&next) = self.state.cfg.get(i + 1) {
            if next & L != 0 && next & A_MASK == A_TOR {
                return;
            }
        }
        self.state.addr[i] = v & ADDR_MASK;
        self.refresh();
    }

    /// Whether an access of `len` bytes at physical address `addr` in privilege `prv`
    /// needing permission `perm` (one of [`R`], [`W`], [`X`]) is allowed (3.7.1.2,
    /// "Priority and Matching Logic"): the lowest-numbered entry that matches any byte
    /// decides; it must match every byte (a partial match fails); M-mode obeys only locked
    /// entries; an access no entry matches succeeds in M-mode and fails in S and U when
    /// any entry is implemented. For a whole page, `true` means that every access within
    /// it is allowed (the TLB may keep it).
    #[inline]
    pub(crate) fn allows(&self, addr: u64, len: u64, prv: PrivilegeMode, perm: u8) -> bool {
        let machine = prv == PrivilegeMode::Machine;
        if !self.active {
            return machine || self.entries == 0;
        }
        let (lo, hi) = (addr as u128, addr as u128 + len as u128);
        for &(a, b, cfg) in &self.decoded[..self.in_use] {
            if hi <= a || lo >= b {
                continue; // no byte matches
            }
            if lo < a || hi > b {
                return false; // a partial match fails, in every mode
            }
            return (machine && cfg & L == 0) || cfg & perm != 0;
        }
        machine
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PrivilegeMode::{Machine as M, Supervisor as S, User as U};

    fn pmp(entries: &[(usize, u8, u64)]) -> Pmp {
        let mut p = Pmp::new(ENTRIES);
        for &(i, cfg, addr) in entries {
            p.state.cfg[i] = cfg;
            p.state.addr[i] = addr;
        }
        p.refresh();
        p
    }

    #[test]
    fn no_entry_in_use() {
        let p = Pmp::new(ENTRIES);
        assert!(p.allows(0x8000_0000, 8, M, X));
        assert!(!p.allows(0x8000_0000, 8, S, R));
        assert!(!p.allows(0x8000_0000, 8, U, W));
        let none = Pmp::new(0);
        assert!(none.allows(0x8000_0000, 8, U, W));
    }

    #[test]
    fn tor_na4_napot_ranges() {
        // 0: TOR [0, 0x1000) R; 1: NA4 at 0x2000 W; 2: NAPOT 0x3000-0x3fff X;
        // 3: NAPOT 8 bytes at 0x5000 R.
        let p = pmp(&[
            (0, A_TOR | R, 0x1000 >> 2),
            (1, A_NA4 | W, 0x2000 >> 2),
            (2, A_NAPOT | X, (0x3000 >> 2) | 0x1ff),
            (3, A_NAPOT | R, 0x5000 >> 2),
        ]);
        assert!(p.allows(0, 4, S, R));
        assert!(p.allows(0xff8, 8, U, R));
        assert!(!p.allows(0xff8, 8, U, W));
        assert!(!p.allows(0x1000, 4, S, R)); // just above the top
        assert!(p.allows(0x2000, 4, S, W));
        assert!(!p.allows(0x2004, 4, S, W));
        assert!(!p.allows(0x2002, 4, S, W)); // partial
        assert!(p.allows(0x3000, 4, U, X));
        assert!(p.allows(0x3ffc, 4, U, X));
        assert!(!p.allows(0x4000, 4, U, X));
        assert!(!p.allows(0x3ffe, 4, U, X)); // partial
        assert!(p.allows(0x3000, 0x1000, S, X)); // the whole page
        assert!(p.allows(0x5000, 8, S, R));
        assert!(!p.allows(0x5008, 1, S, R));
        assert!(!p.allows(0x5000, 0x1000, S, R)); // a page partly matched
    }

    #[test]
    fn tor_uses_the_previous_address_and_empty_ranges_match_nothing() {
        let p = pmp(&[(0, A_OFF, 0x1000 >> 2), (1, A_TOR | R | W, 0x2000 >> 2)]);
        assert!(!p.allows(0xffc, 4, S, R));
        assert!(p.allows(0x1000, 4, S, R));
        assert!(p.allows(0x1ffc, 4, S, W));
        assert!(!p.allows(0x2000, 4, S, R));
        let empty = pmp(&[(0, A_OFF, 0x3000 >> 2), (1, A_TOR | R, 0x2000 >> 2)]);
        assert!(!empty.allows(0x2800, 4, S, R));
        assert!(empty.allows(0x2800, 4, M, R));
    }

    #[test]
    fn lowest_entry_wins_and_partial_matches_fail() {
        // 0: NA4 at 0x1000, no permission; 1: allow-all.
        let p = pmp(&[(0, A_NA4, 0x1000 >> 2), (1, A_NAPOT | R | W | X, ADDR_MASK)]);
        assert!(!p.allows(0x1000, 4, S, R));
        assert!(p.allows(0x1004, 4, S, R));
        assert!(!p.allows(0xffc, 8, S, R)); // straddles entry 0: partial
        assert!(!p.allows(0xffc, 8, M, R)); // partial fails in M-mode too
        assert!(p.allows(0x1000, 4, M, R)); // unlocked: M-mode passes
        assert!(p.allows((1 << 56) - 8, 8, S, W)); // the allow-all covers every physical address
        assert!(!p.allows(0x1000, 0x1000, S, R)); // the page is not uniform
        assert!(p.allows(0x2000, 0x1000, S, R));
    }

    #[test]
    fn locked_entries_bind_machine_mode_and_ignore_writes() {
        let mut p = Pmp::new(ENTRIES);
        p.write_addr(0, 0x1000 >> 2);
        p.write_addr(1, 0x2000 >> 2);
        p.write_cfg(0, ((L | A_TOR | R) as u64) << 8);
        assert!(p.allows(0x1800, 4, M, R));
        assert!(!p.allows(0x1800, 4, M, W));
        assert!(p.allows(0x800, 4, M, W)); // no match: M passes
                                           // Entry 1 locked: its cfg byte, its address and (TOR) pmpaddr0 keep their values.
        p.write_cfg(0, 0);
        assert_eq!(p.read_cfg(0), ((L | A_TOR | R) as u64) << 8);
        p.write_addr(1, 0);
        p.write_addr(0, 0);
        assert_eq!((p.read_addr(0), p.read_addr(1)), (0x1000 >> 2, 0x2000 >> 2));
        // pmpaddr2 is free.
        p.write_addr(2, 5);
        assert_eq!(p.read_addr(2), 5);
    }

    #[test]
    fn warl_values() {
        assert_eq!(legalize_cfg(W), 0);
        assert_eq!(legalize_cfg(W | X | A_NAPOT), X | A_NAPOT);
        assert_eq!(legalize_cfg(0x60 | R), R);
        let mut p = Pmp::new(ENTRIES);
        p.write_addr(3, u64::MAX);
        assert_eq!(p.read_addr(3), ADDR_MASK);
        let none = Pmp::new(0);
        assert_eq!(none.read_cfg(0), 0);
        assert!(PmpState::allow_all().check(ENTRIES).is_none());
        assert!(PmpState::allow_all().check(0).is_some());
        let mut bad = PmpState::default();
        bad.cfg[2] = W;
        assert!(bad.check(ENTRIES).is_some());
    }
}
