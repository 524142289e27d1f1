/*
 * mext: the M extension's corner cases (division by zero, signed overflow,
 * high multiplies) and RV64 W-form sign extension, plus the 32-bit shifts
 * and shift-amount masking of the base ISA.
 */
#include "rt/rt.h"

#define OP(insn, a, b)                                                         \
	({                                                                     \
		u64 __r;                                                       \
		__asm__ volatile(insn " %0, %1, %2"                            \
				 : "=r"(__r)                                   \
				 : "r"((u64)(a)), "r"((u64)(b)));              \
		__r;                                                           \
	})
#define OPI(insn, a, imm)                                                      \
	({                                                                     \
		u64 __r;                                                       \
		__asm__ volatile(insn " %0, %1, " #imm                         \
				 : "=r"(__r)                                   \
				 : "r"((u64)(a)));                             \
		__r;                                                           \
	})

#define MIN64 0x8000000000000000UL
#define MIN32 0xffffffff80000000UL
#define ALL1 0xffffffffffffffffUL

int main(void)
{
	rt_puts("mext: start\n");

	rt_puts("== division by zero\n");
	rt_check("div 7/0", OP("div", 7, 0), ALL1);
	rt_check("divu 7/0", OP("divu", 7, 0), ALL1);
	rt_check("rem 7%0", OP("rem", 7, 0), 7);
	rt_check("rem -7%0", OP("rem", -7L, 0), (u64)-7L);
	rt_check("remu 7%0", OP("remu", 7, 0), 7);
	rt_check("divw 7/0", OP("divw", 7, 0), ALL1);
	rt_check("divuw 7/0", OP("divuw", 7, 0), ALL1);
	rt_check("remw 0x1_8000_0007%0", OP("remw", 0x180000007UL, 0),
		 0xffffffff80000007UL);
	rt_check("remuw 0x1_8000_0007%0", OP("remuw", 0x180000007UL, 0),
		 0xffffffff80000007UL);
	rt_check("remuw 0x1_0000_0007%0", OP("remuw", 0x100000007UL, 0), 7);

	rt_puts("== signed overflow\n");
	rt_check("div MIN/-1", OP("div", MIN64, -1L), MIN64);
	rt_check("rem MIN%-1", OP("rem", MIN64, -1L), 0);
	rt_check("divw MIN32/-1", OP("divw", 0x80000000UL, -1L), MIN32);
	rt_check("remw MIN32%-1", OP("remw", 0x80000000UL, -1L), 0);
	rt_check("divu MIN/-1", OP("divu", MIN64, -1L), 0);

	rt_puts("== rounding and signs\n");
	rt_check("div -7/2", OP("div", -7L, 2), (u64)-3L);
	rt_check("rem -7%2", OP("rem", -7L, 2), (u64)-1L);
	rt_check("rem 7%-2", OP("rem", 7, -2L), 1);
	rt_check("div 7/-2", OP("div", 7, -2L), (u64)-3L);
	rt_check("divu -7/2", OP("divu", -7L, 2), 0x7ffffffffffffffcUL);
	rt_check("remu -7%2", OP("remu", -7L, 2), 1);
	rt_check("divw ignores upper bits",
		 OP("divw", 0x100000006UL, 0xff00000000000003UL), 2);
	rt_check("divuw 0xffffffff/1", OP("divuw", 0xffffffffUL, 1), ALL1);
	rt_check("divuw 0xfffffffe/2", OP("divuw", 0x5fffffffeUL, 2),
		 0x7fffffffUL);
	rt_check("remw -7%2", OP("remw", 0xfffffff9UL, 2), ALL1);

	rt_puts("== multiplication\n");
	rt_check("mul", OP("mul", 0x0123456789abcdefUL, 0x0fedcba987654321UL),
		 0x22236d88fe5618cfUL);
	rt_check("mulhu", OP("mulhu", 0x0123456789abcdefUL, 0x0fedcba987654321UL),
		 0x121fa00ad77d74UL);
	rt_check("mulh -1*-1", OP("mulh", ALL1, ALL1), 0);
	rt_check("mulhu -1*-1", OP("mulhu", ALL1, ALL1), 0xfffffffffffffffeUL);
	rt_check("mulhsu -1*(2^64-1)", OP("mulhsu", ALL1, ALL1), ALL1);
	rt_check("mulh MIN*MIN", OP("mulh", MIN64, MIN64), 0x4000000000000000UL);
	rt_check("mulh MIN*-1", OP("mulh", MIN64, ALL1), 0);
	rt_check("mul MIN*-1", OP("mul", MIN64, ALL1), MIN64);
	rt_check("mulhsu -5*3", OP("mulhsu", -5L, 3), ALL1);
	rt_check("mulhsu", OP("mulhsu", 0xfedcba9876543210UL, 0xfedcba9876543210UL),
		 0xfede05ff528828bcUL);
	rt_check("mulh", OP("mulh", 0xfedcba9876543210UL, 0x0123456789abcdefUL),
		 0xfffeb49923cc0953UL);
	rt_check("mulw 2^16*2^16", OP("mulw", 0x10000, 0x10000), 0);
	rt_check("mulw 0x7fffffff*2", OP("mulw", 0x7fffffff, 2),
		 0xfffffffffffffffeUL);
	rt_check("mulw ignores upper bits", OP("mulw", 0xabc00000003UL, 0x5), 15);

	rt_puts("== W forms and shifts\n");
	rt_check("addw overflow", OP("addw", 0x7fffffff, 1), MIN32);
	rt_check("subw", OP("subw", 0x100000000UL, 1), ALL1);
	rt_check("addiw", OPI("addiw", 0x7ffffffful, 1), MIN32);
	rt_check("sllw 1<<31", OP("sllw", 1, 31), MIN32);
	rt_check("sllw shamt mod 32", OP("sllw", 1, 33), 2);
	rt_check("srlw", OP("srlw", MIN32, 31), 1);
	rt_check("srlw keeps bit 31 clear", OP("srlw", ALL1, 0), ALL1);
	rt_check("srlw 1", OP("srlw", ALL1, 1), 0x7fffffffUL);
	rt_check("sraw", OP("sraw", 0x80000000UL, 31), ALL1);
	rt_check("slliw", OPI("slliw", 3, 30), MIN32 | 0x40000000UL);
	rt_check("srliw", OPI("srliw", 0xfffffffff0000000UL, 4), 0x0f000000UL);
	rt_check("sraiw", OPI("sraiw", 0x00000000f0000000UL, 4),
		 0xffffffffff000000UL);
	rt_check("sll shamt mod 64", OP("sll", 1, 65), 2);
	rt_check("sra", OP("sra", MIN64, 63), ALL1);
	rt_check("srl", OP("srl", MIN64, 63), 1);
	rt_check("slt", OP("slt", ALL1, 0), 1);
	rt_check("sltu", OP("sltu", ALL1, 0), 0);
	rt_check("sltiu -1 (seqz-like)", OPI("sltiu", 5, -1), 1);

	return rt_finish("mext");
}
