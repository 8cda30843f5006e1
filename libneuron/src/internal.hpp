// SPDX-License-Identifier: MIT
// Internal state shared by the library's translation units.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include <neuron/buffer.hpp>
#include <neuron/device.hpp>
#include <neuron/error.hpp>

namespace neuron {
namespace detail {

/// "ENOENT" etc. for messages.
const char *errno_name(int e) noexcept;
/// "permission denied (EACCES)".
std::string errno_text(int e);
/// The errc an ioctl errno maps to when no better one is known.
errc errc_from_errno(int e) noexcept;
[[noreturn]] void throw_errno(int e, const std::string &what, const std::string &hint = {});

struct DeviceState {
    int fd = -1;
    std::string path;
    DeviceInfo info;
    ~DeviceState();
    /// drmIoctl; returns 0 or the errno.
    int ioctl(unsigned long request, void *arg) const noexcept;
};

struct BufferState {
    Device device;
    uint32_t handle = 0;
    uint64_t size = 0;
    uint64_t mmap_offset = 0;
    uint64_t device_addr = 0;
    Region region = Region::device;
    uint32_t flags = 0;
    mutable std::mutex map_lock;
    mutable std::atomic<std::byte *> map{nullptr};
    explicit BufferState(Device d) : device(std::move(d)) {}
    ~BufferState();
};

struct FenceState {
    std::shared_ptr<DeviceState> device;
    uint32_t syncobj = 0;
    uint64_t seqno = 0;
    std::string label;
    mutable std::mutex lock;
    mutable std::string last_message;
    ~FenceState();
};

/// Creates a syncobj; throws on failure.
uint32_t create_syncobj(const DeviceState &dev);

} // namespace detail
} // namespace neuron
