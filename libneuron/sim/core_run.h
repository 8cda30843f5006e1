/* SPDX-License-Identifier: MIT */
/*
 * The simulator's door into the device model: one NeuronCore (emu/model's
 * nm_core) and the run of one job on it, behind a plain C interface that
 * C++ can include (the model's headers use C11 atomics).
 */
#ifndef NEURON_SIM_CORE_RUN_H
#define NEURON_SIM_CORE_RUN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct neuron_binding;
typedef struct nsim_core nsim_core;

/* How the core reaches memory: bus addresses (binding tables and host SG
 * lists and pages) through callbacks, device memory as a plain buffer. */
struct nsim_mem {
    int (*host_read)(void *opaque, uint64_t addr, void *buf, size_t len);
    int (*host_write)(void *opaque, uint64_t addr, const void *buf, size_t len);
    void *opaque;
    uint8_t *devmem;
    uint64_t devmem_size;
};

/* One job: a binding table at bus address @table_addr, the program image
 * in slot @program_binding. */
struct nsim_job {
    uint64_t job_id;
    uint64_t table_addr;
    uint32_t num_bindings;
    uint32_t program_binding;
    uint32_t program_size;
    /* Profile the job into slot @trace_binding (hw/README.md section 4.8). */
    int profile;
    uint32_t trace_binding;
};

struct nsim_result {
    uint32_t status; /* NEURON_JOB_STATUS_* */
    uint32_t info;
    uint64_t cycles;
    uint64_t instructions;
    uint64_t flops;
    uint64_t dma_bytes;
};

/* NULL when the sizes are not valid for the model. */
nsim_core *nsim_core_new(uint32_t sbuf_bytes, uint32_t psum_bytes);

/*
 * Split large instructions into @width parts (the model's nm_parallel):
 * @run calls task(ctx, i) for every i < count and returns when all have
 * returned. Not while a job runs. 0, or -1 for a width out of 1..4 or no
 * memory.
 */
typedef void nsim_task_fn(void *ctx, uint32_t index);
typedef void nsim_run_fn(void *opaque, nsim_task_fn *task, void *ctx, uint32_t count);
int nsim_core_set_parallel(nsim_core *c, nsim_run_fn *run, void *opaque, uint32_t width);
void nsim_core_free(nsim_core *c);
/* Loads and checks the binding table, runs the job to completion, fault or
 * abort. Not concurrently for one core. */
void nsim_core_run(nsim_core *c, const struct nsim_mem *mem, const struct nsim_job *job,
                   struct nsim_result *r);
/* From any thread: make the running job (if any) stop as soon as possible
 * with NEURON_JOB_STATUS_ABORTED. Cleared when the next job starts. */
void nsim_core_abort(nsim_core *c);
/* What a core reset does to the core's state. */
void nsim_core_reset(nsim_core *c);

#ifdef __cplusplus
}
#endif

#endif /* NEURON_SIM_CORE_RUN_H */
