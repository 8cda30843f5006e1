/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * neuron accelerator: the generic netlink family of neuron.ko.
 *
 * Family %NEURON_GENL_NAME, version %NEURON_GENL_VERSION, resolved through
 * the generic netlink controller (CTRL_CMD_GETFAMILY). Every command below
 * is available to unprivileged processes in the initial network namespace,
 * and so is the multicast group %NEURON_GENL_MCGRP_EVENTS.
 *
 * Requests are validated strictly: attributes a command does not take,
 * attributes of the wrong type or length and unknown attribute types are
 * rejected with -EINVAL (and an extended ack naming the attribute).
 *
 * Devices are named by their index (%NEURON_A_DEV_INDEX): a number given
 * to each device when the driver binds to it, stable while it stays bound,
 * and never reused for another device while the module is loaded.
 *
 * 64-bit attributes are padded with %NEURON_A_PAD (and
 * %NEURON_A_CORE_PAD, %NEURON_A_DMA_PAD in nests): use nla_get_u64().
 */
#ifndef _UAPI_DRM_NEURON_GENL_H_
#define _UAPI_DRM_NEURON_GENL_H_

#if defined(__cplusplus)
extern "C" {
#endif

#define NEURON_GENL_NAME		"neuron"
#define NEURON_GENL_VERSION		1
#define NEURON_GENL_MCGRP_EVENTS	"events"

/**
 * enum neuron_genl_cmd - commands (genlmsghdr.cmd)
 *
 * @NEURON_CMD_UNSPEC: invalid.
 * @NEURON_CMD_DEVICE_GET: describe a device. As a request with
 *	%NEURON_A_DEV_INDEX: one reply for that device (-ENODEV if there is
 *	none). As a dump request (NLM_F_DUMP, no attributes): one message per
 *	device. Replies carry %NEURON_A_DEV_INDEX, %NEURON_A_DEV_MINOR,
 *	%NEURON_A_DEV_BDF, %NEURON_A_DEV_CORES, %NEURON_A_DEV_DMA_ENGINES,
 *	%NEURON_A_DEV_MEM_TOTAL, %NEURON_A_DEV_MEM_USED,
 *	%NEURON_A_DEV_HW_VERSION, %NEURON_A_DEV_FW_VERSION,
 *	%NEURON_A_DEV_STATE and %NEURON_A_DEV_RESET_COUNT.
 * @NEURON_CMD_COUNTERS_GET: the counters of a device, by index or as a
 *	dump like %NEURON_CMD_DEVICE_GET. Replies carry %NEURON_A_DEV_INDEX,
 *	one %NEURON_A_CORE nest per core and one %NEURON_A_DMA nest per DMA
 *	engine, in index order.
 * @NEURON_CMD_EVENT: multicast on %NEURON_GENL_MCGRP_EVENTS when something
 *	happens to a device: %NEURON_A_DEV_INDEX, %NEURON_A_EVENT_KIND,
 *	%NEURON_A_EVENT_CORE and %NEURON_A_EVENT_TIMESTAMP. Not a request.
 * @__NEURON_CMD_MAX: number of commands, not a command.
 * @NEURON_CMD_MAX: highest command.
 */
enum neuron_genl_cmd {
	NEURON_CMD_UNSPEC,
	NEURON_CMD_DEVICE_GET,
	NEURON_CMD_COUNTERS_GET,
	NEURON_CMD_EVENT,

	__NEURON_CMD_MAX,
	NEURON_CMD_MAX = __NEURON_CMD_MAX - 1
};

/**
 * enum neuron_genl_attr - top-level attributes
 *
 * @NEURON_A_UNSPEC: invalid.
 * @NEURON_A_PAD: padding for 64-bit attributes.
 * @NEURON_A_DEV_INDEX: u32, the device's index; the only attribute a
 *	request takes.
 * @NEURON_A_DEV_MINOR: u32, N of the device's /dev/accel/accelN.
 * @NEURON_A_DEV_BDF: string, the PCI address ("0000:00:03.0").
 * @NEURON_A_DEV_CORES: u32, NeuronCores.
 * @NEURON_A_DEV_DMA_ENGINES: u32, DMA engines.
 * @NEURON_A_DEV_MEM_TOTAL: u64, bytes of device memory.
 * @NEURON_A_DEV_MEM_USED: u64, bytes of device memory allocated to buffers.
 * @NEURON_A_DEV_HW_VERSION: u32, device interface version, major << 16 |
 *	minor.
 * @NEURON_A_DEV_FW_VERSION: u32, firmware version, major << 16 | minor.
 * @NEURON_A_DEV_STATE: u32, &enum neuron_genl_state.
 * @NEURON_A_DEV_RESET_COUNT: u64, core and device resets since the driver
 *	bound to the device.
 * @NEURON_A_CORE: nest of &enum neuron_genl_core_attr, one per core.
 * @NEURON_A_DMA: nest of &enum neuron_genl_dma_attr, one per DMA engine.
 * @NEURON_A_EVENT_KIND: u32, &enum neuron_genl_event_kind.
 * @NEURON_A_EVENT_CORE: s32, the core concerned, or -1 for the whole device.
 * @NEURON_A_EVENT_TIMESTAMP: u64, CLOCK_MONOTONIC nanoseconds of the event.
 * @__NEURON_A_MAX: number of attributes, not an attribute.
 * @NEURON_A_MAX: highest attribute.
 */
enum neuron_genl_attr {
	NEURON_A_UNSPEC,
	NEURON_A_PAD,
	NEURON_A_DEV_INDEX,
	NEURON_A_DEV_MINOR,
	NEURON_A_DEV_BDF,
	NEURON_A_DEV_CORES,
	NEURON_A_DEV_DMA_ENGINES,
	NEURON_A_DEV_MEM_TOTAL,
	NEURON_A_DEV_MEM_USED,
	NEURON_A_DEV_HW_VERSION,
	NEURON_A_DEV_FW_VERSION,
	NEURON_A_DEV_STATE,
	NEURON_A_DEV_RESET_COUNT,
	NEURON_A_CORE,
	NEURON_A_DMA,
	NEURON_A_EVENT_KIND,
	NEURON_A_EVENT_CORE,
	NEURON_A_EVENT_TIMESTAMP,

	__NEURON_A_MAX,
	NEURON_A_MAX = __NEURON_A_MAX - 1
};

/**
 * enum neuron_genl_core_attr - attributes of a %NEURON_A_CORE nest
 *
 * All counters are u64. Those read from the device (@NEURON_A_CORE_BUSY_NS
 * to @NEURON_A_CORE_FAULTS) restart from zero after a device reset.
 *
 * @NEURON_A_CORE_UNSPEC: invalid.
 * @NEURON_A_CORE_PAD: padding for 64-bit attributes.
 * @NEURON_A_CORE_INDEX: u32, the core.
 * @NEURON_A_CORE_BUSY_NS: nanoseconds the core spent running jobs.
 * @NEURON_A_CORE_INSTRUCTIONS: instructions executed.
 * @NEURON_A_CORE_FLOPS: floating-point operations.
 * @NEURON_A_CORE_DMA_BYTES: bytes moved by the core's DMA instructions.
 * @NEURON_A_CORE_JOBS: jobs completed.
 * @NEURON_A_CORE_FAULTS: jobs completed with a fault.
 * @NEURON_A_CORE_TIMEOUTS: jobs that timed out, since the driver bound.
 * @NEURON_A_CORE_RESETS: resets of the core (device resets included),
 *	since the driver bound.
 * @__NEURON_A_CORE_MAX: number of attributes, not an attribute.
 * @NEURON_A_CORE_MAX: highest attribute.
 */
enum neuron_genl_core_attr {
	NEURON_A_CORE_UNSPEC,
	NEURON_A_CORE_PAD,
	NEURON_A_CORE_INDEX,
	NEURON_A_CORE_BUSY_NS,
	NEURON_A_CORE_INSTRUCTIONS,
	NEURON_A_CORE_FLOPS,
	NEURON_A_CORE_DMA_BYTES,
	NEURON_A_CORE_JOBS,
	NEURON_A_CORE_FAULTS,
	NEURON_A_CORE_TIMEOUTS,
	NEURON_A_CORE_RESETS,

	__NEURON_A_CORE_MAX,
	NEURON_A_CORE_MAX = __NEURON_A_CORE_MAX - 1
};

/**
 * enum neuron_genl_dma_attr - attributes of a %NEURON_A_DMA nest
 *
 * Counters are u64 and restart from zero after a device reset.
 *
 * @NEURON_A_DMA_UNSPEC: invalid.
 * @NEURON_A_DMA_PAD: padding for 64-bit attributes.
 * @NEURON_A_DMA_INDEX: u32, the DMA engine.
 * @NEURON_A_DMA_BYTES: bytes copied.
 * @NEURON_A_DMA_DESCRIPTORS: descriptors completed.
 * @NEURON_A_DMA_ERRORS: descriptors completed with an error.
 * @__NEURON_A_DMA_MAX: number of attributes, not an attribute.
 * @NEURON_A_DMA_MAX: highest attribute.
 */
enum neuron_genl_dma_attr {
	NEURON_A_DMA_UNSPEC,
	NEURON_A_DMA_PAD,
	NEURON_A_DMA_INDEX,
	NEURON_A_DMA_BYTES,
	NEURON_A_DMA_DESCRIPTORS,
	NEURON_A_DMA_ERRORS,

	__NEURON_A_DMA_MAX,
	NEURON_A_DMA_MAX = __NEURON_A_DMA_MAX - 1
};

/**
 * enum neuron_genl_state - %NEURON_A_DEV_STATE, as sysfs ``state``
 *
 * @NEURON_GENL_STATE_READY: the device runs jobs.
 * @NEURON_GENL_STATE_RESETTING: a device reset is in progress.
 * @NEURON_GENL_STATE_FAILED: the device is in its fatal state or did not come
 *	back from a reset.
 */
enum neuron_genl_state {
	NEURON_GENL_STATE_READY,
	NEURON_GENL_STATE_RESETTING,
	NEURON_GENL_STATE_FAILED,
};

/**
 * enum neuron_genl_event_kind - %NEURON_A_EVENT_KIND
 *
 * @NEURON_EVENT_RESET: the core (or device) was reset; jobs that were
 *	running on it failed or were run again.
 * @NEURON_EVENT_HANG: a job on the core did not complete in time; a
 *	%NEURON_EVENT_RESET follows.
 * @NEURON_EVENT_ERROR: a queue or DMA engine stopped on an error.
 * @NEURON_EVENT_FATAL: the device entered its fatal state; a
 *	%NEURON_EVENT_RESET of the device follows when it recovers.
 */
enum neuron_genl_event_kind {
	NEURON_EVENT_RESET = 1,
	NEURON_EVENT_HANG,
	NEURON_EVENT_ERROR,
	NEURON_EVENT_FATAL,
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_DRM_NEURON_GENL_H_ */
