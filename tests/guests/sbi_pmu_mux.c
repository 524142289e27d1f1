/* sbi_pmu_mux: an S-mode guest kernel for `vmm run` (linked with guest/sdk/vs/) on a VM that gives
   it two hpm counters (`--pmu-counters 2`): it wants four events counted over the same
   workload and multiplexes them as a kernel's perf core does when there are more events
   than counters.
   - counter_get_info: only hpm counters 3 and 4 exist (5-31 are SBI_ERR_INVALID_PARAM);
   - with branches on counter 3 and loads on 4, a third event finds no free counter
     (SBI_ERR_NOT_SUPPORTED);
   - four time slices of the same loop, each counting two of the four events (branches,
     taken branches, loads, stores) on the two counters, which are reset and reconfigured
     between slices: every slice's counts are exact (to the few instructions around the
     loop), and every event's count scaled by 4 slices / 2 enabled equals its true total.
   Shuts down through SRST, status 0 when every check passed. */
#include "vs/pmu.h"

#define LOOPS 5000
#define SLICES 4

static volatile u64 cell;

/* LOOPS iterations of: a load, a store, an add, a conditional branch (taken but the last
   time). */
__attribute__((noinline)) static void work(u64 n)
{
	__asm__ volatile("1: ld t1, 0(%1)\n sd t1, 0(%1)\n addi %0, %0, -1\n bnez %0, 1b\n"
			 : "+r"(n)
			 : "r"(&cell)
			 : "t1", "memory");
}

static u64 read_hpm(u64 idx)
{
	switch (idx) {
	case 3:
		return CSR_READ(0xc03);
	case 4:
		return CSR_READ(0xc04);
	default:
		return ~0UL;
	}
}

static const char *const names[4] = { "branches", "taken branches", "loads", "stores" };
static const u64 events[4][2] = {
	{ EV_BRANCHES, 0 },
	{ EV_RAW, RAW_BRANCH_TAKEN },
	{ EV_RAW, RAW_LOADS },
	{ EV_RAW, RAW_STORES },
};
/* Per slice: LOOPS of each but taken branches (the last branch falls through). */
static const u64 per_slice[4] = { LOOPS, LOOPS - 1, LOOPS, LOOPS };

int main(void)
{
	struct sbiret r;
	check("num_counters", (u64)pmu(PMU_NUM_COUNTERS, 0, 0, 0, 0, 0).value, 48);
	check_err("get_info 3", pmu(PMU_GET_INFO, 3, 0, 0, 0, 0), 0);
	check_err("get_info 4", pmu(PMU_GET_INFO, 4, 0, 0, 0, 0), 0);
	check_err("get_info 5", pmu(PMU_GET_INFO, 5, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("get_info 31", pmu(PMU_GET_INFO, 31, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);

	/* Two events take both counters; a third has none. */
	r = pmu(PMU_CONFIG_MATCHING, 0, 0x1d, 0, EV_BRANCHES, 0);
	check("branches on", (u64)r.value, 3);
	r = pmu(PMU_CONFIG_MATCHING, 0, 0x1d, 0, EV_RAW, RAW_LOADS);
	check("loads on", (u64)r.value, 4);
	check_err("third event finds no free counter",
		  pmu(PMU_CONFIG_MATCHING, 0, 0x1d, 0, EV_RAW, RAW_STORES),
		  SBI_ERR_NOT_SUPPORTED);
	check_err("reset both", pmu(PMU_STOP, 3, 0x3, STOP_RESET, 0, 0),
		  SBI_ERR_ALREADY_STOPPED);

	/* Multiplexing: slice s counts events 2(s%2) and 2(s%2)+1. */
	u64 total[4] = { 0, 0, 0, 0 }, enabled[4] = { 0, 0, 0, 0 };
	for (u64 s = 0; s < SLICES; s++) {
		u64 ev[2] = { 2 * (s % 2), 2 * (s % 2) + 1 }, ctr[2];
		struct sbiret cfg[2];
		/* Nothing but the calls and the loop between the first start and the stop. */
		for (int k = 0; k < 2; k++)
			cfg[k] = pmu(PMU_CONFIG_MATCHING, 3, 0x3,
					  CFG_CLEAR_VALUE | CFG_AUTO_START, events[ev[k]][0],
					  events[ev[k]][1]);
		work(LOOPS);
		struct sbiret stop = pmu(PMU_STOP, 3, 0x3, 0, 0, 0);
		check_err("stop slice", stop, 0);
		for (int k = 0; k < 2; k++) {
			check_err(names[ev[k]], cfg[k], 0);
			ctr[k] = (u64)cfg[k].value;
		}
		for (int k = 0; k < 2; k++) {
			u64 v = read_hpm(ctr[k]);
			check_range(names[ev[k]], v, per_slice[ev[k]], per_slice[ev[k]] + 16);
			total[ev[k]] += v;
			enabled[ev[k]]++;
		}
		check_err("reset slice", pmu(PMU_STOP, 3, 0x3, STOP_RESET, 0, 0),
			  SBI_ERR_ALREADY_STOPPED);
	}
	for (int e = 0; e < 4; e++) {
		check("slices enabled", enabled[e], 2);
		u64 estimate = total[e] * SLICES / enabled[e];
		check_range(names[e], estimate, SLICES * per_slice[e],
			    SLICES * per_slice[e] + SLICES * 16);
	}
	printk("sbi_pmu_mux: %d checks, %d failures\n", (u64)checks, (u64)failures);
	if (failures)
		return 1;
	dbcn_puts("sbi_pmu_mux: PASS\n");
	return 0;
}
