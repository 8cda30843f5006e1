// SPDX-License-Identifier: MIT
// The data-movement operators (reshape, transpose, slice, split, concat):
// where each element of the result comes from, and their lowering: none
// for a reshape that keeps the last axis (it shares its operand's buffer)
// and for a piece of whole row tiles (a view of its operand's buffer),
// TRANSPOSE blocks for a swap of the last two axes, else a gather of
// copies, chains of them fused into one.
#include "../op_record.hpp"

#include <algorithm>
#include <tuple>

#include "../passes/emitter.hpp"

namespace neuron::compiler::lower {

int64_t first_row(const Node &n) {
    const Shape &s = n.type.shape;
    const auto ax = static_cast<size_t>(n.axis);
    if (ax + 1 == s.size())
        return -1;
    for (size_t d = 0; d < ax; d++)
        if (s[d] != 1)
            return -1;
    int64_t rows_per_index = 1;
    for (size_t d = ax + 1; d + 1 < s.size(); d++)
        rows_per_index *= s[d];
    return n.start * rows_per_index;
}

namespace {

Type infer_reshape(InferContext &c) {
    Type out;
    c.arity(1, 1);
    Shape s = c.attrs.dims;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < s.size(); i++) {
        if (s[i] == -1) {
            if (infer >= 0)
                throw c.fail("at most one -1 in the shape");
            infer = static_cast<int64_t>(i);
        } else if (s[i] < 1) {
            throw c.fail(fmt::format("bad size {} in the shape", s[i]));
        } else {
            known *= s[i];
        }
    }
    int64_t total = c.in[0]->elements();
    if (infer >= 0) {
        if (total % known)
            throw c.fail(fmt::format("cannot infer -1 in {}", shape_text(s)));
        s[static_cast<size_t>(infer)] = total / known;
    }
    if (Type{DType::fp32, s}.elements() != total)
        throw c.fail(fmt::format("{} has {} elements, the input {}", shape_text(s),
                                 Type{DType::fp32, s}.elements(), total));
    c.node.dims = s;
    out = Type{c.in[0]->dtype, s};
    return out;
}

Type infer_transpose(InferContext &c) {
    Type out;
    c.arity(1, 1);
    const Shape &x = c.in[0]->shape;
    Shape p = c.attrs.dims;
    if (p.empty() && x.size() >= 2) { // default: swap the last two axes
        for (size_t i = 0; i < x.size(); i++)
            p.push_back(static_cast<int64_t>(i));
        std::swap(p[x.size() - 1], p[x.size() - 2]);
    }
    if (p.size() != x.size())
        throw c.fail(fmt::format("permutation {} for rank {}", shape_text(p), x.size()));
    std::vector<bool> seen(x.size());
    Shape s;
    for (int64_t d : p) {
        if (d < 0 || d >= static_cast<int64_t>(x.size()) || seen[static_cast<size_t>(d)])
            throw c.fail(fmt::format("{} is not a permutation", shape_text(p)));
        seen[static_cast<size_t>(d)] = true;
        s.push_back(x[static_cast<size_t>(d)]);
    }
    c.node.dims = p;
    out = Type{c.in[0]->dtype, s};
    return out;
}

Type infer_slice(InferContext &c) {
    Type out;
    c.arity(1, 1);
    const Shape &x = c.in[0]->shape;
    int64_t ax = c.norm_axis(c.attrs.axis.value_or(0), x.size());
    int64_t d = x[static_cast<size_t>(ax)];
    int64_t st = c.attrs.start < 0 ? c.attrs.start + d : c.attrs.start,
            en = c.attrs.end <= 0 ? c.attrs.end + d : c.attrs.end;
    if (st < 0 || en > d || st >= en)
        throw c.fail(fmt::format("slice [{}, {}) of an axis of {}", c.attrs.start, c.attrs.end, d));
    c.node.axis = ax;
    c.node.start = st;
    c.node.end = en;
    out = *c.in[0];
    out.shape[static_cast<size_t>(ax)] = en - st;
    return out;
}

Type infer_concat(InferContext &c) {
    Type out;
    if (c.in.empty())
        throw c.fail("takes at least one operand");
    c.same_dtype();
    const Shape &x = c.in[0]->shape;
    int64_t ax = c.norm_axis(c.attrs.axis.value_or(0), x.size());
    out = *c.in[0];
    for (size_t i = 1; i < c.in.size(); i++) {
        const Shape &y = c.in[i]->shape;
        bool ok = y.size() == x.size();
        for (size_t j = 0; ok && j < x.size(); j++)
            ok = static_cast<int64_t>(j) == ax || x[j] == y[j];
        if (!ok)
            throw c.fail("operands differ outside the concatenation axis");
        out.shape[static_cast<size_t>(ax)] += y[static_cast<size_t>(ax)];
    }
    c.node.axis = ax;
    return out;
}

// Graph::split() makes the pieces, with their types.
Type infer_split(InferContext &c) {
    throw c.fail("split makes one value per piece: Graph::split() names them");
}

// A piece that starts a row tile of its operand is a view of its buffer.
bool is_view(const Node &n) {
    const int64_t r = first_row(n);
    return r >= 0 && r % P == 0;
}

// The source indices are computed axis by axis, without the index
// vectors: gathers ask for every element of their results.

Source reshape_source(const Graph &, const Node &n, int64_t f) {
    return {n.operands[0], f};
}

// Result axis d is axis dims[d] of the operand.
Source transpose_source(const Graph &g, const Node &n, int64_t f) {
    const Shape &out = n.type.shape, &in = g.node(n.operands[0]).type.shape;
    int64_t src = 0;
    for (size_t d = out.size(); d-- > 0;) {
        const int64_t i = f % out[d];
        f /= out[d];
        int64_t stride = 1; // of the operand's axis dims[d]
        for (auto a = static_cast<size_t>(n.dims[d]) + 1; a < in.size(); a++)
            stride *= in[a];
        src += i * stride;
    }
    return {n.operands[0], src};
}

// slice, and a piece of a split: [start, end) of the axis
Source slice_source(const Graph &g, const Node &n, int64_t f) {
    const Shape &out = n.type.shape, &in = g.node(n.operands[0]).type.shape;
    int64_t src = 0, stride = 1;
    for (size_t d = out.size(); d-- > 0;) {
        int64_t i = f % out[d];
        f /= out[d];
        if (d == static_cast<size_t>(n.axis))
            i += n.start;
        src += i * stride;
        stride *= in[d];
    }
    return {n.operands[0], src};
}

// The index along the axis picks the operand; the others are the result's.
Source concat_source(const Graph &g, const Node &n, int64_t f) {
    const Shape &out = n.type.shape;
    const auto ax = static_cast<size_t>(n.axis);
    int64_t inner = 1;
    for (size_t d = ax + 1; d < out.size(); d++)
        inner *= out[d];
    const int64_t within = f % inner, outer = f / inner / out[ax];
    int64_t at = f / inner % out[ax];
    for (uint32_t o : n.operands) {
        const int64_t len = g.node(o).type.shape[ax];
        if (at < len)
            return {o, (outer * len + at) * inner + within};
        at -= len;
    }
    return {n.operands.back(), 0}; // not reached: the index is inside the result
}

// Data movement (reshape, transposes keeping the last axis, slice, concat,
// and chains of them fused into one): every output row is a few runs of
// consecutive elements of source rows; consecutive output rows whose runs
// continue in the next source row (same columns, same row tiles) share one
// COPY, which may move data across partitions.
void declare_gather(StepBuffers &s, const Group &p) {
    for (uint32_t leaf : p.sources)
        s.read(leaf);
}

void emit_gather(Emitter &e, const Group &p) {
    declare_gather(e, p);
    Kernel &k = e.kernel();
    const uint32_t i = p.start;
    const Graph &g = e.graph;
    const Buf &out = e.buf(p.result);
    const uint32_t C = out.cols;
    struct Seg {
        uint32_t leaf, row, col, out_col, len;
    };
    auto segments = [&](uint32_t r) {
        std::vector<Seg> segs;
        for (uint32_t c = 0; c < C; c++) {
            uint32_t node = p.result;
            int64_t f = int64_t{r} * C + c;
            do
                std::tie(node, f) = op_record(g.node(node).op).source(g, g.node(node), f);
            while (std::find(p.fused.begin(), p.fused.end(), node) != p.fused.end() || node == i);
            const Buf &in = e.buf(node);
            uint32_t row = static_cast<uint32_t>(f / in.cols),
                     col = static_cast<uint32_t>(f % in.cols);
            if (!segs.empty()) {
                Seg &l = segs.back();
                if (l.leaf == node && l.row == row && l.col + l.len == col) {
                    l.len++;
                    continue;
                }
            }
            segs.push_back({node, row, col, c, 1});
        }
        return segs;
    };
    std::vector<Seg> run;
    uint32_t run_start = 0, run_len = 0;
    auto flush = [&]() {
        for (const Seg &sg : run)
            k.copy(Engine::vector, e.rows(out, run_start, run_len, sg.out_col, sg.len),
                   e.rows(e.buf(sg.leaf), sg.row, run_len, sg.col, sg.len));
        run.clear();
        run_len = 0;
    };
    for (uint32_t r = 0; r < out.rows; r++) {
        auto segs = segments(r);
        bool extends = run_len > 0 && r % P != 0 && segs.size() == run.size();
        for (size_t j = 0; extends && j < segs.size(); j++) {
            const Seg &a = run[j], &b = segs[j];
            uint32_t next = a.row + run_len;
            extends = a.leaf == b.leaf && b.row == next && b.col == a.col &&
                      b.out_col == a.out_col && b.len == a.len && next % P != 0;
        }
        if (!extends) {
            flush();
            run = segs;
            run_start = r;
        }
        run_len++;
    }
    flush();
}
// A reshape that keeps the last axis, a piece of whole row tiles: the
// operand's buffer, read in place.
void declare_in_place(StepBuffers &s, const Group &p) {
    s.read(s.graph.node(p.start).operands[0]);
}

void emit_in_place(Emitter &e, const Group &p) {
    declare_in_place(e, p);
}

// A reshape from or to a last axis of 1 (reshape_transposes): as a
// transpose of [r, c, 1] into [r, 1, c] (a column of the operand per row of
// the result) or of [r, 1, c] into [r, c, 1].
bool reshape_transposes(const Graph &g, const Node &n) {
    const int64_t in = g.node(n.operands[0]).type.shape.back(), out = n.type.shape.back();
    return in != out && (in == 1 || out == 1);
}

// transpose of the last two axes, the others in place
void emit_transpose2(Emitter &e, const Group &p) {
    declare_in_place(e, p);
    const Node &n = e.graph.node(p.start);
    const Shape &s = e.graph.node(n.operands[0]).type.shape;
    uint32_t x, y;
    if (n.op == Op::reshape) {
        const bool columns = s.back() == 1; // [r c, 1] -> [r, c]
        x = columns ? static_cast<uint32_t>(n.type.shape.back()) : 1;
        y = columns ? 1 : static_cast<uint32_t>(s.back());
    } else {
        x = static_cast<uint32_t>(s[s.size() - 2]);
        y = static_cast<uint32_t>(s.back());
    }
    e.transpose_blocks(e.buf(n.operands[0]), e.buf(p.start),
                       static_cast<uint32_t>(n.type.elements() / (int64_t{x} * y)), x, y);
}

// Exact: every element is its source's (OpRecord::source).
Expected moved(const Graph &g, const Node &n, const Values &ops) {
    const auto source = op_record(n.op).source;
    Expected e;
    e.value.resize(static_cast<size_t>(n.type.elements()));
    for (size_t f = 0; f < e.value.size(); f++) {
        const auto [o, i] = source(g, n, static_cast<int64_t>(f));
        const auto k = static_cast<size_t>(std::find(n.operands.begin(), n.operands.end(), o) -
                                           n.operands.begin());
        e.value[f] = (*ops[k])[static_cast<size_t>(i)];
    }
    return e;
}

// The errors move with the values.
std::vector<double> moved_errors(const Graph &g, const Node &n, const std::vector<double> &value,
                                 const Values &, const Values &err) {
    if (std::all_of(err.begin(), err.end(), [](const auto *e) { return all_zero(*e); }))
        return std::vector<double>(value.size(), 0);
    return moved(g, n, err).value;
}

// A reshape keeping the last axis shares its operand's buffer; one from or
// to a last axis of 1 moves each row of one into a column of the other by
// TRANSPOSE blocks (a gather would copy them an element at a time); any
// other gathers.
Kind reshape_kind(const Graph &g, const Node &n) {
    if (g.node(n.operands[0]).type.shape.back() == n.type.shape.back())
        return Kind::alias;
    return reshape_transposes(g, n) ? Kind::transpose2 : Kind::gather;
}

Kind transpose_kind(const Graph &g, const Node &n) {
    const Shape &d = n.dims;
    const size_t r = d.size();
    const bool keeps_last = d[r - 1] == static_cast<int64_t>(r - 1);
    bool swaps_last2 = r >= 2 && d[r - 1] == static_cast<int64_t>(r - 2) &&
                       d[r - 2] == static_cast<int64_t>(r - 1);
    for (size_t j = 0; swaps_last2 && j + 2 < r; j++)
        swaps_last2 = d[j] == static_cast<int64_t>(j);
    if (keeps_last)
        return Kind::gather;
    if (swaps_last2)
        return Kind::transpose2;
    unsupported(g, n,
                "a permutation that moves the last axis is lowered only as a swap of the last "
                "two axes with the others in place; split it into two transposes");
}

Kind piece_kind(const Graph &, const Node &n) {
    return is_view(n) ? Kind::view : Kind::gather;
}

Kind concat_kind(const Graph &, const Node &) {
    return Kind::gather;
}

std::string moves_between_rows(const Graph &, const Node &, int64_t) {
    return "it moves elements between rows";
}

std::string reshape_mixes_rows(const Graph &g, const Node &n, int64_t rows) {
    return reshape_kind(g, n) == Kind::alias ? "" : moves_between_rows(g, n, rows);
}

// One input row must be a whole number of rows of the result.
void split_reshape(SplitRoles &s, uint32_t i) {
    const Node &n = s.graph.node(i);
    if (!s.any_split(n))
        return;
    const Node &x = s.graph.node(n.operands[0]);
    const int64_t inner_in = x.type.elements() / x.type.shape[0];
    const int64_t inner_out = n.type.elements() / n.type.shape[0];
    const int64_t per_row = s.per_row(n.operands[0]);
    if ((per_row * inner_in) % inner_out)
        s.refuse(i, fmt::format("one input row is {} elements of the operand, which is not a "
                                "whole number of rows of {}",
                                per_row * inner_in, shape_text(n.type.shape)));
    s.set_per_row(i, per_row * inner_in / inner_out);
}

void split_transpose(SplitRoles &s, uint32_t i) {
    const Node &n = s.graph.node(i);
    if (s.any_split(n) && n.dims.at(0) != 0)
        s.refuse(i, fmt::format("the permutation {} moves axis 0", shape_text(n.dims)));
    s.set_per_row(i, s.per_row(n.operands[0]));
}

// slice, split and concat along an axis other than the split one, every
// operand split alike.
void split_pieces(SplitRoles &s, uint32_t i) {
    const Node &n = s.graph.node(i);
    if (!s.any_split(n))
        return;
    for (uint32_t o : n.operands)
        if (!s.per_row(o))
            s.refuse(
                i, fmt::format("'{}' is not split while another operand is", s.graph.node(o).name));
    if (n.axis == 0)
        s.refuse(i, "it cuts or joins along the split axis");
    s.set_per_row(i, s.per_row(n.operands[0]));
    for (uint32_t o : n.operands)
        if (s.per_row(o) != s.per_row(i))
            s.refuse(i, "its operands are split in different steps");
}

std::vector<std::string> reshape_text(const Node &n) {
    return {fmt::format("shape=[{}]", fmt::join(n.dims, ", "))};
}

std::vector<std::string> transpose_text(const Node &n) {
    return {fmt::format("perm=[{}]", fmt::join(n.dims, ", "))};
}

std::vector<std::string> slice_text(const Node &n) {
    return {fmt::format("axis={}", n.axis), fmt::format("start={}", n.start),
            fmt::format("end={}", n.end)};
}

std::vector<std::string> concat_text(const Node &n) {
    return {fmt::format("axis={}", n.axis)};
}

std::vector<std::string> split_text(const Node &n) {
    return {fmt::format("axis={}", n.axis), fmt::format("sizes=[{}]", fmt::join(n.dims, ", "))};
}

} // namespace

extern const KindLowering gather_lowering{declare_gather, emit_gather};
extern const KindLowering in_place_lowering{declare_in_place, emit_in_place};
extern const KindLowering transpose2_lowering{declare_in_place, emit_transpose2};

extern const OpRecord reshape_record{
    .op = Op::reshape,
    .name = "reshape",
    .infer = infer_reshape,
    .kind = reshape_kind,
    .text_attributes = reshape_text,
    .source = reshape_source,
    .mixes_rows = reshape_mixes_rows,
    .reference = moved,
    .carry = moved_errors,
    .split = split_reshape,
};
extern const OpRecord transpose_record{
    .op = Op::transpose,
    .name = "transpose",
    .infer = infer_transpose,
    .kind = transpose_kind,
    .text_attributes = transpose_text,
    .source = transpose_source,
    .mixes_rows = moves_between_rows,
    .reference = moved,
    .carry = moved_errors,
    .split = split_transpose,
};
extern const OpRecord slice_record{
    .op = Op::slice,
    .name = "slice",
    .infer = infer_slice,
    .kind = piece_kind,
    .text_attributes = slice_text,
    .source = slice_source,
    .mixes_rows = moves_between_rows,
    .reference = moved,
    .carry = moved_errors,
    .split = split_pieces,
};
extern const OpRecord split_record{
    .op = Op::split,
    .name = "split",
    .infer = infer_split,
    .kind = piece_kind,
    .text_attributes = split_text,
    .source = slice_source,
    .mixes_rows = moves_between_rows,
    .reference = moved,
    .carry = moved_errors,
    .split = split_pieces,
};
extern const OpRecord concat_record{
    .op = Op::concat,
    .name = "concat",
    .infer = infer_concat,
    .kind = concat_kind,
    .text_attributes = concat_text,
    .source = concat_source,
    .mixes_rows = moves_between_rows,
    .reference = moved,
    .carry = moved_errors,
    .split = split_pieces,
};

} // namespace neuron::compiler::lower
