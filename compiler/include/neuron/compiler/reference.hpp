// SPDX-License-Identifier: MIT
// The double-precision reference of every operator, and the error the
// device's result may have against it (docs/compiler.md, "Numerics").
#pragma once

#include <cstdint>
#include <map>
#include <span>
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

/// The bound output @p node of @p g is held to when only the graph's
/// outputs come back from the device (@p ref from evaluate_bounded()).
struct OutputBound {
    std::vector<double> bound;
    /// The bound carried through the graph is wider than the values (a
    /// deep graph, where every operator's worst case is assumed to align,
    /// or a division by values near 0): @p bound is then the own bound of
    /// the last operator that computes the output's values (the output
    /// itself, or, through data movement, the operators it moves the
    /// values of), which leaves out the errors of the operators before it.
    bool own = false;
    std::vector<uint32_t> computed_by; ///< own: the operators whose own bound it is
    double carried = 0;                ///< the largest carried bound (NaN counts as inf)
    double largest = 0;                ///< the largest |value|
};
OutputBound output_bound(const Graph &g, uint32_t node, const std::vector<Expected> &ref);

/// Device values against their reference within per-element bounds.
struct Comparison {
    size_t elements = 0;  ///< compared
    size_t unchecked = 0; ///< of them, those whose bound is not finite: not held to it
    size_t beyond = 0;    ///< |device - reference| above the bound (a NaN where the reference
                          ///< is a number counts)
    double max_error = 0; ///< the largest |device - reference| that is a number
    size_t worst = 0;     ///< the element of the largest |device - reference| / bound
    double worst_ratio = 0;
    std::vector<size_t> worst_beyond; ///< elements beyond the bound, worst first
};

/// Compares @p device with @p reference element by element: an element is
/// within when it equals the reference (NaN for NaN included) or differs
/// by at most its @p bound; elements whose bound is infinite or NaN are
/// counted as unchecked. Lists the @p list worst elements beyond the bound.
Comparison compare(std::span<const float> device, std::span<const double> reference,
                   std::span<const double> bound, size_t list = 0);

/// Values for a tensor of type @p t from @p seed: uniform in [-1, 1) by
/// the generator of the IR's constants (uniform(seed=S, scale=1)), as the
/// dtype stores them; int32: those values times 100, rounded.
std::vector<float> seeded_values(const Type &t, uint64_t seed);

/// seeded_values() for every input of @p g, the i-th input (in the
/// graph's order, as the program's arguments) from @p seed + i.
std::map<std::string, std::vector<float>> seeded_inputs(const Graph &g, uint64_t seed);

} // namespace neuron::compiler
