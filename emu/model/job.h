/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The boundary between the device model (registers, rings, DMA engines;
 * queue.c runs the jobs) and a NeuronCore's execution of one job (the ISA
 * interpreter): the memory-access interface, the job's bindings and the
 * run entry point.
 *
 * QEMU-independent C11: the QEMU glue supplies nm_mem_ops, unit tests
 * supply plain buffers.
 */
#ifndef NEURON_MODEL_JOB_H
#define NEURON_MODEL_JOB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "neuron_regs.h"

/*
 * How the model reaches memory outside itself. Host accesses use bus
 * addresses and may fail (IOMMU fault, unmapped memory): they return 0 on
 * success and non-zero on failure. Device memory is a plain host buffer.
 */
typedef struct nm_mem_ops {
    int (*host_read)(void *opaque, uint64_t addr, void *buf, size_t len);
    int (*host_write)(void *opaque, uint64_t addr, const void *buf, size_t len);
    void *opaque;
    uint8_t *devmem;
    uint64_t devmem_size;
} nm_mem_ops;

/* A job's binding table, fetched and checked once when the job starts. */
typedef struct nm_bindings {
    struct neuron_binding slot[NEURON_MAX_BINDINGS];
    uint32_t count;
} nm_bindings;

/*
 * Everything one run of a job needs. status/info/fault_engine and the
 * counters are outputs.
 */
typedef struct nm_job {
    const nm_mem_ops *mem;
    nm_bindings bindings;
    uint64_t job_id;
    uint32_t program_binding;
    uint64_t program_offset;
    uint32_t program_size;

    /* Set by another thread (core or device reset): stop as soon as possible. */
    const atomic_bool *abort;
    /* Called for each notify instruction; may be NULL. */
    void (*notify)(void *opaque, uint64_t job_id, uint32_t value);
    void *notify_opaque;

    /*
     * NEURON_JOB_F_PROFILE: record the job's trace (struct
     * neuron_trace_header, hw/README.md section 4.8) into slot
     * trace_binding.
     */
    bool profile;
    uint32_t trace_binding;

    /* Outputs. */
    uint32_t status; /* NEURON_JOB_STATUS_* */
    uint32_t info;
    uint16_t fault_engine;
    uint64_t cycles;
    uint64_t instructions;
    uint64_t flops;
    uint64_t dma_bytes;
    /* Of a profiled job: records written into the trace, NEURON_TRACE_F_*. */
    uint64_t trace_records;
    uint32_t trace_flags;
} nm_job;

/*
 * Load a binding table of @count entries from host bus address @addr and
 * validate every slot (flags, reserved fields, ranges, SG lists).
 * Returns NEURON_JOB_STATUS_OK, NEURON_JOB_STATUS_BAD_BINDING or
 * NEURON_JOB_STATUS_HOST_DMA.
 */
uint32_t nm_bindings_load(nm_bindings *b, const nm_mem_ops *mem, uint64_t addr, uint32_t count);

/*
 * Checked accesses through a binding: (slot, offset, len) must lie inside
 * the slot and the slot must grant @need (NEURON_BIND_READ/WRITE/EXEC).
 * Returns NEURON_JOB_STATUS_OK or the fault status; nothing is touched on
 * a fault.
 */
uint32_t nm_binding_read(const nm_job *job, uint32_t slot, uint64_t offset, void *buf, size_t len,
                         uint32_t need);
uint32_t nm_binding_write(const nm_job *job, uint32_t slot, uint64_t offset, const void *buf,
                          size_t len);

/* One NeuronCore's execution state (SBUF, PSUM, semaphores). */
typedef struct nm_core nm_core;

nm_core *nm_core_new(uint32_t sbuf_bytes, uint32_t psum_bytes);
void nm_core_free(nm_core *core);
/* Return the core to its reset state (SBUF/PSUM contents are undefined). */
void nm_core_reset(nm_core *core);

/*
 * Host threads for large instructions. A core runs its job on one thread;
 * given a runner, it splits a large MATMUL's columns, and the partitions
 * of a large DMA, TENSOR_TENSOR or TENSOR_SCALAR (nm_split_rows), into
 * up to @width parts (the results are the same bits: every element takes
 * the same operations). @run calls task(ctx, i) for every i < count
 * (count <= width), from the thread that runs the job or others, and
 * returns when every call has returned. The simulator gives one; QEMU runs each core
 * on its vCPU-independent thread and gives none.
 */
#define NM_MAX_PARALLEL 4
typedef void nm_task_fn(void *ctx, uint32_t index);
typedef struct nm_parallel {
    void (*run)(void *opaque, nm_task_fn *task, void *ctx, uint32_t count);
    void *opaque;
    uint32_t width; /* 1..NM_MAX_PARALLEL; 1 or run == NULL: no splitting */
} nm_parallel;
/* false (nothing changed) if @p's width is out of range or memory is short. */
bool nm_core_set_parallel(nm_core *core, const nm_parallel *p);

/*
 * Run one job to completion, fault or abort. Fetches the program image
 * through the job's bindings, validates it and executes every engine
 * stream; fills the job's outputs. A profiled job's trace slot must grant
 * NEURON_BIND_WRITE and hold at least the trace header (BAD_BINDING, info
 * = the slot, otherwise); the trace never fails the job.
 */
void nm_core_run(nm_core *core, nm_job *job);

#endif /* NEURON_MODEL_JOB_H */
