// SPDX-License-Identifier: MIT
// Linear(768, 768) + GELU on a [1, 128, 768] input, on a neuron device.
#include "common/linear_gelu.hpp"
#include "common/run.hpp"

int main(int argc, char **argv) {
    return nex::example_main(
        argc, argv, "linear_gelu",
        "y = GELU(x W^T + b): torch.nn.Linear(768, 768) and the exact GELU "
        "on x [1, 128, 768].",
        {neuron::DType::fp32, neuron::DType::bf16},
        [](neuron::DType dt, uint64_t seed) { return nex::linear_gelu_case(dt, seed); });
}
