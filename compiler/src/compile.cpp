// SPDX-License-Identifier: MIT
// Lowering. Every value lives in SBUF in the row layout: viewed as a matrix
// [R, C] (C the last axis, R the product of the others), rows tiled over
// the 128 partitions: row r is partition r % 128 of row tile r / 128, and
// tile t holds elements [t C, (t + 1) C) of each partition of the value's
// buffer. A last tile with fewer rows uses fewer partitions; nothing is
// padded. docs/compiler.md explains the passes and the per-operator
// lowering.
#include <neuron/compiler/compile.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "index.hpp"

namespace neuron::compiler {

namespace {

constexpr uint32_t P = 128;
constexpr uint32_t psum_banks = 8, bank_elems = 512; // fp32 per partition per bank
constexpr int64_t max_cols = 16384;

int64_t rows_of(const Type &t) {
    return t.elements() / t.shape.back();
}

[[noreturn]] void unsupported(const Graph &g, const Node &n, const std::string &why) {
    throw GraphError(fmt::format("{}: {}", describe(g, n), why));
}

// One SBUF buffer in the row layout.
struct Buf {
    std::string what;
    DType dtype = DType::fp32;
    uint32_t rows = 0, cols = 0;
    int first = 0, last = 0; // steps during which it is live
    uint64_t offset = 0;     // bytes in each partition, relative to the arena
    // A view: row tiles [view_tile, ...) of buffer view_of (never a view),
    // whose lifetime covers the view's; placed with it.
    int view_of = -1;
    uint32_t view_tile = 0;
    // An input or a constant that takes no SBUF of its own: a matmul's
    // weight left in device memory and streamed through panel buffers, or
    // a value that every use reads from memory into its own temporaries
    // (a row spread down the partitions by DMA).
    bool in_memory = false;
    // A value of the row space of a graph computed in chunks of rows: it
    // holds the current chunk's rows (rows is set per chunk); whole: a
    // weight or row operand, live for the whole program.
    bool chunked = false, whole = false;
    uint32_t tiles() const { return (rows + P - 1) / P; }
    uint64_t bytes() const { return (uint64_t{tiles()} * cols * dtype_size(dtype) + 63) / 64 * 64; }
};

// The buffer of value @p n in the row layout, live at step @p step.
Buf value_buffer(const Node &n, int step) {
    Buf b;
    b.what = n.name;
    b.dtype = n.type.dtype;
    b.rows = static_cast<uint32_t>(rows_of(n.type));
    b.cols = static_cast<uint32_t>(n.type.shape.back());
    b.first = b.last = step;
    return b;
}

// What the lowering does for one node.
enum class Kind {
    none,        // inputs and constants (loaded on first use), fused nodes
    alias,       // shares its operand's buffer
    view,        // whole row tiles of its operand's buffer (slice, split)
    matmul,      // with an epilogue of fused nodes
    elementwise, // a chain of unary steps
    binary,
    softmax,
    layer_norm,
    rms_norm,
    gather, // reshape, transpose keeping the last axis, slice, concat
    transpose2,
};

struct Step {
    enum { affine, div, rdiv, rsub, act } kind;
    float a = 1, b = 0;
    Activation f = Activation::identity;
};

struct Plan {
    Kind kind = Kind::none;
    std::vector<uint32_t> fused; // the nodes folded into this one, in order
    // matmul epilogue
    std::optional<uint32_t> bias, residual;
    std::vector<Step> steps;       // matmul: affine + activation; elementwise: the chain
    std::vector<uint32_t> sources; // gather: the values it reads
    uint32_t result = 0;           // the node whose value this group produces
};

Activation activation(Op op) {
    switch (op) {
    case Op::relu:
        return Activation::relu;
    case Op::gelu:
        return Activation::gelu;
    case Op::gelu_tanh:
        return Activation::gelu_tanh;
    case Op::silu:
        return Activation::silu;
    case Op::sigmoid:
        return Activation::sigmoid;
    case Op::tanh:
        return Activation::tanh;
    case Op::exp:
        return Activation::exp;
    default:
        return Activation::identity;
    }
}

AluOp alu(Op op) {
    switch (op) {
    case Op::add:
        return AluOp::add;
    case Op::sub:
        return AluOp::sub;
    case Op::mul:
        return AluOp::mul;
    default:
        return AluOp::div;
    }
}

// The first row of slice or split piece @p n in its operand's row layout,
// when the piece is whole consecutive rows of it (it cuts an axis other
// than the last, after axes of size 1), else -1.
int64_t first_row(const Node &n) {
    const Shape &s = n.type.shape;
    const auto ax = static_cast<size_t>(n.axis);
    if (ax + 1 == s.size())
        return -1;
    for (size_t d = 0; d < ax; d++)
        if (s[d] != 1)
            return -1;
    int64_t rows_per_index = 1;
    for (size_t d = ax + 1; d + 1 < s.size(); d++)
        rows_per_index *= s[d];
    return n.start * rows_per_index;
}

// A piece that starts a row tile of its operand is a view of its buffer.
bool is_view(const Node &n) {
    const int64_t r = first_row(n);
    return r >= 0 && r % P == 0;
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

class Lowering {
  public:
    Lowering(const Graph &g, const CompileOptions &o) : g_(g), opt_(o) {}
    Compiled run();

  private:
    using Clock = std::chrono::steady_clock;
    void timed(const char *pass, const std::function<void()> &f) {
        auto t0 = Clock::now();
        f();
        times_.push_back(
            {pass, std::chrono::duration<double, std::milli>(Clock::now() - t0).count()});
    }

    void check();
    void fuse();
    void plan_memory();
    void place();
    std::vector<uint32_t> streamable() const;
    [[noreturn]] void refuse_peak(const std::string &chunk_why) const;
    void emit();
    void emit_steps();

    // --- helpers of emission
    int buf_of(uint32_t node) const { return value_buf_.at(node); }
    const Buf &buf(uint32_t node) const { return bufs_[static_cast<size_t>(buf_of(node))]; }
    int temp(uint32_t step, const std::string &what, DType dt, uint32_t rows, uint32_t cols);
    Tap rows(const Buf &b, uint32_t r0, uint32_t n, uint32_t c0, uint32_t cn) const;
    Tap tile(const Buf &b, uint32_t t) const;
    uint32_t tile_rows(const Buf &b, uint32_t t) const { return std::min(P, b.rows - t * P); }
    void ensure_loaded(uint32_t node);
    void store(uint32_t node);
    const Buf &replicated(uint32_t node, uint32_t step, uint32_t period = 1);
    void require(uint32_t node, const std::string &insn, unsigned minor) const;
    void require(uint32_t node, Activation f) const { require(node, mnemonic(f), isa_minor_of(f)); }
    void check_isa(const Program &p) const;

    void emit_matmul(uint32_t i, const Plan &p);
    void emit_elementwise(uint32_t i, const Plan &p);
    void emit_binary(uint32_t i);
    void emit_spread(uint32_t i, uint32_t big, uint32_t small, const RowRepeat &rep);
    void emit_softmax(uint32_t i);
    void emit_norm(uint32_t i);
    void emit_gather(uint32_t i);
    std::pair<uint32_t, int64_t> source(uint32_t node, int64_t f) const;
    void emit_transpose2(uint32_t src_node, const Buf &in, const Buf &out, uint32_t batch,
                         uint32_t x, uint32_t y);

    const Graph &g_;
    CompileOptions opt_;
    std::vector<PassTime> times_;
    std::vector<Plan> plans_;
    std::vector<int> uses_;
    std::vector<bool> is_output_;
    std::vector<int> value_buf_;
    std::deque<Buf> bufs_;                       // stable references while temporaries are added
    std::map<uint32_t, std::vector<int>> temps_; // step -> temp buffers, in creation order
    std::map<uint32_t, size_t> next_temp_;
    std::map<std::pair<uint32_t, uint32_t>, int> replicas_; // (node, step) -> buffer
    std::map<uint32_t, std::vector<float>> folded_;         // transposed constants
    std::vector<bool> streamed_;                            // weights streamed from device memory
    int peak_buf_ = -1;                                     // the buffer that ends at the peak
    uint64_t ones_at_ = 0;                                  // the row of ones' offset in the arena
    uint64_t peak_ = 0;
    bool planning_ = true; // temp() records during planning, replays during emission

    std::optional<ProgramBuilder> b_;
    std::optional<Kernel> k_;
    std::map<uint32_t, ArgRef> args_;
    std::vector<bool> loaded_;
    // Inputs and constants that the plan's dry run loaded into SBUF.
    std::vector<bool> sbuf_read_;
    Tile arena_{}, psum_{};
    uint32_t next_bank_ = 0;
    int ones_ = -1;
    std::string plan_text_;
    std::vector<size_t> step_from_; // per step: the Kernel's instructions before it
    // Rows in chunks: chunk_rows_ rows of the row space (rows_ rows) at a
    // time, 0 when not chunked; the current chunk's first row; the values
    // of the row space and the weights and row operands (params).
    uint32_t chunk_rows_ = 0, row0_ = 0;
    int64_t rows_ = 0;
    std::vector<bool> rowspace_, param_;
    std::vector<std::vector<size_t>> chunk_steps_; // step_from_ of every chunk
    bool chunkable(std::string &why);
    void live_ranges();
};

void Lowering::check() {
    if (opt_.isa_version >> 16 != isa_version() >> 16 || opt_.isa_version > isa_version())
        throw GraphError(fmt::format("target ISA {}.{}: this compiler emits ISA {}.0 to {}.{}",
                                     opt_.isa_version >> 16, opt_.isa_version & 0xffff,
                                     isa_version() >> 16, isa_version() >> 16,
                                     isa_version() & 0xffff));
    if (g_.outputs().empty())
        throw GraphError(fmt::format("graph '{}' has no outputs", g_.name()));
    uses_.assign(g_.nodes().size(), 0);
    is_output_.assign(g_.nodes().size(), false);
    for (const Node &n : g_.nodes())
        for (uint32_t o : n.operands)
            uses_[o]++;
    for (uint32_t o : g_.outputs())
        is_output_[o] = true;
    for (const Node &n : g_.nodes()) {
        if (n.type.shape.back() > max_cols)
            unsupported(g_, n,
                        fmt::format("the last axis has {} elements; the row layout holds at most "
                                    "{} per partition",
                                    n.type.shape.back(), max_cols));
        if (rows_of(n.type) > (int64_t{1} << 31))
            unsupported(g_, n, "more than 2^31 rows");
    }
}

// Matmul epilogues: bias (a row vector added), literal affine steps and one
// activation, or a same-shape residual add; and chains of unary
// elementwise nodes. A node is folded into its producer's group only when
// the producer's value is used by it alone and is not an output.
void Lowering::fuse() {
    const auto &nodes = g_.nodes();
    plans_.assign(nodes.size(), Plan{});
    std::vector<bool> taken(nodes.size(), false);
    auto single_consumer = [&](uint32_t v) -> std::optional<uint32_t> {
        if (uses_[v] != 1 || is_output_[v])
            return std::nullopt;
        for (uint32_t j = v + 1; j < nodes.size(); j++)
            for (uint32_t o : nodes[j].operands)
                if (o == v)
                    return j;
        return std::nullopt;
    };
    auto literal_step = [&](const Node &n) -> std::optional<Step> {
        if (!is_binary(n.op) || !n.scalar || n.type.dtype == DType::int32)
            return std::nullopt;
        float s = *n.scalar;
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
    };
    auto unary_step = [&](const Node &n) -> std::optional<Step> {
        if (is_activation(n.op))
            return Step{Step::act, 1, 0, activation(n.op)};
        return literal_step(n);
    };
    for (uint32_t i = 0; i < nodes.size(); i++) {
        if (taken[i])
            continue;
        // Whether operand @v exists when the group that starts at node @i
        // runs: computed before it, or an input or constant, whatever its
        // place in the graph (the torch bridge declares a bias after the
        // matmul that reads it).
        auto ready = [&](uint32_t v) {
            return v < i || nodes[v].op == Op::input || nodes[v].op == Op::constant;
        };
        const Node &n = nodes[i];
        Plan &p = plans_[i];
        p.result = i;
        if (n.op == Op::input || n.op == Op::constant) {
            p.kind = Kind::none;
            continue;
        }
        // Data movement nobody reads (a piece of a split left unused) moves nothing.
        if (is_data_movement(n.op) && uses_[i] == 0 && !is_output_[i]) {
            p.kind = Kind::none;
            continue;
        }
        if (n.op == Op::matmul) {
            p.kind = Kind::matmul;
            uint32_t cur = i;
            auto next = opt_.fuse ? single_consumer(cur) : std::nullopt;
            // bias: add(h, b) with b a row vector of the output's columns
            if (next && nodes[*next].op == Op::add && !nodes[*next].scalar &&
                nodes[*next].type == n.type) {
                const Node &a = nodes[*next];
                uint32_t other = a.operands[0] == cur ? a.operands[1] : a.operands[0];
                const Type &bt = nodes[other].type;
                if (bt.dtype != DType::int32 && rows_of(bt) == 1 &&
                    bt.shape.back() == n.type.shape.back() && other != cur && ready(other)) {
                    p.bias = other;
                    p.fused.push_back(*next);
                    taken[*next] = true;
                    cur = *next;
                    next = single_consumer(cur);
                }
            }
            // literal affine steps, then an activation
            std::vector<Step> steps;
            std::vector<uint32_t> chain;
            auto look = next;
            // (x * scale) + bias, in that order, then f: ACTIVATE's f(x * scale + bias)
            float scale = 1, bias = 0;
            bool have_mul = false, have_add = false;
            while (look) {
                auto st = unary_step(nodes[*look]);
                if (!st)
                    break;
                if (st->kind == Step::act) {
                    steps.push_back(Step{Step::act, scale, bias, st->f});
                    chain.push_back(*look);
                    break;
                }
                if (st->kind != Step::affine)
                    break;
                if (st->a != 1) { // a multiplication
                    if (have_mul || have_add)
                        break;
                    scale = st->a;
                    have_mul = true;
                } else { // an addition
                    if (have_add)
                        break;
                    bias = st->b;
                    have_add = true;
                }
                chain.push_back(*look);
                look = single_consumer(*look);
            }
            if (!chain.empty()) {
                if (steps.empty()) // affine without an activation: a TENSOR_SCALAR evacuation
                    steps.push_back(Step{Step::affine, scale, bias});
                p.steps = steps;
                for (uint32_t c : chain) {
                    p.fused.push_back(c);
                    taken[c] = true;
                }
                cur = chain.back();
            } else if (next && nodes[*next].op == Op::add && !nodes[*next].scalar &&
                       nodes[*next].type == n.type) {
                const Node &a = nodes[*next];
                uint32_t other = a.operands[0] == cur ? a.operands[1] : a.operands[0];
                if (nodes[other].type == n.type && other != cur && ready(other)) {
                    p.residual = other;
                    p.fused.push_back(*next);
                    taken[*next] = true;
                    cur = *next;
                }
            }
            p.result = cur;
            continue;
        }
        if (auto st = unary_step(n)) {
            p.kind = Kind::elementwise;
            p.steps.push_back(*st);
            uint32_t cur = i;
            while (opt_.fuse) {
                auto next = single_consumer(cur);
                if (!next || nodes[*next].type != n.type)
                    break;
                auto s2 = unary_step(nodes[*next]);
                if (!s2 || nodes[*next].operands[0] != cur)
                    break;
                p.steps.push_back(*s2);
                p.fused.push_back(*next);
                taken[*next] = true;
                cur = *next;
            }
            p.result = cur;
            continue;
        }
        switch (n.op) {
        case Op::add:
        case Op::sub:
        case Op::mul:
        case Op::div:
            p.kind = Kind::binary;
            break;
        case Op::softmax:
            p.kind = Kind::softmax;
            break;
        case Op::layer_norm:
            p.kind = Kind::layer_norm;
            break;
        case Op::rms_norm:
            p.kind = Kind::rms_norm;
            break;
        case Op::reshape:
            p.kind = nodes[n.operands[0]].type.shape.back() == n.type.shape.back() ? Kind::alias
                                                                                   : Kind::gather;
            break;
        case Op::transpose: {
            const Shape &d = n.dims;
            size_t r = d.size();
            bool keeps_last = d[r - 1] == static_cast<int64_t>(r - 1);
            bool swaps_last2 = r >= 2 && d[r - 1] == static_cast<int64_t>(r - 2) &&
                               d[r - 2] == static_cast<int64_t>(r - 1);
            for (size_t j = 0; swaps_last2 && j + 2 < r; j++)
                swaps_last2 = d[j] == static_cast<int64_t>(j);
            if (keeps_last)
                p.kind = Kind::gather;
            else if (swaps_last2)
                p.kind = Kind::transpose2;
            else
                unsupported(g_, n,
                            "a permutation that moves the last axis is lowered only as a swap of "
                            "the last two axes with the others in place; split it into two "
                            "transposes");
            break;
        }
        case Op::slice:
        case Op::split:
            p.kind = is_view(n) ? Kind::view : Kind::gather;
            break;
        case Op::concat:
            p.kind = Kind::gather;
            break;
        default:
            unsupported(g_, n, "no lowering");
        }
    }
    // Chains of data movement become one gather from the chain's sources.
    auto moves = [&](uint32_t v) {
        return plans_[v].kind == Kind::gather || plans_[v].kind == Kind::alias ||
               plans_[v].kind == Kind::view;
    };
    for (uint32_t i = 0; i < nodes.size(); i++) {
        if (taken[i] || !moves(i))
            continue;
        Plan &p = plans_[i];
        std::vector<uint32_t> chain{i};
        bool gathers = p.kind == Kind::gather;
        while (opt_.fuse) {
            auto next = single_consumer(chain.back());
            if (!next || taken[*next] || !moves(*next))
                break;
            gathers |= plans_[*next].kind == Kind::gather;
            chain.push_back(*next);
        }
        if (!gathers)
            continue;
        p.kind = Kind::gather;
        p.result = chain.back();
        p.fused.assign(chain.begin() + 1, chain.end());
        for (uint32_t c : chain) {
            if (c != i)
                taken[c] = true;
            for (uint32_t o : nodes[c].operands)
                if (std::find(chain.begin(), chain.end(), o) == chain.end() &&
                    std::find(p.sources.begin(), p.sources.end(), o) == p.sources.end())
                    p.sources.push_back(o);
        }
    }
    for (uint32_t i = 0; i < nodes.size(); i++)
        if (taken[i])
            plans_[i].kind = Kind::none;
}

int Lowering::temp(uint32_t step, const std::string &what, DType dt, uint32_t rows, uint32_t cols) {
    if (!planning_) { // emission asks for the same temps in the same order
        size_t k = next_temp_[step]++;
        return temps_.at(step).at(k);
    }
    Buf b;
    b.what = what;
    b.dtype = dt;
    b.rows = rows;
    b.cols = cols;
    b.first = b.last = static_cast<int>(step);
    bufs_.push_back(b);
    int id = static_cast<int>(bufs_.size() - 1);
    temps_[step].push_back(id);
    return id;
}

// Memory planning: every buffer placed by liveness. When the peak does
// not fit the core's SBUF, the largest matmul weight live at the peak is
// left in device memory and streamed (emit_matmul), and the plan is made
// again, until it fits or nothing live at the peak can be streamed.
void Lowering::plan_memory() {
    streamed_.assign(g_.nodes().size(), false);
    chunk_rows_ = 0;
    for (;;) {
        place();
        if (peak_ <= opt_.limits.sbuf_bytes)
            return;
        const std::vector<uint32_t> c = streamable();
        if (c.empty())
            break;
        streamed_[c.front()] = true;
    }
    // Then the rows in chunks: the most row tiles per chunk that fit.
    std::string why;
    if (!chunkable(why))
        refuse_peak(why);
    const auto tiles = static_cast<uint32_t>((rows_ + P - 1) / P);
    for (uint32_t t = tiles - 1; t >= 1; t--) {
        chunk_rows_ = t * P;
        place();
        if (peak_ <= opt_.limits.sbuf_bytes)
            return;
    }
    refuse_peak("it does not fit in chunks of 128 rows either");
}

// Whether the graph can run in chunks of rows: every computed value and
// every output is [R, C] in the row layout with the same R (above 128),
// and each row of a value depends on the same row of its operands alone,
// or on weights and row operands (graph inputs or constants: a matmul's
// right operand [K, N], a row [C] or one element of a binary operator,
// layer_norm's and rms_norm's weight and bias), which stay resident. Else
// @p why names the node that is not.
bool Lowering::chunkable(std::string &why) {
    const auto &nodes = g_.nodes();
    rowspace_.assign(nodes.size(), false);
    param_.assign(nodes.size(), false);
    rows_ = rows_of(nodes[g_.outputs().front()].type);
    if (rows_ <= P) {
        why = fmt::format("rows are not split into chunks: the outputs have {} rows, one row tile",
                          rows_);
        return false;
    }
    auto fail = [&](const Node &n, const std::string &r) {
        why = fmt::format("rows are not split into chunks: {}: {}", describe(g_, n), r);
        return false;
    };
    for (uint32_t i = 0; i < nodes.size(); i++) {
        const Node &n = nodes[i];
        for (size_t k = 0; k < n.operands.size(); k++) {
            const uint32_t o = n.operands[k];
            const Type &ot = nodes[o].type;
            bool param = false;
            if (n.op == Op::matmul)
                param = k == 1;
            else if (n.op == Op::layer_norm || n.op == Op::rms_norm)
                param = k >= 1;
            else if (is_binary(n.op) && n.operands.size() == 2)
                param = rows_of(ot) == 1 && ot.elements() != n.type.elements();
            if (param)
                param_[o] = true;
            else
                rowspace_[o] = true;
        }
        if (n.op != Op::input && n.op != Op::constant)
            rowspace_[i] = true;
    }
    for (uint32_t o : g_.outputs())
        rowspace_[o] = true;
    // What each operator does to rows first, then the rows of every value.
    for (uint32_t i = 0; i < nodes.size(); i++) {
        const Node &n = nodes[i];
        if (!rowspace_[i] || is_activation(n.op))
            continue;
        switch (n.op) {
        case Op::input:
        case Op::constant:
        case Op::layer_norm:
        case Op::rms_norm:
            break;
        case Op::add:
        case Op::sub:
        case Op::mul:
        case Op::div:
            if (!n.scalar) {
                const Type &a = nodes[n.operands[0]].type, &b = nodes[n.operands[1]].type;
                const auto ok = [&](const Type &t) {
                    return t.elements() == n.type.elements() || rows_of(t) == 1 ||
                           (t.shape.back() == 1 && rows_of(t) == rows_);
                };
                if (!ok(a) || !ok(b))
                    return fail(n, "an operand whose rows repeat");
            }
            break;
        case Op::softmax:
            if (n.causal)
                return fail(n, "the causal mask depends on the row's place");
            break;
        case Op::matmul: {
            const Type &b = nodes[n.operands[1]].type;
            if (n.transpose_a || b.shape.size() != 2)
                return fail(n, "its rows mix (a transposed or batched operand)");
            break;
        }
        case Op::reshape:
            if (nodes[n.operands[0]].type.shape.back() != n.type.shape.back())
                return fail(n, "it moves elements between rows");
            break;
        default:
            return fail(n, "it moves elements between rows");
        }
    }
    for (uint32_t i = 0; i < nodes.size(); i++) {
        const Node &n = nodes[i];
        if (param_[i] && rowspace_[i])
            return fail(n, "a value read both row by row and whole (a weight or row operand)");
        if (param_[i] && n.op != Op::input && n.op != Op::constant)
            return fail(n, "a computed weight or row operand");
        if (rowspace_[i] && rows_of(n.type) != rows_)
            return fail(n, fmt::format("its rows are {}, the outputs' {}", rows_of(n.type), rows_));
    }
    return true;
}

// The weights that streaming would take out of SBUF at the peak, largest
// first: graph inputs and constants live then whose every use is a matmul
// reading them as its right operand in [.., K, N] form (or a constant read
// transposed, which is stored so), not outputs, not streamed yet.
std::vector<uint32_t> Lowering::streamable() const {
    const auto &nodes = g_.nodes();
    const Buf &peak = bufs_[static_cast<size_t>(peak_buf_)];
    std::vector<uint32_t> c;
    for (uint32_t v = 0; v < nodes.size(); v++) {
        const Node &n = nodes[v];
        if ((n.op != Op::input && n.op != Op::constant) || streamed_[v] || is_output_[v] ||
            uses_[v] == 0 || value_buf_[v] < 0)
            continue;
        const Buf &b = buf(v);
        if (b.last < peak.first || b.first > peak.last)
            continue;
        bool ok = true;
        for (const Node &u : nodes)
            for (size_t k = 0; k < u.operands.size(); k++)
                if (u.operands[k] == v)
                    ok &= u.op == Op::matmul && k == 1 && (!u.transpose_b || folded_.count(v) != 0);
        if (ok)
            c.push_back(v);
    }
    std::stable_sort(c.begin(), c.end(),
                     [&](uint32_t a, uint32_t b) { return buf(a).bytes() > buf(b).bytes(); });
    return c;
}

// Nothing live at the peak can be streamed, and the rows cannot be split
// (@p chunk_why): name the step, its buffers and why.
void Lowering::refuse_peak(const std::string &chunk_why) const {
    const Buf &peak = bufs_[static_cast<size_t>(peak_buf_)];
    const int step = peak.first;
    std::vector<const Buf *> live;
    for (const Buf &b : bufs_)
        if (b.view_of < 0 && !b.in_memory && b.first <= step && b.last >= step)
            live.push_back(&b);
    std::stable_sort(live.begin(), live.end(),
                     [](const Buf *a, const Buf *b) { return a->bytes() > b->bytes(); });
    std::vector<std::string> names;
    for (size_t j = 0; j < live.size() && j < 6; j++)
        names.push_back(fmt::format("{} {} bytes", live[j]->what, live[j]->bytes()));
    if (live.size() > 6)
        names.push_back(fmt::format("{} more", live.size() - 6));
    std::vector<std::string> streamed;
    for (uint32_t v = 0; v < streamed_.size(); v++)
        if (streamed_[v])
            streamed.push_back(g_.node(v).name);
    unsupported(
        g_, g_.node(static_cast<uint32_t>(step)),
        fmt::format("graph '{}' needs {} bytes of SBUF per partition at its peak, the core has "
                    "{}; live then: {}{}{}. Only a matmul's weight (a graph input or constant "
                    "that only matmuls read as [K, N]) is streamed from device memory, and "
                    "nothing else live then can be; {}",
                    g_.name(), peak_, opt_.limits.sbuf_bytes, fmt::join(names, ", "),
                    streamed.empty() ? std::string()
                                     : fmt::format(" (streamed: {})", fmt::join(streamed, ", ")),
                    chunk_rows_ ? fmt::format(" (in chunks of {} rows)", chunk_rows_) : "",
                    chunk_why));
}

void Lowering::place() {
    const auto &nodes = g_.nodes();
    bufs_.clear();
    temps_.clear();
    next_temp_.clear();
    replicas_.clear();
    ones_ = -1;
    value_buf_.assign(nodes.size(), -1);
    // The group's result gets the buffer; aliases share their operand's.
    std::vector<int> group_step(nodes.size());
    for (uint32_t i = 0; i < nodes.size(); i++)
        group_step[i] = static_cast<int>(i);
    for (uint32_t i = 0; i < nodes.size(); i++)
        for (uint32_t f : plans_[i].fused)
            group_step[f] = static_cast<int>(i); // a fused node runs in its group's step
    auto step_of = [&](uint32_t consumer) { return group_step[consumer]; };
    std::vector<int> first_use(nodes.size(), -1);
    for (uint32_t i = 0; i < nodes.size(); i++)
        for (uint32_t o : nodes[i].operands)
            if (first_use[o] < 0 || step_of(i) < first_use[o])
                first_use[o] = step_of(i);
    for (uint32_t i = 0; i < nodes.size(); i++) {
        const Node &n = nodes[i];
        const Plan &p = plans_[i];
        if (n.op == Op::input || n.op == Op::constant) {
            Buf b = value_buffer(n, first_use[i] >= 0 ? first_use[i] : static_cast<int>(i));
            if (folded_.count(i)) { // stored transposed: [.., y, x]
                b.cols = static_cast<uint32_t>(n.type.shape[n.type.shape.size() - 2]);
                b.rows = static_cast<uint32_t>(n.type.elements() / b.cols);
            }
            b.in_memory = streamed_[i];
            if (chunk_rows_ && rowspace_[i]) {
                b.rows = chunk_rows_;
                b.chunked = true;
            } else if (chunk_rows_) {
                b.whole = true;
            }
            bufs_.push_back(b);
            value_buf_[i] = static_cast<int>(bufs_.size() - 1);
            continue;
        }
        if (p.kind == Kind::none)
            continue;
        if (p.kind == Kind::alias) {
            value_buf_[i] = value_buf_[n.operands[0]];
            continue;
        }
        if (p.kind == Kind::view) {
            const int of = value_buf_[n.operands[0]];
            const Buf &o = bufs_[static_cast<size_t>(of)];
            Buf b = value_buffer(n, static_cast<int>(i));
            b.view_of = o.view_of >= 0 ? o.view_of : of;
            b.view_tile = o.view_tile + static_cast<uint32_t>(first_row(n) / P);
            bufs_.push_back(b);
            value_buf_[i] = static_cast<int>(bufs_.size() - 1);
            continue;
        }
        bufs_.push_back(value_buffer(nodes[p.result], static_cast<int>(i)));
        if (chunk_rows_) {
            bufs_.back().rows = chunk_rows_;
            bufs_.back().chunked = true;
        }
        value_buf_[p.result] = static_cast<int>(bufs_.size() - 1);
        for (uint32_t f : p.fused)
            if (f != p.result)
                value_buf_[f] = -1;
    }
    // Lifetimes: a buffer lives until the last step that reads any value in it.
    for (uint32_t i = 0; i < nodes.size(); i++)
        for (uint32_t o : nodes[i].operands)
            if (value_buf_[o] >= 0) {
                Buf &b = bufs_[static_cast<size_t>(value_buf_[o])];
                b.last = std::max(b.last, step_of(i));
            }
    // A view's buffer lives as long as any view of it.
    for (Buf &b : bufs_)
        if (b.view_of >= 0) {
            Buf &o = bufs_[static_cast<size_t>(b.view_of)];
            o.first = std::min(o.first, b.first);
            o.last = std::max(o.last, b.last);
        }
    // In chunks of rows, weights and row operands are loaded once and live
    // through every chunk.
    for (Buf &b : bufs_)
        if (b.whole) {
            b.first = 0;
            b.last = static_cast<int>(nodes.size()) - 1;
        }
    // Temporaries: a dry run of the emission records them per step, and
    // which inputs and constants are loaded into SBUF.
    sbuf_read_.assign(nodes.size(), false);
    planning_ = true;
    emit();
    planning_ = false;
    for (uint32_t i = 0; i < nodes.size(); i++)
        if ((nodes[i].op == Op::input || nodes[i].op == Op::constant) && !sbuf_read_[i])
            bufs_[static_cast<size_t>(value_buf_[i])].in_memory = true;

    // First fit by offset among the buffers whose lifetimes overlap.
    std::vector<size_t> order(bufs_.size());
    for (size_t i = 0; i < order.size(); i++)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return bufs_[a].first < bufs_[b].first; });
    std::vector<size_t> placed;
    peak_ = 0;
    peak_buf_ = -1;
    for (size_t id : order) {
        Buf &x = bufs_[id];
        if (x.view_of >= 0 || x.in_memory)
            continue;
        std::vector<std::pair<uint64_t, uint64_t>> busy;
        for (size_t y : placed) {
            const Buf &o = bufs_[y];
            if (o.last >= x.first && o.first <= x.last)
                busy.emplace_back(o.offset, o.offset + o.bytes());
        }
        std::sort(busy.begin(), busy.end());
        uint64_t off = 0;
        for (auto [b0, b1] : busy) {
            if (off + x.bytes() <= b0)
                break;
            off = std::max(off, b1);
        }
        x.offset = off;
        if (off + x.bytes() > peak_ || peak_buf_ < 0) {
            peak_ = std::max(peak_, off + x.bytes());
            peak_buf_ = static_cast<int>(id);
        }
        placed.push_back(id);
    }
    for (Buf &b : bufs_)
        if (b.view_of >= 0)
            b.offset = bufs_[static_cast<size_t>(b.view_of)].offset +
                       uint64_t{b.view_tile} * b.cols * dtype_size(b.dtype);
    // After every buffer, the row of ones that adds a bias in PSUM.
    ones_at_ = peak_;
    if (ones_ == -2)
        peak_ += uint64_t{P} * 4;
}

Tap Lowering::rows(const Buf &b, uint32_t r0, uint32_t n, uint32_t c0, uint32_t cn) const {
    if (b.in_memory)
        throw std::logic_error(fmt::format(
            "neuron::compiler: {} is read from SBUF, where the memory plan gave it no buffer",
            b.what));
    const uint32_t t = r0 / P;
    Tap tap;
    tap.space = Space::sbuf;
    tap.dtype = b.dtype;
    tap.part_start = r0 % P;
    tap.part_count = n;
    tap.offset = arena_.offset + static_cast<uint32_t>(b.offset + (uint64_t{t} * b.cols + c0) *
                                                                      dtype_size(b.dtype));
    tap.count = {cn, 1};
    tap.stride = {1, 0};
    return tap;
}

Tap Lowering::tile(const Buf &b, uint32_t t) const {
    return rows(b, t * P, tile_rows(b, t), 0, b.cols);
}

void Lowering::ensure_loaded(uint32_t node) {
    if (planning_)
        sbuf_read_[node] = true;
    if (planning_ || loaded_[node] || streamed_[node])
        return;
    const Node &n = g_.node(node);
    if (n.op != Op::input && n.op != Op::constant)
        return;
    loaded_[node] = true;
    const Buf &b = buf(node);
    const ArgRef &a = args_.at(node);
    const uint64_t pitch = uint64_t{b.cols} * dtype_size(b.dtype);
    const uint64_t row0 = b.chunked ? row0_ : 0;
    for (uint32_t t = 0; t < b.tiles(); t++)
        k_->dma_load(tile(b, t),
                     a.at((row0 + uint64_t{t} * P) * pitch, static_cast<uint32_t>(pitch)));
}

void Lowering::store(uint32_t node) {
    if (planning_ || !is_output_[node])
        return;
    const Buf &b = buf(node);
    const ArgRef &a = args_.at(node);
    const uint64_t pitch = uint64_t{b.cols} * dtype_size(b.dtype);
    const uint64_t row0 = b.chunked ? row0_ : 0;
    for (uint32_t t = 0; t < b.tiles(); t++)
        k_->dma_store(a.at((row0 + uint64_t{t} * P) * pitch, static_cast<uint32_t>(pitch)),
                      tile(b, t));
}

// A one-row value on all 128 partitions. An input or a constant is read
// so from memory: one DMA_LOAD with a partition stride of 0. A computed
// row is copied: one COPY, then copies that double the filled partitions
// (partition pairing is relative, so a copy may move data across
// partitions). With @p period > 1 (below 128), the value's @p period rows
// repeat down the partitions instead: partition p holds row p % period.
// They are loaded (an input or a constant, one DMA_LOAD) or copied to the
// first partitions, and every doubling copies a multiple of the period,
// which keeps it.
const Buf &Lowering::replicated(uint32_t node, uint32_t step, uint32_t period) {
    auto key = std::make_pair(node, step);
    auto it = replicas_.find(key);
    if (it == replicas_.end()) {
        const Buf &src = buf(node);
        int id = temp(step, g_.node(node).name + (period > 1 ? ".period" : ".rows"), src.dtype, P,
                      src.cols);
        replicas_[key] = id;
        // In chunks of rows, a row operand's replica is filled by the
        // first chunk and kept for the others.
        if (chunk_rows_ && param_[node]) {
            Buf &r = bufs_[static_cast<size_t>(id)];
            if (planning_) {
                r.whole = true;
                r.first = 0;
                r.last = static_cast<int>(g_.nodes().size()) - 1;
            }
            if (row0_ > 0)
                return r;
        }
        const Node &sn = g_.node(node);
        const bool in_memory = sn.op == Op::input || sn.op == Op::constant;
        if (!planning_ && in_memory && period == 1) {
            const Buf &r = bufs_[static_cast<size_t>(id)];
            k_->dma_load(rows(r, 0, P, 0, r.cols), args_.at(node).at(0, 0));
        } else if (!planning_) {
            const Buf &r = bufs_[static_cast<size_t>(id)];
            const Buf &s = buf(node);
            if (in_memory)
                k_->dma_load(rows(r, 0, period, 0, r.cols),
                             args_.at(node).at(0, r.cols * dtype_size(r.dtype)));
            else
                k_->copy(Engine::vector, rows(r, 0, period, 0, r.cols),
                         rows(s, 0, period, 0, s.cols));
            for (uint32_t have = period; have < P; have *= 2)
                k_->copy(Engine::vector, rows(r, have, std::min(have, P - have), 0, r.cols),
                         rows(r, 0, std::min(have, P - have), 0, r.cols));
        }
        return bufs_[static_cast<size_t>(id)];
    }
    return bufs_[static_cast<size_t>(it->second)];
}

// Node @p node is lowered with instruction @p insn of ISA minor @p need:
// the target must have it.
void Lowering::require(uint32_t node, const std::string &insn, unsigned need) const {
    const unsigned have = opt_.isa_version & 0xffff;
    if (need > have)
        unsupported(g_, g_.node(node),
                    fmt::format("the lowering needs {}, an instruction of ISA {}.{}, but the "
                                "target device implements ISA {}.{}",
                                insn, isa_version() >> 16, need, opt_.isa_version >> 16, have));
}

// The last word: no instruction of the program is newer than the target.
void Lowering::check_isa(const Program &p) const {
    const unsigned have = opt_.isa_version & 0xffff;
    for (unsigned e = 1; e <= num_engines; e++) {
        auto code = p.stream(static_cast<Engine>(e));
        for (size_t i = 0; i + 64 <= code.size(); i += 64) {
            auto b = [&](size_t k) { return static_cast<uint8_t>(code[i + k]); };
            if (unsigned need = isa_minor_of(b(0), b(2), b(3)); need > have)
                throw GraphError(fmt::format(
                    "graph '{}': instruction {} of the {} stream is {}, an instruction of ISA "
                    "{}.{}, but the target device implements ISA {}.{}",
                    g_.name(), i / 64, to_string(static_cast<Engine>(e)),
                    mnemonic(b(0), b(2), b(3)), isa_version() >> 16, need, opt_.isa_version >> 16,
                    have));
        }
    }
}

void Lowering::emit_matmul(uint32_t i, const Plan &p) {
    const Node &n = g_.node(i);
    uint32_t ai = n.operands[0], bi = n.operands[1];
    const Node &an = g_.node(ai), &bn = g_.node(bi);
    const Shape &as = an.type.shape, &bs = bn.type.shape;
    const size_t ra = as.size();
    // Operands in [.., M, K] and [.., K, N] form: transposed on chip, or, for
    // constants, in the constant data.
    auto oriented = [&](uint32_t v, bool transposed, const char *tag) -> const Buf & {
        const Node &vn = g_.node(v);
        if (!transposed) {
            ensure_loaded(v);
            return buf(v);
        }
        const Shape &s = vn.type.shape;
        uint32_t x = static_cast<uint32_t>(s[s.size() - 2]), y = static_cast<uint32_t>(s.back());
        uint32_t batch = static_cast<uint32_t>(vn.type.elements() / (int64_t{x} * y));
        int id = temp(i, vn.name + "." + tag, vn.type.dtype, batch * y, x);
        ensure_loaded(v);
        if (!planning_)
            emit_transpose2(v, buf(v), bufs_[static_cast<size_t>(id)], batch, x, y);
        return bufs_[static_cast<size_t>(id)];
    };
    const Buf &A = oriented(ai, n.transpose_a, "t");
    const Buf *Bp = nullptr;
    if (n.transpose_b && bn.op == Op::constant) {
        Bp = &buf(bi); // the constant's data is stored transposed (folded)
        ensure_loaded(bi);
    } else {
        Bp = &oriented(bi, n.transpose_b, "t");
    }
    const Buf &B = *Bp;
    // In chunks of rows (a 2-d right operand), the chunk's rows of A as one batch.
    const uint32_t M =
        A.chunked ? A.rows : static_cast<uint32_t>(n.type.shape[n.type.shape.size() - 2]);
    const uint32_t N = static_cast<uint32_t>(n.type.shape.back());
    const uint32_t K = static_cast<uint32_t>(n.transpose_a ? as[ra - 2] : as[ra - 1]);
    const uint32_t batches =
        A.chunked ? 1 : static_cast<uint32_t>(n.type.elements() / (int64_t{M} * N));
    const bool batched_b = bs.size() > 2;
    const uint32_t nk_max = (K + P - 1) / P + 1; // pieces of K, at most one more than blocks
    int at[2] = {temp(i, n.name + ".lhsT0", A.dtype, P, nk_max * P),
                 temp(i, n.name + ".lhsT1", A.dtype, P, nk_max * P)};
    // A streamed weight: panels of one piece of K by one block of N pass
    // through two buffers, the load of the next panel issued before the
    // MATMUL that reads the current one.
    const bool stream = streamed_[bi];
    int panel[2] = {-1, -1};
    if (stream)
        for (int j = 0; j < 2; j++)
            panel[j] = temp(i, fmt::format("{}.panel{}", bn.name, j), B.dtype, P,
                            std::min(static_cast<uint32_t>(n.type.shape.back()), bank_elems));
    if (p.bias && ones_ < 0 && planning_)
        ones_ = -2; // allocated in emit() before the first step
    if (p.bias)
        ensure_loaded(*p.bias);
    if (p.residual)
        ensure_loaded(*p.residual);
    if (planning_)
        return;
    const Buf &O = buf(p.result);
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
        const Buf &pb = bufs_[static_cast<size_t>(panel[idx % 2])];
        k_->dma_load(rows(pb, 0, q.kc, 0, q.nn),
                     args_.at(bi).at((uint64_t{q.gb} * N + q.n0) * esize,
                                     static_cast<uint32_t>(uint64_t{N} * esize)));
    };
    size_t next_panel = 0;
    if (stream && !panels.empty())
        load_panel(0);
    // The moving operand of piece @p j of K for the columns [n0, n0 + nn).
    auto moving = [&](uint32_t gb, uint32_t kc, uint32_t n0, uint32_t nn) {
        if (!stream)
            return rows(B, gb, kc, n0, nn);
        const size_t idx = next_panel++;
        if (idx + 1 < panels.size())
            load_panel(idx + 1);
        return rows(bufs_[static_cast<size_t>(panel[idx % 2])], 0, kc, 0, nn);
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
            const Buf &T = bufs_[static_cast<size_t>(at[flip++ % 2])];
            for (size_t j = 0; j < pieces.size(); j++)
                k_->transpose(rows(T, 0, pieces[j].kc, static_cast<uint32_t>(j) * P, cnt),
                              rows(A, ga, cnt, pieces[j].k, pieces[j].kc));
            for (uint32_t n0 = 0; n0 < N; n0 += bank_elems) {
                const uint32_t nn = std::min(bank_elems, N - n0);
                Tap bank = psum_.view((next_bank_++ % psum_banks) * bank_elems, nn);
                bank.part_count = cnt;
                const size_t bank_from = k_->recorded();
                bool first = true;
                if (p.bias) {
                    const Buf &ones = bufs_[static_cast<size_t>(ones_)];
                    k_->matmul(bank, rows(ones, 0, 1, 0, cnt), rows(buf(*p.bias), 0, 1, n0, nn),
                               false);
                    first = false;
                }
                for (size_t j = 0; j < pieces.size(); j++) {
                    k_->matmul(bank, rows(T, 0, pieces[j].kc, static_cast<uint32_t>(j) * P, cnt),
                               moving(pieces[j].gb, pieces[j].kc, n0, nn), !first);
                    first = false;
                }
                Tap dst = rows(O, ga, cnt, n0, nn);
                if (!p.steps.empty() && p.steps[0].kind == Step::act)
                    k_->activate(p.steps[0].f, dst, bank, p.steps[0].a, p.steps[0].b);
                else if (!p.steps.empty())
                    k_->tensor_scalar(Engine::vector, dst, bank, AluOp::mul, p.steps[0].a,
                                      AluOp::add, p.steps[0].b);
                else if (p.residual)
                    k_->tensor_tensor(AluOp::add, dst, bank,
                                      rows(buf(*p.residual), ga, cnt, n0, nn));
                else
                    k_->copy(Engine::vector, dst, bank);
                // The bank is in use from its first matmul to the epilogue
                // that reads it; the bank's next use is psum_banks later.
                k_->live_range(n.name + ".acc", Space::psum, bank.part_start, bank.part_count,
                               bank.offset, nn * 4, bank_from, k_->recorded());
            }
            r += cnt;
        }
    }
}

// dst[b, y, x] = src[b, x, y]: TRANSPOSE of blocks of at most 128 x 128
// that stay inside one row tile of the source and of the destination.
void Lowering::emit_transpose2(uint32_t, const Buf &in, const Buf &out, uint32_t batch, uint32_t x,
                               uint32_t y) {
    for (uint32_t bt = 0; bt < batch; bt++)
        for (uint32_t x0 = 0; x0 < x;) {
            uint32_t gi = bt * x + x0, cnt = std::min(P - gi % P, x - x0);
            for (uint32_t y0 = 0; y0 < y;) {
                uint32_t go = bt * y + y0, yc = std::min({P - go % P, y - y0, P});
                k_->transpose(rows(out, go, yc, x0, cnt), rows(in, gi, cnt, y0, yc));
                y0 += yc;
            }
            x0 += cnt;
        }
}

void Lowering::emit_elementwise(uint32_t i, const Plan &p) {
    const uint32_t src = g_.node(i).operands[0];
    ensure_loaded(src);
    if (planning_)
        return;
    const Buf &in = buf(src), &out = buf(p.result);
    for (uint32_t t = 0; t < out.tiles(); t++) {
        Tap x = tile(in, t), y = tile(out, t);
        size_t s = 0;
        while (s < p.steps.size()) {
            const Step &st = p.steps[s];
            // x*a + b followed by an activation: one ACTIVATE
            if (st.kind == Step::affine && s + 1 < p.steps.size() &&
                p.steps[s + 1].kind == Step::act) {
                k_->activate(p.steps[s + 1].f, y, x, st.a, st.b);
                s += 2;
            } else if (st.kind == Step::act) {
                k_->activate(st.f, y, x);
                s++;
            } else if (st.kind == Step::affine && s + 1 < p.steps.size() &&
                       p.steps[s + 1].kind == Step::affine && st.b == 0 && p.steps[s + 1].a == 1) {
                // (x * a) + b: one two-op TENSOR_SCALAR
                k_->tensor_scalar(Engine::vector, y, x, AluOp::mul, st.a, AluOp::add,
                                  p.steps[s + 1].b);
                s += 2;
            } else if (st.kind == Step::affine) {
                if (st.a != 1)
                    k_->tensor_scalar(Engine::vector, y, x, AluOp::mul, st.a);
                else
                    k_->tensor_scalar(Engine::vector, y, x, AluOp::add, st.b);
                s++;
            } else if (st.kind == Step::div) {
                k_->tensor_scalar(Engine::vector, y, x, AluOp::div, st.a);
                s++;
            } else { // s - x, s / x
                k_->tensor_scalar(Engine::vector, y, x,
                                  st.kind == Step::rsub ? AluOp::sub : AluOp::div, st.b,
                                  AluOp::none, 0.0f, /*reverse0=*/true);
                s++;
            }
            x = y;
        }
    }
}

void Lowering::emit_binary(uint32_t i) {
    const Node &n = g_.node(i);
    const Type &ot = n.type;
    if (n.scalar) { // int32 with a literal: one TENSOR_SCALAR per tile
        uint32_t src = n.operands[0];
        ensure_loaded(src);
        if (planning_)
            return;
        const Buf &in = buf(src), &out = buf(i);
        for (uint32_t t = 0; t < out.tiles(); t++)
            k_->tensor_scalar(Engine::vector, tile(out, t), tile(in, t), alu(n.op), *n.scalar,
                              AluOp::none, 0.0f, n.scalar_first);
        return;
    }
    uint32_t a = n.operands[0], b = n.operands[1];
    const Type &at = g_.node(a).type, &bt = g_.node(b).type;
    // The operand with the result's shape is "big"; the other is the same
    // shape, a row of the last axis, a column of the rows, or one element.
    bool a_big = at.shape.size() == ot.shape.size() && at.shape == ot.shape;
    bool b_big = bt.shape.size() == ot.shape.size() && bt.shape == ot.shape;
    if (!a_big && !b_big)
        unsupported(g_, n,
                    "both operands are broadcast; the lowering broadcasts one operand "
                    "against the other's shape");
    uint32_t big = a_big ? a : b, small = a_big ? b : a;
    const Type &st = g_.node(small).type;
    enum { same, row, column, scalar, repeat, spread } form;
    std::optional<RowRepeat> rep;
    if (st.elements() == ot.elements())
        form = same; // also equal shapes up to leading 1s
    else if (st.elements() == 1)
        form = scalar;
    else if (rows_of(st) == 1 && st.shape.back() == ot.shape.back())
        form = row;
    else if (st.shape.back() == 1 && st.elements() == rows_of(ot)) {
        // the leading dims must agree (after left-padding with 1s)
        Shape lead(ot.shape.begin(), ot.shape.end() - 1), sl(st.shape.begin(), st.shape.end() - 1);
        while (sl.size() < lead.size())
            sl.insert(sl.begin(), 1);
        if (sl != lead)
            unsupported(g_, n, "unsupported broadcast pattern");
        form = column;
    } else if (std::string why; (rep = row_repeat(st.shape, ot.shape, why))) {
        form = rep->run > 1 ? spread : repeat;
    } else {
        unsupported(g_, n,
                    "broadcast pattern not lowered: the broadcast operand must be the same "
                    "shape, a row [.., C], a column [.., 1], one element or rows [.., C] "
                    "repeated over the result's axes before the last; " +
                        why);
    }
    ensure_loaded(big);
    if (form == spread) {
        emit_spread(i, big, small, *rep);
        return;
    }
    const Buf *sm = nullptr;
    // Rows that repeat with a period of fewer than 128 rows are repeated
    // down the partitions once, so that a row tile reads them in at most
    // two runs; otherwise the operand's rows are read where they are.
    const bool periodic = form == repeat && rep->period > 0 && rep->period < P;
    if (form == row || form == scalar)
        sm = &replicated(small, i); // loads or copies what it needs
    else if (periodic)
        sm = &replicated(small, i, static_cast<uint32_t>(rep->period));
    else
        ensure_loaded(small);
    if (planning_)
        return;
    if (!sm)
        sm = &buf(small);
    const Buf &bg = buf(big), &out = buf(i);
    const bool reverse = !a_big; // the small operand is on the left
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
        Tap y = tile(out, t), x = tile(bg, t);
        const uint32_t rt = tile_rows(out, t);
        switch (form) {
        case same:
            k_->tensor_tensor(alu(n.op), y, a_big ? x : tile(*sm, t), a_big ? tile(*sm, t) : x);
            break;
        case row: {
            Tap r = rows(*sm, 0, rt, 0, sm->cols);
            k_->tensor_tensor(alu(n.op), y, reverse ? r : x, reverse ? x : r);
            break;
        }
        case column:
            k_->tensor_scalar(Engine::vector, y, x, alu(n.op), rows(*sm, t * P, rt, 0, 1),
                              AluOp::none, 0.0f, reverse);
            break;
        case scalar:
            k_->tensor_scalar(Engine::vector, y, x, alu(n.op), rows(*sm, 0, rt, 0, 1), AluOp::none,
                              0.0f, reverse);
            break;
        case spread: // emit_spread()
            break;
        case repeat:
            // One TENSOR_TENSOR per run of result rows that read
            // consecutive rows of one row tile of sm (elementwise
            // instructions pair partitions relatively, so the runs need
            // not start at the same partition).
            for (uint32_t p0 = 0; p0 < rt;) {
                const uint32_t r0 = t * P + p0, s0 = source_row(r0);
                uint32_t len = 1;
                while (p0 + len < rt && (s0 + len) % P != 0 && source_row(r0 + len) == s0 + len)
                    len++;
                Tap m = rows(*sm, s0, len, 0, sm->cols), o = rows(out, r0, len, 0, out.cols),
                    v = rows(bg, r0, len, 0, bg.cols);
                k_->tensor_tensor(alu(n.op), o, reverse ? m : v, reverse ? v : m);
                p0 += len;
            }
            break;
        }
    }
}

// Binary node @p i whose operand @p small has rows that each repeat over
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
void Lowering::emit_spread(uint32_t i, uint32_t big, uint32_t small, const RowRepeat &rep) {
    const Node &n = g_.node(i), &sn = g_.node(small);
    const uint32_t C = static_cast<uint32_t>(n.type.shape.back());
    const int spread[2] = {temp(i, sn.name + ".spread0", sn.type.dtype, P, C),
                           temp(i, sn.name + ".spread1", sn.type.dtype, P, C)};
    if (planning_)
        return;
    // An input or a constant is read from memory, never loaded whole.
    const bool in_memory = sn.op == Op::input || sn.op == Op::constant;
    const bool reverse = n.operands[0] == small; // the small operand is on the left
    const Buf &bg = buf(big), &out = buf(i);
    struct Piece {
        uint32_t p0, len;
        int64_t row;
        bool operator==(const Piece &) const = default;
    };
    std::vector<Piece> filled; // what the current temporary holds
    unsigned slot = 1;
    for (uint32_t t = 0; t < out.tiles(); t++) {
        const uint32_t rt = tile_rows(out, t);
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
            const Buf &E = bufs_[static_cast<size_t>(spread[slot])];
            for (const Piece &pc : pieces) {
                if (in_memory) {
                    const uint64_t pitch = uint64_t{C} * dtype_size(E.dtype);
                    k_->dma_load(rows(E, pc.p0, pc.len, 0, C),
                                 args_.at(small).at(static_cast<uint64_t>(pc.row) * pitch, 0));
                    continue;
                }
                k_->copy(Engine::scalar, rows(E, pc.p0, 1, 0, C),
                         rows(buf(small), static_cast<uint32_t>(pc.row), 1, 0, C));
                for (uint32_t have = 1; have < pc.len; have *= 2) {
                    const uint32_t cnt = std::min(have, pc.len - have);
                    k_->copy(Engine::scalar, rows(E, pc.p0 + have, cnt, 0, C),
                             rows(E, pc.p0, cnt, 0, C));
                }
            }
            filled = pieces;
        }
        const Tap m = rows(bufs_[static_cast<size_t>(spread[slot])], 0, rt, 0, C);
        const Tap x = tile(bg, t);
        k_->tensor_tensor(alu(n.op), tile(out, t), reverse ? m : x, reverse ? x : m);
    }
}

void Lowering::emit_softmax(uint32_t i) {
    const Node &n = g_.node(i);
    const uint32_t src = n.operands[0];
    ensure_loaded(src);
    const uint32_t C = static_cast<uint32_t>(n.type.shape.back());
    if (n.causal) {
        require(i, mnemonic_tensor_scalar(AluOp::is_ge), isa_minor_of(AluOp::is_ge));
        require(i, mnemonic_select(), isa_minor_of_select());
    }
    int mx = temp(i, n.name + ".max", DType::fp32, P, 1);
    int e = temp(i, n.name + ".exp", DType::fp32, P, C);
    int sum = temp(i, n.name + ".sum", DType::fp32, P, 1);
    int diff = n.causal ? temp(i, n.name + ".q-k", DType::int32, P, C) : -1;
    int mask = n.causal ? temp(i, n.name + ".mask", DType::fp32, P, C) : -1;
    if (planning_)
        return;
    const Buf &in = buf(src), &out = buf(i);
    const Buf &M = bufs_[static_cast<size_t>(mx)], &E = bufs_[static_cast<size_t>(e)],
              &S = bufs_[static_cast<size_t>(sum)];
    const uint32_t Q = n.causal ? static_cast<uint32_t>(n.type.shape[n.type.shape.size() - 2]) : 1;
    for (uint32_t t = 0; t < out.tiles(); t++) {
        const uint32_t rt = tile_rows(out, t);
        Tap m = rows(M, 0, rt, 0, 1), ex = rows(E, 0, rt, 0, C), s = rows(S, 0, rt, 0, 1);
        Tap x = tile(in, t);
        if (n.causal) {
            // q - k for every element: one IOTA per run of partitions whose
            // query index q = row % Q does not wrap, then the mask k <= q,
            // and the masked scores (-inf where k > q) in place of x.
            const Buf &D = bufs_[static_cast<size_t>(diff)], &K = bufs_[static_cast<size_t>(mask)];
            for (uint32_t p0 = 0; p0 < rt;) {
                const uint32_t q0 = (t * P + p0) % Q, len = std::min(rt - p0, Q - q0);
                k_->iota(rows(D, p0, len, 0, C), static_cast<int32_t>(q0), 1, -1);
                p0 += len;
            }
            k_->tensor_scalar(Engine::vector, rows(K, 0, rt, 0, C), rows(D, 0, rt, 0, C),
                              AluOp::is_ge, 0.0f);
            k_->select(ex, rows(K, 0, rt, 0, C), x, -INFINITY);
            x = ex;
        }
        k_->reduce(ReduceOp::max, m, x);
        k_->tensor_scalar(Engine::vector, m, m, AluOp::mul, -1.0f);
        k_->activate(Activation::exp, ex, x, 1.0f, m);
        k_->reduce(ReduceOp::sum, s, ex);
        k_->tensor_scalar(Engine::vector, tile(out, t), ex, AluOp::div, s);
    }
}

void Lowering::emit_norm(uint32_t i) {
    const Node &n = g_.node(i);
    const bool ln = n.op == Op::layer_norm;
    const uint32_t src = n.operands[0];
    const uint32_t C = static_cast<uint32_t>(n.type.shape.back());
    ensure_loaded(src);
    const Buf *gamma = n.operands.size() > 1 ? &replicated(n.operands[1], i) : nullptr;
    const Buf *beta = n.operands.size() > 2 ? &replicated(n.operands[2], i) : nullptr;
    require(i, Activation::rsqrt);
    int stat = temp(i, n.name + ".stat", DType::fp32, P, 1);
    int var = temp(i, n.name + ".var", DType::fp32, P, 1);
    int r = temp(i, n.name + ".rstd", DType::fp32, P, 1);
    int xc = temp(i, n.name + ".centred", DType::fp32, P, C);
    int sq = temp(i, n.name + ".squares", DType::fp32, P, C);
    if (planning_)
        return;
    auto B = [&](int id) -> const Buf & { return bufs_[static_cast<size_t>(id)]; };
    const Buf &in = buf(src), &out = buf(i);
    const float inv_c = 1.0f / static_cast<float>(C);
    for (uint32_t t = 0; t < out.tiles(); t++) {
        const uint32_t rt = tile_rows(out, t);
        auto col = [&](int id) { return rows(B(id), 0, rt, 0, 1); };
        auto full = [&](int id) { return rows(B(id), 0, rt, 0, C); };
        Tap x = tile(in, t), y = tile(out, t);
        Tap centred = x;
        if (ln) {
            k_->reduce(ReduceOp::sum, col(stat), x);
            k_->tensor_scalar(Engine::vector, col(stat), col(stat), AluOp::mul, inv_c);
            k_->tensor_scalar(Engine::vector, full(xc), x, AluOp::sub, col(stat));
            centred = full(xc);
        }
        k_->tensor_tensor(AluOp::mul, full(sq), centred, centred);
        k_->reduce(ReduceOp::sum, col(var), full(sq));
        // 1/sqrt(sum/C + eps) in one ACTIVATE
        k_->activate(Activation::rsqrt, col(r), col(var), inv_c, n.eps);
        if (!gamma && !beta) {
            k_->tensor_scalar(Engine::scalar, y, centred, AluOp::mul, col(r));
            continue;
        }
        k_->tensor_scalar(Engine::scalar, full(sq), centred, AluOp::mul, col(r));
        if (beta) {
            k_->tensor_tensor(AluOp::mul, full(sq), full(sq), rows(*gamma, 0, rt, 0, C));
            k_->tensor_tensor(AluOp::add, y, full(sq), rows(*beta, 0, rt, 0, C));
        } else {
            k_->tensor_tensor(AluOp::mul, y, full(sq), rows(*gamma, 0, rt, 0, C));
        }
    }
}

// Where element @p f of data-movement node @p node comes from: an operand
// and its flat index.
std::pair<uint32_t, int64_t> Lowering::source(uint32_t node, int64_t f) const {
    const Node &n = g_.node(node);
    const Shape &os = n.type.shape;
    auto ravel = [](const Shape &idx, const Shape &s) {
        int64_t x = 0;
        for (size_t d = 0; d < s.size(); d++)
            x = x * s[d] + idx[d];
        return x;
    };
    if (n.op == Op::reshape)
        return {n.operands[0], f};
    Shape idx = unravel(f, os);
    if (n.op == Op::transpose) {
        Shape src(idx.size());
        for (size_t d = 0; d < idx.size(); d++)
            src[static_cast<size_t>(n.dims[d])] = idx[d];
        return {n.operands[0], ravel(src, g_.node(n.operands[0]).type.shape)};
    }
    if (n.op == Op::slice || n.op == Op::split) {
        idx[static_cast<size_t>(n.axis)] += n.start;
        return {n.operands[0], ravel(idx, g_.node(n.operands[0]).type.shape)};
    }
    const size_t ax = static_cast<size_t>(n.axis); // concat
    for (uint32_t o : n.operands) {
        const Shape &is = g_.node(o).type.shape;
        if (idx[ax] < is[ax])
            return {o, ravel(idx, is)};
        idx[ax] -= is[ax];
    }
    return {n.operands.back(), 0}; // not reached: the index is inside the result
}

// Data movement (reshape, transposes keeping the last axis, slice, concat,
// and chains of them fused into one): every output row is a few runs of
// consecutive elements of source rows; consecutive output rows whose runs
// continue in the next source row (same columns, same row tiles) share one
// COPY, which may move data across partitions.
void Lowering::emit_gather(uint32_t i) {
    const Plan &p = plans_[i];
    for (uint32_t leaf : p.sources)
        ensure_loaded(leaf);
    if (planning_)
        return;
    const Buf &out = buf(p.result);
    const uint32_t C = out.cols;
    struct Seg {
        uint32_t leaf, row, col, out_col, len;
    };
    auto segments = [&](uint32_t r) {
        std::vector<Seg> segs;
        for (uint32_t c = 0; c < C; c++) {
            uint32_t node = p.result;
            int64_t f = int64_t{r} * C + c;
            do
                std::tie(node, f) = source(node, f);
            while (std::find(p.fused.begin(), p.fused.end(), node) != p.fused.end() || node == i);
            const Buf &in = buf(node);
            uint32_t row = static_cast<uint32_t>(f / in.cols),
                     col = static_cast<uint32_t>(f % in.cols);
            if (!segs.empty()) {
                Seg &l = segs.back();
                if (l.leaf == node && l.row == row && l.col + l.len == col) {
                    l.len++;
                    continue;
                }
            }
            segs.push_back({node, row, col, c, 1});
        }
        return segs;
    };
    std::vector<Seg> run;
    uint32_t run_start = 0, run_len = 0;
    auto flush = [&]() {
        for (const Seg &sg : run)
            k_->copy(Engine::vector, rows(out, run_start, run_len, sg.out_col, sg.len),
                     rows(buf(sg.leaf), sg.row, run_len, sg.col, sg.len));
        run.clear();
        run_len = 0;
    };
    for (uint32_t r = 0; r < out.rows; r++) {
        auto segs = segments(r);
        bool extends = run_len > 0 && r % P != 0 && segs.size() == run.size();
        for (size_t k = 0; extends && k < segs.size(); k++) {
            const Seg &a = run[k], &b = segs[k];
            uint32_t next = a.row + run_len;
            extends = a.leaf == b.leaf && b.row == next && b.col == a.col &&
                      b.out_col == a.out_col && b.len == a.len && next % P != 0;
        }
        if (!extends) {
            flush();
            run = segs;
            run_start = r;
        }
        run_len++;
    }
    flush();
}

void Lowering::emit() {
    const auto &nodes = g_.nodes();
    if (!planning_) {
        loaded_.assign(nodes.size(), false);
        chunk_steps_.clear();
    }
    // In chunks of rows, the steps once per chunk (the plan: the first).
    const uint32_t chunks = chunk_rows_ && !planning_
                                ? static_cast<uint32_t>((rows_ + chunk_rows_ - 1) / chunk_rows_)
                                : 1;
    for (uint32_t c = 0; c < chunks; c++) {
        if (chunk_rows_) {
            row0_ = c * chunk_rows_;
            for (Buf &b : bufs_)
                if (b.chunked)
                    b.rows = static_cast<uint32_t>(std::min<int64_t>(chunk_rows_, rows_ - row0_));
            for (uint32_t v = 0; v < nodes.size() && !planning_; v++)
                if (rowspace_[v])
                    loaded_[v] = false;
        }
        emit_steps();
    }
}

void Lowering::emit_steps() {
    const auto &nodes = g_.nodes();
    if (!planning_) {
        next_temp_.clear();
        replicas_.clear();
        step_from_.assign(nodes.size() + 1, 0);
    }
    for (uint32_t i = 0; i < nodes.size(); i++) {
        const Plan &p = plans_[i];
        if (!planning_)
            step_from_[i] = k_->recorded();
        // Every instruction of the group, the loads of its operands and the
        // store of its result included, is named after its nodes: the
        // program's ORIGINS, which profiles name instructions by.
        if (!planning_) {
            std::string origin = nodes[i].name;
            for (uint32_t f : p.fused)
                origin += "+" + nodes[f].name;
            k_->set_origin(origin);
        }
        switch (p.kind) {
        case Kind::none:
            if (nodes[i].op == Op::input || nodes[i].op == Op::constant) {
                if (is_output_[i]) {
                    ensure_loaded(i);
                    store(i);
                }
            }
            continue;
        case Kind::alias:
        case Kind::view:
            break;
        case Kind::matmul:
            emit_matmul(i, p);
            break;
        case Kind::elementwise:
            emit_elementwise(i, p);
            break;
        case Kind::binary:
            emit_binary(i);
            break;
        case Kind::softmax:
            emit_softmax(i);
            break;
        case Kind::layer_norm:
        case Kind::rms_norm:
            emit_norm(i);
            break;
        case Kind::gather:
            emit_gather(i);
            break;
        case Kind::transpose2: {
            const Node &n = nodes[i];
            const Shape &s = g_.node(n.operands[0]).type.shape;
            uint32_t x = static_cast<uint32_t>(s[s.size() - 2]),
                     y = static_cast<uint32_t>(s.back());
            ensure_loaded(n.operands[0]);
            if (!planning_)
                emit_transpose2(n.operands[0], buf(n.operands[0]), buf(i),
                                static_cast<uint32_t>(n.type.elements() / (int64_t{x} * y)), x, y);
            break;
        }
        }
        if (p.kind == Kind::alias || p.kind == Kind::view) {
            ensure_loaded(nodes[i].operands[0]);
            store(i);
        } else {
            store(p.result);
        }
    }
    if (!planning_) {
        step_from_[nodes.size()] = k_->recorded();
        chunk_steps_.push_back(step_from_);
    }
}

// Each row tile of an SBUF buffer is in use during the steps of the
// buffer's lifetime, and only it uses its bytes then (plan_memory's first
// fit): its instructions are the ones of those steps that touch them. Tile
// by tile, since a tile's last use (its store, say) may end long before the
// next tile's. The row of ones, written before the first step, lives to
// the end.
void Lowering::live_ranges() {
    for (size_t id = 0; id < bufs_.size(); id++) {
        const Buf &b = bufs_[id];
        if (b.view_of >= 0 || b.in_memory) // inside its buffer's range; in memory
            continue;
        const bool ones = static_cast<int>(id) == ones_;
        const uint32_t pitch = b.cols * dtype_size(b.dtype);
        // Once per chunk of rows, but a weight or row operand once for all.
        const size_t chunks = ones || b.whole ? 1 : chunk_steps_.size();
        for (size_t c = 0; c < chunks; c++) {
            const auto &first = chunk_steps_[c], &last = b.whole ? chunk_steps_.back() : first;
            const size_t from = ones ? 0 : first[static_cast<size_t>(b.first)];
            const size_t to = ones ? k_->recorded() : last[static_cast<size_t>(b.last) + 1];
            // The chunk's rows (the last chunk may have fewer).
            const uint32_t rows =
                b.chunked ? static_cast<uint32_t>(std::min<int64_t>(
                                chunk_rows_, rows_ - static_cast<int64_t>(c) * chunk_rows_))
                          : b.rows;
            const uint32_t tiles = (rows + P - 1) / P;
            for (uint32_t t = 0; t < tiles; t++)
                k_->live_range(tiles > 1 ? fmt::format("{}[{}]", b.what, t) : b.what, Space::sbuf,
                               0, std::min(P, rows - t * P),
                               arena_.offset + static_cast<uint32_t>(b.offset) + t * pitch, pitch,
                               from, to);
        }
    }
}

Compiled Lowering::run() {
    timed("check", [&] { check(); });
    timed("fuse", [&] { fuse(); });
    timed("fold", [&] {
        // Constants that a matmul reads transposed are stored transposed.
        for (const Node &n : g_.nodes())
            if (n.op == Op::matmul && n.transpose_b && g_.node(n.operands[1]).op == Op::constant) {
                uint32_t c = n.operands[1];
                const Node &cn = g_.node(c);
                if (uses_[c] != 1 || is_output_[c])
                    unsupported(g_, n, "a transposed constant operand must have no other use");
                const Shape &s = cn.type.shape;
                int64_t x = s[s.size() - 2], y = s.back(), batch = cn.type.elements() / (x * y);
                auto v = constant_values(cn), t = v;
                for (int64_t b = 0; b < batch; b++)
                    for (int64_t r = 0; r < x; r++)
                        for (int64_t q = 0; q < y; q++)
                            t[static_cast<size_t>(b * x * y + q * x + r)] =
                                v[static_cast<size_t>(b * x * y + r * y + q)];
                folded_[c] = std::move(t);
            }
    });
    timed("memory", [&] {
        ones_ = -1;
        plan_memory();
    });
    std::optional<Program> program;
    Kernel::Stats stats;
    timed("emit", [&] {
        b_.emplace(g_.name(), opt_.limits);
        // Arguments: inputs, then outputs, then the constants' slot.
        for (uint32_t i = 0; i < g_.nodes().size(); i++) {
            const Node &n = g_.node(i);
            std::vector<uint32_t> shape;
            for (int64_t d : n.type.shape)
                shape.push_back(static_cast<uint32_t>(d));
            if (n.op == Op::input)
                args_.emplace(i, b_->argument(n.name, n.type.dtype, shape, Direction::in));
        }
        for (uint32_t o : g_.outputs()) {
            const Node &n = g_.node(o);
            if (n.op == Op::input || n.op == Op::constant)
                throw GraphError(fmt::format("output '{}' is a graph {}: it needs no program",
                                             n.name, n.op == Op::input ? "input" : "constant"));
            std::vector<uint32_t> shape;
            for (int64_t d : n.type.shape)
                shape.push_back(static_cast<uint32_t>(d));
            args_.emplace(o, b_->argument(n.name, n.type.dtype, shape, Direction::out));
        }
        for (uint32_t i = 0; i < g_.nodes().size(); i++) {
            const Node &n = g_.node(i);
            if (n.op != Op::constant || (uses_[i] == 0 && !is_output_[i]))
                continue;
            std::vector<uint32_t> shape;
            for (int64_t d : n.type.shape)
                shape.push_back(static_cast<uint32_t>(d));
            auto it = folded_.find(i);
            if (it != folded_.end())
                std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
            auto bytes = pack(n.type.dtype, it != folded_.end() ? it->second : constant_values(n));
            args_.erase(i);
            args_.emplace(i, b_->constant(n.name, n.type.dtype, shape, bytes));
        }
        // The arena: every buffer, and after them the row of ones that adds
        // a bias in PSUM (counted in the peak).
        arena_ =
            b_->sbuf("arena", DType::fp32, static_cast<uint32_t>(std::max<uint64_t>(peak_, 4) / 4));
        psum_ = b_->psum("acc", DType::fp32, psum_banks * bank_elems);
        k_.emplace(*b_);
        if (ones_ == -2) {
            Buf ones;
            ones.what = "ones";
            ones.rows = 1;
            ones.cols = P;
            ones.offset = ones_at_;
            bufs_.push_back(ones);
            ones_ = static_cast<int>(bufs_.size() - 1);
            k_->memset(Engine::vector, rows(bufs_.back(), 0, 1, 0, P), 1.0f);
        }
        emit();
        live_ranges();
        k_->set_origin("");
        k_->finish();
        stats = k_->stats();
    });
    timed("build", [&] {
        program.emplace(b_->finish());
        check_isa(*program);
    });
    // The plan, for --dump-plan and docs.
    std::string plan = fmt::format("SBUF: {} bytes per partition at the peak\n", peak_);
    if (chunk_rows_)
        plan += fmt::format("rows in chunks of {}: {} chunks of the {} rows\n", chunk_rows_,
                            (rows_ + chunk_rows_ - 1) / chunk_rows_, rows_);
    for (uint32_t i = 0; i < g_.nodes().size(); i++) {
        const Plan &p = plans_[i];
        if (p.kind == Kind::none && !g_.node(i).operands.empty())
            continue;
        std::vector<std::string> f;
        for (uint32_t x : p.fused)
            f.push_back(g_.node(x).name);
        int bid = value_buf_[p.result];
        const Buf *pb = bid >= 0 ? &bufs_[static_cast<size_t>(bid)] : nullptr;
        plan += fmt::format("{:<20} {:<12} {}{}\n", g_.node(i).name, to_string(g_.node(i).op),
                            !pb                   ? std::string()
                            : streamed_[p.result] ? std::string("streamed from device memory")
                            : pb->in_memory       ? std::string("read from memory where used")
                                                  : fmt::format("@{} +{}", pb->offset, pb->bytes()),
                            f.empty() ? "" : fmt::format("  fused: {}", fmt::join(f, ", ")));
    }
    return Compiled{std::move(*program), times_, plan, stats};
}

} // namespace

Compiled compile(const Graph &g, const CompileOptions &options) {
    const Graph lowered = g.decomposed(); // attention: matmul, mul, add, softmax, matmul
    return Lowering(lowered, options).run();
}

} // namespace neuron::compiler
