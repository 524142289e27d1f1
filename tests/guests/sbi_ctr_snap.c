/* sbi_ctr_snap: a `vmm run` guest kernel whose CTR history spans a snapshot. It selects depth
   64, records a few thousand calls, returns and branches in VS-mode (with cycle counts),
   freezes CTR, and prints the depth, WRPTR, FROZEN and a hash of all 64 entries (ctrsource,
   ctrtarget, ctrdata: every bit), plus the youngest entries. tests/tests/snapshot.rs runs it
   once straight through and once snapshotted mid-recording and restored on another host
   model: the two outputs must be identical. */
#include "ctr_rec.h"

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	printk("sbi_ctr_snap: start\n");
	ctr_record_start(2); /* depth 64 */
	rec0(3000);
	ctr_record_freeze();
	u64 depth, status;
	__asm__ volatile("csrr %0, 0x15f" : "=r"(depth));
	__asm__ volatile("csrr %0, 0x14f" : "=r"(status));
	u64 h = FNV_OFFSET;
	for (u64 i = 0; i < (16UL << depth); i++)
		for (int r = 0; r < 3; r++)
			h = fnv(h, ctr_entry(i, r));
	printk("ctr depth %d wrptr %d frozen %d hash %x\n", 16UL << depth, status & 0xff,
	       status >> 31, h);
	for (u64 i = 0; i < 3; i++)
		printk("ctr entry %d: %x -> %x data %x\n", i, ctr_entry(i, 0), ctr_entry(i, 1),
		       ctr_entry(i, 2));
	printk("sbi_ctr_snap: PASS\n");
	sbi_shutdown(0);
}
