// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the ring unit.
 *
 * Core queues and DMA engines work alike: a ring in host memory that the
 * driver fills and the device drains, a doorbell, a completion interrupt,
 * a reset of their own. Each is a &struct neuron_ring with its own
 * drm_gpu_scheduler, lock, fence context and list of jobs on the
 * hardware; what differs (descriptor layout, how completions are found,
 * which register resets the unit) is in its &struct neuron_ring_ops,
 * supplied by neuron_queue.c and neuron_dma.c. Running a job, clearing a
 * ring, resetting one unit and showing it in debugfs are written once,
 * here. Deciding when to reset, and resetting the whole device, is
 * neuron_reset.c's.
 *
 * Locking. Each ring has two locks, taken in this order:
 *  - &neuron_ring.lock, a mutex, serializes what puts jobs on the unit or
 *    takes the unit away, all in process context: run_job (the scheduler's
 *    work item), the reset of the unit or of the device (the reset
 *    workqueue), unplug, debugfs. It protects the fence seqnos and keeps a
 *    reset, which sleeps while the unit comes back, apart from writes.
 *  - &neuron_ring.irq_lock, a spinlock, protects what the completion
 *    interrupt touches: the unit's rings and indices, the jobs on
 *    &neuron_ring.inflight and their progress, &neuron_ring.paused, and the
 *    signalling of their hardware fences. The unit's MSI-X vector takes it
 *    in its hard handler, which consumes the completions and signals the
 *    fences there (no thread, no IRQ_STATUS access: every event sends its
 *    own message); everywhere else it is taken with interrupts disabled.
 *    A fence's own lock nests inside it.
 * While a unit is reset the ring is paused: the interrupt handler leaves
 * it alone, and the reset collects what completed up to the abort.
 */
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <linux/dma-fence.h>
#include <linux/interrupt.h>
#include <linux/seq_file.h>

#include "neuron_compat.h"
#include "neuron_drv.h"
#include "neuron_fence.h"
#include "neuron_job.h"
#include "neuron_ring.h"

/**
 * neuron_ring_init() - set up the driver's side of a ring
 * @ndev: the device
 * @ring: the ring, zeroed
 * @ops: the unit's operations
 * @kind: core queue or DMA engine
 * @index: core or engine index
 * @credits: jobs the unit holds at once
 * @timeout_ms: time a job may take on the unit
 *
 * The scheduler is created by neuron_ring_sched_init(), the hardware
 * programmed by @ops->hw_init.
 *
 * Return: 0 or a negative errno.
 */
int neuron_ring_init(struct neuron_device *ndev, struct neuron_ring *ring,
		     const struct neuron_ring_ops *ops,
		     enum neuron_ring_kind kind, u32 index, u32 credits,
		     unsigned int timeout_ms)
{
	bool core = kind == NEURON_RING_CORE;

	ring->ndev = ndev;
	ring->ops = ops;
	ring->kind = kind;
	ring->index = index;
	ring->credits = credits;
	ring->timeout_ms = timeout_ms;
	INIT_LIST_HEAD(&ring->inflight);
	atomic_set(&ring->irq_cpu, -1);
	snprintf(ring->name, sizeof(ring->name), "neuron-%s%u",
		 core ? "core" : "dma", index);
	snprintf(ring->label, sizeof(ring->label), "%s %u",
		 core ? "core" : "DMA engine", index);
	ring->fence_context = dma_fence_context_alloc(1);
	spin_lock_init(&ring->irq_lock);
	return drmm_mutex_init(&ndev->drm, &ring->lock);
}

/**
 * neuron_ring_sched_init() - create the ring's scheduler
 * @ring: the ring, initialized
 * @sched_ops: the backend operations of every ring
 * @submit_wq: where the scheduler's run_job and free_job work items run
 * @timeout_wq: where timeout handlers run
 *
 * Return: 0 or a negative errno.
 */
int neuron_ring_sched_init(struct neuron_ring *ring,
			   const struct drm_sched_backend_ops *sched_ops,
			   struct workqueue_struct *submit_wq,
			   struct workqueue_struct *timeout_wq)
{
	return neuron_sched_init(&ring->sched, sched_ops, submit_wq, timeout_wq,
				 ring->credits,
				 msecs_to_jiffies(ring->timeout_ms),
				 ring->name, ring->ndev->drm.dev);
}

/**
 * neuron_ring_steer_irq() - take a ring's completions on the submitting CPU
 * @ring: the ring a job is about to be pushed to, from the submitting
 *	ioctl (process context)
 *
 * The submitter waits for its job on the CPU it submits from, and the
 * scheduler's run_job work item runs there too (a bound workqueue). A
 * completion interrupt taken on another CPU makes the job need two CPUs:
 * the waiter is woken across CPUs and meets the handler's locks. In a VM
 * that needs both vCPU threads on the host at once, and on a busy host
 * one waits a host time slice (milliseconds) for the other. So an idle
 * ring's vector follows the CPU that submits to it. A ring with jobs on
 * the unit keeps its vector where it is: submitters on several CPUs do
 * not move it job by job. Moving a vector costs an MSI-X table write,
 * and is done only when the submitting CPU changes. The CPU is a hint
 * (the submitter may migrate), hence raw_smp_processor_id().
 */
void neuron_ring_steer_irq(struct neuron_ring *ring)
{
	int cpu = raw_smp_processor_id();
	bool idle;
	int idx;

	if (atomic_read(&ring->irq_cpu) == cpu || !ring->irq)
		return;
	spin_lock_irq(&ring->irq_lock);
	idle = list_empty(&ring->inflight);
	spin_unlock_irq(&ring->irq_lock);
	if (!idle || atomic_xchg(&ring->irq_cpu, cpu) == cpu)
		return;
	/* The vector is freed on unbind, after drm_dev_unplug(). */
	if (!drm_dev_enter(&ring->ndev->drm, &idx))
		return;
	if (irq_set_affinity(ring->irq, cpumask_of(cpu)))
		atomic_set(&ring->irq_cpu, -1);
	drm_dev_exit(idx);
}

/**
 * neuron_ring_signal_locked() - signal a job's hardware fence
 * @ring: the job's ring, its &neuron_ring.irq_lock held
 * @job: the job
 * @error: 0 or the negative errno the fence reports
 */
void neuron_ring_signal_locked(struct neuron_ring *ring,
			       struct neuron_job *job, int error)
{
	lockdep_assert_held(&ring->irq_lock);
	neuron_fence_signal(job->hw_fence, error);
}

/*
 * Creates the job's hardware fence on its first run (with &neuron_ring.lock
 * held: it allocates). A job that completed
 * before a reset, that carries an error or whose device is not ready or
 * gone is not run: its fence is (or already was) signalled.
 *
 * Return: 1 to put the job on the hardware (drm_dev_exit(*idx) follows),
 * 0 when it is not run, -ENOMEM.
 */
static int neuron_ring_begin_run_locked(struct neuron_ring *ring,
					struct neuron_job *job, int *idx)
{
	struct neuron_device *ndev = ring->ndev;
	int err;

	lockdep_assert_held(&ring->lock);
	if (!job->hw_fence) {
		job->hw_fence = neuron_fence_create(ring->fence_context,
						    ++ring->fence_seqno);
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
		spin_lock_irq(&ring->irq_lock);
		neuron_ring_signal_locked(ring, job, err);
		spin_unlock_irq(&ring->irq_lock);
		return 0;
	}
	return 1;
}

/**
 * neuron_ring_run_job() - &drm_sched_backend_ops.run_job of every ring
 * @sched_job: the job
 *
 * Also called again for every pending job after a reset
 * (drm_sched_resubmit_jobs()): a job that completed returns its signalled
 * fence, a guilty one has it signalled with its error, the others are
 * written to the ring again with the same fence.
 *
 * Return: the job's hardware fence, or an ERR_PTR().
 */
struct dma_fence *neuron_ring_run_job(struct drm_sched_job *sched_job)
{
	struct neuron_job *job = to_neuron_job(sched_job);
	struct neuron_ring *ring = job->ring;
	struct dma_fence *fence;
	int idx, ret;

	mutex_lock(&ring->lock);
	ret = neuron_ring_begin_run_locked(ring, job, &idx);
	if (ret < 0) {
		mutex_unlock(&ring->lock);
		return ERR_PTR(ret);
	}
	if (ret) {
		spin_lock_irq(&ring->irq_lock);
		list_add_tail(&job->node, &ring->inflight);
		ring->ops->write(ring, job);
		spin_unlock_irq(&ring->irq_lock);
		drm_dev_exit(idx);
	}
	fence = dma_fence_get(job->hw_fence);
	mutex_unlock(&ring->lock);
	return fence;
}

/**
 * neuron_ring_irq() - completion interrupt of a ring
 * @ring: the ring
 *
 * Hard interrupt context: consumes the unit's completions and signals the
 * fences of the jobs that are done, unless the ring is paused for a reset.
 */
void neuron_ring_irq(struct neuron_ring *ring)
{
	spin_lock(&ring->irq_lock);
	if (!ring->paused)
		ring->ops->process(ring);
	spin_unlock(&ring->irq_lock);
}

/**
 * neuron_ring_pause() - keep the interrupt handler off a ring
 * @ring: the ring, about to be reset with the device
 *
 * The ring stays paused until it is programmed again after the reset.
 */
void neuron_ring_pause(struct neuron_ring *ring)
{
	spin_lock_irq(&ring->irq_lock);
	ring->paused = true;
	spin_unlock_irq(&ring->irq_lock);
}

/**
 * neuron_ring_clear_locked() - take every job off a ring
 * @ring: the ring, its &neuron_ring.irq_lock held; the unit is reset or
 *	gone
 * @err: 0 to run the jobs again, else the error they fail with
 * @signal: signal @err now rather than when the job is run again
 */
void neuron_ring_clear_locked(struct neuron_ring *ring, int err, bool signal)
{
	struct neuron_job *job, *tmp;

	lockdep_assert_held(&ring->irq_lock);
	list_for_each_entry_safe(job, tmp, &ring->inflight, node) {
		list_del_init(&job->node);
		if (!err)
			continue;
		if (signal)
			neuron_ring_signal_locked(ring, job, err);
		else
			job->guilty_err = err;
	}
	if (ring->ops->forget)
		ring->ops->forget(ring);
}

/**
 * neuron_ring_recover() - reset one unit and run its innocent jobs again
 * @ring: the ring
 * @bad: the job the scheduler's timeout handler took off its pending
 *	list, or NULL (the guilty job is then the oldest on the ring)
 * @err: the guilty job's error
 *
 * Runs on the reset workqueue. Jobs that completed before the reset keep
 * their result; the others run again, in order, once the unit is back.
 * A unit that does not come back stays paused: the device reset that
 * follows programs it again.
 *
 * Return: false if the unit did not come back from its reset.
 */
bool neuron_ring_recover(struct neuron_ring *ring, struct drm_sched_job *bad,
			 int err)
{
	struct neuron_device *ndev = ring->ndev;
	struct neuron_job *guilty;
	bool ok = true;
	int idx;

	drm_sched_stop(&ring->sched, bad);

	mutex_lock(&ring->lock);
	if (drm_dev_enter(&ndev->drm, &idx)) {
		spin_lock_irq(&ring->irq_lock);
		ring->ops->process(ring);
		guilty = bad ? to_neuron_job(bad) :
			list_first_entry_or_null(&ring->inflight,
						 struct neuron_job, node);
		if (guilty && !list_empty(&guilty->node))
			guilty->guilty_err = err;
		ring->paused = true;
		spin_unlock_irq(&ring->irq_lock);

		if (ring->ops->reset(ring)) {
			ndev_err(ndev, "%s: reset did not complete\n",
				 ring->label);
			ok = false;
		} else {
			spin_lock_irq(&ring->irq_lock);
			ring->ops->hw_init(ring);
			ring->paused = false;
			spin_unlock_irq(&ring->irq_lock);
		}
		drm_dev_exit(idx);
	}
	spin_lock_irq(&ring->irq_lock);
	neuron_ring_clear_locked(ring, 0, false);
	spin_unlock_irq(&ring->irq_lock);
	atomic_inc(&ring->resets);
	mutex_unlock(&ring->lock);

	drm_sched_resubmit_jobs(&ring->sched);
	neuron_sched_start(&ring->sched);
	return ok;
}

/**
 * neuron_ring_show_regs() - print a unit's registers (debugfs)
 * @ring: the ring
 * @m: the seq_file
 * @base: the unit's register base
 * @regs: the registers to print
 * @count: entries in @regs
 *
 * Inside drm_dev_enter().
 */
void neuron_ring_show_regs(struct neuron_ring *ring, struct seq_file *m,
			   u32 base, const struct neuron_ring_reg *regs,
			   unsigned int count)
{
	struct neuron_hw *hw = &ring->ndev->hw;
	unsigned int i;

	for (i = 0; i < count; i++) {
		u32 reg = base + regs[i].offset;
		u64 val = regs[i].bits == 64 ? neuron_rd64(hw, reg) :
					       neuron_rd32(hw, reg);

		seq_printf(m, "%-12s %llu (%#llx)\n", regs[i].name, val, val);
	}
}

/**
 * neuron_ring_show() - debugfs view of a ring
 * @ring: the ring
 * @m: the seq_file
 *
 * The unit's registers and the driver's indices, its resets, and the jobs
 * on it. Takes the ring's locks, then drm_dev_enter() (the order of the
 * rest of the driver).
 *
 * Return: 0, or -ENODEV once the device is unplugged.
 */
int neuron_ring_show(struct neuron_ring *ring, struct seq_file *m)
{
	struct neuron_job *job;
	int idx, ret = 0;

	mutex_lock(&ring->lock);
	spin_lock_irq(&ring->irq_lock);
	if (!drm_dev_enter(&ring->ndev->drm, &idx)) {
		ret = -ENODEV;
		goto unlock;
	}
	ring->ops->show_regs(ring, m);
	drm_dev_exit(idx);

	seq_printf(m, "resets: %d%s\n", atomic_read(&ring->resets),
		   ring->paused ? " (paused)" : "");
	seq_puts(m, "inflight:\n");
	list_for_each_entry(job, &ring->inflight, node)
		ring->ops->show_job(job, m);
unlock:
	spin_unlock_irq(&ring->irq_lock);
	mutex_unlock(&ring->lock);
	return ret;
}
