// SPDX-License-Identifier: MIT
// The program being built from the memory plan: the arguments, the arena
// and the instructions, through neuron::Kernel (which derives the
// semaphores between the engine streams). The operators' lowerings record
// their instructions through it (OpLowering::emit).
#pragma once

#include <map>
#include <optional>

#include <neuron/kernel.hpp>

#include "memory.hpp"
#include "step_buffers.hpp"

namespace neuron::compiler::lower {

class Emitter final : public StepBuffers {
  public:
    /// The program's arguments (inputs, outputs, constants, the folded
    /// ones transposed) and the SBUF arena of @p memory.
    Emitter(const Graph &g, const CompileOptions &target, const Usage &usage, MemoryPlan memory,
            const Folded &folded);

    // The buffers of the current step, as the memory plan made them.
    const Buf &temp(const std::string &what, DType dtype, uint32_t rows, uint32_t cols) override;
    const Buf &replicated(uint32_t node, uint32_t period) override;
    const Buf &transposed(uint32_t node, const std::string &what) override;
    void read(uint32_t node) override;
    void use_ones() override {}
    bool streamed(uint32_t node) const override { return m_.streamed[node]; }
    const Buf &buf(uint32_t node) const override {
        return m_.bufs[static_cast<size_t>(m_.value_buf[node])];
    }

    Kernel &kernel() { return *k_; }
    /// Rows [r0, r0 + n) of @p b, columns [c0, c0 + cn): the rows must
    /// stay inside one row tile.
    Tap rows(const Buf &b, uint32_t r0, uint32_t n, uint32_t c0, uint32_t cn) const;
    Tap tile(const Buf &b, uint32_t t) const { return rows(b, t * P, tile_rows(b, t), 0, b.cols); }
    uint32_t tile_rows(const Buf &b, uint32_t t) const { return std::min(P, b.rows - t * P); }
    /// Input, output or constant @p node in memory.
    const ArgRef &arg(uint32_t node) const { return args_.at(node); }
    /// The next PSUM bank, round robin, @p cols columns of it.
    Tap next_bank(uint32_t cols);
    /// The row of ones that adds a bias in PSUM (MemoryPlan::ones).
    const Buf &ones() const { return m_.bufs[static_cast<size_t>(ones_)]; }
    /// dst[b, y, x] = src[b, x, y]: TRANSPOSE of blocks of at most 128 x
    /// 128 that stay inside one row tile of the source and of the
    /// destination.
    void transpose_blocks(const Buf &in, const Buf &out, uint32_t batch, uint32_t x, uint32_t y);

    /// Chunks of rows the steps run in (1 when not chunked).
    uint32_t chunks() const;
    void begin_chunk(uint32_t chunk);
    /// Step @p step of group @p group starts: its instructions are named
    /// after its nodes.
    void begin_step(uint32_t step, const Group &group);
    void end_chunk();
    /// Output @p node is stored from its buffer (nothing for other values).
    void store(uint32_t node);
    /// Every buffer's live ranges; the instructions' semaphores.
    Kernel::Stats finish();
    /// The container, checked against the target ISA.
    Program build();

    bool is_output(uint32_t node) const { return usage_.is_output[node]; }
    /// The first row of the row space that row 0 of @p b holds: the
    /// current chunk's in chunks of rows, else 0.
    uint64_t first_row(const Buf &b) const { return b.chunked ? row0_ : 0; }

  private:
    int planned_temp(const std::string &what);
    void live_ranges();
    void check_isa(const Program &p) const;

    const Usage &usage_;
    MemoryPlan m_;
    ProgramBuilder b_;
    std::optional<Kernel> k_;
    std::map<uint32_t, ArgRef> args_;
    Tile arena_{}, psum_{};
    uint32_t next_bank_ = 0;
    int ones_ = -1;
    std::vector<bool> loaded_;
    uint32_t step_ = 0;
    size_t next_temp_ = 0;                         // of the current step
    std::map<uint32_t, int> replicas_;             // of the current step: node -> buffer
    uint32_t row0_ = 0;                            // the current chunk's first row
    std::vector<size_t> step_from_;                // per step: the Kernel's instructions before it
    std::vector<std::vector<size_t>> chunk_steps_; // step_from_ of every chunk
};

} // namespace neuron::compiler::lower
