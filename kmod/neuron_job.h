/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: jobs on the core queues and the DMA engines, their scheduling,
 * completion, timeout and reset.
 */
#ifndef __NEURON_JOB_H__
#define __NEURON_JOB_H__

#include <drm/gpu_scheduler.h>
#include <drm/neuron_accel.h>
#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "neuron_regs.h"

struct drm_device;
struct drm_file;
struct neuron_bo;
struct neuron_device;
struct neuron_dma_engine;
struct neuron_dma_seg;
struct neuron_host_range;
struct sg_table;

/*
 * A ring size the device accepts is a power of two in 2..4096: exactly the
 * divisors of NEURON_RING_MAX_ENTRIES above 1.
 */
#define NEURON_RING_SIZE_OK(n)	(!(NEURON_RING_MAX_ENTRIES % (n)))

/* Job ring and completion ring sizes of every core queue. */
#define NEURON_QUEUE_ENTRIES		256
#define NEURON_CPL_ENTRIES		1024

/**
 * struct neuron_queue - one core's job queue
 * @ndev: the device
 * @core: core index
 * @sched: the scheduler feeding this queue; one credit per job, at most
 *	%NEURON_QUEUE_ENTRIES jobs on the ring
 * @lock: protects the rings, @tail, @cpl_head, @inflight and the hardware
 *	fences of the jobs on @inflight (signalled only under it)
 * @ring: job ring (coherent DMA memory)
 * @ring_dma: bus address of @ring
 * @cpl: completion ring (coherent DMA memory)
 * @cpl_dma: bus address of @cpl
 * @tail: producer index of the job ring (what was last written to Q_TAIL)
 * @cpl_head: consumer index of the completion ring
 * @inflight: jobs written to the ring and not completed, in ring order
 * @fence_context: dma_fence context of the hardware fences
 * @fence_seqno: last hardware fence seqno used on @fence_context
 * @submit_seqno: last sequence number given to a job of this core (its
 *	device job id and &drm_neuron_submit.seqno)
 * @resets: core resets done by the driver (read locklessly)
 * @name: scheduler and timeline name
 */
struct neuron_queue {
	struct neuron_device *ndev;
	u32 core;
	struct drm_gpu_scheduler sched;
	/* Protects the rings, indices, inflight list and their hw fences. */
	struct mutex lock;
	struct neuron_job_desc *ring;
	dma_addr_t ring_dma;
	struct neuron_cpl_entry *cpl;
	dma_addr_t cpl_dma;
	u32 tail;
	u32 cpl_head;
	struct list_head inflight;
	u64 fence_context;
	u64 fence_seqno;
	atomic64_t submit_seqno;
	atomic_t resets;
	char name[24];
};

/**
 * struct neuron_exec - the execution state of a device
 * @queues: one per core (&neuron_hw.num_cores)
 * @engines: one per DMA engine (&neuron_hw.num_dma)
 * @num_queues: entries of @queues whose scheduler is initialized
 * @num_engines: entries of @engines whose scheduler is initialized
 * @dma_scheds: the engines' schedulers, the list behind the files'
 *	any-engine entities
 * @reset_wq: ordered workqueue running every scheduler's timeout handler
 *	and @recover_work: resets never run concurrently
 * @recover_work: handles queue/engine halts and fatal device errors
 * @jobs_alive: jobs created and not yet freed
 * @jobs_idle: woken when @jobs_alive drops to zero
 * @device_resets: full device resets done by the driver
 * @ready: the schedulers exist and the rings are programmed
 * @unplugged: the device is gone; nothing may touch the hardware
 */
struct neuron_exec {
	struct neuron_queue *queues;
	struct neuron_dma_engine *engines;
	u32 num_queues;
	u32 num_engines;
	struct drm_gpu_scheduler *dma_scheds[NEURON_MAX_DMA_ENGINES];
	struct workqueue_struct *reset_wq;
	struct work_struct recover_work;
	atomic_t jobs_alive;
	wait_queue_head_t jobs_idle;
	atomic_t device_resets;
	bool ready;
	bool unplugged;
};

/**
 * struct neuron_client - accounting of one open file, shared with its jobs
 * @ref: the file holds one reference, every job another
 * @jobs_inflight: jobs and copies submitted and not yet freed
 * @jobs_submitted: SUBMIT jobs accepted
 * @copies_submitted: COPY jobs accepted
 * @busy_ns: per core, nanoseconds the core spent on this client's jobs
 *	(from the completion entries' cycle counts)
 * @dma_bytes: bytes copied by this client's completed copies
 * @last_fault: device status of this client's last failed job (0: none)
 * @last_fault_info: its completion entry's info
 * @last_fault_seqno: its seqno
 * @host_pinned: bytes of host buffers pinned for this file's jobs and
 *	copies (neuron_bo_dma_get()), limited by neuron_host_pin_file_limit()
 *
 * Counters are atomics or written with WRITE_ONCE(); readers take no lock.
 */
struct neuron_client {
	struct kref ref;
	atomic_t jobs_inflight;
	atomic64_t jobs_submitted;
	atomic64_t copies_submitted;
	atomic64_t busy_ns[NEURON_MAX_CORES];
	atomic64_t dma_bytes;
	u32 last_fault;
	u32 last_fault_info;
	u64 last_fault_seqno;
	atomic64_t host_pinned;
};

/**
 * struct neuron_file_exec - per-file scheduling state
 * @submit_lock: makes arming and pushing a job one step, so that jobs of
 *	one entity reach the scheduler in sequence-number order
 * @client: accounting, outlives the file while its jobs run
 * @core_entities: one scheduler entity per core queue
 * @dma_entities: one scheduler entity per DMA engine
 * @dma_any: entity spread over all DMA engines, for %DRM_NEURON_ENGINE_ANY
 * @num_cores: entries of @core_entities that were initialized
 * @num_dma: entries of @dma_entities that were initialized
 * @dma_any_init: @dma_any was initialized
 */
struct neuron_file_exec {
	/* Serializes drm_sched_job_arm() and drm_sched_entity_push_job(). */
	struct mutex submit_lock;
	struct neuron_client *client;
	struct drm_sched_entity core_entities[NEURON_MAX_CORES];
	struct drm_sched_entity dma_entities[NEURON_MAX_DMA_ENGINES];
	struct drm_sched_entity dma_any;
	u32 num_cores;
	u32 num_dma;
	bool dma_any_init;
};

/**
 * enum neuron_job_kind - what a job does
 * @NEURON_JOB_EXEC: a program on a core queue (SUBMIT)
 * @NEURON_JOB_COPY: a copy on a DMA engine (COPY)
 */
enum neuron_job_kind {
	NEURON_JOB_EXEC,
	NEURON_JOB_COPY,
};

/**
 * struct neuron_job - a SUBMIT or COPY job
 * @base: the scheduler job
 * @ndev: the device
 * @client: the submitting file's accounting (counted reference)
 * @kind: &enum neuron_job_kind
 * @hw_fence: fence signalled when the hardware is done with the job (or
 *	it failed); created at the first run, reused when an innocent job is
 *	run again after a reset
 * @node: entry in the queue's or engine's list of jobs on the hardware
 * @seqno: sequence number on its core or engine; the device job id
 * @guilty_err: if non-zero, the job must not run (again): its hardware
 *	fence is signalled with this error when it is next run
 * @bos: buffers the job uses, one reference each
 * @ranges: for each host buffer in @bos, its pinned range (else NULL)
 * @num_bos: entries in @bos and @ranges
 * @queue: EXEC: the core queue
 * @table: EXEC: binding table and SG arrays (coherent DMA memory)
 * @table_dma: EXEC: bus address of @table
 * @table_size: EXEC: bytes of @table
 * @num_bindings: EXEC: slots in the table, the program's included
 * @program_size: EXEC: bytes of the program image
 * @status: EXEC: NEURON_JOB_STATUS_* of the final completion entry
 * @info: EXEC: its info field
 * @engine: COPY: the DMA engine, chosen when the job is armed
 * @segs: COPY: the copy split into descriptors
 * @num_segs: COPY: entries in @segs
 * @next_seg: COPY: first segment not yet written to the ring
 * @done_segs: COPY: segments completed by the engine
 * @dma_status: COPY: first error status reported by the engine
 * @bytes: COPY: bytes to copy
 */
struct neuron_job {
	struct drm_sched_job base;
	struct neuron_device *ndev;
	struct neuron_client *client;
	enum neuron_job_kind kind;
	struct dma_fence *hw_fence;
	struct list_head node;
	u64 seqno;
	int guilty_err;
	struct neuron_bo **bos;
	struct neuron_host_range **ranges;
	u32 num_bos;

	struct neuron_queue *queue;
	void *table;
	dma_addr_t table_dma;
	size_t table_size;
	u32 num_bindings;
	u32 program_size;
	u32 status;
	u32 info;

	struct neuron_dma_engine *engine;
	struct neuron_dma_seg *segs;
	u32 num_segs;
	u32 next_seg;
	u32 done_segs;
	u32 dma_status;
	u64 bytes;
};

static inline struct neuron_job *to_neuron_job(struct drm_sched_job *job)
{
	return container_of(job, struct neuron_job, base);
}

extern unsigned int neuron_job_timeout_ms;
extern unsigned int neuron_dma_timeout_ms;

int neuron_exec_init(struct neuron_device *ndev);
void neuron_exec_unplug(struct neuron_device *ndev);
int neuron_exec_file_init(struct neuron_device *ndev,
			  struct neuron_file_exec *fexec);
void neuron_exec_file_fini(struct neuron_file_exec *fexec);

void neuron_queue_irq(struct neuron_device *ndev, u32 core);
void neuron_exec_error_irq(struct neuron_device *ndev);

int neuron_submit_ioctl(struct drm_device *drm, void *data,
			struct drm_file *file);

/* Shared with neuron_dma.c. */
int neuron_job_begin_run_locked(struct neuron_job *job, u64 context,
				u64 *seqno, int *idx);
void neuron_job_signal_locked(struct neuron_job *job, int error);
int neuron_job_add_bo(struct neuron_job *job, struct drm_file *file,
		      u32 handle, u64 offset, u64 size,
		      struct neuron_bo **bo_out, struct sg_table **sgt_out,
		      u64 *sg_offset);
void neuron_client_put(struct neuron_client *client);
int neuron_job_push(struct neuron_job *job, struct drm_file *file,
		    struct drm_sched_entity *entity,
		    const struct drm_neuron_sync *in_syncs, u32 num_in_syncs,
		    const struct drm_neuron_sync *out_sync, u64 *seqno);
struct neuron_job *neuron_job_alloc(struct neuron_device *ndev,
				    struct drm_file *file,
				    enum neuron_job_kind kind, u32 max_bos);
void neuron_job_put_unarmed(struct neuron_job *job);
void neuron_job_free(struct drm_sched_job *sched_job);
struct drm_neuron_sync *neuron_copy_in_syncs(u64 uptr, u32 count);
int neuron_recover_wait(struct neuron_device *ndev, void __iomem *reg,
			u32 bit);
void neuron_device_recover(struct neuron_device *ndev,
			   struct drm_gpu_scheduler *bad_sched,
			   struct drm_sched_job *bad);

#endif /* __NEURON_JOB_H__ */
