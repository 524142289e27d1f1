/* Runtime for the S-mode guest kernels of `vmm run`; see sbi.h. */
#include <stdarg.h>

#include "sbi.h"

#define UART_BASE 0x10000000UL
#define UART_THR 0
#define UART_LSR 5
#define UART_LSR_THRE 0x20

int checks, failures;

struct sbiret sbi_call(u64 eid, u64 fid, u64 a0, u64 a1, u64 a2, u64 a3)
{
	register u64 r_a0 __asm__("a0") = a0;
	register u64 r_a1 __asm__("a1") = a1;
	register u64 r_a2 __asm__("a2") = a2;
	register u64 r_a3 __asm__("a3") = a3;
	register u64 r_a6 __asm__("a6") = fid;
	register u64 r_a7 __asm__("a7") = eid;
	__asm__ volatile("ecall"
			 : "+r"(r_a0), "+r"(r_a1)
			 : "r"(r_a2), "r"(r_a3), "r"(r_a6), "r"(r_a7)
			 : "memory");
	struct sbiret ret = { (i64)r_a0, (i64)r_a1 };
	return ret;
}

void sbi_shutdown(int failure)
{
	sbi_call(SBI_EXT_SRST, 0, 0, failure ? 1 : 0, 0, 0);
	for (;;)
		__asm__ volatile("wfi");
}

static u64 strlen_(const char *s)
{
	u64 n = 0;
	while (s[n])
		n++;
	return n;
}

static void dbcn_write(const char *s, u64 n)
{
	while (n > 0) {
		struct sbiret r = sbi_call(SBI_EXT_DBCN, 0, n, (u64)s, 0, 0);
		if (r.error || r.value <= 0)
			return;
		s += r.value;
		n -= (u64)r.value;
	}
}

void dbcn_puts(const char *s)
{
	dbcn_write(s, strlen_(s));
}

i64 dbcn_read(char *buf, u64 n)
{
	struct sbiret r = sbi_call(SBI_EXT_DBCN, 1, n, (u64)buf, 0, 0);
	return r.error ? r.error : r.value;
}

void uart_puts(const char *s)
{
	volatile u8 *uart = (volatile u8 *)UART_BASE;
	for (; *s; s++) {
		while (!(uart[UART_LSR] & UART_LSR_THRE))
			;
		uart[UART_THR] = (u8)*s;
	}
}

void printk(const char *fmt, ...)
{
	char buf[256];
	u64 n = 0;
	va_list ap;
	va_start(ap, fmt);
	for (const char *p = fmt; *p && n < sizeof(buf) - 24; p++) {
		if (*p != '%' || !p[1]) {
			buf[n++] = *p;
			continue;
		}
		p++;
		if (*p == 's') {
			const char *s = va_arg(ap, const char *);
			while (*s && n < sizeof(buf) - 24)
				buf[n++] = *s++;
		} else if (*p == 'd') {
			i64 v = va_arg(ap, i64);
			char tmp[24];
			int k = 0;
			u64 u = v < 0 ? -(u64)v : (u64)v;
			if (v < 0)
				buf[n++] = '-';
			do {
				tmp[k++] = '0' + u % 10;
				u /= 10;
			} while (u);
			while (k)
				buf[n++] = tmp[--k];
		} else if (*p == 'x') {
			u64 v = va_arg(ap, u64);
			int started = 0;
			buf[n++] = '0';
			buf[n++] = 'x';
			for (int sh = 60; sh >= 0; sh -= 4) {
				int d = (v >> sh) & 0xf;
				if (d || started || sh == 0) {
					buf[n++] = "0123456789abcdef"[d];
					started = 1;
				}
			}
		} else {
			buf[n++] = *p;
		}
	}
	va_end(ap);
	dbcn_write(buf, n);
}

void check(const char *name, u64 got, u64 want)
{
	checks++;
	if (got == want) {
		printk("ok   %s = %x\n", name, got);
	} else {
		failures++;
		printk("FAIL %s = %x, want %x\n", name, got, want);
	}
}
