// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The Tensor engine: MATMUL into PSUM and TRANSPOSE.
 *
 * Operands are packed into contiguous fp32 buffers (exact for bf16 and
 * fp16 inputs), multiplied by a cache-blocked kernel whose inner loops run
 * over contiguous columns, and the result written to PSUM. Every output
 * element is the sum over k in increasing order, in fp32, starting from the
 * old PSUM value when accumulating or from 0.
 */
#include "model_internal.h"

/* Output columns per block: a block of B (K x MM_NB) stays in L1/L2. */
#define MM_NB 128
/* Output rows per pass: each load of a B element feeds MM_MR rows. */
#define MM_MR 4

/*
 * On x86-64 the kernels are built twice (AVX2 and baseline) and picked at
 * load time. Floating-point contraction stays off (ISO C mode), so both
 * give the same bits.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) &&       \
    !defined(NEURON_MODEL_NO_CLONES)
#define MM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MM_CLONES
#endif

MM_CLONES
static void mm_rows(float *restrict c, const float *restrict a, const float *restrict b,
                    uint32_t m0, uint32_t m, uint32_t n, uint32_t k, uint32_t n0, uint32_t nb) {
    float acc[MM_MR][MM_NB];
    for (uint32_t i = 0; i < MM_MR; i++)
        for (uint32_t j = 0; j < nb; j++)
            acc[i][j] = c[(size_t)(m0 + i) * n + n0 + j];
    for (uint32_t kk = 0; kk < k; kk++) {
        const float *restrict brow = b + (size_t)kk * n + n0;
        const float *restrict arow = a + (size_t)kk * m + m0;
        const float a0 = arow[0], a1 = arow[1], a2 = arow[2], a3 = arow[3];
        for (uint32_t j = 0; j < nb; j++) {
            float bv = brow[j];
            acc[0][j] += a0 * bv;
            acc[1][j] += a1 * bv;
            acc[2][j] += a2 * bv;
            acc[3][j] += a3 * bv;
        }
    }
    for (uint32_t i = 0; i < MM_MR; i++)
        for (uint32_t j = 0; j < nb; j++)
            c[(size_t)(m0 + i) * n + n0 + j] = acc[i][j];
}

MM_CLONES
static void mm_row(float *restrict c, const float *restrict a, const float *restrict b, uint32_t mi,
                   uint32_t m, uint32_t n, uint32_t k, uint32_t n0, uint32_t nb) {
    float *restrict crow = c + (size_t)mi * n + n0;
    for (uint32_t kk = 0; kk < k; kk++) {
        const float av = a[(size_t)kk * m + mi];
        const float *restrict brow = b + (size_t)kk * n + n0;
        for (uint32_t j = 0; j < nb; j++)
            crow[j] += av * brow[j];
    }
}

void nm_matmul_f32(float *restrict c, const float *restrict a, const float *restrict b, uint32_t m,
                   uint32_t n, uint32_t k, bool accumulate) {
    if (!accumulate)
        memset(c, 0, sizeof(float) * m * n);
    for (uint32_t n0 = 0; n0 < n; n0 += MM_NB) {
        uint32_t nb = n - n0 < MM_NB ? n - n0 : MM_NB;
        uint32_t mi = 0;
        for (; mi + MM_MR <= m; mi += MM_MR)
            mm_rows(c, a, b, mi, m, n, k, n0, nb);
        for (; mi < m; mi++)
            mm_row(c, a, b, mi, m, n, k, n0, nb);
    }
}

static bool mm_dtype(uint32_t dt) {
    return dt == NEURON_DT_FP32 || dt == NEURON_DT_BF16 || dt == NEURON_DT_FP16;
}

void nm_exec_matmul(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d, s, mv;
    nm_core *core = ex->core;

    if ((in->flags & ~NEURON_MM_F_ACCUMULATE) || in->func || in->func2 || in->arg || in->imm[0] ||
        in->imm[1]) {
        r->status = NEURON_JOB_STATUS_DECODE;
        return;
    }
    if ((r->status =
             nm_tap_decode(ex, &in->op[NEURON_INSN_DST], 1u << NEURON_SPACE_PSUM, false, &d)) ||
        (r->status =
             nm_tap_decode(ex, &in->op[NEURON_INSN_SRC0], 1u << NEURON_SPACE_SBUF, false, &s)) ||
        (r->status =
             nm_tap_decode(ex, &in->op[NEURON_INSN_SRC1], 1u << NEURON_SPACE_SBUF, false, &mv)))
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

    for (uint32_t kk = 0; kk < K; kk++) {
        nm_tap_load(&s, kk, core->mm_a + (size_t)kk * M);
        nm_tap_load(&mv, kk, core->mm_b + (size_t)kk * N);
    }
    bool acc = in->flags & NEURON_MM_F_ACCUMULATE;
    if (acc)
        for (uint32_t mi = 0; mi < M; mi++)
            nm_tap_load(&d, mi, core->mm_c + (size_t)mi * N);
    nm_matmul_f32(core->mm_c, core->mm_a, core->mm_b, M, N, K, acc);
    for (uint32_t mi = 0; mi < M; mi++)
        nm_tap_store(&d, mi, core->mm_c + (size_t)mi * N);
    nm_mark_dirty(ex, &d);

    bool fp32 = s.dtype == NEURON_DT_FP32 || mv.dtype == NEURON_DT_FP32;
    r->flops = 2ull * M * N * K;
    r->cycles = NM_COST_ISSUE + (uint64_t)N * (fp32 ? NM_MM_FP32_FACTOR : 1);
}

void nm_exec_transpose(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    const unsigned both = (1u << NEURON_SPACE_SBUF) | (1u << NEURON_SPACE_PSUM);
    nm_tap d, s;
    nm_core *core = ex->core;

    if (in->flags || in->func || in->func2 || in->arg || in->imm[0] || in->imm[1] ||
        !nm_tap_is_zero(&in->op[NEURON_INSN_SRC1])) {
        r->status = NEURON_JOB_STATUS_DECODE;
        return;
    }
    if ((r->status = nm_tap_decode(ex, &in->op[NEURON_INSN_DST], both, false, &d)) ||
        (r->status = nm_tap_decode(ex, &in->op[NEURON_INSN_SRC0], both, false, &s)))
        return;
    uint32_t P = s.part_count, F = s.elems;
    if (d.part_count != F || d.elems != P) {
        r->status = NEURON_JOB_STATUS_SHAPE;
        return;
    }
    if (s.dtype == d.dtype) {
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
