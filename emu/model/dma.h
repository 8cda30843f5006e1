/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A DMA engine: a ring unit of copy descriptors and the engine's counters. */
#ifndef NEURON_MODEL_DMA_H
#define NEURON_MODEL_DMA_H

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"

typedef struct nm_device_state nm_device_state;

/* Bytes a DMA engine copies between two checks for a reset. */
#define NM_DMA_CHUNK (64u << 10)

#define NM_DMA_LATCHES 3 /* 3 counters */

enum { DMA_CNT_BYTES, DMA_CNT_DESCS, DMA_CNT_ERRORS, DMA_CNT_N };

typedef struct nm_dma {
    nm_device_state *dev; /* the device, as its units see it */
    uint32_t index;
    nm_ring ring; /* the descriptor ring; its lock covers the fields below */
    uint64_t cnt[DMA_CNT_N];
    uint32_t latch[NM_DMA_LATCHES];
    uint8_t *bounce; /* NM_DMA_CHUNK bytes for host-to-host copies */
} nm_dma;

/* Returns false when the bounce buffer cannot be allocated. */
bool nm_dma_init(nm_dma *e, nm_device_state *dev, uint32_t index);
void nm_dma_destroy(nm_dma *e);

/*
 * The engine's work function (nm_device_dma_step): a requested reset or
 * one descriptor. Returns true if it should run again.
 */
bool nm_dma_step(nm_dma *e);

/* A device reset; returns true if a running copy became stale (ring.h). */
bool nm_dma_device_reset(nm_dma *e);

/* A fatal error or shutdown: the copy in flight stops at its next chunk. */
void nm_dma_abort(nm_dma *e);

/* The engine's registers, at offsets inside NEURON_DMA_BASE(index). */
uint32_t nm_dma_reg_read(nm_dma *e, uint32_t reg, bool *known);
void nm_dma_reg_write(nm_dma *e, uint32_t reg, uint32_t v, bool *known);

#endif
