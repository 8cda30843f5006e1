/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: MSI-X vectors and interrupt handlers.
 */
#ifndef __NEURON_IRQ_H__
#define __NEURON_IRQ_H__

#include <linux/types.h>

struct neuron_device;
struct neuron_ring;

/**
 * enum neuron_irq_source - what an MSI-X vector signals
 * @NEURON_IRQ_SRC_QUEUE: a core's job queue has new completions
 * @NEURON_IRQ_SRC_DMA: a DMA engine has completed descriptors
 * @NEURON_IRQ_SRC_ERROR: a queue or engine halted, or the device is fatal
 */
enum neuron_irq_source {
	NEURON_IRQ_SRC_QUEUE,
	NEURON_IRQ_SRC_DMA,
	NEURON_IRQ_SRC_ERROR,
};

/**
 * struct neuron_irq_vector - one MSI-X vector
 * @ndev: the device
 * @source: what the vector signals
 * @index: core or DMA engine index (0 for the error vector)
 * @status_bit: the vector's NEURON_IRQ_* bit in IRQ_STATUS and IRQ_MASK
 * @ring: the core queue or DMA engine it signals (NULL for errors)
 * @irq: Linux IRQ number
 * @name: name shown in /proc/interrupts
 */
struct neuron_irq_vector {
	struct neuron_device *ndev;
	enum neuron_irq_source source;
	u32 index;
	u32 status_bit;
	struct neuron_ring *ring;
	int irq;
	char name[32];
};

/**
 * struct neuron_irq - the device's interrupts
 * @vectors: NEURON_MSIX_COUNT() vectors, in MSI-X table order
 * @count: entries in @vectors
 * @dma_of_cpu: %nr_cpu_ids entries: for each CPU, the DMA engine whose
 *	vector the IRQ core placed on it (its managed affinity includes the
 *	CPU), 0 where none is or without managed affinity; set at probe,
 *	read-only afterwards (neuron_irq_local_dma())
 */
struct neuron_irq {
	struct neuron_irq_vector *vectors;
	unsigned int count;
	u8 *dma_of_cpu;
};

int neuron_irq_init(struct neuron_device *ndev);
u32 neuron_irq_local_dma(const struct neuron_irq *nirq);

#if IS_ENABLED(CONFIG_KUNIT)
struct cpumask;

/* Pure helpers of neuron_irq_init(), visible to the KUnit tests. */
unsigned int neuron_irq_plan_sets(u32 cores, u32 ndma, unsigned int ncpus,
				  unsigned int *set_size);
void neuron_irq_map_cpus(const struct cpumask *const *masks, u32 n,
			 u8 *unit_of_cpu, unsigned int ncpus);
#endif

#endif /* __NEURON_IRQ_H__ */
