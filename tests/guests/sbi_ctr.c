/* sbi_ctr: an S-mode guest kernel for `vmm run` (linked with guest/sdk/vs/, runs in VS-mode) that
   uses Control Transfer Records as a guest kernel would, through the VMM's ctr-virt:
   - sctrdepth (always a virtual-instruction exit, emulated by the VMM): the depth it reads
     at boot, and what each DEPTH value written reads back (the VM's allowed depths);
   - sctrctl (vsctrctl), sctrstatus and the entries through siselect/sireg* (vsiselect/
     vsireg*), whose first access makes the VMM load this vCPU's CTR context;
   - recording in VS-mode: calls, returns, a taken branch, the entries' types;
   - SCTRCLR;
   - from VU-mode, sctrctl and SCTRCLR: illegal-instruction (from the VMM);
   With `--ctr off` every one of these accesses gets illegal-instruction. The guest prints
   what it sees ("ctr ..." lines, checked by tests/tests/run.rs for each VMM option), and
   shuts down with status 0. */
#include "vs/vu.h"

#define CAUSE_ILLEGAL 2

typedef u64 (*probe_fn)(u64);
u64 p_rd_sctrdepth(u64), p_wr_sctrdepth(u64), p_rd_sctrctl(u64), p_wr_sctrctl(u64),
	p_rd_sctrstatus(u64), p_wr_sctrstatus(u64), p_sctrclr(u64), p_rd_entry(u64),
	p_rd_type(u64), p_calls(u64), p_trap_virtual(u64), p_trap_illegal(u64),
	p_rd_target(u64);

#define PROBE(name, insns) ".globl " #name "\n.align 2\n" #name ":\n" insns "\n ret\n"

__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	PROBE(p_rd_sctrdepth, " csrr a0, 0x15f")
	PROBE(p_wr_sctrdepth, " csrw 0x15f, a0\n csrr a0, 0x15f")
	PROBE(p_rd_sctrctl, " csrr a0, 0x14e")
	PROBE(p_wr_sctrctl, " csrw 0x14e, a0")
	PROBE(p_rd_sctrstatus, " csrr a0, 0x14f")
	PROBE(p_wr_sctrstatus, " csrw 0x14f, a0")
	PROBE(p_sctrclr, " .word 0x10400073")
	/* a0 = logical entry: ctrsource */
	PROBE(p_rd_entry, " addi a0, a0, 0x200\n csrw 0x150, a0\n csrr a0, 0x151")
	PROBE(p_rd_type, " addi a0, a0, 0x200\n csrw 0x150, a0\n csrr a0, 0x153\n andi a0, a0, 0xf")
	PROBE(p_rd_target, " addi a0, a0, 0x200\n csrw 0x150, a0\n csrr a0, 0x152")
	/* With VS recording on: an instruction the VMM turns into an illegal-instruction
	   exception (hstatus: virtual-instruction exit, injected), and one the hart delegates
	   to the guest itself (mstatus: illegal, hedeleg). The trap's record must look the
	   same. The trapping instruction is at offset 8. */
	PROBE(p_trap_virtual, " li t0, 2\n csrw 0x14e, t0\n csrr a0, 0x600\n csrw 0x14e, zero")
	PROBE(p_trap_illegal, " li t0, 2\n csrw 0x14e, t0\n csrr a0, 0x300\n csrw 0x14e, zero")
	/* Records in VS-mode (sctrctl.S on, then off): call, call, return, taken branch,
	   return. */
	".globl p_calls\n"
	".align 2\n"
	"p_calls:\n"
	" mv t2, ra\n"
	" li t0, 2\n"
	" csrw 0x14e, t0\n"
	" jal ra, 1f\n"
	" csrw 0x14e, zero\n"
	" mv ra, t2\n"
	" ret\n"
	"1: mv t3, ra\n"
	" jal ra, 2f\n"
	" beq zero, zero, 3f\n"
	" nop\n"
	"3: mv ra, t3\n"
	" ret\n"
	"2: ret\n"
	".option pop\n");

/* Run a probe; returns its a0 and leaves the trap count/cause in trap_rec. */
static u64 probe(probe_fn f, u64 arg, int vu)
{
	trap_rec.count = 0;
	trap_rec.cause = trap_rec.tval = 0;
	return vu ? run_in_vu(f, arg) : f(arg);
}

/* "ctr NAME: a0=X" or "ctr NAME: trap C". */
static u64 show(const char *name, probe_fn f, u64 arg, int vu)
{
	u64 v = probe(f, arg, vu);
	if (trap_rec.count)
		printk("ctr %s: trap %d\n", name, trap_rec.cause);
	else
		printk("ctr %s: %x\n", name, v);
	return v;
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	__asm__ volatile("csrw stvec, %0" ::"r"(trap_entry));
	printk("sbi_ctr: start\n");
	show("sctrdepth at boot", p_rd_sctrdepth, 0, 0);
	for (u64 d = 0; d < 8; d++) {
		printk("ctr write sctrdepth %d ->", d);
		u64 v = probe(p_wr_sctrdepth, d, 0);
		if (trap_rec.count)
			printk(" trap %d\n", trap_rec.cause);
		else
			printk(" %d\n", v);
	}
	probe(p_wr_sctrdepth, 0, 0); /* back to 16 if allowed */
	show("sctrctl", p_rd_sctrctl, 0, 0);
	/* Every field the guest's sctrctl (vsctrctl) has. */
	probe(p_wr_sctrctl, ~0UL, 0);
	show("sctrctl after writing ~0", p_rd_sctrctl, 0, 0);
	probe(p_wr_sctrctl, 0, 0);
	probe(p_sctrclr, 0, 0);
	show("sctrclr", p_rd_entry, 0, 0);
	probe(p_wr_sctrstatus, 0, 0);
	/* Record: S only, default filters. */
	p_calls(0);
	u64 st = show("sctrstatus after recording", p_rd_sctrstatus, 0, 0);
	if (!trap_rec.count) {
		printk("ctr types:");
		for (u64 i = 0; i < 8; i++) {
			if (!(probe(p_rd_entry, i, 0) & 1))
				break;
			printk(" %d", probe(p_rd_type, i, 0));
		}
		printk("\n");
		check("WRPTR advanced by the 5 recorded transfers", st & 0xff, 5);
	}
	if (!trap_rec.count) {
		/* An injected trap is recorded as a delegated one (ctr-virt synthesizes it). */
		static const struct {
			const char *name;
			probe_fn f;
		} t[] = {{"injected", p_trap_virtual}, {"delegated", p_trap_illegal}};
		for (int k = 0; k < 2; k++) {
			probe(p_sctrclr, 0, 0);
			probe(t[k].f, 0, 0);
			printk("ctr %s trap: types", t[k].name);
			u64 found = 0, src = 0, dst = 0;
			for (u64 i = 0; i < 4; i++) {
				if (!(probe(p_rd_entry, i, 0) & 1))
					break;
				u64 ty = probe(p_rd_type, i, 0);
				printk(" %d", ty);
				if (ty == 1 && !found) {
					found = 1;
					src = probe(p_rd_entry, i, 0);
					dst = probe(p_rd_target, i, 0);
				}
			}
			printk("\n");
			check("trap record found", found, 1);
			check("  ctrsource = the trapping instruction", src,
			      ((u64)t[k].f + 8) | 1);
			check("  ctrtarget = the guest's handler", dst,
			      (u64)trap_entry);
		}
	}
	show("VU sctrctl", p_rd_sctrctl, 0, 1);
	show("VU sctrclr", p_sctrclr, 0, 1);
	show("VU sctrdepth", p_rd_sctrdepth, 0, 1);
	printk("sbi_ctr: %d checks, %d failures\n", (u64)checks, (u64)failures);
	printk(failures ? "sbi_ctr: FAIL\n" : "sbi_ctr: PASS\n");
	sbi_shutdown(failures != 0);
}
