// SPDX-License-Identifier: MIT
/*
 * An ioctl fuzzer for neuron.ko: random sequences of BO_CREATE, BO_INFO,
 * mmap/munmap and accesses, COPY, SUBMIT (structurally valid programs,
 * mutated ones and garbage), DRM syncobj create/wait/destroy, WAIT, GEM_CLOSE,
 * close, dup, fork and kill, in several processes of several threads each.
 *
 *   neuron-fuzz-ioctl [--seed N] [--seconds S] [--procs P] [--threads T]
 *                     [--ops N]
 *
 * Every thread draws its operations from its own generator, seeded from
 * the run's seed and its process and thread number, so a seed replays the
 * same operations per thread (their interleaving is up to the scheduler).
 * The seed is printed first; a failing run prints how to replay it.
 *
 * It fails when an ioctl returns an errno its UAPI documentation does not
 * list, when a process dies of anything but the fuzzer's own SIGKILL,
 * or when, after every process has exited, device memory, pinned host
 * memory or (with kmemleak) kernel memory is not back at its baseline.
 * Kernel splats fail the run through the harness's verdict.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xf86drm.h>

#include "drm/neuron_accel.h"
#include "neuron_isa.h"
#include "testdev.h"

#define MAX_FDS 4
#define MAX_BOS 32
#define MAX_SYNCS 16
#define MAX_MAPS 16
#define MAX_CHILDREN 8

enum op {
    OP_OPEN,
    OP_CLOSE,
    OP_DUP,
    OP_BO_CREATE,
    OP_BO_INFO,
    OP_MMAP,
    OP_MUNMAP,
    OP_TOUCH,
    OP_COPY,
    OP_SUBMIT,
    OP_SYNC_CREATE,
    OP_SYNC_WAIT,
    OP_WAIT,
    OP_SYNC_DESTROY,
    OP_GEM_CLOSE,
    OP_FORK,
    OP_KILL,
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
    "open",   "close",        "dup",       "bo_create", "bo_info",     "mmap",
    "munmap", "touch",        "copy",      "submit",    "sync_create", "sync_wait",
    "wait",   "sync_destroy", "gem_close", "fork",      "kill",
};

/* Relative frequencies. */
static const unsigned op_weight[OP_COUNT] = {
    [OP_OPEN] = 2,    [OP_CLOSE] = 1,        [OP_DUP] = 1,         [OP_BO_CREATE] = 12,
    [OP_BO_INFO] = 4, [OP_MMAP] = 5,         [OP_MUNMAP] = 4,      [OP_TOUCH] = 5,
    [OP_COPY] = 16,   [OP_SUBMIT] = 14,      [OP_SYNC_CREATE] = 4, [OP_SYNC_WAIT] = 6,
    [OP_WAIT] = 6,    [OP_SYNC_DESTROY] = 2, [OP_GEM_CLOSE] = 6,   [OP_FORK] = 1,
    [OP_KILL] = 1,
};

/* Counters shared by every process of the run (an anonymous shared mapping). */
struct stats {
    atomic_ulong calls[OP_COUNT];
    atomic_ulong ok[OP_COUNT];
    atomic_ulong unexpected;
    atomic_ulong crashes;
    atomic_ulong forks;
    atomic_ulong kills;
};

static struct stats *stats;
static struct neuron_test_dev tdev;
static uint64_t run_seed;
static double deadline;
static unsigned long max_ops;

struct fdslot {
    int fd;
    int file; /* files (open() calls) share handles; dup()ed fds share a file */
};

struct bo {
    int file;
    uint32_t handle;
    uint64_t size;
    uint32_t region;
};

struct map {
    uint8_t *p;
    size_t len;
};

struct sync {
    int file;
    uint32_t handle;
};

/* Per thread: its generator and the objects it created. */
struct fuzzer {
    uint64_t rng;
    int proc, thread;
    unsigned long n;
    struct fdslot fds[MAX_FDS];
    int nfds, next_file;
    struct bo bos[MAX_BOS];
    int nbos;
    struct sync syncs[MAX_SYNCS];
    int nsyncs;
    struct map maps[MAX_MAPS];
    int nmaps;
    pid_t children[MAX_CHILDREN];
    int nchildren;
};

static double now_s(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t rnd(struct fuzzer *f) {
    f->rng ^= f->rng << 13;
    f->rng ^= f->rng >> 7;
    f->rng ^= f->rng << 17;
    return f->rng;
}

static uint64_t below(struct fuzzer *f, uint64_t n) {
    return n ? rnd(f) % n : 0;
}

static int chance(struct fuzzer *f, unsigned pct) {
    return below(f, 100) < pct;
}

/* An errno outside the documented ones: counted, reported, fails the run. */
static void check(struct fuzzer *f, enum op op, int ret, const int *allowed, size_t n) {
    size_t i;

    atomic_fetch_add(&stats->calls[op], 1);
    if (!ret) {
        atomic_fetch_add(&stats->ok[op], 1);
        return;
    }
    for (i = 0; i < n; i++)
        if (-ret == allowed[i])
            return;
    atomic_fetch_add(&stats->unexpected, 1);
    fprintf(stderr, "fuzz-ioctl: process %d thread %d op %lu (%s): unexpected %s\n", f->proc,
            f->thread, f->n, op_names[op], strerror(-ret));
}

#define CHECK(f, op, ret, ...)                                                                     \
    do {                                                                                           \
        static const int _allowed[] = {__VA_ARGS__};                                               \
        check(f, op, ret, _allowed, sizeof(_allowed) / sizeof(_allowed[0]));                       \
    } while (0)

/* A random fd of the thread, optionally of file @file (-1: any). */
static struct fdslot *pick_fd(struct fuzzer *f, int file) {
    int i, start;

    if (!f->nfds)
        return NULL;
    start = (int)below(f, f->nfds);
    for (i = 0; i < f->nfds; i++) {
        struct fdslot *s = &f->fds[(start + i) % f->nfds];

        if (file < 0 || s->file == file)
            return s;
    }
    return NULL;
}

/* Mostly a live handle of @file, sometimes a stale or made-up one. */
static uint32_t pick_handle(struct fuzzer *f, int file, struct bo **out) {
    int i, start = (int)below(f, f->nbos ? f->nbos : 1);

    *out = NULL;
    if (!chance(f, 5))
        for (i = 0; i < f->nbos; i++) {
            struct bo *b = &f->bos[(start + i) % f->nbos];

            if (b->file == file) {
                *out = b;
                return b->handle;
            }
        }
    return chance(f, 50) ? 0 : (uint32_t)below(f, 64);
}

static uint32_t pick_sync(struct fuzzer *f, int file) {
    int i;

    if (!chance(f, 5))
        for (i = 0; i < f->nsyncs; i++)
            if (f->syncs[i].file == file)
                return f->syncs[i].handle;
    return (uint32_t)below(f, 64);
}

/* Drops every object of @file: its handles died with its last fd. */
static void forget_file(struct fuzzer *f, int file) {
    int i;

    for (i = 0; i < f->nbos;)
        if (f->bos[i].file == file)
            f->bos[i] = f->bos[--f->nbos];
        else
            i++;
    for (i = 0; i < f->nsyncs;)
        if (f->syncs[i].file == file)
            f->syncs[i] = f->syncs[--f->nsyncs];
        else
            i++;
}

/* An offset and size in a buffer of @size: mostly valid, sometimes not. */
static void pick_range(struct fuzzer *f, uint64_t size, __u64 *off, __u64 *len) {
    switch (below(f, 10)) {
    case 0:
        *off = rnd(f);
        *len = rnd(f);
        return;
    case 1:
        *off = size ? below(f, size) : 0;
        *len = size + 1;
        return;
    default:
        *off = size ? below(f, size) : 0;
        *len = 1 + below(f, size - *off > 1 ? size - *off : 1);
        if (chance(f, 60) && *len > 65536)
            *len = 1 + below(f, 65536);
        return;
    }
}

static uint64_t pick_size(struct fuzzer *f) {
    switch (below(f, 20)) {
    case 0:
        return 0;
    case 1:
        return DRM_NEURON_BO_MAX_SIZE + below(f, 2);
    case 2:
        return rnd(f);
    case 3:
        return (1 + below(f, 16)) << 20;
    default:
        return 1 + below(f, chance(f, 70) ? 16384 : 1 << 20);
    }
}

static void op_open(struct fuzzer *f) {
    int fd;

    if (f->nfds == MAX_FDS)
        return;
    fd = open(tdev.path, O_RDWR | O_CLOEXEC);
    check(f, OP_OPEN, fd < 0 ? -errno : 0, (const int[]){EMFILE}, 1);
    if (fd >= 0)
        f->fds[f->nfds++] = (struct fdslot){fd, f->next_file++};
}

static void op_close(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    int file, ret;

    if (!s)
        return;
    file = s->file;
    ret = close(s->fd) ? -errno : 0;
    CHECK(f, OP_CLOSE, ret, EBADF);
    *s = f->fds[--f->nfds];
    if (!pick_fd(f, file))
        forget_file(f, file);
}

static void op_dup(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    int fd;

    if (!s || f->nfds == MAX_FDS)
        return;
    fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
    CHECK(f, OP_DUP, fd < 0 ? -errno : 0, EMFILE);
    if (fd >= 0)
        f->fds[f->nfds++] = (struct fdslot){fd, s->file};
}

static void op_bo_create(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    struct drm_neuron_bo_create c = {0};
    int ret;

    if (!s)
        return;
    c.size = pick_size(f);
    c.region = chance(f, 95) ? (uint32_t)below(f, 2) : (uint32_t)rnd(f);
    c.flags = chance(f, 80) ? 0 : chance(f, 70) ? DRM_NEURON_BO_WC : (uint32_t)rnd(f);
    c.pad = chance(f, 97) ? 0 : 1;
    ret = neuron_ioctl(s->fd, DRM_IOCTL_NEURON_BO_CREATE, &c);
    CHECK(f, OP_BO_CREATE, ret, EINVAL, ENOSPC, ENOMEM);
    if (ret)
        return;
    if (f->nbos == MAX_BOS) {
        struct drm_gem_close gc = {.handle = c.handle};

        /*
         * A parent or forked child sharing this file may have closed the
         * handle already: numbers are reused, and its table is stale.
         */
        ret = neuron_ioctl(s->fd, DRM_IOCTL_GEM_CLOSE, &gc);
        CHECK(f, OP_GEM_CLOSE, ret, EINVAL);
        return;
    }
    f->bos[f->nbos++] = (struct bo){s->file, c.handle, (c.size + 4095) & ~4095ull, c.region};
}

static void op_bo_info(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    struct drm_neuron_bo_info i = {0};
    struct bo *b;

    if (!s)
        return;
    i.handle = pick_handle(f, s->file, &b);
    i.pad = chance(f, 97) ? 0 : 1;
    CHECK(f, OP_BO_INFO, neuron_ioctl(s->fd, DRM_IOCTL_NEURON_BO_INFO, &i), ENOENT, EINVAL);
}

static void op_mmap(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    struct drm_neuron_bo_info i = {0};
    struct bo *b;
    __u64 off, len;
    void *p;
    int ret;

    if (!s || f->nmaps == MAX_MAPS)
        return;
    i.handle = pick_handle(f, s->file, &b);
    if (neuron_ioctl(s->fd, DRM_IOCTL_NEURON_BO_INFO, &i))
        i.mmap_offset = rnd(f) & ~4095ull;
    pick_range(f, i.size, &off, &len);
    off &= ~4095ull;
    if (len > 64 << 20)
        len = 4096;
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, chance(f, 90) ? MAP_SHARED : MAP_PRIVATE, s->fd,
             (off_t)(i.mmap_offset + (chance(f, 90) ? off : rnd(f) & ~4095ull)));
    ret = p == MAP_FAILED ? -errno : 0;
    CHECK(f, OP_MMAP, ret, EINVAL, EACCES, ENOMEM, EOVERFLOW);
    if (!ret)
        f->maps[f->nmaps++] = (struct map){p, len};
}

static void op_munmap(struct fuzzer *f) {
    int i;

    if (!f->nmaps)
        return;
    i = (int)below(f, f->nmaps);
    CHECK(f, OP_MUNMAP, munmap(f->maps[i].p, f->maps[i].len) ? -errno : 0, 0);
    f->maps[i] = f->maps[--f->nmaps];
}

/* A mapping stays valid after its handle, fd or buffer is closed. */
static void op_touch(struct fuzzer *f) {
    struct map *m;
    uint64_t i;

    if (!f->nmaps)
        return;
    m = &f->maps[below(f, f->nmaps)];
    for (i = 0; i < 8; i++) {
        uint64_t at = below(f, m->len);

        m->p[at] = (uint8_t)(m->p[at] + 1);
    }
    atomic_fetch_add(&stats->calls[OP_TOUCH], 1);
    atomic_fetch_add(&stats->ok[OP_TOUCH], 1);
}

/* in_syncs of a COPY or SUBMIT: none mostly, sometimes bad pointers. */
static uint64_t pick_in_syncs(struct fuzzer *f, int file, struct drm_neuron_sync *in, uint32_t *n) {
    uint32_t i;

    *n = chance(f, 70) ? 0 : (uint32_t)below(f, 3);
    for (i = 0; i < *n; i++)
        in[i] = (struct drm_neuron_sync){.handle = pick_sync(f, file)};
    if (chance(f, 2)) {
        *n = (uint32_t)below(f, DRM_NEURON_MAX_IN_SYNCS + 2);
        return chance(f, 50) ? 0 : 0x1000;
    }
    return (uintptr_t)in;
}

static void op_copy(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    struct drm_neuron_sync in[3];
    struct drm_neuron_copy c = {0};
    struct bo *src, *dst;
    __u64 len;
    int ret;

    if (!s)
        return;
    c.src_handle = pick_handle(f, s->file, &src);
    c.dst_handle = pick_handle(f, s->file, &dst);
    pick_range(f, src ? src->size : 4096, &c.src_offset, &c.size);
    pick_range(f, dst ? dst->size : 4096, &c.dst_offset, &len);
    if (chance(f, 80) && len < c.size)
        c.size = len;
    c.engine = chance(f, 30) ? DRM_NEURON_ENGINE_ANY : (uint32_t)below(f, chance(f, 95) ? 2 : 8);
    c.flags = chance(f, 98) ? 0 : 1;
    c.in_syncs = pick_in_syncs(f, s->file, in, &c.num_in_syncs);
    c.out_sync.handle = chance(f, 97) ? pick_sync(f, s->file) : 0;
    c.reserved = chance(f, 98) ? 0 : 1;
    ret = neuron_ioctl(s->fd, DRM_IOCTL_NEURON_COPY, &c);
    CHECK(f, OP_COPY, ret, ENOENT, EINVAL, EFAULT, EDQUOT, ENOMEM, EIO);
}

/* A header that points every stream inside the image. */
static void prog_header(struct neuron_prog_header *h, uint32_t image, uint32_t insns) {
    int e;

    memset(h, 0, sizeof(*h));
    h->magic = NEURON_PROG_MAGIC;
    h->version_major = NEURON_ISA_VERSION_MAJOR;
    h->header_size = sizeof(*h);
    h->image_size = image;
    h->insn_limit = 100000;
    for (e = 0; e < NEURON_NUM_ENGINES; e++) {
        h->stream[e].offset = sizeof(*h);
        h->stream[e].count = e == NEURON_ENGINE_INDEX(NEURON_ENGINE_SYNC) ? insns : 0;
    }
}

/* Opcodes that neither wait nor loop: a valid program finishes quickly. */
static const uint8_t quick_ops[] = {
    NEURON_OP_NOP,       NEURON_OP_NOTIFY,        NEURON_OP_SEM_SIGNAL, NEURON_OP_DMA_LOAD,
    NEURON_OP_DMA_STORE, NEURON_OP_TENSOR_SCALAR, NEURON_OP_COPY,       NEURON_OP_MEMSET,
    NEURON_OP_IOTA,      NEURON_OP_ACTIVATE,      NEURON_OP_REDUCE,     NEURON_OP_MATMUL,
};

/*
 * A program image in @buf: a valid header with random instructions from
 * the quick opcodes (random operands: most fault or fail to decode, which is
 * the point), the same with random bytes flipped, or garbage.
 */
static uint32_t build_program(struct fuzzer *f, uint8_t *buf, uint32_t cap) {
    uint32_t n = 1 + (uint32_t)below(f, 7), i, size = sizeof(struct neuron_prog_header);
    struct neuron_insn *insn = (struct neuron_insn *)(buf + size);
    int kind = (int)below(f, 10);

    if (kind == 0) {
        for (i = 0; i < cap; i++)
            buf[i] = (uint8_t)rnd(f);
        return 1 + (uint32_t)below(f, cap);
    }
    size += (n + 1) * sizeof(*insn);
    memset(buf, 0, size);
    for (i = 0; i < n; i++) {
        uint8_t *b = (uint8_t *)&insn[i];
        size_t j;

        for (j = 0; j < sizeof(*insn); j++)
            b[j] = chance(f, 70) ? 0 : (uint8_t)rnd(f);
        insn[i].opcode = quick_ops[below(f, sizeof(quick_ops))];
        insn[i].flags = 0;
    }
    insn[n].opcode = NEURON_OP_END;
    prog_header((struct neuron_prog_header *)buf, size, n + 1);
    if (kind == 1)
        for (i = 0; i < 4; i++)
            buf[below(f, size)] ^= (uint8_t)(1u << below(f, 8));
    return size;
}

static void op_submit(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    struct drm_neuron_binding b[4];
    struct drm_neuron_sync in[3];
    struct drm_neuron_submit sub = {0};
    struct drm_neuron_bo_info info = {0};
    uint8_t image[1024];
    struct bo *prog, *bo;
    uint32_t i, size;
    int ret;

    if (!s)
        return;
    sub.program_handle = pick_handle(f, s->file, &prog);
    size = build_program(f, image, sizeof(image));
    /* Write the image through a mapping of the program buffer. */
    info.handle = sub.program_handle;
    if (prog && prog->size >= size && !neuron_ioctl(s->fd, DRM_IOCTL_NEURON_BO_INFO, &info)) {
        void *p = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, s->fd, (off_t)info.mmap_offset);

        if (p != MAP_FAILED) {
            memcpy(p, image, size);
            munmap(p, 4096);
        }
    }
    sub.program_size = chance(f, 90) ? size : rnd(f) & 0xffffffffffull;
    sub.program_offset = chance(f, 95) ? 0 : below(f, 8192);
    sub.num_bindings = chance(f, 95) ? 1 + (uint32_t)below(f, 4) : (uint32_t)below(f, 70);
    for (i = 0; i < 4; i++) {
        b[i] = (struct drm_neuron_binding){0};
        b[i].handle = pick_handle(f, s->file, &bo);
        pick_range(f, bo ? bo->size : 4096, &b[i].offset, &b[i].size);
        b[i].flags = chance(f, 95) ? 1 + (uint32_t)below(f, 7) : (uint32_t)rnd(f);
        b[i].reserved = chance(f, 98) ? 0 : 1;
    }
    sub.bindings = chance(f, 97) ? (uintptr_t)b : chance(f, 50) ? 0 : 0x1000;
    if (sub.num_bindings > 4 && sub.bindings == (uintptr_t)b)
        sub.num_bindings = 4;
    sub.core = chance(f, 95) ? (uint32_t)below(f, 2) : (uint32_t)rnd(f);
    sub.flags = chance(f, 98) ? 0 : 1;
    sub.in_syncs = pick_in_syncs(f, s->file, in, &sub.num_in_syncs);
    sub.out_sync.handle = chance(f, 97) ? pick_sync(f, s->file) : 0;
    ret = neuron_ioctl(s->fd, DRM_IOCTL_NEURON_SUBMIT, &sub);
    CHECK(f, OP_SUBMIT, ret, ENOENT, EINVAL, EFAULT, EOPNOTSUPP, EDQUOT, ENOMEM, EIO);
}

static void op_sync_create(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    uint32_t h;
    int ret;

    if (!s || f->nsyncs == MAX_SYNCS)
        return;
    ret = drmSyncobjCreate(s->fd, chance(f, 20) ? DRM_SYNCOBJ_CREATE_SIGNALED : 0, &h) ? -errno : 0;
    CHECK(f, OP_SYNC_CREATE, ret, ENOMEM);
    if (!ret)
        f->syncs[f->nsyncs++] = (struct sync){s->file, h};
}

static void op_sync_wait(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    uint32_t h;
    int64_t timeout;
    int ret;

    if (!s)
        return;
    h = pick_sync(f, s->file);
    timeout = (int64_t)((now_s() + below(f, 200) / 1000.0) * 1e9);
    ret = drmSyncobjWait(s->fd, &h, 1, timeout,
                         chance(f, 50) ? DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT : 0, NULL)
              ? -errno
              : 0;
    CHECK(f, OP_SYNC_WAIT, ret, ETIME, EINVAL, ENOENT);
}

/* DRM_IOCTL_NEURON_WAIT: a fence that signalled reports a documented status. */
static void op_wait(struct fuzzer *f) {
    static const int statuses[] = {0, -EFAULT, -EINVAL, -ETIMEDOUT, -ECANCELED, -EIO, -ENODEV};
    struct fdslot *s = pick_fd(f, -1);
    struct drm_neuron_wait w = {0};
    size_t i;
    int ret;

    if (!s)
        return;
    w.sync.handle = pick_sync(f, s->file);
    w.sync.point = chance(f, 5) ? below(f, 4) : 0;
    w.sync.pad = chance(f, 3);
    w.flags = chance(f, 3) ? (uint32_t)rnd(f) : 0;
    w.reserved = chance(f, 3);
    w.timeout_nsec = (int64_t)((now_s() + below(f, 200) / 1000.0) * 1e9);
    ret = neuron_ioctl(s->fd, DRM_IOCTL_NEURON_WAIT, &w);
    CHECK(f, OP_WAIT, ret, ETIME, EINVAL, ENOENT);
    if (ret)
        return;
    for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]) && w.status != statuses[i]; i++)
        ;
    if (i == sizeof(statuses) / sizeof(statuses[0])) {
        atomic_fetch_add(&stats->unexpected, 1);
        fprintf(stderr, "fuzz-ioctl: process %d thread %d op %lu (wait): status %d\n", f->proc,
                f->thread, f->n, w.status);
    }
}

static void op_sync_destroy(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    int i, ret;

    if (!s || !f->nsyncs)
        return;
    i = (int)below(f, f->nsyncs);
    ret = drmSyncobjDestroy(s->fd, f->syncs[i].handle) ? -errno : 0;
    CHECK(f, OP_SYNC_DESTROY, ret, EINVAL, ENOENT);
    if (f->syncs[i].file == s->file)
        f->syncs[i] = f->syncs[--f->nsyncs];
}

static void op_gem_close(struct fuzzer *f) {
    struct fdslot *s = pick_fd(f, -1);
    struct drm_gem_close c = {0};
    struct bo *b;
    int ret;

    if (!s)
        return;
    c.handle = pick_handle(f, s->file, &b);
    ret = neuron_ioctl(s->fd, DRM_IOCTL_GEM_CLOSE, &c);
    CHECK(f, OP_GEM_CLOSE, ret, EINVAL);
    if (!ret && b)
        *b = f->bos[--f->nbos];
}

static void fuzz_loop(struct fuzzer *f, unsigned long ops);

/*
 * A child inherits the fds (the same files, so the same handles) and the
 * mappings, runs a few operations of its own and exits, unless it is
 * killed first.
 */
static void op_fork(struct fuzzer *f) {
    pid_t pid;

    if (f->nchildren == MAX_CHILDREN || f->thread)
        return;
    pid = fork();
    if (pid)
        check(f, OP_FORK, pid < 0 ? -errno : 0, (const int[]){EAGAIN, ENOMEM}, 2);
    if (pid < 0)
        return;
    if (!pid) {
        f->rng = splitmix(f->rng ^ 0xf0f0f0f0ull);
        f->nchildren = 0;
        f->thread = 1; /* a child does not fork again */
        fuzz_loop(f, 50 + below(f, 200));
        _exit(0);
    }
    atomic_fetch_add(&stats->forks, 1);
    f->children[f->nchildren++] = pid;
}

static void reap(struct fuzzer *f, int i, int block) {
    int status;
    pid_t pid = waitpid(f->children[i], &status, block ? 0 : WNOHANG);

    if (pid == 0)
        return;
    if (pid > 0 && WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
        atomic_fetch_add(&stats->crashes, 1);
        fprintf(stderr, "fuzz-ioctl: child %d died of signal %d\n", (int)pid, WTERMSIG(status));
    } else if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status)) {
        atomic_fetch_add(&stats->crashes, 1);
        fprintf(stderr, "fuzz-ioctl: child %d exited %d\n", (int)pid, WEXITSTATUS(status));
    }
    f->children[i] = f->children[--f->nchildren];
}

static void op_kill(struct fuzzer *f) {
    int i;

    if (!f->nchildren)
        return;
    i = (int)below(f, f->nchildren);
    kill(f->children[i], SIGKILL);
    atomic_fetch_add(&stats->kills, 1);
    atomic_fetch_add(&stats->calls[OP_KILL], 1);
    atomic_fetch_add(&stats->ok[OP_KILL], 1);
    reap(f, i, 1);
}

static void (*const op_fn[OP_COUNT])(struct fuzzer *) = {
    [OP_OPEN] = op_open,
    [OP_CLOSE] = op_close,
    [OP_DUP] = op_dup,
    [OP_BO_CREATE] = op_bo_create,
    [OP_BO_INFO] = op_bo_info,
    [OP_MMAP] = op_mmap,
    [OP_MUNMAP] = op_munmap,
    [OP_TOUCH] = op_touch,
    [OP_COPY] = op_copy,
    [OP_SUBMIT] = op_submit,
    [OP_SYNC_CREATE] = op_sync_create,
    [OP_SYNC_WAIT] = op_sync_wait,
    [OP_WAIT] = op_wait,
    [OP_SYNC_DESTROY] = op_sync_destroy,
    [OP_GEM_CLOSE] = op_gem_close,
    [OP_FORK] = op_fork,
    [OP_KILL] = op_kill,
};

static enum op pick_op(struct fuzzer *f) {
    unsigned total = 0, i;
    uint64_t r;

    for (i = 0; i < OP_COUNT; i++)
        total += op_weight[i];
    r = below(f, total);
    for (i = 0; i < OP_COUNT; i++) {
        if (r < op_weight[i])
            return (enum op)i;
        r -= op_weight[i];
    }
    return OP_BO_CREATE;
}

static void fuzz_loop(struct fuzzer *f, unsigned long ops) {
    unsigned long i;

    for (i = 0; i < ops && now_s() < deadline; i++, f->n++) {
        if (!f->nfds)
            op_open(f);
        op_fn[pick_op(f)](f);
        if (f->nchildren)
            reap(f, (int)below(f, f->nchildren), 0);
    }
}

static void fuzzer_init(struct fuzzer *f, int proc, int thread) {
    memset(f, 0, sizeof(*f));
    f->proc = proc;
    f->thread = thread;
    f->rng = splitmix(run_seed ^ ((uint64_t)proc << 32 | (uint64_t)thread)) | 1;
}

/* Everything the thread still holds goes, as at exit. */
static void fuzzer_fini(struct fuzzer *f) {
    int i;

    while (f->nchildren)
        reap(f, 0, 1);
    for (i = 0; i < f->nmaps; i++)
        munmap(f->maps[i].p, f->maps[i].len);
    for (i = 0; i < f->nfds; i++)
        close(f->fds[i].fd);
}

static void *thread_main(void *arg) {
    struct fuzzer *f = arg;

    fuzz_loop(f, max_ops);
    fuzzer_fini(f);
    return NULL;
}

static int proc_main(int proc, int threads) {
    pthread_t tid[16];
    struct fuzzer *fz = calloc((size_t)threads, sizeof(*fz));
    int t;

    if (!fz)
        return 1;
    for (t = 0; t < threads; t++) {
        fuzzer_init(&fz[t], proc, t);
        if (pthread_create(&tid[t], NULL, thread_main, &fz[t]))
            return 1;
    }
    for (t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    free(fz);
    return 0;
}

static long sysfs_long(const char *attr) {
    return neuron_test_sysfs_long(&tdev, attr);
}

static void usage(void) {
    fprintf(stderr, "usage: neuron-fuzz-ioctl [--seed N] [--seconds S] [--procs P] [--threads T] "
                    "[--ops N]\n");
    exit(2);
}

int main(int argc, char **argv) {
    double seconds = 30, t0;
    int procs = 3, threads = 3, p, i, bad = 0, kmemleak;
    long used0, leaks;
    unsigned long total = 0;
    pid_t pids[16];

    setvbuf(stdout, NULL, _IOLBF, 0);
    run_seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    max_ops = ~0ul;
    for (i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        if (!strcmp(argv[i], "--seed"))
            run_seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--seconds"))
            seconds = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--procs"))
            procs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ops"))
            max_ops = strtoul(argv[++i], NULL, 0);
        else
            usage();
    }
    if (procs < 1 || procs > 16 || threads < 1 || threads > 16)
        usage();
    if (neuron_test_find_device(&tdev)) {
        fprintf(stderr, "no neuron accel device\n");
        return 1;
    }
    printf("fuzz-ioctl: seed %#" PRIx64 ", %d processes x %d threads, %.0f s\n", run_seed, procs,
           threads, seconds);
    stats = mmap(NULL, sizeof(*stats), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (stats == MAP_FAILED)
        return 1;
    memset(stats, 0, sizeof(*stats));
    used0 = sysfs_long("memory_used");
    kmemleak = !neuron_test_kmemleak_clear();
    t0 = now_s();
    deadline = t0 + seconds;

    for (p = 0; p < procs; p++) {
        pids[p] = fork();
        if (pids[p] < 0)
            return 1;
        if (!pids[p])
            _exit(proc_main(p, threads));
    }
    for (p = 0; p < procs; p++) {
        int status;

        waitpid(pids[p], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "fuzz-ioctl: process %d failed (status %#x)\n", p, status);
            bad = 1;
        }
    }

    for (i = 0; i < OP_COUNT; i++) {
        unsigned long c = atomic_load(&stats->calls[i]);

        total += c;
        printf("fuzz-ioctl: %-12s %8lu calls, %8lu succeeded\n", op_names[i], c,
               atomic_load(&stats->ok[i]));
    }
    printf("fuzz-ioctl: %lu calls in %.1f s, %lu forks, %lu kills, %lu unexpected errnos, "
           "%lu crashed children\n",
           total, now_s() - t0, atomic_load(&stats->forks), atomic_load(&stats->kills),
           atomic_load(&stats->unexpected), atomic_load(&stats->crashes));
    bad |= atomic_load(&stats->unexpected) || atomic_load(&stats->crashes);

    /* Every file is closed: jobs finish, buffers and pins go. */
    if (neuron_test_sysfs_wait(&tdev, "memory_used", used0, 60) != used0) {
        fprintf(stderr, "fuzz-ioctl: device memory used %ld, baseline %ld\n",
                sysfs_long("memory_used"), used0);
        bad = 1;
    }
    if (neuron_test_sysfs_wait(&tdev, "host_memory_pinned", 0, 60) != 0) {
        fprintf(stderr, "fuzz-ioctl: %ld bytes of host memory still pinned\n",
                sysfs_long("host_memory_pinned"));
        bad = 1;
    }
    leaks = kmemleak ? neuron_test_kmemleak_scan() : -1;
    if (leaks < 0)
        printf("fuzz-ioctl: leaks not checked (no kmemleak)\n");
    else
        printf("fuzz-ioctl: kmemleak: %ld unreferenced objects\n", leaks);
    bad |= leaks > 0;
    if (bad)
        printf("fuzz-ioctl: FAILED; replay with --seed %#" PRIx64 " --seconds %.0f --procs %d "
               "--threads %d\n",
               run_seed, seconds, procs, threads);
    return bad;
}
