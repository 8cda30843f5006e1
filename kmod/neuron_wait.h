/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NEURON_WAIT_H__
#define __NEURON_WAIT_H__

struct drm_device;
struct drm_file;

int neuron_wait_ioctl(struct drm_device *dev, void *data,
		      struct drm_file *file);

#endif /* __NEURON_WAIT_H__ */
