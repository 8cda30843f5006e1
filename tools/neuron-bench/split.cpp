// SPDX-License-Identifier: MIT
// A compiled graph split over the device's cores along its tokens
// (neuron::compiler::split_rows), next to the same graph as one job on one
// core: the compute section's table compute-split.
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include <neuron/compiler/graph.hpp>

#include "bench.hpp"
#include "device_graph.hpp"

namespace nbench {

namespace {

namespace nc = neuron::compiler;

/// A transformer feed-forward layer with its residual on @p tokens rows:
/// x + gelu(x w1 + b1) w2 + b2, x [tokens, d].
nc::Graph ffn_graph(int64_t tokens, int64_t d, int64_t ff) {
    nc::Graph g(fmt::format("ffn_{}x{}x{}", tokens, d, ff));
    const auto fp32 = [](nc::Shape s) { return nc::Type{neuron::DType::fp32, std::move(s)}; };
    const auto init = [](uint64_t seed, double fan_in) {
        return nc::ConstantInit{{}, seed, static_cast<float>(1 / std::sqrt(fan_in))};
    };
    const uint32_t x = g.input("x", fp32({tokens, d}));
    const uint32_t w1 = g.constant("w1", fp32({d, ff}), init(1, static_cast<double>(d)));
    const uint32_t b1 = g.constant("b1", fp32({ff}), init(2, static_cast<double>(d)));
    const uint32_t w2 = g.constant("w2", fp32({ff, d}), init(3, static_cast<double>(ff)));
    const uint32_t b2 = g.constant("b2", fp32({d}), init(4, static_cast<double>(ff)));
    uint32_t h = g.add(nc::Op::matmul, "h", {x, w1});
    h = g.add(nc::Op::add, "hb", {h, b1});
    h = g.add(nc::Op::gelu, "a", {h});
    h = g.add(nc::Op::matmul, "y", {h, w2});
    h = g.add(nc::Op::add, "yb", {h, b2});
    g.mark_output(g.add(nc::Op::add, "out", {h, x}));
    return g;
}

} // namespace

void run_compute_split(const Options &o, const neuron::Device &dev, Report &r) {
    const unsigned cores = dev.info().num_cores;
    Table &t = r.table("compute-split",
                       "A compiled graph split over the cores along its tokens, next to one core",
                       "graph, tokens x d x d_ff, fp32");
    const std::string all = fmt::format("{} cores", cores);
    t.column("1 core", "ms").column(all, "ms").ratio("speedup", "1 core", all);
    t.note(fmt::format(
        "a transformer feed-forward layer with its residual (x + gelu(x w1 + b1) w2 + b2) "
        "compiled whole and run as one job on core 0, and split by "
        "neuron::compiler::split_rows into {} graphs of consecutive tokens, one job per core "
        "submitted together, each binding its rows of the same input and output buffers; "
        "milliseconds from the first submit to the last fence, the two alternating round by "
        "round; the split output is checked equal, bit for bit, to the whole graph's.",
        cores));
    const std::string row = o.quick ? "FFN 128x256x1024" : "FFN 512x768x3072";
    if (cores < 2) {
        t.skip(row, all, "the device has one core");
        return;
    }
    const nc::Graph g = o.quick ? ffn_graph(128, 256, 1024) : ffn_graph(512, 768, 3072);
    const DeviceGraph one(dev, g, 5), split(dev, g, 5, static_cast<int>(cores));
    one.run_seconds();
    split.run_seconds();
    if (one.output() != split.output())
        throw std::runtime_error(
            fmt::format("{}: the output split over {} cores differs from one core's", row, cores));
    const Rounds rounds =
        interleaved_rounds(o.repeat, {{"1 core", [&] { return one.run_seconds() * 1e3; }},
                                      {all, [&] { return split.run_seconds() * 1e3; }}});
    t.set(row, "1 core", rounds, "");
    t.set(row, all, rounds, "");
}

} // namespace nbench
