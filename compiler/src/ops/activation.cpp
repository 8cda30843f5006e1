// SPDX-License-Identifier: MIT
// The activations (relu, gelu, gelu_tanh, silu, sigmoid, tanh, exp), and
// the lowering of elementwise chains: literal steps and activations on one
// value, one instruction per step and row tile, `x * a + b` followed by an
// activation in one ACTIVATE, `x * a + b` alone in one two-op
// TENSOR_SCALAR.
#include "../op_record.hpp"

#include <cmath>

#include "../passes/emitter.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    Type out;
    c.arity(1, 1);
    c.floating();
    out = *c.in[0];
    return out;
}

void declare(StepBuffers &s, const Group &group) {
    s.read(s.graph.node(group.start).operands[0]);
    // An activation of a later ISA revision than the target's is refused
    // at its node.
    std::vector<uint32_t> nodes{group.start};
    nodes.insert(nodes.end(), group.fused.begin(), group.fused.end());
    for (uint32_t i : nodes) {
        const Node &n = s.graph.node(i);
        if (const auto step = op_record(n.op).step; step)
            if (const std::optional<Step> st = step(n); st && st->kind == Step::act)
                s.require(i, st->f);
    }
}

void emit(Emitter &e, const Group &p) {
    declare(e, p);
    Kernel &k = e.kernel();
    const Buf &in = e.buf(e.graph.node(p.start).operands[0]), &out = e.buf(p.result);
    for (uint32_t t = 0; t < out.tiles(); t++) {
        Tap x = e.tile(in, t), y = e.tile(out, t);
        size_t s = 0;
        while (s < p.steps.size()) {
            const Step &st = p.steps[s];
            // x*a + b followed by an activation: one ACTIVATE
            if (st.kind == Step::affine && s + 1 < p.steps.size() &&
                p.steps[s + 1].kind == Step::act) {
                k.activate(p.steps[s + 1].f, y, x, st.a, st.b);
                s += 2;
            } else if (st.kind == Step::act) {
                k.activate(st.f, y, x, st.a, st.b);
                s++;
            } else if (st.kind == Step::affine && s + 1 < p.steps.size() &&
                       p.steps[s + 1].kind == Step::affine && st.b == 0 && p.steps[s + 1].a == 1) {
                // (x * a) + b: one two-op TENSOR_SCALAR
                k.tensor_scalar(Engine::vector, y, x, AluOp::mul, st.a, AluOp::add,
                                p.steps[s + 1].b);
                s += 2;
            } else if (st.kind == Step::affine) {
                if (st.a != 1)
                    k.tensor_scalar(Engine::vector, y, x, AluOp::mul, st.a);
                else
                    k.tensor_scalar(Engine::vector, y, x, AluOp::add, st.b);
                s++;
            } else if (st.kind == Step::convert) {
                k.copy(Engine::scalar, y, x);
                s++;
            } else if (st.kind == Step::trunc) {
                k.copy_trunc(Engine::scalar, y, x);
                s++;
            } else if (st.kind == Step::nonzero) {
                k.tensor_scalar(Engine::vector, y, x, AluOp::is_ne, 0.0f);
                s++;
            } else if (st.kind == Step::div) {
                k.tensor_scalar(Engine::vector, y, x, AluOp::div, st.a);
                s++;
            } else { // s - x, s / x
                k.tensor_scalar(Engine::vector, y, x,
                                st.kind == Step::rsub ? AluOp::sub : AluOp::div, st.b, AluOp::none,
                                0.0f, /*reverse0=*/true);
                s++;
            }
            x = y;
        }
    }
}

double act(Op op, double z) {
    switch (op) {
    case Op::relu:
        return z < 0 ? 0 : z; // NaN stays NaN
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

// ACTIVATE's bound: 1e-5 |f| + 1e-6 (hw/isa.md §6).
Expected reference(const Graph &, const Node &n, const Values &ops) {
    Expected e;
    e.value.resize(ops[0]->size());
    e.bound.resize(e.value.size());
    for (size_t f = 0; f < e.value.size(); f++) {
        e.value[f] = act(n.op, (*ops[0])[f]);
        e.bound[f] = 1e-5 * std::fabs(e.value[f]) + 1e-6;
    }
    return e;
}

// exp scales its result by e^error; the others move by their steepest slope.
std::vector<double> carry(const Graph &, const Node &n, const std::vector<double> &value,
                          const Values &, const Values &err) {
    std::vector<double> c(value.size());
    for (size_t f = 0; f < c.size(); f++)
        c[f] = n.op == Op::exp ? std::fabs(value[f]) * std::expm1((*err[0])[f])
                               : max_slope(n.op) * (*err[0])[f];
    return c;
}

// An activation is one ACTIVATE of f.
template <Activation f> std::optional<Step> activate(const Node &) {
    return Step{Step::act, 1, 0, f};
}

Kind elementwise_kind(const Graph &, const Node &) {
    return Kind::elementwise;
}

} // namespace

extern const KindLowering elementwise_lowering{declare, emit};

extern const OpRecord relu_record{
    .op = Op::relu,
    .name = "relu",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate<Activation::relu>,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord gelu_record{
    .op = Op::gelu,
    .name = "gelu",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate<Activation::gelu>,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord gelu_tanh_record{
    .op = Op::gelu_tanh,
    .name = "gelu_tanh",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate<Activation::gelu_tanh>,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord silu_record{
    .op = Op::silu,
    .name = "silu",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate<Activation::silu>,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord sigmoid_record{
    .op = Op::sigmoid,
    .name = "sigmoid",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate<Activation::sigmoid>,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord tanh_record{
    .op = Op::tanh,
    .name = "tanh",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate<Activation::tanh>,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord exp_record{
    .op = Op::exp,
    .name = "exp",
    .infer = infer,
    .kind = elementwise_kind,
    .step = activate<Activation::exp>,
    .reference = reference,
    .carry = carry,
};

} // namespace neuron::compiler::lower
