/*
 * wfi_forever: WFI with no interrupt enabled in mie, so nothing can ever
 * wake the hart. vmm ends the run with an error instead of hanging (not
 * run under QEMU, which would wait forever).
 */
#include "rt/rt.h"

int main(void)
{
	rt_puts("wfi_forever: waiting\n");
	csr_write(mie, 0);
	for (;;)
		__asm__ volatile("wfi");
}
