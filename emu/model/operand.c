// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The operand layer, below the engines (sync.c, tensor.c, vector.c,
 * matmul.c): decoding an instruction's SBUF/PSUM operands as the opcode
 * table names them, gathering and scattering their partitions as fp32,
 * and the bookkeeping of what a job has written.
 */
#include "model_internal.h"

void nm_mark_dirty(nm_exec *ex, const nm_tap *t) {
    uint32_t end = t->offset + t->extent;
    if (t->space == NEURON_SPACE_SBUF && end > ex->core->sbuf_dirty)
        ex->core->sbuf_dirty = end;
    else if (t->space == NEURON_SPACE_PSUM && end > ex->core->psum_dirty)
        ex->core->psum_dirty = end;
}

bool nm_tap_is_zero(const struct neuron_tap *raw) {
    static const struct neuron_tap zero;
    return memcmp(raw, &zero, sizeof(zero)) == 0;
}

uint32_t nm_tap_decode(nm_exec *ex, const struct neuron_tap *raw, unsigned allowed_spaces,
                       bool optional, nm_tap *t) {
    memset(t, 0, sizeof(*t));
    if (raw->space == NEURON_SPACE_NONE) {
        if (optional && nm_tap_is_zero(raw))
            return NEURON_JOB_STATUS_OK;
        return NEURON_JOB_STATUS_DECODE;
    }
    if (raw->space > NEURON_SPACE_PSUM || !(allowed_spaces & (1u << raw->space)))
        return NEURON_JOB_STATUS_DECODE;
    if (raw->dtype == NEURON_DT_INVALID || raw->dtype >= NEURON_DT_COUNT)
        return NEURON_JOB_STATUS_DTYPE;
    if (raw->part_count == 0 || raw->part_start + raw->part_count > NEURON_PARTITIONS)
        return NEURON_JOB_STATUS_PARTITION;

    t->space = raw->space;
    t->dtype = raw->dtype;
    t->esize = NEURON_DT_SIZE(raw->dtype);
    t->part_start = raw->part_start;
    t->part_count = raw->part_count;
    t->offset = nm_le32(raw->offset);
    for (int i = 0; i < 2; i++) {
        t->count[i] = nm_le16(raw->count[i]);
        t->stride[i] = nm_le16(raw->stride[i]);
    }
    if (t->count[0] == 0 || t->count[1] == 0 ||
        (uint64_t)t->count[0] * t->count[1] > NEURON_MAX_FREE_ELEMS)
        return NEURON_JOB_STATUS_SHAPE;
    t->elems = t->count[0] * t->count[1];
    if (t->offset % t->esize)
        return NEURON_JOB_STATUS_ALIGN;

    uint64_t extent = ((uint64_t)(t->count[1] - 1) * t->stride[1] +
                       (uint64_t)(t->count[0] - 1) * t->stride[0] + 1) *
                      t->esize;
    bool sbuf = t->space == NEURON_SPACE_SBUF;
    uint32_t size = sbuf ? ex->core->sbuf_pp : ex->core->psum_pp;
    if (t->offset > size || extent > size - t->offset)
        return sbuf ? NEURON_JOB_STATUS_SBUF_RANGE : NEURON_JOB_STATUS_PSUM_RANGE;
    t->extent = (uint32_t)extent;
    t->pitch = sbuf ? ex->core->sbuf_pitch : ex->core->psum_pitch;
    t->base =
        (sbuf ? ex->core->sbuf : ex->core->psum) + (size_t)t->part_start * t->pitch + t->offset;
    return NEURON_JOB_STATUS_OK;
}

void nm_tap_load(const nm_tap *t, uint32_t p, float *restrict out) {
    const uint8_t *row = t->base + (size_t)p * t->pitch;
    if (t->count[1] == 1 || t->stride[1] == t->count[0] * t->stride[0]) {
        nm_load_f32(out, row, t->dtype, t->elems, t->stride[0]);
        return;
    }
    for (uint32_t j1 = 0; j1 < t->count[1]; j1++)
        nm_load_f32(out + (size_t)j1 * t->count[0], row + (size_t)j1 * t->stride[1] * t->esize,
                    t->dtype, t->count[0], t->stride[0]);
}

void nm_tap_store(const nm_tap *t, uint32_t p, const float *restrict in) {
    uint8_t *row = t->base + (size_t)p * t->pitch;
    if (t->count[1] == 1 || t->stride[1] == t->count[0] * t->stride[0]) {
        nm_store_f32(row, in, t->dtype, t->elems, t->stride[0]);
        return;
    }
    for (uint32_t j1 = 0; j1 < t->count[1]; j1++)
        nm_store_f32(row + (size_t)j1 * t->stride[1] * t->esize, in + (size_t)j1 * t->count[0],
                     t->dtype, t->count[0], t->stride[0]);
}

uint32_t nm_operand_decode(nm_exec *ex, const struct neuron_insn *in, unsigned k, nm_tap *t) {
    const unsigned sbuf = 1u << NEURON_SPACE_SBUF, psum = 1u << NEURON_SPACE_PSUM;
    switch (neuron_opcode_lookup(in->opcode)->operand[k]) {
    case NEURON_OPERAND_SBUF:
        return nm_tap_decode(ex, &in->op[k], sbuf, false, t);
    case NEURON_OPERAND_PSUM:
        return nm_tap_decode(ex, &in->op[k], psum, false, t);
    case NEURON_OPERAND_ONCHIP:
        return nm_tap_decode(ex, &in->op[k], sbuf | psum, false, t);
    case NEURON_OPERAND_ONCHIP_OPT:
        return nm_tap_decode(ex, &in->op[k], sbuf | psum, true, t);
    default: /* absent (checked by the decoder) or not an on-core operand */
        memset(t, 0, sizeof(*t));
        return NEURON_JOB_STATUS_OK;
    }
}
