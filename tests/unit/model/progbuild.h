/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test helpers for the model: a program builder (instruction encoders and
 * image layout, written from hw/isa.md) and a harness that gives a core
 * device memory, fake host memory, a binding table and a run entry point.
 */
#ifndef NEURON_TEST_PROGBUILD_H
#define NEURON_TEST_PROGBUILD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "neuron_isa.h"

/* ---- program builder ---- */

typedef struct pb_prog {
    struct neuron_insn *insn[NEURON_NUM_ENGINES];
    uint32_t n[NEURON_NUM_ENGINES];
    uint32_t cap[NEURON_NUM_ENGINES];
    uint64_t insn_limit;
} pb_prog;

void pb_init(pb_prog *p);
void pb_free(pb_prog *p);
/* Append a zeroed instruction to @engine's stream (NEURON_ENGINE_*). */
struct neuron_insn *pb_emit(pb_prog *p, int engine, uint8_t opcode);
/* Index the next instruction of @engine will have. */
uint32_t pb_here(const pb_prog *p, int engine);
/* The image (malloc'd); *size its bytes. */
uint8_t *pb_image(const pb_prog *p, size_t *size);

struct neuron_tap pb_tap(uint8_t space, uint8_t dtype, uint32_t pstart, uint32_t pcount,
                         uint32_t offset, uint32_t count0);
struct neuron_tap pb_tap2(uint8_t space, uint8_t dtype, uint32_t pstart, uint32_t pcount,
                          uint32_t offset, uint32_t count0, uint32_t stride0, uint32_t count1,
                          uint32_t stride1);
#define pb_sbuf(dt, ps, pc, off, n) pb_tap(NEURON_SPACE_SBUF, dt, ps, pc, off, n)
#define pb_psum(dt, ps, pc, off, n) pb_tap(NEURON_SPACE_PSUM, dt, ps, pc, off, n)

uint32_t pb_f32(float f);

/* DRAM side: element (p, j1, j0) at off + p*pstride + j1*s1 + j0*s0. */
struct neuron_insn *pb_dma(pb_prog *p, bool load, struct neuron_tap sbuf, uint32_t slot,
                           uint64_t off, uint32_t pstride, uint32_t s0, uint32_t s1);
struct neuron_insn *pb_matmul(pb_prog *p, struct neuron_tap dst, struct neuron_tap stat,
                              struct neuron_tap mov, bool acc);
struct neuron_insn *pb_transpose(pb_prog *p, struct neuron_tap dst, struct neuron_tap src);
struct neuron_insn *pb_activate(pb_prog *p, uint8_t func, struct neuron_tap dst,
                                struct neuron_tap src, struct neuron_tap bias, float scale,
                                float bimm);
struct neuron_insn *pb_tt(pb_prog *p, uint8_t op, struct neuron_tap dst, struct neuron_tap a,
                          struct neuron_tap b);
struct neuron_insn *pb_ts(pb_prog *p, int engine, uint8_t op0, uint8_t op1, uint8_t flags,
                          struct neuron_tap dst, struct neuron_tap src, struct neuron_tap scal,
                          float s1, float s2);
struct neuron_insn *pb_reduce(pb_prog *p, uint8_t func, struct neuron_tap dst,
                              struct neuron_tap src);
struct neuron_insn *pb_copy(pb_prog *p, int engine, struct neuron_tap dst, struct neuron_tap src);
struct neuron_insn *pb_memset(pb_prog *p, int engine, struct neuron_tap dst, uint32_t bits);
struct neuron_insn *pb_iota(pb_prog *p, struct neuron_tap dst, int32_t base, int32_t pstep,
                            int32_t fstep);
struct neuron_insn *pb_signal(pb_prog *p, int engine, uint8_t sem, uint32_t val);
struct neuron_insn *pb_wait(pb_prog *p, int engine, uint8_t sem, uint32_t val, bool dec);
struct neuron_insn *pb_notify(pb_prog *p, int engine, uint32_t val);
struct neuron_insn *pb_loop(pb_prog *p, int engine, uint8_t ctr, uint32_t target, uint32_t n);
struct neuron_insn *pb_end(pb_prog *p, int engine);
/* END on every engine. */
void pb_end_all(pb_prog *p);
/*
 * outer x3 { notify 1; inner x2 { notify 2 } } on @engine (loop counters 0
 * and 1): notifies 1 2 2 1 2 2 1 2 2 in 18 instructions.
 */
void pb_nested_loops(pb_prog *p, int engine);

/* ---- harness ---- */

#define TE_DEVMEM_SIZE (64u << 20)
#define TE_HOST_BASE 0x100000000ull
#define TE_HOST_SIZE (16u << 20)
#define TE_MAX_NOTIFY 64

typedef struct tenv {
    nm_mem_ops mem;
    uint8_t *devmem;
    uint8_t *host; /* bus addresses TE_HOST_BASE .. + TE_HOST_SIZE */
    uint64_t host_next;
    uint64_t dev_next;
    /* host_read/write of [fail_lo, fail_hi) fail. */
    uint64_t fail_lo, fail_hi;
    struct neuron_binding table[NEURON_MAX_BINDINGS];
    uint32_t nbind;
    nm_core *core;
    atomic_bool abort;
    nm_job job;
    /* te_run*: profile the job into slot trace_binding. */
    bool profile;
    uint32_t trace_binding;
    uint32_t notify[TE_MAX_NOTIFY];
    uint32_t nnotify;
} tenv;

tenv *te_new(void);
void te_free(tenv *t);
/* Bump allocators (64-byte aligned). */
uint64_t te_dev_alloc(tenv *t, uint64_t size);
uint64_t te_host_alloc(tenv *t, uint64_t size);
void *te_host_ptr(tenv *t, uint64_t bus);
/* Append a binding slot; returns its index. */
uint32_t te_bind(tenv *t, uint64_t addr, uint64_t size, uint32_t flags, uint32_t sg_count);
/* A device-memory buffer of @size bytes bound with @flags; *ptr its bytes. */
uint32_t te_buffer(tenv *t, uint64_t size, uint32_t flags, uint8_t **ptr);
/*
 * A host buffer of @size bytes split into SG pieces of the given lengths
 * (repeated), scattered in host memory; *ptrs/lens receive the pieces.
 */
uint32_t te_sg_buffer(tenv *t, uint64_t size, uint32_t piece, uint32_t flags);
/* Copy between an SG buffer's logical bytes and @buf. */
void te_sg_copy(tenv *t, uint32_t slot, void *buf, uint64_t len, bool to_buf);
/*
 * Place @img in device memory, bind it (READ|EXEC) as the next slot, load
 * the table through host memory and run. Returns the job status.
 */
uint32_t te_run_image(tenv *t, const uint8_t *img, size_t size);
uint32_t te_run(tenv *t, const pb_prog *p);
/* Forget all bindings (memory allocations are kept). */
void te_unbind_all(tenv *t);

#endif /* NEURON_TEST_PROGBUILD_H */
