/*
 * h.h: support for the hypervisor-extension test guests (h_*.c).
 *
 * Header-only on purpose: every guest is one .c file linked with the
 * unchanged runtime (rt/crt0.S, rt/rt.c), so this header holds, once per
 * guest, its own trap entries (M, HS and VS), trap records, lower-mode
 * runs with V=1, G-stage tables and probe routines in assembly.
 *
 * The assembler (binutils 2.40 without the H extension) does not know the
 * H mnemonics nor the H CSR names: CSRs are accessed by number and the
 * H instructions are emitted with .insn.
 *
 * Trap model: every exception is recorded in h_m / h_s / h_vs (by the
 * level that takes it) and execution resumes after the faulting
 * instruction (4 bytes: all probes are assembled without RVC; for
 * illegal/virtual-instruction traps the length comes from xtval when
 * nonzero), or at ra for instruction fetch faults (causes 1, 12, 20).
 * An ecall with a7 = RT_MAGIC (or ebreak with a7 = RT_MAGIC_BRK) ends a
 * lower-mode run: VS and HS forward it upwards, M resumes rt_run_at.
 */
#ifndef H_H
#define H_H

#include "rt/rt.h"
#include "csr.h"
#include "csr_n.h"

/* mstatus (H additions). */
#define SSTATUS_SPP (1UL << 8)
#define SSTATUS_SPIE (1UL << 5)
#define SSTATUS_SIE (1UL << 1)

/* hstatus. */
#define HSTATUS_VSBE (1UL << 5)

/* Interrupt bits. */
#define IRQ_VSSI 2
#define IRQ_VSTI 6
#define IRQ_VSEI 10
#define IRQ_SGEI 12

/* Exception causes. */
#define CAUSE_MISALIGNED_FETCH 0
#define CAUSE_FETCH_ACCESS 1
#define CAUSE_ILLEGAL 2
#define CAUSE_BREAKPOINT 3
#define CAUSE_LOAD_ACCESS 5
#define CAUSE_STORE_ACCESS 7
#define CAUSE_ECALL_U 8
#define CAUSE_ECALL_HS 9
#define CAUSE_ECALL_VS 10
#define CAUSE_ECALL_M 11
#define CAUSE_FETCH_PF 12
#define CAUSE_LOAD_PF 13
#define CAUSE_STORE_PF 15
#define CAUSE_FETCH_GPF 20
#define CAUSE_LOAD_GPF 21
#define CAUSE_VIRT_INSN 22
#define CAUSE_STORE_GPF 23

/* Page-table entries. */
#define PTE_V (1UL << 0)
#define PTE_R (1UL << 1)
#define PTE_W (1UL << 2)
#define PTE_X (1UL << 3)
#define PTE_U (1UL << 4)
#define PTE_G (1UL << 5)
#define PTE_A (1UL << 6)
#define PTE_D (1UL << 7)
#define PTE_AD (PTE_A | PTE_D)
#define PTE_URWX (PTE_U | PTE_R | PTE_W | PTE_X | PTE_AD)

#define SATP_SV39 (8UL << 60)
#define HGATP_SV39X4 (8UL << 60)
#define HGATP_SV48X4 (9UL << 60)
#define HGATP_SV57X4 (10UL << 60)
#define HGATP_VMID_SHIFT 44
#define HGATP_VMID_MASK (0x3fffUL << 44)
#define HGATP_PPN_MASK ((1UL << 44) - 1)

static inline u64 h_pte_leaf(u64 pa, u64 flags)
{
	return ((pa >> 12) << 10) | flags | PTE_V;
}
static inline u64 h_pte_table(const void *next)
{
	return (((u64)next >> 12) << 10) | PTE_V;
}

/* ---- Trap records ---- */

struct h_rec {
	volatile u64 count;
	volatile u64 cause;
	volatile u64 tval;   /* mtval / stval (vstval in VS) */
	volatile u64 epc;
	volatile u64 tval2;  /* mtval2 / htval */
	volatile u64 tinst;  /* mtinst / htinst */
	volatile u64 status; /* mstatus / sstatus at trap entry */
	volatile u64 hstatus;
};
struct h_rec h_m, h_s, h_vs;
void (*volatile h_m_irq)(u64 cause, struct rt_frame *f);
void (*volatile h_s_irq)(u64 cause, struct rt_frame *f);
void (*volatile h_vs_irq)(u64 cause, struct rt_frame *f);

static u8 h_vs_stack[8192] __attribute__((aligned(16)));

static inline void h_reset(void)
{
	struct h_rec *r[3] = { &h_m, &h_s, &h_vs };
	for (int i = 0; i < 3; i++) {
		r[i]->count = r[i]->cause = r[i]->tval = r[i]->epc = 0;
		r[i]->tval2 = r[i]->tinst = r[i]->status = r[i]->hstatus = 0;
	}
}

static void h_fatal(const char *who, u64 cause, u64 epc, u64 tval)
{
	rt_puts("FATAL: unexpected trap in ");
	rt_puts(who);
	rt_puts(" handler: cause=");
	rt_put_hex(cause);
	rt_puts(" epc=");
	rt_put_hex(epc);
	rt_puts(" tval=");
	rt_put_hex(tval);
	rt_putc('\n');
	rt_exit(100);
}

/* When set, every exception resumes at ra (for fetch probes whose fault
   might be reported with a non-fetch cause). */
static volatile int h_resume_ra;

static inline u64 h_next_pc(u64 cause, u64 epc, u64 tval, u64 ra)
{
	if (h_resume_ra)
		return ra;
	if (cause == CAUSE_FETCH_ACCESS || cause == CAUSE_FETCH_PF ||
	    cause == CAUSE_FETCH_GPF)
		return ra;
	if ((cause == CAUSE_ILLEGAL || cause == CAUSE_VIRT_INSN) && tval)
		return epc + ((tval & 3) == 3 ? 4 : 2);
	return epc + 4;
}

static inline int h_is_ecall(u64 cause)
{
	return cause >= CAUSE_ECALL_U && cause <= CAUSE_ECALL_M;
}

__attribute__((used)) void h_m_trap(struct rt_frame *f)
{
	u64 cause = csr_read(mcause), epc = csr_read(mepc),
	    tval = csr_read(mtval);
	if (cause & INTERRUPT_BIT) {
		if (!h_m_irq)
			h_fatal("M", cause, epc, tval);
		h_m_irq(cause & ~INTERRUPT_BIT, f);
		return;
	}
	if ((h_is_ecall(cause) && f->x[17] == RT_MAGIC) ||
	    (cause == CAUSE_BREAKPOINT && f->x[17] == RT_MAGIC_BRK))
		rt_resume_m((long)f->x[10]);
	if (h_m.count > 1000)
		h_fatal("M", cause, epc, tval);
	h_m.count++;
	h_m.cause = cause;
	h_m.tval = tval;
	h_m.epc = epc;
	h_m.tval2 = csrr_n(CSR_MTVAL2);
	h_m.tinst = csrr_n(CSR_MTINST);
	h_m.status = csr_read(mstatus);
	h_m.hstatus = csrr_n(CSR_HSTATUS);
	csr_write(mepc, h_next_pc(cause, epc, tval, f->x[1]));
}

__attribute__((used)) void h_s_trap(struct rt_frame *f)
{
	u64 cause = csr_read(scause), epc = csr_read(sepc),
	    tval = csr_read(stval);
	if (cause & INTERRUPT_BIT) {
		if (!h_s_irq)
			h_fatal("HS", cause, epc, tval);
		h_s_irq(cause & ~INTERRUPT_BIT, f);
		return;
	}
	if ((h_is_ecall(cause) && f->x[17] == RT_MAGIC) ||
	    (cause == CAUSE_BREAKPOINT && f->x[17] == RT_MAGIC_BRK))
		rt_s_to_m((long)f->x[10]);
	if (h_s.count > 1000)
		h_fatal("HS", cause, epc, tval);
	h_s.count++;
	h_s.cause = cause;
	h_s.tval = tval;
	h_s.epc = epc;
	h_s.tval2 = csrr_n(CSR_HTVAL);
	h_s.tinst = csrr_n(CSR_HTINST);
	h_s.status = csr_read(sstatus);
	h_s.hstatus = csrr_n(CSR_HSTATUS);
	csr_write(sepc, h_next_pc(cause, epc, tval, f->x[1]));
}

/* Runs in VS-mode: sstatus/scause/... are the vs* registers. */
__attribute__((used)) void h_vs_trap(struct rt_frame *f)
{
	u64 cause = csr_read(scause), epc = csr_read(sepc),
	    tval = csr_read(stval);
	if (cause & INTERRUPT_BIT) {
		if (!h_vs_irq)
			h_fatal("VS", cause, epc, tval);
		h_vs_irq(cause & ~INTERRUPT_BIT, f);
		return;
	}
	if ((h_is_ecall(cause) && f->x[17] == RT_MAGIC) ||
	    (cause == CAUSE_BREAKPOINT && f->x[17] == RT_MAGIC_BRK))
		rt_s_to_m((long)f->x[10]); /* ecall from VS: to HS or M */
	if (h_vs.count > 1000)
		h_fatal("VS", cause, epc, tval);
	h_vs.count++;
	h_vs.cause = cause;
	h_vs.tval = tval;
	h_vs.epc = epc;
	h_vs.status = csr_read(sstatus);
	csr_write(sepc, h_next_pc(cause, epc, tval, f->x[1]));
}

void h_m_entry(void);
void h_s_entry(void);
void h_vs_entry(void);

/* Trap entries: the runtime's frame layout, calling the handlers above. */
#define H_ENTRY_ASM(name, scratch, handler, ret)                               \
	".balign 256\n.globl " name "\n" name ":\n"                            \
	"	csrrw sp, " scratch ", sp\n"                                   \
	"	addi sp, sp, -256\n"                                           \
	"	.irp r,1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n" \
	"	sd x\\r, \\r*8(sp)\n"                                         \
	"	.endr\n"                                                      \
	"	csrr t0, " scratch "\n"                                        \
	"	sd t0, 16(sp)\n"                                               \
	"	mv a0, sp\n"                                                   \
	"	call " handler "\n"                                            \
	"	addi t0, sp, 256\n"                                            \
	"	csrw " scratch ", t0\n"                                        \
	"	.irp r,1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n" \
	"	ld x\\r, \\r*8(sp)\n"                                         \
	"	.endr\n"                                                      \
	"	ld sp, 16(sp)\n"                                               \
	"	" ret "\n"
__asm__(".pushsection .text\n"
	H_ENTRY_ASM("h_m_entry", "mscratch", "h_m_trap", "mret")
	H_ENTRY_ASM("h_s_entry", "sscratch", "h_s_trap", "sret")
	H_ENTRY_ASM("h_vs_entry", "sscratch", "h_vs_trap", "sret")
	".popsection\n");

/* ---- G-stage tables (Sv39x4): identity, all U=1 RWX ---- */

static u64 h_groot[2048] __attribute__((aligned(16384)));

static inline u64 h_hgatp_sv39x4(const void *root, u64 vmid)
{
	return HGATP_SV39X4 | (vmid << HGATP_VMID_SHIFT) | ((u64)root >> 12);
}

static inline void h_fence_gvma_all(void)
{
	/* hfence.gvma x0, x0 */
	__asm__ volatile(".insn r 0x73, 0, 0x31, x0, x0, x0" ::: "memory");
}
static inline void h_fence_vvma_all(void)
{
	/* hfence.vvma x0, x0 */
	__asm__ volatile(".insn r 0x73, 0, 0x11, x0, x0, x0" ::: "memory");
	__asm__ volatile("sfence.vma" ::: "memory");
}

/*
 * Machine setup for the H guests (call first in main, from M): own trap
 * vectors, VS trap stack, G-stage identity map of GPA 0..2 GiB+1 GiB (device
 * space and the 1 GiB of RAM at 0x8000_0000) with hgatp = Sv39x4, vsatp =
 * Bare, vsstatus.FS = Initial, everything else cleared.
 */
static void h_init(void)
{
	/* No machine timer interrupt pending (mtimecmp's reset value is
	   unspecified; QEMU resets it to 0, which makes MTIP pending). */
	*CLINT_MTIMECMP = ~0UL;
	csr_write(mtvec, (u64)h_m_entry);
	csr_write(stvec, (u64)h_s_entry);
	csr_write(sscratch, (u64)__s_trap_stack_top);
	csrw_n(CSR_VSTVEC, (u64)h_vs_entry);
	csrw_n(CSR_VSSCRATCH, (u64)(h_vs_stack + sizeof(h_vs_stack)));
	csrw_n(CSR_HSTATUS, 0);
	csrw_n(CSR_HEDELEG, 0);
	csrw_n(CSR_HIDELEG, 0);
	csrw_n(CSR_HVIP, 0);
	csrw_n(CSR_HIE, 0);
	csrw_n(CSR_HCOUNTEREN, 0);
	csrw_n(CSR_HTIMEDELTA, 0);
	csrw_n(CSR_VSATP, 0);
	csrw_n(CSR_VSSTATUS, MSTATUS_FS_INITIAL);
	csrw_n(CSR_VSIE, 0);
	for (int i = 0; i < 2048; i++)
		h_groot[i] = 0;
	h_groot[0] = h_pte_leaf(0x00000000UL, PTE_URWX);
	h_groot[2] = h_pte_leaf(0x80000000UL, PTE_URWX);
	csrw_n(CSR_HGATP, h_hgatp_sv39x4(h_groot, 0));
	h_fence_gvma_all();
	csr_clear(mstatus, MSTATUS_MPV | MSTATUS_GVA);
	h_reset();
}

/* Runs fn(a0, a1) in `mode` (MODE_S / MODE_U) with V = v; returns its a0. */
static long h_run(int v, long mode, rt_fn fn, long a0, long a1)
{
	if (v)
		csr_set(mstatus, MSTATUS_MPV);
	else
		csr_clear(mstatus, MSTATUS_MPV);
	long r = rt_run(mode, fn, a0, a1);
	csr_clear(mstatus, MSTATUS_MPV | MSTATUS_GVA);
	return r;
}
#define run_hs(fn, a0, a1) h_run(0, MODE_S, (rt_fn)(fn), (long)(a0), (long)(a1))
#define run_u(fn, a0, a1) h_run(0, MODE_U, (rt_fn)(fn), (long)(a0), (long)(a1))
#define run_vs(fn, a0, a1) h_run(1, MODE_S, (rt_fn)(fn), (long)(a0), (long)(a1))
#define run_vu(fn, a0, a1) h_run(1, MODE_U, (rt_fn)(fn), (long)(a0), (long)(a1))

/* ---- Probes (no RVC: a faulting probe is resumed 4 bytes later) ---- */

long hp_lb(long, long), hp_lbu(long, long), hp_lh(long, long),
	hp_lhu(long, long), hp_lw(long, long), hp_lwu(long, long),
	hp_ld(long, long), hp_sb(long, long), hp_sh(long, long),
	hp_sw(long, long), hp_sd(long, long), hp_fetch(long, long),
	hp_hlv_b(long, long), hp_hlv_bu(long, long), hp_hlv_h(long, long),
	hp_hlv_hu(long, long), hp_hlv_w(long, long), hp_hlv_wu(long, long),
	hp_hlv_d(long, long), hp_hlvx_hu(long, long), hp_hlvx_wu(long, long),
	hp_hsv_b(long, long), hp_hsv_h(long, long), hp_hsv_w(long, long),
	hp_hsv_d(long, long), hp_hfence_gvma(long, long),
	hp_hfence_vvma(long, long), hp_sret(long, long), hp_wfi(long, long),
	hp_sfence(long, long), hp_ecall(long, long), hp_ebreak(long, long),
	hp_nop(long, long);
extern char hp_ret42[];

__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".balign 4\n"
	".globl hp_lb\n hp_lb: lb a0, 0(a0)\n ret\n"
	".globl hp_lbu\n hp_lbu: lbu a0, 0(a0)\n ret\n"
	".globl hp_lh\n hp_lh: lh a0, 0(a0)\n ret\n"
	".globl hp_lhu\n hp_lhu: lhu a0, 0(a0)\n ret\n"
	".globl hp_lw\n hp_lw: lw a0, 0(a0)\n ret\n"
	".globl hp_lwu\n hp_lwu: lwu a0, 0(a0)\n ret\n"
	".globl hp_ld\n hp_ld: ld a0, 0(a0)\n ret\n"
	".globl hp_sb\n hp_sb: sb a1, 0(a0)\n ret\n"
	".globl hp_sh\n hp_sh: sh a1, 0(a0)\n ret\n"
	".globl hp_sw\n hp_sw: sw a1, 0(a0)\n ret\n"
	".globl hp_sd\n hp_sd: sd a1, 0(a0)\n ret\n"
	/* Calls a0; a fetch fault resumes at ra (after the jalr). */
	".globl hp_fetch\n hp_fetch: mv t1, ra\n li a1, 0\n jalr ra, 0(a0)\n"
	" mv ra, t1\n mv a0, a1\n ret\n"
	".globl hp_ret42\n hp_ret42: li a1, 42\n ret\n"
	/* hlv/hlvx/hsv: .insn r opcode, funct3, funct7, rd, rs1, rs2 */
	".globl hp_hlv_b\n hp_hlv_b: .insn r 0x73, 4, 0x30, a0, a0, x0\n ret\n"
	".globl hp_hlv_bu\n hp_hlv_bu: .insn r 0x73, 4, 0x30, a0, a0, x1\n ret\n"
	".globl hp_hlv_h\n hp_hlv_h: .insn r 0x73, 4, 0x32, a0, a0, x0\n ret\n"
	".globl hp_hlv_hu\n hp_hlv_hu: .insn r 0x73, 4, 0x32, a0, a0, x1\n ret\n"
	".globl hp_hlvx_hu\n hp_hlvx_hu: .insn r 0x73, 4, 0x32, a0, a0, x3\n ret\n"
	".globl hp_hlv_w\n hp_hlv_w: .insn r 0x73, 4, 0x34, a0, a0, x0\n ret\n"
	".globl hp_hlv_wu\n hp_hlv_wu: .insn r 0x73, 4, 0x34, a0, a0, x1\n ret\n"
	".globl hp_hlvx_wu\n hp_hlvx_wu: .insn r 0x73, 4, 0x34, a0, a0, x3\n ret\n"
	".globl hp_hlv_d\n hp_hlv_d: .insn r 0x73, 4, 0x36, a0, a0, x0\n ret\n"
	".globl hp_hsv_b\n hp_hsv_b: .insn r 0x73, 4, 0x31, x0, a0, a1\n ret\n"
	".globl hp_hsv_h\n hp_hsv_h: .insn r 0x73, 4, 0x33, x0, a0, a1\n ret\n"
	".globl hp_hsv_w\n hp_hsv_w: .insn r 0x73, 4, 0x35, x0, a0, a1\n ret\n"
	".globl hp_hsv_d\n hp_hsv_d: .insn r 0x73, 4, 0x37, x0, a0, a1\n ret\n"
	/* hfence.gvma a0, a1 / hfence.vvma a0, a1 */
	".globl hp_hfence_gvma\n hp_hfence_gvma: .insn r 0x73, 0, 0x31, x0, a0, a1\n ret\n"
	".globl hp_hfence_vvma\n hp_hfence_vvma: .insn r 0x73, 0, 0x11, x0, a0, a1\n ret\n"
	/* sret as a probe: with sepc = the next instruction it just goes on. */
	".globl hp_sret\n hp_sret: la t0, 1f\n csrw sepc, t0\n sret\n1: ret\n"
	".globl hp_wfi\n hp_wfi: wfi\n ret\n"
	".globl hp_sfence\n hp_sfence: sfence.vma\n ret\n"
	".globl hp_ecall\n hp_ecall: ecall\n ret\n"
	".globl hp_ebreak\n hp_ebreak: ebreak\n ret\n"
	".globl hp_nop\n hp_nop: ret\n"
	".option pop\n"
	".popsection\n");

/*
 * CSR probes: H_CSRR_PROBE(f, n) defines long f(long, long) that returns
 * csrr n; H_CSRW_PROBE(f, n) defines one that writes a0 to n (csrw) and
 * returns the old value (csrrw).
 */
#define H_CSRR_PROBE(f, n)                                                     \
	long f(long, long);                                                    \
	__asm__(".pushsection .text\n.option push\n.option norvc\n"            \
		".globl " #f "\n" #f ": csrr a0, " H_STR(n) "\nret\n"          \
		".option pop\n.popsection\n")
#define H_CSRW_PROBE(f, n)                                                     \
	long f(long, long);                                                    \
	__asm__(".pushsection .text\n.option push\n.option norvc\n"            \
		".globl " #f "\n" #f ": csrrw a0, " H_STR(n) ", a0\nret\n"     \
		".option pop\n.popsection\n")

/* Instruction encodings (for checking xtval of illegal/virtual insns). */
#define H_ENC_CSRR(n, rd) (((u32)(n) << 20) | (2u << 12) | ((u32)(rd) << 7) | 0x73u)
#define H_ENC_CSRRW(n, rd, rs1)                                                \
	(((u32)(n) << 20) | ((u32)(rs1) << 15) | (1u << 12) |                  \
	 ((u32)(rd) << 7) | 0x73u)
#define H_ENC_SRET 0x10200073u
#define H_ENC_WFI 0x10500073u
#define H_ENC_SFENCE 0x12000073u
#define H_REG_A0 10
#define H_REG_A1 11

/*
 * expect(): runs fn(a0) in (v, mode) and checks the cause of the trap taken
 * to M (to_hs = 0) or HS (to_hs = 1), or NO_TRAP. For illegal/virtual-
 * instruction traps it also checks xtval = the instruction bits (unless
 * h_tval_check = 0), xtinst = 0 and the recorded previous V.
 */
static int h_tval_check = 1;
#define NO_TRAP (~0UL)

/* Runs fn in (v, mode); checks where it trapped and what was recorded. */
static __attribute__((unused)) void expect(const char *name, int v, long mode, rt_fn fn, long a0,
		   u64 want_cause, int to_hs)
{
	h_reset();
	h_run(v, mode, fn, a0, 0);
	struct h_rec *r = to_hs ? &h_s : &h_m;
	struct h_rec *other = to_hs ? &h_m : &h_s;
	u64 got = r->count ? r->cause : NO_TRAP;
	if (other->count)
		got = 0x1000 | other->cause; /* trapped to the wrong level */
	if (!rt_check(name, got, want_cause) || got == NO_TRAP)
		return;
	if (want_cause == CAUSE_ILLEGAL || want_cause == CAUSE_VIRT_INSN) {
		u32 insn = *(volatile u32 *)r->epc;
		if (h_tval_check && r->tval != insn) {
			rt_check("  xtval = instruction bits", r->tval, insn);
		}
		if (r->tinst != 0)
			rt_check("  xtinst = 0", r->tinst, 0);
		u64 prev_v = to_hs ? (r->hstatus & HSTATUS_SPV) != 0
				   : (r->status & MSTATUS_MPV) != 0;
		if (prev_v != (u64)v)
			rt_check("  previous V", prev_v, (u64)v);
	}
}


/* The transformed-instruction values allowed in xtinst for an explicit
   access at offset 0 (no misalignment): loads keep rd/funct3/opcode,
   stores rs2/funct3/opcode, HLV/HLVX/HSV everything but rs1. */
static inline u32 h_xform_load(u32 insn) { return insn & 0x00007fffu; }
static inline u32 h_xform_store(u32 insn) { return insn & 0x01f0707fu; }
static inline u32 h_xform_hlsv(u32 insn) { return insn & ~(0x1fu << 15); }
static inline u32 h_insn_at(const void *fn) { return *(volatile u32 *)fn; }

/*
 * Checks a guest-page fault recorded in r (h_m or h_s): cause, xtval =
 * guest VA, mtval2/htval = GPA >> 2 (nonzero: both QEMU and the project
 * write it, although zero is allowed by the spec), GVA = 1, previous V = 1
 * and xtinst = 0 or `xform` (the transformed instruction; 0 for fetches).
 */
static __attribute__((unused)) void h_check_gpf(const char *name,
						struct h_rec *r, u64 cause,
						u64 va, u64 gpa, u32 xform)
{
	int hs = r == &h_s;
	if (!rt_check(name, r->count ? r->cause : ~0UL, cause))
		return;
	rt_check("  xtval = guest VA", r->tval, va);
	rt_check("  htval/mtval2 = GPA >> 2", r->tval2, gpa >> 2);
	rt_check("  GVA = 1",
		 hs ? (r->hstatus & HSTATUS_GVA) != 0
		    : (r->status & MSTATUS_GVA) != 0,
		 1);
	rt_check("  previous V = 1",
		 hs ? (r->hstatus & HSTATUS_SPV) != 0
		    : (r->status & MSTATUS_MPV) != 0,
		 1);
	if (r->tinst != 0 && r->tinst != xform)
		rt_check("  xtinst = 0 or transformed insn", r->tinst, xform);
}

#endif
