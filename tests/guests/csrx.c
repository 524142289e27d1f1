/*
 * csrx: Smstateen/Ssstateen, Smcsrind/Sscsrind, Sstc and Smaia/Ssaia
 * (without an IMSIC) at M and S level, checked from inside the guest.
 *
 * CSRs are named by number, so the assembler need not know them.
 */
#include "rt/rt.h"

#define IRQ_SSI 1
#define IRQ_STI 5
#define IRQ_SEI 9
#define MIP(i) (1UL << (i))
#define SPIN_LIMIT 2000000UL

#define SE0 (1UL << 63)
#define ST_ENVCFG (1UL << 62)
#define ST_CSRIND (1UL << 60)
#define ST_AIA (1UL << 59)
#define STCE (1UL << 63)
#define NO_TRAP 0xffUL

static volatile u64 s_cause, s_topi, s_time, s_deadline;

/* S-mode probes: read one CSR. */
#define S_PROBE(name, csr)                                                     \
	static long name(long a, long b)                                       \
	{                                                                      \
		(void)a;                                                       \
		(void)b;                                                       \
		return (long)csr_read(csr);                                    \
	}
S_PROBE(s_sstateen0, 0x10c)
S_PROBE(s_sstateen3, 0x10f)
S_PROBE(s_senvcfg, 0x10a)
S_PROBE(s_siselect, 0x150)
S_PROBE(s_sireg, 0x151)
S_PROBE(s_sireg2, 0x152)
S_PROBE(s_stopi, 0xdb0)
S_PROBE(s_stimecmp, 0x14d)

/* S-mode: write a0 to siselect, then read sireg. */
static long s_sel_sireg(long sel, long b)
{
	(void)b;
	csr_write(0x150, sel);
	return (long)csr_read(0x151);
}

/* Runs fn in S; returns mcause of the trap it took, or NO_TRAP. */
static u64 in_s(rt_fn fn, long a0, long *ret)
{
	rt_trap_reset();
	rt_trap_ok = 1;
	long r = rt_run(MODE_S, fn, a0, 0);
	rt_trap_ok = 0;
	if (ret)
		*ret = r;
	return rt_mtrap.count ? rt_mtrap.cause : NO_TRAP;
}

/* M-mode probe of an indirect register: returns mcause or NO_TRAP. */
static u64 m_ireg(u64 sel, int which)
{
	csr_write(0x350, sel);
	rt_trap_reset();
	rt_trap_ok = 1;
	if (which == 1)
		(void)csr_read(0x351);
	else
		(void)csr_read(0x352);
	rt_trap_ok = 0;
	return rt_mtrap.count ? rt_mtrap.cause : NO_TRAP;
}

static void section(const char *s)
{
	rt_puts("-- ");
	rt_puts(s);
	rt_putc('\n');
}

static void test_stateen(void)
{
	long r;
	section("mstateen writable bits");
	csr_write(0x30c, ~0UL);
	rt_check("  mstateen0", csr_read(0x30c),
		 SE0 | ST_ENVCFG | ST_CSRIND | ST_AIA | (1UL << 54) /* CTR */ |
			 (1UL << 53) /* PDIS, provisional */);
	csr_write(0x30f, ~0UL);
	rt_check("  mstateen3", csr_read(0x30f), SE0);
	csr_write(0x10c, ~0UL);
	rt_check("  sstateen0 (no U-level state)", csr_read(0x10c), 0);

	section("everything gated off below M");
	csr_write(0x30c, 0);
	csr_write(0x30f, 0);
	rt_check("  sstateen0 from S", in_s(s_sstateen0, 0, NULL), 2);
	rt_check("  sstateen3 from S", in_s(s_sstateen3, 0, NULL), 2);
	rt_check("  senvcfg from S", in_s(s_senvcfg, 0, NULL), 2);
	rt_check("  siselect from S", in_s(s_siselect, 0, NULL), 2);
	rt_check("  stopi from S", in_s(s_stopi, 0, NULL), 2);
	rt_check("  senvcfg from M", csr_read(0x10a), 0);

	section("everything gated on");
	csr_write(0x30c, ~0UL);
	csr_write(0x30f, ~0UL);
	rt_check("  sstateen0 from S", in_s(s_sstateen0, 0, &r), NO_TRAP);
	rt_check("  sstateen0 value", r, 0);
	rt_check("  sstateen3 from S", in_s(s_sstateen3, 0, NULL), NO_TRAP);
	rt_check("  senvcfg from S", in_s(s_senvcfg, 0, NULL), NO_TRAP);
	rt_check("  siselect from S", in_s(s_siselect, 0, NULL), NO_TRAP);
	rt_check("  stopi from S", in_s(s_stopi, 0, &r), NO_TRAP);
	rt_check("  stopi value", r, 0);
}

static void test_csrind(void)
{
	long r;
	section("miselect/mireg");
	csr_write(0x350, ~0UL);
	rt_check("  miselect holds 0-0xfff", csr_read(0x350), 0xfff);
	rt_check("  mireg at iprio0", m_ireg(0x30, 1), NO_TRAP);
	csr_write(0x351, ~0UL);
	rt_check("  iprio0 read-only zero", csr_read(0x351), 0);
	rt_check("  mireg at iprio14", m_ireg(0x3e, 1), NO_TRAP);
	rt_check("  mireg at 0x31 (odd)", m_ireg(0x31, 1), 2);
	rt_check("  mireg at 0x40", m_ireg(0x40, 1), 2);
	rt_check("  mireg at 0x70 (no IMSIC)", m_ireg(0x70, 1), 2);
	rt_check("  mireg2 at iprio0", m_ireg(0x30, 2), 2);

	section("siselect/sireg from S");
	rt_check("  sireg at iprio2", in_s(s_sel_sireg, 0x32, &r), NO_TRAP);
	rt_check("  value", r, 0);
	rt_check("  sireg at 0x33", in_s(s_sel_sireg, 0x33, NULL), 2);
	rt_check("  sireg at 0x100", in_s(s_sel_sireg, 0x100, NULL), 2);
	csr_write(0x150, 0x30);
	rt_check("  sireg2 at iprio0", in_s(s_sireg2, 0, NULL), 2);
	csr_write(0x30c, ~0UL & ~ST_AIA);
	rt_check("  sireg at iprio0 with mstateen0.AIA=0", in_s(s_sireg, 0, NULL),
		 2);
	csr_write(0x30c, ~0UL);
}

/* S handler: record, then silence the source. */
static void s_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	s_cause = csr_read(scause);
	s_topi = csr_read(0xdb0);
	if (cause == IRQ_STI) {
		s_time = csr_read(time);
		csr_write(0x14d, ~0UL);
	} else {
		csr_clear(sip, MIP(cause));
	}
}

/* S: arm stimecmp a0 ticks ahead, enable STIE and SIE, wait. */
static long s_timer(long ticks, long b)
{
	(void)b;
	s_deadline = csr_read(time) + ticks;
	csr_write(0x14d, s_deadline);
	csr_set(sie, MIP(IRQ_STI));
	csr_set(sstatus, 2);
	for (u64 i = 0; i < SPIN_LIMIT && s_cause == 0; i++)
		__asm__ volatile("nop");
	csr_clear(sstatus, 2);
	csr_write(sie, 0);
	return 0;
}

static void test_sstc(void)
{
	section("Sstc");
	csr_write(mcounteren, 0);
	csr_clear(0x30a, STCE);
	rt_check("  stimecmp from S, STCE=0", in_s(s_stimecmp, 0, NULL), 2);
	csr_set(0x30a, STCE);
	rt_check("  menvcfg.STCE", csr_read(0x30a) >> 63, 1);
	rt_check("  stimecmp from S, TM=0", in_s(s_stimecmp, 0, NULL), 2);
	csr_write(mcounteren, 7);
	rt_check("  stimecmp from S, STCE=TM=1", in_s(s_stimecmp, 0, NULL),
		 NO_TRAP);
	csr_write(0x14d, ~0UL);
	rt_check("  STIP with stimecmp in the future",
		 csr_read(mip) & MIP(IRQ_STI), 0);
	csr_set(mip, MIP(IRQ_STI));
	rt_check("  STIP read-only in mip", csr_read(mip) & MIP(IRQ_STI), 0);
	csr_write(0x14d, 0);
	rt_check("  STIP with stimecmp in the past",
		 csr_read(mip) & MIP(IRQ_STI), MIP(IRQ_STI));
	csr_write(0x14d, ~0UL);

	section("Sstc timer interrupt delegated to S");
	s_cause = 0;
	rt_s_trap_setup();
	csr_write(mideleg, MIP(IRQ_STI));
	rt_run(MODE_S, s_timer, 1000, 0);
	rt_check("  scause", s_cause, INTERRUPT_BIT | IRQ_STI);
	rt_check("  stopi in the handler", s_topi, (IRQ_STI << 16) | 1);
	rt_check_true("  not early", s_time >= s_deadline);
	csr_write(mideleg, 0);
	csr_clear(0x30a, STCE);
}

/* S: enable sie.SSIE (independent of mie through mvien) and SIE, wait. */
static long s_wait_ssi(long a, long b)
{
	(void)a;
	(void)b;
	csr_set(sie, MIP(IRQ_SSI));
	csr_set(sstatus, 2);
	for (u64 i = 0; i < SPIN_LIMIT && s_cause == 0; i++)
		__asm__ volatile("nop");
	csr_clear(sstatus, 2);
	csr_write(sie, 0);
	return 0;
}

static void test_aia(void)
{
	section("mvien/mvip/mtopi");
	csr_write(0x308, ~0UL);
	rt_check("  mvien", csr_read(0x308),
		 MIP(IRQ_SSI) | MIP(IRQ_SEI) | MIP(13) /* LCOFI */);
	csr_write(0x308, 0);
	csr_write(0x309, MIP(IRQ_SSI));
	rt_check("  mvip.SSIP aliases mip.SSIP", csr_read(mip) & MIP(IRQ_SSI),
		 MIP(IRQ_SSI));
	rt_check("  mtopi, nothing enabled", csr_read(0xfb0), 0);
	csr_write(mie, MIP(IRQ_SSI));
	rt_check("  mtopi, SSI enabled", csr_read(0xfb0), (IRQ_SSI << 16) | 1);
	csr_write(mie, 0);
	csr_write(0x309, 0);

	section("virtual supervisor software interrupt");
	s_cause = 0;
	rt_s_irq = s_irq;
	rt_s_trap_setup();
	csr_write(0x308, MIP(IRQ_SSI));
	csr_write(0x309, MIP(IRQ_SSI));
	rt_check("  mip.SSIP untouched", csr_read(mip) & MIP(IRQ_SSI), 0);
	rt_run(MODE_S, s_wait_ssi, 0, 0);
	rt_check("  scause", s_cause, INTERRUPT_BIT | IRQ_SSI);
	rt_check("  stopi in the handler", s_topi, (IRQ_SSI << 16) | 1);
	rt_check("  mvip.SSIP cleared through sip", csr_read(0x309), 0);
	csr_write(0x308, 0);
}

int main(void)
{
	rt_puts("csrx: start\n");
	rt_s_irq = s_irq;
	test_stateen();
	test_csrind();
	test_sstc();
	test_aia();
	rt_s_irq = NULL;
	return rt_finish("csrx");
}
