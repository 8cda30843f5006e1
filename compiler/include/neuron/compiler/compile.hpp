// SPDX-License-Identifier: MIT
// Compiling a graph into a program container: fusion, SBUF allocation by
// liveness, lowering of every operator onto 128 partitions and PSUM banks,
// and the semaphores between the engine streams (neuron::Kernel).
#pragma once

#include <string>
#include <vector>

#include <neuron/builder.hpp>
#include <neuron/compiler/graph.hpp>
#include <neuron/kernel.hpp>
#include <neuron/program.hpp>

namespace neuron::compiler {

struct CompileOptions {
    bool fuse = true;       ///< fuse matmul epilogues and elementwise chains
    BuilderLimits limits{}; ///< SBUF/PSUM sizes of the target core
    /// The target device's instruction set, (major << 16) | minor
    /// (DeviceInfo::isa_version). The compiler refuses a graph that needs
    /// an instruction of a later revision, naming it and both versions.
    uint32_t isa_version = neuron::isa_version();
};

struct PassTime {
    std::string pass;
    double ms = 0;
};

struct Compiled {
    Program program;
    std::vector<PassTime> times;
    std::string plan; ///< fusion groups and the SBUF layout, as text
    Kernel::Stats stats;
};

/// Compiles @p g. The program's arguments are the graph's inputs (`in`)
/// and outputs (`out`), by name, in the graph's layout (row-major, the
/// value's dtype); its constants are the graph's constants. Throws
/// GraphError naming the node, its shapes and the reason for anything the
/// lowering does not support.
Compiled compile(const Graph &g, const CompileOptions &options = {});

} // namespace neuron::compiler
