// SPDX-License-Identifier: MIT
// neuron-top: screens rendered to text from fixed snapshots of the fake tree
// (80x24 and 160x50), keys, rates measured with real time, counter events,
// batch and JSON output, --screen, --help vs the man page.
#include <chrono>
#include <sstream>
#include <thread>

#include <neuron/buffer.hpp>
#include <neuron/device.hpp>

#include "fake_tree.hpp"
#include "test_support.hpp"
#include "top.hpp"
#include "view.hpp"

// cmocka last: it defines macros (fail, ...) that clash with C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
}

namespace {

namespace top = neuron::tools::top;
using fake::MiB;

constexpr uint64_t ms = 1000000;

void set_fdinfo(fake::Tree &t, int pid, int fd, const std::string &body) {
    fake::Tree::write(t.root / "proc" / std::to_string(pid) / "fdinfo" / std::to_string(fd),
                      "pos:\t0\n" + body);
}

// The standard tree, then one second of a known workload:
//   accel0 nc0 45% busy (train), nc1 95% busy (infer), 12 MiB of DMA;
//   accel1 nc1 10% busy (train-worker); nc1 of accel0 had a fault.
std::pair<top::Snapshot, top::Snapshot> workload(fake::Tree &t) {
    t.standard();
    auto roots = t.roots();
    top::Snapshot a = top::take_snapshot(roots);

    t.set_core(0, 0, 450 * ms, 120, 0, 0, 0);
    t.set_core(0, 1, 950 * ms, 30, 1, 0, 0);
    t.set_core(1, 1, 100 * ms, 10, 0, 0, 0);
    t.set_dma(0, 0, 12 * MiB);
    t.set_attr(0, "memory_used", std::to_string(96 * MiB));
    std::string f7 =
        fake::Tree::neuron_fdinfo("0000:00:03.0", 7, 64 * 1024, 1024, {5000000000 + 450 * ms, 0});
    set_fdinfo(t, 1200, 3, f7);
    set_fdinfo(t, 1200, 4, f7);
    set_fdinfo(t, 1201, 3, f7);
    set_fdinfo(t, 1201, 5,
               fake::Tree::neuron_fdinfo("0000:00:04.0", 9, 16 * 1024, 0, {0, 2600000000}));
    set_fdinfo(t, 1300, 3,
               fake::Tree::neuron_fdinfo("0000:00:03.0", 8, 32 * 1024, 0, {0, 1950000000}));
    top::Snapshot b = top::take_snapshot(roots);

    a.mono_ns = 1000000000000;
    b.mono_ns = a.mono_ns + 1000000000;
    a.wall_s = 1700000000; // 22:13:20 UTC
    b.wall_s = a.wall_s + 1;
    return {a, b};
}

top::Model fixed_model(fake::Tree &t) {
    auto [a, b] = workload(t);
    top::Model m = top::compute(a, b);
    top::add_events(m.events, top::counter_events(a, b, true));
    // A reset reported by netlink a moment earlier.
    m.events.push_front({a.wall_s, 1, 0, "reset", "", "netlink"});
    m.event_source = "events: netlink";
    return m;
}

void test_rates(void **) {
    fake::Tree t;
    top::Model m = fixed_model(t);
    assert_int_equal(m.devices.size(), 2);
    const auto &d0 = m.devices[0];
    assert_true(d0.cores[0].util > 0.4499 && d0.cores[0].util < 0.4501);
    assert_true(d0.cores[1].util > 0.9499 && d0.cores[1].util < 0.9501);
    assert_true(d0.jobs_per_s > 149.9 && d0.jobs_per_s < 150.1);
    assert_true(d0.dma_bytes_per_s > 12.0 * MiB - 1 && d0.dma_bytes_per_s < 12.0 * MiB + 1);
    // One row per (process, device); the file shared by 1200 and 1201 is 1200's.
    assert_int_equal(m.processes.size(), 3);
    auto procs = top::sorted_processes(m, top::SortKey::util);
    assert_int_equal(procs[0].pid, 1300);
    assert_true(procs[0].util > 0.9499 && procs[0].util < 0.9501);
    assert_int_equal(procs[1].pid, 1200);
    assert_int_equal(procs[2].pid, 1201);
    procs = top::sorted_processes(m, top::SortKey::command);
    assert_string_equal(procs[0].command.c_str(), "infer");
}

void test_counter_events(void **) {
    fake::Tree t;
    auto [a, b] = workload(t);
    // Faults are always counter events; resets only when netlink is absent.
    auto ev = top::counter_events(a, b, false);
    assert_int_equal(ev.size(), 1);
    assert_string_equal(ev[0].kind.c_str(), "fault");
    assert_int_equal(ev[0].core, 1);

    t.set_core(1, 0, 0, 0, 0, 1, 1);
    t.set_attr(1, "reset_count", "1");
    top::Snapshot c = top::take_snapshot(t.roots());
    ev = top::counter_events(b, c, true);
    assert_int_equal(ev.size(), 2);
    assert_string_equal(ev[0].kind.c_str(), "timeout");
    assert_string_equal(ev[1].kind.c_str(), "reset");
    assert_int_equal(ev[1].device, 1);
    assert_int_equal(ev[1].core, 0);
    assert_string_equal(ev[1].source.c_str(), "counters");
    assert_int_equal(top::counter_events(b, c, false).size(), 0);

    // A device reset restarts the device's counters: no negative rates.
    t.set_core(0, 0, 0, 0, 0, 1, 0);
    top::Snapshot d = top::take_snapshot(t.roots());
    d.mono_ns = c.mono_ns + 1000000000;
    top::Model m = top::compute(c, d);
    assert_true(m.devices[0].cores[0].util >= 0 && m.devices[0].cores[0].util <= 1.0);
    assert_true(m.devices[0].jobs_per_s >= 0);
}

std::vector<std::string> lines_of(const std::string &text);

void test_screen_80x24(void **) {
    fake::Tree t;
    top::Model m = fixed_model(t);
    top::UiState ui;
    std::string text = top::render_to_text(m, ui, 80, 24);
    assert_true(support::golden("neuron-top-80x24.txt", text));
    // The styled form carries the same characters.
    std::string styled = top::render_to_string(m, ui, 80, 24);
    assert_true(styled.find("accel0") != std::string::npos);
    assert_true(styled.find("\x1b[") != std::string::npos);
    // Paused: the status line says so at 80 columns, the event source gives way.
    ui.paused = true;
    auto lines = lines_of(top::render_to_text(m, ui, 80, 24));
    assert_true(lines.at(23).rfind("[paused] events: ", 0) == 0);
    assert_true(lines.at(23).find("q quit") != std::string::npos);
}

void test_screen_160x50(void **) {
    fake::Tree t;
    top::Model m = fixed_model(t);
    top::UiState ui;
    ui.sort = top::SortKey::memory;
    ui.selected = 1;
    assert_true(support::golden("neuron-top-160x50.txt", top::render_to_text(m, ui, 160, 50)));
}

void test_help_screen(void **) {
    fake::Tree t;
    top::Model m = fixed_model(t);
    top::UiState ui;
    assert_true(top::handle_key(ui, ftxui::Event::Character('?'), m));
    assert_true(ui.help);
    std::string text = top::render_to_text(m, ui, 80, 24);
    assert_true(support::golden("neuron-top-help-80x24.txt", text));
    assert_true(top::handle_key(ui, ftxui::Event::Escape, m));
    assert_false(ui.help);
    assert_false(ui.quit);
    assert_true(top::handle_key(ui, ftxui::Event::F1, m));
    assert_true(ui.help);
}

void test_keys(void **) {
    fake::Tree t;
    top::Model m = fixed_model(t);
    top::UiState ui;
    for (int i = 0; i < 10; i++)
        top::handle_key(ui, ftxui::Event::ArrowDown, m);
    assert_int_equal(ui.selected, 2); // three rows
    top::handle_key(ui, ftxui::Event::Character('k'), m);
    assert_int_equal(ui.selected, 1);
    top::handle_key(ui, ftxui::Event::Home, m);
    assert_int_equal(ui.selected, 0);
    top::handle_key(ui, ftxui::Event::Character('s'), m);
    assert_true(ui.sort == top::SortKey::memory);
    top::handle_key(ui, ftxui::Event::Character('c'), m);
    assert_true(ui.sort == top::SortKey::command);
    assert_false(top::handle_key(ui, ftxui::Event::Character('x'), m));
    top::handle_key(ui, ftxui::Event::Character('q'), m);
    assert_true(ui.quit);
}

// Real time: the numbers depend on the scheduler, so they are checked by range.
void test_sampler_real_time(void **) {
    fake::Tree t;
    t.standard();
    top::Sampler s(t.roots(), false);
    assert_true(s.event_source().find("polling reset_count") != std::string::npos);
    auto begin = std::chrono::steady_clock::now();
    s.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    t.set_core(0, 0, 150 * ms, 3, 0, 0, 0);
    t.set_core(0, 1, 0, 0, 0, 1, 0);
    top::Model m = s.sample();
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    double want = 0.150 / elapsed;
    fprintf(stderr, "interval %.3f s (elapsed %.3f s): util %.3f, expected <= %.3f\n", m.interval_s,
            elapsed, m.devices[0].cores[0].util, want * 1.0);
    assert_true(m.interval_s >= 0.3 && m.interval_s <= elapsed);
    assert_true(m.devices[0].cores[0].util >= 0.150 / elapsed - 0.01);
    assert_true(m.devices[0].cores[0].util <= 0.5 + 0.01);
    assert_true(m.devices[0].jobs_per_s > 0 && m.devices[0].jobs_per_s <= 10.0);
    // The core reset shows in the same sample.
    assert_int_equal(s.new_events().size(), 1);
    assert_string_equal(s.new_events()[0].kind.c_str(), "reset");
    assert_int_equal(s.new_events()[0].core, 1);
}

struct Result {
    int status;
    std::string out, err;
};

Result run_top(const neuron::tools::Roots &roots, std::vector<const char *> args) {
    args.insert(args.begin(), "neuron-top");
    std::ostringstream out, err;
    int status = top::run(static_cast<int>(args.size()), args.data(), out, err, roots);
    return {status, out.str(), err.str()};
}

void test_batch(void **) {
    fake::Tree t;
    t.standard();
    Result r = run_top(t.roots(), {"--batch", "--count", "2", "--interval", "0.1", "--no-netlink"});
    assert_int_equal(r.status, 0);
    size_t samples = 0;
    for (size_t pos = 0; (pos = r.out.find("\nsample ", pos)) != std::string::npos; pos++)
        samples++;
    assert_true(r.out.rfind("sample 1 ", 0) == 0);
    assert_int_equal(samples, 1); // "sample 2" after the first
    assert_true(r.out.find("core accel0 nc1 util=0.0%") != std::string::npos);
    assert_true(r.out.find("process 1200 train accel0 memory=67108864") != std::string::npos);

    r = run_top(t.roots(), {"--json", "-n", "2", "--interval", "0.1", "--no-netlink"});
    assert_int_equal(r.status, 0);
    std::istringstream lines(r.out);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
        auto j = nlohmann::json::parse(line);
        n++;
        assert_int_equal(j["sample"], n);
        assert_int_equal(j["devices"].size(), 2);
        assert_int_equal(j["devices"][0]["neuron_cores"].size(), 2);
        // Never closer than asked, even after a late sample.
        assert_true(j["interval_s"].get<double>() >= 0.1);
        assert_true(j["events"].is_array());
    }
    assert_int_equal(n, 2);
}

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

// Characters of a UTF-8 line (the screen's bars and rules are multibyte).
size_t columns(const std::string &line) {
    size_t n = 0;
    for (unsigned char c : line)
        n += (c & 0xc0) != 0x80;
    return n;
}

// --screen: the interactive screen of a live sample of the fake tree.
void test_screen_option(void **) {
    fake::Tree t;
    t.standard();
    Result r = run_top(
        t.roots(), {"--screen", "80x24", "--interval", "0.05", "--sort", "memory", "--no-netlink"});
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err.c_str(), "");
    auto lines = lines_of(r.out);
    assert_int_equal(lines.size(), 24);
    for (const auto &l : lines)
        assert_true(columns(l) <= 80);
    assert_true(lines[0].rfind(" neuron-top ", 0) == 0);
    assert_true(lines[0].find("  2 devices  every ") != std::string::npos);
    assert_true(r.out.find("PROCESSES (3, sorted by memory)") != std::string::npos);
    size_t train = r.out.find("\n1200    accel0  train ");
    size_t infer = r.out.find("\n1300    accel0  infer ");
    assert_true(train != std::string::npos && infer != std::string::npos && train < infer);
    assert_true(lines[23].rfind("events: polling reset_count (--no-netlink)", 0) == 0);
    assert_true(r.out.find("\x1b[") == std::string::npos);

    r = run_top(t.roots(), {"--screen", "160x50", "-n", "2", "--interval", "0.05", "--no-netlink"});
    assert_int_equal(r.status, 0);
    lines = lines_of(r.out);
    assert_int_equal(lines.size(), 50);
    assert_true(r.out.find("PROCESSES (3, sorted by util)") != std::string::npos);
    // At 160 columns a device's header fits on one line.
    assert_true(lines[1].find("  resets 0") != std::string::npos);

    for (const char *bad : {"80", "80x", "x24", "19x24", "80x4", "1001x24", "80x24x"}) {
        r = run_top(t.roots(), {"--screen", bad});
        assert_int_equal(r.status, neuron::tools::exit_usage);
        assert_true(r.err.find("--screen") != std::string::npos);
    }
    r = run_top(t.roots(), {"--screen", "80x24", "--batch"});
    assert_int_equal(r.status, neuron::tools::exit_usage);
    r = run_top(t.roots(), {"--screen", "80x24", "--json"});
    assert_int_equal(r.status, neuron::tools::exit_usage);
    r = run_top(t.roots(), {"--screen", "80x24", "--sort", "size"});
    assert_int_equal(r.status, neuron::tools::exit_usage);

    auto size = top::parse_screen_size("132x43");
    assert_true(size && size->columns == 132 && size->rows == 43);
}

void test_errors_and_help(void **) {
    fake::Tree t;
    Result r = run_top(t.roots(), {"--batch"});
    assert_int_equal(r.status, neuron::tools::exit_no_driver);
    assert_string_equal(r.err.c_str(), "neuron: driver not loaded: run modprobe neuron, or use the "
                                       "simulator: -d sim (NEURON_DEVICE=sim)\n");
    // -d is the device, never the interval.
    r = run_top(t.roots(), {"--batch", "-d", "0.5"});
    assert_int_equal(r.status, neuron::tools::exit_usage);
    assert_true(r.err.find("neuron-top: -d 0.5: not a device") == 0);
    t.set_driver("0.1.0");
    r = run_top(t.roots(), {"--json"});
    assert_int_equal(r.status, neuron::tools::exit_no_devices);
    // An index that names no device: top(1)'s habit of -d for the delay.
    r = run_top(t.roots(), {"--batch", "-d", "2"});
    assert_int_equal(r.status, neuron::tools::exit_no_devices);
    assert_string_equal(r.err.c_str(), "neuron-top: -d 2: no such device (neuron-ls lists them; "
                                       "the period between samples is --interval)\n");
    r = run_top(t.roots(), {"--interval", "0"});
    assert_int_equal(r.status, neuron::tools::exit_usage);

    r = run_top(t.roots(), {"--help"});
    assert_int_equal(r.status, 0);
    auto help = support::long_options(r.out);
    auto man = support::man_options(std::string(NEURON_TOOLS_SOURCE_DIR) + "/man/neuron-top.1");
    if (help != man)
        fprintf(stderr, "--help: %s\nman:    %s\n", support::join(help).c_str(),
                support::join(man).c_str());
    assert_true(help == man);
}

// The simulator: a device this process simulates, watched through the
// counters it publishes, its jobs' busy time as utilization.
void test_sim(void **) {
    fake::Tree t;
    setenv("NEURON_SIM_DIR", (t.root / "sim").c_str(), 1);
    {
        neuron::Device sim = neuron::Device::open("sim:cores=2");
        neuron::Buffer b = sim.allocate(3 << 20);
        Result r = run_top(t.roots(), {"--batch", "-d", "sim", "-n", "2", "--interval", "0.2"});
        assert_int_equal(r.status, 0);
        assert_true(r.out.find("driver sim") != std::string::npos);
        assert_true(r.out.find("device sim sim:" + std::to_string(getpid()) +
                               " state=ready memory_used=3145728") != std::string::npos);
        assert_true(r.out.find("core sim nc1 util=") != std::string::npos);
    }
    unsetenv("NEURON_SIM_DIR");
}

} // namespace

int main() {
    setenv("TZ", "UTC", 1);
    tzset();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rates),
        cmocka_unit_test(test_counter_events),
        cmocka_unit_test(test_screen_80x24),
        cmocka_unit_test(test_screen_160x50),
        cmocka_unit_test(test_help_screen),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_sampler_real_time),
        cmocka_unit_test(test_batch),
        cmocka_unit_test(test_screen_option),
        cmocka_unit_test(test_errors_and_help),
        cmocka_unit_test(test_sim),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
