/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: device-memory allocator.
 */
#ifndef __NEURON_MM_H__
#define __NEURON_MM_H__

#include <drm/drm_mm.h>
#include <linux/mutex.h>
#include <linux/types.h>

struct drm_device;

/**
 * struct neuron_mm - allocator of device memory
 * @lock: protects @mm, @used and @allocations
 * @mm: ranges of device memory in use; offsets are device addresses
 * @size: bytes of device memory managed (0: the device has none)
 * @used: bytes allocated
 * @allocations: ranges allocated
 *
 * @used and @allocations may be read with READ_ONCE() without @lock for
 * statistics.
 */
struct neuron_mm {
	/* Protects mm, used and allocations. */
	struct mutex lock;
	struct drm_mm mm;
	u64 size;
	u64 used;
	u32 allocations;
};

int neuron_mm_init(struct drm_device *drm, struct neuron_mm *nmm, u64 size);
int neuron_mm_alloc(struct neuron_mm *nmm, struct drm_mm_node *node, u64 size);
void neuron_mm_free(struct neuron_mm *nmm, struct drm_mm_node *node);

#endif /* __NEURON_MM_H__ */
