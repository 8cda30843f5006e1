// SPDX-License-Identifier: MIT
#include "emitter.hpp"

#include <algorithm>

namespace neuron::compiler::lower {

namespace {

std::vector<uint32_t> dims_of(const Shape &s) {
    std::vector<uint32_t> d;
    for (int64_t x : s)
        d.push_back(static_cast<uint32_t>(x));
    return d;
}

} // namespace

Emitter::Emitter(const Graph &g, const CompileOptions &target, const Usage &usage,
                 MemoryPlan memory, const Folded &folded)
    : StepBuffers(g, target), usage_(usage), m_(std::move(memory)), b_(g.name(), target.limits) {
    // Arguments: inputs, then outputs, then the constants' slot.
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const Node &n = g.node(i);
        if (n.op == Op::input)
            args_.emplace(i,
                          b_.argument(n.name, n.type.dtype, dims_of(n.type.shape), Direction::in));
    }
    for (uint32_t o : g.outputs()) {
        const Node &n = g.node(o);
        if (n.op == Op::input || n.op == Op::constant)
            throw GraphError(fmt::format("output '{}' is a graph {}: it needs no program", n.name,
                                         n.op == Op::input ? "input" : "constant"));
        args_.emplace(o, b_.argument(n.name, n.type.dtype, dims_of(n.type.shape), Direction::out));
    }
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const Node &n = g.node(i);
        if (n.op != Op::constant || (usage_.uses[i] == 0 && !usage_.is_output[i]))
            continue;
        std::vector<uint32_t> shape = dims_of(n.type.shape);
        auto it = folded.find(i);
        if (it != folded.end())
            std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
        auto bytes = pack(n.type.dtype, it != folded.end() ? it->second : constant_values(n));
        args_.erase(i);
        args_.emplace(i, b_.constant(n.name, n.type.dtype, shape, bytes));
    }
    // The arena: every buffer, and after them the row of ones that adds a
    // bias in PSUM (counted in the peak).
    arena_ =
        b_.sbuf("arena", DType::fp32, static_cast<uint32_t>(std::max<uint64_t>(m_.peak, 4) / 4));
    psum_ = b_.psum("acc", DType::fp32, psum_banks * bank_elems);
    k_.emplace(b_);
    if (m_.ones) {
        Buf ones;
        ones.what = "ones";
        ones.rows = 1;
        ones.cols = P;
        ones.offset = m_.ones_at;
        m_.bufs.push_back(ones);
        ones_ = static_cast<int>(m_.bufs.size() - 1);
        k_->memset(Engine::vector, rows(m_.bufs.back(), 0, 1, 0, P), 1.0f);
    }
    loaded_.assign(g.nodes().size(), false);
}

int Emitter::planned_temp(const std::string &what) {
    const std::vector<int> &planned = m_.temps.at(step_);
    if (next_temp_ >= planned.size() ||
        m_.bufs[static_cast<size_t>(planned[next_temp_])].what != what)
        throw std::logic_error(fmt::format(
            "neuron::compiler: step {} asks for temporary {}, which the memory plan did not make",
            step_, what));
    return planned[next_temp_++];
}

const Buf &Emitter::temp(const std::string &what, DType, uint32_t, uint32_t) {
    return m_.bufs[static_cast<size_t>(planned_temp(what))];
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
const Buf &Emitter::replicated(uint32_t node, uint32_t period) {
    if (auto it = replicas_.find(node); it != replicas_.end())
        return m_.bufs[static_cast<size_t>(it->second)];
    const Buf &src = buf(node);
    const int id = planned_temp(graph.node(node).name + (period > 1 ? ".period" : ".rows"));
    replicas_[node] = id;
    const Buf &r = m_.bufs[static_cast<size_t>(id)];
    // In chunks of rows, a row operand's replica is filled by the first
    // chunk and kept for the others.
    if (m_.chunk_rows && m_.param[node] && row0_ > 0)
        return r;
    const Node &sn = graph.node(node);
    const bool in_memory = sn.op == Op::input || sn.op == Op::constant;
    if (in_memory && period == 1) {
        k_->dma_load(rows(r, 0, P, 0, r.cols), args_.at(node).at(0, 0));
        return r;
    }
    if (in_memory)
        k_->dma_load(rows(r, 0, period, 0, r.cols),
                     args_.at(node).at(0, r.cols * dtype_size(r.dtype)));
    else
        k_->copy(Engine::vector, rows(r, 0, period, 0, r.cols), rows(src, 0, period, 0, src.cols));
    for (uint32_t have = period; have < P; have *= 2)
        k_->copy(Engine::vector, rows(r, have, std::min(have, P - have), 0, r.cols),
                 rows(r, 0, std::min(have, P - have), 0, r.cols));
    return r;
}

const Buf &Emitter::transposed(uint32_t node, const std::string &what) {
    const Type &t = graph.node(node).type;
    const auto x = static_cast<uint32_t>(t.shape[t.shape.size() - 2]);
    const auto y = static_cast<uint32_t>(t.shape.back());
    const Buf &out = temp(what, t.dtype, 0, 0);
    read(node);
    transpose_blocks(buf(node), out, static_cast<uint32_t>(t.elements() / (int64_t{x} * y)), x, y);
    return out;
}

void Emitter::read(uint32_t node) {
    if (loaded_[node] || m_.streamed[node])
        return;
    const Node &n = graph.node(node);
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

void Emitter::store(uint32_t node) {
    if (!usage_.is_output[node])
        return;
    const Buf &b = buf(node);
    if (b.in_memory) // computed in its output argument (index_add)
        return;
    const ArgRef &a = args_.at(node);
    const uint64_t pitch = uint64_t{b.cols} * dtype_size(b.dtype);
    const uint64_t row0 = b.chunked ? row0_ : 0;
    for (uint32_t t = 0; t < b.tiles(); t++)
        k_->dma_store(a.at((row0 + uint64_t{t} * P) * pitch, static_cast<uint32_t>(pitch)),
                      tile(b, t));
}

Tap Emitter::rows(const Buf &b, uint32_t r0, uint32_t n, uint32_t c0, uint32_t cn) const {
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

Tap Emitter::next_bank(uint32_t cols) {
    return psum_.view((next_bank_++ % psum_banks) * bank_elems, cols);
}

void Emitter::transpose_blocks(const Buf &in, const Buf &out, uint32_t batch, uint32_t x,
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

uint32_t Emitter::chunks() const {
    return m_.chunk_rows ? static_cast<uint32_t>((m_.rows + m_.chunk_rows - 1) / m_.chunk_rows) : 1;
}

void Emitter::begin_chunk(uint32_t chunk) {
    step_from_.assign(graph.nodes().size() + 1, 0);
    if (!m_.chunk_rows)
        return;
    row0_ = chunk * m_.chunk_rows;
    for (Buf &b : m_.bufs)
        if (b.chunked)
            b.rows = static_cast<uint32_t>(std::min<int64_t>(m_.chunk_rows, m_.rows - row0_));
    for (uint32_t v = 0; v < graph.nodes().size(); v++)
        if (m_.rowspace[v])
            loaded_[v] = false;
}

void Emitter::begin_step(uint32_t step, const Group &group) {
    step_ = step;
    next_temp_ = 0;
    replicas_.clear();
    step_from_[step] = k_->recorded();
    // Every instruction of the group, the loads of its operands and the
    // store of its result included, is named after its nodes: the
    // program's ORIGINS, which profiles name instructions by.
    std::string origin = graph.node(step).name;
    for (uint32_t f : group.fused)
        origin += "+" + graph.node(f).name;
    k_->set_origin(origin);
}

void Emitter::end_chunk() {
    step_from_[graph.nodes().size()] = k_->recorded();
    chunk_steps_.push_back(step_from_);
}

Kernel::Stats Emitter::finish() {
    live_ranges();
    k_->set_origin("");
    k_->finish();
    return k_->stats();
}

Program Emitter::build() {
    Program p = b_.finish();
    check_isa(p);
    return p;
}

// Each row tile of an SBUF buffer is in use during the steps of the
// buffer's lifetime, and only it uses its bytes then (the memory plan's
// first fit): its instructions are the ones of those steps that touch
// them. Tile by tile, since a tile's last use (its store, say) may end long
// before the next tile's. The row of ones, written before the first step,
// lives to the end.
void Emitter::live_ranges() {
    for (size_t id = 0; id < m_.bufs.size(); id++) {
        const Buf &b = m_.bufs[id];
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
                                m_.chunk_rows, m_.rows - static_cast<int64_t>(c) * m_.chunk_rows))
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

// The last word: no instruction of the program is newer than the target.
void Emitter::check_isa(const Program &p) const {
    const unsigned have = options.isa_version & 0xffff;
    for (unsigned e = 1; e <= num_engines; e++) {
        auto code = p.stream(static_cast<Engine>(e));
        for (size_t i = 0; i + 64 <= code.size(); i += 64) {
            const auto insn = code.subspan(i, 64);
            if (unsigned need = isa_minor_of(insn); need > have)
                throw GraphError(fmt::format(
                    "graph '{}': instruction {} of the {} stream is {}, an instruction of ISA "
                    "{}.{}, but the target device implements ISA {}.{}",
                    graph.name(), i / 64, to_string(static_cast<Engine>(e)), mnemonic(insn),
                    isa_version() >> 16, need, options.isa_version >> 16, have));
        }
    }
}

} // namespace neuron::compiler::lower
