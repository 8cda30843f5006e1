// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ISA 1.2 (hw/isa.md) against references written here: ACTIVATE ln, erf,
 * sqrt and abs against libm in double (random bit patterns of every
 * binade and the special values), the U8 data type (loads, stores and its
 * conversions), COPY's TRUNC conversion to INT32 and U8, the exact integer
 * TENSOR_TENSOR and TENSOR_SCALAR (beyond 2^24, wrapping), their faults,
 * and the ISA minor of each encoding.
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
#define U8 NEURON_DT_U8
#define BF16 NEURON_DT_BF16
#define V NEURON_ENGINE_VECTOR
#define S NEURON_ENGINE_SCALAR

enum { P = 128, F = 64, N = P * F };

/* SBUF byte offset of input k, and of the result. */
#define IN_OFF(k) ((uint32_t)(k)*4096u)
#define OUT_OFF 16384u

typedef void (*emit_fn)(pb_prog *p, const void *ctx);

/*
 * Loads @nin [P, F] arrays of raw elements (@in_dt[k]) into SBUF at
 * IN_OFF(k), runs @emit on @engine, stores SBUF OUT_OFF as [P, F] @odt
 * into @out (raw bytes). Returns the job status.
 */
static uint32_t run_raw(int engine, const void *const *in, const uint8_t *in_dt, int nin,
                        uint8_t odt, emit_fn emit, const void *ctx, void *out) {
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    for (int k = 0; k < nin; k++) {
        const uint32_t es = NEURON_DT_SIZE(in_dt[k]);
        uint8_t *ptr;
        uint32_t slot = te_buffer(t, (uint64_t)N * es, NEURON_BIND_READ, &ptr);
        memcpy(ptr, in[k], (size_t)N * es);
        pb_dma(&p, true, pb_sbuf(in_dt[k], 0, P, IN_OFF(k), F), slot, 0, F * es, es, 0);
    }
    const uint32_t oes = NEURON_DT_SIZE(odt);
    uint8_t *o;
    uint32_t so = te_buffer(t, (uint64_t)N * oes, NEURON_BIND_WRITE, &o);
    pb_signal(&p, NEURON_ENGINE_SYNC, 0, 1);
    pb_wait(&p, engine, 0, 1, true);
    emit(&p, ctx);
    pb_signal(&p, engine, 1, 1);
    pb_wait(&p, NEURON_ENGINE_SYNC, 1, 1, true);
    pb_dma(&p, false, pb_sbuf(odt, 0, P, OUT_OFF, F), so, 0, F * oes, oes, 0);
    pb_end_all(&p);
    uint32_t st = te_run(t, &p);
    if (st == NEURON_JOB_STATUS_OK)
        memcpy(out, o, (size_t)N * oes);
    pb_free(&p);
    te_free(t);
    return st;
}

static const uint32_t specials[] = {
    0x00000000u, /* +0 */
    0x80000000u, /* -0 */
    0x7f800000u, /* +inf */
    0xff800000u, /* -inf */
    0x7fc00000u, /* NaN */
    0x3f800000u, /* 1 */
    0xbf800000u, /* -1 */
    0x00000001u, /* smallest subnormal */
    0x007fffffu, /* largest subnormal */
    0x00800000u, /* FLT_MIN */
    0x7f7fffffu, /* FLT_MAX */
    0x40000000u, /* 2 */
    0x3f000000u, /* 0.5 */
    0x40800000u, /* 4 */
};
#define NSPECIAL (sizeof(specials) / sizeof(specials[0]))

/* Random fp32 bit patterns of every binade, both signs, no NaN; the specials first. */
static void inputs(float *x, uint64_t seed) {
    uint64_t s = seed | 1;
    for (size_t i = 0; i < N; i++) {
        uint32_t u;
        do
            u = tu_rand(&s);
        while ((u & 0x7f800000u) == 0x7f800000u);
        x[i] = tu_f32(u);
    }
    /* A quarter in [-6, 6], where erf is not yet +-1. */
    for (size_t i = 0; i < N / 4; i++)
        x[i] = 12.0f * tu_uniform(&s) - 6.0f;
    for (size_t i = 0; i < NSPECIAL; i++)
        x[i] = tu_f32(specials[i]);
}

/* ---- ACTIVATE ln, erf, sqrt, abs ---- */

struct act_ctx {
    uint8_t func;
};

static void emit_act(pb_prog *p, const void *c) {
    const struct act_ctx *a = c;
    struct neuron_tap none;
    memset(&none, 0, sizeof(none));
    /* z = x * 1 + (-0) is x for every x, -0 included. */
    pb_activate(p, a->func, pb_sbuf(F32, 0, P, OUT_OFF, F), pb_sbuf(F32, 0, P, 0, F), none, 1.0f,
                -0.0f);
}

/* 1 ulp of @ref's binade, at least the smallest subnormal. */
static double ulp_of(double ref) {
    return fmax(ldexp(1.0, ilogb(ref) - 23), 0x1p-149);
}

/* ACTIVATE @func over inputs(@seed) against @ref in double, within @ulps ulp. */
static void check_act(uint8_t func, double (*ref)(double), double ulps, uint64_t seed) {
    static float x[N], got[N];
    inputs(x, seed);
    const struct act_ctx c = {func};
    const void *in[] = {x};
    const uint8_t dt[] = {F32};
    assert_int_equal(run_raw(S, in, dt, 1, F32, emit_act, &c, got), NEURON_JOB_STATUS_OK);
    for (size_t i = 0; i < N; i++) {
        const double want = ref((double)x[i]);
        if (isnan(want) || isinf(want) || want == 0) { /* exact, with sign */
            if (isnan(want) ? !isnan(got[i]) : tu_bits(got[i]) != tu_bits((float)want))
                fail_msg("func %u (%a): got %a, want %a", func, (double)x[i], (double)got[i], want);
            continue;
        }
        if (fabs((double)got[i] - want) > ulps * ulp_of(want))
            fail_msg("func %u (%a): got %a, want %a (more than %g ulp)", func, (double)x[i],
                     (double)got[i], want, ulps);
    }
}

static double ref_sqrt(double x) {
    return (double)(float)sqrt(x); /* correctly rounded: exact below */
}

static void test_ln(void **state) {
    (void)state;
    check_act(NEURON_ACT_LN, log, 1, 101);
}

static void test_erf(void **state) {
    (void)state;
    check_act(NEURON_ACT_ERF, erf, 1, 103);
}

static void test_sqrt(void **state) {
    (void)state;
    check_act(NEURON_ACT_SQRT, ref_sqrt, 0, 107);
}

static void test_abs(void **state) {
    (void)state;
    check_act(NEURON_ACT_ABS, fabs, 0, 109);
}

/* ln's and erf's named values. */
static void test_ln_erf_specials(void **state) {
    (void)state;
    static float x[N], got[N];
    inputs(x, 5);
    const void *in[] = {x};
    const uint8_t dt[] = {F32};
    struct act_ctx c = {NEURON_ACT_LN};
    assert_int_equal(run_raw(S, in, dt, 1, F32, emit_act, &c, got), NEURON_JOB_STATUS_OK);
    assert_true(isinf(got[0]) && got[0] < 0);                     /* ln(+0) = -inf */
    assert_true(isinf(got[1]) && got[1] < 0);                     /* ln(-0) = -inf */
    assert_true(isinf(got[2]) && got[2] > 0);                     /* ln(+inf) = +inf */
    assert_true(isnan(got[3]) && isnan(got[4]) && isnan(got[6])); /* ln(-inf), ln(NaN), ln(-1) */
    assert_int_equal(tu_bits(got[5]), 0u);                        /* ln(1) = +0 */
    c.func = NEURON_ACT_ERF;
    assert_int_equal(run_raw(S, in, dt, 1, F32, emit_act, &c, got), NEURON_JOB_STATUS_OK);
    assert_int_equal(tu_bits(got[0]), 0u);
    assert_int_equal(tu_bits(got[1]), 0x80000000u); /* erf(-0) = -0 */
    assert_true(got[2] == 1.0f && got[3] == -1.0f && isnan(got[4]));
    assert_true(got[10] == 1.0f);
}

/* ---- U8 and COPY's TRUNC ---- */

/* A COPY on the Scalar engine, which run_raw() must be given. */
struct copy_ctx {
    uint8_t sdt, ddt, flags;
};

static void emit_copy(pb_prog *p, const void *c) {
    const struct copy_ctx *a = c;
    pb_copy(p, S, pb_sbuf(a->ddt, 0, P, OUT_OFF, F), pb_sbuf(a->sdt, 0, P, 0, F))->flags = a->flags;
}

/* fp32 -> INT32 and U8, rounding to nearest-even or (TRUNC) toward zero. */
static void test_convert(void **state) {
    (void)state;
    static float x[N];
    static int32_t i32[N];
    static uint8_t u8[N];
    uint64_t s = 11;
    for (size_t i = 0; i < N; i++)
        x[i] = 600.0f * tu_uniform(&s) - 300.0f;
    static const float named[] = {2.5f,  3.5f,     -2.5f,     -2.7f,     2.7f,   0.5f,
                                  -0.5f, 255.5f,   254.5f,    1e10f,     -1e10f, NAN,
                                  -0.0f, INFINITY, -INFINITY, 16777217.f};
    memcpy(x, named, sizeof(named));
    const void *in[] = {x};
    const uint8_t dt[] = {F32};
    for (int tr = 0; tr < 2; tr++) {
        const uint8_t fl = tr ? NEURON_COPY_F_TRUNC : 0;
        struct copy_ctx c = {F32, I32, fl};
        assert_int_equal(run_raw(S, in, dt, 1, I32, emit_copy, &c, i32), NEURON_JOB_STATUS_OK);
        for (size_t i = 0; i < N; i++) {
            const double r = tr ? trunc(x[i]) : nearbyint(x[i]);
            const int32_t want = isnan(x[i])          ? 0
                                 : r >= 2147483647.0  ? INT32_MAX
                                 : r <= -2147483648.0 ? INT32_MIN
                                                      : (int32_t)r;
            if (i32[i] != want)
                fail_msg("int32(%a)%s: got %d, want %d", (double)x[i], tr ? " trunc" : "", i32[i],
                         want);
        }
        c.ddt = U8;
        assert_int_equal(run_raw(S, in, dt, 1, U8, emit_copy, &c, u8), NEURON_JOB_STATUS_OK);
        for (size_t i = 0; i < N; i++) {
            const double r = tr ? trunc(x[i]) : nearbyint(x[i]);
            const uint8_t want = isnan(x[i]) || r <= 0 ? 0 : r >= 255 ? 255 : (uint8_t)r;
            if (u8[i] != want)
                fail_msg("u8(%a)%s: got %u, want %u", (double)x[i], tr ? " trunc" : "", u8[i],
                         want);
        }
    }
    /* The named cases, spelled out: ties to even, toward zero, saturation, NaN. */
    struct copy_ctx c = {F32, I32, 0};
    assert_int_equal(run_raw(S, in, dt, 1, I32, emit_copy, &c, i32), NEURON_JOB_STATUS_OK);
    assert_true(i32[0] == 2 && i32[1] == 4 && i32[2] == -2 && i32[3] == -3 && i32[11] == 0);
    c.flags = NEURON_COPY_F_TRUNC;
    assert_int_equal(run_raw(S, in, dt, 1, I32, emit_copy, &c, i32), NEURON_JOB_STATUS_OK);
    assert_true(i32[0] == 2 && i32[1] == 3 && i32[2] == -2 && i32[3] == -2 && i32[4] == 2);
    assert_true(i32[9] == INT32_MAX && i32[10] == INT32_MIN && i32[11] == 0 && i32[15] == 16777216);
    c.ddt = U8;
    assert_int_equal(run_raw(S, in, dt, 1, U8, emit_copy, &c, u8), NEURON_JOB_STATUS_OK);
    assert_true(u8[0] == 2 && u8[3] == 0 && u8[7] == 255 && u8[8] == 254 && u8[13] == 255);
    /* TRUNC leaves float destinations alone: round to nearest-even. */
    static uint16_t bf[N];
    c.ddt = BF16;
    assert_int_equal(run_raw(S, in, dt, 1, BF16, emit_copy, &c, bf), NEURON_JOB_STATUS_OK);
    for (size_t i = 0; i < N; i++)
        if (!isnan(x[i]) && bf[i] != tu_bf16(x[i]))
            fail_msg("bf16(%a) with TRUNC: got %#x, want %#x", (double)x[i], bf[i], tu_bf16(x[i]));
}

/* U8 through DMA, to fp32 and back, and as a comparison's mask for SELECT. */
static void emit_mask_select(pb_prog *p, const void *c) {
    (void)c;
    /* mask = a < b as U8 at IN_OFF(3); out = mask ? a : -inf */
    pb_tt(p, NEURON_ALU_IS_LT, pb_sbuf(U8, 0, P, IN_OFF(3), F), pb_sbuf(F32, 0, P, IN_OFF(0), F),
          pb_sbuf(F32, 0, P, IN_OFF(1), F));
    struct neuron_insn *in = pb_emit(p, V, NEURON_OP_SELECT);
    in->op[0] = pb_sbuf(F32, 0, P, OUT_OFF, F);
    in->op[1] = pb_sbuf(U8, 0, P, IN_OFF(3), F);
    in->op[2] = pb_sbuf(F32, 0, P, IN_OFF(0), F);
    in->imm[0] = pb_f32(-INFINITY);
}

static void test_u8(void **state) {
    (void)state;
    static uint8_t m[N];
    static float f[N], a[N], b[N], got[N];
    uint64_t s = 13;
    for (size_t i = 0; i < N; i++)
        m[i] = (uint8_t)tu_rand(&s);
    /* U8 -> fp32 is exact; fp32 -> U8 gives the bytes back. */
    const void *in[] = {m};
    const uint8_t dt[] = {U8};
    struct copy_ctx c = {U8, F32, 0};
    assert_int_equal(run_raw(S, in, dt, 1, F32, emit_copy, &c, f), NEURON_JOB_STATUS_OK);
    for (size_t i = 0; i < N; i++)
        assert_true(f[i] == (float)m[i]);
    static uint8_t back[N];
    const void *in2[] = {f};
    const uint8_t dt2[] = {F32};
    c = (struct copy_ctx){F32, U8, 0};
    assert_int_equal(run_raw(S, in2, dt2, 1, U8, emit_copy, &c, back), NEURON_JOB_STATUS_OK);
    assert_memory_equal(back, m, N);

    for (size_t i = 0; i < N; i++) {
        a[i] = tu_uniform(&s);
        b[i] = tu_uniform(&s);
    }
    a[0] = NAN;
    const void *in3[] = {a, b};
    const uint8_t dt3[] = {F32, F32};
    assert_int_equal(run_raw(V, in3, dt3, 2, F32, emit_mask_select, NULL, got),
                     NEURON_JOB_STATUS_OK);
    for (size_t i = 0; i < N; i++) {
        const float want = a[i] < b[i] ? a[i] : -INFINITY;
        if (tu_bits(got[i]) != tu_bits(want))
            fail_msg("select(%a < %a): got %a, want %a", (double)a[i], (double)b[i], (double)got[i],
                     (double)want);
    }
}

/* ---- integer TENSOR_TENSOR and TENSOR_SCALAR ---- */

static int32_t ref_int(uint8_t op, int32_t a, int32_t b) {
    const int64_t x = a, y = b;
    switch (op) {
    case NEURON_ALU_ADD:
        return (int32_t)(uint32_t)(uint64_t)(x + y); /* the low 32 bits */
    case NEURON_ALU_SUB:
        return (int32_t)(uint32_t)(uint64_t)(x - y);
    case NEURON_ALU_MUL:
        return (int32_t)(uint32_t)(uint64_t)(x * y);
    case NEURON_ALU_MAX:
        return a > b ? a : b;
    case NEURON_ALU_MIN:
        return a < b ? a : b;
    case NEURON_ALU_IS_EQ:
        return a == b;
    case NEURON_ALU_IS_NE:
        return a != b;
    case NEURON_ALU_IS_LT:
        return a < b;
    case NEURON_ALU_IS_LE:
        return a <= b;
    case NEURON_ALU_IS_GT:
        return a > b;
    default:
        return a >= b;
    }
}

struct int_ctx {
    uint8_t op, op1, flags;
    int32_t s1, s2;
    bool scalar;
};

static void emit_int(pb_prog *p, const void *c) {
    const struct int_ctx *a = c;
    struct neuron_insn *in;
    if (!a->scalar) {
        in = pb_tt(p, a->op, pb_sbuf(I32, 0, P, OUT_OFF, F), pb_sbuf(I32, 0, P, IN_OFF(0), F),
                   pb_sbuf(I32, 0, P, IN_OFF(1), F));
        in->flags = a->flags;
        return;
    }
    in = pb_emit(p, V, NEURON_OP_TENSOR_SCALAR);
    in->func = a->op;
    in->func2 = a->op1;
    in->flags = a->flags;
    in->op[0] = pb_sbuf(I32, 0, P, OUT_OFF, F);
    in->op[1] = pb_sbuf(I32, 0, P, IN_OFF(0), F);
    in->imm[0] = (uint32_t)a->s1;
    in->imm[1] = (uint32_t)a->s2;
}

/* Integers of every size: beyond 2^24 (not exact in fp32), near the limits, small. */
static void int_inputs(int32_t *v, uint64_t seed) {
    uint64_t s = seed;
    for (size_t i = 0; i < N; i++) {
        const uint32_t u = tu_rand(&s);
        v[i] = (int32_t)(i % 3 == 0 ? u : i % 3 == 1 ? (u >> 7) : (u >> 26)) * (i % 2 ? -1 : 1);
    }
    v[0] = INT32_MAX;
    v[1] = INT32_MIN;
    v[2] = 16777217; /* 2^24 + 1 */
}

static void test_int_tensor_tensor(void **state) {
    (void)state;
    static int32_t a[N], b[N], got[N];
    int_inputs(a, 17);
    int_inputs(b, 19);
    b[3] = a[3] + 1; /* differ by 1 beyond 2^24: fp32 would call them equal */
    a[3] = 16777217;
    b[3] = 16777216;
    b[4] = a[4];
    const void *in[] = {a, b};
    const uint8_t dt[] = {I32, I32};
    for (uint8_t op = NEURON_ALU_ADD; op < NEURON_ALU_COUNT; op++) {
        if (op == NEURON_ALU_DIV)
            continue;
        const struct int_ctx c = {op, 0, NEURON_TT_F_INT32, 0, 0, false};
        assert_int_equal(run_raw(V, in, dt, 2, I32, emit_int, &c, got), NEURON_JOB_STATUS_OK);
        for (size_t i = 0; i < N; i++)
            if (got[i] != ref_int(op, a[i], b[i]))
                fail_msg("int op %u (%d, %d): got %d, want %d", op, a[i], b[i], got[i],
                         ref_int(op, a[i], b[i]));
    }
}

static void test_int_tensor_scalar(void **state) {
    (void)state;
    static int32_t a[N], got[N];
    int_inputs(a, 23);
    const void *in[] = {a};
    const uint8_t dt[] = {I32};
    const int32_t s1 = 100000007, s2 = -3;
    /* (x * s1) + s2, and (s1 - x) is_ge s2 (the reversed forms). */
    struct int_ctx c = {NEURON_ALU_MUL, NEURON_ALU_ADD, NEURON_TS_F_INT32, s1, s2, true};
    assert_int_equal(run_raw(V, in, dt, 1, I32, emit_int, &c, got), NEURON_JOB_STATUS_OK);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(got[i], ref_int(NEURON_ALU_ADD, ref_int(NEURON_ALU_MUL, a[i], s1), s2));
    c = (struct int_ctx){NEURON_ALU_SUB,
                         NEURON_ALU_IS_GE,
                         NEURON_TS_F_INT32 | NEURON_TS_F_REVERSE0 | NEURON_TS_F_REVERSE1,
                         s1,
                         s2,
                         true};
    assert_int_equal(run_raw(V, in, dt, 1, I32, emit_int, &c, got), NEURON_JOB_STATUS_OK);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(got[i], ref_int(NEURON_ALU_IS_GE, s2, ref_int(NEURON_ALU_SUB, s1, a[i])));
}

/* ---- faults and versions ---- */

static void test_faults(void **state) {
    (void)state;
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_TENSOR_TENSOR;
    in.flags = NEURON_TT_F_INT32;
    in.func = NEURON_ALU_DIV; /* no integer division */
    in.op[0] = pb_sbuf(I32, 0, 64, 0, 16);
    in.op[1] = pb_sbuf(I32, 0, 64, 64, 16);
    in.op[2] = pb_sbuf(I32, 0, 64, 128, 16);
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE);
    in.func = NEURON_ALU_ADD;
    in.op[2].dtype = F32; /* an fp32 operand of an integer operation */
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DTYPE);
    in.op[2].dtype = I32;
    in.flags = 2; /* undefined flag */
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE);

    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_TENSOR_SCALAR;
    in.flags = NEURON_TS_F_INT32;
    in.func = NEURON_ALU_ADD;
    in.op[0] = pb_sbuf(U8, 0, 64, 0, 16);
    in.op[1] = pb_sbuf(I32, 0, 64, 64, 16);
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DTYPE);
    in.op[0].dtype = I32;
    in.func2 = NEURON_ALU_DIV;
    in.imm[1] = 1;
    tu_expect_fault(S, &in, NEURON_JOB_STATUS_DECODE);

    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_COPY;
    in.flags = 2; /* only TRUNC is defined */
    in.op[0] = pb_sbuf(I32, 0, 64, 0, 16);
    in.op[1] = pb_sbuf(F32, 0, 64, 64, 16);
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DECODE);
    in.flags = 0;
    in.op[1].dtype = NEURON_DT_COUNT; /* one past U8 */
    tu_expect_fault(V, &in, NEURON_JOB_STATUS_DTYPE);

    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_ACTIVATE;
    in.func = NEURON_ACT_COUNT; /* one past abs */
    in.op[0] = pb_sbuf(F32, 0, 64, 0, 16);
    in.op[1] = pb_sbuf(F32, 0, 64, 64, 16);
    tu_expect_fault(S, &in, NEURON_JOB_STATUS_DECODE);

    /* A MATMUL of U8 operands. */
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_MATMUL;
    in.op[0] = pb_psum(F32, 0, 16, 0, 16);
    in.op[1] = pb_sbuf(U8, 0, 16, 0, 16);
    in.op[2] = pb_sbuf(F32, 0, 16, 64, 16);
    tu_expect_fault(NEURON_ENGINE_TENSOR, &in, NEURON_JOB_STATUS_DTYPE);
}

static unsigned minor_of(uint8_t op, uint8_t func, uint8_t flags, uint8_t dt) {
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = op;
    in.func = func;
    in.flags = flags;
    in.op[0] = pb_sbuf(dt, 0, 1, 0, 1);
    in.op[1] = pb_sbuf(F32, 0, 1, 0, 1);
    return neuron_insn_isa_minor_of(&in);
}

static void test_versions(void **state) {
    (void)state;
    assert_int_equal(NEURON_ISA_VERSION_MINOR, 2);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_ACTIVATE, NEURON_ACT_LN, 0), 2);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_ACTIVATE, NEURON_ACT_ERF, 0), 2);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_ACTIVATE, NEURON_ACT_SQRT, 0), 2);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_ACTIVATE, NEURON_ACT_ABS, 0), 2);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_ACTIVATE, NEURON_ACT_RECIPROCAL, 0), 1);
    assert_int_equal(neuron_insn_isa_minor(NEURON_OP_ACTIVATE, NEURON_ACT_EXP, 0), 0);
    assert_int_equal(minor_of(NEURON_OP_COPY, 0, 0, F32), 0);
    assert_int_equal(minor_of(NEURON_OP_COPY, 0, NEURON_COPY_F_TRUNC, I32), 2);
    assert_int_equal(minor_of(NEURON_OP_COPY, 0, 0, U8), 2);
    assert_int_equal(minor_of(NEURON_OP_TENSOR_TENSOR, NEURON_ALU_ADD, 0, I32), 0);
    assert_int_equal(minor_of(NEURON_OP_TENSOR_TENSOR, NEURON_ALU_ADD, NEURON_TT_F_INT32, I32), 2);
    assert_int_equal(minor_of(NEURON_OP_TENSOR_TENSOR, NEURON_ALU_IS_LT, 0, F32), 1);
    assert_int_equal(minor_of(NEURON_OP_TENSOR_SCALAR, NEURON_ALU_ADD, NEURON_TS_F_INT32, I32), 2);
    assert_int_equal(minor_of(NEURON_OP_TENSOR_SCALAR, NEURON_ALU_ADD, NEURON_TS_F_REVERSE0, I32),
                     0);
    assert_int_equal(minor_of(NEURON_OP_ACTIVATE, NEURON_ACT_LN, 0, F32), 2);
    /* DMA's memory side is not an on-core operand: its bytes are no dtype. */
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_DMA_LOAD;
    in.dma.sbuf = pb_sbuf(F32, 0, 1, 0, 1);
    in.dma.dram.stride[0] = U8 << 8; /* byte 41, where op[2].dtype would be */
    in.dma.dram.reserved[0] = 0;
    assert_int_equal(neuron_insn_isa_minor_of(&in), 0);
    in.dma.sbuf.dtype = U8;
    assert_int_equal(neuron_insn_isa_minor_of(&in), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ln),
        cmocka_unit_test(test_erf),
        cmocka_unit_test(test_sqrt),
        cmocka_unit_test(test_abs),
        cmocka_unit_test(test_ln_erf_specials),
        cmocka_unit_test(test_convert),
        cmocka_unit_test(test_u8),
        cmocka_unit_test(test_int_tensor_tensor),
        cmocka_unit_test(test_int_tensor_scalar),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
