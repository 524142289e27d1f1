/*
 * pmu_m: the performance-monitoring counters from M-mode (Zihpm, Sscofpmf,
 * Smcntrpmf).
 *
 * mhpmcounter3-31 and mhpmevent3-31 (all 29 implemented, 64-bit), the
 * event selector's WARL legalization, mcountinhibit's writable bits (bit 1,
 * the draft PDIS bit, is not looked at), the Sscofpmf fields (OF and the
 * five xINH bits), counting and inhibiting, overflow (OF set, mip.LCOFIP
 * set, nothing when OF was already 1, nothing from writes) and the LCOFI
 * taken in M, mcyclecfg/minstretcfg (bit 63 read-only 0) and their mode
 * filters while the hart drops to S and U and comes back.
 *
 * Timing-dependent values are never printed: only "advanced"/"stopped".
 * Exact counts and the precise LCOFI (mepc right after the overflowing
 * instruction) are checked by the vmm-only guest pmu_strict.
 *
 * Compared with QEMU (golden file tests/golden/pmu_m.out).
 */
#include "pmu.h"

#define T "M"

static const u64 catalog[] = {
	0x1,	 0x2,	  0x3,	   0x4,	    0x5,     0x6,     0x10000,
	0x10001, 0x10002, 0x10003, 0x10019, 0x1001b, 0x10021, 0x100,
	0x101,	 0x102,	  0x103,   0x104,   0x105,
};

static void counters(void)
{
	rt_puts("-- mhpmcounter3-31, mhpmevent3-31\n");
	pmu_quiet();
	u64 cw = 0, ew = 0;
	for (u64 i = 3; i < 32; i++) {
		u64 v = 0x0123456789abcdefUL ^ (i << 40) ^ i;
		pmu_wr_counter(i, v);
		if (pmu_rd_counter(i) == v)
			cw |= 1UL << i;
		pmu_wr_event(i, EV_INSTRET);
		if (pmu_rd_event(i) == EV_INSTRET)
			ew |= 1UL << i;
		pmu_wr_event(i, 0);
	}
	pmu_line_hex(T, "counters holding a 64-bit value written", cw);
	pmu_line_hex(T, "mhpmevent holding event 0x2", ew);
	for (u64 i = 3; i < 32; i++)
		pmu_wr_counter(i, 0);
}

static void events(void)
{
	rt_puts("-- mhpmevent: the event catalog and WARL\n");
	pmu_quiet();
	u64 kept = 0;
	for (unsigned i = 0; i < sizeof catalog / sizeof catalog[0]; i++) {
		pmu_wr_event(3, catalog[i]);
		if (pmu_rd_event(3) == catalog[i])
			kept++;
	}
	rt_puts(T ": catalog events kept by mhpmevent3: ");
	rt_put_dec(kept);
	rt_puts(" of ");
	rt_put_dec(sizeof catalog / sizeof catalog[0]);
	rt_puts("\n");
	pmu_wr_event(3, 0x7777);
	rt_puts("info " T ": mhpmevent3 after writing 0x7777 (not in the "
		"catalog): ");
	rt_put_hex(pmu_rd_event(3));
	rt_puts("\n");
	pmu_wr_event(3, EV_INSTRET | EV_OF | EV_INH_ALL);
	pmu_line_hex(T, "mhpmevent3 = 0x2 | OF | MINH..VUINH", pmu_rd_event(3));
	pmu_wr_event(3, EV_INSTRET | EV_OF | EV_INH_ALL | (3UL << 56));
	rt_puts("info " T ": mhpmevent3 with bits 57:56 also written: ");
	rt_put_hex(pmu_rd_event(3));
	rt_puts("\n");
	pmu_wr_event(3, 0);
	pmu_line_hex(T, "mhpmevent3 = 0", pmu_rd_event(3));
}

static void inhibit(void)
{
	rt_puts("-- mcountinhibit\n");
	csrw_n(CSR_MCOUNTINHIBIT, ~0UL);
	pmu_line_hex(T, "mcountinhibit after writing ones (bit 1 masked)",
		     csrr_n(CSR_MCOUNTINHIBIT) & ~2UL);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	pmu_line_hex(T, "mcountinhibit after writing 0 (bit 1 masked)",
		     csrr_n(CSR_MCOUNTINHIBIT) & ~2UL);
}

/* Counter 3 counting event ev with mhpmevent3 flags; runs work in M. */
static int counts_in_m(u64 event, u64 inhibit_bit)
{
	pmu_quiet();
	pmu_wr_event(3, event);
	pmu_wr_counter(3, 0);
	csrw_n(CSR_MCOUNTINHIBIT, inhibit_bit);
	pmu_work(1000, 0);
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	return pmu_rd_counter(3) != 0;
}

static void counting(void)
{
	rt_puts("-- counting in M\n");
	static const struct {
		const char *name;
		u64 event;
	} e[] = {
		{"event 0x1 (cycles)", EV_CYCLES},
		{"event 0x2 (instructions)", EV_INSTRET},
		{"event 0x2 with MINH", EV_INSTRET | EV_MINH},
		{"event 0x2 with SINH, UINH, VSINH, VUINH",
		 EV_INSTRET | EV_SINH | EV_UINH | EV_VSINH | EV_VUINH},
		{"event 0 (none)", EV_NONE},
	};
	for (unsigned i = 0; i < sizeof e / sizeof e[0]; i++)
		pmu_line(T, e[i].name,
			 counts_in_m(e[i].event, 0) ? "advanced" : "stopped");
	pmu_line(T, "event 0x2 with mcountinhibit.HPM3",
		 counts_in_m(EV_INSTRET, 1UL << 3) ? "advanced" : "stopped");
	/* mcycle and minstret under mcountinhibit.CY / IR. */
	csrw_n(CSR_MCOUNTINHIBIT, 1);
	u64 c0 = csrr_n(CSR_MCYCLE);
	pmu_work(1000, 0);
	pmu_line(T, "mcycle with mcountinhibit.CY",
		 csrr_n(CSR_MCYCLE) != c0 ? "advanced" : "stopped");
	csrw_n(CSR_MCOUNTINHIBIT, 4);
	u64 i0 = csrr_n(CSR_MINSTRET);
	pmu_work(1000, 0);
	pmu_line(T, "minstret with mcountinhibit.IR",
		 csrr_n(CSR_MINSTRET) != i0 ? "advanced" : "stopped");
	csrw_n(CSR_MCOUNTINHIBIT, 0);
}

static volatile u64 lcofi_taken, lcofi_cause, lcofi_of;

static void m_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	lcofi_taken++;
	lcofi_cause = cause;
	lcofi_of = pmu_rd_event(3) & EV_OF;
	/* Stop counting and clear the request. */
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	csrc_n(CSR_MIP, MIP_LCOFIP);
	csrc_n(CSR_MIE, MIP_LCOFIP);
}

/* Counts event 0x2 from 2^64 - k until the counter wraps (bounded). */
static int run_to_overflow(u64 event, u64 k)
{
	pmu_wr_event(3, event);
	pmu_wr_counter(3, -k);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	for (int i = 0; i < 1000; i++) {
		pmu_work(100, 0);
		if (pmu_rd_counter(3) < (1UL << 32))
			break;
	}
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	return pmu_rd_counter(3) < (1UL << 32);
}

static void overflow(void)
{
	rt_puts("-- overflow (Sscofpmf)\n");
	pmu_quiet();
	csrw_n(CSR_MIE, csrr_n(CSR_MIE) & ~MIP_LCOFIP);
	int wrapped = run_to_overflow(EV_INSTRET, 50);
	pmu_line(T, "event 0x2 from 2^64-50: counter wrapped",
		 wrapped ? "yes" : "no");
	pmu_line(T, "  OF", pmu_rd_event(3) & EV_OF ? "1" : "0");
	pmu_line(T, "  mip.LCOFIP",
		 csrr_n(CSR_MIP) & MIP_LCOFIP ? "1" : "0");
	pmu_line_hex(T, "  scountovf read in M", csrr_n(CSR_SCOUNTOVF));
	csrc_n(CSR_MIP, MIP_LCOFIP);
	pmu_line(T, "  mip.LCOFIP after csrc",
		 csrr_n(CSR_MIP) & MIP_LCOFIP ? "1" : "0");

	/* OF already 1: no new request. */
	wrapped = run_to_overflow(EV_INSTRET | EV_OF, 50);
	pmu_line(T, "again with OF=1: counter wrapped", wrapped ? "yes" : "no");
	pmu_line(T, "  mip.LCOFIP",
		 csrr_n(CSR_MIP) & MIP_LCOFIP ? "1" : "0");

	/* Writes never overflow. */
	pmu_quiet();
	pmu_wr_event(3, EV_NONE);
	pmu_wr_counter(3, ~0UL);
	pmu_wr_counter(3, 0);
	pmu_wr_counter(3, ~0UL);
	pmu_wr_event(3, EV_INSTRET | EV_MINH);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	pmu_work(100, 0);
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	pmu_line(T, "writes of 2^64-1 and 0, MINH: OF",
		 pmu_rd_event(3) & EV_OF ? "1" : "0");
	pmu_line(T, "  mip.LCOFIP",
		 csrr_n(CSR_MIP) & MIP_LCOFIP ? "1" : "0");

	/* OF and mip.LCOFIP are independent: setting OF does not pend. */
	pmu_wr_event(3, EV_OF);
	pmu_line(T, "OF written 1: mip.LCOFIP",
		 csrr_n(CSR_MIP) & MIP_LCOFIP ? "1" : "0");
	pmu_wr_event(3, 0);

	/* The interrupt, taken in M. */
	pmu_quiet();
	h_m_irq = m_irq;
	lcofi_taken = 0;
	csrs_n(CSR_MIE, MIP_LCOFIP);
	csr_set(mstatus, MSTATUS_MIE);
	run_to_overflow(EV_INSTRET, 50);
	csr_clear(mstatus, MSTATUS_MIE);
	h_m_irq = 0;
	pmu_line(T, "LCOFI enabled in mie, overflow: interrupt taken",
		 lcofi_taken == 1 ? "once" : lcofi_taken ? "more" : "no");
	pmu_line_hex(T, "  mcause", lcofi_cause | INTERRUPT_BIT);
	pmu_line(T, "  OF in the handler", lcofi_of ? "1" : "0");
	pmu_quiet();
}

/* In S or U: a bounded work loop, then back to M. */
static long lower_work(long n, long unused)
{
	return pmu_work(n, unused);
}

/* Does minstret/mcycle (cfg = CSR number) advance over a run in mode? */
static int cntr_advances(u64 cfg_csr, u64 counter_csr, u64 cfg, long mode)
{
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	if (cfg_csr == CSR_MCYCLECFG)
		csrw_n(CSR_MCYCLECFG, cfg);
	else
		csrw_n(CSR_MINSTRETCFG, cfg);
	u64 a = counter_csr == CSR_MCYCLE ? csrr_n(CSR_MCYCLE)
					  : csrr_n(CSR_MINSTRET);
	if (mode == PM_M)
		lower_work(1000, 0);
	else
		h_run(0, mode, lower_work, 1000, 0);
	u64 b = counter_csr == CSR_MCYCLE ? csrr_n(CSR_MCYCLE)
					  : csrr_n(CSR_MINSTRET);
	csrw_n(CSR_MCYCLECFG, 0);
	csrw_n(CSR_MINSTRETCFG, 0);
	return a != b;
}

static void smcntrpmf(void)
{
	rt_puts("-- Smcntrpmf: mcyclecfg, minstretcfg\n");
	csrw_n(CSR_MCYCLECFG, ~0UL);
	pmu_line_hex(T, "mcyclecfg after writing ones, bits 63:58",
		     csrr_n(CSR_MCYCLECFG) & (0x3fUL << 58));
	csrw_n(CSR_MINSTRETCFG, ~0UL);
	pmu_line_hex(T, "minstretcfg after writing ones, bits 63:58",
		     csrr_n(CSR_MINSTRETCFG) & (0x3fUL << 58));
	rt_puts("info " T ": mcyclecfg after writing ones: ");
	rt_put_hex(csrr_n(CSR_MCYCLECFG));
	rt_puts("\n");
	csrw_n(CSR_MCYCLECFG, 0);
	csrw_n(CSR_MINSTRETCFG, 0);
	pmu_line_hex(T, "mcyclecfg after writing 0", csrr_n(CSR_MCYCLECFG));

	static const struct {
		const char *name;
		u64 cfg;
		long mode;
	} c[] = {
		{"M, MINH", EV_MINH, PM_M},
		{"M, SINH UINH VSINH VUINH",
		 EV_SINH | EV_UINH | EV_VSINH | EV_VUINH, PM_M},
		{"S, all but SINH (trap and mret inhibited)",
		 EV_MINH | EV_UINH | EV_VSINH | EV_VUINH, PM_S},
		{"S, all inhibited", EV_INH_ALL, PM_S},
		{"U, all but UINH", EV_MINH | EV_SINH | EV_VSINH | EV_VUINH,
		 PM_U},
		{"U, MINH SINH UINH", EV_MINH | EV_SINH | EV_UINH, PM_U},
	};
	for (unsigned i = 0; i < sizeof c / sizeof c[0]; i++) {
		rt_puts(T ": run in ");
		rt_puts(c[i].name);
		rt_puts(": minstret ");
		rt_puts(cntr_advances(CSR_MINSTRETCFG, CSR_MINSTRET, c[i].cfg,
				      c[i].mode)
				? "advanced"
				: "stopped");
		rt_puts(", mcycle ");
		rt_puts(cntr_advances(CSR_MCYCLECFG, CSR_MCYCLE, c[i].cfg,
				      c[i].mode)
				? "advanced"
				: "stopped");
		rt_puts("\n");
	}

	/* The same filters on an hpm counter (Sscofpmf). */
	static const struct {
		const char *name;
		u64 ev;
		long mode;
	} h[] = {
		{"S, event 0x2 | all but SINH",
		 EV_INSTRET | EV_MINH | EV_UINH | EV_VSINH | EV_VUINH, PM_S},
		{"S, event 0x2 | all inhibited", EV_INSTRET | EV_INH_ALL,
		 PM_S},
		{"U, event 0x2 | all but UINH",
		 EV_INSTRET | EV_MINH | EV_SINH | EV_VSINH | EV_VUINH, PM_U},
		{"U, event 0x2 | MINH SINH UINH",
		 EV_INSTRET | EV_MINH | EV_SINH | EV_UINH, PM_U},
	};
	for (unsigned i = 0; i < sizeof h / sizeof h[0]; i++) {
		pmu_quiet();
		pmu_wr_event(3, h[i].ev);
		csrw_n(CSR_MCOUNTINHIBIT, 0);
		h_run(0, h[i].mode, lower_work, 1000, 0);
		csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
		rt_puts(T ": run in ");
		rt_puts(h[i].name);
		rt_puts(": mhpmcounter3 ");
		rt_puts(pmu_rd_counter(3) ? "advanced" : "stopped");
		rt_puts("\n");
	}
	pmu_quiet();
}

int main(void)
{
	pmu_start("pmu_m");
	counters();
	events();
	inhibit();
	counting();
	overflow();
	smcntrpmf();
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	return rt_finish("pmu_m");
}
