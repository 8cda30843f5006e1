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
#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <drm/drm_vma_manager.h>
#include <drm/neuron_accel.h>
#include <linux/dma-buf.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/shmem_fs.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "neuron_compat.h"
#include "neuron_drv.h"
#include "neuron_gem.h"
#include "neuron_gem_host.h"
#include "neuron_mm.h"
#include "neuron_pm.h"

static_assert(offsetof(struct drm_gem_shmem_object, base) == 0,
	      "neuron_bo overlays the shmem object's GEM object");

/* Clearing device memory yields the CPU after each chunk. */
#define NEURON_CLEAR_CHUNK	SZ_1M

static struct dma_buf *neuron_gem_prime_export(struct drm_gem_object *obj,
					       int flags)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static void neuron_host_bo_free(struct drm_gem_object *obj)
{
	struct neuron_device *ndev = to_neuron_device(obj->dev);
	struct neuron_bo *bo = to_neuron_bo(obj);

	mutex_lock(&ndev->host_bos_lock);
	list_del_init(&bo->host_node);
	mutex_unlock(&ndev->host_bos_lock);
	neuron_host_bo_fini(bo);
	drm_gem_shmem_object_free(obj);
}

/*
 * Userspace maps the buffer's shmem file itself, as i915 does: pages are
 * allocated by the faults, one at a time, count in the mapping process's
 * memory (its RSS, where the OOM killer looks) and can be swapped out. The
 * shmem helpers' mmap would allocate and pin every page of the buffer at
 * mmap() time instead, whatever the size of the mapping.
 */
static int neuron_host_bo_mmap(struct drm_gem_object *obj,
			       struct vm_area_struct *vma)
{
	struct neuron_bo *bo = to_neuron_bo(obj);
	int ret;

	if (is_cow_mapping(vma->vm_flags))
		return -EINVAL;
	/* From the fake offset to a page offset in the shmem file. */
	vma->vm_pgoff -= drm_vma_node_start(&obj->vma_node);
	ret = neuron_file_mmap(obj->filp, vma);
	if (ret)
		return ret;
	vma_set_file(vma, obj->filp);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	if (bo->shmem.map_wc)
		vma->vm_page_prot =
			pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
	/* The mapping holds the shmem file, not the GEM object. */
	vma->vm_private_data = NULL;
	drm_gem_object_put(obj);
	return 0;
}

static const struct drm_gem_object_funcs neuron_host_bo_funcs = {
	.free = neuron_host_bo_free,
	.print_info = drm_gem_shmem_object_print_info,
	.mmap = neuron_host_bo_mmap,
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
	neuron_host_bo_init(bo);
	/*
	 * Listed only once the shmem object exists (neuron_host_bo_create()):
	 * a failed drm_gem_shmem_create() kfree()s it without the free hook.
	 */
	INIT_LIST_HEAD(&bo->host_node);
	return &bo->base;
}

#ifdef NEURON_OWN_HUGE_MNT
static void neuron_gem_huge_mnt_release(struct drm_device *drm, void *mnt)
{
	kern_unmount(mnt);
}

/* The mount 7.0's drm_gem_huge_mnt_create() makes, made here. */
static int neuron_gem_huge_mnt_create(struct neuron_device *ndev)
{
	char opts[] = "huge=within_size"; /* parsed in place */
	struct file_system_type *type;
	struct vfsmount *mnt;

	if (!IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE))
		return 0;
	/* tmpfs is built in: its type holds no module reference. */
	type = get_fs_type("tmpfs");
	if (!type)
		return -ENODEV;
	mnt = vfs_kern_mount(type, SB_KERNMOUNT, type->name, opts);
	if (IS_ERR(mnt))
		return PTR_ERR(mnt);
	ndev->huge_mnt = mnt;
	return drmm_add_action_or_reset(&ndev->drm, neuron_gem_huge_mnt_release,
					mnt);
}

/*
 * Moves a new buffer's shmem file, which has no pages and no users yet,
 * onto the huge mount: what drm_gem_object_init() does itself from 7.0.
 */
static int neuron_gem_use_huge_mnt(struct neuron_device *ndev,
				   struct drm_gem_object *obj)
{
	struct file *filp;

	if (!ndev->huge_mnt)
		return 0;
	filp = shmem_file_setup_with_mnt(ndev->huge_mnt, "drm mm object",
					 obj->size, VM_NORESERVE);
	if (IS_ERR(filp))
		return PTR_ERR(filp);
	mapping_set_gfp_mask(filp->f_mapping,
			     mapping_gfp_mask(obj->filp->f_mapping));
	fput(obj->filp);
	obj->filp = filp;
	return 0;
}
#else
static int neuron_gem_huge_mnt_create(struct neuron_device *ndev)
{
	return drm_gem_huge_mnt_create(&ndev->drm, "within_size");
}

static int neuron_gem_use_huge_mnt(struct neuron_device *ndev,
				   struct drm_gem_object *obj)
{
	return 0;
}
#endif

/**
 * neuron_gem_init() - host buffers' mount and the device's list of them
 * @ndev: the device, in probe before any buffer exists
 *
 * Host buffers live on a tmpfs mount with huge=within_size: the parts of
 * a buffer that fill whole huge pages (2 MiB on x86) get them when
 * memory allows, so a large buffer is a few physically contiguous DMA
 * segments instead of one per 4 KiB page, and a copy or binding of it
 * needs that many fewer descriptors. Without the mount (no THP, or it
 * failed) buffers use the kernel's shmem mount, with small pages.
 *
 * Return: 0 or -ENOMEM.
 */
int neuron_gem_init(struct neuron_device *ndev)
{
	int ret;

	INIT_LIST_HEAD(&ndev->host_bos);
	ret = neuron_gem_huge_mnt_create(ndev);
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		ndev_warn(ndev, "host buffers get no huge pages: mounting tmpfs failed (%d)\n",
			  ret);
	return drmm_mutex_init(&ndev->drm, &ndev->host_bos_lock);
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
	int ret;

	/* I/O memory cannot be copied on write. */
	if (is_cow_mapping(vma->vm_flags))
		return -EINVAL;
	/* From the fake offset to a page offset in the buffer. */
	vma->vm_pgoff -= drm_vma_node_start(&obj->vma_node);
	if (vma->vm_pgoff + vma_pages(vma) > obj->size >> PAGE_SHIFT)
		return -EINVAL;
	/* A device already gone gets no new mapping of its BAR. */
	if (drm_dev_is_unplugged(obj->dev))
		return -ENODEV;

	/* The BAR is decoded in D0 only: the mapping keeps the device awake. */
	ret = neuron_pm_get(to_neuron_device(obj->dev));
	if (ret)
		return ret;

	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot = pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
	return 0;
}

/*
 * The BAR pages are inserted at the first fault, the whole mapping at once,
 * rather than by remap_pfn_range() in mmap: a range remapped whole is
 * tracked by the VMA (x86's VM_PAT), and on 6.12 the untracking when
 * drm_dev_unplug() zaps the mapping races with the process's own munmap or
 * exit (a get_pat_info() warning). Inserted pages take their cache mode
 * from the write-combined ioremap of the BAR.
 */
static vm_fault_t neuron_device_bo_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;
	struct neuron_device *ndev = to_neuron_device(obj->dev);
	struct neuron_bo *bo = to_neuron_bo(obj);
	vm_fault_t ret = VM_FAULT_NOPAGE;
	unsigned long addr, pfn;
	int idx;

	/* Once the device is gone its BAR must not be mapped again. */
	if (!drm_dev_enter(obj->dev, &idx))
		return VM_FAULT_SIGBUS;

	pfn = PHYS_PFN(ndev->mem_bus_start + bo->node.start) + vma->vm_pgoff;
	for (addr = vma->vm_start; addr < vma->vm_end; addr += PAGE_SIZE) {
		ret = vmf_insert_pfn_prot(vma, addr, pfn++, vma->vm_page_prot);
		if (ret & VM_FAULT_ERROR)
			break;
	}
	drm_dev_exit(idx);
	return ret;
}

static void neuron_device_bo_vm_open(struct vm_area_struct *vma)
{
	struct drm_gem_object *obj = vma->vm_private_data;

	neuron_pm_get_noresume(to_neuron_device(obj->dev));
	drm_gem_vm_open(vma);
}

static void neuron_device_bo_vm_close(struct vm_area_struct *vma)
{
	struct drm_gem_object *obj = vma->vm_private_data;

	neuron_pm_put(to_neuron_device(obj->dev));
	drm_gem_vm_close(vma);
}

/*
 * The GEM core takes a reference on the object for each mapping and drops
 * it when the mapping goes; drm_dev_unplug() zaps all mappings, so that no
 * process reaches the BAR of an unbound device. Each mapping also holds a
 * runtime PM reference (neuron_pm.c), taken in mmap and in open (a split
 * or a fork of the mapping), dropped in close.
 */
static const struct vm_operations_struct neuron_device_bo_vm_ops = {
	.fault = neuron_device_bo_fault,
	.open = neuron_device_bo_vm_open,
	.close = neuron_device_bo_vm_close,
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
	int ret;

	/* Pages come on first use: refuse what could never be backed. */
	if (size > (u64)totalram_pages() << PAGE_SHIFT)
		return ERR_PTR(-ENOMEM);

	shmem = drm_gem_shmem_create(&ndev->drm, size);
	/* shmem reports a failed inode allocation as -ENOSPC. */
	if (PTR_ERR_OR_ZERO(shmem) == -ENOSPC)
		return ERR_PTR(-ENOMEM);
	if (IS_ERR(shmem))
		return ERR_CAST(shmem);
	ret = neuron_gem_use_huge_mnt(ndev, &shmem->base);
	if (ret) {
		drm_gem_object_put(&shmem->base);
		return ERR_PTR(ret);
	}
	shmem->map_wc = !!(flags & DRM_NEURON_BO_WC);
	bo = to_neuron_bo(&shmem->base);
	bo->flags = flags;
	mutex_lock(&ndev->host_bos_lock);
	list_add_tail(&bo->host_node, &ndev->host_bos);
	mutex_unlock(&ndev->host_bos_lock);
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
