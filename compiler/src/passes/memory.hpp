// SPDX-License-Identifier: MIT
// The memory pass: an SBUF buffer for every value and temporary, placed by
// liveness; matmul weights streamed from device memory and rows in chunks
// when the graph does not fit the core's SBUF otherwise.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <neuron/compiler/compile.hpp>

#include "fold.hpp"
#include "fuse.hpp"

namespace neuron::compiler::lower {

struct MemoryPlan {
    std::deque<Buf> bufs;                // stable references while temporaries are added
    std::vector<int> value_buf;          // node -> its value's buffer, -1 if none
    std::vector<std::vector<int>> temps; // step -> its temporaries, in declaration order
    std::vector<bool> streamed;          // weights streamed from device memory
    bool ones = false;                   // a bias added in PSUM needs the row of ones
    uint64_t ones_at = 0;                // its offset in the arena, after every buffer
    uint64_t peak = 0;                   // bytes per partition, the row of ones included
    int peak_buf = -1;                   // the buffer that ends at the peak
    // Rows in chunks: chunk_rows rows of the row space (rows rows) at a
    // time, 0 when not chunked; the values of the row space, and the
    // weights and row operands (params) that stay resident.
    uint32_t chunk_rows = 0;
    int64_t rows = 0;
    std::vector<bool> rowspace, param;
};

/// Every buffer placed first-fit by liveness. When the peak does not fit
/// the core's SBUF, the largest matmul weight live at the peak is left in
/// device memory and streamed, and the plan is made again, until it fits;
/// then the rows in chunks, the most row tiles that fit. Throws
/// GraphError naming the step at the peak, its buffers and why when
/// nothing fits.
MemoryPlan plan_memory(const Graph &g, const Usage &usage, const FusionPlan &fusion,
                       const Folded &folded, const CompileOptions &options);

/// The fusion groups and the SBUF layout as text (neuron-cc --dump-plan).
std::string plan_text(const Graph &g, const FusionPlan &fusion, const MemoryPlan &memory);

} // namespace neuron::compiler::lower
