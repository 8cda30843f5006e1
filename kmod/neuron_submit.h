/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: the SUBMIT and COPY ioctls.
 */
#ifndef __NEURON_SUBMIT_H__
#define __NEURON_SUBMIT_H__

#include <linux/kconfig.h>
#include <linux/types.h>

struct drm_device;
struct drm_file;
struct neuron_binding;
struct neuron_sg_entry;
struct scatterlist;
struct sg_table;

int neuron_submit_ioctl(struct drm_device *drm, void *data,
			struct drm_file *file);
int neuron_submit_batch_ioctl(struct drm_device *drm, void *data,
			      struct drm_file *file);
int neuron_copy_ioctl(struct drm_device *drm, void *data,
		      struct drm_file *file);

/**
 * struct neuron_slot - one validated slot of a job's binding table
 * @sgt: host buffer: the DMA-mapped SG table of the range's pages;
 *	device buffer: NULL
 * @dev_addr: device buffer: its device address
 * @offset: start of the range: in @sgt for a host buffer, in the buffer
 *	for a device buffer
 * @size: bytes of the range
 * @flags: NEURON_BIND_* rights, plus NEURON_BIND_HOST_SG for host buffers
 * @sg_count: host buffer: SG entries covering the range
 */
struct neuron_slot {
	struct sg_table *sgt;
	u64 dev_addr;
	u64 offset;
	u64 size;
	u32 flags;
	u32 sg_count;
};

/**
 * struct neuron_span - walks the bus addresses of a buffer range
 * @sgt: host buffer: its DMA-mapped SG table; device buffer: NULL
 * @sg: current DMA segment (host)
 * @addr: address of the next byte
 * @left: bytes contiguous from @addr (within the range)
 * @remaining: bytes of the range from @addr on
 */
struct neuron_span {
	struct sg_table *sgt;
	struct scatterlist *sg;
	u64 addr;
	u64 left;
	u64 remaining;
};

#if IS_ENABLED(CONFIG_KUNIT)
/* Pure helpers of the ioctls, visible to the KUnit tests. */
u32 neuron_sg_walk(struct sg_table *sgt, u64 offset, u64 size,
		   struct neuron_sg_entry *out);
size_t neuron_binding_table_size(const struct neuron_slot *slots, u32 count);
void neuron_binding_table_fill(struct neuron_binding *table,
			       dma_addr_t table_dma,
			       const struct neuron_slot *slots, u32 count);
int neuron_span_init(struct neuron_span *sp, u64 dev_addr,
		     struct sg_table *sgt, u64 offset, u64 size);
int neuron_span_advance(struct neuron_span *sp, u64 len);
#endif

#endif /* __NEURON_SUBMIT_H__ */
