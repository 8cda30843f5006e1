// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ISA 1.2's integer arithmetic: TENSOR_TENSOR with NEURON_TT_F_INT32 and
 * TENSOR_SCALAR with NEURON_TS_F_INT32. Every operand is INT32 and the
 * operation is exact in 32-bit two's complement: add, sub and mul wrap
 * modulo 2^32, the comparisons give 1 or 0; div is not defined. Each
 * partition's operands are read whole before its destination is written,
 * so a destination may overlap its sources.
 */
#include <string.h>

#include "model_internal.h"

static bool int_alu_ok(uint32_t op) {
    return op != NEURON_ALU_DIV && op < NEURON_ALU_COUNT;
}

/* @a op @b exactly; unsigned arithmetic wraps where int32's would overflow. */
static int32_t int_alu(uint32_t op, int32_t a, int32_t b) {
    switch (op) {
    case NEURON_ALU_ADD:
        return (int32_t)((uint32_t)a + (uint32_t)b);
    case NEURON_ALU_SUB:
        return (int32_t)((uint32_t)a - (uint32_t)b);
    case NEURON_ALU_MUL:
        return (int32_t)((uint32_t)a * (uint32_t)b);
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
    case NEURON_ALU_IS_GE:
        return a >= b;
    default:
        return a;
    }
}

static int32_t int_at(const nm_tap *t, uint32_t p, uint32_t i) {
    uint32_t v;
    memcpy(&v, nm_tap_elem(t, p, i), 4);
    return (int32_t)nm_le32(v);
}

static void int_put(const nm_tap *t, uint32_t p, uint32_t i, int32_t v) {
    const uint32_t u = nm_le32((uint32_t)v);
    memcpy(nm_tap_elem(t, p, i), &u, 4);
}

static bool all_int32(const nm_tap *const *t, int n) {
    for (int k = 0; k < n; k++)
        if (t[k]->space && t[k]->dtype != NEURON_DT_INT32)
            return false;
    return true;
}

static void finish(nm_exec *ex, const nm_tap *d, nm_result *r, uint64_t flops_per_elem) {
    nm_mark_dirty(ex, d);
    r->flops = flops_per_elem * d->part_count * d->elems;
    r->cycles = NM_COST_ISSUE + d->elems;
}

void nm_int_tensor_tensor(nm_exec *ex, const struct neuron_insn *in, const nm_tap *d,
                          const nm_tap *a, const nm_tap *b, nm_result *r) {
    const nm_tap *ops[] = {d, a, b};
    if (!int_alu_ok(in->func)) {
        r->status = NEURON_JOB_STATUS_DECODE;
        return;
    }
    if (!all_int32(ops, 3)) {
        r->status = NEURON_JOB_STATUS_DTYPE;
        return;
    }
    int32_t *x = (int32_t *)(void *)ex->core->scratch[0];
    for (uint32_t p = 0; p < d->part_count; p++) {
        if (nm_aborted(ex)) {
            r->status = NEURON_JOB_STATUS_ABORTED;
            return;
        }
        for (uint32_t i = 0; i < d->elems; i++)
            x[i] = int_alu(in->func, int_at(a, p, i), int_at(b, p, i));
        for (uint32_t i = 0; i < d->elems; i++)
            int_put(d, p, i, x[i]);
    }
    finish(ex, d, r, 1);
}

void nm_int_tensor_scalar(nm_exec *ex, const struct neuron_insn *in, const nm_tap *d,
                          const nm_tap *s, const nm_tap *sc, nm_result *r) {
    const nm_tap *ops[] = {d, s, sc};
    const uint32_t op0 = in->func, op1 = in->func2;
    if (!int_alu_ok(op0) || (op1 != NEURON_ALU_NONE && !int_alu_ok(op1))) {
        r->status = NEURON_JOB_STATUS_DECODE;
        return;
    }
    if (!all_int32(ops, 3)) {
        r->status = NEURON_JOB_STATUS_DTYPE;
        return;
    }
    const bool rev0 = in->flags & NEURON_TS_F_REVERSE0, rev1 = in->flags & NEURON_TS_F_REVERSE1;
    const int32_t s2 = (int32_t)nm_le32(in->imm[1]);
    int32_t *x = (int32_t *)(void *)ex->core->scratch[0];
    for (uint32_t p = 0; p < d->part_count; p++) {
        if (nm_aborted(ex)) {
            r->status = NEURON_JOB_STATUS_ABORTED;
            return;
        }
        const int32_t s1 = sc->space ? int_at(sc, p, 0) : (int32_t)nm_le32(in->imm[0]);
        for (uint32_t i = 0; i < d->elems; i++) {
            const int32_t v = int_at(s, p, i);
            int32_t y = rev0 ? int_alu(op0, s1, v) : int_alu(op0, v, s1);
            if (op1 != NEURON_ALU_NONE)
                y = rev1 ? int_alu(op1, s2, y) : int_alu(op1, y, s2);
            x[i] = y;
        }
        for (uint32_t i = 0; i < d->elems; i++)
            int_put(d, p, i, x[i]);
    }
    finish(ex, d, r, op1 == NEURON_ALU_NONE ? 1 : 2);
}
