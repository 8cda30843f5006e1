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
#include "shape.hpp"

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

/// The operands' values (or their errors) of a node, row-major, in double.
using Values = std::vector<const std::vector<double> *>;

inline bool all_zero(const std::vector<double> &v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return x == 0; });
}

/// What an operator's rule for split_rows() works with (split.cpp): each
/// value's relation to the split along the inputs' leading axis.
class SplitRoles {
  public:
    explicit SplitRoles(const Graph &g) : graph(g) {}
    SplitRoles(const SplitRoles &) = delete;
    SplitRoles &operator=(const SplitRoles &) = delete;
    virtual ~SplitRoles() = default;
    /// Rows of @p node per row of the inputs' leading axis; 0: not split.
    virtual int64_t per_row(uint32_t node) const = 0;
    virtual void set_per_row(uint32_t node, int64_t per_row) = 0;
    [[noreturn]] virtual void refuse(uint32_t node, const std::string &why) const = 0;
    /// Operand @p o of node @p n whose axis 0 meets the split axis of a
    /// result whose leading extent is @p full: a constant is cut from then
    /// on; anything else that is not split itself is refused.
    virtual void align(uint32_t n, uint32_t o, int64_t per_row, int64_t full) = 0;
    /// Operand @p o of node @p n is needed whole in every part.
    virtual void use_whole(uint32_t n, uint32_t o) = 0;
    /// Node @p n works element by element (broadcasting included).
    virtual void elementwise(uint32_t n) = 0;
    bool any_split(const Node &n) const {
        return std::any_of(n.operands.begin(), n.operands.end(),
                           [&](uint32_t o) { return per_row(o) > 0; });
    }
    /// Node @p n computes along the last axis of its first operand's rows
    /// (softmax, the norms); its other operands (weights) are whole.
    void normalises_last_axis(uint32_t n) {
        const Node &node = graph.node(n);
        if (any_split(node) && node.type.shape.size() < 2)
            refuse(n, "it normalises over the split axis");
        for (size_t k = 1; k < node.operands.size(); k++)
            use_whole(n, node.operands[k]);
        set_per_row(n, per_row(node.operands[0]));
    }

    const Graph &graph;
};

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
    /// The node's own attributes as the text form writes them, key=value
    /// (a literal operand, transpose_a, transpose_b and causal are written
    /// for any operator that has them).
    std::vector<std::string> (*text_attributes)(const Node &) = nullptr;
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
    /// An operator with a decomposition whose node @p n is lowered as it
    /// is (the form its decomposition is made of). nullptr: every node of
    /// the operator is decomposed.
    bool (*primitive)(const Node &n) = nullptr;
    /// Operand @p k of node @p n (a graph input or constant) may be left in
    /// device memory when SBUF is short: the lowering then reads it by DMA
    /// itself (StepBuffers::streamed). nullptr: only as a matmul's weight.
    bool (*streams_operand)(const Node &n, size_t k) = nullptr;
    /// split_rows(): node @p node's relation to the split from its
    /// operands', or a refusal naming why its rows cannot be split.
    /// nullptr: it works element by element (SplitRoles::elementwise).
    void (*split)(SplitRoles &, uint32_t node) = nullptr;
};

const OpRecord &op_record(Op op);
/// Node @p n is replaced by its decomposition (Graph::decomposed()).
inline bool decomposes(const Node &n) {
    const OpRecord &r = op_record(n.op);
    return r.decompose && !(r.primitive && r.primitive(n));
}
/// Every operator's record, in the order of Op.
std::span<const OpRecord *const> op_records();
/// The first row of slice or split piece @p n in its operand's row layout,
/// when the piece is whole consecutive rows of it (it cuts an axis other
/// than the last, after axes of size 1), else -1.
int64_t first_row(const Node &n);
/// nullptr for Kind::none.
const KindLowering *kind_lowering(Kind kind);

} // namespace neuron::compiler::lower
