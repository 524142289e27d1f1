/*
 * ctr_h: Control Transfer Records with the H extension (Smctr v1.0).
 *
 * vsctrctl as sctrctl in VS/VU (2.3), table 7 inside the guest (VU <-> VS),
 * virtualization mode transitions (6.1.1: the mode enables come from
 * mctrctl/sctrctl/vsctrctl, the external trap enables from each level,
 * freeze from the target's register, every other field from vsctrctl),
 * table 8's rows for VU->VS, VU->HS, VU->M, VS->HS and VS->M, BPFRZ into
 * VS and into HS, a VS interrupt, the shared entry registers (vsireg* and
 * sireg* reach the same entries), and the access rules of chapter 5 from
 * VS and VU (hstateen0.CTR, sctrdepth always virtual-instruction).
 *
 * Compared with QEMU (golden file tests/golden/ctr_h.out).
 */
#include "ctr.h"


__asm__(CTR_ASM_RUNTIME CTR_ASM_PROBES CTR_ASM_SCENARIOS);

#define ILL (1UL << CAUSE_ILLEGAL)
#define BRK (1UL << CAUSE_BREAKPOINT)
#define VSSIP (1UL << 2)

static void run(const char *title, long mode, const void *scn, u64 medeleg,
		u64 hedeleg, u64 mctl, u64 vsctl)
{
	ctr_clear();
	ctr_setup(medeleg, hedeleg);
	ctr_run(mode, scn, mctl, vsctl);
	ctr_dump(title, 16);
}

static void guest_table7(void)
{
	rt_puts("-- table 7 inside the guest (VU -> VS -> VU, vsctrctl)\n");
	run("VU, VS enabled", CTR_VU, scn_trap, ILL, ILL, 0, CTL_U | CTL_S);
	run("VU disabled, VS enabled: src 0, dst 0", CTR_VU, scn_trap, ILL, ILL,
	    0, CTL_S);
	run("VU enabled, VS disabled", CTR_VU, scn_trap, ILL, ILL, 0, CTL_U);
	run("mctrctl.U and S do not enable VU/VS", CTR_VU, scn_trap, ILL, ILL,
	    CTL_U | CTL_S, 0);
	run("vsctrctl TRETINH", CTR_VU, scn_trap, ILL, ILL, 0,
	    CTL_U | CTL_S | CTL_TRETINH);
}

static void transitions(void)
{
	rt_puts("-- virtualization mode transitions (6.1.1)\n");
	run("M -> VS mret, VS -> M ecall: M and VS enabled", CTR_VS, scn_trap,
	    0, 0, CTL_M, CTL_S);
	run("VS -> HS -> VS: sctrctl.S and vsctrctl.S", CTR_VS, scn_trap, ILL,
	    0, CTL_S, CTL_S);
	run("VS -> HS, sctrctl.EXCINH (not used)", CTR_VS, scn_trap, ILL, 0,
	    CTL_S | CTL_EXCINH, CTL_S);
	run("VS -> HS, vsctrctl.EXCINH (used)", CTR_VS, scn_trap, ILL, 0, CTL_S,
	    CTL_S | CTL_EXCINH);
	run("HS -> VS sret, vsctrctl.TRETINH (used)", CTR_VS, scn_trap, ILL, 0,
	    CTL_S, CTL_S | CTL_TRETINH);
	run("HS -> VS sret, sctrctl.TRETINH (not used)", CTR_VS, scn_trap, ILL,
	    0, CTL_S | CTL_TRETINH, CTL_S);
	run("VU -> HS, sctrctl.S, vsctrctl.U", CTR_VU, scn_trap, ILL, 0, CTL_S,
	    CTL_U);
}

static void table8(void)
{
	rt_puts("-- table 8 with V=1: external traps\n");
	run("VU->VS with vsctrctl.STE", CTR_VU, scn_trap, ILL, ILL, 0,
	    CTL_U | CTL_STE);
	run("VU->VS with sctrctl.STE only: not recorded", CTR_VU, scn_trap, ILL,
	    ILL, CTL_STE, CTL_U);
	run("VU->HS with STE and vsctrctl.STE", CTR_VU, scn_trap, ILL, 0,
	    CTL_STE, CTL_U | CTL_STE);
	run("VU->HS with STE only: not recorded", CTR_VU, scn_trap, ILL, 0,
	    CTL_STE, CTL_U);
	run("VU->HS with vsctrctl.STE only: not recorded", CTR_VU, scn_trap,
	    ILL, 0, 0, CTL_U | CTL_STE);
	run("VU->M with MTE, STE, vsctrctl.STE", CTR_VU, scn_trap, 0, 0,
	    CTL_MTE | CTL_STE, CTL_U | CTL_STE);
	run("VU->M without vsctrctl.STE: not recorded", CTR_VU, scn_trap, 0, 0,
	    CTL_MTE | CTL_STE, CTL_U);
	run("VS->HS with STE", CTR_VS, scn_trap, ILL, 0, CTL_STE, CTL_S);
	run("VS->HS with vsctrctl.STE only: not recorded", CTR_VS, scn_trap,
	    ILL, 0, 0, CTL_S | CTL_STE);
	run("VS->M with MTE, STE", CTR_VS, scn_trap, 0, 0, CTL_MTE | CTL_STE,
	    CTL_S);
	run("VS->M with MTE only: not recorded", CTR_VS, scn_trap, 0, 0,
	    CTL_MTE, CTL_S);
}

static void freeze(void)
{
	rt_puts("-- freeze with V=1 (6.5)\n");
	run("VU ebreak -> VS, vsctrctl.BPFRZ", CTR_VU, scn_ebreak, BRK, BRK, 0,
	    CTL_U | CTL_S | CTL_BPFRZ);
	run("VU ebreak -> VS, sctrctl.BPFRZ (not used)", CTR_VU, scn_ebreak,
	    BRK, BRK, CTL_BPFRZ, CTL_U | CTL_S);
	run("VS ebreak -> HS, sctrctl.BPFRZ", CTR_VS, scn_ebreak, BRK, 0,
	    CTL_S | CTL_BPFRZ, CTL_S);
	run("VS ebreak -> HS, vsctrctl.BPFRZ (not used)", CTR_VS, scn_ebreak,
	    BRK, 0, CTL_S, CTL_S | CTL_BPFRZ);
}

static void interrupt(void)
{
	rt_puts("-- VS interrupt\n");
	ctr_clear();
	ctr_setup(0, 0);
	csrw_n(CSR_MIDELEG, VSSIP);
	csrw_n(CSR_HIDELEG, VSSIP);
	csrw_n(CSR_MIE, VSSIP);
	csrw_n(CSR_VSIE, 2);
	csrw_n(CSR_HVIP, VSSIP);
	ctr_run(CTR_VU, scn_intr, 0, CTL_U | CTL_S);
	csrw_n(CSR_MIE, 0);
	csrw_n(CSR_HIDELEG, 0);
	ctr_dump("VU -> VS interrupt", 16);
	rt_check("  VSSIP handled", csrr_n(CSR_HVIP) & VSSIP, 0);
}

static void shared_entries(void)
{
	rt_puts("-- vsireg* and sireg* reach the same entries (3)\n");
	ctr_clear();
	csrw_n(CSR_VSISELECT, 0x201);
	csrw_n(CSR_VSIREG, 0x80000101UL);
	csrw_n(CSR_VSIREG2, 0x80000200UL);
	csrw_n(CSR_VSIREG3, 9);
	ctr_select(1);
	rt_check("sireg at 0x201", csrr_n(CSR_SIREG), 0x80000101UL);
	rt_check("sireg2 at 0x201", csrr_n(CSR_SIREG2), 0x80000200UL);
	rt_check("sireg3 at 0x201", csrr_n(CSR_SIREG3) & 0xf, 9);
}

static void access(void)
{
	static const struct {
		const char *name;
		char *probe;
	} p[] = {
		{"sctrctl", p_sctrctl},	     {"sctrctl write", p_sctrctl_w},
		{"sctrstatus", p_sctrstatus}, {"sctrdepth", p_sctrdepth},
		{"sctrdepth write", p_sctrdepth_w},
		{"vsctrctl", p_vsctrctl},    {"sireg (ctrsource)", p_sireg},
		{"sireg3 (ctrdata)", p_sireg3}, {"vsireg (ctrsource)", p_vsireg},
		{"SCTRCLR", p_sctrclr},
	};
	const u64 rest = STATEEN_CSRIND | STATEEN_SE0;
	static const struct {
		const char *name;
		long mode;
		u64 m, h;
	} m[] = {
		{"HS m=1", CTR_S, 1, 0},     {"VS m=1 h=1", CTR_VS, 1, 1},
		{"VS m=1 h=0", CTR_VS, 1, 0}, {"VS m=0 h=1", CTR_VS, 0, 1},
		{"VU m=1 h=1", CTR_VU, 1, 1}, {"VU m=0 h=1", CTR_VU, 0, 1},
	};
	rt_puts("-- access rules with V=1 (chapter 5): trap cause or 0\n");
	ctr_setup(0, 0);
	for (unsigned j = 0; j < sizeof m / sizeof m[0]; j++) {
		csrw_n(CSR_MSTATEEN0, rest | (m[j].m ? STATEEN_CTR : 0));
		csrw_n(CSR_HSTATEEN0, rest | (m[j].h ? STATEEN_CTR : 0));
		for (unsigned i = 0; i < sizeof p / sizeof p[0]; i++) {
			rt_puts(m[j].name);
			rt_puts(": ");
			rt_puts(p[i].name);
			rt_puts(": ");
			rt_put_dec(ctr_probe(m[j].mode, p[i].probe));
			rt_puts("\n");
		}
	}
	csrw_n(CSR_MSTATEEN0, rest | STATEEN_CTR);
	csrw_n(CSR_HSTATEEN0, rest | STATEEN_CTR);
	csrw_n(CSR_MSTATEEN0, rest);
	rt_check("hstateen0.CTR read-only 0 when mstateen0.CTR = 0",
		 (csrr_n(CSR_HSTATEEN0) >> 54) & 1, 0);
	csrw_n(CSR_MSTATEEN0, rest | STATEEN_CTR);
}

int main(void)
{
	rt_puts("ctr_h: start\n");
	csrw_n(CSR_MSTATEEN0, STATEEN_CTR | STATEEN_CSRIND | STATEEN_SE0);
	csrw_n(CSR_HSTATEEN0, STATEEN_CTR | STATEEN_CSRIND | STATEEN_SE0);
	guest_table7();
	transitions();
	table8();
	freeze();
	interrupt();
	shared_entries();
	access();
	return rt_finish("ctr_h");
}
