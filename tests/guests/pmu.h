/*
 * pmu.h: support for the performance-monitoring guests (pmu_*.c): Zihpm,
 * Sscofpmf, Smcntrpmf and Smcdeleg/Ssccfg.
 *
 * Built on h.h (trap records for M, HS and VS, lower-mode runs with
 * V = 0 or 1): every exception goes to M (medeleg = 0), is recorded in h_m
 * and skipped, so a probe's outcome is "ok" or the cause of the trap it
 * took. Interrupts go to the hooks h_m_irq/h_s_irq/h_vs_irq.
 *
 * CSRs are accessed by number: binutils 2.40 knows none of these
 * extensions' CSRs.
 *
 * Output convention (the golden files of tests/tests/pmu.rs): one line per
 * check, "<mode and setting>: <what>: <outcome>", with outcomes "ok",
 * "illegal", "virtual" or "cause N" and values that the specifications fix.
 * Counter values that depend on timing are never printed, only facts such
 * as "advanced" / "stopped".
 */
#ifndef PMU_H
#define PMU_H

#include "h.h"
#include "csr.h"


/* mhpmevent / mcyclecfg / minstretcfg fields (Sscofpmf, Smcntrpmf). */
#define EV_OF (1UL << 63)
#define EV_MINH (1UL << 62)
#define EV_SINH (1UL << 61)
#define EV_UINH (1UL << 60)
#define EV_VSINH (1UL << 59)
#define EV_VUINH (1UL << 58)
#define EV_INH_ALL (EV_MINH | EV_SINH | EV_UINH | EV_VSINH | EV_VUINH)

/* The event catalog (docs: SBI PMU event_idx where one exists). */
#define EV_NONE 0x0
#define EV_CYCLES 0x1
#define EV_INSTRET 0x2
#define EV_BR_COND 0x5
#define EV_BR_TAKEN 0x100
#define EV_LOADS 0x101
#define EV_STORES 0x102
#define EV_EXCEPTIONS 0x103
#define EV_INTERRUPTS 0x104
#define EV_JUMPS 0x105

#define STATEEN_CSRIND (1UL << 60)

#define IRQ_LCOF 13
#define CAUSE_LCOFI (INTERRUPT_BIT | IRQ_LCOF)

/* Mode codes for pmu_probe: MPP plus V in bit 8. */
#define PM_M 3
#define PM_S 1
#define PM_U 0
#define PM_VS 0x101
#define PM_VU 0x100

/*
 * The start of every PMU guest: prints "<name>: start", sets up h.h's trap
 * handlers (h_init) and keeps every exception and interrupt in M
 * (medeleg = mideleg = 0).
 */
static __attribute__((unused)) void pmu_start(const char *name)
{
	rt_puts(name);
	rt_puts(": start\n");
	h_init();
	csrw_n(CSR_MEDELEG, 0);
	csrw_n(CSR_MIDELEG, 0);
}

/*
 * Accessors for the per-counter CSRs by index: the CSR number is an
 * immediate, so each index has its own instruction in a jump table made
 * by the assembler (`.rept`), 8 bytes per entry (csrr/csrw + ret).
 */
u64 pmu_rd_counter(u64 i), pmu_rd_event(u64 i);
void pmu_wr_counter(u64 i, u64 v), pmu_wr_event(u64 i, u64 v);
__asm__(".pushsection .text\n.option push\n.option norvc\n"
	".balign 8\n"
	".globl pmu_rd_counter\npmu_rd_counter:\n"
	"	la t0, 1f\n	slli a0, a0, 3\n	add t0, t0, a0\n	jr t0\n"
	"1:\n	.set n, 0\n	.rept 32\n	csrr a0, 0xb00 + n\n	ret\n"
	"	.set n, n + 1\n	.endr\n"
	".globl pmu_wr_counter\npmu_wr_counter:\n"
	"	la t0, 1f\n	slli a0, a0, 3\n	add t0, t0, a0\n	jr t0\n"
	"1:\n	.set n, 0\n	.rept 32\n	csrw 0xb00 + n, a1\n	ret\n"
	"	.set n, n + 1\n	.endr\n"
	/* mhpmevent0-2 do not exist: the table starts at index 3. */
	".globl pmu_rd_event\npmu_rd_event:\n"
	"	addi a0, a0, -3\n"
	"	la t0, 1f\n	slli a0, a0, 3\n	add t0, t0, a0\n	jr t0\n"
	"1:\n	.set n, 3\n	.rept 29\n	csrr a0, 0x320 + n\n	ret\n"
	"	.set n, n + 1\n	.endr\n"
	".globl pmu_wr_event\npmu_wr_event:\n"
	"	addi a0, a0, -3\n"
	"	la t0, 1f\n	slli a0, a0, 3\n	add t0, t0, a0\n	jr t0\n"
	"1:\n	.set n, 3\n	.rept 29\n	csrw 0x320 + n, a1\n	ret\n"
	"	.set n, n + 1\n	.endr\n"
	".option pop\n.popsection\n");

/* Probes: read (or write a0 to) one CSR, return the value read. */
H_CSRR_PROBE(pr_hpmcounter3, 0xc03);
H_CSRR_PROBE(pr_hpmcounter4, 0xc04);
H_CSRR_PROBE(pr_hpmcounter31, 0xc1f);
H_CSRR_PROBE(pr_cycle, 0xc00);
H_CSRR_PROBE(pr_instret, 0xc02);
H_CSRR_PROBE(pr_scountovf, 0xda0);
H_CSRR_PROBE(pr_scountinhibit, 0x120);
H_CSRW_PROBE(pw_scountinhibit, 0x120);
H_CSRR_PROBE(pr_siselect, 0x150);
H_CSRR_PROBE(pr_sireg, 0x151);
H_CSRR_PROBE(pr_sireg2, 0x152);
H_CSRR_PROBE(pr_sireg3, 0x153);
H_CSRR_PROBE(pr_sireg4, 0x155);
H_CSRR_PROBE(pr_sireg5, 0x156);
H_CSRR_PROBE(pr_sireg6, 0x157);
H_CSRW_PROBE(pw_sireg, 0x151);
H_CSRW_PROBE(pw_sireg2, 0x152);
H_CSRR_PROBE(pr_vsireg, 0x251);
H_CSRR_PROBE(pr_mhpmcounter3, 0xb03);
H_CSRR_PROBE(pr_mhpmevent3, 0x323);
H_CSRR_PROBE(pr_sip, 0x144);
H_CSRR_PROBE(pr_sie, 0x104);

/*
 * Runs fn(a0) in mode (PM_*) and returns the outcome: 0 for no trap (the
 * value read in *val), else the cause of the exception taken to M.
 */
static u64 pmu_val;
static __attribute__((unused)) u64 pmu_try(long mode, rt_fn fn, long a0)
{
	h_reset();
	if (mode == PM_M)
		pmu_val = (u64)fn(a0, 0);
	else
		pmu_val = (u64)h_run((mode >> 8) & 1, mode & 3, fn, a0, 0);
	if (h_s.count || h_vs.count)
		return 0x1000 | h_s.cause | h_vs.cause;
	return h_m.count ? h_m.cause : (u64)-1;
}

static __attribute__((unused)) void pmu_put_outcome(u64 r)
{
	if (r == (u64)-1)
		rt_puts("ok");
	else if (r == CAUSE_ILLEGAL)
		rt_puts("illegal");
	else if (r == CAUSE_VIRT_INSN)
		rt_puts("virtual");
	else {
		rt_puts("cause ");
		rt_put_dec(r);
	}
}

/* Prints "title: what: outcome" for a probe run in mode. */
static __attribute__((unused)) u64 pmu_probe(const char *title,
					      const char *what, long mode,
					      rt_fn fn, long a0)
{
	u64 r = pmu_try(mode, fn, a0);
	rt_puts(title);
	rt_puts(": ");
	rt_puts(what);
	rt_puts(": ");
	pmu_put_outcome(r);
	rt_puts("\n");
	return r;
}

/* v in hex without leading zeros: 0x0, 0x43, 0x8000000d. */
static __attribute__((unused)) void pmu_put_hex(u64 v)
{
	static const char hex[] = "0123456789abcdef";
	rt_puts("0x");
	int started = 0;
	for (int d = 60; d >= 0; d -= 4) {
		u64 nib = (v >> d) & 0xf;
		if (nib || started || d == 0) {
			rt_putc(hex[nib]);
			started = 1;
		}
	}
}

/* "title: what: value" with the value in hex (no leading zeros). */
static __attribute__((unused)) void pmu_line_hex(const char *title,
						 const char *what, u64 v)
{
	rt_puts(title);
	rt_puts(": ");
	rt_puts(what);
	rt_puts(": ");
	pmu_put_hex(v);
	rt_puts("\n");
}

static __attribute__((unused)) void pmu_line(const char *title,
					     const char *what, const char *s)
{
	rt_puts(title);
	rt_puts(": ");
	rt_puts(what);
	rt_puts(": ");
	rt_puts(s);
	rt_puts("\n");
}

/* A busy block of straight-line work executed by the lower modes. */
static __attribute__((unused, noinline)) long pmu_work(long n, long unused)
{
	(void)unused;
	long s = 0;
	for (long i = 0; i < n; i++)
		__asm__ volatile("add %0, %0, %1" : "+r"(s) : "r"(i));
	return s;
}

/* Reset every counter to a quiet state: no event, inhibited, OF clear. */
static __attribute__((unused)) void pmu_quiet(void)
{
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	for (u64 i = 3; i < 32; i++) {
		pmu_wr_event(i, 0);
		pmu_wr_counter(i, 0);
	}
	csrw_n(CSR_MCYCLECFG, 0);
	csrw_n(CSR_MINSTRETCFG, 0);
	csrc_n(CSR_MIP, MIP_LCOFIP);
	csrc_n(CSR_MIE, MIP_LCOFIP);
}

#endif
