/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: setting up and tearing down the device's rings, and the files'
 * lanes of them.
 */
#ifndef __NEURON_EXEC_H__
#define __NEURON_EXEC_H__

#include <linux/mutex.h>
#include <linux/types.h>

#include "neuron_regs.h"
#include "neuron_ring.h"

struct dma_fence;
struct neuron_client;
struct neuron_device;

/**
 * struct neuron_file_exec - per-file scheduling state
 * @submit_lock: makes choosing the engine of a %DRM_NEURON_ENGINE_ANY
 *	copy and pushing it one step
 * @client: accounting, outlives the file while its jobs run
 * @cores: the file's lane of each core queue
 * @dma: the file's lane of each DMA engine
 * @num_cores: entries of @cores that were initialized
 * @num_dma: entries of @dma that were initialized
 * @any_last: the fence of the file's last copy to any engine, or NULL
 * @any_engine: the engine that copy went to
 */
struct neuron_file_exec {
	/* Serializes the choice of engine for any-engine copies. */
	struct mutex submit_lock;
	struct neuron_client *client;
	struct neuron_file_ring cores[NEURON_MAX_CORES];
	struct neuron_file_ring dma[NEURON_MAX_DMA_ENGINES];
	u32 num_cores;
	u32 num_dma;
	struct dma_fence *any_last;
	u32 any_engine;
};

int neuron_exec_init(struct neuron_device *ndev);
void neuron_exec_unplug(struct neuron_device *ndev);
struct neuron_file_exec *neuron_exec_file_open(struct neuron_device *ndev);
void neuron_exec_file_close(struct neuron_device *ndev,
			    struct neuron_file_exec *fexec);

#endif /* __NEURON_EXEC_H__ */
