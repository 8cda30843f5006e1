// SPDX-License-Identifier: MIT
// The unary functions of ACTIVATE (ops/math.cpp): log, erf, sqrt, rsqrt,
// reciprocal, abs compiled, run through the device model and checked
// against the double-precision reference within their bounds, in fp32 and
// bf16, on odd shapes, fused into chains and a matmul's epilogue, with
// rows in chunks when the graph does not fit SBUF; refused for a target of
// ISA 1.1 (ln, erf, sqrt and abs are ISA 1.2).
#include <cstring>
#include <string>

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

std::string shape_name(const Shape &s) {
    std::string n;
    for (int64_t d : s)
        n += (n.empty() ? "" : "x") + std::to_string(d);
    return n;
}

// Every function on one shape: "den" inputs are magnitudes in [0.5, 1.5)
// (harness::make_inputs), abs makes them positive for log and the roots;
// erf reads 3 x, across its curve.
Graph functions(DType dt, const Shape &s) {
    Graph g("math_" + shape_name(s) + "_" + to_string(dt));
    const uint32_t den = g.input("den", T(dt, s)), x = g.input("x", T(dt, s));
    const uint32_t a = g.add(Op::abs, "a", {den});
    for (auto [op, name] : {std::pair{Op::log, "l"}, std::pair{Op::sqrt, "s"},
                            std::pair{Op::rsqrt, "r"}, std::pair{Op::reciprocal, "c"}})
        g.mark_output(g.add(op, name, {a}));
    Attrs three;
    three.scalar = 3.0f;
    g.mark_output(g.add(Op::erf, "e", {g.add(Op::mul, "x3", {x}, three)}));
    g.mark_output(g.add(Op::abs, "ax", {x}));
    return g;
}

void check(const Graph &g, uint64_t seed) {
    Graph a = harness::all_outputs(g);
    const auto in = harness::make_inputs(a, seed);
    const auto o = harness::run(a, in);
    assert_true(harness::check_nodes(a, in, o, g.name()) > 0);
    assert_true(harness::check_carried(a, in, o, g.name()) > 0);
}

void math_ops(DType dt) {
    uint64_t seed = 1200;
    for (const Shape &s :
         {Shape{1}, Shape{2, 77}, Shape{127, 129}, Shape{300, 2}, Shape{2, 129, 200}})
        check(functions(dt, s), seed++);
    // In a chain (log(x * 0.5 + 1) is one ACTIVATE) and a matmul's epilogue.
    Graph g(std::string("math_fused_") + to_string(dt));
    const uint32_t den = g.input("den", T(dt, {200, 129}));
    const uint32_t w = g.constant("w", T(dt, {129, 77}), ConstantInit{{}, 3, 0.1f});
    Attrs half, one;
    half.scalar = 0.5f;
    one.scalar = 1.0f;
    const uint32_t a = g.add(Op::abs, "a", {den});
    g.mark_output(
        g.add(Op::log, "l", {g.add(Op::add, "p", {g.add(Op::mul, "h", {a}, half)}, one)}));
    g.mark_output(g.add(Op::erf, "m", {g.add(Op::matmul, "mm", {den, w})}));
    const auto in = harness::make_inputs(g, seed);
    const auto out = harness::run(g, in);
    for (const char *fused : {"fused: h, p, l", "fused: m"})
        if (out.compiled.plan.find(fused) == std::string::npos)
            fail_msg("%s: no '%s' in the plan:\n%s", g.name().c_str(), fused,
                     out.compiled.plan.c_str());
    assert_true(harness::check_carried(g, in, out, g.name()) > 0);
    const std::string text = print(g);
    assert_true(text.find(std::string("l: ") + to_string(T(dt, {200, 129})) + " = log(p)") !=
                std::string::npos);
    assert_true(parse(text) == g);
}

void math_fp32(void **) {
    math_ops(DType::fp32);
}
void math_bf16(void **) {
    math_ops(DType::bf16);
}

// The bytes per partition of the plan's peak (`SBUF: N bytes ...`).
uint64_t plan_peak(const Compiled &c) {
    return std::strtoull(c.plan.c_str() + std::strlen("SBUF: "), nullptr, 10);
}

// Larger than SBUF: with one byte less than the resident plan's peak the
// rows go in chunks, with the same bits.
void math_chunked(void **) {
    uint64_t seed = 1300;
    for (DType dt : {DType::fp32, DType::bf16}) {
        Graph g = functions(dt, {1001, 129});
        const auto in = harness::make_inputs(g, seed++);
        const auto resident = harness::run(g, in);
        CompileOptions small;
        small.limits.sbuf_bytes = static_cast<uint32_t>(plan_peak(resident.compiled) - 1);
        const auto chunked = harness::run(g, in, small);
        if (chunked.compiled.plan.find("rows in chunks of") == std::string::npos)
            fail_msg("%s: the rows are not in chunks:\n%s", g.name().c_str(),
                     chunked.compiled.plan.c_str());
        for (const auto &[name, a] : resident.outputs) {
            const auto &b = chunked.outputs.at(name);
            assert_memory_equal(a.data(), b.data(), a.size() * sizeof(float));
        }
        assert_true(harness::check_carried(g, in, chunked, g.name()) > 0);
    }
}

// A device of ISA 1.1 has rsqrt and reciprocal, not ln.
void math_isa(void **) {
    Graph g("isa11");
    const uint32_t x = g.input("x", T(DType::fp32, {4, 8}));
    const uint32_t r = g.add(Op::rsqrt, "r", {x});
    CompileOptions v11;
    v11.isa_version = 1u << 16 | 1u;
    g.mark_output(g.add(Op::reciprocal, "c", {r}));
    assert_int_equal(compile(g, v11).program.isa_version(), 1u << 16 | 1u);
    g.mark_output(g.add(Op::log, "l", {x}));
    try {
        compile(g, v11);
        fail_msg("log compiled for ISA 1.1");
    } catch (const GraphError &e) {
        const char *want = "'l' (log of x: fp32[4, 8] -> fp32[4, 8]): the lowering needs "
                           "activate.ln, an instruction of ISA 1.2, but the target device "
                           "implements ISA 1.1";
        if (std::string(e.what()) != want)
            fail_msg("got '%s'\nwant '%s'", e.what(), want);
    }
    assert_int_equal(compile(g).program.isa_version(), 1u << 16 | 2u);
    // int32 has no logarithm.
    Graph gi("int");
    try {
        gi.add(Op::sqrt, "s", {gi.input("i", T(DType::int32, {3}))});
        fail_msg("sqrt of int32 accepted");
    } catch (const GraphError &e) {
        assert_non_null(std::strstr(e.what(), "'s' (sqrt) of i: int32[3]"));
    }
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(math_fp32),
        cmocka_unit_test(math_bf16),
        cmocka_unit_test(math_chunked),
        cmocka_unit_test(math_isa),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
