// SPDX-License-Identifier: MIT
/*
 * libFuzzer over the device model's job path: a binding table, the SG
 * lists it points to and a program image, all from the input, run by one
 * core (emu/model/job.h) under ASan/UBSan.
 *
 * Beyond "no crash, no sanitizer report, no hang", it checks the model's
 * isolation promise (hw/neuron_regs.h, struct neuron_binding): a job writes
 * only where a binding lets it. Device memory outside every writable
 * device-memory binding and host memory outside every piece of a writable
 * host binding must be unchanged after the job; host writes are checked as
 * they happen. Device memory is allocated at its exact size, so an access
 * past its end is an ASan report.
 *
 * Input (little endian):
 *   u8   nbind: bindings given by the input, slots 1..nbind (modulo 64)
 *   u16  sg_bytes: bytes of the SG area (at most SG_AREA_SIZE)
 *   nbind * struct neuron_binding
 *   sg_bytes of SG area, placed at bus address SG_AREA_BUS
 *   the program image, placed at device memory 0 and bound as slot 0
 *   (READ | EXEC); its header's insn_limit is capped at INSN_CAP
 * Every other byte of both memories is FILL_BYTE.
 *
 * A job that is still running after ABORT_MS is aborted, as the driver's
 * job timeout does through a core reset: the model must then end it within
 * libFuzzer's -timeout. Budget and abort are the device's hang guards; an
 * input that escapes both is a hang.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job.h"
#include "neuron_isa.h"
#include "neuron_regs.h"

#define DEVMEM_SIZE (256u << 10)
#define PROGRAM_MAX (64u << 10)
#define HOST_BASE 0x200000000ull
#define HOST_SIZE (256u << 10)
#define TABLE_BUS HOST_BASE
#define SG_AREA_BUS (HOST_BASE + 4096)
#define SG_AREA_SIZE 4096u
/* Host memory jobs may be given: after the table and the SG area. */
#define HOST_DATA_BUS (SG_AREA_BUS + SG_AREA_SIZE)
#define INSN_CAP 20000u
#define FILL_BYTE 0xa5
#define ABORT_MS 500
#define SBUF_SIZE (256u << 10)
#define PSUM_SIZE (NEURON_PARTITIONS * NEURON_PSUM_BANK_SIZE)

/* Writable ranges per memory at most; inputs with more are skipped. */
#define MAX_RANGES 4096

/* Where a job may write: merged [lo, hi) ranges, sorted by lo. */
struct writable {
    struct range {
        uint64_t lo, hi;
    } r[MAX_RANGES];
    uint32_t n;
};

struct harness {
    uint8_t *devmem, *devmem_before;
    uint8_t *host, *host_before;
    nm_mem_ops mem;
    nm_core *core;
    atomic_bool abort;
    struct writable dev_ok;  /* device-memory offsets */
    struct writable host_ok; /* bus addresses */
    /* The watchdog: sets @abort when a run is armed past its deadline. */
    pthread_t watchdog;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool armed;
    struct timespec deadline;
};

static struct harness h;

static bool writable_add(struct writable *w, uint64_t lo, uint64_t len) {
    if (len == 0)
        return true;
    if (w->n == MAX_RANGES)
        return false;
    w->r[w->n++] = (struct range){lo, lo + len < lo ? UINT64_MAX : lo + len};
    return true;
}

static int by_lo(const void *a, const void *b) {
    const struct range *x = a, *y = b;

    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void writable_merge(struct writable *w) {
    uint32_t out = 0;

    qsort(w->r, w->n, sizeof(w->r[0]), by_lo);
    for (uint32_t i = 0; i < w->n; i++) {
        if (out && w->r[i].lo <= w->r[out - 1].hi) {
            if (w->r[i].hi > w->r[out - 1].hi)
                w->r[out - 1].hi = w->r[i].hi;
        } else {
            w->r[out++] = w->r[i];
        }
    }
    w->n = out;
}

/* Whether [lo, lo + len) lies inside one merged range. */
static bool writable_covers(const struct writable *w, uint64_t lo, uint64_t len) {
    uint32_t a = 0, b = w->n;

    while (a < b) { /* the first range that starts after lo */
        uint32_t m = a + (b - a) / 2;

        if (w->r[m].lo <= lo)
            a = m + 1;
        else
            b = m;
    }
    return a > 0 && len <= w->r[a - 1].hi - lo;
}

static bool host_span(uint64_t addr, size_t len, uint64_t *off) {
    if (addr < HOST_BASE || addr - HOST_BASE > HOST_SIZE || len > HOST_SIZE - (addr - HOST_BASE))
        return false;
    *off = addr - HOST_BASE;
    return true;
}

static int host_read(void *opaque, uint64_t addr, void *buf, size_t len) {
    uint64_t off;

    (void)opaque;
    if (!host_span(addr, len, &off))
        return -1;
    memcpy(buf, h.host + off, len);
    return 0;
}

static int host_write(void *opaque, uint64_t addr, const void *buf, size_t len) {
    uint64_t off;

    (void)opaque;
    if (!host_span(addr, len, &off))
        return -1;
    if (!writable_covers(&h.host_ok, addr, len)) {
        fprintf(stderr, "host write of %zu bytes at 0x%llx: no writable binding covers it\n", len,
                (unsigned long long)addr);
        abort();
    }
    memcpy(h.host + off, buf, len);
    return 0;
}

static void *watchdog(void *arg) {
    (void)arg;
    pthread_mutex_lock(&h.lock);
    for (;;) {
        while (!h.armed)
            pthread_cond_wait(&h.cond, &h.lock);
        if (pthread_cond_timedwait(&h.cond, &h.lock, &h.deadline) && h.armed) {
            atomic_store(&h.abort, true);
            h.armed = false;
        }
    }
    return NULL;
}

static void watchdog_arm(bool on) {
    pthread_mutex_lock(&h.lock);
    h.armed = on;
    if (on) {
        clock_gettime(CLOCK_REALTIME, &h.deadline);
        h.deadline.tv_nsec += ABORT_MS * 1000000L;
        h.deadline.tv_sec += h.deadline.tv_nsec / 1000000000L;
        h.deadline.tv_nsec %= 1000000000L;
    }
    pthread_cond_signal(&h.cond);
    pthread_mutex_unlock(&h.lock);
}

static void setup(void) {
    h.devmem = malloc(DEVMEM_SIZE);
    h.devmem_before = malloc(DEVMEM_SIZE);
    h.host = malloc(HOST_SIZE);
    h.host_before = malloc(HOST_SIZE);
    h.core = nm_core_new(SBUF_SIZE, PSUM_SIZE);
    if (!h.devmem || !h.devmem_before || !h.host || !h.host_before || !h.core)
        abort();
    h.mem.host_read = host_read;
    h.mem.host_write = host_write;
    h.mem.opaque = &h;
    h.mem.devmem = h.devmem;
    h.mem.devmem_size = DEVMEM_SIZE;
    atomic_init(&h.abort, false);
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.cond, NULL);
    if (pthread_create(&h.watchdog, NULL, watchdog, NULL))
        abort();
}

static uint64_t le64(const uint8_t *p) {
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/*
 * Record where the job may write: writable device bindings, and the pieces
 * of writable host bindings up to the binding's size. Returns false for a
 * table this harness cannot judge: more ranges than it keeps, or a
 * writable host piece over the table or the SG area (the job could rewrite
 * its own SG lists).
 */
static bool writable_ranges(const struct neuron_binding *table, uint32_t n) {
    h.dev_ok.n = 0;
    h.host_ok.n = 0;
    for (uint32_t s = 0; s < n; s++) {
        const struct neuron_binding *b = &table[s];
        uint64_t covered = 0;

        if (!(b->flags & NEURON_BIND_WRITE))
            continue;
        if (!(b->flags & NEURON_BIND_HOST_SG)) {
            if (!writable_add(&h.dev_ok, b->addr, b->size))
                return false;
            continue;
        }
        for (uint32_t i = 0; i < b->sg_count && covered < b->size; i++) {
            uint64_t off;

            if (!host_span(b->addr + 16ull * i, 16, &off))
                break;
            uint64_t lo = le64(h.host + off), len = le64(h.host + off + 8);

            if (lo < HOST_DATA_BUS && (lo + len > HOST_BASE || lo + len < lo))
                return false;
            if (!writable_add(&h.host_ok, lo, len))
                return false;
            covered += len;
        }
    }
    writable_merge(&h.dev_ok);
    writable_merge(&h.host_ok);
    return true;
}

/* Bytes of @now that differ from @before lie in writable ranges. */
static void check_unchanged(const uint8_t *now, const uint8_t *before, uint64_t size,
                            const struct writable *w, uint64_t base, const char *what) {
    enum { BLOCK = 4096 };

    for (uint64_t blk = 0; blk < size; blk += BLOCK) {
        if (!memcmp(now + blk, before + blk, BLOCK))
            continue;
        for (uint64_t i = blk; i < blk + BLOCK; i++) {
            if (now[i] == before[i] || writable_covers(w, base + i, 1))
                continue;
            fprintf(stderr, "%s byte 0x%llx changed with no writable binding over it\n", what,
                    (unsigned long long)(base + i));
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct neuron_binding table[NEURON_MAX_BINDINGS];
    struct neuron_prog_header hdr;
    nm_job job;
    uint32_t nbind, sg_bytes;
    size_t prog_size;
    bool aborted;

    if (!h.core)
        setup();
    if (size < 3)
        return 0;
    nbind = data[0] % NEURON_MAX_BINDINGS;
    sg_bytes = (uint32_t)(data[1] | data[2] << 8);
    data += 3;
    size -= 3;
    if (sg_bytes > SG_AREA_SIZE || size < nbind * sizeof(table[0]) + sg_bytes)
        return 0;
    prog_size = size - nbind * sizeof(table[0]) - sg_bytes;
    if (prog_size > PROGRAM_MAX)
        return 0;

    /* Not zeros: a store of zeros over zeros would go unseen. */
    memset(h.devmem, FILL_BYTE, DEVMEM_SIZE);
    memset(h.host, FILL_BYTE, HOST_SIZE);
    table[0] = (struct neuron_binding){
        .addr = 0, .size = prog_size ? prog_size : 1, .flags = NEURON_BIND_READ | NEURON_BIND_EXEC};
    memcpy(&table[1], data, nbind * sizeof(table[0]));
    memcpy(h.host + (SG_AREA_BUS - HOST_BASE), data + nbind * sizeof(table[0]), sg_bytes);
    memcpy(h.devmem, data + nbind * sizeof(table[0]) + sg_bytes, prog_size);
    if (prog_size >= sizeof(hdr)) {
        memcpy(&hdr, h.devmem, sizeof(hdr));
        if (hdr.insn_limit == 0 || hdr.insn_limit > INSN_CAP)
            hdr.insn_limit = INSN_CAP;
        memcpy(h.devmem, &hdr, sizeof(hdr));
    }
    memcpy(h.host, table, (nbind + 1) * sizeof(table[0]));
    if (!writable_ranges(table, nbind + 1))
        return 0;
    memcpy(h.devmem_before, h.devmem, DEVMEM_SIZE);
    memcpy(h.host_before, h.host, HOST_SIZE);

    memset(&job, 0, sizeof(job));
    job.mem = &h.mem;
    job.job_id = 1;
    job.program_binding = 0;
    job.program_size = (uint32_t)prog_size;
    job.abort = &h.abort;
    nm_core_reset(h.core);
    job.status = nm_bindings_load(&job.bindings, &h.mem, TABLE_BUS, nbind + 1);
    if (job.status == NEURON_JOB_STATUS_OK) {
        watchdog_arm(true);
        nm_core_run(h.core, &job);
        watchdog_arm(false);
    }
    aborted = atomic_exchange(&h.abort, false);
    if (aborted && job.status != NEURON_JOB_STATUS_ABORTED && job.status != NEURON_JOB_STATUS_OK &&
        job.status < NEURON_JOB_STATUS_BAD_DESC) {
        fprintf(stderr, "an aborted job ended with status 0x%x\n", job.status);
        abort();
    }

    check_unchanged(h.devmem, h.devmem_before, DEVMEM_SIZE, &h.dev_ok, 0, "device memory");
    check_unchanged(h.host, h.host_before, HOST_SIZE, &h.host_ok, HOST_BASE, "host memory");
    if (job.status == NEURON_JOB_STATUS_OK && prog_size >= sizeof(hdr) &&
        job.instructions > INSN_CAP)
        abort();
    return 0;
}
