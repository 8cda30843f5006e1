// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Binding tables: loading and validating a job's table, and the checked
 * accesses every program memory access goes through. Device-memory slots
 * are a window of the device-memory buffer; host slots are the
 * concatenation of an SG list that lives in host memory and is walked on
 * each access (the device keeps no copy of it beyond the table itself).
 */
#include "model_internal.h"

#define NM_ADDR_LIMIT (1ull << NEURON_ADDR_BITS)
/* SG entries read from host memory per host_read while walking a list. */
#define NM_SG_CHUNK 32
/*
 * The longest SG list the device walks. The driver builds lists from
 * pinned pages, so this is 4 GiB of 4 KiB pages; a longer list is a bad
 * binding rather than an unbounded walk.
 */
#define NM_SG_MAX (1u << 20)

/* a + b <= limit, without overflow. */
static bool range_ok(uint64_t a, uint64_t b, uint64_t limit) {
    return a <= limit && b <= limit - a;
}

static uint32_t sg_validate(const nm_mem_ops *mem, const struct neuron_binding *s) {
    uint64_t list = nm_le64(s->addr);
    uint32_t n = nm_le32(s->sg_count);
    uint64_t size = nm_le64(s->size);
    uint64_t total = 0;
    struct neuron_sg_entry e[NM_SG_CHUNK];

    if (n == 0 || n > NM_SG_MAX)
        return NEURON_JOB_STATUS_BAD_BINDING;
    if (!range_ok(list, (uint64_t)n * sizeof(e[0]), NM_ADDR_LIMIT))
        return NEURON_JOB_STATUS_BAD_BINDING;
    if (!mem->host_read)
        return NEURON_JOB_STATUS_HOST_DMA;
    for (uint32_t i = 0; i < n && total < size; i += NM_SG_CHUNK) {
        uint32_t chunk = n - i < NM_SG_CHUNK ? n - i : NM_SG_CHUNK;
        if (mem->host_read(mem->opaque, list + (uint64_t)i * sizeof(e[0]), e, chunk * sizeof(e[0])))
            return NEURON_JOB_STATUS_HOST_DMA;
        for (uint32_t j = 0; j < chunk && total < size; j++) {
            uint64_t addr = nm_le64(e[j].addr), len = nm_le64(e[j].len);
            if (len == 0 || !range_ok(addr, len, NM_ADDR_LIMIT))
                return NEURON_JOB_STATUS_BAD_BINDING;
            total += len; /* both < 2^48: no overflow */
        }
    }
    return total >= size ? NEURON_JOB_STATUS_OK : NEURON_JOB_STATUS_BAD_BINDING;
}

uint32_t nm_bindings_load(nm_bindings *b, const nm_mem_ops *mem, uint64_t addr, uint32_t count) {
    memset(b, 0, sizeof(*b));
    if (count == 0 || count > NEURON_MAX_BINDINGS)
        return NEURON_JOB_STATUS_BAD_BINDING;
    if (!range_ok(addr, (uint64_t)count * sizeof(b->slot[0]), NM_ADDR_LIMIT))
        return NEURON_JOB_STATUS_BAD_BINDING;
    if (!mem->host_read || mem->host_read(mem->opaque, addr, b->slot, count * sizeof(b->slot[0])))
        return NEURON_JOB_STATUS_HOST_DMA;

    for (uint32_t i = 0; i < count; i++) {
        const struct neuron_binding *s = &b->slot[i];
        uint32_t flags = nm_le32(s->flags);
        uint64_t size = nm_le64(s->size);

        if ((flags & ~NEURON_BIND_ALL) || s->reserved)
            goto bad;
        if (flags & NEURON_BIND_HOST_SG) {
            if (size == 0 || size > NM_ADDR_LIMIT)
                goto bad;
            uint32_t st = sg_validate(mem, s);
            if (st != NEURON_JOB_STATUS_OK) {
                memset(b, 0, sizeof(*b));
                return st;
            }
        } else {
            /* An empty device slot is allowed: any access to it faults. */
            if (s->sg_count || !range_ok(nm_le64(s->addr), size, mem->devmem_size))
                goto bad;
        }
    }
    b->count = count;
    return NEURON_JOB_STATUS_OK;
bad:
    memset(b, 0, sizeof(*b));
    return NEURON_JOB_STATUS_BAD_BINDING;
}

static uint32_t check(const nm_job *job, uint32_t slot, uint64_t offset, size_t len, uint32_t need,
                      const struct neuron_binding **out) {
    if (slot >= job->bindings.count)
        return NEURON_JOB_STATUS_BINDING_INDEX;
    const struct neuron_binding *s = &job->bindings.slot[slot];
    if (!range_ok(offset, len, nm_le64(s->size)))
        return NEURON_JOB_STATUS_BINDING_RANGE;
    if ((nm_le32(s->flags) & need) != need)
        return NEURON_JOB_STATUS_BINDING_ACCESS;
    *out = s;
    return NEURON_JOB_STATUS_OK;
}

/*
 * Walk the SG list of host slot @s and call host_read/host_write for each
 * piece of [offset, offset + len). The list was validated at load time
 * but lives in host memory, so every entry read is checked again.
 */
static uint32_t sg_access(const nm_mem_ops *mem, const struct neuron_binding *s, uint64_t offset,
                          uint8_t *rbuf, const uint8_t *wbuf, size_t len) {
    uint64_t list = nm_le64(s->addr);
    uint32_t n = nm_le32(s->sg_count);
    uint64_t pos = 0; /* binding offset of the current entry */
    struct neuron_sg_entry e[NM_SG_CHUNK];

    if (rbuf ? !mem->host_read : !mem->host_write)
        return NEURON_JOB_STATUS_HOST_DMA;
    for (uint32_t i = 0; i < n && len; i += NM_SG_CHUNK) {
        uint32_t chunk = n - i < NM_SG_CHUNK ? n - i : NM_SG_CHUNK;
        if (mem->host_read(mem->opaque, list + (uint64_t)i * sizeof(e[0]), e, chunk * sizeof(e[0])))
            return NEURON_JOB_STATUS_HOST_DMA;
        for (uint32_t j = 0; j < chunk && len; j++) {
            uint64_t addr = nm_le64(e[j].addr), elen = nm_le64(e[j].len);
            if (elen == 0 || !range_ok(addr, elen, NM_ADDR_LIMIT))
                return NEURON_JOB_STATUS_HOST_DMA; /* list changed under us */
            if (offset >= pos + elen) {
                pos += elen;
                continue;
            }
            uint64_t in = offset - pos;
            size_t piece = elen - in < len ? (size_t)(elen - in) : len;
            int rc = rbuf ? mem->host_read(mem->opaque, addr + in, rbuf, piece)
                          : mem->host_write(mem->opaque, addr + in, wbuf, piece);
            if (rc)
                return NEURON_JOB_STATUS_HOST_DMA;
            if (rbuf)
                rbuf += piece;
            else
                wbuf += piece;
            len -= piece;
            offset += piece;
            pos += elen;
        }
    }
    return len ? NEURON_JOB_STATUS_HOST_DMA : NEURON_JOB_STATUS_OK;
}

uint32_t nm_binding_read(const nm_job *job, uint32_t slot, uint64_t offset, void *buf, size_t len,
                         uint32_t need) {
    const struct neuron_binding *s;
    uint32_t st = check(job, slot, offset, len, need ? need : NEURON_BIND_READ, &s);
    if (st != NEURON_JOB_STATUS_OK)
        return st;
    if (len == 0)
        return NEURON_JOB_STATUS_OK;
    if (nm_le32(s->flags) & NEURON_BIND_HOST_SG)
        return sg_access(job->mem, s, offset, buf, NULL, len);
    memcpy(buf, job->mem->devmem + nm_le64(s->addr) + offset, len);
    return NEURON_JOB_STATUS_OK;
}

uint32_t nm_binding_write(const nm_job *job, uint32_t slot, uint64_t offset, const void *buf,
                          size_t len) {
    const struct neuron_binding *s;
    uint32_t st = check(job, slot, offset, len, NEURON_BIND_WRITE, &s);
    if (st != NEURON_JOB_STATUS_OK)
        return st;
    if (len == 0)
        return NEURON_JOB_STATUS_OK;
    if (nm_le32(s->flags) & NEURON_BIND_HOST_SG)
        return sg_access(job->mem, s, offset, NULL, buf, len);
    memcpy(job->mem->devmem + nm_le64(s->addr) + offset, buf, len);
    return NEURON_JOB_STATUS_OK;
}
