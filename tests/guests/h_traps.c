/*
 * h_traps: trap entry and return with V=1.
 *
 * mret with MPV=1 (run_vs/run_vu) enters VS/VU; ecall from VS is cause 10,
 * from VU cause 8; medeleg passes exceptions to HS (scause, sepc,
 * hstatus.SPV/SPVP/GVA, sstatus.SPP), hedeleg on to VS (vscause, vsepc,
 * vsstatus.SPP/SPIE/SIE, vstvec); SRET from HS with hstatus.SPV=1 enters
 * VS; SRET in VS stays in VS; VS-level interrupts from hvip go to VS as
 * S-level codes 1/5/9 when hideleg delegates them, else to HS as 2/6/10.
 */
#include "h.h"

long hs_sret_to_vs(long, long);
extern char vs_target[];
/* HS: sret with SPV=1, SPP=1 into vs_target, which ecalls (a7 = 0:
   recorded as cause 10) and then ends the run. */
__asm__(".pushsection .text\n.option push\n.option norvc\n"
	".globl hs_sret_to_vs\nhs_sret_to_vs:\n"
	"	li t0, 0x80\n	csrs 0x600, t0\n"  /* hstatus.SPV */
	"	li t0, 0x100\n	csrs sstatus, t0\n" /* SPP = S */
	"	la t0, vs_target\n	csrw sepc, t0\n	sret\n"
	".globl vs_target\nvs_target:\n"
	"	li a7, 0\n	ecall\n"
	"	li a0, 0x77\n	li a7, " H_STR(RT_MAGIC) "\n	ecall\n"
	".option pop\n.popsection\n");

static volatile u64 irq_cause, irq_count;

static void vs_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	irq_cause = cause;
	irq_count++;
	/* Stop it: SSIP is clearable in VS (-> hvip.VSSIP); the others are
	   masked in vsie. */
	if (cause == 1)
		csr_clear(sip, 2);
	else
		csr_clear(sie, 1UL << cause);
}

static void hs_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	irq_cause = cause;
	irq_count++;
	csrc_n(CSR_HVIP, 1UL << cause);
}

/* VS: enable the given sie bits and SIE, wait a little, disable. */
static long vs_wait_irq(long sie_bits, long a1)
{
	(void)a1;
	csr_set(sie, sie_bits);
	csr_set(sstatus, SSTATUS_SIE);
	for (int i = 0; i < 1000 && !irq_count; i++)
		__asm__ volatile("nop");
	csr_clear(sstatus, SSTATUS_SIE);
	csr_clear(sie, sie_bits);
	return (long)irq_count;
}

static long vs_sret_probe(long a0, long a1)
{
	return hp_sret(a0, a1);
}

static void test_exceptions(void)
{
	/* Not delegated: M sees MPV. */
	h_reset();
	run_vs(hp_ecall, 0, 0);
	rt_check("VS ecall -> M cause 10", h_m.cause, CAUSE_ECALL_VS);
	rt_check("  mstatus.MPV = 1", (h_m.status & MSTATUS_MPV) != 0, 1);
	rt_check("  mstatus.MPP = S", (h_m.status >> 11) & 3, 1);
	rt_check("  mstatus.GVA = 0", (h_m.status & MSTATUS_GVA) != 0, 0);
	rt_check("  mepc", h_m.epc, (u64)hp_ecall);
	h_reset();
	run_vu(hp_ecall, 0, 0);
	rt_check("VU ecall -> M cause 8", h_m.cause, CAUSE_ECALL_U);
	rt_check("  mstatus.MPV = 1", (h_m.status & MSTATUS_MPV) != 0, 1);
	rt_check("  mstatus.MPP = U", (h_m.status >> 11) & 3, 0);

	/* medeleg: to HS. */
	csr_write(medeleg, (1UL << CAUSE_ECALL_VS) | (1UL << CAUSE_ECALL_U) |
				   (1UL << CAUSE_BREAKPOINT));
	h_reset();
	run_vs(hp_ecall, 0, 0);
	rt_check("VS ecall -> HS cause 10", h_s.count ? h_s.cause : ~0UL,
		 CAUSE_ECALL_VS);
	rt_check("  sepc", h_s.epc, (u64)hp_ecall);
	rt_check("  hstatus.SPV = 1", (h_s.hstatus & HSTATUS_SPV) != 0, 1);
	rt_check("  hstatus.SPVP = 1", (h_s.hstatus & HSTATUS_SPVP) != 0, 1);
	rt_check("  sstatus.SPP = 1", (h_s.status & SSTATUS_SPP) != 0, 1);
	rt_check("  hstatus.GVA = 0", (h_s.hstatus & HSTATUS_GVA) != 0, 0);
	rt_check("  M not involved", h_m.count, 0);
	h_reset();
	run_vu(hp_ecall, 0, 0);
	rt_check("VU ecall -> HS cause 8", h_s.count ? h_s.cause : ~0UL,
		 CAUSE_ECALL_U);
	rt_check("  hstatus.SPVP = 0", (h_s.hstatus & HSTATUS_SPVP) != 0, 0);
	rt_check("  sstatus.SPP = 0", (h_s.status & SSTATUS_SPP) != 0, 0);
	rt_check("  hstatus.SPV = 1", (h_s.hstatus & HSTATUS_SPV) != 0, 1);
	h_reset();
	run_hs(hp_ecall, 0, 0);
	rt_check("HS ecall -> M cause 9 (not delegated)", h_m.cause,
		 CAUSE_ECALL_HS);
	rt_check("  mstatus.MPV = 0", (h_m.status & MSTATUS_MPV) != 0, 0);

	/* hedeleg: on to VS. */
	csrw_n(CSR_HEDELEG, (1UL << CAUSE_ECALL_U) | (1UL << CAUSE_BREAKPOINT));
	csrw_n(CSR_VSSTATUS, MSTATUS_FS_INITIAL | SSTATUS_SIE);
	h_reset();
	run_vu(hp_ecall, 0, 0);
	rt_check("VU ecall -> VS cause 8", h_vs.count ? h_vs.cause : ~0UL,
		 CAUSE_ECALL_U);
	rt_check("  vsepc", h_vs.epc, (u64)hp_ecall);
	rt_check("  vsstatus.SPP = 0", (h_vs.status & SSTATUS_SPP) != 0, 0);
	rt_check("  vsstatus.SPIE = old SIE (1)",
		 (h_vs.status & SSTATUS_SPIE) != 0, 1);
	rt_check("  vsstatus.SIE = 0 in handler",
		 (h_vs.status & SSTATUS_SIE) != 0, 0);
	rt_check("  HS/M not involved", h_s.count + h_m.count, 0);
	csrw_n(CSR_VSSTATUS, MSTATUS_FS_INITIAL);
	h_reset();
	run_vs(hp_ebreak, 0, 0);
	rt_check("VS ebreak -> VS cause 3", h_vs.count ? h_vs.cause : ~0UL,
		 CAUSE_BREAKPOINT);
	rt_check("  vsstatus.SPP = 1", (h_vs.status & SSTATUS_SPP) != 0, 1);
	rt_check("  vsstatus.SPIE = old SIE (0)",
		 (h_vs.status & SSTATUS_SPIE) != 0, 0);
	rt_check("  vsepc", h_vs.epc, (u64)hp_ebreak);
	rt_check_true("  vstval = 0 or pc",
		      h_vs.tval == 0 || h_vs.tval == (u64)hp_ebreak);
	rt_check("  vscause CSR after", csrr_n(CSR_VSCAUSE), CAUSE_BREAKPOINT);
	rt_check("  HS scause untouched by VS trap", h_s.count, 0);
	/* hedeleg without medeleg has no effect: M takes it. */
	csr_write(medeleg, 0);
	h_reset();
	run_vs(hp_ebreak, 0, 0);
	rt_check("VS ebreak, hedeleg only -> M", h_m.count ? h_m.cause : ~0UL,
		 CAUSE_BREAKPOINT);
	rt_check("  VS not involved", h_vs.count, 0);
	csrw_n(CSR_HEDELEG, 0);

	/* SRET from HS with SPV=1 enters VS; SRET in VS stays in VS. */
	h_reset();
	long r = run_hs(hs_sret_to_vs, 0, 0);
	rt_check("HS sret with SPV=1 -> VS (ecall cause 10)", h_m.cause,
		 CAUSE_ECALL_VS);
	rt_check("  run result", (u64)r, 0x77);
	rt_check("  hstatus.SPV cleared by sret",
		 (csrr_n(CSR_HSTATUS) & HSTATUS_SPV) != 0, 0);
	h_reset();
	csrw_n(CSR_VSSTATUS, MSTATUS_FS_INITIAL | SSTATUS_SPP | SSTATUS_SPIE);
	run_vs(vs_sret_probe, 0, 0);
	rt_check("VS sret stays in VS (no trap)", h_m.count + h_s.count, 0);
	rt_check("  vsstatus.SIE = SPIE, SPP cleared",
		 csrr_n(CSR_VSSTATUS) & (SSTATUS_SIE | SSTATUS_SPP | SSTATUS_SPIE),
		 SSTATUS_SIE | SSTATUS_SPIE);
	csrw_n(CSR_VSSTATUS, MSTATUS_FS_INITIAL);
}

static void test_interrupts(void)
{
	h_vs_irq = vs_irq;
	h_s_irq = hs_irq;
	static const struct {
		const char *name;
		u64 hbit, vsbit;
	} irq[] = {
		{ "VSSIP", IRQ_VSSI, 1 },
		{ "VSTIP", IRQ_VSTI, 5 },
		{ "VSEIP", IRQ_VSEI, 9 },
	};
	char name[80];
	for (int i = 0; i < 3; i++) {
		/* Delegated through hideleg: VS sees the S-level code. */
		csrw_n(CSR_HIDELEG, 1UL << irq[i].hbit);
		csrw_n(CSR_HIE, 0);
		csrw_n(CSR_HVIP, 1UL << irq[i].hbit);
		irq_count = irq_cause = 0;
		run_vs(vs_wait_irq, 1L << irq[i].vsbit, 0);
		memcpy(name, irq[i].name, 6);
		memcpy(name + 5, " hideleg=1 -> VS code", 22);
		rt_check(name, irq_count ? irq_cause : ~0UL, irq[i].vsbit);
		csrw_n(CSR_HVIP, 0);
		/* Not delegated: HS takes it with the VS code (hie enables). */
		csrw_n(CSR_HIDELEG, 0);
		csrw_n(CSR_HIE, 1UL << irq[i].hbit);
		csrw_n(CSR_HVIP, 1UL << irq[i].hbit);
		irq_count = irq_cause = 0;
		run_vs(vs_wait_irq, 0, 0);
		memcpy(name + 5, " hideleg=0 -> HS code", 22);
		rt_check(name, irq_count ? irq_cause : ~0UL, irq[i].hbit);
		csrw_n(CSR_HVIP, 0);
		csrw_n(CSR_HIE, 0);
	}
	/* Delegated but vsstatus.SIE = 0 in VS: not taken; taken in VU. */
	csrw_n(CSR_HIDELEG, MIP_VSSIP);
	csrw_n(CSR_VSIE, 2);
	csrw_n(CSR_HVIP, MIP_VSSIP);
	irq_count = 0;
	run_vs(hp_nop, 0, 0);
	rt_check("VSSIP pending, VS with SIE=0: not taken", irq_count, 0);
	run_vu(hp_nop, 0, 0);
	rt_check("VSSIP pending, VU: taken in VS", irq_count ? irq_cause : ~0UL,
		 1);
	csrw_n(CSR_HVIP, 0);
	csrw_n(CSR_VSIE, 0);
	csrw_n(CSR_HIDELEG, 0);
	h_vs_irq = 0;
	h_s_irq = 0;
}

int main(void)
{
	h_init();
	test_exceptions();
	test_interrupts();
	return rt_finish("h_traps");
}
