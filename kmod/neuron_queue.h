/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: core queues, the ring operations of a core's job queue.
 */
#ifndef __NEURON_QUEUE_H__
#define __NEURON_QUEUE_H__

#include <linux/types.h>

struct neuron_device;
struct neuron_ring;

/* Job ring and completion ring sizes of every core queue. */
#define NEURON_QUEUE_ENTRIES		256
#define NEURON_CPL_ENTRIES		1024

extern unsigned int neuron_job_timeout_ms;

struct neuron_ring *neuron_queue_create(struct neuron_device *ndev, u32 core);

#endif /* __NEURON_QUEUE_H__ */
