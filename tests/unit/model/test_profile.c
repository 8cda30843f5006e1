// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A profiled job (NEURON_JOB_F_PROFILE, hw/README.md section 4.8): its
 * trace agrees with the job's own figures (cycles, instruction and DMA
 * byte counts), shows each stream's clock and each semaphore wait with
 * the signal it took its time from, changes nothing the job computes, and
 * stops recording, without failing the job, when the trace slot is full.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "testutil.h"

enum { P = 128, N = 64 };

#define OFF_X 0
#define OFF_Y (OFF_X + N * 4)
#define OFF_Z (OFF_Y + N * 4)

typedef struct run {
    uint32_t status;
    uint64_t cycles, instructions, dma_bytes, flops;
    float y[P * N], z[N * N];
    uint64_t trace_records;
    uint32_t trace_flags;
} run;

/*
 * Four streams: Sync loads X and signals; Vector (Y = X + X, three times
 * in a loop) and Tensor (PSUM = X^T X) wait for it; Scalar waits for the
 * matmul and evacuates relu(PSUM); Sync stores Y and Z when signalled.
 */
static void build(pb_prog *p, uint32_t sx, uint32_t sy, uint32_t sz) {
    const int SY = NEURON_ENGINE_SYNC, TE = NEURON_ENGINE_TENSOR, VE = NEURON_ENGINE_VECTOR,
              SC = NEURON_ENGINE_SCALAR;
    pb_init(p);
    pb_dma(p, true, pb_sbuf(NEURON_DT_FP32, 0, P, OFF_X, N), sx, 0, N * 4, 4, 0);
    pb_signal(p, SY, 0, 2);

    pb_wait(p, VE, 0, 1, false);
    uint32_t top = pb_here(p, VE);
    pb_tt(p, NEURON_ALU_ADD, pb_sbuf(NEURON_DT_FP32, 0, P, OFF_Y, N),
          pb_sbuf(NEURON_DT_FP32, 0, P, OFF_X, N), pb_sbuf(NEURON_DT_FP32, 0, P, OFF_X, N));
    pb_loop(p, VE, 0, top, 3);
    pb_signal(p, VE, 1, 1);
    pb_end(p, VE);

    pb_wait(p, TE, 0, 2, false);
    pb_matmul(p, pb_psum(NEURON_DT_FP32, 0, N, 0, N), pb_sbuf(NEURON_DT_FP32, 0, P, OFF_X, N),
              pb_sbuf(NEURON_DT_FP32, 0, P, OFF_X, N), false);
    pb_signal(p, TE, 2, 1);
    pb_end(p, TE);

    pb_wait(p, SC, 2, 1, true);
    pb_activate(p, NEURON_ACT_RELU, pb_sbuf(NEURON_DT_FP32, 0, N, OFF_Z, N),
                pb_psum(NEURON_DT_FP32, 0, N, 0, N), (struct neuron_tap){0}, 1.0f, 0.0f);
    pb_signal(p, SC, 3, 1);
    pb_end(p, SC);

    pb_wait(p, SY, 1, 1, true);
    pb_dma(p, false, pb_sbuf(NEURON_DT_FP32, 0, P, OFF_Y, N), sy, 0, N * 4, 4, 0);
    pb_wait(p, SY, 3, 1, true);
    pb_dma(p, false, pb_sbuf(NEURON_DT_FP32, 0, N, OFF_Z, N), sz, 0, N * 4, 4, 0);
    pb_end(p, SY);
}

/* Runs the program; with @trace_bytes > 0, profiled into a slot that size. */
static void run_job(run *out, uint64_t trace_bytes, uint8_t *trace_copy) {
    tenv *t = te_new();
    uint8_t *px, *py, *pz, *ptrace = NULL;
    uint32_t sx = te_buffer(t, P * N * 4, NEURON_BIND_READ, &px);
    uint32_t sy = te_buffer(t, P * N * 4, NEURON_BIND_WRITE, &py);
    uint32_t sz = te_buffer(t, N * N * 4, NEURON_BIND_WRITE, &pz);
    uint64_t s = 99;
    for (int i = 0; i < P * N; i++) {
        float v = tu_uniform(&s);
        memcpy(px + (size_t)i * 4, &v, 4);
    }
    if (trace_bytes) {
        t->profile = true;
        t->trace_binding = te_buffer(t, trace_bytes, NEURON_BIND_WRITE, &ptrace);
        memset(ptrace, 0xa5, trace_bytes);
    }
    pb_prog p;
    build(&p, sx, sy, sz);
    out->status = te_run(t, &p);
    out->cycles = t->job.cycles;
    out->instructions = t->job.instructions;
    out->dma_bytes = t->job.dma_bytes;
    out->flops = t->job.flops;
    out->trace_records = t->job.trace_records;
    out->trace_flags = t->job.trace_flags;
    memcpy(out->y, py, sizeof(out->y));
    memcpy(out->z, pz, sizeof(out->z));
    if (trace_bytes)
        memcpy(trace_copy, ptrace, trace_bytes);
    pb_free(&p);
    te_free(t);
}

#define BIG_TRACE (sizeof(struct neuron_trace_header) + 256 * sizeof(struct neuron_trace_record))

static const struct neuron_trace_record *records(const uint8_t *trace) {
    return (const struct neuron_trace_record *)(const void *)(trace +
                                                              sizeof(struct neuron_trace_header));
}

static void test_trace_agrees_with_the_job(void **state) {
    (void)state;
    run *plain = calloc(1, sizeof(*plain)), *prof = calloc(1, sizeof(*prof));
    uint8_t *trace = malloc(BIG_TRACE);
    run_job(plain, 0, NULL);
    run_job(prof, BIG_TRACE, trace);

    /* Profiling changes nothing the job computes or counts. */
    assert_int_equal(plain->status, NEURON_JOB_STATUS_OK);
    assert_int_equal(prof->status, NEURON_JOB_STATUS_OK);
    assert_memory_equal(plain->y, prof->y, sizeof(plain->y));
    assert_memory_equal(plain->z, prof->z, sizeof(plain->z));
    assert_int_equal(plain->cycles, prof->cycles);
    assert_int_equal(plain->instructions, prof->instructions);
    assert_int_equal(plain->dma_bytes, prof->dma_bytes);
    assert_int_equal(plain->flops, prof->flops);

    const struct neuron_trace_header *h = (const void *)trace;
    assert_int_equal(h->magic, NEURON_TRACE_MAGIC);
    assert_int_equal(h->version_major, NEURON_TRACE_VERSION_MAJOR);
    assert_int_equal(h->header_size, sizeof(*h));
    assert_int_equal(h->record_size, sizeof(struct neuron_trace_record));
    assert_int_equal(h->flags, 0);
    assert_int_equal(h->status, NEURON_JOB_STATUS_OK);
    assert_int_equal(h->records, prof->instructions);
    assert_int_equal(h->instructions, prof->instructions);
    assert_int_equal(h->cycles, prof->cycles);
    assert_int_equal(h->dma_bytes, prof->dma_bytes);
    assert_int_equal(h->sbuf_high, OFF_Z + N * 4);
    assert_int_equal(h->psum_high, N * 4);
    assert_int_equal(prof->trace_records, h->records);
    /* Nothing is written after the last record. */
    assert_int_equal(trace[sizeof(*h) + h->records * sizeof(struct neuron_trace_record)], 0xa5);

    const struct neuron_trace_record *r = records(trace);
    uint64_t clock[NEURON_NUM_ENGINES + 1] = {0}, bytes = 0, last_end = 0;
    uint32_t count[NEURON_NUM_ENGINES + 1] = {0}, waits = 0;
    for (uint64_t i = 0; i < h->records; i++) {
        assert_in_range(r[i].engine, NEURON_ENGINE_TENSOR, NEURON_ENGINE_SYNC);
        /* A stream's instructions follow each other on its clock. */
        assert_int_equal(r[i].start, clock[r[i].engine]);
        assert_true(r[i].end > r[i].start);
        clock[r[i].engine] = r[i].end;
        count[r[i].engine]++;
        bytes += r[i].bytes;
        if (r[i].end > last_end)
            last_end = r[i].end;
        if (r[i].opcode == NEURON_OP_DMA_LOAD || r[i].opcode == NEURON_OP_DMA_STORE)
            assert_int_equal(r[i].end - r[i].start, 64 + (r[i].bytes + 63) / 64);
        else
            assert_int_equal(r[i].bytes, 0);
        if (r[i].opcode == NEURON_OP_SEM_WAIT) {
            /* The wait took the time of the latest signal of its semaphore. */
            assert_int_equal(r[i].flags, NEURON_TRACE_R_SIGNAL);
            assert_true(r[i].signal < i);
            const struct neuron_trace_record *sig = &r[r[i].signal];
            assert_int_equal(sig->opcode, NEURON_OP_SEM_SIGNAL);
            assert_int_equal(sig->sem, r[i].sem);
            uint64_t from = sig->end > r[i].start ? sig->end : r[i].start;
            assert_int_equal(r[i].wait, from - r[i].start);
            assert_int_equal(r[i].end, from + 1);
            waits++;
        } else {
            assert_int_equal(r[i].wait, 0);
        }
    }
    assert_int_equal(last_end, prof->cycles);
    assert_int_equal(bytes, prof->dma_bytes);
    assert_int_equal(waits, 5);
    /* Vector: wait, 3 x (add, loop), signal, end. */
    assert_int_equal(count[NEURON_ENGINE_VECTOR], 9);
    assert_int_equal(count[NEURON_ENGINE_TENSOR], 4);
    assert_int_equal(count[NEURON_ENGINE_SCALAR], 4);
    assert_int_equal(count[NEURON_ENGINE_SYNC], 7);
    /* The matmul waited for the load: its wait's clock moved. */
    for (uint64_t i = 0; i < h->records; i++)
        if (r[i].engine == NEURON_ENGINE_TENSOR && r[i].opcode == NEURON_OP_SEM_WAIT)
            assert_int_equal(r[i].wait, 64 + (P * N * 4 + 63) / 64 + 1);
    free(trace);
    free(plain);
    free(prof);
}

static void test_full_trace_truncates(void **state) {
    (void)state;
    const uint64_t small = sizeof(struct neuron_trace_header) +
                           5 * sizeof(struct neuron_trace_record) +
                           sizeof(struct neuron_trace_record) - 1;
    run *full = calloc(1, sizeof(*full)), *cut = calloc(1, sizeof(*cut));
    uint8_t *big = malloc(BIG_TRACE), *trace = malloc(small);
    run_job(full, BIG_TRACE, big);
    run_job(cut, small, trace);

    const struct neuron_trace_header *h = (const void *)trace;
    assert_int_equal(cut->status, NEURON_JOB_STATUS_OK);
    assert_memory_equal(full->y, cut->y, sizeof(full->y));
    assert_int_equal(h->flags, NEURON_TRACE_F_TRUNCATED);
    assert_int_equal(cut->trace_flags, NEURON_TRACE_F_TRUNCATED);
    assert_int_equal(h->records, 5);
    assert_int_equal(h->instructions, full->instructions);
    assert_int_equal(h->cycles, full->cycles);
    assert_memory_equal(records(trace), records(big), 5 * sizeof(struct neuron_trace_record));
    /* The partial record's room is left alone. */
    for (uint64_t i = small - sizeof(struct neuron_trace_record) + 1; i < small; i++)
        assert_int_equal(trace[i], 0xa5);
    free(big);
    free(trace);
    free(full);
    free(cut);
}

/* Header only: no record fits, the job still runs. */
static void test_header_only_trace(void **state) {
    (void)state;
    run *r = calloc(1, sizeof(*r));
    uint8_t trace[sizeof(struct neuron_trace_header)];
    run_job(r, sizeof(trace), trace);
    const struct neuron_trace_header *h = (const void *)trace;
    assert_int_equal(r->status, NEURON_JOB_STATUS_OK);
    assert_int_equal(h->records, 0);
    assert_int_equal(h->flags, NEURON_TRACE_F_TRUNCATED);
    assert_int_equal(h->instructions, r->instructions);
    free(r);
}

static void test_bad_trace_slot(void **state) {
    (void)state;
    static const struct {
        uint32_t flags;
        uint64_t size;
    } bad[] = {
        {NEURON_BIND_READ, 4096},                                    /* no WRITE */
        {NEURON_BIND_WRITE, sizeof(struct neuron_trace_header) - 1}, /* no room */
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        tenv *t = te_new();
        te_buffer(t, 64, NEURON_BIND_READ, NULL);
        t->profile = true;
        t->trace_binding = te_buffer(t, bad[k].size, bad[k].flags, NULL);
        pb_prog p;
        pb_init(&p);
        pb_end_all(&p);
        assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_BAD_BINDING);
        assert_int_equal(t->job.info, 1);
        pb_free(&p);
        te_free(t);
    }
    /* A slot the table does not have. */
    tenv *t = te_new();
    t->profile = true;
    t->trace_binding = 5;
    pb_prog p;
    pb_init(&p);
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_BAD_BINDING);
    assert_int_equal(t->job.info, 5);
    pb_free(&p);
    te_free(t);
}

/* A faulting job's trace ends at the last instruction that completed. */
static void test_faulting_job_trace(void **state) {
    (void)state;
    tenv *t = te_new();
    uint8_t *ptrace;
    t->profile = true;
    t->trace_binding = te_buffer(t, BIG_TRACE, NEURON_BIND_WRITE, &ptrace);
    pb_prog p;
    pb_init(&p);
    pb_signal(&p, NEURON_ENGINE_VECTOR, 0, 1);
    pb_signal(&p, NEURON_ENGINE_VECTOR, 17, 1); /* no such semaphore */
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_SEMAPHORE);
    const struct neuron_trace_header *h = (const void *)ptrace;
    assert_int_equal(h->status, NEURON_JOB_STATUS_SEMAPHORE);
    assert_int_equal(h->records, t->job.instructions);
    assert_int_equal(h->cycles, t->job.cycles);
    pb_free(&p);
    te_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_agrees_with_the_job),
        cmocka_unit_test(test_full_trace_truncates),
        cmocka_unit_test(test_header_only_trace),
        cmocka_unit_test(test_bad_trace_slot),
        cmocka_unit_test(test_faulting_job_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
