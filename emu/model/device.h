/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The register-level device model: everything hw/neuron_regs.h describes
 * (identity, device control and status, interrupts, per-core job queues,
 * DMA engines, resets, telemetry), independent of QEMU.
 *
 * Threading model
 * ---------------
 * The environment (the QEMU glue, or a unit test) owns every thread. The
 * model has one "unit" per core job queue and one per DMA engine:
 *
 *  - nm_device_mmio_read/write() run on the caller's thread (a vCPU). They
 *    only update register state under the unit's lock and never run a job,
 *    copy data or touch host memory. When a write creates work for a unit
 *    (doorbell, enable, CPL_HEAD moved, reset request) they call
 *    env->kick(opaque, kind, index) after dropping the lock.
 *  - nm_device_core_step() / nm_device_dma_step() are the units' work
 *    functions. The environment calls them on a thread of its choice (one
 *    worker per unit in QEMU, the test's own thread in unit tests) after a
 *    kick, and again for as long as they return true. A step runs at most
 *    one job or one DMA descriptor. It must not be called concurrently for
 *    the same unit; different units may step in parallel.
 *  - env->raise_irq(opaque, vector) may be called from an MMIO write (on
 *    the vCPU thread) and from any step (on a worker). It must not block
 *    on anything a vCPU can hold while calling into the model.
 *
 * Locking: each unit has a C11 mtx_t protecting its registers, indices,
 * counters and pending completion; the device has one more for the global
 * control/status registers. Lock order is unit lock, then device lock.
 * No lock is held across host memory accesses (env->mem.host_read/write),
 * nm_core_run(), or any env callback, so a host access that re-enters the
 * device's MMIO cannot deadlock. IRQ_STATUS/IRQ_MASK and the fatal flag are
 * atomics. Device memory (env->mem.devmem) is shared by all units without a
 * lock, like real memory: ordering between users is the driver's business.
 *
 * A unit's completion ring being full stalls the core: the final entry of
 * a job stays pending and core_step returns false until CPL_HEAD moves
 * (which kicks the unit). A notify entry issued while the ring is full
 * blocks the running job on a condition variable inside the step until
 * CPL_HEAD moves or the job is aborted.
 */
#ifndef NEURON_MODEL_DEVICE_H
#define NEURON_MODEL_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device_env.h"

typedef struct nm_device nm_device;

/* Fill @cfg with the defaults (2 cores, 2 DMA engines, 24 MiB SBUF...). */
void nm_device_config_default(nm_device_config *cfg);

/*
 * Create a device in its post-reset state (DEV_STATUS.READY). Returns NULL
 * with a message in @err (if non-NULL) when the configuration is invalid.
 * env->mem.devmem must stay valid until nm_device_free().
 */
nm_device *nm_device_new(const nm_device_config *cfg, const nm_device_env *env, char *err,
                         size_t errlen);

/* The caller must have stopped every thread that steps the device. */
void nm_device_free(nm_device *dev);

/* MSI-X vectors the device uses: NEURON_MSIX_COUNT(cores, dma). */
uint32_t nm_device_msix_count(const nm_device *dev);
uint32_t nm_device_num_cores(const nm_device *dev);
uint32_t nm_device_num_dma(const nm_device *dev);

/*
 * 32-bit register accesses at byte @offset of the register BAR. Unaligned
 * or unknown offsets read as 0 and ignore writes (counted, see below);
 * writes to read-only registers are ignored.
 */
uint32_t nm_device_mmio_read(nm_device *dev, uint64_t offset);
void nm_device_mmio_write(nm_device *dev, uint64_t offset, uint32_t value);

/* Accesses to unknown or unaligned offsets since creation. */
uint64_t nm_device_bad_accesses(nm_device *dev);

/*
 * Work functions (see "Threading model"): process what is pending for one
 * core queue or DMA engine; return true if the caller should call again.
 */
bool nm_device_core_step(nm_device *dev, uint32_t core);
bool nm_device_dma_step(nm_device *dev, uint32_t engine);

/*
 * A whole-device reset. @power_on is a PCI/system reset: everything,
 * RESET_COUNT included, returns to its power-on value. Otherwise it is
 * what writing NEURON_DEV_CTRL_RESET does, and RESET_COUNT is incremented
 * when the reset completes.
 */
void nm_device_reset(nm_device *dev, bool power_on);

/*
 * Ask every running job and DMA copy to stop as soon as possible and make
 * all later steps return false at once. Used before joining the worker
 * threads; the device must be freed afterwards.
 */
void nm_device_shutdown(nm_device *dev);

#endif /* NEURON_MODEL_DEVICE_H */
