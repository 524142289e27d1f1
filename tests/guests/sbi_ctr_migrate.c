/* sbi_ctr_migrate: a `vmm run` guest kernel for the migration tests (tests/tests/migrate.rs).
   It records its own VS-mode calls, returns and branches at depth 64 for ROUNDS rounds, and
   after each prints a hash of every bit of the buffer (sctrstatus, the 64 entries with their
   cycle counts) and of a workload's memory, then shuts down. Nothing it prints depends on
   wall-clock time, so a run moved between vmm processes at any instruction prints exactly
   what an undisturbed run prints. The buffer is never frozen or cleared between rounds: a
   hop that lost or changed a record shows in every later hash. */
#include "vs/sbi.h"
#include "vs/ctr.h"

/* Long enough (about 340 M instructions, 0.3 s) that the tests' hops, which race the
   guest's end on a loaded host, find it still running. */
#define ROUNDS 240
#define WORDS 4096

static u64 data[WORDS];

/* Branchy work: calls, returns, taken and not-taken branches, stores to data[]. */
static __attribute__((noinline)) u64 step(u64 x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

static __attribute__((noinline)) u64 work(u64 seed, u64 n)
{
	u64 x = seed;
	for (u64 i = 0; i < n; i++) {
		x = step(x);
		if (x & 1)
			data[x % WORDS] += x;
		else
			data[i % WORDS] ^= x >> 3;
	}
	return x;
}

static u64 mix(u64 h, u64 v)
{
	h ^= v;
	h *= 0x100000001b3UL;
	return h ^ (h >> 29);
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	u64 depth = ctr_set_depth(2);
	printk("sbi_ctr_migrate: %d entries\n", ctr_depth());
	if (depth != 2)
		return 1;
	ctr_clear();
	ctr_set_ctl(CTRCTL_S | CTRCTL_NTBREN);
	u64 x = 1;
	for (u64 r = 0; r < ROUNDS; r++) {
		x = work(x, 60000);
		ctr_set_ctl(0);
		u64 h = mix(0xcbf29ce484222325UL, ctr_status());
		struct ctr_entry e;
		for (u64 i = 0; i < 64; i++) {
			ctr_read(i, &e);
			h = mix(mix(mix(h, e.source), e.target), e.data);
		}
		u64 m = 0;
		for (u64 i = 0; i < WORDS; i++)
			m = mix(m, data[i]);
		printk("sbi_ctr_migrate: round %d ctr %x memory %x\n", r, h, m);
		ctr_set_ctl(CTRCTL_S | CTRCTL_NTBREN);
	}
	ctr_set_ctl(0);
	printk("sbi_ctr_migrate: PASS\n");
	return 0;
}
