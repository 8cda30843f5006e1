// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every fault status from a crafted bad program, job or binding table, with
 * the info and fault_engine the completion would carry; after each fault
 * the same core runs a good program correctly.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "testutil.h"

#define F32 NEURON_DT_FP32
#define SB(ps, pc, off, n) pb_sbuf(F32, ps, pc, off, n)
#define PS(ps, pc, off, n) pb_psum(F32, ps, pc, off, n)

/* A good job on the same core: x + x through DMA and the Vector engine. */
static void check_core_usable(tenv *t) {
    uint32_t saved = t->nbind;
    pb_prog p;
    pb_init(&p);
    uint8_t *in, *out;
    uint32_t si = te_buffer(t, 4 * 8 * 4, NEURON_BIND_READ, &in);
    uint32_t so = te_buffer(t, 4 * 8 * 4, NEURON_BIND_WRITE, &out);
    for (int i = 0; i < 32; i++) {
        float v = (float)i;
        memcpy(in + 4 * i, &v, 4);
    }
    pb_dma(&p, true, SB(0, 4, 0, 8), si, 0, 32, 4, 0);
    pb_signal(&p, NEURON_ENGINE_SYNC, 0, 1);
    pb_wait(&p, NEURON_ENGINE_VECTOR, 0, 1, false);
    pb_tt(&p, NEURON_ALU_ADD, SB(0, 4, 64, 8), SB(0, 4, 0, 8), SB(0, 4, 0, 8));
    pb_signal(&p, NEURON_ENGINE_VECTOR, 1, 1);
    pb_wait(&p, NEURON_ENGINE_SYNC, 1, 1, false);
    pb_dma(&p, false, SB(0, 4, 64, 8), so, 0, 32, 4, 0);
    pb_end_all(&p);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    assert_int_equal(t->job.fault_engine, 0);
    for (int i = 0; i < 32; i++) {
        float v;
        memcpy(&v, out + 4 * i, 4);
        assert_true(v == 2.0f * (float)i);
    }
    pb_free(&p);
    t->nbind = saved;
}

static void expect(tenv *t, const pb_prog *p, uint32_t status, uint32_t info, uint16_t engine) {
    uint32_t st = te_run(t, p);
    if (st != status || t->job.info != info || t->job.fault_engine != engine)
        fail_msg("got status %#x info %u engine %u, want %#x %u %u", st, t->job.info,
                 t->job.fault_engine, status, info, engine);
    check_core_usable(t);
}

/* A program of [NOP x @pos, @in, END] on @engine. */
static void expect_insn(tenv *t, int engine, uint32_t pos, const struct neuron_insn *in,
                        uint32_t status, uint32_t info) {
    pb_prog p;
    pb_init(&p);
    for (uint32_t i = 0; i < pos; i++)
        pb_emit(&p, engine, NEURON_OP_NOP);
    *pb_emit(&p, engine, 0) = *in;
    pb_end(&p, engine);
    expect(t, &p, status, info, status == NEURON_JOB_STATUS_OK ? 0 : (uint16_t)engine);
    pb_free(&p);
}

static struct neuron_insn insn_tt(void) {
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_TENSOR_TENSOR;
    in.func = NEURON_ALU_ADD;
    in.op[0] = SB(0, 128, 0, 16);
    in.op[1] = SB(0, 128, 64, 16);
    in.op[2] = SB(0, 128, 128, 16);
    return in;
}

static struct neuron_insn insn_mm(void) {
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_MATMUL;
    in.op[0] = PS(0, 64, 0, 256);
    in.op[1] = SB(0, 128, 0, 64);
    in.op[2] = SB(0, 128, 1024, 256);
    return in;
}

static struct neuron_insn insn_dma(bool load, uint32_t slot, uint64_t off) {
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = load ? NEURON_OP_DMA_LOAD : NEURON_OP_DMA_STORE;
    in.dma.sbuf = SB(0, 4, 0, 8);
    in.dma.dram.slot = (uint8_t)slot;
    in.dma.dram.offset = off;
    in.dma.dram.part_stride = 32;
    in.dma.dram.stride[0] = 4;
    return in;
}

static void test_decode(void **state) {
    (void)state;
    tenv *t = te_new();
    struct neuron_insn in;
    const int V = NEURON_ENGINE_VECTOR;

    memset(&in, 0, sizeof(in));
    expect_insn(t, V, 2, &in, NEURON_JOB_STATUS_DECODE, 2); /* opcode 0 */
    in.opcode = 0x7f;
    expect_insn(t, NEURON_ENGINE_SYNC, 0, &in, NEURON_JOB_STATUS_DECODE, 0);
    in = insn_mm(); /* matmul on the Vector engine */
    expect_insn(t, V, 1, &in, NEURON_JOB_STATUS_DECODE, 1);
    in = insn_dma(true, 0, 0); /* DMA on the Tensor engine */
    expect_insn(t, NEURON_ENGINE_TENSOR, 0, &in, NEURON_JOB_STATUS_DECODE, 0);
    in = insn_tt();
    in.opcode = NEURON_OP_ACTIVATE; /* activation on the Vector engine */
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);

    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_NOP;
    in.op[1].offset = 4; /* NOP with operand bytes */
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_END;
    in.arg = 1;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);

    in = insn_tt();
    in.func = 0;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);
    in.func = NEURON_ALU_COUNT;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);
    in = insn_tt();
    in.imm[1] = 1;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);
    in = insn_tt();
    in.flags = 0x80;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);
    in = insn_tt();
    in.op[2].space = 3; /* no such space */
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);

    /* An absent operand must be all zero. */
    in = insn_tt();
    in.opcode = NEURON_OP_COPY;
    in.func = 0;
    memset(&in.op[2], 0, sizeof(in.op[2]));
    in.op[2].count[0] = 1;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);

    in = insn_tt();
    in.opcode = NEURON_OP_ACTIVATE;
    in.func = 99;
    expect_insn(t, NEURON_ENGINE_SCALAR, 0, &in, NEURON_JOB_STATUS_DECODE, 0);

    in = insn_dma(true, 0, 0);
    in.dma.reserved[1] = 1;
    expect_insn(t, NEURON_ENGINE_SYNC, 0, &in, NEURON_JOB_STATUS_DECODE, 0);
    in = insn_dma(true, 0, 0);
    in.dma.dram.reserved[0] = 1;
    expect_insn(t, NEURON_ENGINE_SYNC, 0, &in, NEURON_JOB_STATUS_DECODE, 0);

    in = insn_mm(); /* destination in SBUF */
    in.op[0].space = NEURON_SPACE_SBUF;
    expect_insn(t, NEURON_ENGINE_TENSOR, 0, &in, NEURON_JOB_STATUS_DECODE, 0);

    /* TENSOR_SCALAR: REVERSE1 without a second op; imm[0] with a scalar operand. */
    in = insn_tt();
    in.opcode = NEURON_OP_TENSOR_SCALAR;
    memset(&in.op[2], 0, sizeof(in.op[2]));
    in.flags = NEURON_TS_F_REVERSE1;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);
    in.flags = 0;
    in.op[2] = SB(0, 128, 512, 1);
    in.imm[0] = 1;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);

    /* LOOP: forward target, bad counter; SEM_WAIT: unknown flag. */
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_LOOP;
    in.arg = 3;
    expect_insn(t, V, 3, &in, NEURON_JOB_STATUS_DECODE, 3);
    in.arg = 0;
    in.func = NEURON_NUM_LOOP_COUNTERS;
    expect_insn(t, V, 3, &in, NEURON_JOB_STATUS_DECODE, 3);
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_SEM_WAIT;
    in.flags = 2;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DECODE, 0);

    /* Running past the end of a stream. */
    pb_prog p;
    pb_init(&p);
    pb_emit(&p, NEURON_ENGINE_SCALAR, NEURON_OP_NOP);
    expect(t, &p, NEURON_JOB_STATUS_DECODE, 1, NEURON_ENGINE_SCALAR);
    pb_free(&p);
    te_free(t);
}

static void test_operand_faults(void **state) {
    (void)state;
    tenv *t = te_new();
    struct neuron_insn in;
    const int V = NEURON_ENGINE_VECTOR, T = NEURON_ENGINE_TENSOR;
    const uint32_t sbuf_pp = NEURON_SBUF_DEFAULT_SIZE / 128;

    /* PARTITION */
    in = insn_tt();
    in.op[1] = SB(100, 64, 0, 16);
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_PARTITION, 0);
    in = insn_tt();
    in.op[0].part_count = 0;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_PARTITION, 0);
    in = insn_tt();
    in.op[0].part_start = 200;
    in.op[0].part_count = 1;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_PARTITION, 0);

    /* SBUF_RANGE / PSUM_RANGE */
    in = insn_tt();
    in.op[0] = SB(0, 128, sbuf_pp - 4, 2);
    in.op[1] = SB(0, 128, 0, 2);
    in.op[2] = SB(0, 128, 0, 2);
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_SBUF_RANGE, 0);
    in.op[0] = pb_tap2(NEURON_SPACE_SBUF, F32, 0, 128, 0, 1, 1, 2, 65535); /* stride reach */
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_SBUF_RANGE, 0);
    in.op[0] = SB(0, 128, 0xfffffffc, 1);
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_SBUF_RANGE, 0);
    in.op[0] = PS(0, 128, 16384 - 4, 2);
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_PSUM_RANGE, 0);
    in = insn_mm(); /* crosses a PSUM bank */
    in.op[0].offset = 1536;
    expect_insn(t, T, 0, &in, NEURON_JOB_STATUS_PSUM_RANGE, 0);
    in.op[0].offset = 1024; /* [1024, 2048): the end of bank 0 */
    expect_insn(t, T, 0, &in, NEURON_JOB_STATUS_OK, 0);

    /* DTYPE */
    in = insn_tt();
    in.op[1].dtype = 0;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DTYPE, 0);
    in.op[1].dtype = 9;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_DTYPE, 0);
    in = insn_mm();
    in.op[0].dtype = NEURON_DT_BF16; /* PSUM result must be fp32 */
    expect_insn(t, T, 0, &in, NEURON_JOB_STATUS_DTYPE, 0);
    in = insn_mm();
    in.op[2].dtype = NEURON_DT_INT32;
    expect_insn(t, T, 0, &in, NEURON_JOB_STATUS_DTYPE, 0);

    /* ALIGN */
    in = insn_tt();
    in.op[2].offset = 130;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_ALIGN, 0);
    in.op[2] = pb_sbuf(NEURON_DT_BF16, 0, 128, 129, 16);
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_ALIGN, 0);

    /* SHAPE */
    in = insn_tt();
    in.op[1].count[0] = 0;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_SHAPE, 0);
    in = insn_tt();
    in.op[1] = pb_tap2(NEURON_SPACE_SBUF, F32, 0, 128, 0, 300, 0, 300, 0); /* > 65536 */
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_SHAPE, 0);
    in = insn_tt();
    in.op[2].count[0] = 15;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_SHAPE, 0);
    in = insn_tt();
    in.op[2].part_count = 64;
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_SHAPE, 0);
    in = insn_mm();
    in.op[2].part_count = 127; /* K disagrees */
    expect_insn(t, T, 0, &in, NEURON_JOB_STATUS_SHAPE, 0);
    in = insn_mm();
    in.op[2] = SB(0, 128, 1024, 513);
    in.op[0] = PS(0, 64, 0, 513);
    expect_insn(t, T, 0, &in, NEURON_JOB_STATUS_SHAPE, 0); /* N > 512 */
    in = insn_mm();
    in.op[1] = SB(0, 128, 0, 129); /* M > 128 */
    expect_insn(t, T, 0, &in, NEURON_JOB_STATUS_SHAPE, 0);
    in = insn_mm();
    in.op[0].part_count = 32; /* dst rows != M */
    expect_insn(t, T, 0, &in, NEURON_JOB_STATUS_SHAPE, 0);
    in = insn_tt();
    in.opcode = NEURON_OP_REDUCE;
    in.func = NEURON_RED_SUM;
    memset(&in.op[2], 0, sizeof(in.op[2]));
    in.op[0].count[0] = 2; /* reduce to 2 */
    expect_insn(t, V, 0, &in, NEURON_JOB_STATUS_SHAPE, 0);
    in = insn_tt();
    in.opcode = NEURON_OP_TRANSPOSE;
    in.func = 0;
    memset(&in.op[2], 0, sizeof(in.op[2]));
    expect_insn(t, T, 0, &in, NEURON_JOB_STATUS_SHAPE, 0); /* [128,16] -> [128,16] */
    in = insn_tt();
    in.opcode = NEURON_OP_ACTIVATE;
    in.func = NEURON_ACT_RELU;
    in.op[2] = SB(0, 128, 512, 2); /* bias must be [P, 1] */
    expect_insn(t, NEURON_ENGINE_SCALAR, 0, &in, NEURON_JOB_STATUS_SHAPE, 0);
    te_free(t);
}

static void test_binding_faults(void **state) {
    (void)state;
    tenv *t = te_new();
    struct neuron_insn in;
    const int S = NEURON_ENGINE_SYNC;
    te_buffer(t, 256, NEURON_BIND_READ, NULL);  /* slot 0 */
    te_buffer(t, 256, NEURON_BIND_WRITE, NULL); /* slot 1 */
    te_buffer(t, 0, NEURON_BIND_READ, NULL);    /* slot 2: empty */

    in = insn_dma(true, 5, 0);
    expect_insn(t, S, 0, &in, NEURON_JOB_STATUS_BINDING_INDEX, 5);
    in = insn_dma(true, 0, 256 - 128 + 4); /* 4 rows of 32 bytes: one byte too far */
    expect_insn(t, S, 0, &in, NEURON_JOB_STATUS_BINDING_RANGE, 0);
    in = insn_dma(true, 0, UINT64_MAX - 7); /* offset + span overflows */
    expect_insn(t, S, 0, &in, NEURON_JOB_STATUS_BINDING_RANGE, 0);
    in = insn_dma(true, 2, 0);
    expect_insn(t, S, 0, &in, NEURON_JOB_STATUS_BINDING_RANGE, 2);
    in = insn_dma(true, 1, 0); /* read a write-only slot */
    expect_insn(t, S, 0, &in, NEURON_JOB_STATUS_BINDING_ACCESS, 1);
    in = insn_dma(false, 0, 0); /* write a read-only slot */
    expect_insn(t, S, 0, &in, NEURON_JOB_STATUS_BINDING_ACCESS, 0);
    in = insn_dma(true, 0, 2); /* unaligned memory side */
    expect_insn(t, S, 0, &in, NEURON_JOB_STATUS_ALIGN, 0);
    in = insn_dma(true, 0, 0);
    in.dma.dram.part_stride = 30;
    expect_insn(t, S, 0, &in, NEURON_JOB_STATUS_ALIGN, 0);
    in = insn_dma(true, 0, 0);
    in.dma.sbuf.space = NEURON_SPACE_PSUM; /* DMA reaches SBUF only */
    expect_insn(t, S, 0, &in, NEURON_JOB_STATUS_DECODE, 0);

    /* A store that faults changes nothing. */
    uint8_t *ptr;
    uint32_t w = te_buffer(t, 100, NEURON_BIND_WRITE, &ptr);
    memset(ptr, 0x5a, 100);
    in = insn_dma(false, w, 0);
    expect_insn(t, S, 0, &in, NEURON_JOB_STATUS_BINDING_RANGE, w);
    for (int i = 0; i < 100; i++)
        assert_int_equal(ptr[i], 0x5a);
    te_free(t);
}

static uint32_t load_table(tenv *t) {
    uint64_t bus = te_host_alloc(t, t->nbind * sizeof(t->table[0]));
    memcpy(te_host_ptr(t, bus), t->table, t->nbind * sizeof(t->table[0]));
    nm_bindings b;
    uint32_t st = nm_bindings_load(&b, &t->mem, bus, t->nbind);
    if (st != NEURON_JOB_STATUS_OK)
        assert_int_equal(b.count, 0);
    return st;
}

static void test_bad_binding(void **state) {
    (void)state;
    tenv *t = te_new();
    nm_bindings b;

    te_buffer(t, 4096, NEURON_BIND_READ, NULL);
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_OK);
    t->table[0].flags = 1u << 7;
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_BAD_BINDING);
    t->table[0].flags = NEURON_BIND_READ;
    t->table[0].reserved = 1;
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_BAD_BINDING);
    t->table[0].reserved = 0;
    t->table[0].addr = TE_DEVMEM_SIZE - 100; /* beyond device memory */
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_BAD_BINDING);
    t->table[0].addr = UINT64_MAX - 10; /* wraps */
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_BAD_BINDING);
    t->table[0].addr = 0;
    t->table[0].sg_count = 1; /* SG count on a device slot */
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_BAD_BINDING);
    t->table[0].sg_count = 0;

    /* Host SG slots. */
    uint32_t sg = te_sg_buffer(t, 1000, 300, NEURON_BIND_READ);
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_OK);
    t->table[sg].size = 1001; /* list shorter than the slot */
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_BAD_BINDING);
    t->table[sg].size = 1000;
    struct neuron_sg_entry *e = te_host_ptr(t, t->table[sg].addr);
    e[1].len = 0;
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_BAD_BINDING);
    e[1].len = 300;
    e[2].addr = (1ull << 48) - 10; /* beyond the bus address width */
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_BAD_BINDING);
    e[2].addr = te_host_alloc(t, 300);
    t->table[sg].sg_count = 0;
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_BAD_BINDING);
    t->table[sg].sg_count = 4;
    t->table[sg].size = 0;
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_BAD_BINDING);
    t->table[sg].size = 1000;
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_OK);

    /* The SG list itself unreadable, the table unreadable, bad counts. */
    t->fail_lo = t->table[sg].addr;
    t->fail_hi = t->fail_lo + 1;
    assert_int_equal(load_table(t), NEURON_JOB_STATUS_HOST_DMA);
    t->fail_lo = t->fail_hi = 0;
    assert_int_equal(nm_bindings_load(&b, &t->mem, 0x1000, 2), NEURON_JOB_STATUS_HOST_DMA);
    assert_int_equal(nm_bindings_load(&b, &t->mem, TE_HOST_BASE, 0), NEURON_JOB_STATUS_BAD_BINDING);
    assert_int_equal(nm_bindings_load(&b, &t->mem, TE_HOST_BASE, NEURON_MAX_BINDINGS + 1),
                     NEURON_JOB_STATUS_BAD_BINDING);
    assert_int_equal(nm_bindings_load(&b, &t->mem, UINT64_MAX - 16, 1),
                     NEURON_JOB_STATUS_BAD_BINDING);
    te_free(t);
}

static void test_bad_program(void **state) {
    (void)state;
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    pb_end_all(&p);
    size_t size;
    uint8_t *img = pb_image(&p, &size);
    struct neuron_prog_header *h = (struct neuron_prog_header *)img;
    const struct neuron_prog_header good = *h;

    assert_int_equal(te_run_image(t, img, size), NEURON_JOB_STATUS_OK);
    assert_int_equal(te_run_image(t, img, 63), NEURON_JOB_STATUS_BAD_PROGRAM);
    assert_int_equal(t->job.info, NEURON_PROG_ERR_SIZE);
    assert_int_equal(te_run_image(t, img, size - 1), NEURON_JOB_STATUS_BAD_PROGRAM);
    assert_int_equal(t->job.info, NEURON_PROG_ERR_SIZE);

    struct {
        size_t off;
        uint32_t val;
        int width;
        uint32_t err;
    } cases[] = {
        {offsetof(struct neuron_prog_header, magic), 0x12345678, 4, NEURON_PROG_ERR_MAGIC},
        {offsetof(struct neuron_prog_header, version_major), 2, 2, NEURON_PROG_ERR_VERSION},
        {offsetof(struct neuron_prog_header, version_minor), NEURON_ISA_VERSION_MINOR + 1, 2,
         NEURON_PROG_ERR_VERSION},
        {offsetof(struct neuron_prog_header, header_size), 32, 4, NEURON_PROG_ERR_HEADER},
        {offsetof(struct neuron_prog_header, flags), 1, 4, NEURON_PROG_ERR_HEADER},
        {offsetof(struct neuron_prog_header, reserved), 1, 4, NEURON_PROG_ERR_HEADER},
        {offsetof(struct neuron_prog_header, image_size), 32, 4, NEURON_PROG_ERR_SIZE},
        {offsetof(struct neuron_prog_header, stream[1].offset), 65, 4, NEURON_PROG_ERR_STREAM},
        {offsetof(struct neuron_prog_header, stream[1].offset), 0, 4, NEURON_PROG_ERR_STREAM},
        {offsetof(struct neuron_prog_header, stream[3].count), 2, 4, NEURON_PROG_ERR_STREAM},
        {offsetof(struct neuron_prog_header, stream[3].count), 0xffffffff, 4,
         NEURON_PROG_ERR_STREAM},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        *h = good;
        if (cases[i].width == 2) {
            uint16_t v = (uint16_t)cases[i].val;
            memcpy(img + cases[i].off, &v, 2);
        } else {
            memcpy(img + cases[i].off, &cases[i].val, 4);
        }
        assert_int_equal(te_run_image(t, img, size), NEURON_JOB_STATUS_BAD_PROGRAM);
        assert_int_equal(t->job.info, cases[i].err);
        assert_int_equal(t->job.fault_engine, 0);
        check_core_usable(t);
    }
    *h = good;

    /* The program binding must grant EXEC; the slot must exist. */
    memcpy(t->devmem, img, size);
    te_bind(t, 0, size, NEURON_BIND_READ, 0);
    memcpy(te_host_ptr(t, TE_HOST_BASE), t->table, sizeof(t->table[0]));
    nm_job *job = &t->job;
    memset(job, 0, sizeof(*job));
    job->mem = &t->mem;
    job->program_size = (uint32_t)size;
    assert_int_equal(nm_bindings_load(&job->bindings, &t->mem, TE_HOST_BASE, 1),
                     NEURON_JOB_STATUS_OK);
    nm_core_run(t->core, job);
    assert_int_equal(job->status, NEURON_JOB_STATUS_BINDING_ACCESS);
    assert_int_equal(job->info, 0);
    job->program_binding = 1;
    nm_core_run(t->core, job);
    assert_int_equal(job->status, NEURON_JOB_STATUS_BINDING_INDEX);
    assert_int_equal(job->info, 1);
    t->nbind = 0;

    /* A program in an SG binding whose host memory fails. */
    uint32_t sg = te_sg_buffer(t, size, 64, NEURON_BIND_READ | NEURON_BIND_EXEC);
    te_sg_copy(t, sg, img, size, false);
    memcpy(te_host_ptr(t, TE_HOST_BASE), t->table, sizeof(t->table[0]));
    assert_int_equal(nm_bindings_load(&job->bindings, &t->mem, TE_HOST_BASE, 1),
                     NEURON_JOB_STATUS_OK);
    job->program_binding = 0;
    nm_core_run(t->core, job);
    assert_int_equal(job->status, NEURON_JOB_STATUS_OK);
    struct neuron_sg_entry *e = te_host_ptr(t, t->table[sg].addr);
    t->fail_lo = e[1].addr;
    t->fail_hi = e[1].addr + 1;
    nm_core_run(t->core, job);
    assert_int_equal(job->status, NEURON_JOB_STATUS_HOST_DMA);
    t->fail_lo = t->fail_hi = 0;
    t->nbind = 0;
    check_core_usable(t);
    free(img);
    pb_free(&p);
    te_free(t);
}

static void test_semaphore_faults(void **state) {
    (void)state;
    tenv *t = te_new();
    pb_prog p;

    /* Deadlock: Tensor and Vector each wait for the other; Sync ends. */
    pb_init(&p);
    pb_notify(&p, NEURON_ENGINE_TENSOR, 1);
    pb_wait(&p, NEURON_ENGINE_TENSOR, 0, 1, false);
    pb_signal(&p, NEURON_ENGINE_TENSOR, 1, 1);
    pb_end(&p, NEURON_ENGINE_TENSOR);
    pb_wait(&p, NEURON_ENGINE_VECTOR, 1, 1, false);
    pb_signal(&p, NEURON_ENGINE_VECTOR, 0, 1);
    pb_end(&p, NEURON_ENGINE_VECTOR);
    pb_end(&p, NEURON_ENGINE_SYNC);
    expect(t, &p, NEURON_JOB_STATUS_SEMAPHORE, 1, NEURON_ENGINE_TENSOR);
    pb_free(&p);

    /* Waiting for more than is ever signalled. */
    pb_init(&p);
    pb_signal(&p, NEURON_ENGINE_SYNC, 4, 2);
    pb_end(&p, NEURON_ENGINE_SYNC);
    pb_wait(&p, NEURON_ENGINE_SCALAR, 4, 3, false);
    pb_end(&p, NEURON_ENGINE_SCALAR);
    expect(t, &p, NEURON_JOB_STATUS_SEMAPHORE, 0, NEURON_ENGINE_SCALAR);
    pb_free(&p);

    /* Bad semaphore ids, counter overflow. */
    struct neuron_insn in;
    memset(&in, 0, sizeof(in));
    in.opcode = NEURON_OP_SEM_SIGNAL;
    in.func = NEURON_NUM_SEMAPHORES;
    expect_insn(t, NEURON_ENGINE_VECTOR, 0, &in, NEURON_JOB_STATUS_SEMAPHORE, 0);
    in.opcode = NEURON_OP_SEM_WAIT;
    expect_insn(t, NEURON_ENGINE_VECTOR, 0, &in, NEURON_JOB_STATUS_SEMAPHORE, 0);
    pb_init(&p);
    pb_signal(&p, NEURON_ENGINE_SYNC, 2, 0xffffffffu);
    pb_signal(&p, NEURON_ENGINE_SYNC, 2, 1);
    pb_end(&p, NEURON_ENGINE_SYNC);
    expect(t, &p, NEURON_JOB_STATUS_SEMAPHORE, 1, NEURON_ENGINE_SYNC);
    pb_free(&p);
    te_free(t);
}

static void test_host_dma_fault(void **state) {
    (void)state;
    tenv *t = te_new();
    uint32_t in = te_sg_buffer(t, 4 * 8 * 4, 40, NEURON_BIND_READ);
    uint32_t out = te_sg_buffer(t, 4 * 8 * 4, 40, NEURON_BIND_WRITE);
    struct neuron_sg_entry *ei = te_host_ptr(t, t->table[in].addr);
    struct neuron_sg_entry *eo = te_host_ptr(t, t->table[out].addr);

    struct neuron_insn ld = insn_dma(true, in, 0), st = insn_dma(false, out, 0);
    expect_insn(t, NEURON_ENGINE_SYNC, 1, &ld, NEURON_JOB_STATUS_OK, 0);
    t->fail_lo = ei[2].addr + 8;
    t->fail_hi = t->fail_lo + 1;
    expect_insn(t, NEURON_ENGINE_SYNC, 1, &ld, NEURON_JOB_STATUS_HOST_DMA, 1);
    t->fail_lo = eo[3].addr;
    t->fail_hi = t->fail_lo + 4;
    expect_insn(t, NEURON_ENGINE_SYNC, 2, &st, NEURON_JOB_STATUS_HOST_DMA, 2);
    /* The SG list itself becomes unreadable after the table was loaded. */
    t->fail_lo = t->table[in].addr;
    t->fail_hi = t->fail_lo + 16;
    t->nbind = 2;
    {
        pb_prog p;
        pb_init(&p);
        *pb_emit(&p, NEURON_ENGINE_SYNC, 0) = ld;
        pb_end(&p, NEURON_ENGINE_SYNC);
        size_t size;
        uint8_t *img = pb_image(&p, &size);
        /* Load the table with the list readable, then break it. */
        t->fail_lo = t->fail_hi = 0;
        memcpy(t->devmem + TE_DEVMEM_SIZE - (8u << 20), img, size);
        te_bind(t, TE_DEVMEM_SIZE - (8u << 20), size, NEURON_BIND_READ | NEURON_BIND_EXEC, 0);
        memcpy(te_host_ptr(t, TE_HOST_BASE), t->table, 3 * sizeof(t->table[0]));
        nm_job *job = &t->job;
        memset(job, 0, sizeof(*job));
        job->mem = &t->mem;
        job->program_binding = 2;
        job->program_size = (uint32_t)size;
        assert_int_equal(nm_bindings_load(&job->bindings, &t->mem, TE_HOST_BASE, 3),
                         NEURON_JOB_STATUS_OK);
        t->fail_lo = t->table[in].addr;
        t->fail_hi = t->fail_lo + 16;
        nm_core_run(t->core, job);
        assert_int_equal(job->status, NEURON_JOB_STATUS_HOST_DMA);
        assert_int_equal(job->info, 0);
        assert_int_equal(job->fault_engine, NEURON_ENGINE_SYNC);
        t->fail_lo = t->fail_hi = 0;
        t->nbind = 2;
        free(img);
        pb_free(&p);
    }
    check_core_usable(t);
    te_free(t);
}

static void test_limit(void **state) {
    (void)state;
    tenv *t = te_new();
    pb_prog p;
    pb_init(&p);
    pb_emit(&p, NEURON_ENGINE_SCALAR, NEURON_OP_NOP);
    pb_loop(&p, NEURON_ENGINE_SCALAR, 0, 0, NEURON_LOOP_INFINITE);
    p.insn_limit = 1001;
    expect(t, &p, NEURON_JOB_STATUS_LIMIT, 1, NEURON_ENGINE_SCALAR);
    pb_free(&p);
    te_free(t);
}

/* ---- abort ---- */

struct runner {
    tenv *t;
    const pb_prog *p;
    uint32_t status;
};

static void *run_thread(void *arg) {
    struct runner *r = arg;
    r->status = te_run(r->t, r->p);
    return NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A program that never ends is stopped by the abort flag within milliseconds. */
static void abort_spin(tenv *t, const pb_prog *p) {
    struct runner r = {t, p, 0};
    pthread_t th;
    atomic_store(&t->abort, false);
    assert_int_equal(pthread_create(&th, NULL, run_thread, &r), 0);
    struct timespec d = {0, 30 * 1000 * 1000};
    nanosleep(&d, NULL);
    double t0 = now_ms();
    atomic_store(&t->abort, true);
    pthread_join(th, NULL);
    double waited = now_ms() - t0;
    assert_int_equal(r.status, NEURON_JOB_STATUS_ABORTED);
    assert_int_equal(t->job.fault_engine, 0);
    /* Generous for sanitizer builds on a busy machine. */
    if (waited > 500)
        fail_msg("abort took %.1f ms", waited);
    atomic_store(&t->abort, false);
    check_core_usable(t);
}

static void test_abort(void **state) {
    (void)state;
    tenv *t = te_new();
    pb_prog p;

    /* An infinite loop on Sync, two engines ping-ponging semaphores forever. */
    pb_init(&p);
    pb_notify(&p, NEURON_ENGINE_SYNC, 7);
    pb_loop(&p, NEURON_ENGINE_SYNC, 0, 0, NEURON_LOOP_INFINITE);
    pb_signal(&p, NEURON_ENGINE_VECTOR, 0, 1);
    pb_wait(&p, NEURON_ENGINE_VECTOR, 1, 1, true);
    pb_loop(&p, NEURON_ENGINE_VECTOR, 0, 0, NEURON_LOOP_INFINITE);
    pb_wait(&p, NEURON_ENGINE_SCALAR, 0, 1, true);
    pb_signal(&p, NEURON_ENGINE_SCALAR, 1, 1);
    pb_loop(&p, NEURON_ENGINE_SCALAR, 0, 0, NEURON_LOOP_INFINITE);
    abort_spin(t, &p);
    pb_free(&p);

    /* Spinning on the biggest matmul. */
    pb_init(&p);
    pb_matmul(&p, PS(0, 128, 0, 512), SB(0, 128, 0, 128), SB(0, 128, 4096, 512), true);
    pb_loop(&p, NEURON_ENGINE_TENSOR, 0, 0, NEURON_LOOP_INFINITE);
    abort_spin(t, &p);
    pb_free(&p);

    /* Abort already requested: nothing runs. */
    pb_init(&p);
    pb_end_all(&p);
    atomic_store(&t->abort, true);
    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_ABORTED);
    assert_int_equal(t->job.instructions, 0);
    atomic_store(&t->abort, false);
    pb_free(&p);
    check_core_usable(t);
    te_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),         cmocka_unit_test(test_operand_faults),
        cmocka_unit_test(test_binding_faults), cmocka_unit_test(test_bad_binding),
        cmocka_unit_test(test_bad_program),    cmocka_unit_test(test_semaphore_faults),
        cmocka_unit_test(test_host_dma_fault), cmocka_unit_test(test_limit),
        cmocka_unit_test(test_abort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
