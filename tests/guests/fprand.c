/*
 * fprand: every F and D arithmetic, compare, classify and conversion
 * instruction on a few hundred pseudo-random operands (special values,
 * subnormals, values near overflow and near integer limits, unboxed
 * singles) under each static rounding mode. For each instruction and
 * rounding mode it prints one hash of all results and fflags.
 *
 * IEEE 754 and the RISC-V F/D chapters fix every result and flag, so the
 * hashes must be the same on any conforming implementation: the
 * differential test compares them with QEMU's. The guest checks nothing
 * itself (it always passes); a mismatch names the instruction and rounding
 * mode, and FPRAND_TRACE (see below) prints the operands and results.
 */
#include "rt/rt.h"

#define N_OPERANDS 1024

static u64 rng = 0x243f6a8885a308d3UL;
static u64 next(void)
{
	u64 x = rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng = x;
}

static const u64 d_special[] = {
	0x0000000000000000UL, 0x8000000000000000UL, /* zeros */
	0x7ff0000000000000UL, 0xfff0000000000000UL, /* infinities */
	0x7ff8000000000000UL, 0xfff8000000000001UL, /* quiet NaNs */
	0x7ff0000000000001UL, 0x7ff4000000000000UL, /* signaling NaNs */
	0x0000000000000001UL, 0x800fffffffffffffUL, /* subnormals */
	0x0010000000000000UL, 0x8010000000000000UL, /* smallest normals */
	0x7fefffffffffffffUL, 0xffefffffffffffffUL, /* largest */
	0x3ff0000000000000UL, 0xbff0000000000000UL, /* +-1 */
	0x3fe0000000000000UL, 0x4004000000000000UL, /* 0.5, 2.5 */
	0x41dfffffffc00000UL, 0x41e0000000000000UL, /* 2^31 - 1, 2^31 */
	0xc1e0000000000000UL, 0xc1e0000000200000UL, /* -2^31, -2^31 - 1 */
	0x41efffffffe00000UL, 0x41f0000000000000UL, /* 2^32 - 1, 2^32 */
	0x43e0000000000000UL, 0xc3e0000000000000UL, /* +-2^63 */
	0x43dfffffffffffffUL, 0x43f0000000000000UL, /* < 2^63, 2^64 */
	0xbfefffffffffffffUL, 0x3fdfffffffffffffUL, /* just below 1, 0.5 */
};

static const u32 s_special[] = {
	0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
	0xffc00001, 0x7f800001, 0x7fa00000, 0x00000001, 0x807fffff,
	0x00800000, 0x80800000, 0x7f7fffff, 0xff7fffff, 0x3f800000,
	0xbf800000, 0x3f000000, 0x40200000, 0x4effffff, 0x4f000000,
	0xcf000000, 0xcf000001, 0x4f7fffff, 0x4f800000, 0x5f000000,
	0xdf000000, 0x5effffff, 0x5f800000, 0xbf7fffff, 0x3effffff,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static u64 rand_double(void)
{
	u64 r = next();
	u64 sign = r & (1UL << 63);
	switch ((r >> 1) % 8) {
	case 0:
	case 1:
		return d_special[(r >> 8) % COUNT(d_special)];
	case 2: { /* near the subnormal range */
		u64 e = (r >> 8) % 4;
		return sign | (e << 52) | (next() & 0xfffffffffffffUL);
	}
	case 3: { /* near overflow */
		u64 e = 0x7fe - (r >> 8) % 4;
		return sign | (e << 52) | (next() & 0xfffffffffffffUL);
	}
	case 4: { /* few mantissa bits: exact results are common */
		u64 e = 1023 - 8 + (r >> 8) % 16;
		return sign | (e << 52) | (next() & 0xff00000000000UL);
	}
	default: { /* ordinary */
		u64 e = 1023 - 40 + (r >> 8) % 104;
		return sign | (e << 52) | (next() & 0xfffffffffffffUL);
	}
	}
}

static u32 rand_single_bits(void)
{
	u64 r = next();
	u32 sign = (u32)(r & 1) << 31;
	switch ((r >> 1) % 8) {
	case 0:
	case 1:
		return s_special[(r >> 8) % COUNT(s_special)];
	case 2:
		return sign | ((u32)((r >> 8) % 4) << 23) |
		       ((u32)next() & 0x7fffff);
	case 3:
		return sign | ((u32)(0xfe - (r >> 8) % 4) << 23) |
		       ((u32)next() & 0x7fffff);
	case 4:
		return sign | ((u32)(127 - 8 + (r >> 8) % 16) << 23) |
		       ((u32)next() & 0x7f0000);
	default:
		return sign | ((u32)(127 - 30 + (r >> 8) % 80) << 23) |
		       ((u32)next() & 0x7fffff);
	}
}

/* A single in a 64-bit register: NaN-boxed, except 1 in 16 times. */
static u64 rand_single(void)
{
	u32 s = rand_single_bits();
	if (next() % 16 == 0)
		return next() % 2 ? (u64)s : ((u64)s | 0x1234567800000000UL);
	return 0xffffffff00000000UL | s;
}

static u64 rand_int(void)
{
	u64 r = next();
	switch (r % 6) {
	case 0:
		return next() >> (next() % 64);
	case 1:
		return -(next() >> (next() % 64));
	case 2:
		return (1UL << (r >> 8) % 64) + (next() % 5) - 2;
	case 3:
		return (u64)(i64)(i32)next();
	default:
		return next();
	}
}

static u64 da[N_OPERANDS], db[N_OPERANDS], dc[N_OPERANDS];
static u64 sa[N_OPERANDS], sb[N_OPERANDS], sc[N_OPERANDS];
static u64 ia[N_OPERANDS];

static u64 hash;
static void mix(u64 v)
{
	hash = (hash ^ v) * 0x100000001b3UL;
	hash ^= hash >> 29;
}

static u64 take_flags(void)
{
	u64 f;
	__asm__ volatile("csrrw %0, fflags, zero" : "=r"(f));
	return f;
}

static const char *const rm_names[5] = {"rne", "rtz", "rdn", "rup", "rmm"};

/* Each DEF_* macro defines a function that runs one instruction with the
 * static rounding mode given by its rm argument (0..4), if it has one. */
#define DEF_F2(name, insn)                                                     \
	static u64 name(u64 a, u64 b, u64 c, int rm)                           \
	{                                                                      \
		u64 r = 0;                                                     \
		(void)c;                                                       \
		switch (rm) {                                                  \
		case 0:                                                        \
			F2_ASM(insn, "rne");                                   \
			break;                                                 \
		case 1:                                                        \
			F2_ASM(insn, "rtz");                                   \
			break;                                                 \
		case 2:                                                        \
			F2_ASM(insn, "rdn");                                   \
			break;                                                 \
		case 3:                                                        \
			F2_ASM(insn, "rup");                                   \
			break;                                                 \
		default:                                                       \
			F2_ASM(insn, "rmm");                                   \
			break;                                                 \
		}                                                              \
		return r;                                                      \
	}
#define F2_ASM(insn, rmstr)                                                    \
	__asm__ volatile("fmv.d.x ft0, %1\n\tfmv.d.x ft1, %2\n\t" insn           \
			 " ft2, ft0, ft1, " rmstr "\n\tfmv.x.d %0, ft2"        \
			 : "=r"(r)                                             \
			 : "r"(a), "r"(b)                                      \
			 : "ft0", "ft1", "ft2")

#define DEF_F3(name, insn)                                                     \
	static u64 name(u64 a, u64 b, u64 c, int rm)                           \
	{                                                                      \
		u64 r = 0;                                                     \
		switch (rm) {                                                  \
		case 0:                                                        \
			F3_ASM(insn, "rne");                                   \
			break;                                                 \
		case 1:                                                        \
			F3_ASM(insn, "rtz");                                   \
			break;                                                 \
		case 2:                                                        \
			F3_ASM(insn, "rdn");                                   \
			break;                                                 \
		case 3:                                                        \
			F3_ASM(insn, "rup");                                   \
			break;                                                 \
		default:                                                       \
			F3_ASM(insn, "rmm");                                   \
			break;                                                 \
		}                                                              \
		return r;                                                      \
	}
#define F3_ASM(insn, rmstr)                                                    \
	__asm__ volatile("fmv.d.x ft0, %1\n\tfmv.d.x ft1, %2\n\t"                \
			 "fmv.d.x ft3, %3\n\t" insn                            \
			 " ft2, ft0, ft1, ft3, " rmstr "\n\tfmv.x.d %0, ft2"   \
			 : "=r"(r)                                             \
			 : "r"(a), "r"(b), "r"(c)                              \
			 : "ft0", "ft1", "ft2", "ft3")

/* One FP source, FP result, with rm. */
#define DEF_F1(name, insn)                                                     \
	static u64 name(u64 a, u64 b, u64 c, int rm)                           \
	{                                                                      \
		u64 r = 0;                                                     \
		(void)b;                                                       \
		(void)c;                                                       \
		switch (rm) {                                                  \
		case 0:                                                        \
			F1_ASM(insn, "rne");                                   \
			break;                                                 \
		case 1:                                                        \
			F1_ASM(insn, "rtz");                                   \
			break;                                                 \
		case 2:                                                        \
			F1_ASM(insn, "rdn");                                   \
			break;                                                 \
		case 3:                                                        \
			F1_ASM(insn, "rup");                                   \
			break;                                                 \
		default:                                                       \
			F1_ASM(insn, "rmm");                                   \
			break;                                                 \
		}                                                              \
		return r;                                                      \
	}
#define F1_ASM(insn, rmstr)                                                    \
	__asm__ volatile("fmv.d.x ft0, %1\n\t" insn " ft2, ft0, " rmstr          \
			 "\n\tfmv.x.d %0, ft2"                                 \
			 : "=r"(r)                                             \
			 : "r"(a)                                              \
			 : "ft0", "ft2")

/* FP source, integer result, with rm (fcvt to integer). */
#define DEF_FX(name, insn)                                                     \
	static u64 name(u64 a, u64 b, u64 c, int rm)                           \
	{                                                                      \
		u64 r = 0;                                                     \
		(void)b;                                                       \
		(void)c;                                                       \
		switch (rm) {                                                  \
		case 0:                                                        \
			FX_ASM(insn, "rne");                                   \
			break;                                                 \
		case 1:                                                        \
			FX_ASM(insn, "rtz");                                   \
			break;                                                 \
		case 2:                                                        \
			FX_ASM(insn, "rdn");                                   \
			break;                                                 \
		case 3:                                                        \
			FX_ASM(insn, "rup");                                   \
			break;                                                 \
		default:                                                       \
			FX_ASM(insn, "rmm");                                   \
			break;                                                 \
		}                                                              \
		return r;                                                      \
	}
#define FX_ASM(insn, rmstr)                                                    \
	__asm__ volatile("fmv.d.x ft0, %1\n\t" insn " %0, ft0, " rmstr           \
			 : "=r"(r)                                             \
			 : "r"(a)                                              \
			 : "ft0")

/* Integer source, FP result, with rm (fcvt from integer). */
#define DEF_XF(name, insn)                                                     \
	static u64 name(u64 a, u64 b, u64 c, int rm)                           \
	{                                                                      \
		u64 r = 0;                                                     \
		(void)b;                                                       \
		(void)c;                                                       \
		switch (rm) {                                                  \
		case 0:                                                        \
			XF_ASM(insn, "rne");                                   \
			break;                                                 \
		case 1:                                                        \
			XF_ASM(insn, "rtz");                                   \
			break;                                                 \
		case 2:                                                        \
			XF_ASM(insn, "rdn");                                   \
			break;                                                 \
		case 3:                                                        \
			XF_ASM(insn, "rup");                                   \
			break;                                                 \
		default:                                                       \
			XF_ASM(insn, "rmm");                                   \
			break;                                                 \
		}                                                              \
		return r;                                                      \
	}
#define XF_ASM(insn, rmstr)                                                    \
	__asm__ volatile(insn " ft2, %1, " rmstr "\n\tfmv.x.d %0, ft2"           \
			 : "=r"(r)                                             \
			 : "r"(a)                                              \
			 : "ft2")

/* No rounding mode (exact conversions): integer source, FP result. */
#define DEF_X1(name, insn)                                                     \
	static u64 name(u64 a, u64 b, u64 c, int rm)                           \
	{                                                                      \
		u64 r;                                                         \
		(void)b;                                                       \
		(void)c;                                                       \
		(void)rm;                                                      \
		__asm__ volatile(insn " ft2, %1\n\tfmv.x.d %0, ft2"              \
				 : "=r"(r)                                     \
				 : "r"(a)                                      \
				 : "ft2");                                     \
		return r;                                                      \
	}
/* No rounding mode: one FP source, FP result. */
#define DEF_G1(name, insn)                                                     \
	static u64 name(u64 a, u64 b, u64 c, int rm)                           \
	{                                                                      \
		u64 r;                                                         \
		(void)b;                                                       \
		(void)c;                                                       \
		(void)rm;                                                      \
		__asm__ volatile("fmv.d.x ft0, %1\n\t" insn                     \
				 " ft2, ft0\n\tfmv.x.d %0, ft2"                \
				 : "=r"(r)                                     \
				 : "r"(a)                                      \
				 : "ft0", "ft2");                              \
		return r;                                                      \
	}
/* No rounding mode: two FP sources, FP result. */
#define DEF_G2(name, insn)                                                     \
	static u64 name(u64 a, u64 b, u64 c, int rm)                           \
	{                                                                      \
		u64 r;                                                         \
		(void)c;                                                       \
		(void)rm;                                                      \
		__asm__ volatile("fmv.d.x ft0, %1\n\tfmv.d.x ft1, %2\n\t" insn   \
				 " ft2, ft0, ft1\n\tfmv.x.d %0, ft2"           \
				 : "=r"(r)                                     \
				 : "r"(a), "r"(b)                              \
				 : "ft0", "ft1", "ft2");                       \
		return r;                                                      \
	}
/* No rounding mode: two FP sources, integer result (compares). */
#define DEF_C2(name, insn)                                                     \
	static u64 name(u64 a, u64 b, u64 c, int rm)                           \
	{                                                                      \
		u64 r;                                                         \
		(void)c;                                                       \
		(void)rm;                                                      \
		__asm__ volatile("fmv.d.x ft0, %1\n\tfmv.d.x ft1, %2\n\t" insn   \
				 " %0, ft0, ft1"                               \
				 : "=r"(r)                                     \
				 : "r"(a), "r"(b)                              \
				 : "ft0", "ft1");                              \
		return r;                                                      \
	}
/* No rounding mode: one FP source, integer result (fclass, fmv.x.*). */
#define DEF_C1(name, insn)                                                     \
	static u64 name(u64 a, u64 b, u64 c, int rm)                           \
	{                                                                      \
		u64 r;                                                         \
		(void)b;                                                       \
		(void)c;                                                       \
		(void)rm;                                                      \
		__asm__ volatile("fmv.d.x ft0, %1\n\t" insn " %0, ft0"           \
				 : "=r"(r)                                     \
				 : "r"(a)                                      \
				 : "ft0");                                     \
		return r;                                                      \
	}

DEF_F2(fadd_s, "fadd.s")
DEF_F2(fsub_s, "fsub.s")
DEF_F2(fmul_s, "fmul.s")
DEF_F2(fdiv_s, "fdiv.s")
DEF_F1(fsqrt_s, "fsqrt.s")
DEF_F3(fmadd_s, "fmadd.s")
DEF_F3(fmsub_s, "fmsub.s")
DEF_F3(fnmadd_s, "fnmadd.s")
DEF_F3(fnmsub_s, "fnmsub.s")
DEF_F2(fadd_d, "fadd.d")
DEF_F2(fsub_d, "fsub.d")
DEF_F2(fmul_d, "fmul.d")
DEF_F2(fdiv_d, "fdiv.d")
DEF_F1(fsqrt_d, "fsqrt.d")
DEF_F3(fmadd_d, "fmadd.d")
DEF_F3(fmsub_d, "fmsub.d")
DEF_F3(fnmadd_d, "fnmadd.d")
DEF_F3(fnmsub_d, "fnmsub.d")
DEF_F1(fcvt_s_d, "fcvt.s.d")
DEF_G1(fcvt_d_s, "fcvt.d.s")
DEF_FX(fcvt_w_s, "fcvt.w.s")
DEF_FX(fcvt_wu_s, "fcvt.wu.s")
DEF_FX(fcvt_l_s, "fcvt.l.s")
DEF_FX(fcvt_lu_s, "fcvt.lu.s")
DEF_FX(fcvt_w_d, "fcvt.w.d")
DEF_FX(fcvt_wu_d, "fcvt.wu.d")
DEF_FX(fcvt_l_d, "fcvt.l.d")
DEF_FX(fcvt_lu_d, "fcvt.lu.d")
DEF_XF(fcvt_s_w, "fcvt.s.w")
DEF_XF(fcvt_s_wu, "fcvt.s.wu")
DEF_XF(fcvt_s_l, "fcvt.s.l")
DEF_XF(fcvt_s_lu, "fcvt.s.lu")
DEF_X1(fcvt_d_w, "fcvt.d.w")
DEF_X1(fcvt_d_wu, "fcvt.d.wu")
DEF_XF(fcvt_d_l, "fcvt.d.l")
DEF_XF(fcvt_d_lu, "fcvt.d.lu")
DEF_G2(fmin_s, "fmin.s")
DEF_G2(fmax_s, "fmax.s")
DEF_G2(fsgnj_s, "fsgnj.s")
DEF_G2(fsgnjn_s, "fsgnjn.s")
DEF_G2(fsgnjx_s, "fsgnjx.s")
DEF_G2(fmin_d, "fmin.d")
DEF_G2(fmax_d, "fmax.d")
DEF_G2(fsgnj_d, "fsgnj.d")
DEF_G2(fsgnjn_d, "fsgnjn.d")
DEF_G2(fsgnjx_d, "fsgnjx.d")
DEF_C2(feq_s, "feq.s")
DEF_C2(flt_s, "flt.s")
DEF_C2(fle_s, "fle.s")
DEF_C2(feq_d, "feq.d")
DEF_C2(flt_d, "flt.d")
DEF_C2(fle_d, "fle.d")
DEF_C1(fclass_s, "fclass.s")
DEF_C1(fclass_d, "fclass.d")
DEF_C1(fmv_x_w, "fmv.x.w")
DEF_X1(fmv_w_x, "fmv.w.x")

enum src { S, D, I };

struct op {
	const char *name;
	u64 (*fn)(u64, u64, u64, int);
	enum src src; /* operand kind: single, double, integer */
	int has_rm;
};

static const struct op ops[] = {
	{"fadd.s", fadd_s, S, 1},	 {"fsub.s", fsub_s, S, 1},
	{"fmul.s", fmul_s, S, 1},	 {"fdiv.s", fdiv_s, S, 1},
	{"fsqrt.s", fsqrt_s, S, 1},	 {"fmadd.s", fmadd_s, S, 1},
	{"fmsub.s", fmsub_s, S, 1},	 {"fnmadd.s", fnmadd_s, S, 1},
	{"fnmsub.s", fnmsub_s, S, 1},	 {"fadd.d", fadd_d, D, 1},
	{"fsub.d", fsub_d, D, 1},	 {"fmul.d", fmul_d, D, 1},
	{"fdiv.d", fdiv_d, D, 1},	 {"fsqrt.d", fsqrt_d, D, 1},
	{"fmadd.d", fmadd_d, D, 1},	 {"fmsub.d", fmsub_d, D, 1},
	{"fnmadd.d", fnmadd_d, D, 1},	 {"fnmsub.d", fnmsub_d, D, 1},
	{"fcvt.s.d", fcvt_s_d, D, 1},	 {"fcvt.d.s", fcvt_d_s, S, 0},
	{"fcvt.w.s", fcvt_w_s, S, 1},	 {"fcvt.wu.s", fcvt_wu_s, S, 1},
	{"fcvt.l.s", fcvt_l_s, S, 1},	 {"fcvt.lu.s", fcvt_lu_s, S, 1},
	{"fcvt.w.d", fcvt_w_d, D, 1},	 {"fcvt.wu.d", fcvt_wu_d, D, 1},
	{"fcvt.l.d", fcvt_l_d, D, 1},	 {"fcvt.lu.d", fcvt_lu_d, D, 1},
	{"fcvt.s.w", fcvt_s_w, I, 1},	 {"fcvt.s.wu", fcvt_s_wu, I, 1},
	{"fcvt.s.l", fcvt_s_l, I, 1},	 {"fcvt.s.lu", fcvt_s_lu, I, 1},
	{"fcvt.d.w", fcvt_d_w, I, 0},	 {"fcvt.d.wu", fcvt_d_wu, I, 0},
	{"fcvt.d.l", fcvt_d_l, I, 1},	 {"fcvt.d.lu", fcvt_d_lu, I, 1},
	{"fmin.s", fmin_s, S, 0},	 {"fmax.s", fmax_s, S, 0},
	{"fsgnj.s", fsgnj_s, S, 0},	 {"fsgnjn.s", fsgnjn_s, S, 0},
	{"fsgnjx.s", fsgnjx_s, S, 0},	 {"fmin.d", fmin_d, D, 0},
	{"fmax.d", fmax_d, D, 0},	 {"fsgnj.d", fsgnj_d, D, 0},
	{"fsgnjn.d", fsgnjn_d, D, 0},	 {"fsgnjx.d", fsgnjx_d, D, 0},
	{"feq.s", feq_s, S, 0},		 {"flt.s", flt_s, S, 0},
	{"fle.s", fle_s, S, 0},		 {"feq.d", feq_d, D, 0},
	{"flt.d", flt_d, D, 0},		 {"fle.d", fle_d, D, 0},
	{"fclass.s", fclass_s, S, 0},	 {"fclass.d", fclass_d, D, 0},
	{"fmv.x.w", fmv_x_w, S, 0},	 {"fmv.w.x", fmv_w_x, I, 0},
};

/* Set to a nonzero value to print every operand, result and flags. */
#ifndef FPRAND_TRACE
#define FPRAND_TRACE 0
#endif

int main(void)
{
	rt_puts("fprand: start\n");
	for (int i = 0; i < N_OPERANDS; i++) {
		da[i] = rand_double();
		db[i] = rand_double();
		dc[i] = rand_double();
		sa[i] = rand_single();
		sb[i] = rand_single();
		sc[i] = rand_single();
		ia[i] = rand_int();
	}
	/* Also pair each operand with itself (exact cancellation, x/x). */
	for (int i = 0; i < N_OPERANDS; i += 8) {
		db[i] = da[i];
		sb[i] = sa[i];
		dc[i + 1] = da[i + 1] ^ (1UL << 63);
	}
	csr_write(fcsr, 0);
	for (size_t k = 0; k < COUNT(ops); k++) {
		const struct op *op = &ops[k];
		for (int rm = 0; rm < (op->has_rm ? 5 : 1); rm++) {
			hash = 0xcbf29ce484222325UL;
			for (int i = 0; i < N_OPERANDS; i++) {
				u64 a, b, c;
				if (op->src == S) {
					a = sa[i], b = sb[i], c = sc[i];
				} else if (op->src == D) {
					a = da[i], b = db[i], c = dc[i];
				} else {
					a = ia[i], b = c = 0;
				}
				u64 r = op->fn(a, b, c, rm);
				u64 f = take_flags();
				mix(r);
				mix(f);
				if (FPRAND_TRACE) {
					rt_puts(op->name);
					rt_putc(' ');
					rt_put_hex(a);
					rt_putc(' ');
					rt_put_hex(b);
					rt_putc(' ');
					rt_put_hex(c);
					rt_puts(" -> ");
					rt_put_hex(r);
					rt_puts(" flags ");
					rt_put_hex(f);
					rt_putc('\n');
				}
			}
			rt_puts(op->name);
			if (op->has_rm) {
				rt_putc(' ');
				rt_puts(rm_names[rm]);
			}
			rt_puts(": ");
			rt_put_hex(hash);
			rt_putc('\n');
		}
	}
	return rt_finish("fprand");
}
