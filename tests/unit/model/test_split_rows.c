// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Instructions split by partitions over a core's threads (nm_split_rows):
 * DMA loads and stores, TENSOR_TENSOR and TENSOR_SCALAR large enough to
 * split give the same bits as on one thread, whatever order the parts run
 * in; the instructions whose partitions are not independent (a store
 * whose rows overlap, a scatter-add) and the small ones are not split.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

enum { P = 128, F = 1024 };

/* Runs the parts on this thread, last first; counts the parts run. */
static void run_backwards(void *opaque, nm_task_fn *task, void *ctx, uint32_t count) {
    for (uint32_t i = count; i-- > 0;)
        task(ctx, i);
    *(uint32_t *)opaque += count;
}

static void fill(float *v, size_t n, uint64_t seed, float scale) {
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++)
        v[i] = tu_uniform(&s) * scale;
}

static uint32_t in_buf(tenv *t, const float *v, size_t n) {
    uint8_t *ptr;
    uint32_t slot = te_buffer(t, n * 4, NEURON_BIND_READ, &ptr);
    memcpy(ptr, v, n * 4);
    return slot;
}

/* @from signals @sem, @to waits for it (and consumes it). */
static void handoff(pb_prog *p, int from, int to, uint8_t sem) {
    pb_signal(p, from, sem, 1);
    pb_wait(p, to, sem, 1, true);
}

typedef struct outputs {
    float *sum;     /* (a + b) * scale[p] - 0.5, through SBUF */
    float *overlap; /* every partition's row stored at one place */
} outputs;

/*
 * One job: a and b loaded, added (TENSOR_TENSOR), then scaled by a
 * per-partition scalar and shifted (TENSOR_SCALAR, in place), stored; and
 * the same rows stored with a partition stride of 0. Returns the parts
 * the core's threads ran.
 */
static uint32_t run(const nm_parallel *par, uint32_t *parts, const float *a, const float *b,
                    const float *scale, outputs *out) {
    tenv *t = te_new();
    assert_true(nm_core_set_parallel(t->core, par));
    pb_prog p;
    pb_init(&p);
    uint32_t sa = in_buf(t, a, P * F), sb = in_buf(t, b, P * F), ss = in_buf(t, scale, P);
    uint8_t *sum, *overlap;
    uint32_t so = te_buffer(t, 4ull * P * F, NEURON_BIND_WRITE, &sum);
    uint32_t sv = te_buffer(t, 4ull * F, NEURON_BIND_WRITE, &overlap);
    const uint32_t row = 4 * F;
    pb_dma(&p, true, pb_sbuf(NEURON_DT_FP32, 0, P, 0, F), sa, 0, row, 4, 0);
    pb_dma(&p, true, pb_sbuf(NEURON_DT_FP32, 0, P, row, F), sb, 0, row, 4, 0);
    pb_dma(&p, true, pb_sbuf(NEURON_DT_FP32, 0, P, 3 * row, 1), ss, 0, 4, 4, 0);
    handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_VECTOR, 0);
    pb_tt(&p, NEURON_ALU_ADD, pb_sbuf(NEURON_DT_FP32, 0, P, 2 * row, F),
          pb_sbuf(NEURON_DT_FP32, 0, P, 0, F), pb_sbuf(NEURON_DT_FP32, 0, P, row, F));
    pb_ts(&p, NEURON_ENGINE_VECTOR, NEURON_ALU_MUL, NEURON_ALU_SUB, 0,
          pb_sbuf(NEURON_DT_FP32, 0, P, 2 * row, F), pb_sbuf(NEURON_DT_FP32, 0, P, 2 * row, F),
          pb_sbuf(NEURON_DT_FP32, 0, P, 3 * row, 1), 0.0f, 0.5f);
    handoff(&p, NEURON_ENGINE_VECTOR, NEURON_ENGINE_SYNC, 1);
    pb_dma(&p, false, pb_sbuf(NEURON_DT_FP32, 0, P, 2 * row, F), so, 0, row, 4, 0);
    pb_dma(&p, false, pb_sbuf(NEURON_DT_FP32, 0, P, 2 * row, F), sv, 0, 0, 4, 0);
    pb_end_all(&p);
    *parts = 0;
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    memcpy(out->sum, sum, 4ull * P * F);
    memcpy(out->overlap, overlap, 4ull * F);
    pb_free(&p);
    te_free(t);
    return *parts;
}

static void test_split_rows(void **state) {
    (void)state;
    float *a = malloc(4ull * P * F), *b = malloc(4ull * P * F), scale[P];
    outputs want = {malloc(4ull * P * F), malloc(4ull * F)};
    outputs got = {malloc(4ull * P * F), malloc(4ull * F)};
    fill(a, P * F, 3, 4.0f);
    fill(b, P * F, 5, 4.0f);
    fill(scale, P, 7, 2.0f);

    uint32_t parts = 0;
    const nm_parallel one = {NULL, NULL, 1};
    assert_int_equal(run(&one, &parts, a, b, scale, &want), 0);
    for (uint32_t p = 0; p < P; p++)
        for (uint32_t i = 0; i < F; i++) {
            float x = (a[p * F + i] + b[p * F + i]) * scale[p] - 0.5f;
            if (memcmp(&x, &want.sum[p * F + i], 4))
                fail_msg("[%u, %u]: got %g want %g", p, i, (double)want.sum[p * F + i], (double)x);
        }
    /* The last partition's row is the last one written. */
    assert_memory_equal(want.overlap, want.sum + (P - 1) * F, 4ull * F);

    for (uint32_t width = 2; width <= NM_MAX_PARALLEL; width++) {
        const nm_parallel par = {run_backwards, &parts, width};
        /* Split: the two large loads, the add, the scaling and the dense store. */
        assert_int_equal(run(&par, &parts, a, b, scale, &got), 5 * width);
        assert_memory_equal(got.sum, want.sum, 4ull * P * F);
        assert_memory_equal(got.overlap, want.overlap, 4ull * F);
    }
    free(a);
    free(b);
    free(want.sum);
    free(want.overlap);
    free(got.sum);
    free(got.overlap);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
