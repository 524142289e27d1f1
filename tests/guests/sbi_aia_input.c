/* sbi_aia_input: a `vmm run` guest kernel for `--aia aplic-imsic` that waits in WFI for
   console input and for nothing else (tests/tests/run.rs): no timer is armed and vCPU 1,
   if there is one, is never started. The UART's received-data interrupt (IER.ERBFI) is
   APLIC source 10 in Level1 mode, forwarded by MSI as identity 5 to hart 0, whose handler
   claims it through stopei and reads the bytes (RBR while LSR.DR). Prints each byte it
   takes until a newline, then `got "..."` and PASS, and shuts down (status 0).

   With no input to come, the VMM ends the run as waiting forever; with input to come
   (stdin still open), it waits for it, and the byte's interrupt wakes the hart. */
#include "csr.h"
#include "vs/sbi.h"
#include "aia.h"

#define CAUSE_INTR (1UL << 63)
#define IRQ_S_EXT 9
#define SIE_SEIE (1UL << IRQ_S_EXT)
#define SSTATUS_SIE (1UL << 1)

#define UART_RBR 0
#define UART_IER 1
#define UART_LSR 5
#define IER_ERBFI 1
#define LSR_DR 1

static volatile u64 interrupts, done;
static volatile char line[64];
static volatile u64 len;

static void mmio_w32(u64 addr, u32 v)
{
	*(volatile u32 *)addr = v;
}

__attribute__((interrupt("supervisor"), aligned(4))) static void on_trap(void)
{
	u64 cause;
	__asm__ volatile("csrr %0, scause" : "=r"(cause));
	if (cause != (CAUSE_INTR | IRQ_S_EXT)) {
		printk("sbi_aia_input: unexpected trap cause %x\n", cause);
		sbi_shutdown(1);
	}
	for (;;) {
		u64 id = claim();
		if (id == 0)
			break;
		if (id != 5) {
			printk("sbi_aia_input: unexpected identity %d\n", id);
			sbi_shutdown(1);
		}
		interrupts++;
		while (*(volatile u8 *)(UART + UART_LSR) & LSR_DR) {
			char c = *(volatile u8 *)(UART + UART_RBR);
			if (c == '\n' || c == '\r')
				done = 1;
			else if (len < sizeof line - 1)
				line[len++] = c;
		}
	}
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	__asm__ volatile("csrw stvec, %0" ::"r"(on_trap));
	file_write(EIDELIVERY, 1);
	file_write(EITHRESHOLD, 0);
	file_write(EIE0, 1UL << 5);
	mmio_w32(APLIC + APLIC_DOMAINCFG, 1 << 8);
	mmio_w32(APLIC + APLIC_SOURCECFG(UART_SOURCE), 6);
	mmio_w32(APLIC + APLIC_TARGET(UART_SOURCE), (0 << 18) | 5);
	mmio_w32(APLIC + APLIC_SETIENUM, UART_SOURCE);
	*(volatile u8 *)(UART + UART_IER) = IER_ERBFI;
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_SEIE));
	printk("sbi_aia_input: waiting for input\n");
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
	while (!done)
		__asm__ volatile("wfi");
	line[len] = 0;
	printk("sbi_aia_input: got \"%s\" in %d interrupts\n", (const char *)line, interrupts);
	printk("sbi_aia_input: PASS\n");
	return 0;
}
