// SPDX-License-Identifier: MIT
//
// The small program several guest tests run: y[128, n] = relu(x * 2 + 1).
#pragma once

#include <cstdint>

#include <neuron/neuron.hpp>

namespace neuron::test {

/// Adds arguments x and y (fp32 [128, n]) and the streams that compute
/// y = relu(x * 2 + 1) to @p b: the sync engine loads x into SBUF, the
/// scalar engine activates, the sync engine stores y; semaphores order them.
inline void add_relu2x1(ProgramBuilder &b, uint32_t n) {
    auto x = b.argument("x", DType::fp32, {128, n}, Direction::in);
    auto y = b.argument("y", DType::fp32, {128, n}, Direction::out);
    auto xs = b.sbuf("x", DType::fp32, n);
    auto ys = b.sbuf("y", DType::fp32, n);
    auto loaded = b.semaphore("loaded"), done = b.semaphore("done");
    b.sync()
        .dma_load(xs.tap(), x.at(0, n * 4))
        .signal(loaded)
        .wait(done)
        .dma_store(y.at(0, n * 4), ys.tap());
    b.scalar().wait(loaded).activate(Activation::relu, ys.tap(), xs.tap(), 2.0f, 1.0f).signal(done);
}

} // namespace neuron::test
