// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: preallocated binding-table slots.
 *
 * Every job on a core reads its binding table from host memory. Rather
 * than a coherent allocation per job, each core queue has a pool of
 * fixed-size slots in one coherent allocation, as many as its job ring has
 * entries, made at probe. A job takes a slot when its table is built (in
 * the SUBMIT ioctl) and gives it back when it is freed, after its fence
 * signalled and the device is done with it; a job run again after a reset
 * keeps its slot. A table larger than a slot, or a job that finds every
 * slot held (more jobs alive on the core than it has ring entries, e.g.
 * queued behind a full ring), gets coherent memory of its own, as before.
 *
 * Slots are taken and returned with atomic bit operations, without a lock:
 * the ioctl takes them, the job's release (after its fence signalled, or
 * on the ioctl's error path) returns them.
 *
 * Lifetime. The slots' memory is device-managed: it is freed when the PCI
 * device is unbound, after the device was reset (neuron_exec_unplug()), so
 * nothing reads it any more, and before the driver is released from the
 * device, as DMA-API debugging requires. Jobs outlive an unbind while files
 * are open; a job run after it fails without touching its table, so its
 * slot is only given back. The pool itself (the bitmap) lives as long as
 * the DRM device, so that jobs freed after the unbind can still give their
 * slots back; it is freed after the last job (neuron_exec.c waits for them
 * before). Slots are taken and written only inside drm_dev_enter(), which
 * keeps the unbind, and so the freeing of the memory, from running
 * meanwhile.
 */
#include <drm/drm_device.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/dma-mapping.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "neuron_table.h"

static void neuron_table_pool_release(struct drm_device *drm, void *arg)
{
	struct neuron_table_pool *pool = arg;
	u32 held = neuron_table_pool_in_use(pool);

	/* Jobs that outlived the wait for them still give their slots back. */
	if (held) {
		drm_err(drm, "%u binding-table slots still held at teardown, not freed\n",
			held);
		return;
	}
	kfree(pool);
}

/**
 * neuron_table_pool_create() - allocate a pool of binding-table slots
 * @drm: the DRM device; the pool is freed when its last reference goes,
 *	its memory when the PCI device is unbound
 * @count: slots
 *
 * Return: the pool or an ERR_PTR().
 */
struct neuron_table_pool *neuron_table_pool_create(struct drm_device *drm,
						   u32 count)
{
	struct neuron_table_pool *pool;
	int ret;

	pool = kzalloc(struct_size(pool, used, BITS_TO_LONGS(count)),
		       GFP_KERNEL);
	if (!pool)
		return ERR_PTR(-ENOMEM);
	pool->count = count;
	pool->cpu = dmam_alloc_coherent(drm->dev,
					(size_t)count * NEURON_TABLE_SLOT_SIZE,
					&pool->dma, GFP_KERNEL);
	if (!pool->cpu) {
		kfree(pool);
		return ERR_PTR(-ENOMEM);
	}
	ret = drmm_add_action_or_reset(drm, neuron_table_pool_release, pool);
	return ret ? ERR_PTR(ret) : pool;
}

/**
 * neuron_table_pool_get() - take a slot for a binding table
 * @pool: the pool
 * @size: bytes of the table
 * @cpu: receives the slot's address
 * @dma: receives the slot's bus address
 *
 * The slot's previous contents are left: the table is written whole.
 * Call inside drm_dev_enter(): the memory goes when the device is unbound.
 *
 * Return: the slot (for neuron_table_pool_put()), -E2BIG when @size does
 * not fit in a slot, -ENOSPC when every slot is held.
 */
int neuron_table_pool_get(struct neuron_table_pool *pool, size_t size,
			  void **cpu, dma_addr_t *dma)
{
	unsigned long slot;

	if (size > NEURON_TABLE_SLOT_SIZE)
		return -E2BIG;
	do {
		slot = find_first_zero_bit(pool->used, pool->count);
		if (slot >= pool->count)
			return -ENOSPC;
	} while (test_and_set_bit_lock(slot, pool->used));
	*cpu = pool->cpu + slot * NEURON_TABLE_SLOT_SIZE;
	*dma = pool->dma + slot * NEURON_TABLE_SLOT_SIZE;
	return slot;
}
EXPORT_SYMBOL_IF_KUNIT(neuron_table_pool_get);

/**
 * neuron_table_pool_put() - give a slot back
 * @pool: the pool
 * @slot: what neuron_table_pool_get() returned; the device is done with it
 */
void neuron_table_pool_put(struct neuron_table_pool *pool, int slot)
{
	clear_bit_unlock(slot, pool->used);
}
EXPORT_SYMBOL_IF_KUNIT(neuron_table_pool_put);

/**
 * neuron_table_pool_in_use() - slots jobs hold
 * @pool: the pool
 *
 * Return: how many, a snapshot.
 */
u32 neuron_table_pool_in_use(struct neuron_table_pool *pool)
{
	return bitmap_weight(pool->used, pool->count);
}
EXPORT_SYMBOL_IF_KUNIT(neuron_table_pool_in_use);
