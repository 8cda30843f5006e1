/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: debugfs (rings, jobs, memory map, fault injection).
 */
#ifndef __NEURON_DEBUGFS_H__
#define __NEURON_DEBUGFS_H__

struct neuron_device;

#if IS_ENABLED(CONFIG_DEBUG_FS)
void neuron_debugfs_init(struct neuron_device *ndev);
#else
static inline void neuron_debugfs_init(struct neuron_device *ndev)
{
}
#endif

#endif /* __NEURON_DEBUGFS_H__ */
