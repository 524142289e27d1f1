//! Instruction semantics. `execute` is the single dispatch point of the interpreter loop;
//! the bodies live in one file per extension: [`base`] (RV64I + M), [`atomic`] (A),
//! [`float`] (F and D), [`system`] (Zicsr, Zifencei and the privileged instructions),
//! [`hypervisor`] (the memory accesses of HLV, HLVX and HSV).

mod atomic;
mod base;
mod float;
mod hypervisor;
mod system;

use crate::decode::{Insn, Op};
use crate::hart::{Ctl, Hart};
use crate::trap::Exception;

/// A conditional branch arm of [`Hart::execute`]: taken, the pc moves by the offset; not
/// taken, the arm falls through to the common `next`. With `CTR` (the loop variant that checks
/// CTR) the current mode's mask decides whether the branch is recorded (types 5 and 4), out of
/// line. Without it the code is exactly the plain branch: the helper function this replaced
/// cost the interpreter about 10% of wall time on a compute-bound guest (code layout).
macro_rules! branch {
    ($h:ident, $i:ident, $ctr:ident, $taken:expr) => {{
        use crate::ctr::ty;
        if $taken {
            $h.pc = $h.pc.wrapping_add($i.imm as i64 as u64);
            if $ctr && $h.ctr_mask & (1 << ty::TAKEN_BRANCH) != 0 {
                $h.ctr_taken_branch($i.imm as i64 as u64);
            }
            return Ok(());
        }
        if $ctr && $h.ctr_mask & (1 << ty::NOT_TAKEN_BRANCH) != 0 {
            $h.pc = $h.pc.wrapping_add($i.len as u64);
            $h.ctr_not_taken_branch($i.len as u64);
            return Ok(());
        }
    }};
}

impl Hart {
    #[inline(always)]
    fn rs1(&self, i: &Insn) -> u64 {
        // Register numbers are < 33 by construction; the mask lets the compiler drop the
        // bounds check (the register file has 64 slots).
        self.x[i.rs1 as usize & 63]
    }
    #[inline(always)]
    fn rs2(&self, i: &Insn) -> u64 {
        self.x[i.rs2 as usize & 63]
    }
    #[inline(always)]
    fn set_rd(&mut self, i: &Insn, v: u64) {
        self.x[i.rd as usize & 63] = v;
    }
    #[inline(always)]
    fn next(&mut self, i: &Insn) {
        self.pc = self.pc.wrapping_add(i.len as u64);
    }

    /// Execute one decoded instruction at `self.pc`. `CTR`: whether to check for CTR records
    /// of jumps and branches (the loop is instantiated twice, so that a mode that records
    /// nothing pays nothing).
    #[inline(always)]
    pub(crate) fn execute<const CTR: bool>(&mut self, i: Insn) -> Result<(), Ctl> {
        use Op::*;
        match i.op {
            Illegal => return Err(Exception::illegal(i.bits()).into()),
            Sctrclr => return self.exec_sctrclr(&i),
            Lui => self.set_rd(&i, i.imm as i64 as u64),
            Auipc => self.set_rd(&i, self.pc.wrapping_add(i.imm as i64 as u64)),
            Jal => {
                let link = self.pc.wrapping_add(i.len as u64);
                self.pc = self.pc.wrapping_add(i.imm as i64 as u64);
                self.set_rd(&i, link);
                // CTR: `fmt` holds the transfer type (table 10).
                if CTR && (self.ctr_mask >> i.fmt) & 1 != 0 {
                    self.ctr_jump(i.rd, i.len, i.fmt);
                }
                return Ok(());
            }
            Jalr => {
                let link = self.pc.wrapping_add(i.len as u64);
                self.pc = self.rs1(&i).wrapping_add(i.imm as i64 as u64) & !1;
                self.set_rd(&i, link);
                if CTR && (self.ctr_mask >> i.fmt) & 1 != 0 {
                    self.ctr_jump(i.rd, i.len, i.fmt);
                }
                return Ok(());
            }
            Beq => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, a == b);
            }
            Bne => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, a != b);
            }
            Blt => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, (a as i64) < (b as i64));
            }
            Bge => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, (a as i64) >= (b as i64));
            }
            Bltu => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, a < b);
            }
            Bgeu => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, a >= b);
            }
            Lb => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 1)? as i8 as u64;
                self.set_rd(&i, v);
            }
            Lh => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 2)? as i16 as u64;
                self.set_rd(&i, v);
            }
            Lw => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 4)? as i32 as u64;
                self.set_rd(&i, v);
            }
            Ld => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 8)?;
                self.set_rd(&i, v);
            }
            Lbu => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 1)?;
                self.set_rd(&i, v);
            }
            Lhu => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 2)?;
                self.set_rd(&i, v);
            }
            Lwu => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 4)?;
                self.set_rd(&i, v);
            }
            Sb => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                self.store(addr, 1, self.rs2(&i))?;
            }
            Sh => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                self.store(addr, 2, self.rs2(&i))?;
            }
            Sw => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                self.store(addr, 4, self.rs2(&i))?;
            }
            Sd => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                self.store(addr, 8, self.rs2(&i))?;
            }
            Addi => self.set_rd(&i, base::op_imm(Addi, self.rs1(&i), i.imm)),
            Slti => self.set_rd(&i, base::op_imm(Slti, self.rs1(&i), i.imm)),
            Sltiu => self.set_rd(&i, base::op_imm(Sltiu, self.rs1(&i), i.imm)),
            Xori => self.set_rd(&i, base::op_imm(Xori, self.rs1(&i), i.imm)),
            Ori => self.set_rd(&i, base::op_imm(Ori, self.rs1(&i), i.imm)),
            Andi => self.set_rd(&i, base::op_imm(Andi, self.rs1(&i), i.imm)),
            Slli => self.set_rd(&i, base::op_imm(Slli, self.rs1(&i), i.imm)),
            Srli => self.set_rd(&i, base::op_imm(Srli, self.rs1(&i), i.imm)),
            Srai => self.set_rd(&i, base::op_imm(Srai, self.rs1(&i), i.imm)),
            Addiw => self.set_rd(&i, base::op_imm(Addiw, self.rs1(&i), i.imm)),
            Slliw => self.set_rd(&i, base::op_imm(Slliw, self.rs1(&i), i.imm)),
            Srliw => self.set_rd(&i, base::op_imm(Srliw, self.rs1(&i), i.imm)),
            Sraiw => self.set_rd(&i, base::op_imm(Sraiw, self.rs1(&i), i.imm)),
            Add => self.set_rd(&i, base::op_reg(Add, self.rs1(&i), self.rs2(&i))),
            Sub => self.set_rd(&i, base::op_reg(Sub, self.rs1(&i), self.rs2(&i))),
            Sll => self.set_rd(&i, base::op_reg(Sll, self.rs1(&i), self.rs2(&i))),
            Slt => self.set_rd(&i, base::op_reg(Slt, self.rs1(&i), self.rs2(&i))),
            Sltu => self.set_rd(&i, base::op_reg(Sltu, self.rs1(&i), self.rs2(&i))),
            Xor => self.set_rd(&i, base::op_reg(Xor, self.rs1(&i), self.rs2(&i))),
            Srl => self.set_rd(&i, base::op_reg(Srl, self.rs1(&i), self.rs2(&i))),
            Sra => self.set_rd(&i, base::op_reg(Sra, self.rs1(&i), self.rs2(&i))),
            Or => self.set_rd(&i, base::op_reg(Or, self.rs1(&i), self.rs2(&i))),
            And => self.set_rd(&i, base::op_reg(And, self.rs1(&i), self.rs2(&i))),
            Addw => self.set_rd(&i, base::op_reg(Addw, self.rs1(&i), self.rs2(&i))),
            Subw => self.set_rd(&i, base::op_reg(Subw, self.rs1(&i), self.rs2(&i))),
            Sllw => self.set_rd(&i, base::op_reg(Sllw, self.rs1(&i), self.rs2(&i))),
            Srlw => self.set_rd(&i, base::op_reg(Srlw, self.rs1(&i), self.rs2(&i))),
            Sraw => self.set_rd(&i, base::op_reg(Sraw, self.rs1(&i), self.rs2(&i))),
            // One arm per op above so that the inner `match` folds away; M is rarer.
            Mul | Mulh | Mulhsu | Mulhu | Div | Divu | Rem | Remu | Mulw | Divw | Divuw | Remw
            | Remuw => {
                let v = base::op_muldiv(i.op, self.rs1(&i), self.rs2(&i));
                self.set_rd(&i, v);
            }
            Fence => {}
            Lr | Sc | AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu
            | AmoMaxu => {
                self.exec_atomic(&i)?;
            }
            Flw | Fld | Fsw | Fsd | Fmadd | Fmsub | Fnmsub | Fnmadd | Fadd | Fsub | Fmul | Fdiv
            | Fsqrt | Fsgnj | Fsgnjn | Fsgnjx | Fmin | Fmax | FcvtFF | Feq | Flt | Fle | Fclass
            | FcvtIF | FcvtFI | FmvXF | FmvFX => {
                self.exec_float(&i)?;
            }
            FenceI | Ecall | Ebreak | Mret | Sret | Wfi | SfenceVma | Csrrw | Csrrs | Csrrc
            | Csrrwi | Csrrsi | Csrrci | HlvB | HlvBu | HlvH | HlvHu | HlvxHu | HlvW | HlvWu
            | HlvxWu | HlvD | HsvB | HsvH | HsvW | HsvD | HfenceVvma | HfenceGvma => {
                return self.exec_system(&i)
            }
        }
        self.next(&i);
        Ok(())
    }
}
