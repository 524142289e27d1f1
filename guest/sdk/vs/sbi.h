/* SBI calls, console output (SBI DBCN and the polled ns16550a UART) and checks for the
   S-mode guest kernels of `vmm run`. */
#ifndef SDK_VS_SBI_H
#define SDK_VS_SBI_H

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long u64;
typedef long i64;

#define SBI_EXT_BASE 0x10
#define SBI_EXT_TIME 0x54494D45
#define SBI_EXT_IPI 0x735049
#define SBI_EXT_RFENCE 0x52464E43
#define SBI_EXT_HSM 0x48534D
#define SBI_EXT_SRST 0x53525354
#define SBI_EXT_DBCN 0x4442434E

#define SBI_ERR_NOT_SUPPORTED (-2)
#define SBI_ERR_INVALID_PARAM (-3)
#define SBI_ERR_ALREADY_AVAILABLE (-6)

struct sbiret {
	i64 error;
	i64 value;
};

struct sbiret sbi_call(u64 eid, u64 fid, u64 a0, u64 a1, u64 a2, u64 a3);
void sbi_shutdown(int failure) __attribute__((noreturn));

/* Output through SBI DBCN console_write. */
void dbcn_puts(const char *s);
/* Reads up to n bytes of console input through DBCN console_read; returns the count. */
i64 dbcn_read(char *buf, u64 n);
/* Output through the UART at 0x1000_0000. */
void uart_puts(const char *s);

/* Formatted output through DBCN: only %s, %d (long), %x (hex, 0x prefix). */
void printk(const char *fmt, ...);

/* `ok   name = 0x..` / `FAIL name = 0x.., want 0x..`; counts failures. */
void check(const char *name, u64 got, u64 want);
extern int checks, failures;

static inline u64 csr_read_time(void)
{
	u64 t;
	__asm__ volatile("rdtime %0" : "=r"(t));
	return t;
}

#endif
