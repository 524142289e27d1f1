/* sbi_pmu_smp: a two-vCPU S-mode guest kernel for `vmm run --vcpus 2` (linked with
   guest/sdk/vs/): the SBI PMU's firmware counters are per vCPU. Each hart configures firmware
   counters for IPIs and remote FENCE.I sent and received (auto-started, from 0); hart 0
   sends hart 1 five IPIs and three remote FENCE.I requests, hart 1 sends hart 0 two IPIs
   and one remote FENCE.I to both harts. Then each hart reads its own counters with
   counter_fw_read: sent counts one per target hart, received counts what reached that
   hart, and nothing of one vCPU shows on the other's counters.
   Shuts down through SRST, status 0 when every check passed (on both harts). */
#include "vs/pmu.h"

#define PMU_FW_READ 5
#define FW(code) (0xf0000 | (code))
#define FW_IPI_SENT 6
#define FW_IPI_RECEIVED 7
#define FW_FENCE_I_SENT 8
#define FW_FENCE_I_RECEIVED 9
#define HSM_STOPPED 1

void secondary_entry(void);
__asm__(".text\n.align 2\n.globl secondary_entry\nsecondary_entry:\n"
	" .option push\n .option norelax\n la gp, __global_pointer$\n .option pop\n"
	" mv sp, a1\n li t0, 0x2000\n csrs sstatus, t0\n call secondary_main\n"
	"1: j 1b\n");

static u8 stack1[8192] __attribute__((aligned(16)));
static volatile u64 phase;
/* Per hart: IPIs sent, received, FENCE.I sent, received. */
static u64 counts[2][4];
static const u64 codes[4] = { FW_IPI_SENT, FW_IPI_RECEIVED, FW_FENCE_I_SENT,
			      FW_FENCE_I_RECEIVED };
static const char *const names[4] = { "IPIs sent", "IPIs received", "FENCE.I sent",
				      "FENCE.I received" };

/* Configures the four firmware counters on the calling hart; returns their indexes. */
static void configure(u64 idx[4])
{
	for (int k = 0; k < 4; k++) {
		struct sbiret r = pmu(PMU_CONFIG_MATCHING, 32, 0xffff,
					   CFG_CLEAR_VALUE | CFG_AUTO_START, FW(codes[k]), 0);
		idx[k] = r.error ? ~0UL : (u64)r.value;
	}
}

static void read_all(u64 h, const u64 idx[4])
{
	for (int k = 0; k < 4; k++)
		counts[h][k] = (u64)pmu(PMU_FW_READ, idx[k], 0, 0, 0, 0).value;
}

static void wait_phase(u64 p)
{
	while (phase < p)
		__sync_synchronize();
}

static void next_phase(u64 p)
{
	__sync_synchronize();
	phase = p;
	__sync_synchronize();
}

void secondary_main(void)
{
	u64 idx[4];
	configure(idx);
	next_phase(1);
	wait_phase(2); /* hart 0 has sent */
	for (int i = 0; i < 2; i++)
		sbi_call(SBI_EXT_IPI, 0, 1, 0, 0, 0); /* to hart 0 */
	sbi_call(SBI_EXT_RFENCE, 0, 3, 0, 0, 0); /* FENCE.I on harts 0 and 1 */
	read_all(1, idx);
	next_phase(3);
	sbi_call(SBI_EXT_HSM, 1, 0, 0, 0, 0); /* hart_stop */
}

int main(void)
{
	u64 idx[4];
	configure(idx);
	struct sbiret r = sbi_call(SBI_EXT_HSM, 0, 1, (u64)secondary_entry,
				   (u64)(stack1 + sizeof stack1), 0);
	check_err("hart_start(1)", r, 0);
	wait_phase(1);
	for (int i = 0; i < 5; i++)
		sbi_call(SBI_EXT_IPI, 0, 2, 0, 0, 0); /* to hart 1 */
	for (int i = 0; i < 3; i++)
		sbi_call(SBI_EXT_RFENCE, 0, 2, 0, 0, 0); /* FENCE.I on hart 1 */
	next_phase(2);
	wait_phase(3);
	read_all(0, idx);
	while (sbi_call(SBI_EXT_HSM, 2, 1, 0, 0, 0).value != HSM_STOPPED)
		;
	static const u64 want[2][4] = {
		{ 5, 2, 3, 1 }, /* hart 0: its sends; hart 1's IPIs and its own FENCE.I */
		{ 2, 5, 2, 4 }, /* hart 1: two IPIs, one FENCE.I to two harts; 3 + 1 received */
	};
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < 4; k++) {
			printk("hart %d ", (u64)h);
			check(names[k], counts[h][k], want[h][k]);
		}
	printk("sbi_pmu_smp: %d checks, %d failures\n", (u64)checks, (u64)failures);
	if (failures)
		return 1;
	dbcn_puts("sbi_pmu_smp: PASS\n");
	return 0;
}
