// SPDX-License-Identifier: MIT
// The simulator's counters as files: a tree shaped like neuron.ko's sysfs
// and fdinfo (docs/telemetry.md) that neuron-ls, neuron-top and
// neuron-monitor read with the readers they use for the driver.
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim.hpp"
#include "sim_publish.hpp"

namespace neuron::sim {

namespace fs = std::filesystem;

namespace {

// drm_print_memory_stats(): the largest unit that divides the size exactly.
std::string memory_size(uint64_t bytes) {
    if (bytes && bytes % (1ull << 20) == 0)
        return fmt::format("{} MiB", bytes >> 20);
    if (bytes && bytes % (1ull << 10) == 0)
        return fmt::format("{} KiB", bytes >> 10);
    return std::to_string(bytes);
}

// A directory only this user can write, or false.
bool own_directory(const std::string &dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
        return false;
    if (st.st_mode & 0077) // others may not read what the processes run
        return ::chmod(dir.c_str(), 0700) == 0;
    return true;
}

// Trees of processes that are gone (killed before removing theirs).
void remove_stale(const std::string &base) {
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(base, ec)) {
        std::string name = e.path().filename().string();
        auto dot = name.find('.');
        char *end = nullptr;
        long pid = std::strtol(name.c_str(), &end, 10);
        if (dot == std::string::npos || end != name.c_str() + dot || pid <= 0)
            continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
            fs::remove_all(e.path(), ec);
    }
}

// Replaces @p path's content at once, so that a reader never sees half of it.
void write_file(const fs::path &path, const std::string &text) {
    fs::path tmp = path;
    tmp += ".tmp";
    {
        std::ofstream f(tmp, std::ios::trunc);
        f << text;
        if (!f)
            return;
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
}

} // namespace

std::map<std::string, std::string> Device::telemetry_files() const {
    std::map<std::string, std::string> out;
    const std::string attr = fmt::format("sys/bus/pci/devices/{}/neuron/", sim_bdf(opts_.device));
    auto put = [&](const std::string &name, const std::string &v) { out[attr + name] = v + "\n"; };
    auto num = [&](const std::string &name, uint64_t v) { put(name, std::to_string(v)); };
    num("cores", opts_.cores);
    num("dma_engines", opts_.dma);
    num("memory_total", opts_.mem);
    num("memory_used", memory_->used());
    put("hw_version", fmt::format("{}.{}", NEURON_VERSION_MAJOR, NEURON_VERSION_MINOR));
    put("fw_version", "1.0");
    put("state", "ready");
    uint64_t resets = 0;
    for (size_t i = 0; i < cores_.size(); i++) {
        const Counters &c = cores_[i]->counters;
        const std::string dir = fmt::format("core{}/", i);
        num(dir + "jobs", c.jobs);
        num(dir + "faults", c.faults);
        num(dir + "timeouts", c.timeouts);
        num(dir + "resets", c.resets);
        num(dir + "busy_ns", c.busy_ns);
        num(dir + "instructions", c.instructions);
        num(dir + "flops", c.flops);
        num(dir + "dma_bytes", c.dma_bytes);
        resets += c.resets;
    }
    num("reset_count", resets);
    for (size_t i = 0; i < dma_.size(); i++) {
        const Counters &c = dma_[i]->counters;
        const std::string dir = fmt::format("dma{}/", i);
        num(dir + "bytes", c.dma_bytes);
        num(dir + "descriptors", c.jobs);
        num(dir + "errors", c.faults);
    }

    std::vector<std::shared_ptr<File>> files;
    {
        std::lock_guard<std::mutex> g(lock_);
        for (const auto &[fd, f] : files_)
            files.push_back(f);
    }
    for (const auto &f : files) {
        uint64_t dev = 0, host = 0;
        {
            std::lock_guard<std::mutex> g(f->lock);
            for (const auto &[h, bo] : f->bos)
                (bo->region == DRM_NEURON_BO_DEVICE ? dev : host) += bo->size;
        }
        std::string t = fmt::format("drm-driver:\tneuron\ndrm-client-id:\t{}\ndrm-pdev:\t{}\n",
                                    f->client_id, sim_bdf(opts_.device));
        for (size_t i = 0; i < f->stats->engine_ns.size(); i++)
            t += fmt::format("drm-engine-core{}:\t{} ns\ndrm-engine-capacity-core{}:\t1\n", i,
                             f->stats->engine_ns[i].load(), i);
        t += fmt::format("drm-total-device:\t{0}\ndrm-shared-device:\t0\n"
                         "drm-resident-device:\t{0}\ndrm-total-host:\t{1}\n"
                         "drm-shared-host:\t0\ndrm-resident-host:\t{1}\n",
                         memory_size(dev), memory_size(host));
        out[fmt::format("fdinfo/{}", f->client_id)] = t;
    }
    return out;
}

Publisher::Publisher(const Device &dev) : dev_(dev) {
    static std::atomic<unsigned> next{0};
    const std::string base = detail::sim_publish_dir();
    if (!own_directory(base))
        return; // not ours: the device works, the tools do not see it
    remove_stale(base);
    root_ = fmt::format("{}/{}.{}", base, getpid(), next++);
    std::error_code ec;
    fs::remove_all(root_, ec);
    // The links enumerate_sysfs() follows, as the kernel has them.
    const fs::path sys = fs::path(root_) / "sys";
    const std::string bdf = sim_bdf(dev.options().device);
    const fs::path pdev = sys / "bus/pci/devices" / bdf;
    fs::create_directories(sys / "class/accel/accel0", ec);
    fs::create_directories(sys / "bus/pci/drivers/neuron", ec);
    fs::create_directories(pdev / "neuron", ec);
    fs::create_directories(sys / "module/neuron", ec);
    fs::create_directories(fs::path(root_) / "fdinfo", ec);
    fs::create_directory_symlink(fs::path("../../../bus/pci/devices") / bdf,
                                 sys / "class/accel/accel0/device", ec);
    fs::create_directory_symlink("../../../../bus/pci/drivers/neuron", pdev / "driver", ec);
    write_file(pdev / "vendor", fmt::format("0x{:04x}\n", NEURON_PCI_VENDOR_ID));
    write_file(pdev / "device", fmt::format("0x{:04x}\n", NEURON_PCI_DEVICE_ID));
    write_file(pdev / "numa_node", "-1\n");
    write_file(sys / "module/neuron/version", "sim\n");
    write_changed();
    thread_ = std::thread([this] {
        std::unique_lock<std::mutex> g(lock_);
        while (!cv_.wait_for(g, std::chrono::milliseconds(100), [&] { return stopping_; }))
            write_changed();
    });
}

Publisher::~Publisher() {
    if (root_.empty())
        return;
    {
        std::lock_guard<std::mutex> g(lock_);
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    std::error_code ec;
    fs::remove_all(root_, ec);
}

void Publisher::write_changed() {
    auto files = dev_.telemetry_files();
    for (const auto &[path, text] : files) {
        auto it = written_.find(path);
        if (it != written_.end() && it->second == text)
            continue;
        fs::path p = fs::path(root_) / path;
        if (it == written_.end()) {
            std::error_code ec;
            fs::create_directories(p.parent_path(), ec);
        }
        write_file(p, text);
        written_[path] = text;
    }
    for (auto it = written_.begin(); it != written_.end();) {
        if (files.count(it->first)) {
            ++it;
            continue;
        }
        std::error_code ec;
        fs::remove(fs::path(root_) / it->first, ec);
        it = written_.erase(it);
    }
}

} // namespace neuron::sim
