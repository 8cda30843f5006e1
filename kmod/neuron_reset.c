// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: recovery, and the notifications of resets.
 *
 * Every ring's timeout work and the error interrupt's work run on one
 * ordered workqueue, so at most one reset runs at a time.
 *  - A job timeout resets that ring's unit only (neuron_ring_recover()):
 *    the timed-out job's fence gets -ETIMEDOUT, the other jobs that were
 *    on the ring run again, in order.
 *  - A halted queue or engine is reset the same way; the job that was
 *    running gets -EIO.
 *  - A fatal device error, or a unit that does not come back from its
 *    reset, resets the whole device: every ring is stopped (waiting jobs
 *    stay waiting) and reprogrammed, and every job that was on the hardware fails with
 *    -ECANCELED (the device lost it and its buffers may be half written,
 *    so it is not run again); jobs not yet on the hardware run afterwards.
 *    The rings are paused from before the reset until they are programmed
 *    again, so the completion interrupt does not read a ring being reset.
 *
 * Each reset is announced from neuron_reset_notify() only: the telemetry
 * counters, the neuron_reset tracepoint, the netlink events and, for a
 * device reset, a KOBJ_CHANGE uevent with NEURON_EVENT=reset.
 */
#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <linux/kobject.h>
#include <linux/workqueue.h>

#include "neuron_drv.h"
#include "neuron_genl.h"
#include "neuron_job.h"
#include "neuron_pm.h"
#include "neuron_reset.h"
#include "neuron_ring.h"
#include "neuron_telemetry.h"
#include "neuron_trace.h"

static const char *neuron_reset_reason_name(enum neuron_reset_reason reason)
{
	switch (reason) {
	case NEURON_RESET_TIMEOUT:
		return "timeout";
	case NEURON_RESET_ERROR:
		return "error";
	case NEURON_RESET_FATAL:
		return "fatal";
	case NEURON_RESET_PCI:
		return "pcie";
	default:
		return "debug";
	}
}

/**
 * neuron_reset_notify() - announce a core or device reset
 * @ndev: the device
 * @core: the core that was reset, or -1 for a reset of the whole device
 * @reason: why
 *
 * Counts the reset (and, for %NEURON_RESET_TIMEOUT, the timeout), emits
 * the neuron_reset tracepoint, multicasts a %NEURON_EVENT_HANG,
 * %NEURON_EVENT_ERROR or %NEURON_EVENT_FATAL event for the cause followed
 * by a %NEURON_EVENT_RESET event, and for a device reset sends a
 * KOBJ_CHANGE uevent with NEURON_EVENT=reset on the accel device. A
 * device reset counts as a reset of every core.
 */
void neuron_reset_notify(struct neuron_device *ndev, int core,
			 enum neuron_reset_reason reason)
{
	char event[] = "NEURON_EVENT=reset";
	char *envp[2];

	if (core >= (int)ndev->hw.num_cores)
		core = -1;
	neuron_telemetry_count_reset(ndev, core,
				     reason == NEURON_RESET_TIMEOUT);
	trace_neuron_reset(ndev, core, neuron_reset_reason_name(reason));

	switch (reason) {
	case NEURON_RESET_TIMEOUT:
		neuron_genl_event(ndev, NEURON_EVENT_HANG, core);
		break;
	case NEURON_RESET_ERROR:
		neuron_genl_event(ndev, NEURON_EVENT_ERROR, core);
		break;
	case NEURON_RESET_FATAL:
		neuron_genl_event(ndev, NEURON_EVENT_FATAL, core);
		break;
	case NEURON_RESET_PCI:
		neuron_genl_event(ndev, NEURON_EVENT_ERROR, core);
		break;
	case NEURON_RESET_DEBUG:
		break;
	}
	neuron_genl_event(ndev, NEURON_EVENT_RESET, core);

	envp[0] = event;
	envp[1] = NULL;
	if (core < 0 && ndev->drm.accel)
		kobject_uevent_env(&ndev->drm.accel->kdev->kobj, KOBJ_CHANGE,
				   envp);
}

/* Whether the device is in its fatal state; false once it is gone. */
static bool neuron_reset_device_fatal(struct neuron_device *ndev)
{
	bool fatal = false;
	int idx;

	if (drm_dev_enter(&ndev->drm, &idx)) {
		fatal = neuron_rd32(&ndev->hw, NEURON_REG_DEV_STATUS) &
			NEURON_DEV_STATUS_FATAL;
		drm_dev_exit(idx);
	}
	return fatal;
}

/**
 * neuron_reset_stop() - keep every job off the hardware
 * @exec: the device's execution state
 *
 * Stops every ring (waiting jobs stay waiting) and pauses it (the
 * completion interrupt leaves it alone) until neuron_reset_start().
 */
void neuron_reset_stop(struct neuron_exec *exec)
{
	u32 i, n = neuron_exec_num_rings(exec);

	for (i = 0; i < n; i++) {
		struct neuron_ring *ring = exec->rings[i];

		mutex_lock(&ring->lock);
		ring->stopped = true;
		neuron_ring_pause(ring);
		mutex_unlock(&ring->lock);
	}
}

/**
 * neuron_reset_hw() - reset the device and enable its interrupts again
 * @ndev: the device, inside drm_dev_enter(), its rings stopped
 *
 * Counter readers wait during the reset; the counters keep what they
 * reached.
 *
 * Return: 0, or neuron_hw_reset()'s error (the device is then not ready).
 */
int neuron_reset_hw(struct neuron_device *ndev)
{
	struct neuron_hw *hw = &ndev->hw;
	int ret;

	neuron_telemetry_reset_begin(ndev);
	ret = neuron_hw_reset(hw);
	neuron_telemetry_reset_end(ndev);
	neuron_wr32(hw, NEURON_REG_IRQ_STATUS, ~0u);
	neuron_wr32(hw, NEURON_REG_IRQ_MASK, ~hw->irq_enabled);
	return ret;
}

/**
 * neuron_reset_rings() - fail the jobs of a reset device, program its rings
 * @exec: the device's execution state, its rings stopped
 * @err: the error of every job that was on the hardware
 * @reprogram: the device is reset and ready: program every ring again and
 *	let the completion interrupt at it; otherwise the rings stay paused
 */
void neuron_reset_rings(struct neuron_exec *exec, int err, bool reprogram)
{
	u32 i, n = neuron_exec_num_rings(exec);

	for (i = 0; i < n; i++) {
		struct neuron_ring *ring = exec->rings[i];

		mutex_lock(&ring->lock);
		spin_lock_irq(&ring->irq_lock);
		neuron_ring_clear_locked(ring, err);
		if (reprogram) {
			ring->ops->hw_init(ring);
			ring->paused = false;
		}
		spin_unlock_irq(&ring->irq_lock);
		mutex_unlock(&ring->lock);
	}
}

/**
 * neuron_reset_start() - let jobs onto the hardware again
 * @exec: the device's execution state
 *
 * Undoes neuron_reset_stop(): the waiting jobs are written to the units
 * (or fail, when the device is not ready).
 */
void neuron_reset_start(struct neuron_exec *exec)
{
	u32 i, n = neuron_exec_num_rings(exec);

	for (i = 0; i < n; i++) {
		struct neuron_ring *ring = exec->rings[i];

		mutex_lock(&ring->lock);
		ring->stopped = false;
		neuron_ring_dispatch_locked(ring);
		mutex_unlock(&ring->lock);
	}
}

/* Counts a reset of every ring and, if it was there, of the device. */
static void neuron_reset_count(struct neuron_exec *exec, bool present)
{
	u32 i, n = neuron_exec_num_rings(exec);

	for (i = 0; i < n; i++)
		atomic_inc(&exec->rings[i]->resets);
	if (present)
		atomic_inc(&exec->device_resets);
}

/*
 * Resets the whole device and restarts every ring. Every job that was on
 * the hardware fails with -ECANCELED (-ENODEV if the device is gone);
 * waiting jobs run after.
 */
static void neuron_reset_device(struct neuron_device *ndev)
{
	struct neuron_exec *exec = ndev->exec;
	struct neuron_hw *hw = &ndev->hw;
	bool present;
	int idx, ret = 0;

	neuron_reset_stop(exec);
	present = drm_dev_enter(&ndev->drm, &idx);
	if (present) {
		ndev_err(ndev, "device error (status %#x, cause %u): resetting the device\n",
			 neuron_rd32(hw, NEURON_REG_DEV_STATUS),
			 neuron_rd32(hw, NEURON_REG_FATAL_CAUSE));
		ret = neuron_reset_hw(ndev);
	}
	neuron_reset_rings(exec, present ? -ECANCELED : -ENODEV,
			   present && !ret);
	neuron_reset_count(exec, present);
	neuron_reset_start(exec);
	if (present) {
		if (ret)
			ndev_err(ndev, "device reset failed (%d): no more jobs will run\n",
				 ret);
		neuron_reset_notify(ndev, -1, NEURON_RESET_FATAL);
		drm_dev_exit(idx);
	}
}

/*
 * Resets one ring's unit, or the device if the unit does not come back.
 * @seqno is the job that timed out, or 0.
 * Return: false if the device was reset.
 */
static bool neuron_reset_ring(struct neuron_ring *ring, u64 seqno, int err)
{
	struct neuron_device *ndev = ring->ndev;
	int ret = neuron_ring_recover(ring, seqno, err);

	if (ret == -EAGAIN)
		return true;
	if (ret) {
		neuron_reset_device(ndev);
		return false;
	}
	if (ring->kind == NEURON_RING_CORE)
		neuron_reset_notify(ndev, ring->index, err == -ETIMEDOUT ?
				    NEURON_RESET_TIMEOUT : NEURON_RESET_ERROR);
	return true;
}

/*
 * &neuron_ring.timeout_work: the oldest job on the unit took the ring's
 * timeout. Runs on the reset workqueue.
 */
static void neuron_reset_timeout_work(struct work_struct *work)
{
	struct neuron_ring *ring = container_of(to_delayed_work(work),
						struct neuron_ring,
						timeout_work);
	struct neuron_device *ndev = ring->ndev;
	struct neuron_job *job;
	bool copy = false;
	u64 seqno = 0;

	spin_lock_irq(&ring->irq_lock);
	job = list_first_entry_or_null(&ring->inflight, struct neuron_job,
				       node);
	if (job) {
		seqno = job->seqno;
		copy = job->kind == NEURON_JOB_COPY;
	}
	spin_unlock_irq(&ring->irq_lock);
	/* Recovery from a PCIe error, or system sleep, resets the device. */
	if (!seqno || READ_ONCE(ndev->exec->offline))
		return;

	if (neuron_reset_device_fatal(ndev)) {
		neuron_reset_device(ndev);
		return;
	}
	if (ring->kind == NEURON_RING_CORE)
		trace_neuron_timeout(ndev, ring->index, seqno);
	drm_warn(&ndev->drm, "%s: %s %llu timed out after %u ms, resetting it\n",
		 ring->label, copy ? "copy" : "job", seqno, ring->timeout_ms);
	neuron_reset_ring(ring, seqno, -ETIMEDOUT);
}

/**
 * neuron_reset_ring_init() - prepare a ring's timeout work
 * @ring: the ring
 */
void neuron_reset_ring_init(struct neuron_ring *ring)
{
	INIT_DELAYED_WORK(&ring->timeout_work, neuron_reset_timeout_work);
}

/* The error interrupt's work: halted rings, fatal errors. */
static void neuron_reset_work(struct work_struct *work)
{
	struct neuron_exec *exec = container_of(work, struct neuron_exec,
						recover_work);
	struct neuron_device *ndev = exec->ndev;
	u32 i, n = neuron_exec_num_rings(exec);
	DECLARE_BITMAP(halted, NEURON_MAX_CORES + NEURON_MAX_DMA_ENGINES) = {};
	int idx;

	/* An error of an idle device: keep it awake for the reset. */
	if (READ_ONCE(exec->offline) || neuron_pm_get(ndev))
		return;
	if (neuron_reset_device_fatal(ndev)) {
		neuron_reset_device(ndev);
		goto out;
	}
	if (!drm_dev_enter(&ndev->drm, &idx))
		goto out;
	for (i = 0; i < n; i++) {
		if (exec->rings[i]->ops->halted(exec->rings[i]))
			__set_bit(i, halted);
	}
	drm_dev_exit(idx);

	for_each_set_bit(i, halted, n) {
		if (!neuron_reset_ring(exec->rings[i], 0, -EIO))
			break;
	}
out:
	neuron_pm_put(ndev);
}

/**
 * neuron_reset_init() - prepare the error interrupt's work
 * @exec: the device's execution state
 */
void neuron_reset_init(struct neuron_exec *exec)
{
	INIT_WORK(&exec->recover_work, neuron_reset_work);
}

/**
 * neuron_reset_error_irq() - error interrupt (thread)
 * @ndev: the device
 */
void neuron_reset_error_irq(struct neuron_device *ndev)
{
	struct neuron_exec *exec = ndev->exec;

	if (READ_ONCE(exec->ready))
		queue_work(exec->reset_wq, &exec->recover_work);
}

/*
 * PCI error recovery. The PCI core calls these in turn when AER (or DPC,
 * or a platform's EEH) reports an uncorrectable error of the device:
 *  - error_detected(): the reset works are told to leave the device alone
 *    and waited for; every ring is stopped, so no job goes to the
 *    hardware; a reset is asked for. Jobs on the hardware stay there: the
 *    device may still access their buffers until it is reset.
 *  - the core resets the link for a fatal error (the device comes back
 *    reset, its configuration space cleared), not for a non-fatal one.
 *  - slot_reset(): the configuration space is restored and the device is
 *    reset (again) through DEV_CTRL; every job that was on the hardware
 *    fails with -ECANCELED, as after any device reset, and the rings are
 *    programmed again.
 *  - resume(): the waiting jobs, and new ones, run.
 * A device that does not come back from its reset is left not ready:
 * every job then fails with -EIO, and recovery is reported as failed.
 */
static const char *neuron_pci_channel_name(pci_channel_state_t state)
{
	switch (state) {
	case pci_channel_io_normal:
		return "normal";
	case pci_channel_io_frozen:
		return "frozen";
	default:
		return "failed";
	}
}

static pci_ers_result_t neuron_pci_error_detected(struct pci_dev *pdev,
						  pci_channel_state_t state)
{
	struct neuron_device *ndev = pci_get_drvdata(pdev);
	struct neuron_exec *exec = ndev->exec;

	ndev_warn(ndev, "PCIe error, I/O channel %s: stopping the device\n",
		  neuron_pci_channel_name(state));
	if (state == pci_channel_io_perm_failure)
		return PCI_ERS_RESULT_DISCONNECT;

	WRITE_ONCE(exec->offline, true);
	/* A reset under way finishes; the next ones see @offline. */
	flush_workqueue(exec->reset_wq);
	neuron_reset_stop(exec);
	return PCI_ERS_RESULT_NEED_RESET;
}

static pci_ers_result_t neuron_pci_slot_reset(struct pci_dev *pdev)
{
	struct neuron_device *ndev = pci_get_drvdata(pdev);
	struct neuron_exec *exec = ndev->exec;
	int idx, ret = -ENODEV;

	pci_restore_state(pdev);
	pci_save_state(pdev);
	if (drm_dev_enter(&ndev->drm, &idx)) {
		ret = neuron_reset_hw(ndev);
		drm_dev_exit(idx);
	}
	neuron_reset_rings(exec, -ECANCELED, !ret);
	neuron_reset_count(exec, true);
	if (ret) {
		ndev_err(ndev, "device reset after the PCIe error failed (%d): no more jobs will run\n",
			 ret);
		WRITE_ONCE(exec->offline, false);
		neuron_reset_start(exec);
		return PCI_ERS_RESULT_DISCONNECT;
	}
	return PCI_ERS_RESULT_RECOVERED;
}

static void neuron_pci_resume(struct pci_dev *pdev)
{
	struct neuron_device *ndev = pci_get_drvdata(pdev);
	struct neuron_exec *exec = ndev->exec;

	WRITE_ONCE(exec->offline, false);
	neuron_reset_start(exec);
	neuron_reset_notify(ndev, -1, NEURON_RESET_PCI);
	ndev_info(ndev, "recovered from the PCIe error\n");
}

const struct pci_error_handlers neuron_pci_err_handlers = {
	.error_detected = neuron_pci_error_detected,
	.slot_reset = neuron_pci_slot_reset,
	.resume = neuron_pci_resume,
};
