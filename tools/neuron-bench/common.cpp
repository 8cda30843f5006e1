// SPDX-License-Identifier: MIT
#include <algorithm>
#include <deque>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "bench.hpp"
#include "peer.hpp"

namespace nbench {

Stats Stats::of(std::vector<double> values) {
    if (values.empty())
        throw std::invalid_argument("no measurements to summarize");
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    const double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    return Stats{median, values.front(), values.back(), static_cast<unsigned>(n)};
}

Stats repeat_runs(unsigned repeat, const std::function<double()> &once, bool warm_up) {
    if (warm_up)
        once();
    std::vector<double> values;
    for (unsigned i = 0; i < std::max(repeat, 1u); i++)
        values.push_back(once());
    return Stats::of(std::move(values));
}

Rounds interleaved_rounds(unsigned repeat, const std::vector<Figure> &figures) {
    for (const auto &f : figures)
        f.once();
    Rounds values;
    for (unsigned round = 0; round < std::max(repeat, 1u); round++)
        for (const auto &f : figures)
            values[f.column].push_back(f.once());
    return values;
}

double job_timeout_s() {
    static const double seconds = [] {
        std::ifstream f("/sys/module/neuron/parameters/job_timeout_ms");
        unsigned ms = 0;
        return f >> ms && ms > 0 ? ms / 1000.0 : 5.0; // else the module's default
    }();
    return seconds;
}

bool Options::wants(const std::string &section) const {
    return sections.empty() ||
           std::find(sections.begin(), sections.end(), section) != sections.end();
}

double rate_in_flight(unsigned depth, unsigned count,
                      const std::function<neuron::Fence(unsigned)> &submit) {
    std::deque<neuron::Fence> in_flight;
    const double t0 = now_s();
    for (unsigned i = 0; i < count; i++) {
        if (in_flight.size() == depth) {
            in_flight.front().wait();
            in_flight.pop_front();
        }
        in_flight.push_back(submit(i));
    }
    for (auto &f : in_flight)
        f.wait();
    return count / (now_s() - t0);
}

std::vector<uint64_t> copy_sizes(const Options &o) {
    std::vector<uint64_t> sizes;
    for (uint64_t s = o.min_copy; s <= o.max_copy; s *= o.quick ? 16 : 4)
        sizes.push_back(s);
    return sizes;
}

std::string size_label(uint64_t bytes) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
    unsigned u = 0;
    while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    return fmt::format("{} {}", bytes, units[u]);
}

std::optional<neuron::Device> open_device(const Options &o) {
    if (o.no_device)
        return std::nullopt;
    if (!o.selector.source.empty()) // -d or $NEURON_DEVICE: that one, or fail
        return neuron::open_selected(o.selector);
    if (neuron::enumerate_sysfs().empty())
        return std::nullopt;
    return neuron::open_selected(o.selector);
}

std::optional<BlockPeer> open_peer(const Options &o, std::string &why_not) {
    if (o.nvme.empty()) {
        why_not = "no peer device (--nvme)";
        return std::nullopt;
    }
    try {
        return std::optional<BlockPeer>(std::in_place, o.nvme);
    } catch (const std::exception &e) {
        why_not = e.what();
        return std::nullopt;
    }
}

} // namespace nbench
