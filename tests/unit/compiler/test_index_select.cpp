// SPDX-License-Identifier: MIT
// index_select (ops/index_select.cpp): rows of a table in device memory
// gathered by int32 ids with DMA_GATHER, compiled, run through the device
// model and checked against the double-precision reference and against a
// direct copy of the rows, bit for bit: fp32, bf16, fp16 and int32 tables,
// input and constant tables, ids given and computed, repeated ids, result
// rows of 1, 77, 128 and 300 (beyond one row tile and not a multiple of
// it); the gather read by a position embedding's add; a table larger than
// SBUF, and rows in chunks on a core of little SBUF; an id outside the
// table faulting the job; refused for a computed table and an ISA 1.0
// target; the type errors and the text form.
#include <cstring>
#include <string>
#include <tuple>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/reference.hpp>
#include <neuron/compiler/text.hpp>

#include "harness.hpp"
#include "model_program.hpp"
#include "neuron_regs.h"

// cmocka last: it defines macros that clash with the standard library.
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

using namespace neuron;
using namespace neuron::compiler;

namespace {

Type T(DType dt, Shape s) {
    return Type{dt, std::move(s)};
}

// out = index_select(table, ids): @n ids into a [@v, @d] table, the table
// an input or a constant (@constant), the ids an input or computed from
// one (@computed: maximum(ids, 0), the same values in SBUF).
Graph gather_graph(DType dt, uint32_t v, uint32_t n, uint32_t d, bool constant, bool computed) {
    Graph g(std::string("index_select_") + to_string(dt) + "_" + std::to_string(v) + "x" +
            std::to_string(d) + "_n" + std::to_string(n) + (constant ? "_const" : "") +
            (computed ? "_computed" : ""));
    const uint32_t table = constant ? g.constant("table", T(dt, {v, d}), {{}, 17, 1.0f})
                                    : g.input("table", T(dt, {v, d}));
    uint32_t ids = g.input("ids", T(DType::int32, {n, 1}));
    if (computed) {
        Attrs zero;
        zero.scalar = 0.0f;
        ids = g.add(Op::maximum, "ids2", {ids}, zero);
    }
    g.mark_output(g.add(Op::index_select, "out", {table, ids}));
    return g;
}

// Ids with repeats (the first rows drawn from at most 40 rows), the first
// and last rows of the table among them.
harness::Inputs gather_inputs(const Graph &g, uint32_t v, uint64_t seed) {
    auto in = harness::make_inputs(g, seed);
    harness::Rng r(seed);
    for (float &x : in["ids"])
        x = static_cast<float>(r.below(v < 40 ? v : 40));
    in["ids"].front() = 0;
    in["ids"].back() = static_cast<float>(v - 1);
    if (auto t = in.find("table");
        t != in.end() && g.node(*g.find("table")).type.dtype == DType::int32)
        for (size_t i = 0; i < t->second.size(); i++) // integers up to 2^24, both signs
            t->second[i] = static_cast<float>(static_cast<int64_t>(r.below(1u << 25)) - (1 << 24));
    return in;
}

// The table as the device holds it: an input's values rounded to its
// dtype, a constant's values.
std::vector<float> table_values(const Graph &g, const harness::Inputs &in) {
    const Node &t = g.node(*g.find("table"));
    if (t.op == Op::constant)
        return constant_values(t);
    std::vector<float> v = in.at("table");
    for (float &x : v)
        x = round_to(t.type.dtype, x);
    return v;
}

// Row i of out is row ids[i] of the table, bit for bit.
void check_rows(const Graph &g, const harness::Inputs &in, const std::vector<float> &out,
                const std::vector<float> &ids) {
    const std::vector<float> table = table_values(g, in);
    const auto d = static_cast<size_t>(g.node(*g.find("table")).type.shape[1]);
    assert_int_equal(out.size(), ids.size() * d);
    for (size_t i = 0; i < ids.size(); i++)
        for (size_t c = 0; c < d; c++) {
            const float want = table[static_cast<size_t>(ids[i]) * d + c];
            if (std::memcmp(&out[i * d + c], &want, sizeof want) != 0)
                fail_msg("%s: out[%zu, %zu] = %g, row %g of the table has %g", g.name().c_str(), i,
                         c, static_cast<double>(out[i * d + c]), static_cast<double>(ids[i]),
                         static_cast<double>(want));
        }
}

void shapes(void **) {
    uint64_t seed = 9400;
    for (DType dt : {DType::fp32, DType::bf16, DType::fp16, DType::int32})
        for (auto [v, n, d] : {std::tuple{1u, 1u, 1u}, std::tuple{50u, 300u, 77u},
                               std::tuple{300u, 128u, 3u}, std::tuple{1000u, 77u, 129u}})
            for (bool constant : {false, true})
                for (bool computed : {false, true}) {
                    if (constant && dt == DType::int32)
                        continue; // constants are floats drawn in [-1, 1)
                    const Graph g = gather_graph(dt, v, n, d, constant, computed);
                    const auto in = gather_inputs(g, v, seed++);
                    const auto o = harness::run(harness::all_outputs(g), in);
                    check_rows(g, in, o.outputs.at("out"), in.at("ids"));
                    assert_true(harness::check_nodes(harness::all_outputs(g), in, o, g.name()) > 0);
                }
}

// A token embedding and its position embedding: y = wte[ids] + wpe, the
// add reading the gathered rows in SBUF; within the carried bound, and the
// gathered rows exact. On a core of 16 KiB of SBUF per partition (2 MiB)
// the rows run in chunks (of 128 rows in fp32, 256 in bf16): a 12 MiB
// table, 1500 tokens.
void position_add(void **) {
    for (auto [v, n, d, sbuf] :
         {std::tuple{50u, 300u, 77u, 0u}, std::tuple{3000u, 1500u, 1024u, (2u << 20) / 128}}) {
        for (DType dt : {DType::fp32, DType::bf16}) {
            Graph g(std::string("embed_") + to_string(dt) + "_" + std::to_string(n));
            const uint32_t wte = g.input("table", T(dt, {v, d}));
            const uint32_t ids = g.input("ids", T(DType::int32, {n, 1}));
            const uint32_t wpe = g.input("wpe", T(dt, {n, d}));
            const uint32_t x = g.add(Op::index_select, "x", {wte, ids});
            g.mark_output(x);
            g.mark_output(g.add(Op::add, "y", {x, wpe}));
            auto in = gather_inputs(g, v, 77 + n);
            harness::Rng r(n);
            for (float &id : in["ids"])
                id = static_cast<float>(r.below(v));
            CompileOptions o;
            if (sbuf)
                o.limits.sbuf_bytes = sbuf;
            const auto out = harness::run(g, in, o);
            if (sbuf)
                assert_non_null(std::strstr(out.compiled.plan.c_str(), "rows in chunks of "));
            check_rows(g, in, out.outputs.at("x"), in.at("ids"));
            assert_true(harness::check_nodes(g, in, out, g.name()) > 0);
            assert_true(harness::check_carried(g, in, out, g.name()) > 0);
        }
    }
}

// A table larger than the core's SBUF (28 MiB against 24 MiB): read where
// it is, row by row.
void large_table(void **) {
    const uint32_t v = 7000, n = 300, d = 1024;
    const Graph g = gather_graph(DType::fp32, v, n, d, false, false);
    auto in = harness::make_inputs(g, 3);
    harness::Rng r(3);
    for (float &id : in["ids"])
        id = static_cast<float>(r.below(v));
    in["ids"].back() = static_cast<float>(v - 1);
    assert_true(uint64_t{v} * d * 4 > uint64_t{CompileOptions{}.limits.sbuf_bytes} * 128);
    const auto o = harness::run(g, in);
    assert_null(std::strstr(o.compiled.plan.c_str(), "rows in chunks"));
    check_rows(g, in, o.outputs.at("out"), in.at("ids"));
}

// An id outside [0, V) faults the job with BINDING_RANGE: V itself, -1,
// and a large one, in the second row tile of 300.
void out_of_range(void **) {
    const uint32_t v = 10, n = 300, d = 5;
    const Graph g = gather_graph(DType::fp32, v, n, d, false, false);
    const Compiled c = compile(g);
    auto in = gather_inputs(g, v, 5);
    for (float bad : {10.0f, -1.0f, 1e6f}) {
        auto ids = in["ids"];
        ids[200] = bad;
        const std::map<std::string, std::vector<std::byte>> bytes{
            {"table", pack(DType::fp32, in.at("table"))}, {"ids", pack(DType::int32, ids)}};
        const model::Run run = model::run(c.program, bytes);
        if (run.result.status != NEURON_JOB_STATUS_BINDING_RANGE)
            fail_msg("id %g of %u rows: job status 0x%x, want BINDING_RANGE (0x%x)",
                     static_cast<double>(bad), v, run.result.status,
                     NEURON_JOB_STATUS_BINDING_RANGE);
    }
    // In range, the same program runs.
    const std::map<std::string, std::vector<std::byte>> ok{
        {"table", pack(DType::fp32, in.at("table"))}, {"ids", pack(DType::int32, in.at("ids"))}};
    assert_int_equal(model::run(c.program, ok).result.status, EXM_STATUS_OK);
    // The reference says so too.
    harness::Inputs badin = in;
    badin["ids"][7] = 10;
    try {
        evaluate(g, badin);
        fail_msg("an id of 10 into 10 rows was evaluated");
    } catch (const GraphError &e) {
        assert_non_null(
            std::strstr(e.what(), "index[7] = 10 is outside [0, 10): the device faults"));
    }
}

void refusals(void **) {
    // A table computed in SBUF.
    Graph g("computed_table");
    const uint32_t t = g.input("t", T(DType::fp32, {8, 4})),
                   ids = g.input("ids", T(DType::int32, {3, 1}));
    const uint32_t e = g.add(Op::exp, "e", {t});
    g.mark_output(g.add(Op::index_select, "out", {e, ids}));
    harness::expect_refused(
        g, {},
        "the table 'e' (exp) is computed in SBUF, but DMA_GATHER reads rows from "
        "device memory: make it a graph input or a constant");
    CompileOptions isa10;
    isa10.isa_version = 1u << 16;
    harness::expect_refused(
        gather_graph(DType::fp32, 4, 4, 4, false, false), isa10,
        "the lowering needs dma_gather, an instruction of ISA 1.1, but the target "
        "device implements ISA 1.0");
    harness::expect_parse_errors(
        {
            "graph b\ninput t: fp32[8, 4]\ninput i: int32[3]\ny = index_select(t, i)\n",
            "graph b\ninput t: fp32[8, 4]\ninput i: fp32[3, 1]\ny = index_select(t, i)\n",
            "graph b\ninput t: fp32[8, 4, 2]\ninput i: int32[3, 1]\ny = index_select(t, i)\n",
            "graph b\ninput t: fp32[8]\ninput i: int32[3, 1]\ny = index_select(t, i)\n",
            "graph b\ninput t: fp32[8, 4]\ninput i: int32[3, 1]\ny = index_select(t)\n",
        },
        {
            "index is an int32 column [N, 1] (one row id per row of the result)",
            "index is an int32 column [N, 1]",
            "the table is [V, D] (rank 2",
            "the table is [V, D] (rank 2",
            "takes 2 operand(s)",
        });
    const Graph p = parse("graph t\ninput t: bf16[9, 5]\ninput i: int32[3, 1]\n"
                          "y = index_select(t, i)\noutput y\n");
    assert_true(p.node(*p.find("y")).type == T(DType::bf16, {3, 5}));
    assert_true(parse(print(p)) == p);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shapes),      cmocka_unit_test(position_add),
        cmocka_unit_test(large_table), cmocka_unit_test(out_of_range),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
