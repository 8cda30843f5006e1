// SPDX-License-Identifier: MIT
// A compiled graph on the device: its inputs uploaded once, run as one
// job on core 0, or split along its inputs' leading axis
// (neuron::compiler::split_rows) into one job per core over the same
// buffers.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <neuron/compiler/graph.hpp>
#include <neuron/neuron.hpp>

namespace nbench {

class DeviceGraph {
  public:
    /// @p g compiled whole (@p parts 1) or split into @p parts graphs, part
    /// k loaded on core k; inputs from neuron::compiler::seeded_inputs(@p seed).
    DeviceGraph(const neuron::Device &dev, const neuron::compiler::Graph &g, uint64_t seed,
                int parts = 1);

    /// Every part submitted on its core, then all waited for; seconds from
    /// the first submit to the last fence.
    double run_seconds() const;
    /// Runs per second of @p runs runs of the whole graph back to back with
    /// up to @p depth in flight (rate_in_flight: each submitted once the run
    /// @p depth earlier has finished), so with @p depth 2 the device need
    /// not wait for the host's round trip between runs.
    double runs_per_second(unsigned runs, unsigned depth) const;
    /// The output after the last run, as floats.
    std::vector<float> output() const;
    /// Cycles of the model's clock (hw/isa.md §7) of one profiled job of
    /// the whole graph (one part).
    uint64_t cycles(const neuron::Device &dev) const;
    /// One run's output against the compiler's double-precision reference
    /// within hw/isa.md's bounds (neuron::compiler::evaluate_bounded);
    /// throws std::runtime_error naming the worst element.
    void check() const;

  private:
    struct Part {
        neuron::LoadedProgram loaded;
        neuron::Queue queue;
        neuron::Arguments args;
    };
    neuron::compiler::Graph graph_;
    std::map<std::string, std::vector<float>> inputs_;
    std::deque<neuron::Buffer> buffers_; // the bindings point at them
    std::vector<Part> parts_;
    size_t out_ = 0;
    uint64_t out_bytes_ = 0;
};

} // namespace nbench
