// SPDX-License-Identifier: MIT
// maximum, minimum (ops/minmax.cpp), the comparisons eq .. ge
// (ops/compare.cpp, u8 masks), where (ops/where.cpp) and cast
// (ops/cast.cpp) compiled, run through the device model and checked
// against the double-precision reference, in fp32 and bf16, on odd shapes
// with broadcast and literal operands, and with rows in chunks when the
// graph does not fit SBUF.
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

Attrs literal(float v, bool first = false) {
    Attrs a;
    a.scalar = v;
    a.scalar_first = first;
    return a;
}

Attrs to(DType dt) {
    Attrs a;
    a.dtype = dt;
    return a;
}

// Every operator on one shape: x and y uniform in [-1, 1), y's last row
// made x's (equal elements), r a row [C] broadcast against them.
Graph compare_graph(DType dt, const Shape &s) {
    Graph g("cmp_" + shape_name(s) + "_" + to_string(dt));
    const uint32_t x = g.input("x", T(dt, s)), y = g.input("y", T(dt, s));
    const uint32_t r = g.input("r", T(dt, {s.back()}));
    g.mark_output(g.add(Op::maximum, "mx", {x, y}));
    g.mark_output(g.add(Op::minimum, "mn", {x, r}));
    g.mark_output(g.add(Op::maximum, "relu6lo", {x}, literal(-0.25f)));
    // clamp(x, -0.5, 0.5): a maximum, then a minimum
    g.mark_output(g.add(Op::minimum, "clamp", {g.add(Op::maximum, "clamp_lo", {x}, literal(-0.5f))},
                        literal(0.5f)));
    uint32_t lt = 0;
    for (auto [op, name] :
         {std::pair{Op::eq, "eq"}, std::pair{Op::ne, "ne"}, std::pair{Op::lt, "lt"},
          std::pair{Op::le, "le"}, std::pair{Op::gt, "gt"}, std::pair{Op::ge, "ge"}}) {
        const uint32_t c = g.add(op, name, {x, y});
        g.mark_output(c);
        if (op == Op::lt)
            lt = c;
    }
    g.mark_output(g.add(Op::gt, "gt_row", {x, r}));
    g.mark_output(g.add(Op::le, "le_lit", {x}, literal(0.125f)));
    g.mark_output(g.add(Op::lt, "lit_lt", {x}, literal(0.125f, true))); // 0.125 < x
    g.mark_output(g.add(Op::where, "w", {lt, x, y}));
    g.mark_output(g.add(Op::where, "fill", {lt, y}, literal(-1e4f)));
    // casts: to int32 (x * 300 truncated), back to the float, to bool
    Attrs k300 = literal(300.0f);
    const uint32_t big = g.add(Op::mul, "big", {x}, k300);
    const uint32_t i = g.add(Op::cast, "i", {big}, to(DType::int32));
    g.mark_output(i);
    g.mark_output(g.add(Op::cast, "f", {i}, to(dt)));
    g.mark_output(
        g.add(Op::cast, "nz", {g.add(Op::cast, "xi", {x}, to(DType::int32))}, to(DType::u8)));
    g.mark_output(g.add(Op::cast, "back", {lt}, to(dt)));
    g.mark_output(g.add(Op::cast, "other", {x}, to(dt == DType::fp32 ? DType::bf16 : DType::fp32)));
    return g;
}

// make_inputs() with y's first row equal to x's, so that eq and ne see
// equal elements.
harness::Inputs inputs(const Graph &g, uint64_t seed) {
    auto in = harness::make_inputs(g, seed);
    auto &x = in.at("x"), &y = in.at("y");
    const size_t C = static_cast<size_t>(g.node(*g.find("r")).type.shape.back());
    std::copy(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(C), y.begin());
    return in;
}

void compare_ops(DType dt) {
    uint64_t seed = 1400;
    for (const Shape &s :
         {Shape{1}, Shape{2, 77}, Shape{127, 129}, Shape{300, 2}, Shape{2, 129, 200}}) {
        const Graph g = harness::all_outputs(compare_graph(dt, s));
        const auto in = inputs(g, seed++);
        const auto o = harness::run(g, in);
        assert_true(harness::check_nodes(g, in, o, g.name()) > 0);
        // The masks are 0 and 1, as torch.bool; some of each.
        const auto &lt = o.outputs.at("lt");
        size_t ones = 0;
        for (float v : lt) {
            assert_true(v == 0.0f || v == 1.0f);
            ones += v == 1.0f;
        }
        if (lt.size() > 100)
            assert_true(ones > 0 && ones < lt.size());
        assert_int_equal(static_cast<int>(g.node(*g.find("lt")).type.dtype),
                         static_cast<int>(DType::u8));
    }
    const Graph g = compare_graph(dt, {3, 5});
    const std::string text = print(g);
    for (const char *want : {"lt: u8[3, 5] = lt(x, y)", "= where(lt, y, -10000)",
                             "i: int32[3, 5] = cast(big, dtype=int32)", "= lt(0.125, x)"})
        if (text.find(want) == std::string::npos)
            fail_msg("'%s' not in:\n%s", want, text.c_str());
    assert_true(parse(text) == g);
}

void compare_fp32(void **) {
    compare_ops(DType::fp32);
}
void compare_bf16(void **) {
    compare_ops(DType::bf16);
}

uint64_t plan_peak(const Compiled &c) {
    return std::strtoull(c.plan.c_str() + std::strlen("SBUF: "), nullptr, 10);
}

// Larger than SBUF: the rows in chunks give the same bits.
void compare_chunked(void **) {
    uint64_t seed = 1500;
    for (DType dt : {DType::fp32, DType::bf16}) {
        const Graph g = harness::all_outputs(compare_graph(dt, {1001, 129}));
        const auto in = inputs(g, seed++);
        const auto resident = harness::run(g, in);
        CompileOptions small;
        small.limits.sbuf_bytes = static_cast<uint32_t>(plan_peak(resident.compiled) - 1);
        const auto chunked = harness::run(g, in, small);
        if (chunked.compiled.plan.find("rows in chunks of") == std::string::npos)
            fail_msg("%s: the rows are not in chunks:\n%s", g.name().c_str(),
                     chunked.compiled.plan.c_str());
        for (const auto &[name, a] : resident.outputs)
            assert_memory_equal(a.data(), chunked.outputs.at(name).data(),
                                a.size() * sizeof(float));
        assert_true(harness::check_nodes(g, in, chunked, g.name()) > 0);
    }
}

void expect_error(Graph &g, Op op, std::vector<uint32_t> operands, Attrs a, const char *contains) {
    try {
        g.add(op, "bad", operands, a);
        fail_msg("accepted: expected '%s'", contains);
    } catch (const GraphError &e) {
        if (!std::strstr(e.what(), contains))
            fail_msg("'%s' does not contain '%s'", e.what(), contains);
    }
}

void compare_errors(void **) {
    Graph g("errors");
    const uint32_t x = g.input("x", T(DType::fp32, {4, 8})),
                   h = g.input("h", T(DType::bf16, {4, 8}));
    const uint32_t m = g.add(Op::lt, "m", {x, x});
    expect_error(g, Op::maximum, {x, h}, {}, "operands of different dtypes");
    expect_error(g, Op::where, {m, x, h}, {}, "a and b of different dtypes");
    expect_error(g, Op::where, {m, x, g.input("r", T(DType::fp32, {8}))}, {},
                 "cond, a and b must have one shape");
    expect_error(g, Op::cast, {x}, {}, "cast needs dtype=");
    expect_error(g, Op::eq, {m, m}, {}, "u8 operands are not compared");
    // A u8 mask needs ISA 1.2.
    g.mark_output(m);
    CompileOptions v11;
    v11.isa_version = 1u << 16 | 1u;
    try {
        compile(g, v11);
        fail_msg("a u8 mask compiled for ISA 1.1");
    } catch (const GraphError &e) {
        assert_non_null(std::strstr(e.what(), "an instruction of ISA 1.2, but the target device "
                                              "implements ISA 1.1"));
    }
}

// int32 add, sub, mul, maximum, minimum of two values take the exact
// integer ALU on an ISA 1.2 target, fp32 (exact below 2^24) on 1.1.
void int32_exact(void **) {
    Graph g("int32");
    const uint32_t x = g.input("x", T(DType::int32, {200, 77}));
    const uint32_t y = g.input("y", T(DType::int32, {200, 77}));
    const uint32_t r = g.input("r", T(DType::int32, {77}));
    g.mark_output(g.add(Op::add, "s", {x, y}));
    g.mark_output(g.add(Op::mul, "p", {x, r}));
    g.mark_output(g.add(Op::maximum, "m", {x, y}));
    const auto in = harness::make_inputs(g, 1600);
    const auto o = harness::run(g, in);
    assert_true(harness::check_nodes(g, in, o, g.name()) > 0);
    const std::string text = disassemble(o.compiled.program);
    for (const char *want :
         {"tensor_tensor.add.int32", "tensor_tensor.mul.int32", "tensor_tensor.max.int32"})
        if (text.find(want) == std::string::npos)
            fail_msg("no '%s' in:\n%s", want, text.c_str());
    CompileOptions v11;
    v11.isa_version = 1u << 16 | 1u;
    const Compiled c11 = compile(g, v11);
    assert_int_equal(c11.program.isa_version(), 1u << 16);
    const std::string t11 = disassemble(c11.program);
    assert_true(t11.find("tensor_tensor.add ") != std::string::npos);
    assert_true(t11.find("tensor_tensor.add.int32") == std::string::npos);
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(compare_fp32),    cmocka_unit_test(compare_bf16),
        cmocka_unit_test(compare_chunked), cmocka_unit_test(compare_errors),
        cmocka_unit_test(int32_exact),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
