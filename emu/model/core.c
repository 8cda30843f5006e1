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
#include <stdlib.h>

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

static uint8_t *line_aligned(void *p) {
    return p ? (uint8_t *)p + (-(uintptr_t)p & 63u) : NULL;
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
    /* calloc: untouched pages of a large SBUF cost nothing. */
    c->sbuf_mem = calloc(1, (size_t)NEURON_PARTITIONS * c->sbuf_pitch + 64);
    c->psum_mem = calloc(1, (size_t)NEURON_PARTITIONS * c->psum_pitch + 64);
    c->sbuf = line_aligned(c->sbuf_mem);
    c->psum = line_aligned(c->psum_mem);
    bool ok = c->sbuf && c->psum;
    for (int i = 0; i < NM_SCRATCH_BUFS; i++) {
        c->scratch[i] = malloc(NEURON_MAX_FREE_ELEMS * sizeof(float));
        ok = ok && c->scratch[i];
    }
    ok = nm_mm_work_init(&c->mm) && ok;
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
    free(c->sbuf_mem);
    free(c->psum_mem);
    for (int i = 0; i < NM_SCRATCH_BUFS; i++)
        free(c->scratch[i]);
    nm_mm_work_free(&c->mm);
    free(c->mm_c);
    free(c);
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
        if (s->clock + r->cycles > ex->sem_time[in->func])
            ex->sem_time[in->func] = s->clock + r->cycles;
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
        if (in->flags & NEURON_SEM_F_DECREMENT)
            ex->sem[in->func] -= arg;
        if (ex->sem_time[in->func] > s->clock)
            s->clock = ex->sem_time[in->func];
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
    default:
        res = exec_control(ex, s, &in, &r);
        if (res == STEP_BLOCKED)
            return res;
        if (res == STEP_FAULT)
            goto failed;
        job->instructions++;
        s->clock += r.cycles;
        return res;
    }
    if (r.status != NEURON_JOB_STATUS_OK)
        goto failed;
    s->pc++;
    job->instructions++;
    job->flops += r.flops;
    job->dma_bytes += r.dma_bytes;
    s->clock += r.cycles;
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

    clear_memories(core);
    if (job->abort && atomic_load(job->abort)) {
        fault(job, NEURON_JOB_STATUS_ABORTED, 0, 0);
        return;
    }
    uint8_t *image = fetch_program(job, &h);
    if (!image)
        return;

    ex = calloc(1, sizeof(*ex));
    if (!ex) {
        free(image);
        fault(job, NEURON_JOB_STATUS_HOST_DMA, 0, 0);
        return;
    }
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
    free(ex);
    free(image);
}
