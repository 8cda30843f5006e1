// SPDX-License-Identifier: MIT
// neuron-monitor's command line, the sampling loop, the HTTP exposer and
// the JSON-lines output.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <mutex>
#include <ostream>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include "monitor.hpp"
#include "neuron_tools/cli.hpp"

namespace neuron::tools::monitor {

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) {
    g_stop = true;
}

/// What a scrape returns: the families of the latest sample.
class Published : public prometheus::Collectable {
  public:
    void publish(std::vector<prometheus::MetricFamily> families) {
        std::lock_guard g(lock_);
        families_ = std::move(families);
    }
    std::vector<prometheus::MetricFamily> Collect() const override {
        std::lock_guard g(lock_);
        return families_;
    }

  private:
    mutable std::mutex lock_; ///< protects families_
    std::vector<prometheus::MetricFamily> families_;
};

// Samples every `interval` seconds, `count` times (0: until SIGINT/SIGTERM),
// handing each state to `on_sample`, which returns false to stop.
void sample_loop(Monitor &monitor, double interval, unsigned count,
                 const std::function<bool(const State &)> &on_sample) {
    auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(interval));
    auto next = std::chrono::steady_clock::now();
    for (unsigned i = 1; count == 0 || i <= count; i++) {
        if (!on_sample(monitor.sample()))
            return;
        if (count && i == count)
            return;
        next += period;
        monitor.wait_until(next, [] { return g_stop.load(); });
        if (g_stop)
            return;
    }
}

} // namespace

int run(int argc, const char *const *argv, std::ostream &out, std::ostream &err,
        const Roots &roots) {
    CLI::App app{"Exports the counters of neuron accelerator devices, the processes using them "
                 "and the driver's events to Prometheus (HTTP) or as JSON lines.",
                 "neuron-monitor"};
    double interval = 5.0;
    unsigned count = 0;
    std::string listen = "127.0.0.1:9880";
    bool as_json = false, no_netlink = false;
    app.add_option("-l,--listen", listen,
                   "Serve /metrics on this address: IP:PORT, [IPv6]:PORT or PORT for every "
                   "address (default 127.0.0.1:9880; port 0 picks a free one)")
        ->type_name("ADDRESS");
    app.add_option("-d,--interval", interval, "Seconds between two samples (default 5.0)")
        ->check(CLI::Range(0.05, 3600.0));
    app.add_flag("-j,--json", as_json,
                 "Print every sample as a JSON object on one line instead of serving HTTP");
    app.add_option("-n,--count", count,
                   "Stop after this many samples (default: run until "
                   "SIGINT or SIGTERM)");
    app.add_flag("--no-netlink", no_netlink, "Do not listen to the driver's netlink events");
    app.footer("Exit status: 0 ok, 1 cannot serve, 2 usage error. See neuron-monitor(1).");
    if (auto status = parse_command_line(app, argc, argv, out, err))
        return *status;
    g_stop = false;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    Monitor monitor(roots, !no_netlink);

    if (as_json) {
        std::signal(SIGPIPE, on_signal);
        sample_loop(monitor, interval, count, [&](const State &s) {
            out << sample_json(s).dump() << "\n";
            out.flush();
            return static_cast<bool>(out);
        });
        return exit_ok;
    }

    auto published = std::make_shared<Published>();
    published->publish(metric_families(monitor.sample()));
    std::unique_ptr<prometheus::Exposer> exposer;
    try {
        exposer = std::make_unique<prometheus::Exposer>(listen, 2);
    } catch (const std::exception &e) {
        err << "neuron-monitor: cannot listen on " << listen << ": " << e.what() << "\n";
        return exit_error;
    }
    exposer->RegisterCollectable(published);
    std::vector<int> ports = exposer->GetListeningPorts();
    err << "neuron-monitor: serving Prometheus metrics on port "
        << (ports.empty() ? 0 : ports.front()) << " (" << listen << "), /metrics, every "
        << interval << " s; " << monitor.state().event_source << "\n";
    err.flush();
    bool first = true;
    sample_loop(monitor, interval, count, [&](const State &s) {
        if (!first) // the first sample was published before listening
            published->publish(metric_families(s));
        first = false;
        return true;
    });
    return exit_ok;
}

} // namespace neuron::tools::monitor
