/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * neuron: bad arguments of DRM_IOCTL_NEURON_COPY, _SUBMIT and
 * _SUBMIT_BATCH and the errno each fails with, one table for every test of
 * the checks: KUnit runs it against the checks of neuron_accel_check.h
 * alone (kmod/neuron_kunit.c), neuron-exec-test against neuron.ko
 * (tests/vm/kmod/exec_test.c, test "args") and the simulator's unit test
 * against the simulator device (tests/unit/libneuron/test_sim.cpp).
 *
 * Each case starts from valid arguments (struct neuron_check_args, set up
 * by the test) and breaks them; cases with several faults pin down the
 * order of the checks.
 */
#ifndef NEURON_ACCEL_CHECK_CASES_H
#define NEURON_ACCEL_CHECK_CASES_H

#include "neuron_accel_check.h"

/* A handle that names no buffer and no syncobj. */
#define NEURON_CHECK_NO_HANDLE	0x7ffffff0U

/* A user pointer that faults: no process maps the first pages. */
#define NEURON_CHECK_BAD_PTR	8ULL

/**
 * struct neuron_check_args - valid arguments, which a case breaks
 * @copy: a COPY from offset 0 of one buffer to offset 0 of another, both
 *	@copy_bo_size bytes, of less than half of that, to any engine
 * @submit: a SUBMIT on core 0 of the program at offset 0 of a buffer of
 *	@program_bo_size bytes, with the two @bindings, no in-syncs
 * @batch: a SUBMIT_BATCH of @submit alone
 * @bindings: the bindings of @submit, each the whole of its buffer; the
 *	second has %DRM_NEURON_BIND_WRITE and at least @limits.trace_size
 *	bytes
 * @in_syncs: zeroed entries, for the cases to point @copy and @submit at
 * @in_syncs_ptr: the user pointer to @in_syncs
 * @fenceless: a syncobj without a fence
 * @copy_bo_size: bytes of the buffers of @copy
 * @program_bo_size: bytes of the buffer of @submit's program
 * @limits: the device's
 */
struct neuron_check_args {
	struct drm_neuron_copy copy;
	struct drm_neuron_submit submit;
	struct drm_neuron_submit_batch batch;
	struct drm_neuron_binding bindings[2];
	struct drm_neuron_sync in_syncs[DRM_NEURON_MAX_IN_SYNCS + 1];
	__u64 in_syncs_ptr;
	__u32 fenceless;
	__u64 copy_bo_size;
	__u64 program_bo_size;
	struct neuron_check_limits limits;
};

/**
 * enum neuron_check_ioctl - the ioctl a case calls
 * @NEURON_CHECK_COPY: DRM_IOCTL_NEURON_COPY with &neuron_check_args.copy
 * @NEURON_CHECK_SUBMIT: DRM_IOCTL_NEURON_SUBMIT with
 *	&neuron_check_args.submit
 * @NEURON_CHECK_SUBMIT_BATCH: DRM_IOCTL_NEURON_SUBMIT_BATCH with
 *	&neuron_check_args.batch
 */
enum neuron_check_ioctl {
	NEURON_CHECK_COPY,
	NEURON_CHECK_SUBMIT,
	NEURON_CHECK_SUBMIT_BATCH,
};

/**
 * struct neuron_check_case - one way to break the arguments
 * @name: what is wrong
 * @ioctl: the ioctl it calls
 * @edit: breaks valid arguments
 * @err: 0 or the negative errno the ioctl returns
 * @early: whether neuron_check_early() returns @err; else it returns 0
 *	and the error comes from a lookup, a range or the in-syncs
 */
struct neuron_check_case {
	const char *name;
	enum neuron_check_ioctl ioctl;
	void (*edit)(struct neuron_check_args *a);
	int err;
	int early;
};

/**
 * neuron_check_early() - the checks of an ioctl before any lookup
 * @a: the arguments, edited by a case
 * @ioctl: the ioctl
 *
 * For SUBMIT, and for the entry of SUBMIT_BATCH after the batch's own
 * checks: neuron_check_submit(), then neuron_check_bindings() on
 * @a->bindings (wherever @a->submit.bindings points).
 *
 * Return: 0 or the negative errno of the first check that fails.
 */
static inline int neuron_check_early(const struct neuron_check_args *a,
				     enum neuron_check_ioctl ioctl)
{
	int ret;

	if (ioctl == NEURON_CHECK_COPY)
		return neuron_check_copy(&a->copy, &a->limits);
	if (ioctl == NEURON_CHECK_SUBMIT_BATCH) {
		ret = neuron_check_submit_batch(&a->batch);
		if (ret)
			return ret;
	}
	ret = neuron_check_submit(&a->submit, &a->limits);
	if (ret)
		return ret;
	return neuron_check_bindings(&a->submit, a->bindings, &a->limits);
}

/* COPY */

static void neuron_check_none(struct neuron_check_args *a)
{
	(void)a;
}

static void neuron_check_copy_flags(struct neuron_check_args *a)
{
	a->copy.flags = 1;
}

static void neuron_check_copy_pad(struct neuron_check_args *a)
{
	a->copy.pad = 1;
}

static void neuron_check_copy_reserved(struct neuron_check_args *a)
{
	a->copy.reserved = 1;
}

static void neuron_check_copy_no_out(struct neuron_check_args *a)
{
	a->copy.out_sync.handle = 0;
}

static void neuron_check_copy_out_pad(struct neuron_check_args *a)
{
	a->copy.out_sync.pad = 1;
}

static void neuron_check_copy_many_in(struct neuron_check_args *a)
{
	a->copy.in_syncs = a->in_syncs_ptr;
	a->copy.num_in_syncs = DRM_NEURON_MAX_IN_SYNCS + 1;
}

static void neuron_check_copy_size0(struct neuron_check_args *a)
{
	a->copy.size = 0;
}

static void neuron_check_copy_engine(struct neuron_check_args *a)
{
	a->copy.engine = a->limits.num_dma;
}

static void neuron_check_copy_engine_big(struct neuron_check_args *a)
{
	a->copy.engine = 0x7fffffff;
}

static void neuron_check_copy_too_big(struct neuron_check_args *a)
{
	a->copy.size = a->copy_bo_size + 1;
}

static void neuron_check_copy_src_end(struct neuron_check_args *a)
{
	a->copy.src_offset = a->copy_bo_size - a->copy.size + 1;
}

static void neuron_check_copy_dst_end(struct neuron_check_args *a)
{
	a->copy.dst_offset = a->copy_bo_size;
}

static void neuron_check_copy_src_wrap(struct neuron_check_args *a)
{
	a->copy.src_offset = ~0ULL - 100;
}

static void neuron_check_copy_dst_wrap(struct neuron_check_args *a)
{
	a->copy.dst_offset = 1;
	a->copy.size = ~0ULL;
}

static void neuron_check_copy_no_src(struct neuron_check_args *a)
{
	a->copy.src_handle = NEURON_CHECK_NO_HANDLE;
}

static void neuron_check_copy_no_dst(struct neuron_check_args *a)
{
	a->copy.dst_handle = NEURON_CHECK_NO_HANDLE;
}

static void neuron_check_copy_out_unknown(struct neuron_check_args *a)
{
	a->copy.out_sync.handle = NEURON_CHECK_NO_HANDLE;
}

static void neuron_check_copy_overlap_one(struct neuron_check_args *a)
{
	a->copy.dst_handle = a->copy.src_handle;
	a->copy.dst_offset = a->copy.size - 1;
}

static void neuron_check_copy_disjoint_one(struct neuron_check_args *a)
{
	a->copy.dst_handle = a->copy.src_handle;
	a->copy.dst_offset = a->copy.size;
}

static void neuron_check_copy_in(struct neuron_check_args *a)
{
	a->copy.in_syncs = a->in_syncs_ptr;
	a->copy.num_in_syncs = 1;
}

static void neuron_check_copy_in_pad(struct neuron_check_args *a)
{
	neuron_check_copy_in(a);
	a->in_syncs[0].handle = a->fenceless;
	a->in_syncs[0].pad = 1;
}

static void neuron_check_copy_in_unknown(struct neuron_check_args *a)
{
	neuron_check_copy_in(a);
	a->in_syncs[0].handle = NEURON_CHECK_NO_HANDLE;
}

static void neuron_check_copy_in_fenceless(struct neuron_check_args *a)
{
	neuron_check_copy_in(a);
	a->in_syncs[0].handle = a->fenceless;
}

static void neuron_check_copy_in_fault(struct neuron_check_args *a)
{
	a->copy.in_syncs = NEURON_CHECK_BAD_PTR;
	a->copy.num_in_syncs = 1;
}

static void neuron_check_copy_engine_no_src(struct neuron_check_args *a)
{
	neuron_check_copy_engine(a);
	neuron_check_copy_no_src(a);
}

static void neuron_check_copy_no_src_in_pad(struct neuron_check_args *a)
{
	neuron_check_copy_no_src(a);
	neuron_check_copy_in_pad(a);
}

static void neuron_check_copy_src_end_no_dst(struct neuron_check_args *a)
{
	neuron_check_copy_src_end(a);
	neuron_check_copy_no_dst(a);
}

static void neuron_check_copy_overlap_in_unknown(struct neuron_check_args *a)
{
	neuron_check_copy_overlap_one(a);
	neuron_check_copy_in_unknown(a);
}

static void neuron_check_copy_in_pad_out_unknown(struct neuron_check_args *a)
{
	neuron_check_copy_in_pad(a);
	neuron_check_copy_out_unknown(a);
}

static void neuron_check_copy_in_fault_out_unknown(struct neuron_check_args *a)
{
	neuron_check_copy_in_fault(a);
	neuron_check_copy_out_unknown(a);
}

/* SUBMIT */

static void neuron_check_submit_flags(struct neuron_check_args *a)
{
	a->submit.flags = 1U << 1;
}

static void neuron_check_submit_pad(struct neuron_check_args *a)
{
	a->submit.pad = 1;
}

static void neuron_check_submit_reserved(struct neuron_check_args *a)
{
	a->submit.reserved = 1;
}

static void neuron_check_submit_no_out(struct neuron_check_args *a)
{
	a->submit.out_sync.handle = 0;
}

static void neuron_check_submit_out_pad(struct neuron_check_args *a)
{
	a->submit.out_sync.pad = 1;
}

static void neuron_check_submit_many_in(struct neuron_check_args *a)
{
	a->submit.in_syncs = a->in_syncs_ptr;
	a->submit.num_in_syncs = DRM_NEURON_MAX_IN_SYNCS + 1;
}

static void neuron_check_submit_core(struct neuron_check_args *a)
{
	a->submit.core = a->limits.num_cores;
}

static void neuron_check_submit_prog0(struct neuron_check_args *a)
{
	a->submit.program_size = 0;
}

static void neuron_check_submit_prog4g(struct neuron_check_args *a)
{
	a->submit.program_size = 1ULL << 32;
}

static void neuron_check_submit_nbind0(struct neuron_check_args *a)
{
	a->submit.num_bindings = 0;
}

static void neuron_check_submit_nbind_max(struct neuron_check_args *a)
{
	a->submit.num_bindings = a->limits.max_bindings + 1;
}

static void neuron_check_submit_bind_reserved(struct neuron_check_args *a)
{
	a->bindings[0].reserved = 1;
}

static void neuron_check_submit_bind_size0(struct neuron_check_args *a)
{
	a->bindings[0].size = 0;
}

static void neuron_check_submit_bind_norights(struct neuron_check_args *a)
{
	a->bindings[0].flags = 0;
}

static void neuron_check_submit_bind_rights(struct neuron_check_args *a)
{
	a->bindings[0].flags = 8;
}

static void neuron_check_submit_profile(struct neuron_check_args *a)
{
	a->submit.flags = DRM_NEURON_SUBMIT_F_PROFILE;
}

static void neuron_check_submit_profile_ro(struct neuron_check_args *a)
{
	neuron_check_submit_profile(a);
	a->submit.num_bindings = 1;
}

static void neuron_check_submit_profile_small(struct neuron_check_args *a)
{
	neuron_check_submit_profile(a);
	a->bindings[1].size = a->limits.trace_size - 1;
}

static void neuron_check_submit_bind_fault(struct neuron_check_args *a)
{
	a->submit.bindings = NEURON_CHECK_BAD_PTR;
}

static void neuron_check_submit_no_prog(struct neuron_check_args *a)
{
	a->submit.program_handle = NEURON_CHECK_NO_HANDLE;
}

static void neuron_check_submit_prog_end(struct neuron_check_args *a)
{
	a->submit.program_offset = a->program_bo_size;
}

static void neuron_check_submit_prog_big(struct neuron_check_args *a)
{
	a->submit.program_size = a->program_bo_size + 1;
}

static void neuron_check_submit_prog_wrap(struct neuron_check_args *a)
{
	a->submit.program_offset = ~0ULL;
}

static void neuron_check_submit_no_bind(struct neuron_check_args *a)
{
	a->bindings[0].handle = NEURON_CHECK_NO_HANDLE;
}

static void neuron_check_submit_bind_end(struct neuron_check_args *a)
{
	a->bindings[0].size += 1;
}

static void neuron_check_submit_bind_wrap(struct neuron_check_args *a)
{
	a->bindings[0].offset = ~0ULL - 8;
	a->bindings[0].size = 16;
}

static void neuron_check_submit_out_unknown(struct neuron_check_args *a)
{
	a->submit.out_sync.handle = NEURON_CHECK_NO_HANDLE;
}

static void neuron_check_submit_in(struct neuron_check_args *a)
{
	a->submit.in_syncs = a->in_syncs_ptr;
	a->submit.num_in_syncs = 1;
}

static void neuron_check_submit_in_pad(struct neuron_check_args *a)
{
	neuron_check_submit_in(a);
	a->in_syncs[0].handle = a->fenceless;
	a->in_syncs[0].pad = 1;
}

static void neuron_check_submit_in_unknown(struct neuron_check_args *a)
{
	neuron_check_submit_in(a);
	a->in_syncs[0].handle = NEURON_CHECK_NO_HANDLE;
}

static void neuron_check_submit_in_fenceless(struct neuron_check_args *a)
{
	neuron_check_submit_in(a);
	a->in_syncs[0].handle = a->fenceless;
}

static void neuron_check_submit_in_fault(struct neuron_check_args *a)
{
	a->submit.in_syncs = NEURON_CHECK_BAD_PTR;
	a->submit.num_in_syncs = 1;
}

static void neuron_check_submit_core_no_prog(struct neuron_check_args *a)
{
	neuron_check_submit_core(a);
	neuron_check_submit_no_prog(a);
}

static void neuron_check_submit_bind_fault_no_prog(struct neuron_check_args *a)
{
	neuron_check_submit_bind_fault(a);
	neuron_check_submit_no_prog(a);
}

static void neuron_check_submit_no_bind_in_pad(struct neuron_check_args *a)
{
	neuron_check_submit_no_bind(a);
	neuron_check_submit_in_pad(a);
}

static void neuron_check_submit_prog_end_in_unknown(struct neuron_check_args *a)
{
	neuron_check_submit_prog_end(a);
	neuron_check_submit_in_unknown(a);
}

static void neuron_check_submit_bind_end_no_bind1(struct neuron_check_args *a)
{
	neuron_check_submit_bind_end(a);
	a->bindings[1].handle = NEURON_CHECK_NO_HANDLE;
}

static void neuron_check_submit_no_prog_bind_end(struct neuron_check_args *a)
{
	neuron_check_submit_no_prog(a);
	neuron_check_submit_bind_end(a);
}

static void neuron_check_submit_in_pad_out_unknown(struct neuron_check_args *a)
{
	neuron_check_submit_in_pad(a);
	neuron_check_submit_out_unknown(a);
}

/* SUBMIT_BATCH */

static void neuron_check_batch_count0(struct neuron_check_args *a)
{
	a->batch.count = 0;
}

static void neuron_check_batch_count_max(struct neuron_check_args *a)
{
	a->batch.count = DRM_NEURON_MAX_BATCH + 1;
}

static void neuron_check_batch_flags(struct neuron_check_args *a)
{
	a->batch.flags = 1;
}

static void neuron_check_batch_reserved(struct neuron_check_args *a)
{
	a->batch.reserved = 1;
}

static void neuron_check_batch_fault(struct neuron_check_args *a)
{
	a->batch.submits = NEURON_CHECK_BAD_PTR;
}

static void neuron_check_batch_reserved_core(struct neuron_check_args *a)
{
	neuron_check_batch_reserved(a);
	neuron_check_submit_core(a);
}

#define NEURON_CHECK_CASE(_ioctl, _name, _edit, _err, _early)		\
	{ .name = _name, .ioctl = NEURON_CHECK_##_ioctl,		\
	  .edit = neuron_check_##_edit, .err = _err, .early = _early }

static const struct neuron_check_case neuron_check_cases[] = {
	NEURON_CHECK_CASE(COPY, "valid", none, 0, 1),
	NEURON_CHECK_CASE(COPY, "unknown flags", copy_flags, -EINVAL, 1),
	NEURON_CHECK_CASE(COPY, "pad", copy_pad, -EINVAL, 1),
	NEURON_CHECK_CASE(COPY, "reserved", copy_reserved, -EINVAL, 1),
	NEURON_CHECK_CASE(COPY, "no out-sync", copy_no_out, -EINVAL, 1),
	NEURON_CHECK_CASE(COPY, "out-sync pad", copy_out_pad, -EINVAL, 1),
	NEURON_CHECK_CASE(COPY, "too many in-syncs", copy_many_in, -EINVAL, 1),
	NEURON_CHECK_CASE(COPY, "zero size", copy_size0, -EINVAL, 1),
	NEURON_CHECK_CASE(COPY, "engine = count", copy_engine, -EINVAL, 1),
	NEURON_CHECK_CASE(COPY, "engine 0x7fffffff", copy_engine_big, -EINVAL, 1),
	NEURON_CHECK_CASE(COPY, "larger than the buffers", copy_too_big,
			  -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "source past the end", copy_src_end, -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "destination at the end", copy_dst_end,
			  -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "source end overflows", copy_src_wrap,
			  -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "destination end overflows", copy_dst_wrap,
			  -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "unknown source", copy_no_src, -ENOENT, 0),
	NEURON_CHECK_CASE(COPY, "unknown destination", copy_no_dst, -ENOENT, 0),
	NEURON_CHECK_CASE(COPY, "unknown out-sync", copy_out_unknown,
			  -ENOENT, 0),
	NEURON_CHECK_CASE(COPY, "overlap in one buffer", copy_overlap_one,
			  -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "disjoint in one buffer", copy_disjoint_one,
			  0, 1),
	NEURON_CHECK_CASE(COPY, "in-sync pad", copy_in_pad, -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "unknown in-sync", copy_in_unknown, -ENOENT, 0),
	NEURON_CHECK_CASE(COPY, "in-sync without a fence", copy_in_fenceless,
			  -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "in-syncs fault", copy_in_fault, -EFAULT, 0),
	NEURON_CHECK_CASE(COPY, "engine, then unknown source",
			  copy_engine_no_src, -EINVAL, 1),
	NEURON_CHECK_CASE(COPY, "unknown source, then in-sync pad",
			  copy_no_src_in_pad, -ENOENT, 0),
	NEURON_CHECK_CASE(COPY, "source range, then unknown destination",
			  copy_src_end_no_dst, -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "overlap, then unknown in-sync",
			  copy_overlap_in_unknown, -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "in-sync pad, then unknown out-sync",
			  copy_in_pad_out_unknown, -EINVAL, 0),
	NEURON_CHECK_CASE(COPY, "in-syncs fault, then unknown out-sync",
			  copy_in_fault_out_unknown, -EFAULT, 0),

	NEURON_CHECK_CASE(SUBMIT, "valid", none, 0, 1),
	NEURON_CHECK_CASE(SUBMIT, "unknown flags", submit_flags, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "pad", submit_pad, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "reserved", submit_reserved, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "no out-sync", submit_no_out, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "out-sync pad", submit_out_pad, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "too many in-syncs", submit_many_in,
			  -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "core = count", submit_core, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "zero program size", submit_prog0, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "program of 4 GiB", submit_prog4g, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "no bindings", submit_nbind0, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "too many bindings", submit_nbind_max,
			  -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "binding reserved", submit_bind_reserved,
			  -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "binding of zero size", submit_bind_size0,
			  -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "binding without rights",
			  submit_bind_norights, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "binding with unknown rights",
			  submit_bind_rights, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "profiled", submit_profile, 0, 1),
	NEURON_CHECK_CASE(SUBMIT, "profiled, trace read-only",
			  submit_profile_ro, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "profiled, trace too small",
			  submit_profile_small, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "bindings fault", submit_bind_fault,
			  -EFAULT, 0),
	NEURON_CHECK_CASE(SUBMIT, "unknown program", submit_no_prog, -ENOENT, 0),
	NEURON_CHECK_CASE(SUBMIT, "program at the end", submit_prog_end,
			  -EINVAL, 0),
	NEURON_CHECK_CASE(SUBMIT, "program larger than its buffer",
			  submit_prog_big, -EINVAL, 0),
	NEURON_CHECK_CASE(SUBMIT, "program end overflows", submit_prog_wrap,
			  -EINVAL, 0),
	NEURON_CHECK_CASE(SUBMIT, "unknown binding", submit_no_bind, -ENOENT, 0),
	NEURON_CHECK_CASE(SUBMIT, "binding past the end", submit_bind_end,
			  -EINVAL, 0),
	NEURON_CHECK_CASE(SUBMIT, "binding end overflows", submit_bind_wrap,
			  -EINVAL, 0),
	NEURON_CHECK_CASE(SUBMIT, "unknown out-sync", submit_out_unknown,
			  -ENOENT, 0),
	NEURON_CHECK_CASE(SUBMIT, "in-sync pad", submit_in_pad, -EINVAL, 0),
	NEURON_CHECK_CASE(SUBMIT, "unknown in-sync", submit_in_unknown,
			  -ENOENT, 0),
	NEURON_CHECK_CASE(SUBMIT, "in-sync without a fence",
			  submit_in_fenceless, -EINVAL, 0),
	NEURON_CHECK_CASE(SUBMIT, "in-syncs fault", submit_in_fault, -EFAULT, 0),
	NEURON_CHECK_CASE(SUBMIT, "core, then unknown program",
			  submit_core_no_prog, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT, "bindings fault, then unknown program",
			  submit_bind_fault_no_prog, -EFAULT, 0),
	NEURON_CHECK_CASE(SUBMIT, "unknown binding, then in-sync pad",
			  submit_no_bind_in_pad, -ENOENT, 0),
	NEURON_CHECK_CASE(SUBMIT, "program range, then unknown in-sync",
			  submit_prog_end_in_unknown, -EINVAL, 0),
	NEURON_CHECK_CASE(SUBMIT, "binding 0 range, then unknown binding 1",
			  submit_bind_end_no_bind1, -EINVAL, 0),
	NEURON_CHECK_CASE(SUBMIT, "binding range, then unknown program",
			  submit_no_prog_bind_end, -EINVAL, 0),
	NEURON_CHECK_CASE(SUBMIT, "in-sync pad, then unknown out-sync",
			  submit_in_pad_out_unknown, -EINVAL, 0),

	NEURON_CHECK_CASE(SUBMIT_BATCH, "valid", none, 0, 1),
	NEURON_CHECK_CASE(SUBMIT_BATCH, "zero count", batch_count0, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT_BATCH, "too many", batch_count_max, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT_BATCH, "unknown flags", batch_flags,
			  -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT_BATCH, "reserved", batch_reserved, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT_BATCH, "entries fault", batch_fault,
			  -EFAULT, 0),
	NEURON_CHECK_CASE(SUBMIT_BATCH, "entry's core", submit_core, -EINVAL, 1),
	NEURON_CHECK_CASE(SUBMIT_BATCH, "entry's unknown program",
			  submit_no_prog, -ENOENT, 0),
	NEURON_CHECK_CASE(SUBMIT_BATCH, "entry's unknown out-sync",
			  submit_out_unknown, -ENOENT, 0),
	NEURON_CHECK_CASE(SUBMIT_BATCH, "reserved, then entry's core",
			  batch_reserved_core, -EINVAL, 1),
};

#undef NEURON_CHECK_CASE

#endif /* NEURON_ACCEL_CHECK_CASES_H */
