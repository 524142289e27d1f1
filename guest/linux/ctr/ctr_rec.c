// SPDX-License-Identifier: GPL-2.0-only
/*
 * ctr_rec: records the user-mode control transfers of one task with the RISC-V Control
 * Transfer Records extension (Smctr/Ssctr v1.0), for the riscv-ctr-vmm test bed.
 *
 * Written from the Smctr/Ssctr v1.0 specification. Interface: /proc/ctr_rec
 *   write "depth N"  select the depth (16, 32, ... 256 entries) for the next recordings
 *                    (0: the smallest the hart takes, the default); refused (EINVAL, one
 *                    log line) when sctrdepth does not take it
 *   write "arm"      start recording the user-mode transfers of the writing task (from
 *                    then on, across exec, context switches and CPUs, until it exits)
 *   write "kernel CPU MS"  record everything in S-mode on CPU for MS milliseconds (the
 *                    write returns when it is done)
 *   write "types LIST"  the transfer types of the next recordings (see cmd_types)
 *   write "freeze on|off"  LCOFIFRZ for the next recordings: a local counter-overflow
 *                    interrupt freezes the records (sctrstatus.FROZEN); a read then prints
 *                    "frozen" before the last line and clears FROZEN
 *   read             the records of the last recording, oldest first, one per line
 *                    "SRC -> DST TYPE CYCLES", then "records N depth D"; reading clears
 *                    FROZEN in the saved state
 *
 * On every switch away from the task its records and sctrstatus are saved (and the
 * hart's CTR state is cleared, so that no other task sees or adds to them); on every
 * switch to it they are restored, through preempt notifiers. One task at a time; its
 * children are not recorded. While a recorded task may still run the module cannot be
 * unloaded (the reference is dropped by the first read or "arm" after the task exited).
 * Depth changes (sctrdepth) exit to the hypervisor; they are made only when the CPU's
 * depth differs from the task's.
 */
#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/of.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/preempt.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/mutex.h>
#include <linux/delay.h>
#include <linux/smp.h>
#include <linux/cpumask.h>
#include <asm/csr.h>
#include <asm/asm-extable.h>

/* CSR numbers (Smctr/Ssctr v1.0, Sscsrind). */
#define CTR_SISELECT	0x150
#define CTR_SIREG	0x151
#define CTR_SIREG2	0x152
#define CTR_SIREG3	0x153
#define CTR_SCTRCTL	0x14e
#define CTR_SCTRSTATUS	0x14f
#define CTR_SCTRDEPTH	0x15f
#define CTR_ENTRY0	0x200

#define CTL_U		(1UL << 0)
#define CTL_S		(1UL << 1)
#define CTL_LCOFIFRZ	(1UL << 12)
/* Transfer type filters of sctrctl (inhibits, and NTBREN which enables). */
#define CTL_EXCINH	(1UL << 33)
#define CTL_INTRINH	(1UL << 34)
#define CTL_TRETINH	(1UL << 35)
#define CTL_NTBREN	(1UL << 36)
#define CTL_TKBRINH	(1UL << 37)
#define CTL_INDCALLINH	(1UL << 40)
#define CTL_DIRCALLINH	(1UL << 41)
#define CTL_INDJMPINH	(1UL << 42)
#define CTL_DIRJMPINH	(1UL << 43)
#define CTL_CORSWAPINH	(1UL << 44)
#define CTL_RETINH	(1UL << 45)
#define CTL_INDLJMPINH	(1UL << 46)
#define CTL_DIRLJMPINH	(1UL << 47)
#define CTL_ALLINH	(CTL_EXCINH | CTL_INTRINH | CTL_TRETINH | CTL_TKBRINH | \
			 CTL_INDCALLINH | CTL_DIRCALLINH | CTL_INDJMPINH | CTL_DIRJMPINH | \
			 CTL_CORSWAPINH | CTL_RETINH | CTL_INDLJMPINH | CTL_DIRLJMPINH)
#define STATUS_WRPTR	0xffUL
#define STATUS_FROZEN	(1UL << 31)
#define MAX_DEPTH	256

#define SCTRCLR()	asm volatile(".4byte 0x10400073" ::: "memory")

struct ctr_entry {
	unsigned long src, dst, data;
};

struct ctr_rec {
	struct preempt_notifier pn;
	struct task_struct *task;	/* the recorded task (a reference is held) */
	bool done;			/* the task has exited; the saved state is final */
	bool holds_module;		/* a module reference while the task may still run */
	unsigned int depth;		/* entries */
	unsigned long filter;		/* sctrctl type filter bits of the recording */
	unsigned long status;		/* saved sctrstatus */
	struct ctr_entry e[MAX_DEPTH];	/* saved entries, logical order (0: youngest) */
};

static DEFINE_MUTEX(ctr_lock);		/* commands and reads */
static DEFINE_RAW_SPINLOCK(ctr_state_lock);	/* rec->status/e against the notifiers */
static struct ctr_rec *rec;
static unsigned int depths_allowed;	/* bit n: 2^(n+4) entries */
static unsigned int next_depth;		/* entries, for the next "arm" */
static unsigned long next_filter;	/* sctrctl filter bits, for the next recording */
static unsigned long next_freeze;	/* CTL_LCOFIFRZ or 0, for the next recording */
static DEFINE_PER_CPU(int, cpu_depth_field);	/* sctrdepth.DEPTH last written, or -1 */

/* csrr of sctrdepth that returns false instead of oopsing when it traps. */
static bool ctr_probe(unsigned long *val)
{
	unsigned long v = 0, fault = 1;

	asm volatile("1:	csrr %0, 0x15f\n"
		     "	li %1, 0\n"
		     "2:\n"
		     _ASM_EXTABLE(1b, 2b)
		     : "+r"(v), "+r"(fault));
	*val = v;
	return !fault;
}

static unsigned long entry_read(unsigned int i, unsigned long *dst, unsigned long *data)
{
	csr_write(CTR_SISELECT, CTR_ENTRY0 + i);
	*dst = csr_read(CTR_SIREG2);
	*data = csr_read(CTR_SIREG3);
	return csr_read(CTR_SIREG);
}

static void entry_write(unsigned int i, const struct ctr_entry *e)
{
	csr_write(CTR_SISELECT, CTR_ENTRY0 + i);
	csr_write(CTR_SIREG, e->src);
	csr_write(CTR_SIREG2, e->dst);
	csr_write(CTR_SIREG3, e->data);
}

/* log2(depth) - 4 */
static int depth_field(unsigned int depth)
{
	return ilog2(depth) - 4;
}

static void set_depth(unsigned int depth)
{
	int f = depth_field(depth);

	if (this_cpu_read(cpu_depth_field) != f) {
		csr_write(CTR_SCTRDEPTH, f);
		this_cpu_write(cpu_depth_field, f);
	}
}

/* Saves the hart's CTR state into r and clears the hart (interrupts off). */
static void ctr_save(struct ctr_rec *r)
{
	unsigned long siselect = csr_read(CTR_SISELECT);
	unsigned int i;

	csr_write(CTR_SCTRCTL, 0);
	raw_spin_lock(&ctr_state_lock);
	r->status = csr_read(CTR_SCTRSTATUS);
	for (i = 0; i < r->depth; i++)
		r->e[i].src = entry_read(i, &r->e[i].dst, &r->e[i].data);
	raw_spin_unlock(&ctr_state_lock);
	SCTRCLR();
	csr_write(CTR_SCTRSTATUS, 0);
	csr_write(CTR_SISELECT, siselect);
}

/* Loads r's CTR state onto the hart and starts recording U-mode (interrupts off). */
static void ctr_load(struct ctr_rec *r)
{
	unsigned long siselect = csr_read(CTR_SISELECT);
	unsigned int i;

	csr_write(CTR_SCTRCTL, 0);
	SCTRCLR();
	set_depth(r->depth);
	raw_spin_lock(&ctr_state_lock);
	csr_write(CTR_SCTRSTATUS, r->status);
	for (i = 0; i < r->depth; i++)
		entry_write(i, &r->e[i]);
	raw_spin_unlock(&ctr_state_lock);
	csr_write(CTR_SISELECT, siselect);
	csr_write(CTR_SCTRCTL, CTL_U | r->filter);
}

static void ctr_sched_in(struct preempt_notifier *pn, int cpu)
{
	struct ctr_rec *r = container_of(pn, struct ctr_rec, pn);
	unsigned long flags;

	local_irq_save(flags);
	ctr_load(r);
	local_irq_restore(flags);
}

static void ctr_sched_out(struct preempt_notifier *pn, struct task_struct *next)
{
	struct ctr_rec *r = container_of(pn, struct ctr_rec, pn);
	unsigned long flags;

	local_irq_save(flags);
	ctr_save(r);
	local_irq_restore(flags);
	/* The last switch away from an exiting task: nothing will be recorded any more. */
	if (READ_ONCE(r->task->__state) == TASK_DEAD)
		WRITE_ONCE(r->done, true);
}

static struct preempt_ops ctr_preempt_ops = {
	.sched_in = ctr_sched_in,
	.sched_out = ctr_sched_out,
};

/* True when the previous recording's task can no longer run (or there was none). */
static bool rec_idle(void)
{
	return !rec->task || READ_ONCE(rec->done);
}

/* Drops the module reference of a recording whose task has exited. */
static void release_if_done(void)
{
	if (rec->holds_module && READ_ONCE(rec->done)) {
		module_put(THIS_MODULE);
		rec->holds_module = false;
	}
}

static int cmd_arm(void)
{
	unsigned long flags;

	release_if_done();
	if (!rec_idle()) {
		pr_warn("ctr_rec: task %d is still being recorded\n", task_pid_nr(rec->task));
		return -EBUSY;
	}
	if (rec->task)
		put_task_struct(rec->task);
	memset(rec->e, 0, sizeof(rec->e));
	rec->status = 0;
	rec->depth = next_depth;
	rec->filter = next_filter | next_freeze;
	rec->done = false;
	rec->task = current;
	get_task_struct(current);
	/* The notifiers must outlive the task: no unloading until it has exited. */
	__module_get(THIS_MODULE);
	rec->holds_module = true;
	preempt_notifier_init(&rec->pn, &ctr_preempt_ops);
	preempt_disable();
	preempt_notifier_register(&rec->pn);
	local_irq_save(flags);
	ctr_load(rec);
	local_irq_restore(flags);
	preempt_enable();
	return 0;
}

/* S-mode recording on one CPU ("kernel CPU MS"): started and stopped on that CPU. */
static void ctr_kstart(void *arg)
{
	struct ctr_rec *r = arg;
	unsigned long flags;

	local_irq_save(flags);
	csr_write(CTR_SCTRCTL, 0);
	SCTRCLR();
	set_depth(r->depth);
	csr_write(CTR_SCTRSTATUS, 0);
	csr_write(CTR_SCTRCTL, CTL_S | r->filter);
	local_irq_restore(flags);
}

static void ctr_kstop(void *arg)
{
	unsigned long flags;

	local_irq_save(flags);
	ctr_save(arg);
	local_irq_restore(flags);
}

static int cmd_kernel(unsigned int cpu, unsigned int ms)
{
	int ret;

	release_if_done();
	if (!rec_idle()) {
		pr_warn("ctr_rec: task %d is still being recorded\n", task_pid_nr(rec->task));
		return -EBUSY;
	}
	if (cpu >= nr_cpu_ids || !cpu_online(cpu) || ms > 60000) {
		pr_warn("ctr_rec: kernel recording needs an online CPU and at most 60000 ms (CPU %u, %u ms)\n",
			cpu, ms);
		return -EINVAL;
	}
	if (rec->task)
		put_task_struct(rec->task);
	rec->task = NULL;
	memset(rec->e, 0, sizeof(rec->e));
	rec->status = 0;
	rec->depth = next_depth;
	rec->filter = next_filter | next_freeze;
	ret = smp_call_function_single(cpu, ctr_kstart, rec, 1);
	if (ret)
		return ret;
	msleep(ms);
	return smp_call_function_single(cpu, ctr_kstop, rec, 1);
}

/*
 * "types LIST": the transfer types of the next recordings, comma-separated: call (direct
 * and indirect calls), return, jump (jumps with and without linkage), branch (taken),
 * ntbranch (not-taken branches), trap (exceptions, interrupts, trap returns), swap
 * (co-routine swaps); "default" is all of them but ntbranch.
 */
static int cmd_types(char *list)
{
	static const struct {
		const char *name;
		unsigned long inh, en;
	} names[] = {
		{ "call", CTL_INDCALLINH | CTL_DIRCALLINH, 0 },
		{ "return", CTL_RETINH, 0 },
		{ "jump", CTL_INDJMPINH | CTL_DIRJMPINH | CTL_INDLJMPINH | CTL_DIRLJMPINH, 0 },
		{ "branch", CTL_TKBRINH, 0 },
		{ "ntbranch", 0, CTL_NTBREN },
		{ "trap", CTL_EXCINH | CTL_INTRINH | CTL_TRETINH, 0 },
		{ "swap", CTL_CORSWAPINH, 0 },
	};
	unsigned long filter = CTL_ALLINH;
	char *tok;
	unsigned int i;

	if (!strcmp(list, "default")) {
		next_filter = 0;
		return 0;
	}
	while ((tok = strsep(&list, ",")) != NULL) {
		for (i = 0; i < ARRAY_SIZE(names); i++) {
			if (!strcmp(tok, names[i].name)) {
				filter = (filter & ~names[i].inh) | names[i].en;
				break;
			}
		}
		if (i == ARRAY_SIZE(names)) {
			pr_warn("ctr_rec: unknown transfer type '%s' (call, return, jump, branch, ntbranch, trap, swap, default)\n",
				tok);
			return -EINVAL;
		}
	}
	next_filter = filter;
	return 0;
}

static int cmd_depth(unsigned int depth)
{
	int f;

	if (depth == 0) {	/* the smallest depth the hart takes */
		next_depth = 16 << __ffs(depths_allowed);
		return 0;
	}
	if (depth < 16 || depth > MAX_DEPTH || !is_power_of_2(depth)) {
		pr_warn("ctr_rec: depth %u is not a CTR depth (16, 32, 64, 128, 256)\n", depth);
		return -EINVAL;
	}
	f = depth_field(depth);
	if (!(depths_allowed & (1U << f))) {
		pr_warn("ctr_rec: depth %u refused: sctrdepth does not take it (this hart allows 0x%x: bit n = 2^(n+4) entries)\n",
		       depth, depths_allowed);
		return -EINVAL;
	}
	next_depth = depth;
	return 0;
}

static ssize_t ctr_write(struct file *file, const char __user *ubuf, size_t len, loff_t *ppos)
{
	char buf[96];
	unsigned int depth, cpu, ms;
	int ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	strim(buf);
	mutex_lock(&ctr_lock);
	if (!strcmp(buf, "arm"))
		ret = cmd_arm();
	else if (sscanf(buf, "depth %u", &depth) == 1)
		ret = cmd_depth(depth);
	else if (!strcmp(buf, "freeze on"))
		next_freeze = CTL_LCOFIFRZ, ret = 0;
	else if (!strcmp(buf, "freeze off"))
		next_freeze = 0, ret = 0;
	else if (!strncmp(buf, "types ", 6))
		ret = cmd_types(buf + 6);
	else if (sscanf(buf, "kernel %u %u", &cpu, &ms) == 2)
		ret = cmd_kernel(cpu, ms);
	else
		ret = -EINVAL;
	mutex_unlock(&ctr_lock);
	return ret ? ret : len;
}

static const char *const type_names[16] = {
	"none", "exception", "interrupt", "trap return",
	"not-taken branch", "taken branch", "reserved", "reserved",
	"indirect call", "direct call", "indirect jump", "direct jump",
	"co-routine swap", "function return", "other indirect jump", "other direct jump",
};

/* Cycles of a record's CC field (Smctr section 6.3), or -1 when CCV is 0. */
static long long cycles(unsigned long data)
{
	unsigned long cc = (data >> 16) & 0xffff, ccm = cc & 0xfff, cce = cc >> 12;

	if (!(data & (1UL << 15)))
		return -1;
	if (cce == 0)
		return ccm;
	return (long long)(4096 + ccm) << (cce - 1);
}

static int ctr_show(struct seq_file *m, void *v)
{
	static struct ctr_entry copy[MAX_DEPTH];
	unsigned long flags;
	unsigned int i, n = 0, depth;
	bool frozen;

	mutex_lock(&ctr_lock);
	depth = rec->depth;
	raw_spin_lock_irqsave(&ctr_state_lock, flags);
	memcpy(copy, rec->e, sizeof(copy[0]) * depth);
	frozen = rec->status & STATUS_FROZEN;
	rec->status &= ~STATUS_FROZEN;
	raw_spin_unlock_irqrestore(&ctr_state_lock, flags);
	release_if_done();
	for (i = depth; i-- > 0;) {
		const struct ctr_entry *e = &copy[i];
		long long c;

		if (!(e->src & 1))
			continue;
		n++;
		c = cycles(e->data);
		seq_printf(m, "%lx -> %lx %s ", e->src & ~1UL, e->dst & ~1UL,
			   type_names[e->data & 0xf]);
		if (c < 0)
			seq_puts(m, "-\n");
		else
			seq_printf(m, "%lld\n", c);
	}
	if (frozen)
		seq_puts(m, "frozen\n");
	seq_printf(m, "records %u depth %u\n", n, depth);
	mutex_unlock(&ctr_lock);
	return 0;
}

static int ctr_open(struct inode *inode, struct file *file)
{
	return single_open(file, ctr_show, NULL);
}

static const struct proc_ops ctr_proc_ops = {
	.proc_open = ctr_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
	.proc_write = ctr_write,
};

static bool dt_has(struct device_node *cpu, const char *ext)
{
	return of_property_match_string(cpu, "riscv,isa-extensions", ext) >= 0;
}

static int __init ctr_rec_init(void)
{
	struct device_node *cpu = of_find_node_by_path("/cpus/cpu@0");
	unsigned long v, flags;
	bool ok;
	int f, cpuid;

	ok = cpu && dt_has(cpu, "ssctr") && dt_has(cpu, "sscsrind");
	of_node_put(cpu);
	if (!ok) {
		pr_err("ctr_rec: not loaded: /cpus/cpu@0 riscv,isa-extensions lacks ssctr or sscsrind (no CTR)\n");
		return -ENODEV;
	}
	/* The depths sctrdepth takes (WARL: an unsupported value keeps the current one). */
	local_irq_save(flags);
	if (!ctr_probe(&v)) {
		local_irq_restore(flags);
		pr_err("ctr_rec: not loaded: reading sctrdepth traps although the device tree lists ssctr\n");
		return -ENODEV;
	}
	depths_allowed = 0;
	for (f = 0; f <= 4; f++) {
		csr_write(CTR_SCTRDEPTH, f);
		if ((csr_read(CTR_SCTRDEPTH) & 7) == f)
			depths_allowed |= 1U << f;
	}
	csr_write(CTR_SCTRDEPTH, v);
	local_irq_restore(flags);
	if (!depths_allowed) {
		pr_err("ctr_rec: not loaded: sctrdepth takes no depth\n");
		return -ENODEV;
	}
	for_each_possible_cpu(cpuid)
		per_cpu(cpu_depth_field, cpuid) = -1;
	next_depth = 16 << __ffs(depths_allowed);
	rec = kzalloc(sizeof(*rec), GFP_KERNEL);
	if (!rec)
		return -ENOMEM;
	if (!proc_create("ctr_rec", 0666, NULL, &ctr_proc_ops)) {
		kfree(rec);
		return -ENOMEM;
	}
	preempt_notifier_inc();
	pr_info("ctr_rec: loaded: depths 0x%x (bit n = 2^(n+4) entries), default %u\n",
		depths_allowed, next_depth);
	return 0;
}

static void __exit ctr_rec_exit(void)
{
	remove_proc_entry("ctr_rec", NULL);
	/* A task that may still run keeps the module (cmd_arm takes a reference). */
	if (rec->task)
		put_task_struct(rec->task);
	preempt_notifier_dec();
	kfree(rec);
}

module_init(ctr_rec_init);
module_exit(ctr_rec_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("RISC-V CTR (Smctr/Ssctr) recorder of one task's user-mode transfers");
