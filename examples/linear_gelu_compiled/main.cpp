// SPDX-License-Identifier: MIT
// Linear(768, 768) + GELU on a [1, 128, 768] input, compiled from a graph
// by the compiler (neuron::compiler), on a neuron device.
#include "common/linear_gelu.hpp"
#include "common/run.hpp"

int main(int argc, char **argv) {
    return nex::example_main(
        argc, argv, "linear_gelu_compiled",
        "y = GELU(x W^T + b) on x [1, 128, 768], compiled from the graph "
        "gelu(matmul(x, w_t) + bias) by neuron::compiler.",
        {neuron::DType::fp32, neuron::DType::bf16},
        [](neuron::DType dt, uint64_t seed) { return nex::compiled_linear_gelu_case(dt, seed); });
}
