// SPDX-License-Identifier: MIT
// Loading programs and submitting jobs.
#include <exception>

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

/// "/dev/accel/accel0: submitting program 'gelu' to core 0", the start of
/// a SUBMIT's error messages, formatted only for an error.
struct SubmitWhat {
    const detail::DeviceState &dev;
    const Program &program;
    unsigned core;
    std::string operator()() const {
        return fmt::format("{}: submitting program '{}' to core {}", dev.path, program.name(),
                           core);
    }
};

/// A job's binding table, as SUBMIT takes it.
struct BindingTable {
    std::vector<drm_neuron_binding> slots;
    bool host = false; ///< some slot is host memory
};

/// The table of @p args for @p lp: each argument in its slot with the
/// rights of its direction, the constants, and the program's own image
/// when it has no slot at all (the UAPI wants one).
BindingTable bind_arguments(const Device &device, const LoadedProgram &lp, const Arguments &args,
                            const SubmitWhat &what) {
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
                        fmt::format("{}: it has no argument '{}' (its arguments: {})", what(),
                                    e.name, names.empty() ? "none" : names));
        }
        const BufferRange &r = e.range;
        if (!r.buffer || !*r.buffer)
            throw Error(errc::invalid_argument,
                        fmt::format("{}: argument '{}' is bound to no buffer", what(), e.name));
        if (r.buffer->device().state() != device.state())
            throw Error(errc::invalid_argument,
                        fmt::format("{}: argument '{}' is a buffer of another open device", what(),
                                    e.name));
        if (r.size < a->size || r.offset > r.buffer->size() || r.size > r.buffer->size() - r.offset)
            throw Error(errc::invalid_argument,
                        fmt::format("{}: argument '{}' ({}) needs {} bytes, but is bound to {} "
                                    "bytes at offset {} of a {}-byte buffer",
                                    what(), e.name, to_string(a->dtype), a->size, r.size, r.offset,
                                    r.buffer->size()));
        auto &b = t.slots[a->slot];
        b.handle = r.buffer->handle();
        b.offset = r.offset;
        b.size = r.size;
        b.flags = a->direction == Direction::in ? DRM_NEURON_BIND_READ
                  : a->direction == Direction::out && !a->accumulated
                      ? DRM_NEURON_BIND_WRITE
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
                        fmt::format("{}: argument '{}' ({} {}, {} bytes) is not bound", what(),
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

/// One job with its SUBMIT arguments built and checked, not yet queued.
/// The arguments point into the table and the syncs: do not copy it.
struct PreparedJob {
    BindingTable table;
    detail::InSyncs syncs;
    std::shared_ptr<detail::FenceState> fence;
    drm_neuron_submit submit{};
    const Program *program = nullptr;

    PreparedJob() = default;
    PreparedJob(const PreparedJob &) = delete;
    PreparedJob &operator=(const PreparedJob &) = delete;
};

/// Everything a SUBMIT of @p lp with @p args needs, checked as far as
/// libneuron can, into @p job.
void prepare_job(PreparedJob &job, const Device &device, unsigned core, const LoadedProgram &lp,
                 const Arguments &args, const std::vector<Fence> &deps, const Profile *profile) {
    const auto &dev = *device.state();
    const Program &p = lp.program();
    const SubmitWhat what{dev, p, core};
    if (lp.buffer().device().state() != device.state())
        throw Error(errc::invalid_argument,
                    what() + ": the program was loaded on another open device");
    job.table = bind_arguments(device, lp, args, what);
    auto &bind = job.table.slots;
    if (profile) {
        // The trace buffer: one more slot, the last, which the driver
        // hands to the device as the job's trace binding.
        const Buffer &tb = profile->buffer();
        if (tb.device().state() != device.state())
            throw Error(errc::invalid_argument,
                        what() + ": its profile was created on another open device");
        drm_neuron_binding t{};
        t.handle = tb.handle();
        // Exactly the records asked for: the buffer is rounded up to pages.
        t.size = trace_format::header_size + profile->max_records() * trace_format::record_size;
        t.flags = DRM_NEURON_BIND_WRITE;
        bind.push_back(t);
        job.table.host |= tb.region() == Region::host;
    }
    const auto nslots = static_cast<uint32_t>(bind.size());
    if (nslots > dev.info.max_bindings)
        throw Error(errc::not_supported,
                    fmt::format("{}: it uses {} binding slots{}, the device allows {}", what(),
                                nslots, profile ? " (the trace's included)" : "",
                                dev.info.max_bindings));
    if (job.table.host && !dev.info.has(cap_host_bindings))
        throw Error(
            errc::not_supported,
            fmt::format("{}: a host-memory buffer is bound, but the device cannot bind host "
                        "memory (no CAP_HOST_BINDINGS): use Region::device",
                        what()));

    if (!deps.empty())
        job.syncs = detail::make_in_syncs(dev, deps, what());
    job.fence = std::make_shared<detail::FenceState>();
    job.fence->device = device.state();
    job.fence->syncobj = detail::create_syncobj(dev);
    job.program = &p;
    drm_neuron_submit &s = job.submit;
    s.core = core;
    s.program_handle = lp.buffer().handle();
    s.program_offset = 0;
    s.program_size = lp.image_size();
    s.num_bindings = nslots;
    s.bindings = reinterpret_cast<uintptr_t>(bind.data());
    s.in_syncs = reinterpret_cast<uintptr_t>(job.syncs.list.data());
    s.num_in_syncs = static_cast<uint32_t>(job.syncs.list.size());
    s.out_sync.handle = job.fence->syncobj;
    s.flags = profile ? DRM_NEURON_SUBMIT_F_PROFILE : 0;
}

/// The fence state of a queued job.
std::shared_ptr<detail::FenceState> queued(PreparedJob &job) {
    job.fence->seqno = job.submit.seqno;
    job.fence->program = job.program->name();
    job.fence->core = job.submit.core;
    return std::move(job.fence);
}

/// The driver's reason for refusing a SUBMIT, for an error message.
std::string submit_refused(int e) {
    return e == EINVAL ? "the driver rejected the job's arguments" : "";
}

constexpr uint32_t batch_ioctl_api = 1u << 16 | 3;

} // namespace

Fence Queue::submit_job(const LoadedProgram &lp, const Arguments &args,
                        const std::vector<Fence> &deps, const Profile *profile) const {
    const auto &dev = *device_.state();
    PreparedJob job;
    prepare_job(job, device_, core_, lp, args, deps, profile);
    if (int e = dev.ioctl(DRM_IOCTL_NEURON_SUBMIT, &job.submit))
        detail::throw_errno(e, SubmitWhat{dev, lp.program(), core_}(), submit_refused(e));
    return Fence(queued(job));
}

std::vector<Fence> Queue::submit(std::span<const Job> jobs) const {
    const auto &dev = *device_.state();
    std::vector<Fence> fences;
    fences.reserve(jobs.size());
    // Profiled jobs are captured one by one; so are jobs for a driver
    // older than the batch ioctl.
    const bool one_by_one = !dev.profile_file.empty() || dev.info.api_version < batch_ioctl_api;
    // If a job is refused, the jobs already queued are waited for before
    // the error leaves, so that none is left running unseen.
    struct WaitIfUnwinding {
        const std::vector<Fence> &queued;
        const int exceptions = std::uncaught_exceptions();
        ~WaitIfUnwinding() {
            if (std::uncaught_exceptions() > exceptions)
                for (const auto &f : queued)
                    (void)f.try_wait(std::chrono::nanoseconds::max());
        }
    } wait_if_unwinding{fences};
    if (one_by_one) {
        for (const auto &j : jobs)
            fences.push_back(submit(j.program, j.args, j.deps));
        return fences;
    }

    // Every job is checked before any is queued.
    std::vector<PreparedJob> prepared(jobs.size());
    for (size_t i = 0; i < jobs.size(); i++)
        prepare_job(prepared[i], device_, core_, jobs[i].program, jobs[i].args, jobs[i].deps,
                    nullptr);
    std::vector<drm_neuron_submit> entries(jobs.size());
    for (size_t i = 0; i < jobs.size(); i++)
        entries[i] = prepared[i].submit;
    for (size_t first = 0; first < jobs.size(); first += DRM_NEURON_MAX_BATCH) {
        const size_t n = std::min<size_t>(DRM_NEURON_MAX_BATCH, jobs.size() - first);
        drm_neuron_submit_batch b{};
        b.submits = reinterpret_cast<uintptr_t>(&entries[first]);
        b.count = static_cast<uint32_t>(n);
        if (int e = dev.ioctl(DRM_IOCTL_NEURON_SUBMIT_BATCH, &b))
            detail::throw_errno(
                e,
                fmt::format("{}: submitting jobs {}..{} of a batch of {} to core {} (program "
                            "'{}' first); none of these was queued",
                            dev.path, first, first + n - 1, jobs.size(), core_,
                            jobs[first].program.program().name()),
                submit_refused(e));
        for (size_t i = first; i < first + n; i++) {
            prepared[i].submit.seqno = entries[i].seqno;
            fences.push_back(Fence(queued(prepared[i])));
        }
    }
    return fences;
}

} // namespace neuron
