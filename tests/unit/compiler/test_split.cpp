// SPDX-License-Identifier: MIT
// A graph split over several cores along the leading axis of its inputs
// (split_rows): every part compiled and run through the device model, the
// parts' outputs put together equal to the whole graph's bit for bit and
// within the bound carried from the inputs; the parts run at once, one job
// per core, on a two-core simulator device; what mixes rows refused.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/split.hpp>
#include <neuron/compiler/text.hpp>
#include <neuron/neuron.hpp>

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

// Token split: an MLP with a residual and a LayerNorm on 200 tokens.
const char *mlp = R"(graph mlp
input x: DT[200, 96]
const w1: DT[96, 300] = uniform(seed=1, scale=0.1)
const b1: DT[300] = uniform(seed=2, scale=0.1)
const w2: DT[300, 96] = uniform(seed=3, scale=0.06)
const g: DT[96] = uniform(seed=4, scale=1)
const b: DT[96] = uniform(seed=5, scale=0.1)
h = matmul(x, w1)
hb = add(h, b1)
a = gelu(hb)
y = matmul(a, w2)
r = add(y, x)
o = layer_norm(r, g, b)
output o
)";

// Batch split: self-attention over 4 heads of 3 sequences of 77 tokens
// with a key padding mask per sequence, a bias per sequence (a constant
// cut with the rows), and the sequences flattened into tokens and back.
const char *attention = R"(graph attn
input x: DT[3, 77, 64]
input m: DT[3, 1, 1, 77]
const wq: DT[64, 64] = uniform(seed=6, scale=0.125)
const wk: DT[64, 64] = uniform(seed=7, scale=0.125)
const wv: DT[64, 64] = uniform(seed=8, scale=0.125)
const per_seq: DT[3, 1, 64] = uniform(seed=9, scale=0.5)
t = reshape(x, shape=[231, 64])
q = matmul(t, wq)
k = matmul(t, wk)
v = matmul(t, wv)
qh = reshape(q, shape=[3, 77, 4, 16])
kh = reshape(k, shape=[3, 77, 4, 16])
vh = reshape(v, shape=[3, 77, 4, 16])
qt = transpose(qh, perm=[0, 2, 1, 3])
kt = transpose(kh, perm=[0, 2, 1, 3])
vt = transpose(vh, perm=[0, 2, 1, 3])
o = attention(qt, kt, vt, m)
ot = transpose(o, perm=[0, 2, 1, 3])
y = reshape(ot, shape=[3, 77, 64])
z = add(y, per_seq)
output z
)";

Graph graph(const char *text, DType dt) {
    std::string s = text;
    for (size_t at; (at = s.find("DT")) != std::string::npos;)
        s.replace(at, 2, to_string(dt));
    return parse(s);
}

harness::Inputs make_inputs(const Graph &g) {
    harness::Inputs in = harness::make_inputs(g, 3);
    if (auto m = in.find("m"); m != in.end()) // padding: every fifth key, and a run at the end
        for (size_t i = 0; i < m->second.size(); i++)
            m->second[i] = (i % 5 == 4 || i % 77 > 70) ? -10000.0f : 0.0f;
    return in;
}

/// Part @p p's share of every input of @p in.
harness::Inputs share(const Split &s, const SplitPart &p, const harness::Inputs &in) {
    harness::Inputs mine;
    for (const auto &[name, values] : in) {
        const int64_t n = s.row_elements.at(name);
        mine[name].assign(values.begin() + p.first_row * n,
                          values.begin() + (p.first_row + p.rows) * n);
    }
    return mine;
}

/// The graph of @p text split in 1..3 parts, each part run on the model:
/// together equal to the whole graph's run, and within the carried bound.
void split_matches_whole(const char *text) {
    for (DType dt : {DType::fp32, DType::bf16}) {
        const Graph g = graph(text, dt);
        const harness::Inputs in = make_inputs(g);
        const harness::Outcome whole = harness::run(g, in);
        for (int parts = 1; parts <= 3; parts++) {
            const Split s = split_rows(g, parts);
            assert_int_equal(s.parts.size(), parts);
            std::map<std::string, std::vector<float>> outputs;
            for (const SplitPart &p : s.parts)
                for (const auto &[name, values] : harness::run(p.graph, share(s, p, in)).outputs) {
                    auto &all = outputs[name];
                    all.insert(all.end(), values.begin(), values.end());
                }
            harness::Outcome joined = whole;
            joined.outputs = outputs;
            for (const auto &[name, values] : whole.outputs) {
                const std::vector<float> &got = joined.outputs.at(name);
                assert_int_equal(got.size(), values.size());
                for (size_t i = 0; i < got.size(); i++)
                    if (std::memcmp(&got[i], &values[i], sizeof(float)) != 0)
                        fail_msg("%s %s in %d parts: '%s' element %zu is %.9g, the whole "
                                 "graph's %.9g",
                                 g.name().c_str(), std::string(to_string(dt)).c_str(), parts,
                                 name.c_str(), i, static_cast<double>(got[i]),
                                 static_cast<double>(values[i]));
            }
            harness::check_carried(g, in, joined,
                                   g.name() + " in " + std::to_string(parts) + " parts");
        }
    }
}

void split_tokens(void **) {
    split_matches_whole(mlp);
    // 200 rows over 3 parts: 67, 67, 66.
    const Split s = split_rows(graph(mlp, DType::fp32), 3);
    assert_int_equal(s.parts[0].rows, 67);
    assert_int_equal(s.parts[2].first_row, 134);
    assert_int_equal(s.parts[2].rows, 66);
    assert_int_equal(s.row_elements.at("x"), 96);
}

void split_batch(void **) {
    split_matches_whole(attention);
    const Split s = split_rows(graph(attention, DType::fp32), 2);
    assert_int_equal(s.row_elements.at("x"), 77 * 64);
    assert_int_equal(s.row_elements.at("m"), 77);
    assert_int_equal(s.row_elements.at("z"), 77 * 64);
    // The per-sequence constant is cut: part 1 holds the third sequence's.
    const Graph &second = s.parts[1].graph;
    const Node &c = second.node(*second.find("per_seq"));
    assert_true(c.type.shape == (Shape{1, 1, 64}));
    const Graph whole = graph(attention, DType::fp32);
    const std::vector<float> all = constant_values(whole.node(*whole.find("per_seq")));
    assert_true(constant_values(c) == std::vector<float>(all.begin() + 128, all.end()));
}

void expect_refused(const std::string &text, int parts, const char *why) {
    try {
        split_rows(parse(text), parts);
    } catch (const GraphError &e) {
        if (!std::strstr(e.what(), why))
            fail_msg("expected an error saying '%s', got: %s", why, e.what());
        print_message("refused: %s\n", e.what());
        return;
    }
    fail_msg("split of %s into %d parts was not refused (expected '%s')", text.c_str(), parts, why);
}

void split_refusals(void **) {
    const std::string x = "graph g\ninput x: fp32[4, 6]\n";
    expect_refused(x + "t = transpose(x, perm=[1, 0])\noutput t\n", 2,
                   "'t' (transpose of x: fp32[4, 6] -> fp32[6, 4]): not split along the leading "
                   "axis: the permutation [1, 0] moves axis 0");
    expect_refused(x + "r = reshape(x, shape=[6, 4])\noutput r\n", 2,
                   "one input row is 6 elements of the operand, which is not a whole number of "
                   "rows of [6, 4]");
    expect_refused(x + "const w: fp32[4, 3] = uniform(seed=1)\ny = matmul(x, w, transpose_a=true)\n"
                       "output y\n",
                   2, "the first operand's axis 0 is contracted (transpose_a)");
    expect_refused(x + "s = slice(x, axis=0, start=0, end=2)\noutput s\n", 2,
                   "it cuts or joins along the split axis");
    expect_refused(x + "c = concat(x, x, axis=0)\noutput c\n", 2,
                   "it cuts or joins along the split axis");
    expect_refused(x + "input y: fp32[3, 6]\nz = add(x, x)\noutput z\n", 2,
                   "its leading axis has 3 rows, the first input's 4");
    expect_refused(x + "const c: fp32[4, 6] = uniform(seed=2)\nr = relu(c)\ny = add(x, r)\n"
                       "output y\n",
                   2, "'r' varies along the split axis but is computed from constants alone");
    expect_refused("graph g\ninput x: fp32[6, 6]\nconst c: fp32[6, 6] = uniform(seed=2)\n"
                   "y = matmul(x, c)\nz = add(y, c)\noutput z\n",
                   2, "constant 'c' is also used whole, so it cannot be cut");
    expect_refused(x + "const c: fp32[4, 4] = uniform(seed=2)\ny = add(x, x)\nk = relu(c)\n"
                       "output y, k\n",
                   2,
                   "'k' (relu of c: fp32[4, 4] -> fp32[4, 4]): not split along the leading "
                   "axis: the output does not depend on the inputs' rows");
    expect_refused("graph g\ninput x: fp32[8]\ns = softmax(x)\noutput s\n", 2,
                   "it normalises over the split axis");
    expect_refused(x + "y = relu(x)\noutput y\n", 5,
                   "4 rows on the inputs' leading axis cannot be split over 5 cores");
}

// The parts as jobs on the two cores of a simulator device at once, each
// reading and writing its rows of whole buffers: the model's results.
void split_on_two_cores(void **) {
    const Graph g = graph(attention, DType::fp32);
    const harness::Inputs in = make_inputs(g);
    const harness::Outcome whole = harness::run(g, in);
    const Split s = split_rows(g, 2);
    const Device dev = Device::open("sim:cores=2");
    std::vector<Buffer> buffers;
    std::map<std::string, size_t> buffer_of;
    for (const Node &n : g.nodes())
        if (n.op == Op::input) {
            const auto bytes = pack(n.type.dtype, in.at(n.name));
            buffers.push_back(dev.allocate(bytes.size()));
            buffers.back().write(0, bytes);
            buffer_of[n.name] = buffers.size() - 1;
        }
    const Node &out = g.node(g.outputs().at(0));
    const uint64_t out_bytes = static_cast<uint64_t>(out.type.elements()) * sizeof(float);
    buffers.push_back(dev.allocate(out_bytes));
    buffer_of[out.name] = buffers.size() - 1;
    std::vector<LoadedProgram> loaded;
    std::vector<Arguments> args(s.parts.size());
    for (const SplitPart &p : s.parts)
        loaded.push_back(dev.load(compile(p.graph).program));
    std::vector<Fence> done;
    for (size_t k = 0; k < s.parts.size(); k++) {
        for (const auto &[name, b] : buffer_of) {
            const uint64_t row = static_cast<uint64_t>(s.row_elements.at(name)) * sizeof(float);
            args[k].bind(name, buffers[b].range(static_cast<uint64_t>(s.parts[k].first_row) * row,
                                                static_cast<uint64_t>(s.parts[k].rows) * row));
        }
        done.push_back(dev.queue(static_cast<unsigned>(k)).submit(loaded[k], args[k]));
    }
    for (const Fence &f : done)
        f.wait();
    std::vector<std::byte> got(out_bytes);
    buffers[buffer_of[out.name]].read(0, got);
    const std::vector<float> values =
        unpack(out.type.dtype, got.data(), static_cast<size_t>(out.type.elements()));
    assert_true(values == whole.outputs.at(out.name));
}

} // namespace

int main() {
    const CMUnitTest tests[] = {cmocka_unit_test(split_tokens), cmocka_unit_test(split_batch),
                                cmocka_unit_test(split_refusals),
                                cmocka_unit_test(split_on_two_cores)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
