// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The DMA engines: fetch a copy descriptor, copy in bounded chunks, write
 * its status back. See device.h for the threading model and hw/README.md
 * for the behaviour.
 */
#include "dma.h"
#include "device_state.h"
#include "nm_endian.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void dma_desc_to_cpu(struct neuron_dma_desc *d) {
    d->src = nm_le64(d->src);
    d->dst = nm_le64(d->dst);
    d->len = nm_le32(d->len);
    d->flags = nm_le32(d->flags);
}

/* [off, off + len) inside a space of @size bytes, without overflow. */
static bool range_ok(uint64_t off, uint64_t len, uint64_t size) {
    return off <= size && len <= size - off;
}

static void dma_halt_locked(nm_dma *e, uint32_t err) {
    if (nm_ring_halt_locked(&e->ring, err))
        nm_emit(e->dev, NM_EV_DMA_HALT, e->index, 0, err);
}

static void dma_clear_locked(nm_dma *e, bool config) {
    nm_ring_clear_locked(&e->ring, config);
    if (config) {
        memset(e->cnt, 0, sizeof(e->cnt));
        memset(e->latch, 0, sizeof(e->latch));
    }
}

/* Validate a descriptor's fields and ranges. Returns NEURON_DMA_ERR_*. */
static uint32_t dma_desc_check(const nm_device_state *dev, const struct neuron_dma_desc *d) {
    uint64_t devsize = dev->env.mem.devmem_size;

    if (d->flags & ~NEURON_DMA_F_ALL)
        return NEURON_DMA_ERR_FLAGS;
    if (d->len == 0 || d->len > NEURON_DMA_MAX_LEN)
        return NEURON_DMA_ERR_LEN;
    if (!range_ok(d->src, d->len, (d->flags & NEURON_DMA_F_SRC_HOST) ? NM_ADDR_LIMIT : devsize))
        return NEURON_DMA_ERR_SRC_RANGE;
    if (!range_ok(d->dst, d->len, (d->flags & NEURON_DMA_F_DST_HOST) ? NM_ADDR_LIMIT : devsize))
        return NEURON_DMA_ERR_DST_RANGE;
    return NEURON_DMA_ERR_NONE;
}

/* Copy one descriptor's data in bounded chunks. Returns NEURON_DMA_ERR_*. */
static uint32_t dma_copy(nm_dma *e, const struct neuron_dma_desc *d, uint64_t *copied) {
    const nm_mem_ops *m = &e->dev->env.mem;
    bool sh = d->flags & NEURON_DMA_F_SRC_HOST, dh = d->flags & NEURON_DMA_F_DST_HOST;
    uint64_t done = 0;

    while (done < d->len) {
        uint64_t n = d->len - done;
        uint64_t s = d->src + done, t = d->dst + done;

        if (n > NM_DMA_CHUNK)
            n = NM_DMA_CHUNK;
        if (atomic_load(&e->ring.abort)) {
            *copied = done;
            return NEURON_DMA_ERR_ABORTED;
        }
        if (sh && dh) {
            if (m->host_read(m->opaque, s, e->bounce, n) ||
                m->host_write(m->opaque, t, e->bounce, n))
                goto host_err;
        } else if (sh) {
            if (m->host_read(m->opaque, s, m->devmem + t, n))
                goto host_err;
        } else if (dh) {
            if (m->host_write(m->opaque, t, m->devmem + s, n))
                goto host_err;
        } else {
            memmove(m->devmem + t, m->devmem + s, n);
        }
        done += n;
    }
    *copied = done;
    return NEURON_DMA_ERR_NONE;

host_err:
    *copied = done;
    return NEURON_DMA_ERR_HOST;
}

/* Did a device reset or a fatal error overtake the work of @gen? Lock held. */
static bool dma_overtaken_locked(const nm_dma *e, uint32_t gen) {
    return e->ring.gen != gen || atomic_load(&e->dev->fatal);
}

/* Work a reset or fatal error overtook ends here. Drops the lock. */
static bool dma_end_stale(nm_dma *e) {
    bool put = nm_ring_end_stale_locked(&e->ring);

    mtx_unlock(&e->ring.lock);
    if (put)
        nm_reset_pending_put(e->dev);
    return true;
}

/* The descriptor could not be read: halt with @err. */
static bool dma_fetch_failed(nm_dma *e, uint32_t gen, uint32_t err) {
    mtx_lock(&e->ring.lock);
    if (dma_overtaken_locked(e, gen))
        return dma_end_stale(e);
    e->ring.running = false;
    if (e->ring.reset_req) {
        mtx_unlock(&e->ring.lock);
        return true;
    }
    e->cnt[DMA_CNT_ERRORS]++;
    dma_halt_locked(e, err);
    mtx_unlock(&e->ring.lock);
    nm_error_irq(e->dev);
    return false;
}

/* Write the status of descriptor @d at @addr back and account for it. */
static bool dma_complete(nm_dma *e, struct neuron_dma_desc *d, uint64_t addr, uint32_t gen,
                         uint64_t copied, uint32_t status) {
    nm_device_state *dev = e->dev;
    int rc;

    d->status = nm_le32(NEURON_DMA_DONE | status);
    rc = dev->env.mem.host_write(dev->env.mem.opaque,
                                 addr + offsetof(struct neuron_dma_desc, status), &d->status,
                                 sizeof(d->status));

    mtx_lock(&e->ring.lock);
    if (dma_overtaken_locked(e, gen))
        return dma_end_stale(e);
    e->ring.running = false;
    e->cnt[DMA_CNT_BYTES] += copied;
    if (rc) {
        e->cnt[DMA_CNT_ERRORS]++;
        dma_halt_locked(e, NEURON_Q_ERR_CPL_WRITE);
        mtx_unlock(&e->ring.lock);
        nm_error_irq(dev);
        return false;
    }
    e->ring.head++;
    e->cnt[DMA_CNT_DESCS]++;
    nm_emit(dev, NM_EV_DMA_DESC, e->index, d->len, NEURON_DMA_DONE | status);
    if (status != NEURON_DMA_ERR_NONE)
        e->cnt[DMA_CNT_ERRORS]++;
    mtx_unlock(&e->ring.lock);
    /* Errors always interrupt, so the driver notices them. */
    if ((d->flags & NEURON_DMA_F_IRQ) || status != NEURON_DMA_ERR_NONE)
        nm_irq(dev, NEURON_IRQ_DMA(e->index), NEURON_MSIX_DMA(dev->cfg.num_cores, e->index));
    return true;
}

bool nm_dma_step(nm_dma *e) {
    nm_device_state *dev = e->dev;
    struct neuron_dma_desc d;
    uint64_t addr, copied = 0;
    uint32_t gen, status;
    bool bad_tail = false, fetched;

    mtx_lock(&e->ring.lock);
    if (e->ring.reset_req) {
        /* The worker is idle here: any descriptor in flight was aborted already. */
        dma_clear_locked(e, false);
        atomic_store(&e->ring.abort, false);
        e->ring.reset_req = false;
        mtx_unlock(&e->ring.lock);
        nm_emit(dev, NM_EV_DMA_RESET, e->index, 0, 0);
        return true;
    }
    fetched = !atomic_load(&dev->fatal) &&
              nm_ring_begin_locked(&e->ring, sizeof(d), &addr, &gen, &bad_tail);
    if (bad_tail)
        dma_halt_locked(e, NEURON_Q_ERR_TAIL);
    if (fetched)
        atomic_store(&e->ring.abort, false);
    mtx_unlock(&e->ring.lock);
    if (bad_tail)
        nm_error_irq(dev);
    if (!fetched)
        return false;

    if (dev->env.mem.host_read(dev->env.mem.opaque, addr, &d, sizeof(d)))
        return dma_fetch_failed(e, gen, NEURON_Q_ERR_RING_FETCH);
    dma_desc_to_cpu(&d);
    status = dma_desc_check(dev, &d);
    if (status == NEURON_DMA_ERR_NONE)
        status = dma_copy(e, &d, &copied);
    if (status == NEURON_DMA_ERR_ABORTED) {
        mtx_lock(&e->ring.lock);
        if (dma_overtaken_locked(e, gen))
            return dma_end_stale(e); /* no writeback */
        mtx_unlock(&e->ring.lock);
    }
    return dma_complete(e, &d, addr, gen, copied, status);
}

bool nm_dma_init(nm_dma *e, nm_device_state *dev, uint32_t index) {
    e->dev = dev;
    e->index = index;
    nm_ring_init(&e->ring);
    e->bounce = malloc(NM_DMA_CHUNK);
    return e->bounce != NULL;
}

void nm_dma_destroy(nm_dma *e) {
    free(e->bounce);
    nm_ring_destroy(&e->ring);
}

bool nm_dma_device_reset(nm_dma *e) {
    bool became_stale;

    mtx_lock(&e->ring.lock);
    became_stale = nm_ring_device_reset_locked(&e->ring);
    dma_clear_locked(e, true);
    mtx_unlock(&e->ring.lock);
    return became_stale;
}

void nm_dma_abort(nm_dma *e) {
    atomic_store(&e->ring.abort, true);
}

uint32_t nm_dma_reg_read(nm_dma *e, uint32_t reg, bool *known) {
    uint32_t v = 0;

    mtx_lock(&e->ring.lock);
    if (reg <= NEURON_DMA_HEAD) {
        v = nm_ring_reg_read_locked(&e->ring, reg, known);
    } else if (reg == NEURON_DMA_STATUS) {
        v = nm_ring_status_locked(&e->ring);
    } else if (reg == NEURON_DMA_ERROR) {
        v = e->ring.error;
    } else if (reg >= NEURON_DMA_CNT_BYTES_LO && reg <= NEURON_DMA_CNT_ERRORS_HI) {
        uint32_t c = (reg - NEURON_DMA_CNT_BYTES_LO) / 8;

        v = (reg & 4) ? e->latch[c] : nm_latch_read(&e->latch[c], e->cnt[c]);
    } else {
        *known = false;
    }
    mtx_unlock(&e->ring.lock);
    return v;
}

void nm_dma_reg_write(nm_dma *e, uint32_t reg, uint32_t v, bool *known) {
    bool do_kick = false, err = false;

    mtx_lock(&e->ring.lock);
    if (e->ring.reset_req) {
        mtx_unlock(&e->ring.lock);
        return;
    }
    if (reg == NEURON_DMA_CTRL) {
        switch (nm_ring_ctrl_write_locked(&e->ring, v, sizeof(struct neuron_dma_desc), true)) {
        case NM_RING_CTRL_RESET:
        case NM_RING_CTRL_KICK:
            do_kick = true;
            break;
        case NM_RING_CTRL_BAD_CONFIG:
            dma_halt_locked(e, NEURON_Q_ERR_RING_CONFIG);
            err = true;
            break;
        case NM_RING_CTRL_NONE:
            break;
        }
    } else if (reg <= NEURON_DMA_HEAD) {
        do_kick = nm_ring_reg_write_locked(&e->ring, reg, v, known);
    } else if (reg != NEURON_DMA_STATUS && reg != NEURON_DMA_ERROR &&
               !(reg >= NEURON_DMA_CNT_BYTES_LO && reg <= NEURON_DMA_CNT_ERRORS_HI)) {
        *known = false; /* the others are read-only */
    }
    mtx_unlock(&e->ring.lock);
    if (err)
        nm_error_irq(e->dev);
    if (do_kick)
        nm_kick(e->dev, NM_UNIT_DMA, e->index);
}
