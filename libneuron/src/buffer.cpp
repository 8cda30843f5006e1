// SPDX-License-Identifier: MIT
// Buffers: GEM buffer objects, their mapping and ranges.
#include "device_state.hpp"

namespace neuron {
namespace detail {

BufferState::~BufferState() {
    if (!device.state())
        return; // an idle trace buffer: ~DeviceState released it
    const auto &dev = *device.state();
    for (const auto &[importer, h] : imports)
        if (auto d = importer.lock()) {
            drm_gem_close c{};
            c.handle = h;
            (void)d->ioctl(DRM_IOCTL_GEM_CLOSE, &c);
        }
    if (auto *p = map.load())
        dev.os->munmap(p, size);
    if (handle) {
        drm_gem_close c{};
        c.handle = handle;
        (void)dev.ioctl(DRM_IOCTL_GEM_CLOSE, &c);
    }
}

std::string human_size(uint64_t n) {
    if (n >= (1ull << 30) && n % (1ull << 20) == 0)
        return fmt::format("{:.1f} GiB", static_cast<double>(n) / (1ull << 30));
    if (n >= (1ull << 20))
        return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1ull << 20));
    if (n >= (1ull << 10))
        return fmt::format("{:.1f} KiB", static_cast<double>(n) / (1ull << 10));
    return fmt::format("{} bytes", n);
}

} // namespace detail

using detail::human_size;
using detail::throw_errno;

Buffer Device::allocate(uint64_t size, Region region, uint32_t flags) const {
    const char *where = region == Region::device ? "device" : "host";
    if (size == 0 || size > DRM_NEURON_BO_MAX_SIZE)
        throw Error(
            errc::invalid_argument,
            fmt::format("{}: a buffer of {} bytes: the size must be 1..2^48", state_->path, size));
    if (region != Region::device && region != Region::host)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: unknown buffer region {}", state_->path,
                                static_cast<unsigned>(region)));
    if (flags & ~DRM_NEURON_BO_FLAGS_ALL)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: unknown buffer flags {:#x}", state_->path, flags));
    drm_neuron_bo_create c{};
    c.size = size;
    c.region = static_cast<uint32_t>(region);
    c.flags = flags;
    if (int e = state_->ioctl(DRM_IOCTL_NEURON_BO_CREATE, &c)) {
        std::string what =
            fmt::format("{}: allocating {} of {} memory", state_->path, human_size(size), where);
        if (e == ENOSPC)
            throw Error(errc::out_of_device_memory,
                        fmt::format("{}: out of device memory: no free range of that size in "
                                    "the device's {}",
                                    what, human_size(state_->info.device_memory_size)));
        throw_errno(e, what);
    }
    auto s = std::make_unique<detail::BufferState>(*this);
    s->handle = c.handle;
    drm_neuron_bo_info i{};
    i.handle = c.handle;
    if (int e = state_->ioctl(DRM_IOCTL_NEURON_BO_INFO, &i))
        throw_errno(e, fmt::format("{}: BO_INFO of buffer {}", state_->path, c.handle));
    s->size = i.size;
    s->mmap_offset = i.mmap_offset;
    s->device_addr = i.device_addr;
    s->region = static_cast<Region>(i.region);
    s->flags = i.flags;
    return Buffer(std::move(s));
}

Buffer::Buffer() noexcept = default;
Buffer::Buffer(std::unique_ptr<detail::BufferState> s) noexcept : state_(std::move(s)) {}
Buffer::Buffer(Buffer &&) noexcept = default;
Buffer &Buffer::operator=(Buffer &&) noexcept = default;
Buffer::~Buffer() = default;

static const detail::BufferState &checked(const std::unique_ptr<detail::BufferState> &s) {
    if (!s)
        throw Error(errc::invalid_argument, "use of an empty (moved-from) neuron::Buffer");
    return *s;
}

uint64_t Buffer::size() const {
    return checked(state_).size;
}
Region Buffer::region() const {
    return checked(state_).region;
}
uint32_t Buffer::flags() const {
    return checked(state_).flags;
}
uint32_t Buffer::handle() const {
    return checked(state_).handle;
}
uint64_t Buffer::device_address() const {
    return checked(state_).device_addr;
}
const Device &Buffer::device() const {
    return checked(state_).device;
}

std::span<std::byte> Buffer::map() const {
    const auto &s = checked(state_);
    std::byte *p = s.map.load(std::memory_order_acquire);
    if (!p) {
        std::lock_guard<std::mutex> g(s.map_lock);
        p = s.map.load(std::memory_order_relaxed);
        if (!p) {
            const auto &dev = *s.device.state();
            int err = 0;
            void *m = dev.os->mmap(dev.fd, s.size, s.mmap_offset, err);
            if (!m)
                throw_errno(err, fmt::format("{}: mapping buffer {} ({})", dev.path, s.handle,
                                             human_size(s.size)));
            p = static_cast<std::byte *>(m);
            s.map.store(p, std::memory_order_release);
        }
    }
    return {p, s.size};
}

void Buffer::write(uint64_t offset, std::span<const std::byte> data) const {
    auto m = map();
    if (offset > m.size() || data.size() > m.size() - offset)
        throw Error(errc::invalid_argument,
                    fmt::format("writing {} bytes at offset {} of a {}-byte buffer: out of range",
                                data.size(), offset, m.size()));
    if (!data.empty())
        std::memcpy(m.data() + offset, data.data(), data.size());
}

void Buffer::read(uint64_t offset, std::span<std::byte> out) const {
    auto m = map();
    if (offset > m.size() || out.size() > m.size() - offset)
        throw Error(errc::invalid_argument,
                    fmt::format("reading {} bytes at offset {} of a {}-byte buffer: out of range",
                                out.size(), offset, m.size()));
    if (!out.empty())
        std::memcpy(out.data(), m.data() + offset, out.size());
}

BufferRange Buffer::range(uint64_t offset, uint64_t size) const {
    uint64_t total = this->size();
    if (offset > total || (size && size > total - offset))
        throw Error(
            errc::invalid_argument,
            fmt::format("range [{}, +{}) of a {}-byte buffer: out of range", offset, size, total));
    return BufferRange{this, offset, size ? size : total - offset};
}

} // namespace neuron
