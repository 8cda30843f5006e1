// SPDX-License-Identifier: MIT
#include "pinned.hpp"

#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>

#include <c10/util/Exception.h>

#include "allocator.hpp"

namespace neuron::torch_bridge {

namespace {

/// The live pinned allocations, by the address of their bytes.
struct Pinned {
    std::mutex mutex; ///< protects by_address
    std::map<const std::byte *, Allocation> by_address;
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
    }
    // (returned to its pool here, outside the lock)
}

class PinnedAllocator final : public c10::Allocator {
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
        }
        return {data, data, &free_pinned, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
    void copy_data(void *dest, const void *src, std::size_t count) const override {
        std::memcpy(dest, src, count);
    }

  private:
    static void free_nothing(void *) {}
};

} // namespace

c10::Allocator &pinned_allocator() {
    static PinnedAllocator a;
    return a;
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
