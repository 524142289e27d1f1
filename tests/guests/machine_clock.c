/*
 * machine_clock: the clock modes of `vmm machine` (`--clock`, tests/clock.rs). It waits
 * STEPS times in WFI for the CLINT's timer STEP_TICKS ahead, with mstatus.MIE clear so
 * that the pending timer only ends the WFI (privileged spec 3.3.3, "Wait for Interrupt"),
 * and checks after each wait that mtime reached the deadline and never went backward.
 *
 * With virtual time the waits take no host time (time skips to the deadline); with host
 * time each lasts STEP_TICKS of the host's time, 0.1 s, with the process asleep.
 */
#include "rt/rt.h"

/* 0.1 s at the 10 MHz timebase. */
#define STEP_TICKS 1000000UL
#define STEPS 10
#define MIE_MTIE (1UL << 7)

int main(void)
{
	u64 start = *CLINT_MTIME, last = start;
	int ok = 1;
	__asm__ volatile("csrw mie, %0" ::"r"(MIE_MTIE));
	for (int step = 1; step <= STEPS; step++) {
		u64 deadline = *CLINT_MTIME + STEP_TICKS;
		*CLINT_MTIMECMP = deadline;
		__asm__ volatile("wfi");
		u64 now = *CLINT_MTIME;
		ok &= now >= deadline && now >= last;
		last = now;
		rt_puts("machine_clock: step ");
		rt_put_dec(step);
		rt_puts("\n");
	}
	__asm__ volatile("csrw mie, zero");
	*CLINT_MTIMECMP = ~0UL;
	rt_check_true("every wait reached its deadline, mtime never went back", ok);
	rt_check_true("the waits took STEPS * STEP_TICKS at least",
		      last - start >= STEPS * STEP_TICKS);
	return rt_finish("machine_clock");
}
