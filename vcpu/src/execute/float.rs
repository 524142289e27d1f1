//! The F and D extensions (unprivileged spec "F" and "D" chapters). Arithmetic is in
//! [`crate::fpu`]; this file handles registers, NaN-boxing at the register boundary,
//! rounding-mode resolution, `fflags` accrual and `mstatus.FS`.

use crate::decode::{Insn, Op, FMT_S};
use crate::fpu::{self, ArithOp, CmpOp, FmaOp, Fmt, IntFmt, SgnjOp};
use crate::hart::{Ctl, Hart};
use crate::trap::Exception;

fn int_fmt(v: u8) -> IntFmt {
    match v {
        0 => IntFmt::W,
        1 => IntFmt::Wu,
        2 => IntFmt::L,
        _ => IntFmt::Lu,
    }
}

impl Hart {
    /// The rounding mode for `i`: static, or `frm` for DYN; reserved values are illegal.
    #[inline]
    fn rounding_mode(&self, i: &Insn) -> Result<u8, Exception> {
        let rm = if i.rm == 7 { self.csr.frm } else { i.rm };
        if rm >= 5 {
            Err(Exception::illegal(i.bits()))
        } else {
            Ok(rm)
        }
    }

    fn set_frd(&mut self, i: &Insn, v: u64) {
        self.f[i.rd as usize] = v;
        self.mark_fs_dirty();
    }

    fn accrue(&mut self, flags: u8) {
        if flags != 0 {
            self.csr.fflags |= flags;
            self.mark_fs_dirty();
        }
    }

    /// Whether F/D instructions are enabled: `mstatus.FS`, and with V=1 `vsstatus.FS`, not
    /// Off.
    #[inline]
    fn fp_enabled(&self) -> bool {
        let fs = crate::csr::MSTATUS_FS;
        self.csr.mstatus & fs != 0 && (!self.virt || self.csr.h.vsstatus & fs != 0)
    }

    pub(crate) fn exec_float(&mut self, i: &Insn) -> Result<(), Ctl> {
        if !self.fp_enabled() {
            return Err(Exception::illegal(i.bits()).into());
        }
        let fmt = if i.fmt == FMT_S { Fmt::S } else { Fmt::D };
        let a = self.f[i.rs1 as usize & 31];
        let b = self.f[i.rs2 as usize & 31];
        let mut fl = 0u8;
        match i.op {
            Op::Flw | Op::Fld => {
                let addr = self.rs1(i).wrapping_add(i.imm as i64 as u64);
                let v = if i.op == Op::Flw {
                    fpu::box_s(self.load(addr, 4)? as u32)
                } else {
                    self.load(addr, 8)?
                };
                self.set_frd(i, v);
            }
            Op::Fsw | Op::Fsd => {
                let addr = self.rs1(i).wrapping_add(i.imm as i64 as u64);
                let size = if i.op == Op::Fsw { 4 } else { 8 };
                self.store(addr, size, b)?;
            }
            Op::Fmadd | Op::Fmsub | Op::Fnmsub | Op::Fnmadd => {
                let rm = self.rounding_mode(i)?;
                let op = match i.op {
                    Op::Fmadd => FmaOp::Madd,
                    Op::Fmsub => FmaOp::Msub,
                    Op::Fnmsub => FmaOp::Nmsub,
                    _ => FmaOp::Nmadd,
                };
                let c = self.f[i.rs3 as usize & 31];
                let v = fpu::fma(fmt, op, a, b, c, rm, &mut fl);
                self.set_frd(i, v);
            }
            Op::Fadd | Op::Fsub | Op::Fmul | Op::Fdiv => {
                let rm = self.rounding_mode(i)?;
                let op = match i.op {
                    Op::Fadd => ArithOp::Add,
                    Op::Fsub => ArithOp::Sub,
                    Op::Fmul => ArithOp::Mul,
                    _ => ArithOp::Div,
                };
                let v = fpu::arith(fmt, op, a, b, rm, &mut fl);
                self.set_frd(i, v);
            }
            Op::Fmin | Op::Fmax => {
                let op = if i.op == Op::Fmin {
                    ArithOp::Min
                } else {
                    ArithOp::Max
                };
                let v = fpu::arith(fmt, op, a, b, 0, &mut fl);
                self.set_frd(i, v);
            }
            Op::Fsqrt => {
                let rm = self.rounding_mode(i)?;
                let v = fpu::sqrt(fmt, a, rm, &mut fl);
                self.set_frd(i, v);
            }
            Op::Fsgnj | Op::Fsgnjn | Op::Fsgnjx => {
                let op = match i.op {
                    Op::Fsgnj => SgnjOp::J,
                    Op::Fsgnjn => SgnjOp::Jn,
                    _ => SgnjOp::Jx,
                };
                let v = fpu::sgnj(fmt, op, a, b);
                self.set_frd(i, v);
            }
            Op::FcvtFF => {
                let rm = self.rounding_mode(i)?;
                let from = if fmt == Fmt::S { Fmt::D } else { Fmt::S };
                let v = fpu::convert(from, fmt, a, rm, &mut fl);
                self.set_frd(i, v);
            }
            Op::Feq | Op::Flt | Op::Fle => {
                let op = match i.op {
                    Op::Feq => CmpOp::Eq,
                    Op::Flt => CmpOp::Lt,
                    _ => CmpOp::Le,
                };
                let v = fpu::cmp(fmt, op, a, b, &mut fl);
                self.set_rd(i, v);
            }
            Op::Fclass => {
                let v = fpu::classify(fmt, a);
                self.set_rd(i, v);
            }
            Op::FcvtIF => {
                let rm = self.rounding_mode(i)?;
                let v = fpu::to_int(fmt, a, int_fmt(i.rs2), rm, &mut fl);
                self.set_rd(i, v);
            }
            Op::FcvtFI => {
                let rm = self.rounding_mode(i)?;
                let x = self.rs1(i);
                let v = fpu::from_int(fmt, x, int_fmt(i.rs2), rm, &mut fl);
                self.set_frd(i, v);
            }
            Op::FmvXF => {
                let v = if fmt == Fmt::S {
                    a as u32 as i32 as i64 as u64
                } else {
                    a
                };
                self.set_rd(i, v);
            }
            _ => {
                // FmvFX
                let x = self.rs1(i);
                let v = if fmt == Fmt::S {
                    fpu::box_s(x as u32)
                } else {
                    x
                };
                self.set_frd(i, v);
            }
        }
        self.accrue(fl);
        Ok(())
    }

    /// Translated code's shortcut for the double-precision arithmetic of FADD, FSUB, FMUL,
    /// FDIV, FSQRT and the fused multiply-adds: the host's IEEE 754 binary64 operations
    /// (x86-64 SSE2 and `fma`, round to nearest even), where they give the result and flags
    /// [`Hart::exec_float`] would. That holds when the rounding mode is RNE, `fflags.NX` is
    /// already set (the only flag the instruction can raise here, so accrual changes
    /// nothing), the operands are finite (no NaN to propagate, no invalid operation but 0/0
    /// and the square root of a negative number, both left out, as is division by zero), and
    /// the result is finite and above the smallest normal number in magnitude (no overflow,
    /// no underflow, whichever way tininess is detected, and no zero whose sign depends on
    /// the rounding mode). Returns false, with nothing changed, when it does not apply.
    ///
    /// FCVT.D.{W,WU,L,LU} of an integer of at most 53 significant bits is exact in any
    /// rounding mode and raises no flag: the host converts it too.
    pub(crate) fn exec_float_host(&mut self, i: &Insn) -> bool {
        const NX: u8 = 1;
        if i.fmt == FMT_S || !self.fp_enabled() {
            return false;
        }
        if i.op == Op::FcvtFI {
            let x = self.rs1(i);
            let v = match int_fmt(i.rs2) {
                IntFmt::W => x as i32 as f64,
                IntFmt::Wu => x as u32 as f64,
                IntFmt::L if (x as i64).unsigned_abs() <= 1 << 53 => x as i64 as f64,
                IntFmt::Lu if x <= 1 << 53 => x as f64,
                _ => return false,
            };
            if self.rounding_mode(i).is_err() {
                return false;
            }
            self.set_frd(i, v.to_bits());
            return true;
        }
        if self.csr.fflags & NX == 0 {
            return false;
        }
        if !matches!(self.rounding_mode(i), Ok(0)) {
            return false;
        }
        let reg = |r: u8| f64::from_bits(self.f[r as usize & 31]);
        let (a, b, c) = (reg(i.rs1), reg(i.rs2), reg(i.rs3));
        let finite = |x: f64| x.is_finite();
        let r = match i.op {
            Op::Fadd if finite(a) && finite(b) => a + b,
            Op::Fsub if finite(a) && finite(b) => a - b,
            Op::Fmul if finite(a) && finite(b) => a * b,
            Op::Fdiv if finite(a) && finite(b) && b != 0.0 => a / b,
            Op::Fsqrt if finite(a) && a.is_sign_positive() => a.sqrt(),
            Op::Fmadd | Op::Fmsub | Op::Fnmsub | Op::Fnmadd
                if finite(a) && finite(b) && finite(c) =>
            {
                match i.op {
                    Op::Fmadd => a.mul_add(b, c),
                    Op::Fmsub => a.mul_add(b, -c),
                    Op::Fnmsub => (-a).mul_add(b, c),
                    _ => (-a).mul_add(b, -c),
                }
            }
            _ => return false,
        };
        if !(r.is_finite() && r.abs() > f64::MIN_POSITIVE) {
            return false;
        }
        self.set_frd(i, r.to_bits());
        true
    }
}
