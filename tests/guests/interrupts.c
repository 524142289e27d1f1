/*
 * interrupts: CLINT timer and software interrupts in direct and vectored
 * mode, delegation of the supervisor timer/software interrupts to S, WFI
 * wake-up with interrupts globally disabled, and the priority order of
 * several pending interrupts.
 *
 * Only causes and their order are printed, never times or counts that
 * depend on the speed of the implementation.
 */
#include "rt/rt.h"

#define IRQ_SSI 1
#define IRQ_MSI 3
#define IRQ_STI 5
#define IRQ_MTI 7
#define IRQ_SEI 9
#define MIP(i) (1UL << (i))

#define SPIN_LIMIT 20000000UL

static volatile u64 seq[16];
static volatile u64 nseq;
static volatile u64 seq_prev[16];
static volatile u64 vec_slot;

static void record(u64 cause, u64 prev)
{
	if (nseq < 16) {
		seq[nseq] = cause;
		seq_prev[nseq] = prev;
	}
	nseq++;
}

static void reset_seq(void)
{
	nseq = 0;
	for (int i = 0; i < 16; i++)
		seq[i] = seq_prev[i] = ~0UL;
	vec_slot = ~0UL;
}

/* M handler: record the interrupt, then silence its source. */
static void m_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	record(cause | INTERRUPT_BIT, (csr_read(mstatus) >> 11) & 3);
	switch (cause) {
	case IRQ_MSI:
		*CLINT_MSIP = 0;
		break;
	case IRQ_MTI:
		*CLINT_MTIMECMP = ~0UL;
		break;
	case IRQ_SSI:
	case IRQ_STI:
	case IRQ_SEI:
		csr_clear(mip, MIP(cause));
		break;
	default:
		rt_puts("FATAL: unexpected interrupt\n");
		rt_exit(101);
	}
}

/* S handler: record; S cannot clear STIP, so it masks it in sie. */
static void s_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	record(csr_read(scause), (csr_read(sstatus) >> 8) & 1);
	if (cause == IRQ_SSI)
		csr_clear(sip, MIP(IRQ_SSI));
	else
		csr_clear(sie, MIP(cause));
}

static void spin_until(u64 n)
{
	for (u64 i = 0; i < SPIN_LIMIT && nseq < n; i++)
		__asm__ volatile("nop");
}

static void section(const char *name)
{
	rt_puts("-- ");
	rt_puts(name);
	rt_putc('\n');
}

/* Vectored mtvec: slot k records k in vec_slot and enters the runtime. */
void vec_table(void);
__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".balign 256\n"
	".globl vec_table\n"
	"vec_table:\n"
	".irp k,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	j vec_\\k\n"
	".endr\n"
	".irp k,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"vec_\\k:\n"
	"	csrrw sp, mscratch, sp\n"
	"	sd t0, -8(sp)\n"
	"	sd t1, -16(sp)\n"
	"	la t0, vec_slot\n"
	"	li t1, \\k\n"
	"	sd t1, 0(t0)\n"
	"	ld t1, -16(sp)\n"
	"	ld t0, -8(sp)\n"
	"	csrrw sp, mscratch, sp\n"
	"	j rt_m_trap_entry\n"
	".endr\n"
	".option pop\n"
	".popsection\n");

static void test_timer(void)
{
	reset_seq();
	*CLINT_MTIMECMP = ~0UL;
	section("mip.MTIP follows mtime >= mtimecmp");
	rt_check("  MTIP with mtimecmp = -1", csr_read(mip) & MIP(IRQ_MTI), 0);
	*CLINT_MTIMECMP = 0;
	rt_check("  MTIP with mtimecmp = 0", csr_read(mip) & MIP(IRQ_MTI),
		 MIP(IRQ_MTI));
	*CLINT_MTIMECMP = ~0UL;
	rt_check("  MTIP cleared by a new mtimecmp",
		 csr_read(mip) & MIP(IRQ_MTI), 0);

	u64 t0 = *CLINT_MTIME;
	u64 t1 = *CLINT_MTIME;
	rt_check_true("  mtime does not go backwards", t1 >= t0);

	*CLINT_MTIMECMP = *CLINT_MTIME + 2000;
	csr_write(mie, MIP(IRQ_MTI));
	csr_set(mstatus, MSTATUS_MIE);
	spin_until(1);
	csr_clear(mstatus, MSTATUS_MIE);
	csr_write(mie, 0);
	section("machine timer interrupt, direct mtvec");
	rt_check("  interrupts", nseq, 1);
	rt_check("  mcause", seq[0], INTERRUPT_BIT | IRQ_MTI);
	rt_check("  MPP", seq_prev[0], MODE_M);
	rt_check("  MTIP after handler", csr_read(mip) & MIP(IRQ_MTI), 0);

	/* Vectored: the timer enters at base + 4 * 7. */
	reset_seq();
	csr_write(mtvec, (u64)vec_table | 1);
	*CLINT_MTIMECMP = *CLINT_MTIME + 2000;
	csr_write(mie, MIP(IRQ_MTI));
	csr_set(mstatus, MSTATUS_MIE);
	spin_until(1);
	csr_clear(mstatus, MSTATUS_MIE);
	csr_write(mie, 0);
	section("machine timer interrupt, vectored mtvec");
	rt_check("  interrupts", nseq, 1);
	rt_check("  mcause", seq[0], INTERRUPT_BIT | IRQ_MTI);
	rt_check("  vector slot", vec_slot, IRQ_MTI);

	/* Exceptions in vectored mode use the base address. */
	vec_slot = ~0UL;
	rt_trap_ok = 1;
	rt_trap_reset();
	__asm__ volatile(".option push\n.option norvc\n"
			 "li a7, 0\necall\n.option pop" ::
				 : "a7", "memory");
	rt_trap_ok = 0;
	section("ecall with vectored mtvec");
	rt_check("  mcause", rt_mtrap.cause, 11);
	rt_check("  vector slot", vec_slot, 0);
	csr_write(mtvec, (u64)rt_m_trap_entry);
}

static void test_software(void)
{
	reset_seq();
	*CLINT_MSIP = 1;
	section("machine software interrupt");
	rt_check("  msip readback", *CLINT_MSIP, 1);
	rt_check("  mip.MSIP", csr_read(mip) & MIP(IRQ_MSI), MIP(IRQ_MSI));
	csr_write(mie, MIP(IRQ_MSI));
	csr_set(mstatus, MSTATUS_MIE);
	spin_until(1);
	csr_clear(mstatus, MSTATUS_MIE);
	csr_write(mie, 0);
	rt_check("  interrupts", nseq, 1);
	rt_check("  mcause", seq[0], INTERRUPT_BIT | IRQ_MSI);
	rt_check("  mip.MSIP after handler", csr_read(mip) & MIP(IRQ_MSI), 0);

	/* Vectored software interrupt. */
	reset_seq();
	csr_write(mtvec, (u64)vec_table | 1);
	*CLINT_MSIP = 1;
	csr_write(mie, MIP(IRQ_MSI));
	csr_set(mstatus, MSTATUS_MIE);
	spin_until(1);
	csr_clear(mstatus, MSTATUS_MIE);
	csr_write(mie, 0);
	csr_write(mtvec, (u64)rt_m_trap_entry);
	section("machine software interrupt, vectored mtvec");
	rt_check("  mcause", seq[0], INTERRUPT_BIT | IRQ_MSI);
	rt_check("  vector slot", vec_slot, IRQ_MSI);
}

/* In U with mstatus.MIE = 0, enabled M interrupts are still taken. */
static long u_spin(long n, long unused)
{
	(void)unused;
	for (long i = 0; i < n && nseq == 0; i++)
		__asm__ volatile("nop");
	return 0;
}

static void test_from_lower(void)
{
	reset_seq();
	csr_write(mie, MIP(IRQ_MSI));
	*CLINT_MSIP = 1;
	rt_run(MODE_U, u_spin, (long)SPIN_LIMIT, 0);
	csr_write(mie, 0);
	section("machine software interrupt taken from U with MIE=0");
	rt_check("  interrupts", nseq, 1);
	rt_check("  mcause", seq[0], INTERRUPT_BIT | IRQ_MSI);
	rt_check("  MPP", seq_prev[0], MODE_U);
}

/* S-mode: enable sie bits in a0 and sstatus.SIE, spin, disable. */
static long s_enable_and_spin(long sie_bits, long set_ssip)
{
	csr_set(sie, sie_bits);
	if (set_ssip)
		csr_set(sip, MIP(IRQ_SSI));
	csr_set(sstatus, MSTATUS_SIE);
	for (u64 i = 0; i < SPIN_LIMIT && nseq == 0; i++)
		__asm__ volatile("nop");
	csr_clear(sstatus, MSTATUS_SIE);
	csr_write(sie, 0);
	return 0;
}

static void test_delegation(void)
{
	rt_s_irq = s_irq;
	rt_s_trap_setup();
	csr_write(mideleg, MIP(IRQ_SSI) | MIP(IRQ_STI));
	section("mideleg");
	rt_check("  SSIP and STIP delegable",
		 csr_read(mideleg) & (MIP(IRQ_SSI) | MIP(IRQ_STI)),
		 MIP(IRQ_SSI) | MIP(IRQ_STI));

	/* STIP set by M, delegated: not taken in M even with MIE=1. */
	reset_seq();
	csr_set(mip, MIP(IRQ_STI));
	rt_check("  mip.STIP set by M", csr_read(mip) & MIP(IRQ_STI),
		 MIP(IRQ_STI));
	csr_write(mie, MIP(IRQ_STI));
	csr_set(mstatus, MSTATUS_MIE);
	for (int i = 0; i < 1000; i++)
		__asm__ volatile("nop");
	csr_clear(mstatus, MSTATUS_MIE);
	section("delegated STIP pending in M");
	rt_check("  interrupts", nseq, 0);
	rt_check("  sip.STIP visible", csr_read(sip) & MIP(IRQ_STI),
		 MIP(IRQ_STI));

	/* In S with sie.STIE and SIE: taken by S. */
	reset_seq();
	rt_run(MODE_S, s_enable_and_spin, (long)MIP(IRQ_STI), 0);
	section("supervisor timer interrupt delegated to S");
	rt_check("  interrupts", nseq, 1);
	rt_check("  scause", seq[0], INTERRUPT_BIT | IRQ_STI);
	rt_check("  SPP", seq_prev[0], MODE_S);

	/* In U, S interrupts are enabled whatever sstatus.SIE says. */
	reset_seq();
	csr_write(mie, MIP(IRQ_STI));
	csr_clear(mstatus, MSTATUS_SIE);
	rt_run(MODE_U, u_spin, (long)SPIN_LIMIT, 0);
	section("supervisor timer interrupt taken from U with SIE=0");
	rt_check("  interrupts", nseq, 1);
	rt_check("  scause", seq[0], INTERRUPT_BIT | IRQ_STI);
	rt_check("  SPP", seq_prev[0], MODE_U);
	csr_clear(mip, MIP(IRQ_STI));

	/* SSIP raised by S itself. */
	reset_seq();
	csr_write(mie, 0);
	rt_run(MODE_S, s_enable_and_spin, (long)MIP(IRQ_SSI), 1);
	section("supervisor software interrupt raised by S");
	rt_check("  interrupts", nseq, 1);
	rt_check("  scause", seq[0], INTERRUPT_BIT | IRQ_SSI);
	rt_check("  sip.SSIP after handler", csr_read(mip) & MIP(IRQ_SSI), 0);

	csr_write(mie, 0);
	csr_write(mideleg, 0);
	rt_s_irq = NULL;
}

static void test_wfi(void)
{
	reset_seq();
	csr_clear(mstatus, MSTATUS_MIE);
	csr_write(mie, MIP(IRQ_MTI));
	*CLINT_MTIMECMP = *CLINT_MTIME + 5000;
	__asm__ volatile("wfi" ::: "memory");
	section("wfi wakes on a pending timer with MIE=0");
	/* A spurious early wake-up is allowed: wait for the timer then. */
	for (u64 i = 0; i < SPIN_LIMIT && !(csr_read(mip) & MIP(IRQ_MTI)); i++)
		__asm__ volatile("wfi" ::: "memory");
	rt_check("  mip.MTIP", csr_read(mip) & MIP(IRQ_MTI), MIP(IRQ_MTI));
	rt_check("  interrupts taken", nseq, 0);
	*CLINT_MTIMECMP = ~0UL;
	csr_write(mie, 0);

	reset_seq();
	csr_write(mie, MIP(IRQ_MSI));
	*CLINT_MSIP = 1;
	__asm__ volatile("wfi" ::: "memory");
	section("wfi with a software interrupt already pending");
	rt_check("  mip.MSIP", csr_read(mip) & MIP(IRQ_MSI), MIP(IRQ_MSI));
	rt_check("  interrupts taken", nseq, 0);
	*CLINT_MSIP = 0;
	csr_write(mie, 0);
}

/*
 * Priority: MSI before MTI. (The full order MEI > MSI > MTI > SEI > SSI >
 * STI is checked in strict.c: QEMU 7.2 and 10.0 take the lowest-numbered one.)
 */
static void test_priority(void)
{
	reset_seq();
	*CLINT_MSIP = 1;
	*CLINT_MTIMECMP = 0;
	csr_write(mie, MIP(IRQ_MSI) | MIP(IRQ_MTI));
	section("MSI and MTI pending");
	rt_check("  mip", csr_read(mip) & 0xaaa, MIP(IRQ_MSI) | MIP(IRQ_MTI));
	csr_set(mstatus, MSTATUS_MIE);
	spin_until(2);
	csr_clear(mstatus, MSTATUS_MIE);
	csr_write(mie, 0);
	rt_check("  interrupts", nseq, 2);
	rt_check("  1st: MSI", seq[0], INTERRUPT_BIT | IRQ_MSI);
	rt_check("  2nd: MTI", seq[1], INTERRUPT_BIT | IRQ_MTI);
}

/* The trap after a WFI that an enabled interrupt ends: mepc = WFI + 4. */
static volatile u64 irq_mepc;
static void m_irq_mepc(u64 cause, struct rt_frame *f)
{
	irq_mepc = csr_read(mepc);
	m_irq(cause, f);
}

extern char l_wfi[], l_after_wfi[], l_enable[], l_after_enable[];

static void test_wfi_mepc(void)
{
	reset_seq();
	rt_m_irq = m_irq_mepc;
	csr_write(mie, MIP(IRQ_MTI));
	*CLINT_MTIMECMP = *CLINT_MTIME + 3000;
	/* Spurious wake-ups are allowed: loop on WFI until the handler ran. */
	__asm__ volatile("csrsi mstatus, 8\n"
			 ".option push\n.option norvc\n"
			 "l_wfi: wfi\n"
			 "l_after_wfi: ld t0, 0(%0)\n"
			 "beqz t0, l_wfi\n"
			 ".option pop\n"
			 "csrci mstatus, 8"
			 :
			 : "r"(&nseq)
			 : "t0", "memory");
	csr_write(mie, 0);
	rt_m_irq = m_irq;
	section("timer interrupt ending a WFI (MIE=1)");
	rt_check("  interrupts", nseq, 1);
	rt_check("  mcause", seq[0], INTERRUPT_BIT | IRQ_MTI);
	rt_check("  mepc = WFI + 4", irq_mepc, (u64)l_after_wfi);
}

/* A pending interrupt is taken right after the CSR write that enables it. */
static void test_enable_mepc(void)
{
	reset_seq();
	rt_m_irq = m_irq_mepc;
	*CLINT_MSIP = 1;
	csr_write(mie, MIP(IRQ_MSI));
	__asm__ volatile(".option push\n.option norvc\n"
			 "l_enable: csrsi mstatus, 8\n"
			 "l_after_enable: csrci mstatus, 8\n"
			 ".option pop" ::
				 : "memory");
	csr_write(mie, 0);
	rt_m_irq = m_irq;
	section("software interrupt right after csrsi mstatus.MIE");
	rt_check("  interrupts", nseq, 1);
	rt_check("  mepc = next instruction", irq_mepc, (u64)l_after_enable);
}

static void test_clint_halves(void)
{
	volatile u32 *cmp32 = (volatile u32 *)CLINT_MTIMECMP;
	volatile u32 *time32 = (volatile u32 *)CLINT_MTIME;
	section("mtimecmp and mtime as 32-bit halves");
	/* The sequence that never makes mtimecmp smaller than both values. */
	cmp32[1] = 0xffffffffU;
	cmp32[0] = 0x12345678U;
	cmp32[1] = 0x00000001U;
	rt_check("  mtimecmp", *CLINT_MTIMECMP, 0x0000000112345678UL);
	rt_check("  low half", cmp32[0], 0x12345678U);
	rt_check("  high half", cmp32[1], 1);
	rt_check("  MTIP (mtime < 2^32)", csr_read(mip) & MIP(IRQ_MTI), 0);
	cmp32[1] = 0;
	cmp32[0] = 0;
	rt_check("  MTIP with mtimecmp = 0", csr_read(mip) & MIP(IRQ_MTI),
		 MIP(IRQ_MTI));
	*CLINT_MTIMECMP = ~0UL;
	u64 hi = time32[1];
	rt_check("  mtime high half (< 2^32 ticks since reset)", hi, 0);
	u32 lo0 = time32[0];
	for (int i = 0; i < 2000; i++)
		__asm__ volatile("nop");
	u32 lo1 = time32[0];
	rt_check_true("  mtime low half moves", lo0 != lo1);
}

static void test_mip_readonly(void)
{
	section("mip.MTIP and mip.MSIP are read-only");
	*CLINT_MTIMECMP = ~0UL;
	*CLINT_MSIP = 0;
	csr_set(mip, MIP(IRQ_MTI) | MIP(IRQ_MSI));
	rt_check("  after csrs", csr_read(mip) & (MIP(IRQ_MTI) | MIP(IRQ_MSI)),
		 0);
	*CLINT_MTIMECMP = 0;
	*CLINT_MSIP = 1;
	csr_clear(mip, MIP(IRQ_MTI) | MIP(IRQ_MSI));
	rt_check("  after csrc", csr_read(mip) & (MIP(IRQ_MTI) | MIP(IRQ_MSI)),
		 MIP(IRQ_MTI) | MIP(IRQ_MSI));
	*CLINT_MTIMECMP = ~0UL;
	*CLINT_MSIP = 0;
}

/*
 * The usual SBI pattern: S runs with STIE; M takes the machine timer
 * interrupt and forwards it by setting mip.STIP; S then takes STI.
 */
static void m_irq_forward(u64 cause, struct rt_frame *f)
{
	(void)f;
	record(cause | INTERRUPT_BIT, (csr_read(mstatus) >> 11) & 3);
	if (cause == IRQ_MTI) {
		*CLINT_MTIMECMP = ~0UL;
		csr_set(mip, MIP(IRQ_STI));
	} else {
		rt_puts("FATAL: unexpected interrupt\n");
		rt_exit(101);
	}
}

static long s_wait_sti(long unused0, long unused1)
{
	(void)unused0;
	(void)unused1;
	csr_set(sie, MIP(IRQ_STI));
	csr_set(sstatus, MSTATUS_SIE);
	for (u64 i = 0; i < SPIN_LIMIT && nseq < 2; i++)
		__asm__ volatile("nop");
	csr_clear(sstatus, MSTATUS_SIE);
	return 0;
}

static void test_forwarding(void)
{
	reset_seq();
	rt_m_irq = m_irq_forward;
	rt_s_irq = s_irq;
	rt_s_trap_setup();
	csr_write(mideleg, MIP(IRQ_STI));
	csr_write(mie, MIP(IRQ_MTI) | MIP(IRQ_STI));
	*CLINT_MTIMECMP = *CLINT_MTIME + 2000;
	rt_run(MODE_S, s_wait_sti, 0, 0);
	csr_write(mie, 0);
	csr_clear(mip, MIP(IRQ_STI));
	csr_write(mideleg, 0);
	rt_m_irq = m_irq;
	rt_s_irq = NULL;
	section("machine timer forwarded to S as STIP");
	rt_check("  interrupts", nseq, 2);
	rt_check("  1st: MTI in M", seq[0], INTERRUPT_BIT | IRQ_MTI);
	rt_check("  1st: from S", seq_prev[0], MODE_S);
	rt_check("  2nd: STI in S", seq[1], INTERRUPT_BIT | IRQ_STI);
	rt_check("  2nd: from S", seq_prev[1], MODE_S);
}

/* stvec in vectored mode: a delegated SSI enters at base + 4 * 1. */
void s_vec_table(void);
static volatile u64 s_vec_slot;
__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".balign 256\n"
	".globl s_vec_table\n"
	"s_vec_table:\n"
	".irp k,0,1,2,3,4,5,6,7,8,9\n"
	"	j s_vec_\\k\n"
	".endr\n"
	".irp k,0,1,2,3,4,5,6,7,8,9\n"
	"s_vec_\\k:\n"
	"	csrrw sp, sscratch, sp\n"
	"	sd t0, -8(sp)\n"
	"	sd t1, -16(sp)\n"
	"	la t0, s_vec_slot\n"
	"	li t1, \\k\n"
	"	sd t1, 0(t0)\n"
	"	ld t1, -16(sp)\n"
	"	ld t0, -8(sp)\n"
	"	csrrw sp, sscratch, sp\n"
	"	j rt_s_trap_entry\n"
	".endr\n"
	".option pop\n"
	".popsection\n");

static void test_s_vectored(void)
{
	reset_seq();
	s_vec_slot = ~0UL;
	rt_s_irq = s_irq;
	rt_s_trap_setup();
	csr_write(stvec, (u64)s_vec_table | 1);
	csr_write(mideleg, MIP(IRQ_SSI));
	rt_run(MODE_S, s_enable_and_spin, (long)MIP(IRQ_SSI), 1);
	csr_write(mideleg, 0);
	rt_s_irq = NULL;
	section("supervisor software interrupt, vectored stvec");
	rt_check("  interrupts", nseq, 1);
	rt_check("  scause", seq[0], INTERRUPT_BIT | IRQ_SSI);
	rt_check("  vector slot", s_vec_slot, IRQ_SSI);
	rt_s_trap_setup();
}

/* mret that sets MIE (MPIE = 1) with an interrupt pending: taken at the target. */
extern char l_mret_target[];
static void test_mret_enables(void)
{
	reset_seq();
	rt_m_irq = m_irq_mepc;
	*CLINT_MSIP = 1;
	csr_write(mie, MIP(IRQ_MSI));
	csr_clear(mstatus, MSTATUS_MIE);
	csr_set(mstatus, MSTATUS_MPIE | MSTATUS_MPP);
	__asm__ volatile(".option push\n.option norvc\n"
			 "la t0, l_mret_target\n"
			 "csrw mepc, t0\n"
			 "mret\n"
			 "l_mret_target: csrci mstatus, 8\n"
			 ".option pop" ::
				 : "t0", "memory");
	csr_write(mie, 0);
	rt_m_irq = m_irq;
	section("mret setting MIE with a software interrupt pending");
	rt_check("  interrupts", nseq, 1);
	rt_check("  mepc = mret target", irq_mepc, (u64)l_mret_target);
}

/* sret that sets SIE with a delegated interrupt pending: taken at the target. */
extern char l_sret_target[];
static volatile u64 s_irq_sepc;
static void s_irq_sepc_hook(u64 cause, struct rt_frame *f)
{
	s_irq_sepc = csr_read(sepc);
	s_irq(cause, f);
}

static long s_sret_enables(long unused0, long unused1)
{
	(void)unused0;
	(void)unused1;
	csr_set(sie, MIP(IRQ_SSI));
	csr_set(sip, MIP(IRQ_SSI));
	__asm__ volatile(".option push\n.option norvc\n"
			 "li t0, 0x120\n" /* SPP = S, SPIE = 1 */
			 "csrs sstatus, t0\n"
			 "la t0, l_sret_target\n"
			 "csrw sepc, t0\n"
			 "sret\n"
			 "l_sret_target: csrci sstatus, 2\n"
			 ".option pop" ::
				 : "t0", "memory");
	csr_write(sie, 0);
	return 0;
}

static void test_sret_enables(void)
{
	reset_seq();
	rt_s_irq = s_irq_sepc_hook;
	rt_s_trap_setup();
	csr_write(mideleg, MIP(IRQ_SSI));
	rt_run(MODE_S, s_sret_enables, 0, 0);
	csr_write(mideleg, 0);
	rt_s_irq = NULL;
	section("sret setting SIE with a supervisor software interrupt pending");
	rt_check("  interrupts", nseq, 1);
	rt_check("  scause", seq[0], INTERRUPT_BIT | IRQ_SSI);
	rt_check("  sepc = sret target", s_irq_sepc, (u64)l_sret_target);
}

/* S: WFI with SIE = 0 and an enabled SSI pending returns without a trap. */
static long s_wfi_pending(long unused0, long unused1)
{
	(void)unused0;
	(void)unused1;
	csr_clear(sstatus, MSTATUS_SIE);
	csr_set(sie, MIP(IRQ_SSI));
	csr_set(sip, MIP(IRQ_SSI));
	__asm__ volatile("wfi" ::: "memory");
	long pending = (long)(csr_read(sip) & MIP(IRQ_SSI));
	csr_clear(sip, MIP(IRQ_SSI));
	csr_write(sie, 0);
	return pending;
}

static void test_wfi_delegated(void)
{
	reset_seq();
	rt_s_irq = s_irq;
	rt_s_trap_setup();
	csr_write(mideleg, MIP(IRQ_SSI));
	long pending = rt_run(MODE_S, s_wfi_pending, 0, 0);
	section("wfi in S with SIE=0 and an enabled SSI pending");
	rt_check("  SSIP", (u64)pending, MIP(IRQ_SSI));
	rt_check("  interrupts taken", nseq, 0);

	/*
	 * WFI ignores delegation: in M, a pending SSI enabled in mie (and
	 * delegated, so never taken in M) still ends the wait.
	 */
	csr_write(mie, MIP(IRQ_SSI));
	csr_set(mip, MIP(IRQ_SSI));
	__asm__ volatile("wfi" ::: "memory");
	section("wfi in M with a delegated SSI pending");
	rt_check("  SSIP", csr_read(mip) & MIP(IRQ_SSI), MIP(IRQ_SSI));
	rt_check("  interrupts taken", nseq, 0);
	csr_clear(mip, MIP(IRQ_SSI));
	csr_write(mie, 0);
	csr_write(mideleg, 0);
	rt_s_irq = NULL;
}

/* WFI in S (TW = 0) ended by a machine timer interrupt, taken into M. */
long p_s_wfi(long, long);
extern char l_s_after_wfi[];
__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".globl p_s_wfi\n"
	"p_s_wfi: wfi\n"
	"l_s_after_wfi: ld t0, 0(a0)\n" /* loop until the handler ran */
	"	beqz t0, p_s_wfi\n"
	"	ret\n"
	".option pop\n"
	".popsection\n");

static void test_s_wfi(void)
{
	reset_seq();
	rt_m_irq = m_irq_mepc;
	csr_write(mie, MIP(IRQ_MTI));
	*CLINT_MTIMECMP = *CLINT_MTIME + 3000;
	rt_run(MODE_S, p_s_wfi, (long)&nseq, 0);
	csr_write(mie, 0);
	rt_m_irq = m_irq;
	section("wfi in S ended by a machine timer interrupt");
	rt_check("  interrupts", nseq, 1);
	rt_check("  mcause", seq[0], INTERRUPT_BIT | IRQ_MTI);
	rt_check("  MPP", seq_prev[0], MODE_S);
	rt_check("  mepc = WFI + 4", irq_mepc, (u64)l_s_after_wfi);
}

int main(void)
{
	rt_puts("interrupts: start\n");
	rt_m_irq = m_irq;
	test_timer();
	test_software();
	test_from_lower();
	test_delegation();
	test_wfi();
	test_priority();
	test_wfi_mepc();
	test_enable_mepc();
	test_clint_halves();
	test_mip_readonly();
	test_forwarding();
	test_s_vectored();
	test_mret_enables();
	test_sret_enables();
	test_wfi_delegated();
	test_s_wfi();
	rt_m_irq = NULL;
	return rt_finish("interrupts");
}
