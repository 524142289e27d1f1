/* CSR access by number (a csr.h constant), for CSRs the assembler may not know by name. */
#ifndef GUESTS_CSR_N_H
#define GUESTS_CSR_N_H

#define H_STR_(x) #x
#define H_STR(x) H_STR_(x)

#define csrr_n(n)                                                              \
	({                                                                     \
		u64 __v;                                                       \
		__asm__ volatile("csrr %0, " H_STR(n) : "=r"(__v)::"memory"); \
		__v;                                                           \
	})
#define csrw_n(n, val)                                                         \
	__asm__ volatile("csrw " H_STR(n) ", %0" ::"r"((u64)(val)) : "memory")
#define csrs_n(n, val)                                                         \
	__asm__ volatile("csrs " H_STR(n) ", %0" ::"r"((u64)(val)) : "memory")
#define csrc_n(n, val)                                                         \
	__asm__ volatile("csrc " H_STR(n) ", %0" ::"r"((u64)(val)) : "memory")

#endif
