// SPDX-License-Identifier: MIT
#include "monitor.hpp"
#include "neuron_tools/cli.hpp"

int main(int argc, char **argv) {
    return neuron::tools::tool_main("neuron-monitor", neuron::tools::monitor::run, argc, argv);
}
