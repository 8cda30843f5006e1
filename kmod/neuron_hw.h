/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: register access, device identity, reset.
 */
#ifndef __NEURON_HW_H__
#define __NEURON_HW_H__

#include <linux/io.h>
#include <linux/types.h>

#include "neuron_regs.h"

struct device;
struct pci_dev;

/**
 * struct neuron_hw - the device's register interface and identity
 * @regs: register BAR mapping
 * @dev: the PCI function's device, for messages
 * @vendor: PCI vendor ID
 * @device: PCI device ID
 * @revision: PCI revision ID
 * @pci_bus_info: PCI domain << 32 | bus << 8 | devfn, as reported to
 *	userspace (cached: the PCI device may be gone when it is asked)
 * @version: interface version, major << 16 | minor
 * @fw_version: firmware version, major << 16 | minor
 * @isa_version: instruction set of the cores, major << 16 | minor
 * @caps: NEURON_CAP_* bits
 * @num_cores: NeuronCores, each with one job queue
 * @num_dma: DMA engines
 * @sbuf_size: SBUF bytes per core
 * @psum_size: PSUM bytes per core
 * @partitions: SBUF/PSUM partitions
 * @clock_mhz: core clock
 * @mem_size: bytes of device memory, page aligned
 * @ready: the device reported READY after its last reset
 * @irq_enabled: IRQ_STATUS bits of the interrupts the driver handles,
 *	unmasked while it is bound (set when the vectors are requested)
 *
 * Everything but @ready is read once at probe and constant afterwards.
 */
struct neuron_hw {
	void __iomem *regs;
	struct device *dev;
	u16 vendor;
	u16 device;
	u8 revision;
	u64 pci_bus_info;
	u32 version;
	u32 fw_version;
	u32 isa_version;
	u32 caps;
	u32 num_cores;
	u32 num_dma;
	u32 sbuf_size;
	u32 psum_size;
	u32 partitions;
	u32 clock_mhz;
	u64 mem_size;
	bool ready;
	u32 irq_enabled;
};

static inline u32 neuron_rd32(struct neuron_hw *hw, u32 reg)
{
	return readl(hw->regs + reg);
}

static inline void neuron_wr32(struct neuron_hw *hw, u32 reg, u32 val)
{
	writel(val, hw->regs + reg);
}

/* Reads a _LO/_HI register pair; reading _LO latches _HI. */
static inline u64 neuron_rd64(struct neuron_hw *hw, u32 reg_lo)
{
	u64 lo = neuron_rd32(hw, reg_lo);

	return lo | (u64)neuron_rd32(hw, reg_lo + 4) << 32;
}

extern unsigned int neuron_reset_timeout_ms;

int neuron_hw_init(struct neuron_hw *hw, struct pci_dev *pdev);
int neuron_hw_reset(struct neuron_hw *hw);
int neuron_hw_poll_clear(struct neuron_hw *hw, u32 reg, u32 bit);

#endif /* __NEURON_HW_H__ */
