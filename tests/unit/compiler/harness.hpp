// SPDX-License-Identifier: MIT
// Compiled graphs run through the device model on the host and checked,
// node by node, against the compiler's double-precision reference.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/graph.hpp>

namespace harness {

using Inputs = std::map<std::string, std::vector<float>>;

/// xorshift64 (the generator of the IR's uniform() constants).
class Rng {
  public:
    explicit Rng(uint64_t seed) : s_(seed ? seed : 0x9e3779b97f4a7c15ull) {}
    uint64_t next() {
        s_ ^= s_ << 13;
        s_ ^= s_ >> 7;
        s_ ^= s_ << 17;
        return s_;
    }
    /// Uniform in [-a, a).
    float uniform(float a = 1.0f) {
        return (static_cast<float>(next() >> 40) / 8388608.0f - 1.0f) * a;
    }
    uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }

  private:
    uint64_t s_;
};

/// Values for every graph input: seeded_inputs() (uniform in [-1, 1)), or,
/// for inputs whose name starts with "den", magnitudes in [0.5, 1.5)
/// (divisors).
Inputs make_inputs(const neuron::compiler::Graph &g, uint64_t seed);

/// A copy of @p g with every computed value an output.
neuron::compiler::Graph all_outputs(const neuron::compiler::Graph &g);

struct Outcome {
    std::map<std::string, std::vector<float>> outputs;
    neuron::compiler::Compiled compiled;
    uint64_t cycles = 0;
};

/// Compiles and runs @p g on the model; fails the test (cmocka) on a
/// compile error, a job fault or unordered engine streams.
Outcome run(const neuron::compiler::Graph &g, const Inputs &in,
            const neuron::compiler::CompileOptions &opt = {});

/// Every output of @p g against evaluate_bounded(): the bound carried
/// through the graph from the inputs (fails if an element is beyond it);
/// returns the elements whose bound is finite, which it checked.
size_t check_carried(const neuron::compiler::Graph &g, const Inputs &in, const Outcome &o,
                     const std::string &what);

/// Every output node checked against the reference computed from its
/// operands as the device produced them (inputs and constants as stored).
/// Returns the number of elements checked; fails the test with the node,
/// element, values and bound of the worst offender.
size_t check_nodes(const neuron::compiler::Graph &g, const Inputs &in, const Outcome &o,
                   const std::string &what);

/// Fails the test unless compiling @p g with @p o throws a GraphError
/// whose message contains @p why.
void expect_refused(const neuron::compiler::Graph &g, const neuron::compiler::CompileOptions &o,
                    const char *why);

/// Fails the test unless parsing each of @p texts throws an error whose
/// message contains the same index of @p whys.
void expect_parse_errors(const std::vector<const char *> &texts,
                         const std::vector<const char *> &whys);

} // namespace harness
