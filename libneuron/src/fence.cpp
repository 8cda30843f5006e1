// SPDX-License-Identifier: MIT
// Fences: DRM syncobjs (reused), waits with timeouts and the fence error.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <vector>

#include <linux/sync_file.h>

#include "device_state.hpp"

namespace neuron {
namespace detail {

const std::string &FenceState::label() const {
    std::call_once(label_once_, [this] {
        label_ = program.empty()
                     ? fmt::format("copy {} ({} bytes) on {}", seqno, bytes, device->path)
                     : fmt::format("job {} (program '{}') on core {} of {}", seqno, program, core,
                                   device->path);
    });
    return label_;
}

FenceState::~FenceState() {
    if (on_release) {
        try {
            on_release(*this);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "libneuron: %s: %s\n", label().c_str(), e.what());
        }
    }
    if (syncobj)
        release_syncobj(*device, syncobj);
}

void release_syncobj(const DeviceState &dev, uint32_t handle) {
    {
        std::lock_guard<std::mutex> g(dev.syncobj_lock);
        if (dev.idle_syncobjs.size() < DeviceState::max_idle_syncobjs) {
            dev.idle_syncobjs.push_back(handle);
            return;
        }
    }
    drm_syncobj_destroy d{};
    d.handle = handle;
    (void)dev.ioctl(DRM_IOCTL_SYNCOBJ_DESTROY, &d);
}

// drmSyncobjCreate() returns -1, not -errno, on failure: the ioctl is made
// directly so that errno is kept.
uint32_t create_syncobj(const DeviceState &dev) {
    {
        std::lock_guard<std::mutex> g(dev.syncobj_lock);
        if (!dev.idle_syncobjs.empty()) {
            uint32_t h = dev.idle_syncobjs.back();
            dev.idle_syncobjs.pop_back();
            return h;
        }
    }
    drm_syncobj_create args{};
    if (int e = dev.ioctl(DRM_IOCTL_SYNCOBJ_CREATE, &args); e)
        throw_errno(e, dev.path + ": creating a DRM syncobj",
                    e == EOPNOTSUPP ? "the driver does not offer DRM syncobjs (DRIVER_SYNCOBJ), "
                                      "which copies and jobs need"
                                    : "");
    return args.handle;
}

} // namespace detail

namespace {

std::string fence_failure(int err) {
    switch (err) {
    case EFAULT:
        return "fault: an access outside the job's bindings or without the needed rights "
               "(device status BINDING_RANGE/BINDING_ACCESS/BINDING_INDEX)";
    case EINVAL:
        return "the device rejected the program (malformed header or instruction)";
    case ETIMEDOUT:
        return "timeout: the job exceeded the job timeout and its core was reset";
    case ECANCELED:
        return "reset: aborted by a reset of the core or device";
    case ENODEV:
        return "the device was removed";
    default:
        return fmt::format("failed on the device ({})", detail::errno_name(err));
    }
}

errc fence_errc(int err) {
    switch (err) {
    case EFAULT:
        return errc::job_fault;
    case EINVAL:
        return errc::job_invalid;
    case ETIMEDOUT:
        return errc::job_timeout;
    case ECANCELED:
        return errc::job_aborted;
    case ENODEV:
        return errc::device_lost;
    default:
        return errc::io_error;
    }
}

// DRM syncobj waits take an absolute CLOCK_MONOTONIC time, which is
// steady_clock's on Linux.
int64_t abs_timeout(std::chrono::nanoseconds t) {
    if (t.count() <= 0)
        return 0;
    int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
    if (t.count() > INT64_MAX - now)
        return INT64_MAX;
    return now + t.count();
}

// A sync file of a syncobj's fence (DRM syncobj waits report neither a
// fence's error nor its signal time; SYNC_IOC_FILE_INFO does), closed when
// destroyed.
class SyncFile {
  public:
    SyncFile(const detail::DeviceState &dev, uint32_t syncobj) : dev_(dev) {
        drm_syncobj_handle exported{};
        exported.handle = syncobj;
        exported.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
        exported.fd = -1;
        if (!(export_err_ = dev.ioctl(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &exported)))
            fd_ = exported.fd;
    }
    SyncFile(const SyncFile &) = delete;
    SyncFile &operator=(const SyncFile &) = delete;
    ~SyncFile() {
        if (fd_ >= 0)
            dev_.os->close(fd_);
    }
    /// 0, or the errno of the export (then info() must not be called).
    int export_error() const { return export_err_; }
    /// SYNC_IOC_FILE_INFO: 0 or the errno.
    int info(sync_file_info &info) const { return dev_.os->ioctl(fd_, SYNC_IOC_FILE_INFO, &info); }

  private:
    const detail::DeviceState &dev_;
    int fd_ = -1;
    int export_err_ = 0;
};

// The fence error of a signalled syncobj: 0 or the positive errno, or a
// failure to read it in @p read_err.
int fence_error(const detail::DeviceState &dev, uint32_t syncobj, int &read_err) {
    SyncFile file(dev, syncobj);
    if ((read_err = file.export_error()))
        return 0;
    sync_file_info info{};
    read_err = file.info(info);
    return !read_err && info.status < 0 ? -info.status : 0;
}

// How a wait ended: the wait's errno (ETIME: the deadline passed), else
// the failure to read the fence's status, else the fence's error.
struct WaitResult {
    int wait_err = 0;
    int read_err = 0;
    int fence_err = 0;
};

// Drivers before UAPI 1.1: the generic syncobj wait, then the error read
// back through a sync file (three more system calls).
WaitResult wait_generic(const detail::DeviceState &dev, uint32_t syncobj, int64_t deadline) {
    WaitResult r;
    drm_syncobj_wait w{};
    w.handles = reinterpret_cast<uintptr_t>(&syncobj);
    w.count_handles = 1;
    w.timeout_nsec = deadline;
    w.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL | DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
    if (!(r.wait_err = dev.ioctl(DRM_IOCTL_SYNCOBJ_WAIT, &w)))
        r.fence_err = fence_error(dev, syncobj, r.read_err);
    return r;
}

// UAPI 1.1 and the simulator: DRM_IOCTL_NEURON_WAIT reports the error too.
WaitResult wait_neuron(const detail::DeviceState &dev, uint32_t syncobj, int64_t deadline) {
    WaitResult r;
    drm_neuron_wait w{};
    w.sync.handle = syncobj;
    w.timeout_nsec = deadline;
    if (!(r.wait_err = dev.ioctl(DRM_IOCTL_NEURON_WAIT, &w)))
        r.fence_err = w.status < 0 ? -w.status : 0;
    return r;
}

constexpr uint32_t wait_ioctl_api = 1u << 16 | 1;

} // namespace

std::error_code Fence::try_wait(std::chrono::nanoseconds timeout) const noexcept {
    if (!state_)
        return errc::invalid_argument;
    const auto &s = *state_;
    const auto &dev = *s.device;
    int64_t deadline = abs_timeout(timeout);
    WaitResult r = dev.info.api_version >= wait_ioctl_api ? wait_neuron(dev, s.syncobj, deadline)
                                                          : wait_generic(dev, s.syncobj, deadline);
    std::lock_guard<std::mutex> g(s.lock);
    if (r.wait_err == ETIME || r.wait_err == ETIMEDOUT) {
        s.last_message = fmt::format("{}: still running after the wait's timeout", s.label());
        return errc::timeout;
    }
    if (r.wait_err) {
        s.last_message =
            fmt::format("{}: waiting for it: {}", s.label(), detail::errno_text(r.wait_err));
        return detail::errc_from_errno(r.wait_err);
    }
    if (r.read_err) {
        s.last_message =
            fmt::format("{}: reading its status: {}", s.label(), detail::errno_text(r.read_err));
        return detail::errc_from_errno(r.read_err);
    }
    if (r.fence_err) {
        s.last_message = fmt::format("{} failed: {}", s.label(), fence_failure(r.fence_err));
        return fence_errc(r.fence_err);
    }
    s.last_message.clear();
    return {};
}

bool Fence::wait_for(std::chrono::nanoseconds timeout) const {
    auto ec = try_wait(timeout);
    if (!ec)
        return true;
    if (ec == errc::timeout)
        return false;
    throw Error(ec, message());
}

void Fence::wait() const {
    auto ec = try_wait(std::chrono::nanoseconds::max());
    if (ec)
        throw Error(ec, message());
}

std::optional<std::chrono::steady_clock::time_point> Fence::completed_at() const {
    if (!state_)
        throw Error(errc::invalid_argument, "the completion time of an empty fence");
    const auto &s = *state_;
    auto fail = [&s](const char *doing, int err) {
        return Error(detail::errc_from_errno(err),
                     fmt::format("{}: {}: {}", s.label(), doing, detail::errno_text(err)));
    };
    SyncFile file(*s.device, s.syncobj);
    if (int e = file.export_error())
        throw fail("exporting its fence as a sync file", e);
    // The status and the number of fences first (the kernel unwraps a
    // timeline's chain into the fences of its points), then their times.
    sync_file_info info{};
    if (int e = file.info(info))
        throw fail("reading its status", e);
    if (info.status == 0)
        return std::nullopt;
    if (info.status < 0)
        throw Error(fence_errc(-info.status),
                    fmt::format("{} failed: {}", s.label(), fence_failure(-info.status)));
    std::vector<sync_fence_info> fences(info.num_fences);
    info = {};
    info.num_fences = static_cast<uint32_t>(fences.size());
    info.sync_fence_info = reinterpret_cast<uintptr_t>(fences.data());
    if (int e = file.info(info))
        throw fail("reading its signal time", e);
    // Signalled fences carry the time dma_fence_signal() took (ktime_get(),
    // CLOCK_MONOTONIC); the work completed when the last of them did.
    uint64_t latest = 0;
    for (uint32_t i = 0; i < info.num_fences && i < fences.size(); i++)
        latest = std::max<uint64_t>(latest, fences[i].timestamp_ns);
    if (!latest)
        throw Error(errc::io_error, fmt::format("{}: its sync file reports no signal time "
                                                "(fences: {})",
                                                s.label(), info.num_fences));
    return std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::nanoseconds(static_cast<int64_t>(latest))));
}

std::string Fence::message() const {
    if (!state_)
        return "empty fence";
    std::lock_guard<std::mutex> g(state_->lock);
    return state_->last_message;
}

const std::string &Fence::label() const {
    static const std::string empty = "empty fence";
    return state_ ? state_->label() : empty;
}
uint32_t Fence::syncobj() const {
    return state_ ? state_->syncobj : 0;
}
uint64_t Fence::seqno() const {
    return state_ ? state_->seqno : 0;
}

} // namespace neuron
