// SPDX-License-Identifier: MIT
// index_select(table, index): rows of a table gathered by their ids along
// axis 0, PyTorch's index_select(table, 0, index) and embedding's forward.
// table is [V, D] (fp32, bf16, fp16 or int32) in device memory, a graph
// input or a constant; index is int32 [N, 1] (a column: one row id per row
// of the result); the result is [N, D] of the table's dtype: row i is row
// index[i] of the table, copied bit for bit.
//
// Per row tile of the result one DMA_GATHER (ISA 1.1) with its tile of ids:
// partition p receives the table's row idx[p]. The table is read where it
// is, never loaded into SBUF, so a table larger than SBUF gathers as a
// small one does; the result is an ordinary SBUF value in the row layout,
// read by what follows (a position embedding's add) and, beyond SBUF,
// computed in chunks of rows like the elementwise operators (its row r
// depends on row r of the index alone). An id outside [0, V) faults the
// job (BINDING_RANGE): the device never reads a row that is not there.
#include "../op_record.hpp"

#include <limits>

#include "../passes/emitter.hpp"
#include "neuron_isa.h"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    c.arity(2, 2);
    const Type &table = *c.in[0], &index = *c.in[1];
    if (index.dtype != DType::int32 || index.shape.size() != 2 || index.shape[1] != 1)
        throw c.fail("index is an int32 column [N, 1] (one row id per row of the result)");
    if (table.shape.size() != 2)
        throw c.fail("the table is [V, D] (rank 2: reshape a table of more axes to [V, D] first, "
                     "then the result back)");
    if (table.dtype == DType::u8)
        throw c.fail("the table is fp32, bf16, fp16 or int32, not a mask");
    Type out = table;
    out.shape[0] = index.shape[0];
    return out;
}

bool is_memory(const Graph &g, uint32_t v) {
    const Op op = g.node(v).op;
    return op == Op::input || op == Op::constant;
}

Kind gather_rows_kind(const Graph &g, const Node &n) {
    const Node &table = g.node(n.operands[0]);
    if (!is_memory(g, n.operands[0]))
        unsupported(g, n,
                    fmt::format("the table '{}' ({}) is computed in SBUF, but DMA_GATHER reads "
                                "rows from device memory: make it a graph input or a constant",
                                table.name, to_string(table.op)));
    if (table.type.shape[0] > std::numeric_limits<int32_t>::max())
        unsupported(g, n, "a table of more than 2^31 - 1 rows (the ids are int32)");
    return Kind::gather_rows;
}

void declare(StepBuffers &s, const Group &group) {
    const Node &n = s.graph.node(group.start);
    s.require(group.start, "dma_gather", neuron_insn_isa_minor(NEURON_OP_DMA_GATHER, 0, 0));
    s.read(n.operands[1]); // the ids, in the row layout; the table stays in memory
}

void emit(Emitter &e, const Group &group) {
    declare(e, group);
    Kernel &k = e.kernel();
    const Node &n = e.graph.node(group.start);
    const Node &table = e.graph.node(n.operands[0]);
    const auto rows = static_cast<uint32_t>(table.type.shape[0]);
    const uint32_t pitch = static_cast<uint32_t>(table.type.shape[1]) * dtype_size(n.type.dtype);
    const Buf &out = e.buf(group.start), &ids = e.buf(n.operands[1]);
    const DramRef t = e.arg(n.operands[0]).at(0, pitch);
    for (uint32_t i = 0; i < out.tiles(); i++)
        k.dma_gather(e.tile(out, i), t, e.tile(ids, i), rows);
}

// An exact copy: row i of the result is row index[i] of the table.
Expected reference(const Graph &g, const Node &n, const Values &ops) {
    const std::vector<double> &table = *ops[0], &index = *ops[1];
    const Type &tt = g.node(n.operands[0]).type;
    const auto rows = static_cast<size_t>(tt.shape[0]);
    const auto cols = static_cast<size_t>(tt.shape[1]);
    Expected e;
    e.value.resize(index.size() * cols);
    for (size_t i = 0; i < index.size(); i++) {
        const double id = index[i];
        if (!(id >= 0 && id < static_cast<double>(rows)))
            unsupported(
                g, n,
                fmt::format("index[{}] = {} is outside [0, {}): the device faults", i, id, rows));
        const auto r = static_cast<size_t>(id);
        std::copy_n(table.begin() + static_cast<std::ptrdiff_t>(r * cols), cols,
                    e.value.begin() + static_cast<std::ptrdiff_t>(i * cols));
    }
    return e;
}

// The table's errors, moved with its rows.
std::vector<double> carry(const Graph &g, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    const std::vector<double> &index = *val[1];
    const auto cols = static_cast<size_t>(g.node(n.operands[0]).type.shape[1]);
    std::vector<double> c(value.size());
    for (size_t i = 0; i < index.size(); i++)
        std::copy_n(err[0]->begin() +
                        static_cast<std::ptrdiff_t>(index[i]) * static_cast<std::ptrdiff_t>(cols),
                    cols, c.begin() + static_cast<std::ptrdiff_t>(i * cols));
    return c;
}

// In chunks of rows, the table is read whole (from memory) by every chunk.
bool table_operand(const Graph &, const Node &, size_t k) {
    return k == 0;
}

void split_rule(SplitRoles &s, uint32_t n) {
    const Node &node = s.graph.node(n);
    s.use_whole(n, node.operands[0]);
    s.set_per_row(n, s.per_row(node.operands[1]));
}

} // namespace

extern const KindLowering gather_rows_lowering{declare, emit};

extern const OpRecord index_select_record{
    .op = Op::index_select,
    .name = "index_select",
    .infer = infer,
    .kind = gather_rows_kind,
    .whole_operand = table_operand,
    .reference = reference,
    .carry = carry,
    .split = split_rule,
};

} // namespace neuron::compiler::lower
