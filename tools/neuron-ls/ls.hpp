// SPDX-License-Identifier: MIT
// neuron-ls: the devices of the neuron driver and the processes using them.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "neuron_tools/cli.hpp"
#include "neuron_tools/device.hpp"
#include "neuron_tools/process.hpp"

namespace neuron::tools::ls {

struct Inventory {
    Driver driver;
    std::vector<Device> devices;
    ProcessScan processes;
};

Inventory collect(const Roots &roots, bool with_processes);

/// The table (and with wide, one row per process under each device).
std::string render_table(const Inventory &inv, bool wide);

/// The JSON document described by tools/neuron-ls.schema.json.
nlohmann::json render_json(const Inventory &inv);

/// What a user who cannot open a node should do about it.
std::string access_message(const Device &dev);

/// The whole program (exit statuses: neuron_tools/cli.hpp), its streams and roots
/// injectable for tests.
int run(int argc, const char *const *argv, std::ostream &out, std::ostream &err,
        const Roots &roots);

} // namespace neuron::tools::ls
