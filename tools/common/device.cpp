// SPDX-License-Identifier: MIT
#include "neuron_tools/device.hpp"

#include <neuron/device.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace neuron::tools {

namespace fs = std::filesystem;

Driver read_driver(const Roots &roots) {
    Driver d;
    if (roots.device.is_sim()) {
        d.loaded = true;
        d.version = "sim";
        return d;
    }
    std::error_code ec;
    fs::path mod = roots.sys / "module" / "neuron";
    d.loaded = fs::is_directory(mod, ec);
    if (d.loaded)
        d.version = read_text(mod / "version");
    return d;
}

namespace {

std::string user_name(uid_t uid) {
    if (const struct passwd *pw = getpwuid(uid))
        return pw->pw_name;
    return std::to_string(uid);
}

std::string group_name(gid_t gid) {
    if (const struct group *gr = getgrgid(gid))
        return gr->gr_name;
    return std::to_string(gid);
}

NodeAccess check_access(const fs::path &node) {
    NodeAccess a;
    struct stat st {};
    if (stat(node.c_str(), &st) != 0) {
        a.error = errno;
        return a;
    }
    a.owner = user_name(st.st_uid);
    a.group = group_name(st.st_gid);
    a.mode = st.st_mode & 07777;
    if (access(node.c_str(), R_OK | W_OK) != 0)
        a.error = errno;
    return a;
}

void read_counters(const fs::path &dir, Device &dev) {
    dev.core.clear();
    dev.dma.clear();
    unsigned ncores = dev.cores.value_or(0);
    for (unsigned i = 0; i < ncores; i++) {
        fs::path c = dir / ("core" + std::to_string(i));
        CoreCounters cc;
        cc.index = i;
        cc.busy_ns = read_u64(c / "busy_ns").value_or(0);
        cc.instructions = read_u64(c / "instructions").value_or(0);
        cc.flops = read_u64(c / "flops").value_or(0);
        cc.dma_bytes = read_u64(c / "dma_bytes").value_or(0);
        cc.jobs = read_u64(c / "jobs").value_or(0);
        cc.faults = read_u64(c / "faults").value_or(0);
        cc.timeouts = read_u64(c / "timeouts").value_or(0);
        cc.resets = read_u64(c / "resets").value_or(0);
        dev.core.push_back(cc);
    }
    unsigned ndma = dev.dma_engines.value_or(0);
    for (unsigned i = 0; i < ndma; i++) {
        fs::path d = dir / ("dma" + std::to_string(i));
        DmaCounters dc;
        dc.index = i;
        dc.bytes = read_u64(d / "bytes").value_or(0);
        dc.descriptors = read_u64(d / "descriptors").value_or(0);
        dc.errors = read_u64(d / "errors").value_or(0);
        dev.dma.push_back(dc);
    }
}

} // namespace

fs::path attributes_dir(const Roots &roots, const Device &dev) {
    if (!dev.attributes.empty())
        return dev.attributes;
    neuron::SysPaths paths;
    paths.sysfs_root = roots.sys.string();
    return neuron::device_attributes_dir(paths, dev.bdf);
}

void refresh_device(const Roots &roots, Device &dev, bool counters) {
    fs::path dir = attributes_dir(roots, dev);
    dev.memory_used = read_u64(dir / "memory_used");
    dev.state = read_text(dir / "state").value_or("unknown");
    dev.reset_count = read_u64(dir / "reset_count");
    if (counters)
        read_counters(dir, dev);
}

namespace {

// The devices of one sysfs tree: the driver's, or one a simulator publishes.
std::vector<Device> scan_tree(const Roots &roots, const ScanOptions &opts) {
    std::vector<Device> out;
    neuron::SysPaths paths;
    paths.sysfs_root = roots.sys.string();
    paths.dev_root = roots.dev.string();
    for (const neuron::DeviceEntry &e : neuron::enumerate_sysfs(paths)) {
        Device d;
        d.index = e.index;
        d.name = fs::path(e.sysfs_path).filename().string();
        d.node = "/dev/accel/" + d.name;
        d.bdf = e.pci_address;
        if (e.numa_node >= 0)
            d.numa_node = e.numa_node;
        fs::path dir = attributes_dir(roots, d);
        if (auto v = read_u64(dir / "cores"))
            d.cores = static_cast<unsigned>(*v);
        if (auto v = read_u64(dir / "dma_engines"))
            d.dma_engines = static_cast<unsigned>(*v);
        d.memory_total = read_u64(dir / "memory_total");
        d.hw_version = read_text(dir / "hw_version");
        d.fw_version = read_text(dir / "fw_version");
        refresh_device(roots, d, opts.counters);
        if (opts.access)
            d.access = check_access(roots.dev / "accel" / d.name);
        out.push_back(std::move(d));
    }
    return out;
}

bool selected(const neuron::DeviceSelector &sel, const Device &d) {
    using Kind = neuron::DeviceSelector::Kind;
    switch (sel.kind) {
    case Kind::index:
        return d.index == sel.index;
    case Kind::pci:
        return d.bdf == sel.pci_address;
    case Kind::node:
        return d.node == sel.node || fs::path(sel.node).filename() == d.name;
    case Kind::first:
    case Kind::sim:
        break;
    }
    return true;
}

std::string sim_bdf(const neuron::SimulatedDevice &s, unsigned nth) {
    return nth ? fmt::format("sim:{}.{}", s.pid, nth) : fmt::format("sim:{}", s.pid);
}

} // namespace

std::vector<SimTree> sim_trees() {
    std::vector<SimTree> out;
    int last_pid = 0;
    unsigned nth = 0;
    for (const auto &s : neuron::published_simulators()) {
        nth = s.pid == last_pid ? nth + 1 : 0;
        last_pid = s.pid;
        out.push_back({s, sim_bdf(s, nth)});
    }
    return out;
}

std::vector<neuron::Device> simulate_if_none(const neuron::DeviceSelector &sel) {
    if (!sel.is_sim() || !sim_trees().empty())
        return {};
    return neuron::open_simulated(sel);
}

// The devices are libneuron's (one scan of /sys/class/accel, one accelN
// parser, one reading of $NEURON_SYSFS_ROOT/$NEURON_DEV_ROOT); the tools
// add the driver's sysfs attributes.
std::vector<Device> scan_devices(const Roots &roots, const ScanOptions &opts) {
    if (!roots.device.is_sim()) {
        std::vector<Device> all = scan_tree(roots, opts);
        std::vector<Device> out;
        for (Device &d : all)
            if (selected(roots.device, d))
                out.push_back(std::move(d));
        return out;
    }
    std::vector<Device> out;
    for (const SimTree &t : sim_trees()) {
        Roots r;
        r.sys = fs::path(t.sim.root) / "sys";
        ScanOptions o = opts;
        o.access = false; // no node: the process that simulates it is its only user
        for (Device &d : scan_tree(r, o)) {
            d.attributes = attributes_dir(r, d);
            d.index = static_cast<unsigned>(out.size());
            d.name = "sim";
            d.node = fmt::format("sim (pid {})", t.sim.pid);
            d.bdf = t.bdf;
            d.sim_pid = t.sim.pid;
            out.push_back(std::move(d));
        }
    }
    return out;
}

} // namespace neuron::tools
