/*
 * pmu_h: the counters seen from VS and VU (Zihpm and Sscofpmf with the H
 * extension, Smcdeleg/Ssccfg, Ssaia's hvien/hvip).
 *
 * hcounteren gating (mcounteren clear: illegal; hcounteren or, in VU,
 * scounteren clear: virtual-instruction), VSINH/VUINH filtering of an hpm
 * counter and of minstret (minstretcfg), vsiselect 0x40-0x5F from VS
 * (Smcdeleg chapter 3: illegal with CDE=0, virtual-instruction with CDE=1;
 * hstateen0.CSRIND=0: virtual-instruction), vsireg from HS, scountinhibit
 * and scountovf from VS/VU (chapters 4 and 5), the LCOFI delegated to VS
 * taken in HS with hideleg bit 13 clear, and injected into VS through
 * hvien/hvip bit 13 (chapter 6, AIA 6.3.2), with vsip/vsie bit 13. The
 * LCOFI delegated to VS through hideleg bit 13, which is optional and
 * read-only 0 in QEMU 10.0, is checked by pmu_strict.
 *
 * Compared with QEMU (golden file tests/golden/pmu_h.out).
 */
#include "pmu.h"

#define STATEEN_ON (STATEEN_CSRIND | STATEEN_SE0)

static void gating(void)
{
	rt_puts("-- hpmcounter gating: mcounteren, hcounteren, scounteren\n");
	pmu_quiet();
	static const struct {
		const char *name;
		u64 m, h, s;
		long mode;
	} g[] = {
		{"VS, m=0 h=1", 0, 1, 0, PM_VS},
		{"VS, m=1 h=0", 1, 0, 0, PM_VS},
		{"VS, m=1 h=1", 1, 1, 0, PM_VS},
		{"VU, m=0 h=1 s=1", 0, 1, 1, PM_VU},
		{"VU, m=1 h=0 s=1", 1, 0, 1, PM_VU},
		{"VU, m=1 h=1 s=0", 1, 1, 0, PM_VU},
		{"VU, m=1 h=1 s=1", 1, 1, 1, PM_VU},
	};
	for (unsigned i = 0; i < sizeof g / sizeof g[0]; i++) {
		csrw_n(CSR_MCOUNTEREN, g[i].m ? ~0UL : 0);
		csrw_n(CSR_HCOUNTEREN, g[i].h ? ~0UL : 0);
		csrw_n(CSR_SCOUNTEREN, g[i].s ? ~0UL : 0);
		pmu_probe(g[i].name, "hpmcounter3", g[i].mode, pr_hpmcounter3,
			  0);
		pmu_probe(g[i].name, "hpmcounter31", g[i].mode,
			  pr_hpmcounter31, 0);
	}
	csrw_n(CSR_MCOUNTEREN, ~0UL);
	csrw_n(CSR_HCOUNTEREN, ~0UL & ~(1UL << 31));
	csrw_n(CSR_SCOUNTEREN, ~0UL);
	pmu_probe("VS, h=all but HPM31", "hpmcounter31", PM_VS,
		  pr_hpmcounter31, 0);
	csrw_n(CSR_MCOUNTEREN, 0);
	csrw_n(CSR_HCOUNTEREN, 0);
	csrw_n(CSR_SCOUNTEREN, 0);
}

static long guest_work(long n, long unused)
{
	return pmu_work(n, unused);
}

static void filtering(void)
{
	rt_puts("-- VSINH / VUINH\n");
	static const struct {
		const char *name;
		u64 inh;
		long mode;
	} f[] = {
		{"VS, all but VSINH", EV_MINH | EV_SINH | EV_UINH | EV_VUINH,
		 PM_VS},
		{"VS, all inhibited", EV_INH_ALL, PM_VS},
		{"VS, only VSINH", EV_VSINH, PM_VS},
		{"VU, all but VUINH", EV_MINH | EV_SINH | EV_UINH | EV_VSINH,
		 PM_VU},
		{"VU, all but VSINH", EV_MINH | EV_SINH | EV_UINH | EV_VUINH,
		 PM_VU},
		{"VU, all inhibited", EV_INH_ALL, PM_VU},
		{"HS, all but SINH", EV_MINH | EV_UINH | EV_VSINH | EV_VUINH,
		 PM_S},
		{"HS, only SINH and MINH", EV_MINH | EV_SINH, PM_S},
	};
	for (unsigned i = 0; i < sizeof f / sizeof f[0]; i++) {
		pmu_quiet();
		pmu_wr_event(3, EV_INSTRET | f[i].inh);
		csrw_n(CSR_MINSTRETCFG, f[i].inh);
		csrw_n(CSR_MCOUNTINHIBIT, 0);
		u64 a = csrr_n(CSR_MINSTRET);
		h_run((f[i].mode >> 8) & 1, f[i].mode & 3, guest_work, 1000,
		      0);
		u64 b = csrr_n(CSR_MINSTRET);
		csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
		rt_puts("run in ");
		rt_puts(f[i].name);
		rt_puts(": mhpmcounter3 (event 0x2) ");
		rt_puts(pmu_rd_counter(3) ? "advanced" : "stopped");
		rt_puts(", minstret ");
		rt_puts(a != b ? "advanced" : "stopped");
		rt_puts("\n");
	}
	pmu_quiet();
}

static const struct {
	const char *name;
	rt_fn fn;
} vregs[] = {
	{"sireg", pr_sireg},   {"sireg2", pr_sireg2}, {"sireg3", pr_sireg3},
	{"sireg4", pr_sireg4}, {"sireg5", pr_sireg5}, {"sireg6", pr_sireg6},
	{"siselect", pr_siselect},
};

static void vsiselect(void)
{
	rt_puts("-- Smcdeleg: vsiselect 0x40-0x5F from VS and VU "
		"(mcounteren = hcounteren = ~0)\n");
	pmu_quiet();
	csrw_n(CSR_MCOUNTEREN, ~0UL);
	csrw_n(CSR_HCOUNTEREN, ~0UL);
	csrw_n(CSR_SCOUNTEREN, ~0UL);
	static const struct {
		const char *name;
		u64 envcfg, hstateen;
		long mode;
	} set[] = {
		{"VS, CDE=0", 0, STATEEN_ON, PM_VS},
		{"VS, CDE=1", MENVCFG_CDE, STATEEN_ON, PM_VS},
		{"VS, CDE=1 hstateen0.CSRIND=0", MENVCFG_CDE, STATEEN_SE0,
		 PM_VS},
		{"VU, CDE=1", MENVCFG_CDE, STATEEN_ON, PM_VU},
	};
	static const u64 sel[] = {0x40, 0x43};
	csrw_n(CSR_MSTATEEN0, STATEEN_ON);
	for (unsigned s = 0; s < sizeof set / sizeof set[0]; s++) {
		csrw_n(CSR_MENVCFG, set[s].envcfg);
		csrw_n(CSR_HSTATEEN0, set[s].hstateen);
		for (unsigned i = 0; i < sizeof sel / sizeof sel[0]; i++)
			for (unsigned r = 0; r < sizeof vregs / sizeof vregs[0];
			     r++) {
				csrw_n(CSR_VSISELECT, sel[i]);
				rt_puts(set[s].name);
				rt_puts(": ");
				rt_puts(vregs[r].name);
				rt_puts(" (vsiselect ");
				pmu_put_hex(sel[i]);
				rt_puts("): ");
				pmu_put_outcome(
					pmu_try(set[s].mode, vregs[r].fn, 0));
				rt_puts("\n");
			}
	}
	csrw_n(CSR_HSTATEEN0, STATEEN_ON);
	csrw_n(CSR_VSISELECT, 0x43);
	csrw_n(CSR_MENVCFG, MENVCFG_CDE);
	pmu_probe("HS, CDE=1", "vsireg (vsiselect 0x43)", PM_S, pr_vsireg, 0);
	pmu_probe("M, CDE=1", "vsireg (vsiselect 0x43)", PM_M, pr_vsireg, 0);
	csrw_n(CSR_MENVCFG, 0);
	pmu_probe("HS, CDE=0", "vsireg (vsiselect 0x43)", PM_S, pr_vsireg, 0);
	csrw_n(CSR_MCOUNTEREN, 0);
	csrw_n(CSR_HCOUNTEREN, 0);
	csrw_n(CSR_SCOUNTEREN, 0);
}

static void inhibit_ovf(void)
{
	rt_puts("-- scountinhibit and scountovf from VS and VU\n");
	pmu_quiet();
	pmu_wr_event(3, EV_OF);
	pmu_wr_event(4, EV_OF);
	pmu_wr_event(31, EV_OF);
	csrw_n(CSR_MCOUNTEREN, ~0UL);
	csrw_n(CSR_HCOUNTEREN, 8 | (1UL << 31));
	csrw_n(CSR_SCOUNTEREN, ~0UL);
	rt_puts("(OF set in mhpmevent3, 4 and 31; hcounteren = HPM3 "
		"HPM31)\n");
	static const struct {
		const char *name;
		u64 envcfg;
		long mode;
	} set[] = {
		{"VS, CDE=0", 0, PM_VS},
		{"VS, CDE=1", MENVCFG_CDE, PM_VS},
		{"VU, CDE=0", 0, PM_VU},
		{"VU, CDE=1", MENVCFG_CDE, PM_VU},
	};
	for (unsigned s = 0; s < sizeof set / sizeof set[0]; s++) {
		csrw_n(CSR_MENVCFG, set[s].envcfg);
		pmu_probe(set[s].name, "scountinhibit", set[s].mode,
			  pr_scountinhibit, 0);
		if (pmu_probe(set[s].name, "scountovf", set[s].mode,
			      pr_scountovf, 0) == (u64)-1)
			pmu_line_hex(set[s].name, "  scountovf value", pmu_val);
	}
	csrw_n(CSR_MENVCFG, MENVCFG_CDE);
	csrw_n(CSR_HCOUNTEREN, 0);
	pmu_try(PM_S, pr_scountovf, 0);
	pmu_line_hex("HS, CDE=1, hcounteren=0", "scountovf", pmu_val);
	csrw_n(CSR_MENVCFG, 0);
	csrw_n(CSR_MCOUNTEREN, 0);
	csrw_n(CSR_SCOUNTEREN, 0);
	pmu_quiet();
}

static volatile u64 vs_irqs, vs_cause, hs_irqs, hs_cause;

static void vs_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	vs_irqs++;
	vs_cause = cause | INTERRUPT_BIT;
	csrc_n(CSR_SIP, MIP_LCOFIP); /* vsip */
	csrc_n(CSR_SIE, MIP_LCOFIP); /* vsie */
}

static void hs_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	hs_irqs++;
	hs_cause = cause | INTERRUPT_BIT;
	csrc_n(CSR_SIP, MIP_LCOFIP);
	csrc_n(CSR_SIE, MIP_LCOFIP);
}

static void vs_run_irq(const char *title)
{
	vs_irqs = hs_irqs = 0;
	vs_cause = hs_cause = 0;
	h_vs_irq = vs_irq;
	h_s_irq = hs_irq;
	csrs_n(CSR_VSSTATUS, SSTATUS_SIE);
	pmu_try(PM_VS, guest_work, 100);
	csrc_n(CSR_VSSTATUS, SSTATUS_SIE);
	h_vs_irq = 0;
	h_s_irq = 0;
	rt_puts(title);
	rt_puts(": interrupt taken in ");
	rt_puts(vs_irqs && hs_irqs ? "VS and HS"
		: vs_irqs	   ? "VS"
		: hs_irqs	   ? "HS"
				   : "nowhere");
	rt_puts(vs_irqs > 1 || hs_irqs > 1 ? " (more than once)\n" : "\n");
	if (vs_irqs)
		pmu_line_hex(title, "  vscause", vs_cause);
	if (hs_irqs)
		pmu_line_hex(title, "  scause", hs_cause);
}

static void lcofi_vs(void)
{
	rt_puts("-- LCOFI with hideleg bit 13 = 0: taken in HS\n");
	pmu_quiet();
	csrw_n(CSR_MIDELEG, MIP_LCOFIP);
	/* hideleg bit 13 is optional (Smcdeleg chapter 6); delivery through
	   it is checked by pmu_strict. */
	csrw_n(CSR_HIDELEG, MIP_LCOFIP);
	rt_puts("info M: hideleg bit 13 after writing it: ");
	rt_put_hex(csrr_n(CSR_HIDELEG) & MIP_LCOFIP);
	rt_puts("\n");
	csrw_n(CSR_HIDELEG, 0);
	csrs_n(CSR_MIE, MIP_LCOFIP);
	csrs_n(CSR_MIP, MIP_LCOFIP);
	vs_run_irq("VS, mip.LCOFIP set by M, hideleg.LCOFI=0");
	pmu_quiet();
	pmu_try(PM_VS, pr_sip, 0);
	csrs_n(CSR_MIP, MIP_LCOFIP);
	pmu_try(PM_VS, pr_sip, 0);
	pmu_line_hex("VS, hideleg.LCOFI=0 hvien.LCOFI=0",
		     "sip (vsip) bit 13 with mip.LCOFIP=1", pmu_val & MIP_LCOFIP);
	csrc_n(CSR_MIP, MIP_LCOFIP);
	csrw_n(CSR_MIDELEG, 0);
}

static void hvien(void)
{
	rt_puts("-- hvien/hvip bit 13 (Smcdeleg chapter 6, AIA 6.3.2)\n");
	pmu_quiet();
	csrw_n(CSR_MIDELEG, 0);
	csrw_n(CSR_HIDELEG, 0);
	csrw_n(CSR_HVIEN, MIP_LCOFIP);
	pmu_line_hex("M", "hvien bit 13 after writing it",
		     csrr_n(CSR_HVIEN) & MIP_LCOFIP);
	csrs_n(CSR_HVIP, MIP_LCOFIP);
	pmu_line_hex("M", "hvip bit 13 after writing it (hvien.LCOFI=1)",
		     csrr_n(CSR_HVIP) & MIP_LCOFIP);
	pmu_line_hex("M", "mip.LCOFIP", csrr_n(CSR_MIP) & MIP_LCOFIP);
	const char *T = "VS, hvien.LCOFI=1 hvip.LCOFI=1";
	pmu_try(PM_VS, pr_sip, 0);
	pmu_line_hex(T, "sip (vsip) bit 13", pmu_val & MIP_LCOFIP);
	pmu_try(PM_VS, pr_sie, 0);
	pmu_line_hex(T, "sie (vsie) bit 13", pmu_val & MIP_LCOFIP);
	vs_run_irq("VS, hvip.LCOFI, vsie.LCOFIE=0");
	csrs_n(CSR_VSIE, MIP_LCOFIP);
	pmu_line_hex("M", "vsie bit 13 after writing it",
		     csrr_n(CSR_VSIE) & MIP_LCOFIP);
	pmu_line_hex("M", "mie.LCOFIE after vsie.LCOFIE = 1",
		     csrr_n(CSR_MIE) & MIP_LCOFIP);
	vs_run_irq("VS, hvip.LCOFI, vsie.LCOFIE=1");
	pmu_line_hex(T, "hvip bit 13 after the handler cleared sip.LCOFIP",
		     csrr_n(CSR_HVIP) & MIP_LCOFIP);
	csrc_n(CSR_VSIE, MIP_LCOFIP);
	csrw_n(CSR_HVIP, 0);
	csrw_n(CSR_HVIEN, 0);
	pmu_try(PM_VS, pr_sip, 0);
	pmu_line_hex("VS, hvien.LCOFI=0", "sip (vsip) bit 13",
		     pmu_val & MIP_LCOFIP);
}

int main(void)
{
	pmu_start("pmu_h");
	csrw_n(CSR_MSTATEEN0, STATEEN_ON);
	csrw_n(CSR_HSTATEEN0, STATEEN_ON);
	gating();
	filtering();
	vsiselect();
	inhibit_ovf();
	lcofi_vs();
	hvien();
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	return rt_finish("pmu_h");
}
