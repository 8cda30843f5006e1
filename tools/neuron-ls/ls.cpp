// SPDX-License-Identifier: MIT
#include "ls.hpp"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <ostream>

#include <neuron/device.hpp>
#include <neuron/error.hpp>

#include "neuron_tools/cli.hpp"
#include "neuron_tools/format.hpp"

namespace neuron::tools::ls {

using nlohmann::json;

Inventory collect(const Roots &roots, bool with_processes) {
    Inventory inv;
    inv.driver = read_driver(roots);
    inv.devices = scan_devices(roots);
    if (with_processes && !inv.devices.empty())
        inv.processes = scan_processes(roots);
    return inv;
}

namespace {

std::string opt_str(const std::optional<std::string> &s) {
    return s && !s->empty() ? *s : "-";
}

template <typename T> std::string opt_num(const std::optional<T> &v) {
    return v ? std::to_string(*v) : "-";
}

std::string memory_cell(const Device &d) {
    return human_bytes(d.memory_used) + " / " + human_bytes(d.memory_total);
}

} // namespace

std::string render_table(const Inventory &inv, bool wide) {
    std::string out = fmt::format("neuron driver {}, {} device{}\n",
                                  inv.driver.version ? *inv.driver.version : "(no version)",
                                  inv.devices.size(), inv.devices.size() == 1 ? "" : "s");
    std::vector<std::vector<std::string>> rows;
    rows.push_back(
        {"DEVICE", "NODE", "BDF", "NUMA", "CORES", "MEMORY USED / TOTAL", "HW", "FW", "STATE"});
    for (const Device &d : inv.devices)
        rows.push_back({std::to_string(d.index), d.name, d.bdf, opt_num(d.numa_node),
                        opt_num(d.cores), memory_cell(d), opt_str(d.hw_version),
                        opt_str(d.fw_version), d.state});
    if (!wide) {
        out += format_columns(rows);
        return out;
    }

    // Wide: each device row followed by its processes, indented.
    std::string table = format_columns(rows);
    size_t pos = 0;
    std::vector<std::string> lines;
    while (pos < table.size()) {
        size_t nl = table.find('\n', pos);
        lines.push_back(table.substr(pos, nl - pos + 1));
        pos = nl + 1;
    }
    out += lines[0];
    for (size_t i = 0; i < inv.devices.size(); i++) {
        const Device &d = inv.devices[i];
        out += lines[i + 1];
        std::vector<std::vector<std::string>> prow;
        prow.push_back({"PID", "COMMAND", "MEMORY", "HOST MEMORY", "CORES IN USE"});
        for (const Process &p : inv.processes.processes) {
            DeviceUsage u = usage_on(p, d.bdf);
            if (!u.clients)
                continue;
            prow.push_back({std::to_string(p.pid), p.command, human_bytes(u.memory),
                            human_bytes(u.host_memory), join_list(u.cores())});
        }
        if (prow.size() == 1)
            out += "    (no processes)\n";
        else
            out += format_columns(prow, "    ");
    }
    if (inv.processes.hidden)
        out += fmt::format("{} process{} of other users not shown: run as root to see them\n",
                           inv.processes.hidden, inv.processes.hidden == 1 ? "" : "es");
    return out;
}

json render_json(const Inventory &inv) {
    json devices = json::array();
    for (const Device &d : inv.devices) {
        json procs = json::array();
        for (const Process &p : inv.processes.processes) {
            DeviceUsage u = usage_on(p, d.bdf);
            if (!u.clients)
                continue;
            json engine = json::object();
            for (const auto &[core, ns] : u.engine_ns)
                engine[std::to_string(core)] = ns;
            procs.push_back({{"pid", p.pid},
                             {"command", p.command},
                             {"memory_used", u.memory},
                             {"host_memory_used", u.host_memory},
                             {"neuron_cores", u.cores()},
                             {"busy_ns", engine},
                             {"clients", u.clients}});
        }
        auto nullable = [](const auto &v) -> json { return v ? json(*v) : json(nullptr); };
        devices.push_back({{"neuron_device", d.index},
                           {"accel_node", d.node},
                           {"bdf", d.bdf},
                           {"numa_node", nullable(d.numa_node)},
                           {"nc_count", nullable(d.cores)},
                           {"dma_engines", nullable(d.dma_engines)},
                           {"memory_size", nullable(d.memory_total)},
                           {"memory_used", nullable(d.memory_used)},
                           {"driver_version", nullable(inv.driver.version)},
                           {"hw_version", nullable(d.hw_version)},
                           {"fw_version", nullable(d.fw_version)},
                           {"state", d.state},
                           {"reset_count", nullable(d.reset_count)},
                           {"accessible", d.access.ok()},
                           {"neuron_processes", procs}});
    }
    return devices;
}

std::string access_message(const Device &d) {
    const NodeAccess &a = d.access;
    if (a.error == ENOENT)
        return fmt::format("neuron: {}: no such device node: is devtmpfs mounted on /dev?", d.node);
    if (a.error != EACCES && a.error != EPERM)
        return fmt::format("neuron: {}: {}", d.node, std::strerror(a.error));
    std::string what = fmt::format("neuron: {}: permission denied (owner {}:{}, mode {:04o})",
                                   d.node, a.owner, a.group, a.mode);
    if (a.group == "render" || (a.mode & 0060) == 0060)
        return what + fmt::format(": add the user to group {} (usermod -aG {} $USER, then log "
                                  "in again)",
                                  a.group, a.group);
    return what + ": install the udev rule 70-neuron.rules (it gives the node group render, "
                  "mode 0660), then add the user to group render";
}

int run(int argc, const char *const *argv, std::ostream &out, std::ostream &err,
        const Roots &roots) {
    CLI::App app{"List the devices of the neuron accelerator driver and the processes using "
                 "them.",
                 "neuron-ls"};
    bool wide = false, as_json = false;
    app.add_flag("-w,--wide", wide,
                 "Add one row per process using a device: PID, command, "
                 "device and host memory, cores in use");
    app.add_flag("-j,--json,--json-output", as_json,
                 "Print JSON (schema: neuron-ls.schema.json) instead of a table");
    std::string device;
    add_device_option(app, device, "The one device to list, instead of every device");
    app.footer("Exit status: 0 ok, 2 usage error, 3 driver not loaded, 4 no devices, "
               "5 a device node cannot be opened by this user. " +
               man_page_footer("neuron-ls"));
    if (auto status = parse_command_line(app, argc, argv, out, err))
        return *status;
    Roots r = roots;
    if (auto status = select_device(app, device, r.device, err))
        return *status;

    // The simulator: the simulated devices of running processes, else the
    // one the selector describes, simulated here while it is listed.
    std::vector<neuron::Device> own_sim;
    {
        try {
            own_sim = simulate_if_none(r.device);
        } catch (const neuron::Error &e) {
            return usage_error(app, e.what(), err);
        }
    }
    Inventory inv = collect(r, wide || as_json);
    if (inv.devices.empty() && inv.driver.loaded && !r.device.source.empty()) {
        err << "neuron-ls: " << r.device.source << ": no such device (neuron-ls lists them)\n";
        return exit_no_devices;
    }
    if (inv.devices.empty()) {
        if (as_json && inv.driver.loaded)
            out << "[]\n";
        return no_devices(inv.driver, r.device, err);
    }
    if (as_json)
        out << render_json(inv).dump(2) << "\n";
    else
        out << render_table(inv, wide);

    int status = exit_ok;
    for (const Device &d : inv.devices)
        if (!d.access.ok()) {
            err << access_message(d) << "\n";
            status = exit_no_access;
        }
    return status;
}

} // namespace neuron::tools::ls
