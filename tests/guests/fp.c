/*
 * fp: F and D results as bit patterns, exception flags, rounding modes,
 * NaN-boxing and conversion corner cases. Every result is fixed by
 * IEEE 754-2008 and the RISC-V F/D chapters, so the output is the same on
 * any conforming implementation. Values are printed in hex.
 */
#include "rt/rt.h"

#define NV 0x10
#define DZ 0x08
#define OF 0x04
#define UF 0x02
#define NX 0x01

#define D_ONE 0x3ff0000000000000UL
#define D_TWO 0x4000000000000000UL
#define D_THREE 0x4008000000000000UL
#define D_TEN 0x4024000000000000UL
#define D_TENTH 0x3fb999999999999aUL
#define D_HALF 0x3fe0000000000000UL
#define D_MHALF 0xbfe0000000000000UL
#define D_MONE 0xbff0000000000000UL
#define D_2P5 0x4004000000000000UL
#define D_M2P5 0xc004000000000000UL
#define D_ZERO 0x0UL
#define D_MZERO 0x8000000000000000UL
#define D_INF 0x7ff0000000000000UL
#define D_MINF 0xfff0000000000000UL
#define D_QNAN 0x7ff8000000000000UL /* the canonical NaN */
#define D_SNAN 0x7ff0000000000001UL
#define D_MAX 0x7fefffffffffffffUL
#define D_1E10 0x4202a05f20000000UL
#define D_M1E10 0xc202a05f20000000UL
#define D_2P32 0x41f0000000000000UL
#define D_2PM1000 0x0170000000000000UL
#define D_2PM60 0x3c30000000000000UL
#define D_2PM100 0x39b0000000000000UL
#define D_1P 0x3ff0000000000001UL /* 1 + 2^-52 */
#define D_SUBN 0x0000000000004000UL /* 2^-1060 */
#define D_MSUBN 0x8000000000000001UL
#define D_MNORM 0xc000000000000000UL

#define S_ONE 0x3f800000U
#define S_MONE 0xbf800000U
#define S_THREE 0x40400000U
#define S_TENTH 0x3dcccccdU
#define S_FIFTH 0x3e4ccccdU
#define S_QNAN 0x7fc00000U
#define S_SNAN 0x7f800001U
#define BOX(s) (0xffffffff00000000UL | (u64)(s))

static u64 get_flags(void)
{
	return csr_read(fflags);
}

static void clear_flags(void)
{
	csr_write(fflags, 0);
}

/* Two-operand double op with the given rounding-mode suffix. */
#define D2(insn, a, b)                                                         \
	({                                                                     \
		u64 __r;                                                       \
		__asm__ volatile("fmv.d.x ft0, %1\n\t"                         \
				 "fmv.d.x ft1, %2\n\t" insn " ft2, ft0, ft1\n\t" \
				 "fmv.x.d %0, ft2"                             \
				 : "=r"(__r)                                   \
				 : "r"((u64)(a)), "r"((u64)(b))                \
				 : "ft0", "ft1", "ft2", "memory");             \
		__r;                                                           \
	})
/* The same with a static rounding mode. */
#define D2R(insn, rm, a, b)                                                    \
	({                                                                     \
		u64 __r;                                                       \
		__asm__ volatile("fmv.d.x ft0, %1\n\t"                         \
				 "fmv.d.x ft1, %2\n\t" insn " ft2, ft0, ft1, " rm \
				 "\n\tfmv.x.d %0, ft2"                          \
				 : "=r"(__r)                                   \
				 : "r"((u64)(a)), "r"((u64)(b))                \
				 : "ft0", "ft1", "ft2", "memory");             \
		__r;                                                           \
	})
#define D1(insn, a)                                                            \
	({                                                                     \
		u64 __r;                                                       \
		__asm__ volatile("fmv.d.x ft0, %1\n\t" insn " ft2, ft0\n\t"    \
				 "fmv.x.d %0, ft2"                             \
				 : "=r"(__r)                                   \
				 : "r"((u64)(a))                               \
				 : "ft0", "ft2", "memory");                    \
		__r;                                                           \
	})
#define D3(insn, a, b, c)                                                      \
	({                                                                     \
		u64 __r;                                                       \
		__asm__ volatile("fmv.d.x ft0, %1\n\t"                         \
				 "fmv.d.x ft1, %2\n\t"                         \
				 "fmv.d.x ft3, %3\n\t" insn                    \
				 " ft2, ft0, ft1, ft3\n\t"                     \
				 "fmv.x.d %0, ft2"                             \
				 : "=r"(__r)                                   \
				 : "r"((u64)(a)), "r"((u64)(b)), "r"((u64)(c)) \
				 : "ft0", "ft1", "ft2", "ft3", "memory");      \
		__r;                                                           \
	})
/* Double/single in FP register -> integer register (fcvt.*, fclass, cmp). */
#define D2X(insn, a)                                                           \
	({                                                                     \
		u64 __r;                                                       \
		__asm__ volatile("fmv.d.x ft0, %1\n\t" insn                    \
				 : "=r"(__r)                                   \
				 : "r"((u64)(a))                               \
				 : "ft0", "memory");                           \
		__r;                                                           \
	})
#define DD2X(insn, a, b)                                                       \
	({                                                                     \
		u64 __r;                                                       \
		__asm__ volatile("fmv.d.x ft0, %1\n\t"                         \
				 "fmv.d.x ft1, %2\n\t" insn                    \
				 : "=r"(__r)                                   \
				 : "r"((u64)(a)), "r"((u64)(b))                \
				 : "ft0", "ft1", "memory");                    \
		__r;                                                           \
	})
/* Integer -> FP register (fcvt.d.l etc.); returns the raw 64-bit register. */
#define X2D(insn, x)                                                           \
	({                                                                     \
		u64 __r;                                                       \
		__asm__ volatile(insn " ft2, %1\n\t"                           \
				 "fmv.x.d %0, ft2"                             \
				 : "=r"(__r)                                   \
				 : "r"((u64)(x))                               \
				 : "ft2", "memory");                           \
		__r;                                                           \
	})

static void check_op(const char *name, u64 got, u64 want, u64 want_flags)
{
	u64 flags = get_flags();
	rt_puts(name);
	rt_putc('\n');
	rt_check("  result", got, want);
	rt_check("  fflags", flags, want_flags);
	clear_flags();
}

static void test_arith(void)
{
	rt_puts("== arithmetic (double)\n");
	clear_flags();
	check_op("fadd.d 1+2", D2("fadd.d", D_ONE, D_TWO), D_THREE, 0);
	check_op("fdiv.d 1/3", D2("fdiv.d", D_ONE, D_THREE),
		 0x3fd5555555555555UL, NX);
	check_op("fdiv.d 1/0", D2("fdiv.d", D_ONE, D_ZERO), D_INF, DZ);
	check_op("fdiv.d -1/0", D2("fdiv.d", D_MONE, D_ZERO), D_MINF, DZ);
	check_op("fdiv.d 0/0", D2("fdiv.d", D_ZERO, D_ZERO), D_QNAN, NV);
	check_op("fsub.d inf-inf", D2("fsub.d", D_INF, D_INF), D_QNAN, NV);
	check_op("fmul.d 0*inf", D2("fmul.d", D_ZERO, D_INF), D_QNAN, NV);
	check_op("fsqrt.d 2", D1("fsqrt.d", D_TWO), 0x3ff6a09e667f3bcdUL, NX);
	check_op("fsqrt.d -1", D1("fsqrt.d", D_MONE), D_QNAN, NV);
	check_op("fsqrt.d -0", D1("fsqrt.d", D_MZERO), D_MZERO, 0);
	check_op("fmul.d max*2 (overflow)", D2("fmul.d", D_MAX, D_TWO), D_INF,
		 OF | NX);
	check_op("fmul.d max*2 rtz (overflow to max)",
		 D2R("fmul.d", "rtz", D_MAX, D_TWO), D_MAX, OF | NX);
	check_op("fmul.d -max*2 rup (overflow to -max)",
		 D2R("fmul.d", "rup", D_MAX | D_MZERO, D_TWO),
		 D_MAX | D_MZERO, OF | NX);
	check_op("fmul.d -max*2 rdn (overflow to -inf)",
		 D2R("fmul.d", "rdn", D_MAX | D_MZERO, D_TWO), D_MINF, OF | NX);
	check_op("fmul.d 2^-1000*2^-60 (exact subnormal)",
		 D2("fmul.d", D_2PM1000, D_2PM60), D_SUBN, 0);
	check_op("fmul.d (1+2^-52)*2^-1000*2^-60 (inexact subnormal)",
		 D2("fmul.d", D2("fmul.d", D_1P, D_2PM1000), D_2PM60), D_SUBN,
		 UF | NX);
	check_op("fmul.d 2^-1000*2^-100 (underflow to 0)",
		 D2("fmul.d", D_2PM1000, D_2PM100), D_ZERO, UF | NX);
	check_op("fadd.d qNaN+1", D2("fadd.d", D_QNAN | 0x1234, D_ONE), D_QNAN,
		 0);
	check_op("fadd.d sNaN+1", D2("fadd.d", D_SNAN, D_ONE), D_QNAN, NV);
	check_op("fmsub.d 0.1*10-1 (fused)",
		 D3("fmsub.d", D_TENTH, D_TEN, D_ONE), 0x3c90000000000000UL, 0);
	check_op("fmul.d 0.1*10 then fsub.d 1",
		 D2("fsub.d", D2("fmul.d", D_TENTH, D_TEN), D_ONE), D_ZERO, NX);
	check_op("fnmadd.d -(1*2)-3", D3("fnmadd.d", D_ONE, D_TWO, D_THREE),
		 0xc014000000000000UL, 0);
	check_op("fmadd.d 0*inf+1", D3("fmadd.d", D_ZERO, D_INF, D_ONE),
		 D_QNAN, NV);
	check_op("fmul.d max*2 rdn (overflow to max)",
		 D2R("fmul.d", "rdn", D_MAX, D_TWO), D_MAX, OF | NX);
	check_op("fsgnjx.d -1,-2", D2("fsgnjx.d", D_MONE, D_MNORM), D_ONE, 0);
	check_op("fsgnjn.d 1,1", D2("fsgnjn.d", D_ONE, D_ONE), D_MONE, 0);
}

static void test_arith_single(void)
{
	rt_puts("== arithmetic (single)\n");
	clear_flags();
	check_op("fadd.s 0.1+0.2", D2("fadd.s", BOX(S_TENTH), BOX(S_FIFTH)),
		 BOX(0x3e99999aU), NX);
	check_op("fdiv.s 1/3", D2("fdiv.s", BOX(S_ONE), BOX(S_THREE)),
		 BOX(0x3eaaaaabU), NX);
	check_op("fsqrt.s -1", D1("fsqrt.s", BOX(S_MONE)), BOX(S_QNAN), NV);
	check_op("fmadd.s 3*3+1", D3("fmadd.s", BOX(S_THREE), BOX(S_THREE),
				     BOX(S_ONE)),
		 BOX(0x41200000U), 0);
	check_op("fmul.s big*big (overflow)",
		 D2("fmul.s", BOX(0x7f000000U), BOX(0x7f000000U)),
		 BOX(0x7f800000U), OF | NX);
	check_op("fdiv.s 0/0", D2("fdiv.s", BOX(0), BOX(0)), BOX(S_QNAN), NV);
}

static void test_rounding(void)
{
	static const char *const names[5] = {"rne", "rtz", "rdn", "rup",
					     "rmm"};
	static const u32 third[5] = {0x3eaaaaab, 0x3eaaaaaa, 0x3eaaaaaa,
				     0x3eaaaaab, 0x3eaaaaab};
	static const u32 mthird[5] = {0xbeaaaaab, 0xbeaaaaaa, 0xbeaaaaab,
				      0xbeaaaaaa, 0xbeaaaaab};
	static const u64 cvt_2p5[5] = {2, 2, 2, 3, 3};
	static const u64 cvt_m2p5[5] = {(u64)-2, (u64)-2, (u64)-3, (u64)-2,
					(u64)-3};
	rt_puts("== rounding modes (fsrm, dynamic rm)\n");
	for (u64 rm = 0; rm < 5; rm++) {
		__asm__ volatile("fsrm %0" ::"r"(rm));
		rt_puts("frm=");
		rt_puts(names[rm]);
		rt_putc('\n');
		rt_check("  frrm", csr_read(frm), rm);
		rt_check("  fcsr", csr_read(fcsr), rm << 5);
		rt_check("  fdiv.s 1/3",
			 D2("fdiv.s", BOX(S_ONE), BOX(S_THREE)), BOX(third[rm]));
		rt_check("  fdiv.s -1/3",
			 D2("fdiv.s", BOX(S_MONE), BOX(S_THREE)),
			 BOX(mthird[rm]));
		rt_check("  fcvt.w.d 2.5", D2X("fcvt.w.d %0, ft0", D_2P5),
			 cvt_2p5[rm]);
		rt_check("  fcvt.w.d -2.5", D2X("fcvt.w.d %0, ft0", D_M2P5),
			 cvt_m2p5[rm]);
		rt_check("  fflags", get_flags(), NX);
		clear_flags();
	}
	__asm__ volatile("fsrm zero");
	/* A static rounding mode overrides frm. */
	__asm__ volatile("fsrm %0" ::"r"(1UL));
	rt_puts("static rm with frm=rtz\n");
	rt_check("  fdiv.s 1/3 dyn",
		 D2("fdiv.s", BOX(S_ONE), BOX(S_THREE)), BOX(0x3eaaaaaaU));
	rt_check("  fdiv.s 1/3 rne",
		 D2R("fdiv.s", "rne", BOX(S_ONE), BOX(S_THREE)),
		 BOX(0x3eaaaaabU));
	rt_check("  fdiv.s 1/3 rup",
		 D2R("fdiv.s", "rup", BOX(S_ONE), BOX(S_THREE)),
		 BOX(0x3eaaaaabU));
	__asm__ volatile("fsrm zero");
	clear_flags();
	rt_check("  fcvt.w.d 2.5, rup", D2X("fcvt.w.d %0, ft0, rup", D_2P5), 3);
	rt_check("  fcvt.w.d -2.5, rdn", D2X("fcvt.w.d %0, ft0, rdn", D_M2P5),
		 (u64)-3);
	rt_check("  fcvt.w.d 2.5, rmm", D2X("fcvt.w.d %0, ft0, rmm", D_2P5), 3);
	rt_check("  fcvt.w.d -2.5, rtz", D2X("fcvt.w.d %0, ft0, rtz", D_M2P5),
		 (u64)-2);
	clear_flags();

	/* fcsr packs frm and fflags. */
	csr_write(fcsr, 0x7f);
	rt_puts("fcsr = 0x7f\n");
	rt_check("  frm", csr_read(frm), 3);
	rt_check("  fflags", csr_read(fflags), 0x1f);
	csr_write(fcsr, 0);
}

static void test_convert(void)
{
	rt_puts("== conversions\n");
	clear_flags();
	check_op("fcvt.w.d NaN", D2X("fcvt.w.d %0, ft0, rtz", D_QNAN),
		 0x7fffffffUL, NV);
	check_op("fcvt.w.d 1e10", D2X("fcvt.w.d %0, ft0, rtz", D_1E10),
		 0x7fffffffUL, NV);
	check_op("fcvt.w.d -1e10", D2X("fcvt.w.d %0, ft0, rtz", D_M1E10),
		 0xffffffff80000000UL, NV);
	check_op("fcvt.w.d -inf", D2X("fcvt.w.d %0, ft0, rtz", D_MINF),
		 0xffffffff80000000UL, NV);
	check_op("fcvt.w.d -0.5 rtz", D2X("fcvt.w.d %0, ft0, rtz", D_MHALF), 0,
		 NX);
	check_op("fcvt.wu.d -1", D2X("fcvt.wu.d %0, ft0, rtz", D_MONE), 0, NV);
	check_op("fcvt.wu.d -0.5 rtz", D2X("fcvt.wu.d %0, ft0, rtz", D_MHALF),
		 0, NX);
	check_op("fcvt.wu.d 2^32", D2X("fcvt.wu.d %0, ft0, rtz", D_2P32),
		 0xffffffffffffffffUL, NV);
	check_op("fcvt.wu.d 3e9 (sign-extended)",
		 D2X("fcvt.wu.d %0, ft0, rtz", 0x41e65a0bc0000000UL),
		 0xffffffffb2d05e00UL, 0);
	check_op("fcvt.l.d inf", D2X("fcvt.l.d %0, ft0, rtz", D_INF),
		 0x7fffffffffffffffUL, NV);
	check_op("fcvt.l.d -inf", D2X("fcvt.l.d %0, ft0, rtz", D_MINF),
		 0x8000000000000000UL, NV);
	check_op("fcvt.l.d NaN", D2X("fcvt.l.d %0, ft0, rtz", D_QNAN),
		 0x7fffffffffffffffUL, NV);
	check_op("fcvt.lu.d NaN", D2X("fcvt.lu.d %0, ft0, rtz", D_QNAN),
		 0xffffffffffffffffUL, NV);
	check_op("fcvt.lu.d -inf", D2X("fcvt.lu.d %0, ft0, rtz", D_MINF), 0,
		 NV);
	check_op("fcvt.l.d 2.5 rne", D2X("fcvt.l.d %0, ft0, rne", D_2P5), 2,
		 NX);
	check_op("fcvt.w.s 2^31", D2X("fcvt.w.s %0, ft0, rtz", BOX(0x4f000000)),
		 0x7fffffffUL, NV);
	check_op("fcvt.w.s -2^31", D2X("fcvt.w.s %0, ft0, rtz", BOX(0xcf000000)),
		 0xffffffff80000000UL, 0);
	check_op("fcvt.d.l 2^53+1", X2D("fcvt.d.l", (1UL << 53) + 1),
		 0x4340000000000000UL, NX);
	check_op("fcvt.d.lu 2^64-1", X2D("fcvt.d.lu", ~0UL),
		 0x43f0000000000000UL, NX);
	check_op("fcvt.d.w -1", X2D("fcvt.d.w", 0xffffffffUL), D_MONE, 0);
	check_op("fcvt.d.wu 0xffffffff", X2D("fcvt.d.wu", 0xffffffffUL),
		 0x41efffffffe00000UL, 0);
	check_op("fcvt.s.w 2^24+1", X2D("fcvt.s.w", (1UL << 24) + 1),
		 BOX(0x4b800000U), NX);
	check_op("fcvt.s.d 1/3", D1("fcvt.s.d", 0x3fd5555555555555UL),
		 BOX(0x3eaaaaabU), NX);
	check_op("fcvt.s.d max", D1("fcvt.s.d", D_MAX), BOX(0x7f800000U),
		 OF | NX);
	check_op("fcvt.s.d sNaN", D1("fcvt.s.d", D_SNAN), BOX(S_QNAN), NV);
	check_op("fcvt.d.s sNaN", D1("fcvt.d.s", BOX(S_SNAN)), D_QNAN, NV);
	check_op("fcvt.d.s 0.1f", D1("fcvt.d.s", BOX(S_TENTH)),
		 0x3fb99999a0000000UL, 0);
}

static void test_compare_class(void)
{
	rt_puts("== compare, min/max, classify\n");
	clear_flags();
	check_op("fmin.d -0,+0", D2("fmin.d", D_MZERO, D_ZERO), D_MZERO, 0);
	check_op("fmax.d -0,+0", D2("fmax.d", D_MZERO, D_ZERO), D_ZERO, 0);
	check_op("fmin.d qNaN,1", D2("fmin.d", D_QNAN, D_ONE), D_ONE, 0);
	check_op("fmin.d sNaN,1", D2("fmin.d", D_SNAN, D_ONE), D_ONE, NV);
	check_op("fmax.d qNaN,qNaN", D2("fmax.d", D_QNAN | 5, D_QNAN | 7),
		 D_QNAN, 0);
	check_op("feq.d qNaN,qNaN", DD2X("feq.d %0, ft0, ft1", D_QNAN, D_QNAN),
		 0, 0);
	check_op("feq.d sNaN,1", DD2X("feq.d %0, ft0, ft1", D_SNAN, D_ONE), 0,
		 NV);
	check_op("flt.d qNaN,1", DD2X("flt.d %0, ft0, ft1", D_QNAN, D_ONE), 0,
		 NV);
	check_op("fle.d -0,+0", DD2X("fle.d %0, ft0, ft1", D_MZERO, D_ZERO), 1,
		 0);
	check_op("flt.d -0,+0", DD2X("flt.d %0, ft0, ft1", D_MZERO, D_ZERO), 0,
		 0);
	check_op("feq.s boxed 1,1",
		 DD2X("feq.s %0, ft0, ft1", BOX(S_ONE), BOX(S_ONE)), 1, 0);

	static const u64 vals[10] = {D_MINF,	 D_MNORM, D_MSUBN, D_MZERO,
				     D_ZERO,	 D_SUBN,  D_ONE,   D_INF,
				     D_SNAN,	 D_QNAN};
	for (int i = 0; i < 10; i++) {
		u64 c = D2X("fclass.d %0, ft0", vals[i]);
		rt_puts("fclass.d ");
		rt_put_hex(vals[i]);
		rt_putc('\n');
		rt_check("  class", c, 1UL << i);
	}
	rt_check("fclass.s boxed sNaN",
		 D2X("fclass.s %0, ft0", BOX(S_SNAN)), 1UL << 8);
	rt_check("fclass.s boxed -1", D2X("fclass.s %0, ft0", BOX(S_MONE)),
		 1UL << 1);
	rt_check("fflags after compares/classify", get_flags(), 0);
	clear_flags();
}

static void test_nanbox(void)
{
	const u64 unboxed = 0x0000000040000000UL; /* 2.0f, upper half zero */
	rt_puts("== NaN-boxing\n");
	clear_flags();
	check_op("fadd.s unboxed+unboxed", D2("fadd.s", unboxed, unboxed),
		 BOX(S_QNAN), 0);
	check_op("fadd.s boxed 2+2", D2("fadd.s", BOX(0x40000000U),
				       BOX(0x40000000U)),
		 BOX(0x40800000U), 0);
	check_op("fsgnj.s unboxed", D2("fsgnj.s", unboxed, BOX(S_MONE)),
		 BOX(0xffc00000U), 0);
	check_op("fsgnjn.s unboxed", D2("fsgnjn.s", BOX(S_ONE), unboxed),
		 BOX(0xbf800000U), 0);
	check_op("fcvt.d.s unboxed", D1("fcvt.d.s", unboxed), D_QNAN, 0);
	check_op("fclass.s unboxed", D2X("fclass.s %0, ft0", unboxed), 1UL << 9,
		 0);
	check_op("fmv.x.w unboxed (raw bits)", D2X("fmv.x.w %0, ft0", unboxed),
		 0x40000000UL, 0);
	check_op("fmv.x.w boxed negative (sign-extended)",
		 D2X("fmv.x.w %0, ft0", BOX(S_MONE)), 0xffffffffbf800000UL, 0);
	check_op("fmv.w.x boxes", X2D("fmv.w.x", 0x1234567840000000UL),
		 BOX(0x40000000U), 0);

	static u32 word;
	static u64 dword = 0x1122334455667788UL;
	u64 r;
	__asm__ volatile("fmv.d.x ft0, %1\n\tfsw ft0, %0"
			 : "=m"(word)
			 : "r"(unboxed)
			 : "ft0");
	rt_check("fsw of unboxed stores the low word", word, 0x40000000U);
	__asm__ volatile("flw ft0, %1\n\tfmv.x.d %0, ft0"
			 : "=r"(r)
			 : "m"(dword)
			 : "ft0");
	rt_check("flw boxes", r, BOX(0x55667788U));
	__asm__ volatile("fld ft0, %1\n\tfmv.x.d %0, ft0"
			 : "=r"(r)
			 : "m"(dword)
			 : "ft0");
	rt_check("fld", r, 0x1122334455667788UL);
}

static void test_status(void)
{
	rt_puts("== mstatus.FS\n");
	csr_clear(mstatus, MSTATUS_FS);
	csr_set(mstatus, MSTATUS_FS_INITIAL);
	(void)D2("fadd.d", D_ONE, D_ONE);
	u64 s = csr_read(mstatus);
	rt_check("  FS after an FP write", (s >> 13) & 3, 3);
	rt_check("  SD", s >> 63, 1);

	/* FS = Off: FP instructions and fcsr are illegal. */
	rt_trap_ok = 1;
	rt_trap_reset();
	csr_clear(mstatus, MSTATUS_FS);
	__asm__ volatile(".option push\n.option norvc\n"
			 "fadd.d ft0, ft0, ft0\n"
			 ".option pop" ::
				 : "ft0", "memory");
	u64 cause1 = rt_mtrap.cause, tval1 = rt_mtrap.tval;
	__asm__ volatile("csrr t0, fcsr" ::: "t0", "memory");
	u64 n = rt_mtrap.count, cause2 = rt_mtrap.cause;
	csr_set(mstatus, MSTATUS_FS_INITIAL);

	/* Reserved rounding modes in frm make dynamic-rm instructions illegal. */
	rt_trap_reset();
	__asm__ volatile("fsrm %0" ::"r"(5UL));
	__asm__ volatile(".option push\n.option norvc\n"
			 "fadd.d ft0, ft0, ft0\n"
			 ".option pop" ::
				 : "ft0", "memory");
	u64 n2 = rt_mtrap.count, cause3 = rt_mtrap.cause;
	__asm__ volatile("fsrm zero");
	rt_trap_ok = 0;
	rt_puts("FS=Off\n");
	rt_check("  traps", n, 2);
	rt_check("  fadd.d cause", cause1, 2);
	rt_check("  fadd.d tval", tval1, 0x02007053UL);
	rt_check("  csrr fcsr cause", cause2, 2);
	rt_puts("frm=5 (reserved)\n");
	rt_check("  traps", n2, 1);
	rt_check("  fadd.d (dyn) cause", cause3, 2);
}

static void test_more(void)
{
	const u64 unboxed = 0x0000000040000000UL;
	rt_puts("== more corner cases\n");
	clear_flags();
	check_op("fmadd.d inf*0+qNaN", D3("fmadd.d", D_INF, D_ZERO, D_QNAN | 1),
		 D_QNAN, NV);
	check_op("fmadd.d 1*1+sNaN", D3("fmadd.d", D_ONE, D_ONE, D_SNAN),
		 D_QNAN, NV);
	check_op("fsgnj.d keeps an sNaN payload", D2("fsgnj.d", D_SNAN, D_ONE),
		 D_SNAN, 0);
	check_op("fsgnjn.d keeps a qNaN payload",
		 D2("fsgnjn.d", D_QNAN | 0x1234, D_ONE),
		 D_QNAN | 0x1234 | D_MZERO, 0);
	check_op("fmin.d sNaN,sNaN", D2("fmin.d", D_SNAN, D_SNAN | 2), D_QNAN,
		 NV);
	check_op("fmax.d -inf,qNaN", D2("fmax.d", D_MINF, D_QNAN), D_MINF, 0);
	check_op("fcvt.d.s smallest subnormal", D1("fcvt.d.s", BOX(1)),
		 0x36a0000000000000UL, 0);
	check_op("fcvt.s.d 2^-140 (exact subnormal)",
		 D1("fcvt.s.d", 0x3730000000000000UL), BOX(0x00000200U), 0);
	check_op("fcvt.s.d (1+2^-52)*2^-140 (inexact subnormal)",
		 D1("fcvt.s.d", 0x3730000000000001UL), BOX(0x00000200U),
		 UF | NX);
	check_op("fcvt.s.d 2^-150 (rounds to 0, tie to even)",
		 D1("fcvt.s.d", 0x3690000000000000UL), BOX(0), UF | NX);
	check_op("fcvt.s.d 2^-150*1.5 (rounds up to min subnormal)",
		 D1("fcvt.s.d", 0x3698000000000000UL), BOX(1), UF | NX);
	check_op("fcvt.w.s unboxed", D2X("fcvt.w.s %0, ft0, rtz", unboxed),
		 0x7fffffffUL, NV);
	check_op("feq.s unboxed,unboxed",
		 DD2X("feq.s %0, ft0, ft1", unboxed, unboxed), 0, 0);
	check_op("fle.d sNaN,1", DD2X("fle.d %0, ft0, ft1", D_SNAN, D_ONE), 0,
		 NV);
	check_op("fdiv.d subnormal/2^-1060",
		 D2("fdiv.d", D_SUBN, D_SUBN), D_ONE, 0);
	check_op("fsqrt.d inf", D1("fsqrt.d", D_INF), D_INF, 0);
	check_op("fsqrt.d -inf", D1("fsqrt.d", D_MINF), D_QNAN, NV);
	check_op("fadd.d -0 + -0", D2("fadd.d", D_MZERO, D_MZERO), D_MZERO, 0);
	check_op("fadd.d 1 + -1 (rne: +0)", D2("fadd.d", D_ONE, D_MONE),
		 D_ZERO, 0);
	check_op("fadd.d 1 + -1 (rdn: -0)", D2R("fadd.d", "rdn", D_ONE, D_MONE),
		 D_MZERO, 0);

	rt_puts("fcsr fields\n");
	csr_write(fcsr, 0xfff);
	rt_check("  fcsr after writing 0xfff", csr_read(fcsr), 0xff);
	csr_write(fflags, 0xff);
	rt_check("  fflags after writing 0xff", csr_read(fflags), 0x1f);
	csr_write(frm, 0xff);
	rt_check("  frm after writing 0xff", csr_read(frm), 7);
	u64 old;
	csr_write(fcsr, 0);
	__asm__ volatile("fsrmi %0, 2" : "=r"(old));
	rt_check("  fsrmi returns the old frm", old, 0);
	__asm__ volatile("fsflagsi %0, 0x11" : "=r"(old));
	rt_check("  fsflagsi returns the old flags", old, 0);
	__asm__ volatile("fscsr %0, %1" : "=r"(old) : "r"(0x25UL));
	rt_check("  fscsr returns the old fcsr", old, 0x51);
	rt_check("  fcsr", csr_read(fcsr), 0x25);
	csr_write(fcsr, 0);

	/* Reserved static rounding modes (5, 6) are illegal. */
	rt_trap_ok = 1;
	rt_trap_reset();
	__asm__ volatile(".word 0x02005053\n.word 0x02006053" ::: "memory");
	rt_trap_ok = 0;
	rt_puts("static rm = 5 and 6\n");
	rt_check("  traps", rt_mtrap.count, 2);
	rt_check("  mcause", rt_mtrap.cause, 2);
	rt_check("  mtval", rt_mtrap.tval, 0x02006053UL);
}

int main(void)
{
	rt_puts("fp: start\n");
	test_arith();
	test_arith_single();
	test_rounding();
	test_convert();
	test_compare_class();
	test_nanbox();
	test_status();
	test_more();
	return rt_finish("fp");
}
