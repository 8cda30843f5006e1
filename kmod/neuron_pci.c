// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: DRM accel driver for the neuron machine-learning accelerator.
 *
 * Module and PCI glue, the DRM driver and its ioctl table, per-file state
 * and the GET_PARAM ioctl.
 */
#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/neuron_accel.h>
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "neuron_compat.h"
#include "neuron_debugfs.h"
#include "neuron_drv.h"
#include "neuron_exec.h"
#include "neuron_gem.h"
#include "neuron_gem_host.h"
#include "neuron_genl.h"
#include "neuron_hw.h"
#include "neuron_irq.h"
#include "neuron_mm.h"
#include "neuron_pm.h"
#include "neuron_reset.h"
#include "neuron_submit.h"
#include "neuron_sysfs.h"
#include "neuron_telemetry.h"
#include "neuron_wait.h"

/* The UAPI capability bits are the device's. */
static_assert(DRM_NEURON_CAP_FP32 == NEURON_CAP_FP32);
static_assert(DRM_NEURON_CAP_BF16 == NEURON_CAP_BF16);
static_assert(DRM_NEURON_CAP_FP16 == NEURON_CAP_FP16);
static_assert(DRM_NEURON_CAP_HOST_BINDINGS == NEURON_CAP_HOST_BINDINGS);
static_assert(DRM_NEURON_CAP_CORE_RESET == NEURON_CAP_CORE_RESET);
static_assert(DRM_NEURON_CAP_PROFILE == NEURON_CAP_PROFILE);
#define NEURON_UAPI_CAPS	(DRM_NEURON_CAP_FP32 | DRM_NEURON_CAP_BF16 | \
				 DRM_NEURON_CAP_FP16 | \
				 DRM_NEURON_CAP_HOST_BINDINGS | \
				 DRM_NEURON_CAP_CORE_RESET | \
				 DRM_NEURON_CAP_PROFILE)

static int neuron_open(struct drm_device *drm, struct drm_file *file)
{
	struct neuron_file *nfile;

	nfile = kzalloc(sizeof(*nfile), GFP_KERNEL);
	if (!nfile)
		return -ENOMEM;
	nfile->ndev = to_neuron_device(drm);
	nfile->exec = neuron_exec_file_open(nfile->ndev);
	if (IS_ERR(nfile->exec)) {
		int ret = PTR_ERR(nfile->exec);

		kfree(nfile);
		return ret;
	}
	file->driver_priv = nfile;
	return 0;
}

static void neuron_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct neuron_file *nfile = to_neuron_file(file);

	neuron_exec_file_close(to_neuron_device(drm), nfile->exec);
	kfree(nfile);
}

static int neuron_get_param_ioctl(struct drm_device *drm, void *data,
				  struct drm_file *file)
{
	struct neuron_hw *hw = &to_neuron_device(drm)->hw;
	struct drm_neuron_get_param *args = data;

	if (args->pad)
		return -EINVAL;

	switch (args->param) {
	case DRM_NEURON_PARAM_DEVICE_ID:
		args->value = (u32)hw->vendor << 16 | hw->device;
		break;
	case DRM_NEURON_PARAM_DEVICE_REVISION:
		args->value = hw->revision;
		break;
	case DRM_NEURON_PARAM_NUM_CORES:
		args->value = hw->num_cores;
		break;
	case DRM_NEURON_PARAM_NUM_DMA_ENGINES:
		args->value = hw->num_dma;
		break;
	case DRM_NEURON_PARAM_DEVICE_MEM_SIZE:
		args->value = hw->mem_size;
		break;
	case DRM_NEURON_PARAM_SBUF_SIZE:
		args->value = hw->sbuf_size;
		break;
	case DRM_NEURON_PARAM_PSUM_SIZE:
		args->value = hw->psum_size;
		break;
	case DRM_NEURON_PARAM_PARTITIONS:
		args->value = hw->partitions;
		break;
	case DRM_NEURON_PARAM_HW_VERSION:
		args->value = hw->version;
		break;
	case DRM_NEURON_PARAM_FW_VERSION:
		args->value = hw->fw_version;
		break;
	case DRM_NEURON_PARAM_CAPABILITIES:
		args->value = hw->caps & NEURON_UAPI_CAPS;
		break;
	case DRM_NEURON_PARAM_CORE_CLOCK_MHZ:
		args->value = hw->clock_mhz;
		break;
	case DRM_NEURON_PARAM_MAX_BINDINGS:
		/* The last slot of the device's table holds the program. */
		args->value = NEURON_MAX_BINDINGS - 1;
		break;
	case DRM_NEURON_PARAM_PCI_BUS_INFO:
		args->value = hw->pci_bus_info;
		break;
	case DRM_NEURON_PARAM_API_VERSION:
		args->value = DRM_NEURON_API_VERSION_MAJOR << 16 |
			      DRM_NEURON_API_VERSION_MINOR;
		break;
	case DRM_NEURON_PARAM_ISA_VERSION:
		args->value = hw->isa_version;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

static const struct drm_ioctl_desc neuron_ioctls[] = {
	DRM_IOCTL_DEF_DRV(NEURON_GET_PARAM, neuron_get_param_ioctl, 0),
	DRM_IOCTL_DEF_DRV(NEURON_BO_CREATE, neuron_bo_create_ioctl, 0),
	DRM_IOCTL_DEF_DRV(NEURON_BO_INFO, neuron_bo_info_ioctl, 0),
	DRM_IOCTL_DEF_DRV(NEURON_COPY, neuron_copy_ioctl, 0),
	DRM_IOCTL_DEF_DRV(NEURON_SUBMIT, neuron_submit_ioctl, 0),
	DRM_IOCTL_DEF_DRV(NEURON_WAIT, neuron_wait_ioctl, 0),
	DRM_IOCTL_DEF_DRV(NEURON_SUBMIT_BATCH, neuron_submit_batch_ioctl, 0),
};

/*
 * Buffers are private to the file that created them. The DRM core offers
 * global GEM names (DRM_IOCTL_GEM_FLINK and DRM_IOCTL_GEM_OPEN) to every
 * GEM driver, to privileged callers even on accel nodes: refuse them.
 * drm_ioctl() dispatches core ioctls on their number alone, so compare that.
 */
static bool neuron_ioctl_refused(unsigned int cmd)
{
	unsigned int nr = _IOC_NR(cmd);

	return nr == _IOC_NR(DRM_IOCTL_GEM_FLINK) ||
	       nr == _IOC_NR(DRM_IOCTL_GEM_OPEN);
}

/* The device of an open file. */
static struct neuron_device *neuron_filp_device(struct file *filp)
{
	struct drm_file *file = filp->private_data;

	return to_neuron_device(file->minor->dev);
}

/* Every ioctl runs with the device awake: it resumes an idle device. */
static long neuron_ioctl(struct file *filp, unsigned int cmd,
			 unsigned long arg)
{
	struct neuron_device *ndev = neuron_filp_device(filp);
	long ret;

	if (neuron_ioctl_refused(cmd))
		return -EOPNOTSUPP;
	ret = neuron_pm_get(ndev);
	/* A device gone has nothing to wake: the ioctl reports it, or frees. */
	if (ret == -ENODEV)
		return drm_ioctl(filp, cmd, arg);
	if (ret)
		return ret;
	ret = drm_ioctl(filp, cmd, arg);
	neuron_pm_put(ndev);
	return ret;
}

#ifdef CONFIG_COMPAT
static long neuron_compat_ioctl(struct file *filp, unsigned int cmd,
				unsigned long arg)
{
	struct neuron_device *ndev = neuron_filp_device(filp);
	long ret;

	if (neuron_ioctl_refused(cmd))
		return -EOPNOTSUPP;
	ret = neuron_pm_get(ndev);
	/* A device gone has nothing to wake: the ioctl reports it, or frees. */
	if (ret == -ENODEV)
		return drm_compat_ioctl(filp, cmd, arg);
	if (ret)
		return ret;
	ret = drm_compat_ioctl(filp, cmd, arg);
	neuron_pm_put(ndev);
	return ret;
}
#else
#define neuron_compat_ioctl NULL
#endif

/* DRM_ACCEL_FOPS, with the ioctl filter above and fdinfo. */
static const struct file_operations neuron_fops = {
	.owner = THIS_MODULE,
	.open = accel_open,
	.release = drm_release,
	.unlocked_ioctl = neuron_ioctl,
	.compat_ioctl = neuron_compat_ioctl,
	.poll = drm_poll,
	.read = drm_read,
	.llseek = noop_llseek,
	.mmap = drm_gem_mmap,
	.show_fdinfo = drm_show_fdinfo,
	.fop_flags = FOP_UNSIGNED_OFFSET,
};

static const struct drm_driver neuron_drm_driver = {
	.driver_features = DRIVER_GEM | DRIVER_COMPUTE_ACCEL | DRIVER_SYNCOBJ |
			   DRIVER_SYNCOBJ_TIMELINE,
	.open = neuron_open,
	.postclose = neuron_postclose,
	.gem_create_object = neuron_gem_create_object,
	.show_fdinfo = neuron_show_fdinfo,
	.ioctls = neuron_ioctls,
	.num_ioctls = ARRAY_SIZE(neuron_ioctls),
	.fops = &neuron_fops,
	.name = DRIVER_NAME,
	.desc = DRIVER_DESC,
	NEURON_DRM_DRIVER_DATE
	.major = DRM_NEURON_API_VERSION_MAJOR,
	.minor = DRM_NEURON_API_VERSION_MINOR,
};

/* Maps the device-memory BAR; the device must have been identified. */
static int neuron_map_mem(struct neuron_device *ndev)
{
	struct pci_dev *pdev = ndev->pdev;
	int ret;

	if (!(pci_resource_flags(pdev, NEURON_BAR_MEM) & IORESOURCE_MEM)) {
		ndev_err(ndev, "device-memory BAR %d is missing\n", NEURON_BAR_MEM);
		return -ENODEV;
	}
	ret = pcim_request_region(pdev, NEURON_BAR_MEM, DRIVER_NAME);
	if (ret)
		return ret;

	ndev->mem_bus_start = pci_resource_start(pdev, NEURON_BAR_MEM);
	if (!ndev->hw.mem_size)
		return 0;
	ndev->mem = devm_ioremap_wc(&pdev->dev, ndev->mem_bus_start,
				    ndev->hw.mem_size);
	return ndev->mem ? 0 : -ENOMEM;
}

static int neuron_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct neuron_device *ndev;
	int ret;

	ndev = devm_drm_dev_alloc(&pdev->dev, &neuron_drm_driver,
				  struct neuron_device, drm);
	if (IS_ERR(ndev))
		return PTR_ERR(ndev);
	ndev->pdev = pdev;
	pci_set_drvdata(pdev, ndev);
	ret = neuron_gem_init(ndev);
	if (ret)
		return ret;
	ret = neuron_telemetry_init(ndev);
	if (ret)
		return ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;

	if (pci_resource_len(pdev, NEURON_BAR_REGS) < NEURON_REGS_SIZE) {
		dev_err(&pdev->dev, "register BAR %d is too small\n",
			NEURON_BAR_REGS);
		return -ENODEV;
	}
	ndev->hw.regs = pcim_iomap_region(pdev, NEURON_BAR_REGS, DRIVER_NAME);
	if (IS_ERR(ndev->hw.regs))
		return PTR_ERR(ndev->hw.regs);

	ret = neuron_hw_init(&ndev->hw, pdev);
	if (ret)
		return ret;

	ret = neuron_map_mem(ndev);
	if (ret)
		return ret;

	ret = dma_set_mask_and_coherent(&pdev->dev,
					DMA_BIT_MASK(NEURON_ADDR_BITS));
	if (ret)
		return ret;
	pci_set_master(pdev);

	ret = neuron_mm_init(&ndev->drm, &ndev->mm, ndev->hw.mem_size);
	if (ret)
		return ret;

	ret = neuron_exec_init(ndev);
	if (ret)
		return ret;

	ret = neuron_irq_init(ndev);
	if (ret)
		return ret;

	ret = neuron_sysfs_init(ndev);
	if (ret)
		return ret;
	neuron_debugfs_init(ndev);
	ret = neuron_genl_device_add(ndev);
	if (ret)
		return ret;

	ret = drm_dev_register(&ndev->drm, 0);
	if (ret)
		return ret;
	/* What PCI error recovery restores (neuron_reset.c). */
	pci_save_state(pdev);
	neuron_pm_init(ndev);
	return 0;
}

static void neuron_remove(struct pci_dev *pdev)
{
	struct neuron_device *ndev = pci_get_drvdata(pdev);

	/*
	 * From here on drm_dev_enter() fails and userspace mappings of the
	 * BAR are zapped; open files keep the DRM device (and the buffers,
	 * and the allocator) alive after device-managed resources go.
	 */
	neuron_pm_fini(ndev);
	drm_dev_unplug(&ndev->drm);
	neuron_exec_unplug(ndev);
	neuron_gem_host_unplug(ndev);
}

static const struct pci_device_id neuron_pci_ids[] = {
	{ PCI_DEVICE(NEURON_PCI_VENDOR_ID, NEURON_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, neuron_pci_ids);

static struct pci_driver neuron_pci_driver = {
	.name = DRIVER_NAME,
	.id_table = neuron_pci_ids,
	.probe = neuron_probe,
	.remove = neuron_remove,
	.shutdown = neuron_pm_shutdown,
	.err_handler = &neuron_pci_err_handlers,
	.driver.pm = pm_ptr(&neuron_pm_ops),
};

static int __init neuron_init(void)
{
	int ret;

	ret = neuron_genl_register();
	if (ret)
		return ret;
	ret = pci_register_driver(&neuron_pci_driver);
	if (ret)
		neuron_genl_unregister();
	return ret;
}
module_init(neuron_init);

static void __exit neuron_exit(void)
{
	pci_unregister_driver(&neuron_pci_driver);
	neuron_genl_unregister();
}
module_exit(neuron_exit);

MODULE_DESCRIPTION(DRIVER_DESC);
MODULE_LICENSE("GPL");
MODULE_VERSION(DRIVER_VERSION);
