// SPDX-License-Identifier: MIT
// RealOs: the only code of libneuron that calls the kernel.
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xf86drm.h>

#include "os.hpp"

namespace neuron::detail {

namespace {

class RealOs final : public Os {
  public:
    int open(const std::string &path) override {
        int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        return fd >= 0 ? fd : -errno;
    }

    void close(int fd) override { ::close(fd); }

    int ioctl(int fd, unsigned long request, void *arg) override {
        // drmIoctl restarts on EINTR and EAGAIN; it works on sync files too.
        return drmIoctl(fd, request, arg) ? errno : 0;
    }

    void *mmap(int fd, size_t len, uint64_t offset, int &err) override {
        void *m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                         static_cast<off_t>(offset));
        if (m == MAP_FAILED) {
            err = errno;
            return nullptr;
        }
        return m;
    }

    void munmap(void *addr, size_t len) override { ::munmap(addr, len); }

    std::vector<std::string> list_dir(const std::string &path) override {
        std::vector<std::string> out;
        DIR *d = ::opendir(path.c_str());
        if (!d)
            return out;
        while (const dirent *e = ::readdir(d)) {
            std::string n = e->d_name;
            if (n != "." && n != "..")
                out.push_back(std::move(n));
        }
        ::closedir(d);
        return out;
    }

    std::optional<std::string> read_link(const std::string &path) override {
        std::vector<char> buf(PATH_MAX);
        ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
        if (n < 0 || static_cast<size_t>(n) >= buf.size())
            return std::nullopt;
        return std::string(buf.data(), static_cast<size_t>(n));
    }

    std::optional<std::string> real_path(const std::string &path) override {
        char *r = ::realpath(path.c_str(), nullptr);
        if (!r)
            return std::nullopt;
        std::string s = r;
        std::free(r);
        return s;
    }

    std::string read_line(const std::string &path) override {
        std::ifstream f(path);
        std::string s;
        if (f)
            std::getline(f, s);
        return s;
    }

    bool exists(const std::string &path) override { return ::access(path.c_str(), F_OK) == 0; }

    std::optional<NodeMode> node_mode(const std::string &path) override {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
            return std::nullopt;
        NodeMode m;
        m.mode = st.st_mode;
        m.gid = st.st_gid;
        m.group = std::to_string(st.st_gid);
        std::vector<char> buf(4096);
        struct group grp {};
        struct group *res = nullptr;
        if (getgrgid_r(st.st_gid, &grp, buf.data(), buf.size(), &res) == 0 && res)
            m.group = res->gr_name;
        return m;
    }
};

} // namespace

std::shared_ptr<Os> real_os() {
    static const std::shared_ptr<Os> os = std::make_shared<RealOs>();
    return os;
}

} // namespace neuron::detail
