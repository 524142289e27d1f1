/* sbi_pmu_sample: an S-mode guest kernel for `vmm run` (guest/sdk/vs/, starts in VS-mode) that
   uses the sampling extensions of the draft sspesa-ssplcofi-smpdis (provisional CSR
   numbers, docs/csr-map.md) as the VMM gives them to guests (docs/pmu-virt.md, "Sampling"):

   - Sspesa/Ssplcofi: a counter configured through the SBI PMU extension (L1D read accesses)
     overflows on a known load; the LCOFI is taken right after it (sepc = the next load);
     shpmspc is the overflowing load's pc and shpmsdata.CNTRID the counter (both reads exit
     and are emulated by the VMM); scountovf shows the counter (emulated too); a second
     overflow while LCOFIP is pending does not replace the sample; shpmspc/shpmsdata writes
     (WARL); a sample of VU code (a counter with SINH); VU accesses are illegal.
   - Sspdis: the first access to PDIS state exits (hstateen0.PDIS, lazy), later ones do not
     (the test counts the exits); a sampled VS load: the LCOFI right after it, scountovf bit
     1, the record through siselect 0x60 (pdispc, pdisadr1 = the guest virtual address,
     pdisadr2 = the guest physical address with vspdisctl.PA = 1 under a VS-stage page table
     that maps VA 0xC000_0000 to GPA 0x8000_0000, 0 with PA = 0: never a host address), HPM3
     for the guest's own counter; a sampled VU load; VU accesses and vspdisctl illegal.
   - With the extensions off (--sspesa off, --pdis off) the accesses are illegal without an
     exit; the guest prints "sspesa present/absent" and "pdis present/absent".
   - Last, a pending LCOFI with live state: interrupts masked, a counter overflow and a PDIS
     sample pend the LCOFI; the guest prints the state, spins about two million
     instructions (a snapshot is taken there by tests/tests/sbi_sample.rs), unmasks, takes
     the LCOFI and checks that the sample, the record and the counter are unchanged.
   Shuts down through SRST, status 0 when every check passed. */
#include "sample.h"

#define SPIN 1000000UL

/* How many shpmspc/shpmsdata accesses the guest made (each one exits). */
static u64 sspesa_accesses;

static u64 rd_shpmspc(void)
{
	sspesa_accesses++;
	return CSRR(0x5c0);
}

static u64 rd_shpmsdata(void)
{
	sspesa_accesses++;
	return CSRR(0x5c1);
}

static void reset_traps(void)
{
	tr.exc = tr.cause = tr.tval = tr.epc = 0;
	tr.irq = tr.icause = tr.iepc = 0;
}

static u64 configure(u64 base, u64 flags)
{
	struct sbiret r = pmu(CONFIG_MATCHING, base, 1, CFG_CLEAR_VALUE | flags,
			      EV_L1D_READ_ACCESS, 0);
	check("config_matching error", (u64)r.error, 0);
	return (u64)r.value;
}

static void release(u64 c)
{
	pmu(STOP, c, 1, STOP_RESET, 0, 0);
}

static int sspesa_present(void)
{
	reset_traps();
	(void)CSRR(0x5c0);
	if (tr.exc == 0) {
		sspesa_accesses++;
		printk("sspesa present\n");
		return 1;
	}
	check("sspesa absent: shpmspc is illegal", tr.cause, CAUSE_ILLEGAL);
	reset_traps();
	(void)CSRR(0x5c1);
	check("sspesa absent: shpmsdata is illegal", tr.exc * 100 + tr.cause, 100 + CAUSE_ILLEGAL);
	reset_traps();
	(void)CSRR(0xda0);
	check("sspesa absent: scountovf readable", tr.exc, 0);
	printk("sspesa absent\n");
	return 0;
}

static void sspesa(void)
{
	printk("-- Sspesa/Ssplcofi\n");
	u64 c = configure(3, 0);
	check("counter", c, 3);
	/* The 5th load wraps the counter: LCOFI right after it. */
	reset_traps();
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
	i64 e = sp_start_loads(c, 1, -5UL, buf);
	__asm__ volatile("csrc sstatus, %0" ::"r"(SSTATUS_SIE));
	check("start", (u64)e, 0);
	check("LCOFI taken once", tr.irq, 1);
	check("LCOFI cause", tr.icause, IRQ_LCOFI);
	check("LCOFI right after the 5th load (Ssplcofi)", tr.iepc, (u64)sp_l6);
	check("shpmspc = the 5th load", rd_shpmspc(), (u64)sp_l5);
	check("shpmsdata.CNTRID = the counter", rd_shpmsdata(), c);
	check("scountovf shows the counter", CSRR(0xda0), 1UL << c);
	check("no exception", tr.exc, 0);
	pmu(STOP, c, 1, 0, 0, 0);

	/* A second counter overflows while LCOFIP is pending (interrupts masked): the first
	   overflow's sample stays (the draft: only the 0 -> 1 transition of LCOFIP captures). */
	reset_traps();
	e = sp_start_loads(c, 1, -3UL, buf);
	u64 d = configure(4, 0);
	check("second counter", d, 4);
	struct sbiret r = pmu(START, d, 1, 1, -2UL, 0);
	for (int i = 0; i < 16; i++)
		(void)((volatile u64 *)buf)[i & 7];
	check("start first", (u64)e, 0);
	check("start second", (u64)r.error, 0);
	check("masked: no LCOFI", tr.irq, 0);
	u64 ovf = CSRR(0xda0);
	check("scountovf: both counters", ovf & (1UL << c | 1UL << d), 1UL << c | 1UL << d);
	check("shpmspc = the first overflow (load 3 of counter 3)", rd_shpmspc(), (u64)sp_l3);
	check("shpmsdata.CNTRID = 3", rd_shpmsdata(), c);
	__asm__ volatile("csrc sip, %0" ::"r"(SIE_LCOFIE));
	pmu(STOP, c, 1, 0, 0, 0);
	pmu(STOP, d, 1, 0, 0, 0);

	/* Writes: shpmspc holds a virtual address, shpmsdata only CNTRID (WARL). */
	sspesa_accesses += 4;
	CSRW(0x5c0, 0x80201234UL);
	check("shpmspc written", CSRR(0x5c0), 0x80201234UL);
	CSRW(0x5c1, 0xffffUL);
	check("shpmsdata written (CNTRID only)", CSRR(0x5c1), 0x1f);
	u64 old;
	sspesa_accesses += 2;
	__asm__ volatile("csrrsi %0, 0x5c1, 0" : "=r"(old)::"memory");
	__asm__ volatile("csrrci %0, 0x5c1, 0x10" : "=r"(old)::"memory");
	check("csrrci shpmsdata: old value", old, 0x1f);
	check("csrrci shpmsdata: cleared bit 4", rd_shpmsdata(), 0xf);

	/* A sample of VU code: a counter with SINH counts only the guest's U-mode. */
	release(c);
	release(d);
	c = configure(5, CFG_SET_SINH);
	r = pmu(START, c, 1, 1, -2UL, 0);
	check("start VU counter", (u64)r.error, 0);
	reset_traps();
	run_in_vu(vu_loads, (u64)buf);
	check("VU: LCOFI taken once", tr.irq, 1);
	check("VU: LCOFI right after the 2nd VU load", tr.iepc, (u64)vu_l3);
	check("VU: shpmspc = the 2nd VU load", rd_shpmspc(), (u64)vu_l2);
	check("VU: shpmsdata.CNTRID", rd_shpmsdata(), c);
	pmu(STOP, c, 1, 0, 0, 0);
	release(c);

	/* VU-mode has no access (an S-level CSR): illegal-instruction. */
	reset_traps();
	run_in_vu(vu_probe_shpmspc, 0);
	check("VU shpmspc: illegal", tr.exc * 100 + tr.cause, 100 + CAUSE_ILLEGAL);
}

static int pdis_present(void)
{
	reset_traps();
	u64 v = CSRR(0x5c2); /* the first access: exits once if PDIS is on */
	if (tr.exc == 0) {
		check("spdisctl after reset", v, 0);
		printk("pdis present\n");
		return 1;
	}
	check("pdis absent: spdisctl is illegal", tr.cause, CAUSE_ILLEGAL);
	reset_traps();
	CSRW(0x150, 0x60);
	(void)CSRR(0x151);
	check("pdis absent: sireg at 0x60 is illegal", tr.exc * 100 + tr.cause,
	      100 + CAUSE_ILLEGAL);
	printk("pdis absent\n");
	return 0;
}

/* Sv39 for the guest's S-mode: VA 0xC000_0000 -> GPA 0x8000_0000 (1 GiB, read/write) and
   0x8000_0000 identity (read/write/execute). */
static u64 root[512] __attribute__((aligned(4096)));
#define PTE_V 1UL
#define PTE_R 2UL
#define PTE_W 4UL
#define PTE_X 8UL
#define PTE_A 0x40UL
#define PTE_D 0x80UL
#define SATP_SV39 (8UL << 60)

static void pdis(int have_sspesa)
{
	printk("-- Sspdis\n");
	/* vspdisctl through spdisctl: S (VS-mode), loads, PA (guest physical), HPM3. */
	u64 c = configure(3, 0);
	struct sbiret r = pmu(START, c, 1, 0, 0, 0);
	check("start counter 3", (u64)r.error, 0);
	CSRW(0x5c2, PD_S | PD_SEL_LOAD | PD_PA | PD_HPM(3));
	check("spdisctl (vspdisctl) written", CSRR(0x5c2), PD_S | PD_SEL_LOAD | PD_PA | PD_HPM(3));
	reset_traps();
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
	pd_loads(buf, WRAP_ON(2));
	__asm__ volatile("csrc sstatus, %0" ::"r"(SSTATUS_SIE));
	check("LCOFI taken once", tr.irq, 1);
	check("LCOFI right after the sampled load (skidless)", tr.iepc, (u64)pd_l3);
	check("scountovf bit 1 (PDIS OF)", CSRR(0xda0) & 2, 2);
	check("spdisctl.OF", CSRR(0x5c2) & PD_OF, PD_OF);
	read_record();
	check("pdishdrev.TYPE = load", rec[0] & HDR_TYPE, 1);
	/* HPM_i needs counter i delegated like PDIS: the guest's counters count as delegated
	   while menvcfg.CDE = 1, which Sspesa sets. */
	check("pdishdrev.HPM3 (the guest's load counter, with Sspesa)", rec[0] & PD_HPM(3),
	      have_sspesa ? PD_HPM(3) : 0);
	check("pdispc = the 2nd load", rec[1], (u64)pd_l2);
	check("pdisadr1 = the virtual address", rec[4], (u64)&buf[1]);
	check("pdisadr2 = the guest physical address (vsatp Bare)", rec[5], (u64)&buf[1]);
	pmu(STOP, c, 1, 0, 0, 0);
	release(c);

	/* Under a VS-stage page table: VA 0xC000_0000 + x -> GPA 0x8000_0000 + x. */
	for (int i = 0; i < 512; i++)
		root[i] = 0;
	root[2] = (0x80000000UL >> 12) << 10 | PTE_V | PTE_R | PTE_W | PTE_X | PTE_A | PTE_D;
	root[3] = (0x80000000UL >> 12) << 10 | PTE_V | PTE_R | PTE_W | PTE_A | PTE_D;
	CSRW(satp, SATP_SV39 | ((u64)root >> 12));
	__asm__ volatile("sfence.vma" ::: "memory");
	u64 *va = (u64 *)((u64)buf + 0x40000000UL);
	CSRW(0x5c2, PD_S | PD_SEL_LOAD | PD_PA);
	pd_loads(va, WRAP_ON(1));
	read_record();
	check("Sv39: pdispc = the 1st load", rec[1], (u64)pd_l1);
	check("Sv39: pdisadr1 = the guest virtual address", rec[4], (u64)va);
	check("Sv39: pdisadr2 = the guest physical address", rec[5], (u64)buf);
	/* PA = 0: no address at all (mpdisctl.PA is the host's and stays 0). */
	CSRW(0x5c2, PD_S | PD_SEL_LOAD);
	pd_loads(va, WRAP_ON(1));
	read_record();
	check("Sv39, PA = 0: pdisadr1", rec[4], (u64)va);
	check("Sv39, PA = 0: pdisadr2 = 0", rec[5], 0);
	CSRW(satp, 0);
	__asm__ volatile("sfence.vma" ::: "memory");
	__asm__ volatile("csrc sip, %0" ::"r"(SIE_LCOFIE));

	/* A sample of VU code: vspdisctl.U only. */
	CSRW(0x5c2, PD_U | PD_SEL_LOAD);
	CSRW(0x5c3, WRAP_ON(2));
	reset_traps();
	run_in_vu(vu_loads, (u64)buf);
	check("VU: LCOFI taken once", tr.irq, 1);
	check("VU: LCOFI right after the sampled load", tr.iepc, (u64)vu_l3);
	CSRW(0x5c2, 0);
	read_record();
	check("VU: pdispc = the 2nd VU load", rec[1], (u64)vu_l2);
	check("VU: pdisadr1", rec[4], (u64)&buf[1]);

	/* VU-mode and the H-level vspdisctl: illegal-instruction. */
	reset_traps();
	run_in_vu(vu_probe_spdisctl, 0);
	check("VU spdisctl: illegal", tr.exc * 100 + tr.cause, 100 + CAUSE_ILLEGAL);
	reset_traps();
	(void)CSRR(0x6c0);
	check("VS vspdisctl (H-level CSR): illegal", tr.exc * 100 + tr.cause,
	      100 + CAUSE_ILLEGAL);
	/* Every other PDIS register, directly (no exit: counted by the test). */
	CSRW(0x5c4, 0xffUL);
	check("spdisevmask", CSRR(0x5c4), 0xff);
	CSRW(0x5c4, 0);
	CSRW(0x5c6, 0x1005UL);
	check("spdisfilter", CSRR(0x5c6), 0x1005);
	CSRW(0x5c6, 0);
}

/* A pending LCOFI with live Sspesa and PDIS state across a long spin (the snapshot). */
static void pending(int have_sspesa, int have_pdis)
{
	printk("-- pending LCOFI\n");
	u64 c = configure(6, 0);
	reset_traps();
	i64 e = sp_start_loads(c, 1, -4UL, buf);
	check("start", (u64)e, 0);
	if (have_pdis) {
		CSRW(0x5c2, PD_S | PD_SEL_LOAD | PD_PA);
		pd_loads(buf, WRAP_ON(3));
		CSRW(0x5c2, PD_OF | PD_SEL_LOAD | PD_PA); /* stop counting, keep OF */
	}
	u64 pc = 0, data = 0;
	if (have_sspesa) {
		pc = rd_shpmspc();
		data = rd_shpmsdata();
	}
	if (have_pdis)
		read_record();
	u64 sip;
	__asm__ volatile("csrr %0, sip" : "=r"(sip));
	printk("pending: armed sip %x shpmspc %x shpmsdata %x pdispc %x adr %x\n",
	       sip & SIE_LCOFIE, pc, data, rec[1], rec[5]);
	check("LCOFI pending, not taken", tr.irq * 0x10000 + (sip & SIE_LCOFIE), SIE_LCOFIE);
	/* The counter (it counts every load) right before and after the spin. */
	u64 n = SPIN, cnt, cnt2;
	__asm__ volatile("csrr %1, hpmcounter6\n"
			 "1: addi %0, %0, -1\n bnez %0, 1b\n"
			 "csrr %2, hpmcounter6"
			 : "+r"(n), "=&r"(cnt), "=&r"(cnt2));
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
	__asm__ volatile("csrc sstatus, %0" ::"r"(SSTATUS_SIE));
	printk("pending: delivered, counter %x\n", cnt2);
	check("pending LCOFI taken once", tr.irq, 1);
	check("pending LCOFI cause", tr.icause, IRQ_LCOFI);
	check("counter unchanged by the spin", cnt2, cnt);
	u64 a, b;
	__asm__ volatile("csrr %0, hpmcounter6\n"
			 "ld t1, 0(%2)\n ld t1, 8(%2)\n ld t1, 16(%2)\n"
			 "csrr %1, hpmcounter6"
			 : "=&r"(a), "=&r"(b)
			 : "r"(buf)
			 : "t1", "memory");
	check("the counter still counts its event (3 loads)", b - a, 3);
	if (have_sspesa) {
		check("shpmspc kept (the 4th load)", rd_shpmspc(), (u64)sp_l4);
		check("shpmspc as before", pc, (u64)sp_l4);
		check("shpmsdata kept", rd_shpmsdata(), data);
		check("scountovf", CSRR(0xda0) & (1UL << c | 2),
		      1UL << c | (have_pdis ? 2 : 0));
	}
	if (have_pdis) {
		u64 old1 = rec[1], old5 = rec[5];
		read_record();
		check("pdispc kept (the 3rd load)", rec[1], (u64)pd_l3);
		check("pdispc as before", old1, rec[1]);
		check("pdisadr2 kept", rec[5], old5);
		check("spdisctl kept", CSRR(0x5c2), PD_OF | PD_SEL_LOAD | PD_PA);
	}
	pmu(STOP, c, 1, 0, 0, 0);
	release(c);
}

int main(void)
{
	CSRW(stvec, trap_entry);
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_LCOFIE));
	int have_sspesa = sspesa_present();
	if (have_sspesa)
		sspesa();
	int have_pdis = pdis_present();
	if (have_pdis)
		pdis(have_sspesa);
	pending(have_sspesa, have_pdis);
	printk("sspesa accesses %d\n", sspesa_accesses);
	printk("sbi_pmu_sample: %d checks, %d failures\n", (u64)checks, (u64)failures);
	if (failures)
		return 1;
	dbcn_puts("sbi_pmu_sample: PASS\n");
	return 0;
}
