//! Exception and interrupt causes (privileged spec, "Machine Cause Register" table) and the
//! trap entry and return sequences (sections "Machine Trap Delegation Registers", "Trap-Return
//! Instructions").

use crate::hart::{Hart, PrivilegeMode};

/// Synchronous exception codes (`xcause` with the interrupt bit clear).
pub mod cause {
    #![allow(missing_docs)]
    pub const INSN_MISALIGNED: u64 = 0;
    pub const INSN_ACCESS: u64 = 1;
    pub const ILLEGAL_INSN: u64 = 2;
    pub const BREAKPOINT: u64 = 3;
    pub const LOAD_MISALIGNED: u64 = 4;
    pub const LOAD_ACCESS: u64 = 5;
    pub const STORE_MISALIGNED: u64 = 6;
    pub const STORE_ACCESS: u64 = 7;
    pub const ECALL_U: u64 = 8;
    pub const ECALL_S: u64 = 9;
    pub const ECALL_M: u64 = 11;
    pub const INSN_PAGE_FAULT: u64 = 12;
    pub const LOAD_PAGE_FAULT: u64 = 13;
    pub const STORE_PAGE_FAULT: u64 = 15;
}

/// Interrupt numbers (bit positions in `mip`/`mie`).
pub mod irq {
    #![allow(missing_docs)]
    pub const SSI: u64 = 1;
    pub const MSI: u64 = 3;
    pub const STI: u64 = 5;
    pub const MTI: u64 = 7;
    pub const SEI: u64 = 9;
    pub const MEI: u64 = 11;
}

/// The interrupt bit of `xcause`.
pub const INTERRUPT_BIT: u64 = 1 << 63;

/// A synchronous exception: cause code and the value for `xtval`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exception {
    /// Exception code (see [`cause`]).
    pub cause: u64,
    /// Trap value written to `xtval`.
    pub tval: u64,
}

impl Exception {
    /// Illegal instruction with the instruction bits as `xtval`.
    pub fn illegal(raw: u32) -> Exception {
        Exception {
            cause: cause::ILLEGAL_INSN,
            tval: raw as u64,
        }
    }
}

/// Interrupt priority order (privileged spec 3.1.9: MEI, MSI, MTI, SEI, SSI, STI).
const PRIORITY: [u64; 6] = [irq::MEI, irq::MSI, irq::MTI, irq::SEI, irq::SSI, irq::STI];

impl Hart {
    /// The interrupt the hart must take now, if any (privileged spec 3.1.9).
    pub(crate) fn pending_interrupt(&self) -> Option<u64> {
        let pending = self.mip() & self.csr.mie;
        if pending == 0 {
            return None;
        }
        let m_enabled =
            self.prv < PrivilegeMode::Machine || self.csr.mstatus & crate::csr::MSTATUS_MIE != 0;
        let s_enabled = self.prv < PrivilegeMode::Supervisor
            || (self.prv == PrivilegeMode::Supervisor
                && self.csr.mstatus & crate::csr::MSTATUS_SIE != 0);
        let m_pending = if m_enabled {
            pending & !self.csr.mideleg
        } else {
            0
        };
        let s_pending = if s_enabled {
            pending & self.csr.mideleg
        } else {
            0
        };
        // M-level interrupts outrank S-level ones; within a level use the fixed order.
        for set in [m_pending, s_pending] {
            if set != 0 {
                for i in PRIORITY {
                    if set & (1 << i) != 0 {
                        return Some(i);
                    }
                }
            }
        }
        None
    }

    /// Enter a trap: exception (`interrupt == false`) or interrupt `code`.
    pub(crate) fn take_trap(&mut self, code: u64, tval: u64, interrupt: bool) {
        use crate::csr::*;
        self.reservation = None;
        let deleg = if interrupt {
            self.csr.mideleg
        } else {
            self.csr.medeleg
        };
        let to_s = self.prv <= PrivilegeMode::Supervisor && (deleg >> code) & 1 != 0;
        let xcause = code | if interrupt { INTERRUPT_BIT } else { 0 };
        let s = &mut self.csr.mstatus;
        if to_s {
            self.csr.sepc = self.pc;
            self.csr.scause = xcause;
            self.csr.stval = tval;
            let sie = (*s & MSTATUS_SIE) != 0;
            *s = set_bit(*s, MSTATUS_SPIE, sie);
            *s &= !MSTATUS_SIE;
            *s = set_bit(*s, MSTATUS_SPP, self.prv == PrivilegeMode::Supervisor);
            self.pc = tvec_target(self.csr.stvec, code, interrupt);
            self.prv = PrivilegeMode::Supervisor;
        } else {
            self.csr.mepc = self.pc;
            self.csr.mcause = xcause;
            self.csr.mtval = tval;
            let mie = (*s & MSTATUS_MIE) != 0;
            *s = set_bit(*s, MSTATUS_MPIE, mie);
            *s &= !MSTATUS_MIE;
            *s = (*s & !MSTATUS_MPP) | ((self.prv as u64) << MSTATUS_MPP_SHIFT);
            self.pc = tvec_target(self.csr.mtvec, code, interrupt);
            self.prv = PrivilegeMode::Machine;
        }
        self.update_translation_context();
    }

    /// MRET (privileged spec 3.3.2).
    pub(crate) fn do_mret(&mut self) {
        use crate::csr::*;
        let s = self.csr.mstatus;
        let mpp = PrivilegeMode::from_bits((s & MSTATUS_MPP) >> MSTATUS_MPP_SHIFT);
        let mut n = set_bit(s, MSTATUS_MIE, s & MSTATUS_MPIE != 0);
        n |= MSTATUS_MPIE;
        n &= !MSTATUS_MPP; // least-privileged supported mode: U
        if mpp != PrivilegeMode::Machine {
            n &= !MSTATUS_MPRV;
        }
        self.csr.mstatus = n;
        self.prv = mpp;
        self.pc = self.csr.mepc;
        self.update_translation_context();
    }

    /// SRET (privileged spec 3.3.2 and 4.1.1).
    pub(crate) fn do_sret(&mut self) {
        use crate::csr::*;
        let s = self.csr.mstatus;
        let spp = if s & MSTATUS_SPP != 0 {
            PrivilegeMode::Supervisor
        } else {
            PrivilegeMode::User
        };
        let mut n = set_bit(s, MSTATUS_SIE, s & MSTATUS_SPIE != 0);
        n |= MSTATUS_SPIE;
        n &= !MSTATUS_SPP;
        n &= !MSTATUS_MPRV; // the new mode is never M
        self.csr.mstatus = n;
        self.prv = spp;
        self.pc = self.csr.sepc;
        self.update_translation_context();
    }
}

fn set_bit(v: u64, mask: u64, on: bool) -> u64 {
    if on {
        v | mask
    } else {
        v & !mask
    }
}

/// `xtvec` target: vectored mode sends interrupts to BASE + 4 * cause.
fn tvec_target(tvec: u64, code: u64, interrupt: bool) -> u64 {
    let base = tvec & !3;
    if interrupt && tvec & 3 == 1 {
        base.wrapping_add(4 * code)
    } else {
        base
    }
}
