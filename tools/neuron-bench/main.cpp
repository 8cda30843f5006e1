// SPDX-License-Identifier: MIT
// neuron-bench: the device's figures next to their limits and a peer,
// measured in one run. See docs/performance.md.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <fstream>
#include <iostream>
#include <sys/utsname.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <neuron/neuron.hpp>

#include "bench.hpp"
#include "neuron_tools/cli.hpp"

namespace {

const char *const all_sections[] = {"dma", "submit", "compute", "alloc", "e2e", "collectives"};

nlohmann::json describe_run(const nbench::Options &o) {
    nlohmann::json c;
    utsname u{};
    if (uname(&u) == 0)
        c["kernel"] = fmt::format("{} {}", u.release, u.machine);
    std::time_t t = std::time(nullptr);
    char when[32];
    std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    c["date"] = when;
    c["repeat"] = o.repeat;
    c["quick"] = o.quick;
    c["peer"] = o.nvme.empty() ? "none" : o.nvme;
    if (auto dev = nbench::open_device(o)) {
        const auto &i = dev->info();
        c["device"] = {{"node", dev->path()},
                       {"pci_address", i.pci_address},
                       {"cores", i.num_cores},
                       {"dma_engines", i.num_dma_engines},
                       {"device_memory_bytes", i.device_memory_size},
                       {"core_clock_mhz", i.core_clock_mhz}};
    }
    return c;
}

} // namespace

static int command_line_main(int argc, char **argv) {
    nbench::Options o;
    std::string json_path;
    CLI::App app{"Measure the neuron device (DMA, submission, compute, allocation, the example "
                 "models) next to the limit of each figure and a peer device, in one run. Every "
                 "figure is the median of repeated runs with min and max; ratios compare "
                 "medians of the same run.",
                 "neuron-bench"};
    app.add_flag("-q,--quick", o.quick,
                 "Few sizes, short runs, 3 repeats unless --repeat: a check that it all runs");
    auto *repeat = neuron::tools::in_range(
        app.add_option("-r,--repeat", o.repeat, "Measured runs per figure")->capture_default_str(),
        1, 1000);
    neuron::tools::add_device_option(app, o.device, "The device to measure, instead of the first");
    if (const char *env = std::getenv("NEURON_VM_NVME"))
        o.nvme = env;
    app.add_option("--nvme", o.nvme,
                   "Peer block device read with O_DIRECT (default: $NEURON_VM_NVME)");
    app.add_option("--min-copy", o.min_copy, "Smallest copy in bytes")
        ->transform(CLI::AsSizeValue(false))
        ->capture_default_str();
    app.add_option("--max-copy", o.max_copy, "Largest copy in bytes")
        ->transform(CLI::AsSizeValue(false))
        ->capture_default_str();
    neuron::tools::in_range(
        app.add_option("--max-depth", o.max_depth, "Deepest queue of the submission figures")
            ->capture_default_str(),
        1, 1024);
    neuron::tools::one_of(
        app.add_option("-s,--sections", o.sections, "Sections to run (default: all)")
            ->delimiter(','),
        std::vector<std::string>(std::begin(all_sections), std::end(all_sections)));
    app.add_option("--host-figures", o.host_figures,
                   "JSON of neuron-model-bench --json, measured on the host: the compute limits")
        ->check(CLI::ExistingFile);
    app.add_flag("--no-device", o.no_device, "Measure only what needs no device");
    bool no_skips = false;
    app.add_flag("--no-skips", no_skips,
                 "Exit with status 1 when a figure could not be measured (no device, no peer, "
                 "no host figures)");
    app.add_option("-j,--json", json_path, "Also write the report as JSON to this file");
    app.footer(
        "Exit status: 0 ok, 1 a measurement failed (or was skipped with --no-skips), 2 usage "
        "error. " +
        neuron::tools::man_page_footer("neuron-bench"));
    if (auto status = neuron::tools::parse_command_line(app, argc, argv, std::cout, std::cerr))
        return *status;
    if (auto status = neuron::tools::select_device(app, o.device, o.selector, std::cerr))
        return *status;
    if (o.quick && repeat->count() == 0)
        o.repeat = 3;
    if (o.min_copy < 4096 || o.min_copy % 4096 || o.max_copy < o.min_copy)
        return neuron::tools::usage_error(
            app, "copies must be multiples of 4 KiB, --min-copy <= --max-copy", std::cerr);

    try {
        nbench::Report report;
        report.context() = describe_run(o);
        using Section = void (*)(const nbench::Options &, nbench::Report &);
        const std::pair<const char *, Section> sections[] = {
            {"dma", nbench::run_dma},         {"submit", nbench::run_submit},
            {"compute", nbench::run_compute}, {"alloc", nbench::run_alloc},
            {"e2e", nbench::run_e2e},         {"collectives", nbench::run_collectives},
        };
        for (const auto &[name, run] : sections) {
            if (!o.wants(name))
                continue;
            std::fprintf(stderr, "neuron-bench: %s...\n", name);
            run(o, report);
        }
        std::cout << report.render();
        if (!json_path.empty()) {
            std::ofstream f(json_path);
            f << report.to_json().dump(2) << "\n";
            if (!f)
                throw std::runtime_error(fmt::format("cannot write {}", json_path));
        }
        if (no_skips && report.skipped()) {
            std::cerr << fmt::format("neuron-bench: {} figure(s) could not be measured (see "
                                     "the lines under the tables)\n",
                                     report.skipped());
            return 1;
        }
        return 0;
    } catch (const std::exception &e) {
        std::cerr << "neuron-bench: " << e.what() << "\n";
        return 1;
    }
}

int main(int argc, char **argv) {
    return neuron::tools::output_checked("neuron-bench", command_line_main(argc, argv));
}
