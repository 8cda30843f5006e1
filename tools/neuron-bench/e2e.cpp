// SPDX-License-Identifier: MIT
// End to end: the example models (examples/) run as a user would run
// them: per-run latency one at a time, and throughput with many runs in
// flight spread over every core.
#include <stdexcept>

#include <fmt/format.h>

#include <neuron/neuron.hpp>

#include "bench.hpp"
#include "common/example.hpp"
#include "common/linear_gelu.hpp"
#include "common/transformer_block.hpp"

namespace nbench {

namespace {

/// One example loaded on a device, with its inputs uploaded and one
/// output buffer per run that may be in flight.
class LoadedExample {
  public:
    LoadedExample(const neuron::Device &dev, const nex::Case &c, unsigned slots)
        : case_(c), program_(dev.load(c.program)) {
        const auto region =
            dev.info().device_memory_size ? neuron::Region::device : neuron::Region::host;
        for (const auto &[name, bytes] : c.inputs) {
            inputs_.push_back(dev.allocate(bytes.size(), region));
            inputs_.back().write(0, bytes);
            base_.bind(name, inputs_.back().range(0, bytes.size()));
        }
        out_size_ = nex::argument_size(c.program, c.output);
        for (unsigned i = 0; i < slots; i++)
            outputs_.push_back(dev.allocate(out_size_, region));
        for (unsigned q = 0; q < dev.info().num_cores; q++)
            queues_.push_back(dev.queue(q));
    }

    /// Runs once on core 0 and checks the output against the reference:
    /// a wrong result is no benchmark figure.
    void check() const {
        submit(0, 0).wait();
        std::vector<std::byte> out(out_size_);
        outputs_[0].read(0, out);
        const auto e = nex::check(case_, out);
        if (!e.ok())
            throw std::runtime_error(fmt::format("{}: output beyond tolerance: {}", case_.title,
                                                 nex::describe(e, case_.tolerance)));
    }

    neuron::Fence submit(unsigned slot, unsigned core) const {
        neuron::Arguments args = base_;
        args.bind(case_.output, outputs_[slot].range(0, out_size_));
        return queues_[core % queues_.size()].submit(program_, args);
    }

    unsigned cores() const { return static_cast<unsigned>(queues_.size()); }

  private:
    const nex::Case &case_;
    neuron::LoadedProgram program_;
    std::vector<neuron::Buffer> inputs_;
    std::vector<neuron::Buffer> outputs_;
    std::vector<neuron::Queue> queues_;
    neuron::Arguments base_;
    uint64_t out_size_ = 0;
};

/// Runs per second with @p depth in flight, round robin over the cores.
double throughput(const LoadedExample &ex, unsigned depth, unsigned runs) {
    return rate_in_flight(depth, runs, [&](unsigned i) { return ex.submit(i % depth, i); });
}

} // namespace

void run_e2e(const Options &o, Report &r) {
    const unsigned depth = 16;
    Table &t = r.table("e2e", "Example models, inputs resident on the device", "model");
    const std::string deep = fmt::format("{} in flight", depth);
    t.column("latency", "ms").column("one at a time", "1/s").column(deep, "1/s");
    t.ratio("in flight/one", deep, "one at a time");
    t.note(fmt::format("Latency: one run at a time on core 0, submit to fence (its inverse is "
                       "the one-at-a-time rate). {}: round robin over all cores, each run with "
                       "its own output buffer.",
                       deep));
    struct Model {
        std::string name;
        std::function<nex::Case()> make;
    };
    const std::vector<Model> models = {
        {"Linear+GELU fp32", [] { return nex::linear_gelu_case(neuron::DType::fp32); }},
        {"Linear+GELU bf16", [] { return nex::linear_gelu_case(neuron::DType::bf16); }},
        {"Linear+GELU fp32 compiled",
         [] { return nex::compiled_linear_gelu_case(neuron::DType::fp32); }},
        {"Linear+GELU bf16 compiled",
         [] { return nex::compiled_linear_gelu_case(neuron::DType::bf16); }},
        {"transformer block fp32", [] { return nex::transformer_block_case(); }},
    };
    auto dev = open_device(o);
    for (const auto &m : models) {
        if (!dev) {
            for (const std::string &col :
                 {std::string("latency"), std::string("one at a time"), deep})
                t.skip(m.name, col, "no neuron device");
            continue;
        }
        const nex::Case c = m.make();
        LoadedExample ex(*dev, c, depth);
        ex.check();
        const unsigned runs = o.quick ? 8 : 48;
        const Stats latency = repeat_runs(o.repeat, [&] {
            const double t0 = now_s();
            for (unsigned i = 0; i < runs / 4; i++)
                ex.submit(0, 0).wait();
            return (now_s() - t0) / (runs / 4) * 1e3;
        });
        const Stats rate = repeat_runs(o.repeat, [&] { return throughput(ex, depth, runs); });
        t.set(m.name, "latency", latency);
        // The inverse is monotonic: the slowest run gives the lowest rate.
        t.set(m.name, "one at a time",
              Stats{1e3 / latency.median, 1e3 / latency.max, 1e3 / latency.min, latency.runs});
        t.set(m.name, deep, rate);
    }
}

} // namespace nbench
