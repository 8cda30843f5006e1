// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include "testdev.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "neuron_regs.h"

static unsigned long read_hex(const char *dir, const char *file) {
    char path[512], buf[32] = "";
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = 0;
    fclose(f);
    return strtoul(buf, NULL, 16);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);

    return n >= m && !strcmp(s + n - m, suffix);
}

int neuron_test_find_device(struct neuron_test_dev *dev) {
    const char *want = getenv("NEURON_ACCEL_DEV");
    struct dirent *de;
    DIR *d;

    d = opendir("/sys/class/accel");
    if (!d)
        return -1;
    while ((de = readdir(d))) {
        char dir[300], link[300];
        ssize_t n;

        if (strncmp(de->d_name, "accel", 5))
            continue;
        snprintf(dir, sizeof(dir), "/sys/class/accel/%s/device", de->d_name);
        if (read_hex(dir, "vendor") != NEURON_PCI_VENDOR_ID ||
            read_hex(dir, "device") != NEURON_PCI_DEVICE_ID)
            continue;
        if (want && !ends_with(want, de->d_name))
            continue;
        n = readlink(dir, link, sizeof(link) - 1);
        if (n < 0)
            continue;
        link[n] = 0;
        snprintf(dev->bdf, sizeof(dev->bdf), "%s", strrchr(link, '/') + 1);
        snprintf(dev->node, sizeof(dev->node), "%s", de->d_name);
        snprintf(dev->path, sizeof(dev->path), "/dev/accel/%s", de->d_name);
        closedir(d);
        return 0;
    }
    closedir(d);
    return -1;
}

long neuron_test_sysfs_long(const struct neuron_test_dev *dev, const char *attr) {
    char path[400], buf[64] = "";
    FILE *f;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/neuron/%s", dev->bdf, attr);
    f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = 0;
    fclose(f);
    return strtol(buf, NULL, 0);
}

long neuron_test_sysfs_wait(const struct neuron_test_dev *dev, const char *attr, long want,
                            double timeout_s) {
    struct timespec ts, end;
    long v;

    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += (time_t)timeout_s;
    while ((v = neuron_test_sysfs_long(dev, attr)) != want) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if (ts.tv_sec > end.tv_sec || (ts.tv_sec == end.tv_sec && ts.tv_nsec >= end.tv_nsec))
            break;
        usleep(10000);
    }
    return v;
}

#define KMEMLEAK "/sys/kernel/debug/kmemleak"

static int kmemleak_cmd(const char *cmd) {
    FILE *f = fopen(KMEMLEAK, "w");
    int ret;

    if (!f)
        return -1;
    ret = fputs(cmd, f) < 0 ? -1 : 0;
    return fclose(f) || ret ? -1 : 0;
}

int neuron_test_kmemleak_clear(void) {
    return kmemleak_cmd("clear");
}

long neuron_test_kmemleak_scan(void) {
    char line[512];
    long n = 0;
    FILE *f;

    /* Objects allocated just before a scan are not reported by it: scan twice. */
    if (kmemleak_cmd("scan") || kmemleak_cmd("scan"))
        return -1;
    f = fopen(KMEMLEAK, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        n += !!strstr(line, "unreferenced object");
        fputs(line, stdout);
    }
    fclose(f);
    return n;
}
