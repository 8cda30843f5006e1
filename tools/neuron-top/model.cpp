// SPDX-License-Identifier: MIT
#include "model.hpp"

#include <algorithm>
#include <ctime>
#include <fmt/format.h>
#include <map>

namespace neuron::tools::top {

Snapshot take_snapshot(const Roots &roots) {
    Snapshot s;
    struct timespec ts {};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s.mono_ns =
        static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
    s.wall_s = static_cast<int64_t>(time(nullptr));
    s.driver = read_driver(roots);
    ScanOptions opts;
    opts.counters = true;
    opts.access = false;
    s.devices = scan_devices(roots, opts);
    if (!s.devices.empty())
        s.processes = scan_processes(roots);
    return s;
}

namespace {

// A counter's increase; counters restart from zero when the device is
// bound again, which is not a negative rate.
uint64_t delta(uint64_t before, uint64_t after) {
    return after >= before ? after - before : after;
}

// The same device in an earlier snapshot: same index and address (the
// simulated devices are numbered in the order of the processes running).
const Device *find_device(const Snapshot &s, const Device &dev) {
    for (const Device &d : s.devices)
        if (d.index == dev.index && d.bdf == dev.bdf)
            return &d;
    return nullptr;
}

const Process *find_process(const Snapshot &s, int pid) {
    for (const Process &p : s.processes.processes)
        if (p.pid == pid)
            return &p;
    return nullptr;
}

} // namespace

Model compute(const Snapshot &prev, const Snapshot &cur) {
    Model m;
    m.wall_s = cur.wall_s;
    double dt =
        cur.mono_ns > prev.mono_ns ? static_cast<double>(cur.mono_ns - prev.mono_ns) / 1e9 : 0;
    m.interval_s = dt;
    m.driver_version = cur.driver.version.value_or("-");
    m.hidden_processes = cur.processes.hidden;
    auto rate = [dt](uint64_t d) { return dt > 0 ? static_cast<double>(d) / dt : 0.0; };

    for (const Device &d : cur.devices) {
        const Device *p = find_device(prev, d);
        DeviceView v;
        v.index = d.index;
        v.name = d.name;
        v.bdf = d.bdf;
        v.state = d.state;
        v.memory_used = d.memory_used;
        v.memory_total = d.memory_total;
        v.reset_count = d.reset_count.value_or(0);
        for (const CoreCounters &c : d.core) {
            CoreView cv;
            cv.index = c.index;
            cv.faults = c.faults;
            cv.timeouts = c.timeouts;
            cv.resets = c.resets;
            if (p && c.index < p->core.size()) {
                const CoreCounters &pc = p->core[c.index];
                cv.util =
                    dt > 0
                        ? std::clamp(static_cast<double>(delta(pc.busy_ns, c.busy_ns)) / (dt * 1e9),
                                     0.0, 1.0)
                        : 0;
                cv.jobs_per_s = rate(delta(pc.jobs, c.jobs));
            }
            v.jobs_per_s += cv.jobs_per_s;
            v.cores.push_back(cv);
        }
        if (p)
            for (const DmaCounters &e : d.dma)
                if (e.index < p->dma.size())
                    v.dma_bytes_per_s += rate(delta(p->dma[e.index].bytes, e.bytes));
        m.devices.push_back(std::move(v));
    }

    for (const Process &proc : cur.processes.processes) {
        const Process *before = find_process(prev, proc.pid);
        for (const Device &d : cur.devices) {
            DeviceUsage u = usage_on(proc, d.bdf);
            if (!u.clients)
                continue;
            ProcessView pv;
            pv.pid = proc.pid;
            pv.command = proc.command;
            pv.device = d.index;
            pv.device_name = d.name;
            pv.memory = u.memory;
            pv.host_memory = u.host_memory;
            pv.cores = u.cores();
            if (before && dt > 0) {
                DeviceUsage b = usage_on(*before, d.bdf);
                uint64_t busy = 0;
                for (const auto &[core, ns] : u.engine_ns) {
                    auto it = b.engine_ns.find(core);
                    busy += delta(it == b.engine_ns.end() ? ns : it->second, ns);
                }
                pv.util = static_cast<double>(busy) / (dt * 1e9);
            }
            m.processes.push_back(std::move(pv));
        }
    }
    return m;
}

std::vector<Event> counter_events(const Snapshot &prev, const Snapshot &cur, bool resets) {
    std::vector<Event> out;
    auto ev = [&](unsigned dev, int core, std::string kind, std::string detail) {
        out.push_back({cur.wall_s, dev, core, std::move(kind), std::move(detail), "counters"});
    };
    for (const Device &d : cur.devices) {
        const Device *p = find_device(prev, d);
        if (!p)
            continue;
        if (resets && p->state != d.state)
            ev(d.index, -1, "state", p->state + " -> " + d.state);
        uint64_t core_resets = 0;
        for (const CoreCounters &c : d.core) {
            if (c.index >= p->core.size())
                continue;
            const CoreCounters &pc = p->core[c.index];
            int core = static_cast<int>(c.index);
            if (c.faults > pc.faults)
                ev(d.index, core, "fault",
                   fmt::format("{} job{}", c.faults - pc.faults,
                               c.faults - pc.faults == 1 ? "" : "s"));
            if (resets && c.timeouts > pc.timeouts)
                ev(d.index, core, "timeout",
                   fmt::format("{} job{}", c.timeouts - pc.timeouts,
                               c.timeouts - pc.timeouts == 1 ? "" : "s"));
            if (resets && c.resets > pc.resets) {
                core_resets += c.resets - pc.resets;
                ev(d.index, core, "reset",
                   c.resets - pc.resets == 1 ? std::string()
                                             : fmt::format("{} resets", c.resets - pc.resets));
            }
        }
        // A reset that no core counter explains: the whole device.
        uint64_t dev_resets = delta(p->reset_count.value_or(0), d.reset_count.value_or(0));
        if (resets && dev_resets > 0 && core_resets == 0)
            ev(d.index, -1, "reset",
               dev_resets == 1 ? std::string() : fmt::format("{} resets", dev_resets));
    }
    return out;
}

void add_events(std::deque<Event> &events, const std::vector<Event> &more, size_t max) {
    for (const Event &e : more)
        events.push_back(e);
    while (events.size() > max)
        events.pop_front();
}

} // namespace neuron::tools::top
