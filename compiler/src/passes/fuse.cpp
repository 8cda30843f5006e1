// SPDX-License-Identifier: MIT
#include "fuse.hpp"

#include <algorithm>

#include "../op_record.hpp"

namespace neuron::compiler::lower {

FusionPlan fuse(const Graph &g, const Usage &usage, bool enabled) {
    const auto &nodes = g.nodes();
    FusionPlan plan;
    std::vector<Group> &groups = plan.groups;
    groups.assign(nodes.size(), Group{});
    std::vector<bool> taken(nodes.size(), false);
    auto single_consumer = [&](uint32_t v) -> std::optional<uint32_t> {
        if (usage.uses[v] != 1 || usage.is_output[v])
            return std::nullopt;
        for (uint32_t j = v + 1; j < nodes.size(); j++)
            for (uint32_t o : nodes[j].operands)
                if (o == v)
                    return j;
        return std::nullopt;
    };
    auto unary_step = [&](const Node &n) -> std::optional<Step> {
        const auto step = op_record(n.op).step;
        return step ? step(n) : std::nullopt;
    };
    for (uint32_t i = 0; i < nodes.size(); i++) {
        if (taken[i])
            continue;
        // Whether operand @v exists when the group that starts at node @i
        // runs: computed before it, or an input or constant, whatever its
        // place in the graph (the torch bridge declares a bias after the
        // matmul that reads it).
        auto ready = [&](uint32_t v) {
            return v < i || nodes[v].op == Op::input || nodes[v].op == Op::constant;
        };
        const Node &n = nodes[i];
        Group &p = groups[i];
        p.start = i;
        p.result = i;
        if (n.op == Op::input || n.op == Op::constant) {
            p.kind = Kind::none;
            continue;
        }
        // Data movement nobody reads (a piece of a split left unused) moves nothing.
        if (is_data_movement(n.op) && usage.uses[i] == 0 && !usage.is_output[i]) {
            p.kind = Kind::none;
            continue;
        }
        if (n.op == Op::matmul) {
            p.kind = Kind::matmul;
            uint32_t cur = i;
            auto next = enabled ? single_consumer(cur) : std::nullopt;
            // bias: add(h, b) with b a row vector of the output's columns
            if (next && nodes[*next].op == Op::add && !nodes[*next].scalar &&
                nodes[*next].type == n.type) {
                const Node &a = nodes[*next];
                uint32_t other = a.operands[0] == cur ? a.operands[1] : a.operands[0];
                const Type &bt = nodes[other].type;
                if (bt.dtype != DType::int32 && rows_of(bt) == 1 &&
                    bt.shape.back() == n.type.shape.back() && other != cur && ready(other)) {
                    p.bias = other;
                    p.fused.push_back(*next);
                    taken[*next] = true;
                    cur = *next;
                    next = single_consumer(cur);
                }
            }
            // literal affine steps, then an activation
            std::vector<Step> steps;
            std::vector<uint32_t> chain;
            auto look = next;
            // (x * scale) + bias, in that order, then f: ACTIVATE's f(x * scale + bias)
            // A bias of -0 keeps x * scale + bias = -0 for x * scale = -0.
            float scale = 1, bias = -0.0f;
            bool have_mul = false, have_add = false;
            while (look) {
                auto st = unary_step(nodes[*look]);
                if (!st)
                    break;
                if (st->kind == Step::act) {
                    steps.push_back(Step{Step::act, scale, bias, st->f});
                    chain.push_back(*look);
                    break;
                }
                if (st->kind != Step::affine)
                    break;
                if (st->a != 1) { // a multiplication
                    if (have_mul || have_add)
                        break;
                    scale = st->a;
                    have_mul = true;
                } else { // an addition
                    if (have_add)
                        break;
                    bias = st->b;
                    have_add = true;
                }
                chain.push_back(*look);
                look = single_consumer(*look);
            }
            if (!chain.empty()) {
                if (steps.empty()) // affine without an activation: a TENSOR_SCALAR evacuation
                    steps.push_back(Step{Step::affine, scale, bias});
                p.steps = steps;
                for (uint32_t c : chain) {
                    p.fused.push_back(c);
                    taken[c] = true;
                }
                cur = chain.back();
            } else if (next && nodes[*next].op == Op::add && !nodes[*next].scalar &&
                       nodes[*next].type == n.type) {
                const Node &a = nodes[*next];
                uint32_t other = a.operands[0] == cur ? a.operands[1] : a.operands[0];
                if (nodes[other].type == n.type && other != cur && ready(other)) {
                    p.residual = other;
                    p.fused.push_back(*next);
                    taken[*next] = true;
                    cur = *next;
                }
            }
            p.result = cur;
            continue;
        }
        if (auto st = unary_step(n)) {
            p.kind = Kind::elementwise;
            p.steps.push_back(*st);
            uint32_t cur = i;
            while (enabled) {
                auto next = single_consumer(cur);
                if (!next || nodes[*next].type != n.type)
                    break;
                auto s2 = unary_step(nodes[*next]);
                if (!s2 || nodes[*next].operands[0] != cur)
                    break;
                p.steps.push_back(*s2);
                p.fused.push_back(*next);
                taken[*next] = true;
                cur = *next;
            }
            p.result = cur;
            continue;
        }
        p.kind = op_record(n.op).kind(g, n);
    }
    // Chains of data movement become one gather from the chain's sources.
    auto moves = [&](uint32_t v) {
        return groups[v].kind == Kind::gather || groups[v].kind == Kind::alias ||
               groups[v].kind == Kind::view;
    };
    for (uint32_t i = 0; i < nodes.size(); i++) {
        if (taken[i] || !moves(i))
            continue;
        Group &p = groups[i];
        std::vector<uint32_t> chain{i};
        bool gathers = p.kind == Kind::gather;
        while (enabled) {
            auto next = single_consumer(chain.back());
            if (!next || taken[*next] || !moves(*next))
                break;
            // The gather runs where the chain starts: every other operand
            // of the next step (a concatenation's) must exist by then.
            const auto &ops = nodes[*next].operands;
            if (!std::all_of(ops.begin(), ops.end(), [&](uint32_t o) {
                    return o < i || nodes[o].op == Op::input || nodes[o].op == Op::constant ||
                           std::find(chain.begin(), chain.end(), o) != chain.end();
                }))
                break;
            gathers |= groups[*next].kind == Kind::gather;
            chain.push_back(*next);
        }
        if (!gathers)
            continue;
        p.kind = Kind::gather;
        p.result = chain.back();
        p.fused.assign(chain.begin() + 1, chain.end());
        for (uint32_t c : chain) {
            if (c != i)
                taken[c] = true;
            for (uint32_t o : nodes[c].operands)
                if (std::find(chain.begin(), chain.end(), o) == chain.end() &&
                    std::find(p.sources.begin(), p.sources.end(), o) == p.sources.end())
                    p.sources.push_back(o);
        }
    }
    for (uint32_t i = 0; i < nodes.size(); i++)
        if (taken[i])
            groups[i].kind = Kind::none;
    return plan;
}

} // namespace neuron::compiler::lower
