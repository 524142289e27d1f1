/* sbi_vinst: an S-mode guest kernel for `vmm run` (linked with guest/sdk/vs/, starts in VS-mode)
   that provokes every virtual-instruction case a guest can reach, from VS-mode and from
   VU-mode, and checks what it gets back from the VMM:
   - an illegal-instruction exception (scause 2) with stval = the instruction bits, which
     is how `vmm run` reflects a virtual-instruction exit it does not emulate;
   - for WFI (trapped when the VMM sets hstatus.VTW) and reads of `time` (trapped when it
     clears hcounteren.TM), no exception at all: WFI returns once the timer deadline has
     passed, and `time` reads are nonzero and monotonic, whether the VMM emulates them or
     the hart executes them;
   - for the illegal (not virtual) neighbours (M-level CSRs, a write to a read-only
     hypervisor CSR, MRET), an illegal-instruction exception the hart delegates straight to
     the guest: tests/tests/run.rs checks the VMM saw no exit for them.
   The VU-mode probes run with vsatp Bare (U-mode at physical addresses) and come back to
   VS-mode with an ECALL. Shuts down through SRST, status 0 when every check passed. */
#include "vs/sbi.h"

#define SSTATUS_SPP (1UL << 8)
#define SIE_STIE (1UL << 5)
#define CAUSE_ILLEGAL 2
#define COUNTEREN_TM (1UL << 1)

/* Written by trap_entry: traps taken since the last reset, and the last one's registers. */
struct trap_rec {
	u64 count, cause, tval, epc, t1;
};
volatile struct trap_rec trap_rec;
/* Callee-saved registers of run_in_vu's caller. */
u64 vu_ctx[16];
/* What HLV/HSV probes point at (they trap before touching it). */
static volatile u64 scratch[2];

typedef u64 (*probe_fn)(u64);
u64 run_in_vu(probe_fn f, u64 arg);
void trap_entry(void);

/* Probes: one instruction, then `ret`, so sepc + 4 resumes at the `ret`. */
#define PROBE(name, insn) ".globl " #name "\n.align 2\n" #name ":\n " insn "\n ret\n"
u64 p_rd_hstatus(u64), p_wr_hstatus(u64), p_rd_hgatp(u64), p_rd_htval(u64),
	p_rd_hgeip(u64), p_wr_hgeip(u64), p_rd_vsstatus(u64), p_wr_vsatp(u64),
	p_rd_mstatus(u64), p_rd_mtval2(u64), p_rd_sstatus(u64), p_rd_satp(u64),
	p_hlv_b(u64), p_hlv_d(u64), p_hlvx_wu(u64), p_hsv_w(u64), p_hfence_vvma(u64),
	p_hfence_gvma(u64), p_sret(u64), p_mret(u64), p_sfence_vma(u64), p_wfi(u64),
	p_rdtime(u64);

__asm__(".text\n"
	PROBE(p_rd_hstatus, "csrr a0, 0x600")
	PROBE(p_wr_hstatus, "csrw 0x600, a0")
	PROBE(p_rd_hgatp, "csrr a0, 0x680")
	PROBE(p_rd_htval, "csrr a0, 0x643")
	PROBE(p_rd_hgeip, "csrr a0, 0xe12")
	PROBE(p_wr_hgeip, "csrw 0xe12, a0")
	PROBE(p_rd_vsstatus, "csrr a0, 0x200")
	PROBE(p_wr_vsatp, "csrw 0x280, a0")
	PROBE(p_rd_mstatus, "csrr a0, 0x300")
	PROBE(p_rd_mtval2, "csrr a0, 0x34b")
	PROBE(p_rd_sstatus, "csrr a0, 0x100")
	PROBE(p_rd_satp, "csrr a0, 0x180")
	/* .insn r opcode, funct3, funct7, rd, rs1, rs2 */
	PROBE(p_hlv_b, ".insn r 0x73, 4, 0x30, a0, a0, x0")
	PROBE(p_hlv_d, ".insn r 0x73, 4, 0x36, a0, a0, x0")
	PROBE(p_hlvx_wu, ".insn r 0x73, 4, 0x34, a0, a0, x3")
	PROBE(p_hsv_w, ".insn r 0x73, 4, 0x35, x0, a0, a0")
	PROBE(p_hfence_vvma, ".insn r 0x73, 0, 0x11, x0, x0, x0")
	PROBE(p_hfence_gvma, ".insn r 0x73, 0, 0x31, x0, x0, x0")
	PROBE(p_sret, "sret")
	PROBE(p_mret, "mret")
	PROBE(p_sfence_vma, "sfence.vma x0, x0")
	PROBE(p_wfi, "wfi")
	PROBE(p_rdtime, "rdtime a0")
	/* The guest's trap handler: records scause/stval/sepc and skips the instruction;
	   an ECALL from VU-mode (scause 8) returns to VS-mode at vu_return instead. */
	".globl trap_entry\n"
	".align 4\n"
	"trap_entry:\n"
	" csrw sscratch, t0\n"
	" la t0, trap_rec\n"
	" sd t1, 32(t0)\n"
	" csrr t1, scause\n"
	" addi t1, t1, -8\n"
	" beqz t1, 1f\n"
	" addi t1, t1, 8\n"
	" sd t1, 8(t0)\n"
	" csrr t1, stval\n"
	" sd t1, 16(t0)\n"
	" csrr t1, sepc\n"
	" sd t1, 24(t0)\n"
	" addi t1, t1, 4\n"
	" csrw sepc, t1\n"
	" ld t1, 0(t0)\n"
	" addi t1, t1, 1\n"
	" sd t1, 0(t0)\n"
	" ld t1, 32(t0)\n"
	" csrr t0, sscratch\n"
	" sret\n"
	"1: la t1, vu_return\n"
	" csrw sepc, t1\n"
	" li t1, 0x100\n" /* sstatus.SPP = S: back to VS-mode */
	" csrs sstatus, t1\n"
	" ld t1, 32(t0)\n"
	" csrr t0, sscratch\n"
	" sret\n"
	/* u64 run_in_vu(probe_fn f, u64 arg): runs f(arg) in VU-mode; returns its a0. */
	".globl run_in_vu\n"
	".align 2\n"
	"run_in_vu:\n"
	" la t0, vu_ctx\n"
	" sd ra, 0(t0)\n sd sp, 8(t0)\n sd gp, 16(t0)\n sd tp, 24(t0)\n"
	" sd s0, 32(t0)\n sd s1, 40(t0)\n sd s2, 48(t0)\n sd s3, 56(t0)\n"
	" sd s4, 64(t0)\n sd s5, 72(t0)\n sd s6, 80(t0)\n sd s7, 88(t0)\n"
	" sd s8, 96(t0)\n sd s9, 104(t0)\n sd s10, 112(t0)\n sd s11, 120(t0)\n"
	" csrw sepc, a0\n"
	" mv a0, a1\n"
	" la ra, vu_exit\n"
	" li t1, 0x100\n" /* sstatus.SPP = U */
	" csrc sstatus, t1\n"
	" sret\n"
	"vu_exit:\n"
	" ecall\n"
	"vu_return:\n"
	" la t0, vu_ctx\n"
	" ld ra, 0(t0)\n ld sp, 8(t0)\n ld gp, 16(t0)\n ld tp, 24(t0)\n"
	" ld s0, 32(t0)\n ld s1, 40(t0)\n ld s2, 48(t0)\n ld s3, 56(t0)\n"
	" ld s4, 64(t0)\n ld s5, 72(t0)\n ld s6, 80(t0)\n ld s7, 88(t0)\n"
	" ld s8, 96(t0)\n ld s9, 104(t0)\n ld s10, 112(t0)\n ld s11, 120(t0)\n"
	" ret\n");

static char name_buf[128];

static const char *cat(const char *a, const char *b)
{
	u64 n = 0;
	while (*a && n < sizeof(name_buf) - 1)
		name_buf[n++] = *a++;
	while (*b && n < sizeof(name_buf) - 1)
		name_buf[n++] = *b++;
	name_buf[n] = 0;
	return name_buf;
}

static u64 call(probe_fn f, int vu)
{
	trap_rec.count = 0;
	trap_rec.cause = trap_rec.tval = trap_rec.epc = ~0UL;
	return vu ? run_in_vu(f, (u64)scratch) : f((u64)scratch);
}

/* f must raise illegal-instruction in the guest, with stval = its bits and sepc = f. */
static void expect_illegal(const char *name, probe_fn f, int vu)
{
	u32 insn = *(volatile u32 *)(void *)f;
	printk("info %s: insn %x\n", name, (u64)insn);
	call(f, vu);
	check(cat(name, ": one trap"), trap_rec.count, 1);
	check(cat(name, ": scause = illegal"), trap_rec.cause, CAUSE_ILLEGAL);
	check(cat(name, ": stval = insn"), trap_rec.tval, insn);
	check(cat(name, ": sepc"), trap_rec.epc, (u64)f);
}

static void vs_virtual(void)
{
	/* Virtual-instruction cases: the VMM injects illegal-instruction. */
	expect_illegal("VS csrr hstatus", p_rd_hstatus, 0);
	expect_illegal("VS csrw hstatus", p_wr_hstatus, 0);
	expect_illegal("VS csrr hgatp", p_rd_hgatp, 0);
	expect_illegal("VS csrr htval", p_rd_htval, 0);
	expect_illegal("VS csrr hgeip", p_rd_hgeip, 0);
	expect_illegal("VS csrr vsstatus (by number)", p_rd_vsstatus, 0);
	expect_illegal("VS csrw vsatp (by number)", p_wr_vsatp, 0);
	expect_illegal("VS hlv.b", p_hlv_b, 0);
	expect_illegal("VS hlv.d", p_hlv_d, 0);
	expect_illegal("VS hlvx.wu", p_hlvx_wu, 0);
	expect_illegal("VS hsv.w", p_hsv_w, 0);
	expect_illegal("VS hfence.vvma", p_hfence_vvma, 0);
	expect_illegal("VS hfence.gvma", p_hfence_gvma, 0);
}

static void vs_illegal(void)
{
	/* Illegal, not virtual: the hart delegates them to the guest, no VMM exit. */
	expect_illegal("VS csrr mstatus (illegal)", p_rd_mstatus, 0);
	expect_illegal("VS csrr mtval2 (illegal)", p_rd_mtval2, 0);
	expect_illegal("VS csrw hgeip (illegal: read-only)", p_wr_hgeip, 0);
	expect_illegal("VS mret (illegal)", p_mret, 0);
}

static void vs_emulated(void)
{
	/* WFI: returns without an exception once the timer deadline has passed. */
	u64 deadline = csr_read_time() + 1000;
	check("VS set_timer", sbi_call(SBI_EXT_TIME, 0, deadline, 0, 0, 0).error, 0);
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_STIE));
	call(p_wfi, 0);
	u64 woke = csr_read_time();
	__asm__ volatile("csrc sie, %0" ::"r"(SIE_STIE));
	sbi_call(SBI_EXT_TIME, 0, ~0UL, 0, 0, 0);
	check("VS wfi: no exception", trap_rec.count, 0);
	check("VS wfi: woke at the timer deadline", woke >= deadline, 1);

	/* time: no exception, nonzero, monotonic. */
	u64 t1 = call(p_rdtime, 0);
	check("VS rdtime: no exception", trap_rec.count, 0);
	u64 t2 = call(p_rdtime, 0);
	check("VS rdtime: no exception (again)", trap_rec.count, 0);
	check("VS rdtime: nonzero", t1 != 0, 1);
	check("VS rdtime: past the wfi", t1 >= woke, 1);
	check("VS rdtime: monotonic", t2 >= t1, 1);
}

static void vu_cases(void)
{
	__asm__ volatile("csrw satp, zero"); /* Bare: VU runs at physical addresses */
	__asm__ volatile("csrw scounteren, zero");
	expect_illegal("VU csrr sstatus", p_rd_sstatus, 1);
	expect_illegal("VU csrr satp", p_rd_satp, 1);
	expect_illegal("VU sret", p_sret, 1);
	expect_illegal("VU sfence.vma", p_sfence_vma, 1);
	expect_illegal("VU wfi", p_wfi, 1);
	expect_illegal("VU hlv.b", p_hlv_b, 1);
	expect_illegal("VU csrr hstatus", p_rd_hstatus, 1);
	expect_illegal("VU csrr vsstatus", p_rd_vsstatus, 1);
	expect_illegal("VU rdtime (scounteren.TM=0)", p_rdtime, 1);
	expect_illegal("VU csrr mstatus (illegal)", p_rd_mstatus, 1);

	/* With scounteren.TM = 1 the guest lets VU read time. */
	__asm__ volatile("csrw scounteren, %0" ::"r"(COUNTEREN_TM));
	u64 t1 = call(p_rdtime, 1);
	check("VU rdtime (scounteren.TM=1): no exception", trap_rec.count, 0);
	u64 t2 = csr_read_time();
	check("VU rdtime (scounteren.TM=1): nonzero", t1 != 0, 1);
	check("VU rdtime (scounteren.TM=1): monotonic", t2 >= t1, 1);
	__asm__ volatile("csrw scounteren, zero");
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	__asm__ volatile("csrw stvec, %0" ::"r"(trap_entry));
	vs_virtual();
	vs_illegal();
	vs_emulated();
	vu_cases();
	printk("sbi_vinst: %d checks, %d failures\n", (i64)checks, (i64)failures);
	dbcn_puts(failures ? "sbi_vinst: FAIL\n" : "sbi_vinst: PASS\n");
	return failures;
}
