// SPDX-License-Identifier: MIT
/*
 * libFuzzer over the device model's register interface: a sequence of MMIO
 * writes and reads, host and device memory contents (job and descriptor
 * rings, binding tables, programs) and runs of the units' work functions,
 * on a fresh device per input, under ASan/UBSan.
 *
 * It checks that nothing a driver can do through registers and rings makes
 * the model touch memory it was not given (host accesses go through the
 * bounded callbacks; device memory is allocated at its exact size), crash,
 * or hang: a run of the units that takes longer than ABORT_MS gets every
 * core queue and DMA engine reset through their registers, as the driver's
 * timeout does, and must then end within libFuzzer's -timeout.
 *
 * Input: a sequence of commands, each an opcode byte and its arguments
 * (little endian); an incomplete command ends the input.
 *   CMD_WRITE  u16 offset, u32 value   MMIO write (offset & ~3)
 *   CMD_READ   u16 offset              MMIO read
 *   CMD_HOST   u16 offset, u8 n, n bytes  into host memory at FH_HOST_BASE + offset
 *   CMD_DEV    u16 offset, u8 n, n bytes  into device memory at offset * 4
 *   CMD_RUN                            step every kicked unit until idle
 *   CMD_RESET  u8 power_on             device reset
 * A final CMD_RUN follows the last command.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "fuzz_harness.h"
#include "neuron_isa.h"

#define NUM_CORES 2
#define NUM_DMA 2
#define SBUF_SIZE (256u << 10)
#define PSUM_SIZE (NEURON_PARTITIONS * NEURON_PSUM_BANK_SIZE)
#define ABORT_MS 500
/* Steps of one unit per CMD_RUN round; a unit that wants more is kicked again. */
#define MAX_STEPS 64

enum { CMD_WRITE, CMD_READ, CMD_HOST, CMD_DEV, CMD_RUN, CMD_RESET, CMD_COUNT };

static struct {
    struct fh_memory mem;
    nm_device *dev;
    /* Units that were kicked: bit i core i, bit 16 + i DMA engine i. */
    atomic_uint kicked;
    uint64_t now_ns;
} f;

static void raise_irq(void *opaque, uint32_t vector) {
    (void)opaque;
    (void)vector;
}

static void kick(void *opaque, nm_unit_kind kind, uint32_t index) {
    (void)opaque;
    atomic_fetch_or(&f.kicked, 1u << (kind == NM_UNIT_DMA ? 16 + index : index));
}

static uint64_t clock_ns(void *opaque) {
    (void)opaque;
    return f.now_ns += 1000;
}

/* The driver's timeout: reset every queue and engine through its register. */
static void reset_units(void *opaque) {
    (void)opaque;
    for (uint32_t c = 0; c < NUM_CORES; c++)
        nm_device_mmio_write(f.dev, NEURON_QUEUE_BASE(c) + NEURON_Q_CTRL, NEURON_Q_CTRL_RESET);
    for (uint32_t e = 0; e < NUM_DMA; e++)
        nm_device_mmio_write(f.dev, NEURON_DMA_BASE(e) + NEURON_DMA_CTRL, NEURON_DMA_CTRL_RESET);
}

static void run_units(void) {
    unsigned int pending;

    fh_watchdog_arm(ABORT_MS);
    while ((pending = atomic_exchange(&f.kicked, 0))) {
        for (uint32_t c = 0; c < NUM_CORES; c++)
            for (int i = 0; pending & (1u << c) && i < MAX_STEPS; i++)
                if (!nm_device_core_step(f.dev, c))
                    break;
        for (uint32_t e = 0; e < NUM_DMA; e++)
            for (int i = 0; pending & (1u << (16 + e)) && i < MAX_STEPS; i++)
                if (!nm_device_dma_step(f.dev, e))
                    break;
    }
    fh_watchdog_disarm();
}

static void setup(void) {
    fh_memory_init(&f.mem, fh_host_write);
    fh_watchdog_start(reset_units, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const nm_device_env env_template = {
        .raise_irq = raise_irq, .kick = kick, .clock_ns = clock_ns};
    nm_device_config cfg;
    nm_device_env env = env_template;
    char err[128];

    if (!f.mem.host)
        setup();
    fh_memory_fill(&f.mem);
    nm_device_config_default(&cfg);
    cfg.num_cores = NUM_CORES;
    cfg.num_dma = NUM_DMA;
    cfg.sbuf_size = SBUF_SIZE;
    cfg.psum_size = PSUM_SIZE;
    env.mem = f.mem.ops;
    atomic_store(&f.kicked, 0);
    f.dev = nm_device_new(&cfg, &env, err, sizeof(err));
    if (!f.dev)
        abort();

    for (size_t at = 0; at < size;) {
        uint8_t cmd = data[at++] % CMD_COUNT;
        size_t left = size - at;
        const uint8_t *a = data + at;

        if (cmd == CMD_WRITE && left >= 6) {
            nm_device_mmio_write(f.dev, (uint32_t)fh_le(a, 2) & ~3u, (uint32_t)fh_le(a + 2, 4));
            at += 6;
        } else if (cmd == CMD_READ && left >= 2) {
            (void)nm_device_mmio_read(f.dev, fh_le(a, 2) & ~3u);
            at += 2;
        } else if ((cmd == CMD_HOST || cmd == CMD_DEV) && left >= 3 && left - 3 >= a[2]) {
            uint64_t off = cmd == CMD_HOST ? fh_le(a, 2) : fh_le(a, 2) * 4;
            uint8_t *mem = cmd == CMD_HOST ? f.mem.host : f.mem.devmem;
            uint64_t mem_size = cmd == CMD_HOST ? FH_HOST_SIZE : FH_DEVMEM_SIZE;
            size_t n = a[2];
            if (off + n > mem_size)
                break;
            memcpy(mem + off, a + 3, n);
            at += 3 + n;
        } else if (cmd == CMD_RUN) {
            run_units();
        } else if (cmd == CMD_RESET && left >= 1) {
            nm_device_reset(f.dev, a[0] & 1);
            at += 1;
        } else {
            break;
        }
    }
    run_units();
    nm_device_free(f.dev);
    f.dev = NULL;
    return 0;
}
