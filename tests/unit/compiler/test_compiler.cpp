// SPDX-License-Identifier: MIT
// The graph compiler on the host: the IR's text form (round trip, errors),
// every operator and fused pattern compiled, run through the device model
// and checked against the double-precision reference within hw/isa.md's
// bounds, in fp32 and bf16; random graphs of random shapes (seeded; the
// seed is printed, NEURON_COMPILER_SEED=<n> reruns one); the seed corpus
// of IR files in corpus/.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/reference.hpp>
#include <neuron/compiler/text.hpp>

#include <unistd.h>

#include "harness.hpp"
#include "model_program.hpp"

// cmocka last: it defines macros that clash with the standard library.
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

using namespace neuron;
using namespace neuron::compiler;
using harness::Rng;

namespace {

// The sizes every axis is drawn from: around the 128 partitions, odd, tiny.
constexpr int64_t sizes[] = {1, 2, 127, 129, 200, 300, 77};

Type T(DType dt, Shape s) {
    return Type{dt, std::move(s)};
}

void check(const Graph &g, uint64_t seed, const std::string &what) {
    Graph a = harness::all_outputs(g);
    auto in = harness::make_inputs(a, seed);
    auto o = harness::run(a, in);
    harness::check_nodes(a, in, o, what);
}

// --- text form -------------------------------------------------------------

const char *sample = R"(# a comment line
graph sample
input x: bf16[2, 77, 129]
input den: bf16[129]
const w: bf16[129, 300] = uniform(seed=7, scale=0.088)
const g: bf16[3] = [1, -0.5, 0.25]
h: bf16[2, 77, 300] = matmul(x, w)
q = div(x, den)   # types may be left out
r: bf16[2, 77, 129] = sub(1.5, q)
s = layer_norm(r, eps=0.001)
t = transpose(s, perm=[0, 2, 1])
u = slice(t, axis=1, start=2, end=-1)
v = concat(u, u, axis=-1)
p0, p1: bf16[2, 100, 77], p2 = split(u, axis=1, sizes=[1, 100, 25])
e0, e1 = split(v, axis=-1)
output h, v, p1, e1
)";

void text_round_trip(void **) {
    Graph g = parse(sample, "sample");
    assert_int_equal(g.nodes().size(), 16);
    assert_string_equal(to_string(g.node(*g.find("u")).type).c_str(), "bf16[2, 126, 77]");
    assert_string_equal(to_string(g.node(*g.find("v")).type).c_str(), "bf16[2, 126, 154]");
    // A split is one node per piece, each the slice of its piece.
    const Node &p2 = g.node(*g.find("p2")), &e1 = g.node(*g.find("e1"));
    assert_string_equal(to_string(p2.type).c_str(), "bf16[2, 25, 77]");
    assert_true(p2.op == Op::split && p2.axis == 1 && p2.start == 101 && p2.end == 126);
    assert_true(p2.dims == (Shape{1, 100, 25}));
    assert_string_equal(to_string(e1.type).c_str(), "bf16[2, 126, 77]");
    assert_true(e1.axis == 2 && e1.start == 77 && e1.dims == (Shape{77, 77}));
    std::string text = print(g);
    Graph back = parse(text);
    assert_true(back == g);
    assert_string_equal(print(back).c_str(), text.c_str());
    assert_non_null(std::strstr(text.c_str(), "p0: bf16[2, 1, 77], p1: bf16[2, 100, 77], p2: "
                                              "bf16[2, 25, 77] = split(u, axis=1, sizes=[1, 100, "
                                              "25])\n"));
    // A literal's value survives exactly; the first operand keeps its place.
    const Node &r = g.node(*g.find("r"));
    assert_true(r.scalar && *r.scalar == 1.5f && r.scalar_first);
}

void expect_error(const char *text, unsigned line, const char *contains) {
    try {
        parse(text, "t.nir");
    } catch (const ParseError &e) {
        if (e.line() != line || std::string(e.what()).find(contains) == std::string::npos)
            fail_msg("'%s': got line %u: %s; want line %u and '%s'", text, e.line(), e.what(), line,
                     contains);
        return;
    }
    fail_msg("'%s' parsed", text);
}

void text_errors(void **) {
    expect_error("graph g\ninput x: fp64[3]", 2, "t.nir:2:10: unknown dtype 'fp64'");
    expect_error("input x: fp32[3]\ny = frob(x)", 2, "unknown operator 'frob'");
    expect_error("input x: fp32[3]\ny = relu(z)", 2, "'z' is not defined");
    expect_error("input x: fp32[3]\ninput x: fp32[3]", 2, "'x' is defined twice");
    expect_error("input a: fp32[2, 3]\ninput b: fp32[4, 3]\nc = matmul(a, b)", 3,
                 "contraction sizes differ (3 vs 4)");
    expect_error("input a: fp32[2, 3]\nb: fp32[2, 4] = relu(a)", 2,
                 "declared fp32[2, 4] but relu gives fp32[2, 3]");
    expect_error("input a: fp32[2, 3]\ninput b: fp32[5]\nc = add(a, b)", 3,
                 "shapes do not broadcast");
    expect_error("input a: fp32[2, 3]\nb = reshape(a, shape=[4, 2])", 2,
                 "[4, 2] has 8 elements, the input 6");
    expect_error("input a: fp32[2 3]", 1, "expected ']'");
    expect_error("const c: fp32[2] = [1, 2, 3]", 1, "has 3 values, needs 2");
    expect_error("input a: fp32[2]\noutput b", 2, "output 'b' is not defined");
    expect_error("input a: int32[2]\nb = exp(a)", 2, "int32 is supported by");
    expect_error("input a: fp32[2]\nb = relu(a) extra", 2, "unexpected 'extra'");
    expect_error("input a: fp32[2, 3]\nb = softmax(a, axis=0)", 2, "last axis only");
    // split: the pieces, the operand's type and why
    expect_error("input x: fp32[4, 6]\na, b = split(x, axis=1, sizes=[2, 3])", 2,
                 "t.nir:2:1: 'a, b' (split) of x: fp32[4, 6]: the sizes [2, 3] add up to 5, but "
                 "axis 1 has 6 elements");
    expect_error("input x: fp32[4, 6]\na, b = split(x, axis=2)", 2,
                 "'a, b' (split) of x: fp32[4, 6]: axis 2 out of range for rank 2");
    expect_error("input x: fp32[4, 7]\na, b = split(x, axis=-1)", 2,
                 "axis 1 has 7 elements, which do not split into 2 equal pieces");
    expect_error("input x: fp32[4, 6]\na, b = split(x, axis=1, sizes=[6])", 2,
                 "2 names for 1 sizes [6]");
    expect_error("input x: fp32[4, 6]\na, b = split(x, axis=1, sizes=[7, -1])", 2,
                 "a size of -1 in [7, -1] (every piece has at least one element)");
    expect_error("input x: fp32[4, 6]\na, a = split(x)", 2, "'a' is defined twice");
    expect_error("input x: fp32[4, 6]\na, b = relu(x)", 2,
                 "2 values for relu, which makes one (split makes several)");
    expect_error("input x: fp32[4, 6]\na = reshape(x, sizes=[24])", 2,
                 "reshape has no attribute 'sizes'");
    expect_error("input x: fp32[4, 6]\na: fp32[2, 6], b: fp32[3, 6] = split(x)", 2,
                 "'b' is declared fp32[3, 6] but split gives fp32[2, 6]");
    Graph g("g");
    uint32_t x = g.input("x", T(DType::fp32, {4, 6}));
    try {
        g.add(Op::split, "s", {x});
        fail_msg("split through Graph::add()");
    } catch (const GraphError &e) {
        assert_non_null(std::strstr(e.what(), "Graph::split() names them"));
    }
}

// --- operators, one graph per shape ---------------------------------------

std::string shape_name(const Shape &s) {
    std::string n;
    for (int64_t d : s)
        n += (n.empty() ? "" : "x") + std::to_string(d);
    return n;
}

// "o (attention of q: fp32[..], k: ...)" for messages.
std::string fmt_case(const Graph &g, uint32_t node) {
    const Node &n = g.node(node);
    std::string s = n.name + " (" + to_string(n.op) + " of";
    for (uint32_t o : n.operands)
        s += (s.back() == 'f' ? " " : ", ") + g.node(o).name + ": " + to_string(g.node(o).type);
    return s + (n.causal ? ", causal)" : ")");
}

// Every elementwise operator, broadcast form and normalisation on one input.
void elementwise_ops(DType dt) {
    const std::vector<Shape> shapes = {{1},           {2, 77},  {127, 129}, {300, 2},
                                       {2, 129, 200}, {200, 1}, {129, 300}};
    uint64_t seed = 100;
    for (const Shape &s : shapes) {
        Graph g("ew_" + shape_name(s) + "_" + to_string(dt));
        const int64_t C = s.back();
        Shape col = s;
        col.back() = 1;
        uint32_t x = g.input("x", T(dt, s));
        uint32_t y = g.input("y", T(dt, s));
        uint32_t den = g.input("den", T(dt, s));
        uint32_t row = g.input("row", T(dt, {C}));
        uint32_t denrow = g.input("denrow", T(dt, {1, C}));
        uint32_t column = g.input("column", T(dt, col));
        uint32_t one = g.input("one", T(dt, {1}));
        int k = 0;
        auto name = [&](const char *b) { return std::string(b) + std::to_string(k++); };
        for (Op op : {Op::relu, Op::gelu, Op::gelu_tanh, Op::silu, Op::sigmoid, Op::tanh, Op::exp})
            g.add(op, name(to_string(op)), {x});
        for (Op op : {Op::add, Op::sub, Op::mul}) {
            g.add(op, name("same"), {x, y});
            g.add(op, name("row"), {x, row});
            g.add(op, name("rowl"), {row, x});
            g.add(op, name("col"), {x, column});
            g.add(op, name("coll"), {column, x});
            g.add(op, name("one"), {x, one});
            Attrs lit;
            lit.scalar = 0.375f;
            g.add(op, name("lit"), {x}, lit);
            lit.scalar_first = true;
            g.add(op, name("litl"), {x}, lit);
        }
        g.add(Op::div, name("div"), {x, den});
        g.add(Op::div, name("divrow"), {x, denrow});
        g.add(Op::div, name("rdiv"), {y, den}); // y / den, den in [0.5, 1.5)
        Attrs lit;
        lit.scalar = -1.75f;
        g.add(Op::div, name("divlit"), {x}, lit);
        lit.scalar_first = true;
        g.add(Op::div, name("rdivlit"), {den}, lit);
        g.add(Op::softmax, "softmax", {x});
        uint32_t gam = g.input("gamma", T(dt, {C})), bet = g.input("beta", T(dt, {C}));
        g.add(Op::layer_norm, "ln", {x});
        g.add(Op::layer_norm, "ln_affine", {y, gam, bet});
        g.add(Op::rms_norm, "rms", {x});
        g.add(Op::rms_norm, "rms_w", {y, gam});
        check(g, seed++, g.name());
    }
}

void elementwise_fp32(void **) {
    elementwise_ops(DType::fp32);
}
void elementwise_bf16(void **) {
    elementwise_ops(DType::bf16);
}

// An operand whose rows repeat over the result's leading axes: a [Q, K]
// mask shared by the heads of [H, Q, K] and [B, H, Q, K] values, and a
// [B, 1, Q, K] mask shared by the heads of each batch, on either side of
// add, sub, mul and div. Q of 1, 77, 128, 200 and 300 puts the mask's rows
// at every phase of a row tile (a tile of 128 rows wraps around 77 or 200
// of them); K of 1, 77 and 129. And rows that repeat over the axis before
// the last, each over a run of result rows: a [B, 1, 1, K] key padding
// mask over the heads and queries of [B, H, Q, K] (an input, a [B, K]
// input viewed as one, a computed value, on either side), [B, H, 1, K]
// per head, [1, H, 1, K] whose rows come round again for every batch
// index, and [B, 1, K] over the queries of [B, Q, K].
void repeated_rows(DType dt) {
    uint64_t seed = 150;
    for (int64_t Q : {1, 77, 128, 200, 300})
        for (int64_t K : {1, 77, 129}) {
            Graph g("rows_" + std::to_string(Q) + "x" + std::to_string(K) + "_" + to_string(dt));
            uint32_t x3 = g.input("x3", T(dt, {3, Q, K})), x4 = g.input("x4", T(dt, {2, 2, Q, K}));
            uint32_t m = g.input("m", T(dt, {Q, K})), mb = g.input("mb", T(dt, {2, 1, Q, K}));
            uint32_t den = g.input("den", T(dt, {Q, K}));
            g.add(Op::add, "heads", {x3, m});
            g.add(Op::sub, "heads_l", {m, x3});
            g.add(Op::add, "batch_heads", {x4, m});
            g.add(Op::mul, "batch_heads_l", {m, x4});
            g.add(Op::div, "div", {x4, den});
            g.add(Op::add, "per_batch", {x4, mb});
            g.add(Op::sub, "per_batch_l", {mb, x4});
            uint32_t pad = g.input("pad", T(dt, {2, 1, 1, K}));
            uint32_t keys = g.input("keys", T(dt, {2, K}));
            uint32_t head_keys = g.input("head_keys", T(dt, {2, 2, 1, K}));
            uint32_t cycling = g.input("cycling", T(dt, {1, 2, 1, K}));
            uint32_t keys3 = g.input("keys3", T(dt, {3, 1, K}));
            uint32_t den_keys = g.input("den_keys", T(dt, {2, 1, 1, K}));
            Attrs view;
            view.dims = {2, 1, 1, K};
            Attrs half;
            half.scalar = 0.5f;
            g.add(Op::add, "padding", {x4, pad});
            g.add(Op::sub, "padding_l", {pad, x4});
            g.add(Op::add, "padding_view", {x4, g.add(Op::reshape, "keys_view", {keys}, view)});
            g.add(Op::mul, "padding_computed",
                  {g.add(Op::mul, "pad_half", {pad}, half), x4}); // in SBUF
            g.add(Op::div, "padding_div", {x4, den_keys});
            g.add(Op::add, "per_head_keys", {x4, head_keys});
            g.add(Op::sub, "cycling_keys", {x4, cycling});
            g.add(Op::add, "query_keys", {x3, keys3});
            check(g, seed++, g.name());
            // A row tile reads the mask in a few runs, not row by row: at
            // most three TENSOR_TENSORs per tile (the mask's wrap and a
            // row tile boundary of the mask), two when the mask is
            // repeated down the partitions (Q below 128).
            Graph one("rows_one");
            one.mark_output(one.add(
                Op::add, "y", {one.input("x", T(dt, {3, Q, K})), one.input("m", T(dt, {Q, K}))}));
            const std::string text = disassemble(compile(one).program);
            size_t tt = 0;
            for (size_t at = text.find("tensor_tensor"); at != std::string::npos;
                 at = text.find("tensor_tensor", at + 1))
                tt++;
            const size_t tiles = static_cast<size_t>((3 * Q + 127) / 128);
            if (tt > (Q < 128 ? 2 : 3) * tiles)
                fail_msg("%s: %zu TENSOR_TENSORs for %zu row tiles:\n%s", g.name().c_str(), tt,
                         tiles, text.c_str());
            // A key padding mask: one TENSOR_TENSOR per row tile; its rows
            // loaded once per run of 3 Q rows and once more per tile that
            // starts inside a run after another; when the runs are whole
            // tiles, once per batch index. Read from memory where used, the
            // mask has no SBUF buffer of its own.
            Graph pg("padding_one");
            pg.mark_output(
                pg.add(Op::add, "y",
                       {pg.input("x", T(dt, {2, 3, Q, K})), pg.input("m", T(dt, {2, 1, 1, K}))}));
            const Compiled pc = compile(pg);
            const std::string pt = disassemble(pc.program);
            const size_t m_at = pc.plan.find("\nm ");
            const std::string m_line =
                m_at == std::string::npos
                    ? std::string()
                    : pc.plan.substr(m_at + 1, pc.plan.find('\n', m_at + 1) - m_at - 1);
            if (m_line.find("read from memory where used") == std::string::npos)
                fail_msg("%s: the mask has an SBUF buffer:\n%s", g.name().c_str(), pc.plan.c_str());
            auto count = [&](const char *what) {
                size_t c = 0;
                for (size_t at = pt.find(what); at != std::string::npos; at = pt.find(what, at + 1))
                    c++;
                return c;
            };
            const size_t ptiles = static_cast<size_t>((6 * Q + 127) / 128);
            const size_t loads = count("<- slot1 (m)");
            if (count("tensor_tensor") != ptiles || loads > ptiles + 1 ||
                (3 * Q % 128 == 0 && loads != 2))
                fail_msg("%s: %zu TENSOR_TENSORs and %zu loads of the mask for %zu row tiles:\n%s",
                         g.name().c_str(), count("tensor_tensor"), loads, ptiles, pt.c_str());
        }
}

void repeated_rows_fp32(void **) {
    repeated_rows(DType::fp32);
}
void repeated_rows_bf16(void **) {
    repeated_rows(DType::bf16);
}

// matmul: K and N across 128 and 512, partial row tiles, transposes of
// inputs and of constants, batch dimensions.
void matmul_ops(DType dt) {
    struct Case {
        Shape a, b;
        bool ta, tb, b_const;
    };
    const std::vector<Case> cases = {
        {{1, 1}, {1, 1}, false, false, false},
        {{2, 129}, {129, 77}, false, false, true},
        {{300, 200}, {200, 600}, false, false, true}, // N > 512, M and K > 128
        {{127, 300}, {300, 2}, false, false, false},
        {{129, 77}, {129, 200}, true, false, false},        // A^T
        {{200, 129}, {77, 129}, false, true, true},         // torch's linear: W [out, in]
        {{77, 129}, {300, 129}, false, true, false},        // B^T of an input
        {{2, 77, 129}, {2, 129, 200}, false, false, false}, // batched
        {{2, 129, 77}, {77, 2}, false, false, true},        // batch x 2-d
    };
    uint64_t seed = 200;
    for (const Case &c : cases) {
        Graph g("mm_" + shape_name(c.a) + "_" + shape_name(c.b) + "_" + to_string(dt));
        uint32_t a = g.input("a", T(dt, c.a));
        int64_t k = c.b[c.b.size() - (c.tb ? 1 : 2)];
        uint32_t b = c.b_const ? g.constant("b", T(dt, c.b),
                                            ConstantInit{{}, seed, 1.0f / std::sqrt(float(k))})
                               : g.input("b", T(dt, c.b));
        Attrs at;
        at.transpose_a = c.ta;
        at.transpose_b = c.tb;
        g.add(Op::matmul, "y", {a, b}, at);
        check(g, seed++, g.name());
    }
}

void matmul_fp32(void **) {
    matmul_ops(DType::fp32);
}
void matmul_bf16(void **) {
    matmul_ops(DType::bf16);
}

// fp16 through the same paths: its own rounding and bounds.
void fp16_ops(void **) {
    Graph g("fp16");
    uint32_t x = g.input("x", T(DType::fp16, {129, 200}));
    uint32_t w = g.constant("w", T(DType::fp16, {200, 77}), ConstantInit{{}, 31, 0.07f});
    uint32_t r = g.input("row", T(DType::fp16, {77}));
    uint32_t h = g.add(Op::matmul, "h", {x, w});
    uint32_t z = g.add(Op::add, "z", {h, r});
    g.add(Op::gelu, "y", {z});
    g.add(Op::softmax, "p", {z});
    g.add(Op::layer_norm, "n", {x});
    check(g, 32, g.name());
}

void data_movement(void **) {
    uint64_t seed = 300;
    for (DType dt : {DType::fp32, DType::bf16, DType::fp16, DType::int32}) {
        Graph g(std::string("move_") + to_string(dt));
        uint32_t x = g.input("x", T(dt, {2, 129, 77}));
        uint32_t z = g.input("z", T(dt, {300, 200}));
        Attrs a;
        a.dims = {258, 77}; // keeps the last axis: shares the buffer
        g.add(Op::reshape, "merge", {x}, a);
        a.dims = {2, 77, 129}; // a new last axis
        g.add(Op::reshape, "reshape", {x}, a);
        a.dims = {600, 100};
        g.add(Op::reshape, "reshape2", {z}, a);
        a.dims = {1, 0, 2};
        g.add(Op::transpose, "perm", {x}, a);
        a.dims = {0, 2, 1};
        g.add(Op::transpose, "swap", {x}, a);
        a.dims = {1, 0};
        g.add(Op::transpose, "zt", {z}, a);
        for (int64_t axis : {0, 1, 2}) {
            Attrs s;
            s.axis = axis;
            s.start = 1;
            s.end = -1 + (axis == 0 ? 1 : 0);
            g.add(Op::slice, "slice" + std::to_string(axis), {x}, s);
            Attrs c;
            c.axis = axis;
            g.add(Op::concat, "concat" + std::to_string(axis), {x, x}, c);
        }
        // split: equal pieces, given sizes, a negative axis
        Attrs sp;
        sp.axis = 0;
        g.split({"batch0", "batch1"}, x, sp);
        sp.axis = 1;
        sp.dims = {1, 100, 28};
        g.split({"rows0", "rows1", "rows2"}, x, sp);
        sp.axis = -1;
        sp.dims = {70, 7};
        g.split({"cols0", "cols1"}, x, sp);
        sp.axis = 0;
        sp.dims = {128, 1, 171};
        g.split({"zr0", "zr1", "zr2"}, z, sp);
        if (dt == DType::int32) { // int32 arithmetic: exact below 2^24
            Attrs lit;
            lit.scalar = 3;
            g.add(Op::mul, "imul", {z}, lit);
            g.add(Op::add, "iadd", {z, z});
        }
        check(g, seed++, g.name());
    }
}

// split as a model uses it: q, k and v from one matmul; a piece and the
// data movement after it are one gather; a piece nobody reads moves
// nothing.
void split_pieces(void **) {
    uint64_t seed = 350;
    for (DType dt : {DType::fp32, DType::bf16}) {
        Graph g(std::string("split_qkv_") + to_string(dt));
        uint32_t x = g.input("x", T(dt, {77, 129}));
        uint32_t w = g.constant("w", T(dt, {129, 3 * 64}), ConstantInit{{}, seed, 0.088f});
        uint32_t qkv = g.add(Op::matmul, "qkv", {x, w});
        Attrs sp;
        sp.axis = -1;
        std::vector<uint32_t> p = g.split({"q", "k", "v"}, qkv, sp);
        Attrs heads, perm;
        heads.dims = {77, 2, 32};
        perm.dims = {1, 0, 2};
        uint32_t qh = g.add(Op::reshape, "qh", {p[0]}, heads);
        g.mark_output(g.add(Op::transpose, "qt", {qh}, perm));
        g.mark_output(p[2]);
        auto in = harness::make_inputs(g, seed);
        auto o = harness::run(g, in);
        const std::string &plan = o.compiled.plan;
        if (plan.find("fused: qh, qt") == std::string::npos ||
            plan.find("\nk ") != std::string::npos)
            fail_msg("%s: q, qh and qt are not one gather, or k is lowered:\n%s", g.name().c_str(),
                     plan.c_str());
        harness::check_carried(g, in, o, g.name());
        check(g, seed++, g.name());
    }
    // Pieces that are whole row tiles of their operand are views of its
    // buffer: no instruction moves them (exp and tanh are ACTIVATEs, the
    // stores DMAs; a gather would be COPYs on the Vector engine).
    for (DType dt : {DType::fp32, DType::bf16}) {
        Graph g(std::string("split_views_") + to_string(dt));
        uint32_t x = g.input("x", T(dt, {3, 128, 77}));
        uint32_t e = g.add(Op::exp, "e", {x});
        Attrs given;
        given.dims = {1, 2};
        auto batch = g.split({"b0", "b1"}, e, given); // [1, 128, 77], [2, 128, 77]
        auto rows = g.split({"r0", "r1"}, batch[1]);  // a view of a view
        g.mark_output(batch[0]);
        g.mark_output(rows[1]);
        g.mark_output(g.add(Op::tanh, "t", {rows[0]}));
        auto in = harness::make_inputs(g, seed);
        auto o = harness::run(g, in);
        if (o.compiled.stats.insns[1] != 0)
            fail_msg("%s: %u Vector instructions; the pieces are views:\n%s", g.name().c_str(),
                     o.compiled.stats.insns[1], o.compiled.plan.c_str());
        harness::check_carried(g, in, o, g.name());
        check(g, seed++, g.name());
    }
}

// A concatenation of pieces made after the first one (a flip: the pieces
// of a split in reverse order; a stack of reshapes) reads each piece after
// it is made: the gather that fuses the first piece's chain waits for them.
void concat_of_later_pieces(void **) {
    uint64_t seed = 380;
    for (DType dt : {DType::fp32, DType::bf16}) {
        Graph g(std::string("flip_") + to_string(dt));
        uint32_t x = g.input("x", T(dt, {5, 3, 7}));
        uint32_t y = g.input("y", T(dt, {3, 7}));
        uint32_t e = g.add(Op::exp, "e", {x});
        Attrs rows;
        rows.axis = 0;
        rows.dims = {1, 1, 1, 1, 1};
        auto p = g.split({"p0", "p1", "p2", "p3", "p4"}, e, rows);
        Attrs c;
        c.axis = 0;
        g.mark_output(g.add(Op::concat, "flipped", {p[4], p[3], p[2], p[1], p[0]}, c));
        Attrs grown;
        grown.dims = {3, 1, 7};
        uint32_t a = g.add(Op::reshape, "a", {y}, grown);
        uint32_t t = g.add(Op::tanh, "t", {y});
        uint32_t b = g.add(Op::reshape, "b", {t}, grown);
        c.axis = 1;
        g.mark_output(g.add(Op::concat, "stacked", {a, b}, c));
        // as it is (all_outputs would keep the pieces from fusing)
        auto in = harness::make_inputs(g, seed);
        auto o = harness::run(g, in);
        harness::check_carried(g, in, o, g.name());
        check(g, seed++, g.name());
    }
}

// A reshape from or to a last axis of 1 ([r, c, 1] -> [r, c], [r, c] ->
// [r, c, 1]): TRANSPOSE blocks of up to 128 elements, not a COPY per element
// (mvlgamma's [1029, 917, 1] -> [1029, 917] took minutes to compile).
void reshape_last_axis_of_one(void **) {
    uint64_t seed = 390;
    for (DType dt : {DType::fp32, DType::bf16}) {
        Graph g(std::string("reshape_ones_") + to_string(dt));
        uint32_t x = g.input("x", T(dt, {300, 130, 1}));
        uint32_t y = g.input("y", T(dt, {77, 200}));
        Attrs a;
        a.dims = {300, 130};
        g.mark_output(g.add(Op::reshape, "dropped", {g.add(Op::exp, "e", {x})}, a));
        a.dims = {77, 200, 1};
        g.mark_output(g.add(Op::reshape, "added", {g.add(Op::tanh, "t", {y})}, a));
        a.dims = {15400, 1};
        g.mark_output(g.add(Op::reshape, "column", {y}, a));
        auto in = harness::make_inputs(g, seed);
        auto o = harness::run(g, in);
        // (a gather would be 300 * 130 + 2 * 77 * 200 COPYs on the Vector engine)
        if (o.compiled.stats.insns[1] > 64)
            fail_msg("%s: %u Vector instructions; the reshapes are transposes:\n%s",
                     g.name().c_str(), o.compiled.stats.insns[1], o.compiled.plan.c_str());
        harness::check_carried(g, in, o, g.name());
        check(g, seed++, g.name());
    }
}

// --- fused patterns: checked end to end ------------------------------------

// y = f(x W + b): one ACTIVATE per PSUM block evacuates matmul, bias and f.
void fused_linear(void **) {
    uint64_t seed = 400;
    for (DType dt : {DType::fp32, DType::bf16})
        for (Op f : {Op::gelu, Op::relu, Op::silu, Op::gelu_tanh, Op::sigmoid, Op::tanh}) {
            Graph g(std::string("linear_") + to_string(f) + "_" + to_string(dt));
            const int64_t T_ = 200, DI = 300, DO = 600;
            uint32_t x = g.input("x", T(dt, {T_, DI}));
            uint32_t w = g.constant("w", T(dt, {DI, DO}), ConstantInit{{}, seed, 0.06f});
            uint32_t b = g.constant("b", T(DType::fp32 == dt ? dt : dt, {DO}),
                                    ConstantInit{{}, seed + 1, 0.06f});
            uint32_t h = g.add(Op::matmul, "h", {x, w});
            uint32_t z = g.add(Op::add, "z", {h, b});
            uint32_t y = g.add(f, "y", {z});
            g.mark_output(y);
            auto in = harness::make_inputs(g, seed++);
            auto o = harness::run(g, in);
            // One ACTIVATE per (row tile, 512-column block), nothing else
            // on the Scalar engine, no Vector pass over the output.
            const uint32_t blocks = 2 * 2;
            assert_int_equal(o.compiled.stats.insns[2], blocks);
            assert_true(o.compiled.plan.find("fused: z, y") != std::string::npos);
            // Reference: bias + matmul in double; the device's error is
            // the matmul's (with the bias as one more product) through f,
            // whose slope is at most 1.13 for these functions, plus f's own.
            auto ref = evaluate(g, in);
            const auto &xv = ref[x], &wv = ref[w], &bv = ref[b];
            const auto &got = o.outputs.at("y");
            size_t bad = 0;
            for (int64_t t = 0; t < T_; t++)
                for (int64_t j = 0; j < DO; j++) {
                    double sa = std::fabs(bv[static_cast<size_t>(j)]);
                    for (int64_t i = 0; i < DI; i++)
                        sa += std::fabs(xv[static_cast<size_t>(t * DI + i)] *
                                        wv[static_cast<size_t>(i * DO + j)]);
                    size_t e = static_cast<size_t>(t * DO + j);
                    double r = ref[y][e];
                    double bound = 1.13 * (1e-5 * sa + 1e-6) + 1e-5 * std::fabs(r) + 1e-6;
                    if (dt == DType::bf16)
                        bound += 1e-2 * std::fabs(r) + 1e-3;
                    bad += !(std::fabs(got[e] - r) <= bound);
                }
            if (bad)
                fail_msg("%s: %zu elements beyond the bound", g.name().c_str(), bad);
        }
}

// The torch bridge's Linear: the weight read transposed and the bias
// declared after the matmul that adds it. Still one ACTIVATE per block, and
// the same bits as the graph that declares the bias first.
void fused_linear_late_bias(void **) {
    const int64_t T_ = 128, DI = 256, DO = 512;
    auto graph = [&](bool late) {
        Graph g(late ? "linear_late_bias" : "linear_early_bias");
        uint32_t x = g.input("x", T(DType::fp32, {1, T_, DI}));
        uint32_t w = g.constant("w", T(DType::fp32, {DO, DI}), ConstantInit{{}, 500, 0.06f});
        auto bias = [&] {
            return g.constant("b", T(DType::fp32, {DO}), ConstantInit{{}, 501, 0.06f});
        };
        uint32_t b = late ? 0 : bias();
        Attrs tb;
        tb.transpose_b = true;
        uint32_t h = g.add(Op::matmul, "h", {x, w}, tb);
        if (late)
            b = bias();
        uint32_t z = g.add(Op::add, "z", {h, b});
        g.mark_output(g.add(Op::gelu, "y", {z}));
        return g;
    };
    Graph early = graph(false), late = graph(true);
    auto in = harness::make_inputs(early, 502);
    auto oe = harness::run(early, in), ol = harness::run(late, in);
    assert_true(ol.compiled.plan.find("fused: z, y") != std::string::npos);
    assert_int_equal(ol.compiled.stats.insns[2], 1); // Scalar: one ACTIVATE
    assert_int_equal(ol.compiled.stats.insns[1], oe.compiled.stats.insns[1]);
    const auto &ye = oe.outputs.at("y"), &yl = ol.outputs.at("y");
    assert_int_equal(ye.size(), yl.size());
    assert_memory_equal(ye.data(), yl.data(), ye.size() * sizeof(float));
}

// Elementwise chains: x * s + b then f in one ACTIVATE; two literal ops in
// one TENSOR_SCALAR; the matmul's residual add in its evacuation.
void fused_chains(void **) {
    Graph g("chains");
    uint32_t x = g.input("x", T(DType::fp32, {129, 300}));
    uint32_t r = g.input("r", T(DType::fp32, {129, 77}));
    uint32_t w = g.constant("w", T(DType::fp32, {300, 77}), ConstantInit{{}, 5, 0.05f});
    Attrs m, a;
    m.scalar = 0.5f;
    a.scalar = 0.25f;
    uint32_t s = g.add(Op::mul, "s", {x}, m);
    uint32_t t = g.add(Op::add, "t", {s}, a);
    uint32_t e = g.add(Op::tanh, "e", {t});
    g.mark_output(e);
    uint32_t u = g.add(Op::mul, "u", {x}, m);
    uint32_t v = g.add(Op::add, "v", {u}, a);
    g.mark_output(v);
    uint32_t h = g.add(Op::matmul, "h", {x, w});
    uint32_t o = g.add(Op::add, "o", {h, r});
    g.mark_output(o);
    auto in = harness::make_inputs(g, 9);
    auto out = harness::run(g, in);
    const std::string &plan = out.compiled.plan;
    assert_true(plan.find("fused: t, e") != std::string::npos);
    assert_true(plan.find("fused: v") != std::string::npos);
    assert_true(plan.find("fused: o") != std::string::npos);
    // Scalar runs the two ACTIVATEs of the tanh chain (two row tiles), no more.
    assert_int_equal(out.compiled.stats.insns[2], 2);
    auto ref = evaluate(g, in);
    auto within = [&](uint32_t node, double rtol, double atol, bool exact) {
        const auto &got = out.outputs.at(g.node(node).name);
        for (size_t i = 0; i < got.size(); i++) {
            double want = ref[node][i];
            bool ok = exact ? got[i] == static_cast<float>(want)
                            : std::fabs(got[i] - want) <= rtol * std::fabs(want) + atol;
            if (!ok)
                fail_msg("%s[%zu]: %.9g vs %.9g", g.node(node).name.c_str(), i, double(got[i]),
                         want);
        }
    };
    within(e, 1e-5, 1e-6, false);
    // (x * 0.5) + 0.25 with one rounding each: 0.5 x is exact, so one rounding
    within(v, 0, 0, true);
    const auto &got = out.outputs.at("o");
    for (int64_t i = 0; i < 129; i++)
        for (int64_t j = 0; j < 77; j++) {
            double sa = std::fabs(ref[r][static_cast<size_t>(i * 77 + j)]);
            for (int64_t k = 0; k < 300; k++)
                sa += std::fabs(ref[x][static_cast<size_t>(i * 300 + k)] *
                                ref[w][static_cast<size_t>(k * 77 + j)]);
            size_t f = static_cast<size_t>(i * 77 + j);
            if (!(std::fabs(got[f] - ref[o][f]) <= 1e-5 * sa + 1e-6))
                fail_msg("o[%zu]: %.9g vs %.9g", f, double(got[f]), ref[o][f]);
        }
}

// --- neg ---------------------------------------------------------------------

// neg alone on odd shapes, each element -x bit for bit; fused into a
// matmul's evacuation, an ACTIVATE's scale and a two-op TENSOR_SCALAR,
// within the bound carried from the inputs; its text form.
void neg_ops(DType dt) {
    const std::vector<Shape> shapes = {{1}, {2, 77}, {127, 129}, {300, 2}, {2, 129, 200}};
    uint64_t seed = 700;
    for (const Shape &s : shapes) {
        Graph g("neg_" + shape_name(s) + "_" + to_string(dt));
        g.add(Op::neg, "n", {g.input("x", T(dt, s))});
        check(g, seed++, g.name());
    }
    Graph g(std::string("neg_fused_") + to_string(dt));
    const uint32_t x = g.input("x", T(dt, {200, 129}));
    const uint32_t w = g.constant("w", T(dt, {129, 77}), ConstantInit{{}, 3, 0.1f});
    g.mark_output(g.add(Op::neg, "m", {g.add(Op::matmul, "h", {x, w})}));
    g.mark_output(g.add(Op::gelu, "z", {g.add(Op::neg, "y", {x})}));
    Attrs quarter;
    quarter.scalar = 0.25f;
    g.mark_output(g.add(Op::add, "c", {g.add(Op::neg, "b", {x})}, quarter));
    const auto in = harness::make_inputs(g, seed);
    const auto out = harness::run(g, in);
    for (const char *fused : {"fused: m", "fused: z", "fused: c"})
        if (out.compiled.plan.find(fused) == std::string::npos)
            fail_msg("%s: no '%s' in the plan:\n%s", g.name().c_str(), fused,
                     out.compiled.plan.c_str());
    assert_true(harness::check_carried(g, in, out, g.name()) > 0);
    const std::string text = print(g);
    assert_true(text.find(std::string("m: ") + to_string(T(dt, {200, 77})) + " = neg(h)") !=
                std::string::npos);
    assert_true(parse(text) == g);
}

void neg_fp32(void **) {
    neg_ops(DType::fp32);
}
void neg_bf16(void **) {
    neg_ops(DType::bf16);
}

// --- random graphs ----------------------------------------------------------

// A random graph of the supported operators on random shapes, built so that
// values stay finite: each step applies an operator to an existing value.
Graph random_graph(uint64_t seed, DType dt) {
    Rng rng(seed);
    Graph g("random_" + std::to_string(seed) + "_" + to_string(dt));
    auto pick = [&]() { return sizes[rng.below(7)]; };
    std::vector<uint32_t> vals;
    std::vector<bool> bounded; // |values| stay below a few units
    Shape s0;
    const size_t rank = 1 + rng.below(3);
    for (size_t d = 0; d < rank; d++)
        s0.push_back(pick());
    while (Type{dt, s0}.elements() > 40000)
        s0[rng.below(static_cast<uint32_t>(rank))] = 2;
    vals.push_back(g.input("x", T(dt, s0)));
    bounded.push_back(true);
    int inputs = 0;
    auto fresh = [&](const Shape &s, bool den = false) {
        return g.input((den ? "den" : "in") + std::to_string(inputs++), T(dt, s));
    };
    const int steps = 4 + static_cast<int>(rng.below(5));
    for (int k = 0; k < steps; k++) {
        size_t at = rng.below(static_cast<uint32_t>(vals.size()));
        uint32_t v = vals[at];
        const Shape s = g.node(v).type.shape;
        const int64_t C = s.back();
        std::string name = "v" + std::to_string(k);
        uint32_t out;
        bool bnd = bounded[at];
        switch (rng.below(10)) {
        case 0: {
            Op acts[] = {Op::relu,    Op::gelu, Op::gelu_tanh, Op::silu,
                         Op::sigmoid, Op::tanh, Op::exp};
            Op f = acts[rng.below(bnd ? 7 : 6)];
            out = g.add(f, name, {v});
            bnd = bnd || f == Op::sigmoid || f == Op::tanh;
            break;
        }
        case 1: {
            Op ops[] = {Op::add, Op::sub, Op::mul};
            Op op = ops[rng.below(3)];
            Shape bs = s;
            switch (rng.below(4)) {
            case 0:
                break;
            case 1:
                bs = {C};
                break;
            case 2:
                bs.back() = 1;
                break;
            default:
                bs = {1};
            }
            uint32_t other = fresh(bs);
            out = rng.below(2) ? g.add(op, name, {v, other}) : g.add(op, name, {other, v});
            break;
        }
        case 2: {
            Attrs a;
            a.scalar = rng.uniform(2.0f);
            a.scalar_first = rng.below(2);
            Op ops[] = {Op::add, Op::sub, Op::mul};
            out = g.add(ops[rng.below(3)], name, {v}, a);
            break;
        }
        case 3:
            out = g.add(Op::div, name, {v, fresh(s, true)});
            break;
        case 4: {
            int64_t n = pick();
            if (Type{dt, s}.elements() / C * n > 60000 || C * n > 60000)
                n = 2;
            Attrs a;
            a.transpose_b = rng.below(2);
            Shape ws = a.transpose_b ? Shape{n, C} : Shape{C, n};
            uint32_t w = rng.below(2)
                             ? g.constant("w" + std::to_string(k), T(dt, ws),
                                          ConstantInit{{}, seed + k, 1.0f / std::sqrt(float(C))})
                             : fresh(ws);
            if (s.size() < 2) {
                Attrs r;
                r.dims = {1, C};
                v = g.add(Op::reshape, name + "r", {v}, r);
            }
            out = g.add(Op::matmul, name, {v, w}, a);
            bnd = false;
            break;
        }
        case 5:
            out = g.add(Op::softmax, name, {v});
            bnd = true;
            break;
        case 6: {
            int kind = static_cast<int>(rng.below(3));
            if (kind == 0)
                out = g.add(Op::layer_norm, name, {v});
            else if (kind == 1)
                out = g.add(Op::layer_norm, name, {v, fresh({C}), fresh({C})});
            else
                out = g.add(Op::rms_norm, name, {v, fresh({C})});
            bnd = false;
            break;
        }
        case 7: {
            Attrs a;
            if (s.size() >= 2 && rng.below(2)) {
                for (size_t d = 0; d < s.size(); d++)
                    a.dims.push_back(static_cast<int64_t>(d));
                if (s.size() == 3 && rng.below(2))
                    std::swap(a.dims[0], a.dims[1]);
                else
                    std::swap(a.dims[s.size() - 1], a.dims[s.size() - 2]);
                out = g.add(Op::transpose, name, {v}, a);
            } else {
                int64_t n = Type{dt, s}.elements();
                int64_t d = n % 3 == 0 ? 3 : n % 2 == 0 ? 2 : 1;
                a.dims = {n / d, d};
                if (rng.below(2))
                    a.dims = {-1, C};
                out = g.add(Op::reshape, name, {v}, a);
            }
            break;
        }
        case 8: {
            Attrs a;
            a.axis = rng.below(static_cast<uint32_t>(s.size()));
            int64_t d = s[static_cast<size_t>(*a.axis)];
            if (d < 2) {
                out = g.add(Op::relu, name, {v});
                break;
            }
            a.start = rng.below(static_cast<uint32_t>(d - 1));
            a.end = a.start + 1 + rng.below(static_cast<uint32_t>(d - a.start - 1));
            out = g.add(Op::slice, name, {v}, a);
            break;
        }
        default: {
            Attrs a;
            a.axis = rng.below(static_cast<uint32_t>(s.size()));
            Shape os = s;
            os[static_cast<size_t>(*a.axis)] = pick();
            if (Type{dt, os}.elements() > 60000)
                os[static_cast<size_t>(*a.axis)] = 1;
            out = g.add(Op::concat, name, {v, fresh(os)}, a);
            break;
        }
        }
        vals.push_back(out);
        bounded.push_back(bnd);
    }
    // Dropout and its mask (ISA 1.2) of one value in about a third of the
    // graphs, drawn from a generator of their own so that the steps above
    // stay as they were.
    Rng extra(seed * 0x9e3779b97f4a7c15ull + 1);
    if (extra.below(3) == 0) {
        Attrs a;
        a.p = 0.125f * static_cast<float>(1 + extra.below(6));
        const uint32_t v = vals[extra.below(static_cast<uint32_t>(vals.size()))];
        const uint32_t key = g.input("seed", T(DType::int32, {4}));
        g.add(Op::dropout, "drop", {v, key}, a);
        g.add(Op::dropout_mask, "keep", {v, key}, a);
    }
    return g;
}

uint64_t base_seed() {
    const char *e = std::getenv("NEURON_COMPILER_SEED");
    return e ? std::strtoull(e, nullptr, 0) : 1;
}

void random_graphs(void **) {
    const uint64_t base = base_seed();
    const int count = std::getenv("NEURON_COMPILER_SEED") ? 1 : 24;
    size_t elems = 0, carried = 0;
    for (int i = 0; i < count; i++) {
        uint64_t seed = base + static_cast<uint64_t>(i);
        DType dt = i % 2 ? DType::bf16 : DType::fp32;
        Graph g = harness::all_outputs(random_graph(seed, dt));
        print_message("random graph seed %llu (%s): NEURON_COMPILER_SEED=%llu reruns it\n",
                      static_cast<unsigned long long>(seed), to_string(dt),
                      static_cast<unsigned long long>(seed));
        // The text form holds it exactly.
        assert_true(parse(print(g)) == g);
        auto in = harness::make_inputs(g, seed);
        auto o = harness::run(g, in);
        elems += harness::check_nodes(g, in, o, g.name());
        // From the inputs alone, every value within the bound
        // evaluate_bounded() carries through the graph.
        carried += harness::check_carried(g, in, o, g.name());
    }
    print_message("%zu elements checked, %zu against the bound carried from the inputs\n", elems,
                  carried);
}

// --- the corpus --------------------------------------------------------------

void corpus(void **) {
    std::vector<std::filesystem::path> files;
    for (const auto &e : std::filesystem::directory_iterator(NEURON_COMPILER_CORPUS))
        if (e.path().extension() == ".nir" && !e.path().filename().string().starts_with("encoder"))
            files.push_back(e.path());
    std::sort(files.begin(), files.end());
    assert_true(files.size() >= 4);
    uint64_t seed = 500;
    for (const auto &f : files) {
        Graph g = load(f);
        assert_true(parse(print(g)) == g);
        check(g, seed++, f.filename().string());
        // As written (fused where it can be), the program compiles and runs.
        auto in = harness::make_inputs(g, seed);
        harness::run(g, in);
    }
}

// The BERT-base-sized encoder layer of the corpus (its own CTest test,
// compiler_encoder_768): every node checked, then the fused program run.
void encoder_768(void **) {
    Graph g = load(std::filesystem::path(NEURON_COMPILER_CORPUS) / "encoder_768_fp32.nir");
    check(g, 768, "encoder_768_fp32.nir");
    auto in = harness::make_inputs(g, 769);
    auto o = harness::run(g, in);
    print_message("encoder layer, fused: %llu cycles on the model; %u instructions (tensor %u, "
                  "vector %u, scalar %u, sync %u)\n",
                  static_cast<unsigned long long>(o.cycles),
                  o.compiled.stats.insns[0] + o.compiled.stats.insns[1] +
                      o.compiled.stats.insns[2] + o.compiled.stats.insns[3],
                  o.compiled.stats.insns[0], o.compiled.stats.insns[1], o.compiled.stats.insns[2],
                  o.compiled.stats.insns[3]);
}

// A container saved to a file and loaded back runs as the compiled program:
// what neuron-cc writes is what the device runs.
void container_file(void **) {
    Graph g = load(std::filesystem::path(NEURON_COMPILER_CORPUS) / "mlp_bf16.nir");
    Compiled c = compile(g);
    auto path = std::filesystem::temp_directory_path() /
                ("compiler_container_" + std::to_string(::getpid()) + ".nprog");
    c.program.save(path);
    Program p = Program::load_file(path);
    std::filesystem::remove(path);
    auto in = harness::make_inputs(g, 77);
    std::map<std::string, std::vector<std::byte>> bytes{{"x", pack(DType::bf16, in.at("x"))}};
    model::Run from_file = model::run(p, bytes);
    assert_int_equal(from_file.result.status, EXM_STATUS_OK);
    auto direct = harness::run(g, in);
    auto y = unpack(DType::bf16, from_file.outputs.at("y").data(), direct.outputs.at("y").size());
    assert_true(y == direct.outputs.at("y"));
}

// --- what the lowering refuses, and why --------------------------------------

void expect_compile_error(const Graph &g, const char *contains) {
    try {
        compile(g);
    } catch (const GraphError &e) {
        if (std::string(e.what()).find(contains) == std::string::npos)
            fail_msg("got '%s', want '%s'", e.what(), contains);
        return;
    }
    fail_msg("'%s' compiled", g.name().c_str());
}

void compile_errors(void **) {
    {
        Graph g("both_broadcast");
        uint32_t a = g.input("a", T(DType::fp32, {4, 1})), b = g.input("b", T(DType::fp32, {1, 5}));
        g.mark_output(g.add(Op::add, "c", {a, b}));
        expect_compile_error(g, "'c' (add of a: fp32[4, 1], b: fp32[1, 5] -> fp32[4, 5]): both");
    }
    {
        // a column that repeats over a leading axis: neither a column of
        // every row nor rows of the last axis
        Graph g("repeated_column");
        uint32_t a = g.input("a", T(DType::fp32, {2, 3, 4, 5})),
                 b = g.input("b", T(DType::fp32, {3, 4, 1}));
        g.mark_output(g.add(Op::mul, "c", {a, b}));
        expect_compile_error(g, "'c' (mul of a: fp32[2, 3, 4, 5], b: fp32[3, 4, 1] -> fp32[2, 3, "
                                "4, 5]): broadcast pattern not lowered: the broadcast operand "
                                "must be the same shape, a row [.., C], a column [.., 1], one "
                                "element or rows [.., C] repeated over the result's axes before "
                                "the last; its last axis has 1 elements, the result's 5");
    }
    {
        Graph g("perm");
        uint32_t a = g.input("a", T(DType::fp32, {2, 3, 4}));
        Attrs p;
        p.dims = {2, 0, 1};
        g.mark_output(g.add(Op::transpose, "t", {a}, p));
        expect_compile_error(g, "moves the last axis");
    }
    {
        Graph g("big");
        uint32_t a = g.input("a", T(DType::fp32, {128, 16384}));
        uint32_t b = g.add(Op::exp, "b", {a});
        uint32_t c = g.add(Op::softmax, "c", {b});
        g.mark_output(c);
        g.mark_output(b);
        expect_compile_error(g, "'c' (softmax of b: fp32[128, 16384] -> fp32[128, 16384]): "
                                "graph 'big' needs 196736 bytes of SBUF per partition at its "
                                "peak, the core has 196608; live then: b 65536 bytes, c 65536 "
                                "bytes, c.exp 65536 bytes, c.max 64 bytes, c.sum 64 bytes. Only "
                                "a matmul's weight");
    }
    {
        Graph g("none");
        g.input("a", T(DType::fp32, {2}));
        expect_compile_error(g, "has no outputs");
    }
}

// --- causal softmax ---------------------------------------------------------------

// softmax(x, causal=true) over [.., Q, K]: row q sees keys k <= q only. Q
// below, at and above 128 (rows of one query index in several partitions
// runs of a tile), K below and above Q, fp32 and bf16; the mask is built on
// the device (IOTA, TENSOR_SCALAR is_ge, SELECT), once for all tiles when Q
// divides 128 (several tiles, the last one partial: [3, 64, 70], [3, 128, 40]).
void causal_softmax(void **) {
    const struct {
        DType dt;
        Shape shape;
    } cases[] = {{DType::fp32, {77, 129}},   {DType::fp32, {2, 200, 200}},
                 {DType::fp32, {3, 50, 60}}, {DType::bf16, {2, 129, 77}},
                 {DType::fp32, {1, 1}},      {DType::fp32, {300, 2}},
                 {DType::fp32, {3, 64, 70}}, {DType::bf16, {3, 128, 40}}};
    uint64_t seed = 900;
    for (const auto &c : cases) {
        Graph g("causal");
        uint32_t x = g.input("x", T(c.dt, c.shape));
        Attrs a;
        a.causal = true;
        g.mark_output(g.add(Op::softmax, "p", {x}, a));
        check(g, seed++, "causal softmax " + to_string(g.node(x).type));
        // the masked probabilities are exactly 0
        auto in = harness::make_inputs(g, seed);
        auto o = harness::run(g, in);
        const auto &y = o.outputs.at("p");
        const int64_t K = c.shape.back(), Q = c.shape[c.shape.size() - 2];
        for (size_t f = 0; f < y.size(); f++) {
            int64_t r = static_cast<int64_t>(f) / K, k = static_cast<int64_t>(f) % K;
            if (k > r % Q && y[f] != 0.0f)
                fail_msg("%s: p[%lld] = %g where k %lld > q %lld",
                         to_string(g.node(x).type).c_str(), static_cast<long long>(f),
                         static_cast<double>(y[f]), static_cast<long long>(k),
                         static_cast<long long>(r % Q));
        }
    }
    // Text form.
    Graph t = parse("graph t\ninput x: fp32[4, 4]\np = softmax(x, causal=true)\noutput p\n");
    assert_true(t.node(1).causal);
    assert_true(print(t).find("softmax(x, axis=-1, causal=true)") != std::string::npos);
    assert_true(parse(print(t)) == t);
    // An ISA 1.0 device has neither the comparison nor SELECT.
    CompileOptions v10;
    v10.isa_version = 1u << 16;
    try {
        compile(t, v10);
        fail_msg("a causal softmax compiled for ISA 1.0");
    } catch (const GraphError &e) {
        assert_non_null(std::strstr(e.what(), "'p' (softmax of x: fp32[4, 4] -> fp32[4, 4]): the "
                                              "lowering needs tensor_scalar.is_ge, an instruction "
                                              "of ISA 1.1, but the target device implements ISA "
                                              "1.0"));
    }
    Graph one("one");
    Attrs a;
    a.causal = true;
    try {
        one.add(Op::softmax, "p", {one.input("x", T(DType::fp32, {5}))}, a);
        fail_msg("a causal softmax of one axis");
    } catch (const GraphError &e) {
        assert_non_null(std::strstr(e.what(), "needs the [.., queries, keys] axes"));
    }
}

// --- attention ------------------------------------------------------------------

// softmax(q k^T * scale [+ mask], causal) v computed directly in double.
std::vector<double> direct_attention(const Node &n, const std::vector<const Type *> &t,
                                     const std::vector<const std::vector<double> *> &x) {
    const Shape &qs = t[0]->shape, &ks = t[1]->shape, &vs = t[2]->shape;
    const int64_t Q = qs[qs.size() - 2], D = qs.back(), K = ks[ks.size() - 2], Dv = vs.back();
    const int64_t B = Type{DType::fp32, qs}.elements() / (Q * D);
    const bool kb = ks.size() > 2, vb = vs.size() > 2;
    std::vector<double> out(static_cast<size_t>(B * Q * Dv), 0.0);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < Q; i++) {
            std::vector<double> s(static_cast<size_t>(K));
            double mx = -INFINITY;
            const int64_t kept = n.causal ? std::min(K, i + 1) : K;
            for (int64_t j = 0; j < kept; j++) {
                double d = 0;
                for (int64_t e = 0; e < D; e++)
                    d += (*x[0])[static_cast<size_t>((b * Q + i) * D + e)] *
                         (*x[1])[static_cast<size_t>(((kb ? b * K : 0) + j) * D + e)];
                d *= n.scale;
                if (x.size() > 3) { // the mask broadcast to the scores [.., Q, K]
                    const Shape &ms = t[3]->shape;
                    Shape full(qs.begin(), qs.end() - 2), idx(full.size());
                    for (size_t a = full.size(), r = static_cast<size_t>(b); a-- > 0;) {
                        idx[a] = static_cast<int64_t>(r) % full[a];
                        r /= static_cast<size_t>(full[a]);
                    }
                    full.insert(full.end(), {Q, K});
                    idx.insert(idx.end(), {i, j});
                    int64_t f = 0;
                    for (size_t a = 0; a < ms.size(); a++) {
                        const size_t o = full.size() - ms.size() + a;
                        f = f * ms[a] + (ms[a] == 1 ? 0 : idx[o]);
                    }
                    d += (*x[3])[static_cast<size_t>(f)];
                }
                s[static_cast<size_t>(j)] = d;
                mx = std::max(mx, d);
            }
            double sum = 0;
            for (int64_t j = 0; j < kept; j++)
                sum += std::exp(s[static_cast<size_t>(j)] - mx);
            for (int64_t j = 0; j < kept; j++) {
                const double pj = std::exp(s[static_cast<size_t>(j)] - mx) / sum;
                for (int64_t e = 0; e < Dv; e++)
                    out[static_cast<size_t>((b * Q + i) * Dv + e)] +=
                        pj * (*x[2])[static_cast<size_t>(((vb ? b * K : 0) + j) * Dv + e)];
            }
        }
    return out;
}

// attention(q, k, v[, mask], causal, scale) as one operator: queries and
// keys of 1, 2, 77, 127, 129 and 200, with and without batch dimensions,
// masks of the scores' shape and of one row of keys (some keys at -10000,
// as padding), causal, a given scale. Each output is checked against the
// reference from its operands as the device produced them (hw/isa.md's
// bounds carried through matmul, scale, mask, softmax and matmul) and
// from the inputs (evaluate_bounded()), and the reference against a
// direct computation in double.
void attention_ops(DType dt) {
    // shared: one [Q, K] mask for every batch index and head; per_batch:
    // [B, 1, Q, K], one for the heads of each batch index; padding:
    // [B, 1, 1, K], one row of keys for the heads and queries of each.
    enum Mask { none, scores, keys, shared, per_batch, padding };
    struct Case {
        Shape batch;
        int64_t Q, K, D, Dv;
        Mask mask;
        bool causal;
        std::optional<float> scale;
    };
    const std::vector<Case> cases = {
        {{1}, 1, 1, 64, 64, none, false, {}},
        {{2}, 2, 2, 16, 8, scores, false, {}},
        {{}, 77, 129, 64, 48, keys, false, {}},
        {{2}, 127, 200, 32, 64, none, true, 0.2f},
        {{1}, 129, 77, 64, 64, scores, true, {}},
        {{}, 200, 127, 40, 24, none, false, 1.0f},
        {{2}, 200, 200, 64, 64, keys, true, {}},
        {{1}, 200, 1, 8, 8, scores, false, {}},
        {{}, 1, 200, 129, 2, keys, false, {}},
        {{3}, 77, 129, 32, 32, shared, false, {}},
        {{2, 3}, 200, 77, 16, 8, shared, true, {}},
        {{4}, 2, 5, 8, 8, shared, false, {}},
        {{2, 2}, 129, 200, 16, 16, per_batch, false, {}},
        {{2, 3}, 77, 129, 32, 32, padding, false, {}},
        {{3, 2}, 200, 200, 16, 16, padding, true, {}},
        {{2, 4}, 1, 77, 8, 8, padding, false, 0.3f},
    };
    uint64_t seed = 1000;
    for (const Case &c : cases) {
        Graph g(std::string("attention_") + to_string(dt));
        auto shape = [&](int64_t a, int64_t b) {
            Shape s = c.batch;
            s.push_back(a);
            s.push_back(b);
            return s;
        };
        std::vector<uint32_t> ops = {g.input("q", T(dt, shape(c.Q, c.D))),
                                     g.input("k", T(dt, shape(c.K, c.D))),
                                     g.input("v", T(dt, shape(c.K, c.Dv)))};
        Shape mask_shape = {c.K};
        if (c.mask == scores)
            mask_shape = shape(c.Q, c.K);
        else if (c.mask == shared)
            mask_shape = {c.Q, c.K};
        else if (c.mask == per_batch)
            mask_shape = {c.batch[0], 1, c.Q, c.K};
        else if (c.mask == padding)
            mask_shape = {c.batch[0], 1, 1, c.K};
        if (c.mask != none)
            ops.push_back(g.input("mask", T(dt, mask_shape)));
        Attrs a;
        a.causal = c.causal;
        a.scale = c.scale;
        const uint32_t o = g.add(Op::attention, "o", ops, a);
        g.mark_output(o);
        const std::string what = fmt_case(g, o);
        auto in = harness::make_inputs(g, seed++);
        if (c.mask != none) // padding: every seventh key
            for (size_t f = 0; f < in.at("mask").size(); f++)
                if (f % static_cast<size_t>(c.K) % 7 == 3)
                    in.at("mask")[f] = -10000;
        auto out = harness::run(g, in);
        harness::check_nodes(g, in, out, what);
        harness::check_carried(g, in, out, what);
        const auto bounded = evaluate_bounded(g, in);
        const Comparison cmp = compare(out.outputs.at("o"), bounded[o].value, bounded[o].bound);
        // o is a convex combination of v's rows, values in [-1, 1): a
        // bound of 1 says nothing. Masked keys move no probability,
        // whatever their rounding, and must not widen it.
        const double widest = *std::max_element(bounded[o].bound.begin(), bounded[o].bound.end());
        print_message("%s%s: max |device - reference| %.3g, at most %.3g of the bound carried "
                      "from the inputs, which is at most %.3g\n",
                      what.c_str(), c.mask == keys ? ", key mask" : "", cmp.max_error,
                      cmp.worst_ratio, widest);
        if (!(widest < 1))
            fail_msg("%s: the bound carried from the inputs reaches %g", what.c_str(), widest);
        // The reference is attention.
        std::vector<const std::vector<double> *> x;
        std::vector<const Type *> types;
        const auto ref = evaluate(g, in);
        for (uint32_t op : ops) {
            x.push_back(&ref[op]);
            types.push_back(&g.node(op).type);
        }
        const auto direct = direct_attention(g.node(o), types, x);
        for (size_t f = 0; f < direct.size(); f++)
            if (!(std::fabs(direct[f] - ref[o][f]) <= 1e-6 * std::fabs(direct[f]) + 1e-7))
                fail_msg("%s: the reference's o[%zu] is %.9g, attention computed directly %.9g",
                         what.c_str(), f, ref[o][f], direct[f]);
        // The scale is applied as the scores leave PSUM.
        if (g.node(o).scale != 1 && out.compiled.plan.find("fused: o.scaled") == std::string::npos)
            fail_msg("%s: the scale is not fused into the scores' matmul:\n%s", what.c_str(),
                     out.compiled.plan.c_str());
    }
}

void attention_fp32(void **) {
    attention_ops(DType::fp32);
}
void attention_bf16(void **) {
    attention_ops(DType::bf16);
}

// Its text form, and what it refuses.
void attention_text(void **) {
    const char *text = "graph a\ninput q: fp32[2, 4, 8]\ninput k: fp32[2, 5, 8]\n"
                       "input v: fp32[2, 5, 3]\ninput m: fp32[5]\n"
                       "o = attention(q, k, v, m, causal=true, scale=0.25)\n"
                       "d = attention(q, k, v)\noutput o, d\n";
    Graph g = parse(text);
    const Node &o = g.node(*g.find("o")), &d = g.node(*g.find("d"));
    assert_string_equal(to_string(o.type).c_str(), "fp32[2, 4, 3]");
    assert_true(o.causal && o.scale == 0.25f && !d.causal);
    assert_true(d.scale == static_cast<float>(1 / std::sqrt(8.0)));
    const std::string printed = print(g);
    assert_non_null(std::strstr(printed.c_str(), "o: fp32[2, 4, 3] = attention(q, k, v, m, "
                                                 "scale=0.25, causal=true)\n"));
    assert_true(parse(printed) == g);
    // what compile() lowers: the decomposition, under the attention's name
    Graph dg = g.decomposed();
    for (const char *n : {"o.scores", "o.scaled", "o.masked", "o.probs", "d.probs"})
        assert_true(dg.find(n).has_value());
    assert_true(dg.node(*dg.find("o")).op == Op::matmul);
    assert_true(dg.node(*dg.find("o.probs")).causal);
    expect_error("input q: fp32[4, 8]\ninput k: fp32[5, 7]\ninput v: fp32[5, 3]\n"
                 "o = attention(q, k, v)",
                 4,
                 "'o' (attention) of q: fp32[4, 8], k: fp32[5, 7], v: fp32[5, 3]: q and k differ "
                 "in their last axis (8 vs 7)");
    expect_error("input q: fp32[4, 8]\ninput k: fp32[5, 8]\ninput v: fp32[6, 3]\n"
                 "o = attention(q, k, v)",
                 4, "k has 5 keys, v 6");
    expect_error("input q: fp32[4, 8]\ninput k: fp32[5, 8]\ninput v: fp32[5, 3]\n"
                 "input m: fp32[4, 4]\no = attention(q, k, v, m)",
                 5, "the mask does not broadcast to the scores [4, 5]");
    expect_error("input q: fp32[4, 8]\ninput k: fp32[5, 8]\no = attention(q, k)", 3,
                 "takes 3 to 4 operands");
    expect_error("input q: fp32[4, 8]\ninput k: fp32[5, 8]\no = matmul(q, k, scale=2)", 3,
                 "scale is an attribute of attention only");
    // A mask shared by the batch and a key mask per batch index compile;
    // one broadcast over the keys is refused: the error names the node of
    // the decomposition, its shapes and why.
    for (const char *m : {"fp32[4, 5]", "fp32[2, 1, 5]"})
        try {
            compile(parse(std::string("graph s\ninput q: fp32[2, 4, 8]\ninput k: fp32[2, 5, 8]\n"
                                      "input v: fp32[2, 5, 3]\ninput m: ") +
                          m + "\no = attention(q, k, v, m)\noutput o\n"));
        } catch (const GraphError &e) {
            fail_msg("a %s mask of [2, 4, 5] scores: %s", m, e.what());
        }
    Graph b = parse("graph b\ninput q: fp32[2, 4, 8]\ninput k: fp32[2, 5, 8]\n"
                    "input v: fp32[2, 5, 3]\ninput m: fp32[4, 1]\n"
                    "o = attention(q, k, v, m)\noutput o\n");
    expect_compile_error(b, "'o.masked' (add of o.scaled: fp32[2, 4, 5], m: fp32[4, 1] -> "
                            "fp32[2, 4, 5]): broadcast pattern not lowered: the broadcast "
                            "operand must be the same shape, a row [.., C], a column [.., 1], "
                            "one element or rows [.., C] repeated over the result's axes before "
                            "the last; its last axis has 1 elements, the result's 5");
}

// --- ISA revisions -------------------------------------------------------------

// layer_norm's 1/sqrt(var + eps) is one ACTIVATE rsqrt (ISA 1.1): for a 1.0
// device the compiler refuses, naming the node, the instruction and both
// versions; graphs that need nothing of 1.1 compile for it and declare 1.0.
void isa_targets(void **) {
    Graph g("ln");
    uint32_t x = g.input("x", T(DType::fp32, {200, 77}));
    g.mark_output(g.add(Op::layer_norm, "ln", {x}));
    Compiled c = compile(g);
    assert_int_equal(c.program.isa_version(), 1u << 16 | 1u);
    std::string text = disassemble(c.program);
    if (text.find("activate.rsqrt") == std::string::npos || text.find("int32") != std::string::npos)
        fail_msg("layer_norm is not one rsqrt per tile:\n%s", text.c_str());
    check(g, 11, "layer_norm via rsqrt");

    CompileOptions v10;
    v10.isa_version = 1u << 16;
    try {
        compile(g, v10);
        fail_msg("layer_norm compiled for ISA 1.0");
    } catch (const GraphError &e) {
        const char *want = "'ln' (layer_norm of x: fp32[200, 77] -> fp32[200, 77]): the lowering "
                           "needs activate.rsqrt, an instruction of ISA 1.1, but the target "
                           "device implements ISA 1.0";
        if (std::string(e.what()) != want)
            fail_msg("got '%s'\nwant '%s'", e.what(), want);
    }
    Graph mlp = load(std::filesystem::path(NEURON_COMPILER_CORPUS) / "mlp_bf16.nir");
    assert_int_equal(compile(mlp, v10).program.isa_version(), 1u << 16);

    CompileOptions future;
    future.isa_version = 1u << 16 | 0xffff;
    try {
        compile(mlp, future);
        fail_msg("compiled for ISA 1.65535");
    } catch (const GraphError &e) {
        assert_non_null(
            std::strstr(e.what(), "target ISA 1.65535: this compiler emits ISA 1.0 to"));
    }
}

} // namespace

// --- weights streamed from device memory ----------------------------------------

// The bytes per partition of the plan's peak (`SBUF: N bytes ...`).
uint64_t plan_peak(const Compiled &c) {
    return std::strtoull(c.plan.c_str() + std::strlen("SBUF: "), nullptr, 10);
}

// A matmul whose weight does not fit stays in device memory and passes
// through two panel buffers. Each graph is compiled with the core's SBUF
// (resident) and with one byte less than the resident plan's peak, which
// leaves the weight in memory: the results must be the same bits (the
// same MATMULs accumulate in the same order) and within the bound carried
// from the inputs; the streams pass the synchronisation check (run()).
void streamed_weights(void **) {
    struct Case {
        Shape a, b;
        bool tb, b_const, bias_gelu;
    };
    const std::vector<Case> cases = {
        {{77, 300}, {300, 129}, false, true, false},
        {{200, 300}, {300, 600}, false, true, true}, // N > 512, bias and GELU fused
        {{1, 300}, {300, 77}, false, false, false},  // an input weight, one row
        {{300, 300}, {127, 300}, true, true, false}, // torch's linear: W [out, in], folded
        {{129, 300}, {300, 200}, false, false, false},
        {{2, 77, 300}, {2, 300, 129}, false, false, false}, // batched weight
        {{2, 127, 200}, {200, 1200}, false, true, false},   // batch x 2-d, three blocks of N
    };
    uint64_t seed = 900;
    for (DType dt : {DType::fp32, DType::bf16})
        for (const Case &c : cases) {
            Graph g("stream_" + shape_name(c.a) + "_" + shape_name(c.b) + "_" + to_string(dt));
            uint32_t a = g.input("x", T(dt, c.a));
            const int64_t k = c.b[c.b.size() - (c.tb ? 1 : 2)],
                          n = c.b[c.b.size() - (c.tb ? 2 : 1)];
            uint32_t w = c.b_const ? g.constant("w", T(dt, c.b),
                                                ConstantInit{{}, seed, 1.0f / std::sqrt(float(k))})
                                   : g.input("w", T(dt, c.b));
            Attrs at;
            at.transpose_b = c.tb;
            uint32_t y = g.add(Op::matmul, "h", {a, w}, at);
            if (c.bias_gelu) {
                uint32_t bias = g.constant("b", T(dt, {n}), ConstantInit{{}, seed + 1, 0.1f});
                y = g.add(Op::gelu, "y", {g.add(Op::add, "z", {y, bias})});
            }
            g.mark_output(y);
            auto in = harness::make_inputs(g, seed++);
            auto resident = harness::run(g, in);
            assert_true(resident.compiled.plan.find("streamed") == std::string::npos);
            CompileOptions small;
            small.limits.sbuf_bytes = static_cast<uint32_t>(plan_peak(resident.compiled) - 1);
            auto streamed = harness::run(g, in, small);
            if (streamed.compiled.plan.find(
                    "w                    " + std::string(c.b_const ? "const" : "input") +
                    "        streamed from device memory") == std::string::npos)
                fail_msg("%s: the weight is not streamed:\n%s", g.name().c_str(),
                         streamed.compiled.plan.c_str());
            assert_true(plan_peak(streamed.compiled) <= small.limits.sbuf_bytes);
            const auto &r = resident.outputs.at(g.node(y).name),
                       &s = streamed.outputs.at(g.node(y).name);
            assert_int_equal(r.size(), s.size());
            if (std::memcmp(r.data(), s.data(), r.size() * sizeof(float)) != 0) {
                size_t e = 0;
                while (std::memcmp(&r[e], &s[e], sizeof(float)) == 0)
                    e++;
                fail_msg("%s: streamed %.9g, resident %.9g at element %zu", g.name().c_str(),
                         static_cast<double>(s[e]), static_cast<double>(r[e]), e);
            }
            harness::check_carried(g, in, streamed, g.name());
            print_message("%s: SBUF %llu -> %llu bytes per partition, %llu cycles resident, %llu "
                          "streamed\n",
                          g.name().c_str(),
                          static_cast<unsigned long long>(plan_peak(resident.compiled)),
                          static_cast<unsigned long long>(plan_peak(streamed.compiled)),
                          static_cast<unsigned long long>(resident.cycles),
                          static_cast<unsigned long long>(streamed.cycles));
        }
}

// Activations that do not fit: the rows computed in chunks. Graphs whose
// rows depend on the same rows of their operands (a Linear with bias and
// GELU, layer_norm with weight and bias, softmax, a literal; a product of
// two inputs, a column operand, rms_norm, a matmul with its residual),
// compiled resident and with one byte less than the resident peak, and a
// Linear + bias + GELU on 1000 and 1001 rows with 20000 bytes per
// partition (10000 in bf16; its weight streamed too): the rows in chunks (300 rows: two chunks,
// 1000 and 1001: a last partial tile), the same bits, within the bound carried from the inputs;
// row operands loaded once for all the chunks.
void chunked_rows(void **) {
    uint64_t seed = 950;
    for (DType dt : {DType::fp32, DType::bf16})
        for (int64_t R : {300, 1000, 1001})
            for (int kind = 0; kind < (R > 300 ? 3 : 2); kind++) {
                Graph g("rows" + std::to_string(kind) + "_" + std::to_string(R) + "_" +
                        to_string(dt));
                uint32_t y = 0;
                if (kind == 0) {
                    uint32_t x = g.input("x", T(dt, {R, 129}));
                    uint32_t w = g.constant("w", T(dt, {129, 200}), ConstantInit{{}, seed, 0.088f});
                    uint32_t b = g.constant("b", T(dt, {200}), ConstantInit{{}, seed + 1, 0.1f});
                    uint32_t ga = g.constant("g", T(dt, {200}), ConstantInit{{}, seed + 2, 1.0f});
                    uint32_t be = g.constant("be", T(dt, {200}), ConstantInit{{}, seed + 3, 0.5f});
                    uint32_t h = g.add(Op::matmul, "h", {x, w});
                    uint32_t a = g.add(Op::gelu, "a", {g.add(Op::add, "z", {h, b})});
                    uint32_t n = g.add(Op::layer_norm, "n", {a, ga, be});
                    uint32_t sm = g.add(Op::softmax, "s", {n});
                    Attrs lit;
                    lit.scalar = 3.0f;
                    y = g.add(Op::mul, "y", {sm}, lit);
                } else if (kind == 2) {
                    // a weight streamed and the rows in chunks
                    uint32_t x = g.input("x", T(dt, {R, 512}));
                    uint32_t w = g.constant("w", T(dt, {512, 600}), ConstantInit{{}, seed, 0.044f});
                    uint32_t b = g.constant("b", T(dt, {600}), ConstantInit{{}, seed + 1, 0.1f});
                    uint32_t h = g.add(Op::matmul, "h", {x, w});
                    y = g.add(Op::gelu, "y", {g.add(Op::add, "z", {h, b})});
                } else {
                    // [2, R/2 .., 77]: the rows of two leading axes
                    const Shape sh = R % 2 ? Shape{R, 77} : Shape{2, R / 2, 77};
                    Shape col = sh;
                    col.back() = 1;
                    uint32_t x = g.input("x", T(dt, sh)), u = g.input("u", T(dt, sh));
                    uint32_t c = g.input("c", T(dt, col));
                    uint32_t wn = g.constant("wn", T(dt, {77}), ConstantInit{{}, seed, 1.0f});
                    uint32_t w =
                        g.constant("w", T(dt, {77, 77}), ConstantInit{{}, seed + 1, 0.11f});
                    uint32_t t = g.add(Op::mul, "t", {x, u});
                    uint32_t q = g.add(Op::add, "q", {t, c});
                    uint32_t r = g.add(Op::rms_norm, "r", {q, wn});
                    uint32_t m = g.add(Op::matmul, "m", {r, w});
                    y = g.add(Op::add, "y", {m, x});
                }
                g.mark_output(y);
                auto in = harness::make_inputs(g, seed++);
                auto resident = harness::run(g, in);
                CompileOptions small;
                small.limits.sbuf_bytes =
                    kind == 2 ? (dt == DType::fp32 ? 20000 : 10000)
                              : static_cast<uint32_t>(plan_peak(resident.compiled) - 1);
                auto chunked = harness::run(g, in, small);
                if (chunked.compiled.plan.find("rows in chunks of") == std::string::npos ||
                    (kind == 2 && chunked.compiled.plan.find("w                    const        "
                                                             "streamed") == std::string::npos))
                    fail_msg("%s: the rows are not in chunks:\n%s", g.name().c_str(),
                             chunked.compiled.plan.c_str());
                const auto &a = resident.outputs.at("y"), &b = chunked.outputs.at("y");
                for (size_t e = 0; e < a.size(); e++)
                    if (std::memcmp(&a[e], &b[e], sizeof(float)) != 0)
                        fail_msg("%s: in chunks %.9g, resident %.9g at element %zu",
                                 g.name().c_str(), static_cast<double>(b[e]),
                                 static_cast<double>(a[e]), e);
                harness::check_carried(g, in, chunked, g.name());
                // The row operands (layer_norm's weight and bias) are
                // spread down the partitions once, not once per chunk.
                if (kind == 0) {
                    const std::string text = disassemble(chunked.compiled.program);
                    for (const char *operand : {"g", "be"}) {
                        // The constant's offset in the container's header,
                        // then its loads: "<- slotN (constants)[+OFFSET".
                        const std::string decl = std::string(" ") + operand + " @const+";
                        const size_t d = text.find(decl);
                        assert_true(d != std::string::npos);
                        const size_t o = d + decl.size();
                        const std::string load =
                            "(constants)[+" + text.substr(o, text.find_first_of(" \n", o) - o);
                        size_t loads = 0;
                        for (size_t at = text.find(load); at != std::string::npos;
                             at = text.find(load, at + 1))
                            loads++;
                        if (loads != 1)
                            fail_msg("%s: %zu loads of %s:\n%s", g.name().c_str(), loads, operand,
                                     text.c_str());
                    }
                }
                const std::string &pl = chunked.compiled.plan;
                const size_t l1 = pl.find('\n') + 1;
                print_message("%s: SBUF %llu -> %llu bytes per partition, %s\n", g.name().c_str(),
                              static_cast<unsigned long long>(plan_peak(resident.compiled)),
                              static_cast<unsigned long long>(plan_peak(chunked.compiled)),
                              pl.substr(l1, pl.find('\n', l1) - l1).c_str());
            }
    // A graph that moves elements between rows is not split, and says so.
    Graph g("moves_rows");
    uint32_t x = g.input("x", T(DType::fp32, {300, 200}));
    Attrs p;
    p.dims = {1, 0};
    uint32_t t = g.add(Op::transpose, "t", {x}, p);
    g.mark_output(g.add(Op::exp, "e", {t}));
    CompileOptions small;
    small.limits.sbuf_bytes = 2000;
    try {
        compile(g, small);
        fail_msg("moves_rows compiled");
    } catch (const GraphError &e) {
        const std::string want =
            "nothing else live then can be; rows are not split into chunks: 't' (transpose of x: "
            "fp32[300, 200] -> fp32[200, 300]): it moves elements between rows";
        if (std::string(e.what()).find(want) == std::string::npos)
            fail_msg("got '%s', want '%s'", e.what(), want.c_str());
    }
}

// A Linear whose 32 MiB of fp32 weights cannot be resident in the core's
// 24 MiB of SBUF: [128, 4096] x [4096, 2048], streamed at the default limit.
void streamed_linear_4096(void **) {
    Graph g("linear_4096x2048");
    uint32_t x = g.input("x", T(DType::fp32, {128, 4096}));
    uint32_t w = g.constant("w", T(DType::fp32, {4096, 2048}), ConstantInit{{}, 77, 1.0f / 64});
    g.mark_output(g.add(Op::matmul, "y", {x, w}));
    auto in = harness::make_inputs(g, 78);
    auto o = harness::run(g, in);
    assert_true(o.compiled.plan.find("streamed from device memory") != std::string::npos);
    const size_t checked = harness::check_carried(g, in, o, g.name());
    assert_int_equal(checked, 128 * 2048);
    print_message("%s: SBUF %llu bytes per partition, %llu cycles\n", g.name().c_str(),
                  static_cast<unsigned long long>(plan_peak(o.compiled)),
                  static_cast<unsigned long long>(o.cycles));
}

int main(int argc, char **argv) {
    const CMUnitTest tests[] = {
        cmocka_unit_test(text_round_trip),
        cmocka_unit_test(text_errors),
        cmocka_unit_test(elementwise_fp32),
        cmocka_unit_test(elementwise_bf16),
        cmocka_unit_test(repeated_rows_fp32),
        cmocka_unit_test(repeated_rows_bf16),
        cmocka_unit_test(matmul_fp32),
        cmocka_unit_test(matmul_bf16),
        cmocka_unit_test(fp16_ops),
        cmocka_unit_test(data_movement),
        cmocka_unit_test(fused_linear),
        cmocka_unit_test(fused_linear_late_bias),
        cmocka_unit_test(fused_chains),
        cmocka_unit_test(neg_fp32),
        cmocka_unit_test(neg_bf16),
        cmocka_unit_test(random_graphs),
        cmocka_unit_test(corpus),
        cmocka_unit_test(container_file),
        cmocka_unit_test(compile_errors),
        cmocka_unit_test(isa_targets),
        cmocka_unit_test(causal_softmax),
        cmocka_unit_test(split_pieces),
        cmocka_unit_test(concat_of_later_pieces),
        cmocka_unit_test(reshape_last_axis_of_one),
        cmocka_unit_test(attention_fp32),
        cmocka_unit_test(attention_bf16),
        cmocka_unit_test(attention_text),
    };
    const CMUnitTest encoder[] = {cmocka_unit_test(encoder_768)};
    if (argc > 1 && std::string(argv[1]) == "encoder")
        return cmocka_run_group_tests(encoder, nullptr, nullptr);
    const CMUnitTest streaming[] = {cmocka_unit_test(streamed_weights),
                                    cmocka_unit_test(chunked_rows),
                                    cmocka_unit_test(streamed_linear_4096)};
    if (argc > 1 && std::string(argv[1]) == "streaming")
        return cmocka_run_group_tests(streaming, nullptr, nullptr);
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
