// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the ring unit, and the scheduling of jobs onto it.
 *
 * Core queues and DMA engines work alike: a ring in host memory that the
 * driver fills and the device drains, a doorbell, a completion interrupt,
 * a reset of their own. Each is a &struct neuron_ring with its own lock,
 * list of jobs on the hardware and credits; what differs (descriptor
 * layout, how completions are found, which register resets the unit) is
 * in its &struct neuron_ring_ops, supplied by neuron_queue.c and
 * neuron_dma.c. Scheduling, running a job, clearing a ring, resetting one
 * unit and showing it in debugfs are written once, here. Deciding when to
 * reset, and resetting the whole device, is neuron_reset.c's.
 *
 * Scheduling. Every open file has a lane (&struct neuron_file_ring) per
 * ring. A job is pushed onto its lane from the ioctl and written to the
 * unit in that same call when the lane has nothing waiting, its fences
 * have signalled and the unit has a credit free: no work item, no other
 * thread between the ioctl and the doorbell. Otherwise it waits on its
 * lane; a fence callback or a completion that frees a credit kicks the
 * ring's run_work, which writes the waiting jobs, one per lane in turn.
 * A job's fence is signalled by the completion interrupt; the job itself
 * is released (its buffers dropped) by the next SUBMIT or COPY, or by a
 * work item a jiffy later: not one work item per job.
 *
 * Locking. Each ring has two locks, taken in this order:
 *  - &neuron_ring.lock, a mutex, serializes what puts jobs on the unit or
 *    takes the unit away, all in process context: pushes and run_work,
 *    the reset of the unit or of the device (the reset workqueue),
 *    unplug, debugfs. It protects the lanes and their waiting jobs, and
 *    keeps a reset, which sleeps while the unit comes back, apart from
 *    writes.
 *  - &neuron_ring.irq_lock, a spinlock, protects what the completion
 *    interrupt touches: the unit's rings and indices, the jobs on
 *    &neuron_ring.inflight and their progress, the credits,
 *    &neuron_ring.paused, and the signalling of the fences. The unit's
 *    MSI-X vector takes it in its hard handler, which consumes the
 *    completions and signals the fences there (no thread, no IRQ_STATUS
 *    access: every event sends its own message); everywhere else it is
 *    taken with interrupts disabled. A fence's own lock nests inside it.
 * While a unit is reset the ring is paused: the interrupt handler leaves
 * it alone, and the reset collects what completed up to the abort.
 */
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <linux/dma-fence.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "neuron_compat.h"
#include "neuron_drv.h"
#include "neuron_fence.h"
#include "neuron_job.h"
#include "neuron_ring.h"

static void neuron_ring_run_work(struct work_struct *work);

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
 * The hardware is programmed by @ops->hw_init; neuron_exec_init() sets
 * up &neuron_ring.timeout_work.
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
	INIT_LIST_HEAD(&ring->lanes);
	INIT_WORK(&ring->run_work, neuron_ring_run_work);
	snprintf(ring->name, sizeof(ring->name), "neuron-%s%u",
		 core ? "core" : "dma", index);
	snprintf(ring->label, sizeof(ring->label), "%s %u",
		 core ? "core" : "DMA engine", index);
	spin_lock_init(&ring->irq_lock);
	return drmm_mutex_init(&ndev->drm, &ring->lock);
}

/**
 * neuron_ring_reap() - release the jobs whose fences signalled
 * @exec: the device's execution state
 *
 * Process context: SUBMIT and COPY call it before they push, so under
 * load the submitter releases what completed; the release work takes
 * what is left.
 */
void neuron_ring_reap(struct neuron_exec *exec)
{
	struct llist_node *done = llist_del_all(&exec->done);
	struct neuron_job *job, *tmp;

	llist_for_each_entry_safe(job, tmp, done, done)
		neuron_job_release(job);
}

/**
 * neuron_ring_release_work() - &neuron_exec.release_work
 * @work: the work item
 */
void neuron_ring_release_work(struct work_struct *work)
{
	neuron_ring_reap(container_of(to_delayed_work(work), struct neuron_exec,
				      release_work));
}

/*
 * Signals a job that is on no list any more and hands it over to be
 * released. Any context.
 */
static void neuron_ring_retire(struct neuron_ring *ring,
			       struct neuron_job *job, int error)
{
	struct neuron_exec *exec = ring->ndev->exec;

	neuron_fence_signal(job->fence, error);
	/* A jiffy's delay lets the next SUBMIT or COPY reap it instead. */
	if (llist_add(&job->done, &exec->done))
		queue_delayed_work(exec->submit_wq, &exec->release_work, 1);
}

/**
 * neuron_ring_complete_locked() - take a finished job off the unit
 * @ring: the job's ring, its &neuron_ring.irq_lock held
 * @job: a job on &neuron_ring.inflight
 * @error: 0 or the negative errno its fence reports
 *
 * Signals the job's fence, frees its credit (kicking the ring's run_work
 * when a job waits for one) and restarts the timeout for the jobs left.
 */
void neuron_ring_complete_locked(struct neuron_ring *ring,
				 struct neuron_job *job, int error)
{
	struct neuron_exec *exec = ring->ndev->exec;

	lockdep_assert_held(&ring->irq_lock);
	list_del_init(&job->node);
	ring->num_inflight--;
	if (list_empty(&ring->inflight))
		cancel_delayed_work(&ring->timeout_work);
	else
		mod_delayed_work(exec->reset_wq, &ring->timeout_work,
				 msecs_to_jiffies(ring->timeout_ms));
	if (ring->starved) {
		ring->starved = false;
		queue_work(exec->submit_wq, &ring->run_work);
	}
	neuron_ring_retire(ring, job, error);
}

/*
 * Moves a job onto the unit: fails it when the device is not ready or
 * gone, else writes it if the unit has a credit. The caller then rings
 * the doorbell once for the jobs it wrote (neuron_ring_kick_locked()).
 *
 * Return: false when the job stays where it is: the unit is out of
 * credits (a completion kicks run_work) or paused (its reset does).
 */
static bool neuron_ring_write_locked(struct neuron_ring *ring,
				     struct neuron_job *job)
{
	struct neuron_device *ndev = ring->ndev;
	int err = 0, idx;

	lockdep_assert_held(&ring->irq_lock);
	if (!ndev->hw.ready)
		err = -EIO;
	else if (!drm_dev_enter(&ndev->drm, &idx))
		err = -ENODEV;
	if (err) {
		list_del_init(&job->node);
		neuron_ring_retire(ring, job, err);
		return true;
	}
	if (ring->paused || ring->num_inflight >= ring->credits) {
		ring->starved = !ring->paused;
		drm_dev_exit(idx);
		return false;
	}
	list_del_init(&job->node);
	if (list_empty(&ring->inflight))
		mod_delayed_work(ndev->exec->reset_wq, &ring->timeout_work,
				 msecs_to_jiffies(ring->timeout_ms));
	list_add_tail(&job->node, &ring->inflight);
	ring->num_inflight++;
	ring->ops->write(ring, job);
	drm_dev_exit(idx);
	return true;
}

/* Rings the unit's doorbell for the jobs written since the last time. */
static void neuron_ring_kick_locked(struct neuron_ring *ring)
{
	int idx;

	lockdep_assert_held(&ring->irq_lock);
	/* Unplugged: the jobs written are failed with the rest. */
	if (!ring->ops->kick || !drm_dev_enter(&ring->ndev->drm, &idx))
		return;
	ring->ops->kick(ring);
	drm_dev_exit(idx);
}

/* Takes the lane's callback off the fence it waited for. */
static void neuron_lane_unblock(struct neuron_file_ring *lane)
{
	lockdep_assert_held(&lane->ring->lock);
	if (!lane->blocker)
		return;
	/* Under the fence's lock: the callback is not running afterwards. */
	dma_fence_remove_callback(lane->blocker, &lane->blocker_cb);
	lane->blocker = NULL;
}

static void neuron_lane_unblocked(struct dma_fence *fence,
				  struct dma_fence_cb *cb)
{
	struct neuron_file_ring *lane =
		container_of(cb, struct neuron_file_ring, blocker_cb);
	struct neuron_ring *ring = lane->ring;

	queue_work(ring->ndev->exec->submit_wq, &ring->run_work);
}

/*
 * Whether @job, the first waiting job of @lane, waits for a fence: drops
 * the fences that signalled, and hooks the lane's callback to the first
 * one that has not.
 */
static bool neuron_lane_blocked(struct neuron_file_ring *lane,
				struct neuron_job *job)
{
	lockdep_assert_held(&lane->ring->lock);
	while (job->num_deps) {
		struct dma_fence *fence = job->deps[job->num_deps - 1];

		if (!dma_fence_is_signaled(fence)) {
			if (lane->blocker == fence)
				return true;
			neuron_lane_unblock(lane);
			if (!dma_fence_add_callback(fence, &lane->blocker_cb,
						    neuron_lane_unblocked)) {
				lane->blocker = fence;
				return true;
			}
		}
		if (lane->blocker == fence)
			neuron_lane_unblock(lane);
		job->deps[--job->num_deps] = NULL;
		dma_fence_put(fence);
	}
	return false;
}

/**
 * neuron_ring_dispatch_locked() - write the waiting jobs that can run
 * @ring: the ring, its &neuron_ring.lock held
 *
 * One job of each lane in turn, until no lane has a job whose fences
 * signalled or the unit has no credit left; the lane that found no
 * credit is served first next time. One doorbell for all of them.
 */
void neuron_ring_dispatch_locked(struct neuron_ring *ring)
{
	struct wait_queue_head *drained = &ring->ndev->exec->lane_drained;
	struct neuron_file_ring *lane, *tmp;
	bool wrote, any = false;

	lockdep_assert_held(&ring->lock);
	if (ring->stopped)
		return;
	do {
		wrote = false;
		list_for_each_entry_safe(lane, tmp, &ring->lanes, node) {
			struct neuron_job *job;
			bool written;

			job = list_first_entry(&lane->waiting, struct neuron_job,
					       node);
			if (neuron_lane_blocked(lane, job))
				continue;
			spin_lock_irq(&ring->irq_lock);
			written = neuron_ring_write_locked(ring, job);
			spin_unlock_irq(&ring->irq_lock);
			if (!written) {
				list_rotate_to_front(&lane->node, &ring->lanes);
				goto kick;
			}
			wrote = true;
			any = true;
			if (list_empty(&lane->waiting)) {
				list_del_init(&lane->node);
				if (wq_has_sleeper(drained))
					wake_up_all(drained);
			}
		}
	} while (wrote);
kick:
	if (any) {
		spin_lock_irq(&ring->irq_lock);
		neuron_ring_kick_locked(ring);
		spin_unlock_irq(&ring->irq_lock);
	}
}

static void neuron_ring_run_work(struct work_struct *work)
{
	struct neuron_ring *ring = container_of(work, struct neuron_ring,
						run_work);

	mutex_lock(&ring->lock);
	neuron_ring_dispatch_locked(ring);
	mutex_unlock(&ring->lock);
}

/**
 * struct neuron_lane_cancel - the jobs a closed file left waiting
 * @ring: their ring
 * @jobs: the jobs, in order; they fail with -ECANCELED
 * @after: the last of the file's jobs on the unit, or NULL: the lane's
 *	fences signal in order, so the cancelled jobs fail after it
 * @cb: on @after: queues @work
 * @work: fails @jobs and frees this; a work item, not the callback, since
 *	a fence is not signalled from inside another's callback
 */
struct neuron_lane_cancel {
	struct neuron_ring *ring;
	struct list_head jobs;
	struct dma_fence *after;
	struct dma_fence_cb cb;
	struct work_struct work;
};

static void neuron_lane_cancel_work(struct work_struct *work)
{
	struct neuron_lane_cancel *c =
		container_of(work, struct neuron_lane_cancel, work);
	struct neuron_job *job, *tmp;

	list_for_each_entry_safe(job, tmp, &c->jobs, node) {
		list_del_init(&job->node);
		neuron_ring_retire(c->ring, job, -ECANCELED);
	}
	dma_fence_put(c->after);
	kfree(c);
}

static void neuron_lane_cancel_cb(struct dma_fence *fence,
				  struct dma_fence_cb *cb)
{
	struct neuron_lane_cancel *c =
		container_of(cb, struct neuron_lane_cancel, cb);

	queue_work(c->ring->ndev->exec->submit_wq, &c->work);
}

/* The fence of the last job of @lane on the unit, or NULL. */
static struct dma_fence *neuron_lane_last_fence(struct neuron_file_ring *lane)
{
	struct neuron_ring *ring = lane->ring;
	struct dma_fence *last = NULL;
	struct neuron_job *job;

	spin_lock_irq(&ring->irq_lock);
	list_for_each_entry_reverse(job, &ring->inflight, node) {
		if (job->fence->context == lane->fence_context) {
			last = dma_fence_get(job->fence);
			break;
		}
	}
	spin_unlock_irq(&ring->irq_lock);
	return last;
}

/**
 * neuron_file_ring_init() - a file's lane of a ring, at open
 * @lane: the lane, zeroed
 * @ring: the ring
 *
 * Return: 0 or -ENOMEM.
 */
int neuron_file_ring_init(struct neuron_file_ring *lane,
			  struct neuron_ring *ring)
{
	lane->cancel = kzalloc(sizeof(*lane->cancel), GFP_KERNEL);
	if (!lane->cancel)
		return -ENOMEM;
	lane->ring = ring;
	INIT_LIST_HEAD(&lane->waiting);
	INIT_LIST_HEAD(&lane->node);
	lane->fence_context = dma_fence_context_alloc(1);
	return 0;
}

/**
 * neuron_file_ring_fini() - a file's lane of a ring, at close
 * @lane: the lane; nothing is pushed onto it any more
 *
 * Waits for the lane's waiting jobs to reach the unit: until they have,
 * or the closing process is killed, or for at most a second when the
 * process is exiting. The jobs still waiting then fail with -ECANCELED,
 * after the lane's jobs on the unit. Those finish on their own.
 */
void neuron_file_ring_fini(struct neuron_file_ring *lane)
{
	struct neuron_lane_cancel *c = lane->cancel;
	struct neuron_ring *ring = lane->ring;
	struct wait_queue_head *drained;

	if (!c)
		return;
	drained = &ring->ndev->exec->lane_drained;
	if (current->flags & PF_EXITING)
		wait_event_timeout(*drained, list_empty_careful(&lane->waiting),
				   HZ);
	else
		wait_event_killable(*drained,
				    list_empty_careful(&lane->waiting));

	c->ring = ring;
	INIT_LIST_HEAD(&c->jobs);
	INIT_WORK(&c->work, neuron_lane_cancel_work);
	mutex_lock(&ring->lock);
	neuron_lane_unblock(lane);
	list_splice_init(&lane->waiting, &c->jobs);
	list_del_init(&lane->node);
	/* The lane's written jobs are on the unit, before every waiting one. */
	if (!list_empty(&c->jobs))
		c->after = neuron_lane_last_fence(lane);
	mutex_unlock(&ring->lock);

	if (!c->after || dma_fence_add_callback(c->after, &c->cb,
						neuron_lane_cancel_cb))
		neuron_lane_cancel_work(&c->work);
}

/**
 * neuron_ring_push() - queue jobs on a file's lane, and write those that
 * can run
 * @lane: the submitting file's lane of the jobs' ring
 * @jobs: the jobs, in order, each with its buffers, hardware description,
 *	deps and a fence from neuron_fence_alloc(); each becomes the ring's,
 *	its fence initialized (the reference in &neuron_push.fence is the
 *	caller's) and its &neuron_push.seqno set
 * @count: entries in @jobs
 *
 * The jobs are queued together: those that can run are written to the
 * unit with one doorbell. Nothing here fails, so a batch is queued whole.
 */
void neuron_ring_push(struct neuron_file_ring *lane, struct neuron_push *jobs,
		      u32 count)
{
	struct neuron_ring *ring = lane->ring;
	u32 i, n;

	for (n = 0; n < count; n++) {
		struct neuron_job *job = jobs[n].job;

		/* The lane's jobs complete in order: no need to wait for its own. */
		for (i = 0; i < job->num_deps;) {
			if (job->deps[i]->context != lane->fence_context) {
				i++;
				continue;
			}
			dma_fence_put(job->deps[i]);
			job->deps[i] = job->deps[--job->num_deps];
		}
	}

	mutex_lock(&ring->lock);
	for (n = 0; n < count; n++) {
		struct neuron_job *job = jobs[n].job;

		neuron_fence_init(jobs[n].fence, lane->fence_context,
				  ++lane->fence_seqno);
		job->fence = dma_fence_get(jobs[n].fence);
		job->seqno = atomic64_inc_return(&ring->submit_seqno);
		jobs[n].seqno = job->seqno;
		list_add_tail(&job->node, &lane->waiting);
	}
	if (list_empty(&lane->node))
		list_add_tail(&lane->node, &ring->lanes);
	neuron_ring_dispatch_locked(ring);
	mutex_unlock(&ring->lock);
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
 * neuron_ring_clear_locked() - fail every job on a ring
 * @ring: the ring, its &neuron_ring.irq_lock held; the unit is reset or
 *	gone
 * @err: the error the jobs fail with
 */
void neuron_ring_clear_locked(struct neuron_ring *ring, int err)
{
	struct neuron_job *job, *tmp;

	lockdep_assert_held(&ring->irq_lock);
	list_for_each_entry_safe(job, tmp, &ring->inflight, node)
		neuron_ring_complete_locked(ring, job, err);
	if (ring->ops->forget)
		ring->ops->forget(ring);
}

/**
 * neuron_ring_recover() - reset one unit and run its innocent jobs again
 * @ring: the ring
 * @seqno: the job that timed out, or 0 (the guilty job is then the
 *	oldest on the unit, if any)
 * @err: the guilty job's error
 *
 * Runs on the reset workqueue. Jobs that completed before the reset keep
 * their result; the guilty one fails with @err once the unit is reset;
 * the others run again, in order. A unit that does not come back stays
 * paused, its jobs on it: the device reset that follows fails them.
 *
 * Return: 0; -EAGAIN when job @seqno completed after all (nothing was
 * reset); -ETIMEDOUT when the unit did not come back from its reset.
 */
int neuron_ring_recover(struct neuron_ring *ring, u64 seqno, int err)
{
	struct neuron_device *ndev = ring->ndev;
	struct neuron_job *guilty, *job, *tmp;
	LIST_HEAD(rerun);
	int idx, ret = 0;

	mutex_lock(&ring->lock);
	/* Unplugged: neuron_exec_unplug() fails every job. */
	if (!drm_dev_enter(&ndev->drm, &idx))
		goto unlock;
	spin_lock_irq(&ring->irq_lock);
	ring->ops->process(ring);
	guilty = list_first_entry_or_null(&ring->inflight, struct neuron_job,
					  node);
	if (seqno && (!guilty || guilty->seqno != seqno)) {
		spin_unlock_irq(&ring->irq_lock);
		ret = -EAGAIN;
		goto exit;
	}
	ring->paused = true;
	spin_unlock_irq(&ring->irq_lock);

	if (ring->ops->reset(ring)) {
		ndev_err(ndev, "%s: reset did not complete\n", ring->label);
		ret = -ETIMEDOUT;
		goto count;
	}
	spin_lock_irq(&ring->irq_lock);
	/* The unit is stopped: the guilty job's buffers can go. */
	if (guilty && !list_empty(&guilty->node))
		neuron_ring_complete_locked(ring, guilty, err);
	list_splice_init(&ring->inflight, &rerun);
	ring->num_inflight = 0;
	if (ring->ops->forget)
		ring->ops->forget(ring);
	ring->ops->hw_init(ring);
	ring->paused = false;
	list_for_each_entry_safe(job, tmp, &rerun, node)
		neuron_ring_write_locked(ring, job);
	neuron_ring_kick_locked(ring);
	spin_unlock_irq(&ring->irq_lock);
count:
	atomic_inc(&ring->resets);
exit:
	drm_dev_exit(idx);
	neuron_ring_dispatch_locked(ring);
unlock:
	mutex_unlock(&ring->lock);
	return ret;
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
