// SPDX-License-Identifier: MIT
/*
 * Execution tests of neuron.ko: COPY and SUBMIT through raw ioctls, DRM
 * syncobjs for completion (fence errors read through an exported sync
 * file), faults, timeouts and core resets, concurrent processes, and
 * cleanup when a process with work in flight is killed.
 *
 *   neuron-exec-test [TEST...]     run the default tests, or those named
 *
 * Environment: NEURON_ACCEL_DEV picks the device (default: the first
 * neuron device); NEURON_EXEC_MAX_COPY caps the largest copy (bytes);
 * NEURON_PM_TEST (e.g. "devices") makes "suspend" use the kernel's
 * pm_test instead of a real suspend to RAM.
 * The "timeout" test sets the job_timeout_ms module parameter and rebinds
 * the device, so it runs in a boot of its own. "isolation" (processes
 * cannot reach each other's buffers), "copy_large" (128 and 256 MiB
 * copies, on a device with 512 MiB of memory) and "host_pin" (a buffer of
 * 95% of RAM, pin limits, a pin that runs out of memory) and
 * "fault_injection" (allocation failure sweeps, debug kernel) and
 * "probe_fault_injection" (the same for binding the device) run only
 * when named, as do "aer" (PCI error recovery, QEMU's AER injection),
 * "runtime_pm" (autosuspend and resume) and "suspend" (suspend to RAM),
 * the first and the last through the harness's QEMU monitor
 * (neuron-vm --monitor).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/sync_file.h>
#include <xf86drm.h>

#include "drm/neuron_accel.h"
#include "neuron_accel_check_cases.h"
#include "neuron_isa.h"
#include "neuron_regs.h"
#include "testdev.h"

#define MIB (1024ull * 1024)

static struct neuron_test_dev tdev;

static double now_s(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int open_dev(void) {
    return open(tdev.path, O_RDWR | O_CLOEXEC);
}

static uint64_t get_param(int fd, uint32_t param) {
    struct drm_neuron_get_param p = {.param = param};

    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_GET_PARAM, &p), 0);
    return p.value;
}

static uint32_t bo_new(int fd, uint64_t size, uint32_t region) {
    struct drm_neuron_bo_create c = {.size = size, .region = region};

    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_CREATE, &c), 0);
    return c.handle;
}

static void *bo_map(int fd, uint32_t handle, uint64_t *size) {
    struct drm_neuron_bo_info i = {.handle = handle};
    void *p;

    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_INFO, &i), 0);
    p = mmap(NULL, i.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, i.mmap_offset);
    assert_true(p != MAP_FAILED);
    if (size)
        *size = i.size;
    return p;
}

static void bo_close(int fd, uint32_t handle) {
    struct drm_gem_close c = {.handle = handle};

    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c), 0);
}

static uint32_t syncobj_new(int fd) {
    uint32_t h;

    assert_int_equal(drmSyncobjCreate(fd, 0, &h), 0);
    return h;
}

/*
 * Waits for a binary syncobj and returns its fence's status: 1 signalled
 * fine, a negative errno if signalled with an error, -ETIME on timeout.
 */
static int syncobj_status(int fd, uint32_t h, double timeout_s) {
    struct sync_file_info info = {0};
    int64_t abs = (int64_t)((now_s() + timeout_s) * 1e9);
    int sf, ret;

    ret = drmSyncobjWait(fd, &h, 1, abs, DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL);
    if (ret)
        return -errno;
    assert_int_equal(drmSyncobjExportSyncFile(fd, h, &sf), 0);
    ret = ioctl(sf, SYNC_IOC_FILE_INFO, &info);
    close(sf);
    assert_int_equal(ret, 0);
    return info.status;
}

/*
 * DRM_IOCTL_NEURON_WAIT on timeline point @point of @h, with a deadline
 * @timeout_s from now (negative: in the past): the ioctl's result, the
 * point's status in *@status.
 */
static int wait_point(int fd, uint32_t h, uint64_t point, double timeout_s, int *status) {
    struct drm_neuron_wait w = {
        .sync = {.handle = h, .point = point},
        .timeout_nsec = (int64_t)((now_s() + timeout_s) * 1e9),
        .status = 12345,
    };
    int ret = neuron_ioctl(fd, DRM_IOCTL_NEURON_WAIT, &w);

    *status = w.status;
    return ret;
}

/* The same on a binary syncobj (point 0). */
static int neuron_wait(int fd, uint32_t h, double timeout_s, int *status) {
    return wait_point(fd, h, 0, timeout_s, status);
}

/* A copy signalling @out, after the one sync @in (or none). */
static int copy_sync(int fd, uint32_t src, uint64_t src_off, uint32_t dst, uint64_t dst_off,
                     uint64_t size, struct drm_neuron_sync out, const struct drm_neuron_sync *in,
                     uint32_t engine, uint64_t *seqno) {
    struct drm_neuron_copy c = {
        .src_handle = src,
        .dst_handle = dst,
        .src_offset = src_off,
        .dst_offset = dst_off,
        .size = size,
        .engine = engine,
        .in_syncs = (uintptr_t)in,
        .num_in_syncs = in ? 1 : 0,
        .out_sync = out,
    };
    int ret = neuron_ioctl(fd, DRM_IOCTL_NEURON_COPY, &c);

    if (!ret && seqno)
        *seqno = c.seqno;
    return ret;
}

static int copy(int fd, uint32_t src, uint64_t src_off, uint32_t dst, uint64_t dst_off,
                uint64_t size, uint32_t out, uint32_t engine, uint64_t *seqno) {
    return copy_sync(fd, src, src_off, dst, dst_off, size, (struct drm_neuron_sync){.handle = out},
                     NULL, engine, seqno);
}

static void fill(uint8_t *p, uint64_t n, uint32_t seed) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    uint64_t i;

    for (i = 0; i + 8 <= n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(p + i, &x, 8);
    }
    for (; i < n; i++)
        p[i] = (uint8_t)(i * 7 + seed);
}

static int setup(void **state) {
    int fd = open_dev();

    if (fd < 0)
        return -1;
    *state = (void *)(intptr_t)fd;
    return 0;
}

static int teardown(void **state) {
    close((int)(intptr_t)*state);
    return 0;
}

#define FD(state) ((int)(intptr_t) * (state))

/* ------------------------------------------------------------------------
 * COPY
 */

static void write_file(const char *path, const char *val) {
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_true(fputs(val, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

static uint64_t max_copy(int fd) {
    const char *env = getenv("NEURON_EXEC_MAX_COPY");
    uint64_t m = env ? strtoull(env, NULL, 0) : 64 * MIB;
    uint64_t dm = get_param(fd, DRM_NEURON_PARAM_DEVICE_MEM_SIZE);

    return m < dm ? m : dm;
}

/* host -> device -> host of each size below @limit, byte for byte. */
static void copy_roundtrips(int fd, const uint64_t *sizes, size_t count, uint64_t limit) {
    uint32_t out = syncobj_new(fd);
    size_t i;

    for (i = 0; i < count; i++) {
        uint64_t n = sizes[i], off = n & 1 ? 5 : 0;
        uint32_t h_in, h_out, d;
        uint8_t *in, *outp;
        double t0, t1, t2;

        if (n + off > limit)
            break;
        h_in = bo_new(fd, n + off, DRM_NEURON_BO_HOST);
        h_out = bo_new(fd, n + off, DRM_NEURON_BO_HOST);
        d = bo_new(fd, n + off + 4096, DRM_NEURON_BO_DEVICE);
        in = bo_map(fd, h_in, NULL);
        outp = bo_map(fd, h_out, NULL);
        fill(in + off, n, (uint32_t)i + 1);

        t0 = now_s();
        assert_int_equal(copy(fd, h_in, off, d, 4096 - off, n, out, DRM_NEURON_ENGINE_ANY, NULL),
                         0);
        assert_int_equal(syncobj_status(fd, out, 60), 1);
        t1 = now_s();
        assert_int_equal(copy(fd, d, 4096 - off, h_out, off, n, out, 0, NULL), 0);
        assert_int_equal(syncobj_status(fd, out, 60), 1);
        t2 = now_s();
        if (memcmp(in + off, outp + off, n)) {
            uint64_t j;

            for (j = 0; j < n && in[off + j] == outp[off + j]; j++)
                ;
            fail_msg("copy of %llu bytes differs at byte %llu", (unsigned long long)n,
                     (unsigned long long)j);
        }
        if (n >= 16 * MIB)
            printf("# copy %3llu MiB: host->device %.0f MB/s, device->host %.0f MB/s\n",
                   (unsigned long long)(n / MIB), n / (t1 - t0) / 1e6, n / (t2 - t1) / 1e6);
        munmap(in, n + off);
        munmap(outp, n + off);
        bo_close(fd, h_in);
        bo_close(fd, h_out);
        bo_close(fd, d);
    }
    drmSyncobjDestroy(fd, out);
}

/* host -> device -> host, byte for byte, for sizes from 1 byte up. */
static void test_copy_roundtrip(void **state) {
    static const uint64_t sizes[] = {
        1, 3, 4095, 4096, 4097, 65536 + 12, MIB - 1, MIB + 4096 + 5, 16 * MIB, 64 * MIB, 256 * MIB,
    };
    int fd = FD(state);

    copy_roundtrips(fd, sizes, sizeof(sizes) / sizeof(sizes[0]), max_copy(fd));
}

/*
 * 128 and 256 MiB, whatever NEURON_EXEC_MAX_COPY says ("copy_large",
 * registered on its own): needs a device with more than 256 MiB of device
 * memory (the copy goes 4 KiB into its device buffer) and a guest with room
 * for two 256 MiB host buffers. Both are pinned at once, and the 128 MiB
 * pair stays pinned until its jobs are freed: more than the default limit
 * per file, a quarter of the 2 GiB guest's RAM, so the test raises it as an
 * operator would for such copies (module parameter host_pin_file_limit_mb).
 */
static void test_copy_large(void **state) {
    static const uint64_t sizes[] = {128 * MIB, 256 * MIB};
    int fd = FD(state);
    uint64_t dm = get_param(fd, DRM_NEURON_PARAM_DEVICE_MEM_SIZE);

    if (dm < 256 * MIB + 4096)
        fail_msg("device memory is %llu MiB: the large copies need a device with mem-size=512M",
                 (unsigned long long)(dm / MIB));
    write_file("/sys/module/neuron/parameters/host_pin_file_limit_mb", "1024");
    copy_roundtrips(fd, sizes, sizeof(sizes) / sizeof(sizes[0]), dm);
    write_file("/sys/module/neuron/parameters/host_pin_file_limit_mb", "0");
}

/* Device-to-device, host-to-host, chained through in-syncs, timelines. */
static void test_copy_chain(void **state) {
    int fd = FD(state);
    uint64_t n = 3 * MIB + 17;
    uint32_t a = bo_new(fd, n, DRM_NEURON_BO_HOST);
    uint32_t b = bo_new(fd, n, DRM_NEURON_BO_DEVICE);
    uint32_t c = bo_new(fd, n, DRM_NEURON_BO_DEVICE);
    uint32_t d = bo_new(fd, n, DRM_NEURON_BO_HOST);
    uint32_t e = bo_new(fd, n, DRM_NEURON_BO_HOST);
    uint32_t s1 = syncobj_new(fd), s2 = syncobj_new(fd), tl;
    uint8_t *pa = bo_map(fd, a, NULL), *pe = bo_map(fd, e, NULL);
    struct drm_neuron_sync in = {.handle = s1};
    struct drm_neuron_copy cp = {
        .src_handle = b,
        .dst_handle = c,
        .size = n,
        .engine = 1 % get_param(fd, DRM_NEURON_PARAM_NUM_DMA_ENGINES),
        .in_syncs = (uintptr_t)&in,
        .num_in_syncs = 1,
        .out_sync = {.handle = s2},
    };
    uint64_t point = 7;

    assert_int_equal(drmSyncobjCreate(fd, 0, &tl), 0);
    fill(pa, n, 99);
    assert_int_equal(copy(fd, a, 0, b, 0, n, s1, 0, NULL), 0);
    /* On another engine, after the first copy. */
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_COPY, &cp), 0);
    in.handle = s2;
    cp.src_handle = c;
    cp.dst_handle = d;
    cp.engine = DRM_NEURON_ENGINE_ANY;
    cp.out_sync.handle = tl;
    cp.out_sync.point = point;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_COPY, &cp), 0);
    /* host -> host after a timeline point. */
    in.handle = tl;
    in.point = point;
    cp.src_handle = d;
    cp.dst_handle = e;
    cp.out_sync.handle = s1;
    cp.out_sync.point = 0;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_COPY, &cp), 0);
    assert_int_equal(syncobj_status(fd, s1, 30), 1);
    assert_memory_equal(pa, pe, n);
    /* A mapping holds the file, and so every handle, open. */
    munmap(pa, n);
    munmap(pe, n);
}

/*
 * A range that begins inside a mapping an earlier copy left (idle for less
 * than the driver's unmap delay) reads and writes its own bytes, not those
 * at the start of that mapping: pages [0, 2) of a host buffer are mapped
 * by a first copy, then bytes from inside page 1 to page 3 go through the
 * device and back into pages 1 to 3 of a second buffer, whose pages [0, 2)
 * a first copy mapped likewise.
 */
static void test_copy_in_cached_mapping(void **state) {
    int fd = FD(state);
    uint64_t n = 4 * 4096, off = 4096 + 100, size = 2 * 4096 - 300;
    uint32_t src = bo_new(fd, n, DRM_NEURON_BO_HOST), dst = bo_new(fd, n, DRM_NEURON_BO_HOST);
    uint32_t dev = bo_new(fd, n, DRM_NEURON_BO_DEVICE), sync = syncobj_new(fd);
    uint8_t *ps = bo_map(fd, src, NULL), *pd = bo_map(fd, dst, NULL);

    fill(ps, n, 41);
    memset(pd, 0, n);
    /* The mappings the next copies start inside of. */
    assert_int_equal(copy(fd, src, 0, dev, 0, 2 * 4096, sync, DRM_NEURON_ENGINE_ANY, NULL), 0);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    assert_int_equal(copy(fd, dev, 0, dst, 0, 2 * 4096, sync, DRM_NEURON_ENGINE_ANY, NULL), 0);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    memset(pd, 0, n);

    assert_int_equal(copy(fd, src, off, dev, 512, size, sync, DRM_NEURON_ENGINE_ANY, NULL), 0);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    assert_int_equal(copy(fd, dev, 512, dst, off + 1000, size, sync, DRM_NEURON_ENGINE_ANY, NULL),
                     0);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    assert_memory_equal(pd + off + 1000, ps + off, size);
    munmap(ps, n);
    munmap(pd, n);
    bo_close(fd, src);
    bo_close(fd, dst);
    bo_close(fd, dev);
    drmSyncobjDestroy(fd, sync);
}

/* ------------------------------------------------------------------------
 * Programs
 */

#define PROG_N 64 /* fp32 elements per partition */
#define PROG_BYTES (NEURON_PARTITIONS * PROG_N * 4)

struct prog {
    struct neuron_prog_header h;
    struct neuron_insn insn[16];
};

static struct neuron_tap tap_sbuf(uint32_t offset) {
    struct neuron_tap t = {
        .space = NEURON_SPACE_SBUF,
        .dtype = NEURON_DT_FP32,
        .part_start = 0,
        .part_count = NEURON_PARTITIONS,
        .offset = offset,
        .count = {PROG_N, 1},
        .stride = {1, 0},
    };
    return t;
}

static struct neuron_insn insn_dma(uint8_t op, uint8_t slot, uint64_t offset,
                                   uint32_t sbuf_offset) {
    struct neuron_insn i = {.opcode = op};

    i.dma.sbuf = tap_sbuf(sbuf_offset);
    i.dma.dram.slot = slot;
    i.dma.dram.part_stride = PROG_N * 4;
    i.dma.dram.offset = offset;
    i.dma.dram.stride[0] = 4;
    return i;
}

static struct neuron_insn insn_ctl(uint8_t op, uint8_t func, uint32_t arg, uint32_t imm0) {
    struct neuron_insn i = {.opcode = op, .func = func, .arg = arg};

    i.imm[0] = imm0;
    return i;
}

static uint32_t f2u(float f) {
    uint32_t u;

    memcpy(&u, &f, 4);
    return u;
}

/*
 * out = in * 2 + 1: Sync loads slot 0 into SBUF, Vector computes, Sync
 * stores to slot 1; semaphores order the streams. With @load_offset the
 * load starts there (a value past the binding makes it fault).
 */
static size_t build_axpb(struct prog *p, uint64_t load_offset) {
    struct neuron_insn *s, *v;
    uint32_t ns = 0, nv = 0;

    memset(p, 0, sizeof(*p));
    s = &p->insn[0];
    v = &p->insn[8];
    s[ns++] = insn_dma(NEURON_OP_DMA_LOAD, 0, load_offset, 0);
    s[ns++] = insn_ctl(NEURON_OP_SEM_SIGNAL, 0, 1, 0);
    s[ns++] = insn_ctl(NEURON_OP_SEM_WAIT, 1, 1, 0);
    s[ns++] = insn_dma(NEURON_OP_DMA_STORE, 1, 0, PROG_N * 4);
    s[ns++] = insn_ctl(NEURON_OP_END, 0, 0, 0);

    v[nv++] = insn_ctl(NEURON_OP_SEM_WAIT, 0, 1, 0);
    v[nv] = (struct neuron_insn){
        .opcode = NEURON_OP_TENSOR_SCALAR, .func = NEURON_ALU_MUL, .func2 = NEURON_ALU_ADD};
    v[nv].op[0] = tap_sbuf(PROG_N * 4);
    v[nv].op[1] = tap_sbuf(0);
    v[nv].imm[0] = f2u(2.0f);
    v[nv].imm[1] = f2u(1.0f);
    nv++;
    v[nv++] = insn_ctl(NEURON_OP_SEM_SIGNAL, 1, 1, 0);
    v[nv++] = insn_ctl(NEURON_OP_END, 0, 0, 0);

    p->h.magic = NEURON_PROG_MAGIC;
    p->h.version_major = NEURON_ISA_VERSION_MAJOR;
    p->h.header_size = sizeof(p->h);
    p->h.image_size = sizeof(*p);
    p->h.stream[NEURON_ENGINE_INDEX(NEURON_ENGINE_SYNC)].offset = offsetof(struct prog, insn[0]);
    p->h.stream[NEURON_ENGINE_INDEX(NEURON_ENGINE_SYNC)].count = ns;
    p->h.stream[NEURON_ENGINE_INDEX(NEURON_ENGINE_VECTOR)].offset = offsetof(struct prog, insn[8]);
    p->h.stream[NEURON_ENGINE_INDEX(NEURON_ENGINE_VECTOR)].count = nv;
    return sizeof(*p);
}

/* A Sync stream that loops forever (NOP; LOOP back to it). */
static size_t build_spin(struct prog *p) {
    memset(p, 0, sizeof(*p));
    p->insn[0] = insn_ctl(NEURON_OP_NOP, 0, 0, 0);
    p->insn[1] = insn_ctl(NEURON_OP_LOOP, 0, 0, NEURON_LOOP_INFINITE);
    p->h.magic = NEURON_PROG_MAGIC;
    p->h.version_major = NEURON_ISA_VERSION_MAJOR;
    p->h.header_size = sizeof(p->h);
    p->h.image_size = sizeof(*p);
    p->h.stream[NEURON_ENGINE_INDEX(NEURON_ENGINE_SYNC)].offset = offsetof(struct prog, insn[0]);
    p->h.stream[NEURON_ENGINE_INDEX(NEURON_ENGINE_SYNC)].count = 2;
    return sizeof(*p);
}

struct job_bufs {
    uint32_t prog, in, out;
    float *pin, *pout;
    size_t prog_size;
};

static void job_bufs_init(int fd, struct job_bufs *jb, uint32_t in_region, uint32_t out_region,
                          uint32_t prog_region, uint64_t load_offset, int spin) {
    struct prog p;
    void *pp;
    int i;

    jb->prog_size = spin ? build_spin(&p) : build_axpb(&p, load_offset);
    jb->prog = bo_new(fd, 4096, prog_region);
    jb->in = bo_new(fd, PROG_BYTES, in_region);
    jb->out = bo_new(fd, PROG_BYTES, out_region);
    pp = bo_map(fd, jb->prog, NULL);
    memcpy(pp, &p, sizeof(p));
    munmap(pp, 4096);
    jb->pin = bo_map(fd, jb->in, NULL);
    jb->pout = bo_map(fd, jb->out, NULL);
    for (i = 0; i < NEURON_PARTITIONS * PROG_N; i++) {
        jb->pin[i] = (float)(i % 1000) - 300.0f;
        jb->pout[i] = -1.0f;
    }
}

static void job_bufs_fini(int fd, struct job_bufs *jb) {
    munmap(jb->pin, PROG_BYTES);
    munmap(jb->pout, PROG_BYTES);
    bo_close(fd, jb->prog);
    bo_close(fd, jb->in);
    bo_close(fd, jb->out);
}

/* The job of @jb on @core, signalling @out. */
static int submit_sync(int fd, const struct job_bufs *jb, uint32_t core, struct drm_neuron_sync out,
                       uint64_t *seqno) {
    struct drm_neuron_binding b[2] = {
        {.handle = jb->in, .flags = DRM_NEURON_BIND_READ, .size = PROG_BYTES},
        {.handle = jb->out, .flags = DRM_NEURON_BIND_WRITE, .size = PROG_BYTES},
    };
    struct drm_neuron_submit s = {
        .core = core,
        .program_handle = jb->prog,
        .program_size = jb->prog_size,
        .num_bindings = 2,
        .bindings = (uintptr_t)b,
        .out_sync = out,
    };
    int ret = neuron_ioctl(fd, DRM_IOCTL_NEURON_SUBMIT, &s);

    if (!ret && seqno)
        *seqno = s.seqno;
    return ret;
}

static int submit(int fd, const struct job_bufs *jb, uint32_t core, uint32_t out, uint64_t *seqno) {
    return submit_sync(fd, jb, core, (struct drm_neuron_sync){.handle = out}, seqno);
}

static void check_axpb(const struct job_bufs *jb) {
    int i;

    for (i = 0; i < NEURON_PARTITIONS * PROG_N; i++) {
        float want = jb->pin[i] * 2.0f + 1.0f;

        if (jb->pout[i] != want)
            fail_msg("out[%d] = %f, want %f", i, jb->pout[i], want);
    }
}

static void run_axpb(int fd, uint32_t in_r, uint32_t out_r, uint32_t prog_r, uint32_t core) {
    struct job_bufs jb;
    uint32_t out = syncobj_new(fd);
    double t0, t1;

    job_bufs_init(fd, &jb, in_r, out_r, prog_r, 0, 0);
    t0 = now_s();
    assert_int_equal(submit(fd, &jb, core, out, NULL), 0);
    assert_int_equal(syncobj_status(fd, out, 30), 1);
    t1 = now_s();
    check_axpb(&jb);
    printf("# job on core %u (in %s, out %s, program %s): submit->signal %.0f us\n", core,
           in_r ? "host" : "device", out_r ? "host" : "device", prog_r ? "host" : "device",
           (t1 - t0) * 1e6);
    job_bufs_fini(fd, &jb);
    drmSyncobjDestroy(fd, out);
}

static void test_submit_program(void **state) {
    int fd = FD(state);
    uint32_t cores = get_param(fd, DRM_NEURON_PARAM_NUM_CORES), c;

    run_axpb(fd, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0);
    if (get_param(fd, DRM_NEURON_PARAM_CAPABILITIES) & DRM_NEURON_CAP_HOST_BINDINGS) {
        run_axpb(fd, DRM_NEURON_BO_HOST, DRM_NEURON_BO_HOST, DRM_NEURON_BO_HOST, 0);
        run_axpb(fd, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0);
    }
    for (c = 1; c < cores; c++)
        run_axpb(fd, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, c);
}

/* Submit -> signal latency of an empty-ish job, averaged. */
static void test_submit_latency(void **state) {
    int fd = FD(state), i, n = 50;
    struct job_bufs jb;
    uint32_t out = syncobj_new(fd);
    double t0, total = 0;

    job_bufs_init(fd, &jb, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0, 0);
    for (i = 0; i < n; i++) {
        t0 = now_s();
        assert_int_equal(submit(fd, &jb, 0, out, NULL), 0);
        assert_int_equal(syncobj_status(fd, out, 30), 1);
        total += now_s() - t0;
    }
    printf("# submit->signal latency (axpb, 128x64 fp32): mean %.0f us over %d jobs\n",
           total / n * 1e6, n);
    job_bufs_fini(fd, &jb);
}

/* The Linux IRQ number of the vector named @name@<bdf> in /proc/interrupts. */
static int irq_of(const char *name) {
    char want[128], line[512];
    FILE *f = fopen("/proc/interrupts", "r");
    int irq = -1;

    assert_non_null(f);
    snprintf(want, sizeof(want), " %s@%s\n", name, tdev.bdf);
    while (irq < 0 && fgets(line, sizeof(line), f)) {
        size_t n = strlen(line), w = strlen(want);

        if (n > w && !strcmp(line + n - w, want))
            irq = atoi(line);
    }
    fclose(f);
    if (irq < 0)
        fail_msg("no vector %s in /proc/interrupts", want);
    return irq;
}

/* Interrupts of @irq taken on @cpu so far (its column in /proc/interrupts). */
static long irq_count_on(int irq, int cpu) {
    char line[1024], want[32], *tok, *save;
    FILE *f = fopen("/proc/interrupts", "r");
    int col = -1, i = 0;
    long n = -1;

    assert_non_null(f);
    assert_non_null(fgets(line, sizeof(line), f));
    snprintf(want, sizeof(want), "CPU%d", cpu);
    for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), i++)
        if (!strcmp(tok, want))
            col = i;
    while (col >= 0 && n < 0 && fgets(line, sizeof(line), f)) {
        if (atoi(line) != irq || !strchr(line, ':'))
            continue;
        tok = strtok_r(strchr(line, ':') + 1, " ", &save);
        for (i = 0; tok && i < col; i++)
            tok = strtok_r(NULL, " ", &save);
        if (tok)
            n = atol(tok);
    }
    fclose(f);
    if (n < 0)
        fail_msg("no count of IRQ %d on CPU %d in /proc/interrupts", irq, cpu);
    return n;
}

static int irq_effective_cpu(int irq) {
    char path[64], buf[64] = "";
    FILE *f;

    snprintf(path, sizeof(path), "/proc/irq/%d/effective_affinity_list", irq);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    /* One CPU: the list is a single number. */
    assert_null(strpbrk(buf, ",-"));
    return atoi(buf);
}

/* One unit of work on a ring, waited for: a job on a core or a copy on an engine. */
struct ring_work {
    const char *vector; /* its MSI-X vectors' name without the unit and "@<bdf>" */
    uint32_t units;
    int (*run)(int fd, const struct job_bufs *jb, uint32_t unit, uint32_t out);
};

static int run_job(int fd, const struct job_bufs *jb, uint32_t core, uint32_t out) {
    return submit(fd, jb, core, out, NULL);
}

/* A 4 KiB copy between device buffers on a DMA engine. */
static int run_copy(int fd, const struct job_bufs *jb, uint32_t engine, uint32_t out) {
    return copy(fd, jb->in, 0, jb->out, 0, 4096, out, engine, NULL);
}

static int unit_irq(const struct ring_work *w, uint32_t unit) {
    char name[32];

    snprintf(name, sizeof(name), "%s%u", w->vector, unit);
    return irq_of(name);
}

/* Writes @val to /proc/irq/@irq/smp_affinity_list: 0 or the errno. */
static int irq_set_affinity_list(int irq, const char *val) {
    char path[64];
    int fd, err = 0;

    snprintf(path, sizeof(path), "/proc/irq/%d/smp_affinity_list", irq);
    fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    if (write(fd, val, strlen(val)) < 0)
        err = errno;
    close(fd);
    return err;
}

/*
 * The rings' vectors have managed affinity: the IRQ core spreads a kind's
 * vectors (core queues, DMA engines) over the online CPUs, one CPU each
 * while there are CPUs left, and nobody can move them (a write to
 * /proc/irq/N/smp_affinity_list fails with EPERM). Work submitted from any
 * CPU completes with its interrupt taken on its vector's CPU. The error
 * vector is not managed: it takes a new affinity.
 */
static void irq_managed(int fd, const struct ring_work *w) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t out = syncobj_new(fd), unit;
    cpu_set_t allowed, one, used;
    struct job_bufs jb;
    int cpu, spread;

    CPU_ZERO(&used);
    job_bufs_init(fd, &jb, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0, 0);
    assert_int_equal(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
    for (unit = 0; unit < w->units; unit++) {
        int irq = unit_irq(w, unit), on = irq_effective_cpu(irq), err;

        err = irq_set_affinity_list(irq, "0\n");
        if (err != EPERM && err != EIO)
            fail_msg("%s%u (IRQ %d): a new affinity got %s", w->vector, unit, irq, strerror(err));
        CPU_SET(on, &used);
        for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
            long before, after;

            if (!CPU_ISSET(cpu, &allowed))
                continue;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
            before = irq_count_on(irq, on);
            assert_int_equal(w->run(fd, &jb, unit, out), 0);
            assert_int_equal(syncobj_status(fd, out, 30), 1);
            after = irq_count_on(irq, on);
            assert_int_equal(sched_setaffinity(0, sizeof(allowed), &allowed), 0);
            if (after == before)
                fail_msg("%s%u (IRQ %d, CPU %d): no interrupt on its CPU for work from CPU %d",
                         w->vector, unit, irq, on, cpu);
        }
        printf("# %s%u: IRQ %d on CPU %d, managed\n", w->vector, unit, irq, on);
    }
    spread = CPU_COUNT(&used);
    if (spread != (w->units < online ? (int)w->units : (int)online))
        fail_msg("%u %s vectors on %d of %ld CPUs", w->units, w->vector, spread, online);
    job_bufs_fini(fd, &jb);
    drmSyncobjDestroy(fd, out);
}

static void test_irq_managed(void **state) {
    int fd = FD(state), err_irq = irq_of("neuron-err");
    char buf[64] = "";
    FILE *f;

    irq_managed(fd, &(struct ring_work){"neuron-q", get_param(fd, DRM_NEURON_PARAM_NUM_CORES),
                                        run_job});
    irq_managed(fd, &(struct ring_work){"neuron-dma",
                                        get_param(fd, DRM_NEURON_PARAM_NUM_DMA_ENGINES), run_copy});

    /* The error vector keeps an affinity the administrator may change. */
    snprintf(buf, sizeof(buf), "/proc/irq/%d/smp_affinity_list", err_irq);
    f = fopen(buf, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_int_equal(irq_set_affinity_list(err_irq, buf), 0);
}

/*
 * A copy to any engine, submitted while every engine is idle, goes to the
 * engine whose vector the IRQ core put on the submitting CPU: its
 * completion is taken there, and no other engine's vector fires. CPUs
 * with no engine's vector are not checked (more CPUs than engines).
 */
static void test_copy_any_local(void **state) {
    int fd = FD(state), irqs[NEURON_MAX_DMA_ENGINES], on[NEURON_MAX_DMA_ENGINES], cpu, checked = 0;
    uint32_t engines = get_param(fd, DRM_NEURON_PARAM_NUM_DMA_ENGINES), out = syncobj_new(fd), e;
    const int copies = 5;
    cpu_set_t allowed, one;
    struct job_bufs jb;

    assert_in_range(engines, 1, NEURON_MAX_DMA_ENGINES);
    job_bufs_init(fd, &jb, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0, 0);
    for (e = 0; e < engines; e++) {
        char name[32];

        snprintf(name, sizeof(name), "neuron-dma%u", e);
        irqs[e] = irq_of(name);
        on[e] = irq_effective_cpu(irqs[e]);
    }
    assert_int_equal(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
    for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        long before[NEURON_MAX_DMA_ENGINES];
        uint32_t local = engines;
        int i;

        for (e = 0; e < engines && local == engines; e++)
            if (on[e] == cpu)
                local = e;
        if (!CPU_ISSET(cpu, &allowed) || local == engines)
            continue;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
        for (e = 0; e < engines; e++)
            before[e] = irq_count_on(irqs[e], on[e]);
        for (i = 0; i < copies; i++) {
            assert_int_equal(run_copy(fd, &jb, DRM_NEURON_ENGINE_ANY, out), 0);
            assert_int_equal(syncobj_status(fd, out, 30), 1);
        }
        for (e = 0; e < engines; e++) {
            long n = irq_count_on(irqs[e], on[e]) - before[e];

            if (e == local ? n < copies : n != 0)
                fail_msg("%d copies to any engine from CPU %d: %ld interrupts of neuron-dma%u "
                         "(IRQ %d on CPU %d), expected %s",
                         copies, cpu, n, e, irqs[e], on[e],
                         e == local ? "one each at least" : "none");
        }
        printf("# copies from CPU %d on neuron-dma%u\n", cpu, local);
        checked++;
    }
    assert_int_equal(sched_setaffinity(0, sizeof(allowed), &allowed), 0);
    if (!checked)
        fail_msg("no CPU of this process has a DMA engine's vector");
    job_bufs_fini(fd, &jb);
    drmSyncobjDestroy(fd, out);
}

static long read_sysfs_long(const char *attr);

/* Sets CPU @cpu online or offline: 0 or the errno. */
static int cpu_set_online(int cpu, int online) {
    char path[64];
    int fd, err = 0;

    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
    fd = open(path, O_WRONLY);
    if (fd < 0)
        return errno;
    if (write(fd, online ? "1" : "0", 1) < 0)
        err = errno;
    close(fd);
    return err;
}

/*
 * With every CPU of a ring's managed vector offline, the IRQ core shuts
 * the vector down and the device's message waits in the MSI-X pending
 * bit. The ring's timeout work then recovers the core, which first
 * collects the completions the device wrote: the job succeeds, later, and
 * the core is not reset. Back online, the vector works again.
 */
static void test_irq_cpu_offline(void **state) {
    int fd = FD(state), cpu = -1, irq = -1, err;
    uint32_t cores = get_param(fd, DRM_NEURON_PARAM_NUM_CORES), core;
    uint32_t out = syncobj_new(fd);
    struct job_bufs jb;
    char resets_attr[32];
    double t0, waited;
    long resets0;
    int status;

    for (core = 0; core < cores && cpu <= 0; core++) {
        char name[32];

        snprintf(name, sizeof(name), "neuron-q%u", core);
        irq = irq_of(name);
        cpu = irq_effective_cpu(irq);
    }
    core--;
    if (cpu <= 0)
        skip(); /* no core queue's vector on a CPU that can go offline */
    job_bufs_init(fd, &jb, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0, 0);
    err = cpu_set_online(cpu, 0);
    if (err == ENOENT || err == EPERM || err == EBUSY) {
        job_bufs_fini(fd, &jb);
        skip();
    }
    assert_int_equal(err, 0);
    snprintf(resets_attr, sizeof(resets_attr), "core%u/resets", core);
    resets0 = read_sysfs_long(resets_attr);
    t0 = now_s();
    err = run_job(fd, &jb, core, out);
    status = err ? 0 : syncobj_status(fd, out, 60);
    waited = now_s() - t0;
    assert_int_equal(cpu_set_online(cpu, 1), 0);
    assert_int_equal(err, 0);
    if (status != 1)
        fail_msg("core %u, IRQ %d's CPU %d offline: job status %d", core, irq, cpu, status);
    check_axpb(&jb);
    printf("# core %u with CPU %d offline: done after %.1f s\n", core, cpu, waited);

    /* Online again: the completion comes with its interrupt. */
    t0 = now_s();
    assert_int_equal(run_job(fd, &jb, core, out), 0);
    assert_int_equal(syncobj_status(fd, out, 30), 1);
    waited = now_s() - t0;
    if (waited > 2.0)
        fail_msg("core %u, CPU %d online again: job took %.1f s", core, cpu, waited);
    /* A reset is counted after it, which a second job on the core follows. */
    usleep(200000);
    if (read_sysfs_long(resets_attr) != resets0)
        fail_msg("core %u, IRQ %d's CPU %d offline: the core was reset as hung", core, irq, cpu);
    job_bufs_fini(fd, &jb);
    drmSyncobjDestroy(fd, out);
}

/*
 * The table of bad COPY, SUBMIT and SUBMIT_BATCH arguments that KUnit runs
 * against the checks and the simulator's unit test against the simulator
 * (uapi/neuron_accel_check_cases.h): neuron.ko returns each case's errno,
 * several faults in one call included. The valid cases run.
 */
static void test_check_table(void **state) {
    int fd = FD(state);
    uint32_t maxb = get_param(fd, DRM_NEURON_PARAM_MAX_BINDINGS);
    uint32_t out = syncobj_new(fd), fenceless = syncobj_new(fd);
    static const char *const names[] = {"COPY", "SUBMIT", "SUBMIT_BATCH"};
    static const unsigned long requests[] = {DRM_IOCTL_NEURON_COPY, DRM_IOCTL_NEURON_SUBMIT,
                                             DRM_IOCTL_NEURON_SUBMIT_BATCH};
    struct neuron_check_args base, *a = malloc(sizeof(*a));
    struct drm_neuron_binding b[NEURON_MAX_BINDINGS];
    struct drm_neuron_submit s;
    struct job_bufs jb;
    unsigned int i;

    assert_non_null(a);
    job_bufs_init(fd, &jb, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0, 0);
    base = (struct neuron_check_args){
        .copy =
            {
                .src_handle = bo_new(fd, 8192, DRM_NEURON_BO_HOST),
                .dst_handle = bo_new(fd, 8192, DRM_NEURON_BO_DEVICE),
                .size = 4096,
                .engine = DRM_NEURON_ENGINE_ANY,
                .out_sync = {.handle = out},
            },
        .submit =
            {
                .program_handle = jb.prog,
                .program_size = jb.prog_size,
                .num_bindings = 2,
                .out_sync = {.handle = out},
            },
        .batch = {.count = 1},
        .bindings =
            {
                {.handle = jb.in, .flags = DRM_NEURON_BIND_READ, .size = PROG_BYTES},
                {.handle = jb.out, .flags = DRM_NEURON_BIND_WRITE, .size = PROG_BYTES},
            },
        .fenceless = fenceless,
        .copy_bo_size = 8192,
        .program_bo_size = 4096,
        .limits =
            {
                .num_cores = get_param(fd, DRM_NEURON_PARAM_NUM_CORES),
                .num_dma = get_param(fd, DRM_NEURON_PARAM_NUM_DMA_ENGINES),
                .max_bindings = maxb,
                .trace_size = sizeof(struct neuron_trace_header),
                .caps = get_param(fd, DRM_NEURON_PARAM_CAPABILITIES),
            },
    };
    for (i = 0; i < sizeof(neuron_check_cases) / sizeof(neuron_check_cases[0]); i++) {
        const struct neuron_check_case *c = &neuron_check_cases[i];
        void *arg;
        int err;

        *a = base;
        a->submit.bindings = (uintptr_t)a->bindings;
        a->batch.submits = (uintptr_t)&a->submit;
        a->in_syncs_ptr = (uintptr_t)a->in_syncs;
        c->edit(a);
        arg = c->ioctl == NEURON_CHECK_COPY     ? (void *)&a->copy
              : c->ioctl == NEURON_CHECK_SUBMIT ? (void *)&a->submit
                                                : (void *)&a->batch;
        err = neuron_ioctl(fd, requests[c->ioctl], arg);
        if (err != c->err)
            fail_msg("%s, %s: %d, not %d", names[c->ioctl], c->name, err, c->err);
    }
    /* The valid cases ran and signalled the out-sync. */
    assert_int_equal(syncobj_status(fd, out, 30), 1);

    /* The largest binding count is accepted. */
    for (i = 0; i < maxb; i++)
        b[i] = base.bindings[i % 2];
    s = base.submit;
    s.bindings = (uintptr_t)b;
    s.num_bindings = maxb;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_SUBMIT, &s), 0);
    assert_int_equal(syncobj_status(fd, out, 30), 1);
    free(a);
    bo_close(fd, base.copy.src_handle);
    bo_close(fd, base.copy.dst_handle);
    drmSyncobjDestroy(fd, fenceless);
    drmSyncobjDestroy(fd, out);
    job_bufs_fini(fd, &jb);
}

/* One SUBMIT of @jb on @core, signalling @out, as a batch entry. */
static struct drm_neuron_submit batch_entry(const struct job_bufs *jb,
                                            const struct drm_neuron_binding *b, uint32_t core,
                                            uint32_t out) {
    return (struct drm_neuron_submit){
        .core = core,
        .program_handle = jb->prog,
        .program_size = jb->prog_size,
        .num_bindings = 2,
        .bindings = (uintptr_t)b,
        .out_sync = {.handle = out},
    };
}

static int submit_batch(int fd, struct drm_neuron_submit *e, uint32_t count) {
    struct drm_neuron_submit_batch sb = {.submits = (uintptr_t)e, .count = count};

    return neuron_ioctl(fd, DRM_IOCTL_NEURON_SUBMIT_BATCH, &sb);
}

/*
 * SUBMIT_BATCH: every job of a batch runs, in order on its core, its seqno
 * written back; a bad entry queues none of them; every field is checked.
 */
static void test_submit_batch(void **state) {
    int fd = FD(state);
    uint32_t cores = get_param(fd, DRM_NEURON_PARAM_NUM_CORES);
    struct drm_neuron_submit e[DRM_NEURON_MAX_BATCH + 1];
    uint32_t out[DRM_NEURON_MAX_BATCH + 1];
    struct drm_neuron_submit_batch sb;
    struct drm_neuron_binding b[2];
    struct job_bufs jb;
    uint64_t last_seqno[NEURON_MAX_CORES] = {0};
    unsigned int i;
    int status;

    job_bufs_init(fd, &jb, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, 0, 0);
    b[0] = (struct drm_neuron_binding){
        .handle = jb.in, .flags = DRM_NEURON_BIND_READ, .size = PROG_BYTES};
    b[1] = (struct drm_neuron_binding){
        .handle = jb.out, .flags = DRM_NEURON_BIND_WRITE, .size = PROG_BYTES};
    for (i = 0; i <= DRM_NEURON_MAX_BATCH; i++) {
        out[i] = syncobj_new(fd);
        /* Cores alternate in runs of three: runs are queued in order. */
        e[i] = batch_entry(&jb, b, (i / 3) % cores, out[i]);
    }

    /* A whole batch: every job done, fine, seqnos rising on each core. */
    assert_int_equal(submit_batch(fd, e, DRM_NEURON_MAX_BATCH), 0);
    for (i = 0; i < DRM_NEURON_MAX_BATCH; i++) {
        uint32_t c = e[i].core;

        assert_int_equal(neuron_wait(fd, out[i], 30, &status), 0);
        assert_int_equal(status, 0);
        assert_true(e[i].seqno > last_seqno[c]);
        last_seqno[c] = e[i].seqno;
    }
    check_axpb(&jb);

    /* One bad entry (the last): nothing queued, no out-sync touched. */
    for (i = 0; i < 3; i++) {
        drmSyncobjDestroy(fd, out[i]);
        out[i] = syncobj_new(fd);
        e[i] = batch_entry(&jb, b, 0, out[i]);
    }
    e[2].program_handle = 4242;
    assert_int_equal(submit_batch(fd, e, 3), -ENOENT);
    e[2].program_handle = jb.prog;
    e[1].bindings = 8;
    assert_int_equal(submit_batch(fd, e, 3), -EFAULT);
    e[1].bindings = (uintptr_t)b;
    e[0].reserved = 1;
    assert_int_equal(submit_batch(fd, e, 3), -EINVAL);
    e[0].reserved = 0;
    for (i = 0; i < 3; i++) {
        assert_int_equal(e[i].seqno, 0);
        /* No fence: the syncobj never received one. */
        assert_int_equal(neuron_wait(fd, out[i], 0, &status), -EINVAL);
    }

    /* The batch's own fields. */
#define EXPECT(assign, err)                                                                        \
    do {                                                                                           \
        sb = (struct drm_neuron_submit_batch){.submits = (uintptr_t)e, .count = 1};                \
        assign;                                                                                    \
        assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_SUBMIT_BATCH, &sb), err);               \
    } while (0)
    EXPECT((void)0, 0);
    assert_int_equal(neuron_wait(fd, out[0], 30, &status), 0);
    assert_int_equal(status, 0);
    EXPECT(sb.count = 0, -EINVAL);
    EXPECT(sb.count = DRM_NEURON_MAX_BATCH + 1, -EINVAL);
    EXPECT(sb.flags = 1, -EINVAL);
    EXPECT(sb.reserved = 1, -EINVAL);
    EXPECT(sb.submits = 8, -EFAULT);
#undef EXPECT

    for (i = 0; i <= DRM_NEURON_MAX_BATCH; i++)
        drmSyncobjDestroy(fd, out[i]);
    job_bufs_fini(fd, &jb);
}

/* A load past its binding faults; the core keeps working. */
static void test_submit_fault(void **state) {
    int fd = FD(state);
    struct job_bufs bad, good;
    uint32_t o1 = syncobj_new(fd), o2 = syncobj_new(fd);

    job_bufs_init(fd, &bad, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 4, 0);
    job_bufs_init(fd, &good, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, 0, 0);
    assert_int_equal(submit(fd, &bad, 0, o1, NULL), 0);
    assert_int_equal(submit(fd, &good, 0, o2, NULL), 0);
    assert_int_equal(syncobj_status(fd, o1, 30), -EFAULT);
    assert_int_equal(syncobj_status(fd, o2, 30), 1);
    check_axpb(&good);
    /* The faulting job stored nothing. */
    assert_true(bad.pout[0] == -1.0f);
    job_bufs_fini(fd, &bad);
    job_bufs_fini(fd, &good);
}

/*
 * DRM_IOCTL_NEURON_WAIT: the status of jobs and copies in one call, the
 * same as the sync file's, and every field checked.
 */
static void test_wait(void **state) {
    int fd = FD(state);
    struct job_bufs bad, good;
    uint32_t o1 = syncobj_new(fd), o2 = syncobj_new(fd), o3 = syncobj_new(fd);
    uint32_t h = bo_new(fd, 4096, DRM_NEURON_BO_HOST), d = bo_new(fd, 4096, DRM_NEURON_BO_DEVICE);
    struct drm_neuron_wait w;
    uint32_t timeline;
    int status;

    job_bufs_init(fd, &bad, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 4, 0);
    job_bufs_init(fd, &good, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, 0, 0);
    assert_int_equal(submit(fd, &bad, 0, o1, NULL), 0);
    assert_int_equal(submit(fd, &good, 0, o2, NULL), 0);
    assert_int_equal(copy(fd, h, 0, d, 0, 4096, o3, DRM_NEURON_ENGINE_ANY, NULL), 0);
    assert_int_equal(neuron_wait(fd, o1, 30, &status), 0);
    assert_int_equal(status, -EFAULT);
    assert_int_equal(neuron_wait(fd, o2, 30, &status), 0);
    assert_int_equal(status, 0);
    check_axpb(&good);
    assert_int_equal(neuron_wait(fd, o3, 30, &status), 0);
    assert_int_equal(status, 0);
    /* A deadline in the past checks a signalled fence. */
    assert_int_equal(neuron_wait(fd, o1, -1, &status), 0);
    assert_int_equal(status, -EFAULT);
    /* The same result as the generic wait and the sync file. */
    assert_int_equal(syncobj_status(fd, o1, 30), -EFAULT);
    assert_int_equal(syncobj_status(fd, o2, 30), 1);

    /* Every field is checked. */
    memset(&w, 0, sizeof(w));
    w.sync.handle = o2;
    w.flags = 1;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_WAIT, &w), -EINVAL);
    w.flags = 0;
    w.reserved = 1;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_WAIT, &w), -EINVAL);
    w.reserved = 0;
    w.sync.pad = 1;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_WAIT, &w), -EINVAL);
    w.sync.pad = 0;
    w.sync.handle = 0;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_WAIT, &w), -EINVAL);
    w.sync.handle = 0xdead;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_WAIT, &w), -ENOENT);
    w.sync.handle = o2;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_WAIT, &w), 0);
    /* A syncobj nothing was submitted to, and a point not yet there. */
    drmSyncobjDestroy(fd, o3);
    o3 = syncobj_new(fd);
    assert_int_equal(neuron_wait(fd, o3, 1, &status), -EINVAL);
    assert_int_equal(drmSyncobjCreate(fd, 0, &timeline), 0);
    memset(&w, 0, sizeof(w));
    w.sync.handle = timeline;
    w.sync.point = 5;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_WAIT, &w), -EINVAL);

    drmSyncobjDestroy(fd, timeline);
    drmSyncobjDestroy(fd, o1);
    drmSyncobjDestroy(fd, o2);
    drmSyncobjDestroy(fd, o3);
    bo_close(fd, h);
    bo_close(fd, d);
    job_bufs_fini(fd, &bad);
    job_bufs_fini(fd, &good);
}

/* A job (@jb) or a copy (@jb NULL: @h to @dv) signalling point @point of @tl. */
static int signal_point(int fd, const struct job_bufs *jb, uint32_t h, uint32_t dv, uint32_t tl,
                        uint64_t point, const struct drm_neuron_sync *in) {
    const struct drm_neuron_sync out = {.handle = tl, .point = point};

    if (jb)
        return submit_sync(fd, jb, 0, out, NULL);
    return copy_sync(fd, h, 0, dv, 0, 4096, out, in, DRM_NEURON_ENGINE_ANY, NULL);
}

/*
 * Timeline points (drm_syncobj with dma_fence_chain): WAIT reports a
 * point's own job, a passed point is collected (status 0), an unordered
 * point lands on the newest, and a binary signal replaces the timeline.
 * libneuron's simulator test `timeline_points` makes the same calls.
 */
static void test_timeline(void **state) {
    int fd = FD(state);
    struct job_bufs bad, good;
    uint32_t h = bo_new(fd, 4096, DRM_NEURON_BO_HOST), dv = bo_new(fd, 4096, DRM_NEURON_BO_DEVICE);
    struct drm_neuron_sync after;
    uint32_t tl;
    int status;

    job_bufs_init(fd, &bad, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 4, 0);
    job_bufs_init(fd, &good, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, 0, 0);
    assert_int_equal(drmSyncobjCreate(fd, 0, &tl), 0);
    assert_int_equal(wait_point(fd, tl, 1, 0, &status), -EINVAL);
    assert_int_equal(signal_point(fd, &bad, 0, 0, tl, 1, NULL), 0);
    assert_int_equal(wait_point(fd, tl, 1, 30, &status), 0);
    assert_int_equal(status, -EFAULT);
    assert_int_equal(signal_point(fd, &good, 0, 0, tl, 2, NULL), 0);
    assert_int_equal(signal_point(fd, NULL, h, dv, tl, 3, NULL), 0);
    assert_int_equal(wait_point(fd, tl, 4, 0, &status), -EINVAL);
    assert_int_equal(wait_point(fd, tl, 3, 30, &status), 0);
    assert_int_equal(status, 0);
    check_axpb(&good);
    assert_int_equal(wait_point(fd, tl, 1, 0, &status), 0);
    assert_int_equal(status, 0);
    assert_int_equal(wait_point(fd, tl, 2, 0, &status), 0);
    assert_int_equal(status, 0);
    after = (struct drm_neuron_sync){.handle = tl, .point = 3};
    assert_int_equal(signal_point(fd, NULL, h, dv, tl, 4, &after), 0);
    assert_int_equal(wait_point(fd, tl, 4, 30, &status), 0);
    assert_int_equal(status, 0);
    /* A faulting newest point: WAIT says so, the chain's sync file does not. */
    assert_int_equal(signal_point(fd, &bad, 0, 0, tl, 5, NULL), 0);
    assert_int_equal(wait_point(fd, tl, 5, 30, &status), 0);
    assert_int_equal(status, -EFAULT);
    assert_int_equal(syncobj_status(fd, tl, 30), 1);
    /* An unordered point lands on the newest one. */
    assert_int_equal(signal_point(fd, NULL, h, dv, tl, 2, NULL), 0);
    assert_int_equal(wait_point(fd, tl, 5, 30, &status), 0);
    assert_int_equal(status, 0);
    assert_int_equal(wait_point(fd, tl, 6, 0, &status), -EINVAL);
    /* A binary signal replaces the timeline: no points any more. */
    assert_int_equal(signal_point(fd, NULL, h, dv, tl, 0, NULL), 0);
    assert_int_equal(wait_point(fd, tl, 0, 30, &status), 0);
    assert_int_equal(wait_point(fd, tl, 1, 0, &status), -EINVAL);

    drmSyncobjDestroy(fd, tl);
    bo_close(fd, h);
    bo_close(fd, dv);
    job_bufs_fini(fd, &bad);
    job_bufs_fini(fd, &good);
}

/* ------------------------------------------------------------------------
 * Timeout and core reset (own boot: rebinds the device)
 */

static long read_sysfs_long(const char *attr) {
    return neuron_test_sysfs_long(&tdev, attr);
}

/*
 * Waits up to @timeout_s for sysfs host_memory_mapped to read @want (jobs
 * drop their buffers shortly after their fences signal) and returns the
 * last value read.
 */
static long wait_host_mapped(long want, double timeout_s) {
    double end = now_s() + timeout_s;
    long v;

    while ((v = read_sysfs_long("host_memory_mapped")) != want && now_s() < end)
        usleep(10000);
    return v;
}

static void rebind(void) {
    write_file("/sys/bus/pci/drivers/neuron/unbind", tdev.bdf);
    write_file("/sys/bus/pci/drivers/neuron/bind", tdev.bdf);
    assert_int_equal(neuron_test_find_device(&tdev), 0);
}

static void test_timeout(void **state) {
    int fd, fd2;
    struct job_bufs spin, good, good2;
    uint32_t s_spin, s_good, s_good2;
    uint32_t cores;
    double t0, t1, dt;
    int status;

    (void)state;
    write_file("/sys/module/neuron/parameters/job_timeout_ms", "2000");
    rebind();
    fd = open_dev();
    fd2 = open_dev();
    assert_true(fd >= 0 && fd2 >= 0);
    cores = get_param(fd, DRM_NEURON_PARAM_NUM_CORES);
    s_spin = syncobj_new(fd);
    s_good = syncobj_new(fd);
    s_good2 = syncobj_new(fd2);

    /* The spinning job's input is a host buffer: mapped only while it runs. */
    job_bufs_init(fd, &spin, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0, 1);
    job_bufs_init(fd, &good, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  0);
    job_bufs_init(fd2, &good2, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  0);

    assert_int_equal(wait_host_mapped(0, 5), 0);
    t0 = now_s();
    assert_int_equal(submit(fd, &spin, 0, s_spin, NULL), 0);
    assert_int_equal(read_sysfs_long("host_memory_mapped"), PROG_BYTES);
    /* DRM_IOCTL_NEURON_WAIT gives up at its deadline (the job spins 2 s). */
    assert_int_equal(neuron_wait(fd, s_spin, -1, &status), -ETIME);
    t1 = now_s();
    assert_int_equal(neuron_wait(fd, s_spin, 0.1, &status), -ETIME);
    assert_true(now_s() - t1 >= 0.09);
    /* Queued behind the spinning job on the same core: runs after it. */
    assert_int_equal(submit(fd, &good, 0, s_good, NULL), 0);
    /* Another process's job on another core is not disturbed. */
    assert_int_equal(submit(fd2, &good2, cores > 1 ? 1 : 0, s_good2, NULL), 0);
    if (cores > 1) {
        assert_int_equal(syncobj_status(fd2, s_good2, 30), 1);
        assert_true(now_s() - t0 < 1.9);
    }
    assert_int_equal(neuron_wait(fd, s_spin, 30, &status), 0);
    assert_int_equal(status, -ETIMEDOUT);
    assert_int_equal(syncobj_status(fd, s_spin, 30), -ETIMEDOUT);
    dt = now_s() - t0;
    printf("# spinning job failed with -ETIMEDOUT after %.2f s\n", dt);
    assert_true(dt >= 1.9 && dt < 15);
    assert_int_equal(syncobj_status(fd, s_good, 30), 1);
    assert_int_equal(syncobj_status(fd2, s_good2, 30), 1);
    check_axpb(&good);
    check_axpb(&good2);
    assert_int_equal(wait_host_mapped(0, 5), 0);

    /* The core still works. */
    memset(good.pout, 0, PROG_BYTES);
    assert_int_equal(submit(fd, &good, 0, s_good, NULL), 0);
    assert_int_equal(syncobj_status(fd, s_good, 30), 1);
    check_axpb(&good);

    job_bufs_fini(fd, &spin);
    job_bufs_fini(fd, &good);
    job_bufs_fini(fd2, &good2);
    close(fd);
    close(fd2);
    write_file("/sys/module/neuron/parameters/job_timeout_ms", "5000");
    rebind();
}

/* A fatal device error: full reset, work on the hardware fails, more runs. */
static void test_fatal_reset(void **state) {
    char path[400];
    struct job_bufs spin, good;
    uint32_t s_spin, s_good;
    int fd = FD(state);

    /* The driver's debugfs knob writes INJECT.FATAL. */
    snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/inject_fatal", tdev.bdf);
    if (access(path, W_OK))
        skip();

    s_spin = syncobj_new(fd);
    s_good = syncobj_new(fd);
    job_bufs_init(fd, &spin, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  1);
    job_bufs_init(fd, &good, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  0);
    assert_int_equal(submit(fd, &spin, 0, s_spin, NULL), 0);
    usleep(200000);
    write_file(path, "1");
    assert_int_equal(syncobj_status(fd, s_spin, 30), -ECANCELED);
    assert_int_equal(submit(fd, &good, 0, s_good, NULL), 0);
    assert_int_equal(syncobj_status(fd, s_good, 30), 1);
    check_axpb(&good);
    job_bufs_fini(fd, &spin);
    job_bufs_fini(fd, &good);
}

/*
 * A halted queue (the debugfs reset_core knob moves Q_TAIL too far): the
 * error interrupt makes the driver reset the core, which then runs jobs.
 */
static void test_queue_halt(void **state) {
    char path[400];
    struct job_bufs good;
    uint32_t s_good;
    long resets0;
    int fd = FD(state);

    snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/reset_core", tdev.bdf);
    if (access(path, W_OK))
        skip();
    resets0 = read_sysfs_long("core0/resets");
    s_good = syncobj_new(fd);
    job_bufs_init(fd, &good, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  0);
    write_file(path, "0");
    usleep(300000);
    assert_int_equal(submit(fd, &good, 0, s_good, NULL), 0);
    assert_int_equal(syncobj_status(fd, s_good, 30), 1);
    check_axpb(&good);
    if (resets0 >= 0)
        assert_true(read_sysfs_long("core0/resets") > resets0);
    job_bufs_fini(fd, &good);
}

/* ------------------------------------------------------------------------
 * Isolation between processes ("isolation", registered on its own)
 *
 * Process A creates device and host buffers holding a secret pattern.
 * Other processes, each with an open of its own (a forked child, and one
 * that re-executes this program and so inherits no descriptor, mapping or
 * memory of A), try to reach them: guessed handles, A's mmap offsets on
 * their own file, global names, dma-buf export, and jobs that load and
 * store far outside their own bindings. None of that may succeed, and A's
 * buffers must be intact afterwards. Once A freed its buffers, a new
 * buffer in another process (at the same device memory) reads zeros.
 */

#define ISO_BOS 4        /* A's buffers: two in device, two in host memory */
#define ISO_HANDLES 1024 /* handle values 0..ISO_HANDLES-1 are guessed */

struct iso_secret {
    uint32_t handle[ISO_BOS];
    uint32_t region[ISO_BOS];
    uint64_t mmap_offset[ISO_BOS];
    uint64_t size[ISO_BOS];
    uint64_t device_addr[ISO_BOS];
};

/* Buffer sizes of A: distinct, so that a later buffer of one size lands on it. */
static const uint64_t iso_sizes[ISO_BOS] = {
    MIB + 12 * 4096,
    2 * MIB + 4096,
    MIB + 4096,
    3 * 4096,
};

static const uint32_t iso_regions[ISO_BOS] = {
    DRM_NEURON_BO_DEVICE,
    DRM_NEURON_BO_DEVICE,
    DRM_NEURON_BO_HOST,
    DRM_NEURON_BO_HOST,
};

#define ISO_SEED(i) (0x5ec7e700u + (i))

/*
 * The probes run in children, where a failed cmocka assertion would carry
 * on with the parent's test list: they report failures by line instead.
 */
#define PROBE(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("# isolation probe (pid %d): %s failed at line %d (errno %d)\n", (int)getpid(), \
                   #cond, __LINE__, errno);                                                        \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static uint32_t try_bo_new(int fd, uint64_t size, uint32_t region) {
    struct drm_neuron_bo_create c = {.size = size, .region = region};

    return neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_CREATE, &c) ? 0 : c.handle;
}

static void *try_bo_map(int fd, uint32_t handle, struct drm_neuron_bo_info *info) {
    struct drm_neuron_bo_info i = {.handle = handle};
    void *p;

    if (neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_INFO, &i))
        return NULL;
    p = mmap(NULL, i.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, i.mmap_offset);
    if (p == MAP_FAILED)
        return NULL;
    if (info)
        *info = i;
    return p;
}

static int mmap_refused(int fd, uint64_t offset, uint64_t size, int prot, int flags) {
    void *p = mmap(NULL, size, prot, flags, fd, offset);

    if (p != MAP_FAILED) {
        munmap(p, size);
        printf("# mmap of offset %#llx, %llu bytes succeeded\n", (unsigned long long)offset,
               (unsigned long long)size);
        return 0;
    }
    return errno == EACCES || errno == EINVAL || errno == ENOENT;
}

static int all_bytes(const void *p, uint64_t n, uint8_t v) {
    const uint8_t *b = p;
    uint64_t i;

    for (i = 0; i < n; i++)
        if (b[i] != v)
            return 0;
    return 1;
}

static int is_own(uint32_t h, const uint32_t *own, int n) {
    int i;

    for (i = 0; i < n; i++)
        if (own[i] == h)
            return 1;
    return 0;
}

/* Runs a job whose load (slot 0) and store (slot 1) start at the offsets. */
static int iso_job(int fd, uint32_t prog, uint32_t in, uint32_t out, uint32_t sync,
                   uint64_t load_offset, uint64_t store_offset) {
    struct drm_neuron_binding b[2] = {
        {.handle = in, .flags = DRM_NEURON_BIND_READ, .size = PROG_BYTES},
        {.handle = out, .flags = DRM_NEURON_BIND_WRITE, .size = PROG_BYTES},
    };
    struct drm_neuron_submit s = {
        .program_handle = prog,
        .num_bindings = 2,
        .bindings = (uintptr_t)b,
        .out_sync = {.handle = sync},
    };
    struct prog p;
    void *pp;
    int ret;

    s.program_size = build_axpb(&p, load_offset);
    p.insn[3].dma.dram.offset = store_offset;
    pp = try_bo_map(fd, prog, NULL);
    if (!pp)
        return -ENOMEM;
    memcpy(pp, &p, sizeof(p));
    munmap(pp, 4096);
    ret = neuron_ioctl(fd, DRM_IOCTL_NEURON_SUBMIT, &s);
    if (ret)
        return ret;
    return syncobj_status(fd, sync, 30);
}

/* Everything a process with its own open may try against A's buffers. */
static int iso_probe(const struct iso_secret *s) {
    static const uint32_t far_handles[] = {
        0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 1u << 20,
    };
    uint32_t guesses[ISO_HANDLES + 5];
    uint32_t own[5], prog, din, dout, hout, sync;
    struct drm_neuron_bo_info din_info, dout_info;
    uint64_t lo = ~0ull, hi = 0, off;
    float *pout;
    uint8_t *hp;
    int fd, i, n, ret;
    unsigned int g;

    for (g = 0; g < ISO_HANDLES; g++)
        guesses[g] = g;
    for (i = 0; i < 5; i++)
        guesses[ISO_HANDLES + i] = far_handles[i];
    n = ISO_HANDLES + 5;

    fd = open_dev();
    PROBE(fd >= 0);

    /* No handle of this new file names anything, A's values included. */
    for (i = 0; i < n; i++) {
        struct drm_neuron_bo_info info = {.handle = guesses[i]};
        struct drm_gem_close cl = {.handle = guesses[i]};
        struct drm_prime_handle ph = {.handle = guesses[i], .flags = DRM_CLOEXEC};

        PROBE(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_INFO, &info) == -ENOENT);
        ret = neuron_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph);
        PROBE(ret == -ENOENT || ret == -EOPNOTSUPP);
        PROBE(neuron_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &cl) == -EINVAL);
    }
    /* Global names are refused, whatever the name. */
    for (i = 0; i < 64; i++) {
        struct drm_gem_open op = {.name = i};
        struct drm_gem_flink fl = {.handle = i};

        PROBE(neuron_ioctl(fd, DRM_IOCTL_GEM_OPEN, &op) == -EOPNOTSUPP);
        PROBE(neuron_ioctl(fd, DRM_IOCTL_GEM_FLINK, &fl) == -EOPNOTSUPP);
    }

    /* A's mmap offsets, and every page around them, on this file. */
    for (i = 0; i < ISO_BOS; i++) {
        PROBE(mmap_refused(fd, s->mmap_offset[i], s->size[i], PROT_READ | PROT_WRITE, MAP_SHARED));
        PROBE(mmap_refused(fd, s->mmap_offset[i], 4096, PROT_READ, MAP_SHARED));
        PROBE(mmap_refused(fd, s->mmap_offset[i], 4096, PROT_READ, MAP_PRIVATE));
        if (s->mmap_offset[i] < lo)
            lo = s->mmap_offset[i];
        if (s->mmap_offset[i] + s->size[i] > hi)
            hi = s->mmap_offset[i] + s->size[i];
    }
    lo = lo > 64 * 4096 ? lo - 64 * 4096 : 0;
    for (off = lo; off < hi + 64 * 4096; off += 4096)
        PROBE(mmap_refused(fd, off, 4096, PROT_READ, MAP_SHARED));
    PROBE(mmap_refused(fd, 0, 4096, PROT_READ, MAP_SHARED));

    /* Buffers of its own, then guessed handles in COPY and SUBMIT. */
    prog = try_bo_new(fd, 4096, DRM_NEURON_BO_DEVICE);
    din = try_bo_new(fd, PROG_BYTES, DRM_NEURON_BO_DEVICE);
    dout = try_bo_new(fd, PROG_BYTES, DRM_NEURON_BO_DEVICE);
    hout = try_bo_new(fd, MIB, DRM_NEURON_BO_HOST);
    PROBE(prog && din && dout && hout);
    PROBE(drmSyncobjCreate(fd, 0, &sync) == 0);
    own[0] = prog;
    own[1] = din;
    own[2] = dout;
    own[3] = hout;
    hp = try_bo_map(fd, hout, NULL);
    PROBE(hp);
    {
        struct drm_prime_handle ph = {.handle = din, .flags = DRM_CLOEXEC};

        PROBE(neuron_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph) == -EOPNOTSUPP);
    }
    for (i = 0; i < n; i++) {
        struct drm_neuron_binding b[2] = {
            {.handle = guesses[i], .flags = DRM_NEURON_BIND_READ, .size = 4096},
            {.handle = dout, .flags = DRM_NEURON_BIND_WRITE, .size = PROG_BYTES},
        };
        struct drm_neuron_submit sub = {
            .program_handle = prog,
            .program_size = 4096,
            .num_bindings = 2,
            .bindings = (uintptr_t)b,
            .out_sync = {.handle = sync},
        };

        if (is_own(guesses[i], own, 4))
            continue;
        PROBE(copy(fd, guesses[i], 0, hout, 0, 4096, sync, DRM_NEURON_ENGINE_ANY, NULL) == -ENOENT);
        PROBE(copy(fd, hout, 0, guesses[i], 0, 4096, sync, DRM_NEURON_ENGINE_ANY, NULL) == -ENOENT);
        PROBE(neuron_ioctl(fd, DRM_IOCTL_NEURON_SUBMIT, &sub) == -ENOENT);
        b[0].handle = din;
        sub.program_handle = guesses[i];
        PROBE(neuron_ioctl(fd, DRM_IOCTL_NEURON_SUBMIT, &sub) == -ENOENT);
    }
    PROBE(all_bytes(hp, MIB, 0));

    /*
     * Jobs that load from and store to far outside their own bindings,
     * at the very offsets where A's device buffers would be: they fault.
     */
    pout = try_bo_map(fd, dout, &dout_info);
    PROBE(pout);
    din_info = (struct drm_neuron_bo_info){.handle = din};
    PROBE(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_INFO, &din_info) == 0);
    for (i = 0; i < NEURON_PARTITIONS * PROG_N; i++)
        pout[i] = -1.0f;
    {
        uint64_t offs[4 + 2 * ISO_BOS];
        int k = 0, j;

        offs[k++] = PROG_BYTES;
        offs[k++] = MIB;
        offs[k++] = 1ull << 40;
        offs[k++] = ~0ull & ~3ull;
        for (j = 0; j < ISO_BOS; j++) {
            if (s->region[j] != DRM_NEURON_BO_DEVICE)
                continue;
            offs[k++] = s->device_addr[j] - din_info.device_addr;
            offs[k++] = s->device_addr[j] - dout_info.device_addr;
        }
        for (j = 0; j < k; j++) {
            ret = iso_job(fd, prog, din, dout, sync, offs[j], 0);
            if (ret != -EFAULT)
                printf("# load at %#llx: fence status %d\n", (unsigned long long)offs[j], ret);
            PROBE(ret == -EFAULT);
            ret = iso_job(fd, prog, din, dout, sync, 0, offs[j]);
            if (ret != -EFAULT)
                printf("# store at %#llx: fence status %d\n", (unsigned long long)offs[j], ret);
            PROBE(ret == -EFAULT);
        }
        /* Nothing was stored; a job within its bindings still runs. */
        for (i = 0; i < NEURON_PARTITIONS * PROG_N; i++)
            PROBE(pout[i] == -1.0f);
        PROBE(iso_job(fd, prog, din, dout, sync, 0, 0) == 1);
        for (i = 0; i < NEURON_PARTITIONS * PROG_N; i++)
            PROBE(pout[i] == 1.0f); /* in is zeroed: 0 * 2 + 1 */
    }
    munmap(pout, dout_info.size);
    munmap(hp, MIB);
    close(fd);
    return 0;
}

/* A fresh process's new buffers, where A's were, read zeros. */
static int iso_reuse_probe(const struct iso_secret *s) {
    uint32_t h[ISO_BOS], hout, sync;
    int fd, i, j, overlap = 0;
    uint8_t *hp;

    fd = open_dev();
    PROBE(fd >= 0);
    PROBE(drmSyncobjCreate(fd, 0, &sync) == 0);
    hout = try_bo_new(fd, 4 * MIB, DRM_NEURON_BO_HOST);
    PROBE(hout);
    hp = try_bo_map(fd, hout, NULL);
    PROBE(hp);
    for (i = 0; i < ISO_BOS; i++) {
        struct drm_neuron_bo_info info;
        void *p;

        h[i] = try_bo_new(fd, s->size[i], s->region[i]);
        PROBE(h[i]);
        p = try_bo_map(fd, h[i], &info);
        PROBE(p);
        /* Through the CPU mapping (the BAR for device memory) ... */
        PROBE(all_bytes(p, info.size, 0));
        munmap(p, info.size);
        /* ... and through the DMA engines. */
        memset(hp, 0xff, info.size);
        PROBE(copy(fd, h[i], 0, hout, 0, info.size, sync, DRM_NEURON_ENGINE_ANY, NULL) == 0);
        PROBE(syncobj_status(fd, sync, 60) == 1);
        PROBE(all_bytes(hp, info.size, 0));
        if (info.region != DRM_NEURON_BO_DEVICE)
            continue;
        for (j = 0; j < ISO_BOS; j++)
            if (s->region[j] == DRM_NEURON_BO_DEVICE &&
                info.device_addr < s->device_addr[j] + s->size[j] &&
                s->device_addr[j] < info.device_addr + info.size)
                overlap = 1;
    }
    /* Otherwise the test proved nothing about reused memory. */
    PROBE(overlap);
    close(fd);
    return 0;
}

static void iso_hex(char *out, const void *p, size_t n) {
    const uint8_t *b = p;
    size_t i;

    for (i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static int iso_unhex(void *p, size_t n, const char *in) {
    uint8_t *b = p;
    size_t i;

    if (strlen(in) != 2 * n)
        return -1;
    for (i = 0; i < n; i++) {
        unsigned int v;

        if (sscanf(in + 2 * i, "%2x", &v) != 1)
            return -1;
        b[i] = v;
    }
    return 0;
}

/* Entry point of the re-executed child: "isolation-probe HEX". */
static int iso_probe_main(const char *hex) {
    struct iso_secret s;

    if (iso_unhex(&s, sizeof(s), hex))
        return 2;
    return iso_probe(&s);
}

static void iso_wait(pid_t pid, const char *what) {
    int status;

    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        fail_msg("%s failed: status %#x", what, status);
}

static void test_isolation(void **state) {
    int fd = FD(state), pipefd[2], i;
    uint32_t sync = syncobj_new(fd);
    char hex[2 * sizeof(struct iso_secret) + 1];
    char *argv[4];
    struct iso_secret s;
    uint8_t *p[ISO_BOS];
    pid_t pid;

    /* B forks before A has anything, and gets A's offsets through a pipe. */
    assert_int_equal(pipe(pipefd), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (!pid) {
        close(fd);
        close(pipefd[1]);
        if (read(pipefd[0], &s, sizeof(s)) != sizeof(s))
            _exit(2);
        _exit(iso_probe(&s));
    }
    close(pipefd[0]);

    memset(&s, 0, sizeof(s));
    for (i = 0; i < ISO_BOS; i++) {
        struct drm_neuron_bo_info info;

        s.handle[i] = bo_new(fd, iso_sizes[i], iso_regions[i]);
        p[i] = try_bo_map(fd, s.handle[i], &info);
        assert_non_null(p[i]);
        s.region[i] = info.region;
        s.mmap_offset[i] = info.mmap_offset;
        s.size[i] = info.size;
        s.device_addr[i] = info.device_addr;
    }
    /* Device buffer 0 written through the BAR, 1 by DMA and through the BAR. */
    fill(p[0], s.size[0], ISO_SEED(0));
    fill(p[2], s.size[2], ISO_SEED(1));
    assert_int_equal(
        copy(fd, s.handle[2], 0, s.handle[1], 0, s.size[2], sync, DRM_NEURON_ENGINE_ANY, NULL), 0);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    fill(p[1] + s.size[2], s.size[1] - s.size[2], ISO_SEED(4));
    fill(p[2], s.size[2], ISO_SEED(2));
    fill(p[3], s.size[3], ISO_SEED(3));
    /* A's global name attempts and dma-buf export are refused too. */
    for (i = 0; i < ISO_BOS; i++) {
        struct drm_gem_flink fl = {.handle = s.handle[i]};
        struct drm_prime_handle ph = {.handle = s.handle[i], .flags = DRM_CLOEXEC};

        assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_GEM_FLINK, &fl), -EOPNOTSUPP);
        assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph), -EOPNOTSUPP);
    }
    printf("# A: handles %u..%u, mmap offsets %#llx..%#llx, device memory at %#llx, %#llx\n",
           s.handle[0], s.handle[ISO_BOS - 1], (unsigned long long)s.mmap_offset[0],
           (unsigned long long)s.mmap_offset[ISO_BOS - 1], (unsigned long long)s.device_addr[0],
           (unsigned long long)s.device_addr[1]);

    assert_int_equal(write(pipefd[1], &s, sizeof(s)), sizeof(s));
    close(pipefd[1]);
    iso_wait(pid, "forked process with its own open");

    /* A child that inherits nothing: this program again, from exec. */
    iso_hex(hex, &s, sizeof(s));
    argv[0] = "neuron-exec-test";
    argv[1] = "isolation-probe";
    argv[2] = hex;
    argv[3] = NULL;
    pid = fork();
    assert_true(pid >= 0);
    if (!pid) {
        execv("/proc/self/exe", argv);
        _exit(3);
    }
    iso_wait(pid, "re-executed process");

    /* A's buffers are untouched, its handles still valid. */
    {
        uint8_t *want = malloc(s.size[1]);

        assert_non_null(want);
        fill(want, s.size[0], ISO_SEED(0));
        assert_memory_equal(p[0], want, s.size[0]);
        fill(want, s.size[2], ISO_SEED(1));
        fill(want + s.size[2], s.size[1] - s.size[2], ISO_SEED(4));
        assert_memory_equal(p[1], want, s.size[1]);
        fill(want, s.size[2], ISO_SEED(2));
        assert_memory_equal(p[2], want, s.size[2]);
        fill(want, s.size[3], ISO_SEED(3));
        assert_memory_equal(p[3], want, s.size[3]);
        free(want);
    }

    /* A frees everything; a new process's buffers there read zeros. */
    for (i = 0; i < ISO_BOS; i++) {
        munmap(p[i], s.size[i]);
        bo_close(fd, s.handle[i]);
    }
    pid = fork();
    assert_true(pid >= 0);
    if (!pid) {
        close(fd);
        _exit(iso_reuse_probe(&s));
    }
    iso_wait(pid, "new buffers after A freed its own");
    drmSyncobjDestroy(fd, sync);
}

/* ------------------------------------------------------------------------
 * Concurrency and cleanup
 */

/* One worker: copies through device memory and jobs, all verified. */
static int worker(int id, int rounds) {
    int fd = open_dev(), r;
    uint32_t cores, out;
    uint64_t n = 256 * 1024 + id * 4096 + 3;
    uint32_t h1, h2, d;
    uint8_t *p1, *p2;
    struct job_bufs jb;

    if (fd < 0)
        return 10;
    cores = get_param(fd, DRM_NEURON_PARAM_NUM_CORES);
    out = syncobj_new(fd);
    h1 = bo_new(fd, n, DRM_NEURON_BO_HOST);
    h2 = bo_new(fd, n, DRM_NEURON_BO_HOST);
    d = bo_new(fd, n, DRM_NEURON_BO_DEVICE);
    p1 = bo_map(fd, h1, NULL);
    p2 = bo_map(fd, h2, NULL);
    job_bufs_init(fd, &jb, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0, 0);
    for (r = 0; r < rounds; r++) {
        int i;

        fill(p1, n, id * 1000 + r);
        memset(p2, 0, n);
        if (copy(fd, h1, 0, d, 0, n, out, DRM_NEURON_ENGINE_ANY, NULL) ||
            syncobj_status(fd, out, 60) != 1)
            return 1;
        if (copy(fd, d, 0, h2, 0, n, out, DRM_NEURON_ENGINE_ANY, NULL) ||
            syncobj_status(fd, out, 60) != 1)
            return 2;
        if (memcmp(p1, p2, n))
            return 3;
        for (i = 0; i < NEURON_PARTITIONS * PROG_N; i++)
            jb.pin[i] = (float)(i + id + r);
        memset(jb.pout, 0, PROG_BYTES);
        if (submit(fd, &jb, (id + r) % cores, out, NULL) || syncobj_status(fd, out, 60) != 1)
            return 4;
        for (i = 0; i < NEURON_PARTITIONS * PROG_N; i++)
            if (jb.pout[i] != jb.pin[i] * 2.0f + 1.0f)
                return 5;
    }
    close(fd);
    return 0;
}

static void test_concurrent(void **state) {
    pid_t pids[4];
    int i, status;

    (void)state;
    for (i = 0; i < 4; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (!pids[i])
            _exit(worker(i, 20));
    }
    for (i = 0; i < 4; i++) {
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status))
            fail_msg("worker %d failed: status %#x", i, status);
    }
}

/* Whether all of device memory can be allocated again (nothing leaked). */
static int device_mem_free(int fd) {
    struct drm_neuron_bo_create c = {
        .size = get_param(fd, DRM_NEURON_PARAM_DEVICE_MEM_SIZE),
        .region = DRM_NEURON_BO_DEVICE,
    };

    int ret = neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_CREATE, &c);

    if (ret) {
        printf("# allocating all device memory: %s\n", strerror(-ret));
        return 0;
    }
    bo_close(fd, c.handle);
    return 1;
}

/* kill -9 of a process with 1000 copies and jobs in flight. */
static void test_kill_inflight(void **state) {
    int fd = FD(state), pipefd[2], status, i;
    long used0 = read_sysfs_long("memory_used");

    printf("# device memory used before: %ld\n", used0);
    char c;
    pid_t pid;
    double t0;

    assert_int_equal(pipe(pipefd), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (!pid) {
        int cfd = open_dev();
        uint32_t out = syncobj_new(cfd), cores;
        uint64_t n = 4 * MIB;
        uint32_t h = bo_new(cfd, n, DRM_NEURON_BO_HOST);
        uint32_t d = bo_new(cfd, n, DRM_NEURON_BO_DEVICE);
        struct job_bufs jb;

        cores = get_param(cfd, DRM_NEURON_PARAM_NUM_CORES);
        job_bufs_init(cfd, &jb, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                      0);
        for (i = 0; i < 1000; i++) {
            uint32_t b = bo_new(cfd, 64 * 1024, DRM_NEURON_BO_DEVICE);

            if (copy(cfd, h, 0, d, 0, n, out, i % 2, NULL) ||
                copy(cfd, h, 0, b, 0, 64 * 1024, out, DRM_NEURON_ENGINE_ANY, NULL) ||
                submit(cfd, &jb, i % cores, out, NULL))
                _exit(1);
            /* The jobs hold the buffer after its handle goes. */
            if (i % 2)
                bo_close(cfd, b);
        }
        if (write(pipefd[1], "x", 1) != 1)
            _exit(2);
        pause();
        _exit(0);
    }
    close(pipefd[1]);
    assert_int_equal(read(pipefd[0], &c, 1), 1);
    close(pipefd[0]);
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));

    t0 = now_s();
    /* sysfs memory_used if the driver has it, else allocate it all. */
    while (used0 >= 0 ? read_sysfs_long("memory_used") != used0 : !device_mem_free(fd)) {
        if (now_s() - t0 > 120)
            fail_msg("device memory not back 120 s after kill (used %ld, baseline %ld)",
                     read_sysfs_long("memory_used"), used0);
        usleep(used0 >= 0 ? 50000 : 1000000);
    }
    if (!device_mem_free(fd))
        fail_msg("cannot allocate all device memory (used %ld, baseline %ld)",
                 read_sysfs_long("memory_used"), used0);
    printf("# all memory of the killed process back after %.2f s\n", now_s() - t0);
    /* The device still works. */
    run_axpb(fd, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0);
}

/* ------------------------------------------------------------------------
 * Pinned host memory ("host_pin"): a buffer of almost all RAM, copies from
 * it, the pin limits and a pin that runs out of memory
 */

#define PARAM_DIR "/sys/module/neuron/parameters/"
#define SENTINELS 4
/* tmpfs files of other programs may come and go while the test runs. */
#define SHMEM_SLACK_KIB 2048

/* A line of /proc/meminfo ("Shmem") or /proc/vmstat ("oom_kill"). */
static long proc_value(const char *file, const char *key) {
    char line[256];
    size_t n = strlen(key);
    long v = -1;
    FILE *f = fopen(file, "r");

    assert_non_null(f);
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, key, n) && (line[n] == ':' || line[n] == ' ')) {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    assert_true(v >= 0);
    return v;
}

/* A process that faults memory in every 20 ms: the OOM killer would find it. */
static pid_t sentinel_start(void) {
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (!pid) {
        /* Gone with the test, even if it fails midway. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;) {
            size_t n = 4 * MIB;
            char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

            if (m != MAP_FAILED) {
                memset(m, 1, n);
                munmap(m, n);
            }
            usleep(20000);
        }
    }
    return pid;
}

static void sentinels_check_alive(const pid_t *pids) {
    int i, status;

    for (i = 0; i < SENTINELS; i++)
        if (waitpid(pids[i], &status, WNOHANG) != 0)
            fail_msg("sentinel %d died (status %#x)", (int)pids[i], status);
}

#define SHMEM_HUGE "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

/* VmPin of this process in KiB, or -1. */
static long vmpin_kib(void) {
    char line[256];
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");

    if (!f)
        return -1;
    while (v < 0 && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmPin:", 6))
            v = strtol(line + 6, NULL, 10);
    fclose(f);
    return v;
}

/* Waits up to 5 s (idle pins last about a second) for VmPin to read 0. */
static long vmpin_settle(void) {
    double end = now_s() + 5;
    long v;

    while ((v = vmpin_kib()) != 0 && now_s() < end)
        usleep(50000);
    return v;
}

#define MEMLOCK_LIMIT (64 * 1024)

/* Waits for a syncobj's fence without cmocka's asserts (for a child): 0 or -1. */
static int syncobj_wait_plain(int fd, uint32_t h) {
    int64_t abs = (int64_t)((now_s() + 60) * 1e9);

    return drmSyncobjWait(fd, &h, 1, abs, DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL) ? -1 : 0;
}

/*
 * A copy that -ENOMEM refuses while a finished job may not be released yet
 * (the interrupt signals its fence, then queues it), tried again for up to
 * 0.2 s: well within the 1 s an idle mapping is kept.
 */
static int copy_soon(int fd, uint32_t src, uint64_t src_off, uint32_t dst, uint64_t dst_off,
                     uint64_t size, uint32_t out) {
    double end = now_s() + 0.2;
    int ret;

    while ((ret = copy(fd, src, src_off, dst, dst_off, size, out, 0, NULL)) == -ENOMEM &&
           now_s() < end)
        usleep(10000);
    return ret;
}

/* In the memlock child, where a cmocka assertion would run the parent's tests on. */
#define CHILD_CHECK(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("# memlock child: %s failed at line %d (VmPin %ld kB)\n", #cond, __LINE__,      \
                   vmpin_kib());                                                                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/*
 * The memlock child: no capabilities (uid 65534), RLIMIT_MEMLOCK 64 KiB,
 * the parent's file and one of its own, opened before the privileges go.
 * Returns 0, or 1 after printing the check that failed.
 */
static int memlock_child(int fd, uint32_t a, uint32_t b, uint32_t dst, uint32_t sync) {
    struct rlimit rl = {MEMLOCK_LIMIT, MEMLOCK_LIMIT};
    int own = open_dev();
    uint32_t own_src, own_dst, own_sync, sync2;

    CHILD_CHECK(own >= 0 && !drmSyncobjCreate(fd, 0, &sync2));
    CHILD_CHECK(!setrlimit(RLIMIT_MEMLOCK, &rl) && !setgroups(0, NULL) &&
                !setresgid(65534, 65534, 65534) && !setresuid(65534, 65534, 65534));
    /* Over the limit at once: refused, nothing pinned. */
    CHILD_CHECK(copy(fd, a, 0, dst, 0, 2 * MEMLOCK_LIMIT, sync, 0, NULL) == -ENOMEM);
    CHILD_CHECK(vmpin_kib() == 0);
    /* Within it: runs, and counts in VmPin while the copy holds the pages. */
    CHILD_CHECK(copy(fd, a, 0, dst, 0, 32 * 1024, sync, 0, NULL) == 0);
    CHILD_CHECK(vmpin_kib() >= 32);
    /* Two ranges of one copy, 40 KiB each: over the limit together. */
    CHILD_CHECK(copy(fd, b, 64 * 1024, a, 128 * 1024, 40 * 1024, sync2, 0, NULL) == -ENOMEM);
    /*
     * Done, the 32 KiB stay pinned for a while for the next copy of them,
     * but another buffer's 48 KiB get their room: the idle pins are freed.
     */
    CHILD_CHECK(syncobj_wait_plain(fd, sync) == 0);
    CHILD_CHECK(copy_soon(fd, b, 0, dst, 0, 48 * 1024, sync) == 0);
    /* Unpinned once idle (the mapping cache's expiry): back to 0. */
    CHILD_CHECK(syncobj_wait_plain(fd, sync) == 0);
    CHILD_CHECK(vmpin_settle() == 0);
    /* Pins made through a file closed while its copy may still run: back to 0 too. */
    own_src = try_bo_new(own, 32 * 1024, DRM_NEURON_BO_HOST);
    own_dst = try_bo_new(own, 32 * 1024, DRM_NEURON_BO_DEVICE);
    CHILD_CHECK(own_src && own_dst && !drmSyncobjCreate(own, 0, &own_sync));
    CHILD_CHECK(copy(own, own_src, 0, own_dst, 0, 32 * 1024, own_sync, 0, NULL) == 0);
    CHILD_CHECK(vmpin_kib() >= 32);
    close(own);
    CHILD_CHECK(vmpin_settle() == 0);
    /* The whole limit is free again: 48 + 16 KiB fit. */
    CHILD_CHECK(copy(fd, b, 0, dst, 0, 48 * 1024, sync, 0, NULL) == 0);
    CHILD_CHECK(copy(fd, a, 0, dst, 48 * 1024, 16 * 1024, sync, 0, NULL) == 0);
    CHILD_CHECK(syncobj_wait_plain(fd, sync) == 0);
    return 0;
}

/*
 * Pinned host pages are charged to the process's pinned_vm (VmPin) and
 * limited by its RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK: a process
 * without capabilities gets ENOMEM for pins over the limit, before any
 * page is pinned, and runs copies within it; VmPin counts them and drops
 * to 0 once they are unpinned. Root (CAP_IPC_LOCK) with the same limit is
 * charged but not limited.
 */
static void test_host_memlock(void **state) {
    int fd = FD(state), status;
    uint32_t a = bo_new(fd, 4 * MEMLOCK_LIMIT, DRM_NEURON_BO_HOST);
    uint32_t b = bo_new(fd, 4 * MEMLOCK_LIMIT, DRM_NEURON_BO_HOST);
    uint32_t big = bo_new(fd, 16 * MEMLOCK_LIMIT, DRM_NEURON_BO_HOST);
    uint32_t dst = bo_new(fd, 16 * MEMLOCK_LIMIT, DRM_NEURON_BO_DEVICE);
    uint32_t sync = syncobj_new(fd);
    struct rlimit old, low = {MEMLOCK_LIMIT, MEMLOCK_LIMIT};
    long pinned;
    pid_t pid;

    assert_int_equal(vmpin_settle(), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (!pid)
        _exit(memlock_child(fd, a, b, dst, sync));
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status))
        fail_msg("without CAP_IPC_LOCK: a check of memlock_child() failed");

    /* Root, with CAP_IPC_LOCK: 1 MiB pinned over a 64 KiB limit. */
    assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &old), 0);
    assert_int_equal(setrlimit(RLIMIT_MEMLOCK, &low), 0);
    assert_int_equal(copy(fd, big, 0, dst, 0, 16 * MEMLOCK_LIMIT, sync, 0, NULL), 0);
    pinned = vmpin_kib();
    assert_int_equal(setrlimit(RLIMIT_MEMLOCK, &old), 0);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    printf("# root with RLIMIT_MEMLOCK 64 KiB: 1 MiB pinned, VmPin %ld kB\n", pinned);
    assert_true(pinned >= 1024);
    assert_int_equal(vmpin_settle(), 0);
    drmSyncobjDestroy(fd, sync);
    bo_close(fd, a);
    bo_close(fd, b);
    bo_close(fd, big);
    bo_close(fd, dst);
}

/* The selected value of shmem_enabled ("[never]" -> "never"), or "" without THP. */
static void shmem_huge_policy(char *buf, size_t n) {
    char line[256], *open_br, *close_br;
    FILE *f = fopen(SHMEM_HUGE, "r");

    buf[0] = 0;
    if (!f)
        return;
    if (fgets(line, sizeof(line), f) && (open_br = strchr(line, '[')) &&
        (close_br = strchr(open_br, ']'))) {
        *close_br = 0;
        snprintf(buf, n, "%s", open_br + 1);
    }
    fclose(f);
}

static void test_host_pin(void **state) {
    int fd = FD(state), i;
    char huge_policy[32];
    uint64_t total = (uint64_t)proc_value("/proc/meminfo", "MemTotal") * 1024;
    uint64_t size = total / 100 * 95 & ~4095ull, mid = size / 2 & ~4095ull;
    uint64_t file_limit, limit;
    long oom0, shmem0, grown, pinned;
    uint32_t big, big2, src, dst, sync = syncobj_new(fd);
    uint8_t *ps, *pd;
    pid_t pids[SENTINELS];
    double t0;
    int ret;

    assert_int_equal(neuron_test_sysfs_wait(&tdev, "host_memory_pinned", 0, 5), 0);
    /* Page by page: huge pages ("host_huge") would make every figure 2 MiB. */
    shmem_huge_policy(huge_policy, sizeof(huge_policy));
    if (huge_policy[0])
        write_file(SHMEM_HUGE, "deny");
    oom0 = proc_value("/proc/vmstat", "oom_kill");
    shmem0 = proc_value("/proc/meminfo", "Shmem");
    file_limit = read_sysfs_long("host_memory_file_limit");
    limit = read_sysfs_long("host_memory_limit");
    printf("# RAM %llu MiB, buffers of %llu MiB, pin limits: %llu MiB per file, %llu MiB in all\n",
           (unsigned long long)(total / MIB), (unsigned long long)(size / MIB),
           (unsigned long long)(file_limit / MIB), (unsigned long long)(limit / MIB));
    assert_true(file_limit > 0 && file_limit <= limit && limit < size);
    for (i = 0; i < SENTINELS; i++)
        pids[i] = sentinel_start();

    /* Buffers get pages on first use: creating them takes no memory. */
    big = bo_new(fd, size, DRM_NEURON_BO_HOST);
    big2 = bo_new(fd, size, DRM_NEURON_BO_HOST);
    src = bo_new(fd, 4096, DRM_NEURON_BO_HOST);
    dst = bo_new(fd, 4096, DRM_NEURON_BO_HOST);
    ps = bo_map(fd, src, NULL);
    pd = bo_map(fd, dst, NULL);
    fill(ps, 4096, 7);
    memset(pd, 0, 4096);

    /*
     * 4 KiB into the middle of the big buffer and back: one page of each
     * buffer pinned at most (three pages, while idle pins last).
     */
    t0 = now_s();
    assert_int_equal(copy(fd, src, 0, big, mid, 4096, sync, DRM_NEURON_ENGINE_ANY, NULL), 0);
    pinned = read_sysfs_long("host_memory_pinned");
    printf("# 4 KiB copy into the big buffer: %.3f s, %ld bytes pinned\n", now_s() - t0, pinned);
    assert_true(pinned <= 2 * 4096);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    assert_int_equal(copy(fd, big, mid, dst, 0, 4096, sync, DRM_NEURON_ENGINE_ANY, NULL), 0);
    assert_true(read_sysfs_long("host_memory_pinned") <= 3 * 4096);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    assert_memory_equal(ps, pd, 4096);
    assert_true(proc_value("/proc/meminfo", "Shmem") - shmem0 < SHMEM_SLACK_KIB);

    /* A mapping of the whole big buffer gets pages as it touches them, no more. */
    {
        uint8_t *pb = bo_map(fd, big, NULL);

        assert_memory_equal(pb + mid, ps, 4096);
        pb[size - 1] = 1;
        assert_true(proc_value("/proc/meminfo", "Shmem") - shmem0 < SHMEM_SLACK_KIB);
        munmap(pb, size);
    }

    /* Over the per-file limit, then over the global one: refused before any page is touched. */
    assert_int_equal(copy(fd, big, 0, big2, 0, file_limit + 4096, sync, 0, NULL), -EDQUOT);
    write_file(PARAM_DIR "host_pin_file_limit_mb", "1048576");
    assert_int_equal(copy(fd, big, 0, big2, 0, limit + 4096, sync, 0, NULL), -EDQUOT);
    assert_true(proc_value("/proc/meminfo", "Shmem") - shmem0 < SHMEM_SLACK_KIB);

    /*
     * Without limits, pinning a buffer larger than all free memory fails
     * with ENOMEM and hands back the pages it populated. The sentinels
     * pause meanwhile: a process that faulted while the pin held nearly all
     * memory would meet the OOM killer, which is what the limits prevent.
     * Not on the debug kernel, where filling all memory page by page takes
     * minutes (163 s for 1.5 GiB); "fault_injection" fails pins there.
     */
    if (!getenv("NEURON_VM_KERNEL") || strcmp(getenv("NEURON_VM_KERNEL"), "debug")) {
        for (i = 0; i < SENTINELS; i++)
            kill(pids[i], SIGSTOP);
        write_file(PARAM_DIR "host_pin_limit_mb", "1048576");
        /*
         * A copy into the middle page first: its pin, idle for less than
         * NEURON_HOST_UNMAP_DELAY_MS, splits the big pin into two runs, the
         * first of which (half the buffer) succeeds before the second runs
         * out of memory. The pages of both runs must be given back.
         */
        assert_int_equal(copy(fd, src, 0, big, mid, 4096, sync, DRM_NEURON_ENGINE_ANY, NULL), 0);
        assert_int_equal(syncobj_status(fd, sync, 60), 1);
        printf("# %ld bytes pinned before the copy without limits\n",
               read_sysfs_long("host_memory_pinned"));
        t0 = now_s();
        ret = copy(fd, big, 0, big2, 0, size, sync, 0, NULL);
        printf("# copy of %llu MiB without limits: %s after %.2f s\n",
               (unsigned long long)(size / MIB), strerror(-ret), now_s() - t0);
        write_file(PARAM_DIR "host_pin_limit_mb", "0");
        for (i = 0; i < SENTINELS; i++)
            kill(pids[i], SIGCONT);
        assert_int_equal(ret, -ENOMEM);
        grown = proc_value("/proc/meminfo", "Shmem") - shmem0;
        if (grown >= SHMEM_SLACK_KIB)
            fail_msg("Shmem %ld KiB above its start after the failed pin", grown);
    }
    write_file(PARAM_DIR "host_pin_file_limit_mb", "0");
    pinned = read_sysfs_long("host_memory_pinned");
    if (pinned > 3 * 4096)
        fail_msg("%ld bytes pinned after the failed copy", pinned);

    /* The device still works; then everything goes back to where it was. */
    memset(pd, 0, 4096);
    assert_int_equal(copy(fd, big, mid, dst, 0, 4096, sync, 0, NULL), 0);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    assert_memory_equal(ps, pd, 4096);
    munmap(ps, 4096);
    munmap(pd, 4096);
    bo_close(fd, big);
    bo_close(fd, big2);
    bo_close(fd, src);
    bo_close(fd, dst);
    drmSyncobjDestroy(fd, sync);
    assert_int_equal(neuron_test_sysfs_wait(&tdev, "host_memory_pinned", 0, 5), 0);
    assert_true(labs(proc_value("/proc/meminfo", "Shmem") - shmem0) < SHMEM_SLACK_KIB);
    sentinels_check_alive(pids);
    assert_int_equal(proc_value("/proc/vmstat", "oom_kill"), oom0);
    for (i = 0; i < SENTINELS; i++) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], NULL, 0);
    }
    if (huge_policy[0])
        write_file(SHMEM_HUGE, huge_policy);
}

/* ------------------------------------------------------------------------
 * Huge pages ("host_huge"): the parts of a host buffer that fill whole huge
 * pages get them, a pin is charged whole huge pages, copies through them
 * move the right bytes
 */

static void test_host_huge(void **state) {
    int fd = FD(state);
    char policy[32];
    long hpage, huge0, grown;
    uint64_t size, mid;
    uint32_t big, dev, back, sync = syncobj_new(fd);
    uint8_t *pb, *pk;
    FILE *f;

    shmem_huge_policy(policy, sizeof(policy));
    f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
    if (!policy[0] || !f || fscanf(f, "%ld", &hpage) != 1) {
        printf("# no transparent huge pages in this kernel\n");
        if (f)
            fclose(f);
        skip();
    }
    fclose(f);
    /* "deny" and "force" override every tmpfs mount's own policy. */
    assert_string_not_equal(policy, "deny");
    assert_int_equal(neuron_test_sysfs_wait(&tdev, "host_memory_pinned", 0, 5), 0);
    size = 8 * (uint64_t)hpage;
    mid = 3 * (uint64_t)hpage + (uint64_t)hpage / 2;
    big = bo_new(fd, size, DRM_NEURON_BO_HOST);
    back = bo_new(fd, size, DRM_NEURON_BO_HOST);
    dev = bo_new(fd, size, DRM_NEURON_BO_DEVICE);
    /* Free memory in huge pages: a fresh guest has them; compaction makes sure. */
    write_file("/proc/sys/vm/compact_memory", "1");
    huge0 = proc_value("/proc/meminfo", "ShmemHugePages");

    /* One page in the middle of a huge page: the pin holds and is charged all of it. */
    assert_int_equal(copy(fd, dev, 0, big, mid, 4096, sync, DRM_NEURON_ENGINE_ANY, NULL), 0);
    grown = proc_value("/proc/meminfo", "ShmemHugePages") - huge0;
    printf("# 4 KiB into a %lld MiB buffer: ShmemHugePages +%ld KiB, %ld bytes pinned\n",
           (long long)(size / MIB), grown, read_sysfs_long("host_memory_pinned"));
    assert_int_equal(grown, hpage / 1024);
    assert_int_equal(read_sysfs_long("host_memory_pinned"), hpage);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    assert_int_equal(neuron_test_sysfs_wait(&tdev, "host_memory_pinned", 0, 5), 0);

    /* Through huge pages and back, across a huge-page boundary. */
    pb = bo_map(fd, big, NULL);
    pk = bo_map(fd, back, NULL);
    fill(pb, size, 11);
    memset(pk, 0, size);
    assert_int_equal(copy(fd, big, (uint64_t)hpage, dev, 0, 5 * (uint64_t)hpage / 2, sync,
                          DRM_NEURON_ENGINE_ANY, NULL),
                     0);
    assert_int_equal(read_sysfs_long("host_memory_pinned"), 3 * hpage);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    assert_int_equal(copy(fd, dev, 0, back, (uint64_t)hpage, 5 * (uint64_t)hpage / 2, sync,
                          DRM_NEURON_ENGINE_ANY, NULL),
                     0);
    assert_int_equal(syncobj_status(fd, sync, 60), 1);
    assert_memory_equal(pb + hpage, pk + hpage, 5 * (size_t)hpage / 2);
    munmap(pb, size);
    munmap(pk, size);
    bo_close(fd, big);
    bo_close(fd, back);
    bo_close(fd, dev);
    drmSyncobjDestroy(fd, sync);
    assert_int_equal(neuron_test_sysfs_wait(&tdev, "host_memory_pinned", 0, 5), 0);
}

/* ------------------------------------------------------------------------
 * Allocation failure ("fault_injection", debug kernel): the Nth fault
 * point (slab or page allocation) of one call fails, for N = 1, 2, ...
 * until the call has no Nth; each call succeeds or fails with ENOMEM
 */

#define FI_DEBUGFS "/sys/kernel/debug/"

struct fi_ctx {
    int fd, fd2;
    uint32_t host, dev, sync;
    uint32_t made;  /* the handle a call created */
    uint32_t fresh; /* a host buffer no job has pinned yet */
    uint64_t mmap_offset;
    void *map;
    struct job_bufs jb;
};

struct fi_case {
    const char *name;
    void (*prepare)(struct fi_ctx *c); /* before each call, without faults */
    int (*call)(struct fi_ctx *c);     /* under fault injection: 0 or -errno */
    void (*undo)(struct fi_ctx *c);    /* after a successful call, without */
    void (*finish)(struct fi_ctx *c);  /* after each call, without faults */
};

/* A new host buffer each time, so that the call pins its pages afresh. */
static void fi_new_host(struct fi_ctx *c) {
    c->fresh = bo_new(c->fd, 64 * 1024, DRM_NEURON_BO_HOST);
}

static void fi_close_host(struct fi_ctx *c) {
    bo_close(c->fd, c->fresh);
}

static int fi_open(struct fi_ctx *c) {
    c->fd2 = open_dev();
    return c->fd2 < 0 ? -errno : 0;
}

static void fi_open_undo(struct fi_ctx *c) {
    close(c->fd2);
}

static int fi_bo_create(struct fi_ctx *c, uint32_t region) {
    struct drm_neuron_bo_create bc = {.size = 64 * 1024, .region = region};
    int ret = neuron_ioctl(c->fd, DRM_IOCTL_NEURON_BO_CREATE, &bc);

    c->made = bc.handle;
    return ret;
}

static int fi_bo_create_host(struct fi_ctx *c) {
    return fi_bo_create(c, DRM_NEURON_BO_HOST);
}

static int fi_bo_create_device(struct fi_ctx *c) {
    return fi_bo_create(c, DRM_NEURON_BO_DEVICE);
}

static void fi_bo_close(struct fi_ctx *c) {
    bo_close(c->fd, c->made);
}

static int fi_bo_info(struct fi_ctx *c) {
    struct drm_neuron_bo_info i = {.handle = c->host};

    return neuron_ioctl(c->fd, DRM_IOCTL_NEURON_BO_INFO, &i);
}

static int fi_mmap(struct fi_ctx *c) {
    c->map =
        mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, (off_t)c->mmap_offset);
    return c->map == MAP_FAILED ? -errno : 0;
}

static void fi_munmap(struct fi_ctx *c) {
    memset(c->map, 0x5a, 64 * 1024);
    munmap(c->map, 64 * 1024);
}

static int fi_copy_to_device(struct fi_ctx *c) {
    return copy(c->fd, c->fresh, 0, c->dev, 0, 64 * 1024, c->sync, DRM_NEURON_ENGINE_ANY, NULL);
}

static int fi_copy_to_host(struct fi_ctx *c) {
    return copy(c->fd, c->dev, 0, c->fresh, 4096, 60 * 1024, c->sync, 0, NULL);
}

static void fi_wait(struct fi_ctx *c) {
    assert_int_equal(syncobj_status(c->fd, c->sync, 60), 1);
}

static int fi_submit(struct fi_ctx *c) {
    return submit(c->fd, &c->jb, 0, c->sync, NULL);
}

/* Three jobs in one batch: all are queued, or none. */
static int fi_submit_batch(struct fi_ctx *c) {
    struct drm_neuron_binding b[2] = {
        {.handle = c->jb.in, .flags = DRM_NEURON_BIND_READ, .size = PROG_BYTES},
        {.handle = c->jb.out, .flags = DRM_NEURON_BIND_WRITE, .size = PROG_BYTES},
    };
    struct drm_neuron_submit e[3];
    unsigned int i;

    for (i = 0; i < 3; i++)
        e[i] = batch_entry(&c->jb, b, 0, c->sync);
    return submit_batch(c->fd, e, 3);
}

static void fi_submit_undo(struct fi_ctx *c) {
    fi_wait(c);
    check_axpb(&c->jb);
}

static int fi_syncobj_create(struct fi_ctx *c) {
    uint32_t h;
    int ret = drmSyncobjCreate(c->fd, 0, &h) ? -errno : 0;

    c->made = h;
    return ret;
}

static void fi_syncobj_destroy(struct fi_ctx *c) {
    assert_int_equal(drmSyncobjDestroy(c->fd, c->made), 0);
}

static const struct fi_case fi_cases[] = {
    {"open", NULL, fi_open, fi_open_undo, NULL},
    {"bo_create host", NULL, fi_bo_create_host, fi_bo_close, NULL},
    {"bo_create device", NULL, fi_bo_create_device, fi_bo_close, NULL},
    {"bo_info", NULL, fi_bo_info, NULL, NULL},
    {"mmap", NULL, fi_mmap, fi_munmap, NULL},
    {"copy host->device", fi_new_host, fi_copy_to_device, fi_wait, fi_close_host},
    {"copy device->host", fi_new_host, fi_copy_to_host, fi_wait, fi_close_host},
    {"submit", NULL, fi_submit, fi_submit_undo, NULL},
    {"submit_batch", NULL, fi_submit_batch, fi_submit_undo, NULL},
    {"syncobj_create", NULL, fi_syncobj_create, fi_syncobj_destroy, NULL},
};

static void fi_knobs(int on) {
    write_file(FI_DEBUGFS "failslab/ignore-gfp-wait", on ? "N" : "Y");
    write_file(FI_DEBUGFS "fail_page_alloc/ignore-gfp-wait", on ? "N" : "Y");
    write_file(FI_DEBUGFS "fail_page_alloc/ignore-gfp-highmem", on ? "N" : "Y");
    write_file(FI_DEBUGFS "fail_page_alloc/min-order", on ? "0" : "1");
    write_file(FI_DEBUGFS "failslab/verbose", on ? "0" : "2");
    write_file(FI_DEBUGFS "fail_page_alloc/verbose", on ? "0" : "2");
}

/* Arms /proc/thread-self/fail-nth: the @n-th fault point of this thread fails. */
static void fi_arm(int nth, unsigned n) {
    char buf[16];
    int len = snprintf(buf, sizeof(buf), "%u", n);

    assert_int_equal(pwrite(nth, buf, (size_t)len, 0), len);
}

/* Disarms it; returns whether the fault was injected. */
static int fi_disarm(int nth) {
    char buf[16] = "";
    int injected;

    assert_true(pread(nth, buf, sizeof(buf) - 1, 0) > 0);
    injected = strtoul(buf, NULL, 10) == 0;
    fi_arm(nth, 0);
    return injected;
}

static void fi_sweep(struct fi_ctx *c, const struct fi_case *k, int nth) {
    unsigned n, failed = 0;

    for (n = 1;; n++) {
        int ret, injected;

        if (k->prepare)
            k->prepare(c);
        fi_arm(nth, n);
        ret = k->call(c);
        injected = fi_disarm(nth);
        if (ret && ret != -ENOMEM)
            fail_msg("%s with fault point %u failing: %s", k->name, n, strerror(-ret));
        if (!injected && ret)
            fail_msg("%s without a fault failed: %s", k->name, strerror(-ret));
        failed += !!ret;
        if (!ret && k->undo)
            k->undo(c);
        if (k->finish)
            k->finish(c);
        if (!injected)
            break;
    }
    printf("# %-18s %3u fault points: %3u calls failed with ENOMEM, %3u succeeded anyway\n",
           k->name, n - 1, failed, n - 1 - failed);
}

static void test_fault_injection(void **state) {
    struct fi_ctx c = {.fd = FD(state)};
    struct drm_neuron_bo_info info;
    long used0 = read_sysfs_long("memory_used");
    int nth, kmemleak;
    size_t i;

    if (access(FI_DEBUGFS "failslab", F_OK) || access(FI_DEBUGFS "fail_page_alloc", F_OK)) {
        printf("# no failslab/fail_page_alloc in this kernel\n");
        skip();
    }
    kmemleak = !neuron_test_kmemleak_clear();
    c.host = bo_new(c.fd, 64 * 1024, DRM_NEURON_BO_HOST);
    c.dev = bo_new(c.fd, 64 * 1024, DRM_NEURON_BO_DEVICE);
    c.sync = syncobj_new(c.fd);
    info = (struct drm_neuron_bo_info){.handle = c.host};
    assert_int_equal(neuron_ioctl(c.fd, DRM_IOCTL_NEURON_BO_INFO, &info), 0);
    c.mmap_offset = info.mmap_offset;
    job_bufs_init(c.fd, &c.jb, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  0);
    nth = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
    assert_true(nth >= 0);

    fi_knobs(1);
    for (i = 0; i < sizeof(fi_cases) / sizeof(fi_cases[0]); i++)
        fi_sweep(&c, &fi_cases[i], nth);
    fi_knobs(0);
    close(nth);

    /* Nothing leaked, and the device still copies and runs jobs right. */
    job_bufs_fini(c.fd, &c.jb);
    bo_close(c.fd, c.host);
    bo_close(c.fd, c.dev);
    drmSyncobjDestroy(c.fd, c.sync);
    run_axpb(c.fd, DRM_NEURON_BO_HOST, DRM_NEURON_BO_HOST, DRM_NEURON_BO_HOST, 0);
    {
        static const uint64_t sizes[] = {4097, MIB + 5};

        copy_roundtrips(c.fd, sizes, 2, max_copy(c.fd));
    }
    assert_int_equal(read_sysfs_long("memory_used"), used0);
    assert_int_equal(neuron_test_sysfs_wait(&tdev, "host_memory_pinned", 0, 5), 0);
    if (kmemleak)
        assert_int_equal(neuron_test_kmemleak_scan(), 0);
    else
        printf("# leaks not checked (no kmemleak)\n");
}

/* ------------------------------------------------------------------------
 * Probe and bind under fault injection ("probe_fault_injection", debug
 * kernel, boot with acpi=noirq): with the device unbound, the 1st, 2nd,
 * ... Nth fault point of the driver's steps in a bind (slab and page
 * allocations) fails in turn, until a bind has no Nth. Each bind succeeds
 * or fails with ENOMEM (ENODEV or ENOSPC from the PCI core's MSI-X setup,
 * EBUSY from its BAR region request) and leaves the device unbound. Then
 * one bind with neuron_hw_reset() failing through fail_function (a device
 * that never leaves reset) fails with ETIMEDOUT. Afterwards nothing leaked
 * and a normal bind gives a device that runs a job and copies.
 * NEURON_FI_STRIDE=K fails only every Kth point, from NEURON_FI_OFFSET
 * (default: a random one below K, printed); an offset of K or more resumes
 * a sweep after that many points.
 */

#define NEURON_DRV "/sys/bus/pci/drivers/neuron/"
#define FI_FUNC FI_DEBUGFS "fail_function/"
#define FI_RESET_ERRNO ETIMEDOUT

/* Whether the device is bound to neuron.ko. */
static int pfi_bound(void) {
    char path[256];

    snprintf(path, sizeof(path), NEURON_DRV "%s", tdev.bdf);
    return !access(path, F_OK);
}

/* Writes the device's address to the driver's @file; 0 or -errno. */
static int pfi_write(const char *file, int nth, unsigned n, int *injected) {
    size_t len = strlen(tdev.bdf);
    int fd = open(file, O_WRONLY | O_CLOEXEC);
    ssize_t ret;
    int err;

    assert_true(fd >= 0);
    if (nth >= 0)
        fi_arm(nth, n);
    ret = write(fd, tdev.bdf, len);
    err = errno;
    if (nth >= 0)
        *injected = fi_disarm(nth);
    close(fd);
    if (ret < 0)
        return -err;
    assert_int_equal((size_t)ret, len);
    return 0;
}

/*
 * fail_function on neuron_hw_reset(), when the kernel and the module allow
 * it: the next call fails (probability 100, once). Not through fail-nth:
 * a bind with every Nth point failing in turn never failed the reset
 * (fail-nth counts only the slab and page points there).
 */
static int pfi_function(int on) {
    char buf[32];

    if (!on) {
        write_file(FI_FUNC "probability", "0");
        write_file(FI_FUNC "inject", "!neuron_hw_reset");
        write_file(FI_FUNC "verbose", "2");
        return 0;
    }
    if (access(FI_FUNC "inject", F_OK))
        return 0;
    {
        FILE *f = fopen(FI_FUNC "inject", "w");

        assert_non_null(f);
        if (fputs("neuron_hw_reset", f) < 0 || fclose(f)) {
            printf("# fail_function cannot inject into neuron_hw_reset()\n");
            return 0;
        }
    }
    snprintf(buf, sizeof(buf), "%#llx", (unsigned long long)(long long)-FI_RESET_ERRNO);
    write_file(FI_FUNC "neuron_hw_reset/retval", buf);
    write_file(FI_FUNC "verbose", "0");
    write_file(FI_FUNC "interval", "1");
    write_file(FI_FUNC "times", "1");
    write_file(FI_FUNC "probability", "100");
    return 1;
}

/*
 * The fault points of a bind before neuron_probe()'s own work: the driver
 * core, the PCI core and devm_drm_dev_alloc() (DRM's drm_dev_init() does
 * not survive every allocation failure: an ERR_PTR minor device reaches
 * put_device()). Kprobe events count this task's calls, outside
 * interrupts, of should_failslab() and should_fail_alloc_page() (the
 * fault points /proc/thread-self/fail-nth counts: their filters pass every
 * allocation here but __GFP_NOFAIL ones) before neuron_telemetry_init(),
 * the first step after the DRM device.
 */
#define TRACEFS FI_DEBUGFS "tracing/"

static void append_file(const char *path, const char *val) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, val, strlen(val)), (ssize_t)strlen(val));
    close(fd);
}

static unsigned pfi_prefix(void) {
    char buf[512];
    unsigned points = 0;
    int found = 0;
    FILE *f;

    append_file(TRACEFS "kprobe_events", "p:neuron_fi/point should_failslab\n");
    append_file(TRACEFS "kprobe_events", "p:neuron_fi/page_point should_fail_alloc_page\n");
    append_file(TRACEFS "kprobe_events", "p:neuron_fi/probe neuron_telemetry_init\n");
    write_file(TRACEFS "trace_clock", "global");
    write_file(TRACEFS "trace", "");
    snprintf(buf, sizeof(buf), "common_pid == %d", (int)gettid());
    write_file(TRACEFS "events/neuron_fi/filter", buf);
    write_file(TRACEFS "events/neuron_fi/enable", "1");
    write_file(TRACEFS "tracing_on", "1");
    assert_int_equal(pfi_write(NEURON_DRV "bind", -1, 0, NULL), 0);
    write_file(TRACEFS "tracing_on", "0");
    write_file(TRACEFS "events/neuron_fi/enable", "0");

    f = fopen(TRACEFS "trace", "r");
    assert_non_null(f);
    while (!found && fgets(buf, sizeof(buf), f)) {
        const char *flags = strstr(buf, "] ");

        if (buf[0] == '#' || !flags)
            continue;
        if (strstr(buf, " probe: ")) {
            found = 1;
        } else if (strstr(buf, " point: ") || strstr(buf, " page_point: ")) {
            /* irqs-off, need-resched, hardirq/softirq, ...: only task context counts. */
            points += flags[2 + 2] == '.';
        }
    }
    fclose(f);
    append_file(TRACEFS "kprobe_events", "-:neuron_fi/point\n");
    append_file(TRACEFS "kprobe_events", "-:neuron_fi/page_point\n");
    append_file(TRACEFS "kprobe_events", "-:neuron_fi/probe\n");
    assert_true(found);
    assert_int_equal(pfi_write(NEURON_DRV "unbind", -1, 0, NULL), 0);
    return points;
}

static void test_probe_fault_injection(void **state) {
    unsigned n, prefix, points, swept, failed = 0, enomem = 0, enodev = 0, ebusy = 0;
    unsigned nonode = 0;
    const char *env = getenv("NEURON_FI_STRIDE");
    unsigned stride = env ? (unsigned)strtoul(env, NULL, 0) : 1, offset;
    int nth, kmemleak, function, fd;
    double t0;

    (void)state;
    assert_true(stride >= 1);
    env = getenv("NEURON_FI_OFFSET");
    offset = env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL) % stride;
    if (access(FI_DEBUGFS "failslab", F_OK) || access(FI_DEBUGFS "fail_page_alloc", F_OK)) {
        printf("# no failslab/fail_page_alloc in this kernel\n");
        skip();
    }
    kmemleak = !neuron_test_kmemleak_clear();
    assert_true(pfi_bound());
    assert_int_equal(pfi_write(NEURON_DRV "unbind", -1, 0, NULL), 0);
    assert_false(pfi_bound());

    nth = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
    assert_true(nth >= 0);
    fi_knobs(1);
    prefix = pfi_prefix();
    printf("# every %u%s fault point of the driver's steps from the %u%s fails in turn "
           "(NEURON_FI_STRIDE=%u NEURON_FI_OFFSET=%u replays)\n",
           stride, stride == 1 ? "st" : "th", offset + 1, offset ? "th" : "st", stride, offset);
    t0 = now_s();
    for (n = prefix + 1 + offset;; n += stride) {
        int injected, ret = pfi_write(NEURON_DRV "bind", nth, n, &injected);

        /*
         * ENODEV, ENOSPC: the errnos of pci_alloc_irq_vectors() when the PCI
         * core cannot allocate the device's MSI domain or its vectors.
         * EBUSY: pcim_iomap_region() and pcim_request_region() when
         * __request_region() cannot allocate the region's struct resource
         * (it returns NULL, as for a region in use).
         */
        if (ret && ret != -ENOMEM && ret != -ENODEV && ret != -ENOSPC && ret != -EBUSY)
            fail_msg("bind with fault point %u failing: %s", n, strerror(-ret));
        if (!injected && ret)
            fail_msg("bind without a fault failed: %s", strerror(-ret));
        if (ret) {
            if (pfi_bound())
                fail_msg("bind with fault point %u failing returned %s but bound the device", n,
                         strerror(-ret));
            failed++;
            enomem += ret == -ENOMEM;
            enodev += ret == -ENODEV || ret == -ENOSPC;
            ebusy += ret == -EBUSY;
        } else {
            /*
             * Bound anyway (the failure was absorbed): the node opens,
             * unless devtmpfs could not create it (device_add() goes on).
             */
            assert_true(pfi_bound());
            assert_int_equal(neuron_test_find_device(&tdev), 0);
            fd = open_dev();
            if (fd < 0 && errno == ENOENT && injected) {
                nonode++;
            } else {
                assert_true(fd >= 0);
                get_param(fd, DRM_NEURON_PARAM_NUM_CORES);
                close(fd);
            }
        }
        if (!injected)
            break;
        if (!ret)
            assert_int_equal(pfi_write(NEURON_DRV "unbind", -1, 0, NULL), 0);
    }
    /* The bind at n had no Nth point; the one at n - stride had one. */
    points = n - 1 - prefix;
    swept = (n - prefix - 1 - offset) / stride;
    printf("# bind: %u fault points before the driver's steps (not failed), %u-%u in them, "
           "%u failed in %.1f s: %u binds failed (%u ENOMEM, %u ENODEV/ENOSPC, %u EBUSY), "
           "%u succeeded anyway (%u without a device node)\n",
           prefix, points + 1 - stride, points, swept, now_s() - t0, failed, enomem, enodev, ebusy,
           swept - failed, nonode);
    /*
     * The points before the driver's steps need not stay the same from one
     * bind to the next (caches, ids): say how many there are now.
     */
    assert_int_equal(pfi_write(NEURON_DRV "unbind", -1, 0, NULL), 0);
    printf("# after the sweep: %u fault points before the driver's steps\n", pfi_prefix());
    fi_knobs(0);
    close(nth);
    assert_true(points > 0);

    /* A device that never leaves reset: the bind fails and leaves it unbound. */
    function = pfi_function(1);
    if (function) {
        int ret = pfi_write(NEURON_DRV "bind", -1, 0, NULL);

        pfi_function(0);
        if (ret != -FI_RESET_ERRNO)
            fail_msg("bind with neuron_hw_reset() failing: %s, expected %s",
                     ret ? strerror(-ret) : "bound", strerror(FI_RESET_ERRNO));
        assert_false(pfi_bound());
        printf("# bind with neuron_hw_reset() failing: %s, device left unbound\n",
               strerror(FI_RESET_ERRNO));
    }
    assert_int_equal(pfi_write(NEURON_DRV "bind", -1, 0, NULL), 0);

    /* The last bind had no fault: the device copies and runs jobs right. */
    assert_int_equal(neuron_test_find_device(&tdev), 0);
    fd = open_dev();
    assert_true(fd >= 0);
    run_axpb(fd, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0);
    {
        static const uint64_t sizes[] = {4097, MIB + 5};

        copy_roundtrips(fd, sizes, 2, max_copy(fd));
    }
    close(fd);
    assert_int_equal(read_sysfs_long("memory_used"), 0);
    if (kmemleak)
        assert_int_equal(neuron_test_kmemleak_scan(), 0);
    else
        printf("# leaks not checked (no kmemleak)\n");
}

/* ------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------
 * PCI error recovery and power management (own boots)
 */

/* Asks the VM harness (neuron-vm --monitor) for something through the kernel log. */
static void host_request(const char *request) {
    char line[200];

    snprintf(line, sizeof(line), "neuron-vm-host: %s\n", request);
    write_file("/dev/kmsg", line);
}

/* A file of the device's PCI function in sysfs, read into @buf (newline cut). */
static void pci_attr(const char *attr, char *buf, size_t n) {
    char path[400];
    FILE *f;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", tdev.bdf, attr);
    f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s: %s", path, strerror(errno));
    if (!fgets(buf, (int)n, f))
        buf[0] = 0;
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
}

static void pci_attr_write(const char *attr, const char *val) {
    char path[400];

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", tdev.bdf, attr);
    write_file(path, val);
}

/* Waits up to @timeout_s for power/runtime_status to read @want; 0 if it did. */
static int wait_runtime_status(const char *want, double timeout_s) {
    double end = now_s() + timeout_s;
    char buf[32];

    do {
        pci_attr("power/runtime_status", buf, sizeof(buf));
        if (!strcmp(buf, want))
            return 0;
        usleep(20000);
    } while (now_s() < end);
    printf("# runtime_status is %s after %.1f s, not %s\n", buf, timeout_s, want);
    return -1;
}

/* A job timeout long enough for the recovery or the suspend to come first. */
static void long_job_timeout(int on) {
    write_file("/sys/module/neuron/parameters/job_timeout_ms", on ? "120000" : "5000");
    rebind();
}

/* A device buffer of @size with a pattern of @seed, written by a copy from a host buffer. */
static uint32_t devmem_pattern(int fd, uint64_t size, uint32_t seed) {
    uint32_t dev = bo_new(fd, size, DRM_NEURON_BO_DEVICE);
    uint32_t host = bo_new(fd, size, DRM_NEURON_BO_HOST);
    uint32_t out = syncobj_new(fd);
    uint8_t *p = bo_map(fd, host, NULL);

    fill(p, size, seed);
    munmap(p, size);
    assert_int_equal(copy(fd, host, 0, dev, 0, size, out, 0, NULL), 0);
    assert_int_equal(syncobj_status(fd, out, 30), 1);
    bo_close(fd, host);
    drmSyncobjDestroy(fd, out);
    return dev;
}

/* Whether device buffer @dev still holds the pattern of @seed (read back by a copy). */
static void devmem_check(int fd, uint32_t dev, uint64_t size, uint32_t seed) {
    uint32_t host = bo_new(fd, size, DRM_NEURON_BO_HOST);
    uint32_t out = syncobj_new(fd);
    uint8_t *want = malloc(size), *p;

    assert_non_null(want);
    assert_int_equal(copy(fd, dev, 0, host, 0, size, out, 0, NULL), 0);
    assert_int_equal(syncobj_status(fd, out, 30), 1);
    p = bo_map(fd, host, NULL);
    fill(want, size, seed);
    if (memcmp(p, want, size))
        fail_msg("device memory lost its contents");
    munmap(p, size);
    free(want);
    bo_close(fd, host);
    drmSyncobjDestroy(fd, out);
}

/* The job of @jb on @core, signalling @out once @in has signalled. */
static int submit_after(int fd, const struct job_bufs *jb, uint32_t core, uint32_t out,
                        uint32_t in) {
    struct drm_neuron_binding b[2] = {
        {.handle = jb->in, .flags = DRM_NEURON_BIND_READ, .size = PROG_BYTES},
        {.handle = jb->out, .flags = DRM_NEURON_BIND_WRITE, .size = PROG_BYTES},
    };
    struct drm_neuron_sync after = {.handle = in};
    struct drm_neuron_submit s = {
        .core = core,
        .program_handle = jb->prog,
        .program_size = jb->prog_size,
        .num_bindings = 2,
        .bindings = (uintptr_t)b,
        .in_syncs = (uintptr_t)&after,
        .num_in_syncs = 1,
        .out_sync = {.handle = out},
    };

    return neuron_ioctl(fd, DRM_IOCTL_NEURON_SUBMIT, &s);
}

/*
 * One uncorrectable error injected by QEMU (pcie_aer_inject_error) while a
 * job spins on core 0 with another behind it on the device, a job and a
 * copy wait (in-sync) for the spinning job and a device buffer is mapped:
 * the two jobs on the device fail with -ECANCELED (seen by
 * DRM_IOCTL_NEURON_WAIT and the syncobjs), the device is reset once, the
 * waiting job and copy then run, the mapping reaches what the copy wrote,
 * and new work runs.
 */
static void aer_round(int fd, const char *error) {
    struct job_bufs spin, queued, waiting, good;
    uint32_t s_spin = syncobj_new(fd), s_queued = syncobj_new(fd), s_copy = syncobj_new(fd);
    uint32_t s_good = syncobj_new(fd), s_waiting = syncobj_new(fd);
    uint32_t src = bo_new(fd, 1 * MIB, DRM_NEURON_BO_HOST);
    uint32_t dst = bo_new(fd, 1 * MIB, DRM_NEURON_BO_DEVICE);
    struct drm_neuron_sync after_spin = {.handle = s_spin}, copy_out = {.handle = s_copy};
    uint8_t *psrc = bo_map(fd, src, NULL), *pmapped = bo_map(fd, dst, NULL);
    long resets = read_sysfs_long("reset_count");
    char request[100];
    double t0;
    int status;

    job_bufs_init(fd, &spin, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  1);
    job_bufs_init(fd, &queued, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, 0,
                  0);
    job_bufs_init(fd, &waiting, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  0);
    job_bufs_init(fd, &good, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  0);
    fill(psrc, 1 * MIB, 45);
    memset(pmapped, 0x5a, 1 * MIB);

    assert_int_equal(submit(fd, &spin, 0, s_spin, NULL), 0);
    assert_int_equal(submit(fd, &queued, 0, s_queued, NULL), 0);
    /* On core 1: a dependency within a lane is met by the lane's order. */
    assert_int_equal(submit_after(fd, &waiting, 1, s_waiting, s_spin), 0);
    assert_int_equal(copy_sync(fd, src, 0, dst, 0, 1 * MIB, copy_out, &after_spin, 0, NULL), 0);
    usleep(200000);
    assert_int_equal(neuron_wait(fd, s_spin, 0, &status), -ETIME);

    t0 = now_s();
    snprintf(request, sizeof(request), "pcie_aer_inject_error neuron0 %s", error);
    host_request(request);
    assert_int_equal(neuron_wait(fd, s_spin, 60, &status), 0);
    assert_int_equal(status, -ECANCELED);
    printf("# %s: the spinning job failed with -ECANCELED %.2f s after the request\n", error,
           now_s() - t0);
    assert_int_equal(syncobj_status(fd, s_spin, 30), -ECANCELED);
    /* The job behind it on the device was lost with it. */
    assert_int_equal(syncobj_status(fd, s_queued, 30), -ECANCELED);
    /*
     * The job and the copy that waited for the spinning job (a failed
     * fence is a signalled one) run after the recovery.
     */
    assert_int_equal(syncobj_status(fd, s_waiting, 30), 1);
    check_axpb(&waiting);
    assert_int_equal(syncobj_status(fd, s_copy, 30), 1);
    assert_int_equal(neuron_test_sysfs_wait(&tdev, "reset_count", resets + 1, 10), resets + 1);

    /* The mapping reaches the device buffer, which the copy wrote. */
    if (memcmp(psrc, pmapped, 1 * MIB))
        fail_msg("the mapped device buffer does not hold what the copy wrote");

    /* New work runs: a job and a copy. */
    memset(good.pout, 0, PROG_BYTES);
    assert_int_equal(submit(fd, &good, 0, s_good, NULL), 0);
    assert_int_equal(syncobj_status(fd, s_good, 30), 1);
    check_axpb(&good);
    memset(pmapped, 0x3c, 1 * MIB);
    fill(psrc, 1 * MIB, 46);
    assert_int_equal(copy(fd, src, 0, dst, 0, 1 * MIB, s_copy, 0, NULL), 0);
    assert_int_equal(syncobj_status(fd, s_copy, 30), 1);
    if (memcmp(psrc, pmapped, 1 * MIB))
        fail_msg("copy after recovery moved the wrong bytes");

    munmap(psrc, 1 * MIB);
    munmap(pmapped, 1 * MIB);
    bo_close(fd, src);
    bo_close(fd, dst);
    job_bufs_fini(fd, &spin);
    job_bufs_fini(fd, &queued);
    job_bufs_fini(fd, &waiting);
    job_bufs_fini(fd, &good);
    drmSyncobjDestroy(fd, s_spin);
    drmSyncobjDestroy(fd, s_queued);
    drmSyncobjDestroy(fd, s_waiting);
    drmSyncobjDestroy(fd, s_copy);
    drmSyncobjDestroy(fd, s_good);
}

/*
 * PCI error recovery (own boot, neuron-vm --monitor): a non-fatal error
 * (the PCI core asks the driver to reset the device) and a fatal one (the
 * PCI core resets the link first), then a correctable one, which changes
 * nothing.
 */
static void test_aer(void **state) {
    struct job_bufs good;
    uint32_t s_good;
    long resets;
    int fd, kmemleak;

    (void)state;
    long_job_timeout(1);
    kmemleak = !neuron_test_kmemleak_clear();
    fd = open_dev();
    assert_true(fd >= 0);
    assert_true(get_param(fd, DRM_NEURON_PARAM_NUM_CORES) >= 2);
    aer_round(fd, "POISON_TLP");
    aer_round(fd, "DLP");

    s_good = syncobj_new(fd);
    job_bufs_init(fd, &good, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  0);
    resets = read_sysfs_long("reset_count");
    host_request("pcie_aer_inject_error neuron0 BAD_TLP -c");
    sleep(2);
    assert_int_equal(submit(fd, &good, 0, s_good, NULL), 0);
    assert_int_equal(syncobj_status(fd, s_good, 30), 1);
    check_axpb(&good);
    assert_int_equal(read_sysfs_long("reset_count"), resets);
    job_bufs_fini(fd, &good);
    drmSyncobjDestroy(fd, s_good);
    close(fd);
    long_job_timeout(0);
    if (kmemleak)
        assert_int_equal(neuron_test_kmemleak_scan(), 0);
}

/*
 * Runtime PM: the idle device suspends (D3hot) after its autosuspend delay;
 * the next ioctl resumes it; jobs and copies are correct across it; device
 * memory is kept; a mapping of a device buffer keeps the device awake.
 */
static void test_runtime_pm(void **state) {
    struct job_bufs jb;
    char buf[64], delay[32];
    uint32_t s = syncobj_new(FD(state)), dev;
    int fd = FD(state), round;
    void *map;

    if (!(get_param(fd, DRM_NEURON_PARAM_CAPABILITIES) & DRM_NEURON_CAP_HOST_BINDINGS))
        skip();
    pci_attr("power/autosuspend_delay_ms", delay, sizeof(delay));
    pci_attr("power/control", buf, sizeof(buf));
    assert_string_equal(buf, "auto");
    pci_attr_write("power/autosuspend_delay_ms", "200");

    /* Host buffers only: a mapping of a device buffer would keep it awake. */
    job_bufs_init(fd, &jb, DRM_NEURON_BO_HOST, DRM_NEURON_BO_HOST, DRM_NEURON_BO_HOST, 0, 0);
    dev = devmem_pattern(fd, 1 * MIB, 7);
    for (round = 0; round < 3; round++) {
        assert_int_equal(wait_runtime_status("suspended", 10), 0);
        pci_attr("power_state", buf, sizeof(buf));
        assert_string_equal(buf, "D3hot");
        memset(jb.pout, 0, PROG_BYTES);
        assert_int_equal(submit(fd, &jb, 0, s, NULL), 0);
        pci_attr("power/runtime_status", buf, sizeof(buf));
        assert_string_equal(buf, "active");
        assert_int_equal(syncobj_status(fd, s, 30), 1);
        check_axpb(&jb);
    }
    assert_int_equal(wait_runtime_status("suspended", 10), 0);
    devmem_check(fd, dev, 1 * MIB, 7);

    /* A mapping of a device buffer holds the device in D0. */
    map = bo_map(fd, dev, NULL);
    usleep(1000000);
    pci_attr("power/runtime_status", buf, sizeof(buf));
    assert_string_equal(buf, "active");
    munmap(map, 1 * MIB);
    assert_int_equal(wait_runtime_status("suspended", 10), 0);

    bo_close(fd, dev);
    job_bufs_fini(fd, &jb);
    drmSyncobjDestroy(fd, s);
    pci_attr_write("power/autosuspend_delay_ms", delay);
}

/*
 * Suspend to RAM with the module loaded (own boot, neuron-vm --monitor;
 * QEMU's S3, woken by system_wakeup; with NEURON_PM_TEST=devices the
 * kernel's pm_test instead: every device's suspend callbacks, 5 s, then
 * the resume callbacks, without S3): a job spinning on core 0 and the one
 * behind it on the device fail with -ECANCELED; a job waiting (in-sync)
 * for the spinning one runs after resume; device memory keeps its
 * contents; new work runs.
 */
static void test_suspend(void **state) {
    struct job_bufs spin, queued, waiting;
    uint32_t s_spin, s_queued, s_waiting, dev;
    const char *pm_test = getenv("NEURON_PM_TEST");
    char states[64];
    double t0;
    FILE *f;
    int fd, status, kmemleak;

    (void)state;
    f = fopen("/sys/power/state", "r");
    assert_non_null(f);
    assert_non_null(fgets(states, sizeof(states), f));
    fclose(f);
    if (!strstr(states, "mem"))
        fail_msg("the guest cannot suspend to RAM (/sys/power/state: %s)", states);
    long_job_timeout(1);
    kmemleak = !neuron_test_kmemleak_clear();
    fd = open_dev();
    assert_true(fd >= 0);
    assert_true(get_param(fd, DRM_NEURON_PARAM_NUM_CORES) >= 2);
    s_spin = syncobj_new(fd);
    s_queued = syncobj_new(fd);
    s_waiting = syncobj_new(fd);
    dev = devmem_pattern(fd, 4 * MIB, 11);
    job_bufs_init(fd, &spin, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  1);
    job_bufs_init(fd, &queued, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, 0,
                  0);
    job_bufs_init(fd, &waiting, DRM_NEURON_BO_HOST, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_DEVICE, 0,
                  0);
    assert_int_equal(submit(fd, &spin, 0, s_spin, NULL), 0);
    assert_int_equal(submit(fd, &queued, 0, s_queued, NULL), 0);
    /* On core 1: a dependency within a lane is met by the lane's order. */
    assert_int_equal(submit_after(fd, &waiting, 1, s_waiting, s_spin), 0);

    if (pm_test) {
        /* The kernel's own test: devices suspended, 5 s, then resumed. */
        write_file("/sys/power/pm_test", pm_test);
    } else {
        host_request("system_wakeup");
    }
    t0 = now_s();
    write_file("/sys/power/state", "mem");
    printf("# resumed after %.1f s (pm_test %s)\n", now_s() - t0, pm_test ? pm_test : "none");
    if (pm_test)
        write_file("/sys/power/pm_test", "none");

    assert_int_equal(neuron_wait(fd, s_spin, 30, &status), 0);
    assert_int_equal(status, -ECANCELED);
    assert_int_equal(syncobj_status(fd, s_queued, 30), -ECANCELED);
    assert_int_equal(syncobj_status(fd, s_waiting, 30), 1);
    check_axpb(&waiting);
    devmem_check(fd, dev, 4 * MIB, 11);
    memset(queued.pout, 0, PROG_BYTES);
    assert_int_equal(submit(fd, &queued, 0, s_queued, NULL), 0);
    assert_int_equal(syncobj_status(fd, s_queued, 30), 1);
    check_axpb(&queued);

    bo_close(fd, dev);
    job_bufs_fini(fd, &spin);
    job_bufs_fini(fd, &queued);
    job_bufs_fini(fd, &waiting);
    drmSyncobjDestroy(fd, s_spin);
    drmSyncobjDestroy(fd, s_queued);
    drmSyncobjDestroy(fd, s_waiting);
    close(fd);
    long_job_timeout(0);
    if (kmemleak)
        assert_int_equal(neuron_test_kmemleak_scan(), 0);
}

#define T(fn)                                                                                      \
    { #fn + 5, fn, setup, teardown }

struct named_test {
    const char *name;
    CMUnitTestFunction fn;
    CMFixtureFunction setup, teardown;
};

static const struct named_test all_tests[] = {
    T(test_check_table),
    T(test_copy_roundtrip),
    T(test_copy_chain),
    T(test_copy_in_cached_mapping),
    T(test_submit_batch),
    T(test_submit_program),
    T(test_submit_latency),
    T(test_irq_managed),
    T(test_copy_any_local),
    T(test_irq_cpu_offline),
    T(test_submit_fault),
    T(test_wait),
    T(test_timeline),
    T(test_concurrent),
    T(test_kill_inflight),
    T(test_queue_halt),
    T(test_fatal_reset),
    T(test_host_memlock),
    {"timeout", test_timeout, NULL, NULL},
    {"isolation", test_isolation, setup, teardown},
    {"copy_large", test_copy_large, setup, teardown},
    {"host_pin", test_host_pin, setup, teardown},
    {"host_huge", test_host_huge, setup, teardown},
    {"fault_injection", test_fault_injection, setup, teardown},
    {"probe_fault_injection", test_probe_fault_injection, NULL, NULL},
    {"aer", test_aer, NULL, NULL},
    {"runtime_pm", test_runtime_pm, setup, teardown},
    {"suspend", test_suspend, NULL, NULL},
};

/*
 * Tests run by default; "timeout", "isolation", "copy_large", "host_pin",
 * "host_huge", "fault_injection", "probe_fault_injection", "aer",
 * "runtime_pm" and "suspend" must be asked for by name.
 */
static int default_test(const char *name) {
    return strcmp(name, "timeout") && strcmp(name, "isolation") && strcmp(name, "copy_large") &&
           strcmp(name, "host_pin") && strcmp(name, "host_huge") &&
           strcmp(name, "fault_injection") && strcmp(name, "probe_fault_injection") &&
           strcmp(name, "aer") && strcmp(name, "runtime_pm") && strcmp(name, "suspend");
}

int main(int argc, char **argv) {
    struct CMUnitTest tests[sizeof(all_tests) / sizeof(all_tests[0])];
    size_t i, n = 0;
    int a;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (neuron_test_find_device(&tdev)) {
        fprintf(stderr, "no neuron accel device\n");
        return 1;
    }
    if (argc == 3 && !strcmp(argv[1], "isolation-probe"))
        return iso_probe_main(argv[2]);
    for (i = 0; i < sizeof(all_tests) / sizeof(all_tests[0]); i++) {
        int want = argc < 2 && default_test(all_tests[i].name);

        for (a = 1; a < argc; a++)
            want |= !strcmp(argv[a], all_tests[i].name);
        if (!want)
            continue;
        tests[n] = (struct CMUnitTest){
            .name = all_tests[i].name,
            .test_func = all_tests[i].fn,
            .setup_func = all_tests[i].setup,
            .teardown_func = all_tests[i].teardown,
        };
        n++;
    }
    return _cmocka_run_group_tests("neuron-exec", tests, n, NULL, NULL);
}
