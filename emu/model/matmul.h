/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The matmul kernels behind MATMUL (matmul.c): one register-blocked
 * kernel per instruction-set path, chosen for the host at first use.
 */
#ifndef NEURON_MODEL_MATMUL_H
#define NEURON_MODEL_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The paths, in order of preference. The FMA paths give the same bits
 * (one rounding per multiply-add); the portable one rounds twice.
 */
typedef enum nm_mm_path { NM_MM_PORTABLE, NM_MM_AVX2_FMA, NM_MM_AVX512, NM_MM_PATHS } nm_mm_path;

/* "portable", "avx2-fma", "avx512"; NULL for a path this build lacks. */
const char *nm_mm_path_name(nm_mm_path p);
/* Built in and supported by the host's CPU. */
bool nm_mm_path_supported(nm_mm_path p);
/* The best supported path: what the model uses unless told otherwise. */
nm_mm_path nm_mm_path_host(void);
/* The path in use. */
nm_mm_path nm_mm_path_current(void);
/* Use @p from now on (tests and benchmarks); false if unsupported. */
bool nm_mm_path_select(nm_mm_path p);

/* Packing buffers of one core. */
typedef struct nm_mm_work {
    float *a;   /* panels of A, MR wide */
    float *b;   /* panels of B, NR wide */
    float *row; /* one converted operand row */
} nm_mm_work;

bool nm_mm_work_init(nm_mm_work *w);
void nm_mm_work_free(nm_mm_work *w);

#endif /* NEURON_MODEL_MATMUL_H */
