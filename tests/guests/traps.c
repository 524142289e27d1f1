/*
 * traps: synchronous exceptions, delegation, xRET state transitions and
 * CSR access rules, checked from inside the guest.
 *
 * Every probe is a small assembly routine built without compressed
 * instructions (unless the test is about a 16-bit encoding), so that the
 * runtime's trap handler can skip the faulting instruction.
 */
#include "rt/rt.h"

#define MCAUSE_ILLEGAL 2
#define MCAUSE_BREAKPOINT 3
#define MCAUSE_LOAD_MISALIGNED 4
#define MCAUSE_LOAD_ACCESS 5
#define MCAUSE_STORE_ACCESS 7
#define MCAUSE_ECALL_U 8
#define MCAUSE_ECALL_S 9
#define MCAUSE_ECALL_M 11

/* An OP-major-opcode encoding with funct7 = 0x7f: reserved in RV64GC. */
#define ILLEGAL32 0xfe000033UL
#define INSN_SRET 0x10200073UL
#define INSN_WFI 0x10500073UL

/* Addresses with neither RAM nor a device behind them on the virt board. */
#define NO_DEVICE_ADDR 0x0UL
#define PAST_RAM_ADDR 0x88000000UL /* the first byte after 128 MiB of RAM */

long p_illegal32(long, long);
long p_illegal16_zero(long, long);
long p_illegal16_clui0(long, long);
long p_ecall(long, long);
long p_ebreak(long, long);
long p_cebreak(long, long);
long p_load(long, long);
long p_store(long, long);
long p_fetch(long, long);
long p_lr_d(long, long);
long p_ld(long, long);
long p_lw(long, long);
long p_sd(long, long);
long p_mret_to_m(long, long);
long p_sret_in_s(long, long);
long p_sret_to_u(long, long);
long p_sret(long, long);
long p_mret(long, long);
long p_sret_bare(long, long);
long p_wfi(long, long);
long p_read_satp(long, long);
long p_write_satp(long, long);
long p_sfence(long, long);
long p_read_mstatus(long, long);
long p_read_sstatus(long, long);
long p_read_mvendorid(long, long);
long p_write_mvendorid(long, long);
long p_write_cycle(long, long);
long p_read_cycle(long, long);
long p_read_instret(long, long);
long p_csrrsi_cycle0(long, long);
long p_read_time(long, long);
long p_user_ecall_then_ret(long, long);
long p_load_x0(long, long);
long p_s_ecall_brk(long, long);
long p_csrrc_cycle_x0(long, long);
long p_slliw32(long, long);
long p_sraiw32(long, long);
long p_custom_csr(long, long);
long p_rsv16(long, long);
long p_jalr_odd(long, long);

extern char l_illegal32[], l_illegal16_zero[], l_illegal16_clui0[];
extern char l_ecall[], l_ebreak[], l_cebreak[];
extern char l_read_mstatus[], l_write_cycle[], l_write_mvendorid[];

__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".balign 4\n"
	".globl p_illegal32\n"
	"p_illegal32:\n"
	"l_illegal32: .word 0xfe000033\n"
	"	ret\n"
	".globl p_illegal16_zero\n"
	"p_illegal16_zero:\n"
	"l_illegal16_zero: .half 0x0000\n"
	"	ret\n"
	".balign 4\n"
	".globl p_illegal16_clui0\n"
	"p_illegal16_clui0:\n"
	/* c.lui x1, 0: nzimm = 0 is reserved */
	"l_illegal16_clui0: .half 0x6081\n"
	"	ret\n"
	".balign 4\n"
	".globl p_ecall\n"
	"p_ecall:\n"
	"	li a7, 0\n"
	"l_ecall: ecall\n"
	"	ret\n"
	".globl p_ebreak\n"
	"p_ebreak:\n"
	"l_ebreak: ebreak\n"
	"	ret\n"
	".globl p_cebreak\n"
	"p_cebreak:\n"
	"l_cebreak: .half 0x9002\n" /* c.ebreak */
	"	ret\n"
	".balign 4\n"
	/* Probes that access memory at a0 (a1 = store data). */
	".globl p_load\n"
	"p_load: lb a0, 0(a0)\n"
	"	ret\n"
	".globl p_store\n"
	"p_store: sb a1, 0(a0)\n"
	"	ret\n"
	".globl p_fetch\n"
	"p_fetch: mv t1, ra\n"
	"	jalr ra, 0(a0)\n"
	"	mv ra, t1\n"
	"	ret\n"
	".globl p_lr_d\n"
	"p_lr_d: lr.d a0, (a0)\n"
	"	ret\n"
	".globl p_ld\n"
	"p_ld: ld a0, 0(a0)\n"
	"	ret\n"
	".globl p_lw\n"
	"p_lw: lw a0, 0(a0)\n"
	"	ret\n"
	".globl p_sd\n"
	"p_sd: sd a1, 0(a0)\n"
	"	ret\n"
	/* M-mode: mret with MPP = M to the next instruction; returns mstatus. */
	".globl p_mret_to_m\n"
	"p_mret_to_m:\n"
	"	la t0, 1f\n"
	"	csrw mepc, t0\n"
	"	mret\n"
	"1:	csrr a0, mstatus\n"
	"	li t0, 8\n" /* MIE back off */
	"	csrc mstatus, t0\n"
	"	ret\n"
	/* S-mode: sret with SPP = S to the next instruction; returns sstatus. */
	".globl p_sret_in_s\n"
	"p_sret_in_s:\n"
	"	li t0, 0x120\n" /* SPP | SPIE */
	"	csrs sstatus, t0\n"
	"	li t0, 0x2\n" /* SIE = 0 */
	"	csrc sstatus, t0\n"
	"	la t0, 1f\n"
	"	csrw sepc, t0\n"
	"	sret\n"
	"1:	csrr a0, sstatus\n"
	"	li t0, 0x2\n"
	"	csrc sstatus, t0\n"
	"	ret\n"
	/* S-mode: sret with SPP = U to a0, with ra = rt_lower_return. */
	".globl p_sret_to_u\n"
	"p_sret_to_u:\n"
	"	li t0, 0x100\n"
	"	csrc sstatus, t0\n"
	"	csrw sepc, a0\n"
	"	la ra, rt_lower_return\n"
	"	sret\n"
	/* U-mode: one ecall (not the runtime's), then return. */
	".globl p_user_ecall_then_ret\n"
	"p_user_ecall_then_ret:\n"
	"	li a7, 0\n"
	"	ecall\n"
	"	li a0, 0x77\n"
	"	ret\n"
	".globl p_sret\n"
	"p_sret:\n"
	"	la t0, 1f\n"
	"	csrw sepc, t0\n"
	"	sret\n"
	"1:	ret\n"
	".globl p_sret_bare\n"
	"p_sret_bare: sret\n"
	"	ret\n"
	".globl p_mret\n"
	"p_mret:\n"
	"	mret\n"
	"	ret\n"
	".globl p_wfi\n"
	"p_wfi: wfi\n"
	"	ret\n"
	".globl p_read_satp\n"
	"p_read_satp: li a0, 0x55\n"
	"	csrr a0, satp\n"
	"	ret\n"
	".globl p_write_satp\n"
	"p_write_satp: csrw satp, zero\n"
	"	ret\n"
	".globl p_sfence\n"
	"p_sfence: sfence.vma\n"
	"	ret\n"
	".globl p_read_mstatus\n"
	"p_read_mstatus: li a0, 0x55\n"
	"l_read_mstatus: csrr a0, mstatus\n"
	"	ret\n"
	".globl p_read_sstatus\n"
	"p_read_sstatus: li a0, 0x55\n"
	"	csrr a0, sstatus\n"
	"	ret\n"
	".globl p_read_mvendorid\n"
	"p_read_mvendorid: li a0, 0x55\n"
	"	csrr a0, mvendorid\n"
	"	ret\n"
	".globl p_write_mvendorid\n"
	"p_write_mvendorid:\n"
	"l_write_mvendorid: csrw mvendorid, zero\n"
	"	ret\n"
	".globl p_write_cycle\n"
	"p_write_cycle:\n"
	"l_write_cycle: csrw cycle, zero\n"
	"	ret\n"
	".globl p_read_cycle\n"
	"p_read_cycle: li a0, 0x55\n"
	"	csrr a0, cycle\n"
	"	ret\n"
	".globl p_read_instret\n"
	"p_read_instret: li a0, 0x55\n"
	"	csrr a0, instret\n"
	"	ret\n"
	".globl p_read_time\n"
	"p_read_time: li a0, 0x55\n"
	"	csrr a0, time\n"
	"	ret\n"
	".globl p_csrrsi_cycle0\n"
	"p_csrrsi_cycle0: li a0, 0x55\n"
	"	csrrsi a0, cycle, 0\n"
	"	ret\n"
	/* S: a delegated ecall, then back to M with the runtime's ebreak. */
	".globl p_s_ecall_brk\n"
	"p_s_ecall_brk: li a7, 0\n"
	"	ecall\n"
	"	li a7, 0x5e8\n"
	"	ebreak\n"
	".globl p_load_x0\n"
	"p_load_x0: lw x0, 0(a0)\n"
	"	ret\n"
	".globl p_csrrc_cycle_x0\n"
	"p_csrrc_cycle_x0: csrrc a0, cycle, x0\n"
	"	ret\n"
	".globl p_slliw32\n"
	"p_slliw32: .word 0x0205151b\n" /* slliw a0, a0, 32: shamt[5] set */
	"	ret\n"
	".globl p_sraiw32\n"
	"p_sraiw32: .word 0x4205551b\n" /* sraiw a0, a0, 32 */
	"	ret\n"
	".globl p_custom_csr\n"
	"p_custom_csr: li a0, 0x55\n"
	"	csrr a0, 0x8ff\n"
	"	ret\n"
	".globl p_rsv16\n"
	/* a0 = one of the reserved 16-bit encodings below, by index */
	"p_rsv16: slli a0, a0, 2\n"
	"	la t0, 1f\n"
	"	add t0, t0, a0\n"
	"	mv t1, ra\n"
	"	jalr ra, 0(t0)\n"
	"	mv ra, t1\n"
	"	ret\n"
	"1:	.half 0x4002\n" /* c.lwsp x0 */
	"	.half 0x8082\n" /* c.jr ra */
	"	.half 0x6002\n" /* c.ldsp x0 */
	"	.half 0x8082\n" /* c.jr ra */
	"	.half 0x8002\n" /* c.jr x0 */
	"	.half 0x8082\n" /* c.jr ra */
	"	.half 0x6101\n" /* c.addi16sp 0 */
	"	.half 0x8082\n" /* c.jr ra */
	"	.half 0x0004\n" /* c.addi4spn x9, 0 */
	"	.half 0x8082\n" /* c.jr ra */
	"	.half 0x2001\n" /* c.addiw x0, 0 */
	"	.half 0x8082\n" /* c.jr ra */
	".balign 4\n"
	".globl p_jalr_odd\n"
	"p_jalr_odd: mv t1, ra\n"
	"	la t0, 1f\n"
	"	addi t0, t0, 1\n"
	"	li a0, 0\n"
	"	jalr x0, 0(t0)\n"
	"	li a0, 99\n"
	"	jr t1\n"
	".balign 4\n"
	"1:	li a0, 42\n"
	"	jr t1\n"
	".option pop\n"
	".popsection\n");

static u64 insn_at(const void *p)
{
	const u16 *h = p;
	u32 lo = h[0];
	if ((lo & 3) != 3)
		return lo;
	return lo | ((u32)h[1] << 16);
}

/* Expect exactly one exception into M with this cause and tval. */
static void expect_m(const char *name, u64 cause, u64 tval, u64 prev)
{
	rt_puts("-- ");
	rt_puts(name);
	rt_putc('\n');
	rt_check("  M traps", rt_mtrap.count, 1);
	rt_check("  mcause", rt_mtrap.cause, cause);
	rt_check("  mtval", rt_mtrap.tval, tval);
	rt_check("  MPP", rt_mtrap.prev, prev);
}

static void expect_none(const char *name)
{
	rt_puts("-- ");
	rt_puts(name);
	rt_putc('\n');
	rt_check("  M traps", rt_mtrap.count, 0);
	rt_check("  S traps", rt_strap.count, 0);
}

static void test_illegal(void)
{
	rt_trap_reset();
	p_illegal32(0, 0);
	expect_m("illegal 32-bit", MCAUSE_ILLEGAL, ILLEGAL32, MODE_M);
	rt_check("  mepc", rt_mtrap.epc, (u64)l_illegal32);

	rt_trap_reset();
	p_illegal16_zero(0, 0);
	expect_m("illegal all-zero halfword", MCAUSE_ILLEGAL, 0, MODE_M);
	rt_check("  mepc", rt_mtrap.epc, (u64)l_illegal16_zero);

	rt_trap_reset();
	p_illegal16_clui0(0, 0);
	expect_m("illegal c.lui nzimm=0", MCAUSE_ILLEGAL, 0x6081, MODE_M);

	rt_trap_reset();
	rt_run(MODE_U, p_illegal32, 0, 0);
	expect_m("illegal 32-bit from U", MCAUSE_ILLEGAL, ILLEGAL32, MODE_U);
}

static void test_ecall_ebreak(void)
{
	rt_trap_reset();
	p_ecall(0, 0);
	expect_m("ecall from M", MCAUSE_ECALL_M, 0, MODE_M);
	rt_check("  mepc", rt_mtrap.epc, (u64)l_ecall);

	rt_trap_reset();
	rt_run(MODE_S, p_ecall, 0, 0);
	expect_m("ecall from S", MCAUSE_ECALL_S, 0, MODE_S);
	rt_check("  mepc", rt_mtrap.epc, (u64)l_ecall);

	rt_trap_reset();
	rt_run(MODE_U, p_ecall, 0, 0);
	expect_m("ecall from U", MCAUSE_ECALL_U, 0, MODE_U);
	rt_check("  mepc", rt_mtrap.epc, (u64)l_ecall);

	/* mtval for EBREAK may be 0 or the pc (strict.c wants the pc). */
	rt_trap_reset();
	p_ebreak(0, 0);
	rt_puts("-- ebreak\n");
	rt_check("  M traps", rt_mtrap.count, 1);
	rt_check("  mcause", rt_mtrap.cause, MCAUSE_BREAKPOINT);
	rt_check("  mepc", rt_mtrap.epc, (u64)l_ebreak);
	rt_check_true("  mtval is 0 or the pc",
		      rt_mtrap.tval == 0 || rt_mtrap.tval == (u64)l_ebreak);

	rt_trap_reset();
	rt_skip_len = 2;
	p_cebreak(0, 0);
	rt_skip_len = 0;
	rt_puts("-- c.ebreak\n");
	rt_check("  M traps", rt_mtrap.count, 1);
	rt_check("  mcause", rt_mtrap.cause, MCAUSE_BREAKPOINT);
	rt_check("  mepc", rt_mtrap.epc, (u64)l_cebreak);
	rt_check_true("  mtval is 0 or the pc",
		      rt_mtrap.tval == 0 || rt_mtrap.tval == (u64)l_cebreak);
}

static void test_access_faults(void)
{
	static const u64 addrs[2] = {NO_DEVICE_ADDR, PAST_RAM_ADDR};
	static const char *const load_names[2] = {"load from 0x0",
						  "load past RAM"};
	static const char *const store_names[2] = {"store to 0x0",
						   "store past RAM"};
	static const char *const fetch_names[2] = {"fetch from 0x0",
						   "fetch past RAM"};
	for (int i = 0; i < 2; i++) {
		rt_trap_reset();
		p_load((long)addrs[i], 0);
		expect_m(load_names[i], MCAUSE_LOAD_ACCESS, addrs[i], MODE_M);
		rt_trap_reset();
		p_store((long)addrs[i], 0x5a);
		expect_m(store_names[i], MCAUSE_STORE_ACCESS, addrs[i],
			 MODE_M);
		rt_trap_reset();
		p_fetch((long)addrs[i], 0);
		expect_m(fetch_names[i], 1, addrs[i], MODE_M);
	}
	/* The same from U: PMP (where present) grants U everything. */
	rt_trap_reset();
	rt_run(MODE_U, p_load, (long)PAST_RAM_ADDR, 0);
	expect_m("U load past RAM", MCAUSE_LOAD_ACCESS, PAST_RAM_ADDR, MODE_U);
}

static u64 buf[4] __attribute__((aligned(64)));

static void test_misaligned(void)
{
	u64 base = (u64)buf;
	buf[0] = 0x0706050403020100UL;
	buf[1] = 0x0f0e0d0c0b0a0908UL;

	rt_trap_reset();
	p_lr_d((long)(base + 4), 0);
	expect_m("misaligned lr.d", MCAUSE_LOAD_MISALIGNED, base + 4, MODE_M);

	/* Misaligned SC and AMOs: see strict.c (QEMU 7.2 and 10.0 depart there). */
}

/* medeleg: U ecalls and illegal instructions go to the S handler. */
static void test_delegation(void)
{
	extern char l_user_ecall[];
	csr_write(medeleg, (1UL << MCAUSE_ECALL_U) | (1UL << MCAUSE_ILLEGAL));
	rt_s_trap_setup();

	rt_trap_reset();
	long r = rt_run(MODE_S, p_sret_to_u, (long)p_user_ecall_then_ret, 0);
	rt_puts("-- delegated ecall from U\n");
	rt_check("  M traps", rt_mtrap.count, 0);
	rt_check("  S traps", rt_strap.count, 1);
	rt_check("  scause", rt_strap.cause, MCAUSE_ECALL_U);
	rt_check("  stval", rt_strap.tval, 0);
	rt_check("  sepc", rt_strap.epc, (u64)l_user_ecall);
	rt_check("  SPP", rt_strap.prev, 0);
	rt_check("  U code resumed", (u64)r, 0x77);

	rt_trap_reset();
	rt_run(MODE_S, p_sret_to_u, (long)p_illegal32, 0);
	rt_puts("-- delegated illegal instruction from U\n");
	rt_check("  M traps", rt_mtrap.count, 0);
	rt_check("  S traps", rt_strap.count, 1);
	rt_check("  scause", rt_strap.cause, MCAUSE_ILLEGAL);
	rt_check("  stval", rt_strap.tval, ILLEGAL32);
	rt_check("  sepc", rt_strap.epc, (u64)l_illegal32);

	/* An ecall from S is not delegated by bit 8: it goes to M. */
	rt_trap_reset();
	rt_run(MODE_S, p_ecall, 0, 0);
	rt_puts("-- ecall from S with medeleg[8]\n");
	rt_check("  M traps", rt_mtrap.count, 1);
	rt_check("  mcause", rt_mtrap.cause, MCAUSE_ECALL_S);
	rt_check("  S traps", rt_strap.count, 0);

	/* Illegal instruction in S, delegated: S handles its own. */
	rt_trap_reset();
	rt_run(MODE_S, p_illegal32, 0, 0);
	rt_puts("-- delegated illegal instruction from S\n");
	rt_check("  M traps", rt_mtrap.count, 0);
	rt_check("  S traps", rt_strap.count, 1);
	rt_check("  scause", rt_strap.cause, MCAUSE_ILLEGAL);
	rt_check("  SPP", rt_strap.prev, 1);

	/* Delegation never applies to traps taken in M. */
	rt_trap_reset();
	p_illegal32(0, 0);
	rt_puts("-- illegal instruction in M with medeleg[2]\n");
	rt_check("  M traps", rt_mtrap.count, 1);
	rt_check("  S traps", rt_strap.count, 0);

	csr_write(medeleg, 0);
}

__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".globl l_user_ecall\n"
	".set l_user_ecall, p_user_ecall_then_ret + 4\n"
	".option pop\n"
	".popsection\n");

static void test_xret(void)
{
	u64 s;

	/* mret to M: MIE <- MPIE, MPIE <- 1, MPP <- U. */
	csr_clear(mstatus, MSTATUS_MIE);
	csr_set(mstatus, MSTATUS_MPP | MSTATUS_MPIE);
	s = (u64)p_mret_to_m(0, 0);
	rt_puts("-- mret with MPP=M, MPIE=1\n");
	rt_check("  MIE", (s >> 3) & 1, 1);
	rt_check("  MPIE", (s >> 7) & 1, 1);
	rt_check("  MPP", (s >> 11) & 3, MODE_U);

	csr_clear(mstatus, MSTATUS_MPIE);
	csr_set(mstatus, MSTATUS_MPP);
	s = (u64)p_mret_to_m(0, 0);
	rt_puts("-- mret with MPP=M, MPIE=0\n");
	rt_check("  MIE", (s >> 3) & 1, 0);
	rt_check("  MPIE", (s >> 7) & 1, 1);

	/* mret to S clearing MPRV: see strict.c. */

	/* sret to S: SIE <- SPIE, SPIE <- 1, SPP <- U. */
	rt_trap_reset();
	s = (u64)rt_run(MODE_S, p_sret_in_s, 0, 0);
	rt_puts("-- sret with SPP=S, SPIE=1\n");
	rt_check("  traps", rt_mtrap.count, 0);
	rt_check("  SIE", (s >> 1) & 1, 1);
	rt_check("  SPIE", (s >> 5) & 1, 1);
	rt_check("  SPP", (s >> 8) & 1, 0);

	/* sret with SPP=U lands in U: the ecall there is cause 8. */
	rt_trap_reset();
	long r = rt_run(MODE_S, p_sret_to_u, (long)p_user_ecall_then_ret, 0);
	expect_m("sret with SPP=U", MCAUSE_ECALL_U, 0, MODE_U);
	rt_check("  U code resumed", (u64)r, 0x77);

	/* xRET above the current privilege is illegal. mtval for MRET in S
	   is checked in strict.c: QEMU 10.0 writes the bits of another
	   instruction there. */
	rt_trap_reset();
	rt_run(MODE_S, p_mret, 0, 0);
	rt_puts("-- mret in S\n");
	rt_check("  M traps", rt_mtrap.count, 1);
	rt_check("  mcause", rt_mtrap.cause, MCAUSE_ILLEGAL);
	rt_check("  MPP", rt_mtrap.prev, MODE_S);
	rt_trap_reset();
	rt_run(MODE_U, p_sret_bare, 0, 0);
	expect_m("sret in U", MCAUSE_ILLEGAL, INSN_SRET, MODE_U);
}

static void timer_irq(u64 cause, struct rt_frame *f)
{
	(void)f;
	(void)cause;
	*CLINT_MTIMECMP = ~0UL;
}

static void test_tsr_tw_tvm(void)
{
	rt_trap_reset();
	csr_set(mstatus, MSTATUS_TSR);
	rt_run(MODE_S, p_sret, 0, 0);
	csr_clear(mstatus, MSTATUS_TSR);
	expect_m("sret in S with TSR=1", MCAUSE_ILLEGAL, INSN_SRET, MODE_S);

	/*
	 * wfi in S with TW=1. Should WFI wait instead of trapping, a timer
	 * interrupt (always enabled for M while in S) ends the wait, and the
	 * check below fails instead of hanging.
	 */
	rt_trap_reset();
	rt_m_irq = timer_irq;
	*CLINT_MTIMECMP = *CLINT_MTIME + 10000;
	csr_write(mie, 1UL << 7);
	csr_set(mstatus, MSTATUS_TW);
	rt_run(MODE_S, p_wfi, 0, 0);
	csr_clear(mstatus, MSTATUS_TW);
	csr_write(mie, 0);
	*CLINT_MTIMECMP = ~0UL;
	rt_m_irq = NULL;
	expect_m("wfi in S with TW=1", MCAUSE_ILLEGAL, INSN_WFI, MODE_S);

	csr_set(mstatus, MSTATUS_TVM);
	rt_trap_reset();
	long v = rt_run(MODE_S, p_read_satp, 0, 0);
	expect_m("csrr satp in S with TVM=1", MCAUSE_ILLEGAL, 0x18002573UL,
		 MODE_S);
	rt_check("  rd unchanged", (u64)v, 0x55);
	rt_trap_reset();
	rt_run(MODE_S, p_write_satp, 0, 0);
	expect_m("csrw satp in S with TVM=1", MCAUSE_ILLEGAL, 0x18001073UL,
		 MODE_S);
	rt_trap_reset();
	rt_run(MODE_S, p_sfence, 0, 0);
	expect_m("sfence.vma in S with TVM=1", MCAUSE_ILLEGAL, 0x12000073UL,
		 MODE_S);
	csr_clear(mstatus, MSTATUS_TVM);

	rt_trap_reset();
	v = rt_run(MODE_S, p_read_satp, 0, 0);
	expect_none("csrr satp in S with TVM=0");
	rt_check("  satp", (u64)v, 0);
	rt_trap_reset();
	rt_run(MODE_S, p_sfence, 0, 0);
	expect_none("sfence.vma in S with TVM=0");
}

static void test_csr_rules(void)
{
	rt_trap_reset();
	long v = rt_run(MODE_S, p_read_mstatus, 0, 0);
	expect_m("csrr mstatus in S", MCAUSE_ILLEGAL, insn_at(l_read_mstatus),
		 MODE_S);
	rt_check("  rd unchanged", (u64)v, 0x55);

	rt_trap_reset();
	rt_run(MODE_U, p_read_sstatus, 0, 0);
	expect_m("csrr sstatus in U", MCAUSE_ILLEGAL, 0x10002573UL, MODE_U);

	rt_trap_reset();
	p_write_cycle(0, 0);
	expect_m("csrw cycle in M", MCAUSE_ILLEGAL, insn_at(l_write_cycle),
		 MODE_M);

	rt_trap_reset();
	p_write_mvendorid(0, 0);
	expect_m("csrw mvendorid in M", MCAUSE_ILLEGAL,
		 insn_at(l_write_mvendorid), MODE_M);

	rt_trap_reset();
	p_read_mvendorid(0, 0);
	expect_none("csrr mvendorid in M");
	rt_trap_reset();
	p_csrrsi_cycle0(0, 0);
	expect_none("csrrsi cycle, 0 in M (no write)");

	/* Counter access from S and U, gated by mcounteren/scounteren. */
	csr_write(mcounteren, 0);
	csr_write(scounteren, 0);
	rt_trap_reset();
	rt_run(MODE_S, p_read_cycle, 0, 0);
	expect_m("rdcycle in S, mcounteren.CY=0", MCAUSE_ILLEGAL, 0xc0002573UL,
		 MODE_S);
	rt_trap_reset();
	rt_run(MODE_U, p_read_instret, 0, 0);
	expect_m("rdinstret in U, mcounteren.IR=0", MCAUSE_ILLEGAL,
		 0xc0202573UL, MODE_U);

	csr_write(mcounteren, 5);
	rt_trap_reset();
	v = rt_run(MODE_S, p_read_cycle, 0, 0);
	expect_none("rdcycle in S, mcounteren.CY=1");
	rt_trap_reset();
	rt_run(MODE_U, p_read_cycle, 0, 0);
	expect_m("rdcycle in U, mcounteren.CY=1, scounteren.CY=0",
		 MCAUSE_ILLEGAL, 0xc0002573UL, MODE_U);
	csr_write(scounteren, 5);
	rt_trap_reset();
	rt_run(MODE_U, p_read_cycle, 0, 0);
	rt_run(MODE_U, p_read_instret, 0, 0);
	expect_none("rdcycle/rdinstret in U, both counteren set");
	rt_trap_reset();
	rt_run(MODE_U, p_read_time, 0, 0);
	expect_m("rdtime in U, counteren.TM=0", MCAUSE_ILLEGAL, 0xc0102573UL,
		 MODE_U);
	csr_write(mcounteren, 7);
	csr_write(scounteren, 7);
	rt_trap_reset();
	u64 t0 = *CLINT_MTIME;
	u64 t = (u64)rt_run(MODE_U, p_read_time, 0, 0);
	u64 t1 = *CLINT_MTIME;
	expect_none("rdtime in U, counteren.TM=1");
	rt_check_true("  mtime <= time <= mtime", t0 <= t && t <= t1);
	csr_write(mcounteren, 0);
	csr_write(scounteren, 0);
}

/* Regular misaligned loads and stores complete in M-mode. */
static void test_misaligned_regular(void)
{
	u64 base = (u64)buf;
	buf[0] = 0x0706050403020100UL;
	buf[1] = 0x0f0e0d0c0b0a0908UL;
	rt_trap_reset();
	u64 a = (u64)p_ld((long)(base + 3), 0);
	u64 b = (u64)p_lw((long)(base + 6), 0);
	p_sd((long)(base + 5), 0x1122334455667788L);
	expect_none("misaligned ld/lw/sd in M");
	rt_check("  ld +3", a, 0x0a09080706050403UL);
	rt_check("  lw +6", b, 0x0000000009080706UL);
	rt_check("  after sd +5 (word 0)", buf[0], 0x6677880403020100UL);
	rt_check("  after sd +5 (word 1)", buf[1], 0x0f0e0d1122334455UL);
}

/* Code written at run time: fence.i makes the new instructions visible. */
static u32 smc_buf[4] __attribute__((aligned(16)));

static long run_smc(u32 first)
{
	smc_buf[0] = first;
	smc_buf[1] = 0x00008067; /* ret */
	__asm__ volatile("fence.i" ::: "memory");
	return ((long (*)(void))(void *)smc_buf)();
}

/* A 32-bit instruction across a 4 KiB boundary, whose second half is rewritten. */
static u8 smc_pages[8192] __attribute__((aligned(4096)));

static long run_smc_straddle(u32 imm)
{
	/* addi a0, zero, imm at offset 4094; ret at 4098. */
	u32 insn = (imm << 20) | (10 << 7) | 0x13;
	*(volatile u16 *)(smc_pages + 4094) = (u16)insn;
	*(volatile u16 *)(smc_pages + 4096) = (u16)(insn >> 16);
	*(volatile u16 *)(smc_pages + 4098) = 0x8082; /* c.jr ra */
	__asm__ volatile("fence.i" ::: "memory");
	return ((long (*)(void))(void *)(smc_pages + 4094))();
}

static void test_more_isa(void)
{
	rt_trap_reset();
	p_load_x0(0, 0);
	expect_m("lw x0 from 0x0 still faults", MCAUSE_LOAD_ACCESS, 0, MODE_M);

	rt_trap_reset();
	p_lr_d(0, 0);
	expect_m("lr.d at 0x0", MCAUSE_LOAD_ACCESS, 0, MODE_M);

	rt_trap_reset();
	p_slliw32(0, 0);
	expect_m("slliw with shamt[5] set", MCAUSE_ILLEGAL, 0x0205151bUL,
		 MODE_M);
	rt_trap_reset();
	p_sraiw32(0, 0);
	expect_m("sraiw with shamt[5] set", MCAUSE_ILLEGAL, 0x4205551bUL,
		 MODE_M);

	static const char *const rsv_names[6] = {
		"reserved c.lwsp x0",	  "reserved c.ldsp x0",
		"reserved c.jr x0",	  "reserved c.addi16sp 0",
		"reserved c.addi4spn 0", "reserved c.addiw x0"};
	static const u64 rsv_bits[6] = {0x4002, 0x6002, 0x8002,
					0x6101, 0x0004, 0x2001};
	for (int i = 0; i < 6; i++) {
		rt_trap_reset();
		p_rsv16(i, 0);
		expect_m(rsv_names[i], MCAUSE_ILLEGAL, rsv_bits[i], MODE_M);
	}

	rt_trap_reset();
	long v = p_jalr_odd(0, 0);
	expect_none("jalr to an odd address clears bit 0");
	rt_check("  landed", (u64)v, 42);

	rt_trap_reset();
	v = run_smc(0x00100513); /* li a0, 1 */
	long v2 = run_smc(0x00200513); /* li a0, 2 */
	long v3 = run_smc(0x07b00513); /* li a0, 123 */
	expect_none("self-modifying code with fence.i");
	rt_check("  1st", (u64)v, 1);
	rt_check("  2nd", (u64)v2, 2);
	rt_check("  3rd", (u64)v3, 123);

	rt_trap_reset();
	v = run_smc_straddle(5);
	v2 = run_smc_straddle(0x7ff);
	v3 = run_smc_straddle(0x123);
	expect_none("self-modifying code across a page boundary");
	rt_check("  1st", (u64)v, 5);
	rt_check("  2nd", (u64)v2, 0x7ff);
	rt_check("  3rd", (u64)v3, 0x123);
}

static void test_more_csr(void)
{
	rt_trap_reset();
	p_csrrc_cycle_x0(0, 0);
	expect_none("csrrc a0, cycle, x0 does not write");
	rt_trap_reset();
	long v = p_custom_csr(0, 0);
	expect_m("unimplemented CSR 0x8ff", MCAUSE_ILLEGAL, 0x8ff02573UL,
		 MODE_M);
	rt_check("  rd unchanged", (u64)v, 0x55);

	rt_puts("-- scratch registers\n");
	csr_write(mscratch, 0x0123456789abcdefUL);
	rt_check("  mscratch", csr_swap(mscratch, (u64)__m_trap_stack_top),
		 0x0123456789abcdefUL);
	csr_write(sscratch, 0xfedcba9876543210UL);
	rt_check("  sscratch", csr_read(sscratch), 0xfedcba9876543210UL);

	rt_puts("-- XLEN fields\n");
	u64 misa = csr_read(misa);
	rt_check("  misa.MXL", misa >> 62, 2);
	const u64 want = (1 << ('I' - 'A')) | (1 << ('M' - 'A')) |
			 (1 << ('A' - 'A')) | (1 << ('F' - 'A')) |
			 (1 << ('D' - 'A')) | (1 << ('C' - 'A')) |
			 (1 << ('S' - 'A')) | (1 << ('U' - 'A'));
	rt_check("  misa has IMAFDCSU", misa & want, want);
	rt_check("  mstatus.UXL/SXL", (csr_read(mstatus) >> 32) & 0xf, 0xa);
	rt_check("  mhartid", csr_read(mhartid), 0);

	rt_puts("-- sstatus is a view of mstatus\n");
	u64 saved = csr_read(mstatus);
	csr_set(mstatus, MSTATUS_MPP | MSTATUS_MPIE | MSTATUS_TVM | MSTATUS_TW |
				 MSTATUS_TSR | MSTATUS_SUM | MSTATUS_SPIE);
	u64 ss = csr_read(sstatus);
	rt_check("  M-only fields hidden",
		 ss & (MSTATUS_MPP | MSTATUS_MPIE | MSTATUS_MIE | MSTATUS_TVM |
		       MSTATUS_TW | MSTATUS_TSR | MSTATUS_MPRV),
		 0);
	rt_check("  SUM and SPIE visible", ss & (MSTATUS_SUM | MSTATUS_SPIE),
		 MSTATUS_SUM | MSTATUS_SPIE);
	rt_check("  UXL visible", (ss >> 32) & 3, 2);
	csr_clear(sstatus, MSTATUS_SUM);
	rt_check("  clearing SUM in sstatus clears it in mstatus",
		 csr_read(mstatus) & MSTATUS_SUM, 0);
	csr_write(mstatus, saved);

	rt_puts("-- medeleg\n");
	csr_write(medeleg, ~0UL);
	u64 md = csr_read(medeleg);
	csr_write(medeleg, 0);
	rt_check("  U ecall, illegal, page faults delegable",
		 md & ((1 << 8) | (1 << 2) | (1 << 12) | (1 << 13) | (1 << 15)),
		 (1 << 8) | (1 << 2) | (1 << 12) | (1 << 13) | (1 << 15));

	rt_puts("-- sie/sip show only delegated interrupts\n");
	csr_write(mideleg, 0);
	csr_write(mie, (1 << 1) | (1 << 5) | (1 << 9));
	rt_check("  sie with mideleg = 0", csr_read(sie), 0);
	csr_write(mideleg, (1 << 1) | (1 << 5) | (1 << 9));
	rt_check("  sie with mideleg = SSI|STI|SEI", csr_read(sie),
		 (1 << 1) | (1 << 5) | (1 << 9));
	csr_write(mie, 0);
	csr_write(mideleg, 0);

	rt_puts("-- time CSR in M\n");
	u64 t0 = *CLINT_MTIME;
	u64 t1 = csr_read(time);
	u64 t2 = *CLINT_MTIME;
	rt_check_true("  mtime <= time <= mtime", t0 <= t1 && t1 <= t2);
}

/* ecall from S delegated by medeleg[9]: handled by S itself. */
static void test_s_ecall_delegated(void)
{
	csr_write(medeleg, 1UL << MCAUSE_ECALL_S);
	rt_s_trap_setup();
	rt_trap_reset();
	rt_run(MODE_S, p_s_ecall_brk, 0, 0);
	csr_write(medeleg, 0);
	rt_puts("-- ecall from S with medeleg[9]\n");
	rt_check("  M traps", rt_mtrap.count, 0);
	rt_check("  S traps", rt_strap.count, 1);
	rt_check("  scause", rt_strap.cause, MCAUSE_ECALL_S);
	rt_check("  sepc", rt_strap.epc, (u64)p_s_ecall_brk + 4);
	rt_check("  SPP", rt_strap.prev, 1);
}

int main(void)
{
	rt_puts("traps: start\n");
	rt_trap_ok = 1;
	test_illegal();
	test_ecall_ebreak();
	test_access_faults();
	test_misaligned();
	test_misaligned_regular();
	test_delegation();
	test_xret();
	test_tsr_tw_tvm();
	test_csr_rules();
	test_more_isa();
	test_more_csr();
	test_s_ecall_delegated();
	rt_trap_ok = 0;
	return rt_finish("traps");
}
