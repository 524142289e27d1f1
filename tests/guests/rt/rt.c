/* The test guests' runtime (see rt.h). */
#include "rt.h"

#define UART_BASE 0x10000000UL
#define UART_THR 0
#define UART_LSR 5
#define UART_LSR_THRE 0x20
#define FINISHER ((volatile u32 *)0x100000UL)

int rt_failures;
int rt_checks;
struct rt_trap_rec rt_mtrap, rt_strap;
volatile int rt_trap_ok;
volatile int rt_skip_len;
void (*volatile rt_m_irq)(u64 cause, struct rt_frame *f);
void (*volatile rt_s_irq)(u64 cause, struct rt_frame *f);

void rt_putc(char c)
{
	volatile u8 *uart = (volatile u8 *)UART_BASE;
	while (!(uart[UART_LSR] & UART_LSR_THRE))
		;
	uart[UART_THR] = (u8)c;
}

void rt_puts(const char *s)
{
	while (*s)
		rt_putc(*s++);
}

static void put_hex_digits(u64 v, int digits)
{
	rt_puts("0x");
	for (int i = digits - 1; i >= 0; i--)
		rt_putc("0123456789abcdef"[(v >> (4 * i)) & 0xf]);
}

void rt_put_hex(u64 v)
{
	put_hex_digits(v, 16);
}

void rt_put_hex32(u32 v)
{
	put_hex_digits(v, 8);
}

void rt_put_dec(u64 v)
{
	char buf[24];
	int n = 0;
	do {
		buf[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		rt_putc(buf[--n]);
}

void rt_print_hex(const char *label, u64 v)
{
	rt_puts(label);
	rt_putc('=');
	rt_put_hex(v);
	rt_putc('\n');
}

void rt_exit(int code)
{
	if (code == 0)
		*FINISHER = 0x5555;
	else
		*FINISHER = 0x3333 | ((u32)(code & 0xffff) << 16);
	for (;;)
		__asm__ volatile("wfi");
}

int rt_check(const char *name, u64 got, u64 want)
{
	rt_checks++;
	if (got == want) {
		rt_puts("ok   ");
		rt_puts(name);
		rt_puts(" = ");
		rt_put_hex(got);
		rt_putc('\n');
		return 1;
	}
	rt_failures++;
	rt_puts("FAIL ");
	rt_puts(name);
	rt_puts(" = ");
	rt_put_hex(got);
	rt_puts(", want ");
	rt_put_hex(want);
	rt_putc('\n');
	return 0;
}

int rt_check_true(const char *name, int cond)
{
	rt_checks++;
	if (cond) {
		rt_puts("ok   ");
		rt_puts(name);
		rt_putc('\n');
		return 1;
	}
	rt_failures++;
	rt_puts("FAIL ");
	rt_puts(name);
	rt_putc('\n');
	return 0;
}

int rt_finish(const char *guest)
{
	rt_puts(guest);
	rt_puts(": ");
	rt_put_dec((u64)rt_checks);
	rt_puts(" checks, ");
	rt_put_dec((u64)rt_failures);
	rt_puts(" failures\n");
	if (rt_failures) {
		rt_puts(guest);
		rt_puts(": FAIL\n");
		return rt_failures > 255 ? 255 : rt_failures;
	}
	rt_puts(guest);
	rt_puts(": PASS\n");
	return 0;
}

void rt_trap_reset(void)
{
	rt_mtrap.count = rt_mtrap.cause = rt_mtrap.tval = rt_mtrap.epc = 0;
	rt_mtrap.prev = rt_mtrap.status = 0;
	rt_strap.count = rt_strap.cause = rt_strap.tval = rt_strap.epc = 0;
	rt_strap.prev = rt_strap.status = 0;
}

static void fatal_trap(const char *who, u64 cause, u64 epc, u64 tval)
{
	rt_puts("FATAL: unexpected trap in ");
	rt_puts(who);
	rt_puts(" handler: cause=");
	rt_put_hex(cause);
	rt_puts(" epc=");
	rt_put_hex(epc);
	rt_puts(" tval=");
	rt_put_hex(tval);
	rt_putc('\n');
	rt_exit(100);
}

/* Length of the instruction that raised a synchronous exception. */
static u64 insn_len(u64 cause, u64 tval)
{
	if (cause == 2)
		return (tval & 3) == 3 ? 4 : 2;
	if (rt_skip_len)
		return (u64)rt_skip_len;
	return 4;
}

static int is_ecall(u64 cause)
{
	return cause == 8 || cause == 9 || cause == 11;
}

void rt_m_trap(struct rt_frame *f)
{
	u64 cause = csr_read(mcause);
	u64 epc = csr_read(mepc);
	u64 tval = csr_read(mtval);

	if (cause & INTERRUPT_BIT) {
		if (!rt_m_irq)
			fatal_trap("M", cause, epc, tval);
		rt_m_irq(cause & ~INTERRUPT_BIT, f);
		return;
	}
	if (is_ecall(cause) && f->x[17] == RT_MAGIC)
		rt_resume_m((long)f->x[10]);
	if (cause == 3 && f->x[17] == RT_MAGIC_BRK)
		rt_resume_m((long)f->x[10]);
	if (!rt_trap_ok || rt_mtrap.count > 100000)
		fatal_trap("M", cause, epc, tval);
	u64 status = csr_read(mstatus);
	rt_mtrap.count++;
	rt_mtrap.cause = cause;
	rt_mtrap.tval = tval;
	rt_mtrap.epc = epc;
	rt_mtrap.prev = (status >> 11) & 3;
	rt_mtrap.status = status;
	if (cause == 1 || cause == 12)
		csr_write(mepc, f->x[1]);
	else
		csr_write(mepc, epc + insn_len(cause, tval));
}

void rt_s_trap(struct rt_frame *f)
{
	u64 cause = csr_read(scause);
	u64 epc = csr_read(sepc);
	u64 tval = csr_read(stval);

	if (cause & INTERRUPT_BIT) {
		if (!rt_s_irq)
			fatal_trap("S", cause, epc, tval);
		rt_s_irq(cause & ~INTERRUPT_BIT, f);
		return;
	}
	if (cause == 8 && f->x[17] == RT_MAGIC)
		rt_s_to_m((long)f->x[10]);
	if (!rt_trap_ok || rt_strap.count > 100000)
		fatal_trap("S", cause, epc, tval);
	u64 status = csr_read(sstatus);
	rt_strap.count++;
	rt_strap.cause = cause;
	rt_strap.tval = tval;
	rt_strap.epc = epc;
	rt_strap.prev = (status >> 8) & 1;
	rt_strap.status = status;
	if (cause == 1 || cause == 12)
		csr_write(sepc, f->x[1]);
	else
		csr_write(sepc, epc + insn_len(cause, tval));
}

void rt_s_to_m(long value)
{
	register long a0 __asm__("a0") = value;
	register long a7 __asm__("a7") = RT_MAGIC;
	__asm__ volatile("ecall" : : "r"(a0), "r"(a7) : "memory");
	for (;;)
		;
}

long rt_run(long mode, rt_fn fn, long a0, long a1)
{
	return rt_run_at(mode, (u64)fn, (u64)a0, (u64)a1,
			 (u64)__lower_stack_top, (u64)rt_lower_return);
}

void rt_s_trap_setup(void)
{
	csr_write(stvec, (u64)rt_s_trap_entry);
	csr_write(sscratch, (u64)__s_trap_stack_top);
}

void *memset(void *d, int c, size_t n)
{
	u8 *p = d;
	while (n--)
		*p++ = (u8)c;
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	u8 *p = d;
	const u8 *q = s;
	while (n--)
		*p++ = *q++;
	return d;
}

void *memmove(void *d, const void *s, size_t n)
{
	u8 *p = d;
	const u8 *q = s;
	if (p < q) {
		while (n--)
			*p++ = *q++;
	} else {
		while (n--)
			p[n] = q[n];
	}
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const u8 *p = a, *q = b;
	for (; n; n--, p++, q++)
		if (*p != *q)
			return *p < *q ? -1 : 1;
	return 0;
}
