// SPDX-License-Identifier: MIT
// A program container run through the device model on the host
// (model_run.h): arguments bound by name as libneuron's loader and the
// driver bind them, the constants on their slot, the image after them.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <neuron/program.hpp>

#include "model_run.h"

namespace model {

struct Run {
    exm_result result{};
    /// Every `out` and `inout` argument's bytes after the job, by name.
    std::map<std::string, std::vector<std::byte>> outputs;
    double ms = 0; ///< host time of the model run
};

/// Runs @p p with @p inputs (by argument name; each must hold the
/// argument's bytes). Output arguments start as garbage (0xa5), so that a
/// byte the program does not write shows. Throws std::runtime_error for a
/// missing or mis-sized input or when the model cannot be set up.
Run run(const neuron::Program &p, const std::map<std::string, std::vector<std::byte>> &inputs);

} // namespace model
