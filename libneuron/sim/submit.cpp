// SPDX-License-Identifier: MIT
// The simulated driver's COPY and SUBMIT: neuron.ko's argument checks
// (uapi/neuron_accel_check.h, the one definition both use) and its lookups,
// in its order, then the work goes to a DMA engine's or a core's queue.
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "neuron_accel_check.h"
#include "sim.hpp"

namespace neuron::sim {

namespace {

std::shared_ptr<Bo> find_bo(File &f, uint32_t handle) {
    std::lock_guard<std::mutex> g(f.lock);
    auto it = f.bos.find(handle);
    return it == f.bos.end() ? nullptr : it->second;
}

} // namespace

neuron_check_limits Device::check_limits() const {
    neuron_check_limits l{};
    l.num_cores = opts_.cores;
    l.num_dma = opts_.dma;
    l.max_bindings = NEURON_MAX_BINDINGS - 1; // the last slot holds the program
    l.trace_size = sizeof(neuron_trace_header);
    l.caps = caps();
    return l;
}

// A buffer of a job, as neuron_job_add_bo() looks it up: ENOENT, EINVAL.
int Device::job_bo(File &f, uint32_t handle, uint64_t offset, uint64_t size,
                   std::shared_ptr<Bo> &bo) {
    bo = find_bo(f, handle);
    if (!bo)
        return ENOENT;
    return -neuron_check_range(offset, size, bo->size);
}

int Device::copy(File &f, drm_neuron_copy &c) {
    const neuron_check_limits limits = check_limits();
    if (int e = neuron_check_copy(&c, &limits))
        return -e;
    std::shared_ptr<Bo> src, dst;
    if (int e = job_bo(f, c.src_handle, c.src_offset, c.size, src))
        return e;
    if (int e = job_bo(f, c.dst_handle, c.dst_offset, c.size, dst))
        return e;
    if (src == dst)
        if (int e = neuron_check_copy_overlap(&c))
            return -e;
    Work w;
    if (int e = in_syncs(f, c.in_syncs, c.num_in_syncs, w))
        return e;
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
int Device::submit_slot(File &f, const neuron_check_limits &limits, Work &w, uint32_t handle,
                        uint64_t offset, uint64_t size, uint32_t flags) {
    std::shared_ptr<Bo> bo;
    if (int e = job_bo(f, handle, offset, size, bo))
        return e;
    neuron_binding b{};
    b.size = size;
    b.flags = flags;
    if (bo->region == DRM_NEURON_BO_DEVICE && bo->memory != memory_)
        return EXDEV; // another device's memory (imported): copies only
    if (int e = neuron_check_host_binding(bo->region, &limits))
        return -e;
    if (bo->region == DRM_NEURON_BO_HOST) {
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
    const neuron_check_limits limits = check_limits();
    const uint32_t n = s.num_bindings;
    if (int e = neuron_check_submit(&s, &limits))
        return -e;
    w.stats = f.stats;
    const drm_neuron_binding *bind;
    if (int e = user_array(s.bindings, n, bind))
        return e;
    if (int e = neuron_check_bindings(&s, bind, &limits))
        return -e;
    const bool profile = s.flags & DRM_NEURON_SUBMIT_F_PROFILE;
    w.profile = profile;
    w.trace_binding = profile ? n - 1 : 0;
    for (uint32_t i = 0; i < n; i++)
        if (int e = submit_slot(f, limits, w, bind[i].handle, bind[i].offset, bind[i].size,
                                bind[i].flags))
            return e;
    // The program image: one more slot, execute rights only.
    if (int e = submit_slot(f, limits, w, s.program_handle, s.program_offset, s.program_size,
                            NEURON_BIND_EXEC))
        return e;
    for (auto &b : w.table)
        if (b.flags & NEURON_BIND_HOST_SG)
            b.addr = reinterpret_cast<uintptr_t>(&w.sg[b.addr]);
    w.program_size = static_cast<uint32_t>(s.program_size);
    if (int e = in_syncs(f, s.in_syncs, s.num_in_syncs, w))
        return e;
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
    if (int e = neuron_check_submit_batch(&b))
        return -e;
    const drm_neuron_submit *checked;
    if (int e = user_array(b.submits, b.count, checked))
        return e;
    auto *entries = const_cast<drm_neuron_submit *>(checked);
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

namespace {

// The entry points' failure: @p message into the caller's @p err.
void report(char *err, size_t errlen, const std::string &message) {
    if (err && errlen)
        std::snprintf(err, errlen, "%s", message.c_str());
}

// What is wrong with the caller's interface version, if anything.
std::string abi_mismatch(uint32_t abi_version) {
    if (abi_version == neuron::detail::sim_abi_version)
        return {};
    return fmt::format(
        "libneuron-sim speaks interface {}, libneuron {}: install both from one build",
        neuron::detail::sim_abi_version, abi_version);
}

} // namespace

extern "C" __attribute__((visibility("default"))) neuron::detail::Os *
neuron_sim_create_os(uint32_t abi_version, const char *options, char *err, size_t errlen) {
    if (auto m = abi_mismatch(abi_version); !m.empty()) {
        report(err, errlen, m);
        return nullptr;
    }
    try {
        return new neuron::sim::Device(neuron::sim::parse_options(options ? options : ""));
    } catch (const std::exception &e) {
        report(err, errlen, e.what());
        return nullptr;
    }
}

extern "C" __attribute__((visibility("default"))) int
neuron_sim_check_options(uint32_t abi_version, const char *options, char *err, size_t errlen) {
    if (auto m = abi_mismatch(abi_version); !m.empty()) {
        report(err, errlen, m);
        return -1;
    }
    try {
        (void)neuron::sim::parse_options(options ? options : "");
        return 0;
    } catch (const std::exception &e) {
        report(err, errlen, e.what());
        return -1;
    }
}
