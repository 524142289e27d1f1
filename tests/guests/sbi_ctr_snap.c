/* sbi_ctr_snap: a `vmm run` guest kernel whose CTR history spans a snapshot. It selects depth
   64, records a few thousand calls, returns and branches in VS-mode (with cycle counts),
   freezes CTR, and prints the depth, WRPTR, FROZEN and a hash of all 64 entries (ctrsource,
   ctrtarget, ctrdata: every bit), plus the youngest entries. tests/tests/snapshot.rs runs it
   once straight through and once snapshotted mid-recording and restored on another host
   model: the two outputs must be identical. */
#include "rt_sbi/sbi.h"

u64 rec_loop(u64 n);

__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	".globl rec_loop\n"
	".align 2\n"
	"rec_loop:\n"
	" mv t2, ra\n"
	"1: jal ra, 2f\n"
	" addi a0, a0, -1\n"
	" bnez a0, 1b\n"
	" mv ra, t2\n"
	" ret\n"
	"2: addi t0, t0, 1\n"
	" ret\n"
	".option pop\n");

static u64 csr_entry(u64 i, int reg)
{
	u64 v = 0;
	__asm__ volatile("csrw 0x150, %0" ::"r"(0x200 + i));
	if (reg == 0)
		__asm__ volatile("csrr %0, 0x151" : "=r"(v));
	else if (reg == 1)
		__asm__ volatile("csrr %0, 0x152" : "=r"(v));
	else
		__asm__ volatile("csrr %0, 0x153" : "=r"(v));
	return v;
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	printk("sbi_ctr_snap: start\n");
	__asm__ volatile("csrw 0x15f, %0" ::"r"(2UL)); /* depth 64 */
	__asm__ volatile(".word 0x10400073");          /* SCTRCLR */
	__asm__ volatile("csrw 0x14f, zero");
	__asm__ volatile("csrw 0x14e, %0" ::"r"(2UL)); /* sctrctl.S */
	rec_loop(3000);
	__asm__ volatile("csrs 0x14f, %0" ::"r"(1UL << 31)); /* FROZEN */
	__asm__ volatile("csrw 0x14e, zero");
	u64 depth, status;
	__asm__ volatile("csrr %0, 0x15f" : "=r"(depth));
	__asm__ volatile("csrr %0, 0x14f" : "=r"(status));
	u64 h = 0xcbf29ce484222325UL;
	for (u64 i = 0; i < (16UL << depth); i++)
		for (int r = 0; r < 3; r++) {
			u64 v = csr_entry(i, r);
			for (int b = 0; b < 8; b++) {
				h ^= (v >> (8 * b)) & 0xff;
				h *= 0x100000001b3UL;
			}
		}
	printk("ctr depth %d wrptr %d frozen %d hash %x\n", 16UL << depth, status & 0xff,
	       status >> 31, h);
	for (u64 i = 0; i < 3; i++)
		printk("ctr entry %d: %x -> %x data %x\n", i, csr_entry(i, 0), csr_entry(i, 1),
		       csr_entry(i, 2));
	printk("sbi_ctr_snap: PASS\n");
	sbi_shutdown(0);
}
