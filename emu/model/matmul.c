// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The matmul kernels: C[M][N] (+)= A[K][M]^T B[K][N] in fp32, register
 * blocked. A is packed into panels of MR rows of C (K x MR each), B into
 * panels of NR columns (K x NR each, in L1 while every A panel passes
 * over it), and an MR x NR tile of C stays in registers for the whole K.
 *
 * Every path computes each element of C the same way, whatever its tile
 * shape: starting from C (accumulate) or 0, one multiply-add per k in
 * increasing k order. The FMA paths (AVX2+FMA, AVX-512) round once per
 * multiply-add and give the same bits as each other; the portable path
 * rounds the product and the sum separately (hw/isa.md, section 6).
 */
#include <stdlib.h>

#include "matmul.h"
#include "model_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define MM_X86 1
#include <immintrin.h>
#endif

/* An MR x NR tile of C at @c (row stride @ldc floats) (+)= panels @ap, @bp. */
typedef void mm_kernel(const float *restrict ap, const float *restrict bp, float *restrict c,
                       size_t ldc, uint32_t k, bool accumulate);

typedef struct mm_path_desc {
    const char *name;
    uint32_t mr, nr;
    mm_kernel *kernel;
    /* Optional: a last panel pair_nr wide, two whole tiles of A at a time. */
    uint32_t pair_nr;
    mm_kernel *pair;
} mm_path_desc;

#define PORTABLE_MR 4
#define PORTABLE_NR 16

static void kernel_portable(const float *restrict ap, const float *restrict bp, float *restrict c,
                            size_t ldc, uint32_t k, bool accumulate) {
    float t[PORTABLE_MR][PORTABLE_NR];
    for (uint32_t r = 0; r < PORTABLE_MR; r++)
        for (uint32_t j = 0; j < PORTABLE_NR; j++)
            t[r][j] = accumulate ? c[r * ldc + j] : 0.0f;
    for (uint32_t kk = 0; kk < k; kk++) {
        const float *restrict b = bp + (size_t)kk * PORTABLE_NR;
        for (uint32_t r = 0; r < PORTABLE_MR; r++) {
            const float a = ap[(size_t)kk * PORTABLE_MR + r];
            for (uint32_t j = 0; j < PORTABLE_NR; j++)
                t[r][j] += a * b[j];
        }
    }
    for (uint32_t r = 0; r < PORTABLE_MR; r++)
        for (uint32_t j = 0; j < PORTABLE_NR; j++)
            c[r * ldc + j] = t[r][j];
}

#ifdef MM_X86
/*
 * An x86 kernel: an MR x NV*W tile of C in MR * NV vector registers of W
 * floats; per k, NV loads of B, MR broadcasts of A, MR * NV FMAs. A's rows
 * come from panels AMR wide (consecutive, K * AMR apart) and B's panel rows
 * are BS floats apart, so a kernel can also cover part of a wider panel of
 * B, or the rows of more than one panel of A. The loop over k is unrolled
 * UNROLL times (same order of operations, so the same bits).
 */
#define MM_PRAGMA(x) _Pragma(#x)
#define MM_X86_KERNEL(fn, isa, vec, MR, NV, W, AMR, BS, UNROLL, load, store, set1, zero, fmadd)    \
    __attribute__((target(isa))) static void fn(const float *restrict ap,                          \
                                                const float *restrict bp, float *restrict c,       \
                                                size_t ldc, uint32_t k, bool accumulate) {         \
        vec t[MR][NV];                                                                             \
        for (int r = 0; r < MR; r++)                                                               \
            for (int h = 0; h < NV; h++)                                                           \
                t[r][h] = accumulate ? load(c + r * ldc + W * h) : zero();                         \
        MM_PRAGMA(GCC unroll UNROLL)                                                               \
        for (uint32_t kk = 0; kk < k; kk++) {                                                      \
            vec bv[NV];                                                                            \
            for (int h = 0; h < NV; h++)                                                           \
                bv[h] = load(bp + (size_t)kk * (BS) + W * h);                                      \
            for (int r = 0; r < MR; r++) {                                                         \
                const vec a =                                                                      \
                    set1(ap[(size_t)(r / (AMR)) * k * (AMR) + (size_t)kk * (AMR) + r % (AMR)]);    \
                for (int h = 0; h < NV; h++)                                                       \
                    t[r][h] = fmadd(a, bv[h], t[r][h]);                                            \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < MR; r++)                                                               \
            for (int h = 0; h < NV; h++)                                                           \
                store(c + r * ldc + W * h, t[r][h]);                                               \
    }

/*
 * 4 x 24 in ymm registers: 12 accumulators, 3 vectors of B and a broadcast,
 * all 16 registers. M = 128 is 32 whole tiles (a 6-row tile left a
 * partial one) and a bf16 panel row of A is 8 bytes. Unrolled 4 times, the
 * fastest of 1, 2, 4 and 8 on an AMD EPYC (Zen 3; docs/performance.md).
 */
#define AVX2_MR 4
#define AVX2_NR 24
#define AVX2_UNROLL 4
MM_X86_KERNEL(kernel_avx2, "avx2,fma", __m256, AVX2_MR, 3, 8, AVX2_MR, AVX2_NR, AVX2_UNROLL,
              _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_setzero_ps, _mm256_fmadd_ps)

/*
 * The first 8 columns of a B panel for two tiles of A at once: 8
 * accumulators, as many as two FMA units with a 4-cycle latency keep busy,
 * where one 4 x 8 tile would leave them half idle. N = 512 is 21 panels of
 * 24 and one of 8; through the 4 x 24 kernel that last panel cost as much
 * as a full one.
 */
#define AVX2_PAIR_NR 8
MM_X86_KERNEL(kernel_avx2_pair, "avx2,fma", __m256, 2 * AVX2_MR, 1, 8, AVX2_MR, AVX2_NR,
              AVX2_UNROLL, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_setzero_ps,
              _mm256_fmadd_ps)

/* 8 x 32 in zmm registers: 16 accumulators. */
#define AVX512_MR 8
#define AVX512_NR 32
MM_X86_KERNEL(kernel_avx512, "avx512f", __m512, AVX512_MR, 2, 16, AVX512_MR, AVX512_NR, 1,
              _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_setzero_ps, _mm512_fmadd_ps)
#endif

static const mm_path_desc paths[NM_MM_PATHS] = {
    [NM_MM_PORTABLE] = {"portable", PORTABLE_MR, PORTABLE_NR, kernel_portable},
#ifdef MM_X86
    [NM_MM_AVX2_FMA] = {"avx2-fma", AVX2_MR, AVX2_NR, kernel_avx2, AVX2_PAIR_NR, kernel_avx2_pair},
    [NM_MM_AVX512] = {"avx512", AVX512_MR, AVX512_NR, kernel_avx512},
#endif
};

/* The largest panel widths of any path, for the packing buffers. */
#define MM_MAX_MR 8
#define MM_MAX_NR 32

const char *nm_mm_path_name(nm_mm_path p) {
    return p < NM_MM_PATHS && paths[p].name ? paths[p].name : NULL;
}

bool nm_mm_path_supported(nm_mm_path p) {
    if (p >= NM_MM_PATHS || !paths[p].kernel)
        return false;
#ifdef MM_X86
    __builtin_cpu_init();
    if (p == NM_MM_AVX2_FMA)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (p == NM_MM_AVX512)
        return __builtin_cpu_supports("avx512f");
#endif
    return p == NM_MM_PORTABLE;
}

nm_mm_path nm_mm_path_host(void) {
    for (nm_mm_path p = NM_MM_PATHS; p-- > 0;)
        if (nm_mm_path_supported(p))
            return p;
    return NM_MM_PORTABLE;
}

/* NM_MM_PATHS until chosen: the host's best path, or one set for a test. */
static _Atomic int selected = NM_MM_PATHS;

nm_mm_path nm_mm_path_current(void) {
    int p = atomic_load_explicit(&selected, memory_order_relaxed);
    if (p == NM_MM_PATHS) {
        p = (int)nm_mm_path_host();
        atomic_store_explicit(&selected, p, memory_order_relaxed);
    }
    return (nm_mm_path)p;
}

bool nm_mm_path_select(nm_mm_path p) {
    if (!nm_mm_path_supported(p))
        return false;
    atomic_store_explicit(&selected, (int)p, memory_order_relaxed);
    return true;
}

bool nm_mm_work_init(nm_mm_work *w) {
    /* Panels are padded to whole widths; 64-byte aligned rows of B. */
    size_t a = sizeof(float) * NEURON_MM_MAX_K * (NEURON_MM_MAX_M + MM_MAX_MR);
    size_t b = sizeof(float) * NEURON_MM_MAX_K * (NEURON_MM_MAX_N + MM_MAX_NR);
    w->a = aligned_alloc(64, a);
    w->b = aligned_alloc(64, b);
    w->row = aligned_alloc(64, sizeof(float) * NEURON_MM_MAX_N);
    return w->a && w->b && w->row;
}

void nm_mm_work_free(nm_mm_work *w) {
    free(w->a);
    free(w->b);
    free(w->row);
    *w = (nm_mm_work){0};
}

/*
 * Partitions are far apart in the host's memory, so the hardware's
 * prefetchers do not run ahead from one to the next: ask for row @k early.
 */
#define PACK_PREFETCH_ROWS 4

static inline void prefetch_row(const nm_tap *t, uint32_t k, uint32_t K) {
    if (k >= K)
        return;
    const uint8_t *p = t->base + (size_t)k * t->pitch;
    for (uint32_t off = 0; off < t->extent; off += 64)
        __builtin_prefetch(p + off);
}

/* Row @k of @t as fp32: in place when it is contiguous fp32, else in @row. */
static const float *operand_row(const nm_tap *t, uint32_t k, float *restrict row) {
    const float *in_place = nm_tap_row_f32(t, k);
    if (in_place)
        return in_place;
    nm_tap_load(t, k, row);
    return row;
}

/*
 * Pack the K partitions of @t (W elements each, converted to fp32) into
 * panels of width @pw: element (k, w) at pack[((w / pw) * K + k) * pw +
 * w % pw], the last panel zero-padded. Inlined per width, so that the
 * copies of whole panel rows are a few vector moves.
 */
static inline __attribute__((always_inline)) void pack_panels_w(const nm_tap *t,
                                                                float *restrict pack, uint32_t K,
                                                                uint32_t W, const uint32_t pw,
                                                                float *restrict row) {
    const uint32_t full = W / pw * pw;
    for (uint32_t k = 0; k < K; k++) {
        prefetch_row(t, k + PACK_PREFETCH_ROWS, K);
        const float *restrict src = operand_row(t, k, row);
        float *restrict dst = pack + (size_t)k * pw;
        for (uint32_t w = 0; w < full; w += pw, dst += (size_t)K * pw)
            memcpy(dst, src + w, sizeof(float) * pw);
        if (full < W) {
            memcpy(dst, src + full, sizeof(float) * (W - full));
            memset(dst + (W - full), 0, sizeof(float) * (pw - (W - full)));
        }
    }
}

static void pack_panels(const nm_tap *t, float *restrict pack, uint32_t K, uint32_t W, uint32_t pw,
                        float *restrict row) {
    switch (pw) {
    case PORTABLE_MR:
        pack_panels_w(t, pack, K, W, PORTABLE_MR, row);
        break;
    case PORTABLE_NR:
        pack_panels_w(t, pack, K, W, PORTABLE_NR, row);
        break;
#ifdef MM_X86
    case AVX2_NR:
        pack_panels_w(t, pack, K, W, AVX2_NR, row);
        break;
    case AVX512_MR:
        pack_panels_w(t, pack, K, W, AVX512_MR, row);
        break;
    case AVX512_NR:
        pack_panels_w(t, pack, K, W, AVX512_NR, row);
        break;
#endif
    default:
        pack_panels_w(t, pack, K, W, pw, row);
        break;
    }
}

/*
 * Columns [@j0, @j0 + @n) of the K rows of contiguous @t as one panel of
 * width @pw at @pack, converted and zero-padded. Inlined per width: a
 * whole fp32 or bf16 panel row is a few vector moves.
 */
static inline __attribute__((always_inline)) void pack_panel(const nm_tap *t, float *restrict pack,
                                                             uint32_t K, uint32_t j0, uint32_t n,
                                                             const uint32_t pw) {
    const uint8_t *src = t->base + (size_t)j0 * t->esize;
    for (uint32_t k = 0; k < K; k++, src += t->pitch, pack += pw) {
        if (n == pw && t->dtype == NEURON_DT_FP32) {
            memcpy(pack, src, sizeof(float) * pw);
            continue;
        }
        if (n == pw && t->dtype == NEURON_DT_BF16) {
            for (uint32_t j = 0; j < pw; j++) {
                uint16_t h;
                memcpy(&h, src + 2 * j, 2);
                uint32_t u = (uint32_t)nm_le16(h) << 16;
                memcpy(&pack[j], &u, 4);
            }
            continue;
        }
        nm_load_f32(pack, src, t->dtype, n, 1);
        if (n < pw)
            memset(pack + n, 0, sizeof(float) * (pw - n));
    }
}

/*
 * Columns [@j0, @j0 + @n) of rows [@k0, @k1) of contiguous @t: into the
 * cache, early. Every row has the same offset within its cache lines (the
 * pitch is whole lines), so the lines to fetch are found once; a line that
 * also holds column @j0 - 1 came in with the columns before and is skipped.
 */
static inline void prefetch_cols(const nm_tap *t, uint32_t k0, uint32_t k1, uint32_t j0,
                                 uint32_t n) {
    const uint8_t *row = t->base + (size_t)k0 * t->pitch;
    const uintptr_t base = (uintptr_t)row, end = base + (size_t)(j0 + n) * t->esize;
    uintptr_t first = base + (size_t)j0 * t->esize;
    first = j0 ? ((first - 1) | 63u) + 1 : first & ~(uintptr_t)63u;
    if (first >= end)
        return;
    /* From the line's start, which for j0 = 0 may lie before the row's. */
    const intptr_t from = (intptr_t)(first - base), to = (intptr_t)(end - base);
    for (uint32_t k = k0; k < k1; k++, row += t->pitch)
        for (intptr_t off = from; off < to; off += 64)
            __builtin_prefetch(row + off, 0, 2);
}

/*
 * The tiles of C, for one path's MR and NR (constants once inlined). B's
 * panels are the outer loop: a panel of contiguous B is packed into one
 * L1-sized buffer while the next one is fetched, a part per tile of the
 * column. A contiguous A is packed panel by panel in the first column,
 * each panel's rows fetched while the tile before it runs; the columns
 * after it reuse the packed panels. Operands with gaps in their rows are
 * converted and packed whole up front.
 */
static inline __attribute__((always_inline)) void mm_tiles(const mm_path_desc *p, nm_mm_work *w,
                                                           float *c, size_t ldc, const nm_tap *a,
                                                           const nm_tap *b, uint32_t M, uint32_t N,
                                                           uint32_t K, bool accumulate,
                                                           const uint32_t mr, const uint32_t nr) {
    const uint32_t tiles = (M + mr - 1) / mr;
    const bool a_lazy = nm_tap_contiguous(a), b_by_panel = nm_tap_contiguous(b);
    if (!a_lazy)
        pack_panels(a, w->a, K, M, mr, w->row);
    if (!b_by_panel)
        pack_panels(b, w->b, K, N, nr, w->row);

    float edge[MM_MAX_MR * MM_MAX_NR];
    for (uint32_t j0 = 0; j0 < N; j0 += nr) {
        const uint32_t nb = N - j0 < nr ? N - j0 : nr;
        const float *bp = w->b;
        if (b_by_panel)
            pack_panel(b, w->b, K, j0, nb, nr);
        else
            bp += (size_t)(j0 / nr) * K * nr;
        for (uint32_t i0 = 0, i = 0; i0 < M; i0 += mr, i++) {
            float *ap = w->a + (size_t)i * K * mr;
            const uint32_t mb = M - i0 < mr ? M - i0 : mr;
            float *ct = c + (size_t)i0 * ldc + j0;
            if (a_lazy && j0 == 0) {
                pack_panel(a, ap, K, i0, mb, mr);
                if (i0 + mr < M)
                    prefetch_cols(a, 0, K, i0 + mr, M - (i0 + mr) < mr ? M - (i0 + mr) : mr);
            }
            if (b_by_panel && j0 + nr < N) {
                const uint32_t nn = N - (j0 + nr) < nr ? N - (j0 + nr) : nr;
                prefetch_cols(b, K * i / tiles, K * (i + 1) / tiles, j0 + nr, nn);
            }
            /* The next tile of C (down this column of tiles, or the next column). */
            const float *cn = i0 + mr < M ? ct + (size_t)mr * ldc : c + j0 + nr;
            if (accumulate && (i0 + mr < M || j0 + nr < N))
                for (uint32_t r = 0; r < mr; r++)
                    for (uint32_t x = 0; x < nr; x += 16)
                        __builtin_prefetch(cn + r * ldc + x, 1, 2);
            if (mb == mr && nb == nr) {
                p->kernel(ap, bp, ct, ldc, K, accumulate);
                continue;
            }
            /* A last panel pair_nr wide, two whole tiles at once (A is packed by now). */
            if (nb == p->pair_nr && M - i0 >= 2 * mr && !(a_lazy && j0 == 0)) {
                p->pair(ap, bp, ct, ldc, K, accumulate);
                i0 += mr, i++;
                continue;
            }
            /* A partial tile goes through a full one on the stack. */
            if (accumulate) {
                memset(edge, 0, sizeof(edge));
                for (uint32_t r = 0; r < mb; r++)
                    memcpy(edge + r * nr, ct + r * ldc, sizeof(float) * nb);
            }
            p->kernel(ap, bp, edge, nr, K, accumulate);
            for (uint32_t r = 0; r < mb; r++)
                memcpy(ct + r * ldc, edge + r * nr, sizeof(float) * nb);
        }
    }
}

/*
 * One runner per path, built for its instruction set so that the packing
 * copies and conversions use the same vector width as the kernel (without
 * FMA contraction: packing does no arithmetic).
 */
#define MM_RUNNER(fn, isa, MR, NR)                                                                 \
    isa static void fn(nm_mm_work *w, float *c, size_t ldc, const nm_tap *a, const nm_tap *b,      \
                       uint32_t M, uint32_t N, uint32_t K, bool accumulate,                        \
                       const mm_path_desc *p) {                                                    \
        mm_tiles(p, w, c, ldc, a, b, M, N, K, accumulate, MR, NR);                                 \
    }

MM_RUNNER(run_portable, , PORTABLE_MR, PORTABLE_NR)
#ifdef MM_X86
MM_RUNNER(run_avx2, __attribute__((target("avx2,fma"))), AVX2_MR, AVX2_NR)
MM_RUNNER(run_avx512, __attribute__((target("avx512f"))), AVX512_MR, AVX512_NR)
#endif

uint32_t nm_mm_panel_width(void) {
    return paths[nm_mm_path_current()].nr;
}

void nm_mm_run(nm_mm_work *w, float *c, size_t ldc, const nm_tap *a, const nm_tap *b, uint32_t M,
               uint32_t N, uint32_t K, bool accumulate) {
    const nm_mm_path path = nm_mm_path_current();
    const mm_path_desc *p = &paths[path];
    switch (path) {
#ifdef MM_X86
    case NM_MM_AVX512:
        run_avx512(w, c, ldc, a, b, M, N, K, accumulate, p);
        break;
    case NM_MM_AVX2_FMA:
        run_avx2(w, c, ldc, a, b, M, N, K, accumulate, p);
        break;
#endif
    default:
        run_portable(w, c, ldc, a, b, M, N, K, accumulate, p);
        break;
    }
}
