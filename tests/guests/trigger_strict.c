/*
 * trigger_strict: the Sdtrig checks of vmm's own choices where the debug
 * spec leaves them to the implementation, and of the spec's rules QEMU 10.0
 * does not follow (not compared with QEMU; trigger.c has the rest):
 * - tinfo: version 1 (the ratified 1.0 layout; QEMU 10.0 reports 0) and
 *   types 6 and 15; tdata1 = 0 gives type 15 ("If this trigger supports
 *   multiple types, then the hardware should disable it by changing type to
 *   15"; QEMU 10.0 ignores the write, leaving the trigger armed, although
 *   "writing 0 to this register must result in a trigger that is disabled");
 *   the WARL fields vmm keeps (dmode, select, size, action, chain,
 *   uncertain, uncertainen read 0).
 * - match modes NAPOT (maskmax6 = 63), >=, <, mask low/high and the negated
 *   ones, on every byte of an access (QEMU 10.0 keeps match 0 only).
 * - Native triggers (debug spec 5.4, the first solution): no match in M
 *   while mstatus.MIE = 0, in HS while medeleg[3] = 1 and sstatus.SIE = 0,
 *   in VS while medeleg[3] = hedeleg[3] = 1 and vsstatus.SIE = 0 (QEMU 10.0
 *   fires in all three).
 * - hit0 set when a trigger fires; a failing SC matches a store trigger (5.5.1
 *   leaves it UNSPECIFIED); a store trigger outranks a misaligned AMO.
 */
#include "trigger.h"

static void warl(void)
{
	rt_puts("-- WARL\n");
	csrw_n(CSR_TSELECT, 0);
	rt_check("tinfo", csrr_n(CSR_TINFO), (1UL << 24) | (1UL << 15) | (1UL << 6));
	csrw_n(CSR_TDATA1, 0);
	rt_check("tdata1 = 0", csrr_n(CSR_TDATA1), TDATA1_TYPE_DISABLED);
	/* "Writing 0 to this register must result in a trigger that is
	   disabled" (QEMU 10.0 leaves it armed). */
	data[1] = 0x1111111111111111UL;
	csrw_n(CSR_TDATA2, (u64)&data[1]);
	csrw_n(CSR_TDATA1, T6 | L | ALLMODES);
	expect_bp("ld, trigger set", M_, hp_ld, (u64)&data[1], 0, (u64)hp_ld,
		  (u64)&data[1], (long)&data[1]);
	csrw_n(CSR_TSELECT, 0);
	csrw_n(CSR_TDATA1, 0);
	expect_none("ld after tdata1 = 0", M_, hp_ld, (u64)&data[1], 0,
		    0x1111111111111111L);

	csrw_n(CSR_TDATA1, T6 | (~0UL >> 4));
	rt_check("tdata1 all ones", csrr_n(CSR_TDATA1),
		 T6 | MCONTROL6_HIT1 | MCONTROL6_HIT0 | ALLMODES | X | L | S);
	csrw_n(CSR_TDATA1, T6 | MATCH(7) | L | MM);
	rt_check("tdata1 match 7 (reserved)", csrr_n(CSR_TDATA1), T6 | L | MM);
	csrw_n(CSR_TDATA1, 2UL << 60 | 0x7f);
	rt_check("tdata1 type 2", csrr_n(CSR_TDATA1), TDATA1_TYPE_DISABLED);
	/* maskmax6 (5.7 mcontrol6): all ones clears bit maskmax6 - 1. */
	csrw_n(CSR_TDATA1, 0);
	csrw_n(CSR_TDATA2, 0);
	csrw_n(CSR_TDATA1, T6 | MATCH(1));
	csrw_n(CSR_TDATA2, ~0UL);
	rt_check("NAPOT tdata2 all ones", csrr_n(CSR_TDATA2), ~(1UL << 62));
	csrw_n(CSR_TDATA1, 0);
	csrw_n(CSR_TDATA2, ~0UL);
	rt_check("disabled tdata2 all ones", csrr_n(CSR_TDATA2), ~0UL);
	csrw_n(CSR_TSELECT, 3);
	csrw_n(CSR_TSELECT, 4);
	rt_check("tselect 4 (4 triggers)", csrr_n(CSR_TSELECT), 3);
	csrw_n(CSR_TDATA1, 0);
	csrw_n(CSR_TSELECT, 0);
}

static void matches(void)
{
	rt_puts("-- match modes\n");
	u64 d = (u64)data;
	for (int i = 0; i < 16; i++)
		data[i] = 0x1111111111111111UL * (u64)i;
	/* NAPOT 64 bytes at d. */
	set_trigger(0, T6 | L | ALLMODES | MATCH(1), d | 0x1f);
	expect_bp("lw NAPOT inside", HS_, hp_lw, d + 60, 0, (u64)hp_lw, d + 60,
		  (long)(d + 60));
	expect_bp("ld NAPOT straddling", U_, hp_ld, d - 4, 0, (u64)hp_ld, d,
		  (long)(d - 4));
	expect_none("ld NAPOT above", HS_, hp_ld, d + 64, 0,
		    0x8888888888888888L);
	set_trigger(0, T6 | L | ALLMODES | MATCH(9), d | 0x1f);
	expect_none("ld not NAPOT inside", VS_, hp_ld, d + 8, 0,
		    0x1111111111111111L);
	expect_bp("ld not NAPOT above", VS_, hp_ld, d + 64, 0, (u64)hp_ld,
		  d + 64, (long)(d + 64));
	set_trigger(0, T6 | L | ALLMODES | MATCH(2), d + 32);
	expect_bp("ld >=", U_, hp_ld, d + 32, 0, (u64)hp_ld, d + 32,
		  (long)(d + 32));
	expect_none("ld below >=", U_, hp_ld, d + 24, 0, 0x3333333333333333L);
	set_trigger(0, T6 | L | ALLMODES | MATCH(3), d + 8);
	expect_bp("ld <", VS_, hp_ld, d, 0, (u64)hp_ld, d, (long)d);
	expect_none("ld at <", VS_, hp_ld, d + 8, 0, 0x1111111111111111L);
	/* Mask low: bits 31:0 & tdata2[63:32] == tdata2[31:0]. */
	set_trigger(0, T6 | S | ALLMODES | MATCH(4),
		    (0xffffffc0UL << 32) | ((d + 64) & 0xffffffc0UL));
	expect_bp("sd mask low", VU_, hp_sd, d + 72, 1, (u64)hp_sd, d + 72,
		  (long)(d + 72));
	expect_none("sd outside mask low", VU_, hp_sd, d + 56, 0x77,
		    (long)(d + 56));
	rt_check("  memory", data[7], 0x77);
	set_trigger(0, T6 | S | ALLMODES | MATCH(8), d + 56);
	expect_bp("sd not equal", M_, hp_sd, d + 8, 1, (u64)hp_sd, d + 8,
		  (long)(d + 8));
	/* An access compares each of its bytes: lw at d + 6 covers d + 8. */
	set_trigger(0, T6 | L | ALLMODES, d + 8);
	expect_bp("lw over the address", HS_, hp_lw, d + 6, 0, (u64)hp_lw,
		  d + 8, (long)(d + 6));
	/* Two triggers: the lower-numbered one gives mtval. */
	set_trigger(0, T6 | L | ALLMODES | MATCH(2), d + 8);
	set_trigger(1, T6 | L | ALLMODES, d + 12);
	expect_bp("ld, two triggers", HS_, hp_ld, d + 8, 0, (u64)hp_ld, d + 8,
		  (long)(d + 8));
	clear_triggers();
}

static void native(void)
{
	rt_puts("-- native triggers\n");
	u64 d = (u64)data;
	set_trigger(0, T6 | L | MM, d + 8);
	h_reset();
	long r = hp_ld((long)(d + 8), 0);
	header("M", "ld with MIE = 0");
	rt_check("  traps", h_m.count, 0);
	rt_check("  result", (u64)r, 0x1111111111111111UL);
	expect_bp("ld with MIE = 1", M_, hp_ld, d + 8, 0, (u64)hp_ld, d + 8,
		  (long)(d + 8));
	csrw_n(CSR_TSELECT, 0);
	rt_check("  hit0", (csrr_n(CSR_TDATA1) >> 22) & 1, 1);

	/* HS with breakpoints delegated: SIE decides. */
	csr_set(medeleg, 1UL << CAUSE_BREAKPOINT);
	set_trigger(0, T6 | L | MS, d + 8);
	expect_none("ld, medeleg[3] = 1, SIE = 0", HS_, hp_ld, d + 8, 0,
		    0x1111111111111111L);
	csr_set(mstatus, MSTATUS_SIE);
	h_reset();
	r = run_hs(hp_ld, d + 8, 0);
	csr_clear(mstatus, MSTATUS_SIE);
	header("HS", "ld, medeleg[3] = 1, SIE = 1");
	rt_check("  traps to HS", h_s.count, 1);
	rt_check("  scause", h_s.cause, CAUSE_BREAKPOINT);
	rt_check("  stval", h_s.tval, d + 8);
	rt_check("  result", (u64)r, d + 8);
	/* Not delegated: SIE does not matter. */
	csr_clear(medeleg, 1UL << CAUSE_BREAKPOINT);
	expect_bp("ld, medeleg[3] = 0, SIE = 0", HS_, hp_ld, d + 8, 0,
		  (u64)hp_ld, d + 8, (long)(d + 8));

	/* VS with breakpoints delegated twice: vsstatus.SIE decides. */
	csr_set(medeleg, 1UL << CAUSE_BREAKPOINT);
	csrw_n(CSR_HEDELEG, 1UL << CAUSE_BREAKPOINT);
	set_trigger(0, T6 | L | MVS, d + 8);
	expect_none("ld, delegated to VS, vsstatus.SIE = 0", VS_, hp_ld, d + 8,
		    0, 0x1111111111111111L);
	csrs_n(CSR_VSSTATUS, SSTATUS_SIE);
	h_reset();
	r = run_vs(hp_ld, d + 8, 0);
	csrc_n(CSR_VSSTATUS, SSTATUS_SIE);
	header("VS", "ld, delegated to VS, vsstatus.SIE = 1");
	rt_check("  traps to VS", h_vs.count, 1);
	rt_check("  vscause", h_vs.cause, CAUSE_BREAKPOINT);
	rt_check("  vstval", h_vs.tval, d + 8);
	rt_check("  result", (u64)r, d + 8);
	/* VU is never quiet. */
	set_trigger(0, T6 | L | MVU, d + 8);
	h_reset();
	r = run_vu(hp_ld, d + 8, 0);
	header("VU", "ld, delegated to VS");
	rt_check("  traps to VS", h_vs.count, 1);
	rt_check("  result", (u64)r, d + 8);
	csrw_n(CSR_HEDELEG, 0);
	csr_clear(medeleg, 1UL << CAUSE_BREAKPOINT);
	clear_triggers();
}

static void atomics(void)
{
	rt_puts("-- atomics\n");
	u64 d = (u64)data;
	data[6] = 6;
	set_trigger(0, T6 | S | ALLMODES, d + 48);
	/* No reservation: the SC fails, but matches first. */
	expect_bp("sc.d, store trigger", U_, tp_sc, d + 48, 1, (u64)tp_sc, d + 48,
		  (long)(d + 48));
	/* The store breakpoint outranks the misaligned AMO. */
	set_trigger(0, T6 | S | ALLMODES, d + 52);
	expect_bp("misaligned amoadd.d", HS_, tp_amoadd, d + 52, 1,
		  (u64)tp_amoadd, d + 52, (long)(d + 52));
	rt_check("  memory unchanged", data[6], 6);
	clear_triggers();
}

int main(void)
{
	rt_puts("trigger_strict: Sdtrig choices of vmm\n");
	h_init();
	clear_triggers();
	warl();
	matches();
	native();
	atomics();
	return rt_finish("trigger_strict");
}
