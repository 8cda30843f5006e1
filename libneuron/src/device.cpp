// SPDX-License-Identifier: MIT
// Devices: sysfs enumeration, opening, GET_PARAM, buffers, fences, copies.
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/sync_file.h>
#include <xf86drm.h>

#include "drm/neuron_accel.h"
#include "internal.hpp"

#include <neuron/queue.hpp>

namespace fs = std::filesystem;

namespace neuron {
namespace detail {

DeviceState::~DeviceState() {
    if (fd >= 0)
        ::close(fd);
}

int DeviceState::ioctl(unsigned long request, void *arg) const noexcept {
    return drmIoctl(fd, request, arg) ? errno : 0;
}

BufferState::~BufferState() {
    auto *p = map.load();
    if (p)
        ::munmap(p, size);
    if (handle) {
        drm_gem_close c{};
        c.handle = handle;
        (void)device.state()->ioctl(DRM_IOCTL_GEM_CLOSE, &c);
    }
}

FenceState::~FenceState() {
    if (syncobj)
        drmSyncobjDestroy(device->fd, syncobj);
}

// libdrm's drmSyncobjCreate() and drmSyncobjExportSyncFile() return -1, not
// -errno, on failure: the ioctls are made directly so that errno is kept.
uint32_t create_syncobj(const DeviceState &dev) {
    drm_syncobj_create args{};
    if (int e = dev.ioctl(DRM_IOCTL_SYNCOBJ_CREATE, &args); e)
        throw_errno(e, dev.path + ": creating a DRM syncobj",
                    e == EOPNOTSUPP ? "the driver does not offer DRM syncobjs (DRIVER_SYNCOBJ), "
                                      "which copies and jobs need"
                                    : "");
    return args.handle;
}

} // namespace detail

using detail::throw_errno;

// --- enumeration -------------------------------------------------------------------

SysPaths SysPaths::from_env() {
    SysPaths p;
    if (const char *s = std::getenv("NEURON_SYSFS_ROOT"); s && *s)
        p.sysfs_root = s;
    if (const char *d = std::getenv("NEURON_DEV_ROOT"); d && *d)
        p.dev_root = d;
    return p;
}

namespace {

std::string read_line(const fs::path &p) {
    std::ifstream f(p);
    std::string s;
    if (f)
        std::getline(f, s);
    return s;
}

bool parse_accel_name(const std::string &name, unsigned &index) {
    if (name.size() <= 5 || name.compare(0, 5, "accel") != 0)
        return false;
    unsigned long v = 0;
    for (size_t i = 5; i < name.size(); i++) {
        if (!std::isdigit(static_cast<unsigned char>(name[i])) || v > 1000000)
            return false;
        v = v * 10 + static_cast<unsigned>(name[i] - '0');
    }
    index = static_cast<unsigned>(v);
    return true;
}

} // namespace

std::optional<std::string> normalize_pci_address(std::string_view s) {
    // [DDDD:]BB:DD.F, hex.
    auto hex = [](std::string_view t, size_t max_digits, unsigned long &out) {
        if (t.empty() || t.size() > max_digits)
            return false;
        out = 0;
        for (char c : t) {
            if (!std::isxdigit(static_cast<unsigned char>(c)))
                return false;
            out = out * 16 + static_cast<unsigned long>(std::isdigit(static_cast<unsigned char>(c))
                                                            ? c - '0'
                                                            : std::tolower(c) - 'a' + 10);
        }
        return true;
    };
    unsigned long dom = 0, bus = 0, dev = 0, fn = 0;
    auto c1 = s.find(':');
    if (c1 == std::string_view::npos)
        return std::nullopt;
    auto c2 = s.find(':', c1 + 1);
    std::string_view rest = s;
    if (c2 != std::string_view::npos) {
        if (!hex(s.substr(0, c1), 4, dom))
            return std::nullopt;
        rest = s.substr(c1 + 1);
    }
    auto c = rest.find(':');
    auto dot = rest.find('.');
    if (c == std::string_view::npos || dot == std::string_view::npos || dot < c)
        return std::nullopt;
    if (!hex(rest.substr(0, c), 2, bus) || !hex(rest.substr(c + 1, dot - c - 1), 2, dev) ||
        !hex(rest.substr(dot + 1), 1, fn) || dev > 0x1f || fn > 7)
        return std::nullopt;
    return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", dom, bus, dev, fn);
}

std::vector<DeviceEntry> enumerate(const SysPaths &paths) {
    std::vector<DeviceEntry> out;
    fs::path cls = fs::path(paths.sysfs_root) / "class" / "accel";
    std::error_code ec;
    fs::directory_iterator it(cls, ec);
    if (ec)
        return out;
    for (const auto &de : it) {
        unsigned index = 0;
        std::string name = de.path().filename().string();
        if (!parse_accel_name(name, index))
            continue;
        fs::path dev = de.path() / "device";
        fs::path drv = fs::read_symlink(dev / "driver", ec);
        if (ec || drv.filename() != "neuron")
            continue;
        DeviceEntry e;
        e.index = index;
        e.node = (fs::path(paths.dev_root) / "accel" / name).string();
        e.sysfs_path = de.path().string();
        fs::path real = fs::canonical(dev, ec);
        std::string bdf =
            ec ? fs::read_symlink(dev, ec).filename().string() : real.filename().string();
        e.pci_address = normalize_pci_address(bdf).value_or(bdf);
        e.vendor_id =
            static_cast<uint16_t>(std::strtoul(read_line(dev / "vendor").c_str(), nullptr, 16));
        e.device_id =
            static_cast<uint16_t>(std::strtoul(read_line(dev / "device").c_str(), nullptr, 16));
        std::string numa = read_line(dev / "numa_node");
        e.numa_node = numa.empty() ? -1 : std::atoi(numa.c_str());
        out.push_back(std::move(e));
    }
    std::sort(out.begin(), out.end(),
              [](const DeviceEntry &a, const DeviceEntry &b) { return a.index < b.index; });
    return out;
}

// --- opening -----------------------------------------------------------------------

namespace {

std::string no_device_hint(const SysPaths &paths) {
    fs::path cls = fs::path(paths.sysfs_root) / "class" / "accel";
    std::error_code ec;
    if (!fs::exists(cls, ec))
        return fmt::format("{} does not exist: the kernel has no accel devices "
                           "(is neuron.ko loaded? try 'modprobe neuron')",
                           cls.string());
    return fmt::format("no accel device in {} is bound to the neuron driver "
                       "(is neuron.ko loaded? try 'modprobe neuron')",
                       cls.string());
}

std::string permission_hint(const std::string &node) {
    struct stat st {};
    if (::stat(node.c_str(), &st) != 0)
        return "check the permissions of the device node";
    std::string group = std::to_string(st.st_gid);
    std::vector<char> buf(4096);
    struct group grp {};
    struct group *res = nullptr;
    if (getgrgid_r(st.st_gid, &grp, buf.data(), buf.size(), &res) == 0 && res)
        group = res->gr_name;
    if ((st.st_mode & S_IRGRP) && (st.st_mode & S_IWGRP) && st.st_gid != 0)
        return fmt::format("add the user to group {} (the node is mode {:04o}, group {})", group,
                           st.st_mode & 07777, group);
    return fmt::format("the node is mode {:04o}, group {}: install the neuron udev rules "
                       "(udev/) so that group render may use it, or run as root",
                       st.st_mode & 07777, group);
}

} // namespace

Device Device::open(unsigned index, const SysPaths &paths) {
    auto devs = enumerate(paths);
    for (const auto &d : devs)
        if (d.index == index)
            return open_node(d.node, d.pci_address);
    if (devs.empty())
        throw Error(errc::no_device, fmt::format("neuron device {}: no neuron devices: {}", index,
                                                 no_device_hint(paths)));
    std::string have;
    for (const auto &d : devs)
        have += fmt::format("{}{} ({})", have.empty() ? "" : ", ", d.index, d.pci_address);
    throw Error(
        errc::no_device,
        fmt::format("neuron device {}: no such device: the neuron devices are {}", index, have));
}

Device Device::open_first(const SysPaths &paths) {
    auto devs = enumerate(paths);
    if (devs.empty())
        throw Error(errc::no_device, fmt::format("no neuron devices: {}", no_device_hint(paths)));
    return open_node(devs.front().node, devs.front().pci_address);
}

Device Device::open(std::string_view spec, const SysPaths &paths) {
    if (spec.empty())
        return open_first(paths);
    if (spec.front() == '/' || spec.front() == '.')
        return open_node(std::string(spec), {});
    if (std::all_of(spec.begin(), spec.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        spec.size() < 8)
        return open(static_cast<unsigned>(std::stoul(std::string(spec))), paths);
    if (auto bdf = normalize_pci_address(spec)) {
        auto devs = enumerate(paths);
        for (const auto &d : devs)
            if (d.pci_address == *bdf)
                return open_node(d.node, d.pci_address);
        std::string have;
        for (const auto &d : devs)
            have += fmt::format("{}{}", have.empty() ? "" : ", ", d.pci_address);
        throw Error(errc::no_device,
                    fmt::format("PCI device {}: no neuron device at this address: {}", *bdf,
                                devs.empty() ? no_device_hint(paths)
                                             : "the neuron devices are at " + have));
    }
    throw Error(errc::invalid_argument,
                fmt::format("'{}': not a device: expected a device node path (/dev/accel/accel0), "
                            "an index (0) or a PCI address (0000:00:03.0)",
                            spec));
}

namespace {

uint64_t get_param(const detail::DeviceState &s, uint32_t param, bool optional = false) {
    drm_neuron_get_param p{};
    p.param = param;
    if (int e = s.ioctl(DRM_IOCTL_NEURON_GET_PARAM, &p)) {
        if (optional && e == EINVAL)
            return 0;
        throw_errno(e, fmt::format("{}: GET_PARAM {}", s.path, param));
    }
    return p.value;
}

} // namespace

Device Device::open_node(const std::string &node, const std::string &pci_hint) {
    int fd = ::open(node.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == EACCES || e == EPERM)
            throw Error(errc::permission_denied,
                        fmt::format("{}: permission denied: {}", node, permission_hint(node)));
        if (e == ENOENT || e == ENXIO || e == ENODEV)
            throw Error(errc::no_device,
                        fmt::format("{}: {}: the device node does not exist (is neuron.ko "
                                    "loaded and the device bound?)",
                                    node, detail::errno_text(e)));
        throw_errno(e, node + ": open");
    }
    auto s = std::make_shared<detail::DeviceState>();
    s->fd = fd;
    s->path = node;

    drmVersionPtr v = drmGetVersion(fd);
    if (!v)
        throw Error(errc::not_supported,
                    fmt::format("{}: not a DRM device (DRM_IOCTL_VERSION failed: {})", node,
                                detail::errno_text(errno)));
    std::string drv(v->name ? v->name : "");
    drmFreeVersion(v);
    if (drv != "neuron")
        throw Error(errc::not_supported,
                    fmt::format("{}: not a neuron device (its driver is '{}')", node, drv));

    DeviceInfo &i = s->info;
    uint64_t api = get_param(*s, DRM_NEURON_PARAM_API_VERSION);
    i.api_version = static_cast<uint32_t>(api);
    if ((api >> 16) != DRM_NEURON_API_VERSION_MAJOR)
        throw Error(errc::not_supported,
                    fmt::format("{}: the driver speaks UAPI {}.{}, this library {}.{}", node,
                                api >> 16, api & 0xffff, DRM_NEURON_API_VERSION_MAJOR,
                                DRM_NEURON_API_VERSION_MINOR));
    uint64_t id = get_param(*s, DRM_NEURON_PARAM_DEVICE_ID);
    i.vendor_id = static_cast<uint16_t>(id >> 16);
    i.device_id = static_cast<uint16_t>(id);
    i.revision = static_cast<uint32_t>(get_param(*s, DRM_NEURON_PARAM_DEVICE_REVISION));
    i.num_cores = static_cast<uint32_t>(get_param(*s, DRM_NEURON_PARAM_NUM_CORES));
    i.num_dma_engines = static_cast<uint32_t>(get_param(*s, DRM_NEURON_PARAM_NUM_DMA_ENGINES));
    i.device_memory_size = get_param(*s, DRM_NEURON_PARAM_DEVICE_MEM_SIZE);
    i.sbuf_size = get_param(*s, DRM_NEURON_PARAM_SBUF_SIZE);
    i.psum_size = get_param(*s, DRM_NEURON_PARAM_PSUM_SIZE);
    i.partitions = static_cast<uint32_t>(get_param(*s, DRM_NEURON_PARAM_PARTITIONS));
    i.hw_version = static_cast<uint32_t>(get_param(*s, DRM_NEURON_PARAM_HW_VERSION));
    i.fw_version = static_cast<uint32_t>(get_param(*s, DRM_NEURON_PARAM_FW_VERSION));
    i.capabilities = get_param(*s, DRM_NEURON_PARAM_CAPABILITIES);
    i.core_clock_mhz = static_cast<uint32_t>(get_param(*s, DRM_NEURON_PARAM_CORE_CLOCK_MHZ));
    i.max_bindings = static_cast<uint32_t>(get_param(*s, DRM_NEURON_PARAM_MAX_BINDINGS));
    uint64_t bus = get_param(*s, DRM_NEURON_PARAM_PCI_BUS_INFO);
    // DRM_NEURON_PCI_DOMAIN() and friends, without their C casts.
    i.pci_address = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", static_cast<uint32_t>(bus >> 32),
                                static_cast<uint8_t>(bus >> 8), (bus >> 3) & 0x1f, bus & 0x7);
    (void)pci_hint;
    return Device(std::move(s));
}

const DeviceInfo &Device::info() const {
    return state_->info;
}
const std::string &Device::path() const {
    return state_->path;
}
int Device::fd() const {
    return state_->fd;
}

Queue Device::queue(unsigned core) const {
    if (core >= state_->info.num_cores)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: core {} does not exist: the device has {} core(s)",
                                state_->path, core, state_->info.num_cores));
    return Queue(*this, core);
}

// --- buffers -----------------------------------------------------------------------

namespace {

std::string human_size(uint64_t n) {
    if (n >= (1ull << 30) && n % (1ull << 20) == 0)
        return fmt::format("{:.1f} GiB", static_cast<double>(n) / (1ull << 30));
    if (n >= (1ull << 20))
        return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1ull << 20));
    if (n >= (1ull << 10))
        return fmt::format("{:.1f} KiB", static_cast<double>(n) / (1ull << 10));
    return fmt::format("{} bytes", n);
}

} // namespace

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
            void *m = ::mmap(nullptr, s.size, PROT_READ | PROT_WRITE, MAP_SHARED, s.device.fd(),
                             static_cast<off_t>(s.mmap_offset));
            if (m == MAP_FAILED)
                throw_errno(errno, fmt::format("{}: mapping buffer {} ({})", s.device.path(),
                                               s.handle, human_size(s.size)));
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

// --- fences ------------------------------------------------------------------------

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

int64_t abs_timeout(std::chrono::nanoseconds t) {
    if (t.count() <= 0)
        return 0;
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    if (t.count() > INT64_MAX - now)
        return INT64_MAX;
    return now + t.count();
}

} // namespace

std::error_code Fence::try_wait(std::chrono::nanoseconds timeout) const noexcept {
    if (!state_)
        return errc::invalid_argument;
    const auto &s = *state_;
    uint32_t h = s.syncobj;
    int r = drmSyncobjWait(s.device->fd, &h, 1, abs_timeout(timeout),
                           DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL | DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
                           nullptr);
    std::lock_guard<std::mutex> g(s.lock);
    if (r == -ETIME || r == -ETIMEDOUT) {
        s.last_message = fmt::format("{}: still running after the wait's timeout", s.label);
        return errc::timeout;
    }
    if (r) {
        s.last_message = fmt::format("{}: waiting for it: {}", s.label, detail::errno_text(-r));
        return detail::errc_from_errno(-r);
    }
    // DRM syncobj waits do not report fence errors: read the fence status
    // through a sync file.
    drm_syncobj_handle exported{};
    exported.handle = h;
    exported.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
    exported.fd = -1;
    if (int e = s.device->ioctl(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &exported); e) {
        s.last_message = fmt::format("{}: reading its status: {}", s.label, detail::errno_text(e));
        return detail::errc_from_errno(e);
    }
    const int sfd = exported.fd;
    sync_file_info info{};
    int ir = ::ioctl(sfd, SYNC_IOC_FILE_INFO, &info);
    int ierr = errno;
    ::close(sfd);
    if (ir) {
        s.last_message =
            fmt::format("{}: reading its status: {}", s.label, detail::errno_text(ierr));
        return detail::errc_from_errno(ierr);
    }
    if (info.status < 0) {
        int err = -info.status;
        s.last_message = fmt::format("{} failed: {}", s.label, fence_failure(err));
        return fence_errc(err);
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

std::string Fence::message() const {
    if (!state_)
        return "empty fence";
    std::lock_guard<std::mutex> g(state_->lock);
    return state_->last_message;
}

const std::string &Fence::label() const {
    static const std::string empty = "empty fence";
    return state_ ? state_->label : empty;
}
uint32_t Fence::syncobj() const {
    return state_ ? state_->syncobj : 0;
}
uint64_t Fence::seqno() const {
    return state_ ? state_->seqno : 0;
}

// --- copies ------------------------------------------------------------------------

namespace {

std::vector<drm_neuron_sync> in_syncs(const detail::DeviceState &dev,
                                      const std::vector<Fence> &deps, const std::string &what) {
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

} // namespace

namespace detail {
std::vector<drm_neuron_sync> make_in_syncs(const DeviceState &dev, const std::vector<Fence> &deps,
                                           const std::string &what) {
    return in_syncs(dev, deps, what);
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
    auto syncs = in_syncs(dev, deps, what);
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
        throw_errno(e,
                    fmt::format("{} of {} bytes (buffer {} +{} -> buffer {} +{})", what, c.size,
                                c.src_handle, c.src_offset, c.dst_handle, c.dst_offset),
                    e == ENOTTY || e == EINVAL ? "(does this driver implement COPY?)" : "");
    fs->seqno = c.seqno;
    fs->label = fmt::format("copy {} ({} bytes) on {}", c.seqno, c.size, dev.path);
    return Fence(std::move(fs));
}

} // namespace neuron
