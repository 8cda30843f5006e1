// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the SUBMIT and COPY ioctls.
 *
 * Both check their arguments field by field (the common ones in one
 * place), take a reference on every buffer they use (host buffers pinned
 * and DMA-mapped), describe the work for the hardware (SUBMIT: a binding
 * table; COPY: segments contiguous on both sides) and push the job onto
 * the file's lane of its ring with its in-syncs as dependencies; the
 * job's fence goes to the out-sync.
 */
#include <drm/drm_device.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_syncobj.h>
#include <drm/neuron_accel.h>
#include <linux/dma-fence-chain.h>
#include <linux/dma-mapping.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "neuron_accel_check.h"
#include "neuron_client.h"
#include "neuron_dma.h"
#include "neuron_drv.h"
#include "neuron_exec.h"
#include "neuron_fence.h"
#include "neuron_gem.h"
#include "neuron_irq.h"
#include "neuron_job.h"
#include "neuron_ring.h"
#include "neuron_submit.h"
#include "neuron_table.h"

static_assert(DRM_NEURON_BIND_READ == NEURON_BIND_READ);
static_assert(DRM_NEURON_BIND_WRITE == NEURON_BIND_WRITE);
static_assert(DRM_NEURON_BIND_EXEC == NEURON_BIND_EXEC);

/*
 * What the argument checks (neuron_accel_check.h, shared with the
 * simulator device) need to know of the device and the file.
 */
static struct neuron_check_limits
neuron_check_limits(struct neuron_device *ndev, struct neuron_file_exec *fexec)
{
	return (struct neuron_check_limits){
		.num_cores = fexec->num_cores,
		.num_dma = fexec->num_dma,
		/* The last slot of the device's table holds the program. */
		.max_bindings = NEURON_MAX_BINDINGS - 1,
		.trace_size = sizeof(struct neuron_trace_header),
		.caps = ndev->hw.caps,
	};
}

/* Whether jobs can run: the rings are set up and the device is ready. */
static bool neuron_exec_ready(struct neuron_device *ndev)
{
	return READ_ONCE(ndev->exec->ready) && ndev->hw.ready;
}

/**
 * neuron_copy_in_syncs() - copy and check an array of in-syncs from user
 * @uptr: user pointer
 * @count: entries, at most DRM_NEURON_MAX_IN_SYNCS (neuron_check_copy(),
 *	neuron_check_submit())
 *
 * Return: the array (kvfree() it; NULL when @count is 0) or an ERR_PTR():
 * -EINVAL for a non-zero pad, -EFAULT.
 */
static struct drm_neuron_sync *neuron_copy_in_syncs(u64 uptr, u32 count)
{
	struct drm_neuron_sync *syncs;
	int ret;

	if (!count)
		return NULL;
	syncs = vmemdup_array_user(u64_to_user_ptr(uptr), count,
				   sizeof(*syncs));
	if (IS_ERR(syncs))
		return syncs;
	ret = neuron_check_in_syncs(syncs, count);
	if (ret) {
		kvfree(syncs);
		return ERR_PTR(ret);
	}
	return syncs;
}

/*
 * Where a job's fence goes: its out-sync, looked up (with the chain node
 * a timeline point needs) before the job is queued, so that nothing can
 * fail after.
 */
struct neuron_out_sync {
	struct drm_syncobj *syncobj;
	struct dma_fence_chain *chain;
	u64 point;
};

static void neuron_out_sync_put(struct neuron_out_sync *out)
{
	dma_fence_chain_free(out->chain);
	if (out->syncobj)
		drm_syncobj_put(out->syncobj);
}

/**
 * neuron_job_ready_push() - the last steps before a job can be pushed
 * @job: the job, built; its deps are set
 * @file: the submitting file
 * @in_syncs: user pointer to @num_in_syncs &struct drm_neuron_sync
 * @num_in_syncs: entries, at most DRM_NEURON_MAX_IN_SYNCS
 * @out_sync: the syncobj (point) that is to receive the job's fence
 * @push: receives the job and its fence's memory
 * @out: receives the out-sync
 *
 * Takes the fences the job waits for, finds its out-sync and allocates
 * its fence, so that nothing can fail once jobs are pushed.
 *
 * Return: 0, or -ENOENT for an unknown syncobj, -EINVAL for an in-sync
 * without a fence or a bad entry, -EFAULT, -ENOMEM; then @push and @out
 * hold nothing (the deps found are the job's, released with it).
 */
static int neuron_job_ready_push(struct neuron_job *job, struct drm_file *file,
				 u64 in_syncs, u32 num_in_syncs,
				 const struct drm_neuron_sync *out_sync,
				 struct neuron_push *push,
				 struct neuron_out_sync *out)
{
	struct drm_neuron_sync *syncs;
	int ret = 0;
	u32 i;

	syncs = neuron_copy_in_syncs(in_syncs, num_in_syncs);
	if (IS_ERR(syncs))
		return PTR_ERR(syncs);
	if (num_in_syncs) {
		job->deps = kcalloc(num_in_syncs, sizeof(*job->deps),
				    GFP_KERNEL);
		if (!job->deps)
			ret = -ENOMEM;
	}
	for (i = 0; !ret && i < num_in_syncs; i++) {
		ret = drm_syncobj_find_fence(file, syncs[i].handle,
					     syncs[i].point, 0,
					     &job->deps[job->num_deps]);
		if (!ret)
			job->num_deps++;
	}
	kvfree(syncs);
	if (ret)
		return ret;

	*out = (struct neuron_out_sync){ .point = out_sync->point };
	out->syncobj = drm_syncobj_find(file, out_sync->handle);
	if (!out->syncobj)
		return -ENOENT;
	if (out_sync->point) {
		out->chain = dma_fence_chain_alloc();
		if (!out->chain) {
			neuron_out_sync_put(out);
			return -ENOMEM;
		}
	}
	push->fence = neuron_fence_alloc();
	if (!push->fence) {
		neuron_out_sync_put(out);
		return -ENOMEM;
	}
	push->job = job;
	return 0;
}

/* Releases a job that was prepared but never pushed. */
static void neuron_push_abandon(struct neuron_push *push,
				struct neuron_out_sync *out)
{
	neuron_fence_free(push->fence);
	neuron_out_sync_put(out);
	neuron_job_release(push->job);
}

/**
 * neuron_jobs_push() - queue prepared jobs on one lane, in order
 * @lane: the submitting file's lane of the jobs' ring
 * @jobs: the jobs, with their fences allocated; their seqnos are set,
 *	and a reference to each fence is the caller's
 * @outs: the jobs' out-syncs, which receive their fences
 * @count: entries in @jobs and @outs
 *
 * Consumes the jobs and the out-syncs.
 */
static void neuron_jobs_push(struct neuron_file_ring *lane,
			     struct neuron_push *jobs,
			     struct neuron_out_sync *outs, u32 count)
{
	struct neuron_client *client = jobs[0].job->client;
	bool copy = jobs[0].job->kind == NEURON_JOB_COPY;
	u32 i;

	neuron_ring_push(lane, jobs, count);
	/* The jobs may be done and released already: only the fences are ours. */
	atomic64_add(count, copy ? &client->copies_submitted :
				   &client->jobs_submitted);
	for (i = 0; i < count; i++) {
		struct neuron_out_sync *out = &outs[i];

		if (out->chain)
			drm_syncobj_add_point(out->syncobj, out->chain,
					      jobs[i].fence, out->point);
		else
			drm_syncobj_replace_fence(out->syncobj, jobs[i].fence);
		drm_syncobj_put(out->syncobj);
	}
}

/* ------------------------------------------------------------------------
 * SUBMIT
 */

/**
 * neuron_sg_walk() - the DMA segments of a range of a mapped SG table
 * @sgt: the DMA-mapped table
 * @offset: start of the range
 * @size: bytes of the range
 * @out: receives one entry per segment, unless it is NULL
 *
 * Return: how many segments cover [@offset, @offset + @size), or 0 if the
 * table ends before the range does.
 */
VISIBLE_IF_KUNIT u32 neuron_sg_walk(struct sg_table *sgt, u64 offset,
				    u64 size, struct neuron_sg_entry *out)
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
EXPORT_SYMBOL_IF_KUNIT(neuron_sg_walk);

static int neuron_slot_prepare(struct neuron_job *job, struct drm_file *file,
			       const struct neuron_check_limits *limits,
			       struct neuron_slot *slot, u32 handle, u64 offset,
			       u64 size, u32 flags)
{
	struct neuron_bo *bo;
	int ret;

	ret = neuron_job_add_bo(job, file, handle, offset, size, &bo,
				&slot->sgt, &slot->offset);
	if (ret)
		return ret;
	slot->dev_addr = bo->region == DRM_NEURON_BO_HOST ? 0 : bo->node.start;
	slot->size = size;
	slot->flags = flags;
	slot->sg_count = 0;
	if (bo->region != DRM_NEURON_BO_HOST)
		return 0;
	ret = neuron_check_host_binding(bo->region, limits);
	if (ret)
		return ret;
	slot->sg_count = neuron_sg_walk(slot->sgt, slot->offset, size, NULL);
	if (!slot->sg_count)
		return -EINVAL;
	slot->flags |= NEURON_BIND_HOST_SG;
	return 0;
}

/**
 * neuron_binding_table_size() - bytes of a binding table and its SG arrays
 * @slots: the validated slots
 * @count: entries in @slots
 *
 * Return: the size, or SIZE_MAX on overflow.
 */
VISIBLE_IF_KUNIT size_t neuron_binding_table_size(const struct neuron_slot *slots,
						  u32 count)
{
	size_t total = 0;
	u32 i;

	for (i = 0; i < count; i++)
		total = size_add(total, slots[i].sg_count);
	return size_add(array_size(count, sizeof(struct neuron_binding)),
			array_size(total, sizeof(struct neuron_sg_entry)));
}
EXPORT_SYMBOL_IF_KUNIT(neuron_binding_table_size);

/**
 * neuron_binding_table_fill() - write a binding table and its SG arrays
 * @table: neuron_binding_table_size() bytes: @count bindings, then the
 *	SG entries of the host slots, in slot order
 * @table_dma: the device's address of @table
 * @slots: the validated slots
 * @count: entries in @slots
 */
VISIBLE_IF_KUNIT void neuron_binding_table_fill(struct neuron_binding *table,
						dma_addr_t table_dma,
						const struct neuron_slot *slots,
						u32 count)
{
	struct neuron_sg_entry *sg = (struct neuron_sg_entry *)(table + count);
	dma_addr_t sg_dma = table_dma + count * sizeof(*table);
	u32 i;

	for (i = 0; i < count; i++) {
		const struct neuron_slot *s = &slots[i];
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
			b->addr = cpu_to_le64(s->dev_addr + s->offset);
		}
	}
}
EXPORT_SYMBOL_IF_KUNIT(neuron_binding_table_fill);

/*
 * Writes the binding table and its SG arrays into a slot of the core's
 * pool, or into coherent memory of its own when it is larger than a slot
 * or every slot is held. Inside drm_dev_enter(): the slots' memory is
 * freed when the device is unbound.
 *
 * Return: 0, -EINVAL, -ENOMEM, or -ENODEV once the device is unbound.
 */
static int neuron_job_build_table(struct neuron_job *job,
				  struct neuron_table_pool *pool,
				  const struct neuron_slot *slots, u32 count)
{
	size_t size = neuron_binding_table_size(slots, count);
	int slot, idx;

	if (size == SIZE_MAX)
		return -EINVAL;
	if (!drm_dev_enter(&job->ndev->drm, &idx))
		return -ENODEV;
	slot = neuron_table_pool_get(pool, size, &job->table, &job->table_dma);
	if (slot >= 0) {
		job->table_pool = pool;
		job->table_slot = slot;
	} else {
		job->table = dma_alloc_coherent(job->ndev->drm.dev, size,
						&job->table_dma, GFP_KERNEL);
		if (!job->table) {
			drm_dev_exit(idx);
			return -ENOMEM;
		}
	}
	job->table_size = size;
	job->num_bindings = count;
	neuron_binding_table_fill(job->table, job->table_dma, slots, count);
	drm_dev_exit(idx);
	return 0;
}

/**
 * neuron_submit_prepare() - check one SUBMIT and build its job
 * @ndev: the device
 * @file: the calling file
 * @args: the SUBMIT, as userspace passed it
 * @push: receives the job
 * @out: receives its out-sync
 *
 * Return: 0, or a negative errno as documented in the UAPI header; then
 * nothing is held.
 */
static int neuron_submit_prepare(struct neuron_device *ndev,
				 struct drm_file *file,
				 const struct drm_neuron_submit *args,
				 struct neuron_push *push,
				 struct neuron_out_sync *out)
{
	struct neuron_file_exec *fexec = to_neuron_file(file)->exec;
	struct neuron_check_limits limits = neuron_check_limits(ndev, fexec);
	struct drm_neuron_binding *bindings;
	struct neuron_slot *slots = NULL;
	struct neuron_job *job;
	u32 i, n = args->num_bindings;
	int ret;

	ret = neuron_check_submit(args, &limits);
	if (ret)
		return ret;
	bindings = vmemdup_array_user(u64_to_user_ptr(args->bindings), n,
				      sizeof(*bindings));
	if (IS_ERR(bindings))
		return PTR_ERR(bindings);
	/* Profiling: the last binding receives the device's trace. */
	ret = neuron_check_bindings(args, bindings, &limits);
	if (ret)
		goto out_free;
	slots = kvcalloc(n + 1, sizeof(*slots), GFP_KERNEL);
	if (!slots) {
		ret = -ENOMEM;
		goto out_free;
	}

	job = neuron_job_alloc(ndev, fexec->client, NEURON_JOB_EXEC, n + 1);
	if (!job) {
		ret = -ENOMEM;
		goto out_free;
	}
	job->program_size = args->program_size;
	job->profile = args->flags & DRM_NEURON_SUBMIT_F_PROFILE;

	for (i = 0; i < n; i++) {
		ret = neuron_slot_prepare(job, file, &limits, &slots[i],
					  bindings[i].handle,
					  bindings[i].offset, bindings[i].size,
					  bindings[i].flags);
		if (ret)
			goto out_release;
	}
	/* The program image: one more slot, execute rights only. */
	ret = neuron_slot_prepare(job, file, &limits, &slots[n],
				  args->program_handle,
				  args->program_offset, args->program_size,
				  NEURON_BIND_EXEC);
	if (ret)
		goto out_release;
	ret = neuron_job_build_table(job,
				     neuron_exec_core(ndev->exec, args->core)->tables,
				     slots, n + 1);
	if (ret)
		goto out_release;
	ret = neuron_job_ready_push(job, file, args->in_syncs,
				    args->num_in_syncs, &args->out_sync, push,
				    out);
	if (ret)
		goto out_release;
	goto out_free;

out_release:
	neuron_job_release(job);
out_free:
	kvfree(slots);
	kvfree(bindings);
	return ret;
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
	struct neuron_file_exec *fexec = to_neuron_file(file)->exec;
	struct drm_neuron_submit *args = data;
	struct neuron_out_sync out;
	struct neuron_push push;
	int ret;

	if (!neuron_exec_ready(ndev))
		return -EIO;
	/* Completed jobs give back their table slots and buffers first. */
	neuron_ring_reap(ndev->exec);
	ret = neuron_submit_prepare(ndev, file, args, &push, &out);
	if (ret)
		return ret;
	neuron_jobs_push(&fexec->cores[args->core], &push, &out, 1);
	dma_fence_put(push.fence);
	args->seqno = push.seqno;
	return 0;
}

/**
 * neuron_submit_batch_ioctl() - DRM_IOCTL_NEURON_SUBMIT_BATCH
 * @drm: the DRM device
 * @data: &struct drm_neuron_submit_batch
 * @file: the calling file
 *
 * Every entry is checked and its job built before any is queued; the
 * entries of one core are then queued together, so the jobs that can run
 * are written with one doorbell.
 *
 * Return: 0 or a negative errno as documented in the UAPI header.
 */
int neuron_submit_batch_ioctl(struct drm_device *drm, void *data,
			      struct drm_file *file)
{
	struct neuron_device *ndev = to_neuron_device(drm);
	struct neuron_file_exec *fexec = to_neuron_file(file)->exec;
	struct drm_neuron_submit_batch *args = data;
	struct drm_neuron_submit __user *uentries;
	struct drm_neuron_submit *entries;
	struct neuron_out_sync *outs = NULL;
	struct neuron_push *jobs = NULL;
	u32 i, first, n = args->count;
	int ret = 0;

	ret = neuron_check_submit_batch(args);
	if (ret)
		return ret;
	if (!neuron_exec_ready(ndev))
		return -EIO;
	neuron_ring_reap(ndev->exec);

	uentries = u64_to_user_ptr(args->submits);
	entries = vmemdup_array_user(uentries, n, sizeof(*entries));
	if (IS_ERR(entries))
		return PTR_ERR(entries);
	jobs = kvcalloc(n, sizeof(*jobs), GFP_KERNEL);
	outs = kvcalloc(n, sizeof(*outs), GFP_KERNEL);
	if (!jobs || !outs) {
		ret = -ENOMEM;
		goto out_free;
	}
	for (i = 0; i < n; i++) {
		ret = neuron_submit_prepare(ndev, file, &entries[i], &jobs[i],
					    &outs[i]);
		if (ret)
			break;
	}
	if (ret) {
		/* All or nothing: release what was built. */
		while (i--)
			neuron_push_abandon(&jobs[i], &outs[i]);
		goto out_free;
	}

	/* Each run of entries on one core is queued together, in order. */
	for (first = 0, i = 1; i <= n; i++) {
		if (i < n && entries[i].core == entries[first].core)
			continue;
		neuron_jobs_push(&fexec->cores[entries[first].core],
				 &jobs[first], &outs[first], i - first);
		first = i;
	}
	/* The jobs are queued; a seqno that cannot be written back is -EFAULT. */
	for (i = 0; i < n; i++) {
		dma_fence_put(jobs[i].fence);
		if (put_user(jobs[i].seqno, &uentries[i].seqno))
			ret = -EFAULT;
	}
out_free:
	kvfree(outs);
	kvfree(jobs);
	kvfree(entries);
	return ret;
}

/* ------------------------------------------------------------------------
 * COPY
 */

/**
 * neuron_span_init() - start walking a buffer range
 * @sp: the walker
 * @dev_addr: device buffer: its device address
 * @sgt: host buffer: its DMA-mapped SG table; device buffer: NULL
 * @offset: start of the range in the buffer
 * @size: bytes of the range, not 0, within the buffer
 *
 * Return: 0, or -EINVAL if a host buffer's table ends before @offset.
 */
VISIBLE_IF_KUNIT int neuron_span_init(struct neuron_span *sp, u64 dev_addr,
				      struct sg_table *sgt, u64 offset, u64 size)
{
	struct scatterlist *sg;
	int i;

	sp->sgt = sgt;
	sp->remaining = size;
	if (!sgt) {
		sp->addr = dev_addr + offset;
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
EXPORT_SYMBOL_IF_KUNIT(neuron_span_init);

/**
 * neuron_span_advance() - move a walker on
 * @sp: the walker
 * @len: bytes, at most @sp->left
 *
 * Return: 0, or -EINVAL if a host buffer's table ends before the range.
 */
VISIBLE_IF_KUNIT int neuron_span_advance(struct neuron_span *sp, u64 len)
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
EXPORT_SYMBOL_IF_KUNIT(neuron_span_advance);

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

	ret = neuron_span_init(&s, src->node.start, src_sgt, src_offset, size);
	if (ret)
		return ret;
	ret = neuron_span_init(&d, dst->node.start, dst_sgt, dst_offset, size);
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

/* The jobs on an engine, as a hint for choosing one. */
static u32 neuron_copy_engine_load(const struct neuron_ring *ring)
{
	/* Read without the ring's lock: a stale count only balances worse. */
	return data_race(ring->num_inflight);
}

/*
 * The lane of a copy to any engine: while the file's previous such copy
 * has not completed, that copy's engine (so the file's copies run in
 * order), else the engine with the fewest jobs on it, @local (the engine
 * whose vector is on the submitting CPU) among equals.
 */
static struct neuron_file_ring *
neuron_copy_any_lane(struct neuron_file_exec *fexec, u32 local)
{
	u32 i, best = local;

	lockdep_assert_held(&fexec->submit_lock);
	if (fexec->any_last && !dma_fence_is_signaled(fexec->any_last))
		return &fexec->dma[fexec->any_engine];
	for (i = 0; i < fexec->num_dma; i++) {
		if (neuron_copy_engine_load(fexec->dma[i].ring) <
		    neuron_copy_engine_load(fexec->dma[best].ring))
			best = i;
	}
	fexec->any_engine = best;
	return &fexec->dma[best];
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
	struct neuron_file_exec *fexec = to_neuron_file(file)->exec;
	struct neuron_check_limits limits = neuron_check_limits(ndev, fexec);
	struct drm_neuron_copy *args = data;
	struct sg_table *src_sgt, *dst_sgt;
	struct neuron_bo *src, *dst;
	bool any = args->engine == DRM_NEURON_ENGINE_ANY;
	struct neuron_file_ring *lane;
	struct neuron_out_sync out;
	struct neuron_push push;
	struct neuron_job *job;
	u64 src_offset, dst_offset;
	int ret;

	ret = neuron_check_copy(args, &limits);
	if (ret)
		return ret;
	if (!neuron_exec_ready(ndev))
		return -EIO;
	neuron_ring_reap(ndev->exec);

	job = neuron_job_alloc(ndev, fexec->client, NEURON_JOB_COPY, 2);
	if (!job)
		return -ENOMEM;
	ret = neuron_job_add_bo(job, file, args->src_handle, args->src_offset,
				args->size, &src, &src_sgt, &src_offset);
	if (ret)
		goto out_put;
	ret = neuron_job_add_bo(job, file, args->dst_handle, args->dst_offset,
				args->size, &dst, &dst_sgt, &dst_offset);
	if (ret)
		goto out_put;

	if (src == dst) {
		ret = neuron_check_copy_overlap(args);
		if (ret)
			goto out_put;
	}

	ret = neuron_copy_build(job, src, src_sgt, src_offset, dst, dst_sgt,
				dst_offset, args->size);
	if (ret)
		goto out_put;
	ret = neuron_job_ready_push(job, file, args->in_syncs,
				    args->num_in_syncs, &args->out_sync, &push,
				    &out);
	if (ret)
		goto out_put;

	if (any) {
		mutex_lock(&fexec->submit_lock);
		lane = neuron_copy_any_lane(fexec,
					    neuron_irq_local_dma(ndev->irq));
	} else {
		lane = &fexec->dma[args->engine];
	}
	neuron_jobs_push(lane, &push, &out, 1);
	args->seqno = push.seqno;
	if (any) {
		swap(fexec->any_last, push.fence);
		mutex_unlock(&fexec->submit_lock);
	}
	dma_fence_put(push.fence);
	return 0;

out_put:
	neuron_job_release(job);
	return ret;
}
