// SPDX-License-Identifier: MIT
// cast(x, dtype=...): a value converted to another dtype, as PyTorch's
// .to(dtype): between the float types and from int32 or u8 to float,
// rounding to nearest-even (COPY); from a float type to int32 toward zero,
// saturating, NaN giving 0 (COPY with TRUNC, ISA 1.2); to u8 (bool) 1
// where the value is not zero (TENSOR_SCALAR is_ne 0). One step of an
// elementwise chain.
#include "../op_record.hpp"

#include <cmath>

namespace neuron::compiler::lower {

namespace {

bool is_float(DType t) {
    return t == DType::fp32 || t == DType::bf16 || t == DType::fp16;
}

Type infer(InferContext &c) {
    c.arity(1, 1);
    if (!c.attrs.dtype)
        throw c.fail("cast needs dtype=");
    if (*c.attrs.dtype == DType::int32 && !is_float(c.in[0]->dtype) &&
        c.in[0]->dtype != DType::int32)
        throw c.fail("u8 to int32 is not lowered (cast it to a float type first)");
    return Type{*c.attrs.dtype, c.in[0]->shape};
}

std::optional<Step> step(const Node &n) {
    if (n.type.dtype == DType::u8)
        return Step{Step::nonzero};
    if (n.type.dtype == DType::int32)
        return Step{Step::trunc};
    return Step{Step::convert};
}

Kind elementwise_kind(const Graph &, const Node &) {
    return Kind::elementwise;
}

// Exact: the operand as fp32, converted (the check rounds it to the
// result's dtype as the device does).
Expected reference(const Graph &, const Node &n, const Values &ops) {
    Expected e;
    e.value.resize(ops[0]->size());
    for (size_t i = 0; i < e.value.size(); i++) {
        const double x = static_cast<float>((*ops[0])[i]);
        if (n.type.dtype == DType::u8)
            e.value[i] = x != 0 ? 1 : 0;
        else if (n.type.dtype == DType::int32)
            e.value[i] = std::isnan(x) ? 0 : std::clamp(std::trunc(x), -2147483648.0, 2147483647.0);
        else
            e.value[i] = x;
    }
    return e;
}

// A float result moves with its operand; an integer one may step by 1
// where the operand's error reaches an integer (or zero, for u8).
std::vector<double> carry(const Graph &, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    std::vector<double> c(value.size());
    for (size_t i = 0; i < c.size(); i++) {
        const double x = (*val[0])[i], e = (*err[0])[i];
        if (n.type.dtype == DType::u8)
            c[i] = std::fabs(x) <= e && e > 0 ? 1 : 0;
        else if (n.type.dtype == DType::int32)
            c[i] = e > 0 && std::floor(x - e) != std::floor(x + e) ? e + 1 : e;
        else
            c[i] = e;
    }
    return c;
}

std::vector<std::string> text_attributes(const Node &n) {
    return {std::string("dtype=") + to_string(n.type.dtype)};
}

} // namespace

extern const OpRecord cast_record{
    .op = Op::cast,
    .name = "cast",
    .infer = infer,
    .kind = elementwise_kind,
    .step = step,
    .text_attributes = text_attributes,
    .reference = reference,
    .carry = carry,
};

} // namespace neuron::compiler::lower
