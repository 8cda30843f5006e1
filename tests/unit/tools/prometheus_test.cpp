// SPDX-License-Identifier: MIT
// neuron-monitor scraped by a real Prometheus server (Debian's prometheus,
// on loopback ports): after the counters of the fake sysfs tree change, a
// query through Prometheus' HTTP API returns exactly the values sysfs
// shows, scraped within the monitor's sampling interval plus the scrape
// interval of the change.
#include <chrono>
#include <cmath>
#include <csignal>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "fake_tree.hpp"
#include "http_client.hpp"

// cmocka last: it defines macros (fail, ...) that clash with C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
}

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using fake::MiB;

constexpr double monitor_interval_s = 0.25;
constexpr int scrape_interval_s = 1;
// Time for the processes to be scheduled on a loaded 2-core machine, on top
// of the sampling and scrape intervals.
constexpr double scheduling_s = 1.0;

/// A child process, stopped with SIGTERM when this goes away.
class Child {
  public:
    Child(std::vector<std::string> argv, const std::vector<std::string> &env, const fs::path &log) {
        pid_ = fork();
        if (pid_ == 0) {
            int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(fd, 1);
            dup2(fd, 2);
            for (const std::string &e : env)
                putenv(const_cast<char *>(e.c_str()));
            std::vector<char *> args;
            for (std::string &a : argv)
                args.push_back(a.data());
            args.push_back(nullptr);
            execv(args[0], args.data());
            _exit(127);
        }
    }
    ~Child() {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            waitpid(pid_, nullptr, 0);
        }
    }
    Child(const Child &) = delete;
    Child &operator=(const Child &) = delete;
    bool running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

  private:
    pid_t pid_ = -1;
};

/// The body of GET `path` from 127.0.0.1:port; nullopt unless it answers 200.
std::optional<std::string> http_get(int port, const std::string &path) {
    std::string reply = http::get(port, path);
    size_t body = reply.find("\r\n\r\n");
    // The server answers in the request's HTTP version.
    if (reply.rfind("HTTP/1.0 200", 0) != 0 || body == std::string::npos)
        return std::nullopt;
    return reply.substr(body + 4);
}

std::string url_encode(const std::string &s) {
    std::string out;
    for (unsigned char c : s) {
        if (isalnum(c) || c == '_' || c == '.' || c == '-')
            out += static_cast<char>(c);
        else {
            char hex[4];
            snprintf(hex, sizeof(hex), "%%%02X", c);
            out += hex;
        }
    }
    return out;
}

/// One sample of an instant query: (timestamp, value); nullopt when the
/// query has no result (yet).
struct Point {
    double timestamp;
    double value;
};

std::optional<Point> query(int port, const std::string &promql) {
    auto body = http_get(port, "/api/v1/query?query=" + url_encode(promql));
    if (!body)
        return std::nullopt;
    auto j = nlohmann::json::parse(*body, nullptr, false);
    if (j.is_discarded() || j["status"] != "success" || j["data"]["result"].size() != 1)
        return std::nullopt;
    const auto &v = j["data"]["result"][0]["value"];
    return Point{v[0].get<double>(), std::stod(v[1].get<std::string>())};
}

std::string slurp(const fs::path &p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

double wall_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Polls `promql` until it returns `want` or `seconds` pass.
std::optional<Point> wait_for(int port, const std::string &promql, double want, double seconds) {
    auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    std::optional<Point> p;
    while (Clock::now() < deadline) {
        p = query(port, promql);
        // Exact but for the rounding of PromQL's arithmetic on doubles.
        if (p && std::abs(p->value - want) <= 1e-12 * std::abs(want))
            return p;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    fprintf(stderr, "%s: want %g, last answer %s\n", promql.c_str(), want,
            p ? std::to_string(p->value).c_str() : "none");
    return std::nullopt;
}

bool reaches(int port, const std::string &promql, double want, double seconds) {
    return wait_for(port, promql, want, seconds).has_value();
}

void test_prometheus(void **) {
    fake::Tree t;
    t.standard();
    t.set_core(0, 1, 950000000, 30, 1, 0, 0);
    t.set_dma(0, 0, 12 * MiB);

    int monitor_port = http::free_port();
    int prom_port = http::free_port();
    assert_true(monitor_port > 0 && prom_port > 0 && monitor_port != prom_port);
    Child monitor({NEURON_MONITOR, "--listen", "127.0.0.1:" + std::to_string(monitor_port),
                   "--interval", std::to_string(monitor_interval_s), "--no-netlink"},
                  {"NEURON_SYSFS_ROOT=" + (t.root / "sys").string(),
                   "NEURON_PROC_ROOT=" + (t.root / "proc").string(),
                   "NEURON_DEV_ROOT=" + (t.root / "dev").string()},
                  t.root / "monitor.log");

    fake::Tree::write(t.root / "prometheus.yml",
                      "global:\n  scrape_interval: " + std::to_string(scrape_interval_s) +
                          "s\n  scrape_timeout: 1s\n"
                          "scrape_configs:\n  - job_name: neuron\n    static_configs:\n"
                          "      - targets: ['127.0.0.1:" +
                          std::to_string(monitor_port) + "']\n");
    Child prometheus({NEURON_PROMETHEUS, "--config.file=" + (t.root / "prometheus.yml").string(),
                      "--storage.tsdb.path=" + (t.root / "tsdb").string(),
                      "--web.listen-address=127.0.0.1:" + std::to_string(prom_port),
                      "--log.level=warn"},
                     {}, t.root / "prometheus.log");

    // Prometheus is up, has scraped the monitor and sees the first values.
    const std::string busy1 =
        R"(neuron_core_busy_seconds_total{device="0",pci_address="0000:00:03.0",core="1"})";
    auto p = wait_for(prom_port, busy1, 0.95, 30);
    if (!p)
        fprintf(stderr, "monitor log:\n%s\nprometheus log:\n%s\n",
                slurp(t.root / "monitor.log").c_str(), slurp(t.root / "prometheus.log").c_str());
    assert_true(p.has_value());
    assert_true(monitor.running() && prometheus.running());
    const std::string labels0 = R"({device="0",pci_address="0000:00:03.0")";
    assert_true(
        reaches(prom_port, "neuron_dma_bytes_total" + labels0 + R"(,engine="0"})", 12 * MiB, 5));
    assert_true(reaches(prom_port, "neuron_device_memory_used_bytes" + labels0 + "}", 80 * MiB, 5));
    assert_true(
        reaches(prom_port, "neuron_core_job_faults_total" + labels0 + R"(,core="1"})", 1, 5));
    assert_true(
        reaches(prom_port,
                "neuron_process_device_memory_bytes" + labels0 + R"(,pid="1200",command="train"})",
                64 * MiB, 5));

    // A known workload between two scrapes: 2.5 s more busy time, 50 jobs,
    // 4 MiB more DMA, 16 MiB more memory in use.
    double changed = wall_now();
    t.set_core(0, 1, 3450000000, 80, 1, 0, 0);
    t.set_dma(0, 0, 16 * MiB);
    t.set_attr(0, "memory_used", std::to_string(96 * MiB));
    double bound = monitor_interval_s + scrape_interval_s + scheduling_s;
    p = wait_for(prom_port, busy1, 3.45, bound + 5);
    assert_true(p.has_value());
    // The sample that shows it was scraped within the intervals of the change.
    fprintf(stderr, "new value scraped %.2f s after the change (bound %.2f s)\n",
            p->timestamp - changed, bound);
    assert_true(p->timestamp - changed <= bound);
    assert_true(reaches(prom_port, "neuron_core_jobs_total" + labels0 + R"(,core="1"})", 80, 1));
    assert_true(
        reaches(prom_port, "neuron_dma_bytes_total" + labels0 + R"(,engine="0"})", 16 * MiB, 1));
    assert_true(reaches(prom_port, "neuron_device_memory_used_bytes" + labels0 + "}", 96 * MiB, 1));
    // PromQL over the series: the busy time grew by exactly 2.5 s.
    assert_true(reaches(
        prom_port, "max_over_time(" + busy1 + "[1m]) - min_over_time(" + busy1 + "[1m])", 2.5, 1));
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_prometheus)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
