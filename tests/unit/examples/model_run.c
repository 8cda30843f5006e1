// SPDX-License-Identifier: MIT
#include "model_run.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "neuron_isa.h"

static_assert(EXM_STATUS_OK == NEURON_JOB_STATUS_OK, "job status OK");

/* The binding table lives in "host memory": one bus address range. */
#define EXM_TABLE_BUS 0x100000000ull

struct exm_host {
    struct neuron_binding table[NEURON_MAX_BINDINGS];
};

static int exm_host_read(void *opaque, uint64_t addr, void *buf, size_t len) {
    struct exm_host *h = opaque;
    if (addr < EXM_TABLE_BUS || addr - EXM_TABLE_BUS > sizeof(h->table) ||
        len > sizeof(h->table) - (addr - EXM_TABLE_BUS))
        return -1;
    memcpy(buf, (const uint8_t *)h->table + (addr - EXM_TABLE_BUS), len);
    return 0;
}

static int exm_host_write(void *opaque, uint64_t addr, const void *buf, size_t len) {
    (void)opaque;
    (void)addr;
    (void)buf;
    (void)len;
    return -1; /* the examples bind device memory only */
}

static uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

int exm_run(const void *image, size_t image_size, struct exm_slot *slots, uint32_t nslots,
            struct exm_result *r) {
    if (nslots + 1 > NEURON_MAX_BINDINGS || image_size > UINT32_MAX)
        return -1;
    uint64_t total = 0, off[NEURON_MAX_BINDINGS];
    for (uint32_t i = 0; i < nslots; i++) {
        off[i] = total;
        total = align_up(total + slots[i].size, 4096);
    }
    off[nslots] = total;
    total = align_up(total + image_size, 4096);

    struct exm_host *host = calloc(1, sizeof(*host));
    uint8_t *devmem = calloc(1, total);
    nm_core *core = nm_core_new(NEURON_SBUF_DEFAULT_SIZE, NEURON_PSUM_SIZE);
    nm_job *job = calloc(1, sizeof(*job));
    int ret = -1;
    if (!host || !devmem || !core || !job)
        goto out;

    for (uint32_t i = 0; i <= nslots; i++) {
        struct neuron_binding *b = &host->table[i];
        b->addr = off[i];
        if (i < nslots) {
            b->size = slots[i].size;
            b->flags =
                (slots[i].read ? NEURON_BIND_READ : 0) | (slots[i].write ? NEURON_BIND_WRITE : 0);
            if (slots[i].size)
                memcpy(devmem + off[i], slots[i].data, slots[i].size);
        } else {
            b->size = image_size;
            b->flags = NEURON_BIND_READ | NEURON_BIND_EXEC;
            memcpy(devmem + off[i], image, image_size);
        }
    }

    nm_mem_ops mem = {
        .host_read = exm_host_read,
        .host_write = exm_host_write,
        .opaque = host,
        .devmem = devmem,
        .devmem_size = total,
    };
    atomic_bool abort_flag;
    atomic_init(&abort_flag, false);
    job->mem = &mem;
    job->job_id = 1;
    job->program_binding = nslots;
    job->program_offset = 0;
    job->program_size = (uint32_t)image_size;
    job->abort = &abort_flag;

    uint32_t st = nm_bindings_load(&job->bindings, &mem, EXM_TABLE_BUS, nslots + 1);
    if (st == NEURON_JOB_STATUS_OK) {
        nm_core_run(core, job);
        st = job->status;
    }
    memset(r, 0, sizeof(*r));
    r->status = st;
    r->info = job->info;
    r->fault_engine = job->fault_engine;
    r->cycles = job->cycles;
    r->instructions = job->instructions;
    r->flops = job->flops;
    r->dma_bytes = job->dma_bytes;
    for (uint32_t i = 0; i < nslots; i++)
        if (slots[i].write && slots[i].size)
            memcpy(slots[i].data, devmem + off[i], slots[i].size);
    ret = 0;
out:
    free(job);
    if (core)
        nm_core_free(core);
    free(devmem);
    free(host);
    return ret;
}
