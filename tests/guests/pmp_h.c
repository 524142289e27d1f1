/*
 * pmp_h: PMP with the H extension (privileged spec 3.7, "Physical Memory
 * Protection"; H extension, two-stage translation). VS- and VU-mode
 * accesses are checked by the PMP as S and U accesses after both stages;
 * the implicit accesses of the VS-stage and G-stage walks are checked as
 * S-mode accesses. A denied access is an access fault (not a guest-page
 * fault), taken to M here (nothing delegated), with mtval the guest virtual
 * address, mstatus.GVA = 1 and mtval2 = 0. Compared with QEMU 10.0, which
 * leaves GVA 0 for the access faults of HLV and of M-mode loads with MPRV
 * and MPV = 1: those two GVA checks are in pmp_strict.c.
 *
 * PMP: entry 0 NAPOT, no permission, over page D (data); entry 1 NAPOT, no
 * permission, over page T (a page-table page); entry 15 NAPOT RWX over
 * everything (the runtime's entry 0 replaced).
 *
 * G-stage (h_init): GPA 0 and 0x8000_0000 identity (1 GiB each); GPA
 * 0x4000_0000 (root index 1) through a level-1 table in page T.
 */
#include "h.h"

#define PR 0x01UL
#define PW 0x02UL
#define PX 0x04UL
#define NAPOT 0x18UL

static u8 pages[2][4096] __attribute__((aligned(4096)));
#define D ((u64)pages[0])
#define T ((u64)pages[1])
#define NAPOT_PAGE(a) (((a) >> 2) | 0x1ffUL)

static u64 vs_root[512] __attribute__((aligned(4096)));

/* The fault recorded at M: cause, mtval, GVA (when `gva`), mtval2. */
static void check_m_gva(const char *name, u64 cause, u64 tval, int gva)
{
	rt_puts(name);
	rt_puts(":\n");
	rt_check("  traps to M", h_m.count, 1);
	rt_check("  traps to HS", h_s.count, 0);
	rt_check("  mcause", h_m.cause, cause);
	rt_check("  mtval", h_m.tval, tval);
	if (gva)
		rt_check("  mstatus.GVA", (h_m.status & MSTATUS_GVA) != 0, 1);
	rt_check("  mtval2", h_m.tval2, 0);
}

static void check_m(const char *name, u64 cause, u64 tval)
{
	check_m_gva(name, cause, tval, 1);
}

static void check_ok(const char *name)
{
	rt_puts(name);
	rt_puts(":\n");
	rt_check("  traps", h_m.count + h_s.count, 0);
}

int main(void)
{
	rt_puts("pmp_h: PMP under two-stage translation\n");
	h_init();
	csr_write(pmpaddr15, -1UL);
	csr_write(pmpcfg2, (NAPOT | PR | PW | PX) << 56);
	csr_write(pmpaddr0, NAPOT_PAGE(D));
	csr_write(pmpaddr1, NAPOT_PAGE(T));
	csr_write(pmpcfg0, NAPOT | NAPOT << 8);

	/* G-stage: GPA 0x4000_0000 + 2 MiB through a level-1 table in T
	   (written by M, which the unlocked entry 1 does not bind). */
	u64 *g_l1 = (u64 *)T;
	for (int i = 0; i < 512; i++)
		g_l1[i] = 0;
	g_l1[0] = h_pte_leaf(0x80000000UL, PTE_URWX);
	h_groot[1] = h_pte_table(g_l1);
	h_fence_gvma_all();

	/* VS and VU explicit accesses (vsatp Bare, G-stage identity). */
	h_reset();
	run_vs(hp_ld, D + 8, 0);
	check_m("VS ld denied page", CAUSE_LOAD_ACCESS, D + 8);
	h_reset();
	run_vu(hp_sd, D + 16, 0);
	check_m("VU sd denied page", CAUSE_STORE_ACCESS, D + 16);
	h_reset();
	run_vs(hp_fetch, D + 64, 0);
	check_m("VS fetch denied page", CAUSE_FETCH_ACCESS, D + 64);
	h_reset();
	run_vs(hp_ld, (u64)vs_root, 0);
	check_ok("VS ld allowed page");

	/* The G-stage walk reads its level-1 table in T: denied to S. */
	h_reset();
	run_vs(hp_ld, 0x40000010UL, 0);
	check_m("VS ld, G-stage table denied", CAUSE_LOAD_ACCESS, 0x40000010UL);
	h_reset();
	run_vu(hp_sd, 0x40000020UL, 0);
	check_m("VU sd, G-stage table denied", CAUSE_STORE_ACCESS,
		0x40000020UL);

	/* Entry 1 readable: the G-stage walk goes through. */
	csr_write(pmpcfg0, NAPOT | (NAPOT | PR) << 8);
	h_reset();
	run_vs(hp_ld, 0x40000010UL, 0);
	check_ok("VS ld, G-stage table readable");
	csr_write(pmpcfg0, NAPOT | NAPOT << 8);

	/* VS-stage: vsatp Sv39 whose root points at a level-1 table in T
	   for VA 0 (GPA T through the G-stage identity); VA 0x8000_0000 is
	   an identity gigapage for code and stacks. */
	for (int i = 0; i < 512; i++)
		vs_root[i] = 0;
	vs_root[0] = h_pte_table((void *)T);
	vs_root[2] = h_pte_leaf(0x80000000UL, PTE_R | PTE_W | PTE_X | PTE_AD);
	g_l1[0] = h_pte_leaf(0x80000000UL, PTE_R | PTE_W | PTE_AD);
	csrw_n(CSR_VSATP, SATP_SV39 | (u64)vs_root >> 12);
	h_fence_vvma_all();
	h_reset();
	run_vs(hp_ld, 0x1008UL, 0);
	check_m("VS ld, VS-stage table denied", CAUSE_LOAD_ACCESS, 0x1008UL);
	/* Through the identity gigapage the PMP checks the final address. */
	h_reset();
	run_vs(hp_sd, D + 24, 0);
	check_m("VS sd paged, denied page", CAUSE_STORE_ACCESS, D + 24);
	csrw_n(CSR_VSATP, 0);
	h_fence_vvma_all();

	/* HLV from HS (hstatus.SPVP = 1): a VS access, checked as S. */
	csrw_n(CSR_HSTATUS, HSTATUS_SPVP);
	h_reset();
	run_hs(hp_hlv_d, D + 32, 0);
	/* GVA: see pmp_strict.c (QEMU 10.0 leaves it 0 here). */
	check_m_gva("HS hlv.d denied page", CAUSE_LOAD_ACCESS, D + 32, 0);
	csrw_n(CSR_HSTATUS, 0);

	/* MPRV with MPV = 1, MPP = S: M's loads are VS-mode's. */
	h_reset();
	csr_clear(mstatus, MSTATUS_MPP);
	/* One block: after the trap's MRET, MPRV is still set (with MPP = U)
	   until the csrc. */
	__asm__ volatile(".option push\n.option norvc\n"
			 "csrs mstatus, %1\n"
			 "ld t0, 0(%0)\n"
			 "csrc mstatus, %2\n"
			 ".option pop" ::"r"(D + 40),
			 "r"(MSTATUS_MPV | MSTATUS_MPRV | (1UL << 11)),
			 "r"(MSTATUS_MPV | MSTATUS_MPRV | MSTATUS_MPP)
			 : "t0", "memory");
	check_m_gva("M ld, MPRV with MPV=1 MPP=S", CAUSE_LOAD_ACCESS, D + 40, 0);

	return rt_finish("pmp_h");
}
