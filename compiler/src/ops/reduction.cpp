// SPDX-License-Identifier: MIT
// The reductions' shared parts (reduction.hpp) and the lowering of a
// reduction of the last axis (Kind::reduce), per row tile: REDUCE sum, max
// or min along the free axis (into an fp32 column when the result needs
// another step), then for mean one TENSOR_SCALAR div by C, for a bf16 or
// fp16 result one COPY. argmax and argmin: REDUCE max (min), TENSOR_SCALAR
// is_eq against it (the maxima), SELECT of the column indices (IOTA, once
// per step, or per column block of 2048) where it holds and C elsewhere,
// REDUCE min (the first of them; per block, then TENSOR_TENSOR min across
// blocks), COPY into the int32 result.
#include "reduction.hpp"

#include <algorithm>
#include <numeric>

#include "../passes/emitter.hpp"

namespace neuron::compiler::lower {

namespace {

// Slabs combined one after the other where a run's rows would be too wide:
// m - 1 fp32 additions err by at most (m - 1) u / (1 - (m - 1) u), below
// the 1e-5 a run is allowed (sum_bound_factor) for m <= 64.
constexpr int64_t max_slab_chain = 64;

bool is_arg(const Node &n) {
    return n.op == Op::argmax || n.op == Op::argmin;
}

int64_t product(const Shape &s, size_t from, size_t to) {
    return std::accumulate(s.begin() + static_cast<std::ptrdiff_t>(from),
                           s.begin() + static_cast<std::ptrdiff_t>(to), int64_t{1},
                           std::multiplies<>());
}

} // namespace

Type infer_reduction(InferContext &c, bool arg) {
    c.arity(1, 1);
    c.floating();
    const Shape &x = c.in[0]->shape;
    std::vector<int64_t> dims;
    for (int64_t a : c.attrs.dims) {
        const int64_t d = c.norm_axis(a, x.size());
        if (std::find(dims.begin(), dims.end(), d) != dims.end())
            throw c.fail(fmt::format("axis {} is given twice", a));
        dims.push_back(d);
    }
    if (dims.empty()) {
        dims.resize(x.size());
        std::iota(dims.begin(), dims.end(), 0);
    }
    std::sort(dims.begin(), dims.end());
    if (arg && dims.size() != 1 && dims.size() != x.size())
        throw c.fail(fmt::format("{} reduces one axis or all of them, not {}", to_string(c.node.op),
                                 shape_text(c.attrs.dims)));
    // keepdim of every axis of a rank-1 operand is its result without it
    c.node.keepdim = c.attrs.keepdim || (x.size() == 1);
    c.node.dims = dims;
    Type out{arg ? DType::int32 : c.in[0]->dtype, {}};
    for (size_t d = 0; d < x.size(); d++) {
        const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
        if (!reduced)
            out.shape.push_back(x[d]);
        else if (c.node.keepdim)
            out.shape.push_back(1);
    }
    if (out.shape.empty())
        out.shape.push_back(1);
    return out;
}

bool reduces_last_axis(const Node &n) {
    return n.keepdim && n.dims.size() == 1 &&
           n.dims[0] == static_cast<int64_t>(n.type.shape.size()) - 1;
}

bool reduces_leading_axes(const Node &n) {
    const size_t r = n.type.shape.size();
    if (is_arg(n) || !n.keepdim || r < 2 || n.dims.size() != r - 1)
        return false;
    for (size_t d = 0; d + 1 < r; d++)
        if (n.dims[d] != static_cast<int64_t>(d))
            return false;
    return true;
}

namespace {

// The reduction of @p n's axes of an operand of shape @p in starts with
// one of every axis but the last (reduces_leading_axes()).
bool leading_first(const Node &n, const Shape &in) {
    if (is_arg(n) || in.size() < 2)
        return false;
    for (size_t d = 0; d + 1 < in.size(); d++)
        if (std::find(n.dims.begin(), n.dims.end(), static_cast<int64_t>(d)) == n.dims.end())
            return false;
    return true;
}

// The unit roundoff of a value stored as @p t (half an ulp, relative).
double unit_roundoff(DType t) {
    return t == DType::bf16 ? 0x1p-8 : t == DType::fp16 ? 0x1p-11 : 0x1p-24;
}

} // namespace

double sum_bound_factor(const Node &n, const Shape &in) {
    const double u = unit_roundoff(n.type.dtype), div = n.op == Op::mean ? 0x1p-24 : 0;
    if (!leading_first(n, in)) {
        const auto k = static_cast<double>(reduction_runs(in, n.dims, false).size());
        return k * (1e-5 + div) + (k - 1) * u;
    }
    // fp32 additions of the rows: a tree of depth ceil(log2(rows)) in each
    // row tile, then one per further row tile (gamma_d of the sum)
    const int64_t rows = product(in, 0, in.size() - 1), tiles = (rows + P - 1) / P;
    double depth = static_cast<double>(tiles - 1);
    for (int64_t h = std::min<int64_t>(rows, P); h > 1; h = (h + 1) / 2)
        depth += 1;
    double f = depth * 0x1p-24 / (1 - depth * 0x1p-24) + div;
    if (std::find(n.dims.begin(), n.dims.end(), static_cast<int64_t>(in.size()) - 1) !=
        n.dims.end()) // then the row of partial results rounded to the dtype and reduced
        f += u + (1e-5 + div) * (1 + u + f);
    return f;
}

std::vector<std::pair<size_t, size_t>>
reduction_runs(const Shape &in, const std::vector<int64_t> &dims, bool whole) {
    std::vector<bool> left(in.size(), false);
    for (int64_t d : dims)
        left[static_cast<size_t>(d)] = true;
    std::vector<std::pair<size_t, size_t>> runs;
    for (size_t end = in.size(); end > 0;) {
        if (!left[end - 1]) {
            end--;
            continue;
        }
        size_t first = end - 1;
        int64_t m = in[first];
        while (first > 0 && left[first - 1] && (whole || m * in[first - 1] <= max_cols))
            m *= in[--first];
        runs.emplace_back(first, end);
        end = first;
    }
    return runs;
}

// Every axis but the last, then (if reduced) the last.
uint32_t decompose_leading(Graph &into, const Node &n, uint32_t v) {
    Shape s = into.node(v).type.shape;
    Attrs leading, last_axis;
    leading.dims.resize(s.size() - 1);
    std::iota(leading.dims.begin(), leading.dims.end(), 0);
    leading.keepdim = last_axis.keepdim = true;
    last_axis.dims = {-1};
    const bool last = n.dims.size() == s.size();
    std::fill(s.begin(), s.end() - 1, 1);
    v = into.add(n.op, !last && s == n.type.shape ? n.name : n.name + ".rows", {v}, leading);
    if (last) {
        s.back() = 1;
        v = into.add(n.op, s == n.type.shape ? n.name : n.name + ".part", {v}, last_axis);
    }
    if (into.node(v).name != n.name) {
        Attrs r;
        r.dims = n.type.shape;
        v = into.add(Op::reshape, n.name, {v}, r);
    }
    return v;
}

uint32_t decompose_reduction(Graph &into, const Node &n, const std::vector<uint32_t> &operands) {
    uint32_t v = operands[0];
    Shape s = into.node(v).type.shape;
    if (leading_first(n, s))
        return decompose_leading(into, n, v);
    const auto runs = reduction_runs(s, n.dims, is_arg(n));
    Attrs last_axis;
    last_axis.dims = {-1};
    last_axis.keepdim = true;
    for (size_t k = 0; k < runs.size(); k++) {
        const auto [first, end] = runs[k];
        const int64_t a = product(s, 0, first), m = product(s, first, end),
                      b = product(s, end, s.size());
        if (is_arg(n) && m > max_cols)
            throw GraphError(fmt::format(
                "{} over {} elements is not lowered: the axes it reduces are one row, and a row "
                "of the row layout holds at most {}",
                to_string(n.op), m, max_cols));
        const std::string step = fmt::format("{}", k);
        Shape reduced; // the reduction's result
        if (b == 1 && first + 1 == s.size()) {
            reduced = s; // the last axis alone: reduced where it is
            reduced.back() = 1;
        } else if (b == 1) {
            Attrs r;
            r.dims = {a, m};
            v = into.add(Op::reshape, n.name + ".rows" + step, {v}, r);
            reduced = {a, 1};
        } else if (b > max_cols && m <= max_slab_chain && n.type.dtype == DType::fp32 &&
                   !is_arg(n)) {
            // [a, m, b] is wider than a row: the m slabs [a, 1, the axes
            // after], combined in order (added, or their maximum or minimum).
            Attrs r;
            r.dims = {a, m};
            r.dims.insert(r.dims.end(), s.begin() + static_cast<std::ptrdiff_t>(end), s.end());
            if (into.node(v).type.shape != r.dims)
                v = into.add(Op::reshape, n.name + ".slabs" + step, {v}, r);
            const Op combine = n.op == Op::amax   ? Op::maximum
                               : n.op == Op::amin ? Op::minimum
                                                  : Op::add;
            uint32_t acc = 0;
            for (int64_t i = 0; i < m; i++) {
                Attrs cut;
                cut.axis = 1;
                cut.start = i;
                cut.end = i + 1;
                const std::string slab = fmt::format("{}.slab{}_{}", n.name, step, i);
                const uint32_t one = into.add(Op::slice, slab, {v}, cut);
                acc = i == 0 ? one : into.add(combine, slab + ".acc", {acc, one}, {});
            }
            v = acc;
            if (n.op == Op::mean) {
                Attrs by;
                by.scalar = static_cast<float>(m);
                v = into.add(Op::div, n.name + ".mean" + step, {v}, by);
            }
            for (size_t d = first; d < end; d++)
                s[d] = 1;
            continue;
        } else {
            Attrs r, t;
            r.dims = {a, m, b};
            t.dims = {0, 2, 1};
            if (into.node(v).type.shape != r.dims)
                v = into.add(Op::reshape, n.name + ".rows" + step, {v}, r);
            v = into.add(Op::transpose, n.name + ".swap" + step, {v}, t);
            reduced = {a, b, 1};
        }
        const bool named = k + 1 == runs.size() && reduced == n.type.shape;
        v = into.add(n.op, named ? n.name : n.name + ".part" + step, {v}, last_axis);
        for (size_t d = first; d < end; d++)
            s[d] = 1;
    }
    if (into.node(v).name != n.name) {
        Attrs r;
        r.dims = n.type.shape;
        v = into.add(Op::reshape, n.name, {v}, r);
    }
    return v;
}

ReducedIndex reduced_index(const Shape &in, const std::vector<int64_t> &dims) {
    ReducedIndex r;
    std::vector<bool> reduced(in.size(), false);
    for (int64_t d : dims) {
        reduced[static_cast<size_t>(d)] = true;
        r.per_output *= in[static_cast<size_t>(d)];
    }
    const int64_t n = product(in, 0, in.size());
    r.outputs = n / r.per_output;
    // each axis's stride in the result's flat index or in the flat index
    // among the reduced axes; the coordinates counted up like an odometer
    std::vector<int64_t> stride(in.size()), idx(in.size(), 0);
    int64_t out_stride = 1, within_stride = 1;
    for (size_t d = in.size(); d-- > 0;) {
        int64_t &st = reduced[d] ? within_stride : out_stride;
        stride[d] = st;
        st *= in[d];
    }
    r.out.resize(static_cast<size_t>(n));
    r.within.resize(static_cast<size_t>(n));
    int64_t o = 0, w = 0;
    for (int64_t f = 0; f < n; f++) {
        r.out[static_cast<size_t>(f)] = o;
        r.within[static_cast<size_t>(f)] = w;
        for (size_t d = in.size(); d-- > 0;) {
            (reduced[d] ? w : o) += stride[d];
            if (++idx[d] < in[d])
                break;
            (reduced[d] ? w : o) -= stride[d] * in[d];
            idx[d] = 0;
        }
    }
    return r;
}

std::vector<std::string> reduction_attributes(const Node &n) {
    std::vector<std::string> a{fmt::format("dims=[{}]", fmt::join(n.dims, ", "))};
    if (n.keepdim)
        a.emplace_back("keepdim=true");
    return a;
}

bool reduction_streams_operand(const Node &n, size_t k) {
    return k == 0 && reduces_leading_axes(n);
}

std::string reduction_mixes_rows(const Graph &, const Node &n, int64_t) {
    return reduces_last_axis(n) ? "" : "it reduces over rows";
}

// Axis 0 kept: the result's axis 0 is the operand's.
void reduction_split(SplitRoles &s, uint32_t n) {
    const Node &node = s.graph.node(n);
    if (!s.any_split(node))
        return;
    if (std::find(node.dims.begin(), node.dims.end(), 0) != node.dims.end())
        s.refuse(n, "it reduces over the split axis");
    s.set_per_row(n, s.per_row(node.operands[0]));
}

namespace {

// argmax and argmin work on column blocks of at most this many elements.
constexpr uint32_t arg_block = 2048;

struct Buffers {
    const Buf *column = nullptr;                  // fp32, one per row
    const Buf *first = nullptr, *block = nullptr; // argmax, argmin: indices
    const Buf *index = nullptr, *hit = nullptr;   // of a column block
    // every axis but the last: fp32 partial results of a row tile, their
    // running total, and (streamed operand) two row tiles it is loaded into
    const Buf *work = nullptr, *total = nullptr, *load[2] = {nullptr, nullptr};
};

Buffers declare(StepBuffers &s, const Group &group) {
    const uint32_t i = group.start;
    const Node &n = s.graph.node(i);
    const uint32_t x = n.operands[0];
    const auto C = static_cast<uint32_t>(s.graph.node(x).type.shape.back());
    Buffers b;
    if (reduces_leading_axes(n)) {
        if (s.streamed(x))
            for (int j = 0; j < 2; j++)
                b.load[j] =
                    &s.temp(fmt::format("{}.load{}", n.name, j), s.graph.node(x).type.dtype, P, C);
        else
            s.read(x);
        b.work = &s.temp(n.name + ".work", DType::fp32, P, C);
        b.total = &s.temp(n.name + ".total", DType::fp32, 1, C);
        return b;
    }
    s.read(x);
    if (is_arg(n)) {
        const uint32_t w = std::min(C, arg_block);
        s.require(i, mnemonic_tensor_scalar(AluOp::is_eq), isa_minor_of(AluOp::is_eq));
        s.require(i, mnemonic_select(), isa_minor_of_select());
        b.column = &s.temp(n.name + ".best", DType::fp32, P, 1);
        b.first = &s.temp(n.name + ".first", DType::fp32, P, 1);
        if (C > w)
            b.block = &s.temp(n.name + ".block", DType::fp32, P, 1);
        b.index = &s.temp(n.name + ".index", DType::fp32, P, w);
        b.hit = &s.temp(n.name + ".hit", DType::fp32, P, w);
    } else if (n.op == Op::mean || n.type.dtype != DType::fp32) {
        b.column = &s.temp(n.name + ".column", DType::fp32, P, 1);
    }
    return b;
}

ReduceOp reduce_op(Op op) {
    switch (op) {
    case Op::amax:
    case Op::argmax:
        return ReduceOp::max;
    case Op::amin:
    case Op::argmin:
        return ReduceOp::min;
    default:
        return ReduceOp::sum;
    }
}

// The first index of the extremes (.best) of row tile @p t of @p in into
// its result @p y: per column block, the block's column indices where the block
// equals them and C elsewhere, their minimum, the minimum over blocks.
void first_extreme(Emitter &e, const Buffers &b, const Buf &in, uint32_t t, const Tap &y,
                   bool iota_per_block) {
    const uint32_t rt = e.tile_rows(in, t), C = in.cols;
    Kernel &k = e.kernel();
    const Tap best = e.rows(*b.column, 0, rt, 0, 1), first = e.rows(*b.first, 0, rt, 0, 1);
    for (uint32_t c0 = 0; c0 < C; c0 += arg_block) {
        const uint32_t w = std::min(arg_block, C - c0);
        const Tap index = e.rows(*b.index, 0, rt, 0, w), hit = e.rows(*b.hit, 0, rt, 0, w);
        if (iota_per_block)
            k.iota(index, static_cast<int32_t>(c0), 0, 1);
        const Tap block = e.rows(in, t * P, rt, c0, w);
        k.tensor_scalar(Engine::vector, hit, block, AluOp::is_eq, best);
        k.select(hit, hit, index, static_cast<float>(C));
        if (c0 == 0) {
            k.reduce(ReduceOp::min, first, hit);
        } else {
            const Tap part = e.rows(*b.block, 0, rt, 0, 1);
            k.reduce(ReduceOp::min, part, hit);
            k.tensor_tensor(AluOp::min, first, first, part);
        }
    }
    k.copy(Engine::vector, y, first);
}

// Every axis but the last: each row tile (loaded by DMA when the operand
// is streamed, into two buffers in turn) folded in halves down the
// partitions into its first row (the upper half of the rows combined into
// the lower half by one TENSOR_TENSOR, which pairs partitions relative to
// each operand's first), that row combined into the running total, the
// total (divided by the rows for mean) into the result.
void emit_leading(Emitter &e, uint32_t i, const Buffers &b) {
    Kernel &k = e.kernel();
    const Node &n = e.graph.node(i);
    const uint32_t x = n.operands[0];
    const Buf &in = e.buf(x), &out = e.buf(i);
    const Type &xt = e.graph.node(x).type;
    const auto C = static_cast<uint32_t>(xt.shape.back());
    const auto R = static_cast<uint32_t>(rows_of(xt));
    const AluOp op = n.op == Op::amax ? AluOp::max : n.op == Op::amin ? AluOp::min : AluOp::add;
    const uint64_t esize = dtype_size(xt.dtype);
    const Tap total = e.rows(*b.total, 0, 1, 0, C);
    auto work = [&](uint32_t r0, uint32_t rows) { return e.rows(*b.work, r0, rows, 0, C); };
    for (uint32_t t = 0; t * P < R; t++) {
        const uint32_t rt = std::min(P, R - t * P);
        const Buf *load = b.load[t % 2];
        if (load)
            k.dma_load(e.rows(*load, 0, rt, 0, C),
                       e.arg(x).at(uint64_t{t} * P * C * esize,
                                   static_cast<uint32_t>(uint64_t{C} * esize)));
        // rows [r0, r0 + rows) of the row tile
        auto source = [&](uint32_t r0, uint32_t rows) {
            return load ? e.rows(*load, r0, rows, 0, C) : e.rows(in, t * P + r0, rows, 0, C);
        };
        if (rt == 1)
            k.copy(Engine::vector, work(0, 1), source(0, 1));
        for (uint32_t h = rt; h > 1;) {
            const uint32_t lo = h / 2, hi = h - lo;
            const bool first = h == rt;
            k.tensor_tensor(op, work(0, lo), first ? source(0, lo) : work(0, lo),
                            first ? source(hi, lo) : work(hi, lo));
            if (first && hi > lo) // the middle row of an odd count, as it is
                k.copy(Engine::vector, work(lo, 1), source(lo, 1));
            h = hi;
        }
        if (t == 0)
            k.copy(Engine::vector, total, work(0, 1));
        else
            k.tensor_tensor(op, total, total, work(0, 1));
    }
    const Tap y = e.rows(out, 0, 1, 0, C);
    if (n.op == Op::mean)
        k.tensor_scalar(Engine::vector, y, total, AluOp::div, static_cast<float>(R));
    else
        k.copy(Engine::vector, y, total);
}

void emit(Emitter &e, const Group &group) {
    const Buffers b = declare(e, group);
    if (b.work) {
        emit_leading(e, group.start, b);
        return;
    }
    Kernel &k = e.kernel();
    const uint32_t i = group.start;
    const Node &n = e.graph.node(i);
    const auto C = static_cast<uint32_t>(e.graph.node(n.operands[0]).type.shape.back());
    const Buf &in = e.buf(n.operands[0]), &out = e.buf(i);
    const bool one_block = C <= arg_block;
    if (is_arg(n) && one_block) // the column indices, the same in every row tile
        k.iota(e.rows(*b.index, 0, P, 0, C), 0, 0, 1);
    for (uint32_t t = 0; t < out.tiles(); t++) {
        const uint32_t rt = e.tile_rows(out, t);
        const Tap x = e.tile(in, t), y = e.tile(out, t);
        if (!b.column) {
            k.reduce(reduce_op(n.op), y, x);
            continue;
        }
        const Tap col = e.rows(*b.column, 0, rt, 0, 1);
        k.reduce(reduce_op(n.op), col, x);
        if (is_arg(n))
            first_extreme(e, b, in, t, y, !one_block);
        else if (n.op == Op::mean)
            k.tensor_scalar(Engine::vector, y, col, AluOp::div, static_cast<float>(C));
        else
            k.copy(Engine::vector, y, col);
    }
}

} // namespace

extern const KindLowering reduce_lowering{[](StepBuffers &s, const Group &g) { declare(s, g); },
                                          emit};

} // namespace neuron::compiler::lower
