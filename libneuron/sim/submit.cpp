// SPDX-License-Identifier: MIT
// The simulated driver's COPY and SUBMIT: neuron.ko's argument checks, in
// its order, then the work goes to a DMA engine's or a core's queue.
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "sim.hpp"

namespace neuron::sim {

namespace {

bool range_ok(uint64_t offset, uint64_t size, uint64_t limit) {
    return offset <= limit && size <= limit - offset;
}

std::shared_ptr<Bo> find_bo(File &f, uint32_t handle) {
    std::lock_guard<std::mutex> g(f.lock);
    auto it = f.bos.find(handle);
    return it == f.bos.end() ? nullptr : it->second;
}

} // namespace

int Device::copy(File &f, drm_neuron_copy &c) {
    if (c.flags & ~DRM_NEURON_COPY_FLAGS_ALL || c.pad || c.reserved || c.out_sync.pad ||
        !c.out_sync.handle)
        return EINVAL;
    if (!c.size)
        return EINVAL;
    if (c.engine != DRM_NEURON_ENGINE_ANY && c.engine >= opts_.dma)
        return EINVAL;
    Work w;
    if (int e = in_syncs(f, c.in_syncs, c.num_in_syncs, w))
        return e;
    auto src = find_bo(f, c.src_handle), dst = find_bo(f, c.dst_handle);
    if (!src || !dst)
        return ENOENT;
    if (!range_ok(c.src_offset, c.size, src->size) || !range_ok(c.dst_offset, c.size, dst->size))
        return EINVAL;
    if (src == dst && c.src_offset < c.dst_offset + c.size && c.dst_offset < c.src_offset + c.size)
        return EINVAL;
    w.src = src->ptr + c.src_offset;
    w.dst = dst->ptr + c.dst_offset;
    w.size = c.size;
    w.bos = {src, dst};
    if (int e = out_sync(f, c.out_sync, w.done))
        return e;
    uint32_t engine = c.engine;
    if (engine == DRM_NEURON_ENGINE_ANY) {
        // The least busy engine, as the scheduler's load balancing picks.
        engine = next_engine_++ % opts_.dma;
        for (uint32_t i = 0; i < opts_.dma; i++)
            if (dma_[i]->depth() < dma_[engine]->depth())
                engine = i;
    }
    c.seqno = dma_[engine]->push(std::move(w));
    return 0;
}

// One slot of the job's table, as neuron_slot_prepare() builds it.
int Device::submit_slot(File &f, Work &w, uint32_t handle, uint64_t offset, uint64_t size,
                        uint32_t flags) {
    auto bo = find_bo(f, handle);
    if (!bo)
        return ENOENT;
    if (!range_ok(offset, size, bo->size))
        return EINVAL;
    neuron_binding b{};
    b.size = size;
    b.flags = flags;
    if (bo->region == DRM_NEURON_BO_DEVICE && bo->memory != memory_)
        return EXDEV; // another device's memory (imported): copies only
    if (bo->region == DRM_NEURON_BO_HOST) {
        if (!opts_.host_bindings)
            return EOPNOTSUPP;
        // A host buffer is one piece of host memory; addr is patched to
        // its SG entry once the SG array stops growing.
        b.flags |= NEURON_BIND_HOST_SG;
        b.sg_count = 1;
        b.addr = w.sg.size();
        neuron_sg_entry e{};
        e.addr = reinterpret_cast<uintptr_t>(bo->ptr + offset);
        e.len = size;
        w.sg.push_back(e);
    } else {
        b.addr = bo->dev_offset + offset;
    }
    w.table.push_back(b);
    w.bos.push_back(std::move(bo));
    return 0;
}

int Device::submit_prepare(File &f, const drm_neuron_submit &s, Work &w) {
    const uint32_t n = s.num_bindings;
    if (s.flags & ~DRM_NEURON_SUBMIT_FLAGS_ALL || s.pad || s.reserved || s.out_sync.pad ||
        !s.out_sync.handle)
        return EINVAL;
    if (s.core >= opts_.cores)
        return EINVAL;
    w.stats = f.stats;
    if (!s.program_size || s.program_size > UINT32_MAX)
        return EINVAL;
    if (!n || n > NEURON_MAX_BINDINGS - 1)
        return EINVAL;
    if (s.num_in_syncs > DRM_NEURON_MAX_IN_SYNCS)
        return EINVAL;
    const drm_neuron_binding *bind =
        reinterpret_cast<const drm_neuron_binding *>(static_cast<uintptr_t>(s.bindings));
    if (!bind)
        return EFAULT;
    for (uint32_t i = 0; i < n; i++)
        if (bind[i].reserved || !bind[i].size || !bind[i].flags ||
            bind[i].flags & ~DRM_NEURON_BIND_ALL)
            return EINVAL;
    const bool profile = s.flags & DRM_NEURON_SUBMIT_F_PROFILE;
    if (profile && (!(bind[n - 1].flags & DRM_NEURON_BIND_WRITE) ||
                    bind[n - 1].size < sizeof(neuron_trace_header)))
        return EINVAL;
    w.profile = profile;
    w.trace_binding = profile ? n - 1 : 0;
    if (int e = in_syncs(f, s.in_syncs, s.num_in_syncs, w))
        return e;
    for (uint32_t i = 0; i < n; i++)
        if (int e = submit_slot(f, w, bind[i].handle, bind[i].offset, bind[i].size, bind[i].flags))
            return e;
    // The program image: one more slot, execute rights only.
    if (int e =
            submit_slot(f, w, s.program_handle, s.program_offset, s.program_size, NEURON_BIND_EXEC))
        return e;
    for (auto &b : w.table)
        if (b.flags & NEURON_BIND_HOST_SG)
            b.addr = reinterpret_cast<uintptr_t>(&w.sg[b.addr]);
    w.program_size = static_cast<uint32_t>(s.program_size);
    return 0;
}

int Device::submit(File &f, drm_neuron_submit &s) {
    Work w;
    if (int e = submit_prepare(f, s, w))
        return e;
    if (int e = out_sync(f, s.out_sync, w.done))
        return e;
    s.seqno = cores_[s.core]->push(std::move(w));
    return 0;
}

// All or nothing, as neuron.ko: every entry is checked before any is queued.
int Device::submit_batch(File &f, drm_neuron_submit_batch &b) {
    if (!b.count || b.count > DRM_NEURON_MAX_BATCH ||
        b.flags & ~DRM_NEURON_SUBMIT_BATCH_FLAGS_ALL || b.reserved)
        return EINVAL;
    auto *entries = reinterpret_cast<drm_neuron_submit *>(static_cast<uintptr_t>(b.submits));
    if (!entries)
        return EFAULT;
    std::vector<Work> works(b.count);
    for (uint32_t i = 0; i < b.count; i++) {
        if (int e = submit_prepare(f, entries[i], works[i]))
            return e;
        if (!has_syncobj(f, entries[i].out_sync.handle))
            return ENOENT;
    }
    for (uint32_t i = 0; i < b.count; i++) {
        if (int e = out_sync(f, entries[i].out_sync, works[i].done))
            return e; // the syncobj was destroyed meanwhile by another thread
        entries[i].seqno = cores_[entries[i].core]->push(std::move(works[i]));
    }
    return 0;
}

} // namespace neuron::sim

extern "C" __attribute__((visibility("default"))) neuron::detail::Os *
neuron_sim_create_os(uint32_t abi_version, const char *options, char *err, size_t errlen) {
    auto fail = [&](const std::string &m) -> neuron::detail::Os * {
        if (err && errlen)
            std::snprintf(err, errlen, "%s", m.c_str());
        return nullptr;
    };
    if (abi_version != neuron::detail::sim_abi_version)
        return fail(fmt::format("libneuron-sim speaks interface {}, libneuron {}: install both "
                                "from one build",
                                neuron::detail::sim_abi_version, abi_version));
    try {
        return new neuron::sim::Device(neuron::sim::parse_options(options ? options : ""));
    } catch (const std::exception &e) {
        return fail(e.what());
    }
}
