/*
 * hx: the H-level halves of Smstateen, Sscsrind, Sstc and Ssaia (no IMSIC),
 * seen from M, HS, VS and VU.
 *
 * hstateen0 and the illegal (mstateen bit 0) versus virtual-instruction
 * (mstateen 1, hstateen 0) rule; siselect/sireg* as vsiselect/vsireg* in VS
 * with the AIA's inaccessible select values (virtual) and reserved ones
 * (illegal); vstimecmp with henvcfg.STCE and hcounteren.TM, VSTIP and a VS
 * timer interrupt; hvien/hvip virtual interrupts, hvictl (VTI, IID, DPR,
 * IPRIOM, IPRIO), vstopi, and the interrupt VS takes with cause IID.
 *
 * vmm only: QEMU 7.2 has no Smstateen, Smcsrind nor hvictl/vstopi; QEMU
 * 10.0 has them only as non-default CPU properties, with other choices.
 */
#include "h.h"
#include "csr.h"


#define SE0 (1UL << 63)
#define ENVCFG (1UL << 62)
#define CSRIND (1UL << 60)
#define AIA (1UL << 59)
#define ALL (SE0 | ENVCFG | CSRIND | AIA)
#define STCE (1UL << 63)
#define TM 2UL
#define VTI (1UL << 30)
#define IID(i) ((u64)(i) << 16)
#define IPRIOM (1UL << 8)

H_CSRR_PROBE(rd_sstateen0, CSR_SSTATEEN0);
H_CSRR_PROBE(rd_senvcfg, CSR_SENVCFG);
H_CSRR_PROBE(rd_hstateen0, CSR_HSTATEEN0);
H_CSRR_PROBE(rd_siselect, CSR_SISELECT);
H_CSRW_PROBE(wr_siselect, CSR_SISELECT);
H_CSRR_PROBE(rd_sireg, CSR_SIREG);
H_CSRR_PROBE(rd_sireg2, CSR_SIREG2);
H_CSRR_PROBE(rd_vsiselect, CSR_VSISELECT);
H_CSRR_PROBE(rd_vsireg, CSR_VSIREG);
H_CSRR_PROBE(rd_stimecmp, CSR_STIMECMP);
H_CSRW_PROBE(wr_stimecmp, CSR_STIMECMP);
H_CSRR_PROBE(rd_vstimecmp, CSR_VSTIMECMP);
H_CSRR_PROBE(rd_stopi, CSR_STOPI);
H_CSRR_PROBE(rd_vstopi, CSR_VSTOPI);
H_CSRR_PROBE(rd_hvictl, CSR_HVICTL);
H_CSRR_PROBE(rd_sip, CSR_SIP);
H_CSRW_PROBE(wr_sie, CSR_SIE);

#define VS(name, fn, a0, cause) expect(name, 1, MODE_S, (rt_fn)(fn), a0, cause, 0)
#define VU(name, fn, a0, cause) expect(name, 1, MODE_U, (rt_fn)(fn), a0, cause, 0)
#define HS(name, fn, a0, cause) expect(name, 0, MODE_S, (rt_fn)(fn), a0, cause, 0)

static void stateen(u64 m0, u64 h0)
{
	csrw_n(CSR_MSTATEEN0, m0);
	csrw_n(CSR_HSTATEEN0, h0);
}

static void test_stateen(void)
{
	rt_puts("-- hstateen0\n");
	stateen(~0UL, ~0UL);
	rt_check("hstateen0 with mstateen0 = ~0", csrr_n(CSR_HSTATEEN0),
		 ALL | (1UL << 54) /* CTR */ | (1UL << 53) /* PDIS */);
	csrw_n(CSR_MSTATEEN0, ALL & ~ENVCFG);
	rt_check("hstateen0.ENVCFG hidden by mstateen0",
		 csrr_n(CSR_HSTATEEN0), ALL & ~ENVCFG);
	csrw_n(CSR_MSTATEEN0, ALL);
	rt_check("hstateen0.ENVCFG back", csrr_n(CSR_HSTATEEN0), ALL);
	rt_check("hstateen0.CTR (54) reads 0 while mstateen0.CTR = 0",
		 (csrr_n(CSR_HSTATEEN0) >> 54) & 1, 0);

	rt_puts("-- stateen from HS, VS, VU\n");
	stateen(ALL & ~SE0, ALL);
	HS("HS hstateen0, mstateen0.SE0 = 0", rd_hstateen0, 0, CAUSE_ILLEGAL);
	VS("VS sstateen0, mstateen0.SE0 = 0", rd_sstateen0, 0, CAUSE_ILLEGAL);
	stateen(ALL, ALL & ~SE0);
	HS("HS hstateen0, mstateen0.SE0 = 1", rd_hstateen0, 0, NO_TRAP);
	VS("VS hstateen0", rd_hstateen0, 0, CAUSE_VIRT_INSN);
	VS("VS sstateen0, hstateen0.SE0 = 0", rd_sstateen0, 0, CAUSE_VIRT_INSN);
	stateen(ALL, ALL);
	VS("VS sstateen0, both SE0 = 1", rd_sstateen0, 0, NO_TRAP);
	VU("VU sstateen0", rd_sstateen0, 0, CAUSE_VIRT_INSN);
	stateen(ALL & ~ENVCFG, ALL);
	VS("VS senvcfg, mstateen0.ENVCFG = 0", rd_senvcfg, 0, CAUSE_ILLEGAL);
	stateen(ALL, ALL & ~ENVCFG);
	VS("VS senvcfg, hstateen0.ENVCFG = 0", rd_senvcfg, 0, CAUSE_VIRT_INSN);
	stateen(ALL & ~CSRIND, ALL);
	VS("VS siselect, mstateen0.CSRIND = 0", rd_siselect, 0, CAUSE_ILLEGAL);
	stateen(ALL, ALL & ~CSRIND);
	VS("VS siselect, hstateen0.CSRIND = 0", rd_siselect, 0,
	   CAUSE_VIRT_INSN);
	stateen(ALL & ~AIA, ALL);
	VS("VS stopi, mstateen0.AIA = 0", rd_stopi, 0, CAUSE_ILLEGAL);
	HS("HS hvictl, mstateen0.AIA = 0", rd_hvictl, 0, CAUSE_ILLEGAL);
	stateen(ALL, ALL & ~AIA);
	VS("VS stopi, hstateen0.AIA = 0", rd_stopi, 0, CAUSE_VIRT_INSN);
	stateen(ALL, ALL);
}

static void test_csrind(void)
{
	rt_puts("-- vsiselect, vsireg\n");
	csrw_n(CSR_SISELECT, 0x30);
	csrw_n(CSR_VSISELECT, 0x1ff);
	rt_check("vsiselect holds 0x1ff", csrr_n(CSR_VSISELECT), 0x1ff);
	h_reset();
	long r = run_vs(wr_siselect, 0x3f, 0);
	rt_check("VS siselect reads vsiselect", (u64)r, 0x1ff);
	rt_check("  VS write reaches vsiselect", csrr_n(CSR_VSISELECT), 0x3f);
	rt_check("  siselect untouched", csrr_n(CSR_SISELECT), 0x30);
	VS("VS sireg, vsiselect 0x3f (inaccessible)", rd_sireg, 0,
	   CAUSE_VIRT_INSN);
	VS("VS sireg2, vsiselect 0x3f", rd_sireg2, 0, CAUSE_VIRT_INSN);
	csrw_n(CSR_VSISELECT, 0x70);
	VS("VS sireg, vsiselect 0x70 (no IMSIC)", rd_sireg, 0, CAUSE_VIRT_INSN);
	csrw_n(CSR_VSISELECT, 0x40);
	VS("VS sireg, vsiselect 0x40 (reserved)", rd_sireg, 0, CAUSE_ILLEGAL);
	VU("VU sireg", rd_sireg, 0, CAUSE_VIRT_INSN);
	VS("VS vsiselect (by number)", rd_vsiselect, 0, CAUSE_VIRT_INSN);
	csrw_n(CSR_VSISELECT, 0x30);
	HS("HS vsireg, vsiselect 0x30", rd_vsireg, 0, CAUSE_ILLEGAL);
	HS("HS sireg, siselect 0x30 (iprio0)", rd_sireg, 0, NO_TRAP);
}

static volatile u64 irq_cause, irq_count;

static void vs_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	irq_cause = cause;
	irq_count++;
	/* Return with SIE = 0: the source may be out of VS's reach. */
	csr_clear(sstatus, SSTATUS_SPIE);
}

static long vs_wait_irq(long a0, long a1)
{
	(void)a0;
	(void)a1;
	csr_set(sstatus, SSTATUS_SIE);
	for (int i = 0; i < 2000 && !irq_count; i++)
		__asm__ volatile("nop");
	csr_clear(sstatus, SSTATUS_SIE);
	return (long)irq_count;
}

static void test_sstc(void)
{
	rt_puts("-- vstimecmp\n");
	csr_write(mcounteren, TM);
	csrw_n(CSR_HCOUNTEREN, TM);
	csrw_n(CSR_MENVCFG, 0);
	csrw_n(CSR_HENVCFG, STCE);
	rt_check("henvcfg.STCE with menvcfg.STCE = 0", csrr_n(CSR_HENVCFG) >> 63,
		 0);
	VS("VS stimecmp, menvcfg.STCE = 0", rd_stimecmp, 0, CAUSE_ILLEGAL);
	HS("HS vstimecmp, menvcfg.STCE = 0", rd_vstimecmp, 0, CAUSE_ILLEGAL);
	csrw_n(CSR_MENVCFG, STCE);
	csrw_n(CSR_HENVCFG, 0);
	VS("VS stimecmp, henvcfg.STCE = 0", rd_stimecmp, 0, CAUSE_VIRT_INSN);
	csrw_n(CSR_HENVCFG, STCE);
	rt_check("henvcfg.STCE", csrr_n(CSR_HENVCFG) >> 63, 1);
	csrw_n(CSR_HCOUNTEREN, 0);
	VS("VS stimecmp, hcounteren.TM = 0", rd_stimecmp, 0, CAUSE_VIRT_INSN);
	csrw_n(CSR_HCOUNTEREN, TM);
	HS("HS vstimecmp", rd_vstimecmp, 0, NO_TRAP);
	csrw_n(CSR_HVICTL, VTI | IID(9));
	VS("VS stimecmp write, hvictl.VTI = 1", wr_stimecmp, ~0L,
	   CAUSE_VIRT_INSN);
	csrw_n(CSR_HVICTL, 0);
	csrw_n(CSR_STIMECMP, ~0UL);
	csrw_n(CSR_VSTIMECMP, 123);
	h_reset();
	long r = run_vs(wr_stimecmp, -1L, 0);
	rt_check("VS stimecmp reads vstimecmp", (u64)r, 123);
	rt_check("  VS write reaches vstimecmp", csrr_n(CSR_VSTIMECMP), ~0UL);
	rt_check("  stimecmp untouched", csrr_n(CSR_STIMECMP), ~0UL);

	csrw_n(CSR_HTIMEDELTA, 1UL << 40);
	csrw_n(CSR_VSTIMECMP, (1UL << 40) - 1);
	rt_check("hip.VSTIP from vstimecmp", (csrr_n(CSR_HIP) >> IRQ_VSTI) & 1,
		 1);
	csrw_n(CSR_VSTIMECMP, ~0UL);
	rt_check("hip.VSTIP cleared", (csrr_n(CSR_HIP) >> IRQ_VSTI) & 1, 0);

	/* A VS timer interrupt a little in the future. */
	h_vs_irq = vs_irq;
	csrw_n(CSR_HIDELEG, MIP_VSTIP);
	csrw_n(CSR_HIE, MIP_VSTIP);
	irq_count = irq_cause = 0;
	csrw_n(CSR_VSTIMECMP, csr_read(time) + (1UL << 40) + 50);
	run_vs(vs_wait_irq, 0, 0);
	rt_check("VS timer interrupt from vstimecmp (code 5)",
		 irq_count ? irq_cause : ~0UL, 5);
	csrw_n(CSR_VSTIMECMP, ~0UL);
	csrw_n(CSR_HIE, 0);
	csrw_n(CSR_HIDELEG, 0);
	csrw_n(CSR_HTIMEDELTA, 0);
	csrw_n(CSR_HENVCFG, 0);
	csrw_n(CSR_MENVCFG, 0);
	h_vs_irq = 0;
}

static void test_aia(void)
{
	rt_puts("-- hvien, hvictl, vstopi\n");
	csrw_n(CSR_HVIEN, ~0UL);
	rt_print_hex("info hvien writable", csrr_n(CSR_HVIEN));
	rt_check("hvien bits 12:0 read-only 0", csrr_n(CSR_HVIEN) & 0x1fff, 0);
	csrw_n(CSR_HVIEN, 0);
	csrw_n(CSR_HVICTL, ~0UL);
	rt_print_hex("info hvictl writable", csrr_n(CSR_HVICTL));
	rt_check("hvictl VTI, DPR, IPRIOM, IPRIO",
		 csrr_n(CSR_HVICTL) & ~IID(0xfff), VTI | 0x3ff);
	csrw_n(CSR_HVICTL, 0);
	csrw_n(CSR_HVIPRIO1, ~0UL);
	rt_print_hex("info hviprio1 writable", csrr_n(CSR_HVIPRIO1));
	csrw_n(CSR_HVIPRIO1, 0);

	rt_check("vstopi, nothing pending", csrr_n(CSR_VSTOPI), 0);
	csrw_n(CSR_HIDELEG, MIP_VSSIP | MIP_VSEIP);
	csrw_n(CSR_HIE, MIP_VSSIP | MIP_VSEIP);
	csrw_n(CSR_HVIP, MIP_VSSIP);
	rt_check("vstopi, VSSIP", csrr_n(CSR_VSTOPI), IID(1) | 1);
	csrw_n(CSR_HVIP, MIP_VSSIP | MIP_VSEIP);
	rt_check("vstopi, VSSIP + VSEIP", csrr_n(CSR_VSTOPI), IID(9) | 1);
	csrw_n(CSR_HVICTL, IPRIOM | IID(9) | 7);
	rt_check("vstopi, SEI with hvictl IPRIO 7", csrr_n(CSR_VSTOPI),
		 IID(9) | 7);
	csrw_n(CSR_HVICTL, VTI | IID(30) | IPRIOM | 5);
	rt_check("vstopi, hvictl IID 30 IPRIO 5 beats SEI", csrr_n(CSR_VSTOPI),
		 IID(30) | 5);
	csrw_n(CSR_HVICTL, VTI | IID(30) | (1UL << 9));
	rt_check("vstopi, hvictl IID 30 IPRIO 0 DPR 1 loses to SEI",
		 csrr_n(CSR_VSTOPI), IID(9) | 1);
	csrw_n(CSR_HVICTL, IID(30));
	csrw_n(CSR_HVIP, 0);
	rt_check("vstopi, hvictl VTI = 0 IID 30: nothing", csrr_n(CSR_VSTOPI),
		 0);
	csrw_n(CSR_HVICTL, VTI | IID(9));
	VS("VS sip, hvictl.VTI = 1", rd_sip, 0, CAUSE_VIRT_INSN);
	VS("VS sie write, hvictl.VTI = 1", wr_sie, 0, CAUSE_VIRT_INSN);
	HS("HS sip, hvictl.VTI = 1", rd_sip, 0, NO_TRAP);
	VS("VS hvictl", rd_hvictl, 0, CAUSE_VIRT_INSN);
	VS("VS vstopi (by number)", rd_vstopi, 0, CAUSE_VIRT_INSN);
	csrw_n(CSR_HVICTL, VTI | IID(30) | IPRIOM | 9);
	h_reset();
	long r = run_vs(rd_stopi, 0, 0);
	rt_check("VS stopi reads vstopi", (u64)r, IID(30) | 9);

	rt_puts("-- interrupts VS takes\n");
	h_vs_irq = vs_irq;
	irq_count = irq_cause = 0;
	run_vs(vs_wait_irq, 0, 0);
	rt_check("hvictl IID 30 taken in VS with code 30",
		 irq_count ? irq_cause : ~0UL, 30);
	csrw_n(CSR_HVICTL, 0);
	csrw_n(CSR_HVIEN, 1UL << 33);
	csrw_n(CSR_HVIP, 1UL << 33);
	csrw_n(CSR_VSIE, 1UL << 33);
	rt_check("vsip bit 33 from hvip", csrr_n(CSR_VSIP), 1UL << 33);
	rt_check("mip has no bit 33", (csr_read(mip) >> 33) & 1, 0);
	irq_count = irq_cause = 0;
	run_vs(vs_wait_irq, 0, 0);
	rt_check("hvien/hvip interrupt 33 taken in VS", irq_count ? irq_cause : ~0UL,
		 33);
	csrw_n(CSR_HVIP, 0);
	csrw_n(CSR_VSIE, 0);
	csrw_n(CSR_HVIEN, 0);
	csrw_n(CSR_HIE, 0);
	csrw_n(CSR_HIDELEG, 0);
	h_vs_irq = 0;
}

int main(void)
{
	h_init();
	test_stateen();
	test_csrind();
	test_sstc();
	test_aia();
	return rt_finish("hx");
}
