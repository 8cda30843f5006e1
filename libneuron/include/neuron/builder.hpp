// SPDX-License-Identifier: MIT
// The program builder: an assembler over the ISA (hw/neuron_isa.h) that
// writes the container format.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <neuron/export.h>
#include <neuron/program.hpp>

namespace neuron {

enum class Space : uint8_t { sbuf = 1, psum = 2 };

/// ALU operations (TENSOR_TENSOR, TENSOR_SCALAR). The comparisons (ISA
/// 1.1) give 1.0 when true, else 0.0.
enum class AluOp : uint8_t {
    none = 0,
    add = 1,
    sub = 2,
    mul = 3,
    max = 4,
    min = 5,
    div = 6,
    is_eq = 7,
    is_ne = 8,
    is_lt = 9,
    is_le = 10,
    is_gt = 11,
    is_ge = 12
};
/// Activation functions (ACTIVATE).
enum class Activation : uint8_t {
    identity = 1,
    relu = 2,
    gelu_tanh = 3,
    gelu = 4,
    sigmoid = 5,
    tanh = 6,
    exp = 7,
    silu = 8,
    rsqrt = 9,       ///< 1 / sqrt(z), ISA 1.1
    reciprocal = 10, ///< 1 / z, ISA 1.1
    ln = 11,         ///< natural logarithm, ISA 1.2
    erf = 12,        ///< error function, ISA 1.2
    sqrt = 13,       ///< square root, ISA 1.2
    abs = 14         ///< |z|, ISA 1.2
};
/// The ACTIVATE instruction of @p f as the disassembler names it
/// ("activate.rsqrt"), and the ISA minor revision that introduced it.
NEURON_EXPORT std::string mnemonic(Activation f);
NEURON_EXPORT unsigned isa_minor_of(Activation f) noexcept;
/// The same for a TENSOR_SCALAR of @p op ("tensor_scalar.is_ge").
NEURON_EXPORT std::string mnemonic_tensor_scalar(AluOp op);
NEURON_EXPORT unsigned isa_minor_of(AluOp op) noexcept;
/// The same for SELECT (StreamBuilder::select, select_keep).
NEURON_EXPORT std::string mnemonic_select();
NEURON_EXPORT unsigned isa_minor_of_select() noexcept;

/// Reductions along the free axis (REDUCE).
enum class ReduceOp : uint8_t { sum = 1, max = 2, min = 3 };

/// An access pattern into SBUF or PSUM (struct neuron_tap): partitions
/// [part_start, part_start + part_count), and per partition the elements
/// offset + (j1 * stride[1] + j0 * stride[0]) * dtype_size.
struct Tap {
    Space space = Space::sbuf;
    DType dtype = DType::fp32;
    uint32_t part_start = 0;
    uint32_t part_count = 0;
    uint32_t offset = 0; ///< bytes within each partition
    std::array<uint32_t, 2> count{1, 1};
    std::array<uint32_t, 2> stride{1, 0};
};

/// A named SBUF/PSUM allocation: @c elems elements of @c dtype in each of
/// its partitions.
struct NEURON_EXPORT Tile {
    Space space = Space::sbuf;
    DType dtype = DType::fp32;
    uint32_t part_start = 0;
    uint32_t part_count = 0;
    uint32_t offset = 0; ///< bytes within each partition
    uint32_t elems = 0;  ///< elements per partition

    /// All elements of all partitions, one free axis.
    Tap tap() const;
    /// count0 elements from element @p first with stride0, repeated count1
    /// times with stride1 (strides in elements).
    Tap view(uint32_t first, uint32_t count0, uint32_t stride0 = 1, uint32_t count1 = 1,
             uint32_t stride1 = 0) const;
    /// The same tile restricted to partitions [start, start + count) of it.
    Tile partitions(uint32_t start, uint32_t count) const;
    /// The same bytes seen as another element type (elems adjusted).
    Tile as(DType t) const;
};

/// The memory side of a DMA (struct neuron_dram): element (p, j1, j0) is at
/// byte offset + p * part_stride + j1 * stride[1] + j0 * stride[0] of slot.
struct DramRef {
    uint32_t slot = 0;
    uint64_t offset = 0;
    uint32_t part_stride = 0;
    std::array<uint32_t, 2> stride{0, 0};
};

/// A program argument or constant as the builder hands it out.
struct NEURON_EXPORT ArgRef {
    uint32_t slot = 0;
    uint64_t base = 0; ///< constants: offset in the constant data
    uint64_t size = 0;
    DType dtype = DType::fp32;

    /// Bytes at @p byte_offset of the argument: partition p at
    /// p * part_stride, inner elements @p stride0 bytes apart, outer
    /// @p stride1 bytes. Without @p stride0 the inner elements are
    /// contiguous (the element size apart); a stride0 of 0 reads one
    /// element repeated along the row (a broadcast).
    DramRef at(uint64_t byte_offset, uint32_t part_stride,
               std::optional<uint32_t> stride0 = std::nullopt, uint32_t stride1 = 0) const;
};

struct Semaphore {
    uint32_t id = 0;
};

/// Index of an instruction in its stream (a LOOP target).
struct Label {
    uint32_t index = 0;
};

/// One engine's instruction stream. Every method appends one instruction
/// and checks what the encoding can hold; the device checks the rest.
class NEURON_EXPORT StreamBuilder {
  public:
    Engine engine() const { return engine_; }
    uint32_t size() const { return static_cast<uint32_t>(code_.size() / 64); }
    Label here() const { return Label{size()}; }

    // Control (every engine).
    StreamBuilder &end();
    StreamBuilder &nop();
    StreamBuilder &notify(uint32_t value);
    StreamBuilder &signal(Semaphore s, uint32_t value = 1);
    StreamBuilder &wait(Semaphore s, uint32_t value = 1, bool decrement = true);
    /// Jumps back to @p target until the body ran @p iterations times
    /// (0: forever), using loop counter @p counter.
    StreamBuilder &loop(Label target, uint32_t iterations, uint32_t counter = 0);
    // Sync engine.
    StreamBuilder &dma_load(const Tap &dst, const DramRef &src);
    StreamBuilder &dma_store(const DramRef &dst, const Tap &src);
    /// Rows of a table (ISA 1.1): partition p of @p dst receives row idx[p]
    /// of @p table (element (p, j1, j0) at table.offset + idx[p] *
    /// table.part_stride + ...), idx[p] the int32 at byte @p index_offset of
    /// the same SBUF partition, below @p rows (else the job faults).
    StreamBuilder &dma_gather(const Tap &dst, const DramRef &table, uint32_t index_offset,
                              uint32_t rows);
    /// Rows added into a table (ISA 1.2): partition p of @p src (FP32 or
    /// BF16) is added, in fp32, into row idx[p] of @p table, idx as in
    /// dma_gather; partitions in increasing order, so repeated indices
    /// accumulate in that order. The table's slot must be readable and
    /// writable.
    StreamBuilder &dma_scatter_add(const DramRef &table, const Tap &src, uint32_t index_offset,
                                   uint32_t rows);
    // Tensor engine.
    /// dst[M, N] (+)= stationary[K, M]^T * moving[K, N]; K = partitions.
    StreamBuilder &matmul(const Tap &dst, const Tap &stationary, const Tap &moving,
                          bool accumulate = false);
    StreamBuilder &transpose(const Tap &dst, const Tap &src);
    // Scalar engine: dst = f(src * scale + bias), bias an immediate or a
    // per-partition tap.
    StreamBuilder &activate(Activation f, const Tap &dst, const Tap &src, float scale = 1.0f,
                            float bias = 0.0f);
    StreamBuilder &activate(Activation f, const Tap &dst, const Tap &src, float scale,
                            const Tap &bias);
    // Vector engine.
    StreamBuilder &tensor_tensor(AluOp op, const Tap &dst, const Tap &a, const Tap &b);
    /// The same on int32 operands, exact (ISA 1.2): add, sub, mul wrap
    /// modulo 2^32; max, min, the comparisons (1 or 0); no div.
    StreamBuilder &tensor_tensor_int(AluOp op, const Tap &dst, const Tap &a, const Tap &b);
    /// dst = (src op0 s0) op1 s1 on int32 operands, exact (ISA 1.2).
    StreamBuilder &tensor_scalar_int(const Tap &dst, const Tap &src, AluOp op0, int32_t s0,
                                     AluOp op1 = AluOp::none, int32_t s1 = 0, bool reverse0 = false,
                                     bool reverse1 = false);
    /// dst = (src op0 s0) op1 s1 (REVERSE flags swap operands).
    StreamBuilder &tensor_scalar(const Tap &dst, const Tap &src, AluOp op0, float s0,
                                 AluOp op1 = AluOp::none, float s1 = 0.0f, bool reverse0 = false,
                                 bool reverse1 = false);
    /// Like tensor_scalar, s0 a per-partition value from a tap.
    StreamBuilder &tensor_scalar(const Tap &dst, const Tap &src, AluOp op0, const Tap &s0,
                                 AluOp op1 = AluOp::none, float s1 = 0.0f, bool reverse0 = false,
                                 bool reverse1 = false);
    StreamBuilder &reduce(ReduceOp op, const Tap &dst, const Tap &src);
    StreamBuilder &copy(const Tap &dst, const Tap &src);
    /// copy() whose conversion to an int32 or u8 destination rounds toward
    /// zero (then saturates; NaN gives 0) instead of to nearest-even (ISA 1.2).
    StreamBuilder &copy_trunc(const Tap &dst, const Tap &src);
    StreamBuilder &memset(const Tap &dst, float value);
    StreamBuilder &memset_bits(const Tap &dst, uint32_t bits);
    StreamBuilder &iota(const Tap &dst, int32_t base, int32_t partition_step, int32_t free_step);
    /// Philox-4x32-10 random numbers (ISA 1.2, hw/isa.md RANDOM): element
    /// (p, j) of @p dst is word n % 4 of the block n / 4 of the stream that
    /// @p key (int32 [1, 4] in SBUF or PSUM: seed lo, seed hi, offset lo,
    /// offset hi) selects, n = @p base + p * @p partition_step + j. An FP32
    /// @p dst receives uniform values in [0, 1), an INT32 one the words.
    StreamBuilder &random(const Tap &dst, const Tap &key, uint32_t base, uint32_t partition_step);
    /// dst = mask != 0 ? on_true : on_false (ISA 1.1 SELECT).
    StreamBuilder &select(const Tap &dst, const Tap &mask, const Tap &on_true, float on_false);
    /// dst = mask != 0 ? on_true : dst, the false elements left as they are.
    StreamBuilder &select_keep(const Tap &dst, const Tap &mask, const Tap &on_true);
    /// A raw 64-byte instruction, appended as is.
    StreamBuilder &raw(std::span<const std::byte, 64> insn);

  private:
    friend class ProgramBuilder;
    StreamBuilder(Engine e, const class ProgramBuilder *owner) : engine_(e), owner_(owner) {}
    std::byte *emit(uint8_t opcode);
    Engine engine_;
    const class ProgramBuilder *owner_;
    std::vector<std::byte> code_;
    std::vector<OriginInfo> origins_; ///< its instructions' named origins
};

/// On-core sizes the builder allocates within (per partition).
struct BuilderLimits {
    uint32_t sbuf_bytes = (24u << 20) / 128;
    uint32_t psum_bytes = (2u << 20) / 128;
    uint32_t partitions = 128;
};

/// Builds a program: arguments and constants (binding slots in declaration
/// order, constants sharing one slot), named SBUF/PSUM allocations,
/// semaphores and one stream per engine.
class NEURON_EXPORT ProgramBuilder {
  public:
    explicit ProgramBuilder(std::string name, BuilderLimits limits = {});
    ProgramBuilder(const ProgramBuilder &) = delete;
    ProgramBuilder &operator=(const ProgramBuilder &) = delete;
    ~ProgramBuilder();

    ArgRef argument(const std::string &name, DType dtype, std::vector<uint32_t> shape,
                    Direction direction);
    ArgRef constant(const std::string &name, DType dtype, std::vector<uint32_t> shape,
                    std::span<const std::byte> data);
    ArgRef constant(const std::string &name, std::vector<uint32_t> shape,
                    std::span<const float> data); ///< fp32
    /// @p elems elements per partition for @p partitions partitions (64-byte aligned).
    Tile sbuf(const std::string &name, DType dtype, uint32_t elems, uint32_t partitions = 128);
    /// PSUM allocations start on a 2 KiB bank boundary.
    Tile psum(const std::string &name, DType dtype, uint32_t elems, uint32_t partitions = 128);
    Semaphore semaphore(const std::string &name);
    void set_insn_limit(uint64_t limit);
    /// Names what the instructions appended from now on, to any stream,
    /// were produced for (a compiler's graph node: "linear_1"); an empty
    /// name: nothing. Written to the container's ORIGINS section, which
    /// profiles name instructions by (docs/program-format.md).
    void set_origin(std::string name);
    const std::string &origin() const;
    /// Says when an SBUF/PSUM range is in use, by instruction: written to
    /// the container's LIVE section (docs/program-format.md), which profiles
    /// count "SBUF/PSUM in use" by. Kernel::live_range() finds the
    /// instructions for a Kernel's program.
    void live_range(LiveRange r);

    StreamBuilder &stream(Engine e);
    StreamBuilder &tensor() { return stream(Engine::tensor); }
    StreamBuilder &vector() { return stream(Engine::vector); }
    StreamBuilder &scalar() { return stream(Engine::scalar); }
    StreamBuilder &sync() { return stream(Engine::sync); }

    /// The container; non-empty streams get a final END if they lack one.
    /// Throws Error(invalid_argument) if the result would not validate.
    std::vector<std::byte> build() const;
    Program finish() const { return Program::parse(build()); }

    const BuilderLimits &limits() const { return limits_; }

  private:
    friend class StreamBuilder;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    BuilderLimits limits_;
};

} // namespace neuron
