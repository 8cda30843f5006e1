// SPDX-License-Identifier: MIT
#include "core_run.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

struct nsim_core {
    nm_core *core;
    atomic_bool abort;
};

nsim_core *nsim_core_new(uint32_t sbuf_bytes, uint32_t psum_bytes) {
    nsim_core *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->core = nm_core_new(sbuf_bytes, psum_bytes);
    if (!c->core) {
        free(c);
        return NULL;
    }
    atomic_init(&c->abort, false);
    return c;
}

_Static_assert(NM_MAX_PARALLEL == 4, "core_run.h says 1..4");

int nsim_core_set_parallel(nsim_core *c, nsim_run_fn *run, void *opaque, uint32_t width) {
    const nm_parallel p = {run, opaque, width};
    return nm_core_set_parallel(c->core, &p) ? 0 : -1;
}

void nsim_core_free(nsim_core *c) {
    if (!c)
        return;
    nm_core_free(c->core);
    free(c);
}

void nsim_core_run(nsim_core *c, const struct nsim_mem *m, const struct nsim_job *j,
                   struct nsim_result *r) {
    nm_mem_ops mem = {
        .host_read = m->host_read,
        .host_write = m->host_write,
        .opaque = m->opaque,
        .devmem = m->devmem,
        .devmem_size = m->devmem_size,
    };
    nm_job *job = calloc(1, sizeof(*job));
    memset(r, 0, sizeof(*r));
    if (!job) {
        r->status = NEURON_JOB_STATUS_HOST_DMA;
        return;
    }
    atomic_store(&c->abort, false);
    job->mem = &mem;
    job->job_id = j->job_id;
    job->program_binding = j->program_binding;
    job->program_offset = 0;
    job->program_size = j->program_size;
    job->abort = &c->abort;
    job->profile = j->profile != 0;
    job->trace_binding = j->trace_binding;
    r->status = nm_bindings_load(&job->bindings, &mem, j->table_addr, j->num_bindings);
    if (r->status == NEURON_JOB_STATUS_OK) {
        nm_core_run(c->core, job);
        r->status = job->status;
    }
    r->info = job->info;
    r->cycles = job->cycles;
    r->instructions = job->instructions;
    r->flops = job->flops;
    r->dma_bytes = job->dma_bytes;
    free(job);
}

void nsim_core_abort(nsim_core *c) {
    atomic_store(&c->abort, true);
}

void nsim_core_reset(nsim_core *c) {
    nm_core_reset(c->core);
}
