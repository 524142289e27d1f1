/*
 * pmu_deleg: the counters seen from S and U (Zihpm, Sscofpmf, Smcdeleg/
 * Ssccfg, Smaia's mvien/mvip).
 *
 * mcounteren/scounteren gating of hpmcounterN, scountovf and its
 * mcounteren read masking, the Smcdeleg access table for siselect
 * 0x40-0x5F through sireg..sireg6 per menvcfg.CDE and mstateen0.CSRIND
 * (Smcdeleg chapter 3), what sireg/sireg2 read and write (MINH read-only
 * 0), scountinhibit (chapter 4), the LCOFI delegated to S through mideleg
 * (taken in S, from a software-set mip.LCOFIP and from a real overflow in
 * S) and injected through mvien/mvip (Smcdeleg chapter 6, AIA 5.3).
 *
 * Compared with QEMU (golden file tests/golden/pmu_deleg.out).
 */
#include "pmu.h"

/* Delegated counters: CY, IR, HPM3 and HPM31 (not HPM4). */
#define DELEG (1UL | 4UL | 8UL | (1UL << 31))

static void gating(void)
{
	rt_puts("-- hpmcounter gating: mcounteren, scounteren\n");
	pmu_quiet();
	static const struct {
		const char *name;
		u64 m, s;
		long mode;
	} g[] = {
		{"S, mcounteren=0", 0, 0, PM_S},
		{"S, mcounteren=1", 1, 0, PM_S},
		{"U, mcounteren=0 scounteren=1", 0, 1, PM_U},
		{"U, mcounteren=1 scounteren=0", 1, 0, PM_U},
		{"U, mcounteren=1 scounteren=1", 1, 1, PM_U},
	};
	for (unsigned i = 0; i < sizeof g / sizeof g[0]; i++) {
		u64 m = g[i].m ? ~0UL : 0, s = g[i].s ? ~0UL : 0;
		csrw_n(CSR_MCOUNTEREN, m & ~(1UL << 4));
		csrw_n(CSR_SCOUNTEREN, s);
		pmu_probe(g[i].name, "hpmcounter3", g[i].mode, pr_hpmcounter3,
			  0);
		pmu_probe(g[i].name, "hpmcounter4 (bit 4 always clear)",
			  g[i].mode, pr_hpmcounter4, 0);
		pmu_probe(g[i].name, "hpmcounter31", g[i].mode,
			  pr_hpmcounter31, 0);
	}
	/* The value read is the counter's. */
	csrw_n(CSR_MCOUNTEREN, ~0UL);
	csrw_n(CSR_SCOUNTEREN, ~0UL);
	pmu_wr_counter(3, 0x1234);
	pmu_try(PM_U, pr_hpmcounter3, 0);
	pmu_line_hex("U", "hpmcounter3 with mhpmcounter3 = 0x1234 (inhibited)",
		     pmu_val);
	csrw_n(CSR_MCOUNTEREN, 0);
	csrw_n(CSR_SCOUNTEREN, 0);
	pmu_wr_counter(3, 0);
}

static void scountovf(void)
{
	rt_puts("-- scountovf (Sscofpmf)\n");
	pmu_quiet();
	pmu_wr_event(3, EV_OF);
	pmu_wr_event(4, EV_OF);
	pmu_wr_event(31, EV_OF);
	static const u64 en[] = {0, DELEG, ~0UL};
	static const char *const mt[] = {"M, mcounteren=0",
					 "M, mcounteren=CY IR HPM3 HPM31",
					 "M, mcounteren=~0"};
	static const char *const st[] = {"S, mcounteren=0",
					 "S, mcounteren=CY IR HPM3 HPM31",
					 "S, mcounteren=~0"};
	rt_puts("(OF set in mhpmevent3, 4 and 31)\n");
	for (unsigned i = 0; i < 3; i++) {
		csrw_n(CSR_MCOUNTEREN, en[i]);
		pmu_line_hex(mt[i], "scountovf", csrr_n(CSR_SCOUNTOVF));
		if (pmu_try(PM_S, pr_scountovf, 0) == (u64)-1)
			pmu_line_hex(st[i], "scountovf", pmu_val);
		else
			pmu_probe(st[i], "scountovf", PM_S, pr_scountovf, 0);
	}
	csrw_n(CSR_SCOUNTEREN, ~0UL);
	pmu_probe("U", "scountovf (mcounteren, scounteren all ones)", PM_U,
		  pr_scountovf, 0);
	pmu_quiet();
	csrw_n(CSR_MCOUNTEREN, 0);
	csrw_n(CSR_SCOUNTEREN, 0);
}

static const u64 selects[] = {0x40, 0x41, 0x42, 0x43, 0x44, 0x5f};
static const struct {
	const char *name;
	rt_fn fn;
} sregs[] = {
	{"sireg", pr_sireg},   {"sireg2", pr_sireg2}, {"sireg3", pr_sireg3},
	{"sireg4", pr_sireg4}, {"sireg5", pr_sireg5}, {"sireg6", pr_sireg6},
};

static void sireg_table(void)
{
	rt_puts("-- Smcdeleg: siselect 0x40-0x5F from S (mcounteren = CY IR "
		"HPM3 HPM31)\n");
	pmu_quiet();
	csrw_n(CSR_MCOUNTEREN, DELEG);
	csrw_n(CSR_MENVCFG, MENVCFG_CDE);
	pmu_line_hex("M", "menvcfg.CDE after writing 1",
		     (csrr_n(CSR_MENVCFG) >> 60) & 1);
	static const struct {
		const char *name;
		u64 envcfg, stateen;
	} set[] = {
		{"S, CDE=0", 0, STATEEN_CSRIND | STATEEN_SE0},
		{"S, CDE=1", MENVCFG_CDE, STATEEN_CSRIND | STATEEN_SE0},
		{"S, CDE=1 CSRIND=0", MENVCFG_CDE, STATEEN_SE0},
	};
	for (unsigned s = 0; s < sizeof set / sizeof set[0]; s++) {
		csrw_n(CSR_MENVCFG, set[s].envcfg);
		csrw_n(CSR_MSTATEEN0, set[s].stateen);
		for (unsigned i = 0; i < sizeof selects / sizeof selects[0];
		     i++) {
			for (unsigned r = 0; r < sizeof sregs / sizeof sregs[0];
			     r++) {
				csrw_n(CSR_SISELECT, selects[i]);
				rt_puts(set[s].name);
				rt_puts(": ");
				rt_puts(sregs[r].name);
				rt_puts(" (siselect ");
				pmu_put_hex(selects[i]);
				rt_puts("): ");
				pmu_put_outcome(pmu_try(PM_S, sregs[r].fn, 0));
				rt_puts("\n");
			}
		}
		csrw_n(CSR_SISELECT, 0x43);
		pmu_probe(set[s].name, "siselect (read)", PM_S, pr_siselect,
			  0);
	}
	csrw_n(CSR_MENVCFG, MENVCFG_CDE);
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	csrw_n(CSR_SCOUNTEREN, ~0UL);
	csrw_n(CSR_SISELECT, 0x43);
	pmu_probe("U, CDE=1", "sireg (siselect 0x43)", PM_U, pr_sireg, 0);
	pmu_probe("U, CDE=1", "siselect", PM_U, pr_siselect, 0);
	csrw_n(CSR_SCOUNTEREN, 0);
}

static void sireg_values(void)
{
	rt_puts("-- Smcdeleg: the state behind sireg/sireg2\n");
	const char *T = "S, CDE=1";
	pmu_quiet();
	csrw_n(CSR_MENVCFG, MENVCFG_CDE);
	csrw_n(CSR_MCOUNTEREN, DELEG);
	pmu_wr_counter(3, 0x1234);
	csrw_n(CSR_SISELECT, 0x43);
	pmu_try(PM_S, pr_sireg, 0);
	pmu_line_hex(T, "sireg (0x43) with mhpmcounter3 = 0x1234", pmu_val);
	pmu_try(PM_S, pw_sireg, 0x5678);
	pmu_line_hex(T, "mhpmcounter3 after sireg (0x43) = 0x5678",
		     pmu_rd_counter(3));
	pmu_wr_event(3, EV_INSTRET | EV_MINH | EV_SINH | EV_OF);
	pmu_try(PM_S, pr_sireg2, 0);
	pmu_line_hex(T, "sireg2 (0x43) with mhpmevent3 = 0x2|OF|MINH|SINH",
		     pmu_val);
	pmu_wr_event(3, 0);
	pmu_try(PM_S, pw_sireg2, (long)(EV_INSTRET | EV_MINH | EV_UINH));
	pmu_line_hex(T,
		     "mhpmevent3 (was 0) after sireg2 (0x43) = 0x2|MINH|UINH",
		     pmu_rd_event(3));
	pmu_wr_event(3, EV_MINH);
	pmu_try(PM_S, pw_sireg2, (long)EV_INSTRET);
	rt_puts("info S, CDE=1: mhpmevent3 (was MINH) after sireg2 (0x43) = "
		"0x2: ");
	rt_put_hex(pmu_rd_event(3));
	rt_puts("\n");
	pmu_wr_event(3, 0);
	pmu_wr_counter(3, 0);
	csrw_n(CSR_MCYCLECFG, EV_MINH | EV_UINH);
	csrw_n(CSR_SISELECT, 0x40);
	pmu_try(PM_S, pr_sireg2, 0);
	pmu_line_hex(T, "sireg2 (0x40) with mcyclecfg = MINH|UINH", pmu_val);
	csrw_n(CSR_MINSTRETCFG, EV_MINH | EV_SINH);
	csrw_n(CSR_SISELECT, 0x42);
	pmu_try(PM_S, pr_sireg2, 0);
	pmu_line_hex(T, "sireg2 (0x42) with minstretcfg = MINH|SINH", pmu_val);
	csrw_n(CSR_MCYCLECFG, 0);
	csrw_n(CSR_MINSTRETCFG, 0);
	csrw_n(CSR_MCOUNTINHIBIT, 1);
	csrw_n(CSR_MCYCLE, 0x777);
	csrw_n(CSR_SISELECT, 0x40);
	pmu_try(PM_S, pr_sireg, 0);
	pmu_line_hex(T, "sireg (0x40) with mcycle = 0x777 (inhibited)",
		     pmu_val);
	pmu_quiet();
	csrw_n(CSR_MENVCFG, 0);
	csrw_n(CSR_MCOUNTEREN, 0);
}

static void scountinhibit(void)
{
	rt_puts("-- scountinhibit (Smcdeleg chapter 4)\n");
	pmu_quiet();
	csrw_n(CSR_MCOUNTEREN, DELEG);
	csrw_n(CSR_MENVCFG, 0);
	pmu_probe("S, CDE=0", "scountinhibit", PM_S, pr_scountinhibit, 0);
	csrw_n(CSR_MENVCFG, MENVCFG_CDE);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	pmu_probe("S, CDE=1", "scountinhibit = ~0", PM_S, pw_scountinhibit,
		  -1);
	pmu_line_hex("S, CDE=1", "mcountinhibit after (bit 1 masked)",
		     csrr_n(CSR_MCOUNTINHIBIT) & ~2UL);
	pmu_try(PM_S, pr_scountinhibit, 0);
	pmu_line_hex("S, CDE=1", "scountinhibit (bit 1 masked)",
		     pmu_val & ~2UL);
	csrw_n(CSR_MCOUNTINHIBIT, 0x10);
	pmu_try(PM_S, pr_scountinhibit, 0);
	pmu_line_hex("S, CDE=1", "scountinhibit with mcountinhibit = HPM4",
		     pmu_val);
	pmu_try(PM_S, pw_scountinhibit, 0);
	pmu_line_hex("S, CDE=1", "mcountinhibit after scountinhibit = 0",
		     csrr_n(CSR_MCOUNTINHIBIT));
	csrw_n(CSR_SCOUNTEREN, ~0UL);
	pmu_probe("U, CDE=1", "scountinhibit", PM_U, pr_scountinhibit, 0);
	csrw_n(CSR_SCOUNTEREN, 0);
	pmu_quiet();
	csrw_n(CSR_MENVCFG, 0);
	csrw_n(CSR_MCOUNTEREN, 0);
}

static volatile u64 s_irqs, s_cause, s_ovf;

static void s_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	s_irqs++;
	s_cause = cause | INTERRUPT_BIT;
	s_ovf = csrr_n(CSR_SCOUNTOVF);
	csrc_n(CSR_SIP, MIP_LCOFIP);
	csrc_n(CSR_SIE, MIP_LCOFIP);
}

static long s_wait(long n, long unused)
{
	return pmu_work(n, unused);
}

static void s_run_irq(const char *title)
{
	s_irqs = 0;
	s_cause = 0;
	h_s_irq = s_irq;
	csr_set(mstatus, MSTATUS_SIE);
	pmu_try(PM_S, s_wait, 100);
	csr_clear(mstatus, MSTATUS_SIE);
	h_s_irq = 0;
	pmu_line(title, "interrupt taken in S",
		 s_irqs == 1 ? "once" : s_irqs ? "more" : "no");
	if (s_irqs)
		pmu_line_hex(title, "  scause", s_cause);
}

static void lcofi_s(void)
{
	rt_puts("-- LCOFI delegated to S (mideleg bit 13)\n");
	pmu_quiet();
	csrw_n(CSR_MIDELEG, MIP_LCOFIP);
	pmu_line_hex("M", "mideleg bit 13 after writing it",
		     csrr_n(CSR_MIDELEG) & MIP_LCOFIP);
	csrs_n(CSR_MIP, MIP_LCOFIP);
	pmu_try(PM_S, pr_sip, 0);
	pmu_line_hex("S, mideleg.LCOFI=1", "sip after mip.LCOFIP = 1",
		     pmu_val & MIP_LCOFIP);
	csrs_n(CSR_MIE, MIP_LCOFIP);
	pmu_try(PM_S, pr_sie, 0);
	pmu_line_hex("S, mideleg.LCOFI=1", "sie after mie.LCOFIE = 1",
		     pmu_val & MIP_LCOFIP);
	s_run_irq("S, mip.LCOFIP set by M");
	pmu_line_hex("S, mip.LCOFIP set by M", "  mip.LCOFIP after the handler",
		     csrr_n(CSR_MIP) & MIP_LCOFIP);

	/* A real overflow in S: event 0x2 counted in S only. */
	csrw_n(CSR_MCOUNTEREN, 8);
	csrs_n(CSR_MIE, MIP_LCOFIP);
	pmu_wr_event(3, EV_INSTRET | EV_MINH);
	pmu_wr_counter(3, -20UL);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	s_run_irq("S, mhpmcounter3 overflows in S");
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	pmu_line_hex("S, mhpmcounter3 overflows in S", "  scountovf in the handler",
		     s_ovf);
	pmu_line_hex("S, mhpmcounter3 overflows in S", "  OF after",
		     pmu_rd_event(3) >> 63);
	csrw_n(CSR_MCOUNTEREN, 0);
	pmu_quiet();
	csrw_n(CSR_MIDELEG, 0);
	pmu_try(PM_S, pr_sip, 0);
	csrs_n(CSR_MIP, MIP_LCOFIP);
	pmu_try(PM_S, pr_sip, 0);
	pmu_line_hex("S, mideleg.LCOFI=0 mvien.LCOFI=0",
		     "sip with mip.LCOFIP = 1", pmu_val & MIP_LCOFIP);
	csrc_n(CSR_MIP, MIP_LCOFIP);
}

static void mvien(void)
{
	rt_puts("-- mvien/mvip bit 13 (Smcdeleg chapter 6, AIA 5.3)\n");
	pmu_quiet();
	csrw_n(CSR_MIDELEG, 0);
	csrw_n(CSR_MVIEN, MIP_LCOFIP);
	pmu_line_hex("M", "mvien after writing bit 13",
		     csrr_n(CSR_MVIEN) & MIP_LCOFIP);
	csrw_n(CSR_MVIP, MIP_LCOFIP);
	pmu_line_hex("M", "mvip after writing bit 13 (mvien.LCOFI=1)",
		     csrr_n(CSR_MVIP) & MIP_LCOFIP);
	pmu_line_hex("M", "mip.LCOFIP (not an alias of mvip.LCOFI)",
		     csrr_n(CSR_MIP) & MIP_LCOFIP);
	const char *T = "S, mvien.LCOFI=1 mvip.LCOFI=1";
	pmu_try(PM_S, pr_sip, 0);
	pmu_line_hex(T, "sip bit 13", pmu_val & MIP_LCOFIP);
	pmu_try(PM_S, pr_sie, 0);
	pmu_line_hex(T, "sie bit 13 (mie.LCOFIE = 0)", pmu_val & MIP_LCOFIP);
	s_run_irq("S, mvip.LCOFI, sie.LCOFIE=0");
	/* Enable it in sie from S-level (M writes sie for S). */
	csrs_n(CSR_SIE, MIP_LCOFIP);
	pmu_line_hex("M", "mie.LCOFIE after sie.LCOFIE = 1",
		     csrr_n(CSR_MIE) & MIP_LCOFIP);
	s_run_irq("S, mvip.LCOFI, sie.LCOFIE=1");
	pmu_line_hex(T, "mvip bit 13 after the handler cleared sip.LCOFIP",
		     csrr_n(CSR_MVIP) & MIP_LCOFIP);
	csrc_n(CSR_SIE, MIP_LCOFIP);
	csrw_n(CSR_MVIP, 0);
	csrw_n(CSR_MVIEN, 0);
	pmu_try(PM_S, pr_sip, 0);
	pmu_line_hex("S, mvien.LCOFI=0", "sip bit 13", pmu_val & MIP_LCOFIP);
}

int main(void)
{
	pmu_start("pmu_deleg");
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	gating();
	scountovf();
	sireg_table();
	sireg_values();
	scountinhibit();
	lcofi_s();
	mvien();
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	return rt_finish("pmu_deleg");
}
