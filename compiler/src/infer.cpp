// SPDX-License-Identifier: MIT
// Graph::add(): an operator node, its type inferred by its operator's
// record (OpRecord::infer).
#include <neuron/compiler/graph.hpp>

#include "op_record.hpp"

namespace neuron::compiler {

uint32_t Graph::add(Op op, const std::string &name, std::vector<uint32_t> operands,
                    const Attrs &a) {
    Node n;
    n.op = op;
    n.name = name;
    n.operands = operands;
    n.scalar = a.scalar;
    n.scalar_first = a.scalar_first;
    n.transpose_a = a.transpose_a;
    n.transpose_b = a.transpose_b;
    n.dims = a.dims;
    n.axis = a.axis.value_or(0);
    n.start = a.start;
    n.end = a.end;
    lower::InferContext ctx{n, a, {}, {}};
    for (uint32_t o : operands) {
        if (o >= nodes_.size())
            throw GraphError(fmt::format("'{}': operand {} is not defined before it", name, o));
        ctx.in.push_back(&nodes_[o].type);
        ctx.names.push_back(nodes_[o].name);
    }
    if (a.eps && op != Op::layer_norm && op != Op::rms_norm)
        throw ctx.fail("eps is an attribute of layer_norm and rms_norm only");
    if (a.scale && op != Op::attention)
        throw ctx.fail("scale is an attribute of attention only");
    if (a.p && op != Op::dropout && op != Op::dropout_mask)
        throw ctx.fail("p is an attribute of dropout and dropout_mask only");
    n.type = lower::op_record(op).infer(ctx);
    return push(std::move(n));
}

} // namespace neuron::compiler
