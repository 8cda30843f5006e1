// SPDX-License-Identifier: MIT
// Device discovery: /sys/class/accel/accelN bound to the neuron driver, and
// the simulator when $NEURON_DEVICE selects it.
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <cerrno>
#include <signal.h>

#include "device_state.hpp"
#include "internal.hpp"
#include "os.hpp"
#include "sim_publish.hpp"

namespace neuron {

SysPaths SysPaths::from_env() {
    SysPaths p;
    if (const char *s = std::getenv("NEURON_SYSFS_ROOT"); s && *s)
        p.sysfs_root = s;
    if (const char *d = std::getenv("NEURON_DEV_ROOT"); d && *d)
        p.dev_root = d;
    return p;
}

std::optional<unsigned> parse_accel_name(std::string_view name) {
    constexpr std::string_view prefix = "accel";
    if (name.size() <= prefix.size() || name.size() > prefix.size() + 6 ||
        name.substr(0, prefix.size()) != prefix)
        return std::nullopt;
    unsigned v = 0;
    for (char c : name.substr(prefix.size())) {
        if (!std::isdigit(static_cast<unsigned char>(c)))
            return std::nullopt;
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    return v;
}

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

namespace {

std::string basename_of(const std::string &p) {
    auto slash = p.find_last_of('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
}

// One sysfs accel entry, or nullopt when it is not a neuron device.
std::optional<DeviceEntry> read_entry(detail::Os &os, const SysPaths &paths, const std::string &cls,
                                      const std::string &name) {
    auto index = parse_accel_name(name);
    if (!index)
        return std::nullopt;
    std::string dev = cls + "/" + name + "/device";
    auto drv = os.read_link(dev + "/driver");
    if (!drv || basename_of(*drv) != "neuron")
        return std::nullopt;
    DeviceEntry e;
    e.index = *index;
    e.node = paths.dev_root + "/accel/" + name;
    e.sysfs_path = cls + "/" + name;
    auto real = os.real_path(dev);
    std::string bdf = real ? basename_of(*real) : basename_of(os.read_link(dev).value_or(""));
    e.pci_address = normalize_pci_address(bdf).value_or(bdf);
    e.vendor_id =
        static_cast<uint16_t>(std::strtoul(os.read_line(dev + "/vendor").c_str(), nullptr, 16));
    e.device_id =
        static_cast<uint16_t>(std::strtoul(os.read_line(dev + "/device").c_str(), nullptr, 16));
    std::string numa = os.read_line(dev + "/numa_node");
    e.numa_node = numa.empty() ? -1 : std::atoi(numa.c_str());
    return e;
}

} // namespace

std::string device_attributes_dir(const SysPaths &paths, const std::string &pci_address) {
    return paths.sysfs_root + "/bus/pci/devices/" + pci_address + "/neuron";
}

std::vector<DeviceEntry> enumerate_sysfs(const SysPaths &paths) {
    auto os = detail::real_os();
    std::string cls = paths.sysfs_root + "/class/accel";
    std::vector<DeviceEntry> out;
    for (const auto &name : os->list_dir(cls))
        if (auto e = read_entry(*os, paths, cls, name))
            out.push_back(std::move(*e));
    std::sort(out.begin(), out.end(),
              [](const DeviceEntry &a, const DeviceEntry &b) { return a.index < b.index; });
    return out;
}

std::vector<SimulatedDevice> published_simulators() {
    auto os = detail::real_os();
    const std::string base = detail::sim_publish_dir();
    std::vector<std::pair<std::pair<long, long>, SimulatedDevice>> found;
    for (const auto &name : os->list_dir(base)) {
        // <pid>.<n>, of a process that is still there.
        char *end = nullptr;
        long pid = std::strtol(name.c_str(), &end, 10);
        if (pid <= 0 || *end != '.')
            continue;
        char *end2 = nullptr;
        long n = std::strtol(end + 1, &end2, 10);
        if (*end2 || end2 == end + 1)
            continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
            continue;
        SimulatedDevice d;
        d.pid = static_cast<int>(pid);
        d.root = base + "/" + name;
        if (!os->exists(d.root + "/sys/class/accel/accel0"))
            continue; // still being written
        found.push_back({{pid, n}, std::move(d)});
    }
    std::sort(found.begin(), found.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<SimulatedDevice> out;
    for (auto &f : found)
        out.push_back(std::move(f.second));
    return out;
}

std::vector<DeviceEntry> enumerate(const SysPaths &paths) {
    if (auto spec = selected_device(); spec && is_sim_spec(*spec)) {
        std::vector<DeviceEntry> out;
        for (const Device &d : open_simulated(DeviceSelector::parse(*spec, ""))) {
            DeviceEntry e;
            e.index = static_cast<unsigned>(out.size());
            e.node = d.path();
            e.pci_address = d.info().pci_address;
            e.vendor_id = d.info().vendor_id;
            e.device_id = d.info().device_id;
            out.push_back(std::move(e));
        }
        return out;
    }
    return enumerate_sysfs(paths);
}

} // namespace neuron
