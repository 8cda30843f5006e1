// SPDX-License-Identifier: MIT
// Mapping onto one NeuronCore (docs/examples.md has the picture):
//
//   Sync    DMA_LOAD x [tokens, d_in] (token t -> partition t), the bias as
//           [128, d_out/128] (feature o -> partition o % 128), W^T in
//           d_in/128 row blocks of [128, d_out];
//   Tensor  TRANSPOSE x into x^T blocks [128 inputs, tokens]; per output
//           block ob: PSUM[128 outputs, tokens] = sum over input blocks kb
//           of W^T[kb, ob]^T x^T[kb] (MATMUL, accumulating in one bank);
//   Scalar  ACTIVATE gelu(PSUM + bias[o]) with the per-partition bias
//           operand into y^T[ob] (in the output dtype);
//   Sync    DMA_STORE y^T[ob] transposed into y (partition o -> column o).
//
// Computing y^T puts output features on partitions, so the bias is a
// per-partition operand of ACTIVATE and bias + GELU cost one instruction
// per block. The semaphores come from Kernel: matmuls of block ob start as
// soon as the W^T row block they read has landed, and the next block's
// matmuls overlap the previous block's activation and store.
#include "common/linear_gelu.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <neuron/builder.hpp>
#include <neuron/compiler/compile.hpp>

#include "neuron_isa.h"

namespace nex {

using namespace neuron;

LinearGeluParams linear_gelu_params(const LinearGeluShape &s, Rng &rng) {
    LinearGeluParams p;
    float a = 1.0f / std::sqrt(static_cast<float>(s.d_in));
    p.w_t.resize(size_t{s.d_in} * s.d_out);
    p.bias.resize(s.d_out);
    for (auto &w : p.w_t)
        w = rng.uniform(a);
    for (auto &b : p.bias)
        b = rng.uniform(a);
    return p;
}

Program build_linear_gelu(const LinearGeluShape &s, DType dt, const LinearGeluParams &p,
                          Kernel::Stats *stats) {
    const uint32_t T = s.tokens, DI = s.d_in, DO = s.d_out, P = 128;
    if (T == 0 || T > P || DI % P || DO % P || DI == 0 || DO == 0)
        throw std::invalid_argument(fmt::format(
            "linear_gelu: tokens must be 1..128 and d_in, d_out multiples of 128 (got {}, {}, {})",
            T, DI, DO));
    if (p.w_t.size() != size_t{DI} * DO || p.bias.size() != DO)
        throw std::invalid_argument("linear_gelu: parameters do not match the shape");
    const uint32_t KB = DI / P, OB = DO / P, es = dtype_size(dt);

    ProgramBuilder b(fmt::format("linear_gelu_{}x{}_{}", DI, DO, to_string(dt)));
    auto x = b.argument("x", dt, {1, T, DI}, Direction::in);
    auto y = b.argument("y", dt, {1, T, DO}, Direction::out);
    // Parameters are program constants: uploaded once by Device::load() and
    // bound read-only to every job, like a compiled model's weights.
    auto w_bytes = pack(dt, p.w_t);
    auto w = b.constant("w_t", dt, {DI, DO}, w_bytes);
    auto bias = b.constant("bias", {DO}, p.bias);

    Tile xs = b.sbuf("x", dt, DI, T);          // [t, i]
    Tile xt = b.sbuf("x_t", dt, KB * T);       // [i % 128, kb * T + t]
    Tile ws = b.sbuf("w_t", dt, KB * DO);      // [i % 128, kb * DO + o]
    Tile bs = b.sbuf("bias", DType::fp32, OB); // [o % 128, ob]
    Tile yt = b.sbuf("y_t", dt, OB * T);       // [o % 128, ob * T + t]
    Tile acc = b.psum("acc", DType::fp32, NEURON_PSUM_BANKS * NEURON_PSUM_BANK_SIZE / 4);
    const uint32_t bank_elems = NEURON_PSUM_BANK_SIZE / 4;

    Kernel k(b);
    k.dma_load(xs.tap(), x.at(0, DI * es));
    k.dma_load(bs.tap(), bias.at(0, 4, P * 4));
    for (uint32_t kb = 0; kb < KB; kb++)
        k.dma_load(ws.view(kb * DO, DO), w.at(uint64_t{kb} * P * DO * es, DO * es));
    for (uint32_t kb = 0; kb < KB; kb++)
        k.transpose(xt.view(kb * T, T), xs.view(kb * P, P));
    for (uint32_t ob = 0; ob < OB; ob++) {
        Tap bank = acc.view((ob % NEURON_PSUM_BANKS) * bank_elems, T);
        for (uint32_t kb = 0; kb < KB; kb++)
            k.matmul(bank, ws.view(kb * DO + ob * P, P), xt.view(kb * T, T), kb > 0);
        k.activate(Activation::gelu, yt.view(ob * T, T), bank, 1.0f, bs.view(ob, 1));
        // Partition o of y^T[ob] is column ob * 128 + o of y.
        k.dma_store(y.at(uint64_t{ob} * P * es, es, DO * es), yt.view(ob * T, T));
    }
    k.finish();
    if (stats)
        *stats = k.stats();
    return b.finish();
}

std::vector<double> linear_gelu_reference(const LinearGeluShape &s, std::span<const float> x,
                                          std::span<const float> w_t, std::span<const float> bias) {
    const size_t T = s.tokens, DI = s.d_in, DO = s.d_out;
    std::vector<double> z(T * DO);
    for (size_t t = 0; t < T; t++) {
        double *row = &z[t * DO];
        for (size_t o = 0; o < DO; o++)
            row[o] = bias[o];
        for (size_t i = 0; i < DI; i++) {
            double xv = x[t * DI + i];
            const float *wr = &w_t[i * DO];
            for (size_t o = 0; o < DO; o++)
                row[o] += xv * wr[o];
        }
    }
    for (auto &v : z)
        v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    return z;
}

Tolerance linear_gelu_tolerance(DType dt) {
    // hw/isa.md, "Numerics": fp32 end to end within 1e-5 |ref| + 1e-6;
    // bf16 inputs, weights and output within 1e-2 |ref| + 1e-3 of the
    // reference computed from the same bf16 values.
    return dt == DType::bf16 ? Tolerance{1e-2, 1e-3} : Tolerance{1e-5, 1e-6};
}

namespace {
// The case's input and parameters: the same for both programs.
std::pair<std::vector<float>, LinearGeluParams> linear_gelu_data(uint64_t seed,
                                                                 const LinearGeluShape &s) {
    Rng rng(seed);
    std::vector<float> x(size_t{s.tokens} * s.d_in);
    for (auto &v : x)
        v = rng.uniform(1.0f);
    LinearGeluParams p = linear_gelu_params(s, rng);
    return {std::move(x), std::move(p)};
}
} // namespace

compiler::Graph linear_gelu_graph(const LinearGeluShape &s, DType dt, const LinearGeluParams &p) {
    using namespace neuron::compiler;
    Graph g(fmt::format("linear_gelu_{}x{}_{}_compiled", s.d_in, s.d_out, to_string(dt)));
    const int64_t T = s.tokens, DI = s.d_in, DO = s.d_out;
    uint32_t x = g.input("x", Type{dt, {1, T, DI}});
    uint32_t w = g.constant("w_t", Type{dt, {DI, DO}}, ConstantInit{p.w_t, {}, 1.0f});
    uint32_t b = g.constant("bias", Type{dt, {DO}}, ConstantInit{p.bias, {}, 1.0f});
    uint32_t h = g.add(Op::matmul, "h", {x, w});
    uint32_t z = g.add(Op::add, "z", {h, b});
    g.mark_output(g.add(Op::gelu, "y", {z}));
    return g;
}

Case compiled_linear_gelu_case(DType dt, uint64_t seed, const LinearGeluShape &s) {
    auto [x, p] = linear_gelu_data(seed, s);
    compiler::Compiled compiled = compiler::compile(linear_gelu_graph(s, dt, p));
    Case c(compiled.program);
    c.stats = compiled.stats;
    c.title = fmt::format("Linear({}, {}) + GELU on [1, {}, {}], {}, compiled", s.d_in, s.d_out,
                          s.tokens, s.d_in, to_string(dt));
    c.inputs.emplace_back("x", pack(dt, x));
    c.output = std::string("y");
    c.output_dtype = dt;
    auto t0 = std::chrono::steady_clock::now();
    c.reference = linear_gelu_reference(s, rounded(dt, x), rounded(dt, p.w_t), rounded(dt, p.bias));
    c.reference_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    c.tolerance = linear_gelu_tolerance(dt);
    c.flops = 2ull * s.tokens * s.d_in * s.d_out;
    return c;
}

Case linear_gelu_case(DType dt, uint64_t seed, const LinearGeluShape &s) {
    auto [x, p] = linear_gelu_data(seed, s);

    Kernel::Stats stats;
    Case c(build_linear_gelu(s, dt, p, &stats));
    c.stats = stats;
    c.title = fmt::format("Linear({}, {}) + GELU on [1, {}, {}], {}", s.d_in, s.d_out, s.tokens,
                          s.d_in, to_string(dt));
    c.inputs.emplace_back("x", pack(dt, x));
    c.output = std::string("y");
    c.output_dtype = dt;
    auto t0 = std::chrono::steady_clock::now();
    c.reference = linear_gelu_reference(s, rounded(dt, x), rounded(dt, p.w_t), p.bias);
    c.reference_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    c.tolerance = linear_gelu_tolerance(dt);
    c.flops = 2ull * s.tokens * s.d_in * s.d_out;
    return c;
}

} // namespace nex
