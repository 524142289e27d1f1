/*
 * h_hlv: hypervisor virtual-machine loads and stores (HLV.*, HLVX.*,
 * HSV.*) from HS-mode and from U-mode with hstatus.HU=1, through both
 * translation stages, with hstatus.SPVP selecting VS (1) or VU (0)
 * permission checks, and the guest-page faults they raise (GVA = 1,
 * taken from V=0 so hstatus.SPV = 0).
 *
 * G-stage: h_init's identity gigapages plus 4 KiB pages at GPA
 * 0x1_0000_0000 (G_*). VS-stage (when vsatp = Sv39): VA 0x4000_0000 pages
 * V_* onto those GPAs; VA 0x8000_0000 identity.
 */
#include "h.h"

#define GPA(n) (0x100000000UL + (u64)(n) * 4096)
#define G_RW 0
#define G_XO 1
#define G_INV 2
#define VA(n) (0x40000000UL + (u64)(n) * 4096)
#define V_S 0  /* S RW -> G_RW */
#define V_U 1  /* U RW -> G_RW */
#define V_XO 2 /* S X-only -> G_XO... X in both stages */
#define V_G 3  /* S RW -> G_INV */
#define V_UXO 4 /* U X-only -> G_XO */

static u64 gs_l1[512] __attribute__((aligned(4096)));
static u64 gs_l0[512] __attribute__((aligned(4096)));
static u64 vs_root[512] __attribute__((aligned(4096)));
static u64 vs_l1[512] __attribute__((aligned(4096)));
static u64 vs_l0[512] __attribute__((aligned(4096)));
static u64 pages[2][512] __attribute__((aligned(4096)));

#define PAT 0x8182838485868788UL
#define XPAT 0xf1f2f3f4f5f6f7f8UL

static void build(void)
{
	h_groot[4] = h_pte_table(gs_l1);
	gs_l1[0] = h_pte_table(gs_l0);
	gs_l0[G_RW] = h_pte_leaf((u64)pages[0], PTE_U | PTE_R | PTE_W | PTE_AD);
	gs_l0[G_XO] = h_pte_leaf((u64)pages[1], PTE_U | PTE_X | PTE_A);
	vs_root[2] = h_pte_leaf(0x80000000UL, PTE_R | PTE_W | PTE_X | PTE_AD);
	vs_root[1] = h_pte_table(vs_l1);
	vs_l1[0] = h_pte_table(vs_l0);
	vs_l0[V_S] = h_pte_leaf(GPA(G_RW), PTE_R | PTE_W | PTE_AD);
	vs_l0[V_U] = h_pte_leaf(GPA(G_RW), PTE_U | PTE_R | PTE_W | PTE_AD);
	vs_l0[V_XO] = h_pte_leaf(GPA(G_XO), PTE_X | PTE_A);
	vs_l0[V_G] = h_pte_leaf(GPA(G_INV), PTE_R | PTE_W | PTE_AD);
	vs_l0[V_UXO] = h_pte_leaf(GPA(G_XO), PTE_U | PTE_X | PTE_A);
	pages[1][0] = XPAT;
	h_fence_gvma_all();
}

static void spvp(int vs)
{
	if (vs)
		csrs_n(CSR_HSTATUS, HSTATUS_SPVP);
	else
		csrc_n(CSR_HSTATUS, HSTATUS_SPVP);
}

/* Checks a fault taken to HS from an HS/U-mode HLV/HSV. */
static void check_fault(const char *name, u64 cause, u64 va, u64 gpa,
			rt_fn probe)
{
	if (!rt_check(name, h_s.count ? h_s.cause : ~0UL, cause))
		return;
	rt_check("  stval = guest VA", h_s.tval, va);
	rt_check("  htval", h_s.tval2, gpa >> 2);
	rt_check("  hstatus.GVA = 1", (h_s.hstatus & HSTATUS_GVA) != 0, 1);
	rt_check("  hstatus.SPV = 0 (from V=0)",
		 (h_s.hstatus & HSTATUS_SPV) != 0, 0);
	u32 x = h_xform_hlsv(h_insn_at(probe));
	if (h_s.tinst != 0 && h_s.tinst != x)
		rt_check("  htinst = 0 or transformed", h_s.tinst, x);
}

static void test_widths(void)
{
	u64 a = GPA(G_RW);
	pages[0][0] = PAT;
	spvp(1);
	h_reset();
	rt_check("hlv.b", run_hs(hp_hlv_b, a, 0), (u64)(i64)(i8)0x88);
	rt_check("hlv.bu", run_hs(hp_hlv_bu, a, 0), 0x88);
	rt_check("hlv.h", run_hs(hp_hlv_h, a + 2, 0), (u64)(i64)(i16)0x8586);
	rt_check("hlv.hu", run_hs(hp_hlv_hu, a + 2, 0), 0x8586);
	rt_check("hlv.w", run_hs(hp_hlv_w, a + 4, 0),
		 (u64)(i64)(i32)0x81828384);
	rt_check("hlv.wu", run_hs(hp_hlv_wu, a + 4, 0), 0x81828384);
	rt_check("hlv.d", run_hs(hp_hlv_d, a, 0), PAT);
	run_hs(hp_hsv_b, a + 8, 0x1122334455667788UL);
	run_hs(hp_hsv_h, a + 10, 0x1122334455667788UL);
	run_hs(hp_hsv_w, a + 12, 0x1122334455667788UL);
	rt_check("hsv.b/h/w", pages[0][1], 0x5566778877880088UL);
	run_hs(hp_hsv_d, a + 16, 0x0123456789abcdefUL);
	rt_check("hsv.d", pages[0][2], 0x0123456789abcdefUL);
	/* (HLVX execute-permission checks: h_strict.) */
	rt_check("no faults", h_s.count + h_m.count, 0);

	h_reset();
	run_hs(hp_hlv_w, GPA(G_XO), 0);
	check_fault("hlv.w on G-stage X-only -> load GPF", CAUSE_LOAD_GPF,
		    GPA(G_XO), GPA(G_XO), (rt_fn)hp_hlv_w);
	h_reset();
	run_hs(hp_hlv_d, GPA(G_INV) + 8, 0);
	check_fault("hlv.d on G-stage invalid -> load GPF", CAUSE_LOAD_GPF,
		    GPA(G_INV) + 8, GPA(G_INV) + 8, (rt_fn)hp_hlv_d);
	h_reset();
	run_hs(hp_hsv_w, GPA(G_INV) + 4, 0);
	check_fault("hsv.w on G-stage invalid -> store GPF", CAUSE_STORE_GPF,
		    GPA(G_INV) + 4, GPA(G_INV) + 4, (rt_fn)hp_hsv_w);
	h_reset();
	run_hs(hp_hsv_d, GPA(G_XO), 0);
	check_fault("hsv.d on G-stage X-only -> store GPF", CAUSE_STORE_GPF,
		    GPA(G_XO), GPA(G_XO), (rt_fn)hp_hsv_d);
	rt_check("  page unchanged", pages[1][0], XPAT);
}

static void test_sv39_spvp(void)
{
	csrw_n(CSR_VSATP, SATP_SV39 | ((u64)vs_root >> 12));
	h_fence_vvma_all();
	pages[0][0] = PAT;

	spvp(1);
	h_reset();
	rt_check("SPVP=1 hlv.d VS S-page", run_hs(hp_hlv_d, VA(V_S), 0), PAT);
	rt_check("  no fault", h_s.count, 0);
	/* (SPVP=1 on a U page with SUM=0: h_strict.) */
	csrs_n(CSR_VSSTATUS, MSTATUS_SUM);
	h_reset();
	rt_check("SPVP=1 hlv.d VS U-page, vsstatus.SUM=1",
		 run_hs(hp_hlv_d, VA(V_U), 0), PAT);
	rt_check("  no fault", h_s.count, 0);
	csrc_n(CSR_VSSTATUS, MSTATUS_SUM);
	h_reset();
	run_hs(hp_hlv_d, VA(V_G), 0);
	check_fault("SPVP=1 hlv.d VS ok, G-stage invalid -> load GPF",
		    CAUSE_LOAD_GPF, VA(V_G), GPA(G_INV), (rt_fn)hp_hlv_d);
	spvp(0);
	h_reset();
	rt_check("SPVP=0 hlv.d VS U-page", run_hs(hp_hlv_d, VA(V_U), 0), PAT);
	run_hs(hp_hsv_d, VA(V_U) + 8, 0x55);
	rt_check("SPVP=0 hsv.d VS U-page", pages[0][1], 0x55);
	rt_check("  no fault", h_s.count, 0);
	/* (SPVP=0 on S pages and HLVX: h_strict.) */

	/* From U-mode: HU=1 allows HLV/HSV; HU=0 makes them illegal. */
	csrs_n(CSR_HSTATUS, HSTATUS_HU);
	h_reset();
	rt_check("U (HU=1, SPVP=0) hlv.d VS U-page",
		 run_u(hp_hlv_d, VA(V_U), 0), PAT);
	run_u(hp_hsv_w, VA(V_U) + 16, 0x66);
	rt_check("U (HU=1) hsv.w VS U-page", pages[0][2] & 0xffffffff, 0x66);
	rt_check("  no fault", h_s.count + h_m.count, 0);
	csrc_n(CSR_HSTATUS, HSTATUS_HU);
	h_reset();
	run_u(hp_hlv_d, VA(V_U), 0);
	rt_check("U (HU=0) hlv.d -> illegal", h_s.count ? h_s.cause : ~0UL,
		 CAUSE_ILLEGAL);
	csrw_n(CSR_VSATP, 0);
	h_fence_vvma_all();
}

int main(void)
{
	h_init();
	build();
	csr_write(medeleg, (1UL << CAUSE_LOAD_GPF) | (1UL << CAUSE_STORE_GPF) |
				   (1UL << CAUSE_LOAD_PF) |
				   (1UL << CAUSE_STORE_PF) |
				   (1UL << CAUSE_ILLEGAL));
	test_widths();
	test_sv39_spvp();
	csr_write(medeleg, 0);
	return rt_finish("h_hlv");
}
