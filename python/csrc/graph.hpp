// SPDX-License-Identifier: MIT
// torch.classes.neuron.Graph: the compiler's IR graph (neuron::compiler::
// Graph) built node by node from Python, the object the FX lowering
// (torch_neuronx/lowering) writes and torch.ops.neuron.compile_graph
// compiles. Every node's type is inferred and checked by the compiler as
// it is added: an error names the node, its operands and why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Dict.h>
#include <torch/custom_class.h>

#include <neuron/compiler/graph.hpp>

namespace neuron::torch_bridge {

class Graph : public torch::CustomClassHolder {
  public:
    explicit Graph(std::string name) : graph_(std::move(name)) {}

    /// An input of @p dtype ("fp32", "bf16", "fp16", "int32") and @p shape.
    int64_t input(const std::string &name, const std::string &dtype,
                  const std::vector<int64_t> &shape);
    /// Operator @p op ("matmul", "softmax", ...; docs/compiler.md) of the
    /// nodes @p operands. Attributes: @p flags names the true booleans
    /// (scalar_first, transpose_a, transpose_b, causal), @p ints the
    /// integer ones (dims: a list; axis, start, end: one value), @p floats
    /// the real ones (scalar, eps, scale). An unknown name is an error.
    int64_t add(const std::string &op, const std::string &name,
                const std::vector<int64_t> &operands, const std::vector<std::string> &flags,
                const c10::Dict<std::string, std::vector<int64_t>> &ints,
                const c10::Dict<std::string, double> &floats);
    /// @p operand cut along @p axis into pieces of @p sizes, named @p names.
    std::vector<int64_t> split(const std::vector<std::string> &names, int64_t operand,
                               int64_t axis, const std::vector<int64_t> &sizes);
    void output(int64_t node);

    /// The inferred type of @p node: its dtype's name and its shape.
    std::string dtype(int64_t node) const;
    std::vector<int64_t> shape(int64_t node) const;
    /// The graph in the compiler's text form (docs/compiler.md).
    std::string text() const;

    const compiler::Graph &graph() const { return graph_; }

  private:
    uint32_t node_index(int64_t node) const;
    compiler::Graph graph_;
};

} // namespace neuron::torch_bridge
