//! How the VM's counters sit on the hart's with counter delegation (a leaf: the rest of
//! `deleg` works on a [`crate::GuestPmu`], these only on the mapping).

use crate::HW_COUNTERS;

/// The identity mapping (no counter delegation).
pub fn identity_map() -> [u8; HW_COUNTERS] {
    std::array::from_fn(|i| i as u8)
}

/// The mapping with counter delegation (the counters of Smcdeleg 3 "Counter Delegation" on
/// other hart counters, which chapter 6's note "Hypervisor Configuration" allows): the hpm
/// counters of `mask` (bits 3-31) handed out from the top (the k-th lowest virtual counter
/// is the k-th highest hart counter); every other index is itself.
pub fn deleg_map(mask: u32) -> [u8; HW_COUNTERS] {
    let mut map = identity_map();
    let hpm: Vec<u8> = (3..HW_COUNTERS as u8)
        .filter(|&i| mask >> i & 1 != 0)
        .collect();
    for (k, &v) in hpm.iter().enumerate() {
        map[usize::from(v)] = hpm[hpm.len() - 1 - k];
    }
    map
}

/// Whether `map` is a mapping a [`crate::GuestPmu`] with counters `mask` can use (a snapshot's):
/// a permutation of the hpm counters of `mask`, the identity elsewhere.
pub fn valid_map(map: &[u8; HW_COUNTERS], mask: u32) -> bool {
    let mut seen = 0u32;
    for (i, &p) in map.iter().enumerate() {
        let p = usize::from(p);
        let hpm = |x: usize| (3..HW_COUNTERS).contains(&x) && mask >> x & 1 != 0;
        let ok = if hpm(i) { hpm(p) } else { p == i };
        if !ok || seen >> p & 1 != 0 {
            return false;
        }
        seen |= 1 << p;
    }
    true
}
