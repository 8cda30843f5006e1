/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device's own state and what its units (queue.c, dma.c) and its
 * register decoder (regs.c) reach it by: events, interrupts, kicks and the
 * end of a device reset.
 */
#ifndef NEURON_MODEL_DEVICE_INTERNAL_H
#define NEURON_MODEL_DEVICE_INTERNAL_H

#include <stdatomic.h>
#include <threads.h>

#include "device.h"
#include "dma.h"
#include "queue.h"

struct nm_device {
    nm_device_config cfg;
    nm_device_env env;

    mtx_t lock; /* the fields below up to the atomics */
    uint32_t scratch;
    uint32_t fatal_cause;
    uint32_t reset_count;
    bool resetting;
    bool power_on_reset; /* the reset in progress clears RESET_COUNT */

    atomic_uint irq_status;
    atomic_uint irq_mask;
    atomic_bool fatal;
    atomic_bool shutdown;
    /* 1 for a reset in progress plus one per unit running stale work. */
    atomic_uint reset_pending;
    atomic_uint_fast64_t bad_accesses;

    nm_queue q[NEURON_MAX_CORES];
    nm_dma dma[NEURON_MAX_DMA_ENGINES];
};

static inline uint64_t nm_now_ns(nm_device *dev) {
    return dev->env.clock_ns ? dev->env.clock_ns(dev->env.opaque) : 0;
}

static inline void nm_emit(nm_device *dev, nm_event e, uint32_t unit, uint64_t a, uint64_t b) {
    if (dev->env.event)
        dev->env.event(dev->env.opaque, e, unit, a, b);
}

/* Sets @bit in IRQ_STATUS and signals @vector unless the bit is masked. */
static inline void nm_irq(nm_device *dev, uint32_t bit, uint32_t vector) {
    atomic_fetch_or(&dev->irq_status, bit);
    if (!(atomic_load(&dev->irq_mask) & bit))
        dev->env.raise_irq(dev->env.opaque, vector);
}

static inline void nm_error_irq(nm_device *dev) {
    nm_irq(dev, NEURON_IRQ_ERROR, NEURON_MSIX_ERROR(dev->cfg.num_cores, dev->cfg.num_dma));
}

static inline void nm_kick(nm_device *dev, nm_unit_kind kind, uint32_t index) {
    if (dev->env.kick)
        dev->env.kick(dev->env.opaque, kind, index);
}

/* The last unit to finish stale work (or the reset itself) completes a device reset. */
void nm_reset_pending_put(nm_device *dev);

/* Enters the fatal state with @cause (NEURON_FATAL_*), unless resetting. */
void nm_device_enter_fatal(nm_device *dev, uint32_t cause);

#endif
