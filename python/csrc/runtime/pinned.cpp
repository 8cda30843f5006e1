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
    std::mutex mutex; ///< protects by_address and the statistics
    std::map<const std::byte *, Allocation> by_address;
    c10::CachingAllocator::Stat requests, bytes; ///< live allocations and their bytes
    int64_t allocs = 0, frees = 0;

    /// An allocation of @p size bytes made (@p made) or freed. Lock held.
    void count(bool made, uint64_t size) {
        if (made) {
            requests.increase(1);
            bytes.increase(size);
            allocs++;
        } else {
            requests.decrease(1);
            bytes.decrease(size);
            frees++;
        }
    }
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
        p.count(false, freed.size());
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
            p.count(true, bytes);
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
        at::HostStats stats;
        stats.active_requests = stats.allocations = p.requests;
        stats.active_bytes = stats.allocated_bytes = p.bytes;
        stats.num_host_alloc = p.allocs;
        stats.num_host_free = p.frees;
        return stats;
    }
    void reset_accumulated_stats() override {
        Pinned &p = pinned();
        std::lock_guard lock(p.mutex);
        p.requests.reset_accumulated();
        p.bytes.reset_accumulated();
        p.allocs = p.frees = 0;
    }
    void reset_peak_stats() override {
        Pinned &p = pinned();
        std::lock_guard lock(p.mutex);
        p.requests.reset_peak();
        p.bytes.reset_peak();
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
