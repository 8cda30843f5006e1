// SPDX-License-Identifier: GPL-2.0-or-later
#include "progbuild.h"

#include <stdlib.h>
#include <string.h>

/* The tests run on little-endian hosts: fields are stored directly. */

void pb_init(pb_prog *p) {
    memset(p, 0, sizeof(*p));
}

void pb_free(pb_prog *p) {
    for (int e = 0; e < NEURON_NUM_ENGINES; e++)
        free(p->insn[e]);
    memset(p, 0, sizeof(*p));
}

struct neuron_insn *pb_emit(pb_prog *p, int engine, uint8_t opcode) {
    int e = NEURON_ENGINE_INDEX(engine);
    if (p->n[e] == p->cap[e]) {
        p->cap[e] = p->cap[e] ? 2 * p->cap[e] : 16;
        p->insn[e] = realloc(p->insn[e], p->cap[e] * sizeof(struct neuron_insn));
        if (!p->insn[e])
            abort();
    }
    struct neuron_insn *in = &p->insn[e][p->n[e]++];
    memset(in, 0, sizeof(*in));
    in->opcode = opcode;
    return in;
}

uint32_t pb_here(const pb_prog *p, int engine) {
    return p->n[NEURON_ENGINE_INDEX(engine)];
}

uint8_t *pb_image(const pb_prog *p, size_t *size) {
    size_t total = sizeof(struct neuron_prog_header);
    for (int e = 0; e < NEURON_NUM_ENGINES; e++)
        total += p->n[e] * sizeof(struct neuron_insn);
    uint8_t *img = calloc(1, total);
    if (!img)
        abort();
    struct neuron_prog_header *h = (struct neuron_prog_header *)img;
    h->magic = NEURON_PROG_MAGIC;
    h->version_major = NEURON_ISA_VERSION_MAJOR;
    h->version_minor = NEURON_ISA_VERSION_MINOR;
    h->header_size = sizeof(*h);
    h->image_size = (uint32_t)total;
    h->insn_limit = p->insn_limit;
    size_t off = sizeof(*h);
    for (int e = 0; e < NEURON_NUM_ENGINES; e++) {
        if (!p->n[e])
            continue;
        h->stream[e].offset = (uint32_t)off;
        h->stream[e].count = p->n[e];
        memcpy(img + off, p->insn[e], p->n[e] * sizeof(struct neuron_insn));
        off += p->n[e] * sizeof(struct neuron_insn);
    }
    *size = total;
    return img;
}

struct neuron_tap pb_tap2(uint8_t space, uint8_t dtype, uint32_t pstart, uint32_t pcount,
                          uint32_t offset, uint32_t count0, uint32_t stride0, uint32_t count1,
                          uint32_t stride1) {
    struct neuron_tap t;
    memset(&t, 0, sizeof(t));
    t.space = space;
    t.dtype = dtype;
    t.part_start = (uint8_t)pstart;
    t.part_count = (uint8_t)pcount;
    t.offset = offset;
    t.count[0] = (uint16_t)count0;
    t.count[1] = (uint16_t)count1;
    t.stride[0] = (uint16_t)stride0;
    t.stride[1] = (uint16_t)stride1;
    return t;
}

struct neuron_tap pb_tap(uint8_t space, uint8_t dtype, uint32_t pstart, uint32_t pcount,
                         uint32_t offset, uint32_t count0) {
    return pb_tap2(space, dtype, pstart, pcount, offset, count0, 1, 1, 0);
}

uint32_t pb_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

struct neuron_insn *pb_dma(pb_prog *p, bool load, struct neuron_tap sbuf, uint32_t slot,
                           uint64_t off, uint32_t pstride, uint32_t s0, uint32_t s1) {
    struct neuron_insn *in =
        pb_emit(p, NEURON_ENGINE_SYNC, load ? NEURON_OP_DMA_LOAD : NEURON_OP_DMA_STORE);
    in->dma.sbuf = sbuf;
    in->dma.dram.slot = (uint8_t)slot;
    in->dma.dram.offset = off;
    in->dma.dram.part_stride = pstride;
    in->dma.dram.stride[0] = s0;
    in->dma.dram.stride[1] = s1;
    return in;
}

struct neuron_insn *pb_matmul(pb_prog *p, struct neuron_tap dst, struct neuron_tap stat,
                              struct neuron_tap mov, bool acc) {
    struct neuron_insn *in = pb_emit(p, NEURON_ENGINE_TENSOR, NEURON_OP_MATMUL);
    in->flags = acc ? NEURON_MM_F_ACCUMULATE : 0;
    in->op[0] = dst;
    in->op[1] = stat;
    in->op[2] = mov;
    return in;
}

struct neuron_insn *pb_transpose(pb_prog *p, struct neuron_tap dst, struct neuron_tap src) {
    struct neuron_insn *in = pb_emit(p, NEURON_ENGINE_TENSOR, NEURON_OP_TRANSPOSE);
    in->op[0] = dst;
    in->op[1] = src;
    return in;
}

struct neuron_insn *pb_activate(pb_prog *p, uint8_t func, struct neuron_tap dst,
                                struct neuron_tap src, struct neuron_tap bias, float scale,
                                float bimm) {
    struct neuron_insn *in = pb_emit(p, NEURON_ENGINE_SCALAR, NEURON_OP_ACTIVATE);
    in->func = func;
    in->op[0] = dst;
    in->op[1] = src;
    in->op[2] = bias;
    in->imm[0] = pb_f32(scale);
    in->imm[1] = pb_f32(bimm);
    return in;
}

struct neuron_insn *pb_tt(pb_prog *p, uint8_t op, struct neuron_tap dst, struct neuron_tap a,
                          struct neuron_tap b) {
    struct neuron_insn *in = pb_emit(p, NEURON_ENGINE_VECTOR, NEURON_OP_TENSOR_TENSOR);
    in->func = op;
    in->op[0] = dst;
    in->op[1] = a;
    in->op[2] = b;
    return in;
}

struct neuron_insn *pb_ts(pb_prog *p, int engine, uint8_t op0, uint8_t op1, uint8_t flags,
                          struct neuron_tap dst, struct neuron_tap src, struct neuron_tap scal,
                          float s1, float s2) {
    struct neuron_insn *in = pb_emit(p, engine, NEURON_OP_TENSOR_SCALAR);
    in->func = op0;
    in->func2 = op1;
    in->flags = flags;
    in->op[0] = dst;
    in->op[1] = src;
    in->op[2] = scal;
    in->imm[0] = scal.space ? 0 : pb_f32(s1);
    in->imm[1] = op1 ? pb_f32(s2) : 0;
    return in;
}

struct neuron_insn *pb_reduce(pb_prog *p, uint8_t func, struct neuron_tap dst,
                              struct neuron_tap src) {
    struct neuron_insn *in = pb_emit(p, NEURON_ENGINE_VECTOR, NEURON_OP_REDUCE);
    in->func = func;
    in->op[0] = dst;
    in->op[1] = src;
    return in;
}

struct neuron_insn *pb_copy(pb_prog *p, int engine, struct neuron_tap dst, struct neuron_tap src) {
    struct neuron_insn *in = pb_emit(p, engine, NEURON_OP_COPY);
    in->op[0] = dst;
    in->op[1] = src;
    return in;
}

struct neuron_insn *pb_memset(pb_prog *p, int engine, struct neuron_tap dst, uint32_t bits) {
    struct neuron_insn *in = pb_emit(p, engine, NEURON_OP_MEMSET);
    in->op[0] = dst;
    in->imm[0] = bits;
    return in;
}

struct neuron_insn *pb_iota(pb_prog *p, struct neuron_tap dst, int32_t base, int32_t pstep,
                            int32_t fstep) {
    struct neuron_insn *in = pb_emit(p, NEURON_ENGINE_VECTOR, NEURON_OP_IOTA);
    in->op[0] = dst;
    in->arg = (uint32_t)base;
    in->imm[0] = (uint32_t)pstep;
    in->imm[1] = (uint32_t)fstep;
    return in;
}

struct neuron_insn *pb_signal(pb_prog *p, int engine, uint8_t sem, uint32_t val) {
    struct neuron_insn *in = pb_emit(p, engine, NEURON_OP_SEM_SIGNAL);
    in->func = sem;
    in->arg = val;
    return in;
}

struct neuron_insn *pb_wait(pb_prog *p, int engine, uint8_t sem, uint32_t val, bool dec) {
    struct neuron_insn *in = pb_emit(p, engine, NEURON_OP_SEM_WAIT);
    in->func = sem;
    in->arg = val;
    in->flags = dec ? NEURON_SEM_F_DECREMENT : 0;
    return in;
}

struct neuron_insn *pb_notify(pb_prog *p, int engine, uint32_t val) {
    struct neuron_insn *in = pb_emit(p, engine, NEURON_OP_NOTIFY);
    in->arg = val;
    return in;
}

struct neuron_insn *pb_loop(pb_prog *p, int engine, uint8_t ctr, uint32_t target, uint32_t n) {
    struct neuron_insn *in = pb_emit(p, engine, NEURON_OP_LOOP);
    in->func = ctr;
    in->arg = target;
    in->imm[0] = n;
    return in;
}

struct neuron_insn *pb_end(pb_prog *p, int engine) {
    return pb_emit(p, engine, NEURON_OP_END);
}

void pb_end_all(pb_prog *p) {
    for (int e = 1; e <= NEURON_NUM_ENGINES; e++)
        pb_end(p, e);
}

void pb_nested_loops(pb_prog *p, int engine) {
    uint32_t outer = pb_here(p, engine);
    pb_notify(p, engine, 1);
    uint32_t inner = pb_here(p, engine);
    pb_notify(p, engine, 2);
    pb_loop(p, engine, 1, inner, 2);
    pb_loop(p, engine, 0, outer, 3);
}

/* ---- harness ---- */

#define TE_TABLE_BUS TE_HOST_BASE /* first 4 KiB of host memory */
#define TE_PROG_DEV (TE_DEVMEM_SIZE - (8u << 20))

static int host_rw(tenv *t, uint64_t addr, void *rbuf, const void *wbuf, size_t len) {
    if (!rbuf && !wbuf)
        return -1;
    if (addr < TE_HOST_BASE || len > TE_HOST_SIZE || addr - TE_HOST_BASE > TE_HOST_SIZE - len)
        return -1;
    if (addr < t->fail_hi && addr + len > t->fail_lo)
        return -1;
    if (rbuf)
        memcpy(rbuf, t->host + (addr - TE_HOST_BASE), len);
    else if (wbuf)
        memcpy(t->host + (addr - TE_HOST_BASE), wbuf, len);
    return 0;
}

static int te_host_read(void *opaque, uint64_t addr, void *buf, size_t len) {
    return host_rw(opaque, addr, buf, NULL, len);
}

static int te_host_write(void *opaque, uint64_t addr, const void *buf, size_t len) {
    return host_rw(opaque, addr, NULL, buf, len);
}

static void te_notify(void *opaque, uint64_t job_id, uint32_t value) {
    tenv *t = opaque;
    (void)job_id;
    if (t->nnotify < TE_MAX_NOTIFY)
        t->notify[t->nnotify++] = value;
}

tenv *te_new(void) {
    tenv *t = calloc(1, sizeof(*t));
    if (!t)
        abort();
    t->devmem = calloc(1, TE_DEVMEM_SIZE);
    t->host = calloc(1, TE_HOST_SIZE);
    t->core = nm_core_new(NEURON_SBUF_DEFAULT_SIZE, NEURON_PSUM_SIZE);
    if (!t->devmem || !t->host || !t->core)
        abort();
    t->mem.host_read = te_host_read;
    t->mem.host_write = te_host_write;
    t->mem.opaque = t;
    t->mem.devmem = t->devmem;
    t->mem.devmem_size = TE_DEVMEM_SIZE;
    t->host_next = TE_HOST_BASE + 4096;
    t->dev_next = 0;
    atomic_init(&t->abort, false);
    return t;
}

void te_free(tenv *t) {
    nm_core_free(t->core);
    free(t->devmem);
    free(t->host);
    free(t);
}

uint64_t te_dev_alloc(tenv *t, uint64_t size) {
    uint64_t a = t->dev_next;
    t->dev_next = (a + size + 63) & ~63ull;
    if (t->dev_next > TE_PROG_DEV)
        abort();
    return a;
}

uint64_t te_host_alloc(tenv *t, uint64_t size) {
    uint64_t a = t->host_next;
    t->host_next = (a + size + 63) & ~63ull;
    if (t->host_next > TE_HOST_BASE + TE_HOST_SIZE)
        abort();
    return a;
}

void *te_host_ptr(tenv *t, uint64_t bus) {
    return t->host + (bus - TE_HOST_BASE);
}

uint32_t te_bind(tenv *t, uint64_t addr, uint64_t size, uint32_t flags, uint32_t sg_count) {
    struct neuron_binding *b = &t->table[t->nbind];
    memset(b, 0, sizeof(*b));
    b->addr = addr;
    b->size = size;
    b->flags = flags;
    b->sg_count = sg_count;
    return t->nbind++;
}

uint32_t te_buffer(tenv *t, uint64_t size, uint32_t flags, uint8_t **ptr) {
    uint64_t a = te_dev_alloc(t, size);
    if (ptr)
        *ptr = t->devmem + a;
    return te_bind(t, a, size, flags, 0);
}

uint32_t te_sg_buffer(tenv *t, uint64_t size, uint32_t piece, uint32_t flags) {
    uint32_t n = (uint32_t)((size + piece - 1) / piece);
    uint64_t list = te_host_alloc(t, n * sizeof(struct neuron_sg_entry));
    struct neuron_sg_entry *e = te_host_ptr(t, list);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t len = i + 1 < n ? piece : size - (uint64_t)piece * i;
        /* A gap between pieces so that a contiguous access would be wrong. */
        e[i].addr = te_host_alloc(t, len + 64) + 16;
        e[i].len = len;
    }
    return te_bind(t, list, size, flags | NEURON_BIND_HOST_SG, n);
}

void te_sg_copy(tenv *t, uint32_t slot, void *buf, uint64_t len, bool to_buf) {
    struct neuron_binding *b = &t->table[slot];
    struct neuron_sg_entry *e = te_host_ptr(t, b->addr);
    uint8_t *p = buf;
    for (uint32_t i = 0; i < b->sg_count && len; i++) {
        uint64_t n = e[i].len < len ? e[i].len : len;
        if (to_buf)
            memcpy(p, te_host_ptr(t, e[i].addr), n);
        else
            memcpy(te_host_ptr(t, e[i].addr), p, n);
        p += n;
        len -= n;
    }
}

void te_unbind_all(tenv *t) {
    t->nbind = 0;
}

uint32_t te_run_image(tenv *t, const uint8_t *img, size_t size) {
    if (size > (8u << 20))
        abort();
    memcpy(t->devmem + TE_PROG_DEV, img, size);
    uint32_t slot = te_bind(t, TE_PROG_DEV, size, NEURON_BIND_READ | NEURON_BIND_EXEC, 0);
    memcpy(te_host_ptr(t, TE_TABLE_BUS), t->table, t->nbind * sizeof(t->table[0]));

    nm_job *job = &t->job;
    memset(job, 0, sizeof(*job));
    job->mem = &t->mem;
    job->job_id = 42;
    job->program_binding = slot;
    job->program_offset = 0;
    job->program_size = (uint32_t)size;
    job->abort = &t->abort;
    job->notify = te_notify;
    job->notify_opaque = t;
    job->profile = t->profile;
    job->trace_binding = t->trace_binding;
    t->nnotify = 0;
    uint32_t st = nm_bindings_load(&job->bindings, &t->mem, TE_TABLE_BUS, t->nbind);
    t->nbind--;
    if (st != NEURON_JOB_STATUS_OK) {
        job->status = st;
        return st;
    }
    nm_core_run(t->core, job);
    return job->status;
}

uint32_t te_run(tenv *t, const pb_prog *p) {
    size_t size;
    uint8_t *img = pb_image(p, &size);
    uint32_t st = te_run_image(t, img, size);
    free(img);
    return st;
}
