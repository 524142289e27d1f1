//! The Trigger Module's CSRs (debug spec 5.7, "Trigger Module Registers"): `tselect`,
//! `tdata1`, `tdata2`, `tdata3` and `tinfo`, M-level (0x7a0-0x7a4): "only accessible in
//! machine and Debug Mode", so S, U, VS and VU get illegal-instruction from the generic
//! privilege rule (with V=1 every M-level CSR is illegal-instruction, never
//! virtual-instruction). A `tdata1` write that arms or disarms the triggers drops the
//! cached translations: the TLB and the translated code run only while nothing is armed.

use crate::csr::{ok, CsrDesc};
use crate::hart::Hart;
use vcpu_api::csr as num;

fn write_tdata1(h: &mut Hart, v: u64) {
    if h.trig.write_tdata1(v) {
        h.flush_tlb();
    }
}

/// The trigger CSR table.
pub(crate) static TABLE: &[CsrDesc] = &[
    csr!(
        num::TSELECT,
        ok,
        |h| h.trig.tselect(),
        Some(|h, v| h.trig.write_tselect(v))
    ),
    csr!(num::TDATA1, ok, |h| h.trig.tdata1(), Some(write_tdata1)),
    csr!(
        num::TDATA2,
        ok,
        |h| h.trig.tdata2(),
        Some(|h, v| h.trig.write_tdata2(v))
    ),
    // textra64 with every field WARL 0.
    csr!(num::TDATA3, ok, |_| 0, Some(|_, _| {})),
    // tinfo: every field is read-only (access R) in a read/write CSR number: writes are
    // ignored.
    csr!(num::TINFO, ok, |_| super::TINFO, Some(|_, _| {})),
];
