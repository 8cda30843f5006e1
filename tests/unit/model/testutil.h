/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared by the model's test files: data helpers and plain references. */
#ifndef NEURON_TEST_MODEL_UTIL_H
#define NEURON_TEST_MODEL_UTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "progbuild.h"

static inline uint32_t tu_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s >> 16);
}

/* Uniform in [-1, 1). */
static inline float tu_uniform(uint64_t *s) {
    return (float)tu_rand(s) / 2147483648.0f - 1.0f;
}

static inline float tu_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t tu_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Reference fp32 -> bf16, round to nearest even, by comparing neighbours. */
static inline uint16_t tu_bf16(float x) {
    uint32_t u = tu_bits(x);
    if (isnan(x))
        return (uint16_t)((u >> 16) | 0x40);
    if (isinf(x))
        return (uint16_t)(u >> 16);
    uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
    double dlo = tu_f32(lo), dhi = tu_f32(hi), dx = x;
    double elo = fabs(dx - dlo), ehi = fabs(dhi - dx);
    if (elo < ehi || (elo == ehi && !(lo & 0x10000u)))
        return (uint16_t)(lo >> 16);
    return (uint16_t)(hi >> 16);
}

static inline float tu_from_bf16(uint16_t h) {
    return tu_f32((uint32_t)h << 16);
}

static inline uint16_t tu_f16(float x) {
    _Float16 h = (_Float16)x;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}

static inline float tu_from_f16(uint16_t u) {
    _Float16 h;
    memcpy(&h, &u, 2);
    return (float)h;
}

/* Round @x through @dtype (a float type) and back. */
static inline float tu_round(uint8_t dtype, float x) {
    switch (dtype) {
    case NEURON_DT_BF16:
        return tu_from_bf16(tu_bf16(x));
    case NEURON_DT_FP16:
        return tu_from_f16(tu_f16(x));
    default:
        return x;
    }
}

/* Store fp32 values as @dtype (host layout: little endian). */
static inline void tu_pack(uint8_t dtype, void *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (dtype == NEURON_DT_BF16) {
            uint16_t h = tu_bf16(src[i]);
            memcpy((uint8_t *)dst + 2 * i, &h, 2);
        } else if (dtype == NEURON_DT_FP16) {
            uint16_t h = tu_f16(src[i]);
            memcpy((uint8_t *)dst + 2 * i, &h, 2);
        } else if (dtype == NEURON_DT_INT32) {
            int32_t v = (int32_t)lrintf(src[i]);
            memcpy((uint8_t *)dst + 4 * i, &v, 4);
        } else {
            memcpy((uint8_t *)dst + 4 * i, &src[i], 4);
        }
    }
}

static inline void tu_unpack(uint8_t dtype, float *dst, const void *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        int32_t v;
        if (dtype == NEURON_DT_BF16) {
            memcpy(&h, (const uint8_t *)src + 2 * i, 2);
            dst[i] = tu_from_bf16(h);
        } else if (dtype == NEURON_DT_FP16) {
            memcpy(&h, (const uint8_t *)src + 2 * i, 2);
            dst[i] = tu_from_f16(h);
        } else if (dtype == NEURON_DT_INT32) {
            memcpy(&v, (const uint8_t *)src + 4 * i, 4);
            dst[i] = (float)v;
        } else {
            memcpy(&dst[i], (const uint8_t *)src + 4 * i, 4);
        }
    }
}

static inline int tu_close(double got, double want, double rtol, double atol) {
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Tolerances of hw/isa.md, "Numerics", for results written as @dtype. */
static inline double tu_rtol(uint8_t dtype) {
    return dtype == NEURON_DT_BF16 ? 1e-2 : dtype == NEURON_DT_FP16 ? 2e-3 : 1e-5;
}

/* An ALU op of TENSOR_TENSOR/TENSOR_SCALAR in fp32, as hw/isa.md defines it. */
static inline float tu_ref_alu(uint8_t op, float a, float b) {
    switch (op) {
    case NEURON_ALU_ADD:
        return a + b;
    case NEURON_ALU_SUB:
        return a - b;
    case NEURON_ALU_MUL:
        return a * b;
    case NEURON_ALU_MAX:
        return a > b ? a : b;
    case NEURON_ALU_MIN:
        return a < b ? a : b;
    case NEURON_ALU_DIV:
        return a / b;
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
    case NEURON_ALU_IS_GE:
        return a >= b;
    }
    return NAN;
}

/*
 * Runs @in as the second instruction of @engine's stream (after a NOP) and
 * fails the test unless the job ends with @status and, for a fault, the
 * fault names that instruction (info 1) on that engine.
 */
static inline void tu_expect_fault(int engine, const struct neuron_insn *in, uint32_t status) {
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    pb_emit(&p, engine, NEURON_OP_NOP);
    *pb_emit(&p, engine, 0) = *in;
    pb_end(&p, engine);
    uint32_t st = te_run(t, &p);
    const bool fault = status != NEURON_JOB_STATUS_OK;
    if (st != status || (fault && (t->job.info != 1 || t->job.fault_engine != engine)))
        fail_msg("opcode %#x func %u flags %#x: got status %#x info %u engine %u, want %#x 1 %d",
                 in->opcode, in->func, in->flags, st, t->job.info, t->job.fault_engine, status,
                 engine);
    pb_free(&p);
    te_free(t);
}

#endif /* NEURON_TEST_MODEL_UTIL_H */
