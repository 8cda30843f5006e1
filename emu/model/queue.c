// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The job queues: fetch a job descriptor, run it on the core, post its
 * completion entries. See device.h for the threading model and
 * hw/README.md for the behaviour.
 */
#include "queue.h"
#include "device_state.h"
#include "nm_endian.h"

#include <stdlib.h>
#include <string.h>

static void job_desc_to_cpu(struct neuron_job_desc *d) {
    d->bindings_addr = nm_le64(d->bindings_addr);
    d->num_bindings = nm_le32(d->num_bindings);
    d->flags = nm_le32(d->flags);
    d->program_binding = nm_le32(d->program_binding);
    d->program_size = nm_le32(d->program_size);
    d->program_offset = nm_le64(d->program_offset);
    d->job_id = nm_le64(d->job_id);
    d->trace_binding = nm_le32(d->trace_binding);
}

static void cpl_to_le(struct neuron_cpl_entry *e) {
    e->job_id = nm_le64(e->job_id);
    e->status = nm_le32(e->status);
    e->info = nm_le32(e->info);
    e->cycles = nm_le64(e->cycles);
    e->flags = nm_le16(e->flags);
    e->fault_engine = nm_le16(e->fault_engine);
}

static void queue_irq(nm_queue *q) {
    nm_irq(q->dev, NEURON_IRQ_QUEUE(q->index), NEURON_MSIX_QUEUE(q->index));
}

static void q_halt_locked(nm_queue *q, uint32_t err) {
    if (!nm_ring_halt_locked(&q->ring, err))
        return;
    nm_emit(q->dev, NM_EV_QUEUE_HALT, q->index, 0, err);
    atomic_store(&q->ring.abort, true);
    cnd_broadcast(&q->room);
}

static void q_clear_locked(nm_queue *q, bool config) {
    nm_ring_clear_locked(&q->ring, config);
    if (config) {
        q->cpl = 0;
        q->cpl_entries = 0;
        memset(q->cnt, 0, sizeof(q->cnt));
        memset(q->latch, 0, sizeof(q->latch));
    }
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
    nm_device_state *dev = q->dev;
    uint32_t idx = q->cpl_tail;
    uint32_t gen = q->ring.gen;
    uint64_t addr = q->cpl + (uint64_t)(idx & (q->cpl_entries - 1)) * sizeof(*e);
    int rc;

    e->flags |= cpl_phase(idx, q->cpl_entries);
    cpl_to_le(e);
    mtx_unlock(&q->ring.lock);
    rc = dev->env.mem.host_write(dev->env.mem.opaque, addr, e, sizeof(*e));
    mtx_lock(&q->ring.lock);
    if (q->ring.gen != gen || q->ring.reset_req)
        return false;
    if (rc) {
        q_halt_locked(q, NEURON_Q_ERR_CPL_WRITE);
        mtx_unlock(&q->ring.lock);
        nm_error_irq(dev);
        mtx_lock(&q->ring.lock);
        return false;
    }
    q->cpl_tail = idx + 1;
    return true;
}

/* The running job's notify: can it still post? Lock held. */
static bool q_job_live_locked(nm_queue *q) {
    return !atomic_load(&q->ring.abort) && q->ring.gen == q->ring.run_gen && !q->ring.halted;
}

static void q_notify(void *opaque, uint64_t job_id, uint32_t value) {
    nm_queue *q = opaque;
    struct neuron_cpl_entry e = {
        .job_id = job_id,
        .status = NEURON_JOB_STATUS_NOTIFY,
        .info = value,
    };
    bool irq = false;

    nm_emit(q->dev, NM_EV_NOTIFY, q->index, job_id, value);
    mtx_lock(&q->ring.lock);
    while (q_job_live_locked(q) && q_cpl_full_locked(q))
        cnd_wait(&q->room, &q->ring.lock);
    if (q_job_live_locked(q))
        irq = q_write_cpl_locked(q, &e) && (q->run_flags & NEURON_JOB_F_IRQ);
    mtx_unlock(&q->ring.lock);
    if (irq)
        queue_irq(q);
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
    bool ring_usable = q->cpl_entries &&
                       nm_ring_config_ok(q->cpl, q->cpl_entries, sizeof(struct neuron_cpl_entry)) &&
                       !(q->ring.halted && q->ring.error == NEURON_Q_ERR_CPL_WRITE) &&
                       !atomic_load(&q->dev->fatal);

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
        mtx_unlock(&q->ring.lock);
        (void)q->dev->env.mem.host_write(q->dev->env.mem.opaque, addr, &e, sizeof(e));
        mtx_lock(&q->ring.lock);
        q->cnt[Q_CNT_JOBS]++;
    }
    q_clear_locked(q, false);
    nm_core_reset(q->core);
    q->need_core_reset = false;
    atomic_store(&q->ring.abort, false);
    q->ring.reset_req = false;
    nm_emit(q->dev, NM_EV_CORE_RESET, q->index, 0, 0);
}

/* Check a fetched job descriptor. Returns a job status. */
static uint32_t job_desc_check(const struct neuron_job_desc *d, uint32_t caps) {
    const uint32_t known =
        NEURON_JOB_F_IRQ | (caps & NEURON_CAP_PROFILE ? NEURON_JOB_F_PROFILE : 0);

    if (d->num_bindings < 1 || d->num_bindings > NEURON_MAX_BINDINGS)
        return NEURON_JOB_STATUS_BAD_DESC;
    if (d->flags & ~known)
        return NEURON_JOB_STATUS_BAD_DESC;
    if (d->program_binding >= d->num_bindings || d->program_size == 0)
        return NEURON_JOB_STATUS_BAD_DESC;
    if (d->reserved32 || d->reserved[0] || d->reserved[1])
        return NEURON_JOB_STATUS_BAD_DESC;
    if ((d->flags & NEURON_JOB_F_PROFILE) ? d->trace_binding >= d->num_bindings
                                          : d->trace_binding != 0)
        return NEURON_JOB_STATUS_BAD_DESC;
    if (d->bindings_addr >= NM_ADDR_LIMIT ||
        (uint64_t)d->num_bindings * sizeof(struct neuron_binding) >
            NM_ADDR_LIMIT - d->bindings_addr ||
        d->bindings_addr % 8)
        return NEURON_JOB_STATUS_BAD_DESC;
    return NEURON_JOB_STATUS_OK;
}

/* Work a reset or fatal error overtook ends here. Drops the lock. */
static bool q_end_stale(nm_queue *q) {
    bool put = nm_ring_end_stale_locked(&q->ring);

    mtx_unlock(&q->ring.lock);
    if (put)
        nm_reset_pending_put(q->dev);
    return true;
}

/* What q_fetch did: a step's result, or a job to run. */
typedef enum { Q_IDLE, Q_PROGRESS, Q_FETCHED } q_fetch_result;

/*
 * The housekeeping before a job (a requested reset, a pending completion)
 * and the fetch of the next descriptor into @d, taken at generation *gen.
 */
static q_fetch_result q_fetch(nm_queue *q, struct neuron_job_desc *d, uint32_t *gen) {
    nm_device_state *dev = q->dev;
    bool irq = false, bad_tail = false, fetched;
    uint64_t addr;
    int rc;

    mtx_lock(&q->ring.lock);
    if (q->ring.reset_req) {
        q_do_reset_locked(q);
        mtx_unlock(&q->ring.lock);
        return Q_PROGRESS;
    }
    if (q->need_core_reset) {
        nm_core_reset(q->core);
        q->need_core_reset = false;
    }
    if (atomic_load(&dev->fatal) || q->ring.halted) {
        mtx_unlock(&q->ring.lock);
        return Q_IDLE;
    }
    fetched = q_post_pending_locked(q, &irq) &&
              nm_ring_begin_locked(&q->ring, sizeof(*d), &addr, gen, &bad_tail);
    if (bad_tail)
        q_halt_locked(q, NEURON_Q_ERR_TAIL);
    mtx_unlock(&q->ring.lock);
    if (irq)
        queue_irq(q);
    if (bad_tail)
        nm_error_irq(dev);
    if (!fetched)
        return Q_IDLE;

    rc = dev->env.mem.host_read(dev->env.mem.opaque, addr, d, sizeof(*d));
    job_desc_to_cpu(d);

    mtx_lock(&q->ring.lock);
    if (q->ring.gen != *gen || q->ring.reset_req || q->ring.halted || atomic_load(&dev->fatal)) {
        q_end_stale(q); /* the descriptor is not taken */
        return Q_PROGRESS;
    }
    if (rc) {
        q_halt_locked(q, NEURON_Q_ERR_RING_FETCH);
        q->ring.running = false;
        mtx_unlock(&q->ring.lock);
        nm_error_irq(dev);
        return Q_IDLE;
    }
    q->ring.head++;
    q->cur_job = d->job_id;
    q->run_flags = d->flags & NEURON_JOB_F_IRQ;
    q->run_start = nm_now_ns(dev);
    atomic_store(&q->ring.abort, false);
    mtx_unlock(&q->ring.lock);
    nm_emit(dev, NM_EV_JOB_START, q->index, d->job_id, 0);
    return Q_FETCHED;
}

/* Run the job of descriptor @d on the core. Returns the job's status. */
static uint32_t q_run(nm_queue *q, const struct neuron_job_desc *d, nm_job *job) {
    uint32_t status = job_desc_check(d, q->dev->cfg.caps);

    job->mem = &q->dev->env.mem;
    job->job_id = d->job_id;
    job->abort = &q->ring.abort;
    job->notify = q_notify;
    job->notify_opaque = q;
    if (status == NEURON_JOB_STATUS_OK)
        status = nm_bindings_load(&job->bindings, job->mem, d->bindings_addr, d->num_bindings);
    if (status != NEURON_JOB_STATUS_OK) {
        job->status = status;
        return status;
    }
    job->program_binding = d->program_binding;
    job->program_offset = d->program_offset;
    job->program_size = d->program_size;
    job->profile = (d->flags & NEURON_JOB_F_PROFILE) != 0;
    job->trace_binding = d->trace_binding;
    nm_core_run(q->core, job);
    return job->status;
}

/*
 * Account for a job that ran (or, with @job NULL, could not) and post its
 * final completion entry, unless a reset overtook it.
 */
static bool q_finish(nm_queue *q, const struct neuron_job_desc *d, uint32_t gen, nm_job *job,
                     uint32_t status) {
    nm_device_state *dev = q->dev;
    bool irq = false;

    mtx_lock(&q->ring.lock);
    if (job && q->ring.gen == gen) {
        q->cnt[Q_CNT_INSTR] += job->instructions;
        q->cnt[Q_CNT_FLOPS] += job->flops;
        q->cnt[Q_CNT_DMA_BYTES] += job->dma_bytes;
    }
    if (q->ring.gen != gen || atomic_load(&dev->fatal))
        return q_end_stale(q);
    q->cnt[Q_CNT_BUSY] += nm_now_ns(dev) - q->run_start;
    q->ring.running = false;
    if (q->ring.reset_req) {
        /* Core reset while running: the job is reported as aborted. */
        q->aborted_valid = true;
        q->aborted_id = d->job_id;
        mtx_unlock(&q->ring.lock);
        return true;
    }
    if (q->ring.halted) {
        /* Completion ring write failed during a notify: nothing more to post. */
        mtx_unlock(&q->ring.lock);
        return false;
    }
    memset(&q->pending, 0, sizeof(q->pending));
    q->pending.job_id = d->job_id;
    q->pending.status = status;
    q->pending.flags = NEURON_CPL_F_FINAL;
    if (job) {
        q->pending.info = job->info;
        q->pending.cycles = job->cycles;
        q->pending.fault_engine = job->fault_engine;
    }
    q->pending_irq = (d->flags & NEURON_JOB_F_IRQ) != 0;
    q->cpl_pending = true;
    nm_emit(dev, NM_EV_JOB_END, q->index, d->job_id, status);
    q_post_pending_locked(q, &irq);
    mtx_unlock(&q->ring.lock);
    if (irq)
        queue_irq(q);
    return true;
}

bool nm_queue_step(nm_queue *q) {
    struct neuron_job_desc d;
    uint32_t gen, status;
    nm_job *job;
    bool progress;

    switch (q_fetch(q, &d, &gen)) {
    case Q_IDLE:
        return false;
    case Q_PROGRESS:
        return true;
    case Q_FETCHED:
        break;
    }
    job = calloc(1, sizeof(*job));
    status = job ? q_run(q, &d, job) : NEURON_JOB_STATUS_LIMIT;
    progress = q_finish(q, &d, gen, job, status);
    free(job);
    return progress;
}

bool nm_queue_init(nm_queue *q, nm_device_state *dev, uint32_t index, uint32_t sbuf_size,
                   uint32_t psum_size) {
    q->dev = dev;
    q->index = index;
    nm_ring_init(&q->ring);
    cnd_init(&q->room);
    q->core = nm_core_new(sbuf_size, psum_size);
    return q->core != NULL;
}

void nm_queue_destroy(nm_queue *q) {
    nm_core_free(q->core);
    cnd_destroy(&q->room);
    nm_ring_destroy(&q->ring);
}

bool nm_queue_device_reset(nm_queue *q) {
    bool became_stale;

    mtx_lock(&q->ring.lock);
    became_stale = nm_ring_device_reset_locked(&q->ring);
    q_clear_locked(q, true);
    q->need_core_reset = true;
    cnd_broadcast(&q->room);
    mtx_unlock(&q->ring.lock);
    return became_stale;
}

void nm_queue_abort(nm_queue *q) {
    mtx_lock(&q->ring.lock);
    atomic_store(&q->ring.abort, true);
    cnd_broadcast(&q->room);
    mtx_unlock(&q->ring.lock);
}

/* The registers after HEAD. Lock held. */
static uint32_t q_reg_read_locked(nm_queue *q, uint32_t reg, bool *known) {
    uint32_t c;
    uint64_t val;

    switch (reg) {
    case NEURON_Q_CPL_LO:
        return (uint32_t)q->cpl;
    case NEURON_Q_CPL_HI:
        return (uint32_t)(q->cpl >> 32);
    case NEURON_Q_CPL_ENTRIES:
        return q->cpl_entries;
    case NEURON_Q_CPL_TAIL:
        return q->cpl_tail;
    case NEURON_Q_CPL_HEAD:
        return q->cpl_head;
    case NEURON_Q_STATUS:
        return nm_ring_status_locked(&q->ring);
    case NEURON_Q_ERROR:
        return q->ring.error;
    case NEURON_Q_CUR_JOB_LO:
        return nm_latch_read(&q->latch[0], q->cur_job);
    case NEURON_Q_CUR_JOB_HI:
        return q->latch[0];
    }
    if (reg < NEURON_Q_CNT_BUSY_NS_LO || reg > NEURON_Q_CNT_FAULTS_HI) {
        *known = false;
        return 0;
    }
    c = (reg - NEURON_Q_CNT_BUSY_NS_LO) / 8;
    if (reg & 4)
        return q->latch[1 + c];
    val = q->cnt[c];
    if (c == Q_CNT_BUSY && q->ring.running && !q->ring.stale)
        val += nm_now_ns(q->dev) - q->run_start;
    return nm_latch_read(&q->latch[1 + c], val);
}

uint32_t nm_queue_reg_read(nm_queue *q, uint32_t reg, bool *known) {
    uint32_t v;

    mtx_lock(&q->ring.lock);
    if (reg <= NEURON_Q_HEAD)
        v = nm_ring_reg_read_locked(&q->ring, reg, known);
    else
        v = q_reg_read_locked(q, reg, known);
    mtx_unlock(&q->ring.lock);
    return v;
}

/* A CTRL write. Returns true when the worker must be kicked. Lock held. */
static bool q_ctrl_write_locked(nm_queue *q, uint32_t v, bool *err) {
    bool cpl_ok = nm_ring_config_ok(q->cpl, q->cpl_entries, sizeof(struct neuron_cpl_entry));

    switch (nm_ring_ctrl_write_locked(&q->ring, v, sizeof(struct neuron_job_desc), cpl_ok)) {
    case NM_RING_CTRL_RESET:
        cnd_broadcast(&q->room);
        return true;
    case NM_RING_CTRL_BAD_CONFIG:
        q_halt_locked(q, NEURON_Q_ERR_RING_CONFIG);
        *err = true;
        return false;
    case NM_RING_CTRL_KICK:
        return true;
    case NM_RING_CTRL_NONE:
        break;
    }
    return false;
}

/* The registers after HEAD but CTRL. Returns true to kick. Lock held. */
static bool q_reg_write_locked(nm_queue *q, uint32_t reg, uint32_t v, bool *known) {
    switch (reg) {
    case NEURON_Q_CPL_LO:
        if (!q->ring.enabled)
            q->cpl = nm_set_lo(q->cpl, v);
        return false;
    case NEURON_Q_CPL_HI:
        if (!q->ring.enabled)
            q->cpl = nm_set_hi(q->cpl, v);
        return false;
    case NEURON_Q_CPL_ENTRIES:
        if (!q->ring.enabled)
            q->cpl_entries = v;
        return false;
    case NEURON_Q_CPL_HEAD:
        /* Only moves forward, and never past CPL_TAIL. */
        if (v - q->cpl_head > q->cpl_tail - q->cpl_head)
            return false;
        q->cpl_head = v;
        cnd_broadcast(&q->room);
        return q->cpl_pending;
    }
    if (reg > NEURON_Q_CNT_FAULTS_HI ||
        (reg > NEURON_Q_CUR_JOB_HI && reg < NEURON_Q_CNT_BUSY_NS_LO))
        *known = false;
    return false; /* read-only */
}

void nm_queue_reg_write(nm_queue *q, uint32_t reg, uint32_t v, bool *known) {
    bool do_kick, err = false;

    mtx_lock(&q->ring.lock);
    if (q->ring.reset_req) {
        /* Writes are ignored until the reset is done. */
        mtx_unlock(&q->ring.lock);
        return;
    }
    if (reg == NEURON_Q_CTRL)
        do_kick = q_ctrl_write_locked(q, v, &err);
    else if (reg <= NEURON_Q_HEAD)
        do_kick = nm_ring_reg_write_locked(&q->ring, reg, v, known);
    else
        do_kick = q_reg_write_locked(q, reg, v, known);
    mtx_unlock(&q->ring.lock);
    if (err)
        nm_error_irq(q->dev);
    if (do_kick)
        nm_kick(q->dev, NM_UNIT_CORE, q->index);
}
