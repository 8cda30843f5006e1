// SPDX-License-Identifier: MIT
// y = GELU(x W + b): torch.nn.Linear(d_in, d_out) followed by the exact
// (erf) GELU, on x of shape [1, tokens, d_in].
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <neuron/compiler/graph.hpp>
#include <neuron/kernel.hpp>
#include <neuron/program.hpp>

#include "common/example.hpp"

namespace nex {

struct LinearGeluShape {
    uint32_t tokens = 128; ///< <= 128: one token per SBUF partition
    uint32_t d_in = 768;   ///< a multiple of 128 (contraction tiles)
    uint32_t d_out = 768;  ///< a multiple of 128 (output feature tiles)
};

/// The layer's parameters. w_t is the weight stored input-major,
/// w_t[i * d_out + o] = torch's weight[o][i], the layout the program loads
/// as matmul operands without a transpose.
struct LinearGeluParams {
    std::vector<float> w_t;  ///< [d_in, d_out]
    std::vector<float> bias; ///< [d_out]
};

/// torch.nn.Linear's default initialisation: U(-1/sqrt(d_in), 1/sqrt(d_in)).
LinearGeluParams linear_gelu_params(const LinearGeluShape &s, Rng &rng);

/// The program: argument "x" [1, tokens, d_in] and "y" [1, tokens, d_out]
/// of @p dt; constants "w_t" (@p dt) and "bias" (fp32).
neuron::Program build_linear_gelu(const LinearGeluShape &s, neuron::DType dt,
                                  const LinearGeluParams &p,
                                  neuron::Kernel::Stats *stats = nullptr);

/// The reference in double precision, from x and w_t as given (round them
/// first to what the device sees).
std::vector<double> linear_gelu_reference(const LinearGeluShape &s, std::span<const float> x,
                                          std::span<const float> w_t, std::span<const float> bias);

/// The documented tolerance (docs/examples.md).
Tolerance linear_gelu_tolerance(neuron::DType dt);

/// Random input and parameters, the program and its reference.
Case linear_gelu_case(neuron::DType dt, uint64_t seed = 1, const LinearGeluShape &s = {});

/// The same layer as a graph for the compiler: input "x", constants "w_t"
/// and "bias" (all @p dt), y = gelu(matmul(x, w_t) + bias), output "y".
neuron::compiler::Graph linear_gelu_graph(const LinearGeluShape &s, neuron::DType dt,
                                          const LinearGeluParams &p);

/// linear_gelu_case's data and check with the program compiled from
/// linear_gelu_graph() instead of written by hand (the bias is @p dt too).
Case compiled_linear_gelu_case(neuron::DType dt, uint64_t seed = 1, const LinearGeluShape &s = {});

} // namespace nex
