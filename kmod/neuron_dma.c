// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: DMA engines and the COPY ioctl.
 *
 * A copy is split, when it is queued, into segments that are contiguous
 * on both sides: host buffers contribute the DMA segments of their mapped
 * SG table, device buffers one contiguous range, and no segment is longer
 * than NEURON_DMA_MAX_LEN. A copy may need more descriptors than the ring
 * holds, so the engine's copies are kept on a list and their descriptors
 * written to the ring as it drains ("pumped"), from run_job() and from the
 * completion interrupt. A copy completes when the engine has passed all of
 * its descriptors; any descriptor error fails the whole copy.
 */
#include <drm/drm_device.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <drm/gpu_scheduler.h>
#include <drm/neuron_accel.h>
#include <linux/dma-mapping.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "neuron_compat.h"
#include "neuron_dma.h"
#include "neuron_drv.h"
#include "neuron_gem.h"
#include "neuron_hw.h"
#include "neuron_job.h"
#include "neuron_trace.h"

static_assert(NEURON_RING_SIZE_OK(NEURON_DMA_ENTRIES));

/* Ask for an interrupt at least this often, so the ring is refilled early. */
#define NEURON_DMA_IRQ_EVERY	(NEURON_DMA_ENTRIES / 4)

static u32 neuron_dma_reg(struct neuron_dma_engine *eng, u32 reg)
{
	return NEURON_DMA_BASE(eng->index) + reg;
}

/**
 * neuron_dma_hw_init() - program an idle engine's ring, empty, and enable it
 * @eng: the engine; its lock is held or nothing else uses it yet
 */
void neuron_dma_hw_init(struct neuron_dma_engine *eng)
{
	struct neuron_hw *hw = &eng->ndev->hw;

	eng->tail = 0;
	eng->head = 0;
	memset(eng->slot_job, 0, NEURON_DMA_ENTRIES * sizeof(*eng->slot_job));
	neuron_wr32(hw, neuron_dma_reg(eng, NEURON_DMA_RING_LO), lower_32_bits(eng->ring_dma));
	neuron_wr32(hw, neuron_dma_reg(eng, NEURON_DMA_RING_HI), upper_32_bits(eng->ring_dma));
	neuron_wr32(hw, neuron_dma_reg(eng, NEURON_DMA_RING_ENTRIES), NEURON_DMA_ENTRIES);
	neuron_wr32(hw, neuron_dma_reg(eng, NEURON_DMA_CTRL), NEURON_DMA_CTRL_ENABLE);
	if (!(neuron_rd32(hw, neuron_dma_reg(eng, NEURON_DMA_STATUS)) &
	      NEURON_DMA_STATUS_ENABLED))
		ndev_err(eng->ndev, "DMA engine %u does not enable (error %u)\n",
			 eng->index,
			 neuron_rd32(hw, neuron_dma_reg(eng, NEURON_DMA_ERROR)));
}

/**
 * neuron_dma_halted() - whether an engine stopped on a ring error
 * @eng: the engine (inside drm_dev_enter())
 *
 * Return: true if DMA_STATUS.HALTED is set.
 */
bool neuron_dma_halted(struct neuron_dma_engine *eng)
{
	return neuron_rd32(&eng->ndev->hw, neuron_dma_reg(eng, NEURON_DMA_STATUS)) &
	       NEURON_DMA_STATUS_HALTED;
}

/* Writes as many pending descriptors as the ring has room for. */
static void neuron_dma_pump_locked(struct neuron_dma_engine *eng)
{
	struct neuron_dma_desc *desc = NULL;
	struct neuron_job *job;
	u32 start = eng->tail;

	lockdep_assert_held(&eng->lock);
	list_for_each_entry(job, &eng->active, node) {
		while (job->next_seg < job->num_segs) {
			const struct neuron_dma_seg *seg = &job->segs[job->next_seg];
			u32 slot = eng->tail & (NEURON_DMA_ENTRIES - 1);
			u32 flags = seg->flags;

			if (eng->tail - eng->head >= NEURON_DMA_ENTRIES)
				goto doorbell;
			job->next_seg++;
			if (job->next_seg == job->num_segs ||
			    !((eng->tail + 1) % NEURON_DMA_IRQ_EVERY))
				flags |= NEURON_DMA_F_IRQ;
			desc = &eng->ring[slot];
			desc->src = cpu_to_le64(seg->src);
			desc->dst = cpu_to_le64(seg->dst);
			desc->len = cpu_to_le32(seg->len);
			desc->flags = cpu_to_le32(flags);
			desc->cookie = cpu_to_le32(lower_32_bits(job->seqno));
			desc->status = 0;
			eng->slot_job[slot] = job;
			eng->tail++;
		}
	}
doorbell:
	if (eng->tail == start)
		return;
	/* The last descriptor written interrupts, so the ring is refilled. */
	desc->flags |= cpu_to_le32(NEURON_DMA_F_IRQ);
	/* writel() orders the descriptors before the doorbell. */
	neuron_wr32(&eng->ndev->hw, neuron_dma_reg(eng, NEURON_DMA_TAIL), eng->tail);
}

/* Consumes descriptors the engine passed; signals finished copies. */
static void neuron_dma_process_locked(struct neuron_dma_engine *eng)
{
	u32 hw_head;

	lockdep_assert_held(&eng->lock);
	hw_head = neuron_rd32(&eng->ndev->hw, neuron_dma_reg(eng, NEURON_DMA_HEAD));
	if (hw_head - eng->head > eng->tail - eng->head) {
		drm_err_ratelimited(&eng->ndev->drm,
				    "DMA engine %u: HEAD %u outside [%u, %u]\n",
				    eng->index, hw_head, eng->head, eng->tail);
		return;
	}
	/* The statuses were written before HEAD moved. */
	dma_rmb();
	while (eng->head != hw_head) {
		u32 slot = eng->head & (NEURON_DMA_ENTRIES - 1);
		struct neuron_job *job = eng->slot_job[slot];
		u32 status = le32_to_cpu(READ_ONCE(eng->ring[slot].status));

		eng->slot_job[slot] = NULL;
		eng->head++;
		if (WARN_ON_ONCE(!job))
			continue;
		if (status & NEURON_DMA_ERR_MASK && !job->dma_status)
			job->dma_status = status & NEURON_DMA_ERR_MASK;
		job->done_segs++;
		if (job->done_segs < job->num_segs)
			continue;

		list_del_init(&job->node);
		if (job->dma_status) {
			int err = job->dma_status == NEURON_DMA_ERR_ABORTED ?
				  -ECANCELED : -EIO;

			drm_dbg_driver(&eng->ndev->drm,
				       "DMA engine %u: copy %llu failed: error %u\n",
				       eng->index, job->seqno, job->dma_status);
			WRITE_ONCE(job->client->last_fault, job->dma_status);
			WRITE_ONCE(job->client->last_fault_seqno, job->seqno);
			trace_neuron_copy_complete(eng->ndev, eng->index,
						   job->seqno, job->bytes, err);
			neuron_job_signal_locked(job, err);
		} else {
			atomic64_add(job->bytes, &job->client->dma_bytes);
			trace_neuron_copy_complete(eng->ndev, eng->index,
						   job->seqno, job->bytes, 0);
			neuron_job_signal_locked(job, 0);
		}
	}
}

/**
 * neuron_dma_irq() - completion interrupt of a DMA engine (thread)
 * @ndev: the device
 * @index: the engine
 */
void neuron_dma_irq(struct neuron_device *ndev, u32 index)
{
	struct neuron_dma_engine *eng;

	if (!READ_ONCE(ndev->exec.ready) || index >= ndev->hw.num_dma)
		return;
	eng = &ndev->exec.engines[index];
	mutex_lock(&eng->lock);
	neuron_dma_process_locked(eng);
	neuron_dma_pump_locked(eng);
	mutex_unlock(&eng->lock);
}

/**
 * neuron_dma_fail_all_locked() - take every copy off an engine
 * @eng: the engine, reset or gone
 * @err: 0 to run the copies again, else the error they fail with
 * @signal: signal @err now rather than when the copy is run again
 */
void neuron_dma_fail_all_locked(struct neuron_dma_engine *eng, int err,
				bool signal)
{
	struct neuron_job *job, *tmp;

	lockdep_assert_held(&eng->lock);
	list_for_each_entry_safe(job, tmp, &eng->active, node) {
		list_del_init(&job->node);
		if (!err)
			continue;
		if (signal)
			neuron_job_signal_locked(job, err);
		else
			job->guilty_err = err;
	}
	memset(eng->slot_job, 0, NEURON_DMA_ENTRIES * sizeof(*eng->slot_job));
	eng->head = eng->tail;
}

static struct dma_fence *neuron_dma_run_job(struct drm_sched_job *sched_job)
{
	struct neuron_job *job = to_neuron_job(sched_job);
	struct neuron_dma_engine *eng = job->engine;
	struct neuron_device *ndev = eng->ndev;
	struct dma_fence *fence;
	int idx, ret;

	mutex_lock(&eng->lock);
	ret = neuron_job_begin_run_locked(job, eng->fence_context,
					  &eng->fence_seqno, &idx);
	if (ret < 0) {
		mutex_unlock(&eng->lock);
		return ERR_PTR(ret);
	}
	if (!ret)
		goto out;
	/* From the start: after a reset the copy runs again as a whole. */
	job->next_seg = 0;
	job->done_segs = 0;
	job->dma_status = 0;
	trace_neuron_copy(ndev, eng->index, job->seqno, job->bytes, 0);
	list_add_tail(&job->node, &eng->active);
	neuron_dma_pump_locked(eng);
	drm_dev_exit(idx);
out:
	fence = dma_fence_get(job->hw_fence);
	mutex_unlock(&eng->lock);
	return fence;
}

/**
 * neuron_dma_recover() - reset one engine and run its innocent copies again
 * @eng: the engine
 * @bad: the copy the scheduler's timeout handler took off its pending
 *	list, or NULL (the guilty copy is then the oldest on the engine)
 * @err: the guilty copy's error
 *
 * Return: false if the engine did not come back from its reset.
 */
bool neuron_dma_recover(struct neuron_dma_engine *eng,
			struct drm_sched_job *bad, int err)
{
	struct neuron_device *ndev = eng->ndev;
	struct neuron_hw *hw = &ndev->hw;
	struct neuron_job *guilty;
	bool ok = true;
	int idx;

	drm_sched_stop(&eng->sched, bad);

	mutex_lock(&eng->lock);
	if (drm_dev_enter(&ndev->drm, &idx)) {
		neuron_dma_process_locked(eng);
		guilty = bad ? to_neuron_job(bad) :
			list_first_entry_or_null(&eng->active, struct neuron_job, node);
		if (guilty && !list_empty(&guilty->node))
			guilty->guilty_err = err;

		neuron_wr32(hw, neuron_dma_reg(eng, NEURON_DMA_CTRL),
			    NEURON_DMA_CTRL_RESET);
		if (neuron_recover_wait(ndev, hw->regs + neuron_dma_reg(eng, NEURON_DMA_CTRL),
					NEURON_DMA_CTRL_RESET)) {
			ndev_err(ndev, "DMA engine %u: reset did not complete\n",
				 eng->index);
			ok = false;
		} else {
			neuron_dma_hw_init(eng);
		}
		drm_dev_exit(idx);
	}
	neuron_dma_fail_all_locked(eng, 0, false);
	if (ok) {
		eng->head = 0;
		eng->tail = 0;
	}
	atomic_inc(&eng->resets);
	mutex_unlock(&eng->lock);

	drm_sched_resubmit_jobs(&eng->sched);
	neuron_sched_start(&eng->sched);
	return ok;
}

static enum drm_gpu_sched_stat
neuron_dma_timedout_job(struct drm_sched_job *sched_job)
{
	struct neuron_job *job = to_neuron_job(sched_job);
	struct neuron_dma_engine *eng = job->engine;
	struct neuron_device *ndev = eng->ndev;
	bool fatal = false;
	int idx;

	if (drm_dev_enter(&ndev->drm, &idx)) {
		fatal = neuron_rd32(&ndev->hw, NEURON_REG_DEV_STATUS) &
			NEURON_DEV_STATUS_FATAL;
		drm_dev_exit(idx);
	}
	if (fatal) {
		neuron_device_recover(ndev, &eng->sched, sched_job);
		return NEURON_SCHED_STAT_RESET;
	}
	drm_warn(&ndev->drm, "DMA engine %u: copy %llu timed out, resetting the engine\n",
		 eng->index, job->seqno);
	if (!neuron_dma_recover(eng, sched_job, -ETIMEDOUT))
		neuron_device_recover(ndev, NULL, NULL);
	return NEURON_SCHED_STAT_RESET;
}

static const struct drm_sched_backend_ops neuron_dma_sched_ops = {
	.run_job = neuron_dma_run_job,
	.timedout_job = neuron_dma_timedout_job,
	.free_job = neuron_job_free,
};

/**
 * neuron_dma_init() - allocate an engine's ring and create its scheduler
 * @ndev: the device
 * @eng: the engine, zeroed
 * @index: its index
 *
 * The hardware is programmed later, by neuron_dma_hw_init().
 *
 * Return: 0 or a negative errno.
 */
int neuron_dma_init(struct neuron_device *ndev, struct neuron_dma_engine *eng,
		    u32 index)
{
	struct device *dev = ndev->drm.dev;
	int ret;

	eng->ndev = ndev;
	eng->index = index;
	INIT_LIST_HEAD(&eng->active);
	snprintf(eng->name, sizeof(eng->name), "neuron-dma%u", index);
	ret = drmm_mutex_init(&ndev->drm, &eng->lock);
	if (ret)
		return ret;
	eng->slot_job = drmm_kcalloc(&ndev->drm, NEURON_DMA_ENTRIES,
				     sizeof(*eng->slot_job), GFP_KERNEL);
	eng->ring = dmam_alloc_coherent(dev, NEURON_DMA_ENTRIES * sizeof(*eng->ring),
					&eng->ring_dma, GFP_KERNEL);
	if (!eng->slot_job || !eng->ring)
		return -ENOMEM;
	eng->fence_context = dma_fence_context_alloc(1);
	return neuron_sched_init(&eng->sched, &neuron_dma_sched_ops,
				 ndev->exec.reset_wq, NEURON_DMA_CREDITS,
				 msecs_to_jiffies(neuron_dma_timeout_ms),
				 eng->name, dev);
}

/* ------------------------------------------------------------------------
 * COPY
 */

/**
 * struct neuron_span - walks the bus addresses of a buffer range
 * @sgt: host buffer: its DMA-mapped SG table; device buffer: NULL
 * @sg: current DMA segment (host)
 * @addr: address of the next byte
 * @left: bytes contiguous from @addr (within the range)
 * @remaining: bytes of the range from @addr on
 */
struct neuron_span {
	struct sg_table *sgt;
	struct scatterlist *sg;
	u64 addr;
	u64 left;
	u64 remaining;
};

static int neuron_span_init(struct neuron_span *sp, struct neuron_bo *bo,
			    struct sg_table *sgt, u64 offset, u64 size)
{
	struct scatterlist *sg;
	int i;

	sp->sgt = sgt;
	sp->remaining = size;
	if (!sgt) {
		sp->addr = bo->node.start + offset;
		sp->left = size;
		return 0;
	}
	for_each_sgtable_dma_sg(sgt, sg, i) {
		u64 len = sg_dma_len(sg);

		if (offset < len) {
			sp->sg = sg;
			sp->addr = sg_dma_address(sg) + offset;
			sp->left = min(len - offset, size);
			return 0;
		}
		offset -= len;
	}
	return -EINVAL;
}

static int neuron_span_advance(struct neuron_span *sp, u64 len)
{
	sp->addr += len;
	sp->left -= len;
	sp->remaining -= len;
	if (sp->left || !sp->remaining)
		return 0;
	/* Only a host buffer's range ends a piece early. */
	sp->sg = sg_next(sp->sg);
	if (!sp->sg || !sg_dma_len(sp->sg))
		return -EINVAL;
	sp->addr = sg_dma_address(sp->sg);
	sp->left = min_t(u64, sg_dma_len(sp->sg), sp->remaining);
	return 0;
}

/* Splits a copy into segments contiguous on both sides. */
static int neuron_copy_build(struct neuron_job *job,
			     struct neuron_bo *src, struct sg_table *src_sgt,
			     u64 src_offset, struct neuron_bo *dst,
			     struct sg_table *dst_sgt, u64 dst_offset, u64 size)
{
	struct neuron_span s, d;
	u64 max_segs;
	u32 flags = 0;
	int ret;

	ret = neuron_span_init(&s, src, src_sgt, src_offset, size);
	if (ret)
		return ret;
	ret = neuron_span_init(&d, dst, dst_sgt, dst_offset, size);
	if (ret)
		return ret;
	if (src_sgt)
		flags |= NEURON_DMA_F_SRC_HOST;
	if (dst_sgt)
		flags |= NEURON_DMA_F_DST_HOST;

	/* Every segment ends a source piece, a destination piece or a maximum. */
	max_segs = (src_sgt ? src_sgt->nents : 1) + (dst_sgt ? dst_sgt->nents : 1) +
		   div_u64(size, NEURON_DMA_MAX_LEN) + 1;
	if (max_segs > U32_MAX)
		return -EINVAL;
	job->segs = kvmalloc_array(max_segs, sizeof(*job->segs), GFP_KERNEL);
	if (!job->segs)
		return -ENOMEM;

	while (s.remaining) {
		struct neuron_dma_seg *seg;
		u64 len = min3(s.left, d.left, (u64)NEURON_DMA_MAX_LEN);

		if (WARN_ON_ONCE(job->num_segs >= max_segs || !len))
			return -EINVAL;
		seg = &job->segs[job->num_segs++];
		seg->src = s.addr;
		seg->dst = d.addr;
		seg->len = len;
		seg->flags = flags;
		ret = neuron_span_advance(&s, len);
		if (!ret)
			ret = neuron_span_advance(&d, len);
		if (ret)
			return ret;
	}
	job->bytes = size;
	return 0;
}

/**
 * neuron_copy_ioctl() - DRM_IOCTL_NEURON_COPY
 * @drm: the DRM device
 * @data: &struct drm_neuron_copy
 * @file: the calling file
 *
 * Return: 0 or a negative errno as documented in the UAPI header.
 */
int neuron_copy_ioctl(struct drm_device *drm, void *data,
		      struct drm_file *file)
{
	struct neuron_device *ndev = to_neuron_device(drm);
	struct neuron_file_exec *fexec = &to_neuron_file(file)->exec;
	struct drm_neuron_copy *args = data;
	struct drm_neuron_sync *in_syncs;
	struct sg_table *src_sgt, *dst_sgt;
	struct neuron_bo *src, *dst;
	struct drm_sched_entity *entity;
	struct neuron_job *job;
	u64 src_offset, dst_offset;
	int ret;

	if (args->flags & ~DRM_NEURON_COPY_FLAGS_ALL || args->pad ||
	    args->reserved || args->out_sync.pad || !args->out_sync.handle)
		return -EINVAL;
	if (!args->size)
		return -EINVAL;
	if (args->engine == DRM_NEURON_ENGINE_ANY) {
		if (!fexec->dma_any_init)
			return -EINVAL;
		entity = &fexec->dma_any;
	} else if (args->engine < fexec->num_dma) {
		entity = &fexec->dma_entities[args->engine];
	} else {
		return -EINVAL;
	}
	if (args->num_in_syncs > DRM_NEURON_MAX_IN_SYNCS)
		return -EINVAL;
	if (!READ_ONCE(ndev->exec.ready) || !ndev->hw.ready)
		return -EIO;

	in_syncs = neuron_copy_in_syncs(args->in_syncs, args->num_in_syncs);
	if (IS_ERR(in_syncs))
		return PTR_ERR(in_syncs);

	job = neuron_job_alloc(ndev, file, NEURON_JOB_COPY, 2);
	if (!job) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = neuron_job_add_bo(job, file, args->src_handle, args->src_offset,
				args->size, &src, &src_sgt, &src_offset);
	if (ret)
		goto out_put;
	ret = neuron_job_add_bo(job, file, args->dst_handle, args->dst_offset,
				args->size, &dst, &dst_sgt, &dst_offset);
	if (ret)
		goto out_put;

	ret = -EINVAL;
	if (src == dst && args->src_offset < args->dst_offset + args->size &&
	    args->dst_offset < args->src_offset + args->size)
		goto out_put;

	ret = neuron_copy_build(job, src, src_sgt, src_offset, dst, dst_sgt,
				dst_offset, args->size);
	if (ret)
		goto out_put;

	ret = neuron_job_push(job, file, entity, in_syncs, args->num_in_syncs,
			      &args->out_sync, &args->seqno);
	goto out_free;

out_put:
	neuron_job_put_unarmed(job);
out_free:
	kvfree(in_syncs);
	return ret;
}
