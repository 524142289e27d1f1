//! Instruction semantics. `execute` is the single dispatch point of the interpreter loop;
//! the bodies live in one file per extension: [`base`] (RV64I + M), [`atomic`] (A),
//! [`float`] (F and D), [`system`] (Zicsr, Zifencei and the privileged instructions).

mod atomic;
mod base;
mod float;
mod system;

use crate::decode::{Insn, Op};
use crate::hart::{Ctl, Hart};
use crate::trap::Exception;

impl Hart {
    #[inline(always)]
    fn rs1(&self, i: &Insn) -> u64 {
        // SAFETY-free indexing: register numbers are < 33 by construction.
        self.x[i.rs1 as usize]
    }
    #[inline(always)]
    fn rs2(&self, i: &Insn) -> u64 {
        self.x[i.rs2 as usize]
    }
    #[inline(always)]
    fn set_rd(&mut self, i: &Insn, v: u64) {
        self.x[i.rd as usize] = v;
    }
    #[inline(always)]
    fn next(&mut self, i: &Insn) {
        self.pc = self.pc.wrapping_add(i.len as u64);
    }

    /// Execute one decoded instruction at `self.pc`.
    #[inline(always)]
    pub(crate) fn execute(&mut self, i: Insn) -> Result<(), Ctl> {
        use Op::*;
        match i.op {
            Illegal => return Err(Exception::illegal(i.raw).into()),
            Lui => self.set_rd(&i, i.imm as i64 as u64),
            Auipc => self.set_rd(&i, self.pc.wrapping_add(i.imm as i64 as u64)),
            Jal => {
                let link = self.pc.wrapping_add(i.len as u64);
                self.pc = self.pc.wrapping_add(i.imm as i64 as u64);
                self.set_rd(&i, link);
                return Ok(());
            }
            Jalr => {
                let link = self.pc.wrapping_add(i.len as u64);
                self.pc = self.rs1(&i).wrapping_add(i.imm as i64 as u64) & !1;
                self.set_rd(&i, link);
                return Ok(());
            }
            Beq | Bne | Blt | Bge | Bltu | Bgeu => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                let taken = match i.op {
                    Beq => a == b,
                    Bne => a != b,
                    Blt => (a as i64) < (b as i64),
                    Bge => (a as i64) >= (b as i64),
                    Bltu => a < b,
                    _ => a >= b,
                };
                if taken {
                    self.pc = self.pc.wrapping_add(i.imm as i64 as u64);
                    return Ok(());
                }
            }
            Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = match i.op {
                    Lb => self.load(addr, 1)? as i8 as u64,
                    Lh => self.load(addr, 2)? as i16 as u64,
                    Lw => self.load(addr, 4)? as i32 as u64,
                    Ld => self.load(addr, 8)?,
                    Lbu => self.load(addr, 1)?,
                    Lhu => self.load(addr, 2)?,
                    _ => self.load(addr, 4)?,
                };
                self.set_rd(&i, v);
            }
            Sb | Sh | Sw | Sd => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let size = match i.op {
                    Sb => 1,
                    Sh => 2,
                    Sw => 4,
                    _ => 8,
                };
                self.store(addr, size, self.rs2(&i))?;
            }
            Addi | Slti | Sltiu | Xori | Ori | Andi | Slli | Srli | Srai | Addiw | Slliw | Srliw | Sraiw => {
                let v = base::op_imm(i.op, self.rs1(&i), i.imm);
                self.set_rd(&i, v);
            }
            Add | Sub | Sll | Slt | Sltu | Xor | Srl | Sra | Or | And | Addw | Subw | Sllw | Srlw | Sraw => {
                let v = base::op_reg(i.op, self.rs1(&i), self.rs2(&i));
                self.set_rd(&i, v);
            }
            Mul | Mulh | Mulhsu | Mulhu | Div | Divu | Rem | Remu | Mulw | Divw | Divuw | Remw | Remuw => {
                let v = base::op_muldiv(i.op, self.rs1(&i), self.rs2(&i));
                self.set_rd(&i, v);
            }
            Fence => {}
            Lr | Sc | AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu | AmoMaxu => {
                self.exec_atomic(&i)?;
            }
            Flw | Fld | Fsw | Fsd | Fmadd | Fmsub | Fnmsub | Fnmadd | Fadd | Fsub | Fmul | Fdiv | Fsqrt | Fsgnj
            | Fsgnjn | Fsgnjx | Fmin | Fmax | FcvtFF | Feq | Flt | Fle | Fclass | FcvtIF | FcvtFI | FmvXF | FmvFX => {
                self.exec_float(&i)?;
            }
            FenceI | Ecall | Ebreak | Mret | Sret | Wfi | SfenceVma | Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi
            | Csrrci => return self.exec_system(&i),
        }
        self.next(&i);
        Ok(())
    }
}
