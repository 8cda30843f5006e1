// SPDX-License-Identifier: MIT
#include "top.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <fmt/format.h>
#include <ftxui/component/component.hpp>
#include <ftxui/component/screen_interactive.hpp>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>
#include <unistd.h>

#include <neuron/error.hpp>

#include "neuron_tools/cli.hpp"
#include "neuron_tools/format.hpp"
#include "neuron_tools/sysfs.hpp"
#include "view.hpp"

namespace neuron::tools::top {

using nlohmann::ordered_json;

Sampler::Sampler(Roots roots, bool use_netlink) : roots_(std::move(roots)) {
    std::string why = roots_.device.is_sim() ? "simulator" : "--no-netlink";
    if (use_netlink && netlink_.open(why))
        source_ = "events: netlink";
    else
        source_ = "events: polling reset_count (" + why + ")";
}

void Sampler::start() {
    prev_ = take_snapshot(roots_);
}

Model Sampler::sample() {
    Snapshot cur = take_snapshot(roots_);
    if (!prev_)
        prev_ = cur;
    Model m = compute(*prev_, cur);
    // Netlink reports resets, hangs and errors; the counters report faults,
    // and everything when netlink is not available.
    std::vector<Event> fresh = netlink_.receive();
    pending_.insert(pending_.end(), fresh.begin(), fresh.end());
    add_events(events_, fresh);
    new_events_ = std::move(pending_);
    pending_.clear();
    std::vector<Event> counted = counter_events(*prev_, cur, !netlink_.is_open());
    add_events(events_, counted);
    new_events_.insert(new_events_.end(), counted.begin(), counted.end());
    m.events = events_;
    m.event_source = source_;
    prev_ = std::move(cur);
    return m;
}

void Sampler::wait_until(std::chrono::steady_clock::time_point deadline,
                         const std::function<void()> &on_event, const std::function<bool()> &stop) {
    wait_for_events(&netlink_, deadline, stop, [&](std::vector<Event> &&fresh) {
        pending_.insert(pending_.end(), fresh.begin(), fresh.end());
        add_events(events_, fresh);
        if (on_event)
            on_event();
    });
}

namespace {

std::string where(const Event &e) {
    return fmt::format("accel{} {}", e.device,
                       e.core >= 0 ? fmt::format("nc{}", e.core) : "device");
}

} // namespace

std::string batch_text(const Model &m, const std::vector<Event> &events, unsigned sample) {
    std::string s =
        fmt::format("sample {} time {} interval {:.2f}s driver {} {}\n", sample,
                    clock_time(m.wall_s), m.interval_s, m.driver_version, m.event_source);
    for (const DeviceView &d : m.devices) {
        s += fmt::format(
            "device {} {} state={} memory_used={} memory_total={} dma_bytes_per_s={:.0f} "
            "jobs_per_s={:.1f} reset_count={}\n",
            d.name, d.bdf, d.state, d.memory_used ? std::to_string(*d.memory_used) : "-",
            d.memory_total ? std::to_string(*d.memory_total) : "-", d.dma_bytes_per_s, d.jobs_per_s,
            d.reset_count);
        for (const CoreView &c : d.cores)
            s += fmt::format("core {} nc{} util={:.1f}% jobs_per_s={:.1f} faults={} timeouts={} "
                             "resets={}\n",
                             d.name, c.index, c.util * 100, c.jobs_per_s, c.faults, c.timeouts,
                             c.resets);
    }
    for (const ProcessView &p : m.processes)
        s += fmt::format("process {} {} {} memory={} util={:.1f}% cores={}\n", p.pid, p.command,
                         p.device_name, p.memory, p.util * 100, join_list(p.cores));
    for (const Event &e : events)
        s += fmt::format("event {} {} {}{}{} source={}\n", clock_time(e.wall_s), where(e), e.kind,
                         e.detail.empty() ? "" : " ", e.detail, e.source);
    return s;
}

ordered_json batch_json(const Model &m, const std::vector<Event> &events, unsigned sample) {
    ordered_json devices = ordered_json::array();
    for (const DeviceView &d : m.devices) {
        ordered_json cores = ordered_json::array();
        for (const CoreView &c : d.cores)
            cores.push_back({{"core", c.index},
                             {"utilization", c.util},
                             {"jobs_per_s", c.jobs_per_s},
                             {"faults", c.faults},
                             {"timeouts", c.timeouts},
                             {"resets", c.resets}});
        auto nullable = [](const auto &v) -> ordered_json {
            return v ? ordered_json(*v) : ordered_json(nullptr);
        };
        devices.push_back({{"neuron_device", d.index},
                           {"bdf", d.bdf},
                           {"state", d.state},
                           {"memory_used", nullable(d.memory_used)},
                           {"memory_size", nullable(d.memory_total)},
                           {"dma_bytes_per_s", d.dma_bytes_per_s},
                           {"jobs_per_s", d.jobs_per_s},
                           {"reset_count", d.reset_count},
                           {"neuron_cores", cores}});
    }
    ordered_json procs = ordered_json::array();
    for (const ProcessView &p : m.processes)
        procs.push_back({{"pid", p.pid},
                         {"command", p.command},
                         {"neuron_device", p.device},
                         {"memory_used", p.memory},
                         {"host_memory_used", p.host_memory},
                         {"utilization", p.util},
                         {"neuron_cores", p.cores}});
    ordered_json evs = ordered_json::array();
    for (const Event &e : events)
        evs.push_back({{"time", e.wall_s},
                       {"neuron_device", e.device},
                       {"core", e.core >= 0 ? ordered_json(e.core) : ordered_json(nullptr)},
                       {"kind", e.kind},
                       {"detail", e.detail},
                       {"source", e.source}});
    return {{"sample", sample},
            {"time", m.wall_s},
            {"interval_s", m.interval_s},
            {"driver_version", m.driver_version},
            {"event_source", m.event_source},
            {"devices", devices},
            {"processes", procs},
            {"events", evs}};
}

std::optional<ScreenSize> parse_screen_size(std::string_view text) {
    size_t x = text.find('x');
    if (x == std::string_view::npos)
        return std::nullopt;
    auto columns = parse_u64(text.substr(0, x));
    auto rows = parse_u64(text.substr(x + 1));
    if (!columns || !rows || *columns < 20 || *columns > 1000 || *rows < 5 || *rows > 1000)
        return std::nullopt;
    return ScreenSize{static_cast<int>(*columns), static_cast<int>(*rows)};
}

namespace {

std::atomic<bool> g_interrupted{false};

void on_signal(int) {
    g_interrupted = true;
}

void catch_signals() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGPIPE, on_signal);
}

std::chrono::steady_clock::duration period_of(double interval) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(interval));
}

// A whole interval after the sample just taken, even when it came late (a
// busy machine): two samples are never closer than the interval asked for.
std::chrono::steady_clock::time_point next_sample_time(std::chrono::steady_clock::duration period) {
    return std::chrono::steady_clock::now() + period;
}

// Starts @p sampler and samples every @p interval seconds, @p count times
// (0: until interrupted), handing each sample and its number (from 1) to
// @p on_sample, which returns false to stop early.
void sample_periodically(Sampler &sampler, double interval, unsigned count,
                         const std::function<bool(Model, unsigned)> &on_sample) {
    catch_signals();
    auto period = period_of(interval);
    sampler.start();
    auto next = std::chrono::steady_clock::now() + period;
    for (unsigned i = 1; count == 0 || i <= count; i++) {
        sampler.wait_until(next, {}, [] { return g_interrupted.load(); });
        if (g_interrupted)
            break;
        Model m = sampler.sample();
        next = next_sample_time(period);
        if (!on_sample(std::move(m), i))
            break;
    }
}

int run_batch(Sampler &sampler, double interval, unsigned count, bool json, std::ostream &out) {
    sample_periodically(sampler, interval, count, [&](Model m, unsigned i) {
        if (json)
            out << batch_json(m, sampler.new_events(), i).dump() << "\n";
        else
            out << batch_text(m, sampler.new_events(), i) << "\n";
        out.flush();
        return static_cast<bool>(out);
    });
    return exit_ok;
}

// Samples like the batch mode, then prints the interactive screen of the
// last sample (and the events of all of them) as text.
int run_screen(Sampler &sampler, double interval, unsigned count, const ScreenSize &size,
               const UiState &ui, std::ostream &out) {
    std::optional<Model> model;
    sample_periodically(sampler, interval, std::max(count, 1u), [&](Model m, unsigned) {
        model = std::move(m);
        return true;
    });
    if (!model) // interrupted before the first sample: the interval so far
        model = sampler.sample();
    out << render_to_text(*model, ui, size.columns, size.rows);
    out.flush();
    return exit_ok;
}

int run_interactive(Sampler &sampler, double interval, UiState ui) {
    using namespace ftxui;
    auto screen = ScreenInteractive::Fullscreen();
    std::mutex lock; // protects model
    Model model;
    std::atomic<bool> paused{false};

    sampler.start();
    model = sampler.sample(); // an empty interval: shows the devices at once
    model.event_source = sampler.event_source();

    std::jthread worker([&](std::stop_token stop) {
        auto period = period_of(interval);
        auto next = next_sample_time(period);
        while (!stop.stop_requested()) {
            sampler.wait_until(
                next,
                [&] {
                    // Netlink events show up at once, before the next sample.
                    std::lock_guard g(lock);
                    model.events = sampler.events();
                    screen.PostEvent(ftxui::Event::Custom);
                },
                [&] { return stop.stop_requested(); });
            if (stop.stop_requested())
                break;
            if (paused) {
                next = next_sample_time(period);
                continue;
            }
            Model m = sampler.sample();
            next = next_sample_time(period);
            {
                std::lock_guard g(lock);
                model = std::move(m);
            }
            screen.PostEvent(ftxui::Event::Custom);
        }
    });

    auto renderer = Renderer([&] {
        std::lock_guard g(lock);
        return render(model, ui);
    });
    auto app = CatchEvent(renderer, [&](ftxui::Event e) {
        bool handled;
        {
            std::lock_guard g(lock);
            handled = handle_key(ui, e, model);
        }
        paused = ui.paused;
        if (ui.quit)
            screen.Exit();
        return handled;
    });
    screen.Loop(app);
    worker.request_stop();
    return exit_ok;
}

} // namespace

int run(int argc, const char *const *argv, std::ostream &out, std::ostream &err,
        const Roots &roots) {
    CLI::App app{"Live view of neuron accelerator devices: per-core utilization, memory, DMA "
                 "throughput, job rates, processes and events (resets, hangs, faults).",
                 "neuron-top"};
    double interval = 1.0;
    unsigned count = 0;
    bool batch = false, as_json = false, no_netlink = false;
    std::string screen_size, sort = "util";
    std::string device;
    add_device_option(app, device, "The one device to show, instead of every device");
    in_range(app.add_option("--interval", interval, "Seconds between two samples (default 1.0)"),
             0.05, 3600);
    auto *batch_opt = app.add_flag("-b,--batch", batch,
                                   "Print samples as text lines instead of the interactive screen");
    auto *json_opt = app.add_flag("-j,--json", as_json,
                                  "Print samples as JSON, one object per line (implies --batch)");
    app.add_option("-n,--count", count,
                   "Stop after this many samples in batch mode (default: until interrupted; "
                   "with --screen: 1)");
    app.add_option("--screen", screen_size,
                   "Take samples as in batch mode, then print the interactive screen of the "
                   "last one as plain text, COLSxROWS characters (e.g. 80x24)")
        ->type_name("COLSxROWS")
        ->excludes(batch_opt)
        ->excludes(json_opt);
    one_of(app.add_option("-s,--sort", sort,
                          "Sort the process list by util (default), memory, pid or command"),
           {"util", "memory", "pid", "command"});
    app.add_flag("--no-netlink", no_netlink,
                 "Do not listen to the driver's netlink events: detect resets from the counters");
    app.footer("Keys: q quit, ? or F1 help, s sort, arrows select. "
               "Exit status: 0 ok, 2 usage error, 3 driver not loaded, 4 no devices. " +
               man_page_footer("neuron-top"));
    if (auto status = parse_command_line(app, argc, argv, out, err))
        return *status;
    Roots r = roots;
    if (auto status = select_device(app, device, r.device, err))
        return *status;
    std::optional<ScreenSize> size;
    if (app.count("--screen")) {
        size = parse_screen_size(screen_size);
        if (!size)
            return usage_error(app,
                               "--screen: '" + screen_size +
                                   "' is not COLSxROWS with 20 to 1000 columns and 5 to 1000 rows",
                               err);
    }
    UiState ui;
    for (SortKey k : {SortKey::util, SortKey::memory, SortKey::pid, SortKey::command})
        if (sort == sort_name(k))
            ui.sort = k;
    if (as_json)
        batch = true;
    if (!batch && !size && !isatty(STDOUT_FILENO)) {
        err << "neuron-top: standard output is not a terminal: use --batch, --json or --screen\n";
        return exit_usage;
    }

    // The simulator has no netlink events: resets come from its counters.
    std::vector<neuron::Device> own_sim;
    try {
        own_sim = simulate_if_none(r.device);
    } catch (const neuron::Error &e) {
        return usage_error(app, e.what(), err);
    }
    Driver driver = read_driver(r);
    ScanOptions opts;
    opts.access = false;
    if (scan_devices(r, opts).empty()) {
        if (driver.loaded && !r.device.source.empty()) {
            // top(1)'s -d is its delay: say where the period is.
            const bool delay_like = r.device.kind == neuron::DeviceSelector::Kind::index &&
                                    r.device.source.starts_with("-d ");
            err << "neuron-top: " << r.device.source << ": no such device (neuron-ls lists them"
                << (delay_like ? "; the period between samples is --interval" : "") << ")\n";
            return exit_no_devices;
        }
        return no_devices(driver, r.device, err);
    }

    Sampler sampler(r, !no_netlink && !r.device.is_sim());
    if (size)
        return run_screen(sampler, interval, count, *size, ui, out);
    if (batch)
        return run_batch(sampler, interval, count, as_json, out);
    return run_interactive(sampler, interval, ui);
}

} // namespace neuron::tools::top
