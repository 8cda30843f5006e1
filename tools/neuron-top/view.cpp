// SPDX-License-Identifier: MIT
#include "view.hpp"

#include <algorithm>
#include <ctime>
#include <fmt/format.h>
#include <ftxui/dom/flexbox_config.hpp>
#include <ftxui/screen/screen.hpp>

#include "neuron_tools/format.hpp"
#include "neuron_tools/version.hpp"

namespace neuron::tools::top {

using namespace ftxui;

const char *sort_name(SortKey k) {
    switch (k) {
    case SortKey::util:
        return "util";
    case SortKey::memory:
        return "memory";
    case SortKey::pid:
        return "pid";
    case SortKey::command:
        return "command";
    }
    return "?";
}

std::string clock_time(int64_t wall_s) {
    time_t t = static_cast<time_t>(wall_s);
    struct tm tm {};
    localtime_r(&t, &tm);
    return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::vector<ProcessView> sorted_processes(const Model &m, SortKey key) {
    std::vector<ProcessView> v = m.processes;
    auto tie = [](const ProcessView &a, const ProcessView &b) {
        return std::tie(a.pid, a.device) < std::tie(b.pid, b.device);
    };
    std::stable_sort(v.begin(), v.end(), [&](const ProcessView &a, const ProcessView &b) {
        switch (key) {
        case SortKey::util:
            if (a.util != b.util)
                return a.util > b.util;
            break;
        case SortKey::memory:
            if (a.memory != b.memory)
                return a.memory > b.memory;
            break;
        case SortKey::command:
            if (a.command != b.command)
                return a.command < b.command;
            break;
        case SortKey::pid:
            break;
        }
        return tie(a, b);
    });
    return v;
}

namespace {

Color util_color(double u) {
    if (u >= 0.9)
        return Color::Red;
    if (u >= 0.5)
        return Color::Yellow;
    return Color::Green;
}

Color state_color(const std::string &s) {
    if (s == "ready")
        return Color::Green;
    if (s == "resetting")
        return Color::Yellow;
    return Color::Red;
}

std::string percent(double f) {
    return fmt::format("{:5.1f}%", f * 100.0);
}

Element core_cell(const CoreView &c) {
    Elements parts = {
        text(fmt::format("nc{:<2} ", c.index)),
        gauge(static_cast<float>(c.util)) | color(util_color(c.util)) | size(WIDTH, EQUAL, 10),
        text(" " + percent(c.util)),
        text(fmt::format(" {:>6.1f} j/s", c.jobs_per_s)) | dim,
    };
    if (c.faults || c.resets || c.timeouts)
        parts.push_back(text(fmt::format(" F{} R{}", c.faults, c.resets)) | color(Color::Red));
    parts.push_back(text("  "));
    return hbox(std::move(parts));
}

Element device_block(const DeviceView &d) {
    double mem = d.memory_total && *d.memory_total && d.memory_used
                     ? static_cast<double>(*d.memory_used) / static_cast<double>(*d.memory_total)
                     : 0.0;
    FlexboxConfig wrap;
    wrap.Set(FlexboxConfig::Wrap::Wrap);
    Elements head = {
        text(d.name + " ") | bold,
        text(d.bdf + " "),
        text(d.state) | color(state_color(d.state)) | bold,
        text("  mem "),
        gauge(static_cast<float>(mem)) | color(util_color(mem)) | size(WIDTH, EQUAL, 8),
        text(" " + human_bytes(d.memory_used) + "/" + human_bytes(d.memory_total)),
        text("  DMA " + human_rate(d.dma_bytes_per_s)),
        text(fmt::format("  {:.1f} jobs/s", d.jobs_per_s)),
        text(fmt::format("  resets {}", d.reset_count)) |
            (d.reset_count ? color(Color::Red) : nothing),
    };
    Elements cores;
    for (const CoreView &c : d.cores)
        cores.push_back(core_cell(c));
    return vbox({
        flexbox(std::move(head), wrap),
        hbox({text("  "), flexbox(std::move(cores), wrap) | flex}),
    });
}

Element process_table(const Model &m, const UiState &ui) {
    auto row = [](const std::string &pid, const std::string &dev, const std::string &cmd,
                  const std::string &mem, const std::string &util, const std::string &cores) {
        return hbox({
            text(pid) | size(WIDTH, EQUAL, 8),
            text(dev) | size(WIDTH, EQUAL, 8),
            text(cmd) | flex,
            text(mem) | size(WIDTH, EQUAL, 11),
            text(util) | size(WIDTH, EQUAL, 8),
            text(cores) | size(WIDTH, EQUAL, 8),
        });
    };
    auto procs = sorted_processes(m, ui.sort);
    Elements rows;
    int selected = std::clamp(ui.selected, 0, std::max(0, static_cast<int>(procs.size()) - 1));
    for (size_t i = 0; i < procs.size(); i++) {
        const ProcessView &p = procs[i];
        Element r = row(std::to_string(p.pid), p.device_name, p.command, human_bytes(p.memory),
                        percent(p.util), join_list(p.cores));
        if (static_cast<int>(i) == selected)
            r = r | inverted | focus;
        rows.push_back(r);
    }
    if (rows.empty())
        rows.push_back(text(m.hidden_processes ? "no processes of yours use a device"
                                               : "no process uses a device") |
                       dim);
    std::string title =
        fmt::format("PROCESSES ({}, sorted by {})", procs.size(), sort_name(ui.sort));
    if (m.hidden_processes)
        title += fmt::format(", {} of other users hidden", m.hidden_processes);
    return vbox({
        text(title) | bold,
        row("PID", "DEVICE", "COMMAND", "MEMORY", "UTIL", "CORES") | dim,
        vbox(std::move(rows)) | yframe | flex,
    });
}

Element event_list(const Model &m, size_t max) {
    Elements rows;
    size_t start = m.events.size() > max ? m.events.size() - max : 0;
    for (size_t i = start; i < m.events.size(); i++) {
        const Event &e = m.events[i];
        std::string where = "accel" + std::to_string(e.device) +
                            (e.core >= 0 ? fmt::format(" nc{}", e.core) : std::string(" device"));
        Color c = e.kind == "fault" ? Color::Yellow : Color::Red;
        rows.push_back(hbox({
            text(clock_time(e.wall_s) + "  "),
            text(where) | size(WIDTH, EQUAL, 16),
            text(e.kind) | color(c) | bold | size(WIDTH, EQUAL, 9),
            text(e.detail) | flex,
            text(" " + e.source) | dim,
        }));
    }
    if (rows.empty())
        rows.push_back(text("no events") | dim);
    return vbox({text("EVENTS") | bold, vbox(std::move(rows))});
}

Element help_window() {
    auto line = [](const std::string &k, const std::string &what) {
        return hbox({text(k) | bold | size(WIDTH, EQUAL, 14), text(what)});
    };
    return window(text(" neuron-top help "),
                  vbox({
                      line("q, Esc", "quit (Esc closes this help first)"),
                      line("?, F1, h", "show or hide this help"),
                      line("Up/Down, k/j", "select a process"),
                      line("PgUp/PgDn", "move the selection by 10"),
                      line("s", "next sort key: util, memory, pid, command"),
                      line("u m p c", "sort by util, memory, pid, command"),
                      line("space", "pause or resume sampling"),
                      separator(),
                      text("UTIL: busy time of jobs / wall time per core;"),
                      text("a process's UTIL adds its cores (1.0 = one core)."),
                      text("Events: resets, hangs, errors, faults as they happen."),
                  })) |
           clear_under | center;
}

} // namespace

Element render(const Model &m, const UiState &ui) {
    std::string title =
        fmt::format(" neuron-top {}  driver {}  {} device{}  every {:.1f}s  {}",
                    NEURON_TOOLS_VERSION, m.driver_version, m.devices.size(),
                    m.devices.size() == 1 ? "" : "s", m.interval_s, clock_time(m.wall_s));
    Elements devices;
    for (const DeviceView &d : m.devices)
        devices.push_back(device_block(d));
    if (devices.empty())
        devices.push_back(text("no neuron devices") | color(Color::Red));

    // [paused] first: the event source is what gives way on a narrow screen.
    Element paused = ui.paused ? text("[paused] ") | bold : text("");
    Element main = vbox({
        text(title) | inverted | bold,
        vbox(std::move(devices)),
        separator(),
        process_table(m, ui) | flex,
        separator(),
        event_list(m, 4),
        hbox({paused, text(m.event_source) | flex,
              text(" q quit  ? help  s sort  ↑↓ select") | dim}) |
            inverted,
    });
    if (ui.help)
        return dbox({main, help_window()});
    return main;
}

bool handle_key(UiState &ui, const ftxui::Event &event, const Model &m) {
    int n = static_cast<int>(m.processes.size());
    auto select = [&](int to) { ui.selected = std::clamp(to, 0, std::max(0, n - 1)); };
    if (event == ftxui::Event::Character('q')) {
        ui.quit = true;
    } else if (event == ftxui::Event::Escape) {
        if (ui.help)
            ui.help = false;
        else
            ui.quit = true;
    } else if (event == ftxui::Event::Character('?') || event == ftxui::Event::F1 ||
               event == ftxui::Event::Character('h')) {
        ui.help = !ui.help;
    } else if (event == ftxui::Event::ArrowDown || event == ftxui::Event::Character('j')) {
        select(ui.selected + 1);
    } else if (event == ftxui::Event::ArrowUp || event == ftxui::Event::Character('k')) {
        select(ui.selected - 1);
    } else if (event == ftxui::Event::PageDown) {
        select(ui.selected + 10);
    } else if (event == ftxui::Event::PageUp) {
        select(ui.selected - 10);
    } else if (event == ftxui::Event::Home) {
        select(0);
    } else if (event == ftxui::Event::End) {
        select(n - 1);
    } else if (event == ftxui::Event::Character('s')) {
        ui.sort = static_cast<SortKey>((static_cast<int>(ui.sort) + 1) % 4);
    } else if (event == ftxui::Event::Character('u')) {
        ui.sort = SortKey::util;
    } else if (event == ftxui::Event::Character('m')) {
        ui.sort = SortKey::memory;
    } else if (event == ftxui::Event::Character('p')) {
        ui.sort = SortKey::pid;
    } else if (event == ftxui::Event::Character('c')) {
        ui.sort = SortKey::command;
    } else if (event == ftxui::Event::Character(' ')) {
        ui.paused = !ui.paused;
    } else {
        return false;
    }
    return true;
}

std::string render_to_string(const Model &m, const UiState &ui, int width, int height) {
    auto screen = Screen::Create(Dimension::Fixed(width), Dimension::Fixed(height));
    Render(screen, render(m, ui));
    return screen.ToString();
}

std::string render_to_text(const Model &m, const UiState &ui, int width, int height) {
    auto screen = Screen::Create(Dimension::Fixed(width), Dimension::Fixed(height));
    Render(screen, render(m, ui));
    std::string out;
    for (int y = 0; y < height; y++) {
        std::string line;
        for (int x = 0; x < width; x++)
            line += screen.PixelAt(x, y).character;
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out += line + "\n";
    }
    return out;
}

} // namespace neuron::tools::top
