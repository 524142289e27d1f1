/*
 * bench_fp: a floating-point and division heavy workload of a few hundred
 * million instructions: a double-precision matrix multiply, square roots,
 * floating-point divisions (a harmonic sum, forwards and backwards) and
 * integer division and remainder (digit sums, greatest common divisors).
 * Each kernel's result is checked against a value computed another way,
 * and bit patterns of the results are printed, so that the output is the
 * same on every conforming RV64GC implementation.
 *
 * scripts/bench-fp.sh runs this guest on vmm (translation on and off) and
 * on QEMU and compares their speed.
 */
#include "rt/rt.h"

#define MAT_N 80
#define MAT_PASSES 12
#define SQRT_N 400000
#define SQRT_PASSES 8
#define DIV_N 400000
#define DIV_PASSES 8
#define GCD_N 600

static double mat_a[MAT_N][MAT_N], mat_b[MAT_N][MAT_N], mat_c[MAT_N][MAT_N];

static u64 xorshift_state = 0x9e3779b97f4a7c15UL;
static u64 xorshift(void)
{
	u64 x = xorshift_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return xorshift_state = x;
}

/* FSQRT.D (a call of sqrt would need a library for errno). */
static inline double fsqrt(double x)
{
	double r;
	__asm__("fsqrt.d %0, %1" : "=f"(r) : "f"(x));
	return r;
}

static u64 bits(double d)
{
	u64 v;
	__builtin_memcpy(&v, &d, sizeof(v));
	return v;
}

/* C = A B, with a scale so that the products are not all small integers. */
static void matmul(double scale)
{
	for (int i = 0; i < MAT_N; i++)
		for (int j = 0; j < MAT_N; j++) {
			double s = 0.0;
			for (int k = 0; k < MAT_N; k++)
				s += mat_a[i][k] * mat_b[k][j];
			mat_c[i][j] = s * scale;
		}
}

/* sum sqrt(i): also sqrt(k * k) == k exactly for every k. */
static double sqrt_sum(u64 *exact)
{
	double s = 0.0;
	u64 ok = 0;
	for (u64 i = 1; i <= SQRT_N; i++) {
		double d = (double)i;
		s += fsqrt(d);
		double k = (double)(i & 0xfff);
		ok += fsqrt(k * k) == k;
	}
	*exact = ok;
	return s;
}

/* The harmonic sum H_n, forwards or backwards. */
static double harmonic(int backwards)
{
	double h = 0.0;
	if (backwards)
		for (u64 i = DIV_N; i >= 1; i--)
			h += 1.0 / (double)i;
	else
		for (u64 i = 1; i <= DIV_N; i++)
			h += 1.0 / (double)i;
	return h;
}

static u64 digit_sum(u64 x)
{
	u64 s = 0;
	while (x) {
		s += x % 10;
		x /= 10;
	}
	return s;
}

static u64 gcd(u64 a, u64 b)
{
	while (b) {
		u64 t = a % b;
		a = b;
		b = t;
	}
	return a;
}

int main(void)
{
	rt_puts("bench_fp: start\n");

	/* Matrix multiply: integer-valued entries, so that sum(C) is exact and equals
	 * sum_k colsum(A)_k rowsum(B)_k. */
	for (int i = 0; i < MAT_N; i++)
		for (int j = 0; j < MAT_N; j++) {
			mat_a[i][j] = (double)((i64)(xorshift() % 2001) - 1000);
			mat_b[i][j] = (double)((i64)(xorshift() % 2001) - 1000);
		}
	u64 mhash = 0;
	for (int pass = 0; pass < MAT_PASSES; pass++) {
		matmul(pass == MAT_PASSES - 1 ? 1.0 : 1.0 / (double)(pass + 3));
		mhash = (mhash ^ bits(mat_c[pass][MAT_N - 1 - pass])) * 0x100000001b3UL;
	}
	double sum = 0.0, expect = 0.0;
	for (int i = 0; i < MAT_N; i++)
		for (int j = 0; j < MAT_N; j++)
			sum += mat_c[i][j];
	for (int k = 0; k < MAT_N; k++) {
		double ca = 0.0, rb = 0.0;
		for (int i = 0; i < MAT_N; i++) {
			ca += mat_a[i][k];
			rb += mat_b[k][i];
		}
		expect += ca * rb;
	}
	rt_check("matrix sum", bits(sum), bits(expect));
	rt_print_hex("matrix hash", mhash);

	/* Square roots. */
	double s = 0.0;
	u64 exact = 0;
	for (int pass = 0; pass < SQRT_PASSES; pass++)
		s = sqrt_sum(&exact);
	rt_check("exact square roots", exact, SQRT_N);
	/* sum_{i<=n} sqrt(i) ~ 2/3 n^1.5 + 1/2 n^0.5 - 0.2079: within 0.1 (rounding). */
	double n = (double)SQRT_N;
	double approx = 2.0 / 3.0 * n * fsqrt(n) + 0.5 * fsqrt(n) - 0.2078862;
	double err = s - approx;
	rt_check_true("sqrt sum near its approximation", err < 0.1 && err > -0.1);
	rt_print_hex("sqrt sum", bits(s));

	/* Divisions. */
	double hf = 0.0, hb = 0.0;
	for (int pass = 0; pass < DIV_PASSES; pass++) {
		hf = harmonic(0);
		hb = harmonic(1);
	}
	double d = hf - hb;
	rt_check_true("harmonic sums agree", d < 1e-8 && d > -1e-8);
	/* H_n ~ ln n + gamma + 1/2n: ln(400000) = 12.89921983... */
	double h = 12.899219826090118 + 0.5772156649015329 + 1.0 / (2.0 * DIV_N);
	rt_check_true("harmonic sum near ln n + gamma", hf - h < 1e-8 && h - hf < 1e-8);
	rt_print_hex("harmonic", bits(hf));

	/* Integer division: digit sums (by a constant, which compilers turn into
	 * multiplications, so also by a variable divisor) and gcds. */
	volatile u64 ten = 10;
	u64 ds = 0, dv = 0;
	for (u64 i = 0; i < 300000; i++) {
		u64 x = xorshift();
		ds += digit_sum(x);
		u64 t = ten, y = x, q = 0;
		while (y) {
			q += y % t;
			y /= t;
		}
		dv += q;
		i64 a = (i64)x, b = (i64)(x >> 40) - 8388608;
		if (b != 0 && a / b * b + a % b != a)
			dv = 0;
		u32 w = (u32)x, v = (u32)(x >> 50) + 1;
		if ((w / v) * v + w % v != w)
			dv = 0;
	}
	rt_check("digit sums by a variable divisor", dv, ds);
	u64 g = 0;
	for (u64 a = 1; a <= GCD_N; a++)
		for (u64 b = 1; b <= GCD_N; b++)
			g += gcd(a * 7919, b * 104729);
	rt_print_hex("digit sum", ds);
	rt_print_hex("gcd sum", g);

	return rt_finish("bench_fp");
}
