// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: hardware fences.
 *
 * Each file's lane of a ring (core queue or DMA engine) has one fence
 * context: its jobs complete in order. A job gets its fence when it is
 * pushed and keeps it when it runs again after a reset of its unit. The
 * fence is signalled by the completion interrupt, by a reset, when the
 * device goes away, or when the job is cancelled before it ran.
 */
#include <linux/dma-fence.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "neuron_drv.h"
#include "neuron_fence.h"

/**
 * struct neuron_fence - fence signalled when the hardware is done
 * @base: the fence; first member, freed with dma_fence_free()
 * @lock: the fence's lock
 */
struct neuron_fence {
	struct dma_fence base;
	spinlock_t lock; /* see dma_fence_init() */
};

static const char *neuron_fence_get_driver_name(struct dma_fence *fence)
{
	return DRIVER_NAME;
}

static const char *neuron_fence_get_timeline_name(struct dma_fence *fence)
{
	return "neuron-hw";
}

static const struct dma_fence_ops neuron_fence_ops = {
	.get_driver_name = neuron_fence_get_driver_name,
	.get_timeline_name = neuron_fence_get_timeline_name,
};

/**
 * neuron_fence_alloc() - memory for a hardware fence
 *
 * Allocated before the lock under which the fence gets its seqno, so that
 * queueing a job cannot fail halfway.
 *
 * Return: the fence, to be passed to neuron_fence_init() or
 * neuron_fence_free(), or NULL.
 */
struct dma_fence *neuron_fence_alloc(void)
{
	struct neuron_fence *fence = kzalloc(sizeof(*fence), GFP_KERNEL);

	return fence ? &fence->base : NULL;
}

/**
 * neuron_fence_init() - make an allocated fence a new, unsignalled one
 * @fence: from neuron_fence_alloc(); holds one reference afterwards
 * @context: the fence context of the job's lane
 * @seqno: the next seqno on @context
 */
void neuron_fence_init(struct dma_fence *fence, u64 context, u64 seqno)
{
	struct neuron_fence *f = container_of(fence, struct neuron_fence, base);

	spin_lock_init(&f->lock);
	dma_fence_init(fence, &neuron_fence_ops, &f->lock, context, seqno);
}

/**
 * neuron_fence_free() - free a fence that neuron_fence_init() never saw
 * @fence: from neuron_fence_alloc(), or NULL
 */
void neuron_fence_free(struct dma_fence *fence)
{
	kfree(fence ? container_of(fence, struct neuron_fence, base) : NULL);
}

/**
 * neuron_fence_signal() - signal a hardware fence once
 * @fence: the fence, or NULL (a job that never ran)
 * @error: 0 or the negative errno the fence reports
 *
 * A fence that already signalled keeps its first result.
 */
void neuron_fence_signal(struct dma_fence *fence, int error)
{
	if (!fence || dma_fence_is_signaled(fence))
		return;
	if (error)
		dma_fence_set_error(fence, error);
	dma_fence_signal(fence);
}
