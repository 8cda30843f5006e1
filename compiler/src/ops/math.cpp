// SPDX-License-Identifier: MIT
// The unary functions of ISA 1.1 and 1.2's ACTIVATE: log, erf, sqrt,
// rsqrt, reciprocal, abs (fp32, bf16, fp16). Each is one step of an
// elementwise chain, one ACTIVATE per row tile (with a preceding `x * a +
// b` folded into its scale and bias, as the activations of
// activation.cpp), lowered by activation.cpp's elementwise lowering.
#include "../op_record.hpp"

#include <cmath>

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    c.arity(1, 1);
    c.floating();
    return *c.in[0];
}

Activation function(Op op) {
    switch (op) {
    case Op::log:
        return Activation::ln;
    case Op::erf:
        return Activation::erf;
    case Op::sqrt:
        return Activation::sqrt;
    case Op::rsqrt:
        return Activation::rsqrt;
    case Op::reciprocal:
        return Activation::reciprocal;
    default:
        return Activation::abs;
    }
}

std::optional<Step> activate(const Node &n) {
    // A bias of -0 keeps z = x for x = -0 (reciprocal(-0) is -inf, sqrt(-0) -0).
    return Step{Step::act, 1, -0.0f, function(n.op)};
}

Kind elementwise_kind(const Graph &, const Node &) {
    return Kind::elementwise;
}

// f of the fp32 operand the device reads, in double.
double f(Op op, double x) {
    const double z = static_cast<float>(x);
    switch (op) {
    case Op::log:
        return std::log(z);
    case Op::erf:
        return std::erf(z);
    case Op::sqrt:
        return std::sqrt(z);
    case Op::rsqrt:
        return 1 / std::sqrt(z);
    case Op::reciprocal:
        return 1 / z;
    default:
        return std::fabs(z);
    }
}

// hw/isa.md §6: ln, erf and rsqrt within 1 ulp of the fp32 result's
// binade (2^-23 |f|, at least 2^-149); sqrt, reciprocal and abs exact
// (the fp32 result correctly rounded: no bound).
Expected reference(const Graph &, const Node &n, const Values &ops) {
    Expected e;
    e.value.resize(ops[0]->size());
    const bool exact = n.op == Op::sqrt || n.op == Op::reciprocal || n.op == Op::abs;
    if (!exact)
        e.bound.resize(e.value.size());
    for (size_t i = 0; i < e.value.size(); i++) {
        e.value[i] = f(n.op, (*ops[0])[i]);
        if (!exact)
            e.bound[i] = std::isfinite(e.value[i]) ? 0x1p-23 * std::fabs(e.value[i]) + 0x1p-149 : 0;
    }
    return e;
}

// How far an operand error e moves f at x, to first order and above: the
// largest |f'| over [|x| - e, |x| + e] times e (infinite where the
// interval reaches a pole or, for log and sqrt, zero); erf's slope is at
// most 2/√π; abs moves no more than its operand.
std::vector<double> carry(const Graph &, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    std::vector<double> c(value.size());
    for (size_t i = 0; i < c.size(); i++) {
        const double x = std::fabs((*val[0])[i]), e = (*err[0])[i] + 0x1p-24 * x;
        const double lo = x - e; // the smallest |operand| the device may have read
        switch (n.op) {
        case Op::erf:
            c[i] = 1.1284 * e;
            break;
        case Op::abs:
            c[i] = e;
            break;
        case Op::log: // |d ln x| = e / x
            c[i] = lo > 0 ? e / lo : INFINITY;
            break;
        case Op::sqrt: // |d √x| = e / (2√x)
            c[i] = lo > 0 ? e / (2 * std::sqrt(lo)) : std::sqrt(e);
            break;
        case Op::rsqrt: // |d x^-1/2| = e / (2 x^3/2)
            c[i] = lo > 0 ? e / (2 * lo * std::sqrt(lo)) : INFINITY;
            break;
        default: // reciprocal: |d 1/x| = e / x^2
            c[i] = lo > 0 ? e / (lo * lo) : INFINITY;
            break;
        }
    }
    return c;
}

} // namespace

extern const OpRecord log_record{
    .op = Op::log,
    .name = "log",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord erf_record{
    .op = Op::erf,
    .name = "erf",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord sqrt_record{
    .op = Op::sqrt,
    .name = "sqrt",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord rsqrt_record{
    .op = Op::rsqrt,
    .name = "rsqrt",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord reciprocal_record{
    .op = Op::reciprocal,
    .name = "reciprocal",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord abs_record{
    .op = Op::abs,
    .name = "abs",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate,
    .reference = reference,
    .carry = carry,
};

} // namespace neuron::compiler::lower
