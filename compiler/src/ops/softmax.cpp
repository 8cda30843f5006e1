// SPDX-License-Identifier: MIT
// softmax over the last axis, causal or not: per row tile, REDUCE max, exp
// with the negated max as ACTIVATE's bias, REDUCE sum, divide; the causal
// mask (IOTA q - k, TENSOR_SCALAR is_ge 0) built once when every row tile
// has the same, else per row tile, and applied by SELECT with -inf.
#include "../op_record.hpp"

#include <algorithm>
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
    // q - k for every element of a tile: one IOTA per run of partitions
    // whose query index q = row % Q does not wrap, then the mask k <= q.
    // When Q divides the partitions, every tile starts at q = 0 and has
    // the same mask: it is made once, for the first (largest) tile.
    const bool one_mask = n.causal && P % Q == 0;
    const auto make_mask = [&](uint32_t t, uint32_t rt) {
        for (uint32_t p0 = 0; p0 < rt;) {
            const uint32_t q0 = (t * P + p0) % Q, len = std::min(rt - p0, Q - q0);
            k.iota(e.rows(*b.diff, p0, len, 0, C), static_cast<int32_t>(q0), 1, -1);
            p0 += len;
        }
        k.tensor_scalar(Engine::vector, e.rows(*b.mask, 0, rt, 0, C), e.rows(*b.diff, 0, rt, 0, C),
                        AluOp::is_ge, 0.0f);
    };
    if (one_mask)
        make_mask(0, e.tile_rows(out, 0));
    for (uint32_t t = 0; t < out.tiles(); t++) {
        const uint32_t rt = e.tile_rows(out, t);
        Tap m = e.rows(*b.max, 0, rt, 0, 1), ex = e.rows(*b.exp, 0, rt, 0, C),
            s = e.rows(*b.sum, 0, rt, 0, 1);
        Tap x = e.tile(in, t);
        if (n.causal) {
            // the masked scores (-inf where k > q) in place of x
            if (!one_mask)
                make_mask(t, rt);
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

// The columns of row @p r of @p n that take part: causal, k <= q of row q
// (q = r % Q); the others are 0.
int64_t kept_columns(const Node &n, int64_t r) {
    const int64_t C = n.type.shape.back();
    return n.causal ? std::min(C, r % n.type.shape[n.type.shape.size() - 2] + 1) : C;
}

Expected reference(const Graph &, const Node &n, const Values &ops) {
    const int64_t C = n.type.shape.back(), R = n.type.elements() / C;
    Expected e;
    e.value.resize(static_cast<size_t>(n.type.elements()));
    e.bound.resize(e.value.size());
    for (int64_t r = 0; r < R; r++) {
        const double *x = &(*ops[0])[static_cast<size_t>(r * C)];
        const int64_t kept = kept_columns(n, r);
        double mx = *std::max_element(x, x + kept), s = 0;
        for (int64_t c = 0; c < kept; c++)
            s += std::exp(x[c] - mx);
        for (int64_t c = 0; c < C; c++) {
            const auto f = static_cast<size_t>(r * C + c);
            e.value[f] = c < kept ? std::exp(x[c] - mx) / s : 0.0;
            // exp (1e-5 rel + 1e-6), the sum of them (1e-5 rel),
            // the division: relative bounds add up
            e.bound[f] = (3.1e-5 + static_cast<double>(kept) * 1e-6 / s) * e.value[f] + 1e-6;
        }
    }
    return e;
}

// Logit x_j moved by at most e_j moves p_i = e^x_i / sum_j e^x_j by a
// factor within [e^-e_i S / S+, e^e_i S / S-], S = sum_j e^x_j, S+- =
// sum_j e^(x_j +- e_j): a logit far below the row's largest (a masked
// one) moves nothing, whatever its error.
std::vector<double> carry(const Graph &, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    const int64_t C = n.type.shape.back(), R = n.type.elements() / C;
    std::vector<double> c(value.size(), 0);
    for (int64_t r = 0; r < R; r++) {
        const int64_t kept = kept_columns(n, r);
        const double *x = &(*val[0])[static_cast<size_t>(r * C)];
        const double *e = &(*err[0])[static_cast<size_t>(r * C)];
        const double mx = *std::max_element(x, x + kept);
        double sum = 0, up = 0, down = 0;
        for (int64_t k = 0; k < kept; k++) {
            sum += std::exp(x[k] - mx);
            up += std::exp(x[k] + e[k] - mx);
            down += std::exp(x[k] - e[k] - mx);
        }
        for (int64_t k = 0; k < kept; k++) {
            const auto f = static_cast<size_t>(r * C + k);
            const double hi = std::exp(e[k]) * sum / down - 1;
            const double lo = 1 - std::exp(-e[k]) * sum / up;
            c[f] = std::fabs(value[f]) * std::max(hi, lo);
        }
    }
    return c;
}

std::string mixes_rows(const Graph &, const Node &n, int64_t) {
    return n.causal ? "the causal mask depends on the row's place" : "";
}

void split_rule(SplitRoles &s, uint32_t n) {
    s.normalises_last_axis(n);
}

std::vector<std::string> text_attributes(const Node &) {
    return {"axis=-1"};
}

} // namespace

extern const KindLowering softmax_lowering{[](StepBuffers &s, const Group &g) { declare(s, g); },
                                           emit};

extern const OpRecord softmax_record{
    .op = Op::softmax,
    .name = "softmax",
    .infer = infer,
    .kind = [](const Graph &, const Node &) { return Kind::softmax; },
    .text_attributes = text_attributes,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .carry = carry,
    .split = split_rule,
};

} // namespace neuron::compiler::lower
