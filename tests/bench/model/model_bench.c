// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * neuron-model-bench: matmul GFLOP/s of the device model, measured through
 * the ISA (tiled MATMUL instructions on operands in SBUF, as a compiler
 * would emit them) with fp32 and bf16 inputs (fp32 accumulation in PSUM),
 * next to OpenBLAS cblas_sgemm on one thread on the same sizes and data, in
 * the same run. sgemm is fp32 in both rows: OpenBLAS has no bf16 path the
 * model could be held to, and the model computes in fp32 either way. Then
 * the Vector and Scalar engines (ACTIVATE, TENSOR_TENSOR, REDUCE) over a
 * full SBUF tile, next to plain C loops of the same operation.
 *
 * Every figure is the median (with min and max) of --repeat timed runs,
 * after one untimed run of each matmul program and of sgemm; each timed
 * run lasts about --seconds. neuron-bench reads --json to show
 * these host-side limits next to the emulated device's figures. Both sides
 * run in this one thread; --cpu-time times them by the thread's CPU time
 * instead of the wall clock, leaving out the time the thread waits for a
 * core on a machine shared with other work.
 *
 * Usage: neuron-model-bench [--quick] [--seconds S] [--repeat N] [--cpu-time]
 *                           [--shape MxNxK] [--matmul-path NAME] [--json FILE]
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "matmul.h"
#include "progbuild.h"

#define MAX_REPEAT 100

/* CLOCK_MONOTONIC, or CLOCK_THREAD_CPUTIME_ID with --cpu-time. */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now(void) {
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct stats {
    double median, min, max;
    unsigned runs;
} stats;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts @v in place. */
static stats stats_of(double *v, unsigned n) {
    qsort(v, n, sizeof(*v), cmp_double);
    stats s = {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[0], v[n - 1], n};
    return s;
}

/* fp32 -> bf16, round to nearest even (hw/isa.md 3.3); the data has no NaNs. */
static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static size_t dtype_bytes(uint8_t dt) {
    return dt == NEURON_DT_FP32 ? 4 : 2;
}

static const char *dtype_name(uint8_t dt) {
    return dt == NEURON_DT_FP32 ? "fp32" : "bf16";
}

/*
 * C[M, N] = A^T B with A [K, M] and B [K, N] (row-major, elements of @dt),
 * M and K multiples of 128, N a multiple of 512. SBUF: A as K/128 tiles of
 * [128, M], B as K/128 tiles of [128, N]; each [128, 512] output tile
 * accumulates K/128 matmuls in a PSUM bank. The tile loop repeats @reps
 * times (LOOP).
 */
static void build(pb_prog *p, uint8_t dt, uint32_t sa, uint32_t sb, uint32_t M, uint32_t N,
                  uint32_t K, uint32_t reps) {
    const uint32_t es = (uint32_t)dtype_bytes(dt), kt = K / 128, a_off = 0, b_off = kt * M * es;
    pb_init(p);
    for (uint32_t k = 0; k < kt; k++) {
        pb_dma(p, true, pb_sbuf(dt, 0, 128, a_off + k * M * es, M), sa, (uint64_t)k * 128 * M * es,
               M * es, es, 0);
        pb_dma(p, true, pb_sbuf(dt, 0, 128, b_off + k * N * es, N), sb, (uint64_t)k * 128 * N * es,
               N * es, es, 0);
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
                          pb_sbuf(dt, 0, 128, a_off + (k * M + m) * es, 128),
                          pb_sbuf(dt, 0, 128, b_off + (k * N + n) * es, 512), k > 0);
    if (reps > 1)
        pb_loop(p, NEURON_ENGINE_TENSOR, 0, top, reps);
    pb_end(p, NEURON_ENGINE_TENSOR);
}

typedef struct image {
    uint8_t *bytes;
    size_t size;
} image;

static image build_image(uint8_t dt, uint32_t sa, uint32_t sb, uint32_t M, uint32_t N, uint32_t K,
                         uint32_t reps) {
    pb_prog p;
    build(&p, dt, sa, sb, M, N, K, reps);
    image im;
    im.bytes = pb_image(&p, &im.size);
    pb_free(&p);
    return im;
}

/* Runs @im once; the elapsed seconds, or a negative value on failure. */
static double run_timed(tenv *t, const image *im, uint64_t flops_expected) {
    double t0 = now();
    uint32_t st = te_run_image(t, im->bytes, im->size);
    double elapsed = now() - t0;
    if (st != NEURON_JOB_STATUS_OK || t->job.flops != flops_expected) {
        fprintf(stderr, "model run failed: status %#x info %u, %llu FLOPs (expected %llu)\n", st,
                t->job.info, (unsigned long long)t->job.flops, (unsigned long long)flops_expected);
        return -1;
    }
    return elapsed;
}

/*
 * A program with inputs of @dt whose run lasts about @seconds: the
 * repetition count is calibrated by doubling it until a run takes an
 * eighth of @seconds (so the fixed cost of a job, loading A and B into
 * SBUF, no longer dominates), then scaled to @seconds.
 */
static int calibrate(tenv *t, uint8_t dt, uint32_t sa, uint32_t sb, uint32_t M, uint32_t N,
                     uint32_t K, double seconds, image *out, uint32_t *reps_out) {
    const double flop = 2.0 * M * N * K;
    uint32_t reps = 1;
    double elapsed;
    for (;;) {
        image im = build_image(dt, sa, sb, M, N, K, reps);
        elapsed = run_timed(t, &im, (uint64_t)(flop * reps));
        free(im.bytes);
        if (elapsed < 0)
            return 1;
        if (elapsed >= seconds / 8 || reps >= (1u << 30))
            break;
        reps *= 2;
    }
    double scaled = (double)reps * seconds / (elapsed > 1e-9 ? elapsed : 1e-9);
    reps = scaled < 1 ? 1 : scaled > 4e9 ? 4000000000u : (uint32_t)scaled;
    *out = build_image(dt, sa, sb, M, N, K, reps);
    *reps_out = reps;
    return 0;
}

/* OpenBLAS on one thread, C = A^T B on the same data for @seconds: GFLOP/s. */
static double sgemm_run(const float *a, const float *b, float *c, uint32_t M, uint32_t N,
                        uint32_t K, double seconds) {
    int calls = 0;
    double t0 = now(), elapsed;
    do {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a,
                    (int)M, b, (int)N, 0.0f, c, (int)N);
        calls++;
    } while ((elapsed = now() - t0) < seconds);
    return 2.0 * M * N * K * calls / elapsed * 1e-9;
}

typedef struct result {
    uint32_t m, n, k;
    uint8_t dtype;
    stats model, sgemm;
} result;

static void fill_random(float *v, uint64_t count, uint64_t *state) {
    uint64_t s = *state;
    for (uint64_t i = 0; i < count; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        v[i] = (float)(s >> 40) / (float)(1u << 24) - 0.5f;
    }
    *state = s;
}

/* Both dtypes of one shape into out[0] (fp32) and out[1] (bf16). */
static int bench(uint32_t M, uint32_t N, uint32_t K, double seconds, unsigned repeat,
                 result out[2]) {
    tenv *t = te_new();
    uint8_t *pa, *pbm, *pa16, *pb16;
    const uint64_t a_elems = (uint64_t)K * M, b_elems = (uint64_t)K * N;
    uint32_t sa = te_buffer(t, a_elems * 4, NEURON_BIND_READ, &pa);
    uint32_t sb = te_buffer(t, b_elems * 4, NEURON_BIND_READ, &pbm);
    uint32_t sa16 = te_buffer(t, a_elems * 2, NEURON_BIND_READ, &pa16);
    uint32_t sb16 = te_buffer(t, b_elems * 2, NEURON_BIND_READ, &pb16);
    float *a = (float *)(void *)pa, *b = (float *)(void *)pbm;
    float *c = malloc(sizeof(float) * M * N);
    if (!c)
        abort();
    uint64_t seed = 88172645463325252ull;
    fill_random(a, a_elems, &seed);
    fill_random(b, b_elems, &seed);
    /* The bf16 operands are the same data, rounded. */
    uint16_t *a16 = (uint16_t *)(void *)pa16, *b16 = (uint16_t *)(void *)pb16;
    for (uint64_t i = 0; i < a_elems; i++)
        a16[i] = to_bf16(a[i]);
    for (uint64_t i = 0; i < b_elems; i++)
        b16[i] = to_bf16(b[i]);

    /*
     * The timed runs of the model (fp32, bf16) and of sgemm alternate, so
     * that the machine's drift during a run hits all three alike.
     */
    const double flop = 2.0 * M * N * K;
    image im[2];
    uint32_t reps[2];
    int err = calibrate(t, NEURON_DT_FP32, sa, sb, M, N, K, seconds, &im[0], &reps[0]);
    if (!err) {
        err = calibrate(t, NEURON_DT_BF16, sa16, sb16, M, N, K, seconds, &im[1], &reps[1]);
        if (err)
            free(im[0].bytes);
    }
    if (!err) {
        double g[3][MAX_REPEAT];
        /* Warm-up, untimed: one run of each program, and sgemm. */
        for (int i = 0; i < 2 && !err; i++)
            err = run_timed(t, &im[i], (uint64_t)(flop * reps[i])) < 0;
        sgemm_run(a, b, c, M, N, K, seconds / 8);
        for (unsigned r = 0; r < repeat && !err; r++) {
            for (int i = 0; i < 2 && !err; i++) {
                double elapsed = run_timed(t, &im[i], (uint64_t)(flop * reps[i]));
                err = elapsed < 0;
                g[i][r] = flop * reps[i] / elapsed * 1e-9;
            }
            g[2][r] = sgemm_run(a, b, c, M, N, K, seconds);
        }
        free(im[0].bytes);
        free(im[1].bytes);
        if (!err) {
            stats sg = stats_of(g[2], repeat);
            for (int i = 0; i < 2; i++) {
                out[i].m = M, out[i].n = N, out[i].k = K, out[i].sgemm = sg;
                out[i].dtype = i ? NEURON_DT_BF16 : NEURON_DT_FP32;
                out[i].model = stats_of(g[i], repeat);
                printf("%5u x %5u x %5u  %-5s  %9.2f   %9.2f   %6.3f\n", M, N, K,
                       dtype_name(out[i].dtype), out[i].model.median, sg.median,
                       out[i].model.median / sg.median);
            }
            fflush(stdout);
        }
    }
    free(c);
    te_free(t);
    return err;
}

/* ---- the Vector and Scalar engines over a full SBUF tile ---- */

#define VEC_P 128u
#define VEC_F 2048u /* [128, 2048] fp32: 1 MiB per operand */
#define SUM_LANES 16

typedef enum vec_op { VEC_RELU, VEC_GELU, VEC_ADD, VEC_SUM, VEC_OPS } vec_op;

static const char *const vec_names[VEC_OPS] = {"ACTIVATE relu", "ACTIVATE gelu",
                                               "TENSOR_TENSOR add", "REDUCE sum"};

typedef struct vec_result {
    vec_op op;
    stats model, cloop; /* Gelem/s */
} vec_result;

/* x (tile 0) and y (tile 1) loaded; the op repeated @reps times into tile 2. */
static image vec_image(vec_op op, uint32_t slot, uint32_t reps) {
    const uint32_t row = VEC_F * 4;
    pb_prog p;
    pb_init(&p);
    pb_dma(&p, true, pb_sbuf(NEURON_DT_FP32, 0, VEC_P, 0, 2 * VEC_F), slot, 0, 2 * row, 4, 0);
    const int engine =
        op == VEC_RELU || op == VEC_GELU ? NEURON_ENGINE_SCALAR : NEURON_ENGINE_VECTOR;
    pb_signal(&p, NEURON_ENGINE_SYNC, 0, 1);
    pb_end(&p, NEURON_ENGINE_SYNC);
    pb_wait(&p, engine, 0, 1, false);
    const uint32_t top = pb_here(&p, engine);
    const struct neuron_tap x = pb_sbuf(NEURON_DT_FP32, 0, VEC_P, 0, VEC_F),
                            y = pb_sbuf(NEURON_DT_FP32, 0, VEC_P, row, VEC_F),
                            out = pb_sbuf(NEURON_DT_FP32, 0, VEC_P, 2 * row, VEC_F);
    static const struct neuron_tap none;
    switch (op) {
    case VEC_RELU:
        pb_activate(&p, NEURON_ACT_RELU, out, x, none, 1.5f, 0.25f);
        break;
    case VEC_GELU:
        pb_activate(&p, NEURON_ACT_GELU, out, x, none, 1.5f, 0.25f);
        break;
    case VEC_ADD:
        pb_tt(&p, NEURON_ALU_ADD, out, x, y);
        break;
    default:
        pb_reduce(&p, NEURON_RED_SUM, pb_sbuf(NEURON_DT_FP32, 0, VEC_P, 2 * row, 1), x);
        break;
    }
    if (reps > 1)
        pb_loop(&p, engine, 0, top, reps);
    pb_end(&p, engine);
    image im;
    im.bytes = pb_image(&p, &im.size);
    pb_free(&p);
    return im;
}

/* The same operation as plain C loops over [VEC_P][VEC_F] arrays. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
/* Built for the same x86-64 levels as the model's loops (NM_CLONES). */
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void
vec_cloop(vec_op op, float *restrict out, const float *restrict x, const float *restrict y) {
    const size_t n = (size_t)VEC_P * VEC_F;
    switch (op) {
    case VEC_RELU:
        for (size_t i = 0; i < n; i++) {
            float v = x[i] * 1.5f + 0.25f;
            out[i] = v >= 0.0f ? v : 0.0f;
        }
        return;
    case VEC_GELU:
        for (size_t i = 0; i < n; i++) {
            float v = x[i] * 1.5f + 0.25f;
            out[i] = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
        }
        return;
    case VEC_ADD:
        for (size_t i = 0; i < n; i++)
            out[i] = x[i] + y[i];
        return;
    default:
        for (size_t p = 0; p < VEC_P; p++) {
            float lane[SUM_LANES] = {0};
            for (size_t i = 0; i < VEC_F; i += SUM_LANES)
                for (size_t l = 0; l < SUM_LANES; l++)
                    lane[l] += x[p * VEC_F + i + l];
            float v = 0;
            for (size_t l = 0; l < SUM_LANES; l++)
                v += lane[l];
            out[p] = v;
        }
        return;
    }
}

static double cloop_run(vec_op op, float *out, const float *x, const float *y, double seconds) {
    unsigned calls = 0;
    double t0 = now(), elapsed;
    do {
        vec_cloop(op, out, x, y);
        calls++;
    } while ((elapsed = now() - t0) < seconds);
    return (double)VEC_P * VEC_F * calls / elapsed * 1e-9;
}

static int bench_vector(double seconds, unsigned repeat, vec_result out[VEC_OPS]) {
    const uint64_t elems = (uint64_t)VEC_P * VEC_F;
    tenv *t = te_new();
    uint8_t *px;
    const uint32_t slot = te_buffer(t, 2 * elems * 4, NEURON_BIND_READ, &px);
    float *xy = (float *)(void *)px, *x = malloc(elems * 4), *y = malloc(elems * 4),
          *res = malloc(elems * 4);
    if (!x || !y || !res)
        abort();
    uint64_t seed = 0x2545f4914f6cdd1dull;
    fill_random(xy, 2 * elems, &seed);
    /* The host copies in the loops' layout: x and y side by side per row in SBUF. */
    for (uint32_t p = 0; p < VEC_P; p++) {
        memcpy(x + (size_t)p * VEC_F, xy + (size_t)p * 2 * VEC_F, VEC_F * 4);
        memcpy(y + (size_t)p * VEC_F, xy + (size_t)p * 2 * VEC_F + VEC_F, VEC_F * 4);
    }
    int err = 0;
    for (vec_op op = 0; op < VEC_OPS && !err; op++) {
        uint32_t reps = 1;
        double elapsed;
        for (;;) {
            image im = vec_image(op, slot, reps);
            elapsed = run_timed(t, &im, elems * reps);
            free(im.bytes);
            if (elapsed < 0) {
                err = 1;
                break;
            }
            if (elapsed >= seconds / 8 || reps >= (1u << 30))
                break;
            reps *= 2;
        }
        if (err)
            break;
        double scaled = (double)reps * seconds / (elapsed > 1e-9 ? elapsed : 1e-9);
        reps = scaled < 1 ? 1 : (uint32_t)scaled;
        image im = vec_image(op, slot, reps);
        double gm[MAX_REPEAT], gc[MAX_REPEAT];
        for (unsigned r = 0; r < repeat && !err; r++) {
            elapsed = run_timed(t, &im, elems * reps);
            err = elapsed < 0;
            gm[r] = (double)elems * reps / elapsed * 1e-9;
            gc[r] = cloop_run(op, res, x, y, seconds);
        }
        free(im.bytes);
        if (err)
            break;
        out[op].op = op;
        out[op].model = stats_of(gm, repeat);
        out[op].cloop = stats_of(gc, repeat);
        printf("%-18s [%u x %u] fp32  %9.3f   %9.3f   %6.3f\n", vec_names[op], VEC_P, VEC_F,
               out[op].model.median, out[op].cloop.median,
               out[op].model.median / out[op].cloop.median);
        fflush(stdout);
    }
    free(x);
    free(y);
    free(res);
    te_free(t);
    return err;
}

static void json_stats(FILE *f, const char *name, const stats *s) {
    fprintf(f, "\"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"runs\": %u}", name,
            s->median, s->min, s->max, s->runs);
}

static int write_json(const char *path, const result *res, size_t count, const vec_result *vec,
                      size_t nvec, double seconds) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "{\n  \"unit\": \"GFLOP/s\",\n  \"seconds_per_run\": %g,\n", seconds);
    fprintf(f, "  \"clock\": \"%s\",\n", bench_clock == CLOCK_MONOTONIC ? "wall" : "thread-cpu");
    fprintf(f, "  \"sgemm\": \"OpenBLAS cblas_sgemm, 1 thread, fp32, %s kernels\",\n",
            openblas_get_corename());
    fprintf(f, "  \"model_matmul_path\": \"%s\",\n  \"matmul\": [",
            nm_mm_path_name(nm_mm_path_current()));
    for (size_t i = 0; i < count; i++) {
        const result *r = &res[i];
        fprintf(f, "%s\n    {\"m\": %u, \"n\": %u, \"k\": %u, \"dtype\": \"%s\", ", i ? "," : "",
                r->m, r->n, r->k, dtype_name(r->dtype));
        json_stats(f, "model_gflops", &r->model);
        fputs(", ", f);
        json_stats(f, "sgemm_gflops", &r->sgemm);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"vector_unit\": \"Gelem/s\",\n  \"vector\": [");
    for (size_t i = 0; i < nvec; i++) {
        fprintf(f, "%s\n    {\"op\": \"%s\", \"p\": %u, \"f\": %u, \"dtype\": \"fp32\", ",
                i ? "," : "", vec_names[vec[i].op], VEC_P, VEC_F);
        json_stats(f, "model_gelems", &vec[i].model);
        fputs(", ", f);
        json_stats(f, "cloop_gelems", &vec[i].cloop);
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    if (fclose(f)) {
        perror(path);
        return 1;
    }
    return 0;
}

static int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--quick] [--seconds S] [--repeat N] [--cpu-time] [--shape MxNxK]\n"
            "          [--matmul-path NAME] [--json FILE]\n"
            "  --quick         short runs (%s)\n"
            "  --seconds S     length of one timed run (default 0.5)\n"
            "  --repeat N      timed runs per figure, 1..%d (default 5)\n"
            "  --cpu-time      time by this thread's CPU time, not the wall clock\n"
            "  --shape MxNxK   only this shape (M, K multiples of 128, N of 512)\n"
            "  --matmul-path NAME  the model's matmul kernels: portable, avx2-fma or avx512\n"
            "                  (default: the best the CPU supports)\n"
            "  --json FILE     also write the figures as JSON\n",
            argv0, "0.05 s, 3 runs", MAX_REPEAT);
    return 2;
}

int main(int argc, char **argv) {
    double seconds = 0;
    unsigned repeat = 0; /* 0: the default of the mode */
    bool quick = false;
    const char *json = NULL;
    uint32_t only[3] = {0, 0, 0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!strcmp(argv[i], "--cpu-time")) {
            bench_clock = CLOCK_THREAD_CPUTIME_ID;
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
            if (!(seconds > 0))
                return usage(argv[0]);
        } else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
            long n = strtol(argv[++i], NULL, 10);
            if (n < 1 || n > MAX_REPEAT)
                return usage(argv[0]);
            repeat = (unsigned)n;
        } else if (!strcmp(argv[i], "--matmul-path") && i + 1 < argc) {
            const char *name = argv[++i];
            nm_mm_path p = 0;
            while (p < NM_MM_PATHS && !(nm_mm_path_name(p) && !strcmp(nm_mm_path_name(p), name)))
                p++;
            if (!nm_mm_path_select(p)) {
                fprintf(stderr, "%s: matmul path '%s' unknown or not supported here\n", argv[0],
                        name);
                return 2;
            }
        } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            json = argv[++i];
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            if (sscanf(argv[++i], "%ux%ux%u", &only[0], &only[1], &only[2]) != 3 || !only[0] ||
                only[0] % 128 || !only[1] || only[1] % 512 || !only[2] || only[2] % 128)
                return usage(argv[0]);
        } else {
            return usage(argv[0]);
        }
    }
    if (!seconds)
        seconds = quick ? 0.05 : 0.5;
    if (!repeat)
        repeat = quick ? 3 : 5;
    /* fp32 A and B must fit in one SBUF partition's share. */
    if (only[0] && (uint64_t)only[2] / 128 * ((uint64_t)only[0] + only[1]) * 4 >
                       NEURON_SBUF_DEFAULT_SIZE / 128) {
        fprintf(stderr, "%s: %ux%ux%u does not fit in SBUF\n", argv[0], only[0], only[1], only[2]);
        return 2;
    }

    openblas_set_num_threads(1);
    printf("matmul, C[M,N] = A[K,M]^T B[K,N], fp32 accumulation; model through MATMUL\n"
           "instructions (kernels: %s), OpenBLAS cblas_sgemm (fp32, %s) on 1 thread;\n"
           "GFLOP/s, median of %u, timed by %s\n\n",
           nm_mm_path_name(nm_mm_path_current()), openblas_get_corename(), repeat,
           bench_clock == CLOCK_MONOTONIC ? "the wall clock" : "the thread's CPU time");
    printf("%-23s  %-5s  %9s   %9s   %6s\n", "M x N x K", "dtype", "model", "sgemm", "ratio");
    static const uint32_t sizes[][3] = {{128, 512, 128}, {512, 512, 512}, {1024, 1024, 1024}};
    const uint32_t(*shapes)[3] = sizes;
    size_t nshapes = sizeof(sizes) / sizeof(sizes[0]);
    if (only[0]) {
        shapes = &only;
        nshapes = 1;
    }
    result res[2 * sizeof(sizes) / sizeof(sizes[0])];
    for (size_t i = 0; i < nshapes; i++)
        if (bench(shapes[i][0], shapes[i][1], shapes[i][2], seconds, repeat, &res[2 * i]))
            return 1;

    printf("\nVector and Scalar engines over a full SBUF tile, next to plain C loops of the\n"
           "same operation on the same data (-O3, vectorized where the operation allows);\n"
           "Gelem/s, median of %u\n\n",
           repeat);
    printf("%-18s %-18s %9s   %9s   %6s\n", "instruction", "shape", "model", "C loop", "ratio");
    vec_result vec[VEC_OPS];
    if (bench_vector(seconds, repeat, vec))
        return 1;
    if (json && write_json(json, res, 2 * nshapes, vec, VEC_OPS, seconds))
        return 1;
    return 0;
}
