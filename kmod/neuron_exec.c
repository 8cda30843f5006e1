// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the device's rings and the files' lanes of them, from probe to
 * the last reference.
 *
 * Every core queue and every DMA engine is a ring (neuron_ring.c); each
 * open file has one lane per ring.
 */
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <linux/dma-fence.h>
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
	/* No timer may fire into a destroyed workqueue. */
	for (i = 0; i < neuron_exec_num_rings(exec); i++) {
		cancel_delayed_work_sync(&exec->rings[i]->timeout_work);
		cancel_work_sync(&exec->rings[i]->run_work);
	}
	cancel_delayed_work_sync(&exec->release_work);
	neuron_ring_reap(exec);
	if (exec->reset_wq)
		destroy_workqueue(exec->reset_wq);
	if (exec->submit_wq)
		destroy_workqueue(exec->submit_wq);
}

/**
 * neuron_exec_init() - set up the core queues and DMA engines
 * @ndev: the device, identified and reset, interrupts not yet set up
 *
 * Rings (drmm and dmam: they outlive the PCI binding while files hold
 * lanes), the workqueues, then a devm action that resets the device
 * before the rings' DMA memory is freed, then the rings are programmed.
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
	init_llist_head(&exec->done);
	INIT_DELAYED_WORK(&exec->release_work, neuron_ring_release_work);
	init_waitqueue_head(&exec->lane_drained);
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
	}
	n = neuron_exec_num_rings(exec);
	for (i = 0; i < n; i++)
		neuron_reset_ring_init(exec->rings[i]);

	/*
	 * drmm actions run in reverse order: registered after the rings were
	 * allocated, neuron_exec_fini() runs before they are freed. It skips
	 * the workqueues not set up.
	 */
	ret = drmm_add_action_or_reset(&ndev->drm, neuron_exec_fini, exec);
	if (ret)
		return ret;

	/*
	 * A job is written from the ioctl when it can run. The work that
	 * writes the jobs that had to wait runs on the CPU that queued it (a
	 * bound workqueue): that of the interrupt or fence callback that
	 * made them runnable, on the CPU of the ring's vector.
	 */
	exec->submit_wq = alloc_workqueue("neuron-submit", WQ_MEM_RECLAIM, 0);
	exec->reset_wq = alloc_ordered_workqueue("neuron-reset", 0);
	if (!exec->submit_wq || !exec->reset_wq)
		return -ENOMEM;

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
 * on it fails with -ENODEV. Jobs still waiting fail as they become
 * runnable.
 */
void neuron_exec_unplug(struct neuron_device *ndev)
{
	struct neuron_exec *exec = ndev->exec;
	u32 i, n;

	if (!exec || !READ_ONCE(exec->ready))
		return;
	cancel_work_sync(&exec->recover_work);
	WRITE_ONCE(exec->ready, false);
	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~0u);
	neuron_hw_reset(&ndev->hw);
	n = neuron_exec_num_rings(exec);
	for (i = 0; i < n; i++) {
		struct neuron_ring *ring = exec->rings[i];

		cancel_delayed_work_sync(&ring->timeout_work);
		mutex_lock(&ring->lock);
		spin_lock_irq(&ring->irq_lock);
		neuron_ring_clear_locked(ring, -ENODEV);
		spin_unlock_irq(&ring->irq_lock);
		neuron_ring_dispatch_locked(ring);
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
		ret = neuron_file_ring_init(&fexec->cores[i],
					    neuron_exec_core(exec, i));
		if (ret)
			goto err;
		fexec->num_cores++;
	}
	for (i = 0; i < exec->num_dma; i++) {
		ret = neuron_file_ring_init(&fexec->dma[i],
					    neuron_exec_dma(exec, i));
		if (ret)
			goto err;
		fexec->num_dma++;
	}
	return fexec;

err:
	neuron_exec_file_close(ndev, fexec);
	return ERR_PTR(ret);
}

/**
 * neuron_exec_file_close() - per-file scheduling state at close
 * @ndev: the device
 * @fexec: the file's state; freed
 *
 * Waits (a bounded time for an exiting process, not after it is killed)
 * for the file's waiting jobs to reach the hardware and cancels the rest
 * (neuron_file_ring_fini()). Jobs on the hardware finish on their own and
 * then drop their buffers.
 */
void neuron_exec_file_close(struct neuron_device *ndev,
			    struct neuron_file_exec *fexec)
{
	u32 i;

	for (i = 0; i < fexec->num_cores; i++)
		neuron_file_ring_fini(&fexec->cores[i]);
	for (i = 0; i < fexec->num_dma; i++)
		neuron_file_ring_fini(&fexec->dma[i]);
	dma_fence_put(fexec->any_last);
	/* The buffers of the jobs that completed go with the file. */
	neuron_ring_reap(ndev->exec);
	if (fexec->client)
		neuron_client_put(fexec->client);
	mutex_destroy(&fexec->submit_lock);
	kfree(fexec);
}
