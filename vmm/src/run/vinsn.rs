//! Virtual-instruction exits of `vmm run` (cause 22): the VMM's trap policy and the two
//! instructions it emulates.
//!
//! A hypervisor may ask the hart to trap a guest's WFI (`hstatus.VTW` = 1) and its reads of
//! `time` (`hcounteren.TM` = 0) so that it can idle the guest and present its own clock.
//! With [`GuestPolicy::trap_wfi`] the VMM emulates a VS-mode WFI as idling: virtual time
//! advances to the guest's next timer deadline ([`vcpu_api::Vcpu::skip_to_timer`]) and the
//! guest resumes after the WFI. With [`GuestPolicy::trap_time`] a read of `time` (from
//! VS-mode, or from VU-mode when the guest's `scounteren.TM` lets VU read it) gets the
//! guest's time ([`vcpu_api::Vcpu::guest_time`]) in `rd`. Every other virtual-instruction exit
//! becomes an illegal-instruction exception in the guest, `stval` = the instruction bits.

use crate::backend::Hart;
use vcpu_api::{GuestTraps, Vcpu};

/// Which guest instructions the VMM asks the hart to trap (VMM policy; all off by default,
/// which leaves the hart's hosted-mode defaults: `hstatus.VTW` = 0, `hcounteren` = 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GuestPolicy {
    /// Run the guest with `hstatus.VTW` = 1: a VS-mode WFI exits and the VMM emulates it.
    pub trap_wfi: bool,
    /// Run the guest with `hcounteren.TM` = 0: reads of `time` exit and the VMM emulates them.
    pub trap_time: bool,
}

/// The WFI instruction.
pub const WFI: u32 = 0x1050_0073;
/// `time`.
const CSR_TIME: u32 = 0xc01;
/// The counters a hosted guest reads directly by default: `cycle`, `time`, `instret`.
const GUEST_COUNTEREN: u64 = 0b111;
/// The `TM` bit of the counter-enable registers.
const COUNTEREN_TM: u64 = 1 << 1;

/// If `insn` is a read of `time` that writes nothing (CSRRS/CSRRC with `rs1` = x0,
/// CSRRSI/CSRRCI with `uimm` = 0), its destination register.
pub fn time_read_rd(insn: u32) -> Option<usize> {
    let opcode = insn & 0x7f;
    let funct3 = (insn >> 12) & 7;
    let rs1 = (insn >> 15) & 0x1f;
    let csr = insn >> 20;
    let read_only = matches!(funct3, 2 | 3 | 6 | 7) && rs1 == 0;
    (opcode == 0x73 && csr == CSR_TIME && read_only).then_some(((insn >> 7) & 0x1f) as usize)
}

/// Applies `policy` to a hosted-mode hart before it runs.
pub(crate) fn apply(hart: &mut Hart, policy: &GuestPolicy) {
    hart.set_guest_traps(GuestTraps {
        wfi: policy.trap_wfi,
        ..GuestTraps::default()
    });
    if policy.trap_time {
        hart.set_guest_counteren(GUEST_COUNTEREN & !COUNTEREN_TM);
    }
}

/// Whether VU-mode may read `time` by the guest's own rule (`scounteren.TM`).
pub(crate) fn vu_may_read_time(hart: &Hart) -> bool {
    hart.guest_scounteren() & COUNTEREN_TM != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_reads() {
        // rdtime a0 = csrrs a0, time, x0
        assert_eq!(time_read_rd(0xc010_2573), Some(10));
        // csrrc t0, time, x0; csrrsi s1, time, 0; csrrci x0, time, 0
        assert_eq!(time_read_rd(0xc010_32f3), Some(5));
        assert_eq!(time_read_rd(0xc010_64f3), Some(9));
        assert_eq!(time_read_rd(0xc010_7073), Some(0));
        // csrrs a0, time, a1 (a write attempt); csrrw a0, time, x0; rdcycle a0
        assert_eq!(time_read_rd(0xc015_a573), None);
        assert_eq!(time_read_rd(0xc010_1573), None);
        assert_eq!(time_read_rd(0xc000_2573), None);
        assert_eq!(time_read_rd(WFI), None);
    }
}
