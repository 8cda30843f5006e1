// SPDX-License-Identifier: MIT
// neuron-monitor: the Prometheus text of a known workload on the fake tree
// (golden file and exact values), a device going away and coming back, the
// driver unloaded, JSON lines, a scrape over HTTP, and --help and the
// metrics vs the man page.
#include <atomic>
#include <prometheus/text_serializer.h>
#include <regex>
#include <sstream>
#include <thread>

#include "fake_tree.hpp"
#include "http_client.hpp"
#include "monitor.hpp"
#include "test_support.hpp"

// cmocka last: it defines macros (fail, ...) that clash with C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
}

namespace {

namespace mon = neuron::tools::monitor;
namespace fs = std::filesystem;
using fake::MiB;

constexpr uint64_t ms = 1000000;

std::string text_of(const mon::State &s) {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, mon::metric_families(s));
    return out.str();
}

// The value of the one sample `series` (name{labels}) in exposition text.
std::optional<double> value_of(const std::string &text, const std::string &series) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(series + " ", 0) == 0)
            return std::stod(line.substr(series.size() + 1));
    return std::nullopt;
}

void expect(const std::string &text, const std::string &series, double want) {
    auto v = value_of(text, series);
    if (!v || *v != want)
        fprintf(stderr, "%s: want %g, got %s\n", series.c_str(), want,
                v ? std::to_string(*v).c_str() : "no sample");
    assert_true(v && *v == want);
}

// A known workload on the standard tree: counters of accel0 set to values
// whose metrics are checked exactly.
void workload(fake::Tree &t) {
    t.standard();
    t.set_core(0, 0, 450 * ms, 120, 0, 0, 0);
    t.set_core(0, 1, 950 * ms, 30, 1, 2, 1);
    t.set_dma(0, 0, 12 * MiB);
    t.set_attr(0, "memory_used", std::to_string(96 * MiB));
    t.set_attr(0, "reset_count", "2");
    t.set_attr(0, "host_memory_mapped", std::to_string(1 * MiB));
}

const std::string d0 = R"(device="0",pci_address="0000:00:03.0")";
const std::string d1 = R"(device="1",pci_address="0000:00:04.0")";

void test_metrics(void **) {
    fake::Tree t;
    workload(t);
    mon::Monitor m(t.roots(), false);
    std::string text = text_of(m.sample());

    expect(text, "neuron_driver_loaded", 1);
    expect(text, R"(neuron_driver_info{version="0.1.0"})", 1);
    expect(text, "neuron_core_busy_seconds_total{" + d0 + R"(,core="0"})", 0.45);
    expect(text, "neuron_core_busy_seconds_total{" + d0 + R"(,core="1"})", 0.95);
    expect(text, "neuron_core_jobs_total{" + d0 + R"(,core="0"})", 120);
    expect(text, "neuron_core_instructions_total{" + d0 + R"(,core="0"})", 12000);
    expect(text, "neuron_core_flops_total{" + d0 + R"(,core="0"})", 120000);
    expect(text, "neuron_core_dma_bytes_total{" + d0 + R"(,core="0"})", 120 * 4096);
    expect(text, "neuron_core_job_faults_total{" + d0 + R"(,core="1"})", 1);
    expect(text, "neuron_core_job_timeouts_total{" + d0 + R"(,core="1"})", 1);
    expect(text, "neuron_core_resets_total{" + d0 + R"(,core="1"})", 2);
    expect(text, "neuron_dma_bytes_total{" + d0 + R"(,engine="0"})", 12 * MiB);
    expect(text, "neuron_dma_descriptors_total{" + d0 + R"(,engine="0"})", 3072);
    expect(text, "neuron_device_memory_used_bytes{" + d0 + "}", 96 * MiB);
    expect(text, "neuron_device_memory_total_bytes{" + d1 + "}", 256 * MiB);
    expect(text, "neuron_device_host_memory_mapped_bytes{" + d0 + "}", MiB);
    expect(text, "neuron_device_resets_total{" + d0 + "}", 2);
    expect(text, "neuron_device_state{" + d0 + R"(,state="ready"})", 1);
    expect(text, "neuron_device_state{" + d0 + R"(,state="failed"})", 0);
    expect(text, "neuron_device_up{" + d1 + "}", 1);
    // The file shared by 1200 and 1201 (dup, fork) counts once, for 1200.
    expect(text, "neuron_process_device_memory_bytes{" + d0 + R"(,pid="1200",command="train"})",
           64 * MiB);
    expect(text, "neuron_process_host_memory_bytes{" + d0 + R"(,pid="1200",command="train"})", MiB);
    expect(text,
           "neuron_process_core_busy_seconds_total{" + d0 +
               R"(,pid="1300",command="infer",core="1"})",
           1.0);
    assert_false(value_of(text, "neuron_process_device_memory_bytes{" + d0 +
                                    R"(,pid="1201",command="train-worker"})")
                     .has_value());
    expect(text, "neuron_monitor_netlink_connected", 0);
    // No netlink: no event counts rather than false zeros.
    assert_true(text.find("neuron_device_events_total") == std::string::npos);
    expect(text, "neuron_monitor_samples_total", 1);

    // The whole text, but the time of the sample.
    std::string stable = std::regex_replace(
        text, std::regex("(neuron_monitor_last_sample_timestamp_seconds) .*"), "$1 TIME");
    assert_true(support::golden("neuron-monitor-metrics.txt", stable));

    // A later sample shows the new values.
    t.set_core(0, 0, 1450 * ms, 220, 0, 0, 0);
    text = text_of(m.sample());
    expect(text, "neuron_core_busy_seconds_total{" + d0 + R"(,core="0"})", 1.45);
    expect(text, "neuron_core_jobs_total{" + d0 + R"(,core="0"})", 220);
    expect(text, "neuron_monitor_samples_total", 2);
}

void remove_device(fake::Tree &t, unsigned index, const std::string &bdf) {
    fs::remove(t.root / "sys/class/accel" / ("accel" + std::to_string(index)));
    fs::remove(t.root / "sys/bus/pci/devices" / bdf);
    fs::remove_all(t.pci(bdf));
}

void test_device_away_and_back(void **) {
    fake::Tree t;
    workload(t);
    mon::Monitor m(t.roots(), false);
    m.sample();
    assert_true(m.state().events.empty());

    remove_device(t, 1, "0000:00:04.0");
    const mon::State &s = m.sample();
    assert_int_equal(s.events.size(), 1);
    assert_string_equal(s.events[0].kind.c_str(), "removed");
    assert_int_equal(s.events[0].device, 1);
    std::string text = text_of(s);
    expect(text, "neuron_device_up{" + d1 + "}", 0);
    expect(text, "neuron_device_removals_total{" + d1 + "}", 1);
    assert_false(value_of(text, "neuron_core_jobs_total{" + d1 + R"(,core="0"})").has_value());
    expect(text, "neuron_core_jobs_total{" + d0 + R"(,core="0"})", 120);
    auto j = mon::sample_json(s);
    assert_false(j["devices"][1]["present"].get<bool>());
    assert_true(j["devices"][1].find("neuron_cores") == j["devices"][1].end());

    // Bound again: counters from zero, the device up again.
    t.add_device(1, "0000:00:04.0", 0, 2, 256 * MiB, 0, "ready");
    t.set_core(1, 1, 5 * ms, 3, 0, 0, 0);
    const mon::State &back = m.sample();
    assert_int_equal(back.events.size(), 1);
    assert_string_equal(back.events[0].kind.c_str(), "added");
    text = text_of(back);
    expect(text, "neuron_device_up{" + d1 + "}", 1);
    expect(text, "neuron_device_removals_total{" + d1 + "}", 1);
    expect(text, "neuron_core_jobs_total{" + d1 + R"(,core="1"})", 3);
    assert_int_equal(back.known.at("0000:00:04.0").appearances, 2);

    // Being unbound: attributes unreadable, so the device counts as gone
    // instead of showing zeroed counters.
    fs::remove(t.attrs(1) / "state");
    text = text_of(m.sample());
    expect(text, "neuron_device_up{" + d1 + "}", 0);
    assert_false(value_of(text, "neuron_core_jobs_total{" + d1 + R"(,core="1"})").has_value());
}

void test_driver_unloaded(void **) {
    fake::Tree t;
    workload(t);
    mon::Monitor m(t.roots(), false);
    m.sample();
    remove_device(t, 0, "0000:00:03.0");
    remove_device(t, 1, "0000:00:04.0");
    fs::remove_all(t.root / "sys/module/neuron");
    std::string text = text_of(m.sample());
    expect(text, "neuron_driver_loaded", 0);
    assert_false(value_of(text, R"(neuron_driver_info{version="0.1.0"})").has_value());
    expect(text, "neuron_device_up{" + d0 + "}", 0);
    expect(text, "neuron_device_up{" + d1 + "}", 0);
    assert_int_equal(m.state().events.size(), 2);

    t.set_driver("0.1.0");
    t.add_device(0, "0000:00:03.0", -1, 2, 256 * MiB, 0, "ready");
    text = text_of(m.sample());
    expect(text, "neuron_driver_loaded", 1);
    expect(text, "neuron_device_up{" + d0 + "}", 1);
    expect(text, "neuron_core_jobs_total{" + d0 + R"(,core="0"})", 0);
}

struct Result {
    int status;
    std::string out, err;
};

Result run_monitor(const neuron::tools::Roots &roots, std::vector<const char *> args) {
    args.insert(args.begin(), "neuron-monitor");
    std::ostringstream out, err;
    int status = mon::run(static_cast<int>(args.size()), args.data(), out, err, roots);
    return {status, out.str(), err.str()};
}

void test_json_lines(void **) {
    fake::Tree t;
    workload(t);
    Result r =
        run_monitor(t.roots(), {"--json", "--count", "2", "--interval", "0.05", "--no-netlink"});
    assert_int_equal(r.status, 0);
    std::istringstream lines(r.out);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
        auto j = nlohmann::json::parse(line);
        n++;
        assert_int_equal(j["sample"], n);
        assert_true(j["driver_loaded"].get<bool>());
        assert_int_equal(j["devices"].size(), 2);
        const auto &dev = j["devices"][0];
        assert_string_equal(dev["bdf"].get<std::string>().c_str(), "0000:00:03.0");
        assert_int_equal(dev["neuron_cores"][1]["busy_ns"], 950 * ms);
        assert_int_equal(dev["dma_engines"][0]["bytes"], 12 * MiB);
        assert_int_equal(dev["host_memory_mapped"], MiB);
        assert_int_equal(j["processes"].size(), 3);
        assert_int_equal(j["processes"][0]["pid"], 1200);
        assert_int_equal(j["processes"][0]["engine_ns"]["0"], 5000000000ull);
    }
    assert_int_equal(n, 2);
}

void test_http(void **) {
    fake::Tree t;
    workload(t);
    int port = http::free_port();
    std::string listen = "127.0.0.1:" + std::to_string(port);
    Result r{};
    std::atomic<bool> served{false};
    std::thread server([&] {
        r = run_monitor(t.roots(), {"--listen", listen.c_str(), "--count", "40", "--interval",
                                    "0.05", "--no-netlink"});
        served = true;
    });
    // Scrape while the monitor runs (its 40 samples), however late it
    // starts listening on a loaded machine.
    std::string reply;
    while (reply.empty() && !served) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        reply = http::get(port, "/metrics");
    }
    server.join();
    assert_int_equal(r.status, 0);
    assert_true(r.err.find("neuron-monitor: serving Prometheus metrics on http://" + listen +
                           "/metrics, every 0.05 s") == 0);
    assert_true(reply.rfind("HTTP/1.1 200", 0) == 0);
    assert_true(reply.find("Content-Type: text/plain") != std::string::npos);
    assert_true(reply.find("\nneuron_core_busy_seconds_total{" + d0 + R"(,core="1"} 0.95)") !=
                std::string::npos);

    // The port is taken: exit status 1 and why.
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1; // the scrapes' connections may still be in TIME_WAIT
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a = http::loopback(port);
    assert_int_equal(bind(s, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
    assert_int_equal(::listen(s, 1), 0);
    r = run_monitor(t.roots(), {"--listen", listen.c_str(), "--count", "1", "--no-netlink"});
    close(s);
    assert_int_equal(r.status, 1);
    assert_true(r.err.find("neuron-monitor: cannot listen on " + listen +
                           ": Address already in use (another neuron-monitor? pick another "
                           "port with --listen)\n") == 0);

    // Addresses that are not addresses: usage errors that say what is expected.
    for (const char *bad : {"foo:bar", "99999", "1.2.3:80", "[::1:80", "127.0.0.1:"}) {
        r = run_monitor(t.roots(), {"--listen", bad, "--count", "1", "--no-netlink"});
        assert_int_equal(r.status, 2);
        assert_true(r.err.find(std::string("neuron-monitor: --listen '") + bad +
                               "': expected PORT, IP:PORT or [IPv6]:PORT") == 0);
    }
    // An IPv6 address: served where the HTTP server has IPv6, else status 1
    // and why (Debian's civetweb has none).
    std::string v6 = "[::1]:" + std::to_string(http::free_port());
    r = run_monitor(t.roots(), {"--listen", v6.c_str(), "--count", "1", "--no-netlink"});
    if (mon::http_server_has_ipv6()) {
        assert_int_equal(r.status, 0);
        assert_true(r.err.find("neuron-monitor: serving Prometheus metrics on http://" + v6) == 0);
    } else {
        assert_int_equal(r.status, 1);
        assert_true(r.err.find("neuron-monitor: cannot listen on " + v6 +
                               ": the HTTP server (the system's civetweb) was built without "
                               "IPv6") == 0);
    }
    auto la = mon::parse_listen_address("[::1]:0");
    assert_true(la && la->ipv6 && la->host == "::1" && la->port == 0);
    la = mon::parse_listen_address("9880");
    assert_true(la && la->host.empty() && la->port == 9880 && la->url_host() == "0.0.0.0");
}

// No device: one warning, again only after devices came and went.
void test_no_device_warning(void **) {
    fake::Tree t;
    Result r =
        run_monitor(t.roots(), {"--json", "--count", "3", "--interval", "0.05", "--no-netlink"});
    assert_int_equal(r.status, 0);
    const std::string warning = "neuron-monitor: warning: no device visible (the driver is not "
                                "loaded): exporting only the driver's state until one appears; "
                                "the simulator's devices: -d sim\n";
    assert_string_equal(r.err.c_str(), warning.c_str());
}

void test_help_and_man(void **) {
    fake::Tree t;
    Result r = run_monitor(t.roots(), {"--help"});
    assert_int_equal(r.status, 0);
    fs::path page = std::string(NEURON_TOOLS_SOURCE_DIR) + "/man/neuron-monitor.1";
    auto help = support::long_options(r.out);
    auto man = support::man_options(page);
    if (help != man)
        fprintf(stderr, "--help: %s\nman:    %s\n", support::join(help).c_str(),
                support::join(man).c_str());
    assert_true(help == man);

    r = run_monitor(t.roots(), {"--interval", "0"});
    assert_int_equal(r.status, 2);
    r = run_monitor(t.roots(), {"--version"});
    assert_true(r.out.rfind("neuron-monitor ", 0) == 0);

    // Every metric the monitor can export is in METRICS, and nothing else.
    workload(t);
    mon::Monitor m(t.roots(), false);
    mon::State s = m.sample();
    s.netlink = true; // the event counts are exported only then
    std::set<std::string> exported;
    for (const auto &f : mon::metric_families(s))
        exported.insert(f.name);
    std::string text = support::slurp(page);
    size_t begin = text.find(".SH METRICS");
    size_t end = text.find("\n.SH ", begin + 1);
    std::string section = text.substr(begin, end - begin);
    std::set<std::string> documented;
    std::regex re(R"(\n\.B (neuron_[a-z_]+)\n)");
    for (auto it = std::sregex_iterator(section.begin(), section.end(), re);
         it != std::sregex_iterator(); ++it)
        documented.insert((*it)[1].str());
    if (exported != documented)
        fprintf(stderr, "exported:   %s\ndocumented: %s\n", support::join(exported).c_str(),
                support::join(documented).c_str());
    assert_true(exported == documented);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_device_away_and_back),
        cmocka_unit_test(test_driver_unloaded),
        cmocka_unit_test(test_json_lines),
        cmocka_unit_test(test_http),
        cmocka_unit_test(test_no_device_warning),
        cmocka_unit_test(test_help_and_man),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
