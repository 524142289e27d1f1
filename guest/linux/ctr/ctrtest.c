// SPDX-License-Identifier: GPL-2.0-only
/*
 * ctrtest: a static riscv64 Linux program with a known call structure for ctrrec.
 * main calls work N times (argv[1], default 100); work calls leaf; both return. After the
 * loop it exits with the exit_group system call directly, so that the last records are
 * the loop's and not the C library's exit path.
 */
#include <stdlib.h>

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

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100, acc = 0, i;

	for (i = 0; i < n; i++)
		acc += work(i);
	sink = acc;
	{
		register long a0 asm("a0") = 0;
		register long a7 asm("a7") = 94; /* exit_group */

		asm volatile("ecall" : : "r"(a0), "r"(a7) : "memory");
	}
	__builtin_unreachable();
}
