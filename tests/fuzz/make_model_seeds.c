// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpora of the model's two fuzzers, with programs made by
 * the model tests' program builder.
 *
 * JOBS_DIR (input format: fuzz_model.c): programs that run to the end on
 * that harness: a matmul + activation through device memory, the same
 * storing through a host SG binding, nested loops with notifies, and engine
 * streams handing off through semaphores.
 *
 * REGISTERS_DIR (input format: fuzz_device.c): what a driver does to copy
 * through a DMA engine and to run a job on a core queue, and a job whose
 * notifies overrun a two-entry completion ring until the driver's timeout
 * resets the queue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "neuron_regs.h"
#include "progbuild.h"

/* The fuzzers' layout (fuzz_harness.h, fuzz_model.c). */
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

static void write_file(const char *dir, const char *name, const void *head, size_t head_size,
                       const void *body, size_t body_size) {
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(head, 1, head_size, f) != head_size ||
        fwrite(body, 1, body_size, f) != body_size || fclose(f)) {
        perror(path);
        exit(1);
    }
}

static void save(const char *dir, const char *name, const struct seed *s, const pb_prog *p) {
    size_t size, sg_bytes = s->nsg * sizeof(s->sg[0]);
    uint8_t *img = pb_image(p, &size);
    /* nbind, sg_bytes, the bindings, the SG area, then the image. */
    size_t head_size = 3 + s->nbind * sizeof(s->bind[0]) + sg_bytes;
    uint8_t *head = malloc(head_size);

    if (!head)
        abort();
    head[0] = (uint8_t)s->nbind;
    head[1] = (uint8_t)sg_bytes;
    head[2] = (uint8_t)(sg_bytes >> 8);
    memcpy(head + 3, s->bind, s->nbind * sizeof(s->bind[0]));
    memcpy(head + 3 + s->nbind * sizeof(s->bind[0]), s->sg, sg_bytes);
    write_file(dir, name, head, head_size, img, size);
    free(head);
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

static void write_job_seeds(const char *dir) {
    struct seed s;
    pb_prog p;

    memset(&s, 0, sizeof(s));
    pb_init(&p);
    linear(&p, bind(&s, DATA_DEV, 64 * 16 * 4, NEURON_BIND_READ, 0),
           bind(&s, DATA_DEV + 8192, 64 * 32 * 4, NEURON_BIND_READ, 0),
           bind(&s, DATA_DEV + 32768, 32 * 16 * 4, NEURON_BIND_WRITE, 0));
    save(dir, "linear-devmem", &s, &p);
    pb_free(&p);

    memset(&s, 0, sizeof(s));
    pb_init(&p);
    {
        uint32_t x = bind_host(&s, 64 * 16 * 4, 3, NEURON_BIND_READ);
        uint32_t w = bind(&s, DATA_DEV, 64 * 32 * 4, NEURON_BIND_READ, 0);

        linear(&p, x, w, bind_host(&s, 32 * 16 * 4, 2, NEURON_BIND_WRITE));
    }
    save(dir, "linear-host-sg", &s, &p);
    pb_free(&p);

    memset(&s, 0, sizeof(s));
    pb_init(&p);
    pb_nested_loops(&p, NEURON_ENGINE_SYNC);
    pb_end(&p, NEURON_ENGINE_SYNC);
    save(dir, "loops", &s, &p);
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
    save(dir, "semaphores", &s, &p);
    pb_free(&p);
}

/* ---- the register fuzzer's seeds ---- */

/* fuzz_device.c's commands. */
enum { CMD_WRITE, CMD_READ, CMD_HOST, CMD_DEV, CMD_RUN, CMD_RESET };

struct stream {
    uint8_t b[16384];
    size_t n;
};

static void put(struct stream *s, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++)
        s->b[s->n++] = (uint8_t)(v >> (8 * i));
}

static void w32(struct stream *s, uint32_t off, uint32_t v) {
    put(s, CMD_WRITE, 1);
    put(s, off, 2);
    put(s, v, 4);
}

static void w64(struct stream *s, uint32_t off, uint64_t v) {
    w32(s, off, (uint32_t)v);
    w32(s, off + 4, (uint32_t)(v >> 32));
}

/* @len bytes at @off of host memory (cmd CMD_HOST) or device memory (CMD_DEV). */
static void mem(struct stream *s, int cmd, uint32_t off, const void *p, size_t len) {
    const uint8_t *src = p;
    for (size_t done = 0; done < len;) {
        size_t n = len - done < 252 ? len - done : 252; /* multiple of 4 for CMD_DEV */
        uint32_t at = off + (uint32_t)done;
        put(s, (uint64_t)cmd, 1);
        put(s, cmd == CMD_DEV ? at / 4 : at, 2);
        put(s, n, 1);
        memcpy(s->b + s->n, src + done, n);
        s->n += n;
        done += n;
    }
}

static void save_stream(const char *dir, const char *name, struct stream *s) {
    put(s, CMD_READ, 1);
    put(s, NEURON_REG_IRQ_STATUS, 2);
    write_file(dir, name, s->b, s->n, NULL, 0);
}

static void dma_copies(const char *dir) {
    struct stream s = {.n = 0};
    const uint32_t ring = 0x1000, data = 0x8000, base = NEURON_DMA_BASE(0);
    struct neuron_dma_desc d[2] = {
        {HOST_BASE + data, 0x100, 4096, NEURON_DMA_F_SRC_HOST | NEURON_DMA_F_IRQ, 1, 0},
        {0x100, HOST_BASE + data + 4096, 4096, NEURON_DMA_F_DST_HOST | NEURON_DMA_F_IRQ, 2, 0},
    };
    mem(&s, CMD_HOST, ring, d, sizeof(d));
    w64(&s, base + NEURON_DMA_RING_LO, HOST_BASE + ring);
    w32(&s, base + NEURON_DMA_RING_ENTRIES, 4);
    w32(&s, base + NEURON_DMA_CTRL, NEURON_DMA_CTRL_ENABLE);
    w32(&s, base + NEURON_DMA_TAIL, 2);
    put(&s, CMD_RUN, 1);
    save_stream(dir, "dma-copies", &s);
}

/* A job on core 0 running @p from device memory; @cpl_entries in its completion ring. */
static void job(const char *dir, const char *name, const pb_prog *p, uint32_t cpl_entries) {
    struct stream s = {.n = 0};
    const uint32_t ring = 0x2000, cpl = 0x3000, table = 0x4000, base = NEURON_QUEUE_BASE(0);
    size_t size;
    uint8_t *img = pb_image(p, &size);
    struct neuron_binding b = {0, size, NEURON_BIND_READ | NEURON_BIND_EXEC, 0, 0};
    struct neuron_job_desc jd = {
        HOST_BASE + table, 1, NEURON_JOB_F_IRQ, 0, (uint32_t)size, 0, 7, 0, 0, {0, 0}};

    mem(&s, CMD_DEV, 0, img, size);
    mem(&s, CMD_HOST, table, &b, sizeof(b));
    mem(&s, CMD_HOST, ring, &jd, sizeof(jd));
    w64(&s, base + NEURON_Q_RING_LO, HOST_BASE + ring);
    w32(&s, base + NEURON_Q_RING_ENTRIES, 4);
    w64(&s, base + NEURON_Q_CPL_LO, HOST_BASE + cpl);
    w32(&s, base + NEURON_Q_CPL_ENTRIES, cpl_entries);
    w32(&s, base + NEURON_Q_CTRL, NEURON_Q_CTRL_ENABLE);
    w32(&s, base + NEURON_Q_TAIL, 1);
    put(&s, CMD_RUN, 1);
    save_stream(dir, name, &s);
    free(img);
}

static void write_register_seeds(const char *dir) {
    pb_prog p;

    dma_copies(dir);

    pb_init(&p);
    pb_nested_loops(&p, NEURON_ENGINE_SYNC);
    pb_end(&p, NEURON_ENGINE_SYNC);
    job(dir, "job-loops", &p, 16);
    pb_free(&p);

    /* 9 notifies into 2 completion slots nobody consumes: the job blocks. */
    pb_init(&p);
    pb_nested_loops(&p, NEURON_ENGINE_SYNC);
    pb_end(&p, NEURON_ENGINE_SYNC);
    job(dir, "job-completion-ring-full", &p, 2);
    pb_free(&p);
}

static void make_dir(const char *dir) {
    if (mkdir(dir, 0755) && errno != EEXIST) {
        perror(dir);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s JOBS_DIR REGISTERS_DIR\n", argv[0]);
        return 2;
    }
    make_dir(argv[1]);
    make_dir(argv[2]);
    write_job_seeds(argv[1]);
    write_register_seeds(argv[2]);
    return 0;
}
