/* The SBI PMU extension (SBI v2.0 chapter 11) for the S-mode guest kernels of `vmm run`:
   function and flag numbers, events, the call, and checks for SBI results and ranges. */
#ifndef SDK_VS_PMU_H
#define SDK_VS_PMU_H

#include "sbi.h"

#define SBI_EXT_PMU 0x504D55
#define SBI_ERR_INVALID_ADDRESS (-5)
#define SBI_ERR_ALREADY_STARTED (-7)
#define SBI_ERR_ALREADY_STOPPED (-8)
#define SBI_ERR_NO_SHMEM (-9)

#define PMU_NUM_COUNTERS 0
#define PMU_GET_INFO 1
#define PMU_CONFIG_MATCHING 2
#define PMU_START 3
#define PMU_STOP 4

#define CFG_SKIP_MATCH 1
#define CFG_CLEAR_VALUE 2
#define CFG_AUTO_START 4
#define START_SET_INIT_VALUE 1
#define STOP_RESET 1

#define EV_CYCLES 0x1
#define EV_INSTRUCTIONS 0x2
#define EV_BRANCHES 0x5
#define EV_RAW 0x20000
#define RAW_BRANCH_TAKEN 0x100
#define RAW_LOADS 0x101
#define RAW_STORES 0x102

static inline struct sbiret pmu(u64 fid, u64 a0, u64 a1, u64 a2, u64 a3, u64 a4)
{
	register u64 r0 __asm__("a0") = a0;
	register u64 r1 __asm__("a1") = a1;
	register u64 r2 __asm__("a2") = a2;
	register u64 r3 __asm__("a3") = a3;
	register u64 r4 __asm__("a4") = a4;
	register u64 r6 __asm__("a6") = fid;
	register u64 r7 __asm__("a7") = SBI_EXT_PMU;
	__asm__ volatile("ecall"
			 : "+r"(r0), "+r"(r1)
			 : "r"(r2), "r"(r3), "r"(r4), "r"(r6), "r"(r7)
			 : "memory");
	return (struct sbiret){ (i64)r0, (i64)r1 };
}

/* Reads CSR `num` (a number or a name). */
#define CSR_READ(num)                                                  \
	({                                                             \
		u64 v_;                                                \
		__asm__ volatile("csrr %0, " #num : "=r"(v_)::"memory"); \
		v_;                                                    \
	})

static inline void check_err(const char *name, struct sbiret r, i64 want)
{
	check(name, (u64)r.error, (u64)want);
}

static inline void check_range(const char *name, u64 got, u64 lo, u64 hi)
{
	checks++;
	if (got < lo || got > hi) {
		printk("FAIL %s = %x, want %x..%x\n", name, got, lo, hi);
		failures++;
	} else {
		printk("ok   %s = %x\n", name, got);
	}
}

#endif
