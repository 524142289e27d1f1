/* sbi_pmu_deleg: an S-mode guest kernel for `vmm run` (linked with guest/sdk/vs/, starts in
   VS-mode) that uses counter delegation (Smcdeleg/Ssccfg v1.0) as an OS whose firmware
   delegated every counter would, and checks every answer. Whether the VM offers Ssccfg is
   read from the device tree (`ssccfg` in riscv,isa-extensions); the line "mode: deleg on"
   or "mode: deleg off" says which checks ran.

   With Ssccfg (every access below traps to the VMM, which emulates it on the guest's
   virtual counters; the guest cannot tell which hart counter backs which):
   - scountinhibit: all ones read back as the delegated counters (0xfffffffd); csrrs/csrrc
     and the immediate forms;
   - sireg/sireg2 at siselect 0x40 (cycle, cyclecfg), 0x42 (instret, instretcfg), 0x43-0x5F
     (hpmcounterN, hpmeventN): reads and writes in every CSR instruction form, MINH (and
     VSINH/VUINH: the guest has no H) read-only 0, the SINH filter;
   - counting: loads and taken branches on two counters at once, exact within a few;
     cycle/instret stopped and started through scountinhibit, written through sireg;
   - direct reads of hpmcounterN give the same value as sireg;
   - an overflow: an LCOFI is taken, scountovf and sireg2's OF show it, clearing OF through
     sireg2 clears scountovf;
   - the SBI PMU extension on the same virtual counters (config, start, stop; sireg,
     hpmcounterN and scountinhibit agree);
   - illegal-instruction for siselect 0x41, sireg3-6, a read-only CSR written, siselect
     values outside 0x40-0x5F, and from VU-mode for sireg, scountinhibit, scountovf and
     hpmcounterN without scounteren;
   - a window ("snapshot window") in which counters, events and an OF bit are live while
     the guest runs, then checked: tests/tests/pmu_deleg.rs snapshots the VM inside it.
   Without Ssccfg: the same accesses are illegal-instruction (scountovf reads directly).
   Shuts down through SRST, status 0 when every check passed. */
#include "vs/vu.h"
#include "vs/pmu.h"

#define OF (1UL << 63)
#define MINH (1UL << 62)
#define SINH (1UL << 61)
#define UINH (1UL << 60)
#define VSINH (1UL << 59)
#define VUINH (1UL << 58)
#define CAUSE_ILLEGAL 2
#define IRQ_LCOFI ((1UL << 63) | 13)
#define SIE_LCOFIE (1UL << 13)
#define SSTATUS_SIE (1UL << 1)
#define EV_TAKEN 0x100
#define EV_LOADS 0x101
#define LOOPS 1000
#define DELEGATED 0xfffffffdUL


#define CSRR(n)                                                              \
	({                                                                   \
		u64 v_;                                                      \
		__asm__ volatile("csrr %0, " #n : "=r"(v_)::"memory");       \
		v_;                                                          \
	})
#define CSRW(n, v) __asm__ volatile("csrw " #n ", %0" ::"r"((u64)(v)) : "memory")
#define CSRS(n, v) __asm__ volatile("csrs " #n ", %0" ::"r"((u64)(v)) : "memory")
#define CSRC(n, v) __asm__ volatile("csrc " #n ", %0" ::"r"((u64)(v)) : "memory")

/* Interrupts: counted with the last cause; LCOFIP is cleared. Exceptions go to vu.h. */
volatile u64 irq_count, irq_cause;
void guest_entry(void);
__asm__(".text\n.option push\n.option norvc\n.align 4\n.globl guest_entry\nguest_entry:\n"
	" csrw sscratch, t0\n"
	" csrr t0, scause\n"
	" bltz t0, 1f\n"
	" csrr t0, sscratch\n"
	" j trap_entry\n"
	"1: sd t1, -8(sp)\n"
	" la t1, irq_cause\n sd t0, 0(t1)\n"
	" la t1, irq_count\n ld t0, 0(t1)\n addi t0, t0, 1\n sd t0, 0(t1)\n"
	" li t0, 1 << 13\n csrc sip, t0\n"
	" ld t1, -8(sp)\n"
	" csrr t0, sscratch\n"
	" sret\n.option pop\n");

typedef u64 (*probe_fn)(u64);
/* Probes: one CSR instruction on a0, then `ret` (VS) or `ecall` (VU, through run_in_vu). */
#define PROBE(name, insn) ".globl " #name "\n.align 2\n" #name ":\n " insn "\n ret\n"
#define VUPROBE(name, insn) ".globl " #name "\n.align 2\n" #name ":\n " insn "\n ecall\n"
u64 p_rd_sireg(u64), p_wr_sireg(u64), p_swap_sireg(u64), p_rd_sireg2(u64),
	p_wr_sireg2(u64), p_set_sireg2(u64), p_clr_sireg2(u64), p_rsi_sireg2(u64),
	p_rci_sireg2(u64), p_rwi_sireg(u64), p_rd_sireg3(u64), p_wr_sireg3(u64),
	p_rd_sireg4(u64), p_rd_sireg5(u64), p_rd_sireg6(u64), p_wr_sireg6(u64),
	p_rd_inh(u64), p_wr_inh(u64), p_set_inh(u64), p_clr_inh(u64), p_rsi_inh(u64),
	p_rci_inh(u64), p_rd_ovf(u64), p_wr_ovf(u64), p_set_ovf(u64), p_rsi_ovf(u64),
	p_rd_hpm3(u64), p_rd_hpm31(u64), p_rd_hpm17(u64), p_wr_hpm3(u64), p_rd_cycle(u64),
	u_rd_sireg(u64), u_wr_sireg2(u64), u_rd_inh(u64), u_rd_ovf(u64), u_rd_hpm3(u64),
	u_rd_cycle(u64);
__asm__(".text\n.option push\n.option norvc\n"
	PROBE(p_rd_sireg, "csrr a0, 0x151")
	PROBE(p_wr_sireg, "csrw 0x151, a0")
	PROBE(p_swap_sireg, "csrrw a0, 0x151, a0")
	PROBE(p_rd_sireg2, "csrr a0, 0x152")
	PROBE(p_wr_sireg2, "csrw 0x152, a0")
	PROBE(p_set_sireg2, "csrrs a0, 0x152, a0")
	PROBE(p_clr_sireg2, "csrrc a0, 0x152, a0")
	PROBE(p_rsi_sireg2, "csrrsi a0, 0x152, 0")
	PROBE(p_rci_sireg2, "csrrci a0, 0x152, 0")
	PROBE(p_rwi_sireg, "csrrwi a0, 0x151, 21")
	PROBE(p_rd_sireg3, "csrr a0, 0x153")
	PROBE(p_wr_sireg3, "csrw 0x153, a0")
	PROBE(p_rd_sireg4, "csrr a0, 0x155")
	PROBE(p_rd_sireg5, "csrr a0, 0x156")
	PROBE(p_rd_sireg6, "csrr a0, 0x157")
	PROBE(p_wr_sireg6, "csrw 0x157, a0")
	PROBE(p_rd_inh, "csrr a0, 0x120")
	PROBE(p_wr_inh, "csrw 0x120, a0")
	PROBE(p_set_inh, "csrrs a0, 0x120, a0")
	PROBE(p_clr_inh, "csrrc a0, 0x120, a0")
	PROBE(p_rsi_inh, "csrrsi a0, 0x120, 0x1d")
	PROBE(p_rci_inh, "csrrci a0, 0x120, 0x1d")
	PROBE(p_rd_ovf, "csrr a0, 0xda0")
	PROBE(p_wr_ovf, "csrw 0xda0, a0")
	PROBE(p_set_ovf, "csrrs a0, 0xda0, a0")
	PROBE(p_rsi_ovf, "csrrsi a0, 0xda0, 0")
	PROBE(p_rd_hpm3, "csrr a0, 0xc03")
	PROBE(p_rd_hpm31, "csrr a0, 0xc1f")
	PROBE(p_rd_hpm17, "csrr a0, 0xc11")
	PROBE(p_wr_hpm3, "csrw 0xc03, a0")
	PROBE(p_rd_cycle, "csrr a0, 0xc00")
	VUPROBE(u_rd_sireg, "csrr a0, 0x151")
	VUPROBE(u_wr_sireg2, "csrw 0x152, a0")
	VUPROBE(u_rd_inh, "csrr a0, 0x120")
	VUPROBE(u_rd_ovf, "csrr a0, 0xda0")
	VUPROBE(u_rd_hpm3, "csrr a0, 0xc03")
	VUPROBE(u_rd_cycle, "csrr a0, 0xc00")
	".option pop\n");

static char namebuf[160];
static const char *cat(const char *a, const char *b)
{
	u64 n = 0;
	for (; *a && n < sizeof namebuf - 1; a++)
		namebuf[n++] = *a;
	for (; *b && n < sizeof namebuf - 1; b++)
		namebuf[n++] = *b;
	namebuf[n] = 0;
	return namebuf;
}

static u32 insn_of(probe_fn f)
{
	return *(volatile u32 *)(void *)f;
}

static u64 probe(probe_fn f, u64 arg, int vu)
{
	trap_rec.count = 0;
	trap_rec.cause = trap_rec.tval = ~0UL;
	return vu ? run_in_vu(f, arg) : f(arg);
}

/* The access is emulated (or executed): no exception; returns a0. */
static u64 ok_probe(const char *name, probe_fn f, u64 arg, int vu)
{
	u64 v = probe(f, arg, vu);
	check(cat(name, ": no exception"), trap_rec.count, 0);
	return v;
}

/* The access raises illegal-instruction with stval = its bits. */
static void illegal(const char *name, probe_fn f, u64 arg, int vu)
{
	probe(f, arg, vu);
	check(cat(name, ": one trap"), trap_rec.count, 1);
	check(cat(name, ": illegal"), trap_rec.cause, CAUSE_ILLEGAL);
	check(cat(name, ": stval = insn"), trap_rec.tval, insn_of(f));
}

static volatile u64 data[4];

/* n iterations of: a load, an add, a conditional branch (taken but the last time). */
static void __attribute__((noinline)) work(u64 n)
{
	__asm__ volatile("1: ld t1, 0(%1)\n addi %0, %0, -1\n bnez %0, 1b\n"
			 : "+r"(n)
			 : "r"(data)
			 : "t1", "memory");
}

static void sel(u64 s)
{
	CSRW(0x150, s);
}
static u64 rd_ctr(u64 i)
{
	sel(0x40 + i);
	return CSRR(0x151);
}
static void wr_ctr(u64 i, u64 v)
{
	sel(0x40 + i);
	CSRW(0x151, v);
}
static u64 rd_ev(u64 i)
{
	sel(0x40 + i);
	return CSRR(0x152);
}
static void wr_ev(u64 i, u64 v)
{
	sel(0x40 + i);
	CSRW(0x152, v);
}

static int has_ext(const u8 *fdt, const char *name)
{
	u64 total = (u64)fdt[4] << 24 | (u64)fdt[5] << 16 | (u64)fdt[6] << 8 | fdt[7];
	u64 len = 0;
	while (name[len])
		len++;
	for (u64 i = 1; i + len < total; i++) {
		if (fdt[i - 1] != 0 || fdt[i + len] != 0)
			continue;
		u64 k = 0;
		while (k < len && fdt[i + k] == (u8)name[k])
			k++;
		if (k == len)
			return 1;
	}
	return 0;
}

static void inhibit_discovery(void)
{
	/* Smcdeleg chapter 6: write all ones, read back the delegated counters. */
	ok_probe("scountinhibit write ~0", p_wr_inh, ~0UL, 0);
	check("scountinhibit = delegated counters", ok_probe("scountinhibit read", p_rd_inh, 0, 0),
	      DELEGATED);
	check("csrrc scountinhibit old", ok_probe("csrrc scountinhibit", p_clr_inh, 0xf0, 0),
	      DELEGATED);
	check("after csrrc", ok_probe("scountinhibit read", p_rd_inh, 0, 0), DELEGATED & ~0xf0UL);
	check("csrrs scountinhibit old", ok_probe("csrrs scountinhibit", p_set_inh, 0x30, 0),
	      DELEGATED & ~0xf0UL);
	check("csrrci scountinhibit 0x1d old", ok_probe("csrrci scountinhibit", p_rci_inh, 0, 0),
	      DELEGATED & ~0xc0UL);
	check("csrrsi scountinhibit 0x1d old", ok_probe("csrrsi scountinhibit", p_rsi_inh, 0, 0),
	      DELEGATED & ~0xddUL);
	ok_probe("scountinhibit write ~0", p_wr_inh, ~0UL, 0);
}

static void fixed_counters(void)
{
	/* cycle (0x40): stopped by scountinhibit, written through sireg, read directly. */
	sel(0x40);
	ok_probe("sireg write cycle", p_wr_sireg, 1000, 0);
	check("sireg read cycle", ok_probe("sireg read cycle", p_rd_sireg, 0, 0), 1000);
	check("rdcycle (inhibited)", CSRR(cycle), 1000);
	work(100);
	check("rdcycle still (inhibited)", CSRR(cycle), 1000);
	/* cyclecfg: MINH, VSINH, VUINH read-only 0. */
	ok_probe("cyclecfg write all inh", p_wr_sireg2, MINH | SINH | UINH | VSINH | VUINH, 0);
	check("cyclecfg: MINH VSINH VUINH read-only 0", ok_probe("cyclecfg read", p_rd_sireg2, 0, 0),
	      SINH | UINH);
	/* SINH: the guest's S-mode (VS) is not counted. */
	CSRC(0x120, 1);
	work(LOOPS);
	CSRS(0x120, 1);
	check("cycle with cyclecfg.SINH (VS not counted)", CSRR(cycle), 1000);
	/* csrrc on cyclecfg: returns the old value, clears SINH. */
	check("csrrc cyclecfg old", ok_probe("csrrc cyclecfg", p_clr_sireg2, SINH | UINH, 0),
	      SINH | UINH);
	check("cyclecfg after csrrc", rd_ev(0), 0);
	CSRC(0x120, 1);
	work(LOOPS);
	CSRS(0x120, 1);
	check_range("cycle counts VS with cyclecfg 0", rd_ctr(0), 1000 + 3 * LOOPS, 1000 + 100 * LOOPS);

	/* instret (0x42), instretcfg. */
	wr_ctr(2, 0);
	check("instret written 0", CSRR(instret), 0);
	sel(0x42);
	check("csrrs instretcfg old", ok_probe("csrrs instretcfg", p_set_sireg2, SINH | MINH, 0), 0);
	check("instretcfg = SINH", rd_ev(2), SINH);
	CSRC(0x120, 4);
	work(LOOPS);
	CSRS(0x120, 4);
	check("instret with instretcfg.SINH", CSRR(instret), 0);
	wr_ev(2, UINH);
	CSRC(0x120, 4);
	work(LOOPS);
	CSRS(0x120, 4);
	check_range("instret counts VS with instretcfg.UINH", rd_ctr(2), 3 * LOOPS, 3 * LOOPS + 40);
	wr_ev(2, 0);
	/* The fixed counters run again, as before. */
	CSRC(0x120, 5);
	u64 c0 = CSRR(cycle);
	work(10);
	check("cycle runs again", CSRR(cycle) > c0, 1);
}

static void hpm_counters(void)
{
	/* Counter 3 counts loads, counter 31 taken branches: the counts stay apart whatever
	   hart counters back them. */
	wr_ev(3, EV_LOADS | MINH);
	check("hpmevent3: MINH read-only 0", rd_ev(3), EV_LOADS);
	wr_ev(31, EV_TAKEN);
	check("hpmevent31", rd_ev(31), EV_TAKEN);
	wr_ctr(3, 0);
	wr_ctr(31, 5);
	check("hpmcounter31 written", rd_ctr(31), 5);
	CSRC(0x120, 1UL << 3 | 1UL << 31);
	work(LOOPS);
	CSRS(0x120, 1UL << 3 | 1UL << 31);
	u64 loads = rd_ctr(3), taken = rd_ctr(31);
	check_range("counter 3: loads", loads, LOOPS, LOOPS + 8);
	check_range("counter 31: taken branches", taken, 5 + LOOPS - 1, 5 + LOOPS + 8);
	check("hpmcounter3 read directly = sireg", ok_probe("csrr hpmcounter3", p_rd_hpm3, 0, 0),
	      loads);
	check("hpmcounter31 read directly = sireg",
	      ok_probe("csrr hpmcounter31", p_rd_hpm31, 0, 0), taken);
	/* Counter 17 (its own hart counter). */
	wr_ev(17, EV_LOADS);
	wr_ctr(17, 7);
	CSRC(0x120, 1UL << 17);
	work(LOOPS);
	CSRS(0x120, 1UL << 17);
	u64 c17 = rd_ctr(17);
	check_range("counter 17: loads", c17, 7 + LOOPS, 7 + LOOPS + 8);
	check("hpmcounter17 read directly", ok_probe("csrr hpmcounter17", p_rd_hpm17, 0, 0), c17);

	/* Every CSR instruction form on sireg and sireg2. */
	sel(0x44);
	check("csrrw sireg old", ok_probe("csrrw sireg", p_swap_sireg, 77, 0), 0);
	check("csrrwi sireg old", ok_probe("csrrwi sireg", p_rwi_sireg, 0, 0), 77);
	check("sireg after csrrwi", rd_ctr(4), 21);
	ok_probe("csrw sireg2", p_wr_sireg2, EV_LOADS | SINH, 0);
	check("csrrsi sireg2 (read)", ok_probe("csrrsi sireg2", p_rsi_sireg2, 0, 0), EV_LOADS | SINH);
	check("csrrci sireg2 (read)", ok_probe("csrrci sireg2", p_rci_sireg2, 0, 0), EV_LOADS | SINH);
	check("csrrs sireg2 old", ok_probe("csrrs sireg2", p_set_sireg2, UINH | VSINH, 0),
	      EV_LOADS | SINH);
	check("sireg2: UINH set, VSINH read-only 0", rd_ev(4), EV_LOADS | SINH | UINH);
	/* SINH: the guest's S-mode is not counted. */
	CSRC(0x120, 1UL << 4);
	work(LOOPS);
	CSRS(0x120, 1UL << 4);
	check("counter 4 with SINH", rd_ctr(4), 21);
	wr_ev(4, 0);
	check("hpmevent4 cleared", rd_ev(4), 0);
	check("trap-free counter use", trap_rec.count, 0);
}

static void overflow(void)
{
	irq_count = 0;
	irq_cause = 0;
	wr_ev(5, EV_LOADS);
	wr_ctr(5, -(u64)(LOOPS / 2));
	CSRS(sie, SIE_LCOFIE);
	CSRS(sstatus, SSTATUS_SIE);
	CSRC(0x120, 1UL << 5);
	work(LOOPS);
	CSRS(0x120, 1UL << 5);
	CSRC(sstatus, SSTATUS_SIE);
	check("LCOFI taken", irq_count, 1);
	check("LCOFI cause", irq_cause, IRQ_LCOFI);
	check_range("counter 5 wrapped", rd_ctr(5), LOOPS / 2, LOOPS / 2 + 8);
	check("scountovf = counter 5", ok_probe("csrr scountovf", p_rd_ovf, 0, 0), 1UL << 5);
	check("csrrsi scountovf 0 (read)", ok_probe("csrrsi scountovf", p_rsi_ovf, 0, 0), 1UL << 5);
	check("sireg2 OF", rd_ev(5), OF | EV_LOADS);
	sel(0x45);
	check("csrrc sireg2 OF old", ok_probe("csrrc sireg2 OF", p_clr_sireg2, OF, 0), OF | EV_LOADS);
	check("scountovf after clearing OF", ok_probe("csrr scountovf", p_rd_ovf, 0, 0), 0);
	/* OF is writable through sireg2 (as through mhpmevent). */
	wr_ev(6, OF | EV_TAKEN);
	check("scountovf with OF written", ok_probe("csrr scountovf", p_rd_ovf, 0, 0), 1UL << 6);
	wr_ev(6, 0);
	CSRC(sie, SIE_LCOFIE);
}

static void illegal_accesses(void)
{
	sel(0x41);
	illegal("siselect 0x41: sireg read", p_rd_sireg, 0, 0);
	illegal("siselect 0x41: sireg write", p_wr_sireg, 1, 0);
	illegal("siselect 0x41: sireg2 read", p_rd_sireg2, 0, 0);
	illegal("siselect 0x41: sireg2 write", p_wr_sireg2, 1, 0);
	static const u64 sels[] = { 0x40, 0x42, 0x43, 0x5f };
	for (u64 k = 0; k < 4; k++) {
		sel(sels[k]);
		illegal("sireg3 read", p_rd_sireg3, 0, 0);
		illegal("sireg3 write", p_wr_sireg3, 1, 0);
		illegal("sireg4 read (RV64)", p_rd_sireg4, 0, 0);
		illegal("sireg5 read (RV64)", p_rd_sireg5, 0, 0);
		illegal("sireg6 read", p_rd_sireg6, 0, 0);
		illegal("sireg6 write", p_wr_sireg6, 1, 0);
	}
	/* Outside 0x40-0x5F: not delegated counters (reserved, CTR, iprio; 0x60/0x61 are the
	   PDIS record, which the guest has with --pdis on). */
	static const u64 out[] = { 0x3f, 0x70, 0x100, 0x20 };
	for (u64 k = 0; k < 4; k++) {
		sel(out[k]);
		illegal("siselect outside 0x40-0x5F: sireg", p_rd_sireg, 0, 0);
		illegal("siselect outside 0x40-0x5F: sireg2 write", p_wr_sireg2, 0, 0);
	}
	illegal("csrw scountovf (read-only)", p_wr_ovf, 0, 0);
	illegal("csrrs scountovf, a0 (write)", p_set_ovf, 1, 0);
	illegal("csrw hpmcounter3 (read-only)", p_wr_hpm3, 0, 0);
	/* VU-mode: S-level CSRs are illegal; counters follow the guest's scounteren. */
	sel(0x43);
	CSRW(scounteren, 0);
	illegal("VU sireg", u_rd_sireg, 0, 1);
	illegal("VU sireg2 write", u_wr_sireg2, 0, 1);
	illegal("VU scountinhibit", u_rd_inh, 0, 1);
	illegal("VU scountovf", u_rd_ovf, 0, 1);
	illegal("VU hpmcounter3 (scounteren 0)", u_rd_hpm3, 0, 1);
	illegal("VU cycle (scounteren 0)", u_rd_cycle, 0, 1);
	CSRW(scounteren, 1UL << 3 | 1);
	check("VU hpmcounter3 (scounteren.HPM3)", ok_probe("VU hpmcounter3", u_rd_hpm3, 0, 1),
	      rd_ctr(3));
	ok_probe("VU cycle (scounteren.CY)", u_rd_cycle, 0, 1);
	CSRW(scounteren, 0);
}

static void sbi_coexistence(void)
{
	/* Counter 10 through the SBI (SKIP_MATCH, CLEAR_VALUE), read through sireg. */
	struct sbiret r = pmu(2, 10, 1, 1 | 2, 0x20000, EV_LOADS);
	check("SBI config_matching counter 10", (u64)r.error, 0);
	check("SBI chose counter 10", (u64)r.value, 10);
	check("hpmevent10 as SBI programmed it", rd_ev(10), EV_LOADS);
	check("SBI-configured counter stopped", ok_probe("scountinhibit", p_rd_inh, 0, 0) >> 10 & 1, 1);
	/* Nothing but the loop between start and stop (a check would print). */
	struct sbiret start = pmu(3, 10, 1, 0, 0, 0);
	u64 inh = probe(p_rd_inh, 0, 0);
	work(LOOPS);
	r = pmu(4, 10, 1, 0, 0, 0);
	check("SBI start", (u64)start.error, 0);
	check("started: scountinhibit bit 10 clear", inh >> 10 & 1, 0);
	check("SBI stop", (u64)r.error, 0);
	u64 v = rd_ctr(10);
	check_range("SBI counter 10 through sireg", v, LOOPS, LOOPS + 30);
	sel(0x4a);
	check("hpmcounter10 through sireg again", ok_probe("sireg", p_rd_sireg, 0, 0), v);
	/* Started through scountinhibit, stopped through the SBI. */
	CSRC(0x120, 1UL << 10);
	r = pmu(4, 10, 1, 0, 0, 0);
	check("SBI stop after scountinhibit start", (u64)r.error, 0);
}

/* Counters, events and an OF bit live across a stretch of plain computation. */
static void snapshot_window(void)
{
	wr_ev(7, EV_LOADS);
	wr_ctr(7, 0);
	wr_ev(8, EV_TAKEN | UINH);
	wr_ctr(8, 1000);
	wr_ev(9, EV_LOADS);
	wr_ctr(9, -(u64)3);
	wr_ev(0, SINH);
	CSRC(0x120, 1UL << 7 | 1UL << 8 | 1UL << 9);
	printk("snapshot window: begin\n");
	work(20 * LOOPS);
	printk("snapshot window: end\n");
	CSRS(0x120, 1UL << 7 | 1UL << 8 | 1UL << 9);
	check("trap-free snapshot window", trap_rec.count, 0);
	/* Exact values: a restored VM must print the same. */
	printk("window counter 7 = %x\n", rd_ctr(7));
	printk("window counter 8 = %x\n", rd_ctr(8));
	printk("window counter 9 = %x\n", rd_ctr(9));
	printk("window cycle = %x\n", rd_ctr(0));
	check("window event 7", rd_ev(7), EV_LOADS);
	check("window event 8", rd_ev(8), EV_TAKEN | UINH);
	check("window cyclecfg", rd_ev(0), SINH);
	check("window scountovf = counter 9", ok_probe("csrr scountovf", p_rd_ovf, 0, 0), 1UL << 9);
	check("window scountinhibit", ok_probe("scountinhibit", p_rd_inh, 0, 0) & 0x3ff, 0x3f8);
}

static void deleg_off(void)
{
	/* No Ssccfg: the hart's menvcfg.CDE is 0, so everything is illegal-instruction. */
	sel(0x43);
	illegal("no Ssccfg: sireg", p_rd_sireg, 0, 0);
	illegal("no Ssccfg: sireg2 write", p_wr_sireg2, 0, 0);
	sel(0x40);
	illegal("no Ssccfg: sireg (cycle)", p_rd_sireg, 0, 0);
	illegal("no Ssccfg: scountinhibit read", p_rd_inh, 0, 0);
	illegal("no Ssccfg: scountinhibit write", p_wr_inh, 0, 0);
	/* scountovf is Sscofpmf's: readable (nothing overflowed). */
	check("no Ssccfg: scountovf", ok_probe("no Ssccfg: scountovf", p_rd_ovf, 0, 0), 0);
	illegal("no Ssccfg: hpmcounter3 (not configured)", p_rd_hpm3, 0, 0);
	illegal("no Ssccfg: VU scountinhibit", u_rd_inh, 0, 1);
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	printk("sbi_pmu_deleg: start\n");
	CSRW(stvec, (u64)guest_entry);
	int deleg = has_ext((const u8 *)fdt, "ssccfg");
	check("device tree: ssccfg and smcntrpmf together", has_ext((const u8 *)fdt, "smcntrpmf"),
	      (u64)deleg);
	if (deleg)
		check("device tree: sscsrind with ssccfg", has_ext((const u8 *)fdt, "sscsrind"), 1);
	printk("mode: deleg %s\n", deleg ? "on" : "off");
	if (deleg) {
		inhibit_discovery();
		fixed_counters();
		hpm_counters();
		overflow();
		illegal_accesses();
		sbi_coexistence();
		snapshot_window();
	} else {
		deleg_off();
	}
	printk("sbi_pmu_deleg: %d checks, %d failures\n", (long)checks, (long)failures);
	printk(failures ? "sbi_pmu_deleg: FAIL\n" : "sbi_pmu_deleg: PASS\n");
	return failures != 0;
}
