// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ISA 1.1 (hw/isa.md) against plain references written here: ACTIVATE
 * rsqrt and reciprocal (random bit patterns of every binade, and the
 * special values), the comparison ALU ops of TENSOR_TENSOR and
 * TENSOR_SCALAR (NaN, signed zeros, infinities), SELECT with a fill value
 * and with KEEP, causal and additive attention masks built on the device,
 * DMA_GATHER (embedding rows by int32 indices, its faults), and the decode
 * faults of the new encodings.
 */
#include <float.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "testutil.h"

#define F32 NEURON_DT_FP32
#define I32 NEURON_DT_INT32
#define BF16 NEURON_DT_BF16
#define V NEURON_ENGINE_VECTOR
#define S NEURON_ENGINE_SCALAR

/* SBUF byte offset of input k, and of the result. */
#define IN_OFF(k) ((uint32_t)(k)*4096u)
#define OUT_OFF 16384u

static uint32_t esz(uint8_t dt) {
    return NEURON_DT_SIZE(dt);
}

/* What one test program does between loading its inputs and storing the result. */
typedef void (*emit_fn)(pb_prog *p, const void *ctx);

/*
 * Loads @nin [P, F] arrays (fp32 values, stored as @in_dt[k]) into SBUF at
 * IN_OFF(k), runs @emit on @engine, stores SBUF OUT_OFF as [P, F] @odt
 * into @got (as fp32) and @raw (the bytes, if not NULL). Returns the status.
 */
static uint32_t run(int engine, uint32_t P, uint32_t F, const float *const *in,
                    const uint8_t *in_dt, int nin, uint8_t odt, emit_fn emit, const void *ctx,
                    float *got, void *raw, uint64_t *flops) {
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    for (int k = 0; k < nin; k++) {
        uint8_t *ptr;
        uint32_t slot = te_buffer(t, (uint64_t)P * F * esz(in_dt[k]), NEURON_BIND_READ, &ptr);
        tu_pack(in_dt[k], ptr, in[k], (size_t)P * F);
        pb_dma(&p, true, pb_sbuf(in_dt[k], 0, P, IN_OFF(k), F), slot, 0, F * esz(in_dt[k]),
               esz(in_dt[k]), 0);
    }
    uint8_t *out;
    uint32_t so = te_buffer(t, (uint64_t)P * F * esz(odt), NEURON_BIND_WRITE, &out);
    pb_signal(&p, NEURON_ENGINE_SYNC, 0, 1);
    pb_wait(&p, engine, 0, 1, true);
    emit(&p, ctx);
    pb_signal(&p, engine, 1, 1);
    pb_wait(&p, NEURON_ENGINE_SYNC, 1, 1, true);
    pb_dma(&p, false, pb_sbuf(odt, 0, P, OUT_OFF, F), so, 0, F * esz(odt), esz(odt), 0);
    pb_end_all(&p);
    uint32_t st = te_run(t, &p);
    if (st == NEURON_JOB_STATUS_OK) {
        tu_unpack(odt, got, out, (size_t)P * F);
        if (raw)
            memcpy(raw, out, (size_t)P * F * esz(odt));
    }
    if (flops)
        *flops = t->job.flops;
    pb_free(&p);
    te_free(t);
    return st;
}

static float bits_f32(uint32_t u) {
    return tu_f32(u);
}

/* Random fp32 bit patterns (every binade, subnormals, both signs); NaN excluded if !nan. */
static void random_bits(float *v, size_t n, uint64_t seed, bool negative, bool nan) {
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        do {
            u = tu_rand(&s);
            if (!negative)
                u &= 0x7fffffffu;
        } while (!nan && (u & 0x7f800000u) == 0x7f800000u);
        v[i] = bits_f32(u);
    }
}

/* ---- rsqrt and reciprocal ---- */

struct act_ctx {
    uint8_t func, odt;
    float scale, bias;
};

static void emit_act(pb_prog *p, const void *c) {
    const struct act_ctx *a = c;
    struct neuron_tap none;
    memset(&none, 0, sizeof(none));
    pb_activate(p, a->func, pb_sbuf(a->odt, 0, 128, OUT_OFF, 64), pb_sbuf(F32, 0, 128, 0, 64), none,
                a->scale, a->bias);
}

enum { AP = 128, AF = 64, AN = AP * AF };

/* Special inputs at the front of the test vector. */
static const uint32_t specials[] = {
    0x00000000u, /* +0 */
    0x80000000u, /* -0 */
    0x7f800000u, /* +inf */
    0xff800000u, /* -inf */
    0x7fc00000u, /* NaN */
    0xffc00001u, /* -NaN with payload */
    0x3f800000u, /* 1 */
    0x40800000u, /* 4 */
    0x3e800000u, /* 0.25 */
    0xbf800000u, /* -1 */
    0x00000001u, /* smallest subnormal */
    0x007fffffu, /* largest subnormal */
    0x00800000u, /* FLT_MIN */
    0x7f7fffffu, /* FLT_MAX */
    0x80000001u, /* -smallest subnormal */
    0x40000000u, /* 2 */
};
#define NSPECIAL (sizeof(specials) / sizeof(specials[0]))

static void test_rsqrt(void **state) {
    (void)state;
    static float x[AN], got[AN];
    random_bits(x, AN, 71, false, false);
    for (size_t i = 0; i < NSPECIAL; i++)
        x[i] = bits_f32(specials[i]);
    /* z = x * 1 + (-0) is x for every x, -0 included (+0 bias would make it +0). */
    const struct act_ctx c = {NEURON_ACT_RSQRT, F32, 1.0f, -0.0f};
    const float *in[] = {x};
    const uint8_t dt[] = {F32};
    uint64_t flops = 0;
    assert_int_equal(run(S, AP, AF, in, dt, 1, F32, emit_act, &c, got, NULL, &flops),
                     NEURON_JOB_STATUS_OK);
    assert_int_equal(flops, (uint64_t)AN);
    int rounded = 0, finite = 0;
    for (size_t i = 0; i < AN; i++) {
        const double ref = 1.0 / sqrt((double)x[i]);
        if (isnan(ref)) {
            if (!isnan(got[i]))
                fail_msg("rsqrt(%a): got %a, want NaN", (double)x[i], (double)got[i]);
            continue;
        }
        if (isinf(ref) || ref == 0) { /* +-0 -> +-inf, +inf -> +0: exact, with sign */
            if (tu_bits(got[i]) != tu_bits((float)ref))
                fail_msg("rsqrt(%a): got %a, want %a", (double)x[i], (double)got[i], ref);
            continue;
        }
        /* 1 ulp of the result's binade (hw/isa.md, section 6). */
        const double ulp = ldexp(1.0, ilogb(ref) - 23);
        if (fabs((double)got[i] - ref) > ulp)
            fail_msg("rsqrt(%a): got %a, want %a (more than 1 ulp)", (double)x[i], (double)got[i],
                     ref);
        rounded += got[i] == (float)ref;
        finite++;
    }
    /* The named special values. */
    assert_true(isinf(got[0]) && got[0] > 0);
    assert_true(isinf(got[1]) && got[1] < 0);
    assert_int_equal(tu_bits(got[2]), 0u);
    assert_true(isnan(got[3]) && isnan(got[4]) && isnan(got[5]) && isnan(got[9]));
    assert_true(got[6] == 1.0f && got[7] == 0.5f && got[8] == 2.0f);
    assert_true(isfinite(got[10]) && isnan(got[14]));
    print_message("rsqrt: %d of %d finite results correctly rounded\n", rounded, finite);
}

static void test_reciprocal(void **state) {
    (void)state;
    static float x[AN], got[AN];
    random_bits(x, AN, 73, true, true);
    for (size_t i = 0; i < NSPECIAL; i++)
        x[i] = bits_f32(specials[i]);
    const struct act_ctx c = {NEURON_ACT_RECIPROCAL, F32, 1.0f, -0.0f};
    const float *in[] = {x};
    const uint8_t dt[] = {F32};
    assert_int_equal(run(S, AP, AF, in, dt, 1, F32, emit_act, &c, got, NULL, NULL),
                     NEURON_JOB_STATUS_OK);
    for (size_t i = 0; i < AN; i++) {
        /* The double quotient rounded to fp32 is the correctly rounded fp32 quotient. */
        const float ref = (float)(1.0 / (double)x[i]);
        if (isnan(ref) ? !isnan(got[i]) : tu_bits(got[i]) != tu_bits(ref))
            fail_msg("reciprocal(%a): got %a, want %a", (double)x[i], (double)got[i], (double)ref);
    }
    assert_true(isinf(got[0]) && got[0] > 0);                         /* 1/+0 */
    assert_true(isinf(got[1]) && got[1] < 0);                         /* 1/-0 */
    assert_int_equal(tu_bits(got[2]), 0x00000000u);                   /* 1/+inf = +0 */
    assert_int_equal(tu_bits(got[3]), 0x80000000u);                   /* 1/-inf = -0 */
    assert_true(isinf(got[10]));                                      /* 1/2^-149 overflows */
    assert_true(got[13] != 0 && fpclassify(got[13]) == FP_SUBNORMAL); /* 1/FLT_MAX */
    assert_true(got[15] == 0.5f);
}

/* rsqrt(sum * (1/C) + eps), as layer_norm uses it, with bf16 and fp32 results. */
static void test_rsqrt_affine(void **state) {
    (void)state;
    static float x[AN], got[AN];
    uint64_t s = 79;
    for (size_t i = 0; i < AN; i++)
        x[i] = (tu_uniform(&s) + 1.0f) * 400.0f; /* sums of squares, >= 0 */
    x[0] = 0.0f;                                 /* a constant row: 1/sqrt(eps) */
    const uint8_t outs[] = {F32, BF16};
    for (size_t k = 0; k < 2; k++) {
        const struct act_ctx c = {NEURON_ACT_RSQRT, outs[k], 1.0f / 768.0f, 1e-5f};
        const float *in[] = {x};
        const uint8_t dt[] = {F32};
        assert_int_equal(run(S, AP, AF, in, dt, 1, outs[k], emit_act, &c, got, NULL, NULL),
                         NEURON_JOB_STATUS_OK);
        for (size_t i = 0; i < AN; i++) {
            /* z in fp32 as the device forms it, then the double reference. */
            const float z = x[i] * (1.0f / 768.0f) + 1e-5f;
            const double ref = 1.0 / sqrt((double)z);
            const double tol =
                outs[k] == F32 ? ldexp(1.0, ilogb(ref) - 23) : 1e-2 * fabs(ref) + 1e-3;
            if (fabs((double)got[i] - ref) > tol)
                fail_msg("dt %u rsqrt(%a): got %.9g want %.9g", outs[k], (double)z, (double)got[i],
                         ref);
        }
    }
}

/* ---- comparisons ---- */

enum { CP = 32, CF = 32, CN = CP * CF };

struct tt_ctx {
    uint8_t op, odt;
};

static void emit_tt(pb_prog *p, const void *c) {
    const struct tt_ctx *t = c;
    pb_tt(p, t->op, pb_sbuf(t->odt, 0, CP, OUT_OFF, CF), pb_sbuf(F32, 0, CP, IN_OFF(0), CF),
          pb_sbuf(F32, 0, CP, IN_OFF(1), CF));
}

static void cmp_inputs(float *a, float *b) {
    uint64_t s = 83;
    for (size_t i = 0; i < CN; i++) {
        a[i] = roundf(tu_uniform(&s) * 4.0f); /* small integers: many equal pairs */
        b[i] = roundf(tu_uniform(&s) * 4.0f);
    }
    const float pairs[][2] = {
        {1.0f, 1.0f},      {0.0f, -0.0f},        {NAN, 1.0f},           {1.0f, NAN},
        {NAN, NAN},        {INFINITY, INFINITY}, {-INFINITY, INFINITY}, {1.0f, 2.0f},
        {2.0f, 1.0f},      {-1.0f, -2.0f},       {FLT_MIN, 0.0f},       {-FLT_MAX, -INFINITY},
        {1e-45f, -1e-45f}, {3.0f, 3.0f},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        a[i] = pairs[i][0];
        b[i] = pairs[i][1];
    }
}

static void test_compare_tensor_tensor(void **state) {
    (void)state;
    static float a[CN], b[CN], got[CN];
    cmp_inputs(a, b);
    const uint8_t outs[] = {F32, I32, BF16};
    for (uint8_t op = NEURON_ALU_IS_EQ; op <= NEURON_ALU_IS_GE; op++)
        for (size_t k = 0; k < 3; k++) {
            const struct tt_ctx c = {op, outs[k]};
            const float *in[] = {a, b};
            const uint8_t dt[] = {F32, F32};
            int32_t raw[CN];
            assert_int_equal(run(V, CP, CF, in, dt, 2, outs[k], emit_tt, &c, got, raw, NULL),
                             NEURON_JOB_STATUS_OK);
            int ones = 0;
            for (size_t i = 0; i < CN; i++) {
                const float want = tu_ref_alu(op, a[i], b[i]);
                if (tu_bits(got[i]) != tu_bits(want))
                    fail_msg("op %u dt %u: %g vs %g: got %g want %g", op, outs[k], (double)a[i],
                             (double)b[i], (double)got[i], (double)want);
                if (outs[k] == I32 && raw[i] != (int32_t)want)
                    fail_msg("op %u int32: got %d want %d", op, raw[i], (int)want);
                ones += want == 1.0f;
            }
            assert_true(ones > 0 && ones < CN); /* the inputs exercise both results */
        }
    /* NaN: only NE is true; +0 == -0. */
    assert_true(tu_ref_alu(NEURON_ALU_IS_NE, NAN, NAN) == 1.0f);
    assert_true(tu_ref_alu(NEURON_ALU_IS_EQ, 0.0f, -0.0f) == 1.0f);
}

struct ts_ctx {
    uint8_t op0, op1, flags;
    bool per_part;
    int engine;
    float s1, s2;
};

static void emit_ts(pb_prog *p, const void *c) {
    const struct ts_ctx *t = c;
    struct neuron_tap none;
    memset(&none, 0, sizeof(none));
    /* The per-partition scalar: column 0 of input 1. */
    pb_ts(p, t->engine, t->op0, t->op1, t->flags, pb_sbuf(F32, 0, CP, OUT_OFF, CF),
          pb_sbuf(F32, 0, CP, IN_OFF(0), CF),
          t->per_part ? pb_sbuf(F32, 0, CP, IN_OFF(1), 1) : none, t->per_part ? 0.0f : t->s1,
          t->s2);
}

static void test_compare_tensor_scalar(void **state) {
    (void)state;
    static float a[CN], b[CN], got[CN];
    cmp_inputs(a, b);
    const struct ts_ctx cases[] = {
        {NEURON_ALU_IS_LT, NEURON_ALU_NONE, 0, false, V, 2.0f, 0.0f},
        {NEURON_ALU_IS_LT, NEURON_ALU_NONE, NEURON_TS_F_REVERSE0, false, S, 2.0f, 0.0f},
        {NEURON_ALU_IS_GE, NEURON_ALU_MUL, 0, true, V, 0.0f, -2.0f},
        {NEURON_ALU_ADD, NEURON_ALU_IS_EQ, 0, false, S, 1.0f, 3.0f},
        {NEURON_ALU_IS_NE, NEURON_ALU_IS_GT, NEURON_TS_F_REVERSE1, true, V, 0.0f, 0.5f},
        {NEURON_ALU_IS_LE, NEURON_ALU_NONE, 0, false, V, NAN, 0.0f},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const struct ts_ctx *c = &cases[k];
        const float *in[] = {a, b};
        const uint8_t dt[] = {F32, F32};
        assert_int_equal(run(c->engine, CP, CF, in, dt, 2, F32, emit_ts, c, got, NULL, NULL),
                         NEURON_JOB_STATUS_OK);
        for (size_t q = 0; q < CP; q++)
            for (size_t j = 0; j < CF; j++) {
                const size_t i = q * CF + j;
                const float s1 = c->per_part ? b[q * CF] : c->s1;
                float v = c->flags & NEURON_TS_F_REVERSE0 ? tu_ref_alu(c->op0, s1, a[i])
                                                          : tu_ref_alu(c->op0, a[i], s1);
                if (c->op1)
                    v = c->flags & NEURON_TS_F_REVERSE1 ? tu_ref_alu(c->op1, c->s2, v)
                                                        : tu_ref_alu(c->op1, v, c->s2);
                if (tu_bits(got[i]) != tu_bits(v))
                    fail_msg("case %zu [%zu]: x %g: got %g want %g", k, i, (double)a[i],
                             (double)got[i], (double)v);
            }
    }
}

/* ---- select ---- */

struct sel_ctx {
    uint8_t mask_dt, odt;
    float fill;
};

static void emit_sel(pb_prog *p, const void *c) {
    const struct sel_ctx *s = c;
    struct neuron_insn *in = pb_emit(p, V, NEURON_OP_SELECT);
    in->op[0] = pb_sbuf(s->odt, 0, CP, OUT_OFF, CF);
    in->op[1] = pb_sbuf(s->mask_dt, 0, CP, IN_OFF(0), CF);
    in->op[2] = pb_sbuf(F32, 0, CP, IN_OFF(1), CF);
    in->imm[0] = pb_f32(s->fill);
}

static void test_select(void **state) {
    (void)state;
    static float mask[CN], imask[CN], val[CN], got[CN];
    uint64_t s = 89;
    /* Non-zero is true: NaN, infinities and subnormals too; both zeros are false. */
    const float mvals[] = {0.0f, -0.0f, 1.0f, -3.0f, NAN, INFINITY, 1e-40f, 0.5f};
    const float ivals[] = {0.0f, 1.0f, -3.0f, 0.0f, 65536.0f, -1.0f, 0.0f, 2.0f};
    for (size_t i = 0; i < CN; i++) {
        uint32_t r = tu_rand(&s) % 8;
        mask[i] = mvals[r];
        imask[i] = ivals[r];
        val[i] = tu_uniform(&s) * 100.0f;
    }
    const struct sel_ctx cases[] = {
        {F32, F32, -INFINITY},
        {BF16, F32, -1e9f},
        {I32, BF16, 7.0f},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const struct sel_ctx *c = &cases[k];
        const float *m_in = c->mask_dt == I32 ? imask : mask;
        const float *in[] = {m_in, val};
        const uint8_t dt[] = {c->mask_dt, F32};
        uint64_t flops = 0;
        assert_int_equal(run(V, CP, CF, in, dt, 2, c->odt, emit_sel, c, got, NULL, &flops),
                         NEURON_JOB_STATUS_OK);
        assert_int_equal(flops, (uint64_t)CN);
        int taken = 0;
        for (size_t i = 0; i < CN; i++) {
            /* The mask as the device sees it: converted from its dtype. */
            const float m = c->mask_dt == BF16 ? tu_round(BF16, m_in[i]) : m_in[i];
            const float want = tu_round(c->odt, m != 0.0f ? val[i] : c->fill);
            if (tu_bits(got[i]) != tu_bits(want))
                fail_msg("case %zu [%zu]: mask %g: got %g want %g", k, i, (double)m, (double)got[i],
                         (double)want);
            taken += m != 0.0f;
        }
        assert_true(taken > 0 && taken < CN);
    }
}

/*
 * KEEP: the false elements keep their bits: int32 values above 2^24 that
 * fp32 cannot hold, which a convert-and-write would round.
 */
static void test_select_keep(void **state) {
    (void)state;
    enum { N = CP * CF };
    static float mask[N], val[N];
    static int32_t old[N], out[N];
    uint64_t s = 101;
    for (size_t i = 0; i < N; i++) {
        mask[i] = (tu_rand(&s) & 1) ? 1.0f : 0.0f;
        val[i] = roundf(tu_uniform(&s) * 1000.0f);
        old[i] = 16777217 + 2 * (int32_t)i; /* odd: not an fp32 */
    }
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    uint8_t *pm, *pv, *po, *res;
    uint32_t sm = te_buffer(t, N * 4, NEURON_BIND_READ, &pm);
    uint32_t sv = te_buffer(t, N * 4, NEURON_BIND_READ, &pv);
    uint32_t so = te_buffer(t, N * 4, NEURON_BIND_READ, &po);
    uint32_t sr = te_buffer(t, N * 4, NEURON_BIND_WRITE, &res);
    memcpy(pm, mask, sizeof(mask));
    memcpy(pv, val, sizeof(val));
    memcpy(po, old, sizeof(old));
    pb_dma(&p, true, pb_sbuf(F32, 0, CP, IN_OFF(0), CF), sm, 0, CF * 4, 4, 0);
    pb_dma(&p, true, pb_sbuf(F32, 0, CP, IN_OFF(1), CF), sv, 0, CF * 4, 4, 0);
    pb_dma(&p, true, pb_sbuf(I32, 0, CP, OUT_OFF, CF), so, 0, CF * 4, 4, 0);
    pb_signal(&p, NEURON_ENGINE_SYNC, 0, 1);
    pb_wait(&p, V, 0, 1, true);
    struct neuron_insn *in = pb_emit(&p, V, NEURON_OP_SELECT);
    in->flags = NEURON_SEL_F_KEEP;
    in->op[0] = pb_sbuf(I32, 0, CP, OUT_OFF, CF);
    in->op[1] = pb_sbuf(F32, 0, CP, IN_OFF(0), CF);
    in->op[2] = pb_sbuf(F32, 0, CP, IN_OFF(1), CF);
    pb_signal(&p, V, 1, 1);
    pb_wait(&p, NEURON_ENGINE_SYNC, 1, 1, true);
    pb_dma(&p, false, pb_sbuf(I32, 0, CP, OUT_OFF, CF), sr, 0, CF * 4, 4, 0);
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    memcpy(out, res, sizeof(out));
    for (size_t i = 0; i < N; i++) {
        const int32_t want = mask[i] != 0.0f ? (int32_t)val[i] : old[i];
        if (out[i] != want)
            fail_msg("keep [%zu]: mask %g: got %d want %d", i, (double)mask[i], out[i], want);
    }
    pb_free(&p);
    te_free(t);
}

/*
 * Attention masks for rows 128..255 of a 200-column score matrix (the
 * second row tile): mask[p, j] = (128 + p - j >= 0), from IOTA and a
 * comparison; then the masked scores (SELECT with -inf) and an additive
 * mask (0 / -inf) added to the scores.
 */
enum { MP = 128, MF = 200 };

static void emit_causal(pb_prog *p, const void *c) {
    const bool additive = *(const bool *)c;
    const uint32_t diff = 4096, mask = 8192, zeros = 12288;
    if (additive)
        pb_memset(p, V, pb_sbuf(F32, 0, MP, zeros, MF), 0);
    pb_iota(p, pb_sbuf(I32, 0, MP, diff, MF), 128, 1, -1); /* row - column */
    pb_ts(p, V, NEURON_ALU_IS_GE, NEURON_ALU_NONE, 0, pb_sbuf(F32, 0, MP, mask, MF),
          pb_sbuf(I32, 0, MP, diff, MF), (struct neuron_tap){0}, 0.0f, 0.0f);
    struct neuron_insn *in = pb_emit(p, V, NEURON_OP_SELECT);
    in->imm[0] = pb_f32(-INFINITY);
    in->op[1] = pb_sbuf(F32, 0, MP, mask, MF);
    if (!additive) { /* the masked scores */
        in->op[0] = pb_sbuf(F32, 0, MP, OUT_OFF, MF);
        in->op[2] = pb_sbuf(F32, 0, MP, IN_OFF(0), MF);
        return;
    }
    /* the additive mask (0 / -inf), in place of the 0/1 mask, then added */
    in->op[0] = pb_sbuf(F32, 0, MP, mask, MF);
    in->op[2] = pb_sbuf(F32, 0, MP, zeros, MF);
    pb_tt(p, NEURON_ALU_ADD, pb_sbuf(F32, 0, MP, OUT_OFF, MF), pb_sbuf(F32, 0, MP, IN_OFF(0), MF),
          pb_sbuf(F32, 0, MP, mask, MF));
}

static void test_causal_mask(void **state) {
    (void)state;
    static float scores[MP * MF], got[MP * MF];
    uint64_t s = 97;
    for (size_t i = 0; i < MP * MF; i++)
        scores[i] = tu_uniform(&s) * 8.0f;
    for (int additive = 0; additive < 2; additive++) {
        const bool a = additive;
        const float *in[] = {scores};
        const uint8_t dt[] = {F32};
        assert_int_equal(run(V, MP, MF, in, dt, 1, F32, emit_causal, &a, got, NULL, NULL),
                         NEURON_JOB_STATUS_OK);
        for (int p = 0; p < MP; p++)
            for (int j = 0; j < MF; j++) {
                const float want = j <= 128 + p ? scores[p * MF + j] : -INFINITY;
                if (tu_bits(got[p * MF + j]) != tu_bits(want))
                    fail_msg("%s row %d col %d: got %g want %g", a ? "additive" : "select", 128 + p,
                             j, (double)got[p * MF + j], (double)want);
            }
    }
}

/* ---- gather ---- */

enum { GV = 300, GD = 48, GP = 100 };

/*
 * Embedding rows: the int32 indices of @np partitions (at SBUF 0) pick rows
 * of a [GV, GD] table (@dt) into SBUF 1024; stored to @out. Returns the
 * status; the job's info and engine in *info.
 */
static uint32_t run_gather(uint8_t dt, const int32_t *idx, uint32_t np, uint32_t limit,
                           uint32_t index_at, uint32_t table_flags, const float *table, float *out,
                           uint32_t *info, uint64_t *dma_bytes) {
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    uint8_t *pt, *pi, *po;
    uint32_t st = te_buffer(t, (uint64_t)GV * GD * esz(dt), table_flags, &pt);
    tu_pack(dt, pt, table, (size_t)GV * GD);
    uint32_t si = te_buffer(t, np * 4u, NEURON_BIND_READ, &pi);
    memcpy(pi, idx, np * 4u);
    uint32_t so = te_buffer(t, (uint64_t)np * GD * esz(dt), NEURON_BIND_WRITE, &po);
    pb_dma(&p, true, pb_sbuf(I32, 0, np, 0, 1), si, 0, 4, 4, 0);
    struct neuron_insn *g = pb_emit(&p, NEURON_ENGINE_SYNC, NEURON_OP_DMA_GATHER);
    g->dma.sbuf = pb_sbuf(dt, 0, np, 1024, GD);
    g->dma.dram.slot = (uint8_t)st;
    g->dma.dram.part_stride = GD * esz(dt); /* the row pitch */
    g->dma.dram.stride[0] = esz(dt);
    g->imm[0] = index_at;
    g->imm[1] = limit;
    pb_dma(&p, false, pb_sbuf(dt, 0, np, 1024, GD), so, 0, GD * esz(dt), esz(dt), 0);
    pb_end_all(&p);
    uint32_t status = te_run(t, &p);
    *info = t->job.info;
    if (dma_bytes)
        *dma_bytes = t->job.dma_bytes;
    if (status == NEURON_JOB_STATUS_OK)
        tu_unpack(dt, out, po, (size_t)np * GD);
    pb_free(&p);
    te_free(t);
    return status;
}

static void test_gather(void **state) {
    (void)state;
    static float table[GV * GD], out[GP * GD];
    uint64_t s = 103;
    for (size_t i = 0; i < GV * GD; i++)
        table[i] = tu_uniform(&s) * 3.0f;
    int32_t idx[GP];
    for (uint32_t p = 0; p < GP; p++)
        idx[p] = (int32_t)(tu_rand(&s) % GV);
    idx[0] = 0;
    idx[1] = GV - 1;
    idx[2] = idx[3] = 17; /* repeated */
    const uint8_t dts[] = {F32, BF16};
    for (size_t k = 0; k < 2; k++) {
        uint32_t info;
        uint64_t bytes;
        assert_int_equal(
            run_gather(dts[k], idx, GP, GV, 0, NEURON_BIND_READ, table, out, &info, &bytes),
            NEURON_JOB_STATUS_OK);
        for (uint32_t p = 0; p < GP; p++)
            for (uint32_t j = 0; j < GD; j++) {
                const float want = tu_round(dts[k], table[(size_t)idx[p] * GD + j]);
                if (tu_bits(out[p * GD + j]) != tu_bits(want))
                    fail_msg("dt %u row %u (index %d) col %u: got %g want %g", dts[k], p, idx[p], j,
                             (double)out[p * GD + j], (double)want);
            }
        /* the index load, the gather, the store */
        assert_int_equal(bytes, (uint64_t)GP * 4 + 2ull * GP * GD * esz(dts[k]));
    }
    /* An index outside [0, rows): BINDING_RANGE with the table's slot, nothing moved. */
    uint32_t info;
    int32_t bad[GP];
    memcpy(bad, idx, sizeof(bad));
    bad[50] = GV;
    assert_int_equal(run_gather(F32, bad, GP, GV, 0, NEURON_BIND_READ, table, out, &info, NULL),
                     NEURON_JOB_STATUS_BINDING_RANGE);
    assert_int_equal(info, 0);
    bad[50] = -1;
    assert_int_equal(run_gather(F32, bad, GP, GV, 0, NEURON_BIND_READ, table, out, &info, NULL),
                     NEURON_JOB_STATUS_BINDING_RANGE);
    /* A row bound beyond the binding: the last row's extent is checked. */
    bad[50] = GV;
    assert_int_equal(run_gather(F32, bad, GP, GV + 1, 0, NEURON_BIND_READ, table, out, &info, NULL),
                     NEURON_JOB_STATUS_BINDING_RANGE);
    /* A huge index and row pitch: out of range, no overflow. */
    bad[50] = INT32_MAX;
    assert_int_equal(
        run_gather(F32, bad, GP, UINT32_MAX, 0, NEURON_BIND_READ, table, out, &info, NULL),
        NEURON_JOB_STATUS_BINDING_RANGE);
    /* The table must be readable. */
    assert_int_equal(run_gather(F32, idx, GP, GV, 0, NEURON_BIND_WRITE, table, out, &info, NULL),
                     NEURON_JOB_STATUS_BINDING_ACCESS);
    /* The indices: aligned, inside the partition. */
    assert_int_equal(run_gather(F32, idx, GP, GV, 2, NEURON_BIND_READ, table, out, &info, NULL),
                     NEURON_JOB_STATUS_ALIGN);
    assert_int_equal(run_gather(F32, idx, GP, GV, NEURON_SBUF_DEFAULT_SIZE / 128, NEURON_BIND_READ,
                                table, out, &info, NULL),
                     NEURON_JOB_STATUS_SBUF_RANGE);
    assert_int_equal(info, 1); /* the instruction's index */
}

/* ---- decode faults of the new encodings ---- */

static struct neuron_insn insn_select(void) {
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_SELECT;
    in.op[0] = pb_sbuf(F32, 0, 64, 0, 16);
    in.op[1] = pb_sbuf(F32, 0, 64, 64, 16);
    in.op[2] = pb_sbuf(F32, 0, 64, 128, 16);
    return in;
}

static void test_decode(void **state) {
    (void)state;
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_ACTIVATE;
    in.func = NEURON_ACT_COUNT; /* one past the last function */
    in.op[0] = pb_sbuf(F32, 0, 64, 0, 16);
    in.op[1] = pb_sbuf(F32, 0, 64, 64, 16);
    tu_expect_fault(S, &in, NEURON_JOB_STATUS_DECODE);
    in.func = NEURON_ACT_RECIPROCAL;
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE); /* ACTIVATE is Scalar only */

    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_TENSOR_SCALAR;
    in.func = NEURON_ALU_IS_GE;
    in.func2 = NEURON_ALU_COUNT;
    in.imm[1] = 1;
    in.op[0] = pb_sbuf(F32, 0, 64, 0, 16);
    in.op[1] = pb_sbuf(F32, 0, 64, 64, 16);
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE);
    in.func = NEURON_ALU_COUNT;
    in.func2 = 0;
    in.imm[1] = 0;
    tu_expect_fault(S, &in, NEURON_JOB_STATUS_DECODE);

    in = insn_select();
    tu_expect_fault(S, &in, NEURON_JOB_STATUS_DECODE); /* Vector only */
    in.flags = NEURON_SEL_F_KEEP;
    in.imm[0] = pb_f32(1.0f); /* a fill value with KEEP */
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE);
    in = insn_select();
    in.flags = 2; /* undefined flag */
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE);
    in = insn_select();
    in.imm[1] = 1; /* unused immediate */
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE);
    in = insn_select();
    in.func = 1; /* unused function field */
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE);
    in = insn_select();
    memset(&in.op[2], 0, sizeof(in.op[2])); /* on_true is required */
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE);
    in = insn_select();
    in.op[1].part_count = 32; /* mask of another shape */
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_SHAPE);
    in = insn_select();
    in.op[2].count[0] = 15;
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_SHAPE);
    in = insn_select();
    in.op[1].dtype = 9;
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DTYPE);
    in = insn_select();
    in.op[0].offset = (24u << 20) / 128 - 32; /* past the partition */
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_SBUF_RANGE);

    /* DMA_GATHER runs on the Sync engine only, with its reserved fields zero. */
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_DMA_GATHER;
    in.dma.sbuf = pb_sbuf(F32, 0, 4, 0, 8);
    in.imm[1] = 1;
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE);
    in.dma.reserved[0] = 1;
    tu_expect_fault(NEURON_ENGINE_SYNC, &in, NEURON_JOB_STATUS_DECODE);
    in.dma.reserved[0] = 0;
    in.func = 1;
    tu_expect_fault(NEURON_ENGINE_SYNC, &in, NEURON_JOB_STATUS_DECODE);

    /* A good SELECT in the same harness. */
    in = insn_select();
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    *pb_emit(&p, V, 0) = in;
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    pb_free(&p);
    te_free(t);
}

/* The opcode table and the version: what the validator and the compiler read. */
static void test_versions(void **state) {
    (void)state;
    assert_int_equal(NEURON_ISA_VERSION_MAJOR, 1);
    assert_int_equal(NEURON_ISA_VERSION_MINOR, 2);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_ACTIVATE, NEURON_ACT_SILU, 0), 0);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_ACTIVATE, NEURON_ACT_RSQRT, 0), 1);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_ACTIVATE, NEURON_ACT_RECIPROCAL, 0), 1);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_ACTIVATE, NEURON_ACT_COUNT, 0), 0);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_TENSOR_TENSOR, NEURON_ALU_DIV, 0), 0);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_TENSOR_TENSOR, NEURON_ALU_IS_EQ, 0), 1);
    assert_int_equal(
        neuron_insn_isa_minor(NEURON_OP_TENSOR_SCALAR, NEURON_ALU_MUL, NEURON_ALU_IS_GE), 1);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_SELECT, 0, 0), 1);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_DMA_GATHER, 0, 0), 1);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_DMA_LOAD, 0, 0), 0);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_REDUCE, NEURON_ALU_IS_EQ, 0), 0);
    assert_int_equal(neuron_insn_isa_minor(0x7f, 0, 0), 0);
    assert_string_equal(neuron_opcode_lookup(NEURON_OP_SELECT)->name, "select");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rsqrt),
        cmocka_unit_test(test_reciprocal),
        cmocka_unit_test(test_rsqrt_affine),
        cmocka_unit_test(test_compare_tensor_tensor),
        cmocka_unit_test(test_compare_tensor_scalar),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_select_keep),
        cmocka_unit_test(test_causal_mask),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
