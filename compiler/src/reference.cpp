// SPDX-License-Identifier: MIT
#include <neuron/compiler/reference.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

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

Shape unravel(int64_t f, const Shape &s) {
    Shape idx(s.size());
    for (size_t d = s.size(); d-- > 0;) {
        idx[d] = f % s[d];
        f /= s[d];
    }
    return idx;
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
            } else if (n.op == Op::slice) {
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

} // namespace neuron::compiler
