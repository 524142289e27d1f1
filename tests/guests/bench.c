/*
 * bench: a compute-bound workload of a few hundred million instructions
 * (CRC-32 over a buffer, a sieve of Eratosthenes, an integer matrix
 * multiply). Each kernel's result is checked against a value computed
 * another way, and the checksums are printed.
 *
 * scripts/bench-machine.sh runs this guest on vmm and on QEMU and
 * compares their speed.
 */
#include "rt/rt.h"

#define CRC_BUF_SIZE (64 * 1024)
#define CRC_PASSES 24
#define SIEVE_LIMIT 2000000
#define SIEVE_PASSES 6
#define MAT_N 96
#define MAT_PASSES 12

static u8 crc_buf[CRC_BUF_SIZE];
static u8 sieve[SIEVE_LIMIT + 1];
static i32 mat_a[MAT_N][MAT_N], mat_b[MAT_N][MAT_N], mat_c[MAT_N][MAT_N];

/* Bitwise CRC-32 (reflected, polynomial 0xEDB88320). */
static u32 crc32(u32 crc, const u8 *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320U & (0U - (crc & 1)));
	}
	return ~crc;
}

static u64 xorshift_state = 0x9e3779b97f4a7c15UL;
static u64 xorshift(void)
{
	u64 x = xorshift_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return xorshift_state = x;
}

static u64 count_primes(void)
{
	memset(sieve, 1, sizeof(sieve));
	sieve[0] = sieve[1] = 0;
	for (u64 i = 2; i * i <= SIEVE_LIMIT; i++)
		if (sieve[i])
			for (u64 j = i * i; j <= SIEVE_LIMIT; j += i)
				sieve[j] = 0;
	u64 n = 0;
	for (u64 i = 0; i <= SIEVE_LIMIT; i++)
		n += sieve[i];
	return n;
}

static void matmul(void)
{
	for (int i = 0; i < MAT_N; i++)
		for (int j = 0; j < MAT_N; j++) {
			i32 s = 0;
			for (int k = 0; k < MAT_N; k++)
				s += mat_a[i][k] * mat_b[k][j];
			mat_c[i][j] = s;
		}
}

int main(void)
{
	rt_puts("bench: start\n");

	/* CRC-32 */
	static const u8 check[] = "123456789";
	rt_check("crc32(\"123456789\")", crc32(0, check, 9), 0xcbf43926U);
	for (size_t i = 0; i < CRC_BUF_SIZE; i++)
		crc_buf[i] = (u8)xorshift();
	u32 crc = 0;
	for (int pass = 0; pass < CRC_PASSES; pass++)
		crc = crc32(crc, crc_buf, CRC_BUF_SIZE);
	/* The same stream in two halves gives the same CRC. */
	u32 crc2 = 0;
	for (int pass = 0; pass < CRC_PASSES; pass++) {
		crc2 = crc32(crc2, crc_buf, CRC_BUF_SIZE / 2);
		crc2 = crc32(crc2, crc_buf + CRC_BUF_SIZE / 2,
			     CRC_BUF_SIZE / 2);
	}
	rt_check("crc32 in halves", crc2, crc);
	rt_print_hex("crc32", crc);

	/* Sieve */
	u64 primes = 0;
	for (int pass = 0; pass < SIEVE_PASSES; pass++)
		primes = count_primes();
	rt_check("primes below 2e6", primes, 148933);

	/* Matrix multiply: the sum of C equals sum_k colsum(A)_k rowsum(B)_k. */
	for (int i = 0; i < MAT_N; i++)
		for (int j = 0; j < MAT_N; j++) {
			mat_a[i][j] = (i32)(xorshift() % 201) - 100;
			mat_b[i][j] = (i32)(xorshift() % 201) - 100;
		}
	for (int pass = 0; pass < MAT_PASSES; pass++)
		matmul();
	i64 sum = 0, expect = 0;
	u64 hash = 0;
	for (int i = 0; i < MAT_N; i++)
		for (int j = 0; j < MAT_N; j++) {
			sum += mat_c[i][j];
			hash = (hash ^ (u32)mat_c[i][j]) * 0x100000001b3UL;
		}
	for (int k = 0; k < MAT_N; k++) {
		i64 ca = 0, rb = 0;
		for (int i = 0; i < MAT_N; i++) {
			ca += mat_a[i][k];
			rb += mat_b[k][i];
		}
		expect += ca * rb;
	}
	rt_check("matrix sum", (u64)sum, (u64)expect);
	rt_print_hex("matrix hash", hash);

	return rt_finish("bench");
}
