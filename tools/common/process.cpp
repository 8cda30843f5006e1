// SPDX-License-Identifier: MIT
#include "neuron_tools/process.hpp"
#include "neuron_tools/device.hpp"

#include <algorithm>
#include <linux/kcmp.h>
#include <set>
#include <sys/syscall.h>
#include <system_error>
#include <unistd.h>
#include <utility>

namespace neuron::tools {

namespace fs = std::filesystem;

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

// "<n> [unit]" -> value in the unit's base (bytes for sizes, ns for engines).
std::optional<uint64_t> parse_quantity(std::string_view v) {
    size_t sp = v.find(' ');
    std::string_view num = v.substr(0, sp);
    std::string_view unit = sp == std::string_view::npos ? "" : trim(v.substr(sp + 1));
    auto n = parse_u64(num);
    if (!n)
        return std::nullopt;
    uint64_t mul = 1;
    if (unit == "KiB")
        mul = 1ull << 10;
    else if (unit == "MiB")
        mul = 1ull << 20;
    else if (unit == "GiB")
        mul = 1ull << 30;
    else if (!unit.empty() && unit != "ns" && unit != "B")
        return std::nullopt;
    return *n * mul;
}

} // namespace

std::optional<Client> parse_fdinfo(std::string_view text) {
    Client c;
    bool neuron = false;
    while (!text.empty()) {
        size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        size_t colon = line.find(':');
        if (colon == std::string_view::npos)
            continue;
        std::string_view key = trim(line.substr(0, colon));
        std::string_view val = trim(line.substr(colon + 1));
        if (key == "drm-driver") {
            neuron = val == "neuron";
        } else if (key == "drm-pdev") {
            c.pdev = std::string(val);
        } else if (key == "drm-client-id") {
            c.client_id = parse_u64(val);
        } else if (key.rfind("drm-engine-core", 0) == 0) {
            auto idx = parse_u64(key.substr(15));
            auto ns = parse_quantity(val);
            if (idx && ns)
                c.engine_ns[static_cast<unsigned>(*idx)] = *ns;
        } else if (key == "drm-total-device") {
            c.device_total = parse_quantity(val).value_or(0);
        } else if (key == "drm-resident-device") {
            c.device_resident = parse_quantity(val).value_or(0);
        } else if (key == "drm-total-host") {
            c.host_total = parse_quantity(val).value_or(0);
        } else if (key == "drm-resident-host") {
            c.host_resident = parse_quantity(val).value_or(0);
        }
    }
    if (!neuron)
        return std::nullopt;
    return c;
}

std::vector<unsigned> DeviceUsage::cores() const {
    std::vector<unsigned> out;
    for (const auto &[core, ns] : engine_ns)
        if (ns > 0)
            out.push_back(core);
    return out;
}

DeviceUsage usage_on(const Process &p, std::string_view bdf) {
    DeviceUsage u;
    for (const Client &c : p.clients) {
        if (c.pdev != bdf)
            continue;
        u.clients++;
        u.memory += c.device_total;
        u.host_memory += c.host_total;
        for (const auto &[core, ns] : c.engine_ns)
            u.engine_ns[core] += ns;
    }
    return u;
}

namespace {

// Two fds (possibly in different processes) refer to the same open file.
bool same_file(int pid1, int fd1, int pid2, int fd2) {
    return syscall(SYS_kcmp, pid1, pid2, KCMP_FILE, fd1, fd2) == 0;
}

} // namespace

namespace {

// The clients of simulated devices, from the fdinfo files each simulator
// publishes, with drm-pdev the device's BDF among the tools ("sim:<pid>").
ProcessScan scan_sim_processes(const Roots &roots) {
    ProcessScan scan;
    for (const SimTree &t : sim_trees()) {
        if (t.sim.pid == getpid())
            continue; // the tool itself, simulating the device it shows
        std::vector<Client> clients;
        std::error_code ec;
        std::vector<fs::path> files;
        for (const auto &e : fs::directory_iterator(fs::path(t.sim.root) / "fdinfo", ec))
            if (e.path().extension() != ".tmp")
                files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (const auto &f : files) {
            auto text = read_file(f);
            auto c = text ? parse_fdinfo(*text) : std::nullopt;
            if (!c)
                continue;
            c->pdev = t.bdf;
            clients.push_back(std::move(*c));
        }
        if (clients.empty())
            continue;
        if (scan.processes.empty() || scan.processes.back().pid != t.sim.pid) {
            Process p;
            p.pid = t.sim.pid;
            p.command = read_text(roots.proc / std::to_string(p.pid) / "comm").value_or("?");
            scan.processes.push_back(std::move(p));
        }
        for (auto &c : clients)
            scan.processes.back().clients.push_back(std::move(c));
    }
    return scan;
}

} // namespace

ProcessScan scan_processes(const Roots &roots) {
    if (roots.device.is_sim())
        return scan_sim_processes(roots);
    ProcessScan scan;
    std::error_code ec;
    std::vector<int> pids;
    for (const auto &entry : fs::directory_iterator(roots.proc, ec)) {
        auto pid = parse_u64(entry.path().filename().string());
        if (pid && *pid > 0 && *pid < (1u << 31))
            pids.push_back(static_cast<int>(*pid));
    }
    std::sort(pids.begin(), pids.end());

    // Clients seen so far, for deduplication.
    std::set<std::pair<std::string, uint64_t>> seen_ids;
    struct Anonymous {
        std::string pdev;
        int pid;
        int fd;
    };
    std::vector<Anonymous> seen_anon;
    // kcmp only makes sense on the live /proc.
    const bool live = fs::equivalent(roots.proc, "/proc", ec);

    for (int pid : pids) {
        fs::path pdir = roots.proc / std::to_string(pid);
        fs::path fddir = pdir / "fd";
        std::error_code dec;
        fs::directory_iterator fds(fddir, dec);
        if (dec) {
            if (dec == std::errc::permission_denied || dec == std::errc::operation_not_permitted)
                scan.hidden++;
            continue; // the process exited, or is not ours to inspect
        }
        std::vector<int> accel_fds;
        for (const auto &fdent : fds) {
            std::error_code lec;
            fs::path target = fs::read_symlink(fdent.path(), lec);
            if (lec || target.string().rfind("/dev/accel/accel", 0) != 0)
                continue;
            if (auto fd = parse_u64(fdent.path().filename().string()))
                accel_fds.push_back(static_cast<int>(*fd));
        }
        if (accel_fds.empty())
            continue;
        std::sort(accel_fds.begin(), accel_fds.end());

        Process p;
        p.pid = pid;
        p.command = read_text(pdir / "comm").value_or("?");
        for (int fd : accel_fds) {
            auto text = read_file(pdir / "fdinfo" / std::to_string(fd));
            if (!text)
                continue;
            auto c = parse_fdinfo(*text);
            if (!c)
                continue;
            c->fd = fd;
            if (c->client_id) {
                if (!seen_ids.emplace(c->pdev, *c->client_id).second)
                    continue;
            } else {
                bool dup = false;
                for (const auto &a : seen_anon)
                    if (a.pdev == c->pdev && live && same_file(a.pid, a.fd, pid, fd))
                        dup = true;
                if (dup)
                    continue;
                seen_anon.push_back({c->pdev, pid, fd});
            }
            p.clients.push_back(std::move(*c));
        }
        if (!p.clients.empty())
            scan.processes.push_back(std::move(p));
    }
    return scan;
}

} // namespace neuron::tools
