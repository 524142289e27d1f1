/* aia.h: the AIA devices of a `vmm run` guest (`--aia aplic-imsic`, QEMU virt's S-level
   layout), for its guest kernels: the APLIC domain's registers (AIA spec, "Memory-mapped
   control region for an interrupt domain"), the IMSIC interrupt files' pages and their
   registers reached through siselect (AIA spec, "Incoming MSI Controller"), and the UART. */
#ifndef AIA_H
#define AIA_H

#define APLIC 0x0d000000UL
#define APLIC_DOMAINCFG 0x0000
#define APLIC_SOURCECFG(i) (0x0004 + 4 * ((i)-1))
#define APLIC_SETIENUM 0x1edc
#define APLIC_IN_CLRIP 0x1d00
#define APLIC_GENMSI 0x3000
#define APLIC_TARGET(i) (0x3004 + 4 * ((i)-1))
#define IMSIC 0x28000000UL
#define UART 0x10000000UL
#define UART_SOURCE 10

#define EIDELIVERY 0x70
#define EITHRESHOLD 0x72
#define EIP0 0x80
#define EIE0 0xc0

/* Writes the register `sel` of the interrupt file (siselect, sireg; needs csr.h). */
static inline void file_write(u64 sel, u64 v)
{
	__asm__ volatile("csrw %0, %1" ::"i"(CSR_SISELECT), "r"(sel));
	__asm__ volatile("csrw %0, %1" ::"i"(CSR_SIREG), "r"(v));
}

/* Reads the register `sel` of the interrupt file. */
static inline u64 file_read(u64 sel)
{
	u64 v;
	__asm__ volatile("csrw %0, %1" ::"i"(CSR_SISELECT), "r"(sel));
	__asm__ volatile("csrr %0, %1" : "=r"(v) : "i"(CSR_SIREG));
	return v;
}

/* Reads and claims the top interrupt identity in one instruction (stopei); 0: none. */
static inline u64 claim(void)
{
	u64 top;
	__asm__ volatile("csrrw %0, %1, zero" : "=r"(top) : "i"(CSR_STOPEI));
	return top >> 16;
}

#endif
