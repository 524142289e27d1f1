/*
 * counters: minstret/mcycle/time on vmm (not compared with QEMU, whose
 * counters follow the host clock): minstret counts retired instructions
 * exactly, a write to minstret sets it, and the last value read is
 * printed so that the host test can compare it with RunStats::instret.
 */
#include "rt/rt.h"

u64 read_pair(void);
__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".globl read_pair\n"
	/* Two minstret reads with three instructions in between. */
	"read_pair: csrr t0, minstret\n"
	"	nop\n"
	"	nop\n"
	"	nop\n"
	"	csrr t1, minstret\n"
	"	sub a0, t1, t0\n"
	"	ret\n"
	".option pop\n"
	".popsection\n");

int main(void)
{
	rt_puts("counters: start\n");
	rt_check("minstret delta over 4 instructions", read_pair(), 4);

	u64 c0 = csr_read(mcycle);
	u64 c1 = csr_read(mcycle);
	rt_check_true("mcycle does not go backwards", c1 >= c0);
	u64 i0 = csr_read(instret);
	u64 i1 = csr_read(minstret);
	rt_check_true("instret shadows minstret", i1 > i0 && i1 - i0 < 4);

	u64 saved = csr_read(minstret);
	csr_write(minstret, 1000000);
	u64 after = csr_read(minstret);
	rt_check_true("minstret after writing 1000000 is 1000000..1000001",
		      after == 1000000 || after == 1000001);
	csr_write(minstret, saved + 4);

	u64 end = csr_read(minstret);
	rt_puts("minstret=");
	rt_put_dec(end);
	rt_putc('\n');
	return rt_finish("counters");
}
