/* sbi_console: an S-mode guest kernel for `vmm run` (not for `vmm machine` or QEMU's
   -bios none: it needs an SBI). Linked with guest/sdk/vs/ (starts in VS-mode at 0x8020_0000).

   Prints through SBI DBCN and through the polled UART, probes the BASE extension (spec
   version 2.0, every extension vmm provides, a legacy and an unknown extension), checks
   error codes of DBCN, HSM and SRST, sends itself an IPI, sets a timer with SBI TIME and
   takes the timer interrupt, reads a line of console input with DBCN console_read, echoes
   it, checks that an RFENCE whose mask selects the calling hart fences it too, and shuts
   down through SRST (status 0 when every check passed). */
#include "vs/sbi.h"
#include "sv39.h"

#define SIP_SSIP (1UL << 1)
#define SIE_STIE (1UL << 5)
#define SSTATUS_SIE (1UL << 1)
#define CAUSE_INTR (1UL << 63)
#define IRQ_S_TIMER 5

static volatile u64 timer_cause;
static volatile int timer_hits;

__attribute__((interrupt("supervisor"), aligned(4))) static void on_trap(void)
{
	u64 cause;
	__asm__ volatile("csrr %0, scause" : "=r"(cause));
	timer_cause = cause;
	timer_hits++;
	/* Turn the timer off (clears the pending interrupt). */
	sbi_call(SBI_EXT_TIME, 0, ~0UL, 0, 0, 0);
}

static void base_checks(void)
{
	static const struct {
		const char *name;
		u64 eid;
	} exts[] = {
		{ "probe BASE", SBI_EXT_BASE },	  { "probe TIME", SBI_EXT_TIME },
		{ "probe IPI", SBI_EXT_IPI },	  { "probe RFENCE", SBI_EXT_RFENCE },
		{ "probe HSM", SBI_EXT_HSM },	  { "probe SRST", SBI_EXT_SRST },
		{ "probe DBCN", SBI_EXT_DBCN },
	};
	struct sbiret r = sbi_call(SBI_EXT_BASE, 0, 0, 0, 0, 0);
	check("spec_version", r.value, 0x2000000);
	for (unsigned i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		check(exts[i].name, sbi_call(SBI_EXT_BASE, 3, exts[i].eid, 0, 0, 0).value, 1);
	check("probe legacy putchar", sbi_call(SBI_EXT_BASE, 3, 1, 0, 0, 0).value, 0);
	check("unknown eid", sbi_call(0x12345678, 0, 0, 0, 0, 0).error,
	      (u64)SBI_ERR_NOT_SUPPORTED);
	check("unknown base fid", sbi_call(SBI_EXT_BASE, 77, 0, 0, 0, 0).error,
	      (u64)SBI_ERR_NOT_SUPPORTED);
}

static void error_checks(void)
{
	check("dbcn buffer outside RAM", sbi_call(SBI_EXT_DBCN, 0, 4, 0x1000, 0, 0).error,
	      (u64)SBI_ERR_INVALID_PARAM);
	check("hsm status hart 0", sbi_call(SBI_EXT_HSM, 2, 0, 0, 0, 0).value, 0);
	check("hsm start hart 0", sbi_call(SBI_EXT_HSM, 0, 0, 0x80200000, 0, 0).error,
	      (u64)SBI_ERR_ALREADY_AVAILABLE);
	check("hsm start hart 1", sbi_call(SBI_EXT_HSM, 0, 1, 0x80200000, 0, 0).error,
	      (u64)SBI_ERR_INVALID_PARAM);
	check("srst reserved type", sbi_call(SBI_EXT_SRST, 0, 3, 0, 0, 0).error,
	      (u64)SBI_ERR_INVALID_PARAM);
	check("rfence bad mask", sbi_call(SBI_EXT_RFENCE, 0, 2, 0, 0, 0).error,
	      (u64)SBI_ERR_INVALID_PARAM);
	check("rfence fence.i", sbi_call(SBI_EXT_RFENCE, 0, 1, 0, 0, 0).error, 0);
}

static void ipi_check(void)
{
	u64 sip;
	check("send_ipi", sbi_call(SBI_EXT_IPI, 0, 1, 0, 0, 0).error, 0);
	__asm__ volatile("csrr %0, sip" : "=r"(sip));
	check("ipi pending", sip & SIP_SSIP, SIP_SSIP);
	__asm__ volatile("csrc sip, %0" ::"r"(SIP_SSIP));
	__asm__ volatile("csrr %0, sip" : "=r"(sip));
	check("ipi cleared", sip & SIP_SSIP, 0);
}

static void timer_check(void)
{
	__asm__ volatile("csrw stvec, %0" ::"r"(on_trap));
	u64 now = csr_read_time();
	check("set_timer", sbi_call(SBI_EXT_TIME, 0, now + 1000, 0, 0, 0).error, 0);
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_STIE));
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
	for (int i = 0; i < 100 && !timer_hits; i++)
		__asm__ volatile("wfi");
	__asm__ volatile("csrc sstatus, %0" ::"r"(SSTATUS_SIE));
	check("timer interrupts", timer_hits, 1);
	check("timer scause", timer_cause, CAUSE_INTR | IRQ_S_TIMER);
	check("time advanced", csr_read_time() >= now + 1000, 1);
}

/* remote_sfence_vma with a hart mask that selects the calling hart fences it too (SBI v2.0
   chapter 8: every hart in the mask; Linux leaves its own flush to the SBI when its mask
   also holds other harts): a translation used before a PTE change made without SFENCE.VMA
   must be gone after the call. */
#define RFENCE_VA 0x40000000UL /* VPN[2] = 1, VPN[1] = VPN[0] = 0 */

static u64 pt_root[512] __attribute__((aligned(4096)));
static u64 pt_l1[512] __attribute__((aligned(4096)));
static u64 pt_l0[512] __attribute__((aligned(4096)));
static volatile u64 page_a[512] __attribute__((aligned(4096)));
static volatile u64 page_b[512] __attribute__((aligned(4096)));

static void rfence_self_check(void)
{
	page_a[0] = 0xaaaa;
	page_b[0] = 0xbbbb;
	/* RAM identity-mapped by one 1 GiB page (code, stack, data); RFENCE_VA by 4 KiB. */
	pt_root[2] = pte((void *)0x80000000UL, PTE_V | PTE_R | PTE_W | PTE_X | PTE_A | PTE_D);
	pt_root[1] = pte(pt_l1, PTE_V);
	pt_l1[0] = pte(pt_l0, PTE_V);
	pt_l0[0] = pte(page_a, PTE_V | PTE_R | PTE_W | PTE_A | PTE_D);
	u64 satp = SATP_SV39 | ((u64)pt_root >> 12);
	__asm__ volatile("sfence.vma\n\tcsrw satp, %0\n\tsfence.vma" ::"r"(satp) : "memory");
	u64 before = *(volatile u64 *)RFENCE_VA;
	pt_l0[0] = pte(page_b, PTE_V | PTE_R | PTE_W | PTE_A | PTE_D);
	/* remote_sfence_vma(hart mask {0}, whole address space) */
	struct sbiret r = sbi_call(SBI_EXT_RFENCE, 1, 1, 0, 0, ~0UL);
	u64 after = *(volatile u64 *)RFENCE_VA;
	__asm__ volatile("csrw satp, zero\n\tsfence.vma" ::: "memory");
	check("rfence: read through the first mapping", before, 0xaaaa);
	check("rfence: remote_sfence_vma(self)", r.error, 0);
	check("rfence: the caller is fenced (new mapping)", after, 0xbbbb);
}

static void read_line(void)
{
	static char line[64];
	u64 n = 0;
	/* Poll: console_read never waits. */
	for (long tries = 0; tries < 1000000 && n < sizeof(line) - 1; tries++) {
		i64 r = dbcn_read(line + n, sizeof(line) - 1 - n);
		if (r < 0) {
			check("console_read error", (u64)r, 0);
			return;
		}
		n += (u64)r;
		if (n && line[n - 1] == '\n')
			break;
	}
	if (n && line[n - 1] == '\n')
		line[--n] = 0;
	line[n] = 0;
	printk("sbi_console: read: %s\n", line);
	check("line length", n, 5);
}

int main(u64 hartid, u64 fdt)
{
	dbcn_puts("sbi_console: hello from DBCN\n");
	uart_puts("sbi_console: hello from the UART\n");
	check("hartid", hartid, 0);
	check("fdt magic", *(volatile u32 *)fdt, 0xedfe0dd0);
	base_checks();
	error_checks();
	ipi_check();
	timer_check();
	rfence_self_check();
	read_line();
	printk("sbi_console: %d checks, %d failures\n", (i64)checks, (i64)failures);
	dbcn_puts(failures ? "sbi_console: FAIL\n" : "sbi_console: PASS\n");
	return failures;
}
