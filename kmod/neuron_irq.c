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
 *  - a ring's vector follows the CPU that submits to the idle ring
 *    (neuron_ring_steer_irq()), so the waiter is woken on its own CPU;
 *    it is the driver's to place (IRQF_NOBALANCING);
 *  - the error vector's hard handler clears its IRQ_STATUS bit (it is
 *    also the record of which cause fired) and wakes its thread, which
 *    logs the cause and queues the recovery work.
 */
#include <drm/drm_managed.h>
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

	/* Managed: pcim_enable_device() frees the vectors on unbind. */
	ret = pci_alloc_irq_vectors(pdev, count, count, PCI_IRQ_MSIX);
	if (ret < 0) {
		ndev_err(ndev, "cannot allocate %u MSI-X vectors: %d\n", count, ret);
		return ret;
	}
	nirq->count = count;

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
					       neuron_irq_ring_handler,
					       IRQF_NOBALANCING, vec->name,
					       vec);
		if (ret) {
			ndev_err(ndev, "cannot request IRQ %d (%s): %d\n",
				 vec->irq, vec->name, ret);
			return ret;
		}
		if (vec->ring)
			vec->ring->irq = vec->irq;
		ndev->hw.irq_enabled |= vec->status_bit;
	}

	ret = devm_add_action_or_reset(&pdev->dev, neuron_irq_fini, ndev);
	if (ret)
		return ret;

	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_STATUS, ndev->hw.irq_enabled);
	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~ndev->hw.irq_enabled);
	return 0;
}
