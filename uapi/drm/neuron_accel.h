/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * neuron accelerator: the kernel <-> userspace interface of neuron.ko.
 *
 * The driver is a DRM accel driver: each device is /dev/accel/accelN, each
 * open file has its own buffer-handle namespace, and every ioctl below is
 * issued on such a file. Completion is signalled through DRM syncobjs (the
 * generic DRM_IOCTL_SYNCOBJ_* ioctls create, wait on and destroy them).
 * DRM_IOCTL_NEURON_WAIT waits for one syncobj and reports its fence's
 * error in the same call, which the generic waits do not.
 *
 * Conventions of every structure in this file:
 *
 *  - fields are naturally aligned and every structure is a multiple of
 *    8 bytes, so 32-bit and 64-bit processes share one layout;
 *  - fields named @pad or @reserved must be zero, or the ioctl fails with
 *    -EINVAL; they may get a meaning in later versions;
 *  - flags unknown to the driver (outside the matching ``_ALL`` mask) are
 *    rejected with -EINVAL;
 *  - arrays are passed as a __u64 user pointer plus a count;
 *  - userspace never passes a device or bus address: buffers are named by
 *    GEM handle (plus an offset), and the kernel translates them.
 *
 * Buffer handles are private to the file that created them: the generic
 * global-name ioctls DRM_IOCTL_GEM_FLINK and DRM_IOCTL_GEM_OPEN fail with
 * -EOPNOTSUPP, and so does dma-buf export (DRM_IOCTL_PRIME_HANDLE_TO_FD)
 * in this version. DRM_IOCTL_GEM_CLOSE releases a handle.
 *
 * Errors common to all ioctls: -EFAULT for unreadable or unwritable user
 * memory, -ENODEV once the device has been unplugged or unbound,
 * -ENOMEM when the kernel runs out of memory, -EINTR/-ERESTARTSYS when
 * interrupted by a signal.
 *
 * Resets of the whole device: work that was on the device when the whole
 * device was reset fails with -ECANCELED and is not run again (its buffers
 * may be half written); work not yet on the device runs afterwards. The
 * device is reset after a fatal device error, when the PCI core recovers
 * it from an uncorrectable PCIe error (AER), and when the system suspends
 * (to RAM or disk) while work is still on the device after a few seconds.
 * Device memory is kept across these resets. Any ioctl resumes a device
 * that runtime power management suspended while idle.
 *
 * The DRM core copies an ioctl's argument structure in before the driver
 * sees it and copies it back out after the driver succeeded. When that
 * copy-out fails (the structure is no longer writable), the ioctl returns
 * -EFAULT although its work was done: see each structure for what then
 * exists anyway.
 *
 * Pinned host memory: the pages of a %DRM_NEURON_BO_HOST buffer are
 * ordinary swappable memory, allocated on first use, except while a copy
 * or job uses them. COPY and SUBMIT pin and map for the device only the
 * pages that hold the ranges they name (the copy's source and destination
 * ranges, the bindings and the program range), from the ioctl until the
 * work is done and for about a second after, so that back-to-back work on
 * the same range does not pin it again; pages pinned only for that reason
 * are unpinned first when a COPY or SUBMIT on the same device would
 * otherwise exceed one of the limits below. Pinned bytes are counted per open
 * file and for all files together, against two limits (module parameters
 * ``host_pin_file_limit_mb``, default a quarter of RAM, and
 * ``host_pin_limit_mb``, default half of RAM). A COPY or SUBMIT whose
 * ranges would take either count over its limit fails with -EDQUOT before
 * touching any page; one whose pages cannot be allocated fails with
 * -ENOMEM and gives back the pages it had allocated. Pinned pages are also
 * charged to the calling process, as RDMA and io_uring charge theirs: they
 * count in its ``VmPin`` (/proc/PID/status) until they are unpinned, even
 * after it exits, and a COPY or SUBMIT that would take that count over the
 * process's RLIMIT_MEMLOCK fails with -ENOMEM before touching any page,
 * unless the process has CAP_IPC_LOCK (root has): then they are counted
 * but not limited. The limits and the
 * pinned bytes are in sysfs, in the device's ``neuron/`` directory:
 * ``host_memory_file_limit``, ``host_memory_limit``,
 * ``host_memory_pinned`` (all files, all devices) and
 * ``host_memory_mapped`` (this device), in bytes.
 */
#ifndef _UAPI_DRM_NEURON_ACCEL_H_
#define _UAPI_DRM_NEURON_ACCEL_H_

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

/*
 * Version of this interface, reported by DRM_NEURON_PARAM_API_VERSION
 * as (major << 16) | minor. The minor number grows when something is
 * added in a backwards compatible way.
 */
#define DRM_NEURON_API_VERSION_MAJOR	1
/*
 * 1.1: WAIT; 1.2: DRM_NEURON_SUBMIT_F_PROFILE, DRM_NEURON_PARAM_ISA_VERSION;
 * 1.3: SUBMIT_BATCH
 */
#define DRM_NEURON_API_VERSION_MINOR	3

#define DRM_NEURON_GET_PARAM		0x00
#define DRM_NEURON_BO_CREATE		0x01
#define DRM_NEURON_BO_INFO		0x02
#define DRM_NEURON_COPY			0x03
#define DRM_NEURON_SUBMIT		0x04
#define DRM_NEURON_WAIT			0x05
#define DRM_NEURON_SUBMIT_BATCH		0x06

#define DRM_IOCTL_NEURON_GET_PARAM \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NEURON_GET_PARAM, struct drm_neuron_get_param)
#define DRM_IOCTL_NEURON_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NEURON_BO_CREATE, struct drm_neuron_bo_create)
#define DRM_IOCTL_NEURON_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NEURON_BO_INFO, struct drm_neuron_bo_info)
#define DRM_IOCTL_NEURON_COPY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NEURON_COPY, struct drm_neuron_copy)
#define DRM_IOCTL_NEURON_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NEURON_SUBMIT, struct drm_neuron_submit)
#define DRM_IOCTL_NEURON_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NEURON_WAIT, struct drm_neuron_wait)
#define DRM_IOCTL_NEURON_SUBMIT_BATCH \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NEURON_SUBMIT_BATCH, \
		 struct drm_neuron_submit_batch)

/**
 * enum drm_neuron_param - what DRM_IOCTL_NEURON_GET_PARAM can report
 *
 * @DRM_NEURON_PARAM_DEVICE_ID: PCI (vendor << 16) | device ID.
 * @DRM_NEURON_PARAM_DEVICE_REVISION: PCI revision ID.
 * @DRM_NEURON_PARAM_NUM_CORES: number of NeuronCores, each with its own
 *	job queue; valid &drm_neuron_submit.core values are 0..N-1.
 * @DRM_NEURON_PARAM_NUM_DMA_ENGINES: number of DMA engines; valid
 *	&drm_neuron_copy.engine values are 0..N-1.
 * @DRM_NEURON_PARAM_DEVICE_MEM_SIZE: bytes of device memory
 *	(%DRM_NEURON_BO_DEVICE); 0 when the device has none.
 * @DRM_NEURON_PARAM_SBUF_SIZE: bytes of on-core state buffer (SBUF) per core.
 * @DRM_NEURON_PARAM_PSUM_SIZE: bytes of on-core partial-sum buffer (PSUM)
 *	per core.
 * @DRM_NEURON_PARAM_PARTITIONS: number of SBUF/PSUM partitions.
 * @DRM_NEURON_PARAM_HW_VERSION: device interface version,
 *	(major << 16) | minor.
 * @DRM_NEURON_PARAM_FW_VERSION: device firmware version,
 *	(major << 16) | minor.
 * @DRM_NEURON_PARAM_CAPABILITIES: mask of DRM_NEURON_CAP_*.
 * @DRM_NEURON_PARAM_CORE_CLOCK_MHZ: core clock in MHz; job cycle counts are
 *	in units of this clock.
 * @DRM_NEURON_PARAM_MAX_BINDINGS: most entries &drm_neuron_submit.bindings
 *	may have.
 * @DRM_NEURON_PARAM_PCI_BUS_INFO: the device's PCI address, see
 *	DRM_NEURON_PCI_DOMAIN() and friends.
 * @DRM_NEURON_PARAM_API_VERSION: version of this interface,
 *	(DRM_NEURON_API_VERSION_MAJOR << 16) | DRM_NEURON_API_VERSION_MINOR.
 * @DRM_NEURON_PARAM_ISA_VERSION: instruction set the cores implement,
 *	(major << 16) | minor (NEURON_ISA_VERSION_* of hw/neuron_isa.h); a
 *	program whose ISA minor version is above it cannot run. Since
 *	interface version 1.2: an older driver rejects the parameter
 *	(-EINVAL), and its devices implement ISA 1.0.
 * @DRM_NEURON_PARAM_COUNT: number of parameters; not a parameter.
 */
enum drm_neuron_param {
	DRM_NEURON_PARAM_DEVICE_ID = 0,
	DRM_NEURON_PARAM_DEVICE_REVISION = 1,
	DRM_NEURON_PARAM_NUM_CORES = 2,
	DRM_NEURON_PARAM_NUM_DMA_ENGINES = 3,
	DRM_NEURON_PARAM_DEVICE_MEM_SIZE = 4,
	DRM_NEURON_PARAM_SBUF_SIZE = 5,
	DRM_NEURON_PARAM_PSUM_SIZE = 6,
	DRM_NEURON_PARAM_PARTITIONS = 7,
	DRM_NEURON_PARAM_HW_VERSION = 8,
	DRM_NEURON_PARAM_FW_VERSION = 9,
	DRM_NEURON_PARAM_CAPABILITIES = 10,
	DRM_NEURON_PARAM_CORE_CLOCK_MHZ = 11,
	DRM_NEURON_PARAM_MAX_BINDINGS = 12,
	DRM_NEURON_PARAM_PCI_BUS_INFO = 13,
	DRM_NEURON_PARAM_API_VERSION = 14,
	DRM_NEURON_PARAM_ISA_VERSION = 15,
	DRM_NEURON_PARAM_COUNT
};

/*
 * DRM_NEURON_PARAM_CAPABILITIES bits.
 *
 * DRM_NEURON_CAP_FP32, _BF16, _FP16: the cores compute in that data type.
 * DRM_NEURON_CAP_HOST_BINDINGS: a job may bind %DRM_NEURON_BO_HOST buffers;
 *	without it SUBMIT accepts only %DRM_NEURON_BO_DEVICE bindings.
 * DRM_NEURON_CAP_CORE_RESET: a hung core is reset alone, without disturbing
 *	jobs on other cores.
 * DRM_NEURON_CAP_PROFILE: SUBMIT takes %DRM_NEURON_SUBMIT_F_PROFILE.
 */
#define DRM_NEURON_CAP_FP32		(1ULL << 0)
#define DRM_NEURON_CAP_BF16		(1ULL << 1)
#define DRM_NEURON_CAP_FP16		(1ULL << 2)
#define DRM_NEURON_CAP_HOST_BINDINGS	(1ULL << 3)
#define DRM_NEURON_CAP_CORE_RESET	(1ULL << 4)
#define DRM_NEURON_CAP_PROFILE		(1ULL << 5)

/* Decoding DRM_NEURON_PARAM_PCI_BUS_INFO: domain << 32 | bus << 8 | devfn. */
#define DRM_NEURON_PCI_DOMAIN(v)	((__u32)((v) >> 32))
#define DRM_NEURON_PCI_BUS(v)		((__u8)((v) >> 8))
#define DRM_NEURON_PCI_DEV(v)		((__u8)(((v) >> 3) & 0x1f))
#define DRM_NEURON_PCI_FUNC(v)		((__u8)((v) & 0x7))

/**
 * struct drm_neuron_get_param - argument of DRM_IOCTL_NEURON_GET_PARAM
 *
 * Reads one property of the device. Values are fixed for the lifetime of
 * the device, so userspace may cache them.
 *
 * Errors: -EINVAL for an unknown @param or a non-zero @pad. Changes
 * nothing, so -EFAULT leaves nothing behind.
 */
struct drm_neuron_get_param {
	/** @param: in, one of &enum drm_neuron_param. */
	__u32 param;
	/** @pad: must be zero. */
	__u32 pad;
	/** @value: out, the parameter's value. */
	__u64 value;
};

/**
 * enum drm_neuron_bo_region - where a buffer object's memory lives
 *
 * @DRM_NEURON_BO_DEVICE: device memory (the device's HBM), allocated
 *	contiguously; the fastest memory for the cores and the DMA engines.
 *	A CPU mapping goes through the PCI BAR, write-combined: CPU writes are
 *	fast, CPU reads are slow.
 * @DRM_NEURON_BO_HOST: system memory, pinned and mapped for the device
 *	only while a job or copy uses it. A CPU mapping is cached unless
 *	%DRM_NEURON_BO_WC is set.
 * @DRM_NEURON_BO_REGION_COUNT: number of regions; not a region.
 */
enum drm_neuron_bo_region {
	DRM_NEURON_BO_DEVICE = 0,
	DRM_NEURON_BO_HOST = 1,
	DRM_NEURON_BO_REGION_COUNT
};

/*
 * DRM_NEURON_BO_WC: map a %DRM_NEURON_BO_HOST buffer write-combined for
 * the CPU (for buffers the CPU writes and the device reads). Device memory
 * is always mapped write-combined, so the flag is accepted and implied for
 * %DRM_NEURON_BO_DEVICE.
 */
#define DRM_NEURON_BO_WC		(1U << 0)
#define DRM_NEURON_BO_FLAGS_ALL		DRM_NEURON_BO_WC

/*
 * Largest buffer object, before rounding up to the page size: addresses
 * the device uses are 48 bits wide.
 */
#define DRM_NEURON_BO_MAX_SIZE		(1ULL << 48)

/**
 * struct drm_neuron_bo_create - argument of DRM_IOCTL_NEURON_BO_CREATE
 *
 * Creates a buffer object and returns a handle to it, valid in the calling
 * file only. Memory is zeroed. The buffer lives until the handle is closed
 * with DRM_IOCTL_GEM_CLOSE (or the file is closed) and no mapping, job or
 * copy uses it any more.
 *
 * Errors: -EINVAL for a zero @size, a @size above
 * %DRM_NEURON_BO_MAX_SIZE, an unknown @region, unknown @flags or a non-zero
 * @pad; -ENOSPC when device memory has no free range of @size bytes
 * (including @size larger than all of device memory); -ENOMEM when host
 * memory is exhausted, or for a %DRM_NEURON_BO_HOST @size larger than all
 * of RAM.
 *
 * -EFAULT after the buffer was created (@handle could not be written
 * back): the buffer exists under a handle userspace never learns, and
 * holds its memory until the file is closed.
 */
struct drm_neuron_bo_create {
	/**
	 * @size: in, bytes; rounded up to the CPU page size (see
	 * &drm_neuron_bo_info.size for the result).
	 */
	__u64 size;
	/** @region: in, one of &enum drm_neuron_bo_region. */
	__u32 region;
	/** @flags: in, DRM_NEURON_BO_* flags. */
	__u32 flags;
	/** @handle: out, the new buffer's GEM handle (never 0). */
	__u32 handle;
	/** @pad: must be zero. */
	__u32 pad;
};

/*
 * &drm_neuron_bo_info.device_addr of a buffer that has no single address in
 * the device's address space.
 */
#define DRM_NEURON_BO_NO_DEVICE_ADDR	(~0ULL)

/**
 * struct drm_neuron_bo_info - argument of DRM_IOCTL_NEURON_BO_INFO
 *
 * Describes a buffer object. To map a buffer, mmap() the device file with
 * @mmap_offset as the offset and at most @size bytes, MAP_SHARED.
 *
 * Errors: -ENOENT when @handle names no buffer of this file; -EINVAL for a
 * non-zero @pad. Changes nothing, so -EFAULT leaves nothing behind.
 */
struct drm_neuron_bo_info {
	/** @handle: in, the buffer's GEM handle. */
	__u32 handle;
	/** @pad: must be zero. */
	__u32 pad;
	/** @mmap_offset: out, fake offset for mmap() on the device file. */
	__u64 mmap_offset;
	/** @size: out, the buffer's size in bytes (page aligned). */
	__u64 size;
	/**
	 * @device_addr: out, where the device sees the buffer, for debugging
	 * and logs only (userspace never passes addresses to the kernel):
	 * the device-memory offset of a %DRM_NEURON_BO_DEVICE buffer, and
	 * %DRM_NEURON_BO_NO_DEVICE_ADDR for a %DRM_NEURON_BO_HOST buffer
	 * (whose pages are scattered and mapped only while in use).
	 */
	__u64 device_addr;
	/** @region: out, the buffer's &enum drm_neuron_bo_region. */
	__u32 region;
	/** @flags: out, the DRM_NEURON_BO_* flags it was created with. */
	__u32 flags;
};

/**
 * struct drm_neuron_sync - one DRM syncobj a job waits for or signals
 *
 * A binary syncobj is named by its handle with @point 0; a point on a
 * timeline syncobj by its handle and a non-zero @point.
 */
struct drm_neuron_sync {
	/** @handle: a DRM syncobj handle of this file. */
	__u32 handle;
	/** @pad: must be zero. */
	__u32 pad;
	/** @point: timeline point, or 0 for a binary syncobj. */
	__u64 point;
};

/* Most entries of &drm_neuron_copy.in_syncs and &drm_neuron_submit.in_syncs. */
#define DRM_NEURON_MAX_IN_SYNCS		64

/* &drm_neuron_copy.engine value that lets the driver choose the engine. */
#define DRM_NEURON_ENGINE_ANY		(~0U)

/* No copy flags are defined yet. */
#define DRM_NEURON_COPY_FLAGS_ALL	0

/**
 * struct drm_neuron_copy - argument of DRM_IOCTL_NEURON_COPY
 *
 * Queues an asynchronous copy of @size bytes from one buffer object to
 * another, in any direction between %DRM_NEURON_BO_HOST and
 * %DRM_NEURON_BO_DEVICE buffers, on one of the DMA engines. The copy starts
 * once every fence in @in_syncs has signalled; its completion fence is
 * installed in @out_sync. Copies queued by one file on one engine execute
 * in order; anything else is ordered only through syncobjs. Source and
 * destination ranges may not overlap within one buffer.
 *
 * A copy that fails on the device signals its fence with an error: -EIO
 * for a DMA error, -ETIMEDOUT when it exceeded the copy timeout (the
 * engine is then reset), -ECANCELED when a reset of the whole device
 * aborted it (see "Resets of the whole device" at the top of this file).
 * DRM_IOCTL_NEURON_WAIT waits for the fence and returns that error. The
 * generic DRM syncobj waits return once the fence signalled, error or
 * not; with them the error is read from a sync file exported from the
 * syncobj (DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD with
 * DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE, then SYNC_IOC_FILE_INFO:
 * a negative status is the error).
 *
 * Errors: -ENOENT when a handle names no buffer or syncobj of this file;
 * -EINVAL for a zero @size, a range that does not fit in its buffer (or
 * whose end overflows), overlapping ranges in one buffer, an @engine that
 * is neither below DRM_NEURON_PARAM_NUM_DMA_ENGINES nor
 * %DRM_NEURON_ENGINE_ANY, unknown @flags, more than
 * %DRM_NEURON_MAX_IN_SYNCS @in_syncs, an @in_syncs entry whose syncobj
 * (point) has no fence yet, a zero @out_sync handle or non-zero
 * @pad/@reserved fields (here and in the @in_syncs entries); -EDQUOT when
 * pinning the pages of a %DRM_NEURON_BO_HOST range would exceed a limit on
 * pinned host memory, -ENOMEM when they would exceed the caller's
 * RLIMIT_MEMLOCK or cannot be allocated (see the top of this file); -EIO when the device is in a fatal state and cannot run
 * copies.
 *
 * -EFAULT after the copy was queued (@seqno could not be written back):
 * the copy runs and its fence is installed in @out_sync as on success.
 */
struct drm_neuron_copy {
	/** @src_handle: in, source buffer handle. */
	__u32 src_handle;
	/** @dst_handle: in, destination buffer handle. */
	__u32 dst_handle;
	/** @src_offset: in, byte offset in the source buffer. */
	__u64 src_offset;
	/** @dst_offset: in, byte offset in the destination buffer. */
	__u64 dst_offset;
	/** @size: in, bytes to copy, non-zero. */
	__u64 size;
	/** @engine: in, DMA engine index or %DRM_NEURON_ENGINE_ANY. */
	__u32 engine;
	/** @flags: in, must be within %DRM_NEURON_COPY_FLAGS_ALL. */
	__u32 flags;
	/**
	 * @in_syncs: in, user pointer to an array of @num_in_syncs
	 * &struct drm_neuron_sync to wait for before the copy starts.
	 */
	__u64 in_syncs;
	/** @num_in_syncs: in, entries in @in_syncs. */
	__u32 num_in_syncs;
	/** @pad: must be zero. */
	__u32 pad;
	/**
	 * @out_sync: in, the syncobj (and timeline point) that receives the
	 * copy's completion fence; its handle must be non-zero.
	 */
	struct drm_neuron_sync out_sync;
	/**
	 * @seqno: out, the copy's sequence number on its engine, as shown in
	 * kernel logs and traces.
	 */
	__u64 seqno;
	/** @reserved: must be zero. */
	__u64 reserved;
};

/*
 * DRM_NEURON_BIND_*: access rights of a binding. READ and WRITE let the
 * program load from and store to it; EXEC lets it hold a program image.
 */
#define DRM_NEURON_BIND_READ		(1U << 0)
#define DRM_NEURON_BIND_WRITE		(1U << 1)
#define DRM_NEURON_BIND_EXEC		(1U << 2)
#define DRM_NEURON_BIND_ALL		(DRM_NEURON_BIND_READ | \
					 DRM_NEURON_BIND_WRITE | \
					 DRM_NEURON_BIND_EXEC)

/**
 * struct drm_neuron_binding - one memory range a job's program may access
 *
 * The program addresses memory as (slot, offset): slot i of a job is
 * entry i of &drm_neuron_submit.bindings, and offset 0 of the slot is byte
 * @offset of the buffer. The kernel writes the device's binding table from
 * these entries after checking them; the device fails the job (see
 * DRM syncobj fence errors) instead of accessing anything outside them.
 */
struct drm_neuron_binding {
	/** @handle: GEM handle of the buffer. */
	__u32 handle;
	/** @flags: DRM_NEURON_BIND_* rights, at least one. */
	__u32 flags;
	/** @offset: byte offset of the range in the buffer. */
	__u64 offset;
	/** @size: bytes in the range, non-zero. */
	__u64 size;
	/** @reserved: must be zero. */
	__u64 reserved;
};

/*
 * DRM_NEURON_SUBMIT_F_PROFILE: profile the job (with %DRM_NEURON_CAP_PROFILE).
 * The last entry of &drm_neuron_submit.bindings is then the trace buffer:
 * it needs %DRM_NEURON_BIND_WRITE and at least 64 bytes, and the device
 * writes the job's trace into it (a header, then one record per executed
 * instruction; the device datasheet, hw/README.md section 4.8, has the
 * layout). It stays an ordinary binding, which the program may also name.
 */
#define DRM_NEURON_SUBMIT_F_PROFILE	(1U << 0)
#define DRM_NEURON_SUBMIT_FLAGS_ALL	DRM_NEURON_SUBMIT_F_PROFILE

/**
 * struct drm_neuron_submit - argument of DRM_IOCTL_NEURON_SUBMIT
 *
 * Queues a job on core @core: the program image at @program_offset in
 * buffer @program_handle, @program_size bytes, runs with the memory ranges
 * in @bindings. The job starts once every fence in @in_syncs has signalled;
 * its completion fence is installed in @out_sync. Jobs queued by one file
 * on one core execute in order.
 *
 * The program image is read by the device through one more binding slot,
 * after the last entry of @bindings, with execute rights only; slots
 * 0..@num_bindings-1 are the ones the program names.
 *
 * A job that faults (an access outside its bindings, a bad instruction,
 * ...) or exceeds the job timeout signals its fence with an error: -EFAULT
 * for an access fault, -EINVAL for a malformed program, -ETIMEDOUT for a
 * timeout (the core is then reset), -ECANCELED when a reset of the whole
 * device aborted it (a fatal device error, PCIe error recovery, system
 * sleep: see the top of this file), -EIO for other failures (including a
 * halted queue). The
 * error is read as for &drm_neuron_copy. Jobs queued behind a job that
 * timed out, on the same core, run normally once the core is reset.
 *
 * Errors of the ioctl itself: -ENOENT when a handle names no buffer or
 * syncobj of this file; -EINVAL for a @core not below
 * DRM_NEURON_PARAM_NUM_CORES, a zero @program_size or one of 4 GiB or
 * more, a program range or
 * binding range that does not fit in its buffer (or whose end overflows),
 * zero @num_bindings or more than DRM_NEURON_PARAM_MAX_BINDINGS, a binding
 * with zero size or no or unknown rights, unknown @flags, more than
 * %DRM_NEURON_MAX_IN_SYNCS @in_syncs, an @in_syncs entry whose syncobj
 * (point) has no fence yet, a zero @out_sync handle, or a
 * non-zero @pad/@reserved field anywhere, %DRM_NEURON_SUBMIT_F_PROFILE
 * with a last binding that lacks %DRM_NEURON_BIND_WRITE or has fewer than
 * 64 bytes; -EOPNOTSUPP for a %DRM_NEURON_BO_HOST binding or program
 * without %DRM_NEURON_CAP_HOST_BINDINGS, or for
 * %DRM_NEURON_SUBMIT_F_PROFILE without %DRM_NEURON_CAP_PROFILE; -EDQUOT
 * when pinning the pages of the %DRM_NEURON_BO_HOST ranges would exceed a
 * limit on pinned host memory, -ENOMEM when they would exceed the caller's
 * RLIMIT_MEMLOCK or cannot be allocated (see the top of this file); -EIO when the device is in a fatal state.
 *
 * -EFAULT after the job was queued (@seqno could not be written back): the
 * job runs and its fence is installed in @out_sync as on success.
 */
struct drm_neuron_submit {
	/** @core: in, the NeuronCore that runs the job. */
	__u32 core;
	/** @flags: in, must be within %DRM_NEURON_SUBMIT_FLAGS_ALL. */
	__u32 flags;
	/** @program_handle: in, buffer that holds the program image. */
	__u32 program_handle;
	/** @num_bindings: in, entries in @bindings, at least 1. */
	__u32 num_bindings;
	/** @program_offset: in, byte offset of the image in its buffer. */
	__u64 program_offset;
	/** @program_size: in, bytes of the program image, non-zero. */
	__u64 program_size;
	/**
	 * @bindings: in, user pointer to an array of @num_bindings
	 * &struct drm_neuron_binding.
	 */
	__u64 bindings;
	/**
	 * @in_syncs: in, user pointer to an array of @num_in_syncs
	 * &struct drm_neuron_sync to wait for before the job starts.
	 */
	__u64 in_syncs;
	/** @num_in_syncs: in, entries in @in_syncs. */
	__u32 num_in_syncs;
	/** @pad: must be zero. */
	__u32 pad;
	/**
	 * @out_sync: in, the syncobj (and timeline point) that receives the
	 * job's completion fence; its handle must be non-zero.
	 */
	struct drm_neuron_sync out_sync;
	/**
	 * @seqno: out, the job's sequence number on its core, as shown in
	 * kernel logs, traces and the device's job id.
	 */
	__u64 seqno;
	/** @reserved: must be zero. */
	__u64 reserved;
};

/* Most entries of &drm_neuron_submit_batch.submits. */
#define DRM_NEURON_MAX_BATCH		64

/* No batch flags are defined yet. */
#define DRM_NEURON_SUBMIT_BATCH_FLAGS_ALL	0

/**
 * struct drm_neuron_submit_batch - argument of DRM_IOCTL_NEURON_SUBMIT_BATCH
 *
 * Queues several jobs in one call, since interface version 1.3 (an older
 * driver fails the ioctl with -EINVAL). Each entry of @submits is a
 * &struct drm_neuron_submit, checked and run exactly as
 * DRM_IOCTL_NEURON_SUBMIT would, in array order: jobs of one file on one
 * core execute in the order of their entries, after the jobs the file
 * queued before. Consecutive entries on one core are handed to the
 * device together, with one doorbell, which is what makes a batch
 * cheaper than as many SUBMITs.
 *
 * All or nothing: every entry is checked and its job built before any is
 * queued. If one fails, none is queued, no out-sync changes, and the
 * ioctl returns that entry's error (without saying which entry it was).
 * The in-syncs of every entry are looked up before any entry is
 * queued, so an entry cannot wait for the out-sync of another entry of the
 * same batch (it would find no fence, or the one it held before).
 *
 * Returns 0 once every job is queued, with the @seqno field of every entry
 * written.
 *
 * Errors: -EINVAL for a zero @count or one above %DRM_NEURON_MAX_BATCH,
 * unknown @flags or a non-zero @reserved; otherwise the first failing
 * entry's error, as listed for &drm_neuron_submit (-EIO when the device
 * is in a fatal state).
 *
 * -EFAULT after the jobs were queued (a @seqno could not be written
 * back): every job runs and its fence is installed in its out-sync as on
 * success.
 */
struct drm_neuron_submit_batch {
	/**
	 * @submits: in, user pointer to an array of @count
	 * &struct drm_neuron_submit; out, their @seqno fields.
	 */
	__u64 submits;
	/** @count: in, entries in @submits, 1..%DRM_NEURON_MAX_BATCH. */
	__u32 count;
	/** @flags: in, must be within %DRM_NEURON_SUBMIT_BATCH_FLAGS_ALL. */
	__u32 flags;
	/** @reserved: must be zero. */
	__u64 reserved;
};

/* No wait flags are defined yet. */
#define DRM_NEURON_WAIT_FLAGS_ALL	0

/**
 * struct drm_neuron_wait - argument of DRM_IOCTL_NEURON_WAIT
 *
 * Waits until the fence in @sync (a binary syncobj, or a point of a
 * timeline syncobj) has signalled, or until @timeout_nsec, and reports
 * how the work behind it ended: one system call where the generic
 * DRM_IOCTL_SYNCOBJ_WAIT needs three more to read the error (see
 * &drm_neuron_copy). Any fence may be waited for, not only this driver's.
 *
 * Returns 0 once the fence has signalled, with @status set; -ETIME when
 * @timeout_nsec passed first (@status is then 0 and meaningless).
 *
 * Errors: -ENOENT when @sync.handle names no syncobj of this file;
 * -EINVAL for a zero @sync.handle, a syncobj (point) that has no fence
 * (nothing was submitted to it), unknown @flags, or a non-zero
 * @sync.pad or @reserved.
 */
struct drm_neuron_wait {
	/** @sync: in, the syncobj (and timeline point) to wait for. */
	struct drm_neuron_sync sync;
	/**
	 * @timeout_nsec: in, absolute CLOCK_MONOTONIC time to give up at,
	 * as for DRM_IOCTL_SYNCOBJ_WAIT; a time in the past only checks.
	 */
	__s64 timeout_nsec;
	/** @flags: in, must be within %DRM_NEURON_WAIT_FLAGS_ALL. */
	__u32 flags;
	/**
	 * @status: out, 0 when the work succeeded, else the negative errno
	 * its fence signalled with (the values listed for
	 * &drm_neuron_submit and &drm_neuron_copy).
	 */
	__s32 status;
	/** @reserved: must be zero. */
	__u64 reserved;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_DRM_NEURON_ACCEL_H_ */
