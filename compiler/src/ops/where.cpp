// SPDX-License-Identifier: MIT
// where(cond, a, b): a where cond is not zero, else b (a literal b: a
// masked fill). cond, a and b of the result's shape; a and b of one dtype,
// cond of any (a u8 mask from a comparison). Per row tile one SELECT with
// b as its fill value, or a COPY of b and a SELECT that keeps it where
// cond is zero (ISA 1.1).
#include "../op_record.hpp"

#include <cmath>

#include "../passes/emitter.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    c.arity(c.attrs.scalar ? 2 : 3, c.attrs.scalar ? 2 : 3);
    if (c.attrs.scalar && c.attrs.scalar_first)
        throw c.fail("the literal is the false value, the last operand");
    const Type &a = *c.in[1];
    if (!c.attrs.scalar && c.in[2]->dtype != a.dtype)
        throw c.fail("a and b of different dtypes (there are no implicit casts)");
    for (const Type *t : c.in)
        if (t->shape != a.shape)
            throw c.fail("cond, a and b must have one shape (broadcast them first)");
    if (a.dtype == DType::u8)
        throw c.fail("a and b are values, not masks");
    return a;
}

Kind select_kind(const Graph &, const Node &) {
    return Kind::select;
}

void declare(StepBuffers &s, const Group &group) {
    const Node &n = s.graph.node(group.start);
    for (uint32_t o : n.operands)
        s.read(o);
    s.require(group.start, mnemonic_select(), isa_minor_of_select());
}

void emit(Emitter &e, const Group &group) {
    declare(e, group);
    Kernel &k = e.kernel();
    const Node &n = e.graph.node(group.start);
    const Buf &out = e.buf(group.start), &cond = e.buf(n.operands[0]), &a = e.buf(n.operands[1]);
    for (uint32_t t = 0; t < out.tiles(); t++) {
        const Tap y = e.tile(out, t);
        if (n.scalar) {
            k.select(y, e.tile(cond, t), e.tile(a, t), *n.scalar);
            continue;
        }
        k.copy(Engine::vector, y, e.tile(e.buf(n.operands[2]), t));
        k.select_keep(y, e.tile(cond, t), e.tile(a, t));
    }
}

// Exact: the chosen operand (converted through fp32 as SELECT does).
Expected reference(const Graph &, const Node &n, const Values &ops) {
    Expected e;
    e.value.resize(ops[0]->size());
    for (size_t i = 0; i < e.value.size(); i++)
        e.value[i] = (*ops[0])[i] != 0 ? static_cast<float>((*ops[1])[i])
                                       : (n.scalar ? static_cast<double>(*n.scalar) : (*ops[2])[i]);
    return e;
}

// The chosen operand's error; either's where cond's own may flip it.
std::vector<double> carry(const Graph &, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    std::vector<double> c(value.size());
    for (size_t i = 0; i < c.size(); i++) {
        const double ea = (*err[1])[i] + 0x1p-24 * std::fabs((*val[1])[i]);
        const double eb = n.scalar ? 0 : (*err[2])[i];
        const double b = n.scalar ? static_cast<double>(*n.scalar) : (*val[2])[i];
        if (std::fabs((*val[0])[i]) <= (*err[0])[i] && (*err[0])[i] > 0)
            c[i] = std::fabs((*val[1])[i] - b) + ea + eb;
        else
            c[i] = (*val[0])[i] != 0 ? ea : eb;
    }
    return c;
}

} // namespace

extern const KindLowering select_lowering{declare, emit};

extern const OpRecord where_record{
    .op = Op::where,
    .name = "where",
    .infer = infer,
    .kind = select_kind,
    .reference = reference,
    .carry = carry,
};

} // namespace neuron::compiler::lower
