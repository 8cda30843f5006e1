// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the device's counters, state and reset counts.
 *
 * Counters live in the device and are read between drm_dev_enter() and
 * drm_dev_exit(): once the device is unplugged, reads fail with -ENODEV.
 * A device reset zeroes them; the driver adds what they had reached, so
 * users (sysfs, netlink) see counters that only grow while the device is
 * bound. Reset counts are kept by the driver, written through
 * neuron_telemetry_count_reset() by neuron_reset.c.
 */
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <linux/mutex.h>

#include "neuron_drv.h"
#include "neuron_pm.h"
#include "neuron_telemetry.h"

static const u32 neuron_core_counter_regs[NEURON_CORE_NR_COUNTERS] = {
	[NEURON_CORE_BUSY_NS] = NEURON_Q_CNT_BUSY_NS_LO,
	[NEURON_CORE_INSTR] = NEURON_Q_CNT_INSTR_LO,
	[NEURON_CORE_FLOPS] = NEURON_Q_CNT_FLOPS_LO,
	[NEURON_CORE_DMA_BYTES] = NEURON_Q_CNT_DMA_BYTES_LO,
	[NEURON_CORE_JOBS] = NEURON_Q_CNT_JOBS_LO,
	[NEURON_CORE_FAULTS] = NEURON_Q_CNT_FAULTS_LO,
};

static const u32 neuron_dma_counter_regs[NEURON_DMA_NR_COUNTERS] = {
	[NEURON_DMA_BYTES] = NEURON_DMA_CNT_BYTES_LO,
	[NEURON_DMA_DESCS] = NEURON_DMA_CNT_DESCS_LO,
	[NEURON_DMA_ERRORS] = NEURON_DMA_CNT_ERRORS_LO,
};

/*
 * Reads @n 64-bit counters at @base + @regs[i] into @values, each plus
 * @saved[i], what the counter had reached before the last device reset.
 */
static int neuron_telemetry_read(struct neuron_device *ndev, u32 base,
				 const u32 *regs, const u64 *saved,
				 unsigned int n, u64 *values)
{
	struct neuron_telemetry *t = ndev->telemetry;
	unsigned int i;
	int idx, ret;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	/* The counters are registers: a suspended device is woken to read them. */
	ret = neuron_pm_get(ndev);
	if (ret)
		goto exit;
	mutex_lock(&t->counter_lock);
	for (i = 0; i < n; i++)
		values[i] = saved[i] + neuron_rd64(&ndev->hw, base + regs[i]);
	mutex_unlock(&t->counter_lock);
	neuron_pm_put(ndev);
exit:
	drm_dev_exit(idx);
	return ret;
}

/**
 * neuron_telemetry_core_counters() - read the counters of one core
 * @ndev: the device
 * @core: core index, < &neuron_hw.num_cores
 * @values: receives %NEURON_CORE_NR_COUNTERS values, by &enum
 *	neuron_core_counter
 *
 * Return: 0, -EINVAL for a core the device does not have, or -ENODEV once
 * the device is unplugged.
 */
int neuron_telemetry_core_counters(struct neuron_device *ndev, u32 core,
				   u64 *values)
{
	if (core >= ndev->hw.num_cores)
		return -EINVAL;
	return neuron_telemetry_read(ndev, NEURON_QUEUE_BASE(core),
				     neuron_core_counter_regs,
				     ndev->telemetry->core_saved[core],
				     NEURON_CORE_NR_COUNTERS, values);
}

/**
 * neuron_telemetry_dma_counters() - read the counters of one DMA engine
 * @ndev: the device
 * @engine: engine index, < &neuron_hw.num_dma
 * @values: receives %NEURON_DMA_NR_COUNTERS values, by &enum
 *	neuron_dma_counter
 *
 * Return: 0, -EINVAL for an engine the device does not have, or -ENODEV
 * once the device is unplugged.
 */
int neuron_telemetry_dma_counters(struct neuron_device *ndev, u32 engine,
				  u64 *values)
{
	if (engine >= ndev->hw.num_dma)
		return -EINVAL;
	return neuron_telemetry_read(ndev, NEURON_DMA_BASE(engine),
				     neuron_dma_counter_regs,
				     ndev->telemetry->dma_saved[engine],
				     NEURON_DMA_NR_COUNTERS, values);
}

/**
 * neuron_telemetry_reset_begin() - the device is about to be reset
 * @ndev: the device, present (the caller is inside drm_dev_enter())
 *
 * A device reset restarts the hardware counters from zero. What they had
 * reached is added to the values saved for them first, so that sysfs and
 * netlink report counters that never go back. Counter readers wait until
 * neuron_telemetry_reset_end(), which the caller calls after the reset.
 */
void neuron_telemetry_reset_begin(struct neuron_device *ndev)
{
	struct neuron_telemetry *t = ndev->telemetry;
	struct neuron_hw *hw = &ndev->hw;
	unsigned int i, k;

	mutex_lock(&t->counter_lock);
	for (i = 0; i < hw->num_cores; i++)
		for (k = 0; k < NEURON_CORE_NR_COUNTERS; k++)
			t->core_saved[i][k] +=
				neuron_rd64(hw, NEURON_QUEUE_BASE(i) +
					    neuron_core_counter_regs[k]);
	for (i = 0; i < hw->num_dma; i++)
		for (k = 0; k < NEURON_DMA_NR_COUNTERS; k++)
			t->dma_saved[i][k] +=
				neuron_rd64(hw, NEURON_DMA_BASE(i) +
					    neuron_dma_counter_regs[k]);
}

/**
 * neuron_telemetry_reset_end() - the device reset is done
 * @ndev: the device
 *
 * Counter readers may read again.
 */
void neuron_telemetry_reset_end(struct neuron_device *ndev)
{
	mutex_unlock(&ndev->telemetry->counter_lock);
}

/**
 * neuron_telemetry_state() - the device's state as reported to users
 * @ndev: the device
 * @state: receives the state
 *
 * Return: 0, or -ENODEV once the device is unplugged.
 */
int neuron_telemetry_state(struct neuron_device *ndev,
			   enum neuron_genl_state *state)
{
	u32 status;
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	/* A suspended device is idle and was ready: do not wake it. */
	if (neuron_pm_get_if_active(ndev)) {
		status = neuron_rd32(&ndev->hw, NEURON_REG_DEV_STATUS);
		neuron_pm_put(ndev);
	} else {
		status = NEURON_DEV_STATUS_READY;
	}
	drm_dev_exit(idx);

	if (status & NEURON_DEV_STATUS_FATAL)
		*state = NEURON_GENL_STATE_FAILED;
	else if (status & NEURON_DEV_STATUS_RESETTING)
		*state = NEURON_GENL_STATE_RESETTING;
	else if ((status & NEURON_DEV_STATUS_READY) && READ_ONCE(ndev->hw.ready))
		*state = NEURON_GENL_STATE_READY;
	else
		*state = NEURON_GENL_STATE_FAILED;
	return 0;
}

/**
 * neuron_telemetry_state_name() - the sysfs name of a device state
 * @state: the state
 *
 * Return: ``ready``, ``resetting`` or ``failed``.
 */
const char *neuron_telemetry_state_name(enum neuron_genl_state state)
{
	switch (state) {
	case NEURON_GENL_STATE_READY:
		return "ready";
	case NEURON_GENL_STATE_RESETTING:
		return "resetting";
	default:
		return "failed";
	}
}

/**
 * neuron_telemetry_count_reset() - count a core or device reset
 * @ndev: the device
 * @core: the core that was reset, or -1 for a reset of the whole device
 * @timeout: the reset ended a job that timed out on @core
 *
 * A device reset counts as a reset of every core. Does not sleep.
 */
void neuron_telemetry_count_reset(struct neuron_device *ndev, int core,
				  bool timeout)
{
	struct neuron_telemetry *t = ndev->telemetry;
	u32 i;

	atomic64_inc(&t->resets);
	if (core >= 0) {
		atomic64_inc(&t->core_resets[core]);
		if (timeout)
			atomic64_inc(&t->core_timeouts[core]);
	} else {
		for (i = 0; i < ndev->hw.num_cores; i++)
			atomic64_inc(&t->core_resets[i]);
	}
}

/**
 * neuron_telemetry_init() - initialize the telemetry state of a device
 * @ndev: the device
 *
 * Before anything can report a reset: early in probe.
 *
 * Return: 0 or a negative errno.
 */
int neuron_telemetry_init(struct neuron_device *ndev)
{
	struct neuron_telemetry *t;

	t = drmm_kzalloc(&ndev->drm, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->id = -1;
	ndev->telemetry = t;
	return drmm_mutex_init(&ndev->drm, &t->counter_lock);
}

