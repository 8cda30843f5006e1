// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The Vector and Scalar engines: elementwise instructions (ACTIVATE,
 * TENSOR_TENSOR, TENSOR_SCALAR, COPY, MEMSET, IOTA, SELECT) and free-axis
 * reductions. Each partition's operands are gathered into fp32 rows, the
 * operation runs over the rows, and the result is converted back into the
 * destination; every source row is read before the destination row is
 * written, so a destination may overlap its sources.
 */
#include <math.h>
#include <string.h>

#include "model_internal.h"

static float alu(uint32_t op, float a, float b) {
    switch (op) {
    case NEURON_ALU_ADD:
        return a + b;
    case NEURON_ALU_SUB:
        return a - b;
    case NEURON_ALU_MUL:
        return a * b;
    case NEURON_ALU_MAX:
        return fmaxf(a, b);
    case NEURON_ALU_MIN:
        return fminf(a, b);
    case NEURON_ALU_DIV:
        return a / b;
    /* Comparisons: ordered, so false with a NaN operand, except NE. */
    case NEURON_ALU_IS_EQ:
        return a == b ? 1.0f : 0.0f;
    case NEURON_ALU_IS_NE:
        return a != b ? 1.0f : 0.0f;
    case NEURON_ALU_IS_LT:
        return a < b ? 1.0f : 0.0f;
    case NEURON_ALU_IS_LE:
        return a <= b ? 1.0f : 0.0f;
    case NEURON_ALU_IS_GT:
        return a > b ? 1.0f : 0.0f;
    case NEURON_ALU_IS_GE:
        return a >= b ? 1.0f : 0.0f;
    default:
        return a;
    }
}

NM_CLONES
static void alu_rows(uint32_t op, float *y, const float *a, const float *b, uint32_t n) {
    switch (op) {
    case NEURON_ALU_ADD:
        for (uint32_t i = 0; i < n; i++)
            y[i] = a[i] + b[i];
        return;
    case NEURON_ALU_SUB:
        for (uint32_t i = 0; i < n; i++)
            y[i] = a[i] - b[i];
        return;
    case NEURON_ALU_MUL:
        for (uint32_t i = 0; i < n; i++)
            y[i] = a[i] * b[i];
        return;
    default:
        for (uint32_t i = 0; i < n; i++)
            y[i] = alu(op, a[i], b[i]);
        return;
    }
}

/*
 * y[i] = x[i] op s over a row (s op x[i] when @rev), the operands in that
 * order as alu() takes them: the arithmetic operators in loops that
 * vectorize, the others through alu(). @y may be @x.
 */
NM_CLONES
static void alu_scalar_rows(uint32_t op, float *y, const float *x, float s, bool rev, uint32_t n) {
    switch (op) {
    case NEURON_ALU_ADD:
        if (rev)
            for (uint32_t i = 0; i < n; i++)
                y[i] = s + x[i];
        else
            for (uint32_t i = 0; i < n; i++)
                y[i] = x[i] + s;
        return;
    case NEURON_ALU_SUB:
        if (rev)
            for (uint32_t i = 0; i < n; i++)
                y[i] = s - x[i];
        else
            for (uint32_t i = 0; i < n; i++)
                y[i] = x[i] - s;
        return;
    case NEURON_ALU_MUL:
        if (rev)
            for (uint32_t i = 0; i < n; i++)
                y[i] = s * x[i];
        else
            for (uint32_t i = 0; i < n; i++)
                y[i] = x[i] * s;
        return;
    case NEURON_ALU_DIV:
        if (rev)
            for (uint32_t i = 0; i < n; i++)
                y[i] = s / x[i];
        else
            for (uint32_t i = 0; i < n; i++)
                y[i] = x[i] / s;
        return;
    default:
        for (uint32_t i = 0; i < n; i++)
            y[i] = rev ? alu(op, s, x[i]) : alu(op, x[i], s);
        return;
    }
}

/*
 * @c ? @a : @b through the bits, for selects in loops that must vectorize:
 * a conditional expression lets the compiler move the computation of the
 * unchosen value into a branch, which it then cannot vectorize, since a
 * floating-point operation may trap.
 */
static inline float pick(bool c, float a, float b) {
    const uint32_t mask = -(uint32_t)c;
    uint32_t ab, bb;
    memcpy(&ab, &a, 4);
    memcpy(&bb, &b, 4);
    const uint32_t r = (ab & mask) | (bb & ~mask);
    float f;
    memcpy(&f, &r, 4);
    return f;
}

/*
 * e^a = p 2^n, the range reduction and polynomial behind every
 * exponential here, written with plain operations so that it vectorizes
 * and gives the same bits in every build (contraction is off):
 * n = round(a / ln2), r = a - n ln2 (ln2 in two parts, so that n ln2 is
 * exact), |r| <= ln2/2, and e^r - 1 by its Taylor polynomial of degree 7
 * (error below 2^-27; Estrin's scheme, for a short chain of dependent
 * operations). Returns e^r - 1; n is read from the bits of the rounding
 * sum rather than converted, which is defined for every input, NaN too;
 * it is n for |a| below 2^22 (callers clamp a, or discard the result
 * outside their range).
 */
static inline float expm1_reduced(float a, int32_t *n) {
    const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    const float k = a * 1.44269504f + round_magic;
    const float nf = k - round_magic;
    const float r = (a - nf * 0.693145752f) - nf * 1.42860677e-6f;
    const float r2 = r * r, r4 = r2 * r2;
    uint32_t kb;
    memcpy(&kb, &k, 4);
    *n = (int32_t)(kb - 0x4b400000u); /* the bits above those of round_magic */
    return (r + r2 * (0.5f + r * (1.0f / 6))) +
           r4 * ((1.0f / 24 + r * (1.0f / 120)) + r2 * (1.0f / 720 + r * (1.0f / 5040)));
}

/* 2^n for -126 <= n <= 127, from its exponent bits. */
static inline float pow2i(int32_t n) {
    const uint32_t b = (uint32_t)(n + 127) << 23;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/*
 * e^a for a <= 0, flushed to 0 below -87 (where e^a leaves the normal
 * range), within 2 ulp.
 */
static inline float exp_nonpositive(float a) {
    int32_t n;
    const float p = 1.0f + expm1_reduced(a, &n);
    return pick(isless(a, -87.0f), 0.0f, p * pow2i(n));
}

/*
 * e^a for any a, within 3 ulp (subnormal results within 1e-45): a is
 * clamped to [-104, 89], outside which e^a rounds to 0 or overflows, and
 * 2^n applied in two halves, each a normal number for n in [-150, 128].
 */
static inline float exp_any(float a) {
    a = pick(a < -104.0f, -104.0f, pick(a > 89.0f, 89.0f, a));
    int32_t n;
    const float p = 1.0f + expm1_reduced(a, &n);
    const int32_t half = n / 2;
    return p * pow2i(half) * pow2i(n - half);
}

/*
 * e^a - 1 for a <= 0, within 3 ulp: 2^n (e^r - 1) + (2^n - 1), exact
 * in its last step for the n that matter, so small results keep their
 * relative accuracy. Below a = -17.4 the result is -1 in fp32; the clamp
 * at -87 keeps 2^n a normal number.
 */
static inline float expm1_nonpositive(float a) {
    int32_t n;
    const float q = expm1_reduced(pick(a < -87.0f, -87.0f, a), &n);
    const float s = pow2i(n);
    return s * q + (s - 1.0f);
}

/*
 * 1 / (1 + e^-z) from e^-|z| <= 1, so that neither branch cancels or
 * overflows: 1 / (1 + e) for z >= 0 and e / (1 + e) otherwise.
 */
static inline float sigmoid(float z) {
    const float e = exp_any(-fabsf(z));
    const float d = 1.0f / (1.0f + e);
    return pick(z < 0.0f, e * d, d);
}

/* tanh(x) = -m / (2 + m) with m = e^-2|x| - 1, its sign restored. */
static inline float tanh_vec(float x) {
    const float m = expm1_nonpositive(-2.0f * fabsf(x));
    return copysignf(-m / (2.0f + m), x);
}

/*
 * GELU's tanh form, 0.5 x (1 + tanh(u)) = x sigmoid(2u): the same value
 * without the cancellation of 1 + tanh(u) for negative x.
 */
static inline float gelu_tanh(float x) {
    return x * sigmoid(2.0f * (0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

/*
 * GELU, x Φ(x), with Φ(x) = q for x < 0 and 1 - q otherwise, where
 * q = erfc(z) / 2 and z = |x| / √2: erfc(z) = t e^(g(t) - z^2),
 * t = 1 / (1 + z/2), with g a polynomial of degree 9 fitted to
 * ln(erfc(z)) + z^2 - ln(t) over z in [0, 10] (relative error of erfc
 * below 5e-8 before rounding), evaluated in Estrin's scheme: the chain of
 * dependent operations, not their number, bounds the loop. q has a small
 * relative error everywhere, so GELU's does too, for negative x where
 * 1 + erf(x/√2) cancels as well (hw/isa.md, section 6). libm's erff does
 * not vectorize; this does.
 */
static inline float gelu_erf(float x) {
    const float z = fabsf(x) * 0.707106781f;
    const float t = 1.0f / (1.0f + 0.5f * z);
    const float t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;
    const float g =
        (((-1.26544138f + t * 0.998491510f) + t2 * (0.387906735f + t * 0.0283309289f)) +
         t4 * ((0.0202532800f + t * -0.116862044f) + t2 * (-0.651194198f + t * 1.12238394f))) +
        t8 * (-0.666064690f + t * 0.142195957f);
    const float q = 0.5f * t * exp_nonpositive(g - z * z);
    return x * pick(signbit(x), q, 1.0f - q);
}

/* max(x, 0) with NaN kept (as PyTorch's relu), as a select that vectorizes. */
static inline float relu(float x) {
    return x < 0.0f ? 0.0f : x;
}

static inline float identity(float x) {
    return x;
}

/*
 * In double, then rounded once to fp32: within 1 ulp (hw/isa.md, section
 * 6). sqrt(-0) = -0 gives -inf, as IEEE 754's rSqrt.
 */
static inline float rsqrt_rounded(float x) {
    return (float)(1.0 / sqrt((double)x));
}

/* Correctly rounded, as ALU div. */
static inline float reciprocal(float x) {
    return 1.0f / x;
}

static inline float silu(float x) {
    return x * sigmoid(x);
}

/*
 * ISA 1.2's ln and erf: in double, rounded once to fp32 (within 1 ulp of
 * the exact value, hw/isa.md section 6). libm's double functions do not
 * vectorize.
 */
static inline float ln_rounded(float x) {
    return (float)log((double)x);
}

static inline float erf_rounded(float x) {
    return (float)erf((double)x);
}

/*
 * Each function of ACTIVATE and its implementation. Everything but ln and
 * erf is written in plain fp32 operations (or correctly rounded ones:
 * sqrt, division), so that a row's loop vectorizes and gives the same
 * bits in every build and on every host (hw/isa.md, section 6).
 */
#define NM_ACTIVATIONS(X)                                                                          \
    X(NEURON_ACT_IDENTITY, identity)                                                               \
    X(NEURON_ACT_RELU, relu)                                                                       \
    X(NEURON_ACT_GELU_TANH, gelu_tanh)                                                             \
    X(NEURON_ACT_GELU, gelu_erf)                                                                   \
    X(NEURON_ACT_SIGMOID, sigmoid)                                                                 \
    X(NEURON_ACT_TANH, tanh_vec)                                                                   \
    X(NEURON_ACT_EXP, exp_any)                                                                     \
    X(NEURON_ACT_SILU, silu)                                                                       \
    X(NEURON_ACT_RSQRT, rsqrt_rounded)                                                             \
    X(NEURON_ACT_RECIPROCAL, reciprocal)                                                           \
    X(NEURON_ACT_LN, ln_rounded)                                                                   \
    X(NEURON_ACT_ERF, erf_rounded)                                                                 \
    X(NEURON_ACT_SQRT, sqrtf)                                                                      \
    X(NEURON_ACT_ABS, fabsf)

/* y = f(x * scale + b) over a row, one loop per function. */
NM_CLONES
static void act_rows(uint32_t f, float *y, const float *x, uint32_t n, float scale, float b) {
#define NM_ACT_ROW(func, fn)                                                                       \
    case func:                                                                                     \
        for (uint32_t i = 0; i < n; i++)                                                           \
            y[i] = fn(x[i] * scale + b);                                                           \
        return;
    switch (f) {
        NM_ACTIVATIONS(NM_ACT_ROW)
    default: /* decode refuses other functions */
        for (uint32_t i = 0; i < n; i++)
            y[i] = x[i] * scale + b;
        return;
    }
#undef NM_ACT_ROW
}

/*
 * Whether an instruction may read @s and write @d in place, element by
 * element in order: they do not overlap, or they are the same elements.
 * Otherwise the rows are staged in scratch buffers.
 */
static bool in_place_ok(const nm_tap *d, const nm_tap *s) {
    if (d->space == s->space && d->base == s->base && d->dtype == s->dtype &&
        !memcmp(d->count, s->count, sizeof(d->count)) &&
        !memcmp(d->stride, s->stride, sizeof(d->stride)))
        return true;
    return nm_taps_disjoint(d, s);
}

/*
 * Decode dst and the first @nsrc sources; all must have dst's shape. The
 * decoder has checked that unused operands are zero (the opcode table).
 */
static uint32_t decode_ew(nm_exec *ex, const struct neuron_insn *in, int nsrc, nm_tap *d, nm_tap *a,
                          nm_tap *b) {
    uint32_t st;
    if ((st = nm_operand_decode(ex, in, NEURON_INSN_DST, d)))
        return st;
    if (nsrc >= 1 && (st = nm_operand_decode(ex, in, NEURON_INSN_SRC0, a)))
        return st;
    if (nsrc >= 2 && (st = nm_operand_decode(ex, in, NEURON_INSN_SRC1, b)))
        return st;
    if (nsrc >= 1 && (a->part_count != d->part_count || a->elems != d->elems))
        return NEURON_JOB_STATUS_SHAPE;
    if (nsrc >= 2 && (b->part_count != d->part_count || b->elems != d->elems))
        return NEURON_JOB_STATUS_SHAPE;
    return NEURON_JOB_STATUS_OK;
}

/* The optional per-partition scalar operand src1: [part_count, 1]. */
static uint32_t decode_scalar(nm_exec *ex, const struct neuron_insn *in, const nm_tap *d,
                              nm_tap *t) {
    uint32_t st = nm_operand_decode(ex, in, NEURON_INSN_SRC1, t);
    if (st)
        return st;
    if (t->space && (t->part_count != d->part_count || t->elems != 1))
        return NEURON_JOB_STATUS_SHAPE;
    return NEURON_JOB_STATUS_OK;
}

static void finish_ew(nm_exec *ex, const nm_tap *d, nm_result *r, uint64_t flops_per_elem) {
    nm_mark_dirty(ex, d);
    r->flops = flops_per_elem * d->part_count * d->elems;
    r->cycles = NM_COST_ISSUE + d->elems;
}

void nm_exec_activate(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d, s, bias;
    if (in->func == 0 || in->func >= NEURON_ACT_COUNT) {
        r->status = NEURON_JOB_STATUS_DECODE;
        return;
    }
    if ((r->status = decode_ew(ex, in, 1, &d, &s, NULL)) ||
        (r->status = decode_scalar(ex, in, &d, &bias)))
        return;

    const float scale = nm_f32_from_bits(nm_le32(in->imm[0]));
    const float bimm = nm_f32_from_bits(nm_le32(in->imm[1]));
    const bool in_place = in_place_ok(&d, &s);
    float *x = ex->core->scratch[0];
    for (uint32_t p = 0; p < d.part_count; p++) {
        if (nm_aborted(ex)) {
            r->status = NEURON_JOB_STATUS_ABORTED;
            return;
        }
        float b = bimm;
        if (bias.space) {
            float bv;
            nm_tap_load(&bias, p, &bv);
            b = bv + bimm;
        }
        float *src = in_place ? nm_tap_row_f32(&s, p) : NULL, *dst = nm_tap_row_f32(&d, p);
        if (src && dst) {
            act_rows(in->func, dst, src, d.elems, scale, b);
            continue;
        }
        nm_tap_load(&s, p, x);
        act_rows(in->func, x, x, d.elems, scale, b);
        nm_tap_store(&d, p, x);
    }
    finish_ew(ex, &d, r, 1);
}

/* TENSOR_TENSOR on fp32 rows in place (contiguous, independent partitions). */
typedef struct tt_rows {
    const nm_exec *ex;
    uint32_t func;
    const nm_tap *d, *a, *b;
} tt_rows;

static uint32_t tt_rows_run(void *ctx, uint32_t p0, uint32_t p1) {
    const tt_rows *t = ctx;
    for (uint32_t p = p0; p < p1; p++) {
        if (nm_aborted(t->ex))
            return NEURON_JOB_STATUS_ABORTED;
        alu_rows(t->func, nm_tap_row_f32(t->d, p), nm_tap_row_f32(t->a, p), nm_tap_row_f32(t->b, p),
                 t->d->elems);
    }
    return NEURON_JOB_STATUS_OK;
}

void nm_exec_tensor_tensor(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d, a, b;
    if (in->func == 0 || in->func >= NEURON_ALU_COUNT) {
        r->status = NEURON_JOB_STATUS_DECODE;
        return;
    }
    if ((r->status = decode_ew(ex, in, 2, &d, &a, &b)))
        return;
    if (in->flags & NEURON_TT_F_INT32) {
        nm_int_tensor_tensor(ex, in, &d, &a, &b, r);
        return;
    }
    if (in_place_ok(&d, &a) && in_place_ok(&d, &b) && nm_tap_row_f32(&a, 0) &&
        nm_tap_row_f32(&b, 0) && nm_tap_row_f32(&d, 0)) {
        tt_rows t = {ex, in->func, &d, &a, &b};
        r->status =
            nm_split_rows(ex->core, d.part_count, 12ull * d.part_count * d.elems, tt_rows_run, &t);
        if (r->status == NEURON_JOB_STATUS_OK)
            finish_ew(ex, &d, r, 1);
        return;
    }
    float *x = ex->core->scratch[0], *y = ex->core->scratch[1];
    for (uint32_t p = 0; p < d.part_count; p++) {
        if (nm_aborted(ex)) {
            r->status = NEURON_JOB_STATUS_ABORTED;
            return;
        }
        nm_tap_load(&a, p, x);
        nm_tap_load(&b, p, y);
        alu_rows(in->func, x, x, y, d.elems);
        nm_tap_store(&d, p, x);
    }
    finish_ew(ex, &d, r, 1);
}

/* TENSOR_SCALAR on fp32 rows in place (contiguous, independent partitions). */
typedef struct ts_rows {
    const nm_exec *ex;
    const struct neuron_insn *in;
    const nm_tap *d, *s, *sc;
} ts_rows;

static uint32_t ts_rows_run(void *ctx, uint32_t p0, uint32_t p1) {
    const ts_rows *t = ctx;
    const struct neuron_insn *in = t->in;
    const bool rev0 = in->flags & NEURON_TS_F_REVERSE0, rev1 = in->flags & NEURON_TS_F_REVERSE1;
    const float s2 = nm_f32_from_bits(nm_le32(in->imm[1]));
    for (uint32_t p = p0; p < p1; p++) {
        if (nm_aborted(t->ex))
            return NEURON_JOB_STATUS_ABORTED;
        float s1 = nm_f32_from_bits(nm_le32(in->imm[0]));
        if (t->sc->space)
            nm_tap_load(t->sc, p, &s1);
        float *dst = nm_tap_row_f32(t->d, p);
        alu_scalar_rows(in->func, dst, nm_tap_row_f32(t->s, p), s1, rev0, t->d->elems);
        if (in->func2 != NEURON_ALU_NONE)
            alu_scalar_rows(in->func2, dst, dst, s2, rev1, t->d->elems);
    }
    return NEURON_JOB_STATUS_OK;
}

void nm_exec_tensor_scalar(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d, s, sc;
    const uint32_t op0 = in->func, op1 = in->func2;
    if (op0 == 0 || op0 >= NEURON_ALU_COUNT || op1 >= NEURON_ALU_COUNT ||
        (op1 == NEURON_ALU_NONE && ((in->flags & NEURON_TS_F_REVERSE1) || in->imm[1])) ||
        (!nm_tap_is_zero(&in->op[NEURON_INSN_SRC1]) && in->imm[0])) {
        r->status = NEURON_JOB_STATUS_DECODE;
        return;
    }
    if ((r->status = decode_ew(ex, in, 1, &d, &s, NULL)) ||
        (r->status = decode_scalar(ex, in, &d, &sc)))
        return;
    if (in->flags & NEURON_TS_F_INT32) {
        nm_int_tensor_scalar(ex, in, &d, &s, &sc, r);
        return;
    }

    const uint64_t flops = op1 == NEURON_ALU_NONE ? 1 : 2;
    if (in_place_ok(&d, &s) && (!sc.space || in_place_ok(&d, &sc)) && nm_tap_row_f32(&s, 0) &&
        nm_tap_row_f32(&d, 0)) {
        ts_rows t = {ex, in, &d, &s, &sc};
        r->status =
            nm_split_rows(ex->core, d.part_count, 8ull * d.part_count * d.elems, ts_rows_run, &t);
        if (r->status == NEURON_JOB_STATUS_OK)
            finish_ew(ex, &d, r, flops);
        return;
    }
    const bool rev0 = in->flags & NEURON_TS_F_REVERSE0, rev1 = in->flags & NEURON_TS_F_REVERSE1;
    const float s2 = nm_f32_from_bits(nm_le32(in->imm[1]));
    float *x = ex->core->scratch[0];
    for (uint32_t p = 0; p < d.part_count; p++) {
        if (nm_aborted(ex)) {
            r->status = NEURON_JOB_STATUS_ABORTED;
            return;
        }
        float s1 = nm_f32_from_bits(nm_le32(in->imm[0]));
        if (sc.space)
            nm_tap_load(&sc, p, &s1);
        nm_tap_load(&s, p, x);
        alu_scalar_rows(op0, x, x, s1, rev0, d.elems);
        if (op1 != NEURON_ALU_NONE)
            alu_scalar_rows(op1, x, x, s2, rev1, d.elems);
        nm_tap_store(&d, p, x);
    }
    finish_ew(ex, &d, r, flops);
}

/*
 * REDUCE sum (hw/isa.md, section 6): 16 running sums, element i into sum
 * i % 16, then the sums added pairwise. The same order on every host,
 * whatever its vector width.
 */
#define SUM_LANES 16

/*
 * 16 running sums as two halves of 8 floats, lanes 0-7 and 8-15: one ymm
 * each with AVX2 or AVX-512, where a 64-byte vector would be kept on the
 * stack and reassembled from xmm moves on every add when zmm is absent.
 */
#define SUM_HALF (SUM_LANES / 2)
typedef float sum_half __attribute__((vector_size(SUM_HALF * sizeof(float))));

/*
 * The sum of the 16 running sums @acc and the tail @x[@i..@n), as sum_row
 * (by pointer: a vector argument's ABI depends on the ISA).
 */
static inline float sum_finish(const sum_half acc[2], const float *x, uint32_t i, uint32_t n) {
    float lane[SUM_LANES];
    memcpy(lane, &acc[0], sizeof(acc[0]));
    memcpy(lane + SUM_HALF, &acc[1], sizeof(acc[1]));
    for (uint32_t l = 0; i < n; i++, l++)
        lane[l] += x[i];
    for (uint32_t w = SUM_LANES / 2; w; w /= 2)
        for (uint32_t l = 0; l < w; l++)
            lane[l] += lane[l + w];
    return lane[0];
}

/* Adds @x[0..16) to the running sums @acc. */
static inline void sum_step(sum_half acc[2], const float *x) {
    sum_half lo, hi;
    memcpy(&lo, x, sizeof(lo));
    memcpy(&hi, x + SUM_HALF, sizeof(hi));
    acc[0] += lo;
    acc[1] += hi;
}

NM_CLONES
static float sum_row(const float *x, uint32_t n) {
    sum_half acc[2] = {{0}};
    uint32_t i = 0;
    for (; i + SUM_LANES <= n; i += SUM_LANES)
        sum_step(acc, x + i);
    return sum_finish(acc, x, i, n);
}

/*
 * sum_row of 4 rows at once, @x[r] for r < 4, with the same bits: each
 * row's 16 sums are one chain of dependent adds, so a single row waits on
 * the adder's latency, while 4 independent chains keep it busy.
 */
#define SUM_ROWS 4

NM_CLONES
static void sum_rows4(const float *const x[SUM_ROWS], uint32_t n, float out[SUM_ROWS]) {
    sum_half acc[SUM_ROWS][2] = {{{0}}};
    uint32_t i = 0;
    for (; i + SUM_LANES <= n; i += SUM_LANES)
        for (int r = 0; r < SUM_ROWS; r++)
            sum_step(acc[r], x[r] + i);
    for (int r = 0; r < SUM_ROWS; r++)
        out[r] = sum_finish(acc[r], x[r], i, n);
}

void nm_exec_reduce(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d, s;
    if (in->func == 0 || in->func >= NEURON_RED_COUNT) {
        r->status = NEURON_JOB_STATUS_DECODE;
        return;
    }
    if ((r->status = nm_operand_decode(ex, in, NEURON_INSN_DST, &d)) ||
        (r->status = nm_operand_decode(ex, in, NEURON_INSN_SRC0, &s)))
        return;
    if (d.part_count != s.part_count || d.elems != 1) {
        r->status = NEURON_JOB_STATUS_SHAPE;
        return;
    }
    float *x = ex->core->scratch[0];
    /* SUM_ROWS rows of contiguous fp32 at a time, unless a result lands in a later row. */
    const bool by_rows = in->func == NEURON_RED_SUM && nm_tap_row_f32(&s, 0) && in_place_ok(&d, &s);
    for (uint32_t p = 0; p < d.part_count; p++) {
        if (nm_aborted(ex)) {
            r->status = NEURON_JOB_STATUS_ABORTED;
            return;
        }
        if (by_rows && p + SUM_ROWS <= d.part_count) {
            const float *rows[SUM_ROWS];
            float v[SUM_ROWS];
            for (int i = 0; i < SUM_ROWS; i++)
                rows[i] = nm_tap_row_f32(&s, p + (uint32_t)i);
            sum_rows4(rows, s.elems, v);
            for (int i = 0; i < SUM_ROWS; i++)
                nm_tap_store(&d, p + (uint32_t)i, &v[i]);
            p += SUM_ROWS - 1;
            continue;
        }
        const float *row = nm_tap_row_f32(&s, p);
        if (!row) {
            nm_tap_load(&s, p, x);
            row = x;
        }
        float v;
        if (in->func == NEURON_RED_SUM) {
            v = sum_row(row, s.elems);
        } else {
            v = row[0];
            for (uint32_t i = 1; i < s.elems; i++)
                v = in->func == NEURON_RED_MAX ? fmaxf(v, row[i]) : fminf(v, row[i]);
        }
        nm_tap_store(&d, p, &v);
    }
    nm_mark_dirty(ex, &d);
    r->flops = (uint64_t)s.part_count * s.elems;
    r->cycles = NM_COST_ISSUE + s.elems;
}

/*
 * SELECT: dst = mask != 0 ? a : fill, or with KEEP dst's own element in
 * the false case (not rewritten, so it keeps its bits).
 */
void nm_exec_select(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d, m, a;
    const bool keep = in->flags & NEURON_SEL_F_KEEP;
    if (keep && in->imm[0]) {
        r->status = NEURON_JOB_STATUS_DECODE;
        return;
    }
    if ((r->status = decode_ew(ex, in, 2, &d, &m, &a)))
        return;
    const float fill = nm_f32_from_bits(nm_le32(in->imm[0]));
    float *x = ex->core->scratch[0], *y = ex->core->scratch[1];
    for (uint32_t p = 0; p < d.part_count; p++) {
        if (nm_aborted(ex)) {
            r->status = NEURON_JOB_STATUS_ABORTED;
            return;
        }
        nm_tap_load(&m, p, x);
        nm_tap_load(&a, p, y);
        if (keep) {
            for (uint32_t i = 0; i < d.elems; i++)
                if (x[i] != 0.0f)
                    nm_store_f32(nm_tap_elem(&d, p, i), &y[i], d.dtype, 1, 1);
            continue;
        }
        for (uint32_t i = 0; i < d.elems; i++)
            x[i] = x[i] != 0.0f ? y[i] : fill;
        nm_tap_store(&d, p, x);
    }
    finish_ew(ex, &d, r, 1);
}

/* Whether linear free index j of @t is at byte j * esize of its partition. */
static bool tap_contiguous(const nm_tap *t) {
    const bool inner = t->count[0] == 1 || t->stride[0] == 1;
    if (t->count[1] == 1)
        return inner;
    if (t->count[0] == 1)
        return t->stride[1] == 1;
    return t->stride[0] == 1 && t->stride[1] == t->count[0];
}

void nm_exec_copy(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d, s;
    if ((r->status = decode_ew(ex, in, 1, &d, &s, NULL)))
        return;
    /* TRUNC (ISA 1.2): to an integer type, round toward zero. */
    const bool trunc = (in->flags & NEURON_COPY_F_TRUNC) &&
                       (d.dtype == NEURON_DT_INT32 || d.dtype == NEURON_DT_U8);
    float *x = ex->core->scratch[0];
    uint8_t *raw = (uint8_t *)ex->core->scratch[1];
    for (uint32_t p = 0; p < d.part_count; p++) {
        if (nm_aborted(ex)) {
            r->status = NEURON_JOB_STATUS_ABORTED;
            return;
        }
        if (s.dtype == d.dtype && tap_contiguous(&s) && tap_contiguous(&d)) {
            /* Same type, one run of bytes each: the partition's source is
             * read whole before its destination is written, as below. */
            memmove(nm_tap_elem(&d, p, 0), nm_tap_elem(&s, p, 0), (size_t)s.elems * s.esize);
            continue;
        }
        if (s.dtype == d.dtype) {
            /* Same type: bit-exact (int32 beyond 2^24, NaN payloads). */
            for (uint32_t i = 0; i < s.elems; i++)
                memcpy(raw + (size_t)i * s.esize, nm_tap_elem(&s, p, i), s.esize);
            for (uint32_t i = 0; i < s.elems; i++)
                memcpy(nm_tap_elem(&d, p, i), raw + (size_t)i * s.esize, s.esize);
            continue;
        }
        nm_tap_load(&s, p, x);
        if (trunc)
            for (uint32_t i = 0; i < d.elems; i++)
                x[i] = truncf(x[i]); /* then the conversion is exact or saturates */
        nm_tap_store(&d, p, x);
    }
    finish_ew(ex, &d, r, 0);
}

void nm_exec_memset(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d;
    if ((r->status = decode_ew(ex, in, 0, &d, NULL, NULL)))
        return;
    uint8_t val[4];
    uint32_t bits = nm_le32(in->imm[0]);
    if (d.dtype == NEURON_DT_INT32 || d.dtype == NEURON_DT_FP32) {
        memcpy(val, &in->imm[0], 4);
    } else {
        float f = nm_f32_from_bits(bits);
        nm_store_f32(val, &f, d.dtype, 1, 1);
    }
    for (uint32_t p = 0; p < d.part_count; p++)
        for (uint32_t i = 0; i < d.elems; i++)
            memcpy(nm_tap_elem(&d, p, i), val, d.esize);
    finish_ew(ex, &d, r, 0);
}

void nm_exec_iota(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d;
    if ((r->status = decode_ew(ex, in, 0, &d, NULL, NULL)))
        return;
    const int64_t base = (int32_t)nm_le32(in->arg);
    const int64_t pstep = (int32_t)nm_le32(in->imm[0]);
    const int64_t fstep = (int32_t)nm_le32(in->imm[1]);
    for (uint32_t p = 0; p < d.part_count; p++) {
        const int64_t start = base + (int64_t)p * pstep;
        /* contiguous fp32 and int32 rows (the softmax's masks): the
         * same values, without an address and a conversion each */
        float *row = nm_tap_row_f32(&d, p);
        if (row) {
            for (uint32_t i = 0; i < d.elems; i++)
                row[i] = (float)(start + (int64_t)i * fstep);
            continue;
        }
        if (d.dtype == NEURON_DT_INT32 && nm_tap_contiguous(&d)) {
            uint32_t *words = (uint32_t *)(void *)(d.base + (size_t)p * d.pitch);
            for (uint32_t i = 0; i < d.elems; i++)
                words[i] = nm_le32((uint32_t)(start + (int64_t)i * fstep)); /* low 32 bits */
            continue;
        }
        for (uint32_t i = 0; i < d.elems; i++) {
            int64_t v = start + (int64_t)i * fstep;
            uint8_t *e = nm_tap_elem(&d, p, i);
            if (d.dtype == NEURON_DT_INT32) {
                uint32_t u = nm_le32((uint32_t)v); /* low 32 bits */
                memcpy(e, &u, 4);
            } else {
                float f = (float)v;
                nm_store_f32(e, &f, d.dtype, 1, 1);
            }
        }
    }
    finish_ew(ex, &d, r, 0);
}
