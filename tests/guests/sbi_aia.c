/* sbi_aia: a two-vCPU `vmm run` guest kernel for `--aia aplic-imsic` (tests/tests/run.rs).
   Each hart programs its IMSIC interrupt file (the guest interrupt file the VMM gives it,
   reached from VS-mode as siselect/sireg 0x70-0xFF and stopei) and takes S-level external
   interrupts, claiming each through stopei:

   - identity 5: the UART's THR-empty interrupt (IER.ETBEI), APLIC source 10 in Level1 mode
     forwarded by MSI to hart 0; the handler reads IIR (lowering the level) and masks
     IER;
   - identity 6: an extempore MSI from the APLIC's genmsi;
   - identity 7: an MSI hart 0 sends itself by storing to its IMSIC page;
   - identity 8: an MSI hart 1 sends hart 0 (store to hart 0's page);
   - identity 9: an MSI hart 0 sends hart 1 while it waits in WFI (hart 1's page).

   Identity 20 is sent but not enabled: it shows in eip0 and interrupts nobody. Checks the
   APLIC's domaincfg and target read-back. Prints PASS and shuts down (status 0) when every
   check holds. */
#include "csr.h"
#include "vs/sbi.h"
#include "aia.h"

#define CAUSE_INTR (1UL << 63)
#define IRQ_S_EXT 9
#define SIE_SEIE (1UL << IRQ_S_EXT)
#define SSTATUS_SIE (1UL << 1)


void secondary_entry(void);
void secondary_main(u64 hartid);
static char stack1[8192] __attribute__((aligned(16)));

__asm__(".text\n"
	".globl secondary_entry\n"
	".align 2\n"
	"secondary_entry:\n"
	" .option push\n"
	" .option norelax\n"
	" la gp, __global_pointer$\n"
	" .option pop\n"
	" mv sp, a1\n"
	" li t0, 0x2000\n"
	" csrs sstatus, t0\n"
	" call secondary_main\n"
	"1: j 1b\n");

static volatile u64 seen[2][64], other_exc, hart1_ready;

static void mmio_w32(u64 addr, u32 v)
{
	*(volatile u32 *)addr = v;
}

static u32 mmio_r32(u64 addr)
{
	return *(volatile u32 *)addr;
}

static u64 hart_id(void)
{
	u64 id;
	__asm__ volatile("csrr %0, sscratch" : "=r"(id));
	return id;
}

__attribute__((interrupt("supervisor"), aligned(4))) static void on_trap(void)
{
	u64 cause;
	__asm__ volatile("csrr %0, scause" : "=r"(cause));
	if (cause != (CAUSE_INTR | IRQ_S_EXT)) {
		other_exc++;
		printk("sbi_aia: unexpected trap cause %x\n", cause);
		sbi_shutdown(1);
	}
	u64 h = hart_id();
	for (;;) {
		u64 id = claim();
		if (id == 0)
			break;
		if (id == 5) {
			/* The UART: reading IIR clears THR empty; mask it. */
			(void)*(volatile u8 *)(UART + 2);
			*(volatile u8 *)(UART + 1) = 0;
		}
		if (id < 64)
			seen[h][id]++;
	}
}

static void setup_file(u64 ids)
{
	__asm__ volatile("csrw stvec, %0" ::"r"(on_trap));
	file_write(EIDELIVERY, 1);
	file_write(EITHRESHOLD, 0);
	file_write(EIE0, ids);
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_SEIE));
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
}

/* Waits (in WFI) until hart `h` has seen identity `id`. */
static void wait_seen(u64 h, u64 id)
{
	for (u64 i = 0; i < 100000 && !seen[h][id]; i++)
		__asm__ volatile("wfi");
	check("identity seen", seen[h][id], 1);
	if (!seen[h][id])
		printk("sbi_aia: hart %d never saw identity %d\n", h, id);
}

void secondary_main(u64 hartid)
{
	__asm__ volatile("csrw sscratch, %0" ::"r"(hartid));
	setup_file(1UL << 9);
	__sync_synchronize();
	hart1_ready = 1;
	/* To hart 0's interrupt file. */
	mmio_w32(IMSIC, 8);
	while (!seen[1][9])
		__asm__ volatile("wfi");
	printk("sbi_aia: hart 1 took identity 9\n");
	sbi_call(SBI_EXT_HSM, 1, 0, 0, 0, 0); /* hart_stop */
	for (;;)
		;
}

int main(u64 hartid, u64 fdt)
{
	(void)fdt;
	__asm__ volatile("csrw sscratch, %0" ::"r"(hartid));
	printk("sbi_aia: start\n");
	setup_file((1UL << 5) | (1UL << 6) | (1UL << 7) | (1UL << 8));
	check("eidelivery", file_read(EIDELIVERY), 1);

	/* The APLIC: MSI mode (DM read-only 1), the UART as a level-high source. */
	check("domaincfg", mmio_r32(APLIC + APLIC_DOMAINCFG), 0x80000004);
	mmio_w32(APLIC + APLIC_DOMAINCFG, 1 << 8);
	check("domaincfg IE", mmio_r32(APLIC + APLIC_DOMAINCFG), 0x80000104);
	mmio_w32(APLIC + APLIC_SOURCECFG(UART_SOURCE), 6);
	mmio_w32(APLIC + APLIC_TARGET(UART_SOURCE), (0 << 18) | 5);
	check("target", mmio_r32(APLIC + APLIC_TARGET(UART_SOURCE)), 5);
	mmio_w32(APLIC + APLIC_SETIENUM, UART_SOURCE);
	/* THR empty: the UART raises its interrupt at once. */
	*(volatile u8 *)(UART + 1) = 2;
	wait_seen(0, 5);
	printk("sbi_aia: UART interrupt through the APLIC\n");
	check("UART level low", mmio_r32(APLIC + APLIC_IN_CLRIP) & (1 << UART_SOURCE), 0);

	mmio_w32(APLIC + APLIC_GENMSI, (0 << 18) | 6);
	wait_seen(0, 6);
	printk("sbi_aia: genmsi\n");

	mmio_w32(IMSIC, 7);
	wait_seen(0, 7);
	printk("sbi_aia: MSI to itself\n");

	/* Not enabled: pending, no interrupt. */
	mmio_w32(IMSIC, 20);
	check("eip0 bit 20", (file_read(EIP0) >> 20) & 1, 1);
	check("identity 20 not taken", seen[0][20], 0);

	struct sbiret r = sbi_call(SBI_EXT_HSM, 0, 1, (u64)secondary_entry,
				   (u64)(stack1 + sizeof stack1), 0);
	check("hart_start(1)", (u64)r.error, 0);
	wait_seen(0, 8);
	printk("sbi_aia: MSI from hart 1\n");
	/* PAUSE (Zihintpause) while waiting: `vmm run` then yields this vCPU's host CPU to
	   hart 1's thread, so that the wait does not depend on how long the host takes to
	   schedule it (the snapshot test cuts the run at fractions of its instruction count). */
	while (!hart1_ready)
		__asm__ volatile(".word 0x0100000f");
	mmio_w32(IMSIC + 0x1000, 9);
	for (u64 i = 0; i < 10000000 && sbi_call(SBI_EXT_HSM, 2, 1, 0, 0, 0).value != 1; i++)
		;
	check("hart 1 took identity 9", seen[1][9], 1);
	printk("sbi_aia: %d checks, %d failures\n", (u64)checks, (u64)failures);
	printk("sbi_aia: %s\n", failures ? "FAIL" : "PASS");
	return failures;
}
