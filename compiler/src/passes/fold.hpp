// SPDX-License-Identifier: MIT
// The fold pass: constants that a matmul reads transposed are stored
// transposed, so that no instruction transposes them.
#pragma once

#include <map>
#include <vector>

#include "../lowering.hpp"

namespace neuron::compiler::lower {

/// Per folded constant: its values in [.., y, x] order.
using Folded = std::map<uint32_t, std::vector<float>>;

Folded fold(const Graph &g, const Usage &usage);

} // namespace neuron::compiler::lower
