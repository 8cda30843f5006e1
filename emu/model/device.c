// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The register-level device model. See device.h for the threading model
 * and hw/README.md for the behaviour every function here implements.
 */
#include "device.h"
#include "nm_endian.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#define NM_ADDR_LIMIT (UINT64_C(1) << NEURON_ADDR_BITS)

/* 64-bit registers whose _HI half is latched by reading _LO. */
#define NM_Q_LATCHES 7   /* CUR_JOB + 6 counters */
#define NM_DMA_LATCHES 3 /* 3 counters */

enum { Q_CNT_BUSY, Q_CNT_INSTR, Q_CNT_FLOPS, Q_CNT_DMA_BYTES, Q_CNT_JOBS, Q_CNT_FAULTS, Q_CNT_N };
enum { DMA_CNT_BYTES, DMA_CNT_DESCS, DMA_CNT_ERRORS, DMA_CNT_N };

typedef struct nm_queue {
    nm_device *dev;
    uint32_t index;
    mtx_t lock;
    cnd_t room; /* completion ring space, abort or reset */

    /* Registers (lock). */
    uint64_t ring;
    uint64_t cpl;
    uint32_t entries;
    uint32_t cpl_entries;
    bool enabled;
    bool halted;
    bool reset_req; /* Q_CTRL.RESET written, not yet done */
    uint32_t error;
    uint32_t tail;
    uint32_t head;
    uint32_t cpl_tail;
    uint32_t cpl_head;
    uint64_t cur_job;
    uint64_t cnt[Q_CNT_N];
    uint32_t latch[NM_Q_LATCHES];

    /* Execution state (lock, written by the worker). */
    uint32_t gen;       /* bumped by a device reset: older results are stale */
    uint32_t run_gen;   /* gen when the running job started */
    bool running;       /* a job is between fetch and completion */
    bool stale;         /* running across a device reset: counted in dev->reset_pending */
    uint64_t run_start; /* clock_ns at job start */
    uint32_t run_flags; /* NEURON_JOB_F_* of the running job */
    bool need_core_reset;
    bool cpl_pending; /* a final entry waits for completion ring space */
    struct neuron_cpl_entry pending;
    bool pending_irq;
    bool aborted_valid; /* a job to report as ABORTED by the core reset */
    uint64_t aborted_id;

    atomic_bool abort; /* polled by the interpreter */
    nm_core *core;     /* used by the worker only */
} nm_queue;

typedef struct nm_dma {
    nm_device *dev;
    uint32_t index;
    mtx_t lock;

    uint64_t ring;
    uint32_t entries;
    bool enabled;
    bool halted;
    bool reset_req;
    uint32_t error;
    uint32_t tail;
    uint32_t head;
    uint64_t cnt[DMA_CNT_N];
    uint32_t latch[NM_DMA_LATCHES];

    uint32_t gen;
    uint32_t run_gen;
    bool running;
    bool stale;
    atomic_bool abort;
    uint8_t *bounce; /* NM_DMA_CHUNK bytes for host-to-host copies */
} nm_dma;

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

/* ---------------------------------------------------------------------- */
/* Helpers */

static void job_desc_to_cpu(struct neuron_job_desc *d) {
    d->bindings_addr = nm_le64(d->bindings_addr);
    d->num_bindings = nm_le32(d->num_bindings);
    d->flags = nm_le32(d->flags);
    d->program_binding = nm_le32(d->program_binding);
    d->program_size = nm_le32(d->program_size);
    d->program_offset = nm_le64(d->program_offset);
    d->job_id = nm_le64(d->job_id);
}

static void cpl_to_le(struct neuron_cpl_entry *e) {
    e->job_id = nm_le64(e->job_id);
    e->status = nm_le32(e->status);
    e->info = nm_le32(e->info);
    e->cycles = nm_le64(e->cycles);
    e->flags = nm_le16(e->flags);
    e->fault_engine = nm_le16(e->fault_engine);
}

static void dma_desc_to_cpu(struct neuron_dma_desc *d) {
    d->src = nm_le64(d->src);
    d->dst = nm_le64(d->dst);
    d->len = nm_le32(d->len);
    d->flags = nm_le32(d->flags);
}

static uint64_t now_ns(nm_device *dev) {
    return dev->env.clock_ns ? dev->env.clock_ns(dev->env.opaque) : 0;
}

static bool is_pow2_entries(uint32_t n) {
    return n >= NEURON_RING_MIN_ENTRIES && n <= NEURON_RING_MAX_ENTRIES && (n & (n - 1)) == 0;
}

/* A ring of @entries descriptors of @size bytes at bus address @addr. */
static bool ring_ok(uint64_t addr, uint32_t entries, uint32_t size) {
    uint64_t bytes = (uint64_t)entries * size;

    return is_pow2_entries(entries) && addr % size == 0 && addr < NM_ADDR_LIMIT &&
           bytes <= NM_ADDR_LIMIT - addr;
}

/* [off, off + len) inside a space of @size bytes, without overflow. */
static bool range_ok(uint64_t off, uint64_t len, uint64_t size) {
    return off <= size && len <= size - off;
}

static uint64_t set_lo(uint64_t v, uint32_t lo) {
    return (v & ~UINT64_C(0xffffffff)) | lo;
}

static uint64_t set_hi(uint64_t v, uint32_t hi) {
    return (v & UINT64_C(0xffffffff)) | ((uint64_t)hi << 32);
}

static void ev(nm_device *dev, nm_event e, uint32_t unit, uint64_t a, uint64_t b) {
    if (dev->env.event)
        dev->env.event(dev->env.opaque, e, unit, a, b);
}

static void dev_irq(nm_device *dev, uint32_t bit, uint32_t vector) {
    atomic_fetch_or(&dev->irq_status, bit);
    if (!(atomic_load(&dev->irq_mask) & bit))
        dev->env.raise_irq(dev->env.opaque, vector);
}

static void error_irq(nm_device *dev) {
    dev_irq(dev, NEURON_IRQ_ERROR, NEURON_MSIX_ERROR(dev->cfg.num_cores, dev->cfg.num_dma));
}

static void kick(nm_device *dev, nm_unit_kind kind, uint32_t index) {
    if (dev->env.kick)
        dev->env.kick(dev->env.opaque, kind, index);
}

/* The last unit to finish stale work (or the reset itself) completes a device reset. */
static void reset_pending_put(nm_device *dev) {
    uint32_t count;

    if (atomic_fetch_sub(&dev->reset_pending, 1) != 1)
        return;
    mtx_lock(&dev->lock);
    dev->resetting = false;
    if (dev->power_on_reset)
        dev->reset_count = 0;
    else
        dev->reset_count++;
    count = dev->reset_count;
    mtx_unlock(&dev->lock);
    ev(dev, NM_EV_DEV_RESET, 0, count, 0);
}

/* ---------------------------------------------------------------------- */
/* Job queues */

static void q_halt_locked(nm_queue *q, uint32_t err) {
    if (q->halted)
        return;
    q->halted = true;
    q->error = err;
    ev(q->dev, NM_EV_QUEUE_HALT, q->index, 0, err);
    atomic_store(&q->abort, true);
    cnd_broadcast(&q->room);
}

static void q_clear_locked(nm_queue *q, bool config) {
    if (config) {
        q->ring = 0;
        q->cpl = 0;
        q->entries = 0;
        q->cpl_entries = 0;
        memset(q->cnt, 0, sizeof(q->cnt));
        memset(q->latch, 0, sizeof(q->latch));
    }
    q->enabled = false;
    q->halted = false;
    q->error = NEURON_Q_ERR_NONE;
    q->tail = 0;
    q->head = 0;
    q->cpl_tail = 0;
    q->cpl_head = 0;
    q->cur_job = 0;
    q->cpl_pending = false;
    q->aborted_valid = false;
}

static bool q_cpl_full_locked(const nm_queue *q) {
    return q->cpl_tail - q->cpl_head >= q->cpl_entries;
}

static uint16_t cpl_phase(uint32_t index, uint32_t entries) {
    return ((index / entries) & 1) ? 0 : NEURON_CPL_F_PHASE;
}

/*
 * Write @e at CPL_TAIL and advance it. Called with the lock held and the
 * ring known to have room; drops the lock around the host write. Returns
 * false if the write failed (the queue is then halted) or the queue was
 * reset meanwhile.
 */
static bool q_write_cpl_locked(nm_queue *q, struct neuron_cpl_entry *e) {
    nm_device *dev = q->dev;
    uint32_t idx = q->cpl_tail;
    uint32_t gen = q->gen;
    uint64_t addr = q->cpl + (uint64_t)(idx & (q->cpl_entries - 1)) * sizeof(*e);
    int rc;

    e->flags |= cpl_phase(idx, q->cpl_entries);
    cpl_to_le(e);
    mtx_unlock(&q->lock);
    rc = dev->env.mem.host_write(dev->env.mem.opaque, addr, e, sizeof(*e));
    mtx_lock(&q->lock);
    if (q->gen != gen || q->reset_req)
        return false;
    if (rc) {
        q_halt_locked(q, NEURON_Q_ERR_CPL_WRITE);
        mtx_unlock(&q->lock);
        error_irq(dev);
        mtx_lock(&q->lock);
        return false;
    }
    q->cpl_tail = idx + 1;
    return true;
}

static void q_notify(void *opaque, uint64_t job_id, uint32_t value) {
    nm_queue *q = opaque;
    nm_device *dev = q->dev;
    struct neuron_cpl_entry e = {
        .job_id = job_id,
        .status = NEURON_JOB_STATUS_NOTIFY,
        .info = value,
    };
    bool irq = false;

    ev(dev, NM_EV_NOTIFY, q->index, job_id, value);
    mtx_lock(&q->lock);
    while (!atomic_load(&q->abort) && q->gen == q->run_gen && !q->halted && q_cpl_full_locked(q))
        cnd_wait(&q->room, &q->lock);
    if (!atomic_load(&q->abort) && q->gen == q->run_gen && !q->halted)
        irq = q_write_cpl_locked(q, &e) && (q->run_flags & NEURON_JOB_F_IRQ);
    mtx_unlock(&q->lock);
    if (irq)
        dev_irq(dev, NEURON_IRQ_QUEUE(q->index), NEURON_MSIX_QUEUE(q->index));
}

/* Post the pending final entry if there is room. Lock held. */
static bool q_post_pending_locked(nm_queue *q, bool *irq) {
    struct neuron_cpl_entry e;

    if (!q->cpl_pending)
        return true;
    if (q_cpl_full_locked(q))
        return false;
    e = q->pending;
    q->cpl_pending = false;
    if (q_write_cpl_locked(q, &e)) {
        q->cnt[Q_CNT_JOBS]++;
        if (q->pending.status >= NEURON_JOB_STATUS_BAD_DESC)
            q->cnt[Q_CNT_FAULTS]++;
        *irq |= q->pending_irq;
    }
    return true;
}

/* Complete a Q_CTRL.RESET request; the worker is not running a job. Lock held. */
static void q_do_reset_locked(nm_queue *q) {
    /* A fatal device writes nothing; neither does a ring that failed a write. */
    bool ring_usable =
        q->cpl_entries && ring_ok(q->cpl, q->cpl_entries, sizeof(struct neuron_cpl_entry)) &&
        !(q->halted && q->error == NEURON_Q_ERR_CPL_WRITE) && !atomic_load(&q->dev->fatal);

    if (q->cpl_pending) {
        /* A finished job that could not post yet: report it as aborted. */
        q->aborted_valid = true;
        q->aborted_id = q->pending.job_id;
        q->cpl_pending = false;
    }
    if (q->aborted_valid && ring_usable && !q_cpl_full_locked(q)) {
        struct neuron_cpl_entry e = {
            .job_id = q->aborted_id,
            .status = NEURON_JOB_STATUS_ABORTED,
            .flags = NEURON_CPL_F_FINAL,
        };
        uint32_t idx = q->cpl_tail;
        uint64_t addr = q->cpl + (uint64_t)(idx & (q->cpl_entries - 1)) * sizeof(e);

        e.flags |= cpl_phase(idx, q->cpl_entries);
        cpl_to_le(&e);
        /* Only this worker changes the queue while reset_req is set. */
        mtx_unlock(&q->lock);
        (void)q->dev->env.mem.host_write(q->dev->env.mem.opaque, addr, &e, sizeof(e));
        mtx_lock(&q->lock);
        q->cnt[Q_CNT_JOBS]++;
    }
    q_clear_locked(q, false);
    nm_core_reset(q->core);
    q->need_core_reset = false;
    atomic_store(&q->abort, false);
    q->reset_req = false;
    ev(q->dev, NM_EV_CORE_RESET, q->index, 0, 0);
}

/* Check a fetched job descriptor. Returns a job status. */
static uint32_t job_desc_check(const struct neuron_job_desc *d) {
    if (d->num_bindings < 1 || d->num_bindings > NEURON_MAX_BINDINGS)
        return NEURON_JOB_STATUS_BAD_DESC;
    if (d->flags & ~NEURON_JOB_F_ALL)
        return NEURON_JOB_STATUS_BAD_DESC;
    if (d->program_binding >= d->num_bindings || d->program_size == 0)
        return NEURON_JOB_STATUS_BAD_DESC;
    if (d->reserved[0] || d->reserved[1] || d->reserved[2])
        return NEURON_JOB_STATUS_BAD_DESC;
    if (d->bindings_addr >= NM_ADDR_LIMIT ||
        (uint64_t)d->num_bindings * sizeof(struct neuron_binding) >
            NM_ADDR_LIMIT - d->bindings_addr ||
        d->bindings_addr % 8)
        return NEURON_JOB_STATUS_BAD_DESC;
    return NEURON_JOB_STATUS_OK;
}

bool nm_device_core_step(nm_device *dev, uint32_t core) {
    nm_queue *q;
    struct neuron_job_desc d;
    uint64_t addr;
    uint32_t gen, status;
    bool irq = false, ok;
    nm_job *job;
    int rc;

    if (core >= dev->cfg.num_cores || atomic_load(&dev->shutdown))
        return false;
    q = &dev->q[core];

    mtx_lock(&q->lock);
    if (q->reset_req) {
        q_do_reset_locked(q);
        mtx_unlock(&q->lock);
        return true;
    }
    if (q->need_core_reset) {
        nm_core_reset(q->core);
        q->need_core_reset = false;
    }
    if (atomic_load(&dev->fatal) || q->halted) {
        mtx_unlock(&q->lock);
        return false;
    }
    ok = q_post_pending_locked(q, &irq);
    if (!ok || !q->enabled || q->head == q->tail || q->halted) {
        mtx_unlock(&q->lock);
        if (irq)
            dev_irq(dev, NEURON_IRQ_QUEUE(core), NEURON_MSIX_QUEUE(core));
        return false;
    }
    if (q->tail - q->head > q->entries) {
        q_halt_locked(q, NEURON_Q_ERR_TAIL);
        mtx_unlock(&q->lock);
        error_irq(dev);
        return false;
    }
    addr = q->ring + (uint64_t)(q->head & (q->entries - 1)) * sizeof(d);
    gen = q->gen;
    q->running = true;
    q->run_gen = gen;
    mtx_unlock(&q->lock);
    if (irq)
        dev_irq(dev, NEURON_IRQ_QUEUE(core), NEURON_MSIX_QUEUE(core));

    rc = dev->env.mem.host_read(dev->env.mem.opaque, addr, &d, sizeof(d));
    job_desc_to_cpu(&d);

    mtx_lock(&q->lock);
    if (q->gen != gen || q->reset_req || q->halted || atomic_load(&dev->fatal)) {
        /* Reset (or fatal) while fetching: the descriptor is not taken. */
        goto stale;
    }
    if (rc) {
        q_halt_locked(q, NEURON_Q_ERR_RING_FETCH);
        q->running = false;
        mtx_unlock(&q->lock);
        error_irq(dev);
        return false;
    }
    q->head++;
    q->cur_job = d.job_id;
    q->run_flags = d.flags & NEURON_JOB_F_IRQ;
    q->run_start = now_ns(dev);
    atomic_store(&q->abort, false);
    mtx_unlock(&q->lock);
    ev(dev, NM_EV_JOB_START, core, d.job_id, 0);

    job = calloc(1, sizeof(*job));
    if (!job) {
        status = NEURON_JOB_STATUS_LIMIT;
        mtx_lock(&q->lock);
        goto finish_nojob;
    }
    job->mem = &dev->env.mem;
    job->job_id = d.job_id;
    job->abort = &q->abort;
    job->notify = q_notify;
    job->notify_opaque = q;

    status = job_desc_check(&d);
    if (status == NEURON_JOB_STATUS_OK)
        status = nm_bindings_load(&job->bindings, &dev->env.mem, d.bindings_addr, d.num_bindings);
    if (status == NEURON_JOB_STATUS_OK) {
        job->program_binding = d.program_binding;
        job->program_offset = d.program_offset;
        job->program_size = d.program_size;
        nm_core_run(q->core, job);
        status = job->status;
    } else {
        job->status = status;
    }

    mtx_lock(&q->lock);
    if (q->gen == gen) {
        q->cnt[Q_CNT_INSTR] += job->instructions;
        q->cnt[Q_CNT_FLOPS] += job->flops;
        q->cnt[Q_CNT_DMA_BYTES] += job->dma_bytes;
    }
finish_nojob:
    if (q->gen != gen || atomic_load(&dev->fatal)) {
        free(job);
        goto stale;
    }
    q->cnt[Q_CNT_BUSY] += now_ns(dev) - q->run_start;
    q->running = false;
    if (q->reset_req) {
        /* Core reset while running: the job is reported as aborted. */
        q->aborted_valid = true;
        q->aborted_id = d.job_id;
        free(job);
        mtx_unlock(&q->lock);
        return true;
    }
    if (q->halted) {
        /* Completion ring write failed during a notify: nothing more to post. */
        free(job);
        mtx_unlock(&q->lock);
        return false;
    }
    memset(&q->pending, 0, sizeof(q->pending));
    q->pending.job_id = d.job_id;
    q->pending.status = status;
    q->pending.flags = NEURON_CPL_F_FINAL;
    if (job) {
        q->pending.info = job->info;
        q->pending.cycles = job->cycles;
        q->pending.fault_engine = job->fault_engine;
    }
    q->pending_irq = (d.flags & NEURON_JOB_F_IRQ) != 0;
    q->cpl_pending = true;
    free(job);
    ev(dev, NM_EV_JOB_END, core, d.job_id, status);
    irq = false;
    q_post_pending_locked(q, &irq);
    mtx_unlock(&q->lock);
    if (irq)
        dev_irq(dev, NEURON_IRQ_QUEUE(core), NEURON_MSIX_QUEUE(core));
    return true;

stale:
    q->running = false;
    if (q->stale) {
        q->stale = false;
        mtx_unlock(&q->lock);
        reset_pending_put(dev);
        return true;
    }
    mtx_unlock(&q->lock);
    return true;
}

/* ---------------------------------------------------------------------- */
/* DMA engines */

static void dma_halt_locked(nm_dma *e, uint32_t err) {
    if (e->halted)
        return;
    e->halted = true;
    e->error = err;
    ev(e->dev, NM_EV_DMA_HALT, e->index, 0, err);
}

static void dma_clear_locked(nm_dma *e, bool config) {
    if (config) {
        e->ring = 0;
        e->entries = 0;
        memset(e->cnt, 0, sizeof(e->cnt));
        memset(e->latch, 0, sizeof(e->latch));
    }
    e->enabled = false;
    e->halted = false;
    e->error = NEURON_Q_ERR_NONE;
    e->tail = 0;
    e->head = 0;
}

/* Validate a descriptor's fields and ranges. Returns NEURON_DMA_ERR_*. */
static uint32_t dma_desc_check(const nm_device *dev, const struct neuron_dma_desc *d) {
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
        if (atomic_load(&e->abort)) {
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

bool nm_device_dma_step(nm_device *dev, uint32_t engine) {
    nm_dma *e;
    struct neuron_dma_desc d;
    uint64_t addr, copied = 0;
    uint32_t gen, err, status;
    int rc;
    bool irq;

    if (engine >= dev->cfg.num_dma || atomic_load(&dev->shutdown))
        return false;
    e = &dev->dma[engine];

    mtx_lock(&e->lock);
    if (e->reset_req) {
        /* The worker is idle here: any descriptor in flight was aborted already. */
        dma_clear_locked(e, false);
        atomic_store(&e->abort, false);
        e->reset_req = false;
        mtx_unlock(&e->lock);
        ev(dev, NM_EV_DMA_RESET, engine, 0, 0);
        return true;
    }
    if (atomic_load(&dev->fatal) || e->halted || !e->enabled || e->head == e->tail) {
        mtx_unlock(&e->lock);
        return false;
    }
    if (e->tail - e->head > e->entries) {
        dma_halt_locked(e, NEURON_Q_ERR_TAIL);
        mtx_unlock(&e->lock);
        error_irq(dev);
        return false;
    }
    addr = e->ring + (uint64_t)(e->head & (e->entries - 1)) * sizeof(d);
    gen = e->gen;
    e->running = true;
    e->run_gen = gen;
    atomic_store(&e->abort, false);
    mtx_unlock(&e->lock);

    rc = dev->env.mem.host_read(dev->env.mem.opaque, addr, &d, sizeof(d));
    if (rc) {
        err = NEURON_Q_ERR_RING_FETCH;
        goto halt;
    }
    dma_desc_to_cpu(&d);
    status = dma_desc_check(dev, &d);
    if (status == NEURON_DMA_ERR_NONE)
        status = dma_copy(e, &d, &copied);
    if (status == NEURON_DMA_ERR_ABORTED) {
        bool stale;

        mtx_lock(&e->lock);
        stale = e->gen != gen || atomic_load(&dev->fatal);
        mtx_unlock(&e->lock);
        if (stale)
            goto stale_nolock; /* device reset or fatal error: no writeback */
    }
    d.status = nm_le32(NEURON_DMA_DONE | status);
    rc = dev->env.mem.host_write(dev->env.mem.opaque,
                                 addr + offsetof(struct neuron_dma_desc, status), &d.status,
                                 sizeof(d.status));

    mtx_lock(&e->lock);
    if (e->gen != gen || atomic_load(&dev->fatal))
        goto stale;
    e->running = false;
    e->cnt[DMA_CNT_BYTES] += copied;
    if (rc) {
        e->cnt[DMA_CNT_ERRORS]++;
        dma_halt_locked(e, NEURON_Q_ERR_CPL_WRITE);
        mtx_unlock(&e->lock);
        error_irq(dev);
        return false;
    }
    e->head++;
    e->cnt[DMA_CNT_DESCS]++;
    ev(dev, NM_EV_DMA_DESC, engine, d.len, NEURON_DMA_DONE | status);
    if (status != NEURON_DMA_ERR_NONE)
        e->cnt[DMA_CNT_ERRORS]++;
    mtx_unlock(&e->lock);
    /* Errors always interrupt, so the driver notices them. */
    irq = (d.flags & NEURON_DMA_F_IRQ) || status != NEURON_DMA_ERR_NONE;
    if (irq)
        dev_irq(dev, NEURON_IRQ_DMA(engine), NEURON_MSIX_DMA(dev->cfg.num_cores, engine));
    return true;

halt:
    mtx_lock(&e->lock);
    if (e->gen != gen || atomic_load(&dev->fatal))
        goto stale;
    e->running = false;
    if (e->reset_req) {
        mtx_unlock(&e->lock);
        return true;
    }
    e->cnt[DMA_CNT_ERRORS]++;
    dma_halt_locked(e, err);
    mtx_unlock(&e->lock);
    error_irq(dev);
    return false;

stale_nolock:
    mtx_lock(&e->lock);
stale:
    e->running = false;
    if (e->stale) {
        e->stale = false;
        mtx_unlock(&e->lock);
        reset_pending_put(dev);
        return true;
    }
    mtx_unlock(&e->lock);
    return true;
}

/* ---------------------------------------------------------------------- */
/* Resets and fatal errors */

void nm_device_reset(nm_device *dev, bool power_on) {
    uint32_t i;

    mtx_lock(&dev->lock);
    if (dev->resetting) {
        /* Already resetting: a power-on reset still clears the count. */
        dev->power_on_reset |= power_on;
        mtx_unlock(&dev->lock);
        return;
    }
    dev->resetting = true;
    dev->power_on_reset = power_on;
    atomic_store(&dev->reset_pending, 1);
    mtx_unlock(&dev->lock);

    for (i = 0; i < dev->cfg.num_cores; i++) {
        nm_queue *q = &dev->q[i];

        mtx_lock(&q->lock);
        q->gen++;
        atomic_store(&q->abort, true);
        if (q->running && !q->stale) {
            q->stale = true;
            atomic_fetch_add(&dev->reset_pending, 1);
        }
        q->reset_req = false;
        q_clear_locked(q, true);
        q->need_core_reset = true;
        cnd_broadcast(&q->room);
        mtx_unlock(&q->lock);
    }
    for (i = 0; i < dev->cfg.num_dma; i++) {
        nm_dma *e = &dev->dma[i];

        mtx_lock(&e->lock);
        e->gen++;
        atomic_store(&e->abort, true);
        if (e->running && !e->stale) {
            e->stale = true;
            atomic_fetch_add(&dev->reset_pending, 1);
        }
        e->reset_req = false;
        dma_clear_locked(e, true);
        mtx_unlock(&e->lock);
    }

    mtx_lock(&dev->lock);
    dev->scratch = 0;
    dev->fatal_cause = NEURON_FATAL_NONE;
    atomic_store(&dev->irq_status, 0);
    atomic_store(&dev->irq_mask, 0);
    atomic_store(&dev->fatal, false);
    mtx_unlock(&dev->lock);

    reset_pending_put(dev);
    /* Let idle workers reset their core state before the next job. */
    for (i = 0; i < dev->cfg.num_cores; i++)
        kick(dev, NM_UNIT_CORE, i);
}

static void enter_fatal(nm_device *dev, uint32_t cause) {
    uint32_t i;

    mtx_lock(&dev->lock);
    if (atomic_load(&dev->fatal) || dev->resetting) {
        mtx_unlock(&dev->lock);
        return;
    }
    dev->fatal_cause = cause;
    atomic_store(&dev->fatal, true);
    mtx_unlock(&dev->lock);
    ev(dev, NM_EV_FATAL, 0, 0, cause);
    for (i = 0; i < dev->cfg.num_cores; i++) {
        mtx_lock(&dev->q[i].lock);
        atomic_store(&dev->q[i].abort, true);
        cnd_broadcast(&dev->q[i].room);
        mtx_unlock(&dev->q[i].lock);
    }
    for (i = 0; i < dev->cfg.num_dma; i++)
        atomic_store(&dev->dma[i].abort, true);
    error_irq(dev);
}

void nm_device_shutdown(nm_device *dev) {
    uint32_t i;

    atomic_store(&dev->shutdown, true);
    for (i = 0; i < dev->cfg.num_cores; i++) {
        mtx_lock(&dev->q[i].lock);
        atomic_store(&dev->q[i].abort, true);
        cnd_broadcast(&dev->q[i].room);
        mtx_unlock(&dev->q[i].lock);
    }
    for (i = 0; i < dev->cfg.num_dma; i++)
        atomic_store(&dev->dma[i].abort, true);
}

/* ---------------------------------------------------------------------- */
/* Registers */

static uint32_t latch_read(uint32_t *latch, uint64_t v) {
    *latch = (uint32_t)(v >> 32);
    return (uint32_t)v;
}

static uint32_t q_read(nm_device *dev, nm_queue *q, uint32_t reg, bool *known) {
    uint32_t v = 0, st;

    mtx_lock(&q->lock);
    switch (reg) {
    case NEURON_Q_RING_LO:
        v = (uint32_t)q->ring;
        break;
    case NEURON_Q_RING_HI:
        v = (uint32_t)(q->ring >> 32);
        break;
    case NEURON_Q_RING_ENTRIES:
        v = q->entries;
        break;
    case NEURON_Q_CTRL:
        v = (q->enabled ? NEURON_Q_CTRL_ENABLE : 0) | (q->reset_req ? NEURON_Q_CTRL_RESET : 0);
        break;
    case NEURON_Q_TAIL:
        v = q->tail;
        break;
    case NEURON_Q_HEAD:
        v = q->head;
        break;
    case NEURON_Q_CPL_LO:
        v = (uint32_t)q->cpl;
        break;
    case NEURON_Q_CPL_HI:
        v = (uint32_t)(q->cpl >> 32);
        break;
    case NEURON_Q_CPL_ENTRIES:
        v = q->cpl_entries;
        break;
    case NEURON_Q_CPL_TAIL:
        v = q->cpl_tail;
        break;
    case NEURON_Q_CPL_HEAD:
        v = q->cpl_head;
        break;
    case NEURON_Q_STATUS:
        st = 0;
        if (q->enabled)
            st |= NEURON_Q_STATUS_ENABLED;
        if (q->running && !q->stale)
            st |= NEURON_Q_STATUS_BUSY;
        if (q->halted)
            st |= NEURON_Q_STATUS_HALTED;
        if (q->reset_req)
            st |= NEURON_Q_STATUS_RESETTING;
        v = st;
        break;
    case NEURON_Q_ERROR:
        v = q->error;
        break;
    case NEURON_Q_CUR_JOB_LO:
        v = latch_read(&q->latch[0], q->cur_job);
        break;
    case NEURON_Q_CUR_JOB_HI:
        v = q->latch[0];
        break;
    default:
        if (reg >= NEURON_Q_CNT_BUSY_NS_LO && reg <= NEURON_Q_CNT_FAULTS_HI) {
            uint32_t c = (reg - NEURON_Q_CNT_BUSY_NS_LO) / 8;

            if (reg & 4) {
                v = q->latch[1 + c];
            } else {
                uint64_t val = q->cnt[c];

                if (c == Q_CNT_BUSY && q->running && !q->stale)
                    val += now_ns(dev) - q->run_start;
                v = latch_read(&q->latch[1 + c], val);
            }
        } else {
            *known = false;
        }
        break;
    }
    mtx_unlock(&q->lock);
    return v;
}

static void q_write(nm_device *dev, nm_queue *q, uint32_t reg, uint32_t v, bool *known) {
    bool do_kick = false, err = false;

    mtx_lock(&q->lock);
    if (q->reset_req) {
        /* Writes are ignored until the reset is done. */
        mtx_unlock(&q->lock);
        return;
    }
    switch (reg) {
    case NEURON_Q_RING_LO:
        if (!q->enabled)
            q->ring = set_lo(q->ring, v);
        break;
    case NEURON_Q_RING_HI:
        if (!q->enabled)
            q->ring = set_hi(q->ring, v);
        break;
    case NEURON_Q_RING_ENTRIES:
        if (!q->enabled)
            q->entries = v;
        break;
    case NEURON_Q_CPL_LO:
        if (!q->enabled)
            q->cpl = set_lo(q->cpl, v);
        break;
    case NEURON_Q_CPL_HI:
        if (!q->enabled)
            q->cpl = set_hi(q->cpl, v);
        break;
    case NEURON_Q_CPL_ENTRIES:
        if (!q->enabled)
            q->cpl_entries = v;
        break;
    case NEURON_Q_CTRL:
        if (v & NEURON_Q_CTRL_RESET) {
            q->reset_req = true;
            q->enabled = false;
            atomic_store(&q->abort, true);
            cnd_broadcast(&q->room);
            do_kick = true;
            break;
        }
        if ((v & NEURON_Q_CTRL_ENABLE) && !q->enabled && !q->halted) {
            if (!ring_ok(q->ring, q->entries, sizeof(struct neuron_job_desc)) ||
                !ring_ok(q->cpl, q->cpl_entries, sizeof(struct neuron_cpl_entry))) {
                q_halt_locked(q, NEURON_Q_ERR_RING_CONFIG);
                err = true;
            } else {
                q->enabled = true;
                do_kick = true;
            }
        } else if (!(v & NEURON_Q_CTRL_ENABLE)) {
            q->enabled = false;
        }
        break;
    case NEURON_Q_TAIL:
        q->tail = v;
        do_kick = q->enabled;
        break;
    case NEURON_Q_CPL_HEAD:
        /* Only moves forward, and never past CPL_TAIL. */
        if (v - q->cpl_head <= q->cpl_tail - q->cpl_head) {
            q->cpl_head = v;
            cnd_broadcast(&q->room);
            do_kick = q->cpl_pending;
        }
        break;
    default:
        if (reg > NEURON_Q_CNT_FAULTS_HI ||
            (reg > NEURON_Q_CUR_JOB_HI && reg < NEURON_Q_CNT_BUSY_NS_LO))
            *known = false;
        break; /* read-only */
    }
    mtx_unlock(&q->lock);
    if (err)
        error_irq(dev);
    if (do_kick)
        kick(dev, NM_UNIT_CORE, q->index);
}

static uint32_t dma_read(nm_dma *e, uint32_t reg, bool *known) {
    uint32_t v = 0;

    mtx_lock(&e->lock);
    switch (reg) {
    case NEURON_DMA_RING_LO:
        v = (uint32_t)e->ring;
        break;
    case NEURON_DMA_RING_HI:
        v = (uint32_t)(e->ring >> 32);
        break;
    case NEURON_DMA_RING_ENTRIES:
        v = e->entries;
        break;
    case NEURON_DMA_CTRL:
        v = (e->enabled ? NEURON_DMA_CTRL_ENABLE : 0) | (e->reset_req ? NEURON_DMA_CTRL_RESET : 0);
        break;
    case NEURON_DMA_TAIL:
        v = e->tail;
        break;
    case NEURON_DMA_HEAD:
        v = e->head;
        break;
    case NEURON_DMA_STATUS:
        v = (e->enabled ? NEURON_DMA_STATUS_ENABLED : 0) |
            (e->running && !e->stale ? NEURON_DMA_STATUS_BUSY : 0) |
            (e->halted ? NEURON_DMA_STATUS_HALTED : 0) |
            (e->reset_req ? NEURON_DMA_STATUS_RESETTING : 0);
        break;
    case NEURON_DMA_ERROR:
        v = e->error;
        break;
    default:
        if (reg >= NEURON_DMA_CNT_BYTES_LO && reg <= NEURON_DMA_CNT_ERRORS_HI) {
            uint32_t c = (reg - NEURON_DMA_CNT_BYTES_LO) / 8;

            v = (reg & 4) ? e->latch[c] : latch_read(&e->latch[c], e->cnt[c]);
        } else {
            *known = false;
        }
        break;
    }
    mtx_unlock(&e->lock);
    return v;
}

static void dma_write(nm_device *dev, nm_dma *e, uint32_t reg, uint32_t v, bool *known) {
    bool do_kick = false, err = false;

    mtx_lock(&e->lock);
    if (e->reset_req) {
        mtx_unlock(&e->lock);
        return;
    }
    switch (reg) {
    case NEURON_DMA_RING_LO:
        if (!e->enabled)
            e->ring = set_lo(e->ring, v);
        break;
    case NEURON_DMA_RING_HI:
        if (!e->enabled)
            e->ring = set_hi(e->ring, v);
        break;
    case NEURON_DMA_RING_ENTRIES:
        if (!e->enabled)
            e->entries = v;
        break;
    case NEURON_DMA_CTRL:
        if (v & NEURON_DMA_CTRL_RESET) {
            e->reset_req = true;
            e->enabled = false;
            atomic_store(&e->abort, true);
            do_kick = true;
            break;
        }
        if ((v & NEURON_DMA_CTRL_ENABLE) && !e->enabled && !e->halted) {
            if (!ring_ok(e->ring, e->entries, sizeof(struct neuron_dma_desc))) {
                dma_halt_locked(e, NEURON_Q_ERR_RING_CONFIG);
                err = true;
            } else {
                e->enabled = true;
                do_kick = true;
            }
        } else if (!(v & NEURON_DMA_CTRL_ENABLE)) {
            e->enabled = false;
        }
        break;
    case NEURON_DMA_TAIL:
        e->tail = v;
        do_kick = e->enabled;
        break;
    case NEURON_DMA_HEAD:
    case NEURON_DMA_STATUS:
    case NEURON_DMA_ERROR:
        break;
    default:
        if (!(reg >= NEURON_DMA_CNT_BYTES_LO && reg <= NEURON_DMA_CNT_ERRORS_HI))
            *known = false;
        break;
    }
    mtx_unlock(&e->lock);
    if (err)
        error_irq(dev);
    if (do_kick)
        kick(dev, NM_UNIT_DMA, e->index);
}

static uint32_t dev_status(nm_device *dev) {
    uint32_t v = 0;

    if (dev->resetting)
        v |= NEURON_DEV_STATUS_RESETTING;
    if (atomic_load(&dev->fatal))
        v |= NEURON_DEV_STATUS_FATAL;
    if (!(v & (NEURON_DEV_STATUS_RESETTING | NEURON_DEV_STATUS_FATAL)))
        v |= NEURON_DEV_STATUS_READY;
    return v;
}

uint32_t nm_device_mmio_read(nm_device *dev, uint64_t offset) {
    const nm_device_config *c = &dev->cfg;
    uint32_t v = 0;
    bool known = true;

    if (offset % 4 || offset >= NEURON_REGS_SIZE) {
        atomic_fetch_add(&dev->bad_accesses, 1);
        return 0;
    }
    if (offset >= NEURON_QUEUE_BASE(0) && offset < NEURON_QUEUE_BASE(c->num_cores)) {
        uint32_t i = (uint32_t)(offset - NEURON_QUEUE_BASE(0)) / 0x100;

        v = q_read(dev, &dev->q[i], (uint32_t)(offset - NEURON_QUEUE_BASE(i)), &known);
    } else if (offset >= NEURON_DMA_BASE(0) && offset < NEURON_DMA_BASE(c->num_dma)) {
        uint32_t i = (uint32_t)(offset - NEURON_DMA_BASE(0)) / 0x100;

        v = dma_read(&dev->dma[i], (uint32_t)(offset - NEURON_DMA_BASE(i)), &known);
    } else {
        switch (offset) {
        case NEURON_REG_MAGIC:
            v = NEURON_MAGIC;
            break;
        case NEURON_REG_VERSION:
            v = (NEURON_VERSION_MAJOR << 16) | NEURON_VERSION_MINOR;
            break;
        case NEURON_REG_CAPS:
            v = c->caps;
            break;
        case NEURON_REG_NUM_CORES:
            v = c->num_cores;
            break;
        case NEURON_REG_NUM_DMA:
            v = c->num_dma;
            break;
        case NEURON_REG_SBUF_SIZE:
            v = c->sbuf_size;
            break;
        case NEURON_REG_PSUM_SIZE:
            v = c->psum_size;
            break;
        case NEURON_REG_FW_VERSION:
            v = NM_FW_VERSION;
            break;
        case NEURON_REG_MEM_SIZE_LO:
            v = (uint32_t)dev->env.mem.devmem_size;
            break;
        case NEURON_REG_MEM_SIZE_HI:
            v = (uint32_t)(dev->env.mem.devmem_size >> 32);
            break;
        case NEURON_REG_CLOCK_MHZ:
            v = c->clock_mhz;
            break;
        case NEURON_REG_PARTITIONS:
            v = NEURON_PARTITIONS;
            break;
        case NEURON_REG_DEV_CTRL:
            mtx_lock(&dev->lock);
            v = dev->resetting ? NEURON_DEV_CTRL_RESET : 0;
            mtx_unlock(&dev->lock);
            break;
        case NEURON_REG_DEV_STATUS:
            mtx_lock(&dev->lock);
            v = dev_status(dev);
            mtx_unlock(&dev->lock);
            break;
        case NEURON_REG_FATAL_CAUSE:
            mtx_lock(&dev->lock);
            v = dev->fatal_cause;
            mtx_unlock(&dev->lock);
            break;
        case NEURON_REG_RESET_COUNT:
            mtx_lock(&dev->lock);
            v = dev->reset_count;
            mtx_unlock(&dev->lock);
            break;
        case NEURON_REG_IRQ_STATUS:
            v = atomic_load(&dev->irq_status);
            break;
        case NEURON_REG_IRQ_MASK:
            v = atomic_load(&dev->irq_mask);
            break;
        case NEURON_REG_SCRATCH:
            mtx_lock(&dev->lock);
            v = dev->scratch;
            mtx_unlock(&dev->lock);
            break;
        case NEURON_REG_INJECT:
            v = 0;
            break;
        default:
            known = false;
            break;
        }
    }
    if (!known)
        atomic_fetch_add(&dev->bad_accesses, 1);
    return v;
}

/* Bits of IRQ_STATUS/IRQ_MASK that exist on this device. */
static uint32_t irq_valid_bits(const nm_device *dev) {
    uint32_t q = (uint32_t)((UINT64_C(1) << dev->cfg.num_cores) - 1);
    uint32_t d = ((1u << dev->cfg.num_dma) - 1) << 16;

    return q | d | NEURON_IRQ_ERROR;
}

static void irq_vector_of(const nm_device *dev, uint32_t bit, uint32_t *vector) {
    if (bit == 31)
        *vector = NEURON_MSIX_ERROR(dev->cfg.num_cores, dev->cfg.num_dma);
    else if (bit >= 16)
        *vector = NEURON_MSIX_DMA(dev->cfg.num_cores, bit - 16);
    else
        *vector = NEURON_MSIX_QUEUE(bit);
}

void nm_device_mmio_write(nm_device *dev, uint64_t offset, uint32_t value) {
    const nm_device_config *c = &dev->cfg;
    bool known = true;

    if (offset % 4 || offset >= NEURON_REGS_SIZE) {
        atomic_fetch_add(&dev->bad_accesses, 1);
        return;
    }
    if (offset >= NEURON_QUEUE_BASE(0) && offset < NEURON_QUEUE_BASE(c->num_cores)) {
        uint32_t i = (uint32_t)(offset - NEURON_QUEUE_BASE(0)) / 0x100;

        q_write(dev, &dev->q[i], (uint32_t)(offset - NEURON_QUEUE_BASE(i)), value, &known);
    } else if (offset >= NEURON_DMA_BASE(0) && offset < NEURON_DMA_BASE(c->num_dma)) {
        uint32_t i = (uint32_t)(offset - NEURON_DMA_BASE(0)) / 0x100;

        dma_write(dev, &dev->dma[i], (uint32_t)(offset - NEURON_DMA_BASE(i)), value, &known);
    } else {
        switch (offset) {
        case NEURON_REG_MAGIC:
        case NEURON_REG_VERSION:
        case NEURON_REG_CAPS:
        case NEURON_REG_NUM_CORES:
        case NEURON_REG_NUM_DMA:
        case NEURON_REG_SBUF_SIZE:
        case NEURON_REG_PSUM_SIZE:
        case NEURON_REG_FW_VERSION:
        case NEURON_REG_MEM_SIZE_LO:
        case NEURON_REG_MEM_SIZE_HI:
        case NEURON_REG_CLOCK_MHZ:
        case NEURON_REG_PARTITIONS:
        case NEURON_REG_DEV_STATUS:
        case NEURON_REG_FATAL_CAUSE:
        case NEURON_REG_RESET_COUNT:
            break; /* read-only */
        case NEURON_REG_DEV_CTRL:
            if (value & NEURON_DEV_CTRL_RESET)
                nm_device_reset(dev, false);
            break;
        case NEURON_REG_IRQ_STATUS:
            atomic_fetch_and(&dev->irq_status, ~value);
            break;
        case NEURON_REG_IRQ_MASK: {
            uint32_t old = atomic_exchange(&dev->irq_mask, value & irq_valid_bits(dev));
            uint32_t unmasked = old & ~value & atomic_load(&dev->irq_status);
            uint32_t bit, vec;

            /* A cause that is pending when it is unmasked signals now. */
            for (bit = 0; bit < 32; bit++) {
                if (unmasked & (1u << bit)) {
                    irq_vector_of(dev, bit, &vec);
                    dev->env.raise_irq(dev->env.opaque, vec);
                }
            }
            break;
        }
        case NEURON_REG_SCRATCH:
            mtx_lock(&dev->lock);
            dev->scratch = value;
            mtx_unlock(&dev->lock);
            break;
        case NEURON_REG_INJECT:
            if (value & NEURON_INJECT_FATAL)
                enter_fatal(dev, NEURON_FATAL_INJECTED);
            break;
        default:
            known = false;
            break;
        }
    }
    if (!known)
        atomic_fetch_add(&dev->bad_accesses, 1);
}

uint64_t nm_device_bad_accesses(nm_device *dev) {
    return atomic_load(&dev->bad_accesses);
}

/* ---------------------------------------------------------------------- */
/* Creation */

void nm_device_config_default(nm_device_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->num_cores = 2;
    cfg->num_dma = 2;
    cfg->sbuf_size = NM_DEFAULT_SBUF_SIZE;
    cfg->psum_size = NM_DEFAULT_PSUM_SIZE;
    cfg->clock_mhz = NM_DEFAULT_CLOCK_MHZ;
    cfg->caps = NM_DEFAULT_CAPS;
}

static void set_err(char *err, size_t errlen, const char *msg) {
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
}

nm_device *nm_device_new(const nm_device_config *cfg, const nm_device_env *env, char *err,
                         size_t errlen) {
    nm_device *dev;
    uint32_t i;

    if (cfg->num_cores < 1 || cfg->num_cores > NEURON_MAX_CORES) {
        set_err(err, errlen, "cores must be 1..16");
        return NULL;
    }
    if (cfg->num_dma < 1 || cfg->num_dma > NEURON_MAX_DMA_ENGINES) {
        set_err(err, errlen, "DMA engines must be 1..8");
        return NULL;
    }
    if (!cfg->sbuf_size || cfg->sbuf_size % NEURON_PARTITIONS || !cfg->psum_size ||
        cfg->psum_size % NEURON_PARTITIONS) {
        set_err(err, errlen, "SBUF and PSUM sizes must be non-zero multiples of 128 bytes");
        return NULL;
    }
    if (!cfg->clock_mhz) {
        set_err(err, errlen, "the clock must be non-zero");
        return NULL;
    }
    if (!env->raise_irq || !env->mem.host_read || !env->mem.host_write ||
        (env->mem.devmem_size && !env->mem.devmem)) {
        set_err(err, errlen, "incomplete environment");
        return NULL;
    }

    dev = calloc(1, sizeof(*dev));
    if (!dev) {
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    dev->cfg = *cfg;
    if (!dev->cfg.caps)
        dev->cfg.caps = NM_DEFAULT_CAPS;
    dev->env = *env;
    mtx_init(&dev->lock, mtx_plain);

    for (i = 0; i < cfg->num_cores; i++) {
        nm_queue *q = &dev->q[i];

        q->dev = dev;
        q->index = i;
        mtx_init(&q->lock, mtx_plain);
        cnd_init(&q->room);
        q->core = nm_core_new(cfg->sbuf_size, cfg->psum_size);
        if (!q->core)
            goto fail;
    }
    for (i = 0; i < cfg->num_dma; i++) {
        nm_dma *e = &dev->dma[i];

        e->dev = dev;
        e->index = i;
        mtx_init(&e->lock, mtx_plain);
        e->bounce = malloc(NM_DMA_CHUNK);
        if (!e->bounce)
            goto fail;
    }
    return dev;

fail:
    set_err(err, errlen, "out of memory for the cores' SBUF/PSUM");
    nm_device_free(dev);
    return NULL;
}

void nm_device_free(nm_device *dev) {
    uint32_t i;

    if (!dev)
        return;
    for (i = 0; i < dev->cfg.num_cores; i++) {
        if (dev->q[i].dev) {
            nm_core_free(dev->q[i].core);
            cnd_destroy(&dev->q[i].room);
            mtx_destroy(&dev->q[i].lock);
        }
    }
    for (i = 0; i < dev->cfg.num_dma; i++) {
        if (dev->dma[i].dev) {
            free(dev->dma[i].bounce);
            mtx_destroy(&dev->dma[i].lock);
        }
    }
    mtx_destroy(&dev->lock);
    free(dev);
}

uint32_t nm_device_msix_count(const nm_device *dev) {
    return NEURON_MSIX_COUNT(dev->cfg.num_cores, dev->cfg.num_dma);
}

uint32_t nm_device_num_cores(const nm_device *dev) {
    return dev->cfg.num_cores;
}

uint32_t nm_device_num_dma(const nm_device *dev) {
    return dev->cfg.num_dma;
}
