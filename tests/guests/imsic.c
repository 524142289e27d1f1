/*
 * imsic: the hart's IMSIC (AIA, "Incoming MSI Controller (IMSIC)"), run on
 * `vmm machine --aia imsic` (QEMU: -M virt,aia=aplic-imsic,aia-guests=7 with
 * Smaia/Ssaia and Smstateen on). The guest writes MSIs to the seteipnum_le
 * registers of its own interrupt files' pages (machine-level page at
 * 0x2400_0000, supervisor-level page at 0x2800_0000, guest file g in the
 * g-th page after it) and reads them back through the *topei CSRs and the
 * eip/eie arrays (*iselect 0x70-0xFF), claims them, and takes them as
 * external interrupts in M and S mode. Only results the spec fixes are
 * printed: identities, claims, pending bits and trap causes.
 */
#include "rt/rt.h"
#include "csr.h"
#include "csr_n.h"

#define SSTATUS_SIE (1UL << 1)
#define CAUSE_ILLEGAL 2

#define IMSIC_M ((volatile u32 *)0x24000000UL)
#define IMSIC_S ((volatile u32 *)0x28000000UL)
#define IMSIC_G(g) ((volatile u32 *)(0x28000000UL + 0x1000UL * (g)))

#define EIDELIVERY 0x70
#define EITHRESHOLD 0x72
#define EIP0 0x80
#define EIE0 0xc0

#define TOP(i) (((u64)(i) << 16) | (u64)(i))
#define SPIN_LIMIT 100000UL

#define swap_n(n)                                                              \
	({                                                                     \
		u64 __v;                                                       \
		__asm__ volatile("csrrw %0, " H_STR(n) ", zero"                \
				 : "=r"(__v)::"memory");                       \
		__v;                                                           \
	})

/* An interrupt file, as seen through one select CSR and its ireg. */
#define FILE_OPS(name, sel, reg)                                               \
	static void name##_w(u64 s, u64 v)                                     \
	{                                                                      \
		csrw_n(sel, s);                                                \
		csrw_n(reg, v);                                                \
	}                                                                      \
	static u64 name##_r(u64 s)                                             \
	{                                                                      \
		csrw_n(sel, s);                                                \
		return csrr_n(reg);                                            \
	}                                                                      \
	/* A known state: delivery on, no threshold, identities 1-127 enabled, \
	 * nothing pending (the reset state is UNSPECIFIED). */                \
	static void name##_init(void)                                          \
	{                                                                      \
		name##_w(EIDELIVERY, 1);                                       \
		name##_w(EITHRESHOLD, 0);                                      \
		name##_w(EIE0, ~0UL);                                          \
		name##_w(EIE0 + 2, ~0UL);                                      \
		name##_w(EIP0, 0);                                             \
		name##_w(EIP0 + 2, 0);                                         \
	}

FILE_OPS(mf, CSR_MISELECT, CSR_MIREG)
FILE_OPS(sf, CSR_SISELECT, CSR_SIREG)
FILE_OPS(gf, CSR_VSISELECT, CSR_VSIREG)

/* Waits (boundedly) until an MSI shows: the spec lets its effect be delayed. */
static u64 wait_mtopei(void)
{
	u64 v = 0;
	for (u64 i = 0; i < SPIN_LIMIT && !(v = csrr_n(CSR_MTOPEI)); i++)
		;
	return v;
}

static u64 wait_stopei(void)
{
	u64 v = 0;
	for (u64 i = 0; i < SPIN_LIMIT && !(v = csrr_n(CSR_STOPEI)); i++)
		;
	return v;
}

static u64 wait_vstopei(void)
{
	u64 v = 0;
	for (u64 i = 0; i < SPIN_LIMIT && !(v = csrr_n(CSR_VSTOPEI)); i++)
		;
	return v;
}

static volatile u64 irq_cause, irq_top, irq_count;

static void m_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	irq_cause = cause | INTERRUPT_BIT;
	irq_top = swap_n(CSR_MTOPEI);
	irq_count++;
}

static void s_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	irq_cause = cause | INTERRUPT_BIT;
	irq_top = swap_n(CSR_STOPEI);
	irq_count++;
}

static void machine_file(void)
{
	rt_puts("-- machine-level file\n");
	mf_init();
	rt_check("eidelivery holds 1", mf_r(EIDELIVERY), 1);
	rt_check("eie0: identity 0 read-only zero", mf_r(EIE0), ~1UL);
	rt_check("mtopei with nothing pending", csrr_n(CSR_MTOPEI), 0);

	IMSIC_M[0] = 5;
	rt_check("MSI 5: mtopei", wait_mtopei(), TOP(5));
	rt_check("MSI 5: mip.MEIP", csrr_n(CSR_MIP) & MIP_MEIP, MIP_MEIP);
	rt_check("seteipnum_le reads 0", IMSIC_M[0], 0);
	IMSIC_M[0] = 40;
	IMSIC_M[0] = 3;
	IMSIC_M[0] = 0; /* not an identity: ignored */
	for (u64 i = 0; i < SPIN_LIMIT &&
			mf_r(EIP0) != ((1UL << 3) | (1UL << 5) | (1UL << 40));
	     i++)
		;
	rt_check("eip0 after MSIs 5, 40, 3, 0", mf_r(EIP0),
		 (1UL << 3) | (1UL << 5) | (1UL << 40));
	rt_check("lowest identity first: mtopei", csrr_n(CSR_MTOPEI), TOP(3));
	rt_check("claim 1 (csrrw mtopei)", swap_n(CSR_MTOPEI), TOP(3));
	rt_check("claim 2", swap_n(CSR_MTOPEI), TOP(5));
	rt_check("claim 3", swap_n(CSR_MTOPEI), TOP(40));
	rt_check("all claimed: mtopei", csrr_n(CSR_MTOPEI), 0);
	rt_check("all claimed: mip.MEIP", csrr_n(CSR_MIP) & MIP_MEIP, 0);

	rt_puts("-- eithreshold and eidelivery\n");
	IMSIC_M[0] = 9;
	wait_mtopei();
	mf_w(EITHRESHOLD, 9);
	rt_check("eithreshold 9 hides 9: mtopei", csrr_n(CSR_MTOPEI), 0);
	rt_check("eithreshold 9: mip.MEIP", csrr_n(CSR_MIP) & MIP_MEIP, 0);
	mf_w(EITHRESHOLD, 10);
	rt_check("eithreshold 10: mtopei", csrr_n(CSR_MTOPEI), TOP(9));
	mf_w(EIDELIVERY, 0);
	rt_check("eidelivery 0: mtopei unchanged", csrr_n(CSR_MTOPEI), TOP(9));
	rt_check("eidelivery 0: mip.MEIP", csrr_n(CSR_MIP) & MIP_MEIP, 0);
	mf_w(EIDELIVERY, 1);
	mf_w(EITHRESHOLD, 0);
	rt_check("eidelivery 1: mip.MEIP", csrr_n(CSR_MIP) & MIP_MEIP,
		 MIP_MEIP);
	/* A claim through the eip array. */
	mf_w(EIP0, 0);
	rt_check("eip0 cleared: mtopei", csrr_n(CSR_MTOPEI), 0);
	IMSIC_M[0] = 70;
	wait_mtopei();
	rt_check("MSI 70: eip2", mf_r(EIP0 + 2), 1UL << 6);
	rt_check("MSI 70: mtopei", csrr_n(CSR_MTOPEI), TOP(70));
	mf_w(EIE0 + 2, 0);
	rt_check("eie2 cleared: mtopei", csrr_n(CSR_MTOPEI), 0);
	mf_w(EIP0 + 2, 0);
	mf_w(EIE0 + 2, ~0UL);

	rt_puts("-- machine external interrupt\n");
	rt_m_irq = m_irq;
	irq_count = 0;
	csrs_n(CSR_MIE, MIP_MEIP);
	csr_set(mstatus, 1UL << 3);
	IMSIC_M[0] = 7;
	for (u64 i = 0; i < SPIN_LIMIT && !irq_count; i++)
		;
	csr_clear(mstatus, 1UL << 3);
	csrc_n(CSR_MIE, MIP_MEIP);
	rt_check("interrupts taken", irq_count, 1);
	rt_check("mcause", irq_cause, INTERRUPT_BIT | 11);
	rt_check("claimed in the handler", irq_top, TOP(7));
	rt_check("mtopei after the claim", csrr_n(CSR_MTOPEI), 0);
	rt_m_irq = 0;
}

static u64 s_results[8];

/* S-mode: the supervisor-level file through siselect/sireg and stopei. */
static long s_file(long a0, long a1)
{
	(void)a0;
	(void)a1;
	rt_s_trap_setup();
	sf_init();
	s_results[0] = csrr_n(CSR_STOPEI);
	IMSIC_S[0] = 12;
	IMSIC_S[0] = 4;
	wait_stopei();
	for (u64 i = 0;
	     i < SPIN_LIMIT && sf_r(EIP0) != ((1UL << 4) | (1UL << 12)); i++)
		;
	s_results[1] = csrr_n(CSR_STOPEI);
	s_results[2] = swap_n(CSR_STOPEI);
	s_results[3] = swap_n(CSR_STOPEI);
	s_results[4] = csrr_n(CSR_STOPEI);
	/* The interrupt, taken in S. */
	irq_count = 0;
	csrs_n(CSR_SIE, MIP_SEIP);
	csr_set(sstatus, SSTATUS_SIE);
	IMSIC_S[0] = 33;
	for (u64 i = 0; i < SPIN_LIMIT && !irq_count; i++)
		;
	csr_clear(sstatus, SSTATUS_SIE);
	csrc_n(CSR_SIE, MIP_SEIP);
	s_results[5] = irq_count;
	s_results[6] = irq_cause;
	s_results[7] = irq_top;
	return 0;
}

static void supervisor_file(void)
{
	rt_puts("-- supervisor-level file (S-mode)\n");
	csrs_n(CSR_MSTATEEN0, STATEEN0_IMSIC | STATEEN0_CSRIND | STATEEN0_AIA);
	csrs_n(CSR_MIDELEG, MIP_SEIP);
	rt_s_irq = s_irq;
	rt_check("S-mode run returns", (u64)rt_run(MODE_S, s_file, 0, 0), 0);
	rt_s_irq = 0;
	csrc_n(CSR_MIDELEG, MIP_SEIP);
	rt_check("stopei with nothing pending", s_results[0], 0);
	rt_check("MSIs 12, 4: stopei", s_results[1], TOP(4));
	rt_check("claim 1 (csrrw stopei)", s_results[2], TOP(4));
	rt_check("claim 2", s_results[3], TOP(12));
	rt_check("all claimed: stopei", s_results[4], 0);
	rt_check("S interrupts taken", s_results[5], 1);
	rt_check("scause", s_results[6], INTERRUPT_BIT | 9);
	rt_check("claimed in the S handler", s_results[7], TOP(33));
	rt_check("the machine-level file saw none", csrr_n(CSR_MTOPEI), 0);
}

static void guest_files(void)
{
	rt_puts("-- guest interrupt files (VGEIN)\n");
	for (u64 g = 1; g <= 2; g++) {
		csrc_n(CSR_HSTATUS, HSTATUS_VGEIN);
		csrs_n(CSR_HSTATUS, g << 12);
		gf_init();
	}
	csrw_n(CSR_HGEIE, 0);
	csrc_n(CSR_HSTATUS, HSTATUS_VGEIN);
	csrs_n(CSR_HSTATUS, 1UL << 12);
	rt_check("VGEIN holds 1", (csrr_n(CSR_HSTATUS) & HSTATUS_VGEIN) >> 12,
		 1);
	IMSIC_G(1)[0] = 20;
	rt_check("MSI 20 to guest file 1: vstopei", wait_vstopei(), TOP(20));
	rt_check("hgeip", csrr_n(CSR_HGEIP), 1UL << 1);
	rt_check("hip.VSEIP (VGEIN = 1)", csrr_n(CSR_HIP) & MIP_VSEIP,
		 MIP_VSEIP);
	rt_check("hgeie = 0: mip.SGEIP", csrr_n(CSR_MIP) & MIP_SGEIP, 0);
	csrw_n(CSR_HGEIE, 1UL << 1);
	rt_check("hgeie = 2: mip.SGEIP", csrr_n(CSR_MIP) & MIP_SGEIP,
		 MIP_SGEIP);
	rt_check("the supervisor-level file saw none", csrr_n(CSR_STOPEI),
		 0);
	csrc_n(CSR_HSTATUS, HSTATUS_VGEIN);
	csrs_n(CSR_HSTATUS, 2UL << 12);
	rt_check("VGEIN = 2: vstopei", csrr_n(CSR_VSTOPEI), 0);
	rt_check("VGEIN = 2: hip.VSEIP", csrr_n(CSR_HIP) & MIP_VSEIP, 0);
	rt_check("VGEIN = 2: vsireg eip0", gf_r(EIP0), 0);
	csrc_n(CSR_HSTATUS, HSTATUS_VGEIN);
	csrs_n(CSR_HSTATUS, 1UL << 12);
	rt_check("VGEIN = 1: vsireg eip0", gf_r(EIP0), 1UL << 20);
	rt_check("claim (csrrw vstopei)", swap_n(CSR_VSTOPEI), TOP(20));
	rt_check("claimed: hgeip", csrr_n(CSR_HGEIP), 0);
	rt_check("claimed: mip.SGEIP", csrr_n(CSR_MIP) & MIP_SGEIP, 0);
	csrw_n(CSR_HGEIE, 0);

	/* VGEIN = 0: vstopei and vsireg at 0x70-0xFF are illegal from M. */
	csrc_n(CSR_HSTATUS, HSTATUS_VGEIN);
	rt_trap_reset();
	rt_trap_ok = 1;
	(void)csrr_n(CSR_VSTOPEI);
	rt_trap_ok = 0;
	rt_check("VGEIN = 0: vstopei raises", rt_mtrap.count ? rt_mtrap.cause : 99,
		 CAUSE_ILLEGAL);
	csrw_n(CSR_VSISELECT, EIDELIVERY);
	rt_trap_reset();
	rt_trap_ok = 1;
	(void)csrr_n(CSR_VSIREG);
	rt_trap_ok = 0;
	rt_check("VGEIN = 0: vsireg at 0x70 raises",
		 rt_mtrap.count ? rt_mtrap.cause : 99, CAUSE_ILLEGAL);
}

int main(void)
{
	rt_puts("imsic: IMSIC interrupt files, MSIs, *topei\n");
	/* No machine timer interrupt pending (QEMU resets mtimecmp to 0). */
	*CLINT_MTIMECMP = ~0UL;
	machine_file();
	supervisor_file();
	guest_files();
	return rt_finish("imsic");
}
