// SPDX-License-Identifier: MIT
// neuron-monitor's command line, the sampling loop, the HTTP exposer and
// the JSON-lines output.
#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <civetweb.h>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <netinet/in.h>
#include <ostream>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <sys/socket.h>
#include <unistd.h>

#include "monitor.hpp"
#include <neuron/error.hpp>

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

std::optional<ListenAddress> parse_listen_address(std::string_view text) {
    ListenAddress a;
    std::string_view port = text;
    if (!text.empty() && text.front() == '[') {
        auto close = text.find("]:");
        if (close == std::string_view::npos || close < 2)
            return std::nullopt;
        a.host = std::string(text.substr(1, close - 1));
        a.ipv6 = true;
        port = text.substr(close + 2);
        in6_addr v6{};
        if (inet_pton(AF_INET6, a.host.c_str(), &v6) != 1)
            return std::nullopt;
    } else if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
        a.host = std::string(text.substr(0, colon));
        port = text.substr(colon + 1);
        in_addr v4{};
        if (inet_pton(AF_INET, a.host.c_str(), &v4) != 1)
            return std::nullopt;
    }
    if (port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    unsigned long p = std::stoul(std::string(port));
    if (p > 65535)
        return std::nullopt;
    a.port = static_cast<uint16_t>(p);
    return a;
}

std::string ListenAddress::civetweb() const {
    if (host.empty())
        return std::to_string(port);
    return ipv6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

std::string ListenAddress::url_host() const {
    if (host.empty())
        return "0.0.0.0";
    return ipv6 ? "[" + host + "]" : host;
}

int try_bind(const ListenAddress &a) {
    int family = a.ipv6 ? AF_INET6 : AF_INET;
    int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int one = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int rc;
    if (a.ipv6) {
        sockaddr_in6 sa{};
        sa.sin6_family = AF_INET6;
        sa.sin6_port = htons(a.port);
        inet_pton(AF_INET6, a.host.c_str(), &sa.sin6_addr);
        rc = ::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa));
    } else {
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(a.port);
        if (a.host.empty())
            sa.sin_addr.s_addr = htonl(INADDR_ANY);
        else
            inet_pton(AF_INET, a.host.c_str(), &sa.sin_addr);
        rc = ::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa));
    }
    int e = rc == 0 ? 0 : errno;
    ::close(fd);
    return e;
}

bool http_server_has_ipv6() {
    return mg_check_feature(8) != 0; // 8: IPv6, civetweb.h
}

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
    std::string device;
    add_device_option(app, device, "The one device to export, instead of every device");
    in_range(app.add_option("--interval", interval, "Seconds between two samples (default 5.0)"),
             0.05, 3600);
    app.add_flag("-j,--json", as_json,
                 "Print every sample as a JSON object on one line instead of serving HTTP");
    app.add_option("-n,--count", count,
                   "Stop after this many samples (default: run until "
                   "SIGINT or SIGTERM)");
    app.add_flag("--no-netlink", no_netlink, "Do not listen to the driver's netlink events");
    app.footer("Exit status: 0 ok, 1 cannot serve, 2 usage error. " +
               man_page_footer("neuron-monitor"));
    if (auto status = parse_command_line(app, argc, argv, out, err))
        return *status;
    Roots r = roots;
    if (auto status = select_device(app, device, r.device, err))
        return *status;
    std::optional<ListenAddress> address;
    if (!as_json) {
        address = parse_listen_address(listen);
        if (!address)
            return usage_error(app,
                               fmt::format("--listen '{}': expected PORT, IP:PORT or [IPv6]:PORT "
                                           "with a port from 0 to 65535",
                                           listen),
                               err);
    }
    std::vector<neuron::Device> own_sim;
    try {
        own_sim = simulate_if_none(r.device);
    } catch (const neuron::Error &e) {
        return usage_error(app, e.what(), err);
    }
    g_stop = false;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    Monitor monitor(r, !no_netlink && !r.device.is_sim());
    // Once, and again only after devices were seen and are gone.
    bool warned = false;
    auto warn_no_device = [&](const State &s) {
        if (!s.snapshot.devices.empty()) {
            warned = false;
            return;
        }
        if (warned)
            return;
        warned = true;
        err << "neuron-monitor: warning: no device visible ("
            << (r.device.is_sim()          ? "no process simulates one"
                : s.snapshot.driver.loaded ? "the driver has no device"
                                           : "the driver is not loaded")
            << "): exporting only the driver's state until one appears; the simulator's "
               "devices: -d sim\n";
        err.flush();
    };

    if (as_json) {
        std::signal(SIGPIPE, on_signal);
        sample_loop(monitor, interval, count, [&](const State &s) {
            warn_no_device(s);
            out << sample_json(s).dump() << "\n";
            out.flush();
            return static_cast<bool>(out);
        });
        return exit_ok;
    }

    auto published = std::make_shared<Published>();
    published->publish(metric_families(monitor.sample()));
    // The exposer's own errors are its web server's internals: try the
    // address first, for the system's reason.
    if (address->ipv6 && !http_server_has_ipv6()) {
        err << "neuron-monitor: cannot listen on " << listen
            << ": the HTTP server (the system's civetweb) was built without IPv6; listen on an "
               "IPv4 address (IP:PORT, or PORT for every one)\n";
        return exit_error;
    }
    if (int e = try_bind(*address)) {
        err << "neuron-monitor: cannot listen on " << listen << ": " << std::strerror(e)
            << (e == EADDRINUSE ? " (another neuron-monitor? pick another port with --listen)" : "")
            << "\n";
        return exit_error;
    }
    std::unique_ptr<prometheus::Exposer> exposer;
    try {
        exposer = std::make_unique<prometheus::Exposer>(address->civetweb(), 2);
    } catch (const std::exception &) {
        err << "neuron-monitor: cannot listen on " << listen
            << ": the address was taken while starting\n";
        return exit_error;
    }
    exposer->RegisterCollectable(published);
    std::vector<int> ports = exposer->GetListeningPorts();
    err << "neuron-monitor: serving Prometheus metrics on http://" << address->url_host() << ":"
        << (ports.empty() ? 0 : ports.front()) << "/metrics, every " << interval << " s; "
        << monitor.state().event_source << "\n";
    err.flush();
    warn_no_device(monitor.state());
    bool first = true;
    sample_loop(monitor, interval, count, [&](const State &s) {
        warn_no_device(s);
        if (!first) // the first sample was published before listening
            published->publish(metric_families(s));
        first = false;
        return true;
    });
    return exit_ok;
}

} // namespace neuron::tools::monitor
