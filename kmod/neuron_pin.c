// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the accounting of pinned host memory.
 *
 * A pinned page cannot be swapped out or reclaimed, and the OOM killer sees
 * it in no process's memory. Pages pinned for jobs and copies
 * (neuron_gem_host.c) are therefore charged three times before any of them
 * is touched: to the pinning process's pinned_vm, limited by its
 * RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK (as RDMA and io_uring charge
 * theirs), and to the driver's counts per open file and for all files,
 * limited by the module parameters below whatever the caller's privileges.
 */
#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/mm_types.h>
#include <linux/moduleparam.h>
#include <linux/sched/signal.h>
#include <kunit/visibility.h>

#include "neuron_client.h"
#include "neuron_pin.h"

/*
 * Limits of pinned host memory in MiB, read at every pin (0: a fraction of
 * RAM): without them one client could leave the machine to the OOM killer.
 * A pinned page holds its whole folio (a huge page: 2 MiB), and pins are
 * counted so.
 */
static unsigned int neuron_host_pin_limit_mb;
module_param_named(host_pin_limit_mb, neuron_host_pin_limit_mb, uint, 0644);
MODULE_PARM_DESC(host_pin_limit_mb,
		 "MiB of host buffers all files may have pinned for the devices together (0: half of RAM)");

static unsigned int neuron_host_pin_file_limit_mb;
module_param_named(host_pin_file_limit_mb, neuron_host_pin_file_limit_mb,
		   uint, 0644);
MODULE_PARM_DESC(host_pin_file_limit_mb,
		 "MiB of host buffers one open file may have pinned (0: a quarter of RAM)");

/* Bytes of host buffers pinned for all devices. */
static atomic64_t neuron_host_pinned_bytes = ATOMIC64_INIT(0);

static u64 neuron_pin_limit(unsigned int mb, unsigned int ram_shift)
{
	if (mb)
		return (u64)mb << 20;
	return ((u64)totalram_pages() << PAGE_SHIFT) >> ram_shift;
}

/**
 * neuron_host_pin_limit() - bytes of host buffers all files may pin
 *
 * Return: the limit, from module parameter host_pin_limit_mb.
 */
u64 neuron_host_pin_limit(void)
{
	return neuron_pin_limit(READ_ONCE(neuron_host_pin_limit_mb), 1);
}

/**
 * neuron_host_pin_file_limit() - bytes of host buffers one file may pin
 *
 * Return: the limit, from module parameter host_pin_file_limit_mb.
 */
u64 neuron_host_pin_file_limit(void)
{
	return neuron_pin_limit(READ_ONCE(neuron_host_pin_file_limit_mb), 2);
}

/**
 * neuron_host_pinned() - bytes of host buffers pinned for all devices now
 *
 * Return: the bytes counted against neuron_host_pin_limit().
 */
u64 neuron_host_pinned(void)
{
	return atomic64_read(&neuron_host_pinned_bytes);
}

/**
 * neuron_pin_add_within() - add to a count unless it would exceed a limit
 * @counter: the count, in bytes
 * @bytes: what to add
 * @limit: the most @counter may reach
 *
 * Return: true if @bytes were added; false, with @counter unchanged, if
 * the sum would exceed @limit.
 */
VISIBLE_IF_KUNIT bool neuron_pin_add_within(atomic64_t *counter, u64 bytes,
					    u64 limit)
{
	s64 old = atomic64_read(counter);

	do {
		if ((u64)old + bytes > limit)
			return false;
	} while (!atomic64_try_cmpxchg(counter, &old, old + bytes));
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(neuron_pin_add_within);

/*
 * Charges @pages pinned pages to @mm's pinned_vm (VmPin in
 * /proc/PID/status): the caller's RLIMIT_MEMLOCK limits them, unless it
 * has CAP_IPC_LOCK, whose pins are counted but not limited.
 */
static int neuron_pin_charge_mm(struct mm_struct *mm, u64 pages)
{
	u64 limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	u64 pinned = atomic64_add_return(pages, &mm->pinned_vm);

	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(pages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

/**
 * neuron_pin_charge() - charge host pages about to be pinned
 * @client: the file the job or copy comes from
 * @mm: the caller's address space (current->mm)
 * @bytes: bytes of whole pages
 *
 * In the caller's context: its RLIMIT_MEMLOCK and capabilities apply.
 * Undone by neuron_pin_uncharge() with the same @client, @mm and @bytes,
 * from any context, also after the process exited (the caller keeps @mm
 * with mmgrab()).
 *
 * Return: 0; -ENOMEM when @mm's pinned_vm would exceed the caller's
 * RLIMIT_MEMLOCK and the caller lacks CAP_IPC_LOCK; -EDQUOT when the
 * bytes pinned for all files or for @client would exceed
 * neuron_host_pin_limit() or neuron_host_pin_file_limit(). Nothing is
 * charged on failure.
 */
int neuron_pin_charge(struct neuron_client *client, struct mm_struct *mm,
		      u64 bytes)
{
	int ret;

	ret = neuron_pin_charge_mm(mm, bytes >> PAGE_SHIFT);
	if (ret)
		return ret;
	if (!neuron_pin_add_within(&neuron_host_pinned_bytes, bytes,
				   neuron_host_pin_limit())) {
		ret = -EDQUOT;
		goto err_mm;
	}
	if (!neuron_pin_add_within(&client->host_pinned, bytes,
				   neuron_host_pin_file_limit())) {
		atomic64_sub(bytes, &neuron_host_pinned_bytes);
		ret = -EDQUOT;
		goto err_mm;
	}
	return 0;

err_mm:
	atomic64_sub(bytes >> PAGE_SHIFT, &mm->pinned_vm);
	return ret;
}

/**
 * neuron_pin_uncharge() - undo neuron_pin_charge()
 * @client: the file charged
 * @mm: the address space charged
 * @bytes: the bytes charged
 */
void neuron_pin_uncharge(struct neuron_client *client, struct mm_struct *mm,
			 u64 bytes)
{
	atomic64_sub(bytes >> PAGE_SHIFT, &mm->pinned_vm);
	atomic64_sub(bytes, &client->host_pinned);
	atomic64_sub(bytes, &neuron_host_pinned_bytes);
}
