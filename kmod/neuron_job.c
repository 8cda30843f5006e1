// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: jobs on the core queues (SUBMIT), the parts of job handling
 * shared with the DMA engines (COPY), timeouts and resets.
 *
 * Every core queue and every DMA engine has its own drm_gpu_scheduler; each
 * open file has one scheduler entity per queue and per engine (plus one
 * spread over all engines). A job holds a reference on each buffer it
 * uses, and keeps host buffers pinned and DMA-mapped, until the scheduler
 * frees it after its fence signalled.
 *
 * Hardware fences: run_job() gives each job a fence of its queue's or
 * engine's context, signalled (under the queue's or engine's lock) by the
 * completion interrupt, by a reset, or when the device goes away.
 *
 * Recovery: all scheduler timeout handlers and the error interrupt's work
 * run on one ordered workqueue, so at most one reset runs at a time.
 *  - A job timeout resets that core (or DMA engine) only: the scheduler is
 *    stopped, the core reset, the timed-out job's fence gets -ETIMEDOUT,
 *    the other jobs that were on the ring run again, in order.
 *  - A halted queue or engine is reset the same way; the job that was
 *    running gets -EIO.
 *  - A fatal device error resets the whole device: every scheduler is
 *    stopped, every ring reprogrammed, and every job that was on the
 *    hardware fails with -ECANCELED (the device lost it and its buffers may
 *    be half written, so it is not run again); jobs not yet handed to the
 *    hardware run afterwards. A KOBJ_CHANGE uevent with NEURON_EVENT=reset
 *    is sent on the accel device.
 */
#include <drm/drm_device.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_managed.h>
#include <drm/drm_syncobj.h>
#include <drm/gpu_scheduler.h>
#include <drm/neuron_accel.h>
#include <linux/dma-fence-chain.h>
#include <linux/dma-fence.h>
#include <linux/dma-mapping.h>
#include <linux/iopoll.h>
#include <linux/kobject.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "neuron_compat.h"
#include "neuron_dma.h"
#include "neuron_drv.h"
#include "neuron_gem.h"
#include "neuron_hw.h"
#include "neuron_job.h"
#include "neuron_sysfs.h"
#include "neuron_trace.h"

unsigned int neuron_job_timeout_ms = 5000;
module_param_named(job_timeout_ms, neuron_job_timeout_ms, uint, 0644);
MODULE_PARM_DESC(job_timeout_ms,
		 "Time a job may run on a core before the core is reset, in ms; read when a device is bound (default: 5000)");

unsigned int neuron_dma_timeout_ms = 30000;
module_param_named(dma_timeout_ms, neuron_dma_timeout_ms, uint, 0644);
MODULE_PARM_DESC(dma_timeout_ms,
		 "Time a copy may take before its DMA engine is reset, in ms; read when a device is bound (default: 30000)");

/* Time between two reads of a register while a core or engine resets. */
#define NEURON_RECOVER_POLL_US	10

static_assert(DRM_NEURON_BIND_READ == NEURON_BIND_READ);
static_assert(DRM_NEURON_BIND_WRITE == NEURON_BIND_WRITE);
static_assert(DRM_NEURON_BIND_EXEC == NEURON_BIND_EXEC);
static_assert(NEURON_RING_SIZE_OK(NEURON_QUEUE_ENTRIES));
static_assert(NEURON_RING_SIZE_OK(NEURON_CPL_ENTRIES));

/* ------------------------------------------------------------------------
 * Hardware fences
 */

/**
 * struct neuron_hw_fence - fence signalled when the hardware is done
 * @base: the fence; first member, freed with dma_fence_free()
 * @lock: the fence's lock
 */
struct neuron_hw_fence {
	struct dma_fence base;
	spinlock_t lock; /* see dma_fence_init() */
};

static const char *neuron_fence_get_driver_name(struct dma_fence *fence)
{
	return DRIVER_NAME;
}

static const char *neuron_fence_get_timeline_name(struct dma_fence *fence)
{
	return "neuron-hw";
}

static const struct dma_fence_ops neuron_hw_fence_ops = {
	.get_driver_name = neuron_fence_get_driver_name,
	.get_timeline_name = neuron_fence_get_timeline_name,
};

static struct dma_fence *neuron_hw_fence_create(u64 context, u64 seqno)
{
	struct neuron_hw_fence *fence;

	fence = kzalloc(sizeof(*fence), GFP_KERNEL);
	if (!fence)
		return NULL;
	spin_lock_init(&fence->lock);
	dma_fence_init(&fence->base, &neuron_hw_fence_ops, &fence->lock,
		       context, seqno);
	return &fence->base;
}

/**
 * neuron_job_signal_locked() - signal a job's hardware fence
 * @job: the job; the lock of its queue or engine is held
 * @error: 0 or the negative errno the fence reports
 */
void neuron_job_signal_locked(struct neuron_job *job, int error)
{
	if (!job->hw_fence || dma_fence_is_signaled(job->hw_fence))
		return;
	if (error)
		dma_fence_set_error(job->hw_fence, error);
	dma_fence_signal(job->hw_fence);
}

/**
 * neuron_job_begin_run_locked() - the common start of run_job for jobs and copies
 * @job: the job; the lock of its queue or engine is held
 * @context: fence context of the queue or engine
 * @seqno: its last fence seqno, advanced when a fence is created
 * @idx: drm_dev_enter() cookie, set when 1 is returned
 *
 * Creates the job's hardware fence on its first run. A job that completed
 * before a reset, that carries an error or whose device is not ready or
 * gone is not run: its fence is (or already was) signalled.
 *
 * Return: 1 to put the job on the hardware (drm_dev_exit(*idx) follows),
 * 0 when it is not run, -ENOMEM.
 */
int neuron_job_begin_run_locked(struct neuron_job *job, u64 context,
				u64 *seqno, int *idx)
{
	struct neuron_device *ndev = job->ndev;
	int err;

	if (!job->hw_fence) {
		job->hw_fence = neuron_hw_fence_create(context, ++*seqno);
		if (!job->hw_fence)
			return -ENOMEM;
	} else if (dma_fence_is_signaled(job->hw_fence)) {
		/* It completed before a reset: nothing to run again. */
		return 0;
	}

	err = job->guilty_err ?: job->base.s_fence->finished.error;
	if (!err && !ndev->hw.ready)
		err = -EIO;
	if (!err && !drm_dev_enter(&ndev->drm, idx))
		err = -ENODEV;
	if (err) {
		neuron_job_signal_locked(job, err);
		return 0;
	}
	return 1;
}

/* ------------------------------------------------------------------------
 * Jobs
 */

static void neuron_client_release(struct kref *ref)
{
	kfree(container_of(ref, struct neuron_client, ref));
}

/**
 * neuron_client_put() - drop a reference on a file's accounting
 * @client: the accounting
 */
void neuron_client_put(struct neuron_client *client)
{
	kref_put(&client->ref, neuron_client_release);
}

struct neuron_job *neuron_job_alloc(struct neuron_device *ndev,
				    struct drm_file *file,
				    enum neuron_job_kind kind, u32 max_bos)
{
	struct neuron_client *client = to_neuron_file(file)->exec.client;
	struct neuron_job *job;

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job)
		return NULL;
	job->bos = kcalloc(max_bos, sizeof(*job->bos), GFP_KERNEL);
	job->ranges = kcalloc(max_bos, sizeof(*job->ranges), GFP_KERNEL);
	if (!job->bos || !job->ranges) {
		kfree(job->ranges);
		kfree(job->bos);
		kfree(job);
		return NULL;
	}
	job->ndev = ndev;
	job->kind = kind;
	INIT_LIST_HEAD(&job->node);
	kref_get(&client->ref);
	job->client = client;
	atomic_inc(&client->jobs_inflight);
	atomic_inc(&ndev->exec.jobs_alive);
	return job;
}

/* Drops everything a job holds; the scheduler is done with it. */
static void neuron_job_release(struct neuron_job *job)
{
	struct neuron_device *ndev = job->ndev;
	u32 i;

	for (i = 0; i < job->num_bos; i++) {
		if (job->ranges[i])
			neuron_bo_dma_put(job->ranges[i]);
		drm_gem_object_put(&job->bos[i]->base);
	}
	kfree(job->ranges);
	kfree(job->bos);
	if (job->table)
		dma_free_coherent(ndev->drm.dev, job->table_size, job->table,
				  job->table_dma);
	kvfree(job->segs);
	if (job->hw_fence)
		dma_fence_put(job->hw_fence);
	atomic_dec(&job->client->jobs_inflight);
	neuron_client_put(job->client);
	kfree(job);

	if (atomic_dec_and_test(&ndev->exec.jobs_alive))
		wake_up_all(&ndev->exec.jobs_idle);
}

/**
 * neuron_job_put_unarmed() - free a job that was never initialized for the
 * scheduler
 * @job: the job
 */
void neuron_job_put_unarmed(struct neuron_job *job)
{
	neuron_job_release(job);
}

/**
 * neuron_job_free() - &drm_sched_backend_ops.free_job of every scheduler
 * @sched_job: the job, its fences signalled
 */
void neuron_job_free(struct drm_sched_job *sched_job)
{
	drm_sched_job_cleanup(sched_job);
	neuron_job_release(to_neuron_job(sched_job));
}

/**
 * neuron_job_add_bo() - look up a buffer range for a job and hold it
 * @job: the job
 * @file: the file whose handle it is
 * @handle: GEM handle
 * @offset: first byte of the range the job uses
 * @size: bytes of the range, non-zero
 * @bo_out: the buffer
 * @sgt_out: for a host buffer, the DMA-mapped SG table of the range's
 *	pages (else NULL)
 * @sg_offset: where the range starts: in @sgt_out for a host buffer, in
 *	the buffer for a device buffer
 *
 * The job keeps a reference on the buffer and, for a host buffer, the
 * range's pages pinned and DMA-mapped (neuron_bo_dma_get()) until it is
 * freed.
 *
 * Return: 0, -ENOENT for an unknown handle, -EINVAL for a range outside
 * the buffer, or another negative errno (-EDQUOT: pin limit).
 */
int neuron_job_add_bo(struct neuron_job *job, struct drm_file *file,
		      u32 handle, u64 offset, u64 size,
		      struct neuron_bo **bo_out, struct sg_table **sgt_out,
		      u64 *sg_offset)
{
	struct neuron_host_range *range = NULL;
	struct drm_gem_object *obj;
	struct neuron_bo *bo;
	u64 end;
	int ret;

	obj = drm_gem_object_lookup(file, handle);
	if (!obj)
		return -ENOENT;
	bo = to_neuron_bo(obj);
	ret = -EINVAL;
	if (check_add_overflow(offset, size, &end) || end > obj->size)
		goto err_put;

	*sg_offset = offset;
	if (bo->region == DRM_NEURON_BO_HOST) {
		range = neuron_bo_dma_get(bo, job->client, offset, size);
		if (IS_ERR(range)) {
			ret = PTR_ERR(range);
			goto err_put;
		}
		*sg_offset -= range->start;
	}
	job->bos[job->num_bos] = bo;
	job->ranges[job->num_bos++] = range;
	*bo_out = bo;
	*sgt_out = range ? &range->sgt : NULL;
	return 0;

err_put:
	drm_gem_object_put(obj);
	return ret;
}

/**
 * neuron_copy_in_syncs() - copy and check an array of in-syncs from user
 * @uptr: user pointer
 * @count: entries
 *
 * Return: the array (kvfree() it; NULL when @count is 0) or an ERR_PTR():
 * -EINVAL for too many entries or a non-zero pad, -EFAULT.
 */
struct drm_neuron_sync *neuron_copy_in_syncs(u64 uptr, u32 count)
{
	struct drm_neuron_sync *syncs;
	u32 i;

	if (count > DRM_NEURON_MAX_IN_SYNCS)
		return ERR_PTR(-EINVAL);
	if (!count)
		return NULL;
	syncs = vmemdup_array_user(u64_to_user_ptr(uptr), count,
				   sizeof(*syncs));
	if (IS_ERR(syncs))
		return syncs;
	for (i = 0; i < count; i++) {
		if (syncs[i].pad) {
			kvfree(syncs);
			return ERR_PTR(-EINVAL);
		}
	}
	return syncs;
}

/* Assigns the job its per-queue or per-engine sequence number. */
static void neuron_job_number(struct neuron_job *job)
{
	if (job->kind == NEURON_JOB_EXEC) {
		job->seqno = atomic64_inc_return(&job->queue->submit_seqno);
	} else {
		job->engine = container_of(job->base.sched,
					   struct neuron_dma_engine, sched);
		job->seqno = atomic64_inc_return(&job->engine->submit_seqno);
	}
}

/**
 * neuron_job_push() - hand a prepared job to the scheduler
 * @job: the job, with its buffers and hardware description
 * @file: the submitting file
 * @entity: the file's entity to queue it on
 * @in_syncs: fences to wait for (@num_in_syncs entries, checked)
 * @num_in_syncs: entries in @in_syncs
 * @out_sync: the syncobj (point) that receives the job's fence
 * @seqno: receives the job's sequence number
 *
 * Consumes @job whatever happens.
 *
 * Return: 0, -ENOENT for an unknown syncobj, -EINVAL for an in-sync
 * without a fence, or another negative errno.
 */
int neuron_job_push(struct neuron_job *job, struct drm_file *file,
		    struct drm_sched_entity *entity,
		    const struct drm_neuron_sync *in_syncs, u32 num_in_syncs,
		    const struct drm_neuron_sync *out_sync, u64 *seqno)
{
	struct neuron_file_exec *fexec = &to_neuron_file(file)->exec;
	struct dma_fence_chain *chain = NULL;
	struct drm_syncobj *syncobj;
	struct dma_fence *finished;
	u32 i;
	int ret;

	ret = neuron_sched_job_init(&job->base, entity, 1, file,
				    file->client_id);
	if (ret) {
		neuron_job_release(job);
		return ret;
	}

	for (i = 0; i < num_in_syncs; i++) {
		struct dma_fence *fence;

		ret = drm_syncobj_find_fence(file, in_syncs[i].handle,
					     in_syncs[i].point, 0, &fence);
		if (ret)
			goto err_cleanup;
		/* Takes the reference, even on failure. */
		ret = drm_sched_job_add_dependency(&job->base, fence);
		if (ret)
			goto err_cleanup;
	}

	syncobj = drm_syncobj_find(file, out_sync->handle);
	if (!syncobj) {
		ret = -ENOENT;
		goto err_cleanup;
	}
	if (out_sync->point) {
		chain = dma_fence_chain_alloc();
		if (!chain) {
			drm_syncobj_put(syncobj);
			ret = -ENOMEM;
			goto err_cleanup;
		}
	}

	/* Arming and pushing in one go keeps the entity's jobs in order. */
	mutex_lock(&fexec->submit_lock);
	drm_sched_job_arm(&job->base);
	neuron_job_number(job);
	*seqno = job->seqno;
	finished = dma_fence_get(&job->base.s_fence->finished);
	if (job->kind == NEURON_JOB_EXEC)
		atomic64_inc(&job->client->jobs_submitted);
	else
		atomic64_inc(&job->client->copies_submitted);
	drm_sched_entity_push_job(&job->base);
	mutex_unlock(&fexec->submit_lock);

	if (chain)
		drm_syncobj_add_point(syncobj, chain, finished, out_sync->point);
	else
		drm_syncobj_replace_fence(syncobj, finished);
	drm_syncobj_put(syncobj);
	dma_fence_put(finished);
	return 0;

err_cleanup:
	drm_sched_job_cleanup(&job->base);
	neuron_job_release(job);
	return ret;
}

/* ------------------------------------------------------------------------
 * Core queues
 */

static u32 neuron_q_reg(struct neuron_queue *q, u32 reg)
{
	return NEURON_QUEUE_BASE(q->core) + reg;
}

/* Programs an idle queue's rings, empty, and enables it. */
static void neuron_queue_hw_init(struct neuron_queue *q)
{
	struct neuron_hw *hw = &q->ndev->hw;

	memset(q->cpl, 0, NEURON_CPL_ENTRIES * sizeof(*q->cpl));
	q->tail = 0;
	q->cpl_head = 0;
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_RING_LO), lower_32_bits(q->ring_dma));
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_RING_HI), upper_32_bits(q->ring_dma));
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_RING_ENTRIES), NEURON_QUEUE_ENTRIES);
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CPL_LO), lower_32_bits(q->cpl_dma));
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CPL_HI), upper_32_bits(q->cpl_dma));
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CPL_ENTRIES), NEURON_CPL_ENTRIES);
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CTRL), NEURON_Q_CTRL_ENABLE);
	if (!(neuron_rd32(hw, neuron_q_reg(q, NEURON_Q_STATUS)) &
	      NEURON_Q_STATUS_ENABLED))
		ndev_err(q->ndev, "core %u: queue does not enable (error %u)\n",
			 q->core, neuron_rd32(hw, neuron_q_reg(q, NEURON_Q_ERROR)));
}

/* Fence error of a job's final completion status (see the UAPI). */
static int neuron_job_status_errno(u32 status)
{
	switch (status) {
	case NEURON_JOB_STATUS_OK:
		return 0;
	case NEURON_JOB_STATUS_ABORTED:
		return -ECANCELED;
	case NEURON_JOB_STATUS_BINDING_INDEX:
	case NEURON_JOB_STATUS_BINDING_RANGE:
	case NEURON_JOB_STATUS_BINDING_ACCESS:
		return -EFAULT;
	case NEURON_JOB_STATUS_BAD_PROGRAM:
	case NEURON_JOB_STATUS_DECODE:
	case NEURON_JOB_STATUS_PARTITION:
	case NEURON_JOB_STATUS_SBUF_RANGE:
	case NEURON_JOB_STATUS_PSUM_RANGE:
	case NEURON_JOB_STATUS_DTYPE:
	case NEURON_JOB_STATUS_ALIGN:
	case NEURON_JOB_STATUS_SHAPE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static void neuron_queue_complete_locked(struct neuron_queue *q,
					 const struct neuron_cpl_entry *e,
					 bool resetting)
{
	u64 id = le64_to_cpu(e->job_id);
	u32 status = le32_to_cpu(e->status);
	u32 info = le32_to_cpu(e->info);
	u64 cycles = le64_to_cpu(e->cycles);
	struct neuron_client *client;
	struct neuron_job *job;
	u32 mhz;
	int err;

	/* A reset aborted the job: it runs again or fails as guilty. */
	if (resetting && status == NEURON_JOB_STATUS_ABORTED)
		return;

	list_for_each_entry(job, &q->inflight, node) {
		if (job->seqno == id)
			goto found;
	}
	drm_err_ratelimited(&q->ndev->drm,
			    "core %u: completion for unknown job %llu (status %#x)\n",
			    q->core, id, status);
	return;

found:
	trace_neuron_complete(q->ndev, q->core, job->seqno, status, cycles);
	list_del_init(&job->node);
	job->status = status;
	job->info = info;
	client = job->client;
	mhz = q->ndev->hw.clock_mhz;
	if (mhz)
		atomic64_add(div_u64(cycles * 1000, mhz), &client->busy_ns[q->core]);
	err = neuron_job_status_errno(status);
	if (err) {
		WRITE_ONCE(client->last_fault, status);
		WRITE_ONCE(client->last_fault_info, info);
		WRITE_ONCE(client->last_fault_seqno, job->seqno);
		drm_dbg_driver(&q->ndev->drm,
			       "core %u: job %llu failed: status %#x info %u engine %u\n",
			       q->core, job->seqno, status, info,
			       le16_to_cpu(e->fault_engine));
	}
	neuron_job_signal_locked(job, err);
}

/*
 * Consumes the new entries of the completion ring and signals the jobs
 * that completed. With @resetting, ABORTED entries (written by a core
 * reset) leave their job alone.
 */
static void neuron_queue_process_locked(struct neuron_queue *q, bool resetting)
{
	struct neuron_hw *hw = &q->ndev->hw;
	u32 start = q->cpl_head;

	lockdep_assert_held(&q->lock);
	for (;;) {
		struct neuron_cpl_entry *e;
		u16 phase, flags;

		e = &q->cpl[q->cpl_head & (NEURON_CPL_ENTRIES - 1)];
		phase = (q->cpl_head / NEURON_CPL_ENTRIES) & 1 ?
			0 : NEURON_CPL_F_PHASE;
		flags = le16_to_cpu(READ_ONCE(e->flags));
		if ((flags & NEURON_CPL_F_PHASE) != phase)
			break;
		/* The entry was written before its phase bit. */
		dma_rmb();
		q->cpl_head++;
		if (flags & NEURON_CPL_F_FINAL)
			neuron_queue_complete_locked(q, e, resetting);
	}
	if (q->cpl_head != start)
		neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CPL_HEAD), q->cpl_head);
}

/**
 * neuron_queue_irq() - completion interrupt of a core queue (thread)
 * @ndev: the device
 * @core: the core
 */
void neuron_queue_irq(struct neuron_device *ndev, u32 core)
{
	struct neuron_queue *q;

	if (!READ_ONCE(ndev->exec.ready) || core >= ndev->hw.num_cores)
		return;
	q = &ndev->exec.queues[core];
	mutex_lock(&q->lock);
	neuron_queue_process_locked(q, false);
	mutex_unlock(&q->lock);
}

static struct dma_fence *neuron_queue_run_job(struct drm_sched_job *sched_job)
{
	struct neuron_job *job = to_neuron_job(sched_job);
	struct neuron_queue *q = job->queue;
	struct neuron_device *ndev = q->ndev;
	struct neuron_job_desc *desc;
	struct dma_fence *fence;
	int idx, ret;

	mutex_lock(&q->lock);
	ret = neuron_job_begin_run_locked(job, q->fence_context,
					  &q->fence_seqno, &idx);
	if (ret < 0) {
		mutex_unlock(&q->lock);
		return ERR_PTR(ret);
	}
	if (!ret)
		goto out;

	desc = &q->ring[q->tail & (NEURON_QUEUE_ENTRIES - 1)];
	desc->bindings_addr = cpu_to_le64(job->table_dma);
	desc->num_bindings = cpu_to_le32(job->num_bindings);
	desc->flags = cpu_to_le32(NEURON_JOB_F_IRQ);
	desc->program_binding = cpu_to_le32(job->num_bindings - 1);
	desc->program_size = cpu_to_le32(job->program_size);
	desc->program_offset = 0;
	desc->job_id = cpu_to_le64(job->seqno);
	memset(desc->reserved, 0, sizeof(desc->reserved));
	list_add_tail(&job->node, &q->inflight);
	q->tail++;
	trace_neuron_submit(ndev, q->core, job->seqno, job->num_bindings);
	/* The descriptor is in memory before the doorbell (writel orders). */
	neuron_wr32(&ndev->hw, neuron_q_reg(q, NEURON_Q_TAIL), q->tail);
	drm_dev_exit(idx);

out:
	fence = dma_fence_get(job->hw_fence);
	mutex_unlock(&q->lock);
	return fence;
}

/**
 * neuron_recover_wait() - wait for a self-clearing reset bit
 * @ndev: the device
 * @reg: the register
 * @bit: the bit that reads 1 while the reset runs
 *
 * Return: 0 or -ETIMEDOUT after neuron_reset_timeout_ms.
 */
int neuron_recover_wait(struct neuron_device *ndev, void __iomem *reg, u32 bit)
{
	u32 val;

	return readl_poll_timeout(reg, val, !(val & bit), NEURON_RECOVER_POLL_US,
				  (u64)neuron_reset_timeout_ms * USEC_PER_MSEC);
}

/* Takes every job off the queue; it will run again unless @err is set. */
static void neuron_queue_clear_locked(struct neuron_queue *q, int err,
				      bool signal)
{
	struct neuron_job *job, *tmp;

	lockdep_assert_held(&q->lock);
	list_for_each_entry_safe(job, tmp, &q->inflight, node) {
		list_del_init(&job->node);
		if (!err)
			continue;
		if (signal)
			neuron_job_signal_locked(job, err);
		else
			job->guilty_err = err;
	}
}

/*
 * Resets one core and resubmits its innocent jobs. @bad is the job the
 * scheduler's timeout handler took off its pending list (or NULL); the
 * guilty job is @bad, or else the job the core was running.
 *
 * Return: false if the core did not come back from its reset.
 */
static bool neuron_queue_recover(struct neuron_queue *q,
				 struct drm_sched_job *bad, int err)
{
	struct neuron_device *ndev = q->ndev;
	struct neuron_hw *hw = &ndev->hw;
	struct neuron_job *guilty;
	bool ok = true;
	int idx;

	drm_sched_stop(&q->sched, bad);

	mutex_lock(&q->lock);
	if (drm_dev_enter(&ndev->drm, &idx)) {
		/* Whatever completed before the reset keeps its result. */
		neuron_queue_process_locked(q, false);
		guilty = bad ? to_neuron_job(bad) :
			list_first_entry_or_null(&q->inflight, struct neuron_job, node);
		if (guilty && !list_empty(&guilty->node))
			guilty->guilty_err = err;

		neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CTRL), NEURON_Q_CTRL_RESET);
		if (neuron_recover_wait(ndev, hw->regs + neuron_q_reg(q, NEURON_Q_CTRL),
					NEURON_Q_CTRL_RESET)) {
			ndev_err(ndev, "core %u: reset did not complete\n", q->core);
			ok = false;
		} else {
			/* Collect entries completed up to the abort. */
			neuron_queue_process_locked(q, true);
			neuron_queue_hw_init(q);
		}
		drm_dev_exit(idx);
	}
	neuron_queue_clear_locked(q, 0, false);
	atomic_inc(&q->resets);
	mutex_unlock(&q->lock);

	drm_sched_resubmit_jobs(&q->sched);
	neuron_sched_start(&q->sched);
	if (ok)
		neuron_telemetry_reset_event(ndev, q->core, err == -ETIMEDOUT ?
					     NEURON_RESET_TIMEOUT :
					     NEURON_RESET_ERROR);
	return ok;
}

static bool neuron_device_fatal(struct neuron_device *ndev)
{
	return neuron_rd32(&ndev->hw, NEURON_REG_DEV_STATUS) &
	       NEURON_DEV_STATUS_FATAL;
}

static enum drm_gpu_sched_stat
neuron_queue_timedout_job(struct drm_sched_job *sched_job)
{
	struct neuron_job *job = to_neuron_job(sched_job);
	struct neuron_queue *q = job->queue;
	struct neuron_device *ndev = q->ndev;
	bool fatal = false;
	int idx;

	if (drm_dev_enter(&ndev->drm, &idx)) {
		fatal = neuron_device_fatal(ndev);
		drm_dev_exit(idx);
	}
	if (fatal) {
		neuron_device_recover(ndev, &q->sched, sched_job);
		return NEURON_SCHED_STAT_RESET;
	}

	trace_neuron_timeout(ndev, q->core, job->seqno);
	drm_warn(&ndev->drm, "core %u: job %llu timed out after %u ms, resetting the core\n",
		 q->core, job->seqno, neuron_job_timeout_ms);
	if (!neuron_queue_recover(q, sched_job, -ETIMEDOUT))
		neuron_device_recover(ndev, NULL, NULL);
	return NEURON_SCHED_STAT_RESET;
}

static const struct drm_sched_backend_ops neuron_queue_sched_ops = {
	.run_job = neuron_queue_run_job,
	.timedout_job = neuron_queue_timedout_job,
	.free_job = neuron_job_free,
};

static int neuron_queue_init(struct neuron_device *ndev, struct neuron_queue *q,
			     u32 core)
{
	struct device *dev = ndev->drm.dev;
	int ret;

	q->ndev = ndev;
	q->core = core;
	INIT_LIST_HEAD(&q->inflight);
	snprintf(q->name, sizeof(q->name), "neuron-core%u", core);
	ret = drmm_mutex_init(&ndev->drm, &q->lock);
	if (ret)
		return ret;
	q->ring = dmam_alloc_coherent(dev, NEURON_QUEUE_ENTRIES * sizeof(*q->ring),
				      &q->ring_dma, GFP_KERNEL);
	q->cpl = dmam_alloc_coherent(dev, NEURON_CPL_ENTRIES * sizeof(*q->cpl),
				     &q->cpl_dma, GFP_KERNEL);
	if (!q->ring || !q->cpl)
		return -ENOMEM;
	q->fence_context = dma_fence_context_alloc(1);
	return neuron_sched_init(&q->sched, &neuron_queue_sched_ops,
				 ndev->exec.reset_wq, NEURON_QUEUE_ENTRIES,
				 msecs_to_jiffies(neuron_job_timeout_ms),
				 q->name, dev);
}

/* ------------------------------------------------------------------------
 * Device-wide recovery
 */

/**
 * neuron_device_recover() - reset the whole device and restart
 * @ndev: the device
 * @bad_sched: the scheduler whose timeout handler calls this, or NULL
 * @bad: the job that handler took off the pending list, or NULL
 *
 * Runs on the reset workqueue. Every job that was on the hardware fails
 * with -ECANCELED (-ENODEV if the device is gone); queued jobs run after.
 */
void neuron_device_recover(struct neuron_device *ndev,
			   struct drm_gpu_scheduler *bad_sched,
			   struct drm_sched_job *bad)
{
	struct neuron_exec *exec = &ndev->exec;
	struct neuron_hw *hw = &ndev->hw;
	char event[] = "NEURON_EVENT=reset";
	char *envp[2];
	bool present;
	u32 i;
	int idx, ret = 0;

	for (i = 0; i < hw->num_cores; i++) {
		struct drm_gpu_scheduler *sched = &exec->queues[i].sched;

		drm_sched_stop(sched, sched == bad_sched ? bad : NULL);
	}
	for (i = 0; i < hw->num_dma; i++) {
		struct drm_gpu_scheduler *sched = &exec->engines[i].sched;

		drm_sched_stop(sched, sched == bad_sched ? bad : NULL);
	}

	present = drm_dev_enter(&ndev->drm, &idx);
	if (present) {
		ndev_err(ndev, "device error (status %#x, cause %u): resetting the device\n",
			 neuron_rd32(hw, NEURON_REG_DEV_STATUS),
			 neuron_rd32(hw, NEURON_REG_FATAL_CAUSE));
		ret = neuron_telemetry_reset_device(ndev);
		neuron_wr32(hw, NEURON_REG_IRQ_STATUS, ~0u);
		neuron_wr32(hw, NEURON_REG_IRQ_MASK, ~ndev->irq.enabled);
	}
	for (i = 0; i < hw->num_cores; i++) {
		struct neuron_queue *q = &exec->queues[i];

		mutex_lock(&q->lock);
		neuron_queue_clear_locked(q, present ? -ECANCELED : -ENODEV,
					  false);
		if (present && !ret)
			neuron_queue_hw_init(q);
		atomic_inc(&q->resets);
		mutex_unlock(&q->lock);
	}
	for (i = 0; i < hw->num_dma; i++) {
		struct neuron_dma_engine *eng = &exec->engines[i];

		mutex_lock(&eng->lock);
		neuron_dma_fail_all_locked(eng, present ? -ECANCELED : -ENODEV,
					   false);
		if (present && !ret)
			neuron_dma_hw_init(eng);
		mutex_unlock(&eng->lock);
	}
	if (present) {
		atomic_inc(&exec->device_resets);
		neuron_telemetry_reset_event(ndev, -1, NEURON_RESET_FATAL);
		if (ret)
			ndev_err(ndev, "device reset failed (%d): no more jobs will run\n",
				 ret);
		envp[0] = event;
		envp[1] = NULL;
		if (ndev->drm.accel)
			kobject_uevent_env(&ndev->drm.accel->kdev->kobj,
					   KOBJ_CHANGE, envp);
		drm_dev_exit(idx);
	}

	for (i = 0; i < hw->num_cores; i++) {
		drm_sched_resubmit_jobs(&exec->queues[i].sched);
		neuron_sched_start(&exec->queues[i].sched);
	}
	for (i = 0; i < hw->num_dma; i++) {
		drm_sched_resubmit_jobs(&exec->engines[i].sched);
		neuron_sched_start(&exec->engines[i].sched);
	}
}

/* Handles the error interrupt: halted queues and engines, fatal errors. */
static void neuron_recover_work(struct work_struct *work)
{
	struct neuron_device *ndev = container_of(work, struct neuron_device,
						  exec.recover_work);
	struct neuron_hw *hw = &ndev->hw;
	u32 i, halted_q = 0, halted_dma = 0;
	bool fatal;
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return;
	fatal = neuron_device_fatal(ndev);
	for (i = 0; i < hw->num_cores; i++) {
		if (neuron_rd32(hw, NEURON_QUEUE_BASE(i) + NEURON_Q_STATUS) &
		    NEURON_Q_STATUS_HALTED)
			halted_q |= BIT(i);
	}
	for (i = 0; i < hw->num_dma; i++) {
		if (neuron_dma_halted(&ndev->exec.engines[i]))
			halted_dma |= BIT(i);
	}
	drm_dev_exit(idx);

	if (fatal) {
		neuron_device_recover(ndev, NULL, NULL);
		return;
	}
	for (i = 0; i < hw->num_cores; i++) {
		if (halted_q & BIT(i) &&
		    !neuron_queue_recover(&ndev->exec.queues[i], NULL, -EIO)) {
			neuron_device_recover(ndev, NULL, NULL);
			return;
		}
	}
	for (i = 0; i < hw->num_dma; i++) {
		if (halted_dma & BIT(i) &&
		    !neuron_dma_recover(&ndev->exec.engines[i], NULL, -EIO)) {
			neuron_device_recover(ndev, NULL, NULL);
			return;
		}
	}
}

/**
 * neuron_exec_error_irq() - error interrupt (thread)
 * @ndev: the device
 */
void neuron_exec_error_irq(struct neuron_device *ndev)
{
	if (READ_ONCE(ndev->exec.ready))
		queue_work(ndev->exec.reset_wq, &ndev->exec.recover_work);
}

/* ------------------------------------------------------------------------
 * Setup and teardown
 */

/* Stops the device before its rings are freed (unbind, failed probe). */
static void neuron_exec_hw_fini(void *arg)
{
	struct neuron_device *ndev = arg;

	WRITE_ONCE(ndev->exec.ready, false);
	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~0u);
	neuron_hw_reset(ndev);
}

/* Last reference to the DRM device: no file and no job remain. */
static void neuron_exec_fini(struct drm_device *drm, void *arg)
{
	struct neuron_device *ndev = to_neuron_device(drm);
	struct neuron_exec *exec = &ndev->exec;
	u32 i;

	if (!wait_event_timeout(exec->jobs_idle, !atomic_read(&exec->jobs_alive),
				msecs_to_jiffies(10000)))
		ndev_err(ndev, "%d jobs still alive at teardown\n",
			 atomic_read(&exec->jobs_alive));
	for (i = 0; i < exec->num_queues; i++)
		drm_sched_fini(&exec->queues[i].sched);
	for (i = 0; i < exec->num_engines; i++)
		drm_sched_fini(&exec->engines[i].sched);
	if (exec->reset_wq)
		destroy_workqueue(exec->reset_wq);
}

/**
 * neuron_exec_init() - set up the core queues and DMA engines
 * @ndev: the device, identified and reset, interrupts not yet set up
 *
 * Return: 0 or a negative errno.
 */
int neuron_exec_init(struct neuron_device *ndev)
{
	struct neuron_exec *exec = &ndev->exec;
	struct neuron_hw *hw = &ndev->hw;
	u32 i;
	int ret;

	/*
	 * Descriptors and SG entries take segments of up to a DMA descriptor's
	 * maximum length; the PCI default of 64 KiB would only split them.
	 */
	dma_set_max_seg_size(ndev->drm.dev, NEURON_DMA_MAX_LEN);

	INIT_WORK(&exec->recover_work, neuron_recover_work);
	init_waitqueue_head(&exec->jobs_idle);
	exec->queues = drmm_kcalloc(&ndev->drm, max(hw->num_cores, 1u),
				    sizeof(*exec->queues), GFP_KERNEL);
	exec->engines = drmm_kcalloc(&ndev->drm, max(hw->num_dma, 1u),
				     sizeof(*exec->engines), GFP_KERNEL);
	if (!exec->queues || !exec->engines)
		return -ENOMEM;
	exec->reset_wq = alloc_ordered_workqueue("neuron-reset", 0);
	if (!exec->reset_wq)
		return -ENOMEM;
	ret = drmm_add_action_or_reset(&ndev->drm, neuron_exec_fini, NULL);
	if (ret)
		return ret;

	for (i = 0; i < hw->num_cores; i++) {
		ret = neuron_queue_init(ndev, &exec->queues[i], i);
		if (ret)
			return ret;
		exec->num_queues++;
	}
	for (i = 0; i < hw->num_dma; i++) {
		ret = neuron_dma_init(ndev, &exec->engines[i], i);
		if (ret)
			return ret;
		exec->dma_scheds[i] = &exec->engines[i].sched;
		exec->num_engines++;
	}

	/* Registered after the rings: runs before they are freed. */
	ret = devm_add_action_or_reset(ndev->drm.dev, neuron_exec_hw_fini, ndev);
	if (ret)
		return ret;

	for (i = 0; i < hw->num_cores; i++)
		neuron_queue_hw_init(&exec->queues[i]);
	for (i = 0; i < hw->num_dma; i++)
		neuron_dma_hw_init(&exec->engines[i]);
	WRITE_ONCE(exec->ready, true);
	return 0;
}

/**
 * neuron_exec_unplug() - the device is being unbound
 * @ndev: the device, after drm_dev_unplug()
 *
 * No job runs on the hardware any more: the device is reset and every job
 * on it fails with -ENODEV. Jobs still queued fail as they reach run_job.
 */
void neuron_exec_unplug(struct neuron_device *ndev)
{
	struct neuron_exec *exec = &ndev->exec;
	u32 i;

	if (!exec->num_queues && !exec->num_engines)
		return;
	cancel_work_sync(&exec->recover_work);
	WRITE_ONCE(exec->ready, false);
	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~0u);
	neuron_hw_reset(ndev);
	for (i = 0; i < exec->num_queues; i++) {
		struct neuron_queue *q = &exec->queues[i];

		mutex_lock(&q->lock);
		neuron_queue_clear_locked(q, -ENODEV, true);
		mutex_unlock(&q->lock);
	}
	for (i = 0; i < exec->num_engines; i++) {
		struct neuron_dma_engine *eng = &exec->engines[i];

		mutex_lock(&eng->lock);
		neuron_dma_fail_all_locked(eng, -ENODEV, true);
		mutex_unlock(&eng->lock);
	}
}

/**
 * neuron_exec_file_init() - per-file scheduling state at open
 * @ndev: the device
 * @fexec: the file's state, zeroed
 *
 * Return: 0 or a negative errno.
 */
int neuron_exec_file_init(struct neuron_device *ndev,
			  struct neuron_file_exec *fexec)
{
	struct neuron_exec *exec = &ndev->exec;
	u32 i;
	int ret;

	mutex_init(&fexec->submit_lock);
	fexec->client = kzalloc(sizeof(*fexec->client), GFP_KERNEL);
	if (!fexec->client)
		return -ENOMEM;
	kref_init(&fexec->client->ref);

	for (i = 0; i < exec->num_queues; i++) {
		struct drm_gpu_scheduler *sched = &exec->queues[i].sched;

		ret = drm_sched_entity_init(&fexec->core_entities[i],
					    DRM_SCHED_PRIORITY_NORMAL, &sched, 1,
					    NULL);
		if (ret)
			goto err;
		fexec->num_cores++;
	}
	for (i = 0; i < exec->num_engines; i++) {
		ret = drm_sched_entity_init(&fexec->dma_entities[i],
					    DRM_SCHED_PRIORITY_NORMAL,
					    &exec->dma_scheds[i], 1, NULL);
		if (ret)
			goto err;
		fexec->num_dma++;
	}
	if (exec->num_engines) {
		ret = drm_sched_entity_init(&fexec->dma_any,
					    DRM_SCHED_PRIORITY_NORMAL,
					    exec->dma_scheds, exec->num_engines,
					    NULL);
		if (ret)
			goto err;
		fexec->dma_any_init = true;
	}
	return 0;

err:
	neuron_exec_file_fini(fexec);
	return ret;
}

/**
 * neuron_exec_file_fini() - per-file scheduling state at close
 * @fexec: the file's state
 *
 * Waits (a bounded time, not at all for a killed process) for the file's
 * queued jobs to reach the hardware and cancels the rest. Jobs on the
 * hardware finish on their own and then drop their buffers.
 */
void neuron_exec_file_fini(struct neuron_file_exec *fexec)
{
	u32 i;

	for (i = 0; i < fexec->num_cores; i++)
		drm_sched_entity_destroy(&fexec->core_entities[i]);
	for (i = 0; i < fexec->num_dma; i++)
		drm_sched_entity_destroy(&fexec->dma_entities[i]);
	if (fexec->dma_any_init)
		drm_sched_entity_destroy(&fexec->dma_any);
	fexec->num_cores = 0;
	fexec->num_dma = 0;
	fexec->dma_any_init = false;
	if (fexec->client)
		kref_put(&fexec->client->ref, neuron_client_release);
	fexec->client = NULL;
	mutex_destroy(&fexec->submit_lock);
}

/* ------------------------------------------------------------------------
 * SUBMIT
 */

/*
 * Walks the DMA segments of @sgt that cover [@offset, @offset + @size),
 * writing them to @out unless it is NULL. Returns how many there are, or 0
 * if the table ends before the range does.
 */
static u32 neuron_sg_walk(struct sg_table *sgt, u64 offset, u64 size,
			  struct neuron_sg_entry *out)
{
	struct scatterlist *sg;
	u32 count = 0;
	int i;

	for_each_sgtable_dma_sg(sgt, sg, i) {
		u64 len = sg_dma_len(sg);

		if (!size)
			break;
		if (offset >= len) {
			offset -= len;
			continue;
		}
		len = min(len - offset, size);
		if (out) {
			out[count].addr = cpu_to_le64(sg_dma_address(sg) + offset);
			out[count].len = cpu_to_le64(len);
		}
		count++;
		offset = 0;
		size -= len;
	}
	return size ? 0 : count;
}

/* One validated slot of a job: the buffer range and its rights. */
struct neuron_slot {
	struct neuron_bo *bo;
	struct sg_table *sgt;
	u64 offset;
	u64 size;
	u32 flags;
	u32 sg_count;
};

static int neuron_slot_prepare(struct neuron_job *job, struct drm_file *file,
			       struct neuron_slot *slot, u32 handle, u64 offset,
			       u64 size, u32 flags)
{
	struct neuron_device *ndev = job->ndev;
	int ret;

	ret = neuron_job_add_bo(job, file, handle, offset, size, &slot->bo,
				&slot->sgt, &slot->offset);
	if (ret)
		return ret;
	slot->size = size;
	slot->flags = flags;
	slot->sg_count = 0;
	if (slot->bo->region != DRM_NEURON_BO_HOST)
		return 0;
	if (!(ndev->hw.caps & NEURON_CAP_HOST_BINDINGS))
		return -EOPNOTSUPP;
	slot->sg_count = neuron_sg_walk(slot->sgt, slot->offset, size, NULL);
	if (!slot->sg_count)
		return -EINVAL;
	slot->flags |= NEURON_BIND_HOST_SG;
	return 0;
}

/* Allocates and writes the binding table and its SG arrays. */
static int neuron_job_build_table(struct neuron_job *job,
				  struct neuron_slot *slots, u32 count)
{
	struct neuron_binding *table;
	struct neuron_sg_entry *sg;
	dma_addr_t sg_dma;
	size_t size;
	u32 i, total = 0;

	for (i = 0; i < count; i++)
		total += slots[i].sg_count;
	size = array_size(count, sizeof(*table));
	size = size_add(size, array_size(total, sizeof(*sg)));
	if (size == SIZE_MAX)
		return -EINVAL;
	job->table = dma_alloc_coherent(job->ndev->drm.dev, size,
					&job->table_dma, GFP_KERNEL);
	if (!job->table)
		return -ENOMEM;
	job->table_size = size;
	job->num_bindings = count;

	table = job->table;
	sg = (struct neuron_sg_entry *)(table + count);
	sg_dma = job->table_dma + count * sizeof(*table);
	for (i = 0; i < count; i++) {
		struct neuron_slot *s = &slots[i];
		struct neuron_binding *b = &table[i];

		b->size = cpu_to_le64(s->size);
		b->flags = cpu_to_le32(s->flags);
		b->sg_count = cpu_to_le32(s->sg_count);
		b->reserved = 0;
		if (s->flags & NEURON_BIND_HOST_SG) {
			b->addr = cpu_to_le64(sg_dma);
			neuron_sg_walk(s->sgt, s->offset, s->size, sg);
			sg += s->sg_count;
			sg_dma += s->sg_count * sizeof(*sg);
		} else {
			b->addr = cpu_to_le64(s->bo->node.start + s->offset);
		}
	}
	return 0;
}

/**
 * neuron_submit_ioctl() - DRM_IOCTL_NEURON_SUBMIT
 * @drm: the DRM device
 * @data: &struct drm_neuron_submit
 * @file: the calling file
 *
 * Return: 0 or a negative errno as documented in the UAPI header.
 */
int neuron_submit_ioctl(struct drm_device *drm, void *data,
			struct drm_file *file)
{
	struct neuron_device *ndev = to_neuron_device(drm);
	struct neuron_file_exec *fexec = &to_neuron_file(file)->exec;
	struct drm_neuron_submit *args = data;
	struct drm_neuron_binding *bindings = NULL;
	struct drm_neuron_sync *in_syncs = NULL;
	struct neuron_slot *slots = NULL;
	struct neuron_job *job;
	u32 i, n = args->num_bindings;
	int ret;

	if (args->flags & ~DRM_NEURON_SUBMIT_FLAGS_ALL || args->pad ||
	    args->reserved || args->out_sync.pad || !args->out_sync.handle)
		return -EINVAL;
	if (args->core >= fexec->num_cores)
		return -EINVAL;
	if (!args->program_size || args->program_size > U32_MAX)
		return -EINVAL;
	if (!n || n > NEURON_MAX_BINDINGS - 1)
		return -EINVAL;
	if (args->num_in_syncs > DRM_NEURON_MAX_IN_SYNCS)
		return -EINVAL;
	if (!READ_ONCE(ndev->exec.ready) || !ndev->hw.ready)
		return -EIO;

	bindings = vmemdup_array_user(u64_to_user_ptr(args->bindings), n,
				      sizeof(*bindings));
	if (IS_ERR(bindings))
		return PTR_ERR(bindings);
	for (i = 0; i < n; i++) {
		if (bindings[i].reserved || !bindings[i].size ||
		    !bindings[i].flags ||
		    bindings[i].flags & ~DRM_NEURON_BIND_ALL) {
			ret = -EINVAL;
			goto out_free;
		}
	}
	in_syncs = neuron_copy_in_syncs(args->in_syncs, args->num_in_syncs);
	if (IS_ERR(in_syncs)) {
		ret = PTR_ERR(in_syncs);
		in_syncs = NULL;
		goto out_free;
	}
	slots = kvcalloc(n + 1, sizeof(*slots), GFP_KERNEL);
	if (!slots) {
		ret = -ENOMEM;
		goto out_free;
	}

	job = neuron_job_alloc(ndev, file, NEURON_JOB_EXEC, n + 1);
	if (!job) {
		ret = -ENOMEM;
		goto out_free;
	}
	job->queue = &ndev->exec.queues[args->core];
	job->program_size = args->program_size;

	for (i = 0; i < n; i++) {
		ret = neuron_slot_prepare(job, file, &slots[i], bindings[i].handle,
					  bindings[i].offset, bindings[i].size,
					  bindings[i].flags);
		if (ret)
			goto out_put;
	}
	/* The program image: one more slot, execute rights only. */
	ret = neuron_slot_prepare(job, file, &slots[n], args->program_handle,
				  args->program_offset, args->program_size,
				  NEURON_BIND_EXEC);
	if (ret)
		goto out_put;
	ret = neuron_job_build_table(job, slots, n + 1);
	if (ret)
		goto out_put;

	ret = neuron_job_push(job, file, &fexec->core_entities[args->core],
			      in_syncs, args->num_in_syncs, &args->out_sync,
			      &args->seqno);
	goto out_free;

out_put:
	neuron_job_put_unarmed(job);
out_free:
	kvfree(slots);
	kvfree(in_syncs);
	kvfree(bindings);
	return ret;
}
