// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * RANDOM (ISA 1.2, Vector engine): Philox-4x32-10 random numbers from a
 * seed and an offset held in an on-core operand, so one program gives a
 * new, reproducible stream whenever its operand changes. The generator
 * itself is neuron_philox4x32() of neuron_isa.h (the one definition the
 * compiler's reference uses too); this file maps elements to counters as
 * hw/isa.md, RANDOM, defines.
 */
#include "model_internal.h"

void nm_exec_random(nm_exec *ex, const struct neuron_insn *in, nm_result *r) {
    nm_tap d, k;
    if ((r->status = nm_operand_decode(ex, in, NEURON_INSN_DST, &d)) ||
        (r->status = nm_operand_decode(ex, in, NEURON_INSN_SRC0, &k)))
        return;
    if ((d.dtype != NEURON_DT_FP32 && d.dtype != NEURON_DT_INT32) || k.dtype != NEURON_DT_INT32) {
        r->status = NEURON_JOB_STATUS_DTYPE;
        return;
    }
    if (k.part_count != 1 || k.elems != NEURON_RANDOM_KEY_WORDS) {
        r->status = NEURON_JOB_STATUS_SHAPE;
        return;
    }
    uint32_t w[NEURON_RANDOM_KEY_WORDS];
    for (uint32_t i = 0; i < NEURON_RANDOM_KEY_WORDS; i++) {
        memcpy(&w[i], nm_tap_elem(&k, 0, i), 4);
        w[i] = nm_le32(w[i]);
    }
    const uint32_t key[2] = {w[0], w[1]};
    const uint64_t base = nm_le32(in->arg), pstep = nm_le32(in->imm[0]);
    const bool uniform = d.dtype == NEURON_DT_FP32;
    /* Read before the destination is written: the operands may overlap. */
    for (uint32_t p = 0; p < d.part_count; p++) {
        if (nm_aborted(ex)) {
            r->status = NEURON_JOB_STATUS_ABORTED;
            return;
        }
        const uint64_t n0 = base + p * pstep;
        uint32_t block[4];
        uint64_t have = UINT64_MAX; /* the counter block[] holds */
        for (uint32_t j = 0; j < d.elems; j++) {
            const uint64_t n = n0 + j, q = n >> 2;
            if (q != have) {
                const uint32_t ctr[4] = {(uint32_t)q, (uint32_t)(q >> 32), w[2], w[3]};
                neuron_philox4x32(ctr, key, NEURON_PHILOX_ROUNDS, block);
                have = q;
            }
            const uint32_t word = block[n & 3];
            uint32_t bits =
                uniform ? nm_f32_bits((float)neuron_random_uniform24(word) * 0x1p-24f) : word;
            bits = nm_le32(bits);
            memcpy(nm_tap_elem(&d, p, j), &bits, 4);
        }
    }
    nm_mark_dirty(ex, &d);
    r->cycles = NM_COST_ISSUE + d.elems;
}
