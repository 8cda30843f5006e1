// SPDX-License-Identifier: MIT
#include "memory.hpp"

#include <algorithm>
#include <map>

#include "../op_record.hpp"
#include "step_buffers.hpp"

namespace neuron::compiler::lower {

namespace {

// Makes the memory plan: runs every group's declaration (OpLowering's
// declare) to record its temporaries and the inputs and constants it reads
// from SBUF, then places the buffers.
class Planner final : public StepBuffers {
  public:
    Planner(const Graph &g, const Usage &usage, const FusionPlan &fusion, const Folded &folded,
            const CompileOptions &target)
        : StepBuffers(g, target), g_(g), usage_(usage), fusion_(fusion), folded_(folded) {}

    MemoryPlan run();

    const Buf &temp(const std::string &what, DType dtype, uint32_t rows, uint32_t cols) override {
        Buf b;
        b.what = what;
        b.dtype = dtype;
        b.rows = rows;
        b.cols = cols;
        b.first = b.last = static_cast<int>(step_);
        m_.bufs.push_back(b);
        m_.temps[step_].push_back(static_cast<int>(m_.bufs.size() - 1));
        return m_.bufs.back();
    }
    const Buf &replicated(uint32_t node, uint32_t period) override {
        if (auto it = replicas_.find(node); it != replicas_.end())
            return m_.bufs[static_cast<size_t>(it->second)];
        const Buf &src = buf(node);
        temp(g_.node(node).name + (period > 1 ? ".period" : ".rows"), src.dtype, P, src.cols);
        const int id = static_cast<int>(m_.bufs.size() - 1);
        replicas_[node] = id;
        Buf &r = m_.bufs.back();
        // In chunks of rows, a row operand's replica is filled by the
        // first chunk and kept for the others.
        if (m_.chunk_rows && m_.param[node]) {
            r.whole = true;
            r.first = 0;
            r.last = static_cast<int>(g_.nodes().size()) - 1;
        }
        return r;
    }
    const Buf &transposed(uint32_t node, const std::string &what) override {
        const Type &t = g_.node(node).type;
        const auto x = static_cast<uint32_t>(t.shape[t.shape.size() - 2]);
        const auto y = static_cast<uint32_t>(t.shape.back());
        const auto batch = static_cast<uint32_t>(t.elements() / (int64_t{x} * y));
        const Buf &b = temp(what, t.dtype, batch * y, x);
        read(node);
        return b;
    }
    void read(uint32_t node) override { sbuf_read_[node] = true; }
    void use_ones() override { m_.ones = true; }
    bool streamed(uint32_t node) const override { return m_.streamed[node]; }
    const Buf &buf(uint32_t node) const override {
        return m_.bufs[static_cast<size_t>(m_.value_buf[node])];
    }

  private:
    void place();
    void declare_steps();
    std::vector<uint32_t> streamable() const;
    [[noreturn]] void refuse_peak(const std::string &chunk_why) const;
    bool chunkable(std::string &why);

    const Graph &g_;
    const Usage &usage_;
    const FusionPlan &fusion_;
    const Folded &folded_;
    MemoryPlan m_;
    uint32_t step_ = 0;
    std::map<uint32_t, int> replicas_; // of the current step: node -> buffer
    // Inputs and constants that a step reads from SBUF.
    std::vector<bool> sbuf_read_;
};

MemoryPlan Planner::run() {
    m_.streamed.assign(g_.nodes().size(), false);
    for (;;) {
        place();
        if (m_.peak <= options.limits.sbuf_bytes)
            return std::move(m_);
        const std::vector<uint32_t> c = streamable();
        if (c.empty())
            break;
        m_.streamed[c.front()] = true;
    }
    // Then the rows in chunks: the most row tiles per chunk that fit.
    std::string why;
    if (!chunkable(why))
        refuse_peak(why);
    const auto tiles = static_cast<uint32_t>((m_.rows + P - 1) / P);
    for (uint32_t t = tiles - 1; t >= 1; t--) {
        m_.chunk_rows = t * P;
        place();
        if (m_.peak <= options.limits.sbuf_bytes)
            return std::move(m_);
    }
    refuse_peak("it does not fit in chunks of 128 rows either");
}

// Every group's declaration, step by step, as emission will run them.
void Planner::declare_steps() {
    const auto &nodes = g_.nodes();
    for (uint32_t i = 0; i < nodes.size(); i++) {
        step_ = i;
        replicas_.clear();
        const Group &grp = fusion_.groups[i];
        if (const KindLowering *l = kind_lowering(grp.kind))
            l->declare(*this, grp);
        else if ((nodes[i].op == Op::input || nodes[i].op == Op::constant) && usage_.is_output[i])
            read(i);
    }
}

// Whether the graph can run in chunks of rows: every computed value and
// every output is [R, C] in the row layout with the same R (above 128),
// and each row of a value depends on the same row of its operands alone,
// or on weights and row operands (graph inputs or constants: a matmul's
// right operand [K, N], a row [C] or one element of a binary operator,
// layer_norm's and rms_norm's weight and bias), which stay resident. Else
// @p why names the node that is not.
bool Planner::chunkable(std::string &why) {
    const auto &nodes = g_.nodes();
    m_.rowspace.assign(nodes.size(), false);
    m_.param.assign(nodes.size(), false);
    m_.rows = rows_of(nodes[g_.outputs().front()].type);
    if (m_.rows <= P) {
        why = fmt::format("rows are not split into chunks: the outputs have {} rows, one row tile",
                          m_.rows);
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
            const auto whole = op_record(n.op).whole_operand;
            const bool param = whole && whole(g_, n, k);
            if (param)
                m_.param[o] = true;
            else
                m_.rowspace[o] = true;
        }
        if (n.op != Op::input && n.op != Op::constant)
            m_.rowspace[i] = true;
    }
    for (uint32_t o : g_.outputs())
        m_.rowspace[o] = true;
    // What each operator does to rows first, then the rows of every value.
    for (uint32_t i = 0; i < nodes.size(); i++) {
        const Node &n = nodes[i];
        const auto mixes = op_record(n.op).mixes_rows;
        if (!m_.rowspace[i] || !mixes)
            continue;
        if (std::string r = mixes(g_, n, m_.rows); !r.empty())
            return fail(n, r);
    }
    for (uint32_t i = 0; i < nodes.size(); i++) {
        const Node &n = nodes[i];
        if (m_.param[i] && m_.rowspace[i])
            return fail(n, "a value read both row by row and whole (a weight or row operand)");
        if (m_.param[i] && n.op != Op::input && n.op != Op::constant)
            return fail(n, "a computed weight or row operand");
        if (m_.rowspace[i] && rows_of(n.type) != m_.rows)
            return fail(n,
                        fmt::format("its rows are {}, the outputs' {}", rows_of(n.type), m_.rows));
    }
    return true;
}

// The weights that streaming would take out of SBUF at the peak, largest
// first: graph inputs and constants live then whose every use is a matmul
// reading them as its right operand in [.., K, N] form (or a constant read
// transposed, which is stored so) or an operator whose record streams them
// (OpRecord::streams_operand), not outputs, not streamed yet.
std::vector<uint32_t> Planner::streamable() const {
    const auto &nodes = g_.nodes();
    const Buf &peak = m_.bufs[static_cast<size_t>(m_.peak_buf)];
    std::vector<uint32_t> c;
    for (uint32_t v = 0; v < nodes.size(); v++) {
        const Node &n = nodes[v];
        if ((n.op != Op::input && n.op != Op::constant) || m_.streamed[v] || usage_.is_output[v] ||
            usage_.uses[v] == 0 || m_.value_buf[v] < 0)
            continue;
        const Buf &b = buf(v);
        if (b.last < peak.first || b.first > peak.last)
            continue;
        bool ok = true;
        for (const Node &u : nodes)
            for (size_t k = 0; k < u.operands.size(); k++)
                if (u.operands[k] == v)
                    ok &=
                        (u.op == Op::matmul && k == 1 &&
                         (!u.transpose_b || folded_.count(v) != 0)) ||
                        (op_record(u.op).streams_operand && op_record(u.op).streams_operand(u, k));
        if (ok)
            c.push_back(v);
    }
    std::stable_sort(c.begin(), c.end(),
                     [&](uint32_t a, uint32_t b) { return buf(a).bytes() > buf(b).bytes(); });
    return c;
}

// Nothing live at the peak can be streamed, and the rows cannot be split
// (@p chunk_why): name the step, its buffers and why.
void Planner::refuse_peak(const std::string &chunk_why) const {
    const Buf &peak = m_.bufs[static_cast<size_t>(m_.peak_buf)];
    const int step = peak.first;
    std::vector<const Buf *> live;
    for (const Buf &b : m_.bufs)
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
    for (uint32_t v = 0; v < m_.streamed.size(); v++)
        if (m_.streamed[v])
            streamed.push_back(g_.node(v).name);
    unsupported(
        g_, g_.node(static_cast<uint32_t>(step)),
        fmt::format("graph '{}' needs {} bytes of SBUF per partition at its peak, the core has "
                    "{}; live then: {}{}{}. Only a matmul's weight (a graph input or constant "
                    "that only matmuls read as [K, N]) or the operand of a reduction of every "
                    "axis but the last is streamed from device memory, and nothing else live "
                    "then can be; {}",
                    g_.name(), m_.peak, options.limits.sbuf_bytes, fmt::join(names, ", "),
                    streamed.empty() ? std::string()
                                     : fmt::format(" (streamed: {})", fmt::join(streamed, ", ")),
                    m_.chunk_rows ? fmt::format(" (in chunks of {} rows)", m_.chunk_rows) : "",
                    chunk_why));
}

void Planner::place() {
    const auto &nodes = g_.nodes();
    m_.bufs.clear();
    m_.temps.assign(nodes.size(), {});
    m_.ones = false;
    m_.value_buf.assign(nodes.size(), -1);
    // The group's result gets the buffer; aliases share their operand's.
    std::vector<int> group_step(nodes.size());
    for (uint32_t i = 0; i < nodes.size(); i++)
        group_step[i] = static_cast<int>(i);
    for (uint32_t i = 0; i < nodes.size(); i++)
        for (uint32_t f : fusion_.groups[i].fused)
            group_step[f] = static_cast<int>(i); // a fused node runs in its group's step
    auto step_of = [&](uint32_t consumer) { return group_step[consumer]; };
    std::vector<int> first_use(nodes.size(), -1);
    for (uint32_t i = 0; i < nodes.size(); i++)
        for (uint32_t o : nodes[i].operands)
            if (first_use[o] < 0 || step_of(i) < first_use[o])
                first_use[o] = step_of(i);
    for (uint32_t i = 0; i < nodes.size(); i++) {
        const Node &n = nodes[i];
        const Group &p = fusion_.groups[i];
        if (n.op == Op::input || n.op == Op::constant) {
            Buf b = value_buffer(n, first_use[i] >= 0 ? first_use[i] : static_cast<int>(i));
            if (folded_.count(i)) { // stored transposed: [.., y, x]
                b.cols = static_cast<uint32_t>(n.type.shape[n.type.shape.size() - 2]);
                b.rows = static_cast<uint32_t>(n.type.elements() / b.cols);
            }
            b.in_memory = m_.streamed[i];
            if (m_.chunk_rows && m_.rowspace[i]) {
                b.rows = m_.chunk_rows;
                b.chunked = true;
            } else if (m_.chunk_rows) {
                b.whole = true;
            }
            m_.bufs.push_back(b);
            m_.value_buf[i] = static_cast<int>(m_.bufs.size() - 1);
            continue;
        }
        if (p.kind == Kind::none)
            continue;
        if (p.kind == Kind::alias) {
            m_.value_buf[i] = m_.value_buf[n.operands[0]];
            continue;
        }
        if (p.kind == Kind::view) {
            const int of = m_.value_buf[n.operands[0]];
            const Buf &o = m_.bufs[static_cast<size_t>(of)];
            Buf b = value_buffer(n, static_cast<int>(i));
            b.view_of = o.view_of >= 0 ? o.view_of : of;
            b.view_tile = o.view_tile + static_cast<uint32_t>(first_row(n) / P);
            m_.bufs.push_back(b);
            m_.value_buf[i] = static_cast<int>(m_.bufs.size() - 1);
            continue;
        }
        m_.bufs.push_back(value_buffer(nodes[p.result], static_cast<int>(i)));
        // index_add computes its value in its output argument, not in SBUF.
        m_.bufs.back().in_memory = p.kind == Kind::scatter_add;
        if (m_.chunk_rows && p.kind != Kind::scatter_add) {
            m_.bufs.back().rows = m_.chunk_rows;
            m_.bufs.back().chunked = true;
        }
        m_.value_buf[p.result] = static_cast<int>(m_.bufs.size() - 1);
        for (uint32_t f : p.fused)
            if (f != p.result)
                m_.value_buf[f] = -1;
    }
    // Lifetimes: a buffer lives until the last step that reads any value in it.
    for (uint32_t i = 0; i < nodes.size(); i++)
        for (uint32_t o : nodes[i].operands)
            if (m_.value_buf[o] >= 0) {
                Buf &b = m_.bufs[static_cast<size_t>(m_.value_buf[o])];
                b.last = std::max(b.last, step_of(i));
            }
    // A view's buffer lives as long as any view of it.
    for (Buf &b : m_.bufs)
        if (b.view_of >= 0) {
            Buf &o = m_.bufs[static_cast<size_t>(b.view_of)];
            o.first = std::min(o.first, b.first);
            o.last = std::max(o.last, b.last);
        }
    // In chunks of rows, weights and row operands are loaded once and live
    // through every chunk.
    for (Buf &b : m_.bufs)
        if (b.whole) {
            b.first = 0;
            b.last = static_cast<int>(nodes.size()) - 1;
        }
    // Temporaries: every group's declaration records them per step, and
    // which inputs and constants are loaded into SBUF.
    sbuf_read_.assign(nodes.size(), false);
    declare_steps();
    for (uint32_t i = 0; i < nodes.size(); i++)
        if ((nodes[i].op == Op::input || nodes[i].op == Op::constant) && !sbuf_read_[i])
            m_.bufs[static_cast<size_t>(m_.value_buf[i])].in_memory = true;

    // First fit by offset among the buffers whose lifetimes overlap.
    std::vector<size_t> order(m_.bufs.size());
    for (size_t i = 0; i < order.size(); i++)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return m_.bufs[a].first < m_.bufs[b].first; });
    std::vector<size_t> placed;
    m_.peak = 0;
    m_.peak_buf = -1;
    for (size_t id : order) {
        Buf &x = m_.bufs[id];
        if (x.view_of >= 0 || x.in_memory)
            continue;
        std::vector<std::pair<uint64_t, uint64_t>> busy;
        for (size_t y : placed) {
            const Buf &o = m_.bufs[y];
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
        if (off + x.bytes() > m_.peak || m_.peak_buf < 0) {
            m_.peak = std::max(m_.peak, off + x.bytes());
            m_.peak_buf = static_cast<int>(id);
        }
        placed.push_back(id);
    }
    for (Buf &b : m_.bufs)
        if (b.view_of >= 0)
            b.offset = m_.bufs[static_cast<size_t>(b.view_of)].offset +
                       uint64_t{b.view_tile} * b.cols * dtype_size(b.dtype);
    // After every buffer, the row of ones that adds a bias in PSUM.
    m_.ones_at = m_.peak;
    if (m_.ones)
        m_.peak += uint64_t{P} * 4;
}

} // namespace

MemoryPlan plan_memory(const Graph &g, const Usage &usage, const FusionPlan &fusion,
                       const Folded &folded, const CompileOptions &options) {
    return Planner(g, usage, fusion, folded, options).run();
}

std::string plan_text(const Graph &g, const FusionPlan &fusion, const MemoryPlan &memory) {
    std::string plan = fmt::format("SBUF: {} bytes per partition at the peak\n", memory.peak);
    if (memory.chunk_rows)
        plan += fmt::format("rows in chunks of {}: {} chunks of the {} rows\n", memory.chunk_rows,
                            (memory.rows + memory.chunk_rows - 1) / memory.chunk_rows, memory.rows);
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const Group &p = fusion.groups[i];
        if (p.kind == Kind::none && !g.node(i).operands.empty())
            continue;
        std::vector<std::string> f;
        for (uint32_t x : p.fused)
            f.push_back(g.node(x).name);
        const int bid = memory.value_buf[p.result];
        const Buf *pb = bid >= 0 ? &memory.bufs[static_cast<size_t>(bid)] : nullptr;
        plan += fmt::format("{:<20} {:<12} {}{}\n", g.node(i).name, to_string(g.node(i).op),
                            !pb                         ? std::string()
                            : memory.streamed[p.result] ? std::string("streamed from device memory")
                            : pb->in_memory             ? std::string("read from memory where used")
                                            : fmt::format("@{} +{}", pb->offset, pb->bytes()),
                            f.empty() ? "" : fmt::format("  fused: {}", fmt::join(f, ", ")));
    }
    return plan;
}

} // namespace neuron::compiler::lower
