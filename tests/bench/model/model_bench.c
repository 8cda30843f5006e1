// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * neuron-model-bench: fp32 matmul GFLOP/s of the device model, measured
 * through the ISA (tiled MATMUL instructions on operands in SBUF, as a
 * compiler would emit them), next to OpenBLAS cblas_sgemm on one thread on
 * the same sizes and data, in the same run.
 *
 * Usage: neuron-model-bench [--quick] [--seconds S]
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "progbuild.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * C[M, N] = A^T B with A [K, M] and B [K, N] (row-major), M and K multiples
 * of 128, N a multiple of 512. SBUF: A as K/128 tiles of [128, M], B as
 * K/128 tiles of [128, N]; each [128, 512] output tile accumulates K/128
 * matmuls in a PSUM bank. The tile loop repeats @reps times (LOOP).
 */
static void build(pb_prog *p, uint32_t sa, uint32_t sb, uint32_t M, uint32_t N, uint32_t K,
                  uint32_t reps) {
    const uint32_t kt = K / 128, a_off = 0, b_off = kt * M * 4;
    pb_init(p);
    for (uint32_t k = 0; k < kt; k++) {
        pb_dma(p, true, pb_sbuf(NEURON_DT_FP32, 0, 128, a_off + k * M * 4, M), sa,
               (uint64_t)k * 128 * M * 4, M * 4, 4, 0);
        pb_dma(p, true, pb_sbuf(NEURON_DT_FP32, 0, 128, b_off + k * N * 4, N), sb,
               (uint64_t)k * 128 * N * 4, N * 4, 4, 0);
    }
    pb_signal(p, NEURON_ENGINE_SYNC, 0, 1);
    pb_end(p, NEURON_ENGINE_SYNC);
    pb_wait(p, NEURON_ENGINE_TENSOR, 0, 1, false);
    uint32_t top = pb_here(p, NEURON_ENGINE_TENSOR), tile = 0;
    for (uint32_t m = 0; m < M; m += 128)
        for (uint32_t n = 0; n < N; n += 512, tile++)
            for (uint32_t k = 0; k < kt; k++)
                pb_matmul(p,
                          pb_psum(NEURON_DT_FP32, 0, 128,
                                  (tile % NEURON_PSUM_BANKS) * NEURON_PSUM_BANK_SIZE, 512),
                          pb_sbuf(NEURON_DT_FP32, 0, 128, a_off + (k * M + m) * 4, 128),
                          pb_sbuf(NEURON_DT_FP32, 0, 128, b_off + (k * N + n) * 4, 512), k > 0);
    if (reps > 1)
        pb_loop(p, NEURON_ENGINE_TENSOR, 0, top, reps);
    pb_end(p, NEURON_ENGINE_TENSOR);
}

static int bench(uint32_t M, uint32_t N, uint32_t K, double seconds) {
    tenv *t = te_new();
    uint8_t *pa, *pbm;
    uint32_t sa = te_buffer(t, (uint64_t)K * M * 4, NEURON_BIND_READ, &pa);
    uint32_t sb = te_buffer(t, (uint64_t)K * N * 4, NEURON_BIND_READ, &pbm);
    float *a = (float *)(void *)pa, *b = (float *)(void *)pbm;
    float *c = malloc(sizeof(float) * M * N);
    uint64_t s = 88172645463325252ull;
    for (uint64_t i = 0; i < (uint64_t)K * M; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        a[i] = (float)(s >> 40) / (float)(1u << 24) - 0.5f;
    }
    for (uint64_t i = 0; i < (uint64_t)K * N; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        b[i] = (float)(s >> 40) / (float)(1u << 24) - 0.5f;
    }
    const double flop = 2.0 * M * N * K;

    /* Model: calibrate repetitions on one pass, then time a long run. */
    pb_prog p;
    build(&p, sa, sb, M, N, K, 1);
    double t0 = now();
    if (te_run(t, &p) != NEURON_JOB_STATUS_OK) {
        fprintf(stderr, "model run failed: status %#x info %u\n", t->job.status, t->job.info);
        return 1;
    }
    double one = now() - t0;
    pb_free(&p);
    uint32_t reps = (uint32_t)(seconds / (one > 1e-6 ? one : 1e-6)) + 1;
    build(&p, sa, sb, M, N, K, reps);
    t0 = now();
    uint32_t st = te_run(t, &p);
    double model_s = now() - t0;
    pb_free(&p);
    if (st != NEURON_JOB_STATUS_OK || t->job.flops != (uint64_t)(flop * reps)) {
        fprintf(stderr, "model run failed: status %#x\n", st);
        return 1;
    }
    double model_gf = flop * reps / model_s * 1e-9;

    /* OpenBLAS, one thread: C = A^T B on the same data. */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)M, b,
                (int)N, 0.0f, c, (int)N);
    int n_blas = 0;
    t0 = now();
    do {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a,
                    (int)M, b, (int)N, 0.0f, c, (int)N);
        n_blas++;
    } while (now() - t0 < seconds);
    double blas_gf = flop * n_blas / (now() - t0) * 1e-9;

    printf("%5u x %5u x %5u   %9.2f   %9.2f   %6.3f\n", M, N, K, model_gf, blas_gf,
           model_gf / blas_gf);
    free(c);
    te_free(t);
    return 0;
}

int main(int argc, char **argv) {
    double seconds = 1.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            seconds = 0.1;
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--quick] [--seconds S]\n", argv[0]);
            return 2;
        }
    }
    openblas_set_num_threads(1);
    printf("fp32 matmul, C[M,N] = A[K,M]^T B[K,N]; model through MATMUL instructions,\n"
           "OpenBLAS cblas_sgemm on 1 thread; GFLOP/s\n\n");
    printf("%-23s   %9s   %9s   %6s\n", "M x N x K", "model", "sgemm", "ratio");
    static const uint32_t sizes[][3] = {{128, 512, 128}, {512, 512, 512}, {1024, 1024, 1024}};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        if (bench(sizes[i][0], sizes[i][1], sizes[i][2], seconds))
            return 1;
    return 0;
}
