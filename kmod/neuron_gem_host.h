/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: host memory for the device: pinning and DMA mappings.
 */
#ifndef __NEURON_GEM_HOST_H__
#define __NEURON_GEM_HOST_H__

#include <linux/rbtree_types.h>
#include <linux/scatterlist.h>
#include <linux/types.h>

struct neuron_bo;
struct mm_struct;
struct neuron_client;
struct neuron_device;

/**
 * struct neuron_host_map - a run of pages of a host buffer, pinned and
 * DMA-mapped once
 * @rb: node in &neuron_bo.dma_maps, an interval tree of the pages
 *	[@first, @first + @count - 1]
 * @subtree_last: the interval tree's: the last page of @rb's subtree
 * @bo: the buffer
 * @client: the file charged with the pinned bytes (counted reference)
 * @mm: the address space whose pinned_vm is charged with them: the
 *	process that made the mapping (mmgrab() reference)
 * @first: index of the first page in the buffer
 * @count: pages
 * @charged: bytes @client is charged with: those of the pages while the
 *	mapping is made, then the whole of every folio they are in (a pin
 *	keeps a huge page from reclaim whole)
 * @users: ranges (&struct neuron_host_range) that use the mapping now
 * @idle_since: jiffies when @users last dropped to zero
 * @sgt: the pages' SG table, DMA-mapped while @dma_mapped
 * @dma_mapped: false once neuron_gem_host_unplug() unmapped @sgt
 * @fresh: while the range that makes the mapping is not complete: a
 *	bitmap of the pages its pin allocated, given back if that range
 *	fails; NULL once the mapping is listed
 * @pages: the pinned pages, one reference each
 *
 * The mappings of a buffer never overlap: the DMA API does not allow a
 * page to be mapped twice at a time.
 */
struct neuron_host_map {
	struct rb_node rb;
	pgoff_t subtree_last;
	struct neuron_bo *bo;
	struct neuron_client *client;
	struct mm_struct *mm;
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
 * @start: byte of the buffer at which @sgt starts (page aligned; at or
 *	before the first byte used, since @maps[0] may start earlier)
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

/* How long an idle host mapping stays pinned and mapped for the device. */
#define NEURON_HOST_UNMAP_DELAY_MS	1000

void neuron_host_bo_init(struct neuron_bo *bo);
void neuron_host_bo_fini(struct neuron_bo *bo);
struct neuron_host_range *neuron_bo_dma_get(struct neuron_bo *bo,
					    struct neuron_client *client,
					    u64 offset, u64 size);
void neuron_bo_dma_put(struct neuron_host_range *range);
void neuron_gem_host_unplug(struct neuron_device *ndev);

#if IS_ENABLED(CONFIG_KUNIT)
/* The interval tree's lookup and ordering, visible to the KUnit tests. */
pgoff_t neuron_host_range_scan_locked(struct neuron_bo *bo, pgoff_t first,
				      pgoff_t last,
				      struct neuron_host_range *range,
				      unsigned int *maps, unsigned int *gaps);
void neuron_host_map_insert_locked(struct neuron_bo *bo,
				   struct neuron_host_map *map);
void neuron_host_range_order(struct neuron_host_range *range);
#endif

#endif /* __NEURON_GEM_HOST_H__ */
