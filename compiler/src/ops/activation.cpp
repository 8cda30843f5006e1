// SPDX-License-Identifier: MIT
// The activations (relu, gelu, gelu_tanh, silu, sigmoid, tanh, exp), and
// the lowering of elementwise chains: literal steps and activations on one
// value, one instruction per step and row tile, `x * a + b` followed by an
// activation in one ACTIVATE, `x * a + b` alone in one two-op
// TENSOR_SCALAR.
#include "../registry.hpp"

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
                k.activate(st.f, y, x);
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

Kind elementwise_kind(const Graph &, const Node &) {
    return Kind::elementwise;
}

} // namespace

extern const KindLowering elementwise_lowering{declare, emit};

extern const OpRecord relu_record{Op::relu, infer, elementwise_kind, Activation::relu};
extern const OpRecord gelu_record{Op::gelu, infer, elementwise_kind, Activation::gelu};
extern const OpRecord gelu_tanh_record{Op::gelu_tanh, infer, elementwise_kind,
                                       Activation::gelu_tanh};
extern const OpRecord silu_record{Op::silu, infer, elementwise_kind, Activation::silu};
extern const OpRecord sigmoid_record{Op::sigmoid, infer, elementwise_kind, Activation::sigmoid};
extern const OpRecord tanh_record{Op::tanh, infer, elementwise_kind, Activation::tanh};
extern const OpRecord exp_record{Op::exp, infer, elementwise_kind, Activation::exp};

} // namespace neuron::compiler::lower
