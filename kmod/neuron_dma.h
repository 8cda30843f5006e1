/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: DMA engines: descriptor rings and the COPY ioctl.
 */
#ifndef __NEURON_DMA_H__
#define __NEURON_DMA_H__

#include <drm/gpu_scheduler.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include "neuron_regs.h"

struct drm_device;
struct drm_file;
struct neuron_device;
struct neuron_job;

/* Descriptor ring entries of every DMA engine. */
#define NEURON_DMA_ENTRIES		1024
/* Copies (jobs) an engine holds at once. */
#define NEURON_DMA_CREDITS		64

/**
 * struct neuron_dma_seg - one descriptor's worth of a copy
 * @src: source: device-memory offset or bus address
 * @dst: destination, likewise
 * @len: bytes, 1..NEURON_DMA_MAX_LEN
 * @flags: NEURON_DMA_F_SRC_HOST, NEURON_DMA_F_DST_HOST
 */
struct neuron_dma_seg {
	u64 src;
	u64 dst;
	u32 len;
	u32 flags;
};

/**
 * struct neuron_dma_engine - one DMA engine
 * @ndev: the device
 * @index: engine index
 * @sched: the scheduler feeding this engine; one credit per copy
 * @lock: protects the ring, @tail, @head, @slot_job, @active and the
 *	hardware fences and progress of the jobs on @active
 * @ring: descriptor ring (coherent DMA memory)
 * @ring_dma: bus address of @ring
 * @slot_job: the job each ring slot between @head and @tail belongs to
 * @tail: producer index (what was last written to DMA_TAIL)
 * @head: descriptors consumed by the driver (DMA_HEAD as last seen)
 * @active: copies handed to this engine and not completed, in order;
 *	their descriptors are written to the ring as it drains
 * @fence_context: dma_fence context of the hardware fences
 * @fence_seqno: last hardware fence seqno used
 * @submit_seqno: last sequence number given to a copy on this engine
 * @resets: engine resets done by the driver
 * @name: scheduler name
 */
struct neuron_dma_engine {
	struct neuron_device *ndev;
	u32 index;
	struct drm_gpu_scheduler sched;
	/* Protects the ring, indices, slot_job, active and their hw fences. */
	struct mutex lock;
	struct neuron_dma_desc *ring;
	dma_addr_t ring_dma;
	struct neuron_job **slot_job;
	u32 tail;
	u32 head;
	struct list_head active;
	u64 fence_context;
	u64 fence_seqno;
	atomic64_t submit_seqno;
	atomic_t resets;
	char name[24];
};

int neuron_dma_init(struct neuron_device *ndev, struct neuron_dma_engine *eng,
		    u32 index);
void neuron_dma_hw_init(struct neuron_dma_engine *eng);
void neuron_dma_irq(struct neuron_device *ndev, u32 index);
bool neuron_dma_recover(struct neuron_dma_engine *eng,
			struct drm_sched_job *bad, int err);
void neuron_dma_fail_all_locked(struct neuron_dma_engine *eng, int err,
				bool signal);
bool neuron_dma_halted(struct neuron_dma_engine *eng);

int neuron_copy_ioctl(struct drm_device *drm, void *data,
		      struct drm_file *file);

#endif /* __NEURON_DMA_H__ */
