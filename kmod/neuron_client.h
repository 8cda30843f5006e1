/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: the accounting of one open file, shared with its jobs and its
 * pinned host memory, which may outlive the file.
 */
#ifndef __NEURON_CLIENT_H__
#define __NEURON_CLIENT_H__

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/types.h>

#include "neuron_regs.h"

/**
 * struct neuron_client - accounting of one open file, shared with its jobs
 * @ref: the file holds one reference, every job and every mapping of
 *	pinned host pages (neuron_gem_host.c) another
 * @jobs_inflight: jobs and copies submitted and not yet freed
 * @jobs_submitted: SUBMIT jobs accepted
 * @copies_submitted: COPY jobs accepted
 * @busy_ns: per core, nanoseconds the core spent on this client's jobs
 *	(from the completion entries' cycle counts)
 * @dma_bytes: bytes copied by this client's completed copies
 * @last_fault: device status of this client's last failed job (0: none)
 * @last_fault_info: its completion entry's info
 * @last_fault_seqno: its seqno
 * @host_pinned: bytes of host buffers pinned for this file's jobs and
 *	copies (neuron_bo_dma_get()), limited by neuron_host_pin_file_limit()
 *	(neuron_pin.c)
 *
 * Counters are atomics or written with WRITE_ONCE(); readers take no lock.
 */
struct neuron_client {
	struct kref ref;
	atomic_t jobs_inflight;
	atomic64_t jobs_submitted;
	atomic64_t copies_submitted;
	atomic64_t busy_ns[NEURON_MAX_CORES];
	atomic64_t dma_bytes;
	u32 last_fault;
	u32 last_fault_info;
	u64 last_fault_seqno;
	atomic64_t host_pinned;
};

struct neuron_client *neuron_client_create(void);
void neuron_client_put(struct neuron_client *client);

#endif /* __NEURON_CLIENT_H__ */
