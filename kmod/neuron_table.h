/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: preallocated binding-table slots of a core queue.
 */
#ifndef __NEURON_TABLE_H__
#define __NEURON_TABLE_H__

#include <linux/kconfig.h>
#include <linux/types.h>

struct drm_device;

/*
 * Bytes of one slot: 16 bindings, or fewer bindings and the SG entries of
 * their host buffers. A larger table gets coherent memory of its own.
 */
#define NEURON_TABLE_SLOT_SIZE		512

/**
 * struct neuron_table_pool - binding-table slots of one core queue
 * @cpu: @count slots of %NEURON_TABLE_SLOT_SIZE bytes, coherent DMA memory
 * @dma: bus address of @cpu
 * @count: slots
 * @used: bitmap of the slots jobs hold (set and cleared atomically, no lock)
 */
struct neuron_table_pool {
	void *cpu;
	dma_addr_t dma;
	u32 count;
	unsigned long used[];
};

struct neuron_table_pool *neuron_table_pool_create(struct drm_device *drm,
						   u32 count);
int neuron_table_pool_get(struct neuron_table_pool *pool, size_t size,
			  void **cpu, dma_addr_t *dma);
void neuron_table_pool_put(struct neuron_table_pool *pool, int slot);
u32 neuron_table_pool_in_use(struct neuron_table_pool *pool);

#endif /* __NEURON_TABLE_H__ */
