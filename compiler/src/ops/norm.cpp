// SPDX-License-Identifier: MIT
// layer_norm and rms_norm over the last axis, per row tile on the Vector
// and Scalar engines with fp32 temporaries: (mean, centre,) sum of squares,
// 1/sqrt(sum / C + eps) in one ACTIVATE rsqrt (ISA 1.1), scale, affine.
// The weight and bias are rows spread down the partitions.
#include "../op_record.hpp"

#include <algorithm>
#include <cmath>

#include "../passes/emitter.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    Type out;
    c.arity(1, c.node.op == Op::layer_norm ? 3 : 2);
    c.same_dtype();
    c.floating();
    if (c.node.op == Op::layer_norm && c.in.size() == 2)
        throw c.fail("takes the input alone or with both weight and bias");
    const Shape &x = c.in[0]->shape;
    if (x.empty())
        throw c.fail("needs rank >= 1");
    for (size_t i = 1; i < c.in.size(); i++)
        if (c.in[i]->shape != Shape{x.back()})
            throw c.fail(fmt::format("weight and bias have shape [{}]", x.back()));
    c.node.eps = c.attrs.eps.value_or(c.node.op == Op::layer_norm ? 1e-5f : 1e-6f);
    if (!(c.node.eps >= 0))
        throw c.fail("eps must be >= 0");
    out = *c.in[0];
    return out;
}

struct Buffers {
    const Buf *gamma = nullptr, *beta = nullptr;
    const Buf *stat, *var, *rstd, *centred, *squares;
};

Buffers declare(StepBuffers &s, const Group &group) {
    const uint32_t i = group.start;
    const Node &n = s.graph.node(i);
    const auto C = static_cast<uint32_t>(n.type.shape.back());
    s.read(n.operands[0]);
    Buffers b{};
    if (n.operands.size() > 1)
        b.gamma = &s.replicated(n.operands[1]);
    if (n.operands.size() > 2)
        b.beta = &s.replicated(n.operands[2]);
    s.require(i, Activation::rsqrt);
    b.stat = &s.temp(n.name + ".stat", DType::fp32, P, 1);
    b.var = &s.temp(n.name + ".var", DType::fp32, P, 1);
    b.rstd = &s.temp(n.name + ".rstd", DType::fp32, P, 1);
    b.centred = &s.temp(n.name + ".centred", DType::fp32, P, C);
    b.squares = &s.temp(n.name + ".squares", DType::fp32, P, C);
    return b;
}

void emit(Emitter &e, const Group &group) {
    const Buffers b = declare(e, group);
    Kernel &k = e.kernel();
    const uint32_t i = group.start;
    const Node &n = e.graph.node(i);
    const bool ln = n.op == Op::layer_norm;
    const auto C = static_cast<uint32_t>(n.type.shape.back());
    const Buf &in = e.buf(n.operands[0]), &out = e.buf(i);
    const float inv_c = 1.0f / static_cast<float>(C);
    for (uint32_t t = 0; t < out.tiles(); t++) {
        const uint32_t rt = e.tile_rows(out, t);
        auto col = [&](const Buf *x) { return e.rows(*x, 0, rt, 0, 1); };
        auto full = [&](const Buf *x) { return e.rows(*x, 0, rt, 0, C); };
        Tap x = e.tile(in, t), y = e.tile(out, t);
        Tap centred = x;
        if (ln) {
            k.reduce(ReduceOp::sum, col(b.stat), x);
            k.tensor_scalar(Engine::vector, col(b.stat), col(b.stat), AluOp::mul, inv_c);
            k.tensor_scalar(Engine::vector, full(b.centred), x, AluOp::sub, col(b.stat));
            centred = full(b.centred);
        }
        k.tensor_tensor(AluOp::mul, full(b.squares), centred, centred);
        k.reduce(ReduceOp::sum, col(b.var), full(b.squares));
        // 1/sqrt(sum/C + eps) in one ACTIVATE
        k.activate(Activation::rsqrt, col(b.rstd), col(b.var), inv_c, n.eps);
        if (!b.gamma && !b.beta) {
            k.tensor_scalar(Engine::scalar, y, centred, AluOp::mul, col(b.rstd));
            continue;
        }
        k.tensor_scalar(Engine::scalar, full(b.squares), centred, AluOp::mul, col(b.rstd));
        if (b.beta) {
            k.tensor_tensor(AluOp::mul, full(b.squares), full(b.squares),
                            e.rows(*b.gamma, 0, rt, 0, C));
            k.tensor_tensor(AluOp::add, y, full(b.squares), e.rows(*b.beta, 0, rt, 0, C));
        } else {
            k.tensor_tensor(AluOp::mul, y, full(b.squares), e.rows(*b.gamma, 0, rt, 0, C));
        }
    }
}

Kind norm_kind(const Graph &, const Node &) {
    return Kind::norm;
}

Expected reference(const Graph &, const Node &n, const Values &ops) {
    const int64_t C = n.type.shape.back(), R = n.type.elements() / C;
    const bool ln = n.op == Op::layer_norm;
    Expected e;
    e.value.resize(static_cast<size_t>(n.type.elements()));
    e.bound.resize(e.value.size());
    for (int64_t r = 0; r < R; r++) {
        const double *x = &(*ops[0])[static_cast<size_t>(r * C)];
        double mean = 0, var = 0, mabs = 0;
        for (int64_t c = 0; c < C; c++) {
            mean += x[c];
            mabs += std::fabs(x[c]);
        }
        mean = ln ? mean / static_cast<double>(C) : 0;
        mabs /= static_cast<double>(C);
        for (int64_t c = 0; c < C; c++)
            var += (x[c] - mean) * (x[c] - mean);
        var /= static_cast<double>(C);
        const double rs = 1 / std::sqrt(var + n.eps);
        for (int64_t c = 0; c < C; c++) {
            size_t f = static_cast<size_t>(r * C + c);
            double gam = n.operands.size() > 1 ? (*ops[1])[static_cast<size_t>(c)] : 1;
            double bet = n.operands.size() > 2 ? (*ops[2])[static_cast<size_t>(c)] : 0;
            double y = (x[c] - mean) * rs;
            e.value[f] = y * gam + bet;
            // the mean's and the variance's sums (1e-5 of the sum of
            // magnitudes each) shift and scale every element; then
            // the roundings of a few fp32 operations
            e.bound[f] = 2e-5 * std::fabs(e.value[f]) +
                         (ln ? 3e-5 * mabs * rs * (std::fabs(gam) + std::fabs(y * gam)) : 0) + 1e-6;
        }
    }
    return e;
}

// The mean and the variance move with the row's errors.
std::vector<double> carry(const Graph &, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    std::vector<double> c(value.size(), 0);
    if (std::all_of(err.begin(), err.end(), [](const auto *e) { return all_zero(*e); }))
        return c;
    const int64_t C = n.type.shape.back(), R = n.type.elements() / C;
    const bool ln = n.op == Op::layer_norm;
    for (int64_t r = 0; r < R; r++) {
        const double *x = &(*val[0])[static_cast<size_t>(r * C)];
        const double *ex = &(*err[0])[static_cast<size_t>(r * C)];
        double mean = 0, E = 0;
        for (int64_t k = 0; k < C; k++) {
            mean += x[k];
            E = std::max(E, ex[k]);
        }
        mean = ln ? mean / static_cast<double>(C) : 0;
        double var = 0, dev = 0;
        for (int64_t k = 0; k < C; k++) {
            var += (x[k] - mean) * (x[k] - mean);
            dev += std::fabs(x[k] - mean);
        }
        var /= static_cast<double>(C);
        dev /= static_cast<double>(C);
        // x - mean moves by D, the variance by 2 dev D + D^2, and
        // r = 1/sqrt(var + eps) by dr (the larger side: var down)
        const double D = ln ? 2 * E : E, rs = 1 / std::sqrt(var + n.eps);
        const double dvar = 2 * dev * D + D * D, low = var + n.eps - dvar;
        const double dr = low > 0 ? 1 / std::sqrt(low) - rs : INFINITY;
        for (int64_t k = 0; k < C; k++) {
            auto f = static_cast<size_t>(r * C + k);
            if (!(low > 0)) { // the errors may reach the spread of the row
                c[f] = INFINITY;
                continue;
            }
            const double y = (x[k] - mean) * rs;
            const double dy = D * (rs + dr) + std::fabs(x[k] - mean) * dr;
            const auto ck = static_cast<size_t>(k);
            const double w = n.operands.size() > 1 ? (*val[1])[ck] : 1;
            const double ew = n.operands.size() > 1 ? (*err[1])[ck] : 0;
            const double eb = n.operands.size() > 2 ? (*err[2])[ck] : 0;
            c[f] = dy * std::fabs(w) + (std::fabs(y) + dy) * ew + eb;
        }
    }
    return c;
}

// The weight and bias [C] are row operands.
bool weight_operand(const Graph &, const Node &, size_t k) {
    return k >= 1;
}

void split_rule(SplitRoles &s, uint32_t n) {
    s.normalises_last_axis(n);
}

std::vector<std::string> text_attributes(const Node &n) {
    return {fmt::format("eps={}", n.eps)};
}

} // namespace

extern const KindLowering norm_lowering{[](StepBuffers &s, const Group &g) { declare(s, g); },
                                        emit};

extern const OpRecord layer_norm_record{
    .op = Op::layer_norm,
    .name = "layer_norm",
    .infer = infer,
    .kind = norm_kind,
    .text_attributes = text_attributes,
    .whole_operand = weight_operand,
    .reference = reference,
    .carry = carry,
    .split = split_rule,
};
extern const OpRecord rms_norm_record{
    .op = Op::rms_norm,
    .name = "rms_norm",
    .infer = infer,
    .kind = norm_kind,
    .text_attributes = text_attributes,
    .whole_operand = weight_operand,
    .reference = reference,
    .carry = carry,
    .split = split_rule,
};

} // namespace neuron::compiler::lower
