/* Start code for S-mode guest kernels under `vmm run`: the hart starts in VS-mode at
   _start with a0 = hart id and a1 = device tree address (no M-mode runtime: the SBI is
   the VMM). Sets up gp, sp and sstatus.FS, clears .bss, calls main(hartid, fdt) and shuts
   the machine down through SBI SRST: reason "no reason" when main returns 0, "system
   failure" otherwise. */

#define SBI_EXT_SRST 0x53525354

	.section .text.start, "ax"
	.globl _start
_start:
	.option push
	.option norelax
	la	gp, __global_pointer$
	.option pop
	la	sp, __stack_top
	li	t0, 0x2000		/* sstatus.FS = Initial */
	csrs	sstatus, t0
	la	t0, __bss_start
	la	t1, __bss_end
1:	bgeu	t0, t1, 2f
	sd	zero, 0(t0)
	addi	t0, t0, 8
	j	1b
2:	call	main
	snez	a1, a0			/* reset_reason */
	li	a0, 0			/* reset_type: shutdown */
	li	a6, 0
	li	a7, SBI_EXT_SRST
	ecall
3:	wfi
	j	3b
