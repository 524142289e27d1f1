/*
 * ctr_modes: Control Transfer Records across M, S and U (Smctr v1.0).
 *
 * Table 7 (trap and trap return between enabled and disabled modes, with
 * the partial records whose source or target PC is 0), table 8's rows for
 * U->S, U->M and S->M (external traps and their enable chains, which do
 * not depend on EXCINH), interrupts and INTRINH, TRETINH, recording in S
 * and U while mstateen0.CTR = 0, and the access rules of chapter 5 from S
 * and U (mstateen0.CTR, SCTRCLR, sctrdepth, the entry registers).
 *
 * Compared with QEMU (golden file tests/golden/ctr_modes.out).
 */
#include "ctr.h"


__asm__(CTR_ASM_RUNTIME CTR_ASM_PROBES CTR_ASM_SCENARIOS);

#define DELEG_ILLEGAL (1UL << CAUSE_ILLEGAL)
#define SSIP (1UL << 1)

static void trap_run(const char *title, long mode, u64 medeleg, u64 ctl)
{
	ctr_clear();
	ctr_setup(medeleg, 0);
	ctr_run(mode, scn_trap, ctl, 0);
	ctr_dump(title, 16);
}

static void table7(void)
{
	rt_puts("-- table 7: traps and trap returns (U -> S -> U)\n");
	trap_run("U, S enabled: all recorded", CTR_U, DELEG_ILLEGAL,
		 CTL_U | CTL_S);
	trap_run("U disabled, S enabled: trap src 0, sret dst 0", CTR_U,
		 DELEG_ILLEGAL, CTL_S);
	trap_run("U enabled, S disabled: neither trap nor sret", CTR_U,
		 DELEG_ILLEGAL, CTL_U);
	trap_run("only M enabled: mret dst 0, U->S nothing, ecall src 0", CTR_U,
		 DELEG_ILLEGAL, CTL_M);
	trap_run("S, M enabled, run in S: traps to M and mret recorded", CTR_S,
		 0, CTL_S | CTL_M);
	trap_run("TRETINH", CTR_U, DELEG_ILLEGAL, CTL_U | CTL_S | CTL_TRETINH);
	trap_run("EXCINH", CTR_U, DELEG_ILLEGAL, CTL_U | CTL_S | CTL_EXCINH);
}

static void table8(void)
{
	rt_puts("-- table 8: external traps\n");
	trap_run("U->S with STE", CTR_U, DELEG_ILLEGAL, CTL_U | CTL_STE);
	trap_run("U->S with STE and EXCINH (still recorded)", CTR_U,
		 DELEG_ILLEGAL, CTL_U | CTL_STE | CTL_EXCINH);
	trap_run("U->M with MTE only: not recorded", CTR_U, 0, CTL_U | CTL_MTE);
	trap_run("U->M with STE only: not recorded", CTR_U, 0, CTL_U | CTL_STE);
	trap_run("U->M with MTE and STE", CTR_U, 0, CTL_U | CTL_MTE | CTL_STE);
	trap_run("S->M with MTE", CTR_S, 0, CTL_S | CTL_MTE);
	trap_run("S->M with STE only: not recorded", CTR_S, 0, CTL_S | CTL_STE);
}

static void intr_run(const char *title, long mode, u64 ctl)
{
	ctr_clear();
	ctr_setup(0, 0);
	csrw_n(CSR_MIDELEG, SSIP);
	csrw_n(CSR_MIE, SSIP);
	csrw_n(CSR_MSTATUS, csrr_n(CSR_MSTATUS) | 2); /* SIE */
	csrw_n(CSR_MIP, SSIP);
	ctr_run(mode, scn_intr, ctl, 0);
	csrw_n(CSR_MIE, 0);
	csrw_n(CSR_MIDELEG, 0);
	csrw_n(CSR_MSTATUS, csrr_n(CSR_MSTATUS) & ~2UL);
	ctr_dump(title, 16);
	rt_check("  SSIP handled", csrr_n(CSR_MIP) & SSIP, 0);
}

static void interrupts(void)
{
	rt_puts("-- interrupts (type 2, INTRINH)\n");
	intr_run("U->S interrupt", CTR_U, CTL_U | CTL_S);
	intr_run("U->S interrupt with INTRINH", CTR_U,
		 CTL_U | CTL_S | CTL_INTRINH);
	intr_run("U->S interrupt with EXCINH (recorded)", CTR_U,
		 CTL_U | CTL_S | CTL_EXCINH);
	intr_run("S->S interrupt", CTR_S, CTL_S);
	intr_run("U->S interrupt, external with STE (INTRINH ignored)", CTR_U,
		 CTL_U | CTL_STE | CTL_INTRINH);
}

static void stateen_off(void)
{
	rt_puts("-- mstateen0.CTR = 0: recording below M goes on (chapter 5)\n");
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	trap_run("U, S enabled", CTR_U, DELEG_ILLEGAL, CTL_U | CTL_S);
	csrw_n(CSR_MSTATEEN0, STATEEN_CTR | STATEEN_CSRIND | STATEEN_SE0);
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
		{"vsctrctl", p_vsctrctl},    {"mctrctl", p_mctrctl},
		{"sireg (ctrsource)", p_sireg}, {"sireg2 (ctrtarget)", p_sireg2},
		{"sireg3 (ctrdata)", p_sireg3}, {"vsireg (ctrsource)", p_vsireg},
		{"SCTRCLR", p_sctrclr},
	};
	static const struct {
		const char *name;
		long mode;
		u64 mstateen0;
	} m[] = {
		{"M, mstateen0.CTR=0", CTR_M, STATEEN_CSRIND | STATEEN_SE0},
		{"S, mstateen0.CTR=1", CTR_S,
		 STATEEN_CTR | STATEEN_CSRIND | STATEEN_SE0},
		{"S, mstateen0.CTR=0", CTR_S, STATEEN_CSRIND | STATEEN_SE0},
		{"U, mstateen0.CTR=1", CTR_U,
		 STATEEN_CTR | STATEEN_CSRIND | STATEEN_SE0},
	};
	rt_puts("-- access rules (chapters 2-5): trap cause or 0\n");
	ctr_setup(0, 0);
	for (unsigned j = 0; j < sizeof m / sizeof m[0]; j++) {
		csrw_n(CSR_MSTATEEN0, m[j].mstateen0);
		for (unsigned i = 0; i < sizeof p / sizeof p[0]; i++) {
			rt_puts(m[j].name);
			rt_puts(": ");
			rt_puts(p[i].name);
			rt_puts(": ");
			rt_put_dec(ctr_probe(m[j].mode, p[i].probe));
			rt_puts("\n");
		}
	}
	csrw_n(CSR_MSTATEEN0, STATEEN_CTR | STATEEN_CSRIND | STATEEN_SE0);
}

int main(void)
{
	rt_puts("ctr_modes: start\n");
	csrw_n(CSR_MSTATEEN0, STATEEN_CTR | STATEEN_CSRIND | STATEEN_SE0);
	table7();
	table8();
	interrupts();
	stateen_off();
	access();
	return rt_finish("ctr_modes");
}
