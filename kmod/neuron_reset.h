/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: recovery from hangs and errors, and the notifications of resets.
 */
#ifndef __NEURON_RESET_H__
#define __NEURON_RESET_H__

#include <linux/pci.h>

struct neuron_device;
struct neuron_exec;
struct neuron_ring;

/**
 * enum neuron_reset_reason - why a core or the device was reset
 * @NEURON_RESET_TIMEOUT: a job ran longer than its timeout (a hang)
 * @NEURON_RESET_ERROR: a queue or DMA engine halted on a ring error
 * @NEURON_RESET_FATAL: the device entered its fatal state
 * @NEURON_RESET_PCI: recovery from a PCIe error (AER) reset the device
 * @NEURON_RESET_DEBUG: requested through debugfs, for tests
 */
enum neuron_reset_reason {
	NEURON_RESET_TIMEOUT,
	NEURON_RESET_ERROR,
	NEURON_RESET_FATAL,
	NEURON_RESET_PCI,
	NEURON_RESET_DEBUG,
};

void neuron_reset_init(struct neuron_exec *exec);
void neuron_reset_ring_init(struct neuron_ring *ring);
void neuron_reset_error_irq(struct neuron_device *ndev);
void neuron_reset_stop(struct neuron_exec *exec);
int neuron_reset_hw(struct neuron_device *ndev);
void neuron_reset_rings(struct neuron_exec *exec, int err, bool reprogram);
void neuron_reset_start(struct neuron_exec *exec);
void neuron_reset_notify(struct neuron_device *ndev, int core,
			 enum neuron_reset_reason reason);

extern const struct pci_error_handlers neuron_pci_err_handlers;

#endif /* __NEURON_RESET_H__ */
