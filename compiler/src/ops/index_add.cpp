// SPDX-License-Identifier: MIT
// index_add(base, index, src) and index_add(index, src, dims=[V]): rows
// added along axis 0, PyTorch's index_add(base, 0, index, src) (and
// embedding's backward: the gradient rows of the tokens added into the
// rows of their ids, into zeros of V rows). index is int32 [N, 1] (a
// column: one row id per row of src), src [N, ...] of base's dtype (fp32
// or bf16) with base's trailing axes; out = base, then out[index[i]] +=
// src[i] for i = 0, 1, ... in turn: repeated ids accumulate in that order,
// each addition one fp32 rounding (bf16: one bf16 rounding after it), as
// DMA_SCATTER_ADD (ISA 1.2) adds.
//
// The result is computed in device memory, in the node's output argument
// (which the program therefore binds readable): the base is written there
// (stored from SBUF, copied through SBUF from an input, or zeros), then
// every row tile of src is added by one DMA_SCATTER_ADD with its tile of
// ids. So the result takes no SBUF, and operands that are graph inputs are
// streamed through SBUF tile by tile: any size that fits device memory.
// The node must be a graph output that nothing else in the graph reads.
// An id outside [0, V) faults the job (BINDING_RANGE).
#include "../op_record.hpp"

#include <cmath>

#include "../passes/emitter.hpp"
#include "neuron_isa.h"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    c.arity(2, 3);
    const bool zero_base = c.in.size() == 2;
    if (zero_base != !c.attrs.dims.empty())
        throw c.fail("takes (base, index, src), or (index, src) with dims=[rows] for a zero base");
    const Type &index = *c.in[zero_base ? 0 : 1], &src = *c.in[zero_base ? 1 : 2];
    if (index.dtype != DType::int32 || index.shape.size() != 2 || index.shape[1] != 1)
        throw c.fail("index is an int32 column [N, 1] (one row id per row of src)");
    if (src.dtype != DType::fp32 && src.dtype != DType::bf16)
        throw c.fail("src and base are fp32 or bf16 (the dtypes DMA_SCATTER_ADD adds)");
    if (src.shape.size() < 2 || src.shape[0] != index.shape[0])
        throw c.fail(
            fmt::format("src has {} rows on axis 0, index {}", src.shape[0], index.shape[0]));
    Type out = src;
    if (zero_base) {
        if (c.attrs.dims.size() != 1 || c.attrs.dims[0] < 1)
            throw c.fail("dims=[rows]: the rows of the zero base");
        out.shape[0] = c.attrs.dims[0];
        c.node.dims = c.attrs.dims;
        return out;
    }
    const Type &base = *c.in[0];
    if (base.dtype != src.dtype)
        throw c.fail("base and src of different dtypes (there are no implicit casts)");
    if (base.shape.size() != src.shape.size() ||
        !std::equal(base.shape.begin() + 1, base.shape.end(), src.shape.begin() + 1))
        throw c.fail("base and src must agree beyond axis 0");
    return base;
}

Kind scatter_kind(const Graph &g, const Node &n) {
    for (const Node &u : g.nodes())
        if (std::find(u.operands.begin(), u.operands.end(), &n - g.nodes().data()) !=
            u.operands.end())
            unsupported(g, n,
                        fmt::format("'{}' reads it: index_add's result is computed in its output "
                                    "argument, so it must be an output that nothing else reads",
                                    u.name));
    if (std::find(g.outputs().begin(), g.outputs().end(), &n - g.nodes().data()) ==
        g.outputs().end())
        unsupported(g, n, "its result is computed in its output argument: mark it an output");
    return Kind::scatter_add;
}

bool is_memory(const Graph &g, uint32_t v) {
    const Op op = g.node(v).op;
    return op == Op::input || op == Op::constant;
}

struct Operands {
    std::optional<uint32_t> base;
    uint32_t index, src;
};

Operands operands_of(const Node &n) {
    if (n.operands.size() == 2)
        return {std::nullopt, n.operands[0], n.operands[1]};
    return {n.operands[0], n.operands[1], n.operands[2]};
}

// The step's temporaries: a tile of ids, of src rows and of base rows,
// for operands read from memory (the zero base is a tile too); the
// operands in SBUF read.
struct Temps {
    const Buf *ids = nullptr, *src = nullptr, *base = nullptr;
};

Temps buffers(StepBuffers &s, const Group &group) {
    const Node &n = s.graph.node(group.start);
    const Operands o = operands_of(n);
    const auto cols = static_cast<uint32_t>(n.type.elements() / n.type.shape[0]);
    s.require(group.start, "dma_scatter_add",
              neuron_insn_isa_minor(NEURON_OP_DMA_SCATTER_ADD, 0, 0));
    Temps t;
    if (is_memory(s.graph, o.index))
        t.ids = &s.temp(n.name + ".ids", DType::int32, P, 1);
    else
        s.read(o.index);
    if (is_memory(s.graph, o.src))
        t.src = &s.temp(n.name + ".rows", n.type.dtype, P, cols);
    else
        s.read(o.src);
    if (!o.base || is_memory(s.graph, *o.base))
        t.base = &s.temp(n.name + ".base", n.type.dtype, P, cols);
    else
        s.read(*o.base);
    return t;
}

void declare(StepBuffers &s, const Group &group) {
    buffers(s, group);
}

void emit(Emitter &e, const Group &group) {
    const Temps tmps = buffers(e, group);
    Kernel &k = e.kernel();
    const Graph &g = e.graph;
    const Node &n = g.node(group.start);
    const Operands o = operands_of(n);
    const auto rows = static_cast<uint32_t>(n.type.shape[0]);
    const auto cols = static_cast<uint32_t>(n.type.elements() / rows);
    const uint32_t pitch = cols * dtype_size(n.type.dtype);
    const ArgRef &out = e.arg(group.start);
    // The base, written whole into the output first.
    if (o.base && !is_memory(g, *o.base)) {
        const Buf &b = e.buf(*o.base);
        for (uint32_t t = 0; t < b.tiles(); t++)
            k.dma_store(out.at(uint64_t{t} * P * pitch, pitch), e.tile(b, t));
    } else {
        const Buf &tmp = *tmps.base;
        if (!o.base)
            k.memset(Engine::vector, e.rows(tmp, 0, P, 0, cols), 0.0f);
        for (uint32_t r0 = 0; r0 < rows; r0 += P) {
            const uint32_t cnt = std::min(P, rows - r0);
            const Tap tt = e.rows(tmp, 0, cnt, 0, cols);
            if (o.base)
                k.dma_load(tt, e.arg(*o.base).at(uint64_t{r0} * pitch, pitch));
            k.dma_store(out.at(uint64_t{r0} * pitch, pitch), tt);
        }
    }
    // Then src, a row tile at a time, in row order.
    const auto n_src = static_cast<uint32_t>(g.node(o.src).type.shape[0]);
    const Buf *ids = tmps.ids, *src = tmps.src;
    for (uint32_t r0 = 0; r0 < n_src; r0 += P) {
        const uint32_t cnt = std::min(P, n_src - r0);
        Tap it, st;
        if (ids) {
            it = e.rows(*ids, 0, cnt, 0, 1);
            k.dma_load(it, e.arg(o.index).at(uint64_t{r0} * 4, 4));
        } else {
            it = e.rows(e.buf(o.index), r0, cnt, 0, 1);
        }
        if (src) {
            st = e.rows(*src, 0, cnt, 0, cols);
            k.dma_load(st, e.arg(o.src).at(uint64_t{r0} * pitch, pitch));
        } else {
            st = e.rows(e.buf(o.src), r0, cnt, 0, cols);
        }
        k.dma_scatter_add(out.at(0, pitch), st, it, rows);
    }
}

// The additions in order, each exact in double; the device's error:
// k additions into an element, each rounded (fp32: u = 2^-24; bf16 also
// to bf16 after it, u = 2^-8): gamma_k = k u / (1 - k u) times the sum
// of the magnitudes that met there.
Expected reference(const Graph &g, const Node &n, const Values &ops) {
    const Operands o = operands_of(n);
    const size_t ib = n.operands.size() == 2 ? 0 : 1;
    const std::vector<double> &index = *ops[ib], &src = *ops[ib + 1];
    const auto rows = static_cast<size_t>(n.type.shape[0]);
    const size_t cols = static_cast<size_t>(n.type.elements()) / rows;
    Expected e;
    e.value = o.base ? *ops[0] : std::vector<double>(rows * cols, 0.0);
    std::vector<double> magnitude(e.value.size()), adds(e.value.size(), 0.0);
    for (size_t f = 0; f < e.value.size(); f++)
        magnitude[f] = std::fabs(e.value[f]);
    for (size_t i = 0; i < index.size(); i++) {
        const double id = index[i];
        if (!(id >= 0 && id < static_cast<double>(rows)))
            unsupported(
                g, n,
                fmt::format("index[{}] = {} is outside [0, {}): the device faults", i, id, rows));
        const auto r = static_cast<size_t>(id);
        for (size_t c = 0; c < cols; c++) {
            const double x = static_cast<float>(src[i * cols + c]);
            e.value[r * cols + c] += x;
            magnitude[r * cols + c] += std::fabs(x);
            adds[r * cols + c] += 1;
        }
    }
    const double u = n.type.dtype == DType::bf16 ? 0x1p-8 : 0x1p-24;
    e.bound.resize(e.value.size());
    for (size_t f = 0; f < e.value.size(); f++)
        e.bound[f] = adds[f] * u / (1 - adds[f] * u) * magnitude[f];
    return e;
}

// The operands' errors add up where their rows meet.
std::vector<double> carry(const Graph &, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    const Operands o = operands_of(n);
    const size_t ib = n.operands.size() == 2 ? 0 : 1;
    const std::vector<double> &index = *val[ib];
    const size_t cols = value.size() / static_cast<size_t>(n.type.shape[0]);
    std::vector<double> c = o.base ? *err[0] : std::vector<double>(value.size(), 0.0);
    for (size_t i = 0; i < index.size(); i++)
        for (size_t j = 0; j < cols; j++)
            c[static_cast<size_t>(index[i]) * cols + j] += (*err[ib + 1])[i * cols + j];
    return c;
}

std::vector<std::string> text_attributes(const Node &n) {
    if (n.operands.size() == 3)
        return {};
    return {fmt::format("dims=[{}]", n.dims[0])};
}

std::string mixes_rows(const Graph &, const Node &, int64_t) {
    return "index_add adds rows of src into the rows their ids name";
}

void split_rule(SplitRoles &s, uint32_t n) {
    if (s.any_split(s.graph.node(n)))
        s.refuse(n, "it adds rows of src into the rows their ids name");
    s.set_per_row(n, 0);
}

} // namespace

extern const KindLowering scatter_add_lowering{declare, emit};

extern const OpRecord index_add_record{
    .op = Op::index_add,
    .name = "index_add",
    .infer = infer,
    .kind = scatter_kind,
    .text_attributes = text_attributes,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .carry = carry,
    .split = split_rule,
};

} // namespace neuron::compiler::lower
