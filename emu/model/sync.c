// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The Sync engine: DMA between bindings and SBUF (DMA_LOAD, DMA_STORE,
 * DMA_GATHER, DMA_SCATTER_ADD). The whole memory-side extent of an instruction is checked
 * against its binding before the first byte moves, so a faulting DMA
 * changes nothing.
 */
#include "model_internal.h"

/* [lo, lo + len) of @slot is accessible with @need. */
static uint32_t check_extent(const nm_job *job, uint32_t slot, uint64_t lo, uint64_t len,
                             uint32_t need) {
    if (slot >= job->bindings.count)
        return NEURON_JOB_STATUS_BINDING_INDEX;
    const struct neuron_binding *b = &job->bindings.slot[slot];
    uint64_t size = nm_le64(b->size);
    if (lo > size || len > size - lo)
        return NEURON_JOB_STATUS_BINDING_RANGE;
    if ((nm_le32(b->flags) & need) != need)
        return NEURON_JOB_STATUS_BINDING_ACCESS;
    return NEURON_JOB_STATUS_OK;
}

static uint32_t xfer(const nm_job *job, bool load, uint32_t slot, uint64_t off, uint8_t *sbuf,
                     size_t len) {
    return load ? nm_binding_read(job, slot, off, sbuf, len, NEURON_BIND_READ)
                : nm_binding_write(job, slot, off, sbuf, len);
}

/*
 * DMA_GATHER's and DMA_SCATTER_ADD's row of each partition: the int32
 * indices at SBUF byte imm[0] of its partitions, each below imm[1]. Sets
 * *max to the largest.
 */
static uint32_t index_rows(nm_exec *ex, const struct neuron_insn *in, const nm_tap *t,
                           uint32_t *rows, uint32_t *max) {
    const uint32_t at = nm_le32(in->imm[0]), limit = nm_le32(in->imm[1]);
    if (at % 4)
        return NEURON_JOB_STATUS_ALIGN;
    if (at > ex->core->sbuf_pp - 4)
        return NEURON_JOB_STATUS_SBUF_RANGE;
    *max = 0;
    for (uint32_t p = 0; p < t->part_count; p++) {
        int32_t v;
        memcpy(&v, ex->core->sbuf + (size_t)(t->part_start + p) * ex->core->sbuf_pitch + at, 4);
        v = (int32_t)nm_le32((uint32_t)v);
        if (v < 0 || (uint32_t)v >= limit)
            return NEURON_JOB_STATUS_BINDING_RANGE;
        rows[p] = (uint32_t)v;
        if (rows[p] > *max)
            *max = rows[p];
    }
    return NEURON_JOB_STATUS_OK;
}

/*
 * Add partition @p of @t (FP32 or BF16) into the binding at @poff
 * (strides @s1, @s0), element by element in the order j1, j0: read, add
 * in fp32, round to the element type, write. Elements that the pattern
 * maps to one address accumulate in that order too.
 */
static uint32_t scatter_add_row(nm_exec *ex, const nm_tap *t, uint32_t p, uint32_t slot,
                                uint64_t poff, uint64_t s1, uint64_t s0, bool contiguous) {
    const uint32_t es = t->esize;
    float *x = ex->core->scratch[0], *m = ex->core->scratch[1];
    uint8_t *raw = (uint8_t *)ex->core->scratch[2];
    uint32_t st;

    nm_tap_load(t, p, x);
    if (contiguous) {
        /* Distinct addresses: one read, the sums, one write. */
        size_t len = (size_t)t->elems * es;
        if ((st = nm_binding_read(ex->job, slot, poff, raw, len, NEURON_BIND_READ)))
            return st;
        nm_load_f32(m, raw, t->dtype, t->elems, 1);
        for (uint32_t i = 0; i < t->elems; i++)
            m[i] += x[i];
        nm_store_f32(raw, m, t->dtype, t->elems, 1);
        return nm_binding_write(ex->job, slot, poff, raw, len);
    }
    for (uint32_t i = 0; i < t->elems; i++) {
        uint64_t at = poff + (i / t->count[0]) * s1 + (i % t->count[0]) * s0;
        float v;
        if ((st = nm_binding_read(ex->job, slot, at, raw, es, NEURON_BIND_READ)))
            return st;
        nm_load_f32(&v, raw, t->dtype, 1, 1);
        v += x[i];
        nm_store_f32(raw, &v, t->dtype, 1, 1);
        if ((st = nm_binding_write(ex->job, slot, at, raw, es)))
            return st;
    }
    return NEURON_JOB_STATUS_OK;
}

/* The partitions of one DMA: where each one's bytes are and how they lie. */
typedef struct dma_rows {
    nm_exec *ex;
    const nm_tap *t;
    const uint32_t *rows; /* the memory row of each partition; NULL: the partition's own */
    uint32_t slot;
    uint64_t off, ps, s1, s0;
    bool load, scatter, row_contig, part_contig, mem_contig;
} dma_rows;

static uint32_t dma_rows_run(void *ctx, uint32_t p0, uint32_t p1) {
    const dma_rows *d = ctx;
    const nm_tap *t = d->t;
    const uint32_t es = t->esize;
    for (uint32_t p = p0; p < p1; p++) {
        if (nm_aborted(d->ex))
            return NEURON_JOB_STATUS_ABORTED;
        uint64_t poff = d->off + (d->rows ? d->rows[p] : p) * d->ps;
        uint8_t *row = t->base + (size_t)p * t->pitch;
        uint32_t st = NEURON_JOB_STATUS_OK;
        if (d->scatter) {
            st = scatter_add_row(d->ex, t, p, d->slot, poff, d->s1, d->s0, d->mem_contig);
        } else if (d->part_contig) {
            st = xfer(d->ex->job, d->load, d->slot, poff, row, (size_t)t->elems * es);
        } else {
            for (uint32_t j1 = 0; j1 < t->count[1] && st == NEURON_JOB_STATUS_OK; j1++) {
                uint64_t roff = poff + j1 * d->s1;
                uint8_t *srow = row + (size_t)j1 * t->stride[1] * es;
                if (d->row_contig) {
                    st = xfer(d->ex->job, d->load, d->slot, roff, srow, (size_t)t->count[0] * es);
                    continue;
                }
                for (uint32_t j0 = 0; j0 < t->count[0] && st == NEURON_JOB_STATUS_OK; j0++)
                    st = xfer(d->ex->job, d->load, d->slot, roff + j0 * d->s0,
                              srow + (size_t)j0 * t->stride[0] * es, es);
            }
        }
        /* Only a host access can fail after the extent check. */
        if (st != NEURON_JOB_STATUS_OK)
            return st;
    }
    return NEURON_JOB_STATUS_OK;
}

void nm_exec_dma(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    const struct neuron_dram *d = &in->dma.dram;
    const bool scatter = in->opcode == NEURON_OP_DMA_SCATTER_ADD;
    const bool indexed = in->opcode == NEURON_OP_DMA_GATHER || scatter; /* rows by index */
    bool load = in->opcode == NEURON_OP_DMA_LOAD || in->opcode == NEURON_OP_DMA_GATHER;
    uint32_t rows[NEURON_PARTITIONS], last;
    nm_tap t;

    if (in->dma.reserved[0] || in->dma.reserved[1] || d->reserved[0] || d->reserved[1] ||
        d->reserved[2]) {
        r->status = NEURON_JOB_STATUS_DECODE;
        return;
    }
    r->status = nm_operand_decode(ex, in, NEURON_INSN_DST, &t);
    if (r->status != NEURON_JOB_STATUS_OK)
        return;

    if (scatter && t.dtype != NEURON_DT_FP32 && t.dtype != NEURON_DT_BF16) {
        r->status = NEURON_JOB_STATUS_DTYPE;
        return;
    }
    uint64_t off = nm_le64(d->offset);
    uint64_t ps = nm_le32(d->part_stride), s0 = nm_le32(d->stride[0]), s1 = nm_le32(d->stride[1]);
    uint32_t es = t.esize;
    if (off % es || ps % es || s0 % es || s1 % es) {
        r->status = NEURON_JOB_STATUS_ALIGN;
        return;
    }
    last = t.part_count - 1; /* the furthest row */
    if (indexed) {
        r->status = index_rows(ex, in, &t, rows, &last);
        if (r->status == NEURON_JOB_STATUS_BINDING_RANGE) {
            r->info_is_slot = true;
            r->slot = d->slot;
        }
        if (r->status != NEURON_JOB_STATUS_OK)
            return;
    }
    /*
     * The strides terms are < 2^32 * 2^16; an indexed row term may reach
     * 2^64, but no binding reaches 2^48 (NEURON_ADDR_BITS): such a span is
     * out of range whatever it is exactly.
     */
    uint64_t span = ps && last > (1ull << NEURON_ADDR_BITS) / ps
                        ? UINT64_MAX
                        : (uint64_t)last * ps + (uint64_t)(t.count[1] - 1) * s1 +
                              (uint64_t)(t.count[0] - 1) * s0 + es;
    const uint32_t need = scatter ? NEURON_BIND_READ | NEURON_BIND_WRITE
                          : load  ? NEURON_BIND_READ
                                  : NEURON_BIND_WRITE;
    r->status = check_extent(ex->job, d->slot, off, span, need);
    if (r->status != NEURON_JOB_STATUS_OK) {
        r->info_is_slot = true;
        r->slot = d->slot;
        return;
    }
    if (load)
        nm_mark_dirty(ex, &t);

    bool row_contig = s0 == es && t.stride[0] == 1;
    bool part_contig =
        row_contig &&
        (t.count[1] == 1 || (s1 == (uint64_t)t.count[0] * es && t.stride[1] == t.count[0]));
    /* The memory side of a partition is one run of distinct bytes. */
    bool mem_contig = s0 == es && (t.count[1] == 1 || s1 == (uint64_t)t.count[0] * es);
    dma_rows rows_of = {
        ex,      &t,         indexed ? rows : NULL, d->slot,   off, ps, s1, s0, load,
        scatter, row_contig, part_contig,           mem_contig};
    uint64_t bytes = (uint64_t)t.part_count * t.elems * es;
    /*
     * Partitions may run at once unless two of them write the same memory:
     * a scatter's rows may repeat, a store's may overlap.
     */
    uint64_t row_span = (uint64_t)(t.count[1] - 1) * s1 + (uint64_t)(t.count[0] - 1) * s0 + es;
    bool disjoint = load || (!scatter && ps >= row_span);
    r->status =
        nm_split_rows(ex->core, t.part_count, disjoint ? 2 * bytes : 0, dma_rows_run, &rows_of);
    if (r->status != NEURON_JOB_STATUS_OK)
        return;
    r->dma_bytes = bytes;
    r->cycles = NM_COST_ISSUE + (bytes + NM_DMA_BYTES_PER_CYCLE - 1) / NM_DMA_BYTES_PER_CYCLE;
}
