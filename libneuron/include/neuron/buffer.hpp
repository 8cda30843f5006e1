// SPDX-License-Identifier: MIT
// Buffer objects, ranges of them, and fences.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <system_error>

#include <neuron/device.hpp>
#include <neuron/export.h>

namespace neuron {

namespace detail {
struct BufferState;
struct FenceState;
struct BufferAccess;
} // namespace detail

/// A GEM buffer object: device or host memory, released when the Buffer is
/// destroyed (the kernel keeps it alive while a job or copy still uses it).
/// Move-only. Its CPU mapping is created on first use of map().
class NEURON_EXPORT Buffer {
  public:
    Buffer() noexcept;
    Buffer(Buffer &&) noexcept;
    Buffer &operator=(Buffer &&) noexcept;
    ~Buffer();

    explicit operator bool() const noexcept { return state_ != nullptr; }

    uint64_t size() const; ///< bytes (page aligned)
    Region region() const;
    uint32_t flags() const;
    uint32_t handle() const;         ///< the GEM handle (valid in Device::fd())
    uint64_t device_address() const; ///< for logs; ~0 for host buffers
    const Device &device() const;

    /// The whole buffer mapped into this process (mapped once, thread-safe).
    std::span<std::byte> map() const;

    /// CPU copies through the mapping, bounds-checked.
    void write(uint64_t offset, std::span<const std::byte> data) const;
    void read(uint64_t offset, std::span<std::byte> out) const;

    /// The range [offset, offset + size) of this buffer; size 0 means "to the end".
    BufferRange range(uint64_t offset = 0, uint64_t size = 0) const;

  private:
    friend class Device;
    friend struct detail::BufferAccess;
    explicit Buffer(std::unique_ptr<detail::BufferState> s) noexcept;
    std::unique_ptr<detail::BufferState> state_;
};

/// A non-owning view of bytes of a Buffer: what copies and job arguments take.
struct BufferRange {
    const Buffer *buffer = nullptr;
    uint64_t offset = 0;
    uint64_t size = 0;
};

/// Completion of a copy or a job: a DRM syncobj. Copies of a Fence share it.
class NEURON_EXPORT Fence {
  public:
    Fence() = default;
    explicit operator bool() const noexcept { return state_ != nullptr; }

    /// Waits up to @p timeout. Returns true once the work completed
    /// successfully and false on timeout; throws neuron::Error if it failed
    /// (job_fault, job_invalid, job_timeout, job_aborted, io_error), naming
    /// the job or copy and the device status.
    bool wait_for(std::chrono::nanoseconds timeout) const;
    /// Waits without limit; throws like wait_for().
    void wait() const;
    /// Non-throwing form: {} on success, errc::timeout while still pending,
    /// else the failure (message() then describes it).
    std::error_code try_wait(std::chrono::nanoseconds timeout) const noexcept;
    /// The description of the last failure seen by try_wait().
    std::string message() const;

    /// When the work completed: the time its fence signalled, on
    /// CLOCK_MONOTONIC (steady_clock's clock on Linux), so that it compares
    /// with steady_clock::now() taken around the submission and the wait.
    /// Empty while the work is pending; does not wait. Throws neuron::Error
    /// like wait() if the work failed, or if the time cannot be read.
    std::optional<std::chrono::steady_clock::time_point> completed_at() const;

    /// "job 3 (program 'gelu') on core 0 of /dev/accel/accel0", or the copy's.
    const std::string &label() const;
    uint32_t syncobj() const; ///< the syncobj handle (valid in Device::fd())
    uint64_t seqno() const;   ///< the driver's sequence number of the job/copy

    const std::shared_ptr<detail::FenceState> &state() const { return state_; }

  private:
    friend class Device;
    friend class Queue;
    explicit Fence(std::shared_ptr<detail::FenceState> s) : state_(std::move(s)) {}
    std::shared_ptr<detail::FenceState> state_;
};

} // namespace neuron
