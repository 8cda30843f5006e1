// SPDX-License-Identifier: MIT
/*
 * Telemetry interfaces of neuron.ko (docs/telemetry.md), on every neuron
 * device of the machine:
 *
 *  - sysfs: every file of the neuron/ directory and its core<N>/ and
 *    dma<N>/ subdirectories exists and holds a sane value; memory_used
 *    rises by a device buffer's size and falls back when it is freed;
 *  - fdinfo: the drm-usage-stats keys are present and drm-total-device
 *    grows with a device buffer (drm-total-host with a host buffer);
 *  - generic netlink: the family dumps one device per accel node with the
 *    values sysfs shows, counters by index, strict attribute validation,
 *    and all of it for an unprivileged process too;
 *  - events: the debugfs reset_core knob resets a core, which bumps
 *    reset_count and core<N>/resets and multicasts a reset event; the
 *    inject_fatal knob makes the device fatal, the driver resets it,
 *    fatal and reset events follow and no counter goes back.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <xf86drm.h>

#include "drm/neuron_accel.h"
#include "drm/neuron_genl.h"

#define MAX_DEVICES 16
#define BO_SIZE (4u << 20)

struct device {
    int minor;
    char bdf[32];
    char sysfs[320]; /* .../device/neuron */
    unsigned int cores;
    unsigned int dma;
};

static struct device devices[MAX_DEVICES];
static int num_devices;

static int read_file(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "r");
    size_t n;

    if (!f)
        return -errno;
    n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    return 0;
}

/* Reads a decimal number from a sysfs file; fails the test if it can't. */
static uint64_t read_u64(const char *fmt, ...) {
    char path[512], buf[64], *end;
    unsigned long long v;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    if (read_file(path, buf, sizeof(buf))) {
        fail_msg("cannot read %s: %s", path, strerror(errno));
        return 0;
    }
    errno = 0;
    v = strtoull(buf, &end, 10);
    if (errno || end == buf || strcmp(end, "\n"))
        fail_msg("%s: not a decimal number: '%s'", path, buf);
    return v;
}

static void read_str(char *buf, size_t size, const char *fmt, ...) {
    char path[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    if (read_file(path, buf, size))
        fail_msg("cannot read %s: %s", path, strerror(errno));
    buf[strcspn(buf, "\n")] = '\0';
}

static int find_devices(void **state) {
    DIR *dir = opendir("/sys/class/accel");
    struct dirent *e;

    (void)state;
    if (!dir)
        return -1;
    while ((e = readdir(dir)) && num_devices < MAX_DEVICES) {
        struct device *d = &devices[num_devices];
        char path[512], link[256], drv[256];
        ssize_t n;
        int minor;

        if (sscanf(e->d_name, "accel%d", &minor) != 1)
            continue;
        snprintf(path, sizeof(path), "/sys/class/accel/%s/device/driver", e->d_name);
        n = readlink(path, drv, sizeof(drv) - 1);
        if (n < 0)
            continue;
        drv[n] = '\0';
        if (strcmp(strrchr(drv, '/') + 1, "neuron"))
            continue;
        snprintf(path, sizeof(path), "/sys/class/accel/%s/device", e->d_name);
        n = readlink(path, link, sizeof(link) - 1);
        if (n < 0)
            continue;
        link[n] = '\0';
        d->minor = minor;
        snprintf(d->bdf, sizeof(d->bdf), "%s", strrchr(link, '/') + 1);
        snprintf(d->sysfs, sizeof(d->sysfs), "/sys/class/accel/%s/device/neuron", e->d_name);
        num_devices++;
    }
    closedir(dir);
    if (!num_devices) {
        fprintf(stderr, "no neuron accel device\n");
        return -1;
    }
    return 0;
}

/* --- sysfs ----------------------------------------------------------------- */

static const char *const core_counters[] = {
    "busy_ns", "instructions", "flops", "dma_bytes", "jobs", "faults", "timeouts", "resets",
};
static const char *const dma_counters[] = {"bytes", "descriptors", "errors"};
#define NUM_CORE_COUNTERS (sizeof(core_counters) / sizeof(core_counters[0]))
#define NUM_DMA_COUNTERS (sizeof(dma_counters) / sizeof(dma_counters[0]))

/* Every counter of a device: per core, then per DMA engine. */
struct counters {
    uint64_t core[16][NUM_CORE_COUNTERS];
    uint64_t dma[8][NUM_DMA_COUNTERS];
};

static void read_counters(const struct device *d, struct counters *c) {
    for (unsigned int i = 0; i < d->cores; i++)
        for (size_t k = 0; k < NUM_CORE_COUNTERS; k++)
            c->core[i][k] = read_u64("%s/core%u/%s", d->sysfs, i, core_counters[k]);
    for (unsigned int e = 0; e < d->dma; e++)
        for (size_t k = 0; k < NUM_DMA_COUNTERS; k++)
            c->dma[e][k] = read_u64("%s/dma%u/%s", d->sysfs, e, dma_counters[k]);
}

static void test_sysfs(void **state) {
    (void)state;
    for (int i = 0; i < num_devices; i++) {
        struct device *d = &devices[i];
        char buf[64];
        unsigned int major, minor;
        uint64_t total, used;

        d->cores = read_u64("%s/cores", d->sysfs);
        d->dma = read_u64("%s/dma_engines", d->sysfs);
        assert_in_range(d->cores, 1, 16);
        assert_in_range(d->dma, 1, 8);
        total = read_u64("%s/memory_total", d->sysfs);
        used = read_u64("%s/memory_used", d->sysfs);
        assert_true(total >= (1u << 20));
        assert_true(used <= total);
        read_str(buf, sizeof(buf), "%s/hw_version", d->sysfs);
        assert_int_equal(sscanf(buf, "%u.%u", &major, &minor), 2);
        assert_int_equal(major, 1);
        read_str(buf, sizeof(buf), "%s/fw_version", d->sysfs);
        assert_int_equal(sscanf(buf, "%u.%u", &major, &minor), 2);
        read_str(buf, sizeof(buf), "%s/state", d->sysfs);
        assert_string_equal(buf, "ready");
        read_u64("%s/reset_count", d->sysfs);

        for (unsigned int c = 0; c < d->cores; c++) {
            for (size_t k = 0; k < NUM_CORE_COUNTERS; k++)
                read_u64("%s/core%u/%s", d->sysfs, c, core_counters[k]);
            assert_true(read_u64("%s/core%u/faults", d->sysfs, c) <=
                        read_u64("%s/core%u/jobs", d->sysfs, c));
        }
        for (unsigned int e = 0; e < d->dma; e++) {
            for (size_t k = 0; k < NUM_DMA_COUNTERS; k++)
                read_u64("%s/dma%u/%s", d->sysfs, e, dma_counters[k]);
            assert_true(read_u64("%s/dma%u/errors", d->sysfs, e) <=
                        read_u64("%s/dma%u/descriptors", d->sysfs, e));
        }
        read_u64("%s/host_memory_mapped", d->sysfs);

        /* No core or engine beyond what the device has. */
        snprintf(buf, sizeof(buf), "core%u", d->cores);
        {
            char path[512];
            struct stat st;

            snprintf(path, sizeof(path), "%s/%s", d->sysfs, buf);
            assert_int_not_equal(stat(path, &st), 0);
        }
    }
}

/* --- buffers and fdinfo ------------------------------------------------------ */

static int open_device(const struct device *d) {
    char path[64];
    int fd;

    snprintf(path, sizeof(path), "/dev/accel/accel%d", d->minor);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        fail_msg("open %s: %s", path, strerror(errno));
    return fd;
}

static uint32_t bo_create(int fd, uint64_t size, uint32_t region) {
    struct drm_neuron_bo_create args = {.size = size, .region = region};

    assert_int_equal(drmIoctl(fd, DRM_IOCTL_NEURON_BO_CREATE, &args), 0);
    return args.handle;
}

static void bo_close(int fd, uint32_t handle) {
    struct drm_gem_close args = {.handle = handle};

    assert_int_equal(drmIoctl(fd, DRM_IOCTL_GEM_CLOSE, &args), 0);
}

/*
 * Value of an fdinfo key in bytes (memory keys carry a unit) or as is;
 * -1 if the key is absent.
 */
static long long fdinfo_value(int fd, const char *key) {
    char path[64], line[256];
    long long value = -1;
    size_t len = strlen(key);
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
    f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        char unit[16] = "";
        long long v;

        if (strncmp(line, key, len) || line[len] != ':')
            continue;
        if (sscanf(line + len + 1, "%lld %15s", &v, unit) < 1)
            fail_msg("bad fdinfo line: %s", line);
        if (!strcmp(unit, "KiB"))
            v <<= 10;
        else if (!strcmp(unit, "MiB"))
            v <<= 20;
        else if (unit[0] && strcmp(unit, "ns"))
            fail_msg("unknown unit in fdinfo line: %s", line);
        value = v;
    }
    fclose(f);
    return value;
}

static void test_memory_used(void **state) {
    (void)state;
    for (int i = 0; i < num_devices; i++) {
        struct device *d = &devices[i];
        int fd = open_device(d);
        uint64_t before = read_u64("%s/memory_used", d->sysfs);
        uint32_t bo = bo_create(fd, BO_SIZE, DRM_NEURON_BO_DEVICE);

        assert_int_equal(read_u64("%s/memory_used", d->sysfs), before + BO_SIZE);
        /* The other devices are not charged. */
        for (int j = 0; j < num_devices; j++)
            if (j != i)
                read_u64("%s/memory_used", devices[j].sysfs);
        bo_close(fd, bo);
        assert_int_equal(read_u64("%s/memory_used", d->sysfs), before);

        bo = bo_create(fd, BO_SIZE, DRM_NEURON_BO_DEVICE);
        assert_int_equal(read_u64("%s/memory_used", d->sysfs), before + BO_SIZE);
        close(fd); /* closing the file frees its buffers */
        assert_int_equal(read_u64("%s/memory_used", d->sysfs), before);
    }
}

static void test_fdinfo(void **state) {
    (void)state;
    for (int i = 0; i < num_devices; i++) {
        struct device *d = &devices[i];
        int fd = open_device(d);
        char key[64], pdev[64] = "";
        long long dev0, host0;
        uint32_t dbo, hbo;
        FILE *f;
        char path[64], line[256];

        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
        f = fopen(path, "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "drm-pdev: %63s", pdev) == 1)
                break;
        fclose(f);
        assert_string_equal(pdev, d->bdf);
        assert_true(fdinfo_value(fd, "drm-client-id") >= 0);

        for (unsigned int c = 0; c < d->cores; c++) {
            snprintf(key, sizeof(key), "drm-engine-core%u", c);
            assert_int_equal(fdinfo_value(fd, key), 0);
            snprintf(key, sizeof(key), "drm-engine-capacity-core%u", c);
            assert_int_equal(fdinfo_value(fd, key), 1);
        }
        snprintf(key, sizeof(key), "drm-engine-core%u", d->cores);
        assert_int_equal(fdinfo_value(fd, key), -1);

        dev0 = fdinfo_value(fd, "drm-total-device");
        host0 = fdinfo_value(fd, "drm-total-host");
        assert_int_equal(dev0, 0);
        assert_int_equal(host0, 0);
        assert_int_equal(fdinfo_value(fd, "drm-resident-device"), 0);

        dbo = bo_create(fd, BO_SIZE, DRM_NEURON_BO_DEVICE);
        assert_int_equal(fdinfo_value(fd, "drm-total-device"), BO_SIZE);
        assert_int_equal(fdinfo_value(fd, "drm-resident-device"), BO_SIZE);
        assert_int_equal(fdinfo_value(fd, "drm-total-host"), 0);
        hbo = bo_create(fd, 12345, DRM_NEURON_BO_HOST);
        assert_int_equal(fdinfo_value(fd, "drm-total-host"), 16384);
        assert_int_equal(fdinfo_value(fd, "drm-resident-host"), 16384);
        bo_close(fd, dbo);
        assert_int_equal(fdinfo_value(fd, "drm-total-device"), 0);
        bo_close(fd, hbo);
        assert_int_equal(fdinfo_value(fd, "drm-total-host"), 0);
        close(fd);
    }
}

/* --- generic netlink --------------------------------------------------------- */

struct nl_device {
    int seen;
    uint32_t index, minor, cores, dma, state;
    uint64_t mem_total, mem_used, resets;
    char bdf[32];
    uint32_t core_nests, dma_nests;
    uint64_t core_jobs[16];
};

struct nl_ctx {
    struct nl_device devs[MAX_DEVICES];
    int count;
    int bad;
};

static struct nl_sock *nl_open(int *family) {
    struct nl_sock *sk = nl_socket_alloc();

    assert_non_null(sk);
    assert_int_equal(genl_connect(sk), 0);
    *family = genl_ctrl_resolve(sk, NEURON_GENL_NAME);
    if (*family < 0)
        fail_msg("family %s not found: %s", NEURON_GENL_NAME, nl_geterror(*family));
    return sk;
}

static int parse_reply(struct nl_msg *msg, void *arg) {
    struct nl_ctx *ctx = arg;
    struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
    struct nlattr *tb[NEURON_A_MAX + 1], *a;
    struct nl_device *d;
    int rem;

    if (ctx->count >= MAX_DEVICES || genlmsg_parse(nlmsg_hdr(msg), 0, tb, NEURON_A_MAX, NULL) ||
        !tb[NEURON_A_DEV_INDEX]) {
        ctx->bad++;
        return NL_SKIP;
    }
    d = &ctx->devs[ctx->count++];
    memset(d, 0, sizeof(*d));
    d->seen = 1;
    d->index = nla_get_u32(tb[NEURON_A_DEV_INDEX]);
    if (gh->cmd == NEURON_CMD_DEVICE_GET) {
        if (!tb[NEURON_A_DEV_MINOR] || !tb[NEURON_A_DEV_BDF] || !tb[NEURON_A_DEV_CORES] ||
            !tb[NEURON_A_DEV_DMA_ENGINES] || !tb[NEURON_A_DEV_MEM_TOTAL] ||
            !tb[NEURON_A_DEV_MEM_USED] || !tb[NEURON_A_DEV_STATE] ||
            !tb[NEURON_A_DEV_RESET_COUNT] || !tb[NEURON_A_DEV_HW_VERSION] ||
            !tb[NEURON_A_DEV_FW_VERSION]) {
            ctx->bad++;
            return NL_SKIP;
        }
        d->minor = nla_get_u32(tb[NEURON_A_DEV_MINOR]);
        snprintf(d->bdf, sizeof(d->bdf), "%s", nla_get_string(tb[NEURON_A_DEV_BDF]));
        d->cores = nla_get_u32(tb[NEURON_A_DEV_CORES]);
        d->dma = nla_get_u32(tb[NEURON_A_DEV_DMA_ENGINES]);
        d->mem_total = nla_get_u64(tb[NEURON_A_DEV_MEM_TOTAL]);
        d->mem_used = nla_get_u64(tb[NEURON_A_DEV_MEM_USED]);
        d->state = nla_get_u32(tb[NEURON_A_DEV_STATE]);
        d->resets = nla_get_u64(tb[NEURON_A_DEV_RESET_COUNT]);
        return NL_OK;
    }

    nla_for_each_attr(a, genlmsg_attrdata(gh, 0), genlmsg_attrlen(gh, 0), rem) {
        struct nlattr *c[NEURON_A_CORE_MAX + 1];
        struct nlattr *e[NEURON_A_DMA_MAX + 1];

        if (nla_type(a) == NEURON_A_CORE) {
            if (nla_parse_nested(c, NEURON_A_CORE_MAX, a, NULL) || !c[NEURON_A_CORE_INDEX] ||
                !c[NEURON_A_CORE_BUSY_NS] || !c[NEURON_A_CORE_INSTRUCTIONS] ||
                !c[NEURON_A_CORE_FLOPS] || !c[NEURON_A_CORE_DMA_BYTES] || !c[NEURON_A_CORE_JOBS] ||
                !c[NEURON_A_CORE_FAULTS] || !c[NEURON_A_CORE_TIMEOUTS] ||
                !c[NEURON_A_CORE_RESETS] || nla_get_u32(c[NEURON_A_CORE_INDEX]) != d->core_nests) {
                ctx->bad++;
                continue;
            }
            if (d->core_nests < 16)
                d->core_jobs[d->core_nests] = nla_get_u64(c[NEURON_A_CORE_JOBS]);
            d->core_nests++;
        } else if (nla_type(a) == NEURON_A_DMA) {
            if (nla_parse_nested(e, NEURON_A_DMA_MAX, a, NULL) || !e[NEURON_A_DMA_INDEX] ||
                !e[NEURON_A_DMA_BYTES] || !e[NEURON_A_DMA_DESCRIPTORS] || !e[NEURON_A_DMA_ERRORS] ||
                nla_get_u32(e[NEURON_A_DMA_INDEX]) != d->dma_nests) {
                ctx->bad++;
                continue;
            }
            d->dma_nests++;
        }
    }
    return NL_OK;
}

/*
 * Sends @cmd for device @index (a dump if @index is -1, a request without
 * an index if it is -2), with attribute @extra_attr set to 1 if non-zero;
 * collects the replies into @ctx. Returns 0 or a libnl error.
 */
static int nl_request(struct nl_sock *sk, int family, uint8_t cmd, long long index, int extra_attr,
                      struct nl_ctx *ctx) {
    struct nl_msg *msg = nlmsg_alloc();
    int dump = index == -1;
    int ret;

    memset(ctx, 0, sizeof(*ctx));
    assert_non_null(msg);
    assert_non_null(genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, dump ? NLM_F_DUMP : 0,
                                cmd, NEURON_GENL_VERSION));
    if (index >= 0)
        assert_int_equal(nla_put_u32(msg, NEURON_A_DEV_INDEX, index), 0);
    if (extra_attr)
        assert_int_equal(nla_put_u32(msg, extra_attr, 1), 0);
    nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, parse_reply, ctx);
    ret = nl_send_auto(sk, msg);
    nlmsg_free(msg);
    if (ret < 0)
        return ret;
    ret = nl_recvmsgs_default(sk);
    if (ret >= 0 && !dump)
        ret = nl_wait_for_ack(sk);
    return ret < 0 ? ret : 0;
}

static struct device *device_by_minor(uint32_t minor) {
    for (int i = 0; i < num_devices; i++)
        if (devices[i].minor == (int)minor)
            return &devices[i];
    return NULL;
}

/* Checks the dump against sysfs; returns the number of mismatches. */
static int check_dump(struct nl_sock *sk, int family) {
    struct nl_ctx ctx;
    int errors = 0;

    if (nl_request(sk, family, NEURON_CMD_DEVICE_GET, -1, 0, &ctx))
        return 100;
    if (ctx.bad || ctx.count != num_devices)
        errors++;
    for (int i = 0; i < ctx.count; i++) {
        struct nl_device *n = &ctx.devs[i];
        struct device *d = device_by_minor(n->minor);

        if (!d || strcmp(d->bdf, n->bdf) || n->cores != d->cores || n->dma != d->dma ||
            n->state != NEURON_GENL_STATE_READY || n->mem_used > n->mem_total)
            errors++;
    }
    return errors;
}

static void test_netlink_devices(void **state) {
    struct nl_sock *sk;
    struct nl_ctx ctx, one;
    int family;

    (void)state;
    sk = nl_open(&family);
    assert_int_equal(check_dump(sk, family), 0);

    assert_int_equal(nl_request(sk, family, NEURON_CMD_DEVICE_GET, -1, 0, &ctx), 0);
    for (int i = 0; i < ctx.count; i++) {
        struct nl_device *n = &ctx.devs[i];
        struct device *d = device_by_minor(n->minor);

        assert_non_null(d);
        assert_int_equal(n->mem_total, read_u64("%s/memory_total", d->sysfs));
        assert_int_equal(n->mem_used, read_u64("%s/memory_used", d->sysfs));
        assert_int_equal(n->resets, read_u64("%s/reset_count", d->sysfs));

        /* By index. */
        assert_int_equal(nl_request(sk, family, NEURON_CMD_DEVICE_GET, n->index, 0, &one), 0);
        assert_int_equal(one.count, 1);
        assert_int_equal(one.devs[0].minor, n->minor);

        /* Counters: one nest per core and per engine, in order. */
        assert_int_equal(nl_request(sk, family, NEURON_CMD_COUNTERS_GET, n->index, 0, &one), 0);
        assert_int_equal(one.count, 1);
        assert_int_equal(one.bad, 0);
        assert_int_equal(one.devs[0].core_nests, d->cores);
        assert_int_equal(one.devs[0].dma_nests, d->dma);
        assert_int_equal(one.devs[0].core_jobs[0], read_u64("%s/core0/jobs", d->sysfs));
    }

    /* Counters of every device in one dump. */
    assert_int_equal(nl_request(sk, family, NEURON_CMD_COUNTERS_GET, -1, 0, &ctx), 0);
    assert_int_equal(ctx.count, num_devices);
    assert_int_equal(ctx.bad, 0);

    /* No such device. */
    assert_int_equal(nl_request(sk, family, NEURON_CMD_DEVICE_GET, 1 << 30, 0, &one), -NLE_NODEV);
    /* Strict validation: an attribute the command does not take. */
    assert_int_not_equal(
        nl_request(sk, family, NEURON_CMD_DEVICE_GET, ctx.devs[0].index, NEURON_A_DEV_MINOR, &one),
        0);
    assert_int_not_equal(
        nl_request(sk, family, NEURON_CMD_DEVICE_GET, ctx.devs[0].index, NEURON_A_MAX + 1, &one),
        0);
    /* A request without the index. */
    assert_int_not_equal(nl_request(sk, family, NEURON_CMD_COUNTERS_GET, -2, 0, &one), 0);
    nl_socket_free(sk);
}

/* Dumps devices and joins the events group as nobody. */
static void test_netlink_unprivileged(void **state) {
    pid_t pid;
    int status;

    (void)state;
    if (geteuid() != 0)
        skip();
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct nl_sock *sk;
        int family, grp;

        if (setgid(65534) || setuid(65534))
            _exit(10);
        sk = nl_socket_alloc();
        if (!sk || genl_connect(sk))
            _exit(11);
        family = genl_ctrl_resolve(sk, NEURON_GENL_NAME);
        if (family < 0)
            _exit(12);
        if (check_dump(sk, family))
            _exit(13);
        grp = genl_ctrl_resolve_grp(sk, NEURON_GENL_NAME, NEURON_GENL_MCGRP_EVENTS);
        if (grp < 0 || nl_socket_add_membership(sk, grp))
            _exit(14);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* --- events ------------------------------------------------------------------ */

struct event {
    uint32_t index, kind;
    int32_t core;
    uint64_t timestamp;
};

struct event_ctx {
    struct event events[64];
    int count;
};

static int parse_event(struct nl_msg *msg, void *arg) {
    struct event_ctx *ctx = arg;
    struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
    struct nlattr *tb[NEURON_A_MAX + 1];
    struct event *e;

    if (gh->cmd != NEURON_CMD_EVENT || ctx->count >= 64 ||
        genlmsg_parse(nlmsg_hdr(msg), 0, tb, NEURON_A_MAX, NULL) || !tb[NEURON_A_DEV_INDEX] ||
        !tb[NEURON_A_EVENT_KIND] || !tb[NEURON_A_EVENT_CORE] || !tb[NEURON_A_EVENT_TIMESTAMP])
        return NL_SKIP;
    e = &ctx->events[ctx->count++];
    e->index = nla_get_u32(tb[NEURON_A_DEV_INDEX]);
    e->kind = nla_get_u32(tb[NEURON_A_EVENT_KIND]);
    e->core = (int32_t)nla_get_u32(tb[NEURON_A_EVENT_CORE]);
    e->timestamp = nla_get_u64(tb[NEURON_A_EVENT_TIMESTAMP]);
    return NL_OK;
}

static struct nl_sock *events_open(struct event_ctx *ctx) {
    struct nl_sock *sk = nl_socket_alloc();
    int grp;

    assert_non_null(sk);
    nl_socket_disable_seq_check(sk);
    assert_int_equal(genl_connect(sk), 0);
    grp = genl_ctrl_resolve_grp(sk, NEURON_GENL_NAME, NEURON_GENL_MCGRP_EVENTS);
    assert_true(grp >= 0);
    assert_int_equal(nl_socket_add_membership(sk, grp), 0);
    nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, parse_event, ctx);
    memset(ctx, 0, sizeof(*ctx));
    return sk;
}

static uint64_t now_ns(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Receives events until one of @kind for @core arrives or @ms pass. */
static const struct event *events_wait(struct nl_sock *sk, struct event_ctx *ctx, uint32_t kind,
                                       int32_t core, int ms) {
    uint64_t deadline = now_ns() + (uint64_t)ms * 1000000;

    for (;;) {
        struct pollfd pfd = {.fd = nl_socket_get_fd(sk), .events = POLLIN};
        uint64_t now;

        for (int i = 0; i < ctx->count; i++)
            if (ctx->events[i].kind == kind && ctx->events[i].core == core)
                return &ctx->events[i];
        now = now_ns();
        if (now >= deadline)
            return NULL;
        if (poll(&pfd, 1, (int)((deadline - now) / 1000000) + 1) > 0)
            nl_recvmsgs_default(sk);
    }
}

static int debugfs_write(const struct device *d, const char *file, const char *value) {
    char path[256];
    int fd, ret = 0;

    snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%d/%s", d->minor, file);
    fd = open(path, O_WRONLY);
    if (fd < 0) {
        snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/%s", d->bdf, file);
        fd = open(path, O_WRONLY);
    }
    if (fd < 0)
        return -errno;
    if (write(fd, value, strlen(value)) != (ssize_t)strlen(value))
        ret = -errno;
    close(fd);
    return ret;
}

static int genl_index_of(const struct device *d) {
    struct nl_sock *sk;
    struct nl_ctx ctx;
    int family, index = -1;

    sk = nl_open(&family);
    assert_int_equal(nl_request(sk, family, NEURON_CMD_DEVICE_GET, -1, 0, &ctx), 0);
    for (int i = 0; i < ctx.count; i++)
        if ((int)ctx.devs[i].minor == d->minor)
            index = ctx.devs[i].index;
    nl_socket_free(sk);
    assert_true(index >= 0);
    return index;
}

/* Waits up to @ms for the device's state file to read @want. */
static int wait_state(const struct device *d, const char *want, int ms) {
    char buf[32];

    for (int t = 0; t <= ms; t += 50) {
        read_str(buf, sizeof(buf), "%s/state", d->sysfs);
        if (!strcmp(buf, want))
            return 0;
        usleep(50000);
    }
    return -1;
}

static void test_reset_core_event(void **state) {
    (void)state;
    for (int i = 0; i < num_devices; i++) {
        struct device *d = &devices[i];
        unsigned int core = d->cores - 1;
        uint64_t resets, core_resets, other_resets, t0;
        const struct event *ev;
        struct event_ctx ctx;
        struct nl_sock *sk;
        char value[16];
        int index = genl_index_of(d);
        int ret;

        resets = read_u64("%s/reset_count", d->sysfs);
        core_resets = read_u64("%s/core%u/resets", d->sysfs, core);
        other_resets = core ? read_u64("%s/core0/resets", d->sysfs) : 0;
        sk = events_open(&ctx);
        t0 = now_ns();

        snprintf(value, sizeof(value), "%u\n", core);
        ret = debugfs_write(d, "reset_core", value);
        if (ret)
            fail_msg("debugfs reset_core of accel%d: %s", d->minor, strerror(-ret));

        ev = events_wait(sk, &ctx, NEURON_EVENT_RESET, (int32_t)core, 20000);
        if (!ev)
            fail_msg("no reset event for accel%d core %u (%d events)", d->minor, core, ctx.count);
        assert_int_equal(ev->index, index);
        assert_true(ev->timestamp >= t0 && ev->timestamp <= now_ns());
        /* The cause comes first: the queue stopped on an error. */
        assert_non_null(events_wait(sk, &ctx, NEURON_EVENT_ERROR, (int32_t)core, 0));

        assert_int_equal(read_u64("%s/reset_count", d->sysfs), resets + 1);
        assert_int_equal(read_u64("%s/core%u/resets", d->sysfs, core), core_resets + 1);
        if (core)
            assert_int_equal(read_u64("%s/core0/resets", d->sysfs), other_resets);
        assert_int_equal(wait_state(d, "ready", 5000), 0);
        nl_socket_free(sk);
    }
}

/* Copies @size bytes between two new device buffers on DMA engine 0 and waits. */
static void copy_on_engine0(const struct device *d, uint64_t size) {
    int fd = open_device(d);
    uint32_t src = bo_create(fd, size, DRM_NEURON_BO_DEVICE);
    uint32_t dst = bo_create(fd, size, DRM_NEURON_BO_DEVICE);
    uint32_t done;
    struct drm_syncobj_create create = {0};
    struct drm_neuron_copy copy = {.src_handle = src, .dst_handle = dst, .size = size};

    assert_int_equal(drmIoctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &create), 0);
    done = create.handle;
    copy.out_sync.handle = done;
    assert_int_equal(drmIoctl(fd, DRM_IOCTL_NEURON_COPY, &copy), 0);
    assert_int_equal(drmSyncobjWait(fd, &done, 1, INT64_MAX, 0, NULL), 0);
    close(fd);
}

/* Fails if counter @unit<@index>/@name went back from @before to @after. */
static void check_not_back(const struct device *d, const char *unit, unsigned int index,
                           const char *name, uint64_t before, uint64_t after) {
    if (after < before)
        fail_msg("accel%d %s%u/%s went back from %llu to %llu", d->minor, unit, index, name,
                 (unsigned long long)before, (unsigned long long)after);
}

static void test_inject_fatal_event(void **state) {
    (void)state;
    for (int i = 0; i < num_devices; i++) {
        struct device *d = &devices[i];
        uint64_t resets, core0;
        struct counters before, after;
        struct event_ctx ctx;
        struct nl_sock *sk;
        int ret;

        /* Counters that are not zero, to see that the reset keeps them. */
        copy_on_engine0(d, BO_SIZE);
        read_counters(d, &before);
        assert_true(before.dma[0][0] >= BO_SIZE);
        resets = read_u64("%s/reset_count", d->sysfs);
        core0 = read_u64("%s/core0/resets", d->sysfs);
        sk = events_open(&ctx);

        ret = debugfs_write(d, "inject_fatal", "1\n");
        if (ret)
            fail_msg("debugfs inject_fatal of accel%d: %s", d->minor, strerror(-ret));
        if (!events_wait(sk, &ctx, NEURON_EVENT_RESET, -1, 20000))
            fail_msg("no device reset event for accel%d (%d events)", d->minor, ctx.count);
        assert_non_null(events_wait(sk, &ctx, NEURON_EVENT_FATAL, -1, 0));
        assert_int_equal(wait_state(d, "ready", 5000), 0);
        assert_int_equal(read_u64("%s/reset_count", d->sysfs), resets + 1);
        /* A device reset resets every core. */
        assert_int_equal(read_u64("%s/core0/resets", d->sysfs), core0 + 1);
        /* The device zeroes its counters; the driver keeps what they had reached. */
        read_counters(d, &after);
        for (unsigned int c = 0; c < d->cores; c++)
            for (size_t k = 0; k < NUM_CORE_COUNTERS; k++)
                check_not_back(d, "core", c, core_counters[k], before.core[c][k], after.core[c][k]);
        for (unsigned int e = 0; e < d->dma; e++)
            for (size_t k = 0; k < NUM_DMA_COUNTERS; k++)
                check_not_back(d, "dma", e, dma_counters[k], before.dma[e][k], after.dma[e][k]);
        nl_socket_free(sk);

        /* The device works again. */
        {
            int fd = open_device(d);

            bo_close(fd, bo_create(fd, BO_SIZE, DRM_NEURON_BO_DEVICE));
            close(fd);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sysfs),
        cmocka_unit_test(test_memory_used),
        cmocka_unit_test(test_fdinfo),
        cmocka_unit_test(test_netlink_devices),
        cmocka_unit_test(test_netlink_unprivileged),
        cmocka_unit_test(test_reset_core_event),
        cmocka_unit_test(test_inject_fatal_event),
    };

    return cmocka_run_group_tests(tests, find_devices, NULL);
}
