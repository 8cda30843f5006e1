/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * neuron: the fence error of a job's final completion status, as
 * uapi/drm/neuron_accel.h documents it for DRM_IOCTL_NEURON_SUBMIT.
 *
 * One definition for the kernel driver (kmod/) and the userspace simulator
 * device (libneuron/sim/), so both report the same errno for a fault. The
 * errno values come from the kernel's or the C library's errno header; on
 * Linux they are the same numbers.
 */
#ifndef NEURON_JOB_ERRNO_H
#define NEURON_JOB_ERRNO_H

#include "neuron_regs.h"

#ifdef __KERNEL__
#include <linux/errno.h>
#else
#include <errno.h>
#endif

/**
 * neuron_job_status_errno() - fence error of a job's final completion status
 * @status: NEURON_JOB_STATUS_* of the final completion entry
 *
 * Return: 0 for NEURON_JOB_STATUS_OK, else the negative errno: -EFAULT for
 * an access fault, -EINVAL for a malformed program, -ECANCELED for a job
 * aborted by a reset, -EIO for any other status.
 */
static inline int neuron_job_status_errno(__u32 status)
{
	switch (status) {
	case NEURON_JOB_STATUS_OK:
		return 0;
	case NEURON_JOB_STATUS_ABORTED:
		return -ECANCELED;
	case NEURON_JOB_STATUS_BINDING_INDEX:
	case NEURON_JOB_STATUS_BINDING_RANGE:
	case NEURON_JOB_STATUS_BINDING_ACCESS:
		return -EFAULT;
	case NEURON_JOB_STATUS_BAD_PROGRAM:
	case NEURON_JOB_STATUS_DECODE:
	case NEURON_JOB_STATUS_PARTITION:
	case NEURON_JOB_STATUS_SBUF_RANGE:
	case NEURON_JOB_STATUS_PSUM_RANGE:
	case NEURON_JOB_STATUS_DTYPE:
	case NEURON_JOB_STATUS_ALIGN:
	case NEURON_JOB_STATUS_SHAPE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

#endif /* NEURON_JOB_ERRNO_H */
