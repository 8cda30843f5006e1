/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: DMA engines, the ring operations of a descriptor ring.
 */
#ifndef __NEURON_DMA_H__
#define __NEURON_DMA_H__

#include <linux/types.h>

struct neuron_device;
struct neuron_ring;

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

extern unsigned int neuron_dma_timeout_ms;

struct neuron_ring *neuron_dma_create(struct neuron_device *ndev, u32 index);

#endif /* __NEURON_DMA_H__ */
