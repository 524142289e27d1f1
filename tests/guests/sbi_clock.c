/* sbi_clock: a `vmm run` guest kernel for the clock modes (`--clock`, tests/clock.rs). It
   waits STEPS times in WFI for a timer STEP_TICKS ahead (Sstc's `stimecmp`, CSR 0x14d in
   VS-mode the hart's `vstimecmp`, or the SBI TIME extension without Sstc), with timer
   interrupts off so that the interrupt only ends the WFI, and after each wait prints
   `sbi_clock: step N time T` (T: `time` in ticks of 10 MHz). It checks that `time` never
   goes backward (also across a snapshot and restore: the last value read is in RAM) and
   that each wait lasted at least STEP_TICKS.

   With virtual time the waits take no host time (time skips to the deadline); with host
   time (`--clock host`) each lasts STEP_TICKS of the host's time, 0.1 s, with the vCPU
   asleep on the host. */
#include "csr.h"
#include "vs/sbi.h"

#define IRQ_S_TIMER 5
#define SIP_STIP (1UL << IRQ_S_TIMER)
#define SIE_STIE (1UL << IRQ_S_TIMER)
/* 0.1 s at the 10 MHz timebase. */
#define STEP_TICKS 1000000UL
#define STEPS 10

static volatile u64 last_time;
static int has_sstc;
static volatile u64 probing, probe_faults;

__attribute__((interrupt("supervisor"), aligned(4))) static void on_trap(void)
{
	u64 cause, epc, tval;
	__asm__ volatile("csrr %0, scause" : "=r"(cause));
	__asm__ volatile("csrr %0, sepc" : "=r"(epc));
	__asm__ volatile("csrr %0, stval" : "=r"(tval));
	if (!probing) {
		printk("sbi_clock: unexpected trap cause %x sepc %x stval %x\n", cause, epc, tval);
		sbi_shutdown(1);
	}
	probe_faults++;
	__asm__ volatile("csrw sepc, %0" ::"r"(epc + 4));
}

static void set_timer(u64 deadline)
{
	if (has_sstc)
		__asm__ volatile("csrw %0, %1" ::"i"(CSR_STIMECMP), "r"(deadline));
	else
		sbi_call(SBI_EXT_TIME, 0, deadline, 0, 0, 0);
}

static u64 read_sip(void)
{
	u64 sip;
	__asm__ volatile("csrr %0, sip" : "=r"(sip));
	return sip;
}

/* `time`, checked against the last value read. */
static u64 now(void)
{
	u64 t = csr_read_time();
	if (t < last_time) {
		printk("sbi_clock: time went backward from %x to %x\n", last_time, t);
		sbi_shutdown(1);
	}
	last_time = t;
	return t;
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	__asm__ volatile("csrw stvec, %0" ::"r"(on_trap));
	probing = 1;
	u64 probe;
	__asm__ volatile("csrr %0, %1" : "=r"(probe) : "i"(CSR_STIMECMP));
	(void)probe;
	probing = 0;
	has_sstc = probe_faults == 0;
	printk("sbi_clock: start time %x, timer through %s\n", now(),
	       has_sstc ? "stimecmp" : "SBI TIME");
	/* The timer interrupt ends a WFI (sie.STIE) but is never taken (sstatus.SIE = 0). */
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_STIE));
	for (int step = 1; step <= STEPS; step++) {
		u64 start = now();
		u64 deadline = start + STEP_TICKS;
		set_timer(deadline);
		u64 wfis = 0;
		while (!(read_sip() & SIP_STIP) || now() < deadline) {
			__asm__ volatile("wfi");
			if (++wfis > 1000000) {
				printk("sbi_clock: no timer after %d WFIs\n", (int)wfis);
				sbi_shutdown(1);
			}
		}
		u64 end = now();
		set_timer(-1UL);
		check("waited at least the step", end - start >= STEP_TICKS, 1);
		printk("sbi_clock: step %d time %d\n", step, (int)end);
	}
	dbcn_puts(failures ? "sbi_clock: FAIL\n" : "sbi_clock: PASS\n");
	return failures != 0;
}
