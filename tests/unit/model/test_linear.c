// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Linear(768, 768) + GELU on a [128, 768] input, computed entirely by a
 * device program (DMA, transpose, matmul, activation, semaphores between
 * the four engines), against a CPU reference in double precision.
 *
 *   Y[t, o] = gelu(sum_i X[t, i] W[i, o] + b[o])
 *
 * The device computes Y^T one 128-row block of output features at a time:
 * PSUM[o, t] = sum over 6 input blocks of W[i-block, o-block]^T X^T[i-block, t],
 * then ACTIVATE adds the per-partition bias b[o] and applies GELU, and the
 * Sync engine stores the block transposed back into Y.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "testutil.h"

enum { T = 128, D = 768, B = D / 128 };

/* SBUF layout, bytes per partition. */
#define OFF_W 0                   /* W rows i, all D outputs: B blocks of D */
#define OFF_X (OFF_W + B * D * 4) /* X rows t: D */
#define OFF_XT (OFF_X + D * 4)    /* X^T blocks: B blocks of T */
#define OFF_B (OFF_XT + B * T * 4)
#define OFF_Y (OFF_B + B * 4) /* Y^T blocks: B blocks of T */

static void run_linear(uint8_t dt, uint8_t act, double rtol, double atol) {
    const uint32_t es = NEURON_DT_SIZE(dt);
    tenv *t = te_new();
    float *x = malloc(sizeof(float) * T * D), *w = malloc(sizeof(float) * D * D);
    float *b = malloc(sizeof(float) * D), *y = malloc(sizeof(float) * T * D);
    uint64_t s = 0x1234567 + dt;
    for (int i = 0; i < T * D; i++)
        x[i] = tu_uniform(&s);
    for (int i = 0; i < D * D; i++)
        w[i] = tu_uniform(&s) * 0.06f; /* ~ 1/sqrt(D) * sqrt(3) */
    for (int i = 0; i < D; i++)
        b[i] = tu_uniform(&s) * 0.5f;

    uint8_t *px, *pw, *pb, *py;
    uint32_t sx = te_buffer(t, (uint64_t)T * D * es, NEURON_BIND_READ, &px);
    uint32_t sw = te_buffer(t, (uint64_t)D * D * es, NEURON_BIND_READ, &pw);
    uint32_t sb = te_buffer(t, D * 4, NEURON_BIND_READ, &pb);
    uint32_t sy = te_buffer(t, (uint64_t)T * D * es, NEURON_BIND_WRITE, &py);
    tu_pack(dt, px, x, (size_t)T * D);
    tu_pack(dt, pw, w, (size_t)D * D);
    tu_pack(NEURON_DT_FP32, pb, b, D);

    pb_prog p;
    pb_init(&p);
    const int SY = NEURON_ENGINE_SYNC, TE = NEURON_ENGINE_TENSOR, SC = NEURON_ENGINE_SCALAR;
    /* Sync: W in 6 row blocks, X, the bias as [128, 1] per block. */
    for (uint32_t k = 0; k < B; k++)
        pb_dma(&p, true, pb_sbuf(dt, 0, 128, OFF_W + k * D * es, D), sw, (uint64_t)k * 128 * D * es,
               D * es, es, 0);
    pb_dma(&p, true, pb_sbuf(dt, 0, T, OFF_X, D), sx, 0, D * es, es, 0);
    for (uint32_t o = 0; o < B; o++)
        pb_dma(&p, true, pb_sbuf(NEURON_DT_FP32, 0, 128, OFF_B + o * 4, 1), sb, o * 128 * 4, 4, 4,
               0);
    pb_signal(&p, SY, 0, 1);
    /* Tensor: X^T blocks, then per output block 6 accumulating matmuls. */
    pb_wait(&p, TE, 0, 1, false);
    for (uint32_t k = 0; k < B; k++)
        pb_transpose(&p, pb_sbuf(dt, 0, 128, OFF_XT + k * T * es, T),
                     pb_sbuf(dt, 0, T, OFF_X + k * 128 * es, 128));
    for (uint32_t o = 0; o < B; o++) {
        for (uint32_t k = 0; k < B; k++)
            pb_matmul(&p, pb_psum(NEURON_DT_FP32, 0, 128, o * NEURON_PSUM_BANK_SIZE, T),
                      pb_sbuf(dt, 0, 128, OFF_W + (k * D + o * 128) * es, 128),
                      pb_sbuf(dt, 0, 128, OFF_XT + k * T * es, T), k > 0);
        pb_signal(&p, TE, 1, 1);
    }
    pb_end(&p, TE);
    /* Scalar: bias + GELU out of PSUM into SBUF, in the output dtype. */
    for (uint32_t o = 0; o < B; o++) {
        pb_wait(&p, SC, 1, 1, true);
        pb_activate(&p, act, pb_sbuf(dt, 0, 128, OFF_Y + o * T * es, T),
                    pb_psum(NEURON_DT_FP32, 0, 128, o * NEURON_PSUM_BANK_SIZE, T),
                    pb_sbuf(NEURON_DT_FP32, 0, 128, OFF_B + o * 4, 1), 1.0f, 0.0f);
        pb_signal(&p, SC, 2, 1);
    }
    pb_end(&p, SC);
    /* Sync: store each Y^T block transposed: partition o -> column o. */
    for (uint32_t o = 0; o < B; o++) {
        pb_wait(&p, SY, 2, 1, true);
        pb_dma(&p, false, pb_sbuf(dt, 0, 128, OFF_Y + o * T * es, T), sy, o * 128 * es, es, D * es,
               0);
    }
    pb_notify(&p, SY, 0xd0e);
    pb_end(&p, SY);

    assert_int_equal(te_run(t, &p), NEURON_JOB_STATUS_OK);
    assert_int_equal(t->nnotify, 1);
    assert_int_equal(t->job.flops, 2ull * T * D * D + (uint64_t)T * D);
    tu_unpack(dt, y, py, (size_t)T * D);

    /* Reference: double precision on the inputs as the device sees them. */
    double *xr = malloc(sizeof(double) * T * D), *wr = malloc(sizeof(double) * D * D);
    for (int i = 0; i < T * D; i++)
        xr[i] = tu_round(dt, x[i]);
    for (int i = 0; i < D * D; i++)
        wr[i] = tu_round(dt, w[i]);
    double worst = 0;
    for (int tt = 0; tt < T; tt++)
        for (int o = 0; o < D; o++) {
            double z = b[o];
            for (int i = 0; i < D; i++)
                z += xr[tt * D + i] * wr[i * D + o];
            double want =
                act == NEURON_ACT_GELU
                    ? 0.5 * z * (1 + erf(z / sqrt(2)))
                    : 0.5 * z * (1 + tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
            double got = y[tt * D + o], err = fabs(got - want) / (atol + rtol * fabs(want));
            if (err > worst)
                worst = err;
            if (err > 1)
                fail_msg("dt %u Y[%d,%d] = %.8g, want %.8g", dt, tt, o, got, want);
        }
    print_message("dtype %u act %u: worst error %.3f of tolerance, %llu cycles\n", dt, act, worst,
                  (unsigned long long)t->job.cycles);
    free(xr);
    free(wr);
    free(x);
    free(w);
    free(b);
    free(y);
    pb_free(&p);
    te_free(t);
}

static void test_linear_gelu_fp32(void **state) {
    (void)state;
    run_linear(NEURON_DT_FP32, NEURON_ACT_GELU, 1e-5, 1e-6);
    run_linear(NEURON_DT_FP32, NEURON_ACT_GELU_TANH, 1e-5, 1e-6);
}

static void test_linear_gelu_bf16(void **state) {
    (void)state;
    /* bf16 output: half an ulp is 2^-9 relative; inputs are rounded alike. */
    run_linear(NEURON_DT_BF16, NEURON_ACT_GELU, 1e-2, 1e-3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_gelu_fp32),
        cmocka_unit_test(test_linear_gelu_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
