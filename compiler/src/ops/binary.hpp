// SPDX-License-Identifier: MIT
// What the operators of two operands (binary.cpp: add, sub, mul, div;
// minmax.cpp; compare.cpp) share: numpy broadcasting, a literal operand,
// and binary.cpp's lowering (Kind::binary, the record's ALU operation).
#pragma once

#include <utility>

#include "../op_record.hpp"

namespace neuron::compiler::lower {

/// The result's type: the operand's with a literal, else the broadcast
/// shape of two operands of one dtype.
Type broadcast_type(InferContext &c);
Kind binary_kind(const Graph &, const Node &);
/// The operands' flat indices of result element @p f (with a literal, @p f
/// for both).
std::pair<size_t, size_t> operand_elements(const Graph &g, const Node &n, size_t f);
/// Rows in chunks: a row [.., C] or one element of a result with more is
/// read whole.
bool row_operand(const Graph &g, const Node &n, size_t k);
/// Rows in chunks: "" when every operand is the result's shape, a row, one
/// element or a column of every row.
std::string mixes_rows(const Graph &g, const Node &n, int64_t rows);

} // namespace neuron::compiler::lower
