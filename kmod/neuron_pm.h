/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: runtime and system power management, shutdown.
 */
#ifndef __NEURON_PM_H__
#define __NEURON_PM_H__

#include <linux/pm.h>
#include <linux/types.h>

struct neuron_device;
struct pci_dev;

extern const struct dev_pm_ops neuron_pm_ops;

int neuron_pm_get(struct neuron_device *ndev);
void neuron_pm_get_noresume(struct neuron_device *ndev);
bool neuron_pm_get_if_active(struct neuron_device *ndev);
void neuron_pm_put(struct neuron_device *ndev);
void neuron_pm_init(struct neuron_device *ndev);
void neuron_pm_fini(struct neuron_device *ndev);
void neuron_pm_shutdown(struct pci_dev *pdev);

#endif /* __NEURON_PM_H__ */
