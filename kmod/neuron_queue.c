// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: core queues.
 *
 * A core's job queue is a 256-entry job ring and a 1024-entry completion
 * ring in coherent memory (datasheet 4.2). Writing a job is one
 * descriptor (job id = the job's per-core sequence number); one Q_TAIL
 * doorbell follows the descriptors written together. The completion
 * interrupt's hard handler walks the completion ring by its phase bit,
 * matches FINAL entries to the jobs on the ring by job id, signals their
 * fences and writes Q_CPL_HEAD. NOTIFY entries are consumed and ignored.
 */
#include <drm/drm_managed.h>
#include <linux/dma-mapping.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>

#include "neuron_client.h"
#include "neuron_drv.h"
#include "neuron_job.h"
#include "neuron_job_errno.h"
#include "neuron_queue.h"
#include "neuron_ring.h"
#include "neuron_table.h"
#include "neuron_trace.h"

unsigned int neuron_job_timeout_ms = 5000;
module_param_named(job_timeout_ms, neuron_job_timeout_ms, uint, 0644);
MODULE_PARM_DESC(job_timeout_ms,
		 "Time a job may run on a core before the core is reset, in ms; read when a device is bound (default: 5000)");

static_assert(NEURON_RING_SIZE_OK(NEURON_QUEUE_ENTRIES));
static_assert(NEURON_RING_SIZE_OK(NEURON_CPL_ENTRIES));

/**
 * struct neuron_queue - one core's job queue
 * @ring: the ring unit; &neuron_ring.irq_lock protects everything below
 * @desc: job ring (coherent DMA memory)
 * @desc_dma: bus address of @desc
 * @cpl: completion ring (coherent DMA memory)
 * @cpl_dma: bus address of @cpl
 * @tail: producer index of the job ring (what was last written to Q_TAIL)
 * @cpl_head: consumer index of the completion ring
 */
struct neuron_queue {
	struct neuron_ring ring;
	struct neuron_job_desc *desc;
	dma_addr_t desc_dma;
	struct neuron_cpl_entry *cpl;
	dma_addr_t cpl_dma;
	u32 tail;
	u32 cpl_head;
};

static struct neuron_queue *to_neuron_queue(struct neuron_ring *ring)
{
	return container_of(ring, struct neuron_queue, ring);
}

static u32 neuron_q_reg(struct neuron_queue *q, u32 reg)
{
	return NEURON_QUEUE_BASE(q->ring.index) + reg;
}

static void neuron_queue_hw_init(struct neuron_ring *ring)
{
	struct neuron_queue *q = to_neuron_queue(ring);
	struct neuron_hw *hw = &ring->ndev->hw;

	memset(q->cpl, 0, NEURON_CPL_ENTRIES * sizeof(*q->cpl));
	q->tail = 0;
	q->cpl_head = 0;
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_RING_LO), lower_32_bits(q->desc_dma));
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_RING_HI), upper_32_bits(q->desc_dma));
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_RING_ENTRIES), NEURON_QUEUE_ENTRIES);
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CPL_LO), lower_32_bits(q->cpl_dma));
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CPL_HI), upper_32_bits(q->cpl_dma));
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CPL_ENTRIES), NEURON_CPL_ENTRIES);
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CTRL), NEURON_Q_CTRL_ENABLE);
	if (!(neuron_rd32(hw, neuron_q_reg(q, NEURON_Q_STATUS)) &
	      NEURON_Q_STATUS_ENABLED))
		ndev_err(ring->ndev, "%s: queue does not enable (error %u)\n",
			 ring->label,
			 neuron_rd32(hw, neuron_q_reg(q, NEURON_Q_ERROR)));
}

static void neuron_queue_write(struct neuron_ring *ring, struct neuron_job *job)
{
	struct neuron_queue *q = to_neuron_queue(ring);
	struct neuron_job_desc *desc;

	lockdep_assert_held(&ring->irq_lock);
	desc = &q->desc[q->tail & (NEURON_QUEUE_ENTRIES - 1)];
	desc->bindings_addr = cpu_to_le64(job->table_dma);
	desc->num_bindings = cpu_to_le32(job->num_bindings);
	desc->flags = cpu_to_le32(NEURON_JOB_F_IRQ |
				  (job->profile ? NEURON_JOB_F_PROFILE : 0));
	desc->program_binding = cpu_to_le32(job->num_bindings - 1);
	desc->program_size = cpu_to_le32(job->program_size);
	desc->program_offset = 0;
	desc->job_id = cpu_to_le64(job->seqno);
	desc->trace_binding = cpu_to_le32(job->profile ?
					  job->num_bindings - 2 : 0);
	desc->reserved32 = 0;
	memset(desc->reserved, 0, sizeof(desc->reserved));
	q->tail++;
	trace_neuron_submit(ring->ndev, ring->index, job->seqno,
			    job->num_bindings);
}

/* One doorbell for every descriptor written since the last. */
static void neuron_queue_kick(struct neuron_ring *ring)
{
	struct neuron_queue *q = to_neuron_queue(ring);

	lockdep_assert_held(&ring->irq_lock);
	/* The descriptors are in memory before the doorbell (writel orders). */
	neuron_wr32(&ring->ndev->hw, neuron_q_reg(q, NEURON_Q_TAIL), q->tail);
}

static void neuron_queue_complete_locked(struct neuron_queue *q,
					 const struct neuron_cpl_entry *e,
					 bool resetting)
{
	struct neuron_ring *ring = &q->ring;
	struct neuron_device *ndev = ring->ndev;
	u64 id = le64_to_cpu(e->job_id);
	u32 status = le32_to_cpu(e->status);
	u32 info = le32_to_cpu(e->info);
	u64 cycles = le64_to_cpu(e->cycles);
	struct neuron_client *client;
	struct neuron_job *job;
	u32 mhz;
	int err;

	lockdep_assert_held(&ring->irq_lock);
	/* A reset aborted the job: it runs again, or fails if guilty. */
	if (resetting && status == NEURON_JOB_STATUS_ABORTED)
		return;

	list_for_each_entry(job, &ring->inflight, node) {
		if (job->seqno == id)
			goto found;
	}
	drm_err_ratelimited(&ndev->drm,
			    "%s: completion for unknown job %llu (status %#x)\n",
			    ring->label, id, status);
	return;

found:
	trace_neuron_complete(ndev, ring->index, job->seqno, status, cycles);
	job->status = status;
	job->info = info;
	client = job->client;
	mhz = ndev->hw.clock_mhz;
	if (mhz)
		atomic64_add(div_u64(cycles * 1000, mhz),
			     &client->busy_ns[ring->index]);
	err = neuron_job_status_errno(status);
	if (err) {
		WRITE_ONCE(client->last_fault, status);
		WRITE_ONCE(client->last_fault_info, info);
		WRITE_ONCE(client->last_fault_seqno, job->seqno);
		drm_dbg_driver(&ndev->drm,
			       "%s: job %llu failed: status %#x info %u engine %u\n",
			       ring->label, job->seqno, status, info,
			       le16_to_cpu(e->fault_engine));
	}
	neuron_ring_complete_locked(ring, job, err);
}

/*
 * Consumes the new entries of the completion ring and signals the jobs
 * that completed. With @resetting, ABORTED entries (written by a core
 * reset) leave their job alone.
 */
static void neuron_queue_process_locked(struct neuron_queue *q, bool resetting)
{
	u32 start = q->cpl_head;

	lockdep_assert_held(&q->ring.irq_lock);
	for (;;) {
		struct neuron_cpl_entry *e;
		u16 phase, flags;

		e = &q->cpl[q->cpl_head & (NEURON_CPL_ENTRIES - 1)];
		phase = (q->cpl_head / NEURON_CPL_ENTRIES) & 1 ?
			0 : NEURON_CPL_F_PHASE;
		flags = le16_to_cpu(READ_ONCE(e->flags));
		if ((flags & NEURON_CPL_F_PHASE) != phase)
			break;
		/* The entry was written before its phase bit. */
		dma_rmb();
		q->cpl_head++;
		if (flags & NEURON_CPL_F_FINAL)
			neuron_queue_complete_locked(q, e, resetting);
	}
	if (q->cpl_head != start)
		neuron_wr32(&q->ring.ndev->hw, neuron_q_reg(q, NEURON_Q_CPL_HEAD),
			    q->cpl_head);
}

static void neuron_queue_process(struct neuron_ring *ring)
{
	neuron_queue_process_locked(to_neuron_queue(ring), false);
}

static int neuron_queue_reset(struct neuron_ring *ring)
{
	struct neuron_queue *q = to_neuron_queue(ring);
	struct neuron_hw *hw = &ring->ndev->hw;
	int ret;

	lockdep_assert_held(&ring->lock);
	neuron_wr32(hw, neuron_q_reg(q, NEURON_Q_CTRL), NEURON_Q_CTRL_RESET);
	ret = neuron_hw_poll_clear(hw, neuron_q_reg(q, NEURON_Q_CTRL),
				   NEURON_Q_CTRL_RESET);
	if (!ret) {
		/* Collect entries completed up to the abort. */
		spin_lock_irq(&ring->irq_lock);
		neuron_queue_process_locked(q, true);
		spin_unlock_irq(&ring->irq_lock);
	}
	return ret;
}

static bool neuron_queue_halted(struct neuron_ring *ring)
{
	return neuron_rd32(&ring->ndev->hw,
			   neuron_q_reg(to_neuron_queue(ring), NEURON_Q_STATUS)) &
	       NEURON_Q_STATUS_HALTED;
}

static const struct neuron_ring_reg neuron_queue_regs[] = {
	{ "ctrl", NEURON_Q_CTRL, 32 },
	{ "status", NEURON_Q_STATUS, 32 },
	{ "error", NEURON_Q_ERROR, 32 },
	{ "entries", NEURON_Q_RING_ENTRIES, 32 },
	{ "head", NEURON_Q_HEAD, 32 },
	{ "tail", NEURON_Q_TAIL, 32 },
	{ "cpl_entries", NEURON_Q_CPL_ENTRIES, 32 },
	{ "cpl_tail", NEURON_Q_CPL_TAIL, 32 },
	{ "cpl_head", NEURON_Q_CPL_HEAD, 32 },
	{ "cur_job", NEURON_Q_CUR_JOB_LO, 64 },
};

static void neuron_queue_show_regs(struct neuron_ring *ring, struct seq_file *m)
{
	struct neuron_queue *q = to_neuron_queue(ring);

	neuron_ring_show_regs(ring, m, NEURON_QUEUE_BASE(ring->index),
			      neuron_queue_regs, ARRAY_SIZE(neuron_queue_regs));
	seq_printf(m, "driver tail: %u cpl_head: %u\n", q->tail, q->cpl_head);
	seq_printf(m, "table slots: %u of %u held\n",
		   neuron_table_pool_in_use(ring->tables), ring->tables->count);
}

static void neuron_queue_show_job(struct neuron_job *job, struct seq_file *m)
{
	seq_printf(m, "  seqno %llu bindings %u program %u bytes\n",
		   job->seqno, job->num_bindings, job->program_size);
}

static const struct neuron_ring_ops neuron_queue_ops = {
	.hw_init = neuron_queue_hw_init,
	.write = neuron_queue_write,
	.kick = neuron_queue_kick,
	.process = neuron_queue_process,
	.reset = neuron_queue_reset,
	.halted = neuron_queue_halted,
	.show_regs = neuron_queue_show_regs,
	.show_job = neuron_queue_show_job,
};

/**
 * neuron_queue_create() - allocate a core's queue and its rings
 * @ndev: the device
 * @core: the core
 *
 * Everything is managed (drmm, dmam; the binding-table slots live as long
 * as the DRM device, see neuron_table.c). The hardware is programmed later,
 * through &neuron_ring_ops.hw_init.
 *
 * Return: the queue's ring or an ERR_PTR().
 */
struct neuron_ring *neuron_queue_create(struct neuron_device *ndev, u32 core)
{
	struct device *dev = ndev->drm.dev;
	struct neuron_queue *q;
	int ret;

	q = drmm_kzalloc(&ndev->drm, sizeof(*q), GFP_KERNEL);
	if (!q)
		return ERR_PTR(-ENOMEM);
	ret = neuron_ring_init(ndev, &q->ring, &neuron_queue_ops,
			       NEURON_RING_CORE, core, NEURON_QUEUE_ENTRIES,
			       neuron_job_timeout_ms);
	if (ret)
		return ERR_PTR(ret);
	q->desc = dmam_alloc_coherent(dev, NEURON_QUEUE_ENTRIES * sizeof(*q->desc),
				      &q->desc_dma, GFP_KERNEL);
	q->cpl = dmam_alloc_coherent(dev, NEURON_CPL_ENTRIES * sizeof(*q->cpl),
				     &q->cpl_dma, GFP_KERNEL);
	if (!q->desc || !q->cpl)
		return ERR_PTR(-ENOMEM);
	/* One binding-table slot per job ring entry. */
	q->ring.tables = neuron_table_pool_create(&ndev->drm, NEURON_QUEUE_ENTRIES);
	if (IS_ERR(q->ring.tables))
		return ERR_CAST(q->ring.tables);
	return &q->ring;
}
