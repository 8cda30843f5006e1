// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kernel warnings on demand, for the VM harness self-test of known kernel
 * splats (neuron-vm --allow-known-splat). Writing a case's name to
 * /sys/module/neuron_selftest_known/parameters/emit makes the kernel warn:
 *
 * known         genirq-proc-entry, from the kernel's own path: an
 *               interrupt whose /proc/irq/N directory lacks an entry (as
 *               when register_irq_proc() failed to create it) is freed,
 *               and unregister_irq_proc() warns in remove_proc_entry();
 * message-only  the same message and a call trace through a function of
 *               the same name, but from this module's WARN();
 * warning-only  the same path with another warning of remove_proc_entry():
 *               the directory holds an entry too many (which leaks);
 * other-caller  remove_proc_entry()'s warning with the same message, from
 *               this module instead of unregister_irq_proc();
 * other         an unrelated WARN_ON().
 */
#include <linux/bug.h>
#include <linux/init.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/proc_fs.h>
#include <linux/string.h>

#define SELFTEST_NAME "neuron_selftest_known"
/* The entry of /proc/irq/N the known case removes, and one it adds. */
#define SELFTEST_ENTRY "smp_affinity_list"
#define SELFTEST_EXTRA "neuron_selftest_extra"

static irqreturn_t neuron_selftest_irq(int irq, void *data)
{
	return IRQ_HANDLED;
}

/*
 * An interrupt of its own, with the dummy chip, requested and freed; in
 * between, one entry of its /proc/irq/N goes (@extra false) or one more
 * comes (@extra true).
 */
static int neuron_selftest_irq_proc(bool extra)
{
	struct proc_dir_entry *entry;
	char path[64];
	int irq, ret;

	irq = irq_alloc_desc(NUMA_NO_NODE);
	if (irq < 0)
		return irq;
	irq_set_chip_and_handler(irq, &dummy_irq_chip, handle_simple_irq);
	irq_clear_status_flags(irq, IRQ_NOREQUEST);
	/* Creates /proc/irq/N and its entries (register_irq_proc()). */
	ret = request_irq(irq, neuron_selftest_irq, 0, SELFTEST_NAME, NULL);
	if (ret)
		goto out;
	if (extra) {
		snprintf(path, sizeof(path), "irq/%d/%s", irq, SELFTEST_EXTRA);
		entry = proc_mkdir(path, NULL);
		if (!entry)
			ret = -ENOMEM;
	} else {
		snprintf(path, sizeof(path), "irq/%d/%s", irq, SELFTEST_ENTRY);
		remove_proc_entry(path, NULL);
	}
	free_irq(irq, NULL);
out:
	/* unregister_irq_proc() finds the entries changed. */
	irq_free_desc(irq);
	return ret;
}

/* remove_proc_entry() of an entry that is not there, from here. */
static int neuron_selftest_remove_missing(void)
{
	struct proc_dir_entry *dir;

	dir = proc_mkdir(SELFTEST_NAME, NULL);
	if (!dir)
		return -ENOMEM;
	remove_proc_entry(SELFTEST_ENTRY, dir);
	proc_remove(dir);
	return 0;
}

static noinline int neuron_selftest_warn_message(void)
{
	return WARN(1, "name '%s'\n", SELFTEST_ENTRY);
}

/*
 * Named as the kernel's function, so that the call trace of the
 * message-only case goes through it: only its WARNING: line differs from
 * the known splat's.
 */
static noinline int unregister_irq_proc(void)
{
	int warned = neuron_selftest_warn_message();

	return warned ? 0 : -EIO;
}

static int neuron_selftest_emit(const char *val, const struct kernel_param *kp)
{
	if (sysfs_streq(val, "known"))
		return neuron_selftest_irq_proc(false);
	if (sysfs_streq(val, "message-only"))
		return unregister_irq_proc();
	if (sysfs_streq(val, "warning-only"))
		return neuron_selftest_irq_proc(true);
	if (sysfs_streq(val, "other-caller"))
		return neuron_selftest_remove_missing();
	if (sysfs_streq(val, "other")) {
		WARN_ON(1);
		return 0;
	}
	return -EINVAL;
}

static const struct kernel_param_ops neuron_selftest_emit_ops = {
	.set = neuron_selftest_emit,
};
module_param_cb(emit, &neuron_selftest_emit_ops, NULL, 0200);
MODULE_PARM_DESC(emit,
		 "make the kernel warn: known, message-only, warning-only, other-caller or other");

static int __init neuron_selftest_known_init(void)
{
	return 0;
}

static void __exit neuron_selftest_known_exit(void)
{
}

module_init(neuron_selftest_known_init);
module_exit(neuron_selftest_known_exit);

MODULE_DESCRIPTION("neuron VM harness self-test: known kernel splats on demand");
MODULE_LICENSE("GPL");
