// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: power management and shutdown.
 *
 * Runtime PM: the device suspends (the PCI core puts it in D3hot) once it
 * has been idle for its autosuspend delay (power/autosuspend_delay_ms,
 * NEURON_AUTOSUSPEND_MS by default). It is idle when nothing holds a
 * reference (neuron_pm_get()):
 *  - every ioctl of the driver holds one while it runs, so the next ioctl
 *    after an idle period resumes the device;
 *  - every job holds one from its creation to its release, so a device
 *    with jobs alive (running or waiting) never suspends;
 *  - every mapping of a device buffer holds one: its pages are the BAR,
 *    which the device does not decode outside D0;
 *  - the readers of device registers take one for the read: the
 *    counters (sysfs, netlink) and debugfs wake the device; the device
 *    state (sysfs, netlink) of a suspended device is read without waking
 *    it: it was ready when it suspended, idle.
 * The device keeps its registers and its memory in D3hot (No_Soft_Reset);
 * one that comes back without them (its interrupt mask is not the one the
 * driver programmed) is reset and its rings programmed again.
 *
 * System sleep: suspend stops every ring (waiting jobs stay waiting) and
 * gives the jobs on the hardware NEURON_SUSPEND_DRAIN_MS to complete (no
 * job timeout resets a unit meanwhile); the device is then reset, and the
 * jobs it still had fail with -ECANCELED, as after any device reset.
 * Resume resets the device (it may have lost power), programs the rings
 * and runs the waiting jobs. Device memory is not saved by the driver:
 * the device keeps it across D3hot, and across suspend to RAM as long as
 * it stays powered (the emulated device does: QEMU resets its registers
 * at wake-up, not its memory); a device that loses it is not detected.
 *
 * Shutdown (reboot, kexec) stops the rings, fails the jobs on the
 * hardware with -ECANCELED, resets the device and turns off bus
 * mastering, so that no DMA reaches the next kernel.
 */
#include <drm/drm_drv.h>
#include <linux/delay.h>
#include <linux/pci.h>
#include <linux/pm_runtime.h>

#include "neuron_drv.h"
#include "neuron_pm.h"
#include "neuron_reset.h"
#include "neuron_ring.h"

/* Idle time before the device suspends, unless sysfs says otherwise. */
#define NEURON_AUTOSUSPEND_MS	1000
/* Time the jobs on the hardware get to complete before system sleep. */
#define NEURON_SUSPEND_DRAIN_MS	5000
/* Time between two looks at the rings while they drain. */
#define NEURON_SUSPEND_POLL_MS	5

static struct neuron_device *neuron_pm_ndev(struct device *dev)
{
	return pci_get_drvdata(to_pci_dev(dev));
}

/**
 * neuron_pm_get() - keep the device awake, resuming it if needed
 * @ndev: the device
 *
 * Return: 0; -ENODEV once the device is unplugged (runtime PM of a
 * removed device is disabled); or the error of the resume. No reference
 * is held on error.
 */
int neuron_pm_get(struct neuron_device *ndev)
{
	int ret = pm_runtime_resume_and_get(ndev->drm.dev);

	if (ret && drm_dev_is_unplugged(&ndev->drm))
		return -ENODEV;
	return ret;
}

/**
 * neuron_pm_get_noresume() - another reference on an awake device
 * @ndev: the device, on which the caller holds a reference
 */
void neuron_pm_get_noresume(struct neuron_device *ndev)
{
	pm_runtime_get_noresume(ndev->drm.dev);
}

/**
 * neuron_pm_get_if_active() - a reference if the device is awake
 * @ndev: the device
 *
 * Return: true with a reference held if the device is active; false if it
 * is suspended (or runtime PM is off and the caller may touch it: then
 * true too).
 */
bool neuron_pm_get_if_active(struct neuron_device *ndev)
{
	int ret = pm_runtime_get_if_active(ndev->drm.dev);

	if (ret > 0)
		return true;
	if (ret == -EINVAL) {
		/* Runtime PM disabled: the device stays in D0. */
		pm_runtime_get_noresume(ndev->drm.dev);
		return true;
	}
	return false;
}

/**
 * neuron_pm_put() - drop a reference; the device suspends after its delay
 * @ndev: the device
 *
 * Any context: the suspend runs from a work item.
 */
void neuron_pm_put(struct neuron_device *ndev)
{
	pm_runtime_mark_last_busy(ndev->drm.dev);
	pm_runtime_put_autosuspend(ndev->drm.dev);
}

/*
 * The device lost its registers (D3cold, a reset by the platform) if its
 * interrupt mask is not the one the driver programmed.
 */
static bool neuron_pm_lost_state(struct neuron_device *ndev)
{
	struct neuron_hw *hw = &ndev->hw;

	return neuron_rd32(hw, NEURON_REG_IRQ_MASK) != ~hw->irq_enabled;
}

/*
 * Resets the device and programs its rings: they are stopped and hold no
 * job. Return: neuron_reset_hw()'s result.
 */
static int neuron_pm_reinit(struct neuron_device *ndev)
{
	struct neuron_exec *exec = ndev->exec;
	int idx, ret = -ENODEV;

	if (drm_dev_enter(&ndev->drm, &idx)) {
		ret = neuron_reset_hw(ndev);
		drm_dev_exit(idx);
	}
	neuron_reset_rings(exec, -ECANCELED, !ret);
	if (ret)
		ndev_err(ndev, "device reset at resume failed (%d): no more jobs will run\n",
			 ret);
	return ret;
}

static int neuron_pm_runtime_suspend(struct device *dev)
{
	struct neuron_device *ndev = neuron_pm_ndev(dev);

	ndev_dbg(ndev, "runtime suspend\n");
	return 0;
}

static int neuron_pm_runtime_resume(struct device *dev)
{
	struct neuron_device *ndev = neuron_pm_ndev(dev);
	struct neuron_exec *exec = ndev->exec;
	int idx;
	bool lost = false;

	if (!exec || !READ_ONCE(exec->ready))
		return 0;
	if (drm_dev_enter(&ndev->drm, &idx)) {
		lost = neuron_pm_lost_state(ndev);
		drm_dev_exit(idx);
	}
	ndev_dbg(ndev, "runtime resume%s\n", lost ? ", device lost its state" : "");
	if (lost) {
		/* No job is alive: each holds a reference. */
		neuron_reset_stop(exec);
		neuron_pm_reinit(ndev);
		neuron_reset_start(exec);
	}
	/* What PCI error recovery restores: the PCI core's resume used it up. */
	pci_save_state(to_pci_dev(dev));
	return 0;
}

/* Whether every ring's unit has completed what it was given. */
static bool neuron_pm_drained(struct neuron_exec *exec)
{
	u32 i, n = neuron_exec_num_rings(exec);
	bool drained = true;

	for (i = 0; i < n && drained; i++) {
		struct neuron_ring *ring = exec->rings[i];

		spin_lock_irq(&ring->irq_lock);
		drained = list_empty(&ring->inflight);
		spin_unlock_irq(&ring->irq_lock);
	}
	return drained;
}

/* Stops every ring without pausing it: what is on the units completes. */
static void neuron_pm_stop_dispatch(struct neuron_exec *exec)
{
	u32 i, n = neuron_exec_num_rings(exec);

	for (i = 0; i < n; i++) {
		struct neuron_ring *ring = exec->rings[i];

		mutex_lock(&ring->lock);
		ring->stopped = true;
		mutex_unlock(&ring->lock);
	}
}

static int neuron_pm_suspend(struct device *dev)
{
	struct neuron_device *ndev = neuron_pm_ndev(dev);
	struct neuron_exec *exec = ndev->exec;
	unsigned long deadline;
	int idx;

	if (!exec || !READ_ONCE(exec->ready))
		return 0;

	/*
	 * No reset may start from here until resume: a job that times out
	 * while the units drain fails with the others below.
	 */
	WRITE_ONCE(exec->offline, true);
	flush_workqueue(exec->reset_wq);
	neuron_pm_stop_dispatch(exec);
	deadline = jiffies + msecs_to_jiffies(NEURON_SUSPEND_DRAIN_MS);
	while (!neuron_pm_drained(exec) && time_before(jiffies, deadline))
		msleep(NEURON_SUSPEND_POLL_MS);
	if (!neuron_pm_drained(exec))
		ndev_warn(ndev, "jobs still on the device after %u ms: they fail with -ECANCELED\n",
			  NEURON_SUSPEND_DRAIN_MS);

	neuron_reset_stop(exec);
	if (drm_dev_enter(&ndev->drm, &idx)) {
		neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~0u);
		neuron_hw_reset(&ndev->hw);
		drm_dev_exit(idx);
	}
	neuron_reset_rings(exec, -ECANCELED, false);
	return 0;
}

static int neuron_pm_resume(struct device *dev)
{
	struct neuron_device *ndev = neuron_pm_ndev(dev);
	struct neuron_exec *exec = ndev->exec;

	if (!exec || !READ_ONCE(exec->ready))
		return 0;

	neuron_pm_reinit(ndev);
	WRITE_ONCE(exec->offline, false);
	neuron_reset_start(exec);
	/* What PCI error recovery restores: the PCI core's resume used it up. */
	pci_save_state(to_pci_dev(dev));
	return 0;
}

const struct dev_pm_ops neuron_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(neuron_pm_suspend, neuron_pm_resume)
	RUNTIME_PM_OPS(neuron_pm_runtime_suspend, neuron_pm_runtime_resume,
		       NULL)
};

/**
 * neuron_pm_shutdown() - quiesce the device for reboot or kexec
 * @pdev: the PCI function
 */
void neuron_pm_shutdown(struct pci_dev *pdev)
{
	struct neuron_device *ndev = pci_get_drvdata(pdev);
	struct neuron_exec *exec = ndev->exec;
	int idx;

	if (!exec || !READ_ONCE(exec->ready))
		return;
	WRITE_ONCE(exec->offline, true);
	flush_workqueue(exec->reset_wq);
	neuron_reset_stop(exec);
	if (drm_dev_enter(&ndev->drm, &idx)) {
		neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~0u);
		neuron_hw_reset(&ndev->hw);
		drm_dev_exit(idx);
	}
	neuron_reset_rings(exec, -ECANCELED, false);
	pci_clear_master(pdev);
}

/**
 * neuron_pm_init() - allow runtime PM, at the end of probe
 * @ndev: the device, registered
 *
 * Drops the reference the PCI core holds across probe.
 */
void neuron_pm_init(struct neuron_device *ndev)
{
	struct device *dev = ndev->drm.dev;

	pm_runtime_set_autosuspend_delay(dev, NEURON_AUTOSUSPEND_MS);
	pm_runtime_use_autosuspend(dev);
	pm_runtime_mark_last_busy(dev);
	pm_runtime_put_autosuspend(dev);
	pm_runtime_allow(dev);
}

/**
 * neuron_pm_fini() - forbid runtime PM, at the start of remove
 * @ndev: the device
 *
 * Takes back the reference neuron_pm_init() dropped; the PCI core has
 * resumed the device before remove.
 */
void neuron_pm_fini(struct neuron_device *ndev)
{
	struct device *dev = ndev->drm.dev;

	pm_runtime_forbid(dev);
	pm_runtime_dont_use_autosuspend(dev);
	pm_runtime_get_noresume(dev);
}
