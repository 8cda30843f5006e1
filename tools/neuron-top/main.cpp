// SPDX-License-Identifier: MIT
#include <exception>
#include <iostream>

#include "top.hpp"

int main(int argc, char **argv) {
    try {
        return neuron::tools::top::run(argc, argv, std::cout, std::cerr,
                                       neuron::tools::Roots::from_env());
    } catch (const std::exception &e) {
        std::cerr << "neuron-top: " << e.what() << "\n";
        return neuron::tools::top::exit_error;
    }
}
