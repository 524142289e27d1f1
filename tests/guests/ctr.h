/*
 * ctr.h: support for the Control Transfer Records guests (ctr_*.c).
 *
 * A CTR guest runs short assembly scenarios with recording enabled and
 * dumps the CTR buffer from M-mode. Everything that can be recorded (the
 * scenarios, the trap handlers, the code that enters and leaves a lower
 * mode) is assembly in one block that starts at `ctr_base`, assembled
 * without RVC except where a compressed instruction is the point, so that
 * recorded PCs are printed as offsets from `ctr_base` and the output does
 * not change when the C code around it does.
 *
 * ctr_run(mode, pc, mctrctl, vsctrctl) enters `pc` in `mode` (CTR_M,
 * CTR_S, CTR_U, CTR_VS, CTR_VU) with mret, after writing vsctrctl and then
 * mctrctl (so recording starts with that mret). The scenario ends with
 * `li a7, CTR_END; ecall`, whatever mode it is in; the M-mode handler then
 * clears mctrctl and vsctrctl first thing (so nothing after the ending
 * trap is recorded) and returns to C. Other exceptions are skipped (the
 * handler adds 4 to xepc: every trapping instruction is 4 bytes) and
 * interrupts just return, so each trap and trap return in a scenario is
 * part of the recorded history. Handlers: M (`ctr_mtrap`), HS/S
 * (`ctr_strap`) and VS (`ctr_vstrap`); an interrupt handler clears the
 * software interrupt it took (CLINT msip for M, sip.SSIP for HS, and in VS
 * its own sip.SSIP, which is hvip.VSSIP).
 *
 * CSRs are accessed by number: binutils 2.40 knows neither Smctr nor H.
 */
#ifndef CTR_H
#define CTR_H

#include "rt/rt.h"
#include "csr.h"

#define CTR_STR_(x) #x
#define CTR_STR(x) CTR_STR_(x)


#define csrr_n(n)                                                              \
	({                                                                     \
		u64 __v;                                                       \
		__asm__ volatile("csrr %0, " CTR_STR(n) : "=r"(__v)::"memory");\
		__v;                                                           \
	})
#define csrw_n(n, v)                                                           \
	__asm__ volatile("csrw " CTR_STR(n) ", %0" ::"r"((u64)(v)) : "memory")

/* Modes for ctr_run: MPP, plus bit 8 for MPV. */
#define CTR_U 0
#define CTR_S 1
#define CTR_M 3
#define CTR_VU 0x100
#define CTR_VS 0x101

/* a7 of the ecall that ends a scenario. */
#define CTR_END 0x5e7

/* xctrctl fields (Smctr chapter 2). */
#define CTL_U (1UL << 0)
#define CTL_S (1UL << 1)
#define CTL_M (1UL << 2)
#define CTL_RASEMU (1UL << 7)
#define CTL_STE (1UL << 8)
#define CTL_MTE (1UL << 9)
#define CTL_BPFRZ (1UL << 11)
#define CTL_LCOFIFRZ (1UL << 12)
#define CTL_EXCINH (1UL << 33)
#define CTL_INTRINH (1UL << 34)
#define CTL_TRETINH (1UL << 35)
#define CTL_NTBREN (1UL << 36)
#define CTL_TKBRINH (1UL << 37)
#define CTL_INDCALLINH (1UL << 40)
#define CTL_DIRCALLINH (1UL << 41)
#define CTL_INDJMPINH (1UL << 42)
#define CTL_DIRJMPINH (1UL << 43)
#define CTL_CORSWAPINH (1UL << 44)
#define CTL_RETINH (1UL << 45)
#define CTL_INDLJMPINH (1UL << 46)
#define CTL_DIRLJMPINH (1UL << 47)

#define STATUS_FROZEN (1UL << 31)
#define STATEEN_CTR (1UL << 54)
#define STATEEN_CSRIND (1UL << 60)

#define CAUSE_ILLEGAL 2
#define CAUSE_BREAKPOINT 3
#define CAUSE_VIRTUAL 22

long ctr_run(long mode, const void *pc, u64 mctrctl, u64 vsctrctl);
extern char ctr_base[], ctr_end[];
/* The trap record of the last skipped exception (any level). */
extern volatile u64 ctr_last_cause;
extern volatile u64 ctr_traps;
extern volatile u64 ctr_arg;

/*
 * The shared assembly: entry/exit and the three handlers. Scenarios in the
 * guest's own block must follow `ctr_base` in the same section: each guest
 * puts its scenarios right after CTR_ASM_RUNTIME in one __asm__ block.
 */
#define CTR_ASM_RUNTIME                                                        \
	".pushsection .text.ctr, \"ax\", @progbits\n"                          \
	".option push\n"                                                       \
	".option norvc\n"                                                      \
	".balign 4096\n"                                                       \
	".globl ctr_base\n"                                                    \
	"ctr_base:\n"                                                          \
	".globl ctr_run\n"                                                     \
	"ctr_run:\n"                                                           \
	"	la t0, ctr_ctx\n"                                              \
	"	sd ra, 0(t0)\n"                                                \
	"	sd sp, 8(t0)\n"                                                \
	"	sd s0, 16(t0)\n"                                               \
	"	sd s1, 24(t0)\n"                                               \
	"	sd s2, 32(t0)\n"                                               \
	"	sd s3, 40(t0)\n"                                               \
	"	sd s4, 48(t0)\n"                                               \
	"	sd s5, 56(t0)\n"                                               \
	"	sd s6, 64(t0)\n"                                               \
	"	sd s7, 72(t0)\n"                                               \
	"	sd s8, 80(t0)\n"                                               \
	"	sd s9, 88(t0)\n"                                               \
	"	sd s10, 96(t0)\n"                                              \
	"	sd s11, 104(t0)\n"                                             \
	"	sd gp, 112(t0)\n"                                              \
	"	sd tp, 120(t0)\n"                                              \
	"	csrr t1, mtvec\n"                                              \
	"	sd t1, 128(t0)\n"                                              \
	"	la t1, ctr_mtrap\n"                                            \
	"	csrw mtvec, t1\n"                                              \
	"	li t1, 0x1800\n"                                               \
	"	csrc mstatus, t1\n"                                            \
	"	andi t2, a0, 3\n"                                              \
	"	slli t2, t2, 11\n"                                             \
	"	csrs mstatus, t2\n"                                            \
	"	li t1, 1\n"                                                    \
	"	slli t1, t1, 39\n"                                             \
	"	csrc mstatus, t1\n"                                            \
	"	srli t2, a0, 8\n"                                              \
	"	slli t2, t2, 39\n"                                             \
	"	csrs mstatus, t2\n"                                            \
	"	csrw mepc, a1\n"                                               \
	"	la sp, ctr_stack_top\n"                                        \
	"	csrw 0x24e, a3\n"                                              \
	"	csrw 0x34e, a2\n"                                              \
	"	mret\n"                                                        \
	"ctr_mtrap:\n"                                                         \
	"	csrw 0x34e, zero\n"                                            \
	"	csrw 0x24e, zero\n"                                            \
	"	csrr t0, mcause\n"                                             \
	"	bltz t0, 2f\n"                                                 \
	"	li t1, 0x5e7\n"                                                \
	"	bne a7, t1, 1f\n"                                              \
	"	li t1, 8\n"                                                    \
	"	bltu t0, t1, 1f\n"                                             \
	"	li t1, 11\n"                                                   \
	"	bgtu t0, t1, 1f\n"                                             \
	"	mv a0, t0\n"                                                   \
	"	la t0, ctr_ctx\n"                                              \
	"	ld t1, 128(t0)\n"                                              \
	"	csrw mtvec, t1\n"                                              \
	"	ld ra, 0(t0)\n"                                                \
	"	ld sp, 8(t0)\n"                                                \
	"	ld s0, 16(t0)\n"                                               \
	"	ld s1, 24(t0)\n"                                               \
	"	ld s2, 32(t0)\n"                                               \
	"	ld s3, 40(t0)\n"                                               \
	"	ld s4, 48(t0)\n"                                               \
	"	ld s5, 56(t0)\n"                                               \
	"	ld s6, 64(t0)\n"                                               \
	"	ld s7, 72(t0)\n"                                               \
	"	ld s8, 80(t0)\n"                                               \
	"	ld s9, 88(t0)\n"                                               \
	"	ld s10, 96(t0)\n"                                              \
	"	ld s11, 104(t0)\n"                                             \
	"	ld gp, 112(t0)\n"                                              \
	"	ld tp, 120(t0)\n"                                              \
	"	li t1, 0x1800\n"                                               \
	"	csrs mstatus, t1\n"                                            \
	"	li t1, 1\n"                                                    \
	"	slli t1, t1, 39\n"                                             \
	"	csrc mstatus, t1\n"                                            \
	"	ret\n"                                                         \
	/* Any other exception into M: count it and skip the instruction. */  \
	"1:	la t1, ctr_last_cause\n"                                       \
	"	sd t0, 0(t1)\n"                                                \
	"	la t1, ctr_traps\n"                                            \
	"	ld t0, 0(t1)\n"                                                \
	"	addi t0, t0, 1\n"                                              \
	"	sd t0, 0(t1)\n"                                                \
	"	csrr t0, mepc\n"                                               \
	"	addi t0, t0, 4\n"                                              \
	"	csrw mepc, t0\n"                                               \
	"	mret\n"                                                        \
	/* An interrupt into M: the machine software interrupt; clear it. */  \
	"2:	li t1, 0x2000000\n"                                            \
	"	sw zero, 0(t1)\n"                                              \
	"	mret\n"                                                        \
	".balign 64\n"                                                         \
	"ctr_strap:\n"                                                         \
	"	csrr t0, scause\n"                                             \
	"	bltz t0, 2f\n"                                                 \
	"	la t1, ctr_last_cause\n"                                       \
	"	sd t0, 0(t1)\n"                                                \
	"	la t1, ctr_traps\n"                                            \
	"	ld t0, 0(t1)\n"                                                \
	"	addi t0, t0, 1\n"                                              \
	"	sd t0, 0(t1)\n"                                                \
	"	csrr t0, sepc\n"                                               \
	"	addi t0, t0, 4\n"                                              \
	"	csrw sepc, t0\n"                                               \
	"	sret\n"                                                        \
	/* An interrupt into S (HS or VS): the software interrupt. */         \
	"2:	csrci sip, 2\n"                                                \
	"	sret\n"                                                        \
	".balign 64\n"                                                         \
	"ctr_vstrap:\n"                                                        \
	"	j ctr_strap\n"                                                 \
	".option pop\n"                                                        \
	".popsection\n"

/*
 * Probes for the access rules of chapter 5: each executes one access (the
 * entry-register probes first select logical entry 0) and ends the run.
 * A trap goes to M (the guests keep these causes undelegated), which
 * records the cause in ctr_last_cause and skips the instruction.
 */
#define CTR_PROBE(name, insns)                                                 \
	".globl " #name "\n" #name ":\n" insns "	li a7, 0x5e7\n	ecall\n"
#define CTR_ASM_PROBES                                                         \
	".pushsection .text.ctr, \"ax\", @progbits\n"                          \
	".option push\n"                                                       \
	".option norvc\n"                                                      \
	CTR_PROBE(p_sctrctl, "	csrr a0, 0x14e\n")                             \
	CTR_PROBE(p_sctrctl_w, "	csrw 0x14e, zero\n")                       \
	CTR_PROBE(p_sctrstatus, "	csrr a0, 0x14f\n")                         \
	CTR_PROBE(p_sctrdepth, "	csrr a0, 0x15f\n")                         \
	CTR_PROBE(p_sctrdepth_w, "	csrw 0x15f, zero\n")                     \
	CTR_PROBE(p_vsctrctl, "	csrr a0, 0x24e\n")                           \
	CTR_PROBE(p_mctrctl, "	csrr a0, 0x34e\n")                             \
	CTR_PROBE(p_sireg, "	li t2, 0x200\n	csrw 0x150, t2\n"               \
			   "	csrr a0, 0x151\n")                            \
	CTR_PROBE(p_sireg2, "	li t2, 0x200\n	csrw 0x150, t2\n"              \
			    "	csrr a0, 0x152\n")                           \
	CTR_PROBE(p_sireg3, "	li t2, 0x200\n	csrw 0x150, t2\n"              \
			    "	csrr a0, 0x153\n")                           \
	CTR_PROBE(p_vsireg, "	li t2, 0x200\n	csrw 0x250, t2\n"              \
			    "	csrr a0, 0x251\n")                           \
	CTR_PROBE(p_sctrclr, "	.word 0x10400073\n")                          \
	".option pop\n"                                                        \
	".popsection\n"

/*
 * Scenarios several guests share: a jump, an illegal instruction (csrr mscratch: a trap
 * from every mode below M, taken where the delegation sends it) and a jump (scn_trap); a
 * nop at which a pending interrupt is taken, then a jump (scn_intr); a jump, an ebreak and
 * a jump (scn_ebreak). Each ends the run with the CTR_END ecall.
 */
#define CTR_ASM_SCENARIOS                                                      \
	".pushsection .text.ctr, \"ax\", @progbits\n"                          \
	".option push\n"                                                       \
	".option norvc\n"                                                      \
	".globl scn_trap\n"                                                    \
	"scn_trap:\n"                                                          \
	"	jal zero, 1f\n"                                               \
	"1:	csrr zero, mscratch\n"                                        \
	"	jal zero, 1f\n"                                               \
	"1:	li a7, 0x5e7\n"                                               \
	"	ecall\n"                                                      \
	".globl scn_intr\n"                                                    \
	"scn_intr:\n"                                                          \
	"	nop\n"                                                        \
	"	jal zero, 1f\n"                                               \
	"1:	li a7, 0x5e7\n"                                               \
	"	ecall\n"                                                      \
	".globl scn_ebreak\n"                                                  \
	"scn_ebreak:\n"                                                        \
	"	jal zero, 1f\n"                                               \
	"1:	ebreak\n"                                                     \
	"	jal zero, 1f\n"                                               \
	"1:	li a7, 0x5e7\n"                                               \
	"	ecall\n"                                                      \
	".option pop\n"                                                        \
	".popsection\n"

extern char scn_trap[], scn_intr[], scn_ebreak[];

extern char p_sctrctl[], p_sctrctl_w[], p_sctrstatus[], p_sctrdepth[],
	p_sctrdepth_w[], p_vsctrctl[], p_mctrctl[], p_sireg[], p_sireg2[],
	p_sireg3[], p_vsireg[], p_sctrclr[];

/* Run a probe in `mode`; returns the cause of the trap it took, or 0. */
static __attribute__((unused)) u64 ctr_probe(long mode, const void *probe)
{
	ctr_last_cause = 0;
	ctr_run(mode, probe, 0, 0);
	return ctr_last_cause;
}

/* Statics the assembly uses. */
u64 ctr_ctx[17];
volatile u64 ctr_last_cause;
volatile u64 ctr_traps;
/* An argument for scenarios that need one. */
volatile u64 ctr_arg;
static u8 ctr_stack[4096] __attribute__((aligned(16), used));
__asm__(".globl ctr_stack_top\n.set ctr_stack_top, ctr_stack + 4096\n");

extern char ctr_strap[], ctr_vstrap[];

/* Print a recorded PC: 0, or an offset from ctr_base, or (outside) raw. */
static __attribute__((unused)) void ctr_put_pc(u64 pc)
{
	u64 base = (u64)ctr_base;
	if (pc == 0) {
		rt_puts("0");
	} else if (pc >= base && pc < base + 0x10000) {
		static const char hex[] = "0123456789abcdef";
		u64 off = pc - base;
		rt_puts("+");
		for (int d = 12; d >= 0; d -= 4)
			if (off >> d || d == 0)
				rt_putc(hex[(off >> d) & 0xf]);
	} else {
		rt_put_hex(pc);
	}
}

/* Select logical entry i through siselect (from M-mode). */
static inline void ctr_select(u64 i)
{
	csrw_n(CSR_SISELECT, 0x200 + i);
}

/*
 * Dump the buffer on one line: "title: wrptr=N [frozen]" and then, youngest
 * first, every entry with V = 1 down to the first invalid one (at most
 * `max`), as "source>target/type". One line per scenario keeps the golden
 * files and the list of QEMU departures in tests/tests/ctr.rs line-based.
 * ctrdata is printed as TYPE only: QEMU does not implement cycle counting
 * (an optional part of section 6.3); the CC fields are checked by the
 * vmm-only guest ctr_strict.
 */
static __attribute__((unused)) void ctr_dump(const char *title, u64 max)
{
	u64 st = csrr_n(CSR_SCTRSTATUS);
	rt_puts(title);
	rt_puts(": wrptr=");
	rt_put_dec(st & 0xff);
	rt_puts(st & STATUS_FROZEN ? " frozen" : "");
	for (u64 i = 0; i < max; i++) {
		ctr_select(i);
		u64 src = csrr_n(CSR_SIREG);
		if (!(src & 1))
			break;
		u64 dst = csrr_n(CSR_SIREG2);
		u64 data = csrr_n(CSR_SIREG3);
		rt_puts(i ? " " : ": ");
		ctr_put_pc(src & ~1UL);
		rt_puts(">");
		ctr_put_pc(dst & ~1UL);
		rt_puts("/");
		rt_put_dec(data & 0xf);
	}
	rt_puts("\n");
}

/* The types of the valid entries, youngest first, on one line. */
static __attribute__((unused)) void ctr_types(const char *title, u64 max)
{
	rt_puts(title);
	rt_puts(":");
	for (u64 i = 0; i < max; i++) {
		ctr_select(i);
		if (!(csrr_n(CSR_SIREG) & 1))
			break;
		rt_puts(" ");
		rt_put_dec(csrr_n(CSR_SIREG3) & 0xf);
	}
	rt_puts("\n");
}

/* Start from an empty buffer at depth 64 with WRPTR 0 and not frozen. */
static __attribute__((unused)) void ctr_clear(void)
{
	csrw_n(CSR_MCTRCTL, 0);
	csrw_n(CSR_VSCTRCTL, 0);
	__asm__ volatile(".word 0x10400073" ::: "memory"); /* sctrclr */
	csrw_n(CSR_SCTRDEPTH, 2);
	csrw_n(CSR_SCTRSTATUS, 0);
	ctr_traps = 0;
	ctr_last_cause = 0;
}

/* Trap vectors for the lower levels and the delegations a test wants. */
static __attribute__((unused)) void ctr_setup(u64 medeleg, u64 hedeleg)
{
	csrw_n(0x105, (u64)ctr_strap); /* stvec */
	csrw_n(CSR_VSTVEC, (u64)ctr_vstrap);
	csrw_n(CSR_MEDELEG, medeleg);
	csrw_n(CSR_HEDELEG, hedeleg);
	csrw_n(CSR_HGATP, 0);
	csrw_n(0x180, 0);   /* satp */
	csrw_n(0x280, 0);   /* vsatp */
}

#endif
