/*
 * pmu_strict: the performance-monitoring rules QEMU cannot arbitrate (vmm
 * only).
 *
 * - Exact event counts from the hart's catalog, by difference between two
 *   runs of the same loop (so that the fixed cost around it cancels):
 *   0x2 instructions, 0x5 conditional branches retired, 0x100 taken
 *   branches, 0x101 loads, 0x102 stores, 0x105 jumps.
 * - The precise LCOFI (the hart's choice: skidless for every event): a
 *   counter preset to 2^64 - k overflows on the k-th event and the
 *   interrupt is taken right after that instruction (mepc = the next one).
 * - Smcntrpmf chapter 3: a load that faults does not retire (not counted),
 *   SRET counts in its originating mode (S), not in U; the ECALL that
 *   traps does not count.
 * - An event outside the catalog is legalized to 0 (QEMU 10.0 keeps it).
 * - The LCOFI delegated to VS through hideleg bit 13 (writable on this
 *   hart; optional per Smcdeleg chapter 6, read-only 0 in QEMU 10.0).
 */
#include "pmu.h"

/* clang-format off */
long loop_fn(long n, long unused);
long u_nops(long, long), u_fault(long, long), s_sret(long, long);
extern char lcofi_ld3[], lcofi_after[], lcofi_br_after[];
long lcofi_loads(long, long), lcofi_branches(long, long);
u64 scratch[4];
__asm__(".pushsection .text\n.option push\n.option norvc\n"
	/* n iterations: a load, a store, a never-taken and a taken-but-last
	   conditional branch, one jal: per iteration 1 load, 1 store, 2
	   conditional branches (1 taken except the last), 1 jump, 6
	   instructions. */
	".globl loop_fn\nloop_fn:\n"
	"	la t0, scratch\n"
	"	li t1, 1\n"
	"1:	ld t2, 0(t0)\n"
	"	sd t2, 8(t0)\n"
	"	beq t1, zero, 3f\n"
	"	jal zero, 2f\n"
	"2:	addi a0, a0, -1\n"
	"	bnez a0, 1b\n"
	"	ret\n"
	"3:	ret\n"
	/* U: nop, nop, li; ecall (the end of the run: 3 retire in U). */
	".globl u_nops\nu_nops:\n"
	"	nop\n	nop\n	li a7, 0x5e7\n	ecall\n"
	/* U: nop, a load that faults (address 0: access fault), li; ecall. */
	".globl u_fault\nu_fault:\n"
	"	nop\n	ld t0, 0(zero)\n	li a7, 0x5e7\n	ecall\n"
	/* S: 6 instructions including sret, then u_nops in U. */
	".globl s_sret\ns_sret:\n"
	"	la t0, u_nops\n"
	"	csrw sepc, t0\n"
	"	li t1, 0x100\n"
	"	csrc sstatus, t1\n"
	"	sret\n"
	/* Three loads; counter 3 (loads) preset to 2^64 - 3 overflows on
	   the third: the LCOFI is taken at lcofi_after. */
	".globl lcofi_loads\nlcofi_loads:\n"
	"	la t0, scratch\n"
	"	ld t1, 0(t0)\n"
	"	nop\n"
	"	ld t1, 0(t0)\n"
	"	nop\n"
	".globl lcofi_ld3\nlcofi_ld3:\n"
	"	ld t1, 0(t0)\n"
	".globl lcofi_after\nlcofi_after:\n"
	"	nop\n	nop\n	nop\n	nop\n"
	"	ret\n"
	/* Two conditional branches (not taken); 2^64 - 2 overflows on the
	   second. */
	".globl lcofi_branches\nlcofi_branches:\n"
	"	li t1, 1\n"
	"	beq t1, zero, 1f\n"
	"	nop\n"
	"	beq t1, zero, 1f\n"
	".globl lcofi_br_after\nlcofi_br_after:\n"
	"	nop\n	nop\n	nop\n"
	"1:	ret\n"
	".option pop\n.popsection\n");
/* clang-format on */

/* Counter 3 counting ev (M only) over loop_fn(n). */
static u64 count_loop(u64 ev, long n)
{
	pmu_quiet();
	pmu_wr_event(3, ev);
	pmu_wr_counter(3, 0);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	loop_fn(n, 0);
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	return pmu_rd_counter(3);
}

static void catalog_counts(void)
{
	rt_puts("-- exact event counts: loop_fn(20) - loop_fn(10)\n");
	static const struct {
		const char *name;
		u64 ev, per_iter;
	} e[] = {
		{"0x2 instructions", EV_INSTRET, 6},
		{"0x5 conditional branches", EV_BR_COND, 2},
		{"0x100 taken branches", EV_BR_TAKEN, 1},
		{"0x101 loads", EV_LOADS, 1},
		{"0x102 stores", EV_STORES, 1},
		{"0x105 jumps", EV_JUMPS, 1},
	};
	for (unsigned i = 0; i < sizeof e / sizeof e[0]; i++) {
		u64 d = count_loop(e[i].ev, 20) - count_loop(e[i].ev, 10);
		rt_check(e[i].name, d, 10 * e[i].per_iter);
	}
	u64 d = count_loop(EV_INSTRET | EV_MINH, 20);
	rt_check("0x2 with MINH, in M", d, 0);
	pmu_quiet();
}

static volatile u64 irqs, irq_epc, irq_cause;

static void m_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	irqs++;
	irq_cause = cause | INTERRUPT_BIT;
	irq_epc = csr_read(mepc);
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	csrc_n(CSR_MIP, MIP_LCOFIP);
	csrc_n(CSR_MIE, MIP_LCOFIP);
}

static void precise(const char *name, u64 ev, u64 k, rt_fn fn, u64 want)
{
	pmu_quiet();
	irqs = 0;
	irq_epc = 0;
	h_m_irq = m_irq;
	pmu_wr_event(3, ev | EV_SINH | EV_UINH | EV_VSINH | EV_VUINH);
	pmu_wr_counter(3, -k);
	csrs_n(CSR_MIE, MIP_LCOFIP);
	csr_set(mstatus, MSTATUS_MIE);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	fn(0, 0);
	csr_clear(mstatus, MSTATUS_MIE);
	h_m_irq = 0;
	rt_puts("-- ");
	rt_puts(name);
	rt_puts("\n");
	rt_check("  LCOFIs taken", irqs, 1);
	rt_check("  mcause", irq_cause, CAUSE_LCOFI);
	rt_check("  mepc = the instruction after the overflowing one",
		 irq_epc, want);
	rt_check("  OF", pmu_rd_event(3) >> 63, 1);
	pmu_quiet();
}

/* minstret over a run with minstretcfg = cfg. */
static u64 instret_run(u64 cfg, long mode, rt_fn fn)
{
	h_reset();
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	csrw_n(CSR_MINSTRETCFG, cfg);
	u64 a = csrr_n(CSR_MINSTRET);
	h_run(0, mode, fn, 0, 0);
	u64 b = csrr_n(CSR_MINSTRET);
	csrw_n(CSR_MINSTRETCFG, 0);
	return b - a;
}

static void instret_rules(void)
{
	rt_puts("-- Smcntrpmf chapter 3: instret\n");
	u64 only_u = EV_MINH | EV_SINH | EV_VSINH | EV_VUINH;
	u64 only_s = EV_MINH | EV_UINH | EV_VSINH | EV_VUINH;
	rt_check("U only: nop nop li ecall (ecall traps: not counted)",
		 instret_run(only_u, PM_U, u_nops), 3);
	rt_check("U only: nop, faulting ld, li, ecall (the ld does not retire)",
		 instret_run(only_u, PM_U, u_fault), 2);
	rt_check("  the load faulted (access fault)", h_m.cause, 5);
	rt_check("U only: S sret to U, nop nop li ecall (sret is S's)",
		 instret_run(only_u, PM_S, s_sret), 3);
	rt_check("S only: 5 instructions and sret in S",
		 instret_run(only_s, PM_S, s_sret), 6);
	/* The same rules for an hpm counter counting event 0x2. */
	pmu_quiet();
	pmu_wr_event(3, EV_INSTRET | only_u);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	h_run(0, PM_U, u_fault, 0, 0);
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	rt_check("mhpmcounter3 (0x2, U only) over u_fault", pmu_rd_counter(3),
		 2);
	pmu_quiet();
}

static void warl(void)
{
	rt_puts("-- mhpmevent WARL\n");
	pmu_wr_event(3, 0x7777);
	rt_check("event 0x7777 (not in the catalog) reads", pmu_rd_event(3), 0);
	pmu_wr_event(3, 0x7777 | EV_OF | EV_MINH);
	rt_check("0x7777 | OF | MINH reads", pmu_rd_event(3), EV_OF | EV_MINH);
	pmu_wr_event(3, 0);
}

static volatile u64 vs_irqs, vs_cause, hs_irqs;

static void vs_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	vs_irqs++;
	vs_cause = cause | INTERRUPT_BIT;
	csrc_n(CSR_SIP, MIP_LCOFIP);
	csrc_n(CSR_SIE, MIP_LCOFIP);
}

static void hs_irq(u64 cause, struct rt_frame *f)
{
	(void)cause;
	(void)f;
	hs_irqs++;
	csrc_n(CSR_SIP, MIP_LCOFIP);
	csrc_n(CSR_SIE, MIP_LCOFIP);
}

static long vs_work(long n, long unused)
{
	return pmu_work(n, unused);
}

static void vs_run(void)
{
	vs_irqs = hs_irqs = vs_cause = 0;
	h_vs_irq = vs_irq;
	h_s_irq = hs_irq;
	csrs_n(CSR_VSSTATUS, SSTATUS_SIE);
	h_run(1, MODE_S, vs_work, 100, 0);
	csrc_n(CSR_VSSTATUS, SSTATUS_SIE);
	h_vs_irq = 0;
	h_s_irq = 0;
}

static void hideleg_lcofi(void)
{
	rt_puts("-- LCOFI delegated to VS through hideleg bit 13\n");
	pmu_quiet();
	csrw_n(CSR_MIDELEG, MIP_LCOFIP);
	csrw_n(CSR_HIDELEG, MIP_LCOFIP);
	rt_check("hideleg bit 13 writable", csrr_n(CSR_HIDELEG) & MIP_LCOFIP,
		 MIP_LCOFIP);
	csrs_n(CSR_MIP, MIP_LCOFIP);
	rt_check("vsip bit 13 = mip.LCOFIP", csrr_n(CSR_VSIP) & MIP_LCOFIP,
		 MIP_LCOFIP);
	csrs_n(CSR_VSIE, MIP_LCOFIP);
	rt_check("mie.LCOFIE set through vsie", csrr_n(CSR_MIE) & MIP_LCOFIP,
		 MIP_LCOFIP);
	vs_run();
	rt_check("taken in VS", vs_irqs, 1);
	rt_check("  not in HS", hs_irqs, 0);
	rt_check("  vscause", vs_cause, CAUSE_LCOFI);
	rt_check("  mip.LCOFIP cleared by VS", csrr_n(CSR_MIP) & MIP_LCOFIP,
		 0);
	/* A real overflow of a counter counting in VS only. */
	csrs_n(CSR_MIE, MIP_LCOFIP);
	pmu_wr_event(3, EV_INSTRET | EV_MINH | EV_SINH | EV_UINH | EV_VUINH);
	pmu_wr_counter(3, -20UL);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	vs_run();
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	rt_check("overflow in VS: taken in VS", vs_irqs, 1);
	rt_check("  vscause", vs_cause, CAUSE_LCOFI);
	rt_check("  OF", pmu_rd_event(3) >> 63, 1);
	pmu_quiet();
	csrw_n(CSR_HIDELEG, 0);
	csrw_n(CSR_MIDELEG, 0);
}

int main(void)
{
	pmu_start("pmu_strict");
	rt_trap_ok = 1;
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	catalog_counts();
	precise("LCOFI on the 3rd load (event 0x101 from 2^64-3)", EV_LOADS, 3,
		lcofi_loads, (u64)lcofi_after);
	precise("LCOFI on the 2nd conditional branch (0x5 from 2^64-2)",
		EV_BR_COND, 2, lcofi_branches, (u64)lcofi_br_after);
	instret_rules();
	warl();
	hideleg_lcofi();
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	return rt_finish("pmu_strict");
}
