// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module that warns when it loads: a VM harness self-test expects a run
 * with it to fail and to name the WARNING.
 */
#include <linux/bug.h>
#include <linux/init.h>
#include <linux/module.h>

static int __init neuron_selftest_warn_init(void)
{
	WARN_ON(1);
	return 0;
}

static void __exit neuron_selftest_warn_exit(void)
{
}

module_init(neuron_selftest_warn_init);
module_exit(neuron_selftest_warn_exit);

MODULE_DESCRIPTION("neuron VM harness self-test: a module that warns");
MODULE_LICENSE("GPL");
