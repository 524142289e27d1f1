/*
 * pmp_strict: the PMP register choices where QEMU 10.0 departs from the
 * privileged spec (3.7.1), checked on vmm only (NOT_COMPARED in
 * tests/tests/qemu.rs; the PMP's matching and faults are in pmp.c, which
 * is compared):
 *
 *  - pmpaddr holds bits 55:2 of a 56-bit physical address on RV64: bits
 *    63:54 are WARL zero (QEMU 10.0 keeps all 64 bits).
 *  - pmpcfg R=0, W=1 is reserved: vmm's legal value clears W and keeps
 *    X and A (QEMU 10.0 without Smepmp keeps R=0, W=1).
 *  - With 16 entries, pmpcfg4-14 (even) and pmpaddr16-63 exist and are
 *    read-only zero (the spec: entries are implemented lowest first, "the
 *    remaining PMP CSRs are read-only zero"; QEMU 10.0 raises
 *    illegal-instruction). The odd pmpcfg numbers do not exist on RV64.
 */
#include "rt/rt.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define csr_read_n(n)                                                          \
	({                                                                     \
		u64 __v;                                                       \
		__asm__ volatile("csrr %0, " STR(n) : "=r"(__v)::"memory");    \
		__v;                                                           \
	})
#define csr_write_n(n, val)                                                    \
	__asm__ volatile("csrw " STR(n) ", %0" ::"r"((u64)(val)) : "memory")

#define PW 0x02UL
#define PX 0x04UL
#define NA4 0x10UL

int main(void)
{
	rt_puts("pmp_strict: PMP register WARL choices\n");
	csr_write(pmpaddr9, -1UL);
	rt_check("pmpaddr9 all ones", csr_read(pmpaddr9), (1UL << 54) - 1);
	csr_write(pmpaddr9, 0);
	csr_write(pmpcfg2, csr_read(pmpcfg2) | (NA4 | PW | PX) << 8);
	rt_check("pmp9cfg R=0 W=1", (csr_read(pmpcfg2) >> 8) & 0xff,
		 NA4 | PX);
	csr_write(pmpcfg2, csr_read(pmpcfg2) & ~(0xffUL << 8));
	rt_trap_ok = 1;
	rt_trap_reset();
	csr_write_n(CSR_PMPADDR16, -1UL);
	csr_write_n(CSR_PMPADDR63, -1UL);
	csr_write_n(CSR_PMPCFG4, -1UL);
	csr_write_n(CSR_PMPCFG14, -1UL);
	rt_check("pmpaddr16", csr_read_n(CSR_PMPADDR16), 0);
	rt_check("pmpaddr63", csr_read_n(CSR_PMPADDR63), 0);
	rt_check("pmpcfg4", csr_read_n(CSR_PMPCFG4), 0);
	rt_check("pmpcfg14", csr_read_n(CSR_PMPCFG14), 0);
	rt_check("traps", rt_mtrap.count, 0);
	/* pmpcfg1 does not exist: illegal instruction (mtval: its bits). */
	__asm__ volatile(".option push\n.option norvc\ncsrr t0, pmpcfg1\n"
			 ".option pop" ::: "t0", "memory");
	rt_check("pmpcfg1 mcause", rt_mtrap.cause, 2);
	rt_check("pmpcfg1 traps", rt_mtrap.count, 1);
	rt_trap_ok = 0;
	return rt_finish("pmp_strict");
}
