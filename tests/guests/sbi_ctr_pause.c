/* sbi_ctr_pause: a two-vCPU `vmm run` guest kernel for the control socket (`--api-sock`).
   It waits for a byte of console input (SBI DBCN console_read, polled) at three points, so
   that a test can pause the VM in a known state with nothing timed:
   1. before it starts hart 1 (hart 1 HSM-stopped, hart 0 polling);
   2. after both harts recorded their CTR histories (as `sbi_ctr_smp` does: each its own loop
      at its own depth, 16 on hart 0 and 32 on hart 1, then frozen) with hart 1 waiting in
      WFI with no timer for an IPI (hart 0 polling);
   3. while hart 1 spins and hart 0 sends it remote fences (fence.i) between polls, so that
      a pause most likely finds hart 0 waiting for a fence.
   Then hart 1 stops itself (HSM) and hart 0 prints both histories (depth, WRPTR, FROZEN, how
   many entries come from the hart's own loop, a hash of every bit and one without the cycle
   counts, the youngest entries) and shuts down. What it prints does not depend on when the
   input arrives. tests/tests/api.rs pauses, dumps, snapshots and restores it. */
#include "rt_sbi/sbi.h"

#define ITER 3000
#define SSIP (1UL << 1)
#define HSM_STOPPED 1

u64 rec0(u64 n);
u64 rec1(u64 n);
extern char rec0_start[], rec0_end[], rec1_start[], rec1_end[];
void secondary_entry(void);
void secondary_main(u64 hartid);

__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	".align 2\n"
	".globl rec0_start, rec0_end, rec0, rec1_start, rec1_end, rec1\n"
	"rec0_start:\n"
	"rec0:\n"
	" mv t2, ra\n"
	"1: jal ra, 2f\n"
	" addi a0, a0, -1\n"
	" bnez a0, 1b\n"
	" mv ra, t2\n"
	" ret\n"
	"2: addi t0, t0, 1\n"
	" ret\n"
	"rec0_end:\n"
	"rec1_start:\n"
	"rec1:\n"
	" mv t2, ra\n"
	"1: jal ra, 3f\n"
	" andi t1, a0, 1\n"
	" beqz t1, 2f\n"
	" addi t0, t0, 1\n"
	"2: addi a0, a0, -1\n"
	" bnez a0, 1b\n"
	" mv ra, t2\n"
	" ret\n"
	"3: addi t0, t0, 2\n"
	" ret\n"
	"rec1_end:\n"
	".globl secondary_entry\n"
	"secondary_entry:\n"
	" .option norelax\n"
	" la gp, __global_pointer$\n"
	" mv sp, a1\n"
	" li t0, 0x2000\n"
	" csrs sstatus, t0\n"
	" call secondary_main\n"
	"4: j 4b\n"
	".option pop\n");

struct result {
	u64 depth, status, own, hash, hash_nocc;
	u64 entry[3][3];
};

static struct result res[2];
static volatile u64 done1, go, spinning, stop2, spins;
static u8 stack1[8192] __attribute__((aligned(16)));

static u64 csr_entry(u64 i, int reg)
{
	u64 v = 0;
	__asm__ volatile("csrw 0x150, %0" ::"r"(0x200 + i));
	if (reg == 0)
		__asm__ volatile("csrr %0, 0x151" : "=r"(v));
	else if (reg == 1)
		__asm__ volatile("csrr %0, 0x152" : "=r"(v));
	else
		__asm__ volatile("csrr %0, 0x153" : "=r"(v));
	return v;
}

static u64 fnv(u64 h, u64 v)
{
	for (int b = 0; b < 8; b++) {
		h ^= (v >> (8 * b)) & 0xff;
		h *= 0x100000001b3UL;
	}
	return h;
}

/* Record hart `h`'s history and keep what hart 0 prints in res[h]. */
static void record(u64 h)
{
	struct result *r = &res[h];
	__asm__ volatile("csrw 0x15f, %0" ::"r"(h));  /* depth 16 << h */
	__asm__ volatile(".word 0x10400073");        /* SCTRCLR */
	__asm__ volatile("csrw 0x14f, zero");
	__asm__ volatile("csrw 0x14e, %0" ::"r"(2UL)); /* sctrctl.S */
	if (h == 0)
		rec0(ITER);
	else
		rec1(ITER);
	__asm__ volatile("csrs 0x14f, %0" ::"r"(1UL << 31)); /* FROZEN */
	__asm__ volatile("csrw 0x14e, zero");
	__asm__ volatile("csrr %0, 0x15f" : "=r"(r->depth));
	__asm__ volatile("csrr %0, 0x14f" : "=r"(r->status));
	u64 lo = (u64)(h == 0 ? rec0_start : rec1_start);
	u64 hi = (u64)(h == 0 ? rec0_end : rec1_end);
	u64 hash = 0xcbf29ce484222325UL, nocc = hash;
	r->own = 0;
	for (u64 i = 0; i < (16UL << r->depth); i++) {
		u64 s = csr_entry(i, 0), t = csr_entry(i, 1), d = csr_entry(i, 2);
		if ((s & 1) && (s & ~1UL) >= lo && (s & ~1UL) < hi)
			r->own++;
		hash = fnv(fnv(fnv(hash, s), t), d);
		nocc = fnv(fnv(fnv(nocc, s), t), d & 0xf);
		if (i < 3) {
			r->entry[i][0] = s;
			r->entry[i][1] = t;
			r->entry[i][2] = d;
		}
	}
	r->hash = hash;
	r->hash_nocc = nocc;
}

void secondary_main(u64 hartid)
{
	record(hartid);
	__sync_synchronize();
	done1 = 1;
	__sync_synchronize();
	sbi_call(SBI_EXT_IPI, 0, 1, 0, 0, 0); /* to hart 0 */
	/* Wait in WFI, with no timer, for hart 0's IPI. */
	__asm__ volatile("csrs sie, %0" ::"r"(SSIP));
	while (!go)
		__asm__ volatile("wfi");
	__asm__ volatile("csrc sip, %0" ::"r"(SSIP));
	spinning = 1;
	__sync_synchronize();
	while (!stop2)
		spins++;
	sbi_call(SBI_EXT_HSM, 1, 0, 0, 0, 0); /* hart_stop */
	for (;;)
		;
}

/* Wait for one byte of console input (polled), calling `between` after each empty poll. */
static void wait_input(int n, void (*between)(void))
{
	char c;
	printk("sbi_ctr_pause: waiting for input %d\n", (u64)n);
	while (dbcn_read(&c, 1) <= 0)
		if (between)
			between();
	printk("sbi_ctr_pause: got input %d\n", (u64)n);
}

static void fence_hart1(void)
{
	sbi_call(SBI_EXT_RFENCE, 0, 2, 0, 0, 0); /* remote_fence_i(hart 1) */
}

int main(u64 hartid, u64 fdt)
{
	(void)fdt;
	printk("sbi_ctr_pause: start\n");
	wait_input(1, 0);
	__asm__ volatile("csrs sie, %0" ::"r"(SSIP));
	struct sbiret r = sbi_call(SBI_EXT_HSM, 0, 1, (u64)secondary_entry,
				   (u64)(stack1 + sizeof stack1), 0);
	check("hart_start(1)", (u64)r.error, 0);
	record(hartid);
	while (!done1)
		__asm__ volatile("wfi");
	__asm__ volatile("csrc sip, %0" ::"r"(SSIP));
	__sync_synchronize();
	wait_input(2, 0);
	go = 1;
	__sync_synchronize();
	sbi_call(SBI_EXT_IPI, 0, 2, 0, 0, 0); /* to hart 1 */
	while (!spinning)
		;
	wait_input(3, fence_hart1);
	stop2 = 1;
	__sync_synchronize();
	while (sbi_call(SBI_EXT_HSM, 2, 1, 0, 0, 0).value != HSM_STOPPED)
		;
	check("hart 1 stopped", 1, 1);
	for (u64 h = 0; h < 2; h++) {
		struct result *x = &res[h];
		printk("hart %d: depth %d wrptr %d frozen %d own %d hash %x nocc %x\n", h,
		       16UL << x->depth, x->status & 0xff, x->status >> 31, x->own, x->hash,
		       x->hash_nocc);
		check("entries from the hart's own loop", x->own, 16UL << x->depth);
		check("depth", x->depth, h);
		for (u64 i = 0; i < 3; i++)
			printk("hart %d entry %d: %x -> %x data %x\n", h, i, x->entry[i][0],
			       x->entry[i][1], x->entry[i][2]);
	}
	printk("sbi_ctr_pause: %d checks, %d failures\n", (u64)checks, (u64)failures);
	printk("sbi_ctr_pause: %s\n", failures ? "FAIL" : "PASS");
	return failures;
}
