// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the job object.
 *
 * A job holds a reference on each buffer it uses, and keeps the ranges of
 * host buffers it uses pinned and DMA-mapped, until it is released after
 * its fence signalled: no buffer is freed under the device. Every job also holds a
 * reference on its file's accounting, which so outlives the file.
 */
#include <drm/drm_gem.h>
#include <drm/neuron_accel.h>
#include <linux/dma-fence.h>
#include <linux/dma-mapping.h>
#include <linux/slab.h>

#include "neuron_accel_check.h"
#include "neuron_client.h"
#include "neuron_drv.h"
#include "neuron_gem.h"
#include "neuron_gem_host.h"
#include "neuron_job.h"
#include "neuron_pm.h"
#include "neuron_table.h"

/**
 * neuron_job_alloc() - a new job, not yet pushed to a ring
 * @ndev: the device
 * @client: the submitting file's accounting
 * @kind: SUBMIT or COPY
 * @max_bos: buffers the job may hold
 *
 * Return: the job or NULL.
 */
struct neuron_job *neuron_job_alloc(struct neuron_device *ndev,
				    struct neuron_client *client,
				    enum neuron_job_kind kind, u32 max_bos)
{
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
	atomic_inc(&ndev->jobs_alive);
	/* The ioctl holds the device awake; the job does until released. */
	neuron_pm_get_noresume(ndev);
	return job;
}

/**
 * neuron_job_release() - free a job and drop everything it holds
 * @job: a job never pushed, or one whose fence signalled
 *
 * Process context: it drops buffers and may sleep.
 */
void neuron_job_release(struct neuron_job *job)
{
	struct neuron_device *ndev = job->ndev;
	u32 i;

	for (i = 0; i < job->num_deps; i++)
		dma_fence_put(job->deps[i]);
	kfree(job->deps);
	for (i = 0; i < job->num_bos; i++) {
		if (job->ranges[i])
			neuron_bo_dma_put(job->ranges[i]);
		drm_gem_object_put(&job->bos[i]->base);
	}
	kfree(job->ranges);
	kfree(job->bos);
	if (job->table_pool)
		neuron_table_pool_put(job->table_pool, job->table_slot);
	else if (job->table)
		dma_free_coherent(ndev->drm.dev, job->table_size, job->table,
				  job->table_dma);
	kvfree(job->segs);
	if (job->fence)
		dma_fence_put(job->fence);
	atomic_dec(&job->client->jobs_inflight);
	neuron_client_put(job->client);
	kfree(job);

	neuron_pm_put(ndev);
	if (atomic_dec_and_test(&ndev->jobs_alive))
		wake_up_all(&ndev->jobs_idle);
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
 * the buffer, or another negative errno of neuron_bo_dma_get() (-EDQUOT:
 * a limit of the driver; -ENOMEM: the caller's RLIMIT_MEMLOCK, or memory).
 */
int neuron_job_add_bo(struct neuron_job *job, struct drm_file *file,
		      u32 handle, u64 offset, u64 size,
		      struct neuron_bo **bo_out, struct sg_table **sgt_out,
		      u64 *sg_offset)
{
	struct neuron_host_range *range = NULL;
	struct drm_gem_object *obj;
	struct neuron_bo *bo;
	int ret;

	obj = drm_gem_object_lookup(file, handle);
	if (!obj)
		return -ENOENT;
	bo = to_neuron_bo(obj);
	ret = neuron_check_range(offset, size, obj->size);
	if (ret)
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
