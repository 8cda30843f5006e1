/* SPDX-License-Identifier: MIT */
/*
 * What the device model's fuzzers share: the memories the model is given
 * (device memory at its exact size, so an access past its end is an ASan
 * report; host memory at bus address FH_HOST_BASE) and a watchdog that
 * plays the driver's job timeout.
 */
#ifndef NEURON_FUZZ_HARNESS_H
#define NEURON_FUZZ_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"

#define FH_DEVMEM_SIZE (256u << 10)
#define FH_HOST_BASE 0x200000000ull
#define FH_HOST_SIZE (256u << 10)
/* Memory starts as this, not zeros: a store of zeros over zeros would go unseen. */
#define FH_FILL_BYTE 0xa5

struct fh_memory {
    uint8_t *devmem; /* FH_DEVMEM_SIZE bytes */
    uint8_t *host;   /* bus addresses FH_HOST_BASE .. + FH_HOST_SIZE */
    nm_mem_ops ops;  /* reads host memory; writes with @host_write */
};

/* Allocate both memories (once); host writes go through @host_write. */
void fh_memory_init(struct fh_memory *m,
                    int (*host_write)(void *opaque, uint64_t addr, const void *buf, size_t len));
/* Fill both memories with FH_FILL_BYTE. */
void fh_memory_fill(struct fh_memory *m);
/* The little-endian number in @bytes (at most 8) bytes at @p. */
static inline uint64_t fh_le(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Whether [addr, addr + len) is host memory; *off its offset there. */
bool fh_host_span(uint64_t addr, size_t len, uint64_t *off);
/* Plain host write, for harnesses that check nothing on writes. */
int fh_host_write(void *opaque, uint64_t addr, const void *buf, size_t len);

/*
 * Start the watchdog thread (once): @fire(@opaque) runs on it when a run
 * stays armed for longer than the armed time.
 */
void fh_watchdog_start(void (*fire)(void *opaque), void *opaque);
void fh_watchdog_arm(unsigned int ms);
void fh_watchdog_disarm(void);

#endif /* NEURON_FUZZ_HARNESS_H */
