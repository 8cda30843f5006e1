// SPDX-License-Identifier: MIT
// A compiled graph split over the device's cores along its tokens
// (neuron::compiler::split_rows), next to the same graph as one job on one
// core: the compute section's table compute-split.
#include <cmath>
#include <deque>
#include <map>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/reference.hpp>
#include <neuron/compiler/split.hpp>

#include "bench.hpp"

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

/// @p g's parts loaded one per core, over whole input and output buffers
/// (each part binds its rows of them); one parts count of 1 is the whole
/// graph on core 0.
class SplitJobs {
  public:
    SplitJobs(const neuron::Device &dev, const nc::Graph &g, int parts, uint64_t seed)
        : split_(nc::split_rows(g, parts)) {
        const auto region =
            dev.info().device_memory_size ? neuron::Region::device : neuron::Region::host;
        std::map<std::string, size_t> buffer_of;
        for (const nc::Node &n : g.nodes())
            if (n.op == nc::Op::input) {
                const auto bytes = nc::pack(n.type.dtype, nc::seeded_inputs(g, seed).at(n.name));
                buffers_.push_back(dev.allocate(bytes.size(), region));
                buffers_.back().write(0, bytes);
                buffer_of[n.name] = buffers_.size() - 1;
            }
        const nc::Node &out = g.node(g.outputs().at(0));
        out_elements_ = static_cast<size_t>(out.type.elements());
        buffers_.push_back(dev.allocate(out_elements_ * sizeof(float), region));
        buffer_of[out.name] = out_ = buffers_.size() - 1;
        for (size_t k = 0; k < split_.parts.size(); k++) {
            const nc::SplitPart &p = split_.parts[k];
            loaded_.push_back(dev.load(nc::compile(p.graph).program));
            queues_.push_back(dev.queue(static_cast<unsigned>(k)));
            neuron::Arguments args;
            for (const auto &[name, b] : buffer_of) {
                const uint64_t row = static_cast<uint64_t>(split_.row_elements.at(name)) * 4;
                args.bind(name, buffers_[b].range(static_cast<uint64_t>(p.first_row) * row,
                                                  static_cast<uint64_t>(p.rows) * row));
            }
            args_.push_back(std::move(args));
        }
    }

    /// Every part submitted on its core, then all waited for.
    double run_seconds() const {
        const double t0 = now_s();
        std::vector<neuron::Fence> done;
        for (size_t k = 0; k < loaded_.size(); k++)
            done.push_back(queues_[k].submit(loaded_[k], args_[k]));
        for (const neuron::Fence &f : done)
            f.wait();
        return now_s() - t0;
    }

    std::vector<float> output() const {
        std::vector<std::byte> bytes(out_elements_ * sizeof(float));
        buffers_[out_].read(0, bytes);
        return nc::unpack(neuron::DType::fp32, bytes.data(), out_elements_);
    }

  private:
    nc::Split split_;
    std::deque<neuron::Buffer> buffers_; // the arguments point at them
    std::vector<neuron::LoadedProgram> loaded_;
    std::vector<neuron::Queue> queues_;
    std::vector<neuron::Arguments> args_;
    size_t out_ = 0, out_elements_ = 0;
};

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
    const SplitJobs one(dev, g, 1, 5), split(dev, g, static_cast<int>(cores), 5);
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
