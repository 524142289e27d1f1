//! The PMP's CSRs (privileged spec 3.7.1): `pmpcfg0` and `pmpcfg2` (RV64: the odd
//! `pmpcfg` numbers do not exist) and `pmpaddr0-15`, all M-level. `pmpcfg4-14` and
//! `pmpaddr16-63` are read-only zero (`csr::ZERO_RANGES`). Every write drops the cached
//! translations (the TLB keeps a page only while the PMP gives the whole page one verdict;
//! translated blocks are entered through it).

use crate::csr::{ok, CsrDesc};
use crate::hart::Hart;
use vcpu_api::csr as num;

fn write_cfg(h: &mut Hart, which: usize, v: u64) {
    h.pmp.write_cfg(which, v);
    h.flush_tlb();
}

fn write_addr(h: &mut Hart, i: usize, v: u64) {
    h.pmp.write_addr(i, v);
    h.flush_tlb();
}

macro_rules! pmpaddr {
    ($num:expr, $i:expr) => {
        csr!(
            $num,
            ok,
            |h| h.pmp.read_addr($i),
            Some(|h, v| write_addr(h, $i, v))
        )
    };
}

/// The PMP CSR table.
pub(crate) static TABLE: &[CsrDesc] = &[
    csr!(
        num::PMPCFG0,
        ok,
        |h| h.pmp.read_cfg(0),
        Some(|h, v| write_cfg(h, 0, v))
    ),
    csr!(
        num::PMPCFG2,
        ok,
        |h| h.pmp.read_cfg(1),
        Some(|h, v| write_cfg(h, 1, v))
    ),
    pmpaddr!(num::PMPADDR0, 0),
    pmpaddr!(num::PMPADDR1, 1),
    pmpaddr!(num::PMPADDR2, 2),
    pmpaddr!(num::PMPADDR3, 3),
    pmpaddr!(num::PMPADDR4, 4),
    pmpaddr!(num::PMPADDR5, 5),
    pmpaddr!(num::PMPADDR6, 6),
    pmpaddr!(num::PMPADDR7, 7),
    pmpaddr!(num::PMPADDR8, 8),
    pmpaddr!(num::PMPADDR9, 9),
    pmpaddr!(num::PMPADDR10, 10),
    pmpaddr!(num::PMPADDR11, 11),
    pmpaddr!(num::PMPADDR12, 12),
    pmpaddr!(num::PMPADDR13, 13),
    pmpaddr!(num::PMPADDR14, 14),
    pmpaddr!(num::PMPADDR15, 15),
];
