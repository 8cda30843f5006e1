/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: DRM accel driver for the neuron machine-learning accelerator.
 * The device and per-file state every part of the driver starts from.
 *
 * Only the register interface (neuron_hw.h) and the device-memory
 * allocator (neuron_mm.h), which know nothing of the device around them,
 * are embedded; every other part is reached through a pointer to a type
 * declared here and defined by that part, so that this header includes no
 * other part of the driver and each part includes only what it uses.
 */
#ifndef __NEURON_DRV_H__
#define __NEURON_DRV_H__

#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_print.h>
#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/types.h>
#include <linux/wait.h>

#include "neuron_hw.h"
#include "neuron_mm.h"

#define DRIVER_NAME		"neuron"
#define DRIVER_DESC		"neuron machine-learning accelerator"
#define DRIVER_VERSION		"0.1.0"

struct neuron_exec;
struct neuron_file_exec;
struct neuron_irq;
struct neuron_telemetry;
struct vfsmount;

/**
 * struct neuron_device - one neuron PCI function
 * @drm: the DRM device; its lifetime (refcounted, may outlive the PCI
 *	device while files are open) bounds everything below
 * @pdev: the PCI function (valid while the driver is bound)
 * @hw: register mapping, identity and capabilities of the device
 * @mem: device-memory BAR mapping, write-combined, for kernel access such
 *	as clearing new buffers (devres: gone after remove)
 * @mem_bus_start: CPU physical address of the device-memory BAR, for
 *	userspace mappings of device buffers
 * @mm: device-memory allocator
 * @irq: MSI-X vectors and their handlers (neuron_irq.c)
 * @exec: core queues, DMA engines and their rings
 *	(neuron_ring.h)
 * @telemetry: counters, reset accounting, sysfs directories, netlink
 *	index (neuron_telemetry.h)
 * @jobs_alive: jobs created and not yet freed
 * @jobs_idle: woken when @jobs_alive drops to zero
 * @host_bos_lock: protects @host_bos; taken before a buffer's
 *	&neuron_bo.pin_lock
 * @host_bos: the %DRM_NEURON_BO_HOST buffers of the device, whose
 *	mappings for the device neuron_gem_host_unplug() undoes, and whose
 *	idle mappings a pin that a limit refused frees
 * @huge_mnt: the tmpfs mount with huge pages that host buffers live on,
 *	on kernels whose DRM device has none (before 7.0); NULL otherwise,
 *	or when the mount failed
 *
 * The parts behind pointers are drmm-allocated in probe, so they live as
 * long as the DRM device. Hardware may only be touched between
 * drm_dev_enter() and drm_dev_exit() outside probe, remove and interrupt
 * handlers (which are freed before the BARs are unmapped), because
 * @hw.regs and @mem are unmapped when the device is unbound while files
 * still hold the DRM device.
 */
struct neuron_device {
	struct drm_device drm;
	struct pci_dev *pdev;
	struct neuron_hw hw;
	void __iomem *mem;
	phys_addr_t mem_bus_start;
	struct neuron_mm mm;
	struct neuron_irq *irq;
	struct neuron_exec *exec;
	struct neuron_telemetry *telemetry;
	atomic_t jobs_alive;
	wait_queue_head_t jobs_idle;
	/* Protects host_bos. */
	struct mutex host_bos_lock;
	struct list_head host_bos;
	struct vfsmount *huge_mnt;
};

/**
 * struct neuron_file - per-open-file state
 * @ndev: the device this file was opened on
 * @exec: the file's lanes of the rings and job accounting
 *
 * Buffer handles live in the drm_file's own handle table.
 */
struct neuron_file {
	struct neuron_device *ndev;
	struct neuron_file_exec *exec;
};

static inline struct neuron_device *to_neuron_device(struct drm_device *drm)
{
	return container_of(drm, struct neuron_device, drm);
}

static inline struct neuron_file *to_neuron_file(struct drm_file *file)
{
	return file->driver_priv;
}

#define ndev_err(ndev, fmt, ...)  drm_err(&(ndev)->drm, fmt, ##__VA_ARGS__)
#define ndev_warn(ndev, fmt, ...) drm_warn(&(ndev)->drm, fmt, ##__VA_ARGS__)
#define ndev_info(ndev, fmt, ...) drm_info(&(ndev)->drm, fmt, ##__VA_ARGS__)
#define ndev_dbg(ndev, fmt, ...)  drm_dbg_driver(&(ndev)->drm, fmt, ##__VA_ARGS__)

#endif /* __NEURON_DRV_H__ */
