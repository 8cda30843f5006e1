// SPDX-License-Identifier: MIT
// dropout(x, seed, p=P) and dropout_mask(x, seed, p=P): PyTorch's
// native_dropout in training, from the device's Philox stream (RANDOM,
// ISA 1.2). seed is an int32[4] value (seed lo, seed hi, offset lo,
// offset hi, the RANDOM key operand, given at run time: one program draws
// a new mask whenever it changes). Element f of x (row-major) is kept when
// the uniform u_f = RANDOM's value of stream word f is at least P:
// dropout is x * (1 / (1 - P)) there and 0 elsewhere (x times 0: NaN
// stays NaN, as in PyTorch's x * mask * scale), dropout_mask the u8 (bool)
// keep mask. Both draw the same words for the same seed, so a graph's
// mask is its dropout's. Per row tile: RANDOM into an fp32 temporary,
// TENSOR_SCALAR is_ge P then mul 1/(1 - P), and a TENSOR_TENSOR mul with x
// (or TENSOR_SCALAR is_ge P into the mask). Exact.
#include "../op_record.hpp"

#include <cmath>

#include "../passes/emitter.hpp"
#include "neuron_isa.h"

namespace neuron::compiler::lower {

namespace {

Type infer_common(InferContext &c) {
    c.arity(2, 2);
    const Type &x = *c.in[0], &seed = *c.in[1];
    if (x.dtype != DType::fp32 && x.dtype != DType::bf16 && x.dtype != DType::fp16)
        throw c.fail("x must be a float value");
    if (seed.dtype != DType::int32 || seed.shape != Shape{4})
        throw c.fail("the seed is int32[4]: seed lo, seed hi, offset lo, offset hi");
    if (!c.attrs.p)
        throw c.fail("needs p= (the probability that an element is dropped)");
    const float p = *c.attrs.p;
    if (!(p >= 0.0f && p < 1.0f))
        throw c.fail(fmt::format("p={} is not in [0, 1)", p));
    if (x.elements() > (int64_t{1} << 32))
        throw c.fail("more than 2^32 elements: RANDOM numbers a stream's words in 32 bits");
    c.node.p = p;
    return x;
}

Type infer(InferContext &c) {
    return infer_common(c);
}

Type infer_mask(InferContext &c) {
    Type t = infer_common(c);
    t.dtype = DType::u8;
    return t;
}

Kind random_kind(const Graph &, const Node &) {
    return Kind::random;
}

// 1 / (1 - p) in fp32, the factor of the kept elements.
float keep_scale(const Node &n) {
    return 1.0f / (1.0f - n.p);
}

// The step's buffers: the operands read, the fp32 temporary of u.
const Buf &buffers(StepBuffers &s, const Group &group) {
    const Node &n = s.graph.node(group.start);
    if (n.op == Op::dropout)
        s.read(n.operands[0]);
    s.read(n.operands[1]);
    s.require(group.start, "random", neuron_insn_isa_minor(NEURON_OP_RANDOM, 0, 0));
    return s.temp(n.name + ".u", DType::fp32, P, static_cast<uint32_t>(n.type.shape.back()));
}

void declare(StepBuffers &s, const Group &group) {
    buffers(s, group);
}

void emit(Emitter &e, const Group &group) {
    const Buf &u = buffers(e, group);
    Kernel &k = e.kernel();
    const Node &n = e.graph.node(group.start);
    const Buf &out = e.buf(group.start), &seed = e.buf(n.operands[1]);
    const uint32_t cols = out.cols;
    const Tap key = e.rows(seed, 0, 1, 0, 4);
    for (uint32_t t = 0; t < out.tiles(); t++) {
        const uint32_t rows = e.tile_rows(out, t);
        // Stream word of element (row, column): its row-major index.
        const uint64_t base = (e.first_row(out) + uint64_t{t} * P) * cols;
        const Tap ut = e.rows(u, 0, rows, 0, cols);
        k.random(ut, key, static_cast<uint32_t>(base), cols);
        if (n.op == Op::dropout_mask) {
            k.tensor_scalar(Engine::vector, e.tile(out, t), ut, AluOp::is_ge, n.p);
            continue;
        }
        k.tensor_scalar(Engine::vector, ut, ut, AluOp::is_ge, n.p, AluOp::mul, keep_scale(n));
        k.tensor_tensor(AluOp::mul, e.tile(out, t), e.tile(e.buf(n.operands[0]), t), ut);
    }
}

// The seed operand's 64-bit seed and offset, from its int32 words.
std::pair<uint64_t, uint64_t> seed_offset(const std::vector<double> &w) {
    auto word = [&](size_t i) {
        return static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(w[i])));
    };
    return {word(0) | word(1) << 32, word(2) | word(3) << 32};
}

// Whether element f is kept: RANDOM's uniform value of word f against p.
bool kept(const std::pair<uint64_t, uint64_t> &so, uint64_t f, float p) {
    const uint32_t word = neuron_random_word(so.first, so.second, f);
    const float u = static_cast<float>(neuron_random_uniform24(word)) * 0x1p-24f;
    return u >= p;
}

// Exact: the mask, and x times 1/(1 - p) in fp32 or times 0.
Expected reference(const Graph &, const Node &n, const Values &ops) {
    Expected e;
    const auto so = seed_offset(*ops[1]);
    e.value.resize(ops[0]->size());
    for (size_t f = 0; f < e.value.size(); f++) {
        const bool keep = kept(so, f, n.p);
        if (n.op == Op::dropout_mask)
            e.value[f] = keep ? 1 : 0;
        else
            e.value[f] = static_cast<double>(static_cast<float>((*ops[0])[f])) *
                         (keep ? static_cast<double>(keep_scale(n)) : 0.0);
    }
    return e;
}

// x's error scaled where kept; the mask depends on the seed alone.
std::vector<double> carry(const Graph &, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    std::vector<double> c(value.size(), 0.0);
    if (n.op == Op::dropout_mask)
        return c;
    const auto so = seed_offset(*val[1]);
    for (size_t f = 0; f < c.size(); f++)
        if (kept(so, f, n.p))
            c[f] = (*err[0])[f] * static_cast<double>(keep_scale(n));
    return c;
}

std::vector<std::string> text_attributes(const Node &n) {
    return {fmt::format("p={}", n.p)};
}

// In chunks of rows, the seed stays whole.
bool seed_operand(const Graph &, const Node &, size_t k) {
    return k == 1;
}

// Split over cores, each part would number its words from its own first
// row, drawing the same mask as the other parts.
void split_rule(SplitRoles &s, uint32_t n) {
    if (s.any_split(s.graph.node(n)))
        s.refuse(n, "its random stream is numbered over the whole tensor");
    s.set_per_row(n, 0);
}

} // namespace

extern const KindLowering random_lowering{declare, emit};

extern const OpRecord dropout_record{
    .op = Op::dropout,
    .name = "dropout",
    .infer = infer,
    .kind = random_kind,
    .text_attributes = text_attributes,
    .whole_operand = seed_operand,
    .reference = reference,
    .carry = carry,
    .split = split_rule,
};

extern const OpRecord dropout_mask_record{
    .op = Op::dropout_mask,
    .name = "dropout_mask",
    .infer = infer_mask,
    .kind = random_kind,
    .text_attributes = text_attributes,
    .whole_operand = seed_operand,
    .reference = reference,
    .carry = carry,
    .split = split_rule,
};

} // namespace neuron::compiler::lower
