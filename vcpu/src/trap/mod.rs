//! Exception and interrupt causes (privileged spec, "Machine Cause Register" table): the
//! [`Exception`] type, where a trap goes ([`TrapTarget`]) and the interrupt priority order.
//! The trap entry and return sequences are `impl Hart` in `entry.rs`; this part imports
//! nothing of the hart, so every module may use these types without an import cycle.

mod entry;

pub use vcpu_api::trap::{cause, irq, INTERRUPT_BIT};

/// A synchronous exception: cause code and the values the trap writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exception {
    /// Exception code (see [`cause`]).
    pub cause: u64,
    /// Trap value written to `xtval`.
    pub tval: u64,
    /// Second trap value for `mtval2`/`htval`: the guest physical address of a guest-page
    /// fault, shifted right by 2 (H extension); 0 otherwise.
    pub tval2: u64,
    /// Value for `mtinst`/`htinst`: a transformed instruction or pseudoinstruction, or 0.
    pub tinst: u64,
    /// Whether `tval` is a guest virtual address (`mstatus.GVA`/`hstatus.GVA`).
    pub gva: bool,
}

impl Exception {
    /// An exception with `xtval` = `tval` and nothing else.
    pub fn new(cause: u64, tval: u64) -> Exception {
        Exception {
            cause,
            tval,
            tval2: 0,
            tinst: 0,
            gva: false,
        }
    }

    /// Illegal instruction with the instruction bits as `xtval`.
    pub fn illegal(raw: u32) -> Exception {
        Exception::new(cause::ILLEGAL_INSN, raw as u64)
    }

    /// Virtual instruction (H extension): `xtval` as for illegal instruction.
    pub fn virtual_insn(raw: u32) -> Exception {
        Exception::new(cause::VIRTUAL_INSN, raw as u64)
    }

    /// Mark `tval` as a guest virtual address.
    pub fn with_gva(self) -> Exception {
        Exception { gva: true, ..self }
    }
}

/// Default interrupt priority order, highest first (privileged spec 3.1.9, the H extension's
/// "Hypervisor Interrupt Registers" and the AIA's "Defined major interrupts and default
/// priorities", including its planned order for the standard local interrupts 16-23 and
/// 32-47): the high local interrupts, MEI, MSI, MTI, SEI, SSI, STI, SGEI, VSEI, VSSI, VSTI,
/// LCOFI (13, not implemented yet), 14, then the low local interrupts. Interrupts 16-23 and
/// 32-47 can only be virtual VS-level interrupts (`hvien`/`hvip`, see `csr::aia`); 14 is
/// not implemented; 15, 24-31 and 48-63 (reserved or custom) never occur.
const PRIORITY: [u64; 36] = [
    47,
    23,
    46,
    45,
    22,
    44,
    43,
    21,
    42,
    41,
    20,
    40,
    irq::MEI,
    irq::MSI,
    irq::MTI,
    irq::SEI,
    irq::SSI,
    irq::STI,
    irq::SGEI,
    irq::VSEI,
    irq::VSSI,
    irq::VSTI,
    13,
    14,
    39,
    19,
    38,
    37,
    18,
    36,
    35,
    17,
    34,
    33,
    16,
    32,
];

/// Where [`PRIORITY`] starts holding the interrupts 0-15.
const FIRST_BASE: usize = 12;
/// The high local interrupts (before MEI in [`PRIORITY`]).
const HIGH_LOCAL: u64 = (0xf << 20) | (0xff << 40);

/// The highest-priority interrupt in `set` (all `iprio` numbers are zero, so the default
/// order decides).
#[inline]
pub(crate) fn highest_priority(set: u64) -> Option<u64> {
    if set == 0 {
        return None;
    }
    let from = if set & HIGH_LOCAL == 0 { FIRST_BASE } else { 0 };
    PRIORITY[from..]
        .iter()
        .copied()
        .find(|&i| set & (1 << i) != 0)
}

/// Whether interrupt `i` comes before a supervisor external interrupt (9) in the default
/// priority order (so a zero priority number places it above every external interrupt).
pub(crate) fn default_above_sei(i: u64) -> bool {
    PRIORITY
        .iter()
        .take_while(|&&p| p != irq::SEI)
        .any(|&p| p == i)
}

/// Where a trap is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TrapTarget {
    M,
    Hs,
    Vs,
}
