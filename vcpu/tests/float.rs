// Binary literals are grouped by instruction field (funct3, registers, opcode), not by nibble.
#![allow(clippy::unusual_byte_groupings)]
//! F and D special cases through the hart: NaN-boxing, invalid conversions, signed zeros,
//! exception flags and rounding-mode handling (unprivileged spec "F" and "D" chapters).

mod common;

use common::*;
use vcpu::trap::cause;

const CANON_D: u64 = 0x7ff8_0000_0000_0000;
const CANON_S: u32 = 0x7fc0_0000;
const SNAN_D: u64 = 0x7ff0_0000_0000_0001;
const PINF_D: u64 = 0x7ff0_0000_0000_0000;
const NINF_D: u64 = 0xfff0_0000_0000_0000;
const NZERO_D: u64 = 1 << 63;
const M: u64 = u64::MAX;

fn d(v: f64) -> u64 {
    v.to_bits()
}
fn boxed(bits: u32) -> u64 {
    0xffff_ffff_0000_0000 | bits as u64
}

/// Enable the FPU (FS = Initial), load f registers with raw bit patterns through FMV.D.X
/// (using x1, x2, ... as transfer registers), run `body`, and leave the final `fflags` in x30.
fn fp_run(f_in: &[(u32, u64)], body: &[u32]) -> Vm {
    let mut vm = Vm::new();
    vm.set_x(27, 1 << 13);
    let mut code = vec![csrrs(0, MSTATUS, 27)];
    for (k, &(fr, bits)) in f_in.iter().enumerate() {
        let xr = 1 + k as u32;
        vm.set_x(xr as usize, bits);
        code.push(fmv_f_x(FMT_D, fr, xr));
    }
    code.extend_from_slice(body);
    code.push(csrr(30, FFLAGS));
    vm.exec(&code);
    vm
}

/// One FCVT-to-integer of `input` (a double): returns (x10, fflags).
fn cvt_d(ifmt: u32, rm: u32, input: u64) -> (u64, u64) {
    let vm = fp_run(&[(1, input)], &[fcvt_to_int(FMT_D, ifmt, 10, 1, rm)]);
    (vm.x(10), vm.x(30))
}

#[test]
fn nan_boxing() {
    let mut vm = Vm::new();
    vm.w64(DATA, 0x1234_5678_3f80_0000);
    vm.w64(DATA + 8, 0x0000_0000_3f80_0000); // not NaN-boxed when loaded with FLD
    vm.w64(DATA + 16, 0xaaaa_aaaa_aaaa_aaaa);
    vm.set_x(27, 1 << 13);
    vm.set_x(1, DATA);
    vm.set_x(2, 0x1234_5678_4000_0000);
    vm.set_x(4, 0x8000_0000);
    vm.exec(&[
        csrrs(0, MSTATUS, 27),
        flw(1, 1, 0),
        fmv_f_x(FMT_S, 2, 2),
        fmv_f_x(FMT_S, 3, 4),
        fmv_x_f(FMT_S, 5, 3),
        fld(4, 1, 8),
        fadd(FMT_S, 5, 4, 4, RNE),
        fsw(4, 1, 16),
        fmv_x_f(FMT_S, 6, 4),
        fcvt_d_s(6, 4, RNE),
        fadd(FMT_S, 7, 1, 1, RNE),
        fsgnj(FMT_S, 8, 4, 1),
        fsgnjn(FMT_S, 9, 4, 1),
        fclass(FMT_S, 7, 4),
        csrr(8, FFLAGS),
        fsd(1, 1, 24),
    ]);
    assert_eq!(vm.f(1), boxed(0x3f80_0000), "FLW NaN-boxes");
    assert_eq!(
        vm.f(2),
        boxed(0x4000_0000),
        "FMV.W.X NaN-boxes and ignores x[63:32]"
    );
    assert_eq!(vm.x(5), 0xffff_ffff_8000_0000, "FMV.X.W sign-extends");
    assert_eq!(
        vm.f(5),
        boxed(CANON_S),
        "an unboxed single operand reads as the canonical NaN"
    );
    assert_eq!(
        vm.r64(DATA + 16),
        0xaaaa_aaaa_3f80_0000,
        "FSW stores the low 32 bits unchecked"
    );
    assert_eq!(vm.x(6), 0x3f80_0000, "FMV.X.W does not check the boxing");
    assert_eq!(vm.f(6), CANON_D, "FCVT.D.S of an unboxed operand");
    assert_eq!(vm.f(7), boxed(0x4000_0000), "1.0f + 1.0f");
    assert_eq!(vm.f(8), boxed(CANON_S), "FSGNJ.S on an unboxed operand");
    assert_eq!(
        vm.f(9),
        boxed(0x8000_0000 | CANON_S),
        "FSGNJN.S on an unboxed operand"
    );
    assert_eq!(vm.x(7), 1 << 9, "FCLASS.S of an unboxed operand: quiet NaN");
    assert_eq!(vm.x(8), 0, "quiet NaN operands raise no flags");
    assert_eq!(
        vm.r64(DATA + 24),
        boxed(0x3f80_0000),
        "FSD stores the whole register"
    );
}

#[test]
fn fcvt_to_int_invalid_and_edges() {
    let cases: &[(u32, u64, u64, u64)] = &[
        (I_W, CANON_D, 0x7fff_ffff, NV),
        (I_W, 0xfff0_0000_0000_0001, 0x7fff_ffff, NV), // negative sNaN: still 2^31-1
        (I_W, 0xfff8_0000_0000_0000, 0x7fff_ffff, NV), // negative qNaN
        (I_WU, CANON_D, M, NV),                        // 2^32-1, sign-extended
        (I_L, CANON_D, i64::MAX as u64, NV),
        (I_LU, CANON_D, M, NV),
        (I_W, NINF_D, 0xffff_ffff_8000_0000, NV),
        (I_W, PINF_D, 0x7fff_ffff, NV),
        (I_L, NINF_D, i64::MIN as u64, NV),
        (I_LU, PINF_D, M, NV),
        (I_WU, d(-1.0), 0, NV),
        (I_LU, d(-1.0), 0, NV),
        (I_W, d(2147483648.0), 0x7fff_ffff, NV),
        (I_W, d(-2147483648.0), 0xffff_ffff_8000_0000, 0),
        (I_W, d(-2147483648.5), 0xffff_ffff_8000_0000, NX),
        (I_WU, d(-0.5), 0, NX), // rounds to 0, which is representable
        (I_L, d(9223372036854775808.0), i64::MAX as u64, NV),
        (I_WU, d(4294967295.0), M, 0), // exact; the 32-bit result is sign-extended
        (I_W, d(-7.9), -7i64 as u64, NX),
        (I_W, NZERO_D, 0, 0),
    ];
    for &(ifmt, input, want, flags) in cases {
        let (got, fl) = cvt_d(ifmt, RTZ, input);
        assert_eq!(
            (got, fl),
            (want, flags),
            "fcvt(int fmt {ifmt}) of {input:#018x}: got {got:#x} flags {fl:#x}"
        );
    }
}

#[test]
fn fmin_fmax_signed_zero_and_nan() {
    let vm = fp_run(
        &[(1, NZERO_D), (2, 0), (3, CANON_D), (4, SNAN_D), (5, d(1.0))],
        &[
            fmin(FMT_D, 10, 1, 2),
            fmin(FMT_D, 11, 2, 1),
            fmax(FMT_D, 12, 1, 2),
            fmax(FMT_D, 13, 2, 1),
            fmin(FMT_D, 14, 3, 5),
            csrrw(10, FFLAGS, 0),
            fmin(FMT_D, 15, 4, 1),
            csrrw(11, FFLAGS, 0),
            fmin(FMT_D, 16, 3, 3),
            fmax(FMT_D, 17, 4, 4),
            csrrw(12, FFLAGS, 0),
            fmax(FMT_D, 18, 5, 3),
        ],
    );
    assert_eq!(vm.f(10), NZERO_D, "fmin(-0, +0) = -0");
    assert_eq!(vm.f(11), NZERO_D, "fmin(+0, -0) = -0");
    assert_eq!(vm.f(12), 0, "fmax(-0, +0) = +0");
    assert_eq!(vm.f(13), 0, "fmax(+0, -0) = +0");
    assert_eq!(vm.f(14), d(1.0), "fmin(qNaN, 1) = 1");
    assert_eq!(vm.x(10), 0, "a quiet NaN operand raises nothing");
    assert_eq!(vm.f(15), NZERO_D, "fmin(sNaN, -0) = -0");
    assert_eq!(vm.x(11), NV, "a signaling NaN operand raises NV");
    assert_eq!(vm.f(16), CANON_D, "both NaN: canonical NaN");
    assert_eq!(vm.f(17), CANON_D);
    assert_eq!(vm.x(12), NV);
    assert_eq!(vm.f(18), d(1.0));

    // Single precision.
    let mut vm = Vm::new();
    vm.set_x(27, 1 << 13);
    vm.set_x(1, 0x8000_0000);
    vm.exec(&[
        csrrs(0, MSTATUS, 27),
        fmv_f_x(FMT_S, 1, 1),
        fmv_f_x(FMT_S, 2, 0),
        fmin(FMT_S, 3, 2, 1),
        fmax(FMT_S, 4, 1, 2),
    ]);
    assert_eq!(vm.f(3), boxed(0x8000_0000));
    assert_eq!(vm.f(4), boxed(0));
}

#[test]
fn fdiv_by_zero_and_invalid() {
    let vm = fp_run(
        &[(1, d(1.0)), (2, 0), (3, NZERO_D), (4, d(-1.0)), (5, PINF_D)],
        &[
            fdiv(FMT_D, 10, 1, 2, RNE),
            csrrw(10, FFLAGS, 0),
            fdiv(FMT_D, 11, 4, 2, RNE),
            csrrw(11, FFLAGS, 0),
            fdiv(FMT_D, 12, 1, 3, RNE),
            csrrw(12, FFLAGS, 0),
            fdiv(FMT_D, 13, 2, 2, RNE),
            csrrw(13, FFLAGS, 0),
            fdiv(FMT_D, 14, 5, 2, RNE),
            csrrw(14, FFLAGS, 0),
            fsqrt(FMT_D, 15, 4, RNE),
            csrrw(15, FFLAGS, 0),
            fsqrt(FMT_D, 16, 3, RNE),
            csrrw(16, FFLAGS, 0),
        ],
    );
    assert_eq!((vm.f(10), vm.x(10)), (PINF_D, DZ), "1 / +0");
    assert_eq!((vm.f(11), vm.x(11)), (NINF_D, DZ), "-1 / +0");
    assert_eq!((vm.f(12), vm.x(12)), (NINF_D, DZ), "1 / -0");
    assert_eq!(
        (vm.f(13), vm.x(13)),
        (CANON_D, NV),
        "0 / 0 is invalid, not divide-by-zero"
    );
    assert_eq!((vm.f(14), vm.x(14)), (PINF_D, 0), "inf / 0 is exact");
    assert_eq!((vm.f(15), vm.x(15)), (CANON_D, NV), "sqrt(-1)");
    assert_eq!((vm.f(16), vm.x(16)), (NZERO_D, 0), "sqrt(-0) = -0");

    // Single precision: 1.0f / 0.0f.
    let mut vm = Vm::new();
    vm.set_x(27, 1 << 13);
    vm.set_x(1, 0x3f80_0000);
    vm.exec(&[
        csrrs(0, MSTATUS, 27),
        fmv_f_x(FMT_S, 1, 1),
        fmv_f_x(FMT_S, 2, 0),
        fdiv(FMT_S, 3, 1, 2, DYN),
        csrr(10, FFLAGS),
    ]);
    assert_eq!(vm.f(3), boxed(0x7f80_0000));
    assert_eq!(vm.x(10), DZ);
}

#[test]
fn flags_accrue() {
    let vm = fp_run(
        &[(1, d(1.0)), (2, 0), (3, d(3.0))],
        &[
            fdiv(FMT_D, 10, 1, 2, RNE),
            fdiv(FMT_D, 11, 1, 3, RNE),
            fadd(FMT_D, 12, 1, 1, RNE),
        ],
    );
    assert_eq!(vm.x(30), DZ | NX);
    assert_eq!(vm.f(11), d(1.0 / 3.0));
    assert_eq!(vm.f(12), d(2.0));
}

#[test]
fn fma_inf_times_zero_plus_qnan_is_invalid() {
    let vm = fp_run(
        &[(1, PINF_D), (2, 0), (3, CANON_D), (4, d(1.5)), (5, d(2.0))],
        &[
            fmadd(FMT_D, 10, 1, 2, 3, RNE),
            csrrw(10, FFLAGS, 0),
            fmadd(FMT_D, 11, 4, 5, 4, RNE),
        ],
    );
    assert_eq!(vm.f(10), CANON_D);
    assert_eq!(vm.x(10), NV, "inf * 0 + qNaN raises NV (RISC-V rule)");
    assert_eq!(vm.f(11), d(4.5));
    assert_eq!(vm.x(30), 0);
}

#[test]
fn compares_and_flags() {
    let vm = fp_run(
        &[(1, CANON_D), (2, d(1.0)), (3, SNAN_D), (4, NZERO_D), (5, 0)],
        &[
            feq(FMT_D, 10, 1, 2),
            csrrw(11, FFLAGS, 0),
            flt(FMT_D, 12, 1, 2),
            csrrw(13, FFLAGS, 0),
            fle(FMT_D, 14, 2, 1),
            csrrw(15, FFLAGS, 0),
            feq(FMT_D, 16, 3, 2),
            csrrw(17, FFLAGS, 0),
            feq(FMT_D, 18, 4, 5),
            flt(FMT_D, 19, 4, 5),
            fle(FMT_D, 20, 4, 5),
            flt(FMT_D, 21, 5, 2),
        ],
    );
    let want = [
        (10, 0),
        (11, 0),
        (12, 0),
        (13, NV),
        (14, 0),
        (15, NV),
        (16, 0),
        (17, NV),
        (18, 1),
        (19, 0),
        (20, 1),
        (21, 1),
    ];
    for (r, v) in want {
        assert_eq!(vm.x(r), v, "x{r}");
    }
    assert_eq!(vm.x(30), 0);
}

#[test]
fn fclass_every_category() {
    let inputs = [
        (NINF_D, 1 << 0),
        (d(-1.0), 1 << 1),
        (0x8000_0000_0000_0001, 1 << 2),
        (NZERO_D, 1 << 3),
        (0, 1 << 4),
        (1, 1 << 5),
        (d(1.0), 1 << 6),
        (PINF_D, 1 << 7),
        (SNAN_D, 1 << 8),
        (CANON_D, 1 << 9),
    ];
    for (bits, want) in inputs {
        let vm = fp_run(&[(1, bits)], &[fclass(FMT_D, 10, 1)]);
        assert_eq!(vm.x(10), want, "fclass.d {bits:#018x}");
        assert_eq!(vm.x(30), 0);
    }
}

#[test]
fn dynamic_rounding_modes() {
    // -1.5 and 2.5 under each rounding mode taken from frm.
    let table = [
        (RNE, -2i64, 2i64),
        (RTZ, -1, 2),
        (RDN, -2, 2),
        (RUP, -1, 3),
        (RMM, -2, 3),
    ];
    for (mode, a, b) in table {
        let mut vm = Vm::new();
        vm.set_x(27, 1 << 13);
        vm.set_x(1, d(-1.5));
        vm.set_x(2, d(2.5));
        vm.exec(&[
            csrrs(0, MSTATUS, 27),
            csrrwi(0, FRM, mode),
            fmv_f_x(FMT_D, 1, 1),
            fmv_f_x(FMT_D, 2, 2),
            fcvt_to_int(FMT_D, I_W, 10, 1, DYN),
            fcvt_to_int(FMT_D, I_L, 11, 2, DYN),
            fcvt_to_int(FMT_D, I_L, 12, 2, RTZ), // static mode wins over frm
            csrr(13, FFLAGS),
        ]);
        assert_eq!(vm.x(10), a as u64, "-1.5 rm={mode}");
        assert_eq!(vm.x(11), b as u64, "2.5 rm={mode}");
        assert_eq!(vm.x(12), 2);
        assert_eq!(vm.x(13), NX);
    }
}

#[test]
fn invalid_frm_with_dynamic_rounding_is_illegal() {
    for frm in [5, 6, 7] {
        for bad in [
            fadd(FMT_D, 1, 2, 3, DYN),
            fcvt_from_int(FMT_D, I_W, 1, 5, DYN),
            fsqrt(FMT_S, 1, 2, DYN),
        ] {
            let mut vm = Vm::new();
            vm.set_x(27, 1 << 13);
            let body = [
                csrrs(0, MSTATUS, 27),
                csrrwi(0, FRM, frm),
                fadd(FMT_D, 4, 2, 3, RNE), // static rounding is unaffected by frm
                fmin(FMT_D, 4, 2, 3),      // no rounding at all
                fsgnj(FMT_D, 4, 2, 3),
                bad,
            ];
            let t = vm.exec_trap(&body);
            assert_eq!(
                t,
                Trap {
                    cause: cause::ILLEGAL_INSN,
                    epc: CODE + 20,
                    tval: bad as u64
                },
                "frm={frm} {bad:#010x}"
            );
        }
    }
}

#[test]
fn fcvt_s_d_overflow_and_nan() {
    let big = d(1e300);
    let vm = fp_run(
        &[(1, big), (2, SNAN_D)],
        &[
            fcvt_s_d(10, 1, RNE),
            csrrw(10, FFLAGS, 0),
            fcvt_s_d(11, 1, RTZ),
            csrrw(11, FFLAGS, 0),
            fcvt_s_d(12, 2, RNE),
            csrrw(12, FFLAGS, 0),
        ],
    );
    assert_eq!((vm.f(10), vm.x(10)), (boxed(0x7f80_0000), OF | NX));
    assert_eq!(
        (vm.f(11), vm.x(11)),
        (boxed(0x7f7f_ffff), OF | NX),
        "RTZ overflows to the largest finite"
    );
    assert_eq!((vm.f(12), vm.x(12)), (boxed(CANON_S), NV));
}

#[test]
fn fused_multiply_add_signs() {
    // fmadd = a*b + c, fmsub = a*b - c, fnmsub = -(a*b) + c, fnmadd = -(a*b) - c.
    let vm = fp_run(
        &[(1, d(2.0)), (2, d(3.0)), (3, d(1.0))],
        &[
            fmadd(FMT_D, 10, 1, 2, 3, RNE),
            fmsub(FMT_D, 11, 1, 2, 3, RNE),
            fnmsub(FMT_D, 12, 1, 2, 3, RNE),
            fnmadd(FMT_D, 13, 1, 2, 3, RNE),
        ],
    );
    assert_eq!(vm.f(10), d(7.0));
    assert_eq!(vm.f(11), d(5.0));
    assert_eq!(vm.f(12), d(-5.0));
    assert_eq!(vm.f(13), d(-7.0));
    assert_eq!(vm.x(30), 0);
}

#[test]
fn fcvt_from_int_reads_the_right_bits() {
    let mut vm = Vm::new();
    vm.set_x(27, 1 << 13);
    vm.set_x(1, 0x0000_0000_8000_0000); // W: -2^31
    vm.set_x(2, M); // WU: 2^32 - 1 (low 32 bits)
    vm.set_x(3, i64::MAX as u64);
    vm.set_x(4, 0xffff_ffff_0000_0003); // W: 3
    vm.exec(&[
        csrrs(0, MSTATUS, 27),
        fcvt_from_int(FMT_D, I_W, 10, 1, RNE),
        fcvt_from_int(FMT_S, I_WU, 11, 2, RNE),
        csrrw(11, FFLAGS, 0),
        fcvt_from_int(FMT_S, I_L, 12, 3, RNE),
        fcvt_from_int(FMT_D, I_W, 13, 4, RNE),
        fcvt_from_int(FMT_D, I_LU, 14, 2, RTZ),
        fcvt_from_int(FMT_D, I_L, 15, 2, RNE),
    ]);
    assert_eq!(vm.f(10), d(-2147483648.0));
    assert_eq!(
        vm.f(11),
        boxed(4294967296.0f32.to_bits()),
        "2^32-1 rounds to 2^32 in single"
    );
    assert_eq!(vm.x(11), NX);
    assert_eq!(vm.f(12), boxed(9223372036854775808.0f32.to_bits()));
    assert_eq!(vm.f(13), d(3.0));
    assert_eq!(vm.f(14), d(18446744073709549568.0), "2^64-1 toward zero");
    assert_eq!(vm.f(15), d(-1.0));
}
