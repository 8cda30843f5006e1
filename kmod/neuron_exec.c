// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the device's rings and the files' scheduler entities, from
 * probe to the last reference.
 *
 * Every core queue and every DMA engine is a ring with its own
 * drm_gpu_scheduler (neuron_ring.c); each open file has one scheduler
 * entity per ring (plus one spread over all engines).
 */
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <linux/dma-mapping.h>
#include <linux/slab.h>

#include "neuron_client.h"
#include "neuron_dma.h"
#include "neuron_drv.h"
#include "neuron_exec.h"
#include "neuron_job.h"
#include "neuron_queue.h"
#include "neuron_reset.h"
#include "neuron_ring.h"

/* What every ring's scheduler calls. */
static const struct drm_sched_backend_ops neuron_sched_ops = {
	.run_job = neuron_ring_run_job,
	.timedout_job = neuron_reset_timedout_job,
	.free_job = neuron_job_free,
};

/* Stops the device before its rings are freed (unbind, failed probe). */
static void neuron_exec_hw_fini(void *arg)
{
	struct neuron_device *ndev = arg;

	WRITE_ONCE(ndev->exec->ready, false);
	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~0u);
	neuron_hw_reset(&ndev->hw);
}

/* Last reference to the DRM device: no file and no job remain. */
static void neuron_exec_fini(struct drm_device *drm, void *arg)
{
	struct neuron_device *ndev = to_neuron_device(drm);
	struct neuron_exec *exec = arg;
	u32 i;

	if (!wait_event_timeout(ndev->jobs_idle, !atomic_read(&ndev->jobs_alive),
				msecs_to_jiffies(10000)))
		ndev_err(ndev, "%d jobs still alive at teardown\n",
			 atomic_read(&ndev->jobs_alive));
	for (i = 0; i < exec->num_sched; i++)
		drm_sched_fini(&exec->rings[i]->sched);
	if (exec->reset_wq)
		destroy_workqueue(exec->reset_wq);
	if (exec->submit_wq)
		destroy_workqueue(exec->submit_wq);
}

/**
 * neuron_exec_init() - set up the core queues and DMA engines
 * @ndev: the device, identified and reset, interrupts not yet set up
 *
 * Rings (dmam), schedulers (their drm_sched_fini() is a drmm action, so
 * they outlive the PCI binding while files hold entities), then a devm
 * action that resets the device before the rings are freed, then the
 * rings are programmed.
 *
 * Return: 0 or a negative errno.
 */
int neuron_exec_init(struct neuron_device *ndev)
{
	struct neuron_hw *hw = &ndev->hw;
	struct neuron_exec *exec;
	u32 i, n;
	int ret;

	/*
	 * Descriptors and SG entries take segments of up to a DMA descriptor's
	 * maximum length; the PCI default of 64 KiB would only split them.
	 */
	dma_set_max_seg_size(ndev->drm.dev, NEURON_DMA_MAX_LEN);

	init_waitqueue_head(&ndev->jobs_idle);
	exec = drmm_kzalloc(&ndev->drm, sizeof(*exec), GFP_KERNEL);
	if (!exec)
		return -ENOMEM;
	exec->ndev = ndev;
	neuron_reset_init(exec);
	ndev->exec = exec;

	for (i = 0; i < hw->num_cores; i++) {
		struct neuron_ring *ring = neuron_queue_create(ndev, i);

		if (IS_ERR(ring))
			return PTR_ERR(ring);
		exec->rings[exec->num_cores++] = ring;
	}
	for (i = 0; i < hw->num_dma; i++) {
		struct neuron_ring *ring = neuron_dma_create(ndev, i);

		if (IS_ERR(ring))
			return PTR_ERR(ring);
		exec->rings[exec->num_cores + exec->num_dma++] = ring;
		exec->dma_scheds[i] = &ring->sched;
	}

	/*
	 * drmm actions run in reverse order: registered after the rings were
	 * allocated, the schedulers are finished before the rings are freed.
	 * neuron_exec_fini() skips the workqueues and schedulers not set up.
	 */
	ret = drmm_add_action_or_reset(&ndev->drm, neuron_exec_fini, exec);
	if (ret)
		return ret;

	/*
	 * The schedulers' work items run on the CPU that queued them (a
	 * bound workqueue, as nouveau's), not on drm_sched's own unbound
	 * one: drm_sched_entity_push_job() in SUBMIT queues run_job on the
	 * submitter's CPU, which runs it when the submitter waits, instead
	 * of waking another, idle CPU for it. A work item never runs on two
	 * CPUs at once, so run_job stays serialized per ring; run_job and
	 * free_job may run at the same time, and share nothing unlocked.
	 */
	exec->submit_wq = alloc_workqueue("neuron-submit", WQ_MEM_RECLAIM, 0);
	exec->reset_wq = alloc_ordered_workqueue("neuron-reset", 0);
	if (!exec->submit_wq || !exec->reset_wq)
		return -ENOMEM;
	n = neuron_exec_num_rings(exec);
	for (i = 0; i < n; i++) {
		ret = neuron_ring_sched_init(exec->rings[i], &neuron_sched_ops,
					     exec->submit_wq, exec->reset_wq);
		if (ret)
			return ret;
		exec->num_sched++;
	}

	/* Registered after the rings: runs before they are freed. */
	ret = devm_add_action_or_reset(ndev->drm.dev, neuron_exec_hw_fini, ndev);
	if (ret)
		return ret;

	for (i = 0; i < n; i++)
		exec->rings[i]->ops->hw_init(exec->rings[i]);
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
	struct neuron_exec *exec = ndev->exec;
	u32 i, n;

	if (!exec || !exec->num_sched)
		return;
	cancel_work_sync(&exec->recover_work);
	WRITE_ONCE(exec->ready, false);
	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~0u);
	neuron_hw_reset(&ndev->hw);
	n = neuron_exec_num_rings(exec);
	for (i = 0; i < n; i++) {
		struct neuron_ring *ring = exec->rings[i];

		mutex_lock(&ring->lock);
		spin_lock_irq(&ring->irq_lock);
		neuron_ring_clear_locked(ring, -ENODEV, true);
		spin_unlock_irq(&ring->irq_lock);
		mutex_unlock(&ring->lock);
	}
}

/**
 * neuron_exec_file_open() - per-file scheduling state at open
 * @ndev: the device
 *
 * Return: the state, or an ERR_PTR().
 */
struct neuron_file_exec *neuron_exec_file_open(struct neuron_device *ndev)
{
	struct neuron_exec *exec = ndev->exec;
	struct neuron_file_exec *fexec;
	u32 i;
	int ret;

	fexec = kzalloc(sizeof(*fexec), GFP_KERNEL);
	if (!fexec)
		return ERR_PTR(-ENOMEM);
	mutex_init(&fexec->submit_lock);
	fexec->client = neuron_client_create();
	if (!fexec->client) {
		ret = -ENOMEM;
		goto err;
	}

	for (i = 0; i < exec->num_cores; i++) {
		struct drm_gpu_scheduler *sched = &neuron_exec_core(exec, i)->sched;

		ret = drm_sched_entity_init(&fexec->core_entities[i],
					    DRM_SCHED_PRIORITY_NORMAL, &sched, 1,
					    NULL);
		if (ret)
			goto err;
		fexec->num_cores++;
	}
	for (i = 0; i < exec->num_dma; i++) {
		ret = drm_sched_entity_init(&fexec->dma_entities[i],
					    DRM_SCHED_PRIORITY_NORMAL,
					    &exec->dma_scheds[i], 1, NULL);
		if (ret)
			goto err;
		fexec->num_dma++;
	}
	if (exec->num_dma) {
		ret = drm_sched_entity_init(&fexec->dma_any,
					    DRM_SCHED_PRIORITY_NORMAL,
					    exec->dma_scheds, exec->num_dma,
					    NULL);
		if (ret)
			goto err;
		fexec->dma_any_init = true;
	}
	return fexec;

err:
	neuron_exec_file_close(fexec);
	return ERR_PTR(ret);
}

/**
 * neuron_exec_file_close() - per-file scheduling state at close
 * @fexec: the file's state; freed
 *
 * Waits (a bounded time, not at all for a killed process) for the file's
 * queued jobs to reach the hardware and cancels the rest. Jobs on the
 * hardware finish on their own and then drop their buffers.
 */
void neuron_exec_file_close(struct neuron_file_exec *fexec)
{
	u32 i;

	for (i = 0; i < fexec->num_cores; i++)
		drm_sched_entity_destroy(&fexec->core_entities[i]);
	for (i = 0; i < fexec->num_dma; i++)
		drm_sched_entity_destroy(&fexec->dma_entities[i]);
	if (fexec->dma_any_init)
		drm_sched_entity_destroy(&fexec->dma_any);
	if (fexec->client)
		neuron_client_put(fexec->client);
	mutex_destroy(&fexec->submit_lock);
	kfree(fexec);
}
