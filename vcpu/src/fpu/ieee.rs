//! The rounding core of [`super`]: binary32 and binary64 values taken apart into an exact
//! `m × 2^e` form, computed on exactly (or with the bits below the result's precision
//! folded into one sticky bit), and rounded back under one of the five RISC-V rounding
//! modes (unprivileged spec, "F" chapter, section "Floating-Point Control and Status
//! Register", table "Rounding mode encoding").
//!
//! Everything here is pure integer arithmetic on `u64`/`u128`: no host floating point, no
//! global state, no allocation, the same results on every host.
//!
//! The RISC-V choices IEEE 754-2019 leaves open:
//! - tininess is detected *after* rounding (unprivileged spec, "F" chapter, "Floating-Point
//!   Control and Status Register": "tininess is detected after rounding"); underflow (UF) is
//!   raised when the result is tiny and inexact;
//! - every NaN result is the canonical NaN (section "NaN Generation and Propagation");
//!   signaling NaN operands raise NV.

use std::cmp::Ordering;

/// Invalid operation (fflags bit 4).
pub const NV: u8 = 0x10;
/// Divide by zero (fflags bit 3).
pub const DZ: u8 = 0x08;
/// Overflow (fflags bit 2).
pub const OF: u8 = 0x04;
/// Underflow (fflags bit 1).
pub const UF: u8 = 0x02;
/// Inexact (fflags bit 0).
pub const NX: u8 = 0x01;

/// Round to nearest, ties to even.
pub const RNE: u8 = 0;
/// Round towards zero.
pub const RTZ: u8 = 1;
/// Round down (towards -infinity).
pub const RDN: u8 = 2;
/// Round up (towards +infinity).
pub const RUP: u8 = 3;
/// Round to nearest, ties to max magnitude.
pub const RMM: u8 = 4;

/// A binary interchange format: its trailing significand and exponent field widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    /// Trailing significand bits (`p - 1`).
    pub frac_bits: u32,
    /// Exponent field bits.
    pub exp_bits: u32,
}

/// binary32.
pub const B32: Format = Format {
    frac_bits: 23,
    exp_bits: 8,
};

/// binary64.
pub const B64: Format = Format {
    frac_bits: 52,
    exp_bits: 11,
};

impl Format {
    #[inline]
    fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }

    /// The exponent field of infinities and NaNs.
    #[inline]
    fn exp_max(self) -> i32 {
        (1 << self.exp_bits) - 1
    }

    #[inline]
    fn frac_mask(self) -> u64 {
        (1 << self.frac_bits) - 1
    }

    #[inline]
    fn sign_shift(self) -> u32 {
        self.frac_bits + self.exp_bits
    }

    /// The canonical NaN: positive, quiet, only the quiet bit set.
    #[inline]
    pub fn canonical_nan(self) -> u64 {
        ((self.exp_max() as u64) << self.frac_bits) | 1 << (self.frac_bits - 1)
    }

    /// Infinity with `sign`, encoded.
    #[inline]
    pub fn inf(self, sign: bool) -> u64 {
        self.pack(sign, self.exp_max() as u64, 0)
    }

    /// Zero with `sign`, encoded.
    #[inline]
    pub fn zero(self, sign: bool) -> u64 {
        (sign as u64) << self.sign_shift()
    }

    /// The largest finite magnitude with `sign`.
    #[inline]
    fn max_finite(self, sign: bool) -> u64 {
        self.pack(sign, (self.exp_max() - 1) as u64, self.frac_mask())
    }

    /// Sign, exponent field and significand *added* (not OR-ed): a significand carrying its
    /// leading bit at `frac_bits` adds one to the exponent field, which is how a normal
    /// value is packed from `exp - 1` and how a subnormal that rounds up becomes the
    /// smallest normal.
    #[inline]
    fn pack(self, sign: bool, exp_field: u64, sig: u64) -> u64 {
        ((sign as u64) << self.sign_shift()) + (exp_field << self.frac_bits) + sig
    }

    /// Takes a value's bits apart.
    #[inline]
    pub fn unpack(self, v: u64) -> Unpacked {
        let sign = (v >> self.sign_shift()) & 1 != 0;
        let exp = ((v >> self.frac_bits) as i32) & self.exp_max();
        let frac = v & self.frac_mask();
        let class = if exp == self.exp_max() {
            if frac == 0 {
                Class::Inf
            } else {
                Class::Nan {
                    signaling: frac >> (self.frac_bits - 1) == 0,
                }
            }
        } else if exp == 0 {
            if frac == 0 {
                Class::Zero
            } else {
                Class::Finite {
                    m: frac,
                    e: 1 - self.bias() - self.frac_bits as i32,
                }
            }
        } else {
            Class::Finite {
                m: frac | 1 << self.frac_bits,
                e: exp - self.bias() - self.frac_bits as i32,
            }
        };
        Unpacked { sign, class }
    }

    /// Rounds `(-1)^sign × m × 2^e` to this format under `rm`, raising NX, UF and OF as
    /// IEEE 754-2019 section 7 says with tininess detected after rounding. `m` must not be
    /// zero; bits of the exact value below `m`'s last bit, if any, must already be folded
    /// into its least significant bit (a "sticky" bit), with at least two bits of `m` below
    /// the result's last significand bit whenever that happened.
    pub fn round_pack(self, sign: bool, m: u128, e: i32, rm: u8, flags: &mut u8) -> u64 {
        debug_assert!(m != 0);
        if m >> 64 == 0 {
            return self.round_pack64(sign, m as u64, e, rm, flags);
        }
        // Normalize: the leading one at bit 62 of `sig`, the value sig / 2^62 × 2^(be - bias).
        let top = 127 - m.leading_zeros() as i32;
        let sig = shr_jam128(m, (top - 62) as u32) as u64;
        self.round_sig(sign, sig, e + top + self.bias(), rm, flags)
    }

    /// [`Format::round_pack`] for a `u64` magnitude.
    #[inline]
    pub fn round_pack64(self, sign: bool, m: u64, e: i32, rm: u8, flags: &mut u8) -> u64 {
        debug_assert!(m != 0);
        let top = 63 - m.leading_zeros() as i32;
        let sig = if top > 62 {
            (m >> 1) | (m & 1)
        } else {
            m << (62 - top)
        };
        self.round_sig(sign, sig, e + top + self.bias(), rm, flags)
    }

    /// Rounds `(-1)^sign × sig / 2^62 × 2^(be - bias)` (the leading one of `sig` at bit 62,
    /// `be` the biased exponent it would have, any value) and packs it.
    #[inline]
    fn round_sig(self, sign: bool, sig: u64, be: i32, rm: u8, flags: &mut u8) -> u64 {
        // Bits rounded off below the significand's last bit.
        let r = 62 - self.frac_bits;
        if be <= 0 {
            // Below the normal range before rounding. Tiny after rounding unless rounding to
            // the format's precision with an unbounded exponent reaches 2^emin.
            let tiny = be < 0 || round_bits(sig, r, rm, sign).0 < 1 << (self.frac_bits + 1);
            let sub = shr_jam64(sig, (1 - be) as u32);
            let (q, inexact) = round_bits(sub, r, rm, sign);
            if inexact {
                *flags |= NX;
                if tiny {
                    *flags |= UF;
                }
            }
            return self.pack(sign, 0, q);
        }
        let (mut q, inexact) = round_bits(sig, r, rm, sign);
        let mut be = be;
        if q == 1 << (self.frac_bits + 1) {
            q >>= 1;
            be += 1;
        }
        if be >= self.exp_max() {
            *flags |= OF | NX;
            let to_inf = match rm {
                RTZ => false,
                RDN => sign,
                RUP => !sign,
                _ => true,
            };
            return if to_inf {
                self.inf(sign)
            } else {
                self.max_finite(sign)
            };
        }
        if inexact {
            *flags |= NX;
        }
        self.pack(sign, (be - 1) as u64, q)
    }
}

/// What a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Not a number.
    Nan {
        /// A signaling NaN (the quiet bit clear).
        signaling: bool,
    },
    /// Infinity.
    Inf,
    /// Zero.
    Zero,
    /// Nonzero and finite: the magnitude is exactly `m × 2^e`.
    Finite {
        /// The significand.
        m: u64,
        /// The exponent.
        e: i32,
    },
}

/// A value taken apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unpacked {
    /// The sign bit.
    pub sign: bool,
    /// What the magnitude is.
    pub class: Class,
}

impl Unpacked {
    /// Whether the value is a NaN.
    #[inline]
    pub fn is_nan(&self) -> bool {
        matches!(self.class, Class::Nan { .. })
    }

    /// Whether the value is a signaling NaN.
    #[inline]
    pub fn is_snan(&self) -> bool {
        matches!(self.class, Class::Nan { signaling: true })
    }
}

/// Rounds `sig` to an integer after dropping its `r` (1..=63) low bits under `rm`, for a
/// value of sign `sign`; returns the rounded quotient and whether anything was dropped.
#[inline]
pub fn round_bits(sig: u64, r: u32, rm: u8, sign: bool) -> (u64, bool) {
    let rem = sig & ((1 << r) - 1);
    let half = 1 << (r - 1);
    let q = sig >> r;
    let up = match rm {
        RTZ => false,
        RDN => sign && rem != 0,
        RUP => !sign && rem != 0,
        RMM => rem >= half,
        _ => rem > half || (rem == half && q & 1 == 1),
    };
    (q + up as u64, rem != 0)
}

/// `x >> n`, with a one OR-ed into the result's last bit if any one bit was shifted out.
#[inline]
pub fn shr_jam64(x: u64, n: u32) -> u64 {
    if n == 0 {
        x
    } else if n < 64 {
        (x >> n) | (x << (64 - n) != 0) as u64
    } else {
        (x != 0) as u64
    }
}

/// [`shr_jam64`] for `u128`.
#[inline]
pub fn shr_jam128(x: u128, n: u32) -> u128 {
    if n == 0 {
        x
    } else if n < 128 {
        (x >> n) | (x << (128 - n) != 0) as u128
    } else {
        (x != 0) as u128
    }
}

// ---------------------------------------------------------------------------------------------
// Operations on finite operands and the special cases around them.
// ---------------------------------------------------------------------------------------------

/// The result of an operation with a NaN operand: the canonical NaN, NV if one is signaling.
#[inline]
fn nan_result(f: Format, ops: &[Unpacked], flags: &mut u8) -> u64 {
    if ops.iter().any(Unpacked::is_snan) {
        *flags |= NV;
    }
    f.canonical_nan()
}

/// An invalid operation: the canonical NaN with NV.
#[inline]
fn invalid(f: Format, flags: &mut u8) -> u64 {
    *flags |= NV;
    f.canonical_nan()
}

/// The sign of an exact zero sum of operands of opposite signs (IEEE 754-2019 section 6.3):
/// -0 when rounding down, +0 otherwise.
#[inline]
fn zero_sum_sign(rm: u8) -> bool {
    rm == RDN
}

/// Defines `$name(f, (sx, mx, ex), (sy, my, ey), rm, flags)`: `(-1)^sx × mx × 2^ex +
/// (-1)^sy × my × 2^ey` rounded once, in `$t`, neither magnitude zero. Both are aligned to a
/// common exponent `e0` that puts the larger top at bit `$top` (a carry fits in the bit
/// above). An operand whose bits reach below `e0` is then far below the other's top (at
/// least 9 bits in `u64` with 53-bit significands, 19 in `u128` with a 106-bit product):
/// shifting it with a sticky bit keeps the sum correctly rounded, since cancellation then
/// removes at most one bit.
macro_rules! add_finite {
    ($(#[$attr:meta])* $name:ident, $t:ty, $top:expr, $shr_jam:ident, $round_pack:ident) => {
        $(#[$attr])*
        fn $name(
            f: Format,
            (sx, mx, ex): (bool, $t, i32),
            (sy, my, ey): (bool, $t, i32),
            rm: u8,
            flags: &mut u8,
        ) -> u64 {
            let top = |m: $t, e: i32| e + (<$t>::BITS - m.leading_zeros()) as i32;
            let e0 = top(mx, ex).max(top(my, ey)) - ($top + 1);
            let align = |m: $t, e: i32| {
                if e >= e0 {
                    m << (e - e0)
                } else {
                    $shr_jam(m, (e0 - e) as u32)
                }
            };
            let (ax, ay) = (align(mx, ex), align(my, ey));
            let (sign, m) = if sx == sy {
                (sx, ax + ay)
            } else if ax >= ay {
                (sx, ax - ay)
            } else {
                (sy, ay - ax)
            };
            if m == 0 {
                return f.zero(zero_sum_sign(rm));
            }
            f.$round_pack(sign, m, e0, rm, flags)
        }
    };
}

add_finite!(
    /// Sums with a product (the fused multiply-add).
    add_finite,
    u128,
    125,
    shr_jam128,
    round_pack
);
add_finite!(
    /// Sums of two operands (53-bit significands at most).
    #[inline]
    add_finite64,
    u64,
    61,
    shr_jam64,
    round_pack64
);

/// `x + y` (`sub`: `x - y`).
pub fn add(f: Format, x: u64, y: u64, sub: bool, rm: u8, flags: &mut u8) -> u64 {
    let (x, mut y) = (f.unpack(x), f.unpack(y));
    y.sign ^= sub;
    match (x.class, y.class) {
        _ if x.is_nan() || y.is_nan() => nan_result(f, &[x, y], flags),
        (Class::Inf, Class::Inf) if x.sign != y.sign => invalid(f, flags),
        (Class::Inf, _) => f.inf(x.sign),
        (_, Class::Inf) => f.inf(y.sign),
        (Class::Zero, Class::Zero) => f.zero(if x.sign == y.sign {
            x.sign
        } else {
            zero_sum_sign(rm)
        }),
        (Class::Zero, Class::Finite { m, e }) => f.round_pack64(y.sign, m, e, rm, flags),
        (Class::Finite { m, e }, Class::Zero) => f.round_pack64(x.sign, m, e, rm, flags),
        (Class::Finite { m: mx, e: ex }, Class::Finite { m: my, e: ey }) => {
            add_finite64(f, (x.sign, mx, ex), (y.sign, my, ey), rm, flags)
        }
        _ => unreachable!("NaN cases handled first"),
    }
}

/// `x × y`.
pub fn mul(f: Format, x: u64, y: u64, rm: u8, flags: &mut u8) -> u64 {
    let (x, y) = (f.unpack(x), f.unpack(y));
    let sign = x.sign != y.sign;
    match (x.class, y.class) {
        _ if x.is_nan() || y.is_nan() => nan_result(f, &[x, y], flags),
        (Class::Inf, Class::Zero) | (Class::Zero, Class::Inf) => invalid(f, flags),
        (Class::Inf, _) | (_, Class::Inf) => f.inf(sign),
        (Class::Zero, _) | (_, Class::Zero) => f.zero(sign),
        (Class::Finite { m: mx, e: ex }, Class::Finite { m: my, e: ey }) => {
            f.round_pack(sign, mx as u128 * my as u128, ex + ey, rm, flags)
        }
        _ => unreachable!("NaN cases handled first"),
    }
}

/// `x ÷ y`.
pub fn div(f: Format, x: u64, y: u64, rm: u8, flags: &mut u8) -> u64 {
    let (x, y) = (f.unpack(x), f.unpack(y));
    let sign = x.sign != y.sign;
    match (x.class, y.class) {
        _ if x.is_nan() || y.is_nan() => nan_result(f, &[x, y], flags),
        (Class::Inf, Class::Inf) | (Class::Zero, Class::Zero) => invalid(f, flags),
        (Class::Inf, _) => f.inf(sign),
        (_, Class::Inf) | (Class::Zero, _) => f.zero(sign),
        (_, Class::Zero) => {
            *flags |= DZ;
            f.inf(sign)
        }
        (Class::Finite { m: mx, e: ex }, Class::Finite { m: my, e: ey }) => {
            // Dividend's leading one at bit 127, divisor's at bit 52: a quotient of 75 or 76
            // bits, the remainder folded into its last bit.
            let sx = mx.leading_zeros() + 64;
            let sy = my.leading_zeros() - 11;
            let n = (mx as u128) << sx;
            let d = (my as u128) << sy;
            let q = n / d;
            let m = q | !n.is_multiple_of(d) as u128;
            f.round_pack(sign, m, ex - sx as i32 - (ey - sy as i32), rm, flags)
        }
        _ => unreachable!("NaN cases handled first"),
    }
}

/// `√x`.
pub fn sqrt(f: Format, x: u64, rm: u8, flags: &mut u8) -> u64 {
    let x = f.unpack(x);
    match x.class {
        Class::Nan { .. } => nan_result(f, &[x], flags),
        Class::Zero => f.zero(x.sign),
        _ if x.sign => invalid(f, flags),
        Class::Inf => f.inf(false),
        Class::Finite { m, e } => {
            // Leading one at bit 124 or 125, with an even exponent left: a 63-bit root.
            let mut k = m.leading_zeros() as i32 + 61;
            if (e - k) & 1 != 0 {
                k += 1;
            }
            let n = (m as u128) << k;
            let root = n.isqrt();
            let r = root as u64 | (root * root != n) as u64;
            f.round_pack64(false, r, (e - k) / 2, rm, flags)
        }
    }
}

/// `x × y + z`, rounded once. The caller negates operands for the other three forms.
/// `0 × ∞` raises NV even when `z` is a quiet NaN (unprivileged spec, "F" chapter,
/// "Single-Precision Floating-Point Computational Instructions").
pub fn mul_add(f: Format, x: u64, y: u64, z: u64, rm: u8, flags: &mut u8) -> u64 {
    let (x, y, z) = (f.unpack(x), f.unpack(y), f.unpack(z));
    let inf_times_zero = matches!(
        (x.class, y.class),
        (Class::Inf, Class::Zero) | (Class::Zero, Class::Inf)
    );
    if x.is_nan() || y.is_nan() || z.is_nan() {
        if inf_times_zero {
            *flags |= NV;
        }
        return nan_result(f, &[x, y, z], flags);
    }
    if inf_times_zero {
        return invalid(f, flags);
    }
    let sp = x.sign != y.sign;
    let product_inf = matches!(x.class, Class::Inf) || matches!(y.class, Class::Inf);
    match z.class {
        Class::Inf if product_inf && sp != z.sign => return invalid(f, flags),
        Class::Inf => return f.inf(z.sign),
        _ if product_inf => return f.inf(sp),
        _ => {}
    }
    let product = match (x.class, y.class) {
        (Class::Finite { m: mx, e: ex }, Class::Finite { m: my, e: ey }) => {
            Some((mx as u128 * my as u128, ex + ey))
        }
        _ => None, // a zero product
    };
    match (product, z.class) {
        (None, Class::Zero) => f.zero(if sp == z.sign { sp } else { zero_sum_sign(rm) }),
        (None, Class::Finite { m, e }) => f.round_pack64(z.sign, m, e, rm, flags),
        (Some((m, e)), Class::Zero) => f.round_pack(sp, m, e, rm, flags),
        (Some((mp, ep)), Class::Finite { m, e }) => {
            add_finite(f, (sp, mp, ep), (z.sign, m as u128, e), rm, flags)
        }
        _ => unreachable!("NaN and infinity cases handled above"),
    }
}

/// `x == y` (`signaling`: `x < y` or `x <= y` raise NV for any NaN; `==` only for
/// signaling ones). `None` when unordered.
pub fn compare(f: Format, x: u64, y: u64, signaling: bool, flags: &mut u8) -> Option<Ordering> {
    let (ux, uy) = (f.unpack(x), f.unpack(y));
    if ux.is_nan() || uy.is_nan() {
        if signaling || ux.is_snan() || uy.is_snan() {
            *flags |= NV;
        }
        return None;
    }
    if ux.class == Class::Zero && uy.class == Class::Zero {
        return Some(Ordering::Equal);
    }
    // Sign-magnitude to a total order (zeros handled above).
    let key = |u: Unpacked, v: u64| {
        let mag = v & !(1 << f.sign_shift());
        if u.sign {
            -(mag as i128)
        } else {
            mag as i128
        }
    };
    Some(key(ux, x).cmp(&key(uy, y)))
}

/// Converts `x` to an integer of `bits` (32 or 64) bits, signed or not, rounding under
/// `rm`. Out-of-range values, infinities and NaNs give the RISC-V results of the "F"
/// chapter's table "Domains of float-to-integer conversions and behavior for invalid
/// inputs" (NaN and too large positive values: the largest integer; too large negative
/// values: the smallest) with NV; in-range inexact results raise NX. The result is the
/// integer's two's-complement bits, `bits` wide, zero-extended to 64.
pub fn to_int(f: Format, x: u64, bits: u32, signed: bool, rm: u8, flags: &mut u8) -> u64 {
    let x = f.unpack(x);
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    let max = if signed { mask >> 1 } else { mask };
    let min = if signed { (mask >> 1) + 1 } else { 0 }; // the bits of -2^(bits-1)
    let out_of_range = |neg: bool, flags: &mut u8| {
        *flags |= NV;
        if neg {
            min
        } else {
            max
        }
    };
    let (mag, inexact) = match x.class {
        Class::Nan { .. } => return out_of_range(false, flags),
        Class::Inf => return out_of_range(x.sign, flags),
        Class::Zero => return 0,
        Class::Finite { m, e } => {
            if e >= 0 {
                if 64 - m.leading_zeros() + e as u32 > 64 {
                    return out_of_range(x.sign, flags);
                }
                (m << e, false)
            } else {
                // Two extra bits (half and sticky) below the integer's last bit.
                let v = shr_jam128((m as u128) << 2, (-e) as u32) as u64;
                round_bits(v, 2, rm, x.sign)
            }
        }
    };
    let in_range = match (x.sign, signed) {
        (true, false) => mag == 0,
        // -2^(bits-1), the most negative, has the magnitude `min`.
        (true, true) => mag <= min,
        (false, _) => mag <= max,
    };
    if !in_range {
        return out_of_range(x.sign, flags);
    }
    if inexact {
        *flags |= NX;
    }
    if x.sign {
        mag.wrapping_neg() & mask
    } else {
        mag
    }
}

/// Converts the integer `(-1)^sign × mag` to this format, rounding under `rm`.
pub fn from_int(f: Format, sign: bool, mag: u64, rm: u8, flags: &mut u8) -> u64 {
    if mag == 0 {
        return f.zero(false);
    }
    f.round_pack64(sign, mag, 0, rm, flags)
}

/// Converts `x` from format `from` to format `to`, rounding under `rm` (NaNs become the
/// canonical NaN of `to`, NV if signaling).
pub fn convert(from: Format, to: Format, x: u64, rm: u8, flags: &mut u8) -> u64 {
    let u = from.unpack(x);
    match u.class {
        Class::Nan { .. } => nan_result(to, &[u], flags),
        Class::Inf => to.inf(u.sign),
        Class::Zero => to.zero(u.sign),
        Class::Finite { m, e } => to.round_pack64(u.sign, m, e, rm, flags),
    }
}
