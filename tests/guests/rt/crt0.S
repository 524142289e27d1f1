/*
 * Start code and trap entry points shared by every test guest.
 *
 * The guest starts in M-mode at _start with a0 = hartid. Only hart 0 runs;
 * any other hart parks in a WFI loop.
 */
#include "rt_asm.h"

	.section .text.start, "ax"
	.globl _start
_start:
	csrr	t0, mhartid
	bnez	t0, .Lpark

	.option push
	.option norelax
	la	gp, __global_pointer$
	.option pop
	la	sp, __stack_top

	/*
	 * Open the whole address space to S and U through PMP entry 0 (NAPOT,
	 * RWX). A platform without PMP may treat these CSRs as read-zero
	 * (writes ignored) or raise an illegal-instruction exception: mtvec
	 * points just past the writes meanwhile, so either way we go on.
	 */
	la	t0, .Lpmp_done
	csrw	mtvec, t0
	li	t0, -1
	srli	t0, t0, 10
	csrw	pmpaddr0, t0
	li	t0, 0x1f
	csrw	pmpcfg0, t0
	.balign	4
.Lpmp_done:
	la	t0, rt_m_trap_entry
	csrw	mtvec, t0
	la	t0, __m_trap_stack_top
	csrw	mscratch, t0
	csrw	medeleg, zero
	csrw	mideleg, zero
	csrw	mie, zero
	csrw	satp, zero
	csrw	mcounteren, zero
	csrw	scounteren, zero

	/* Turn the FPU on (mstatus.FS = Initial) and clear fcsr. */
	li	t0, MSTATUS_FS_INITIAL
	csrs	mstatus, t0
	fscsr	zero

	/* Zero .bss. */
	la	t0, __bss_start
	la	t1, __bss_end
1:	bgeu	t0, t1, 2f
	sd	zero, 0(t0)
	addi	t0, t0, 8
	j	1b
2:
	call	main
	call	rt_exit
.Lpark:
	wfi
	j	.Lpark

/*
 * M-mode trap entry (direct mode). mscratch holds the top of the M trap
 * stack; the interrupted context's registers are saved in a struct
 * rt_frame (x0..x31, x2 = interrupted sp) handed to rt_m_trap().
 */
	.text
	.balign	256
	.globl	rt_m_trap_entry
rt_m_trap_entry:
	csrrw	sp, mscratch, sp
	addi	sp, sp, -FRAME_SIZE
	SAVE_REGS
	csrr	t0, mscratch
	sd	t0, 2*8(sp)
	mv	a0, sp
	call	rt_m_trap
	addi	t0, sp, FRAME_SIZE
	csrw	mscratch, t0
	RESTORE_REGS
	ld	sp, 2*8(sp)
	mret

/* S-mode trap entry: the same, with sscratch holding the S trap stack. */
	.balign	256
	.globl	rt_s_trap_entry
rt_s_trap_entry:
	csrrw	sp, sscratch, sp
	addi	sp, sp, -FRAME_SIZE
	SAVE_REGS
	csrr	t0, sscratch
	sd	t0, 2*8(sp)
	mv	a0, sp
	call	rt_s_trap
	addi	t0, sp, FRAME_SIZE
	csrw	sscratch, t0
	RESTORE_REGS
	ld	sp, 2*8(sp)
	sret

/*
 * long rt_run_at(long mode, u64 pc, u64 a0, u64 a1, u64 sp, u64 ra)
 *
 * Saves the M-mode callee-saved context, then mret's to `pc` in privilege
 * `mode` (0 = U, 1 = S, 3 = M) with a0/a1/sp/ra as given. The lower-mode
 * code comes back with `ecall` and a7 = RT_MAGIC (see rt_lower_return);
 * the trap handler then calls rt_resume_m(a0), which returns from
 * rt_run_at with that a0.
 */
	.globl	rt_run_at
rt_run_at:
	la	t0, rt_m_ctx
	sd	ra, 0*8(t0)
	sd	sp, 1*8(t0)
	sd	s0, 2*8(t0)
	sd	s1, 3*8(t0)
	sd	s2, 4*8(t0)
	sd	s3, 5*8(t0)
	sd	s4, 6*8(t0)
	sd	s5, 7*8(t0)
	sd	s6, 8*8(t0)
	sd	s7, 9*8(t0)
	sd	s8, 10*8(t0)
	sd	s9, 11*8(t0)
	sd	s10, 12*8(t0)
	sd	s11, 13*8(t0)
	li	t1, MSTATUS_MPP
	csrc	mstatus, t1
	slli	t2, a0, 11
	and	t2, t2, t1
	csrs	mstatus, t2
	csrw	mepc, a1
	mv	a0, a2
	mv	a1, a3
	mv	sp, a4
	mv	ra, a5
	mret

/* void rt_resume_m(long value): noreturn, see rt_run_at. */
	.globl	rt_resume_m
rt_resume_m:
	la	t0, __m_trap_stack_top
	csrw	mscratch, t0
	la	t0, __s_trap_stack_top
	csrw	sscratch, t0
	la	t0, rt_m_ctx
	ld	ra, 0*8(t0)
	ld	sp, 1*8(t0)
	ld	s0, 2*8(t0)
	ld	s1, 3*8(t0)
	ld	s2, 4*8(t0)
	ld	s3, 5*8(t0)
	ld	s4, 6*8(t0)
	ld	s5, 7*8(t0)
	ld	s6, 8*8(t0)
	ld	s7, 9*8(t0)
	ld	s8, 10*8(t0)
	ld	s9, 11*8(t0)
	ld	s10, 12*8(t0)
	ld	s11, 13*8(t0)
	li	a7, 0
	ret

/* Return address given to lower-mode functions run by rt_run(). */
	.globl	rt_lower_return
rt_lower_return:
	li	a7, RT_MAGIC
	ecall
	j	rt_lower_return

/* The same trampoline, in the page that vm.c maps for U-mode. */
	.section .user.text, "ax"
	.globl	rt_user_return
rt_user_return:
	li	a7, RT_MAGIC
	ecall
	j	rt_user_return

	.bss
	.balign	8
	.globl	rt_m_ctx
rt_m_ctx:
	.space	14*8
