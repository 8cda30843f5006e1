// SPDX-License-Identifier: MIT
// Kernel: instructions for the four engines of one NeuronCore, written in
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
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <neuron/builder.hpp>
#include <neuron/export.h>

namespace neuron {

class NEURON_EXPORT Kernel {
  public:
    /// Instructions go into @p b's streams when finish() is called.
    explicit Kernel(ProgramBuilder &b);
    Kernel(const Kernel &) = delete;
    Kernel &operator=(const Kernel &) = delete;
    ~Kernel();

    // Sync engine.
    void dma_load(const Tap &dst, const DramRef &src);
    void dma_store(const DramRef &dst, const Tap &src);
    /// Rows @p indices (int32, one per partition of @p dst, the same
    /// partitions) of @p table, each below @p rows (ISA 1.1).
    void dma_gather(const Tap &dst, const DramRef &table, const Tap &indices, uint32_t rows);
    /// @p src added into rows @p indices (int32, one per partition of @p
    /// src) of @p table, each below @p rows (ISA 1.2,
    /// StreamBuilder::dma_scatter_add).
    void dma_scatter_add(const DramRef &table, const Tap &src, const Tap &indices, uint32_t rows);
    // Tensor engine.
    void matmul(const Tap &dst, const Tap &stationary, const Tap &moving, bool accumulate);
    void transpose(const Tap &dst, const Tap &src);
    // Scalar engine.
    void activate(Activation f, const Tap &dst, const Tap &src, float scale = 1.0f,
                  float bias = 0.0f);
    void activate(Activation f, const Tap &dst, const Tap &src, float scale, const Tap &bias);
    // Vector engine (tensor_scalar, copy and memset also on Scalar).
    void tensor_tensor(AluOp op, const Tap &dst, const Tap &a, const Tap &b);
    /// On int32 operands, exact (ISA 1.2, StreamBuilder::tensor_tensor_int).
    void tensor_tensor_int(AluOp op, const Tap &dst, const Tap &a, const Tap &b);
    void tensor_scalar(Engine e, const Tap &dst, const Tap &src, AluOp op0, float s0,
                       AluOp op1 = AluOp::none, float s1 = 0.0f, bool reverse0 = false,
                       bool reverse1 = false);
    void tensor_scalar(Engine e, const Tap &dst, const Tap &src, AluOp op0, const Tap &s0,
                       AluOp op1 = AluOp::none, float s1 = 0.0f, bool reverse0 = false,
                       bool reverse1 = false);
    void reduce(ReduceOp op, const Tap &dst, const Tap &src);
    void copy(Engine e, const Tap &dst, const Tap &src);
    /// To int32 or u8 rounding toward zero (ISA 1.2, StreamBuilder::copy_trunc).
    void copy_trunc(Engine e, const Tap &dst, const Tap &src);
    void memset(Engine e, const Tap &dst, float value);
    void iota(const Tap &dst, int32_t base, int32_t partition_step, int32_t free_step);
    /// Philox-4x32-10 numbers of the stream @p key selects (ISA 1.2,
    /// StreamBuilder::random).
    void random(const Tap &dst, const Tap &key, uint32_t base, uint32_t partition_step);
    /// dst = mask != 0 ? on_true : on_false (ISA 1.1).
    void select(const Tap &dst, const Tap &mask, const Tap &on_true, float on_false);
    /// dst = mask != 0 ? on_true : dst (ISA 1.1).
    void select_keep(const Tap &dst, const Tap &mask, const Tap &on_true);

    /// Names the origin of the instructions recorded from now on (see
    /// ProgramBuilder::set_origin); the waits before an instruction and the
    /// signal after it share its origin.
    void set_origin(std::string name);

    /// The instructions recorded so far: a position for live_range().
    size_t recorded() const;
    /// Says that bytes [offset, offset + size) of partitions [part_start,
    /// part_start + part_count) of @p space are one allocation while the
    /// instructions recorded in [@p from, @p to) run: finish() writes the
    /// first of them that touches the bytes and each engine's last one to
    /// the builder's LIVE section (ProgramBuilder::live_range), nothing if
    /// none touches them. Other instructions in [from, to) must not use the
    /// bytes for anything else.
    void live_range(std::string name, Space space, uint32_t part_start, uint32_t part_count,
                    uint32_t offset, uint32_t size, size_t from, size_t to);

    /// Writes every stream into the builder (semaphores, waits, signals,
    /// instructions, END). Call once, after the last instruction; throws
    /// std::logic_error when called twice or when an instruction is
    /// recorded after it.
    void finish();

    struct Stats {
        std::array<uint32_t, 4> insns{}; ///< compute/DMA instructions per engine
        std::array<uint32_t, 4> waits{};
        std::array<uint32_t, 4> signals{};
    };
    /// Filled in by finish().
    const Stats &stats() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace neuron
