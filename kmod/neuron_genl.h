/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: the generic netlink family "neuron", for telemetry.
 */
#ifndef __NEURON_GENL_H__
#define __NEURON_GENL_H__

#include <drm/neuron_genl.h>

struct neuron_device;

int neuron_genl_register(void);
void neuron_genl_unregister(void);
int neuron_genl_device_add(struct neuron_device *ndev);
void neuron_genl_event(struct neuron_device *ndev,
		       enum neuron_genl_event_kind kind, int core);

#endif /* __NEURON_GENL_H__ */
