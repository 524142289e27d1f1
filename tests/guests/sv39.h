/* sv39.h: Sv39 page-table entries for the `vmm run` guest kernels that map pages of their
   own (privileged spec, "Sv39: Page-Based 39-bit Virtual-Memory System"). */
#ifndef SV39_H
#define SV39_H

#define PTE_V 0x01UL
#define PTE_R 0x02UL
#define PTE_W 0x04UL
#define PTE_X 0x08UL
#define PTE_A 0x40UL
#define PTE_D 0x80UL
#define SATP_SV39 (8UL << 60)

/* The PTE that maps to (or points at the next-level table at) `p`, with `flags`. */
static inline u64 pte(const volatile void *p, u64 flags)
{
	return (((u64)p >> 12) << 10) | flags;
}

#endif
