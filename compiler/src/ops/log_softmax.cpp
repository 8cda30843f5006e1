// SPDX-License-Identifier: MIT
// log_softmax over the last axis, as torch computes it (a cross-entropy
// loss's forward): with m the row's maximum,
//   log_softmax(x) = (x - m) - ln(sum(exp(x - m), -1, keepdim))
// decomposed into those operators (amax and sum of the last axis with
// keepdim, their results column operands, one per partition; sub, exp and
// log). Subtracting the log of the sum, not taking the log of softmax's
// quotient, keeps the result finite where a probability underflows.
#include <neuron/compiler/reference.hpp>

#include "../op_record.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    c.arity(1, 1);
    c.floating();
    if (c.norm_axis(c.attrs.axis.value_or(-1), c.in[0]->shape.size()) !=
        static_cast<int64_t>(c.in[0]->shape.size()) - 1)
        throw c.fail("log_softmax runs over the last axis only");
    c.node.axis = -1;
    return *c.in[0];
}

Kind decomposed_first(const Graph &g, const Node &n) {
    unsupported(g, n, "no lowering: it is compiled as its decomposition");
}

uint32_t decompose(Graph &d, const Node &n, const std::vector<uint32_t> &ops) {
    const auto part = [&](const char *what) { return n.name + "." + what; };
    Attrs last;
    last.dims = {-1};
    last.keepdim = true;
    const uint32_t m = d.add(Op::amax, part("max"), {ops[0]}, last);
    const uint32_t shifted = d.add(Op::sub, part("shifted"), {ops[0], m});
    const uint32_t e = d.add(Op::exp, part("exp"), {shifted});
    const uint32_t s = d.add(Op::sum, part("sum"), {e}, last);
    const uint32_t ls = d.add(Op::log, part("log_sum"), {s});
    return d.add(Op::sub, n.name, {shifted, ls});
}

// The decomposition computed from the operand, the bound carried through
// it from an operand without error.
Expected reference(const Graph &g, const Node &n, const Values &ops) {
    Graph one(g.name());
    const uint32_t x = one.input("x", g.node(n.operands[0]).type);
    one.mark_output(one.add(n.op, n.name, {x}));
    std::vector<Expected> all =
        evaluate_bounded(one, {{"x", std::vector<float>(ops[0]->begin(), ops[0]->end())}});
    return std::move(all.back());
}

std::string mixes_rows(const Graph &, const Node &, int64_t) {
    return "";
}

void split_rule(SplitRoles &s, uint32_t n) {
    s.normalises_last_axis(n);
}

std::vector<std::string> text_attributes(const Node &) {
    return {"axis=-1"};
}

} // namespace

extern const OpRecord log_softmax_record{
    .op = Op::log_softmax,
    .name = "log_softmax",
    .infer = infer,
    .kind = decomposed_first,
    .text_attributes = text_attributes,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .decompose = decompose,
    .split = split_rule,
};

} // namespace neuron::compiler::lower
