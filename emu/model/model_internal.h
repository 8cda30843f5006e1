/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NeuronCore interpreter internals shared by core.c, the operand layer
 * (operand.c), the engines (sync.c, tensor.c, vector.c, matmul.c) and
 * dtype.c. Not part of the boundary to the job queue (queue.c): that is
 * job.h.
 */
#ifndef NEURON_MODEL_INTERNAL_H
#define NEURON_MODEL_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "job.h"
#include "matmul.h"
#include "neuron_isa.h"
#include "nm_endian.h"

static inline float nm_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static inline uint32_t nm_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

/*
 * Hot loops are built for several x86-64 levels and picked at load time.
 * Floating-point contraction is off in every build (CMake and QEMU's), so
 * a clone gives the same bits as the baseline.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) &&       \
    !defined(NEURON_MODEL_NO_CLONES)
#define NM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NM_CLONES
#endif

/* ---- dtype.c ---- */

uint16_t nm_f32_to_bf16(float f);
float nm_bf16_to_f32(uint16_t h);
uint16_t nm_f32_to_f16(float f);
float nm_f16_to_f32(uint16_t h);
int32_t nm_f32_to_i32(float f);
uint8_t nm_f32_to_u8(float f);

/* Convert @n elements of @dtype at @src (element stride @stride) to fp32. */
void nm_load_f32(float *restrict dst, const uint8_t *restrict src, uint32_t dtype, size_t n,
                 size_t stride);
/* Convert @n fp32 values to @dtype at @dst (element stride @stride). */
void nm_store_f32(uint8_t *restrict dst, const float *restrict src, uint32_t dtype, size_t n,
                  size_t stride);

/* ---- core state ---- */

#define NM_SCRATCH_BUFS 3

/* An on-core memory's allocation (core.c). */
typedef struct nm_onchip {
    void *map;
    size_t len;
} nm_onchip;

struct nm_core {
    uint32_t sbuf_pp; /* bytes per partition */
    uint32_t psum_pp;
    uint32_t sbuf_pitch; /* host bytes between partitions (core.c) */
    uint32_t psum_pitch;
    uint8_t *sbuf;                /* [NEURON_PARTITIONS][sbuf_pitch] */
    uint8_t *psum;                /* [NEURON_PARTITIONS][psum_pitch] */
    nm_onchip sbuf_mem, psum_mem; /* as allocated; sbuf and psum are aligned in them */
    /* Bytes per partition that may be non-zero (cleared at job start). */
    uint32_t sbuf_dirty;
    uint32_t psum_dirty;
    /* Per-partition fp32 rows for elementwise work, NEURON_MAX_FREE_ELEMS each. */
    float *scratch[NM_SCRATCH_BUFS];
    /* Packed matmul operands, one set per part of a split MATMUL (mm[0] unsplit). */
    nm_mm_work mm[NM_MAX_PARALLEL];
    nm_parallel parallel; /* width 1 unless set (nm_core_set_parallel) */
    /* [M][N] fp32: a MATMUL result whose PSUM rows are not contiguous; TRANSPOSE's staging. */
    float *mm_c;
};

typedef struct nm_stream {
    uint16_t engine; /* NEURON_ENGINE_* */
    const uint8_t *code;
    uint32_t count;
    uint32_t pc;
    bool done;
    bool blocked;
    uint32_t loop[NEURON_NUM_LOOP_COUNTERS];
    uint64_t clock; /* cycles, see the cost model in hw/isa.md */
} nm_stream;

/* Trace records staged before they are written into the trace slot. */
#define NM_TRACE_STAGE 256

/* A profiled job's trace (core.c). */
typedef struct nm_trace {
    uint64_t capacity; /* records the slot holds after the header */
    uint64_t written;  /* records written into the slot */
    uint32_t flags;    /* NEURON_TRACE_F_* */
    uint32_t staged;
    struct neuron_trace_record stage[NM_TRACE_STAGE];
} nm_trace;

#define NM_SEM_HISTORY 64

/* One run of one job on one core. */
typedef struct nm_exec {
    nm_core *core;
    nm_job *job;
    nm_stream stream[NEURON_NUM_ENGINES];
    uint32_t sem[NEURON_NUM_SEMAPHORES];
    uint64_t sem_time[NEURON_NUM_SEMAPHORES];
    /* The instruction number of the signal that set sem_time, if any. */
    uint64_t sem_seq[NEURON_NUM_SEMAPHORES];
    bool sem_signalled[NEURON_NUM_SEMAPHORES];
    /*
     * The last NM_SEM_HISTORY signals of each semaphore: its count after
     * the signal, the latest time of any signal up to it and the signal's
     * instruction number. A wait for a count takes the time of the signal
     * that reached it, not of the semaphore's latest one.
     */
    struct nm_sem_signal {
        uint32_t count;
        uint64_t time, seq;
    } sem_hist[NEURON_NUM_SEMAPHORES][NM_SEM_HISTORY];
    uint32_t sem_hist_n[NEURON_NUM_SEMAPHORES];
    uint64_t wait_seq; /* the signal that released the last SEM_WAIT */
    uint64_t insn_limit;
    nm_trace *trace; /* NULL unless the job is profiled */
    /* Set by a fault: the info value to report. */
    uint32_t info;
} nm_exec;

/* A decoded, validated on-core operand. */
typedef struct nm_tap {
    uint8_t *base; /* element 0 of partition part_start */
    uint32_t space;
    uint32_t dtype;
    uint32_t esize;
    uint32_t part_start;
    uint32_t part_count;
    uint32_t pitch; /* bytes between partitions */
    uint32_t count[2];
    uint32_t stride[2]; /* elements */
    uint32_t elems;     /* count[0] * count[1] */
    uint32_t extent;    /* bytes per partition, from offset */
    uint32_t offset;
} nm_tap;

static inline bool nm_aborted(const nm_exec *ex) {
    return ex->job->abort && atomic_load_explicit(ex->job->abort, memory_order_relaxed);
}

/*
 * An instruction's work on partitions [p0, p1), independent of every
 * other partition's; returns a NEURON_JOB_STATUS_*.
 */
typedef uint32_t nm_rows_fn(void *ctx, uint32_t p0, uint32_t p1);

/*
 * Runs @fn on partitions [0, @count), split in ranges over the core's host
 * threads when the instruction moves at least NM_SPLIT_ROWS_BYTES (@bytes,
 * read and written). Returns the status of the first range that failed.
 * Ranges run at once: a failure does not stop the others. Below 256 KiB
 * the hand-over to a helper costs more than it saves (docs/libneuron.md).
 */
#define NM_SPLIT_ROWS_BYTES (256u * 1024u)
uint32_t nm_split_rows(nm_core *core, uint32_t count, uint64_t bytes, nm_rows_fn *fn, void *ctx);

/* Mark bytes [0, end) of each partition of @space as possibly non-zero. */
void nm_mark_dirty(nm_exec *ex, const nm_tap *t);

/*
 * Decode and validate operand @raw into @t. @allowed_spaces is a mask of
 * 1 << NEURON_SPACE_*; @optional allows NEURON_SPACE_NONE (t->space = 0).
 * Returns NEURON_JOB_STATUS_OK or the fault status.
 */
uint32_t nm_tap_decode(nm_exec *ex, const struct neuron_tap *raw, unsigned allowed_spaces,
                       bool optional, nm_tap *t);
bool nm_tap_is_zero(const struct neuron_tap *raw);
/*
 * Decode operand op[@k] of @in (@k < NEURON_INSN_OPERANDS) as the opcode
 * table says it is: SBUF, PSUM, either, optional. An absent operand
 * decodes to t->space == 0.
 */
uint32_t nm_operand_decode(nm_exec *ex, const struct neuron_insn *in, unsigned k, nm_tap *t);

/* Whether each partition's elements of @t are consecutive in memory. */
static inline bool nm_tap_contiguous(const nm_tap *t) {
    return t->stride[0] == 1 && (t->count[1] == 1 || t->stride[1] == t->count[0]);
}

/* Whether @x and @y share no byte: other spaces, partitions or bytes. */
static inline bool nm_taps_disjoint(const nm_tap *x, const nm_tap *y) {
    return x->space != y->space || x->part_start + x->part_count <= y->part_start ||
           y->part_start + y->part_count <= x->part_start || x->offset + x->extent <= y->offset ||
           y->offset + y->extent <= x->offset;
}

/* Partition @p of @t as fp32 in place, when it is contiguous fp32; else NULL. */
static inline float *nm_tap_row_f32(const nm_tap *t, uint32_t p) {
    if (t->dtype != NEURON_DT_FP32 || !nm_tap_contiguous(t))
        return NULL;
    return (float *)(void *)(t->base + (size_t)p * t->pitch);
}

/* Pointer to element (p, linear free index j) of @t. */
static inline uint8_t *nm_tap_elem(const nm_tap *t, uint32_t p, uint32_t j) {
    uint32_t j1 = j / t->count[0], j0 = j % t->count[0];
    return t->base + (size_t)p * t->pitch +
           ((size_t)j1 * t->stride[1] + (size_t)j0 * t->stride[0]) * t->esize;
}

/* Gather partition @p of @t as fp32 into @out (t->elems values). */
void nm_tap_load(const nm_tap *t, uint32_t p, float *restrict out);
/* Scatter t->elems fp32 values into partition @p of @t, converting. */
void nm_tap_store(const nm_tap *t, uint32_t p, const float *restrict in);

/*
 * Engine executors: validate and run one instruction of @s. Return
 * NEURON_JOB_STATUS_OK or a fault status (ex->info is then set by the
 * caller unless the executor set a binding slot via *info_set).
 */
typedef struct nm_result {
    uint32_t status;
    bool info_is_slot; /* info = binding slot instead of instruction index */
    uint32_t slot;
    uint64_t cycles;
    uint64_t flops;
    uint64_t dma_bytes;
} nm_result;

void nm_exec_dma(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_matmul(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_transpose(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_activate(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_tensor_tensor(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_tensor_scalar(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_reduce(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_copy(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_memset(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_iota(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_select(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
void nm_exec_random(nm_exec *ex, const struct neuron_insn *in, nm_result *r);
/*
 * ISA 1.2's integer TENSOR_TENSOR and TENSOR_SCALAR (vector_int.c), on
 * operands the caller decoded: @sc is the per-partition scalar or absent.
 */
void nm_int_tensor_tensor(nm_exec *ex, const struct neuron_insn *in, const nm_tap *d,
                          const nm_tap *a, const nm_tap *b, nm_result *r);
void nm_int_tensor_scalar(nm_exec *ex, const struct neuron_insn *in, const nm_tap *d,
                          const nm_tap *s, const nm_tap *sc, nm_result *r);

/* Cost model (hw/isa.md, "Cycle accounting"). */
#define NM_COST_ISSUE 64u  /* fixed cost of every compute or DMA instruction */
#define NM_COST_CONTROL 1u /* END, NOP, NOTIFY, SEM_*, LOOP */
#define NM_DMA_BYTES_PER_CYCLE 64u
#define NM_MM_FP32_FACTOR 4u /* fp32 matmul passes take 4 cycles per column */

/*
 * fp32 C[M][N] (+)= A^T B (matmul.c), with A the K partitions of @a (M
 * elements each), B those of @b (N each), and row i of C at c + i * ldc.
 */
void nm_mm_run(nm_mm_work *w, float *c, size_t ldc, const nm_tap *a, const nm_tap *b, uint32_t M,
               uint32_t N, uint32_t K, bool accumulate);
/* The width of the current path's panels of B (columns of C). */
uint32_t nm_mm_panel_width(void);

#endif /* NEURON_MODEL_INTERNAL_H */
