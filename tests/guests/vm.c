/*
 * vm: Sv39, Sv48 and Sv57 address translation seen from S- and U-mode.
 *
 * M-mode builds the page tables (physical addresses), then runs small
 * probes in S or U with satp set. Page faults are taken to M (or to S
 * where delegated); the runtime records cause, tval and the previous mode
 * and resumes after the faulting access.
 *
 * Layout (every table below is used by all three modes):
 *   VA 0x8000_0000 + 1 GiB  identity gigapage, RWX, S only: code, data,
 *                           stacks and the page tables themselves
 *   VA 0x4000_0000          4 KiB pages with assorted permissions (PG_*)
 *   VA 0x4020_0000          a 2 MiB megapage onto PA 0x8100_0000
 *   VA 0x4040_0000          a megapage PTE whose PPN is not 2 MiB aligned
 * Sv48 adds VA 0x80_0000_0000 (bit 39, non-canonical in Sv39) onto the
 * identity gigapage and a 512 GiB terapage at VA 0x100_0000_0000 onto
 * PA 0; Sv57 maps VA 1 << 48 like VA 0.
 */
#include "rt/rt.h"

#define PTE_V (1UL << 0)
#define PTE_R (1UL << 1)
#define PTE_W (1UL << 2)
#define PTE_X (1UL << 3)
#define PTE_U (1UL << 4)
#define PTE_A (1UL << 6)
#define PTE_D (1UL << 7)
#define PTE_AD (PTE_A | PTE_D)

#define SATP_SV39 (8UL << 60)
#define SATP_SV48 (9UL << 60)
#define SATP_SV57 (10UL << 60)
#define SATP_SV64 (11UL << 60)

#define CAUSE_FETCH_PF 12
#define CAUSE_LOAD_PF 13
#define CAUSE_STORE_PF 15

#define VA_PAGES 0x40000000UL
#define PG_RW 0     /* S read/write */
#define PG_RO 1     /* S read-only */
#define PG_XO 2     /* S execute-only */
#define PG_URW 3    /* U read/write */
#define PG_INV 4    /* V = 0 */
#define PG_WO 5     /* W without R: reserved */
#define PG_UCODE 6  /* U read/execute: the .user.text page */
#define PG_USTACK 7 /* U read/write: the U-mode stack */
#define PG_REMAP 8  /* S read/write, remapped by the sfence test */
#define PG_URX_DATA 9 /* U execute-only, for MXR from U */
#define PG_CODE 10    /* S read/execute, remapped between two code pages */
#define PG_NONLEAF 11 /* a pointer PTE (R=W=X=0) at level 0 */
#define PG_RSV 12     /* reserved bits 60:54 set */
#define PG_PBMT 13    /* PBMT bits set (no Svpbmt) */
#define PG_NAPOT 14   /* N bit set (no Svnapot) */
#define PG_XSPAN 15   /* S read/execute: its last bytes start a 32-bit insn */
/* PG_XSPAN + 1 is left invalid. */
#define PG_RW_G 17    /* S read/write with G set, a second view of D_RW */
#define PG_SPLIT 18   /* 18 and 19: adjacent VAs, PAs in the other order */
#define PG_XS2 20     /* 20 and 21: a 32-bit insn across them, PAs swapped */
#define PG_AD_RW 22   /* RW, A = D = 0 */
#define PG_AD_RO 23   /* R only, A = 0 */
#define PG_AD_X 24    /* RX code, A = 0 */
#define PG_AD_XO 25   /* X only, A = 0 (for MXR) */
#define VA_AD_MEGA 0x40600000UL /* megapage, A = D = 0 */
#define VA(pg) (VA_PAGES + (u64)(pg) * 4096)

#define VA_MEGA 0x40200000UL
#define PA_MEGA 0x81000000UL
#define VA_BADMEGA 0x40400000UL

#define VA_BIT39 0x8000000000UL
#define VA_TERA 0x10000000000UL
#define VA_BIT48 0x1000000000000UL

typedef u64 table_t[512];
static table_t tables[10] __attribute__((aligned(4096)));
#define ROOT39 tables[0]
#define L1_LOW tables[1]  /* VA 0x4000_0000 region (level 1) */
#define L0_LOW tables[2]  /* VA 0x4000_0000 region (level 0) */
#define L2_LOW tables[3]  /* Sv48/57: VA 0 .. 512 GiB (level 2) */
#define ROOT48 tables[4]  /* Sv48 root; Sv57 level 3 */
#define L2_BIT39 tables[5] /* Sv48: VA 0x80_0000_0000 (level 2) */
#define ROOT57 tables[6]
#define L1_ZERO tables[7] /* Sv39: VA 0 (level 1) */
#define L0_ZERO tables[8] /* Sv39: VA 0 (level 0) */

#define NDATA 20
static u8 data[NDATA][4096] __attribute__((aligned(4096)));
#define D_RW 0
#define D_RO 1
#define D_XO 2
#define D_URW 3
#define D_USTACK 4
#define D_REMAP_A 5
#define D_REMAP_B 6
#define D_CODE_A 7
#define D_CODE_B 8
#define D_XSPAN 9
#define D_SPLIT_HI 12 /* mapped at VA(PG_SPLIT + 1) */
#define D_SPLIT_LO 13 /* mapped at VA(PG_SPLIT) */
#define D_XS2_HI 14   /* mapped at VA(PG_XS2 + 1) */
#define D_XS2_LO 15   /* mapped at VA(PG_XS2) */
#define D_AD 16
#define D_AD_CODE 17

static u64 marker; /* a u64 in the identity-mapped region */

/* Probes: S-mode ones in .text, U-mode ones in .user.text. */
long p_ld(long, long);
long p_sd(long, long);
long p_fetch(long, long);
long p_remap(long, long);
long u_ld(long, long);
long u_sd(long, long);
long u_fetch(long, long);
extern char u_ret[];

__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".globl p_ld\n"
	"p_ld: ld a0, 0(a0)\n"
	"	ret\n"
	".globl p_sd\n"
	"p_sd: sd a1, 0(a0)\n"
	"	ret\n"
	".globl p_fetch\n"
	"p_fetch: mv t1, ra\n"
	"	jalr ra, 0(a0)\n"
	"	mv ra, t1\n"
	"	ret\n"
	".option pop\n"
	".popsection\n"
	".pushsection .user.text, \"ax\"\n"
	".option push\n"
	".option norvc\n"
	".globl u_ld\n"
	"u_ld: ld a0, 0(a0)\n"
	"	ret\n"
	".globl u_sd\n"
	"u_sd: sd a1, 0(a0)\n"
	"	ret\n"
	".globl u_fetch\n"
	"u_fetch: mv t1, ra\n"
	"	jalr ra, 0(a0)\n"
	"	mv ra, t1\n"
	"	ret\n"
	".globl u_ret\n"
	"u_ret: ret\n"
	".option pop\n"
	".popsection\n");

static u64 pte_table(void *next)
{
	return (((u64)next >> 12) << 10) | PTE_V;
}

static u64 pte_leaf(u64 pa, u64 flags)
{
	return ((pa >> 12) << 10) | flags | PTE_V;
}

static u64 uva(void *sym)
{
	return VA(PG_UCODE) + ((u64)sym - (u64)__user_text_start);
}

static void build_tables(void)
{
	const u64 s_rwx = PTE_R | PTE_W | PTE_X | PTE_AD;

	/* Sv39 */
	ROOT39[2] = pte_leaf(0x80000000UL, s_rwx);
	ROOT39[1] = pte_table(L1_LOW);
	L1_LOW[0] = pte_table(L0_LOW);
	L1_LOW[1] = pte_leaf(PA_MEGA, PTE_R | PTE_W | PTE_AD);
	L1_LOW[2] = pte_leaf(PA_MEGA + 0x1000, PTE_R | PTE_W | PTE_AD);
	L0_LOW[PG_RW] = pte_leaf((u64)data[D_RW], PTE_R | PTE_W | PTE_AD);
	L0_LOW[PG_RO] = pte_leaf((u64)data[D_RO], PTE_R | PTE_AD);
	L0_LOW[PG_XO] = pte_leaf((u64)data[D_XO], PTE_X | PTE_AD);
	L0_LOW[PG_URW] =
		pte_leaf((u64)data[D_URW], PTE_U | PTE_R | PTE_W | PTE_AD);
	L0_LOW[PG_INV] = pte_leaf((u64)data[D_RW], PTE_R | PTE_W | PTE_AD) &
			 ~PTE_V;
	L0_LOW[PG_WO] = pte_leaf((u64)data[D_RW], PTE_W | PTE_AD);
	L0_LOW[PG_UCODE] =
		pte_leaf((u64)__user_text_start, PTE_U | PTE_R | PTE_X | PTE_AD);
	L0_LOW[PG_USTACK] =
		pte_leaf((u64)data[D_USTACK], PTE_U | PTE_R | PTE_W | PTE_AD);
	L0_LOW[PG_REMAP] =
		pte_leaf((u64)data[D_REMAP_A], PTE_R | PTE_W | PTE_AD);
	L0_LOW[PG_URX_DATA] = pte_leaf((u64)data[D_XO], PTE_U | PTE_X | PTE_AD);
	L0_LOW[PG_CODE] = pte_leaf((u64)data[D_CODE_A], PTE_R | PTE_X | PTE_AD);
	L0_LOW[PG_NONLEAF] = pte_table(data[D_RW]);
	L0_LOW[PG_RSV] =
		pte_leaf((u64)data[D_RW], PTE_R | PTE_W | PTE_AD) | (1UL << 54);
	L0_LOW[PG_PBMT] =
		pte_leaf((u64)data[D_RW], PTE_R | PTE_W | PTE_AD) | (1UL << 61);
	L0_LOW[PG_NAPOT] =
		pte_leaf((u64)data[D_RW], PTE_R | PTE_W | PTE_AD) | (1UL << 63);
	L0_LOW[PG_XSPAN] = pte_leaf((u64)data[D_XSPAN], PTE_R | PTE_X | PTE_AD);
	L0_LOW[PG_SPLIT] = pte_leaf((u64)data[D_SPLIT_LO], PTE_R | PTE_W | PTE_AD);
	L0_LOW[PG_SPLIT + 1] =
		pte_leaf((u64)data[D_SPLIT_HI], PTE_R | PTE_W | PTE_AD);
	L0_LOW[PG_XS2] = pte_leaf((u64)data[D_XS2_LO], PTE_R | PTE_X | PTE_AD);
	L0_LOW[PG_XS2 + 1] =
		pte_leaf((u64)data[D_XS2_HI], PTE_R | PTE_X | PTE_AD);
	L0_LOW[PG_AD_RW] = pte_leaf((u64)data[D_AD], PTE_R | PTE_W);
	L0_LOW[PG_AD_RO] = pte_leaf((u64)data[D_AD], PTE_R);
	L0_LOW[PG_AD_X] = pte_leaf((u64)data[D_AD_CODE], PTE_R | PTE_X);
	L0_LOW[PG_AD_XO] = pte_leaf((u64)data[D_AD_CODE], PTE_X);
	L1_LOW[3] = pte_leaf(PA_MEGA + 0x200000, PTE_R | PTE_W);
	L0_LOW[PG_RW_G] =
		pte_leaf((u64)data[D_RW], PTE_R | PTE_W | PTE_AD | (1UL << 5));

	/* VA 0 (PA 0 has no memory): one page, for the satp = Bare test. */
	ROOT39[0] = pte_table(L1_ZERO);
	L1_ZERO[0] = pte_table(L0_ZERO);
	L0_ZERO[0] = pte_leaf((u64)data[D_RW], PTE_R | PTE_W | PTE_AD);

	/* Top of the address space (negative half) onto the identity gigapage,
	 * and misaligned gigapage leaves (PPN[0] or PPN[1] nonzero). */
	ROOT39[511] = pte_leaf(0x80000000UL, PTE_R | PTE_W | PTE_AD);
	ROOT39[3] = pte_leaf(0x80001000UL, PTE_R | PTE_W | PTE_AD);
	ROOT39[4] = pte_leaf(0x80200000UL, PTE_R | PTE_W | PTE_AD);

	/* Sv48: the same low 512 GiB, plus bit-39 and terapage regions. */
	L2_LOW[2] = ROOT39[2];
	L2_LOW[1] = ROOT39[1];
	ROOT48[0] = pte_table(L2_LOW);
	ROOT48[1] = pte_table(L2_BIT39);
	L2_BIT39[0] = pte_leaf(0x80000000UL, PTE_R | PTE_W | PTE_AD);
	ROOT48[2] = pte_leaf(0, PTE_R | PTE_W | PTE_AD);
	/* A misaligned terapage (PPN[2] nonzero), and the top 512 GiB. */
	ROOT48[3] = pte_leaf(0x40000000UL, PTE_R | PTE_W | PTE_AD);
	ROOT48[511] = pte_table(L2_BIT39);

	/* Sv57: VA 0 and VA 1 << 48 both lead to the Sv48 root. */
	ROOT57[0] = pte_table(ROOT48);
	ROOT57[1] = pte_table(ROOT48);
	ROOT57[511] = pte_table(ROOT48);

	/* Page contents. */
	for (int i = 0; i < NDATA; i++)
		*(volatile u64 *)data[i] = 0x1111111111111111UL * (u64)(i + 1);
	*(volatile u32 *)data[D_XO] = 0x00008067; /* ret */
	/* Two versions of a routine at the same VA: li a0, 1 / li a0, 2; ret */
	((volatile u32 *)data[D_CODE_A])[0] = 0x00100513;
	((volatile u32 *)data[D_CODE_A])[1] = 0x00008067;
	((volatile u32 *)data[D_CODE_B])[0] = 0x00200513;
	((volatile u32 *)data[D_CODE_B])[1] = 0x00008067;
	/* "ret" at the start, the first half of "addi a0, a0, 1" at the end. */
	*(volatile u32 *)data[D_XSPAN] = 0x00008067;
	*(volatile u16 *)(data[D_XSPAN] + 4094) = 0x0513;
	/* "addi a0, a0, 1; ret" across VA(PG_XS2) and VA(PG_XS2 + 1). */
	*(volatile u16 *)(data[D_XS2_LO] + 4094) = 0x0513;
	((volatile u16 *)data[D_XS2_HI])[0] = 0x0015;
	((volatile u16 *)data[D_XS2_HI])[1] = 0x8067;
	((volatile u16 *)data[D_XS2_HI])[2] = 0x0000;
	/* ret */
	*(volatile u32 *)data[D_AD_CODE] = 0x00008067;
	/* Distinct bytes around the PG_SPLIT boundary. */
	for (int i = 0; i < 8; i++) {
		data[D_SPLIT_LO][4088 + i] = (u8)(0xa0 + i);
		data[D_SPLIT_HI][i] = (u8)(0xb0 + i);
	}
	*(volatile u64 *)(PA_MEGA + 0x1238) = 0x6d656761706167UL;
	marker = 0x6d61726b6572UL;
	__asm__ volatile("fence.i" ::: "memory");
}

static void set_satp(u64 satp)
{
	csr_write(satp, satp);
	__asm__ volatile("sfence.vma" ::: "memory");
}

static void section(const char *name)
{
	rt_puts("-- ");
	rt_puts(name);
	rt_putc('\n');
}

/* One probe in `mode`; checks that it did or did not fault. */
static u64 probe(const char *name, long mode, rt_fn s_fn, long (*u_fn)(long, long),
		 u64 va, u64 arg, u64 want_cause)
{
	long r;
	rt_trap_reset();
	if (mode == MODE_S)
		r = rt_run(MODE_S, s_fn, (long)va, (long)arg);
	else
		r = rt_run_at(MODE_U, uva((void *)u_fn), va, arg,
			      VA(PG_USTACK) + 4096, uva(rt_user_return));
	section(name);
	if (want_cause) {
		rt_check("  traps", rt_mtrap.count, 1);
		rt_check("  mcause", rt_mtrap.cause, want_cause);
		rt_check("  mtval", rt_mtrap.tval, va);
		rt_check("  MPP", rt_mtrap.prev, (u64)mode);
	} else {
		rt_check("  traps", rt_mtrap.count, 0);
	}
	return (u64)r;
}

#define S_LD(name, va, cause) probe(name, MODE_S, p_ld, NULL, va, 0, cause)
#define S_SD(name, va, v, cause) probe(name, MODE_S, p_sd, NULL, va, v, cause)
#define S_X(name, va, cause) probe(name, MODE_S, p_fetch, NULL, va, 0, cause)
#define U_LD(name, va, cause) probe(name, MODE_U, NULL, u_ld, va, 0, cause)
#define U_SD(name, va, v, cause) probe(name, MODE_U, NULL, u_sd, va, v, cause)
#define U_X(name, va, cause) probe(name, MODE_U, NULL, u_fetch, va, 0, cause)

static void test_satp_modes(void)
{
	section("satp WARL");
	u64 root = (u64)ROOT39 >> 12;
	csr_write(satp, SATP_SV39 | root);
	rt_check("  Sv39 readback", csr_read(satp), SATP_SV39 | root);
	csr_write(satp, SATP_SV48 | root);
	rt_check("  Sv48 readback", csr_read(satp), SATP_SV48 | root);
	csr_write(satp, SATP_SV57 | root);
	rt_check("  Sv57 readback", csr_read(satp), SATP_SV57 | root);
	csr_write(satp, SATP_SV64 | root);
	rt_check("  Sv64 (unsupported) write ignored", csr_read(satp),
		 SATP_SV57 | root);
	set_satp(0);
}

static void test_permissions(void)
{
	u64 v;
	/* Plain S accesses. */
	v = S_LD("S load RW page", VA(PG_RW), 0);
	rt_check("  value", v, 0x1111111111111111UL);
	S_SD("S store RW page", VA(PG_RW) + 8, 0xabcdef, 0);
	rt_check("  stored at PA", ((volatile u64 *)data[D_RW])[1], 0xabcdef);
	v = S_LD("S load RO page", VA(PG_RO), 0);
	rt_check("  value", v, 0x2222222222222222UL);
	S_SD("S store RO page", VA(PG_RO) + 16, 1, CAUSE_STORE_PF);
	rt_check("  memory unchanged", ((volatile u64 *)data[D_RO])[2], 0);

	/* Execute-only page, MXR. */
	S_LD("S load X-only page, MXR=0", VA(PG_XO), CAUSE_LOAD_PF);
	csr_set(mstatus, MSTATUS_MXR);
	v = S_LD("S load X-only page, MXR=1", VA(PG_XO), 0);
	rt_check("  value", v, 0x3333333300008067UL);
	S_SD("S store X-only page, MXR=1", VA(PG_XO) + 8, 1, CAUSE_STORE_PF);
	csr_clear(mstatus, MSTATUS_MXR);
	S_X("S execute X-only page", VA(PG_XO), 0);
	S_X("S execute RW page", VA(PG_RW), CAUSE_FETCH_PF);

	/* Invalid and reserved PTEs. */
	S_LD("S load invalid PTE", VA(PG_INV) + 0x18, CAUSE_LOAD_PF);
	S_SD("S store invalid PTE", VA(PG_INV) + 0x20, 1, CAUSE_STORE_PF);
	S_X("S execute invalid PTE", VA(PG_INV) + 0x40, CAUSE_FETCH_PF);
	S_LD("S load W-only PTE", VA(PG_WO), CAUSE_LOAD_PF);
	S_SD("S store W-only PTE", VA(PG_WO), 1, CAUSE_STORE_PF);

	/* U pages from S: SUM. */
	S_LD("S load U page, SUM=0", VA(PG_URW), CAUSE_LOAD_PF);
	S_SD("S store U page, SUM=0", VA(PG_URW), 1, CAUSE_STORE_PF);
	csr_set(mstatus, MSTATUS_SUM);
	v = S_LD("S load U page, SUM=1", VA(PG_URW), 0);
	rt_check("  value", v, 0x4444444444444444UL);
	S_SD("S store U page, SUM=1", VA(PG_URW) + 8, 0x5555, 0);
	rt_check("  stored at PA", ((volatile u64 *)data[D_URW])[1], 0x5555);
	S_X("S execute U page, SUM=1", uva(u_ret), CAUSE_FETCH_PF);
	csr_clear(mstatus, MSTATUS_SUM);

	/* U-mode accesses. */
	v = U_LD("U load U page", VA(PG_URW), 0);
	rt_check("  value", v, 0x4444444444444444UL);
	U_SD("U store U page", VA(PG_URW) + 16, 0x6666, 0);
	rt_check("  stored at PA", ((volatile u64 *)data[D_URW])[2], 0x6666);
	U_LD("U load S page", VA(PG_RW), CAUSE_LOAD_PF);
	U_SD("U store S page", VA(PG_RW), 1, CAUSE_STORE_PF);
	U_X("U execute S code", (u64)p_ld, CAUSE_FETCH_PF);
	U_X("U execute U code", uva(u_ret), 0);
	U_LD("U load U X-only page, MXR=0", VA(PG_URX_DATA), CAUSE_LOAD_PF);
	csr_set(mstatus, MSTATUS_MXR);
	v = U_LD("U load U X-only page, MXR=1", VA(PG_URX_DATA), 0);
	rt_check("  value", v, 0x3333333300008067UL);
	csr_clear(mstatus, MSTATUS_MXR);
}

static void test_superpages(void)
{
	u64 v = S_LD("S load 2 MiB megapage", VA_MEGA + 0x1238, 0);
	rt_check("  value", v, 0x6d656761706167UL);
	S_LD("S load misaligned megapage", VA_BADMEGA + 0x10, CAUSE_LOAD_PF);
	S_SD("S store misaligned megapage", VA_BADMEGA + 0x20, 1,
	     CAUSE_STORE_PF);
}

static void test_high_half_and_gigapages(void)
{
	u64 off = (u64)&marker - 0x80000000UL;
	u64 v = S_LD("Sv39 load near the top of the address space",
		     0xffffffffc0000000UL + off, 0);
	rt_check("  value", v, 0x6d61726b6572UL);
	S_LD("Sv39 load misaligned gigapage (PPN[0] != 0)", 0xc0000000UL + 8,
	     CAUSE_LOAD_PF);
	S_LD("Sv39 load misaligned gigapage (PPN[1] != 0)", 0x100000000UL + 8,
	     CAUSE_LOAD_PF);
}

static void test_noncanonical_sv39(void)
{
	S_LD("Sv39 load non-canonical (bit 39)", VA_BIT39 + 8, CAUSE_LOAD_PF);
	S_SD("Sv39 store non-canonical (bit 63)", 0x8000000080000000UL, 1,
	     CAUSE_STORE_PF);
	S_X("Sv39 fetch non-canonical (bit 40)", 0x10080000000UL,
	    CAUSE_FETCH_PF);
	S_LD("Sv39 load canonical upper half, unmapped", 0xffffffc000000000UL,
	     CAUSE_LOAD_PF);
}

/* S-mode: reads va, rewrites *pte, sfence.vma, reads va again. */
static long s_remap(long pte_addr, long new_pte)
{
	volatile u64 *va = (volatile u64 *)VA(PG_REMAP);
	u64 before = *va;
	*(volatile u64 *)pte_addr = (u64)new_pte;
	__asm__ volatile("sfence.vma %0, zero" ::"r"(va) : "memory");
	u64 after = *va;
	return (long)((before << 32) | (after & 0xffffffffUL));
}

static void test_sfence(void)
{
	rt_trap_reset();
	long r = rt_run(MODE_S, s_remap, (long)&L0_LOW[PG_REMAP],
			(long)pte_leaf((u64)data[D_REMAP_B],
				       PTE_R | PTE_W | PTE_AD));
	section("S changes a PTE, sfence.vma, reads again");
	rt_check("  traps", rt_mtrap.count, 0);
	rt_check("  before:after", (u64)r, 0x6666666677777777UL);
	L0_LOW[PG_REMAP] = pte_leaf((u64)data[D_REMAP_A], PTE_R | PTE_W | PTE_AD);
	__asm__ volatile("sfence.vma" ::: "memory");
}

static void test_delegated_fault(void)
{
	csr_write(medeleg, 1UL << CAUSE_LOAD_PF | 1UL << CAUSE_STORE_PF);
	rt_s_trap_setup();
	rt_trap_reset();
	rt_run_at(MODE_U, uva(u_ld), VA(PG_RW) + 0x28, 0, VA(PG_USTACK) + 4096,
		  uva(rt_user_return));
	section("U load S page, load page faults delegated");
	rt_check("  M traps", rt_mtrap.count, 0);
	rt_check("  S traps", rt_strap.count, 1);
	rt_check("  scause", rt_strap.cause, CAUSE_LOAD_PF);
	rt_check("  stval", rt_strap.tval, VA(PG_RW) + 0x28);
	rt_check("  sepc", rt_strap.epc, uva(u_ld));
	rt_check("  SPP", rt_strap.prev, 0);
	rt_trap_reset();
	rt_run(MODE_S, p_sd, (long)VA(PG_RO), 1);
	section("S store RO page, store page faults delegated");
	rt_check("  M traps", rt_mtrap.count, 0);
	rt_check("  S traps", rt_strap.count, 1);
	rt_check("  scause", rt_strap.cause, CAUSE_STORE_PF);
	rt_check("  stval", rt_strap.tval, VA(PG_RO));
	rt_check("  SPP", rt_strap.prev, 1);
	csr_write(medeleg, 0);
}

static void test_sv48(void)
{
	u64 off = (u64)&marker - 0x80000000UL;
	u64 v = S_LD("Sv48 load via bit-39 region", VA_BIT39 + off, 0);
	rt_check("  value", v, 0x6d61726b6572UL);
	v = S_LD("Sv48 load via terapage", VA_TERA + (u64)&marker, 0);
	rt_check("  value", v, 0x6d61726b6572UL);
	v = S_LD("Sv48 load RW page", VA(PG_RW), 0);
	rt_check("  value", v, 0x1111111111111111UL);
	v = U_LD("Sv48 U load U page", VA(PG_URW), 0);
	rt_check("  value", v, 0x4444444444444444UL);
	S_LD("Sv48 load non-canonical (bit 47)", 0x800000000000UL,
	     CAUSE_LOAD_PF);
	S_LD("Sv48 load non-canonical (bit 48)", VA_BIT48 + (u64)&marker,
	     CAUSE_LOAD_PF);
	S_LD("Sv48 load misaligned megapage", VA_BADMEGA, CAUSE_LOAD_PF);
	S_LD("Sv48 load misaligned terapage", 0x18000000000UL, CAUSE_LOAD_PF);
	v = S_LD("Sv48 load near the top of the address space",
		 0xffffff8000000000UL + ((u64)&marker - 0x80000000UL), 0);
	rt_check("  value", v, 0x6d61726b6572UL);
}

static void test_sv57(void)
{
	u64 v = S_LD("Sv57 load via bit-48 region", VA_BIT48 + (u64)&marker,
		     0);
	rt_check("  value", v, 0x6d61726b6572UL);
	v = S_LD("Sv57 load via bit-48 + bit-39 region",
		 VA_BIT48 + VA_BIT39 + ((u64)&marker - 0x80000000UL), 0);
	rt_check("  value", v, 0x6d61726b6572UL);
	v = U_LD("Sv57 U load U page", VA(PG_URW), 0);
	rt_check("  value", v, 0x4444444444444444UL);
	S_LD("Sv57 load non-canonical (bit 56)", 0x100000000000000UL,
	     CAUSE_LOAD_PF);
	S_LD("Sv57 load unmapped canonical", 0xff00000000000000UL,
	     CAUSE_LOAD_PF);
	v = S_LD("Sv57 load near the top of the address space",
		 0xffffff8000000000UL + ((u64)&marker - 0x80000000UL), 0);
	rt_check("  value", v, 0x6d61726b6572UL);
}

/*
 * M-mode loads and stores with MPRV = 1 use the translation and privilege
 * of mstatus.MPP; instruction fetch does not. The probe sets MPRV and MPP
 * (a1), accesses, and clears MPRV before touching memory again (a fault
 * leaves MPP = U after the handler's mret).
 */
long p_mprv_ld(long, long);
long p_mprv_sd(long, long);
__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".globl p_mprv_ld\n"
	"p_mprv_ld: li t0, 0x1800\n"
	"	csrc mstatus, t0\n"
	"	slli t1, a1, 11\n"
	"	csrs mstatus, t1\n"
	"	li t0, 0x20000\n"
	"	csrs mstatus, t0\n"
	"	ld a0, 0(a0)\n"
	"	li t0, 0x20000\n"
	"	csrc mstatus, t0\n"
	"	ret\n"
	".globl p_mprv_sd\n"
	"p_mprv_sd: li t0, 0x1800\n"
	"	csrc mstatus, t0\n"
	"	slli t1, a1, 11\n"
	"	csrs mstatus, t1\n"
	"	li t0, 0x20000\n"
	"	csrs mstatus, t0\n"
	"	li t2, 0x3c3c\n"
	"	sd t2, 0(a0)\n"
	"	li t0, 0x20000\n"
	"	csrc mstatus, t0\n"
	"	ret\n"
	".option pop\n"
	".popsection\n");

static u64 mprv(const char *name, int store, u64 va, u64 mpp, u64 want_cause)
{
	rt_trap_reset();
	u64 r = store ? (u64)p_mprv_sd((long)va, (long)mpp)
		      : (u64)p_mprv_ld((long)va, (long)mpp);
	section(name);
	if (want_cause) {
		rt_check("  traps", rt_mtrap.count, 1);
		rt_check("  mcause", rt_mtrap.cause, want_cause);
		rt_check("  mtval", rt_mtrap.tval, va);
		rt_check("  MPP (trap from M)", rt_mtrap.prev, MODE_M);
	} else {
		rt_check("  traps", rt_mtrap.count, 0);
	}
	rt_check("  MPRV cleared", csr_read(mstatus) & MSTATUS_MPRV, 0);
	return r;
}

static void test_mprv(void)
{
	u64 v = mprv("M load, MPRV=1 MPP=S, RW page", 0, VA(PG_RW), MODE_S, 0);
	rt_check("  value", v, 0x1111111111111111UL);
	mprv("M store, MPRV=1 MPP=S, RO page", 1, VA(PG_RO) + 0x30, MODE_S,
	     CAUSE_STORE_PF);
	mprv("M load, MPRV=1 MPP=S, U page, SUM=0", 0, VA(PG_URW), MODE_S,
	     CAUSE_LOAD_PF);
	csr_set(mstatus, MSTATUS_SUM);
	v = mprv("M load, MPRV=1 MPP=S, U page, SUM=1", 0, VA(PG_URW), MODE_S,
		 0);
	rt_check("  value", v, 0x4444444444444444UL);
	csr_clear(mstatus, MSTATUS_SUM);
	v = mprv("M load, MPRV=1 MPP=U, U page", 0, VA(PG_URW), MODE_U, 0);
	rt_check("  value", v, 0x4444444444444444UL);
	mprv("M store, MPRV=1 MPP=U, U page", 1, VA(PG_URW) + 0x38, MODE_U, 0);
	rt_check("  stored at PA", ((volatile u64 *)data[D_URW])[7], 0x3c3c);
	mprv("M load, MPRV=1 MPP=U, S page", 0, VA(PG_RW), MODE_U,
	     CAUSE_LOAD_PF);
	mprv("M load, MPRV=1 MPP=S, X-only page, MXR=0", 0, VA(PG_XO), MODE_S,
	     CAUSE_LOAD_PF);
	csr_set(mstatus, MSTATUS_MXR);
	v = mprv("M load, MPRV=1 MPP=S, X-only page, MXR=1", 0, VA(PG_XO),
		 MODE_S, 0);
	rt_check("  value", v, 0x3333333300008067UL);
	csr_clear(mstatus, MSTATUS_MXR);
	/* MPP = M: no translation, so the identity address is physical. */
	v = mprv("M load, MPRV=1 MPP=M, physical address", 0, (u64)&marker,
		 MODE_M, 0);
	rt_check("  value", v, 0x6d61726b6572UL);
}

/* S-mode: run the routine at VA(PG_CODE), remap the page, sfence, run again. */
static long s_code_remap(long pte_addr, long new_pte)
{
	long (*fn)(void) = (long (*)(void))VA(PG_CODE);
	long a = fn();
	*(volatile u64 *)pte_addr = (u64)new_pte;
	__asm__ volatile("sfence.vma" ::: "memory");
	long b = fn();
	return a * 10 + b;
}

static void test_code_remap(void)
{
	rt_trap_reset();
	long r = rt_run(MODE_S, s_code_remap, (long)&L0_LOW[PG_CODE],
			(long)pte_leaf((u64)data[D_CODE_B],
				       PTE_R | PTE_X | PTE_AD));
	section("S runs code, remaps its page to other code, sfence.vma, runs");
	rt_check("  traps", rt_mtrap.count, 0);
	rt_check("  results (10 * first + second)", (u64)r, 12);
	L0_LOW[PG_CODE] = pte_leaf((u64)data[D_CODE_A], PTE_R | PTE_X | PTE_AD);
	__asm__ volatile("sfence.vma" ::: "memory");
}

static void test_bad_ptes(void)
{
	S_LD("S load through a non-leaf PTE at level 0", VA(PG_NONLEAF) + 8,
	     CAUSE_LOAD_PF);
	S_X("S fetch through a non-leaf PTE at level 0", VA(PG_NONLEAF),
	    CAUSE_FETCH_PF);
	S_LD("S load, PTE reserved bit 54 set", VA(PG_RSV), CAUSE_LOAD_PF);
	S_SD("S store, PTE reserved bit 54 set", VA(PG_RSV), 1, CAUSE_STORE_PF);
	S_LD("S load, PBMT bits set without Svpbmt", VA(PG_PBMT), CAUSE_LOAD_PF);
	S_LD("S load, N bit set without Svnapot", VA(PG_NAPOT), CAUSE_LOAD_PF);
	u64 v = S_LD("S load, G bit set", VA(PG_RW_G), 0);
	rt_check("  value", v, 0x1111111111111111UL);
}

/*
 * A 32-bit instruction whose second half is on an unmapped page: an
 * instruction page fault at the instruction's address, with tval the
 * start of the unmapped page (the part that faulted).
 */
static long s_fetch_twice(long first, long second)
{
	p_fetch(first, 0);
	return p_fetch(second, 0);
}

static void test_fetch_across_pages(void)
{
	/* First with the first page not yet used, then with it just used. */
	for (int warm = 0; warm < 2; warm++) {
		rt_trap_reset();
		if (warm)
			rt_run(MODE_S, s_fetch_twice, (long)VA(PG_XSPAN),
			       (long)(VA(PG_XSPAN) + 4094));
		else
			rt_run(MODE_S, p_fetch, (long)(VA(PG_XSPAN) + 4094), 0);
		section(warm ? "S fetch of a 32-bit insn whose 2nd half is "
			       "unmapped, 1st page just executed"
			     : "S fetch of a 32-bit insn whose 2nd half is "
			       "unmapped");
		rt_check("  traps", rt_mtrap.count, 1);
		rt_check("  mcause", rt_mtrap.cause, CAUSE_FETCH_PF);
		rt_check("  mtval", rt_mtrap.tval, VA(PG_XSPAN + 1));
#ifdef VM_STRICT
		rt_check("  mepc", rt_mtrap.epc, VA(PG_XSPAN) + 4094);
#endif
	}
}

/* AMOs and LR/SC through translation. */
long p_amoadd_d(long, long);
long p_lr_d(long, long);
long p_sc_d(long, long);
__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".globl p_amoadd_d\n"
	"p_amoadd_d: amoadd.d a0, a1, (a0)\n"
	"	ret\n"
	".globl p_lr_d\n"
	"p_lr_d: lr.d a0, (a0)\n"
	"	ret\n"
	".globl p_sc_d\n"
	"p_sc_d: lr.d t0, (a0)\n"
	"	sc.d a0, a1, (a0)\n"
	"	ret\n"
	".option pop\n"
	".popsection\n");

static void test_amo_translation(void)
{
	((volatile u64 *)data[D_RW])[8] = 40;
	u64 v = probe("S amoadd.d on RW page", MODE_S, p_amoadd_d, NULL,
		      VA(PG_RW) + 64, 2, 0);
	rt_check("  old value", v, 40);
	rt_check("  memory", ((volatile u64 *)data[D_RW])[8], 42);
	probe("S amoadd.d on RO page", MODE_S, p_amoadd_d, NULL, VA(PG_RO) + 64,
	      2, CAUSE_STORE_PF);
#ifdef VM_STRICT
	probe("S amoadd.d on invalid PTE", MODE_S, p_amoadd_d, NULL,
	      VA(PG_INV) + 64, 2, CAUSE_STORE_PF);
#endif
	v = probe("S lr.d on RO page", MODE_S, p_lr_d, NULL, VA(PG_RO), 0, 0);
	rt_check("  value", v, 0x2222222222222222UL);
	probe("S lr.d on invalid PTE", MODE_S, p_lr_d, NULL, VA(PG_INV), 0,
	      CAUSE_LOAD_PF);
}

/* A page walk that reads no memory raises an access fault, not a page fault. */
static __attribute__((unused)) void test_walk_access_fault(void)
{
	/* M with MPRV: the root table at PA 0, where there is no memory. */
	set_satp(SATP_SV39 | (0x0UL >> 12));
	mprv("M load, MPRV=1 MPP=S, root table at PA 0 (no memory)", 0,
	     VA(PG_RW) + 8, MODE_S, 5);
	mprv("M store, MPRV=1 MPP=S, root table at PA 0 (no memory)", 1,
	     VA(PG_RW) + 8, MODE_S, 7);
	/* S with a level-1 pointer past the end of RAM. */
	set_satp(SATP_SV39 | ((u64)ROOT39 >> 12));
	u64 saved = ROOT39[1];
	ROOT39[1] = pte_table((void *)0x88000000UL);
	__asm__ volatile("sfence.vma" ::: "memory");
	S_LD("S load, level-1 table past the end of RAM", VA(PG_RW) + 16, 5);
	S_SD("S store, level-1 table past the end of RAM", VA(PG_RW) + 16, 1,
	     7);
	S_X("S fetch, level-1 table past the end of RAM", VA(PG_RW) + 16, 1);
	ROOT39[1] = saved;
	__asm__ volatile("sfence.vma" ::: "memory");
}

/* Misaligned accesses across two pages whose PAs are not adjacent. */
static void test_split_pages(void)
{
	u64 v = S_LD("S misaligned ld across two pages (PAs swapped)",
		     VA(PG_SPLIT) + 4092, 0);
	rt_check("  value", v, 0xb3b2b1b0a7a6a5a4UL);
	S_SD("S misaligned sd across two pages (PAs swapped)",
	     VA(PG_SPLIT) + 4094, 0x1122334455667788UL, 0);
	rt_check("  low page bytes", *(volatile u16 *)(data[D_SPLIT_LO] + 4094),
		 0x7788);
	rt_check("  high page bytes", *(volatile u64 *)data[D_SPLIT_HI],
		 0xb7b6112233445566UL);
	v = U_LD("U misaligned ld across S pages", VA(PG_SPLIT) + 4092,
		 CAUSE_LOAD_PF);

	rt_trap_reset();
	long r = rt_run(MODE_S, p_fetch, (long)(VA(PG_XS2) + 4094), 0);
	section("S executes a 32-bit insn across two pages (PAs swapped)");
	rt_check("  traps", rt_mtrap.count, 0);
	rt_check("  a0 + 1", (u64)r, VA(PG_XS2) + 4094 + 1);
}

/* Hardware A/D updates (Svadu-style, as both vmm and QEMU do). */
static void test_accessed_dirty(void)
{
	volatile u64 *pte_rw = &L0_LOW[PG_AD_RW];
	volatile u64 *pte_ro = &L0_LOW[PG_AD_RO];
	volatile u64 *pte_x = &L0_LOW[PG_AD_X];
	volatile u64 *pte_xo = &L0_LOW[PG_AD_XO];
	volatile u64 *pte_mega = &L1_LOW[3];
	u64 nonleaf0 = ROOT39[1], nonleaf1 = L1_LOW[0];

	S_LD("S load, A = 0", VA(PG_AD_RW) + 8, 0);
	rt_check("  A set, D still clear", *pte_rw & PTE_AD, PTE_A);
	S_SD("S store, A = 1, D = 0", VA(PG_AD_RW) + 8, 5, 0);
	rt_check("  A and D set", *pte_rw & PTE_AD, PTE_AD);
	S_SD("S store to a read-only page, A = 0", VA(PG_AD_RO) + 8, 5,
	     CAUSE_STORE_PF);
	rt_check("  A still clear after the fault", *pte_ro & PTE_AD, 0);
	S_X("S fetch, A = 0", VA(PG_AD_X), 0);
	rt_check("  A set, D clear", *pte_x & PTE_AD, PTE_A);
	csr_set(mstatus, MSTATUS_MXR);
	S_LD("S load, MXR = 1, X-only page, A = 0", VA(PG_AD_XO), 0);
	csr_clear(mstatus, MSTATUS_MXR);
	rt_check("  A set, D clear", *pte_xo & PTE_AD, PTE_A);
	S_SD("S store to a megapage, A = D = 0", VA_AD_MEGA + 0x100, 9, 0);
	rt_check("  A and D set in the level-1 PTE", *pte_mega & PTE_AD,
		 PTE_AD);
	rt_check("  non-leaf PTEs untouched (root)", ROOT39[1], nonleaf0);
	rt_check("  non-leaf PTEs untouched (level 1)", L1_LOW[0], nonleaf1);
}


/* S-mode: load through a TLB entry filled under one sstatus setting, then
 * again after changing SUM/MXR without any trap in between. Returns a
 * bitmask of which loads succeeded (a fault leaves the sentinel). */
long p_sum_flip(long, long);
long p_mxr_flip(long, long);
__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	/* a0 = U-page VA: load with SUM=1, then with SUM=0 */
	".globl p_sum_flip\n"
	"p_sum_flip: li t0, 0x40000\n"
	"	mv t2, a0\n"
	"	csrs sstatus, t0\n"
	"	li a0, -1\n"
	"	ld a0, 0(t2)\n"
	"	mv t3, a0\n"
	"	csrc sstatus, t0\n"
	"	li a0, -1\n"
	"	ld a0, 0(t2)\n"
	"	mv t4, a0\n"
	"	li a0, 0\n"
	"	li t5, -1\n"
	"	beq t3, t5, 1f\n"
	"	ori a0, a0, 1\n"
	"1:	beq t4, t5, 2f\n"
	"	ori a0, a0, 2\n"
	"2:	ret\n"
	/* a0 = X-only VA: load with MXR=1, then with MXR=0 */
	".globl p_mxr_flip\n"
	"p_mxr_flip: li t0, 0x80000\n"
	"	mv t2, a0\n"
	"	csrs sstatus, t0\n"
	"	li a0, -1\n"
	"	ld a0, 0(t2)\n"
	"	mv t3, a0\n"
	"	csrc sstatus, t0\n"
	"	li a0, -1\n"
	"	ld a0, 0(t2)\n"
	"	mv t4, a0\n"
	"	li a0, 0\n"
	"	li t5, -1\n"
	"	beq t3, t5, 1f\n"
	"	ori a0, a0, 1\n"
	"1:	beq t4, t5, 2f\n"
	"	ori a0, a0, 2\n"
	"2:	ret\n"
	".option pop\n"
	".popsection\n");

static void test_tlb_context(void)
{
	rt_trap_reset();
	long r = rt_run(MODE_S, p_sum_flip, (long)VA(PG_URW), 0);
	section("S loads a U page with SUM=1, clears SUM, loads again");
	rt_check("  loads that succeeded (bit 0: SUM=1, bit 1: SUM=0)", (u64)r,
		 1);
	rt_check("  traps", rt_mtrap.count, 1);
	rt_check("  mcause", rt_mtrap.cause, CAUSE_LOAD_PF);

	rt_trap_reset();
	r = rt_run(MODE_S, p_mxr_flip, (long)VA(PG_XO), 0);
	section("S loads an X-only page with MXR=1, clears MXR, loads again");
	rt_check("  loads that succeeded (bit 0: MXR=1, bit 1: MXR=0)", (u64)r,
		 1);
	rt_check("  traps", rt_mtrap.count, 1);

	/* The same VA from S (fills the TLB), then from U: U must fault. */
	S_LD("S load S page (TLB fill)", VA(PG_RW) + 0x48, 0);
	U_LD("U load the same S page right after", VA(PG_RW) + 0x48,
	     CAUSE_LOAD_PF);
	S_X("S execute X-only page (TLB fill)", VA(PG_XO), 0);
	U_X("U execute the same S page right after", VA(PG_XO),
	    CAUSE_FETCH_PF);
	/* M with MPRV: MPP=S fills, MPP=U must fault. */
	mprv("M load, MPRV=1 MPP=S, S page (TLB fill)", 0, VA(PG_RW) + 0x50,
	     MODE_S, 0);
	mprv("M load, MPRV=1 MPP=U, the same S page", 0, VA(PG_RW) + 0x50,
	     MODE_U, CAUSE_LOAD_PF);
}

/*
 * satp switches without sfence.vma that must still take effect: to Bare
 * (no translation at all), and to another ASID (when ASIDs exist).
 */
static void test_satp_switch(void)
{
	u64 sv39 = SATP_SV39 | ((u64)ROOT39 >> 12);
	set_satp(sv39);
	u64 v = S_LD("S load VA 0x8 under Sv39 (TLB fill)", 0x8, 0);
	rt_check("  value", v, ((volatile u64 *)data[D_RW])[1]);
	csr_write(satp, 0);
	S_LD("S load 0x8 after satp = Bare, no sfence (no memory)", 0x8, 5);

	/* Two address spaces: ASID 1 maps PG_REMAP to D_REMAP_A, ASID 2 (a
	 * copy of the tables) to D_REMAP_B. */
	static table_t root2 __attribute__((aligned(4096)));
	static table_t l1_2 __attribute__((aligned(4096)));
	static table_t l0_2 __attribute__((aligned(4096)));
	memcpy(root2, ROOT39, sizeof(table_t));
	memcpy(l1_2, L1_LOW, sizeof(table_t));
	memcpy(l0_2, L0_LOW, sizeof(table_t));
	root2[1] = pte_table(l1_2);
	l1_2[0] = pte_table(l0_2);
	l0_2[PG_REMAP] =
		pte_leaf((u64)data[D_REMAP_B], PTE_R | PTE_W | PTE_AD);
	u64 as1 = SATP_SV39 | (1UL << 44) | ((u64)ROOT39 >> 12);
	u64 as2 = SATP_SV39 | (2UL << 44) | ((u64)root2 >> 12);
	csr_write(satp, as1);
	int asids = (csr_read(satp) >> 44) & 0xffff;
	csr_write(satp, as2);
	asids = asids == 1 && ((csr_read(satp) >> 44) & 0xffff) == 2;
	__asm__ volatile("sfence.vma" ::: "memory");
	csr_write(satp, as1);
	u64 a = S_LD("S load under ASID 1 (TLB fill)", VA(PG_REMAP), 0);
	csr_write(satp, as2);
	if (!asids) /* without ASIDs, a switch needs a fence */
		__asm__ volatile("sfence.vma" ::: "memory");
	u64 b = S_LD("S load the same VA after switching to ASID 2", VA(PG_REMAP),
		     0);
	csr_write(satp, as1);
	if (!asids)
		__asm__ volatile("sfence.vma" ::: "memory");
	u64 c = S_LD("S load it again after switching back to ASID 1",
		     VA(PG_REMAP), 0);
	section("values seen under ASID 1, 2, 1");
	rt_check("  ASID 1", a, 0x6666666666666666UL);
	rt_check("  ASID 2", b, 0x7777777777777777UL);
	rt_check("  ASID 1 again", c, 0x6666666666666666UL);
	set_satp(sv39);
}

#ifndef VM_NAME
#define VM_NAME "vm"
#endif

int main(void)
{
	rt_puts(VM_NAME ": start\n");
	rt_trap_ok = 1;
	build_tables();
	test_satp_modes();

	rt_puts("== Sv39\n");
	set_satp(SATP_SV39 | ((u64)ROOT39 >> 12));
	test_permissions();
	test_superpages();
	test_high_half_and_gigapages();
	test_noncanonical_sv39();
	test_sfence();
	test_delegated_fault();
	test_mprv();
	test_code_remap();
	test_bad_ptes();
	test_fetch_across_pages();
	test_amo_translation();
	test_split_pages();
	test_accessed_dirty();
	test_tlb_context();
	test_satp_switch();
#ifdef VM_STRICT
	test_walk_access_fault();
#endif

	rt_puts("== Sv48\n");
	set_satp(SATP_SV48 | ((u64)ROOT48 >> 12));
	test_sv48();
	test_superpages();

	rt_puts("== Sv57\n");
	set_satp(SATP_SV57 | ((u64)ROOT57 >> 12));
	test_sv57();
	test_permissions();
	test_mprv();
	test_code_remap();

	set_satp(0);
	rt_trap_ok = 0;
	return rt_finish(VM_NAME);
}
