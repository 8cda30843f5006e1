// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: host memory for the device. The pages of host buffers that jobs
 * and copies use are pinned and DMA-mapped while they use them, and a
 * little longer (a cache of mappings per buffer, in an interval tree by
 * page); pinned bytes are charged before any page is pinned
 * (neuron_pin.c).
 */
#include <drm/drm_device.h>
#include <drm/drm_drv.h>
#include <drm/drm_prime.h>
#include <drm/drm_print.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/interval_tree_generic.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/scatterlist.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>

#include "neuron_client.h"
#include "neuron_drv.h"
#include "neuron_gem.h"
#include "neuron_gem_host.h"
#include "neuron_pin.h"
#include "neuron_telemetry.h"

/* The buffer's mappings by page: an interval tree of [first, last]. */
static inline pgoff_t neuron_host_map_start(const struct neuron_host_map *map)
{
	return map->first;
}

static inline pgoff_t neuron_host_map_last(const struct neuron_host_map *map)
{
	return map->first + map->count - 1;
}

INTERVAL_TREE_DEFINE(struct neuron_host_map, rb, pgoff_t, subtree_last,
		     neuron_host_map_start, neuron_host_map_last, static,
		     neuron_host_map_it)

/* The buffer's first mapping by page, or NULL; dma_lock held. */
static struct neuron_host_map *neuron_host_map_first(struct neuron_bo *bo)
{
	lockdep_assert_held(&bo->dma_lock);
	return neuron_host_map_it_iter_first(&bo->dma_maps, 0, ULONG_MAX);
}

/* The mapping after @map by page, or NULL; dma_lock held. */
static struct neuron_host_map *neuron_host_map_next(struct neuron_host_map *map)
{
	lockdep_assert_held(&map->bo->dma_lock);
	return neuron_host_map_it_iter_next(map, 0, ULONG_MAX);
}

/* Drops the references of neuron_host_pin_pages(). */
static void neuron_host_unpin_pages(struct page **pages, pgoff_t count,
				    bool dirty)
{
	pgoff_t i;

	for (i = 0; i < count; i++) {
		struct folio *folio = page_folio(pages[i]);

		/* The device may have written: keep the data on swap-out. */
		if (dirty)
			folio_mark_dirty(folio);
		folio_mark_accessed(folio);
		folio_put(folio);
	}
}

/*
 * Undoes a pin of pages [@first, @first + @count) of a host buffer: drops
 * the references in @pages and truncates the pages set in @fresh (those
 * the pin allocated), so that a failed pin does not leave memory behind
 * that no process is charged with. Except pages userspace has mapped
 * meanwhile (a fault between that check and the truncation loses what it
 * wrote: only the buffer's owner can race its own failing ioctl so), and
 * none if the shmem helpers hold the pages (vmap), which they take under
 * the reservation lock, taken here too. Of a huge page the pin allocated,
 * only the part within the range is given back. The buffer's pin_lock is
 * held, so no other pin holds these pages. Clobbers @fresh.
 */
static void neuron_host_pages_give_back(struct neuron_bo *bo, pgoff_t first,
					pgoff_t count, struct page **pages,
					unsigned long *fresh)
{
	unsigned long start, end;

	lockdep_assert_held(&bo->pin_lock);
	/* Userspace may have faulted a new page in meanwhile: keep those. */
	for_each_set_bit(end, fresh, count)
		if (folio_mapped(page_folio(pages[end])))
			__clear_bit(end, fresh);
	neuron_host_unpin_pages(pages, count, false);
	dma_resv_lock(bo->base.resv, NULL);
	if (!bo->shmem.pages) {
		for_each_set_bitrange(start, end, fresh, count)
			shmem_truncate_range(file_inode(bo->base.filp),
					     (loff_t)(first + start) << PAGE_SHIFT,
					     ((loff_t)(first + end) << PAGE_SHIFT) - 1);
	}
	dma_resv_unlock(bo->base.resv);
}

/*
 * Pins pages [@first, @first + @count) of a host buffer, allocating those
 * that do not exist yet, and sets their bits in @fresh (@count bits, all
 * clear). The allocations neither retry hard nor call the OOM killer:
 * failing the ioctl beats killing another process. On failure the pages
 * this call allocated are given back (neuron_host_pages_give_back()).
 */
static int neuron_host_pin_pages(struct neuron_bo *bo, pgoff_t first,
				 pgoff_t count, struct page **pages,
				 unsigned long *fresh)
{
	struct address_space *mapping = bo->base.filp->f_mapping;
	gfp_t gfp = mapping_gfp_mask(mapping) | __GFP_NORETRY | __GFP_NOWARN;
	struct folio *fresh_folio = NULL;
	pgoff_t i;
	int ret = 0;

	for (i = 0; i < count; i++) {
		bool absent = !xa_load(&mapping->i_pages, first + i);
		struct folio *folio;

		folio = shmem_read_folio_gfp(mapping, first + i, gfp);
		if (IS_ERR(folio)) {
			ret = PTR_ERR(folio);
			break;
		}
		/* A huge folio allocated here holds the next pages too. */
		if (absent)
			fresh_folio = folio;
		if (folio == fresh_folio)
			__set_bit(i, fresh);
		pages[i] = folio_file_page(folio, first + i);
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			i++;
			break;
		}
		cond_resched();
	}
	if (ret) {
		/* Pages i on are not pinned. */
		bitmap_clear(fresh, i, count - i);
		neuron_host_pages_give_back(bo, first, i, pages, fresh);
	}
	return ret;
}

/* Undoes the mapping's DMA mapping, once: unplug may have done it. */
static void neuron_host_map_dma_unmap(struct neuron_host_map *map)
{
	if (!map->dma_mapped)
		return;
	dma_unmap_sgtable(map->bo->base.dev->dev, map->sgt, DMA_BIDIRECTIONAL,
			  0);
	map->dma_mapped = false;
}

/*
 * Unmaps and unpins a host mapping that is not listed, and frees it. A
 * mapping still being made (@map->fresh set: the range that needs it
 * failed) gives back the pages its pin allocated.
 */
static void neuron_host_map_destroy(struct neuron_host_map *map)
{
	struct neuron_bo *bo = map->bo;
	struct neuron_device *ndev = to_neuron_device(bo->base.dev);

	neuron_host_map_dma_unmap(map);
	sg_free_table(map->sgt);
	kfree(map->sgt);
	if (map->fresh)
		neuron_host_pages_give_back(bo, map->first, map->count,
					    map->pages, map->fresh);
	else
		neuron_host_unpin_pages(map->pages, map->count, true);
	atomic64_sub((u64)map->count << PAGE_SHIFT,
		     &ndev->telemetry->host_mapped);
	neuron_pin_uncharge(map->client, map->mm, map->charged);
	mmdrop(map->mm);
	neuron_client_put(map->client);
	kvfree(map->fresh);
	kvfree(map);
}

/* Unlists, unmaps, unpins and frees a host mapping; dma_lock held. */
static void neuron_host_map_free_locked(struct neuron_host_map *map)
{
	lockdep_assert_held(&map->bo->dma_lock);
	neuron_host_map_it_remove(map, &map->bo->dma_maps);
	neuron_host_map_destroy(map);
}

/* Frees the idle mappings of a host buffer; dma_lock held. */
static void neuron_host_maps_trim_locked(struct neuron_bo *bo)
{
	struct neuron_host_map *map, *next;

	lockdep_assert_held(&bo->dma_lock);
	for (map = neuron_host_map_first(bo); map; map = next) {
		next = neuron_host_map_next(map);
		if (!map->users)
			neuron_host_map_free_locked(map);
	}
}

/*
 * Frees the idle mappings of the device's host buffers, @bo's first, so
 * that a pin of @bo that a limit refused can try again: the mappings that
 * the cache keeps for back-to-back work count against the limits and the
 * process's RLIMIT_MEMLOCK like those in use. The caller holds @bo's
 * pin_lock, which neuron_gem_host_unplug() takes after host_bos_lock: if
 * host_bos_lock is taken, only @bo's mappings are freed.
 */
static void neuron_host_trim_idle(struct neuron_bo *bo)
{
	struct neuron_device *ndev = to_neuron_device(bo->base.dev);
	struct neuron_bo *other;

	lockdep_assert_held(&bo->pin_lock);
	mutex_lock(&bo->dma_lock);
	neuron_host_maps_trim_locked(bo);
	mutex_unlock(&bo->dma_lock);
	if (!mutex_trylock(&ndev->host_bos_lock))
		return;
	list_for_each_entry(other, &ndev->host_bos, host_node) {
		if (other == bo)
			continue;
		mutex_lock(&other->dma_lock);
		neuron_host_maps_trim_locked(other);
		mutex_unlock(&other->dma_lock);
	}
	mutex_unlock(&ndev->host_bos_lock);
}

/*
 * Pins and maps pages [first, first + count) of a host buffer, unlisted;
 * &neuron_host_map.fresh records the pages the pin allocated, until the
 * caller keeps the mapping (neuron_host_map_keep()) or destroys it.
 */
static struct neuron_host_map *neuron_host_map_new(struct neuron_bo *bo,
						   struct neuron_client *client,
						   pgoff_t first, pgoff_t count)
{
	struct neuron_device *ndev = to_neuron_device(bo->base.dev);
	struct neuron_host_map *map;
	int ret;

	map = kvzalloc(struct_size(map, pages, count), GFP_KERNEL);
	if (!map)
		return ERR_PTR(-ENOMEM);
	map->fresh = kvcalloc(BITS_TO_LONGS(count), sizeof(*map->fresh),
			      GFP_KERNEL);
	if (!map->fresh) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = neuron_host_pin_pages(bo, first, count, map->pages, map->fresh);
	if (ret)
		goto err_free;
	map->sgt = drm_prime_pages_to_sg(&ndev->drm, map->pages, count);
	if (IS_ERR(map->sgt)) {
		ret = PTR_ERR(map->sgt);
		goto err_unpin;
	}
	ret = dma_map_sgtable(ndev->drm.dev, map->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto err_sg;
	map->dma_mapped = true;
	map->bo = bo;
	kref_get(&client->ref);
	map->client = client;
	mmgrab(current->mm);
	map->mm = current->mm;
	map->first = first;
	map->count = count;
	map->charged = (u64)count << PAGE_SHIFT;
	atomic64_add((u64)count << PAGE_SHIFT, &ndev->telemetry->host_mapped);
	return map;

err_sg:
	sg_free_table(map->sgt);
	kfree(map->sgt);
err_unpin:
	neuron_host_pages_give_back(bo, first, count, map->pages, map->fresh);
err_free:
	kvfree(map->fresh);
	kvfree(map);
	return ERR_PTR(ret);
}

/* Bytes of the folios @map's pages are in, each counted once. */
static u64 neuron_host_map_footprint(const struct neuron_host_map *map)
{
	struct folio *prev = NULL;
	u64 bytes = 0;
	pgoff_t i;

	/* A folio's pages are consecutive in the buffer, and so in pages[]. */
	for (i = 0; i < map->count; i++) {
		struct folio *folio = page_folio(map->pages[i]);

		if (folio != prev)
			bytes += folio_size(folio);
		prev = folio;
	}
	return bytes;
}

/*
 * New mappings were charged their pages; a pin holds each folio whole, so
 * charge the rest of their huge pages too. On failure they stay charged
 * their pages only, as before the call.
 */
static int neuron_host_charge_folios(struct neuron_client *client,
				     struct mm_struct *mm,
				     struct neuron_host_map **maps,
				     unsigned int num_maps)
{
	u64 extra = 0;
	unsigned int i;
	int ret;

	for (i = 0; i < num_maps; i++) {
		u64 footprint = neuron_host_map_footprint(maps[i]);

		extra += footprint - maps[i]->charged;
		maps[i]->charged = footprint;
	}
	if (!extra)
		return 0;
	ret = neuron_pin_charge(client, mm, extra);
	if (ret)
		for (i = 0; i < num_maps; i++)
			maps[i]->charged = (u64)maps[i]->count << PAGE_SHIFT;
	return ret;
}

/* The range that needed @map is complete: its pages stay when it is undone. */
static void neuron_host_map_keep(struct neuron_host_map *map)
{
	kvfree(map->fresh);
	map->fresh = NULL;
}

/* Ends one use of each mapping of @range; dma_lock held. */
static void neuron_host_range_put_locked(struct neuron_host_range *range)
{
	unsigned int i;

	lockdep_assert_held(&range->bo->dma_lock);
	for (i = 0; i < range->num_maps; i++) {
		struct neuron_host_map *map = range->maps[i];

		if (drm_WARN_ON(range->bo->base.dev, !map->users) ||
		    --map->users)
			continue;
		map->idle_since = jiffies;
		queue_delayed_work(system_wq, &range->bo->dma_release,
				   msecs_to_jiffies(NEURON_HOST_UNMAP_DELAY_MS));
	}
}

static void neuron_bo_dma_release_work(struct work_struct *work)
{
	struct neuron_bo *bo = container_of(to_delayed_work(work),
					    struct neuron_bo, dma_release);
	unsigned long delay = msecs_to_jiffies(NEURON_HOST_UNMAP_DELAY_MS);
	struct neuron_host_map *map, *tmp;
	unsigned long next = 0;
	bool pending = false;

	mutex_lock(&bo->dma_lock);
	for (map = neuron_host_map_first(bo); map; map = tmp) {
		unsigned long expires = map->idle_since + delay;

		tmp = neuron_host_map_next(map);
		if (map->users)
			continue;
		if (time_after_eq(jiffies, expires)) {
			neuron_host_map_free_locked(map);
		} else if (!pending || time_before(expires, next)) {
			next = expires;
			pending = true;
		}
	}
	if (pending)
		queue_delayed_work(system_wq, &bo->dma_release, next - jiffies);
	mutex_unlock(&bo->dma_lock);
}

/**
 * neuron_host_bo_init() - prepare a host buffer's mappings
 * @bo: a new %DRM_NEURON_BO_HOST buffer
 */
void neuron_host_bo_init(struct neuron_bo *bo)
{
	mutex_init(&bo->dma_lock);
	mutex_init(&bo->pin_lock);
	bo->dma_maps = RB_ROOT_CACHED;
	INIT_DELAYED_WORK(&bo->dma_release, neuron_bo_dma_release_work);
}

/**
 * neuron_host_bo_fini() - free a host buffer's mappings
 * @bo: a %DRM_NEURON_BO_HOST buffer being freed: no job or copy uses it
 */
void neuron_host_bo_fini(struct neuron_bo *bo)
{
	struct neuron_host_map *map, *next;

	cancel_delayed_work_sync(&bo->dma_release);
	mutex_lock(&bo->dma_lock);
	for (map = neuron_host_map_first(bo); map; map = next) {
		next = neuron_host_map_next(map);
		/* Every job and copy holds a reference while it uses the buffer. */
		drm_WARN_ON(bo->base.dev, map->users);
		neuron_host_map_free_locked(map);
	}
	mutex_unlock(&bo->dma_lock);
	mutex_destroy(&bo->dma_lock);
	mutex_destroy(&bo->pin_lock);
}

/**
 * neuron_gem_host_unplug() - undo the host buffers' mappings for the device
 * @ndev: the device, unplugged and reset: no DMA can still use them
 *
 * The PCI device is released when remove returns, but files may keep
 * buffers, and jobs the mappings, for longer; the DMA API wants every
 * mapping of a device gone before then. The pages stay pinned until their
 * mappings are freed as usual. Taking each buffer's pin_lock waits for a
 * neuron_bo_dma_get() that is making mappings; one that starts later sees
 * the unplug and fails.
 */
void neuron_gem_host_unplug(struct neuron_device *ndev)
{
	struct neuron_host_map *map;
	struct neuron_bo *bo;

	mutex_lock(&ndev->host_bos_lock);
	list_for_each_entry(bo, &ndev->host_bos, host_node) {
		mutex_lock(&bo->pin_lock);
		mutex_lock(&bo->dma_lock);
		for (map = neuron_host_map_first(bo); map;
		     map = neuron_host_map_next(map))
			neuron_host_map_dma_unmap(map);
		mutex_unlock(&bo->dma_lock);
		mutex_unlock(&bo->pin_lock);
	}
	mutex_unlock(&ndev->host_bos_lock);
}

/**
 * neuron_host_range_scan_locked() - look up the mappings a range overlaps
 * @bo: the host buffer, its dma_lock held
 * @first: first page of the range
 * @last: last page of the range
 * @range: where to add the mappings found, each with a use taken (NULL:
 *	only count them)
 * @maps: set to the number of mappings that overlap [@first, @last]
 * @gaps: set to the number of runs of pages in [@first, @last] that no
 *	mapping covers
 *
 * Visits only the mappings that overlap the range, in page order (the
 * interval tree yields them by first page); the first may begin before
 * @first and the last end after @last.
 *
 * Return: the pages of [@first, @last] that no mapping covers.
 */
VISIBLE_IF_KUNIT pgoff_t
neuron_host_range_scan_locked(struct neuron_bo *bo, pgoff_t first, pgoff_t last,
			      struct neuron_host_range *range,
			      unsigned int *maps, unsigned int *gaps)
{
	struct neuron_host_map *map;
	pgoff_t pos = first, missing = 0;

	lockdep_assert_held(&bo->dma_lock);
	*maps = 0;
	*gaps = 0;
	for (map = neuron_host_map_it_iter_first(&bo->dma_maps, first, last);
	     map; map = neuron_host_map_it_iter_next(map, first, last)) {
		if (map->first > pos) {
			missing += map->first - pos;
			++*gaps;
		}
		pos = map->first + map->count;
		++*maps;
		if (range) {
			map->users++;
			range->maps[range->num_maps++] = map;
		}
	}
	if (pos <= last) {
		missing += last + 1 - pos;
		++*gaps;
	}
	return missing;
}
EXPORT_SYMBOL_IF_KUNIT(neuron_host_range_scan_locked);

/* Creates the mappings for the pages of [first, last] no mapping covers. */
static int neuron_host_range_fill(struct neuron_host_range *range,
				  struct neuron_client *client,
				  pgoff_t first, pgoff_t last,
				  struct neuron_host_map **fresh,
				  unsigned int *num_fresh)
{
	struct neuron_bo *bo = range->bo;
	pgoff_t pos = first;
	unsigned int i;

	*num_fresh = 0;
	/* range->maps[] holds the existing mappings in page order. */
	for (i = 0; i <= range->num_maps && pos <= last; i++) {
		pgoff_t end = i < range->num_maps ? range->maps[i]->first : last + 1;

		if (end > pos) {
			struct neuron_host_map *map;

			map = neuron_host_map_new(bo, client, pos, end - pos);
			if (IS_ERR(map))
				return PTR_ERR(map);
			fresh[(*num_fresh)++] = map;
		}
		if (i < range->num_maps)
			pos = range->maps[i]->first + range->maps[i]->count;
	}
	return 0;
}

static int neuron_map_cmp(const void *a, const void *b)
{
	const struct neuron_host_map *x = *(const struct neuron_host_map **)a;
	const struct neuron_host_map *y = *(const struct neuron_host_map **)b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/**
 * neuron_host_map_insert_locked() - list a mapping in its buffer's tree
 * @bo: the host buffer, its dma_lock held
 * @map: a mapping of @bo that overlaps none listed
 */
VISIBLE_IF_KUNIT void neuron_host_map_insert_locked(struct neuron_bo *bo,
						    struct neuron_host_map *map)
{
	lockdep_assert_held(&bo->dma_lock);
	neuron_host_map_it_insert(map, &bo->dma_maps);
}
EXPORT_SYMBOL_IF_KUNIT(neuron_host_map_insert_locked);

/**
 * neuron_host_range_order() - put a range's mappings in page order
 * @range: a range with at least one mapping: those found by
 *	neuron_host_range_scan_locked(), in page order, then the new ones
 *
 * Sets &neuron_host_range.start to the first page of the first mapping,
 * which a mapping made for an earlier range may place before the range's
 * own first page: the range's SG table starts there.
 */
VISIBLE_IF_KUNIT void neuron_host_range_order(struct neuron_host_range *range)
{
	sort(range->maps, range->num_maps, sizeof(range->maps[0]),
	     neuron_map_cmp, NULL);
	range->start = (u64)range->maps[0]->first << PAGE_SHIFT;
}
EXPORT_SYMBOL_IF_KUNIT(neuron_host_range_order);

/* The DMA segments of the range's mappings, in order, as one table. */
static int neuron_host_range_build_sgt(struct neuron_host_range *range)
{
	struct scatterlist *sg, *out;
	unsigned int i, total = 0;
	int j, ret;

	for (i = 0; i < range->num_maps; i++)
		total += range->maps[i]->sgt->nents;
	ret = sg_alloc_table(&range->sgt, total, GFP_KERNEL);
	if (ret)
		return ret;
	out = range->sgt.sgl;
	for (i = 0; i < range->num_maps; i++) {
		for_each_sgtable_dma_sg(range->maps[i]->sgt, sg, j) {
			sg_dma_address(out) = sg_dma_address(sg);
			sg_dma_len(out) = sg_dma_len(sg);
			out = sg_next(out);
		}
	}
	return 0;
}

/**
 * neuron_bo_dma_get() - pin a range of a host buffer and map it for the device
 * @bo: a %DRM_NEURON_BO_HOST buffer
 * @client: the file the job or copy comes from, charged with new pins
 * @offset: first byte of the range, within the buffer
 * @size: bytes of the range, non-zero
 *
 * Pins and DMA-maps the pages that hold [@offset, @offset + @size), and
 * no others. The buffer's mappings never overlap, so that no page is
 * mapped twice: the range uses the mappings that exist (in use, or idle
 * for less than %NEURON_HOST_UNMAP_DELAY_MS) and new ones for the pages
 * they do not cover. Each successful call is paired with one
 * neuron_bo_dma_put(). May sleep; not for the fence signalling path.
 *
 * Return: the range, whose SG table (DMA segments only, starting at byte
 * &neuron_host_range.start of the buffer: the first page of the first
 * mapping used, which may begin before @offset's page) is valid until the
 * matching neuron_bo_dma_put(); ERR_PTR(-EDQUOT) when new pins would exceed
 * neuron_host_pin_limit() or neuron_host_pin_file_limit(), -ENOMEM when
 * they would take the caller's pinned_vm over its RLIMIT_MEMLOCK (without
 * CAP_IPC_LOCK) or memory is short, -EINTR when the caller was killed, -ERESTARTSYS when a
 * signal came while it waited for another pin of the buffer.
 */
struct neuron_host_range *neuron_bo_dma_get(struct neuron_bo *bo,
					    struct neuron_client *client,
					    u64 offset, u64 size)
{
	pgoff_t first = offset >> PAGE_SHIFT;
	pgoff_t last = (offset + size - 1) >> PAGE_SHIFT;
	struct neuron_host_map **fresh = NULL;
	struct neuron_host_range *range;
	unsigned int maps, gaps, num_fresh = 0, i;
	pgoff_t missing;
	u64 bytes;
	int ret;

	/*
	 * One pin of a buffer at a time: mappings must not overlap, and a
	 * failed pin frees only pages no other pin holds. Not under dma_lock,
	 * which the release work takes, since pinning much takes long.
	 */
	if (mutex_lock_interruptible(&bo->pin_lock))
		return ERR_PTR(-ERESTARTSYS);
	/* neuron_gem_host_unplug() has run or waits for pin_lock. */
	if (drm_dev_is_unplugged(bo->base.dev)) {
		ret = -ENODEV;
		goto err_unlock;
	}
	mutex_lock(&bo->dma_lock);
	missing = neuron_host_range_scan_locked(bo, first, last, NULL, &maps,
						&gaps);
	range = kvzalloc(struct_size(range, maps, maps + gaps), GFP_KERNEL);
	if (!range) {
		mutex_unlock(&bo->dma_lock);
		ret = -ENOMEM;
		goto err_unlock;
	}
	range->bo = bo;
	neuron_host_range_scan_locked(bo, first, last, range, &maps, &gaps);
	mutex_unlock(&bo->dma_lock);
	bytes = (u64)missing << PAGE_SHIFT;
	ret = neuron_pin_charge(client, current->mm, bytes);
	if (ret) {
		/* Idle mappings count too: drop them, then try once more. */
		neuron_host_trim_idle(bo);
		ret = neuron_pin_charge(client, current->mm, bytes);
	}
	if (ret)
		goto err_put;

	if (gaps) {
		fresh = kmalloc_array(gaps, sizeof(*fresh), GFP_KERNEL);
		ret = fresh ? 0 : -ENOMEM;
		if (!ret)
			ret = neuron_host_range_fill(range, client, first, last,
						     fresh, &num_fresh);
		if (!ret)
			ret = neuron_host_charge_folios(client, current->mm,
							fresh, num_fresh);
		if (ret)
			goto err_fresh;
	}

	mutex_lock(&bo->dma_lock);
	for (i = 0; i < num_fresh; i++) {
		neuron_host_map_keep(fresh[i]);
		fresh[i]->users = 1;
		neuron_host_map_insert_locked(bo, fresh[i]);
		range->maps[range->num_maps++] = fresh[i];
	}
	mutex_unlock(&bo->dma_lock);
	mutex_unlock(&bo->pin_lock);
	kfree(fresh);
	neuron_host_range_order(range);

	ret = neuron_host_range_build_sgt(range);
	if (ret) {
		neuron_bo_dma_put(range);
		return ERR_PTR(ret);
	}
	return range;

err_fresh:
	/*
	 * The runs pinned before the one that failed give their new pages
	 * back as well: a range split by an existing mapping fails whole.
	 */
	for (i = 0; i < num_fresh; i++) {
		bytes -= fresh[i]->charged;
		neuron_host_map_destroy(fresh[i]);
	}
	kfree(fresh);
	neuron_pin_uncharge(client, current->mm, bytes);
err_put:
	mutex_lock(&bo->dma_lock);
	neuron_host_range_put_locked(range);
	mutex_unlock(&bo->dma_lock);
	kvfree(range);
err_unlock:
	mutex_unlock(&bo->pin_lock);
	return ERR_PTR(ret);
}

/**
 * neuron_bo_dma_put() - end a use of neuron_bo_dma_get()
 * @range: the range it returned
 *
 * A mapping no range uses is unmapped and unpinned once it has been idle
 * for %NEURON_HOST_UNMAP_DELAY_MS, when the buffer is freed, or when a
 * pin on the device that a limit refused needs the room.
 */
void neuron_bo_dma_put(struct neuron_host_range *range)
{
	struct neuron_bo *bo = range->bo;

	mutex_lock(&bo->dma_lock);
	neuron_host_range_put_locked(range);
	mutex_unlock(&bo->dma_lock);
	sg_free_table(&range->sgt);
	kvfree(range);
}
