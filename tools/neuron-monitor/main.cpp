// SPDX-License-Identifier: MIT
#include <exception>
#include <iostream>

#include "monitor.hpp"

int main(int argc, char **argv) {
    try {
        return neuron::tools::monitor::run(argc, argv, std::cout, std::cerr,
                                           neuron::tools::Roots::from_env());
    } catch (const std::exception &e) {
        std::cerr << "neuron-monitor: " << e.what() << "\n";
        return neuron::tools::monitor::exit_error;
    }
}
