/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: hardware fences, signalled when a core or DMA engine is done
 * with a job.
 */
#ifndef __NEURON_FENCE_H__
#define __NEURON_FENCE_H__

#include <linux/types.h>

struct dma_fence;

struct dma_fence *neuron_fence_alloc(void);
void neuron_fence_init(struct dma_fence *fence, u64 context, u64 seqno);
void neuron_fence_free(struct dma_fence *fence);
void neuron_fence_signal(struct dma_fence *fence, int error);

#endif /* __NEURON_FENCE_H__ */
