// SPDX-License-Identifier: MIT
#include "ls.hpp"
#include "neuron_tools/cli.hpp"

int main(int argc, char **argv) {
    return neuron::tools::tool_main("neuron-ls", neuron::tools::ls::run, argc, argv);
}
