// SPDX-License-Identifier: MIT
// neuron-monitor: samples the driver's sysfs counters, fdinfo and netlink
// events, and keeps what it has seen of each device across unbind/rebind.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <prometheus/metric_family.h>

#include "model.hpp"
#include "netlink.hpp"
#include "neuron_tools/cli.hpp"

namespace neuron::tools::monitor {

/// The netlink event kinds counted per device (NEURON_EVENT_*).
inline constexpr const char *event_kinds[] = {"reset", "hang", "error", "fatal"};

/// A device the monitor has seen, keyed by PCI address: it outlives an
/// unbind so that its absence can be reported.
struct KnownDevice {
    unsigned index = 0; ///< N of accelN when last seen
    std::string bdf;
    bool present = false;
    uint64_t appearances = 0;               ///< times it was found (1 at the first sample)
    uint64_t disappearances = 0;            ///< times it went away
    std::map<std::string, uint64_t> events; ///< netlink events by kind
    std::optional<uint64_t> host_memory_mapped;
};

/// Everything one sample shows.
struct State {
    top::Snapshot snapshot;
    std::map<std::string, KnownDevice> known; ///< by PCI address
    uint64_t samples = 0;
    bool netlink = false;           ///< listening to the driver's events
    std::string event_source;       ///< "netlink" or why not
    std::vector<top::Event> events; ///< since the previous sample
};

class Monitor {
  public:
    /// use_netlink false: never join the netlink family (tests, --no-netlink).
    Monitor(Roots roots, bool use_netlink);

    /// Takes a snapshot and folds the events received since the last one
    /// into the state.
    const State &sample();

    /// Waits until `deadline`, receiving netlink events as they arrive;
    /// returns early when `stop` returns true (checked every 100 ms).
    void wait_until(std::chrono::steady_clock::time_point deadline,
                    const std::function<bool()> &stop);

    const State &state() const { return state_; }

  private:
    Roots roots_;
    bool use_netlink_;
    std::unique_ptr<top::NetlinkEvents> netlink_;
    std::vector<top::Event> pending_;
    State state_;

    void connect_netlink();
    void update_devices();
};

/// The Prometheus metric families of a state (see neuron-monitor(1), METRICS).
std::vector<prometheus::MetricFamily> metric_families(const State &s);

/// The same as one JSON object (one line of --json output).
nlohmann::ordered_json sample_json(const State &s);

/// A --listen address: PORT (every address), IP:PORT or [IPv6]:PORT.
struct ListenAddress {
    std::string host; ///< empty: every IPv4 address
    bool ipv6 = false;
    uint16_t port = 0;
    std::string civetweb() const; ///< the form the HTTP server takes
    std::string url_host() const; ///< the host part of the URL served
};

/// Parses --listen; nullopt when it is not one of the forms above.
std::optional<ListenAddress> parse_listen_address(std::string_view text);

/// Binds a socket to @p a and closes it: 0 or the errno that says why not.
int try_bind(const ListenAddress &a);

/// Whether the HTTP server (civetweb, as the system built it) listens on
/// IPv6 addresses: Debian's does not.
bool http_server_has_ipv6();

/// The whole program (exit statuses: neuron_tools/cli.hpp), its streams and roots
/// injectable for tests.
int run(int argc, const char *const *argv, std::ostream &out, std::ostream &err,
        const Roots &roots);

} // namespace neuron::tools::monitor
