// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * An instruction's partitions split in ranges over the core's host threads
 * (nm_split_rows, model_internal.h); MATMUL splits its columns itself
 * (tensor.c).
 */
#include "model_internal.h"

typedef struct split_rows {
    nm_rows_fn *fn;
    void *ctx;
    uint32_t count, parts;
    uint32_t status[NM_MAX_PARALLEL];
} split_rows;

static void split_rows_part(void *ctx, uint32_t i) {
    split_rows *s = ctx;
    s->status[i] = s->fn(s->ctx, s->count * i / s->parts, s->count * (i + 1) / s->parts);
}

uint32_t nm_split_rows(nm_core *core, uint32_t count, uint64_t bytes, nm_rows_fn *fn, void *ctx) {
    uint32_t parts = core->parallel.width < count ? core->parallel.width : count;
    if (parts < 2 || bytes < NM_SPLIT_ROWS_BYTES)
        return fn(ctx, 0, count);
    split_rows s = {fn, ctx, count, parts, {0}};
    core->parallel.run(core->parallel.opaque, split_rows_part, &s, parts);
    for (uint32_t i = 0; i < parts; i++)
        if (s.status[i] != NEURON_JOB_STATUS_OK)
            return s.status[i];
    return NEURON_JOB_STATUS_OK;
}
