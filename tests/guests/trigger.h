/*
 * trigger.h: what the Sdtrig guests (trigger.c, trigger_strict.c) share:
 * mcontrol6 field shorthands, probes, runs in every mode (M with
 * mstatus.MIE = 1) and the breakpoint checks.
 */
#ifndef TRIGGER_H
#define TRIGGER_H

#include "h.h"

static u64 data[16] __attribute__((aligned(128)));

/* An address with nothing behind it on both boards (QEMU virt's map has a
   hole between the boot ROM and the test device). */
#define HOLE 0x50000UL

#define T6 TDATA1_TYPE_MCONTROL6
#define X MCONTROL6_EXECUTE
#define L MCONTROL6_LOAD
#define S MCONTROL6_STORE
#define MM MCONTROL6_M
#define MS MCONTROL6_S
#define MU MCONTROL6_U
#define MVS MCONTROL6_VS
#define MVU MCONTROL6_VU
#define ALLMODES (MM | MS | MU | MVS | MVU)
#define MATCH(m) ((u64)(m) << 7)

long tp_amoadd(long, long), tp_lr(long, long), tp_sc(long, long),
	tp_illegal(long, long), tp_csr_tselect(long, long);

__asm__(".option push\n"
	".option norvc\n"
	".text\n"
	".balign 4\n"
	".globl tp_amoadd\n tp_amoadd: amoadd.d a0, a1, (a0)\n ret\n"
	".globl tp_lr\n tp_lr: lr.d a0, (a0)\n ret\n"
	/* sc.d: a0 = 1 when it fails (no reservation here). */
	".globl tp_sc\n tp_sc: sc.d a0, a1, (a0)\n ret\n"
	".globl tp_illegal\n tp_illegal: .word 0\n ret\n"
	".globl tp_csr_tselect\n tp_csr_tselect: csrr a0, 0x7a0\n ret\n"
	".option pop\n");

enum { M_, HS_, U_, VS_, VU_ };
static const char *const names[] = { "M", "HS", "U", "VS", "VU" };

/* Runs fn(a0, a1) in `mode` (M: with mstatus.MIE = 1, so that M-mode
   triggers may fire, debug spec 5.4) and returns its a0. */
static long in_mode(int mode, rt_fn fn, u64 a0, u64 a1)
{
	long r;
	switch (mode) {
	case M_:
		csr_set(mstatus, MSTATUS_MIE);
		r = fn((long)a0, (long)a1);
		csr_clear(mstatus, MSTATUS_MIE);
		return r;
	case HS_:
		return run_hs(fn, a0, a1);
	case U_:
		return run_u(fn, a0, a1);
	case VS_:
		return run_vs(fn, a0, a1);
	default:
		return run_vu(fn, a0, a1);
	}
}

/* Trigger i: disabled first (5.7: so that tdata2 may take any value). */
static void set_trigger(u64 i, u64 t1, u64 t2)
{
	csrw_n(CSR_TSELECT, i);
	csrw_n(CSR_TDATA1, 0);
	csrw_n(CSR_TDATA2, t2);
	csrw_n(CSR_TDATA1, t1);
}

/* Type 6 with no access kind and no mode: disabled (tdata1 = 0 alone does
   not disable a trigger on QEMU 10.0, see trigger_strict.c). */
static void clear_triggers(void)
{
	set_trigger(0, T6, 0);
	set_trigger(1, T6, 0);
}

static void header(const char *mode, const char *what)
{
	rt_puts(mode);
	rt_putc(' ');
	rt_puts(what);
	rt_puts(":\n");
}

/* A breakpoint taken to M with mepc `epc` and mtval `tval`, fn returning
   `ret`. */
static void expect_bp(const char *what, int mode, rt_fn fn, u64 a0, u64 a1,
		      u64 epc, u64 tval, long ret)
{
	h_reset();
	long r = in_mode(mode, fn, a0, a1);
	header(names[mode], what);
	rt_check("  traps to M", h_m.count, 1);
	rt_check("  mcause", h_m.cause, CAUSE_BREAKPOINT);
	rt_check("  mepc", h_m.epc, epc);
	rt_check("  mtval", h_m.tval, tval);
	rt_check("  result", (u64)r, (u64)ret);
}

static void expect_none(const char *what, int mode, rt_fn fn, u64 a0, u64 a1,
			long ret)
{
	h_reset();
	long r = in_mode(mode, fn, a0, a1);
	header(names[mode], what);
	rt_check("  traps", h_m.count + h_s.count + h_vs.count, 0);
	rt_check("  result", (u64)r, (u64)ret);
}

#endif
