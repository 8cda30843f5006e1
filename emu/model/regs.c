// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The register file: decodes MMIO offsets into the global registers (here)
 * and the units' (queue.c, dma.c), and the interrupt status and mask.
 */
#include "device_internal.h"
#include "neuron_isa.h"

static uint32_t dev_status(nm_device_state *st) {
    uint32_t v = 0;

    if (st->resetting)
        v |= NEURON_DEV_STATUS_RESETTING;
    if (atomic_load(&st->fatal))
        v |= NEURON_DEV_STATUS_FATAL;
    if (!(v & (NEURON_DEV_STATUS_RESETTING | NEURON_DEV_STATUS_FATAL)))
        v |= NEURON_DEV_STATUS_READY;
    return v;
}

/* The global registers under the device lock. */
static uint32_t dev_locked_read(nm_device_state *st, uint64_t offset) {
    switch (offset) {
    case NEURON_REG_DEV_CTRL:
        return st->resetting ? NEURON_DEV_CTRL_RESET : 0;
    case NEURON_REG_DEV_STATUS:
        return dev_status(st);
    case NEURON_REG_FATAL_CAUSE:
        return st->fatal_cause;
    case NEURON_REG_RESET_COUNT:
        return st->reset_count;
    default: /* NEURON_REG_SCRATCH */
        return st->scratch;
    }
}

uint32_t nm_device_mmio_read(nm_device *dev, uint64_t offset) {
    nm_device_state *st = &dev->state;
    const nm_device_config *c = &st->cfg;
    uint32_t v = 0;
    bool known = true;

    if (offset % 4 || offset >= NEURON_REGS_SIZE) {
        atomic_fetch_add(&st->bad_accesses, 1);
        return 0;
    }
    if (offset >= NEURON_QUEUE_BASE(0) && offset < NEURON_QUEUE_BASE(c->num_cores)) {
        uint32_t i = (uint32_t)(offset - NEURON_QUEUE_BASE(0)) / 0x100;

        v = nm_queue_reg_read(&dev->q[i], (uint32_t)(offset - NEURON_QUEUE_BASE(i)), &known);
    } else if (offset >= NEURON_DMA_BASE(0) && offset < NEURON_DMA_BASE(c->num_dma)) {
        uint32_t i = (uint32_t)(offset - NEURON_DMA_BASE(0)) / 0x100;

        v = nm_dma_reg_read(&dev->dma[i], (uint32_t)(offset - NEURON_DMA_BASE(i)), &known);
    } else {
        switch (offset) {
        case NEURON_REG_MAGIC:
            v = NEURON_MAGIC;
            break;
        case NEURON_REG_VERSION:
            v = (NEURON_VERSION_MAJOR << 16) | NEURON_VERSION_MINOR;
            break;
        case NEURON_REG_CAPS:
            v = c->caps;
            break;
        case NEURON_REG_NUM_CORES:
            v = c->num_cores;
            break;
        case NEURON_REG_NUM_DMA:
            v = c->num_dma;
            break;
        case NEURON_REG_SBUF_SIZE:
            v = c->sbuf_size;
            break;
        case NEURON_REG_PSUM_SIZE:
            v = c->psum_size;
            break;
        case NEURON_REG_FW_VERSION:
            v = NM_FW_VERSION;
            break;
        case NEURON_REG_MEM_SIZE_LO:
            v = (uint32_t)st->env.mem.devmem_size;
            break;
        case NEURON_REG_MEM_SIZE_HI:
            v = (uint32_t)(st->env.mem.devmem_size >> 32);
            break;
        case NEURON_REG_CLOCK_MHZ:
            v = c->clock_mhz;
            break;
        case NEURON_REG_PARTITIONS:
            v = NEURON_PARTITIONS;
            break;
        case NEURON_REG_ISA_VERSION:
            v = (NEURON_ISA_VERSION_MAJOR << 16) | NEURON_ISA_VERSION_MINOR;
            break;
        case NEURON_REG_DEV_CTRL:
        case NEURON_REG_DEV_STATUS:
        case NEURON_REG_FATAL_CAUSE:
        case NEURON_REG_RESET_COUNT:
        case NEURON_REG_SCRATCH:
            mtx_lock(&st->lock);
            v = dev_locked_read(st, offset);
            mtx_unlock(&st->lock);
            break;
        case NEURON_REG_IRQ_STATUS:
            v = atomic_load(&st->irq_status);
            break;
        case NEURON_REG_IRQ_MASK:
            v = atomic_load(&st->irq_mask);
            break;
        case NEURON_REG_INJECT:
            v = 0;
            break;
        default:
            known = false;
            break;
        }
    }
    if (!known)
        atomic_fetch_add(&st->bad_accesses, 1);
    return v;
}

/* Bits of IRQ_STATUS/IRQ_MASK that exist on this device. */
static uint32_t irq_valid_bits(const nm_device_state *st) {
    uint32_t q = (uint32_t)((UINT64_C(1) << st->cfg.num_cores) - 1);
    uint32_t d = ((1u << st->cfg.num_dma) - 1) << 16;

    return q | d | NEURON_IRQ_ERROR;
}

static void irq_vector_of(const nm_device_state *st, uint32_t bit, uint32_t *vector) {
    if (bit == 31)
        *vector = NEURON_MSIX_ERROR(st->cfg.num_cores, st->cfg.num_dma);
    else if (bit >= 16)
        *vector = NEURON_MSIX_DMA(st->cfg.num_cores, bit - 16);
    else
        *vector = NEURON_MSIX_QUEUE(bit);
}

void nm_device_mmio_write(nm_device *dev, uint64_t offset, uint32_t value) {
    nm_device_state *st = &dev->state;
    const nm_device_config *c = &st->cfg;
    bool known = true;

    if (offset % 4 || offset >= NEURON_REGS_SIZE) {
        atomic_fetch_add(&st->bad_accesses, 1);
        return;
    }
    if (offset >= NEURON_QUEUE_BASE(0) && offset < NEURON_QUEUE_BASE(c->num_cores)) {
        uint32_t i = (uint32_t)(offset - NEURON_QUEUE_BASE(0)) / 0x100;

        nm_queue_reg_write(&dev->q[i], (uint32_t)(offset - NEURON_QUEUE_BASE(i)), value, &known);
    } else if (offset >= NEURON_DMA_BASE(0) && offset < NEURON_DMA_BASE(c->num_dma)) {
        uint32_t i = (uint32_t)(offset - NEURON_DMA_BASE(0)) / 0x100;

        nm_dma_reg_write(&dev->dma[i], (uint32_t)(offset - NEURON_DMA_BASE(i)), value, &known);
    } else {
        switch (offset) {
        case NEURON_REG_MAGIC:
        case NEURON_REG_VERSION:
        case NEURON_REG_CAPS:
        case NEURON_REG_NUM_CORES:
        case NEURON_REG_NUM_DMA:
        case NEURON_REG_SBUF_SIZE:
        case NEURON_REG_PSUM_SIZE:
        case NEURON_REG_FW_VERSION:
        case NEURON_REG_MEM_SIZE_LO:
        case NEURON_REG_MEM_SIZE_HI:
        case NEURON_REG_CLOCK_MHZ:
        case NEURON_REG_PARTITIONS:
        case NEURON_REG_ISA_VERSION:
        case NEURON_REG_DEV_STATUS:
        case NEURON_REG_FATAL_CAUSE:
        case NEURON_REG_RESET_COUNT:
            break; /* read-only */
        case NEURON_REG_DEV_CTRL:
            if (value & NEURON_DEV_CTRL_RESET)
                nm_device_reset(dev, false);
            break;
        case NEURON_REG_IRQ_STATUS:
            atomic_fetch_and(&st->irq_status, ~value);
            break;
        case NEURON_REG_IRQ_MASK: {
            uint32_t old = atomic_exchange(&st->irq_mask, value & irq_valid_bits(st));
            uint32_t unmasked = old & ~value & atomic_load(&st->irq_status);
            uint32_t bit, vec;

            /* A cause that is pending when it is unmasked signals now. */
            for (bit = 0; bit < 32; bit++) {
                if (unmasked & (1u << bit)) {
                    irq_vector_of(st, bit, &vec);
                    st->env.raise_irq(st->env.opaque, vec);
                }
            }
            break;
        }
        case NEURON_REG_SCRATCH:
            mtx_lock(&st->lock);
            st->scratch = value;
            mtx_unlock(&st->lock);
            break;
        case NEURON_REG_INJECT:
            if (value & NEURON_INJECT_FATAL)
                nm_device_enter_fatal(dev, NEURON_FATAL_INJECTED);
            break;
        default:
            known = false;
            break;
        }
    }
    if (!known)
        atomic_fetch_add(&st->bad_accesses, 1);
}

uint64_t nm_device_bad_accesses(nm_device *dev) {
    return atomic_load(&dev->state.bad_accesses);
}
