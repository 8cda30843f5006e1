// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The device: creation, device resets, the fatal state and the units' step
 * functions, over the units (queue.c, dma.c) and the device's own state
 * (device_state.c); the register file is regs.c. See device.h for the
 * threading model and hw/README.md for the behaviour.
 */
#include "device_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nm_device_reset(nm_device *dev, bool power_on) {
    nm_device_state *st = &dev->state;
    uint32_t i;

    if (!nm_device_state_reset_begin(st, power_on))
        return;
    for (i = 0; i < st->cfg.num_cores; i++)
        if (nm_queue_device_reset(&dev->q[i]))
            nm_reset_pending_get(st);
    for (i = 0; i < st->cfg.num_dma; i++)
        if (nm_dma_device_reset(&dev->dma[i]))
            nm_reset_pending_get(st);
    nm_device_state_reset_registers(st);
    nm_reset_pending_put(st);
    /* Let idle workers reset their core state before the next job. */
    for (i = 0; i < st->cfg.num_cores; i++)
        nm_kick(st, NM_UNIT_CORE, i);
}

/* Every unit's work in flight stops at its next check. */
static void abort_units(nm_device *dev) {
    uint32_t i;

    for (i = 0; i < dev->state.cfg.num_cores; i++)
        nm_queue_abort(&dev->q[i]);
    for (i = 0; i < dev->state.cfg.num_dma; i++)
        nm_dma_abort(&dev->dma[i]);
}

void nm_device_enter_fatal(nm_device *dev, uint32_t cause) {
    if (!nm_device_state_enter_fatal(&dev->state, cause))
        return;
    abort_units(dev);
    nm_error_irq(&dev->state);
}

void nm_device_shutdown(nm_device *dev) {
    atomic_store(&dev->state.shutdown, true);
    abort_units(dev);
}

bool nm_device_core_step(nm_device *dev, uint32_t core) {
    if (core >= dev->state.cfg.num_cores || atomic_load(&dev->state.shutdown))
        return false;
    return nm_queue_step(&dev->q[core]);
}

bool nm_device_dma_step(nm_device *dev, uint32_t engine) {
    if (engine >= dev->state.cfg.num_dma || atomic_load(&dev->state.shutdown))
        return false;
    return nm_dma_step(&dev->dma[engine]);
}

/* ---------------------------------------------------------------------- */
/* Creation */

void nm_device_config_default(nm_device_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->num_cores = 2;
    cfg->num_dma = 2;
    cfg->sbuf_size = NM_DEFAULT_SBUF_SIZE;
    cfg->psum_size = NM_DEFAULT_PSUM_SIZE;
    cfg->clock_mhz = NM_DEFAULT_CLOCK_MHZ;
    cfg->caps = NM_DEFAULT_CAPS;
}

static void set_err(char *err, size_t errlen, const char *msg) {
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
}

nm_device *nm_device_new(const nm_device_config *cfg, const nm_device_env *env, char *err,
                         size_t errlen) {
    nm_device *dev;
    uint32_t i;

    if (cfg->num_cores < 1 || cfg->num_cores > NEURON_MAX_CORES) {
        set_err(err, errlen, "cores must be 1..16");
        return NULL;
    }
    if (cfg->num_dma < 1 || cfg->num_dma > NEURON_MAX_DMA_ENGINES) {
        set_err(err, errlen, "DMA engines must be 1..8");
        return NULL;
    }
    if (!cfg->sbuf_size || cfg->sbuf_size % NEURON_PARTITIONS || !cfg->psum_size ||
        cfg->psum_size % NEURON_PARTITIONS) {
        set_err(err, errlen, "SBUF and PSUM sizes must be non-zero multiples of 128 bytes");
        return NULL;
    }
    if (!cfg->clock_mhz) {
        set_err(err, errlen, "the clock must be non-zero");
        return NULL;
    }
    if (!env->raise_irq || !env->mem.host_read || !env->mem.host_write ||
        (env->mem.devmem_size && !env->mem.devmem)) {
        set_err(err, errlen, "incomplete environment");
        return NULL;
    }

    dev = calloc(1, sizeof(*dev));
    if (!dev) {
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    nm_device_state_init(&dev->state, cfg, env);

    for (i = 0; i < cfg->num_cores; i++)
        if (!nm_queue_init(&dev->q[i], &dev->state, i, cfg->sbuf_size, cfg->psum_size))
            goto fail;
    for (i = 0; i < cfg->num_dma; i++)
        if (!nm_dma_init(&dev->dma[i], &dev->state, i))
            goto fail;
    return dev;

fail:
    set_err(err, errlen, "out of memory for the cores' SBUF/PSUM");
    nm_device_free(dev);
    return NULL;
}

void nm_device_free(nm_device *dev) {
    uint32_t i;

    if (!dev)
        return;
    /* A unit that was initialized knows its device. */
    for (i = 0; i < dev->state.cfg.num_cores; i++)
        if (dev->q[i].dev)
            nm_queue_destroy(&dev->q[i]);
    for (i = 0; i < dev->state.cfg.num_dma; i++)
        if (dev->dma[i].dev)
            nm_dma_destroy(&dev->dma[i]);
    nm_device_state_destroy(&dev->state);
    free(dev);
}

uint32_t nm_device_msix_count(const nm_device *dev) {
    return NEURON_MSIX_COUNT(dev->state.cfg.num_cores, dev->state.cfg.num_dma);
}

uint32_t nm_device_num_cores(const nm_device *dev) {
    return dev->state.cfg.num_cores;
}

uint32_t nm_device_num_dma(const nm_device *dev) {
    return dev->state.cfg.num_dma;
}
