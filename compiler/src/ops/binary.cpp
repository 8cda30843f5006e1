// SPDX-License-Identifier: MIT
// add, sub, mul, div of two values (a literal operand is a step of an
// elementwise chain, activation.cpp; int32 with a literal is lowered
// here): TENSOR_TENSOR per row tile against an operand of the same shape,
// a row or rows that repeat; TENSOR_SCALAR against a column or one
// element (docs/compiler.md, Broadcasting).
#include "../op_record.hpp"

#include <cmath>
#include <optional>

#include "../passes/emitter.hpp"
#include "../shape.hpp"
#include "binary.hpp"

namespace neuron::compiler::lower {

Type broadcast_type(InferContext &c) {
    Type out;
    if (c.attrs.scalar) {
        c.arity(1, 1);
        out = *c.in[0];
    } else {
        c.arity(2, 2);
        c.same_dtype();
        // Broadcasting as numpy, where the result is one operand's shape.
        const Shape &x = c.in[0]->shape, &y = c.in[1]->shape;
        size_t r = std::max(x.size(), y.size());
        Shape res(r);
        for (size_t i = 0; i < r; i++) {
            int64_t dx = i + x.size() >= r ? x[i + x.size() - r] : 1;
            int64_t dy = i + y.size() >= r ? y[i + y.size() - r] : 1;
            if (dx != dy && dx != 1 && dy != 1)
                throw c.fail(fmt::format("shapes do not broadcast (axis {}: {} vs {})", i, dx, dy));
            res[i] = std::max(dx, dy);
        }
        out = Type{c.in[0]->dtype, res};
    }
    return out;
}

namespace {

// add, sub, mul, div: no div of int32.
Type binary_infer(InferContext &c) {
    Type t = broadcast_type(c);
    if (c.node.op == Op::div && c.in[0]->dtype == DType::int32)
        throw c.fail(c.attrs.scalar ? "div is not supported on int32"
                                    : "int32 is supported by add, sub, mul and the data-movement "
                                      "operators only");
    return t;
}

// A binary operand [.., C] whose rows repeat over some of the result's
// axes before the last: its last axis is the result's, and its shape,
// padded with leading 1s, has each other axis the result's or 1. Result
// row r reads operand row row_of(r). When the axis before the last is
// kept (a [Q, K] mask against [B, H, Q, K] scores, or [B, 1, Q, K]),
// consecutive result rows read consecutive operand rows, in runs of at
// least that axis; when it is broadcast (a [B, 1, 1, K] key padding mask),
// runs of `run` consecutive result rows read the same operand row.
struct RowRepeat {
    Shape lead;         // the result's axes before the last
    Shape strides;      // operand rows per index of each; 0 where broadcast
    int64_t period = 0; // when only the leading axes are broadcast: the
                        // operand's rows, and row r reads row r % period
    int64_t run = 1;    // the product of the broadcast axes after the
                        // last kept one (of more than one element)
    int64_t row_of(int64_t r) const {
        const Shape idx = unravel(r, lead);
        int64_t s = 0;
        for (size_t d = 0; d < idx.size(); d++)
            s += idx[d] * strides[d];
        return s;
    }
};

// The RowRepeat of operand shape @p s against result shape @p o, or
// nothing, with @p why saying what does not fit.
std::optional<RowRepeat> row_repeat(const Shape &s, const Shape &o, std::string &why) {
    const size_t n = o.size();
    if (s.back() != o.back()) {
        why = fmt::format("its last axis has {} elements, the result's {}", s.back(), o.back());
        return std::nullopt;
    }
    Shape sp(n - s.size(), 1);
    sp.insert(sp.end(), s.begin(), s.end());
    RowRepeat rep;
    rep.lead.assign(o.begin(), o.end() - 1);
    rep.strides.assign(n - 1, 0);
    int64_t stride = 1;
    // Periodic when every broadcast axis comes before every kept one.
    bool periodic = true, broadcast = false, kept = false;
    for (size_t d = n - 1; d-- > 0;) {
        if (o[d] == 1)
            continue;
        if (sp[d] != o[d]) {
            broadcast = true;
            if (!kept)
                rep.run *= o[d];
            continue;
        }
        periodic &= !broadcast;
        kept = true;
        rep.strides[d] = stride;
        stride *= o[d];
    }
    rep.period = periodic ? stride : 0;
    return rep;
}

enum class Form { same, row, column, scalar, repeat, spread };

// How a binary node reads its operands, and the buffers of its step.
struct Buffers {
    uint32_t big = 0, small = 0; // the operand of the result's shape, the broadcast one
    bool reverse = false;        // the small operand is on the left
    Form form = Form::same;
    std::optional<RowRepeat> rep;
    bool periodic = false;     // repeat: rows repeated down the partitions
    const Buf *sm = nullptr;   // row, scalar, periodic: the replicated operand
    const Buf *spread[2] = {}; // spread: the temporaries that alternate
};

Buffers declare(StepBuffers &s, const Group &group) {
    const Graph &g = s.graph;
    const uint32_t i = group.start;
    const Node &n = g.node(i);
    const Type &ot = n.type;
    Buffers r;
    if (n.scalar) { // int32 with a literal: one TENSOR_SCALAR per tile
        s.read(n.operands[0]);
        return r;
    }
    uint32_t a = n.operands[0], b = n.operands[1];
    const Type &at = g.node(a).type, &bt = g.node(b).type;
    // The operand with the result's shape is "big"; the other is the same
    // shape, a row of the last axis, a column of the rows, or one element.
    bool a_big = at.shape.size() == ot.shape.size() && at.shape == ot.shape;
    bool b_big = bt.shape.size() == ot.shape.size() && bt.shape == ot.shape;
    if (!a_big && !b_big)
        unsupported(g, n,
                    "both operands are broadcast; the lowering broadcasts one operand "
                    "against the other's shape");
    uint32_t big = a_big ? a : b, small = a_big ? b : a;
    const Type &st = g.node(small).type;
    Form form;
    std::optional<RowRepeat> &rep = r.rep;
    if (st.elements() == ot.elements())
        form = Form::same; // also equal shapes up to leading 1s
    else if (st.elements() == 1)
        form = Form::scalar;
    else if (rows_of(st) == 1 && st.shape.back() == ot.shape.back())
        form = Form::row;
    else if (st.shape.back() == 1 && st.elements() == rows_of(ot)) {
        // the leading dims must agree (after left-padding with 1s)
        Shape lead(ot.shape.begin(), ot.shape.end() - 1), sl(st.shape.begin(), st.shape.end() - 1);
        while (sl.size() < lead.size())
            sl.insert(sl.begin(), 1);
        if (sl != lead)
            unsupported(g, n, "unsupported broadcast pattern");
        form = Form::column;
    } else if (std::string why; (rep = row_repeat(st.shape, ot.shape, why))) {
        form = rep->run > 1 ? Form::spread : Form::repeat;
    } else {
        unsupported(g, n,
                    "broadcast pattern not lowered: the broadcast operand must be the same "
                    "shape, a row [.., C], a column [.., 1], one element or rows [.., C] "
                    "repeated over the result's axes before the last; " +
                        why);
    }
    r.big = big;
    r.small = small;
    r.reverse = !a_big;
    r.form = form;
    s.read(big);
    if (form == Form::spread) {
        const Node &sn = g.node(small);
        const auto C = static_cast<uint32_t>(ot.shape.back());
        r.spread[0] = &s.temp(sn.name + ".spread0", sn.type.dtype, P, C);
        r.spread[1] = &s.temp(sn.name + ".spread1", sn.type.dtype, P, C);
        return r;
    }
    // Rows that repeat with a period of fewer than 128 rows are repeated
    // down the partitions once, so that a row tile reads them in at most
    // two runs; otherwise the operand's rows are read where they are.
    r.periodic = form == Form::repeat && rep->period > 0 && rep->period < P;
    if (form == Form::row || form == Form::scalar)
        r.sm = &s.replicated(small); // loads or copies what it needs
    else if (r.periodic)
        r.sm = &s.replicated(small, static_cast<uint32_t>(rep->period));
    else
        s.read(small);
    return r;
}

// dst = a op b: with an int32 result on a target of ISA 1.2 the exact
// integer ALU (add, sub, mul and max, min wrap or compare in 32 bits),
// else fp32 (exact below 2^24).
void tensor_tensor(Emitter &e, const Node &n, AluOp op, const Tap &dst, const Tap &a,
                   const Tap &b) {
    if (n.type.dtype == DType::int32 && (e.options.isa_version & 0xffff) >= 2)
        e.kernel().tensor_tensor_int(op, dst, a, b);
    else
        e.kernel().tensor_tensor(op, dst, a, b);
}

// Binary node @p group whose operand @p b.small has rows that each repeat over
// runs of consecutive result rows (RowRepeat::run > 1: a [B, 1, 1, K] key
// padding mask against [B, H, Q, K] scores). Per row tile of the result,
// a temporary tile holds in each partition the operand row that the
// result row there reads, each run's row spread down its partitions (one
// DMA_LOAD with a partition stride of 0 for an input or a constant; for a
// computed value a COPY of the row, then COPYs that double the filled
// partitions, on the Scalar engine); then one TENSOR_TENSOR computes the
// tile. Two temporaries alternate, so that filling one overlaps the
// instruction that reads the other; a tile whose rows read the same
// operand rows as the previous tile's reuses its temporary unfilled.
void emit_spread(Emitter &e, const Group &group, const Buffers &b) {
    Kernel &k = e.kernel();
    const uint32_t i = group.start, big = b.big, small = b.small;
    const RowRepeat &rep = *b.rep;
    const Node &n = e.graph.node(i), &sn = e.graph.node(small);
    const auto C = static_cast<uint32_t>(n.type.shape.back());
    // An input or a constant is read from memory, never loaded whole.
    const bool in_memory = sn.op == Op::input || sn.op == Op::constant;
    const AluOp op = op_record(n.op).alu;
    const bool reverse = b.reverse;
    const Buf &bg = e.buf(big), &out = e.buf(i);
    struct Piece {
        uint32_t p0, len;
        int64_t row;
        bool operator==(const Piece &) const = default;
    };
    std::vector<Piece> filled; // what the current temporary holds
    unsigned slot = 1;
    for (uint32_t t = 0; t < out.tiles(); t++) {
        const uint32_t rt = e.tile_rows(out, t);
        std::vector<Piece> pieces;
        for (uint32_t p0 = 0; p0 < rt;) {
            const int64_t r0 = int64_t{t} * P + p0;
            const auto len =
                static_cast<uint32_t>(std::min<int64_t>(rt - p0, rep.run - r0 % rep.run));
            pieces.push_back({p0, len, rep.row_of(r0)});
            p0 += len;
        }
        if (pieces != filled) {
            slot ^= 1;
            const Buf &E = *b.spread[slot];
            for (const Piece &pc : pieces) {
                if (in_memory) {
                    const uint64_t pitch = uint64_t{C} * dtype_size(E.dtype);
                    k.dma_load(e.rows(E, pc.p0, pc.len, 0, C),
                               e.arg(small).at(static_cast<uint64_t>(pc.row) * pitch, 0));
                    continue;
                }
                k.copy(Engine::scalar, e.rows(E, pc.p0, 1, 0, C),
                       e.rows(e.buf(small), static_cast<uint32_t>(pc.row), 1, 0, C));
                for (uint32_t have = 1; have < pc.len; have *= 2) {
                    const uint32_t cnt = std::min(have, pc.len - have);
                    k.copy(Engine::scalar, e.rows(E, pc.p0 + have, cnt, 0, C),
                           e.rows(E, pc.p0, cnt, 0, C));
                }
            }
            filled = pieces;
        }
        const Tap m = e.rows(*b.spread[slot], 0, rt, 0, C);
        const Tap x = e.tile(bg, t);
        tensor_tensor(e, n, op, e.tile(out, t), reverse ? m : x, reverse ? x : m);
    }
}

void emit(Emitter &e, const Group &group) {
    const Buffers b = declare(e, group);
    Kernel &k = e.kernel();
    const uint32_t i = group.start;
    const Node &n = e.graph.node(i);
    const AluOp op = op_record(n.op).alu;
    if (n.scalar) {
        const Buf &in = e.buf(n.operands[0]), &out = e.buf(i);
        for (uint32_t t = 0; t < out.tiles(); t++)
            k.tensor_scalar(Engine::vector, e.tile(out, t), e.tile(in, t), op, *n.scalar,
                            AluOp::none, 0.0f, n.scalar_first);
        return;
    }
    if (b.form == Form::spread) {
        emit_spread(e, group, b);
        return;
    }
    const Buf *sm = b.sm ? b.sm : &e.buf(b.small);
    const uint32_t big = b.big;
    const bool periodic = b.periodic, reverse = b.reverse, a_big = !b.reverse;
    const std::optional<RowRepeat> &rep = b.rep;
    const Buf &bg = e.buf(big), &out = e.buf(i);
    // repeat: the row of sm that result row r reads.
    auto source_row = [&](uint32_t r) -> uint32_t {
        if (!periodic)
            return static_cast<uint32_t>(rep->row_of(r));
        // sm holds row p % period in partition p: partition p of the tile
        // reads from its phase on, and the partitions past the last whole
        // period read the same phase again from below it.
        const uint32_t per = static_cast<uint32_t>(rep->period), p = r % P;
        const uint32_t phase = (r - p) % per, whole = P / per * per;
        return p < P - phase ? phase + p : p + phase - whole;
    };
    for (uint32_t t = 0; t < out.tiles(); t++) {
        Tap y = e.tile(out, t), x = e.tile(bg, t);
        const uint32_t rt = e.tile_rows(out, t);
        switch (b.form) {
        case Form::same:
            tensor_tensor(e, n, op, y, a_big ? x : e.tile(*sm, t), a_big ? e.tile(*sm, t) : x);
            break;
        case Form::row: {
            Tap r = e.rows(*sm, 0, rt, 0, sm->cols);
            tensor_tensor(e, n, op, y, reverse ? r : x, reverse ? x : r);
            break;
        }
        case Form::column:
            k.tensor_scalar(Engine::vector, y, x, op, e.rows(*sm, t * P, rt, 0, 1), AluOp::none,
                            0.0f, reverse);
            break;
        case Form::scalar:
            k.tensor_scalar(Engine::vector, y, x, op, e.rows(*sm, 0, rt, 0, 1), AluOp::none, 0.0f,
                            reverse);
            break;
        case Form::spread: // emit_spread()
            break;
        case Form::repeat:
            // One TENSOR_TENSOR per run of result rows that read
            // consecutive rows of one row tile of sm (elementwise
            // instructions pair partitions relatively, so the runs need
            // not start at the same partition).
            for (uint32_t p0 = 0; p0 < rt;) {
                const uint32_t r0 = t * P + p0, s0 = source_row(r0);
                uint32_t len = 1;
                while (p0 + len < rt && (s0 + len) % P != 0 && source_row(r0 + len) == s0 + len)
                    len++;
                Tap m = e.rows(*sm, s0, len, 0, sm->cols), o = e.rows(out, r0, len, 0, out.cols),
                    v = e.rows(bg, r0, len, 0, bg.cols);
                tensor_tensor(e, n, op, o, reverse ? m : v, reverse ? v : m);
                p0 += len;
            }
            break;
        }
    }
}

} // namespace

Kind binary_kind(const Graph &, const Node &) {
    return Kind::binary;
}

namespace {

// Index into a broadcast operand of shape @p s for the output index @p idx.
int64_t broadcast_index(const Shape &idx, const Shape &s) {
    int64_t f = 0;
    const size_t off = idx.size() - s.size();
    for (size_t d = 0; d < s.size(); d++)
        f = f * s[d] + (s[d] == 1 ? 0 : idx[d + off]);
    return f;
}

} // namespace

std::pair<size_t, size_t> operand_elements(const Graph &g, const Node &n, size_t f) {
    if (n.scalar)
        return {f, f};
    const Shape idx = unravel(static_cast<int64_t>(f), n.type.shape);
    return {static_cast<size_t>(broadcast_index(idx, g.node(n.operands[0]).type.shape)),
            static_cast<size_t>(broadcast_index(idx, g.node(n.operands[1]).type.shape))};
}

namespace {

// Exact: the fp32 operation, as the device computes it from fp32 operands
// (or operands exact in fp32).
Expected reference(const Graph &g, const Node &n, const Values &ops) {
    Expected e;
    e.value.resize(static_cast<size_t>(n.type.elements()));
    for (size_t f = 0; f < e.value.size(); f++) {
        const auto [ia, ib] = operand_elements(g, n, f);
        double a, b;
        if (n.scalar) {
            const double x = (*ops[0])[f], s = *n.scalar;
            a = n.scalar_first ? s : x;
            b = n.scalar_first ? x : s;
        } else {
            a = (*ops[0])[ia];
            b = (*ops[1])[ib];
        }
        const float fa = static_cast<float>(a), fb = static_cast<float>(b);
        e.value[f] = n.op == Op::add   ? double{fa} + fb
                     : n.op == Op::sub ? double{fa} - fb
                     : n.op == Op::mul ? double{fa} * fb
                                       : double{fa} / fb;
    }
    return e;
}

// Sums add the errors, products scale them by the other operand. The
// reference rounds its operands to fp32, the device computes from its own:
// their difference is the error plus that rounding.
std::vector<double> carry(const Graph &g, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    const double u32 = 0x1p-24;
    std::vector<double> c(value.size(), 0);
    for (size_t f = 0; f < c.size(); f++) {
        const auto [ia, ib] = operand_elements(g, n, f);
        double a, b, ea, eb;
        if (n.scalar) {
            const double x = (*val[0])[f], ex = (*err[0])[f] + u32 * std::fabs(x), s = *n.scalar;
            a = n.scalar_first ? s : x;
            b = n.scalar_first ? x : s;
            ea = n.scalar_first ? 0 : ex;
            eb = n.scalar_first ? ex : 0;
        } else {
            a = (*val[0])[ia];
            b = (*val[1])[ib];
            ea = (*err[0])[ia] + u32 * std::fabs(a);
            eb = (*err[1])[ib] + u32 * std::fabs(b);
        }
        if (n.op == Op::add || n.op == Op::sub)
            c[f] = ea + eb;
        else if (n.op == Op::mul)
            c[f] = std::fabs(a) * eb + ea * std::fabs(b) + ea * eb;
        else
            c[f] =
                std::fabs(b) > eb ? (ea + std::fabs(a / b) * eb) / (std::fabs(b) - eb) : INFINITY;
    }
    return c;
}

// With a literal operand (not int32): an affine step, s - x or s / x.
std::optional<Step> literal_step(const Node &n) {
    if (!n.scalar || n.type.dtype == DType::int32)
        return std::nullopt;
    const float s = *n.scalar;
    switch (n.op) {
    case Op::mul:
        return Step{Step::affine, s, 0};
    case Op::add:
        return Step{Step::affine, 1, s};
    case Op::sub:
        return n.scalar_first ? Step{Step::rsub, 1, s} : Step{Step::affine, 1, -s};
    default:
        return n.scalar_first ? Step{Step::rdiv, 1, s} : Step{Step::div, s, 0};
    }
}

} // namespace

bool row_operand(const Graph &g, const Node &n, size_t k) {
    const Type &t = g.node(n.operands[k]).type;
    return n.operands.size() == 2 && rows_of(t) == 1 && t.elements() != n.type.elements();
}

// Every operand is the result's shape, a row, one element or a column of
// every row.
std::string mixes_rows(const Graph &g, const Node &n, int64_t rows) {
    if (n.scalar)
        return "";
    for (uint32_t o : n.operands) {
        const Type &t = g.node(o).type;
        if (t.elements() != n.type.elements() && rows_of(t) != 1 &&
            !(t.shape.back() == 1 && rows_of(t) == rows))
            return "an operand whose rows repeat";
    }
    return "";
}

extern const KindLowering binary_lowering{[](StepBuffers &s, const Group &g) { declare(s, g); },
                                          emit};

extern const OpRecord add_record{
    .op = Op::add,
    .name = "add",
    .infer = binary_infer,
    .kind = binary_kind,
    .step = literal_step,
    .alu = AluOp::add,
    .whole_operand = row_operand,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord sub_record{
    .op = Op::sub,
    .name = "sub",
    .infer = binary_infer,
    .kind = binary_kind,
    .step = literal_step,
    .alu = AluOp::sub,
    .whole_operand = row_operand,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord mul_record{
    .op = Op::mul,
    .name = "mul",
    .infer = binary_infer,
    .kind = binary_kind,
    .step = literal_step,
    .alu = AluOp::mul,
    .whole_operand = row_operand,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .carry = carry,
};
extern const OpRecord div_record{
    .op = Op::div,
    .name = "div",
    .infer = binary_infer,
    .kind = binary_kind,
    .step = literal_step,
    .alu = AluOp::div,
    .whole_operand = row_operand,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .carry = carry,
};

} // namespace neuron::compiler::lower
