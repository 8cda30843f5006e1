// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: debugfs, in the DRM device's directory
 * (/sys/kernel/debug/accel/<minor>/). Not an interface: for developers
 * and the driver's tests.
 *
 *   device        global registers (status, fatal cause, reset count, IRQs)
 *   core<N>       queue registers, the driver's ring indices, jobs on it
 *   dma<N>        engine registers, the driver's ring indices, copies on it
 *   mm            the device-memory allocator's ranges
 *   inject_fatal  write 1: the device enters its fatal state (INJECT.FATAL);
 *                 the driver recovers with a device reset
 *   reset_core    write a core index: the core's queue is made to halt
 *                 with a ring error (a doorbell beyond the ring), so that
 *                 the driver's error recovery resets that core
 *
 * The files live as long as the DRM device; after unplug, reading the
 * hardware fails with -ENODEV.
 */
#include <drm/drm_drv.h>
#include <drm/drm_print.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kstrtox.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "neuron_debugfs.h"
#include "neuron_drv.h"
#include "neuron_pm.h"
#include "neuron_ring.h"

/*
 * The files that read or write registers wake the device for the access
 * (neuron_pm.c).
 */
static int device_show(struct seq_file *m, void *data)
{
	struct neuron_device *ndev = m->private;
	struct neuron_hw *hw = &ndev->hw;
	int idx, ret;

	ret = neuron_pm_get(ndev);
	if (ret)
		return ret;
	if (!drm_dev_enter(&ndev->drm, &idx)) {
		neuron_pm_put(ndev);
		return -ENODEV;
	}
	seq_printf(m, "dev_status:  %#x\n", neuron_rd32(hw, NEURON_REG_DEV_STATUS));
	seq_printf(m, "fatal_cause: %u\n", neuron_rd32(hw, NEURON_REG_FATAL_CAUSE));
	seq_printf(m, "reset_count: %u\n", neuron_rd32(hw, NEURON_REG_RESET_COUNT));
	seq_printf(m, "irq_status:  %#x\n", neuron_rd32(hw, NEURON_REG_IRQ_STATUS));
	seq_printf(m, "irq_mask:    %#x\n", neuron_rd32(hw, NEURON_REG_IRQ_MASK));
	drm_dev_exit(idx);
	neuron_pm_put(ndev);
	seq_printf(m, "ready:       %d\n", READ_ONCE(hw->ready));
	seq_printf(m, "exec_ready:  %d\n", READ_ONCE(ndev->exec->ready));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(device);

static int ring_show(struct seq_file *m, void *data)
{
	struct neuron_ring *ring = m->private;
	int ret;

	ret = neuron_pm_get(ring->ndev);
	if (ret)
		return ret;
	ret = neuron_ring_show(ring, m);
	neuron_pm_put(ring->ndev);
	return ret;
}
DEFINE_SHOW_ATTRIBUTE(ring);

static int mm_show(struct seq_file *m, void *data)
{
	struct neuron_device *ndev = m->private;
	struct neuron_mm *nmm = &ndev->mm;
	struct drm_printer p = drm_seq_file_printer(m);

	seq_printf(m, "size %llu used %llu allocations %u\n", nmm->size,
		   READ_ONCE(nmm->used), READ_ONCE(nmm->allocations));
	if (!nmm->size)
		return 0;
	mutex_lock(&nmm->lock);
	drm_mm_print(&nmm->mm, &p);
	mutex_unlock(&nmm->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mm);

static ssize_t inject_fatal_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	struct neuron_device *ndev = file->private_data;
	bool val;
	int idx, ret;

	ret = kstrtobool_from_user(ubuf, count, &val);
	if (ret)
		return ret;
	if (!val)
		return count;
	ret = neuron_pm_get(ndev);
	if (ret)
		return ret;
	ret = -ENODEV;
	if (drm_dev_enter(&ndev->drm, &idx)) {
		ndev_warn(ndev, "injecting a fatal device error (debugfs)\n");
		neuron_wr32(&ndev->hw, NEURON_REG_INJECT, NEURON_INJECT_FATAL);
		drm_dev_exit(idx);
		ret = count;
	}
	neuron_pm_put(ndev);
	return ret;
}

static const struct file_operations inject_fatal_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = inject_fatal_write,
	.llseek = noop_llseek,
};

/*
 * Makes core @core's queue halt with Q_ERR_TAIL: a doorbell more than a
 * ring's worth of entries ahead of the device's head. The device raises
 * its error interrupt and the execution code resets that core, exactly as
 * for a real ring error.
 */
static ssize_t reset_core_write(struct file *file, const char __user *ubuf,
				size_t count, loff_t *ppos)
{
	struct neuron_device *ndev = file->private_data;
	struct neuron_hw *hw = &ndev->hw;
	struct neuron_ring *ring;
	u32 core, base, head;
	int idx, ret;

	ret = kstrtou32_from_user(ubuf, count, 0, &core);
	if (ret)
		return ret;
	if (core >= hw->num_cores)
		return -EINVAL;
	if (!READ_ONCE(ndev->exec->ready))
		return -EIO;

	ret = neuron_pm_get(ndev);
	if (ret)
		return ret;
	ring = neuron_exec_core(ndev->exec, core);
	base = NEURON_QUEUE_BASE(core);
	mutex_lock(&ring->lock);
	if (!drm_dev_enter(&ndev->drm, &idx)) {
		ret = -ENODEV;
		goto unlock;
	}
	ndev_warn(ndev, "core %u: injecting a queue error to reset it (debugfs)\n",
		  core);
	head = neuron_rd32(hw, base + NEURON_Q_HEAD);
	neuron_wr32(hw, base + NEURON_Q_TAIL,
		    head + neuron_rd32(hw, base + NEURON_Q_RING_ENTRIES) + 1);
	drm_dev_exit(idx);
	ret = count;
unlock:
	mutex_unlock(&ring->lock);
	neuron_pm_put(ndev);
	return ret;
}

static const struct file_operations reset_core_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = reset_core_write,
	.llseek = noop_llseek,
};

/**
 * neuron_debugfs_init() - create the device's debugfs files
 * @ndev: the device, before drm_dev_register()
 *
 * The files are removed with the DRM device's debugfs directory.
 */
void neuron_debugfs_init(struct neuron_device *ndev)
{
	struct neuron_exec *exec = ndev->exec;
	struct dentry *root = ndev->drm.debugfs_root;
	char name[16];
	u32 i;

	if (IS_ERR_OR_NULL(root))
		return;

	debugfs_create_file("device", 0444, root, ndev, &device_fops);
	debugfs_create_file("mm", 0444, root, ndev, &mm_fops);
	debugfs_create_file("inject_fatal", 0200, root, ndev, &inject_fatal_fops);
	debugfs_create_file("reset_core", 0200, root, ndev, &reset_core_fops);

	for (i = 0; i < exec->num_cores; i++) {
		snprintf(name, sizeof(name), "core%u", i);
		debugfs_create_file(name, 0444, root, neuron_exec_core(exec, i),
				    &ring_fops);
	}
	for (i = 0; i < exec->num_dma; i++) {
		snprintf(name, sizeof(name), "dma%u", i);
		debugfs_create_file(name, 0444, root, neuron_exec_dma(exec, i),
				    &ring_fops);
	}
}
