// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include "testdev.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
