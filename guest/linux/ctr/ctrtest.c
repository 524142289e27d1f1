// SPDX-License-Identifier: GPL-2.0-only
/*
 * ctrtest: a static riscv64 Linux program with a known call structure for ctrrec.
 * main calls work N times (argv[1], default 100); work calls leaf; both return. With a
 * second argument "hop" every iteration also moves the task to the other of CPUs 0 and 1
 * (sched_setaffinity, called with ecall directly), so that its records are saved and
 * restored across CPUs all along. With "lcofi" it first opens a perf event on itself that
 * counts its user-mode instructions with a sampling period of 100000, so that counter
 * overflow interrupts (LCOFI) come while it loops. After the loop it exits with the exit_group system call
 * directly, so that the last records are the loop's and not the C library's exit path;
 * its status is 1 if a move failed, 2 if the perf event could not be opened, else 0.
 */
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>

volatile long sink;

__attribute__((noinline, noipa)) long leaf(long x)
{
	sink += x;
	return x * 3;
}

__attribute__((noinline, noipa)) long work(long x)
{
	return leaf(x) + 1;
}

static inline long sys3(long nr, long x, long y, long z)
{
	register long a0 asm("a0") = x;
	register long a1 asm("a1") = y;
	register long a2 asm("a2") = z;
	register long a7 asm("a7") = nr;

	asm volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
	return a0;
}

static inline long sys5(long nr, long x, long y, long z, long u, long v)
{
	register long a0 asm("a0") = x;
	register long a1 asm("a1") = y;
	register long a2 asm("a2") = z;
	register long a3 asm("a3") = u;
	register long a4 asm("a4") = v;
	register long a7 asm("a7") = nr;

	asm volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a3), "r"(a4), "r"(a7) : "memory");
	return a0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100, acc = 0, i;
	int hop = argc > 2 && argv[2][0] == 'h', failed = 0;
	unsigned long mask;

	if (argc > 2 && argv[2][0] == 'l') {
		struct perf_event_attr attr;

		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_HARDWARE;
		attr.config = PERF_COUNT_HW_INSTRUCTIONS;
		attr.sample_period = 100000;
		attr.exclude_kernel = 1;
		attr.exclude_hv = 1;
		/* perf_event_open(&attr, this task, any CPU, no group, no flags) */
		if (sys5(241, (long)&attr, 0, -1, -1, 0) < 0)
			failed = 2;
	}

	for (i = 0; i < n; i++) {
		acc += work(i);
		if (hop) {
			mask = 1UL << (i & 1);
			if (sys3(122 /* sched_setaffinity */, 0, sizeof(mask), (long)&mask))
				failed = 1;
		}
	}
	sink = acc;
	{
		register long a0 asm("a0") = failed;
		register long a7 asm("a7") = 94; /* exit_group */

		asm volatile("ecall" : : "r"(a0), "r"(a7) : "memory");
	}
	__builtin_unreachable();
}
