// SPDX-License-Identifier: MIT
// argmax and argmin over one axis or all of them (the flat index), int32
// indices, with or without keepdim; the first of equal extremes, as torch.
// Over the last axis lowered as it is (ops/reduction.cpp: REDUCE, is_eq,
// SELECT of IOTA's column indices, REDUCE min; ISA 1.1, exact below 2^24
// columns); any other axis, or all of them, is decomposed like the other
// reductions (the axis moved last by a transpose, or every axis flattened
// into one row). NaNs are ignored (REDUCE max and min return the non-NaN
// operand), where torch would return a NaN's index.
#include <cmath>

#include "reduction.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    return infer_reduction(c, true);
}

Kind kind(const Graph &g, const Node &n) {
    if (!reduces_last_axis(n))
        unsupported(g, n,
                    "no lowering: an argmax or argmin over another axis is compiled as its "
                    "decomposition");
    return Kind::reduce;
}

bool primitive(const Node &n) {
    return reduces_last_axis(n);
}

bool better(const Node &n, double a, double b) {
    return n.op == Op::argmax ? a > b : a < b;
}

// The index of the first extreme of every result element, exact. NaNs
// are skipped, as the device's REDUCE skips them.
Expected reference(const Graph &g, const Node &n, const Values &ops) {
    const ReducedIndex r = reduced_index(g.node(n.operands[0]).type.shape, n.dims);
    const std::vector<double> &x = *ops[0];
    std::vector<double> best(static_cast<size_t>(r.outputs), NAN);
    Expected e;
    e.value.assign(best.size(), 0);
    for (size_t f = 0; f < x.size(); f++) {
        const auto o = static_cast<size_t>(r.out[f]);
        if (!std::isnan(x[f]) && (std::isnan(best[o]) || better(n, x[f], best[o]))) {
            best[o] = x[f];
            e.value[o] = static_cast<double>(r.within[f]);
        }
    }
    return e;
}

// An index is certain when no other element of its group can reach the
// extreme within the errors; otherwise it may be any of the group's.
std::vector<double> carry(const Graph &g, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    const ReducedIndex r = reduced_index(g.node(n.operands[0]).type.shape, n.dims);
    const std::vector<double> &x = *val[0], &e = *err[0];
    std::vector<double> extreme(value.size(), 0), slack(value.size(), 0);
    for (size_t f = 0; f < x.size(); f++) {
        const auto o = static_cast<size_t>(r.out[f]);
        if (static_cast<double>(r.within[f]) == value[o]) {
            extreme[o] = x[f];
            slack[o] = e[f];
        }
    }
    std::vector<double> c(value.size(), 0);
    for (size_t f = 0; f < x.size(); f++) {
        const auto o = static_cast<size_t>(r.out[f]);
        if (static_cast<double>(r.within[f]) == value[o] || e[f] + slack[o] == 0)
            continue;
        const double gap = n.op == Op::argmax ? extreme[o] - x[f] : x[f] - extreme[o];
        if (gap <= e[f] + slack[o])
            c[o] = static_cast<double>(r.per_output - 1);
    }
    return c;
}

} // namespace

#define NEURON_ARG_RECORD(OP)                                                                      \
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
        .split = reduction_split,                                                                  \
    };

NEURON_ARG_RECORD(argmax)
NEURON_ARG_RECORD(argmin)

#undef NEURON_ARG_RECORD

} // namespace neuron::compiler::lower
