// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the WAIT ioctl.
 *
 * Waits for the fence of one syncobj and reports its error in the same
 * call. The generic DRM syncobj wait reports only that a fence signalled;
 * its error then costs userspace a sync-file export, a query and a close.
 */
#include <drm/drm_file.h>
#include <drm/drm_syncobj.h>
#include <drm/drm_utils.h>
#include <drm/neuron_accel.h>
#include <linux/dma-fence-chain.h>

#include "neuron_wait.h"

/**
 * neuron_wait_ioctl() - DRM_IOCTL_NEURON_WAIT
 * @dev: the DRM device
 * @data: &struct drm_neuron_wait
 * @file: the caller's file
 *
 * Return: 0 with @data's status set once the fence signalled, -ETIME at
 * the deadline, or a negative errno (see the UAPI header).
 */
int neuron_wait_ioctl(struct drm_device *dev, void *data,
		      struct drm_file *file)
{
	struct drm_neuron_wait *args = data;
	struct dma_fence *fence;
	long timeout;
	int ret;

	args->status = 0;
	if (args->flags & ~DRM_NEURON_WAIT_FLAGS_ALL || args->reserved ||
	    args->sync.pad || !args->sync.handle)
		return -EINVAL;

	ret = drm_syncobj_find_fence(file, args->sync.handle, args->sync.point,
				     0, &fence);
	if (ret)
		return ret;

	timeout = drm_timeout_abs_to_jiffies(args->timeout_nsec);
	timeout = dma_fence_wait_timeout(fence, true, timeout);
	if (timeout > 0) {
		/* A timeline point's fence is the one its chain link holds. */
		ret = dma_fence_get_status(dma_fence_chain_contained(fence));
		args->status = min(ret, 0);
		ret = 0;
	} else {
		ret = timeout ?: -ETIME;
	}
	dma_fence_put(fence);
	return ret;
}
