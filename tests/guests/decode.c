/*
 * decode: executes every encoding of selected RV64GC major opcodes (all
 * funct3/funct7 or funct5 combinations, with rd/rs1/rs2 fixed to scratch
 * registers) and records, per encoding, either the trap cause and mtval or
 * the value written to rd. Prints one hash per opcode space plus the
 * number of encodings that raised illegal-instruction.
 *
 * Compared with QEMU run as a plain RV64GC hart (`-cpu rv64` with the H,
 * Zba/Zbb/Zbc/Zbs and Sstc extensions off; see tests/tests/qemu.rs):
 * the RISC-V specs fix which encodings exist and what they compute.
 * Build with -DDECODE_TRACE=1 to print every encoding.
 */
#include "rt/rt.h"

#ifndef DECODE_TRACE
#define DECODE_TRACE 0
#endif

#define REG_RD 5  /* t0 / ft5 */
#define REG_RS1 6 /* t1 / ft6 */
#define REG_RS2 7 /* t2 / ft7 */

/* Code run for each encoding: the instruction, then "addi t0, zero, 77"
 * (skipped by a taken branch of +8), then "ret". */
static u32 code[4] __attribute__((aligned(16)));

/* Memory for loads, stores and AMOs (t1 points to its middle). */
static u64 mem[64] __attribute__((aligned(64)));

/*
 * long exec_one(void *fn, u64 rs1, u64 rs2): runs fn with t1 = rs1,
 * t2 = rs2, t0 = 0x5a5a..., ft5..ft7 and f0..f4 set to known values;
 * returns t0 (or, for FP destinations, the caller reads fp_rd).
 */
u64 exec_one(void *fn, u64 rs1, u64 rs2);
u64 fp_rd;
__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".globl exec_one\n"
	"exec_one: addi sp, sp, -16\n"
	"	sd ra, 0(sp)\n"
	"	mv t3, a0\n"
	"	mv t1, a1\n"
	"	mv t2, a2\n"
	"	li t0, 0x5a5a5a5a5a5a5a5a\n"
	"	fmv.d.x ft5, t0\n"
	"	li a0, 0x4000000000000000\n" /* 2.0 */
	"	fmv.d.x ft6, a0\n"
	"	li a0, 0xffffffff3fc00000\n" /* 1.5f */
	"	fmv.d.x ft7, a0\n"
	"	li a0, 0x3ff8000000000000\n" /* 1.5 */
	"	fmv.d.x f0, a0\n"
	"	li a0, 0xffffffffc0400000\n" /* -3.0f */
	"	fmv.d.x f1, a0\n"
	"	li a0, 0xbff0000000000000\n" /* -1.0 */
	"	fmv.d.x f2, a0\n"
	"	li a0, 0x7ff0000000000001\n" /* sNaN */
	"	fmv.d.x f3, a0\n"
	"	li a0, 0x0000000040000000\n" /* unboxed 2.0f */
	"	fmv.d.x f4, a0\n"
	"	jalr ra, 0(t3)\n"
	"	fmv.x.d a0, ft5\n"
	"	la a1, fp_rd\n"
	"	sd a0, 0(a1)\n"
	"	mv a0, t0\n"
	"	ld ra, 0(sp)\n"
	"	addi sp, sp, 16\n"
	"	ret\n"
	".option pop\n"
	".popsection\n");

static u64 hash, illegal, total;

static void mix(u64 v)
{
	hash = (hash ^ v) * 0x100000001b3UL;
	hash ^= hash >> 31;
}

static void run(u32 insn, u64 rs1, u64 rs2)
{
	code[0] = insn;
	code[1] = 0x04d00293; /* addi t0, zero, 77 */
	code[2] = 0x00008067; /* ret */
	for (int i = 0; i < 64; i++)
		mem[i] = 0x0101010101010101UL * (u64)(i + 1);
	csr_write(fflags, 0);
	/* An SC always drops the reservation: no LR carries over. */
	static u64 dummy;
	__asm__ volatile("sc.d zero, zero, (%0)" ::"r"(&dummy) : "memory");
	__asm__ volatile("fence.i" ::: "memory");
	rt_trap_reset();
	u64 rd = exec_one(code, rs1, rs2);
	u64 flags = csr_read(fflags);
	u64 memsum = 0;
	for (int i = 0; i < 64; i++)
		memsum = memsum * 31 + mem[i];
	total++;
	mix(insn);
	if (rt_mtrap.count) {
		mix(rt_mtrap.cause);
		mix(rt_mtrap.tval);
		if (rt_mtrap.cause == 2)
			illegal++;
	} else {
		mix(rd);
		mix(fp_rd);
		mix(flags);
		mix(memsum);
	}
	if (DECODE_TRACE) {
		rt_put_hex32(insn);
		if (rt_mtrap.count) {
			rt_puts(" trap ");
			rt_put_hex(rt_mtrap.cause);
		} else {
			rt_puts(" rd ");
			rt_put_hex(rd);
			rt_puts(" frd ");
			rt_put_hex(fp_rd);
			rt_puts(" flags ");
			rt_put_hex(flags);
			rt_puts(" mem ");
			rt_put_hex(memsum);
		}
		rt_putc('\n');
	}
}

static void start(void)
{
	hash = 0xcbf29ce484222325UL;
	illegal = total = 0;
}

static void report(const char *name)
{
	rt_puts(name);
	rt_puts(": ");
	rt_put_dec(total);
	rt_puts(" encodings, ");
	rt_put_dec(illegal);
	rt_puts(" illegal, hash ");
	rt_put_hex(hash);
	rt_putc('\n');
}

static u32 r_type(u32 opcode, u32 funct3, u32 funct7)
{
	return (funct7 << 25) | (REG_RS2 << 20) | (REG_RS1 << 15) |
	       (funct3 << 12) | (REG_RD << 7) | opcode;
}

static const u64 A = 0x1234567890abcdefUL; /* rs1 value */
static const u64 B = 0x0fedcba987654321UL; /* rs2 value */

int main(void)
{
	rt_puts("decode: start\n");
	rt_trap_ok = 1;
	u64 ptr = (u64)&mem[32];

	/* OP and OP-32: every funct7 x funct3. */
	static const u32 op_opcodes[2] = {0x33, 0x3b};
	static const char *const op_names[2] = {"OP", "OP-32"};
	for (int o = 0; o < 2; o++) {
		start();
		for (u32 f7 = 0; f7 < 128; f7++)
			for (u32 f3 = 0; f3 < 8; f3++) {
				run(r_type(op_opcodes[o], f3, f7), A, B);
				run(r_type(op_opcodes[o], f3, f7), ~0UL, 0);
			}
		report(op_names[o]);
	}

	/* OP-IMM and OP-IMM-32: funct3 x imm[11:5] (imm[4:0] = 7). */
	static const u32 imm_opcodes[2] = {0x13, 0x1b};
	static const char *const imm_names[2] = {"OP-IMM", "OP-IMM-32"};
	for (int o = 0; o < 2; o++) {
		start();
		for (u32 hi = 0; hi < 128; hi++)
			for (u32 f3 = 0; f3 < 8; f3++)
				run(r_type(imm_opcodes[o], f3, hi), A, B);
		report(imm_names[o]);
	}

	/* LOAD and STORE (every width), BRANCH (offset +8), JALR funct3. */
	start();
	for (u32 f3 = 0; f3 < 8; f3++) {
		/* lX t0, 8(t1) */
		run((8u << 20) | (REG_RS1 << 15) | (f3 << 12) | (REG_RD << 7) |
			    0x03,
		    ptr, 0);
		/* sX t2, 8(t1) */
		run((REG_RS2 << 20) | (REG_RS1 << 15) | (f3 << 12) | (8u << 7) |
			    0x23,
		    ptr, B);
		/* bXX t1, t2, +8 */
		run((REG_RS2 << 20) | (REG_RS1 << 15) | (f3 << 12) | (8u << 7) |
			    0x63,
		    A, B);
		run((REG_RS2 << 20) | (REG_RS1 << 15) | (f3 << 12) | (8u << 7) |
			    0x63,
		    B, B);
		/* jalr with funct3 != 0 must be illegal (funct3 0 would jump) */
		if (f3)
			run((REG_RS1 << 15) | (f3 << 12) | (REG_RD << 7) | 0x67,
			    (u64)&code[2], 0);
	}
	report("LOAD/STORE/BRANCH/JALR");

	/* MISC-MEM: every funct3 with rd = rs1 = 0 and fence fields set. */
	start();
	for (u32 f3 = 0; f3 < 8; f3++) {
		run((0x0ffu << 20) | (f3 << 12) | 0x0f, 0, 0);
		if (f3 == 2) /* CBO encodings would use rs1 as an address */
			continue;
		run((0x833u << 20) | (REG_RS1 << 15) | (f3 << 12) |
			    (REG_RD << 7) | 0x0f,
		    ptr, 0);
	}
	report("MISC-MEM");

	/* AMO: funct5 x funct3 x aq/rl, rs1 = an aligned address. */
	start();
	for (u32 f5 = 0; f5 < 32; f5++)
		for (u32 f3 = 0; f3 < 8; f3++)
			for (u32 aqrl = 0; aqrl < 4; aqrl += 3)
				run(r_type(0x2f, f3, (f5 << 2) | aqrl), ptr, B);
	/* LR with rs2 != 0 (reserved) */
	run(r_type(0x2f, 2, 0x2u << 2), ptr, B);
	run(r_type(0x2f, 3, 0x2u << 2), ptr, B);
	report("AMO");

	/* OP-FP: funct7 x rm x rs2 field (f0..f3 or x0..x3 as sources). */
	start();
	for (u32 f7 = 0; f7 < 128; f7++)
		for (u32 rm = 0; rm < 8; rm++)
			for (u32 rs2 = 0; rs2 < 4; rs2++)
				run((f7 << 25) | (rs2 << 20) | (REG_RS1 << 15) |
					    (rm << 12) | (REG_RD << 7) | 0x53,
				    A, B);
	report("OP-FP");

	/* FMADD/FMSUB/FNMSUB/FNMADD: fmt x rm, rs3 = f4 (unboxed) or f0. */
	start();
	for (u32 op = 0x43; op <= 0x4f; op += 4)
		for (u32 fmt = 0; fmt < 4; fmt++)
			for (u32 rm = 0; rm < 8; rm++)
				for (u32 rs3 = 0; rs3 < 5; rs3 += 4)
					run((rs3 << 27) | (fmt << 25) |
						    (REG_RS2 << 20) |
						    (REG_RS1 << 15) |
						    (rm << 12) | (REG_RD << 7) |
						    op,
					    A, B);
	report("FMA");

	/* LOAD-FP and STORE-FP: every width. */
	start();
	for (u32 f3 = 0; f3 < 8; f3++) {
		run((8u << 20) | (REG_RS1 << 15) | (f3 << 12) | (REG_RD << 7) |
			    0x07,
		    ptr, 0);
		run((REG_RS2 << 20) | (REG_RS1 << 15) | (f3 << 12) | (8u << 7) |
			    0x27,
		    ptr, 0);
	}
	report("LOAD-FP/STORE-FP");

	/* SYSTEM funct3 = 0 and 4 with nonzero rd/rs1 (reserved), ecall and
	 * ebreak with stray fields, and unassigned funct12 values. */
	start();
	static const u32 funct12s[] = {0x000, 0x001, 0x002, 0x003, 0x7ff,
				       0x0ff, 0x202, 0x303, 0x104, 0x106};
	for (unsigned i = 0; i < sizeof(funct12s) / sizeof(funct12s[0]); i++) {
		run((funct12s[i] << 20) | (REG_RS1 << 15) | 0x73, 0, 0);
		run((funct12s[i] << 20) | (REG_RD << 7) | 0x73, 0, 0);
		run((funct12s[i] << 20) | (REG_RS1 << 15) | (4u << 12) |
			    (REG_RD << 7) | 0x73,
		    ptr, 0);
	}
	report("SYSTEM");

	rt_trap_ok = 0;
	return rt_finish("decode");
}
