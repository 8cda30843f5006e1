// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: KUnit tests of the driver's pure functions: the fence error of a
 * completion status, the SG walk behind host bindings, the span walkers
 * that split copies, the binding table a job hands to the device, the
 * pool of slots it is written into, the affinity sets of the rings'
 * interrupt vectors and the map of CPUs to them, the lookup of a host
 * buffer's mappings in its interval tree, the bounded counts of pinned
 * memory and the argument checks of COPY and SUBMIT (the table of bad
 * arguments of uapi/neuron_accel_check_cases.h, which the simulator's and
 * the VM's tests run too).
 *
 * Built as neuron_kunit.ko for kernels with CONFIG_KUNIT; the functions
 * come from neuron.ko (EXPORT_SYMBOL_IF_KUNIT), except the status errno,
 * an inline of hw/neuron_job_errno.h, and the argument checks, inlines of
 * uapi/neuron_accel_check.h. The SG tables here are written by
 * hand: only their DMA addresses and lengths are read; so are the host
 * mappings: only their pages' indices are read.
 */
#include <kunit/test.h>
#include <linux/bitops.h>
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>

#include "neuron_accel_check_cases.h"
#include "neuron_compat.h"
#include "neuron_gem.h"
#include "neuron_gem_host.h"
#include "neuron_irq.h"
#include "neuron_job_errno.h"
#include "neuron_pin.h"
#include "neuron_regs.h"
#include "neuron_submit.h"
#include "neuron_table.h"

/* Three DMA segments: 4 KiB, 8 KiB, 4 KiB at unrelated addresses. */
static const struct {
	u64 addr;
	u32 len;
} neuron_test_segs[] = {
	{ 0x10000000, 0x1000 },
	{ 0x20000000, 0x2000 },
	{ 0x30000000, 0x1000 },
};

#define NEURON_TEST_SEG(i)	(neuron_test_segs[i].addr)
#define NEURON_TEST_TOTAL	0x4000

static struct sg_table *neuron_test_sgt(struct kunit *test)
{
	struct sg_table *sgt;
	struct scatterlist *sg;
	u32 n = ARRAY_SIZE(neuron_test_segs);
	int i;

	sgt = kunit_kzalloc(test, sizeof(*sgt), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, sgt);
	KUNIT_ASSERT_EQ(test, sg_alloc_table(sgt, n, GFP_KERNEL), 0);
	for_each_sgtable_sg(sgt, sg, i) {
		sg_dma_address(sg) = neuron_test_segs[i].addr;
		sg_dma_len(sg) = neuron_test_segs[i].len;
	}
	sgt->nents = n;
	return sgt;
}

static void neuron_test_sgt_free(struct sg_table *sgt)
{
	sg_free_table(sgt);
}

static void neuron_test_status_errno(struct kunit *test)
{
	static const struct {
		u32 status;
		int err;
	} cases[] = {
		{ NEURON_JOB_STATUS_OK, 0 },
		{ NEURON_JOB_STATUS_ABORTED, -ECANCELED },
		{ NEURON_JOB_STATUS_BINDING_INDEX, -EFAULT },
		{ NEURON_JOB_STATUS_BINDING_RANGE, -EFAULT },
		{ NEURON_JOB_STATUS_BINDING_ACCESS, -EFAULT },
		{ NEURON_JOB_STATUS_BAD_PROGRAM, -EINVAL },
		{ NEURON_JOB_STATUS_DECODE, -EINVAL },
		{ NEURON_JOB_STATUS_PARTITION, -EINVAL },
		{ NEURON_JOB_STATUS_SBUF_RANGE, -EINVAL },
		{ NEURON_JOB_STATUS_PSUM_RANGE, -EINVAL },
		{ NEURON_JOB_STATUS_DTYPE, -EINVAL },
		{ NEURON_JOB_STATUS_ALIGN, -EINVAL },
		{ NEURON_JOB_STATUS_SHAPE, -EINVAL },
		{ NEURON_JOB_STATUS_BAD_DESC, -EIO },
		{ NEURON_JOB_STATUS_BAD_BINDING, -EIO },
		{ NEURON_JOB_STATUS_SEMAPHORE, -EIO },
		{ NEURON_JOB_STATUS_HOST_DMA, -EIO },
		{ NEURON_JOB_STATUS_LIMIT, -EIO },
		{ 0xff, -EIO },
	};
	u32 i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		KUNIT_EXPECT_EQ_MSG(test, neuron_job_status_errno(cases[i].status),
				    cases[i].err, "status %#x", cases[i].status);
}

static void neuron_test_sg_walk(struct kunit *test)
{
	struct sg_table *sgt = neuron_test_sgt(test);
	struct neuron_sg_entry out[3];

	/* The whole table. */
	KUNIT_EXPECT_EQ(test, neuron_sg_walk(sgt, 0, NEURON_TEST_TOTAL, NULL), 3);

	/* From inside the first segment into the second. */
	KUNIT_ASSERT_EQ(test, neuron_sg_walk(sgt, 0xf00, 0x200, out), 2);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(out[0].addr), NEURON_TEST_SEG(0) + 0xf00);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(out[0].len), 0x100);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(out[1].addr), NEURON_TEST_SEG(1));
	KUNIT_EXPECT_EQ(test, le64_to_cpu(out[1].len), 0x100);

	/* Inside one segment; segments before it are skipped. */
	KUNIT_ASSERT_EQ(test, neuron_sg_walk(sgt, 0x1800, 0x400, out), 1);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(out[0].addr), NEURON_TEST_SEG(1) + 0x800);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(out[0].len), 0x400);

	/* Exactly the last segment. */
	KUNIT_ASSERT_EQ(test, neuron_sg_walk(sgt, 0x3000, 0x1000, out), 1);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(out[0].addr), NEURON_TEST_SEG(2));

	/* Past the end of the table: no entries. */
	KUNIT_EXPECT_EQ(test, neuron_sg_walk(sgt, 0x3f00, 0x200, NULL), 0);
	KUNIT_EXPECT_EQ(test, neuron_sg_walk(sgt, NEURON_TEST_TOTAL, 1, NULL), 0);
	neuron_test_sgt_free(sgt);
}

static void neuron_test_span_device(struct kunit *test)
{
	struct neuron_span sp;

	KUNIT_ASSERT_EQ(test, neuron_span_init(&sp, 0x100000, NULL, 0x40, 0x3000), 0);
	KUNIT_EXPECT_EQ(test, sp.addr, 0x100040);
	KUNIT_EXPECT_EQ(test, sp.left, 0x3000);
	KUNIT_EXPECT_EQ(test, neuron_span_advance(&sp, 0x1000), 0);
	KUNIT_EXPECT_EQ(test, sp.addr, 0x101040);
	KUNIT_EXPECT_EQ(test, sp.left, 0x2000);
	KUNIT_EXPECT_EQ(test, neuron_span_advance(&sp, 0x2000), 0);
	KUNIT_EXPECT_EQ(test, sp.remaining, 0);
}

static void neuron_test_span_host(struct kunit *test)
{
	struct sg_table *sgt = neuron_test_sgt(test);
	struct neuron_span sp;

	/* Starts 0x100 before the end of the first segment. */
	KUNIT_ASSERT_EQ(test, neuron_span_init(&sp, 0, sgt, 0xf00, 0x2200), 0);
	KUNIT_EXPECT_EQ(test, sp.addr, NEURON_TEST_SEG(0) + 0xf00);
	KUNIT_EXPECT_EQ(test, sp.left, 0x100);
	KUNIT_ASSERT_EQ(test, neuron_span_advance(&sp, 0x100), 0);
	KUNIT_EXPECT_EQ(test, sp.addr, NEURON_TEST_SEG(1));
	KUNIT_EXPECT_EQ(test, sp.left, 0x2000);
	KUNIT_ASSERT_EQ(test, neuron_span_advance(&sp, 0x2000), 0);
	KUNIT_EXPECT_EQ(test, sp.addr, NEURON_TEST_SEG(2));
	/* Only what is left of the range, not the whole segment. */
	KUNIT_EXPECT_EQ(test, sp.left, 0x100);
	KUNIT_ASSERT_EQ(test, neuron_span_advance(&sp, 0x100), 0);
	KUNIT_EXPECT_EQ(test, sp.remaining, 0);

	/* An offset beyond the table. */
	KUNIT_EXPECT_EQ(test, neuron_span_init(&sp, 0, sgt, NEURON_TEST_TOTAL, 1),
			-EINVAL);
	/* A range that runs past the table's end. */
	KUNIT_ASSERT_EQ(test, neuron_span_init(&sp, 0, sgt, 0x3000, 0x1100), 0);
	KUNIT_EXPECT_EQ(test, sp.left, 0x1000);
	KUNIT_EXPECT_EQ(test, neuron_span_advance(&sp, 0x1000), -EINVAL);
	neuron_test_sgt_free(sgt);
}

static void neuron_test_binding_table(struct kunit *test)
{
	struct sg_table *sgt = neuron_test_sgt(test);
	const dma_addr_t table_dma = 0x7000000;
	struct neuron_slot slots[3] = {
		{ .dev_addr = 0x100000, .offset = 0x40, .size = 0x80,
		  .flags = NEURON_BIND_READ },
		{ .sgt = sgt, .offset = 0xf00, .size = 0x200,
		  .flags = NEURON_BIND_WRITE | NEURON_BIND_HOST_SG },
		{ .dev_addr = 0x200000, .size = 0x1000,
		  .flags = NEURON_BIND_EXEC },
	};
	struct neuron_binding *table;
	struct neuron_sg_entry *sg;
	size_t size;

	slots[1].sg_count = neuron_sg_walk(sgt, 0xf00, 0x200, NULL);
	KUNIT_ASSERT_EQ(test, slots[1].sg_count, 2);
	size = neuron_binding_table_size(slots, 3);
	KUNIT_ASSERT_EQ(test, size, 3 * sizeof(*table) + 2 * sizeof(*sg));
	table = kunit_kzalloc(test, size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, table);
	memset(table, 0xa5, size);

	neuron_binding_table_fill(table, table_dma, slots, 3);
	sg = (struct neuron_sg_entry *)(table + 3);

	KUNIT_EXPECT_EQ(test, le64_to_cpu(table[0].addr), 0x100040);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(table[0].size), 0x80);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(table[0].flags), NEURON_BIND_READ);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(table[0].sg_count), 0);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(table[0].reserved), 0);

	/* The host slot points at its SG array, right after the table. */
	KUNIT_EXPECT_EQ(test, le64_to_cpu(table[1].addr),
			table_dma + 3 * sizeof(*table));
	KUNIT_EXPECT_EQ(test, le64_to_cpu(table[1].size), 0x200);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(table[1].flags),
			NEURON_BIND_WRITE | NEURON_BIND_HOST_SG);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(table[1].sg_count), 2);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(sg[0].addr), NEURON_TEST_SEG(0) + 0xf00);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(sg[0].len), 0x100);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(sg[1].addr), NEURON_TEST_SEG(1));
	KUNIT_EXPECT_EQ(test, le64_to_cpu(sg[1].len), 0x100);

	/* The program slot: execute rights only, its device address. */
	KUNIT_EXPECT_EQ(test, le64_to_cpu(table[2].addr), 0x200000);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(table[2].flags), NEURON_BIND_EXEC);
	neuron_test_sgt_free(sgt);
}

/* A pool of four slots in ordinary memory: only its addresses are read. */
static void neuron_test_table_pool(struct kunit *test)
{
	const u32 n = 4;
	const dma_addr_t base = 0x8000000;
	struct neuron_table_pool *pool;
	unsigned long taken = 0;
	int slots[4], slot;
	dma_addr_t dma;
	void *cpu;
	u32 i;

	pool = kunit_kzalloc(test, struct_size(pool, used, BITS_TO_LONGS(n)),
			     GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pool);
	pool->cpu = kunit_kzalloc(test, n * NEURON_TABLE_SLOT_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pool->cpu);
	pool->dma = base;
	pool->count = n;

	/* A table larger than a slot is not taken. */
	KUNIT_EXPECT_EQ(test, neuron_table_pool_get(pool, NEURON_TABLE_SLOT_SIZE + 1,
						    &cpu, &dma), -E2BIG);
	KUNIT_EXPECT_EQ(test, neuron_table_pool_in_use(pool), 0);

	/* Every slot once, each at its own place in the memory. */
	for (i = 0; i < n; i++) {
		slots[i] = neuron_table_pool_get(pool, NEURON_TABLE_SLOT_SIZE,
						 &cpu, &dma);
		KUNIT_ASSERT_GE(test, slots[i], 0);
		KUNIT_ASSERT_LT(test, slots[i], (int)n);
		KUNIT_EXPECT_FALSE(test, test_bit(slots[i], &taken));
		__set_bit(slots[i], &taken);
		KUNIT_EXPECT_PTR_EQ(test, cpu, pool->cpu +
				    slots[i] * NEURON_TABLE_SLOT_SIZE);
		KUNIT_EXPECT_EQ(test, dma, base + slots[i] * NEURON_TABLE_SLOT_SIZE);
		KUNIT_EXPECT_EQ(test, neuron_table_pool_in_use(pool), i + 1);
	}

	/* All held: the job gets memory of its own instead. */
	KUNIT_EXPECT_EQ(test, neuron_table_pool_get(pool, 1, &cpu, &dma), -ENOSPC);

	/* A slot given back is the one taken next. */
	neuron_table_pool_put(pool, slots[2]);
	KUNIT_EXPECT_EQ(test, neuron_table_pool_in_use(pool), n - 1);
	slot = neuron_table_pool_get(pool, 64, &cpu, &dma);
	KUNIT_EXPECT_EQ(test, slot, slots[2]);
	KUNIT_EXPECT_EQ(test, dma, base + slots[2] * NEURON_TABLE_SLOT_SIZE);

	for (i = 0; i < n; i++)
		neuron_table_pool_put(pool, slots[i]);
	KUNIT_EXPECT_EQ(test, neuron_table_pool_in_use(pool), 0);
}

/* Sets of at most one vector per CPU, core queues first, at most four. */
static void neuron_test_irq_plan_sets(struct kunit *test)
{
	static const struct {
		u32 cores, ndma;
		unsigned int ncpus, nr, sizes[IRQ_AFFINITY_MAX_SETS];
	} cases[] = {
		/* The default device on two CPUs: one set of each kind. */
		{ 2, 2, 2, 2, { 2, 2 } },
		{ 2, 2, 8, 2, { 2, 2 } },
		{ 1, 1, 1, 2, { 1, 1 } },
		/* More units than CPUs: a kind takes several sets. */
		{ 4, 2, 2, 3, { 2, 2, 2 } },
		{ 3, 1, 2, 3, { 2, 1, 1 } },
		{ 2, 4, 1, 0, { } },
		{ 6, 2, 2, 4, { 2, 2, 2, 2 } },
		{ 6, 4, 2, 0, { } },
		{ 16, 8, 8, 3, { 8, 8, 8 } },
		{ 16, 8, 4, 0, { } },
		{ 2, 2, 0, 0, { } },
	};
	unsigned int i, j, nr;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		unsigned int sizes[IRQ_AFFINITY_MAX_SETS] = {};

		nr = neuron_irq_plan_sets(cases[i].cores, cases[i].ndma,
					  cases[i].ncpus, sizes);
		KUNIT_EXPECT_EQ_MSG(test, nr, cases[i].nr, "case %u", i);
		for (j = 0; j < nr && j < IRQ_AFFINITY_MAX_SETS; j++)
			KUNIT_EXPECT_EQ_MSG(test, sizes[j], cases[i].sizes[j],
					    "case %u set %u", i, j);
	}
}

/*
 * Each CPU to the first unit whose vector's mask includes it, 0 where none
 * does; entries past the CPUs asked for untouched.
 */
static void neuron_test_irq_map_cpus(struct kunit *test)
{
	const struct cpumask *masks[3];
	struct cpumask *m0, *m1, *m01;
	u8 map[3];

	if (nr_cpu_ids < 2)
		kunit_skip(test, "needs 2 CPUs, has %u", nr_cpu_ids);
	m0 = kunit_kzalloc(test, cpumask_size(), GFP_KERNEL);
	m1 = kunit_kzalloc(test, cpumask_size(), GFP_KERNEL);
	m01 = kunit_kzalloc(test, cpumask_size(), GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, m0 && m1 && m01);
	cpumask_set_cpu(0, m0);
	cpumask_set_cpu(1, m1);
	cpumask_set_cpu(0, m01);
	cpumask_set_cpu(1, m01);

	/* One CPU each, as the IRQ core spreads two engines on two CPUs. */
	masks[0] = m0;
	masks[1] = m1;
	memset(map, 0xff, sizeof(map));
	neuron_irq_map_cpus(masks, 2, map, 2);
	KUNIT_EXPECT_EQ(test, map[0], 0);
	KUNIT_EXPECT_EQ(test, map[1], 1);
	KUNIT_EXPECT_EQ(test, map[2], 0xff);

	/* A CPU under two vectors goes to the first unit. */
	masks[0] = m01;
	masks[1] = m1;
	masks[2] = m0;
	neuron_irq_map_cpus(masks, 3, map, 2);
	KUNIT_EXPECT_EQ(test, map[0], 0);
	KUNIT_EXPECT_EQ(test, map[1], 0);
	masks[0] = m1;
	masks[1] = m01;
	neuron_irq_map_cpus(masks, 3, map, 2);
	KUNIT_EXPECT_EQ(test, map[0], 1);
	KUNIT_EXPECT_EQ(test, map[1], 0);

	/* No mask (no managed affinity): unit 0; CPUs past @ncpus ignored. */
	masks[0] = NULL;
	masks[1] = m01;
	memset(map, 0xff, sizeof(map));
	neuron_irq_map_cpus(masks, 2, map, 1);
	KUNIT_EXPECT_EQ(test, map[0], 1);
	KUNIT_EXPECT_EQ(test, map[1], 0xff);
	masks[1] = NULL;
	neuron_irq_map_cpus(masks, 2, map, 2);
	KUNIT_EXPECT_EQ(test, map[0], 0);
	KUNIT_EXPECT_EQ(test, map[1], 0);
}

/* A mapping of pages [@first, @first + @count) of @bo, listed, unpinned. */
static struct neuron_host_map *neuron_test_map(struct kunit *test,
					       struct neuron_bo *bo,
					       pgoff_t first, pgoff_t count)
{
	struct neuron_host_map *map;

	map = kunit_kzalloc(test, sizeof(*map), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, map);
	map->bo = bo;
	map->first = first;
	map->count = count;
	neuron_host_map_insert_locked(bo, map);
	return map;
}

/* Scans [first, last] of @bo into @range (emptied first); returns missing. */
static pgoff_t neuron_test_scan(struct neuron_bo *bo,
				struct neuron_host_range *range, pgoff_t first,
				pgoff_t last, unsigned int *maps,
				unsigned int *gaps)
{
	range->num_maps = 0;
	return neuron_host_range_scan_locked(bo, first, last, range, maps,
					     gaps);
}

/*
 * A host buffer's mappings in its interval tree: a range finds exactly the
 * mappings it overlaps, in page order, and the pages none covers; one that
 * begins inside a mapping an earlier range left starts its table at that
 * mapping's first page (exec test copy_in_cached_mapping).
 */
static void neuron_test_host_range_lookup(struct kunit *test)
{
	struct neuron_host_range *range;
	struct neuron_host_map *m[3], *made;
	unsigned int maps, gaps;
	struct neuron_bo *bo;

	bo = kunit_kzalloc(test, sizeof(*bo), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bo);
	range = kunit_kzalloc(test, struct_size(range, maps, 4), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, range);
	mutex_init(&bo->dma_lock);
	bo->dma_maps = RB_ROOT_CACHED;
	range->bo = bo;
	mutex_lock(&bo->dma_lock);

	/* Pages [0, 2), [8, 10) and [20, 30), listed out of order. */
	m[2] = neuron_test_map(test, bo, 20, 10);
	m[0] = neuron_test_map(test, bo, 0, 2);
	m[1] = neuron_test_map(test, bo, 8, 2);

	/* Counting only: between two mappings, none overlaps. */
	KUNIT_EXPECT_EQ(test, neuron_host_range_scan_locked(bo, 2, 7, NULL,
							    &maps, &gaps), 6);
	KUNIT_EXPECT_EQ(test, maps, 0);
	KUNIT_EXPECT_EQ(test, gaps, 1);
	KUNIT_EXPECT_EQ(test, m[0]->users + m[1]->users + m[2]->users, 0);

	/* Inside one mapping: that mapping, nothing to pin, starts before. */
	KUNIT_EXPECT_EQ(test, neuron_test_scan(bo, range, 21, 23, &maps, &gaps),
			0);
	KUNIT_EXPECT_EQ(test, maps, 1);
	KUNIT_EXPECT_EQ(test, gaps, 0);
	KUNIT_ASSERT_EQ(test, range->num_maps, 1);
	KUNIT_EXPECT_PTR_EQ(test, range->maps[0], m[2]);
	KUNIT_EXPECT_EQ(test, m[2]->users, 1);
	neuron_host_range_order(range);
	KUNIT_EXPECT_EQ(test, range->start, (u64)20 << PAGE_SHIFT);

	/* From a mapping's first page: no gap before it. */
	KUNIT_EXPECT_EQ(test, neuron_test_scan(bo, range, 20, 21, &maps, &gaps),
			0);
	KUNIT_EXPECT_EQ(test, maps, 1);
	KUNIT_EXPECT_EQ(test, gaps, 0);

	/* Across all three, in page order: gaps [2, 7], [10, 19], [30, 31]. */
	KUNIT_EXPECT_EQ(test, neuron_test_scan(bo, range, 1, 31, &maps, &gaps),
			18);
	KUNIT_EXPECT_EQ(test, maps, 3);
	KUNIT_EXPECT_EQ(test, gaps, 3);
	KUNIT_ASSERT_EQ(test, range->num_maps, 3);
	KUNIT_EXPECT_PTR_EQ(test, range->maps[0], m[0]);
	KUNIT_EXPECT_PTR_EQ(test, range->maps[1], m[1]);
	KUNIT_EXPECT_PTR_EQ(test, range->maps[2], m[2]);
	KUNIT_EXPECT_EQ(test, m[0]->users, 1);
	KUNIT_EXPECT_EQ(test, m[2]->users, 3);

	/* From a mapping's last page to the next one's first. */
	KUNIT_EXPECT_EQ(test, neuron_test_scan(bo, range, 1, 8, &maps, &gaps),
			6);
	KUNIT_EXPECT_EQ(test, maps, 2);
	KUNIT_EXPECT_EQ(test, gaps, 1);
	KUNIT_ASSERT_EQ(test, range->num_maps, 2);
	KUNIT_EXPECT_PTR_EQ(test, range->maps[1], m[1]);

	/* Past every mapping; and the page right after one. */
	KUNIT_EXPECT_EQ(test, neuron_test_scan(bo, range, 40, 40, &maps, &gaps),
			1);
	KUNIT_EXPECT_EQ(test, maps + range->num_maps, 0);
	KUNIT_EXPECT_EQ(test, gaps, 1);
	KUNIT_EXPECT_EQ(test, neuron_test_scan(bo, range, 30, 30, &maps, &gaps),
			1);
	KUNIT_EXPECT_EQ(test, maps, 0);

	/*
	 * A range found [8, 10) and made [5, 8) for its gap: in page order,
	 * its table starts at the new mapping.
	 */
	KUNIT_EXPECT_EQ(test, neuron_test_scan(bo, range, 5, 9, &maps, &gaps),
			3);
	made = kunit_kzalloc(test, sizeof(*made), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, made);
	made->first = 5;
	made->count = 3;
	range->maps[range->num_maps++] = made;
	neuron_host_range_order(range);
	KUNIT_EXPECT_PTR_EQ(test, range->maps[0], made);
	KUNIT_EXPECT_PTR_EQ(test, range->maps[1], m[1]);
	KUNIT_EXPECT_EQ(test, range->start, (u64)5 << PAGE_SHIFT);

	mutex_unlock(&bo->dma_lock);
	mutex_destroy(&bo->dma_lock);
}

/* The driver's pin counts: added to up to their limit, never past it. */
static void neuron_test_pin_add_within(struct kunit *test)
{
	atomic64_t count = ATOMIC64_INIT(0);

	KUNIT_EXPECT_TRUE(test, neuron_pin_add_within(&count, 4096, 8192));
	/* Exactly the limit. */
	KUNIT_EXPECT_TRUE(test, neuron_pin_add_within(&count, 4096, 8192));
	KUNIT_EXPECT_EQ(test, atomic64_read(&count), 8192);
	/* One byte over it: refused, the count unchanged. */
	KUNIT_EXPECT_FALSE(test, neuron_pin_add_within(&count, 1, 8192));
	KUNIT_EXPECT_EQ(test, atomic64_read(&count), 8192);
	KUNIT_EXPECT_TRUE(test, neuron_pin_add_within(&count, 1, 8193));
	KUNIT_EXPECT_EQ(test, atomic64_read(&count), 8193);
}

/* Valid arguments, as struct neuron_check_args describes them. */
static void neuron_test_check_args(struct neuron_check_args *a)
{
	*a = (struct neuron_check_args){
		.copy = {
			.src_handle = 1,
			.dst_handle = 2,
			.size = 4096,
			.engine = DRM_NEURON_ENGINE_ANY,
			.out_sync = { .handle = 6 },
		},
		.submit = {
			.program_handle = 3,
			.num_bindings = 2,
			.program_size = 64,
			.bindings = 0x10000,
			.out_sync = { .handle = 6 },
		},
		.batch = { .submits = 0x20000, .count = 1 },
		.bindings = {
			{ .handle = 4, .flags = DRM_NEURON_BIND_READ,
			  .size = 4096 },
			{ .handle = 5, .flags = DRM_NEURON_BIND_WRITE,
			  .size = 4096 },
		},
		.in_syncs_ptr = 0x30000,
		.fenceless = 7,
		.copy_bo_size = 8192,
		.program_bo_size = 4096,
		.limits = {
			.num_cores = 2,
			.num_dma = 2,
			.max_bindings = NEURON_MAX_BINDINGS - 1,
			.trace_size = sizeof(struct neuron_trace_header),
			.caps = DRM_NEURON_CAP_PROFILE |
				DRM_NEURON_CAP_HOST_BINDINGS,
		},
	};
}

/*
 * Every case of the shared table of bad arguments: the checks before the
 * lookups fail with its errno, or pass when the error is a lookup's.
 */
static void neuron_test_check_cases(struct kunit *test)
{
	struct neuron_check_args *a;
	u32 i;

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	for (i = 0; i < ARRAY_SIZE(neuron_check_cases); i++) {
		const struct neuron_check_case *c = &neuron_check_cases[i];

		neuron_test_check_args(a);
		c->edit(a);
		KUNIT_EXPECT_EQ_MSG(test, neuron_check_early(a, c->ioctl),
				    (c->early ? c->err : 0), "ioctl %d: %s",
				    c->ioctl, c->name);
	}
}

/* The checks that follow the lookups: ranges, overlap, in-syncs, caps. */
static void neuron_test_check_later(struct kunit *test)
{
	struct drm_neuron_sync syncs[2] = { { .handle = 1 }, { .handle = 2 } };
	struct neuron_check_args a;

	KUNIT_EXPECT_EQ(test, neuron_check_range(0, 8192, 8192), 0);
	KUNIT_EXPECT_EQ(test, neuron_check_range(8191, 1, 8192), 0);
	KUNIT_EXPECT_EQ(test, neuron_check_range(8192, 0, 8192), 0);
	KUNIT_EXPECT_EQ(test, neuron_check_range(8192, 1, 8192), -EINVAL);
	KUNIT_EXPECT_EQ(test, neuron_check_range(1, 8192, 8192), -EINVAL);
	KUNIT_EXPECT_EQ(test, neuron_check_range(8193, 0, 8192), -EINVAL);
	/* The end overflows: [2^64 - 8, 2^64 + 8) does not wrap into range. */
	KUNIT_EXPECT_EQ(test, neuron_check_range(~0ULL - 7, 16, ~0ULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, neuron_check_range(8, ~0ULL, 8192), -EINVAL);

	neuron_test_check_args(&a);
	a.copy.dst_offset = 4096;
	KUNIT_EXPECT_EQ(test, neuron_check_copy_overlap(&a.copy), 0);
	a.copy.dst_offset = 4095;
	KUNIT_EXPECT_EQ(test, neuron_check_copy_overlap(&a.copy), -EINVAL);
	a.copy.dst_offset = 0;
	KUNIT_EXPECT_EQ(test, neuron_check_copy_overlap(&a.copy), -EINVAL);
	/* The destination first: [4096, 8192) against [8191, 12287). */
	a.copy.dst_offset = 4096;
	a.copy.src_offset = 8191;
	KUNIT_EXPECT_EQ(test, neuron_check_copy_overlap(&a.copy), -EINVAL);
	a.copy.src_offset = 8192;
	KUNIT_EXPECT_EQ(test, neuron_check_copy_overlap(&a.copy), 0);

	KUNIT_EXPECT_EQ(test, neuron_check_in_syncs(syncs, 2), 0);
	syncs[1].pad = 1;
	KUNIT_EXPECT_EQ(test, neuron_check_in_syncs(syncs, 1), 0);
	KUNIT_EXPECT_EQ(test, neuron_check_in_syncs(syncs, 2), -EINVAL);

	/* Without the capabilities. */
	KUNIT_EXPECT_EQ(test, neuron_check_host_binding(DRM_NEURON_BO_HOST,
							&a.limits), 0);
	a.submit.flags = DRM_NEURON_SUBMIT_F_PROFILE;
	KUNIT_EXPECT_EQ(test, neuron_check_bindings(&a.submit, a.bindings,
						    &a.limits), 0);
	a.limits.caps = 0;
	KUNIT_EXPECT_EQ(test, neuron_check_host_binding(DRM_NEURON_BO_HOST,
							&a.limits), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, neuron_check_host_binding(DRM_NEURON_BO_DEVICE,
							&a.limits), 0);
	KUNIT_EXPECT_EQ(test, neuron_check_bindings(&a.submit, a.bindings,
						    &a.limits), -EOPNOTSUPP);
	/* A bad binding comes first. */
	a.bindings[1].flags = 0;
	KUNIT_EXPECT_EQ(test, neuron_check_bindings(&a.submit, a.bindings,
						    &a.limits), -EINVAL);
	/* No engine for DRM_NEURON_ENGINE_ANY. */
	a.limits.num_dma = 0;
	KUNIT_EXPECT_EQ(test, neuron_check_copy(&a.copy, &a.limits), -EINVAL);
}

static struct kunit_case neuron_test_cases[] = {
	KUNIT_CASE(neuron_test_status_errno),
	KUNIT_CASE(neuron_test_sg_walk),
	KUNIT_CASE(neuron_test_span_device),
	KUNIT_CASE(neuron_test_span_host),
	KUNIT_CASE(neuron_test_binding_table),
	KUNIT_CASE(neuron_test_table_pool),
	KUNIT_CASE(neuron_test_irq_plan_sets),
	KUNIT_CASE(neuron_test_irq_map_cpus),
	KUNIT_CASE(neuron_test_host_range_lookup),
	KUNIT_CASE(neuron_test_pin_add_within),
	KUNIT_CASE(neuron_test_check_cases),
	KUNIT_CASE(neuron_test_check_later),
	{}
};

static struct kunit_suite neuron_test_suite = {
	.name = "neuron",
	.test_cases = neuron_test_cases,
};

kunit_test_suite(neuron_test_suite);

MODULE_DESCRIPTION("KUnit tests of the neuron driver's pure functions");
MODULE_LICENSE("GPL");
NEURON_IMPORT_KUNIT_NS();
