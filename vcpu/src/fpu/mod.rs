//! IEEE-754 arithmetic for the F and D extensions (RISC-V unprivileged spec, chapters "F" and
//! "D", version 20191213 or later): canonical NaN results, the RISC-V results of invalid
//! conversions, tininess detected after rounding.
//!
//! The module is pure, allocation-free and written in integer arithmetic only (the rounding
//! core is [`ieee`]), so results and flags are the same on every host and no C library is
//! needed: operands come in as the 64-bit patterns held in the `f` registers, results go
//! out the same way, and exception flags are OR-ed into an accrued `fflags` byte.
//! Single-precision operands are unboxed with [`unbox_s`] (an improperly NaN-boxed value
//! reads as the canonical NaN) and single-precision results are NaN-boxed with [`box_s`].
//! The rounding mode passed in is already resolved (0 = RNE, 1 = RTZ, 2 = RDN, 3 = RUP,
//! 4 = RMM).

pub mod ieee;

use std::cmp::Ordering;

use ieee::{Format, B32, B64};

/// The exception flags (`fflags` bits), defined with the arithmetic that raises them.
pub use ieee::{DZ, NV, NX, OF, UF};

/// Floating-point format of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fmt {
    /// Single precision (binary32), NaN-boxed in the 64-bit registers.
    S,
    /// Double precision (binary64).
    D,
}

/// Two-operand arithmetic (FADD, FSUB, FMUL, FDIV, FMIN, FMAX).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    /// FADD
    Add,
    /// FSUB
    Sub,
    /// FMUL
    Mul,
    /// FDIV
    Div,
    /// FMIN
    Min,
    /// FMAX
    Max,
}

/// Fused multiply-add forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FmaOp {
    /// `a*b + c`
    Madd,
    /// `a*b - c`
    Msub,
    /// `-(a*b) + c`
    Nmsub,
    /// `-(a*b) - c`
    Nmadd,
}

/// Sign-injection forms (FSGNJ, FSGNJN, FSGNJX).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SgnjOp {
    /// FSGNJ: the sign of the second operand.
    J,
    /// FSGNJN: its opposite.
    Jn,
    /// FSGNJX: the XOR of both signs.
    Jx,
}

/// Comparisons (FEQ quiet, FLT and FLE signaling).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// FEQ
    Eq,
    /// FLT
    Lt,
    /// FLE
    Le,
}

/// Integer side of FCVT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntFmt {
    /// 32-bit signed.
    W,
    /// 32-bit unsigned.
    Wu,
    /// 64-bit signed.
    L,
    /// 64-bit unsigned.
    Lu,
}

/// Canonical NaN, single precision.
const CANON_S: u32 = 0x7fc0_0000;
/// Canonical NaN, double precision.
const CANON_D: u64 = 0x7ff8_0000_0000_0000;

// ---------------------------------------------------------------------------------------------
// Register <-> value helpers
// ---------------------------------------------------------------------------------------------

/// Reads a single-precision value from a 64-bit register: a value whose upper 32 bits are not
/// all ones is not a properly NaN-boxed single and reads as the canonical NaN.
#[inline]
pub fn unbox_s(reg: u64) -> u32 {
    if reg >> 32 == 0xffff_ffff {
        reg as u32
    } else {
        CANON_S
    }
}

/// NaN-boxes a single-precision value for writing to a 64-bit register.
#[inline]
pub fn box_s(bits: u32) -> u64 {
    0xffff_ffff_0000_0000 | bits as u64
}

/// Bit layout of a format, used by the operations done on raw bits (min/max, sign injection,
/// classification). Values are the unboxed patterns zero-extended to `u64`.
struct Layout {
    sign: u64,
    exp: u64,
    frac: u64,
    quiet: u64,
    canon: u64,
}

const LAYOUT_S: Layout = Layout {
    sign: 1 << 31,
    exp: 0x7f80_0000,
    frac: 0x007f_ffff,
    quiet: 1 << 22,
    canon: CANON_S as u64,
};

const LAYOUT_D: Layout = Layout {
    sign: 1 << 63,
    exp: 0x7ff0_0000_0000_0000,
    frac: 0x000f_ffff_ffff_ffff,
    quiet: 1 << 51,
    canon: CANON_D,
};

impl Fmt {
    /// The interchange format.
    #[inline]
    fn format(self) -> Format {
        match self {
            Fmt::S => B32,
            Fmt::D => B64,
        }
    }

    #[inline]
    fn layout(self) -> &'static Layout {
        match self {
            Fmt::S => &LAYOUT_S,
            Fmt::D => &LAYOUT_D,
        }
    }

    /// Register pattern -> raw value bits (unboxing singles).
    #[inline]
    fn unbox(self, reg: u64) -> u64 {
        match self {
            Fmt::S => unbox_s(reg) as u64,
            Fmt::D => reg,
        }
    }

    /// Raw value bits -> register pattern (boxing singles).
    #[inline]
    fn rebox(self, v: u64) -> u64 {
        match self {
            Fmt::S => box_s(v as u32),
            Fmt::D => v,
        }
    }
}

impl Layout {
    #[inline]
    fn is_nan(&self, v: u64) -> bool {
        v & self.exp == self.exp && v & self.frac != 0
    }

    #[inline]
    fn is_snan(&self, v: u64) -> bool {
        self.is_nan(v) && v & self.quiet == 0
    }

    /// Total-order key for non-NaN values: `-0` sorts below `+0`.
    #[inline]
    fn key(&self, v: u64) -> u64 {
        let mask = self.sign | (self.sign - 1);
        if v & self.sign != 0 {
            !v & mask
        } else {
            v | self.sign
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------

/// FADD/FSUB/FMUL/FDIV/FMIN/FMAX.
pub fn arith(fmt: Fmt, op: ArithOp, a: u64, b: u64, rm: u8, flags: &mut u8) -> u64 {
    let f = fmt.format();
    let (x, y) = (fmt.unbox(a), fmt.unbox(b));
    let r = match op {
        ArithOp::Add => ieee::add(f, x, y, false, rm, flags),
        ArithOp::Sub => ieee::add(f, x, y, true, rm, flags),
        ArithOp::Mul => ieee::mul(f, x, y, rm, flags),
        ArithOp::Div => ieee::div(f, x, y, rm, flags),
        ArithOp::Min | ArithOp::Max => min_max(fmt.layout(), op == ArithOp::Max, x, y, flags),
    };
    fmt.rebox(r)
}

/// IEEE 754-2019 minimumNumber / maximumNumber on raw (unboxed) bits.
fn min_max(l: &Layout, max: bool, x: u64, y: u64, flags: &mut u8) -> u64 {
    if l.is_snan(x) || l.is_snan(y) {
        *flags |= NV;
    }
    match (l.is_nan(x), l.is_nan(y)) {
        (true, true) => l.canon,
        (true, false) => y,
        (false, true) => x,
        (false, false) => {
            let x_lt_y = l.key(x) < l.key(y);
            if x_lt_y == max {
                y
            } else {
                x
            }
        }
    }
}

/// FSQRT.
pub fn sqrt(fmt: Fmt, a: u64, rm: u8, flags: &mut u8) -> u64 {
    fmt.rebox(ieee::sqrt(fmt.format(), fmt.unbox(a), rm, flags))
}

/// FMADD/FMSUB/FNMSUB/FNMADD, rounded once. The negated forms flip the sign of the product
/// (through `a`) and/or of the addend; NaN results are canonical either way, and `0 × ∞ + c`
/// raises NV even when `c` is a quiet NaN.
pub fn fma(fmt: Fmt, op: FmaOp, a: u64, b: u64, c: u64, rm: u8, flags: &mut u8) -> u64 {
    let l = fmt.layout();
    let (neg_prod, neg_add) = match op {
        FmaOp::Madd => (false, false),
        FmaOp::Msub => (false, true),
        FmaOp::Nmsub => (true, false),
        FmaOp::Nmadd => (true, true),
    };
    let x = fmt.unbox(a) ^ if neg_prod { l.sign } else { 0 };
    let y = fmt.unbox(b);
    let z = fmt.unbox(c) ^ if neg_add { l.sign } else { 0 };
    fmt.rebox(ieee::mul_add(fmt.format(), x, y, z, rm, flags))
}

/// FSGNJ/FSGNJN/FSGNJX: no flags, NaNs are not canonicalized (but an improperly boxed single
/// reads as the canonical NaN).
pub fn sgnj(fmt: Fmt, op: SgnjOp, a: u64, b: u64) -> u64 {
    let l = fmt.layout();
    let (x, y) = (fmt.unbox(a), fmt.unbox(b));
    let sign = match op {
        SgnjOp::J => y & l.sign,
        SgnjOp::Jn => !y & l.sign,
        SgnjOp::Jx => (x ^ y) & l.sign,
    };
    fmt.rebox((x & !l.sign) | sign)
}

/// FEQ (quiet: NV only for signaling NaNs), FLT and FLE (signaling: NV for any NaN).
/// Returns 1 or 0; any comparison with a NaN gives 0.
pub fn cmp(fmt: Fmt, op: CmpOp, a: u64, b: u64, flags: &mut u8) -> u64 {
    let (x, y) = (fmt.unbox(a), fmt.unbox(b));
    let ord = ieee::compare(fmt.format(), x, y, op != CmpOp::Eq, flags);
    let r = match op {
        CmpOp::Eq => ord == Some(Ordering::Equal),
        CmpOp::Lt => ord == Some(Ordering::Less),
        CmpOp::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
    };
    r as u64
}
/// FCLASS: one-hot 10-bit mask.
pub fn classify(fmt: Fmt, a: u64) -> u64 {
    let l = fmt.layout();
    let v = fmt.unbox(a);
    let neg = v & l.sign != 0;
    let exp = v & l.exp;
    let frac = v & l.frac;
    let bit = if exp == l.exp {
        if frac == 0 {
            if neg {
                0
            } else {
                7
            }
        } else if v & l.quiet != 0 {
            9
        } else {
            8
        }
    } else if exp == 0 {
        match (frac == 0, neg) {
            (true, true) => 3,
            (true, false) => 4,
            (false, true) => 2,
            (false, false) => 5,
        }
    } else if neg {
        1
    } else {
        6
    };
    1 << bit
}

/// FCVT.{W,WU,L,LU}.{S,D}. Out-of-range and NaN inputs give the RISC-V values (NaN and
/// positive overflow -> maximum, negative overflow -> minimum, 0 for unsigned) with NV.
/// 32-bit results, signed or not, are sign-extended to 64 bits.
pub fn to_int(fmt: Fmt, a: u64, dst: IntFmt, rm: u8, flags: &mut u8) -> u64 {
    let (bits, signed) = match dst {
        IntFmt::W => (32, true),
        IntFmt::Wu => (32, false),
        IntFmt::L => (64, true),
        IntFmt::Lu => (64, false),
    };
    let r = ieee::to_int(fmt.format(), fmt.unbox(a), bits, signed, rm, flags);
    if bits == 32 {
        r as u32 as i32 as i64 as u64
    } else {
        r
    }
}

/// FCVT.{S,D}.{W,WU,L,LU}. W and WU read the low 32 bits of `x`.
pub fn from_int(fmt: Fmt, x: u64, src: IntFmt, rm: u8, flags: &mut u8) -> u64 {
    let (sign, mag) = match src {
        IntFmt::W => {
            let v = x as u32 as i32;
            (v < 0, v.unsigned_abs() as u64)
        }
        IntFmt::Wu => (false, x as u32 as u64),
        IntFmt::L => {
            let v = x as i64;
            (v < 0, v.unsigned_abs())
        }
        IntFmt::Lu => (false, x),
    };
    fmt.rebox(ieee::from_int(fmt.format(), sign, mag, rm, flags))
}

/// FCVT.S.D and FCVT.D.S (NaN results canonical). `from == to` returns the operand unchanged
/// (re-boxed); no such instruction exists.
pub fn convert(from: Fmt, to: Fmt, a: u64, rm: u8, flags: &mut u8) -> u64 {
    if from == to {
        return from.rebox(from.unbox(a));
    }
    to.rebox(ieee::convert(
        from.format(),
        to.format(),
        from.unbox(a),
        rm,
        flags,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RNE: u8 = 0;
    const RTZ: u8 = 1;
    const RDN: u8 = 2;
    const RUP: u8 = 3;
    const RMM: u8 = 4;
    const ALL_RM: [u8; 5] = [RNE, RTZ, RDN, RUP, RMM];

    const BOXED_CANON_S: u64 = 0xffff_ffff_7fc0_0000;
    const SNAN_S: u32 = 0x7f80_0001;
    const QNAN_S: u32 = 0x7fc1_2345;
    const SNAN_D: u64 = 0x7ff0_0000_0000_0001;
    const QNAN_D: u64 = 0xfff8_0000_0000_1234;

    fn s(x: f32) -> u64 {
        box_s(x.to_bits())
    }
    fn sb(bits: u32) -> u64 {
        box_s(bits)
    }
    fn d(x: f64) -> u64 {
        x.to_bits()
    }

    /// Runs `f` with fresh flags and returns (result, flags).
    fn run(f: impl FnOnce(&mut u8) -> u64) -> (u64, u8) {
        let mut fl = 0;
        let r = f(&mut fl);
        (r, fl)
    }

    #[test]
    fn nan_boxing() {
        assert_eq!(box_s(0x3f80_0000), 0xffff_ffff_3f80_0000);
        assert_eq!(unbox_s(0xffff_ffff_3f80_0000), 0x3f80_0000);
        assert_eq!(unbox_s(0x0000_0000_3f80_0000), 0x7fc0_0000);
        assert_eq!(unbox_s(0xffff_fffe_3f80_0000), 0x7fc0_0000);
        assert_eq!(unbox_s(0x7fff_ffff_3f80_0000), 0x7fc0_0000);
        // An improperly boxed 1.0 plus 1.0 is a (quiet) canonical NaN: no flags.
        let r = run(|f| arith(Fmt::S, ArithOp::Add, 0x3f80_0000, s(1.0), RNE, f));
        assert_eq!(r, (BOXED_CANON_S, 0));
        // FCLASS sees a quiet NaN.
        assert_eq!(classify(Fmt::S, 0x3f80_0000), 1 << 9);
        // Sign injection works on the canonical NaN.
        assert_eq!(
            sgnj(Fmt::S, SgnjOp::J, 0x3f80_0000, s(-2.0)),
            0xffff_ffff_ffc0_0000
        );
        assert_eq!(
            sgnj(Fmt::S, SgnjOp::J, s(1.0), 0x0000_0000_bf80_0000),
            s(1.0)
        );
        // FMIN with an improperly boxed operand returns the other one.
        let r = run(|f| arith(Fmt::S, ArithOp::Min, 0x1234, s(3.0), RNE, f));
        assert_eq!(r, (s(3.0), 0));
        // Comparisons: the canonical NaN is quiet.
        let r = run(|f| cmp(Fmt::S, CmpOp::Eq, 0x3f80_0000, 0x3f80_0000, f));
        assert_eq!(r, (0, 0));
        // Results are boxed even when D input is converted.
        let r = run(|f| convert(Fmt::D, Fmt::S, d(1.5), RNE, f));
        assert_eq!(r, (s(1.5), 0));
    }

    #[test]
    fn canonical_nan_results() {
        let r = run(|f| arith(Fmt::S, ArithOp::Add, sb(SNAN_S), s(1.0), RNE, f));
        assert_eq!(r, (BOXED_CANON_S, NV));
        let r = run(|f| {
            arith(
                Fmt::S,
                ArithOp::Mul,
                sb(QNAN_S | 0x8000_0000),
                s(2.0),
                RNE,
                f,
            )
        });
        assert_eq!(r, (BOXED_CANON_S, 0));
        let r = run(|f| {
            arith(
                Fmt::D,
                ArithOp::Sub,
                d(f64::INFINITY),
                d(f64::INFINITY),
                RNE,
                f,
            )
        });
        assert_eq!(r, (CANON_D, NV));
        let r = run(|f| arith(Fmt::D, ArithOp::Div, QNAN_D, d(2.0), RNE, f));
        assert_eq!(r, (CANON_D, 0));
        let r = run(|f| arith(Fmt::D, ArithOp::Mul, d(0.0), d(f64::NEG_INFINITY), RNE, f));
        assert_eq!(r, (CANON_D, NV));
        let r = run(|f| sqrt(Fmt::D, SNAN_D, RNE, f));
        assert_eq!(r, (CANON_D, NV));
        let r = run(|f| fma(Fmt::D, FmaOp::Nmadd, QNAN_D, d(1.0), d(1.0), RNE, f));
        assert_eq!(r, (CANON_D, 0));
        let r = run(|f| fma(Fmt::S, FmaOp::Nmsub, s(1.0), s(1.0), sb(SNAN_S), RNE, f));
        assert_eq!(r, (BOXED_CANON_S, NV));
    }

    #[test]
    fn min_max() {
        use ArithOp::{Max, Min};
        let mm = |fmt, op, a, b| run(|f| arith(fmt, op, a, b, RNE, f));
        // One signaling NaN: the other operand, with NV.
        assert_eq!(mm(Fmt::S, Min, sb(SNAN_S), s(1.0)), (s(1.0), NV));
        assert_eq!(mm(Fmt::S, Max, s(1.0), sb(SNAN_S)), (s(1.0), NV));
        assert_eq!(mm(Fmt::D, Min, d(-7.0), SNAN_D), (d(-7.0), NV));
        // One quiet NaN: the other operand, no flags.
        assert_eq!(mm(Fmt::S, Min, sb(QNAN_S), s(2.0)), (s(2.0), 0));
        assert_eq!(mm(Fmt::D, Max, QNAN_D, d(-2.0)), (d(-2.0), 0));
        // Both NaN: canonical NaN; NV if either signaling.
        assert_eq!(mm(Fmt::S, Min, sb(QNAN_S), sb(SNAN_S)), (BOXED_CANON_S, NV));
        assert_eq!(mm(Fmt::S, Max, sb(QNAN_S), sb(QNAN_S)), (BOXED_CANON_S, 0));
        assert_eq!(mm(Fmt::D, Max, SNAN_D, QNAN_D), (CANON_D, NV));
        assert_eq!(mm(Fmt::D, Min, QNAN_D, QNAN_D), (CANON_D, 0));
        // Signed zeros: -0 < +0.
        for (fmt, pz, nz) in [(Fmt::S, s(0.0), s(-0.0)), (Fmt::D, d(0.0), d(-0.0))] {
            assert_eq!(mm(fmt, Min, pz, nz), (nz, 0));
            assert_eq!(mm(fmt, Min, nz, pz), (nz, 0));
            assert_eq!(mm(fmt, Max, pz, nz), (pz, 0));
            assert_eq!(mm(fmt, Max, nz, pz), (pz, 0));
        }
        // Ordinary values.
        assert_eq!(mm(Fmt::S, Min, s(-1.0), s(3.0)), (s(-1.0), 0));
        assert_eq!(mm(Fmt::S, Max, s(-1.0), s(3.0)), (s(3.0), 0));
        assert_eq!(mm(Fmt::D, Max, d(f64::NEG_INFINITY), d(-5.0)), (d(-5.0), 0));
        assert_eq!(mm(Fmt::D, Min, d(-3.0), d(-5.0)), (d(-5.0), 0));
        assert_eq!(mm(Fmt::D, Max, d(-3.0), d(-5.0)), (d(-3.0), 0));
        assert_eq!(mm(Fmt::D, Min, d(1e-310), d(2e-310)), (d(1e-310), 0));
    }

    #[test]
    fn compare_flags() {
        let c = |fmt, op, a, b| run(|f| cmp(fmt, op, a, b, f));
        for (fmt, q, sn, one, two) in [
            (Fmt::S, sb(QNAN_S), sb(SNAN_S), s(1.0), s(2.0)),
            (Fmt::D, QNAN_D, SNAN_D, d(1.0), d(2.0)),
        ] {
            assert_eq!(c(fmt, CmpOp::Eq, q, one), (0, 0));
            assert_eq!(c(fmt, CmpOp::Eq, q, q), (0, 0));
            assert_eq!(c(fmt, CmpOp::Eq, sn, one), (0, NV));
            assert_eq!(c(fmt, CmpOp::Eq, one, sn), (0, NV));
            assert_eq!(c(fmt, CmpOp::Lt, q, one), (0, NV));
            assert_eq!(c(fmt, CmpOp::Lt, one, sn), (0, NV));
            assert_eq!(c(fmt, CmpOp::Le, one, q), (0, NV));
            assert_eq!(c(fmt, CmpOp::Le, q, q), (0, NV));
            assert_eq!(c(fmt, CmpOp::Eq, one, one), (1, 0));
            assert_eq!(c(fmt, CmpOp::Lt, one, two), (1, 0));
            assert_eq!(c(fmt, CmpOp::Lt, two, one), (0, 0));
            assert_eq!(c(fmt, CmpOp::Le, one, one), (1, 0));
            assert_eq!(c(fmt, CmpOp::Lt, one, one), (0, 0));
        }
        assert_eq!(c(Fmt::S, CmpOp::Eq, s(0.0), s(-0.0)), (1, 0));
        assert_eq!(c(Fmt::D, CmpOp::Lt, d(-0.0), d(0.0)), (0, 0));
        assert_eq!(c(Fmt::D, CmpOp::Le, d(0.0), d(-0.0)), (1, 0));
    }

    #[test]
    fn rounding_modes_add() {
        // 1 + 2^-24 is exactly halfway between 1.0 and 1 + 2^-23 in single precision.
        let half_ulp = s(f32::from_bits(0x3380_0000)); // 2^-24
        let expect_pos = [
            0x3f80_0000,
            0x3f80_0000,
            0x3f80_0000,
            0x3f80_0001,
            0x3f80_0001,
        ];
        let expect_neg = [
            0xbf80_0000,
            0xbf80_0000,
            0xbf80_0001,
            0xbf80_0000,
            0xbf80_0001,
        ];
        for rm in ALL_RM {
            let r = run(|f| arith(Fmt::S, ArithOp::Add, s(1.0), half_ulp, rm, f));
            assert_eq!(r, (sb(expect_pos[rm as usize]), NX), "rm {rm}");
            let r = run(|f| arith(Fmt::S, ArithOp::Sub, s(-1.0), half_ulp, rm, f));
            assert_eq!(r, (sb(expect_neg[rm as usize]), NX), "rm {rm}");
        }
        // Double: 1 + 0.75 ulp rounds up under RNE/RUP/RMM and down under RTZ/RDN.
        let x = d(1.5 * 2f64.powi(-53)); // 0.75 ulp of 1.0
        let expect = [
            0x3ff0_0000_0000_0001,
            0x3ff0_0000_0000_0000,
            0x3ff0_0000_0000_0000,
            0x3ff0_0000_0000_0001,
            0x3ff0_0000_0000_0001,
        ];
        for rm in ALL_RM {
            let r = run(|f| arith(Fmt::D, ArithOp::Add, d(1.0), x, rm, f));
            assert_eq!(r, (expect[rm as usize], NX), "rm {rm}");
        }
        // Exact sum: no NX, any mode. x - x is +0 except under RDN (-0).
        for rm in ALL_RM {
            assert_eq!(
                run(|f| arith(Fmt::D, ArithOp::Add, d(1.0), d(2.0), rm, f)),
                (d(3.0), 0)
            );
            let z = if rm == RDN { d(-0.0) } else { d(0.0) };
            assert_eq!(
                run(|f| arith(Fmt::D, ArithOp::Sub, d(1.5), d(1.5), rm, f)),
                (z, 0)
            );
        }
    }

    #[test]
    fn rounding_modes_convert() {
        let pos = [2u64, 2, 2, 3, 3];
        let neg = [-2i64, -2, -3, -2, -3];
        for rm in ALL_RM {
            let i = rm as usize;
            assert_eq!(
                run(|f| to_int(Fmt::S, s(2.5), IntFmt::W, rm, f)),
                (pos[i], NX)
            );
            assert_eq!(
                run(|f| to_int(Fmt::D, d(2.5), IntFmt::L, rm, f)),
                (pos[i], NX)
            );
            assert_eq!(
                run(|f| to_int(Fmt::D, d(2.5), IntFmt::Wu, rm, f)),
                (pos[i], NX)
            );
            assert_eq!(
                run(|f| to_int(Fmt::D, d(-2.5), IntFmt::W, rm, f)),
                (neg[i] as u64, NX)
            );
            assert_eq!(
                run(|f| to_int(Fmt::S, s(-2.5), IntFmt::L, rm, f)),
                (neg[i] as u64, NX)
            );
        }
        // Integer -> float: 2^24 + 1 is halfway between 2^24 and 2^24 + 2 in single.
        let expect = [
            0x4b80_0000u32,
            0x4b80_0000,
            0x4b80_0000,
            0x4b80_0001,
            0x4b80_0001,
        ];
        for rm in ALL_RM {
            let r = run(|f| from_int(Fmt::S, (1 << 24) + 1, IntFmt::L, rm, f));
            assert_eq!(r, (sb(expect[rm as usize]), NX), "rm {rm}");
        }
        // D -> S: 1 + 2^-24 + 2^-30 is just above halfway.
        let x = d(1.0 + 2f64.powi(-24) + 2f64.powi(-30));
        let expect = [
            0x3f80_0001u32,
            0x3f80_0000,
            0x3f80_0000,
            0x3f80_0001,
            0x3f80_0001,
        ];
        for rm in ALL_RM {
            let r = run(|f| convert(Fmt::D, Fmt::S, x, rm, f));
            assert_eq!(r, (sb(expect[rm as usize]), NX), "rm {rm}");
        }
    }

    #[test]
    fn fcvt_w_s() {
        let c = |a| run(|f| to_int(Fmt::S, a, IntFmt::W, RNE, f));
        assert_eq!(c(sb(QNAN_S)), (0x7fff_ffff, NV));
        assert_eq!(c(sb(0xffc0_0000)), (0x7fff_ffff, NV)); // negative NaN
        assert_eq!(c(sb(SNAN_S)), (0x7fff_ffff, NV));
        assert_eq!(c(s(f32::INFINITY)), (0x7fff_ffff, NV));
        assert_eq!(c(s(3e9)), (0x7fff_ffff, NV));
        assert_eq!(c(s(2147483648.0)), (0x7fff_ffff, NV));
        assert_eq!(c(s(-3e9)), (0xffff_ffff_8000_0000, NV));
        assert_eq!(c(s(f32::NEG_INFINITY)), (0xffff_ffff_8000_0000, NV));
        assert_eq!(c(s(-2147483648.0)), (0xffff_ffff_8000_0000, 0));
        // Sign extension of negative results.
        assert_eq!(c(s(-1.0)), (0xffff_ffff_ffff_ffff, 0));
        assert_eq!(c(s(-0.75)), (0xffff_ffff_ffff_ffff, NX));
        assert_eq!(c(s(2147483520.0)), (0x7fff_ff80, 0));
        assert_eq!(c(s(-0.0)), (0, 0));
        assert_eq!(c(0x3f80_0000), (0x7fff_ffff, NV)); // improperly boxed -> NaN
    }

    #[test]
    fn fcvt_other_widths() {
        // FCVT.WU.S: results sign-extended from 32 bits.
        let wu = |a| run(|f| to_int(Fmt::S, a, IntFmt::Wu, RNE, f));
        assert_eq!(wu(s(3e9)), (0xffff_ffff_b2d0_5e00, 0));
        assert_eq!(wu(sb(QNAN_S)), (u64::MAX, NV));
        assert_eq!(wu(s(-1.0)), (0, NV));
        assert_eq!(wu(s(5e9)), (u64::MAX, NV));
        // FCVT.W.D, FCVT.L.S, FCVT.LU.D.
        let w = |a| run(|f| to_int(Fmt::D, a, IntFmt::W, RNE, f));
        assert_eq!(w(d(-2147483649.0)), (0xffff_ffff_8000_0000, NV));
        assert_eq!(w(d(2147483647.4)), (0x7fff_ffff, NX));
        assert_eq!(w(QNAN_D), (0x7fff_ffff, NV));
        let l = |a| run(|f| to_int(Fmt::S, a, IntFmt::L, RNE, f));
        assert_eq!(l(s(-1e19)), (i64::MIN as u64, NV));
        assert_eq!(l(s(1e19)), (i64::MAX as u64, NV));
        assert_eq!(l(sb(SNAN_S)), (i64::MAX as u64, NV));
        let lu = |a| run(|f| to_int(Fmt::D, a, IntFmt::Lu, RNE, f));
        assert_eq!(lu(d(18446744073709551616.0)), (u64::MAX, NV)); // 2^64
        assert_eq!(
            lu(d(0xffff_ffff_ffff_f800u64 as f64)),
            (0xffff_ffff_ffff_f800, 0)
        );
        assert_eq!(lu(d(-3.0)), (0, NV));
        assert_eq!(lu(SNAN_D), (u64::MAX, NV));
    }

    #[test]
    fn fcvt_wu_d() {
        let c = |a, rm| run(|f| to_int(Fmt::D, a, IntFmt::Wu, rm, f));
        assert_eq!(c(QNAN_D, RNE), (u64::MAX, NV));
        assert_eq!(c(SNAN_D, RNE), (u64::MAX, NV));
        assert_eq!(c(d(f64::INFINITY), RNE), (u64::MAX, NV));
        assert_eq!(c(d(4294967296.0), RNE), (u64::MAX, NV));
        assert_eq!(c(d(4294967295.0), RNE), (u64::MAX, 0)); // 0xffffffff sign-extended
        assert_eq!(c(d(4294967295.5), RTZ), (u64::MAX, NX));
        assert_eq!(c(d(4294967295.5), RNE), (u64::MAX, NV)); // rounds to 2^32
        assert_eq!(c(d(2147483648.0), RNE), (0xffff_ffff_8000_0000, 0)); // sign extension
        assert_eq!(c(d(2147483647.0), RNE), (0x7fff_ffff, 0));
        assert_eq!(c(d(-1.0), RNE), (0, NV));
        assert_eq!(c(d(f64::NEG_INFINITY), RNE), (0, NV));
        assert_eq!(c(d(-0.0), RNE), (0, 0));
        // Negative values that round to zero are in range: NX only.
        assert_eq!(c(d(-0.5), RTZ), (0, NX));
        assert_eq!(c(d(-0.5), RNE), (0, NX));
        assert_eq!(c(d(-0.5), RUP), (0, NX));
        assert_eq!(c(d(-0.5), RDN), (0, NV));
        assert_eq!(c(d(-0.5), RMM), (0, NV));
    }

    #[test]
    fn fcvt_l_d() {
        let c = |a, rm| run(|f| to_int(Fmt::D, a, IntFmt::L, rm, f));
        let max = i64::MAX as u64;
        let min = i64::MIN as u64;
        assert_eq!(c(QNAN_D, RNE), (max, NV));
        assert_eq!(c(0xfff8_0000_0000_0000, RNE), (max, NV)); // negative NaN
        assert_eq!(c(d(f64::INFINITY), RNE), (max, NV));
        assert_eq!(c(d(9223372036854775808.0), RNE), (max, NV)); // 2^63
        assert_eq!(c(d(-9223372036854775808.0), RNE), (min, 0)); // -2^63
        assert_eq!(c(d(-1e19), RNE), (min, NV));
        assert_eq!(c(d(f64::NEG_INFINITY), RNE), (min, NV));
        assert_eq!(c(d(-1.0), RNE), (u64::MAX, 0));
        assert_eq!(c(d(1.5), RNE), (2, NX));
        assert_eq!(c(d(9007199254740993.0), RNE), (9007199254740992, 0));
    }

    #[test]
    fn fcvt_lu_s() {
        let c = |a, rm| run(|f| to_int(Fmt::S, a, IntFmt::Lu, rm, f));
        assert_eq!(c(sb(QNAN_S), RNE), (u64::MAX, NV));
        assert_eq!(c(sb(0xff80_0001), RNE), (u64::MAX, NV)); // negative sNaN
        assert_eq!(c(s(f32::INFINITY), RNE), (u64::MAX, NV));
        assert_eq!(c(s(18446744073709551616.0), RNE), (u64::MAX, NV)); // 2^64
        assert_eq!(c(s(9223372036854775808.0), RNE), (1 << 63, 0)); // 2^63
        assert_eq!(c(s(-1.0), RNE), (0, NV));
        assert_eq!(c(s(f32::NEG_INFINITY), RNE), (0, NV));
        assert_eq!(c(s(-0.0), RNE), (0, 0));
        assert_eq!(c(s(-0.25), RTZ), (0, NX));
        assert_eq!(c(s(0.75), RTZ), (0, NX));
        assert_eq!(c(s(0.75), RNE), (1, NX));
    }

    #[test]
    fn from_int_widths() {
        // W/Wu use the low 32 bits only.
        let x = 0x1234_5678_ffff_ffffu64;
        assert_eq!(
            run(|f| from_int(Fmt::D, x, IntFmt::W, RNE, f)),
            (d(-1.0), 0)
        );
        assert_eq!(
            run(|f| from_int(Fmt::D, x, IntFmt::Wu, RNE, f)),
            (d(4294967295.0), 0)
        );
        assert_eq!(
            run(|f| from_int(Fmt::S, x, IntFmt::W, RNE, f)),
            (s(-1.0), 0)
        );
        assert_eq!(
            run(|f| from_int(Fmt::S, x, IntFmt::Wu, RNE, f)),
            (s(4294967296.0), NX)
        );
        assert_eq!(
            run(|f| from_int(Fmt::S, x, IntFmt::Wu, RTZ, f)),
            (sb(0x4f7f_ffff), NX)
        );
        assert_eq!(
            run(|f| from_int(Fmt::D, u64::MAX, IntFmt::L, RNE, f)),
            (d(-1.0), 0)
        );
        assert_eq!(
            run(|f| from_int(Fmt::D, u64::MAX, IntFmt::Lu, RNE, f)),
            (d(18446744073709551616.0), NX)
        );
        assert_eq!(run(|f| from_int(Fmt::S, 0, IntFmt::L, RDN, f)), (s(0.0), 0));
    }

    #[test]
    fn sqrt_cases() {
        assert_eq!(run(|f| sqrt(Fmt::S, s(-1.0), RNE, f)), (BOXED_CANON_S, NV));
        assert_eq!(run(|f| sqrt(Fmt::D, d(-1.0), RNE, f)), (CANON_D, NV));
        assert_eq!(
            run(|f| sqrt(Fmt::D, d(f64::NEG_INFINITY), RNE, f)),
            (CANON_D, NV)
        );
        assert_eq!(run(|f| sqrt(Fmt::D, d(-0.0), RNE, f)), (d(-0.0), 0));
        assert_eq!(run(|f| sqrt(Fmt::S, s(4.0), RNE, f)), (s(2.0), 0));
        assert_eq!(run(|f| sqrt(Fmt::D, d(2.0), RNE, f)), (d(2f64.sqrt()), NX));
        assert_eq!(
            run(|f| sqrt(Fmt::S, sb(QNAN_S), RNE, f)),
            (BOXED_CANON_S, 0)
        );
    }

    #[test]
    fn divide_by_zero() {
        let r = run(|f| arith(Fmt::S, ArithOp::Div, s(1.0), s(0.0), RNE, f));
        assert_eq!(r, (s(f32::INFINITY), DZ));
        let r = run(|f| arith(Fmt::D, ArithOp::Div, d(-1.0), d(0.0), RNE, f));
        assert_eq!(r, (d(f64::NEG_INFINITY), DZ));
        let r = run(|f| arith(Fmt::D, ArithOp::Div, d(1.0), d(-0.0), RTZ, f));
        assert_eq!(r, (d(f64::NEG_INFINITY), DZ));
        let r = run(|f| arith(Fmt::D, ArithOp::Div, d(0.0), d(0.0), RNE, f));
        assert_eq!(r, (CANON_D, NV));
        let r = run(|f| arith(Fmt::S, ArithOp::Div, s(f32::INFINITY), s(0.0), RNE, f));
        assert_eq!(r, (s(f32::INFINITY), 0));
    }

    #[test]
    fn overflow() {
        let max_s = s(f32::MAX);
        let expect = [
            s(f32::INFINITY),
            max_s,
            max_s,
            s(f32::INFINITY),
            s(f32::INFINITY),
        ];
        for rm in ALL_RM {
            let r = run(|f| arith(Fmt::S, ArithOp::Mul, max_s, s(2.0), rm, f));
            assert_eq!(r, (expect[rm as usize], OF | NX), "rm {rm}");
        }
        let r = run(|f| arith(Fmt::D, ArithOp::Add, d(f64::MAX), d(f64::MAX), RNE, f));
        assert_eq!(r, (d(f64::INFINITY), OF | NX));
        let r = run(|f| arith(Fmt::D, ArithOp::Mul, d(-f64::MAX), d(2.0), RUP, f));
        assert_eq!(r, (d(-f64::MAX), OF | NX));
        let r = run(|f| convert(Fmt::D, Fmt::S, d(1e300), RNE, f));
        assert_eq!(r, (s(f32::INFINITY), OF | NX));
    }

    #[test]
    fn underflow_tininess_after_rounding() {
        let mul_s = |a: u32, b: u32, rm| run(|f| arith(Fmt::S, ArithOp::Mul, sb(a), sb(b), rm, f));
        // (1 + 2^-23) * 2^-126 * (1 - 2^-23) = 2^-126 * (1 - 2^-46): below the smallest
        // normal, but rounding it to 24 bits with an unbounded exponent gives 2^-126, so it
        // is not tiny after rounding: the result is the smallest normal with NX only (a
        // before-rounding implementation would also raise UF).
        assert_eq!(mul_s(0x3f80_0001, 0x007f_ffff, RNE), (sb(0x0080_0000), NX));
        // (1 - 2^-24) * 2^-126 = 2^-126 - 2^-150: exactly representable with 24 bits and an
        // unbounded exponent, so tiny after rounding; inexact as a subnormal, it rounds (to
        // even) to the smallest normal and raises UF | NX.
        assert_eq!(
            mul_s(0x3f7f_ffff, 0x0080_0000, RNE),
            (sb(0x0080_0000), UF | NX)
        );
        assert_eq!(
            mul_s(0x3f7f_ffff, 0x0080_0000, RTZ),
            (sb(0x007f_ffff), UF | NX)
        );
        // Tiny but exact: no UF.
        assert_eq!(mul_s(0x3f00_0000, 0x0080_0000, RNE), (sb(0x0040_0000), 0));
        // Tiny and inexact, rounding to zero.
        assert_eq!(mul_s(0x0000_0001, 0x3f00_0000, RNE), (sb(0), UF | NX));
        // Double: (1 + 2^-52) * 2^-1022 * (1 - 2^-52) = 2^-1022 * (1 - 2^-104).
        let r = run(|f| {
            arith(
                Fmt::D,
                ArithOp::Mul,
                0x3ff0_0000_0000_0001,
                0x000f_ffff_ffff_ffff,
                RNE,
                f,
            )
        });
        assert_eq!(r, (0x0010_0000_0000_0000, NX));
        let r = run(|f| {
            arith(
                Fmt::D,
                ArithOp::Mul,
                0x3fef_ffff_ffff_ffff,
                0x0010_0000_0000_0000,
                RNE,
                f,
            )
        });
        assert_eq!(r, (0x0010_0000_0000_0000, UF | NX));
    }

    #[test]
    fn fclass_all() {
        let cases_s: [(u32, u64); 10] = [
            (0xff80_0000, 1 << 0),
            (0xbf80_0000, 1 << 1),
            (0x8000_0001, 1 << 2),
            (0x8000_0000, 1 << 3),
            (0x0000_0000, 1 << 4),
            (0x007f_ffff, 1 << 5),
            (0x3f80_0000, 1 << 6),
            (0x7f80_0000, 1 << 7),
            (0x7fbf_ffff, 1 << 8),
            (0xffc0_0000, 1 << 9),
        ];
        for (v, m) in cases_s {
            assert_eq!(classify(Fmt::S, sb(v)), m, "{v:#x}");
        }
        let cases_d: [(u64, u64); 10] = [
            (0xfff0_0000_0000_0000, 1 << 0),
            (0x8010_0000_0000_0000, 1 << 1),
            (0x800f_ffff_ffff_ffff, 1 << 2),
            (0x8000_0000_0000_0000, 1 << 3),
            (0x0000_0000_0000_0000, 1 << 4),
            (0x0000_0000_0000_0001, 1 << 5),
            (0x7fef_ffff_ffff_ffff, 1 << 6),
            (0x7ff0_0000_0000_0000, 1 << 7),
            (0xfff0_0000_0000_0001, 1 << 8),
            (0x7ff8_0000_0000_0000, 1 << 9),
        ];
        for (v, m) in cases_d {
            assert_eq!(classify(Fmt::D, v), m, "{v:#x}");
        }
    }

    #[test]
    fn fma_cases() {
        // 0 * inf + qNaN raises NV in every form and both formats.
        for op in [FmaOp::Madd, FmaOp::Msub, FmaOp::Nmsub, FmaOp::Nmadd] {
            let r = run(|f| fma(Fmt::S, op, s(0.0), s(f32::INFINITY), sb(QNAN_S), RNE, f));
            assert_eq!(r, (BOXED_CANON_S, NV), "{op:?}");
            let r = run(|f| fma(Fmt::D, op, d(f64::NEG_INFINITY), d(-0.0), QNAN_D, RNE, f));
            assert_eq!(r, (CANON_D, NV), "{op:?}");
        }
        // inf - inf inside the fma.
        let r = run(|f| {
            fma(
                Fmt::D,
                FmaOp::Msub,
                d(f64::INFINITY),
                d(1.0),
                d(f64::INFINITY),
                RNE,
                f,
            )
        });
        assert_eq!(r, (CANON_D, NV));
        // Signs of each form: a=2, b=3, c=1.
        let expect = [
            (FmaOp::Madd, 7.0),
            (FmaOp::Msub, 5.0),
            (FmaOp::Nmsub, -5.0),
            (FmaOp::Nmadd, -7.0),
        ];
        for (op, e) in expect {
            let r = run(|f| fma(Fmt::S, op, s(2.0), s(3.0), s(1.0), RNE, f));
            assert_eq!(r, (s(e), 0), "{op:?}");
            let r = run(|f| fma(Fmt::D, op, d(2.0), d(3.0), d(1.0), RNE, f));
            assert_eq!(r, (d(e as f64), 0), "{op:?}");
        }
        // Zero signs: -(0*1) - 0 = -0; -(0*1) + 0 = +0 (RNE) or -0 (RDN); 0*1 - 0 = +0.
        let z = |op, rm| run(|f| fma(Fmt::D, op, d(0.0), d(1.0), d(0.0), rm, f));
        assert_eq!(z(FmaOp::Nmadd, RNE), (d(-0.0), 0));
        assert_eq!(z(FmaOp::Nmsub, RNE), (d(0.0), 0));
        assert_eq!(z(FmaOp::Nmsub, RDN), (d(-0.0), 0));
        assert_eq!(z(FmaOp::Msub, RNE), (d(0.0), 0));
        assert_eq!(z(FmaOp::Madd, RDN), (d(0.0), 0));
        // Single rounding: (1 + 2^-30)^2 - 1 = 2^-29 + 2^-60 exactly.
        let a = d(1.0 + 2f64.powi(-30));
        let r = run(|f| fma(Fmt::D, FmaOp::Madd, a, a, d(-1.0), RNE, f));
        assert_eq!(r, (d(2f64.powi(-29) + 2f64.powi(-60)), 0));
        let r = run(|f| fma(Fmt::D, FmaOp::Msub, a, a, d(1.0), RNE, f));
        assert_eq!(r, (d(2f64.powi(-29) + 2f64.powi(-60)), 0));
        // Single: (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24.
        let a = s(1.0 + 2f32.powi(-12));
        let r = run(|f| fma(Fmt::S, FmaOp::Nmsub, a, a, s(1.0), RNE, f));
        assert_eq!(r, (s(-(2f32.powi(-11) + 2f32.powi(-24))), 0));
        // Improperly boxed addend is the canonical (quiet) NaN: no NV for finite product.
        let r = run(|f| fma(Fmt::S, FmaOp::Madd, s(1.0), s(1.0), 0x3f80_0000, RNE, f));
        assert_eq!(r, (BOXED_CANON_S, 0));
    }

    #[test]
    fn sign_injection() {
        assert_eq!(sgnj(Fmt::S, SgnjOp::J, s(1.0), s(-2.0)), s(-1.0));
        assert_eq!(sgnj(Fmt::S, SgnjOp::Jn, s(1.0), s(-2.0)), s(1.0));
        assert_eq!(sgnj(Fmt::S, SgnjOp::Jx, s(-1.0), s(-2.0)), s(1.0));
        assert_eq!(sgnj(Fmt::D, SgnjOp::Jn, d(3.0), d(3.0)), d(-3.0));
        assert_eq!(sgnj(Fmt::D, SgnjOp::Jx, d(-3.0), d(3.0)), d(-3.0));
        // NaN payloads pass through untouched.
        assert_eq!(
            sgnj(Fmt::S, SgnjOp::Jn, sb(SNAN_S), s(1.0)),
            sb(SNAN_S | 0x8000_0000)
        );
        assert_eq!(sgnj(Fmt::D, SgnjOp::J, QNAN_D, d(1.0)), QNAN_D & !(1 << 63));
    }

    #[test]
    fn convert_nan_and_values() {
        let r = run(|f| convert(Fmt::S, Fmt::D, sb(SNAN_S), RNE, f));
        assert_eq!(r, (CANON_D, NV));
        let r = run(|f| convert(Fmt::S, Fmt::D, sb(0xffc1_2345), RNE, f));
        assert_eq!(r, (CANON_D, 0));
        let r = run(|f| convert(Fmt::S, Fmt::D, 0x3f80_0000, RNE, f)); // improperly boxed
        assert_eq!(r, (CANON_D, 0));
        let r = run(|f| convert(Fmt::D, Fmt::S, SNAN_D, RNE, f));
        assert_eq!(r, (BOXED_CANON_S, NV));
        let r = run(|f| convert(Fmt::D, Fmt::S, QNAN_D, RNE, f));
        assert_eq!(r, (BOXED_CANON_S, 0));
        let r = run(|f| convert(Fmt::S, Fmt::D, s(-1.5), RNE, f));
        assert_eq!(r, (d(-1.5), 0));
        let r = run(|f| convert(Fmt::S, Fmt::D, sb(0x0000_0001), RNE, f));
        assert_eq!(r, (d(2f64.powi(-149)), 0));
        let r = run(|f| convert(Fmt::D, Fmt::S, d(1e-50), RNE, f));
        assert_eq!(r, (s(0.0), UF | NX));
    }

    #[test]
    fn flags_accrue() {
        let mut fl = DZ;
        let r = arith(Fmt::D, ArithOp::Div, d(1.0), d(3.0), RNE, &mut fl);
        assert_eq!((r, fl), (d(1.0 / 3.0), DZ | NX));
        let r = arith(Fmt::D, ArithOp::Add, d(1.0), d(1.0), RNE, &mut fl);
        assert_eq!((r, fl), (d(2.0), DZ | NX));
        let _ = cmp(Fmt::S, CmpOp::Lt, sb(QNAN_S), s(1.0), &mut fl);
        assert_eq!(fl, NV | DZ | NX);
        // A previous operation's flags do not leak into the next one.
        let mut fl2 = 0;
        let _ = arith(Fmt::S, ArithOp::Add, s(1.0), s(2.0), RNE, &mut fl2);
        assert_eq!(fl2, 0);
    }

    #[test]
    fn rounding_modes_of_a_sum() {
        let x = d(1.5 * 2f64.powi(-53)); // 0.75 ulp of 1.0
        let up = 0x3ff0_0000_0000_0001;
        let down = 0x3ff0_0000_0000_0000;
        let expect = [up, down, down, up, up];
        for (rm, e) in ALL_RM.into_iter().zip(expect) {
            let r = run(|f| arith(Fmt::D, ArithOp::Add, d(1.0), x, rm, f));
            assert_eq!(r, (e, NX), "rm {rm}");
            // The same below zero: RDN and RUP swap.
            let r = run(|f| arith(Fmt::D, ArithOp::Sub, d(-1.0), x, rm, f));
            let e_neg = if rm == RDN || rm == RUP {
                up ^ down ^ e
            } else {
                e
            };
            assert_eq!(r, (e_neg | 1 << 63, NX), "rm {rm}");
        }
    }
}
