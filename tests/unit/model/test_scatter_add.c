// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * DMA_SCATTER_ADD (ISA 1.2, hw/isa.md): rows of SBUF added into the rows
 * of a binding that int32 indices select, against a reference written
 * here that adds in increasing partition order in fp32 and rounds to the
 * element type after each addition: repeated indices (where an overwrite
 * or another order gives other bits), bf16, a strided memory pattern, a
 * host (SG) binding, and the faults: an index out of range changes
 * nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "testutil.h"

#define F32 NEURON_DT_FP32
#define BF16 NEURON_DT_BF16
#define I32 NEURON_DT_INT32

enum { ROWS = 70, D = 33, NP = 128, SRC_OFF = 1024 };

static uint32_t esz(uint8_t dt) {
    return NEURON_DT_SIZE(dt);
}

struct scat {
    uint8_t dtype;
    uint32_t np;
    const int32_t *idx;
    uint32_t limit;      /* imm[1] */
    uint32_t index_at;   /* imm[0] */
    uint32_t flags;      /* of the table's binding */
    uint32_t sg_piece;   /* host SG binding of pieces of this size, 0: device memory */
    uint32_t col_stride; /* the table's columns, in elements (1: contiguous rows) */
};

/*
 * The table [ROWS, D * col_stride] (@table, fp32 values rounded to the
 * type) and the SBUF rows [np, D] (@src); runs the scatter-add and reads
 * the table back into @table. Returns the status, the job's info in *info.
 */
static uint32_t run_scatter(const struct scat *c, float *table, const float *src, uint32_t *info) {
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    const uint32_t es = esz(c->dtype), pitch = D * c->col_stride * es;
    const size_t tbytes = (size_t)ROWS * pitch;
    uint8_t *buf = malloc(tbytes), *pi, *ps, *pt = NULL;
    tu_pack(c->dtype, buf, table, (size_t)ROWS * D * c->col_stride);
    uint32_t st;
    if (c->sg_piece) {
        st = te_sg_buffer(t, tbytes, c->sg_piece, c->flags);
        te_sg_copy(t, st, buf, tbytes, false);
    } else {
        st = te_buffer(t, tbytes, c->flags, &pt);
        memcpy(pt, buf, tbytes);
    }
    uint32_t si = te_buffer(t, c->np * 4u, NEURON_BIND_READ, &pi);
    memcpy(pi, c->idx, c->np * 4u);
    uint32_t ss = te_buffer(t, (uint64_t)c->np * D * es, NEURON_BIND_READ, &ps);
    tu_pack(c->dtype, ps, src, (size_t)c->np * D);
    pb_dma(&p, true, pb_sbuf(I32, 0, c->np, 0, 1), si, 0, 4, 4, 0);
    pb_dma(&p, true, pb_sbuf(c->dtype, 0, c->np, SRC_OFF, D), ss, 0, D * es, es, 0);
    struct neuron_insn *g = pb_emit(&p, NEURON_ENGINE_SYNC, NEURON_OP_DMA_SCATTER_ADD);
    g->dma.sbuf = pb_sbuf(c->dtype, 0, c->np, SRC_OFF, D);
    g->dma.dram.slot = (uint8_t)st;
    g->dma.dram.part_stride = pitch;
    g->dma.dram.stride[0] = c->col_stride * es;
    g->imm[0] = c->index_at;
    g->imm[1] = c->limit;
    pb_end_all(&p);
    uint32_t status = te_run(t, &p);
    *info = t->job.info;
    if (c->sg_piece)
        te_sg_copy(t, st, buf, tbytes, true);
    else
        memcpy(buf, pt, tbytes);
    tu_unpack(c->dtype, table, buf, (size_t)ROWS * D * c->col_stride);
    free(buf);
    pb_free(&p);
    te_free(t);
    return status;
}

/* The reference: partitions in increasing order, fp32 sums, rounded each time. */
static void ref_scatter(const struct scat *c, float *table, const float *src) {
    for (uint32_t p = 0; p < c->np; p++)
        for (uint32_t j = 0; j < D; j++) {
            float *e = &table[(size_t)c->idx[p] * D * c->col_stride + (size_t)j * c->col_stride];
            *e = tu_round(c->dtype, *e + tu_round(c->dtype, src[p * D + j]));
        }
}

static void fill(float *v, size_t n, uint64_t seed, float scale) {
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++)
        v[i] = tu_round(F32, tu_uniform(&s) * scale);
}

static void indices(int32_t *idx, uint64_t seed) {
    uint64_t s = seed | 1;
    for (uint32_t p = 0; p < NP; p++)
        idx[p] = (int32_t)(tu_rand(&s) % 40); /* 128 rows into 40: every row repeats */
    idx[0] = 0;
    idx[1] = ROWS - 1;
}

static void check_case(const struct scat *c, uint64_t seed) {
    static float table[ROWS * D * 3], want[ROWS * D * 3], src[NP * D];
    const size_t n = (size_t)ROWS * D * c->col_stride;
    fill(table, n, seed, 4.0f);
    for (size_t i = 0; i < n; i++)
        table[i] = tu_round(c->dtype, table[i]);
    fill(src, (size_t)NP * D, seed + 1, 3.0f);
    memcpy(want, table, n * sizeof(float));
    ref_scatter(c, want, src);
    uint32_t info;
    assert_int_equal(run_scatter(c, table, src, &info), NEURON_JOB_STATUS_OK);
    for (size_t i = 0; i < n; i++)
        if (tu_bits(table[i]) != tu_bits(want[i]))
            fail_msg("dtype %u element %zu (row %zu): got %a, want %a", c->dtype, i,
                     i / (D * c->col_stride), (double)table[i], (double)want[i]);
}

static void test_scatter_add(void **state) {
    (void)state;
    int32_t idx[NP];
    indices(idx, 7);
    const uint8_t dts[] = {F32, BF16};
    for (size_t k = 0; k < 2; k++) {
        struct scat c = {dts[k], NP, idx, ROWS, 0, NEURON_BIND_READ | NEURON_BIND_WRITE, 0, 1};
        check_case(&c, 11 + k);
        c.col_stride = 3; /* element by element */
        check_case(&c, 13 + k);
        c.col_stride = 1;
        c.sg_piece = 100; /* rows across SG pieces */
        check_case(&c, 15 + k);
    }
}

/*
 * The order: 2^25, 1, 1, -2^25 added in this partition order into 0 give
 * 0 (each 1 is lost against 2^25), where adding the ones last gives 2, and
 * an overwrite gives -2^25.
 */
static void test_scatter_order(void **state) {
    (void)state;
    static float table[ROWS * D], src[4 * D];
    const int32_t idx[4] = {5, 5, 5, 5};
    memset(table, 0, sizeof(table));
    for (uint32_t j = 0; j < D; j++) {
        src[0 * D + j] = 33554432.0f;
        src[1 * D + j] = 1.0f;
        src[2 * D + j] = 1.0f;
        src[3 * D + j] = -33554432.0f;
    }
    table[5 * D + 1] = 3.0f; /* then 2^25 + 3 rounds to 2^25 + 4: the result is 4 */
    const struct scat c = {F32, 4, idx, ROWS, 0, NEURON_BIND_READ | NEURON_BIND_WRITE, 0, 1};
    uint32_t info;
    assert_int_equal(run_scatter(&c, table, src, &info), NEURON_JOB_STATUS_OK);
    for (uint32_t j = 0; j < D; j++)
        assert_true(table[5 * D + j] == (j == 1 ? 4.0f : 0.0f));
    assert_true(table[4 * D] == 0.0f && table[6 * D] == 0.0f);
}

static void test_scatter_faults(void **state) {
    (void)state;
    static float table[ROWS * D], before[ROWS * D], src[NP * D];
    int32_t idx[NP];
    indices(idx, 9);
    fill(src, (size_t)NP * D, 3, 1.0f);
    fill(before, (size_t)ROWS * D, 4, 1.0f);
    const uint32_t rw = NEURON_BIND_READ | NEURON_BIND_WRITE;
    uint32_t info;
    /* An index outside [0, rows): BINDING_RANGE with the table's slot, nothing added. */
    const int32_t bad_values[] = {ROWS, -1, INT32_MAX};
    for (size_t b = 0; b < 3; b++) {
        int32_t bad[NP];
        memcpy(bad, idx, sizeof(bad));
        bad[NP - 1] = bad_values[b];
        memcpy(table, before, sizeof(table));
        const struct scat c = {F32, NP, bad, ROWS, 0, rw, 0, 1};
        assert_int_equal(run_scatter(&c, table, src, &info), NEURON_JOB_STATUS_BINDING_RANGE);
        assert_int_equal(info, 0);
        assert_memory_equal(table, before, sizeof(table));
    }
    /* A row bound beyond the binding: the largest index's extent is checked. */
    int32_t far[NP];
    memcpy(far, idx, sizeof(far));
    far[3] = ROWS;
    struct scat c = {F32, NP, far, ROWS + 1, 0, rw, 0, 1};
    assert_int_equal(run_scatter(&c, table, src, &info), NEURON_JOB_STATUS_BINDING_RANGE);
    /* The table is read and written: both rights. */
    c = (struct scat){F32, NP, idx, ROWS, 0, NEURON_BIND_WRITE, 0, 1};
    assert_int_equal(run_scatter(&c, table, src, &info), NEURON_JOB_STATUS_BINDING_ACCESS);
    c.flags = NEURON_BIND_READ;
    assert_int_equal(run_scatter(&c, table, src, &info), NEURON_JOB_STATUS_BINDING_ACCESS);
    assert_int_equal(info, 0);
    /* Indices aligned and inside the partition. */
    c.flags = rw;
    c.index_at = 2;
    assert_int_equal(run_scatter(&c, table, src, &info), NEURON_JOB_STATUS_ALIGN);
    assert_int_equal(info, 2); /* the instruction's index in the Sync stream */
    c.index_at = NEURON_SBUF_DEFAULT_SIZE / 128;
    assert_int_equal(run_scatter(&c, table, src, &info), NEURON_JOB_STATUS_SBUF_RANGE);
    /* FP32 and BF16 only. */
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    uint32_t slot = te_buffer(t, 4096, rw, NULL);
    struct neuron_insn *g = pb_emit(&p, NEURON_ENGINE_SYNC, NEURON_OP_DMA_SCATTER_ADD);
    g->dma.sbuf = pb_sbuf(I32, 0, 1, SRC_OFF, 4);
    g->dma.dram.slot = (uint8_t)slot;
    g->dma.dram.stride[0] = 4;
    g->imm[1] = 1;
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_DTYPE);
    pb_free(&p);
    te_free(t);
}

static void test_scatter_version(void **state) {
    (void)state;
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_DMA_SCATTER_ADD;
    assert_int_equal(neuron_insn_isa_minor_of(&in), 2);
    assert_int_equal(neuron_opcode_lookup(NEURON_OP_DMA_SCATTER_ADD)->engines,
                     1u << NEURON_ENGINE_SYNC);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scatter_add),
        cmocka_unit_test(test_scatter_order),
        cmocka_unit_test(test_scatter_faults),
        cmocka_unit_test(test_scatter_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
