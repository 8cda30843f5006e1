// SPDX-License-Identifier: MIT
// The operators on ISA 1.2's RANDOM and DMA_SCATTER_ADD: dropout and
// dropout_mask (ops/dropout.cpp) and index_add (ops/index_add.cpp),
// compiled, run through the device model and checked against the
// double-precision reference (bit for bit for dropout, within the carried
// bound for index_add), in fp32 and bf16, on odd shapes, in chunks of rows
// and with operands streamed from device memory; the mask's keep fraction,
// its reproducibility and its dependence on seed and offset; refused for
// an ISA 1.1 target and in the forms the lowering does not take.
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/reference.hpp>
#include <neuron/compiler/text.hpp>

#include "harness.hpp"

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

uint64_t plan_peak(const Compiled &c) {
    return std::strtoull(c.plan.c_str() + std::strlen("SBUF: "), nullptr, 10);
}

// y = dropout(x, seed), m = dropout_mask(x, seed), both outputs.
Graph dropout_graph(DType dt, const Shape &s, float p) {
    Graph g("dropout_" + std::string(to_string(dt)));
    const uint32_t x = g.input("x", T(dt, s)), seed = g.input("seed", T(DType::int32, {4}));
    Attrs a;
    a.p = p;
    g.mark_output(g.add(Op::dropout, "y", {x, seed}, a));
    g.mark_output(g.add(Op::dropout_mask, "m", {x, seed}, a));
    return g;
}

// The device's y and m against the reference bit for bit; y is x times
// the mask times 1 / (1 - p); returns the kept fraction.
double check_dropout(const Graph &g, const harness::Inputs &in, const harness::Outcome &o,
                     float p) {
    assert_true(harness::check_nodes(g, in, o, g.name()) > 0);
    const auto &y = o.outputs.at("y"), &m = o.outputs.at("m"), &x = in.at("x");
    const DType dt = g.node(*g.find("x")).type.dtype;
    size_t kept = 0;
    for (size_t i = 0; i < m.size(); i++) {
        assert_true(m[i] == 0.0f || m[i] == 1.0f);
        kept += m[i] != 0;
        const float want = round_to(dt, x[i] * m[i] * (1.0f / (1.0f - p)));
        if (y[i] != want)
            fail_msg("%s: y[%zu] = %g, x %g mask %g: want %g", g.name().c_str(), i,
                     static_cast<double>(y[i]), static_cast<double>(x[i]),
                     static_cast<double>(m[i]), static_cast<double>(want));
    }
    return static_cast<double>(kept) / static_cast<double>(m.size());
}

void dropout_shapes(void **) {
    uint64_t seed = 9100;
    for (DType dt : {DType::fp32, DType::bf16})
        for (const Shape &s :
             {Shape{1}, Shape{2, 77}, Shape{127, 129}, Shape{300, 2}, Shape{2, 129, 200}}) {
            const Graph g = dropout_graph(dt, s, 0.25f);
            auto in = harness::make_inputs(g, seed);
            in["seed"] = {static_cast<float>(seed++), 0, 3, 0};
            check_dropout(g, in, harness::run(g, in), 0.25f);
        }
}

// The keep fraction is 1 - p; the same seed and offset give the same mask,
// another seed or offset another one; p = 0 keeps everything.
void dropout_stream(void **) {
    const Graph g = dropout_graph(DType::fp32, {256, 257}, 0.1f);
    auto in = harness::make_inputs(g, 1);
    in["seed"] = {42, 0, 0, 0};
    const auto a = harness::run(g, in);
    const double kept = check_dropout(g, in, a, 0.1f);
    // 65792 draws: the fraction's standard deviation is 0.0012.
    if (std::fabs(kept - 0.9) > 0.006)
        fail_msg("kept %g of the elements, not 0.9", kept);
    const auto again = harness::run(g, in);
    assert_true(again.outputs.at("m") == a.outputs.at("m"));
    for (const std::vector<float> &other :
         {std::vector<float>{43, 0, 0, 0}, std::vector<float>{42, 0, 1, 0},
          std::vector<float>{42, -1, 0, 0}, std::vector<float>{42, 0, 0, 5}}) {
        in["seed"] = other;
        const auto b = harness::run(g, in);
        check_dropout(g, in, b, 0.1f);
        size_t same = 0;
        for (size_t i = 0; i < b.outputs.at("m").size(); i++)
            same += b.outputs.at("m")[i] == a.outputs.at("m")[i];
        // Independent masks agree on 0.82 of the elements (0.9^2 + 0.1^2).
        const double f = static_cast<double>(same) / static_cast<double>(a.outputs.at("m").size());
        if (f > 0.84)
            fail_msg("seed {%g, %g, %g, %g}: %g of the mask as with {42, 0, 0, 0}",
                     static_cast<double>(other[0]), static_cast<double>(other[1]),
                     static_cast<double>(other[2]), static_cast<double>(other[3]), f);
    }
    const Graph none = dropout_graph(DType::fp32, {3, 5}, 0.0f);
    auto in0 = harness::make_inputs(none, 2);
    in0["seed"] = {1, 0, 0, 0};
    assert_true(check_dropout(none, in0, harness::run(none, in0), 0.0f) == 1.0);
}

// In chunks of rows (one byte less SBUF than the resident plan), with a
// computed input: the stream is numbered over the whole tensor, so the
// same bits as resident.
void dropout_chunks(void **) {
    for (DType dt : {DType::fp32, DType::bf16}) {
        Graph g(std::string("dropout_chunks_") + to_string(dt));
        const uint32_t x = g.input("x", T(dt, {1001, 129})),
                       seed = g.input("seed", T(DType::int32, {4}));
        Attrs a;
        a.p = 0.5f;
        g.mark_output(g.add(Op::dropout, "y", {g.add(Op::exp, "e", {x}), seed}, a));
        auto in = harness::make_inputs(g, 77);
        in["seed"] = {-5, 7, 2, 0};
        const auto resident = harness::run(g, in);
        CompileOptions small;
        small.limits.sbuf_bytes = static_cast<uint32_t>(plan_peak(resident.compiled) - 1);
        const auto chunked = harness::run(g, in, small);
        if (chunked.compiled.plan.find("rows in chunks") == std::string::npos)
            fail_msg("%s: not in chunks:\n%s", g.name().c_str(), chunked.compiled.plan.c_str());
        assert_true(chunked.outputs.at("y") == resident.outputs.at("y"));
        harness::check_carried(g, in, chunked, g.name());
    }
}

// out = index_add(base, ids, src): @n_src rows of @cols into @rows rows,
// ids with repeats; @computed: base and src computed (in SBUF) rather than
// inputs streamed from memory; @zero: the zero-base form.
Graph index_add_graph(DType dt, uint32_t rows, uint32_t n_src, uint32_t cols, bool computed,
                      bool zero) {
    Graph g(std::string("index_add_") + to_string(dt) + (computed ? "_computed" : "") +
            (zero ? "_zero" : ""));
    const uint32_t ids = g.input("ids", T(DType::int32, {n_src, 1}));
    uint32_t src = g.input("src", T(dt, {n_src, cols}));
    Attrs two;
    two.scalar = 2.0f;
    if (computed)
        src = g.add(Op::mul, "src2", {src}, two);
    if (zero) {
        Attrs a;
        a.dims = {rows};
        g.mark_output(g.add(Op::index_add, "out", {ids, src}, a));
        return g;
    }
    uint32_t base = g.input("base", T(dt, {rows, cols}));
    if (computed)
        base = g.add(Op::mul, "base2", {base}, two);
    g.mark_output(g.add(Op::index_add, "out", {base, ids, src}));
    return g;
}

harness::Inputs index_inputs(const Graph &g, uint32_t rows, uint64_t seed) {
    auto in = harness::make_inputs(g, seed);
    harness::Rng r(seed);
    auto &ids = in["ids"];
    for (float &v : ids)
        v = static_cast<float>(r.below(rows < 40 ? rows : 40)); // repeats in the first rows
    ids.front() = 0;
    ids.back() = static_cast<float>(rows - 1);
    return in;
}

void index_add_shapes(void **) {
    uint64_t seed = 9300;
    for (DType dt : {DType::fp32, DType::bf16})
        for (bool computed : {false, true})
            for (bool zero : {false, true})
                for (auto [rows, n_src, cols] : {std::tuple{1u, 1u, 1u}, std::tuple{50u, 300u, 77u},
                                                 std::tuple{300u, 129u, 3u}}) {
                    const Graph g = harness::all_outputs(
                        index_add_graph(dt, rows, n_src, cols, computed, zero));
                    const auto in = index_inputs(g, rows, seed++);
                    const auto o = harness::run(g, in);
                    assert_true(harness::check_nodes(g, in, o, g.name()) > 0);
                    assert_true(harness::check_carried(g, in, o, g.name()) > 0);
                }
}

// Repeated ids accumulate in order: 2^25, 1, 1, -2^25 into row 0 gives 0
// in fp32 (each 1 lost against 2^25), what sequential fp32 adds give,
// where the exact sum is 2; an overwrite would give -2^25.
void index_add_order(void **) {
    const Graph g = index_add_graph(DType::fp32, 3, 4, 2, false, true);
    harness::Inputs in;
    in["ids"] = {0, 0, 0, 0};
    in["src"] = {33554432.0f, 1, 1, 1, 1, 1, -33554432.0f, 1};
    const auto o = harness::run(g, in);
    const std::vector<float> want{0, 4, 0, 0, 0, 0};
    assert_true(o.outputs.at("out") == want);
    harness::check_nodes(g, in, o, g.name());
}

// Operands streamed from device memory through SBUF a tile at a time: an
// embedding gradient of 6 MiB into a 12 MiB table, compiled for a core
// with 2 MiB of SBUF (16 KiB per partition: sbuf_bytes is a partition's).
void index_add_streamed(void **) {
    const uint32_t rows = 3000, n_src = 1500, cols = 1024;
    const Graph g = index_add_graph(DType::fp32, rows, n_src, cols, false, true);
    auto in = harness::make_inputs(g, 5);
    harness::Rng r(5);
    for (float &v : in["ids"])
        v = static_cast<float>(r.below(rows));
    CompileOptions small;
    small.limits.sbuf_bytes = 16u << 10;
    const auto o = harness::run(g, in, small);
    assert_true(harness::check_nodes(g, in, o, g.name()) > 0);
}

void refusals(void **) {
    CompileOptions isa11;
    isa11.isa_version = 1u << 16 | 1u;
    harness::expect_refused(
        dropout_graph(DType::fp32, {4, 4}, 0.5f), isa11,
        "the lowering needs random, an instruction of ISA 1.2, but the target device "
        "implements ISA 1.1");
    harness::expect_refused(index_add_graph(DType::fp32, 4, 4, 4, false, true), isa11,
                            "the lowering needs dma_scatter_add, an instruction of ISA 1.2");
    // Read by another node: its value is computed in its output argument.
    Graph g("index_add_read");
    const uint32_t ids = g.input("ids", T(DType::int32, {4, 1})),
                   src = g.input("src", T(DType::fp32, {4, 8}));
    Attrs a;
    a.dims = {6};
    const uint32_t s = g.add(Op::index_add, "s", {ids, src}, a);
    g.mark_output(g.add(Op::exp, "e", {s}));
    harness::expect_refused(g, {},
                            "'e' reads it: index_add's result is computed in its output argument");
    // Type errors name the rule.
    harness::expect_parse_errors(
        {
            "graph b\ninput x: fp32[4, 4]\ninput s: int32[4]\ny = dropout(x, s)\n",
            "graph b\ninput x: fp32[4, 4]\ninput s: int32[4]\ny = dropout(x, s, p=1)\n",
            "graph b\ninput x: fp32[4, 4]\ninput s: int32[2]\ny = dropout(x, s, p=0.5)\n",
            "graph b\ninput x: fp32[4, 4]\ninput s: int32[4]\ny = exp(x, p=0.5)\n",
            "graph b\ninput i: int32[4]\ninput x: fp32[4, 4]\ny = index_add(i, x, dims=[9])\n",
            "graph b\ninput i: int32[4, 1]\ninput x: fp16[4, 4]\ny = index_add(i, x, dims=[9])\n",
            "graph b\ninput i: int32[4, 1]\ninput x: fp32[4, 4]\ny = index_add(i, x)\n",
        },
        {
            "needs p= (the probability that an element is dropped)",
            "p=1 is not in [0, 1)",
            "the seed is int32[4]: seed lo, seed hi, offset lo, offset hi",
            "p is an attribute of dropout and dropout_mask only",
            "index is an int32 column [N, 1]",
            "src and base are fp32 or bf16",
            "takes (base, index, src), or (index, src) with dims=[rows] for a zero base",
        });
    // The text form round-trips.
    const Graph t = parse("graph t\ninput x: bf16[3, 5]\ninput s: int32[4]\ninput i: int32[3, 1]\n"
                          "y = dropout(x, s, p=0.125)\nm = dropout_mask(x, s, p=0.125)\n"
                          "z = index_add(i, x, dims=[7])\nw = index_add(x, i, y)\n"
                          "output y, m, z, w\n");
    assert_true(parse(print(t)) == t);
    // An id beyond the rows: the reference says so (the device faults).
    Graph r = index_add_graph(DType::fp32, 4, 2, 2, false, true);
    harness::Inputs in{{"ids", {1, 4}}, {"src", {1, 2, 3, 4}}};
    try {
        evaluate(r, in);
        fail_msg("an id of 4 into 4 rows was evaluated");
    } catch (const GraphError &e) {
        assert_non_null(std::strstr(e.what(), "index[1] = 4 is outside [0, 4)"));
    }
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dropout_shapes),  cmocka_unit_test(dropout_stream),
        cmocka_unit_test(dropout_chunks),  cmocka_unit_test(index_add_shapes),
        cmocka_unit_test(index_add_order), cmocka_unit_test(index_add_streamed),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
