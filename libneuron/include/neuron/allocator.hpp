// SPDX-License-Identifier: MIT
// A sub-allocator for small, short-lived tensors on top of large buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include <neuron/buffer.hpp>
#include <neuron/export.h>

namespace neuron {

namespace detail {
struct PoolCore;
}

/// One large block the sub-allocator carves allocations from.
struct Chunk {
    uint64_t size = 0;              ///< usable bytes
    const Buffer *buffer = nullptr; ///< the backing buffer, or null for host-only providers
    uint64_t id = 0;                ///< the provider's own key
};

/// Where chunks come from. The device provider creates one buffer object per
/// chunk; tests and benchmarks use providers without a device.
class NEURON_EXPORT ChunkProvider {
  public:
    virtual ~ChunkProvider();
    /// A chunk of at least @p size bytes; throws neuron::Error on failure.
    virtual Chunk acquire(uint64_t size) = 0;
    /// Gives back a chunk acquire() returned; no allocation uses it any more.
    virtual void release(const Chunk &chunk) noexcept = 0;
};

struct SubAllocatorOptions {
    uint64_t chunk_size = 16ull << 20; ///< bytes per chunk; bigger requests get their own
    uint64_t min_alignment = 64;       ///< power of two; every allocation is aligned to it
    unsigned keep_empty_chunks = 1;    ///< empty standard chunks kept for reuse
};

struct SubAllocatorStats {
    uint64_t bytes_in_use = 0; ///< allocated bytes (after rounding to min_alignment)
    uint64_t peak_bytes_in_use = 0;
    uint64_t allocations = 0;        ///< live allocations
    uint64_t total_allocations = 0;  ///< allocations ever made
    uint64_t chunks = 0;             ///< chunks held
    uint64_t chunk_bytes = 0;        ///< bytes of all chunks held
    uint64_t chunk_acquisitions = 0; ///< calls to ChunkProvider::acquire()
};

/// One sub-allocation; returns its bytes to the allocator when destroyed.
/// Keeps its chunk (and the allocator's state) alive. Move-only.
class NEURON_EXPORT Allocation {
  public:
    Allocation() noexcept = default;
    Allocation(Allocation &&o) noexcept;
    Allocation &operator=(Allocation &&o) noexcept;
    ~Allocation();

    explicit operator bool() const noexcept { return core_ != nullptr; }
    void reset() noexcept; ///< frees now

    uint64_t offset() const noexcept { return offset_; } ///< in the chunk (and its buffer)
    uint64_t size() const noexcept { return size_; }     ///< bytes requested
    uint32_t chunk_index() const noexcept { return chunk_; }
    uint64_t chunk_id() const noexcept { return chunk_id_; } ///< Chunk::id of its chunk
    const Buffer *buffer() const noexcept { return buffer_; }
    /// The buffer range, for copies and job arguments (requires a device chunk).
    BufferRange range() const;
    /// The allocation's bytes in the buffer's CPU mapping.
    std::span<std::byte> map() const;

  private:
    friend struct detail::PoolCore;
    std::shared_ptr<detail::PoolCore> core_;
    const Buffer *buffer_ = nullptr;
    uint64_t offset_ = 0;
    uint64_t size_ = 0;
    uint64_t reserved_ = 0; // bytes taken from the chunk
    uint64_t chunk_id_ = 0;
    uint32_t chunk_ = 0;
};

/// Thread-safe best-fit allocator with coalescing over chunks from a
/// ChunkProvider. Allocating never issues an ioctl unless a new chunk is
/// needed. Copies share the same allocator.
class NEURON_EXPORT SubAllocator {
  public:
    explicit SubAllocator(std::unique_ptr<ChunkProvider> provider,
                          SubAllocatorOptions options = {});
    /// An allocator whose chunks are buffers of @p device in @p region.
    SubAllocator(const Device &device, Region region, SubAllocatorOptions options = {},
                 uint32_t buffer_flags = 0);

    /// @p size bytes (> 0) aligned to max(alignment, min_alignment); alignment
    /// must be a power of two or 0.
    Allocation allocate(uint64_t size, uint64_t alignment = 0);

    SubAllocatorStats stats() const;
    const SubAllocatorOptions &options() const;
    /// Releases every empty chunk.
    void trim();

  private:
    std::shared_ptr<detail::PoolCore> core_;
};

} // namespace neuron
