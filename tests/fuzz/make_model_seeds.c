// SPDX-License-Identifier: MIT
/*
 * Writes the model fuzzer's seed corpus (input format: fuzz_model.c):
 * programs made with the model tests' program builder that run to the end
 * on the fuzzer's harness: a matmul + activation through device memory, the
 * same storing through a host SG binding, nested loops with notifies, and
 * engine streams handing off through semaphores.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "progbuild.h"

/* The fuzzer's layout (fuzz_model.c). */
#define HOST_BASE 0x200000000ull
#define SG_AREA_BUS (HOST_BASE + 4096)
#define HOST_DATA_BUS (SG_AREA_BUS + 4096)
#define DATA_DEV (128u << 10)

struct seed {
    struct neuron_binding bind[8];
    uint32_t nbind;
    struct neuron_sg_entry sg[16];
    uint32_t nsg;
};

/* Slot number the next binding gets (slot 0 is the program). */
static uint32_t bind(struct seed *s, uint64_t addr, uint64_t size, uint32_t flags,
                     uint32_t sg_count) {
    s->bind[s->nbind] = (struct neuron_binding){addr, size, flags, sg_count, 0};
    return ++s->nbind;
}

/* A host binding of @size bytes in @pieces equal pieces of the data area. */
static uint32_t bind_host(struct seed *s, uint64_t size, uint32_t pieces, uint32_t flags) {
    uint64_t sg_addr = SG_AREA_BUS + s->nsg * sizeof(s->sg[0]);
    uint64_t piece = size / pieces;

    for (uint32_t i = 0; i < pieces; i++)
        s->sg[s->nsg++] = (struct neuron_sg_entry){HOST_DATA_BUS + i * 2 * piece,
                                                   i + 1 < pieces ? piece : size - i * piece};
    return bind(s, sg_addr, size, flags | NEURON_BIND_HOST_SG, pieces);
}

static void save(const char *dir, const char *name, const struct seed *s, const pb_prog *p) {
    char path[4096];
    size_t size;
    uint8_t *img = pb_image(p, &size);
    uint16_t sg_bytes = (uint16_t)(s->nsg * sizeof(s->sg[0]));
    uint8_t head[3] = {(uint8_t)s->nbind, (uint8_t)sg_bytes, (uint8_t)(sg_bytes >> 8)};
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(head, 1, sizeof(head), f) != sizeof(head) ||
        fwrite(s->bind, sizeof(s->bind[0]), s->nbind, f) != s->nbind ||
        fwrite(s->sg, 1, sg_bytes, f) != sg_bytes || fwrite(img, 1, size, f) != size || fclose(f)) {
        perror(path);
        exit(1);
    }
    free(img);
}

/*
 * y = gelu(w^T x): x [K=64, N=16] and w [K, M=32] in, y [M, N] out (SBUF
 * offsets within the fuzzer's 2 KiB per partition).
 */
static void linear(pb_prog *p, uint32_t in_x, uint32_t in_w, uint32_t out_y) {
    const uint8_t f = NEURON_DT_FP32;

    pb_dma(p, true, pb_sbuf(f, 0, 64, 0, 16), in_x, 0, 16 * 4, 4, 0);
    pb_dma(p, true, pb_sbuf(f, 0, 64, 256, 32), in_w, 0, 32 * 4, 4, 0);
    pb_signal(p, NEURON_ENGINE_SYNC, 0, 1);
    pb_wait(p, NEURON_ENGINE_TENSOR, 0, 1, false);
    pb_matmul(p, pb_psum(f, 0, 32, 0, 16), pb_sbuf(f, 0, 64, 256, 32), pb_sbuf(f, 0, 64, 0, 16),
              false);
    pb_signal(p, NEURON_ENGINE_TENSOR, 1, 1);
    pb_wait(p, NEURON_ENGINE_SCALAR, 1, 1, true);
    pb_activate(p, NEURON_ACT_GELU, pb_sbuf(f, 0, 32, 512, 16), pb_psum(f, 0, 32, 0, 16),
                (struct neuron_tap){0}, 1.0f, 0.0f);
    pb_signal(p, NEURON_ENGINE_SCALAR, 2, 1);
    pb_wait(p, NEURON_ENGINE_SYNC, 2, 1, true);
    pb_dma(p, false, pb_sbuf(f, 0, 32, 512, 16), out_y, 0, 16 * 4, 4, 0);
    pb_notify(p, NEURON_ENGINE_SYNC, 7);
    pb_end_all(p);
}

int main(int argc, char **argv) {
    struct seed s;
    pb_prog p;

    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    if (mkdir(argv[1], 0755) && errno != EEXIST) {
        perror(argv[1]);
        return 1;
    }

    memset(&s, 0, sizeof(s));
    pb_init(&p);
    linear(&p, bind(&s, DATA_DEV, 64 * 16 * 4, NEURON_BIND_READ, 0),
           bind(&s, DATA_DEV + 8192, 64 * 32 * 4, NEURON_BIND_READ, 0),
           bind(&s, DATA_DEV + 32768, 32 * 16 * 4, NEURON_BIND_WRITE, 0));
    save(argv[1], "linear-devmem", &s, &p);
    pb_free(&p);

    memset(&s, 0, sizeof(s));
    pb_init(&p);
    {
        uint32_t x = bind_host(&s, 64 * 16 * 4, 3, NEURON_BIND_READ);
        uint32_t w = bind(&s, DATA_DEV, 64 * 32 * 4, NEURON_BIND_READ, 0);

        linear(&p, x, w, bind_host(&s, 32 * 16 * 4, 2, NEURON_BIND_WRITE));
    }
    save(argv[1], "linear-host-sg", &s, &p);
    pb_free(&p);

    memset(&s, 0, sizeof(s));
    pb_init(&p);
    pb_nested_loops(&p, NEURON_ENGINE_SYNC);
    pb_end(&p, NEURON_ENGINE_SYNC);
    save(argv[1], "loops", &s, &p);
    pb_free(&p);

    memset(&s, 0, sizeof(s));
    pb_init(&p);
    {
        uint32_t buf = bind(&s, DATA_DEV, 8 * 64 * 4, NEURON_BIND_READ | NEURON_BIND_WRITE, 0);
        const uint8_t f = NEURON_DT_FP32;

        pb_iota(&p, pb_sbuf(NEURON_DT_INT32, 0, 8, 0, 64), 0, 64, 1);
        pb_signal(&p, NEURON_ENGINE_VECTOR, 0, 1);
        pb_wait(&p, NEURON_ENGINE_SCALAR, 0, 1, true);
        pb_ts(&p, NEURON_ENGINE_SCALAR, NEURON_ALU_MUL, NEURON_ALU_ADD, 0,
              pb_sbuf(f, 0, 8, 512, 64), pb_sbuf(f, 0, 8, 512, 64), (struct neuron_tap){0}, 2.0f,
              1.0f);
        pb_signal(&p, NEURON_ENGINE_SCALAR, 1, 1);
        pb_wait(&p, NEURON_ENGINE_SYNC, 1, 1, true);
        pb_dma(&p, false, pb_sbuf(f, 0, 8, 512, 64), buf, 0, 64 * 4, 4, 0);
        pb_dma(&p, true, pb_sbuf(f, 0, 8, 1024, 64), buf, 0, 64 * 4, 4, 0);
        pb_end_all(&p);
    }
    save(argv[1], "semaphores", &s, &p);
    pb_free(&p);
    return 0;
}
