//! Exception and interrupt causes (privileged spec 3.1.15, "Machine Cause Register", table
//! "Machine cause register (mcause) values after trap"; the H extension's additions).

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
    // H extension.
    pub const ECALL_VS: u64 = 10;
    pub const INSN_GUEST_PAGE_FAULT: u64 = 20;
    pub const LOAD_GUEST_PAGE_FAULT: u64 = 21;
    pub const VIRTUAL_INSN: u64 = 22;
    pub const STORE_GUEST_PAGE_FAULT: u64 = 23;
}

/// Interrupt numbers (bit positions in `mip`/`mie`).
pub mod irq {
    #![allow(missing_docs)]
    pub const SSI: u64 = 1;
    pub const VSSI: u64 = 2;
    pub const MSI: u64 = 3;
    pub const STI: u64 = 5;
    pub const VSTI: u64 = 6;
    pub const MTI: u64 = 7;
    pub const SEI: u64 = 9;
    pub const VSEI: u64 = 10;
    pub const MEI: u64 = 11;
    pub const SGEI: u64 = 12;
    /// Local counter overflow interrupt (Sscofpmf).
    pub const LCOFI: u64 = 13;
}

/// The interrupt bit of `xcause`.
pub const INTERRUPT_BIT: u64 = 1 << 63;

/// The VS-level interrupts (`hvip`/`hip` bits VSSIP, VSTIP, VSEIP).
pub const VS_INTERRUPTS: u64 = (1 << irq::VSSI) | (1 << irq::VSTI) | (1 << irq::VSEI);

/// The name of exception code `cause` as the privileged spec's table of `mcause` values
/// gives it (shortened: "store/AMO" as "store"), e.g. `load guest-page fault`; `None` for
/// reserved and custom codes.
pub fn exception_name(cause: u64) -> Option<&'static str> {
    Some(match cause {
        0 => "instruction address misaligned",
        1 => "instruction access fault",
        2 => "illegal instruction",
        3 => "breakpoint",
        4 => "load address misaligned",
        5 => "load access fault",
        6 => "store address misaligned",
        7 => "store access fault",
        8 => "environment call from U-mode",
        9 => "environment call from S-mode",
        10 => "environment call from VS-mode",
        11 => "environment call from M-mode",
        12 => "instruction page fault",
        13 => "load page fault",
        15 => "store page fault",
        16 => "double trap",
        18 => "software check",
        19 => "hardware error",
        20 => "instruction guest-page fault",
        21 => "load guest-page fault",
        22 => "virtual instruction",
        23 => "store guest-page fault",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csr;

    #[test]
    fn exception_names() {
        assert_eq!(
            exception_name(cause::ILLEGAL_INSN),
            Some("illegal instruction")
        );
        assert_eq!(
            exception_name(cause::VIRTUAL_INSN),
            Some("virtual instruction")
        );
        assert_eq!(exception_name(14), None);
        assert_eq!(exception_name(64), None);
    }

    #[test]
    fn interrupt_numbers_match_the_pending_bits() {
        assert_eq!(1 << irq::LCOFI, csr::MIP_LCOFIP);
        assert_eq!(1 << irq::VSEI, csr::MIP_VSEIP);
        assert_eq!(
            VS_INTERRUPTS,
            csr::MIP_VSSIP | csr::MIP_VSTIP | csr::MIP_VSEIP
        );
    }
}
