/* sbi_pmu_sample_smp: a two-vCPU `vmm run` guest kernel (guest/sdk/vs/) in which each vCPU takes
   its own Sspesa sample and PDIS sample on the same counter index (3), with its own PDIS
   configuration, then spins with the LCOFI pending (interrupts masked) and checks that its
   sample, record, PDIS registers and pending LCOFI are its own. Run with `--pcpus 1` and
   short slices (tests/tests/sbi_sample.rs), the vCPUs share one hart and every register
   is switched with them many times during the spins.

   Hart 0 starts hart 1 (SBI HSM), both work, hart 1 records its results and sets done1;
   hart 0 waits for it and prints every check. */
#include "sample.h"

#define SBI_EXT_HSM_START 0
#define PD_EPT (1UL << 36)
#define SPIN_SMP 200000UL

void secondary_entry(void);
void secondary_main(u64 hartid);
__asm__(".text\n"
	".option push\n"
	".option norvc\n"
	".globl secondary_entry\n"
	"secondary_entry:\n"
	" .option norelax\n"
	" la gp, __global_pointer$\n"
	" mv sp, a1\n"
	" li t0, 0x2000\n"
	" csrs sstatus, t0\n"
	" call secondary_main\n"
	"1: j 1b\n"
	".option pop\n");

struct result {
	u64 start_err, pc, data, pdispc, hdr, adr2, ctl, initval, ovf, sip;
};
static struct result res[2];
static u64 hbuf[2][8] __attribute__((aligned(64)));
static volatile u64 done1;
static u8 stack1[8192] __attribute__((aligned(16)));

/* Hart h: overflow of counter 3 on load 5 - 2h, a PDIS sample of load 2 + h, INITVAL
   100 + h, EPT on hart 1 only; then a spin with the LCOFI pending. */
static void work(u64 h)
{
	struct result *r = &res[h];
	u64 ctl = PD_S | PD_SEL_LOAD | PD_PA | PD_HPM(3) | (h ? PD_EPT : 0);
	pmu(CONFIG_MATCHING, 3, 1, CFG_CLEAR_VALUE, EV_L1D_READ_ACCESS, 0);
	r->start_err = (u64)sp_start_loads(3, 1, -(5UL - 2 * h), hbuf[h]);
	CSRW(0x5c2, ctl);
	pd_loads(hbuf[h], (100UL + h) << 32 | WRAP_ON(2 + h));
	CSRW(0x5c2, (ctl & ~PD_S) | PD_OF); /* stop counting, keep OF */
	u64 n = SPIN_SMP;
	__asm__ volatile("1: addi %0, %0, -1\n bnez %0, 1b" : "+r"(n));
	r->pc = CSRR(0x5c0);
	r->data = CSRR(0x5c1);
	CSRW(0x150, 0x60); /* rec[] is shared: read this hart's record directly */
	r->hdr = CSRR(0x151) & (PD_HPM(3) | HDR_TYPE);
	r->pdispc = CSRR(0x152);
	r->adr2 = CSRR(0x157);
	r->ctl = CSRR(0x5c2);
	r->initval = CSRR(0x5c3) >> 32;
	r->ovf = CSRR(0xda0);
	__asm__ volatile("csrr %0, sip" : "=r"(r->sip));
	r->sip &= SIE_LCOFIE;
	__asm__ volatile("csrc sip, %0" ::"r"(SIE_LCOFIE));
	pmu(STOP, 3, 1, STOP_RESET, 0, 0);
}

void secondary_main(u64 hartid)
{
	CSRW(stvec, trap_entry);
	work(hartid);
	__asm__ volatile("fence rw, rw" ::: "memory");
	done1 = 1;
	for (;;)
		__asm__ volatile("wfi");
}

static void report(u64 h)
{
	struct result *r = &res[h];
	char *sp[2] = { sp_l5, sp_l3 };
	char *pd[2] = { pd_l2, pd_l3 };
	u64 ctl = PD_OF | PD_SEL_LOAD | PD_PA | PD_HPM(3) | (h ? PD_EPT : 0);
	printk("hart %d:\n", h);
	check("  start", r->start_err, 0);
	check("  shpmspc = its own load", r->pc, (u64)sp[h]);
	check("  shpmsdata.CNTRID", r->data, 3);
	check("  pdispc = its own load", r->pdispc, (u64)pd[h]);
	check("  pdishdrev: load, HPM3", r->hdr, PD_HPM(3) | 1);
	check("  pdisadr2 = its own buffer", r->adr2, (u64)&hbuf[h][1 + h]);
	check("  spdisctl its own", r->ctl, ctl);
	check("  spdiscounter.INITVAL its own", r->initval, 100 + h);
	check("  scountovf: counter 3 and PDIS", r->ovf, (1UL << 3) | 2);
	check("  LCOFI pending", r->sip, SIE_LCOFIE);
}

int main(u64 hartid)
{
	CSRW(stvec, trap_entry);
	struct sbiret s = sbi_call(0x48534D, SBI_EXT_HSM_START, 1, (u64)secondary_entry,
				   (u64)(stack1 + sizeof(stack1)), 0);
	check("hart_start(1)", (u64)s.error, 0);
	work(hartid);
	while (!done1)
		__asm__ volatile("" ::: "memory");
	__asm__ volatile("fence rw, rw" ::: "memory");
	report(0);
	report(1);
	check("no trap taken", tr.exc + tr.irq, 0);
	printk("sbi_pmu_sample_smp: %d checks, %d failures\n", (u64)checks, (u64)failures);
	if (failures)
		return 1;
	dbcn_puts("sbi_pmu_sample_smp: PASS\n");
	return 0;
}
