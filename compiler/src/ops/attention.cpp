// SPDX-License-Identifier: MIT
// attention(q, k, v[, mask]): its type, and its decomposition, which is
// what is lowered (compile() decomposes first, so no group starts at it)
// and what its reference and bounds are computed through.
#include "../op_record.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    Type out;
    // softmax(q k^T * scale [+ mask], causal) v
    c.arity(3, 4);
    c.same_dtype();
    c.floating();
    const Shape &q = c.in[0]->shape, &k = c.in[1]->shape, &v = c.in[2]->shape;
    if (q.size() < 2 || k.size() < 2 || v.size() < 2)
        throw c.fail("q, k and v are [.., queries, d], [.., keys, d] and [.., keys, dv]");
    const Shape batch(q.begin(), q.end() - 2);
    for (const Shape *kv : {&k, &v})
        if (kv->size() > 2 && Shape(kv->begin(), kv->end() - 2) != batch)
            throw c.fail("k and v are 2-d or have q's batch dimensions");
    const int64_t Q = q[q.size() - 2], D = q.back(), K = k[k.size() - 2];
    if (k.back() != D)
        throw c.fail(fmt::format("q and k differ in their last axis ({} vs {})", D, k.back()));
    if (v[v.size() - 2] != K)
        throw c.fail(fmt::format("k has {} keys, v {}", K, v[v.size() - 2]));
    Shape scores = batch;
    scores.push_back(Q);
    scores.push_back(K);
    if (c.in.size() == 4) {
        const Shape &m = c.in[3]->shape;
        bool fits = m.size() <= scores.size();
        for (size_t i = 0; fits && i < m.size(); i++) {
            const int64_t dm = m[m.size() - 1 - i], ds = scores[scores.size() - 1 - i];
            fits = dm == ds || dm == 1;
        }
        if (!fits)
            throw c.fail(
                fmt::format("the mask does not broadcast to the scores {}", shape_text(scores)));
    }
    c.node.scale =
        c.attrs.scale.value_or(static_cast<float>(1 / std::sqrt(static_cast<double>(D))));
    if (!std::isfinite(c.node.scale))
        throw c.fail("the scale is not finite");
    c.node.causal = c.attrs.causal;
    out = Type{c.in[0]->dtype, batch};
    out.shape.push_back(Q);
    out.shape.push_back(v.back());
    return out;
}

Kind decomposed_first(const Graph &g, const Node &n) {
    unsupported(g, n, "no lowering: attention is compiled as its decomposition");
}

// o.scores = matmul(q, k, transpose_b=true), o.scaled = mul(o.scores,
// scale) (unless scale is 1), o.masked = add(o.scaled, mask),
// o.probs = softmax(..., causal), o = matmul(o.probs, v).
uint32_t decompose(Graph &d, const Node &n, const std::vector<uint32_t> &operands) {
    const auto part = [&](const char *what) { return n.name + "." + what; };
    Attrs tb;
    tb.transpose_b = true;
    uint32_t s = d.add(Op::matmul, part("scores"), {operands[0], operands[1]}, tb);
    if (n.scale != 1) {
        Attrs m;
        m.scalar = n.scale;
        s = d.add(Op::mul, part("scaled"), {s}, m);
    }
    if (operands.size() > 3)
        s = d.add(Op::add, part("masked"), {s, operands[3]});
    Attrs sm;
    sm.causal = n.causal;
    s = d.add(Op::softmax, part("probs"), {s}, sm);
    return d.add(Op::matmul, n.name, {s, operands[2]});
}

std::string mixes_rows(const Graph &, const Node &, int64_t) {
    return "it moves elements between rows";
}

// Split queries, against keys and values split alike or 2-d (shared).
void split_rule(SplitRoles &s, uint32_t n) {
    const Graph &g = s.graph;
    const Node &node = g.node(n);
    const uint32_t q = node.operands[0];
    const size_t rq = g.node(q).type.shape.size();
    if (!s.per_row(q)) {
        for (uint32_t o : node.operands)
            if (s.per_row(o))
                s.refuse(n, fmt::format("'{}' is split while the queries are not", g.node(o).name));
        return;
    }
    const int64_t per_row = s.per_row(q);
    for (size_t i = 1; i < node.operands.size(); i++) {
        const uint32_t o = node.operands[i];
        const size_t r = g.node(o).type.shape.size();
        if (i < 3 && rq == 2) // queries split: every part attends to all keys
            s.use_whole(n, o);
        else if (i < 3 && r == 2)
            s.use_whole(n, o); // keys shared by the batch
        else if (r == rq)
            s.align(n, o, per_row, g.node(q).type.shape[0]);
        else if (s.per_row(o))
            s.refuse(n, fmt::format("'{}' is split along an axis that broadcasting moves",
                                    g.node(o).name));
    }
    s.set_per_row(n, per_row);
}

std::vector<std::string> text_attributes(const Node &n) {
    return {fmt::format("scale={}", n.scale)};
}

} // namespace

extern const OpRecord attention_record{
    .op = Op::attention,
    .name = "attention",
    .infer = infer,
    .kind = decomposed_first,
    .text_attributes = text_attributes,
    .mixes_rows = mixes_rows,
    .decompose = decompose,
    .split = split_rule,
};

} // namespace neuron::compiler::lower
