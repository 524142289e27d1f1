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

use super::VirtualInsnAction;
use crate::backend::Hart;
use vcpu_api::zicsr::CsrInsn;
use vcpu_api::{csr, GuestTraps, PrivilegeMode, Vcpu};

/// Which guest instructions the VMM asks the hart to trap (VMM policy, `vmm run --trap`;
/// all off by default, which leaves the hart's hosted-mode defaults: `hstatus.VTW`,
/// `VTSR`, `VTVM` = 0, `hcounteren` = 7), and whether it offers the guest Sstc
/// (`vmm run --sstc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GuestPolicy {
    /// Run the guest with `hstatus.VTW` = 1: a VS-mode WFI exits and the VMM emulates it.
    pub trap_wfi: bool,
    /// Run the guest with `hcounteren.TM` = 0: reads of `time` exit and the VMM emulates them.
    pub trap_time: bool,
    /// Run the guest with `hstatus.VTSR` = 1: a VS-mode SRET exits and the VMM emulates it
    /// ([`emulate_sret`]).
    pub trap_sret: bool,
    /// Run the guest with `hstatus.VTVM` = 1: VS-mode SFENCE.VMA, SINVAL.VMA and `satp`
    /// accesses exit and the VMM emulates them ([`emulate_vm`]).
    pub trap_vm: bool,
    /// Offer Sstc (`vmm run --sstc`, not part of `--trap`): the guest's `stimecmp` is the
    /// hart's `vstimecmp` (`menvcfg.STCE` = `henvcfg.STCE` = 1) and its timer interrupts
    /// come without an exit. Only while the guest may read `time` directly
    /// ([`GuestPolicy::sstc_offered`]). A new VM takes it from
    /// [`RunConfig::sstc`](super::RunConfig::sstc) (what `run_kernel_with_policy` is given
    /// here is replaced); a restored one from its snapshot.
    pub sstc: bool,
}

impl GuestPolicy {
    /// Reads `--trap`'s list (`wfi,time,sret,vm`, any subset; `none` for none).
    pub fn parse(list: &str) -> Result<GuestPolicy, String> {
        let mut policy = GuestPolicy::default();
        if list == "none" {
            return Ok(policy);
        }
        for name in list.split(',').map(str::trim) {
            match name {
                "wfi" => policy.trap_wfi = true,
                "time" => policy.trap_time = true,
                "sret" => policy.trap_sret = true,
                "vm" => policy.trap_vm = true,
                _ => {
                    return Err(format!(
                        "--trap takes a list of wfi, time, sret, vm (or none), got `{name}`"
                    ))
                }
            }
        }
        Ok(policy)
    }

    /// Whether the guest has Sstc: asked for ([`GuestPolicy::sstc`]) and `time` not trapped.
    /// With `hcounteren.TM` = 0 every VS-mode `stimecmp` access would raise a
    /// virtual-instruction exception (priv. spec, "Hypervisor Counter-Enable Register" and
    /// Sstc), so the guest is run as on a hart without Sstc: `menvcfg.STCE` = 0 (its
    /// `stimecmp` accesses are illegal-instruction) and no `sstc` in the device tree.
    pub fn sstc_offered(&self) -> bool {
        self.sstc && !self.trap_time
    }
}

/// The WFI instruction.
pub const WFI: u32 = 0x1050_0073;
/// The SRET instruction.
pub const SRET: u32 = 0x1020_0073;
/// `time`.
const CSR_TIME: u32 = 0xc01;
/// The counters a hosted guest reads directly by default: `cycle`, `time`, `instret`.
const GUEST_COUNTEREN: u64 = 0b111;
/// The `TM` bit of the counter-enable registers.
const COUNTEREN_TM: u64 = 1 << 1;
/// `menvcfg.STCE` and `henvcfg.STCE` (priv. spec, "Machine Environment Configuration
/// Register" and "Hypervisor Environment Configuration Register": bit 63 of both).
const ENVCFG_STCE: u64 = csr::MENVCFG_STCE;

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
        sret: policy.trap_sret,
        vm: policy.trap_vm,
    });
    if policy.trap_time {
        hart.set_guest_counteren(GUEST_COUNTEREN & !COUNTEREN_TM);
    }
    if policy.sstc_offered() {
        // Sstc's enables, `menvcfg.STCE` first (`henvcfg.STCE` is writable only while it is
        // 1): `stimecmp` (HS-level, the VMM's, left at its reset value u64::MAX) and the
        // guest's `vstimecmp`, compared with `time + htimedelta`.
        for num in [csr::MENVCFG, csr::HENVCFG] {
            let v = hart.host_csr(num).unwrap_or(0);
            hart.set_known_csr(num, v | ENVCFG_STCE);
        }
    }
}

/// `sstatus`/`vsstatus` bits of a trap return (priv. spec 12.1.1 "Supervisor Status
/// (sstatus) Register").
const SSTATUS_SIE: u64 = 1 << 1;
const SSTATUS_SPIE: u64 = 1 << 5;
const SSTATUS_SPP: u64 = 1 << 8;

/// Emulates a VS-mode SRET (trapped by `hstatus.VTSR`, priv. spec 21.2.1 "Hypervisor
/// Status (hstatus) Register") as the guest's own would have run (priv. spec 3.3.2
/// "Trap-Return Instructions", on the VS CSRs): `vsstatus.SIE` = `SPIE`, `SPIE` = 1,
/// `SPP` = 0 (U), the guest resumes at `vsepc` in the mode `SPP` named. Returns whether it
/// returns to VU-mode, and the target pc.
pub(crate) fn emulate_sret(hart: &mut Hart) -> (bool, u64) {
    let vsstatus = hart.host_csr(csr::VSSTATUS).unwrap_or(0);
    let to_vu = vsstatus & SSTATUS_SPP == 0;
    let sie = if vsstatus & SSTATUS_SPIE != 0 {
        SSTATUS_SIE
    } else {
        0
    };
    let new = (vsstatus & !(SSTATUS_SIE | SSTATUS_SPP)) | sie | SSTATUS_SPIE;
    let _ = hart.set_host_csr(csr::VSSTATUS, new);
    // vsepc reads back IALIGN-aligned (bit 0 always 0; bit 1 too without C).
    let target = hart.host_csr(csr::VSEPC).unwrap_or(0);
    let mode = if to_vu {
        PrivilegeMode::User
    } else {
        PrivilegeMode::Supervisor
    };
    hart.set_guest_privilege(mode);
    hart.set_pc(target);
    (to_vu, target)
}

/// Emulates a VS-mode instruction trapped by `hstatus.VTVM` (priv. spec 21.2.1): a CSR
/// instruction on `satp` runs on `vsatp` (WARL as the hart legalizes it; a write flushes
/// the guest's translations), SFENCE.VMA and SINVAL.VMA flush the guest's translations
/// (all of them: flushing more than asked is allowed, priv. spec 12.2.1 "Supervisor
/// Memory-Management Fence Instruction"). `None` if `insn` is neither; else the guest
/// resumes after it.
pub(crate) fn emulate_vm(hart: &mut Hart, insn: u32, pc: u64) -> Option<VirtualInsnAction> {
    let funct7 = insn >> 25;
    let is_fence = insn & 0x0000_7fff == 0x73 && (funct7 == 0x09 || funct7 == 0x0b);
    let action = if is_fence {
        hart.mailbox().request_flush();
        VirtualInsnAction::EmulatedSfence
    } else {
        let access = CsrInsn::decode(insn).filter(|c| c.csr == csr::SATP)?;
        let old = hart.host_csr(csr::VSATP).unwrap_or(0);
        if let Some(new) = access.emulate(hart, old) {
            let _ = hart.set_host_csr(csr::VSATP, new);
            hart.mailbox().request_flush();
        }
        VirtualInsnAction::EmulatedSatp
    };
    hart.set_pc(pc.wrapping_add(4));
    Some(action)
}

/// Whether VU-mode may read `time` by the guest's own rule (`scounteren.TM`).
pub(crate) fn vu_may_read_time(hart: &Hart) -> bool {
    hart.guest_scounteren() & COUNTEREN_TM != 0
}

/// The ABI names of the integer registers.
const XREG_NAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

/// The assembly of a SYSTEM-opcode instruction, the only kind that raises a
/// virtual-instruction exception (priv. spec 21.6.1 "Virtual-Instruction Exceptions"): a CSR
/// access with the CSR's name (`csrrs a0, sctrdepth, zero`), an instruction without operands
/// (`sret`, `wfi`, `sctrclr`), a fence with its registers (`hfence.vvma a0, zero`), or a
/// hypervisor load or store (`hlv.d a0, (a1)`). Anything else is shown as `insn 0x...`.
pub fn disassemble(insn: u32) -> String {
    let rd = XREG_NAMES[((insn >> 7) & 0x1f) as usize];
    let rs1_bits = (insn >> 15) & 0x1f;
    let rs1 = XREG_NAMES[rs1_bits as usize];
    let rs2_bits = (insn >> 20) & 0x1f;
    let rs2 = XREG_NAMES[rs2_bits as usize];
    let funct3 = (insn >> 12) & 7;
    let funct7 = insn >> 25;
    if insn & 0x7f != 0x73 {
        return format!("insn {insn:#010x}");
    }
    if funct3 != 0 && funct3 != 4 {
        let op = [
            "", "csrrw", "csrrs", "csrrc", "", "csrrwi", "csrrsi", "csrrci",
        ][funct3 as usize];
        let csr = (insn >> 20) as u16;
        let csr = match vcpu_api::csr::name(csr) {
            Some(name) => name.to_string(),
            None => format!("{csr:#x}"),
        };
        return if funct3 >= 5 {
            format!("{op} {rd}, {csr}, {rs1_bits}")
        } else {
            format!("{op} {rd}, {csr}, {rs1}")
        };
    }
    if funct3 == 4 {
        // Hypervisor virtual-machine loads and stores (priv. spec 8.3.1).
        let load = match (funct7, rs2_bits) {
            (0x30, 0) => Some("hlv.b"),
            (0x30, 1) => Some("hlv.bu"),
            (0x32, 0) => Some("hlv.h"),
            (0x32, 1) => Some("hlv.hu"),
            (0x32, 3) => Some("hlvx.hu"),
            (0x34, 0) => Some("hlv.w"),
            (0x34, 1) => Some("hlv.wu"),
            (0x34, 3) => Some("hlvx.wu"),
            (0x36, 0) => Some("hlv.d"),
            _ => None,
        };
        if let Some(op) = load {
            return format!("{op} {rd}, ({rs1})");
        }
        let store = match funct7 {
            0x31 => Some("hsv.b"),
            0x33 => Some("hsv.h"),
            0x35 => Some("hsv.w"),
            0x37 => Some("hsv.d"),
            _ => None,
        };
        return match store {
            Some(op) if insn & 0xf80 == 0 => format!("{op} {rs2}, ({rs1})"),
            _ => format!("insn {insn:#010x}"),
        };
    }
    let plain = match insn {
        0x0000_0073 => Some("ecall"),
        0x0010_0073 => Some("ebreak"),
        0x1020_0073 => Some("sret"),
        0x1040_0073 => Some("sctrclr"),
        0x1050_0073 => Some("wfi"),
        0x3020_0073 => Some("mret"),
        0x7b20_0073 => Some("dret"),
        0x1800_0073 => Some("sfence.w.inval"),
        0x1810_0073 => Some("sfence.inval.ir"),
        _ => None,
    };
    if let Some(op) = plain {
        return op.to_string();
    }
    let fence = match funct7 {
        0x09 => Some("sfence.vma"),
        0x0b => Some("sinval.vma"),
        0x11 => Some("hfence.vvma"),
        0x31 => Some("hfence.gvma"),
        0x13 => Some("hinval.vvma"),
        0x33 => Some("hinval.gvma"),
        _ => None,
    };
    match fence {
        Some(op) if insn & 0xf80 == 0 => format!("{op} {rs1}, {rs2}"),
        _ => format!("insn {insn:#010x}"),
    }
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

    #[test]
    fn disassembly() {
        assert_eq!(disassemble(0xc010_2573), "csrrs a0, time, zero");
        assert_eq!(disassemble(0x15f0_1073), "csrrw zero, sctrdepth, zero");
        assert_eq!(disassemble(0x15f2_d073), "csrrwi zero, sctrdepth, 5");
        assert_eq!(disassemble(0x1020_0073), "sret");
        assert_eq!(disassemble(0x1040_0073), "sctrclr");
        assert_eq!(disassemble(WFI), "wfi");
        // sfence.vma a0, a1; hfence.vvma zero, zero; hfence.gvma a0, zero
        assert_eq!(disassemble(0x12b5_0073), "sfence.vma a0, a1");
        assert_eq!(disassemble(0x2200_0073), "hfence.vvma zero, zero");
        assert_eq!(disassemble(0x6205_0073), "hfence.gvma a0, zero");
        // hlv.d a0, (a1); hlvx.wu t0, (a2); hsv.w a3, (a4)
        assert_eq!(disassemble(0x6c05_c573), "hlv.d a0, (a1)");
        assert_eq!(disassemble(0x6836_42f3), "hlvx.wu t0, (a2)");
        assert_eq!(disassemble(0x6ad7_4073), "hsv.w a3, (a4)");
        assert_eq!(disassemble(0x0000_0013), "insn 0x00000013");
        assert_eq!(disassemble(0x1000_0073), "insn 0x10000073");
    }
}
