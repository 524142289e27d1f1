/*
 * amo: the A extension on one hart. Each AMO's returned (old) value and
 * the updated memory, W-form sign extension, and LR/SC success, failure
 * without a reservation and failure on another reservation set.
 */
#include "rt/rt.h"

static volatile u64 mem[32] __attribute__((aligned(64)));

#define AMO(insn, addr, v)                                                     \
	({                                                                     \
		u64 __r;                                                       \
		__asm__ volatile(insn " %0, %2, (%1)"                          \
				 : "=r"(__r)                                   \
				 : "r"(addr), "r"((u64)(v))                    \
				 : "memory");                                  \
		__r;                                                           \
	})

static void amo_case(const char *name, u64 old, u64 ret, u64 want_ret,
		     u64 want_mem)
{
	(void)old;
	rt_puts(name);
	rt_putc('\n');
	rt_check("  returned", ret, want_ret);
	rt_check("  memory", mem[0], want_mem);
	rt_check("  next word untouched", mem[1], 0x5a5a5a5a5a5a5a5aUL);
}

#define CASE_D(insn, init, v, want_mem)                                        \
	do {                                                                   \
		mem[0] = (init);                                               \
		mem[1] = 0x5a5a5a5a5a5a5a5aUL;                                 \
		u64 __r = AMO(insn, &mem[0], v);                               \
		amo_case(insn, init, __r, init, want_mem);                     \
	} while (0)

/* W forms operate on the low word; the high word must not change. */
#define CASE_W(insn, init32, v, want32)                                        \
	do {                                                                   \
		mem[0] = 0xdeadbeef00000000UL | (u32)(init32);                 \
		mem[1] = 0x5a5a5a5a5a5a5a5aUL;                                 \
		u64 __r = AMO(insn, &mem[0], v);                               \
		amo_case(insn, init32, __r, (u64)(i64)(i32)(u32)(init32),      \
			 0xdeadbeef00000000UL | (u32)(want32));                \
	} while (0)

static u64 lr_d(volatile u64 *p)
{
	u64 r;
	__asm__ volatile("lr.d %0, (%1)" : "=r"(r) : "r"(p) : "memory");
	return r;
}

static u64 sc_d(volatile u64 *p, u64 v)
{
	u64 r;
	__asm__ volatile("sc.d %0, %2, (%1)"
			 : "=r"(r)
			 : "r"(p), "r"(v)
			 : "memory");
	return r;
}

static u64 lr_w(volatile u64 *p)
{
	u64 r;
	__asm__ volatile("lr.w %0, (%1)" : "=r"(r) : "r"(p) : "memory");
	return r;
}

static u64 sc_w(volatile u64 *p, u64 v)
{
	u64 r;
	__asm__ volatile("sc.w %0, %2, (%1)"
			 : "=r"(r)
			 : "r"(p), "r"(v)
			 : "memory");
	return r;
}

static void test_lr_sc(void)
{
	rt_puts("== LR/SC\n");
	mem[0] = 100;
	u64 v = lr_d(&mem[0]);
	u64 r = sc_d(&mem[0], v + 1);
	rt_check("lr.d value", v, 100);
	rt_check("sc.d after lr.d succeeds", r, 0);
	rt_check("  memory", mem[0], 101);
	r = sc_d(&mem[0], 555);
	rt_check_true("second sc.d fails (no reservation)", r != 0);
	rt_check("  memory unchanged", mem[0], 101);

	mem[16] = 7;
	(void)lr_d(&mem[0]);
	r = sc_d(&mem[16], 8);
	rt_check_true("sc.d to another reservation set fails", r != 0);
	rt_check("  memory unchanged", mem[16], 7);
	r = sc_d(&mem[0], 9);
	rt_check_true("sc.d after a failed sc.d fails", r != 0);

	mem[2] = 0x00000000ffffffffUL;
	v = lr_w(&mem[2]);
	rt_check("lr.w sign-extends", v, 0xffffffffffffffffUL);
	r = sc_w(&mem[2], 0x12345678);
	rt_check("sc.w succeeds", r, 0);
	rt_check("  memory (high word kept)", mem[2], 0x12345678UL);

	/* An LR/SC increment loop. */
	mem[3] = 0;
	for (int i = 0; i < 100; i++) {
		u64 fail;
		do {
			u64 x = lr_d(&mem[3]);
			fail = sc_d(&mem[3], x + 3);
		} while (fail);
	}
	rt_check("lr/sc loop", mem[3], 300);

	mem[4] = 1;
	r = AMO("amoadd.d.aqrl", &mem[4], 41);
	rt_check("amoadd.d.aqrl", mem[4], 42);
	__asm__ volatile("amoor.w.aq zero, %1, (%0)"
			 :
			 : "r"(&mem[5]), "r"(0x80000000UL)
			 : "memory");
	rt_check("amoor.w.aq with rd=x0", mem[5], 0x80000000UL);
}

int main(void)
{
	rt_puts("amo: start\n");
	rt_puts("== AMO doublewords\n");
	CASE_D("amoswap.d", 0x1122334455667788UL, 0xa5UL, 0xa5UL);
	CASE_D("amoadd.d", 0xfffffffffffffffeUL, 3, 1);
	CASE_D("amoand.d", 0xff00ff00ff00ff00UL, 0x0ff00ff00ff00ff0UL,
	       0x0f000f000f000f00UL);
	CASE_D("amoor.d", 0xff00ff00ff00ff00UL, 0x0ff00ff00ff00ff0UL,
	       0xfff0fff0fff0fff0UL);
	CASE_D("amoxor.d", 0xff00ff00ff00ff00UL, 0x0ff00ff00ff00ff0UL,
	       0xf0f0f0f0f0f0f0f0UL);
	CASE_D("amomin.d", 0x8000000000000000UL, 1, 0x8000000000000000UL);
	CASE_D("amomax.d", 0x8000000000000000UL, 1, 1);
	CASE_D("amominu.d", 0x8000000000000000UL, 1, 1);
	CASE_D("amomaxu.d", 0x8000000000000000UL, 1, 0x8000000000000000UL);
	CASE_D("amomin.d", 0xfffffffffffffffbUL, 0xfffffffffffffffcUL,
	       0xfffffffffffffffbUL);

	rt_puts("== AMO words\n");
	CASE_W("amoswap.w", 0x80000001U, 0x1234U, 0x1234U);
	CASE_W("amoadd.w", 0xffffffffU, 2, 1);
	CASE_W("amoadd.w", 0x7fffffffU, 1, 0x80000000U);
	CASE_W("amoand.w", 0xf0f0f0f0U, 0x0ff0U, 0x00f0U);
	CASE_W("amoor.w", 0xf0f0f0f0U, 0x0f0fU, 0xf0f0ffffU);
	CASE_W("amoxor.w", 0xf0f0f0f0U, 0xffffffffU, 0x0f0f0f0fU);
	CASE_W("amomin.w", 0x80000000U, 1, 0x80000000U);
	CASE_W("amomax.w", 0x80000000U, 1, 1);
	CASE_W("amominu.w", 0x80000000U, 1, 1);
	CASE_W("amomaxu.w", 0x80000000U, 1, 0x80000000U);
	/* Only the low 32 bits of rs2 count in a W-form AMO. */
	CASE_W("amomax.w", 5, 0x00000001fffffffeUL, 5);
	CASE_W("amominu.w", 5, 0xffffffff00000003UL, 3);

	test_lr_sc();
	return rt_finish("amo");
}
