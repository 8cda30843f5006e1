// SPDX-License-Identifier: MIT
#include "neuron_tools/cli.hpp"

#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "neuron_tools/device.hpp"
#include "neuron_tools/sysfs.hpp"
#include "neuron_tools/version.hpp"

namespace neuron::tools {

std::optional<int> parse_command_line(CLI::App &app, int argc, const char *const *argv,
                                      std::ostream &out, std::ostream &err) {
    bool version = false;
    app.add_flag("-V,--version", version, "Print the version and exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &) {
        out << app.help();
        return exit_ok;
    } catch (const CLI::ParseError &e) {
        return usage_error(app, e.what(), err);
    }
    if (version) {
        out << app.get_name() << " " << NEURON_TOOLS_VERSION << "\n";
        return exit_ok;
    }
    return std::nullopt;
}

int usage_error(const CLI::App &app, std::string_view what, std::ostream &err) {
    err << app.get_name() << ": " << what << "\nRun " << app.get_name()
        << " --help for the options.\n";
    return exit_usage;
}

int no_devices(const Driver &driver, std::ostream &err) {
    if (!driver.loaded) {
        err << "neuron: driver not loaded: run modprobe neuron\n";
        return exit_no_driver;
    }
    err << "neuron: no devices: the driver is loaded but no device is bound to it "
           "(check lspci -d 1d0f: and the kernel log)\n";
    return exit_no_devices;
}

int tool_main(std::string_view tool, ToolRun run, int argc, char **argv) {
    try {
        return run(argc, argv, std::cout, std::cerr, Roots::from_env());
    } catch (const std::exception &e) {
        std::cerr << tool << ": " << e.what() << "\n";
        return exit_error;
    }
}

} // namespace neuron::tools
