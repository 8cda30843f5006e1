// SPDX-License-Identifier: MIT
// What the passes of the lowering hand each other. Every value lives in
// SBUF in the row layout: viewed as a matrix [R, C] (C the last axis, R the
// product of the others), rows tiled over the 128 partitions: row r is
// partition r % 128 of row tile r / 128, and tile t holds elements
// [t C, (t + 1) C) of each partition of the value's buffer. A last tile
// with fewer rows uses fewer partitions; nothing is padded.
// docs/compiler.md explains the passes and the per-operator lowering.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <neuron/builder.hpp>
#include <neuron/compiler/graph.hpp>

namespace neuron::compiler::lower {

constexpr uint32_t P = 128;
constexpr uint32_t psum_banks = 8, bank_elems = 512; // fp32 per partition per bank
constexpr int64_t max_cols = 16384;

inline int64_t rows_of(const Type &t) {
    return t.elements() / t.shape.back();
}

[[noreturn]] inline void unsupported(const Graph &g, const Node &n, const std::string &why) {
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
inline Buf value_buffer(const Node &n, int step) {
    Buf b;
    b.what = n.name;
    b.dtype = n.type.dtype;
    b.rows = static_cast<uint32_t>(rows_of(n.type));
    b.cols = static_cast<uint32_t>(n.type.shape.back());
    b.first = b.last = step;
    return b;
}

// How many times each value is read, and which are outputs (check).
struct Usage {
    std::vector<int> uses;
    std::vector<bool> is_output;
};

// How a group is lowered: the node that starts it decides (OpRecord::kind).
enum class Kind {
    none,        // inputs and constants (loaded on first use), fused nodes
    alias,       // shares its operand's buffer
    view,        // whole row tiles of its operand's buffer (slice, split)
    matmul,      // with an epilogue of fused nodes
    elementwise, // a chain of unary steps
    binary,
    softmax,
    norm,   // layer_norm, rms_norm
    gather, // reshape, transpose keeping the last axis, slice, concat
    transpose2,
    select,      // where
    reduce,      // sum, mean, amax, amin, argmax, argmin over the last axis
    random,      // dropout, dropout_mask: RANDOM's stream (ISA 1.2)
    scatter_add, // index_add: rows added into its output in device memory (ISA 1.2)
    gather_rows, // index_select: rows of a table in device memory by their ids (ISA 1.1)
};

// One unary step of an elementwise chain or a matmul's epilogue.
struct Step {
    // convert, trunc, nonzero: cast (ops/cast.cpp) to a float type, to
    // int32 and to u8 (bool)
    enum { affine, div, rdiv, rsub, act, convert, trunc, nonzero } kind;
    float a = 1, b = 0;
    Activation f = Activation::identity;
};

// A fused group, as the fusion plan has it at the node that starts it.
struct Group {
    Kind kind = Kind::none;
    uint32_t start = 0;          // the node that starts the group
    std::vector<uint32_t> fused; // the nodes folded into it, in order
    // matmul epilogue
    std::optional<uint32_t> bias, residual;
    std::vector<Step> steps;       // matmul: affine + activation; elementwise: the chain
    std::vector<uint32_t> sources; // gather: the values it reads
    uint32_t result = 0;           // the node whose value this group produces
};

} // namespace neuron::compiler::lower
