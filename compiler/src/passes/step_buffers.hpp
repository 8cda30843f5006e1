// SPDX-License-Identifier: MIT
// What a group's lowering asks of the SBUF buffers of its step. Each
// operator declares that once (OpLowering::declare): the memory plan runs
// the declaration to record the buffers and their lifetimes, and emission
// runs the same declaration to get the planned buffers back, in the same
// order, loaded and filled.
#pragma once

#include <string>

#include <neuron/compiler/compile.hpp>

#include "../lowering.hpp"

namespace neuron::compiler::lower {

class StepBuffers {
  public:
    StepBuffers(const Graph &g, const CompileOptions &o) : graph(g), options(o) {}
    StepBuffers(const StepBuffers &) = delete;
    StepBuffers &operator=(const StepBuffers &) = delete;
    virtual ~StepBuffers() = default;

    /// A temporary of the current step, of @p rows rows by @p cols.
    virtual const Buf &temp(const std::string &what, DType dtype, uint32_t rows, uint32_t cols) = 0;
    /// One-row value @p node on all 128 partitions, or with @p period > 1
    /// its @p period rows repeated down them (partition p holds row p %
    /// period); once per step and node.
    virtual const Buf &replicated(uint32_t node, uint32_t period = 1) = 0;
    /// Value @p node [.., x, y] as [.., y, x] in a temporary named @p what.
    virtual const Buf &transposed(uint32_t node, const std::string &what) = 0;
    /// Value @p node is read from its SBUF buffer (an input or a constant
    /// is loaded into it first).
    virtual void read(uint32_t node) = 0;
    /// The step adds a bias in PSUM with the row of ones.
    virtual void use_ones() = 0;
    /// Matmul weight @p node stays in device memory and is streamed.
    virtual bool streamed(uint32_t node) const = 0;
    /// The buffer of value @p node.
    virtual const Buf &buf(uint32_t node) const = 0;

    /// Node @p node is lowered with instruction @p insn of ISA minor
    /// @p minor: the target must have it.
    void require(uint32_t node, const std::string &insn, unsigned minor) const {
        const unsigned have = options.isa_version & 0xffff;
        if (minor > have)
            unsupported(graph, graph.node(node),
                        fmt::format("the lowering needs {}, an instruction of ISA {}.{}, but the "
                                    "target device implements ISA {}.{}",
                                    insn, isa_version() >> 16, minor, options.isa_version >> 16,
                                    have));
    }
    void require(uint32_t node, Activation f) const { require(node, mnemonic(f), isa_minor_of(f)); }

    const Graph &graph;
    const CompileOptions &options;
};

} // namespace neuron::compiler::lower
