// SPDX-License-Identifier: MIT
// neuron-top: sampling, batch output and the program.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model.hpp"
#include "netlink.hpp"
#include "neuron_tools/cli.hpp"

namespace neuron::tools::top {

/// Takes snapshots and turns each into a Model against the previous one,
/// with the events seen since (netlink, or the counters as a fallback).
class Sampler {
  public:
    /// use_netlink false: never try the netlink family (tests, --no-netlink).
    Sampler(Roots roots, bool use_netlink);

    /// The first snapshot: the baseline of the first sample.
    void start();

    /// A new snapshot; the model of the interval since the last one.
    Model sample();

    /// Waits until `deadline`, collecting netlink events as they arrive;
    /// calls on_event (if set) after each batch. Returns early when
    /// `stop` returns true (checked at least every 100 ms).
    void wait_until(std::chrono::steady_clock::time_point deadline,
                    const std::function<void()> &on_event = {},
                    const std::function<bool()> &stop = {});

    /// Events collected since the last sample() (to show them at once).
    const std::deque<Event> &events() const { return events_; }

    /// "events: netlink" or why it polls the counters instead.
    const std::string &event_source() const { return source_; }

    bool netlink() const { return netlink_.is_open(); }

    /// Events of the last sample() only.
    const std::vector<Event> &new_events() const { return new_events_; }

  private:
    Roots roots_;
    NetlinkEvents netlink_;
    std::string source_;
    std::optional<Snapshot> prev_;
    std::deque<Event> events_;
    std::vector<Event> new_events_;
    std::vector<Event> pending_; ///< netlink events not yet in a sample
};

/// One sample as text lines (see neuron-top(1), BATCH OUTPUT).
std::string batch_text(const Model &m, const std::vector<Event> &events, unsigned sample);

/// One sample as a JSON object (one line of --json output).
nlohmann::ordered_json batch_json(const Model &m, const std::vector<Event> &events,
                                  unsigned sample);

/// The size of a screen printed by --screen.
struct ScreenSize {
    int columns = 0;
    int rows = 0;
};

/// "COLSxROWS" (20 to 1000 columns, 5 to 1000 rows); nullopt otherwise.
std::optional<ScreenSize> parse_screen_size(std::string_view text);

/// The whole program (exit statuses: neuron_tools/cli.hpp), its streams and roots
/// injectable for tests.
int run(int argc, const char *const *argv, std::ostream &out, std::ostream &err,
        const Roots &roots);

} // namespace neuron::tools::top
