// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every instruction and data type of the ISA against plain references
 * written here, independently of the model: conversions, DMA access
 * patterns, matmul, transpose, activation, tensor-tensor, tensor-scalar,
 * reductions, copy, memset, iota, semaphores, loops, host SG bindings,
 * counters and job isolation.
 */
#include <float.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "testutil.h"

#define RW (NEURON_BIND_READ | NEURON_BIND_WRITE)

static uint32_t esz(uint8_t dt) {
    return NEURON_DT_SIZE(dt);
}

/* A device buffer holding @n values as @dt. */
static uint32_t in_buf(tenv *t, uint8_t dt, const float *v, size_t n) {
    uint8_t *ptr;
    uint32_t slot = te_buffer(t, n * esz(dt), NEURON_BIND_READ, &ptr);
    tu_pack(dt, ptr, v, n);
    return slot;
}

static uint32_t out_buf(tenv *t, size_t bytes, uint8_t **ptr) {
    return te_buffer(t, bytes, NEURON_BIND_WRITE, ptr);
}

/* DMA a contiguous [P, F] array between a binding and SBUF. */
static void ld(pb_prog *p, uint32_t slot, uint8_t dt, uint32_t P, uint32_t F, uint32_t off) {
    pb_dma(p, true, pb_sbuf(dt, 0, P, off, F), slot, 0, F * esz(dt), esz(dt), 0);
}

static void st(pb_prog *p, uint32_t slot, uint8_t dt, uint32_t P, uint32_t F, uint32_t off) {
    pb_dma(p, false, pb_sbuf(dt, 0, P, off, F), slot, 0, F * esz(dt), esz(dt), 0);
}

/* @from signals @sem, @to waits for it (and consumes it). */
static void handoff(pb_prog *p, int from, int to, uint8_t sem) {
    pb_signal(p, from, sem, 1);
    pb_wait(p, to, sem, 1, true);
}

static void fill(float *v, size_t n, uint64_t seed, float scale) {
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++)
        v[i] = tu_uniform(&s) * scale;
}

/* ---- conversions ---- */

static void test_convert(void **state) {
    (void)state;
    enum { N = 256 };
    float v[N];
    fill(v, N, 7, 1000.0f);
    const float special[] = {0.0f,
                             -0.0f,
                             1.0f,
                             -1.0f,
                             INFINITY,
                             -INFINITY,
                             NAN,
                             1.00390625f /* bf16 tie, to even */,
                             1.01171875f /* tie, up */,
                             65504.0f,
                             65520.0f /* fp16: to inf */,
                             1e-8f /* fp16 subnormal */,
                             5.96e-8f,
                             3e-8f,
                             -2.5f,
                             2147483647.0f,
                             -3e9f,
                             3e9f,
                             0.5f,
                             1.5f,
                             2.5f /* int ties to even */,
                             1e-40f /* fp32 subnormal */};
    memcpy(v, special, sizeof(special));

    const uint8_t dts[] = {NEURON_DT_BF16, NEURON_DT_FP16, NEURON_DT_INT32};
    for (size_t k = 0; k < 3; k++) {
        uint8_t dt = dts[k];
        tenv *t = te_new();
        pb_prog p;
        pb_init(&p);
        uint32_t in = in_buf(t, NEURON_DT_FP32, v, N);
        uint8_t *out, *back;
        uint32_t o = out_buf(t, N * esz(dt), &out);
        uint32_t ob = out_buf(t, N * 4, &back);
        ld(&p, in, NEURON_DT_FP32, 2, N / 2, 0);
        handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_SCALAR, 0);
        pb_copy(&p, NEURON_ENGINE_SCALAR, pb_sbuf(dt, 0, 2, 4096, N / 2),
                pb_sbuf(NEURON_DT_FP32, 0, 2, 0, N / 2));
        pb_copy(&p, NEURON_ENGINE_SCALAR, pb_sbuf(NEURON_DT_FP32, 0, 2, 8192, N / 2),
                pb_sbuf(dt, 0, 2, 4096, N / 2));
        handoff(&p, NEURON_ENGINE_SCALAR, NEURON_ENGINE_SYNC, 1);
        st(&p, o, dt, 2, N / 2, 4096);
        st(&p, ob, NEURON_DT_FP32, 2, N / 2, 8192);
        pb_end_all(&p);
        assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);

        for (int i = 0; i < N; i++) {
            float x = v[i], b;
            memcpy(&b, back + 4 * i, 4);
            if (dt == NEURON_DT_INT32) {
                int32_t got, want;
                memcpy(&got, out + 4 * i, 4);
                if (isnan(x))
                    want = 0;
                else if (x >= 2147483648.0f)
                    want = INT32_MAX;
                else if (x <= -2147483648.0f)
                    want = INT32_MIN;
                else
                    want = (int32_t)nearbyint(x);
                assert_int_equal(got, want);
                assert_true(b == (float)want);
                continue;
            }
            uint16_t got, want = dt == NEURON_DT_BF16 ? tu_bf16(x) : tu_f16(x);
            memcpy(&got, out + 2 * i, 2);
            if (isnan(x)) {
                assert_true(isnan(b));
                continue;
            }
            if (got != want)
                fail_msg("dtype %u value %a: got %#x want %#x", dt, (double)x, got, want);
            float wb = dt == NEURON_DT_BF16 ? tu_from_bf16(want) : tu_from_f16(want);
            assert_memory_equal(&b, &wb, 4);
        }
        pb_free(&p);
        te_free(t);
    }
}

/* ---- DMA access patterns ---- */

static void test_dma_patterns(void **state) {
    (void)state;
    const uint8_t dts[] = {NEURON_DT_FP32, NEURON_DT_BF16, NEURON_DT_FP16, NEURON_DT_INT32};
    for (size_t k = 0; k < 4; k++) {
        uint8_t dt = dts[k];
        uint32_t es = esz(dt);
        tenv *t = te_new();
        pb_prog p;
        pb_init(&p);
        /* Source: 4096 elements of distinct bit patterns. */
        uint8_t *src, *dst;
        uint32_t in = te_buffer(t, 4096 * es, NEURON_BIND_READ, &src);
        for (uint32_t i = 0; i < 4096 * es; i++)
            src[i] = (uint8_t)(i * 37 + 11);
        uint32_t out = out_buf(t, 5 * 21 * es, &dst);
        /*
         * Load partitions 3..7: element (p, j1, j0) from
         * 8 + p*600 + j1*100 + j0*3 (elements), into SBUF offset 64 with
         * strides 2 (inner) and 20 (outer); store back densely.
         */
        uint32_t P = 5, c0 = 7, c1 = 3;
        pb_dma(&p, true, pb_tap2(NEURON_SPACE_SBUF, dt, 3, P, 64, c0, 2, c1, 20), in, 8 * es,
               600 * es, 3 * es, 100 * es);
        pb_dma(&p, false, pb_tap2(NEURON_SPACE_SBUF, dt, 3, P, 64, c0, 2, c1, 20), out, 0, 21 * es,
               es, 7 * es);
        pb_end(&p, NEURON_ENGINE_SYNC);
        assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
        for (uint32_t pp = 0; pp < P; pp++)
            for (uint32_t j1 = 0; j1 < c1; j1++)
                for (uint32_t j0 = 0; j0 < c0; j0++) {
                    uint32_t s = 8 + pp * 600 + j1 * 100 + j0 * 3;
                    uint32_t d = pp * 21 + j1 * 7 + j0;
                    assert_memory_equal(dst + d * es, src + s * es, es);
                }
        assert_int_equal(t->job.dma_bytes, 2ull * P * c0 * c1 * es);
        pb_free(&p);
        te_free(t);
    }
}

/* ---- matmul ---- */

static void check_matmul(uint8_t dt, uint32_t K, uint32_t M, uint32_t N, bool twice) {
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    float *a = malloc(sizeof(float) * K * M), *b = malloc(sizeof(float) * K * N);
    float *a2 = malloc(sizeof(float) * K * M);
    fill(a, K * M, 11 + dt, 2.0f);
    fill(b, K * N, 13 + dt, 3.0f);
    fill(a2, K * M, 17 + dt, 1.0f);
    uint32_t sa = in_buf(t, dt, a, K * M), sb = in_buf(t, dt, b, K * N);
    uint32_t sa2 = in_buf(t, dt, a2, K * M);
    uint8_t *out;
    uint32_t so = out_buf(t, 4ull * M * N, &out);

    ld(&p, sa, dt, K, M, 0);
    ld(&p, sb, dt, K, N, 1024);
    ld(&p, sa2, dt, K, M, 4096);
    handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_TENSOR, 0);
    /* Bank 3 of PSUM; the second matmul accumulates a2^T b. */
    uint32_t bank = 3 * NEURON_PSUM_BANK_SIZE;
    pb_matmul(&p, pb_psum(NEURON_DT_FP32, 0, M, bank, N), pb_sbuf(dt, 0, K, 0, M),
              pb_sbuf(dt, 0, K, 1024, N), false);
    if (twice)
        pb_matmul(&p, pb_psum(NEURON_DT_FP32, 0, M, bank, N), pb_sbuf(dt, 0, K, 4096, M),
                  pb_sbuf(dt, 0, K, 1024, N), true);
    handoff(&p, NEURON_ENGINE_TENSOR, NEURON_ENGINE_VECTOR, 1);
    pb_copy(&p, NEURON_ENGINE_VECTOR, pb_sbuf(NEURON_DT_FP32, 0, M, 8192, N),
            pb_psum(NEURON_DT_FP32, 0, M, bank, N));
    handoff(&p, NEURON_ENGINE_VECTOR, NEURON_ENGINE_SYNC, 2);
    st(&p, so, NEURON_DT_FP32, M, N, 8192);
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    assert_int_equal(t->job.flops, (twice ? 4ull : 2ull) * M * N * K);

    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++) {
            double ref = 0, mag = 0;
            for (uint32_t k = 0; k < K; k++) {
                double x = (double)tu_round(dt, a[k * M + m]) * tu_round(dt, b[k * N + n]);
                if (twice)
                    x += (double)tu_round(dt, a2[k * M + m]) * tu_round(dt, b[k * N + n]);
                ref += x;
                mag += fabs(x);
            }
            float got;
            memcpy(&got, out + 4 * ((size_t)m * N + n), 4);
            if (!(fabs(got - ref) <= 1e-5 * mag + 1e-6))
                fail_msg("dt %u [%u,%u]: got %g want %g", dt, m, n, (double)got, ref);
        }
    free(a);
    free(b);
    free(a2);
    pb_free(&p);
    te_free(t);
}

static void test_matmul(void **state) {
    (void)state;
    const uint8_t dts[] = {NEURON_DT_FP32, NEURON_DT_BF16, NEURON_DT_FP16};
    for (size_t i = 0; i < 3; i++) {
        check_matmul(dts[i], 77, 45, 300, true);
        check_matmul(dts[i], 128, 128, 512, false);
        check_matmul(dts[i], 1, 1, 1, true);
        check_matmul(dts[i], 128, 7, 33, false);
    }
}

/* ---- transpose ---- */

static void test_transpose(void **state) {
    (void)state;
    enum { P = 100, F = 37 };
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    float v[P * F];
    fill(v, P * F, 5, 8.0f);
    uint32_t in32 = in_buf(t, NEURON_DT_FP32, v, P * F);
    uint32_t in16 = in_buf(t, NEURON_DT_BF16, v, P * F);
    uint8_t *o1, *o2;
    uint8_t *o3, *o4;
    uint32_t s1 = out_buf(t, 4 * P * F, &o1), s2 = out_buf(t, 4 * P * F, &o2);
    uint32_t s3 = out_buf(t, 2 * P * F, &o3), s4 = out_buf(t, 4 * P * F, &o4);
    ld(&p, in32, NEURON_DT_FP32, P, F, 0);
    ld(&p, in16, NEURON_DT_BF16, P, F, 1024);
    handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_TENSOR, 0);
    /* Same type, SBUF -> SBUF; bf16 SBUF -> fp32 PSUM. */
    pb_transpose(&p, pb_sbuf(NEURON_DT_FP32, 0, F, 2048, P), pb_sbuf(NEURON_DT_FP32, 0, P, 0, F));
    pb_transpose(&p, pb_psum(NEURON_DT_FP32, 0, F, 0, P), pb_sbuf(NEURON_DT_BF16, 0, P, 1024, F));
    /* Same type bf16; then fp32 onto itself, shifted by 16 elements. */
    pb_transpose(&p, pb_sbuf(NEURON_DT_BF16, 0, F, 6144, P),
                 pb_sbuf(NEURON_DT_BF16, 0, P, 1024, F));
    pb_transpose(&p, pb_sbuf(NEURON_DT_FP32, 0, F, 64, P), pb_sbuf(NEURON_DT_FP32, 0, P, 0, F));
    handoff(&p, NEURON_ENGINE_TENSOR, NEURON_ENGINE_VECTOR, 1);
    pb_copy(&p, NEURON_ENGINE_VECTOR, pb_sbuf(NEURON_DT_FP32, 0, F, 4096, P),
            pb_psum(NEURON_DT_FP32, 0, F, 0, P));
    handoff(&p, NEURON_ENGINE_VECTOR, NEURON_ENGINE_SYNC, 2);
    st(&p, s1, NEURON_DT_FP32, F, P, 2048);
    st(&p, s2, NEURON_DT_FP32, F, P, 4096);
    st(&p, s3, NEURON_DT_BF16, F, P, 6144);
    st(&p, s4, NEURON_DT_FP32, F, P, 64);
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    for (int f = 0; f < F; f++)
        for (int q = 0; q < P; q++) {
            float g1, g2, w2 = tu_round(NEURON_DT_BF16, v[q * F + f]);
            memcpy(&g1, o1 + 4 * (f * P + q), 4);
            memcpy(&g2, o2 + 4 * (f * P + q), 4);
            assert_true(g1 == v[q * F + f]);
            assert_true(g2 == w2);
            uint16_t h3;
            float g4;
            memcpy(&h3, o3 + 2 * (f * P + q), 2);
            memcpy(&g4, o4 + 4 * (f * P + q), 4);
            uint32_t u3 = (uint32_t)h3 << 16;
            float g3;
            memcpy(&g3, &u3, 4);
            assert_true(g3 == w2);
            assert_true(g4 == v[q * F + f]);
        }
    pb_free(&p);
    te_free(t);
}

/* ---- activation ---- */

static double ref_act(uint8_t f, double x) {
    switch (f) {
    case NEURON_ACT_IDENTITY:
        return x;
    case NEURON_ACT_RELU:
        return x < 0 ? 0 : x;
    case NEURON_ACT_GELU_TANH:
        return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case NEURON_ACT_GELU:
        return 0.5 * x * (1 + erf(x / sqrt(2)));
    case NEURON_ACT_SIGMOID:
        return 1 / (1 + exp(-x));
    case NEURON_ACT_TANH:
        return tanh(x);
    case NEURON_ACT_EXP:
        return exp(x);
    case NEURON_ACT_SILU:
        return x / (1 + exp(-x));
    }
    return NAN;
}

static void test_activation(void **state) {
    (void)state;
    enum { P = 64, F = 50 };
    float x[P * F], bias[P];
    fill(x, P * F, 21, 4.0f);
    fill(bias, P, 23, 1.0f);
    const uint8_t outs[] = {NEURON_DT_FP32, NEURON_DT_BF16, NEURON_DT_FP16};
    /* ISA 1.0's functions; rsqrt and reciprocal (1.1): test_isa11.c. */
    for (uint8_t f = NEURON_ACT_IDENTITY; f < NEURON_ACT_COUNT_1_0; f++)
        for (size_t k = 0; k < 3; k++) {
            uint8_t odt = outs[k];
            tenv *t = te_new();
            pb_prog p;
            pb_init(&p);
            uint32_t sx = in_buf(t, NEURON_DT_FP32, x, P * F);
            uint32_t sb = in_buf(t, NEURON_DT_FP32, bias, P);
            uint8_t *out;
            uint32_t so = out_buf(t, P * F * esz(odt), &out);
            ld(&p, sx, NEURON_DT_FP32, P, F, 0);
            ld(&p, sb, NEURON_DT_FP32, P, 1, 512);
            handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_SCALAR, 0);
            pb_activate(&p, f, pb_sbuf(odt, 0, P, 1024, F), pb_sbuf(NEURON_DT_FP32, 0, P, 0, F),
                        pb_sbuf(NEURON_DT_FP32, 0, P, 512, 1), 0.75f, 0.25f);
            handoff(&p, NEURON_ENGINE_SCALAR, NEURON_ENGINE_SYNC, 1);
            st(&p, so, odt, P, F, 1024);
            pb_end_all(&p);
            assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
            float got[P * F];
            tu_unpack(odt, got, out, P * F);
            for (int q = 0; q < P; q++)
                for (int i = 0; i < F; i++) {
                    double z = (double)x[q * F + i] * 0.75 + ((double)bias[q] + 0.25);
                    double want = ref_act(f, z);
                    if (!tu_close(got[q * F + i], want, tu_rtol(odt),
                                  odt == NEURON_DT_FP32 ? 1e-6 : 1e-3))
                        fail_msg("act %u dt %u x %g: got %.9g want %.9g", f, odt, z,
                                 (double)got[q * F + i], want);
                }
            assert_int_equal(t->job.flops, (uint64_t)P * F);
            pb_free(&p);
            te_free(t);
        }
}

/*
 * The functions the model evaluates without libm (emu/model/vector.c) over
 * a sweep of fp32 inputs: every 2^14th bit pattern with |x| < 128, of both
 * signs, then the special values, each held to hw/isa.md's tolerance
 * against the double-precision reference, and its infinities and NaNs
 * and the sign of its zeros checked; sigmoid, tanh, exp and silu are
 * held to a few ulp as well, which a formula that cancels (1 - e^-2x for
 * tanh's small inputs) does not meet.
 */
static double ref_gelu_erf(double z) {
    return 0.5 * z * erfc(-z / sqrt(2.0));
}

/* 0.5 z (1 + tanh(u)) = z / (1 + e^-2u): without 1 + tanh(u)'s cancellation in double. */
static double ref_tanh_form(double z) {
    return z / (1 + exp(-2 * sqrt(2 / 3.14159265358979323846) * (z + 0.044715 * z * z * z)));
}

static double ref_sigmoid(double z) {
    return ref_act(NEURON_ACT_SIGMOID, z);
}

static double ref_silu(double z) {
    return ref_act(NEURON_ACT_SILU, z);
}

/*
 * max_ulps: the model's own bound on results of at least 1e-30 (its
 * comments in emu/model/vector.c), tighter than the ISA's; none for the
 * GELU forms, whose far negative tails take the rounding of their fp32
 * argument into an exponential (tens of ulp, still within the ISA's).
 */
static const struct {
    uint8_t func;
    const char *name;
    double (*ref)(double);
    double max_ulps;
} swept[] = {
    {NEURON_ACT_GELU, "gelu", ref_gelu_erf, INFINITY},
    {NEURON_ACT_GELU_TANH, "gelu_tanh", ref_tanh_form, INFINITY},
    {NEURON_ACT_SIGMOID, "sigmoid", ref_sigmoid, 4},
    {NEURON_ACT_TANH, "tanh", tanh, 4},
    {NEURON_ACT_EXP, "exp", exp, 3},
    {NEURON_ACT_SILU, "silu", ref_silu, 4},
};

static void test_activation_sweep(void **state) {
    (void)state;
    enum { P = 128, F = 2048, N = P * F };
    const float specials[] = {NAN,     INFINITY, -INFINITY, 0.0f,   -0.0f,   1e-40f,
                              -1e-40f, 88.7f,    89.0f,     -87.5f, -103.9f, -104.5f};
    const size_t nspecial = sizeof(specials) / sizeof(specials[0]);
    float *x = malloc(N * sizeof(float));
    assert_non_null(x);
    size_t n = 0;
    for (uint32_t u = 0; u < 0x43000000u; u += 1u << 14) {
        const uint32_t negative = u | 0x80000000u;
        memcpy(&x[n++], &u, 4);
        memcpy(&x[n++], &negative, 4);
    }
    memcpy(&x[n], specials, sizeof(specials));
    n += nspecial;
    assert_true(n <= N);
    fill(x + n, N - n, 29, 8.0f);
    const float zero = 0.0f;

    for (size_t fi = 0; fi < sizeof(swept) / sizeof(swept[0]); fi++) {
        tenv *t = te_new();
        pb_prog p;
        pb_init(&p);
        uint32_t sx = in_buf(t, NEURON_DT_FP32, x, N);
        uint32_t sz = in_buf(t, NEURON_DT_FP32, &zero, 1);
        uint8_t *out;
        uint32_t so = out_buf(t, N * 4, &out);
        ld(&p, sx, NEURON_DT_FP32, P, F, 0);
        pb_dma(&p, true, pb_sbuf(NEURON_DT_FP32, 0, P, 4 * F, 1), sz, 0, 0, 4, 0);
        handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_SCALAR, 0);
        pb_activate(&p, swept[fi].func, pb_sbuf(NEURON_DT_FP32, 0, P, 0, F),
                    pb_sbuf(NEURON_DT_FP32, 0, P, 0, F), pb_sbuf(NEURON_DT_FP32, 0, P, 4 * F, 1),
                    1.0f, 0.0f);
        handoff(&p, NEURON_ENGINE_SCALAR, NEURON_ENGINE_SYNC, 1);
        st(&p, so, NEURON_DT_FP32, P, F, 0);
        pb_end_all(&p);
        assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);

        double worst = 0, worst_ulps = 0, worst_x = 0;
        for (size_t i = 0; i < N; i++) {
            float got;
            memcpy(&got, out + 4 * i, 4);
            const float z = x[i] * 1.0f + 0.0f; /* ACTIVATE's argument: -0 becomes +0 */
            const double want = swept[fi].ref(z);
            if (isnan(want) || isinf(want) || fabs(want) > FLT_MAX) {
                const float w = (float)want;
                if (isnan(w) ? !isnan(got) : got != w)
                    fail_msg("%s(%g): got %g want %g", swept[fi].name, (double)x[i], (double)got,
                             want);
                continue;
            }
            const double tol = 1e-5 * fabs(want) + 1e-6;
            if (!(fabs(got - want) <= tol))
                fail_msg("%s(%.9g): got %.9g want %.9g", swept[fi].name, (double)x[i], (double)got,
                         want);
            if (want == 0 && !signbit(got) != !signbit(want))
                fail_msg("%s(%g): got %g, with the wrong sign", swept[fi].name, (double)x[i],
                         (double)got);
            worst = fmax(worst, fabs(got - want) / tol);
            const double ulp = ldexp(1.0, fabs(want) < FLT_MIN ? -149 : ilogb(want) - 23);
            if (fabs(got - want) / ulp > worst_ulps && fabs(want) >= 1e-30) {
                worst_ulps = fabs(got - want) / ulp;
                worst_x = x[i];
            }
        }
        print_message("%s: %zu inputs swept, worst error %.3f of the tolerance, %.2f ulp at %g\n",
                      swept[fi].name, n, worst, worst_ulps, worst_x);
        if (!(worst_ulps <= swept[fi].max_ulps))
            fail_msg("%s(%g): %.2f ulp off, more than %g", swept[fi].name, worst_x, worst_ulps,
                     swept[fi].max_ulps);
        pb_free(&p);
        te_free(t);
    }
    free(x);
}

/* ---- elementwise ---- */

static void test_tensor_tensor(void **state) {
    (void)state;
    enum { P = 128, F = 40 };
    float a[P * F], b[P * F];
    fill(a, P * F, 31, 10.0f);
    fill(b, P * F, 37, 10.0f);
    /* a: bf16, b: fp32, out: fp32 and fp16. */
    const uint8_t outs[] = {NEURON_DT_FP32, NEURON_DT_FP16};
    for (uint8_t op = NEURON_ALU_ADD; op < NEURON_ALU_COUNT; op++)
        for (size_t k = 0; k < 2; k++) {
            uint8_t odt = outs[k];
            tenv *t = te_new();
            pb_prog p;
            pb_init(&p);
            uint32_t sa = in_buf(t, NEURON_DT_BF16, a, P * F),
                     sb = in_buf(t, NEURON_DT_FP32, b, P * F);
            uint8_t *out;
            uint32_t so = out_buf(t, P * F * esz(odt), &out);
            ld(&p, sa, NEURON_DT_BF16, P, F, 0);
            ld(&p, sb, NEURON_DT_FP32, P, F, 256);
            handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_VECTOR, 0);
            /* Into PSUM, then back to SBUF. */
            pb_tt(&p, op, pb_psum(odt, 0, P, 64, F), pb_sbuf(NEURON_DT_BF16, 0, P, 0, F),
                  pb_sbuf(NEURON_DT_FP32, 0, P, 256, F));
            pb_copy(&p, NEURON_ENGINE_VECTOR, pb_sbuf(odt, 0, P, 1024, F),
                    pb_psum(odt, 0, P, 64, F));
            handoff(&p, NEURON_ENGINE_VECTOR, NEURON_ENGINE_SYNC, 1);
            st(&p, so, odt, P, F, 1024);
            pb_end_all(&p);
            assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
            float got[P * F];
            tu_unpack(odt, got, out, P * F);
            for (int i = 0; i < P * F; i++) {
                float want = tu_round(odt, tu_ref_alu(op, tu_round(NEURON_DT_BF16, a[i]), b[i]));
                if (memcmp(&got[i], &want, 4))
                    fail_msg("op %u dt %u [%d]: got %g want %g", op, odt, i, (double)got[i],
                             (double)want);
            }
            pb_free(&p);
            te_free(t);
        }
}

static void test_tensor_scalar(void **state) {
    (void)state;
    enum { P = 32, F = 64 };
    float x[P * F], sc[P];
    fill(x, P * F, 41, 5.0f);
    fill(sc, P, 43, 3.0f);
    struct {
        uint8_t op0, op1, flags;
        bool per_part;
        int engine;
    } cases[] = {
        {NEURON_ALU_ADD, NEURON_ALU_NONE, 0, false, NEURON_ENGINE_VECTOR},
        {NEURON_ALU_SUB, NEURON_ALU_MUL, NEURON_TS_F_REVERSE0, false, NEURON_ENGINE_SCALAR},
        {NEURON_ALU_MUL, NEURON_ALU_SUB, NEURON_TS_F_REVERSE1, true, NEURON_ENGINE_VECTOR},
        {NEURON_ALU_MAX, NEURON_ALU_MIN, 0, false, NEURON_ENGINE_SCALAR},
        {NEURON_ALU_DIV, NEURON_ALU_ADD, NEURON_TS_F_REVERSE0 | NEURON_TS_F_REVERSE1, true,
         NEURON_ENGINE_VECTOR},
        {NEURON_ALU_MIN, NEURON_ALU_DIV, 0, true, NEURON_ENGINE_SCALAR},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        tenv *t = te_new();
        pb_prog p;
        pb_init(&p);
        uint32_t sx = in_buf(t, NEURON_DT_FP32, x, P * F), ss = in_buf(t, NEURON_DT_FP32, sc, P);
        uint8_t *out;
        uint32_t so = out_buf(t, P * F * 4, &out);
        ld(&p, sx, NEURON_DT_FP32, P, F, 0);
        ld(&p, ss, NEURON_DT_FP32, P, 1, 512);
        handoff(&p, NEURON_ENGINE_SYNC, cases[c].engine, 0);
        struct neuron_tap none;
        memset(&none, 0, sizeof(none));
        const float s1 = 1.5f, s2 = -0.75f;
        pb_ts(&p, cases[c].engine, cases[c].op0, cases[c].op1, cases[c].flags,
              pb_sbuf(NEURON_DT_FP32, 0, P, 0, F), pb_sbuf(NEURON_DT_FP32, 0, P, 0, F),
              cases[c].per_part ? pb_sbuf(NEURON_DT_FP32, 0, P, 512, 1) : none, s1, s2);
        handoff(&p, cases[c].engine, NEURON_ENGINE_SYNC, 1);
        st(&p, so, NEURON_DT_FP32, P, F, 0);
        pb_end_all(&p);
        assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
        for (int q = 0; q < P; q++)
            for (int i = 0; i < F; i++) {
                float a = cases[c].per_part ? sc[q] : s1, v = x[q * F + i];
                v = cases[c].flags & NEURON_TS_F_REVERSE0 ? tu_ref_alu(cases[c].op0, a, v)
                                                          : tu_ref_alu(cases[c].op0, v, a);
                if (cases[c].op1)
                    v = cases[c].flags & NEURON_TS_F_REVERSE1 ? tu_ref_alu(cases[c].op1, s2, v)
                                                              : tu_ref_alu(cases[c].op1, v, s2);
                float got;
                memcpy(&got, out + 4 * (q * F + i), 4);
                if (memcmp(&got, &v, 4))
                    fail_msg("case %zu: got %g want %g", c, (double)got, (double)v);
            }
        pb_free(&p);
        te_free(t);
    }
}

static void test_reduce(void **state) {
    (void)state;
    enum { P = 128, F = 1000 };
    float *x = malloc(sizeof(float) * P * F);
    fill(x, P * F, 51, 7.0f);
    for (uint8_t f = NEURON_RED_SUM; f < NEURON_RED_COUNT; f++) {
        tenv *t = te_new();
        pb_prog p;
        pb_init(&p);
        uint32_t sx = in_buf(t, NEURON_DT_FP32, x, P * F);
        uint8_t *out;
        uint32_t so = out_buf(t, P * 4, &out);
        ld(&p, sx, NEURON_DT_FP32, P, F, 0);
        handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_VECTOR, 0);
        pb_reduce(&p, f, pb_sbuf(NEURON_DT_FP32, 0, P, 8192, 1),
                  pb_sbuf(NEURON_DT_FP32, 0, P, 0, F));
        handoff(&p, NEURON_ENGINE_VECTOR, NEURON_ENGINE_SYNC, 1);
        st(&p, so, NEURON_DT_FP32, P, 1, 8192);
        pb_end_all(&p);
        assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
        for (int q = 0; q < P; q++) {
            double ref = f == NEURON_RED_SUM ? 0 : x[q * F], mag = 0;
            for (int i = 0; i < F; i++) {
                double v = x[q * F + i];
                mag += fabs(v);
                if (f == NEURON_RED_SUM)
                    ref += v;
                else if (f == NEURON_RED_MAX)
                    ref = v > ref ? v : ref;
                else
                    ref = v < ref ? v : ref;
            }
            float got;
            memcpy(&got, out + 4 * q, 4);
            assert_true(fabs(got - ref) <= 1e-5 * mag);
        }
        pb_free(&p);
        te_free(t);
    }
    free(x);
}

/* REDUCE sum's order (hw/isa.md, section 6): 16 running sums, added pairwise. */
static float ref_sum16(const float *x, uint32_t n) {
    float lane[16] = {0};
    for (uint32_t i = 0; i < n; i++)
        lane[i % 16] += x[i];
    for (uint32_t w = 8; w; w /= 2)
        for (uint32_t l = 0; l < w; l++)
            lane[l] += lane[l + w];
    return lane[0];
}

/*
 * REDUCE sum bit for bit in that order: partition counts that do and do
 * not divide into the groups of rows the model sums together, rows with
 * and without a tail of fewer than 16 elements, and a destination one
 * partition below its source (each result lands in the next row's first
 * element, which that row's sum must then include).
 */
static void check_sum_order(uint32_t P, uint32_t F, bool chained) {
    const uint32_t rows = chained ? P + 1 : P;
    float *x = malloc(sizeof(float) * rows * F);
    assert_non_null(x);
    fill(x, (size_t)rows * F, 77 + F, 9.0f);
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    uint32_t sx = in_buf(t, NEURON_DT_FP32, x, (size_t)rows * F);
    uint8_t *out;
    uint32_t so = out_buf(t, 4ull * rows * (F + 1), &out); /* rows of F + 1: x and a result */
    ld(&p, sx, NEURON_DT_FP32, rows, F, 0);
    handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_VECTOR, 0);
    const struct neuron_tap dst =
        chained ? pb_sbuf(NEURON_DT_FP32, 1, P, 0, 1) : pb_sbuf(NEURON_DT_FP32, 0, P, 4 * F, 1);
    pb_reduce(&p, NEURON_RED_SUM, dst, pb_sbuf(NEURON_DT_FP32, 0, P, 0, F));
    handoff(&p, NEURON_ENGINE_VECTOR, NEURON_ENGINE_SYNC, 1);
    st(&p, so, NEURON_DT_FP32, rows, F + 1, 0);
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    for (uint32_t q = 0; q < P; q++) {
        const float want = ref_sum16(x + (size_t)q * F, F);
        if (chained)
            x[(size_t)(q + 1) * F] = want;
        float got;
        memcpy(&got, out + 4ull * (chained ? (q + 1) * (F + 1) : q * (F + 1) + F), 4);
        if (memcmp(&got, &want, 4))
            fail_msg("P %u F %u chained %d: partition %u: got %a want %a", P, F, chained, q,
                     (double)got, (double)want);
    }
    pb_free(&p);
    te_free(t);
    free(x);
}

static void test_reduce_sum_order(void **state) {
    (void)state;
    static const uint32_t ps[] = {1, 3, 4, 127, 128}, fs[] = {1, 15, 16, 1000, 2048};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
        for (size_t j = 0; j < sizeof(fs) / sizeof(fs[0]); j++)
            check_sum_order(ps[i], fs[j], false);
    check_sum_order(127, 1000, true);
    check_sum_order(9, 33, true);
}

/*
 * Destinations overlapping their sources: the same elements (in place),
 * and one element later or earlier in the row, where each source row must
 * be read before the destination row is written. @op: ACTIVATE on the
 * Scalar engine, TENSOR_TENSOR, TENSOR_SCALAR (two operators), or a
 * same-dtype COPY (one run of bytes per partition, which the model moves
 * at once).
 */
enum overlap_op { OV_ACTIVATE, OV_TENSOR_TENSOR, OV_TENSOR_SCALAR, OV_COPY };

static void check_overlap(int32_t shift, enum overlap_op op) {
    static const char *const names[] = {"ACTIVATE", "TENSOR_TENSOR", "TENSOR_SCALAR", "COPY"};
    const bool tensor_tensor = op == OV_TENSOR_TENSOR;
    const uint32_t P = 4, F = 64, W = F + 2; /* a row of W elements, operands at 1 and 1 + shift */
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    float *v = malloc(sizeof(float) * P * W);
    fill(v, P * W, 41, 4.0f);
    uint32_t sv = in_buf(t, NEURON_DT_FP32, v, P * W);
    uint8_t *out;
    uint32_t so = out_buf(t, 4ull * P * W, &out);
    ld(&p, sv, NEURON_DT_FP32, P, W, 0);
    const struct neuron_tap src = pb_sbuf(NEURON_DT_FP32, 0, P, 4, F);
    const struct neuron_tap dst = pb_sbuf(NEURON_DT_FP32, 0, P, (uint32_t)(4 + 4 * shift), F);
    int engine = op == OV_ACTIVATE ? NEURON_ENGINE_SCALAR : NEURON_ENGINE_VECTOR;
    handoff(&p, NEURON_ENGINE_SYNC, engine, 0);
    if (tensor_tensor)
        pb_tt(&p, NEURON_ALU_ADD, dst, src, src);
    else if (op == OV_TENSOR_SCALAR)
        pb_ts(&p, NEURON_ENGINE_VECTOR, NEURON_ALU_SUB, NEURON_ALU_MUL, NEURON_TS_F_REVERSE0, dst,
              src, (struct neuron_tap){0}, 0.5f, 3.0f);
    else if (op == OV_COPY)
        pb_copy(&p, NEURON_ENGINE_VECTOR, dst, src);
    else
        pb_activate(&p, NEURON_ACT_IDENTITY, dst, src, (struct neuron_tap){0}, 2.0f, 1.0f);
    handoff(&p, engine, NEURON_ENGINE_SYNC, 1);
    st(&p, so, NEURON_DT_FP32, P, W, 0);
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    for (uint32_t pp = 0; pp < P; pp++)
        for (uint32_t j = 0; j < W; j++) {
            const float *row = v + (size_t)pp * W;
            int32_t i = (int32_t)j - 1 - shift; /* the source element written to j */
            float want = row[j];
            if (i >= 0 && i < (int32_t)F)
                want = op == OV_COPY            ? row[1 + i]
                       : tensor_tensor          ? row[1 + i] + row[1 + i]
                       : op == OV_TENSOR_SCALAR ? (0.5f - row[1 + i]) * 3.0f
                                                : row[1 + i] * 2.0f + 1.0f;
            float got;
            memcpy(&got, out + 4 * ((size_t)pp * W + j), 4);
            if (tu_bits(got) != tu_bits(want))
                fail_msg("shift %d %s [%u,%u]: got %g want %g", shift, names[op], pp, j,
                         (double)got, (double)want);
        }
    free(v);
    pb_free(&p);
    te_free(t);
}

static void test_overlap(void **state) {
    (void)state;
    for (int32_t shift = -1; shift <= 1; shift++) {
        check_overlap(shift, OV_ACTIVATE);
        check_overlap(shift, OV_TENSOR_TENSOR);
        check_overlap(shift, OV_TENSOR_SCALAR);
        check_overlap(shift, OV_COPY);
    }
}

static void test_copy_memset_iota(void **state) {
    (void)state;
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    enum { P = 16, F = 24 };
    float x[P * F];
    fill(x, P * F, 61, 100.0f);
    uint32_t sx = in_buf(t, NEURON_DT_FP32, x, P * F);
    uint8_t *o_copy, *o_ms[4], *o_iota_i, *o_iota_f, *o_iota_f32;
    uint32_t s_copy = out_buf(t, P * (F / 2) * 4, &o_copy);
    const uint8_t dts[] = {NEURON_DT_FP32, NEURON_DT_BF16, NEURON_DT_FP16, NEURON_DT_INT32};
    uint32_t s_ms[4];
    for (int i = 0; i < 4; i++)
        s_ms[i] = out_buf(t, P * F * esz(dts[i]), &o_ms[i]);
    uint32_t s_ii = out_buf(t, P * F * 4, &o_iota_i), s_if = out_buf(t, P * F * 2, &o_iota_f);
    uint32_t s_if32 = out_buf(t, P * F * 4, &o_iota_f32);

    ld(&p, sx, NEURON_DT_FP32, P, F, 0);
    handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_VECTOR, 0);
    /* Every other element, as a [2 x 6] pattern, SBUF -> SBUF. */
    pb_copy(&p, NEURON_ENGINE_VECTOR, pb_sbuf(NEURON_DT_FP32, 0, P, 1024, F / 2),
            pb_tap2(NEURON_SPACE_SBUF, NEURON_DT_FP32, 0, P, 0, 6, 2, 2, 12));
    /* memset 3.25 (fp32/bf16/fp16) and -7 (int32); iota. */
    for (int i = 0; i < 4; i++)
        pb_memset(&p, i % 2 ? NEURON_ENGINE_SCALAR : NEURON_ENGINE_VECTOR,
                  pb_sbuf(dts[i], 0, P, 2048 + 256 * i, F),
                  dts[i] == NEURON_DT_INT32 ? (uint32_t)-7 : pb_f32(3.25f));
    pb_iota(&p, pb_sbuf(NEURON_DT_INT32, 0, P, 4096, F), -5, 1000, -3);
    pb_iota(&p, pb_tap2(NEURON_SPACE_SBUF, NEURON_DT_BF16, 0, P, 8192, 4, 1, 6, 4), 7, 2, 1);
    /* contiguous fp32, beyond 2^24 (rounded to nearest even) */
    pb_iota(&p, pb_sbuf(NEURON_DT_FP32, 0, P, 10240, F), (1 << 24) - 9, 1 << 21, -1);
    pb_signal(&p, NEURON_ENGINE_VECTOR, 1, 1);
    pb_signal(&p, NEURON_ENGINE_SCALAR, 1, 1);
    pb_wait(&p, NEURON_ENGINE_SYNC, 1, 2, true);
    st(&p, s_copy, NEURON_DT_FP32, P, F / 2, 1024);
    for (int i = 0; i < 4; i++)
        st(&p, s_ms[i], dts[i], P, F, 2048 + 256 * i);
    st(&p, s_ii, NEURON_DT_INT32, P, F, 4096);
    st(&p, s_if, NEURON_DT_BF16, P, F, 8192);
    st(&p, s_if32, NEURON_DT_FP32, P, F, 10240);
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);

    for (int q = 0; q < P; q++) {
        for (int j = 0; j < F / 2; j++) {
            int j1 = j / 6, j0 = j % 6;
            float got;
            memcpy(&got, o_copy + 4 * (q * (F / 2) + j), 4);
            assert_true(got == x[q * F + j1 * 12 + j0 * 2]);
        }
        for (int j = 0; j < F; j++) {
            for (int i = 0; i < 4; i++) {
                float got;
                tu_unpack(dts[i], &got, o_ms[i] + (q * F + j) * esz(dts[i]), 1);
                assert_true(got == (dts[i] == NEURON_DT_INT32 ? -7.0f : 3.25f));
            }
            int32_t gi;
            memcpy(&gi, o_iota_i + 4 * (q * F + j), 4);
            assert_int_equal(gi, -5 + q * 1000 - 3 * j);
            float gf;
            tu_unpack(NEURON_DT_BF16, &gf, o_iota_f + 2 * (q * F + j), 1);
            assert_true(gf == tu_round(NEURON_DT_BF16, (float)(7 + 2 * q + j)));
            memcpy(&gf, o_iota_f32 + 4 * (q * F + j), 4);
            assert_true(gf == (float)((int64_t)(1 << 24) - 9 + ((int64_t)q << 21) - j));
        }
    }
    pb_free(&p);
    te_free(t);
}

/* ---- semaphores, loops, notify ---- */

static void test_semaphore_order(void **state) {
    (void)state;
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    /* A chain across all four engines, started by the last one scheduled. */
    pb_wait(&p, NEURON_ENGINE_TENSOR, 0, 1, false);
    pb_notify(&p, NEURON_ENGINE_TENSOR, 2);
    pb_signal(&p, NEURON_ENGINE_TENSOR, 1, 1);
    pb_wait(&p, NEURON_ENGINE_VECTOR, 2, 1, false);
    pb_notify(&p, NEURON_ENGINE_VECTOR, 4);
    pb_wait(&p, NEURON_ENGINE_SCALAR, 1, 1, false);
    pb_notify(&p, NEURON_ENGINE_SCALAR, 3);
    pb_signal(&p, NEURON_ENGINE_SCALAR, 2, 1);
    pb_notify(&p, NEURON_ENGINE_SYNC, 1);
    pb_signal(&p, NEURON_ENGINE_SYNC, 0, 1);
    /* Producer/consumer with DECREMENT: 5 tokens through semaphore 3. */
    uint32_t top = pb_here(&p, NEURON_ENGINE_SYNC);
    pb_signal(&p, NEURON_ENGINE_SYNC, 3, 1);
    pb_loop(&p, NEURON_ENGINE_SYNC, 0, top, 5);
    top = pb_here(&p, NEURON_ENGINE_VECTOR);
    pb_wait(&p, NEURON_ENGINE_VECTOR, 3, 1, true);
    pb_loop(&p, NEURON_ENGINE_VECTOR, 0, top, 5);
    pb_notify(&p, NEURON_ENGINE_VECTOR, 5);
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    assert_int_equal(t->nnotify, 5);
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(t->notify[i], i + 1);
    pb_free(&p);
    te_free(t);
}

static void test_loops(void **state) {
    (void)state;
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    /* outer x3 { notify 1; inner x2 { notify 2 } }, then a 1-iteration loop. */
    pb_nested_loops(&p, NEURON_ENGINE_SYNC);
    uint32_t once = pb_here(&p, NEURON_ENGINE_SYNC);
    pb_notify(&p, NEURON_ENGINE_SYNC, 3);
    pb_loop(&p, NEURON_ENGINE_SYNC, 0, once, 1);
    pb_end(&p, NEURON_ENGINE_SYNC);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    const uint32_t want[] = {1, 2, 2, 1, 2, 2, 1, 2, 2, 3};
    assert_int_equal(t->nnotify, 10);
    assert_memory_equal(t->notify, want, sizeof(want));
    /* 3 * (1 + 2*2 + 1) + 2 + 1 = 21 instructions. */
    assert_int_equal(t->job.instructions, 21);
    pb_free(&p);
    te_free(t);
}

/* ---- host SG bindings ---- */

static void test_sg_binding(void **state) {
    (void)state;
    enum { P = 8, F = 100 };
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    float x[P * F], y[P * F];
    fill(x, P * F, 71, 3.0f);
    /* Pieces of 102 bytes: elements straddle pieces. */
    uint32_t in = te_sg_buffer(t, sizeof(x), 102, NEURON_BIND_READ);
    uint32_t out = te_sg_buffer(t, sizeof(y), 1000, NEURON_BIND_WRITE);
    te_sg_copy(t, in, x, sizeof(x), false);
    ld(&p, in, NEURON_DT_FP32, P, F, 0);
    /* A strided load too: every 7th element of partition rows. */
    pb_dma(&p, true, pb_sbuf(NEURON_DT_FP32, 0, P, 1024, 10), in, 4, F * 4, 28, 0);
    handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_SCALAR, 0);
    pb_ts(&p, NEURON_ENGINE_SCALAR, NEURON_ALU_MUL, NEURON_ALU_NONE, 0,
          pb_sbuf(NEURON_DT_FP32, 0, P, 0, F), pb_sbuf(NEURON_DT_FP32, 0, P, 0, F),
          (struct neuron_tap){0}, 2.0f, 0);
    pb_copy(&p, NEURON_ENGINE_SCALAR, pb_sbuf(NEURON_DT_FP32, 0, P, 0, 10),
            pb_sbuf(NEURON_DT_FP32, 0, P, 1024, 10));
    handoff(&p, NEURON_ENGINE_SCALAR, NEURON_ENGINE_SYNC, 1);
    st(&p, out, NEURON_DT_FP32, P, F, 0);
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    te_sg_copy(t, out, y, sizeof(y), true);
    for (int q = 0; q < P; q++)
        for (int i = 0; i < F; i++) {
            float want = i < 10 ? x[q * F + 1 + 7 * i] : 2.0f * x[q * F + i];
            assert_true(y[q * F + i] == want);
        }
    pb_free(&p);
    te_free(t);
}

/* ---- counters, cost model, isolation ---- */

static void test_counters(void **state) {
    (void)state;
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    uint8_t *ptr;
    uint32_t s = te_buffer(t, 128 * 512 * 4, RW, &ptr);
    ld(&p, s, NEURON_DT_FP32, 128, 512, 0);  /* 262144 bytes: 64 + 4096 cycles */
    pb_signal(&p, NEURON_ENGINE_SYNC, 0, 1); /* 1 */
    pb_end(&p, NEURON_ENGINE_SYNC);          /* 1 */
    pb_wait(&p, NEURON_ENGINE_TENSOR, 0, 1, false);
    /* fp32, N = 512: 64 + 4 * 512 cycles; bf16 N = 100: 64 + 100. */
    pb_matmul(&p, pb_psum(NEURON_DT_FP32, 0, 128, 0, 512), pb_sbuf(NEURON_DT_FP32, 0, 128, 0, 128),
              pb_sbuf(NEURON_DT_FP32, 0, 128, 0, 512), false);
    pb_matmul(&p, pb_psum(NEURON_DT_FP32, 0, 64, 2048, 100), pb_sbuf(NEURON_DT_BF16, 0, 32, 0, 64),
              pb_sbuf(NEURON_DT_BF16, 0, 32, 0, 100), false);
    pb_end(&p, NEURON_ENGINE_TENSOR);
    pb_memset(&p, NEURON_ENGINE_VECTOR, pb_sbuf(NEURON_DT_FP32, 0, 128, 8192, 300), 0);
    pb_end(&p, NEURON_ENGINE_VECTOR);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    assert_int_equal(t->job.instructions, 9);
    assert_int_equal(t->job.flops, 2ull * 128 * 128 * 512 + 2ull * 64 * 100 * 32);
    assert_int_equal(t->job.dma_bytes, 128 * 512 * 4);
    /* Tensor: waits until the signal at 64 + 4096 + 1, then 1 + matmuls + end. */
    uint64_t tensor = (64 + 4096 + 1) + 1 + (64 + 4 * 512) + (64 + 100) + 1;
    assert_int_equal(t->job.cycles, tensor);
    pb_free(&p);
    te_free(t);
}

static void test_isolation(void **state) {
    (void)state;
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    uint8_t *ptr;
    uint32_t s = te_buffer(t, 64 * 4, RW, &ptr);
    pb_memset(&p, NEURON_ENGINE_VECTOR, pb_sbuf(NEURON_DT_FP32, 0, 128, 4000, 64), pb_f32(9.0f));
    pb_memset(&p, NEURON_ENGINE_VECTOR, pb_psum(NEURON_DT_FP32, 0, 128, 4000, 64), pb_f32(9.0f));
    pb_end(&p, NEURON_ENGINE_VECTOR);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    pb_free(&p);
    /* The next job finds zeros. */
    pb_init(&p);
    pb_copy(&p, NEURON_ENGINE_VECTOR, pb_sbuf(NEURON_DT_FP32, 0, 128, 0, 64),
            pb_psum(NEURON_DT_FP32, 0, 128, 4000, 64));
    pb_tt(&p, NEURON_ALU_ADD, pb_sbuf(NEURON_DT_FP32, 0, 128, 0, 64),
          pb_sbuf(NEURON_DT_FP32, 0, 128, 0, 64), pb_sbuf(NEURON_DT_FP32, 0, 128, 4000, 64));
    handoff(&p, NEURON_ENGINE_VECTOR, NEURON_ENGINE_SYNC, 0);
    pb_dma(&p, false, pb_sbuf(NEURON_DT_FP32, 127, 1, 0, 64), s, 0, 0, 4, 0);
    pb_end_all(&p);
    memset(ptr, 0xff, 64 * 4);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    for (int i = 0; i < 64 * 4; i++)
        assert_int_equal(ptr[i], 0);
    pb_free(&p);
    te_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convert),         cmocka_unit_test(test_dma_patterns),
        cmocka_unit_test(test_matmul),          cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_activation),      cmocka_unit_test(test_activation_sweep),
        cmocka_unit_test(test_tensor_tensor),   cmocka_unit_test(test_tensor_scalar),
        cmocka_unit_test(test_reduce),          cmocka_unit_test(test_reduce_sum_order),
        cmocka_unit_test(test_overlap),         cmocka_unit_test(test_copy_memset_iota),
        cmocka_unit_test(test_semaphore_order), cmocka_unit_test(test_loops),
        cmocka_unit_test(test_sg_binding),      cmocka_unit_test(test_counters),
        cmocka_unit_test(test_isolation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
