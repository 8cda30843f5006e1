// SPDX-License-Identifier: MIT
// The reductions (sum, mean, amax, amin over any set of axes, argmax and
// argmin over one axis or all) and the backward kernels of softmax and
// log_softmax, compiled, run through the device model and checked against
// the double-precision reference in fp32 and bf16: every result from its
// operand within its own bound, every reduction that the decomposition
// made from the values the device gave it, and the result within the bound
// carried from the inputs; odd shapes, rows wider than a partition holds (a
// reduction in two runs), kept axes wider than a row (slabs combined); a
// row reduction of 32 MiB, more than the core's SBUF, in chunks of rows,
// and reductions of every axis but the last of a 32 MiB input streamed
// from device memory.
#include <cmath>
#include <cstring>

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

std::string shape_name(const Shape &s) {
    std::string n;
    for (int64_t d : s)
        n += (n.empty() ? "" : "x") + std::to_string(d);
    return n;
}

std::string dims_name(const std::vector<int64_t> &d) {
    std::string n = "d";
    for (int64_t a : d)
        n += std::to_string(a);
    return d.empty() ? "all" : n;
}

// The result against its reference from the input, the reductions of its
// decomposition against theirs from what the device gave them, and the
// result within the bound carried from the input. Returns
// the number of reductions the decomposition made that are lowered as
// they are.
size_t check_reduction(const Graph &g, uint64_t seed) {
    const auto in = harness::make_inputs(g, seed);
    const auto out = harness::run(g, in);
    harness::check_nodes(g, in, out, g.name());
    harness::check_carried(g, in, out, g.name());
    const Graph d = harness::all_outputs(g.decomposed());
    const auto parts = harness::run(d, in);
    harness::check_nodes(d, in, parts, g.name() + " (decomposed)");
    size_t rows = 0;
    for (const Node &n : d.nodes())
        rows += n.op == g.node(g.outputs().front()).op;
    return rows;
}

// Every non-empty set of axes of every shape, and all of them (no dims),
// with and without keepdim.
void reductions(DType dt) {
    const std::vector<Shape> shapes = {{1},      {7},        {300},       {2, 77},
                                       {129, 3}, {200, 300}, {3, 129, 5}, {2, 3, 4, 5}};
    uint64_t seed = 4000;
    size_t graphs = 0, parts = 0;
    for (Op op : {Op::sum, Op::mean, Op::amax, Op::amin})
        for (const Shape &s : shapes) {
            std::vector<std::vector<int64_t>> sets{{}};
            const auto rank = static_cast<int64_t>(s.size());
            for (uint32_t mask = 1; mask < (1u << rank); mask++) {
                std::vector<int64_t> d;
                for (int64_t a = 0; a < rank; a++)
                    if (mask & (1u << a))
                        d.push_back(rank == 4 && a == 3 ? -1 : a); // a negative axis too
                sets.push_back(d);
            }
            for (const auto &d : sets)
                for (bool keep : {false, true}) {
                    Graph g(std::string(to_string(op)) + "_" + shape_name(s) + "_" + dims_name(d) +
                            (keep ? "_keep_" : "_") + to_string(dt));
                    Attrs a;
                    a.dims = d;
                    a.keepdim = keep;
                    g.mark_output(g.add(op, "r", {g.input("x", Type{dt, s})}, a));
                    parts += check_reduction(g, seed++);
                    graphs++;
                }
        }
    print_message("%zu reductions in %s, %zu lowered reductions in their decompositions\n", graphs,
                  to_string(dt), parts);
}

void reductions_fp32(void **) {
    reductions(DType::fp32);
}
void reductions_bf16(void **) {
    reductions(DType::bf16);
}

// Leading axes reduced with trailing ones kept whose product is wider
// than a row (a position embedding's gradient summed over the batch,
// [8, 128, 256] over axis 0): the slabs are combined one after the other.
void wide_trailing_axes(void **) {
    struct Case {
        Shape shape;
        std::vector<int64_t> dims;
    };
    const std::vector<Case> cases = {
        {{8, 128, 256}, {0}}, {{2, 5, 70, 300}, {0, 1}}, {{3, 9, 70, 300}, {1}}};
    uint64_t seed = 4900;
    for (Op op : {Op::sum, Op::mean, Op::amax, Op::amin})
        for (const Case &c : cases)
            for (bool keep : {false, true}) {
                Graph g(std::string(to_string(op)) + "_" + shape_name(c.shape) + "_" +
                        dims_name(c.dims) + (keep ? "_keep" : ""));
                Attrs a;
                a.dims = c.dims;
                a.keepdim = keep;
                g.mark_output(g.add(op, "r", {g.input("x", Type{DType::fp32, c.shape})}, a));
                check_reduction(g, seed++);
                size_t slabs = 0;
                const Graph d = g.decomposed();
                for (const Node &n : d.nodes())
                    slabs += n.op == Op::slice;
                if (slabs == 0)
                    fail_msg("%s: no slabs in its decomposition", g.name().c_str());
            }
}

// argmax and argmin over each axis and over all of them: the indices bit
// for bit (the first of equal extremes; bf16 inputs have many ties).
void arg_reductions(DType dt) {
    const std::vector<Shape> shapes = {{7}, {2, 77}, {129, 127}, {129, 300}, {3, 129, 5}};
    uint64_t seed = 5000;
    for (Op op : {Op::argmax, Op::argmin})
        for (const Shape &s : shapes) {
            std::vector<std::vector<int64_t>> sets{{}};
            for (int64_t a = 0; a < static_cast<int64_t>(s.size()); a++)
                sets.push_back({a});
            for (const auto &d : sets)
                for (bool keep : {false, true}) {
                    if (d.empty() && s == Shape{129, 300})
                        continue; // 38700 elements in one row: refused below
                    Graph g(std::string(to_string(op)) + "_" + shape_name(s) + "_" + dims_name(d) +
                            (keep ? "_keep_" : "_") + to_string(dt));
                    Attrs a;
                    a.dims = d;
                    a.keepdim = keep;
                    const uint32_t r = g.add(op, "r", {g.input("x", Type{dt, s})}, a);
                    assert_true(g.node(r).type.dtype == DType::int32);
                    g.mark_output(r);
                    check_reduction(g, seed++);
                }
        }
    Graph g("argmax_wide");
    g.mark_output(g.add(Op::argmax, "r", {g.input("x", Type{dt, {129, 300}})}));
    try {
        compile(g);
        fail_msg("an argmax of 38700 elements compiled");
    } catch (const GraphError &e) {
        const std::string want = "'r' (argmax): in its decomposition: argmax over 38700 "
                                 "elements is not lowered: the axes it reduces are one row, and "
                                 "a row of the row layout holds at most 16384";
        if (want != e.what())
            fail_msg("%s", e.what());
    }
}

// Equal extremes give the first index, in a row tile and across the
// column blocks of 2048 (a maximum at 100 and at 4100 of 5000 columns).
void arg_ties(void **) {
    for (DType dt : {DType::fp32, DType::bf16}) {
        Graph g(std::string("arg_ties_") + to_string(dt));
        const uint32_t x = g.input("x", Type{dt, {4, 5000}});
        Attrs last;
        last.dims = {-1};
        g.mark_output(g.add(Op::argmax, "max", {x}, last));
        g.mark_output(g.add(Op::argmin, "min", {x}, last));
        std::vector<float> v(4 * 5000, 0.0f);
        v[100] = v[4100] = 3; // row 0: maxima at 100 and 4100, minima 0 elsewhere
        for (int c = 0; c < 5000; c++)
            v[5000 + static_cast<size_t>(c)] = 1; // row 1: all equal
        v[2 * 5000 + 4999] = -2;                  // row 2: the minimum last
        v[2 * 5000 + 2048] = v[2 * 5000 + 3000] = 5;
        v[3 * 5000 + 7] = v[3 * 5000 + 6] = -1; // row 3: minima at 6 and 7
        const harness::Inputs in{{"x", v}};
        const auto out = harness::run(g, in);
        const std::vector<float> want_max{100, 0, 2048, 0}, want_min{0, 0, 4999, 6};
        assert_memory_equal(out.outputs.at("max").data(), want_max.data(), 4 * sizeof(float));
        assert_memory_equal(out.outputs.at("min").data(), want_min.data(), 4 * sizeof(float));
        harness::check_nodes(g, in, out, g.name());
    }
}

void arg_reductions_fp32(void **) {
    arg_reductions(DType::fp32);
}
void arg_reductions_bf16(void **) {
    arg_reductions(DType::bf16);
}

// softmax's and log_softmax's backward kernels from the gradient and the
// forward's result, as the device computes them.
void softmax_backward(DType dt) {
    const std::vector<Shape> shapes = {{1}, {2, 77}, {129, 300}, {3, 129, 5}};
    uint64_t seed = 6000;
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward})
        for (const Shape &s : shapes) {
            Graph g(std::string(to_string(op)) + "_" + shape_name(s) + "_" + to_string(dt));
            const uint32_t x = g.input("x", Type{dt, s}), grad = g.input("grad", Type{dt, s});
            uint32_t y = g.add(Op::softmax, "y", {x});
            if (op == Op::log_softmax_backward) // log probabilities' stand-in: any values
                y = g.add(Op::sub, "logp", {x, g.input("shift", Type{dt, s})});
            g.mark_output(y);
            g.mark_output(g.add(op, "dx", {grad, y}));
            const auto in = harness::make_inputs(g, seed++);
            const auto out = harness::run(g, in);
            harness::check_nodes(g, in, out, g.name());
            const Graph d = harness::all_outputs(g.decomposed());
            harness::check_nodes(d, in, harness::run(d, in), g.name() + " (decomposed)");
        }
}

void softmax_backward_fp32(void **) {
    softmax_backward(DType::fp32);
}
void softmax_backward_bf16(void **) {
    softmax_backward(DType::bf16);
}

// log_softmax (a cross-entropy loss's forward) on rows of one element,
// odd widths, rows wider than a partition holds, and in fp32 values far
// apart (a probability that underflows leaves its log finite): the result against
// its reference, and every node of its decomposition against its own.
void log_softmax(DType dt) {
    const std::vector<Shape> shapes = {{1}, {2, 77}, {129, 300}, {3, 129, 5}, {4, 3000}};
    uint64_t seed = 7000;
    for (const Shape &s : shapes)
        for (float spread : {1.0f, 200.0f}) {
            // bf16's rounding of x * 200 (up to 1 in 256 of values of
            // hundreds) carried through exp leaves no finite bound
            if (dt == DType::bf16 && spread > 1.0f)
                continue;
            Graph g("log_softmax_" + shape_name(s) + "_x" + std::to_string(int(spread)) + "_" +
                    to_string(dt));
            Attrs times;
            times.scalar = spread;
            const uint32_t x = g.add(Op::mul, "spread", {g.input("x", Type{dt, s})}, times);
            g.mark_output(x);
            g.mark_output(g.add(Op::log_softmax, "logp", {x}));
            const auto in = harness::make_inputs(g, seed++);
            const auto out = harness::run(g, in);
            harness::check_nodes(g, in, out, g.name());
            for (float v : out.outputs.at("logp"))
                assert_true(std::isfinite(v));
            const Graph d = harness::all_outputs(g.decomposed());
            harness::check_nodes(d, in, harness::run(d, in), g.name() + " (decomposed)");
        }
}

void log_softmax_fp32(void **) {
    log_softmax(DType::fp32);
}
void log_softmax_bf16(void **) {
    log_softmax(DType::bf16);
}

// Random graphs of reductions (random axes, keepdim or not), activations,
// literal products, differences with a row maximum (a column operand) and
// softmax backward kernels on random shapes, seeded; every node against
// its reference from the device's operands and the outputs within the
// bound carried from the inputs.
Graph random_reduction_graph(uint64_t seed, DType dt) {
    harness::Rng rng(seed);
    const int64_t sizes[] = {1, 2, 77, 127, 129, 200, 300};
    Graph g("random_reductions_" + std::to_string(seed) + "_" + to_string(dt));
    Shape s;
    const uint32_t rank = 1 + rng.below(3);
    for (uint32_t d = 0; d < rank; d++)
        s.push_back(sizes[rng.below(7)]);
    while (Type{dt, s}.elements() > 40000)
        s[rng.below(rank)] = 2;
    std::vector<uint32_t> vals{g.input("x", Type{dt, s})};
    const int steps = 3 + static_cast<int>(rng.below(4));
    for (int k = 0; k < steps; k++) {
        const uint32_t v = vals[rng.below(static_cast<uint32_t>(vals.size()))];
        const Shape vs = g.node(v).type.shape;
        const std::string name = "v" + std::to_string(k);
        Attrs a;
        switch (rng.below(5)) {
        case 0: {
            const Op ops[] = {Op::sum, Op::mean, Op::amax, Op::amin};
            for (int64_t d = 0; d < static_cast<int64_t>(vs.size()); d++)
                if (rng.below(2))
                    a.dims.push_back(d);
            a.keepdim = rng.below(2);
            vals.push_back(g.add(ops[rng.below(4)], name, {v}, a));
            break;
        }
        case 1: {
            const Op acts[] = {Op::tanh, Op::sigmoid, Op::relu};
            vals.push_back(g.add(acts[rng.below(3)], name, {v}));
            break;
        }
        case 2:
            a.scalar = rng.uniform(2.0f);
            vals.push_back(g.add(Op::mul, name, {v}, a));
            break;
        case 3: {
            a.dims = {-1};
            a.keepdim = true;
            const uint32_t m = g.add(Op::amax, name + "max", {v}, a);
            vals.push_back(g.add(Op::sub, name, {v, m}));
            break;
        }
        default: {
            const uint32_t y = g.add(Op::softmax, name + "y", {v});
            const uint32_t grad = g.input("grad" + std::to_string(k), Type{dt, vs});
            vals.push_back(g.add(Op::softmax_backward, name, {grad, y}));
        }
        }
    }
    for (uint32_t v : vals)
        if (g.node(v).op != Op::input)
            g.mark_output(v);
    return g;
}

void random_graphs(void **) {
    size_t checked = 0, carried = 0;
    for (uint64_t seed = 9000; seed < 9012; seed++)
        for (DType dt : {DType::fp32, DType::bf16}) {
            const Graph g = harness::all_outputs(random_reduction_graph(seed, dt));
            const auto in = harness::make_inputs(g, seed);
            const auto out = harness::run(g, in);
            checked += harness::check_nodes(g, in, out, g.name());
            carried += harness::check_carried(g, in, out, g.name());
        }
    print_message("24 random graphs (seeds 9000-9011, fp32 and bf16): %zu elements against "
                  "their nodes' references, %zu within the bound carried from the inputs\n",
                  checked, carried);
}

uint64_t plan_peak(const Compiled &c) {
    return std::strtoull(c.plan.c_str() + std::strlen("SBUF: "), nullptr, 10);
}

// A row reduction in chunks of rows (one byte less SBUF than the resident
// plan's peak): the same bits as resident; then sums, means and maxima of
// the rows of a 32 MiB input, more than the core's SBUF, in chunks.
void rows_in_chunks(void **) {
    uint64_t seed = 7000;
    for (DType dt : {DType::fp32, DType::bf16})
        for (Op op : {Op::sum, Op::mean, Op::amax, Op::argmin}) {
            Graph g(std::string(to_string(op)) + "_rows_" + to_string(dt));
            Attrs a;
            a.dims = {-1};
            a.keepdim = true;
            const uint32_t x = g.input("x", Type{dt, {1001, 129}});
            g.mark_output(g.add(op, "r", {g.add(Op::exp, "e", {x})}, a));
            const auto in = harness::make_inputs(g, seed++);
            const auto resident = harness::run(g, in);
            CompileOptions small;
            small.limits.sbuf_bytes = static_cast<uint32_t>(plan_peak(resident.compiled) - 1);
            const auto chunked = harness::run(g, in, small);
            if (chunked.compiled.plan.find("rows in chunks") == std::string::npos)
                fail_msg("%s: not in chunks:\n%s", g.name().c_str(), chunked.compiled.plan.c_str());
            const auto &r = resident.outputs.at("r"), &c = chunked.outputs.at("r");
            assert_int_equal(r.size(), c.size());
            assert_memory_equal(r.data(), c.data(), r.size() * sizeof(float));
            harness::check_carried(g, in, chunked, g.name());
        }
    Graph g("rows_32MiB");
    const uint32_t x = g.input("x", Type{DType::fp32, {32768, 256}});
    Attrs a;
    a.dims = {1};
    a.keepdim = true;
    for (Op op : {Op::sum, Op::mean, Op::amax})
        g.mark_output(g.add(op, to_string(op), {x}, a));
    const auto in = harness::make_inputs(g, seed);
    const auto out = harness::run(g, in);
    if (out.compiled.plan.find("rows in chunks") == std::string::npos)
        fail_msg("%s: not in chunks:\n%s", g.name().c_str(), out.compiled.plan.c_str());
    print_message("%s: %s\n", g.name().c_str(),
                  out.compiled.plan.substr(0, out.compiled.plan.find('\n')).c_str());
    assert_true(harness::check_nodes(g, in, out, g.name()) == 3 * 32768);
}

// Reductions of every axis but the last, and of all of them: with one
// byte less SBUF than the resident plan's peak the operand is streamed from
// device memory, row tile by row tile, with the same bits; then the same
// of a 32 MiB input, more than the core's SBUF.
void streamed_operand(void **) {
    uint64_t seed = 8000;
    for (DType dt : {DType::fp32, DType::bf16})
        for (Op op : {Op::sum, Op::mean, Op::amax, Op::amin})
            for (const Shape &s : {Shape{300, 129}, Shape{2, 129, 77}}) {
                Graph g(std::string(to_string(op)) + "_streamed_" + shape_name(s) + "_" +
                        to_string(dt));
                const uint32_t x = g.input("x", Type{dt, s});
                Attrs leading, all;
                for (size_t d = 0; d + 1 < s.size(); d++)
                    leading.dims.push_back(static_cast<int64_t>(d));
                g.mark_output(g.add(op, "r", {x}, leading));
                g.mark_output(g.add(op, "a", {x}, all));
                const auto in = harness::make_inputs(g, seed++);
                const auto resident = harness::run(g, in);
                CompileOptions small;
                small.limits.sbuf_bytes = static_cast<uint32_t>(plan_peak(resident.compiled) - 1);
                const auto streamed = harness::run(g, in, small);
                if (streamed.compiled.plan.find("streamed from device memory") == std::string::npos)
                    fail_msg("%s: x is not streamed:\n%s", g.name().c_str(),
                             streamed.compiled.plan.c_str());
                for (const char *v : {"r", "a"}) {
                    const auto &r = resident.outputs.at(v), &c = streamed.outputs.at(v);
                    assert_int_equal(r.size(), c.size());
                    assert_memory_equal(r.data(), c.data(), r.size() * sizeof(float));
                }
                harness::check_nodes(g, in, streamed, g.name());
            }
    Graph g("streamed_32MiB");
    const uint32_t x = g.input("x", Type{DType::fp32, {32768, 256}});
    Attrs rows;
    rows.dims = {0};
    rows.keepdim = true;
    for (Op op : {Op::sum, Op::mean, Op::amax})
        g.mark_output(g.add(op, to_string(op), {x}, rows));
    g.mark_output(g.add(Op::sum, "total", {x}));
    const auto in = harness::make_inputs(g, seed);
    const auto out = harness::run(g, in);
    if (out.compiled.plan.find("streamed from device memory") == std::string::npos)
        fail_msg("%s: x is not streamed:\n%s", g.name().c_str(), out.compiled.plan.c_str());
    print_message("%s: %s\n", g.name().c_str(),
                  out.compiled.plan.substr(0, out.compiled.plan.find('\n')).c_str());
    assert_true(harness::check_nodes(g, in, out, g.name()) == 3 * 256 + 1);
    harness::check_carried(g, in, out, g.name());
}

// The text form: dims and keepdim printed and parsed back; the errors.
void reduction_text(void **) {
    const char *text = "graph r\n"
                       "input x: fp32[2, 3, 4]\n"
                       "s = sum(x, dims=[0, -1], keepdim=true)\n"
                       "m = mean(x)\n"
                       "a = argmax(x, dims=[1])\n"
                       "g = softmax_backward(x, x)\n"
                       "output s, m, a, g\n";
    const Graph g = parse(text);
    const std::string printed = print(g);
    for (const char *want :
         {"s: fp32[1, 3, 1] = sum(x, dims=[0, 2], keepdim=true)",
          "m: fp32[1] = mean(x, dims=[0, 1, 2])", "a: int32[2, 4] = argmax(x, dims=[1])",
          "g: fp32[2, 3, 4] = softmax_backward(x, x, axis=-1)"})
        if (printed.find(want) == std::string::npos)
            fail_msg("no '%s' in:\n%s", want, printed.c_str());
    assert_true(parse(printed) == g);
    const std::pair<const char *, const char *> errors[] = {
        {"s = sum(x, dims=[1, -2])", "axis -2 is given twice"},
        {"s = amax(x, dims=[3])", "axis 3 out of range for rank 3"},
        {"s = argmin(x, dims=[0, 1])", "argmin reduces one axis or all of them, not [0, 1]"},
        {"s = softmax_backward(x, y)", "the gradient and the forward's result differ in shape"},
    };
    for (const auto &[line, why] : errors) {
        const std::string bad =
            std::string("graph e\ninput x: fp32[2, 3, 4]\ninput y: fp32[2, 3]\n") + line +
            "\noutput s\n";
        try {
            parse(bad);
            fail_msg("'%s' parsed", line);
        } catch (const std::exception &e) {
            if (std::string(e.what()).find(why) == std::string::npos)
                fail_msg("'%s': %s (expected '%s')", line, e.what(), why);
        }
    }
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(reduction_text),        cmocka_unit_test(reductions_fp32),
        cmocka_unit_test(reductions_bf16),       cmocka_unit_test(arg_reductions_fp32),
        cmocka_unit_test(arg_reductions_bf16),   cmocka_unit_test(arg_ties),
        cmocka_unit_test(softmax_backward_fp32), cmocka_unit_test(softmax_backward_bf16),
        cmocka_unit_test(log_softmax_fp32),      cmocka_unit_test(log_softmax_bf16),
        cmocka_unit_test(rows_in_chunks),        cmocka_unit_test(streamed_operand),
        cmocka_unit_test(random_graphs),         cmocka_unit_test(wide_trailing_axes),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
