// SPDX-License-Identifier: MIT
/*
 * One vCPU reads a device register through a mapping of its BAR while the
 * other turns memory decoding of a second device off and on, so QEMU
 * commits a new memory map thousands of times under the reader's feet.
 *
 * Every read must return the register's value. A QEMU whose TLB entries
 * name their MMIO section by its number in the current map reads another
 * region (a wrong value) or aborts in iotlb_to_section() when a commit
 * renumbers the sections (emu/qemu/patches/0001-*).
 *
 * Needs two neuron devices with no driver bound (neuron-vm --no-neuron):
 * the reader maps BAR0 of the device with the higher BAR0 address (the
 * renumbering only moves sections above the toggled one).
 *
 * usage: neuron-mmio-topology-race [--seconds N]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "neuron_regs.h"

#define PCI_DEVICES "/sys/bus/pci/devices"
#define PCI_COMMAND 0x04
#define PCI_COMMAND_MEMORY 0x2

struct pci_dev {
    char path[300];
    uint64_t bar0;
};

static atomic_bool stop;

static int read_hex(const char *path, uint64_t *value) {
    FILE *f = fopen(path, "r");
    int ok;

    if (!f)
        return -1;
    ok = fscanf(f, "%" SCNx64, value) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

/* The neuron devices by PCI ID, with the start of their BAR0. */
static int find_devices(struct pci_dev *devs, int max) {
    DIR *dir = opendir(PCI_DEVICES);
    struct dirent *de;
    int n = 0;

    if (!dir) {
        fprintf(stderr, "cannot open %s: %s\n", PCI_DEVICES, strerror(errno));
        return -1;
    }
    while ((de = readdir(dir)) && n < max) {
        char file[400];
        uint64_t vendor, device;
        FILE *res;

        if (de->d_name[0] == '.')
            continue;
        snprintf(devs[n].path, sizeof(devs[n].path), "%s/%s", PCI_DEVICES, de->d_name);
        snprintf(file, sizeof(file), "%s/vendor", devs[n].path);
        if (read_hex(file, &vendor) || vendor != NEURON_PCI_VENDOR_ID)
            continue;
        snprintf(file, sizeof(file), "%s/device", devs[n].path);
        if (read_hex(file, &device) || device != NEURON_PCI_DEVICE_ID)
            continue;
        snprintf(file, sizeof(file), "%s/resource", devs[n].path);
        res = fopen(file, "r");
        if (!res || fscanf(res, "%" SCNx64, &devs[n].bar0) != 1) {
            fprintf(stderr, "cannot read %s\n", file);
            if (res)
                fclose(res);
            closedir(dir);
            return -1;
        }
        fclose(res);
        n++;
    }
    closedir(dir);
    return n;
}

static void pin_to_cpu(int cpu) {
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set))
        fprintf(stderr, "warning: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

struct toggler {
    int config_fd;
    uint16_t command;
    uint64_t commits;
    int error;
};

static void *toggle(void *arg) {
    struct toggler *t = arg;
    uint16_t off = t->command & ~PCI_COMMAND_MEMORY;
    uint16_t on = t->command | PCI_COMMAND_MEMORY;

    pin_to_cpu(0);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        if (pwrite(t->config_fd, &off, 2, PCI_COMMAND) != 2 ||
            pwrite(t->config_fd, &on, 2, PCI_COMMAND) != 2) {
            t->error = errno;
            break;
        }
        t->commits += 2;
    }
    return NULL;
}

int main(int argc, char **argv) {
    struct pci_dev devs[4];
    struct toggler t = {0};
    const struct pci_dev *reader, *toggled;
    unsigned int seconds = 10;
    uint64_t reads = 0, wrong = 0;
    uint32_t last_wrong = 0;
    char file[400];
    pthread_t thread;
    volatile uint32_t *regs;
    struct timespec start, now;
    int n, fd;

    if (argc == 3 && !strcmp(argv[1], "--seconds"))
        seconds = (unsigned int)strtoul(argv[2], NULL, 0);
    else if (argc != 1) {
        fprintf(stderr, "usage: %s [--seconds N]\n", argv[0]);
        return 2;
    }

    n = find_devices(devs, 4);
    if (n < 2) {
        fprintf(stderr, "need two neuron devices, found %d\n", n);
        return 1;
    }
    reader = devs[0].bar0 > devs[1].bar0 ? &devs[0] : &devs[1];
    toggled = reader == &devs[0] ? &devs[1] : &devs[0];

    snprintf(file, sizeof(file), "%s/enable", reader->path);
    fd = open(file, O_WRONLY);
    if (fd < 0 || write(fd, "1", 1) != 1) {
        fprintf(stderr, "cannot enable %s: %s\n", reader->path, strerror(errno));
        return 1;
    }
    close(fd);
    snprintf(file, sizeof(file), "%s/resource0", reader->path);
    fd = open(file, O_RDWR | O_SYNC);
    if (fd < 0) {
        fprintf(stderr, "cannot open %s: %s\n", file, strerror(errno));
        return 1;
    }
    regs = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (regs == MAP_FAILED) {
        fprintf(stderr, "cannot map %s: %s\n", file, strerror(errno));
        return 1;
    }
    if (regs[NEURON_REG_MAGIC / 4] != NEURON_MAGIC) {
        fprintf(stderr, "%s: magic register reads 0x%08x before the test\n", file,
                regs[NEURON_REG_MAGIC / 4]);
        return 1;
    }

    snprintf(file, sizeof(file), "%s/config", toggled->path);
    t.config_fd = open(file, O_RDWR);
    if (t.config_fd < 0 || pread(t.config_fd, &t.command, 2, PCI_COMMAND) != 2) {
        fprintf(stderr, "cannot read the command register in %s: %s\n", file, strerror(errno));
        return 1;
    }
    printf("reader BAR0 0x%" PRIx64 " (%s), toggled BAR0 0x%" PRIx64 " (%s)\n", reader->bar0,
           reader->path, toggled->bar0, toggled->path);

    pin_to_cpu(1);
    if (pthread_create(&thread, NULL, toggle, &t)) {
        fprintf(stderr, "cannot start the toggling thread\n");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        for (int i = 0; i < 1000; i++) {
            uint32_t v = regs[NEURON_REG_MAGIC / 4];

            if (v != NEURON_MAGIC) {
                wrong++;
                last_wrong = v;
            }
        }
        reads += 1000;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - start.tv_sec < (time_t)seconds && !t.error);
    atomic_store(&stop, true);
    pthread_join(thread, NULL);
    pwrite(t.config_fd, &t.command, 2, PCI_COMMAND);

    printf("%" PRIu64 " reads, %" PRIu64 " memory-map commits, %" PRIu64 " wrong reads\n", reads,
           t.commits, wrong);
    if (t.error) {
        fprintf(stderr, "writing the command register failed: %s\n", strerror(t.error));
        return 1;
    }
    if (t.commits < 1000) {
        fprintf(stderr, "only %" PRIu64 " commits: the race was not exercised\n", t.commits);
        return 1;
    }
    if (wrong) {
        fprintf(stderr,
                "FAIL: %" PRIu64 " reads of the magic register returned another "
                "value (last 0x%08x)\n",
                wrong, last_wrong);
        return 1;
    }
    return 0;
}
