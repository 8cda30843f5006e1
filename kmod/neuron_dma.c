// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: DMA engines.
 *
 * An engine is a 1024-descriptor ring. A copy arrives split into segments
 * (neuron_submit.c) and may need more descriptors than the ring holds, so
 * the copies on an engine stay on its ring's list and their descriptors
 * are written ("pumped") as the ring drains: when a copy is run and from
 * the completion interrupt's hard handler, which reads DMA_HEAD, checks each passed
 * descriptor's status and signals copies whose descriptors are all done.
 * Any descriptor error fails the whole copy.
 */
#include <drm/drm_managed.h>
#include <linux/dma-mapping.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>

#include "neuron_client.h"
#include "neuron_dma.h"
#include "neuron_drv.h"
#include "neuron_job.h"
#include "neuron_ring.h"
#include "neuron_trace.h"

unsigned int neuron_dma_timeout_ms = 30000;
module_param_named(dma_timeout_ms, neuron_dma_timeout_ms, uint, 0644);
MODULE_PARM_DESC(dma_timeout_ms,
		 "Time a copy may take before its DMA engine is reset, in ms; read when a device is bound (default: 30000)");

static_assert(NEURON_RING_SIZE_OK(NEURON_DMA_ENTRIES));

/* Ask for an interrupt at least this often, so the ring is refilled early. */
#define NEURON_DMA_IRQ_EVERY	(NEURON_DMA_ENTRIES / 4)

/**
 * struct neuron_dma_engine - one DMA engine
 * @ring: the ring unit; &neuron_ring.irq_lock protects everything below and
 *	the progress of the copies on &neuron_ring.inflight
 * @desc: descriptor ring (coherent DMA memory)
 * @desc_dma: bus address of @desc
 * @slot_job: the copy each ring slot between @head and @tail belongs to
 * @tail: producer index (what was last written to DMA_TAIL)
 * @head: descriptors consumed by the driver (DMA_HEAD as last seen)
 */
struct neuron_dma_engine {
	struct neuron_ring ring;
	struct neuron_dma_desc *desc;
	dma_addr_t desc_dma;
	struct neuron_job **slot_job;
	u32 tail;
	u32 head;
};

static struct neuron_dma_engine *to_neuron_dma(struct neuron_ring *ring)
{
	return container_of(ring, struct neuron_dma_engine, ring);
}

static u32 neuron_dma_reg(struct neuron_dma_engine *eng, u32 reg)
{
	return NEURON_DMA_BASE(eng->ring.index) + reg;
}

static void neuron_dma_forget(struct neuron_ring *ring)
{
	struct neuron_dma_engine *eng = to_neuron_dma(ring);

	memset(eng->slot_job, 0, NEURON_DMA_ENTRIES * sizeof(*eng->slot_job));
	eng->head = eng->tail;
}

static void neuron_dma_hw_init(struct neuron_ring *ring)
{
	struct neuron_dma_engine *eng = to_neuron_dma(ring);
	struct neuron_hw *hw = &ring->ndev->hw;

	eng->tail = 0;
	neuron_dma_forget(ring);
	neuron_wr32(hw, neuron_dma_reg(eng, NEURON_DMA_RING_LO), lower_32_bits(eng->desc_dma));
	neuron_wr32(hw, neuron_dma_reg(eng, NEURON_DMA_RING_HI), upper_32_bits(eng->desc_dma));
	neuron_wr32(hw, neuron_dma_reg(eng, NEURON_DMA_RING_ENTRIES), NEURON_DMA_ENTRIES);
	neuron_wr32(hw, neuron_dma_reg(eng, NEURON_DMA_CTRL), NEURON_DMA_CTRL_ENABLE);
	if (!(neuron_rd32(hw, neuron_dma_reg(eng, NEURON_DMA_STATUS)) &
	      NEURON_DMA_STATUS_ENABLED))
		ndev_err(ring->ndev, "%s does not enable (error %u)\n",
			 ring->label,
			 neuron_rd32(hw, neuron_dma_reg(eng, NEURON_DMA_ERROR)));
}

/* Writes as many pending descriptors as the ring has room for. */
static void neuron_dma_pump_locked(struct neuron_dma_engine *eng)
{
	struct neuron_dma_desc *desc = NULL;
	struct neuron_job *job;
	u32 start = eng->tail;

	lockdep_assert_held(&eng->ring.irq_lock);
	list_for_each_entry(job, &eng->ring.inflight, node) {
		while (job->next_seg < job->num_segs) {
			const struct neuron_dma_seg *seg = &job->segs[job->next_seg];
			u32 slot = eng->tail & (NEURON_DMA_ENTRIES - 1);
			u32 flags = seg->flags;

			if (eng->tail - eng->head >= NEURON_DMA_ENTRIES)
				goto doorbell;
			job->next_seg++;
			if (job->next_seg == job->num_segs ||
			    !((eng->tail + 1) % NEURON_DMA_IRQ_EVERY))
				flags |= NEURON_DMA_F_IRQ;
			desc = &eng->desc[slot];
			desc->src = cpu_to_le64(seg->src);
			desc->dst = cpu_to_le64(seg->dst);
			desc->len = cpu_to_le32(seg->len);
			desc->flags = cpu_to_le32(flags);
			desc->cookie = cpu_to_le32(lower_32_bits(job->seqno));
			desc->status = 0;
			eng->slot_job[slot] = job;
			eng->tail++;
		}
	}
doorbell:
	if (eng->tail == start)
		return;
	/* The last descriptor written interrupts, so the ring is refilled. */
	desc->flags |= cpu_to_le32(NEURON_DMA_F_IRQ);
	/* writel() orders the descriptors before the doorbell. */
	neuron_wr32(&eng->ring.ndev->hw, neuron_dma_reg(eng, NEURON_DMA_TAIL),
		    eng->tail);
}

static void neuron_dma_write(struct neuron_ring *ring, struct neuron_job *job)
{
	/* From the start: after a reset the copy runs again as a whole. */
	job->next_seg = 0;
	job->done_segs = 0;
	job->dma_status = 0;
	trace_neuron_copy(ring->ndev, ring->index, job->seqno, job->bytes, 0);
	neuron_dma_pump_locked(to_neuron_dma(ring));
}

/* Signals a copy whose descriptors the engine has all passed. */
static void neuron_dma_complete_locked(struct neuron_dma_engine *eng,
				       struct neuron_job *job)
{
	struct neuron_ring *ring = &eng->ring;
	int err = 0;

	lockdep_assert_held(&ring->irq_lock);
	if (job->dma_status) {
		err = job->dma_status == NEURON_DMA_ERR_ABORTED ? -ECANCELED : -EIO;
		drm_dbg_driver(&ring->ndev->drm, "%s: copy %llu failed: error %u\n",
			       ring->label, job->seqno, job->dma_status);
		WRITE_ONCE(job->client->last_fault, job->dma_status);
		WRITE_ONCE(job->client->last_fault_seqno, job->seqno);
	} else {
		atomic64_add(job->bytes, &job->client->dma_bytes);
	}
	trace_neuron_copy_complete(ring->ndev, ring->index, job->seqno,
				   job->bytes, err);
	neuron_ring_complete_locked(ring, job, err);
}

/*
 * Consumes the descriptors the engine passed, then refills the ring. The
 * engine writes a descriptor's status after its copy, and the pump cleared
 * it, so DONE in the status means done: no read of DMA_HEAD, an MMIO exit
 * per interrupt, is needed.
 */
static void neuron_dma_process(struct neuron_ring *ring)
{
	struct neuron_dma_engine *eng = to_neuron_dma(ring);

	lockdep_assert_held(&ring->irq_lock);
	while (eng->head != eng->tail) {
		u32 slot = eng->head & (NEURON_DMA_ENTRIES - 1);
		u32 status = le32_to_cpu(READ_ONCE(eng->desc[slot].status));
		struct neuron_job *job = eng->slot_job[slot];

		if (!(status & NEURON_DMA_DONE))
			break;
		/* The copy's data was written before its status. */
		dma_rmb();
		eng->slot_job[slot] = NULL;
		eng->head++;
		if (WARN_ON_ONCE(!job))
			continue;
		if (status & NEURON_DMA_ERR_MASK && !job->dma_status)
			job->dma_status = status & NEURON_DMA_ERR_MASK;
		if (++job->done_segs == job->num_segs)
			neuron_dma_complete_locked(eng, job);
	}
	neuron_dma_pump_locked(eng);
}

static int neuron_dma_reset(struct neuron_ring *ring)
{
	struct neuron_dma_engine *eng = to_neuron_dma(ring);
	struct neuron_hw *hw = &ring->ndev->hw;

	lockdep_assert_held(&ring->lock);
	neuron_wr32(hw, neuron_dma_reg(eng, NEURON_DMA_CTRL), NEURON_DMA_CTRL_RESET);
	return neuron_hw_poll_clear(hw, neuron_dma_reg(eng, NEURON_DMA_CTRL),
				    NEURON_DMA_CTRL_RESET);
}

static bool neuron_dma_halted(struct neuron_ring *ring)
{
	return neuron_rd32(&ring->ndev->hw,
			   neuron_dma_reg(to_neuron_dma(ring), NEURON_DMA_STATUS)) &
	       NEURON_DMA_STATUS_HALTED;
}

static const struct neuron_ring_reg neuron_dma_regs[] = {
	{ "ctrl", NEURON_DMA_CTRL, 32 },
	{ "status", NEURON_DMA_STATUS, 32 },
	{ "error", NEURON_DMA_ERROR, 32 },
	{ "entries", NEURON_DMA_RING_ENTRIES, 32 },
	{ "head", NEURON_DMA_HEAD, 32 },
	{ "tail", NEURON_DMA_TAIL, 32 },
};

static void neuron_dma_show_regs(struct neuron_ring *ring, struct seq_file *m)
{
	struct neuron_dma_engine *eng = to_neuron_dma(ring);

	neuron_ring_show_regs(ring, m, NEURON_DMA_BASE(ring->index),
			      neuron_dma_regs, ARRAY_SIZE(neuron_dma_regs));
	seq_printf(m, "driver head: %u tail: %u\n", eng->head, eng->tail);
}

static void neuron_dma_show_job(struct neuron_job *job, struct seq_file *m)
{
	seq_printf(m, "  seqno %llu bytes %llu segments %u/%u done %u\n",
		   job->seqno, job->bytes, job->next_seg, job->num_segs,
		   job->done_segs);
}

static const struct neuron_ring_ops neuron_dma_ops = {
	.hw_init = neuron_dma_hw_init,
	.write = neuron_dma_write,
	.process = neuron_dma_process,
	.reset = neuron_dma_reset,
	.forget = neuron_dma_forget,
	.halted = neuron_dma_halted,
	.show_regs = neuron_dma_show_regs,
	.show_job = neuron_dma_show_job,
};

/**
 * neuron_dma_create() - allocate a DMA engine and its ring
 * @ndev: the device
 * @index: the engine
 *
 * Everything is managed (drmm, dmam). The hardware is programmed later,
 * through &neuron_ring_ops.hw_init.
 *
 * Return: the engine's ring or an ERR_PTR().
 */
struct neuron_ring *neuron_dma_create(struct neuron_device *ndev, u32 index)
{
	struct neuron_dma_engine *eng;
	int ret;

	eng = drmm_kzalloc(&ndev->drm, sizeof(*eng), GFP_KERNEL);
	if (!eng)
		return ERR_PTR(-ENOMEM);
	ret = neuron_ring_init(ndev, &eng->ring, &neuron_dma_ops,
			       NEURON_RING_DMA, index, NEURON_DMA_CREDITS,
			       neuron_dma_timeout_ms);
	if (ret)
		return ERR_PTR(ret);
	eng->slot_job = drmm_kcalloc(&ndev->drm, NEURON_DMA_ENTRIES,
				     sizeof(*eng->slot_job), GFP_KERNEL);
	eng->desc = dmam_alloc_coherent(ndev->drm.dev,
					NEURON_DMA_ENTRIES * sizeof(*eng->desc),
					&eng->desc_dma, GFP_KERNEL);
	if (!eng->slot_job || !eng->desc)
		return ERR_PTR(-ENOMEM);
	return &eng->ring;
}
