// SPDX-License-Identifier: MIT
// Copies: asynchronous DMA between buffers, ordered by fences.
#include "device_state.hpp"

namespace neuron {

namespace detail {

std::vector<drm_neuron_sync> make_in_syncs(const detail::DeviceState &dev,
                                           const std::vector<Fence> &deps,
                                           const std::string &what) {
    if (deps.size() > DRM_NEURON_MAX_IN_SYNCS)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: {} dependencies, at most {} allowed", what, deps.size(),
                                DRM_NEURON_MAX_IN_SYNCS));
    std::vector<drm_neuron_sync> v;
    for (const auto &f : deps) {
        if (!f)
            throw Error(errc::invalid_argument, what + ": an empty fence among the dependencies");
        if (f.state()->device.get() != &dev)
            throw Error(
                errc::invalid_argument,
                fmt::format("{}: dependency '{}' belongs to another open device", what, f.label()));
        drm_neuron_sync s{};
        s.handle = f.syncobj();
        v.push_back(s);
    }
    return v;
}

} // namespace detail

Fence Device::copy(const BufferRange &dst, const BufferRange &src) const {
    return copy(dst, src, std::vector<Fence>{});
}

Fence Device::copy(const BufferRange &dst, const BufferRange &src, const std::vector<Fence> &deps,
                   unsigned engine) const {
    const auto &dev = *state_;
    std::string what = fmt::format("{}: copy", dev.path);
    if (!dst.buffer || !src.buffer || !*dst.buffer || !*src.buffer)
        throw Error(errc::invalid_argument, what + ": a null or empty buffer");
    if (dst.buffer->device().state() != state_ || src.buffer->device().state() != state_)
        throw Error(errc::invalid_argument, what + ": a buffer of another open device");
    if (dst.size != src.size || dst.size == 0)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: source has {} bytes, destination {}: they must be equal and "
                                "non-zero",
                                what, src.size, dst.size));
    if (engine != any_engine && engine >= dev.info.num_dma_engines)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: DMA engine {} does not exist (the device has {})", what,
                                engine, dev.info.num_dma_engines));
    auto syncs = detail::make_in_syncs(dev, deps, what);
    auto fs = std::make_shared<detail::FenceState>();
    fs->device = state_;
    fs->syncobj = detail::create_syncobj(dev);
    drm_neuron_copy c{};
    c.src_handle = src.buffer->handle();
    c.dst_handle = dst.buffer->handle();
    c.src_offset = src.offset;
    c.dst_offset = dst.offset;
    c.size = src.size;
    c.engine = engine;
    c.in_syncs = reinterpret_cast<uintptr_t>(syncs.data());
    c.num_in_syncs = static_cast<uint32_t>(syncs.size());
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
