// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * RANDOM (ISA 1.2, hw/isa.md): neuron_philox4x32() against the published
 * Philox-4x32 known-answer vectors (Random123's kat_vectors, 7 and 10
 * rounds), a wrong round count failing them, and the instruction's mapping
 * from (partition, free index) to counter and word, computed here from the
 * definition in hw/isa.md; the uniform fp32 values, streams per seed and
 * offset, and the instruction's faults.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "nm_endian.h"
#include "testutil.h"

#define F32 NEURON_DT_FP32
#define I32 NEURON_DT_INT32

/* Random123 kat_vectors: philox4x32 R, counter[4], key[2] -> out[4]. */
static const struct kat {
    unsigned rounds;
    uint32_t ctr[4], key[2], out[4];
} kats[] = {
    {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
    {7,
     {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
    {7,
     {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {10,
     {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {10,
     {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};
#define NKATS (sizeof(kats) / sizeof(kats[0]))

static void test_philox_kat(void **state) {
    (void)state;
    for (size_t i = 0; i < NKATS; i++) {
        uint32_t out[4];
        neuron_philox4x32(kats[i].ctr, kats[i].key, kats[i].rounds, out);
        for (int w = 0; w < 4; w++)
            if (out[w] != kats[i].out[w])
                fail_msg("philox4x32-%u vector %zu word %d: got %08x, want %08x", kats[i].rounds, i,
                         w, out[w], kats[i].out[w]);
    }
}

/* One round fewer or more than the vectors' count matches none of them. */
static void test_philox_wrong_rounds(void **state) {
    (void)state;
    for (size_t i = 0; i < NKATS; i++) {
        for (int d = -1; d <= 1; d += 2) {
            uint32_t out[4];
            neuron_philox4x32(kats[i].ctr, kats[i].key, kats[i].rounds + d, out);
            assert_memory_not_equal(out, kats[i].out, sizeof(out));
        }
    }
    assert_int_equal(NEURON_PHILOX_ROUNDS, 10);
}

enum { KEY_OFF = 0, OUT_OFF = 1024, MAXF = 300 };

struct rnd {
    uint8_t dtype;       /* of the destination */
    uint32_t pstart, np; /* destination partitions */
    uint32_t c0, c1, s1; /* destination pattern: count[0], count[1], stride[1] */
    uint32_t arg, pstep;
    uint32_t key[4]; /* seed lo, seed hi, offset lo, offset hi */
};

/*
 * Loads r->key into SBUF partition 0 (KEY_OFF), runs RANDOM into
 * OUT_OFF of partitions [pstart, pstart + np), stores every partition's
 * c0 * c1 * s1-spaced elements to @out ([np][c1][c0], raw 32-bit words).
 * Returns the status.
 */
static uint32_t run_random(const struct rnd *r, uint32_t *out) {
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    uint8_t *pk, *po;
    uint32_t sk = te_buffer(t, 16, NEURON_BIND_READ, &pk);
    for (int i = 0; i < 4; i++) {
        uint32_t le = nm_le32(r->key[i]);
        memcpy(pk + 4 * i, &le, 4);
    }
    const uint32_t per = r->c0 * r->c1;
    uint32_t so = te_buffer(t, (uint64_t)r->np * per * 4, NEURON_BIND_WRITE, &po);
    pb_dma(&p, true, pb_sbuf(I32, 0, 1, KEY_OFF, 4), sk, 0, 16, 4, 0);
    pb_signal(&p, NEURON_ENGINE_SYNC, 0, 1);
    pb_wait(&p, NEURON_ENGINE_VECTOR, 0, 1, true);
    struct neuron_insn *in = pb_emit(&p, NEURON_ENGINE_VECTOR, NEURON_OP_RANDOM);
    in->op[0] =
        pb_tap2(NEURON_SPACE_SBUF, r->dtype, r->pstart, r->np, OUT_OFF, r->c0, 1, r->c1, r->s1);
    in->op[1] = pb_sbuf(I32, 0, 1, KEY_OFF, 4);
    in->arg = nm_le32(r->arg);
    in->imm[0] = nm_le32(r->pstep);
    pb_signal(&p, NEURON_ENGINE_VECTOR, 1, 1);
    pb_wait(&p, NEURON_ENGINE_SYNC, 1, 1, true);
    pb_dma(&p, false,
           pb_tap2(NEURON_SPACE_SBUF, r->dtype, r->pstart, r->np, OUT_OFF, r->c0, 1, r->c1, r->s1),
           so, 0, per * 4, 4, r->c0 * 4);
    pb_end_all(&p);
    uint32_t st = te_run(t, &p);
    if (st == NEURON_JOB_STATUS_OK)
        for (size_t i = 0; i < (size_t)r->np * per; i++) {
            memcpy(&out[i], po + 4 * i, 4);
            out[i] = nm_le32(out[i]);
        }
    pb_free(&p);
    te_free(t);
    return st;
}

/* Element (p, j)'s word, from hw/isa.md's definition. */
static uint32_t want_word(const struct rnd *r, uint32_t p, uint32_t j) {
    const uint64_t n = (uint64_t)r->arg + (uint64_t)p * r->pstep + j, q = n / 4;
    const uint32_t ctr[4] = {(uint32_t)q, (uint32_t)(q >> 32), r->key[2], r->key[3]};
    const uint32_t key[2] = {r->key[0], r->key[1]};
    uint32_t out[4];
    neuron_philox4x32(ctr, key, 10, out);
    return out[n % 4];
}

static void check_stream(const struct rnd *r) {
    static uint32_t out[128 * MAXF];
    assert_int_equal(run_random(r, out), NEURON_JOB_STATUS_OK);
    const uint32_t per = r->c0 * r->c1;
    for (uint32_t p = 0; p < r->np; p++)
        for (uint32_t j = 0; j < per; j++) {
            const uint32_t w = want_word(r, p, j);
            const uint32_t want =
                r->dtype == I32 ? w : tu_bits((float)(w >> 8) * (1.0f / 16777216.0f));
            if (out[p * per + j] != want)
                fail_msg("partition %u element %u: got %08x, want %08x", p, j, out[p * per + j],
                         want);
        }
}

/* The zero counter and key through the instruction: the first vector. */
static void test_random_kat(void **state) {
    (void)state;
    const struct rnd r = {I32, 0, 1, 4, 1, 4, 0, 0, {0, 0, 0, 0}};
    uint32_t out[4];
    assert_int_equal(run_random(&r, out), NEURON_JOB_STATUS_OK);
    assert_memory_equal(out, kats[3].out, sizeof(out));
    /* Seed and offset all ones; n = 2^32 - 4 .. 2^32 - 1: block 2^30 - 1. */
    const struct rnd r2 = {I32, 5, 1, 4, 1, 4, 0xfffffffcu, 0, {~0u, ~0u, ~0u, ~0u}};
    assert_int_equal(run_random(&r2, out), NEURON_JOB_STATUS_OK);
    const uint32_t ctr[4] = {0x3fffffff, 0, ~0u, ~0u}, key[2] = {~0u, ~0u};
    uint32_t want[4];
    neuron_philox4x32(ctr, key, 10, want);
    assert_memory_equal(out, want, sizeof(out));
}

/* Partitions, strides, a base past 2^32 words, both destination types. */
static void test_random_mapping(void **state) {
    (void)state;
    const struct rnd cases[] = {
        {F32, 0, 128, 257, 1, 257, 0, 257, {1, 0, 0, 0}},
        {I32, 3, 100, 7, 9, 11, 12345, 1000, {0x9e3779b9, 0x7f4a7c15, 17, 0}},
        {F32, 1, 126, 30, 3, 40, 0xfffff000u, 0x10000001u, {42, 0, 5, 7}},
        {I32, 0, 2, 5, 1, 5, 2, 3, {7, 7, 0, 1u << 31}}, /* overlapping words */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_stream(&cases[i]);
}

/* [0, 1), mean 1/2, and seed and offset each change the whole stream. */
static void test_random_uniform(void **state) {
    (void)state;
    static uint32_t a[128 * 256], b[128 * 256];
    struct rnd r = {F32, 0, 128, 256, 1, 256, 0, 256, {2024, 0, 0, 0}};
    assert_int_equal(run_random(&r, a), NEURON_JOB_STATUS_OK);
    double sum = 0;
    for (size_t i = 0; i < 128 * 256; i++) {
        const float u = tu_f32(a[i]);
        assert_true(u >= 0.0f && u < 1.0f);
        sum += u;
    }
    /* 32768 draws: the mean's standard deviation is 0.0016. */
    assert_true(fabs(sum / (128 * 256) - 0.5) < 0.01);
    assert_int_equal(run_random(&r, b), NEURON_JOB_STATUS_OK);
    assert_memory_equal(a, b, sizeof(a)); /* reproducible */
    const uint32_t changes[][4] = {
        {2025, 0, 0, 0}, {2024, 1, 0, 0}, {2024, 0, 1, 0}, {2024, 0, 0, 1}};
    for (size_t c = 0; c < 4; c++) {
        memcpy(r.key, changes[c], sizeof(r.key));
        assert_int_equal(run_random(&r, b), NEURON_JOB_STATUS_OK);
        size_t same = 0;
        for (size_t i = 0; i < 128 * 256; i++)
            same += a[i] == b[i];
        assert_true(same < 8); /* 32768 draws of 2^24 values: about 0.002 coincide */
    }
}

static void test_random_faults(void **state) {
    (void)state;
    struct neuron_insn ok, in;
    memset(&ok, 0, sizeof(ok));
    ok.opcode = NEURON_OP_RANDOM;
    ok.op[0] = pb_sbuf(F32, 0, 128, OUT_OFF, 64);
    ok.op[1] = pb_sbuf(I32, 0, 1, KEY_OFF, 4);
    in = ok;
    tu_expect_fault(NEURON_ENGINE_VECTOR, &in, NEURON_JOB_STATUS_OK); /* the baseline runs */
    tu_expect_fault(NEURON_ENGINE_SCALAR, &in, NEURON_JOB_STATUS_DECODE);
    in.op[0].dtype = NEURON_DT_BF16;
    tu_expect_fault(NEURON_ENGINE_VECTOR, &in, NEURON_JOB_STATUS_DTYPE);
    in = ok;
    in.op[1].dtype = F32;
    tu_expect_fault(NEURON_ENGINE_VECTOR, &in, NEURON_JOB_STATUS_DTYPE);
    in = ok;
    in.op[1] = pb_sbuf(I32, 0, 1, KEY_OFF, 3);
    tu_expect_fault(NEURON_ENGINE_VECTOR, &in, NEURON_JOB_STATUS_SHAPE);
    in.op[1] = pb_sbuf(I32, 0, 2, KEY_OFF, 4);
    tu_expect_fault(NEURON_ENGINE_VECTOR, &in, NEURON_JOB_STATUS_SHAPE);
    in = ok;
    memset(&in.op[1], 0, sizeof(in.op[1])); /* the key is required */
    tu_expect_fault(NEURON_ENGINE_VECTOR, &in, NEURON_JOB_STATUS_DECODE);
    in = ok;
    in.imm[1] = 1;
    tu_expect_fault(NEURON_ENGINE_VECTOR, &in, NEURON_JOB_STATUS_DECODE);
    in = ok;
    in.func = 1;
    tu_expect_fault(NEURON_ENGINE_VECTOR, &in, NEURON_JOB_STATUS_DECODE);
    in = ok;
    in.flags = 1;
    tu_expect_fault(NEURON_ENGINE_VECTOR, &in, NEURON_JOB_STATUS_DECODE);
    in = ok;
    in.op[2] = pb_sbuf(F32, 0, 1, 0, 1);
    tu_expect_fault(NEURON_ENGINE_VECTOR, &in, NEURON_JOB_STATUS_DECODE);
}

static void test_random_version(void **state) {
    (void)state;
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_RANDOM;
    assert_int_equal(neuron_insn_isa_minor_of(&in), 2);
    assert_int_equal(neuron_opcode_lookup(NEURON_OP_RANDOM)->engines, 1u << NEURON_ENGINE_VECTOR);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_kat),     cmocka_unit_test(test_philox_wrong_rounds),
        cmocka_unit_test(test_random_kat),     cmocka_unit_test(test_random_mapping),
        cmocka_unit_test(test_random_uniform), cmocka_unit_test(test_random_faults),
        cmocka_unit_test(test_random_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
