// SPDX-License-Identifier: MIT
// Copies: asynchronous DMA between buffers, ordered by fences, within one
// device or between two (PRIME import, else staged through host memory).
#include <cstring>
#include <typeinfo>

#include <fcntl.h>

#include "device_state.hpp"

namespace neuron {

namespace detail {

InSyncs &InSyncs::operator=(InSyncs &&o) noexcept {
    if (this != &o) {
        this->~InSyncs();
        new (this) InSyncs(std::move(o));
    }
    return *this;
}

InSyncs::~InSyncs() {
    for (uint32_t h : imported)
        release_syncobj(*dev, h);
}

namespace {

// Both devices' files live in one fd table: the kernel's for two neuron.ko
// devices, the simulator's for two simulated ones.
bool same_os_kind(const DeviceState &a, const DeviceState &b) {
    const Os &x = *a.os, &y = *b.os;
    return typeid(x) == typeid(y);
}

// @p f's fence (of another device) in a syncobj of @p dev, through a sync
// file; 0 when either side cannot do it.
uint32_t import_fence(const DeviceState &dev, const Fence &f) {
    const DeviceState &from = *f.state()->device;
    if (!same_os_kind(dev, from))
        return 0;
    drm_syncobj_handle e{};
    e.handle = f.syncobj();
    e.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
    e.fd = -1;
    if (from.ioctl(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &e))
        return 0;
    uint32_t h = create_syncobj(dev);
    drm_syncobj_handle i{};
    i.handle = h;
    i.flags = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE;
    i.fd = e.fd;
    int err = dev.ioctl(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &i);
    from.os->close(e.fd);
    if (err) {
        release_syncobj(dev, h);
        return 0;
    }
    return h;
}

} // namespace

InSyncs make_in_syncs(const DeviceState &dev, const std::vector<Fence> &deps,
                      const std::string &what) {
    if (deps.size() > DRM_NEURON_MAX_IN_SYNCS)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: {} dependencies, at most {} allowed", what, deps.size(),
                                DRM_NEURON_MAX_IN_SYNCS));
    InSyncs v;
    v.dev = &dev;
    for (const auto &f : deps) {
        if (!f)
            throw Error(errc::invalid_argument, what + ": an empty fence among the dependencies");
        drm_neuron_sync s{};
        if (f.state()->device.get() == &dev) {
            s.handle = f.syncobj();
        } else if (uint32_t h = import_fence(dev, f)) {
            v.imported.push_back(h);
            s.handle = h;
        } else {
            // The host waits for it: a failed dependency fails this work
            // before it is queued, naming the dependency.
            try {
                f.wait();
            } catch (const Error &e) {
                throw Error(e.code(), fmt::format("{}: dependency failed: {}", what, e.what()));
            }
            continue;
        }
        v.list.push_back(s);
    }
    return v;
}

namespace {

// @p b's handle in @p dev's file: its own, or a PRIME import (kept with the
// buffer, closed with it); 0 when the devices cannot share it.
uint32_t handle_in(const std::shared_ptr<DeviceState> &dev, const Buffer &b) {
    const BufferState &bs = BufferAccess::state(b);
    const auto &owner = bs.device.state();
    if (owner == dev)
        return bs.handle;
    if (!same_os_kind(*dev, *owner))
        return 0;
    std::lock_guard<std::mutex> g(bs.import_lock);
    for (const auto &[importer, h] : bs.imports)
        if (importer.lock() == dev)
            return h;
    drm_prime_handle e{};
    e.handle = bs.handle;
    e.flags = DRM_CLOEXEC | DRM_RDWR;
    e.fd = -1;
    if (owner->ioctl(DRM_IOCTL_PRIME_HANDLE_TO_FD, &e))
        return 0; // neuron.ko without dma-buf export: EOPNOTSUPP
    drm_prime_handle i{};
    i.fd = e.fd;
    int err = dev->ioctl(DRM_IOCTL_PRIME_FD_TO_HANDLE, &i);
    owner->os->close(e.fd);
    if (err)
        return 0;
    bs.imports.emplace_back(dev, i.handle);
    return i.handle;
}

} // namespace

} // namespace detail

Fence Device::copy(const BufferRange &dst, const BufferRange &src) const {
    return copy(dst, src, std::vector<Fence>{});
}

namespace {

// A copy between buffers of two devices that cannot share a buffer:
// src's device copies it into a host buffer of its own, the host copies
// that into a host buffer of dst's device once it is there, and dst's
// device copies it into place. The host waits for the first copy.
Fence staged_copy(const BufferRange &dst, const BufferRange &src, const std::vector<Fence> &deps) {
    const Device &from = src.buffer->device(), &to = dst.buffer->device();
    Buffer out = from.allocate(src.size, Region::host), in = to.allocate(src.size, Region::host);
    Fence first = from.copy(out.range(0, src.size), src, deps);
    first.wait();
    std::memcpy(in.map().data(), out.map().data(), src.size);
    // The buffers may go: the driver keeps them while the copy uses them.
    return to.copy(dst, in.range(0, src.size));
}

} // namespace

Fence Device::copy(const BufferRange &dst, const BufferRange &src, const std::vector<Fence> &deps,
                   unsigned engine) const {
    const auto &dev = *state_;
    std::string what = fmt::format("{}: copy", dev.path);
    if (!dst.buffer || !src.buffer || !*dst.buffer || !*src.buffer)
        throw Error(errc::invalid_argument, what + ": a null or empty buffer");
    const bool dst_here = dst.buffer->device().state() == state_;
    const bool src_here = src.buffer->device().state() == state_;
    if (!dst_here && !src_here)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: neither buffer is of this device (source of {}, "
                                "destination of {}): a copy runs on the device of one of them",
                                what, src.buffer->device().path(), dst.buffer->device().path()));
    if (dst.size != src.size || dst.size == 0)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: source has {} bytes, destination {}: they must be equal and "
                                "non-zero",
                                what, src.size, dst.size));
    if (engine != any_engine && engine >= dev.info.num_dma_engines)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: DMA engine {} does not exist (the device has {})", what,
                                engine, dev.info.num_dma_engines));
    const uint32_t src_handle = detail::handle_in(state_, *src.buffer);
    const uint32_t dst_handle = detail::handle_in(state_, *dst.buffer);
    if (!src_handle || !dst_handle)
        return staged_copy(dst, src, deps);
    auto syncs = detail::make_in_syncs(dev, deps, what);
    auto fs = std::make_shared<detail::FenceState>();
    fs->device = state_;
    fs->syncobj = detail::create_syncobj(dev);
    drm_neuron_copy c{};
    c.src_handle = src_handle;
    c.dst_handle = dst_handle;
    c.src_offset = src.offset;
    c.dst_offset = dst.offset;
    c.size = src.size;
    c.engine = engine;
    c.in_syncs = reinterpret_cast<uintptr_t>(syncs.list.data());
    c.num_in_syncs = static_cast<uint32_t>(syncs.list.size());
    c.out_sync.handle = fs->syncobj;
    if (int e = dev.ioctl(DRM_IOCTL_NEURON_COPY, &c))
        detail::throw_errno(e,
                            fmt::format("{} of {} bytes (buffer {} +{} -> buffer {} +{})", what,
                                        c.size, c.src_handle, c.src_offset, c.dst_handle,
                                        c.dst_offset),
                            e == ENOTTY || e == EINVAL ? "(does this driver implement COPY?)" : "");
    fs->seqno = c.seqno;
    fs->bytes = c.size;
    return Fence(std::move(fs));
}

} // namespace neuron
