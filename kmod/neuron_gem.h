/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: buffer objects in host and device memory.
 */
#ifndef __NEURON_GEM_H__
#define __NEURON_GEM_H__

#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>
#include <linux/scatterlist.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/workqueue.h>

struct drm_device;
struct drm_file;
struct neuron_client;
struct neuron_device;

/**
 * struct neuron_host_map - a run of pages of a host buffer, pinned and
 * DMA-mapped once
 * @node: entry in &neuron_bo.dma_maps, which is sorted by @first
 * @bo: the buffer
 * @client: the file charged with the pinned bytes (counted reference)
 * @first: index of the first page in the buffer
 * @count: pages
 * @charged: bytes @client is charged with: those of the pages while the
 *	mapping is made, then the whole of every folio they are in (a pin
 *	keeps a huge page from reclaim whole)
 * @users: ranges (&struct neuron_host_range) that use the mapping now
 * @idle_since: jiffies when @users last dropped to zero
 * @sgt: the pages' SG table, DMA-mapped while @dma_mapped
 * @dma_mapped: false once neuron_gem_unplug() unmapped @sgt
 * @fresh: while the range that makes the mapping is not complete: a
 *	bitmap of the pages its pin allocated, given back if that range
 *	fails; NULL once the mapping is listed
 * @pages: the pinned pages, one reference each
 *
 * The mappings of a buffer never overlap: the DMA API does not allow a
 * page to be mapped twice at a time.
 */
struct neuron_host_map {
	struct list_head node;
	struct neuron_bo *bo;
	struct neuron_client *client;
	pgoff_t first;
	pgoff_t count;
	u64 charged;
	unsigned int users;
	unsigned long idle_since;
	struct sg_table *sgt;
	bool dma_mapped;
	unsigned long *fresh;
	struct page *pages[];
};

/**
 * struct neuron_host_range - the pages of a host buffer one job or copy uses
 * @bo: the buffer
 * @start: byte of the buffer at which @sgt starts (page aligned)
 * @sgt: the DMA segments of @maps, in order: a table that only lists the
 *	addresses of mappings made elsewhere, never mapped itself
 * @num_maps: entries in @maps
 * @maps: the mappings that cover the range, one use each, by page
 */
struct neuron_host_range {
	struct neuron_bo *bo;
	u64 start;
	struct sg_table sgt;
	unsigned int num_maps;
	struct neuron_host_map *maps[];
};

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
 * @dma_maps: host buffers: &struct neuron_host_map of the page runs
 *	pinned and DMA-mapped now, by page, never overlapping
 * @dma_release: host buffers: unmaps and unpins the mappings that have
 *	been idle for %NEURON_HOST_UNMAP_DELAY_MS
 * @host_node: host buffers: entry in &neuron_device.host_bos
 *
 * Host buffers are shmem objects: their pages are allocated on first use.
 * Only the pages a job or copy uses are pinned and DMA-mapped, while it
 * uses them (neuron_bo_dma_get() and neuron_bo_dma_put()), plus a short
 * grace period so that back-to-back jobs do not pin and map the pages each
 * time; after that the pages may be swapped out like any other shmem page.
 * Pinned bytes count against the limits of neuron_host_pin_limit() and
 * neuron_host_pin_file_limit().
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
	struct list_head dma_maps;
	struct delayed_work dma_release;
	struct list_head host_node;
};

/* How long an idle host mapping stays pinned and mapped for the device. */
#define NEURON_HOST_UNMAP_DELAY_MS	1000

static inline struct neuron_bo *to_neuron_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct neuron_bo, base);
}

struct drm_gem_object *neuron_gem_create_object(struct drm_device *drm,
						size_t size);
struct neuron_host_range *neuron_bo_dma_get(struct neuron_bo *bo,
					    struct neuron_client *client,
					    u64 offset, u64 size);
void neuron_bo_dma_put(struct neuron_host_range *range);
int neuron_gem_init(struct neuron_device *ndev);
void neuron_gem_unplug(struct neuron_device *ndev);
u64 neuron_host_pinned(void);
u64 neuron_host_pin_limit(void);
u64 neuron_host_pin_file_limit(void);

int neuron_bo_create_ioctl(struct drm_device *drm, void *data,
			   struct drm_file *file);
int neuron_bo_info_ioctl(struct drm_device *drm, void *data,
			 struct drm_file *file);

#endif /* __NEURON_GEM_H__ */
