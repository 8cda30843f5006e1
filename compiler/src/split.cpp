// SPDX-License-Identifier: MIT
// Splitting a graph along the leading axis of its inputs (a batch or token
// split). A first walk gives every value its relation to that axis and
// refuses operators that mix its rows; then each part is the same graph
// rebuilt with its share of the rows. docs/compiler.md, "Several cores".
#include <neuron/compiler/split.hpp>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace neuron::compiler {

namespace {

/// A value's relation to the split: none (computed from constants alone,
/// the same in every part), or cut along its axis 0, where one row of the
/// inputs' leading axis is per_row rows of it.
struct Role {
    int64_t per_row = 0; ///< 0: not split
    bool split() const { return per_row > 0; }
};

class Splitter {
  public:
    explicit Splitter(const Graph &g) : g_(g), roles_(g.nodes().size()) {}

    int64_t analyse();
    Graph part(int64_t first, int64_t rows, const std::string &name) const;
    int64_t row_elements(uint32_t node) const {
        const Type &t = g_.node(node).type;
        return roles_[node].per_row * (t.elements() / t.shape.at(0));
    }

  private:
    [[noreturn]] void refuse(uint32_t node, const std::string &why) const;
    const Role &role(uint32_t node) const { return roles_[node]; }
    /// Operand @p o of node @p n whose axis 0 meets the split axis of a
    /// result whose leading extent is @p full: a constant is cut from then
    /// on; anything else that is not split itself is refused.
    void align(uint32_t n, uint32_t o, int64_t per_row, int64_t full);
    void use_whole(uint32_t n, uint32_t o);
    void elementwise(uint32_t n);
    void matmul(uint32_t n);
    void attention(uint32_t n);

    const Graph &g_;
    std::vector<Role> roles_;
    std::vector<bool> used_whole_; // constants used as they are
    int64_t rows_ = 0;
};

std::string shape_text(const Shape &s) {
    return fmt::format("[{}]", fmt::join(s, ", "));
}

void Splitter::refuse(uint32_t node, const std::string &why) const {
    throw GraphError(
        fmt::format("{}: not split along the leading axis: {}", describe(g_, g_.node(node)), why));
}

void Splitter::align(uint32_t n, uint32_t o, int64_t per_row, int64_t full) {
    const Node &x = g_.node(o);
    if (role(o).split()) {
        if (role(o).per_row != per_row)
            refuse(n, fmt::format("'{}' and the other operands are split in different steps "
                                  "({} and {} rows per input row)",
                                  x.name, role(o).per_row, per_row));
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
    roles_[o].per_row = per_row;
}

void Splitter::use_whole(uint32_t n, uint32_t o) {
    if (role(o).split())
        refuse(n,
               fmt::format("'{}' is split along an axis this operator combines", g_.node(o).name));
    used_whole_[o] = true;
}

void Splitter::elementwise(uint32_t n) {
    const Node &node = g_.node(n);
    const size_t rank = node.type.shape.size();
    int64_t per_row = 0;
    for (uint32_t o : node.operands)
        if (role(o).split()) {
            if (g_.node(o).type.shape.size() != rank)
                refuse(n, fmt::format("'{}' is split along its axis 0, which broadcasting "
                                      "moves off the result's axis 0",
                                      g_.node(o).name));
            per_row = role(o).per_row;
        }
    if (!per_row)
        return;
    for (uint32_t o : node.operands)
        if (g_.node(o).type.shape.size() == rank)
            align(n, o, per_row, node.type.shape[0]);
    roles_[n].per_row = per_row;
}

void Splitter::matmul(uint32_t n) {
    const Node &node = g_.node(n);
    const uint32_t a = node.operands[0], b = node.operands[1];
    const size_t ra = g_.node(a).type.shape.size(), rb = g_.node(b).type.shape.size();
    if (!role(a).split()) {
        if (role(b).split())
            refuse(n, "the second operand is split while the first is not");
        return;
    }
    if (ra == 2 && node.transpose_a)
        refuse(n, "the first operand's axis 0 is contracted (transpose_a)");
    if (rb == 2)
        use_whole(n, b); // rows of a against one matrix
    else
        align(n, b, role(a).per_row, g_.node(b).type.shape[0]); // batch dims
    roles_[n].per_row = role(a).per_row;
}

void Splitter::attention(uint32_t n) {
    const Node &node = g_.node(n);
    const uint32_t q = node.operands[0];
    const size_t rq = g_.node(q).type.shape.size();
    if (!role(q).split()) {
        for (uint32_t o : node.operands)
            if (role(o).split())
                refuse(n, fmt::format("'{}' is split while the queries are not", g_.node(o).name));
        return;
    }
    const int64_t per_row = role(q).per_row;
    for (size_t i = 1; i < node.operands.size(); i++) {
        const uint32_t o = node.operands[i];
        const size_t r = g_.node(o).type.shape.size();
        if (i < 3 && rq == 2) // queries split: every part attends to all keys
            use_whole(n, o);
        else if (i < 3 && r == 2)
            use_whole(n, o); // keys shared by the batch
        else if (r == rq)
            align(n, o, per_row, g_.node(q).type.shape[0]);
        else if (role(o).split())
            refuse(n, fmt::format("'{}' is split along an axis that broadcasting moves",
                                  g_.node(o).name));
    }
    roles_[n].per_row = per_row;
}

int64_t Splitter::analyse() {
    used_whole_.assign(g_.nodes().size(), false);
    for (uint32_t i = 0; i < g_.nodes().size(); i++) {
        const Node &n = g_.node(i);
        const bool any_split = std::any_of(n.operands.begin(), n.operands.end(),
                                           [&](uint32_t o) { return role(o).split(); });
        switch (n.op) {
        case Op::input:
            if (n.type.shape.empty())
                refuse(i, "a scalar input has no leading axis");
            if (!rows_)
                rows_ = n.type.shape[0];
            else if (n.type.shape[0] != rows_)
                refuse(i, fmt::format("its leading axis has {} rows, the first input's {}: "
                                      "every input is cut along its leading axis",
                                      n.type.shape[0], rows_));
            roles_[i].per_row = 1;
            break;
        case Op::constant:
            break;
        case Op::matmul:
            matmul(i);
            break;
        case Op::attention:
            attention(i);
            break;
        case Op::softmax:
        case Op::layer_norm:
        case Op::rms_norm:
            if (any_split && n.type.shape.size() < 2)
                refuse(i, "it normalises over the split axis");
            for (size_t k = 1; k < n.operands.size(); k++)
                use_whole(i, n.operands[k]);
            roles_[i] = role(n.operands[0]);
            break;
        case Op::reshape:
            if (any_split) {
                const Node &x = g_.node(n.operands[0]);
                const int64_t inner_in = x.type.elements() / x.type.shape[0];
                const int64_t inner_out = n.type.elements() / n.type.shape[0];
                const int64_t per_row = role(n.operands[0]).per_row;
                if ((per_row * inner_in) % inner_out)
                    refuse(i, fmt::format("one input row is {} elements of the operand, which "
                                          "is not a whole number of rows of {}",
                                          per_row * inner_in, shape_text(n.type.shape)));
                roles_[i].per_row = per_row * inner_in / inner_out;
            }
            break;
        case Op::transpose:
            if (any_split && n.dims.at(0) != 0)
                refuse(i, fmt::format("the permutation {} moves axis 0", shape_text(n.dims)));
            roles_[i] = role(n.operands[0]);
            break;
        case Op::slice:
        case Op::split:
        case Op::concat:
            for (uint32_t o : n.operands)
                if (any_split && !role(o).split())
                    refuse(i, fmt::format("'{}' is not split while another operand is",
                                          g_.node(o).name));
            if (any_split && n.axis == 0)
                refuse(i, "it cuts or joins along the split axis");
            if (any_split)
                roles_[i] = role(n.operands[0]);
            for (uint32_t o : n.operands)
                if (any_split && role(o).per_row != roles_[i].per_row)
                    refuse(i, "its operands are split in different steps");
            break;
        default: // binary operators and activations
            elementwise(i);
            break;
        }
    }
    if (!rows_)
        throw GraphError(fmt::format("graph '{}' has no inputs to split", g_.name()));
    for (uint32_t o : g_.outputs())
        if (!role(o).split())
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
        if (role(i).split())
            t.shape[0] = rows * role(i).per_row;
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
            if (role(i).split()) { // the part's rows of it
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
