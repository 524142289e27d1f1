/* Control Transfer Records (Smctr/Ssctr) from a VS-mode guest kernel of `vmm run`, with
   the register names and fields of the generated csr.h.

   The guest sees the S-level CTR registers; the hart maps them to the V=1 ones:
   - sctrctl (vsctrctl on the hart): which modes record (CTRCTL_S = the guest's kernel,
     CTRCTL_U = its user mode), STE, BPFRZ, LCOFIFRZ, RASEMU and the transfer type filters
     (CTRCTL_EXCINH ... CTRCTL_DIRLJMPINH, CTRCTL_NTBREN);
   - sctrstatus: WRPTR (next entry written) and FROZEN;
   - sctrdepth: DEPTH, the buffer holds 16 << DEPTH entries. Every guest access to it is a
     virtual-instruction exit that the VMM (ctr-virt) emulates: a depth the VM may not use
     reads back as another one;
   - the entries through siselect = 0x200 + i (i = 0 is the youngest) and sireg (ctrsource),
     sireg2 (ctrtarget), sireg3 (ctrdata);
   - SCTRCLR (an instruction) clears every entry.
   The guest's first CTR access makes the VMM load this vCPU's CTR context (one exit); after
   that every access but sctrdepth runs on the hart without an exit. Without CTR
   (`vmm run --ctr off`) each of them is an illegal-instruction exception in the guest.

   CSRs are written by number: binutils 2.40 does not know the CTR names. Everything here is
   static inline: include it in any number of files. */
#ifndef SDK_VS_CTR_H
#define SDK_VS_CTR_H

#include "csr.h"
#include "vs/sbi.h"

#define SDK_STR_(x) #x
/* The text of a macro's value: SDK_STR(CSR_SCTRCTL) is "0x14e". */
#define SDK_STR(x) SDK_STR_(x)

/* The SCTRCLR instruction (SYSTEM, funct12 0x104). */
#define CTR_SCTRCLR_INSN ".word 0x10400073"
/* siselect value of entry 0. */
#define CTR_ISELECT_BASE 0x200

/* Transfer types of ctrdata.TYPE (Smctr 3.3 "Control Transfer Record Metadata Register
   (ctrdata)"). */
#define CTR_TYPE_EXCEPTION 1
#define CTR_TYPE_INTERRUPT 2
#define CTR_TYPE_TRAP_RETURN 3
#define CTR_TYPE_NOT_TAKEN_BRANCH 4
#define CTR_TYPE_TAKEN_BRANCH 5
#define CTR_TYPE_INDIRECT_CALL 8
#define CTR_TYPE_DIRECT_CALL 9
#define CTR_TYPE_INDIRECT_JUMP 10
#define CTR_TYPE_DIRECT_JUMP 11
#define CTR_TYPE_CORSWAP 12
#define CTR_TYPE_RETURN 13
#define CTR_TYPE_OTHER_INDIRECT_JUMP 14
#define CTR_TYPE_OTHER_DIRECT_JUMP 15

/* One record: ctrsource (bit 0 = V, valid), ctrtarget (bit 0 = MISP), ctrdata. */
struct ctr_entry {
	u64 source, target, data;
};

/* Writes sctrdepth.DEPTH (0..4: 16..256 entries) and returns what it reads back: the
   depth the VMM granted. */
static inline __attribute__((always_inline)) u64 ctr_set_depth(u64 depth)
{
	u64 v;
	__asm__ volatile("csrw " SDK_STR(CSR_SCTRDEPTH) ", %0" ::"r"(depth));
	__asm__ volatile("csrr %0, " SDK_STR(CSR_SCTRDEPTH) : "=r"(v));
	return v;
}

/* The number of entries: 16 << sctrdepth.DEPTH. */
static inline u64 ctr_depth(void)
{
	u64 v;
	__asm__ volatile("csrr %0, " SDK_STR(CSR_SCTRDEPTH) : "=r"(v));
	return 16UL << (v & SCTRDEPTH_DEPTH);
}

/* SCTRCLR: every entry invalid, the cycle counter reset. */
static inline __attribute__((always_inline)) void ctr_clear(void)
{
	__asm__ volatile(CTR_SCTRCLR_INSN ::: "memory");
}

static inline __attribute__((always_inline)) void ctr_set_status(u64 v)
{
	__asm__ volatile("csrw " SDK_STR(CSR_SCTRSTATUS) ", %0" ::"r"(v));
}

static inline __attribute__((always_inline)) u64 ctr_status(void)
{
	u64 v;
	__asm__ volatile("csrr %0, " SDK_STR(CSR_SCTRSTATUS) : "=r"(v));
	return v;
}

/* Writes sctrctl: recording starts (or stops, with 0) right after this instruction. */
static inline __attribute__((always_inline)) void ctr_set_ctl(u64 v)
{
	__asm__ volatile("csrw " SDK_STR(CSR_SCTRCTL) ", %0" ::"r"(v));
}

static inline __attribute__((always_inline)) u64 ctr_ctl(void)
{
	u64 v;
	__asm__ volatile("csrr %0, " SDK_STR(CSR_SCTRCTL) : "=r"(v));
	return v;
}

/* Freezes the buffer (sctrstatus.FROZEN): nothing more is recorded until it is cleared. */
static inline __attribute__((always_inline)) void ctr_freeze(void)
{
	__asm__ volatile("csrs " SDK_STR(CSR_SCTRSTATUS) ", %0" ::"r"(SCTRSTATUS_FROZEN));
}

/* Reads register `reg` of entry i (0 = the youngest): 0 ctrsource, 1 ctrtarget,
   2 ctrdata. */
static inline u64 ctr_read_reg(u64 i, int reg)
{
	u64 v = 0;
	__asm__ volatile("csrw " SDK_STR(CSR_SISELECT) ", %0" ::"r"(CTR_ISELECT_BASE + i));
	if (reg == 0)
		__asm__ volatile("csrr %0, " SDK_STR(CSR_SIREG) : "=r"(v));
	else if (reg == 1)
		__asm__ volatile("csrr %0, " SDK_STR(CSR_SIREG2) : "=r"(v));
	else
		__asm__ volatile("csrr %0, " SDK_STR(CSR_SIREG3) : "=r"(v));
	return v;
}

/* Reads entry i (0 = the youngest); returns whether it is valid (ctrsource.V). */
static inline int ctr_read(u64 i, struct ctr_entry *e)
{
	e->source = ctr_read_reg(i, 0);
	e->target = ctr_read_reg(i, 1);
	e->data = ctr_read_reg(i, 2);
	return (e->source & CTRSOURCE_V) != 0;
}

/* The elapsed cycles of ctrdata's CC field (Smctr 6.3 "Cycle Counting"), or -1 when CCV
   is 0. */
static inline i64 ctr_cycles(u64 data)
{
	if (!(data & CTRDATA_CCV))
		return -1;
	u64 ccm = (data & CTRDATA_CCM) >> 16, cce = (data & CTRDATA_CCE) >> 28;
	return cce == 0 ? (i64)ccm : (i64)((4096 + ccm) << (cce - 1));
}

/* The name of a ctrdata.TYPE value. */
static inline const char *ctr_type_name(u64 type)
{
	static const char *const names[16] = {
		"none",		  "exception",	       "interrupt",
		"trap return",	  "not-taken branch",  "taken branch",
		"reserved",	  "reserved",	       "indirect call",
		"direct call",	  "indirect jump",     "direct jump",
		"co-routine swap", "return",	       "other indirect jump",
		"other direct jump",
	};
	return names[type & CTRDATA_TYPE];
}

#endif
