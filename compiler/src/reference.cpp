// SPDX-License-Identifier: MIT
#include <neuron/compiler/reference.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "index.hpp"

namespace neuron::compiler {

namespace {

// Index into a broadcast operand of shape @p s for the output index @p idx.
int64_t broadcast_index(const Shape &idx, const Shape &s) {
    int64_t f = 0;
    size_t off = idx.size() - s.size();
    for (size_t d = 0; d < s.size(); d++)
        f = f * s[d] + (s[d] == 1 ? 0 : idx[d + off]);
    return f;
}

double act(Op op, double z) {
    switch (op) {
    case Op::relu:
        return z > 0 ? z : 0;
    case Op::gelu:
        return 0.5 * z * (1 + std::erf(z / std::sqrt(2.0)));
    case Op::gelu_tanh:
        return 0.5 * z * (1 + std::tanh(std::sqrt(2 / M_PI) * (z + 0.044715 * z * z * z)));
    case Op::silu:
        return z / (1 + std::exp(-z));
    case Op::sigmoid:
        return 1 / (1 + std::exp(-z));
    case Op::tanh:
        return std::tanh(z);
    default:
        return std::exp(z);
    }
}

} // namespace

namespace {
Expected attention_reference(const Graph &g, uint32_t node,
                             const std::vector<const std::vector<double> *> &operands);
bool has_attention(const Graph &g) {
    return std::any_of(g.nodes().begin(), g.nodes().end(),
                       [](const Node &n) { return n.op == Op::attention; });
}
} // namespace

double exact_result(DType t, double v) {
    return round_to(t, static_cast<float>(v));
}

Expected reference(const Graph &g, uint32_t node,
                   const std::vector<const std::vector<double> *> &ops) {
    const Node &n = g.node(node);
    const Shape &os = n.type.shape;
    const size_t total = static_cast<size_t>(n.type.elements());
    Expected e;
    e.value.assign(total, 0);
    std::vector<double> mag; // scale of the error for inexact operators
    auto in = [&](size_t k) -> const std::vector<double> & { return *ops.at(k); };
    auto shape = [&](size_t k) -> const Shape & { return g.node(n.operands[k]).type.shape; };
    const int64_t C = os.back(), R = static_cast<int64_t>(total) / C;
    bool exact = false;
    switch (n.op) {
    case Op::input:
    case Op::constant:
        throw GraphError(fmt::format("'{}' is not computed", n.name));
    case Op::attention:
        return attention_reference(g, node, ops);
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div: {
        exact = true;
        for (size_t f = 0; f < total; f++) {
            Shape idx = unravel(static_cast<int64_t>(f), os);
            double a, b;
            if (n.scalar) {
                double x = in(0)[f], s = *n.scalar;
                a = n.scalar_first ? s : x;
                b = n.scalar_first ? x : s;
            } else {
                a = in(0)[static_cast<size_t>(broadcast_index(idx, shape(0)))];
                b = in(1)[static_cast<size_t>(broadcast_index(idx, shape(1)))];
            }
            // in fp32, as the device: operands are fp32 (or exact in it)
            float fa = static_cast<float>(a), fb = static_cast<float>(b);
            double r = n.op == Op::add   ? double{fa} + fb
                       : n.op == Op::sub ? double{fa} - fb
                       : n.op == Op::mul ? double{fa} * fb
                                         : double{fa} / fb;
            e.value[f] = r;
        }
        break;
    }
    case Op::relu:
    case Op::gelu:
    case Op::gelu_tanh:
    case Op::silu:
    case Op::sigmoid:
    case Op::tanh:
    case Op::exp:
        mag.resize(total);
        for (size_t f = 0; f < total; f++) {
            e.value[f] = act(n.op, in(0)[f]);
            mag[f] = 1e-5 * std::fabs(e.value[f]) + 1e-6;
        }
        break;
    case Op::matmul: {
        const Shape &as = shape(0), &bs = shape(1);
        const int64_t M = os[os.size() - 2], N = C;
        const int64_t K = n.transpose_a ? as[as.size() - 2] : as.back();
        const int64_t batches = static_cast<int64_t>(total) / (M * N);
        const bool bb = bs.size() > 2;
        mag.resize(total);
        for (int64_t t = 0; t < batches; t++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0, sa = 0;
                    for (int64_t k = 0; k < K; k++) {
                        double a = in(0)[static_cast<size_t>(
                            t * M * K + (n.transpose_a ? k * M + m : m * K + k))];
                        double b = in(1)[static_cast<size_t>(
                            (bb ? t * K * N : 0) + (n.transpose_b ? j * K + k : k * N + j))];
                        s += a * b;
                        sa += std::fabs(a * b);
                    }
                    size_t f = static_cast<size_t>((t * M + m) * N + j);
                    e.value[f] = s;
                    mag[f] = 1e-5 * sa + 1e-6;
                }
        break;
    }
    case Op::softmax: {
        mag.resize(total);
        const int64_t Q = n.causal ? n.type.shape[n.type.shape.size() - 2] : 1;
        for (int64_t r = 0; r < R; r++) {
            const double *x = &in(0)[static_cast<size_t>(r * C)];
            // causal: columns k <= q of row q take part, the others are 0
            const int64_t kept = n.causal ? std::min(C, r % Q + 1) : C;
            double mx = *std::max_element(x, x + kept), s = 0;
            for (int64_t c = 0; c < kept; c++)
                s += std::exp(x[c] - mx);
            for (int64_t c = 0; c < C; c++) {
                size_t f = static_cast<size_t>(r * C + c);
                e.value[f] = c < kept ? std::exp(x[c] - mx) / s : 0.0;
                // exp (1e-5 rel + 1e-6), the sum of them (1e-5 rel),
                // the division: relative bounds add up
                mag[f] = (3.1e-5 + static_cast<double>(kept) * 1e-6 / s) * e.value[f] + 1e-6;
            }
        }
        break;
    }
    case Op::layer_norm:
    case Op::rms_norm: {
        const bool ln = n.op == Op::layer_norm;
        mag.resize(total);
        for (int64_t r = 0; r < R; r++) {
            const double *x = &in(0)[static_cast<size_t>(r * C)];
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
                double gam = n.operands.size() > 1 ? in(1)[static_cast<size_t>(c)] : 1;
                double bet = n.operands.size() > 2 ? in(2)[static_cast<size_t>(c)] : 0;
                double y = (x[c] - mean) * rs;
                e.value[f] = y * gam + bet;
                // the mean's and the variance's sums (1e-5 of the sum of
                // magnitudes each) shift and scale every element; then
                // the roundings of a few fp32 operations
                mag[f] = 2e-5 * std::fabs(e.value[f]) +
                         (ln ? 3e-5 * mabs * rs * (std::fabs(gam) + std::fabs(y * gam)) : 0) + 1e-6;
            }
        }
        break;
    }
    case Op::reshape:
        exact = true;
        e.value = in(0);
        break;
    case Op::transpose:
    case Op::slice:
    case Op::split:
    case Op::concat: {
        exact = true;
        // operand k's element at the multi-index idx
        auto at = [&](size_t k, const Shape &idx) {
            int64_t src = 0;
            for (size_t d = 0; d < idx.size(); d++)
                src = src * shape(k)[d] + idx[d];
            return in(k)[static_cast<size_t>(src)];
        };
        const size_t ax = static_cast<size_t>(n.axis);
        for (size_t f = 0; f < total; f++) {
            Shape idx = unravel(static_cast<int64_t>(f), os);
            if (n.op == Op::transpose) {
                Shape src(idx.size());
                for (size_t d = 0; d < idx.size(); d++)
                    src[static_cast<size_t>(n.dims[d])] = idx[d];
                e.value[f] = at(0, src);
            } else if (n.op == Op::slice || n.op == Op::split) {
                idx[ax] += n.start;
                e.value[f] = at(0, idx);
            } else {
                for (size_t k = 0; k < n.operands.size(); k++) {
                    if (idx[ax] < shape(k)[ax]) {
                        e.value[f] = at(k, idx);
                        break;
                    }
                    idx[ax] -= shape(k)[ax];
                }
            }
        }
        break;
    }
    }
    if (exact)
        return e;
    // Results written as bf16 or fp16 add the rounding of hw/isa.md §6.
    e.bound = std::move(mag);
    if (n.type.dtype == DType::bf16 || n.type.dtype == DType::fp16) {
        const double rtol = n.type.dtype == DType::bf16 ? 1e-2 : 2e-3;
        for (size_t f = 0; f < total; f++)
            e.bound[f] += rtol * std::fabs(e.value[f]) + 1e-3;
    }
    return e;
}

std::vector<std::vector<double>> evaluate(const Graph &g,
                                          const std::map<std::string, std::vector<float>> &inputs) {
    std::vector<std::vector<double>> v(g.nodes().size());
    if (has_attention(g)) { // as the operators it is made of
        const Graph d = g.decomposed();
        std::vector<std::vector<double>> all = evaluate(d, inputs);
        for (uint32_t i = 0; i < g.nodes().size(); i++)
            v[i] = std::move(all[*d.find(g.node(i).name)]);
        return v;
    }
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const Node &n = g.node(i);
        if (n.op == Op::input) {
            auto it = inputs.find(n.name);
            if (it == inputs.end() || static_cast<int64_t>(it->second.size()) != n.type.elements())
                throw GraphError(fmt::format("input '{}' ({}) not given or of the wrong size",
                                             n.name, to_string(n.type)));
            for (float x : it->second)
                v[i].push_back(round_to(n.type.dtype, x));
        } else if (n.op == Op::constant) {
            for (float x : constant_values(n))
                v[i].push_back(x);
        } else {
            std::vector<const std::vector<double> *> ops;
            for (uint32_t o : n.operands)
                ops.push_back(&v[o]);
            v[i] = reference(g, i, ops).value;
        }
    }
    return v;
}

namespace {

// The unit roundoff of a value stored as @p t (half an ulp, relative).
double unit_roundoff(DType t) {
    switch (t) {
    case DType::bf16:
        return 0x1p-8;
    case DType::fp16:
        return 0x1p-11;
    default:
        return 0x1p-24;
    }
}

// The steepest |f'| of an activation other than exp, over all inputs.
double max_slope(Op op) {
    switch (op) {
    case Op::gelu:
    case Op::gelu_tanh:
        return 1.13; // 1.1289 at z = 1.4 (erf) and 1.5 (tanh)
    case Op::silu:
        return 1.1; // 1.0998 at z = 2.4
    case Op::sigmoid:
        return 0.25;
    default:
        return 1; // relu, tanh
    }
}

std::vector<double> magnitudes(const std::vector<double> &v) {
    std::vector<double> m(v.size());
    for (size_t i = 0; i < v.size(); i++)
        m[i] = std::fabs(v[i]);
    return m;
}

bool all_zero(const std::vector<double> &v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return x == 0; });
}

// How far the operands' errors @p err (bounds on |device - value|, as
// @p val) can move node @p node of @p g, to first order and above.
std::vector<double> carried_raw(const Graph &g, uint32_t node, const std::vector<double> &value,
                                const std::vector<const std::vector<double> *> &val,
                                const std::vector<const std::vector<double> *> &err) {
    const Node &n = g.node(node);
    const size_t total = value.size();
    std::vector<double> c(total, 0);
    bool none = true;
    for (const auto *e : err)
        none &= all_zero(*e);
    const double u32 = 0x1p-24;
    auto shape = [&](size_t k) -> const Shape & { return g.node(n.operands[k]).type.shape; };
    const int64_t C = n.type.shape.back(), R = static_cast<int64_t>(total) / C;
    switch (n.op) {
    case Op::input:
    case Op::constant:
        return c;
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div:
        // The reference rounds its operands to fp32, the device computes
        // from its own: their difference is the error plus that rounding.
        for (size_t f = 0; f < total; f++) {
            double a, b, ea, eb;
            if (n.scalar) {
                double x = (*val[0])[f], ex = (*err[0])[f] + u32 * std::fabs(x), s = *n.scalar;
                a = n.scalar_first ? s : x;
                b = n.scalar_first ? x : s;
                ea = n.scalar_first ? 0 : ex;
                eb = n.scalar_first ? ex : 0;
            } else {
                Shape idx = unravel(static_cast<int64_t>(f), n.type.shape);
                auto ia = static_cast<size_t>(broadcast_index(idx, shape(0)));
                auto ib = static_cast<size_t>(broadcast_index(idx, shape(1)));
                a = (*val[0])[ia];
                b = (*val[1])[ib];
                ea = (*err[0])[ia] + u32 * std::fabs(a);
                eb = (*err[1])[ib] + u32 * std::fabs(b);
            }
            if (n.op == Op::add || n.op == Op::sub)
                c[f] = ea + eb;
            else if (n.op == Op::mul)
                c[f] = std::fabs(a) * eb + ea * std::fabs(b) + ea * eb;
            else
                c[f] = std::fabs(b) > eb ? (ea + std::fabs(a / b) * eb) / (std::fabs(b) - eb)
                                         : INFINITY;
        }
        return c;
    case Op::relu:
    case Op::gelu:
    case Op::gelu_tanh:
    case Op::silu:
    case Op::sigmoid:
    case Op::tanh:
    case Op::exp:
        for (size_t f = 0; f < total; f++)
            c[f] = n.op == Op::exp ? std::fabs(value[f]) * std::expm1((*err[0])[f])
                                   : max_slope(n.op) * (*err[0])[f];
        return c;
    case Op::matmul: {
        if (none)
            return c;
        // |A| eB + eA |B| + eA eB, each a matmul of the same shapes
        const auto ma = magnitudes(*val[0]), mb = magnitudes(*val[1]);
        const bool za = all_zero(*err[0]), zb = all_zero(*err[1]);
        auto add = [&](const std::vector<double> &x, const std::vector<double> &y) {
            std::vector<double> p = reference(g, node, {&x, &y}).value;
            for (size_t f = 0; f < total; f++)
                c[f] += p[f];
        };
        if (!zb)
            add(ma, *err[1]);
        if (!za)
            add(*err[0], mb);
        if (!za && !zb)
            add(*err[0], *err[1]);
        // the products went through fp32 operands in reference()
        for (auto &x : c)
            x *= 1 + 0x1p-20;
        return c;
    }
    case Op::softmax: {
        // Logit x_j moved by at most e_j moves p_i = e^x_i / sum_j e^x_j by
        // a factor within [e^-e_i S / S+, e^e_i S / S-], S = sum_j e^x_j,
        // S+- = sum_j e^(x_j +- e_j): a logit far below the row's largest
        // (a masked one) moves nothing, whatever its error.
        const int64_t Q = n.causal ? n.type.shape[n.type.shape.size() - 2] : 1;
        for (int64_t r = 0; r < R; r++) {
            const int64_t kept = n.causal ? std::min(C, r % Q + 1) : C;
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
                auto f = static_cast<size_t>(r * C + k);
                const double hi = std::exp(e[k]) * sum / down - 1;
                const double lo = 1 - std::exp(-e[k]) * sum / up;
                c[f] = std::fabs(value[f]) * std::max(hi, lo);
            }
        }
        return c;
    }
    case Op::layer_norm:
    case Op::rms_norm: {
        if (none)
            return c;
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
    case Op::attention: // evaluate_bounded() carries bounds through its decomposition
        throw GraphError(fmt::format("'{}': attention is carried as its decomposition", n.name));
    case Op::reshape:
    case Op::transpose:
    case Op::slice:
    case Op::split:
    case Op::concat:
        // data movement moves the errors with the values
        if (none)
            return c;
        return reference(g, node, err).value;
    }
    return c;
}

// carried_raw() with 0 x inf (an infinite error times a zero operand) as inf.
std::vector<double> carried(const Graph &g, uint32_t node, const std::vector<double> &value,
                            const std::vector<const std::vector<double> *> &val,
                            const std::vector<const std::vector<double> *> &err) {
    std::vector<double> c = carried_raw(g, node, value, val, err);
    for (auto &x : c)
        if (std::isnan(x))
            x = INFINITY;
    return c;
}

} // namespace

namespace {

// evaluate_bounded() from the values of @p g's inputs and constants in
// @p out (bound 0): every other node's value and bound.
void propagate(const Graph &g, std::vector<Expected> &out) {
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const Node &n = g.node(i);
        if (n.op == Op::input || n.op == Op::constant)
            continue;
        std::vector<const std::vector<double> *> val, err;
        for (uint32_t o : n.operands) {
            val.push_back(&out[o].value);
            err.push_back(&out[o].bound);
        }
        Expected own = reference(g, i, val);
        std::vector<double> b = carried(g, i, own.value, val, err);
        if (!is_data_movement(n.op)) {
            const double u = unit_roundoff(n.type.dtype);
            for (size_t f = 0; f < b.size(); f++) {
                const double v = own.value[f];
                if (!own.bound.empty())
                    b[f] += own.bound[f];
                else if (n.type.dtype == DType::int32)
                    b[f] += v == std::nearbyint(v) ? 0 : 0.5;
                else // the result rounded to fp32 and the dtype; subnormals
                    b[f] += (u + 0x1p-24) * (std::fabs(v) + b[f]) + 0x1p-126;
            }
        }
        out[i].value = std::move(own.value);
        out[i].bound = std::move(b);
    }
}

// The reference of attention node @p node: its decomposition computed from
// the operands, the bound carried through it from operands without error.
Expected attention_reference(const Graph &g, uint32_t node,
                             const std::vector<const std::vector<double> *> &operands) {
    const Node &n = g.node(node);
    Graph one(g.name());
    std::vector<uint32_t> in;
    const char *names[] = {"q", "k", "v", "mask"};
    for (size_t k = 0; k < n.operands.size(); k++)
        in.push_back(one.input(names[k], g.node(n.operands[k]).type));
    Attrs a;
    a.causal = n.causal;
    a.scale = n.scale;
    one.add(Op::attention, n.name, in, a);
    const Graph d = one.decomposed();
    std::vector<Expected> e(d.nodes().size());
    for (size_t k = 0; k < in.size(); k++) {
        e[k].value = *operands.at(k);
        e[k].bound.assign(e[k].value.size(), 0);
    }
    propagate(d, e);
    return std::move(e.back());
}

} // namespace

std::vector<Expected> evaluate_bounded(const Graph &g,
                                       const std::map<std::string, std::vector<float>> &inputs) {
    std::vector<Expected> out(g.nodes().size());
    if (has_attention(g)) { // through the operators it is made of, as compiled
        const Graph d = g.decomposed();
        std::vector<Expected> all = evaluate_bounded(d, inputs);
        for (uint32_t i = 0; i < g.nodes().size(); i++)
            out[i] = std::move(all[*d.find(g.node(i).name)]);
        return out;
    }
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const Node &n = g.node(i);
        if (n.op != Op::input && n.op != Op::constant)
            continue;
        std::vector<float> v;
        if (n.op == Op::constant) {
            v = constant_values(n);
        } else if (auto it = inputs.find(n.name);
                   it != inputs.end() &&
                   static_cast<int64_t>(it->second.size()) == n.type.elements()) {
            for (float x : it->second)
                v.push_back(round_to(n.type.dtype, x));
        } else {
            throw GraphError(fmt::format("input '{}' ({}) not given or of the wrong size", n.name,
                                         to_string(n.type)));
        }
        out[i].value.assign(v.begin(), v.end());
        out[i].bound.assign(v.size(), 0);
    }
    propagate(g, out);
    return out;
}

namespace {

// The own bound of the operator that computes node @p node's values, at
// the reference's operands: the node's own, or for data movement its
// operands' moved with the values (an input or constant: 0). Adds the
// operators it comes from to @p by.
std::vector<double> own_bound(const Graph &g, uint32_t node, const std::vector<Expected> &ref,
                              std::vector<uint32_t> &by) {
    const Node &n = g.node(node);
    const std::vector<double> &value = ref.at(node).value;
    if (n.op == Op::input || n.op == Op::constant)
        return std::vector<double>(value.size(), 0);
    if (is_data_movement(n.op)) {
        std::vector<std::vector<double>> moved;
        for (uint32_t o : n.operands)
            moved.push_back(own_bound(g, o, ref, by));
        std::vector<const std::vector<double> *> operands;
        for (const auto &m : moved)
            operands.push_back(&m);
        return reference(g, node, operands).value;
    }
    if (std::find(by.begin(), by.end(), node) == by.end())
        by.push_back(node);
    std::vector<const std::vector<double> *> operands;
    for (uint32_t o : n.operands)
        operands.push_back(&ref.at(o).value);
    Expected own = reference(g, node, operands);
    if (!own.bound.empty())
        return std::move(own.bound);
    std::vector<double> b(value.size());
    for (size_t f = 0; f < b.size(); f++)
        b[f] = std::fabs(exact_result(n.type.dtype, value[f]) - value[f]);
    return b;
}

} // namespace

OutputBound output_bound(const Graph &g, uint32_t node, const std::vector<Expected> &ref) {
    const Expected &e = ref.at(node);
    OutputBound r;
    for (size_t f = 0; f < e.bound.size(); f++) {
        r.carried = std::isnan(e.bound[f]) ? INFINITY : std::max(r.carried, e.bound[f]);
        r.largest = std::max(r.largest, std::fabs(e.value[f]));
    }
    if (r.carried <= r.largest) {
        r.bound = e.bound;
        return r;
    }
    r.own = true;
    r.bound = own_bound(g, node, ref, r.computed_by);
    return r;
}

Comparison compare(std::span<const float> device, std::span<const double> reference,
                   std::span<const double> bound, size_t list) {
    if (reference.size() != device.size() || bound.size() != device.size())
        throw std::invalid_argument(
            fmt::format("compare: {} device values, {} reference values and {} bounds",
                        device.size(), reference.size(), bound.size()));
    Comparison c;
    c.elements = device.size();
    std::vector<std::pair<double, size_t>> beyond; // (error / bound, element)
    for (size_t f = 0; f < device.size(); f++) {
        const double r = reference[f], d = device[f], b = bound[f];
        if (!std::isfinite(b)) {
            c.unchecked++;
            continue;
        }
        const bool same = d == r || (std::isnan(d) && std::isnan(r));
        const double err = same ? 0 : std::fabs(d - r);
        const double ratio = same ? 0 : (std::isnan(err) ? INFINITY : err / b);
        if (!same && !(err <= b)) {
            c.beyond++;
            beyond.emplace_back(ratio, f);
        }
        if (!std::isnan(err))
            c.max_error = std::max(c.max_error, err);
        if (ratio > c.worst_ratio) {
            c.worst_ratio = ratio;
            c.worst = f;
        }
    }
    const size_t show = std::min(list, beyond.size());
    std::partial_sort(beyond.begin(), beyond.begin() + static_cast<std::ptrdiff_t>(show),
                      beyond.end(), [](const auto &x, const auto &y) {
                          return x.first > y.first || (x.first == y.first && x.second < y.second);
                      });
    for (size_t i = 0; i < show; i++)
        c.worst_beyond.push_back(beyond[i].second);
    return c;
}

std::vector<float> seeded_values(const Type &t, uint64_t seed) {
    Node n;
    n.op = Op::constant;
    n.type = Type{t.dtype == DType::int32 ? DType::fp32 : t.dtype, t.shape};
    n.init.seed = seed;
    std::vector<float> v = constant_values(n);
    if (t.dtype == DType::int32)
        for (auto &x : v)
            x = round_to(DType::int32, x * 100);
    return v;
}

std::map<std::string, std::vector<float>> seeded_inputs(const Graph &g, uint64_t seed) {
    std::map<std::string, std::vector<float>> in;
    uint64_t position = 0;
    for (const Node &n : g.nodes())
        if (n.op == Op::input)
            in[n.name] = seeded_values(n.type, seed + position++);
    return in;
}

} // namespace neuron::compiler
