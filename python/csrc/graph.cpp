// SPDX-License-Identifier: MIT
#include "graph.hpp"

#include <c10/util/Exception.h>

#include <neuron/compiler/text.hpp>

namespace neuron::torch_bridge {

namespace nc = neuron::compiler;

namespace {

// Runs @p build, turning the compiler's GraphError into torch's error type
// (a RuntimeError in Python) with the compiler's message.
template <typename F> auto checked(F &&build) {
    try {
        return build();
    } catch (const nc::GraphError &e) {
        TORCH_CHECK(false, "neuron compiler: ", e.what());
    }
}

int64_t single(const std::string &attr, const std::vector<int64_t> &v) {
    TORCH_CHECK(v.size() == 1, "neuron graph: attribute '", attr, "' takes one value, not ",
                v.size());
    return v[0];
}

} // namespace

uint32_t Graph::node_index(int64_t node) const {
    TORCH_CHECK(node >= 0 && static_cast<size_t>(node) < graph_.nodes().size(),
                "neuron graph: no node ", node, " (the graph has ", graph_.nodes().size(), ")");
    return static_cast<uint32_t>(node);
}

int64_t Graph::input(const std::string &name, const std::string &dtype,
                     const std::vector<int64_t> &shape) {
    auto t = nc::dtype_from_string(dtype);
    TORCH_CHECK(t, "neuron graph: input '", name, "': unknown dtype '", dtype, "'");
    return checked([&] { return graph_.input(name, nc::Type{*t, shape}); });
}

int64_t Graph::add(const std::string &op, const std::string &name,
                   const std::vector<int64_t> &operands, const std::vector<std::string> &flags,
                   const c10::Dict<std::string, std::vector<int64_t>> &ints,
                   const c10::Dict<std::string, double> &floats) {
    auto kind = nc::op_from_string(op);
    TORCH_CHECK(kind && *kind != nc::Op::input && *kind != nc::Op::constant,
                "neuron graph: '", op, "' is not an operator of the IR (docs/compiler.md)");
    nc::Attrs attrs;
    for (const auto &f : flags) {
        if (f == "scalar_first")
            attrs.scalar_first = true;
        else if (f == "transpose_a")
            attrs.transpose_a = true;
        else if (f == "transpose_b")
            attrs.transpose_b = true;
        else if (f == "causal")
            attrs.causal = true;
        else if (f.rfind("dtype=", 0) == 0 && nc::dtype_from_string(f.substr(6)))
            attrs.dtype = nc::dtype_from_string(f.substr(6));
        else if (f == "keepdim")
            attrs.keepdim = true;
        else
            TORCH_CHECK(false, "neuron graph: ", op, " '", name, "': unknown flag '", f, "'");
    }
    for (const auto &kv : ints) {
        const std::string &k = kv.key();
        if (k == "dims")
            attrs.dims = kv.value();
        else if (k == "axis")
            attrs.axis = single(k, kv.value());
        else if (k == "start")
            attrs.start = single(k, kv.value());
        else if (k == "end")
            attrs.end = single(k, kv.value());
        else
            TORCH_CHECK(false, "neuron graph: ", op, " '", name, "': unknown attribute '", k, "'");
    }
    for (const auto &kv : floats) {
        const std::string &k = kv.key();
        auto v = static_cast<float>(kv.value());
        if (k == "scalar")
            attrs.scalar = v;
        else if (k == "eps")
            attrs.eps = v;
        else if (k == "scale")
            attrs.scale = v;
        else if (k == "p")
            attrs.p = v;
        else
            TORCH_CHECK(false, "neuron graph: ", op, " '", name, "': unknown attribute '", k, "'");
    }
    std::vector<uint32_t> nodes;
    nodes.reserve(operands.size());
    for (int64_t o : operands)
        nodes.push_back(node_index(o));
    return checked([&] { return graph_.add(*kind, name, std::move(nodes), attrs); });
}

std::vector<int64_t> Graph::split(const std::vector<std::string> &names, int64_t operand,
                                  int64_t axis, const std::vector<int64_t> &sizes) {
    nc::Attrs attrs;
    attrs.axis = axis;
    attrs.dims = sizes;
    auto pieces = checked([&] { return graph_.split(names, node_index(operand), attrs); });
    return {pieces.begin(), pieces.end()};
}

void Graph::output(int64_t node) {
    checked([&] {
        graph_.mark_output(node_index(node));
        return 0;
    });
}

std::string Graph::dtype(int64_t node) const {
    return to_string(graph_.node(node_index(node)).type.dtype);
}

std::vector<int64_t> Graph::shape(int64_t node) const {
    return graph_.node(node_index(node)).type.shape;
}

std::string Graph::text() const { return nc::print(graph_); }

} // namespace neuron::torch_bridge
