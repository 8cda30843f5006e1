/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A core's job queue: a ring unit of job descriptors, the completion ring
 * it writes, the core that runs the jobs and the queue's counters.
 */
#ifndef NEURON_MODEL_QUEUE_H
#define NEURON_MODEL_QUEUE_H

#include <stdbool.h>
#include <stdint.h>
#include <threads.h>

#include "job.h"
#include "neuron_regs.h"
#include "ring.h"

typedef struct nm_device_state nm_device_state;

/* 64-bit registers whose _HI half is latched by reading _LO. */
#define NM_Q_LATCHES 7 /* CUR_JOB + 6 counters */

enum { Q_CNT_BUSY, Q_CNT_INSTR, Q_CNT_FLOPS, Q_CNT_DMA_BYTES, Q_CNT_JOBS, Q_CNT_FAULTS, Q_CNT_N };

typedef struct nm_queue {
    nm_device_state *dev; /* the device, as its units see it */
    uint32_t index;
    nm_ring ring; /* the job ring; its lock covers the fields below */
    cnd_t room;   /* completion ring space, abort or reset */

    /* Registers. */
    uint64_t cpl;
    uint32_t cpl_entries;
    uint32_t cpl_tail;
    uint32_t cpl_head;
    uint64_t cur_job;
    uint64_t cnt[Q_CNT_N];
    uint32_t latch[NM_Q_LATCHES];

    /* Execution state, written by the worker. */
    uint64_t run_start; /* clock_ns at job start */
    uint32_t run_flags; /* NEURON_JOB_F_* of the running job */
    bool need_core_reset;
    bool cpl_pending; /* a final entry waits for completion ring space */
    struct neuron_cpl_entry pending;
    bool pending_irq;
    bool aborted_valid; /* a job to report as ABORTED by the core reset */
    uint64_t aborted_id;

    nm_core *core; /* used by the worker only */
} nm_queue;

/* Returns false when the core's SBUF and PSUM cannot be allocated. */
bool nm_queue_init(nm_queue *q, nm_device_state *dev, uint32_t index, uint32_t sbuf_size,
                   uint32_t psum_size);
void nm_queue_destroy(nm_queue *q);

/*
 * The queue's work function (nm_device_core_step): a requested reset, a
 * pending completion, or one job. Returns true if it should run again.
 */
bool nm_queue_step(nm_queue *q);

/* A device reset; returns true if a running job became stale (ring.h). */
bool nm_queue_device_reset(nm_queue *q);

/* A fatal error or shutdown: the running job and a waiting notify stop. */
void nm_queue_abort(nm_queue *q);

/* The queue's registers, at offsets inside NEURON_QUEUE_BASE(index). */
uint32_t nm_queue_reg_read(nm_queue *q, uint32_t reg, bool *known);
void nm_queue_reg_write(nm_queue *q, uint32_t reg, uint32_t v, bool *known);

#endif
