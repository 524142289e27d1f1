/*
 * pmu_pdis: Smpdis/Sspdis (Precise Decoded Instruction Sampling, draft),
 * vmm only: QEMU has no PDIS. Every check states the draft's rule (or the
 * hart's documented model of it, vcpu/src/pmu/pdis.rs) and prints PASS/FAIL.
 *
 * - COUNT increments per decoded instruction of the SEL type, only in the
 *   modes enabled by mpdisctl M/S/U and vspdisctl S/U (VS/VU); a write to
 *   spdiscounter is done instead of the writing instruction's increment
 *   (Zicsr); mcountinhibit bit 1 stops it; a wrap reloads INITVAL.
 * - The record of a sampled load/store/branch/jump (siselect 0x60): TYPE,
 *   pdispc, pdisadr1 (data address or transfer target), L1MISS on a line's
 *   first touch, L1TLBMISS, the one-hot control transfer type, EPT's prior
 *   target in pdisadr2, PA's physical address in pdisadr2 (also in VS while
 *   vspdisctl.PA = 0), vspdisctl.PA's guest physical address in VS, TS, HPM_i; OF, LCOFIP, scountovf bit 1,
 *   the skidless LCOFI.
 * - PDIS.SAMPLES/FILTERED/DROPPED (0x118, 0x11A, 0x11B), event filtering
 *   (spdisevmask/spdisevmatch), latency filtering (spdisfilter THRESH/INV),
 *   ACC.
 * - mstateen0/hstateen0 bit 53, spdisctl.M read-only 0, vspdisctl's S/U/PA,
 *   WARL SEL (reserved values keep the old one).
 */
#include "pmu.h"
#include "csr.h"

#define PD_SEL_ALL 0UL
#define PD_SEL_LOAD 1UL
#define PD_SEL_STORE 2UL
#define PD_SEL_LDST 3UL
#define PD_SEL_CTL 4UL
#define PD_HPM(i) (1UL << (i))
#define PD_MEM (1UL << 32)
#define PD_ACC (1UL << 33)
#define PD_TS (1UL << 34)
#define PD_PA (1UL << 35)
#define PD_EPT (1UL << 36)
#define PD_U (1UL << 60)
#define PD_S (1UL << 61)
#define PD_M (1UL << 62)
#define PD_OF (1UL << 63)
#define STATEEN_PDIS (1UL << 53)

#define HDR_TYPE 7UL
#define HDR_L1MISS (1UL << 39)
#define HDR_L1TLBMISS (1UL << 45)
#define HDR_CTL_TYPES (0x1fffUL << 39) /* TRET (39) .. DIRLJMP (51) */
#define HDR_TRET (1UL << 39)
#define HDR_NTBR (1UL << 40)
#define HDR_TKBR (1UL << 41)
#define HDR_DIRCALL (1UL << 45)
#define HDR_INDJMP (1UL << 46)
#define HDR_DIRJMP (1UL << 47)
#define HDR_RET (1UL << 49)

#define EV_PDIS_SAMPLES 0x118
#define EV_PDIS_FILTERED 0x11a
#define EV_PDIS_DROPPED 0x11b
#define ONLY_M (EV_SINH | EV_UINH | EV_VSINH | EV_VUINH)

#define WRAP_ON(k) ((u64)(u32)(0u - (u32)(k))) /* COUNT wraps on the k-th */

/* clang-format off */
long pd_mix_m(long, long), pd_ld_m(long, long), pd_ld(long, long),
	pd_ctl_m(long, long), pd_ls_m(long, long);
extern char pd_ld1[], pd_ld2[], pd_ld3[], pd_ld4[], pd_ld_end[],
	pd_c1[], pd_c2[], pd_c3[], pd_c4[], pd_c4j[], pd_c5[], pd_c5r[],
	pd_sub[], pd_ls1[], pd_ls2[], pd_ls3[], pd_ls4[];
u64 pd_mixbuf[8] __attribute__((aligned(64)));
/* Lines never touched before a test: 64 blocks of 512 bytes. */
u8 pd_lines[64 * 512] __attribute__((aligned(4096)));
H_CSRR_PROBE(pr_spdisctl, 0x5c2);
H_CSRW_PROBE(pw_spdisctl, 0x5c2);
H_CSRR_PROBE(pr_spdiscounter, 0x5c3);
H_CSRR_PROBE(pr_spdisevmask, 0x5c4);
H_CSRR_PROBE(pr_spdisfilter, 0x5c6);
H_CSRR_PROBE(pr_vspdisctl, 0x6c0);
__asm__(".pushsection .text\n.option push\n.option norvc\n"
	/* a0 -> spdiscounter; 13 instructions: 4 loads (ld, lw, amoadd,
	   lr), 4 stores (sd, sw, amoadd, sc), 7 load/store, 3 control
	   transfers (beqz not taken, bnez taken, j); returns spdiscounter. */
	".globl pd_mix_m\npd_mix_m:\n"
	"	csrw 0x5c3, a0\n"
	"	la t0, pd_mixbuf\n"
	"	ld t1, 0(t0)\n"
	"	lw t2, 8(t0)\n"
	"	sd t1, 16(t0)\n"
	"	sw t2, 24(t0)\n"
	"	amoadd.d t3, t1, (t0)\n"
	"	li t4, 1\n"
	"	beqz t4, 3f\n"
	"	bnez t4, 1f\n"
	"	nop\n"
	"1:	j 2f\n"
	"	nop\n"
	"2:	lr.d t5, (t0)\n"
	"	sc.d t6, t5, (t0)\n"
	"3:	csrr a0, 0x5c3\n"
	"	ret\n"
	/* pd_ld(base): loads at base, base+128 (first touch of that line),
	   base+136 (same line) and base+256. pd_ld_m(base, counter) runs it
	   in M with the PDIS counter on (mcountinhibit[1] = 0) and returns
	   spdiscounter. */
	".globl pd_ld_m\npd_ld_m:\n"
	"	mv t6, ra\n"
	"	csrw 0x5c3, a1\n"
	"	li t2, 2\n"
	"	csrc 0x320, t2\n"
	"	jal ra, pd_ld\n"
	"	csrs 0x320, t2\n"
	"	csrr a0, 0x5c3\n"
	"	jr t6\n"
	".globl pd_ld\npd_ld:\n"
	".globl pd_ld1\npd_ld1:	ld t1, 0(a0)\n"
	".globl pd_ld2\npd_ld2:	ld t1, 128(a0)\n"
	".globl pd_ld3\npd_ld3:	ld t1, 136(a0)\n"
	".globl pd_ld4\npd_ld4:	ld t1, 256(a0)\n"
	".globl pd_ld_end\npd_ld_end:\n"
	"	nop\n	nop\n	nop\n	nop\n"
	"	ret\n"
	/* Control transfers (M): 1 beqz not taken, 2 bnez taken, 3 j,
	   4 jr (indirect jump), 5 jal ra (direct call), 6 ret (return). */
	".globl pd_ctl_m\npd_ctl_m:\n"
	"	mv t5, ra\n"
	"	csrw 0x5c3, a1\n"
	"	li t2, 2\n"
	"	csrc 0x320, t2\n"
	"	li t1, 1\n"
	".globl pd_c1\npd_c1:	beqz t1, 9f\n"
	".globl pd_c2\npd_c2:	bnez t1, pd_c3\n"
	"	nop\n"
	".globl pd_c3\npd_c3:	j pd_c4\n"
	"	nop\n"
	".globl pd_c4\npd_c4:	la t3, pd_c5\n"
	".globl pd_c4j\npd_c4j:	jr t3\n"
	"	nop\n"
	".globl pd_c5\npd_c5:	jal ra, pd_sub\n"
	".globl pd_c5r\npd_c5r:	nop\n"
	"9:	li t2, 2\n"
	"	csrs 0x320, t2\n"
	"	mv ra, t5\n"
	"	csrr a0, 0x5c3\n"
	"	ret\n"
	".globl pd_sub\npd_sub:	ret\n"
	/* Load, store, load, store at a0 (M, counter a1). */
	".globl pd_ls_m\npd_ls_m:\n"
	"	csrw 0x5c3, a1\n"
	"	li t2, 2\n"
	"	csrc 0x320, t2\n"
	".globl pd_ls1\npd_ls1:	ld t1, 0(a0)\n"
	".globl pd_ls2\npd_ls2:	sd t1, 8(a0)\n"
	".globl pd_ls3\npd_ls3:	ld t1, 16(a0)\n"
	".globl pd_ls4\npd_ls4:	sd t1, 24(a0)\n"
	"	csrs 0x320, t2\n"
	"	csrr a0, 0x5c3\n"
	"	ret\n"
	".option pop\n.popsection\n");
/* clang-format on */

static unsigned next_line;
/* A block of pd_lines never accessed before. */
static u64 fresh(void)
{
	return (u64)&pd_lines[512 * (next_line++ & 63)];
}

/* The record (siselect 0x60, read from M). */
static u64 rec[6];
static void read_record(void)
{
	csrw_n(CSR_SISELECT, 0x60);
	rec[0] = csrr_n(CSR_SIREG);
	rec[1] = csrr_n(CSR_SIREG2);
	rec[2] = csrr_n(CSR_SIREG3);
	rec[3] = csrr_n(CSR_SIREG4);
	rec[4] = csrr_n(CSR_SIREG5);
	rec[5] = csrr_n(CSR_SIREG6);
}
static void clear_record(void)
{
	csrw_n(CSR_SISELECT, 0x60);
	csrw_n(CSR_SIREG, 0);
	csrw_n(CSR_SIREG2, 0);
	csrw_n(CSR_SIREG3, 0);
	csrw_n(CSR_SIREG4, 0);
	csrw_n(CSR_SIREG5, 0);
	csrw_n(CSR_SIREG6, 0);
}

/* PDIS off, OF clear, filters clear, record zero, LCOFIP clear. */
static void pd_quiet(void)
{
	pmu_quiet();
	csrw_n(CSR_MPDISCTL, 0);
	csrw_n(CSR_VSPDISCTL, 0);
	csrw_n(CSR_SPDISCOUNTER, 0);
	csrw_n(CSR_SPDISEVMASK, 0);
	csrw_n(CSR_SPDISEVMATCH, 0);
	csrw_n(CSR_SPDISFILTER, 0);
	clear_record();
	csrc_n(CSR_MIP, MIP_LCOFIP);
	csrw_n(CSR_MCOUNTINHIBIT, ~0UL);
}

static void counting_by_sel(void)
{
	rt_puts("-- COUNT by SEL in M (13 instructions between the write and "
		"the read)\n");
	static const struct {
		const char *name;
		u64 sel, want;
	} t[] = {
		{"SEL=0 all", PD_SEL_ALL, 13},
		{"SEL=1 loads (ld lw amoadd lr)", PD_SEL_LOAD, 4},
		{"SEL=2 stores (sd sw amoadd sc)", PD_SEL_STORE, 4},
		{"SEL=3 loads & stores", PD_SEL_LDST, 7},
		{"SEL=4 control transfers (beqz bnez j)", PD_SEL_CTL, 3},
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		pd_quiet();
		csrw_n(CSR_MPDISCTL, PD_M | t[i].sel);
		csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
		u64 c = pd_mix_m(100, 0);
		rt_check(t[i].name, c - 100, t[i].want);
	}
	pd_quiet();
	csrw_n(CSR_MPDISCTL, PD_M | PD_SEL_ALL);
	csrw_n(CSR_MCOUNTINHIBIT, ~0UL);
	rt_check("mcountinhibit[1] = 1: COUNT stays", pd_mix_m(100, 0), 100);
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	csrw_n(CSR_MPDISCTL, PD_S | PD_U | PD_SEL_ALL);
	csrw_n(CSR_VSPDISCTL, PD_S | PD_U);
	rt_check("M bit clear (S U, vspdisctl S U set): COUNT stays in M",
		 pd_mix_m(100, 0), 100);
	pd_quiet();
}

/* COUNT growth over pd_ld (4 loads) run in `mode` with SEL = loads. */
static u64 count_in(long mode)
{
	csrw_n(CSR_SPDISCOUNTER, 0);
	u64 base = (u64)pd_mixbuf - 128;
	if (mode == PM_M)
		return pd_ld_m(base, 0);
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	h_run((mode >> 8) & 1, mode & 3, pd_ld, base, 0);
	csrw_n(CSR_MCOUNTINHIBIT, ~0UL);
	return csrr_n(CSR_SPDISCOUNTER);
}

static void counting_by_mode(void)
{
	rt_puts("-- COUNT by mode (SEL=1, 4 loads run in each mode)\n");
	static const struct {
		const char *name;
		u64 m, vs;
	} cfg[] = {
		{"mpdisctl.M", PD_M, 0},
		{"mpdisctl.S", PD_S, 0},
		{"mpdisctl.U", PD_U, 0},
		{"vspdisctl.S", 0, PD_S},
		{"vspdisctl.U", 0, PD_U},
	};
	static const struct {
		const char *name;
		long mode;
		u64 m, vs; /* the enable bit counting that mode */
	} modes[] = {
		{"M", PM_M, PD_M, 0},	  {"S", PM_S, PD_S, 0},
		{"U", PM_U, PD_U, 0},	  {"VS", PM_VS, 0, PD_S},
		{"VU", PM_VU, 0, PD_U},
	};
	for (unsigned c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
		for (unsigned m = 0; m < sizeof modes / sizeof modes[0]; m++) {
			/* With M counting, only the M run is exact (the M code
			   around a lower-mode run loads too). */
			if (cfg[c].m == PD_M && modes[m].mode != PM_M)
				continue;
			pd_quiet();
			/* SEL is shared: vspdisctl writes it too. */
			csrw_n(CSR_VSPDISCTL, cfg[c].vs | PD_SEL_LOAD);
			csrw_n(CSR_MPDISCTL, cfg[c].m | PD_SEL_LOAD);
			u64 want = (modes[m].m & cfg[c].m) ||
						   (modes[m].vs & cfg[c].vs)
					   ? 4
					   : 0;
			char name[40], *p = name;
			for (const char *q = cfg[c].name; *q;)
				*p++ = *q++;
			for (const char *q = ", run in "; *q;)
				*p++ = *q++;
			for (const char *q = modes[m].name; *q;)
				*p++ = *q++;
			*p = 0;
			rt_check(name, count_in(modes[m].mode), want);
		}
	}
	pd_quiet();
}

static volatile u64 irqs, irq_epc;
static void m_irq(u64 cause, struct rt_frame *f)
{
	(void)cause;
	(void)f;
	csrs_n(CSR_MCOUNTINHIBIT, 2);
	irqs++;
	irq_epc = csr_read(mepc);
	csrc_n(CSR_MIP, MIP_LCOFIP);
	csrc_n(CSR_MIE, MIP_LCOFIP);
}

static void sample_loads(void)
{
	rt_puts("-- load samples in M (SEL=1)\n");
	pd_quiet();
	u64 base = fresh();
	csrw_n(CSR_MPDISCTL, PD_M | PD_SEL_LOAD | PD_PA | PD_HPM(3) | PD_HPM(4));
	pmu_wr_event(3, EV_LOADS | ONLY_M);
	pmu_wr_event(4, EV_STORES | ONLY_M);
	/* Counters 3 and 4 count (pd_ld_m enables the PDIS counter). */
	csrw_n(CSR_MCOUNTINHIBIT, ~0x18UL);
	u64 initval = 0xffffff00UL;
	u64 c = pd_ld_m(base, (initval << 32) | WRAP_ON(2));
	rt_check("wrap on load 2: COUNT = INITVAL + 2 after loads 3 and 4",
		 c, (initval << 32) | (initval + 2));
	read_record();
	rt_check("  pdishdrev.TYPE = 1 (load)", rec[0] & HDR_TYPE, 1);
	rt_check("  pdispc = load 2", rec[1], (u64)pd_ld2);
	rt_check("  pdistime = 0 (TS = 0)", rec[2], 0);
	rt_check("  pdisadr1 = its data address", rec[4], base + 128);
	rt_check("  pdisadr2 = its physical address (PA = 1, M)", rec[5],
		 base + 128);
	rt_check("  L1MISS (first touch of the line)", rec[0] & HDR_L1MISS,
		 HDR_L1MISS);
	rt_check("  HPM3 (counter 3 counts loads in M)", rec[0] & PD_HPM(3),
		 PD_HPM(3));
	rt_check("  HPM4 clear (counter 4 counts stores)", rec[0] & PD_HPM(4),
		 0);
	rt_check("  pdislat.TOTAL > 1 (a miss)", (rec[3] & 0xfff) > 1, 1);
	rt_check("  mpdisctl.OF", csrr_n(CSR_MPDISCTL) & PD_OF, PD_OF);
	rt_check("  mip.LCOFIP", csrr_n(CSR_MIP) & MIP_LCOFIP, MIP_LCOFIP);
	rt_check("  scountovf bit 1 (M)", csrr_n(CSR_SCOUNTOVF) & 2, 2);
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0 | STATEEN_PDIS);
	pmu_try(PM_S, pr_scountovf, 0);
	rt_check("  scountovf bit 1 from S (mstateen0.PDIS = 1)", pmu_val & 2,
		 2);
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	pmu_try(PM_S, pr_scountovf, 0);
	rt_check("  scountovf bit 1 from S (mstateen0.PDIS = 0)", pmu_val & 2,
		 0);

	pd_quiet();
	base = fresh();
	csrw_n(CSR_MPDISCTL, PD_M | PD_SEL_LOAD | PD_TS);
	pd_ld_m(base, WRAP_ON(3));
	read_record();
	rt_check("wrap on load 3 (same line as load 2): pdispc", rec[1],
		 (u64)pd_ld3);
	rt_check("  pdisadr1", rec[4], base + 136);
	rt_check("  L1MISS clear", rec[0] & HDR_L1MISS, 0);
	rt_check("  pdisadr2 = 0 (PA = 0)", rec[5], 0);
	rt_check_true("  pdistime != 0 (TS = 1)", rec[2] != 0);

	/* mstateen0.PDIS = 1 (PDIS in S): counter 3 must be delegated. */
	static const struct {
		const char *name;
		u64 envcfg, mcounteren, want;
	} hpm[] = {
		{"PDIS in S, CDE = 0: HPM3 clear (counter 3 in M)", 0, 0, 0},
		{"PDIS in S, CDE = 1, mcounteren bit 3: HPM3 set", MENVCFG_CDE,
		 8, PD_HPM(3)},
	};
	for (unsigned i = 0; i < 2; i++) {
		pd_quiet();
		csrw_n(CSR_MSTATEEN0,
		       STATEEN_CSRIND | STATEEN_SE0 | STATEEN_PDIS);
		csrw_n(CSR_MENVCFG, hpm[i].envcfg);
		csrw_n(CSR_MCOUNTEREN, hpm[i].mcounteren);
		csrw_n(CSR_MPDISCTL, PD_M | PD_SEL_LOAD | PD_HPM(3));
		pmu_wr_event(3, EV_LOADS | ONLY_M);
		csrw_n(CSR_MCOUNTINHIBIT, ~8UL);
		pd_ld_m(fresh(), WRAP_ON(1));
		read_record();
		rt_check(hpm[i].name, rec[0] & PD_HPM(3), hpm[i].want);
		csrw_n(CSR_MCOUNTEREN, 0);
		csrw_n(CSR_MENVCFG, 0);
		csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	}

	rt_puts("-- the LCOFI of a qualified sample is skidless\n");
	pd_quiet();
	irqs = irq_epc = 0;
	h_m_irq = m_irq;
	csrw_n(CSR_MPDISCTL, PD_M | PD_SEL_LOAD);
	csrs_n(CSR_MIE, MIP_LCOFIP);
	csr_set(mstatus, MSTATUS_MIE);
	pd_ld_m(fresh(), WRAP_ON(2));
	csr_clear(mstatus, MSTATUS_MIE);
	h_m_irq = 0;
	rt_check("LCOFIs taken", irqs, 1);
	rt_check("  mepc = the instruction after the sampled load", irq_epc,
		 (u64)pd_ld3);
	pd_quiet();
}

static void sample_ctl(void)
{
	rt_puts("-- control transfer samples in M (SEL=4, EPT=1)\n");
	static const struct {
		const char *name;
		char *pc;
		u64 type;
		u64 adr1;
	} t[] = {
		{"1 beqz not taken", pd_c1, HDR_NTBR, 0},
		{"2 bnez taken", pd_c2, HDR_TKBR, (u64)pd_c3},
		{"3 j", pd_c3, HDR_DIRJMP, (u64)pd_c4},
		{"4 jr t3", pd_c4j, HDR_INDJMP, (u64)pd_c5},
		{"5 jal ra", pd_c5, HDR_DIRCALL, (u64)pd_sub},
		{"6 ret", pd_sub, HDR_RET, (u64)pd_c5r},
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		pd_quiet();
		csrw_n(CSR_MPDISCTL, PD_M | PD_SEL_CTL | PD_EPT);
		pd_ctl_m(0, WRAP_ON(i + 1));
		read_record();
		rt_puts(t[i].name);
		rt_puts(":\n");
		rt_check("  TYPE = 4", rec[0] & HDR_TYPE, 4);
		rt_check("  pdispc", rec[1], (u64)t[i].pc);
		rt_check("  transfer type bit", rec[0] & HDR_CTL_TYPES,
			 t[i].type);
		rt_check("  pdisadr1 = the target (0: not taken)", rec[4],
			 t[i].adr1);
		if (i == 3)
			rt_check("  EPT: pdisadr2 = the prior target (j's)",
				 rec[5], (u64)pd_c4);
		if (i == 5)
			rt_check("  EPT: pdisadr2 = the prior target (jal's)",
				 rec[5], (u64)pd_sub);
	}
	pd_quiet();
	csrw_n(CSR_MPDISCTL, PD_M | PD_SEL_CTL);
	pd_ctl_m(0, WRAP_ON(4));
	read_record();
	rt_check("4 jr t3 with EPT = 0: pdisadr2 = 0", rec[5], 0);
	pd_quiet();
}

/* Counters 5, 6, 7: PDIS.SAMPLES, FILTERED, DROPPED (M only). */
static void pd_events_on(void)
{
	pmu_wr_event(5, EV_PDIS_SAMPLES | ONLY_M);
	pmu_wr_event(6, EV_PDIS_FILTERED | ONLY_M);
	pmu_wr_event(7, EV_PDIS_DROPPED | ONLY_M);
	pmu_wr_counter(5, 0);
	pmu_wr_counter(6, 0);
	pmu_wr_counter(7, 0);
}

static void check_events(const char *name, u64 s, u64 f, u64 d)
{
	rt_puts(name);
	rt_puts(":\n");
	rt_check("  PDIS.SAMPLES (0x118)", pmu_rd_counter(5), s);
	rt_check("  PDIS.FILTERED (0x11A)", pmu_rd_counter(6), f);
	rt_check("  PDIS.DROPPED (0x11B)", pmu_rd_counter(7), d);
}

/* pd_ls_m with the PDIS counter on; counters 5-7 count meanwhile. */
static void run_ls(u64 ctl, u64 counter)
{
	csrw_n(CSR_MPDISCTL, ctl);
	csrw_n(CSR_MCOUNTINHIBIT, ~0UL & ~0xe0UL);
	pd_ls_m((u64)pd_mixbuf, counter);
	csrw_n(CSR_MCOUNTINHIBIT, ~0UL);
}

static void filtering(void)
{
	rt_puts("-- event filter: spdisevmask = TYPE, spdisevmatch = 2 "
		"(stores); SEL=3\n");
	static const struct {
		const char *name;
		u64 acc, k;
		char *pc; /* 0: no record */
		u64 s, f;
	} t[] = {
		{"wrap on load 1, ACC = 0", 0, 1, 0, 0, 1},
		{"wrap on load 1, ACC = 1 (the store after it is sampled)",
		 PD_ACC, 1, pd_ls2, 1, 1},
		{"wrap on store 2, ACC = 0", 0, 2, pd_ls2, 1, 0},
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		pd_quiet();
		pd_events_on();
		csrw_n(CSR_SPDISEVMASK, HDR_TYPE);
		csrw_n(CSR_SPDISEVMATCH, 2);
		run_ls(PD_M | PD_SEL_LDST | t[i].acc, WRAP_ON(t[i].k));
		check_events(t[i].name, t[i].s, t[i].f, 0);
		read_record();
		rt_check("  pdispc (0: nothing recorded)", rec[1],
			 (u64)t[i].pc);
		rt_check("  OF", csrr_n(CSR_MPDISCTL) >> 63, t[i].pc != 0);
		rt_check("  LCOFIP", (csrr_n(CSR_MIP) & MIP_LCOFIP) != 0,
			 t[i].pc != 0);
	}
	/* OF still 1: the next qualified sample is dropped. */
	csrw_n(CSR_SPDISEVMASK, 0);
	run_ls(PD_M | PD_SEL_LDST | PD_OF, WRAP_ON(4));
	check_events("OF = 1, wrap on store 4 (qualified): dropped", 1, 0, 1);
	read_record();
	rt_check("  the record is kept (store 2)", rec[1], (u64)pd_ls2);

	rt_puts("-- latency filter (LATSEL = 0, total; a hit takes 1 cycle in "
		"the cost model, a miss more)\n");
	static const struct {
		const char *name;
		u64 filter, k;
		int qualified;
	} l[] = {
		{"THRESH = 2: load 3 (hit) filtered", 2, 3, 0},
		{"THRESH = 2 INV: load 3 (hit) qualified", 2 | (1 << 12), 3, 1},
		{"THRESH = 2: load 2 (miss) qualified", 2, 2, 1},
		{"THRESH = 2 INV: load 2 (miss) filtered", 2 | (1 << 12), 2, 0},
	};
	for (unsigned i = 0; i < sizeof l / sizeof l[0]; i++) {
		pd_quiet();
		pd_events_on();
		csrw_n(CSR_SPDISFILTER, l[i].filter);
		csrw_n(CSR_MPDISCTL, PD_M | PD_SEL_LOAD);
		csrw_n(CSR_MCOUNTINHIBIT, ~0UL & ~0xe0UL);
		pd_ld_m(fresh(), WRAP_ON(l[i].k));
		csrw_n(CSR_MCOUNTINHIBIT, ~0UL);
		check_events(l[i].name, l[i].qualified, !l[i].qualified, 0);
		read_record();
		if (l[i].qualified) {
			u64 total = rec[3] & 0xfff;
			rt_check("  recorded TOTAL agrees with the filter",
				 (total >= 2) != ((l[i].filter >> 12) & 1), 1);
		}
	}
	pd_quiet();
	csrw_n(CSR_SPDISFILTER, (1UL << 13) | 5);
	rt_check("LATSEL = 1 (not implemented) reads 0",
		 csrr_n(CSR_SPDISFILTER), 5);
	csrw_n(CSR_SPDISFILTER, (3UL << 13) | 5);
	rt_check("LATSEL = 3 (execution) is kept", csrr_n(CSR_SPDISFILTER),
		 (3UL << 13) | 5);
	pd_quiet();
}

/* Sv39 for S: VA 0xC000_0000 -> PA 0x8000_0000 (1 GiB), plus identity. */
static u64 s_root[512] __attribute__((aligned(4096)));

static void translated(void)
{
	rt_puts("-- PA: physical addresses of translated loads\n");
	for (int i = 0; i < 512; i++)
		s_root[i] = 0;
	s_root[0] = h_pte_leaf(0, PTE_R | PTE_W | PTE_X | PTE_AD);
	s_root[2] = h_pte_leaf(0x80000000UL, PTE_R | PTE_W | PTE_X | PTE_AD);
	s_root[3] = h_pte_leaf(0x80000000UL, PTE_R | PTE_W | PTE_AD);
	csrw_n(CSR_SATP, SATP_SV39 | ((u64)s_root >> 12));
	__asm__ volatile("sfence.vma" ::: "memory");
	pd_quiet();
	u64 base = fresh();
	u64 va = base + 0x40000000UL;
	csrw_n(CSR_MPDISCTL, PD_S | PD_SEL_LOAD | PD_PA);
	csrw_n(CSR_SPDISCOUNTER, WRAP_ON(1));
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	h_reset();
	h_run(0, MODE_S, pd_ld, va, 0);
	csrw_n(CSR_MCOUNTINHIBIT, ~0UL);
	read_record();
	rt_check("S, Sv39, load 1 at VA+0x40000000: pdispc", rec[1],
		 (u64)pd_ld1);
	rt_check("  pdisadr1 = the virtual address", rec[4], va);
	rt_check("  pdisadr2 = the physical address", rec[5], base);
	rt_check("  L1TLBMISS (first access to the page)",
		 rec[0] & HDR_L1TLBMISS, HDR_L1TLBMISS);
	csrw_n(CSR_SATP, 0);
	__asm__ volatile("sfence.vma" ::: "memory");

	/* G-stage: GPA 0xC000_0000 -> HPA 0x8000_0000. */
	h_groot[3] = h_pte_leaf(0x80000000UL, PTE_URWX);
	h_fence_gvma_all();
	pd_quiet();
	base = fresh();
	u64 gpa = base + 0x40000000UL;
	csrw_n(CSR_MPDISCTL, PD_SEL_LOAD | PD_PA);
	csrw_n(CSR_VSPDISCTL, PD_S | PD_SEL_LOAD);
	rt_check("vspdisctl.PA = 0 written", csrr_n(CSR_VSPDISCTL) & PD_PA, 0);
	rt_check("  mpdisctl.PA unchanged by the vspdisctl write",
		 csrr_n(CSR_MPDISCTL) & PD_PA, PD_PA);
	csrw_n(CSR_SPDISCOUNTER, WRAP_ON(1));
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	h_reset();
	h_run(1, MODE_S, pd_ld, gpa, 0);
	csrw_n(CSR_MCOUNTINHIBIT, ~0UL);
	read_record();
	rt_check("VS (vsatp Bare), load 1 at GPA+0x40000000: pdispc", rec[1],
		 (u64)pd_ld1);
	rt_check("  pdisadr1 = the (guest) virtual address", rec[4], gpa);
	rt_check("  pdisadr2 = the physical address (mpdisctl.PA = 1, "
		 "vspdisctl.PA = 0)",
		 rec[5], base);
	/* vspdisctl.PA = 1: the guest physical address, whatever mpdisctl.PA. */
	pd_quiet();
	csrw_n(CSR_MPDISCTL, PD_SEL_LOAD | PD_PA);
	csrw_n(CSR_VSPDISCTL, PD_S | PD_PA | PD_SEL_LOAD);
	rt_check("vspdisctl.PA is writable", csrr_n(CSR_VSPDISCTL) & PD_PA,
		 PD_PA);
	csrw_n(CSR_SPDISCOUNTER, WRAP_ON(1));
	csrw_n(CSR_MCOUNTINHIBIT, ~2UL);
	h_reset();
	h_run(1, MODE_S, pd_ld, gpa, 0);
	csrw_n(CSR_MCOUNTINHIBIT, ~0UL);
	read_record();
	rt_check("VS, vspdisctl.PA = 1: pdisadr2 = the guest physical address",
		 rec[5], gpa);
	csrw_n(CSR_VSPDISCTL, 0);
	h_groot[3] = 0;
	h_fence_gvma_all();
	pd_quiet();
}

static void expect_outcome(const char *name, long mode, rt_fn fn, long a0,
			   u64 want)
{
	rt_check(name, pmu_try(mode, fn, a0), want);
}

static void csrs(void)
{
	rt_puts("-- CSRs (outcome: ~0 = no trap, 2 illegal, 22 virtual)\n");
	const u64 ok = (u64)-1;
	pd_quiet();
	csrw_n(CSR_MPDISCTL, PD_SEL_STORE);
	csrw_n(CSR_MPDISCTL, 5);
	rt_check("mpdisctl SEL = 5 (reserved) keeps 2", csrr_n(CSR_MPDISCTL),
		 2);
	csrw_n(CSR_MPDISCTL, 7);
	rt_check("mpdisctl SEL = 7 (reserved) keeps 2", csrr_n(CSR_MPDISCTL),
		 2);
	csrw_n(CSR_MPDISCTL, PD_SEL_CTL | PD_MEM);
	rt_check("mpdisctl SEL = 4 written, MEM hardwired 0",
		 csrr_n(CSR_MPDISCTL), 4);
	csrw_n(CSR_MPDISCTL, PD_M);
	rt_check("spdisctl.M reads 0 (mpdisctl.M = 1)",
		 csrr_n(CSR_SPDISCTL) & PD_M, 0);
	csrw_n(CSR_SPDISCTL, PD_S);
	rt_check("spdisctl write (M = 0): mpdisctl.M kept",
		 csrr_n(CSR_MPDISCTL), PD_M | PD_S);
	csrw_n(CSR_MPDISCTL, 0);
	csrw_n(CSR_SPDISCTL, PD_M | PD_U);
	rt_check("spdisctl write (M = 1): mpdisctl.M stays 0",
		 csrr_n(CSR_MPDISCTL), PD_U);
	csrw_n(CSR_MPDISCTL, PD_M | PD_S);
	csrw_n(CSR_VSPDISCTL, PD_U | PD_SEL_LOAD | PD_M);
	rt_check("vspdisctl = its own U, the shared SEL, M read-only 0",
		 csrr_n(CSR_VSPDISCTL), PD_U | PD_SEL_LOAD);
	rt_check("  mpdisctl: S and M kept, SEL shared",
		 csrr_n(CSR_MPDISCTL), PD_M | PD_S | PD_SEL_LOAD);

	rt_puts("mstateen0.PDIS = 0:\n");
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	csrw_n(CSR_HSTATEEN0, STATEEN_CSRIND | STATEEN_SE0 | STATEEN_PDIS);
	rt_check("  hstateen0.PDIS read-only 0", csrr_n(CSR_HSTATEEN0) &
		 STATEEN_PDIS, 0);
	expect_outcome("  S: spdisctl", PM_S, pr_spdisctl, 0, CAUSE_ILLEGAL);
	expect_outcome("  S: spdiscounter", PM_S, pr_spdiscounter, 0,
		       CAUSE_ILLEGAL);
	expect_outcome("  S: spdisevmask", PM_S, pr_spdisevmask, 0,
		       CAUSE_ILLEGAL);
	expect_outcome("  S: spdisfilter", PM_S, pr_spdisfilter, 0,
		       CAUSE_ILLEGAL);
	csrw_n(CSR_SISELECT, 0x60);
	expect_outcome("  S: sireg (siselect 0x60)", PM_S, pr_sireg, 0,
		       CAUSE_ILLEGAL);
	expect_outcome("  VS: spdisctl", PM_VS, pr_spdisctl, 0, CAUSE_ILLEGAL);
	expect_outcome("  VS: spdiscounter", PM_VS, pr_spdiscounter, 0,
		       CAUSE_ILLEGAL);

	rt_puts("mstateen0.PDIS = 1, hstateen0.PDIS = 0:\n");
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0 | STATEEN_PDIS);
	csrw_n(CSR_HSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	expect_outcome("  S: spdisctl", PM_S, pr_spdisctl, 0, ok);
	expect_outcome("  S: spdiscounter", PM_S, pr_spdiscounter, 0, ok);
	expect_outcome("  S: sireg (siselect 0x60)", PM_S, pr_sireg, 0, ok);
	expect_outcome("  S: write spdisctl", PM_S, pw_spdisctl, PD_S | 1, ok);
	rt_check("    mpdisctl after it (M kept)", csrr_n(CSR_MPDISCTL),
		 PD_M | PD_S | 1);
	expect_outcome("  VS: spdisctl", PM_VS, pr_spdisctl, 0,
		       CAUSE_VIRT_INSN);
	expect_outcome("  VS: spdiscounter", PM_VS, pr_spdiscounter, 0,
		       CAUSE_VIRT_INSN);
	expect_outcome("  VS: vspdisctl (an HS CSR)", PM_VS, pr_vspdisctl, 0,
		       CAUSE_VIRT_INSN);

	rt_puts("mstateen0.PDIS = 1, hstateen0.PDIS = 1:\n");
	csrw_n(CSR_HSTATEEN0, STATEEN_CSRIND | STATEEN_SE0 | STATEEN_PDIS);
	csrw_n(CSR_VSPDISCTL, PD_U | 1);
	expect_outcome("  VS: spdisctl", PM_VS, pr_spdisctl, 0, ok);
	rt_check("    reads vspdisctl", pmu_val, csrr_n(CSR_VSPDISCTL));
	rt_check("    (which is not spdisctl)",
		 csrr_n(CSR_SPDISCTL) != csrr_n(CSR_VSPDISCTL), 1);
	expect_outcome("  VS: spdiscounter", PM_VS, pr_spdiscounter, 0, ok);

	rt_puts("scountinhibit bit 1 (CDE = 1):\n");
	csrw_n(CSR_MENVCFG, MENVCFG_CDE);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	expect_outcome("  S: write scountinhibit = 2 (PDIS = 1)", PM_S,
		       pw_scountinhibit, 2, ok);
	rt_check("    mcountinhibit bit 1", csrr_n(CSR_MCOUNTINHIBIT) & 2, 2);
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	expect_outcome("  S: write scountinhibit = 2 (PDIS = 0)", PM_S,
		       pw_scountinhibit, 2, ok);
	rt_check("    mcountinhibit bit 1 unchanged",
		 csrr_n(CSR_MCOUNTINHIBIT) & 2, 0);
	pmu_try(PM_S, pr_scountinhibit, 0);
	rt_check("    scountinhibit bit 1 reads 0", pmu_val & 2, 0);
	csrw_n(CSR_MENVCFG, 0);
	csrw_n(CSR_HSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	pd_quiet();
}

int main(void)
{
	pmu_start("pmu_pdis");
	rt_trap_ok = 1;
	csrw_n(CSR_MSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	csrw_n(CSR_HSTATEEN0, STATEEN_CSRIND | STATEEN_SE0);
	counting_by_sel();
	counting_by_mode();
	sample_loads();
	sample_ctl();
	filtering();
	translated();
	csrs();
	csrw_n(CSR_MCOUNTINHIBIT, 0);
	return rt_finish("pmu_pdis");
}
