/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: the ring unit shared by core queues and DMA engines, and the
 * device's set of rings.
 */
#ifndef __NEURON_RING_H__
#define __NEURON_RING_H__

#include <linux/atomic.h>
#include <linux/dma-fence.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "neuron_regs.h"

struct neuron_device;
struct neuron_exec;
struct neuron_job;
struct neuron_lane_cancel;
struct neuron_ring;
struct neuron_table_pool;
struct seq_file;

/*
 * A ring size the device accepts is a power of two in 2..4096: exactly the
 * divisors of NEURON_RING_MAX_ENTRIES above 1.
 */
#define NEURON_RING_SIZE_OK(n)	(!(NEURON_RING_MAX_ENTRIES % (n)))

/**
 * enum neuron_ring_kind - which unit of the device a ring feeds
 * @NEURON_RING_CORE: a core's job queue
 * @NEURON_RING_DMA: a DMA engine
 */
enum neuron_ring_kind {
	NEURON_RING_CORE,
	NEURON_RING_DMA,
};

/**
 * struct neuron_ring_ops - what differs between core queues and engines
 * @hw_init: program the idle unit's rings, empty, and enable it; the
 *	ring's lock is held or nothing else uses the ring yet
 * @write: put @job, just added to &neuron_ring.inflight, on the hardware
 *	(inside drm_dev_enter())
 * @kick: optional: ring the doorbell for the jobs @write put on the
 *	unit since the last kick, so that jobs written together cost one
 *	(inside drm_dev_enter()); a unit without it rings it in @write
 * @process: consume the completions the unit reported and signal the
 *	jobs that are done (from the unit's hard interrupt handler, or inside
 *	drm_dev_enter()); must not sleep
 * @reset: reset the unit and wait for it, at most neuron_reset_timeout_ms,
 *	keeping the results of jobs that completed before the reset; return
 *	0 or -ETIMEDOUT (inside drm_dev_enter()). Called with
 *	&neuron_ring.lock held and &neuron_ring.irq_lock not held (it
 *	sleeps), the ring paused; it takes &neuron_ring.irq_lock itself to
 *	collect what completed.
 * @forget: optional: drop the unit's progress on the jobs taken off it
 * @halted: whether the unit stopped on a ring error (inside
 *	drm_dev_enter())
 * @show_regs: print the unit's registers (debugfs, inside drm_dev_enter();
 *	neuron_ring_show_regs() prints a table of them) and driver indices
 * @show_job: print one job on the ring (debugfs)
 *
 * @hw_init, @write, @kick, @process, @forget and @show_job are called with
 * &neuron_ring.irq_lock held (@hw_init also with &neuron_ring.lock, or
 * before the ring is in use), and so must not sleep.
 */
struct neuron_ring_ops {
	void (*hw_init)(struct neuron_ring *ring);
	void (*write)(struct neuron_ring *ring, struct neuron_job *job);
	void (*kick)(struct neuron_ring *ring);
	void (*process)(struct neuron_ring *ring);
	int (*reset)(struct neuron_ring *ring);
	void (*forget)(struct neuron_ring *ring);
	bool (*halted)(struct neuron_ring *ring);
	void (*show_regs)(struct neuron_ring *ring, struct seq_file *m);
	void (*show_job)(struct neuron_job *job, struct seq_file *m);
};

/**
 * struct neuron_ring_reg - a register of a unit, for debugfs
 * @name: its name
 * @offset: offset from the unit's register base
 * @bits: 32, or 64 for a _LO/_HI pair
 */
struct neuron_ring_reg {
	const char *name;
	u32 offset;
	u32 bits;
};

/**
 * struct neuron_ring - one core queue or DMA engine
 * @ndev: the device
 * @ops: the unit's operations
 * @kind: core queue or DMA engine
 * @index: core or engine index
 * @credits: jobs the unit holds at once
 * @timeout_ms: time a job may take on the unit before it is reset
 * @lock: mutex (process context) serializing everything that puts jobs
 *	on the unit or takes the unit away: pushing and writing jobs, resets
 *	of the unit or the device, unplug, debugfs. Protects @lanes,
 *	@stopped, the lanes' waiting jobs and fence seqnos. Taken before
 *	@irq_lock.
 * @irq_lock: spinlock, taken in the unit's hard interrupt handler and
 *	elsewhere with interrupts disabled; protects the unit's rings and
 *	indices (&struct neuron_queue, &struct neuron_dma_engine), the
 *	progress of the jobs on them, @inflight, @num_inflight, @starved,
 *	@paused, and the fences of the jobs on @inflight (signalled only
 *	under it).
 * @lanes: the files' lanes that have jobs waiting, served round robin
 * @stopped: a device reset is under way: waiting jobs stay waiting
 * @paused: the unit is being reset: the interrupt handler leaves the
 *	ring alone until the reset has collected what completed
 * @starved: a job waits for a credit: a completion kicks @run_work
 * @inflight: jobs written to the unit and not completed, in ring order
 * @num_inflight: entries in @inflight, at most @credits
 * @run_work: writes waiting jobs whose fences signalled or that waited
 *	for a credit
 * @timeout_work: fires when the oldest job on the unit took @timeout_ms;
 *	restarted by every completion (neuron_reset.c)
 * @submit_seqno: last sequence number given to a job of this ring (its
 *	device job id and the ioctl's seqno)
 * @resets: resets of this unit done by the driver (read locklessly)
 * @tables: core queue: its jobs' binding-table slots; DMA engine: NULL
 * @name: the ring in traces and debugfs ("neuron-core0")
 * @label: the unit in messages ("core 0", "DMA engine 1")
 */
struct neuron_ring {
	struct neuron_device *ndev;
	const struct neuron_ring_ops *ops;
	enum neuron_ring_kind kind;
	u32 index;
	u32 credits;
	unsigned int timeout_ms;
	/* Serializes pushes, writes, resets, unplug; protects the lanes. */
	struct mutex lock;
	/* Protects the unit's rings, inflight, paused and their fences. */
	spinlock_t irq_lock;
	struct list_head lanes;
	bool stopped;
	bool paused;
	bool starved;
	struct list_head inflight;
	u32 num_inflight;
	struct work_struct run_work;
	struct delayed_work timeout_work;
	atomic64_t submit_seqno;
	atomic_t resets;
	struct neuron_table_pool *tables;
	char name[24];
	char label[24];
};

/**
 * struct neuron_push - one job handed to neuron_ring_push()
 * @job: in, the job
 * @fence: in, from neuron_fence_alloc(); out, the job's fence, one
 *	reference of which is the caller's
 * @seqno: out, the job's sequence number on its ring: the job may be
 *	done and released by the time neuron_ring_push() returns
 */
struct neuron_push {
	struct neuron_job *job;
	struct dma_fence *fence;
	u64 seqno;
};

/**
 * struct neuron_file_ring - a file's lane of one ring
 * @ring: the ring
 * @waiting: the file's jobs not yet written to the unit, in submission
 *	order (&neuron_ring.lock)
 * @node: entry in &neuron_ring.lanes while @waiting is not empty
 * @fence_context: the dma_fence context of the lane's jobs: they complete
 *	in submission order
 * @fence_seqno: last seqno used on @fence_context (&neuron_ring.lock)
 * @blocker: the fence the first waiting job waits for, with @blocker_cb
 *	added to it, or NULL (&neuron_ring.lock)
 * @blocker_cb: kicks &neuron_ring.run_work when @blocker signals
 * @cancel: what fails the jobs still waiting when the file is closed;
 *	allocated at open, so that closing cannot fail
 */
struct neuron_file_ring {
	struct neuron_ring *ring;
	struct list_head waiting;
	struct list_head node;
	u64 fence_context;
	u64 fence_seqno;
	struct dma_fence *blocker;
	struct dma_fence_cb blocker_cb;
	struct neuron_lane_cancel *cancel;
};

/**
 * struct neuron_exec - the execution state of a device
 * @ndev: the device
 * @rings: the core queues (0..@num_cores-1), then the DMA engines
 * @num_cores: core queues in @rings
 * @num_dma: DMA engines in @rings
 * @submit_wq: per-CPU workqueue running the rings' @run_work and
 *	@release_work, on the CPU that queued them
 * @reset_wq: ordered workqueue running every ring's timeout work and
 *	@recover_work: resets never run concurrently
 * @recover_work: handles halted rings and fatal device errors
 * @done: jobs whose fences signalled, to release (lock-free list)
 * @release_work: releases the jobs on @done that no ioctl reaped first
 * @lane_drained: woken when a lane's last waiting job leaves it
 * @device_resets: full device resets done by the driver
 * @ready: the rings exist and are programmed
 * @offline: the device is being recovered from a PCIe error or is
 *	suspended: the reset works leave it alone
 */
struct neuron_exec {
	struct neuron_device *ndev;
	struct neuron_ring *rings[NEURON_MAX_CORES + NEURON_MAX_DMA_ENGINES];
	u32 num_cores;
	u32 num_dma;
	struct workqueue_struct *submit_wq;
	struct workqueue_struct *reset_wq;
	struct work_struct recover_work;
	struct llist_head done;
	struct delayed_work release_work;
	wait_queue_head_t lane_drained;
	atomic_t device_resets;
	bool ready;
	bool offline;
};

static inline u32 neuron_exec_num_rings(const struct neuron_exec *exec)
{
	return exec->num_cores + exec->num_dma;
}

static inline struct neuron_ring *neuron_exec_core(struct neuron_exec *exec,
						   u32 core)
{
	return exec->rings[core];
}

static inline struct neuron_ring *neuron_exec_dma(struct neuron_exec *exec,
						  u32 engine)
{
	return exec->rings[exec->num_cores + engine];
}

int neuron_ring_init(struct neuron_device *ndev, struct neuron_ring *ring,
		     const struct neuron_ring_ops *ops,
		     enum neuron_ring_kind kind, u32 index, u32 credits,
		     unsigned int timeout_ms);
int neuron_file_ring_init(struct neuron_file_ring *lane,
			  struct neuron_ring *ring);
void neuron_file_ring_fini(struct neuron_file_ring *lane);
void neuron_ring_push(struct neuron_file_ring *lane, struct neuron_push *jobs,
		      u32 count);
void neuron_ring_dispatch_locked(struct neuron_ring *ring);
void neuron_ring_reap(struct neuron_exec *exec);
void neuron_ring_release_work(struct work_struct *work);
void neuron_ring_irq(struct neuron_ring *ring);
void neuron_ring_complete_locked(struct neuron_ring *ring,
				 struct neuron_job *job, int error);
void neuron_ring_clear_locked(struct neuron_ring *ring, int err);
void neuron_ring_pause(struct neuron_ring *ring);
int neuron_ring_recover(struct neuron_ring *ring, u64 seqno, int err);
int neuron_ring_show(struct neuron_ring *ring, struct seq_file *m);
void neuron_ring_show_regs(struct neuron_ring *ring, struct seq_file *m,
			   u32 base, const struct neuron_ring_reg *regs,
			   unsigned int count);

#endif /* __NEURON_RING_H__ */
