/* sbi_tlb_stale: a `vmm run` guest kernel whose output depends on the translations its
   hart has cached (tests/tests/run.rs: snapshots at any point restore the same run).

   Under Sv39 (RAM identity-mapped by one 1 GiB page, STALE_VA by a 4 KiB page) it reads
   and writes STALE_VA, so that the walk sets the PTE's A and D bits, then clears A and D
   with a store to the PTE and no SFENCE.VMA (as Linux does to age pages), and also points
   the PTE at another page. After a long computation it reads and writes STALE_VA again.
   The privileged spec lets a hart go on using the cached translation (4.2.1,
   "Supervisor Memory-Management Fence Instruction": without an SFENCE.VMA, an implicit
   reference may or may not see the store), and this hart does while the translation stays
   in its TLB: the accesses reach the old page and leave A and D clear. A snapshot taken
   anywhere in between must keep that: a restored hart that walked again would see the new
   page and set A and D. Prints what it saw, then SFENCE.VMA and the new page. */
#include "csr.h"
#include "vs/sbi.h"
#include "sv39.h"

/* VPN[2] = 1, VPN[1] = 0, VPN[0] = 0x80: a TLB slot (VPN mod 256) that none of the
   kernel's own pages (code, data, stack: VPN mod 256 below 0x40) takes. */
#define STALE_IDX 0x80
#define STALE_VA (0x40000000UL + (STALE_IDX << 12))

static u64 pt_root[512] __attribute__((aligned(4096)));
static u64 pt_l1[512] __attribute__((aligned(4096)));
static volatile u64 pt_l0[512] __attribute__((aligned(4096)));
static volatile u64 page_old[512] __attribute__((aligned(4096)));
static volatile u64 page_new[512] __attribute__((aligned(4096)));

/* About 40 instructions per round, none touching STALE_VA. */
static u64 churn(u64 rounds)
{
	u64 x = 0x9e3779b97f4a7c15UL;
	for (u64 i = 0; i < rounds; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		x += i * 0x2545f4914f6cdd1dUL;
	}
	return x;
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	page_old[0] = 0x01d;
	page_new[0] = 0x2e3;
	pt_root[2] = pte((void *)0x80000000UL, PTE_V | PTE_R | PTE_W | PTE_X | PTE_A | PTE_D);
	pt_root[1] = pte(pt_l1, PTE_V);
	pt_l1[0] = pte(pt_l0, PTE_V);
	pt_l0[STALE_IDX] = pte(page_old, PTE_V | PTE_R | PTE_W);
	u64 satp = SATP_SV39 | ((u64)pt_root >> 12);
	__asm__ volatile("sfence.vma\n\tcsrw satp, %0\n\tsfence.vma" ::"r"(satp) : "memory");

	volatile u64 *va = (volatile u64 *)STALE_VA;
	u64 first = va[0];
	va[1] = first + 1;
	u64 first_flags = pt_l0[STALE_IDX] & (PTE_A | PTE_D);
	printk("sbi_tlb_stale: first access read %x, PTE A|D %x\n", first, first_flags);
	/* A and D cleared and the page moved, without SFENCE.VMA. */
	pt_l0[STALE_IDX] = pte(page_new, PTE_V | PTE_R | PTE_W);
	printk("sbi_tlb_stale: PTE changed without a fence\n");
	u64 c = churn(20000);
	u64 again = va[0];
	va[2] = again + 1;
	u64 flags = pt_l0[STALE_IDX] & (PTE_A | PTE_D);
	printk("sbi_tlb_stale: churn %x\n", c);
	printk("sbi_tlb_stale: second access read %x, PTE A|D %x\n", again, flags);
	__asm__ volatile("sfence.vma" ::: "memory");
	u64 fenced = va[0];
	flags = pt_l0[STALE_IDX] & (PTE_A | PTE_D);
	printk("sbi_tlb_stale: after SFENCE.VMA read %x, PTE A|D %x\n", fenced, flags);
	__asm__ volatile("csrw satp, zero\n\tsfence.vma" ::: "memory");
	check("first access: the old page", first, 0x01d);
	check("first access: A and D set by the walk", first_flags, PTE_A | PTE_D);
	check("after SFENCE.VMA: the new page", fenced, 0x2e3);
	printk("sbi_tlb_stale: %s\n", fenced == 0x2e3 ? "PASS" : "FAIL");
	return 0;
}
