/*
 * ctr_strict: the Smctr rules QEMU cannot arbitrate (vmm only).
 *
 * Cycle counting (section 6.3), which QEMU 10.0 does not implement: CCV = 0
 * on the first record after an xctrctl write or SCTRCLR and 1 afterwards,
 * the CC encoding at its edges (4095, 4096, 8191, 8192) and saturation,
 * no counting while CTR is inactive (frozen, or a mode not enabled), and
 * CCV = 0 under RASEMU (this hart's choice, allowed by section 6.4).
 *
 * The hart's cost model is one cycle per instruction (docs/ctr.md), so the
 * cycles between two records are exact instruction counts: the scenario
 * `scn_cc` executes 2N + 4 instructions after its first jump up to and
 * including its second, `scn_cc1` one more.
 */
#include "ctr.h"

extern char scn_cc[], scn_cc1[], scn_cc_frozen[], scn_cc_wfi[], scn_cc_clr[],
	scn_cc_ras[];

/* clang-format off */
__asm__(CTR_ASM_RUNTIME
	".pushsection .text.ctr, \"ax\", @progbits\n"
	".option push\n"
	".option norvc\n"
	"scn_cc:\n"
	"	jal zero, 1f\n"          /* record A */
	"1:	la a0, ctr_arg\n"        /* 2 */
	"	ld a0, 0(a0)\n"          /* 1 */
	"2:	addi a0, a0, -1\n"       /* 2N (branches inhibited) */
	"	bnez a0, 2b\n"
	"	jal zero, 3f\n"          /* record B: 1 */
	"3:	li a7, 0x5e7\n"
	"	ecall\n"
	"scn_cc1:\n"
	"	jal zero, 1f\n"
	"1:	la a0, ctr_arg\n"
	"	ld a0, 0(a0)\n"
	"	nop\n"
	"2:	addi a0, a0, -1\n"
	"	bnez a0, 2b\n"
	"	jal zero, 3f\n"
	"3:	li a7, 0x5e7\n"
	"	ecall\n"
	/* Frozen around a 1000-iteration loop: those cycles do not count. */
	"scn_cc_frozen:\n"
	"	li t2, 0x80000000\n"
	"	jal zero, 1f\n"          /* record A */
	"1:	csrs 0x14f, t2\n"        /* FROZEN */
	"	li a0, 1000\n"
	"2:	addi a0, a0, -1\n"
	"	bnez a0, 2b\n"
	"	csrc 0x14f, t2\n"
	"	jal zero, 3f\n"          /* record B */
	"3:	li a7, 0x5e7\n"
	"	ecall\n"
	/* A WFI that sleeps until mtimecmp: idle cycles count (active). */
	"scn_cc_wfi:\n"
	"	jal zero, 1f\n"
	"1:	wfi\n"
	"	jal zero, 3f\n"
	"3:	li a7, 0x5e7\n"
	"	ecall\n"
	/* SCTRCLR between two records: the second has CCV = 0. */
	"scn_cc_clr:\n"
	"	jal zero, 1f\n"
	"1:	.word 0x10400073\n"
	"	jal zero, 3f\n"
	"3:	jal zero, 4f\n"
	"4:	li a7, 0x5e7\n"
	"	ecall\n"
	/* RASEMU: two calls. */
	"scn_cc_ras:\n"
	"	jal ra, 1f\n"
	"1:	jal ra, 2f\n"
	"2:	li a7, 0x5e7\n"
	"	ecall\n"
	".option pop\n"
	".popsection\n");
/* clang-format on */

#define ONLY_JUMPS                                                             \
	(CTL_M | CTL_TKBRINH | CTL_TRETINH | CTL_EXCINH | CTL_INTRINH)
#define CCV (1UL << 15)

static u64 data(u64 i)
{
	ctr_select(i);
	return csrr_n(CSR_SIREG3);
}

static u64 cc(u64 i)
{
	return (data(i) >> 16) & 0xffff;
}

/* The decoding formula of section 6.3. */
static u64 cycles(u64 cc)
{
	u64 m = cc & 0xfff, e = cc >> 12;
	return e ? (4096 + m) << (e - 1) : m;
}

static void count(const char *name, const void *scn, u64 n, u64 want_cc)
{
	ctr_clear();
	ctr_arg = n;
	ctr_run(CTR_M, scn, ONLY_JUMPS, 0);
	rt_check(name, cc(0), want_cc);
}

static void encoding(void)
{
	rt_puts("-- CC encoding (6.3)\n");
	ctr_clear();
	ctr_arg = 10;
	ctr_run(CTR_M, scn_cc, ONLY_JUMPS, 0);
	rt_check("two records", csrr_n(CSR_SCTRSTATUS), 2);
	rt_check("first record after the mctrctl write: CCV = 0", data(1) & CCV,
		 0);
	rt_check("second record: CCV = 1", data(0) & CCV, CCV);
	rt_check("  CC = 2N + 4 = 24 cycles", cc(0), 24);
	count("4095 cycles: CCE 0, CCM 4095", scn_cc1, 2045, 0x0fff);
	count("4096 cycles: CCE 1, CCM 0", scn_cc, 2046, 0x1000);
	count("8191 cycles: CCE 1, CCM 4095", scn_cc1, 4093, 0x1fff);
	count("8192 cycles: CCE 2, CCM 0", scn_cc, 4094, 0x2000);
	count("20004 cycles: CCE 3, low 2 bits dropped", scn_cc, 10000,
	      (3UL << 12) | ((20004 >> 2) & 0xfff));
	rt_check("  decodes to 20004 rounded down to 4", cycles(cc(0)),
		 20004 & ~3UL);
}

static void inactive(void)
{
	rt_puts("-- counting only while active (6.3)\n");
	ctr_clear();
	ctr_run(CTR_M, scn_cc_frozen, ONLY_JUMPS, 0);
	rt_check_true("frozen loop of 2000 instructions not counted",
		      cycles(cc(0)) < 16);
	rt_check("  CCV still 1", data(0) & CCV, CCV);
	/* A WFI that sleeps 2^28 ticks: the CC saturates (4 CCE bits). */
	ctr_clear();
	*CLINT_MTIMECMP = *CLINT_MTIME + (1UL << 28);
	csrw_n(CSR_MIE, 1UL << 7); /* MTIE; mstatus.MIE = 0: WFI just wakes */
	ctr_run(CTR_M, scn_cc_wfi, ONLY_JUMPS, 0);
	csrw_n(CSR_MIE, 0);
	*CLINT_MTIMECMP = ~0UL;
	rt_check("idle cycles count, CC saturates at all ones", cc(0), 0xffff);
	rt_check("  saturated value", cycles(cc(0)), 134201344);
}

static void resets(void)
{
	rt_puts("-- CCV and counter resets\n");
	ctr_clear();
	ctr_run(CTR_M, scn_cc_clr, ONLY_JUMPS, 0);
	rt_check("records after SCTRCLR", csrr_n(CSR_SCTRSTATUS), 3);
	rt_check("record before SCTRCLR cleared", data(2), 0);
	rt_check("first record after SCTRCLR: CCV = 0", data(1) & CCV, 0);
	rt_check("next record: CCV = 1", data(0) & CCV, CCV);
	rt_check("  1 cycle since the previous record", cc(0), 1);
	ctr_clear();
	ctr_run(CTR_M, scn_cc_ras, CTL_M | CTL_RASEMU, 0);
	rt_check("RASEMU: calls recorded", csrr_n(CSR_SCTRSTATUS), 2);
	rt_check("RASEMU: CCV = 0 (6.4 allows)", (data(0) | data(1)) & CCV, 0);
}

int main(void)
{
	rt_puts("ctr_strict: start\n");
	csrw_n(CSR_MSTATEEN0, STATEEN_CTR | STATEEN_CSRIND | STATEEN_SE0);
	encoding();
	inactive();
	resets();
	return rt_finish("ctr_strict");
}
