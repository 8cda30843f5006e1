// SPDX-License-Identifier: MIT
// Splitting a graph along the leading axis of its inputs (a batch or token
// split). A first walk gives every value its relation to that axis and
// refuses operators that mix its rows; then each part is the same graph
// rebuilt with its share of the rows. docs/compiler.md, "Several cores".
#include <neuron/compiler/split.hpp>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "op_record.hpp"

namespace neuron::compiler {

namespace {

class Splitter final : public lower::SplitRoles {
  public:
    explicit Splitter(const Graph &g) : SplitRoles(g), g_(g), per_row_(g.nodes().size(), 0) {}

    int64_t analyse();
    Graph part(int64_t first, int64_t rows, const std::string &name) const;
    int64_t row_elements(uint32_t node) const {
        const Type &t = g_.node(node).type;
        return per_row_[node] * (t.elements() / t.shape.at(0));
    }

    int64_t per_row(uint32_t node) const override { return per_row_[node]; }
    void set_per_row(uint32_t node, int64_t per_row) override { per_row_[node] = per_row; }
    [[noreturn]] void refuse(uint32_t node, const std::string &why) const override;
    void align(uint32_t n, uint32_t o, int64_t per_row, int64_t full) override;
    void use_whole(uint32_t n, uint32_t o) override;
    void elementwise(uint32_t n) override;

  private:
    bool split(uint32_t node) const { return per_row_[node] > 0; }

    const Graph &g_;
    std::vector<int64_t> per_row_; // per value: rows per input row, 0 when not split
    std::vector<bool> used_whole_; // constants an operator took uncut
    int64_t rows_ = 0;
};

void Splitter::refuse(uint32_t node, const std::string &why) const {
    throw GraphError(
        fmt::format("{}: not split along the leading axis: {}", describe(g_, g_.node(node)), why));
}

void Splitter::align(uint32_t n, uint32_t o, int64_t per_row, int64_t full) {
    const Node &x = g_.node(o);
    if (split(o)) {
        if (per_row_[o] != per_row)
            refuse(n, fmt::format("'{}' and the other operands are split in different steps "
                                  "({} and {} rows per input row)",
                                  x.name, per_row_[o], per_row));
        return;
    }
    if (x.type.shape.empty() || x.type.shape[0] == 1)
        return; // broadcast along the split axis
    if (x.type.shape[0] != full)
        refuse(n, fmt::format("'{}' has {} rows on the split axis, the result {}", x.name,
                              x.type.shape[0], full));
    if (x.op != Op::constant)
        refuse(n, fmt::format("'{}' varies along the split axis but is computed from constants "
                              "alone (every part would need all of it)",
                              x.name));
    if (used_whole_[o])
        refuse(n, fmt::format("constant '{}' is also used whole, so it cannot be cut", x.name));
    per_row_[o] = per_row;
}

void Splitter::use_whole(uint32_t n, uint32_t o) {
    if (split(o))
        refuse(n,
               fmt::format("'{}' is split along an axis this operator combines", g_.node(o).name));
}

void Splitter::elementwise(uint32_t n) {
    const Node &node = g_.node(n);
    const size_t rank = node.type.shape.size();
    int64_t per_row = 0;
    for (uint32_t o : node.operands)
        if (split(o)) {
            if (g_.node(o).type.shape.size() != rank)
                refuse(n, fmt::format("'{}' is split along its axis 0, which broadcasting "
                                      "moves off the result's axis 0",
                                      g_.node(o).name));
            per_row = per_row_[o];
        }
    if (!per_row)
        return;
    for (uint32_t o : node.operands)
        if (g_.node(o).type.shape.size() == rank)
            align(n, o, per_row, node.type.shape[0]);
    per_row_[n] = per_row;
}

int64_t Splitter::analyse() {
    used_whole_.assign(g_.nodes().size(), false);
    for (uint32_t i = 0; i < g_.nodes().size(); i++) {
        const Node &n = g_.node(i);
        if (n.op == Op::input) {
            if (!rows_)
                rows_ = n.type.shape[0];
            else if (n.type.shape[0] != rows_)
                refuse(i, fmt::format("its leading axis has {} rows, the first input's {}: "
                                      "every input is cut along its leading axis",
                                      n.type.shape[0], rows_));
            per_row_[i] = 1;
        } else if (n.op != Op::constant) {
            const auto rule = lower::op_record(n.op).split;
            if (rule)
                rule(*this, i);
            else
                elementwise(i);
        }
        // A constant this operator took uncut must not be cut later.
        for (uint32_t o : n.operands)
            if (g_.node(o).op == Op::constant && !split(o))
                used_whole_[o] = true;
    }
    if (!rows_)
        throw GraphError(fmt::format("graph '{}' has no inputs to split", g_.name()));
    for (uint32_t o : g_.outputs())
        if (!split(o))
            refuse(o, "the output does not depend on the inputs' rows");
    return rows_;
}

Attrs attrs_of(const Node &n) {
    Attrs a;
    a.scalar = n.scalar;
    a.scalar_first = n.scalar_first;
    a.transpose_a = n.transpose_a;
    a.transpose_b = n.transpose_b;
    a.dims = n.dims;
    a.axis = n.axis;
    a.start = n.start;
    a.end = n.end;
    a.causal = n.causal;
    if (n.op == Op::layer_norm || n.op == Op::rms_norm)
        a.eps = n.eps;
    if (n.op == Op::attention)
        a.scale = n.scale;
    return a;
}

Graph Splitter::part(int64_t first, int64_t rows, const std::string &name) const {
    Graph p(name);
    std::vector<uint32_t> at(g_.nodes().size());
    const auto cut = [&](uint32_t i) {
        Type t = g_.node(i).type;
        if (split(i))
            t.shape[0] = rows * per_row_[i];
        return t;
    };
    for (uint32_t i = 0; i < g_.nodes().size(); i++) {
        const Node &n = g_.node(i);
        std::vector<uint32_t> operands;
        for (uint32_t o : n.operands)
            operands.push_back(at[o]);
        Attrs a = attrs_of(n);
        switch (n.op) {
        case Op::input:
            at[i] = p.input(n.name, cut(i));
            break;
        case Op::constant:
            if (split(i)) { // the part's rows of it
                const std::vector<float> all = constant_values(n);
                const int64_t per = row_elements(i);
                ConstantInit mine;
                mine.values.assign(all.begin() + first * per, all.begin() + (first + rows) * per);
                at[i] = p.constant(n.name, cut(i), std::move(mine));
            } else {
                at[i] = p.constant(n.name, n.type, n.init);
            }
            break;
        case Op::reshape:
            a.dims = cut(i).shape;
            at[i] = p.add(n.op, n.name, operands, a);
            break;
        case Op::split: {
            if (n.start != 0)
                break; // made with the first piece
            std::vector<std::string> names;
            std::vector<uint32_t> pieces;
            for (uint32_t j = i;
                 j < g_.nodes().size() && g_.node(j).op == Op::split &&
                 g_.node(j).operands == n.operands && (j == i || g_.node(j).start != 0);
                 j++) {
                names.push_back(g_.node(j).name);
                pieces.push_back(j);
            }
            Attrs s;
            s.axis = n.axis;
            s.dims = n.dims;
            const std::vector<uint32_t> made = p.split(names, operands.at(0), s);
            for (size_t k = 0; k < pieces.size(); k++)
                at[pieces[k]] = made[k];
            break;
        }
        default:
            at[i] = p.add(n.op, n.name, operands, a);
            break;
        }
    }
    for (uint32_t o : g_.outputs())
        p.mark_output(at[o]);
    return p;
}

} // namespace

Split split_rows(const Graph &g, int parts) {
    if (parts < 1)
        throw GraphError(fmt::format("graph '{}': {} parts (at least 1)", g.name(), parts));
    Splitter s(g);
    const int64_t rows = s.analyse();
    if (rows < parts)
        throw GraphError(fmt::format("graph '{}': {} rows on the inputs' leading axis cannot be "
                                     "split over {} cores",
                                     g.name(), rows, parts));
    Split out;
    for (uint32_t i = 0; i < g.nodes().size(); i++)
        if (g.node(i).op == Op::input)
            out.row_elements[g.node(i).name] = s.row_elements(i);
    for (uint32_t o : g.outputs())
        out.row_elements[g.node(o).name] = s.row_elements(o);
    int64_t first = 0;
    for (int k = 0; k < parts; k++) {
        const int64_t n = rows / parts + (k < rows % parts ? 1 : 0);
        out.parts.push_back(
            SplitPart{s.part(first, n, fmt::format("{}_part{}", g.name(), k)), first, n});
        first += n;
    }
    return out;
}

} // namespace neuron::compiler
