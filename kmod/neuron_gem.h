/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: buffer objects in host and device memory.
 */
#ifndef __NEURON_GEM_H__
#define __NEURON_GEM_H__

#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/workqueue.h>

struct drm_device;
struct drm_file;

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
 * @dma_lock: host buffers: protects @dma_users and @dma_sgt
 * @dma_users: host buffers: jobs and copies that use the buffer now
 * @dma_sgt: host buffers: the pages' DMA-mapped SG table, or NULL
 * @dma_release: host buffers: unmaps and unpins the pages once the buffer
 *	has been idle for %NEURON_HOST_UNMAP_DELAY_MS
 *
 * Host buffers are shmem objects: their pages are allocated on first use
 * and pinned and DMA-mapped for the device only while jobs or copies use
 * them (neuron_bo_dma_get() and neuron_bo_dma_put()), plus a short grace
 * period so that back-to-back jobs do not pin and map the pages each time;
 * after that the pages may be swapped out like any other shmem page.
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
	/* Protects dma_users and dma_sgt. */
	struct mutex dma_lock;
	unsigned int dma_users;
	struct sg_table *dma_sgt;
	struct delayed_work dma_release;
};

/* How long an idle host buffer stays pinned and mapped for the device. */
#define NEURON_HOST_UNMAP_DELAY_MS	1000

static inline struct neuron_bo *to_neuron_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct neuron_bo, base);
}

struct drm_gem_object *neuron_gem_create_object(struct drm_device *drm,
						size_t size);
struct sg_table *neuron_bo_dma_get(struct neuron_bo *bo);
void neuron_bo_dma_put(struct neuron_bo *bo);
int neuron_bo_create_ioctl(struct drm_device *drm, void *data,
			   struct drm_file *file);
int neuron_bo_info_ioctl(struct drm_device *drm, void *data,
			 struct drm_file *file);

#endif /* __NEURON_GEM_H__ */
