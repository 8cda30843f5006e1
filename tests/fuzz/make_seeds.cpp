// SPDX-License-Identifier: MIT
// Writes the fuzzer's seed corpus: containers made by the builder.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <neuron/neuron.hpp>

#include "sample_program.hpp"

static void save(const std::filesystem::path &dir, const char *name,
                 const std::vector<std::byte> &b) {
    std::ofstream(dir / name, std::ios::binary)
        .write(reinterpret_cast<const char *>(b.data()), static_cast<std::streamsize>(b.size()));
}

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
        return 2;
    }
    std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    save(dir, "sample.nprog", test::sample_bytes());

    neuron::ProgramBuilder tiny("tiny");
    tiny.vector().nop().notify(1);
    save(dir, "tiny.nprog", tiny.build());

    using namespace neuron;
    ProgramBuilder c("consts");
    std::vector<float> v(16, 1.5f);
    auto k = c.constant("k", {16}, std::span<const float>(v));
    auto out = c.argument("out", DType::bf16, {2, 8}, Direction::inout);
    auto t = c.sbuf("t", DType::fp32, 16, 1);
    c.sync()
        .dma_load(t.tap(), k.at(0, 64))
        .dma_store(out.at(0, 32, 2), t.as(DType::bf16).view(0, 16));
    c.scalar().tensor_scalar(t.tap(), t.tap(), AluOp::max, 0.0f);
    save(dir, "consts.nprog", c.build());
    return 0;
}
