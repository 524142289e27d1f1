//! Instruction semantics. `execute` is the single dispatch point of the interpreter loop;
//! the bodies live in one file per extension: [`base`] (RV64I + M), [`atomic`] (A),
//! [`float`] (F and D), [`system`] (Zicsr, Zifencei and the privileged instructions),
//! [`hypervisor`] (the memory accesses of HLV, HLVX and HSV).

mod atomic;
pub(crate) use atomic::Reservation;
mod base;
mod float;
mod hypervisor;
mod system;

use crate::decode::{Insn, Op};
use crate::hart::{Ctl, Hart};
use crate::pmu::model::Cost;
use crate::pmu::PMU_ARMS;
use crate::trap::Exception;

/// A conditional branch arm of [`Hart::execute`]: taken, the pc moves by the offset; not
/// taken, the arm falls through to the common `next`. With `CTR` (the loop variant that checks
/// CTR) the current mode's mask decides whether the branch is recorded (types 5 and 4), out of
/// line. Without it the code is exactly the plain branch: the helper function this replaced
/// cost the interpreter about 10% of wall time on a compute-bound guest (code layout).
macro_rules! branch {
    ($h:ident, $i:ident, $ctr:ident, $pmu:ident, $taken:expr) => {{
        use crate::ctr::ty;
        if $taken {
            if $pmu == PMU_ARMS {
                $h.pmu_branch($h.pc, true);
            }
            $h.pc = $h.pc.wrapping_add($i.imm as i64 as u64);
            if $ctr && $h.ctr_mask & (1 << ty::TAKEN_BRANCH) != 0 {
                $h.ctr_taken_branch($i.imm as i64 as u64);
            }
            return Ok(());
        }
        if $pmu == PMU_ARMS {
            $h.pmu_branch($h.pc, false);
        }
        if $ctr && $h.ctr_mask & (1 << ty::NOT_TAKEN_BRANCH) != 0 {
            $h.pc = $h.pc.wrapping_add($i.len as u64);
            $h.ctr_not_taken_branch($i.len as u64);
            return Ok(());
        }
    }};
}

impl Hart {
    /// A SYSTEM instruction with the performance monitor's hooks (xRET, HLV, HSV).
    #[inline(never)]
    fn exec_system_observed(&mut self, i: &Insn) -> Result<(), Ctl> {
        let addr = self.rs1(i);
        let r = self.exec_system(i);
        if matches!(r, Ok(()) | Err(Ctl::Break)) {
            match crate::pmu::events::CLASS[i.op as usize] {
                crate::pmu::events::class::XRET => self.pmu_xret(),
                crate::pmu::events::class::LOAD => {
                    self.pmu_load(addr);
                }
                crate::pmu::events::class::STORE => {
                    self.pmu_store(addr);
                }
                _ => {}
            }
        }
        r
    }

    /// Whether the conditional branch `i` is taken with the current register values (for
    /// the monitor, after it retired: branches write no register).
    pub(crate) fn branch_condition(&self, i: &Insn) -> bool {
        let (a, b) = (self.rs1(i), self.rs2(i));
        match i.op {
            Op::Beq => a == b,
            Op::Bne => a != b,
            Op::Blt => (a as i64) < (b as i64),
            Op::Bge => (a as i64) >= (b as i64),
            Op::Bltu => a < b,
            Op::Bgeu => a >= b,
            _ => false,
        }
    }

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
    /// of jumps and branches; `PMU`: with [`PMU_ARMS`], report loads, stores, control
    /// transfers, multiplies and divides to the performance monitor (the loop is instantiated
    /// per combination, so that what is off costs nothing).
    #[inline(always)]
    pub(crate) fn execute<const CTR: bool, const PMU: u8>(&mut self, i: Insn) -> Result<(), Ctl> {
        use Op::*;
        match i.op {
            Illegal => return Err(Exception::illegal(i.bits()).into()),
            Sctrclr => return self.exec_sctrclr(&i),
            Lui => self.set_rd(&i, i.imm as i64 as u64),
            Auipc => self.set_rd(&i, self.pc.wrapping_add(i.imm as i64 as u64)),
            Jal => {
                let pc = self.pc;
                let link = pc.wrapping_add(i.len as u64);
                self.pc = pc.wrapping_add(i.imm as i64 as u64);
                self.set_rd(&i, link);
                if PMU == PMU_ARMS {
                    self.pmu_jump(pc, false);
                }
                // CTR: `fmt` holds the transfer type (table 10).
                if CTR && (self.ctr_mask >> i.fmt) & 1 != 0 {
                    self.ctr_jump(i.rd, i.len, i.fmt);
                }
                return Ok(());
            }
            Jalr => {
                let pc = self.pc;
                let link = pc.wrapping_add(i.len as u64);
                self.pc = self.rs1(&i).wrapping_add(i.imm as i64 as u64) & !1;
                self.set_rd(&i, link);
                if PMU == PMU_ARMS {
                    self.pmu_jump(pc, true);
                }
                if CTR && (self.ctr_mask >> i.fmt) & 1 != 0 {
                    self.ctr_jump(i.rd, i.len, i.fmt);
                }
                return Ok(());
            }
            Beq => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, PMU, a == b);
            }
            Bne => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, PMU, a != b);
            }
            Blt => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, PMU, (a as i64) < (b as i64));
            }
            Bge => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, PMU, (a as i64) >= (b as i64));
            }
            Bltu => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, PMU, a < b);
            }
            Bgeu => {
                let (a, b) = (self.rs1(&i), self.rs2(&i));
                branch!(self, i, CTR, PMU, a >= b);
            }
            Lb => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 1)? as i8 as u64;
                if PMU == PMU_ARMS {
                    self.pmu_load(addr);
                }
                self.set_rd(&i, v);
            }
            Lh => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 2)? as i16 as u64;
                if PMU == PMU_ARMS {
                    self.pmu_load(addr);
                }
                self.set_rd(&i, v);
            }
            Lw => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 4)? as i32 as u64;
                if PMU == PMU_ARMS {
                    self.pmu_load(addr);
                }
                self.set_rd(&i, v);
            }
            Ld => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 8)?;
                if PMU == PMU_ARMS {
                    self.pmu_load(addr);
                }
                self.set_rd(&i, v);
            }
            Lbu => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 1)?;
                if PMU == PMU_ARMS {
                    self.pmu_load(addr);
                }
                self.set_rd(&i, v);
            }
            Lhu => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 2)?;
                if PMU == PMU_ARMS {
                    self.pmu_load(addr);
                }
                self.set_rd(&i, v);
            }
            Lwu => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                let v = self.load(addr, 4)?;
                if PMU == PMU_ARMS {
                    self.pmu_load(addr);
                }
                self.set_rd(&i, v);
            }
            Sb => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                self.store(addr, 1, self.rs2(&i))?;
                if PMU == PMU_ARMS {
                    self.pmu_store(addr);
                }
            }
            Sh => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                self.store(addr, 2, self.rs2(&i))?;
                if PMU == PMU_ARMS {
                    self.pmu_store(addr);
                }
            }
            Sw => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                self.store(addr, 4, self.rs2(&i))?;
                if PMU == PMU_ARMS {
                    self.pmu_store(addr);
                }
            }
            Sd => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                self.store(addr, 8, self.rs2(&i))?;
                if PMU == PMU_ARMS {
                    self.pmu_store(addr);
                }
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
                if PMU == PMU_ARMS {
                    let div = !matches!(i.op, Mul | Mulh | Mulhsu | Mulhu | Mulw);
                    self.pmu_cycles(if div { Cost::DIV } else { Cost::MUL });
                }
            }
            Fence => {
                if self.pause_yields && i.raw == crate::decode::PAUSE {
                    let _yielded = self.pause_loop();
                }
            }
            Lr | Sc | AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu
            | AmoMaxu => {
                let addr = self.rs1(&i);
                self.exec_atomic(&i)?;
                if PMU == PMU_ARMS {
                    match i.op {
                        Lr => self.pmu_load(addr),
                        Sc => self.pmu_store(addr),
                        _ => self.pmu_amo(addr),
                    };
                }
            }
            Flw | Fld | Fsw | Fsd => {
                let addr = self.rs1(&i).wrapping_add(i.imm as i64 as u64);
                self.exec_float(&i)?;
                if PMU == PMU_ARMS {
                    if matches!(i.op, Flw | Fld) {
                        self.pmu_load(addr);
                    } else {
                        self.pmu_store(addr);
                    }
                }
            }
            Fmadd | Fmsub | Fnmsub | Fnmadd | Fadd | Fsub | Fmul | Fdiv | Fsqrt | Fsgnj
            | Fsgnjn | Fsgnjx | Fmin | Fmax | FcvtFF | Feq | Flt | Fle | Fclass | FcvtIF
            | FcvtFI | FmvXF | FmvFX => {
                self.exec_float(&i)?;
            }
            FenceI | Ecall | Ebreak | Mret | Sret | Wfi | SfenceVma | Csrrw | Csrrs | Csrrc
            | Csrrwi | Csrrsi | Csrrci | HlvB | HlvBu | HlvH | HlvHu | HlvxHu | HlvW | HlvWu
            | HlvxWu | HlvD | HsvB | HsvH | HsvW | HsvD | HfenceVvma | HfenceGvma => {
                return if PMU == PMU_ARMS {
                    self.exec_system_observed(&i)
                } else {
                    self.exec_system(&i)
                };
            }
        }
        self.next(&i);
        Ok(())
    }
}
