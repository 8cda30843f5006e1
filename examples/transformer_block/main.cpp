// SPDX-License-Identifier: MIT
// A pre-norm transformer block (seq 128, d_model 256, 4 heads, d_ff 1024)
// on a neuron device.
#include "common/run.hpp"
#include "common/transformer_block.hpp"

int main(int argc, char **argv) {
    return nex::example_main(
        argc, argv, "transformer_block",
        "y = h + MLP(LN2(h)), h = x + Attention(LN1(x)): seq 128, d_model 256, 4 heads, "
        "d_ff 1024, GELU.",
        {neuron::DType::fp32},
        [](neuron::DType, uint64_t seed) { return nex::transformer_block_case(seed); });
}
