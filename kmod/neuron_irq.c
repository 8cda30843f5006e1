// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: MSI-X vectors and interrupt handlers.
 *
 * One vector per core queue, one per DMA engine and one for errors, as
 * laid out by NEURON_MSIX_*(). The device sends a message for every event
 * (datasheet section 7), so no vector needs its IRQ_STATUS bit to be
 * acknowledged, and no vector is shared:
 *  - a core queue's or DMA engine's vector has a hard handler only, which
 *    consumes the ring's completions and signals the fences of the jobs
 *    that are done (neuron_ring_irq(), under the ring's spinlock); a
 *    waiter is woken straight from it;
 *  - the rings' vectors have managed affinity: the IRQ core spreads the
 *    core queues' vectors over the CPUs, and the DMA engines' vectors
 *    likewise (neuron_irq_plan_sets()); nothing moves them afterwards;
 *    a copy to any engine prefers the engine whose vector is on the
 *    submitting CPU (neuron_irq_local_dma()), as blk-mq maps a CPU to the
 *    queue whose vector is on it;
 *  - the error vector's hard handler clears its IRQ_STATUS bit (it is
 *    also the record of which cause fired) and wakes its thread, which
 *    logs the cause and queues the recovery work.
 */
#include <drm/drm_managed.h>
#include <kunit/visibility.h>
#include <linux/cpumask.h>
#include <linux/interrupt.h>
#include <linux/pci.h>

#include "neuron_drv.h"
#include "neuron_hw.h"
#include "neuron_irq.h"
#include "neuron_reset.h"
#include "neuron_ring.h"

/* Hard handler of a core queue's or DMA engine's vector. */
static irqreturn_t neuron_irq_ring_handler(int irq, void *arg)
{
	struct neuron_irq_vector *vec = arg;

	if (READ_ONCE(vec->ndev->exec->ready))
		neuron_ring_irq(vec->ring);
	return IRQ_HANDLED;
}

/* Hard handler of the error vector. */
static irqreturn_t neuron_irq_error_handler(int irq, void *arg)
{
	struct neuron_irq_vector *vec = arg;
	struct neuron_hw *hw = &vec->ndev->hw;
	u32 status;

	status = neuron_rd32(hw, NEURON_REG_IRQ_STATUS) & vec->status_bit;
	if (!status)
		return IRQ_NONE;
	neuron_wr32(hw, NEURON_REG_IRQ_STATUS, status);
	return IRQ_WAKE_THREAD;
}

/* Logs which queues and engines halted and whether the device is fatal. */
static void neuron_irq_error(struct neuron_device *ndev)
{
	struct neuron_hw *hw = &ndev->hw;
	u32 status, i;

	status = neuron_rd32(hw, NEURON_REG_DEV_STATUS);
	if (status & NEURON_DEV_STATUS_FATAL)
		drm_err_ratelimited(&ndev->drm, "device fatal error, cause %u\n",
				    neuron_rd32(hw, NEURON_REG_FATAL_CAUSE));

	for (i = 0; i < hw->num_cores; i++) {
		u32 base = NEURON_QUEUE_BASE(i);

		if (neuron_rd32(hw, base + NEURON_Q_STATUS) & NEURON_Q_STATUS_HALTED)
			drm_err_ratelimited(&ndev->drm, "core %u queue halted, error %u\n",
					    i, neuron_rd32(hw, base + NEURON_Q_ERROR));
	}
	for (i = 0; i < hw->num_dma; i++) {
		u32 base = NEURON_DMA_BASE(i);

		if (neuron_rd32(hw, base + NEURON_DMA_STATUS) & NEURON_DMA_STATUS_HALTED)
			drm_err_ratelimited(&ndev->drm, "DMA engine %u halted, error %u\n",
					    i, neuron_rd32(hw, base + NEURON_DMA_ERROR));
	}
}

/* Thread of the error vector. */
static irqreturn_t neuron_irq_error_thread(int irq, void *arg)
{
	struct neuron_irq_vector *vec = arg;
	struct neuron_device *ndev = vec->ndev;

	neuron_irq_error(ndev);
	neuron_reset_error_irq(ndev);
	return IRQ_HANDLED;
}

/* Masks every interrupt before the handlers are freed on unbind. */
static void neuron_irq_fini(void *arg)
{
	struct neuron_device *ndev = arg;

	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~0u);
	/* Flush the posted write before free_irq() synchronizes. */
	neuron_rd32(&ndev->hw, NEURON_REG_IRQ_MASK);
}

static void neuron_irq_describe(struct neuron_device *ndev,
				struct neuron_irq_vector *vec, unsigned int nr)
{
	u32 cores = ndev->hw.num_cores, ndma = ndev->hw.num_dma;
	const char *dev_name = pci_name(ndev->pdev);

	vec->ndev = ndev;
	if (nr < NEURON_MSIX_DMA(cores, 0)) {
		vec->source = NEURON_IRQ_SRC_QUEUE;
		vec->index = nr - NEURON_MSIX_QUEUE(0);
		vec->status_bit = NEURON_IRQ_QUEUE(vec->index);
		vec->ring = neuron_exec_core(ndev->exec, vec->index);
		snprintf(vec->name, sizeof(vec->name), "neuron-q%u@%s",
			 vec->index, dev_name);
	} else if (nr < NEURON_MSIX_ERROR(cores, ndma)) {
		vec->source = NEURON_IRQ_SRC_DMA;
		vec->index = nr - NEURON_MSIX_DMA(cores, 0);
		vec->status_bit = NEURON_IRQ_DMA(vec->index);
		vec->ring = neuron_exec_dma(ndev->exec, vec->index);
		snprintf(vec->name, sizeof(vec->name), "neuron-dma%u@%s",
			 vec->index, dev_name);
	} else {
		vec->source = NEURON_IRQ_SRC_ERROR;
		vec->index = 0;
		vec->status_bit = NEURON_IRQ_ERROR;
		snprintf(vec->name, sizeof(vec->name), "neuron-err@%s",
			 dev_name);
	}
}

/**
 * neuron_irq_plan_sets() - group the rings' vectors into affinity sets
 * @cores: core queues, whose vectors come first
 * @ndma: DMA engines, whose vectors follow
 * @ncpus: possible CPUs
 * @set_size: out, %IRQ_AFFINITY_MAX_SETS entries: the vectors of each set
 *
 * The IRQ core spreads each set over all CPUs on its own, so that the
 * core queues are spread over the CPUs and so are the DMA engines (with
 * one set for both, two CPUs and two of each, both queues could share a
 * CPU). A set must not have more vectors than there are possible CPUs
 * (group_cpus_evenly() warns when asked for more groups than CPUs), so a
 * kind with more units than CPUs takes several sets.
 *
 * Return: the number of sets, or 0 if the vectors do not fit in
 * %IRQ_AFFINITY_MAX_SETS sets: then they keep the default affinity.
 */
VISIBLE_IF_KUNIT unsigned int neuron_irq_plan_sets(u32 cores, u32 ndma,
						   unsigned int ncpus,
						   unsigned int *set_size)
{
	u32 left[] = { cores, ndma };
	unsigned int nr = 0, k;

	if (!ncpus)
		return 0;
	for (k = 0; k < ARRAY_SIZE(left); k++) {
		while (left[k]) {
			if (nr == IRQ_AFFINITY_MAX_SETS)
				return 0;
			set_size[nr] = min_t(u32, left[k], ncpus);
			left[k] -= set_size[nr++];
		}
	}
	return nr;
}
EXPORT_SYMBOL_IF_KUNIT(neuron_irq_plan_sets);

/*
 * &irq_affinity.calc_sets: the sets planned in neuron_irq_alloc_vectors().
 * The vectors are allocated exactly, so @nvecs is always their sum.
 */
static void neuron_irq_calc_sets(struct irq_affinity *affd, unsigned int nvecs)
{
	const struct irq_affinity *plan = affd->priv;
	unsigned int i;

	affd->nr_sets = plan->nr_sets;
	for (i = 0; i < plan->nr_sets; i++)
		affd->set_size[i] = plan->set_size[i];
}

/**
 * neuron_irq_map_cpus() - the unit whose vector is on each CPU
 * @masks: @n affinity masks, one per unit's vector, or NULL entries
 * @n: units
 * @unit_of_cpu: out, @ncpus entries: for each CPU, the first unit whose
 *	mask includes it, 0 if none does
 * @ncpus: entries in @unit_of_cpu (CPUs past it are ignored)
 */
VISIBLE_IF_KUNIT void neuron_irq_map_cpus(const struct cpumask *const *masks,
					  u32 n, u8 *unit_of_cpu,
					  unsigned int ncpus)
{
	unsigned int cpu;
	u32 unit;

	memset(unit_of_cpu, 0, ncpus);
	for (unit = n; unit-- > 0;) {
		if (!masks[unit])
			continue;
		for_each_cpu(cpu, masks[unit])
			if (cpu < ncpus)
				unit_of_cpu[cpu] = unit;
	}
}
EXPORT_SYMBOL_IF_KUNIT(neuron_irq_map_cpus);

/*
 * Fills &neuron_irq.dma_of_cpu from the DMA engines' vectors' affinity,
 * as the IRQ core spread them (no mask without managed affinity).
 */
static int neuron_irq_map_dma(struct neuron_device *ndev)
{
	const struct cpumask *masks[NEURON_MAX_DMA_ENGINES];
	struct neuron_irq *nirq = ndev->irq;
	u32 cores = ndev->hw.num_cores, e;

	nirq->dma_of_cpu = drmm_kzalloc(&ndev->drm, nr_cpu_ids, GFP_KERNEL);
	if (!nirq->dma_of_cpu)
		return -ENOMEM;
	for (e = 0; e < ndev->hw.num_dma; e++)
		masks[e] = pci_irq_get_affinity(ndev->pdev,
						NEURON_MSIX_DMA(cores, e));
	neuron_irq_map_cpus(masks, ndev->hw.num_dma, nirq->dma_of_cpu,
			    nr_cpu_ids);
	return 0;
}

/**
 * neuron_irq_local_dma() - the DMA engine whose vector is on this CPU
 * @nirq: the device's interrupts
 *
 * A hint, read without pinning the caller to its CPU: a copy there
 * completes with its interrupt on the CPU that submitted it, while the
 * caller stays there.
 *
 * Return: an engine index below the device's number of engines.
 */
u32 neuron_irq_local_dma(const struct neuron_irq *nirq)
{
	return nirq->dma_of_cpu[raw_smp_processor_id()];
}

/*
 * Allocates one vector per ring and the error vector, exactly. The rings'
 * vectors have managed affinity, spread over the CPUs by the IRQ core;
 * the error vector (the last, a post vector) is not spread. Managed
 * through pcim_enable_device(): the vectors are freed on unbind.
 */
static int neuron_irq_alloc_vectors(struct neuron_device *ndev,
				    unsigned int count)
{
	struct irq_affinity plan = {}, affd = {
		.post_vectors = 1,
		.calc_sets = neuron_irq_calc_sets,
		.priv = &plan,
	};
	struct pci_dev *pdev = ndev->pdev;

	plan.nr_sets = neuron_irq_plan_sets(ndev->hw.num_cores,
					    ndev->hw.num_dma,
					    num_possible_cpus(), plan.set_size);
	if (!plan.nr_sets) {
		ndev_info(ndev, "%u vectors for %u CPUs: default IRQ affinity\n",
			  count, num_possible_cpus());
		return pci_alloc_irq_vectors(pdev, count, count, PCI_IRQ_MSIX);
	}
	return pci_alloc_irq_vectors_affinity(pdev, count, count,
					      PCI_IRQ_MSIX | PCI_IRQ_AFFINITY,
					      &affd);
}

/**
 * neuron_irq_init() - allocate the MSI-X vectors and request their handlers
 * @ndev: the device, identified and reset, with all interrupts masked, its
 *	rings set up
 *
 * All resources are device-managed; on unbind the interrupts are masked
 * first, then the handlers and vectors are freed.
 *
 * Return: 0 or a negative errno.
 */
int neuron_irq_init(struct neuron_device *ndev)
{
	struct pci_dev *pdev = ndev->pdev;
	struct neuron_irq *nirq;
	unsigned int count, i;
	int ret;

	nirq = drmm_kzalloc(&ndev->drm, sizeof(*nirq), GFP_KERNEL);
	if (!nirq)
		return -ENOMEM;
	ndev->irq = nirq;

	count = NEURON_MSIX_COUNT(ndev->hw.num_cores, ndev->hw.num_dma);
	nirq->vectors = devm_kcalloc(&pdev->dev, count, sizeof(*nirq->vectors),
				     GFP_KERNEL);
	if (!nirq->vectors)
		return -ENOMEM;

	ret = neuron_irq_alloc_vectors(ndev, count);
	if (ret < 0) {
		ndev_err(ndev, "cannot allocate %u MSI-X vectors: %d\n", count, ret);
		return ret;
	}
	nirq->count = count;
	ret = neuron_irq_map_dma(ndev);
	if (ret)
		return ret;

	for (i = 0; i < count; i++) {
		struct neuron_irq_vector *vec = &nirq->vectors[i];

		neuron_irq_describe(ndev, vec, i);
		vec->irq = pci_irq_vector(pdev, i);
		if (vec->irq < 0)
			return vec->irq;
		if (vec->source == NEURON_IRQ_SRC_ERROR)
			ret = devm_request_threaded_irq(&pdev->dev, vec->irq,
							neuron_irq_error_handler,
							neuron_irq_error_thread,
							0, vec->name, vec);
		else
			ret = devm_request_irq(&pdev->dev, vec->irq,
					       neuron_irq_ring_handler, 0,
					       vec->name, vec);
		if (ret) {
			ndev_err(ndev, "cannot request IRQ %d (%s): %d\n",
				 vec->irq, vec->name, ret);
			return ret;
		}
		ndev->hw.irq_enabled |= vec->status_bit;
	}

	ret = devm_add_action_or_reset(&pdev->dev, neuron_irq_fini, ndev);
	if (ret)
		return ret;

	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_STATUS, ndev->hw.irq_enabled);
	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~ndev->hw.irq_enabled);
	return 0;
}
