/*
 * The test guests' runtime: console output on the ns16550a UART, exit
 * through the SiFive test finisher, CSR access, result checks, and trap
 * handling for tests that provoke exceptions and interrupts.
 */
#ifndef RT_H
#define RT_H

#include "rt_asm.h"

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long u64;
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long i64;
typedef unsigned long size_t;

#define NULL ((void *)0)
#define INTERRUPT_BIT (1UL << 63)

/* Privilege modes as encoded in mstatus.MPP. */
#define MODE_U 0
#define MODE_S 1
#define MODE_M 3

#define csr_read(csr)                                                          \
	({                                                                     \
		u64 __v;                                                       \
		__asm__ volatile("csrr %0, " #csr : "=r"(__v)::"memory");      \
		__v;                                                           \
	})
#define csr_write(csr, val)                                                    \
	__asm__ volatile("csrw " #csr ", %0" ::"r"((u64)(val)) : "memory")
#define csr_set(csr, val)                                                      \
	__asm__ volatile("csrs " #csr ", %0" ::"r"((u64)(val)) : "memory")
#define csr_clear(csr, val)                                                    \
	__asm__ volatile("csrc " #csr ", %0" ::"r"((u64)(val)) : "memory")
#define csr_swap(csr, val)                                                     \
	({                                                                     \
		u64 __v;                                                       \
		__asm__ volatile("csrrw %0, " #csr ", %1"                      \
				 : "=r"(__v)                                   \
				 : "r"((u64)(val))                             \
				 : "memory");                                  \
		__v;                                                           \
	})

/* Console. */
void rt_putc(char c);
void rt_puts(const char *s);
void rt_put_hex(u64 v);   /* 0x + 16 digits */
void rt_put_hex32(u32 v); /* 0x + 8 digits */
void rt_put_dec(u64 v);
void rt_print_hex(const char *label, u64 v); /* "label=0x...\n" */

/* Exit: 0 = pass, otherwise fail with that code. */
void rt_exit(int code) __attribute__((noreturn));

/* Checks: print "ok"/"FAIL" lines and count failures. */
extern int rt_failures;
extern int rt_checks;
int rt_check(const char *name, u64 got, u64 want);
int rt_check_true(const char *name, int cond);
/* Prints the summary line and returns the exit code for main. */
int rt_finish(const char *guest);

/* Trap handling. */
struct rt_frame {
	u64 x[32]; /* x[2] = the interrupted sp */
};

struct rt_trap_rec {
	volatile u64 count;  /* exceptions taken so far */
	volatile u64 cause;  /* xcause of the last one */
	volatile u64 tval;   /* xtval */
	volatile u64 epc;    /* xepc */
	volatile u64 prev;   /* previous privilege (MPP or SPP) */
	volatile u64 status; /* mstatus/sstatus in the handler */
};

extern struct rt_trap_rec rt_mtrap, rt_strap;
/*
 * When zero (the default), any exception taken to M- or S-mode is fatal
 * (except the RT_MAGIC ecall and the RT_MAGIC_BRK ebreak). When nonzero, exceptions are recorded in
 * rt_mtrap/rt_strap and execution resumes after the faulting instruction
 * (its length taken from xtval for illegal instructions, else
 * rt_skip_len, else 4), or at ra for instruction fetch faults.
 */
extern volatile int rt_trap_ok;
extern volatile int rt_skip_len;
/* Interrupt hooks; an interrupt with no hook is fatal. */
extern void (*volatile rt_m_irq)(u64 cause, struct rt_frame *f);
extern void (*volatile rt_s_irq)(u64 cause, struct rt_frame *f);

void rt_trap_reset(void);

/* Lower-mode runs: see crt0.S. */
long rt_run_at(long mode, u64 pc, u64 a0, u64 a1, u64 sp, u64 ra);
void rt_resume_m(long value) __attribute__((noreturn));
void rt_lower_return(void);
void rt_user_return(void);
void rt_m_trap_entry(void);
void rt_s_trap_entry(void);
extern char __lower_stack_top[], __s_trap_stack_top[], __m_trap_stack_top[];
extern char __user_text_start[], __user_text_end[];

typedef long (*rt_fn)(long, long);
/* Runs fn(a0, a1) in `mode` on the lower-mode stack; returns its result. */
long rt_run(long mode, rt_fn fn, long a0, long a1);
/* Points stvec/sscratch at the runtime's S-mode trap entry. */
void rt_s_trap_setup(void);
/* From S-mode: go back to M through the RT_MAGIC ecall (noreturn). */
void rt_s_to_m(long value) __attribute__((noreturn));

/* Freestanding C support. */
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);

#define CLINT_BASE 0x2000000UL
#define CLINT_MSIP ((volatile u32 *)(CLINT_BASE + 0x0))
#define CLINT_MTIMECMP ((volatile u64 *)(CLINT_BASE + 0x4000))
#define CLINT_MTIME ((volatile u64 *)(CLINT_BASE + 0xbff8))

#endif
