// SPDX-License-Identifier: MIT
#include "pinned.hpp"

#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>

#include <ATen/core/CachingHostAllocator.h>
#include <c10/util/Exception.h>

#include "allocator.hpp"

namespace neuron::torch_bridge {

namespace {

/// The live pinned allocations, by the address of their bytes, and their
/// statistics (torch.accelerator's host memory statistics).
struct Pinned {
    std::mutex mutex; ///< protects by_address and stats
    std::map<const std::byte *, Allocation> by_address;
    at::HostStats stats;
};

Pinned &pinned() {
    static Pinned p;
    return p;
}

void free_pinned(void *data) {
    Allocation freed;
    {
        Pinned &p = pinned();
        std::lock_guard lock(p.mutex);
        auto it = p.by_address.find(static_cast<const std::byte *>(data));
        TORCH_INTERNAL_ASSERT(it != p.by_address.end(), "neuron: freeing unknown pinned memory");
        freed = std::move(it->second);
        p.by_address.erase(it);
        for (c10::CachingAllocator::Stat *s : {&p.stats.active_requests, &p.stats.allocations})
            s->decrease(1);
        for (c10::CachingAllocator::Stat *s : {&p.stats.active_bytes, &p.stats.allocated_bytes})
            s->decrease(freed.size());
        p.stats.num_host_free++;
    }
    // (returned to its pool here, outside the lock)
}

/// Pinned memory is the staging pool's (allocator.cpp), which keeps the
/// chunks: an allocation freed is back in the pool at once, so every
/// block this allocator counts is in use (allocations = active requests).
class PinnedAllocator final : public at::HostAllocator {
  public:
    c10::DataPtr allocate(size_t bytes) override {
        if (bytes == 0)
            return {nullptr, nullptr, &free_nothing, c10::Device(c10::DeviceType::CPU)};
        Allocation a = staging_memory(0, bytes);
        std::byte *data = a.map().data();
        {
            Pinned &p = pinned();
            std::lock_guard lock(p.mutex);
            p.by_address.emplace(data, std::move(a));
            for (c10::CachingAllocator::Stat *s : {&p.stats.active_requests, &p.stats.allocations})
                s->increase(1);
            for (c10::CachingAllocator::Stat *s : {&p.stats.active_bytes, &p.stats.allocated_bytes})
                s->increase(bytes);
            p.stats.num_host_alloc++;
        }
        return {data, data, &free_pinned, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
    void copy_data(void *dest, const void *src, std::size_t count) const override {
        std::memcpy(dest, src, count);
    }

    /// The copies that read or write pinned memory hold its storage until
    /// their job completes (copy.cpp), so no event is needed.
    bool record_event(void *, void *, c10::Stream) override { return false; }
    /// Releases the staging pools' empty chunks.
    void empty_cache() override { empty_staging_cache(); }
    at::HostStats get_stats() override {
        Pinned &p = pinned();
        std::lock_guard lock(p.mutex);
        return p.stats;
    }
    void reset_accumulated_stats() override {
        Pinned &p = pinned();
        std::lock_guard lock(p.mutex);
        for (c10::CachingAllocator::Stat *s : {&p.stats.active_requests, &p.stats.active_bytes,
                                               &p.stats.allocations, &p.stats.allocated_bytes})
            s->reset_accumulated();
        p.stats.num_host_alloc = p.stats.num_host_free = 0;
    }
    void reset_peak_stats() override {
        Pinned &p = pinned();
        std::lock_guard lock(p.mutex);
        for (c10::CachingAllocator::Stat *s : {&p.stats.active_requests, &p.stats.active_bytes,
                                               &p.stats.allocations, &p.stats.allocated_bytes})
            s->reset_peak();
    }

  private:
    static void free_nothing(void *) {}
};

PinnedAllocator &the_pinned_allocator() {
    static PinnedAllocator a;
    return a;
}

} // namespace

c10::Allocator &pinned_allocator() {
    return the_pinned_allocator();
}

at::HostAllocator &pinned_host_allocator() {
    return the_pinned_allocator();
}

std::optional<BufferRange> pinned_range(const void *data, uint64_t size) {
    const auto *b = static_cast<const std::byte *>(data);
    Pinned &p = pinned();
    std::lock_guard lock(p.mutex);
    auto it = p.by_address.upper_bound(b);
    if (it == p.by_address.begin())
        return std::nullopt;
    it = std::prev(it);
    const uint64_t offset = static_cast<uint64_t>(b - it->first);
    if (offset > it->second.size() || size > it->second.size() - offset)
        return std::nullopt;
    BufferRange r = it->second.range();
    r.offset += offset;
    r.size = size;
    return r;
}

} // namespace neuron::torch_bridge
