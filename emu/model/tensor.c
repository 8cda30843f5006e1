// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The Tensor engine: MATMUL into PSUM and TRANSPOSE.
 *
 * MATMUL packs its operands into fp32 panels (exact for bf16 and fp16
 * inputs) and accumulates in PSUM in place when the destination's rows
 * are contiguous; matmul.c has the kernels and their rounding.
 */
#include "model_internal.h"

static bool mm_dtype(uint32_t dt) {
    return dt == NEURON_DT_FP32 || dt == NEURON_DT_BF16 || dt == NEURON_DT_FP16;
}

void nm_exec_matmul(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d, s, mv;
    nm_core *core = ex->core;

    if ((r->status = nm_operand_decode(ex, in, NEURON_INSN_DST, &d)) ||
        (r->status = nm_operand_decode(ex, in, NEURON_INSN_SRC0, &s)) ||
        (r->status = nm_operand_decode(ex, in, NEURON_INSN_SRC1, &mv)))
        return;
    if (d.dtype != NEURON_DT_FP32 || !mm_dtype(s.dtype) || !mm_dtype(mv.dtype)) {
        r->status = NEURON_JOB_STATUS_DTYPE;
        return;
    }
    uint32_t K = s.part_count, M = s.elems, N = mv.elems;
    if (mv.part_count != K || M > NEURON_MM_MAX_M || N > NEURON_MM_MAX_N || d.part_count != M ||
        d.elems != N) {
        r->status = NEURON_JOB_STATUS_SHAPE;
        return;
    }
    if (d.offset / NEURON_PSUM_BANK_SIZE != (d.offset + d.extent - 1) / NEURON_PSUM_BANK_SIZE) {
        r->status = NEURON_JOB_STATUS_PSUM_RANGE; /* crosses a bank */
        return;
    }
    if (nm_aborted(ex)) {
        r->status = NEURON_JOB_STATUS_ABORTED;
        return;
    }

    bool acc = in->flags & NEURON_MM_F_ACCUMULATE;
    if (nm_tap_contiguous(&d)) {
        nm_mm_run(&core->mm, (float *)(void *)d.base, d.pitch / sizeof(float), &s, &mv, M, N, K,
                  acc);
    } else {
        if (acc)
            for (uint32_t mi = 0; mi < M; mi++)
                nm_tap_load(&d, mi, core->mm_c + (size_t)mi * N);
        nm_mm_run(&core->mm, core->mm_c, N, &s, &mv, M, N, K, acc);
        for (uint32_t mi = 0; mi < M; mi++)
            nm_tap_store(&d, mi, core->mm_c + (size_t)mi * N);
    }
    nm_mark_dirty(ex, &d);

    bool fp32 = s.dtype == NEURON_DT_FP32 || mv.dtype == NEURON_DT_FP32;
    r->flops = 2ull * M * N * K;
    r->cycles = NM_COST_ISSUE + (uint64_t)N * (fp32 ? NM_MM_FP32_FACTOR : 1);
}

/*
 * tmp[f][p] = row p of contiguous @s, element f, for P partitions of F
 * elements: blocks of TR_BLOCK partitions, so that each pass reads
 * TR_BLOCK rows in order and writes runs of TR_BLOCK elements of @tmp.
 */
#define TR_BLOCK 8u
#define TRANSPOSE_ROWS(name, type)                                                                 \
    static void name(type *restrict tmp, const nm_tap *s, uint32_t P, uint32_t F) {                \
        for (uint32_t p0 = 0; p0 < P; p0 += TR_BLOCK) {                                            \
            const uint32_t pn = P - p0 < TR_BLOCK ? P - p0 : TR_BLOCK;                             \
            const type *rows[TR_BLOCK];                                                            \
            for (uint32_t i = 0; i < pn; i++)                                                      \
                rows[i] = (const type *)(const void *)(s->base + (size_t)(p0 + i) * s->pitch);     \
            for (uint32_t f = 0; f < F; f++)                                                       \
                for (uint32_t i = 0; i < pn; i++)                                                  \
                    tmp[(size_t)f * P + p0 + i] = rows[i][f];                                      \
        }                                                                                          \
    }
TRANSPOSE_ROWS(transpose_rows32, uint32_t)
TRANSPOSE_ROWS(transpose_rows16, uint16_t)

void nm_exec_transpose(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d, s;
    nm_core *core = ex->core;

    if ((r->status = nm_operand_decode(ex, in, NEURON_INSN_DST, &d)) ||
        (r->status = nm_operand_decode(ex, in, NEURON_INSN_SRC0, &s)))
        return;
    uint32_t P = s.part_count, F = s.elems;
    if (d.part_count != F || d.elems != P) {
        r->status = NEURON_JOB_STATUS_SHAPE;
        return;
    }
    if (s.dtype == d.dtype && nm_tap_contiguous(&s) && nm_tap_contiguous(&d) &&
        (s.esize == 4 || s.esize == 2)) {
        /* Raw elements through a buffer (operands may overlap), blocked. */
        if (s.esize == 4)
            transpose_rows32((uint32_t *)(void *)core->mm_c, &s, P, F);
        else
            transpose_rows16((uint16_t *)(void *)core->mm_c, &s, P, F);
        for (uint32_t f = 0; f < F; f++)
            memcpy(d.base + (size_t)f * d.pitch, (uint8_t *)core->mm_c + (size_t)f * P * s.esize,
                   (size_t)P * s.esize);
    } else if (s.dtype == d.dtype) {
        /* Bit-exact: gather raw elements first, so operands may overlap. */
        uint8_t *tmp = (uint8_t *)core->mm_c;
        for (uint32_t p = 0; p < P; p++)
            for (uint32_t f = 0; f < F; f++)
                memcpy(tmp + ((size_t)f * P + p) * s.esize, nm_tap_elem(&s, p, f), s.esize);
        for (uint32_t f = 0; f < F; f++)
            for (uint32_t p = 0; p < P; p++)
                memcpy(nm_tap_elem(&d, f, p), tmp + ((size_t)f * P + p) * s.esize, s.esize);
    } else {
        float *row = core->scratch[0];
        float *tmp = core->mm_c;
        for (uint32_t p = 0; p < P; p++) {
            nm_tap_load(&s, p, row);
            for (uint32_t f = 0; f < F; f++)
                tmp[(size_t)f * P + p] = row[f];
        }
        for (uint32_t f = 0; f < F; f++)
            nm_tap_store(&d, f, tmp + (size_t)f * P);
    }
    nm_mark_dirty(ex, &d);
    r->cycles = NM_COST_ISSUE + F;
}
