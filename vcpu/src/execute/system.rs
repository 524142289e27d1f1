//! SYSTEM instructions: Zicsr, Zifencei, ECALL/EBREAK, MRET/SRET, WFI and SFENCE.VMA
//! (unprivileged "Zicsr" and "Zifencei" chapters; privileged spec 3.3).

use crate::csr::{MSTATUS_TSR, MSTATUS_TVM, MSTATUS_TW};
use crate::decode::{Insn, Op, X0_SINK};
use crate::hart::{Ctl, Hart, PrivilegeMode};
use crate::trap::{cause, Exception};

const MIP: u16 = 0x344;
const SEIP: u64 = 1 << crate::trap::irq::SEI;

impl Hart {
    pub(super) fn exec_system(&mut self, i: &Insn) -> Result<(), Ctl> {
        let illegal = || Ctl::Exception(Exception::illegal(i.bits()));
        match i.op {
            Op::Csrrw | Op::Csrrs | Op::Csrrc | Op::Csrrwi | Op::Csrrsi | Op::Csrrci => {
                return self.exec_csr(i)
            }
            Op::FenceI => self.flush_decode_cache(),
            Op::Ecall => {
                let cause = match self.prv {
                    PrivilegeMode::User => cause::ECALL_U,
                    PrivilegeMode::Supervisor => cause::ECALL_S,
                    PrivilegeMode::Machine => cause::ECALL_M,
                };
                return Err(Exception { cause, tval: 0 }.into());
            }
            Op::Ebreak => {
                return Err(Exception {
                    cause: cause::BREAKPOINT,
                    tval: self.pc,
                }
                .into())
            }
            Op::Mret => {
                if self.prv != PrivilegeMode::Machine {
                    return Err(illegal());
                }
                self.do_mret();
                return Err(Ctl::Break);
            }
            Op::Sret => {
                let tsr = self.csr.mstatus & MSTATUS_TSR != 0;
                match self.prv {
                    PrivilegeMode::User => return Err(illegal()),
                    PrivilegeMode::Supervisor if tsr => return Err(illegal()),
                    _ => {}
                }
                self.do_sret();
                return Err(Ctl::Break);
            }
            Op::Wfi => {
                // WFI in U-mode, or in S-mode with TW=1, raises illegal-instruction at once
                // (the "implementation-specific bounded time" of privileged spec 3.1.6.5 is 0).
                let tw = self.csr.mstatus & MSTATUS_TW != 0;
                match self.prv {
                    PrivilegeMode::User => return Err(illegal()),
                    PrivilegeMode::Supervisor if tw => return Err(illegal()),
                    _ => {}
                }
                self.next(i);
                // Resume at once when an interrupt is pending and enabled in mie, whatever
                // the global enables (privileged spec 3.3.3).
                return Err(if self.mip() & self.csr.mie != 0 {
                    Ctl::Break
                } else {
                    Ctl::Wfi
                });
            }
            Op::SfenceVma => {
                let tvm = self.csr.mstatus & MSTATUS_TVM != 0;
                match self.prv {
                    PrivilegeMode::User => return Err(illegal()),
                    PrivilegeMode::Supervisor if tvm => return Err(illegal()),
                    _ => {}
                }
                self.flush_tlb();
            }
            _ => return Err(illegal()),
        }
        self.next(i);
        Ok(())
    }

    /// CSRRW/CSRRS/CSRRC and their immediate forms. CSRRW with rd = x0 does not read; the
    /// set/clear forms with rs1 = x0 (or uimm = 0) do not write (Zicsr chapter).
    fn exec_csr(&mut self, i: &Insn) -> Result<(), Ctl> {
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
        let desc = self
            .csr_access(num, writes)
            .map_err(|_| Exception::illegal(i.bits()))?;
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
        if writes {
            Err(Ctl::Break)
        } else {
            Ok(())
        }
    }
}
