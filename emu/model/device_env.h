/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a device is created with and runs in: its configuration and its
 * environment (memory, interrupts, kicks, clock, event tracing), and the
 * kinds of unit and event the environment is told about. Part of the
 * public API (device.h); the device's state (device_state.h) and its
 * units are built on it.
 */
#ifndef NEURON_MODEL_DEVICE_ENV_H
#define NEURON_MODEL_DEVICE_ENV_H

#include <stdint.h>

#include "job.h"
#include "neuron_regs.h"

typedef enum nm_unit_kind {
    NM_UNIT_CORE = 0,
    NM_UNIT_DMA = 1,
} nm_unit_kind;

#define NM_DEFAULT_SBUF_SIZE (24u << 20)
#define NM_DEFAULT_PSUM_SIZE (2u << 20)
#define NM_DEFAULT_CLOCK_MHZ 1400u
#define NM_FW_VERSION ((1u << 16) | 0u)
#define NM_DEFAULT_CAPS                                                                            \
    (NEURON_CAP_FP32 | NEURON_CAP_BF16 | NEURON_CAP_FP16 | NEURON_CAP_HOST_BINDINGS |              \
     NEURON_CAP_CORE_RESET | NEURON_CAP_PROFILE)

typedef struct nm_device_config {
    uint32_t num_cores; /* 1..NEURON_MAX_CORES */
    uint32_t num_dma;   /* 1..NEURON_MAX_DMA_ENGINES */
    uint32_t sbuf_size; /* bytes per core, multiple of NEURON_PARTITIONS */
    uint32_t psum_size; /* bytes per core, multiple of NEURON_PARTITIONS */
    uint32_t clock_mhz; /* non-zero */
    uint32_t caps;      /* NEURON_CAP_*; 0 means NM_DEFAULT_CAPS */
} nm_device_config;

/* Notable events, for tracing (see nm_device_env.event). */
typedef enum nm_event {
    NM_EV_JOB_START,  /* unit = core, a = job_id */
    NM_EV_JOB_END,    /* unit = core, a = job_id, b = NEURON_JOB_STATUS_* */
    NM_EV_NOTIFY,     /* unit = core, a = job_id, b = notify value */
    NM_EV_QUEUE_HALT, /* unit = core, b = NEURON_Q_ERR_* */
    NM_EV_CORE_RESET, /* unit = core: Q_CTRL.RESET completed */
    NM_EV_DMA_DESC,   /* unit = engine, a = len, b = status written back */
    NM_EV_DMA_HALT,   /* unit = engine, b = NEURON_Q_ERR_* */
    NM_EV_DMA_RESET,  /* unit = engine: DMA_CTRL.RESET completed */
    NM_EV_DEV_RESET,  /* device reset completed, a = RESET_COUNT */
    NM_EV_FATAL,      /* b = NEURON_FATAL_* */
} nm_event;

typedef struct nm_device_env {
    /* Host (bus-address) memory and device memory. */
    nm_mem_ops mem;
    /* Passed to every callback below. */
    void *opaque;
    /* Signal MSI-X vector @vector. Required. */
    void (*raise_irq)(void *opaque, uint32_t vector);
    /* Unit (kind, index) has work: call its step function. May be NULL. */
    void (*kick)(void *opaque, nm_unit_kind kind, uint32_t index);
    /* Monotonic nanoseconds for the busy-time counters. May be NULL. */
    uint64_t (*clock_ns)(void *opaque);
    /*
     * Called on the thread where the event happens, possibly with a unit
     * lock held: it must not block or call into the model. May be NULL.
     */
    void (*event)(void *opaque, nm_event ev, uint32_t unit, uint64_t a, uint64_t b);
} nm_device_env;

#endif
