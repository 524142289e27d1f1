/*
 * pmu_sample: Sspesa (shpmspc, shpmsdata) and Ssplcofi (the precise LCOFI),
 * vmm only: the draft extensions have no QEMU implementation to compare
 * with, so every check states the rule and prints PASS/FAIL.
 *
 * - In M, S (menvcfg.CDE = 1, the counter delegated in mcounteren, the
 *   LCOFI delegated through mideleg) and VS (hideleg bit 13), a counter
 *   preset near overflow counting a precise event (0x101 loads, 0x5
 *   conditional branches, 0x100 taken branches, 0x2 instructions) raises
 *   an LCOFI whose xepc is the instruction executed right after the causal
 *   one (Ssplcofi: for a taken branch, its target), with shpmspc = the
 *   causal instruction's pc and shpmsdata.CNTRID = the counter (Sspesa).
 * - Two counters overflowing on the same instruction: CNTRID is the lowest.
 * - A second overflow while LCOFIP is still 1 does not overwrite shpmspc.
 * - With CDE = 1, the overflow of a counter not delegated (mcounteren bit
 *   clear) does not update shpmspc.
 * - Access: from S illegal while CDE = 0; from VS virtual-instruction while
 *   CDE = 1, else illegal; from U illegal (an S-level CSR); from VU
 *   virtual-instruction while CDE = 1 (HS could access it), else illegal.
 *
 * The scenarios are assembly with labels on the causal instructions. Each
 * has an M-mode entry (`<name>_m`) that first writes a0 to mcountinhibit,
 * so that nothing in the C code around it is counted.
 */
#include "pmu.h"
#include "csr.h"

/* Modes counted: every other mode's inhibit bit. */
#define ONLY_M (EV_SINH | EV_UINH | EV_VSINH | EV_VUINH)
#define ONLY_S (EV_MINH | EV_UINH | EV_VSINH | EV_VUINH)
#define ONLY_VS (EV_MINH | EV_SINH | EV_UINH | EV_VUINH)

u64 smp_buf[8];
/* clang-format off */
long smp_loads_m(long, long), smp_loads(long, long);
long smp_taken_m(long, long), smp_taken(long, long);
long smp_cond_m(long, long), smp_cond(long, long);
long smp_insns_m(long, long), smp_insns(long, long);
long smp_seq_m(long, long);
extern char smp_ld2[], smp_ld2_next[], smp_tk[], smp_tk_target[],
	smp_nt2[], smp_nt2_next[], smp_i3[], smp_i3_next[], smp_ld_a[],
	smp_ld_b[];
H_CSRR_PROBE(pr_shpmspc, 0x5c0);
H_CSRW_PROBE(pw_shpmspc, 0x5c0);
H_CSRR_PROBE(pr_shpmsdata, 0x5c1);
H_CSRW_PROBE(pw_shpmsdata, 0x5c1);
__asm__(".pushsection .text\n.option push\n.option norvc\n"
	/* Loads: the second one is causal with the counter at 2^64 - 2. */
	".globl smp_loads_m\nsmp_loads_m:\n"
	"	csrw " H_STR(CSR_MCOUNTINHIBIT) ", a0\n"
	".globl smp_loads\nsmp_loads:\n"
	"	la t0, smp_buf\n"
	"	ld t1, 0(t0)\n"
	"	nop\n"
	".globl smp_ld2\nsmp_ld2:\n"
	"	ld t1, 8(t0)\n"
	".globl smp_ld2_next\nsmp_ld2_next:\n"
	"	nop\n	nop\n	nop\n	nop\n"
	"	ret\n"
	/* Taken branches: the first one is causal (2^64 - 1); the
	   instruction executed after it is its target. */
	".globl smp_taken_m\nsmp_taken_m:\n"
	"	csrw " H_STR(CSR_MCOUNTINHIBIT) ", a0\n"
	".globl smp_taken\nsmp_taken:\n"
	"	li t1, 1\n"
	"	beqz t1, 1f\n"
	".globl smp_tk\nsmp_tk:\n"
	"	bnez t1, smp_tk_target\n"
	"	nop\n	nop\n"
	".globl smp_tk_target\nsmp_tk_target:\n"
	"	nop\n	nop\n	nop\n	nop\n"
	"1:	ret\n"
	/* Conditional branches: a taken one, then the causal not-taken one
	   (2^64 - 2). */
	".globl smp_cond_m\nsmp_cond_m:\n"
	"	csrw " H_STR(CSR_MCOUNTINHIBIT) ", a0\n"
	".globl smp_cond\nsmp_cond:\n"
	"	li t1, 1\n"
	"	bnez t1, 2f\n"
	"	nop\n"
	"2:\n"
	".globl smp_nt2\nsmp_nt2:\n"
	"	beqz t1, 1f\n"
	".globl smp_nt2_next\nsmp_nt2_next:\n"
	"	nop\n	nop\n	nop\n	nop\n"
	"1:	ret\n"
	/* Instructions: in M the write of 2^64 - 3 to mhpmcounter3 is done
	   instead of its increment (Zicsr), so the third nop wraps; in S and
	   VS (counting only there) the entry is the first instruction
	   counted. */
	".globl smp_insns_m\nsmp_insns_m:\n"
	"	csrw " H_STR(CSR_MCOUNTINHIBIT) ", zero\n"
	"	csrw 0xb03, a1\n"
	".globl smp_insns\nsmp_insns:\n"
	"	nop\n"
	"	nop\n"
	".globl smp_i3\nsmp_i3:\n"
	"	nop\n"
	".globl smp_i3_next\nsmp_i3_next:\n"
	"	nop\n	nop\n	nop\n	nop\n"
	"	ret\n"
	/* Two loads, A and B, with interrupts off. */
	".globl smp_seq_m\nsmp_seq_m:\n"
	"	csrw " H_STR(CSR_MCOUNTINHIBIT) ", a0\n"
	"	la t0, smp_buf\n"
	".globl smp_ld_a\nsmp_ld_a:\n"
	"	ld t1, 0(t0)\n"
	"	nop\n"
	".globl smp_ld_b\nsmp_ld_b:\n"
	"	ld t1, 8(t0)\n"
	"	nop\n"
	"	csrw " H_STR(CSR_MCOUNTINHIBIT) ", a1\n"
	"	ret\n"
	".option pop\n.popsection\n");
/* clang-format on */

/* What the LCOFI handler saw. */
static volatile u64 irqs, irq_cause, irq_epc, irq_spc, irq_sdata;

static void m_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	irqs++;
	irq_cause = cause | INTERRUPT_BIT;
	irq_epc = csr_read(mepc);
	irq_spc = csrr_n(CSR_SHPMSPC);
	irq_sdata = csrr_n(CSR_SHPMSDATA);
	csrc_n(CSR_MIP, MIP_LCOFIP);
	csrc_n(CSR_MIE, MIP_LCOFIP);
}

/* HS-mode: shpmspc is accessible with CDE = 1. */
static void s_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	irqs++;
	irq_cause = cause | INTERRUPT_BIT;
	irq_epc = csr_read(sepc);
	irq_spc = csrr_n(CSR_SHPMSPC);
	irq_sdata = csrr_n(CSR_SHPMSDATA);
	csrc_n(CSR_SIP, MIP_LCOFIP);
	csrc_n(CSR_SIE, MIP_LCOFIP);
}

/* VS-mode: shpmspc is virtual-instruction here; M reads it afterwards. */
static void vs_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	irqs++;
	irq_cause = cause | INTERRUPT_BIT;
	irq_epc = csr_read(sepc);
	csrc_n(CSR_SIP, MIP_LCOFIP);
	csrc_n(CSR_SIE, MIP_LCOFIP);
}

struct scenario {
	const char *name;
	u64 ev, preset;
	rt_fn m_entry, entry; /* M entry (writes mcountinhibit), lower entry */
	const char *causal, *next;
};

static void check_sample(const char *mode, const struct scenario *s, u64 i)
{
	rt_puts("-- ");
	rt_puts(mode);
	rt_puts(": ");
	rt_puts(s->name);
	rt_puts("\n");
	rt_check("  LCOFIs taken", irqs, 1);
	rt_check("  xcause", irq_cause, CAUSE_LCOFI);
	rt_check("  xepc = the instruction executed after the causal one",
		 irq_epc, (u64)s->next);
	rt_check("  shpmspc = the causal instruction", irq_spc,
		 (u64)s->causal);
	rt_check("  shpmsdata.CNTRID = the counter", irq_sdata, i);
	rt_check("  OF", pmu_rd_event(i) >> 63, 1);
}

static void run_m(const struct scenario *s, u64 i)
{
	pmu_quiet();
	irqs = irq_cause = irq_epc = irq_spc = irq_sdata = 0;
	csrw_n(CSR_SHPMSPC, 0);
	csrw_n(CSR_SHPMSDATA, 0);
	h_m_irq = m_irq;
	pmu_wr_event(i, s->ev | ONLY_M);
	pmu_wr_counter(i, -s->preset);
	csrs_n(CSR_MIE, MIP_LCOFIP);
	csr_set(mstatus, MSTATUS_MIE);
	s->m_entry(~2UL & ~(1UL << i), -s->preset);
	csr_clear(mstatus, MSTATUS_MIE);
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	h_m_irq = 0;
	check_sample("M", s, i);
	pmu_quiet();
}

/* S (V = 0) or VS (V = 1), CDE = 1, every counter delegated. */
static void run_lower(int v, const struct scenario *s, u64 i)
{
	pmu_quiet();
	irqs = irq_cause = irq_epc = irq_spc = irq_sdata = 0;
	csrw_n(CSR_SHPMSPC, 0);
	csrw_n(CSR_SHPMSDATA, 0);
	csrw_n(CSR_MENVCFG, MENVCFG_CDE);
	csrw_n(CSR_MCOUNTEREN, ~0UL);
	csrw_n(CSR_MIDELEG, MIP_LCOFIP);
	pmu_wr_event(i, s->ev | (v ? ONLY_VS : ONLY_S));
	pmu_wr_counter(i, -s->preset);
	if (v) {
		csrw_n(CSR_HIDELEG, MIP_LCOFIP);
		csrs_n(CSR_VSIE, MIP_LCOFIP);
		csrs_n(CSR_VSSTATUS, SSTATUS_SIE);
		h_vs_irq = vs_irq;
	} else {
		csrs_n(CSR_SIE, MIP_LCOFIP);
		csr_set(sstatus, SSTATUS_SIE);
		h_s_irq = s_irq;
	}
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL & ~(1UL << i));
	h_reset();
	h_run(v, MODE_S, s->entry, 0, 0);
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	csr_clear(sstatus, SSTATUS_SIE);
	csrc_n(CSR_VSSTATUS, SSTATUS_SIE);
	h_s_irq = h_vs_irq = 0;
	if (v) {
		/* VS cannot read shpmspc: M reads what the overflow captured. */
		irq_spc = csrr_n(CSR_SHPMSPC);
		irq_sdata = csrr_n(CSR_SHPMSDATA);
	}
	check_sample(v ? "VS (hideleg.LCOFI = 1)" : "S (CDE = 1, mideleg.LCOFI = 1)",
		     s, i);
	rt_check("  no exception in the run", h_m.count + h_s.count + h_vs.count,
		 0);
	csrw_n(CSR_HIDELEG, 0);
	csrw_n(CSR_MIDELEG, 0);
	csrw_n(CSR_MCOUNTEREN, 0);
	csrw_n(CSR_MENVCFG, 0);
	pmu_quiet();
}

static const struct scenario scenarios[] = {
	{"0x101 loads from 2^64-2: the 2nd load", EV_LOADS, 2, smp_loads_m,
	 smp_loads, smp_ld2, smp_ld2_next},
	{"0x100 taken branches from 2^64-1: xepc is the branch target",
	 EV_BR_TAKEN, 1, smp_taken_m, smp_taken, smp_tk, smp_tk_target},
	{"0x5 conditional branches from 2^64-2: the 2nd (not taken)",
	 EV_BR_COND, 2, smp_cond_m, smp_cond, smp_nt2, smp_nt2_next},
	{"0x2 instructions from 2^64-3: the 3rd", EV_INSTRET, 3, smp_insns_m,
	 smp_insns, smp_i3, smp_i3_next},
};
#define N_SCENARIOS (sizeof scenarios / sizeof scenarios[0])

static void precise(void)
{
	/* Counters 3 and 17: CNTRID is not always 3. */
	for (unsigned k = 0; k < N_SCENARIOS; k++)
		run_m(&scenarios[k], k == 1 ? 17 : 3);
	for (unsigned k = 0; k < N_SCENARIOS; k++)
		run_lower(0, &scenarios[k], k == 2 ? 17 : 4);
	for (unsigned k = 0; k < N_SCENARIOS; k++)
		run_lower(1, &scenarios[k], k == 0 ? 30 : 5);
}

/* Counters 5 and 9 both count loads from 2^64 - 2: both wrap on the 2nd. */
static void simultaneous(void)
{
	rt_puts("-- M: counters 5 and 9 overflow on the same load\n");
	pmu_quiet();
	irqs = irq_spc = irq_sdata = 0;
	h_m_irq = m_irq;
	pmu_wr_event(5, EV_LOADS | ONLY_M);
	pmu_wr_event(9, EV_LOADS | ONLY_M);
	pmu_wr_counter(5, -2UL);
	pmu_wr_counter(9, -2UL);
	csrs_n(CSR_MIE, MIP_LCOFIP);
	csr_set(mstatus, MSTATUS_MIE);
	smp_loads_m(~2UL & ~(1UL << 5) & ~(1UL << 9), 0);
	csr_clear(mstatus, MSTATUS_MIE);
	h_m_irq = 0;
	rt_check("  LCOFIs taken", irqs, 1);
	rt_check("  shpmspc = the load", irq_spc, (u64)smp_ld2);
	rt_check("  CNTRID = 5 (the lowest)", irq_sdata, 5);
	rt_check("  OF5", pmu_rd_event(5) >> 63, 1);
	rt_check("  OF9", pmu_rd_event(9) >> 63, 1);
	pmu_quiet();
}

/* Runs the A/B loads in M with interrupts off; counters `en` count. */
static void seq(u64 en)
{
	smp_seq_m(~2UL & ~en, ~2UL);
}

static void no_overwrite(void)
{
	rt_puts("-- M, LCOFI not taken (mie.LCOFIE = 0): later overflows\n");
	pmu_quiet();
	pmu_wr_event(3, EV_LOADS | ONLY_M);
	pmu_wr_event(4, EV_LOADS | ONLY_M);
	pmu_wr_counter(3, -1UL);
	pmu_wr_counter(4, -2UL);
	seq(8 | 16);
	rt_check("counter 3 on load A, counter 4 on load B: LCOFIP",
		 csrr_n(CSR_MIP) & MIP_LCOFIP, MIP_LCOFIP);
	rt_check("  OF3", pmu_rd_event(3) >> 63, 1);
	rt_check("  OF4", pmu_rd_event(4) >> 63, 1);
	rt_check("  shpmspc = load A (the first overflow)",
		 csrr_n(CSR_SHPMSPC), (u64)smp_ld_a);
	rt_check("  CNTRID = 3", csrr_n(CSR_SHPMSDATA), 3);
	/* OF cleared, LCOFIP left set: OF goes 0 -> 1, LCOFIP does not. */
	pmu_wr_event(3, EV_LOADS | ONLY_M);
	pmu_wr_event(4, EV_LOADS | ONLY_M);
	pmu_wr_counter(3, 0);
	pmu_wr_counter(4, -2UL);
	seq(8 | 16);
	rt_check("OF4 cleared, LCOFIP still 1, counter 4 wraps on B: OF4",
		 pmu_rd_event(4) >> 63, 1);
	rt_check("  shpmspc not overwritten (load A)", csrr_n(CSR_SHPMSPC),
		 (u64)smp_ld_a);
	rt_check("  CNTRID not overwritten (3)", csrr_n(CSR_SHPMSDATA), 3);
	/* LCOFIP cleared: the next overflow captures. */
	csrc_n(CSR_MIP, MIP_LCOFIP);
	pmu_wr_event(4, EV_LOADS | ONLY_M);
	pmu_wr_counter(4, -2UL);
	seq(16);
	rt_check("LCOFIP cleared, counter 4 wraps on B: shpmspc = load B",
		 csrr_n(CSR_SHPMSPC), (u64)smp_ld_b);
	rt_check("  CNTRID = 4", csrr_n(CSR_SHPMSDATA), 4);
	pmu_quiet();

	rt_puts("-- M, CDE = 1, mcounteren = HPM3 only\n");
	csrw_n(CSR_MENVCFG, MENVCFG_CDE);
	csrw_n(CSR_MCOUNTEREN, 8);
	csrw_n(CSR_SHPMSPC, 0x1230);
	csrw_n(CSR_SHPMSDATA, 0);
	pmu_wr_event(4, EV_LOADS | ONLY_M);
	pmu_wr_counter(4, -2UL);
	seq(16);
	rt_check("counter 4 (not delegated) wraps on B: LCOFIP",
		 csrr_n(CSR_MIP) & MIP_LCOFIP, MIP_LCOFIP);
	rt_check("  OF4", pmu_rd_event(4) >> 63, 1);
	rt_check("  shpmspc not updated", csrr_n(CSR_SHPMSPC), 0x1230);
	rt_check("  shpmsdata not updated", csrr_n(CSR_SHPMSDATA), 0);
	csrc_n(CSR_MIP, MIP_LCOFIP);
	pmu_wr_event(3, EV_LOADS | ONLY_M);
	pmu_wr_counter(3, -1UL);
	seq(8);
	rt_check("counter 3 (delegated) wraps on A: shpmspc = load A",
		 csrr_n(CSR_SHPMSPC), (u64)smp_ld_a);
	rt_check("  CNTRID = 3", csrr_n(CSR_SHPMSDATA), 3);
	csrw_n(CSR_MCOUNTEREN, 0);
	csrw_n(CSR_MENVCFG, 0);
	pmu_quiet();
}

static void expect_outcome(const char *name, long mode, rt_fn fn, long a0,
			   u64 want)
{
	u64 r = pmu_try(mode, fn, a0);
	rt_check(name, r, want);
}

static void access(void)
{
	rt_puts("-- access (outcome: ~0 = no trap, 2 illegal, 22 virtual)\n");
	const u64 ok = (u64)-1;
	csrw_n(CSR_SHPMSDATA, ~0UL);
	rt_check("M: shpmsdata WARL (CNTRID only)", csrr_n(CSR_SHPMSDATA),
		 0x1f);
	csrw_n(CSR_SHPMSPC, 0x80001234);
	rt_check("M: shpmspc holds a valid address", csrr_n(CSR_SHPMSPC),
		 0x80001234);
	for (int cde = 0; cde < 2; cde++) {
		csrw_n(CSR_MENVCFG, cde ? MENVCFG_CDE : 0);
		u64 lower = cde ? ok : CAUSE_ILLEGAL;
		u64 virt = cde ? CAUSE_VIRT_INSN : CAUSE_ILLEGAL;
		if (cde) {
			rt_puts("CDE = 1:\n");
		} else {
			rt_puts("CDE = 0:\n");
		}
		expect_outcome("  S: read shpmspc", PM_S, pr_shpmspc, 0, lower);
		expect_outcome("  S: write shpmspc", PM_S, pw_shpmspc, 0x42,
			       lower);
		expect_outcome("  S: read shpmsdata", PM_S, pr_shpmsdata, 0,
			       lower);
		expect_outcome("  S: write shpmsdata", PM_S, pw_shpmsdata, 1,
			       lower);
		expect_outcome("  U: read shpmspc", PM_U, pr_shpmspc, 0,
			       CAUSE_ILLEGAL);
		expect_outcome("  VS: read shpmspc", PM_VS, pr_shpmspc, 0, virt);
		expect_outcome("  VS: write shpmspc", PM_VS, pw_shpmspc, 0,
			       virt);
		expect_outcome("  VS: read shpmsdata", PM_VS, pr_shpmsdata, 0,
			       virt);
		expect_outcome("  VU: read shpmspc", PM_VU, pr_shpmspc, 0, virt);
	}
	rt_check("S (CDE = 1) wrote shpmspc", csrr_n(CSR_SHPMSPC), 0x42);
	rt_check("S (CDE = 1) wrote shpmsdata", csrr_n(CSR_SHPMSDATA), 1);
	csrw_n(CSR_MENVCFG, 0);
}

int main(void)
{
	pmu_start("pmu_sample");
	rt_trap_ok = 1;
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	csrw_n(CSR_HSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	precise();
	simultaneous();
	no_overwrite();
	access();
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	return rt_finish("pmu_sample");
}
