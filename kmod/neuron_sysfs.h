/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: sysfs attributes of devices and fdinfo of open files.
 */
#ifndef __NEURON_SYSFS_H__
#define __NEURON_SYSFS_H__

struct drm_file;
struct drm_printer;
struct neuron_device;

int neuron_sysfs_init(struct neuron_device *ndev);
void neuron_show_fdinfo(struct drm_printer *p, struct drm_file *file);

#endif /* __NEURON_SYSFS_H__ */
