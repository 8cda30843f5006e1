// SPDX-License-Identifier: GPL-2.0-or-later
/* The ring unit shared by the job queues and the DMA engines (ring.h). */
#include "ring.h"

/* The registers and bits ring.c decodes once for both units. */
_Static_assert(NEURON_Q_RING_LO == NEURON_DMA_RING_LO && NEURON_Q_RING_HI == NEURON_DMA_RING_HI &&
                   NEURON_Q_RING_ENTRIES == NEURON_DMA_RING_ENTRIES &&
                   NEURON_Q_CTRL == NEURON_DMA_CTRL && NEURON_Q_TAIL == NEURON_DMA_TAIL &&
                   NEURON_Q_HEAD == NEURON_DMA_HEAD,
               "job queue and DMA ring registers differ");
_Static_assert(NEURON_Q_CTRL_ENABLE == NEURON_DMA_CTRL_ENABLE &&
                   NEURON_Q_CTRL_RESET == NEURON_DMA_CTRL_RESET &&
                   NEURON_Q_STATUS_ENABLED == NEURON_DMA_STATUS_ENABLED &&
                   NEURON_Q_STATUS_BUSY == NEURON_DMA_STATUS_BUSY &&
                   NEURON_Q_STATUS_HALTED == NEURON_DMA_STATUS_HALTED &&
                   NEURON_Q_STATUS_RESETTING == NEURON_DMA_STATUS_RESETTING,
               "job queue and DMA control or status bits differ");

void nm_ring_init(nm_ring *r) {
    mtx_init(&r->lock, mtx_plain);
}

void nm_ring_destroy(nm_ring *r) {
    mtx_destroy(&r->lock);
}

static bool is_pow2_entries(uint32_t n) {
    return n >= NEURON_RING_MIN_ENTRIES && n <= NEURON_RING_MAX_ENTRIES && (n & (n - 1)) == 0;
}

bool nm_ring_config_ok(uint64_t addr, uint32_t entries, uint32_t size) {
    uint64_t bytes = (uint64_t)entries * size;

    return is_pow2_entries(entries) && addr % size == 0 && addr < NM_ADDR_LIMIT &&
           bytes <= NM_ADDR_LIMIT - addr;
}

void nm_ring_clear_locked(nm_ring *r, bool config) {
    if (config) {
        r->base = 0;
        r->entries = 0;
    }
    r->enabled = false;
    r->halted = false;
    r->error = NEURON_Q_ERR_NONE;
    r->tail = 0;
    r->head = 0;
}

bool nm_ring_halt_locked(nm_ring *r, uint32_t err) {
    if (r->halted)
        return false;
    r->halted = true;
    r->error = err;
    return true;
}

bool nm_ring_begin_locked(nm_ring *r, uint32_t desc_size, uint64_t *addr, uint32_t *gen,
                          bool *bad_tail) {
    *bad_tail = false;
    if (!r->enabled || r->halted || r->head == r->tail)
        return false;
    if (r->tail - r->head > r->entries) {
        *bad_tail = true;
        return false;
    }
    *addr = r->base + (uint64_t)(r->head & (r->entries - 1)) * desc_size;
    *gen = r->gen;
    r->running = true;
    r->run_gen = r->gen;
    return true;
}

bool nm_ring_end_stale_locked(nm_ring *r) {
    r->running = false;
    if (!r->stale)
        return false;
    r->stale = false;
    return true;
}

bool nm_ring_device_reset_locked(nm_ring *r) {
    bool became_stale = r->running && !r->stale;

    r->gen++;
    atomic_store(&r->abort, true);
    if (became_stale)
        r->stale = true;
    r->reset_req = false;
    return became_stale;
}

uint32_t nm_ring_reg_read_locked(const nm_ring *r, uint32_t reg, bool *known) {
    switch (reg) {
    case NEURON_Q_RING_LO:
        return (uint32_t)r->base;
    case NEURON_Q_RING_HI:
        return (uint32_t)(r->base >> 32);
    case NEURON_Q_RING_ENTRIES:
        return r->entries;
    case NEURON_Q_CTRL:
        return (r->enabled ? NEURON_Q_CTRL_ENABLE : 0) | (r->reset_req ? NEURON_Q_CTRL_RESET : 0);
    case NEURON_Q_TAIL:
        return r->tail;
    case NEURON_Q_HEAD:
        return r->head;
    default:
        *known = false;
        return 0;
    }
}

uint32_t nm_ring_status_locked(const nm_ring *r) {
    return (r->enabled ? NEURON_Q_STATUS_ENABLED : 0) |
           (r->running && !r->stale ? NEURON_Q_STATUS_BUSY : 0) |
           (r->halted ? NEURON_Q_STATUS_HALTED : 0) |
           (r->reset_req ? NEURON_Q_STATUS_RESETTING : 0);
}

bool nm_ring_reg_write_locked(nm_ring *r, uint32_t reg, uint32_t v, bool *known) {
    switch (reg) {
    case NEURON_Q_RING_LO:
        if (!r->enabled)
            r->base = nm_set_lo(r->base, v);
        return false;
    case NEURON_Q_RING_HI:
        if (!r->enabled)
            r->base = nm_set_hi(r->base, v);
        return false;
    case NEURON_Q_RING_ENTRIES:
        if (!r->enabled)
            r->entries = v;
        return false;
    case NEURON_Q_TAIL:
        r->tail = v;
        return r->enabled;
    case NEURON_Q_HEAD:
        return false; /* read-only */
    default:
        *known = false;
        return false;
    }
}

nm_ring_ctrl nm_ring_ctrl_write_locked(nm_ring *r, uint32_t v, uint32_t desc_size, bool config_ok) {
    if (v & NEURON_Q_CTRL_RESET) {
        r->reset_req = true;
        r->enabled = false;
        atomic_store(&r->abort, true);
        return NM_RING_CTRL_RESET;
    }
    if ((v & NEURON_Q_CTRL_ENABLE) && !r->enabled && !r->halted) {
        if (!config_ok || !nm_ring_config_ok(r->base, r->entries, desc_size))
            return NM_RING_CTRL_BAD_CONFIG;
        r->enabled = true;
        return NM_RING_CTRL_KICK;
    }
    if (!(v & NEURON_Q_CTRL_ENABLE))
        r->enabled = false;
    return NM_RING_CTRL_NONE;
}
