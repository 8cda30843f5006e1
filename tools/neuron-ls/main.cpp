// SPDX-License-Identifier: MIT
#include <exception>
#include <iostream>

#include "ls.hpp"

int main(int argc, char **argv) {
    try {
        return neuron::tools::ls::run(argc, argv, std::cout, std::cerr,
                                      neuron::tools::Roots::from_env());
    } catch (const std::exception &e) {
        std::cerr << "neuron-ls: " << e.what() << "\n";
        return neuron::tools::ls::exit_error;
    }
}
