/* sbi_dirty: a `vmm run` guest kernel that keeps writing 16 MiB of its RAM, for live
   migration (tests/tests/migrate.rs, scripts/bench-migrate.sh). Pass after pass it rewrites
   one word in every 64 bytes of the array (every page of it, each pass), with its S-mode
   transfers recorded in CTR, and every 4 passes prints a hash of the whole array and of the
   CTR buffer. Nothing it prints depends on wall-clock time: a run moved between vmm
   processes prints, line for line, what an undisturbed run prints. It never ends by
   itself. */
#include "vs/sbi.h"
#include "vs/ctr.h"

#define BYTES (16UL << 20)
#define WORDS (BYTES / 8)
#define STRIDE 8 /* words: 64 bytes */

/* Past the 8 MiB the kernel image may use (guest/sdk/vs/link.ld): run it with at least
   32 MiB of RAM. */
static u64 *const data = (u64 *)0x81000000UL;

static u64 mix(u64 h, u64 v)
{
	h ^= v;
	h *= 0x100000001b3UL;
	return h ^ (h >> 29);
}

static __attribute__((noinline)) void pass(u64 p)
{
	for (u64 i = (p * 5) % STRIDE; i < WORDS; i += STRIDE)
		data[i] = data[i] * 6364136223846793005UL + p + i;
}

int main(u64 hartid, u64 fdt)
{
	(void)hartid;
	(void)fdt;
	ctr_set_depth(2);
	ctr_clear();
	printk("sbi_dirty: writing %d KiB, %d entries\n", BYTES >> 10, ctr_depth());
	ctr_set_ctl(CTRCTL_S | CTRCTL_NTBREN);
	for (u64 p = 0;; p++) {
		pass(p);
		if (p % 4 != 3)
			continue;
		ctr_set_ctl(0);
		u64 h = mix(0xcbf29ce484222325UL, ctr_status());
		struct ctr_entry e;
		for (u64 i = 0; i < 64; i++) {
			ctr_read(i, &e);
			h = mix(mix(mix(h, e.source), e.target), e.data);
		}
		u64 m = 0;
		for (u64 i = 0; i < WORDS; i++)
			m = mix(m, data[i]);
		printk("sbi_dirty: pass %d ctr %x memory %x\n", p, h, m);
		ctr_set_ctl(CTRCTL_S | CTRCTL_NTBREN);
	}
}
