// SPDX-License-Identifier: MIT
// The sub-allocator: best fit with coalescing over chunks, one lock.
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include <neuron/allocator.hpp>

#include "internal.hpp"

namespace neuron {

ChunkProvider::~ChunkProvider() = default;

namespace detail {

struct PoolCore : std::enable_shared_from_this<PoolCore> {
    std::unique_ptr<ChunkProvider> provider;
    SubAllocatorOptions opt;

    struct ChunkSlot {
        Chunk chunk;
        bool live = false;
        bool dedicated = false;
        uint64_t used = 0;
        std::map<uint64_t, uint64_t> free; // offset -> size
    };

    // Protects everything below.
    mutable std::mutex lock;
    std::vector<ChunkSlot> chunks;
    std::vector<uint32_t> unused_slots;
    // (size, chunk, offset) of every free block, for best fit.
    std::set<std::tuple<uint64_t, uint32_t, uint64_t>> by_size;
    unsigned empty_chunks = 0;
    SubAllocatorStats stats;

    void add_free(uint32_t c, uint64_t off, uint64_t size) {
        chunks[c].free.emplace(off, size);
        by_size.emplace(size, c, off);
    }
    void remove_free(uint32_t c, std::map<uint64_t, uint64_t>::iterator it) {
        by_size.erase({it->second, c, it->first});
        chunks[c].free.erase(it);
    }

    // Carves [off, off+size) out of free block @p it. Caller holds the lock.
    void carve(uint32_t c, std::map<uint64_t, uint64_t>::iterator it, uint64_t off, uint64_t size) {
        uint64_t boff = it->first, bsize = it->second;
        remove_free(c, it);
        if (off > boff)
            add_free(c, boff, off - boff);
        if (boff + bsize > off + size)
            add_free(c, off + size, boff + bsize - (off + size));
        if (chunks[c].used == 0 && !chunks[c].dedicated)
            empty_chunks--;
        chunks[c].used += size;
    }

    bool try_alloc(uint64_t size, uint64_t align, uint32_t &c_out, uint64_t &off_out) {
        for (auto it = by_size.lower_bound({size, 0, 0}); it != by_size.end(); ++it) {
            auto [bsize, c, boff] = *it;
            uint64_t off = (boff + align - 1) & ~(align - 1);
            if (off - boff + size > bsize)
                continue;
            if (chunks[c].dedicated && chunks[c].used)
                continue;
            carve(c, chunks[c].free.find(boff), off, size);
            c_out = c;
            off_out = off;
            return true;
        }
        return false;
    }

    uint32_t add_chunk(const Chunk &ch, bool dedicated) {
        uint32_t c;
        if (!unused_slots.empty()) {
            c = unused_slots.back();
            unused_slots.pop_back();
        } else {
            c = static_cast<uint32_t>(chunks.size());
            chunks.emplace_back();
        }
        ChunkSlot &s = chunks[c];
        s.chunk = ch;
        s.live = true;
        s.dedicated = dedicated;
        s.used = 0;
        s.free.clear();
        if (!dedicated)
            empty_chunks++;
        add_free(c, 0, ch.size);
        stats.chunks++;
        stats.chunk_bytes += ch.size;
        stats.chunk_acquisitions++;
        return c;
    }

    // Removes chunk @p c (empty) from the books; returns it for release.
    Chunk drop_chunk(uint32_t c) {
        ChunkSlot &s = chunks[c];
        for (auto it = s.free.begin(); it != s.free.end();)
            by_size.erase({it->second, c, it->first}), it = s.free.erase(it);
        if (!s.dedicated)
            empty_chunks--;
        s.live = false;
        stats.chunks--;
        stats.chunk_bytes -= s.chunk.size;
        unused_slots.push_back(c);
        return s.chunk;
    }

    void fill(Allocation &a, uint32_t c, uint64_t off, uint64_t size, uint64_t reserved) {
        a.core_ = shared_from_this();
        a.chunk_ = c;
        a.offset_ = off;
        a.size_ = size;
        a.reserved_ = reserved;
        a.buffer_ = chunks[c].chunk.buffer;
        a.chunk_id_ = chunks[c].chunk.id;
        stats.bytes_in_use += reserved;
        if (stats.bytes_in_use > stats.peak_bytes_in_use)
            stats.peak_bytes_in_use = stats.bytes_in_use;
        stats.allocations++;
        stats.total_allocations++;
    }

    Allocation allocate(uint64_t size, uint64_t alignment) {
        if (size == 0)
            throw Error(errc::invalid_argument, "sub-allocation of 0 bytes");
        if (alignment & (alignment - 1))
            throw Error(
                errc::invalid_argument,
                fmt::format("sub-allocation alignment {} is not a power of two", alignment));
        uint64_t align = std::max(alignment, opt.min_alignment);
        if (size > (1ull << 48))
            throw Error(errc::invalid_argument, fmt::format("sub-allocation of {} bytes", size));
        uint64_t reserved = (size + opt.min_alignment - 1) & ~(opt.min_alignment - 1);
        Allocation a;
        {
            std::lock_guard<std::mutex> g(lock);
            uint32_t c;
            uint64_t off;
            if (try_alloc(reserved, align, c, off)) {
                fill(a, c, off, size, reserved);
                return a;
            }
        }
        // A new chunk, acquired without holding the lock. Chunks start at an
        // aligned address of their buffer (buffers are page aligned); an
        // alignment above that is honoured by over-allocating.
        bool dedicated = reserved > opt.chunk_size || align > opt.chunk_size;
        uint64_t want = dedicated ? reserved + (align > 4096 ? align : 0) : opt.chunk_size;
        Chunk ch = provider->acquire(want);
        std::lock_guard<std::mutex> g(lock);
        uint32_t c = add_chunk(ch, dedicated);
        auto it = chunks[c].free.begin();
        uint64_t off = (it->first + align - 1) & ~(align - 1);
        if (off + reserved > ch.size) {
            Chunk back = drop_chunk(c);
            provider->release(back);
            throw Error(errc::invalid_argument,
                        fmt::format("sub-allocation of {} bytes aligned to {} does not fit a chunk "
                                    "of {} bytes",
                                    size, align, ch.size));
        }
        carve(c, it, off, reserved);
        fill(a, c, off, size, reserved);
        return a;
    }

    void free(uint32_t c, uint64_t off, uint64_t reserved) noexcept {
        Chunk release_me;
        bool release = false;
        {
            std::lock_guard<std::mutex> g(lock);
            ChunkSlot &s = chunks[c];
            uint64_t start = off, size = reserved;
            auto next = s.free.lower_bound(off);
            if (next != s.free.begin()) {
                auto prev = std::prev(next);
                if (prev->first + prev->second == off) {
                    start = prev->first;
                    size += prev->second;
                    remove_free(c, prev);
                }
            }
            next = s.free.lower_bound(off);
            if (next != s.free.end() && next->first == off + reserved) {
                size += next->second;
                remove_free(c, next);
            }
            add_free(c, start, size);
            s.used -= reserved;
            stats.bytes_in_use -= reserved;
            stats.allocations--;
            if (s.used == 0) {
                if (s.dedicated) {
                    release_me = drop_chunk(c);
                    release = true;
                } else if (++empty_chunks > opt.keep_empty_chunks) {
                    release_me = drop_chunk(c);
                    release = true;
                }
            }
        }
        if (release)
            provider->release(release_me);
    }

    void trim() {
        std::vector<Chunk> out;
        {
            std::lock_guard<std::mutex> g(lock);
            for (uint32_t c = 0; c < chunks.size(); c++)
                if (chunks[c].live && chunks[c].used == 0)
                    out.push_back(drop_chunk(c));
        }
        for (const auto &ch : out)
            provider->release(ch);
    }

    ~PoolCore() {
        for (uint32_t c = 0; c < chunks.size(); c++)
            if (chunks[c].live)
                provider->release(chunks[c].chunk);
    }
};

namespace {

class DeviceChunkProvider final : public ChunkProvider {
  public:
    DeviceChunkProvider(Device d, Region r, uint32_t flags)
        : dev_(std::move(d)), region_(r), flags_(flags) {}

    Chunk acquire(uint64_t size) override {
        auto buf = std::make_unique<Buffer>(dev_.allocate(size, region_, flags_));
        std::lock_guard<std::mutex> g(lock_);
        uint64_t id = next_id_++;
        Chunk c{buf->size(), buf.get(), id};
        buffers_.emplace(id, std::move(buf));
        return c;
    }
    void release(const Chunk &c) noexcept override {
        std::unique_ptr<Buffer> b;
        std::lock_guard<std::mutex> g(lock_);
        auto it = buffers_.find(c.id);
        if (it != buffers_.end()) {
            b = std::move(it->second);
            buffers_.erase(it);
        }
    }

  private:
    Device dev_;
    Region region_;
    uint32_t flags_;
    std::mutex lock_; // protects buffers_, next_id_
    std::unordered_map<uint64_t, std::unique_ptr<Buffer>> buffers_;
    uint64_t next_id_ = 1;
};

} // namespace
} // namespace detail

// --- Allocation --------------------------------------------------------------------

Allocation::Allocation(Allocation &&o) noexcept
    : core_(std::move(o.core_)), buffer_(o.buffer_), offset_(o.offset_), size_(o.size_),
      reserved_(o.reserved_), chunk_id_(o.chunk_id_), chunk_(o.chunk_) {
    o.buffer_ = nullptr;
}

Allocation &Allocation::operator=(Allocation &&o) noexcept {
    if (this != &o) {
        reset();
        core_ = std::move(o.core_);
        buffer_ = o.buffer_;
        offset_ = o.offset_;
        size_ = o.size_;
        reserved_ = o.reserved_;
        chunk_id_ = o.chunk_id_;
        chunk_ = o.chunk_;
        o.buffer_ = nullptr;
    }
    return *this;
}

Allocation::~Allocation() {
    reset();
}

void Allocation::reset() noexcept {
    if (core_) {
        core_->free(chunk_, offset_, reserved_);
        core_.reset();
        buffer_ = nullptr;
    }
}

BufferRange Allocation::range() const {
    if (!buffer_)
        throw Error(errc::invalid_argument, "this allocation has no device buffer");
    return BufferRange{buffer_, offset_, size_};
}

std::span<std::byte> Allocation::map() const {
    if (!buffer_)
        throw Error(errc::invalid_argument, "this allocation has no device buffer");
    return buffer_->map().subspan(offset_, size_);
}

// --- SubAllocator ------------------------------------------------------------------

SubAllocator::SubAllocator(std::unique_ptr<ChunkProvider> provider, SubAllocatorOptions options) {
    if (!provider)
        throw Error(errc::invalid_argument, "SubAllocator: no chunk provider");
    if (options.min_alignment == 0 || (options.min_alignment & (options.min_alignment - 1)))
        throw Error(errc::invalid_argument,
                    fmt::format("SubAllocator: min_alignment {} is not a power of two",
                                options.min_alignment));
    if (options.chunk_size < options.min_alignment)
        throw Error(errc::invalid_argument, "SubAllocator: chunk_size is below min_alignment");
    options.chunk_size &= ~(options.min_alignment - 1);
    core_ = std::make_shared<detail::PoolCore>();
    core_->provider = std::move(provider);
    core_->opt = options;
}

SubAllocator::SubAllocator(const Device &device, Region region, SubAllocatorOptions options,
                           uint32_t buffer_flags)
    : SubAllocator(std::make_unique<detail::DeviceChunkProvider>(device, region, buffer_flags),
                   options) {}

Allocation SubAllocator::allocate(uint64_t size, uint64_t alignment) {
    return core_->allocate(size, alignment);
}

SubAllocatorStats SubAllocator::stats() const {
    std::lock_guard<std::mutex> g(core_->lock);
    return core_->stats;
}

const SubAllocatorOptions &SubAllocator::options() const {
    return core_->opt;
}

void SubAllocator::trim() {
    core_->trim();
}

} // namespace neuron
