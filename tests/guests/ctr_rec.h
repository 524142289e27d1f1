/* For `vmm run` guest kernels that record a CTR history in VS-mode and read it back
   (sbi_ctr_snap; sbi_ctr_smp and sbi_ctr_pause through ctr_smp.h).

   rec0(n): a loop of n calls, returns and taken branches, assembled without RVC between the
   labels rec0_start and rec0_end. ctr_record_start(depth) selects the depth 16 << depth
   (sctrdepth), clears the buffer (SCTRCLR) and sctrstatus, and records S-mode transfers
   (sctrctl.S; the guest's S-mode is VS-mode); ctr_record_freeze() sets sctrstatus.FROZEN and
   clears sctrctl. Both are always inlined, so that only what the guest runs between them is
   recorded. ctr_entry(i, reg) reads entry i's ctrsource (reg 0), ctrtarget (1) or ctrdata
   (2) through siselect and sireg/sireg2/sireg3; fnv(h, v) adds the eight bytes of v to the
   64-bit FNV-1a hash h (start from FNV_OFFSET).

   CSRs are accessed by number: binutils 2.40 does not know Smctr. Include once, in the
   guest's only C file. */
#ifndef RT_SBI_CTR_REC_H
#define RT_SBI_CTR_REC_H

#include "vs/sbi.h"

#define FNV_OFFSET 0xcbf29ce484222325UL

u64 rec0(u64 n);
extern char rec0_start[], rec0_end[];

__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	".align 2\n"
	".globl rec0_start, rec0_end, rec0\n"
	"rec0_start:\n"
	"rec0:\n"
	" mv t2, ra\n"
	"1: jal ra, 2f\n"
	" addi a0, a0, -1\n"
	" bnez a0, 1b\n"
	" mv ra, t2\n"
	" ret\n"
	"2: addi t0, t0, 1\n"
	" ret\n"
	"rec0_end:\n"
	".option pop\n");

static inline __attribute__((always_inline)) void ctr_record_start(u64 depth)
{
	__asm__ volatile("csrw 0x15f, %0" ::"r"(depth)); /* sctrdepth */
	__asm__ volatile(".word 0x10400073");           /* SCTRCLR */
	__asm__ volatile("csrw 0x14f, zero");
	__asm__ volatile("csrw 0x14e, %0" ::"r"(2UL)); /* sctrctl.S */
}

static inline __attribute__((always_inline)) void ctr_record_freeze(void)
{
	__asm__ volatile("csrs 0x14f, %0" ::"r"(1UL << 31)); /* FROZEN */
	__asm__ volatile("csrw 0x14e, zero");
}

static u64 ctr_entry(u64 i, int reg)
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

static u64 fnv(u64 h, u64 v)
{
	for (int b = 0; b < 8; b++) {
		h ^= (v >> (8 * b)) & 0xff;
		h *= 0x100000001b3UL;
	}
	return h;
}

#endif
