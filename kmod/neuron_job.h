/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: the job object, one type for SUBMIT (a program on a core) and
 * COPY (a copy on a DMA engine).
 */
#ifndef __NEURON_JOB_H__
#define __NEURON_JOB_H__

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/types.h>

#include "neuron_regs.h"

struct dma_fence;
struct drm_file;
struct neuron_bo;
struct neuron_client;
struct neuron_device;
struct neuron_dma_seg;
struct neuron_host_range;
struct neuron_table_pool;
struct sg_table;

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
 * @ndev: the device
 * @client: the submitting file's accounting (counted reference)
 * @kind: &enum neuron_job_kind
 * @fence: signalled when the hardware is done with the job (or it
 *	failed); on the fence context of the submitting file's lane of
 *	its ring, made when the job is pushed and kept when an innocent job
 *	runs again after a reset
 * @node: entry in &neuron_file_ring.waiting until the job is written,
 *	then in &neuron_ring.inflight until it completes
 * @done: entry in &neuron_exec.done once its fence signalled, until it
 *	is released
 * @deps: fences the job waits for before it is written, one reference
 *	each; the signalled ones are dropped from the end
 * @num_deps: entries of @deps still held
 * @seqno: sequence number on its ring; the device job id
 * @bos: buffers the job uses, one reference each
 * @ranges: for each host buffer in @bos, its pinned range (else NULL)
 * @num_bos: entries in @bos and @ranges
 * @table: EXEC: binding table and SG arrays: a slot of its core's pool
 *	or, if it is larger or the pool is exhausted, coherent DMA memory of
 *	its own
 * @table_dma: EXEC: bus address of @table
 * @table_size: EXEC: bytes of @table
 * @table_pool: EXEC: the pool @table is a slot of, or NULL
 * @table_slot: EXEC: that slot
 * @num_bindings: EXEC: slots in the table, the program's included
 * @program_size: EXEC: bytes of the program image
 * @profile: EXEC: %DRM_NEURON_SUBMIT_F_PROFILE; the device writes the job's
 *	trace into the last user slot, the one before the program's
 * @status: EXEC: NEURON_JOB_STATUS_* of the final completion entry
 * @info: EXEC: its info field
 * @segs: COPY: the copy split into descriptors
 * @num_segs: COPY: entries in @segs
 * @next_seg: COPY: first segment not yet written to the ring
 * @done_segs: COPY: segments completed by the engine
 * @dma_status: COPY: first error status reported by the engine
 * @bytes: COPY: bytes to copy
 */
struct neuron_job {
	struct neuron_device *ndev;
	struct neuron_client *client;
	enum neuron_job_kind kind;
	struct dma_fence *fence;
	struct list_head node;
	struct llist_node done;
	struct dma_fence **deps;
	u32 num_deps;
	u64 seqno;
	struct neuron_bo **bos;
	struct neuron_host_range **ranges;
	u32 num_bos;

	void *table;
	dma_addr_t table_dma;
	size_t table_size;
	struct neuron_table_pool *table_pool;
	int table_slot;
	u32 num_bindings;
	u32 program_size;
	bool profile;
	u32 status;
	u32 info;

	struct neuron_dma_seg *segs;
	u32 num_segs;
	u32 next_seg;
	u32 done_segs;
	u32 dma_status;
	u64 bytes;
};

struct neuron_job *neuron_job_alloc(struct neuron_device *ndev,
				    struct neuron_client *client,
				    enum neuron_job_kind kind, u32 max_bos);
int neuron_job_add_bo(struct neuron_job *job, struct drm_file *file,
		      u32 handle, u64 offset, u64 size,
		      struct neuron_bo **bo_out, struct sg_table **sgt_out,
		      u64 *sg_offset);
void neuron_job_release(struct neuron_job *job);

#endif /* __NEURON_JOB_H__ */
