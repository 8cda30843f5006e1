/* SPDX-License-Identifier: MIT */
/*
 * libneuron C API: the same objects as the C++ API (neuron/neuron.hpp)
 * behind opaque handles, for other languages.
 *
 * Every function that can fail returns a neuron_status; on failure,
 * neuron_last_error() returns a message saying what failed and why (it is
 * per thread and stays valid until the thread's next failing call).
 * Handles are released with their _destroy/_close function; objects keep
 * what they depend on alive (a buffer keeps its device open, an allocation
 * its pool), so they may be released in any order.
 */
#ifndef NEURON_NEURON_H
#define NEURON_NEURON_H

#include <stddef.h>
#include <stdint.h>

#include <neuron/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes; the same values as neuron::errc. */
typedef enum neuron_status {
    NEURON_OK = 0,
    NEURON_ERR_INVALID_ARGUMENT = 1,
    NEURON_ERR_NO_DEVICE = 2,
    NEURON_ERR_PERMISSION_DENIED = 3,
    NEURON_ERR_NOT_SUPPORTED = 4,
    NEURON_ERR_OUT_OF_HOST_MEMORY = 5,
    NEURON_ERR_OUT_OF_DEVICE_MEMORY = 6,
    NEURON_ERR_IO = 7,
    NEURON_ERR_TIMEOUT = 8,
    NEURON_ERR_JOB_FAULT = 9,
    NEURON_ERR_JOB_INVALID = 10,
    NEURON_ERR_JOB_TIMEOUT = 11,
    NEURON_ERR_JOB_ABORTED = 12,
    NEURON_ERR_INVALID_PROGRAM = 13,
    NEURON_ERR_DEVICE_LOST = 14,
    NEURON_ERR_INTERNAL = 100
} neuron_status;

typedef struct neuron_device neuron_device;
typedef struct neuron_buffer neuron_buffer;
typedef struct neuron_fence neuron_fence;
typedef struct neuron_pool neuron_pool;
typedef struct neuron_allocation neuron_allocation;
typedef struct neuron_program neuron_program;
typedef struct neuron_loaded_program neuron_loaded_program;
typedef struct neuron_queue neuron_queue;

/* The message of this thread's last failure ("" if none). */
NEURON_EXPORT const char *neuron_last_error(void);
/* A short name of a status, e.g. "permission denied". */
NEURON_EXPORT const char *neuron_status_string(neuron_status status);
/* The library version, "major.minor.patch". */
NEURON_EXPORT const char *neuron_version(void);
/* Frees memory the library returned (neuron_program_disassemble). */
NEURON_EXPORT void neuron_free(void *p);

/* ---- devices ---- */

typedef struct neuron_device_entry {
    uint32_t index;    /* N of /dev/accel/accelN */
    int32_t numa_node; /* -1 if unknown */
    uint16_t vendor_id;
    uint16_t device_id;
    char node[256];       /* /dev/accel/accelN */
    char pci_address[32]; /* dddd:bb:dd.f */
} neuron_device_entry;

/*
 * Lists devices into @entries (at most @capacity); *count receives how many
 * exist. $NEURON_SYSFS_ROOT and $NEURON_DEV_ROOT override /sys and /dev.
 */
NEURON_EXPORT neuron_status neuron_enumerate(neuron_device_entry *entries, size_t capacity,
                                             size_t *count);

typedef struct neuron_device_info {
    uint16_t vendor_id;
    uint16_t device_id;
    uint32_t revision;
    uint32_t num_cores;
    uint32_t num_dma_engines;
    uint64_t device_memory_size;
    uint64_t sbuf_size;
    uint64_t psum_size;
    uint32_t partitions;
    uint32_t hw_version;
    uint32_t fw_version;
    uint32_t api_version;
    uint64_t capabilities;
    uint32_t core_clock_mhz;
    uint32_t max_bindings;
    char pci_address[32];
} neuron_device_info;

#define NEURON_CAP_FP32_BIT (1u << 0)
#define NEURON_CAP_BF16_BIT (1u << 1)
#define NEURON_CAP_FP16_BIT (1u << 2)
#define NEURON_CAP_HOST_BINDINGS_BIT (1u << 3)
#define NEURON_CAP_CORE_RESET_BIT (1u << 4)
#define NEURON_CAP_PROFILE_BIT (1u << 5)

/*
 * Opens a device: @spec is a node path ("/dev/accel/accel0"), an index
 * ("0"), a PCI address ("0000:00:03.0"), or NULL/"" for the first device.
 */
NEURON_EXPORT neuron_status neuron_device_open(const char *spec, neuron_device **out);
NEURON_EXPORT void neuron_device_close(neuron_device *dev);
NEURON_EXPORT neuron_status neuron_device_get_info(const neuron_device *dev,
                                                   neuron_device_info *out);
/*
 * The instruction set of the device's cores, major << 16 | minor (as
 * DeviceInfo::isa_version in C++).
 */
NEURON_EXPORT neuron_status neuron_device_isa_version(const neuron_device *dev, uint32_t *out);
/*
 * Device memory allocated to buffers now, by every process, in bytes (as
 * Device::memory_used() in C++). NEURON_ERR_NOT_SUPPORTED when the driver
 * does not say.
 */
NEURON_EXPORT neuron_status neuron_device_memory_used(const neuron_device *dev, uint64_t *out);

/* ---- buffers ---- */

typedef enum neuron_region { NEURON_REGION_DEVICE = 0, NEURON_REGION_HOST = 1 } neuron_region;
#define NEURON_BUFFER_WRITE_COMBINED (1u << 0)

NEURON_EXPORT neuron_status neuron_buffer_create(neuron_device *dev, uint64_t size,
                                                 neuron_region region, uint32_t flags,
                                                 neuron_buffer **out);
NEURON_EXPORT void neuron_buffer_destroy(neuron_buffer *buf);
NEURON_EXPORT uint64_t neuron_buffer_size(const neuron_buffer *buf);
/* The buffer's CPU mapping (created on first use), valid while it lives. */
NEURON_EXPORT neuron_status neuron_buffer_map(const neuron_buffer *buf, void **ptr, uint64_t *size);

/* ---- fences and copies ---- */

/*
 * Queues a DMA copy of @size bytes after the @num_deps fences in @deps;
 * *out receives the copy's fence.
 */
NEURON_EXPORT neuron_status neuron_copy(neuron_device *dev, const neuron_buffer *dst,
                                        uint64_t dst_offset, const neuron_buffer *src,
                                        uint64_t src_offset, uint64_t size,
                                        const neuron_fence *const *deps, size_t num_deps,
                                        neuron_fence **out);
/*
 * Waits up to @timeout_ns (negative: forever). NEURON_OK once done,
 * NEURON_ERR_TIMEOUT if still running, or the failure of the job or copy
 * (NEURON_ERR_JOB_FAULT, _JOB_TIMEOUT, _JOB_ABORTED, ...).
 */
NEURON_EXPORT neuron_status neuron_fence_wait(const neuron_fence *fence, int64_t timeout_ns);
/*
 * When the job or copy completed (its fence signalled), in nanoseconds of
 * CLOCK_MONOTONIC: NEURON_OK with *ns set once done, NEURON_ERR_TIMEOUT
 * while it is still running (it does not wait), or its failure as
 * neuron_fence_wait() reports it.
 */
NEURON_EXPORT neuron_status neuron_fence_completed_at(const neuron_fence *fence, int64_t *ns);
NEURON_EXPORT void neuron_fence_destroy(neuron_fence *fence);

/* ---- sub-allocator ---- */

typedef struct neuron_pool_stats {
    uint64_t bytes_in_use;
    uint64_t peak_bytes_in_use;
    uint64_t allocations;
    uint64_t total_allocations;
    uint64_t chunks;
    uint64_t chunk_bytes;
} neuron_pool_stats;

/* chunk_size 0: 16 MiB; min_alignment 0: 64. */
NEURON_EXPORT neuron_status neuron_pool_create(neuron_device *dev, neuron_region region,
                                               uint64_t chunk_size, uint64_t min_alignment,
                                               neuron_pool **out);
NEURON_EXPORT void neuron_pool_destroy(neuron_pool *pool);
NEURON_EXPORT neuron_status neuron_pool_alloc(neuron_pool *pool, uint64_t size, uint64_t alignment,
                                              neuron_allocation **out);
NEURON_EXPORT void neuron_allocation_free(neuron_allocation *a);
/* The buffer an allocation lives in (owned by the pool) and its offset. */
NEURON_EXPORT const neuron_buffer *neuron_allocation_buffer(const neuron_allocation *a,
                                                            uint64_t *offset, uint64_t *size);
NEURON_EXPORT neuron_status neuron_pool_get_stats(const neuron_pool *pool, neuron_pool_stats *out);

/* ---- programs ---- */

typedef enum neuron_dtype {
    NEURON_DTYPE_FP32 = 1,
    NEURON_DTYPE_BF16 = 2,
    NEURON_DTYPE_FP16 = 3,
    NEURON_DTYPE_INT32 = 4
} neuron_dtype;
typedef enum neuron_direction {
    NEURON_DIR_IN = 1,
    NEURON_DIR_OUT = 2,
    NEURON_DIR_INOUT = 3,
    NEURON_DIR_CONST = 4
} neuron_direction;

typedef struct neuron_arg_info {
    const char *name; /* valid while the program lives */
    neuron_dtype dtype;
    neuron_direction direction;
    uint32_t rank;
    uint32_t shape[6];
    uint32_t slot;
    uint64_t size; /* bytes */
} neuron_arg_info;

/*
 * Checks a container without keeping it. On NEURON_ERR_INVALID_PROGRAM,
 * *bad_offset (if not NULL) receives the offending byte offset and
 * neuron_last_error() the reason.
 */
NEURON_EXPORT neuron_status neuron_program_validate(const void *data, size_t size,
                                                    uint64_t *bad_offset);
NEURON_EXPORT neuron_status neuron_program_parse(const void *data, size_t size,
                                                 neuron_program **out);
NEURON_EXPORT neuron_status neuron_program_load_file(const char *path, neuron_program **out);
NEURON_EXPORT void neuron_program_destroy(neuron_program *p);
NEURON_EXPORT const char *neuron_program_name(const neuron_program *p);
NEURON_EXPORT size_t neuron_program_num_args(const neuron_program *p);
NEURON_EXPORT neuron_status neuron_program_arg(const neuron_program *p, size_t index,
                                               neuron_arg_info *out);
/* *text receives a NUL-terminated listing, to be freed with neuron_free(). */
NEURON_EXPORT neuron_status neuron_program_disassemble(const neuron_program *p, char **text);

/* ---- loading and running ---- */

NEURON_EXPORT neuron_status neuron_program_upload(neuron_device *dev, const neuron_program *p,
                                                  neuron_loaded_program **out);
NEURON_EXPORT void neuron_loaded_program_destroy(neuron_loaded_program *lp);

NEURON_EXPORT neuron_status neuron_queue_create(neuron_device *dev, uint32_t core,
                                                neuron_queue **out);
NEURON_EXPORT void neuron_queue_destroy(neuron_queue *q);

/*
 * One argument of a job: a buffer range, or (when @allocation is set) a
 * pool allocation; size 0 means "to the end of the buffer".
 */
typedef struct neuron_binding {
    const char *name;
    const neuron_buffer *buffer;
    const neuron_allocation *allocation;
    uint64_t offset;
    uint64_t size;
} neuron_job_arg;

NEURON_EXPORT neuron_status neuron_submit(neuron_queue *q, const neuron_loaded_program *lp,
                                          const neuron_job_arg *args, size_t num_args,
                                          const neuron_fence *const *deps, size_t num_deps,
                                          neuron_fence **out);

/* One job of neuron_submit_batch(): what neuron_submit() takes. */
typedef struct neuron_batch_job {
    const neuron_loaded_program *program;
    const neuron_job_arg *args;
    size_t num_args;
    const neuron_fence *const *deps;
    size_t num_deps;
} neuron_batch_job;

/*
 * neuron_submit() of @count jobs, in order, handed to the driver together
 * (Queue::submit of a span, docs/libneuron.md): @out receives @count
 * fences, or, on an error, none (nothing of the batch is left running).
 */
NEURON_EXPORT neuron_status neuron_submit_batch(neuron_queue *q, const neuron_batch_job *jobs,
                                                size_t count, neuron_fence **out);

/* ---- profiling (docs/profiling.md) ---- */

typedef struct neuron_profile neuron_profile;

/*
 * Room for the trace of one job: @max_records executed instructions
 * (0: 65536); later ones are dropped and the trace is marked truncated.
 * NEURON_ERR_NOT_SUPPORTED without NEURON_CAP_PROFILE_BIT.
 */
NEURON_EXPORT neuron_status neuron_profile_create(neuron_device *dev, uint64_t max_records,
                                                  neuron_profile **out);
NEURON_EXPORT void neuron_profile_destroy(neuron_profile *p);

/* neuron_submit(), profiled: the device writes the job's trace into @profile. */
NEURON_EXPORT neuron_status neuron_submit_profiled(neuron_queue *q, const neuron_loaded_program *lp,
                                                   const neuron_job_arg *args, size_t num_args,
                                                   const neuron_fence *const *deps, size_t num_deps,
                                                   neuron_profile *profile, neuron_fence **out);

/* The totals of a profiled job's trace (the header of hw/README.md 4.8). */
typedef struct neuron_trace_info {
    uint64_t records;      /* instruction records in the trace */
    uint64_t instructions; /* instructions the job executed */
    uint64_t cycles;       /* the job's cycles */
    uint64_t dma_bytes;
    uint32_t flags;                /* bit 0: truncated, bit 1: a record could not be written */
    uint32_t status;               /* the job's final device status */
    uint32_t sbuf_high, psum_high; /* bytes per partition written */
} neuron_trace_info;

/*
 * After the job's fence has signalled: the trace's totals; the raw trace
 * (header and records) into @buf when @cap is large enough, its length in
 * *@size either way (NEURON_ERR_INVALID_ARGUMENT when it does not fit or
 * the buffer holds no valid trace).
 */
NEURON_EXPORT neuron_status neuron_profile_info(const neuron_profile *p, neuron_trace_info *out);
NEURON_EXPORT neuron_status neuron_profile_trace(const neuron_profile *p, void *buf, size_t cap,
                                                 size_t *size);

/* ---- collectives (neuron/collectives.hpp, docs/distributed.md) ---- */

typedef struct neuron_comm neuron_comm;
typedef struct neuron_work neuron_work;

typedef enum neuron_reduce_op {
    NEURON_REDUCE_SUM = 0,
    NEURON_REDUCE_AVG = 1,
    NEURON_REDUCE_MAX = 2,
    NEURON_REDUCE_MIN = 3
} neuron_reduce_op;

typedef enum neuron_collective_kind {
    NEURON_ALL_REDUCE = 1,     /* send -> recv (count each) */
    NEURON_BROADCAST = 2,      /* send of rank root -> send of every rank */
    NEURON_REDUCE = 3,         /* send -> recv of rank root (recv unused elsewhere) */
    NEURON_ALL_GATHER = 4,     /* send (count) -> recv (nranks * count) */
    NEURON_REDUCE_SCATTER = 5, /* send (nranks * count) -> recv (count) */
    NEURON_ALL_TO_ALL = 6,     /* send -> recv (nranks * count each) */
    NEURON_SEND = 7,           /* send -> rank root (the peer) */
    NEURON_RECV = 8,           /* recv <- rank root (the peer) */
    NEURON_BARRIER = 9
} neuron_collective_kind;

/*
 * A communicator of @nranks ranks: rank i is core @cores[i] of @devices[i]
 * (the devices stay open while it exists). @timeout_ms: how long a
 * collective may take from its first rank's call (0: 30 s); @chunk_bytes:
 * the most bytes one reduction job or pipelined copy handles (0: 1 MiB).
 */
NEURON_EXPORT neuron_status neuron_comm_create(neuron_device *const *devices, const uint32_t *cores,
                                               size_t nranks, int64_t timeout_ms,
                                               uint64_t chunk_bytes, neuron_comm **out);
NEURON_EXPORT void neuron_comm_destroy(neuron_comm *comm);

/* One rank's call of a collective. Buffers: from the offset to their end. */
typedef struct neuron_collective_args {
    neuron_collective_kind kind;
    uint32_t rank;
    const neuron_buffer *send; /* NULL where unused */
    uint64_t send_offset;
    const neuron_buffer *recv; /* NULL where unused */
    uint64_t recv_offset;
    uint64_t count; /* elements of dtype */
    neuron_dtype dtype;
    neuron_reduce_op op;
    uint32_t root; /* broadcast and reduce: the root; send and recv: the peer */
} neuron_collective_args;

/*
 * Calls the collective for args->rank; returns at once with *out, to wait
 * for and destroy. Every rank calls each collective, in the same order.
 */
NEURON_EXPORT neuron_status neuron_collective(neuron_comm *comm, const neuron_collective_args *args,
                                              neuron_work **out);
/*
 * Waits up to @timeout_ns (negative: until the communicator's timeout):
 * NEURON_OK once this rank's part is done, NEURON_ERR_TIMEOUT when
 * @timeout_ns passed first or the collective timed out (neuron_last_error()
 * names the ranks that did not take part), or its failure.
 */
NEURON_EXPORT neuron_status neuron_work_wait(const neuron_work *work, int64_t timeout_ns);
NEURON_EXPORT void neuron_work_destroy(neuron_work *work);

#ifdef __cplusplus
}
#endif

#endif /* NEURON_NEURON_H */
