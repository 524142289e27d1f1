/* sbi_sstc: a `vmm run` guest kernel for Sstc (tests/tests/run.rs). It does not read the
   device tree: it probes `stimecmp` (CSR 0x14d, in VS-mode the hart's `vstimecmp`) and
   reports what the access did.

   - With Sstc (`--sstc on`): the comparator raises sip.STIP once `time` reaches
     `stimecmp` (polled with interrupts off), a write of -1 clears it; then the timer
     interrupt (scause = interrupt 5) wakes a WFI no earlier than the deadline, and the
     handler's write of -1 clears STIP again. No SBI call is needed for any of it.
   - Without (`--sstc off`, or `--trap time`): the access raises an exception, reported
     with its cause and `stval`, and the guest takes the same timer interrupt through the
     SBI TIME extension's set_timer instead. */
#include "csr.h"
#include "vs/sbi.h"

#define CAUSE_INTR (1UL << 63)
#define IRQ_S_TIMER 5
#define SIP_STIP (1UL << IRQ_S_TIMER)
#define SIE_STIE (1UL << IRQ_S_TIMER)
#define SSTATUS_SIE (1UL << 1)
/* Timer ticks to wait (10 instructions a tick). */
#define WAIT_TICKS 2000

static volatile u64 probing, exc_count, exc_cause, exc_tval, irq_count, irq_time;
static int has_sstc;

__attribute__((interrupt("supervisor"), aligned(4))) static void on_trap(void)
{
	u64 cause, epc, tval;
	__asm__ volatile("csrr %0, scause" : "=r"(cause));
	__asm__ volatile("csrr %0, sepc" : "=r"(epc));
	__asm__ volatile("csrr %0, stval" : "=r"(tval));
	if (cause == (CAUSE_INTR | IRQ_S_TIMER)) {
		irq_time = csr_read_time();
		irq_count++;
		/* Clear the timer: far future. */
		if (has_sstc)
			__asm__ volatile("csrw %0, %1" ::"i"(CSR_STIMECMP), "r"(-1L));
		else
			sbi_call(SBI_EXT_TIME, 0, -1UL, 0, 0, 0);
		return;
	}
	exc_count++;
	exc_cause = cause;
	exc_tval = tval;
	if (!probing) {
		printk("sbi_sstc: unexpected trap cause %x sepc %x stval %x\n", cause, epc, tval);
		sbi_shutdown(1);
	}
	/* Skip the faulting CSR instruction (4 bytes: CSR instructions have no compressed
	   form). */
	__asm__ volatile("csrw sepc, %0" ::"r"(epc + 4));
}

static u64 read_sip(void)
{
	u64 sip;
	__asm__ volatile("csrr %0, sip" : "=r"(sip));
	return sip;
}

static void set_stimecmp(u64 v)
{
	__asm__ volatile("csrw %0, %1" ::"i"(CSR_STIMECMP), "r"(v));
}

static u64 get_stimecmp(void)
{
	u64 v;
	__asm__ volatile("csrr %0, %1" : "=r"(v) : "i"(CSR_STIMECMP));
	return v;
}

/* Waits in WFI, interrupts on, until the timer interrupt arrives (set up by the caller). */
static void wait_for_timer_irq(u64 deadline)
{
	u64 before = irq_count;
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_STIE));
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
	for (u64 spins = 0; irq_count == before && spins < 1000; spins++)
		__asm__ volatile("wfi");
	__asm__ volatile("csrc sstatus, %0" ::"r"(SSTATUS_SIE));
	__asm__ volatile("csrc sie, %0" ::"r"(SIE_STIE));
	check("timer interrupts taken", irq_count - before, 1);
	check("interrupt at or after the deadline", irq_time >= deadline, 1);
	check("sip.STIP clear after the handler", read_sip() & SIP_STIP, 0);
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	__asm__ volatile("csrw stvec, %0" ::"r"(on_trap));
	probing = 1;
	u64 probe = get_stimecmp();
	probing = 0;
	has_sstc = exc_count == 0;
	if (!has_sstc) {
		printk("sbi_sstc: stimecmp read raised cause %d stval %x\n", (int)exc_cause,
		       exc_tval);
		u64 deadline = csr_read_time() + WAIT_TICKS;
		sbi_call(SBI_EXT_TIME, 0, deadline, 0, 0, 0);
		wait_for_timer_irq(deadline);
		printk("sbi_sstc: timer through SBI TIME\n");
	} else {
		printk("sbi_sstc: stimecmp is %x\n", probe);
		/* The comparator, polled with interrupts off. */
		u64 deadline = csr_read_time() + WAIT_TICKS;
		set_stimecmp(deadline);
		check("stimecmp reads back", get_stimecmp(), deadline);
		check("sip.STIP before the deadline", read_sip() & SIP_STIP, 0);
		u64 now;
		do
			now = csr_read_time();
		while (now < deadline);
		check("sip.STIP at the deadline", read_sip() & SIP_STIP, SIP_STIP);
		set_stimecmp(-1UL);
		check("sip.STIP after stimecmp = -1", read_sip() & SIP_STIP, 0);
		/* The interrupt, waited for in WFI. */
		deadline = csr_read_time() + WAIT_TICKS;
		set_stimecmp(deadline);
		wait_for_timer_irq(deadline);
		check("stimecmp after the handler", get_stimecmp(), -1UL);
		printk("sbi_sstc: timer through stimecmp\n");
	}
	check("exceptions besides the probe", exc_count, has_sstc ? 0 : 1);
	dbcn_puts(failures ? "sbi_sstc: FAIL\n" : "sbi_sstc: PASS\n");
	return failures != 0;
}
