// SPDX-License-Identifier: MIT
// neuron-profile's analysis of a .ntrace file: per job and per engine
// busy/waiting/idle cycles, the costliest instructions, the longest
// semaphore waits, DMA bandwidth, SBUF/PSUM high-water marks; the terminal
// summary and the Trace Event export (chrome://tracing, Perfetto).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <neuron/profile.hpp>
#include <neuron/program.hpp>

namespace nprof {

/// One engine's cycles in a job: busy + waiting + idle = the job's cycles.
struct EngineTime {
    uint64_t instructions = 0;
    uint64_t busy = 0;    ///< executing (an instruction's cycles less its wait)
    uint64_t waiting = 0; ///< in SEM_WAITs, for a signal
    uint64_t idle = 0;    ///< after its stream ended (or with no stream)
};

/// An instruction of a stream, all its executions (loop iterations) together.
struct InsnCost {
    neuron::Engine engine = neuron::Engine::tensor;
    uint32_t index = 0;
    uint64_t runs = 0;
    uint64_t cycles = 0; ///< busy cycles, waits excluded
    std::string text;    ///< the disassembly, with the program's names
    std::string node;    ///< the graph node it was produced for (ORIGINS), or empty
};

/// The instructions a program names one origin for (a compiler's graph
/// node, its fused nodes joined with '+'), all engines together.
struct NodeTime {
    std::string name; ///< "(no node)" for the instructions the program names none for
    uint64_t instructions = 0;
    /// per engine: its instructions' cycles, waits included; over all
    /// nodes, plus the engine's idle cycles, the job's cycles
    std::array<uint64_t, neuron::num_engines> cycles{};
    uint64_t busy = 0; ///< all engines, waits excluded
    uint64_t waiting = 0;
};

/// A SEM_WAIT that waited, and the SEM_SIGNAL whose time released it.
struct Stall {
    size_t record = 0;
    neuron::Engine engine = neuron::Engine::tensor;
    uint32_t index = 0;
    uint64_t start = 0;
    uint64_t cycles = 0;
    std::string semaphore; ///< "name (sem N)"
    std::optional<size_t> signal;
    std::string signal_text; ///< "sync #3 signal loaded += 1 at cycle 577"
};

struct JobSummary {
    size_t job = 0; ///< position in the file
    std::string program;
    const neuron::ntrace::Job *raw = nullptr;
    neuron::Trace trace;
    std::array<EngineTime, neuron::num_engines> engines{};
    std::vector<InsnCost> top; ///< by cycles, descending
    std::vector<Stall> stalls; ///< by cycles, descending
    /// by busy cycles, descending; empty if the program names no origins
    std::vector<NodeTime> nodes;
    uint64_t dma_instructions = 0;
    uint64_t dma_bytes = 0;      ///< the records' bytes
    uint64_t dma_cycles = 0;     ///< cycles of DMA instructions (they run on Sync)
    uint64_t sbuf_partition = 0; ///< SBUF bytes per partition
    uint64_t psum_partition = 0;
    /// The program says when its SBUF/PSUM ranges are in use (LIVE): the
    /// peaks of in_use(), else only the high-water marks are known.
    bool has_live = false;
    uint32_t sbuf_in_use = 0;
    uint32_t psum_in_use = 0;
};

/// Analyzes one job. @p top and @p stalls bound the two lists.
JobSummary summarize(const neuron::ntrace::Job &job, size_t index, size_t top = 10,
                     size_t stalls = 5);

/// A step of a high-water mark over a job's time.
struct HighWater {
    uint64_t cycle = 0; ///< the end of the instruction that raised it
    uint32_t bytes = 0; ///< bytes per partition from then on
};

/// The SBUF (@p sbuf) or else PSUM high-water mark of @p t over time, both
/// fields rising step by step. The device keeps the mark in the order it
/// executed the records (each record's is the mark after it), which is not
/// time order across engines: a record that raised the mark wrote up to
/// that byte, and raises it at its end cycle; the steps are those, sorted
/// by cycle, less the ones a higher earlier step hides.
std::vector<HighWater> high_water(const neuron::Trace &t, bool sbuf);

/// The SBUF (@p sbuf) or else PSUM bytes per partition in use over @p t's
/// time, by the program's live ranges (Program::live_ranges()): a range is
/// in use from the start of the first execution of its first instruction to
/// the end of the last execution of the latest of its engines' last ones
/// (the job's end if the trace was cut before any of them), a range reused
/// at the cycle another ends counted once. The bytes of the most used
/// partition, a step wherever they change (the first from 0); empty if the
/// program has no live ranges of that kind.
std::vector<HighWater> in_use(const neuron::Trace &t, const neuron::Program &p, bool sbuf);

/// The terminal summary of every job.
std::string render_view(const std::vector<JobSummary> &jobs);

/// The Trace Event format (JSON object form) of every job: a process per
/// job, a thread per engine, an "X" slice per instruction, flow events from
/// each SEM_SIGNAL to the SEM_WAIT it released, SBUF/PSUM counter tracks.
nlohmann::json export_chrome(const std::vector<neuron::ntrace::Job> &jobs);

/// An SVG picture of job @p index's timeline: a track per engine with a
/// box per instruction (coloured by its graph node, else by engine), the
/// waiting part of each SEM_WAIT in grey, an arrow from each SEM_SIGNAL to
/// the SEM_WAIT it released, and the SBUF/PSUM high-water marks as lines
/// against their partition's size. Throws std::out_of_range for a bad index.
std::string export_svg(const std::vector<neuron::ntrace::Job> &jobs, size_t index);

/// "tensor", "vector", "scalar", "sync".
std::string engine_name(neuron::Engine e);

} // namespace nprof
