/* sbi_ctr_spin: a `vmm run` guest kernel that records CTR history forever (calls, returns
   and branches in VS-mode at depth 64), for the control-socket tests (tests/tests/api.rs):
   they pause it, dump and snapshot its CTR state, and resume it. It never ends by itself. */
#include "vs/sbi.h"

void spin_forever(void) __attribute__((noreturn));

__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	".globl spin_forever\n"
	".align 2\n"
	"spin_forever:\n"
	"1: jal ra, 2f\n"
	" addi t1, t1, 1\n"
	" andi t2, t1, 7\n"
	" bnez t2, 1b\n"
	" j 1b\n"
	"2: ret\n"
	".option pop\n");

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	printk("sbi_ctr_spin: recording\n");
	__asm__ volatile("csrw 0x15f, %0" ::"r"(2UL));
	__asm__ volatile("csrw 0x14e, %0" ::"r"(2UL));
	spin_forever();
}
