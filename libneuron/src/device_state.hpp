// SPDX-License-Identifier: MIT
// The state behind Device, Buffer and Fence, shared by the translation
// units that talk to the driver (through the OS seam, os.hpp).
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

#include <neuron/buffer.hpp>
#include <neuron/device.hpp>
#include <neuron/profile.hpp>
#include <neuron/queue.hpp>

#include "drm/neuron_accel.h"
#include "internal.hpp"
#include "os.hpp"

namespace neuron {
namespace detail {

struct DeviceState {
    std::shared_ptr<Os> os;
    int fd = -1;
    std::string path;
    DeviceInfo info;
    /// Prefix of the device's telemetry files (docs/telemetry.md) for
    /// Os::read_line: the PCI device's neuron/ directory in sysfs, empty for
    /// the simulator, which serves them by their bare names.
    std::string telemetry_dir;
    /// Syncobjs of fences that are gone, taken again by the next job or
    /// copy: each would otherwise cost a create and a destroy ioctl. The
    /// kernel frees them with the file.
    static constexpr size_t max_idle_syncobjs = 64;
    mutable std::mutex syncobj_lock;
    mutable std::vector<uint32_t> idle_syncobjs;
    /// $NEURON_PROFILE and $NEURON_PROFILE_RECORDS, read once when the
    /// device is opened: the file every job submitted through it is
    /// profiled into (empty: none), and the records each trace has room for.
    std::string profile_file;
    uint64_t profile_records = Profile::default_records;
    /// Trace buffers of released profiled jobs ($NEURON_PROFILE), taken
    /// again by the next one instead of allocating 3 MiB per job. While
    /// idle their Buffer does not hold the device (that would be a cycle):
    /// ~DeviceState frees them.
    static constexpr size_t max_idle_profiles = 8;
    mutable std::mutex profile_lock;
    mutable std::vector<Profile> idle_profiles;

    ~DeviceState();
    /// An ioctl on the device file; returns 0 or the errno.
    int ioctl(unsigned long request, void *arg) const noexcept {
        return os->ioctl(fd, request, arg);
    }
};

/// The state behind a Buffer, for the pool of trace buffers.
struct BufferAccess {
    static BufferState &state(const Buffer &b) { return *b.state_; }
    /// An idle trace buffer lets go of its device, a taken one holds it again.
    static void detach(const Buffer &b);
    static void attach(const Buffer &b, const Device &d);
};

struct BufferState {
    Device device;
    /// Handles of this buffer in other devices' files (PRIME imports, made
    /// by cross-device copies), closed with the buffer on the devices still open.
    mutable std::mutex import_lock;
    mutable std::vector<std::pair<std::weak_ptr<DeviceState>, uint32_t>> imports;
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
    /// What the fence stands for, for label(): a job of @c program on
    /// @c core, or a copy of @c bytes (empty @c program).
    std::string program;
    uint32_t core = 0;
    uint64_t bytes = 0;
    /// "job 3 (program 'gelu') on core 0 of /dev/accel/accel0", formatted
    /// on first use: most fences are never named.
    const std::string &label() const;
    mutable std::mutex lock;
    mutable std::string last_message;
    /// Run once the last Fence of the job is gone ($NEURON_PROFILE's capture).
    std::function<void(const FenceState &)> on_release;
    ~FenceState();

  private:
    mutable std::once_flag label_once_;
    mutable std::string label_;
};

inline void BufferAccess::detach(const Buffer &b) {
    b.state_->device.state_.reset();
}
inline void BufferAccess::attach(const Buffer &b, const Device &d) {
    b.state_->device = d;
}

/// A syncobj for a new fence, idle or created; throws on failure.
uint32_t create_syncobj(const DeviceState &dev);

/// The in-syncs of a copy or job. A fence of another open device is
/// exported as a sync file and imported into a syncobj of this one, so that
/// the device waits for it; where that cannot be done (a driver without
/// sync-file import, the simulator and neuron.ko mixed) it is waited for on
/// the host before the work is queued. The imported syncobjs are given back
/// when this is destroyed, after the ioctl that took their fences.
struct InSyncs {
    const DeviceState *dev = nullptr;
    std::vector<drm_neuron_sync> list;
    std::vector<uint32_t> imported;
    InSyncs() = default;
    InSyncs(InSyncs &&o) noexcept
        : dev(o.dev), list(std::move(o.list)), imported(std::move(o.imported)) {
        o.imported.clear();
    }
    InSyncs &operator=(InSyncs &&o) noexcept;
    InSyncs(const InSyncs &) = delete;
    InSyncs &operator=(const InSyncs &) = delete;
    ~InSyncs();
};

/// The in-syncs of a copy or job that waits for @p deps, checked (count,
/// empty fences); @p what prefixes errors.
InSyncs make_in_syncs(const DeviceState &dev, const std::vector<Fence> &deps,
                      const std::string &what);

/// A syncobj of a fence that is gone, back to @p dev's pool (or destroyed).
void release_syncobj(const DeviceState &dev, uint32_t handle);

/// Queue::submit with $NEURON_PROFILE set to @p file: the job, profiled, its
/// trace appended to @p file once its fence is released; an empty Fence
/// (nothing submitted) when the device cannot profile.
Fence submit_captured(const Queue &q, const LoadedProgram &lp, const Arguments &args,
                      const std::vector<Fence> &deps, const std::string &file);
/// Reads $NEURON_PROFILE and $NEURON_PROFILE_RECORDS into @p s (at open);
/// throws Error(invalid_argument) for a bad record count.
void read_profile_env(DeviceState &s);

/// The simulator's options of @p spec ("sim:OPTIONS", or "sim" and
/// $NEURON_SIM_OPTIONS).
std::string sim_options(std::string_view spec);
/// What is wrong with simulator @p options, in the simulator's words
/// (libneuron-sim's parser); nullopt if they are good.
std::optional<std::string> sim_options_error(const std::string &options);
/// Simulator options without their "device=N" item, and N's text ("" if absent).
std::pair<std::string, std::string> split_sim_device(std::string_view options);

/// "8.0 GiB", "4.0 KiB", "12 bytes".
std::string human_size(uint64_t n);

} // namespace detail
} // namespace neuron
