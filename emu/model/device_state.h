/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device's own state below its units: configuration and environment,
 * the global control and status registers, interrupt status and mask, the
 * fatal and shutdown flags and the count that completes a device reset,
 * with the services the units (queue.c, dma.c) reach the device by:
 * events, interrupts, kicks, the clock and the end of their stale work.
 * device.c, above the units, starts resets and enters the fatal state.
 */
#ifndef NEURON_MODEL_DEVICE_STATE_H
#define NEURON_MODEL_DEVICE_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <threads.h>

#include "device_env.h"

typedef struct nm_device_state {
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
} nm_device_state;

/* A zeroed @st takes @cfg (caps 0 meaning NM_DEFAULT_CAPS) and @env. */
void nm_device_state_init(nm_device_state *st, const nm_device_config *cfg,
                          const nm_device_env *env);
void nm_device_state_destroy(nm_device_state *st);

static inline uint64_t nm_now_ns(nm_device_state *st) {
    return st->env.clock_ns ? st->env.clock_ns(st->env.opaque) : 0;
}

static inline void nm_emit(nm_device_state *st, nm_event e, uint32_t unit, uint64_t a, uint64_t b) {
    if (st->env.event)
        st->env.event(st->env.opaque, e, unit, a, b);
}

/* Sets @bit in IRQ_STATUS and signals @vector unless the bit is masked. */
static inline void nm_irq(nm_device_state *st, uint32_t bit, uint32_t vector) {
    atomic_fetch_or(&st->irq_status, bit);
    if (!(atomic_load(&st->irq_mask) & bit))
        st->env.raise_irq(st->env.opaque, vector);
}

static inline void nm_error_irq(nm_device_state *st) {
    nm_irq(st, NEURON_IRQ_ERROR, NEURON_MSIX_ERROR(st->cfg.num_cores, st->cfg.num_dma));
}

static inline void nm_kick(nm_device_state *st, nm_unit_kind kind, uint32_t index) {
    if (st->env.kick)
        st->env.kick(st->env.opaque, kind, index);
}

/*
 * Starts a device reset: returns false when one is in progress already
 * (a power-on reset then still clears RESET_COUNT). Otherwise
 * reset_pending holds the reset's own count, to be put by
 * nm_reset_pending_put() once the units have been reset.
 */
bool nm_device_state_reset_begin(nm_device_state *st, bool power_on);

/* A unit whose work became stale holds a count until that work ends. */
static inline void nm_reset_pending_get(nm_device_state *st) {
    atomic_fetch_add(&st->reset_pending, 1);
}

/* The last unit to finish stale work (or the reset itself) completes a device reset. */
void nm_reset_pending_put(nm_device_state *st);

/* SCRATCH, FATAL_CAUSE, IRQ_STATUS, IRQ_MASK and the fatal flag back to their reset values. */
void nm_device_state_reset_registers(nm_device_state *st);

/*
 * Sets the fatal state with @cause (NEURON_FATAL_*) and reports it, unless
 * fatal already or resetting. Returns true if it became fatal now: the
 * caller then stops the units and raises the error interrupt.
 */
bool nm_device_state_enter_fatal(nm_device_state *st, uint32_t cause);

#endif
