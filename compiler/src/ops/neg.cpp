// SPDX-License-Identifier: MIT
// neg(x) = -x, fp32, bf16 and fp16: one step of an elementwise chain,
// x * -1, so one exact TENSOR_SCALAR alone, or nothing of its own in a
// chain or a matmul's epilogue (ACTIVATE's scale, the evacuation's
// TENSOR_SCALAR).
#include "../op_record.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    c.arity(1, 1);
    c.floating();
    return *c.in[0];
}

std::optional<Step> times_minus_one(const Node &) {
    return Step{Step::affine, -1, 0};
}

Kind elementwise_kind(const Graph &, const Node &) {
    return Kind::elementwise;
}

// Exact: negating an fp32 value is.
Expected reference(const Graph &, const Node &, const Values &ops) {
    Expected e;
    e.value = *ops[0];
    for (double &v : e.value)
        v = -v;
    return e;
}

// The errors stay what they were.
std::vector<double> carry(const Graph &, const Node &, const std::vector<double> &, const Values &,
                          const Values &err) {
    return *err[0];
}

} // namespace

extern const OpRecord neg_record{
    .op = Op::neg,
    .name = "neg",
    .infer = infer,
    .kind = elementwise_kind,
    .step = times_minus_one,
    .reference = reference,
    .carry = carry,
};

} // namespace neuron::compiler::lower
