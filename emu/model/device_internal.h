/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a device is made of: its own state (device_state.h) and its units
 * (queue.h, dma.h). Shared by device.c and the register file (regs.c),
 * which sit above the units; the units see only the state.
 */
#ifndef NEURON_MODEL_DEVICE_INTERNAL_H
#define NEURON_MODEL_DEVICE_INTERNAL_H

#include "device.h"
#include "device_state.h"
#include "dma.h"
#include "queue.h"

struct nm_device {
    nm_device_state state;
    nm_queue q[NEURON_MAX_CORES];
    nm_dma dma[NEURON_MAX_DMA_ENGINES];
};

/* Enters the fatal state with @cause (NEURON_FATAL_*), unless resetting. */
void nm_device_enter_fatal(nm_device *dev, uint32_t cause);

#endif
