/* ctr_hello: a VS-mode guest kernel for `vmm run` that records its own calls, returns and
   branches in Control Transfer Records and prints them over the SBI console.

   Build and run (docs/guest-sdk.md):
       make -C guest/sdk
       vmm run --kernel guest/sdk/build/ctr_hello.elf

   It selects a depth (sctrdepth: the VMM emulates it), clears the buffer (SCTRCLR), runs a
   small assembly loop with recording of VS-mode transfers on (sctrctl.S), and prints the
   records youngest first, their addresses relative to the loop. Then it runs the loop
   again with function returns filtered out (sctrctl.RETINH). */
#include "vs/sbi.h"
#include "vs/ctr.h"
#include "vs/vu.h"

/* hello_calls(n, ctl): writes ctl to sctrctl, makes n direct calls to a function that
   returns at once, a taken branch after each but the last, then writes 0 to sctrctl.
   Assembled without compressed instructions, so that the offsets below are fixed. */
u64 hello_calls(u64 n, u64 ctl);
extern char hello_calls_end[];

__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	".globl hello_calls, hello_calls_end\n"
	".align 2\n"
	"hello_calls:\n"
	" mv t2, ra\n"
	" csrw " SDK_STR(CSR_SCTRCTL) ", a1\n"
	"1: jal ra, 2f\n" /* +0x8: direct call */
	" addi a0, a0, -1\n"
	" bnez a0, 1b\n" /* +0x10: taken branch */
	" csrw " SDK_STR(CSR_SCTRCTL) ", zero\n"
	" mv ra, t2\n"
	" ret\n"
	"2: ret\n" /* +0x20: return */
	"hello_calls_end:\n"
	".option pop\n");

/* Prints "hello_calls+0xOFF", or the address when it is outside the loop. */
static void where(u64 pc)
{
	u64 base = (u64)hello_calls, end = (u64)hello_calls_end;
	if (pc >= base && pc < end)
		printk("hello_calls+%x", pc - base);
	else
		printk("%x", pc);
}

/* Records a run of hello_calls(3, ctl) and prints it; returns the number of records. */
static u64 record(const char *what, u64 ctl)
{
	ctr_clear();
	ctr_set_status(0);
	hello_calls(3, ctl);
	u64 n = 0, wrptr = ctr_status() & SCTRSTATUS_WRPTR;
	printk("ctr_hello: %s: sctrstatus.WRPTR = %d\n", what, wrptr);
	for (u64 i = 0; i < ctr_depth(); i++) {
		struct ctr_entry e;
		if (!ctr_read(i, &e))
			break;
		printk("  #%d ", i);
		where(e.source & ~CTRSOURCE_V);
		printk(" -> ");
		where(e.target & ~CTRTARGET_MISP);
		printk("  %s", ctr_type_name(e.data & CTRDATA_TYPE));
		i64 cycles = ctr_cycles(e.data);
		if (cycles >= 0)
			printk(", %d cycles", cycles);
		printk("\n");
		n++;
	}
	printk("ctr_hello: %s: %d records\n", what, n);
	return n;
}

int main(u64 hartid, u64 fdt)
{
	(void)fdt;
	/* vu.h's handler counts exceptions and skips the instruction: a CTR access that traps
	   means the VM has no CTR. */
	__asm__ volatile("csrw stvec, %0" ::"r"(trap_entry));
	printk("ctr_hello: hart %d\n", hartid);

	u64 depth = ctr_set_depth(0); /* 16 entries, if the VM allows it */
	if (trap_rec.count) {
		printk("ctr_hello: no CTR (trap %d on sctrdepth; vmm run --ctr off?)\n",
		       trap_rec.cause);
		return 1;
	}
	printk("ctr_hello: sctrdepth.DEPTH = %d: %d entries\n", depth, ctr_depth());

	u64 all = record("calls, returns and taken branches", CTRCTL_S);
	u64 noret = record("returns filtered out", CTRCTL_S | CTRCTL_RETINH);
	if (all != 8 || noret != 5) {
		printk("ctr_hello: FAIL (want 8 and 5 records)\n");
		return 1;
	}
	printk("ctr_hello: PASS\n");
	return 0;
}
