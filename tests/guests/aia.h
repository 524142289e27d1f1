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

#endif
