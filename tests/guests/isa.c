/*
 * isa: base-ISA corner cases an emulator can get wrong: a destination
 * register that is also a source (JALR, AMOs, SC, CSR swaps), HINT and
 * FENCE encodings that must execute as no-ops, LUI/AUIPC sign extension
 * and load widths.
 */
#include "rt/rt.h"

#define T(name) long name(long, long)
T(t_jalr_ra_ra);
T(t_jalr_t0_t0_off);
T(t_amoadd_rd_rs2);
T(t_amoswap_rd_rs1);
T(t_sc_rd_rs2);
T(t_csrrw_swap);
T(t_hints);
T(t_fences);
T(t_lui_neg);
T(t_auipc);
T(t_loads);
T(t_x0);
T(t_lr_rd_rs1);

static u64 word[4] __attribute__((aligned(16)));

__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	/* jalr ra, 0(ra): the target comes from ra before ra is written. */
	".globl t_jalr_ra_ra\n"
	"t_jalr_ra_ra: mv t2, ra\n"
	"	la ra, 1f\n"
	"	la t1, 2f\n"
	"2:	jalr ra, 0(ra)\n"
	"	li a0, 99\n"
	"	jr t2\n"
	"1:	sub a0, ra, t1\n" /* 4: ra = address after the jalr */
	"	jr t2\n"
	/* jalr t0, 8(t0) */
	".globl t_jalr_t0_t0_off\n"
	"t_jalr_t0_t0_off: mv t2, ra\n"
	"	la t0, 1f\n"
	"	addi t0, t0, -8\n"
	"	jalr t0, 8(t0)\n"
	"	li a0, 99\n"
	"	jr t2\n"
	"1:	li a0, 7\n"
	"	jr t2\n"
	/* amoadd.d a1, a1, (a0): memory = old + a1, a1 = old. a0 = &word. */
	".globl t_amoadd_rd_rs2\n"
	"t_amoadd_rd_rs2: li t0, 100\n"
	"	sd t0, 0(a0)\n"
	"	li a1, 23\n"
	"	amoadd.d a1, a1, (a0)\n"
	"	ld t0, 0(a0)\n"
	"	slli a0, a1, 16\n"
	"	or a0, a0, t0\n" /* (old << 16) | new */
	"	ret\n"
	/* amoswap.d a0, a1, (a0): rd is the address register. */
	".globl t_amoswap_rd_rs1\n"
	"t_amoswap_rd_rs1: mv t1, a0\n"
	"	li t0, 0x55\n"
	"	sd t0, 0(a0)\n"
	"	li a1, 0x66\n"
	"	amoswap.d a0, a1, (a0)\n"
	"	ld t0, 0(t1)\n"
	"	slli a0, a0, 16\n"
	"	or a0, a0, t0\n" /* (old << 16) | new */
	"	ret\n"
	/* lr.d a0, (a0) then sc.d a1, a1, (t1): rd == rs2 gets 0 on success. */
	".globl t_sc_rd_rs2\n"
	"t_sc_rd_rs2: mv t1, a0\n"
	"	li a1, 0x77\n"
	"	lr.d a0, (a0)\n"
	"	sc.d a1, a1, (t1)\n"
	"	ld t0, 0(t1)\n"
	"	slli a0, a1, 16\n"
	"	or a0, a0, t0\n" /* (sc result << 16) | memory */
	"	ret\n"
	".globl t_lr_rd_rs1\n"
	"t_lr_rd_rs1: li t0, 0x1234\n"
	"	sd t0, 0(a0)\n"
	"	lr.d a0, (a0)\n"
	"	ret\n"
	/* csrrw a0, mscratch, a0 swaps. */
	".globl t_csrrw_swap\n"
	"t_csrrw_swap: csrr t1, mscratch\n"
	"	li t0, 5\n"
	"	csrw mscratch, t0\n"
	"	li a0, 7\n"
	"	csrrw a0, mscratch, a0\n"
	"	csrrw t0, mscratch, t1\n" /* restore; t0 = 7 */
	"	slli a0, a0, 8\n"
	"	or a0, a0, t0\n" /* 0x507 */
	"	ret\n"
	/* HINTs: writes to x0 and compressed HINT encodings. */
	".globl t_hints\n"
	"t_hints: li a0, 0\n"
	"	addi x0, a0, 5\n"
	"	slti x0, a0, 1\n"
	"	lui x0, 0x12345\n"
	"	auipc x0, 1\n"
	"	add x0, a0, a0\n"
	"	slli x0, a0, 3\n"
	"	.half 0x0005\n" /* c.nop 1 */
	"	.half 0x4005\n" /* c.li x0, 1 */
	"	.half 0x6005\n" /* c.lui x0, 1 */
	"	.half 0x802a\n" /* c.mv x0, a0 */
	"	.half 0x902a\n" /* c.add x0, a0 */
	"	.half 0x0006\n" /* c.slli x0, 1 */
	"	mv a0, x0\n"
	"	addi a0, a0, 1\n"
	"	ret\n"
	/* FENCE variants: all execute as (at most) fences. */
	".globl t_fences\n"
	"t_fences: li a0, 3\n"
	"	fence\n"
	"	fence rw, rw\n"
	"	fence w, r\n"
	"	fence i, o\n"
	"	.word 0x8330000f\n" /* fence.tso */
	"	.word 0x0100000f\n" /* pause */
	"	fence.i\n"
	"	ret\n"
	".globl t_lui_neg\n"
	"t_lui_neg: lui a0, 0x80000\n"
	"	ret\n"
	/* auipc with a negative immediate: pc - 2^31 + ... */
	".globl t_auipc\n"
	"t_auipc: auipc a0, 0xfffff\n"
	"1:	auipc t0, 0\n"
	"	sub a0, t0, a0\n" /* 4 + 4096 */
	"	ret\n"
	".globl t_loads\n"
	"t_loads: li t0, 0x8091a2b3c4d5e6f7\n"
	"	sd t0, 0(a0)\n"
	"	lb t1, 7(a0)\n"  /* -0x80 */
	"	lbu t2, 7(a0)\n" /* 0x80 */
	"	add a1, t1, t2\n" /* 0 */
	"	lh t1, 6(a0)\n"  /* -0x7f6f */
	"	lhu t2, 6(a0)\n" /* 0x8091 */
	"	add a1, a1, t1\n"
	"	add a1, a1, t2\n" /* 0x122 */
	"	lw t1, 4(a0)\n"  /* -0x7f6e5d4d */
	"	lwu t2, 4(a0)\n" /* 0x8091a2b3 */
	"	add a1, a1, t1\n"
	"	add a1, a1, t2\n" /* 0x122 + 0x1234566 */
	"	lhu t1, 0(a0)\n" /* 0xe6f7 */
	"	add a0, a1, t1\n"
	"	ret\n"
	/* x0 reads as zero after being a destination. */
	".globl t_x0\n"
	"t_x0: li x0, 5\n"
	"	ld x0, 0(a0)\n"
	"	addi a0, x0, 0\n"
	"	ret\n"
	".option pop\n"
	".popsection\n");

int main(void)
{
	rt_puts("isa: start\n");
	long w = (long)word;
	rt_check("jalr ra, 0(ra)", (u64)t_jalr_ra_ra(0, 0), 4);
	rt_check("jalr t0, 8(t0)", (u64)t_jalr_t0_t0_off(0, 0), 7);
	rt_check("amoadd.d a1, a1, (a0)", (u64)t_amoadd_rd_rs2(w, 0),
		 (100UL << 16) | 123);
	rt_check("amoswap.d a0, a1, (a0)", (u64)t_amoswap_rd_rs1(w, 0),
		 (0x55UL << 16) | 0x66);
	rt_check("lr.d a0, (a0)", (u64)t_lr_rd_rs1(w, 0), 0x1234);
	rt_check("sc.d a1, a1, (t1)", (u64)t_sc_rd_rs2(w, 0), 0x77);
	rt_check("csrrw a0, mscratch, a0", (u64)t_csrrw_swap(0, 0), 0x507);
	rt_check("HINTs", (u64)t_hints(0, 0), 1);
	rt_check("fences", (u64)t_fences(0, 0), 3);
	rt_check("lui 0x80000", (u64)t_lui_neg(0, 0), 0xffffffff80000000UL);
	rt_check("auipc -1", (u64)t_auipc(0, 0), 4096 + 4);
	/* 0x122 (lh + lhu) + 0x1234566 (lw + lwu) + 0xe6f7 (lhu) */
	rt_check("load widths", (u64)t_loads(w, 0), 0x1242d7f);
	rt_check("x0", (u64)t_x0(w, 0), 0);
	return rt_finish("isa");
}
