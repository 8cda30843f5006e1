// SPDX-License-Identifier: MIT
#include "neuron_tools/cli.hpp"
#include "top.hpp"

int main(int argc, char **argv) {
    return neuron::tools::tool_main("neuron-top", neuron::tools::top::run, argc, argv);
}
