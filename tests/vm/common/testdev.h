/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the guest tests that talk to neuron.ko with raw ioctls.
 */
#ifndef NEURON_TESTDEV_H
#define NEURON_TESTDEV_H

#include <errno.h>

#include <xf86drm.h>

/* One neuron accel device: its node, its name in /sys/class/accel, its PCI address. */
struct neuron_test_dev {
    char path[300];
    char node[64];
    char bdf[64];
};

/*
 * Finds the first neuron device, or the one whose node name ends
 * $NEURON_ACCEL_DEV. Returns 0, or -1 when there is none.
 */
int neuron_test_find_device(struct neuron_test_dev *dev);

/* A number in the device's sysfs neuron/ directory, or -1. */
long neuron_test_sysfs_long(const struct neuron_test_dev *dev, const char *attr);

/* Waits up to @timeout_s (whole seconds) for @attr to read @want; returns the last value. */
long neuron_test_sysfs_wait(const struct neuron_test_dev *dev, const char *attr, long want,
                            double timeout_s);

/*
 * kmemleak (debug kernels): forget the leaks reported so far (-1 without
 * kmemleak); then scan and print what is new, returning how many
 * unreferenced objects it found (-1 without kmemleak).
 */
int neuron_test_kmemleak_clear(void);
long neuron_test_kmemleak_scan(void);

/*
 * An ioctl restarted on EINTR/EAGAIN: 0 or the negative errno. Inline, so
 * that the compiler sees which outputs a successful call sets.
 */
static inline int neuron_ioctl(int fd, unsigned long request, void *arg) {
    return drmIoctl(fd, request, arg) ? -errno : 0;
}

#endif /* NEURON_TESTDEV_H */
