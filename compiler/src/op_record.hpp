// SPDX-License-Identifier: MIT
// One record per operator, registered in one table (ops/registry.cpp): what
// the passes ask of an operator, in place of a switch over Op in each.
// The records are in compiler/src/ops/, one file per operator or family.
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <neuron/compiler/reference.hpp>

#include "lowering.hpp"

namespace neuron::compiler::lower {

class Emitter;
class StepBuffers;

/// How a group of one Kind is lowered: the buffers its step needs, and
/// its instructions. declare() is what the memory plan runs; emit()
/// declares the same buffers again (getting the planned ones back) and
/// records the instructions.
struct KindLowering {
    void (*declare)(StepBuffers &, const Group &);
    void (*emit)(Emitter &, const Group &);
};

/// Where an element of a data-movement result comes from: an operand and
/// its flat index.
using Source = std::pair<uint32_t, int64_t>;

/// What type inference sees of a node that Graph::add() makes.
struct InferContext {
    Node &node;                     ///< name, op, operands; the attributes the operator keeps
    const Attrs &attrs;             ///< as given
    std::vector<const Type *> in;   ///< the operands' types
    std::vector<std::string> names; ///< the operands' names
    /// The error naming the node, its operands' types and @p why.
    GraphError fail(const std::string &why) const;
    void arity(size_t lo, size_t hi) const;
    void same_dtype() const;
    void floating() const;
    /// @p axis of rank @p rank, negative ones counted from the end.
    int64_t norm_axis(int64_t axis, size_t rank) const;
};

/// "[1, 128, 768]".
std::string shape_text(const Shape &s);

/// The operands' values (or their errors) of a node, row-major, in double.
using Values = std::vector<const std::vector<double> *>;

inline bool all_zero(const std::vector<double> &v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return x == 0; });
}

struct OpRecord {
    Op op;
    const char *name; ///< in the text form
    /// The result's type from the operands'; sets the attributes the
    /// operator keeps in the node; throws GraphError (InferContext::fail)
    /// when they do not fit the operator.
    Type (*infer)(InferContext &) = nullptr;
    /// How a group that this node starts is lowered; throws GraphError
    /// naming the node and why when it is not.
    Kind (*kind)(const Graph &, const Node &) = nullptr;
    /// The node as one step of an elementwise chain or of a matmul's
    /// epilogue, when it is one (an activation, a literal operation).
    std::optional<Step> (*step)(const Node &) = nullptr;
    /// A binary operator: the ALU operation that computes it.
    AluOp alu = AluOp::none;
    /// Data movement: where element f of the result comes from.
    Source (*source)(const Graph &, const Node &, int64_t f) = nullptr;
    /// Rows in chunks: operand @p k is a weight or row operand (a graph
    /// input or constant read whole, resident through every chunk) rather
    /// than read row by row. nullptr: every operand is read row by row.
    bool (*whole_operand)(const Graph &, const Node &, size_t k) = nullptr;
    /// Rows in chunks: why a row of the result does not depend on the same
    /// row of the operands read row by row (@p rows rows), or "". nullptr:
    /// it does.
    std::string (*mixes_rows)(const Graph &, const Node &, int64_t rows) = nullptr;
    /// The node in double from its operands' values (reference.hpp,
    /// docs/compiler.md "Numerics"): the value, and per element the error
    /// the device may make computing it before a bf16 or fp16 result is
    /// rounded (empty when the fp32 operation is exact). nullptr: the
    /// operator is computed as its decomposition (Graph::decomposed()).
    Expected (*reference)(const Graph &, const Node &, const Values &operands) = nullptr;
    /// How far the operands' errors @p err move the node's @p value, to
    /// first order and above.
    std::vector<double> (*carry)(const Graph &, const Node &, const std::vector<double> &value,
                                 const Values &val, const Values &err) = nullptr;
    /// An operator made of others (Graph::decomposed()): adds them to
    /// @p into, reading @p operands (nodes of @p into), and returns the node
    /// that stands for @p n, named as @p n.
    uint32_t (*decompose)(Graph &into, const Node &n,
                          const std::vector<uint32_t> &operands) = nullptr;
};

const OpRecord &op_record(Op op);
/// Every operator's record, in the order of Op.
std::span<const OpRecord *const> op_records();
/// The first row of slice or split piece @p n in its operand's row layout,
/// when the piece is whole consecutive rows of it (it cuts an axis other
/// than the last, after axes of size 1), else -1.
int64_t first_row(const Node &n);
/// nullptr for Kind::none.
const KindLowering *kind_lowering(Kind kind);

} // namespace neuron::compiler::lower
