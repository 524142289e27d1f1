/*
 * sbi_bench.h: the branchy workload of the VS-mode observation benchmark
 * (scripts/bench-vs.sh), an S-mode guest kernel for `vmm run` built three
 * times: sbi_bench_off.c observes nothing, sbi_bench_ctr.c records its S-mode
 * transfers in CTR (sctrctl.S: the guest's S-mode is VS-mode; every jump and
 * taken branch), sbi_bench_pmu.c has four SBI PMU counters counting
 * (cycles, instructions, branches, branch misses). All three compute the same
 * results: a quicksort of pseudo-random data, recursive calls and a hashing
 * loop, about 190 million instructions, and print them.
 */
#include "vs/sbi.h"
#include "vs/pmu.h"

#define N 8192
#define ROUNDS 40
#define FIB_N 25
#define HASH_BYTES (1 << 16)

static u32 data[N];
static u8 bytes[HASH_BYTES];

static u32 lcg(u32 *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static __attribute__((noinline)) void quicksort(u32 *a, long lo, long hi)
{
	while (lo < hi) {
		u32 p = a[(lo + hi) / 2];
		long i = lo, j = hi;
		while (i <= j) {
			while (a[i] < p)
				i++;
			while (a[j] > p)
				j--;
			if (i <= j) {
				u32 t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				j--;
			}
		}
		/* Recurse into the smaller part, loop on the larger. */
		if (j - lo < hi - i) {
			quicksort(a, lo, j);
			lo = i;
		} else {
			quicksort(a, i, hi);
			hi = j;
		}
	}
}

static __attribute__((noinline)) u64 fib(u64 n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static __attribute__((noinline)) u64 hash(const u8 *p, u64 n, u64 h)
{
	for (u64 i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3UL;
		if (h & 1)
			h ^= h >> 7;
	}
	return h;
}

/* The workload: the same results whatever is observed. */
static u64 workload(void)
{
	u64 sum = 0;
	u32 seed = 1;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++)
			data[i] = lcg(&seed);
		quicksort(data, 0, N - 1);
		for (int i = 1; i < N; i++)
			if (data[i - 1] > data[i])
				return 0; /* not sorted: a wrong result */
		sum += data[N / 2] + fib(FIB_N);
		for (int i = 0; i < HASH_BYTES; i++)
			bytes[i] = (u8)lcg(&seed);
		sum ^= hash(bytes, HASH_BYTES, 0xcbf29ce484222325UL);
	}
	return sum;
}

/* SBI PMU: counters for cycles, instructions, branches and branch misses (hardware event
   6), started with value 0; returns how many were configured. */
#define EV_BRANCH_MISSES 0x6
static int pmu_start_four(u64 idx[4])
{
	static const u64 events[4] = { EV_CYCLES, EV_INSTRUCTIONS, EV_BRANCHES, EV_BRANCH_MISSES };
	struct sbiret n = pmu(PMU_NUM_COUNTERS, 0, 0, 0, 0, 0);
	u64 mask = n.value >= 64 ? ~0UL : (1UL << n.value) - 1;
	for (int e = 0; e < 4; e++) {
		struct sbiret r = pmu(PMU_CONFIG_MATCHING, 0, mask & ~2UL,
				      CFG_CLEAR_VALUE | CFG_AUTO_START, events[e], 0);
		if (r.error) {
			printk("FAIL config_matching event %x: error %d\n", events[e], r.error);
			return e;
		}
		idx[e] = (u64)r.value;
		mask &= ~(1UL << r.value);
	}
	return 4;
}

/* Reads counter `i` (a hardware counter: CSR 0xC00 + i). */
static u64 read_counter(u64 i)
{
	switch (i) {
#define C(n)                        \
	case n:                     \
		return CSR_READ(0xC00 + n);
		C(0) C(2) C(3) C(4) C(5) C(6) C(7) C(8) C(9) C(10) C(11) C(12) C(13) C(14) C(15)
		C(16) C(17) C(18) C(19) C(20) C(21) C(22) C(23) C(24) C(25) C(26) C(27) C(28)
		C(29) C(30) C(31)
#undef C
	}
	return 0;
}

static int bench_main(int mode)
{
	u64 idx[4] = { 0 };
	int configured = 4;
	if (mode == 1) {
		__asm__ volatile("csrw 0x15f, %0" ::"r"(0UL)); /* sctrdepth: 16 */
		__asm__ volatile(".word 0x10400073");          /* SCTRCLR */
		__asm__ volatile("csrw 0x14f, zero");
		__asm__ volatile("csrw 0x14e, %0" ::"r"(2UL)); /* sctrctl.S */
	} else if (mode == 2) {
		configured = pmu_start_four(idx);
	}
	u64 sum = workload();
	if (mode == 1) {
		__asm__ volatile("csrw 0x14e, zero");
		u64 status = CSR_READ(0x14f);
		printk("sctrstatus %x\n", status);
	} else if (mode == 2) {
		static const char *names[4] = { "cycles", "instructions", "branches",
						"branch-misses" };
		for (int e = 0; e < configured; e++)
			printk("%s %d\n", names[e], read_counter(idx[e]));
	}
	printk("sum %x\n", sum);
	int ok = sum != 0 && configured == 4;
	printk("sbi_bench: %s\n", ok ? "PASS" : "FAIL");
	sbi_shutdown(!ok);
}
