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
 * Every other byte of both memories is FH_FILL_BYTE.
 *
 * A job that is still running after ABORT_MS is aborted, as the driver's
 * job timeout does through a core reset: the model must then end it within
 * libFuzzer's -timeout. Budget and abort are the device's hang guards; an
 * input that escapes both is a hang.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_harness.h"
#include "job.h"
#include "neuron_isa.h"
#include "neuron_regs.h"

#define DEVMEM_SIZE FH_DEVMEM_SIZE
#define PROGRAM_MAX (64u << 10)
#define HOST_BASE FH_HOST_BASE
#define HOST_SIZE FH_HOST_SIZE
#define TABLE_BUS HOST_BASE
#define SG_AREA_BUS (HOST_BASE + 4096)
#define SG_AREA_SIZE 4096u
/* Host memory jobs may be given: after the table and the SG area. */
#define HOST_DATA_BUS (SG_AREA_BUS + SG_AREA_SIZE)
#define INSN_CAP 20000u
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
    struct fh_memory mem;
    uint8_t *devmem_before, *host_before;
    nm_core *core;
    atomic_bool abort;
    struct writable dev_ok;  /* device-memory offsets */
    struct writable host_ok; /* bus addresses */
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

static int host_write(void *opaque, uint64_t addr, const void *buf, size_t len) {
    uint64_t off;

    (void)opaque;
    if (!fh_host_span(addr, len, &off))
        return -1;
    if (!writable_covers(&h.host_ok, addr, len)) {
        fprintf(stderr, "host write of %zu bytes at 0x%llx: no writable binding covers it\n", len,
                (unsigned long long)addr);
        abort();
    }
    memcpy(h.mem.host + off, buf, len);
    return 0;
}

/* The driver's job timeout: a core reset aborts the running job. */
static void abort_job(void *opaque) {
    (void)opaque;
    atomic_store(&h.abort, true);
}

static void setup(void) {
    fh_memory_init(&h.mem, host_write);
    h.devmem_before = malloc(DEVMEM_SIZE);
    h.host_before = malloc(HOST_SIZE);
    h.core = nm_core_new(SBUF_SIZE, PSUM_SIZE);
    if (!h.devmem_before || !h.host_before || !h.core)
        abort();
    atomic_init(&h.abort, false);
    fh_watchdog_start(abort_job, NULL);
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

            if (!fh_host_span(b->addr + 16ull * i, 16, &off))
                break;
            uint64_t lo = fh_le(h.mem.host + off, 8), len = fh_le(h.mem.host + off + 8, 8);

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

    fh_memory_fill(&h.mem);
    table[0] = (struct neuron_binding){
        .addr = 0, .size = prog_size ? prog_size : 1, .flags = NEURON_BIND_READ | NEURON_BIND_EXEC};
    memcpy(&table[1], data, nbind * sizeof(table[0]));
    memcpy(h.mem.host + (SG_AREA_BUS - HOST_BASE), data + nbind * sizeof(table[0]), sg_bytes);
    memcpy(h.mem.devmem, data + nbind * sizeof(table[0]) + sg_bytes, prog_size);
    if (prog_size >= sizeof(hdr)) {
        memcpy(&hdr, h.mem.devmem, sizeof(hdr));
        if (hdr.insn_limit == 0 || hdr.insn_limit > INSN_CAP)
            hdr.insn_limit = INSN_CAP;
        memcpy(h.mem.devmem, &hdr, sizeof(hdr));
    }
    memcpy(h.mem.host, table, (nbind + 1) * sizeof(table[0]));
    if (!writable_ranges(table, nbind + 1))
        return 0;
    memcpy(h.devmem_before, h.mem.devmem, DEVMEM_SIZE);
    memcpy(h.host_before, h.mem.host, HOST_SIZE);

    memset(&job, 0, sizeof(job));
    job.mem = &h.mem.ops;
    job.job_id = 1;
    job.program_binding = 0;
    job.program_size = (uint32_t)prog_size;
    job.abort = &h.abort;
    nm_core_reset(h.core);
    job.status = nm_bindings_load(&job.bindings, &h.mem.ops, TABLE_BUS, nbind + 1);
    if (job.status == NEURON_JOB_STATUS_OK) {
        fh_watchdog_arm(ABORT_MS);
        nm_core_run(h.core, &job);
        fh_watchdog_disarm();
    }
    aborted = atomic_exchange(&h.abort, false);
    if (aborted && job.status != NEURON_JOB_STATUS_ABORTED && job.status != NEURON_JOB_STATUS_OK &&
        job.status < NEURON_JOB_STATUS_BAD_DESC) {
        fprintf(stderr, "an aborted job ended with status 0x%x\n", job.status);
        abort();
    }

    check_unchanged(h.mem.devmem, h.devmem_before, DEVMEM_SIZE, &h.dev_ok, 0, "device memory");
    check_unchanged(h.mem.host, h.host_before, HOST_SIZE, &h.host_ok, HOST_BASE, "host memory");
    if (job.status == NEURON_JOB_STATUS_OK && prog_size >= sizeof(hdr) &&
        job.instructions > INSN_CAP)
        abort();
    return 0;
}
