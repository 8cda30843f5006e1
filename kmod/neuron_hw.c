// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: identification, reset and quiescing of the device.
 */
#include <linux/device.h>
#include <linux/error-injection.h>
#include <linux/iopoll.h>
#include <linux/pci.h>

#include <linux/moduleparam.h>

#include "neuron_hw.h"

unsigned int neuron_reset_timeout_ms = 2000;
module_param_named(reset_timeout_ms, neuron_reset_timeout_ms, uint, 0644);
MODULE_PARM_DESC(reset_timeout_ms,
		 "Time a device reset may take before the device is considered dead, in ms (default: 2000)");

/* Time between two reads of DEV_STATUS while a reset is in progress. */
#define NEURON_RESET_POLL_US	100
/* Time between two reads of a register while a core or engine resets. */
#define NEURON_HW_POLL_US	10

/*
 * Checks that the register BAR belongs to a device speaking our interface.
 * Nothing else of the device may be touched before this succeeded.
 */
static int neuron_hw_check_magic(struct neuron_hw *hw)
{
	u32 magic, version;

	magic = neuron_rd32(hw, NEURON_REG_MAGIC);
	if (magic != NEURON_MAGIC) {
		dev_err(hw->dev, "bad magic %#010x (expected %#010x)\n",
			magic, NEURON_MAGIC);
		return -ENODEV;
	}

	version = neuron_rd32(hw, NEURON_REG_VERSION);
	if (NEURON_VERSION_MAJOR_OF(version) != NEURON_VERSION_MAJOR) {
		dev_err(hw->dev, "unsupported interface version %u.%u (driver: %u.x)\n",
			NEURON_VERSION_MAJOR_OF(version),
			NEURON_VERSION_MINOR_OF(version), NEURON_VERSION_MAJOR);
		return -ENODEV;
	}
	hw->version = version;
	return 0;
}

/**
 * neuron_hw_reset() - reset the whole device and wait for it to finish
 * @hw: the device's registers
 *
 * Aborts all jobs and DMA, clears all queue and engine state. Sleeps; waits
 * at most neuron_reset_timeout_ms.
 *
 * Return: 0 on success (check &neuron_hw.ready for whether the device is
 * ready to run jobs), -ETIMEDOUT if the reset does not finish, -EIO if the
 * device is in its fatal state afterwards.
 *
 * A device that never leaves reset is the one failure of the probe path
 * that is not an allocation: fail_function can make this fail (it is
 * never inlined, so that every caller goes through its entry).
 */
noinline int neuron_hw_reset(struct neuron_hw *hw)
{
	u32 status;
	int ret;

	neuron_wr32(hw, NEURON_REG_DEV_CTRL, NEURON_DEV_CTRL_RESET);
	ret = readl_poll_timeout(hw->regs + NEURON_REG_DEV_STATUS, status,
				 !(status & NEURON_DEV_STATUS_RESETTING),
				 NEURON_RESET_POLL_US,
				 (u64)neuron_reset_timeout_ms * USEC_PER_MSEC);
	if (ret) {
		dev_err(hw->dev, "device reset timed out after %u ms (status %#x)\n",
			neuron_reset_timeout_ms, status);
		hw->ready = false;
		return ret;
	}
	if (status & NEURON_DEV_STATUS_FATAL) {
		dev_err(hw->dev, "device is in its fatal state after reset (cause %u)\n",
			neuron_rd32(hw, NEURON_REG_FATAL_CAUSE));
		hw->ready = false;
		return -EIO;
	}
	hw->ready = status & NEURON_DEV_STATUS_READY;
	return 0;
}
ALLOW_ERROR_INJECTION(neuron_hw_reset, ERRNO);

static int neuron_hw_read_identity(struct neuron_hw *hw, struct pci_dev *pdev)
{
	u64 mem_size;

	hw->vendor = pdev->vendor;
	hw->device = pdev->device;
	hw->revision = pdev->revision;
	hw->pci_bus_info = (u64)pci_domain_nr(pdev->bus) << 32 |
			   pdev->bus->number << 8 | pdev->devfn;

	hw->caps = neuron_rd32(hw, NEURON_REG_CAPS);
	hw->fw_version = neuron_rd32(hw, NEURON_REG_FW_VERSION);
	/* NEURON_REG_ISA_VERSION exists since interface 1.1. */
	if (NEURON_VERSION_MINOR_OF(hw->version) >= 1)
		hw->isa_version = neuron_rd32(hw, NEURON_REG_ISA_VERSION);
	else
		hw->isa_version = 1 << 16;
	hw->num_cores = neuron_rd32(hw, NEURON_REG_NUM_CORES);
	hw->num_dma = neuron_rd32(hw, NEURON_REG_NUM_DMA);
	hw->sbuf_size = neuron_rd32(hw, NEURON_REG_SBUF_SIZE);
	hw->psum_size = neuron_rd32(hw, NEURON_REG_PSUM_SIZE);
	hw->partitions = neuron_rd32(hw, NEURON_REG_PARTITIONS);
	hw->clock_mhz = neuron_rd32(hw, NEURON_REG_CLOCK_MHZ);
	mem_size = neuron_rd64(hw, NEURON_REG_MEM_SIZE_LO);

	if (hw->num_cores > NEURON_MAX_CORES ||
	    hw->num_dma > NEURON_MAX_DMA_ENGINES) {
		dev_err(hw->dev, "device reports %u cores and %u DMA engines (at most %u and %u)\n",
			hw->num_cores, hw->num_dma, NEURON_MAX_CORES,
			NEURON_MAX_DMA_ENGINES);
		return -EIO;
	}
	if (mem_size > pci_resource_len(pdev, NEURON_BAR_MEM) ||
	    mem_size > BIT_ULL(NEURON_ADDR_BITS)) {
		dev_err(hw->dev, "device memory (%llu bytes) exceeds its BAR (%llu bytes)\n",
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
	struct neuron_hw *hw = arg;

	neuron_wr32(hw, NEURON_REG_IRQ_MASK, ~0u);
	neuron_hw_reset(hw);
}

/**
 * neuron_hw_init() - identify, reset and describe the device
 * @hw: the register interface, with @hw->regs mapped and nothing else set up
 * @pdev: the PCI function
 *
 * Checks the magic and interface version before anything else, then
 * resets the device to a known state with all interrupts masked and reads
 * its identity and capabilities. Arranges for the device to be reset
 * again when the driver unbinds.
 *
 * Return: 0 or a negative errno; -ENODEV for a device we do not speak to.
 */
int neuron_hw_init(struct neuron_hw *hw, struct pci_dev *pdev)
{
	int ret;

	hw->dev = &pdev->dev;
	ret = neuron_hw_check_magic(hw);
	if (ret)
		return ret;

	neuron_wr32(hw, NEURON_REG_IRQ_MASK, ~0u);
	ret = neuron_hw_reset(hw);
	if (ret)
		return ret;
	neuron_wr32(hw, NEURON_REG_IRQ_STATUS, ~0u);

	ret = devm_add_action_or_reset(&pdev->dev, neuron_hw_fini, hw);
	if (ret)
		return ret;

	ret = neuron_hw_read_identity(hw, pdev);
	if (ret)
		return ret;

	if (!hw->ready)
		dev_warn(hw->dev, "device is not ready after reset (status %#x): no jobs can run\n",
			 neuron_rd32(hw, NEURON_REG_DEV_STATUS));

	dev_info(hw->dev, "interface %u.%u, ISA %u.%u, firmware %u.%u, %u cores, %u DMA engines, %llu MiB device memory\n",
		 NEURON_VERSION_MAJOR_OF(hw->version),
		 NEURON_VERSION_MINOR_OF(hw->version),
		 NEURON_VERSION_MAJOR_OF(hw->isa_version),
		 NEURON_VERSION_MINOR_OF(hw->isa_version),
		 NEURON_VERSION_MAJOR_OF(hw->fw_version),
		 NEURON_VERSION_MINOR_OF(hw->fw_version),
		 hw->num_cores, hw->num_dma, hw->mem_size >> 20);
	return 0;
}

/**
 * neuron_hw_poll_clear() - wait for a self-clearing bit to clear
 * @hw: the device's registers
 * @reg: register offset
 * @bit: the bit that reads 1 while the operation (a reset) runs
 *
 * Sleeps; waits at most neuron_reset_timeout_ms.
 *
 * Return: 0 or -ETIMEDOUT.
 */
int neuron_hw_poll_clear(struct neuron_hw *hw, u32 reg, u32 bit)
{
	u32 val;

	return readl_poll_timeout(hw->regs + reg, val, !(val & bit),
				  NEURON_HW_POLL_US,
				  (u64)neuron_reset_timeout_ms * USEC_PER_MSEC);
}
