// SPDX-License-Identifier: MIT
// maximum and minimum of two values or of a value and a literal (fp32,
// bf16, fp16, int32): binary.cpp's lowering with the ALU's max and min
// (TENSOR_TENSOR, TENSOR_SCALAR; broadcasting as add's). A literal bound
// is one TENSOR_SCALAR per row tile; clamp is a maximum then a minimum.
#include "binary.hpp"

#include <cmath>

namespace neuron::compiler::lower {

namespace {

// The operands of element @p f as the device reads them (fp32).
std::pair<double, double> operands(const Graph &g, const Node &n, const Values &ops, size_t f) {
    if (n.scalar)
        return {static_cast<float>((*ops[0])[f]), *n.scalar};
    const auto [ia, ib] = operand_elements(g, n, f);
    return {static_cast<float>((*ops[0])[ia]), static_cast<float>((*ops[1])[ib])};
}

// Exact: one of the operands. (With a NaN operand the device returns the
// other, hw/isa.md §4, where torch.maximum returns NaN.)
Expected reference(const Graph &g, const Node &n, const Values &ops) {
    Expected e;
    e.value.resize(static_cast<size_t>(n.type.elements()));
    for (size_t f = 0; f < e.value.size(); f++) {
        const auto [a, b] = operands(g, n, ops, f);
        e.value[f] = n.op == Op::maximum ? std::fmax(a, b) : std::fmin(a, b);
    }
    return e;
}

// The larger of the operands' errors (and their rounding to fp32).
std::vector<double> carry(const Graph &g, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    std::vector<double> c(value.size());
    for (size_t f = 0; f < c.size(); f++) {
        if (n.scalar) {
            c[f] = (*err[0])[f] + 0x1p-24 * std::fabs((*val[0])[f]);
            continue;
        }
        const auto [ia, ib] = operand_elements(g, n, f);
        c[f] = std::max((*err[0])[ia] + 0x1p-24 * std::fabs((*val[0])[ia]),
                        (*err[1])[ib] + 0x1p-24 * std::fabs((*val[1])[ib]));
    }
    return c;
}

} // namespace

extern const OpRecord maximum_record{
    .op = Op::maximum,
    .name = "maximum",
    .infer = broadcast_type,
    .kind = binary_kind,
    .alu = AluOp::max,
    .whole_operand = row_operand,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord minimum_record{
    .op = Op::minimum,
    .name = "minimum",
    .infer = broadcast_type,
    .kind = binary_kind,
    .alu = AluOp::min,
    .whole_operand = row_operand,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .carry = carry,
};

} // namespace neuron::compiler::lower
