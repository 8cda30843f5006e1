// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module that loads and unloads without a word: a VM harness self-test
 * expects a run with it to pass.
 */
#include <linux/init.h>
#include <linux/module.h>

static int __init neuron_selftest_clean_init(void)
{
	return 0;
}

static void __exit neuron_selftest_clean_exit(void)
{
}

module_init(neuron_selftest_clean_init);
module_exit(neuron_selftest_clean_exit);

MODULE_DESCRIPTION("neuron VM harness self-test: a quiet module");
MODULE_LICENSE("GPL");
