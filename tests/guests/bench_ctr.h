/*
 * bench_ctr.h: the branch-heavy workload of the CTR benchmark
 * (scripts/bench-ctr.sh), built twice: bench_ctr_off.c runs it with CTR
 * off, bench_ctr_on.c with M-mode recording on (mctrctl.M, the default
 * filter: every jump and taken branch, about one record per 4
 * instructions). Both print the same checksum.
 */
#include "rt/rt.h"

#define FIB_N 32
#define SORT_N 4096
#define SORT_PASSES 20

/* Calls and returns. */
static __attribute__((noinline)) u64 fib(u64 n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static u32 lcg(u32 *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static u32 arr[SORT_N];

/* Data-dependent branches: insertion sort of pseudo-random data. */
static u64 sort_pass(u32 seed)
{
	for (int i = 0; i < SORT_N; i++)
		arr[i] = lcg(&seed);
	for (int i = 1; i < 1024; i++) {
		u32 v = arr[i];
		int j = i - 1;
		while (j >= 0 && arr[j] > v) {
			arr[j + 1] = arr[j];
			j--;
		}
		arr[j + 1] = v;
	}
	u64 sum = 0;
	for (int i = 0; i < SORT_N; i++)
		sum += (arr[i] & 1) ? arr[i] : (arr[i] >> 1);
	return sum;
}

static int bench_main(int ctr_on)
{
	if (ctr_on) {
		__asm__ volatile("csrw 0x30c, %0" ::"r"(1UL << 54));
		__asm__ volatile("csrw 0x34e, %0" ::"r"(1UL << 2)); /* mctrctl.M */
	}
	u64 f = fib(FIB_N);
	u64 s = 0;
	for (u32 p = 0; p < SORT_PASSES; p++)
		s += sort_pass(p + 1);
	__asm__ volatile("csrw 0x34e, zero");
	rt_print_hex("fib", f);
	rt_print_hex("sort", s);
	return f == 2178309 ? 0 : 1;
}
