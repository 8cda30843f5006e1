// SPDX-License-Identifier: MIT
// softmax over the last axis, causal or not: per row tile, REDUCE max, exp
// with the negated max as ACTIVATE's bias, REDUCE sum, divide; the causal
// mask built per row tile (IOTA q - k, TENSOR_SCALAR is_ge 0, SELECT with
// -inf).
#include "../registry.hpp"

#include <cmath>

#include "../passes/emitter.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    Type out;
    c.arity(1, 1);
    c.floating();
    if (c.norm_axis(c.attrs.axis.value_or(-1), c.in[0]->shape.size()) !=
        static_cast<int64_t>(c.in[0]->shape.size()) - 1)
        throw c.fail("softmax runs over the last axis only");
    if (c.attrs.causal && c.in[0]->shape.size() < 2)
        throw c.fail("a causal softmax needs the [.., queries, keys] axes");
    c.node.axis = -1;
    c.node.causal = c.attrs.causal;
    out = *c.in[0];
    return out;
}

struct Buffers {
    const Buf *max, *exp, *sum;
    const Buf *diff = nullptr, *mask = nullptr; // causal
};

Buffers declare(StepBuffers &s, const Group &group) {
    const uint32_t i = group.start;
    const Node &n = s.graph.node(i);
    s.read(n.operands[0]);
    const auto C = static_cast<uint32_t>(n.type.shape.back());
    if (n.causal) {
        s.require(i, mnemonic_tensor_scalar(AluOp::is_ge), isa_minor_of(AluOp::is_ge));
        s.require(i, mnemonic_select(), isa_minor_of_select());
    }
    Buffers b{&s.temp(n.name + ".max", DType::fp32, P, 1),
              &s.temp(n.name + ".exp", DType::fp32, P, C),
              &s.temp(n.name + ".sum", DType::fp32, P, 1)};
    if (n.causal) {
        b.diff = &s.temp(n.name + ".q-k", DType::int32, P, C);
        b.mask = &s.temp(n.name + ".mask", DType::fp32, P, C);
    }
    return b;
}

void emit(Emitter &e, const Group &group) {
    const Buffers b = declare(e, group);
    Kernel &k = e.kernel();
    const uint32_t i = group.start;
    const Node &n = e.graph.node(i);
    const auto C = static_cast<uint32_t>(n.type.shape.back());
    const Buf &in = e.buf(n.operands[0]), &out = e.buf(i);
    const uint32_t Q = n.causal ? static_cast<uint32_t>(n.type.shape[n.type.shape.size() - 2]) : 1;
    for (uint32_t t = 0; t < out.tiles(); t++) {
        const uint32_t rt = e.tile_rows(out, t);
        Tap m = e.rows(*b.max, 0, rt, 0, 1), ex = e.rows(*b.exp, 0, rt, 0, C),
            s = e.rows(*b.sum, 0, rt, 0, 1);
        Tap x = e.tile(in, t);
        if (n.causal) {
            // q - k for every element: one IOTA per run of partitions whose
            // query index q = row % Q does not wrap, then the mask k <= q,
            // and the masked scores (-inf where k > q) in place of x.
            for (uint32_t p0 = 0; p0 < rt;) {
                const uint32_t q0 = (t * P + p0) % Q, len = std::min(rt - p0, Q - q0);
                k.iota(e.rows(*b.diff, p0, len, 0, C), static_cast<int32_t>(q0), 1, -1);
                p0 += len;
            }
            k.tensor_scalar(Engine::vector, e.rows(*b.mask, 0, rt, 0, C),
                            e.rows(*b.diff, 0, rt, 0, C), AluOp::is_ge, 0.0f);
            k.select(ex, e.rows(*b.mask, 0, rt, 0, C), x, -INFINITY);
            x = ex;
        }
        k.reduce(ReduceOp::max, m, x);
        k.tensor_scalar(Engine::vector, m, m, AluOp::mul, -1.0f);
        k.activate(Activation::exp, ex, x, 1.0f, m);
        k.reduce(ReduceOp::sum, s, ex);
        k.tensor_scalar(Engine::vector, e.tile(out, t), ex, AluOp::div, s);
    }
}

std::string mixes_rows(const Graph &, const Node &n, int64_t) {
    return n.causal ? "the causal mask depends on the row's place" : "";
}

} // namespace

extern const KindLowering softmax_lowering{[](StepBuffers &s, const Group &g) { declare(s, g); },
                                           emit};

extern const OpRecord softmax_record{Op::softmax,
                                     infer,
                                     [](const Graph &, const Node &) { return Kind::softmax; },
                                     Activation::identity,
                                     AluOp::none,
                                     nullptr,
                                     nullptr,
                                     mixes_rows};

} // namespace neuron::compiler::lower
