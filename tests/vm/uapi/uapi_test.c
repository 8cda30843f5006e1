// SPDX-License-Identifier: MIT
/*
 * UAPI conformance test of neuron.ko (uapi/drm/neuron_accel.h).
 *
 * Runs against the first neuron accel device (or $NEURON_ACCEL_DEV) with
 * raw ioctls: every success path of GET_PARAM, BO_CREATE, BO_INFO and mmap,
 * and every invalid field with the errno the header documents. Tests that
 * need device memory are skipped when the device reports none.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <xf86drm.h>

#include "drm/neuron_accel.h"
#include "neuron_isa.h"
#include "neuron_regs.h"
#include "testdev.h"

static struct neuron_test_dev tdev;

static int open_dev(void) {
    int fd = open(tdev.path, O_RDWR | O_CLOEXEC);

    assert_true(fd >= 0);
    return fd;
}

static int setup(void **state) {
    int *fd = malloc(sizeof(*fd));

    if (!fd)
        return -1;
    *fd = open(tdev.path, O_RDWR | O_CLOEXEC);
    if (*fd < 0) {
        free(fd);
        return -1;
    }
    *state = fd;
    return 0;
}

static int teardown(void **state) {
    int *fd = *state;

    close(*fd);
    free(fd);
    return 0;
}

static uint64_t get_param(int fd, uint32_t param) {
    struct drm_neuron_get_param gp = {.param = param};

    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_GET_PARAM, &gp), 0);
    return gp.value;
}

static int bo_create(int fd, uint64_t size, uint32_t region, uint32_t flags, uint32_t *handle) {
    struct drm_neuron_bo_create c = {
        .size = size,
        .region = region,
        .flags = flags,
    };
    int ret = neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_CREATE, &c);

    if (!ret) {
        assert_int_not_equal(c.handle, 0);
        *handle = c.handle;
    }
    return ret;
}

static struct drm_neuron_bo_info bo_info(int fd, uint32_t handle) {
    struct drm_neuron_bo_info info = {.handle = handle};

    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_INFO, &info), 0);
    return info;
}

static void gem_close(int fd, uint32_t handle) {
    struct drm_gem_close cl = {.handle = handle};

    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &cl), 0);
}

static uint64_t device_mem(int fd) {
    return get_param(fd, DRM_NEURON_PARAM_DEVICE_MEM_SIZE);
}

/* --- GET_PARAM ------------------------------------------------------------ */

static void test_get_param_values(void **state) {
    int fd = *(int *)state[0];
    unsigned int domain, bus, dev, fn;
    uint64_t v;
    uint32_t p;

    assert_int_equal(get_param(fd, DRM_NEURON_PARAM_DEVICE_ID),
                     NEURON_PCI_VENDOR_ID << 16 | NEURON_PCI_DEVICE_ID);
    assert_int_equal(get_param(fd, DRM_NEURON_PARAM_API_VERSION),
                     DRM_NEURON_API_VERSION_MAJOR << 16 | DRM_NEURON_API_VERSION_MINOR);
    assert_int_equal(get_param(fd, DRM_NEURON_PARAM_MAX_BINDINGS), 63);
    assert_true(get_param(fd, DRM_NEURON_PARAM_NUM_CORES) <= 16);
    assert_true(get_param(fd, DRM_NEURON_PARAM_NUM_DMA_ENGINES) <= 8);
    assert_int_equal(get_param(fd, DRM_NEURON_PARAM_HW_VERSION) >> 16, 1);
    /* The emulated device implements this tree's ISA. */
    assert_int_equal(get_param(fd, DRM_NEURON_PARAM_ISA_VERSION),
                     NEURON_ISA_VERSION_MAJOR << 16 | NEURON_ISA_VERSION_MINOR);
    assert_int_equal(device_mem(fd) % sysconf(_SC_PAGESIZE), 0);

    v = get_param(fd, DRM_NEURON_PARAM_PCI_BUS_INFO);
    assert_int_equal(sscanf(tdev.bdf, "%x:%x:%x.%x", &domain, &bus, &dev, &fn), 4);
    assert_int_equal(DRM_NEURON_PCI_DOMAIN(v), domain);
    assert_int_equal(DRM_NEURON_PCI_BUS(v), bus);
    assert_int_equal(DRM_NEURON_PCI_DEV(v), dev);
    assert_int_equal(DRM_NEURON_PCI_FUNC(v), fn);

    /* Every defined parameter answers. */
    for (p = 0; p < DRM_NEURON_PARAM_COUNT; p++)
        get_param(fd, p);
    print_message(
        "device %s (%s): %llu cores, %llu DMA engines, %llu MiB device memory, caps %#llx\n",
        tdev.path, tdev.bdf, (unsigned long long)get_param(fd, DRM_NEURON_PARAM_NUM_CORES),
        (unsigned long long)get_param(fd, DRM_NEURON_PARAM_NUM_DMA_ENGINES),
        (unsigned long long)device_mem(fd) >> 20,
        (unsigned long long)get_param(fd, DRM_NEURON_PARAM_CAPABILITIES));
}

static void test_get_param_invalid(void **state) {
    int fd = *(int *)state[0];
    struct drm_neuron_get_param gp = {.param = DRM_NEURON_PARAM_COUNT};

    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_GET_PARAM, &gp), -EINVAL);
    gp.param = UINT32_MAX;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_GET_PARAM, &gp), -EINVAL);
    gp.param = DRM_NEURON_PARAM_NUM_CORES;
    gp.pad = 1;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_GET_PARAM, &gp), -EINVAL);
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_GET_PARAM, NULL), -EFAULT);
}

/* --- BO_CREATE / BO_INFO / mmap -------------------------------------------- */

static void check_bo(int fd, uint32_t region, uint32_t flags, uint64_t size) {
    long page = sysconf(_SC_PAGESIZE);
    struct drm_neuron_bo_info info;
    uint64_t rounded = (size + page - 1) / page * page;
    uint32_t handle;
    uint8_t *p;
    uint64_t i;

    assert_int_equal(bo_create(fd, size, region, flags, &handle), 0);
    info = bo_info(fd, handle);
    assert_int_equal(info.size, rounded);
    assert_int_equal(info.region, region);
    assert_int_equal(info.flags, flags);
    assert_int_equal(info.pad, 0);
    assert_int_not_equal(info.mmap_offset, 0);
    if (region == DRM_NEURON_BO_DEVICE) {
        assert_int_equal(info.device_addr % page, 0);
        assert_true(info.device_addr + info.size <= device_mem(fd));
    } else {
        assert_int_equal(info.device_addr, DRM_NEURON_BO_NO_DEVICE_ADDR);
    }

    p = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.mmap_offset);
    assert_true(p != MAP_FAILED);
    /* New memory is zeroed, then holds what is written. */
    for (i = 0; i < info.size; i++)
        if (p[i])
            fail_msg("byte %llu of a new buffer is %#x", (unsigned long long)i, p[i]);
    for (i = 0; i < info.size; i++)
        p[i] = (uint8_t)(i * 7 + 3);
    /* The mapping outlives the handle. */
    gem_close(fd, handle);
    for (i = 0; i < info.size; i++)
        if (p[i] != (uint8_t)(i * 7 + 3))
            fail_msg("byte %llu reads %#x", (unsigned long long)i, p[i]);
    assert_int_equal(munmap(p, info.size), 0);
}

static void test_bo_host(void **state) {
    int fd = *(int *)state[0];

    check_bo(fd, DRM_NEURON_BO_HOST, 0, 1);
    check_bo(fd, DRM_NEURON_BO_HOST, 0, 4096);
    check_bo(fd, DRM_NEURON_BO_HOST, 0, 3 * 1024 * 1024 + 5);
    check_bo(fd, DRM_NEURON_BO_HOST, DRM_NEURON_BO_WC, 65536);
}

static void test_bo_device(void **state) {
    int fd = *(int *)state[0];
    uint64_t mem = device_mem(fd);
    uint32_t h1, h2;

    if (!mem)
        skip();
    check_bo(fd, DRM_NEURON_BO_DEVICE, 0, 1);
    check_bo(fd, DRM_NEURON_BO_DEVICE, DRM_NEURON_BO_WC, 2 * 1024 * 1024 + 1);

    /* All of device memory at once, then nothing is left. */
    assert_int_equal(bo_create(fd, mem, DRM_NEURON_BO_DEVICE, 0, &h1), 0);
    assert_int_equal(bo_create(fd, 4096, DRM_NEURON_BO_DEVICE, 0, &h2), -ENOSPC);
    gem_close(fd, h1);
    /* Freed memory is reusable. */
    assert_int_equal(bo_create(fd, mem, DRM_NEURON_BO_DEVICE, 0, &h1), 0);
    gem_close(fd, h1);
    /* Larger than device memory. */
    assert_int_equal(bo_create(fd, mem + 1, DRM_NEURON_BO_DEVICE, 0, &h1), -ENOSPC);
}

static void test_bo_device_distinct(void **state) {
    int fd = *(int *)state[0];
    struct drm_neuron_bo_info a, b;
    uint32_t h1, h2;

    if (device_mem(fd) < 2 * 65536)
        skip();
    assert_int_equal(bo_create(fd, 65536, DRM_NEURON_BO_DEVICE, 0, &h1), 0);
    assert_int_equal(bo_create(fd, 65536, DRM_NEURON_BO_DEVICE, 0, &h2), 0);
    a = bo_info(fd, h1);
    b = bo_info(fd, h2);
    assert_true(a.device_addr + a.size <= b.device_addr || b.device_addr + b.size <= a.device_addr);
    assert_int_not_equal(a.mmap_offset, b.mmap_offset);
    gem_close(fd, h1);
    gem_close(fd, h2);
}

static void test_bo_create_invalid(void **state) {
    int fd = *(int *)state[0];
    struct drm_neuron_bo_create c;
    uint32_t region, h;

    for (region = 0; region < DRM_NEURON_BO_REGION_COUNT; region++) {
        assert_int_equal(bo_create(fd, 0, region, 0, &h), -EINVAL);
        assert_int_equal(bo_create(fd, DRM_NEURON_BO_MAX_SIZE + 1, region, 0, &h), -EINVAL);
        assert_int_equal(bo_create(fd, UINT64_MAX, region, 0, &h), -EINVAL);
        assert_int_equal(bo_create(fd, UINT64_MAX - 4095, region, 0, &h), -EINVAL);
        assert_int_equal(bo_create(fd, 4096, region, 1u << 1, &h), -EINVAL);
        assert_int_equal(bo_create(fd, 4096, region, 1u << 31, &h), -EINVAL);
        assert_int_equal(bo_create(fd, 4096, region, ~DRM_NEURON_BO_FLAGS_ALL, &h), -EINVAL);

        memset(&c, 0, sizeof(c));
        c.size = 4096;
        c.region = region;
        c.pad = 1;
        assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_CREATE, &c), -EINVAL);
    }
    assert_int_equal(bo_create(fd, 4096, DRM_NEURON_BO_REGION_COUNT, 0, &h), -EINVAL);
    assert_int_equal(bo_create(fd, 4096, UINT32_MAX, 0, &h), -EINVAL);
    /* Host buffers that could never be backed. */
    assert_int_equal(bo_create(fd, DRM_NEURON_BO_MAX_SIZE, DRM_NEURON_BO_HOST, 0, &h), -ENOMEM);
    if (!device_mem(fd))
        assert_int_equal(bo_create(fd, 4096, DRM_NEURON_BO_DEVICE, 0, &h), -ENOSPC);
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_CREATE, NULL), -EFAULT);
}

static void test_bo_info_invalid(void **state) {
    int fd = *(int *)state[0];
    struct drm_neuron_bo_info info;
    uint32_t h;

    memset(&info, 0, sizeof(info));
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_INFO, &info), -ENOENT);
    info.handle = 0x7fffffff;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_INFO, &info), -ENOENT);

    assert_int_equal(bo_create(fd, 4096, DRM_NEURON_BO_HOST, 0, &h), 0);
    memset(&info, 0, sizeof(info));
    info.handle = h;
    info.pad = 1;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_INFO, &info), -EINVAL);
    gem_close(fd, h);
    /* A closed handle is gone, and cannot be closed twice. */
    info.pad = 0;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_NEURON_BO_INFO, &info), -ENOENT);
    {
        struct drm_gem_close cl = {.handle = h};

        assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &cl), -EINVAL);
    }
}

static void check_mmap_invalid(int fd, uint32_t region) {
    struct drm_neuron_bo_info info;
    uint32_t h;
    void *p;

    assert_int_equal(bo_create(fd, 8192, region, 0, &h), 0);
    info = bo_info(fd, h);

    /* Larger than the buffer. */
    p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.mmap_offset);
    assert_true(p == MAP_FAILED);
    assert_int_equal(errno, EINVAL);
    /* Not at the buffer's offset. */
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.mmap_offset + 4096);
    assert_true(p == MAP_FAILED);
    /* Copy-on-write mappings of shared buffers. */
    p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, info.mmap_offset);
    assert_true(p == MAP_FAILED);
    assert_int_equal(errno, EINVAL);
    /* A smaller mapping from the start is fine. */
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.mmap_offset);
    assert_true(p != MAP_FAILED);
    assert_int_equal(munmap(p, 4096), 0);
    gem_close(fd, h);

    /* An offset that names no buffer. */
    p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, info.mmap_offset);
    assert_true(p == MAP_FAILED);
}

static void test_mmap_invalid(void **state) {
    int fd = *(int *)state[0];

    check_mmap_invalid(fd, DRM_NEURON_BO_HOST);
    if (device_mem(fd))
        check_mmap_invalid(fd, DRM_NEURON_BO_DEVICE);
}

/* Handles belong to the file that created them. */
static void test_handle_namespace(void **state) {
    int fd = *(int *)state[0];
    struct drm_neuron_bo_info info;
    uint32_t region, h;
    int fd2 = open_dev();

    for (region = 0; region < DRM_NEURON_BO_REGION_COUNT; region++) {
        if (region == DRM_NEURON_BO_DEVICE && !device_mem(fd))
            continue;
        assert_int_equal(bo_create(fd, 4096, region, 0, &h), 0);
        memset(&info, 0, sizeof(info));
        info.handle = h;
        assert_int_equal(neuron_ioctl(fd2, DRM_IOCTL_NEURON_BO_INFO, &info), -ENOENT);
        info = bo_info(fd, h);
        /* Nor can the other file map it through its offset. */
        assert_true(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, info.mmap_offset) == MAP_FAILED);
        gem_close(fd, h);
    }
    close(fd2);
}

/* No global names and no dma-buf sharing. */
static void test_no_sharing(void **state) {
    int fd = *(int *)state[0];
    struct drm_prime_handle prime;
    struct drm_gem_flink flink;
    struct drm_gem_open gopen;
    uint32_t h;

    assert_int_equal(bo_create(fd, 4096, DRM_NEURON_BO_HOST, 0, &h), 0);
    memset(&flink, 0, sizeof(flink));
    flink.handle = h;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_GEM_FLINK, &flink), -EOPNOTSUPP);
    memset(&gopen, 0, sizeof(gopen));
    gopen.name = 1;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_GEM_OPEN, &gopen), -EOPNOTSUPP);
    memset(&prime, 0, sizeof(prime));
    prime.handle = h;
    prime.flags = DRM_CLOEXEC | DRM_RDWR;
    assert_int_equal(neuron_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime), -EOPNOTSUPP);
    gem_close(fd, h);
}

/* Buffers of a closed file are freed: device memory returns to the pool. */
static void test_close_frees(void **state) {
    int fd = *(int *)state[0];
    uint64_t mem = device_mem(fd);
    uint32_t h;
    int fd2, i;

    if (!mem)
        skip();
    for (i = 0; i < 3; i++) {
        fd2 = open_dev();
        assert_int_equal(bo_create(fd2, mem, DRM_NEURON_BO_DEVICE, 0, &h), 0);
        assert_int_equal(bo_create(fd, 4096, DRM_NEURON_BO_DEVICE, 0, &h), -ENOSPC);
        close(fd2);
    }
    assert_int_equal(bo_create(fd, mem, DRM_NEURON_BO_DEVICE, 0, &h), 0);
    gem_close(fd, h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_param_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_param_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bo_host, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bo_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bo_device_distinct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bo_create_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bo_info_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mmap_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handle_namespace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_sharing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_frees, setup, teardown),
    };

    if (neuron_test_find_device(&tdev)) {
        fprintf(stderr, "uapi_test: no neuron accel device found\n");
        return 1;
    }
    return cmocka_run_group_tests_name("neuron uapi", tests, NULL, NULL);
}
