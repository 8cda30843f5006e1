// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * MATMUL on every kernel path the host supports, bit for bit against a
 * scalar reference of the same rounding (hw/isa.md, section 6): each
 * element of C starts from its old PSUM value (accumulate) or 0 and takes
 * one multiply-add per k in increasing k order, fused on the FMA paths,
 * product and sum rounded separately on the portable one. Shapes cover the
 * edges of the kernels' tiles (K, M, N of 1, 127, 128; N 1..512), every
 * pair of input dtypes, accumulate on and off, operands whose rows are
 * not contiguous, and a MATMUL split by columns into parts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "matmul.h"
#include "testutil.h"

/* SBUF offsets (bytes per partition) and the PSUM bank of the result. */
#define OFF_A 0u
#define OFF_B 4096u
#define OFF_C0 16384u
#define OFF_OUT 32768u
#define BANK (2u * NEURON_PSUM_BANK_SIZE)

typedef struct mm_case {
    uint8_t dta, dtb;
    uint32_t K, M, N;
    bool acc;
    uint32_t b_stride; /* element stride of B's rows: 1 contiguous, 2 not */
    bool dst_split;    /* PSUM destination as two halves with a gap */
    uint32_t a_stride; /* element stride of A's rows: 1 contiguous, 2 or 3 not */
} mm_case;

typedef struct fixture {
    tenv *t;
    uint32_t sa, sb, sc0, so;
    uint8_t *pa, *pb, *pc0, *po;
    float *a, *b, *c0, *want;
    uint64_t seed;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->t = te_new();
    const size_t ka = 4ull * NEURON_MM_MAX_K * NEURON_MM_MAX_M,
                 kb = 8ull * NEURON_MM_MAX_K * NEURON_MM_MAX_N,
                 mn = 4ull * NEURON_MM_MAX_M * NEURON_MM_MAX_N;
    f->sa = te_buffer(f->t, ka, NEURON_BIND_READ, &f->pa);
    f->sb = te_buffer(f->t, kb, NEURON_BIND_READ, &f->pb);
    f->sc0 = te_buffer(f->t, mn, NEURON_BIND_READ, &f->pc0);
    f->so = te_buffer(f->t, mn, NEURON_BIND_WRITE, &f->po);
    f->a = malloc(ka);
    f->b = malloc(kb);
    f->c0 = malloc(mn);
    f->want = malloc(mn);
    assert_true(f->a && f->b && f->c0 && f->want);
    f->seed = 0x9e3779b97f4a7c15ull;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    nm_mm_path_select(nm_mm_path_host());
    te_free(f->t);
    free(f->a);
    free(f->b);
    free(f->c0);
    free(f->want);
    free(f);
    return 0;
}

/* Random values of @dt (so that loading them is exact), in [-scale, scale). */
static void fill(fixture *f, float *v, size_t n, uint8_t dt, float scale) {
    for (size_t i = 0; i < n; i++)
        v[i] = tu_round(dt, tu_uniform(&f->seed) * scale);
}

static float madd(nm_mm_path path, float c, float a, float b) {
    if (path == NM_MM_PORTABLE) {
        float p = a * b; /* ISO C: no contraction */
        return c + p;
    }
    return fmaf(a, b, c);
}

/* handoff as in test_isa.c: @from signals @sem, @to waits for it. */
static void handoff(pb_prog *p, int from, int to, uint8_t sem) {
    pb_signal(p, from, sem, 1);
    pb_wait(p, to, sem, 1, true);
}

static struct neuron_tap dst_tap(const mm_case *c) {
    if (!c->dst_split)
        return pb_psum(NEURON_DT_FP32, 0, c->M, BANK, c->N);
    /* N (even) = 2 x N/2 columns, the second half 8 elements after the first. */
    return pb_tap2(NEURON_SPACE_PSUM, NEURON_DT_FP32, 0, c->M, BANK, c->N / 2, 1, 2, c->N / 2 + 8);
}

static void run_case(fixture *f, nm_mm_path path, const mm_case *c) {
    const uint32_t K = c->K, M = c->M, N = c->N;
    const uint32_t ea = NEURON_DT_SIZE(c->dta), eb = NEURON_DT_SIZE(c->dtb);
    fill(f, f->a, (size_t)K * M, c->dta, 2.0f);
    fill(f, f->b, (size_t)K * N, c->dtb, 3.0f);
    fill(f, f->c0, (size_t)M * N, NEURON_DT_FP32, 50.0f);
    tu_pack(c->dta, f->pa, f->a, (size_t)K * M);
    tu_pack(c->dtb, f->pb, f->b, (size_t)K * N);
    tu_pack(NEURON_DT_FP32, f->pc0, f->c0, (size_t)M * N);

    pb_prog p;
    pb_init(&p);
    const struct neuron_tap ta =
        pb_tap2(NEURON_SPACE_SBUF, c->dta, 0, K, OFF_A, M, (uint16_t)c->a_stride, 1, 0);
    const struct neuron_tap tb =
        pb_tap2(NEURON_SPACE_SBUF, c->dtb, 0, K, OFF_B, N, (uint16_t)c->b_stride, 1, 0);
    const struct neuron_tap tc0 = pb_sbuf(NEURON_DT_FP32, 0, M, OFF_C0, N);
    const struct neuron_tap tout = pb_sbuf(NEURON_DT_FP32, 0, M, OFF_OUT, N);
    pb_dma(&p, true, ta, f->sa, 0, M * ea, ea, 0);
    pb_dma(&p, true, tb, f->sb, 0, N * eb, eb, 0);
    pb_dma(&p, true, tc0, f->sc0, 0, N * 4, 4, 0);
    handoff(&p, NEURON_ENGINE_SYNC, NEURON_ENGINE_VECTOR, 0);
    if (c->acc)
        pb_copy(&p, NEURON_ENGINE_VECTOR, dst_tap(c), tc0);
    handoff(&p, NEURON_ENGINE_VECTOR, NEURON_ENGINE_TENSOR, 1);
    pb_matmul(&p, dst_tap(c), ta, tb, c->acc);
    handoff(&p, NEURON_ENGINE_TENSOR, NEURON_ENGINE_VECTOR, 2);
    pb_copy(&p, NEURON_ENGINE_VECTOR, tout, dst_tap(c));
    handoff(&p, NEURON_ENGINE_VECTOR, NEURON_ENGINE_SYNC, 3);
    pb_dma(&p, false, tout, f->so, 0, N * 4, 4, 0);
    pb_end_all(&p);
    uint32_t st = te_run(f->t, &p);
    pb_free(&p);
    if (st != NEURON_JOB_STATUS_OK)
        fail_msg("%s K %u M %u N %u: status %#x", nm_mm_path_name(path), K, M, N, st);

    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++) {
            float want = c->acc ? f->c0[(size_t)m * N + n] : 0.0f;
            for (uint32_t k = 0; k < K; k++)
                want = madd(path, want, f->a[(size_t)k * M + m], f->b[(size_t)k * N + n]);
            uint32_t got;
            memcpy(&got, f->po + 4 * ((size_t)m * N + n), 4);
            if (got != tu_bits(want))
                fail_msg("%s dtypes %u,%u K %u M %u N %u acc %d a_stride %u b_stride %u split %d: "
                         "[%u,%u] = %#x (%a), want %#x (%a)",
                         nm_mm_path_name(path), c->dta, c->dtb, K, M, N, c->acc, c->a_stride,
                         c->b_stride, c->dst_split, m, n, got, (double)tu_f32(got), tu_bits(want),
                         (double)want);
        }
}

/* Run @cases on every path the host supports. */
/* Runs @cases on every matmul path the host has; returns how many paths. */
static unsigned on_every_path(fixture *f, const mm_case *cases, size_t n) {
    unsigned paths = 0;
    for (nm_mm_path path = 0; path < NM_MM_PATHS; path++) {
        if (!nm_mm_path_select(path))
            continue;
        paths++;
        for (size_t i = 0; i < n; i++)
            run_case(f, path, &cases[i]);
    }
    assert_true(paths >= 1);
    nm_mm_path_select(nm_mm_path_host());
    return paths;
}

static void test_edge_shapes(void **state) {
    static const uint32_t km[] = {1, 127, 128}, ns[] = {1, 127, 128, 512};
    mm_case cases[3 * 3 * 4 * 2];
    size_t n = 0;
    for (size_t k = 0; k < 3; k++)
        for (size_t m = 0; m < 3; m++)
            for (size_t j = 0; j < 4; j++)
                for (int acc = 0; acc < 2; acc++)
                    cases[n++] = (mm_case){
                        NEURON_DT_FP32, NEURON_DT_FP32, km[k], km[m], ns[j], acc, 1, false, 1};
    on_every_path(*state, cases, n);
}

static void test_every_n(void **state) {
    mm_case cases[NEURON_MM_MAX_N];
    for (uint32_t n = 1; n <= NEURON_MM_MAX_N; n++)
        cases[n - 1] = (mm_case){NEURON_DT_FP32, NEURON_DT_FP32, 5, 9, n, n % 2, 1, false, 1};
    on_every_path(*state, cases, NEURON_MM_MAX_N);
}

static void test_dtype_pairs(void **state) {
    static const uint8_t dts[] = {NEURON_DT_FP32, NEURON_DT_BF16, NEURON_DT_FP16};
    mm_case cases[3 * 3 * 2];
    size_t n = 0;
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 3; j++)
            for (int acc = 0; acc < 2; acc++)
                cases[n++] = (mm_case){dts[i], dts[j], 127, 127, 129, acc, 1, false, 1};
    on_every_path(*state, cases, n);
}

/*
 * Rows of A, B or the PSUM destination that are not contiguous: such
 * operands are packed whole before the tiles, contiguous ones panel by
 * panel between them.
 */
static void test_strided_operands(void **state) {
    static const mm_case cases[] = {
        {NEURON_DT_FP32, NEURON_DT_FP32, 128, 128, 512, true, 2, false, 1},
        {NEURON_DT_BF16, NEURON_DT_BF16, 100, 33, 77, false, 2, false, 1},
        {NEURON_DT_FP32, NEURON_DT_FP32, 128, 128, 496, true, 1, true, 1},
        {NEURON_DT_FP16, NEURON_DT_BF16, 64, 127, 130, true, 2, true, 1},
        {NEURON_DT_FP32, NEURON_DT_FP32, 128, 128, 512, true, 1, false, 2},
        {NEURON_DT_BF16, NEURON_DT_FP32, 127, 127, 129, false, 1, false, 3},
        {NEURON_DT_FP16, NEURON_DT_BF16, 1, 9, 34, true, 2, true, 2},
    };
    on_every_path(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

/*
 * A runner of a split MATMUL's parts on this thread, last part first, so
 * that a part writing outside its columns or reading another's packed
 * operands shows; it counts the parts run.
 */
static void run_backwards(void *opaque, nm_task_fn *task, void *ctx, uint32_t count) {
    for (uint32_t i = count; i-- > 0;)
        task(ctx, i);
    *(uint32_t *)opaque += count;
}

/*
 * Split over 2, 3 and 4 parts: the same bits as the reference, on every
 * path, for every shape above that is large enough to split; smaller
 * ones, and those whose B rows are not contiguous, are not split.
 */
static void test_split(void **state) {
    fixture *f = *state;
    static const mm_case cases[] = {
        {NEURON_DT_FP32, NEURON_DT_FP32, 128, 128, 512, true, 1, false, 1},
        {NEURON_DT_FP32, NEURON_DT_FP32, 128, 128, 512, false, 1, false, 2},
        {NEURON_DT_BF16, NEURON_DT_FP32, 128, 127, 258, true, 1, true, 1},
        {NEURON_DT_FP16, NEURON_DT_BF16, 127, 128, 129, false, 1, false, 1},
        {NEURON_DT_FP32, NEURON_DT_FP32, 128, 128, 496, true, 1, true, 1},
    };
    const size_t n = sizeof(cases) / sizeof(cases[0]);
    for (uint32_t width = 2; width <= NM_MAX_PARALLEL; width++) {
        uint32_t parts = 0;
        const nm_parallel par = {run_backwards, &parts, width};
        assert_true(nm_core_set_parallel(f->t->core, &par));
        on_every_path(f, cases, n);
        assert_true(parts >= 2 * n);
        /*
         * Too small, and B strided: the MATMUL in one part, on the job's
         * thread. The second case's loads of B and C0 and its store (256
         * KiB each) are split by partitions (test_split_rows.c), on each
         * of the paths.
         */
        parts = 0;
        const mm_case small[] = {
            {NEURON_DT_FP32, NEURON_DT_FP32, 64, 128, 128, true, 1, false, 1},
            {NEURON_DT_FP32, NEURON_DT_FP32, 128, 128, 512, true, 2, false, 1},
        };
        const unsigned paths = on_every_path(f, small, 2);
        assert_int_equal(parts, 3 * width * paths);
    }
    const nm_parallel none = {NULL, NULL, 1};
    assert_true(nm_core_set_parallel(f->t->core, &none));
    const nm_parallel wide = {run_backwards, NULL, NM_MAX_PARALLEL + 1};
    assert_false(nm_core_set_parallel(f->t->core, &wide));
}

static void test_paths(void **state) {
    (void)state;
    /* The portable path is always there; the host's choice is supported. */
    assert_true(nm_mm_path_supported(NM_MM_PORTABLE));
    assert_true(nm_mm_path_supported(nm_mm_path_host()));
    assert_int_equal(nm_mm_path_current(), nm_mm_path_host());
    assert_false(nm_mm_path_select(NM_MM_PATHS));
    printf("matmul path on this host: %s\n", nm_mm_path_name(nm_mm_path_host()));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_edge_shapes),
        cmocka_unit_test(test_every_n),
        cmocka_unit_test(test_dtype_pairs),
        cmocka_unit_test(test_strided_operands),
        cmocka_unit_test(test_split),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
