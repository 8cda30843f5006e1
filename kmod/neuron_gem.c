// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: buffer objects in host and device memory.
 *
 * Every buffer is a GEM object named by per-file handles; there is no
 * global name (accel devices have no flink) and, for now, no dma-buf
 * export or import. Host buffers use the shmem helpers; device buffers are
 * private GEM objects backed by a drm_mm range of device memory and mapped
 * to userspace write-combined through the device-memory BAR.
 */
#include <drm/drm_device.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_print.h>
#include <drm/drm_vma_manager.h>
#include <drm/neuron_accel.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "neuron_drv.h"
#include "neuron_gem.h"
#include "neuron_mm.h"

static_assert(offsetof(struct drm_gem_shmem_object, base) == 0,
	      "neuron_bo overlays the shmem object's GEM object");

/* Clearing device memory yields the CPU after each chunk. */
#define NEURON_CLEAR_CHUNK	SZ_1M

static struct dma_buf *neuron_gem_prime_export(struct drm_gem_object *obj,
					       int flags)
{
	return ERR_PTR(-EOPNOTSUPP);
}

/* Unmaps and unpins an idle host buffer's pages; dma_lock held. */
static void neuron_bo_dma_release_locked(struct neuron_bo *bo)
{
	struct neuron_device *ndev = to_neuron_device(bo->base.dev);

	if (bo->dma_users || !bo->dma_sgt)
		return;
	dma_unmap_sgtable(ndev->drm.dev, bo->dma_sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(bo->dma_sgt);
	kfree(bo->dma_sgt);
	bo->dma_sgt = NULL;
	drm_gem_shmem_unpin(&bo->shmem);
	atomic64_sub(bo->base.size, &ndev->telemetry.host_mapped);
}

static void neuron_bo_dma_release_work(struct work_struct *work)
{
	struct neuron_bo *bo = container_of(to_delayed_work(work),
					    struct neuron_bo, dma_release);

	mutex_lock(&bo->dma_lock);
	neuron_bo_dma_release_locked(bo);
	mutex_unlock(&bo->dma_lock);
}

static void neuron_host_bo_free(struct drm_gem_object *obj)
{
	struct neuron_bo *bo = to_neuron_bo(obj);

	/* Every job and copy holds a reference while it uses the buffer. */
	drm_WARN_ON(obj->dev, bo->dma_users);
	cancel_delayed_work_sync(&bo->dma_release);
	mutex_lock(&bo->dma_lock);
	neuron_bo_dma_release_locked(bo);
	mutex_unlock(&bo->dma_lock);
	mutex_destroy(&bo->dma_lock);
	drm_gem_shmem_object_free(obj);
}

static const struct drm_gem_object_funcs neuron_host_bo_funcs = {
	.free = neuron_host_bo_free,
	.print_info = drm_gem_shmem_object_print_info,
	.mmap = drm_gem_shmem_object_mmap,
	.vm_ops = &drm_gem_shmem_vm_ops,
	.export = neuron_gem_prime_export,
};

/**
 * neuron_gem_create_object() - &drm_driver.gem_create_object
 * @drm: the DRM device
 * @size: object size
 *
 * Allocates the container of the shmem objects that drm_gem_shmem_create()
 * makes for %DRM_NEURON_BO_HOST buffers.
 *
 * Return: the GEM object or an ERR_PTR().
 */
struct drm_gem_object *neuron_gem_create_object(struct drm_device *drm,
						size_t size)
{
	struct neuron_bo *bo;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->region = DRM_NEURON_BO_HOST;
	bo->base.funcs = &neuron_host_bo_funcs;
	mutex_init(&bo->dma_lock);
	INIT_DELAYED_WORK(&bo->dma_release, neuron_bo_dma_release_work);
	return &bo->base;
}

/**
 * neuron_bo_dma_get() - pin a host buffer and map it for the device
 * @bo: a %DRM_NEURON_BO_HOST buffer
 *
 * The first user pins the buffer's pages and DMA-maps them; later users,
 * and users that come within %NEURON_HOST_UNMAP_DELAY_MS of the last one,
 * share that mapping. Each successful call is paired with one
 * neuron_bo_dma_put(). May sleep; not for the fence signalling path.
 *
 * Return: the DMA-mapped SG table, valid until the matching
 * neuron_bo_dma_put(), or an ERR_PTR().
 */
struct sg_table *neuron_bo_dma_get(struct neuron_bo *bo)
{
	struct neuron_device *ndev = to_neuron_device(bo->base.dev);
	struct sg_table *sgt;
	int ret;

	mutex_lock(&bo->dma_lock);
	if (bo->dma_sgt) {
		sgt = bo->dma_sgt;
		goto out_get;
	}
	ret = drm_gem_shmem_pin(&bo->shmem);
	if (ret) {
		sgt = ERR_PTR(ret);
		goto out_unlock;
	}
	sgt = drm_gem_shmem_get_sg_table(&bo->shmem);
	if (IS_ERR(sgt))
		goto err_unpin;
	ret = dma_map_sgtable(ndev->drm.dev, sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto err_free;
	bo->dma_sgt = sgt;
	atomic64_add(bo->base.size, &ndev->telemetry.host_mapped);
out_get:
	bo->dma_users++;
out_unlock:
	mutex_unlock(&bo->dma_lock);
	return sgt;

err_free:
	sg_free_table(sgt);
	kfree(sgt);
	sgt = ERR_PTR(ret);
err_unpin:
	drm_gem_shmem_unpin(&bo->shmem);
	goto out_unlock;
}

/**
 * neuron_bo_dma_put() - end a use of neuron_bo_dma_get()
 * @bo: the host buffer
 *
 * After the last user, the pages are unmapped and unpinned once the buffer
 * has been idle for %NEURON_HOST_UNMAP_DELAY_MS (or when it is freed).
 */
void neuron_bo_dma_put(struct neuron_bo *bo)
{
	mutex_lock(&bo->dma_lock);
	if (!drm_WARN_ON(bo->base.dev, !bo->dma_users) && !--bo->dma_users)
		mod_delayed_work(system_wq, &bo->dma_release,
				 msecs_to_jiffies(NEURON_HOST_UNMAP_DELAY_MS));
	mutex_unlock(&bo->dma_lock);
}

static void neuron_device_bo_free(struct drm_gem_object *obj)
{
	struct neuron_device *ndev = to_neuron_device(obj->dev);
	struct neuron_bo *bo = to_neuron_bo(obj);

	if (drm_mm_node_allocated(&bo->node))
		neuron_mm_free(&ndev->mm, &bo->node);
	drm_gem_object_release(obj);
	kfree(bo);
}

static int neuron_device_bo_mmap(struct drm_gem_object *obj,
				 struct vm_area_struct *vma)
{
	struct neuron_device *ndev = to_neuron_device(obj->dev);
	struct neuron_bo *bo = to_neuron_bo(obj);
	unsigned long pfn;
	int idx, ret;

	/* I/O memory cannot be copied on write. */
	if (is_cow_mapping(vma->vm_flags))
		return -EINVAL;
	/* From the fake offset to a page offset in the buffer. */
	vma->vm_pgoff -= drm_vma_node_start(&obj->vma_node);
	if (vma->vm_pgoff + vma_pages(vma) > obj->size >> PAGE_SHIFT)
		return -EINVAL;
	/* The BAR must not be mapped once the device is gone. */
	if (!drm_dev_enter(obj->dev, &idx))
		return -ENODEV;

	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot = pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
	pfn = PHYS_PFN(ndev->mem_bus_start + bo->node.start) + vma->vm_pgoff;
	ret = io_remap_pfn_range(vma, vma->vm_start, pfn,
				 vma->vm_end - vma->vm_start,
				 vma->vm_page_prot);
	drm_dev_exit(idx);
	return ret;
}

/*
 * The GEM core takes a reference on the object for each mapping and drops
 * it when the mapping goes; drm_dev_unplug() zaps all mappings, so that no
 * process reaches the BAR of an unbound device.
 */
static const struct vm_operations_struct neuron_device_bo_vm_ops = {
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static const struct drm_gem_object_funcs neuron_device_bo_funcs = {
	.free = neuron_device_bo_free,
	.mmap = neuron_device_bo_mmap,
	.vm_ops = &neuron_device_bo_vm_ops,
	.export = neuron_gem_prime_export,
};

/* Zeroes a new device buffer: it may hold another process's data. */
static int neuron_device_bo_clear(struct neuron_device *ndev,
				  struct neuron_bo *bo)
{
	void __iomem *va;
	u64 done, len;
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;

	va = ndev->mem + bo->node.start;
	for (done = 0; done < bo->node.size; done += len) {
		len = min_t(u64, bo->node.size - done, NEURON_CLEAR_CHUNK);
		memset_io(va + done, 0, len);
		cond_resched();
	}
	drm_dev_exit(idx);
	return 0;
}

static struct neuron_bo *neuron_device_bo_create(struct neuron_device *ndev,
						 u64 size, u32 flags)
{
	struct neuron_bo *bo;
	int ret;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->region = DRM_NEURON_BO_DEVICE;
	bo->flags = flags;
	bo->base.funcs = &neuron_device_bo_funcs;
	drm_gem_private_object_init(&ndev->drm, &bo->base, size);

	/* From here on, the free function undoes whatever was done. */
	ret = neuron_mm_alloc(&ndev->mm, &bo->node, size);
	if (ret)
		goto err_put;
	ret = drm_gem_create_mmap_offset(&bo->base);
	if (ret)
		goto err_put;
	ret = neuron_device_bo_clear(ndev, bo);
	if (ret)
		goto err_put;
	return bo;

err_put:
	drm_gem_object_put(&bo->base);
	return ERR_PTR(ret);
}

static struct neuron_bo *neuron_host_bo_create(struct neuron_device *ndev,
					       u64 size, u32 flags)
{
	struct drm_gem_shmem_object *shmem;
	struct neuron_bo *bo;

	/* Pages come on first use: refuse what could never be backed. */
	if (size > (u64)totalram_pages() << PAGE_SHIFT)
		return ERR_PTR(-ENOMEM);

	shmem = drm_gem_shmem_create(&ndev->drm, size);
	if (IS_ERR(shmem))
		return ERR_CAST(shmem);
	shmem->map_wc = !!(flags & DRM_NEURON_BO_WC);
	bo = to_neuron_bo(&shmem->base);
	bo->flags = flags;
	return bo;
}

/**
 * neuron_bo_create_ioctl() - DRM_IOCTL_NEURON_BO_CREATE
 * @drm: the DRM device
 * @data: &struct drm_neuron_bo_create
 * @file: the calling file
 *
 * Return: 0 or a negative errno as documented in the UAPI header.
 */
int neuron_bo_create_ioctl(struct drm_device *drm, void *data,
			   struct drm_file *file)
{
	struct neuron_device *ndev = to_neuron_device(drm);
	struct drm_neuron_bo_create *args = data;
	struct neuron_bo *bo;
	u32 handle;
	u64 size;
	int ret;

	if (args->pad || args->flags & ~DRM_NEURON_BO_FLAGS_ALL)
		return -EINVAL;
	if (!args->size || args->size > DRM_NEURON_BO_MAX_SIZE)
		return -EINVAL;
	size = PAGE_ALIGN(args->size);

	switch (args->region) {
	case DRM_NEURON_BO_DEVICE:
		bo = neuron_device_bo_create(ndev, size, args->flags);
		break;
	case DRM_NEURON_BO_HOST:
		bo = neuron_host_bo_create(ndev, size, args->flags);
		break;
	default:
		return -EINVAL;
	}
	if (IS_ERR(bo))
		return PTR_ERR(bo);

	ret = drm_gem_handle_create(file, &bo->base, &handle);
	/* The handle, if any, now holds the only reference. */
	drm_gem_object_put(&bo->base);
	if (ret)
		return ret;

	args->handle = handle;
	return 0;
}

/**
 * neuron_bo_info_ioctl() - DRM_IOCTL_NEURON_BO_INFO
 * @drm: the DRM device
 * @data: &struct drm_neuron_bo_info
 * @file: the calling file
 *
 * Return: 0 or a negative errno as documented in the UAPI header.
 */
int neuron_bo_info_ioctl(struct drm_device *drm, void *data,
			 struct drm_file *file)
{
	struct drm_neuron_bo_info *args = data;
	struct drm_gem_object *obj;
	struct neuron_bo *bo;

	if (args->pad)
		return -EINVAL;

	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_neuron_bo(obj);

	args->mmap_offset = drm_vma_node_offset_addr(&obj->vma_node);
	args->size = obj->size;
	args->region = bo->region;
	args->flags = bo->flags;
	if (bo->region == DRM_NEURON_BO_DEVICE)
		args->device_addr = bo->node.start;
	else
		args->device_addr = DRM_NEURON_BO_NO_DEVICE_ADDR;

	drm_gem_object_put(obj);
	return 0;
}
