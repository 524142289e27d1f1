/*
 * devices: the board's devices as a driver sees them. The UART is set up
 * like a real 16550 driver does (divisor latch, line control, FIFOs), which
 * must not print anything; its scratch, line-status and line-control
 * registers read back; msip keeps only bit 0; mtime can be written, and
 * the time CSR follows it.
 */
#include "rt/rt.h"

#define UART ((volatile u8 *)0x10000000UL)
#define UART_RBR_THR_DLL 0
#define UART_IER_DLM 1
#define UART_IIR_FCR 2
#define UART_LCR 3
#define UART_LSR 5
#define UART_SCR 7

int main(void)
{
	/* 8N1 with divisor 1, FIFOs on and cleared, no interrupts. */
	UART[UART_LCR] = 0x80;
	UART[UART_RBR_THR_DLL] = 0x01;
	UART[UART_IER_DLM] = 0x00;
	UART[UART_LCR] = 0x03;
	UART[UART_IIR_FCR] = 0x07;
	UART[UART_IER_DLM] = 0x00;
	rt_puts("devices: start (after the UART set-up)\n");

	UART[UART_SCR] = 0x5a;
	rt_check("UART scratch register", UART[UART_SCR], 0x5a);
	rt_check("UART LSR: THR and transmitter empty, no data",
		 UART[UART_LSR] & 0x61, 0x60);
	rt_check("UART LCR", UART[UART_LCR], 0x03);
	rt_check("UART IIR: FIFOs enabled", UART[UART_IIR_FCR] & 0xc0, 0xc0);

	*CLINT_MSIP = 3;
	rt_check("msip after writing 3", *CLINT_MSIP, 1);
	*CLINT_MSIP = 0;
	rt_check("msip after writing 0", *CLINT_MSIP, 0);

	u64 t = *CLINT_MTIME;
	*CLINT_MTIME = t + 1000000000UL;
	u64 t2 = *CLINT_MTIME;
	u64 tc = csr_read(time);
	rt_check_true("mtime written 10^9 ticks ahead", t2 >= t + 1000000000UL &&
							t2 < t + 1100000000UL);
	rt_check_true("time CSR follows mtime", tc >= t2);
	*CLINT_MTIMECMP = t + 1000000000UL;
	rt_check("MTIP against the new mtime", csr_read(mip) & (1 << 7),
		 1 << 7);
	*CLINT_MTIMECMP = ~0UL;
	return rt_finish("devices");
}
