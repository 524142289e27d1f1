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
 *  - An access fault of HLV (from HS) or of an M-mode load with MPRV and
 *    MPV = 1 that the PMP denies sets mstatus.GVA: mtval holds a guest
 *    virtual address (H extension, mstatus.GVA; QEMU 10.0 leaves it 0).
 */
#include "h.h"

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

static u8 denied[4096] __attribute__((aligned(4096)));

static void test_gva(void)
{
	u64 d = (u64)denied;
	h_init();
	/* Entry 15: everything RWX; entry 0: no permission on `denied`. */
	csr_write(pmpaddr15, -1UL);
	csr_write(pmpcfg2, 0x1fUL << 56);
	csr_write(pmpaddr0, (d >> 2) | 0x1ff);
	csr_write(pmpcfg0, 0x18);
	csrw_n(CSR_HSTATUS, HSTATUS_SPVP);
	h_reset();
	run_hs(hp_hlv_d, d + 8, 0);
	rt_check("HS hlv.d denied: mcause", h_m.cause, CAUSE_LOAD_ACCESS);
	rt_check("HS hlv.d denied: mtval", h_m.tval, d + 8);
	rt_check("HS hlv.d denied: mstatus.GVA",
		 (h_m.status & MSTATUS_GVA) != 0, 1);
	csrw_n(CSR_HSTATUS, 0);
	h_reset();
	csr_clear(mstatus, MSTATUS_MPP);
	__asm__ volatile(".option push\n.option norvc\n"
			 "csrs mstatus, %1\n"
			 "ld t0, 0(%0)\n"
			 "csrc mstatus, %2\n"
			 ".option pop" ::"r"(d + 16),
			 "r"(MSTATUS_MPV | MSTATUS_MPRV | (1UL << 11)),
			 "r"(MSTATUS_MPV | MSTATUS_MPRV | MSTATUS_MPP)
			 : "t0", "memory");
	rt_check("MPRV MPV=1 ld denied: mcause", h_m.cause, CAUSE_LOAD_ACCESS);
	rt_check("MPRV MPV=1 ld denied: mtval", h_m.tval, d + 16);
	rt_check("MPRV MPV=1 ld denied: mstatus.GVA",
		 (h_m.status & MSTATUS_GVA) != 0, 1);
}

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
	test_gva();
	return rt_finish("pmp_strict");
}
