// SPDX-License-Identifier: MIT
// A sample program for tests, fuzz seeds and benchmarks.
#pragma once

#include <span>
#include <vector>

#include <neuron/neuron.hpp>

namespace test {

/// A program that uses every kind of table entry and most instructions:
/// y[128, 64] = gelu(w^T x + b) in a loop, with semaphores between engines.
inline neuron::ProgramBuilder &sample(neuron::ProgramBuilder &b) {
    using namespace neuron;
    auto x = b.argument("x", DType::fp32, {128, 64}, Direction::in);
    auto y = b.argument("y", DType::fp32, {128, 64}, Direction::out);
    std::vector<float> w(128 * 128), bias(128);
    for (size_t i = 0; i < w.size(); i++)
        w[i] = static_cast<float>(i % 7) * 0.01f;
    for (size_t i = 0; i < bias.size(); i++)
        bias[i] = static_cast<float>(i) * 0.001f;
    auto wc = b.constant("w", {128, 128}, std::span<const float>(w));
    auto bc = b.constant("bias", {128}, std::span<const float>(bias));
    auto xs = b.sbuf("x_tile", DType::fp32, 64);
    auto ws = b.sbuf("w_tile", DType::fp32, 128);
    auto bs = b.sbuf("b_tile", DType::fp32, 1);
    auto ys = b.sbuf("y_tile", DType::fp32, 64);
    auto acc = b.psum("acc", DType::fp32, 64);
    auto loaded = b.semaphore("loaded");
    auto multiplied = b.semaphore("multiplied");
    auto done = b.semaphore("done");
    b.sync()
        .dma_load(xs.tap(), x.at(0, 64 * 4))
        .dma_load(ws.tap(), wc.at(0, 128 * 4))
        .dma_load(bs.tap(), bc.at(0, 4))
        .signal(loaded, 1)
        .wait(done, 1)
        .dma_store(y.at(0, 64 * 4), ys.tap());
    b.tensor().wait(loaded, 1).matmul(acc.tap(), ws.tap(), xs.tap()).signal(multiplied, 1);
    b.scalar().wait(multiplied, 1).activate(Activation::gelu, ys.tap(), acc.tap(), 1.0f, bs.tap());
    auto top = b.scalar().here();
    b.scalar().nop().loop(top, 3, 1).signal(done, 1);
    b.vector().iota(ys.view(0, 1), 0, 1, 0).memset(ys.view(0, 1), 0.0f);
    b.vector().tensor_scalar(ys.tap(), ys.tap(), AluOp::mul, 1.0f, AluOp::add, 0.0f);
    b.vector().reduce(ReduceOp::sum, bs.tap(), ys.view(0, 1)).notify(7);
    b.set_insn_limit(100000);
    return b;
}

inline std::vector<std::byte> sample_bytes() {
    neuron::ProgramBuilder b("sample");
    return sample(b).build();
}

} // namespace test
