// SPDX-License-Identifier: MIT
// A BERT-base-sized encoder layer (seq 128, d_model 768, 12 heads, d_ff
// 3072, post-norm), compiled from a graph by the compiler
// (neuron::compiler), on a neuron device.
#include "common/run.hpp"
#include "common/transformer_block.hpp"

int main(int argc, char **argv) {
    return nex::example_main(
        argc, argv, "encoder_768",
        "y = LN2(h + MLP(h)), h = LN1(x + Attention(x)): seq 128, d_model 768, 12 heads, "
        "d_ff 3072, GELU (BERT-base); compiled from its graph by neuron::compiler.",
        {neuron::DType::fp32},
        [](neuron::DType, uint64_t seed) { return nex::encoder_768_case(seed); });
}
