/*
 * bench_pmu: the `bench` workload with every programmable counter counting
 * (scripts/bench-pmu.sh compares its speed with plain `bench`, which counts
 * nothing beyond mcycle/minstret). mhpmcounter3-31 are given the 28 events
 * of the catalog (docs/pmu.md) in turn, counter 31 the cycles again; all
 * count in every mode. At the end each counter is printed with its event,
 * so the output also documents what the models count for this workload
 * (the figures are deterministic: the cost model and the models depend on
 * the instruction stream only).
 */
#define main bench_workload
#include "bench.c"
#undef main

static const u64 events[] = {
	0x1,	 0x2,	  0x3,	   0x4,	    0x5,     0x6,     0x100,
	0x101,	 0x102,	  0x103,   0x104,   0x105,   0x110,   0x111,
	0x112,	 0x113,	  0x114,   0x118,   0x119,   0x11a,   0x11b,
	0x10000, 0x10001, 0x10002, 0x10003, 0x10019, 0x1001b, 0x10021,
	0x1,
};

#define WRITE_EVENT(n)                                                        \
	__asm__ volatile("csrw " #n ", %0" ::"r"(events[n - 0x323]))
#define READ_COUNTER(n)                                                       \
	({                                                                    \
		u64 v_;                                                       \
		__asm__ volatile("csrr %0, " #n : "=r"(v_));                  \
		v_;                                                           \
	})

static void program(void)
{
	WRITE_EVENT(0x323); WRITE_EVENT(0x324); WRITE_EVENT(0x325);
	WRITE_EVENT(0x326); WRITE_EVENT(0x327); WRITE_EVENT(0x328);
	WRITE_EVENT(0x329); WRITE_EVENT(0x32a); WRITE_EVENT(0x32b);
	WRITE_EVENT(0x32c); WRITE_EVENT(0x32d); WRITE_EVENT(0x32e);
	WRITE_EVENT(0x32f); WRITE_EVENT(0x330); WRITE_EVENT(0x331);
	WRITE_EVENT(0x332); WRITE_EVENT(0x333); WRITE_EVENT(0x334);
	WRITE_EVENT(0x335); WRITE_EVENT(0x336); WRITE_EVENT(0x337);
	WRITE_EVENT(0x338); WRITE_EVENT(0x339); WRITE_EVENT(0x33a);
	WRITE_EVENT(0x33b); WRITE_EVENT(0x33c); WRITE_EVENT(0x33d);
	WRITE_EVENT(0x33e); WRITE_EVENT(0x33f);
	__asm__ volatile("csrw mcountinhibit, zero");
}

static void report(void)
{
	u64 c[29] = {
		READ_COUNTER(0xb03), READ_COUNTER(0xb04), READ_COUNTER(0xb05),
		READ_COUNTER(0xb06), READ_COUNTER(0xb07), READ_COUNTER(0xb08),
		READ_COUNTER(0xb09), READ_COUNTER(0xb0a), READ_COUNTER(0xb0b),
		READ_COUNTER(0xb0c), READ_COUNTER(0xb0d), READ_COUNTER(0xb0e),
		READ_COUNTER(0xb0f), READ_COUNTER(0xb10), READ_COUNTER(0xb11),
		READ_COUNTER(0xb12), READ_COUNTER(0xb13), READ_COUNTER(0xb14),
		READ_COUNTER(0xb15), READ_COUNTER(0xb16), READ_COUNTER(0xb17),
		READ_COUNTER(0xb18), READ_COUNTER(0xb19), READ_COUNTER(0xb1a),
		READ_COUNTER(0xb1b), READ_COUNTER(0xb1c), READ_COUNTER(0xb1d),
		READ_COUNTER(0xb1e), READ_COUNTER(0xb1f),
	};
	for (int i = 0; i < 29; i++) {
		rt_puts("mhpmcounter");
		rt_put_dec(i + 3);
		rt_puts(" event ");
		rt_put_hex32((u32)events[i]);
		rt_puts(": ");
		rt_put_dec(c[i]);
		rt_putc('\n');
	}
}

int main(void)
{
	program();
	int r = bench_workload();
	__asm__ volatile("csrw mcountinhibit, %0" ::"r"(~0UL));
	report();
	return r;
}
