/* sbi_ctr_smp: a two-vCPU `vmm run` guest kernel for `--pcpus`. Hart 0 starts hart 1 (SBI
   HSM) and each hart records its own CTR history in VS-mode (calls, returns and taken
   branches of a loop of its own, at a depth of its own: 16 on hart 0, 32 on hart 1), at the
   same time (hart 1 starts while hart 0 records, after a short timer wait), long
   enough to span many time slices, then freezes it and hashes every entry. Hart 1 first
   waits for its timer in WFI; hart 0 sends remote fences to hart 1 and waits in WFI for
   hart 1's IPI; hart 1 stops itself (HSM) and hart 0 waits for that. Hart 0 prints both
   histories: depth, WRPTR, FROZEN, how many entries have a source in the hart's own loop
   (all of them: no entry of the other hart, no leftover), a hash of every bit and a hash
   without the cycle counts, and the youngest entries.

   tests/tests/smp.rs runs it with --pcpus 1 (both vCPUs on one hart, many slice sizes),
   --pcpus 2, and snapshotted and restored: each history must be the same. */
#include "ctr_smp.h"

#define STIP (1UL << 5)

void secondary_main(u64 hartid)
{
	/* Wait for the timer in WFI (off the hart while hart 0 runs, with --pcpus 1). */
	__asm__ volatile("csrs sie, %0" ::"r"(STIP));
	u64 until = csr_read_time() + 300;
	sbi_call(SBI_EXT_TIME, 0, until, 0, 0, 0);
	while (csr_read_time() < until)
		__asm__ volatile("wfi");
	sbi_call(SBI_EXT_TIME, 0, ~0UL, 0, 0, 0);
	__asm__ volatile("csrc sie, %0" ::"r"(STIP));

	record(hartid);
	hart1_recorded();
	sbi_call(SBI_EXT_HSM, 1, 0, 0, 0, 0); /* hart_stop */
	for (;;)
		;
}

int main(u64 hartid, u64 fdt)
{
	(void)fdt;
	printk("sbi_ctr_smp: start\n");
	start_hart1();
	record(hartid);
	/* Fences for hart 1, which may be off its hart: they must complete. */
	check("remote_fence_i(1)", (u64)sbi_call(SBI_EXT_RFENCE, 0, 2, 0, 0, 0).error, 0);
	check("remote_sfence_vma(1)",
	      (u64)sbi_call(SBI_EXT_RFENCE, 1, 2, 0, 0, ~0UL).error, 0);
	wait_hart1_recorded();
	wait_hart1_stopped();
	print_results();
	printk("sbi_ctr_smp: %d checks, %d failures\n", (u64)checks, (u64)failures);
	printk("sbi_ctr_smp: %s\n", failures ? "FAIL" : "PASS");
	return failures;
}
