// SPDX-License-Identifier: MIT
// Loading programs and submitting jobs.
#include <fmt/format.h>

#include <neuron/profile.hpp>
#include <neuron/queue.hpp>

#include "device_state.hpp"
#include "drm/neuron_accel.h"

namespace neuron {

namespace {
uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}
} // namespace

LoadedProgram Device::load(const Program &program) const {
    const auto &dev = *state_;
    if (program.isa_version() > dev.info.isa_version)
        throw Error(errc::not_supported,
                    fmt::format("{}: loading program '{}': it needs ISA {}.{}, the device "
                                "implements ISA {}.{}",
                                dev.path, program.name(), program.isa_version() >> 16,
                                program.isa_version() & 0xffff, dev.info.isa_version >> 16,
                                dev.info.isa_version & 0xffff));
    auto image = program.device_image();
    auto consts = program.constants();
    uint64_t const_offset = align_up(image.size(), 4096);
    uint64_t total = const_offset + consts.size();
    // Device memory when there is some; else host memory, which jobs can
    // only use with CAP_HOST_BINDINGS.
    Region region = dev.info.device_memory_size ? Region::device : Region::host;
    if (region == Region::host && !dev.info.has(cap_host_bindings))
        throw Error(errc::not_supported,
                    fmt::format("{}: loading program '{}': the device has no device memory and "
                                "cannot bind host memory",
                                dev.path, program.name()));
    auto buf = std::make_shared<Buffer>(allocate(total, region));
    buf->write(0, image);
    if (!consts.empty())
        buf->write(const_offset, consts);
    return LoadedProgram(program, std::move(buf), image.size(), const_offset, consts.size());
}

Arguments &Arguments::bind(std::string name, const BufferRange &range) {
    for (auto &e : entries_)
        if (e.name == name) {
            e.range = range;
            return *this;
        }
    entries_.push_back(Entry{std::move(name), range});
    return *this;
}

Fence Queue::submit(const LoadedProgram &lp, const Arguments &args,
                    const std::vector<Fence> &deps) const {
    // $NEURON_PROFILE as it was when the device was opened.
    if (const std::string &file = device_.state()->profile_file; !file.empty())
        if (Fence f = detail::submit_captured(*this, lp, args, deps, file))
            return f;
    return submit_job(lp, args, deps, nullptr);
}

Fence Queue::submit(const LoadedProgram &lp, const Arguments &args, const Profile &profile,
                    const std::vector<Fence> &deps) const {
    return submit_job(lp, args, deps, &profile);
}

namespace {

/// A job's binding table, as SUBMIT takes it.
struct BindingTable {
    std::vector<drm_neuron_binding> slots;
    bool host = false; ///< some slot is host memory
};

/// The table of @p args for @p lp: each argument in its slot with the
/// rights of its direction, the constants, and the program's own image
/// when it has no slot at all (the UAPI wants one).
BindingTable bind_arguments(const Device &device, const LoadedProgram &lp, const Arguments &args,
                            const std::string &what) {
    const Program &p = lp.program();
    const uint32_t nslots = p.num_slots();
    BindingTable t;
    t.slots.resize(std::max<uint32_t>(nslots, 1));
    std::vector<bool> bound(nslots, false);
    for (const auto &e : args.entries()) {
        const ArgumentInfo *a = p.find_argument(e.name);
        if (!a || a->direction == Direction::constant) {
            std::string names;
            for (const auto &x : p.arguments())
                if (x.direction != Direction::constant)
                    names += (names.empty() ? "" : ", ") + x.name;
            throw Error(errc::invalid_argument,
                        fmt::format("{}: it has no argument '{}' (its arguments: {})", what, e.name,
                                    names.empty() ? "none" : names));
        }
        const BufferRange &r = e.range;
        if (!r.buffer || !*r.buffer)
            throw Error(errc::invalid_argument,
                        fmt::format("{}: argument '{}' is bound to no buffer", what, e.name));
        if (r.buffer->device().state() != device.state())
            throw Error(
                errc::invalid_argument,
                fmt::format("{}: argument '{}' is a buffer of another open device", what, e.name));
        if (r.size < a->size || r.offset > r.buffer->size() || r.size > r.buffer->size() - r.offset)
            throw Error(errc::invalid_argument,
                        fmt::format("{}: argument '{}' ({}) needs {} bytes, but is bound to {} "
                                    "bytes at offset {} of a {}-byte buffer",
                                    what, e.name, to_string(a->dtype), a->size, r.size, r.offset,
                                    r.buffer->size()));
        auto &b = t.slots[a->slot];
        b.handle = r.buffer->handle();
        b.offset = r.offset;
        b.size = r.size;
        b.flags = a->direction == Direction::in    ? DRM_NEURON_BIND_READ
                  : a->direction == Direction::out ? DRM_NEURON_BIND_WRITE
                                                   : DRM_NEURON_BIND_READ | DRM_NEURON_BIND_WRITE;
        bound[a->slot] = true;
        t.host |= r.buffer->region() == Region::host;
    }
    if (auto cs = p.const_slot()) {
        auto &b = t.slots[*cs];
        b.handle = lp.buffer().handle();
        b.offset = lp.const_offset();
        b.size = lp.const_size();
        b.flags = DRM_NEURON_BIND_READ;
        bound[*cs] = true;
    }
    for (const auto &a : p.arguments())
        if (!bound[a.slot])
            throw Error(errc::invalid_argument,
                        fmt::format("{}: argument '{}' ({} {}, {} bytes) is not bound", what,
                                    a.name, to_string(a.direction), to_string(a.dtype), a.size));
    if (nslots == 0) {
        // The program never names this slot: its own image, read-only.
        t.slots[0].handle = lp.buffer().handle();
        t.slots[0].size = lp.image_size();
        t.slots[0].flags = DRM_NEURON_BIND_READ;
    }
    t.host |= lp.buffer().region() == Region::host;
    return t;
}

} // namespace

Fence Queue::submit_job(const LoadedProgram &lp, const Arguments &args,
                        const std::vector<Fence> &deps, const Profile *profile) const {
    const auto &dev = *device_.state();
    const Program &p = lp.program();
    std::string what =
        fmt::format("{}: submitting program '{}' to core {}", dev.path, p.name(), core_);
    if (lp.buffer().device().state() != device_.state())
        throw Error(errc::invalid_argument,
                    what + ": the program was loaded on another open device");
    BindingTable table = bind_arguments(device_, lp, args, what);
    auto &bind = table.slots;
    if (profile) {
        // The trace buffer: one more slot, the last, which the driver
        // hands to the device as the job's trace binding.
        const Buffer &tb = profile->buffer();
        if (tb.device().state() != device_.state())
            throw Error(errc::invalid_argument,
                        what + ": its profile was created on another open device");
        drm_neuron_binding t{};
        t.handle = tb.handle();
        // Exactly the records asked for: the buffer is rounded up to pages.
        t.size = trace_format::header_size + profile->max_records() * trace_format::record_size;
        t.flags = DRM_NEURON_BIND_WRITE;
        bind.push_back(t);
        table.host |= tb.region() == Region::host;
    }
    const auto nslots = static_cast<uint32_t>(bind.size());
    if (nslots > dev.info.max_bindings)
        throw Error(errc::not_supported,
                    fmt::format("{}: it uses {} binding slots{}, the device allows {}", what,
                                nslots, profile ? " (the trace's included)" : "",
                                dev.info.max_bindings));
    if (table.host && !dev.info.has(cap_host_bindings))
        throw Error(
            errc::not_supported,
            fmt::format("{}: a host-memory buffer is bound, but the device cannot bind host "
                        "memory (no CAP_HOST_BINDINGS): use Region::device",
                        what));

    auto syncs = detail::make_in_syncs(dev, deps, what);
    auto fs = std::make_shared<detail::FenceState>();
    fs->device = device_.state();
    fs->syncobj = detail::create_syncobj(dev);
    drm_neuron_submit s{};
    s.core = core_;
    s.program_handle = lp.buffer().handle();
    s.program_offset = 0;
    s.program_size = lp.image_size();
    s.num_bindings = nslots;
    s.bindings = reinterpret_cast<uintptr_t>(bind.data());
    s.in_syncs = reinterpret_cast<uintptr_t>(syncs.data());
    s.num_in_syncs = static_cast<uint32_t>(syncs.size());
    s.out_sync.handle = fs->syncobj;
    s.flags = profile ? DRM_NEURON_SUBMIT_F_PROFILE : 0;
    if (int e = dev.ioctl(DRM_IOCTL_NEURON_SUBMIT, &s))
        detail::throw_errno(e, what, e == EINVAL ? "the driver rejected the job's arguments" : "");
    fs->seqno = s.seqno;
    fs->label =
        fmt::format("job {} (program '{}') on core {} of {}", s.seqno, p.name(), core_, dev.path);
    return Fence(std::move(fs));
}

} // namespace neuron
