/* SPDX-License-Identifier: MIT */
/*
 * Runs a program image through the device model's NeuronCore interpreter
 * (emu/model, nm_core_run) with plain host buffers as device memory: what
 * the device does with a job, without a device, a driver or a VM.
 */
#ifndef NEURON_EXAMPLES_MODEL_RUN_H
#define NEURON_EXAMPLES_MODEL_RUN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One binding slot: @size bytes at @data, read and/or written by the job. */
struct exm_slot {
    void *data;
    uint64_t size;
    int read;
    int write;
};

/* NEURON_JOB_STATUS_OK, without pulling hw/neuron_regs.h into C++ users. */
#define EXM_STATUS_OK 0u

struct exm_result {
    uint32_t status; /* NEURON_JOB_STATUS_* */
    uint32_t info;
    uint32_t fault_engine;
    uint64_t cycles;
    uint64_t instructions;
    uint64_t flops;
    uint64_t dma_bytes;
};

/*
 * Place every slot and the image in a fresh device memory, bind the slots
 * in order and the image after them (READ|EXEC, as the driver does), run
 * the job to completion and copy the written slots back. Returns 0 when
 * the job ran (its status is in @r), -1 if the environment could not be
 * set up (out of memory, too many slots).
 */
int exm_run(const void *image, size_t image_size, struct exm_slot *slots, uint32_t nslots,
            struct exm_result *r);

#ifdef __cplusplus
}
#endif

#endif /* NEURON_EXAMPLES_MODEL_RUN_H */
