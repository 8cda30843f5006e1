// SPDX-License-Identifier: MIT
#include <neuron/compiler/reference.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "op_record.hpp"

namespace neuron::compiler {

namespace {
Expected attention_reference(const Graph &g, uint32_t node,
                             const std::vector<const std::vector<double> *> &operands);
bool has_decomposition(const Graph &g) {
    return std::any_of(g.nodes().begin(), g.nodes().end(),
                       [](const Node &n) { return lower::decomposes(n); });
}
} // namespace

double exact_result(DType t, double v) {
    return round_to(t, static_cast<float>(v));
}

Expected reference(const Graph &g, uint32_t node,
                   const std::vector<const std::vector<double> *> &ops) {
    const Node &n = g.node(node);
    if (n.op == Op::input || n.op == Op::constant)
        throw GraphError(fmt::format("'{}' is not computed", n.name));
    const auto own = lower::op_record(n.op).reference;
    if (!own)
        return attention_reference(g, node, ops);
    Expected e = own(g, n, ops);
    if (e.bound.empty())
        return e;
    // Results written as bf16 or fp16 add the rounding of hw/isa.md §6.
    if (n.type.dtype == DType::bf16 || n.type.dtype == DType::fp16) {
        const double rtol = n.type.dtype == DType::bf16 ? 1e-2 : 2e-3;
        for (size_t f = 0; f < e.value.size(); f++)
            e.bound[f] += rtol * std::fabs(e.value[f]) + 1e-3;
    }
    return e;
}

std::vector<std::vector<double>> evaluate(const Graph &g,
                                          const std::map<std::string, std::vector<float>> &inputs) {
    std::vector<std::vector<double>> v(g.nodes().size());
    if (has_decomposition(g)) { // as the operators it is made of
        const Graph d = g.decomposed();
        std::vector<std::vector<double>> all = evaluate(d, inputs);
        for (uint32_t i = 0; i < g.nodes().size(); i++)
            v[i] = std::move(all[*d.find(g.node(i).name)]);
        return v;
    }
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const Node &n = g.node(i);
        if (n.op == Op::input) {
            auto it = inputs.find(n.name);
            if (it == inputs.end() || static_cast<int64_t>(it->second.size()) != n.type.elements())
                throw GraphError(fmt::format("input '{}' ({}) not given or of the wrong size",
                                             n.name, to_string(n.type)));
            for (float x : it->second)
                v[i].push_back(round_to(n.type.dtype, x));
        } else if (n.op == Op::constant) {
            for (float x : constant_values(n))
                v[i].push_back(x);
        } else {
            std::vector<const std::vector<double> *> ops;
            for (uint32_t o : n.operands)
                ops.push_back(&v[o]);
            v[i] = reference(g, i, ops).value;
        }
    }
    return v;
}

namespace {

// The unit roundoff of a value stored as @p t (half an ulp, relative).
double unit_roundoff(DType t) {
    switch (t) {
    case DType::bf16:
        return 0x1p-8;
    case DType::fp16:
        return 0x1p-11;
    default:
        return 0x1p-24;
    }
}

// How far the operands' errors @p err (bounds on |device - value|, as
// @p val) can move node @p node of @p g, to first order and above.
std::vector<double> carried_raw(const Graph &g, uint32_t node, const std::vector<double> &value,
                                const std::vector<const std::vector<double> *> &val,
                                const std::vector<const std::vector<double> *> &err) {
    const Node &n = g.node(node);
    if (n.op == Op::input || n.op == Op::constant)
        return std::vector<double>(value.size(), 0);
    const auto carry = lower::op_record(n.op).carry;
    if (!carry) // evaluate_bounded() carries bounds through its decomposition
        throw GraphError(
            fmt::format("'{}': {} is carried as its decomposition", n.name, to_string(n.op)));
    return carry(g, n, value, val, err);
}

// carried_raw() with 0 x inf (an infinite error times a zero operand) as inf.
std::vector<double> carried(const Graph &g, uint32_t node, const std::vector<double> &value,
                            const std::vector<const std::vector<double> *> &val,
                            const std::vector<const std::vector<double> *> &err) {
    std::vector<double> c = carried_raw(g, node, value, val, err);
    for (auto &x : c)
        if (std::isnan(x))
            x = INFINITY;
    return c;
}

} // namespace

namespace {

// evaluate_bounded() from the values of @p g's inputs and constants in
// @p out (bound 0): every other node's value and bound.
void propagate(const Graph &g, std::vector<Expected> &out) {
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const Node &n = g.node(i);
        if (n.op == Op::input || n.op == Op::constant)
            continue;
        std::vector<const std::vector<double> *> val, err;
        for (uint32_t o : n.operands) {
            val.push_back(&out[o].value);
            err.push_back(&out[o].bound);
        }
        Expected own = reference(g, i, val);
        std::vector<double> b = carried(g, i, own.value, val, err);
        if (!is_data_movement(n.op)) {
            const double u = unit_roundoff(n.type.dtype);
            for (size_t f = 0; f < b.size(); f++) {
                const double v = own.value[f];
                if (!own.bound.empty())
                    b[f] += own.bound[f];
                else if (n.type.dtype == DType::int32)
                    b[f] += v == std::nearbyint(v) ? 0 : 0.5;
                else // the result rounded to fp32 and the dtype; subnormals
                    b[f] += (u + 0x1p-24) * (std::fabs(v) + b[f]) + 0x1p-126;
            }
        }
        out[i].value = std::move(own.value);
        out[i].bound = std::move(b);
    }
}

// The reference of attention node @p node: its decomposition computed from
// the operands, the bound carried through it from operands without error.
Expected attention_reference(const Graph &g, uint32_t node,
                             const std::vector<const std::vector<double> *> &operands) {
    const Node &n = g.node(node);
    Graph one(g.name());
    std::vector<uint32_t> in;
    const char *names[] = {"q", "k", "v", "mask"};
    for (size_t k = 0; k < n.operands.size(); k++)
        in.push_back(one.input(names[k], g.node(n.operands[k]).type));
    Attrs a;
    a.causal = n.causal;
    a.scale = n.scale;
    one.add(Op::attention, n.name, in, a);
    const Graph d = one.decomposed();
    std::vector<Expected> e(d.nodes().size());
    for (size_t k = 0; k < in.size(); k++) {
        e[k].value = *operands.at(k);
        e[k].bound.assign(e[k].value.size(), 0);
    }
    propagate(d, e);
    return std::move(e.back());
}

} // namespace

std::vector<Expected> evaluate_bounded(const Graph &g,
                                       const std::map<std::string, std::vector<float>> &inputs) {
    std::vector<Expected> out(g.nodes().size());
    if (has_decomposition(g)) { // through the operators it is made of, as compiled
        const Graph d = g.decomposed();
        std::vector<Expected> all = evaluate_bounded(d, inputs);
        for (uint32_t i = 0; i < g.nodes().size(); i++)
            out[i] = std::move(all[*d.find(g.node(i).name)]);
        return out;
    }
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const Node &n = g.node(i);
        if (n.op != Op::input && n.op != Op::constant)
            continue;
        std::vector<float> v;
        if (n.op == Op::constant) {
            v = constant_values(n);
        } else if (auto it = inputs.find(n.name);
                   it != inputs.end() &&
                   static_cast<int64_t>(it->second.size()) == n.type.elements()) {
            for (float x : it->second)
                v.push_back(round_to(n.type.dtype, x));
        } else {
            throw GraphError(fmt::format("input '{}' ({}) not given or of the wrong size", n.name,
                                         to_string(n.type)));
        }
        out[i].value.assign(v.begin(), v.end());
        out[i].bound.assign(v.size(), 0);
    }
    propagate(g, out);
    return out;
}

namespace {

// The own bound of the operator that computes node @p node's values, at
// the reference's operands: the node's own, or for data movement its
// operands' moved with the values (an input or constant: 0). Adds the
// operators it comes from to @p by.
std::vector<double> own_bound(const Graph &g, uint32_t node, const std::vector<Expected> &ref,
                              std::vector<uint32_t> &by) {
    const Node &n = g.node(node);
    const std::vector<double> &value = ref.at(node).value;
    if (n.op == Op::input || n.op == Op::constant)
        return std::vector<double>(value.size(), 0);
    if (is_data_movement(n.op)) {
        std::vector<std::vector<double>> moved;
        for (uint32_t o : n.operands)
            moved.push_back(own_bound(g, o, ref, by));
        std::vector<const std::vector<double> *> operands;
        for (const auto &m : moved)
            operands.push_back(&m);
        return reference(g, node, operands).value;
    }
    if (std::find(by.begin(), by.end(), node) == by.end())
        by.push_back(node);
    std::vector<const std::vector<double> *> operands;
    for (uint32_t o : n.operands)
        operands.push_back(&ref.at(o).value);
    Expected own = reference(g, node, operands);
    if (!own.bound.empty())
        return std::move(own.bound);
    std::vector<double> b(value.size());
    for (size_t f = 0; f < b.size(); f++)
        b[f] = std::fabs(exact_result(n.type.dtype, value[f]) - value[f]);
    return b;
}

} // namespace

OutputBound output_bound(const Graph &g, uint32_t node, const std::vector<Expected> &ref) {
    const Expected &e = ref.at(node);
    OutputBound r;
    for (size_t f = 0; f < e.bound.size(); f++) {
        r.carried = std::isnan(e.bound[f]) ? INFINITY : std::max(r.carried, e.bound[f]);
        r.largest = std::max(r.largest, std::fabs(e.value[f]));
    }
    if (r.carried <= r.largest) {
        r.bound = e.bound;
        return r;
    }
    r.own = true;
    r.bound = own_bound(g, node, ref, r.computed_by);
    return r;
}

Comparison compare(std::span<const float> device, std::span<const double> reference,
                   std::span<const double> bound, size_t list) {
    if (reference.size() != device.size() || bound.size() != device.size())
        throw std::invalid_argument(
            fmt::format("compare: {} device values, {} reference values and {} bounds",
                        device.size(), reference.size(), bound.size()));
    Comparison c;
    c.elements = device.size();
    std::vector<std::pair<double, size_t>> beyond; // (error / bound, element)
    for (size_t f = 0; f < device.size(); f++) {
        const double r = reference[f], d = device[f], b = bound[f];
        if (!std::isfinite(b)) {
            c.unchecked++;
            continue;
        }
        const bool same = d == r || (std::isnan(d) && std::isnan(r));
        const double err = same ? 0 : std::fabs(d - r);
        const double ratio = same ? 0 : (std::isnan(err) ? INFINITY : err / b);
        if (!same && !(err <= b)) {
            c.beyond++;
            beyond.emplace_back(ratio, f);
        }
        if (!std::isnan(err))
            c.max_error = std::max(c.max_error, err);
        if (ratio > c.worst_ratio) {
            c.worst_ratio = ratio;
            c.worst = f;
        }
    }
    const size_t show = std::min(list, beyond.size());
    std::partial_sort(beyond.begin(), beyond.begin() + static_cast<std::ptrdiff_t>(show),
                      beyond.end(), [](const auto &x, const auto &y) {
                          return x.first > y.first || (x.first == y.first && x.second < y.second);
                      });
    for (size_t i = 0; i < show; i++)
        c.worst_beyond.push_back(beyond[i].second);
    return c;
}

std::vector<float> seeded_values(const Type &t, uint64_t seed) {
    Node n;
    n.op = Op::constant;
    n.type = Type{t.dtype == DType::int32 ? DType::fp32 : t.dtype, t.shape};
    n.init.seed = seed;
    std::vector<float> v = constant_values(n);
    if (t.dtype == DType::int32)
        for (auto &x : v)
            x = round_to(DType::int32, x * 100);
    return v;
}

std::map<std::string, std::vector<float>> seeded_inputs(const Graph &g, uint64_t seed) {
    std::map<std::string, std::vector<float>> in;
    uint64_t position = 0;
    for (const Node &n : g.nodes())
        if (n.op == Op::input)
            in[n.name] = seeded_values(n.type, seed + position++);
    return in;
}

} // namespace neuron::compiler
