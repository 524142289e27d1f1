/* sbi_ctr_smp: a two-vCPU `vmm run` guest kernel for `--pcpus`. Hart 0 starts hart 1 (SBI
   HSM) and each hart records its own CTR history in VS-mode (calls, returns and taken
   branches of a loop of its own, at a depth of its own: 16 on hart 0, 32 on hart 1), at the
   same time (hart 1 starts while hart 0 records, after a short timer wait), long
   enough to span many time slices, then freezes it and hashes every entry. Hart 1 first
   waits for its timer in WFI; hart 0 sends remote fences to hart 1 and waits in WFI for
   hart 1's IPI; hart 1 stops itself (HSM) and hart 0 waits for that. Hart 0 prints both
   histories: depth, WRPTR, FROZEN, how many entries have a source in the hart's own loop
   (all of them: no entry of the other hart, no leftover), a hash of every bit and a hash
   without the cycle counts, and the youngest entries.

   tests/tests/smp.rs runs it with --pcpus 1 (both vCPUs on one hart, many slice sizes),
   --pcpus 2, and snapshotted and restored: each history must be the same. */
#include "rt_sbi/sbi.h"

#define ITER 3000
#define SSIP (1UL << 1)
#define STIP (1UL << 5)
#define HSM_STOPPED 1

u64 rec0(u64 n);
u64 rec1(u64 n);
extern char rec0_start[], rec0_end[], rec1_start[], rec1_end[];
void secondary_entry(void);

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
static volatile u64 done1;
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
	/* Wait for the timer in WFI (off the hart while hart 0 runs, with --pcpus 1). */
	__asm__ volatile("csrs sie, %0" ::"r"(STIP));
	u64 until = csr_read_time() + 300;
	sbi_call(SBI_EXT_TIME, 0, until, 0, 0, 0);
	while (csr_read_time() < until)
		__asm__ volatile("wfi");
	sbi_call(SBI_EXT_TIME, 0, ~0UL, 0, 0, 0);
	__asm__ volatile("csrc sie, %0" ::"r"(STIP));

	record(hartid);
	__sync_synchronize();
	done1 = 1;
	__sync_synchronize();
	sbi_call(SBI_EXT_IPI, 0, 1, 0, 0, 0); /* to hart 0 */
	sbi_call(SBI_EXT_HSM, 1, 0, 0, 0, 0); /* hart_stop */
	for (;;)
		;
}

int main(u64 hartid, u64 fdt)
{
	(void)fdt;
	printk("sbi_ctr_smp: start\n");
	__asm__ volatile("csrs sie, %0" ::"r"(SSIP));
	struct sbiret r = sbi_call(SBI_EXT_HSM, 0, 1, (u64)secondary_entry,
				   (u64)(stack1 + sizeof stack1), 0);
	check("hart_start(1)", (u64)r.error, 0);
	record(hartid);
	/* Fences for hart 1, which may be off its hart: they must complete. */
	check("remote_fence_i(1)", (u64)sbi_call(SBI_EXT_RFENCE, 0, 2, 0, 0, 0).error, 0);
	check("remote_sfence_vma(1)",
	      (u64)sbi_call(SBI_EXT_RFENCE, 1, 2, 0, 0, ~0UL).error, 0);
	while (!done1)
		__asm__ volatile("wfi");
	__asm__ volatile("csrc sip, %0" ::"r"(SSIP));
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
	printk("sbi_ctr_smp: %d checks, %d failures\n", (u64)checks, (u64)failures);
	printk("sbi_ctr_smp: %s\n", failures ? "FAIL" : "PASS");
	return failures;
}
