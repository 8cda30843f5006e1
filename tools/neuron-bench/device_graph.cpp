// SPDX-License-Identifier: MIT
#include "device_graph.hpp"

#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/reference.hpp>
#include <neuron/compiler/split.hpp>

#include "bench.hpp"

namespace nbench {

namespace nc = neuron::compiler;

DeviceGraph::DeviceGraph(const neuron::Device &dev, const nc::Graph &g, uint64_t seed, int parts)
    : graph_(g), inputs_(nc::seeded_inputs(g, seed)) {
    const auto region =
        dev.info().device_memory_size ? neuron::Region::device : neuron::Region::host;
    std::map<std::string, std::pair<size_t, uint64_t>> buffer_of; // index, bytes
    for (const nc::Node &n : g.nodes())
        if (n.op == nc::Op::input) {
            const auto bytes = nc::pack(n.type.dtype, inputs_.at(n.name));
            buffers_.push_back(dev.allocate(bytes.size(), region));
            buffers_.back().write(0, bytes);
            buffer_of[n.name] = {buffers_.size() - 1, bytes.size()};
        }
    const nc::Node &out = g.node(g.outputs().at(0));
    out_bytes_ = static_cast<uint64_t>(out.type.elements()) * neuron::dtype_size(out.type.dtype);
    buffers_.push_back(dev.allocate(out_bytes_, region));
    out_ = buffers_.size() - 1;
    buffer_of[out.name] = {out_, out_bytes_};
    if (parts == 1) {
        neuron::Arguments args;
        for (const auto &[name, b] : buffer_of)
            args.bind(name, buffers_[b.first].range(0, b.second));
        parts_.push_back(Part{dev.load(nc::compile(g).program), dev.queue(0), std::move(args)});
        return;
    }
    const nc::Split split = nc::split_rows(g, parts);
    for (size_t k = 0; k < split.parts.size(); k++) {
        const nc::SplitPart &p = split.parts[k];
        neuron::Arguments args;
        for (const auto &[name, b] : buffer_of) {
            const nc::Node &n = g.node(*g.find(name));
            const uint64_t row = static_cast<uint64_t>(split.row_elements.at(name)) *
                                 neuron::dtype_size(n.type.dtype);
            args.bind(name, buffers_[b.first].range(static_cast<uint64_t>(p.first_row) * row,
                                                    static_cast<uint64_t>(p.rows) * row));
        }
        parts_.push_back(Part{dev.load(nc::compile(p.graph).program),
                              dev.queue(static_cast<unsigned>(k)), std::move(args)});
    }
}

double DeviceGraph::run_seconds() const {
    const auto limit = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(job_timeout_s() + 5.0));
    const double t0 = now_s();
    std::vector<neuron::Fence> done;
    for (const Part &p : parts_)
        done.push_back(p.queue.submit(p.loaded, p.args));
    for (const neuron::Fence &f : done)
        if (!f.wait_for(limit))
            throw std::runtime_error(fmt::format("{} did not finish", f.label()));
    return now_s() - t0;
}

double DeviceGraph::runs_per_second(unsigned runs, unsigned depth) const {
    if (parts_.size() != 1)
        throw std::logic_error("DeviceGraph::runs_per_second: runs of a split graph");
    const Part &p = parts_[0];
    return rate_in_flight(depth, runs, [&](unsigned) { return p.queue.submit(p.loaded, p.args); });
}

std::vector<float> DeviceGraph::output() const {
    std::vector<std::byte> bytes(out_bytes_);
    buffers_[out_].read(0, bytes);
    const nc::Node &n = graph_.node(graph_.outputs().at(0));
    return nc::unpack(n.type.dtype, bytes.data(), static_cast<size_t>(n.type.elements()));
}

uint64_t DeviceGraph::cycles(const neuron::Device &dev) const {
    if (parts_.size() != 1)
        throw std::logic_error("DeviceGraph::cycles: the model's clock of a split graph");
    const neuron::Profile prof(dev, 1);
    parts_[0].queue.submit(parts_[0].loaded, parts_[0].args, prof).wait();
    return prof.read().cycles;
}

void DeviceGraph::check() const {
    buffers_[out_].write(0, std::vector<std::byte>(out_bytes_, std::byte{0xff}));
    run_seconds();
    const std::vector<float> got = output();
    const uint32_t o = graph_.outputs().at(0);
    const auto ref = nc::evaluate_bounded(graph_, inputs_);
    const nc::Comparison c = nc::compare(got, ref[o].value, ref[o].bound);
    if (c.beyond || c.unchecked)
        throw std::runtime_error(fmt::format(
            "compiled {}: {} of {} elements beyond the bound{}; element {} is {} on the device, "
            "{} in the reference (bound {})",
            graph_.name(), c.beyond, got.size(),
            c.unchecked ? fmt::format(", {} without a finite bound", c.unchecked) : "", c.worst,
            got[c.worst], ref[o].value[c.worst], ref[o].bound[c.worst]));
}

} // namespace nbench
