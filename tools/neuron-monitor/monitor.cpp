// SPDX-License-Identifier: MIT
#include "monitor.hpp"

#include <algorithm>
#include <set>

namespace neuron::tools::monitor {

Monitor::Monitor(Roots roots, bool use_netlink)
    : roots_(std::move(roots)), use_netlink_(use_netlink) {
    state_.event_source = use_netlink              ? "netlink: not connected yet"
                          : roots_.device.is_sim() ? "netlink: off (the simulator has none)"
                                                   : "netlink: off (--no-netlink)";
}

void Monitor::connect_netlink() {
    if (!use_netlink_ || netlink_)
        return;
    auto nl = std::make_unique<top::NetlinkEvents>();
    std::string why;
    if (nl->open(why)) {
        netlink_ = std::move(nl);
        state_.event_source = "netlink";
    } else {
        state_.event_source = "netlink: " + why;
    }
}

void Monitor::wait_until(std::chrono::steady_clock::time_point deadline,
                         const std::function<bool()> &stop) {
    top::wait_for_events(netlink_.get(), deadline, stop, [&](std::vector<top::Event> &&fresh) {
        pending_.insert(pending_.end(), fresh.begin(), fresh.end());
    });
}

void Monitor::update_devices() {
    top::Snapshot &snap = state_.snapshot;
    // A device whose attributes cannot be read is being unbound: its
    // counters would read as zeros, so it counts as gone already.
    std::erase_if(snap.devices, [](const Device &d) { return d.state == "unknown"; });

    std::set<std::string> seen;
    for (const Device &d : snap.devices) {
        seen.insert(d.bdf);
        KnownDevice &k = state_.known[d.bdf];
        k.index = d.index;
        k.bdf = d.bdf;
        k.host_memory_mapped = read_u64(attributes_dir(roots_, d) / "host_memory_mapped");
        if (!k.present) {
            k.present = true;
            k.appearances++;
            for (const char *kind : event_kinds)
                k.events.try_emplace(kind, 0);
            if (state_.samples > 0)
                state_.events.push_back(
                    {snap.wall_s, d.index, -1, "added", d.bdf + " " + d.name, "sysfs"});
        }
    }
    for (auto &[bdf, k] : state_.known) {
        if (k.present && !seen.count(bdf)) {
            k.present = false;
            k.disappearances++;
            k.host_memory_mapped.reset();
            state_.events.push_back({snap.wall_s, k.index, -1, "removed", bdf, "sysfs"});
        }
    }
}

const State &Monitor::sample() {
    state_.snapshot = top::take_snapshot(roots_);
    // The family goes away with the module; join it again once it is back.
    if (!state_.snapshot.driver.loaded && netlink_) {
        netlink_.reset();
        state_.event_source = "netlink: driver not loaded";
    }
    if (state_.snapshot.driver.loaded)
        connect_netlink();
    if (netlink_) {
        std::vector<top::Event> fresh = netlink_->receive();
        pending_.insert(pending_.end(), fresh.begin(), fresh.end());
    }
    state_.netlink = netlink_ != nullptr;
    state_.events = std::move(pending_);
    pending_.clear();
    update_devices();
    // Netlink names devices by accel minor: count each event for the device
    // with that minor, preferring one that is still present.
    for (const top::Event &e : state_.events) {
        if (e.source != "netlink")
            continue;
        KnownDevice *target = nullptr;
        for (auto &[bdf, k] : state_.known)
            if (k.index == e.device && (!target || k.present))
                target = &k;
        if (!target)
            continue;
        auto counter = target->events.find(e.kind);
        if (counter != target->events.end())
            counter->second++;
    }
    state_.samples++;
    return state_;
}

} // namespace neuron::tools::monitor
