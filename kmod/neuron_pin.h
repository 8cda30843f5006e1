/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: the accounting of pinned host memory: the driver's limits, per
 * file and for all files, and the pinning process's RLIMIT_MEMLOCK.
 */
#ifndef __NEURON_PIN_H__
#define __NEURON_PIN_H__

#include <linux/atomic.h>
#include <linux/types.h>

struct mm_struct;
struct neuron_client;

int neuron_pin_charge(struct neuron_client *client, struct mm_struct *mm,
		      u64 bytes);
void neuron_pin_uncharge(struct neuron_client *client, struct mm_struct *mm,
			 u64 bytes);
u64 neuron_host_pinned(void);
u64 neuron_host_pin_limit(void);
u64 neuron_host_pin_file_limit(void);

#if IS_ENABLED(CONFIG_KUNIT)
/* Pure helper of neuron_pin_charge(), visible to the KUnit tests. */
bool neuron_pin_add_within(atomic64_t *counter, u64 bytes, u64 limit);
#endif

#endif /* __NEURON_PIN_H__ */
