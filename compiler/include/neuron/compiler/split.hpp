// SPDX-License-Identifier: MIT
// Splitting a graph over several cores along the leading axis of its
// inputs and outputs (a batch or token split): one graph per core, each
// compiled on its own and run as one job on its core.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <neuron/compiler/graph.hpp>

namespace neuron::compiler {

/// One core's share of a split graph: the rows [first_row, first_row +
/// rows) of the inputs' leading axis.
struct SplitPart {
    Graph graph;
    int64_t first_row = 0;
    int64_t rows = 0;
};

struct Split {
    std::vector<SplitPart> parts;
    /// For every input and output: its elements per row of the inputs'
    /// leading axis. A part's share of argument a is the contiguous run of
    /// elements [first_row * n, (first_row + rows) * n) of a, n =
    /// row_elements[a], in the graph's row-major layout.
    std::map<std::string, int64_t> row_elements;
};

/// @p g cut into @p parts graphs along the leading axis of every input
/// (all inputs have the same leading extent L; parts of L / parts rows,
/// the first L % parts of them one row more), each computing its rows of
/// every output. Constants are shared, or sliced when an operator combines
/// their leading axis with the split one. Throws GraphError naming the
/// node, its shapes and why when an operator mixes rows of the leading axis
/// (a transpose or reshape that moves it, a slice, concat or split along
/// it, a matmul contracting it), when an output does not depend on the
/// inputs, or when there are fewer rows than parts.
Split split_rows(const Graph &g, int parts);

} // namespace neuron::compiler
