/*
 * strict: checks where the privileged/unprivileged specifications leave
 * no choice but QEMU departs from them, or where this project's hart
 * picks one of the allowed behaviours. Run on vmm only (not compared with
 * QEMU; see the list in tests/tests/qemu.rs). Re-checked against QEMU
 * 10.0.2; where QEMU 7.2 differed but 10.0 agrees, it says so.
 *
 *  - EBREAK/C.EBREAK write the pc of the instruction to mtval (the spec
 *    also allows 0, which QEMU 7.2 wrote; QEMU 10.0 writes the pc).
 *  - A misaligned SC raises a store/AMO address-misaligned exception even
 *    without a reservation (QEMU 7.2 and 10.0 fail the SC without
 *    trapping).
 *  - A misaligned AMO raises store/AMO address-misaligned, cause 6 (QEMU
 *    7.2 and 10.0 raise cause 4).
 *  - MRET and SRET to a mode below M clear mstatus.MPRV (privileged spec
 *    1.12; QEMU 7.2 left it set, QEMU 10.0 clears it).
 *  - An AMO that hits no memory or device raises a store/AMO access fault,
 *    cause 7 (QEMU 7.2 raised cause 5; QEMU 10.0 raises 7).
 *  - CSRRS/CSRRC with rs1 != x0 write the CSR even when the register holds
 *    zero, so on a read-only CSR they are illegal (QEMU 7.2 looked at the
 *    value instead of the register number; QEMU 10.0 agrees with the spec).
 *  - MRET executed in S-mode is an illegal instruction and mtval holds the
 *    MRET encoding 0x30200073 (privileged spec, "Machine Trap Value
 *    Register": a nonzero mtval on an illegal-instruction exception is the
 *    faulting instruction; 0 is the other choice). QEMU 10.0 writes the
 *    bits of another, earlier instruction (0x00f70023, `sb a5,0(a4)`, in
 *    the traps guest), which the spec does not allow; SRET in U gets its
 *    own encoding there.
 *  - mepc[0] and sepc[0] are always zero (QEMU 7.2 and 10.0 keep the bit).
 *  - medeleg[11] (ecall from M) is read-only zero (QEMU 7.2 and 10.0 let
 *    it be set).
 *  - Device regions (UART, CLINT, test finisher) are not executable: a
 *    fetch there raises an instruction access fault (a PMA choice of this
 *    platform; QEMU 7.2 executed MMIO reads as code, and QEMU 10.0 still
 *    does for the UART and the test finisher).
 *  - WFI with a timer interrupt enabled returns once mtime reaches
 *    mtimecmp, even 100 s of virtual time ahead (vmm skips the wait).
 *  - Several pending M-mode interrupts are taken in the order MEI, MSI,
 *    MTI, SEI, SSI, STI (QEMU 7.2 and 10.0 without AIA take the
 *    lowest-numbered cause first).
 */
#include "rt/rt.h"

long p_ebreak(long, long);
long p_cebreak(long, long);
long p_sc_d(long, long);
long p_sc_w(long, long);
long p_amoadd_w(long, long);
long p_amoswap_d(long, long);
long p_ecall(long, long);
long p_m_sret(long, long);
long p_csrrs_cycle_t0(long, long);
long p_fetch(long, long);
long p_mret(long, long);
extern char l_ebreak[], l_cebreak[];

__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".globl p_ebreak\n"
	"p_ebreak:\n"
	"l_ebreak: ebreak\n"
	"	ret\n"
	".globl p_cebreak\n"
	"p_cebreak:\n"
	"l_cebreak: .half 0x9002\n"
	"	ret\n"
	".balign 4\n"
	".globl p_sc_d\n"
	"p_sc_d: sc.d a0, a1, (a0)\n"
	"	ret\n"
	".globl p_sc_w\n"
	"p_sc_w: sc.w a0, a1, (a0)\n"
	"	ret\n"
	".globl p_amoadd_w\n"
	"p_amoadd_w: amoadd.w a0, a1, (a0)\n"
	"	ret\n"
	".globl p_amoswap_d\n"
	"p_amoswap_d: amoswap.d a0, a1, (a0)\n"
	"	ret\n"
	".globl p_ecall\n"
	"p_ecall: li a7, 0\n"
	"	ecall\n"
	"	ret\n"
	".globl p_mret\n"
	"p_mret: mret\n"
	"	ret\n"
	".globl p_fetch\n"
	"p_fetch: mv t1, ra\n"
	"	jalr ra, 0(a0)\n"
	"	mv ra, t1\n"
	"	ret\n"
	".globl p_csrrs_cycle_t0\n"
	"p_csrrs_cycle_t0: li t0, 0\n"
	"	csrrs x0, cycle, t0\n"
	"	ret\n"
	/* M-mode: sret to S at a0 with MPRV set just before. */
	".globl p_m_sret\n"
	"p_m_sret:\n"
	"	csrw sepc, a0\n"
	"	li t0, 0x100\n"
	"	csrs mstatus, t0\n"
	"	li t0, 0x20000\n"
	"	csrs mstatus, t0\n"
	"	sret\n"
	".option pop\n"
	".popsection\n");

#define MIP(i) (1UL << (i))
static volatile u64 seq[8];
static volatile u64 nseq;

/* Records the interrupt and silences its source. */
static void m_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	if (nseq < 8)
		seq[nseq] = cause;
	nseq++;
	if (cause == 3)
		*CLINT_MSIP = 0;
	else if (cause == 7)
		*CLINT_MTIMECMP = ~0UL;
	else
		csr_clear(mip, MIP(cause));
}

static void test_priority(void)
{
	const u64 all = MIP(1) | MIP(3) | MIP(5) | MIP(7) | MIP(9);
	nseq = 0;
	rt_m_irq = m_irq;
	*CLINT_MSIP = 1;
	*CLINT_MTIMECMP = 0;
	csr_set(mip, MIP(1) | MIP(5) | MIP(9));
	csr_write(mie, all);
	rt_puts("-- five pending interrupts: MSI MTI SEI SSI STI\n");
	rt_check("  mip", csr_read(mip) & 0xaaa, all);
	csr_set(mstatus, MSTATUS_MIE);
	for (u64 i = 0; i < 1000000 && nseq < 5; i++)
		__asm__ volatile("nop");
	csr_clear(mstatus, MSTATUS_MIE);
	csr_write(mie, 0);
	rt_m_irq = NULL;
	rt_check("  interrupts", nseq, 5);
	rt_check("  1st", seq[0], 3);
	rt_check("  2nd", seq[1], 7);
	rt_check("  3rd", seq[2], 9);
	rt_check("  4th", seq[3], 1);
	rt_check("  5th", seq[4], 5);
}

static u64 buf[4] __attribute__((aligned(64)));

static void expect_m(const char *name, u64 cause, u64 tval)
{
	rt_puts("-- ");
	rt_puts(name);
	rt_putc('\n');
	rt_check("  M traps", rt_mtrap.count, 1);
	rt_check("  mcause", rt_mtrap.cause, cause);
	rt_check("  mtval", rt_mtrap.tval, tval);
}

int main(void)
{
	u64 base = (u64)buf;
	rt_puts("strict: start\n");
	rt_trap_ok = 1;

	rt_trap_reset();
	p_ebreak(0, 0);
	expect_m("ebreak: mtval = pc", 3, (u64)l_ebreak);
	rt_trap_reset();
	rt_skip_len = 2;
	p_cebreak(0, 0);
	rt_skip_len = 0;
	expect_m("c.ebreak: mtval = pc", 3, (u64)l_cebreak);

	buf[1] = 0x0f0e0d0c0b0a0908UL;
	rt_trap_reset();
	p_sc_d((long)(base + 4), 1);
	expect_m("misaligned sc.d without reservation", 6, base + 4);
	rt_trap_reset();
	p_sc_w((long)(base + 2), 1);
	expect_m("misaligned sc.w without reservation", 6, base + 2);
	rt_trap_reset();
	p_amoadd_w((long)(base + 2), 1);
	expect_m("misaligned amoadd.w", 6, base + 2);
	rt_trap_reset();
	p_amoswap_d((long)(base + 12), 1);
	expect_m("misaligned amoswap.d", 6, base + 12);
	rt_check("  memory unchanged", buf[1], 0x0f0e0d0c0b0a0908UL);

	/* MRET to S clears MPRV (the trap back to M leaves it clear). */
	rt_trap_reset();
	csr_set(mstatus, MSTATUS_MPRV);
	rt_run(MODE_S, p_ecall, 0, 0);
	rt_puts("-- mret to S clears MPRV\n");
	rt_check("  M traps", rt_mtrap.count, 1);
	rt_check("  MPRV", (rt_mtrap.status >> 17) & 1, 0);
	csr_clear(mstatus, MSTATUS_MPRV);

	/* MRET to U clears MPRV. */
	rt_trap_reset();
	csr_set(mstatus, MSTATUS_MPRV);
	rt_run(MODE_U, p_ecall, 0, 0);
	rt_puts("-- mret to U clears MPRV\n");
	rt_check("  M traps", rt_mtrap.count, 1);
	rt_check("  MPRV", (rt_mtrap.status >> 17) & 1, 0);
	csr_clear(mstatus, MSTATUS_MPRV);

	/* SRET (executed in M) to S clears MPRV. */
	rt_trap_reset();
	rt_run(MODE_M, p_m_sret, (long)p_ecall, 0);
	rt_puts("-- sret from M to S clears MPRV\n");
	rt_check("  M traps", rt_mtrap.count, 1);
	rt_check("  mcause", rt_mtrap.cause, 9);
	rt_check("  MPRV", (rt_mtrap.status >> 17) & 1, 0);
	csr_clear(mstatus, MSTATUS_MPRV);

	test_priority();

	rt_trap_reset();
	p_amoadd_w(0, 1);
	expect_m("amoadd.w at 0x0 (no memory)", 7, 0);

	rt_trap_reset();
	p_csrrs_cycle_t0(0, 0);
	expect_m("csrrs x0, cycle, t0 with t0 = 0", 2, 0xc002a073UL);

	/* MRET in S is illegal; mtval holds the MRET encoding (or 0). */
	rt_trap_reset();
	rt_run(MODE_S, p_mret, 0, 0);
	expect_m("mret in S: mtval = the instruction", 2, 0x30200073UL);

	rt_puts("-- mepc/sepc bit 0\n");
	u64 old = csr_read(mepc);
	csr_write(mepc, 0x80001233UL);
	rt_check("  mepc", csr_read(mepc), 0x80001232UL);
	csr_write(mepc, old);
	csr_write(sepc, 0x80004567UL);
	rt_check("  sepc", csr_read(sepc), 0x80004566UL);

	static const u64 devices[3] = {0x10000000UL, 0x2000000UL, 0x100000UL};
	static const char *const device_names[3] = {
		"fetch from the UART", "fetch from the CLINT",
		"fetch from the test finisher"};
	for (int i = 0; i < 3; i++) {
		rt_trap_reset();
		p_fetch((long)devices[i], 0);
		expect_m(device_names[i], 1, devices[i]);
	}

	/* WFI until a timer 100 s (10^9 ticks) ahead. */
	u64 target = *CLINT_MTIME + 1000000000UL;
	*CLINT_MTIMECMP = target;
	csr_write(mie, MIP(7));
	u64 wfis = 0;
	while (!(csr_read(mip) & MIP(7)) && wfis < 1000) {
		__asm__ volatile("wfi");
		wfis++;
	}
	u64 now = *CLINT_MTIME;
	csr_write(mie, 0);
	*CLINT_MTIMECMP = ~0UL;
	rt_puts("-- wfi until a timer 100 s ahead\n");
	rt_check_true("  mtime reached mtimecmp", now >= target);
	rt_check_true("  within 2 WFIs", wfis <= 2);

	rt_puts("-- medeleg\n");
	csr_write(medeleg, ~0UL);
	rt_check("  medeleg[11] read-only 0", csr_read(medeleg) & (1 << 11), 0);
	csr_write(medeleg, 0);

	rt_trap_ok = 0;
	return rt_finish("strict");
}
