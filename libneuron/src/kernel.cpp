// SPDX-License-Identifier: MIT
#include <neuron/kernel.hpp>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace neuron {

namespace {

unsigned slot(Engine e) {
    return static_cast<unsigned>(e) - 1;
}

constexpr std::array<const char *, 4> sem_names{"tensor_done", "vector_done", "scalar_done",
                                                "sync_done"};

// Bytes [b0, b1) of partitions [p0, p1) of one on-core space.
struct Access {
    uint8_t space;
    uint32_t p0, p1;
    uint64_t b0, b1;
    bool write;
};

Access access(const Tap &t, bool write) {
    uint64_t size = dtype_size(t.dtype);
    uint64_t last = uint64_t{t.count[1] - 1} * t.stride[1] + uint64_t{t.count[0] - 1} * t.stride[0];
    return Access{static_cast<uint8_t>(t.space), t.part_start,
                  t.part_start + t.part_count,   t.offset,
                  t.offset + (last + 1) * size,  write};
}

bool conflicts(const std::vector<Access> &x, const std::vector<Access> &y) {
    for (const Access &a : x)
        for (const Access &b : y)
            if (a.space == b.space && (a.write || b.write) && a.p0 < b.p1 && b.p0 < a.p1 &&
                a.b0 < b.b1 && b.b0 < a.b1)
                return true;
    return false;
}

} // namespace

struct Kernel::Impl {
    struct Op {
        Engine engine;
        uint32_t index; // position among the ops of its engine
        std::function<void(StreamBuilder &)> emit;
        uint32_t origin = 0;                              // index into origins
        std::vector<std::pair<unsigned, uint32_t>> waits; // (engine slot, op index)
        std::array<int64_t, 4> clock{};                   // ops known complete after this one
        bool signal = false;
    };

    explicit Impl(ProgramBuilder &builder) : b(builder) {}

    void record(Engine e, std::vector<Access> acc, std::function<void(StreamBuilder &)> emit);

    ProgramBuilder &b;
    std::vector<Op> ops;
    std::vector<std::vector<Access>> accesses;     // per op in ops
    std::array<std::vector<size_t>, 4> engine_ops; // indices into ops
    std::array<std::array<int64_t, 4>, 4> known{
        {{-1, -1, -1, -1}, {-1, -1, -1, -1}, {-1, -1, -1, -1}, {-1, -1, -1, -1}}};
    Stats stats;
    bool finished = false;
    std::vector<std::string> origins{std::string()}; // 0: none
    struct Live {
        LiveRange range;
        uint8_t space;
        size_t from, to;
    };
    std::vector<Live> live;
};

void Kernel::Impl::record(Engine e, std::vector<Access> acc,
                          std::function<void(StreamBuilder &)> emit) {
    if (finished)
        throw std::logic_error("Kernel: instruction recorded after finish()");
    const unsigned me = slot(e);
    // The latest conflicting op of every other engine.
    std::array<int64_t, 4> need{-1, -1, -1, -1};
    unsigned found = 0;
    for (size_t j = ops.size(); j-- > 0 && found < 3;) {
        const unsigned other = slot(ops[j].engine);
        if (other == me || need[other] >= 0)
            continue;
        if (conflicts(acc, accesses[j])) {
            need[other] = ops[j].index;
            found++;
        }
    }
    Op op;
    op.engine = e;
    op.index = static_cast<uint32_t>(engine_ops[me].size());
    op.emit = std::move(emit);
    op.origin = static_cast<uint32_t>(origins.size() - 1);
    for (unsigned f = 0; f < 4; f++) {
        if (need[f] < 0 || need[f] <= known[me][f])
            continue; // no conflict, or already ordered (directly or transitively)
        Op &producer = ops[engine_ops[f][static_cast<size_t>(need[f])]];
        producer.signal = true;
        op.waits.emplace_back(f, static_cast<uint32_t>(need[f]));
        for (unsigned g = 0; g < 4; g++)
            known[me][g] = std::max(known[me][g], producer.clock[g]);
    }
    known[me][me] = op.index;
    op.clock = known[me];
    engine_ops[me].push_back(ops.size());
    ops.push_back(std::move(op));
    accesses.push_back(std::move(acc));
}

Kernel::Kernel(ProgramBuilder &b) : impl_(std::make_unique<Impl>(b)) {}
Kernel::~Kernel() = default;

void Kernel::set_origin(std::string name) {
    if (impl_->origins.back() != name)
        impl_->origins.push_back(std::move(name));
}

size_t Kernel::recorded() const {
    return impl_->ops.size();
}

void Kernel::live_range(std::string name, Space space, uint32_t part_start, uint32_t part_count,
                        uint32_t offset, uint32_t size, size_t from, size_t to) {
    if (impl_->finished)
        throw std::logic_error("Kernel: live range given after finish()");
    if (space != Space::sbuf && space != Space::psum)
        throw std::invalid_argument("Kernel::live_range: SBUF or PSUM");
    LiveRange r;
    r.name = std::move(name);
    r.kind = space == Space::sbuf ? format::symbol_sbuf : format::symbol_psum;
    r.part_start = part_start;
    r.part_count = part_count;
    r.offset = offset;
    r.size = size;
    impl_->live.push_back({std::move(r), static_cast<uint8_t>(space), from, to});
}

const Kernel::Stats &Kernel::stats() const {
    return impl_->stats;
}

void Kernel::finish() {
    Impl &k = *impl_;
    if (k.finished)
        throw std::logic_error("Kernel::finish() called twice");
    k.finished = true;
    const std::string outer = k.b.origin();
    // Signal counts: the value a waiter needs for op i of engine f is the
    // number of signalling ops of f up to and including i.
    std::array<std::vector<uint32_t>, 4> value;
    std::array<Semaphore, 4> sem{};
    for (unsigned f = 0; f < 4; f++) {
        uint32_t n = 0;
        for (size_t i : k.engine_ops[f]) {
            n += k.ops[i].signal ? 1 : 0;
            value[f].push_back(n);
        }
        if (n)
            sem[f] = k.b.semaphore(sem_names[f]);
    }
    std::vector<uint32_t> at(k.ops.size()); // each op's instruction in its stream
    for (unsigned e = 0; e < 4; e++) {
        if (k.engine_ops[e].empty())
            continue;
        StreamBuilder &s = k.b.stream(static_cast<Engine>(e + 1));
        for (size_t i : k.engine_ops[e]) {
            const Impl::Op &op = k.ops[i];
            k.b.set_origin(k.origins[op.origin]);
            for (auto [f, idx] : op.waits) {
                s.wait(sem[f], value[f][idx], /*decrement=*/false);
                k.stats.waits[e]++;
            }
            at[i] = s.size();
            op.emit(s);
            k.stats.insns[e]++;
            if (op.signal) {
                s.signal(sem[e], 1);
                k.stats.signals[e]++;
            }
        }
        k.b.set_origin(outer);
        s.end();
    }
    k.b.set_origin(outer);
    // The live ranges: the first op of the window that touches the bytes,
    // and each engine's last.
    for (Impl::Live &l : k.live) {
        const LiveRange &r = l.range;
        const Access range{l.space,
                           r.part_start,
                           r.part_start + r.part_count,
                           r.offset,
                           uint64_t{r.offset} + r.size,
                           true};
        bool any = false;
        LiveRange out = r;
        for (size_t i = l.from; i < std::min(l.to, k.ops.size()); i++) {
            if (!conflicts({range}, k.accesses[i]))
                continue;
            const unsigned e = slot(k.ops[i].engine);
            if (!any)
                out.live = {k.ops[i].engine, at[i]};
            out.dead[e] = at[i];
            any = true;
        }
        if (any)
            k.b.live_range(std::move(out));
    }
}

// --- instructions ------------------------------------------------------------------

void Kernel::dma_gather(const Tap &dst, const DramRef &table, const Tap &indices, uint32_t rows) {
    if (indices.space != Space::sbuf || indices.dtype != DType::int32 ||
        indices.part_start != dst.part_start || indices.part_count != dst.part_count ||
        indices.count[0] * indices.count[1] != 1)
        throw Error(errc::invalid_argument,
                    "dma_gather: the indices are one int32 in SBUF in each partition of the "
                    "destination");
    impl_->record(Engine::sync, {access(dst, true), access(indices, false)},
                  [=](StreamBuilder &s) { s.dma_gather(dst, table, indices.offset, rows); });
}

void Kernel::dma_scatter_add(const DramRef &table, const Tap &src, const Tap &indices,
                             uint32_t rows) {
    if (indices.space != Space::sbuf || indices.dtype != DType::int32 ||
        indices.part_start != src.part_start || indices.part_count != src.part_count ||
        indices.count[0] * indices.count[1] != 1)
        throw Error(errc::invalid_argument,
                    "dma_scatter_add: the indices are one int32 in SBUF in each partition of the "
                    "source");
    impl_->record(Engine::sync, {access(src, false), access(indices, false)},
                  [=](StreamBuilder &s) { s.dma_scatter_add(table, src, indices.offset, rows); });
}

void Kernel::dma_load(const Tap &dst, const DramRef &src) {
    impl_->record(Engine::sync, {access(dst, true)},
                  [=](StreamBuilder &s) { s.dma_load(dst, src); });
}

void Kernel::dma_store(const DramRef &dst, const Tap &src) {
    impl_->record(Engine::sync, {access(src, false)},
                  [=](StreamBuilder &s) { s.dma_store(dst, src); });
}

void Kernel::matmul(const Tap &dst, const Tap &stationary, const Tap &moving, bool accumulate) {
    impl_->record(Engine::tensor,
                  {access(dst, true), access(stationary, false), access(moving, false)},
                  [=](StreamBuilder &s) { s.matmul(dst, stationary, moving, accumulate); });
}

void Kernel::transpose(const Tap &dst, const Tap &src) {
    impl_->record(Engine::tensor, {access(dst, true), access(src, false)},
                  [=](StreamBuilder &s) { s.transpose(dst, src); });
}

void Kernel::activate(Activation f, const Tap &dst, const Tap &src, float scale, float bias) {
    impl_->record(Engine::scalar, {access(dst, true), access(src, false)},
                  [=](StreamBuilder &s) { s.activate(f, dst, src, scale, bias); });
}

void Kernel::activate(Activation f, const Tap &dst, const Tap &src, float scale, const Tap &bias) {
    impl_->record(Engine::scalar, {access(dst, true), access(src, false), access(bias, false)},
                  [=](StreamBuilder &s) { s.activate(f, dst, src, scale, bias); });
}

void Kernel::tensor_tensor(AluOp op, const Tap &dst, const Tap &a, const Tap &b) {
    impl_->record(Engine::vector, {access(dst, true), access(a, false), access(b, false)},
                  [=](StreamBuilder &s) { s.tensor_tensor(op, dst, a, b); });
}

void Kernel::tensor_tensor_int(AluOp op, const Tap &dst, const Tap &a, const Tap &b) {
    impl_->record(Engine::vector, {access(dst, true), access(a, false), access(b, false)},
                  [=](StreamBuilder &s) { s.tensor_tensor_int(op, dst, a, b); });
}

void Kernel::tensor_scalar(Engine e, const Tap &dst, const Tap &src, AluOp op0, float s0, AluOp op1,
                           float s1, bool reverse0, bool reverse1) {
    impl_->record(e, {access(dst, true), access(src, false)}, [=](StreamBuilder &s) {
        s.tensor_scalar(dst, src, op0, s0, op1, s1, reverse0, reverse1);
    });
}

void Kernel::tensor_scalar(Engine e, const Tap &dst, const Tap &src, AluOp op0, const Tap &s0,
                           AluOp op1, float s1, bool reverse0, bool reverse1) {
    impl_->record(
        e, {access(dst, true), access(src, false), access(s0, false)},
        [=](StreamBuilder &s) { s.tensor_scalar(dst, src, op0, s0, op1, s1, reverse0, reverse1); });
}

void Kernel::reduce(ReduceOp op, const Tap &dst, const Tap &src) {
    impl_->record(Engine::vector, {access(dst, true), access(src, false)},
                  [=](StreamBuilder &s) { s.reduce(op, dst, src); });
}

void Kernel::copy(Engine e, const Tap &dst, const Tap &src) {
    impl_->record(e, {access(dst, true), access(src, false)},
                  [=](StreamBuilder &s) { s.copy(dst, src); });
}

void Kernel::copy_trunc(Engine e, const Tap &dst, const Tap &src) {
    impl_->record(e, {access(dst, true), access(src, false)},
                  [=](StreamBuilder &s) { s.copy_trunc(dst, src); });
}

void Kernel::memset(Engine e, const Tap &dst, float value) {
    impl_->record(e, {access(dst, true)}, [=](StreamBuilder &s) { s.memset(dst, value); });
}

void Kernel::random(const Tap &dst, const Tap &key, uint32_t base, uint32_t partition_step) {
    impl_->record(Engine::vector, {access(dst, true), access(key, false)},
                  [=](StreamBuilder &s) { s.random(dst, key, base, partition_step); });
}

void Kernel::iota(const Tap &dst, int32_t base, int32_t partition_step, int32_t free_step) {
    impl_->record(Engine::vector, {access(dst, true)},
                  [=](StreamBuilder &s) { s.iota(dst, base, partition_step, free_step); });
}

void Kernel::select(const Tap &dst, const Tap &mask, const Tap &on_true, float on_false) {
    impl_->record(Engine::vector, {access(dst, true), access(mask, false), access(on_true, false)},
                  [=](StreamBuilder &s) { s.select(dst, mask, on_true, on_false); });
}

void Kernel::select_keep(const Tap &dst, const Tap &mask, const Tap &on_true) {
    impl_->record(
        Engine::vector,
        {access(dst, true), access(dst, false), access(mask, false), access(on_true, false)},
        [=](StreamBuilder &s) { s.select_keep(dst, mask, on_true); });
}

} // namespace neuron
