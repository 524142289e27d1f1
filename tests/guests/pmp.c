/*
 * pmp: Physical Memory Protection (privileged spec 3.7) with 16 entries.
 *
 * M-mode sets up PMP entries over the pages of `area` and probes them from
 * M, S and U: TOR, NA4 and NAPOT matching, load/store/fetch access faults
 * with their mcause and mtval, the priority of lower-numbered entries, a
 * partial match, accesses no entry matches, MPRV with MPP = S/U, a page
 * table walk that meets a PMP-denied page (an access fault, not a page
 * fault), and last the L bit (locked entries bind M-mode and ignore writes, also the
 * bottom of a locked TOR entry), since locks last until reset.
 *
 * Entries (P0..P7: the eight pages of `area`):
 *   0  OFF, address P0            (bottom of entry 1)
 *   1  TOR R                      [P0, P1)
 *   2  NA4, no permission         P1 + 8
 *   3  NAPOT X                    P2 (one page)
 *   4  NAPOT RW                   P1 (one page; entry 2 wins at P1 + 8)
 *   5  NAPOT, no permission       P4 (one page: the S page tables' L1 table)
 *   12 OFF, address 0, 13 TOR RWX [0, P5)       background below
 *   14 OFF, address P6, 15 TOR RWX [P6, 2^56)   background above
 * so P5 is matched by no entry (S and U fail there, M passes).
 *
 * Compared with QEMU 10.0 (tests/tests/qemu.rs). The WARL choices where
 * QEMU departs from the spec are in pmp_strict.c.
 */
#include "rt/rt.h"

/* pmpcfg fields (privileged spec 3.7.1). */
#define PR 0x01UL
#define PW 0x02UL
#define PX 0x04UL
#define TOR 0x08UL
#define NA4 0x10UL
#define NAPOT 0x18UL
#define LOCK 0x80UL

#define FETCH_ACCESS 1
#define LOAD_ACCESS 5
#define STORE_ACCESS 7
#define LOAD_PAGE_FAULT 13

#define PAGE 4096UL
static u8 area[8 * PAGE] __attribute__((aligned(PAGE)));
static u64 root[512] __attribute__((aligned(PAGE)));

#define P(i) ((u64)area + (i) * PAGE)
/* pmpaddr of a NAPOT region of one page at `a`. */
#define NAPOT_PAGE(a) (((a) >> 2) | 0x1ffUL)

long p_ld(long, long);
long p_lw(long, long);
long p_sd(long, long);
long p_fetch(long, long);
u64 p_mprv_ld(u64 addr, u64 mstatus_bits);
u64 p_mprv_sd(u64 addr, u64 mstatus_bits);

/* Probes whose faulting instruction is 4 bytes long (rt_skip_len = 4). */
__asm__(".option push\n"
	".option norvc\n"
	".text\n"
	".balign 4\n"
	".globl p_ld\n"
	"p_ld: ld a0, 0(a0)\n"
	"	ret\n"
	".globl p_lw\n"
	"p_lw: lw a0, 0(a0)\n"
	"	ret\n"
	".globl p_sd\n"
	"p_sd: sd a1, 0(a0)\n"
	"	ret\n"
	".globl p_fetch\n"
	"p_fetch: mv t1, ra\n"
	"	jalr ra, 0(a0)\n"
	"	mv ra, t1\n"
	"	ret\n"
	/* M-mode: set the mstatus bits a1 (MPRV, MPP), load, clear them. */
	".globl p_mprv_ld\n"
	"p_mprv_ld: csrs mstatus, a1\n"
	"	ld a0, 0(a0)\n"
	"	csrc mstatus, a1\n"
	"	ret\n"
	".globl p_mprv_sd\n"
	"p_mprv_sd: csrs mstatus, a1\n"
	"	sd zero, 0(a0)\n"
	"	csrc mstatus, a1\n"
	"	ret\n"
	".option pop\n");

static const char *mode_name(long mode)
{
	return mode == MODE_U ? "U" : mode == MODE_S ? "S" : "M";
}

/* Runs `probe(addr, 0)` in `mode` and checks the trap it takes (cause 0:
 * none) and its mtval. */
static void expect(const char *what, long mode, rt_fn probe, u64 addr,
		   u64 cause)
{
	rt_trap_reset();
	if (mode == MODE_M)
		probe((long)addr, 0);
	else
		rt_run(mode, probe, (long)addr, 0);
	rt_puts(mode_name(mode));
	rt_putc(' ');
	rt_puts(what);
	rt_putc(':');
	rt_putc('\n');
	if (cause == 0) {
		rt_check("  traps", rt_mtrap.count, 0);
		return;
	}
	rt_check("  traps", rt_mtrap.count, 1);
	rt_check("  mcause", rt_mtrap.cause, cause);
	rt_check("  mtval - area", rt_mtrap.tval - (u64)area,
		 addr - (u64)area);
	rt_check("  from", rt_mtrap.prev, (u64)mode);
}

static void expect_mprv(const char *what, u64 mpp, int store, u64 addr,
			u64 cause)
{
	u64 bits = MSTATUS_MPRV | (mpp << 11);
	rt_trap_reset();
	csr_clear(mstatus, MSTATUS_MPP);
	if (store)
		p_mprv_sd(addr, bits);
	else
		p_mprv_ld(addr, bits);
	csr_clear(mstatus, MSTATUS_MPRV | MSTATUS_MPP);
	rt_puts("MPRV MPP=");
	rt_puts(mode_name((long)mpp));
	rt_putc(' ');
	rt_puts(what);
	rt_puts(":\n");
	rt_check("  traps", rt_mtrap.count, cause ? 1 : 0);
	if (cause) {
		rt_check("  mcause", rt_mtrap.cause, cause);
		rt_check("  mtval - area", rt_mtrap.tval - (u64)area,
			 addr - (u64)area);
	}
}

static void setup(void)
{
	/* The background first (the runtime's entry 0 stays until pmpcfg0 is
	 * written below). */
	csr_write(pmpaddr12, 0);
	csr_write(pmpaddr13, P(5) >> 2);
	csr_write(pmpaddr14, P(6) >> 2);
	csr_write(pmpaddr15, -1UL);
	csr_write(pmpcfg2, (TOR | PR | PW | PX) << 40 | (TOR | PR | PW | PX) << 56);

	csr_write(pmpaddr0, P(0) >> 2);
	csr_write(pmpaddr1, P(1) >> 2);
	csr_write(pmpaddr2, (P(1) + 8) >> 2);
	csr_write(pmpaddr3, NAPOT_PAGE(P(2)));
	csr_write(pmpaddr4, NAPOT_PAGE(P(1)));
	csr_write(pmpaddr5, NAPOT_PAGE(P(4)));
	csr_write(pmpcfg0, (TOR | PR) << 8 | NA4 << 16 | (NAPOT | PX) << 24 |
				   (NAPOT | PR | PW) << 32 | NAPOT << 40);
}

static void test_registers(void)
{
	rt_check("pmpcfg0", csr_read(pmpcfg0), 0x0000181b1c100900UL);
	rt_check("pmpcfg2", csr_read(pmpcfg2), 0x0f000f0000000000UL);
	rt_check("pmpaddr1", csr_read(pmpaddr1), P(1) >> 2);
	rt_check("pmpaddr3", csr_read(pmpaddr3), NAPOT_PAGE(P(2)));
}

static void test_matching(void)
{
	static const long modes[] = {MODE_S, MODE_U};
	/* A `ret` in the execute-only page P2 and in the read-only page P0. */
	*(volatile u32 *)P(2) = 0x00008067;
	*(volatile u32 *)(P(0) + 64) = 0x00008067;
	__asm__ volatile("fence.i" ::: "memory");
	for (int i = 0; i < 2; i++) {
		long m = modes[i];
		/* TOR [P0, P1): R only. */
		expect("load TOR R", m, p_ld, P(0) + 16, 0);
		expect("load TOR R top", m, p_ld, P(1) - 8, 0);
		expect("store TOR R", m, p_sd, P(0) + 16, STORE_ACCESS);
		expect("fetch TOR R", m, p_fetch, P(0) + 64, FETCH_ACCESS);
		/* NA4 at P1 + 8 (no permission) before the NAPOT RW of P1. */
		expect("lw NA4", m, p_lw, P(1) + 8, LOAD_ACCESS);
		expect("sd NA4", m, p_sd, P(1) + 8, STORE_ACCESS);
		expect("lw next to NA4", m, p_lw, P(1) + 12, 0);
		expect("sd NAPOT RW", m, p_sd, P(1) + 16, 0);
		/* Twice: a page with several verdicts is never cached. */
		expect("lw NA4 again", m, p_lw, P(1) + 8, LOAD_ACCESS);
		/* Partial matches of the NA4 entry fail. */
		expect("ld over NA4", m, p_ld, P(1) + 8, LOAD_ACCESS);
		/* NAPOT X-only page. */
		expect("fetch NAPOT X", m, p_fetch, P(2), 0);
		expect("load NAPOT X", m, p_ld, P(2), LOAD_ACCESS);
		expect("store NAPOT X", m, p_sd, P(2) + 8, STORE_ACCESS);
		/* No entry matches P5. */
		expect("load unmatched", m, p_ld, P(5), LOAD_ACCESS);
		expect("store unmatched", m, p_sd, P(5) + 8, STORE_ACCESS);
		/* The background allows P6. */
		expect("store background", m, p_sd, P(6), 0);
	}
	/* M-mode obeys no unlocked entry and passes unmatched accesses. */
	expect("lw NA4", MODE_M, p_lw, P(1) + 8, 0);
	expect("store TOR R", MODE_M, p_sd, P(0) + 16, 0);
	expect("load NAPOT X", MODE_M, p_ld, P(2), 0);
	expect("load unmatched", MODE_M, p_ld, P(5), 0);
	/* A partial match fails in M-mode too. */
	expect("ld over NA4", MODE_M, p_ld, P(1) + 8, LOAD_ACCESS);
	/* A PMP change takes effect at once: P0 read-write now, then back. */
	csr_write(pmpcfg0, csr_read(pmpcfg0) | PW << 8);
	expect("store TOR RW", MODE_U, p_sd, P(0) + 16, 0);
	csr_write(pmpcfg0, csr_read(pmpcfg0) & ~(PW << 8));
	expect("store TOR R", MODE_U, p_sd, P(0) + 16, STORE_ACCESS);
}

static void test_mprv(void)
{
	expect_mprv("lw NA4", MODE_U, 0, P(1) + 8, LOAD_ACCESS);
	expect_mprv("lw NA4", MODE_S, 0, P(1) + 8, LOAD_ACCESS);
	expect_mprv("store TOR R", MODE_S, 1, P(0) + 16, STORE_ACCESS);
	expect_mprv("load TOR R", MODE_U, 0, P(0) + 16, 0);
	expect_mprv("store unmatched", MODE_U, 1, P(5), STORE_ACCESS);
	expect_mprv("load unmatched", MODE_M, 0, P(5), 0);
}

/* Sv39: VA 0x8000_0000 + 1 GiB maps onto itself (S only); VA 0x4000_0000
 * goes through an L1 table in P4, which the PMP denies S (and the walk,
 * whose accesses are made with privilege S). */
static void test_walk(void)
{
	u64 *l1 = (u64 *)P(4);
	for (int i = 0; i < 512; i++)
		root[i] = 0;
	root[2] = (0x80000000UL >> 12) << 10 | 0xcf; /* V R W X A D */
	root[1] = (P(4) >> 12) << 10 | 0x01;         /* pointer to P4 */
	/* L1[0]: a megapage onto RAM, valid if the walk could read it. */
	l1[0] = (0x80000000UL >> 12) << 10 | 0xcf;
	csr_write(satp, 8UL << 60 | (u64)root >> 12);
	__asm__ volatile("sfence.vma" ::: "memory");
	expect("walk via denied L1 load", MODE_S, p_ld, 0x40000010UL,
	       LOAD_ACCESS);
	expect("walk via denied L1 store", MODE_S, p_sd, 0x40000020UL,
	       STORE_ACCESS);
	expect("walk via denied L1 fetch", MODE_S, p_fetch, 0x40000040UL,
	       FETCH_ACCESS);
	/* The same table readable: the walk succeeds. */
	csr_write(pmpcfg0, csr_read(pmpcfg0) | PR << 40);
	expect("walk via readable L1", MODE_S, p_ld, 0x40000010UL, 0);
	csr_write(pmpcfg0, csr_read(pmpcfg0) & ~(PR << 40));
	/* Through the identity gigapage the PMP still checks the address. */
	expect("paged store TOR R", MODE_S, p_sd, P(0) + 16, STORE_ACCESS);
	csr_write(satp, 0);
	__asm__ volatile("sfence.vma" ::: "memory");
}

static void test_lock(void)
{
	/* Entry 6: locked NA4 R at P3. Entry 8: locked TOR R [P3+32, P3+64),
	 * with pmpaddr7 (entry 7 OFF) as its bottom. */
	csr_write(pmpaddr6, P(3) >> 2);
	csr_write(pmpaddr7, (P(3) + 32) >> 2);
	csr_write(pmpaddr8, (P(3) + 64) >> 2);
	csr_write(pmpcfg0, csr_read(pmpcfg0) | (LOCK | NA4 | PR) << 48);
	csr_write(pmpcfg2, csr_read(pmpcfg2) | (LOCK | TOR | PR));
	expect("lw locked NA4 R", MODE_M, p_lw, P(3), 0);
	expect("store locked NA4 R", MODE_M, p_sd, P(3), STORE_ACCESS);
	expect("store locked TOR R", MODE_M, p_sd, P(3) + 40, STORE_ACCESS);
	expect("load locked TOR R", MODE_M, p_ld, P(3) + 40, 0);
	expect("store next to locked", MODE_M, p_sd, P(3) + 8, 0);
	expect("store locked NA4 R", MODE_U, p_sd, P(3), STORE_ACCESS);
	expect("lw locked NA4 R", MODE_U, p_lw, P(3), 0);
	/* Writes to locked entries (and a locked TOR entry's bottom) are
	 * ignored; other bytes of the same pmpcfg register still change. */
	csr_write(pmpaddr6, 0);
	csr_write(pmpaddr7, 0);
	csr_write(pmpaddr8, 0);
	csr_write(pmpcfg0, csr_read(pmpcfg0) & ~(0xffUL << 48) & ~(0xffUL << 8));
	csr_write(pmpcfg2, csr_read(pmpcfg2) & ~0xffUL);
	rt_check("pmpaddr6 locked", csr_read(pmpaddr6), P(3) >> 2);
	rt_check("pmpaddr7 under locked TOR", csr_read(pmpaddr7),
		 (P(3) + 32) >> 2);
	rt_check("pmpaddr8 locked", csr_read(pmpaddr8), (P(3) + 64) >> 2);
	rt_check("pmp6cfg locked", (csr_read(pmpcfg0) >> 48) & 0xff,
		 LOCK | NA4 | PR);
	rt_check("pmp1cfg unlocked", (csr_read(pmpcfg0) >> 8) & 0xff, 0);
	rt_check("pmp8cfg locked", csr_read(pmpcfg2) & 0xff, LOCK | TOR | PR);
	expect("store locked NA4 R", MODE_M, p_sd, P(3), STORE_ACCESS);
}

int main(void)
{
	rt_puts("pmp: PMP with 16 entries\n");
	rt_trap_ok = 1;
	rt_skip_len = 4;
	setup();
	test_registers();
	test_matching();
	test_mprv();
	test_walk();
	test_lock();
	rt_trap_ok = 0;
	return rt_finish("pmp");
}
