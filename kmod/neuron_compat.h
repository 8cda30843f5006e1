/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: differences between the kernels the driver builds against.
 *
 * The reference kernel is 6.12 LTS; the driver also builds against the
 * newest kernel Debian ships. Every interface that differs between them is
 * wrapped here, keyed on LINUX_VERSION_CODE, so the rest of the driver is
 * written against one API.
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

/* call_mmap() was renamed vfs_mmap() in 6.15. */
#if KERNEL_VERSION(6, 15, 0) > LINUX_VERSION_CODE
#define neuron_file_mmap(file, vma)	call_mmap(file, vma)
#else
#define neuron_file_mmap(file, vma)	vfs_mmap(file, vma)
#endif

/*
 * Host buffers live on a tmpfs mount with huge=within_size. From 7.0 the
 * DRM device holds such a mount (drm_gem_huge_mnt_create()) and every
 * shmem object is created on it; before, the driver mounts one itself and
 * moves each new buffer's shmem file onto it (neuron_gem.c).
 */
#if KERNEL_VERSION(7, 0, 0) > LINUX_VERSION_CODE
#define NEURON_OWN_HUGE_MNT
#endif

/* Symbol namespaces are strings from 6.13 on. */
#if KERNEL_VERSION(6, 13, 0) <= LINUX_VERSION_CODE
#define NEURON_IMPORT_KUNIT_NS()	MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING")
#else
#define NEURON_IMPORT_KUNIT_NS()	MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING)
#endif

#endif /* __NEURON_COMPAT_H__ */
