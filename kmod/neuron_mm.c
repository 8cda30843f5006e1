// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: device-memory allocator.
 *
 * Device memory is one range [0, size) of the device's address space,
 * visible to the CPU through the device-memory BAR. Allocations are page
 * aligned so that each buffer can be mapped on its own. The allocator lives
 * as long as the DRM device: buffers may outlive the PCI device.
 */
#include <drm/drm_managed.h>

#include "neuron_mm.h"

static void neuron_mm_fini(struct drm_device *drm, void *arg)
{
	struct neuron_mm *nmm = arg;

	if (nmm->size)
		drm_mm_takedown(&nmm->mm);
}

/**
 * neuron_mm_init() - set up the allocator for the device's memory
 * @drm: the DRM device whose lifetime bounds the allocator
 * @nmm: the allocator, zeroed
 * @size: bytes of device memory
 *
 * Return: 0 or a negative errno.
 */
int neuron_mm_init(struct drm_device *drm, struct neuron_mm *nmm, u64 size)
{
	int ret;

	ret = drmm_mutex_init(drm, &nmm->lock);
	if (ret)
		return ret;

	nmm->size = size;
	if (nmm->size)
		drm_mm_init(&nmm->mm, 0, nmm->size);
	return drmm_add_action_or_reset(drm, neuron_mm_fini, nmm);
}

/**
 * neuron_mm_alloc() - allocate a range of device memory
 * @nmm: the allocator
 * @node: zeroed node that receives the range
 * @size: bytes, a multiple of PAGE_SIZE
 *
 * Return: 0, or -ENOSPC when no free range of @size bytes exists.
 */
int neuron_mm_alloc(struct neuron_mm *nmm, struct drm_mm_node *node, u64 size)
{
	int ret;

	if (!size || size > nmm->size)
		return -ENOSPC;

	mutex_lock(&nmm->lock);
	ret = drm_mm_insert_node_generic(&nmm->mm, node, size, PAGE_SIZE, 0,
					 DRM_MM_INSERT_BEST);
	if (!ret) {
		WRITE_ONCE(nmm->used, nmm->used + size);
		WRITE_ONCE(nmm->allocations, nmm->allocations + 1);
	}
	mutex_unlock(&nmm->lock);
	return ret;
}

/**
 * neuron_mm_free() - return a range allocated by neuron_mm_alloc()
 * @nmm: the allocator
 * @node: the range
 */
void neuron_mm_free(struct neuron_mm *nmm, struct drm_mm_node *node)
{
	mutex_lock(&nmm->lock);
	WRITE_ONCE(nmm->used, nmm->used - node->size);
	WRITE_ONCE(nmm->allocations, nmm->allocations - 1);
	drm_mm_remove_node(node);
	mutex_unlock(&nmm->lock);
}
