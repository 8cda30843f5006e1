// SPDX-License-Identifier: MIT
#include "../op_record.hpp"

#include <array>

namespace neuron::compiler::lower {

// Each defined in the operator's own file.
extern const OpRecord input_record, constant_record, matmul_record, add_record, sub_record,
    mul_record, div_record, relu_record, gelu_record, gelu_tanh_record, silu_record, sigmoid_record,
    tanh_record, exp_record, softmax_record, layer_norm_record, rms_norm_record, reshape_record,
    transpose_record, slice_record, concat_record, split_record, attention_record, neg_record,
    log_record, erf_record, sqrt_record, rsqrt_record, reciprocal_record, abs_record,
    maximum_record, minimum_record, eq_record, ne_record, lt_record, le_record, gt_record,
    ge_record, cast_record, where_record, sum_record, mean_record, amax_record, amin_record,
    argmax_record, argmin_record, softmax_backward_record, log_softmax_backward_record,
    log_softmax_record, dropout_record, dropout_mask_record, index_add_record, index_select_record;
extern const KindLowering matmul_lowering, elementwise_lowering, binary_lowering, softmax_lowering,
    norm_lowering, gather_lowering, in_place_lowering, transpose2_lowering, select_lowering,
    reduce_lowering, random_lowering, scatter_add_lowering, gather_rows_lowering;

namespace {

// In the order of Op.
// A table: entries are appended without reflowing the others.
// clang-format off
const std::array<const OpRecord *, 53> records{
    &input_record,      &constant_record, &matmul_record,    &add_record,       &sub_record,
    &mul_record,        &div_record,      &relu_record,      &gelu_record,      &gelu_tanh_record,
    &silu_record,       &sigmoid_record,  &tanh_record,      &exp_record,       &softmax_record,
    &layer_norm_record, &rms_norm_record, &reshape_record,   &transpose_record, &slice_record,
    &concat_record,     &split_record,    &attention_record, &neg_record,       &log_record,
    &erf_record,        &sqrt_record,     &rsqrt_record,     &reciprocal_record, &abs_record,
    &maximum_record,    &minimum_record,  &eq_record,        &ne_record,         &lt_record,
    &le_record,         &gt_record,       &ge_record,        &cast_record,       &where_record,
    &sum_record, &mean_record, &amax_record, &amin_record, &argmax_record, &argmin_record,
    &softmax_backward_record, &log_softmax_backward_record,
    &log_softmax_record,
    &dropout_record, &dropout_mask_record, &index_add_record,
    &index_select_record,
};
// clang-format on

} // namespace

GraphError InferContext::fail(const std::string &why) const {
    std::vector<std::string> ts;
    for (size_t i = 0; i < in.size(); i++)
        ts.push_back(fmt::format("{}: {}", names[i], to_string(*in[i])));
    return GraphError(
        fmt::format("'{}' ({}) of {}: {}", node.name, to_string(node.op),
                    ts.empty() ? "no operands" : fmt::format("{}", fmt::join(ts, ", ")), why));
}

void InferContext::arity(size_t lo, size_t hi) const {
    if (in.size() < lo || in.size() > hi)
        throw fail(lo == hi ? fmt::format("takes {} operand(s)", lo)
                            : fmt::format("takes {} to {} operands", lo, hi));
}

void InferContext::same_dtype() const {
    for (const Type *t : in)
        if (t->dtype != in[0]->dtype)
            throw fail("operands of different dtypes (there are no implicit casts)");
}

void InferContext::floating() const {
    if (in[0]->dtype == DType::int32)
        throw fail("int32 is supported by add, sub, mul and the data-movement operators only");
}

int64_t InferContext::norm_axis(int64_t axis, size_t rank) const {
    const auto r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r)
        throw fail(fmt::format("axis {} out of range for rank {}", axis, rank));
    return axis < 0 ? axis + r : axis;
}

const OpRecord &op_record(Op op) {
    // Checked once: lookups are on the hot paths of emission and the reference.
    static const bool in_order = [] {
        for (size_t i = 0; i < records.size(); i++)
            if (records[i]->op != static_cast<Op>(i))
                return false;
        return true;
    }();
    if (!in_order)
        throw std::logic_error("neuron::compiler: the operator table is not in the order of Op");
    return *records.at(static_cast<size_t>(op));
}

std::span<const OpRecord *const> op_records() {
    return records;
}

const KindLowering *kind_lowering(Kind kind) {
    switch (kind) {
    case Kind::none:
        return nullptr;
    case Kind::alias:
    case Kind::view:
        return &in_place_lowering;
    case Kind::matmul:
        return &matmul_lowering;
    case Kind::elementwise:
        return &elementwise_lowering;
    case Kind::binary:
        return &binary_lowering;
    case Kind::softmax:
        return &softmax_lowering;
    case Kind::norm:
        return &norm_lowering;
    case Kind::gather:
        return &gather_lowering;
    case Kind::transpose2:
        return &transpose2_lowering;
    case Kind::select:
        return &select_lowering;
    case Kind::reduce:
        return &reduce_lowering;
    case Kind::random:
        return &random_lowering;
    case Kind::scatter_add:
        return &scatter_add_lowering;
    case Kind::gather_rows:
        return &gather_rows_lowering;
    }
    return nullptr;
}

} // namespace neuron::compiler::lower

namespace neuron::compiler {

const char *to_string(Op op) noexcept {
    for (const lower::OpRecord *r : lower::op_records())
        if (r->op == op)
            return r->name;
    return "?";
}

std::optional<Op> op_from_string(std::string_view name) noexcept {
    for (const lower::OpRecord *r : lower::op_records())
        if (name == r->name && r->op != Op::input && r->op != Op::constant)
            return r->op;
    return std::nullopt;
}

} // namespace neuron::compiler
