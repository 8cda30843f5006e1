// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A NeuronCore: on-core memories, program fetch and validation, and the
 * cooperative scheduler that runs the four engine streams of a job in the
 * calling thread, round-robin, until each has ended or all live ones are
 * blocked on semaphores. Instructions are decoded against the opcode
 * table (hw/neuron_isa.h) here; control instructions (END, NOP, NOTIFY,
 * SEM_*, LOOP) are executed here, the engines' own instructions in sync.c,
 * tensor.c and vector.c, on operands of operand.c. hw/isa.md is the
 * specification.
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise */
#endif
#include <stdlib.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "model_internal.h"

/* Instructions a stream runs before the scheduler moves to the next one. */
#define NM_QUANTUM 32

/*
 * Host bytes between partitions: the size rounded up to cache lines, plus
 * one line if that leaves an even number of lines. With a pitch of a
 * power-of-two multiple of lines, a column of 128 partitions would fall
 * into a handful of cache sets and be evicted before it is used again.
 */
static uint32_t partition_pitch(uint32_t bytes) {
    uint32_t pitch = (bytes + 63u) & ~63u;
    return (pitch / 64u) % 2 ? pitch : pitch + 64u;
}

/*
 * Zeroed on-core memory of @bytes. On Linux, anonymous memory aligned to
 * 2 MiB and advised to use huge pages: an operand's partitions are a pitch
 * (a page or more) apart, so with 4 KiB pages every row of an operand is
 * a TLB entry of its own and a MATMUL's 128 rows of A and B overflow the
 * first-level TLB. The kernel zero-fills each page at its first touch.
 */
#define NM_HUGE_PAGE (2u << 20)

static uint8_t *onchip_alloc(size_t bytes, nm_onchip *m) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    m->len = bytes + NM_HUGE_PAGE;
    m->map = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m->map == MAP_FAILED) {
        m->map = NULL;
        return NULL;
    }
    uint8_t *p = (uint8_t *)m->map + (-(uintptr_t)m->map & (NM_HUGE_PAGE - 1));
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice: 4 KiB pages if refused */
    return p;
#else
    m->len = bytes + 64;
    m->map = calloc(1, m->len);
    return m->map ? (uint8_t *)m->map + (-(uintptr_t)m->map & 63u) : NULL;
#endif
}

static void onchip_free(nm_onchip *m) {
    if (!m->map)
        return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    munmap(m->map, m->len);
#else
    free(m->map);
#endif
    m->map = NULL;
}

nm_core *nm_core_new(uint32_t sbuf_bytes, uint32_t psum_bytes) {
    if (sbuf_bytes == 0 || sbuf_bytes % (NEURON_PARTITIONS * 4) ||
        psum_bytes < NEURON_PARTITIONS * NEURON_PSUM_BANK_SIZE ||
        psum_bytes % (NEURON_PARTITIONS * NEURON_PSUM_BANK_SIZE))
        return NULL;

    nm_core *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->sbuf_pp = sbuf_bytes / NEURON_PARTITIONS;
    c->psum_pp = psum_bytes / NEURON_PARTITIONS;
    c->sbuf_pitch = partition_pitch(c->sbuf_pp);
    c->psum_pitch = partition_pitch(c->psum_pp);
    c->sbuf = onchip_alloc((size_t)NEURON_PARTITIONS * c->sbuf_pitch, &c->sbuf_mem);
    c->psum = onchip_alloc((size_t)NEURON_PARTITIONS * c->psum_pitch, &c->psum_mem);
    bool ok = c->sbuf && c->psum;
    for (int i = 0; i < NM_SCRATCH_BUFS; i++) {
        c->scratch[i] = malloc(NEURON_MAX_FREE_ELEMS * sizeof(float));
        ok = ok && c->scratch[i];
    }
    ok = nm_mm_work_init(&c->mm[0]) && ok;
    c->parallel.width = 1;
    c->mm_c = malloc(sizeof(float) * NEURON_MM_MAX_M * NEURON_MM_MAX_N);
    if (!ok || !c->mm_c) {
        nm_core_free(c);
        return NULL;
    }
    return c;
}

void nm_core_free(nm_core *c) {
    if (!c)
        return;
    onchip_free(&c->sbuf_mem);
    onchip_free(&c->psum_mem);
    for (int i = 0; i < NM_SCRATCH_BUFS; i++)
        free(c->scratch[i]);
    for (int i = 0; i < NM_MAX_PARALLEL; i++)
        nm_mm_work_free(&c->mm[i]);
    free(c->mm_c);
    free(c);
}

bool nm_core_set_parallel(nm_core *c, const nm_parallel *p) {
    if (p->width < 1 || p->width > NM_MAX_PARALLEL)
        return false;
    for (uint32_t i = 1; i < p->width; i++)
        if (!c->mm[i].a && !nm_mm_work_init(&c->mm[i])) {
            nm_mm_work_free(&c->mm[i]);
            return false;
        }
    c->parallel = *p;
    if (!p->run)
        c->parallel.width = 1;
    return true;
}

/* Zero what earlier jobs may have written: no job sees another's data. */
static void clear_memories(nm_core *c) {
    if (c->sbuf_dirty) {
        for (uint32_t p = 0; p < NEURON_PARTITIONS; p++)
            memset(c->sbuf + (size_t)p * c->sbuf_pitch, 0, c->sbuf_dirty);
        c->sbuf_dirty = 0;
    }
    if (c->psum_dirty) {
        for (uint32_t p = 0; p < NEURON_PARTITIONS; p++)
            memset(c->psum + (size_t)p * c->psum_pitch, 0, c->psum_dirty);
        c->psum_dirty = 0;
    }
}

void nm_core_reset(nm_core *c) {
    clear_memories(c);
}

/* ---- program fetch ---- */

static void fault(nm_job *job, uint32_t status, uint32_t info, uint16_t engine) {
    job->status = status;
    job->info = info;
    job->fault_engine = engine;
}

/* Returns the image (malloc'd) or NULL with the job's status set. */
static uint8_t *fetch_program(nm_job *job, struct neuron_prog_header *h) {
    uint32_t st;

    if (job->program_size < sizeof(*h)) {
        fault(job, NEURON_JOB_STATUS_BAD_PROGRAM, NEURON_PROG_ERR_SIZE, 0);
        return NULL;
    }
    st = nm_binding_read(job, job->program_binding, job->program_offset, h, sizeof(*h),
                         NEURON_BIND_EXEC);
    if (st != NEURON_JOB_STATUS_OK) {
        fault(job, st, st == NEURON_JOB_STATUS_HOST_DMA ? 0 : job->program_binding, 0);
        return NULL;
    }
    uint32_t image = nm_le32(h->image_size);
    if (nm_le32(h->magic) != NEURON_PROG_MAGIC) {
        fault(job, NEURON_JOB_STATUS_BAD_PROGRAM, NEURON_PROG_ERR_MAGIC, 0);
        return NULL;
    }
    if (nm_le16(h->version_major) != NEURON_ISA_VERSION_MAJOR ||
        nm_le16(h->version_minor) > NEURON_ISA_VERSION_MINOR) {
        fault(job, NEURON_JOB_STATUS_BAD_PROGRAM, NEURON_PROG_ERR_VERSION, 0);
        return NULL;
    }
    if (nm_le32(h->header_size) != sizeof(*h) || h->flags || h->reserved) {
        fault(job, NEURON_JOB_STATUS_BAD_PROGRAM, NEURON_PROG_ERR_HEADER, 0);
        return NULL;
    }
    if (image < sizeof(*h) || image > job->program_size || image > NEURON_PROG_MAX_SIZE) {
        fault(job, NEURON_JOB_STATUS_BAD_PROGRAM, NEURON_PROG_ERR_SIZE, 0);
        return NULL;
    }
    for (int e = 0; e < NEURON_NUM_ENGINES; e++) {
        uint64_t off = nm_le32(h->stream[e].offset), n = nm_le32(h->stream[e].count);
        if (n == 0 && off == 0)
            continue;
        if (off % sizeof(struct neuron_insn) || off < sizeof(*h) ||
            off + n * sizeof(struct neuron_insn) > image) {
            fault(job, NEURON_JOB_STATUS_BAD_PROGRAM, NEURON_PROG_ERR_STREAM, 0);
            return NULL;
        }
    }
    uint8_t *buf = malloc(image);
    if (!buf) {
        fault(job, NEURON_JOB_STATUS_HOST_DMA, 0, 0);
        return NULL;
    }
    st = nm_binding_read(job, job->program_binding, job->program_offset, buf, image,
                         NEURON_BIND_EXEC);
    if (st != NEURON_JOB_STATUS_OK) {
        fault(job, st, st == NEURON_JOB_STATUS_HOST_DMA ? 0 : job->program_binding, 0);
        free(buf);
        return NULL;
    }
    /* The header may have changed between the two reads: use the checked copy. */
    memcpy(buf, h, sizeof(*h));
    return buf;
}

/* ---- the trace of a profiled job (hw/README.md section 4.8) ---- */

static void trace_flush(nm_exec *ex) {
    nm_trace *t = ex->trace;
    if (!t->staged)
        return;
    uint64_t off = sizeof(struct neuron_trace_header) + t->written * sizeof(t->stage[0]);
    if (nm_binding_write(ex->job, ex->job->trace_binding, off, t->stage,
                         t->staged * sizeof(t->stage[0])) == NEURON_JOB_STATUS_OK)
        t->written += t->staged;
    else
        t->flags |= NEURON_TRACE_F_WRITE_ERROR;
    t->staged = 0;
}

/* Record the instruction @in of @s that just ran from cycle @start. */
static void trace_record(nm_exec *ex, const nm_stream *s, uint32_t pc, const struct neuron_insn *in,
                         uint64_t start, uint64_t wait, uint64_t bytes) {
    nm_trace *t = ex->trace;
    if (t->flags) /* full, or a write failed: no more records */
        return;
    if (t->written + t->staged >= t->capacity) {
        t->flags |= NEURON_TRACE_F_TRUNCATED;
        return;
    }
    struct neuron_trace_record *rec = &t->stage[t->staged++];
    memset(rec, 0, sizeof(*rec));
    rec->engine = (uint8_t)s->engine;
    rec->opcode = in->opcode;
    rec->index = nm_le32(pc);
    rec->start = nm_le64(start);
    rec->end = nm_le64(s->clock);
    rec->bytes = nm_le32((uint32_t)bytes);
    if (in->opcode == NEURON_OP_SEM_SIGNAL || in->opcode == NEURON_OP_SEM_WAIT)
        rec->sem = in->func;
    if (in->opcode == NEURON_OP_SEM_WAIT) {
        rec->wait = nm_le64(wait);
        if (ex->sem_signalled[in->func]) {
            rec->flags = NEURON_TRACE_R_SIGNAL;
            rec->signal = nm_le32((uint32_t)ex->wait_seq);
        }
    }
    rec->sbuf_high = nm_le32(ex->core->sbuf_dirty);
    rec->psum_high = nm_le32(ex->core->psum_dirty);
    if (t->staged == NM_TRACE_STAGE)
        trace_flush(ex);
}

/*
 * A profiled job's trace slot: WRITE rights and room for the header.
 * Returns false with the job's status set.
 */
static bool trace_slot_ok(nm_job *job) {
    uint32_t slot = job->trace_binding;
    if (slot >= job->bindings.count ||
        !(nm_le32(job->bindings.slot[slot].flags) & NEURON_BIND_WRITE) ||
        nm_le64(job->bindings.slot[slot].size) < sizeof(struct neuron_trace_header)) {
        fault(job, NEURON_JOB_STATUS_BAD_BINDING, slot, 0);
        return false;
    }
    return true;
}

/* The header, last: a reader that sees it sees every record it counts. */
static void trace_finish(nm_job *job, const nm_trace *t, const nm_core *core) {
    struct neuron_trace_header h;

    memset(&h, 0, sizeof(h));
    h.magic = nm_le32(NEURON_TRACE_MAGIC);
    h.version_major = nm_le16(NEURON_TRACE_VERSION_MAJOR);
    h.version_minor = nm_le16(NEURON_TRACE_VERSION_MINOR);
    h.header_size = nm_le32(sizeof(h));
    h.record_size = nm_le32(sizeof(struct neuron_trace_record));
    h.records = nm_le64(t->written);
    h.instructions = nm_le64(job->instructions);
    h.cycles = nm_le64(job->cycles);
    h.dma_bytes = nm_le64(job->dma_bytes);
    h.flags = nm_le32(t->flags);
    h.status = nm_le32(job->status);
    h.sbuf_high = nm_le32(core->sbuf_dirty);
    h.psum_high = nm_le32(core->psum_dirty);
    job->trace_records = t->written;
    job->trace_flags = t->flags;
    /* A failed header write leaves no trace in the slot; the job goes on. */
    if (nm_binding_write(job, job->trace_binding, 0, &h, sizeof(h)) != NEURON_JOB_STATUS_OK)
        job->trace_flags |= NEURON_TRACE_F_WRITE_ERROR;
}

/* ---- execution ---- */

enum step { STEP_RAN, STEP_BLOCKED, STEP_DONE, STEP_FAULT };

/*
 * The opcode table's part of decoding: flags the opcode defines, zero in
 * the header fields it does not use and in the operands it has not.
 */
static bool encoding_ok(const struct neuron_insn *in, const struct neuron_opcode_info *info) {
    const uint32_t unused = ~(uint32_t)info->uses;
    if ((in->flags & ~info->flags) || ((unused & NEURON_FIELD_FUNC) && in->func) ||
        ((unused & NEURON_FIELD_FUNC2) && in->func2) || ((unused & NEURON_FIELD_ARG) && in->arg) ||
        ((unused & NEURON_FIELD_IMM0) && in->imm[0]) ||
        ((unused & NEURON_FIELD_IMM1) && in->imm[1]))
        return false;
    for (unsigned k = 0; k < NEURON_INSN_OPERANDS; k++)
        if (info->operand[k] == NEURON_OPERAND_NONE && !nm_tap_is_zero(&in->op[k]))
            return false;
    return true;
}

static enum step exec_control(nm_exec *ex, nm_stream *s, const struct neuron_insn *in,
                              nm_result *r) {
    uint32_t arg = nm_le32(in->arg);
    r->cycles = NM_COST_CONTROL;

    switch (in->opcode) {
    case NEURON_OP_END:
    case NEURON_OP_NOP:
        if (in->opcode == NEURON_OP_END) {
            s->done = true;
            return STEP_DONE;
        }
        s->pc++;
        return STEP_RAN;
    case NEURON_OP_NOTIFY:
        if (ex->job->notify)
            ex->job->notify(ex->job->notify_opaque, ex->job->job_id, arg);
        s->pc++;
        return STEP_RAN;
    case NEURON_OP_SEM_SIGNAL:
        if (in->func >= NEURON_NUM_SEMAPHORES || arg > UINT32_MAX - ex->sem[in->func]) {
            r->status = NEURON_JOB_STATUS_SEMAPHORE;
            return STEP_FAULT;
        }
        ex->sem[in->func] += arg;
        if (s->clock + r->cycles > ex->sem_time[in->func]) {
            ex->sem_time[in->func] = s->clock + r->cycles;
            ex->sem_seq[in->func] = ex->job->instructions;
            ex->sem_signalled[in->func] = true;
        }
        {
            struct nm_sem_signal *h =
                &ex->sem_hist[in->func][ex->sem_hist_n[in->func]++ % NM_SEM_HISTORY];
            h->count = ex->sem[in->func];
            h->time = ex->sem_time[in->func];
            h->seq = ex->job->instructions;
        }
        s->pc++;
        return STEP_RAN;
    case NEURON_OP_SEM_WAIT:
        if (in->func >= NEURON_NUM_SEMAPHORES) {
            r->status = NEURON_JOB_STATUS_SEMAPHORE;
            return STEP_FAULT;
        }
        if (ex->sem[in->func] < arg) {
            s->blocked = true;
            return STEP_BLOCKED;
        }
        s->blocked = false;
        {
            /* The oldest remembered signal that reached the count. */
            uint64_t t = ex->sem_time[in->func];
            ex->wait_seq = ex->sem_seq[in->func];
            const uint32_t n = ex->sem_hist_n[in->func];
            for (uint32_t k = 0; k < n && k < NM_SEM_HISTORY; k++) {
                const struct nm_sem_signal *h =
                    &ex->sem_hist[in->func][(n - 1 - k) % NM_SEM_HISTORY];
                if (h->count < arg)
                    break;
                t = h->time;
                ex->wait_seq = h->seq;
            }
            if (t > s->clock)
                s->clock = t;
        }
        if (in->flags & NEURON_SEM_F_DECREMENT) {
            ex->sem[in->func] -= arg;
            ex->sem_hist_n[in->func] = 0; /* counts fell: the latest signal's time */
        }
        s->pc++;
        return STEP_RAN;
    case NEURON_OP_LOOP: {
        if (in->func >= NEURON_NUM_LOOP_COUNTERS || arg >= s->pc)
            goto decode;
        uint32_t n = nm_le32(in->imm[0]);
        uint32_t *ctr = &s->loop[in->func];
        if (n == NEURON_LOOP_INFINITE) {
            s->pc = arg;
            return STEP_RAN;
        }
        if (*ctr == 0)
            *ctr = n;
        if (--*ctr) {
            s->pc = arg;
        } else {
            s->pc++;
        }
        return STEP_RAN;
    }
    default:
        break;
    }
decode:
    r->status = NEURON_JOB_STATUS_DECODE;
    return STEP_FAULT;
}

static enum step step(nm_exec *ex, nm_stream *s) {
    struct neuron_insn in;
    nm_result r = {NEURON_JOB_STATUS_OK, false, 0, 0, 0, 0};
    nm_job *job = ex->job;
    enum step res = STEP_RAN;
    const uint64_t start = s->clock;

    if (s->pc >= s->count) {
        /* Ran past the last instruction without END. */
        r.status = NEURON_JOB_STATUS_DECODE;
        goto failed;
    }
    if (ex->insn_limit && job->instructions >= ex->insn_limit) {
        r.status = NEURON_JOB_STATUS_LIMIT;
        goto failed;
    }
    memcpy(&in, s->code + (size_t)s->pc * sizeof(in), sizeof(in));
    const struct neuron_opcode_info *info = neuron_opcode_lookup(in.opcode);
    if (!info || !(info->engines & (1u << s->engine)) || !encoding_ok(&in, info)) {
        r.status = NEURON_JOB_STATUS_DECODE;
        goto failed;
    }

    switch (in.opcode) {
    case NEURON_OP_DMA_LOAD:
    case NEURON_OP_DMA_STORE:
    case NEURON_OP_DMA_GATHER:
    case NEURON_OP_DMA_SCATTER_ADD:
        nm_exec_dma(ex, &in, &r);
        break;
    case NEURON_OP_MATMUL:
        nm_exec_matmul(ex, &in, &r);
        break;
    case NEURON_OP_TRANSPOSE:
        nm_exec_transpose(ex, &in, &r);
        break;
    case NEURON_OP_ACTIVATE:
        nm_exec_activate(ex, &in, &r);
        break;
    case NEURON_OP_TENSOR_TENSOR:
        nm_exec_tensor_tensor(ex, &in, &r);
        break;
    case NEURON_OP_TENSOR_SCALAR:
        nm_exec_tensor_scalar(ex, &in, &r);
        break;
    case NEURON_OP_REDUCE:
        nm_exec_reduce(ex, &in, &r);
        break;
    case NEURON_OP_COPY:
        nm_exec_copy(ex, &in, &r);
        break;
    case NEURON_OP_MEMSET:
        nm_exec_memset(ex, &in, &r);
        break;
    case NEURON_OP_IOTA:
        nm_exec_iota(ex, &in, &r);
        break;
    case NEURON_OP_SELECT:
        nm_exec_select(ex, &in, &r);
        break;
    case NEURON_OP_RANDOM:
        nm_exec_random(ex, &in, &r);
        break;
    default: {
        const uint32_t pc = s->pc;
        res = exec_control(ex, s, &in, &r);
        if (res == STEP_BLOCKED)
            return res;
        if (res == STEP_FAULT)
            goto failed;
        const uint64_t wait = s->clock - start; /* SEM_WAIT moves the clock */
        s->clock += r.cycles;
        if (ex->trace)
            trace_record(ex, s, pc, &in, start, wait, 0);
        job->instructions++;
        return res;
    }
    }
    if (r.status != NEURON_JOB_STATUS_OK)
        goto failed;
    s->clock += r.cycles;
    if (ex->trace)
        trace_record(ex, s, s->pc, &in, start, 0, r.dma_bytes);
    s->pc++;
    job->instructions++;
    job->flops += r.flops;
    job->dma_bytes += r.dma_bytes;
    return STEP_RAN;

failed:
    if (r.status == NEURON_JOB_STATUS_ABORTED)
        fault(job, r.status, 0, 0);
    else
        fault(job, r.status, r.info_is_slot ? r.slot : s->pc, s->engine);
    return STEP_FAULT;
}

static void run_streams(nm_exec *ex) {
    nm_job *job = ex->job;

    for (;;) {
        bool progress = false, live = false;

        for (int e = 0; e < NEURON_NUM_ENGINES; e++) {
            nm_stream *s = &ex->stream[e];
            if (s->done)
                continue;
            for (int q = 0; q < NM_QUANTUM && !s->done; q++) {
                if (nm_aborted(ex)) {
                    fault(job, NEURON_JOB_STATUS_ABORTED, 0, 0);
                    return;
                }
                enum step st = step(ex, s);
                if (st == STEP_FAULT)
                    return;
                if (st == STEP_BLOCKED)
                    break;
                progress = true;
            }
            live = live || !s->done;
        }
        if (!live)
            return;
        if (!progress) {
            /* Every live stream waits on a semaphore nobody will signal. */
            for (int e = 0; e < NEURON_NUM_ENGINES; e++) {
                nm_stream *s = &ex->stream[e];
                if (!s->done) {
                    fault(job, NEURON_JOB_STATUS_SEMAPHORE, s->pc, s->engine);
                    return;
                }
            }
        }
    }
}

void nm_core_run(nm_core *core, nm_job *job) {
    struct neuron_prog_header h;
    nm_exec *ex;

    job->status = NEURON_JOB_STATUS_OK;
    job->info = 0;
    job->fault_engine = 0;
    job->cycles = 0;
    job->instructions = 0;
    job->flops = 0;
    job->dma_bytes = 0;
    job->trace_records = 0;
    job->trace_flags = 0;

    clear_memories(core);
    if (job->profile && !trace_slot_ok(job))
        return;
    if (job->abort && atomic_load(job->abort)) {
        fault(job, NEURON_JOB_STATUS_ABORTED, 0, 0);
        return;
    }
    nm_trace *trace = NULL;
    if (job->profile) {
        trace = calloc(1, sizeof(*trace));
        if (!trace) {
            fault(job, NEURON_JOB_STATUS_HOST_DMA, 0, 0);
            return;
        }
        trace->capacity = (nm_le64(job->bindings.slot[job->trace_binding].size) -
                           sizeof(struct neuron_trace_header)) /
                          sizeof(struct neuron_trace_record);
    }
    uint8_t *image = fetch_program(job, &h);
    ex = image ? calloc(1, sizeof(*ex)) : NULL;
    if (!ex) {
        if (image)
            fault(job, NEURON_JOB_STATUS_HOST_DMA, 0, 0);
        free(image);
        if (trace)
            trace_finish(job, trace, core);
        free(trace);
        return;
    }
    ex->trace = trace;
    ex->core = core;
    ex->job = job;
    ex->insn_limit = nm_le64(h.insn_limit);
    for (int e = 0; e < NEURON_NUM_ENGINES; e++) {
        nm_stream *s = &ex->stream[e];
        s->engine = (uint16_t)(e + 1);
        s->count = nm_le32(h.stream[e].count);
        s->code = image + nm_le32(h.stream[e].offset);
        s->done = s->count == 0;
    }

    run_streams(ex);

    for (int e = 0; e < NEURON_NUM_ENGINES; e++)
        if (ex->stream[e].clock > job->cycles)
            job->cycles = ex->stream[e].clock;
    if (trace) {
        trace_flush(ex);
        trace_finish(job, trace, core);
    }
    free(trace);
    free(ex);
    free(image);
}
