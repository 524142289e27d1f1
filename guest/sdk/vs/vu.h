/* For `vmm run` guest kernels that probe instructions from VS- and VU-mode: a VS-mode trap
   handler that records an exception and skips the (4-byte) instruction, and VU-mode runs.

   trap_entry: an exception other than ECALL from VU-mode increments trap_rec.count, stores
   scause and stval, and resumes after the instruction; an ECALL from VU-mode (scause 8)
   returns to VS-mode at the end of run_in_vu. run_in_vu(f, arg) runs f(arg) in VU-mode
   (vsatp Bare); f ends with an ECALL, and run_in_vu returns its a0. Include once, in the
   guest's only C file, and point stvec at trap_entry. */
#ifndef SDK_VS_VU_H
#define SDK_VS_VU_H

#include "sbi.h"

struct trap_rec {
	u64 count, cause, tval;
};
volatile struct trap_rec trap_rec;
/* Callee-saved state of run_in_vu's caller. */
u64 vu_ctx[8];

u64 run_in_vu(u64 (*f)(u64), u64 arg);
void trap_entry(void);

__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	".globl trap_entry\n"
	".align 4\n"
	"trap_entry:\n"
	" csrw sscratch, t0\n"
	" la t0, trap_rec\n"
	" sd t1, -8(sp)\n"
	" csrr t1, scause\n"
	" addi t1, t1, -8\n"
	" beqz t1, 1f\n"
	" addi t1, t1, 8\n"
	" sd t1, 8(t0)\n"
	" csrr t1, stval\n"
	" sd t1, 16(t0)\n"
	" ld t1, 0(t0)\n"
	" addi t1, t1, 1\n"
	" sd t1, 0(t0)\n"
	" csrr t1, sepc\n"
	" addi t1, t1, 4\n"
	" csrw sepc, t1\n"
	" ld t1, -8(sp)\n"
	" csrr t0, sscratch\n"
	" sret\n"
	"1: la t1, vu_return\n"
	" csrw sepc, t1\n"
	" li t1, 0x100\n" /* sstatus.SPP = S: back to VS-mode */
	" csrs sstatus, t1\n"
	" ld t1, -8(sp)\n"
	" csrr t0, sscratch\n"
	" sret\n"
	".globl run_in_vu\n"
	".align 2\n"
	"run_in_vu:\n"
	" la t0, vu_ctx\n"
	" sd ra, 0(t0)\n sd sp, 8(t0)\n sd gp, 16(t0)\n sd tp, 24(t0)\n"
	" sd s0, 32(t0)\n sd s1, 40(t0)\n"
	" csrw sepc, a0\n"
	" mv a0, a1\n"
	" li t1, 0x100\n" /* sstatus.SPP = U */
	" csrc sstatus, t1\n"
	" sret\n"
	"vu_return:\n"
	" la t0, vu_ctx\n"
	" ld ra, 0(t0)\n ld sp, 8(t0)\n ld gp, 16(t0)\n ld tp, 24(t0)\n"
	" ld s0, 32(t0)\n ld s1, 40(t0)\n"
	" ret\n"
	".option pop\n");

#endif
