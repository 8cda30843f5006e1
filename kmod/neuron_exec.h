/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: setting up and tearing down the device's rings, and the files'
 * scheduler entities.
 */
#ifndef __NEURON_EXEC_H__
#define __NEURON_EXEC_H__

#include <drm/gpu_scheduler.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include "neuron_regs.h"

struct neuron_client;
struct neuron_device;

/**
 * struct neuron_file_exec - per-file scheduling state
 * @submit_lock: makes arming and pushing a job one step, so that jobs of
 *	one entity reach the scheduler in sequence-number order
 * @client: accounting, outlives the file while its jobs run
 * @core_entities: one scheduler entity per core queue
 * @dma_entities: one scheduler entity per DMA engine
 * @dma_any: entity spread over all DMA engines, for %DRM_NEURON_ENGINE_ANY
 * @num_cores: entries of @core_entities that were initialized
 * @num_dma: entries of @dma_entities that were initialized
 * @dma_any_init: @dma_any was initialized
 */
struct neuron_file_exec {
	/* Serializes drm_sched_job_arm() and drm_sched_entity_push_job(). */
	struct mutex submit_lock;
	struct neuron_client *client;
	struct drm_sched_entity core_entities[NEURON_MAX_CORES];
	struct drm_sched_entity dma_entities[NEURON_MAX_DMA_ENGINES];
	struct drm_sched_entity dma_any;
	u32 num_cores;
	u32 num_dma;
	bool dma_any_init;
};

int neuron_exec_init(struct neuron_device *ndev);
void neuron_exec_unplug(struct neuron_device *ndev);
struct neuron_file_exec *neuron_exec_file_open(struct neuron_device *ndev);
void neuron_exec_file_close(struct neuron_file_exec *fexec);

#endif /* __NEURON_EXEC_H__ */
