// SPDX-License-Identifier: MIT
#include "fuzz_harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct fh_memory *memory;

bool fh_host_span(uint64_t addr, size_t len, uint64_t *off) {
    if (addr < FH_HOST_BASE || addr - FH_HOST_BASE > FH_HOST_SIZE ||
        len > FH_HOST_SIZE - (addr - FH_HOST_BASE))
        return false;
    *off = addr - FH_HOST_BASE;
    return true;
}

static int host_read(void *opaque, uint64_t addr, void *buf, size_t len) {
    uint64_t off;
    (void)opaque;
    if (!fh_host_span(addr, len, &off))
        return -1;
    memcpy(buf, memory->host + off, len);
    return 0;
}

int fh_host_write(void *opaque, uint64_t addr, const void *buf, size_t len) {
    uint64_t off;
    (void)opaque;
    if (!fh_host_span(addr, len, &off))
        return -1;
    memcpy(memory->host + off, buf, len);
    return 0;
}

void fh_memory_init(struct fh_memory *m,
                    int (*host_write)(void *opaque, uint64_t addr, const void *buf, size_t len)) {
    m->devmem = malloc(FH_DEVMEM_SIZE);
    m->host = malloc(FH_HOST_SIZE);
    if (!m->devmem || !m->host)
        abort();
    m->ops.host_read = host_read;
    m->ops.host_write = host_write;
    m->ops.opaque = m;
    m->ops.devmem = m->devmem;
    m->ops.devmem_size = FH_DEVMEM_SIZE;
    memory = m;
}

void fh_memory_fill(struct fh_memory *m) {
    memset(m->devmem, FH_FILL_BYTE, FH_DEVMEM_SIZE);
    memset(m->host, FH_FILL_BYTE, FH_HOST_SIZE);
}

static struct {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool armed;
    struct timespec deadline;
    void (*fire)(void *opaque);
    void *opaque;
} dog = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void *watchdog(void *arg) {
    (void)arg;
    pthread_mutex_lock(&dog.lock);
    for (;;) {
        while (!dog.armed)
            pthread_cond_wait(&dog.cond, &dog.lock);
        if (pthread_cond_timedwait(&dog.cond, &dog.lock, &dog.deadline) && dog.armed) {
            dog.armed = false;
            dog.fire(dog.opaque);
        }
    }
    return NULL;
}

void fh_watchdog_start(void (*fire)(void *opaque), void *opaque) {
    dog.fire = fire;
    dog.opaque = opaque;
    if (pthread_create(&dog.thread, NULL, watchdog, NULL))
        abort();
}

static void arm(bool on, unsigned int ms) {
    pthread_mutex_lock(&dog.lock);
    dog.armed = on;
    if (on) {
        clock_gettime(CLOCK_REALTIME, &dog.deadline);
        dog.deadline.tv_nsec += (long)ms * 1000000L;
        dog.deadline.tv_sec += dog.deadline.tv_nsec / 1000000000L;
        dog.deadline.tv_nsec %= 1000000000L;
    }
    pthread_cond_signal(&dog.cond);
    pthread_mutex_unlock(&dog.lock);
}

void fh_watchdog_arm(unsigned int ms) {
    arm(true, ms);
}

void fh_watchdog_disarm(void) {
    arm(false, 0);
}
