// SPDX-License-Identifier: MIT
// What the reductions (sum, mean, amax, amin in reduce.cpp; argmax, argmin
// in argreduce.cpp) share: their type inference, their decomposition into
// reductions of the last axis, the lowering of those (ops/reduction.cpp),
// and the index arithmetic of their references.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../op_record.hpp"

namespace neuron::compiler::lower {

/// The result's type: the operand's shape without the reduced axes
/// (attrs.dims, every axis when empty; negative ones counted from the
/// end), or with 1s in their place (keepdim); [1] for a reduction of every
/// axis without keepdim (the IR has no rank 0). @p arg: argmax or argmin,
/// which reduce one axis or all of them and give int32 indices.
Type infer_reduction(InferContext &c, bool arg);

/// The node reduces its operand's last axis alone and keeps it as 1: the
/// form the lowering runs (Kind::reduce); every other is decomposed.
bool reduces_last_axis(const Node &n);

/// The node reduces every axis of its operand but the last and keeps
/// them as 1s (sum, mean, amax, amin): also lowered as it is, its operand
/// read row tile by row tile (from device memory when it is streamed).
bool reduces_leading_axes(const Node &n);

/// sum and mean: the bound on the device's error as a multiple of the sum
/// of the magnitudes of the elements (of a mean: of their mean), for an
/// operand of shape @p in (the decomposition's steps, ops/reduction.cpp).
double sum_bound_factor(const Node &n, const Shape &in);

/// The runs of consecutive reduced axes of an operand of shape @p in that
/// the decomposition reduces one after the other, the last first: [first,
/// end) axes each, at most max_cols elements (a row of the row layout)
/// unless @p whole.
std::vector<std::pair<size_t, size_t>> reduction_runs(const Shape &in,
                                                      const std::vector<int64_t> &dims, bool whole);

/// Each run of reduction_runs(), last first: the operand reshaped to [A,
/// M] (or, with axes after the run, [A, M, B] transposed to [A, B, M]),
/// the node's operator over the last axis with keepdim, and at the end a
/// reshape to the node's shape.
uint32_t decompose_reduction(Graph &into, const Node &n, const std::vector<uint32_t> &operands);

/// For every element of an operand of shape @p in, the flat index of the
/// result element it goes to and its flat index among the reduced axes
/// (the reduced axes' coordinates, row-major).
struct ReducedIndex {
    std::vector<int64_t> out, within;
    int64_t outputs = 1, per_output = 1;
};
ReducedIndex reduced_index(const Shape &in, const std::vector<int64_t> &dims);

std::vector<std::string> reduction_attributes(const Node &n);
std::string reduction_mixes_rows(const Graph &g, const Node &n, int64_t rows);
bool reduction_streams_operand(const Node &n, size_t k);
void reduction_split(SplitRoles &s, uint32_t n);

} // namespace neuron::compiler::lower
