// SPDX-License-Identifier: MIT
// A fake of libneuron's OS seam (libneuron/src/os.hpp): a scripted neuron.ko
// that records every ioctl's arguments and fails any of them with a chosen
// errno, so that the device paths of the library run on the host.
#pragma once

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <linux/sync_file.h>
#include <xf86drm.h>

#include "drm/neuron_accel.h"
#include "os.hpp"

namespace test {

class FakeOs final : public neuron::detail::Os {
  public:
    static constexpr int device_fd = 3;
    static constexpr int sync_fd = 4;

    int open_errno = 0;                  ///< open() fails with it when set
    std::string driver = "neuron";       ///< DRM_IOCTL_VERSION's name
    std::map<uint32_t, uint64_t> params; ///< GET_PARAM values
    std::map<unsigned long, int> fail;   ///< ioctl request -> errno
    int mmap_errno = 0;
    int fence_status = 1; ///< SYNC_IOC_FILE_INFO status (1, 0 or -errno), WAIT's if < 0
    int wait_errno = 0;   ///< SYNCOBJ_WAIT's and WAIT's errno (ETIME: still running)
    std::map<std::string, std::string> files; ///< read_line's lines, by path

    // What the library asked for.
    std::vector<unsigned long> calls;
    drm_neuron_submit last_submit{};
    std::vector<drm_neuron_binding> last_bindings;
    std::vector<drm_neuron_sync> last_in_syncs;
    drm_neuron_copy last_copy{};
    int64_t last_wait_timeout = 0;
    std::vector<uint32_t> closed_handles, destroyed_syncobjs;
    std::vector<size_t> unmapped;
    int closed_fds = 0;

    FakeOs() {
        params = {{DRM_NEURON_PARAM_API_VERSION,
                   DRM_NEURON_API_VERSION_MAJOR << 16 | DRM_NEURON_API_VERSION_MINOR},
                  {DRM_NEURON_PARAM_DEVICE_ID, 0x1d0f7f00},
                  {DRM_NEURON_PARAM_NUM_CORES, 2},
                  {DRM_NEURON_PARAM_NUM_DMA_ENGINES, 2},
                  {DRM_NEURON_PARAM_DEVICE_MEM_SIZE, 1ull << 30},
                  {DRM_NEURON_PARAM_PARTITIONS, 128},
                  {DRM_NEURON_PARAM_CAPABILITIES, DRM_NEURON_CAP_FP32},
                  {DRM_NEURON_PARAM_MAX_BINDINGS, 63},
                  {DRM_NEURON_PARAM_PCI_BUS_INFO, 0x0018},
                  {DRM_NEURON_PARAM_ISA_VERSION, 1u << 16 | 1u}};
    }

    int open(const std::string &) override { return open_errno ? -open_errno : device_fd; }
    void close(int) override { closed_fds++; }

    int ioctl(int fd, unsigned long req, void *arg) override {
        calls.push_back(req);
        if (auto it = fail.find(req); it != fail.end())
            return it->second;
        if (req == SYNC_IOC_FILE_INFO) {
            if (fd != sync_fd)
                return EBADF;
            static_cast<sync_file_info *>(arg)->status = fence_status;
            return 0;
        }
        return device_ioctl(req, arg);
    }

    void *mmap(int, size_t len, uint64_t offset, int &err) override {
        if (mmap_errno) {
            err = mmap_errno;
            return nullptr;
        }
        auto &m = memory_[static_cast<uint32_t>(offset >> 32)];
        m.resize(len);
        return m.data();
    }
    void munmap(void *, size_t len) override { unmapped.push_back(len); }

    std::vector<std::string> list_dir(const std::string &) override { return {}; }
    std::optional<std::string> read_link(const std::string &) override { return std::nullopt; }
    std::optional<std::string> real_path(const std::string &) override { return std::nullopt; }
    std::string read_line(const std::string &path) override {
        auto it = files.find(path);
        return it == files.end() ? std::string() : it->second;
    }
    bool exists(const std::string &) override { return true; }
    std::optional<neuron::detail::NodeMode> node_mode(const std::string &) override {
        return neuron::detail::NodeMode{020660, 105, "render"};
    }

    size_t count(unsigned long req) const {
        size_t n = 0;
        for (auto c : calls)
            n += c == req;
        return n;
    }

  private:
    uint32_t next_handle_ = 1;
    std::map<uint32_t, uint64_t> bo_size_;
    std::map<uint32_t, std::vector<std::byte>> memory_;

    int device_ioctl(unsigned long req, void *arg) {
        switch (req) {
        case DRM_IOCTL_VERSION: {
            auto *v = static_cast<drm_version *>(arg);
            std::memcpy(v->name, driver.data(), std::min(v->name_len, driver.size()));
            v->name_len = driver.size();
            return 0;
        }
        case DRM_IOCTL_NEURON_GET_PARAM: {
            auto *p = static_cast<drm_neuron_get_param *>(arg);
            auto it = params.find(p->param);
            p->value = it == params.end() ? 0 : it->second;
            return 0;
        }
        case DRM_IOCTL_NEURON_BO_CREATE: {
            auto *c = static_cast<drm_neuron_bo_create *>(arg);
            c->handle = next_handle_++;
            bo_size_[c->handle] = (c->size + 4095) / 4096 * 4096;
            return 0;
        }
        case DRM_IOCTL_NEURON_BO_INFO: {
            auto *i = static_cast<drm_neuron_bo_info *>(arg);
            i->size = bo_size_[i->handle];
            i->mmap_offset = uint64_t(i->handle) << 32;
            i->device_addr = 0x1000ull * i->handle;
            return 0;
        }
        case DRM_IOCTL_GEM_CLOSE:
            closed_handles.push_back(static_cast<drm_gem_close *>(arg)->handle);
            return 0;
        case DRM_IOCTL_SYNCOBJ_CREATE:
            static_cast<drm_syncobj_create *>(arg)->handle = 100 + next_handle_++;
            return 0;
        case DRM_IOCTL_SYNCOBJ_DESTROY:
            destroyed_syncobjs.push_back(static_cast<drm_syncobj_destroy *>(arg)->handle);
            return 0;
        case DRM_IOCTL_SYNCOBJ_WAIT:
            last_wait_timeout = static_cast<drm_syncobj_wait *>(arg)->timeout_nsec;
            return wait_errno;
        case DRM_IOCTL_NEURON_WAIT: {
            auto *w = static_cast<drm_neuron_wait *>(arg);
            last_wait_timeout = w->timeout_nsec;
            w->status = wait_errno || fence_status > 0 ? 0 : fence_status;
            return wait_errno;
        }
        case DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD:
            static_cast<drm_syncobj_handle *>(arg)->fd = sync_fd;
            return 0;
        case DRM_IOCTL_NEURON_SUBMIT: {
            auto *s = static_cast<drm_neuron_submit *>(arg);
            last_submit = *s;
            auto *b = reinterpret_cast<const drm_neuron_binding *>(s->bindings);
            last_bindings.assign(b, b + s->num_bindings);
            auto *i = reinterpret_cast<const drm_neuron_sync *>(s->in_syncs);
            last_in_syncs.assign(i, i + s->num_in_syncs);
            s->seqno = 7;
            return 0;
        }
        case DRM_IOCTL_NEURON_COPY: {
            auto *c = static_cast<drm_neuron_copy *>(arg);
            last_copy = *c;
            auto *i = reinterpret_cast<const drm_neuron_sync *>(c->in_syncs);
            last_in_syncs.assign(i, i + c->num_in_syncs);
            c->seqno = 9;
            return 0;
        }
        default:
            return ENOTTY;
        }
    }
};

} // namespace test
