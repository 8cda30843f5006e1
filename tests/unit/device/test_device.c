// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Register-level tests of the device model (emu/model/device.c): identity
 * and reset values, register access semantics, ring configuration, DMA
 * engines, job queues, resets and the fatal-error model.
 *
 * Host memory is a plain buffer at bus address HOST_BASE; everything
 * outside it fails like an IOMMU fault. The tests step the units on their
 * own thread, except where a job must be running while the test writes a
 * register: those run the core's worker on a second thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>

#include <cmocka.h>

#include "device.h"
#include "neuron_isa.h"
#include "neuron_regs.h"

#define HOST_BASE 0x100000ull
#define HOST_SIZE (1u << 20)
#define DEV_SIZE (1u << 20)

/* Host memory layout (bus addresses). */
#define JOB_RING (HOST_BASE + 0x0000)
#define CPL_RING (HOST_BASE + 0x2000)
#define BIND_TAB (HOST_BASE + 0x3000)
#define DMA_RING (HOST_BASE + 0x4000)
#define DATA (HOST_BASE + 0x10000)

#define MAX_VECTORS 32

typedef struct env {
    uint8_t *host;
    uint8_t *devmem;
    atomic_uint irqs[MAX_VECTORS];
    atomic_uint kicks;
    uint64_t ns;
    nm_device *dev;
} env;

static int host_read(void *opaque, uint64_t addr, void *buf, size_t len) {
    env *e = opaque;

    if (addr < HOST_BASE || addr - HOST_BASE > HOST_SIZE || len > HOST_SIZE - (addr - HOST_BASE))
        return -1;
    memcpy(buf, e->host + (addr - HOST_BASE), len);
    return 0;
}

static int host_write(void *opaque, uint64_t addr, const void *buf, size_t len) {
    env *e = opaque;

    if (addr < HOST_BASE || addr - HOST_BASE > HOST_SIZE || len > HOST_SIZE - (addr - HOST_BASE))
        return -1;
    memcpy(e->host + (addr - HOST_BASE), buf, len);
    return 0;
}

static void raise_irq(void *opaque, uint32_t vector) {
    env *e = opaque;

    if (vector < MAX_VECTORS)
        atomic_fetch_add(&e->irqs[vector], 1);
}

static void kick(void *opaque, nm_unit_kind kind, uint32_t index) {
    env *e = opaque;

    (void)kind;
    (void)index;
    atomic_fetch_add(&e->kicks, 1);
}

static uint64_t clock_ns(void *opaque) {
    env *e = opaque;

    return e->ns += 1000;
}

static void *hp(env *e, uint64_t bus) {
    return e->host + (bus - HOST_BASE);
}

static int setup(void **state) {
    env *e = calloc(1, sizeof(*e));
    nm_device_config cfg;
    nm_device_env de = {0};
    char err[128];

    e->host = calloc(1, HOST_SIZE);
    e->devmem = calloc(1, DEV_SIZE);
    nm_device_config_default(&cfg);
    cfg.sbuf_size = 128 * 1024;
    cfg.psum_size = 128 * 16384;
    de.mem.host_read = host_read;
    de.mem.host_write = host_write;
    de.mem.opaque = e;
    de.mem.devmem = e->devmem;
    de.mem.devmem_size = DEV_SIZE;
    de.opaque = e;
    de.raise_irq = raise_irq;
    de.kick = kick;
    de.clock_ns = clock_ns;
    e->dev = nm_device_new(&cfg, &de, err, sizeof(err));
    if (!e->dev)
        fail_msg("nm_device_new: %s", err);
    *state = e;
    return 0;
}

static int teardown(void **state) {
    env *e = *state;

    nm_device_free(e->dev);
    free(e->host);
    free(e->devmem);
    free(e);
    return 0;
}

static uint32_t rd(env *e, uint64_t off) {
    return nm_device_mmio_read(e->dev, off);
}

static void wr(env *e, uint64_t off, uint32_t v) {
    nm_device_mmio_write(e->dev, off, v);
}

static uint64_t rd64(env *e, uint64_t lo) {
    uint32_t l = rd(e, lo);

    return l | (uint64_t)rd(e, lo + 4) << 32;
}

/* Step every unit until none has work left. */
static void drain(env *e) {
    bool more;
    int guard = 0;

    do {
        more = false;
        for (uint32_t i = 0; i < nm_device_num_cores(e->dev); i++)
            while (nm_device_core_step(e->dev, i))
                more = true;
        for (uint32_t i = 0; i < nm_device_num_dma(e->dev); i++)
            while (nm_device_dma_step(e->dev, i))
                more = true;
    } while (more && ++guard < 1000);
}

/* ---------------------------------------------------------------------- */

static void test_identity(void **state) {
    env *e = *state;

    assert_int_equal(rd(e, NEURON_REG_MAGIC), NEURON_MAGIC);
    assert_int_equal(NEURON_VERSION_MAJOR_OF(rd(e, NEURON_REG_VERSION)), NEURON_VERSION_MAJOR);
    assert_int_equal(NEURON_VERSION_MINOR_OF(rd(e, NEURON_REG_VERSION)), NEURON_VERSION_MINOR);
    assert_true(rd(e, NEURON_REG_CAPS) & NEURON_CAP_FP32);
    assert_true(rd(e, NEURON_REG_CAPS) & NEURON_CAP_CORE_RESET);
    assert_int_equal(rd(e, NEURON_REG_NUM_CORES), 2);
    assert_int_equal(rd(e, NEURON_REG_NUM_DMA), 2);
    assert_int_equal(rd(e, NEURON_REG_SBUF_SIZE), 128 * 1024);
    assert_int_equal(rd(e, NEURON_REG_PSUM_SIZE), 128 * 16384);
    assert_int_equal(rd(e, NEURON_REG_MEM_SIZE_LO), DEV_SIZE);
    assert_int_equal(rd(e, NEURON_REG_MEM_SIZE_HI), 0);
    assert_int_equal(rd(e, NEURON_REG_CLOCK_MHZ), NM_DEFAULT_CLOCK_MHZ);
    assert_int_equal(rd(e, NEURON_REG_PARTITIONS), NEURON_PARTITIONS);
    assert_int_equal(rd(e, NEURON_REG_ISA_VERSION), 1u << 16 | 2u); /* ISA 1.2 */
    assert_int_equal(rd(e, NEURON_REG_ISA_VERSION),
                     NEURON_ISA_VERSION_MAJOR << 16 | NEURON_ISA_VERSION_MINOR);
    assert_int_not_equal(rd(e, NEURON_REG_FW_VERSION), 0);
    assert_int_equal(rd(e, NEURON_REG_DEV_STATUS), NEURON_DEV_STATUS_READY);
    assert_int_equal(rd(e, NEURON_REG_DEV_CTRL), 0);
    assert_int_equal(rd(e, NEURON_REG_FATAL_CAUSE), NEURON_FATAL_NONE);
    assert_int_equal(rd(e, NEURON_REG_RESET_COUNT), 0);
    assert_int_equal(rd(e, NEURON_REG_IRQ_STATUS), 0);
    assert_int_equal(rd(e, NEURON_REG_IRQ_MASK), 0);
    assert_int_equal(nm_device_msix_count(e->dev), 5);
    for (uint32_t c = 0; c < 2; c++)
        for (uint32_t r = 0; r <= NEURON_Q_CNT_FAULTS_HI; r += 4)
            assert_int_equal(rd(e, NEURON_QUEUE_BASE(c) + r), 0);
    for (uint32_t d = 0; d < 2; d++)
        for (uint32_t r = 0; r <= NEURON_DMA_CNT_ERRORS_HI; r += 4)
            assert_int_equal(rd(e, NEURON_DMA_BASE(d) + r), 0);
}

static void test_config_validation(void **state) {
    env *e = *state;
    nm_device_config cfg;
    nm_device_env de = {0};
    char err[128] = "";

    de.mem.host_read = host_read;
    de.mem.host_write = host_write;
    de.mem.devmem = e->devmem;
    de.mem.devmem_size = DEV_SIZE;
    de.raise_irq = raise_irq;
    nm_device_config_default(&cfg);
    cfg.num_cores = 17;
    assert_null(nm_device_new(&cfg, &de, err, sizeof(err)));
    assert_true(strlen(err) > 0);
    nm_device_config_default(&cfg);
    cfg.num_dma = 0;
    assert_null(nm_device_new(&cfg, &de, err, sizeof(err)));
    nm_device_config_default(&cfg);
    cfg.sbuf_size = 100;
    assert_null(nm_device_new(&cfg, &de, err, sizeof(err)));
}

static void test_register_semantics(void **state) {
    env *e = *state;
    uint64_t bad;

    /* RO registers ignore writes. */
    wr(e, NEURON_REG_MAGIC, 0);
    wr(e, NEURON_REG_NUM_CORES, 7);
    wr(e, NEURON_REG_RESET_COUNT, 9);
    wr(e, NEURON_REG_DEV_STATUS, 0);
    wr(e, NEURON_QUEUE_BASE(0) + NEURON_Q_HEAD, 5);
    wr(e, NEURON_QUEUE_BASE(0) + NEURON_Q_CPL_TAIL, 5);
    wr(e, NEURON_DMA_BASE(1) + NEURON_DMA_HEAD, 5);
    assert_int_equal(rd(e, NEURON_REG_MAGIC), NEURON_MAGIC);
    assert_int_equal(rd(e, NEURON_REG_NUM_CORES), 2);
    assert_int_equal(rd(e, NEURON_REG_RESET_COUNT), 0);
    assert_int_equal(rd(e, NEURON_REG_DEV_STATUS), NEURON_DEV_STATUS_READY);
    assert_int_equal(rd(e, NEURON_QUEUE_BASE(0) + NEURON_Q_HEAD), 0);
    assert_int_equal(rd(e, NEURON_QUEUE_BASE(0) + NEURON_Q_CPL_TAIL), 0);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_HEAD), 0);

    /* RW registers. */
    wr(e, NEURON_REG_SCRATCH, 0xdeadbeef);
    assert_int_equal(rd(e, NEURON_REG_SCRATCH), 0xdeadbeef);
    wr(e, NEURON_QUEUE_BASE(1) + NEURON_Q_RING_LO, 0x12345000);
    wr(e, NEURON_QUEUE_BASE(1) + NEURON_Q_RING_HI, 0x7);
    assert_int_equal(rd(e, NEURON_QUEUE_BASE(1) + NEURON_Q_RING_LO), 0x12345000);
    assert_int_equal(rd(e, NEURON_QUEUE_BASE(1) + NEURON_Q_RING_HI), 0x7);
    wr(e, NEURON_DMA_BASE(0) + NEURON_DMA_RING_ENTRIES, 64);
    assert_int_equal(rd(e, NEURON_DMA_BASE(0) + NEURON_DMA_RING_ENTRIES), 64);
    assert_int_equal(rd(e, NEURON_REG_INJECT), 0);

    /* IRQ_MASK keeps only existing causes; IRQ_STATUS is RW1C. */
    wr(e, NEURON_REG_IRQ_MASK, 0xffffffff);
    assert_int_equal(rd(e, NEURON_REG_IRQ_MASK), NEURON_IRQ_QUEUE(0) | NEURON_IRQ_QUEUE(1) |
                                                     NEURON_IRQ_DMA(0) | NEURON_IRQ_DMA(1) |
                                                     NEURON_IRQ_ERROR);
    wr(e, NEURON_REG_IRQ_STATUS, 0xffffffff); /* nothing pending: no effect */
    assert_int_equal(rd(e, NEURON_REG_IRQ_STATUS), 0);
    /* A bad ring config raises the (masked) error cause. */
    wr(e, NEURON_QUEUE_BASE(0) + NEURON_Q_CTRL, NEURON_Q_CTRL_ENABLE);
    assert_int_equal(rd(e, NEURON_REG_IRQ_STATUS), NEURON_IRQ_ERROR);
    assert_int_equal(atomic_load(&e->irqs[4]), 0); /* masked */
    /* Unmasking a pending cause signals its vector. */
    wr(e, NEURON_REG_IRQ_MASK, 0);
    assert_int_equal(atomic_load(&e->irqs[4]), 1);
    wr(e, NEURON_REG_IRQ_STATUS, NEURON_IRQ_QUEUE(0)); /* other bit: no effect */
    assert_int_equal(rd(e, NEURON_REG_IRQ_STATUS), NEURON_IRQ_ERROR);
    wr(e, NEURON_REG_IRQ_STATUS, NEURON_IRQ_ERROR);
    assert_int_equal(rd(e, NEURON_REG_IRQ_STATUS), 0);

    /* Unknown and unaligned accesses read 0, are ignored and counted. */
    bad = nm_device_bad_accesses(e->dev);
    assert_int_equal(rd(e, 0x0002), 0);
    assert_int_equal(rd(e, 0x0100), 0);
    assert_int_equal(rd(e, NEURON_QUEUE_BASE(2)), 0); /* core 2 does not exist */
    assert_int_equal(rd(e, NEURON_DMA_BASE(2)), 0);
    assert_int_equal(rd(e, NEURON_REGS_SIZE), 0);
    wr(e, 0x0062, 1);
    wr(e, NEURON_QUEUE_BASE(0) + 0xf0, 1);
    assert_int_equal(rd(e, NEURON_REG_SCRATCH), 0xdeadbeef);
    assert_int_equal(nm_device_bad_accesses(e->dev), bad + 7);
}

/* ---------------------------------------------------------------------- */
/* DMA */

static void dma_setup(env *e, uint32_t eng, uint32_t entries) {
    wr(e, NEURON_DMA_BASE(eng) + NEURON_DMA_RING_LO, (uint32_t)DMA_RING);
    wr(e, NEURON_DMA_BASE(eng) + NEURON_DMA_RING_HI, (uint32_t)(DMA_RING >> 32));
    wr(e, NEURON_DMA_BASE(eng) + NEURON_DMA_RING_ENTRIES, entries);
    wr(e, NEURON_DMA_BASE(eng) + NEURON_DMA_CTRL, NEURON_DMA_CTRL_ENABLE);
    assert_int_equal(rd(e, NEURON_DMA_BASE(eng) + NEURON_DMA_STATUS), NEURON_DMA_STATUS_ENABLED);
}

static struct neuron_dma_desc *dma_desc(env *e, uint32_t idx, uint32_t entries) {
    return (struct neuron_dma_desc *)hp(e, DMA_RING) + (idx % entries);
}

static void fill(uint8_t *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

static void test_dma_copies(void **state) {
    env *e = *state;
    const uint32_t len = 200000; /* several chunks, not a multiple */
    uint8_t *src = hp(e, DATA), *back = hp(e, DATA + 0x40000), *h2h = hp(e, DATA + 0x80000);
    struct neuron_dma_desc *d;
    uint32_t vec = NEURON_MSIX_DMA(2, 1);

    fill(src, len, 1);
    dma_setup(e, 1, 8);
    /* host -> device, device -> device, device -> host, host -> host */
    d = dma_desc(e, 0, 8);
    *d = (struct neuron_dma_desc){.src = DATA,
                                  .dst = 0x1000,
                                  .len = len,
                                  .flags = NEURON_DMA_F_SRC_HOST | NEURON_DMA_F_IRQ,
                                  .cookie = 1};
    d = dma_desc(e, 1, 8);
    *d = (struct neuron_dma_desc){.src = 0x1000, .dst = 0x80000, .len = len, .cookie = 2};
    d = dma_desc(e, 2, 8);
    *d = (struct neuron_dma_desc){.src = 0x80000,
                                  .dst = DATA + 0x40000,
                                  .len = len,
                                  .flags = NEURON_DMA_F_DST_HOST | NEURON_DMA_F_IRQ,
                                  .cookie = 3};
    d = dma_desc(e, 3, 8);
    *d = (struct neuron_dma_desc){.src = DATA,
                                  .dst = DATA + 0x80000,
                                  .len = len,
                                  .flags = NEURON_DMA_F_SRC_HOST | NEURON_DMA_F_DST_HOST,
                                  .cookie = 4};

    /* The doorbell only kicks; nothing is copied on the MMIO path. */
    wr(e, NEURON_DMA_BASE(1) + NEURON_DMA_TAIL, 4);
    assert_true(atomic_load(&e->kicks) > 0);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_HEAD), 0);
    assert_int_equal(dma_desc(e, 0, 8)->status, 0);

    drain(e);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_HEAD), 4);
    for (uint32_t i = 0; i < 4; i++) {
        assert_int_equal(dma_desc(e, i, 8)->status, NEURON_DMA_DONE);
        assert_int_equal(dma_desc(e, i, 8)->cookie, i + 1);
    }
    assert_memory_equal(e->devmem + 0x1000, src, len);
    assert_memory_equal(e->devmem + 0x80000, src, len);
    assert_memory_equal(back, src, len);
    assert_memory_equal(h2h, src, len);
    assert_int_equal(atomic_load(&e->irqs[vec]), 2);
    assert_int_equal(rd(e, NEURON_REG_IRQ_STATUS), NEURON_IRQ_DMA(1));
    assert_int_equal(rd64(e, NEURON_DMA_BASE(1) + NEURON_DMA_CNT_BYTES_LO), 4ull * len);
    assert_int_equal(rd64(e, NEURON_DMA_BASE(1) + NEURON_DMA_CNT_DESCS_LO), 4);
    assert_int_equal(rd64(e, NEURON_DMA_BASE(1) + NEURON_DMA_CNT_ERRORS_LO), 0);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_STATUS), NEURON_DMA_STATUS_ENABLED);

    /* Wrap around the 8-entry ring: 12 more small copies. */
    for (uint32_t i = 4; i < 16; i++) {
        d = dma_desc(e, i, 8);
        *d = (struct neuron_dma_desc){
            .src = DATA + i, .dst = 0x100 + i, .len = 1, .flags = NEURON_DMA_F_SRC_HOST};
        if (i == 11 || i == 15) {
            wr(e, NEURON_DMA_BASE(1) + NEURON_DMA_TAIL, i + 1);
            drain(e);
        }
    }
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_HEAD), 16);
    assert_memory_equal(e->devmem + 0x104, src + 4, 12);
}

static void test_dma_errors(void **state) {
    env *e = *state;
    static const struct {
        uint64_t src, dst;
        uint32_t len, flags, err;
    } cases[] = {
        {0, 0x100, 0, 0, NEURON_DMA_ERR_LEN},
        {0, 0x100, NEURON_DMA_MAX_LEN + 1, 0, NEURON_DMA_ERR_LEN},
        {0, 0x100, 16, 1u << 7, NEURON_DMA_ERR_FLAGS},
        {DEV_SIZE - 8, 0x100, 16, 0, NEURON_DMA_ERR_SRC_RANGE},
        {DEV_SIZE, 0x100, 1, 0, NEURON_DMA_ERR_SRC_RANGE},
        {UINT64_MAX - 4, 0x100, 16, 0, NEURON_DMA_ERR_SRC_RANGE}, /* wraps */
        {0x100, DEV_SIZE - 15, 16, 0, NEURON_DMA_ERR_DST_RANGE},
        {0x100, UINT64_MAX, 2, 0, NEURON_DMA_ERR_DST_RANGE},
        {UINT64_MAX - 1, 0x100, 16, NEURON_DMA_F_SRC_HOST, NEURON_DMA_ERR_SRC_RANGE},
        {0x100, 1ull << 48, 16, NEURON_DMA_F_DST_HOST, NEURON_DMA_ERR_DST_RANGE},
        {0x10, 0x100, 16, NEURON_DMA_F_SRC_HOST, NEURON_DMA_ERR_HOST}, /* unmapped */
        {0x100, HOST_BASE + HOST_SIZE - 8, 16, NEURON_DMA_F_DST_HOST, NEURON_DMA_ERR_HOST},
    };
    const uint32_t n = sizeof(cases) / sizeof(cases[0]);
    uint32_t vec = NEURON_MSIX_DMA(2, 0);

    dma_setup(e, 0, 16);
    for (uint32_t i = 0; i < n; i++)
        *dma_desc(e, i, 16) = (struct neuron_dma_desc){
            .src = cases[i].src, .dst = cases[i].dst, .len = cases[i].len, .flags = cases[i].flags};
    wr(e, NEURON_DMA_BASE(0) + NEURON_DMA_TAIL, n);
    drain(e);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(dma_desc(e, i, 16)->status, NEURON_DMA_DONE | cases[i].err);
    /* Errors do not halt the engine and always interrupt. */
    assert_int_equal(rd(e, NEURON_DMA_BASE(0) + NEURON_DMA_HEAD), n);
    assert_int_equal(rd(e, NEURON_DMA_BASE(0) + NEURON_DMA_STATUS), NEURON_DMA_STATUS_ENABLED);
    assert_int_equal(rd64(e, NEURON_DMA_BASE(0) + NEURON_DMA_CNT_ERRORS_LO), n);
    assert_int_equal(atomic_load(&e->irqs[vec]), n);

    /* A ring that cannot be read halts the engine. */
    wr(e, NEURON_DMA_BASE(1) + NEURON_DMA_RING_LO, 0x1000);
    wr(e, NEURON_DMA_BASE(1) + NEURON_DMA_RING_ENTRIES, 4);
    wr(e, NEURON_DMA_BASE(1) + NEURON_DMA_CTRL, NEURON_DMA_CTRL_ENABLE);
    wr(e, NEURON_DMA_BASE(1) + NEURON_DMA_TAIL, 1);
    drain(e);
    assert_true(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_STATUS) & NEURON_DMA_STATUS_HALTED);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_ERROR), NEURON_Q_ERR_RING_FETCH);
    assert_true(rd(e, NEURON_REG_IRQ_STATUS) & NEURON_IRQ_ERROR);
    assert_int_equal(atomic_load(&e->irqs[NEURON_MSIX_ERROR(2, 2)]), 1);
    /* The engine reset clears the halt. */
    wr(e, NEURON_DMA_BASE(1) + NEURON_DMA_CTRL, NEURON_DMA_CTRL_RESET);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_CTRL), NEURON_DMA_CTRL_RESET);
    drain(e);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_CTRL), 0);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_STATUS), 0);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_ERROR), 0);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_TAIL), 0);

    /* TAIL beyond HEAD + entries halts with NEURON_Q_ERR_TAIL. */
    dma_setup(e, 1, 4);
    wr(e, NEURON_DMA_BASE(1) + NEURON_DMA_TAIL, 5);
    drain(e);
    assert_int_equal(rd(e, NEURON_DMA_BASE(1) + NEURON_DMA_ERROR), NEURON_Q_ERR_TAIL);
}

static void test_ring_config(void **state) {
    env *e = *state;
    const uint64_t q = NEURON_QUEUE_BASE(0);
    static const struct {
        uint64_t ring, cpl;
        uint32_t entries, cpl_entries;
    } bad[] = {
        {JOB_RING, CPL_RING, 0, 4},     {JOB_RING, CPL_RING, 3, 4},
        {JOB_RING, CPL_RING, 1, 4},     {JOB_RING, CPL_RING, 8192, 4},
        {JOB_RING + 8, CPL_RING, 4, 4}, {JOB_RING, CPL_RING + 16, 4, 4},
        {1ull << 48, CPL_RING, 4, 4},   {(1ull << 48) - 64, CPL_RING, 4, 4},
        {JOB_RING, CPL_RING, 4, 6},
    };

    for (uint32_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        wr(e, q + NEURON_Q_RING_LO, (uint32_t)bad[i].ring);
        wr(e, q + NEURON_Q_RING_HI, (uint32_t)(bad[i].ring >> 32));
        wr(e, q + NEURON_Q_RING_ENTRIES, bad[i].entries);
        wr(e, q + NEURON_Q_CPL_LO, (uint32_t)bad[i].cpl);
        wr(e, q + NEURON_Q_CPL_HI, (uint32_t)(bad[i].cpl >> 32));
        wr(e, q + NEURON_Q_CPL_ENTRIES, bad[i].cpl_entries);
        wr(e, q + NEURON_Q_CTRL, NEURON_Q_CTRL_ENABLE);
        assert_int_equal(rd(e, q + NEURON_Q_STATUS), NEURON_Q_STATUS_HALTED);
        assert_int_equal(rd(e, q + NEURON_Q_ERROR), NEURON_Q_ERR_RING_CONFIG);
        assert_int_equal(rd(e, q + NEURON_Q_CTRL), 0);
        /* A halted queue stays halted until a core reset. */
        wr(e, q + NEURON_Q_CTRL, NEURON_Q_CTRL_RESET);
        assert_int_equal(rd(e, q + NEURON_Q_STATUS),
                         NEURON_Q_STATUS_HALTED | NEURON_Q_STATUS_RESETTING);
        drain(e);
        assert_int_equal(rd(e, q + NEURON_Q_STATUS), 0);
        assert_int_equal(rd(e, q + NEURON_Q_ERROR), 0);
    }
    assert_int_equal(atomic_load(&e->irqs[NEURON_MSIX_ERROR(2, 2)]), sizeof(bad) / sizeof(bad[0]));

    /* A good config enables; ring registers are then frozen. */
    wr(e, q + NEURON_Q_RING_LO, (uint32_t)JOB_RING);
    wr(e, q + NEURON_Q_RING_HI, 0);
    wr(e, q + NEURON_Q_RING_ENTRIES, 4);
    wr(e, q + NEURON_Q_CPL_LO, (uint32_t)CPL_RING);
    wr(e, q + NEURON_Q_CPL_HI, 0);
    wr(e, q + NEURON_Q_CPL_ENTRIES, 4);
    wr(e, q + NEURON_Q_CTRL, NEURON_Q_CTRL_ENABLE);
    assert_int_equal(rd(e, q + NEURON_Q_STATUS), NEURON_Q_STATUS_ENABLED);
    assert_int_equal(rd(e, q + NEURON_Q_CTRL), NEURON_Q_CTRL_ENABLE);
    wr(e, q + NEURON_Q_RING_ENTRIES, 16);
    wr(e, q + NEURON_Q_CPL_LO, 0);
    assert_int_equal(rd(e, q + NEURON_Q_RING_ENTRIES), 4);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_LO), (uint32_t)CPL_RING);
    /* CPL_HEAD cannot pass CPL_TAIL. */
    wr(e, q + NEURON_Q_CPL_HEAD, 1);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_HEAD), 0);
    /* TAIL too far ahead halts the queue. */
    wr(e, q + NEURON_Q_TAIL, 5);
    drain(e);
    assert_int_equal(rd(e, q + NEURON_Q_ERROR), NEURON_Q_ERR_TAIL);
    assert_int_equal(rd(e, q + NEURON_Q_HEAD), 0);
}

/* ---------------------------------------------------------------------- */
/* Job queues */

/* Program image in device memory at @off: a Sync stream of @n instructions. */
static void put_program(env *e, uint64_t off, const struct neuron_insn *insns, uint32_t n) {
    struct neuron_prog_header h = {
        .magic = NEURON_PROG_MAGIC,
        .version_major = NEURON_ISA_VERSION_MAJOR,
        .version_minor = NEURON_ISA_VERSION_MINOR,
        .header_size = sizeof(h),
        .image_size = (uint32_t)(sizeof(h) + n * sizeof(*insns)),
    };

    h.stream[NEURON_ENGINE_INDEX(NEURON_ENGINE_SYNC)].offset = sizeof(h);
    h.stream[NEURON_ENGINE_INDEX(NEURON_ENGINE_SYNC)].count = n;
    memcpy(e->devmem + off, &h, sizeof(h));
    memcpy(e->devmem + off + sizeof(h), insns, n * sizeof(*insns));
}

static const struct neuron_insn prog_end[] = {{.opcode = NEURON_OP_END}};
static const struct neuron_insn prog_notify[] = {
    {.opcode = NEURON_OP_NOTIFY, .arg = 77},
    {.opcode = NEURON_OP_END},
};
static const struct neuron_insn prog_forever[] = {
    {.opcode = NEURON_OP_NOP},
    {.opcode = NEURON_OP_LOOP, .func = 0, .arg = 0, .imm = {NEURON_LOOP_INFINITE}},
};

#define PROG_END 0x0
#define PROG_NOTIFY 0x1000
#define PROG_FOREVER 0x2000

static void queue_setup(env *e, uint32_t core, uint32_t entries, uint32_t cpl_entries) {
    const uint64_t q = NEURON_QUEUE_BASE(core);
    struct neuron_binding *b = hp(e, BIND_TAB);

    put_program(e, PROG_END, prog_end, 1);
    put_program(e, PROG_NOTIFY, prog_notify, 2);
    put_program(e, PROG_FOREVER, prog_forever, 2);
    b[0] = (struct neuron_binding){
        .addr = 0, .size = 0x4000, .flags = NEURON_BIND_READ | NEURON_BIND_EXEC};
    b[1] = (struct neuron_binding){.addr = 0x10000, .size = 0x1000, .flags = NEURON_BIND_READ};

    wr(e, q + NEURON_Q_RING_LO, (uint32_t)JOB_RING);
    wr(e, q + NEURON_Q_RING_HI, 0);
    wr(e, q + NEURON_Q_RING_ENTRIES, entries);
    wr(e, q + NEURON_Q_CPL_LO, (uint32_t)CPL_RING);
    wr(e, q + NEURON_Q_CPL_HI, 0);
    wr(e, q + NEURON_Q_CPL_ENTRIES, cpl_entries);
    wr(e, q + NEURON_Q_CTRL, NEURON_Q_CTRL_ENABLE);
    assert_int_equal(rd(e, q + NEURON_Q_STATUS), NEURON_Q_STATUS_ENABLED);
}

static void put_job(env *e, uint32_t idx, uint32_t entries, uint64_t prog, uint64_t id,
                    uint32_t flags) {
    struct neuron_job_desc *d = (struct neuron_job_desc *)hp(e, JOB_RING) + (idx % entries);

    *d = (struct neuron_job_desc){
        .bindings_addr = BIND_TAB,
        .num_bindings = 2,
        .flags = flags,
        .program_binding = 0,
        .program_size = 0x1000,
        .program_offset = prog,
        .job_id = id,
    };
}

static struct neuron_cpl_entry *cpl(env *e, uint32_t idx, uint32_t entries) {
    return (struct neuron_cpl_entry *)hp(e, CPL_RING) + (idx % entries);
}

static void test_job_completes(void **state) {
    env *e = *state;
    const uint64_t q = NEURON_QUEUE_BASE(1);
    struct neuron_cpl_entry *c;

    queue_setup(e, 1, 8, 8);
    put_job(e, 0, 8, PROG_END, 0x1111222233334444ull, NEURON_JOB_F_IRQ);
    put_job(e, 1, 8, PROG_NOTIFY, 0x55, NEURON_JOB_F_IRQ);
    wr(e, q + NEURON_Q_TAIL, 2);
    /* Nothing runs on the MMIO path. */
    assert_int_equal(rd(e, q + NEURON_Q_HEAD), 0);
    drain(e);

    assert_int_equal(rd(e, q + NEURON_Q_HEAD), 2);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_TAIL), 3);
    c = cpl(e, 0, 8);
    assert_int_equal(c->job_id, 0x1111222233334444ull);
    assert_int_equal(c->status, NEURON_JOB_STATUS_OK);
    assert_int_equal(c->flags, NEURON_CPL_F_FINAL | NEURON_CPL_F_PHASE);
    c = cpl(e, 1, 8);
    assert_int_equal(c->job_id, 0x55);
    assert_int_equal(c->status, NEURON_JOB_STATUS_NOTIFY);
    assert_int_equal(c->info, 77);
    assert_int_equal(c->flags, NEURON_CPL_F_PHASE);
    c = cpl(e, 2, 8);
    assert_int_equal(c->status, NEURON_JOB_STATUS_OK);
    assert_int_equal(c->flags, NEURON_CPL_F_FINAL | NEURON_CPL_F_PHASE);
    assert_true(c->cycles > 0);

    assert_int_equal(atomic_load(&e->irqs[NEURON_MSIX_QUEUE(1)]), 3);
    assert_int_equal(rd(e, NEURON_REG_IRQ_STATUS), NEURON_IRQ_QUEUE(1));
    assert_int_equal(rd64(e, q + NEURON_Q_CNT_JOBS_LO), 2);
    assert_int_equal(rd64(e, q + NEURON_Q_CNT_FAULTS_LO), 0);
    assert_true(rd64(e, q + NEURON_Q_CNT_INSTR_LO) >= 3);
    assert_true(rd64(e, q + NEURON_Q_CNT_BUSY_NS_LO) > 0);
    assert_int_equal(rd(e, q + NEURON_Q_CUR_JOB_LO), 0x55);
    assert_int_equal(rd(e, q + NEURON_Q_STATUS), NEURON_Q_STATUS_ENABLED);

    /* Disabling stops fetching; jobs wait until it is enabled again. */
    wr(e, q + NEURON_Q_CTRL, 0);
    put_job(e, 2, 8, PROG_END, 3, 0);
    wr(e, q + NEURON_Q_TAIL, 3);
    drain(e);
    assert_int_equal(rd(e, q + NEURON_Q_HEAD), 2);
    wr(e, q + NEURON_Q_CTRL, NEURON_Q_CTRL_ENABLE);
    drain(e);
    assert_int_equal(rd(e, q + NEURON_Q_HEAD), 3);
    assert_int_equal(atomic_load(&e->irqs[NEURON_MSIX_QUEUE(1)]), 3); /* no F_IRQ */
}

/* A profiled job: its trace agrees with the completion entry and the counters. */
static void test_job_profile(void **state) {
    env *e = *state;
    const uint64_t q = NEURON_QUEUE_BASE(0);
    struct neuron_binding *b = hp(e, BIND_TAB);
    struct neuron_job_desc *d = hp(e, JOB_RING);
    const struct neuron_tap sbuf = {.space = NEURON_SPACE_SBUF,
                                    .dtype = NEURON_DT_FP32,
                                    .part_count = 2,
                                    .count = {64, 1},
                                    .stride = {1, 0}};
    struct neuron_insn prog[4] = {{.opcode = NEURON_OP_DMA_LOAD},
                                  {.opcode = NEURON_OP_NOTIFY, .arg = 5},
                                  {.opcode = NEURON_OP_DMA_STORE},
                                  {.opcode = NEURON_OP_END}};
    const uint64_t trace_at = 0x20000, trace_size = 0x1000;
    const struct neuron_trace_header *h = (const void *)(e->devmem + trace_at);
    const struct neuron_trace_record *r = (const void *)(h + 1);

    for (int i = 0; i < 3; i += 2) {
        prog[i].dma.sbuf = sbuf;
        prog[i].dma.dram.slot = 1;
        prog[i].dma.dram.part_stride = 256;
        prog[i].dma.dram.stride[0] = 4;
    }
    queue_setup(e, 0, 8, 8);
    put_program(e, 0x3000, prog, 4);
    b[1].flags = NEURON_BIND_READ | NEURON_BIND_WRITE;
    b[2] =
        (struct neuron_binding){.addr = trace_at, .size = trace_size, .flags = NEURON_BIND_WRITE};
    memset(e->devmem + trace_at, 0xa5, trace_size);

    put_job(e, 0, 8, 0x3000, 7, NEURON_JOB_F_IRQ | NEURON_JOB_F_PROFILE);
    d[0].num_bindings = 3;
    d[0].trace_binding = 2;
    /* PROFILE naming a slot the table does not have; trace_binding without PROFILE. */
    put_job(e, 1, 8, 0x3000, 8, NEURON_JOB_F_PROFILE);
    d[1].num_bindings = 3;
    d[1].trace_binding = 3;
    put_job(e, 2, 8, 0x3000, 9, 0);
    d[2].num_bindings = 3;
    d[2].trace_binding = 2;
    wr(e, q + NEURON_Q_TAIL, 3);
    drain(e);

    assert_int_equal(rd(e, q + NEURON_Q_CPL_TAIL), 4);
    const struct neuron_cpl_entry *c = cpl(e, 1, 8);
    assert_int_equal(c->job_id, 7);
    assert_int_equal(c->status, NEURON_JOB_STATUS_OK);
    assert_int_equal(h->magic, NEURON_TRACE_MAGIC);
    assert_int_equal(h->status, NEURON_JOB_STATUS_OK);
    assert_int_equal(h->cycles, c->cycles);
    assert_int_equal(h->records, 4);
    assert_int_equal(h->instructions, rd64(e, q + NEURON_Q_CNT_INSTR_LO));
    assert_int_equal(h->dma_bytes, rd64(e, q + NEURON_Q_CNT_DMA_BYTES_LO));
    assert_int_equal(h->dma_bytes, 2 * 2 * 256);
    assert_int_equal(r[3].end, c->cycles);
    assert_int_equal(r[0].bytes + r[2].bytes, h->dma_bytes);
    assert_int_equal(r[1].opcode, NEURON_OP_NOTIFY);
    assert_int_equal(r[2].index, 2);
    assert_int_equal(cpl(e, 2, 8)->status, NEURON_JOB_STATUS_BAD_DESC);
    assert_int_equal(cpl(e, 3, 8)->status, NEURON_JOB_STATUS_BAD_DESC);
    /* Jobs that did not run wrote no trace and counted nothing. */
    assert_int_equal(h->instructions, rd64(e, q + NEURON_Q_CNT_INSTR_LO));
    assert_true(rd(e, NEURON_REG_CAPS) & NEURON_CAP_PROFILE);
}

static void test_job_faults(void **state) {
    env *e = *state;
    const uint64_t q = NEURON_QUEUE_BASE(0);
    struct neuron_job_desc *d = hp(e, JOB_RING);
    struct neuron_binding *b = hp(e, BIND_TAB);
    uint32_t i = 0;

    queue_setup(e, 0, 16, 16);
    /* Descriptor checks. */
    put_job(e, i, 16, PROG_END, 100, 0);
    d[i++].num_bindings = 0;
    put_job(e, i, 16, PROG_END, 101, 0);
    d[i++].num_bindings = NEURON_MAX_BINDINGS + 1;
    put_job(e, i, 16, PROG_END, 102, 0);
    d[i++].flags = 0x80;
    put_job(e, i, 16, PROG_END, 103, 0);
    d[i++].program_binding = 2;
    put_job(e, i, 16, PROG_END, 104, 0);
    d[i++].reserved[1] = 1;
    put_job(e, i, 16, PROG_END, 105, 0);
    d[i++].bindings_addr = UINT64_MAX - 8;
    /* The binding table is unreadable. */
    put_job(e, i, 16, PROG_END, 106, 0);
    d[i++].bindings_addr = 0x1000;
    /* Not a program image. */
    put_job(e, i, 16, 0x3000, 107, 0);
    i++;
    wr(e, q + NEURON_Q_TAIL, i);
    drain(e);
    assert_int_equal(rd(e, q + NEURON_Q_HEAD), i);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_TAIL), i);
    for (uint32_t j = 0; j < 6; j++) {
        assert_int_equal(cpl(e, j, 16)->job_id, 100 + j);
        assert_int_equal(cpl(e, j, 16)->status, NEURON_JOB_STATUS_BAD_DESC);
        assert_true(cpl(e, j, 16)->flags & NEURON_CPL_F_FINAL);
    }
    assert_int_equal(cpl(e, 6, 16)->status, NEURON_JOB_STATUS_HOST_DMA);
    assert_int_equal(cpl(e, 7, 16)->status, NEURON_JOB_STATUS_BAD_PROGRAM);
    assert_int_equal(rd64(e, q + NEURON_Q_CNT_FAULTS_LO), i);
    /* Faults are per job: the queue keeps running. */
    assert_int_equal(rd(e, q + NEURON_Q_STATUS), NEURON_Q_STATUS_ENABLED);

    /* A bad binding, then a good job. */
    b[1].reserved = 1;
    put_job(e, i, 16, PROG_END, 200, 0);
    b[2] = b[0];
    put_job(e, i + 1, 16, PROG_END, 201, 0);
    d[i + 1].bindings_addr = BIND_TAB + 2 * sizeof(*b);
    d[i + 1].num_bindings = 1;
    wr(e, q + NEURON_Q_TAIL, i + 2);
    drain(e);
    assert_int_equal(cpl(e, i, 16)->status, NEURON_JOB_STATUS_BAD_BINDING);
    assert_int_equal(cpl(e, i + 1, 16)->status, NEURON_JOB_STATUS_OK);

    /* A job ring that cannot be read halts the queue. */
    wr(e, q + NEURON_Q_CTRL, 0);
    wr(e, q + NEURON_Q_CTRL, NEURON_Q_CTRL_RESET);
    drain(e);
    wr(e, q + NEURON_Q_RING_LO, 0x1000);
    wr(e, q + NEURON_Q_CTRL, NEURON_Q_CTRL_ENABLE);
    wr(e, q + NEURON_Q_TAIL, 1);
    drain(e);
    assert_int_equal(rd(e, q + NEURON_Q_STATUS), NEURON_Q_STATUS_ENABLED | NEURON_Q_STATUS_HALTED);
    assert_int_equal(rd(e, q + NEURON_Q_ERROR), NEURON_Q_ERR_RING_FETCH);
    assert_true(atomic_load(&e->irqs[NEURON_MSIX_ERROR(2, 2)]) >= 1);
}

static void test_ring_wrap(void **state) {
    env *e = *state;
    const uint64_t q = NEURON_QUEUE_BASE(0);
    uint32_t done = 0;

    queue_setup(e, 0, 4, 4);
    /* 11 jobs through 4-entry rings: three passes, the phase flips each pass. */
    for (uint32_t job = 0; job < 11;) {
        uint32_t batch = 11 - job < 3 ? 11 - job : 3;

        for (uint32_t k = 0; k < batch; k++, job++)
            put_job(e, job, 4, PROG_END, 1000 + job, 0);
        wr(e, q + NEURON_Q_TAIL, job);
        drain(e);
        for (; done < job; done++) {
            struct neuron_cpl_entry *c = cpl(e, done, 4);

            assert_int_equal(c->job_id, 1000 + done);
            assert_int_equal(c->status, NEURON_JOB_STATUS_OK);
            assert_int_equal(c->flags & NEURON_CPL_F_PHASE,
                             (done / 4) % 2 ? 0 : NEURON_CPL_F_PHASE);
        }
        wr(e, q + NEURON_Q_CPL_HEAD, done);
    }
    assert_int_equal(rd(e, q + NEURON_Q_HEAD), 11);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_TAIL), 11);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_HEAD), 11);
}

static void test_cpl_full_stalls(void **state) {
    env *e = *state;
    const uint64_t q = NEURON_QUEUE_BASE(0);
    unsigned kicks;

    queue_setup(e, 0, 8, 2);
    for (uint32_t j = 0; j < 5; j++)
        put_job(e, j, 8, PROG_END, 500 + j, 0);
    wr(e, q + NEURON_Q_TAIL, 5);
    drain(e);
    /* Two entries posted; the third job ran and waits; nothing is dropped. */
    assert_int_equal(rd(e, q + NEURON_Q_CPL_TAIL), 2);
    assert_int_equal(rd(e, q + NEURON_Q_HEAD), 3);
    assert_false(nm_device_core_step(e->dev, 0));
    assert_int_equal(rd(e, q + NEURON_Q_CPL_TAIL), 2);

    /* Consuming one entry kicks the core, which posts and runs one more. */
    kicks = atomic_load(&e->kicks);
    wr(e, q + NEURON_Q_CPL_HEAD, 1);
    assert_int_equal(atomic_load(&e->kicks), kicks + 1);
    drain(e);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_TAIL), 3);
    assert_int_equal(rd(e, q + NEURON_Q_HEAD), 4);
    assert_int_equal(cpl(e, 2, 2)->job_id, 502);
    assert_int_equal(cpl(e, 2, 2)->flags & NEURON_CPL_F_PHASE, 0);

    wr(e, q + NEURON_Q_CPL_HEAD, 3);
    drain(e);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_TAIL), 5);
    wr(e, q + NEURON_Q_CPL_HEAD, 6);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_HEAD), 3); /* past CPL_TAIL: ignored */
    wr(e, q + NEURON_Q_CPL_HEAD, 2);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_HEAD), 3); /* backwards: ignored */
    assert_int_equal(cpl(e, 4, 2)->job_id, 504);
    assert_int_equal(rd64(e, q + NEURON_Q_CNT_JOBS_LO), 5);
}

/* The core's worker, for tests that need a job running meanwhile. */
static int worker(void *arg) {
    env *e = arg;

    while (nm_device_core_step(e->dev, 0))
        ;
    return 0;
}

static void wait_for(env *e, uint64_t off, uint32_t mask, uint32_t want) {
    for (int i = 0; i < 5000; i++) {
        if ((rd(e, off) & mask) == want)
            return;
        thrd_sleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    fail_msg("register 0x%llx never reached 0x%x", (unsigned long long)off, want);
}

static void test_core_reset_aborts(void **state) {
    env *e = *state;
    const uint64_t q = NEURON_QUEUE_BASE(0);
    thrd_t t;

    queue_setup(e, 0, 4, 4);
    put_job(e, 0, 4, PROG_FOREVER, 42, NEURON_JOB_F_IRQ);
    put_job(e, 1, 4, PROG_END, 43, 0);
    wr(e, q + NEURON_Q_TAIL, 2);
    assert_int_equal(thrd_create(&t, worker, e), thrd_success);
    wait_for(e, q + NEURON_Q_STATUS, NEURON_Q_STATUS_BUSY, NEURON_Q_STATUS_BUSY);
    assert_int_equal(rd(e, q + NEURON_Q_CUR_JOB_LO), 42);

    wr(e, q + NEURON_Q_CTRL, NEURON_Q_CTRL_RESET);
    thrd_join(t, NULL);
    assert_int_equal(rd(e, q + NEURON_Q_CTRL), 0);
    assert_int_equal(rd(e, q + NEURON_Q_STATUS), 0);
    assert_int_equal(rd(e, q + NEURON_Q_HEAD), 0);
    assert_int_equal(rd(e, q + NEURON_Q_TAIL), 0);
    assert_int_equal(rd(e, q + NEURON_Q_CPL_TAIL), 0);
    /* The running job was reported, the queued one discarded. */
    assert_int_equal(cpl(e, 0, 4)->job_id, 42);
    assert_int_equal(cpl(e, 0, 4)->status, NEURON_JOB_STATUS_ABORTED);
    assert_int_equal(cpl(e, 0, 4)->flags, NEURON_CPL_F_FINAL | NEURON_CPL_F_PHASE);
    assert_int_equal(cpl(e, 1, 4)->job_id, 0);
    /* The ring configuration survives; the queue works again. */
    assert_int_equal(rd(e, q + NEURON_Q_RING_ENTRIES), 4);
    memset(hp(e, CPL_RING), 0, 4 * sizeof(struct neuron_cpl_entry));
    wr(e, q + NEURON_Q_CTRL, NEURON_Q_CTRL_ENABLE);
    put_job(e, 0, 4, PROG_END, 44, 0);
    wr(e, q + NEURON_Q_TAIL, 1);
    drain(e);
    assert_int_equal(cpl(e, 0, 4)->job_id, 44);
    assert_int_equal(cpl(e, 0, 4)->status, NEURON_JOB_STATUS_OK);
}

static void test_device_reset(void **state) {
    env *e = *state;
    const uint64_t q = NEURON_QUEUE_BASE(0);
    thrd_t t;

    /* Some state everywhere, and a job that never ends. */
    wr(e, NEURON_REG_SCRATCH, 5);
    wr(e, NEURON_REG_IRQ_MASK, NEURON_IRQ_DMA(0));
    dma_setup(e, 0, 4);
    *dma_desc(e, 0, 4) = (struct neuron_dma_desc){.src = 0, .dst = 0x100, .len = 16};
    wr(e, NEURON_DMA_BASE(0) + NEURON_DMA_TAIL, 1);
    drain(e);
    assert_int_equal(rd(e, NEURON_DMA_BASE(0) + NEURON_DMA_HEAD), 1);
    queue_setup(e, 0, 4, 4);
    put_job(e, 0, 4, PROG_FOREVER, 42, 0);
    wr(e, q + NEURON_Q_TAIL, 1);
    assert_int_equal(thrd_create(&t, worker, e), thrd_success);
    wait_for(e, q + NEURON_Q_STATUS, NEURON_Q_STATUS_BUSY, NEURON_Q_STATUS_BUSY);

    wr(e, NEURON_REG_DEV_CTRL, NEURON_DEV_CTRL_RESET);
    thrd_join(t, NULL);
    wait_for(e, NEURON_REG_DEV_STATUS, ~0u, NEURON_DEV_STATUS_READY);
    assert_int_equal(rd(e, NEURON_REG_DEV_CTRL), 0);
    assert_int_equal(rd(e, NEURON_REG_RESET_COUNT), 1);
    assert_int_equal(rd(e, NEURON_REG_SCRATCH), 0);
    assert_int_equal(rd(e, NEURON_REG_IRQ_MASK), 0);
    assert_int_equal(rd(e, NEURON_REG_IRQ_STATUS), 0);
    for (uint32_t r = 0; r <= NEURON_Q_CNT_FAULTS_HI; r += 4)
        assert_int_equal(rd(e, q + r), 0);
    for (uint32_t r = 0; r <= NEURON_DMA_CNT_ERRORS_HI; r += 4)
        assert_int_equal(rd(e, NEURON_DMA_BASE(0) + r), 0);
    /* No completion for jobs lost in a device reset. */
    assert_int_equal(cpl(e, 0, 4)->job_id, 0);

    /* The device works again. */
    queue_setup(e, 0, 4, 4);
    put_job(e, 0, 4, PROG_END, 7, 0);
    wr(e, q + NEURON_Q_TAIL, 1);
    drain(e);
    assert_int_equal(cpl(e, 0, 4)->job_id, 7);
    assert_int_equal(cpl(e, 0, 4)->status, NEURON_JOB_STATUS_OK);

    /* A reset with nothing running completes at once. */
    wr(e, NEURON_REG_DEV_CTRL, NEURON_DEV_CTRL_RESET);
    assert_int_equal(rd(e, NEURON_REG_DEV_STATUS), NEURON_DEV_STATUS_READY);
    assert_int_equal(rd(e, NEURON_REG_RESET_COUNT), 2);
    /* A power-on (PCI) reset clears the count. */
    nm_device_reset(e->dev, true);
    assert_int_equal(rd(e, NEURON_REG_RESET_COUNT), 0);
    assert_int_equal(rd(e, NEURON_REG_DEV_STATUS), NEURON_DEV_STATUS_READY);
}

static void test_inject_fatal(void **state) {
    env *e = *state;
    const uint64_t q = NEURON_QUEUE_BASE(0);

    queue_setup(e, 0, 4, 4);
    dma_setup(e, 0, 4);
    wr(e, NEURON_REG_INJECT, NEURON_INJECT_FATAL);
    assert_int_equal(rd(e, NEURON_REG_DEV_STATUS), NEURON_DEV_STATUS_FATAL);
    assert_int_equal(rd(e, NEURON_REG_FATAL_CAUSE), NEURON_FATAL_INJECTED);
    assert_int_equal(rd(e, NEURON_REG_IRQ_STATUS), NEURON_IRQ_ERROR);
    assert_int_equal(atomic_load(&e->irqs[NEURON_MSIX_ERROR(2, 2)]), 1);
    /* A fatal device does no work. */
    put_job(e, 0, 4, PROG_END, 1, 0);
    wr(e, q + NEURON_Q_TAIL, 1);
    *dma_desc(e, 0, 4) = (struct neuron_dma_desc){.src = 0, .dst = 0x100, .len = 16};
    wr(e, NEURON_DMA_BASE(0) + NEURON_DMA_TAIL, 1);
    drain(e);
    assert_int_equal(rd(e, q + NEURON_Q_HEAD), 0);
    assert_int_equal(rd(e, NEURON_DMA_BASE(0) + NEURON_DMA_HEAD), 0);
    /* Injecting again changes nothing. */
    wr(e, NEURON_REG_INJECT, NEURON_INJECT_FATAL);
    assert_int_equal(atomic_load(&e->irqs[NEURON_MSIX_ERROR(2, 2)]), 1);
    /* Only a device reset recovers. */
    wr(e, NEURON_REG_DEV_CTRL, NEURON_DEV_CTRL_RESET);
    assert_int_equal(rd(e, NEURON_REG_DEV_STATUS), NEURON_DEV_STATUS_READY);
    assert_int_equal(rd(e, NEURON_REG_FATAL_CAUSE), NEURON_FATAL_NONE);
    assert_int_equal(rd(e, NEURON_REG_RESET_COUNT), 1);
}

static void test_counter_latch(void **state) {
    env *e = *state;
    uint64_t off = NEURON_DMA_BASE(0) + NEURON_DMA_CNT_BYTES_LO;

    dma_setup(e, 0, 4);
    *dma_desc(e, 0, 4) = (struct neuron_dma_desc){.src = 0, .dst = 0x80000, .len = 0x40000};
    wr(e, NEURON_DMA_BASE(0) + NEURON_DMA_TAIL, 1);
    drain(e);
    /* HI returns the value latched by the last LO read. */
    assert_int_equal(rd(e, off + 4), 0);
    assert_int_equal(rd(e, off), 0x40000);
    assert_int_equal(rd(e, off + 4), 0);
    *dma_desc(e, 1, 4) = (struct neuron_dma_desc){.src = 0, .dst = 0x80000, .len = 0x40000};
    wr(e, NEURON_DMA_BASE(0) + NEURON_DMA_TAIL, 2);
    drain(e);
    assert_int_equal(rd(e, off + 4), 0);
    assert_int_equal(rd(e, off), 0x80000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_register_semantics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dma_copies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dma_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ring_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_completes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ring_wrap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cpl_full_stalls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_core_reset_aborts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inject_fatal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counter_latch, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
