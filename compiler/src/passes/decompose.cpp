// SPDX-License-Identifier: MIT
// Decomposition: every operator whose record has a decomposition is
// replaced by the operators it is made of, the other nodes kept with their
// names; what compile() lowers and evaluate_bounded() bounds.
#include <neuron/compiler/graph.hpp>

#include "../op_record.hpp"

namespace neuron::compiler {

Graph Graph::decomposed() const {
    Graph d(name_);
    std::vector<uint32_t> at(nodes_.size()); // this graph's node -> d's
    for (uint32_t i = 0; i < nodes_.size(); i++) {
        const Node &n = nodes_[i];
        std::vector<uint32_t> operands;
        for (uint32_t o : n.operands)
            operands.push_back(at[o]);
        if (!lower::decomposes(n)) {
            Node c = n;
            c.operands = std::move(operands);
            at[i] = d.push(std::move(c));
            continue;
        }
        try {
            at[i] = lower::op_record(n.op).decompose(d, n, operands);
        } catch (const GraphError &e) {
            throw GraphError(fmt::format("'{}' ({}): in its decomposition: {}", n.name,
                                         to_string(n.op), e.what()));
        }
    }
    for (uint32_t o : outputs_)
        d.outputs_.push_back(at[o]);
    return d;
}

} // namespace neuron::compiler
