// SPDX-License-Identifier: MIT
// neuron-bench: the peer the device is compared with, a block device read
// with O_DIRECT (in the VM: QEMU's NVMe device backed by host RAM, see
// tests/vm/neuron-vm run --nvme), so that every read is a transfer by the
// device into this process's memory, never a copy out of the page cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

namespace nbench {

/// A descriptor closed when its owner goes.
class UniqueFd {
  public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    UniqueFd(UniqueFd &&other) noexcept : fd_(other.release()) {}
    UniqueFd &operator=(UniqueFd &&other) noexcept;
    UniqueFd(const UniqueFd &) = delete;
    UniqueFd &operator=(const UniqueFd &) = delete;
    ~UniqueFd();

    int get() const { return fd_; }
    int release();

  private:
    int fd_ = -1;
};

/// Anonymous, page-aligned memory (what O_DIRECT needs), its pages faulted
/// in up front so that no read is timed with the page faults of its buffer.
class PageBuffer {
  public:
    PageBuffer() = default;
    /// Throws std::system_error when the memory cannot be mapped.
    explicit PageBuffer(std::size_t bytes);
    PageBuffer(PageBuffer &&other) noexcept;
    PageBuffer &operator=(PageBuffer &&other) noexcept;
    PageBuffer(const PageBuffer &) = delete;
    PageBuffer &operator=(const PageBuffer &) = delete;
    ~PageBuffer();

    std::byte *data() const { return data_; }
    std::size_t size() const { return size_; }

  private:
    std::byte *data_ = nullptr;
    std::size_t size_ = 0;
};

/// A block device (or file) opened read-only with O_DIRECT.
class BlockPeer {
  public:
    /// Throws std::system_error naming @p path and the reason when it cannot
    /// be opened with O_DIRECT or its size read, std::runtime_error when it
    /// is neither a block device nor a regular file.
    explicit BlockPeer(const std::string &path);

    const std::string &path() const { return path_; }
    /// Bytes the device holds.
    uint64_t size() const { return size_; }

    /// Seconds one read of @p bytes from offset 0 takes (a multiple of the
    /// logical block size, at most size()); the kernel splits it into
    /// requests the device accepts and keeps them in flight together.
    double read_seconds(uint64_t bytes);
    /// Microseconds one read of @p block bytes at a random offset aligned to
    /// @p block takes, nothing else in flight.
    double read_latency_us(unsigned block = 4096);
    /// Reads of @p block bytes at random aligned offsets completed per
    /// second, @p depth of them kept in flight through io_uring for about
    /// @p seconds.
    double iops(unsigned depth, double seconds, unsigned block = 4096);

  private:
    /// Throws std::invalid_argument unless @p bytes is a usable read size.
    void check_read_size(uint64_t bytes, const char *what) const;
    uint64_t random_offset(unsigned block);
    /// The object's buffer, grown to at least @p bytes.
    std::byte *buffer(std::size_t bytes);

    std::string path_;
    UniqueFd fd_;
    uint64_t size_ = 0;
    unsigned logical_block_ = 512;
    PageBuffer buffer_;
    std::mt19937_64 random_{std::random_device{}()};
};

struct Options;
/// The peer the options name (--nvme); nullopt with the reason in
/// @p why_not when there is none or it cannot be opened.
std::optional<BlockPeer> open_peer(const Options &o, std::string &why_not);

} // namespace nbench
