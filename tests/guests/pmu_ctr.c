/*
 * pmu_ctr: the LCOFI freeze of Control Transfer Records (Smctr section
 * 6.5) with a real counter overflow, and its consistency with Sspesa's
 * shpmspc; vmm only (QEMU 10.0 has neither Sspesa nor an LCOFI of an
 * instruction-precise counter with CTR).
 *
 * A counter counting taken branches (0x100) from 2^64 - 1 overflows on a
 * taken branch while CTR records; its LCOFI trap, with LCOFIFRZ set in the
 * register of the mode the trap goes to (mctrctl for M and S, vsctrctl for
 * VS), sets sctrstatus.FROZEN and is not recorded. So the newest entry is
 * the overflowing branch: its source is shpmspc, its target the LCOFI's
 * xepc (Ssplcofi: the instruction executed after the causal one). With
 * LCOFIFRZ clear in the register that governs the trap, the trap is
 * recorded (type 2, interrupt) and nothing freezes.
 */
#include "pmu.h"
#include "csr.h"


#define CTL_U (1UL << 0)
#define CTL_S (1UL << 1)
#define CTL_M (1UL << 2)
#define CTL_LCOFIFRZ (1UL << 12)
#define STATUS_FROZEN (1UL << 31)
#define STATEEN_CTR (1UL << 54)
#define CTR_TYPE_INTERRUPT 2
#define CTR_TYPE_TAKEN_BRANCH 5
#define CTR_TYPE_DIRECT_JUMP 11

#define ONLY_M (EV_SINH | EV_UINH | EV_VSINH | EV_VUINH)
#define ONLY_S (EV_MINH | EV_UINH | EV_VSINH | EV_VUINH)
#define ONLY_VS (EV_MINH | EV_SINH | EV_UINH | EV_VUINH)

/* clang-format off */
long pc_tk_m(long, long), pc_tk(long, long);
extern char pc_jmp[], pc_tk_br[], pc_tk_target[];
__asm__(".pushsection .text\n.option push\n.option norvc\n"
	/* A direct jump, then the causal taken branch. The M entry enables
	   the counters (a0) and restores mcountinhibit (a1) at the end. */
	".globl pc_tk_m\npc_tk_m:\n"
	"	csrw 0x320, a0\n"
	"	mv a0, a1\n"
	".globl pc_tk\npc_tk:\n"
	"	li t1, 1\n"
	".globl pc_jmp\npc_jmp:\n"
	"	j 1f\n"
	"	nop\n"
	"1:\n"
	".globl pc_tk_br\npc_tk_br:\n"
	"	bnez t1, pc_tk_target\n"
	"	nop\n	nop\n"
	".globl pc_tk_target\npc_tk_target:\n"
	"	nop\n	nop\n	nop\n	nop\n"
	"	beqz a0, 2f\n"
	"	csrw 0x320, a0\n"
	"2:	ret\n"
	".option pop\n.popsection\n");
/* clang-format on */

static volatile u64 irqs, irq_epc, irq_spc, irq_status;

static void m_irq(u64 cause, struct rt_frame *f)
{
	(void)cause;
	(void)f;
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	irqs++;
	irq_epc = csr_read(mepc);
	irq_spc = csrr_n(CSR_SHPMSPC);
	irq_status = csrr_n(CSR_SCTRSTATUS);
	csrc_n(CSR_MIP, MIP_LCOFIP);
	csrc_n(CSR_MIE, MIP_LCOFIP);
}

static void s_irq(u64 cause, struct rt_frame *f)
{
	(void)cause;
	(void)f;
	irqs++;
	irq_epc = csr_read(sepc);
	irq_spc = csrr_n(CSR_SHPMSPC);
	irq_status = csrr_n(CSR_SCTRSTATUS);
	csrc_n(CSR_SIP, MIP_LCOFIP);
	csrc_n(CSR_SIE, MIP_LCOFIP);
}

/* VS: shpmspc (virtual-instruction) is read by M afterwards. */
static void vs_irq(u64 cause, struct rt_frame *f)
{
	(void)cause;
	(void)f;
	irqs++;
	irq_epc = csr_read(sepc);
	irq_status = csrr_n(CSR_SCTRSTATUS);
	csrc_n(CSR_SIP, MIP_LCOFIP);
	csrc_n(CSR_SIE, MIP_LCOFIP);
}

/* Logical entry i (0: the newest), read from M through siselect 0x200 + i. */
struct entry {
	u64 source, target, data;
};

static struct entry ctr_entry(u64 i)
{
	struct entry e;
	csrw_n(CSR_SISELECT, 0x200 + i);
	e.source = csrr_n(CSR_SIREG);
	e.target = csrr_n(CSR_SIREG2);
	e.data = csrr_n(CSR_SIREG3);
	return e;
}

static void ctr_reset(void)
{
	csrw_n(CSR_MCTRCTL, 0);
	csrw_n(CSR_VSCTRCTL, 0);
	__asm__ volatile(".word 0x10400073" ::: "memory"); /* sctrclr */
	csrw_n(CSR_SCTRSTATUS, 0);
}

enum where { IN_M, IN_S, IN_VS };

/*
 * Runs pc_tk in `w` with mctrctl/vsctrctl as given and counter i counting
 * taken branches there from 2^64 - 1; the LCOFI is taken in the same mode.
 */
static void run(enum where w, u64 i, u64 mctrctl, u64 vsctrctl)
{
	pmu_quiet();
	ctr_reset();
	irqs = irq_epc = irq_spc = irq_status = 0;
	csrw_n(CSR_SHPMSPC, 0);
	u64 filt = w == IN_M ? ONLY_M : w == IN_S ? ONLY_S : ONLY_VS;
	pmu_wr_event(i, EV_BR_TAKEN | filt);
	pmu_wr_counter(i, -1UL);
	if (w == IN_M) {
		h_m_irq = m_irq;
		csrs_n(CSR_MIE, MIP_LCOFIP);
		csr_set(mstatus, MSTATUS_MIE);
		csrw_n(CSR_VSCTRCTL, vsctrctl);
		csrw_n(CSR_MCTRCTL, mctrctl);
		pc_tk_m(~2UL & ~(1UL << i), ~2UL);
		csrw_n(CSR_MCTRCTL, 0);
		csr_clear(mstatus, MSTATUS_MIE);
		h_m_irq = 0;
	} else {
		csrw_n(CSR_MENVCFG, MENVCFG_CDE);
		csrw_n(CSR_MCOUNTEREN, ~0UL);
		csrw_n(CSR_MIDELEG, MIP_LCOFIP);
		if (w == IN_VS) {
			csrw_n(CSR_HIDELEG, MIP_LCOFIP);
			csrs_n(CSR_VSIE, MIP_LCOFIP);
			csrs_n(CSR_VSSTATUS, SSTATUS_SIE);
			h_vs_irq = vs_irq;
		} else {
			csrs_n(CSR_SIE, MIP_LCOFIP);
			csr_set(sstatus, SSTATUS_SIE);
		}
		h_s_irq = s_irq;
		csrw_n(CSR_MCOUNTINHIBIT, ~2UL & ~(1UL << i));
		csrw_n(CSR_VSCTRCTL, vsctrctl);
		csrw_n(CSR_MCTRCTL, mctrctl);
		h_reset();
		h_run(w == IN_VS, MODE_S, pc_tk, 0, 0);
		csrw_n(CSR_MCTRCTL, 0);
		csrw_n(CSR_VSCTRCTL, 0);
		csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
		csr_clear(sstatus, SSTATUS_SIE);
		csrc_n(CSR_VSSTATUS, SSTATUS_SIE);
		h_s_irq = h_vs_irq = 0;
		rt_check("  no exception in the run",
			 h_m.count + h_s.count + h_vs.count, 0);
		csrw_n(CSR_HIDELEG, 0);
		csrw_n(CSR_MIDELEG, 0);
		csrw_n(CSR_MCOUNTEREN, 0);
		csrw_n(CSR_MENVCFG, 0);
		irq_spc = csrr_n(CSR_SHPMSPC);
	}
	rt_check("  LCOFIs taken", irqs, 1);
	rt_check("  shpmspc = the overflowing taken branch", irq_spc,
		 (u64)pc_tk_br);
	rt_check("  xepc = its target (the next instruction executed)",
		 irq_epc, (u64)pc_tk_target);
	pmu_quiet();
}

static void frozen(const char *name, enum where w, u64 i, u64 mctrctl,
		   u64 vsctrctl)
{
	rt_puts("-- ");
	rt_puts(name);
	rt_puts("\n");
	run(w, i, mctrctl, vsctrctl);
	rt_check("  sctrstatus.FROZEN in the LCOFI handler",
		 irq_status & STATUS_FROZEN, STATUS_FROZEN);
	rt_check("  sctrstatus.FROZEN afterwards",
		 csrr_n(CSR_SCTRSTATUS) & STATUS_FROZEN, STATUS_FROZEN);
	struct entry e0 = ctr_entry(0), e1 = ctr_entry(1);
	rt_check("  newest entry: source = shpmspc (V = 1)", e0.source,
		 csrr_n(CSR_SHPMSPC) | 1);
	rt_check("  newest entry: target = the LCOFI's xepc",
		 e0.target & ~1UL, irq_epc);
	rt_check("  newest entry: type taken branch (not the trap)",
		 e0.data & 0xf, CTR_TYPE_TAKEN_BRANCH);
	rt_check("  entry 1: the jump before it", e1.source, (u64)pc_jmp | 1);
	rt_check("  entry 1: type direct jump", e1.data & 0xf,
		 CTR_TYPE_DIRECT_JUMP);
	ctr_reset();
}

/* LCOFIFRZ clear in the governing register: the trap is recorded. */
static void not_frozen(const char *name, enum where w, u64 i, u64 mctrctl,
		       u64 vsctrctl, u64 handler)
{
	rt_puts("-- ");
	rt_puts(name);
	rt_puts("\n");
	run(w, i, mctrctl, vsctrctl);
	rt_check("  sctrstatus.FROZEN = 0",
		 csrr_n(CSR_SCTRSTATUS) & STATUS_FROZEN, 0);
	int found = 0;
	for (u64 k = 0; k < 16 && !found; k++) {
		struct entry e = ctr_entry(k);
		if ((e.data & 0xf) != CTR_TYPE_INTERRUPT)
			continue;
		found = 1;
		rt_check("  the LCOFI recorded: target = the trap handler",
			 e.target & ~1UL, handler);
		rt_check("  the LCOFI recorded: source = xepc (V = 1)",
			 e.source, irq_epc | 1);
		struct entry b = ctr_entry(k + 1);
		rt_check("  the entry before it: the branch, source = shpmspc",
			 b.source, irq_spc | 1);
	}
	rt_check_true("  an interrupt entry among the newest 16", found);
	ctr_reset();
}

int main(void)
{
	pmu_start("pmu_ctr");
	rt_trap_ok = 1;
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0 | STATEEN_CTR);
	csrw_n(CSR_HSTATEEN0, STATEEN_CSRIND | STATEEN_SE0 | STATEEN_CTR);
	frozen("M: mctrctl = M | LCOFIFRZ, counter 3", IN_M, 3, CTL_M | CTL_LCOFIFRZ,
	       0);
	frozen("S: mctrctl = S | LCOFIFRZ, counter 12 delegated, mideleg.LCOFI",
	       IN_S, 12, CTL_S | CTL_LCOFIFRZ, 0);
	frozen("VS: vsctrctl = S | LCOFIFRZ, hideleg.LCOFI, counter 6", IN_VS, 6,
	       0, CTL_S | CTL_LCOFIFRZ);
	not_frozen("M: mctrctl = M (LCOFIFRZ = 0)", IN_M, 3, CTL_M, 0,
		   (u64)h_m_entry);
	not_frozen("VS: vsctrctl = S, mctrctl.LCOFIFRZ = 1 (governs M and S "
		   "only)",
		   IN_VS, 6, CTL_LCOFIFRZ, CTL_S, (u64)h_vs_entry);
	return rt_finish("pmu_ctr");
}
