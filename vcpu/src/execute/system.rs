//! SYSTEM instructions: Zicsr, Zifencei, ECALL/EBREAK, MRET/SRET, WFI and SFENCE.VMA
//! (unprivileged "Zicsr" and "Zifencei" chapters; privileged spec 3.3), and the H extension's
//! HFENCE, HLV/HLVX/HSV (whose memory accesses are in `hypervisor.rs`) with the
//! virtual-instruction rules of the H extension's "Trap Cause Codes" section.

use crate::csr::{MSTATUS_TSR, MSTATUS_TVM, MSTATUS_TW};
use crate::decode::{Insn, Op, X0_SINK};
use crate::hart::{Ctl, Hart, PrivilegeMode};
use crate::hypervisor::{HSTATUS_HU, HSTATUS_VTSR, HSTATUS_VTVM, HSTATUS_VTW};
use crate::trap::{cause, Exception};

const MIP: u16 = 0x344;
const SEIP: u64 = 1 << crate::trap::irq::SEI;

impl Hart {
    pub(super) fn exec_system(&mut self, i: &Insn) -> Result<(), Ctl> {
        let illegal = || Ctl::Exception(Exception::illegal(i.bits()));
        let virtual_insn = || Ctl::Exception(Exception::virtual_insn(i.bits()));
        match i.op {
            Op::Csrrw | Op::Csrrs | Op::Csrrc | Op::Csrrwi | Op::Csrrsi | Op::Csrrci => {
                return self.exec_csr(i)
            }
            // Zifencei. The decode cache holds no stale state: a hit needs the slot's raw
            // bits to equal the bits just fetched from memory, and the decoding is a function
            // of those bits alone (see `Hart::fetch`). Translated blocks check their code at
            // their next entry (`jit::guard`): other harts' and devices' stores are visible
            // to this hart's fetches from here on.
            Op::FenceI => self.jit_code_sync(),
            Op::Ecall => {
                let cause = match (self.prv, self.virt) {
                    (PrivilegeMode::User, _) => cause::ECALL_U,
                    (PrivilegeMode::Supervisor, true) => cause::ECALL_VS,
                    (PrivilegeMode::Supervisor, false) => cause::ECALL_S,
                    (PrivilegeMode::Machine, _) => cause::ECALL_M,
                };
                return Err(Exception::new(cause, 0).into());
            }
            Op::Ebreak => return Err(Exception::new(cause::BREAKPOINT, self.pc).into()),
            Op::Mret => {
                // MRET is not HS-qualified, so it is illegal (not virtual) with V=1 too.
                if self.prv != PrivilegeMode::Machine {
                    return Err(illegal());
                }
                self.do_mret();
                return Err(Ctl::Break);
            }
            Op::Sret => {
                // HS: TSR traps (illegal); VS: VTSR traps (virtual); VU: always virtual.
                let tsr = self.csr.mstatus & MSTATUS_TSR != 0;
                let vtsr = self.csr.h.hstatus & HSTATUS_VTSR != 0;
                match (self.prv, self.virt) {
                    (PrivilegeMode::User, false) => return Err(illegal()),
                    (PrivilegeMode::User, true) => return Err(virtual_insn()),
                    (PrivilegeMode::Supervisor, false) if tsr => return Err(illegal()),
                    (PrivilegeMode::Supervisor, true) if vtsr => return Err(virtual_insn()),
                    _ => {}
                }
                self.do_sret();
                return Err(Ctl::Break);
            }
            Op::Wfi => {
                // The "implementation-specific bounded time" of privileged spec 3.1.6.5 (and
                // of hstatus.VTW) is 0: a trapping WFI traps at once. mstatus.TW outranks VTW.
                let tw = self.csr.mstatus & MSTATUS_TW != 0;
                let vtw = self.csr.h.hstatus & HSTATUS_VTW != 0;
                match (self.prv, self.virt) {
                    (PrivilegeMode::Machine, _) => {}
                    (_, _) if tw => return Err(illegal()),
                    (PrivilegeMode::User, false) => return Err(illegal()),
                    (PrivilegeMode::User, true) => return Err(virtual_insn()),
                    (PrivilegeMode::Supervisor, true) if vtw => return Err(virtual_insn()),
                    _ => {}
                }
                self.next(i);
                // Resume at once when an interrupt is pending at any privilege level, whatever
                // the global enables (privileged spec 3.3.3; with the AIA's virtual interrupts,
                // `mtopi` or `stopi` not zero).
                return Err(if self.interrupt_pending_any_level() {
                    Ctl::Break
                } else {
                    Ctl::Wfi
                });
            }
            Op::SfenceVma => {
                let tvm = self.csr.mstatus & MSTATUS_TVM != 0;
                let vtvm = self.csr.h.hstatus & HSTATUS_VTVM != 0;
                match (self.prv, self.virt) {
                    (PrivilegeMode::User, false) => return Err(illegal()),
                    (PrivilegeMode::User, true) => return Err(virtual_insn()),
                    (PrivilegeMode::Supervisor, false) if tvm => return Err(illegal()),
                    (PrivilegeMode::Supervisor, true) if vtvm => return Err(virtual_insn()),
                    _ => {}
                }
                // rs1 names an address: its leaf only (for one address space when rs2
                // names one; dropping it in all is allowed). Otherwise everything.
                if i.rs1 != 0 {
                    let va = self.x[i.rs1 as usize];
                    self.flush_tlb_page(va);
                } else {
                    self.flush_tlb();
                }
            }
            Op::HfenceVvma | Op::HfenceGvma => {
                // Valid in M and HS only (GVMA also needs TVM=0 in HS); virtual-instruction
                // with V=1, illegal in U (H extension, "Hypervisor Memory-Management Fence
                // Instructions"). The TLB holds combined translations: flush it all.
                let tvm = self.csr.mstatus & MSTATUS_TVM != 0;
                match (self.prv, self.virt) {
                    (_, true) => return Err(virtual_insn()),
                    (PrivilegeMode::User, false) => return Err(illegal()),
                    (PrivilegeMode::Supervisor, false) if i.op == Op::HfenceGvma && tvm => {
                        return Err(illegal())
                    }
                    _ => {}
                }
                self.flush_tlb();
            }
            Op::HlvB
            | Op::HlvBu
            | Op::HlvH
            | Op::HlvHu
            | Op::HlvxHu
            | Op::HlvW
            | Op::HlvWu
            | Op::HlvxWu
            | Op::HlvD
            | Op::HsvB
            | Op::HsvH
            | Op::HsvW
            | Op::HsvD => {
                if self.virt {
                    return Err(virtual_insn());
                }
                if self.prv == PrivilegeMode::User && self.csr.h.hstatus & HSTATUS_HU == 0 {
                    return Err(illegal());
                }
                self.exec_hlv_hsv(i)?;
            }
            _ => return Err(illegal()),
        }
        self.next(i);
        Ok(())
    }

    /// SCTRCLR (Smctr 4.1 "Supervisor CTR Clear Instruction" and 5
    /// "State Enable Access Control"): illegal in U-mode and below M without
    /// `mstateen0.CTR`; virtual-instruction in VU-mode, and in VS-mode without
    /// `hstateen0.CTR`. Out of line: inlined into the interpreter loop it costs every
    /// instruction about 6 host instructions (callgrind) through worse register allocation.
    #[cold]
    #[inline(never)]
    pub(super) fn exec_sctrclr(&mut self, i: &Insn) -> Result<(), Ctl> {
        use crate::csr::stateen::STATEEN0_CTR;
        let illegal = || Ctl::Exception(Exception::illegal(i.bits()));
        let virtual_insn = || Ctl::Exception(Exception::virtual_insn(i.bits()));
        if !self.ctr.implemented() {
            return Err(illegal());
        }
        let m_ok = self.prv == PrivilegeMode::Machine || self.csr.mstateen[0] & STATEEN0_CTR != 0;
        match (self.prv, self.virt) {
            (PrivilegeMode::User, false) => return Err(illegal()),
            _ if !m_ok => return Err(illegal()),
            (PrivilegeMode::User, true) => return Err(virtual_insn()),
            (PrivilegeMode::Supervisor, true) if self.read_hstateen(0) & STATEEN0_CTR == 0 => {
                return Err(virtual_insn())
            }
            _ => {}
        }
        self.sctrclr();
        self.next(i);
        Ok(())
    }

    /// CSRRW/CSRRS/CSRRC and their immediate forms. CSRRW with rd = x0 does not read; the
    /// set/clear forms with rs1 = x0 (or uimm = 0) do not write (Zicsr chapter).
    pub(crate) fn exec_csr(&mut self, i: &Insn) -> Result<(), Ctl> {
        let num = (i.imm as u32 & 0xfff) as u16;
        let operand = match i.op {
            Op::Csrrwi | Op::Csrrsi | Op::Csrrci => i.rs1 as u64,
            _ => self.x[i.rs1 as usize],
        };
        let writes = match i.op {
            Op::Csrrw | Op::Csrrwi => true,
            _ => i.rs1 != 0,
        };
        let reads = !matches!(i.op, Op::Csrrw | Op::Csrrwi) || i.rd != X0_SINK;
        let desc = self.csr_access(num, writes).map_err(|f| match f {
            crate::csr::CsrFault::Illegal => Exception::illegal(i.bits()),
            crate::csr::CsrFault::Virtual => Exception::virtual_insn(i.bits()),
        })?;
        // Host time: a read of `time` may read the host clock (`Hart::read_time`); if that
        // reaches a timer deadline, the chunk ends after it, so that the interrupt comes
        // before the guest sees more of its time.
        let due = num == vcpu_api::csr::TIME && self.read_time();
        let old = if reads || writes {
            (desc.read)(self)
        } else {
            0
        };
        if writes {
            // Only the software-writable SEIP bit takes part in a read-modify-write of mip,
            // not the platform's line (privileged spec 3.1.9).
            let base = if num == MIP {
                (old & !SEIP) | (self.csr.mip & SEIP)
            } else {
                old
            };
            let new = match i.op {
                Op::Csrrw | Op::Csrrwi => operand,
                Op::Csrrs | Op::Csrrsi => base | operand,
                _ => base & !operand,
            };
            if let Some(w) = desc.write {
                w(self, new);
            }
        }
        if reads {
            self.x[i.rd as usize] = old;
        }
        self.next(i);
        // A write may have made an interrupt pending or enabled: leave the chunk.
        if due || (writes && self.csr_write_ends_chunk(num)) {
            Err(Ctl::Break)
        } else {
            Ok(())
        }
    }

    /// Whether a write of CSR `num` that just executed ends the chunk (`Ctl::Break`), so that
    /// the loop's boundary work comes right after it: the interrupts it may have enabled or
    /// made pending, and for most CSRs the state a chunk is run with (CTR recording, the
    /// performance monitor's variant, triggers). A write of `sstatus` (with V=1 `vsstatus`)
    /// changes none of that state: its SUM and MXR reach the TLB context at once and each
    /// translated F/D instruction checks FS itself. Linux writes it to mask and unmask
    /// interrupts, about 190 000 times a boot. Such a write that leaves SIE clear enables
    /// nothing; one that leaves it set ends the chunk when an interrupt is now pending and
    /// enabled, or when another hart has posted an interrupt, an MSI or a fence to this
    /// one, which the boundary takes in, as before.
    #[inline]
    fn csr_write_ends_chunk(&self, num: u16) -> bool {
        if num != vcpu_api::csr::SSTATUS {
            return true;
        }
        let status = if self.virt {
            self.csr.h.vsstatus
        } else {
            self.csr.mstatus
        };
        status & crate::csr::MSTATUS_SIE != 0
            && (self.mailbox.has_posted()
                || self.mailbox.flush_wanted().is_some()
                || self.pending_interrupt().is_some())
    }
}
