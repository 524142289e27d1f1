/* The two-vCPU CTR recording shared by sbi_ctr_smp and sbi_ctr_pause: each hart records a
   loop of its own (rec0 on hart 0, rec1 on hart 1) at a depth of its own (16 on hart 0, 32
   on hart 1), freezes it, and hart 0 prints both histories.

   record(h): hart h records its loop (ITER iterations) and keeps in res[h] the depth,
   sctrstatus, how many entries have a source in its own loop, a hash of every bit and one
   without the cycle counts (ctrdata's TYPE only), and the three youngest entries.
   start_hart1(): hart 0 enables its IPI (sie.SSIP) and starts hart 1 (SBI HSM) at
   secondary_entry, which sets the stack and sstatus.FS and calls the guest's
   secondary_main(1). hart1_recorded() (on hart 1, after record(1)) sets done1 and sends hart 0
   an IPI; wait_hart1_recorded() (hart 0) waits for it in WFI. wait_hart1_stopped(): hart 0
   waits until hart 1 is HSM-stopped. print_results(): hart 0 prints and checks both
   histories. Include once, in the guest's only C file. */
#ifndef RT_SBI_CTR_SMP_H
#define RT_SBI_CTR_SMP_H

#include "ctr_rec.h"

#define ITER 3000
#define SSIP (1UL << 1)
#define HSM_STOPPED 1

u64 rec1(u64 n);
extern char rec1_start[], rec1_end[];
void secondary_entry(void);
void secondary_main(u64 hartid);

__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	".align 2\n"
	".globl rec1_start, rec1_end, rec1\n"
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

/* Record hart `h`'s history and keep what hart 0 prints in res[h]. */
static void record(u64 h)
{
	struct result *r = &res[h];
	ctr_record_start(h); /* depth 16 << h */
	if (h == 0)
		rec0(ITER);
	else
		rec1(ITER);
	ctr_record_freeze();
	__asm__ volatile("csrr %0, 0x15f" : "=r"(r->depth));
	__asm__ volatile("csrr %0, 0x14f" : "=r"(r->status));
	u64 lo = (u64)(h == 0 ? rec0_start : rec1_start);
	u64 hi = (u64)(h == 0 ? rec0_end : rec1_end);
	u64 hash = FNV_OFFSET, nocc = hash;
	r->own = 0;
	for (u64 i = 0; i < (16UL << r->depth); i++) {
		u64 s = ctr_entry(i, 0), t = ctr_entry(i, 1), d = ctr_entry(i, 2);
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

static void start_hart1(void)
{
	__asm__ volatile("csrs sie, %0" ::"r"(SSIP));
	struct sbiret r = sbi_call(SBI_EXT_HSM, 0, 1, (u64)secondary_entry,
				   (u64)(stack1 + sizeof stack1), 0);
	check("hart_start(1)", (u64)r.error, 0);
}

static void hart1_recorded(void)
{
	__sync_synchronize();
	done1 = 1;
	__sync_synchronize();
	sbi_call(SBI_EXT_IPI, 0, 1, 0, 0, 0); /* to hart 0 */
}

static void wait_hart1_recorded(void)
{
	while (!done1)
		__asm__ volatile("wfi");
	__asm__ volatile("csrc sip, %0" ::"r"(SSIP));
	__sync_synchronize();
}

static void wait_hart1_stopped(void)
{
	while (sbi_call(SBI_EXT_HSM, 2, 1, 0, 0, 0).value != HSM_STOPPED)
		;
	check("hart 1 stopped", 1, 1);
}

static void print_results(void)
{
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
}

#endif
