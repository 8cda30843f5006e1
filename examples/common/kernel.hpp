// SPDX-License-Identifier: MIT
// A kernel: instructions for the four engines of one NeuronCore, written in
// one program order, with the semaphores between the engine streams derived
// from what every instruction reads and writes.
//
// Every instruction names the SBUF/PSUM ranges it reads and writes (its
// taps). When an instruction on engine E touches bytes that an earlier
// instruction on another engine F writes (read after write), or writes
// bytes an earlier instruction of F reads or writes (write after read,
// write after write), E waits for that instruction of F. Each engine owns
// one semaphore that it signals after every instruction some other engine
// waits for; waits compare against the count (they never decrement), so a
// wait for F's n-th signal also covers all of F's earlier ones. Waits that
// are already implied (directly or through a third engine) are dropped.
// Since every wait refers to an instruction recorded earlier, the streams
// cannot deadlock.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include <neuron/builder.hpp>

namespace nex {

class Kernel {
  public:
    explicit Kernel(neuron::ProgramBuilder &b) : b_(b) {}
    Kernel(const Kernel &) = delete;
    Kernel &operator=(const Kernel &) = delete;

    // Sync engine.
    void dma_load(const neuron::Tap &dst, const neuron::DramRef &src);
    void dma_store(const neuron::DramRef &dst, const neuron::Tap &src);
    // Tensor engine.
    void matmul(const neuron::Tap &dst, const neuron::Tap &stationary, const neuron::Tap &moving,
                bool accumulate);
    void transpose(const neuron::Tap &dst, const neuron::Tap &src);
    // Scalar engine.
    void activate(neuron::Activation f, const neuron::Tap &dst, const neuron::Tap &src,
                  float scale = 1.0f, float bias = 0.0f);
    void activate(neuron::Activation f, const neuron::Tap &dst, const neuron::Tap &src, float scale,
                  const neuron::Tap &bias);
    // Vector engine (tensor_scalar, copy and memset also on Scalar).
    void tensor_tensor(neuron::AluOp op, const neuron::Tap &dst, const neuron::Tap &a,
                       const neuron::Tap &b);
    void tensor_scalar(neuron::Engine e, const neuron::Tap &dst, const neuron::Tap &src,
                       neuron::AluOp op0, float s0, neuron::AluOp op1 = neuron::AluOp::none,
                       float s1 = 0.0f, bool reverse0 = false, bool reverse1 = false);
    void tensor_scalar(neuron::Engine e, const neuron::Tap &dst, const neuron::Tap &src,
                       neuron::AluOp op0, const neuron::Tap &s0,
                       neuron::AluOp op1 = neuron::AluOp::none, float s1 = 0.0f,
                       bool reverse0 = false, bool reverse1 = false);
    void reduce(neuron::ReduceOp op, const neuron::Tap &dst, const neuron::Tap &src);
    void copy(neuron::Engine e, const neuron::Tap &dst, const neuron::Tap &src);
    void memset(neuron::Engine e, const neuron::Tap &dst, float value);

    /// Writes every stream into the builder (semaphores, waits, signals,
    /// instructions). Call once, after the last instruction.
    void finish();

    struct Stats {
        std::array<uint32_t, 4> insns{}; ///< compute/DMA instructions per engine
        std::array<uint32_t, 4> waits{};
        std::array<uint32_t, 4> signals{};
    };
    const Stats &stats() const { return stats_; }

  private:
    struct Access {
        uint8_t space;
        uint32_t p0, p1; // partitions [p0, p1)
        uint64_t b0, b1; // bytes [b0, b1) within each partition
        bool write;
    };
    struct Op {
        neuron::Engine engine;
        uint32_t index; // position among the ops of its engine
        std::function<void(neuron::StreamBuilder &)> emit;
        std::vector<std::pair<unsigned, uint32_t>> waits; // (engine slot, op index)
        std::array<int64_t, 4> clock{};                   // ops known complete after this one
        bool signal = false;
    };

    static Access access(const neuron::Tap &t, bool write);
    void record(neuron::Engine e, std::vector<Access> acc,
                std::function<void(neuron::StreamBuilder &)> emit);

    neuron::ProgramBuilder &b_;
    std::vector<Op> ops_;
    std::vector<std::vector<Access>> accesses_;     // per op in ops_
    std::array<std::vector<size_t>, 4> engine_ops_; // indices into ops_
    std::array<std::array<int64_t, 4>, 4> known_{
        {{-1, -1, -1, -1}, {-1, -1, -1, -1}, {-1, -1, -1, -1}, {-1, -1, -1, -1}}};
    Stats stats_;
    bool finished_ = false;
};

} // namespace nex
