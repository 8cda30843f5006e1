// SPDX-License-Identifier: MIT
#include "harness.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <neuron/compiler/reference.hpp>
#include <neuron/compiler/text.hpp>

#include "model_program.hpp"
#include "sync_check.hpp"

// cmocka last: it defines macros that clash with the standard library.
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace harness {

using namespace neuron::compiler;

Inputs make_inputs(const Graph &g, uint64_t seed) {
    Inputs in = seeded_inputs(g, seed);
    for (auto &[name, v] : in)
        if (name.starts_with("den"))
            for (auto &x : v)
                x = std::copysign(0.5f + std::fabs(x), x);
    return in;
}

Graph all_outputs(const Graph &g) {
    Graph a = g;
    for (uint32_t i = 0; i < a.nodes().size(); i++) {
        Op op = a.node(i).op;
        bool out = false;
        for (uint32_t o : a.outputs())
            out |= o == i;
        if (op != Op::input && op != Op::constant && !out)
            a.mark_output(i);
    }
    return a;
}

Outcome run(const Graph &g, const Inputs &in, const CompileOptions &opt) {
    std::optional<Compiled> c;
    try {
        c.emplace(compile(g, opt));
    } catch (const std::exception &e) {
        fail_msg("compiling '%s': %s", g.name().c_str(), e.what());
    }
    size_t pairs = 0;
    std::string race = model::unordered_conflict(c->program, &pairs);
    if (!race.empty())
        fail_msg("'%s': %s", g.name().c_str(), race.c_str());
    std::map<std::string, std::vector<std::byte>> bytes;
    for (const Node &n : g.nodes())
        if (n.op == Op::input)
            bytes[n.name] = pack(n.type.dtype, in.at(n.name));
    model::Run r = model::run(c->program, bytes);
    if (r.result.status != EXM_STATUS_OK)
        fail_msg("'%s': job status 0x%x, info %u, engine %u", g.name().c_str(), r.result.status,
                 r.result.info, r.result.fault_engine);
    Outcome o{{}, std::move(*c), r.result.cycles};
    for (uint32_t i : g.outputs()) {
        const Node &n = g.node(i);
        const auto &b = r.outputs.at(n.name);
        o.outputs[n.name] = unpack(n.type.dtype, b.data(), static_cast<size_t>(n.type.elements()));
    }
    return o;
}

size_t check_nodes(const Graph &g, const Inputs &in, const Outcome &o, const std::string &what) {
    std::vector<std::vector<double>> value(g.nodes().size());
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const Node &n = g.node(i);
        if (n.op == Op::input)
            for (float x : in.at(n.name))
                value[i].push_back(round_to(n.type.dtype, x));
        else if (n.op == Op::constant)
            for (float x : constant_values(n))
                value[i].push_back(x);
        else if (auto it = o.outputs.find(n.name); it != o.outputs.end())
            value[i].assign(it->second.begin(), it->second.end());
    }
    size_t checked = 0;
    for (uint32_t i : g.outputs()) {
        const Node &n = g.node(i);
        std::vector<const std::vector<double> *> ops;
        bool known = true;
        for (uint32_t op : n.operands) {
            known &= !value[op].empty();
            ops.push_back(&value[op]);
        }
        if (!known)
            fail_msg("%s: '%s' has an operand that is not an output: use all_outputs()",
                     what.c_str(), n.name.c_str());
        Expected e = reference(g, i, ops);
        const std::vector<float> &got = o.outputs.at(n.name);
        // An exactly computed value: bit for bit what the device stores.
        const bool exact = e.bound.empty();
        if (exact) {
            e.bound.assign(got.size(), 0);
            for (auto &v : e.value)
                v = exact_result(n.type.dtype, v);
        }
        const Comparison c = compare(got, e.value, e.bound);
        checked += got.size();
        if (c.beyond || c.unchecked) {
            const size_t w = c.beyond ? c.worst : 0;
            fail_msg("%s: '%s' (%s, %s): %zu of %zu elements beyond the bound, %zu without a "
                     "finite bound; worst element %zu: got %.9g, reference %.9g, bound %s",
                     what.c_str(), n.name.c_str(), to_string(n.op), to_string(n.type).c_str(),
                     c.beyond, got.size(), c.unchecked, w, static_cast<double>(got[w]), e.value[w],
                     exact ? "exact" : std::to_string(e.bound[w]).c_str());
        }
    }
    return checked;
}

size_t check_carried(const Graph &g, const Inputs &in, const Outcome &o, const std::string &what) {
    const std::vector<Expected> e = evaluate_bounded(g, in);
    size_t checked = 0;
    for (uint32_t i : g.outputs()) {
        const Node &n = g.node(i);
        const std::vector<float> &got = o.outputs.at(n.name);
        const Comparison c = compare(got, e[i].value, e[i].bound);
        checked += c.elements - c.unchecked;
        if (c.beyond)
            fail_msg("%s: '%s' (%s, %s): %zu elements beyond the bound carried through the "
                     "graph; worst element %zu: got %.9g, reference %.9g, bound %.3g",
                     what.c_str(), n.name.c_str(), to_string(n.op), to_string(n.type).c_str(),
                     c.beyond, c.worst, static_cast<double>(got[c.worst]), e[i].value[c.worst],
                     e[i].bound[c.worst]);
    }
    return checked;
}

void expect_refused(const Graph &g, const CompileOptions &o, const char *why) {
    try {
        compile(g, o);
        fail_msg("%s compiled; expected: %s", g.name().c_str(), why);
    } catch (const GraphError &e) {
        if (!std::strstr(e.what(), why))
            fail_msg("%s: '%s' does not say '%s'", g.name().c_str(), e.what(), why);
    }
}

void expect_parse_errors(const std::vector<const char *> &texts,
                         const std::vector<const char *> &whys) {
    assert_int_equal(texts.size(), whys.size());
    for (size_t i = 0; i < texts.size(); i++) {
        try {
            parse(texts[i]);
            fail_msg("parsed: %s", texts[i]);
        } catch (const std::exception &e) {
            if (!std::strstr(e.what(), whys[i]))
                fail_msg("'%s' does not say '%s'", e.what(), whys[i]);
        }
    }
}

} // namespace harness
