/* sbi_pmu: an S-mode guest kernel for `vmm run` (linked with guest/sdk/vs/, starts in VS-mode)
   that uses the SBI PMU extension (SBI v2.0 chapter 11) as a kernel's perf driver would
   and checks every answer:
   - probe, num_counters, counter_get_info of every counter (hardware counters with their
     CSR 0xC00 + i and width 64, firmware counters; counter 1 `time` is not one);
   - with Sscofpmf, cycles and instructions matched over all counters go to hpm counters
     (which can overflow), over a set naming only cycle/instret to those;
   - counters configured for cycles, instructions, branches, L1D read accesses and a raw
     event (taken branches), started and stopped around a loop of known shape, read
     directly through `cycle`/`instret`/`hpmcounterN`, with plausible counts; stopped
     counters do not move; SET_INIT_VALUE; the SINH filter (the guest's S-mode is VS);
   - an overflow: a counter started near 2^64 raises the local counter-overflow interrupt
     (Sscofpmf LCOFI, scause = interrupt 13) and shows in `scountovf`;
   - the snapshot shared memory: TAKE_SNAPSHOT writes the value and the overflow bitmap,
     INIT_SNAPSHOT reads the value;
   - firmware counters: set_timer calls, IPIs sent and received, remote FENCE.I requests and
     SBI calls, counted exactly; fw_read_hi;
   - counter sets: every counter (base 0, mask (1 << num_counters) - 1, with the hole at
     1) is a valid set for matching, start and stop; only holes = no matching counter;
     empty, past num_counters or wrapping = invalid;
   - every error path: invalid counters and sets, reserved flags, invalid and unsupported
     events, no matching counter, already started/stopped, no shared memory, misaligned
     and out-of-RAM shared memory, unknown functions;
   - STOP with RESET takes a hardware counter away: reading it is illegal-instruction.
   Shuts down through SRST, status 0 when every check passed. */
#include "vs/sbi.h"
#include "csr.h"
#include "vs/pmu.h"


#define NUM_COUNTERS 0
#define GET_INFO 1
#define CONFIG_MATCHING 2
#define START 3
#define STOP 4
#define FW_READ 5
#define FW_READ_HI 6
#define SET_SHMEM 7

#define CFG_SET_SINH (1 << 6)
#define START_INIT_SNAPSHOT 2
#define STOP_TAKE_SNAPSHOT 2

#define EV_L1D_READ_ACCESS 0x10000
#define FW(code) (0xf0000 | (code))
#define FW_SET_TIMER 5
#define FW_IPI_SENT 6
#define FW_IPI_RECEIVED 7
#define FW_FENCE_I_SENT 8
#define FW_SBI_CALLS 256

#define HW_MASK 0xfffffffdUL /* counters 0, 2-31 */
#define FW_BASE 32
#define LOOPS 1000

#define SIE_SSIE (1UL << 1)
#define SIP_SSIP (1UL << 1)
#define SIE_LCOFIE (1UL << 13)
#define SSTATUS_SIE (1UL << 1)
#define IRQ_LCOFI ((1UL << 63) | 13)

/* Traps: counted with the last cause; exceptions resume after the instruction. */
volatile u64 trap_count, trap_cause;
void trap_entry(void);
__asm__(".text\n.align 2\n.globl trap_entry\ntrap_entry:\n"
	" addi sp, sp, -16\n sd t0, 0(sp)\n sd t1, 8(sp)\n"
	" csrr t0, scause\n la t1, trap_cause\n sd t0, 0(t1)\n"
	" la t1, trap_count\n ld t0, 0(t1)\n addi t0, t0, 1\n sd t0, 0(t1)\n"
	" li t0, 1 << 13\n csrc sip, t0\n"
	" csrr t0, scause\n bltz t0, 1f\n"
	" csrr t0, sepc\n addi t0, t0, 4\n csrw sepc, t0\n"
	"1: ld t0, 0(sp)\n ld t1, 8(sp)\n addi sp, sp, 16\n sret\n");


static volatile u64 data[4];

/* LOOPS iterations of: a load, an add, a conditional branch (taken but the last time). */
static void work(u64 n)
{
	__asm__ volatile("1: ld t1, 0(%1)\n addi %0, %0, -1\n bnez %0, 1b\n"
			 : "+r"(n)
			 : "r"(data)
			 : "t1", "memory");
}

static u8 shmem[4096] __attribute__((aligned(4096)));

static u64 bit(u64 i)
{
	return 1UL << i;
}

static void probe_and_info(void)
{
	struct sbiret r = sbi_call(SBI_EXT_BASE, 3, SBI_EXT_PMU, 0, 0, 0);
	check("probe PMU", (u64)r.value, 1);
	r = pmu(NUM_COUNTERS, 0, 0, 0, 0, 0);
	check("num_counters error", (u64)r.error, 0);
	check("num_counters", (u64)r.value, 48);
	u64 hw = 0, fw = 0, bad = 0;
	for (u64 i = 0; i < (u64)r.value; i++) {
		struct sbiret info = pmu(GET_INFO, i, 0, 0, 0, 0);
		if (info.error) {
			bad++;
			continue;
		}
		if ((u64)info.value >> 63) {
			fw++;
		} else {
			hw++;
			if (((u64)info.value & 0xfff) != 0xc00 + i ||
			    (((u64)info.value >> 12) & 0x3f) != 63)
				check("hw counter info", (u64)info.value, 0xc00 + i + (63 << 12));
		}
	}
	check("hardware counters", hw, 31);
	check("firmware counters", fw, 16);
	check("counters without info (time)", bad, 1);
	check_err("get_info(1) time", pmu(GET_INFO, 1, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("get_info(48)", pmu(GET_INFO, 48, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("get_info(-1)", pmu(GET_INFO, -1UL, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	r = pmu(GET_INFO, 3, 0, 0, 0, 0);
	check("get_info(3)", (u64)r.value, 0xc03 | (63 << 12));
	r = pmu(GET_INFO, 40, 0, 0, 0, 0);
	check("get_info(40)", (u64)r.value, 1UL << 63);
}

static void hardware_counters(void)
{
	/* As a kernel does at boot: stop (and reset) every counter. Cycle and instret ran;
	   counters 3-31 have no event and are skipped (neither stopped nor an error). */
	check_err("stop all", pmu(STOP, 0, HW_MASK, STOP_RESET, 0, 0), 0);
	u64 c0 = CSR_READ(cycle);
	work(100);
	check("cycle stopped", CSR_READ(cycle), c0);
	check_err("stop cycle again", pmu(STOP, 0, 1, 0, 0, 0), SBI_ERR_ALREADY_STOPPED);

	struct sbiret r;
	/* With Sscofpmf, cycles and instructions go to a free hpm counter when the set has
	   one: only those have OF, so only they can sample (Linux perf record). */
	r = pmu(CONFIG_MATCHING, 0, HW_MASK, 0, EV_CYCLES, 0);
	check("match cycles: an hpm counter", (u64)r.value, 3);
	r = pmu(CONFIG_MATCHING, 0, HW_MASK, 0, EV_INSTRUCTIONS, 0);
	check("match instructions: an hpm counter", (u64)r.value, 4);
	check_err("reset 3-4", pmu(STOP, 3, 0x3, STOP_RESET, 0, 0), SBI_ERR_ALREADY_STOPPED);
	/* The fixed counters when the set has no free hpm counter. */
	r = pmu(CONFIG_MATCHING, 0, bit(0), CFG_CLEAR_VALUE, EV_CYCLES, 0);
	check("match cycles", (u64)r.value, 0);
	r = pmu(CONFIG_MATCHING, 0, bit(0) | bit(2), CFG_CLEAR_VALUE, EV_INSTRUCTIONS, 0);
	check("match instructions", (u64)r.value, 2);
	r = pmu(CONFIG_MATCHING, 0, HW_MASK, CFG_CLEAR_VALUE, EV_BRANCHES, 0);
	check("match branches", (u64)r.value, 3);
	r = pmu(CONFIG_MATCHING, 0, HW_MASK, CFG_CLEAR_VALUE, EV_L1D_READ_ACCESS, 0);
	check("match L1D read access", (u64)r.value, 4);
	r = pmu(CONFIG_MATCHING, 0, HW_MASK, CFG_CLEAR_VALUE, EV_RAW, RAW_BRANCH_TAKEN);
	check("match raw branch-taken", (u64)r.value, 5);
	check("cleared", CSR_READ(hpmcounter3) + CSR_READ(instret), 0);

	/* Nothing is printed while counters run (printing is instructions and SBI calls). */
	u64 set = bit(0) | bit(2) | bit(3) | bit(4) | bit(5);
	struct sbiret start = pmu(START, 0, set, 0, 0, 0);
	work(LOOPS);
	struct sbiret stop = pmu(STOP, 0, set, 0, 0, 0);
	check_err("start", start, 0);
	check_err("stop", stop, 0);
	u64 cy = CSR_READ(cycle), ir = CSR_READ(instret), br = CSR_READ(hpmcounter3),
	    ld = CSR_READ(hpmcounter4), tk = CSR_READ(hpmcounter5);
	check_range("instructions", ir, 3 * LOOPS, 3 * LOOPS + 20);
	check_range("cycles", cy, ir, 100 * ir);
	check_range("branches", br, LOOPS, LOOPS + 2);
	check_range("L1D read accesses", ld, LOOPS, LOOPS + 2);
	check_range("taken branches", tk, LOOPS - 1, LOOPS + 1);
	work(100);
	check("instret stopped", CSR_READ(instret), ir);
	check("hpmcounter3 stopped", CSR_READ(hpmcounter3), br);

	check_err("start started", pmu(START, 3, 1, 0, 0, 0), 0);
	check_err("start again", pmu(START, 3, 1, 0, 0, 0), SBI_ERR_ALREADY_STARTED);
	check_err("stop", pmu(STOP, 3, 1, 0, 0, 0), 0);
	check_err("stop again", pmu(STOP, 3, 1, 0, 0, 0), SBI_ERR_ALREADY_STOPPED);

	/* SET_INIT_VALUE. */
	start = pmu(START, 2, 1, START_SET_INIT_VALUE, 1000000, 0);
	work(LOOPS);
	stop = pmu(STOP, 2, 1, 0, 0, 0);
	check_err("start with value", start, 0);
	check_err("stop instret", stop, 0);
	check_range("instret from 1000000", CSR_READ(instret), 1000000 + 3 * LOOPS,
		    1000000 + 3 * LOOPS + 20);

	/* SINH: the guest's S-mode (VS) is not counted. */
	r = pmu(CONFIG_MATCHING, 6, 1, CFG_CLEAR_VALUE | CFG_AUTO_START | CFG_SET_SINH,
		EV_INSTRUCTIONS, 0);
	check("SINH counter", (u64)r.value, 6);
	work(LOOPS);
	check_err("stop SINH counter", pmu(STOP, 6, 1, 0, 0, 0), 0);
	check("SINH counts nothing in S-mode", CSR_READ(hpmcounter6), 0);

	/* Busy counters are not matched; SKIP_MATCH takes the first of the set. */
	check_err("start cycle", pmu(START, 0, 1, 0, 0, 0), 0);
	check_err("no free cycle counter",
		  pmu(CONFIG_MATCHING, 0, 1, 0, EV_CYCLES, 0), SBI_ERR_NOT_SUPPORTED);
	check_err("stop cycle", pmu(STOP, 0, 1, 0, 0, 0), 0);
	r = pmu(CONFIG_MATCHING, 7, 0x3, CFG_SKIP_MATCH, EV_CYCLES, 0);
	check("skip match", (u64)r.value, 7);
	check_err("skip match: instret cannot count cycles",
		  pmu(CONFIG_MATCHING, 2, 1, CFG_SKIP_MATCH, EV_CYCLES, 0),
		  SBI_ERR_NOT_SUPPORTED);

	/* RESET takes the counter away from the guest. */
	check_err("reset 3", pmu(STOP, 3, 1, STOP_RESET, 0, 0), SBI_ERR_ALREADY_STOPPED);
	u64 before = trap_count;
	(void)CSR_READ(hpmcounter3);
	check("hpmcounter3 after reset traps", trap_count - before, 1);
	check("hpmcounter3 after reset: cause", trap_cause, 2);
}

static void overflow_and_snapshot(void)
{
	struct sbiret r;
	/* Snapshot memory errors. */
	check_err("snapshot before shmem",
		  pmu(STOP, 0, 1, STOP_TAKE_SNAPSHOT, 0, 0), SBI_ERR_NO_SHMEM);
	check_err("init snapshot before shmem",
		  pmu(START, 0, 1, START_INIT_SNAPSHOT, 0, 0), SBI_ERR_NO_SHMEM);
	u64 a = (u64)shmem;
	check_err("shmem misaligned", pmu(SET_SHMEM, a + 8, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("shmem flags", pmu(SET_SHMEM, a, 0, 1, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("shmem outside RAM", pmu(SET_SHMEM, 0x1000, 0, 0, 0, 0),
		  SBI_ERR_INVALID_ADDRESS);
	check_err("shmem high bits", pmu(SET_SHMEM, a, 1, 0, 0, 0), SBI_ERR_INVALID_ADDRESS);
	check_err("shmem past RAM end", pmu(SET_SHMEM, 0xfffff000UL, 0, 0, 0, 0),
		  SBI_ERR_INVALID_ADDRESS);
	check_err("shmem", pmu(SET_SHMEM, a, 0, 0, 0, 0), 0);

	/* Overflow: instructions on counter 8 from 2^64 - 500. */
	r = pmu(CONFIG_MATCHING, 8, 1, 0, EV_INSTRUCTIONS, 0);
	check("overflow counter", (u64)r.value, 8);
	__asm__ volatile("csrw stvec, %0" ::"r"(trap_entry));
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_LCOFIE));
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
	volatile u64 *snap = (volatile u64 *)shmem;
	snap[0] = 0xdead;
	snap[1] = 0xdead;
	snap[2] = 0xbeef;
	u64 before = trap_count;
	r = pmu(START, 8, 1, START_SET_INIT_VALUE, -500UL, 0);
	work(LOOPS);
	__asm__ volatile("csrc sstatus, %0" ::"r"(SSTATUS_SIE));
	struct sbiret stop = pmu(STOP, 8, 1, STOP_TAKE_SNAPSHOT, 0, 0);
	check_err("start near overflow", r, 0);
	check("LCOFI taken", trap_count - before, 1);
	check("LCOFI cause", trap_cause, IRQ_LCOFI);
	check("scountovf", CSR_READ(0xda0) & bit(8), bit(8));
	check_err("stop with snapshot", stop, 0);
	check("snapshot overflow bitmap", snap[0], 1);
	check("snapshot value", snap[1], CSR_READ(hpmcounter8));
	check_range("value after wrap", snap[1], 3 * LOOPS - 500, 3 * LOOPS - 400);
	check("other values untouched", snap[2], 0xbeef);
	snap[1] = 12345;
	check_err("start both init flags",
		  pmu(START, 8, 1, START_SET_INIT_VALUE | START_INIT_SNAPSHOT, 0, 0),
		  SBI_ERR_INVALID_PARAM);
	r = pmu(START, 8, 1, START_INIT_SNAPSHOT, 0, 0);
	u64 ovf = CSR_READ(0xda0);
	stop = pmu(STOP, 8, 1, 0, 0, 0);
	check_err("start from snapshot", r, 0);
	check_err("stop", stop, 0);
	check_range("value from snapshot", CSR_READ(hpmcounter8), 12345, 12345 + 20);
	check("OF cleared by start", ovf & bit(8), 0);
	check_err("shmem off", pmu(SET_SHMEM, -1UL, -1UL, 0, 0, 0), 0);
	check_err("snapshot after shmem off",
		  pmu(STOP, 8, 1, STOP_TAKE_SNAPSHOT, 0, 0), SBI_ERR_NO_SHMEM);
}

/*
 * A handler for the precise-overflow check: its first instruction saves t0, its second
 * reads hpmcounter9 (counting instructions), so it reads exactly 1 if the LCOFI was taken
 * right after the instruction that wrapped the counter.
 */
volatile u64 ovf_value, ovf_epc;
void ovf_entry(void);
__asm__(".text\n.align 2\n.globl ovf_entry\novf_entry:\n"
	" csrw sscratch, t0\n csrr t0, 0xc09\n"
	" addi sp, sp, -16\n sd t1, 0(sp)\n"
	" la t1, ovf_value\n sd t0, 0(t1)\n"
	" csrr t0, sepc\n la t1, ovf_epc\n sd t0, 0(t1)\n"
	" la t1, trap_count\n ld t0, 0(t1)\n addi t0, t0, 1\n sd t0, 0(t1)\n"
	" csrr t0, scause\n la t1, trap_cause\n sd t0, 0(t1)\n"
	" li t0, 1 << 13\n csrc sip, t0\n"
	" ld t1, 0(sp)\n addi sp, sp, 16\n csrr t0, sscratch\n sret\n");

/* `work`, kept out of line so that the LCOFI's sepc can be checked against it. */
__attribute__((noinline)) static void ovf_work(u64 n)
{
	__asm__ volatile("1: ld t1, 0(%1)\n addi %0, %0, -1\n bnez %0, 1b\n"
			 : "+r"(n)
			 : "r"(data)
			 : "t1", "memory");
}

#define CTL_S (1UL << 1)
#define CTL_LCOFIFRZ (1UL << 12)
#define STATUS_FROZEN (1UL << 31)

/*
 * One LCOFI from counter 9 counting instructions with period `period` (started at
 * 2^64 - period), taken with ovf_entry while `work` runs; sctrctl as given around it.
 */
static void overflow_once(u64 period, u64 sctrctl)
{
	check("overflow counter 9",
	      (u64)pmu(CONFIG_MATCHING, 9, 1, CFG_CLEAR_VALUE, EV_INSTRUCTIONS, 0).value, 9);
	__asm__ volatile("csrw stvec, %0" ::"r"(ovf_entry));
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_LCOFIE));
	__asm__ volatile("csrw 0x14e, %0" ::"r"(sctrctl));
	ovf_value = ovf_epc = 0xdead;
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
	check_err("start with period", pmu(START, 9, 1, START_SET_INIT_VALUE, -period, 0), 0);
	ovf_work(LOOPS);
	__asm__ volatile("csrc sstatus, %0" ::"r"(SSTATUS_SIE));
	__asm__ volatile("csrw 0x14e, zero");
	check_err("stop 9", pmu(STOP, 9, 1, STOP_RESET, 0, 0), 0);
	__asm__ volatile("csrw stvec, %0" ::"r"(trap_entry));
}

/*
 * The overflow comes exactly at the programmed period (whichever way the VMM delivers the
 * LCOFI: tests/tests/sbi_pmu.rs runs this guest with both), the guest acknowledges it by
 * clearing sip.LCOFI, and vsctrctl.LCOFIFRZ freezes CTR on it.
 */
static void overflow_period_and_freeze(void)
{
	u64 before = trap_count;
	overflow_once(700, 0);
	check("period: one LCOFI", trap_count - before, 1);
	check("period: cause", trap_cause, IRQ_LCOFI);
	check("period: counter at the handler's 2nd instruction", ovf_value, 1);
	check_range("period: taken inside the loop", ovf_epc, (u64)ovf_work, (u64)ovf_work + 32);
	check("period: acknowledged (sip.LCOFI clear)", CSR_READ(sip) & SIE_LCOFIE, 0);

	__asm__ volatile("csrw 0x14f, zero");
	before = trap_count;
	overflow_once(900, CTL_S | CTL_LCOFIFRZ);
	check("LCOFIFRZ: one LCOFI", trap_count - before, 1);
	check("LCOFIFRZ: sctrstatus.FROZEN", CSR_READ(0x14f) & STATUS_FROZEN, STATUS_FROZEN);

	__asm__ volatile("csrw 0x14f, zero");
	before = trap_count;
	overflow_once(900, CTL_S);
	check("no LCOFIFRZ: one LCOFI", trap_count - before, 1);
	check("no LCOFIFRZ: not frozen", CSR_READ(0x14f) & STATUS_FROZEN, 0);
}

/*
 * An LCOFI that stays pending while the guest has interrupts off, for a long spin (600 000
 * instructions: tests/tests/sbi_pmu.rs snapshots the VM inside it and restores it), and is
 * taken once they are back on.
 */
#define SPIN_LOOPS 200000
static void pending_lcofi(void)
{
	check("pending: counter 10",
	      (u64)pmu(CONFIG_MATCHING, 10, 1, CFG_CLEAR_VALUE, EV_INSTRUCTIONS, 0).value, 10);
	__asm__ volatile("csrw stvec, %0" ::"r"(trap_entry));
	__asm__ volatile("csrs sie, %0" ::"r"(SIE_LCOFIE));
	u64 before = trap_count;
	check_err("pending: start", pmu(START, 10, 1, START_SET_INIT_VALUE, -100UL, 0), 0);
	dbcn_puts("pending LCOFI: spinning\n");
	work(SPIN_LOOPS);
	u64 pending = CSR_READ(sip) & SIE_LCOFIE;
	u64 taken_masked = trap_count - before;
	__asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE));
	__asm__ volatile("nop");
	__asm__ volatile("csrc sstatus, %0" ::"r"(SSTATUS_SIE));
	check("pending: in sip while masked", pending, SIE_LCOFIE);
	check("pending: not taken while masked", taken_masked, 0);
	check("pending: taken once unmasked", trap_count - before, 1);
	check("pending: cause", trap_cause, IRQ_LCOFI);
	check_err("pending: stop", pmu(STOP, 10, 1, STOP_RESET, 0, 0), 0);
}

static void firmware_counters(void)
{
	struct sbiret r;
	u64 fw_set = 0xffffUL;
	r = pmu(CONFIG_MATCHING, FW_BASE, fw_set, CFG_CLEAR_VALUE | CFG_AUTO_START,
		FW(FW_SET_TIMER), 0);
	u64 timer = (u64)r.value;
	r = pmu(CONFIG_MATCHING, FW_BASE, fw_set, CFG_CLEAR_VALUE | CFG_AUTO_START,
		FW(FW_SBI_CALLS), 0);
	u64 calls = (u64)r.value;
	r = pmu(CONFIG_MATCHING, FW_BASE, fw_set, CFG_CLEAR_VALUE | CFG_AUTO_START,
		FW(FW_IPI_SENT), 0);
	u64 sent = (u64)r.value;
	r = pmu(CONFIG_MATCHING, FW_BASE, fw_set, CFG_CLEAR_VALUE | CFG_AUTO_START,
		FW(FW_IPI_RECEIVED), 0);
	u64 received = (u64)r.value;
	r = pmu(CONFIG_MATCHING, FW_BASE, fw_set, CFG_CLEAR_VALUE | CFG_AUTO_START,
		FW(FW_FENCE_I_SENT), 0);
	u64 fence = (u64)r.value;
	/* 3 + 3 + 2 + 1 SBI calls, then the read of counter 33 itself (counted when made). */
	for (int i = 0; i < 3; i++)
		sbi_call(SBI_EXT_TIME, 0, -1UL, 0, 0, 0);
	sbi_call(SBI_EXT_IPI, 0, 1, 0, 0, 0);
	sbi_call(SBI_EXT_IPI, 0, 1, 0, 0, 0);
	sbi_call(SBI_EXT_RFENCE, 0, 1, 0, 0, 0);
	r = pmu(FW_READ, 33, 0, 0, 0, 0);
	__asm__ volatile("csrc sip, %0" ::"r"(SIP_SSIP));
	check("match set_timer", timer, 32);
	check("match SBI calls", calls, 33);
	check("counters 34-36", sent * 100 + received * 10 + fence, 3400 + 350 + 36);
	check("fw SBI calls", (u64)r.value, 10);
	check("fw set_timer", (u64)pmu(FW_READ, 32, 0, 0, 0, 0).value, 3);
	check("fw IPIs sent", (u64)pmu(FW_READ, sent, 0, 0, 0, 0).value, 2);
	check("fw IPIs received", (u64)pmu(FW_READ, received, 0, 0, 0, 0).value, 2);
	check("fw FENCE.I sent", (u64)pmu(FW_READ, fence, 0, 0, 0, 0).value, 1);
	r = pmu(FW_READ_HI, 32, 0, 0, 0, 0);
	check("fw_read_hi", (u64)r.error + (u64)r.value, 0);
	check_err("stop fw", pmu(STOP, FW_BASE, 0x1f, 0, 0, 0), 0);
	sbi_call(SBI_EXT_TIME, 0, -1UL, 0, 0, 0);
	check("stopped fw counter", (u64)pmu(FW_READ, 32, 0, 0, 0, 0).value, 3);
	check_err("restart with value", pmu(START, 32, 1, START_SET_INIT_VALUE, 7, 0), 0);
	sbi_call(SBI_EXT_TIME, 0, -1UL, 0, 0, 0);
	check("fw counter from 7", (u64)pmu(FW_READ, 32, 0, 0, 0, 0).value, 8);
	check_err("fw_read(3) hardware", pmu(FW_READ, 3, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("fw_read(1)", pmu(FW_READ, 1, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("fw_read(48)", pmu(FW_READ, 48, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("fw_read_hi(0)", pmu(FW_READ_HI, 0, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
}

static void error_paths(void)
{
	check_err("reserved cfg flags",
		  pmu(CONFIG_MATCHING, 0, HW_MASK, 1 << 8, EV_CYCLES, 0), SBI_ERR_INVALID_PARAM);
	check_err("set past the end", pmu(CONFIG_MATCHING, 40, 0xffff, 0, FW(5), 0),
		  SBI_ERR_INVALID_PARAM);
	check_err("set base wraps", pmu(CONFIG_MATCHING, -1UL, 0x2, 0, EV_CYCLES, 0),
		  SBI_ERR_INVALID_PARAM);
	check_err("event 0", pmu(CONFIG_MATCHING, 3, 1, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("event 11", pmu(CONFIG_MATCHING, 3, 1, 0, 11, 0), SBI_ERR_INVALID_PARAM);
	check_err("bus cycles", pmu(CONFIG_MATCHING, 3, 1, 0, 7, 0), SBI_ERR_NOT_SUPPORTED);
	check_err("event data", pmu(CONFIG_MATCHING, 3, 1, 0, EV_CYCLES, 1),
		  SBI_ERR_INVALID_PARAM);
	check_err("cache op 3", pmu(CONFIG_MATCHING, 3, 1, 0, 0x10006, 0),
		  SBI_ERR_INVALID_PARAM);
	check_err("L1I access", pmu(CONFIG_MATCHING, 3, 1, 0, 0x10008, 0),
		  SBI_ERR_NOT_SUPPORTED);
	check_err("raw code", pmu(CONFIG_MATCHING, 3, 1, 0, EV_RAW | 1, 0x100),
		  SBI_ERR_INVALID_PARAM);
	check_err("raw unknown", pmu(CONFIG_MATCHING, 3, 1, 0, EV_RAW, 0x1ff),
		  SBI_ERR_NOT_SUPPORTED);
	check_err("raw upper bits", pmu(CONFIG_MATCHING, 3, 1, 0, EV_RAW, 1UL << 50),
		  SBI_ERR_INVALID_PARAM);
	check_err("type 4", pmu(CONFIG_MATCHING, 3, 1, 0, 0x40000, 0), SBI_ERR_INVALID_PARAM);
	check_err("event bit 20", pmu(CONFIG_MATCHING, 3, 1, 0, 0x100001, 0),
		  SBI_ERR_INVALID_PARAM);
	check_err("fw event on hw counters", pmu(CONFIG_MATCHING, 0, HW_MASK, 0, FW(5), 0),
		  SBI_ERR_NOT_SUPPORTED);
	check_err("hw event on fw counters", pmu(CONFIG_MATCHING, FW_BASE, 0xffff, 0, 2, 0),
		  SBI_ERR_NOT_SUPPORTED);
	check_err("HFENCE event", pmu(CONFIG_MATCHING, FW_BASE, 0xffff, 0, FW(14), 0),
		  SBI_ERR_NOT_SUPPORTED);
	check_err("reserved fw code", pmu(CONFIG_MATCHING, FW_BASE, 0xffff, 0, FW(22), 0),
		  SBI_ERR_INVALID_PARAM);
	check_err("fw event data", pmu(CONFIG_MATCHING, FW_BASE, 0xffff, 0, FW(5), 1),
		  SBI_ERR_INVALID_PARAM);
	check_err("start invalid set", pmu(START, 40, 0x100, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("start reserved flags", pmu(START, 3, 1, 4, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("stop invalid set", pmu(STOP, 47, 0x3, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("stop reserved flags", pmu(STOP, 3, 1, 4, 0, 0), SBI_ERR_INVALID_PARAM);
	check_err("event_get_info (v3.0)", pmu(8, 0, 0, 0, 0, 0), SBI_ERR_NOT_SUPPORTED);
	check_err("fid 99", pmu(99, 0, 0, 0, 0, 0), SBI_ERR_NOT_SUPPORTED);
}

/*
 * Counter sets (SBI v2.0 sections 11.7-11.9). "Set of counters has at least one invalid
 * counter" is SBI_ERR_INVALID_PARAM; as KVM and OpenSBI, the VMM takes an invalid counter
 * to be an index at or past num_counters (base + highest bit, also when the sum wraps), and
 * an empty mask is invalid (as KVM). Indexes below num_counters with no counter behind them
 * (1, `time`) are holes: "every counter", base 0 and mask (1 << num_counters) - 1, is a
 * valid set, matching passes over the holes, start and stop skip them and the counters
 * that have no event.
 */
static void counter_sets(void)
{
	u64 n = (u64)pmu(NUM_COUNTERS, 0, 0, 0, 0, 0).value;
	u64 all = (1UL << n) - 1;
	struct sbiret r = pmu(STOP, 0, all, STOP_RESET, 0, 0);
	check("sets: stop and reset every counter",
	      r.error == 0 || r.error == SBI_ERR_ALREADY_STOPPED, 1);

	/* Every counter: a hardware event gets an hpm counter, a firmware event a firmware
	   counter (the lowest free ones). */
	r = pmu(CONFIG_MATCHING, 0, all, CFG_CLEAR_VALUE, EV_BRANCHES, 0);
	check_err("sets: branches over every counter", r, 0);
	check("sets: branches on hpm counter 3", (u64)r.value, 3);
	check("sets: counter 3 is a hardware counter",
	      (u64)pmu(GET_INFO, (u64)r.value, 0, 0, 0, 0).value >> 63, 0);
	r = pmu(CONFIG_MATCHING, 0, all, CFG_CLEAR_VALUE, FW(FW_SET_TIMER), 0);
	check_err("sets: set_timer over every counter", r, 0);
	check("sets: set_timer on firmware counter 32", (u64)r.value, FW_BASE);
	check("sets: counter 32 is a firmware counter",
	      (u64)pmu(GET_INFO, (u64)r.value, 0, 0, 0, 0).value >> 63, 1);

	/* Only the hole at 1: a valid set (1 < num_counters) in which no counter can count
	   the event: "none of the counters can monitor the specified event". */
	check_err("sets: only index 1", pmu(CONFIG_MATCHING, 0, bit(1), 0, EV_BRANCHES, 0),
		  SBI_ERR_NOT_SUPPORTED);
	/* SKIP_MATCH takes the first index of the set, here the hole. */
	check_err("sets: skip match on the hole",
		  pmu(CONFIG_MATCHING, 0, bit(1) | bit(3), CFG_SKIP_MATCH, EV_BRANCHES, 0),
		  SBI_ERR_NOT_SUPPORTED);

	/* Reaching past num_counters, empty, wrapping: invalid in all three functions. */
	static const u64 bad[][2] = {
		{ 1, 0 },	   /* mask (1 << n) - 1 from 1: 1 + (n - 1) = n */
		{ 0, 0 },	   /* empty mask */
		{ FW_BASE, 0x1ffff }, /* 32 + 16 = n */
		{ -1UL, 1 },	   /* base past the end */
		{ -1UL, 0x2 },	   /* base + 1 wraps */
		{ -2UL, 1UL << 63 }, /* base + 63 wraps */
	};
	for (u64 k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		u64 base = bad[k][0], mask = k == 0 ? all : bad[k][1];
		check_err("sets: invalid set, config_matching",
			  pmu(CONFIG_MATCHING, base, mask, 0, EV_BRANCHES, 0),
			  SBI_ERR_INVALID_PARAM);
		check_err("sets: invalid set, start", pmu(START, base, mask, 0, 0, 0),
			  SBI_ERR_INVALID_PARAM);
		check_err("sets: invalid set, stop", pmu(STOP, base, mask, 0, 0, 0),
			  SBI_ERR_INVALID_PARAM);
	}
	check_err("sets: past num_counters", pmu(CONFIG_MATCHING, 0, all | bit(n), 0,
						  EV_BRANCHES, 0), SBI_ERR_INVALID_PARAM);

	/* Start and stop every counter: the configured ones (0 and 2 keep their events
	   through a reset; 3 and 32 were matched above) start and stop, the others are
	   skipped. Nothing is printed while they run. */
	struct sbiret start = pmu(START, 0, all, START_SET_INIT_VALUE, 0, 0);
	work(LOOPS);
	sbi_call(SBI_EXT_TIME, 0, -1UL, 0, 0, 0);
	struct sbiret stop = pmu(STOP, 0, all, 0, 0, 0);
	check_err("sets: start every counter", start, 0);
	check_err("sets: stop every counter", stop, 0);
	check_range("sets: instret", CSR_READ(instret), 3 * LOOPS, 3 * LOOPS + 30);
	check_range("sets: branches on 3", CSR_READ(hpmcounter3), LOOPS, LOOPS + 2);
	check("sets: set_timer on 32", (u64)pmu(FW_READ, FW_BASE, 0, 0, 0, 0).value, 1);
	check_err("sets: stop every counter again", pmu(STOP, 0, all, 0, 0, 0),
		  SBI_ERR_ALREADY_STOPPED);
	/* Counter 4 was skipped: still free, and the next branches counter. */
	r = pmu(CONFIG_MATCHING, 0, all, 0, EV_BRANCHES, 0);
	check("sets: counter 4 not started, still free", (u64)r.value, 4);
	/* A set of holes only: nothing to start or stop. */
	check_err("sets: start only index 1", pmu(START, 0, bit(1), 0, 0, 0), 0);
	check_err("sets: stop only index 1", pmu(STOP, 0, bit(1), 0, 0, 0), 0);
	check_err("sets: reset every counter", pmu(STOP, 0, all, STOP_RESET, 0, 0),
		  SBI_ERR_ALREADY_STOPPED);
	r = pmu(CONFIG_MATCHING, 0, all, 0, EV_BRANCHES, 0);
	check("sets: all free after the reset", (u64)r.value, 3);
	check_err("sets: reset 3", pmu(STOP, 3, 1, STOP_RESET, 0, 0), SBI_ERR_ALREADY_STOPPED);
}

int main(void)
{
	__asm__ volatile("csrw stvec, %0" ::"r"(trap_entry));
	probe_and_info();
	hardware_counters();
	overflow_and_snapshot();
	overflow_period_and_freeze();
	firmware_counters();
	error_paths();
	counter_sets();
	pending_lcofi();
	printk("sbi_pmu: %d checks, %d failures\n", (u64)checks, (u64)failures);
	if (failures)
		return 1;
	dbcn_puts("sbi_pmu: PASS\n");
	return 0;
}
