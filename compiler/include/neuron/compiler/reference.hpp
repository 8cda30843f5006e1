// SPDX-License-Identifier: MIT
// The double-precision reference of every operator, and the error the
// device's result may have against it (docs/compiler.md, "Numerics").
#pragma once

#include <map>
#include <string>
#include <vector>

#include <neuron/compiler/graph.hpp>

namespace neuron::compiler {

struct Expected {
    std::vector<double> value; ///< computed in double from the operands
    /// Per element, the largest |device - value| allowed. Empty when the
    /// operator is exact: the device's result is then value rounded to
    /// fp32 and then to the node's dtype, bit for bit.
    std::vector<double> bound;
};

/// Node @p node of @p g computed from its operands' values (row-major).
Expected reference(const Graph &g, uint32_t node,
                   const std::vector<const std::vector<double> *> &operands);

/// Every node's value from the graph's inputs (by name), in double, without
/// rounding intermediate values; inputs and constants as stored.
std::vector<std::vector<double>> evaluate(const Graph &g,
                                          const std::map<std::string, std::vector<float>> &inputs);

/// Every node's value as evaluate() computes it, with the largest error the
/// device's value of it may have (Expected::bound, never empty; 0 for
/// inputs and constants): the node's own error (reference()'s bound at
/// these operands, or for an exactly computed value the rounding of its
/// result and operands to fp32 and its dtype) plus its operands' errors
/// carried through the operator (sums add them, products scale them by
/// the other operand, activations by their steepest slope, softmax and the
/// normalisations by how far the row's errors can move the maximum, sum,
/// mean and variance). What a graph's outputs are checked against when
/// only they come back from the device (neuron-run --check).
std::vector<Expected> evaluate_bounded(const Graph &g,
                                       const std::map<std::string, std::vector<float>> &inputs);

/// What the device stores for an exactly computed value: fp32 rounding,
/// then the dtype's.
double exact_result(DType t, double v);

} // namespace neuron::compiler
