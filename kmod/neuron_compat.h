/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: differences between the kernels the driver builds against.
 *
 * The reference kernel is 6.12 LTS; the driver also builds against the
 * newest kernel Debian ships. Every interface that differs between them is
 * wrapped here, keyed on LINUX_VERSION_CODE, so the rest of the driver is
 * written against one API.
 *
 * Known differences that the job and DMA code will need here:
 *  - drm_sched_init() takes a struct drm_sched_init_args from 6.12.114
 *    (and 6.15), positional arguments before;
 *  - drm_sched_job_init() takes a drm_client_id argument from 6.12.103
 *    (and 6.16).
 * Stable backports make a version check alone insufficient inside 6.12.y:
 * compare against the exact sublevel.
 */
#ifndef __NEURON_COMPAT_H__
#define __NEURON_COMPAT_H__

#include <linux/version.h>

#if KERNEL_VERSION(6, 12, 0) > LINUX_VERSION_CODE
#error "neuron needs Linux 6.12 or newer"
#endif

/*
 * struct drm_driver lost its unused .date member in 6.14; before that,
 * DRM_IOCTL_VERSION reads it unconditionally.
 */
#if KERNEL_VERSION(6, 14, 0) > LINUX_VERSION_CODE
#define NEURON_DRM_DRIVER_DATE	.date = "20261129",
#else
#define NEURON_DRM_DRIVER_DATE
#endif

#endif /* __NEURON_COMPAT_H__ */
