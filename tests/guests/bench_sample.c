/*
 * bench_sample: the `bench` workload profiled as a sampling profiler does
 * (scripts/bench-sample.sh compares its speed with plain `bench`):
 * mhpmcounter3 counts cycles (event 0x1) in every mode and overflows every
 * PERIOD cycles; each overflow raises a local counter-overflow interrupt
 * (Sscofpmf) in M-mode, whose handler takes the sample (counts it), writes
 * the counter back to 2^64 - PERIOD, clears mhpmevent3.OF and mip.LCOFIP.
 * At the end it prints the number of samples and a hash of their mepc
 * values (the instruction after each causal one: Ssplcofi's precise LCOFI),
 * which are deterministic on vmm (the cost model's cycles depend on the
 * instruction stream only) and must not depend on --jit.
 */
#define main bench_workload
#include "bench.c"
#undef main
#include "pmu.h"

#define PERIOD 100000UL

static volatile u64 samples, pc_hash;

static void m_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	if (cause != IRQ_LCOF) {
		rt_puts("FATAL: unexpected interrupt\n");
		rt_exit(101);
	}
	samples++;
	pc_hash = (pc_hash ^ csr_read(mepc)) * 0x100000001b3UL;
	pmu_wr_counter(3, -PERIOD);
	pmu_wr_event(3, EV_CYCLES);
	csr_clear(mip, 1UL << IRQ_LCOF);
}

int main(void)
{
	rt_m_irq = m_irq;
	pmu_wr_event(3, EV_CYCLES);
	pmu_wr_counter(3, -PERIOD);
	csr_set(mie, 1UL << IRQ_LCOF);
	__asm__ volatile("csrw mcountinhibit, zero");
	csr_set(mstatus, MSTATUS_MIE);
	int r = bench_workload();
	csr_clear(mstatus, MSTATUS_MIE);
	__asm__ volatile("csrw mcountinhibit, %0" ::"r"(~0UL));
	rt_puts("bench_sample: ");
	rt_put_dec(samples);
	rt_puts(" samples, pc hash ");
	rt_put_hex(pc_hash);
	rt_putc('\n');
	return r;
}
