/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The ring unit that a core's job queue and a DMA engine both are: a
 * descriptor ring the driver fills (RING_LO/HI, RING_ENTRIES, TAIL) and the
 * unit consumes (HEAD), CTRL.ENABLE/RESET, a halted state with an error
 * code, and the bookkeeping that tells a unit's in-flight work apart from
 * work started before a device reset (gen, stale). Registers 0x00-0x14 of
 * both units have the same layout and meaning (hw/neuron_regs.h).
 */
#ifndef NEURON_MODEL_RING_H
#define NEURON_MODEL_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <threads.h>

#include "neuron_regs.h"

/* The end of the bus address space the units can reach. */
#define NM_ADDR_LIMIT (UINT64_C(1) << NEURON_ADDR_BITS)

typedef struct nm_ring {
    mtx_t lock; /* everything below but abort, and the owner's unit state */

    /* Registers. */
    uint64_t base;
    uint32_t entries;
    bool enabled;
    bool halted;
    bool reset_req; /* CTRL.RESET written, not yet done */
    uint32_t error; /* NEURON_Q_ERR_* when halted */
    uint32_t tail;
    uint32_t head;

    /* Execution state, written by the unit's worker. */
    uint32_t gen;     /* bumped by a device reset: older results are stale */
    uint32_t run_gen; /* gen when the running work started */
    bool running;     /* a descriptor is between fetch and completion */
    bool stale;       /* running across a device reset: counted in reset_pending */

    atomic_bool abort; /* polled by the work in flight */
} nm_ring;

/* A 64-bit register written as two 32-bit halves. */
static inline uint64_t nm_set_lo(uint64_t v, uint32_t lo) {
    return (v & ~UINT64_C(0xffffffff)) | lo;
}

static inline uint64_t nm_set_hi(uint64_t v, uint32_t hi) {
    return (v & UINT64_C(0xffffffff)) | ((uint64_t)hi << 32);
}

/* Reading the _LO half of a 64-bit counter latches its _HI half. */
static inline uint32_t nm_latch_read(uint32_t *latch, uint64_t v) {
    *latch = (uint32_t)(v >> 32);
    return (uint32_t)v;
}

/* What a write of CTRL asks of the unit (nm_ring_ctrl_write_locked). */
typedef enum nm_ring_ctrl {
    NM_RING_CTRL_NONE,       /* nothing to start */
    NM_RING_CTRL_KICK,       /* enabled: the worker has work */
    NM_RING_CTRL_RESET,      /* reset requested: abort and kick the worker */
    NM_RING_CTRL_BAD_CONFIG, /* enable refused: the unit must halt */
} nm_ring_ctrl;

void nm_ring_init(nm_ring *r);
void nm_ring_destroy(nm_ring *r);

/* A ring of @entries descriptors of @size bytes at bus address @addr. */
bool nm_ring_config_ok(uint64_t addr, uint32_t entries, uint32_t size);

/* Back to the state after a unit reset; @config also clears the base and size. */
void nm_ring_clear_locked(nm_ring *r, bool config);

/* Halt with @err unless halted already. Returns true if it halted now. */
bool nm_ring_halt_locked(nm_ring *r, uint32_t err);

/*
 * Is there a descriptor to take? Returns false when disabled, halted or
 * empty, and sets *bad_tail when TAIL is more than a ring ahead of HEAD.
 * Otherwise marks the unit running, remembers the generation in *gen and
 * returns the descriptor's bus address in *addr.
 */
bool nm_ring_begin_locked(nm_ring *r, uint32_t desc_size, uint64_t *addr, uint32_t *gen,
                          bool *bad_tail);

/*
 * The running work ends without a result: a device reset or a fatal error
 * overtook it. Returns true if the unit held a count in reset_pending,
 * which the caller must put once it has dropped the lock.
 */
bool nm_ring_end_stale_locked(nm_ring *r);

/*
 * A device reset reaches the unit: a newer generation, work in flight
 * aborted, a pending CTRL.RESET dropped (the caller clears the rest).
 * Returns true if running work became stale and so takes a count in
 * reset_pending.
 */
bool nm_ring_device_reset_locked(nm_ring *r);

/* RING_LO..HEAD (0x00-0x14): sets *known to false for other offsets. */
uint32_t nm_ring_reg_read_locked(const nm_ring *r, uint32_t reg, bool *known);

/* The STATUS bits the two units share (NEURON_Q_STATUS_* = NEURON_DMA_STATUS_*). */
uint32_t nm_ring_status_locked(const nm_ring *r);

/*
 * Writes of RING_LO, RING_HI, RING_ENTRIES (ignored while enabled) and
 * TAIL. Returns true when a worker has work; sets *known to false for
 * offsets that are not these.
 */
bool nm_ring_reg_write_locked(nm_ring *r, uint32_t reg, uint32_t v, bool *known);

/*
 * A write of CTRL. Enabling needs the ring of @desc_size descriptors to be
 * valid and @config_ok (what else the unit needs configured).
 */
nm_ring_ctrl nm_ring_ctrl_write_locked(nm_ring *r, uint32_t v, uint32_t desc_size, bool config_ok);

#endif
