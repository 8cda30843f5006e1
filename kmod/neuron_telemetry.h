/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: the device's counters, state and reset counts, and the state of
 * its sysfs tree.
 */
#ifndef __NEURON_TELEMETRY_H__
#define __NEURON_TELEMETRY_H__

#include <drm/neuron_genl.h>
#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include "neuron_regs.h"

struct kobject;
struct neuron_device;

/**
 * enum neuron_core_counter - per-core counters read from the device
 * @NEURON_CORE_BUSY_NS: nanoseconds spent running jobs
 * @NEURON_CORE_INSTR: instructions executed
 * @NEURON_CORE_FLOPS: floating-point operations
 * @NEURON_CORE_DMA_BYTES: bytes moved by the core's DMA instructions
 * @NEURON_CORE_JOBS: jobs completed
 * @NEURON_CORE_FAULTS: jobs completed with a fault
 * @NEURON_CORE_NR_COUNTERS: number of per-core counters
 */
enum neuron_core_counter {
	NEURON_CORE_BUSY_NS,
	NEURON_CORE_INSTR,
	NEURON_CORE_FLOPS,
	NEURON_CORE_DMA_BYTES,
	NEURON_CORE_JOBS,
	NEURON_CORE_FAULTS,
	NEURON_CORE_NR_COUNTERS,
};

/**
 * enum neuron_dma_counter - per-engine counters read from the device
 * @NEURON_DMA_BYTES: bytes copied
 * @NEURON_DMA_DESCS: descriptors completed
 * @NEURON_DMA_ERRORS: descriptors completed with an error
 * @NEURON_DMA_NR_COUNTERS: number of per-engine counters
 */
enum neuron_dma_counter {
	NEURON_DMA_BYTES,
	NEURON_DMA_DESCS,
	NEURON_DMA_ERRORS,
	NEURON_DMA_NR_COUNTERS,
};

/**
 * struct neuron_telemetry - a device's telemetry state
 * @kobj: the ``neuron`` directory in the PCI device's sysfs directory
 * @core_kobjs: its ``core<N>`` subdirectories
 * @dma_kobjs: its ``dma<N>`` subdirectories
 * @id: index of the device in the generic netlink family (stable while
 *	the device is bound; -1 when not registered there)
 * @counter_lock: serializes reads of the _LO/_HI counter pairs (reading
 *	_LO latches _HI, so two readers must not interleave) and protects
 *	@core_saved and @dma_saved; held across a device reset
 * @core_saved: per core, the counters' values at the last device reset,
 *	by &enum neuron_core_counter
 * @dma_saved: per DMA engine, the same, by &enum neuron_dma_counter
 * @resets: core and device resets since probe
 * @core_resets: per core, resets of that core (device resets included)
 * @core_timeouts: per core, jobs that timed out
 * @host_mapped: bytes of host buffers pinned and DMA-mapped for the device
 *	now (written by neuron_bo_dma_get() and neuron_bo_dma_put())
 *
 * @kobj, @core_kobjs and @dma_kobjs belong to neuron_sysfs.c. The atomics
 * are written through neuron_telemetry_count_reset() (resets) and by
 * neuron_gem.c (@host_mapped), and read locklessly.
 */
struct neuron_telemetry {
	struct kobject *kobj;
	struct kobject *core_kobjs[NEURON_MAX_CORES];
	struct kobject *dma_kobjs[NEURON_MAX_DMA_ENGINES];
	int id;
	/* Protects the counter latches, core_saved and dma_saved. */
	struct mutex counter_lock;
	u64 core_saved[NEURON_MAX_CORES][NEURON_CORE_NR_COUNTERS];
	u64 dma_saved[NEURON_MAX_DMA_ENGINES][NEURON_DMA_NR_COUNTERS];
	atomic64_t resets;
	atomic64_t core_resets[NEURON_MAX_CORES];
	atomic64_t core_timeouts[NEURON_MAX_CORES];
	atomic64_t host_mapped;
};

int neuron_telemetry_init(struct neuron_device *ndev);
void neuron_telemetry_reset_begin(struct neuron_device *ndev);
void neuron_telemetry_reset_end(struct neuron_device *ndev);
void neuron_telemetry_count_reset(struct neuron_device *ndev, int core,
				  bool timeout);

int neuron_telemetry_core_counters(struct neuron_device *ndev, u32 core,
				   u64 *values);
int neuron_telemetry_dma_counters(struct neuron_device *ndev, u32 engine,
				  u64 *values);
int neuron_telemetry_state(struct neuron_device *ndev,
			   enum neuron_genl_state *state);
const char *neuron_telemetry_state_name(enum neuron_genl_state state);

#endif /* __NEURON_TELEMETRY_H__ */
