/*
 * rvc: the C extension. Each t_* routine below is written with explicit
 * c.* mnemonics (so the assembler must emit the 16-bit encodings) and
 * returns a value that main() checks.
 */
#include "rt/rt.h"

#define T(name) long name(void)
T(t_li);
T(t_lui);
T(t_lui_neg);
T(t_addi);
T(t_addiw);
T(t_sext_w);
T(t_addi16sp);
T(t_addi4spn);
T(t_slli);
T(t_srli);
T(t_srai);
T(t_andi);
T(t_sub);
T(t_xor);
T(t_or);
T(t_and);
T(t_subw);
T(t_addw);
T(t_mv);
T(t_add);
T(t_lw_sw);
T(t_ld_sd);
T(t_sp_loads);
T(t_fld_fsd);
T(t_j);
T(t_jr);
T(t_jalr_link);
T(t_beqz_bnez);
T(t_loop);
T(t_unaligned32);
T(t_straddle);

u64 rvc_data[4] = {0, 0, 0, 0x400921fb54442d18UL};

__asm__(".pushsection .text\n"
	".option push\n"
	".option rvc\n"
	".balign 4\n"
	".globl t_li\n"
	"t_li: c.li a0, -32\n"
	"	c.jr ra\n"
	".globl t_lui\n"
	"t_lui: c.lui a0, 1\n"
	"	c.jr ra\n"
	".globl t_lui_neg\n"
	"t_lui_neg: c.lui a0, 0xfffe0\n"
	"	c.jr ra\n"
	".globl t_addi\n"
	"t_addi: c.li a0, 5\n"
	"	c.addi a0, -6\n"
	"	c.jr ra\n"
	".globl t_addiw\n"
	"t_addiw: li a0, 0x7fffffff\n"
	"	c.addiw a0, 1\n"
	"	c.jr ra\n"
	".globl t_sext_w\n"
	"t_sext_w: li a0, 0x1fffffffe\n"
	"	c.addiw a0, 0\n"
	"	c.jr ra\n"
	".globl t_addi16sp\n"
	"t_addi16sp: c.mv t0, sp\n"
	"	c.addi16sp sp, -496\n"
	"	sub a0, t0, sp\n"
	"	c.addi16sp sp, 496\n"
	"	c.jr ra\n"
	".globl t_addi4spn\n"
	"t_addi4spn: c.addi4spn a0, sp, 1020\n"
	"	sub a0, a0, sp\n"
	"	c.jr ra\n"
	".globl t_slli\n"
	"t_slli: c.li a0, 1\n"
	"	c.slli a0, 63\n"
	"	c.jr ra\n"
	".globl t_srli\n"
	"t_srli: c.li a0, -1\n"
	"	c.srli a0, 60\n"
	"	c.jr ra\n"
	".globl t_srai\n"
	"t_srai: c.li a0, -16\n"
	"	c.srai a0, 2\n"
	"	c.jr ra\n"
	".globl t_andi\n"
	"t_andi: c.li a0, -1\n"
	"	c.andi a0, -7\n"
	"	c.jr ra\n"
	".globl t_sub\n"
	"t_sub: c.li a0, 3\n"
	"	c.li a1, 5\n"
	"	c.sub a0, a1\n"
	"	c.jr ra\n"
	".globl t_xor\n"
	"t_xor: c.li a0, 12\n"
	"	c.li a1, 10\n"
	"	c.xor a0, a1\n"
	"	c.jr ra\n"
	".globl t_or\n"
	"t_or: c.li a0, 12\n"
	"	c.li a1, 10\n"
	"	c.or a0, a1\n"
	"	c.jr ra\n"
	".globl t_and\n"
	"t_and: c.li a0, 12\n"
	"	c.li a1, 10\n"
	"	c.and a0, a1\n"
	"	c.jr ra\n"
	".globl t_subw\n"
	"t_subw: c.li a0, 1\n"
	"	c.slli a0, 32\n"
	"	c.li a1, 1\n"
	"	c.subw a0, a1\n"
	"	c.jr ra\n"
	".globl t_addw\n"
	"t_addw: li a0, 0x7fffffff\n"
	"	c.li a1, 1\n"
	"	c.addw a0, a1\n"
	"	c.jr ra\n"
	".globl t_mv\n"
	"t_mv: li t1, 0x123456789\n"
	"	c.mv a0, t1\n"
	"	c.jr ra\n"
	".globl t_add\n"
	"t_add: li t1, 0x100000000\n"
	"	c.li a0, -1\n"
	"	c.add a0, t1\n"
	"	c.jr ra\n"
	/* c.sw then c.lw (sign-extends), on rvc_data. */
	".globl t_lw_sw\n"
	"t_lw_sw: la a2, rvc_data\n"
	"	li a1, 0x89abcdef\n"
	"	c.sw a1, 4(a2)\n"
	"	c.lw a0, 4(a2)\n"
	"	c.jr ra\n"
	".globl t_ld_sd\n"
	"t_ld_sd: la a2, rvc_data\n"
	"	li a1, 0x0123456789abcdef\n"
	"	c.sd a1, 16(a2)\n"
	"	c.ld a3, 16(a2)\n"
	"	c.lw a0, 20(a2)\n"
	"	c.add a0, a3\n"
	"	c.jr ra\n"
	/* sp-relative forms. */
	".globl t_sp_loads\n"
	"t_sp_loads: c.addi16sp sp, -32\n"
	"	li t1, 0xfedcba9876543210\n"
	"	c.sdsp t1, 8(sp)\n"
	"	c.swsp t1, 20(sp)\n"
	"	c.ldsp a0, 8(sp)\n"
	"	c.lwsp a1, 20(sp)\n"
	"	c.xor a0, a1\n"
	"	c.addi16sp sp, 32\n"
	"	c.jr ra\n"
	/* c.fld/c.fsd and c.fldsp/c.fsdsp move doubles bit-exactly. */
	".globl t_fld_fsd\n"
	"t_fld_fsd: la a2, rvc_data\n"
	"	c.fld fa0, 24(a2)\n"
	"	c.addi16sp sp, -16\n"
	"	c.fsdsp fa0, 0(sp)\n"
	"	c.fldsp fa1, 0(sp)\n"
	"	c.fsd fa1, 0(a2)\n"
	"	c.addi16sp sp, 16\n"
	"	c.ld a0, 0(a2)\n"
	"	c.jr ra\n"
	".globl t_j\n"
	"t_j: c.li a0, 1\n"
	"	c.j 1f\n"
	"	c.li a0, 2\n"
	"1:	c.jr ra\n"
	".globl t_jr\n"
	"t_jr: la t0, 1f\n"
	"	c.li a0, 3\n"
	"	c.jr t0\n"
	"	c.li a0, 4\n"
	"1:	c.jr ra\n"
	/* c.jalr links pc + 2: returns ra - (address of the c.jalr). */
	".globl t_jalr_link\n"
	"t_jalr_link: c.mv t2, ra\n"
	"	la t0, 1f\n"
	"	la t1, 2f\n"
	"2:	c.jalr t0\n"
	"	c.li a0, 9\n"
	"	c.jr t2\n"
	"1:	sub a0, ra, t1\n"
	"	c.jr t2\n"
	".globl t_beqz_bnez\n"
	"t_beqz_bnez: c.li a0, 0\n"
	"	c.li a1, 0\n"
	"	c.beqz a1, 1f\n"
	"	c.addi a0, 1\n"
	"1:	c.li a1, 7\n"
	"	c.bnez a1, 2f\n"
	"	c.addi a0, 2\n"
	"2:	c.beqz a1, 3f\n"
	"	c.addi a0, 4\n"
	"3:	c.jr ra\n"
	".globl t_loop\n"
	"t_loop: c.li a0, 0\n"
	"	c.li a1, 10\n"
	"1:	c.addi a0, 3\n"
	"	c.addi a1, -1\n"
	"	c.bnez a1, 1b\n"
	"	c.jr ra\n"
	/* A 32-bit instruction at a 2-mod-4 address. */
	".balign 4\n"
	".globl t_unaligned32\n"
	"t_unaligned32: c.li a0, 5\n"
	".option push\n"
	".option norvc\n"
	"	addi a0, a0, 1000\n"
	".option pop\n"
	"	c.jr ra\n"
	/* A 32-bit instruction that straddles a 4 KiB boundary. */
	".balign 4096\n"
	".skip 4096 - 6\n"
	".globl t_straddle\n"
	"t_straddle: c.li a0, 7\n"
	"	c.nop\n"
	".option push\n"
	".option norvc\n"
	"	addi a0, a0, 100\n"
	".option pop\n"
	"	c.jr ra\n"
	".option pop\n"
	".popsection\n");

int main(void)
{
	rt_puts("rvc: start\n");
	rt_check("c.li -32", (u64)t_li(), (u64)-32);
	rt_check("c.lui 1", (u64)t_lui(), 0x1000);
	rt_check("c.lui 0xfffe0", (u64)t_lui_neg(), 0xfffffffffffe0000UL);
	rt_check("c.addi", (u64)t_addi(), (u64)-1);
	rt_check("c.addiw overflow", (u64)t_addiw(), 0xffffffff80000000UL);
	rt_check("c.addiw 0 (sext.w)", (u64)t_sext_w(), (u64)-2);
	rt_check("c.addi16sp", (u64)t_addi16sp(), 496);
	rt_check("c.addi4spn", (u64)t_addi4spn(), 1020);
	rt_check("c.slli 63", (u64)t_slli(), 0x8000000000000000UL);
	rt_check("c.srli 60", (u64)t_srli(), 0xf);
	rt_check("c.srai", (u64)t_srai(), (u64)-4);
	rt_check("c.andi -7", (u64)t_andi(), (u64)-7);
	rt_check("c.sub", (u64)t_sub(), (u64)-2);
	rt_check("c.xor", (u64)t_xor(), 6);
	rt_check("c.or", (u64)t_or(), 14);
	rt_check("c.and", (u64)t_and(), 8);
	rt_check("c.subw", (u64)t_subw(), (u64)-1);
	rt_check("c.addw overflow", (u64)t_addw(), 0xffffffff80000000UL);
	rt_check("c.mv", (u64)t_mv(), 0x123456789UL);
	rt_check("c.add", (u64)t_add(), 0xffffffffUL);
	rt_check("c.sw/c.lw", (u64)t_lw_sw(), 0xffffffff89abcdefUL);
	rt_check("c.sd/c.ld", (u64)t_ld_sd(),
		 0x0123456789abcdefUL + 0x01234567UL);
	rt_check("c.sdsp/c.swsp/c.ldsp/c.lwsp", (u64)t_sp_loads(),
		 0xfedcba9876543210UL ^ 0x76543210UL);
	rt_check("c.fld/c.fsdsp/c.fldsp/c.fsd", (u64)t_fld_fsd(),
		 0x400921fb54442d18UL);
	rt_check("c.j", (u64)t_j(), 1);
	rt_check("c.jr", (u64)t_jr(), 3);
	rt_check("c.jalr links pc+2", (u64)t_jalr_link(), 2);
	rt_check("c.beqz/c.bnez taken and not taken", (u64)t_beqz_bnez(), 4);
	rt_check("c.bnez loop", (u64)t_loop(), 30);
	rt_check("32-bit insn at pc%4 == 2", (u64)t_unaligned32(), 1005);
	rt_check("32-bit insn across a page", (u64)t_straddle(), 107);
	rt_check_true("t_unaligned32 + 2 is 2 mod 4",
		      (((u64)t_unaligned32 + 2) & 3) == 2);
	rt_check_true("t_straddle + 4 is 2 below a page boundary",
		      (((u64)t_straddle + 4) & 0xfff) == 0xffe);
	return rt_finish("rvc");
}
