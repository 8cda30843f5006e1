// SPDX-License-Identifier: MIT
// sum, mean, amax and amin over any set of axes, with or without keepdim:
// a reduction of the last axis alone, and one of every axis but the last
// (its operand streamed from device memory when SBUF is short), are
// lowered as they are (Kind::reduce, ops/reduction.cpp); any other is
// decomposed into those: every axis but the last first when they are all
// reduced, else runs of consecutive axes, the operand reshaped (and
// transposed when axes follow the run) so that the run is the last axis. mean over
// several runs is the mean of the runs' means (every run has as many
// elements); amax and amin are exact.
#include <cmath>

#include "reduction.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    return infer_reduction(c, false);
}

bool primitive(const Node &n) {
    return reduces_last_axis(n) || reduces_leading_axes(n);
}

Kind kind(const Graph &g, const Node &n) {
    if (!primitive(n))
        unsupported(g, n,
                    "no lowering: a reduction of other axes is compiled as its "
                    "decomposition");
    return Kind::reduce;
}

// Per result element: the bound of the decomposition's steps
// (sum_bound_factor(): REDUCE sum's 1e-5 of the sum of magnitudes per run
// of axes, or the fp32 additions of the rows, the rounding of partial
// results to the dtype, each mean's division).
Expected reference(const Graph &g, const Node &n, const Values &ops) {
    const Shape &in = g.node(n.operands[0]).type.shape;
    const ReducedIndex r = reduced_index(in, n.dims);
    const std::vector<double> &x = *ops[0];
    const auto outs = static_cast<size_t>(r.outputs);
    std::vector<double> acc(outs, n.op == Op::amax ? -INFINITY : n.op == Op::amin ? INFINITY : 0);
    std::vector<double> magnitude(outs, 0);
    for (size_t f = 0; f < x.size(); f++) {
        double &a = acc[static_cast<size_t>(r.out[f])];
        if (n.op == Op::amax)
            a = std::isnan(a) || x[f] > a ? x[f] : a;
        else if (n.op == Op::amin)
            a = std::isnan(a) || x[f] < a ? x[f] : a;
        else
            a += x[f];
        magnitude[static_cast<size_t>(r.out[f])] += std::fabs(x[f]);
    }
    Expected e;
    e.value = std::move(acc);
    if (n.op == Op::amax || n.op == Op::amin)
        return e; // exact: rounding to the dtype keeps the order
    const double factor = sum_bound_factor(n, in);
    const double scale = n.op == Op::mean ? 1.0 / static_cast<double>(r.per_output) : 1.0;
    e.bound.resize(outs);
    for (size_t o = 0; o < outs; o++) {
        e.value[o] *= scale;
        e.bound[o] = factor * magnitude[o] * scale;
    }
    return e;
}

// sum: the errors add up; mean: their mean; amax, amin: the largest of
// them (a maximum moves by at most the largest move of its elements).
std::vector<double> carry(const Graph &g, const Node &n, const std::vector<double> &value,
                          const Values &, const Values &err) {
    const ReducedIndex r = reduced_index(g.node(n.operands[0]).type.shape, n.dims);
    std::vector<double> c(value.size(), 0);
    const std::vector<double> &e = *err[0];
    for (size_t f = 0; f < e.size(); f++) {
        double &to = c[static_cast<size_t>(r.out[f])];
        to = n.op == Op::amax || n.op == Op::amin ? std::max(to, e[f]) : to + e[f];
    }
    if (n.op == Op::mean)
        for (double &v : c)
            v /= static_cast<double>(r.per_output);
    return c;
}

} // namespace

#define NEURON_REDUCTION_RECORD(OP)                                                                \
    extern const OpRecord OP##_record{                                                             \
        .op = Op::OP,                                                                              \
        .name = #OP,                                                                               \
        .infer = infer,                                                                            \
        .kind = kind,                                                                              \
        .text_attributes = reduction_attributes,                                                   \
        .mixes_rows = reduction_mixes_rows,                                                        \
        .reference = reference,                                                                    \
        .carry = carry,                                                                            \
        .decompose = decompose_reduction,                                                          \
        .primitive = primitive,                                                                    \
        .streams_operand = reduction_streams_operand,                                              \
        .split = reduction_split,                                                                  \
    };

NEURON_REDUCTION_RECORD(sum)
NEURON_REDUCTION_RECORD(mean)
NEURON_REDUCTION_RECORD(amax)
NEURON_REDUCTION_RECORD(amin)

#undef NEURON_REDUCTION_RECORD

} // namespace neuron::compiler::lower
