/* sbi_ctr_demo: the CTR self-test guest kernel that `vmm run` boots when no --kernel is
   given (embedded in the vmm binary as vmm/guest/ctr-demo.elf; tests/tests/demo.rs checks
   that the embedded copy is this source's build).

   In VS-mode it selects a CTR depth through sctrdepth (a trap the VMM emulates), turns on
   recording for VS and VU (sctrctl, really vsctrctl; the first access makes the VMM load the
   vCPU's CTR context), runs calls, returns and branches in VS-mode and a task in VU-mode
   that ends with an ECALL (a trap into VS-mode and a trap return), stops recording and prints
   the history it recorded, oldest first: source -> target, the transfer type and the cycles
   since the previous record. Shuts down with status 0 when every check passed, and with
   status 0 after one line saying so when the VM has no CTR (sctrdepth traps). */
#include "vs/vu.h"

#define CAUSE_ILLEGAL 2
#define CTL_U 1UL
#define CTL_S 2UL

u64 vu_task(u64), vu_rd_sctrctl(u64);

__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	/* The VU-mode task: a call, a loop of three taken branches, a return, an ECALL. */
	".globl vu_task\n"
	".align 2\n"
	"vu_task:\n"
	" jal ra, 2f\n"
	" ecall\n"
	"2: li t0, 3\n"
	"3: addi t0, t0, -1\n"
	" bnez t0, 3b\n"
	" ret\n"
	/* VU-mode has no access to sctrctl: illegal-instruction, then the ECALL. */
	".globl vu_rd_sctrctl\n"
	".align 2\n"
	"vu_rd_sctrctl:\n"
	" csrr a0, 0x14e\n"
	" ecall\n"
	".option pop\n");

static u64 csr_sctrdepth(void)
{
	u64 v;
	__asm__ volatile("csrr %0, 0x15f" : "=r"(v));
	return v;
}

static void set_sctrdepth(u64 v)
{
	__asm__ volatile("csrw 0x15f, %0" ::"r"(v));
}

static void set_sctrctl(u64 v)
{
	__asm__ volatile("csrw 0x14e, %0" ::"r"(v));
}

static u64 sctrstatus(void)
{
	u64 v;
	__asm__ volatile("csrr %0, 0x14f" : "=r"(v));
	return v;
}

/* Logical entry i: ctrsource, ctrtarget, ctrdata. */
static void entry(u64 i, u64 *src, u64 *dst, u64 *data)
{
	__asm__ volatile("csrw 0x150, %0" ::"r"(0x200 + i));
	__asm__ volatile("csrr %0, 0x151" : "=r"(*src));
	__asm__ volatile("csrr %0, 0x152" : "=r"(*dst));
	__asm__ volatile("csrr %0, 0x153" : "=r"(*data));
}

/* Some calls and returns in VS-mode (compiled as auipc + jalr ra: indirect calls in the
   terms of Smctr table 10). */
static __attribute__((noinline)) u64 fib(u64 n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static const char *type_name(u64 t)
{
	static const char *names[16] = {
		"?",	      "exception",	   "interrupt",	      "trap return",
		"not-taken branch", "taken branch", "?",	      "?",
		"indirect call",    "direct call",  "indirect jump",  "direct jump",
		"co-routine swap",  "return",	   "other ind. jump", "other dir. jump",
	};
	return names[t & 0xf];
}

/* The elapsed-cycles formula of Smctr section 6.3. */
static u64 cycles(u64 data)
{
	u64 cc = (data >> 16) & 0xffff, m = cc & 0xfff, e = cc >> 12;
	return e ? (4096 + m) << (e - 1) : m;
}

int main(u64 hartid, u64 fdt);

static const struct {
	const char *name;
	void *addr;
} symbols[] = {
	{"trap_entry", (void *)trap_entry}, {"run_in_vu", (void *)run_in_vu},
	{"vu_task", (void *)vu_task},	    {"fib", (void *)fib},
	{"main", (void *)main},
};

/* "name+0xoff" for the nearest symbol at or below pc (within 4 KiB), else the address. */
static void put_pc(u64 pc)
{
	const char *best = 0;
	u64 base = 0;
	for (unsigned i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
		u64 a = (u64)symbols[i].addr;
		if (a && a <= pc && pc - a < 0x1000 && a >= base) {
			best = symbols[i].name;
			base = a;
		}
	}
	if (pc == 0)
		printk("%s", "0");
	else if (best)
		printk("%s+%x", best, pc - base);
	else
		printk("%x", pc);
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	__asm__ volatile("csrw stvec, %0" ::"r"(trap_entry));
	printk("CTR self-test guest: VS-mode under vmm run (Smctr/Ssctr through ctr-virt)\n");

	/* Without CTR (vmm run --ctr off) every CTR CSR access is illegal-instruction: the
	   handler counts it and skips the instruction. Nothing to test then. */
	u64 traps = trap_rec.count;
	u64 boot = csr_sctrdepth();
	if (trap_rec.count != traps) {
		printk("CTR is not available (vmm run --ctr off?)\n");
		sbi_shutdown(0);
	}
	printk("sctrdepth at boot: DEPTH %d (%d entries)\n", boot, 16UL << boot);
	set_sctrdepth(4);
	printk("select 256 entries: DEPTH reads %d%s\n", csr_sctrdepth(),
	       csr_sctrdepth() == 4 ? "" : " (not in this VM's depth set: kept)");
	set_sctrdepth(2);
	u64 depth = csr_sctrdepth();
	printk("select 64 entries: DEPTH reads %d\n", depth);
	check("sctrdepth selects 64 entries", depth, 2);

	__asm__ volatile(".word 0x10400073"); /* SCTRCLR */
	__asm__ volatile("csrw 0x14f, zero");
	set_sctrctl(CTL_S | CTL_U);
	u64 f = fib(5);
	run_in_vu(vu_task, 0);
	set_sctrctl(0);
	check("fib(5)", f, 5);

	u64 st = sctrstatus();
	u64 n = 0, src, dst, data;
	for (n = 0; n < (16UL << depth); n++) {
		entry(n, &src, &dst, &data);
		if (!(src & 1))
			break;
	}
	printk("\n%d transfers recorded (WRPTR %d), oldest first:\n", n, st & 0xff);
	for (u64 i = n; i-- > 0;) {
		entry(i, &src, &dst, &data);
		printk("  ");
		put_pc(src & ~1UL);
		printk(" -> ");
		put_pc(dst & ~1UL);
		printk("  %s", type_name(data));
		if (data & (1UL << 15))
			printk(", %d cycles\n", cycles(data));
		else
			printk("\n");
	}
	/* fib(5): 15 calls and 15 returns; the VU task: a call, 2 taken branches, a return, the
	   ECALL trap and the trap return to VS; the calls into and out of run_in_vu. */
	check("calls, returns, branches and traps recorded", n >= 20, 1);
	u64 kinds = 0;
	for (u64 i = 0; i < n; i++) {
		entry(i, &src, &dst, &data);
		kinds |= 1UL << (data & 0xf);
	}
	check("exception, trap return, taken branch, direct call, return seen",
	      kinds & 0x222a, 0x222a);

	run_in_vu(vu_rd_sctrctl, 0);
	printk("\nVU-mode read of sctrctl: %s\n",
	       trap_rec.count && trap_rec.cause == CAUSE_ILLEGAL ? "illegal instruction (as on hardware)"
								   : "not refused");
	check("VU sctrctl refused", trap_rec.cause, CAUSE_ILLEGAL);
	printk("\nself-test: %d checks, %d failures: %s\n", (u64)checks, (u64)failures,
	       failures ? "FAIL" : "PASS");
	sbi_shutdown(failures != 0);
}
