// SPDX-License-Identifier: MIT
// The simulated device's driver: neuron.ko's UAPI (uapi/drm/neuron_accel.h)
// and the generic DRM ioctls libneuron uses, with neuron.ko's checks and
// errno for every argument, over in-process memory and the model's cores.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/sync_file.h>
#include <sys/mman.h>

#include "neuron_isa.h"
#include "sim.hpp"

namespace neuron::sim {

namespace {

constexpr uint64_t page = 4096;

uint64_t page_align(uint64_t n) {
    return (n + page - 1) / page * page;
}

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

Device::Device(const Options &o) : opts_(o), memory_(std::make_shared<Memory>(o.mem)) {
    for (uint32_t i = 0; i < o.cores; i++)
        cores_.push_back(std::make_unique<Core>(*this, i));
    for (uint32_t i = 0; i < o.dma; i++)
        dma_.push_back(std::make_unique<Dma>());
    for (auto &c : cores_)
        c->start();
    for (auto &d : dma_)
        d->start();
    // The driver's job timeout: one watchdog for every core.
    watchdog_ = std::thread([this] {
        std::unique_lock<std::mutex> g(watchdog_lock_);
        while (!watchdog_cv_.wait_for(g, std::chrono::milliseconds(5), [&] { return stopping_; }))
            for (auto &c : cores_)
                c->check_timeout(now_ns());
    });
    publisher_ = std::make_unique<Publisher>(*this);
}

Device::~Device() {
    publisher_.reset();
    {
        std::lock_guard<std::mutex> g(watchdog_lock_);
        stopping_ = true;
    }
    watchdog_cv_.notify_all();
    watchdog_.join();
    for (auto &c : cores_)
        c->stop();
    for (auto &d : dma_)
        d->stop();
}

// --- files ------------------------------------------------------------------------

Shared &Shared::get() {
    static Shared s;
    return s;
}

int Shared::add_sync_file(SyncWait w) {
    int fd = next_fd();
    std::lock_guard<std::mutex> g(lock_);
    sync_files_[fd] = std::move(w);
    return fd;
}

int Shared::add_dma_buf(std::shared_ptr<Bo> bo) {
    int fd = next_fd();
    std::lock_guard<std::mutex> g(lock_);
    dma_bufs_[fd] = std::move(bo);
    return fd;
}

std::optional<SyncWait> Shared::sync_file(int fd) const {
    std::lock_guard<std::mutex> g(lock_);
    auto it = sync_files_.find(fd);
    if (it == sync_files_.end())
        return std::nullopt;
    return it->second;
}

std::shared_ptr<Bo> Shared::dma_buf(int fd) const {
    std::lock_guard<std::mutex> g(lock_);
    auto it = dma_bufs_.find(fd);
    return it == dma_bufs_.end() ? nullptr : it->second;
}

void Shared::close(int fd) {
    std::shared_ptr<Bo> bo; // released outside the lock
    std::lock_guard<std::mutex> g(lock_);
    sync_files_.erase(fd);
    if (auto it = dma_bufs_.find(fd); it != dma_bufs_.end()) {
        bo = std::move(it->second);
        dma_bufs_.erase(it);
    }
}

int Device::open(const std::string &) {
    int fd = Shared::get().next_fd();
    std::lock_guard<std::mutex> g(lock_);
    files_[fd] = std::make_shared<File>(next_client_id_++, opts_.cores);
    return fd;
}

void Device::close(int fd) {
    std::shared_ptr<File> f;
    {
        std::lock_guard<std::mutex> g(lock_);
        if (auto it = files_.find(fd); it != files_.end()) {
            f = std::move(it->second);
            files_.erase(it);
        }
    }
    Shared::get().close(fd);
    // Buffers still used by queued work live on in that work.
}

std::shared_ptr<File> Device::file(int fd) {
    std::lock_guard<std::mutex> g(lock_);
    auto it = files_.find(fd);
    return it == files_.end() ? nullptr : it->second;
}

void *Device::mmap(int fd, size_t len, uint64_t offset, int &err) {
    auto f = file(fd);
    if (!f) {
        err = EBADF;
        return nullptr;
    }
    std::lock_guard<std::mutex> g(f->lock);
    for (const auto &[h, bo] : f->bos)
        if (bo->mmap_offset == offset) {
            if (len == 0 || len > bo->size) {
                err = EINVAL;
                return nullptr;
            }
            f->mappings[reinterpret_cast<uintptr_t>(bo->ptr)] = bo;
            return bo->ptr;
        }
    err = EINVAL; // no object at that offset
    return nullptr;
}

void Device::munmap(void *addr, size_t) {
    std::lock_guard<std::mutex> g(lock_);
    for (auto &[fd, f] : files_) {
        std::lock_guard<std::mutex> fg(f->lock);
        f->mappings.erase(reinterpret_cast<uintptr_t>(addr));
    }
}

std::string Device::read_line(const std::string &path) {
    // The counters neuron.ko shows in sysfs, by the same names.
    if (path == "memory_used")
        return std::to_string(memory_->used());
    if (path == "sim_devices") // how many devices the option string makes (enumerate())
        return std::to_string(opts_.devices);
    for (size_t i = 0; i < cores_.size(); i++) {
        std::string dir = fmt::format("core{}/", i);
        if (path.rfind(dir, 0) != 0)
            continue;
        const Counters &c = cores_[i]->counters;
        std::string name = path.substr(dir.size());
        const std::pair<const char *, const std::atomic<uint64_t> *> all[] = {
            {"jobs", &c.jobs},     {"faults", &c.faults},      {"timeouts", &c.timeouts},
            {"resets", &c.resets}, {"busy_ns", &c.busy_ns},    {"instructions", &c.instructions},
            {"flops", &c.flops},   {"dma_bytes", &c.dma_bytes}};
        for (const auto &[n, v] : all)
            if (name == n)
                return std::to_string(v->load());
    }
    return {};
}

// --- ioctls -----------------------------------------------------------------------

int Device::ioctl(int fd, unsigned long request, void *arg) {
    if (request == SYNC_IOC_FILE_INFO)
        return sync_file_info(fd, arg);
    auto f = file(fd);
    if (!f)
        return EBADF;
    switch (request) {
    case DRM_IOCTL_VERSION: {
        auto *v = static_cast<drm_version *>(arg);
        const char name[] = "neuron";
        if (v->name && v->name_len)
            std::memcpy(v->name, name, std::min(v->name_len, sizeof(name) - 1));
        v->name_len = sizeof(name) - 1;
        v->version_major = DRM_NEURON_API_VERSION_MAJOR;
        v->version_minor = DRM_NEURON_API_VERSION_MINOR;
        v->date_len = 0;
        v->desc_len = 0;
        return 0;
    }
    case DRM_IOCTL_NEURON_GET_PARAM:
        return get_param(*static_cast<drm_neuron_get_param *>(arg));
    case DRM_IOCTL_NEURON_BO_CREATE:
        return bo_create(*f, *static_cast<drm_neuron_bo_create *>(arg));
    case DRM_IOCTL_NEURON_BO_INFO:
        return bo_info(*f, *static_cast<drm_neuron_bo_info *>(arg));
    case DRM_IOCTL_GEM_CLOSE:
        return gem_close(*f, *static_cast<drm_gem_close *>(arg));
    case DRM_IOCTL_SYNCOBJ_CREATE:
        return syncobj_create(*f, *static_cast<drm_syncobj_create *>(arg));
    case DRM_IOCTL_SYNCOBJ_DESTROY:
        return syncobj_destroy(*f, *static_cast<drm_syncobj_destroy *>(arg));
    case DRM_IOCTL_SYNCOBJ_WAIT:
        return syncobj_wait(*f, *static_cast<drm_syncobj_wait *>(arg));
    case DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD:
        return syncobj_export(*f, *static_cast<drm_syncobj_handle *>(arg));
    case DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE:
        return syncobj_import(*f, *static_cast<drm_syncobj_handle *>(arg));
    case DRM_IOCTL_PRIME_HANDLE_TO_FD:
        return prime_export(*f, *static_cast<drm_prime_handle *>(arg));
    case DRM_IOCTL_PRIME_FD_TO_HANDLE:
        return prime_import(*f, *static_cast<drm_prime_handle *>(arg));
    case DRM_IOCTL_NEURON_COPY:
        return copy(*f, *static_cast<drm_neuron_copy *>(arg));
    case DRM_IOCTL_NEURON_SUBMIT:
        return submit(*f, *static_cast<drm_neuron_submit *>(arg));
    case DRM_IOCTL_NEURON_WAIT:
        return neuron_wait(*f, *static_cast<drm_neuron_wait *>(arg));
    case DRM_IOCTL_NEURON_SUBMIT_BATCH:
        return submit_batch(*f, *static_cast<drm_neuron_submit_batch *>(arg));
    default:
        return _IOC_TYPE(request) == DRM_IOCTL_BASE ? EINVAL : ENOTTY;
    }
}

uint64_t Device::caps() const {
    return DRM_NEURON_CAP_FP32 | DRM_NEURON_CAP_BF16 | DRM_NEURON_CAP_FP16 |
           DRM_NEURON_CAP_CORE_RESET | DRM_NEURON_CAP_PROFILE |
           (opts_.host_bindings ? DRM_NEURON_CAP_HOST_BINDINGS : 0);
}

int Device::get_param(drm_neuron_get_param &p) const {
    if (p.pad)
        return EINVAL;
    switch (p.param) {
    case DRM_NEURON_PARAM_DEVICE_ID:
        p.value = uint64_t(NEURON_PCI_VENDOR_ID) << 16 | NEURON_PCI_DEVICE_ID;
        return 0;
    case DRM_NEURON_PARAM_DEVICE_REVISION:
        p.value = NEURON_PCI_REVISION;
        return 0;
    case DRM_NEURON_PARAM_NUM_CORES:
        p.value = opts_.cores;
        return 0;
    case DRM_NEURON_PARAM_NUM_DMA_ENGINES:
        p.value = opts_.dma;
        return 0;
    case DRM_NEURON_PARAM_DEVICE_MEM_SIZE:
        p.value = opts_.mem;
        return 0;
    case DRM_NEURON_PARAM_SBUF_SIZE:
        p.value = opts_.sbuf;
        return 0;
    case DRM_NEURON_PARAM_PSUM_SIZE:
        p.value = opts_.psum;
        return 0;
    case DRM_NEURON_PARAM_PARTITIONS:
        p.value = NEURON_PARTITIONS;
        return 0;
    case DRM_NEURON_PARAM_HW_VERSION:
        p.value = NEURON_VERSION_MAJOR << 16 | NEURON_VERSION_MINOR;
        return 0;
    case DRM_NEURON_PARAM_FW_VERSION:
        p.value = 1u << 16;
        return 0;
    case DRM_NEURON_PARAM_CAPABILITIES:
        p.value = caps();
        return 0;
    case DRM_NEURON_PARAM_CORE_CLOCK_MHZ:
        p.value = opts_.clock_mhz;
        return 0;
    case DRM_NEURON_PARAM_MAX_BINDINGS:
        p.value = NEURON_MAX_BINDINGS - 1; // the last slot holds the program
        return 0;
    case DRM_NEURON_PARAM_PCI_BUS_INFO:
        p.value = uint64_t(opts_.device) << 3; // 0000:00:<device>.0 (sim_bdf): on no bus
        return 0;
    case DRM_NEURON_PARAM_API_VERSION:
        p.value = DRM_NEURON_API_VERSION_MAJOR << 16 | DRM_NEURON_API_VERSION_MINOR;
        return 0;
    case DRM_NEURON_PARAM_ISA_VERSION: // the model's cores
        p.value = NEURON_ISA_VERSION_MAJOR << 16 | NEURON_ISA_VERSION_MINOR;
        return 0;
    default:
        return EINVAL;
    }
}

// --- buffers ----------------------------------------------------------------------

int Device::bo_create(File &f, drm_neuron_bo_create &c) {
    if (c.pad || c.flags & ~DRM_NEURON_BO_FLAGS_ALL)
        return EINVAL;
    if (!c.size || c.size > DRM_NEURON_BO_MAX_SIZE)
        return EINVAL;
    auto bo = std::make_shared<Bo>();
    bo->size = page_align(c.size);
    bo->flags = c.flags;
    bo->region = c.region;
    if (c.region == DRM_NEURON_BO_DEVICE) {
        auto off = memory_->allocate(bo->size);
        if (!off) {
            bo->region = DRM_NEURON_BO_HOST; // nothing to release
            return ENOSPC;
        }
        bo->memory = memory_;
        bo->dev_offset = *off;
        bo->ptr = memory_->base() + *off;
    } else if (c.region == DRM_NEURON_BO_HOST) {
        void *m =
            ::mmap(nullptr, bo->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return ENOMEM;
        bo->ptr = static_cast<uint8_t *>(m);
    } else {
        return EINVAL;
    }
    bo->mmap_offset = Shared::get().next_mmap_offset(bo->size);
    std::lock_guard<std::mutex> g(f.lock);
    c.handle = f.next_handle++;
    f.bos[c.handle] = std::move(bo);
    return 0;
}

int Device::bo_info(File &f, drm_neuron_bo_info &i) {
    if (i.pad)
        return EINVAL;
    std::lock_guard<std::mutex> g(f.lock);
    auto it = f.bos.find(i.handle);
    if (it == f.bos.end())
        return ENOENT;
    const Bo &bo = *it->second;
    i.mmap_offset = bo.mmap_offset;
    i.size = bo.size;
    i.region = bo.region;
    i.flags = bo.flags;
    i.device_addr = bo.region == DRM_NEURON_BO_DEVICE && bo.memory == memory_
                        ? bo.dev_offset
                        : DRM_NEURON_BO_NO_DEVICE_ADDR; // host, or another device's
    return 0;
}

int Device::gem_close(File &f, drm_gem_close &c) {
    std::lock_guard<std::mutex> g(f.lock);
    return f.bos.erase(c.handle) ? 0 : EINVAL;
}

// --- syncobjs ---------------------------------------------------------------------

int Device::syncobj_create(File &f, drm_syncobj_create &c) {
    if (c.flags & ~DRM_SYNCOBJ_CREATE_SIGNALED)
        return EINVAL;
    Syncobj obj;
    if (c.flags & DRM_SYNCOBJ_CREATE_SIGNALED) {
        auto fence = std::make_shared<Fence>();
        fence->signal(0);
        obj.replace(std::move(fence));
    }
    std::lock_guard<std::mutex> g(f.lock);
    c.handle = f.next_handle++;
    f.syncobjs[c.handle] = std::move(obj);
    return 0;
}

int Device::syncobj_destroy(File &f, drm_syncobj_destroy &d) {
    if (d.pad)
        return EINVAL;
    std::lock_guard<std::mutex> g(f.lock);
    return f.syncobjs.erase(d.handle) ? 0 : EINVAL;
}

int Device::syncobj_find(File &f, uint32_t handle, uint64_t point, SyncWait &out) {
    std::lock_guard<std::mutex> g(f.lock);
    auto it = f.syncobjs.find(handle);
    if (it == f.syncobjs.end())
        return ENOENT;
    return it->second.find(point, out);
}

int Device::syncobj_wait(File &f, drm_syncobj_wait &w) {
    constexpr uint32_t known =
        DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL | DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
    const uint32_t *handles;
    if (w.flags & ~known || !w.count_handles || w.pad)
        return EINVAL;
    if (int e = user_array(w.handles, w.count_handles, handles))
        return e;
    for (uint32_t i = 0; i < w.count_handles; i++) {
        SyncWait sw;
        for (;;) {
            int e = syncobj_find(f, handles[i], 0, sw);
            if (!e)
                break;
            if (e != EINVAL || !(w.flags & DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT))
                return e;
            if (now_ns() >= w.timeout_nsec)
                return ETIME;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (!sw.wait_until(w.timeout_nsec))
            return ETIME;
        // Without WAIT_ALL one signalled fence is enough.
        if (!(w.flags & DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL)) {
            w.first_signaled = i;
            return 0;
        }
    }
    return 0;
}

int Device::neuron_wait(File &f, drm_neuron_wait &w) {
    w.status = 0;
    if (w.flags & ~DRM_NEURON_WAIT_FLAGS_ALL || w.reserved || w.sync.pad || !w.sync.handle)
        return EINVAL;
    SyncWait sw;
    if (int e = syncobj_find(f, w.sync.handle, w.sync.point, sw))
        return e;
    if (!sw.wait_until(w.timeout_nsec))
        return ETIME;
    // A timeline point's status is its own job's.
    w.status = -sw.point->error();
    return 0;
}

int Device::syncobj_export(File &f, drm_syncobj_handle &h) {
    if (h.pad)
        return EINVAL;
    if (h.flags != DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE)
        return h.flags & ~DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE ? EINVAL : EOPNOTSUPP;
    SyncWait sw;
    if (int e = syncobj_find(f, h.handle, 0, sw))
        return e;
    h.fd = Shared::get().add_sync_file(std::move(sw));
    return 0;
}

// DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE with IMPORT_SYNC_FILE: a sync file of any
// simulated device becomes the fence of syncobj h.handle.
int Device::syncobj_import(File &f, drm_syncobj_handle &h) {
    if (h.pad)
        return EINVAL;
    if (h.flags != DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE)
        return h.flags & ~DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE ? EINVAL : EOPNOTSUPP;
    auto sw = Shared::get().sync_file(h.fd);
    if (!sw)
        return EINVAL;
    // A sync file of one fence (what libneuron exports: binary syncobjs);
    // a timeline's several links are refused rather than merged.
    std::shared_ptr<Fence> fence;
    for (const auto &x : sw->fences)
        if (!x->signaled()) {
            if (fence)
                return EOPNOTSUPP;
            fence = x;
        }
    if (!fence) {
        // Signalled when the imported fence was, as the kernel's import
        // keeps the sync file's own fence.
        fence = std::make_shared<Fence>();
        fence->signal_at(sw->fence_error(), sw->signaled_at_ns());
    }
    std::lock_guard<std::mutex> g(f.lock);
    auto it = f.syncobjs.find(h.handle);
    if (it == f.syncobjs.end())
        return ENOENT;
    it->second.replace(std::move(fence));
    return 0;
}

// --- dma-bufs ---------------------------------------------------------------------

// DRM_IOCTL_PRIME_HANDLE_TO_FD: a dma-buf of the buffer, which another
// simulated device imports. neuron.ko refuses it (EOPNOTSUPP), as the
// option prime=0 does.
int Device::prime_export(File &f, drm_prime_handle &p) {
    if (!opts_.prime)
        return EOPNOTSUPP;
    if (p.flags & ~(DRM_CLOEXEC | DRM_RDWR))
        return EINVAL;
    std::shared_ptr<Bo> bo;
    {
        std::lock_guard<std::mutex> g(f.lock);
        auto it = f.bos.find(p.handle);
        if (it == f.bos.end())
            return ENOENT;
        bo = it->second;
    }
    p.fd = Shared::get().add_dma_buf(std::move(bo));
    return 0;
}

// DRM_IOCTL_PRIME_FD_TO_HANDLE: a handle of this file for the dma-buf's
// buffer. A buffer of another device's memory may be copied from and to
// (its DMA reaches it, as P2P DMA would) but not bound to a job.
int Device::prime_import(File &f, drm_prime_handle &p) {
    if (!opts_.prime)
        return EOPNOTSUPP;
    auto bo = Shared::get().dma_buf(p.fd);
    if (!bo)
        return EBADF;
    std::lock_guard<std::mutex> g(f.lock);
    for (const auto &[h, b] : f.bos)
        if (b == bo) { // the kernel gives the same handle again
            p.handle = h;
            return 0;
        }
    p.handle = f.next_handle++;
    f.bos[p.handle] = std::move(bo);
    return 0;
}

// SYNC_IOC_FILE_INFO as drivers/dma-buf/sync_file.c answers it: with
// num_fences 0, the file's status and how many fences it holds; else their
// names, statuses and signal times (dma_fence_timestamp(), CLOCK_MONOTONIC)
// into the caller's array of at least that many.
int Device::sync_file_info(int fd, void *arg) {
    auto found = Shared::get().sync_file(fd);
    if (!found)
        return ENOTTY;
    SyncWait sw = std::move(*found);
    auto *info = static_cast<struct sync_file_info *>(arg);
    if (info->flags || info->pad)
        return EINVAL;
    const auto count = static_cast<uint32_t>(sw.fences.size());
    if (info->num_fences && info->num_fences < count)
        return EINVAL;
    std::snprintf(info->name, sizeof(info->name), "neuron-sim");
    info->status = !sw.signaled() ? 0 : sw.fence_error() ? -sw.fence_error() : 1;
    if (info->num_fences) {
        auto *out =
            reinterpret_cast<sync_fence_info *>(static_cast<uintptr_t>(info->sync_fence_info));
        if (!out)
            return EFAULT;
        for (uint32_t i = 0; i < count; i++) {
            const Fence &f = *sw.fences[i];
            sync_fence_info fi{};
            std::snprintf(fi.obj_name, sizeof(fi.obj_name), "neuron-sim");
            std::snprintf(fi.driver_name, sizeof(fi.driver_name), "neuron-sim");
            fi.status = !f.signaled() ? 0 : f.error() ? -f.error() : 1;
            fi.timestamp_ns = static_cast<uint64_t>(f.signaled_at_ns());
            out[i] = fi;
        }
    }
    info->num_fences = count;
    return 0;
}

int Device::in_syncs(File &f, uint64_t ptr, uint32_t count, Work &w) {
    const drm_neuron_sync *syncs;
    if (int e = user_array(ptr, count, syncs))
        return e;
    if (int e = neuron_check_in_syncs(syncs, count))
        return -e;
    for (uint32_t i = 0; i < count; i++) {
        SyncWait sw;
        if (int e = syncobj_find(f, syncs[i].handle, syncs[i].point, sw))
            return e;
        w.deps.insert(w.deps.end(), sw.fences.begin(), sw.fences.end());
    }
    return 0;
}

int Device::out_sync(File &f, const drm_neuron_sync &s, std::shared_ptr<Fence> &fence) {
    std::lock_guard<std::mutex> g(f.lock);
    auto it = f.syncobjs.find(s.handle);
    if (it == f.syncobjs.end())
        return ENOENT;
    fence = std::make_shared<Fence>();
    if (s.point)
        it->second.add_point(s.point, fence);
    else
        it->second.replace(fence);
    return 0;
}

bool Device::has_syncobj(File &f, uint32_t handle) {
    std::lock_guard<std::mutex> g(f.lock);
    return f.syncobjs.count(handle) != 0;
}

} // namespace neuron::sim
