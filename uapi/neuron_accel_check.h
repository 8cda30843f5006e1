/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * neuron: the argument checks of DRM_IOCTL_NEURON_COPY, _SUBMIT and
 * _SUBMIT_BATCH that need nothing but the arguments and the device's
 * counts, each returning the errno uapi/drm/neuron_accel.h documents.
 *
 * One definition for the kernel driver (kmod/neuron_submit.c) and the
 * userspace simulator device (libneuron/sim/submit.cpp). What each of them
 * keeps is the lookup of its own objects (buffers, syncobjs) and copying
 * the arrays the arguments point to; both call these checks in the order
 * below, so that arguments with several faults fail with the same errno:
 *
 * COPY:
 *   1. neuron_check_copy(): flags, pad and reserved fields, out-sync,
 *      in-sync count, size, engine (-EINVAL);
 *   2. the source buffer (-ENOENT), neuron_check_range() of its range
 *      (-EINVAL); then the same for the destination;
 *   3. neuron_check_copy_overlap() when both are one buffer (-EINVAL);
 *   4. the in-syncs: the array (-EFAULT), neuron_check_in_syncs()
 *      (-EINVAL), each syncobj (-ENOENT) and its fence (-EINVAL);
 *   5. the out-sync's syncobj (-ENOENT).
 *
 * SUBMIT (and each entry of SUBMIT_BATCH, after
 * neuron_check_submit_batch()):
 *   1. neuron_check_submit(): flags, pad and reserved fields, out-sync,
 *      in-sync count, core, program size, binding count (-EINVAL);
 *   2. the bindings array (-EFAULT), neuron_check_bindings(): their
 *      fields (-EINVAL), profiling (-EOPNOTSUPP, -EINVAL);
 *   3. each binding, then the program: its buffer (-ENOENT),
 *      neuron_check_range() (-EINVAL), host memory without
 *      %DRM_NEURON_CAP_HOST_BINDINGS (-EOPNOTSUPP);
 *   4. and 5. the in-syncs and the out-sync, as for COPY.
 *
 * The errno values come from the kernel's or the C library's errno
 * header; on Linux they are the same numbers.
 */
#ifndef NEURON_ACCEL_CHECK_H
#define NEURON_ACCEL_CHECK_H

#include "drm/neuron_accel.h"

#ifdef __KERNEL__
#include <linux/errno.h>
#else
#include <errno.h>
#endif

/**
 * struct neuron_check_limits - what the checks need to know of a device
 * @num_cores: DRM_NEURON_PARAM_NUM_CORES
 * @num_dma: DRM_NEURON_PARAM_NUM_DMA_ENGINES
 * @max_bindings: DRM_NEURON_PARAM_MAX_BINDINGS
 * @trace_size: bytes the trace binding of a profiled job needs at least
 * @caps: DRM_NEURON_PARAM_CAPABILITIES
 */
struct neuron_check_limits {
	__u32 num_cores;
	__u32 num_dma;
	__u32 max_bindings;
	__u32 trace_size;
	__u64 caps;
};

/*
 * The fields COPY and SUBMIT share: known flags only, zero padding and
 * reserved fields, an out-sync, at most DRM_NEURON_MAX_IN_SYNCS in-syncs.
 */
static inline int neuron_check_exec_common(__u32 flags, __u32 flags_all,
					   __u32 pad, __u64 reserved,
					   const struct drm_neuron_sync *out_sync,
					   __u32 num_in_syncs)
{
	if (flags & ~flags_all || pad || reserved || out_sync->pad ||
	    !out_sync->handle || num_in_syncs > DRM_NEURON_MAX_IN_SYNCS)
		return -EINVAL;
	return 0;
}

/**
 * neuron_check_range() - whether a range lies within a buffer
 * @offset: first byte of the range
 * @size: bytes of the range
 * @limit: bytes of the buffer
 *
 * Return: 0, or -EINVAL when the range ends past @limit or its end
 * overflows.
 */
static inline int neuron_check_range(__u64 offset, __u64 size, __u64 limit)
{
	if (offset > limit || size > limit - offset)
		return -EINVAL;
	return 0;
}

/**
 * neuron_check_copy() - the checks of a COPY before its lookups
 * @args: the COPY, as userspace passed it
 * @limits: the device's
 *
 * Return: 0, or -EINVAL for unknown flags, a non-zero pad or reserved
 * field (also in the out-sync), a zero out-sync handle, too many in-syncs,
 * a zero size, or an engine that is neither below @limits->num_dma nor
 * %DRM_NEURON_ENGINE_ANY (which needs one engine at least).
 */
static inline int neuron_check_copy(const struct drm_neuron_copy *args,
				    const struct neuron_check_limits *limits)
{
	if (neuron_check_exec_common(args->flags, DRM_NEURON_COPY_FLAGS_ALL,
				     args->pad, args->reserved,
				     &args->out_sync, args->num_in_syncs))
		return -EINVAL;
	if (!args->size)
		return -EINVAL;
	if (args->engine == DRM_NEURON_ENGINE_ANY ? !limits->num_dma :
	    args->engine >= limits->num_dma)
		return -EINVAL;
	return 0;
}

/**
 * neuron_check_copy_overlap() - whether a COPY within one buffer overlaps
 * @args: a COPY whose source and destination are one buffer, both ranges
 *	within it (neuron_check_range()), so that their ends do not overflow
 *
 * Return: 0 for disjoint ranges, else -EINVAL.
 */
static inline int neuron_check_copy_overlap(const struct drm_neuron_copy *args)
{
	if (args->src_offset < args->dst_offset + args->size &&
	    args->dst_offset < args->src_offset + args->size)
		return -EINVAL;
	return 0;
}

/**
 * neuron_check_in_syncs() - the fields of in-sync entries
 * @syncs: the entries, copied from userspace
 * @count: entries in @syncs, at most %DRM_NEURON_MAX_IN_SYNCS
 *
 * Return: 0, or -EINVAL for an entry with a non-zero pad.
 */
static inline int neuron_check_in_syncs(const struct drm_neuron_sync *syncs,
					__u32 count)
{
	__u32 i;

	for (i = 0; i < count; i++) {
		if (syncs[i].pad)
			return -EINVAL;
	}
	return 0;
}

/**
 * neuron_check_submit() - the checks of a SUBMIT before its bindings
 * @args: the SUBMIT, as userspace passed it
 * @limits: the device's
 *
 * Return: 0, or -EINVAL for unknown flags, a non-zero pad or reserved
 * field (also in the out-sync), a zero out-sync handle, too many in-syncs,
 * a core not below @limits->num_cores, a zero program size or one of
 * 4 GiB or more, no bindings or more than @limits->max_bindings.
 */
static inline int neuron_check_submit(const struct drm_neuron_submit *args,
				      const struct neuron_check_limits *limits)
{
	if (neuron_check_exec_common(args->flags, DRM_NEURON_SUBMIT_FLAGS_ALL,
				     args->pad, args->reserved,
				     &args->out_sync, args->num_in_syncs))
		return -EINVAL;
	if (args->core >= limits->num_cores)
		return -EINVAL;
	if (!args->program_size || args->program_size > 0xffffffffULL)
		return -EINVAL;
	if (!args->num_bindings || args->num_bindings > limits->max_bindings)
		return -EINVAL;
	return 0;
}

/**
 * neuron_check_bindings() - the bindings of a SUBMIT
 * @args: the SUBMIT, past neuron_check_submit()
 * @bindings: its @args->num_bindings bindings, copied from userspace
 * @limits: the device's
 *
 * Return: 0; -EINVAL for a binding with a non-zero reserved field, a zero
 * size, or no or unknown rights; -EOPNOTSUPP for
 * %DRM_NEURON_SUBMIT_F_PROFILE without %DRM_NEURON_CAP_PROFILE; -EINVAL
 * for it with a last binding (the trace's) that lacks
 * %DRM_NEURON_BIND_WRITE or is smaller than @limits->trace_size.
 */
static inline int neuron_check_bindings(const struct drm_neuron_submit *args,
					const struct drm_neuron_binding *bindings,
					const struct neuron_check_limits *limits)
{
	const struct drm_neuron_binding *trace;
	__u32 i;

	for (i = 0; i < args->num_bindings; i++) {
		const struct drm_neuron_binding *b = &bindings[i];

		if (b->reserved || !b->size || !b->flags ||
		    b->flags & ~DRM_NEURON_BIND_ALL)
			return -EINVAL;
	}
	if (!(args->flags & DRM_NEURON_SUBMIT_F_PROFILE))
		return 0;
	if (!(limits->caps & DRM_NEURON_CAP_PROFILE))
		return -EOPNOTSUPP;
	trace = &bindings[args->num_bindings - 1];
	if (!(trace->flags & DRM_NEURON_BIND_WRITE) ||
	    trace->size < limits->trace_size)
		return -EINVAL;
	return 0;
}

/**
 * neuron_check_host_binding() - whether a binding may be host memory
 * @region: DRM_NEURON_BO_* of the binding's (or the program's) buffer
 * @limits: the device's
 *
 * Return: 0, or -EOPNOTSUPP for a %DRM_NEURON_BO_HOST buffer without
 * %DRM_NEURON_CAP_HOST_BINDINGS.
 */
static inline int neuron_check_host_binding(__u32 region,
					    const struct neuron_check_limits *limits)
{
	if (region == DRM_NEURON_BO_HOST &&
	    !(limits->caps & DRM_NEURON_CAP_HOST_BINDINGS))
		return -EOPNOTSUPP;
	return 0;
}

/**
 * neuron_check_submit_batch() - the checks of a SUBMIT_BATCH
 * @args: the SUBMIT_BATCH, as userspace passed it
 *
 * Return: 0, or -EINVAL for a zero count or one above
 * %DRM_NEURON_MAX_BATCH, unknown flags or a non-zero reserved field.
 */
static inline int
neuron_check_submit_batch(const struct drm_neuron_submit_batch *args)
{
	if (!args->count || args->count > DRM_NEURON_MAX_BATCH ||
	    args->flags & ~DRM_NEURON_SUBMIT_BATCH_FLAGS_ALL || args->reserved)
		return -EINVAL;
	return 0;
}

#endif /* NEURON_ACCEL_CHECK_H */
