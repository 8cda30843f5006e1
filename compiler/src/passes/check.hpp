// SPDX-License-Identifier: MIT
// The check pass: what the lowering can take, and how each value is used.
#pragma once

#include <neuron/compiler/compile.hpp>

#include "../lowering.hpp"

namespace neuron::compiler::lower {

/// The target ISA is one this compiler emits; the graph has outputs; every
/// value fits the row layout. Throws GraphError naming what does not.
Usage check(const Graph &g, const CompileOptions &options);

} // namespace neuron::compiler::lower
