// SPDX-License-Identifier: MIT
// What every example is: a program, its inputs, the output to check and a
// double-precision reference for it, independent of where it runs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <neuron/kernel.hpp>
#include <neuron/program.hpp>

#include "common/numerics.hpp"

namespace nex {

struct Case {
    explicit Case(neuron::Program p) : program(std::move(p)) {}

    std::string title; ///< e.g. "Linear(768, 768) + GELU on [1, 128, 768], fp32"
    neuron::Program program;
    /// The program's `in` arguments, by name, as the bytes to upload.
    std::vector<std::pair<std::string, std::vector<std::byte>>> inputs;
    std::string output; ///< the program's `out` argument
    neuron::DType output_dtype = neuron::DType::fp32;
    std::vector<double> reference; ///< the expected output, element by element
    Tolerance tolerance;
    uint64_t flops = 0;          ///< multiply-adds x 2 of the matmuls, for reporting
    neuron::Kernel::Stats stats; ///< instructions, waits and signals per engine
    double reference_ms = 0;     ///< host time of the CPU reference
};

/// Size in bytes of the program's argument @p name (throws if it has none).
uint64_t argument_size(const neuron::Program &p, const std::string &name);

/// The device's result checked against the case's reference.
ErrorStats check(const Case &c, std::span<const std::byte> output);

/// Program statistics as one line: instructions per engine, waits, constants.
std::string describe_program(const Case &c);

} // namespace nex
