// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: identification, reset and quiescing of the device.
 */
#include <linux/device.h>
#include <linux/iopoll.h>
#include <linux/pci.h>

#include "neuron_drv.h"
#include "neuron_hw.h"

/* Time between two reads of DEV_STATUS while a reset is in progress. */
#define NEURON_RESET_POLL_US	100

/*
 * Checks that the register BAR belongs to a device speaking our interface.
 * Nothing else of the device may be touched before this succeeded.
 */
static int neuron_hw_check_magic(struct neuron_device *ndev)
{
	struct neuron_hw *hw = &ndev->hw;
	u32 magic, version;

	magic = neuron_rd32(hw, NEURON_REG_MAGIC);
	if (magic != NEURON_MAGIC) {
		ndev_err(ndev, "bad magic %#010x (expected %#010x)\n",
			 magic, NEURON_MAGIC);
		return -ENODEV;
	}

	version = neuron_rd32(hw, NEURON_REG_VERSION);
	if (NEURON_VERSION_MAJOR_OF(version) != NEURON_VERSION_MAJOR) {
		ndev_err(ndev, "unsupported interface version %u.%u (driver: %u.x)\n",
			 NEURON_VERSION_MAJOR_OF(version),
			 NEURON_VERSION_MINOR_OF(version), NEURON_VERSION_MAJOR);
		return -ENODEV;
	}
	hw->version = version;
	return 0;
}

/**
 * neuron_hw_reset() - reset the whole device and wait for it to finish
 * @ndev: the device
 *
 * Aborts all jobs and DMA, clears all queue and engine state. Sleeps; waits
 * at most neuron_reset_timeout_ms.
 *
 * Return: 0 on success (check &neuron_hw.ready for whether the device is
 * ready to run jobs), -ETIMEDOUT if the reset does not finish, -EIO if the
 * device is in its fatal state afterwards.
 */
int neuron_hw_reset(struct neuron_device *ndev)
{
	struct neuron_hw *hw = &ndev->hw;
	u32 status;
	int ret;

	neuron_wr32(hw, NEURON_REG_DEV_CTRL, NEURON_DEV_CTRL_RESET);
	ret = readl_poll_timeout(hw->regs + NEURON_REG_DEV_STATUS, status,
				 !(status & NEURON_DEV_STATUS_RESETTING),
				 NEURON_RESET_POLL_US,
				 (u64)neuron_reset_timeout_ms * USEC_PER_MSEC);
	if (ret) {
		ndev_err(ndev, "device reset timed out after %u ms (status %#x)\n",
			 neuron_reset_timeout_ms, status);
		hw->ready = false;
		return ret;
	}
	if (status & NEURON_DEV_STATUS_FATAL) {
		ndev_err(ndev, "device is in its fatal state after reset (cause %u)\n",
			 neuron_rd32(hw, NEURON_REG_FATAL_CAUSE));
		hw->ready = false;
		return -EIO;
	}
	hw->ready = status & NEURON_DEV_STATUS_READY;
	return 0;
}

static int neuron_hw_read_identity(struct neuron_device *ndev)
{
	struct neuron_hw *hw = &ndev->hw;
	struct pci_dev *pdev = ndev->pdev;
	u64 mem_size;

	hw->vendor = pdev->vendor;
	hw->device = pdev->device;
	hw->revision = pdev->revision;
	hw->pci_bus_info = (u64)pci_domain_nr(pdev->bus) << 32 |
			   pdev->bus->number << 8 | pdev->devfn;

	hw->caps = neuron_rd32(hw, NEURON_REG_CAPS);
	hw->fw_version = neuron_rd32(hw, NEURON_REG_FW_VERSION);
	hw->num_cores = neuron_rd32(hw, NEURON_REG_NUM_CORES);
	hw->num_dma = neuron_rd32(hw, NEURON_REG_NUM_DMA);
	hw->sbuf_size = neuron_rd32(hw, NEURON_REG_SBUF_SIZE);
	hw->psum_size = neuron_rd32(hw, NEURON_REG_PSUM_SIZE);
	hw->partitions = neuron_rd32(hw, NEURON_REG_PARTITIONS);
	hw->clock_mhz = neuron_rd32(hw, NEURON_REG_CLOCK_MHZ);
	mem_size = neuron_rd64(hw, NEURON_REG_MEM_SIZE_LO);

	if (hw->num_cores > NEURON_MAX_CORES ||
	    hw->num_dma > NEURON_MAX_DMA_ENGINES) {
		ndev_err(ndev, "device reports %u cores and %u DMA engines (at most %u and %u)\n",
			 hw->num_cores, hw->num_dma, NEURON_MAX_CORES,
			 NEURON_MAX_DMA_ENGINES);
		return -EIO;
	}
	if (mem_size > pci_resource_len(pdev, NEURON_BAR_MEM) ||
	    mem_size > BIT_ULL(NEURON_ADDR_BITS)) {
		ndev_err(ndev, "device memory (%llu bytes) exceeds its BAR (%llu bytes)\n",
			 mem_size,
			 (u64)pci_resource_len(pdev, NEURON_BAR_MEM));
		return -EIO;
	}
	hw->mem_size = round_down(mem_size, PAGE_SIZE);
	return 0;
}

/* Stops the device on unbind: no DMA or interrupt may follow. */
static void neuron_hw_fini(void *arg)
{
	struct neuron_device *ndev = arg;

	neuron_wr32(&ndev->hw, NEURON_REG_IRQ_MASK, ~0u);
	neuron_hw_reset(ndev);
}

/**
 * neuron_hw_init() - identify, reset and describe the device
 * @ndev: the device, with &neuron_hw.regs mapped and nothing else set up
 *
 * Checks the magic and interface version before anything else, then
 * resets the device to a known state with all interrupts masked and reads
 * its identity and capabilities. Arranges for the device to be reset
 * again when the driver unbinds.
 *
 * Return: 0 or a negative errno; -ENODEV for a device we do not speak to.
 */
int neuron_hw_init(struct neuron_device *ndev)
{
	struct neuron_hw *hw = &ndev->hw;
	int ret;

	ret = neuron_hw_check_magic(ndev);
	if (ret)
		return ret;

	neuron_wr32(hw, NEURON_REG_IRQ_MASK, ~0u);
	ret = neuron_hw_reset(ndev);
	if (ret)
		return ret;
	neuron_wr32(hw, NEURON_REG_IRQ_STATUS, ~0u);

	ret = devm_add_action_or_reset(&ndev->pdev->dev, neuron_hw_fini, ndev);
	if (ret)
		return ret;

	ret = neuron_hw_read_identity(ndev);
	if (ret)
		return ret;

	if (!hw->ready)
		ndev_warn(ndev, "device is not ready after reset (status %#x): no jobs can run\n",
			  neuron_rd32(hw, NEURON_REG_DEV_STATUS));

	ndev_info(ndev, "interface %u.%u, firmware %u.%u, %u cores, %u DMA engines, %llu MiB device memory\n",
		  NEURON_VERSION_MAJOR_OF(hw->version),
		  NEURON_VERSION_MINOR_OF(hw->version),
		  NEURON_VERSION_MAJOR_OF(hw->fw_version),
		  NEURON_VERSION_MINOR_OF(hw->fw_version),
		  hw->num_cores, hw->num_dma, hw->mem_size >> 20);
	return 0;
}
