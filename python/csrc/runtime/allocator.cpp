// SPDX-License-Identifier: MIT
#include "allocator.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include "cores.hpp"
#include "streams.hpp"

namespace neuron::torch_bridge {

namespace cda = c10::CachingDeviceAllocator;

namespace {

// Address space of the data pointers: index, chunk, offset in the chunk.
constexpr unsigned index_shift = 52, chunk_shift = 36;
constexpr uint64_t max_chunk_bytes = 1ull << chunk_shift;

struct Block {
    Allocation memory;
    c10::DeviceIndex index;
    c10::StreamId stream;                   ///< allocated for work of this stream
    std::vector<c10::Stream> other_streams; ///< record_stream's
    uint64_t address;
};

/// A freed block whose streams (the one it was allocated for and
/// record_stream's) still had work queued when it was freed: that work may
/// read or write it. The allocating stream may take it again at once (its
/// next work runs after that work, as CUDA's caching allocator reuses a
/// block on its stream); any other stream only once the work completed,
/// when the block goes back to the device memory.
struct Deferred {
    std::unique_ptr<Block> block;
    /// The last work of each stream queued before the free, by stream.
    std::vector<std::pair<c10::StreamId, Fence>> fences;
};

void update(c10::CachingAllocator::StatArray &a, int64_t delta) {
    auto &s = a[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    s.current += delta;
    s.peak = std::max(s.peak, s.current);
    if (delta > 0)
        s.allocated += delta;
    else
        s.freed -= delta;
}

struct IndexState {
    explicit IndexState(const Core &core)
        : memory(core.device, Region::device, {.chunk_size = 16ull << 20, .min_alignment = 64}),
          staging(core.device, Region::host, {.chunk_size = 4ull << 20, .min_alignment = 64}) {}
    SubAllocator memory;
    SubAllocator staging;
    std::map<uint64_t, Block *> live; ///< by address
    std::vector<Deferred> deferred;
    cda::DeviceStats stats;
    /// Bytes the cache may reserve (0: all of the device's), set by
    /// torch.neuron.set_per_process_memory_fraction.
    std::atomic<uint64_t> limit{0};
};

void free_block(void *ctx);

class Allocator final : public c10::DeviceAllocator {
  public:
    c10::DataPtr allocate(size_t n) override {
        const c10::DeviceIndex index = current_core_index();
        const c10::Device device(c10::DeviceType::PrivateUse1, index);
        if (n == 0)
            return {nullptr, nullptr, &free_block, device};
        IndexState &st = state(index);
        const c10::StreamId stream = current_stream(index).id();
        std::unique_ptr<Block> block = reuse(st, stream, n);
        if (!block) {
            block = std::make_unique<Block>();
            block->memory = allocate_memory(st, index, n);
        }
        block->index = index;
        block->stream = stream;
        block->other_streams.clear();
        const Allocation &m = block->memory;
        TORCH_CHECK(m.chunk_id() < (1ull << (index_shift - chunk_shift)) &&
                        m.offset() + n <= max_chunk_bytes,
                    "neuron: allocation of ", n, " bytes is beyond the allocator's address space");
        block->address =
            (uint64_t(index) + 1) << index_shift | m.chunk_id() << chunk_shift | m.offset();
        void *ptr = reinterpret_cast<void *>(block->address);
        {
            std::lock_guard lock(mutex_);
            st.live.emplace(block->address, block.get());
            update(st.stats.allocated_bytes, static_cast<int64_t>(n));
            update(st.stats.active_bytes, static_cast<int64_t>(n));
            update(st.stats.requested_bytes, static_cast<int64_t>(n));
            update(st.stats.allocation, 1);
            update(st.stats.active, 1);
            sync_reserved_locked(st);
        }
        return {ptr, block.release(), &free_block, device};
    }

    c10::DeleterFnPtr raw_deleter() const override { return &free_block; }

    void copy_data(void *dest, const void *src, std::size_t count) const override {
        if (count == 0)
            return;
        auto [d, d_off] = find(reinterpret_cast<uint64_t>(dest));
        auto [s, s_off] = find(reinterpret_cast<uint64_t>(src));
        StreamState &stream = stream_state(current_stream(d->index));
        stream.copy(BufferRange{d->memory.buffer(), d->memory.offset() + d_off, count},
                    BufferRange{s->memory.buffer(), s->memory.offset() + s_off, count});
    }

    bool initialized() override { return true; }

    void emptyCache(c10::MempoolId_t) override {
        const std::vector<IndexState *> all = all_states();
        for (IndexState *st : all)
            release_deferred(*st, true);
        for (IndexState *st : all) {
            st->memory.trim();
            st->staging.trim();
            std::lock_guard lock(mutex_);
            sync_reserved_locked(*st);
        }
    }

    /// Releases the staging pools' empty chunks (the host's empty_cache).
    void trim_staging() {
        for (IndexState *st : all_states())
            st->staging.trim();
    }

    void recordStream(const c10::DataPtr &ptr, c10::Stream stream) override {
        auto *block = static_cast<Block *>(ptr.get_context());
        if (!block || ptr.get_deleter() != &free_block)
            return;
        if (stream.id() == block->stream || stream.device_index() != block->index)
            return;
        std::lock_guard lock(mutex_);
        block->other_streams.push_back(stream);
    }

    cda::DeviceStats getDeviceStats(c10::DeviceIndex index) override {
        IndexState &st = state(index);
        std::lock_guard lock(mutex_);
        sync_reserved_locked(st);
        return st.stats;
    }

    void resetAccumulatedStats(c10::DeviceIndex index) override {
        IndexState &st = state(index);
        std::lock_guard lock(mutex_);
        for (auto *a :
             {&st.stats.allocation, &st.stats.segment, &st.stats.active, &st.stats.allocated_bytes,
              &st.stats.reserved_bytes, &st.stats.active_bytes, &st.stats.requested_bytes})
            for (auto &s : *a)
                s.reset_accumulated();
        st.stats.num_alloc_retries = 0;
        st.stats.num_ooms = 0;
    }

    void resetPeakStats(c10::DeviceIndex index) override {
        IndexState &st = state(index);
        std::lock_guard lock(mutex_);
        for (auto *a :
             {&st.stats.allocation, &st.stats.segment, &st.stats.active, &st.stats.allocated_bytes,
              &st.stats.reserved_bytes, &st.stats.active_bytes, &st.stats.requested_bytes})
            for (auto &s : *a)
                s.reset_peak();
    }

    std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex index) override {
        const Core &core = core_at(index);
        const uint64_t total = core.device.info().device_memory_size;
        const uint64_t used = core.device.memory_used().value_or(0);
        return {total > used ? total - used : 0, total};
    }

    void free(Block *block) noexcept {
        std::unique_ptr<Block> owned(block);
        IndexState *st = nullptr;
        {
            std::lock_guard lock(mutex_);
            auto it = states_.find(block->index);
            if (it == states_.end())
                return;
            st = it->second.get();
            st->live.erase(block->address);
            const auto n = static_cast<int64_t>(block->memory.size());
            update(st->stats.allocated_bytes, -n);
            update(st->stats.active_bytes, -n);
            update(st->stats.requested_bytes, -n);
            update(st->stats.allocation, -1);
            update(st->stats.active, -1);
        }
        Deferred d{std::move(owned), {}};
        try {
            const c10::Device device(c10::DeviceType::PrivateUse1, d.block->index);
            if (Fence f =
                    stream_state(c10::Stream(c10::Stream::UNSAFE, device, d.block->stream)).last())
                d.fences.emplace_back(d.block->stream, std::move(f));
            for (const c10::Stream &s : d.block->other_streams)
                if (Fence f = stream_state(s).last())
                    d.fences.emplace_back(s.id(), std::move(f));
            if (d.fences.empty())
                return; // no work queued uses it: d releases it now
            std::lock_guard lock(mutex_);
            st->deferred.push_back(std::move(d));
        } catch (...) {
            // Not deferrable (out of memory): wait for the streams instead.
            for (const auto &[id, f] : d.fences)
                (void)f.try_wait(std::chrono::seconds(120));
        }
    }

    std::pair<Block *, uint64_t> find(uint64_t address) const {
        const auto index = static_cast<c10::DeviceIndex>((address >> index_shift) - 1);
        std::lock_guard lock(mutex_);
        auto it = states_.find(index);
        TORCH_CHECK(it != states_.end(), "neuron: 0x", fmt::format("{:x}", address),
                    " is not the address of neuron memory");
        auto &live = it->second->live;
        auto b = live.upper_bound(address);
        TORCH_CHECK(b != live.begin(), "neuron: 0x", fmt::format("{:x}", address),
                    " is not in a live neuron allocation");
        --b;
        const uint64_t off = address - b->first;
        TORCH_CHECK(off < b->second->memory.size(), "neuron: 0x", fmt::format("{:x}", address),
                    " is not in a live neuron allocation");
        return {b->second, off};
    }

    /// Every index's state made so far (they live as long as the allocator).
    std::vector<IndexState *> all_states() {
        std::vector<IndexState *> all;
        std::lock_guard lock(mutex_);
        for (auto &[i, st] : states_)
            all.push_back(st.get());
        return all;
    }

    IndexState &state(c10::DeviceIndex index) {
        const Core &core = core_at(index);
        std::lock_guard lock(mutex_);
        auto &slot = states_[index];
        if (!slot)
            slot = std::make_unique<IndexState>(core);
        return *slot;
    }

  private:
    // Reserved bytes are the chunks the SubAllocator holds.
    void sync_reserved_locked(IndexState &st) {
        const SubAllocatorStats s = st.memory.stats();
        auto &r = st.stats.reserved_bytes[0];
        update(st.stats.reserved_bytes, static_cast<int64_t>(s.chunk_bytes) - r.current);
        auto &seg = st.stats.segment[0];
        update(st.stats.segment, static_cast<int64_t>(s.chunks) - seg.current);
    }

    /// A block freed by @p stream's work, of @p n bytes, that it may take
    /// again now (the work of the other streams that used it completed).
    std::unique_ptr<Block> reuse(IndexState &st, c10::StreamId stream, size_t n) {
        std::lock_guard lock(mutex_);
        for (auto it = st.deferred.begin(); it != st.deferred.end(); ++it) {
            if (it->block->stream != stream || it->block->memory.size() != n)
                continue;
            const bool others_done = std::ranges::all_of(it->fences, [&](const auto &e) {
                return e.first == stream ||
                       e.second.try_wait(std::chrono::nanoseconds(0)) != errc::timeout;
            });
            if (!others_done)
                continue;
            std::unique_ptr<Block> block = std::move(it->block);
            st.deferred.erase(it);
            return block;
        }
        return nullptr;
    }

    void release_deferred(IndexState &st, bool wait) {
        std::vector<Deferred> done;
        {
            std::lock_guard lock(mutex_);
            // The blocks are in the order they were freed: once a stream's
            // fence has not signalled, the later ones of that stream have not.
            std::vector<c10::StreamId> busy;
            std::vector<Deferred> kept;
            for (auto &d : st.deferred) {
                bool complete = true;
                for (const auto &[id, f] : d.fences) {
                    if (wait)
                        break;
                    const bool known = std::ranges::find(busy, id) != busy.end();
                    if (known || f.try_wait(std::chrono::nanoseconds(0)) == errc::timeout) {
                        if (!known)
                            busy.push_back(id);
                        complete = false;
                        break;
                    }
                }
                // Moved into another vector, never onto itself: a vector
                // moved onto itself is left empty (its fences lost).
                (complete ? done : kept).push_back(std::move(d));
            }
            st.deferred = std::move(kept);
        }
        for (Deferred &d : done)
            for (const auto &[id, f] : d.fences)
                (void)f.try_wait(std::chrono::seconds(120));
    }

    /// @p n bytes of device memory, or none (an empty Allocation) where
    /// taking them would reserve more than the index's limit.
    static Allocation allocate_within(IndexState &st, size_t n) {
        Allocation a = st.memory.allocate(n);
        const uint64_t limit = st.limit.load(std::memory_order_relaxed);
        if (limit && st.memory.stats().chunk_bytes > limit) {
            a.reset();
            st.memory.trim();
        }
        return a;
    }

    Allocation allocate_memory(IndexState &st, c10::DeviceIndex index, size_t n) {
        release_deferred(st, false);
        try {
            if (Allocation a = allocate_within(st, n))
                return a;
        } catch (const Error &e) {
            if (e.code() != errc::out_of_device_memory)
                TORCH_CHECK(false, "neuron: allocating ", n, " bytes on neuron:", int(index), ": ",
                            e.what());
        }
        // Free the cache (and what waits for other streams) and retry once.
        {
            std::lock_guard lock(mutex_);
            st.stats.num_alloc_retries++;
        }
        synchronize_device(index);
        release_deferred(st, true);
        st.memory.trim();
        std::string why;
        try {
            if (Allocation a = allocate_within(st, n))
                return a;
            why = fmt::format("torch.neuron.set_per_process_memory_fraction caps this "
                              "process's cache at {} bytes",
                              st.limit.load(std::memory_order_relaxed));
        } catch (const Error &e) {
            why = e.what();
        }
        std::lock_guard lock(mutex_);
        st.stats.num_ooms++;
        const SubAllocatorStats s = st.memory.stats();
        TORCH_CHECK_WITH(
            OutOfMemoryError, false, "neuron: out of device memory on neuron:", int(index),
            ": tried to allocate ", n, " bytes; ", s.bytes_in_use,
            " bytes are in use by tensors and ", s.chunk_bytes - s.bytes_in_use,
            " more are held free by this process's cache after emptying it (", why, ")");
    }

    mutable std::mutex mutex_; ///< protects states_ and each IndexState's live, deferred, stats
    std::map<c10::DeviceIndex, std::unique_ptr<IndexState>> states_;
};

Allocator &the_allocator() {
    static Allocator a;
    return a;
}

void free_block(void *ctx) {
    if (ctx)
        the_allocator().free(static_cast<Block *>(ctx));
}

const Block &block_of(const c10::StorageImpl &storage) {
    const c10::DataPtr &p = storage.data_ptr();
    TORCH_CHECK(p.get_deleter() == &free_block && p.get_context(),
                "neuron: a tensor's storage is not neuron device memory");
    return *static_cast<const Block *>(p.get_context());
}

} // namespace

c10::DeviceAllocator &device_allocator() {
    return the_allocator();
}

BufferRange storage_range(const at::Tensor &t, uint64_t first, uint64_t size) {
    const Block &b = block_of(*t.storage().unsafeGetStorageImpl());
    TORCH_CHECK(first + size <= b.memory.size(), "neuron: bytes [", first, ", ", first + size,
                ") are beyond the tensor's storage of ", b.memory.size());
    return BufferRange{b.memory.buffer(), b.memory.offset() + first, size};
}

BufferRange tensor_range(const at::Tensor &t) {
    const uint64_t isz = t.element_size();
    return storage_range(t, static_cast<uint64_t>(t.storage_offset()) * isz, t.nbytes());
}

void grow_storage(c10::StorageImpl &storage, uint64_t bytes) {
    if (bytes <= storage.nbytes())
        return;
    TORCH_CHECK(storage.resizable(), "neuron: the storage cannot be resized (it is not resizable)");
    c10::DataPtr fresh = the_allocator().allocate(bytes);
    if (storage.nbytes() > 0)
        the_allocator().copy_data(fresh.get(), storage.data(), storage.nbytes());
    storage.set_data_ptr_noswap(std::move(fresh));
    storage.set_nbytes(bytes);
}

void set_memory_limit(c10::DeviceIndex index, uint64_t bytes) {
    the_allocator().state(index).limit.store(bytes, std::memory_order_relaxed);
}

void empty_staging_cache() {
    the_allocator().trim_staging();
}

Allocation staging_memory(c10::DeviceIndex index, uint64_t bytes) {
    try {
        return the_allocator().state(index).staging.allocate(bytes);
    } catch (const Error &e) {
        TORCH_CHECK(false, "neuron: allocating ", bytes,
                    " bytes of host staging memory: ", e.what());
    }
}

} // namespace neuron::torch_bridge
