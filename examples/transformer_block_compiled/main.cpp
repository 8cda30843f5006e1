// SPDX-License-Identifier: MIT
// The pre-norm transformer block of transformer_block (seq 128, d_model
// 256, 4 heads, d_ff 1024), compiled from a graph by the compiler
// (neuron::compiler), on a neuron device.
#include "common/run.hpp"
#include "common/transformer_block.hpp"

int main(int argc, char **argv) {
    return nex::example_main(
        argc, argv, "transformer_block_compiled",
        "y = h + MLP(LN2(h)), h = x + Attention(LN1(x)): seq 128, d_model 256, 4 heads, "
        "d_ff 1024, GELU; compiled from its graph by neuron::compiler.",
        {neuron::DType::fp32},
        [](neuron::DType, uint64_t seed) { return nex::compiled_transformer_block_case(seed); });
}
