// SPDX-License-Identifier: MIT
// The comparisons eq, ne, lt, le, gt, ge of two values or of a value and a
// literal (fp32, bf16, fp16, int32 operands; int32 exact below 2^24): a
// u8 mask of 0 and 1 (torch.bool), binary.cpp's lowering with the ALU's
// is_eq .. is_ge (ISA 1.1) writing the mask (u8 is ISA 1.2).
#include "binary.hpp"

#include <cmath>

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    Type t = broadcast_type(c);
    t.dtype = DType::u8;
    if (c.in[0]->dtype == DType::u8)
        throw c.fail("u8 operands are not compared (compare the values the mask came from)");
    return t;
}

bool holds(Op op, double a, double b) {
    switch (op) {
    case Op::eq:
        return a == b;
    case Op::ne:
        return a != b;
    case Op::lt:
        return a < b;
    case Op::le:
        return a <= b;
    case Op::gt:
        return a > b;
    default:
        return a >= b;
    }
}

// Operand k's value of element f as the device reads it (fp32), its error
// and their rounding.
std::pair<double, double> operand(const Graph &g, const Node &n, const Values &v, const Values *err,
                                  size_t f, size_t k) {
    if (n.scalar && k == (n.scalar_first ? 0 : 1))
        return {*n.scalar, 0};
    const auto [ia, ib] = operand_elements(g, n, f);
    const size_t i = n.scalar || k == 0 ? ia : ib, o = n.scalar ? 0 : k;
    const double x = static_cast<float>((*v[o])[i]);
    return {x, err ? (*(*err)[o])[i] + 0x1p-24 * std::fabs(x) : 0};
}

// Exact: 1 or 0 from the fp32 operands (IEEE 754's ordered comparisons).
Expected reference(const Graph &g, const Node &n, const Values &ops) {
    Expected e;
    e.value.resize(static_cast<size_t>(n.type.elements()));
    for (size_t f = 0; f < e.value.size(); f++)
        e.value[f] = holds(n.op, operand(g, n, ops, nullptr, f, 0).first,
                           operand(g, n, ops, nullptr, f, 1).first)
                         ? 1
                         : 0;
    return e;
}

// 1 where the operands' errors could reach across their difference (the
// result may flip), else 0.
std::vector<double> carry(const Graph &g, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    std::vector<double> c(value.size());
    for (size_t f = 0; f < c.size(); f++) {
        const auto [a, ea] = operand(g, n, val, &err, f, 0);
        const auto [b, eb] = operand(g, n, val, &err, f, 1);
        c[f] = std::fabs(a - b) <= ea + eb && ea + eb > 0 ? 1 : 0;
    }
    return c;
}

} // namespace

#define NEURON_COMPARISON(NAME, ALU)                                                               \
    extern const OpRecord NAME##_record{                                                           \
        .op = Op::NAME,                                                                            \
        .name = #NAME,                                                                             \
        .infer = infer,                                                                            \
        .kind = binary_kind,                                                                       \
        .alu = AluOp::ALU,                                                                         \
        .whole_operand = row_operand,                                                              \
        .mixes_rows = mixes_rows,                                                                  \
        .reference = reference,                                                                    \
        .carry = carry,                                                                            \
    };
NEURON_COMPARISON(eq, is_eq)
NEURON_COMPARISON(ne, is_ne)
NEURON_COMPARISON(lt, is_lt)
NEURON_COMPARISON(le, is_le)
NEURON_COMPARISON(gt, is_gt)
NEURON_COMPARISON(ge, is_ge)
#undef NEURON_COMPARISON

} // namespace neuron::compiler::lower
