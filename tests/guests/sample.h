/* Sampling helpers for the `vmm run` guest kernels sbi_pmu_sample and sbi_pmu_sample_smp:
   the draft's provisional CSR numbers and fields, SBI PMU calls, a VS-mode trap handler
   (trap_entry: exceptions are counted with cause, tval and epc and resumed after the
   instruction; interrupts are counted with cause and epc and sip.LCOFIP is cleared; an ECALL
   from VU-mode returns from run_in_vu), VU runs, and load sequences at known labels:
   sp_start_loads (SBI counter_start straight followed by eight loads, sp_l1..sp_l8) and
   pd_loads (spdiscounter written, then loads pd_l1..). read_record() reads the PDIS sample
   record (siselect 0x60) into rec[]. Include once, in the guest's only C file. */
#ifndef RT_SBI_SAMPLE_H
#define RT_SBI_SAMPLE_H

#include "vs/sbi.h"
#include "csr.h"
#include "vs/pmu.h"

#define CONFIG_MATCHING 2
#define START 3
#define STOP 4
#define CFG_SET_SINH (1 << 6)
#define EV_L1D_READ_ACCESS 0x10000


#define PD_SEL_LOAD 1UL
#define PD_HPM(i) (1UL << (i))
#define PD_PA (1UL << 35)
#define PD_U (1UL << 60)
#define PD_S (1UL << 61)
#define PD_OF (1UL << 63)
#define HDR_TYPE 7UL
#define WRAP_ON(k) ((u64)(u32)(0u - (u32)(k)))

#define SIE_LCOFIE (1UL << 13)
#define SSTATUS_SIE (1UL << 1)
#define IRQ_LCOFI ((1UL << 63) | 13)
#define CAUSE_ILLEGAL 2

#define CSRR(num)                                                              \
	({                                                                     \
		u64 v_;                                                        \
		__asm__ volatile("csrr %0, " #num : "=r"(v_)::"memory");      \
		v_;                                                            \
	})
#define CSRW(num, v) __asm__ volatile("csrw " #num ", %0" ::"r"((u64)(v)) : "memory")

/* Exceptions (count, cause, tval, epc; resumed after the instruction), interrupts (count,
   cause, epc; sip.LCOFIP cleared) and the ECALL that ends a VU run. */
struct trap_rec {
	u64 exc, cause, tval, epc, irq, icause, iepc, save;
};
volatile struct trap_rec tr;
u64 vu_ctx[8];
u64 buf[8] __attribute__((aligned(64)));

void trap_entry(void);
u64 run_in_vu(u64 (*f)(u64), u64 arg);
u64 vu_loads(u64 buf);
u64 vu_probe_shpmspc(u64), vu_probe_spdisctl(u64);
/* SBI counter_start(base, mask, SET_INIT_VALUE, init) straight followed by eight loads of
   buf (sp_l1..sp_l8); returns the SBI error. */
i64 sp_start_loads(u64 base, u64 mask, u64 init, u64 *b);
/* spdiscounter = count, then eight loads of b (pd_l1..pd_l8). */
void pd_loads(u64 *b, u64 count);
extern char sp_l1[], sp_l2[], sp_l3[], sp_l4[], sp_l5[], sp_l6[], sp_l7[], sp_l8[];
extern char pd_l1[], pd_l2[], pd_l3[], pd_l4[], vu_l1[], vu_l2[], vu_l3[];

__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	".globl trap_entry\n"
	".align 4\n"
	"trap_entry:\n"
	" csrw sscratch, t0\n"
	" la t0, tr\n"
	" sd t1, 56(t0)\n"
	" csrr t1, scause\n"
	" bltz t1, 2f\n"
	" addi t1, t1, -8\n"
	" beqz t1, 3f\n"
	" addi t1, t1, 8\n"
	" sd t1, 8(t0)\n"
	" csrr t1, stval\n"
	" sd t1, 16(t0)\n"
	" csrr t1, sepc\n"
	" sd t1, 24(t0)\n"
	" addi t1, t1, 4\n"
	" csrw sepc, t1\n"
	" ld t1, 0(t0)\n"
	" addi t1, t1, 1\n"
	" sd t1, 0(t0)\n"
	" j 9f\n"
	"2: sd t1, 40(t0)\n"
	" csrr t1, sepc\n"
	" sd t1, 48(t0)\n"
	" ld t1, 32(t0)\n"
	" addi t1, t1, 1\n"
	" sd t1, 32(t0)\n"
	" li t1, 1 << 13\n"
	" csrc sip, t1\n"
	" j 9f\n"
	"3: la t1, vu_return\n"
	" csrw sepc, t1\n"
	" li t1, 0x100\n"
	" csrs sstatus, t1\n"
	"9: ld t1, 56(t0)\n"
	" csrr t0, sscratch\n"
	" sret\n"
	".globl run_in_vu\n"
	"run_in_vu:\n"
	" la t0, vu_ctx\n"
	" sd ra, 0(t0)\n sd sp, 8(t0)\n sd gp, 16(t0)\n sd tp, 24(t0)\n"
	" sd s0, 32(t0)\n sd s1, 40(t0)\n"
	" csrw sepc, a0\n"
	" mv a0, a1\n"
	" li t1, 0x100\n"
	" csrc sstatus, t1\n"
	" sret\n"
	"vu_return:\n"
	" li t1, 2\n" /* the sret into VU set sstatus.SIE: back to masked */
	" csrc sstatus, t1\n"
	" la t0, vu_ctx\n"
	" ld ra, 0(t0)\n ld sp, 8(t0)\n ld gp, 16(t0)\n ld tp, 24(t0)\n"
	" ld s0, 32(t0)\n ld s1, 40(t0)\n"
	" ret\n"
	".globl vu_loads, vu_l1, vu_l2, vu_l3\n"
	"vu_loads:\n"
	"vu_l1: ld t1, 0(a0)\n"
	"vu_l2: ld t1, 8(a0)\n"
	"vu_l3: ld t1, 16(a0)\n"
	" ld t1, 24(a0)\n"
	" li a0, 0\n"
	" ecall\n"
	".globl vu_probe_shpmspc\n"
	"vu_probe_shpmspc:\n"
	" csrr a0, 0x5c0\n"
	" ecall\n"
	".globl vu_probe_spdisctl\n"
	"vu_probe_spdisctl:\n"
	" csrr a0, 0x5c2\n"
	" ecall\n"
	".globl sp_start_loads, sp_l1, sp_l2, sp_l3, sp_l4, sp_l5, sp_l6, sp_l7, sp_l8\n"
	"sp_start_loads:\n"
	" mv t3, a3\n"
	" mv a3, a2\n"
	" li a2, 1\n"
	" li a6, 3\n"
	" li a7, 0x504D55\n"
	" ecall\n"
	" mv t4, a0\n"
	"sp_l1: ld t1, 0(t3)\n"
	"sp_l2: ld t1, 8(t3)\n"
	"sp_l3: ld t1, 16(t3)\n"
	"sp_l4: ld t1, 24(t3)\n"
	"sp_l5: ld t1, 32(t3)\n"
	"sp_l6: ld t1, 40(t3)\n"
	"sp_l7: ld t1, 48(t3)\n"
	"sp_l8: ld t1, 56(t3)\n"
	" mv a0, t4\n"
	" ret\n"
	".globl pd_loads, pd_l1, pd_l2, pd_l3, pd_l4\n"
	"pd_loads:\n"
	" csrw 0x5c3, a1\n"
	"pd_l1: ld t1, 0(a0)\n"
	"pd_l2: ld t1, 8(a0)\n"
	"pd_l3: ld t1, 16(a0)\n"
	"pd_l4: ld t1, 24(a0)\n"
	" ld t1, 32(a0)\n"
	" ld t1, 40(a0)\n"
	" ret\n"
	".option pop\n");

static u64 rec[6];

static inline void read_record(void)
{
	CSRW(0x150, 0x60);
	rec[0] = CSRR(0x151);
	rec[1] = CSRR(0x152);
	rec[2] = CSRR(0x153);
	rec[3] = CSRR(0x155);
	rec[4] = CSRR(0x156);
	rec[5] = CSRR(0x157);
}

#endif
