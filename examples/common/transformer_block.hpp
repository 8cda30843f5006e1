// SPDX-License-Identifier: MIT
// A pre-norm transformer encoder block (GPT-2 layout, no mask, no dropout):
//
//   h = x + Attention(LayerNorm1(x)) Wo + bo
//   y = h + GELU(LayerNorm2(h) W1 + b1) W2 + b2
//
// with Attention(a) = concat over heads of softmax(Q_h K_h^T / sqrt(d_head)) V_h,
// Q = a Wq + bq, K = a Wk + bk, V = a Wv + bv, and LayerNorm(v) =
// (v - mean) / sqrt(var + eps) * gamma + beta over d_model.
//
// With post_norm, the same parameters make a BERT encoder layer instead:
//
//   h = LayerNorm1(x + Attention(x) Wo + bo)
//   y = LayerNorm2(h + GELU(h W1 + b1) W2 + b2)
//
// The hand-written program is the pre-norm block; the compiled programs
// (transformer_block_graph) are either.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <neuron/compiler/graph.hpp>
#include <neuron/kernel.hpp>
#include <neuron/program.hpp>

#include "common/example.hpp"

namespace nex {

struct TransformerShape {
    uint32_t seq = 128;     ///< tokens, <= 128 (one per partition)
    uint32_t d_model = 256; ///< a multiple of 128, <= 512
    uint32_t heads = 4;     ///< d_model / heads = d_head must divide 128
    uint32_t d_ff = 1024;   ///< a multiple of 128
    float eps = 1e-5f;      ///< LayerNorm epsilon
    bool post_norm = false; ///< a BERT (post-norm) layer: compiled programs only
    uint32_t d_head() const { return d_model / heads; }
};

/// Parameters, every weight stored input-major ([in, out], x W), as fp32.
struct TransformerParams {
    std::vector<float> ln1_g, ln1_b;   // [d_model]
    std::vector<float> wq, wk, wv, wo; // [d_model, d_model]
    std::vector<float> bq, bk, bv, bo; // [d_model]
    std::vector<float> ln2_g, ln2_b;   // [d_model]
    std::vector<float> w1;             // [d_model, d_ff]
    std::vector<float> b1;             // [d_ff]
    std::vector<float> w2;             // [d_ff, d_model]
    std::vector<float> b2;             // [d_model]
};

TransformerParams transformer_params(const TransformerShape &s, Rng &rng);

/// The program: "x" and "y" [1, seq, d_model] fp32; every parameter a
/// program constant (fp32).
neuron::Program build_transformer_block(const TransformerShape &s, const TransformerParams &p,
                                        neuron::Kernel::Stats *stats = nullptr);

std::vector<double> transformer_block_reference(const TransformerShape &s, std::span<const float> x,
                                                const TransformerParams &p);

Tolerance transformer_block_tolerance();

Case transformer_block_case(uint64_t seed = 1, const TransformerShape &s = {});

/// The block (or, with post_norm, the encoder layer) as a graph for the
/// compiler: input "x" and output "y" [1, seq, d_model] fp32, every
/// parameter a constant, heads split with reshape and transpose,
/// attention as matmul, mul, softmax, matmul.
neuron::compiler::Graph transformer_block_graph(const TransformerShape &s,
                                                const TransformerParams &p);

/// transformer_block_case's data, reference and check with the program
/// compiled from transformer_block_graph() instead of written by hand.
Case compiled_transformer_block_case(uint64_t seed = 1, const TransformerShape &s = {});

/// A BERT-base-sized encoder layer: seq 128, d_model 768, 12 heads,
/// d_ff 3072, post-norm, LayerNorm eps 1e-12.
constexpr TransformerShape bert_base_shape{128, 768, 12, 3072, 1e-12f, true};

/// The BERT-base-sized encoder layer compiled, with its CPU reference.
Case encoder_768_case(uint64_t seed = 1);

/// The tolerance of the compiled encoder layer (docs/examples.md).
Tolerance encoder_layer_tolerance();

} // namespace nex
