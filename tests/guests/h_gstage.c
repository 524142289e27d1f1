/*
 * h_gstage: two-stage address translation (VS-stage vsatp, G-stage hgatp
 * Sv39x4) for VS/VU loads, stores and fetches, and guest-page faults.
 *
 * G-stage (hgatp Sv39x4, 16 KiB root h_groot, GPA bits 40:0):
 *   GPA 0 and 0x8000_0000 (1 GiB each)   identity, U RWX (h_init)
 *   GPA 0x1_0000_0000 + n*4 KiB          4 KiB pages G_* below (gs_l0)
 *   GPA 0x1_0020_0000 (2 MiB)            megapage onto PA 0x8120_0000
 *   GPA 0x100_0000_0000 (1 GiB)          root index 1024 (GPA bit 40, an
 *                                        "x4" bit) onto PA 0x8000_0000
 * VS-stage (vsatp Sv39, tables in identity-mapped guest RAM):
 *   VA 0x8000_0000 (1 GiB)               S RWX identity (code, data, stacks)
 *   VA 0x4000_0000 + n*4 KiB             V_* pages onto the G_* GPAs
 *   VA 0x4020_0000 (2 MiB)               level-1 pointer to an unmapped GPA
 * Guest-page faults and VS-stage page faults go to HS (medeleg) unless
 * stated; htval, htinst, hstatus.GVA/SPV are recorded by the HS handler.
 */
#include "h.h"

#define GPA_PAGES 0x100000000UL
#define GPA(n) (GPA_PAGES + (u64)(n) * 4096)
#define G_RW 0
#define G_RO 1
#define G_XO 2
#define G_NOU 3
#define G_INV 4
#define G_NOA 5
#define G_REMAP 6
#define G_RX 7
#define G_NOD 8
#define GPA_MEGA 0x100200000UL
#define PA_MEGA 0x81200000UL
#define GPA_BIT41 0x20000000000UL

#define VA_PAGES 0x40000000UL
#define VA(n) (VA_PAGES + (u64)(n) * 4096)
#define V_RW 0    /* -> G_RW */
#define V_GINV 1  /* -> G_INV: VS-stage fine, G-stage faults */
#define V_URW 2   /* U page -> G_RW (SUM) */
#define V_XO 3    /* VS execute-only -> G_RX (MXR) */
#define V_INV 4   /* VS invalid */
#define V_GRO 5   /* VS RW -> G_RO */
#define VA_IMPLICIT 0x40200000UL

static u64 gs_l1[512] __attribute__((aligned(4096)));
static u64 gs_l0[512] __attribute__((aligned(4096)));
static u64 vs_root[512] __attribute__((aligned(4096)));
static u64 vs_l1[512] __attribute__((aligned(4096)));
static u64 vs_l0[512] __attribute__((aligned(4096)));
static u8 pages[8][4096] __attribute__((aligned(4096)));

#define MEDELEG_GPF                                                            \
	((1UL << CAUSE_FETCH_GPF) | (1UL << CAUSE_LOAD_GPF) |                  \
	 (1UL << CAUSE_STORE_GPF) | (1UL << CAUSE_FETCH_PF) |                  \
	 (1UL << CAUSE_LOAD_PF) | (1UL << CAUSE_STORE_PF))

static void build(void)
{
	u64 urw = PTE_U | PTE_R | PTE_W | PTE_AD;
	h_groot[4] = h_pte_table(gs_l1);
	h_groot[1024] = h_pte_leaf(0x80000000UL, PTE_URWX);
	gs_l1[0] = h_pte_table(gs_l0);
	gs_l1[1] = h_pte_leaf(PA_MEGA, urw);
	gs_l0[G_RW] = h_pte_leaf((u64)pages[0], urw);
	gs_l0[G_RO] = h_pte_leaf((u64)pages[1], PTE_U | PTE_R | PTE_A);
	gs_l0[G_XO] = h_pte_leaf((u64)pages[2], PTE_U | PTE_X | PTE_A);
	gs_l0[G_NOU] = h_pte_leaf((u64)pages[3], PTE_R | PTE_W | PTE_AD);
	gs_l0[G_NOA] = h_pte_leaf((u64)pages[4], PTE_U | PTE_R | PTE_W);
	gs_l0[G_REMAP] = h_pte_leaf((u64)pages[5], urw);
	gs_l0[G_RX] = h_pte_leaf((u64)pages[2], PTE_U | PTE_R | PTE_X | PTE_A);
	gs_l0[G_NOD] = h_pte_leaf((u64)pages[7], PTE_U | PTE_R | PTE_W | PTE_A);

	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 512; j++)
			((u64 *)pages[i])[j] = 0x1000000000000000UL * (i + 1) + j;
	/* Code in pages[2]: a copy of hp_ret42 (li a1, 42; ret). */
	memcpy(pages[2], (void *)hp_ret42, 8);
	__asm__ volatile("fence.i");
	*(volatile u64 *)(PA_MEGA + 0x1008) = 0x3e9a3e9a3e9aUL;

	vs_root[2] = h_pte_leaf(0x80000000UL, PTE_R | PTE_W | PTE_X | PTE_AD);
	vs_root[1] = h_pte_table(vs_l1);
	vs_l1[0] = h_pte_table(vs_l0);
	vs_l1[1] = h_pte_table((void *)GPA(G_INV)); /* implicit-access fault */
	vs_l0[V_RW] = h_pte_leaf(GPA(G_RW), PTE_R | PTE_W | PTE_AD);
	vs_l0[V_GINV] = h_pte_leaf(GPA(G_INV), PTE_R | PTE_W | PTE_AD);
	vs_l0[V_URW] = h_pte_leaf(GPA(G_RW), PTE_U | PTE_R | PTE_W | PTE_AD);
	vs_l0[V_XO] = h_pte_leaf(GPA(G_RX), PTE_X | PTE_A);
	vs_l0[V_GRO] = h_pte_leaf(GPA(G_RO), PTE_R | PTE_W | PTE_AD);
	h_fence_gvma_all();
}

static void vsatp_sv39(void)
{
	csrw_n(CSR_VSATP, SATP_SV39 | ((u64)vs_root >> 12));
	h_fence_vvma_all();
}
static void vsatp_bare(void)
{
	csrw_n(CSR_VSATP, 0);
	h_fence_vvma_all();
}

static u64 pageval(int i, int j)
{
	return 0x1000000000000000UL * (i + 1) + j;
}

#define LD_XFORM h_xform_load(h_insn_at(hp_ld))
#define SD_XFORM h_xform_store(h_insn_at(hp_sd))

static void test_bare_vsatp(void)
{
	h_reset();
	rt_check("VS ld G_RW", run_vs(hp_ld, GPA(G_RW) + 8, 0), pageval(0, 1));
	run_vs(hp_sd, GPA(G_RW) + 16, 0xabcdef);
	rt_check("VS sd G_RW reaches PA", ((u64 *)pages[0])[2], 0xabcdef);
	rt_check("VS ld G_RO", run_vs(hp_ld, GPA(G_RO), 0), pageval(1, 0));
	rt_check("VU ld G_RW", run_vu(hp_ld, GPA(G_RW) + 8, 0), pageval(0, 1));
	rt_check("VS lw megapage", run_vs(hp_lw, GPA_MEGA + 0x1008, 0),
		 0x3e9a3e9a3e9aUL & 0xffffffff);
	/* (GPA bit 40 through root index 1024: h_strict.) */
	rt_check("VS fetch G_XO", run_vs(hp_fetch, GPA(G_XO), 0), 42);
	rt_check("no faults so far", h_s.count + h_m.count, 0);

	h_reset();
	run_vs(hp_sd, GPA(G_RO) + 8, 1);
	h_check_gpf("VS sd G_RO -> store GPF", &h_s, CAUSE_STORE_GPF,
		    GPA(G_RO) + 8, GPA(G_RO) + 8, SD_XFORM);
	rt_check("  hstatus.SPVP = 1", (h_s.hstatus & HSTATUS_SPVP) != 0, 1);
	rt_check("  page unchanged", ((u64 *)pages[1])[1], pageval(1, 1));
	h_reset();
	run_vs(hp_ld, GPA(G_INV) + 0x18, 0);
	h_check_gpf("VS ld G_INV -> load GPF", &h_s, CAUSE_LOAD_GPF,
		    GPA(G_INV) + 0x18, GPA(G_INV) + 0x18, LD_XFORM);
	h_reset();
	rt_check("VS fetch G_RW returns", run_vs(hp_fetch, GPA(G_RW), 0), 0);
	h_check_gpf("VS fetch G_RW (no X) -> fetch GPF", &h_s, CAUSE_FETCH_GPF,
		    GPA(G_RW), GPA(G_RW), 0);
	h_reset();
	run_vs(hp_ld, GPA(G_NOU), 0);
	h_check_gpf("VS ld G-stage U=0 -> load GPF", &h_s, CAUSE_LOAD_GPF,
		    GPA(G_NOU), GPA(G_NOU), LD_XFORM);
	h_reset();
	run_vu(hp_sd, GPA(G_NOU) + 8, 0);
	h_check_gpf("VU sd G-stage U=0 -> store GPF", &h_s, CAUSE_STORE_GPF,
		    GPA(G_NOU) + 8, GPA(G_NOU) + 8, SD_XFORM);
	rt_check("  hstatus.SPVP = 0 (VU)", (h_s.hstatus & HSTATUS_SPVP) != 0,
		 0);
	h_reset();
	run_vs(hp_ld, GPA_BIT41 + 0x40, 0);
	h_check_gpf("VS ld GPA bit 41 -> load GPF", &h_s, CAUSE_LOAD_GPF,
		    GPA_BIT41 + 0x40, GPA_BIT41 + 0x40, LD_XFORM);

	/* G-stage X-only page: not readable (MXR effects: h_strict). */
	h_reset();
	run_vs(hp_ld, GPA(G_XO), 0);
	h_check_gpf("VS ld G-stage X-only -> load GPF", &h_s, CAUSE_LOAD_GPF,
		    GPA(G_XO), GPA(G_XO), LD_XFORM);

	/* Not delegated: to M with mtval2 / mstatus.GVA / MPV. */
	csr_write(medeleg, 0);
	h_reset();
	run_vs(hp_lb, GPA(G_INV) + 3, 0);
	h_check_gpf("VS lb G_INV -> M (load GPF)", &h_m, CAUSE_LOAD_GPF,
		    GPA(G_INV) + 3, GPA(G_INV) + 3,
		    h_xform_load(h_insn_at(hp_lb)));
	rt_check("  mstatus.MPP = S", (h_m.status >> 11) & 3, 1);
	h_reset();
	rt_check("HS ld GPA (no G-stage for V=0)",
		 run_hs(hp_ld, (u64)pages[0] + 8, 0), pageval(0, 1));
	csr_write(medeleg, MEDELEG_GPF);
}

static void test_gstage_ad_fence(void)
{
	/* G-stage A/D: hardware update or guest-page fault, both allowed. */
	h_reset();
	u64 v = (u64)run_vs(hp_ld, GPA(G_NOA) + 8, 0);
	if (h_s.count) {
		rt_puts("info G-stage A=0 load: guest-page fault\n");
		h_check_gpf("VS ld G-stage A=0 -> load GPF", &h_s,
			    CAUSE_LOAD_GPF, GPA(G_NOA) + 8, GPA(G_NOA) + 8,
			    LD_XFORM);
	} else {
		rt_puts("info G-stage A=0 load: A set by hardware\n");
		rt_check("VS ld G-stage A=0 value", v, pageval(4, 1));
		rt_check("  G-stage PTE A set", (gs_l0[G_NOA] & PTE_A) != 0, 1);
	}
	h_reset();
	run_vs(hp_sd, GPA(G_NOD) + 8, 0x77);
	if (h_s.count) {
		rt_puts("info G-stage D=0 store: guest-page fault\n");
		h_check_gpf("VS sd G-stage D=0 -> store GPF", &h_s,
			    CAUSE_STORE_GPF, GPA(G_NOD) + 8, GPA(G_NOD) + 8,
			    SD_XFORM);
	} else {
		rt_puts("info G-stage D=0 store: D set by hardware\n");
		rt_check("VS sd G-stage D=0 value", ((u64 *)pages[7])[1], 0x77);
		rt_check("  G-stage PTE D set", (gs_l0[G_NOD] & PTE_D) != 0, 1);
	}

	/* HFENCE.GVMA after changing a G-stage leaf. */
	h_reset();
	rt_check("VS ld G_REMAP before", run_vs(hp_ld, GPA(G_REMAP), 0),
		 pageval(5, 0));
	gs_l0[G_REMAP] = h_pte_leaf((u64)pages[6], PTE_U | PTE_R | PTE_W | PTE_AD);
	run_hs(hp_hfence_gvma, GPA(G_REMAP) >> 2, 0); /* by GPA, all VMIDs */
	rt_check("VS ld G_REMAP after hfence.gvma (HS, gaddr)",
		 run_vs(hp_ld, GPA(G_REMAP), 0), pageval(6, 0));
	gs_l0[G_REMAP] = 0;
	h_fence_gvma_all();
	run_vs(hp_ld, GPA(G_REMAP), 0);
	h_check_gpf("VS ld G_REMAP after invalidation + hfence.gvma", &h_s,
		    CAUSE_LOAD_GPF, GPA(G_REMAP), GPA(G_REMAP), LD_XFORM);
	gs_l0[G_REMAP] = h_pte_leaf((u64)pages[5], PTE_U | PTE_R | PTE_W | PTE_AD);
	h_fence_gvma_all();
	rt_check("no unexpected M traps", h_m.count, 0);
}

static void test_sv39_vsatp(void)
{
	vsatp_sv39();
	h_reset();
	rt_check("VS Sv39 ld V_RW (VA->GPA->PA)", run_vs(hp_ld, VA(V_RW) + 8, 0),
		 pageval(0, 1));
	rt_check("VS Sv39 ld V_GRO", run_vs(hp_ld, VA(V_GRO) + 8, 0),
		 pageval(1, 1));
	rt_check("no faults", h_s.count + h_m.count, 0);

	h_reset();
	run_vs(hp_ld, VA(V_GINV) + 0x20, 0);
	h_check_gpf("VS Sv39 ld, G-stage invalid -> load GPF", &h_s,
		    CAUSE_LOAD_GPF, VA(V_GINV) + 0x20, GPA(G_INV) + 0x20,
		    LD_XFORM);
	h_reset();
	run_vs(hp_sd, VA(V_GRO) + 0x20, 0);
	h_check_gpf("VS Sv39 sd, VS RW but G-stage RO -> store GPF", &h_s,
		    CAUSE_STORE_GPF, VA(V_GRO) + 0x20, GPA(G_RO) + 0x20,
		    SD_XFORM);

	/* VS-stage page fault (not a guest-page fault): to HS, htval = 0. */
	h_reset();
	run_vs(hp_ld, VA(V_INV), 0);
	rt_check("VS Sv39 ld VS-invalid -> load PF to HS",
		 h_s.count ? h_s.cause : ~0UL, CAUSE_LOAD_PF);
	rt_check("  stval = VA", h_s.tval, VA(V_INV));
	rt_check("  htval = 0", h_s.tval2, 0);
	rt_check("  hstatus.GVA = 1", (h_s.hstatus & HSTATUS_GVA) != 0, 1);
	rt_check("  hstatus.SPV = 1", (h_s.hstatus & HSTATUS_SPV) != 0, 1);
	/* ... and with hedeleg[13] to VS. */
	csrw_n(CSR_HEDELEG, 1UL << CAUSE_LOAD_PF);
	h_reset();
	run_vs(hp_ld, VA(V_INV) + 8, 0);
	rt_check("  hedeleg[13]: to VS", h_vs.count ? h_vs.cause : ~0UL,
		 CAUSE_LOAD_PF);
	rt_check("  vstval = VA", h_vs.tval, VA(V_INV) + 8);
	rt_check("  HS not involved", h_s.count, 0);
	csrw_n(CSR_HEDELEG, 0);

	/* SUM: vsstatus.SUM governs VS-mode access to VS U pages. */
	h_reset();
	csr_set(mstatus, MSTATUS_SUM); /* HS SUM must not matter */
	run_vs(hp_ld, VA(V_URW), 0);
	rt_check("VS ld VS U-page, vsstatus.SUM=0 -> load PF",
		 h_s.count ? h_s.cause : ~0UL, CAUSE_LOAD_PF);
	csr_clear(mstatus, MSTATUS_SUM);
	csrs_n(CSR_VSSTATUS, MSTATUS_SUM);
	h_reset();
	rt_check("VS ld VS U-page, vsstatus.SUM=1",
		 run_vs(hp_ld, VA(V_URW) + 8, 0), pageval(0, 1));
	rt_check("  no fault", h_s.count, 0);
	csrc_n(CSR_VSSTATUS, MSTATUS_SUM);

	/* MXR at VS stage: vsstatus.MXR or mstatus.MXR. */
	h_reset();
	run_vs(hp_lw, VA(V_XO), 0);
	rt_check("VS ld VS X-only -> load PF", h_s.count ? h_s.cause : ~0UL,
		 CAUSE_LOAD_PF);
	csrs_n(CSR_VSSTATUS, MSTATUS_MXR);
	h_reset();
	rt_check("  vsstatus.MXR=1: readable",
		 (u64)run_vs(hp_lw, VA(V_XO), 0) & 0xffffffff,
		 *(u32 *)pages[2]);
	rt_check("  no fault", h_s.count, 0);
	csrc_n(CSR_VSSTATUS, MSTATUS_MXR);
	/* (mstatus.MXR for VS-stage: h_strict.) */
	rt_check("VS Sv39 fetch VS X-only page", run_vs(hp_fetch, VA(V_XO), 0),
		 42);

	/* Implicit access: the level-0 table for VA_IMPLICIT is at an
	   unmapped GPA; the fault is of the original access type, htval is
	   the PTE's GPA >> 2 and htinst a pseudoinstruction (RV64 read:
	   0x3000) when htval is nonzero. */
	u64 pte_gpa = GPA(G_INV) + 8 * ((VA_IMPLICIT + 0x1000) >> 12 & 511);
	const struct {
		const char *name;
		rt_fn fn;
		u64 cause;
	} im[] = {
		{ "VS ld, VS table at unmapped GPA -> load GPF", hp_ld,
		  CAUSE_LOAD_GPF },
		{ "VS sd, VS table at unmapped GPA -> store GPF", hp_sd,
		  CAUSE_STORE_GPF },
		{ "VS fetch, VS table at unmapped GPA -> fetch GPF", hp_fetch,
		  CAUSE_FETCH_GPF },
	};
	/* Only the load case here: QEMU 7.2 reports the store and fetch
	   cases as load guest-page faults (h_strict). */
	for (int i = 0; i < 1; i++) {
		h_reset();
		run_vs(im[i].fn, VA_IMPLICIT + 0x1000, 0);
		if (!rt_check(im[i].name, h_s.count ? h_s.cause : ~0UL,
			      im[i].cause))
			continue;
		rt_check("  stval = guest VA", h_s.tval, VA_IMPLICIT + 0x1000);
		rt_check("  htval = PTE GPA >> 2", h_s.tval2, pte_gpa >> 2);
		rt_check("  hstatus.GVA = 1", (h_s.hstatus & HSTATUS_GVA) != 0,
			 1);
		rt_check("  htinst = 0x3000 (implicit read)", h_s.tinst,
			 0x3000);
	}
	vsatp_bare();
}

int main(void)
{
	h_init();
	build();
	csr_write(medeleg, MEDELEG_GPF);
	test_bare_vsatp();
	test_gstage_ad_fence();
	test_sv39_vsatp();
	csr_write(medeleg, 0);
	return rt_finish("h_gstage");
}
