/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: differences between the kernels the driver builds against.
 *
 * The reference kernel is 6.12 LTS; the driver also builds against the
 * newest kernel Debian ships. Every interface that differs between them is
 * wrapped here, keyed on LINUX_VERSION_CODE, so the rest of the driver is
 * written against one API.
 *
 * Stable backports make a major.minor check insufficient inside 6.12.y:
 * the scheduler wrappers below compare against the exact sublevel.
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

/* LINUX_VERSION_CODE saturates the sublevel at 255. */
#define NEURON_KV(a, b, c)	KERNEL_VERSION(a, b, c)
#define NEURON_IN_6_12(from)	(NEURON_KV(6, 12, from) <= LINUX_VERSION_CODE && \
				 NEURON_KV(6, 13, 0) > LINUX_VERSION_CODE)

#include <drm/gpu_scheduler.h>

/*
 * drm_sched_init() takes struct drm_sched_init_args from 6.15, and in
 * 6.12.y from 6.12.114 (backported with the fix that needed it).
 */
#if NEURON_KV(6, 15, 0) <= LINUX_VERSION_CODE || NEURON_IN_6_12(114)
static inline int neuron_sched_init(struct drm_gpu_scheduler *sched,
				    const struct drm_sched_backend_ops *ops,
				    struct workqueue_struct *submit_wq,
				    struct workqueue_struct *timeout_wq,
				    u32 credit_limit, long timeout,
				    const char *name, struct device *dev)
{
	const struct drm_sched_init_args args = {
		.ops = ops,
		.submit_wq = submit_wq,
		.num_rqs = DRM_SCHED_PRIORITY_COUNT,
		.credit_limit = credit_limit,
		.timeout = timeout,
		.timeout_wq = timeout_wq,
		.name = name,
		.dev = dev,
	};

	return drm_sched_init(sched, &args);
}
#else
static inline int neuron_sched_init(struct drm_gpu_scheduler *sched,
				    const struct drm_sched_backend_ops *ops,
				    struct workqueue_struct *submit_wq,
				    struct workqueue_struct *timeout_wq,
				    u32 credit_limit, long timeout,
				    const char *name, struct device *dev)
{
	return drm_sched_init(sched, ops, submit_wq, DRM_SCHED_PRIORITY_COUNT,
			      credit_limit, 0, timeout, timeout_wq, NULL,
			      name, dev);
}
#endif

/*
 * drm_sched_job_init() takes the file's client id (for fdinfo and traces)
 * from 6.16, and in 6.12.y from 6.12.103.
 */
static inline int neuron_sched_job_init(struct drm_sched_job *job,
					struct drm_sched_entity *entity,
					u32 credits, void *owner, u64 client_id)
{
#if NEURON_KV(6, 16, 0) <= LINUX_VERSION_CODE || NEURON_IN_6_12(103)
	return drm_sched_job_init(job, entity, credits, owner, client_id);
#else
	return drm_sched_job_init(job, entity, credits, owner);
#endif
}

/* drm_sched_start() takes the error of unfinished jobs from 6.13. */
#if NEURON_KV(6, 13, 0) <= LINUX_VERSION_CODE
#define neuron_sched_start(sched)	drm_sched_start(sched, 0)
#else
#define neuron_sched_start(sched)	drm_sched_start(sched)
#endif

/* DRM_GPU_SCHED_STAT_NOMINAL became DRM_GPU_SCHED_STAT_RESET in 6.17. */
#if NEURON_KV(6, 17, 0) <= LINUX_VERSION_CODE
#define NEURON_SCHED_STAT_RESET		DRM_GPU_SCHED_STAT_RESET
#else
#define NEURON_SCHED_STAT_RESET		DRM_GPU_SCHED_STAT_NOMINAL
#endif

/* Symbol namespaces are strings from 6.13 on. */
#if NEURON_KV(6, 13, 0) <= LINUX_VERSION_CODE
#define NEURON_IMPORT_KUNIT_NS()	MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING")
#else
#define NEURON_IMPORT_KUNIT_NS()	MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING)
#endif

#endif /* __NEURON_COMPAT_H__ */
