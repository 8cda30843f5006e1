// SPDX-License-Identifier: MIT
#include "common/kernel.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nex {

using namespace neuron;

namespace {
unsigned slot(Engine e) {
    return static_cast<unsigned>(e) - 1;
}
constexpr std::array<const char *, 4> sem_names{"tensor_done", "vector_done", "scalar_done",
                                                "sync_done"};
} // namespace

Kernel::Access Kernel::access(const Tap &t, bool write) {
    uint64_t size = dtype_size(t.dtype);
    uint64_t last = uint64_t{t.count[1] - 1} * t.stride[1] + uint64_t{t.count[0] - 1} * t.stride[0];
    return Access{static_cast<uint8_t>(t.space), t.part_start,
                  t.part_start + t.part_count,   t.offset,
                  t.offset + (last + 1) * size,  write};
}

void Kernel::record(Engine e, std::vector<Access> acc, std::function<void(StreamBuilder &)> emit) {
    if (finished_)
        throw std::logic_error("Kernel: instruction recorded after finish()");
    const unsigned me = slot(e);
    // The latest conflicting op of every other engine.
    std::array<int64_t, 4> need{-1, -1, -1, -1};
    unsigned found = 0;
    for (size_t j = ops_.size(); j-- > 0 && found < 3;) {
        const unsigned other = slot(ops_[j].engine);
        if (other == me || need[other] >= 0)
            continue;
        bool conflict = false;
        for (const Access &a : acc) {
            for (const Access &b : accesses_[j]) {
                if (a.space != b.space || !(a.write || b.write))
                    continue;
                if (a.p0 < b.p1 && b.p0 < a.p1 && a.b0 < b.b1 && b.b0 < a.b1) {
                    conflict = true;
                    break;
                }
            }
            if (conflict)
                break;
        }
        if (conflict) {
            need[other] = ops_[j].index;
            found++;
        }
    }
    Op op;
    op.engine = e;
    op.index = static_cast<uint32_t>(engine_ops_[me].size());
    op.emit = std::move(emit);
    for (unsigned f = 0; f < 4; f++) {
        if (need[f] < 0 || need[f] <= known_[me][f])
            continue; // no conflict, or already ordered (directly or transitively)
        Op &producer = ops_[engine_ops_[f][static_cast<size_t>(need[f])]];
        producer.signal = true;
        op.waits.emplace_back(f, static_cast<uint32_t>(need[f]));
        for (unsigned g = 0; g < 4; g++)
            known_[me][g] = std::max(known_[me][g], producer.clock[g]);
    }
    known_[me][me] = op.index;
    op.clock = known_[me];
    engine_ops_[me].push_back(ops_.size());
    ops_.push_back(std::move(op));
    accesses_.push_back(std::move(acc));
}

void Kernel::finish() {
    if (finished_)
        throw std::logic_error("Kernel::finish() called twice");
    finished_ = true;
    // Signal counts: the value a waiter needs for op i of engine f is the
    // number of signalling ops of f up to and including i.
    std::array<std::vector<uint32_t>, 4> value;
    std::array<Semaphore, 4> sem{};
    for (unsigned f = 0; f < 4; f++) {
        uint32_t n = 0;
        for (size_t i : engine_ops_[f]) {
            n += ops_[i].signal ? 1 : 0;
            value[f].push_back(n);
        }
        if (n)
            sem[f] = b_.semaphore(sem_names[f]);
    }
    for (unsigned e = 0; e < 4; e++) {
        if (engine_ops_[e].empty())
            continue;
        StreamBuilder &s = b_.stream(static_cast<Engine>(e + 1));
        for (size_t i : engine_ops_[e]) {
            const Op &op = ops_[i];
            for (auto [f, idx] : op.waits) {
                s.wait(sem[f], value[f][idx], /*decrement=*/false);
                stats_.waits[e]++;
            }
            op.emit(s);
            stats_.insns[e]++;
            if (op.signal) {
                s.signal(sem[e], 1);
                stats_.signals[e]++;
            }
        }
        s.end();
    }
}

// --- instructions ------------------------------------------------------------------

void Kernel::dma_load(const Tap &dst, const DramRef &src) {
    record(Engine::sync, {access(dst, true)}, [=](StreamBuilder &s) { s.dma_load(dst, src); });
}

void Kernel::dma_store(const DramRef &dst, const Tap &src) {
    record(Engine::sync, {access(src, false)}, [=](StreamBuilder &s) { s.dma_store(dst, src); });
}

void Kernel::matmul(const Tap &dst, const Tap &stationary, const Tap &moving, bool accumulate) {
    record(Engine::tensor, {access(dst, true), access(stationary, false), access(moving, false)},
           [=](StreamBuilder &s) { s.matmul(dst, stationary, moving, accumulate); });
}

void Kernel::transpose(const Tap &dst, const Tap &src) {
    record(Engine::tensor, {access(dst, true), access(src, false)},
           [=](StreamBuilder &s) { s.transpose(dst, src); });
}

void Kernel::activate(Activation f, const Tap &dst, const Tap &src, float scale, float bias) {
    record(Engine::scalar, {access(dst, true), access(src, false)},
           [=](StreamBuilder &s) { s.activate(f, dst, src, scale, bias); });
}

void Kernel::activate(Activation f, const Tap &dst, const Tap &src, float scale, const Tap &bias) {
    record(Engine::scalar, {access(dst, true), access(src, false), access(bias, false)},
           [=](StreamBuilder &s) { s.activate(f, dst, src, scale, bias); });
}

void Kernel::tensor_tensor(AluOp op, const Tap &dst, const Tap &a, const Tap &b) {
    record(Engine::vector, {access(dst, true), access(a, false), access(b, false)},
           [=](StreamBuilder &s) { s.tensor_tensor(op, dst, a, b); });
}

void Kernel::tensor_scalar(Engine e, const Tap &dst, const Tap &src, AluOp op0, float s0, AluOp op1,
                           float s1, bool reverse0, bool reverse1) {
    record(e, {access(dst, true), access(src, false)}, [=](StreamBuilder &s) {
        s.tensor_scalar(dst, src, op0, s0, op1, s1, reverse0, reverse1);
    });
}

void Kernel::tensor_scalar(Engine e, const Tap &dst, const Tap &src, AluOp op0, const Tap &s0,
                           AluOp op1, float s1, bool reverse0, bool reverse1) {
    record(e, {access(dst, true), access(src, false), access(s0, false)}, [=](StreamBuilder &s) {
        s.tensor_scalar(dst, src, op0, s0, op1, s1, reverse0, reverse1);
    });
}

void Kernel::reduce(ReduceOp op, const Tap &dst, const Tap &src) {
    record(Engine::vector, {access(dst, true), access(src, false)},
           [=](StreamBuilder &s) { s.reduce(op, dst, src); });
}

void Kernel::copy(Engine e, const Tap &dst, const Tap &src) {
    record(e, {access(dst, true), access(src, false)}, [=](StreamBuilder &s) { s.copy(dst, src); });
}

void Kernel::memset(Engine e, const Tap &dst, float value) {
    record(e, {access(dst, true)}, [=](StreamBuilder &s) { s.memset(dst, value); });
}

} // namespace nex
