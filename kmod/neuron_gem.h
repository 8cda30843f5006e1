/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: buffer objects in host and device memory.
 */
#ifndef __NEURON_GEM_H__
#define __NEURON_GEM_H__

#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>
#include <linux/list.h>
#include <linux/rbtree_types.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/workqueue.h>

struct drm_device;
struct drm_file;
struct neuron_device;

/**
 * struct neuron_bo - a buffer object
 * @base: the GEM object (both regions)
 * @shmem: the shmem GEM object of a %DRM_NEURON_BO_HOST buffer; its first
 *	member is @base, so both names denote the same GEM object
 * @region: &enum drm_neuron_bo_region, constant
 * @flags: DRM_NEURON_BO_* creation flags, constant
 * @node: the range of device memory of a %DRM_NEURON_BO_DEVICE buffer,
 *	allocated for the buffer's whole life; its start is the device
 *	address
 * @dma_lock: host buffers: protects @dma_maps and their users
 * @pin_lock: host buffers: held while pages are pinned for a new mapping,
 *	so that one pin of the buffer runs at a time
 * @dma_maps: host buffers: interval tree of the &struct neuron_host_map
 *	of the page runs pinned and DMA-mapped now, never overlapping
 * @dma_release: host buffers: unmaps and unpins the mappings that have
 *	been idle for %NEURON_HOST_UNMAP_DELAY_MS
 * @host_node: host buffers: entry in &neuron_device.host_bos
 *
 * Host buffers are shmem objects: their pages are allocated on first use.
 * Only the pages a job or copy uses are pinned and DMA-mapped, while it
 * uses them (neuron_bo_dma_get() and neuron_bo_dma_put(), in
 * neuron_gem_host.c), plus a short
 * grace period so that back-to-back jobs do not pin and map the pages each
 * time; after that the pages may be swapped out like any other shmem page.
 * Pinned bytes are charged to the pinning process and count against the
 * driver's limits (neuron_pin.c).
 * Device buffers are ranges of the device's memory, zeroed at creation.
 */
struct neuron_bo {
	union {
		struct drm_gem_object base;
		struct drm_gem_shmem_object shmem;
	};
	u32 region;
	u32 flags;
	struct drm_mm_node node;
	/* Protects dma_maps and the users of its entries. */
	struct mutex dma_lock;
	/* Serializes pinning; taken before dma_lock. */
	struct mutex pin_lock;
	struct rb_root_cached dma_maps;
	struct delayed_work dma_release;
	struct list_head host_node;
};

static inline struct neuron_bo *to_neuron_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct neuron_bo, base);
}

struct drm_gem_object *neuron_gem_create_object(struct drm_device *drm,
						size_t size);
int neuron_gem_init(struct neuron_device *ndev);

int neuron_bo_create_ioctl(struct drm_device *drm, void *data,
			   struct drm_file *file);
int neuron_bo_info_ioctl(struct drm_device *drm, void *data,
			 struct drm_file *file);

#endif /* __NEURON_GEM_H__ */
