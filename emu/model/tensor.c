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

/*
 * A MATMUL of at least this many multiply-adds is split over the core's
 * host threads, if it has several: a 128 x 128 x 128 one takes about
 * 30 us on one thread, a few times what handing half of it over costs.
 */
#define NM_MM_SPLIT_MACS (128u * 128u * 128u)

/* One part of a split MATMUL: the columns [col[i], col[i + 1]) of C and B. */
typedef struct mm_split {
    nm_core *core;
    float *c;
    size_t ldc;
    const nm_tap *a, *b;
    uint32_t M, K;
    bool accumulate;
    uint32_t col[NM_MAX_PARALLEL + 1];
} mm_split;

/* Columns [@j0, @j0 + @n) of contiguous @t. */
static nm_tap tap_columns(const nm_tap *t, uint32_t j0, uint32_t n) {
    nm_tap c = *t;
    c.base += (size_t)j0 * t->esize;
    c.offset += j0 * t->esize;
    c.count[0] = n;
    c.count[1] = 1;
    c.elems = n;
    c.extent = n * t->esize;
    return c;
}

static void mm_split_part(void *ctx, uint32_t i) {
    const mm_split *m = ctx;
    const uint32_t j0 = m->col[i], n = m->col[i + 1] - j0;
    const nm_tap b = tap_columns(m->b, j0, n);
    nm_mm_run(&m->core->mm[i], m->c + j0, m->ldc, m->a, &b, m->M, n, m->K, m->accumulate);
}

/*
 * C (+)= A^T B, split by whole panels of columns over the core's threads
 * when it is large enough and B's rows are contiguous (a column range of
 * them is then a tap of its own).
 */
static void mm_run(nm_core *core, float *c, size_t ldc, const nm_tap *a, const nm_tap *b,
                   uint32_t M, uint32_t N, uint32_t K, bool accumulate) {
    const uint32_t nr = nm_mm_panel_width(), panels = (N + nr - 1) / nr;
    uint32_t parts = core->parallel.width < panels ? core->parallel.width : panels;
    if (parts < 2 || (uint64_t)M * N * K < NM_MM_SPLIT_MACS || !nm_tap_contiguous(b)) {
        nm_mm_run(&core->mm[0], c, ldc, a, b, M, N, K, accumulate);
        return;
    }
    mm_split m = {core, c, ldc, a, b, M, K, accumulate, {0}};
    for (uint32_t i = 1; i <= parts; i++) {
        const uint32_t end = panels * i / parts * nr;
        m.col[i] = end < N ? end : N;
    }
    core->parallel.run(core->parallel.opaque, mm_split_part, &m, parts);
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
        mm_run(core, (float *)(void *)d.base, d.pitch / sizeof(float), &s, &mv, M, N, K, acc);
    } else {
        if (acc)
            for (uint32_t mi = 0; mi < M; mi++)
                nm_tap_load(&d, mi, core->mm_c + (size_t)mi * N);
        mm_run(core, core->mm_c, N, &s, &mv, M, N, K, acc);
        for (uint32_t mi = 0; mi < M; mi++)
            nm_tap_store(&d, mi, core->mm_c + (size_t)mi * N);
    }
    nm_mark_dirty(ex, &d);

    bool fp32 = s.dtype == NEURON_DT_FP32 || mv.dtype == NEURON_DT_FP32;
    r->flops = 2ull * M * N * K;
    r->cycles = NM_COST_ISSUE + (uint64_t)N * (fp32 ? NM_MM_FP32_FACTOR : 1);
}

/*
 * dst[f * ld + p] = row p of contiguous @s, element f, for P partitions
 * of F elements: blocks of TR_BLOCK partitions, so that each pass reads
 * TR_BLOCK rows in order and writes runs of TR_BLOCK elements of @dst.
 */
#define TR_BLOCK 8u
#define TRANSPOSE_ROWS(name, type)                                                                 \
    static void name(type *restrict dst, size_t ld, const nm_tap *s, uint32_t p0, uint32_t P,      \
                     uint32_t F) {                                                                 \
        for (; p0 < P; p0 += TR_BLOCK) {                                                           \
            const uint32_t pn = P - p0 < TR_BLOCK ? P - p0 : TR_BLOCK;                             \
            const type *rows[TR_BLOCK];                                                            \
            for (uint32_t i = 0; i < pn; i++)                                                      \
                rows[i] = (const type *)(const void *)(s->base + (size_t)(p0 + i) * s->pitch);     \
            for (uint32_t f = 0; f < F; f++)                                                       \
                for (uint32_t i = 0; i < pn; i++)                                                  \
                    dst[(size_t)f * ld + p0 + i] = rows[i][f];                                     \
        }                                                                                          \
    }
TRANSPOSE_ROWS(transpose_rows32, uint32_t)
TRANSPOSE_ROWS(transpose_rows16, uint16_t)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/*
 * transpose_rows32 by 8 x 8 blocks in AVX registers (unpack, shuffle and
 * lane permutes move bits: NaN payloads and signed zeros are kept), the
 * partitions beyond the last whole block and the columns beyond the last
 * whole block of each as transpose_rows32 does.
 */
__attribute__((target("avx2"))) static void
transpose_rows32_avx2(uint32_t *restrict dst, size_t ld, const nm_tap *s, uint32_t P, uint32_t F) {
    const uint32_t P8 = P & ~7u, F8 = F & ~7u;
    for (uint32_t p0 = 0; p0 < P8; p0 += 8) {
        const uint32_t *rows[8];
        for (uint32_t i = 0; i < 8; i++)
            rows[i] = (const uint32_t *)(const void *)(s->base + (size_t)(p0 + i) * s->pitch);
        for (uint32_t f0 = 0; f0 < F8; f0 += 8) {
            __m256 r[8], t[8], u[8];
            for (int i = 0; i < 8; i++)
                r[i] = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(rows[i] + f0)));
            for (int i = 0; i < 8; i += 2) {
                t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
                t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
            }
            for (int i = 0; i < 8; i += 4) {
                u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
                u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
                u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
                u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
            }
            for (int j = 0; j < 4; j++) {
                __m256 lo = _mm256_permute2f128_ps(u[j], u[j + 4], 0x20);
                __m256 hi = _mm256_permute2f128_ps(u[j], u[j + 4], 0x31);
                _mm256_storeu_si256((__m256i *)(dst + (size_t)(f0 + j) * ld + p0),
                                    _mm256_castps_si256(lo));
                _mm256_storeu_si256((__m256i *)(dst + (size_t)(f0 + j + 4) * ld + p0),
                                    _mm256_castps_si256(hi));
            }
        }
        for (uint32_t f = F8; f < F; f++)
            for (uint32_t i = 0; i < 8; i++)
                dst[(size_t)f * ld + p0 + i] = rows[i][f];
    }
    transpose_rows32(dst, ld, s, P8, P, F);
}

static bool have_avx2(void) {
    return __builtin_cpu_supports("avx2");
}
#else
static bool have_avx2(void) {
    return false;
}
#define transpose_rows32_avx2(dst, ld, s, P, F) transpose_rows32(dst, ld, s, 0, P, F)
#endif

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
        /* Raw elements, blocked: straight into @d, or through a buffer
         * when the operands overlap. */
        const bool direct = nm_taps_disjoint(&s, &d);
        uint8_t *out = direct ? d.base : (uint8_t *)core->mm_c;
        const size_t ld = direct ? d.pitch / s.esize : P;
        if (s.esize == 4 && have_avx2())
            transpose_rows32_avx2((uint32_t *)(void *)out, ld, &s, P, F);
        else if (s.esize == 4)
            transpose_rows32((uint32_t *)(void *)out, ld, &s, 0, P, F);
        else
            transpose_rows16((uint16_t *)(void *)out, ld, &s, 0, P, F);
        if (!direct)
            for (uint32_t f = 0; f < F; f++)
                memcpy(d.base + (size_t)f * d.pitch, out + (size_t)f * P * s.esize,
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
