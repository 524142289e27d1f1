/* sbi_ctr_pause: a two-vCPU `vmm run` guest kernel for the control socket (`--api-sock`).
   It waits for a byte of console input (SBI DBCN console_read, polled) at three points, so
   that a test can pause the VM in a known state with nothing timed:
   1. before it starts hart 1 (hart 1 HSM-stopped, hart 0 polling);
   2. after both harts recorded their CTR histories (as `sbi_ctr_smp` does: each its own loop
      at its own depth, 16 on hart 0 and 32 on hart 1, then frozen) with hart 1 waiting in
      WFI with no timer for an IPI (hart 0 polling);
   3. while hart 1 spins and hart 0 sends it remote fences (fence.i) between polls, so that
      a pause most likely finds hart 0 waiting for a fence.
   Then hart 1 stops itself (HSM) and hart 0 prints both histories (depth, WRPTR, FROZEN, how
   many entries come from the hart's own loop, a hash of every bit and one without the cycle
   counts, the youngest entries) and shuts down. What it prints does not depend on when the
   input arrives. tests/tests/api.rs pauses, dumps, snapshots and restores it. */
#include "ctr_smp.h"

static volatile u64 go, spinning, stop2, spins;

void secondary_main(u64 hartid)
{
	record(hartid);
	hart1_recorded();
	/* Wait in WFI, with no timer, for hart 0's IPI. */
	__asm__ volatile("csrs sie, %0" ::"r"(SSIP));
	while (!go)
		__asm__ volatile("wfi");
	__asm__ volatile("csrc sip, %0" ::"r"(SSIP));
	spinning = 1;
	__sync_synchronize();
	while (!stop2)
		spins++;
	sbi_call(SBI_EXT_HSM, 1, 0, 0, 0, 0); /* hart_stop */
	for (;;)
		;
}

/* Wait for one byte of console input (polled), calling `between` after each empty poll. */
static void wait_input(int n, void (*between)(void))
{
	char c;
	printk("sbi_ctr_pause: waiting for input %d\n", (u64)n);
	while (dbcn_read(&c, 1) <= 0)
		if (between)
			between();
	printk("sbi_ctr_pause: got input %d\n", (u64)n);
}

static void fence_hart1(void)
{
	sbi_call(SBI_EXT_RFENCE, 0, 2, 0, 0, 0); /* remote_fence_i(hart 1) */
}

int main(u64 hartid, u64 fdt)
{
	(void)fdt;
	printk("sbi_ctr_pause: start\n");
	wait_input(1, 0);
	start_hart1();
	record(hartid);
	wait_hart1_recorded();
	wait_input(2, 0);
	go = 1;
	__sync_synchronize();
	sbi_call(SBI_EXT_IPI, 0, 2, 0, 0, 0); /* to hart 1 */
	while (!spinning)
		;
	wait_input(3, fence_hart1);
	stop2 = 1;
	__sync_synchronize();
	wait_hart1_stopped();
	print_results();
	printk("sbi_ctr_pause: %d checks, %d failures\n", (u64)checks, (u64)failures);
	printk("sbi_ctr_pause: %s\n", failures ? "FAIL" : "PASS");
	return failures;
}
