/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * neuron: an emulated machine-learning accelerator (PCIe device)
 *
 * This file glues the QEMU-independent device model (model/device.c and
 * the NeuronCore interpreter) to PCI: BAR0 holds the 64 KiB of 32-bit
 * registers of hw/neuron_regs.h, BAR2 the MSI-X table and PBA (one vector
 * per core queue, one per DMA engine, one for errors), BAR4 the device
 * memory, a 64-bit prefetchable RAM region sized by "mem-size".
 *
 * Execution happens off the vCPU threads: one worker thread per core job
 * queue and one per DMA engine. A register write that creates work only
 * records it in the model and kicks the unit's worker; the worker runs the
 * model's step function until it reports nothing left.
 *
 * Guest memory is reached only through pci_dma_read()/pci_dma_write() on
 * the device's bus-master address space, so an emulated IOMMU translates
 * and checks every access. Workers access RAM only: a target that is not
 * directly accessible RAM (MMIO of another device, unassigned space) fails
 * like an IOMMU fault. MMIO dispatch would take the BQL on the worker,
 * and the main loop joins the workers with the BQL held (unrealize), so
 * allowing it could deadlock; peer-to-peer DMA is not part of the device.
 *
 * Interrupts: workers never take the BQL. raise_irq() records the vector
 * in an atomic mask and has a thread that holds the BQL call msix_notify():
 * the vCPU that rang the unit's doorbell last, through async_run_on_cpu(),
 * or, when there is none (a reset, the error vector) or "x-irq-on-vcpu" is
 * off, a bottom half in the main loop. Both drain the whole mask. The vCPU
 * is the one that must be woken for the interrupt anyway when the driver
 * steers a ring's vector to its submitting CPU, so the completion reaches
 * it in one host-thread hand-off (worker -> vCPU) instead of two (worker
 * -> main loop -> vCPU); if the vector targets another CPU, msix_notify()
 * kicks that one as before. The work item holds a reference to the device
 * and does nothing once unrealize has run. Taking the BQL on the worker
 * instead would make every completion contend with the vCPUs, and would
 * forbid waiting for the workers while holding the BQL.
 *
 * Configuration space: the PCIe endpoint capability, MSI-X, PCI power
 * management (D0 and D3hot, No_Soft_Reset) and Advanced Error Reporting,
 * so that QEMU's pcie_aer_inject_error reaches the guest's recovery when
 * the device sits behind a root port with AER (pcie-root-port).
 *
 * Usage: -device neuron[,cores=2][,dma-engines=2][,mem-size=256M]
 *                      [,sbuf-size=24M][,clock-mhz=1400][,x-irq-on-vcpu=on]
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "hw/core/cpu.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "system/dma.h"
#include "trace.h"

#include "device.h"
#include "neuron_isa.h"
#include "neuron_regs.h"

#define TYPE_NEURON_PCI "neuron"
OBJECT_DECLARE_SIMPLE_TYPE(NeuronPCIState, NEURON_PCI)

#define NEURON_MEM_SIZE_MIN     (1 * MiB)
#define NEURON_MEM_SIZE_MAX     (1ULL << NEURON_ADDR_BITS)
#define NEURON_MEM_SIZE_DEFAULT (256 * MiB)
#define NEURON_SBUF_SIZE_MIN    (NEURON_PARTITIONS * 1 * KiB)
#define NEURON_SBUF_SIZE_MAX    (NEURON_PARTITIONS * 2 * MiB)

/* QEMU 10.1 made the class_init data argument const. */
#if QEMU_VERSION_MAJOR > 10 || \
    (QEMU_VERSION_MAJOR == 10 && QEMU_VERSION_MINOR >= 1)
typedef const void *NeuronClassData;
#else
typedef void *NeuronClassData;
#endif

typedef struct NeuronPCIState NeuronPCIState;

/* One worker thread: a core's job queue or a DMA engine. */
typedef struct NeuronWorker {
    NeuronPCIState *s;
    nm_unit_kind kind;
    uint32_t index;
    QemuThread thread;
    QemuEvent kick;     /* set on a doorbell and on stop */
    bool stop;          /* atomic: set once by unrealize */
    bool started;
    int cpu_index;      /* atomic: vCPU that rang the doorbell last, or -1 */
} NeuronWorker;

struct NeuronPCIState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion mem;

    /* Properties. */
    uint32_t cores;
    uint32_t dma_engines;
    uint64_t mem_size;
    uint64_t sbuf_size;
    uint32_t clock_mhz;
    bool irq_on_vcpu;

    nm_device *dev;
    NeuronWorker workers[NEURON_MAX_CORES + NEURON_MAX_DMA_ENGINES];
    unsigned nworkers;
    unsigned nvectors;

    /*
     * MSI-X vectors to signal, set by any thread, drained by irq_bh or by
     * neuron_irq_work on a vCPU; irq_work_queued: such a work item is
     * queued and has not started draining yet.
     */
    uint32_t irq_pending;
    bool irq_work_queued;
    QEMUBH *irq_bh;
};

static NeuronWorker *neuron_worker(NeuronPCIState *s, nm_unit_kind kind,
                                   uint32_t index)
{
    return &s->workers[kind == NM_UNIT_CORE ? index : s->cores + index];
}

/* ---- callbacks from the model ---- */

/*
 * Host (bus-address) memory. Only directly accessible RAM is a valid
 * target, see the comment at the top of the file.
 */
static bool neuron_dma_is_ram(AddressSpace *as, dma_addr_t addr,
                              dma_addr_t len, bool is_write)
{
    RCU_READ_LOCK_GUARD();

    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &l,
                                                   is_write,
                                                   MEMTXATTRS_UNSPECIFIED);

        if (!l || !memory_access_is_direct(mr, is_write,
                                           MEMTXATTRS_UNSPECIFIED)) {
            return false;
        }
        addr += l;
        len -= l;
    }
    return true;
}

static int neuron_host_read(void *opaque, uint64_t addr, void *buf,
                            size_t len)
{
    NeuronPCIState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    MemTxResult r = MEMTX_DECODE_ERROR;

    if (neuron_dma_is_ram(pci_get_address_space(pdev), addr, len, false)) {
        r = pci_dma_read(pdev, addr, buf, len);
    }
    if (r != MEMTX_OK) {
        trace_neuron_host_fault(addr, len, 0);
        return -1;
    }
    return 0;
}

static int neuron_host_write(void *opaque, uint64_t addr, const void *buf,
                             size_t len)
{
    NeuronPCIState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    MemTxResult r = MEMTX_DECODE_ERROR;

    if (neuron_dma_is_ram(pci_get_address_space(pdev), addr, len, true)) {
        r = pci_dma_write(pdev, addr, buf, len);
    }
    if (r != MEMTX_OK) {
        trace_neuron_host_fault(addr, len, 1);
        return -1;
    }
    return 0;
}

/* BQL held: signal every pending vector. */
static void neuron_irq_drain(NeuronPCIState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t pending = qatomic_xchg(&s->irq_pending, 0);

    while (pending) {
        unsigned vector = ctz32(pending);

        pending &= pending - 1;
        trace_neuron_irq_notify(vector, msix_enabled(pdev),
                                msix_is_masked(pdev, vector));
        msix_notify(pdev, vector);
    }
}

/* Main loop, BQL held. */
static void neuron_irq_bh(void *opaque)
{
    neuron_irq_drain(opaque);
}

/*
 * On the vCPU thread that rang the doorbell, BQL held. The work item holds
 * a reference to the device; unrealize may have run since it was queued.
 */
static void neuron_irq_work(CPUState *cpu, run_on_cpu_data data)
{
    NeuronPCIState *s = data.host_ptr;

    qatomic_set_mb(&s->irq_work_queued, false);
    if (s->dev) {
        neuron_irq_drain(s);
    }
    object_unref(OBJECT(s));
}

/*
 * Have vCPU @cpu_index drain the pending vectors. False if there is no
 * such vCPU: the caller falls back to the bottom half.
 */
static bool neuron_irq_queue_on_cpu(NeuronPCIState *s, int cpu_index)
{
    CPUState *cpu;

    if (cpu_index < 0) {
        return false;
    }
    if (qatomic_xchg(&s->irq_work_queued, true)) {
        /* The queued item has not drained yet: it will see this vector. */
        return true;
    }
    WITH_RCU_READ_LOCK_GUARD() {
        cpu = qemu_get_cpu(cpu_index);
        if (cpu) {
            trace_neuron_irq_queue_cpu(cpu_index);
            object_ref(OBJECT(s));
            async_run_on_cpu(cpu, neuron_irq_work, RUN_ON_CPU_HOST_PTR(s));
            return true;
        }
    }
    qatomic_set(&s->irq_work_queued, false);
    return false;
}

static void neuron_raise_irq(void *opaque, uint32_t vector)
{
    NeuronPCIState *s = opaque;

    if (vector >= s->nvectors) {
        return;
    }
    trace_neuron_irq_raise(vector);
    qatomic_or(&s->irq_pending, 1u << vector);
    /* Vector i < nworkers is worker i's: queue i, then DMA engine i - cores. */
    if (s->irq_on_vcpu && vector < s->nworkers &&
        neuron_irq_queue_on_cpu(s, qatomic_read(&s->workers[vector].cpu_index))) {
        return;
    }
    qemu_bh_schedule(s->irq_bh);
}

static void neuron_kick(void *opaque, nm_unit_kind kind, uint32_t index)
{
    NeuronPCIState *s = opaque;
    NeuronWorker *w = neuron_worker(s, kind, index);

    /* A futex wake only when the worker sleeps, and no lock to hand over. */
    qemu_event_set(&w->kick);
}

static uint64_t neuron_clock_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
}

static void neuron_event(void *opaque, nm_event ev, uint32_t unit,
                         uint64_t a, uint64_t b)
{
    switch (ev) {
    case NM_EV_JOB_START:
        trace_neuron_job_start(unit, a);
        break;
    case NM_EV_JOB_END:
        trace_neuron_job_end(unit, a, b);
        break;
    case NM_EV_NOTIFY:
        trace_neuron_job_notify(unit, a, b);
        break;
    case NM_EV_QUEUE_HALT:
        trace_neuron_queue_halt(unit, b);
        break;
    case NM_EV_CORE_RESET:
        trace_neuron_core_reset(unit);
        break;
    case NM_EV_DMA_DESC:
        trace_neuron_dma_desc(unit, a, b);
        break;
    case NM_EV_DMA_HALT:
        trace_neuron_dma_halt(unit, b);
        break;
    case NM_EV_DMA_RESET:
        trace_neuron_dma_reset(unit);
        break;
    case NM_EV_DEV_RESET:
        trace_neuron_device_reset_done(a);
        break;
    case NM_EV_FATAL:
        trace_neuron_fatal(b);
        break;
    }
}

/* ---- worker threads ---- */

static void *neuron_worker_thread(void *opaque)
{
    NeuronWorker *w = opaque;
    nm_device *dev = w->s->dev;

    rcu_register_thread();
    for (;;) {
        qemu_event_wait(&w->kick);
        /* Before the steps: a kick after this point is seen by them. */
        qemu_event_reset(&w->kick);
        if (qatomic_read(&w->stop)) {
            break;
        }
        if (w->kind == NM_UNIT_CORE) {
            while (!qatomic_read(&w->stop) && nm_device_core_step(dev, w->index)) {
            }
        } else {
            while (!qatomic_read(&w->stop) && nm_device_dma_step(dev, w->index)) {
            }
        }
    }
    rcu_unregister_thread();
    return NULL;
}

static void neuron_workers_stop(NeuronPCIState *s)
{
    unsigned i;

    if (s->dev) {
        nm_device_shutdown(s->dev);
    }
    for (i = 0; i < s->nworkers; i++) {
        NeuronWorker *w = &s->workers[i];

        qatomic_set(&w->stop, true);
        qemu_event_set(&w->kick);
    }
    for (i = 0; i < s->nworkers; i++) {
        NeuronWorker *w = &s->workers[i];

        if (w->started) {
            qemu_thread_join(&w->thread);
            w->started = false;
        }
        qemu_event_destroy(&w->kick);
    }
    s->nworkers = 0;
}

/* ---- registers ---- */

static uint64_t neuron_reg_read(void *opaque, hwaddr addr, unsigned size)
{
    NeuronPCIState *s = opaque;
    uint32_t val = nm_device_mmio_read(s->dev, addr);

    trace_neuron_reg_read(addr, val);
    return val;
}

static void neuron_reg_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    NeuronPCIState *s = opaque;
    int cpu_index = current_cpu ? current_cpu->cpu_index : -1;

    trace_neuron_reg_write(addr, val);
    if (addr >= NEURON_QUEUE_BASE(0) && addr < NEURON_QUEUE_BASE(s->cores) &&
        (addr & 0xff) == NEURON_Q_TAIL) {
        uint64_t core = (addr - NEURON_QUEUE_BASE(0)) >> 8;

        trace_neuron_queue_doorbell(core, val);
        qatomic_set(&neuron_worker(s, NM_UNIT_CORE, core)->cpu_index,
                    cpu_index);
    } else if (addr >= NEURON_DMA_BASE(0) &&
               addr < NEURON_DMA_BASE(s->dma_engines) &&
               (addr & 0xff) == NEURON_DMA_TAIL) {
        uint64_t engine = (addr - NEURON_DMA_BASE(0)) >> 8;

        trace_neuron_dma_doorbell(engine, val);
        qatomic_set(&neuron_worker(s, NM_UNIT_DMA, engine)->cpu_index,
                    cpu_index);
    } else if (addr == NEURON_REG_DEV_CTRL && (val & NEURON_DEV_CTRL_RESET)) {
        trace_neuron_device_reset("DEV_CTRL");
    }
    nm_device_mmio_write(s->dev, addr, val);
}

static const MemoryRegionOps neuron_reg_ops = {
    .read = neuron_reg_read,
    .write = neuron_reg_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

/* ---- device ---- */

/* The AER extended capability, the first in extended configuration space. */
#define NEURON_AER_OFFSET 0x100

/*
 * PCI power management: D0 and D3hot. BAR accesses are off outside D0
 * (pci_pm_init()); No_Soft_Reset is set, since the registers and the
 * device memory keep their contents in D3hot, so the guest does not have
 * to reinitialize the device after D3hot -> D0.
 */
static int neuron_pm_cap_init(PCIDevice *pdev, Error **errp)
{
    int pm = pci_pm_init(pdev, 0, errp);

    if (pm < 0) {
        return pm;
    }
    pci_set_word(pdev->config + pm + PCI_PM_PMC, PCI_PM_CAP_VER_1_2);
    pci_set_word(pdev->config + pm + PCI_PM_CTRL, PCI_PM_CTRL_NO_SOFT_RESET);
    pci_set_word(pdev->wmask + pm + PCI_PM_CTRL, PCI_PM_CTRL_STATE_MASK);
    return pm;
}

static void neuron_pci_realize(PCIDevice *pdev, Error **errp)
{
    NeuronPCIState *s = NEURON_PCI(pdev);
    nm_device_config cfg;
    nm_device_env env = { 0 };
    char err[128];
    unsigned i;

    if (s->cores < 1 || s->cores > NEURON_MAX_CORES) {
        error_setg(errp, "neuron: cores must be 1..%d (got %" PRIu32 ")",
                   NEURON_MAX_CORES, s->cores);
        return;
    }
    if (s->dma_engines < 1 || s->dma_engines > NEURON_MAX_DMA_ENGINES) {
        error_setg(errp, "neuron: dma-engines must be 1..%d (got %" PRIu32
                   ")", NEURON_MAX_DMA_ENGINES, s->dma_engines);
        return;
    }
    if (s->mem_size < NEURON_MEM_SIZE_MIN || s->mem_size > NEURON_MEM_SIZE_MAX ||
        !is_power_of_2(s->mem_size)) {
        error_setg(errp, "neuron: mem-size must be a power of two between "
                   "1 MiB and 256 TiB (got %" PRIu64 " bytes)", s->mem_size);
        return;
    }
    if (s->sbuf_size < NEURON_SBUF_SIZE_MIN ||
        s->sbuf_size > NEURON_SBUF_SIZE_MAX ||
        s->sbuf_size % NEURON_PARTITIONS) {
        error_setg(errp, "neuron: sbuf-size must be a multiple of %d bytes "
                   "between 128 KiB and 256 MiB (got %" PRIu64 " bytes)",
                   NEURON_PARTITIONS, s->sbuf_size);
        return;
    }
    if (s->clock_mhz < 1 || s->clock_mhz > 100000) {
        error_setg(errp, "neuron: clock-mhz must be 1..100000 (got %" PRIu32
                   ")", s->clock_mhz);
        return;
    }
    s->nvectors = NEURON_MSIX_COUNT(s->cores, s->dma_engines);

    pci_config_set_interrupt_pin(pdev->config, 1);
    /* Processing accelerator, programming interface 0. */
    pci_config_set_prog_interface(pdev->config, NEURON_PCI_CLASS & 0xff);

    memory_region_init_io(&s->regs, OBJECT(s), &neuron_reg_ops, s,
                          "neuron-regs", NEURON_REGS_SIZE);
    pci_register_bar(pdev, NEURON_BAR_REGS,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->regs);

    if (msix_init_exclusive_bar(pdev, s->nvectors, NEURON_BAR_MSIX, errp)) {
        return;
    }
    for (i = 0; i < s->nvectors; i++) {
        msix_vector_use(pdev, i);
    }

    if (!memory_region_init_ram(&s->mem, OBJECT(s), "neuron-device-memory",
                                s->mem_size, errp)) {
        goto fail_msix;
    }
    pci_register_bar(pdev, NEURON_BAR_MEM,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->mem);

    if (pcie_endpoint_cap_init(pdev, 0x80) < 0) {
        error_setg(errp, "neuron: cannot add the PCIe capability");
        goto fail_msix;
    }
    /* The Device Control bits that let the device report its errors. */
    pcie_cap_deverr_init(pdev);
    if (neuron_pm_cap_init(pdev, errp) < 0) {
        goto fail_pcie;
    }
    /*
     * Advanced Error Reporting, so that errors can be injected
     * (pcie_aer_inject_error) and the guest's recovery exercised.
     */
    if (pcie_aer_init(pdev, PCI_ERR_VER, NEURON_AER_OFFSET, PCI_ERR_SIZEOF,
                      errp) < 0) {
        goto fail_pcie;
    }

    nm_device_config_default(&cfg);
    cfg.num_cores = s->cores;
    cfg.num_dma = s->dma_engines;
    cfg.sbuf_size = s->sbuf_size;
    cfg.psum_size = NEURON_PSUM_SIZE;
    cfg.clock_mhz = s->clock_mhz;
    env.mem.host_read = neuron_host_read;
    env.mem.host_write = neuron_host_write;
    env.mem.opaque = s;
    env.mem.devmem = memory_region_get_ram_ptr(&s->mem);
    env.mem.devmem_size = s->mem_size;
    env.opaque = s;
    env.raise_irq = neuron_raise_irq;
    env.kick = neuron_kick;
    env.clock_ns = neuron_clock_ns;
    env.event = neuron_event;

    s->irq_bh = qemu_bh_new_guarded(neuron_irq_bh, s,
                                    &DEVICE(s)->mem_reentrancy_guard);
    s->dev = nm_device_new(&cfg, &env, err, sizeof(err));
    if (!s->dev) {
        error_setg(errp, "neuron: %s", err);
        goto fail_aer;
    }

    s->nworkers = s->cores + s->dma_engines;
    for (i = 0; i < s->nworkers; i++) {
        NeuronWorker *w = &s->workers[i];
        char name[32];

        w->s = s;
        w->kind = i < s->cores ? NM_UNIT_CORE : NM_UNIT_DMA;
        w->index = i < s->cores ? i : i - s->cores;
        w->stop = false;
        w->cpu_index = -1;
        qemu_event_init(&w->kick, false);
        snprintf(name, sizeof(name), "neuron-%s%u",
                 w->kind == NM_UNIT_CORE ? "core" : "dma", w->index);
        qemu_thread_create(&w->thread, name, neuron_worker_thread, w,
                           QEMU_THREAD_JOINABLE);
        w->started = true;
    }

    trace_neuron_realize(s->cores, s->dma_engines, s->mem_size, s->nvectors);
    return;

fail_aer:
    qemu_bh_delete(s->irq_bh);
    s->irq_bh = NULL;
    pcie_aer_exit(pdev);
fail_pcie:
    pcie_cap_exit(pdev);
fail_msix:
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

static void neuron_pci_exit(PCIDevice *pdev)
{
    NeuronPCIState *s = NEURON_PCI(pdev);

    neuron_workers_stop(s);
    nm_device_free(s->dev);
    s->dev = NULL;
    qemu_bh_delete(s->irq_bh);
    s->irq_bh = NULL;
    pcie_aer_exit(pdev);
    pcie_cap_exit(pdev);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

/*
 * PCI/system reset. The model resets its registers at once and lets a
 * worker that is still inside a job finish it in the background (its
 * results are discarded; DEV_STATUS shows RESETTING until then), so this
 * never waits for a worker.
 */
static void neuron_pci_reset(DeviceState *ds)
{
    NeuronPCIState *s = NEURON_PCI(ds);

    trace_neuron_device_reset("PCI");
    pcie_cap_deverr_reset(PCI_DEVICE(ds));
    if (s->dev) {
        nm_device_reset(s->dev, true);
    }
    qatomic_set(&s->irq_pending, 0);
}

static const Property neuron_pci_props[] = {
    DEFINE_PROP_UINT32("cores", NeuronPCIState, cores, 2),
    DEFINE_PROP_UINT32("dma-engines", NeuronPCIState, dma_engines, 2),
    DEFINE_PROP_SIZE("mem-size", NeuronPCIState, mem_size,
                     NEURON_MEM_SIZE_DEFAULT),
    DEFINE_PROP_SIZE("sbuf-size", NeuronPCIState, sbuf_size,
                     NM_DEFAULT_SBUF_SIZE),
    DEFINE_PROP_UINT32("clock-mhz", NeuronPCIState, clock_mhz,
                       NM_DEFAULT_CLOCK_MHZ),
    DEFINE_PROP_BOOL("x-irq-on-vcpu", NeuronPCIState, irq_on_vcpu, true),
};

static const VMStateDescription neuron_pci_vmstate = {
    .name = TYPE_NEURON_PCI,
    .unmigratable = 1,
};

static void neuron_pci_class_init(ObjectClass *oc, NeuronClassData data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(oc);

    pc->realize = neuron_pci_realize;
    pc->exit = neuron_pci_exit;
    pc->vendor_id = NEURON_PCI_VENDOR_ID;
    pc->device_id = NEURON_PCI_DEVICE_ID;
    pc->class_id = NEURON_PCI_CLASS >> 8;
    pc->revision = NEURON_PCI_REVISION;

    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
    dc->desc = "neuron machine-learning accelerator";
    dc->vmsd = &neuron_pci_vmstate;
    device_class_set_legacy_reset(dc, neuron_pci_reset);
    device_class_set_props(dc, neuron_pci_props);
}

static const TypeInfo neuron_pci_info = {
    .name = TYPE_NEURON_PCI,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(NeuronPCIState),
    .class_init = neuron_pci_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void neuron_pci_register_types(void)
{
    type_register_static(&neuron_pci_info);
}

type_init(neuron_pci_register_types)
