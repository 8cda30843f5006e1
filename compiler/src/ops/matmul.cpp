// SPDX-License-Identifier: MIT
// matmul: for every piece of at most 128 output rows, A^T blocks by
// TRANSPOSE, then per block of at most 512 output columns the MATMULs of
// all pieces of K accumulating into one PSUM bank, evacuated by one
// instruction that also applies the fused epilogue (bias in PSUM, affine
// steps and an activation, or a residual). A streamed weight passes
// through two panel buffers (docs/compiler.md, Layout and tiling).
#include "../op_record.hpp"

#include <cmath>

#include "../passes/emitter.hpp"

namespace neuron::compiler::lower {

namespace {

Type infer(InferContext &c) {
    Type out;
    c.arity(2, 2);
    c.same_dtype();
    c.floating();
    Shape x = c.in[0]->shape, y = c.in[1]->shape;
    if (x.size() < 2 || y.size() < 2)
        throw c.fail("operands need rank >= 2");
    if (c.attrs.transpose_a)
        std::swap(x[x.size() - 1], x[x.size() - 2]);
    if (c.attrs.transpose_b)
        std::swap(y[y.size() - 1], y[y.size() - 2]);
    int64_t m = x[x.size() - 2], k = x.back(), k2 = y[y.size() - 2], nn = y.back();
    if (k != k2)
        throw c.fail(fmt::format("contraction sizes differ ({} vs {})", k, k2));
    Shape bx(x.begin(), x.end() - 2), by(y.begin(), y.end() - 2);
    if (!by.empty() && bx != by)
        throw c.fail("the second operand is 2-d or has the first one's batch dimensions");
    out.dtype = c.in[0]->dtype;
    out.shape = bx;
    out.shape.push_back(m);
    out.shape.push_back(nn);
    return out;
}

struct Buffers {
    const Buf *A, *B;         // the operands in [.., M, K] and [.., K, N] form
    const Buf *lhsT[2];       // A^T blocks, alternating
    const Buf *panel[2] = {}; // a streamed weight's panels, alternating
};

Buffers declare(StepBuffers &s, const Group &p) {
    const Graph &g = s.graph;
    const Node &n = g.node(p.start);
    const uint32_t ai = n.operands[0], bi = n.operands[1];
    const Node &bn = g.node(bi);
    // Operands in [.., M, K] and [.., K, N] form: transposed on chip, or, for
    // constants, in the constant data.
    auto oriented = [&](uint32_t v, bool transposed) -> const Buf & {
        if (transposed)
            return s.transposed(v, g.node(v).name + ".t");
        s.read(v);
        return s.buf(v);
    };
    Buffers b{};
    b.A = &oriented(ai, n.transpose_a);
    if (n.transpose_b && bn.op == Op::constant) {
        b.B = &s.buf(bi); // the constant's data is stored transposed (folded)
        s.read(bi);
    } else {
        b.B = &oriented(bi, n.transpose_b);
    }
    const Shape &as = g.node(ai).type.shape;
    const auto K = static_cast<uint32_t>(n.transpose_a ? as[as.size() - 2] : as.back());
    const uint32_t nk_max = (K + P - 1) / P + 1; // pieces of K, at most one more than blocks
    b.lhsT[0] = &s.temp(n.name + ".lhsT0", b.A->dtype, P, nk_max * P);
    b.lhsT[1] = &s.temp(n.name + ".lhsT1", b.A->dtype, P, nk_max * P);
    // A streamed weight: panels of one piece of K by one block of N pass
    // through two buffers, the load of the next panel issued before the
    // MATMUL that reads the current one.
    if (s.streamed(bi))
        for (int j = 0; j < 2; j++)
            b.panel[j] = &s.temp(fmt::format("{}.panel{}", bn.name, j), b.B->dtype, P,
                                 std::min(static_cast<uint32_t>(n.type.shape.back()), bank_elems));
    if (p.bias) {
        s.use_ones();
        s.read(*p.bias);
    }
    if (p.residual)
        s.read(*p.residual);
    return b;
}

void emit(Emitter &e, const Group &p) {
    const Buffers b = declare(e, p);
    Kernel &k = e.kernel();
    const uint32_t i = p.start;
    const Node &n = e.graph.node(i);
    const uint32_t bi = n.operands[1];
    const Shape &as = e.graph.node(n.operands[0]).type.shape, &bs = e.graph.node(bi).type.shape;
    const Buf &A = *b.A, &B = *b.B;
    // In chunks of rows (a 2-d right operand), the chunk's rows of A as one batch.
    const uint32_t M =
        A.chunked ? A.rows : static_cast<uint32_t>(n.type.shape[n.type.shape.size() - 2]);
    const auto N = static_cast<uint32_t>(n.type.shape.back());
    const auto K = static_cast<uint32_t>(n.transpose_a ? as[as.size() - 2] : as.back());
    const uint32_t batches =
        A.chunked ? 1 : static_cast<uint32_t>(n.type.elements() / (int64_t{M} * N));
    const bool batched_b = bs.size() > 2;
    const bool stream = e.streamed(bi);
    const Buf &O = e.buf(p.result);
    // The panels in the order the MATMULs read them: (row piece, block of
    // N, piece of K), the resident order, so that PSUM accumulates alike.
    struct Panel {
        uint32_t gb, kc, n0, nn;
    };
    std::vector<Panel> panels;
    if (stream)
        for (uint32_t bt = 0; bt < batches; bt++)
            for (uint32_t r = 0; r < M;) {
                const uint32_t ga = bt * M + r, cnt = std::min(P - ga % P, M - r);
                for (uint32_t n0 = 0; n0 < N; n0 += bank_elems)
                    for (uint32_t kk = 0; kk < K;) {
                        uint32_t gb = (batched_b ? bt * K : 0) + kk;
                        uint32_t kc = std::min(P - gb % P, K - kk);
                        panels.push_back({gb, kc, n0, std::min(bank_elems, N - n0)});
                        kk += kc;
                    }
                r += cnt;
            }
    const uint64_t esize = dtype_size(B.dtype);
    auto load_panel = [&](size_t idx) {
        const Panel &q = panels[idx];
        const Buf &pb = *b.panel[idx % 2];
        k.dma_load(e.rows(pb, 0, q.kc, 0, q.nn),
                   e.arg(bi).at((uint64_t{q.gb} * N + q.n0) * esize,
                                static_cast<uint32_t>(uint64_t{N} * esize)));
    };
    size_t next_panel = 0;
    if (stream && !panels.empty())
        load_panel(0);
    // The moving operand of piece @p j of K for the columns [n0, n0 + nn).
    auto moving = [&](uint32_t gb, uint32_t kc, uint32_t n0, uint32_t nn) {
        if (!stream)
            return e.rows(B, gb, kc, n0, nn);
        const size_t idx = next_panel++;
        if (idx + 1 < panels.size())
            load_panel(idx + 1);
        return e.rows(*b.panel[idx % 2], 0, kc, 0, nn);
    };
    unsigned flip = 0;
    for (uint32_t bt = 0; bt < batches; bt++) {
        for (uint32_t r = 0; r < M;) {
            const uint32_t ga = bt * M + r, cnt = std::min(P - ga % P, M - r);
            struct Piece {
                uint32_t k, kc, gb;
            };
            std::vector<Piece> pieces;
            for (uint32_t kk = 0; kk < K;) {
                uint32_t gb = (batched_b ? bt * K : 0) + kk;
                uint32_t kc = std::min(P - gb % P, K - kk);
                pieces.push_back({kk, kc, gb});
                kk += kc;
            }
            const Buf &T = *b.lhsT[flip++ % 2];
            for (size_t j = 0; j < pieces.size(); j++)
                k.transpose(e.rows(T, 0, pieces[j].kc, static_cast<uint32_t>(j) * P, cnt),
                            e.rows(A, ga, cnt, pieces[j].k, pieces[j].kc));
            for (uint32_t n0 = 0; n0 < N; n0 += bank_elems) {
                const uint32_t nn = std::min(bank_elems, N - n0);
                Tap bank = e.next_bank(nn);
                bank.part_count = cnt;
                const size_t bank_from = k.recorded();
                bool first = true;
                if (p.bias) {
                    const Buf &ones = e.ones();
                    k.matmul(bank, e.rows(ones, 0, 1, 0, cnt), e.rows(e.buf(*p.bias), 0, 1, n0, nn),
                             false);
                    first = false;
                }
                for (size_t j = 0; j < pieces.size(); j++) {
                    k.matmul(bank, e.rows(T, 0, pieces[j].kc, static_cast<uint32_t>(j) * P, cnt),
                             moving(pieces[j].gb, pieces[j].kc, n0, nn), !first);
                    first = false;
                }
                Tap dst = e.rows(O, ga, cnt, n0, nn);
                if (!p.steps.empty() && p.steps[0].kind == Step::act)
                    k.activate(p.steps[0].f, dst, bank, p.steps[0].a, p.steps[0].b);
                else if (!p.steps.empty())
                    k.tensor_scalar(Engine::vector, dst, bank, AluOp::mul, p.steps[0].a, AluOp::add,
                                    p.steps[0].b);
                else if (p.residual)
                    k.tensor_tensor(AluOp::add, dst, bank,
                                    e.rows(e.buf(*p.residual), ga, cnt, n0, nn));
                else
                    k.copy(Engine::vector, dst, bank);
                // The bank is in use from its first matmul to the epilogue
                // that reads it; the bank's next use is psum_banks later.
                k.live_range(n.name + ".acc", Space::psum, bank.part_start, bank.part_count,
                             bank.offset, nn * 4, bank_from, k.recorded());
            }
            r += cnt;
        }
    }
}
// The sum in double; the device's bound 1e-5 sum |a b| + 1e-6 (fp32
// accumulation, hw/isa.md §6).
Expected reference(const Graph &g, const Node &n, const Values &ops) {
    const Shape &os = n.type.shape;
    const Shape &as = g.node(n.operands[0]).type.shape, &bs = g.node(n.operands[1]).type.shape;
    const int64_t M = os[os.size() - 2], N = os.back();
    const int64_t K = n.transpose_a ? as[as.size() - 2] : as.back();
    const int64_t batches = n.type.elements() / (M * N);
    const bool bb = bs.size() > 2;
    const std::vector<double> &A = *ops[0], &B = *ops[1];
    Expected e;
    e.value.resize(static_cast<size_t>(n.type.elements()));
    e.bound.resize(e.value.size());
    for (int64_t t = 0; t < batches; t++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0, sa = 0;
                for (int64_t k = 0; k < K; k++) {
                    const double a =
                        A[static_cast<size_t>(t * M * K + (n.transpose_a ? k * M + m : m * K + k))];
                    const double b = B[static_cast<size_t>(
                        (bb ? t * K * N : 0) + (n.transpose_b ? j * K + k : k * N + j))];
                    s += a * b;
                    sa += std::fabs(a * b);
                }
                const auto f = static_cast<size_t>((t * M + m) * N + j);
                e.value[f] = s;
                e.bound[f] = 1e-5 * sa + 1e-6;
            }
    return e;
}

std::vector<double> magnitudes(const std::vector<double> &v) {
    std::vector<double> m(v.size());
    for (size_t i = 0; i < v.size(); i++)
        m[i] = std::fabs(v[i]);
    return m;
}

// |A| eB + eA |B| + eA eB, each a matmul of the same shapes.
std::vector<double> carry(const Graph &g, const Node &n, const std::vector<double> &value,
                          const Values &val, const Values &err) {
    std::vector<double> c(value.size(), 0);
    const bool za = all_zero(*err[0]), zb = all_zero(*err[1]);
    if (za && zb)
        return c;
    const auto ma = magnitudes(*val[0]), mb = magnitudes(*val[1]);
    auto add = [&](const std::vector<double> &x, const std::vector<double> &y) {
        const std::vector<double> p = reference(g, n, {&x, &y}).value;
        for (size_t f = 0; f < c.size(); f++)
            c[f] += p[f];
    };
    if (!zb)
        add(ma, *err[1]);
    if (!za)
        add(*err[0], mb);
    if (!za && !zb)
        add(*err[0], *err[1]);
    // the products went through fp32 operands in reference()
    for (auto &x : c)
        x *= 1 + 0x1p-20;
    return c;
}

// The right operand [K, N] is the weight; the rows of A are the result's.
bool weight_operand(const Graph &, const Node &, size_t k) {
    return k == 1;
}

std::string mixes_rows(const Graph &g, const Node &n, int64_t) {
    if (n.transpose_a || g.node(n.operands[1]).type.shape.size() != 2)
        return "its rows mix (a transposed or batched operand)";
    return "";
}

// The rows of the first operand, against one matrix (whole in every part)
// or batch dimensions split alike.
void split_rule(SplitRoles &s, uint32_t n) {
    const Node &node = s.graph.node(n);
    const uint32_t a = node.operands[0], b = node.operands[1];
    const size_t ra = s.graph.node(a).type.shape.size(), rb = s.graph.node(b).type.shape.size();
    if (!s.per_row(a)) {
        if (s.per_row(b))
            s.refuse(n, "the second operand is split while the first is not");
        return;
    }
    if (ra == 2 && node.transpose_a)
        s.refuse(n, "the first operand's axis 0 is contracted (transpose_a)");
    if (rb == 2)
        s.use_whole(n, b); // rows of a against one matrix
    else
        s.align(n, b, s.per_row(a), s.graph.node(b).type.shape[0]); // batch dims
    s.set_per_row(n, s.per_row(a));
}

} // namespace

extern const KindLowering matmul_lowering{[](StepBuffers &s, const Group &g) { declare(s, g); },
                                          emit};

extern const OpRecord matmul_record{
    .op = Op::matmul,
    .name = "matmul",
    .infer = infer,
    .kind = [](const Graph &, const Node &) { return Kind::matmul; },
    .whole_operand = weight_operand,
    .mixes_rows = mixes_rows,
    .reference = reference,
    .carry = carry,
    .split = split_rule,
};

} // namespace neuron::compiler::lower
