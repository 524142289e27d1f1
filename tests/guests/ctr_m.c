/*
 * ctr_m: Control Transfer Records in M-mode (Smctr v1.0).
 *
 * Every transfer type of tables 9 and 10 (JAL/JALR with each link-register
 * combination, the compressed jumps, taken and not-taken branches, the
 * exception and trap return of the scenario's own entry and exit), each
 * transfer type filter bit and NTBREN (section 6.2), RAS emulation (6.4:
 * push, pop, co-routine swap), freeze by software and by BPFRZ (6.5),
 * WRPTR wrap-around and the logical-to-physical mapping (2.5), depths and
 * entries beyond the depth (2.4, chapter 3), SCTRCLR (4.1) and the WARL
 * behaviour of the CSRs.
 *
 * Compared with QEMU (golden file tests/golden/ctr_m.out). Recorded PCs
 * are printed as offsets from ctr_base; lines starting with "info " hold
 * implementation-specific values (which optional fields exist).
 */
#include "ctr.h"

extern char scn_jumps[], scn_branches[], scn_ras_nest[], scn_ras_swap[],
	scn_loop[], scn_ras_branch[];

/* clang-format off */
__asm__(CTR_ASM_RUNTIME
	".pushsection .text.ctr, \"ax\", @progbits\n"
	".option push\n"
	".option norvc\n"
	/* Every jump class of table 10, in order. */
	"scn_jumps:\n"
	"	jal ra, 1f\n"            /* direct call (JAL x1)          9 */
	"1:	jal t0, 1f\n"            /* direct call (JAL x5)          9 */
	"1:	jal zero, 1f\n"          /* direct jump (JAL x0)         11 */
	"1:	jal t2, 1f\n"            /* other direct, linkage (x7)   15 */
	"1:	la a0, 1f\n"
	"	jalr ra, 0(a0)\n"        /* indirect call (x1, a0)        8 */
	"1:	la t0, 1f\n"
	"	jalr t0, 0(t0)\n"        /* indirect call (x5, x5)        8 */
	"1:	la ra, 1f\n"
	"	jalr t0, 0(ra)\n"        /* co-routine swap (x5, x1)     12 */
	"1:	la t0, 1f\n"
	"	jalr ra, 0(t0)\n"        /* co-routine swap (x1, x5)     12 */
	"1:	la ra, 1f\n"
	"	jalr zero, 0(ra)\n"      /* return (x0, x1)              13 */
	"1:	la t0, 1f\n"
	"	jalr zero, 0(t0)\n"      /* return (x0, x5)              13 */
	"1:	la ra, 1f\n"
	"	jalr t2, 0(ra)\n"        /* return (x7, x1)              13 */
	"1:	la a0, 1f\n"
	"	jalr zero, 0(a0)\n"      /* indirect jump (x0, a0)       10 */
	"1:	la a0, 1f\n"
	"	jalr t2, 0(a0)\n"        /* other indirect, linkage      14 */
	"1:	la ra, 1f\n"
	"	jalr ra, 0(ra)\n"        /* indirect call (x1, x1)        8 */
	"1:	.option rvc\n"
	"	c.j 1f\n"                /* C.J: direct jump             11 */
	"1:	.option norvc\n"
	"	la a0, 1f\n"
	"	.option rvc\n"
	"	c.jr a0\n"               /* C.JR a0: indirect jump       10 */
	"1:	.option norvc\n"
	"	la ra, 1f\n"
	"	.option rvc\n"
	"	c.jr ra\n"               /* C.JR ra: return              13 */
	"1:	.option norvc\n"
	"	la a0, 1f\n"
	"	.option rvc\n"
	"	c.jalr a0\n"             /* C.JALR a0: indirect call      8 */
	"1:	.option norvc\n"
	"	la t0, 1f\n"
	"	.option rvc\n"
	"	c.jalr t0\n"             /* C.JALR x5: co-routine swap   12 */
	"1:	.option norvc\n"
	"	li a7, 0x5e7\n"
	"	ecall\n"
	/* Taken and not-taken branches of every kind; each taken branch skips
	 * a nop, so a not-taken branch's next pc differs from its target. */
	"scn_branches:\n"
	"	li a0, 1\n"
	"	li a1, 2\n"
	"	li a2, -1\n"
	"	li s0, 0\n"
	"	li s1, 1\n"
	"	beq a0, a0, 1f\n	nop\n"
	"1:	beq a0, a1, 1f\n	nop\n"
	"1:	bne a0, a1, 1f\n	nop\n"
	"1:	bne a0, a0, 1f\n	nop\n"
	"1:	blt a2, a0, 1f\n	nop\n"
	"1:	blt a0, a2, 1f\n	nop\n"
	"1:	bge a0, a2, 1f\n	nop\n"
	"1:	bge a2, a0, 1f\n	nop\n"
	"1:	bltu a0, a2, 1f\n	nop\n"
	"1:	bltu a2, a0, 1f\n	nop\n"
	"1:	bgeu a2, a0, 1f\n	nop\n"
	"1:	bgeu a0, a2, 1f\n	nop\n"
	"1:	.option rvc\n"
	"	c.beqz s0, 1f\n	c.nop\n"
	"1:	c.beqz s1, 1f\n	c.nop\n"
	"1:	c.bnez s1, 1f\n	c.nop\n"
	"1:	c.bnez s0, 1f\n	c.nop\n"
	"1:	.option norvc\n"
	"	li a7, 0x5e7\n"
	"	ecall\n"
	/* RASEMU: nested calls; the scenario ends inside the innermost one, so
	 * the buffer holds the call stack. */
	"scn_ras_nest:\n"
	"	jal ra, 1f\n"            /* call A (push) */
	"	j 9f\n"
	"1:	jal ra, 2f\n"            /* A: call B (push) */
	"	j 9f\n"
	"2:	la a0, 3f\n"
	"	jalr ra, 0(a0)\n"        /* B: indirect call C (push) */
	"	j 9f\n"
	"3:	jal zero, 4f\n"          /* C: direct jump (inhibited) */
	"4:	beq zero, zero, 5f\n"    /* taken branch (inhibited) */
	"5:	li a7, 0x5e7\n"
	"	ecall\n"                 /* exception (inhibited) */
	"9:	li a7, 0x5e7\n"
	"	ecall\n"
	/* RASEMU: calls and returns that cancel out, then co-routine swaps;
	 * the scenario ends inside C. */
	"scn_ras_swap:\n"
	"	jal ra, 1f\n"            /* call A (push) */
	"	jal ra, 3f\n"            /* call C (push) */
	"	jalr ra, 0(t0)\n"        /* swap back into C (overwrite) */
	"	li a7, 0x5e7\n"
	"	ecall\n"
	"1:	mv s2, ra\n"             /* A */
	"	jal ra, 2f\n"            /* A: call B (push) */
	"	mv ra, s2\n"
	"	ret\n"                   /* A returns (pop) */
	"2:	ret\n"                   /* B returns (pop) */
	"3:	jalr t0, 0(ra)\n"        /* C: swap to the caller (overwrite) */
	"	li a7, 0x5e7\n"
	"	ecall\n"
	/* RASEMU with a return below an empty stack: WRPTR wraps down. */
	"scn_ras_branch:\n"
	"	la ra, 1f\n"
	"	ret\n"                   /* pop: WRPTR 0 -> depth - 1 */
	"1:	li a7, 0x5e7\n"
	"	ecall\n"
	/* A loop of ctr_arg iterations (ctr_arg - 1 taken branches). */
	"scn_loop:\n"
	"	la a0, ctr_arg\n"
	"	ld a0, 0(a0)\n"
	"1:	addi a0, a0, -1\n"
	"	bnez a0, 1b\n"
	"	li a7, 0x5e7\n"
	"	ecall\n"
	".option pop\n"
	".popsection\n"
	CTR_ASM_SCENARIOS);
/* clang-format on */

static void run(const char *title, const void *scn, u64 ctl)
{
	ctr_clear();
	ctr_run(CTR_M, scn, ctl, 0);
	ctr_dump(title, 64);
}

static void run_types(const char *title, const void *scn, u64 ctl)
{
	ctr_clear();
	ctr_run(CTR_M, scn, ctl, 0);
	ctr_types(title, 64);
}

/* Raw dump of the first n logical entries, whatever their V bit. */
static void dump_raw(const char *title, u64 n)
{
	u64 st = csrr_n(CSR_SCTRSTATUS);
	rt_puts(title);
	rt_puts(": wrptr=");
	rt_put_dec(st & 0xff);
	rt_puts("\n");
	for (u64 i = 0; i < n; i++) {
		ctr_select(i);
		u64 src = csrr_n(CSR_SIREG);
		rt_puts("  ");
		rt_put_dec(i);
		rt_puts(": v=");
		rt_put_dec(src & 1);
		rt_puts(" ");
		ctr_put_pc(src & ~1UL);
		rt_puts(" -> ");
		ctr_put_pc(csrr_n(CSR_SIREG2) & ~1UL);
		rt_puts(" type ");
		rt_put_dec(csrr_n(CSR_SIREG3) & 0xf);
		rt_puts("\n");
	}
}

static void test_types(void)
{
	rt_puts("-- transfer types (tables 9, 10)\n");
	run("jumps", scn_jumps, CTL_M);
	run("branches (default: taken only)", scn_branches, CTL_M);
	run("branches with NTBREN", scn_branches, CTL_M | CTL_NTBREN);
	run("branches with NTBREN and TKBRINH", scn_branches,
	    CTL_M | CTL_NTBREN | CTL_TKBRINH);
}

static void test_filters(void)
{
	static const struct {
		const char *name;
		u64 bit;
	} f[] = {
		{"EXCINH", CTL_EXCINH},
		{"TRETINH", CTL_TRETINH},
		{"INDCALLINH", CTL_INDCALLINH},
		{"DIRCALLINH", CTL_DIRCALLINH},
		{"INDJMPINH", CTL_INDJMPINH},
		{"DIRJMPINH", CTL_DIRJMPINH},
		{"CORSWAPINH", CTL_CORSWAPINH},
		{"RETINH", CTL_RETINH},
		{"INDLJMPINH", CTL_INDLJMPINH},
		{"DIRLJMPINH", CTL_DIRLJMPINH},
	};
	rt_puts("-- transfer type filtering (6.2)\n");
	run_types("none", scn_jumps, CTL_M);
	for (unsigned i = 0; i < sizeof f / sizeof f[0]; i++)
		run_types(f[i].name, scn_jumps, CTL_M | f[i].bit);
	run_types("all", scn_jumps,
		  CTL_M | CTL_EXCINH | CTL_INTRINH | CTL_TRETINH |
			  CTL_INDCALLINH | CTL_DIRCALLINH | CTL_INDJMPINH |
			  CTL_DIRJMPINH | CTL_CORSWAPINH | CTL_RETINH |
			  CTL_INDLJMPINH | CTL_DIRLJMPINH);
}

static void test_rasemu(void)
{
	rt_puts("-- RAS emulation (6.4)\n");
	run("nested calls", scn_ras_nest, CTL_M | CTL_RASEMU);
	/* Filter bits are ignored with RASEMU. */
	run("nested calls, DIRCALLINH ignored", scn_ras_nest,
	    CTL_M | CTL_RASEMU | CTL_DIRCALLINH | CTL_INDCALLINH);
	ctr_clear();
	ctr_run(CTR_M, scn_ras_swap, CTL_M | CTL_RASEMU, 0);
	dump_raw("calls, returns, co-routine swaps", 3);
	/* The popped call B: physical entry 1, now logical depth-1 (V = 0). */
	ctr_select(63);
	rt_check("popped entry: V cleared, PC kept", csrr_n(CSR_SIREG) & 1, 0);
	rt_check_true("popped entry: ctrtarget kept", csrr_n(CSR_SIREG2) != 0);
	ctr_clear();
	csrw_n(CSR_SCTRDEPTH, 0);
	ctr_run(CTR_M, scn_ras_branch, CTL_M | CTL_RASEMU, 0);
	rt_check("return with an empty stack: WRPTR wraps to depth-1",
		 csrr_n(CSR_SCTRSTATUS) & 0xff, 15);
}

static void test_depth(void)
{
	rt_puts("-- depth, WRPTR, logical entries (2.4, 2.5, 3)\n");
	ctr_clear();
	csrw_n(CSR_SCTRDEPTH, 0);
	rt_check("DEPTH 0 (16)", csrr_n(CSR_SCTRDEPTH), 0);
	/* 19 taken branches, the mret in and the ecall out at depth 16:
	 * WRPTR wraps to 21 % 16 and the oldest entries are lost. */
	ctr_arg = 20;
	ctr_run(CTR_M, scn_loop, CTL_M, 0);
	ctr_dump("20 loop iterations at depth 16", 32);
	for (u64 d = 0; d < 8; d++) {
		csrw_n(CSR_SCTRDEPTH, d);
		rt_puts("info sctrdepth write ");
		rt_put_dec(d);
		rt_puts(" reads ");
		rt_put_dec(csrr_n(CSR_SCTRDEPTH));
		rt_puts("\n");
	}
	csrw_n(CSR_SCTRDEPTH, 0);
	csrw_n(CSR_SCTRSTATUS, 0xff);
	rt_check("WRPTR bits above depth-1 read 0 (depth 16)",
		 csrr_n(CSR_SCTRSTATUS), 15);
	csrw_n(CSR_SCTRSTATUS, 0xffffffffffffffffUL);
	rt_check("sctrstatus: only WRPTR and FROZEN", csrr_n(CSR_SCTRSTATUS),
		 STATUS_FROZEN | 15);
	/* Logical entry X is physical (WRPTR - X - 1) % depth. */
	csrw_n(CSR_SCTRSTATUS, 0);
	for (u64 x = 0; x < 16; x++) {
		ctr_select(x);
		csrw_n(CSR_SIREG, 0x80000000UL + 2 * x);
	}
	csrw_n(CSR_SCTRSTATUS, 3);
	ctr_select(0);
	rt_check("after WRPTR 0 -> 3: logical 0 was logical 13",
		 csrr_n(CSR_SIREG), 0x80000000UL + 2 * 13);
	ctr_select(3);
	rt_check("logical 3 was logical 0", csrr_n(CSR_SIREG), 0x80000000UL);
	ctr_select(15);
	rt_check("logical 15 was logical 12", csrr_n(CSR_SIREG),
		 0x80000000UL + 2 * 12);
	/* Entries at or beyond the depth read 0 and ignore writes. */
	ctr_select(16);
	csrw_n(CSR_SIREG, 0x1235);
	csrw_n(CSR_SIREG2, 0x1234);
	csrw_n(CSR_SIREG3, 0x5);
	rt_check("logical 16 at depth 16: ctrsource 0", csrr_n(CSR_SIREG), 0);
	rt_check("  ctrtarget 0", csrr_n(CSR_SIREG2), 0);
	rt_check("  ctrdata 0", csrr_n(CSR_SIREG3), 0);
	ctr_select(255);
	rt_check("logical 255: ctrsource 0", csrr_n(CSR_SIREG), 0);
	/* sireg4-6 are read-only 0 at the CTR select values. */
	ctr_select(0);
	rt_check("sireg4 reads 0", csrr_n(CSR_SIREG4), 0);
	rt_check("sireg5 reads 0", csrr_n(CSR_SIREG5), 0);
	rt_check("sireg6 reads 0", csrr_n(CSR_SIREG6), 0);
	/* ctrsource keeps a PC; ctrtarget.MISP; ctrdata.TYPE. */
	csrw_n(CSR_SIREG, 0x80001235UL);
	rt_check("ctrsource holds PC and V", csrr_n(CSR_SIREG), 0x80001235UL);
	csrw_n(CSR_SIREG2, 0x80001235UL);
	rt_check("ctrtarget holds PC", csrr_n(CSR_SIREG2) & ~1UL, 0x80001234UL);
	rt_puts("info ctrtarget.MISP writable: ");
	rt_put_dec(csrr_n(CSR_SIREG2) & 1);
	rt_puts("\n");
	csrw_n(CSR_SIREG3, 0xd);
	rt_check("ctrdata.TYPE holds 13", csrr_n(CSR_SIREG3) & 0xf, 0xd);
	csrw_n(CSR_SIREG3, ~0UL);
	rt_check("ctrdata: no bits outside TYPE, CCV, CC",
		 csrr_n(CSR_SIREG3) & ~0xffff800fUL, 0);
	rt_puts("info ctrdata all ones reads ");
	rt_put_hex(csrr_n(CSR_SIREG3));
	rt_puts("\n");
	/* Depth change: WRPTR stays legal. */
	csrw_n(CSR_SCTRDEPTH, 2);
	csrw_n(CSR_SCTRSTATUS, 40);
	rt_check("WRPTR 40 at depth 64", csrr_n(CSR_SCTRSTATUS), 40);
	csrw_n(CSR_SCTRDEPTH, 0);
	rt_check_true("WRPTR legal after depth 64 -> 16",
		      (csrr_n(CSR_SCTRSTATUS) & 0xff) < 16);
	/* SCTRCLR zeroes every entry at every depth. */
	csrw_n(CSR_SCTRDEPTH, 4);
	rt_puts("info depth 256 supported: ");
	rt_put_dec(csrr_n(CSR_SCTRDEPTH) == 4);
	rt_puts("\n");
	u64 depth = 16UL << csrr_n(CSR_SCTRDEPTH);
	for (u64 x = 0; x < depth; x++) {
		ctr_select(x);
		csrw_n(CSR_SIREG, 0x80000001UL);
		csrw_n(CSR_SIREG2, 0x80000000UL);
		csrw_n(CSR_SIREG3, 5);
	}
	csrw_n(CSR_SCTRDEPTH, 0);
	__asm__ volatile(".word 0x10400073" ::: "memory");
	csrw_n(CSR_SCTRDEPTH, 4);
	u64 nonzero = 0;
	for (u64 x = 0; x < depth; x++) {
		ctr_select(x);
		nonzero += csrr_n(CSR_SIREG) != 0;
		nonzero += csrr_n(CSR_SIREG2) != 0;
		nonzero += csrr_n(CSR_SIREG3) != 0;
	}
	rt_check("SCTRCLR at depth 16 zeroes all entries of the largest depth",
		 nonzero, 0);
}

static void test_ctl(void)
{
	rt_puts("-- xctrctl WARL (2.1, 2.2)\n");
	csrw_n(CSR_MCTRCTL, ~0UL);
	u64 m = csrr_n(CSR_MCTRCTL);
	rt_check("mctrctl: M, S, U, BPFRZ always writable",
		 m & (CTL_M | CTL_S | CTL_U | CTL_BPFRZ),
		 CTL_M | CTL_S | CTL_U | CTL_BPFRZ);
	rt_check("mctrctl: custom bits 63:60 and WPRI read 0",
		 m & ~(0xffffUL << 32 | 0x1b87UL) & ~(0x3UL << 38), 0);
	rt_puts("info mctrctl all ones reads ");
	rt_put_hex(m);
	rt_puts("\n");
	u64 s = csrr_n(CSR_SCTRCTL);
	rt_check("sctrctl = mctrctl without M and MTE", s,
		 m & ~(CTL_M | CTL_MTE));
	csrw_n(CSR_SCTRCTL, 0);
	rt_check("sctrctl write keeps mctrctl.M and MTE", csrr_n(CSR_MCTRCTL),
		 m & (CTL_M | CTL_MTE));
	csrw_n(CSR_MCTRCTL, 0);
	csrw_n(CSR_VSCTRCTL, ~0UL);
	rt_check("vsctrctl = sctrctl's fields", csrr_n(CSR_VSCTRCTL), s);
	csrw_n(CSR_VSCTRCTL, 0);
	rt_check("sctrdepth is 32 bits: DEPTH only", csrr_n(CSR_SCTRDEPTH) & ~7UL,
		 0);
}

static void test_freeze(void)
{
	rt_puts("-- freeze (6.5)\n");
	ctr_clear();
	csrw_n(CSR_SCTRSTATUS, STATUS_FROZEN);
	ctr_run(CTR_M, scn_jumps, CTL_M, 0);
	ctr_dump("FROZEN set by software: nothing recorded", 64);
	run("ebreak without BPFRZ: recorded", scn_ebreak, CTL_M);
	run("ebreak with BPFRZ: freezes, not recorded", scn_ebreak,
	    CTL_M | CTL_BPFRZ);
	rt_check("ebreaks taken", ctr_traps, 1);
}

int main(void)
{
	rt_puts("ctr_m: start\n");
	csrw_n(CSR_MSTATEEN0, STATEEN_CTR | STATEEN_CSRIND | STATEEN_SE0);
	test_ctl();
	test_types();
	test_filters();
	test_rasemu();
	test_depth();
	test_freeze();
	return rt_finish("ctr_m");
}
