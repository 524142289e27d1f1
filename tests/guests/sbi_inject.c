/* sbi_inject: a `vmm run` guest kernel for the control socket's `inject` request
   (tests/tests/api.rs). It enables its supervisor software and external interrupts, says
   `ready` and spins; its trap handler notes every interrupt and exception it takes, and
   its main loop reports each. The test injects a software interrupt, an
   illegal-instruction exception and an external interrupt, then clears the external
   interrupt; the guest shuts down once it has seen all of them (status 0), each exactly
   where the spec puts it: the exception with the `stval` the test gave and `sepc` where
   the VMM said it injected it, the external interrupt held pending (a level) until the
   VMM clears it. */
#include "vs/sbi.h"

#define CAUSE_INTR (1UL << 63)
#define IRQ_S_SOFT 1
#define IRQ_S_EXT 9
#define SIP_SSIP (1UL << IRQ_S_SOFT)
#define SIE_SSIE (1UL << IRQ_S_SOFT)
#define SIE_SEIE (1UL << IRQ_S_EXT)
#define SIP_SEIP (1UL << IRQ_S_EXT)
#define SSTATUS_SIE (1UL << 1)

void spin_start(void);
void spin_end(void);

static volatile u64 seen_ssi, seen_sei, seen_exc, exc_cause, exc_tval, exc_epc;

__attribute__((interrupt("supervisor"), aligned(4))) static void on_trap(void)
{
	u64 cause, epc, tval;
	__asm__ volatile("csrr %0, scause" : "=r"(cause));
	__asm__ volatile("csrr %0, sepc" : "=r"(epc));
	__asm__ volatile("csrr %0, stval" : "=r"(tval));
	if (cause == (CAUSE_INTR | IRQ_S_SOFT)) {
		__asm__ volatile("csrc sip, %0" ::"r"(SIP_SSIP));
		seen_ssi++;
	} else if (cause == (CAUSE_INTR | IRQ_S_EXT)) {
		/* A level: masked until the VMM clears it (the main loop waits for that). */
		__asm__ volatile("csrc sie, %0" ::"r"(SIE_SEIE));
		seen_sei++;
	} else {
		/* sret goes back to the instruction the exception was taken on: it has not run. */
		seen_exc++;
		exc_cause = cause;
		exc_tval = tval;
		exc_epc = epc;
	}
}

__asm__(".text\n"
	".globl spin_start, spin_end\n"
	".align 2\n"
	"spin_start:\n"
	"1: ld t0, 0(a0)\n"
	" beqz t0, 1b\n"
	" ret\n"
	"spin_end:\n");

/* Spins (interrupts enabled) until *flag is non-zero. */
static void spin_until(volatile u64 *flag)
{
	register volatile u64 *a0 __asm__("a0") = flag;
	__asm__ volatile("call spin_start" : "+r"(a0) : : "t0", "ra", "memory");
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	__asm__ volatile("csrw stvec, %0" ::"r"(on_trap));
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_SSIE | SIE_SEIE));
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
	printk("sbi_inject: ready\n");
	/* Each report is printed here, back in the main loop, not in the handler: the test
	   injects the next event once it reads it, and an exception taken inside a handler
	   (before its sret) would overwrite the handler's own sepc. */
	spin_until(&seen_ssi);
	printk("sbi_inject: ssi\n");
	spin_until(&seen_exc);
	printk("sbi_inject: exception %d stval %x sepc %x\n", (int)exc_cause, exc_tval, exc_epc);
	spin_until(&seen_sei);
	printk("sbi_inject: sei\n");
	u64 sip;
	do
		__asm__ volatile("csrr %0, sip" : "=r"(sip));
	while (sip & SIP_SEIP);
	printk("sbi_inject: sei cleared\n");
	check("one of each", seen_ssi == 1 && seen_exc == 1 && seen_sei == 1, 1);
	sbi_shutdown(0);
}
