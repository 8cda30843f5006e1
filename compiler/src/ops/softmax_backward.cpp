// SPDX-License-Identifier: MIT
// The backward kernels of softmax and log_softmax over the last axis, as
// AOTAutograd emits them (_softmax_backward_data, _log_softmax_backward_data),
// from the gradient g of the result and the forward's result y:
//   softmax_backward(g, y)     = y * (g - sum(g * y, -1, keepdim))
//   log_softmax_backward(g, y) = g - exp(y) * sum(g, -1, keepdim)
// Both are decomposed into those operators (mul, sum of the last axis,
// sub and exp; the row sums are column operands, one per partition).
#include <neuron/compiler/reference.hpp>

#include "reduction.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    c.arity(2, 2);
    c.same_dtype();
    c.floating();
    if (c.in[0]->shape != c.in[1]->shape)
        throw c.fail("the gradient and the forward's result differ in shape");
    if (c.norm_axis(c.attrs.axis.value_or(-1), c.in[0]->shape.size()) !=
        static_cast<int64_t>(c.in[0]->shape.size()) - 1)
        throw c.fail("runs over the last axis only");
    c.node.axis = -1;
    return *c.in[0];
}

Kind decomposed_first(const Graph &g, const Node &n) {
    unsupported(g, n, "no lowering: it is compiled as its decomposition");
}

uint32_t row_sum(Graph &d, const std::string &name, uint32_t v) {
    Attrs last;
    last.dims = {-1};
    last.keepdim = true;
    return d.add(Op::sum, name, {v}, last);
}

uint32_t decompose(Graph &d, const Node &n, const std::vector<uint32_t> &ops) {
    const auto part = [&](const char *what) { return n.name + "." + what; };
    if (n.op == Op::softmax_backward) {
        const uint32_t gy = d.add(Op::mul, part("gy"), {ops[0], ops[1]});
        const uint32_t s = row_sum(d, part("sum"), gy);
        const uint32_t centred = d.add(Op::sub, part("centred"), {ops[0], s});
        return d.add(Op::mul, n.name, {ops[1], centred});
    }
    const uint32_t p = d.add(Op::exp, part("probs"), {ops[1]});
    const uint32_t s = row_sum(d, part("sum"), ops[0]);
    const uint32_t scaled = d.add(Op::mul, part("scaled"), {p, s});
    return d.add(Op::sub, n.name, {ops[0], scaled});
}

// The decomposition computed from the operands, the bound carried
// through it from operands without error.
Expected reference(const Graph &g, const Node &n, const Values &ops) {
    Graph one(g.name());
    const uint32_t grad = one.input("grad", g.node(n.operands[0]).type);
    const uint32_t y = one.input("y", g.node(n.operands[1]).type);
    one.mark_output(one.add(n.op, n.name, {grad, y}));
    const auto floats = [](const std::vector<double> &v) {
        return std::vector<float>(v.begin(), v.end());
    };
    std::vector<Expected> all =
        evaluate_bounded(one, {{"grad", floats(*ops[0])}, {"y", floats(*ops[1])}});
    return std::move(all.back());
}

std::string mixes_rows(const Graph &, const Node &, int64_t) {
    return "";
}

void split_rule(SplitRoles &s, uint32_t n) {
    const Node &node = s.graph.node(n);
    if (s.any_split(node) && node.type.shape.size() < 2)
        s.refuse(n, "it sums over the split axis");
    s.elementwise(n);
}

std::vector<std::string> text_attributes(const Node &) {
    return {"axis=-1"};
}

} // namespace

extern const OpRecord softmax_backward_record{
    .op = Op::softmax_backward,
    .name = "softmax_backward",
    .infer = infer,
    .kind = decomposed_first,
    .text_attributes = text_attributes,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .decompose = decompose,
    .split = split_rule,
};

extern const OpRecord log_softmax_backward_record{
    .op = Op::log_softmax_backward,
    .name = "log_softmax_backward",
    .infer = infer,
    .kind = decomposed_first,
    .text_attributes = text_attributes,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .decompose = decompose,
    .split = split_rule,
};

} // namespace neuron::compiler::lower
